"""Frames the engine cannot take are built by stock torch exactly as if the
engine had never touched them.

Each test makes the engine fail on purpose in one phase of the build (when
the wrapper is created, in the middle of the builder, at one guard kind, at
finalize, in torch's testing hook) and compares what the frame ends with
(the printed guard tree, the exported guards with their export info, the
debugging code parts, the compiled result) with a compile by stock torch
alone. Errors that are the user's pass through once, without a fallback.
"""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import logging
from types import SimpleNamespace
from typing import Any, Callable, Iterator

import numpy as np
import torch
import torch._dynamo
import torch._dynamo.guards
from torch._dynamo.test_case import run_tests, TestCase

import dynamo_guards
from dynamo_guards import _C
from dynamo_guards.guard_manager_wrapper import ForkGuardManagerWrapper


# The module (the package's ``install`` is the function of that name).
install_module = importlib.import_module("dynamo_guards.install")


class EngineFailure(RuntimeError):
    """What the tests make the engine raise."""


@contextlib.contextmanager
def replaced(owner: Any, name: str, value: Any) -> Iterator[None]:
    """``owner.name`` is ``value`` for the block (the engine's own objects
    only: the failure injected is the engine's)."""
    saved = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, saved)


def raise_engine_failure(*args: Any, **kwargs: Any) -> Any:
    raise EngineFailure("made to fail by the test")


class Config(dict):
    """A dict subclass read through a class attribute: the trace hooks put
    CLASS_ATTR_MATCH on a source whose value is a dict."""

    scale = 2.0


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.register_buffer("offset", torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) + self.offset


NET = Net().eval()
CONFIG = Config(a=1)
ARRAY = np.arange(4, dtype=np.float32)
ITEMS = [3, 4]


def frame(x: torch.Tensor, arr: np.ndarray, cfg: Config, items: list[int]) -> torch.Tensor:
    return NET(x) * cfg.scale + torch.from_numpy(arr) * items[0]


def frame_args() -> tuple[Any, ...]:
    return (torch.ones(2, 4), ARRAY, CONFIG, ITEMS)


@dataclasses.dataclass
class Built:
    """What a compiled frame ends with."""

    tree: str
    exported: list[tuple[Any, ...]]
    code_parts: list[str]
    result: torch.Tensor
    wrapper_type: type


def exported_guards(guards: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (g.name, g.create_fn_name(), tuple(g.guard_types or ()), tuple(g.code_list or ()), g._unserializable)
        for g in guards
    )


def compile_frame(fn: Callable[..., Any] = frame) -> Built:
    torch._dynamo.reset()
    exported: list[tuple[Any, ...]] = []
    opt = torch._dynamo.optimize("eager", guard_export_fn=lambda guards: exported.extend(exported_guards(guards)))(fn)
    with torch.no_grad():
        result = opt(*frame_args())
    (entry,) = torch._C._dynamo.eval_frame._debug_get_cache_entry_list(fn.__code__)
    wrapper = entry.guard_manager
    with torch.no_grad():
        assert opt(*frame_args()) is not None  # the entry's guards pass on the same inputs
    assert len(torch._C._dynamo.eval_frame._debug_get_cache_entry_list(fn.__code__)) == 1
    return Built(str(wrapper), exported, list(wrapper.code_parts), result, type(wrapper))


class FallbackTests(TestCase):
    def setUp(self):
        super().setUp()
        dynamo_guards.uninstall()
        self.stock = compile_frame()
        dynamo_guards.reset_fallback_counts()
        dynamo_guards.install()

    def tearDown(self):
        dynamo_guards.uninstall()
        torch._dynamo.reset()
        super().tearDown()

    def assert_built_by_stock(self, failure: contextlib.AbstractContextManager[Any]) -> None:
        with failure, self.assertLogs("dynamo_guards", logging.WARNING) as logs:
            built = compile_frame()
        self.assertIs(built.wrapper_type, torch._dynamo.guards.GuardManagerWrapper)
        self.assertEqual(built.tree, self.stock.tree)
        self.assertEqual(built.exported, self.stock.exported)
        self.assertEqual(built.code_parts, self.stock.code_parts)
        self.assertEqual(built.result, self.stock.result)
        self.assertEqual(dynamo_guards.fallback_counts(), {"engine error": 1})
        (line,) = logs.output
        self.assertIn("stock guards for frame frame: the engine could not build them (EngineFailure", line)

    def test_the_engine_takes_the_frame_when_nothing_fails(self):
        built = compile_frame()
        self.assertIs(built.wrapper_type, ForkGuardManagerWrapper)
        self.assertEqual(built.result, self.stock.result)
        self.assertEqual(dynamo_guards.fallback_counts(), {})
        self.assertIn("CLASS_ATTR_MATCH: L['cfg'].scale", built.tree)  # a guard stock does not build

    def test_failure_when_the_wrapper_is_created(self):
        class FailingWrapper(ForkGuardManagerWrapper):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                raise EngineFailure("made to fail by the test")

        names = {**install_module._ENGINE_NAMES, "GuardManagerWrapper": FailingWrapper}
        self.assert_built_by_stock(replaced(install_module, "_ENGINE_NAMES", names))

    def test_failure_in_the_middle_of_the_builder(self):
        created = []
        create = install_module._create_guard

        def fail_after_a_few(guard: Any, builder: Any) -> Any:
            if len(created) == 6:  # export info is on the guards built so far
                raise EngineFailure("made to fail by the test")
            created.append(guard)
            return create(guard, builder)

        self.assert_built_by_stock(replaced(install_module, "_create_guard", fail_after_a_few))
        self.assertTrue(any(g.guard_types for g in created), "the failed build had written export info")

    def test_failure_at_tensor_match_with_a_numpy_input(self):
        self.assert_built_by_stock(replaced(_C.GuardManager, "add_tensor_match_guard", raise_engine_failure))

    def test_failure_at_the_trace_hooks_class_attribute_guard(self):
        self.assert_built_by_stock(replaced(_C.GuardManager, "add_class_attr_match_guard", raise_engine_failure))

    def test_failure_at_finalize(self):
        self.assert_built_by_stock(replaced(ForkGuardManagerWrapper, "finalize", raise_engine_failure))

    def test_failure_in_the_testing_hook_passes_through(self):
        # The hook is the test's code, not the engine's: its error reaches
        # the caller, as under stock torch, and no frame falls back.
        def hook(wrapper: Any, f_locals: Any, builder: Any) -> None:
            if isinstance(wrapper, ForkGuardManagerWrapper):
                raise EngineFailure("made to fail by the test")

        with replaced(torch._dynamo.guards, "guard_manager_testing_hook_fn", hook):
            with self.assertRaisesRegex(Exception, "made to fail by the test"):
                compile_frame()
        self.assertEqual(dynamo_guards.fallback_counts(), {})

    def test_counts_by_reason(self):
        with replaced(ForkGuardManagerWrapper, "finalize", raise_engine_failure), self.assertLogs("dynamo_guards"):
            compile_frame()
            compile_frame()
        # (Stock torch builds a precompiled frame twice, and its second build
        # fails on the export info of a numpy input's guard: a frame without.)
        with torch._dynamo.config.patch(caching_precompile=True), self.assertLogs("dynamo_guards", logging.INFO):
            torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
        self.assertEqual(dynamo_guards.fallback_counts(), {"engine error": 2, "serialized guards": 1})
        self.assertEqual(dynamo_guards.fallback_count(), 3)
        dynamo_guards.reset_fallback_counts()
        self.assertEqual(dynamo_guards.fallback_counts(), {})


class SnapshotTests(TestCase):
    """FrameSnapshot on guards a build has already written to (a guard built
    once before, e.g. shared with an earlier frame) and on unbuilt ones."""

    def test_restore_undoes_export_info_written_over_earlier_export_info(self):
        from torch._dynamo.guards import GuardBuilder
        from torch._dynamo.source import LocalSource
        from torch._guards import Guard, GuardsSet

        fallback = importlib.import_module("dynamo_guards.fallback")
        built_before, unbuilt = Guard(LocalSource("x"), GuardBuilder.TYPE_MATCH), Guard(LocalSource("y"), GuardBuilder.ID_MATCH)
        built_before.set_export_info("TYPE_MATCH", None, ["first"], None)
        guards = GuardsSet()
        guards.add(built_before)
        guards.add(unbuilt)
        snapshot = fallback.FrameSnapshot.take(SimpleNamespace(), SimpleNamespace(guards=guards))
        self.assertEqual(list(snapshot.built_guard_states), [0])
        for guard in (built_before, unbuilt):  # what a failed build writes
            guard.set_export_info("ID_MATCH", None, ["second"], None)
            guard._unserializable = True
        snapshot.restore()
        self.assertEqual((built_before.guard_types, built_before.code_list), (["TYPE_MATCH"], ["first"]))
        unserializable_default = fallback._GUARD_FIELD_DEFAULTS["_unserializable"]  # False; None from torch 2.15
        self.assertEqual(
            (unbuilt.guard_types, unbuilt.code_list, unbuilt._unserializable), (None, None, unserializable_default)
        )
        built_before.set_export_info("ID_MATCH", None, ["third"], None)  # lists written in place after a restore
        snapshot.restore()
        self.assertEqual((built_before.guard_types, built_before.code_list), (["TYPE_MATCH"], ["first"]))


    def test_a_build_writes_no_guard_field_outside_the_snapshot(self):
        """FrameSnapshot records only the fields torch's builder writes; a
        real build (the fork's, on a frame with tensors, a numpy array, a
        dict subclass and a list) must leave every other field as it was."""
        fallback = importlib.import_module("dynamo_guards.fallback")
        others = [
            f.name
            for f in dataclasses.fields(torch._guards.Guard)
            if f.name not in fallback._BUILD_WRITTEN_FIELDS and f.name != "_hash"  # _hash: a cache of fixed fields
        ]
        before: list[tuple[Any, list[Any]]] = []
        dynamo_guards.install()
        engine_init = torch._dynamo.guards.CheckFunctionManager.__init__

        def recording_init(self: Any, f_code: Any, output_graph: Any = None, *args: Any, **kwargs: Any) -> None:
            before.extend((g, [getattr(g, name) for name in others]) for g in output_graph.guards)
            engine_init(self, f_code, output_graph, *args, **kwargs)

        try:
            with replaced(torch._dynamo.guards.CheckFunctionManager, "__init__", recording_init):
                built = compile_frame()
        finally:
            dynamo_guards.uninstall()
            torch._dynamo.reset()
        self.assertIs(built.wrapper_type, ForkGuardManagerWrapper)
        self.assertTrue(before)
        for guard, values in before:
            for name, value in zip(others, values):
                self.assertIs(getattr(guard, name), value, f"{guard.name}: {name}")


class UserErrorTests(TestCase):
    """An error torch raises to the user while building guards is raised
    once, unchanged: no stock rebuild, no fallback, no log line."""

    def tearDown(self):
        dynamo_guards.uninstall()
        torch._dynamo.reset()
        super().tearDown()

    def raised(self, engine_installed: bool) -> tuple[type[BaseException], str, int]:
        def f(x: torch.Tensor) -> torch.Tensor:
            return x.reshape(3, 2) * 2  # specializes the dimension marked dynamic

        builds = []

        class CountingWrapper(ForkGuardManagerWrapper):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                builds.append(self)
                super().__init__(*args, **kwargs)

        torch._dynamo.reset()
        dynamo_guards.reset_fallback_counts()
        x = torch.randn(3, 2)
        torch._dynamo.mark_dynamic(x, 0)
        names = {**install_module._ENGINE_NAMES, "GuardManagerWrapper": CountingWrapper}
        with replaced(install_module, "_ENGINE_NAMES", names):
            if engine_installed:
                dynamo_guards.install()
            try:
                torch.compile(f, backend="eager")(x)
            except Exception as e:  # noqa: BLE001 - the error is what is compared
                return type(e), str(e), len(builds)
            finally:
                dynamo_guards.uninstall()
        raise AssertionError("the constraint violation was not raised")

    def test_constraint_violation_passes_through_once(self):
        stock_type, stock_text, _ = self.raised(engine_installed=False)
        self.assertIs(stock_type, torch.fx.experimental.symbolic_shapes.ConstraintViolationError)
        with self.assertNoLogs("dynamo_guards"):
            fork_type, fork_text, engine_builds = self.raised(engine_installed=True)
        self.assertIs(fork_type, stock_type)
        self.assertEqual(fork_text, stock_text)
        self.assertEqual(engine_builds, 1)
        self.assertEqual(dynamo_guards.fallback_counts(), {})


if __name__ == "__main__":
    run_tests()
