"""The torch RootGuardManager that stands for a dynamo_guards tree once it
is built.

torch's C++ cache entry casts ``GuardManagerWrapper.root`` (and the diff
guard root) to torch's own RootGuardManager and runs it on every call, so
the root must be torch's type. This subclass is: its one leaf guard, a
``RootCheck``, hands each check to the engine's root. A tree with no guard
at all (``guard_filter_fn=torch.compiler.skip_all_guards_unsafe``) gets no
leaf, so the torch root is empty, as stock's is.

From Python the subclass answers for the engine's tree: its leaves,
accessors, children, epilogue guards, ``check_verbose`` and
``clone_manager`` (a copy of the engine's tree behind a new delegating
root). Only ``check`` is torch's own: it is the path the cache entry takes,
through the delegation leaf. torch's view of the root itself (the one
delegation leaf) stays reachable through the base class's methods, e.g.
``torch._C._dynamo.guards.RootGuardManager.get_leaf_guards(root)``.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from dynamo_guards import _C

TorchRootGuardManager = torch._C._dynamo.guards.RootGuardManager

# The code part of the delegation leaf: what a tool reading torch's own
# view of the root sees.
DELEGATION_CODE_PART = "___dynamo_guards_check(L)"


def is_empty(fork_root: _C.RootGuardManager) -> bool:
    """No guard, accessor or epilogue guard: the tree passes every frame
    without reading it."""
    return not (fork_root.get_leaf_guards() or fork_root.get_accessors() or fork_root.get_epilogue_lambda_guards())


class DelegatingRootGuardManager(TorchRootGuardManager):
    def __init__(self, fork_root: _C.RootGuardManager) -> None:
        super().__init__()
        self.fork_root = fork_root
        if not is_empty(fork_root):
            super().add_lambda_guard(_C.RootCheck(fork_root), [DELEGATION_CODE_PART], None)

    def check_verbose(self, f_locals: Any) -> Any:
        info = self.fork_root.check_verbose(f_locals)
        return torch._C._dynamo.guards.GuardDebugInfo(
            info.result, info.verbose_code_parts, info.num_guards_executed, info.user_stack
        )

    def clone_manager(self, keep: Callable[[Any], bool]) -> DelegatingRootGuardManager:
        clone = self.fork_root.clone_manager(keep)
        clone.finalize()
        return DelegatingRootGuardManager(clone)

    def attach_compile_id(self, compile_id: str) -> None:
        super().attach_compile_id(compile_id)
        self.fork_root.attach_compile_id(compile_id)

    # Introspection of the engine's tree.
    def get_leaf_guards(self) -> list[Any]:
        return self.fork_root.get_leaf_guards()

    def get_accessors(self) -> list[Any]:
        return self.fork_root.get_accessors()

    def get_child_managers(self) -> list[Any]:
        return self.fork_root.get_child_managers()

    def get_epilogue_lambda_guards(self) -> list[Any]:
        return self.fork_root.get_epilogue_lambda_guards()

    def has_no_accessors(self) -> bool:
        return self.fork_root.has_no_accessors()

    def fail_count(self) -> int:
        return self.fork_root.fail_count()
