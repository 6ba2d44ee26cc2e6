"""Prints a dynamo_guards guard tree the way torch prints its own
(``TORCH_LOGS=guards``): one line per manager with its source and accessor,
one line per leaf guard with its kind and code."""

from __future__ import annotations

from typing import Any

from dynamo_guards import _C


def _leaf_lines(guard: Any) -> list[str]:
    return [f"{guard.kind()}: {part}" for part in guard.verbose_code_parts()]


def _manager_line(mgr: Any, accessor: Any | None) -> str:
    line = f"{type(mgr).__name__}: source={mgr.get_source()}"
    if accessor is not None:
        line += f", accessed_by={accessor.repr()}"
    return line + f", type={mgr.get_type_of_guarded_value()}"


def _walk(mgr: Any, depth: int, out: list[str]) -> None:
    prefix = "| " * depth + "+- "
    for guard in mgr.get_leaf_guards():
        out.extend(prefix + line for line in _leaf_lines(guard))
    if isinstance(mgr, _C.DictGuardManager):
        for index, (key_mgr, value_mgr) in sorted(mgr.get_key_value_managers().items()):
            out.append(prefix + f"KeyValueManager pair at index={index}")
            for role, sub in (("KeyManager", key_mgr), ("ValueManager", value_mgr)):
                if sub is not None:
                    out.append("| " * (depth + 1) + "+- " + f"{role}: " + _manager_line(sub, None))
                    _walk(sub, depth + 2, out)
    for accessor, child in zip(mgr.get_accessors(), mgr.get_child_managers()):
        out.append(prefix + _manager_line(child, accessor))
        _walk(child, depth + 1, out)


def format_tree(root: Any) -> str:
    """The whole tree under a dynamo_guards RootGuardManager, as text."""
    if not isinstance(root, _C.RootGuardManager):
        raise TypeError(f"format_tree needs a dynamo_guards RootGuardManager, got {type(root).__name__}")
    out = ["", "TREE_GUARD_MANAGER (dynamo_guards):", "RootGuardManager"]
    _walk(root, 0, out)
    for guard in root.get_epilogue_lambda_guards():
        out.extend("+- " + line for line in _leaf_lines(guard))
    return "\n".join(out)


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
