"""The GuardManagerWrapper torch's CheckFunctionManager builds when the fork
is installed (upstream: ``GuardManagerWrapper`` in torch/_dynamo/guards.py).

While guards are built, ``self.root`` is this engine's RootGuardManager, so
torch's GuardBuilder adds every guard to it. ``finalize()`` then replaces
``self.root`` with a ``DelegatingRootGuardManager`` (delegating_root.py): a
torch RootGuardManager whose one leaf evaluates our tree, since the C++
cache entry casts ``root`` to torch's type and calls it on every frame; all
per-call work happens in our engine. The diff guard root used by
``set_stance(skip_guard_eval_unsafe=True)`` is delegated the same way.

The wrapper is also what ``torch._dynamo.guards.GuardManagerWrapper`` names
while a frame's guards are built, so code run then (torch's testing hook)
may wrap roots of its own: a delegating root (a clone of ours) is wrapped as
the engine's tree it stands for, and a plain torch root makes this a stock
wrapper in every respect.
"""

from __future__ import annotations

from typing import Any

import torch._dynamo.guards as stock_guards
from torch.utils._ordered_set import OrderedSet

from dynamo_guards import _C
from dynamo_guards.delegating_root import DelegatingRootGuardManager
from dynamo_guards.torch_release import CODE_PARTS_INCLUDE_EPILOGUE_GUARDS, WRAPPER_TAKES_LOCAL_STATE
from dynamo_guards.tree_printer import format_tree


def _visit_managers(mgr: Any) -> list[Any]:
    """The children of ``mgr``, dict key/value managers included."""
    children = list(mgr.get_child_managers())
    if isinstance(mgr, _C.DictGuardManager):
        for key_mgr, value_mgr in mgr.get_key_value_managers().values():
            children.extend(m for m in (key_mgr, value_mgr) if m is not None)
    return children


def _fork_root_of(root: Any) -> _C.RootGuardManager | None:
    if isinstance(root, DelegatingRootGuardManager):
        return root.fork_root
    if isinstance(root, _C.RootGuardManager):
        return root
    return None


class ForkGuardManagerWrapper(stock_guards.GuardManagerWrapper):
    def __init__(self, root: Any = None, local_state: Any = None) -> None:
        if root is None:
            root = _C.RootGuardManager()
        # None when wrapping a root of stock torch's: then every method is stock's.
        self.fork_root: _C.RootGuardManager | None = _fork_root_of(root)
        if WRAPPER_TAKES_LOCAL_STATE:
            super().__init__(root, local_state)
        elif local_state is not None:
            raise TypeError("this torch's GuardManagerWrapper takes no local_state (torch 2.14 and later do)")
        else:
            super().__init__(root)

    # -- build time ---------------------------------------------------------
    def finalize(self) -> None:
        if self.fork_root is None:
            super().finalize()
            return
        # Tag-safety marking (use_recursive_dict_tags_for_guards) is torch's
        # own optimisation of its own tree; this engine memoizes subtrees
        # soundly instead (torch/csrc/dynamo/subtree_memo.h).
        self.fork_root.finalize()
        self.prepare_diff_guard_manager()
        self.root = DelegatingRootGuardManager(self.fork_root)

    def collect_diff_guard_sources(self) -> OrderedSet[str]:
        if self.fork_root is None:
            return super().collect_diff_guard_sources()

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
        if self.fork_root is None:
            super().populate_diff_guard_manager()
            return
        chosen = self.diff_guard_sources
        fork_diff_root = self.fork_root.clone_manager(lambda mgr: mgr.get_source() in chosen)
        fork_diff_root.finalize()
        self.diff_guard_root = DelegatingRootGuardManager(fork_diff_root)
        if self.cache_entry:
            self.cache_entry.update_diff_guard_root_manager()

    def populate_code_parts_for_debugging(self) -> None:
        if self.fork_root is None:
            super().populate_code_parts_for_debugging()
            return
        relations_seen: set[Any] = set()

        def add_code_parts(guard: Any) -> None:
            self.code_parts.extend(part.split("#")[0].rstrip() for part in guard.verbose_code_parts())

        def visit(mgr: Any) -> None:
            for guard in mgr.get_leaf_guards():
                if isinstance(guard, _C.RelationalGuard):
                    if guard in relations_seen:
                        continue
                    relations_seen.add(guard)
                add_code_parts(guard)
            for child in _visit_managers(mgr):
                visit(child)

        visit(self.fork_root)
        if CODE_PARTS_INCLUDE_EPILOGUE_GUARDS:
            for guard in self.fork_root.get_epilogue_lambda_guards():
                add_code_parts(guard)

    # -- run time (debugging and recompile reasons) -------------------------
    def check(self, x: Any) -> bool:
        if self.fork_root is None:
            return super().check(x)
        return self.fork_root.check(x)

    def check_verbose(self, x: Any) -> Any:
        if self.fork_root is None:
            return super().check_verbose(x)
        return self.fork_root.check_verbose(x)

    def __str__(self) -> str:
        if self.fork_root is None:
            return super().__str__()
        return format_tree(self.fork_root)
