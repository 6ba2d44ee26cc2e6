"""dynamo_guards: an out-of-tree fork of PyTorch Dynamo's guard engine.

``install()`` makes torch.compile guard every newly compiled frame with this
package's C++ engine (``dynamo_guards._C``); ``uninstall()`` restores stock
torch; ``enabled()`` does both around a block. ``fallback_counts()`` says
how many frames were left to stock torch, and why.
"""

from __future__ import annotations

from dynamo_guards.fallback import fallback_count, fallback_counts, reset_fallback_counts
from dynamo_guards.install import enabled, install, is_installed, uninstall
from dynamo_guards.tree_printer import format_tree

__all__ = [
    "enabled",
    "fallback_count",
    "fallback_counts",
    "format_tree",
    "install",
    "is_installed",
    "reset_fallback_counts",
    "uninstall",
]
