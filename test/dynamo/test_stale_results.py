"""Reads torch 2.13's trace makes without a guard, found by the audit in the
README ("What the trace reads without a guard"), one test per mutation.

Each test compiles a module, calls it, mutates what the trace read, and calls
again, under stock torch and under the fork. The fork must equal eager after
every step. Where stock torch 2.13 is stale the test checks that it still is,
so the audit table's "stock stale" column stays true; where stock is right the
fork must recompile exactly when stock does.

Classes are defined inside each ``make`` so that a class patched in the stock
run is not the class the fork run compiles."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
import torch.nn.modules.module as module_py
from torch import nn
from torch._dynamo.test_case import run_tests, TestCase

from scenario import fork_used_everywhere, Step, stock_and_fork


def call_module(module: Any, args: Any) -> Any:
    return module(*args)


class StaleResultTestCase(TestCase):
    def check(self, make_module: Callable[[], nn.Module], mutate: Callable[[Any], None], *, stock_stale: bool):
        handles: list[Any] = []

        def make():
            return SimpleNamespace(target=make_module(), x=torch.ones(2, 4), handles=handles)

        steps = [Step("first"), Step("again"), Step("mutated", mutate), Step("mutated again")]
        try:
            stock, fork = stock_and_fork(make, call_module, steps, lambda s: (s.x,))
        finally:
            for handle in handles:
                handle.remove()
        report = f"\nstock: {stock}\nfork: {fork}"
        self.assertTrue(fork_used_everywhere(fork), fork.wrapper_types)
        self.assertEqual(fork.equal_to_eager, [True] * len(steps), "the fork returned a stale result" + report)
        self.assertEqual(fork.frame_counts[1], 1, "the fork recompiled without a mutation" + report)
        self.assertEqual(fork.frame_counts[3], fork.frame_counts[2], "the fork recompiled twice" + report)
        if stock_stale:
            self.assertIn(False, stock.equal_to_eager, "stock torch is no longer stale here: update the test" + report)
        else:
            self.assertEqual(stock.equal_to_eager, [True] * len(steps), report)
            self.assertEqual(fork.frame_counts, stock.frame_counts, report)


def layered() -> nn.Module:
    """A module whose hook-free submodule torch calls by inlining
    ``type(sub).forward``."""

    class Layer(nn.Module):
        def forward(self, x):
            return x + 1

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.sub = Layer()

        def forward(self, x):
            return self.sub(x) * 2

    return Net()


def with_helper() -> nn.Module:
    class Net(nn.Module):
        def helper(self, x):
            return x + 1

        def forward(self, x):
            return self.helper(x) * 2

    return Net()


class TestClassLevelReplacement(StaleResultTestCase):
    def test_submodule_forward_replaced_on_class(self):
        def mutate(state):
            type(state.target.sub).forward = lambda self, x: x + 100

        self.check(layered, mutate, stock_stale=True)

    def test_submodule_forward_replaced_on_base_class(self):
        def make():
            net = layered()
            # The submodule's class inherits forward; the base is patched.
            net.sub = type("Derived", (type(net.sub),), {})()
            return net

        def mutate(state):
            type(state.target.sub).__base__.forward = lambda self, x: x + 100

        self.check(make, mutate, stock_stale=True)

    def test_submodule_forward_set_on_instance(self):
        def mutate(state):
            state.target.sub.forward = lambda x: x + 100

        self.check(layered, mutate, stock_stale=False)

    def test_method_replaced_on_class(self):
        def mutate(state):
            type(state.target).helper = lambda self, x: x + 100

        self.check(with_helper, mutate, stock_stale=True)


def layered_in_function() -> Callable[[torch.Tensor], torch.Tensor]:
    """``layered()`` called from a function's frame: a global hook would fire
    twice on a compiled module (once on its OptimizedModule wrapper)."""
    net = layered()

    def call(x):
        return net(x)

    return call


class TestGlobalHooks(StaleResultTestCase):
    def test_global_forward_hook_registered(self):
        def mutate(state):
            hook = lambda module, args, out: out + 1000 if isinstance(out, torch.Tensor) else out
            state.handles.append(module_py.register_module_forward_hook(hook))

        self.check(layered_in_function, mutate, stock_stale=True)

    def test_global_forward_pre_hook_registered(self):
        def mutate(state):
            hook = lambda module, args: tuple(a + 1000 for a in args)
            state.handles.append(module_py.register_module_forward_pre_hook(hook))

        self.check(layered_in_function, mutate, stock_stale=True)

    def test_submodule_forward_hook_registered(self):
        def mutate(state):
            state.handles.append(state.target.sub.register_forward_hook(lambda m, a, out: out + 1000))

        self.check(layered, mutate, stock_stale=True)


def with_class_constant(value: Any) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        class Net(nn.Module):
            eps = value

        def forward(self, x):
            eps = self.eps
            if isinstance(eps, tuple):
                eps = sum(eps)
            return x / eps

        Net.forward = forward
        return Net()

    return make


class TestClassConstants(StaleResultTestCase):
    """The fork's CLASS_ATTR_MATCH compares an immutable constant by value,
    so an equal new object keeps the compiled code, as under stock."""

    def test_class_float_replaced_by_equal_float(self):
        def mutate(state):
            type(state.target).eps = float("1e-3")

        self.check(with_class_constant(1e-3), mutate, stock_stale=False)

    def test_class_tuple_replaced_by_equal_tuple(self):
        def mutate(state):
            type(state.target).eps = tuple([1, 2.5])

        self.check(with_class_constant((1, 2.5)), mutate, stock_stale=False)

    def test_class_float_replaced_by_other_float(self):
        def mutate(state):
            type(state.target).eps = 0.5

        self.check(with_class_constant(1e-3), mutate, stock_stale=False)

    def test_class_zero_replaced_by_negative_zero(self):
        # 0.0 == -0.0, but x / eps tells them apart; stock's guard on the
        # constant compares with ==.
        def mutate(state):
            type(state.target).eps = -0.0

        self.check(with_class_constant(0.0), mutate, stock_stale=True)

    def test_class_int_replaced_by_equal_float(self):
        def mutate(state):
            type(state.target).eps = 2.0

        self.check(with_class_constant(2), mutate, stock_stale=False)


if __name__ == "__main__":
    run_tests()
