"""Subtree memos on dict and type watchers (CPython 3.12 and later;
torch/csrc/dynamo/watchers.h). Each test is named after an event, or a case
the soundness argument has to cover, and checks two things: that CPython
reports the event (through _testcapi's recording watcher, an oracle
independent of the engine) and that the memo's log is void afterwards, with
the verdict a full walk gives. On 3.11, which has no watchers, the same
mutations must still give the walk's verdict, through version tags."""

from __future__ import annotations

import contextlib
import gc
import subprocess
import sys
import textwrap
import threading
from typing import Any, Callable, Iterator

import torch
from torch._dynamo.guards import GuardManagerType
from torch._dynamo.test_case import run_tests, TestCase

from dynamo_guards import _C as guards

PLAIN = GuardManagerType.GUARD_MANAGER
HAS_WATCHERS = sys.version_info >= (3, 12)

try:
    import _testcapi
except ImportError:  # a CPython built without its test modules
    _testcapi = None


@contextlib.contextmanager
def cpython_events() -> Iterator[tuple[list[str], Callable[[dict], None]]]:
    """Yields (events, watch): `watch(d)` has CPython report d's events
    inside the block, and at its end `events` lists them as _testcapi's
    recording watcher spells them ("new:k:v", "mod:k:v", "del:k", "clone",
    "clear", "dealloc"). Nothing here keeps a watched dict alive."""
    events: list[str] = []
    if _testcapi is None or not HAS_WATCHERS:
        yield events, lambda d: None
        return
    watcher = _testcapi.add_dict_watcher(0)
    try:
        yield events, lambda d: _testcapi.watch_dict(watcher, d)
        events.extend(_testcapi.get_dict_watcher_events())
    finally:
        _testcapi.clear_dict_watcher(watcher)


class Plain:
    pass


class WatcherTestCase(TestCase):
    def memoized_dict(self, d: dict, present: tuple[str, ...] = (), absent: tuple[str, ...] = ()) -> tuple[Any, Any]:
        """A finalized tree on L['d'] whose memo pins `d` (by watch where
        there are watchers) and has recorded a log."""
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("d", 0), "L['d']", d, PLAIN)
        m.add_type_match_guard(id(type(d)), ["type(L['d'])"], None)
        for key in absent:
            m.add_dict_contains_guard(False, key, [f"{key!r} not in L['d']"], None)
        for key in present:
            child = m.dict_getitem_manager(key, f"L['d'][{key!r}]", d[key], PLAIN)
            child.add_equals_match_guard(d[key], [f"L['d'][{key!r}] == {d[key]!r}"], None)
        m.add_length_check_guard(len(d), ["len(L['d'])"], None)
        root.finalize()
        self.assert_log_recorded(root, m, {"d": d})
        return root, m

    def assert_log_recorded(self, root: Any, m: Any, f_locals: dict) -> None:
        self.assertTrue(m.is_memoized())
        self.assertTrue(root.check(f_locals))
        self.assertIsNotNone(m.memo_log_size(), "a passing check records a log")
        if HAS_WATCHERS:
            watches = m.memo_watches()
            self.assertGreater(watches["dicts"] + watches["types"], 0, "the log watches what it pins")
            self.assertFalse(watches["changed"])
        self.assertTrue(root.check(f_locals), "the log validates")

    def assert_log_void(self, m: Any) -> None:
        """After an event: the log may not be used again."""
        if HAS_WATCHERS:
            watches = m.memo_watches()
            self.assertTrue(watches is None or watches["changed"], watches)

    def assert_event(self, d: dict, mutate: Callable[[], None], expected_event: str) -> None:
        with cpython_events() as (events, watch):
            watch(d)
            mutate()
        if _testcapi is not None and HAS_WATCHERS:
            self.assertIn(expected_event, events, "CPython reports the mutation as this event")


class DictEventTests(WatcherTestCase):
    def test_added_key(self):
        d = {"a": 1}
        root, m = self.memoized_dict(d, present=("a",), absent=("b",))
        self.assert_event(d, lambda: d.__setitem__("b", 2), "new:b:2")
        self.assert_log_void(m)
        self.assertFalse(root.check({"d": d}))

    def test_modified_value(self):
        d = {"a": 1, "b": 2}
        root, m = self.memoized_dict(d, present=("a", "b"))
        self.assert_event(d, lambda: d.__setitem__("a", 5), "mod:a:5")
        self.assert_log_void(m)
        self.assertFalse(root.check({"d": d}))

    def test_modified_to_an_equal_value_passes_with_a_new_log(self):
        d = {"a": 1000, "b": 2}
        root, m = self.memoized_dict(d, present=("a", "b"))
        equal = int("1000")
        self.assertIsNot(equal, d["a"])
        self.assert_event(d, lambda: d.__setitem__("a", equal), "mod:a:1000")
        self.assert_log_void(m)
        self.assertTrue(root.check({"d": d}), "the walk passes and records a new log")
        if HAS_WATCHERS:
            self.assertFalse(m.memo_watches()["changed"])
        self.assertTrue(root.check({"d": d}))

    def test_deleted_key(self):
        d = {"a": 1, "b": 2}
        root, m = self.memoized_dict(d, present=("a", "b"))
        self.assert_event(d, lambda: d.__delitem__("b"), "del:b")
        self.assert_log_void(m)
        self.assertFalse(root.check({"d": d}))

    def test_cloned_into_an_empty_dict(self):
        d: dict = {}
        root, m = self.memoized_dict(d, absent=("a",))
        self.assert_event(d, lambda: d.update({"a": 1}), "clone")
        self.assert_log_void(m)
        self.assertFalse(root.check({"d": d}))

    def test_cleared(self):
        d = {"a": 1}
        root, m = self.memoized_dict(d, present=("a",))
        self.assert_event(d, d.clear, "clear")
        self.assert_log_void(m)
        self.assertFalse(root.check({"d": d}))

    def test_popitem_and_setdefault(self):
        for mutate, event in ((lambda d: d.popitem(), "del:b"), (lambda d: d.setdefault("c", 3), "new:c:3")):
            d = {"a": 1, "b": 2}
            root, m = self.memoized_dict(d, present=("a", "b"), absent=("c",))
            self.assert_event(d, lambda: mutate(d), event)
            self.assert_log_void(m)
            self.assertFalse(root.check({"d": d}))

    def test_dict_subclass_written(self):
        class Sub(dict):
            pass

        d = Sub(a=1)
        root, m = self.memoized_dict(d, present=("a",))
        self.assert_event(d, lambda: dict.__setitem__(d, "a", 2), "mod:a:2")
        self.assert_log_void(m)
        self.assertFalse(root.check({"d": d}))


class ObjectDictTests(WatcherTestCase):
    def memoized_object(self, obj: Plain) -> tuple[Any, Any]:
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("o", 0), "L['o']", obj, PLAIN)
        m.add_type_match_guard(id(type(obj)), ["type(L['o'])"], None)
        d = m.get_generic_dict_manager("L['o'].__dict__", obj.__dict__, PLAIN)
        d.add_dict_contains_guard(False, "extra", ["'extra' not in L['o'].__dict__"], None)
        d.dict_getitem_manager("x", "L['o'].x", obj.x, PLAIN).add_equals_match_guard(obj.x, ["L['o'].x == 1"], None)
        root.finalize()
        self.assert_log_recorded(root, m, {"o": obj})
        return root, m

    def test_dict_replaced_by_a_new_dict_at_the_same_address(self):
        # The object's __dict__ slot still holds the same address, so only
        # the old dict's DEALLOCATED event can tell the logs apart.
        obj = Plain()
        obj.x = 1
        old_address = id(obj.__dict__)
        root, m = self.memoized_object(obj)
        with cpython_events() as (events, watch):
            watch(obj.__dict__)
            obj.__dict__ = {}
        for _ in range(1000):
            new = {"x": 2}
            if id(new) == old_address:
                break
            del new
        else:
            self.skipTest("the allocator did not reuse the dict's address")
        obj.__dict__ = new
        del new
        if _testcapi is not None and HAS_WATCHERS:
            self.assertIn("dealloc", events)
        self.assertEqual(id(obj.__dict__), old_address)
        self.assert_log_void(m)
        self.assertFalse(root.check({"o": obj}))

    def test_dict_replaced_by_another_dict(self):
        obj = Plain()
        obj.x = 1
        root, m = self.memoized_object(obj)
        keep = obj.__dict__  # the old dict lives on: no event at all
        obj.__dict__ = {"x": 1, "extra": 0}
        self.assertFalse(root.check({"o": obj}), "the slot compare sees the other dict")
        obj.__dict__ = keep
        self.assertTrue(root.check({"o": obj}))

    def test_object_class_swapped(self):
        # __class__ assignment reports nothing to any watcher: the type is
        # compared on every check.
        class Other:
            pass

        obj = Plain()
        obj.x = 1
        root, m = self.memoized_object(obj)
        obj.__class__ = Other
        self.assertFalse(root.check({"o": obj}))
        obj.__class__ = Plain
        self.assertTrue(root.check({"o": obj}))


class ModuleTypeTests(WatcherTestCase):
    """Types pinned by watch: nn.Module attribute plans (attribute_resolution.h)."""

    def memoized_module(self, mod: torch.nn.Module) -> tuple[Any, Any]:
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", mod, PLAIN)
        m.add_type_match_guard(id(type(mod)), ["type(L['m'])"], None)
        m.nn_module_attr_manager("scale", "L['m'].scale", mod.scale, PLAIN, mod).add_equals_match_guard(
            mod.scale, ["L['m'].scale == 2"], None
        )
        m.nn_module_attr_manager("training", "L['m'].training", True, PLAIN, mod).add_true_match_guard(["training"], None)
        root.finalize()
        self.assert_log_recorded(root, m, {"m": mod})
        if HAS_WATCHERS:
            self.assertGreater(m.memo_watches()["types"], 0)
        return root, m

    def make(self, base: type = torch.nn.Module) -> torch.nn.Module:
        cls = type("Local", (base,), {})
        mod = cls()
        mod.scale = 2
        return mod

    def test_class_attribute_set(self):
        mod = self.make()
        root, m = self.memoized_module(mod)
        type(mod).scale = property(lambda self: 5)  # a data descriptor now answers
        self.assert_log_void(m)
        self.assertFalse(root.check({"m": mod}))

    def test_class_attribute_set_on_a_base_class(self):
        base = type("Base", (torch.nn.Module,), {})
        mod = self.make(base)
        root, m = self.memoized_module(mod)
        base.scale = property(lambda self: 5)
        self.assert_log_void(m)
        self.assertFalse(root.check({"m": mod}))

    def test_class_modified_twice(self):
        # The first modification invalidates the type's tag, and CPython
        # reports later ones only once a lookup gave it a new tag: the new
        # log must be pinned to that new tag.
        mod = self.make()
        root, m = self.memoized_module(mod)
        type(mod).unrelated = 1
        self.assert_log_void(m)
        self.assertTrue(root.check({"m": mod}), "an unrelated class attribute changes no verdict")
        self.assertTrue(root.check({"m": mod}))
        type(mod).scale = property(lambda self: 5)
        self.assert_log_void(m)
        self.assertFalse(root.check({"m": mod}))

    def test_class_bases_assigned(self):
        base = type("Base", (torch.nn.Module,), {})
        other = type("Other", (torch.nn.Module,), {"scale": property(lambda self: 7)})
        cls = type("Local", (base,), {})
        mod = cls()
        mod.scale = 2
        root, m = self.memoized_module(mod)
        cls.__bases__ = (other,)
        self.assert_log_void(m)
        self.assertFalse(root.check({"m": mod}))

    def test_watched_type_dies(self):
        # A type dies without any event: a weak reference reports it, since a
        # new type may be given the dead one's address.
        if not HAS_WATCHERS:
            self.skipTest("no type watchers before 3.12")
        mod = self.make()
        other = type("Other", (torch.nn.Module,), {})
        root, m = self.memoized_module(mod)
        before = guards.watchers()["watched_types"]
        mod.__class__ = other
        gc.collect()  # the Local class, now unreferenced, dies
        self.assert_log_void(m)
        self.assertLess(guards.watchers()["watched_types"], before)
        self.assertFalse(root.check({"m": mod}))


class WatchCaseTests(WatcherTestCase):
    def test_dict_changed_while_the_log_is_recorded(self):
        # A guard that runs Python code changes a dict the recording already
        # read: the new log must not trust that dict.
        d = {"a": 1, "b": 2}
        calls = []

        def mutate_once(value: Any) -> bool:
            if not calls:
                d["a"] = 3
            calls.append(value)
            return True

        root = guards.RootGuardManager()
        m = root.framelocals_manager(("d", 0), "L['d']", d, PLAIN)
        m.add_type_match_guard(id(dict), ["type(L['d'])"], None)
        m.dict_getitem_manager("a", "L['d']['a']", 1, PLAIN).add_equals_match_guard(1, ["L['d']['a'] == 1"], None)
        m.dict_getitem_manager("b", "L['d']['b']", 2, PLAIN).add_lambda_guard(mutate_once, ["mutate"], None)
        m.add_length_check_guard(2, ["len(L['d'])"], None)
        root.finalize()
        self.assertTrue(root.check({"d": d}), "the walk read a == 1 before the lambda changed it")
        self.assertFalse(root.check({"d": d}), "never stale: a is 3 now")

    def test_python_guard_changes_a_watched_dict_while_the_log_validates(self):
        # The lambda on d['b'] changes d['c'], which the walk checks after
        # it: the log, whose check of d['c'] is pinned by the watch, must
        # give the walk's verdict on this very call.
        d = {"a": 1, "b": 2, "c": 3}
        armed = []

        def mutate_when_armed(value: Any) -> bool:
            if armed:
                armed.clear()
                d["c"] = 30
            return True

        root = guards.RootGuardManager()
        m = root.framelocals_manager(("d", 0), "L['d']", d, PLAIN)
        m.add_type_match_guard(id(dict), ["type(L['d'])"], None)
        m.dict_getitem_manager("a", "L['d']['a']", 1, PLAIN).add_equals_match_guard(1, ["L['d']['a'] == 1"], None)
        m.dict_getitem_manager("b", "L['d']['b']", 2, PLAIN).add_lambda_guard(mutate_when_armed, ["mutate"], None)
        m.dict_getitem_manager("c", "L['d']['c']", 3, PLAIN).add_equals_match_guard(3, ["L['d']['c'] == 3"], None)
        root.finalize()
        self.assert_log_recorded(root, m, {"d": d})
        armed.append(True)
        self.assertFalse(root.check({"d": d}), "the walk reads d['c'] after the lambda changed it")
        self.assertFalse(root.check({"d": d}))

    def test_another_thread_writes_a_watched_dict(self):
        d = {"a": 1, "b": 2}
        root, m = self.memoized_dict(d, present=("a", "b"))
        writer = threading.Thread(target=lambda: d.__setitem__("a", 4))
        writer.start()
        writer.join()
        self.assert_log_void(m)
        self.assertFalse(root.check({"d": d}))

    def test_discarded_tree_stops_watching(self):
        gc.collect()
        before = guards.watchers()
        d = {"a": 1, "b": 2}
        root, m = self.memoized_dict(d, present=("a", "b"))
        if HAS_WATCHERS:
            self.assertGreater(guards.watchers()["watched_dicts"], before["watched_dicts"])
        del root, m
        gc.collect()
        after = guards.watchers()
        self.assertEqual(after["watched_dicts"], before["watched_dicts"])
        self.assertEqual(after["watched_types"], before["watched_types"])
        d["a"] = 2  # no set is told; nothing refers to the freed log

    def test_no_watcher_id_left(self):
        # Every dict and type watcher id left after torch's is taken before
        # _C is imported: the
        # engine watches nothing and pins dicts by version, as on 3.11.
        if not HAS_WATCHERS or _testcapi is None:
            self.skipTest("needs CPython 3.12+ and _testcapi")
        script = textwrap.dedent(
            """
            import _testcapi
            import torch  # takes its own watcher ids first
            def exhaust(add):
                try:
                    while True:
                        add(0)
                except RuntimeError:
                    pass
            exhaust(_testcapi.add_dict_watcher)
            exhaust(_testcapi.add_type_watcher)
            from torch._dynamo.guards import GuardManagerType
            from dynamo_guards import _C as guards
            PLAIN = GuardManagerType.GUARD_MANAGER
            w = guards.watchers()
            assert not w["dict_watcher"] and not w["type_watcher"], w
            d = {"a": 1, "b": 2}
            root = guards.RootGuardManager()
            m = root.framelocals_manager(("d", 0), "L['d']", d, PLAIN)
            m.add_type_match_guard(id(dict), ["type"], None)
            for k in ("a", "b"):
                m.dict_getitem_manager(k, k, d[k], PLAIN).add_equals_match_guard(d[k], [k], None)
            root.finalize()
            assert root.check({"d": d}) and root.check({"d": d})
            assert m.memo_watches() == {"dicts": 0, "types": 0, "changed": False}, m.memo_watches()
            assert "Dict" in m.memo_log_kinds() or "DictRun" in m.memo_log_kinds(), m.memo_log_kinds()
            d["a"] = 5
            assert not root.check({"d": d})
            print("ok")
            """
        )
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        self.assertIn("ok", result.stdout)


class InlineValuesWatchTests(WatcherTestCase):
    """CPython 3.13.0 calls no dict watcher for attribute writes to inline
    values a __dict__ shares (gh-125608); inline_values.h."""

    def test_cpython_3_13_0_reports_no_event_for_attribute_writes_to_shared_inline_values(self):
        if sys.version_info[:3] != (3, 13, 0) or _testcapi is None:
            self.skipTest("the defect is specific to CPython 3.13.0")
        obj = Plain()
        obj.x = 1
        with cpython_events() as (events, watch):
            watch(obj.__dict__)
            obj.x = 2
            obj.y = 3
            del obj.y
        self.assertEqual(events, [], "CPython 3.13.0 reports none of these writes")

    def test_memo_on_shared_inline_values_is_told_of_attribute_writes(self):
        obj = Plain()
        obj.x = 1
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("o", 0), "L['o']", obj, PLAIN)
        m.add_type_match_guard(id(Plain), ["type(L['o'])"], None)
        d = m.get_generic_dict_manager("L['o'].__dict__", obj.__dict__, PLAIN)
        d.dict_getitem_manager("x", "L['o'].x", 1, PLAIN).add_equals_match_guard(1, ["L['o'].x == 1"], None)
        d.add_dict_contains_guard(False, "y", ["'y' not in L['o'].__dict__"], None)
        root.finalize()
        self.assert_log_recorded(root, m, {"o": obj})
        with cpython_events() as (events, watch):
            watch(obj.__dict__)
            obj.x = 2
        if HAS_WATCHERS and _testcapi is not None:
            self.assertEqual(events, ["mod:x:2"], "after the engine detached the values, CPython reports the write")
        self.assert_log_void(m)
        self.assertFalse(root.check({"o": obj}))


if __name__ == "__main__":
    run_tests()
