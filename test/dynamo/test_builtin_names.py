"""A name the trace found in builtins (``max``) that a global of the module
later shadows: Python then calls the global, and torch's guards (the
builtins dict entry only) keep the compiled call on the builtin. The fork
guards the name's absence from the globals searched first
(dynamo_guards/builtin_names.py), for the compiled frame's own globals, a
function inlined from another registered module, and one inlined from a
plain globals dict. One test per way of defining the global, each
asserting stock's verdict on the running release."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import itertools
import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from torch import nn
from torch._dynamo.test_case import run_tests, TestCase

from scenario import fork_used_everywhere, Step, stock_and_fork

# The code of the namespace whose ``helper`` reads ``max`` from builtins;
# ``rebind`` and ``unbind`` change the global by STORE_GLOBAL / DELETE_GLOBAL.
NAMESPACE_SOURCE = """
def helper(x):
    return x * max(2.0, 1.0)

def rebind(value):
    global max
    max = value

def unbind():
    global max
    del max
"""

_fresh_names = (f"builtin_names_scope_{n}" for n in itertools.count())


def shadowing_max(a: Any, b: Any) -> float:
    return -7.0


def registered_namespace() -> types.ModuleType:
    """A new module in sys.modules, holding NAMESPACE_SOURCE."""
    module = types.ModuleType(next(_fresh_names))
    exec(NAMESPACE_SOURCE, module.__dict__)
    sys.modules[module.__name__] = module
    return module


def plain_namespace() -> SimpleNamespace:
    """NAMESPACE_SOURCE run in a plain dict that no module owns. (It has no
    ``__name__``: torch 2.13 imports a globals dict's ``__name__`` to read
    its globals, and fails for one that names no module.)"""
    scope: dict[str, Any] = {}
    exec(NAMESPACE_SOURCE, scope)
    return SimpleNamespace(helper=scope["helper"], rebind=scope["rebind"], unbind=scope["unbind"])


def compiled_frame_reads(namespace: Any) -> Any:
    """The compiled frame is ``helper`` itself: its globals are the frame's."""
    target = namespace.helper
    return SimpleNamespace(target=target, namespace=namespace)


def inlined_function_reads(namespace: Any) -> Any:
    """The compiled frame is a module's forward that calls ``helper``: the
    trace inlines it, with the namespace's globals."""

    class Net(nn.Module):
        def forward(self, x):
            return namespace.helper(x) + 1

    return SimpleNamespace(target=Net(), namespace=namespace)


def call(target: Any, args: Any) -> Any:
    return target(*args)


# Ways of defining the global ``max`` in the namespace (``helper``'s globals).
def by_store_global(namespace: Any) -> None:
    namespace.rebind(shadowing_max)


def by_globals_item(namespace: Any) -> None:
    namespace.helper.__globals__["max"] = shadowing_max


def by_setattr_on_module(module: types.ModuleType) -> None:
    setattr(module, "max", shadowing_max)


def by_exec(namespace: Any) -> None:
    exec("max = lambda a, b: -7.0", namespace.helper.__globals__)


class BuiltinShadowedTestCase(TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.registered: list[str] = []

    def tearDown(self) -> None:
        for name in self.registered:
            sys.modules.pop(name, None)
        super().tearDown()

    def namespace_maker(self, registered: bool) -> Callable[[], Any]:
        def make() -> Any:
            if not registered:
                return plain_namespace()
            module = registered_namespace()
            self.registered.append(module.__name__)
            return module

        return make

    def state_maker(self, frame: Callable[[Any], Any], registered: bool) -> Callable[[], Any]:
        make_namespace = self.namespace_maker(registered)

        def make() -> Any:
            state = frame(make_namespace())
            state.x = torch.ones(2, 4)
            return state

        return make

    def check(
        self,
        frame: Callable[[Any], Any],
        define: Callable[[Any], None],
        *,
        registered: bool = True,
        delete_again: bool = False,
    ) -> None:
        make = self.state_maker(frame, registered)
        steps = [Step("first"), Step("again"), Step("defined", lambda s: define(s.namespace)), Step("defined, again")]
        if delete_again:
            steps.append(Step("deleted", lambda s: s.namespace.unbind()))
        stock, fork = stock_and_fork(make, call, steps, lambda s: (s.x,))
        report = f"\nstock: {stock}\nfork: {fork}"
        self.assertTrue(fork_used_everywhere(fork), fork.wrapper_types)
        self.assertEqual(fork.equal_to_eager, [True] * len(steps), "the fork returned a stale result" + report)
        self.assertEqual(fork.frame_counts[:2], [1, 1], "the fork recompiled without a mutation" + report)
        self.assertEqual(fork.frame_counts[3], 2, "the fork did not recompile exactly once" + report)
        if delete_again:
            # The first entry's guards hold again: it is reused.
            self.assertEqual(fork.frame_counts[4], 2, report)
        # Stale under stock on every release: nothing guards the globals.
        self.assertEqual(stock.equal_to_eager[:3], [True, True, False], "stock torch is no longer stale here: update the test" + report)


class TestBuiltinShadowedInCompiledFrame(BuiltinShadowedTestCase):
    def test_global_defined_by_store_global(self):
        self.check(compiled_frame_reads, by_store_global)

    def test_global_defined_by_globals_item(self):
        self.check(compiled_frame_reads, by_globals_item)

    def test_global_defined_by_setattr_on_module(self):
        self.check(compiled_frame_reads, by_setattr_on_module)

    def test_global_defined_by_exec_in_module_namespace(self):
        self.check(compiled_frame_reads, by_exec)

    def test_global_defined_then_deleted(self):
        self.check(compiled_frame_reads, by_globals_item, delete_again=True)


class TestBuiltinShadowedInInlinedFunction(BuiltinShadowedTestCase):
    def test_global_defined_by_store_global(self):
        self.check(inlined_function_reads, by_store_global)

    def test_global_defined_by_globals_item(self):
        self.check(inlined_function_reads, by_globals_item)

    def test_global_defined_by_setattr_on_module(self):
        self.check(inlined_function_reads, by_setattr_on_module)

    def test_global_defined_by_exec_in_module_namespace(self):
        self.check(inlined_function_reads, by_exec)

    def test_global_defined_then_deleted(self):
        self.check(inlined_function_reads, by_globals_item, delete_again=True)

    def test_unregistered_globals_dict_global_defined(self):
        self.check(inlined_function_reads, by_globals_item, registered=False)

    def test_unregistered_globals_dict_global_defined_then_deleted(self):
        self.check(inlined_function_reads, by_store_global, registered=False, delete_again=True)


class TestUnrelatedGlobalDefined(BuiltinShadowedTestCase):
    """A new global of another name changes the globals dict but not what
    ``max`` resolves to: neither engine recompiles."""

    def check_unrelated(self, frame: Callable[[Any], Any]) -> None:
        make = self.state_maker(frame, True)
        steps = [Step("first"), Step("other global", lambda s: setattr(s.namespace, "unrelated", 1)), Step("again")]
        stock, fork = stock_and_fork(make, call, steps, lambda s: (s.x,))
        report = f"\nstock: {stock}\nfork: {fork}"
        self.assertEqual(fork.equal_to_eager, [True] * len(steps), report)
        self.assertEqual(stock.frame_counts, [1, 1, 1], report)
        self.assertEqual(fork.frame_counts, [1, 1, 1], report)

    def test_unrelated_global_defined_compiled_frame(self):
        self.check_unrelated(compiled_frame_reads)

    def test_unrelated_global_defined_inlined_function(self):
        self.check_unrelated(inlined_function_reads)


if __name__ == "__main__":
    run_tests()
