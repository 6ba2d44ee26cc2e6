"""Predicates for the rare guard kinds the engine evaluates through Python.

Each factory returns a callable ``predicate(value) -> bool`` (optionally with
``explain(value) -> str``) that the C++ PythonPredicateGuard calls. They use
the very torch APIs that torch's own guards consult, so the verdicts agree.
These kinds are marked "python" in the coverage table of docs/coverage.md.
"""

from __future__ import annotations

from typing import Any, Callable

import torch


def dual_level_match(level: int) -> Callable[[object], bool]:
    import torch.autograd.forward_ad as forward_ad

    def predicate(_value: object) -> bool:
        return forward_ad._current_level == level

    return predicate


def fake_script_type_match(fake_script_type: type, type_id: int) -> Callable[[object], bool]:
    def predicate(value: object) -> bool:
        if isinstance(value, fake_script_type):
            return id(value.wrapped_obj.__class__) == type_id  # type: ignore[attr-defined]
        return id(type(value)) == type_id

    return predicate


def dispatch_key_set_match(expected: torch._C.DispatchKeySet) -> Callable[[object], bool]:
    expected_raw = expected.raw_repr()

    def predicate(value: object) -> bool:
        return isinstance(value, torch._C.DispatchKeySet) and value.raw_repr() == expected_raw

    return predicate


def range_iterator_match(start: int, stop: int, step: int, type_id: int) -> Callable[[object], bool]:
    from torch._dynamo.utils import normalize_range_iter

    def predicate(value: object) -> bool:
        if id(type(value)) != type_id:
            return False
        return normalize_range_iter(value) == (start, stop, step)

    return predicate


def storage_overlapping(num_overlapping: int) -> Callable[[list[torch.Tensor]], bool]:
    compute = torch._C._dynamo.guards.compute_overlapping_tensors

    def predicate(tensors: list[torch.Tensor]) -> bool:
        overlapping = compute(tensors)
        return set(overlapping) == set(range(num_overlapping))

    return predicate
