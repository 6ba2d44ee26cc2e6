"""Lifetimes and memory: the engine frees every tree it built once Dynamo
drops the frame, keeps no guarded object alive longer than stock torch does,
and leaves reference counts balanced on every evaluation path.

``DYNAMO_GUARDS_LIFETIME_FRAMES`` raises the number of frames compiled and
discarded (see docs/testing.md, "Reliability"); the test prints the
process's resident memory before and after, for both engines."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import contextlib
import gc
import inspect
import os
import sys
import weakref
from typing import Any, Callable, Iterator

import torch
import torch._dynamo
from torch._dynamo.guards import CheckFunctionManager, GuardManagerType
from torch._dynamo.test_case import run_tests, TestCase

import dynamo_guards
from dynamo_guards import _C as guards

PLAIN = GuardManagerType.GUARD_MANAGER
DICT = GuardManagerType.DICT_GUARD_MANAGER
FRAMES = int(os.environ.get("DYNAMO_GUARDS_LIFETIME_FRAMES", "40"))
ENGINES = ("stock", "fork")


def resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@contextlib.contextmanager
def engine(name: str) -> Iterator[None]:
    with dynamo_guards.enabled() if name == "fork" else contextlib.nullcontext():
        yield


def live_check_function_managers() -> int:
    # type() rather than isinstance(): some module-level objects warn when
    # their __class__ is read.
    return sum(type(o) is CheckFunctionManager for o in gc.get_objects())


def collect() -> None:
    torch._dynamo.reset()
    # CPython 3.12.0-3.12.3 cache inspect.getattr_static's MRO lookups in an
    # lru_cache keyed by the MRO tuple itself (gh-118013), so up to 128
    # classes Dynamo inspected stay alive, and with them the guard managers
    # whose finalizers hang on those classes, under every engine alike.
    # Later releases key that cache by weak references.
    leaky_cache = getattr(inspect, "_shadowed_dict_from_mro_tuple", None)
    if leaky_cache is not None:
        leaky_cache.cache_clear()
    gc.collect()


# Functions and classes are created per frame in one long-lived namespace, so
# that each frame has its own code object and its own guarded class, and
# nothing but Dynamo refers to them once the loop drops them.
NAMESPACE: dict[str, Any] = {"torch": torch}
PLAIN_FRAME = """
class Inner_{i}:
    offset = 1

class Payload_{i}:
    def __init__(self, inner_cls):
        self.scale = {i}
        self.inner = inner_cls()

def frame_{i}(x, payload):
    return x * payload.scale + payload.inner.offset + {i}
"""
MODULE_FRAME = """
class Block_{i}(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.lin(x) + {i}
"""


def compile_and_discard(n: int, with_modules: bool) -> None:
    x = torch.ones(1, 2)
    for i in range(n):
        if with_modules:
            exec(MODULE_FRAME.format(i=i), NAMESPACE)
            fn: Any = NAMESPACE.pop(f"Block_{i}")()
            args: tuple[Any, ...] = (x,)
        else:
            exec(PLAIN_FRAME.format(i=i), NAMESPACE)
            fn = NAMESPACE.pop(f"frame_{i}")
            payload = NAMESPACE.pop(f"Payload_{i}")(NAMESPACE.pop(f"Inner_{i}"))
            args = (x, payload)
            del payload
        compiled = torch.compile(fn, backend="eager")
        compiled(*args)
        compiled(*args)
        del fn, args, compiled
        if i % 20 == 19:
            collect()
    collect()


class DiscardedFrameTests(TestCase):
    def test_discarded_frames_free_every_engine_object(self):
        collect()
        before = guards.live_object_counts()
        managers_before = live_check_function_managers()
        report = []
        for name in ENGINES:
            with engine(name):
                rss_before = resident_mib()
                compile_and_discard(FRAMES, with_modules=False)
                rss_after = resident_mib()
            report.append(f"{name}: {rss_before:.1f} -> {rss_after:.1f} MiB")
            self.assertEqual(live_check_function_managers(), managers_before, name)
        self.assertEqual(guards.live_object_counts(), before)
        print(f"\n{FRAMES} plain frames compiled and discarded per engine; resident memory " + ", ".join(report))

    def test_module_frames_kept_alive_exactly_as_by_stock(self):
        # Stock torch attaches a weakref.finalize to every object an ID_MATCH
        # guard names (torch.nn.functional, the Linear class, dict, ...). The
        # finalizer holds Dynamo's CheckFunctionManager, and with it the guard
        # tree, for as long as that object lives: for nn.Module frames, the
        # life of the process. The fork's tree hangs off the same manager, so
        # it lives exactly as long as stock's and no longer.
        kept = {}
        report = []
        for name in ENGINES:
            collect()
            before = live_check_function_managers()
            with engine(name):
                rss_before = resident_mib()
                compile_and_discard(FRAMES, with_modules=True)
                rss_after = resident_mib()
            kept[name] = live_check_function_managers() - before
            report.append(f"{name}: {rss_before:.1f} -> {rss_after:.1f} MiB, {kept[name]} kept")
        self.assertEqual(kept["fork"], kept["stock"])
        print(f"\n{FRAMES} module frames compiled and discarded per engine; " + ", ".join(report))


class Target:
    pass


def scenario_instance_of_runtime_class() -> tuple[Callable[..., Any], tuple[Any, ...], Any]:
    cls = type("Runtime", (), {"k": 2})
    obj = cls()
    return (lambda x, o: x * o.k), (torch.ones(2), obj), cls


def scenario_module() -> tuple[Callable[..., Any], tuple[Any, ...], Any]:
    mod = torch.nn.Linear(2, 2)
    return (lambda x, m: m(x)), (torch.ones(2), mod), mod


def scenario_tensor() -> tuple[Callable[..., Any], tuple[Any, ...], Any]:
    t = torch.ones(2)
    return (lambda x, y: x + y), (torch.ones(2), t), t


def scenario_dict_subclass() -> tuple[Callable[..., Any], tuple[Any, ...], Any]:
    cls = type("RuntimeDict", (dict,), {})
    d = cls(a=torch.ones(2))
    return (lambda x, d: x + d["a"]), (torch.ones(2), d), cls


def scenario_object_attribute() -> tuple[Callable[..., Any], tuple[Any, ...], Any]:
    holder = Target()
    holder.payload = Target()
    holder.payload.k = 3
    return (lambda x, h: x * h.payload.k), (torch.ones(2), holder), holder.payload


SCENARIOS = {
    "instance_of_runtime_class": scenario_instance_of_runtime_class,
    "module": scenario_module,
    "tensor": scenario_tensor,
    "dict_subclass": scenario_dict_subclass,
    "object_attribute": scenario_object_attribute,
}


class GuardedObjectLifetimeTests(TestCase):
    """Drop the arguments of a compiled call while the cache entry stays:
    whatever stock torch frees, the fork frees too."""

    def alive_after_drop(self, name: str, scenario: Callable[[], tuple[Callable[..., Any], tuple[Any, ...], Any]]) -> bool:
        collect()
        with engine(name):
            fn, args, watched = scenario()
            compiled = torch.compile(fn, backend="eager")
            compiled(*args)
            compiled(*args)
            ref = weakref.ref(watched)
            del args, watched
            gc.collect()
            alive = ref() is not None
            del compiled, fn
        collect()
        return alive

    def test_guarded_objects_die_when_stock_lets_them(self):
        for scenario_name, scenario in SCENARIOS.items():
            with self.subTest(scenario_name):
                stock_alive = self.alive_after_drop("stock", scenario)
                fork_alive = self.alive_after_drop("fork", scenario)
                self.assertLessEqual(fork_alive, stock_alive)


class Holder:
    def __init__(self, **attrs: object) -> None:
        self.__dict__.update(attrs)


class ReferenceCountTests(TestCase):
    def test_reference_counts_balanced_on_every_path(self):
        value = object()
        # A string made here, not a literal: "k" is one object shared by the
        # whole process (a one-character singleton on 3.11), whose count
        # moves whenever unrelated code, or the garbage collector, drops a
        # reference to it.
        key = "".join(["inner", "_key"])
        inner = {key: value}
        holder = Holder(inner=inner, n=5, t=torch.ones(2))
        mod = torch.nn.Linear(2, 2)
        watched = [value, inner, holder, holder.t, mod, mod.weight, mod._parameters, Holder, key]

        root = guards.RootGuardManager()
        h = root.framelocals_manager(("h", 0), "L['h']", holder, PLAIN)
        h.add_type_match_guard(id(Holder), ["type(h) is Holder"], None)
        d = h.getattr_manager("inner", "L['h'].inner", inner, DICT)
        d.add_dict_length_check_guard(1, ["len(d) == 1"], None)
        d.get_value_manager(0, "L['h'].inner['k']", value, PLAIN).add_id_match_guard(id(value), ["v is value"], None)
        h.getattr_manager("n", "L['h'].n", 5, PLAIN).add_equals_match_guard(5, ["n == 5"], None)
        t = holder.t
        h.getattr_manager("t", "L['h'].t", t, PLAIN).add_tensor_match_guard(
            t, [2], [1], "L['h'].t", ["check_tensor(t)"], None, type(t), torch._C._dispatch_keys(t)
        )
        m = root.framelocals_manager(("m", 1), "L['m']", mod, PLAIN)
        w = m.nn_module_attr_manager("weight", "L['m'].weight", mod.weight, PLAIN, mod)
        w.add_id_match_guard(id(mod.weight), ["w is weight"], None)
        m.add_lambda_guard(lambda x: x.training, ["m.training"], None)
        root.finalize()

        passing = {"h": holder, "m": mod}
        failing = {"h": Holder(inner={key: object()}, n=5, t=t), "m": mod}
        baseline = [sys.getrefcount(o) for o in watched]
        for _ in range(200):
            self.assertIs(root.check(passing), True)  # memoized after the first
            self.assertIs(root.check(failing), False)
            self.assertTrue(root.check_verbose(passing).result)
            self.assertFalse(root.check_verbose(failing).result)
        holder.n = 6  # the log stops validating: the full walk runs again
        self.assertIs(root.check(passing), False)
        holder.n = 5
        self.assertIs(root.check(passing), True)
        self.assertEqual([sys.getrefcount(o) for o in watched], baseline)


if __name__ == "__main__":
    run_tests()
