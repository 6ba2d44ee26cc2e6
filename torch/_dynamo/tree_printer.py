"""Prints a dynamo_guards guard tree as torch prints its own
(``GuardManagerWrapper.__str__``, ``TORCH_LOGS=guards``): the same lines in
the same layout, one per manager with its source, accessor, guarded type and
tag-safety flags, one per code part of each leaf guard, a relational guard in
full where it first appears and by name after that."""

from __future__ import annotations

from typing import Any

from dynamo_guards import _C


class _TreeText:
    def __init__(self) -> None:
        self.lines: list[str] = ["", "TREE_GUARD_MANAGER:"]
        self.printed_relations: set[Any] = set()

    def write(self, depth: int, text: str) -> None:
        self.lines.append("| " * depth + "+- " + text)

    def leaf(self, depth: int, guard: Any) -> None:
        name = type(guard).__name__
        if isinstance(guard, _C.RelationalGuard):
            if guard in self.printed_relations:
                self.write(depth, name)
                return
            self.printed_relations.add(guard)
        for part in guard.verbose_code_parts():
            self.write(depth, f"{name}: {part}")

    def manager(self, depth: int, mgr: Any) -> None:
        """Writes the contents of ``mgr`` (its own line is the caller's)."""
        for guard in mgr.get_leaf_guards():
            self.leaf(depth, guard)
        if isinstance(mgr, _C.DictGuardManager):
            for index, (key_mgr, value_mgr) in sorted(mgr.get_key_value_managers().items()):
                self.write(depth, f"KeyValueManager pair at index={index}")
                for role, sub in (("KeyManager", key_mgr), ("ValueManager", value_mgr)):
                    if sub is not None:
                        self.write(depth + 1, f"{role}: {manager_line(sub, None)}")
                        self.manager(depth + 2, sub)
        for accessor, child in zip(mgr.get_accessors(), mgr.get_child_managers()):
            self.write(depth, manager_line(child, accessor))
            self.manager(depth + 1, child)


def manager_line(mgr: Any, accessor: Any | None) -> str:
    line = f"{type(mgr).__name__}: source={mgr.get_source()}"
    if accessor is not None:
        line += f", accessed_by={accessor.repr()}"
    return line + f", type={mgr.get_type_of_guarded_value()}, tag_safe=({mgr.is_tag_safe()}, {mgr.is_tag_safe_root()})"


def format_tree(root: Any) -> str:
    """The whole tree under a dynamo_guards RootGuardManager, as text."""
    if not isinstance(root, _C.RootGuardManager):
        raise TypeError(f"format_tree needs a dynamo_guards RootGuardManager, got {type(root).__name__}")
    text = _TreeText()
    text.write(0, "RootGuardManager")
    text.manager(1, root)
    for guard in root.get_epilogue_lambda_guards():
        text.leaf(0, guard)
    return "\n".join(text.lines) + "\n"


def count_nodes(root: Any) -> dict[str, int]:
    """Managers and leaf guards in a tree, for benchmarks and tests."""
    counts = {"managers": 0, "leaf_guards": 0}

    def visit(mgr: Any) -> None:
        counts["managers"] += 1
        counts["leaf_guards"] += len(mgr.get_leaf_guards())
        if isinstance(mgr, _C.DictGuardManager):
            for key_mgr, value_mgr in mgr.get_key_value_managers().values():
                for sub in (key_mgr, value_mgr):
                    if sub is not None:
                        visit(sub)
        for child in mgr.get_child_managers():
            visit(child)

    visit(root)
    counts["leaf_guards"] += len(root.get_epilogue_lambda_guards())
    return counts
