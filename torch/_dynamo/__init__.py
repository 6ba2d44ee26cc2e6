"""dynamo_guards: an out-of-tree fork of PyTorch Dynamo's guard engine.

``install()`` makes torch.compile guard every newly compiled frame with this
package's C++ engine (``dynamo_guards._C``); ``uninstall()`` restores stock
torch; ``enabled()`` does both around a block. ``fallback_counts()`` says
how many frames were left to stock torch, and why.
"""

from __future__ import annotations

import torch

from dynamo_guards.torch_release import SUPPORTED_RELEASES, unsupported_reason, UnsupportedTorchRelease


def _load_engine() -> None:
    """Imports the C++ engine, or raises UnsupportedTorchRelease saying why
    it cannot run under this torch."""
    try:
        from dynamo_guards import _C
    except ImportError as e:
        reason = unsupported_reason(torch.__version__, None)
        if reason is None:
            raise
        raise UnsupportedTorchRelease(reason) from e
    reason = unsupported_reason(torch.__version__, _C.TORCH_RELEASE)
    if reason is not None:
        raise UnsupportedTorchRelease(reason)


_load_engine()

from dynamo_guards.fallback import fallback_count, fallback_counts, reset_fallback_counts
from dynamo_guards.install import enabled, install, is_installed, uninstall
from dynamo_guards.tree_printer import format_tree

__all__ = [
    "SUPPORTED_RELEASES",
    "UnsupportedTorchRelease",
    "enabled",
    "fallback_count",
    "fallback_counts",
    "format_tree",
    "install",
    "is_installed",
    "reset_fallback_counts",
    "uninstall",
]
