"""Runs one compile-mutate-call scenario under stock torch and under the
fork, recording after every step whether the compiled result equals eager
and how many frames have been compiled. Shared by the end-to-end tests."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
import torch._dynamo
import torch._dynamo.guards
from torch._dynamo.testing import CompileCounter

import dynamo_guards
from dynamo_guards.guard_manager_wrapper import ForkGuardManagerWrapper
from dynamo_guards.torch_release import RUNNING

# Stock torch 2.15 guards reads earlier releases leave unguarded (bitwise
# float constants, a classmethod's code, the classes before the one a method
# is found on: docs/audit.md); a test of such a mutation expects stock stale
# only before 2.15.
STALE_BEFORE_2_15 = RUNNING is not None and RUNNING < (2, 15)
# Stock torch 2.13 checks an object-aliasing relation with a Python lambda
# that reads both sides through attribute access; 2.14 and later check it
# natively on what the guard tree read (the __dict__ entries), so a
# descriptor shadowing one side goes unseen from 2.14 on.
STALE_FROM_2_14 = RUNNING is not None and RUNNING >= (2, 14)


@dataclass
class Step:
    """Mutate the state, then call the compiled function with ``args(state)``."""

    name: str
    mutate: Callable[[Any], None] = lambda state: None
    args: Callable[[Any], Sequence[Any]] | None = None


@dataclass
class Outcome:
    engine: str
    equal_to_eager: list[bool] = field(default_factory=list)
    frame_counts: list[int] = field(default_factory=list)
    wrapper_types: set[type] = field(default_factory=set)
    reasons: list[str] = field(default_factory=list)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and torch.allclose(a, b, equal_nan=True)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "to_tuple") and hasattr(b, "to_tuple"):
        return same(a.to_tuple(), b.to_tuple())
    return bool(a == b)


@contextlib.contextmanager
def _engine(engine: str):
    if engine == "fork":
        with dynamo_guards.enabled():
            yield
    elif engine == "stock":
        yield
    else:
        raise ValueError(engine)


def run(
    engine: str,
    make_state: Callable[[], Any],
    call: Callable[[Any, Sequence[Any]], Any],
    steps: Sequence[Step],
    default_args: Callable[[Any], Sequence[Any]],
    grad_mode: bool = True,
) -> Outcome:
    """``call(fn_or_module, args)`` runs either the eager or the compiled
    callable; the state's ``.target`` is what gets compiled."""
    torch._dynamo.reset()
    outcome = Outcome(engine)
    previous_hook = torch._dynamo.guards.guard_manager_testing_hook_fn

    def hook(wrapper: Any, f_locals: Any, builder: Any) -> None:
        outcome.wrapper_types.add(type(wrapper))

    torch._dynamo.guards.guard_manager_testing_hook_fn = hook
    try:
        with _engine(engine), torch.set_grad_enabled(grad_mode):
            state = make_state()
            counter = CompileCounter()
            compiled = torch._dynamo.optimize(counter, guard_fail_fn=lambda g: outcome.reasons.append(g.reason))(
                state.target
            )
            for step in steps:
                step.mutate(state)
                args = (step.args or default_args)(state)
                expected = call(state.target, args)
                actual = call(compiled, args)
                outcome.equal_to_eager.append(same(actual, expected))
                outcome.frame_counts.append(counter.frame_count)
    finally:
        torch._dynamo.guards.guard_manager_testing_hook_fn = previous_hook
        torch._dynamo.reset()
    return outcome


def stock_and_fork(*args: Any, **kwargs: Any) -> tuple[Outcome, Outcome]:
    return run("stock", *args, **kwargs), run("fork", *args, **kwargs)


def fork_used_everywhere(outcome: Outcome) -> bool:
    return outcome.wrapper_types == {ForkGuardManagerWrapper}
