"""dynamo_guards: an out-of-tree fork of PyTorch Dynamo's guard engine.

``install()`` makes torch.compile guard every newly compiled frame with this
package's C++ engine (``dynamo_guards._C``); ``uninstall()`` restores stock
torch; ``enabled()`` does both around a block.
"""

from __future__ import annotations

from dynamo_guards.install import enabled, install, is_installed, uninstall
from dynamo_guards.tree_printer import format_tree

__all__ = ["enabled", "format_tree", "install", "is_installed", "uninstall"]
