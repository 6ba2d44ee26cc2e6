"""What differs between the CPython releases the engine supports, probed on
the interpreter running the test: objects' inline values and their
__dict__ (a defect of CPython 3.13.0), dict version tags and their watcher
bits, type version tags, OrderedDict's relink counter. Each test states the
interpreter's behaviour it relies on and checks it, so a release that
behaves otherwise fails here first. Run with every interpreter (`make
test`)."""

from __future__ import annotations

import collections
import ctypes
import sys

import torch
from torch._dynamo.guards import GuardManagerType
from torch._dynamo.test_case import run_tests, TestCase

from dynamo_guards import _C as guards

PLAIN = GuardManagerType.GUARD_MANAGER


class Plain:
    """A plain class: from 3.13 its instances keep attributes inline."""


def object_with_materialized_dict(**attrs: object) -> Plain:
    obj = Plain()
    for name, value in attrs.items():
        setattr(obj, name, value)
    obj.__dict__  # noqa: B018 - asking for it materializes the dict
    return obj


def attribute_write_is_counted() -> bool:
    """Whether writing an attribute through an object changes the version of
    its already materialized __dict__, on this interpreter."""
    obj = object_with_materialized_dict(x=1)
    before = guards.dict_version(obj.__dict__)
    obj.x = 2
    return guards.dict_version(obj.__dict__) != before


class InlineValuesTests(TestCase):
    """gh-125608: CPython 3.13.0 writes attributes set through an object
    straight into the inline values its __dict__ shares, without changing
    the dict's version or calling its watchers. inline_values.h."""

    def test_policy_matches_what_the_interpreter_does(self):
        expected = "writes reported" if attribute_write_is_counted() else "detach before pinning"
        self.assertEqual(guards.inline_values_policy(), expected)

    def test_cpython_3_13_0_does_not_count_attribute_writes_to_shared_inline_values(self):
        if sys.version_info[:3] != (3, 13, 0):
            self.skipTest("the defect is specific to CPython 3.13.0")
        self.assertFalse(attribute_write_is_counted(), "CPython 3.13.0 misses these writes (gh-125608)")
        obj = object_with_materialized_dict(x=1)
        d = obj.__dict__
        before = guards.dict_version(d)
        del obj.x
        obj.y = 3
        self.assertEqual(guards.dict_version(d), before, "deletions and new attributes are missed too")
        d["x"] = 4
        self.assertNotEqual(guards.dict_version(d), before, "writes through the dict itself are counted")

    def test_detach_keeps_the_dict_and_its_contents(self):
        # What the engine does before it pins such a dict, done the way
        # Python spells it: the same dict, the same contents, and from then
        # on every attribute write is counted.
        obj = object_with_materialized_dict(x=1, y="two")
        d = obj.__dict__
        before = guards.dict_version(d)
        obj.__dict__ = d
        self.assertIs(obj.__dict__, d)
        self.assertEqual(d, {"x": 1, "y": "two"})
        self.assertEqual(guards.dict_version(d), before, "detaching changes nothing the dict holds")
        obj.x = 5
        self.assertNotEqual(guards.dict_version(d), before)

    def memoized_attribute_guard(self, obj: Plain) -> guards.RootGuardManager:
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("o", 0), "L['o']", obj, PLAIN)
        m.add_type_match_guard(id(Plain), ["type(L['o']) is Plain"], None)
        d = m.get_generic_dict_manager("L['o'].__dict__", obj.__dict__, PLAIN)
        d.add_dict_contains_guard(False, "extra", ["'extra' not in L['o'].__dict__"], None)
        d.dict_getitem_manager("x", "L['o'].x", obj.x, PLAIN).add_equals_match_guard(1, ["L['o'].x == 1"], None)
        root.finalize()
        self.assertTrue(m.is_memoized())
        self.assertTrue(root.check({"o": obj}))
        self.assertIsNotNone(m.memo_log_size(), "the memo recorded a log")
        self.assertTrue(root.check({"o": obj}), "the log validates")
        return root

    def test_memo_attribute_written_through_object_sharing_inline_values(self):
        obj = object_with_materialized_dict(x=1)
        root = self.memoized_attribute_guard(obj)
        obj.x = 2
        self.assertFalse(root.check({"o": obj}))
        obj.x = 1
        self.assertTrue(root.check({"o": obj}))

    def test_memo_attribute_deleted_through_object_sharing_inline_values(self):
        obj = object_with_materialized_dict(x=1)
        root = self.memoized_attribute_guard(obj)
        del obj.x
        self.assertFalse(root.check({"o": obj}))

    def test_memo_attribute_added_through_object_sharing_inline_values(self):
        obj = object_with_materialized_dict(x=1)
        root = self.memoized_attribute_guard(obj)
        obj.extra = 0
        self.assertFalse(root.check({"o": obj}))

    def test_memo_module_training_flag_flipped_through_object(self):
        # nn.Module.__setattr__ ends in object.__setattr__ for plain values:
        # the write that 3.13.0 does not report for shared inline values.
        lin = torch.nn.Linear(2, 2)
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", lin, PLAIN)
        m.add_type_match_guard(id(type(lin)), ["type(L['m']) is Linear"], None)
        m.nn_module_attr_manager("training", "L['m'].training", True, PLAIN, lin).add_true_match_guard(["training"], None)
        m.nn_module_attr_manager("in_features", "L['m'].in_features", 2, PLAIN, lin).add_equals_match_guard(2, ["in"], None)
        root.finalize()
        self.assertTrue(root.check({"m": lin}))
        self.assertIsNotNone(m.memo_log_size())
        lin.training = False
        self.assertFalse(root.check({"m": lin}))
        lin.train()
        self.assertTrue(root.check({"m": lin}))

    def test_dict_version_guard_on_dict_sharing_inline_values(self):
        obj = object_with_materialized_dict(x=1)
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("d", 0), "L['d']", obj.__dict__, PLAIN)
        m.add_dict_version_guard(obj.__dict__, ["dict_version(L['d'])"], None)
        root.finalize()
        passed = root.check({"d": obj.__dict__})
        obj.x = 2
        self.assertFalse(root.check({"d": obj.__dict__}), "never passes once the dict changed")
        if guards.inline_values_policy() == "writes reported":
            self.assertTrue(passed)
        else:
            self.assertFalse(passed, "a version that misses writes says nothing: the guard fails")


class DictVersionTests(TestCase):
    def test_version_changes_on_every_kind_of_write(self):
        d = {"a": 1}
        seen = {guards.dict_version(d)}
        for write in (
            lambda: d.__setitem__("a", 2),
            lambda: d.__setitem__("b", 3),
            lambda: d.pop("b"),
            lambda: d.update(c=4),
            lambda: d.setdefault("e", 5),
            lambda: d.popitem(),
            lambda: d.clear(),
        ):
            write()
            version = guards.dict_version(d)
            self.assertNotIn(version, seen)
            seen.add(version)

    def test_same_value_stored_again_keeps_version(self):
        value = object()
        d = {"a": value}
        before = guards.dict_version(d)
        d["a"] = value
        self.assertEqual(guards.dict_version(d), before)

    def test_version_of_new_dict_differs_from_a_dead_one_at_the_same_address(self):
        versions: dict[int, list[int]] = {}
        for _ in range(200):
            d = {"k": 1}
            versions.setdefault(id(d), []).append(guards.dict_version(d))
            del d
        self.assertTrue(any(len(v) > 1 for v in versions.values()), "addresses are reused by new dicts")
        for v in versions.values():
            self.assertEqual(len(v), len(set(v)), "each new dict at an address has a version of its own")

    def test_bad_argument(self):
        with self.assertRaisesRegex(TypeError, "dict_version needs a dict"):
            guards.dict_version([1])


def odict_state(od: collections.OrderedDict) -> int:
    """The word odict_state.h says is od_state: one word before the
    instance __dict__ slot, whose offset the type publishes."""
    return ctypes.c_size_t.from_address(id(od) + collections.OrderedDict.__dictoffset__ - ctypes.sizeof(ctypes.c_size_t)).value


class OrderedDictStateTests(TestCase):
    """The relink counter of the C OrderedDict (od_state), which
    ORDERED_DICT_ORDER reads where the start-up probe confirms it
    (odict_state.h). Each fact the engine relies on, on this interpreter."""

    def test_probe_confirms_the_counter(self):
        self.assertTrue(guards.odict_state_readable(), "3.11, 3.12 and 3.13 share the layout")

    def test_layout_published_by_the_type(self):
        word = ctypes.sizeof(ctypes.c_void_p)
        od_type = collections.OrderedDict
        self.assertEqual(od_type.__dictoffset__, dict.__basicsize__ + 6 * word)
        self.assertEqual(od_type.__weakrefoffset__, od_type.__dictoffset__ + word)
        self.assertEqual(od_type.__basicsize__, od_type.__weakrefoffset__ + word)

    def test_every_relink_counts(self):
        od = collections.OrderedDict()
        counts = []
        for change in (
            lambda: od.__setitem__("a", 1),
            lambda: od.__setitem__("b", 2),
            lambda: od.__setitem__("a", 3),  # a value update: no relink
            lambda: od.move_to_end("a"),
            lambda: od.move_to_end("a", last=False),
            lambda: od.popitem(last=True),
            lambda: od.pop("a"),
        ):
            before = odict_state(od)
            change()
            counts.append(odict_state(od) - before)
        self.assertEqual(counts, [1, 1, 0, 2, 2, 1, 1])

    def test_counter_never_goes_back(self):
        od = collections.OrderedDict(a=1, b=2)
        before = odict_state(od)
        od.clear()
        self.assertGreaterEqual(odict_state(od), before, "clear() counts on 3.13, not before; it never decreases")
        od["b"] = 2
        od["a"] = 1
        self.assertGreater(odict_state(od), before)

    def test_storage_order_unchanged_by_move_to_end(self):
        od = collections.OrderedDict(a=1, b=2)
        version = guards.dict_version(od)
        od.move_to_end("a")
        self.assertEqual(list(dict.keys(od)), ["a", "b"], "storage order: what torch's dict guards read")
        self.assertEqual(list(od), ["b", "a"], "linked order: what the trace iterates")
        self.assertEqual(guards.dict_version(od), version, "no dict version or watcher sees a relink")


if __name__ == "__main__":
    run_tests()
