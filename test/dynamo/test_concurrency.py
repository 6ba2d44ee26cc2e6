"""Guard evaluation while other threads mutate the guarded modules. Threads
switch only at bytecode boundaries or inside Python code the engine calls
(lambda guards, getattr fallbacks), so each check sees some interleaving of
whole mutations: the verdict must be that of the old state or the new one, and nothing may crash or raise.

``DYNAMO_GUARDS_CONCURRENCY_SECONDS`` lengthens each run (see docs/testing.md,
"Reliability")."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable

import torch
import torch._dynamo
import torch._dynamo.guards
from torch import nn
from torch._dynamo.guards import GuardManagerType
from torch._dynamo.test_case import run_tests, TestCase

import dynamo_guards
from dynamo_guards import _C as guards

PLAIN = GuardManagerType.GUARD_MANAGER
SECONDS = float(os.environ.get("DYNAMO_GUARDS_CONCURRENCY_SECONDS", "1.5"))


class Scale(nn.Module):
    def __init__(self, k: float) -> None:
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.k


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Scale(1.0) for _ in range(4))
        self.sub = Scale(2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.sub(x) + 1 if self.training else self.sub(x)


def run_threads(workers: list[Callable[[threading.Event], None]], seconds: float) -> list[BaseException]:
    """Runs every worker until `seconds` pass; returns what any of them raised."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def guarded(worker: Callable[[threading.Event], None]) -> None:
        try:
            worker(stop)
        except BaseException as e:  # reported to the test, which fails on it
            errors.append(e)
            stop.set()

    threads = [threading.Thread(target=guarded, args=(w,)) for w in workers]
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch as often as the interpreter allows
    try:
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(previous)
    return errors


class EngineConcurrencyTests(TestCase):
    def build(self, net: Net) -> Any:
        """A memoized tree over the net: the same submodule object, training
        off everywhere (a lambda guard, which runs Python mid-check), and a
        class attribute that must not appear."""
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", net, PLAIN)
        sub = m.nn_module_attr_manager("sub", "L['m'].sub", net.sub, PLAIN, net)
        sub.add_id_match_guard(id(net.sub), ["L['m'].sub is sub"], None)
        sub.nn_module_attr_manager("k", "L['m'].sub.k", net.sub.k, PLAIN, net.sub).add_equals_match_guard(2.0, ["k == 2.0"], None)
        blocks = m.nn_module_attr_manager("blocks", "L['m'].blocks", net.blocks, PLAIN, net)
        for i, block in enumerate(net.blocks):
            b = blocks.nn_module_attr_manager(str(i), f"L['m'].blocks[{i}]", block, PLAIN, net.blocks)
            b.add_lambda_guard(lambda mod: not mod.training, [f"not blocks[{i}].training"], None)
        m.add_no_hasattr_guard("extra", ["not hasattr(m, 'extra')"], None)
        root.finalize()
        return root

    def test_check_during_mutations_gives_a_verdict_of_some_state(self):
        net = Net().eval()
        root = self.build(net)
        original_sub = net.sub
        other_sub = Scale(2.0)
        verdicts: list[bool] = []

        def checker(stop: threading.Event) -> None:
            while not stop.is_set():
                verdict = root.check({"m": net})
                if not isinstance(verdict, bool):
                    raise AssertionError(f"check returned {verdict!r}")
                verdicts.append(verdict)
                root.check_verbose({"m": net})

        def mutator(stop: threading.Event) -> None:
            i = 0
            while not stop.is_set():
                i += 1
                net._modules["sub"] = other_sub if i % 2 else original_sub
                net.blocks[i % 4].training = bool(i % 3 == 0)
                if i % 5 == 0:
                    type(net).extra = 1
                elif "extra" in type(net).__dict__:
                    del type(net).extra
                net.blocks[i % 4].training = False
                net._modules["sub"] = original_sub

        errors = run_threads([checker, checker, mutator], SECONDS)
        self.assertEqual(errors, [])
        self.assertIn(True, verdicts)
        # After the threads, the verdict is that of the final state.
        if "extra" in type(net).__dict__:  # the mutator stopped mid-cycle
            self.assertIs(root.check({"m": net}), False)
            del type(net).extra
        self.assertIs(root.check({"m": net}), True)
        net._modules["sub"] = other_sub
        self.assertIs(root.check({"m": net}), False)
        net._modules["sub"] = original_sub
        type(net).extra = 1
        self.assertIs(root.check({"m": net}), False)
        del type(net).extra
        self.assertIs(root.check({"m": net}), True)


class CompiledFrameConcurrencyTests(TestCase):
    """The tree Dynamo built for a real frame, checked while another thread
    flips the module between the compiled state and another one. (Calls of
    the compiled module itself would also race Dynamo's compiler, which reads
    guard values from the live objects after tracing, under stock torch as
    under the fork; that is not guard evaluation.)"""

    def setUp(self) -> None:
        super().setUp()
        torch._dynamo.reset()

    def tearDown(self) -> None:
        torch._dynamo.reset()
        super().tearDown()

    def test_frame_guards_during_mutations_give_a_verdict_of_some_state(self):
        x = torch.arange(3.0)
        built: list[tuple[Any, dict[str, Any]]] = []
        previous_hook = torch._dynamo.guards.guard_manager_testing_hook_fn
        torch._dynamo.guards.guard_manager_testing_hook_fn = lambda wrapper, f_locals, builder: built.append(
            (wrapper, dict(f_locals))
        )
        try:
            with dynamo_guards.enabled():
                net = Net().eval()
                compiled = torch.compile(net, backend="eager")
                compiled(x)
        finally:
            torch._dynamo.guards.guard_manager_testing_hook_fn = previous_hook
        ((wrapper, f_locals),) = built
        check = wrapper.root.check
        self.assertIs(check(f_locals), True)
        compiled_sub, other_sub = net.sub, Scale(3.0)
        verdicts: list[bool] = []

        def checker(stop: threading.Event) -> None:
            while not stop.is_set():
                verdict = check(f_locals)
                if not isinstance(verdict, bool):
                    raise AssertionError(f"check returned {verdict!r}")
                verdicts.append(verdict)

        def mutator(stop: threading.Event) -> None:
            i = 0
            while not stop.is_set():
                i += 1
                net._modules["sub"] = other_sub if i % 2 else compiled_sub
                net.training = bool(i % 3 == 0)
                net.blocks[i % 4].training = bool(i % 5 == 0)
                net.blocks[i % 4].training = False
                net._modules["sub"] = compiled_sub
                net.training = False

        errors = run_threads([checker, checker, mutator], SECONDS)
        self.assertEqual(errors, [])
        self.assertIn(True, verdicts)
        self.assertIs(check(f_locals), True)
        net.training = True
        self.assertIs(check(f_locals), False)
        net.training = False
        net.sub = other_sub
        self.assertIs(check(f_locals), False)
        net.sub = compiled_sub
        self.assertIs(check(f_locals), True)


if __name__ == "__main__":
    run_tests()
