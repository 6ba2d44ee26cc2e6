"""The GuardManagerWrapper torch's CheckFunctionManager builds when the fork
is installed (upstream: ``GuardManagerWrapper`` in torch/_dynamo/guards.py).

While guards are built, ``self.root`` is this engine's RootGuardManager, so
torch's GuardBuilder adds every guard to it. ``finalize()`` then replaces
``self.root`` with a torch RootGuardManager holding one lambda guard, a
``RootCheck`` that evaluates our tree: the C++ cache entry casts ``root`` to
torch's type and calls it on every frame, so the root must be torch's; all
per-call work happens in our engine. The diff guard root used by
``set_stance(skip_guard_eval_unsafe=True)`` is delegated the same way.
"""

from __future__ import annotations

from typing import Any

import torch
import torch._dynamo.guards as stock_guards
from torch.utils._ordered_set import OrderedSet

from dynamo_guards import _C
from dynamo_guards.tree_printer import format_tree

# The one lambda guard on the torch root; what a tool reading the torch root
# directly (not through this wrapper) sees.
DELEGATION_CODE_PART = "___dynamo_guards_check(L)"


def delegating_torch_root(fork_root: _C.RootGuardManager) -> Any:
    """A torch RootGuardManager whose only guard runs ``fork_root``."""
    torch_root = torch._C._dynamo.guards.RootGuardManager()
    torch_root.add_lambda_guard(_C.RootCheck(fork_root), [DELEGATION_CODE_PART], None)
    return torch_root


def _visit_managers(mgr: Any) -> list[Any]:
    """The children of ``mgr``, dict key/value managers included."""
    children = list(mgr.get_child_managers())
    if isinstance(mgr, _C.DictGuardManager):
        for key_mgr, value_mgr in mgr.get_key_value_managers().values():
            children.extend(m for m in (key_mgr, value_mgr) if m is not None)
    return children


class ForkGuardManagerWrapper(stock_guards.GuardManagerWrapper):
    def __init__(self, root: Any = None) -> None:
        self.fork_root: _C.RootGuardManager = root if root is not None else _C.RootGuardManager()
        self.fork_diff_root: _C.RootGuardManager | None = None
        super().__init__(self.fork_root)

    # -- build time ---------------------------------------------------------
    def finalize(self) -> None:
        # Tag-safety marking (use_recursive_dict_tags_for_guards) is torch's
        # own optimisation of its own tree; this engine memoizes subtrees
        # soundly instead (torch/csrc/dynamo/subtree_memo.h).
        self.fork_root.finalize()
        self.prepare_diff_guard_manager()
        self.root = delegating_torch_root(self.fork_root)

    def collect_diff_guard_sources(self) -> OrderedSet[str]:
        def visit(mgr: Any) -> bool:
            is_diff = mgr.get_source() in self.diff_guard_sources or mgr.fail_count() > 0
            for child in _visit_managers(mgr):
                is_diff |= visit(child)
            if is_diff:
                self.diff_guard_sources.add(mgr.get_source())
            return is_diff

        visit(self.fork_root)
        return self.diff_guard_sources

    def populate_diff_guard_manager(self) -> None:
        chosen = self.diff_guard_sources
        self.fork_diff_root = self.fork_root.clone_manager(lambda mgr: mgr.get_source() in chosen)
        self.fork_diff_root.finalize()
        self.diff_guard_root = delegating_torch_root(self.fork_diff_root)
        if self.cache_entry:
            self.cache_entry.update_diff_guard_root_manager()

    def populate_code_parts_for_debugging(self) -> None:
        def visit(mgr: Any) -> None:
            for guard in mgr.get_leaf_guards():
                self.code_parts.extend(part.split("#")[0].rstrip() for part in guard.verbose_code_parts())
            for child in _visit_managers(mgr):
                visit(child)

        visit(self.fork_root)

    # -- run time (debugging and recompile reasons) -------------------------
    def check(self, x: Any) -> bool:
        return self.fork_root.check(x)

    def check_verbose(self, x: Any) -> Any:
        return self.fork_root.check_verbose(x)

    def __str__(self) -> str:
        return format_tree(self.fork_root)
