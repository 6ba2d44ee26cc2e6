"""Engine API tests: every leaf guard and accessor built straight from Python
(pass/fail pairs, tree shape, failure text, bad arguments)."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import collections
import enum
import functools
import gc
import os
import re
import sys
import threading
import types
import weakref
from pathlib import Path
from typing import Any

import torch
from torch._dynamo.guards import GuardManagerType
from torch._dynamo.test_case import run_tests, TestCase

import dynamo_guards
from dynamo_guards import _C as guards

PLAIN = GuardManagerType.GUARD_MANAGER
DICT = GuardManagerType.DICT_GUARD_MANAGER
COVERAGE_DOC = Path(__file__).resolve().parents[2] / "docs" / "coverage.md"
# torch's leaf guard constructors take a root first; a leaf built on its own
# belongs to no tree.
ROOT = guards.RootGuardManager()


def assert_fails_until_restored(test: TestCase, root: Any, value: dict, mutate, restore) -> None:
    """``root``'s check of ``value`` fails after ``mutate()`` and passes
    again once ``restore()`` undid it."""
    mutate()
    try:
        test.assertFalse(root.check(value))
    finally:
        restore()
    test.assertTrue(root.check(value))


def assert_logged_without_walks(test: TestCase, root: Any, manager: Any, value: dict) -> None:
    """Finalizes ``root``; its check of ``value`` passes twice (recording,
    then validating ``manager``'s log), and that log walks no read."""
    root.finalize()
    test.assertTrue(root.check(value))
    test.assertTrue(root.check(value))
    test.assertTrue(manager.is_memoized())
    test.assertNotIn("Walk", manager.memo_log_kinds())


def id_type(x: object) -> int:
    return id(type(x))


class Pair:
    def __init__(self, a: object, b: object) -> None:
        self.a = a
        self.b = b


class LeafGuardTests(TestCase):
    def test_type_match(self):
        guard = guards.TYPE_MATCH(ROOT, id_type(5), ["type(x) == int"])
        self.assertTrue(guard(5))
        self.assertFalse(guard(4.0))
        self.assertFalse(guard(True))
        self.assertEqual(guard.verbose_code_parts(), ["type(x) == int"])

    def test_verbose_code_parts_list_mutated_by_caller(self):
        parts = ["type(x) == int"]
        guard = guards.TYPE_MATCH(ROOT, id_type(5), parts)
        parts.append("appended after the build")
        guard.verbose_code_parts().append("appended to a returned list")
        self.assertEqual(guard.verbose_code_parts(), ["type(x) == int"])

    def test_verbose_code_parts_of_strs_untracked_by_collector(self):
        # code_parts.h: a tuple of exact strs can be in no reference cycle,
        # so the engine takes it off the collector's lists (no referrer
        # the collector can report).
        text = "".join(["x == ", "untracked"])  # a str no other code holds
        guard = guards.EQUALS_MATCH(ROOT, 5, [text])
        self.assertEqual([r for r in gc.get_referrers(text) if type(r) is tuple], [])
        self.assertEqual(guard.verbose_code_parts(), ["x == untracked"])

    def test_verbose_code_parts_holding_other_objects_stay_tracked(self):
        class Part(str):
            pass

        subclass_part, plain_object = Part("x == 5"), object()
        guard = guards.EQUALS_MATCH(ROOT, 5, [subclass_part, plain_object])
        # Only a tracked container is reported as a referrer.
        holders = [r for r in gc.get_referrers(plain_object) if type(r) is tuple and r[0] is subclass_part]
        self.assertNotEqual(holders, [])
        self.assertTrue(all(gc.is_tracked(holder) for holder in holders))
        self.assertEqual(guard.verbose_code_parts(), [subclass_part, plain_object])

    def test_id_match(self):
        obj = object()
        guard = guards.ID_MATCH(ROOT, id(obj), ["x is obj"])
        self.assertTrue(guard(obj))
        self.assertFalse(guard(object()))

    def test_equals_match(self):
        guard = guards.EQUALS_MATCH(ROOT, 5, ["x == 5"])
        self.assertTrue(guard(5))
        self.assertFalse(guard(6))
        self.assertFalse(guard(5.0))  # same value, different type

    def test_equals_match_list_mutated_in_place(self):
        constant = [1, 2]
        guard = guards.EQUALS_MATCH(ROOT, constant, ["x == [1, 2]"])
        self.assertTrue(guard(constant))
        constant.append(3)
        self.assertFalse(guard(constant))

    def test_equals_match_raising_eq_is_a_failure(self):
        class Bad:
            def __eq__(self, other):
                raise RuntimeError("boom")

            __hash__ = object.__hash__

        guard = guards.EQUALS_MATCH(ROOT, Bad(), ["x == bad"])
        self.assertFalse(guard(Bad()))

    def test_singletons(self):
        self.assertTrue(guards.NONE_MATCH(ROOT, ["x is None"])(None))
        self.assertFalse(guards.NONE_MATCH(ROOT, ["x is None"])(0))
        self.assertTrue(guards.NOT_NONE(ROOT, ["x is not None"])(0))
        self.assertFalse(guards.NOT_NONE(ROOT, ["x is not None"])(None))
        self.assertTrue(guards.TRUE_MATCH(ROOT, ["x is True"])(True))
        self.assertFalse(guards.TRUE_MATCH(ROOT, ["x is True"])(1))
        self.assertTrue(guards.FALSE_MATCH(ROOT, ["x is False"])(False))
        self.assertFalse(guards.FALSE_MATCH(ROOT, ["x is False"])(0))

    def test_length_check(self):
        guard = guards.LENGTH_CHECK(ROOT, 2, ["len(x) == 2"])
        self.assertTrue(guard([1, 2]))
        self.assertTrue(guard((1, 2)))
        self.assertFalse(guard([1]))
        self.assertFalse(guard(5))  # no len(): a failure, not an exception

    def test_dict_length(self):
        guard = guards.DICT_LENGTH(ROOT, 1, ["len(x) == 1"])
        self.assertTrue(guard({"a": 1}))
        self.assertFalse(guard({}))
        self.assertFalse(guard([1]))

    def test_dict_contains(self):
        has = guards.DICT_CONTAINS(ROOT, True, "a", ["'a' in x"])
        lacks = guards.DICT_CONTAINS(ROOT, False, "a", ["'a' not in x"])
        self.assertTrue(has({"a": 1}))
        self.assertFalse(has({}))
        self.assertTrue(lacks({}))
        self.assertFalse(lacks({"a": 1}))
        self.assertFalse(has("a"))

    def test_dict_version(self):
        d = {"a": 1}
        guard = guards.DICT_VERSION(ROOT, d, ["dict unchanged"])
        self.assertTrue(guard(d))
        d["a"] = 1  # the very same object: CPython keeps the version
        self.assertTrue(guard(d))
        d["a"] = 2
        self.assertFalse(guard(d))

    def test_no_hasattr(self):
        guard = guards.NO_HASATTR(ROOT, "foo", ["not hasattr(x, 'foo')"])
        self.assertTrue(guard(Pair(1, 2)))
        p = Pair(1, 2)
        p.foo = 1
        self.assertFalse(guard(p))

    def test_no_hasattr_getattr_raising_other_error_fails(self):
        class Weird:
            def __getattr__(self, name):
                raise RuntimeError("not an AttributeError")

        guard = guards.NO_HASATTR(ROOT, "foo", ["not hasattr(x, 'foo')"])
        self.assertFalse(guard(Weird()))

    def test_getattr_fallthrough_class_attribute_added(self):
        class Answering:
            def __getattr__(self, name):
                return 1

        guard = guards.GETATTR_FALLTHROUGH("shift", ["x.shift from __getattr__"])
        obj = Answering()
        self.assertTrue(guard(obj))
        self.assertTrue(guard(obj))  # from the class verdict cache
        Answering.shift = 0
        self.assertFalse(guard(obj))
        del Answering.shift
        self.assertTrue(guard(obj))

    def test_getattr_fallthrough_base_class_attribute_added(self):
        class Base:
            pass

        class Answering(Base):
            def __getattr__(self, name):
                return 1

        guard = guards.GETATTR_FALLTHROUGH("shift", ["x.shift from __getattr__"])
        obj = Answering()
        self.assertTrue(guard(obj))
        Base.shift = property(lambda self: 0)
        self.assertFalse(guard(obj))

    def test_getattr_fallthrough_instance_attribute_set(self):
        class Answering:
            def __getattr__(self, name):
                return 1

        guard = guards.GETATTR_FALLTHROUGH("shift", ["x.shift from __getattr__"])
        obj = Answering()
        self.assertTrue(guard(obj))
        obj.shift = 0
        self.assertFalse(guard(obj))
        del obj.shift
        self.assertTrue(guard(obj))

    def test_nn_module_hooks_empty_hook_registered(self):
        lin = torch.nn.Linear(2, 2)
        guard = guards.NN_MODULE_HOOKS_EMPTY("_forward_hooks", ["not lin._forward_hooks"])
        self.assertTrue(guard(lin))
        handle = lin.register_forward_hook(lambda mod, args, out: out)
        self.assertFalse(guard(lin))
        handle.remove()
        self.assertTrue(guard(lin))

    def test_nn_module_hooks_empty_hook_dict_replaced(self):
        lin = torch.nn.Linear(2, 2)
        guard = guards.NN_MODULE_HOOKS_EMPTY("_forward_pre_hooks", ["not lin._forward_pre_hooks"])
        lin.__dict__["_forward_pre_hooks"] = collections.OrderedDict({0: print})
        self.assertFalse(guard(lin))
        lin.__dict__["_forward_pre_hooks"] = collections.OrderedDict()
        self.assertTrue(guard(lin))
        lin.__dict__["_forward_pre_hooks"] = []
        self.assertFalse(guard(lin), "an empty hook container that is not a dict")
        del lin.__dict__["_forward_pre_hooks"]
        self.assertFalse(guard(lin), "the attribute is gone: getattr raises")

    def test_nn_module_hooks_empty_shadowed_by_class_property(self):
        class Hooked(torch.nn.Linear):
            pass

        lin = Hooked(2, 2)
        guard = guards.NN_MODULE_HOOKS_EMPTY("_forward_hooks", ["not lin._forward_hooks"])
        self.assertTrue(guard(lin))
        Hooked._forward_hooks = property(lambda self: {0: print})
        self.assertFalse(guard(lin), "a data descriptor on the class wins over the instance __dict__")
        del Hooked._forward_hooks
        self.assertTrue(guard(lin))

    def test_equals_match_zero_replaced_by_negative_zero(self):
        guard = guards.EQUALS_MATCH(ROOT, 0.0, ["x == 0.0"])
        self.assertTrue(guard(float("0.0")), "an equal new float passes")
        self.assertFalse(guard(-0.0), "stock's == passes it; x / eps tells them apart")
        guard = guards.EQUALS_MATCH(ROOT, complex(1.0, 0.0), ["x == 1+0j"])
        self.assertTrue(guard(complex("1+0j")))
        self.assertFalse(guard(complex(1.0, -0.0)))

    def test_equals_match_tuple_with_negative_zero(self):
        guard = guards.EQUALS_MATCH(ROOT, (0.0, 1), ["x == (0.0, 1)"])
        self.assertTrue(guard(tuple([0.0, 1])))
        self.assertFalse(guard((-0.0, 1)))
        self.assertFalse(guard((0.0, True)), "an element of another exact type (stock's == passes it)")

    def test_equals_match_nan_with_the_same_bits_passes(self):
        nan = float("nan")
        guard = guards.EQUALS_MATCH(ROOT, nan, ["x == nan"])
        self.assertTrue(guard(nan))
        self.assertTrue(guard(float("nan")), "the same bits: nothing can tell them apart")

    def test_equals_match_keeps_equality_for_other_types(self):
        guard = guards.EQUALS_MATCH(ROOT, 2**70, ["x == 2**70"])
        self.assertTrue(guard(int(str(2**70))))
        self.assertFalse(guard(2**70 + 1))
        guard = guards.EQUALS_MATCH(ROOT, torch.Size([2, 3]), ["x == torch.Size([2, 3])"])
        self.assertTrue(guard(torch.Size([2, 3])))
        self.assertFalse(guard(torch.Size([2, 4])))

    def test_function_code_match_code_swapped(self):
        class C:
            def method(self):
                return 1

        def other(self):
            return 2

        guard = guards.FUNCTION_CODE_MATCH(C.__dict__["method"], ["C.method keeps its __code__"])
        original = C.method.__code__
        self.assertTrue(guard(None), "the guarded value is not read")
        C.method.__code__ = other.__code__
        self.assertFalse(guard(None), "same class, same function, other code")
        C.method.__code__ = original
        self.assertTrue(guard(None), "the code the trace read is back")

    def test_class_attr_match_ignores_code(self):
        class C:
            def method(self):
                return 1

        guard = guards.CLASS_ATTR_MATCH("method", C.__dict__["method"], ["type(x).method is C.method"])
        obj = C()
        C.method.__code__ = (lambda self: 2).__code__
        self.assertTrue(guard(obj), "identity only: the code is FUNCTION_CODE_MATCH's")
        C.method = lambda self: 1
        self.assertFalse(guard(obj))

    def test_function_code_match_bad_argument(self):
        with self.assertRaisesRegex(TypeError, "needs a function, or a classmethod or property"):
            guards.FUNCTION_CODE_MATCH(staticmethod(len), ["code"])
        with self.assertRaisesRegex(TypeError, "needs a function, or a classmethod or property"):
            guards.FUNCTION_CODE_MATCH(classmethod(len), ["code"])
        with self.assertRaisesRegex(TypeError, "needs a function, or a classmethod or property"):
            guards.FUNCTION_CODE_MATCH(property(len), ["code"])
        with self.assertRaisesRegex(TypeError, "needs a function, or a classmethod or property"):
            guards.FUNCTION_CODE_MATCH(property(), ["code"])

    def test_function_code_match_property_getter_code_swapped(self):
        class C:
            @property
            def value(self):
                return 1

        def other(self):
            return 2

        guard = guards.FUNCTION_CODE_MATCH(C.__dict__["value"], ["C.value keeps its __code__"])
        self.assertTrue(guard(None))
        C.__dict__["value"].fget.__code__ = other.__code__
        self.assertFalse(guard(None))

    def test_function_code_match_property_reinitialized_same_code(self):
        class C:
            @property
            def value(self):
                return 1

        getter = C.__dict__["value"].fget
        copy = types.FunctionType(getter.__code__, getter.__globals__, "value")
        guard = guards.FUNCTION_CODE_MATCH(C.__dict__["value"], ["C.value keeps its __code__"])
        self.assertTrue(guard(None))
        C.__dict__["value"].__init__(copy)
        self.assertFalse(guard(None), "the same property now calls another function, though with the same code")
        C.__dict__["value"].__init__(getter)
        self.assertTrue(guard(None), "the getter the trace inlined is back")
        C.__dict__["value"].__init__(None)
        self.assertFalse(guard(None), "a property without a getter")

    def test_function_code_match_classmethod_code_swapped(self):
        class C:
            @classmethod
            def method(cls):
                return 1

        def other(cls):
            return 2

        guard = guards.FUNCTION_CODE_MATCH(C.__dict__["method"], ["C.method keeps its __code__"])
        self.assertTrue(guard(None))
        C.__dict__["method"].__func__.__code__ = other.__code__
        self.assertFalse(guard(None))

    def test_function_code_match_classmethod_reinitialized(self):
        class C:
            @classmethod
            def method(cls):
                return 1

        def other(cls):
            return 2

        guard = guards.FUNCTION_CODE_MATCH(C.__dict__["method"], ["C.method keeps its __code__"])
        self.assertTrue(guard(None))
        C.__dict__["method"].__init__(other)
        self.assertFalse(guard(None), "the same classmethod object now wraps another function")

    def test_function_code_match_swapped_out_code_dies(self):
        namespace: dict[str, object] = {}
        # Compiled apart, so that only the function holds its code object.
        exec("class C:\n    def method(self):\n        return 1\n", namespace)
        C = namespace["C"]
        guard = guards.FUNCTION_CODE_MATCH(C.__dict__["method"], ["C.method keeps its __code__"])
        self.assertTrue(guard(None))
        dead = weakref.ref(C.method.__code__)
        C.method.__code__ = compile("def f(self):\n    return 1\n", "<swap>", "exec").co_consts[0]
        self.assertIsNone(dead(), "the guard does not keep the swapped-out code alive")
        self.assertFalse(guard(None))

    def test_function_code_match_function_dies(self):
        namespace: dict[str, object] = {}
        exec("def f(x):\n    return x\n", namespace)
        guard = guards.FUNCTION_CODE_MATCH(namespace["f"], ["f keeps its __code__"])
        self.assertTrue(guard(None))
        del namespace["f"]
        self.assertFalse(guard(None), "held weakly: a dead function fails")

    def test_class_attr_shadowed_class_attribute_replaced(self):
        class C:
            k = 1

            def __init__(self):
                self.k = 2

        guard = guards.CLASS_ATTR_SHADOWED("k", ["x.k is x.__dict__['k']"])
        obj = C()
        self.assertTrue(guard(obj))
        C.k = 5
        self.assertTrue(guard(obj), "the instance still answers: the class attribute does not matter")
        del C.k
        self.assertTrue(guard(obj))

    def test_class_attr_shadowed_instance_attribute_deleted(self):
        class C:
            k = 1

            def __init__(self):
                self.k = 2

        guard = guards.CLASS_ATTR_SHADOWED("k", ["x.k is x.__dict__['k']"])
        obj = C()
        del obj.k
        self.assertFalse(guard(obj))
        obj.k = 3
        self.assertTrue(guard(obj))

    def test_class_attr_shadowed_property_added_on_base(self):
        class Base:
            pass

        class C(Base):
            k = 1

            def __init__(self):
                self.k = 2

        guard = guards.CLASS_ATTR_SHADOWED("k", ["x.k is x.__dict__['k']"])
        obj = C()
        self.assertTrue(guard(obj))
        Base.k = property(lambda self: 7)
        self.assertTrue(guard(obj), "C.k still hides the base's property")
        del C.k
        self.assertFalse(guard(obj), "now the property on the base answers")

    def test_class_attr_shadowed_custom_getattribute(self):
        class C:
            k = 1

            def __init__(self):
                self.k = 2

            def __getattribute__(self, name):
                return object.__getattribute__(self, name)

        guard = guards.CLASS_ATTR_SHADOWED("k", ["x.k is x.__dict__['k']"])
        self.assertFalse(guard(C()), "a custom __getattribute__ decides, not the instance __dict__")

    def test_class_attr_shadowed_on_module(self):
        class M(torch.nn.Module):
            scale = 1.0

        mod = M()
        mod.scale = 2.0
        guard = guards.CLASS_ATTR_SHADOWED("scale", ["mod.scale is mod.__dict__['scale']"])
        self.assertTrue(guard(mod), "nn.Module's __getattr__ only runs after the instance __dict__")
        M.scale = property(lambda self: 3.0)
        self.assertFalse(guard(mod))

    def test_lambda_guard(self):
        guard = guards.LAMBDA_GUARD(ROOT, lambda x: x > 3, ["x > 3"])
        self.assertTrue(guard(4))
        self.assertFalse(guard(3))
        self.assertFalse(guard("not comparable"))  # raised TypeError -> failure

    def test_bad_arguments_raise_type_error(self):
        with self.assertRaisesRegex(TypeError, "incompatible constructor arguments"):
            guards.TYPE_MATCH(ROOT, id_type(5), "type(x) == int", None)  # torch's constructor takes a list only
        with self.assertRaisesRegex(TypeError, "type_id must be an int"):
            guards.TYPE_MATCH(ROOT, "int", ["type(x) == int"])
        with self.assertRaisesRegex(TypeError, "must be hashable"):
            guards.DICT_CONTAINS(ROOT, True, [], ["[] in x"])
        with self.assertRaisesRegex(TypeError, "incompatible constructor arguments"):
            guards.LAMBDA_GUARD(ROOT, 5, ["5(x)"])  # torch's constructor takes a callable only
        with self.assertRaisesRegex(TypeError, "must be callable"):
            ROOT.add_lambda_guard(5, ["5(x)"], None)
        with self.assertRaisesRegex(ValueError, "must not be negative"):
            guards.LENGTH_CHECK(ROOT, -1, ["len(x) == -1"])


class ManagerTests(TestCase):
    def test_framelocals_and_leaf_guards(self):
        root = guards.RootGuardManager()
        x = root.framelocals_manager(("x", 0), "L['x']", 5, PLAIN)
        x.add_type_match_guard(id_type(5), ["type(L['x']) == int"], None)
        x.add_equals_match_guard(5, ["L['x'] == 5"], None)
        self.assertTrue(root.check({"x": 5}))
        self.assertFalse(root.check({"x": 6}))
        self.assertFalse(root.check({"y": 5}))
        self.assertFalse(root.check(None))  # not a dict: a failure, not a crash

    def test_leaf_floor_runs_the_managers_own_leaves_in_order(self):
        calls = []

        def leaf(name: str, result: bool):
            return lambda value: calls.append((name, value)) or result

        root = guards.RootGuardManager()
        root.add_lambda_guard(leaf("first", True), ["first"], None)
        root.add_lambda_guard(leaf("second", True), ["second"], None)
        root.framelocals_manager(("x", 0), "L['x']", 1, PLAIN).add_lambda_guard(leaf("child", True), ["child"], None)
        f_locals = {"x": 1}
        self.assertIsNone(root.leaf_floor_us(f_locals, 0))
        micros, passed = root.leaf_floor_us(f_locals, 3)
        self.assertGreaterEqual(micros, 0.0)
        self.assertTrue(passed)
        # The manager's own leaves on the value given, pass after pass; a
        # child manager's leaves are not the manager's.
        self.assertEqual(calls, [("first", f_locals), ("second", f_locals)] * 3)
        calls.clear()
        root.add_lambda_guard(leaf("failing", False), ["failing"], None)
        root.add_lambda_guard(leaf("after", True), ["after"], None)
        self.assertEqual(root.leaf_floor_us(f_locals, 2)[1], False)
        self.assertEqual([name for name, _ in calls], ["first", "second", "failing"] * 2, "a pass stops at a failing leaf")

    def test_same_accessor_returns_same_manager(self):
        root = guards.RootGuardManager()
        a = root.framelocals_manager(("p", 0), "L['p']", Pair(1, 2), PLAIN)
        self.assertIs(a.getattr_manager("a", "L['p'].a", 1, PLAIN), a.getattr_manager("a", "L['p'].a", 1, PLAIN))
        self.assertEqual(len(a.get_accessors()), 1)
        a.getattr_manager("b", "L['p'].b", 2, PLAIN)
        self.assertEqual([acc.repr() for acc in a.get_accessors()], ["GetAttrGuardAccessor(a)", "GetAttrGuardAccessor(b)"])

    def test_check_verbose_names_the_failing_guard(self):
        root = guards.RootGuardManager()
        p = root.framelocals_manager(("p", 0), "L['p']", Pair(1, 2), PLAIN)
        p.getattr_manager("a", "L['p'].a", 1, PLAIN).add_equals_match_guard(1, ["L['p'].a == 1"], None)
        p.getattr_manager("b", "L['p'].b", 2, PLAIN).add_equals_match_guard(2, ["L['p'].b == 2"], None)
        ok = root.check_verbose({"p": Pair(1, 2)})
        self.assertTrue(ok.result)
        self.assertEqual(ok.num_guards_executed, 2)
        missing = root.check_verbose({"p": object()})
        self.assertExpectedInline(
            str(missing.verbose_code_parts), """["getattr failed on source L['p'].a"]"""
        )
        bad = root.check_verbose({"p": Pair(1, 3)})
        self.assertFalse(bad.result)
        self.assertExpectedInline(str(bad.verbose_code_parts), """["L['p'].b == 2"]""")

    def test_failing_child_is_tried_first_next_time(self):
        root = guards.RootGuardManager()
        p = root.framelocals_manager(("p", 0), "L['p']", Pair(1, 2), PLAIN)
        p.getattr_manager("a", "L['p'].a", 1, PLAIN).add_equals_match_guard(1, ["L['p'].a == 1"], None)
        p.getattr_manager("b", "L['p'].b", 2, PLAIN).add_equals_match_guard(2, ["L['p'].b == 2"], None)
        self.assertFalse(root.check({"p": Pair(1, 3)}))
        self.assertEqual(root.check_verbose({"p": Pair(0, 3)}).verbose_code_parts, ["L['p'].b == 2"])

    def test_accessors(self):
        def fn(a, b=3, *, c=4):
            return a + b + c + captured

        captured = 1
        value = {
            "d": {"k": 1},
            "l": [10, 20],
            "t": (30, 40),
            "fn": fn,
            "w": weakref.ref(Pair),
            "s": {7},
        }
        root = guards.RootGuardManager()

        def local(name):
            return root.framelocals_manager((name, 0), f"L[{name!r}]", value[name], PLAIN)

        local("d").dict_getitem_manager("k", "L['d']['k']", 1, PLAIN).add_equals_match_guard(1, ["d['k'] == 1"], None)
        local("d").getitem_manager("k", "L['d']['k']", 1, PLAIN).add_equals_match_guard(1, ["d['k'] == 1"], None)
        local("l").list_getitem_manager(1, "L['l'][1]", 20, PLAIN).add_equals_match_guard(20, ["l[1] == 20"], None)
        local("t").tuple_getitem_manager(0, "L['t'][0]", 30, PLAIN).add_equals_match_guard(30, ["t[0] == 30"], None)
        f = local("fn")
        f.func_defaults_manager("defaults", (3,), PLAIN).add_equals_match_guard((3,), ["defaults"], None)
        f.func_kwdefaults_manager("kwdefaults", {"c": 4}, PLAIN).add_dict_length_check_guard(1, ["kwdefaults"], None)
        f.code_manager("code", fn.__code__, PLAIN).add_id_match_guard(id(fn.__code__), ["code"], None)
        f.closure_manager("closure", fn.__closure__, PLAIN).add_length_check_guard(1, ["closure"], None)
        f.type_manager("type", type(fn), PLAIN).add_id_match_guard(id(type(fn)), ["type"], None)
        local("w").weakref_call_manager("w()", Pair, PLAIN).add_id_match_guard(id(Pair), ["w() is Pair"], None)
        local("s").set_getitem_manager(0, "s[0]", 7, PLAIN).add_equals_match_guard(7, ["s[0] == 7"], None)
        self.assertTrue(root.check(value))
        for key, mutated in [
            ("d", {"k": 2}),
            ("l", [10, 21]),
            ("t", (31, 40)),
            ("w", weakref.ref(Pair.__init__)),
            ("s", {8}),
        ]:
            changed = dict(value, **{key: mutated})
            self.assertFalse(root.check(changed), key)
        fn.__defaults__ = (5,)
        self.assertFalse(root.check(value))

    def test_getattr_builtin_fields_follow_mutations(self):
        # getattr on a function, cell or bound method reads the object's own
        # field; each mutation of that field must still fail the guard.
        def make_fn():
            captured = 1

            def fn(a, b=3, *, c=4):
                return a + b + c + captured

            return fn

        fn = make_fn()
        cell = fn.__closure__[0]
        method = types.MethodType(fn, Pair)
        value = {"fn": fn, "cell": cell, "m": method}
        root = guards.RootGuardManager()

        def attr(local, name, example):
            mgr = root.framelocals_manager((local, 0), f"L[{local!r}]", value[local], PLAIN)
            return mgr.getattr_manager(name, f"L[{local!r}].{name}", example, PLAIN)

        attr("fn", "__defaults__", fn.__defaults__).add_equals_match_guard((3,), ["defaults"], None)
        attr("fn", "__kwdefaults__", fn.__kwdefaults__).add_dict_length_check_guard(1, ["kwdefaults"], None)
        attr("fn", "__code__", fn.__code__).add_id_match_guard(id(fn.__code__), ["code"], None)
        attr("fn", "__closure__", fn.__closure__).add_length_check_guard(1, ["closure"], None)
        attr("fn", "__globals__", fn.__globals__).add_id_match_guard(id(fn.__globals__), ["globals"], None)
        attr("cell", "cell_contents", 1).add_equals_match_guard(1, ["cell_contents == 1"], None)
        attr("m", "__func__", fn).add_id_match_guard(id(fn), ["__func__"], None)
        attr("m", "__self__", Pair).add_id_match_guard(id(Pair), ["__self__"], None)
        self.assertTrue(root.check(value))

        def fails_after(mutate, restore):
            assert_fails_until_restored(self, root, value, mutate, restore)

        fails_after(lambda: setattr(fn, "__defaults__", (5,)), lambda: setattr(fn, "__defaults__", (3,)))
        fails_after(lambda: setattr(fn, "__defaults__", None), lambda: setattr(fn, "__defaults__", (3,)))
        fails_after(lambda: setattr(fn, "__kwdefaults__", None), lambda: setattr(fn, "__kwdefaults__", {"c": 4}))
        code = fn.__code__
        fails_after(lambda: setattr(fn, "__code__", code.replace()), lambda: setattr(fn, "__code__", code))
        fails_after(lambda: setattr(cell, "cell_contents", 2), lambda: setattr(cell, "cell_contents", 1))
        fails_after(lambda: delattr(cell, "cell_contents"), lambda: setattr(cell, "cell_contents", 1))
        other = types.MethodType(make_fn(), Pair)
        fails_after(lambda: value.__setitem__("m", other), lambda: value.__setitem__("m", method))

    def test_getattr_empty_builtin_fields_read_as_getattr_does(self):
        # An empty field reads as None (no defaults, no closure, a property
        # without a getter) or raises (an empty cell), as getattr does.
        def bare(a):
            return a

        def make_cell():
            if False:
                captured = None

            def inner():
                return captured

            return inner.__closure__[0]

        prop = property()
        cell = make_cell()
        value = {"fn": bare, "prop": prop, "cell": cell}
        root = guards.RootGuardManager()

        def attr(local, name):
            mgr = root.framelocals_manager((local, 0), f"L[{local!r}]", value[local], PLAIN)
            return mgr.getattr_manager(name, f"L[{local!r}].{name}", getattr(value[local], name, None), PLAIN)

        for name in ("__defaults__", "__kwdefaults__", "__closure__"):
            attr("fn", name).add_none_match_guard([f"fn.{name} is None"], None)
        attr("prop", "fget").add_none_match_guard(["prop.fget is None"], None)
        self.assertTrue(root.check(value))
        bare.__defaults__ = (1,)
        self.assertFalse(root.check(value))
        bare.__defaults__ = None
        self.assertTrue(root.check(value))

        empty = guards.RootGuardManager()
        empty.framelocals_manager(("cell", 0), "L['cell']", cell, PLAIN).getattr_manager(
            "cell_contents", "L['cell'].cell_contents", None, PLAIN
        ).add_none_match_guard(["cell_contents is None"], None)
        self.assertFalse(empty.check(value))
        cell.cell_contents = None
        self.assertTrue(empty.check(value))

    def test_getattr_builtin_field_names_on_other_objects_use_getattr(self):
        # The same names on an object of another type are ordinary attributes.
        holder = types.SimpleNamespace(__defaults__=(3,), cell_contents=1, __self__=Pair)
        root = guards.RootGuardManager()
        local = root.framelocals_manager(("h", 0), "L['h']", holder, PLAIN)
        local.getattr_manager("__defaults__", "L['h'].__defaults__", (3,), PLAIN).add_equals_match_guard(
            (3,), ["defaults"], None
        )
        local.getattr_manager("cell_contents", "L['h'].cell_contents", 1, PLAIN).add_equals_match_guard(
            1, ["cell_contents"], None
        )
        local.getattr_manager("__self__", "L['h'].__self__", Pair, PLAIN).add_id_match_guard(
            id(Pair), ["__self__"], None
        )
        self.assertTrue(root.check({"h": holder}))
        holder.cell_contents = 2
        self.assertFalse(root.check({"h": holder}))
        holder.cell_contents = 1
        self.assertTrue(root.check({"h": holder}))
        del holder.__defaults__
        self.assertFalse(root.check({"h": holder}))

    def test_type_dict_and_mro_accessors(self):
        root = guards.RootGuardManager()
        t = root.framelocals_manager(("p", 0), "L['p']", Pair(1, 2), PLAIN).type_manager("type(p)", Pair, PLAIN)
        t.type_dict_manager("type(p).__dict__", Pair.__dict__, PLAIN).add_dict_contains_guard(
            False, "a", ["'a' not in type(p).__dict__"], None
        )
        t.type_mro_manager("type(p).__mro__", Pair.__mro__, PLAIN).add_length_check_guard(2, ["len(mro) == 2"], None)
        self.assertTrue(root.check({"p": Pair(1, 2)}))
        Pair.a = 5
        try:
            self.assertFalse(root.check({"p": Pair(1, 2)}))
        finally:
            del Pair.a

    def test_generic_dict_accessor(self):
        root = guards.RootGuardManager()
        d = root.framelocals_manager(("p", 0), "L['p']", Pair(1, 2), PLAIN).get_generic_dict_manager(
            "L['p'].__dict__", Pair(1, 2).__dict__, PLAIN
        )
        d.add_dict_contains_guard(False, "c", ["'c' not in p.__dict__"], None)
        self.assertTrue(root.check({"p": Pair(1, 2)}))
        p = Pair(1, 2)
        p.c = 3
        self.assertFalse(root.check({"p": p}))
        self.assertFalse(root.check({"p": 5}))  # int has no __dict__

    def test_dict_guard_manager_guards_key_order(self):
        example = {"a": 1, "b": 2}
        root = guards.RootGuardManager()
        dm = root.framelocals_manager(("d", 0), "L['d']", example, DICT)
        self.assertIsInstance(dm, guards.DictGuardManager)
        dm.get_key_manager(1, "key 1", "b", PLAIN).add_equals_match_guard("b", ["key 1 == 'b'"], None)
        dm.get_value_manager(1, "value 1", 2, PLAIN).add_equals_match_guard(2, ["value 1 == 2"], None)
        self.assertTrue(root.check({"d": {"a": 1, "b": 2}}))
        self.assertTrue(root.check({"d": {"a": 9, "b": 2}}))  # index 0 is unguarded
        self.assertFalse(root.check({"d": {"b": 2, "a": 1}}))  # order changed
        self.assertFalse(root.check({"d": {"a": 1, "b": 2, "c": 3}}))  # size changed
        self.assertEqual(sorted(dm.get_key_value_managers()), [1])
        with self.assertRaisesRegex(IndexError, "out of range"):
            dm.get_key_manager(5, "key 5", "x", PLAIN)

    def ordered_dict_tree(self, example: collections.OrderedDict) -> guards.RootGuardManager:
        """What torch builds for a dict whose key order matters: a
        DictGuardManager with every key and value by storage position."""
        root = guards.RootGuardManager()
        dm = root.framelocals_manager(("d", 0), "L['d']", example, DICT)
        for i, (key, value) in enumerate(dict.items(example)):
            dm.get_key_manager(i, f"key {i}", key, PLAIN).add_equals_match_guard(key, [f"key {i} == {key!r}"], None)
            dm.get_value_manager(i, f"value {i}", value, PLAIN).add_equals_match_guard(value, [f"value {i} == {value!r}"], None)
        return root

    def test_ordered_dict_moved_to_end(self):
        od = collections.OrderedDict(a=1, b=2, c=3)
        root = self.ordered_dict_tree(od)
        self.assertTrue(root.check({"d": od}))
        self.assertTrue(root.check({"d": od}), "from the relink counter")
        od.move_to_end("a")
        self.assertFalse(root.check({"d": od}), "storage, version and watchers are unchanged; the order is not")
        failure = root.check_verbose({"d": od})
        self.assertFalse(failure.result)
        self.assertEqual(failure.verbose_code_parts, ["list(OrderedDict.keys(L['d'])) == ['a', 'b', 'c']"])
        od.move_to_end("b")
        od.move_to_end("c")
        self.assertTrue(root.check({"d": od}), "back in the order the trace saw")

    def test_ordered_dict_reordered_before_building(self):
        od = collections.OrderedDict(a=1, b=2, c=3)
        od.move_to_end("a", last=True)  # linked b, c, a; stored a, b, c
        root = self.ordered_dict_tree(od)
        self.assertTrue(root.check({"d": od}))
        self.assertFalse(root.check({"d": collections.OrderedDict(a=1, b=2, c=3)}), "same storage, other linked order")
        self.assertFalse(root.check({"d": collections.OrderedDict(od)}), "the linked order, but stored b, c, a")
        od.move_to_end("a", last=False)
        self.assertFalse(root.check({"d": od}))

    def test_ordered_dict_equal_new_ordered_dict(self):
        od = collections.OrderedDict(a=1, b=2)
        root = self.ordered_dict_tree(od)
        self.assertTrue(root.check({"d": od}))
        self.assertTrue(root.check({"d": collections.OrderedDict(a=1, b=2)}), "walked: same order")
        self.assertTrue(root.check({"d": od}))

    def test_ordered_dict_key_popped_and_added_back(self):
        od = collections.OrderedDict(a=1, b=2)
        root = self.ordered_dict_tree(od)
        self.assertTrue(root.check({"d": od}))
        od.pop("b")
        od["b"] = 2
        self.assertTrue(root.check({"d": od}), "a new counter, the same order: walked and passed")

    def test_ordered_dict_subclass_iter_override_ignored(self):
        class Reversed(collections.OrderedDict):
            def __iter__(self):
                return reversed(list(super().__iter__()))

        od = Reversed(a=1, b=2)
        root = self.ordered_dict_tree(od)
        self.assertTrue(root.check({"d": od}), "the trace reads OrderedDict.keys, the C list")
        od.move_to_end("a")
        self.assertFalse(root.check({"d": od}))

    def test_ordered_dict_order_leaf_only_on_ordered_dicts(self):
        def kinds(example: dict) -> list[str]:
            dm = guards.RootGuardManager().framelocals_manager(("d", 0), "L['d']", example, DICT)
            return [leaf.kind() for leaf in dm.get_leaf_guards()]

        self.assertEqual(kinds(collections.OrderedDict(x=1)), ["ORDERED_DICT_ORDER"])
        self.assertEqual(kinds({"x": 1}), [])

    def test_tensor_match(self):
        x = torch.randn(2, 3)
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("x", 0), "L['x']", x, PLAIN)
        m.add_tensor_match_guard(
            x, [2, None], [3, 1], "L['x']", ["check_tensor(L['x'])"], None, type(x), torch._C._dispatch_keys(x)
        )
        self.assertTrue(root.check({"x": torch.randn(2, 3)}))
        self.assertFalse(root.check({"x": torch.randn(3, 3)}))
        self.assertFalse(root.check({"x": torch.randn(2, 3, dtype=torch.float64)}))
        self.assertFalse(root.check({"x": torch.randn(2, 3, requires_grad=True)}))
        self.assertFalse(root.check({"x": torch.randn(3, 2).t()}))  # strides differ
        self.assertFalse(root.check({"x": torch.nn.Parameter(torch.randn(2, 3))}))  # Python type differs
        self.assertFalse(root.check({"x": 5}))
        self.assertExpectedInline(
            str(root.check_verbose({"x": torch.randn(4, 3)}).verbose_code_parts),
            """["tensor 'L['x']' size mismatch at index 0. expected 2, actual 4"]""",
        )
        self.assertExpectedInline(
            str(root.check_verbose({"x": 5}).verbose_code_parts),
            """["expected type of 'L['x']' to be a tensor type, ' but found <class 'int'>"]""",
        )

    def test_tensor_match_dynamic_dim(self):
        x = torch.randn(2, 3)
        root = guards.RootGuardManager()
        root.framelocals_manager(("x", 0), "L['x']", x, PLAIN).add_tensor_match_guard(
            x, [None, 3], [3, 1], "L['x']", ["check_tensor(L['x'])"], None, type(x), torch._C._dispatch_keys(x)
        )
        self.assertTrue(root.check({"x": torch.randn(7, 3)}))
        self.assertFalse(root.check({"x": torch.randn(7, 4)}))

    def test_tensor_match_bad_arguments(self):
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("x", 0), "L['x']", 1, PLAIN)
        x = torch.randn(2)
        with self.assertRaisesRegex(TypeError, "needs a tensor"):
            m.add_tensor_match_guard(5, [1], [1], "x", ["x"], None, torch.Tensor, torch._C._dispatch_keys(x))
        with self.assertRaisesRegex(ValueError, "one entry per dimension"):
            m.add_tensor_match_guard(x, [2, 1], [1], "x", ["x"], None, torch.Tensor, torch._C._dispatch_keys(x))

    def test_dimension_marking_guard(self):
        x = torch.randn(4)
        root = guards.RootGuardManager()
        root.framelocals_manager(("x", 0), "L['x']", x, PLAIN).add_dimension_marking_guard(
            {"_dynamo_dynamic_indices": {0}}, ["_dynamo_static_indices"], {}, ["markings"], None
        )
        plain = torch.randn(4)
        self.assertTrue(root.check({"x": plain}))  # unspecified: fine
        marked = torch.randn(4)
        torch._dynamo.mark_dynamic(marked, 0)
        self.assertTrue(root.check({"x": marked}))
        static = torch.randn(4)
        torch._dynamo.mark_static(static, 0)
        self.assertFalse(root.check({"x": static}))

    def test_no_tensor_aliasing(self):
        a, b = torch.randn(2), torch.randn(2)
        root = guards.RootGuardManager()
        ma = root.framelocals_manager(("a", 0), "L['a']", a, PLAIN)
        mb = root.framelocals_manager(("b", 1), "L['b']", b, PLAIN)
        guards.install_no_tensor_aliasing_guard([ma, mb], ["L['a']", "L['b']"], ["check_no_aliasing(a, b)"], None)
        self.assertTrue(root.check({"a": a, "b": b}))
        self.assertFalse(root.check({"a": a, "b": a}))
        self.assertIn("Duplicate tensor found", root.check_verbose({"a": a, "b": a}).verbose_code_parts[0])
        self.assertTrue(ma.has_object_aliasing_guard())

    def test_no_tensor_aliasing_remembers_only_addresses_found_distinct(self):
        # The last distinct set is reused only for the very same addresses
        # in the same order: any other set is sorted and checked again.
        a, b, c = torch.randn(2), torch.randn(2), torch.randn(2)
        root = guards.RootGuardManager()
        ma = root.framelocals_manager(("a", 0), "L['a']", a, PLAIN)
        mb = root.framelocals_manager(("b", 1), "L['b']", b, PLAIN)
        mc = root.framelocals_manager(("c", 2), "L['c']", c, PLAIN)
        guards.install_no_tensor_aliasing_guard([ma, mb, mc], ["a", "b", "c"], ["no aliasing"], None)
        for _ in range(2):
            self.assertTrue(root.check({"a": a, "b": b, "c": c}))
        self.assertFalse(root.check({"a": a, "b": b, "c": a}))
        self.assertFalse(root.check({"a": a, "b": c, "c": c}))
        self.assertTrue(root.check({"a": c, "b": a, "c": b}))
        self.assertFalse(root.check({"a": a, "b": b, "c": b}))
        self.assertTrue(root.check({"a": a, "b": b, "c": c}))

    def test_no_tensor_aliasing_value_freed_mid_check(self):
        # NO_TENSOR_ALIASING records addresses only: a value that a Python
        # guard frees later in the check is not kept alive by its slot, and
        # a new tensor taking its address in a later slot fails the
        # relation (a recompile); distinct addresses pass.
        locals_ = {"a": torch.randn(2), "between": 0, "b": torch.randn(2)}
        freed_address = id(locals_["a"])
        freed = weakref.ref(locals_["a"])
        seen: dict[str, object] = {}

        def free_a_and_replace_b(value):
            locals_["a"] = None
            seen["a alive"] = freed() is not None
            locals_["b"] = torch.randn(2)
            seen["b address"] = id(locals_["b"])
            return True

        root = guards.RootGuardManager()
        ma = root.framelocals_manager(("a", 0), "L['a']", locals_["a"], PLAIN)
        between = root.framelocals_manager(("between", 1), "L['between']", 0, PLAIN)
        mb = root.framelocals_manager(("b", 2), "L['b']", locals_["b"], PLAIN)
        guards.install_no_tensor_aliasing_guard([ma, mb], ["a", "b"], ["no aliasing"], None)
        between.add_lambda_guard(free_a_and_replace_b, ["frees L['a']"], None)
        verdict = root.check(locals_)
        self.assertFalse(seen["a alive"], "the slot took no reference")
        self.assertEqual(verdict, seen["b address"] != freed_address)

    def test_object_aliasing(self):
        o = object()
        root = guards.RootGuardManager()
        ma = root.framelocals_manager(("a", 0), "L['a']", o, PLAIN)
        mb = root.framelocals_manager(("b", 1), "L['b']", o, PLAIN)
        guards.install_object_aliasing_guard(ma, mb, ["L['a'] is L['b']"], None)
        self.assertTrue(root.check({"a": o, "b": o}))
        self.assertFalse(root.check({"a": o, "b": object()}))

    def test_relational_guard_across_trees_is_rejected(self):
        r1, r2 = guards.RootGuardManager(), guards.RootGuardManager()
        m1 = r1.framelocals_manager(("a", 0), "L['a']", 1, PLAIN)
        m2 = r2.framelocals_manager(("b", 0), "L['b']", 1, PLAIN)
        with self.assertRaisesRegex(ValueError, "one tree"):
            guards.install_object_aliasing_guard(m1, m2, ["a is b"], None)

    def test_relational_guard_keeps_no_value_alive(self):
        a = torch.randn(2)
        b = torch.randn(2)
        root = guards.RootGuardManager()
        ma = root.framelocals_manager(("a", 0), "L['a']", a, PLAIN)
        mb = root.framelocals_manager(("b", 1), "L['b']", b, PLAIN)
        guards.install_no_tensor_aliasing_guard([ma, mb], ["a", "b"], ["no aliasing"], None)
        c = torch.randn(2)
        ref = weakref.ref(c)
        self.assertTrue(root.check({"a": a, "b": c}))
        del c
        self.assertIsNone(ref())

    def test_object_aliasing_keeps_no_value_alive(self):
        # OBJECT_ALIASING holds a reference per slot during the check only:
        # after a passing check, a failing one, and one whose tree fails
        # before the relation is verified.
        class Value:
            pass

        o = Value()
        root = guards.RootGuardManager()
        ma = root.framelocals_manager(("a", 0), "L['a']", o, PLAIN)
        mb = root.framelocals_manager(("b", 1), "L['b']", o, PLAIN)
        mb.add_type_match_guard(id_type(o), ["type(L['b']) is Value"], None)
        guards.install_object_aliasing_guard(ma, mb, ["L['a'] is L['b']"], None)
        for verdict, other in ((True, None), (False, Value()), (False, 5)):
            c = Value()
            ref = weakref.ref(c)
            self.assertEqual(root.check({"a": c, "b": c if other is None else other}), verdict)
            del c
            self.assertIsNone(ref(), f"kept alive after a check that returned {verdict} ({other!r})")

    def test_epilogue_guard_runs_after_tree(self):
        calls = []
        root = guards.RootGuardManager()
        root.framelocals_manager(("x", 0), "L['x']", 1, PLAIN).add_lambda_guard(
            lambda v: calls.append("tree") or True, ["tree"], None
        )
        root.add_epilogue_lambda_guard(lambda f: calls.append("epilogue") or True, ["epilogue"], None)
        self.assertTrue(root.check({"x": 1}))
        self.assertEqual(calls, ["tree", "epilogue"])
        self.assertEqual(len(root.get_epilogue_lambda_guards()), 1)

    def test_clone_manager_keeps_chosen_sources(self):
        root = guards.RootGuardManager()
        root.framelocals_manager(("x", 0), "L['x']", 1, PLAIN).add_equals_match_guard(1, ["L['x'] == 1"], None)
        root.framelocals_manager(("y", 1), "L['y']", 1, PLAIN).add_equals_match_guard(1, ["L['y'] == 1"], None)
        clone = root.clone_manager(lambda mgr: mgr.get_source() == "L['x']")
        self.assertEqual([m.get_source() for m in clone.get_child_managers()], ["L['x']"])
        self.assertTrue(clone.check({"x": 1, "y": 2}))
        self.assertFalse(clone.check({"x": 2, "y": 1}))

    def test_root_check_delegation(self):
        root = guards.RootGuardManager()
        root.framelocals_manager(("x", 0), "L['x']", 1, PLAIN).add_equals_match_guard(1, ["L['x'] == 1"], None)
        check = guards.RootCheck(root)
        self.assertIs(check.root, root)
        self.assertIs(check({"x": 1}), True)
        self.assertIs(check({"x": 2}), False)
        with self.assertRaisesRegex(TypeError, "exactly one argument"):
            check()
        with self.assertRaisesRegex(TypeError, "RootGuardManager"):
            guards.RootCheck(5)
        with self.assertRaises(RuntimeError):
            guards.RootCheck.__new__(guards.RootCheck)({"x": 1})

    def test_guard_tree_printing(self):
        root = guards.RootGuardManager()
        p = root.framelocals_manager(("p", 0), "L['p']", Pair(1, 2), PLAIN)
        p.add_type_match_guard(id_type(Pair(1, 2)), ["type(L['p']) == Pair"], None)
        p.getattr_manager("a", "L['p'].a", 1, PLAIN).add_equals_match_guard(1, ["L['p'].a == 1"], None)
        self.assertExpectedInline(
            # The module of Pair depends on how the file is run.
            dynamo_guards.format_tree(root).replace(Pair.__module__ + ".", ""),
            """\

TREE_GUARD_MANAGER:
+- RootGuardManager
| +- GuardManager: source=L['p'], accessed_by=FrameLocalsGuardAccessor(key='p', framelocals_idx=0), type=<class 'Pair'>, tag_safe=(False, False)
| | +- TYPE_MATCH: type(L['p']) == Pair
| | +- GuardManager: source=L['p'].a, accessed_by=GetAttrGuardAccessor(a), type=<class 'int'>, tag_safe=(False, False)
| | | +- EQUALS_MATCH: L['p'].a == 1
""",
        )

    def test_bad_builder_arguments(self):
        root = guards.RootGuardManager()
        with self.assertRaisesRegex(TypeError, "frame local name must be a str"):
            root.framelocals_manager((5, 0), "L[5]", 1, PLAIN)
        with self.assertRaisesRegex(TypeError, "attr must be a str"):
            root.getattr_manager(5, "x.5", 1, PLAIN)
        with self.assertRaisesRegex(TypeError, "must be hashable"):
            root.dict_getitem_manager([1], "x[[1]]", 1, PLAIN)
        # As in torch, the enum decides only for a dict example value.
        self.assertEqual(type(root.framelocals_manager(("i", 0), "L['i']", 5, DICT)).__name__, "GuardManager")
        with self.assertRaisesRegex(ValueError, "unknown guard_manager_enum"):
            root.framelocals_manager(("d", 0), "L['d']", {}, 7)
        with self.assertRaisesRegex(TypeError, "guard_manager_enum must be"):
            root.framelocals_manager(("e", 0), "L['e']", {}, None)
        with self.assertRaisesRegex(TypeError, "GuardManagers"):
            guards.install_no_tensor_aliasing_guard([1, 2], ["a", "b"], ["x"], None)


class Holder:
    """A plain object whose guards go through its instance __dict__."""

    def __init__(self, **attrs: object) -> None:
        self.__dict__.update(attrs)


class SubtreeMemoTests(TestCase):
    """The memo of a passing subtree must be invalidated by every mutation
    that changes a verdict: each test is named after such a mutation."""

    def build(self, obj: Holder) -> tuple[guards.RootGuardManager, object]:
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['m']) is Holder"], None)
        d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
        d.add_dict_contains_guard(False, "shadow", ["'shadow' not in L['m'].__dict__"], None)
        d.dict_getitem_manager("flag", "L['m'].flag", obj.flag, PLAIN).add_true_match_guard(["L['m'].flag is True"], None)
        d.dict_getitem_manager("count", "L['m'].count", obj.count, PLAIN).add_equals_match_guard(3, ["L['m'].count == 3"], None)
        t = d.dict_getitem_manager("t", "L['m'].t", obj.t, PLAIN)
        t.add_tensor_match_guard(
            obj.t, list(obj.t.shape), list(obj.t.stride()), "L['m'].t", ["check_tensor(L['m'].t)"], None, type(obj.t),
            torch._C._dispatch_keys(obj.t),
        )
        root.finalize()
        return root, m

    def fresh(self) -> Holder:
        return Holder(flag=True, count=3, t=torch.randn(2, 2))

    def assert_memo_invalidated(self, mutate, still_passes: bool = False, obj=None, build=None):
        """Records a log on ``obj`` (a fresh Holder) in the tree ``build``
        makes (``self.build``), mutates, and checks the verdict; returns the
        root for further checks."""
        obj = self.fresh() if obj is None else obj
        root, m = (build or self.build)(obj)
        self.assertTrue(m.is_memoized())
        self.assertTrue(root.check({"m": obj}))
        self.assertIsNotNone(m.memo_log_size(), "a passing check records a log")
        self.assertTrue(root.check({"m": obj}))  # from the log
        mutate(obj)
        self.assertEqual(root.check({"m": obj}), still_passes)
        self.assertEqual(root.check_verbose({"m": obj}).result, still_passes, "fast and verbose checks agree")
        return root

    def test_memo_touch_floor_reads_logged_objects_and_tensor_metadata(self):
        for requires_grad in (False, True):  # without and with an AutogradMeta
            obj = Holder(flag=True, count=3, t=torch.randn(2, 2, requires_grad=requires_grad))
            root, m = self.build(obj)
            self.assertIsNone(m.memo_touch_floor_us(10), "no log before a passing check")
            self.assertTrue(root.check({"m": obj}))
            self.assertIsNone(m.memo_touch_floor_us(0))
            micros, _, addresses = m.memo_touch_floor_us(10)
            self.assertGreaterEqual(micros, 0.0)
            # Each step's object, plus the TensorImpl and, with
            # requires_grad, the AutogradMeta of the tensor.
            self.assertEqual(addresses, sum(m.memo_log_kinds().values()) + 1 + requires_grad)
            # Without the tensors: neither the tensor nor its metadata.
            kinds = m.memo_log_kinds()
            self.assertEqual(m.memo_touch_floor_us(10, tensors=False)[2], sum(kinds.values()) - kinds["Tensor"])
            self.assertTrue(root.check({"m": obj}), "touching changes nothing")

    def test_tensor_floor_runs_the_validated_tensor_checks(self):
        for requires_grad in (False, True):
            obj = Holder(flag=True, count=3, t=torch.randn(2, 2, requires_grad=requires_grad))
            root, m = self.build(obj)
            floor = root.tensor_floor({"m": obj})
            self.assertEqual(len(floor), 0, "the first check records the log: nothing validated")
            floor = root.tensor_floor({"m": obj})
            self.assertEqual(len(floor), m.memo_log_kinds()["Tensor"])
            self.assertEqual(len(floor), 1)
            self.assertIsNone(floor.time_us(0))
            micros, mismatches = floor.time_us(10)
            self.assertGreaterEqual(micros, 0.0)
            self.assertEqual(mismatches, 0)
            # The floor runs the real comparison: a tensor whose metadata
            # changed in place no longer matches.
            obj.t.requires_grad_(not requires_grad)
            self.assertEqual(floor.time_us(1)[1], 1)
            self.assertIsNone(root.tensor_floor({"m": obj}), "None when the check fails")

    def test_tensor_floor_holds_its_tensors_until_dropped(self):
        obj = self.fresh()
        root, _ = self.build(obj)
        root.check({"m": obj})
        floor = root.tensor_floor({"m": obj})
        tensor = weakref.ref(obj.t)
        del obj
        gc.collect()
        self.assertIsNotNone(tensor(), "the floor keeps the tensor it times")
        self.assertEqual(floor.time_us(1)[1], 0)
        del floor
        gc.collect()
        self.assertIsNone(tensor(), "and only the floor did")

    def test_tensor_floor_collections_on_two_threads_ending_out_of_order(self):
        # Thread A's collection starts first; a root guard of A's check
        # starts thread B's collection and lets A go on once B's check is
        # under way; B's check then waits until A's collection is over.
        # Each collection must hold its own root's tensor, and nothing may
        # listen once both are gone. (The guards sit on the roots, outside
        # the memoized subtrees, so the logs still validate.)
        in_b_check, a_done = threading.Event(), threading.Event()
        running = [False]
        floors: dict[str, Any] = {}
        obj_a, obj_b = self.fresh(), self.fresh()
        root_a, _ = self.build(obj_a)
        root_b, _ = self.build(obj_b)
        thread_b = threading.Thread(target=lambda: floors.__setitem__("b", root_b.tensor_floor({"m": obj_b})))

        def start_b(_: object) -> bool:
            if running[0]:
                thread_b.start()
                in_b_check.wait(timeout=30)
            return True

        def wait_for_a(_: object) -> bool:
            if running[0]:
                in_b_check.set()
                a_done.wait(timeout=30)
            return True

        root_a.add_lambda_guard(start_b, ["start_b(L)"], None)
        root_b.add_lambda_guard(wait_for_a, ["wait_for_a(L)"], None)
        for root, obj in ((root_a, obj_a), (root_b, obj_b)):
            root.finalize()
            self.assertTrue(root.check({"m": obj}))  # records the logs
        running[0] = True
        floors["a"] = root_a.tensor_floor({"m": obj_a})
        a_done.set()
        thread_b.join(timeout=30)
        running[0] = False
        self.assertEqual((len(floors["a"]), len(floors["b"])), (1, 1))
        self.assertTrue(root_a.check({"m": obj_a}), "a check after both collections ended")
        obj_a.t.requires_grad_(True)
        self.assertEqual(floors["a"].time_us(1)[1], 1, "floor a holds obj_a's tensor")
        self.assertEqual(floors["b"].time_us(1)[1], 0, "floor b holds obj_b's tensor")

    def test_tensor_floor_keeps_its_root_alive(self):
        # A tensor with a dynamic size: its record leaves the comparison to
        # the root's TENSOR_MATCH, which the floor borrows.
        obj = self.fresh()
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
        d.dict_getitem_manager("t", "L['m'].t", obj.t, PLAIN).add_tensor_match_guard(
            obj.t, [None, 2], [2, 1], "L['m'].t", ["check_tensor(L['m'].t)"], None, type(obj.t),
            torch._C._dispatch_keys(obj.t),
        )
        root.finalize()
        root.check({"m": obj})
        floor = root.tensor_floor({"m": obj})
        self.assertEqual(len(floor), 1)
        alive = weakref.ref(root)
        del root, m, d
        gc.collect()
        self.assertIsNotNone(alive(), "the floor keeps the root and its guards")
        self.assertEqual(floor.time_us(1)[1], 0)
        del floor
        gc.collect()
        self.assertIsNone(alive())

    def box_tree(self, obj: Holder) -> tuple[Any, Any, Any, Any]:
        """A tree reaching ``obj`` through a property of a Box (a getattr no
        log can pin, so a Walk step), checked twice: (root, the box, the
        box's manager, obj's manager)."""

        class Box:
            def __init__(self, inner: Holder) -> None:
                self._inner = inner

            @property
            def inner(self) -> Holder:
                return self._inner

        box = Box(obj)
        root = guards.RootGuardManager()
        b = root.framelocals_manager(("b", 0), "L['b']", box, PLAIN)
        b.add_type_match_guard(id_type(box), ["type(L['b']) is Box"], None)
        m = b.getattr_manager("inner", "L['b'].inner", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['b'].inner) is Holder"], None)
        d = m.get_generic_dict_manager("L['b'].inner.__dict__", obj.__dict__, PLAIN)
        d.dict_getitem_manager("flag", "L['b'].inner.flag", obj.flag, PLAIN).add_true_match_guard(
            ["L['b'].inner.flag is True"], None
        )
        d.dict_getitem_manager("count", "L['b'].inner.count", obj.count, PLAIN).add_equals_match_guard(
            3, ["L['b'].inner.count == 3"], None
        )
        t = d.dict_getitem_manager("t", "L['b'].inner.t", obj.t, PLAIN)
        t.add_tensor_match_guard(
            obj.t, list(obj.t.shape), list(obj.t.stride()), "L['b'].inner.t", ["check_tensor(L['b'].inner.t)"], None,
            type(obj.t), torch._C._dispatch_keys(obj.t),
        )
        root.finalize()
        self.assertTrue(root.check({"b": box}))
        self.assertTrue(root.check({"b": box}))
        return root, box, b, m

    def test_memo_touch_floor_follows_walk_steps_into_nested_logs(self):
        _, box, b, m = self.box_tree(self.fresh())  # box keeps the objects the floor reads alive
        self.assertIn("Walk", b.memo_log_kinds())
        _, _, inner_addresses = m.memo_touch_floor_us(1)
        _, _, outer_addresses = b.memo_touch_floor_us(1)
        self.assertEqual(outer_addresses, sum(b.memo_log_kinds().values()) + inner_addresses)

    def test_tensor_floor_follows_walk_steps_into_nested_logs(self):
        root, box, b, _ = self.box_tree(self.fresh())
        self.assertNotIn("Tensor", b.memo_log_kinds(), "the tensor is in the log below the Walk step")
        floor = root.tensor_floor({"b": box})
        self.assertEqual((len(floor), floor.time_us(1)[1]), (1, 0))

    def test_memo_walked_reads_name_the_walk_steps_accessors(self):
        _, _, b, m = self.box_tree(self.fresh())
        self.assertEqual(b.memo_walked_reads(), ["GetAttrGuardAccessor(inner)"])
        self.assertEqual(m.memo_walked_reads(), [], "everything below the property is pinned")
        self.assertEqual(guards.RootGuardManager().memo_walked_reads(), [], "no log")

    def test_memo_dict_value_replaced(self):
        self.assert_memo_invalidated(lambda o: setattr(o, "count", 4))

    def test_memo_dict_value_replaced_by_equal_value(self):
        self.assert_memo_invalidated(lambda o: setattr(o, "count", 3), still_passes=True)

    def test_memo_key_added_to_dict(self):
        self.assert_memo_invalidated(lambda o: setattr(o, "shadow", 1))

    def test_memo_instance_dict_replaced(self):
        def replace(o):
            o.__dict__ = {"flag": False, "count": 3, "t": o.t}

        self.assert_memo_invalidated(replace)

    def test_memo_instance_dict_replaced_after_dict_then_attribute_read(self):
        # `o.__dict__` read before `o.flag`: the log's first step on the
        # memo's value checks its type and then also its __dict__ slot; the
        # attribute read adds the class's tag to that step and must keep the
        # slot compare (the old dict, kept alive, stays unchanged).
        class Obj:
            pass

        o = Obj()
        o.flag, o.x = 1, 2
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("o", 0), "L['o']", o, PLAIN)
        m.get_generic_dict_manager("L['o'].__dict__", o.__dict__, PLAIN).add_dict_contains_guard(
            True, "x", ["'x' in L['o'].__dict__"], None
        )
        m.getattr_manager("flag", "L['o'].flag", 1, PLAIN).add_equals_match_guard(1, ["L['o'].flag == 1"], None)
        value = {"o": o}
        assert_logged_without_walks(self, root, m, value)
        old = o.__dict__
        o.__dict__ = {"flag": 1}
        self.assertFalse(root.check(value))
        self.assertFalse(root.check_verbose(value).result)
        o.__dict__ = old
        self.assertTrue(root.check(value))

    def test_memo_class_swapped(self):
        class Other(Holder):
            pass

        self.assert_memo_invalidated(lambda o: setattr(o, "__class__", Other))

    def test_memo_tensor_requires_grad_flipped(self):
        self.assert_memo_invalidated(lambda o: o.t.requires_grad_())

    def test_memo_tensor_resized_in_place(self):
        self.assert_memo_invalidated(lambda o: o.t.resize_(3, 3))

    def test_memo_tensor_transposed_in_place(self):
        # Same sizes, other strides.
        self.assert_memo_invalidated(lambda o: o.t.t_())

    def test_memo_tensor_dtype_changed_through_data(self):
        self.assert_memo_invalidated(lambda o: setattr(o.t, "data", o.t.data.double()))

    def test_memo_tensor_class_swapped(self):
        class Marked(torch.Tensor):
            pass

        self.assert_memo_invalidated(lambda o: setattr(o.t, "__class__", Marked))

    def test_memo_tensor_impls_swapped(self):
        # swap_tensors gives the Python object another TensorImpl.
        self.assert_memo_invalidated(lambda o: torch.utils.swap_tensors(o.t, torch.randn(3, 2)))

    def test_memo_dynamic_and_high_rank_tensors_resized(self):
        # Tensors whose expected sizes are not all static, or whose rank is
        # above the inline limit, are checked by their guard from the log.
        for shape, dynamic in [((2, 3), [None, 3]), ((1, 2, 1, 2, 1), None)]:
            obj = Holder(t=torch.randn(*shape))
            root = guards.RootGuardManager()
            m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
            m.add_type_match_guard(id_type(obj), ["type(L['m']) is Holder"], None)
            d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
            t = d.dict_getitem_manager("t", "L['m'].t", obj.t, PLAIN)
            sizes = dynamic if dynamic is not None else list(shape)
            strides = [None, 1] if dynamic is not None else list(obj.t.stride())
            t.add_tensor_match_guard(
                obj.t, sizes, strides, "L['m'].t", ["check_tensor(L['m'].t)"], None, type(obj.t),
                torch._C._dispatch_keys(obj.t),
            )
            root.finalize()
            self.assertTrue(root.check({"m": obj}))
            self.assertEqual(m.memo_log_kinds().get("Tensor"), 1)
            self.assertTrue(root.check({"m": obj}), "from the log")
            if dynamic is not None:
                obj.t.resize_(5, 3)
                self.assertTrue(root.check({"m": obj}), "a dynamic size may change")
            obj.t.resize_(2, 4) if dynamic is not None else obj.t.resize_(1, 2, 1, 2, 2)
            self.assertFalse(root.check({"m": obj}), shape)

    def test_memo_tensor_data_swapped(self):
        def swap(o):
            o.t.data = torch.randn(5)

        self.assert_memo_invalidated(swap)

    def test_memo_other_object_same_contents(self):
        obj = self.fresh()
        root, m = self.build(obj)
        self.assertTrue(root.check({"m": obj}))
        other = Holder(flag=False, count=3, t=obj.t)
        self.assertFalse(root.check({"m": other}))

    def test_memo_class_attribute_added_for_module_attribute(self):
        cls = type("Local", (torch.nn.Module,), {})
        mod = cls()
        mod.register_buffer("buf", torch.zeros(2))
        mod.scale = 2
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", mod, PLAIN)
        m.nn_module_attr_manager("scale", "L['m'].scale", 2, PLAIN, mod).add_equals_match_guard(2, ["scale == 2"], None)
        m.nn_module_attr_manager("buf", "L['m'].buf", mod.buf, PLAIN, mod).add_type_match_guard(id_type(mod.buf), ["buf"], None)
        m.add_nn_module_attr_resolution_guard("buf", "_buffers", ["L['m'].buf is L['m']._buffers['buf']"], None)
        root.finalize()
        self.assertTrue(root.check({"m": mod}))
        self.assertIsNotNone(m.memo_log_size())
        cls.buf = torch.ones(2)  # a class attribute now answers mod.buf
        self.assertFalse(root.check({"m": mod}))
        del cls.buf
        self.assertTrue(root.check({"m": mod}))
        cls.scale = property(lambda self: 5)  # a data descriptor beats __dict__
        self.assertFalse(root.check({"m": mod}))

    def test_memo_relation_still_checked(self):
        a = torch.randn(2)
        obj = Holder(flag=True, count=3, t=a)
        root, m = self.build(obj)
        x = root.framelocals_manager(("x", 1), "L['x']", a, PLAIN)
        t_mgr = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN).dict_getitem_manager("t", "L['m'].t", a, PLAIN)
        guards.install_no_tensor_aliasing_guard([t_mgr, x], ["L['m'].t", "L['x']"], ["no aliasing"], None)
        root.finalize()
        b = torch.randn(2)
        self.assertTrue(root.check({"m": obj, "x": b}))
        # The log stores the slot's address (NO_TENSOR_ALIASING takes no
        # reference) rather than calling the slot leaf.
        self.assertEqual(m.memo_log_kinds().get("SlotAddress"), 1)
        self.assertTrue(root.check({"m": obj, "x": b}))
        self.assertFalse(root.check({"m": obj, "x": a}))
        self.assertTrue(root.check({"m": obj, "x": b}))

    def aliasing_tree(
        self, obj: Holder, probe: Any, second_in_log: bool = True
    ) -> tuple[guards.RootGuardManager, object]:
        """An OBJECT_ALIASING guard ``L['m'].a is L['m'].b`` (``b`` read from
        the frame's ``L['b']`` instead when not ``second_in_log``), then a
        Python guard ``probe`` on ``L['z']`` that runs after both slots."""
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['m']) is Holder"], None)
        d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
        d.dict_getitem_manager("flag", "L['m'].flag", obj.flag, PLAIN).add_true_match_guard(["L['m'].flag is True"], None)
        ma = d.dict_getitem_manager("a", "L['m'].a", obj.a, PLAIN)
        if second_in_log:
            mb = d.dict_getitem_manager("b", "L['m'].b", obj.b, PLAIN)
        else:
            mb = root.framelocals_manager(("b", 1), "L['b']", obj.b, PLAIN)
        guards.install_object_aliasing_guard(ma, mb, ["L['m'].a is L['m'].b"], None)
        root.framelocals_manager(("z", 2), "L['z']", 0, PLAIN).add_lambda_guard(probe, ["probe(L['z'])"], None)
        root.finalize()
        return root, m

    def refcount_probe(self, target: object) -> tuple[Any, list[int]]:
        seen: list[int] = []

        def probe(_value: object) -> bool:
            seen.append(sys.getrefcount(target))
            return True

        return probe, seen

    def test_memo_object_aliasing_pinned_takes_no_reference(self):
        # Both slots of `a is b` read through one log, which recorded one
        # object in both: the log stores the addresses (SlotAddress) and the
        # check takes no reference to the object.
        shared = object()
        obj = Holder(flag=True, a=shared, b=shared)
        probe, seen = self.refcount_probe(shared)
        root, m = self.aliasing_tree(obj, probe)
        frame = {"m": obj, "b": shared, "z": 0}
        self.assertTrue(root.check(frame))  # records the log; each slot holds the object
        self.assertEqual(m.memo_log_kinds().get("SlotAddress"), 2)
        self.assertNotIn("Leaf", m.memo_log_kinds())
        self.assertTrue(root.check(frame))  # from the log
        self.assertEqual(seen[0] - seen[1], 2, "the log's check holds no reference to the object")

    def test_memo_object_aliasing_one_attribute_replaced(self):
        shared = object()
        obj = Holder(flag=True, a=shared, b=shared)
        root, _ = self.aliasing_tree(obj, lambda _: True)
        frame = {"m": obj, "b": shared, "z": 0}
        self.assertTrue(root.check(frame))
        self.assertTrue(root.check(frame))
        obj.b = object()
        self.assertFalse(root.check(frame))
        self.assertFalse(root.check_verbose(frame).result)
        obj.b = shared
        self.assertTrue(root.check(frame))
        obj.a = object()
        self.assertFalse(root.check(frame))

    def test_memo_object_aliasing_replaced_by_equal_object(self):
        shared = [1, 2]
        obj = Holder(flag=True, a=shared, b=shared)
        root, _ = self.aliasing_tree(obj, lambda _: True)
        frame = {"m": obj, "b": shared, "z": 0}
        self.assertTrue(root.check(frame))
        self.assertTrue(root.check(frame))
        obj.a = list(shared)  # equal, not the same object
        self.assertFalse(root.check(frame))

    def test_memo_object_aliasing_recorded_failing_stays_checked(self):
        # The subtree passes while the relation fails: the log keeps the
        # slots' leaves, and keeps failing the relation until it holds.
        first, other = object(), object()
        obj = Holder(flag=True, a=first, b=other)
        root, m = self.aliasing_tree(obj, lambda _: True)
        frame = {"m": obj, "b": other, "z": 0}
        self.assertFalse(root.check(frame))
        self.assertIsNotNone(m.memo_log_size(), "the subtree passed: a log is recorded")
        self.assertNotIn("SlotAddress", m.memo_log_kinds())
        self.assertFalse(root.check(frame))
        obj.b = first
        self.assertTrue(root.check(frame))

    def test_memo_object_aliasing_across_logs_keeps_references(self):
        # One slot in the log, the other outside it: the slots hold their
        # values for the check, and the relation is still verified.
        shared = object()
        obj = Holder(flag=True, a=shared, b=shared)
        probe, seen = self.refcount_probe(shared)
        root, m = self.aliasing_tree(obj, probe, second_in_log=False)
        frame = {"m": obj, "b": shared, "z": 0}
        self.assertTrue(root.check(frame))  # records the log
        self.assertNotIn("SlotAddress", m.memo_log_kinds())
        self.assertTrue(root.check(frame))  # from the log
        self.assertEqual(seen[0], seen[1], "the slots hold the object on every check")
        self.assertFalse(root.check({"m": obj, "b": object(), "z": 0}))
        self.assertTrue(root.check(frame))

    def getattr_tree(self, obj: object) -> tuple[guards.RootGuardManager, object]:
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['m'])"], None)
        m.getattr_manager("flag", "L['m'].flag", obj.flag, PLAIN).add_true_match_guard(["L['m'].flag is True"], None)
        m.getattr_manager("count", "L['m'].count", obj.count, PLAIN).add_equals_match_guard(3, ["L['m'].count == 3"], None)
        root.finalize()
        return root, m

    def test_memo_getattr_value_replaced(self):
        obj = self.fresh()
        root, m = self.getattr_tree(obj)
        self.assertTrue(root.check({"m": obj}))
        self.assertIsNotNone(m.memo_log_size(), "an instance-__dict__ getattr is pinned by the log")
        obj.count = 4
        self.assertFalse(root.check({"m": obj}))

    def test_memo_getattr_property_added_to_class(self):
        cls = type("LocalHolder", (Holder,), {})
        obj = cls(flag=True, count=3, t=torch.randn(2))
        root, m = self.getattr_tree(obj)
        self.assertTrue(root.check({"m": obj}))
        cls.count = property(lambda self: 4)  # a data descriptor now answers
        self.assertFalse(root.check({"m": obj}))

    def class_fact_tree(self, obj: Holder, add_leaf) -> tuple[guards.RootGuardManager, object]:
        """A memoized subtree on ``obj`` with one class-level leaf."""
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['m'])"], None)
        add_leaf(m)
        d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
        d.dict_getitem_manager("flag", "L['m'].flag", obj.flag, PLAIN).add_true_match_guard(["L['m'].flag is True"], None)
        d.dict_getitem_manager("count", "L['m'].count", obj.count, PLAIN).add_equals_match_guard(3, ["L['m'].count == 3"], None)
        root.finalize()
        return root, m

    def test_memo_method_code_swapped(self):
        # What the builder makes for a method the trace inlined: identity per
        # object inside the memoized subtree, the code once on the root.
        cls = type("WithMethod", (Holder,), {"method": lambda self: 1})
        obj = cls(flag=True, count=3)
        root, m = self.class_fact_tree(
            obj, lambda m: m.add_class_attr_match_guard("method", cls.__dict__["method"], ["L['m'].method"], None)
        )
        root.add_function_code_match_guard(cls.__dict__["method"], ["WithMethod.method keeps its __code__"], None)
        self.assertTrue(root.check({"m": obj}))
        self.assertNotIn("Leaf", m.memo_log_kinds(), "identity is pinned by the class's version tag")
        self.assertTrue(root.check({"m": obj}))
        original = cls.method.__code__
        cls.method.__code__ = (lambda self: 2).__code__
        self.assertFalse(root.check({"m": obj}))
        failure = root.check_verbose({"m": obj})
        self.assertEqual(failure.verbose_code_parts, ["WithMethod.method keeps its __code__"])
        cls.method.__code__ = original
        self.assertTrue(root.check({"m": obj}))

    def function_code_tree(self, obj: Holder, extra=None) -> tuple[guards.RootGuardManager, object]:
        """``obj.fn`` (from the instance __dict__) with an ID_MATCH on its
        __code__, as the builder guards a function the trace inlined."""
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['m'])"], None)
        d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
        fn = d.dict_getitem_manager("fn", "L['m'].fn", obj.fn, PLAIN)
        code = fn.code_manager("L['m'].fn.__code__", obj.fn.__code__, PLAIN)
        code.add_id_match_guard(id(obj.fn.__code__), ["L['m'].fn.__code__ is code"], None)
        if extra is not None:
            extra(code)
        root.finalize()
        return root, m

    def test_memo_function_code_replaced(self):
        obj = self.fresh()
        obj.fn = lambda: 1
        root, m = self.function_code_tree(obj)
        self.assertTrue(root.check({"m": obj}))
        kinds = m.memo_log_kinds()
        self.assertEqual(kinds.get("FieldIdentity"), 1, "the code is compared in the function's field")
        self.assertNotIn("Walk", kinds)
        self.assertNotIn("Leaf", kinds)
        self.assertTrue(root.check({"m": obj}))
        original = obj.fn.__code__
        obj.fn.__code__ = (lambda: 2).__code__
        self.assertFalse(root.check({"m": obj}))
        self.assertEqual(root.check_verbose({"m": obj}).verbose_code_parts, ["L['m'].fn.__code__ is code"])
        obj.fn.__code__ = original
        self.assertTrue(root.check({"m": obj}))

    def test_memo_function_replaced_by_one_with_other_code(self):
        obj = self.fresh()
        obj.fn = lambda: 1
        root, m = self.function_code_tree(obj)
        self.assertTrue(root.check({"m": obj}))
        self.assertTrue(root.check({"m": obj}))
        obj.fn = lambda: 2
        self.assertFalse(root.check({"m": obj}))

    def code_attribute_tree(self, name: str) -> tuple[Any, Holder, dict]:
        # A lambda's code object with one equality guard on its attribute
        # `name`; returns the root, the object and the log's step kinds.
        obj = self.fresh()
        obj.fn = lambda: 1
        expected = getattr(obj.fn.__code__, name)
        root, m = self.function_code_tree(
            obj,
            lambda code: code.getattr_manager(name, f"L['m'].fn.__code__.{name}", expected, PLAIN).add_equals_match_guard(
                expected, [name], None
            ),
        )
        self.assertTrue(root.check({"m": obj}))
        kinds = m.memo_log_kinds()
        self.assertTrue(root.check({"m": obj}))
        return root, obj, kinds

    def test_memo_function_code_guarded_beyond_identity_is_walked(self):
        # A guard on what the code object holds, not only on which object it
        # is, through an attribute not known to be fixed by the code object
        # (co_consts: the list of CodeAttribute reads leaves it out): the
        # field compare would not decide it, so the read is walked.
        root, obj, kinds = self.code_attribute_tree("co_consts")
        self.assertNotIn("FieldIdentity", kinds)
        self.assertEqual(kinds.get("Walk"), 1)
        obj.fn.__code__ = (lambda: 2).__code__
        self.assertFalse(root.check({"m": obj}))

    def test_memo_function_code_name_pinned_by_the_code_object(self):
        # co_name is fixed by the code object: the code is a held field and
        # its name one LiveObject step (CodeAttributeReadTests).
        root, obj, kinds = self.code_attribute_tree("co_name")
        self.assertEqual((kinds.get("FieldIdentity"), kinds.get("LiveObject")), (1, 1))
        self.assertNotIn("Walk", kinds)

        def renamed():
            return 2

        obj.fn.__code__ = renamed.__code__
        self.assertFalse(root.check({"m": obj}))

    def test_memo_bound_method_code_replaced(self):
        # A bound method's function is the method's field, not one the log
        # compares: the read is walked, and a code swap still fails.
        class WithMethod:
            def method(self) -> int:
                return 1

        obj = self.fresh()
        obj.fn = WithMethod().method
        root, m = self.function_code_tree(obj)
        self.assertTrue(root.check({"m": obj}))
        self.assertNotIn("FieldIdentity", m.memo_log_kinds())
        self.assertTrue(root.check({"m": obj}))
        original = WithMethod.method.__code__
        WithMethod.method.__code__ = (lambda self: 2).__code__
        try:
            self.assertFalse(root.check({"m": obj}))
        finally:
            WithMethod.method.__code__ = original
        self.assertTrue(root.check({"m": obj}))

    def type_tree(self, obj: Holder) -> tuple[guards.RootGuardManager, object]:
        """What the builder makes when the trace reads ``type(obj)``: an
        entry of the class's own dict and a base in its MRO."""
        cls = type(obj)
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['m'])"], None)
        t = m.type_manager("type(L['m'])", cls, PLAIN)
        d = t.type_dict_manager("type(L['m']).__dict__", cls.__dict__, PLAIN)
        d.dict_getitem_manager("attr", "type(L['m']).attr", cls.__dict__["attr"], PLAIN).add_equals_match_guard(
            1, ["type(L['m']).attr == 1"], None
        )
        mro = t.type_mro_manager("type(L['m']).__mro__", cls.__mro__, PLAIN)
        mro.tuple_getitem_manager(1, "type(L['m']).__mro__[1]", cls.__mro__[1], PLAIN).add_id_match_guard(
            id(cls.__mro__[1]), ["type(L['m']).__mro__[1] is Base"], None
        )
        mro.tuple_getitem_manager(2, "type(L['m']).__mro__[2]", cls.__mro__[2], PLAIN).add_id_match_guard(
            id(cls.__mro__[2]), ["type(L['m']).__mro__[2] is Holder"], None
        )
        root.finalize()
        return root, m

    def typed_holder(self) -> Holder:
        base = type("Base", (Holder,), {})
        cls = type("Cls", (base,), {"attr": 1})
        return cls(flag=True, count=3)

    def test_memo_type_read_is_pinned(self):
        obj = self.typed_holder()
        root, m = self.type_tree(obj)
        self.assertTrue(root.check({"m": obj}))
        self.assertNotIn("Walk", m.memo_log_kinds(), "type(), its dict and its MRO are pinned by the class")
        self.assertTrue(root.check({"m": obj}))

    def test_memo_type_without_version_tag_is_walked(self):
        # Setting a class attribute takes the class's version tag away until
        # a lookup gives it a new one; a log recorded meanwhile walks the
        # type() read instead of giving up on the whole subtree.
        obj = self.typed_holder()
        root, m = self.type_tree(obj)
        self.assertTrue(root.check({"m": obj}))
        type(obj).attr = 1  # same value: the verdict stays
        self.assertTrue(root.check({"m": obj}))
        self.assertIn("Walk", m.memo_log_kinds())
        self.assertTrue(root.check({"m": obj}))
        type(obj).attr = 2
        self.assertFalse(root.check({"m": obj}))

    def test_memo_type_read_class_swapped(self):
        self.assert_memo_invalidated(
            lambda obj: setattr(obj, "__class__", type("Other", (type(obj).__mro__[1],), {"attr": 1})),
            obj=self.typed_holder(),
            build=self.type_tree,
        )

    def test_memo_type_dict_entry_replaced(self):
        obj = self.typed_holder()
        root = self.assert_memo_invalidated(lambda o: setattr(type(o), "attr", 2), obj=obj, build=self.type_tree)
        type(obj).attr = 1
        self.assertTrue(root.check({"m": obj}))

    def test_memo_type_mro_bases_reassigned(self):
        obj = self.typed_holder()
        root = self.assert_memo_invalidated(
            lambda o: setattr(type(o), "__bases__", (type("OtherBase", (Holder,), {}),)), obj=obj, build=self.type_tree
        )
        self.assertEqual(root.check_verbose({"m": obj}).verbose_code_parts, ["type(L['m']).__mro__[1] is Base"])

    def test_memo_type_mro_of_a_base_reassigned(self):
        # __bases__ assigned on a base computes every subclass's MRO again:
        # Holder moves from __mro__[2] to __mro__[3].
        obj = self.typed_holder()
        root = self.assert_memo_invalidated(
            lambda o: setattr(type(o).__mro__[1], "__bases__", (type("Mixin", (Holder,), {}),)),
            obj=obj,
            build=self.type_tree,
        )
        self.assertEqual(root.check_verbose({"m": obj}).verbose_code_parts, ["type(L['m']).__mro__[2] is Holder"])

    def test_memo_shadowed_class_attribute_replaced(self):
        cls = type("Shadowing", (Holder,), {"count": 1})
        obj = cls(flag=True, count=3)
        root, m = self.class_fact_tree(obj, lambda m: m.add_class_attr_shadowed_guard("count", ["L['m'].count shadows"], None))
        self.assertTrue(root.check({"m": obj}))
        self.assertIsNotNone(m.memo_log_size())
        cls.count = 2
        self.assertTrue(root.check({"m": obj}), "the instance still answers")
        cls.count = property(lambda self: 3)
        self.assertFalse(root.check({"m": obj}), "a data descriptor answers now, with an equal value even")

    def test_memo_shadowing_instance_attribute_deleted(self):
        cls = type("Shadowing", (Holder,), {"extra": 1})
        obj = cls(flag=True, count=3, extra=2)
        root, m = self.class_fact_tree(obj, lambda m: m.add_class_attr_shadowed_guard("extra", ["L['m'].extra shadows"], None))
        self.assertTrue(root.check({"m": obj}))
        self.assertTrue(root.check({"m": obj}))
        del obj.extra
        self.assertFalse(root.check({"m": obj}))

    def test_memo_ordered_dict_moved_to_end(self):
        d = collections.OrderedDict(a=1, b=2)
        o = Holder(d=d)
        root, outer = self.dict_order_tree(d)
        self.assertTrue(root.check({"o": o}))
        self.assertIsNotNone(outer.memo_log_size())
        self.assertTrue(root.check({"o": o}))
        d.move_to_end("a")
        self.assertFalse(root.check({"o": o}), "the dict's version is unchanged: the log re-runs the order check")
        d.move_to_end("b")
        self.assertTrue(root.check({"o": o}))

    def dict_order_tree(self, d: dict) -> tuple[guards.RootGuardManager, object]:
        root = guards.RootGuardManager()
        outer = root.framelocals_manager(("o", 0), "L['o']", Holder(d=d), PLAIN)
        dm = outer.getattr_manager("d", "L['o'].d", d, DICT)
        dm.get_key_manager(0, "key 0", "a", PLAIN).add_equals_match_guard("a", ["key 0 == 'a'"], None)
        dm.get_value_manager(0, "value 0", 1, PLAIN).add_equals_match_guard(1, ["value 0 == 1"], None)
        dm.get_value_manager(1, "value 1", 2, PLAIN).add_equals_match_guard(2, ["value 1 == 2"], None)
        root.finalize()
        return root, outer

    def test_memo_dict_key_order_changed(self):
        d = {"a": 1, "b": 2}
        o = Holder(d=d)
        root, outer = self.dict_order_tree(d)
        self.assertTrue(root.check({"o": o}))
        self.assertIsNotNone(outer.memo_log_size())
        del d["a"]
        d["a"] = 1  # same keys and values, new order
        self.assertFalse(root.check({"o": o}))

    def test_memo_dict_value_changed_in_ordered_dict(self):
        d = {"a": 1, "b": 2}
        o = Holder(d=d)
        root, _ = self.dict_order_tree(d)
        self.assertTrue(root.check({"o": o}))
        d["b"] = 5
        self.assertFalse(root.check({"o": o}))

    def test_memo_guard_added_after_finalize(self):
        obj = self.fresh()
        root, m = self.build(obj)
        self.assertTrue(root.check({"m": obj}))
        self.assertIsNotNone(m.memo_log_size())
        m.add_lambda_guard(lambda v: False, ["added later"], None)
        self.assertFalse(root.check({"m": obj}), "a log recorded before the addition must not skip it")

    def test_memo_module_buffers_dict_subclass_is_walked(self):
        class FreshEachRead(dict):
            def __getitem__(self, key):
                return torch.zeros(2) + len(key)

        mod = torch.nn.Module()
        mod.register_buffer("buf", torch.zeros(2))
        mod.__dict__["_buffers"] = FreshEachRead(buf=torch.zeros(2))
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", mod, PLAIN)
        buf = mod.buf
        b = m.nn_module_attr_manager("buf", "L['m'].buf", buf, PLAIN, mod)
        b.add_type_match_guard(id_type(buf), ["type(buf)"], None)
        b.add_tensor_match_guard(buf, [2], [1], "buf", ["check_tensor(buf)"], None, type(buf), torch._C._dispatch_keys(buf))
        root.finalize()
        for _ in range(4):
            # Each read is a new tensor: the log must walk the read, never
            # keep a pointer to a tensor that is already gone.
            self.assertTrue(root.check({"m": mod}))
        mod.__dict__["_buffers"] = FreshEachRead()
        self.assertFalse(root.check({"m": mod}))

    def test_memo_getattr_fallthrough_instance_attribute_set(self):
        class Answering:
            def __getattr__(self, name):
                return 1

        obj = Answering()
        holder = Holder(obj=obj)
        root = guards.RootGuardManager()
        h = root.framelocals_manager(("h", 0), "L['h']", holder, PLAIN)
        o = h.getattr_manager("obj", "L['h'].obj", obj, PLAIN)
        o.add_type_match_guard(id(Answering), ["type(o) is Answering"], None)
        o.add_getattr_fallthrough_guard("shift", ["o.shift from __getattr__"], None)
        root.finalize()
        self.assertIs(root.check({"h": holder}), True)
        self.assertIs(root.check({"h": holder}), True)
        self.assertIsNotNone(h.memo_log_size())
        obj.shift = 0
        self.assertIs(root.check({"h": holder}), False)

    def hooked_tree(self, lin: torch.nn.Module | None = None) -> tuple[torch.nn.Module, guards.RootGuardManager, object]:
        """A module holding ``lin`` (a Linear by default), with its hook dicts
        guarded empty; checked until its log is recorded."""
        outer = torch.nn.Module()
        outer.lin = lin if lin is not None else torch.nn.Linear(2, 2)
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", outer, PLAIN)
        m.add_type_match_guard(id_type(outer), ["type(L['m'])"], None)
        lin = outer.lin
        sub = m.nn_module_attr_manager("lin", "L['m'].lin", lin, PLAIN, outer)
        sub.add_type_match_guard(id_type(lin), ["type(L['m'].lin)"], None)
        for name in ("_forward_hooks", "_forward_pre_hooks"):
            sub.add_nn_module_hooks_empty_guard(name, [f"not L['m'].lin.{name}"], None)
        root.finalize()
        self.assertTrue(root.check({"m": outer}))
        self.assertTrue(root.check({"m": outer}))
        self.assertIsNotNone(m.memo_log_size(), "the hook guards are memoized")
        return outer, root, m

    def test_memo_hook_registered_on_submodule(self):
        outer, root, _ = self.hooked_tree()
        handle = outer.lin.register_forward_pre_hook(lambda mod, args: args)
        self.assertFalse(root.check({"m": outer}))
        handle.remove()
        self.assertTrue(root.check({"m": outer}))

    def test_memo_hook_dict_written_directly(self):
        outer, root, _ = self.hooked_tree()
        outer.lin._forward_hooks[7] = lambda mod, args, out: out
        self.assertFalse(root.check({"m": outer}))
        self.assertFalse(root.check_verbose({"m": outer}).result)

    def test_memo_hook_dict_replaced_by_another_empty_dict(self):
        outer, root, _ = self.hooked_tree()
        old = outer.lin._forward_hooks
        outer.lin.__dict__["_forward_hooks"] = collections.OrderedDict()
        self.assertTrue(root.check({"m": outer}))
        old[1] = print  # the log must no longer read the old dict
        self.assertTrue(root.check({"m": outer}))
        outer.lin._forward_hooks[1] = print
        self.assertFalse(root.check({"m": outer}))

    def test_memo_each_dict_of_a_run_is_checked(self):
        # The hook dicts of a module are consecutive dict checks in the log,
        # validated as one run: a change to any one of them must fail.
        outer, root, m = self.hooked_tree()
        kinds = m.memo_log_kinds()
        self.assertLess(m.memo_log_size(), sum(kinds.values()), f"no run was formed: {kinds}")
        for name in ("_forward_hooks", "_forward_pre_hooks"):
            hooks = getattr(outer.lin, name)
            hooks[0] = print
            self.assertFalse(root.check({"m": outer}), name)
            del hooks[0]
            self.assertTrue(root.check({"m": outer}), name)
        outer._buffers["lin"] = torch.zeros(1)  # read before _modules by nn.Module.__getattr__
        self.assertFalse(root.check({"m": outer}), "a module dict in a run")

    def test_memo_module_instance_dict_replaced(self):
        # A module's type, version tag and __dict__ slot are one step of the
        # log: a new __dict__ (equal contents) re-records, and the new log
        # reads the new dict, not the old one.
        outer, root, _ = self.hooked_tree()
        old = outer.lin.__dict__
        object.__setattr__(outer.lin, "__dict__", {**old, "_forward_hooks": collections.OrderedDict()})
        self.assertTrue(root.check({"m": outer}))
        old["_forward_hooks"][0] = print
        self.assertTrue(root.check({"m": outer}), "the replaced __dict__ no longer matters")
        outer.lin._forward_hooks[0] = print
        self.assertFalse(root.check({"m": outer}))

    def test_memo_module_instance_dict_replaced_by_one_with_a_hook(self):
        # Every dict the old log reads is unchanged: only the __dict__ slot
        # check can see the replacement.
        outer, root, _ = self.hooked_tree()
        hooked = {**outer.lin.__dict__, "_forward_hooks": collections.OrderedDict({0: print})}
        object.__setattr__(outer.lin, "__dict__", hooked)
        self.assertFalse(root.check({"m": outer}))

    def test_memo_module_class_swapped(self):
        class Other(torch.nn.Linear):
            pass

        outer, root, _ = self.hooked_tree()
        outer.lin.__class__ = Other
        self.assertFalse(root.check({"m": outer}))
        outer.lin.__class__ = torch.nn.Linear
        self.assertTrue(root.check({"m": outer}))

    def test_memo_class_property_shadows_hook_dict(self):
        # The module's type is checked (TYPE_MATCH) before its class-level
        # lookups are pinned (the version tag): the log merges both into one
        # step, which must still see the class change.
        class Hooked(torch.nn.Linear):
            pass

        outer, root, _ = self.hooked_tree(Hooked(2, 2))
        Hooked._forward_hooks = property(lambda self: {0: print})
        self.assertFalse(root.check({"m": outer}))
        del Hooked._forward_hooks
        self.assertTrue(root.check({"m": outer}))

    def no_hasattr_tree(self, outer: torch.nn.Module) -> guards.RootGuardManager:
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", outer, PLAIN)
        m.add_type_match_guard(id_type(outer), ["type(L['m'])"], None)
        m.add_no_hasattr_guard("scale", ["not hasattr(L['m'], 'scale')"], None)
        m.add_no_hasattr_guard("shift", ["not hasattr(L['m'], 'shift')"], None)
        root.finalize()
        self.assertTrue(root.check({"m": outer}))
        self.assertTrue(root.check({"m": outer}))
        self.assertIsNotNone(m.memo_log_size())
        self.assertNotIn("Leaf", m.memo_log_kinds(), "NO_HASATTR on a module is pinned, not re-run")
        return root

    def test_memo_no_hasattr_instance_attribute_set(self):
        outer = torch.nn.Module()
        root = self.no_hasattr_tree(outer)
        object.__setattr__(outer, "shift", 1.0)
        self.assertFalse(root.check({"m": outer}))

    def test_memo_no_hasattr_buffer_registered(self):
        outer = torch.nn.Module()
        root = self.no_hasattr_tree(outer)
        outer.register_buffer("scale", torch.ones(1))
        self.assertFalse(root.check({"m": outer}))

    def test_memo_no_hasattr_class_attribute_added(self):
        class Plain(torch.nn.Module):
            pass

        outer = Plain()
        root = self.no_hasattr_tree(outer)
        Plain.scale = 2.0
        self.assertFalse(root.check({"m": outer}))
        del Plain.scale
        self.assertTrue(root.check({"m": outer}))

    def typed_value_tree(self, holder: Holder, name: str) -> guards.RootGuardManager:
        root = guards.RootGuardManager()
        h = root.framelocals_manager(("h", 0), "L['h']", holder, PLAIN)
        h.add_type_match_guard(id_type(holder), ["type(L['h'])"], None)
        d = h.get_generic_dict_manager("L['h'].__dict__", holder.__dict__, PLAIN)
        value = holder.__dict__[name]
        v = d.dict_getitem_manager(name, f"L['h'].{name}", value, PLAIN)
        v.add_type_match_guard(id_type(value), [f"type(L['h'].{name})"], None)
        v.add_length_check_guard(len(value), [f"len(L['h'].{name})"], None)
        root.finalize()
        self.assertTrue(root.check({"h": holder}))
        self.assertTrue(root.check({"h": holder}))
        self.assertIsNotNone(h.memo_log_size())
        return root

    def test_memo_dict_replaced_by_dict_subclass(self):
        # type(value) is a builtin, immutable type: the log keeps no type step
        # for it, and the replacement is seen through the holder's __dict__.
        holder = Holder(table={"a": 1})
        root = self.typed_value_tree(holder, "table")
        holder.table = collections.OrderedDict(holder.table)
        self.assertFalse(root.check({"h": holder}))

    def test_memo_module_object_class_swapped(self):
        # ModuleType is immutable, but CPython lets a module object's
        # __class__ become a ModuleType subclass: that type check stays.
        class Traced(types.ModuleType):
            def __len__(self):
                return 0

        module = types.ModuleType("guarded")
        holder = Holder(mod=module)
        root = guards.RootGuardManager()
        h = root.framelocals_manager(("h", 0), "L['h']", holder, PLAIN)
        h.add_type_match_guard(id_type(holder), ["type(L['h'])"], None)
        d = h.get_generic_dict_manager("L['h'].__dict__", holder.__dict__, PLAIN)
        m = d.dict_getitem_manager("mod", "L['h'].mod", module, PLAIN)
        m.add_type_match_guard(id_type(module), ["type(L['h'].mod)"], None)
        root.finalize()
        self.assertTrue(root.check({"h": holder}))
        self.assertTrue(root.check({"h": holder}))
        self.assertIsNotNone(h.memo_log_size())
        module.__class__ = Traced
        self.assertFalse(root.check({"h": holder}))

    def test_memo_python_guard_runs_on_every_call(self):
        obj = self.fresh()
        root, m = self.build(obj)
        calls = []
        m.add_lambda_guard(lambda v: calls.append(1) or True, ["python"], None)
        root.finalize()
        for _ in range(3):
            self.assertTrue(root.check({"m": obj}))
        self.assertIsNotNone(m.memo_log_size())
        self.assertEqual(len(calls), 3, "a Python guard is re-run from the log, never assumed")

    def test_memo_unpinned_read_is_walked_from_the_log(self):
        class Slots:
            __slots__ = ("value",)

        obj = self.fresh()
        obj.slots = Slots()
        obj.slots.value = 1
        root, m = self.build(obj)
        d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
        s = d.dict_getitem_manager("slots", "L['m'].slots", obj.slots, PLAIN)
        # A slot is a data descriptor: nothing pins the read, so the log
        # walks this accessor again on every call.
        s.getattr_manager("value", "L['m'].slots.value", 1, PLAIN).add_equals_match_guard(1, ["value == 1"], None)
        root.finalize()
        self.assertTrue(root.check({"m": obj}))
        self.assertTrue(root.check({"m": obj}))
        self.assertIsNotNone(m.memo_log_size())
        obj.slots.value = 2
        self.assertFalse(root.check({"m": obj}))


    # A class attribute holding a plain value (class_value_answers): pinned
    # by the class's version tag and the instance __dict__ lacking the name.

    def class_value_tree(self, obj: object) -> tuple[guards.RootGuardManager, object]:
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['m'])"], None)
        m.getattr_manager("level", "L['m'].level", obj.level, PLAIN).add_equals_match_guard(
            obj.level, ["L['m'].level == 3"], None
        )
        root.finalize()
        return root, m

    def class_value_object(self) -> object:
        class Base:
            level = 3

        class Leaf(Base):
            pass

        return Leaf()

    def assert_class_value_pinned(self, obj: object, mutate, still_passes: bool) -> None:
        root, m = self.class_value_tree(obj)
        self.assertTrue(root.check({"m": obj}))
        self.assertNotIn("Walk", m.memo_log_kinds(), "the class answered: no getattr on each check")
        self.assertTrue(root.check({"m": obj}))
        mutate(obj)
        self.assertEqual(root.check({"m": obj}), still_passes)
        self.assertEqual(root.check_verbose({"m": obj}).result, still_passes, "fast and verbose checks agree")

    def test_memo_class_value_changed_on_the_base(self):
        self.assert_class_value_pinned(
            self.class_value_object(), lambda obj: setattr(type(obj).__mro__[1], "level", 4), False
        )

    def test_memo_class_value_overridden_on_the_class(self):
        self.assert_class_value_pinned(self.class_value_object(), lambda obj: setattr(type(obj), "level", 4), False)

    def test_memo_class_value_shadowed_on_the_instance(self):
        self.assert_class_value_pinned(self.class_value_object(), lambda obj: setattr(obj, "level", 4), False)

    def test_memo_class_value_shadowed_by_an_equal_value(self):
        self.assert_class_value_pinned(self.class_value_object(), lambda obj: setattr(obj, "level", 3), True)

    def test_memo_class_value_replaced_by_a_property(self):
        self.assert_class_value_pinned(
            self.class_value_object(), lambda obj: setattr(type(obj), "level", property(lambda self: 4)), False
        )

    def test_memo_class_value_object_class_assigned(self):
        class Other:
            level = 4

        def assign(obj: object) -> None:
            obj.__class__ = Other

        self.assert_class_value_pinned(self.class_value_object(), assign, False)

    def test_memo_class_value_of_a_slotted_object(self):
        class Slotted:
            __slots__ = ()
            level = 3

        self.assert_class_value_pinned(Slotted(), lambda obj: setattr(Slotted, "level", 4), False)

    def test_memo_class_value_behind_a_custom_getattribute_is_walked(self):
        class Hooked:
            level = 3

            def __getattribute__(self, name):
                return object.__getattribute__(self, name)

        obj = Hooked()
        root, m = self.class_value_tree(obj)
        self.assertTrue(root.check({"m": obj}))
        self.assertIn("Walk", m.memo_log_kinds())

    def test_memo_class_value_whose_type_may_gain_get_is_walked(self):
        class Value:
            def __eq__(self, other):
                return isinstance(other, Value)

            __hash__ = object.__hash__

        class Holds:
            level = Value()

        obj = Holds()
        root, m = self.class_value_tree(obj)
        self.assertTrue(root.check({"m": obj}))
        self.assertIn("Walk", m.memo_log_kinds(), "Value could be given __get__ later")
        Value.__get__ = lambda self, instance, owner: 4
        self.assertFalse(root.check({"m": obj}))

    # A list item (MemoRecorder::list_item): pinned by identity, proven by
    # a weak reference, since a list signals no change.

    def list_item_tree(self, obj: Holder) -> tuple[guards.RootGuardManager, object]:
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['m'])"], None)
        d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
        layers = d.dict_getitem_manager("layers", "L['m'].layers", obj.layers, PLAIN)
        layers.add_length_check_guard(2, ["len(L['m'].layers) == 2"], None)
        item = layers.list_getitem_manager(1, "L['m'].layers[1]", obj.layers[1], PLAIN)
        item.add_type_match_guard(id_type(obj.layers[1]), ["type(L['m'].layers[1])"], None)
        inner = item.get_generic_dict_manager("L['m'].layers[1].__dict__", obj.layers[1].__dict__, PLAIN)
        inner.dict_getitem_manager("flag", "L['m'].layers[1].flag", True, PLAIN).add_true_match_guard(
            ["L['m'].layers[1].flag is True"], None
        )
        root.finalize()
        return root, m

    def list_holder(self) -> Holder:
        return Holder(layers=[Holder(flag=True), Holder(flag=True)])

    def assert_list_item_pinned(self, mutate, still_passes: bool) -> None:
        obj = self.list_holder()
        root, m = self.list_item_tree(obj)
        self.assertTrue(root.check({"m": obj}))
        kinds = m.memo_log_kinds()
        self.assertEqual(kinds.get("ListItem"), 1)
        self.assertNotIn("Walk", kinds)
        self.assertTrue(root.check({"m": obj}))
        mutate(obj)
        self.assertEqual(root.check({"m": obj}), still_passes)
        self.assertEqual(root.check_verbose({"m": obj}).result, still_passes, "fast and verbose checks agree")

    def test_memo_list_item_attribute_changed(self):
        self.assert_list_item_pinned(lambda obj: setattr(obj.layers[1], "flag", False), False)

    def test_memo_list_item_replaced(self):
        self.assert_list_item_pinned(lambda obj: obj.layers.__setitem__(1, Holder(flag=False)), False)

    def test_memo_list_item_replaced_by_an_equal_object(self):
        # Another object that passes the same guards: the walk would pass.
        self.assert_list_item_pinned(lambda obj: obj.layers.__setitem__(1, Holder(flag=True)), True)

    def test_memo_list_items_swapped(self):
        def swap(obj: Holder) -> None:
            obj.layers[0].flag = False
            obj.layers.reverse()

        self.assert_list_item_pinned(swap, False)

    def test_memo_list_shortened(self):
        self.assert_list_item_pinned(lambda obj: obj.layers.pop(), False)

    def test_memo_list_item_replaced_by_one_at_the_recorded_address(self):
        # The recorded item dies and a new object may take its address; the
        # weak reference tells them apart, whatever the new object holds.
        def replace(obj: Holder) -> None:
            obj.layers[1] = None
            gc.collect()
            obj.layers[1] = Holder(flag=False)

        self.assert_list_item_pinned(replace, False)

    def test_memo_list_item_without_weak_references_is_walked(self):
        obj = Holder(layers=[0, Holder(flag=True)])
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['m'])"], None)
        d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
        layers = d.dict_getitem_manager("layers", "L['m'].layers", obj.layers, PLAIN)
        layers.list_getitem_manager(0, "L['m'].layers[0]", 0, PLAIN).add_equals_match_guard(0, ["layers[0] == 0"], None)
        root.finalize()
        self.assertTrue(root.check({"m": obj}))
        self.assertIn("Walk", m.memo_log_kinds(), "an int takes no weak reference")
        obj.layers[0] = 1
        self.assertFalse(root.check({"m": obj}))

    def test_memo_list_item_freed_by_a_python_guard_on_it(self):
        # A lambda guard on the item (run after the item was proven, before
        # the steps that read inside it) drops the item from the list, which
        # held its only reference: the log holds it while validating, as the
        # walk holds the value it checks, so the steps below still read a
        # live object (the sanitizer build checks that), and lets it go
        # when the check ends. That check's own answer may differ between
        # interpreters: on 3.11 the new item's dict moves the dict clock, so
        # the log gives up and walks the list as it now is.
        def replace_on_third_call(item: object) -> bool:
            calls.append(1)
            if len(calls) == 3:
                obj.layers[1] = Holder(flag=False)
            return True

        for verbose in (False, True):
            calls: list[int] = []
            obj = self.list_holder()
            root = guards.RootGuardManager()
            m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
            d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
            layers = d.dict_getitem_manager("layers", "L['m'].layers", obj.layers, PLAIN)
            item = layers.list_getitem_manager(1, "L['m'].layers[1]", obj.layers[1], PLAIN)
            item.add_lambda_guard(replace_on_third_call, ["replace"], None)
            inner = item.get_generic_dict_manager("L['m'].layers[1].__dict__", obj.layers[1].__dict__, PLAIN)
            inner.dict_getitem_manager("flag", "L['m'].layers[1].flag", True, PLAIN).add_true_match_guard(
                ["flag"], None
            )
            root.finalize()
            check = (lambda: root.check_verbose({"m": obj}).result) if verbose else (lambda: root.check({"m": obj}))
            self.assertTrue(check())
            self.assertTrue(check())
            if not verbose:
                self.assertEqual(m.memo_log_kinds().get("ListItem"), 1)
            old_item = weakref.ref(obj.layers[1])
            check()
            self.assertIsNone(old_item(), "the replaced item is not kept alive past the check")
            self.assertFalse(check())

    # An item of a tuple matched by address only: the function's
    # __defaults__ read from the log on `L['f']` as a held value
    # (MemoRecorder::held), or the tuple a memo is on when a guard that runs
    # Python keeps that read walked. An item whose subtree compares only its
    # address is a TupleItem step (MemoRecorder::tuple_item); an item of an
    # anchored tuple is anchored.

    def defaults_tree(self, fn, reader: str, third=None) -> tuple[guards.RootGuardManager, object, object]:
        """``fn.__defaults__`` (three items) read by ``reader``
        (``getitem_manager`` or ``tuple_getitem_manager``): item 0 is None,
        item 1 is True, item 2 is the object it was (``third`` replaces that
        guard). Returns the root, the manager of ``L['f']`` (whose log reads
        the tuple) and the tuple's manager."""
        root = guards.RootGuardManager()
        f = root.framelocals_manager(("f", 0), "L['f']", fn, PLAIN)
        defaults = f.func_defaults_manager("L['f'].__defaults__", fn.__defaults__, PLAIN)
        defaults.add_length_check_guard(3, ["len(L['f'].__defaults__) == 3"], None)
        read = getattr(defaults, reader)
        read(0, "L['f'].__defaults__[0]", None, PLAIN).add_none_match_guard(["__defaults__[0] is None"], None)
        read(1, "L['f'].__defaults__[1]", True, PLAIN).add_true_match_guard(["__defaults__[1] is True"], None)
        item = read(2, "L['f'].__defaults__[2]", fn.__defaults__[2], PLAIN)
        if third is None:
            item.add_id_match_guard(id(fn.__defaults__[2]), ["__defaults__[2] is the object"], None)
        else:
            third(item)
        root.finalize()
        return root, f, defaults

    READERS = ("getitem_manager", "tuple_getitem_manager")

    def assert_tuple_items_pinned(self, mutate, still_passes: bool) -> None:
        for reader in self.READERS:
            with self.subTest(reader=reader):
                third = Holder()

                def fn(a=None, b=True, c=third):
                    return a, b, c

                root, f, _ = self.defaults_tree(fn, reader)
                self.assertTrue(root.check({"f": fn}))
                kinds = f.memo_log_kinds()
                self.assertEqual(kinds.get("TupleItem"), 3)
                self.assertNotIn("Walk", kinds)
                self.assertTrue(root.check({"f": fn}))
                mutate(fn)
                self.assertEqual(root.check({"f": fn}), still_passes)
                self.assertEqual(root.check_verbose({"f": fn}).result, still_passes, "fast and verbose checks agree")

    def test_memo_tuple_item_defaults_replaced(self):
        self.assert_tuple_items_pinned(lambda fn: setattr(fn, "__defaults__", (None, False, fn.__defaults__[2])), False)

    def test_memo_tuple_item_third_default_replaced(self):
        self.assert_tuple_items_pinned(lambda fn: setattr(fn, "__defaults__", (None, True, Holder())), False)

    def test_memo_tuple_item_defaults_replaced_by_equal_items(self):
        # Another tuple holding the same objects: the walk would pass.
        self.assert_tuple_items_pinned(lambda fn: setattr(fn, "__defaults__", tuple(list(fn.__defaults__))), True)

    def test_memo_tuple_item_defaults_shortened(self):
        self.assert_tuple_items_pinned(lambda fn: setattr(fn, "__defaults__", fn.__defaults__[:2]), False)

    def test_memo_tuple_item_defaults_at_the_recorded_address(self):
        # The recorded tuple dies and a new tuple of its size takes its
        # address (CPython keeps freed tuples per size for reuse): the memo's
        # value then matches, and the TupleItem steps must read the new
        # tuple's items.
        reused: list[bool] = []

        def replace(fn) -> None:
            recorded, third = id(fn.__defaults__), fn.__defaults__[2]
            fn.__defaults__ = None
            made = [tuple([None, False, third]) for _ in range(64)]
            at_recorded = [t for t in made if id(t) == recorded]
            reused.append(bool(at_recorded))
            fn.__defaults__ = (at_recorded or made)[0]

        self.assert_tuple_items_pinned(replace, False)
        self.assertEqual(reused, [True] * len(self.READERS), "a new tuple took the recorded one's address")

    def test_memo_tuple_item_guarded_by_equality_is_held(self):
        # An equality guard on an immutable constant runs no Python: the item
        # is held (MemoRecorder::held) and the guard re-runs on whatever
        # object the slot holds.
        for reader in self.READERS:
            with self.subTest(reader=reader):

                def fn(a=None, b=True, c=2.5):
                    return a, b, c

                root, f, _ = self.defaults_tree(
                    fn, reader, third=lambda item: item.add_equals_match_guard(2.5, ["__defaults__[2] == 2.5"], None)
                )
                self.assertTrue(root.check({"f": fn}))
                kinds = f.memo_log_kinds()
                self.assertEqual((kinds.get("TupleItem"), kinds.get("Leaf"), kinds.get("Walk")), (3, 2, None), "the length check and the equality guard")
                self.assertTrue(root.check({"f": fn}))
                fn.__defaults__ = (None, True, float("2.5"))
                self.assertTrue(root.check({"f": fn}), "an equal float in a new tuple")
                fn.__defaults__ = (None, True, 3.5)
                self.assertFalse(root.check({"f": fn}))

    def test_memo_tuple_item_guarded_by_python_is_walked(self):
        # A guard that may run Python code on the item could make the tuple
        # drop what the log holds: that read is walked.
        for reader in self.READERS:
            with self.subTest(reader=reader):

                def fn(a=None, b=True, c=2.5):
                    return a, b, c

                root, f, defaults = self.defaults_tree(
                    fn, reader, third=lambda item: item.add_lambda_guard(lambda v: v == 2.5, ["__defaults__[2] == 2.5"], None)
                )
                self.assertTrue(root.check({"f": fn}))
                self.assertEqual(f.memo_log_kinds().get("Walk"), 1, "the log on L['f'] walks the tuple")
                kinds = defaults.memo_log_kinds()
                self.assertEqual((kinds.get("TupleItem"), kinds.get("Walk")), (2, 1))
                self.assertTrue(root.check({"f": fn}))
                fn.__defaults__ = (None, True, 3.5)
                self.assertFalse(root.check({"f": fn}))

    def anchored_pair_tree(self, obj: Holder, key: int) -> tuple[guards.RootGuardManager, object]:
        """``obj.pair[key].flag is True`` through the full item protocol,
        ``obj.pair`` an exact tuple in the instance __dict__."""
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['m'])"], None)
        d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
        pair = d.dict_getitem_manager("pair", "L['m'].pair", obj.pair, PLAIN)
        item = pair.getitem_manager(key, f"L['m'].pair[{key}]", obj.pair[key], PLAIN)
        inner = item.get_generic_dict_manager(f"L['m'].pair[{key}].__dict__", obj.pair[key].__dict__, PLAIN)
        inner.dict_getitem_manager("flag", f"L['m'].pair[{key}].flag", True, PLAIN).add_true_match_guard(["flag"], None)
        root.finalize()
        return root, m

    def test_memo_anchored_tuple_item_attribute_changed(self):
        obj = Holder(pair=(Holder(flag=True), 2))
        root, m = self.anchored_pair_tree(obj, 0)
        self.assertTrue(root.check({"m": obj}))
        kinds = m.memo_log_kinds()
        self.assertNotIn("Walk", kinds, "the tuple in a validated dict pins its items")
        self.assertNotIn("TupleItem", kinds)
        self.assertTrue(root.check({"m": obj}))
        obj.pair[0].flag = False
        self.assertFalse(root.check({"m": obj}))
        obj.pair[0].flag = True
        self.assertTrue(root.check({"m": obj}))
        obj.pair = (Holder(flag=False), 2)
        self.assertFalse(root.check({"m": obj}))

    def test_memo_tuple_item_negative_key_is_walked(self):
        # pair[-1] names another slot in a tuple of another length.
        obj = Holder(pair=(2, Holder(flag=True)))
        root, m = self.anchored_pair_tree(obj, -1)
        self.assertTrue(root.check({"m": obj}))
        self.assertIn("Walk", m.memo_log_kinds())
        obj.pair = (2, Holder(flag=True), Holder(flag=False))
        self.assertFalse(root.check({"m": obj}))

class MarkedParameter(torch.nn.Parameter):
    """A Parameter class of these tests' own: what they set on the class
    touches no other test."""


class OtherParameter(torch.nn.Parameter):
    pass


class FusedTensorStepTests(TestCase):
    """A Tensor step absorbs the steps logged right after it on the same
    tensor: its __dict__ slot (with its type's version tag where types are
    not watched) and a relation's store (SubtreeMemo::fuse_tensor_steps).
    Every mutation those steps noticed must still be noticed; each test is
    named after one."""

    def fresh(self) -> Holder:
        p = MarkedParameter(torch.randn(2, 2))
        p.__dict__  # a tensor makes its __dict__ on first use: before the log
        return Holder(p=p)

    def build(self, obj: Holder) -> tuple[guards.RootGuardManager, object]:
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", obj, PLAIN)
        m.add_type_match_guard(id_type(obj), ["type(L['m']) is Holder"], None)
        d = m.get_generic_dict_manager("L['m'].__dict__", obj.__dict__, PLAIN)
        p = d.dict_getitem_manager("p", "L['m'].p", obj.p, PLAIN)
        p.add_tensor_match_guard(
            obj.p, list(obj.p.shape), list(obj.p.stride()), "L['m'].p", ["check_tensor(L['m'].p)"], None,
            type(obj.p), torch._C._dispatch_keys(obj.p),
        )
        p.add_dimension_marking_guard({}, ["_dynamo_static_indices"], {}, ["no static marks on L['m'].p"], None)
        x = root.framelocals_manager(("x", 1), "L['x']", self.other, PLAIN)
        guards.install_no_tensor_aliasing_guard([p, x], ["L['m'].p", "L['x']"], ["no aliasing"], None)
        root.finalize()
        return root, m

    def setUp(self) -> None:
        super().setUp()
        self.other = torch.randn(2, 2)
        self.obj = self.fresh()
        self.root, self.m = self.build(self.obj)
        self.value = {"m": self.obj, "x": self.other}
        self.assertTrue(self.root.check(self.value))
        self.assertTrue(self.root.check(self.value), "from the log")

    def test_log_fuses_the_tensor_dict_slot_and_relation_store(self):
        p = self.obj.p
        steps = self.m.memo_log_steps()
        at = steps.index(("Tensor", id(p)))
        fused = steps[at + 1 : at + 5]
        self.assertIn(fused[0], [("Type", id(p)), ("TypeTag", id(p))])
        self.assertIn(fused[1][0], ["ObjectDictSlot", "ObjectDict"])
        if fused[1][0] == "ObjectDict":  # an unwatched dict: its version follows
            self.assertEqual(fused[2], ("Dict", id(p.__dict__)))
            fused = fused[:2] + fused[3:]
        self.assertEqual(fused[2], ("SlotAddress", id(p)))
        absorbed = 4 if steps[at + 2][0] == "ObjectDict" else 3
        self.assertLessEqual(self.m.memo_log_size(), len(steps) - absorbed, "the Tensor step absorbed the others")

    def test_parameter_dict_replaced_by_one_with_static_marks(self):
        original = self.obj.p.__dict__
        assert_fails_until_restored(
            self, self.root, self.value,
            lambda: setattr(self.obj.p, "__dict__", {"_dynamo_static_indices": {0}}),
            lambda: setattr(self.obj.p, "__dict__", original),
        )

    def test_parameter_dict_replaced_by_an_equal_one(self):
        self.obj.p.__dict__ = {}
        self.assertTrue(self.root.check(self.value))
        self.assertTrue(self.root.check(self.value))

    def test_parameter_marked_static(self):
        assert_fails_until_restored(
            self, self.root, self.value,
            lambda: torch._dynamo.mark_static(self.obj.p, 0),
            lambda: delattr(self.obj.p, "_dynamo_static_indices"),
        )

    def test_parameter_class_given_static_marks(self):
        assert_fails_until_restored(
            self, self.root, self.value,
            lambda: setattr(MarkedParameter, "_dynamo_static_indices", {0}),
            lambda: delattr(MarkedParameter, "_dynamo_static_indices"),
        )

    def test_parameter_class_assigned(self):
        assert_fails_until_restored(
            self, self.root, self.value,
            lambda: setattr(self.obj.p, "__class__", OtherParameter),
            lambda: setattr(self.obj.p, "__class__", MarkedParameter),
        )

    def test_parameter_passed_again_as_the_other_input(self):
        self.assertFalse(self.root.check({"m": self.obj, "x": self.obj.p}))
        self.assertTrue(self.root.check(self.value))
        self.assertFalse(self.root.check({"m": self.obj, "x": self.obj.p}), "and from the log again")

    def test_parameter_metadata_changed_in_place(self):
        assert_fails_until_restored(
            self, self.root, self.value,
            lambda: self.obj.p.requires_grad_(False),
            lambda: self.obj.p.requires_grad_(True),
        )


class RequiresGradChangeTests(TestCase):
    """A tensor's requires_grad comes from its autograd metadata: a flag,
    a grad_fn, and for a view's metadata also the base's requires_grad.
    Each test is named after a route by which it changes in place; the
    check must notice it through the tensor's TENSOR_MATCH alone and through
    a memo's Tensor step."""

    def assert_change_noticed(self, make, change) -> None:
        t = make()
        before = t.requires_grad
        root = guards.RootGuardManager()
        root.framelocals_manager(("x", 0), "L['x']", t, PLAIN).add_tensor_match_guard(
            t, list(t.shape), list(t.stride()), "L['x']", ["check_tensor(L['x'])"], None, type(t), torch._C._dispatch_keys(t)
        )
        self.assertTrue(root.check({"x": t}))
        change(t)
        self.assertNotEqual(t.requires_grad, before, "the change is one of requires_grad")
        self.assertFalse(root.check({"x": t}), "TENSOR_MATCH")

        obj = Holder(flag=True, count=3, t=make())
        root, m = SubtreeMemoTests.build(self, obj)
        self.assertTrue(root.check({"m": obj}))
        self.assertIsNotNone(m.memo_log_size(), "a passing check records a log")
        self.assertTrue(root.check({"m": obj}), "from the log")
        change(obj.t)
        self.assertFalse(root.check({"m": obj}), "the memo's Tensor step")
        self.assertFalse(root.check_verbose({"m": obj}).result)

    def test_requires_grad_set_on_tensor_without_metadata(self):
        self.assert_change_noticed(lambda: torch.randn(2, 2), lambda t: t.requires_grad_())

    def test_requires_grad_cleared_on_leaf(self):
        self.assert_change_noticed(lambda: torch.randn(2, 2, requires_grad=True), lambda t: t.requires_grad_(False))

    def test_requires_grad_set_on_leaf_that_has_metadata(self):
        # The metadata outlives requires_grad_(False): only its flag changes.
        self.assert_change_noticed(
            lambda: torch.randn(2, 2, requires_grad=True).requires_grad_(False), lambda t: t.requires_grad_()
        )

    def test_grad_fn_set_in_place_on_tensor_that_has_metadata(self):
        # The flag stays False; the in-place op gives the tensor a grad_fn.
        self.assert_change_noticed(
            lambda: torch.randn(2, 2, requires_grad=True).requires_grad_(False),
            lambda t: t.add_(torch.ones(2, 2, requires_grad=True)),
        )

    def test_grad_fn_set_in_place_on_tensor_without_metadata(self):
        self.assert_change_noticed(lambda: torch.randn(2, 2), lambda t: t.add_(torch.ones(2, 2, requires_grad=True)))

    def test_grad_fn_cleared_by_detach_in_place(self):
        # A non-leaf requires grad through its grad_fn alone.
        self.assert_change_noticed(lambda: torch.randn(2, 2, requires_grad=True) * 2, lambda t: t.detach_())

    def test_view_whose_base_starts_requiring_grad(self):
        # A view's metadata (a subclass) consults its base: torch's call.
        self.assert_change_noticed(lambda: torch.randn(4, 2)[:2], lambda t: t._base.requires_grad_())


class HeldReadTests(TestCase):
    """Reads of a function's fields, a cell's contents and tuple items below
    them, recorded as field and item steps on held values
    (MemoRecorder::held) instead of walks: each mutation the walk notices
    must still fail the check, and the fast and verbose checks agree."""

    @staticmethod
    def closure_over(inner):
        """A function whose one cell holds ``inner``, and a setter of that cell."""

        def outer():
            return inner

        def rebind(value) -> None:
            nonlocal inner
            inner = value

        return outer, rebind

    @staticmethod
    def inner_function():
        def inner(scale=1, name="x"):
            return scale, name

        # Its own tuple, not the code's constant one: replaced, it is freed.
        inner.__defaults__ = tuple([1, "x"])
        return inner

    @staticmethod
    def cell_function_tree(outer) -> tuple[guards.RootGuardManager, object, object]:
        """The root, the manager of ``L['f']`` and that of the function in
        its first cell (``G``), each with a type guard."""
        inner = outer.__closure__[0].cell_contents
        root = guards.RootGuardManager()
        f = root.framelocals_manager(("f", 0), "L['f']", outer, PLAIN)
        f.add_type_match_guard(id_type(outer), ["type(L['f'])"], None)
        cell = f.closure_manager("L['f'].__closure__", outer.__closure__, PLAIN).tuple_getitem_manager(
            0, "L['f'].__closure__[0]", outer.__closure__[0], PLAIN
        )
        fn = cell.getattr_manager("cell_contents", "G", inner, PLAIN)
        fn.add_type_match_guard(id_type(inner), ["type(G)"], None)
        return root, f, fn

    def closure_tree(self, outer) -> tuple[guards.RootGuardManager, object]:
        """On ``L['f']``: its cell's function has the recorded code, its
        __defaults__ are a tuple (1, 'x') and its __name__ is 'inner'."""
        inner = outer.__closure__[0].cell_contents
        root, f, fn = self.cell_function_tree(outer)
        fn.code_manager("G.__code__", inner.__code__, PLAIN).add_id_match_guard(id(inner.__code__), ["G.__code__"], None)
        defaults = fn.func_defaults_manager("G.__defaults__", inner.__defaults__, PLAIN)
        defaults.add_type_match_guard(id_type(inner.__defaults__), ["type(G.__defaults__)"], None)
        defaults.add_length_check_guard(2, ["len(G.__defaults__) == 2"], None)
        defaults.tuple_getitem_manager(0, "G.__defaults__[0]", 1, PLAIN).add_equals_match_guard(1, ["G.__defaults__[0] == 1"], None)
        defaults.tuple_getitem_manager(1, "G.__defaults__[1]", "x", PLAIN).add_equals_match_guard("x", ["G.__defaults__[1] == 'x'"], None)
        fn.getattr_manager("__name__", "G.__name__", "inner", PLAIN).add_equals_match_guard("inner", ["G.__name__ == 'inner'"], None)
        root.finalize()
        return root, f

    def assert_held(self, mutate, still_passes: bool) -> None:
        outer, rebind = self.closure_over(self.inner_function())
        root, f = self.closure_tree(outer)
        self.assertTrue(root.check({"f": outer}))
        kinds = f.memo_log_kinds()
        self.assertNotIn("Walk", kinds, "every read of the chain is a field or item step")
        self.assertEqual((kinds.get("FieldIdentity"), kinds.get("TupleItem")), (5, 3))
        self.assertTrue(root.check({"f": outer}))
        mutate(outer, rebind)
        self.assertEqual(root.check({"f": outer}), still_passes)
        self.assertEqual(root.check_verbose({"f": outer}).result, still_passes, "fast and verbose checks agree")

    def test_held_cell_contents_rebound_to_an_equal_function(self):
        # Another function of the same code, defaults and name: the walk passes too.
        self.assert_held(lambda outer, rebind: rebind(self.inner_function()), True)

    def test_held_cell_contents_rebound_to_other_code(self):
        def inner(scale=1, name="x"):
            return name

        self.assert_held(lambda outer, rebind: rebind(inner), False)

    def test_held_cell_contents_rebound_to_non_function(self):
        self.assert_held(lambda outer, rebind: rebind(3), False)

    def test_held_function_defaults_replaced(self):
        self.assert_held(lambda outer, rebind: setattr(outer.__closure__[0].cell_contents, "__defaults__", (2, "x")), False)

    def test_held_function_defaults_replaced_by_equal_values(self):
        # New objects, equal constants: the equality guards pass, as in the walk.
        self.assert_held(
            lambda outer, rebind: setattr(outer.__closure__[0].cell_contents, "__defaults__", (int("1"), "".join(["x"]))),
            True,
        )

    def test_held_function_defaults_lengthened(self):
        # Items 0 and 1 still match: only the length check fails.
        self.assert_held(lambda outer, rebind: setattr(outer.__closure__[0].cell_contents, "__defaults__", (1, "x", 2)), False)

    def test_held_function_defaults_removed(self):
        self.assert_held(lambda outer, rebind: setattr(outer.__closure__[0].cell_contents, "__defaults__", None), False)

    def test_held_function_code_replaced(self):
        def other(scale=1, name="x"):
            return name, scale

        self.assert_held(lambda outer, rebind: setattr(outer.__closure__[0].cell_contents, "__code__", other.__code__), False)

    def test_held_function_renamed(self):
        self.assert_held(lambda outer, rebind: setattr(outer.__closure__[0].cell_contents, "__name__", "renamed"), False)

    def test_held_defaults_at_the_recorded_address(self):
        # The held defaults tuple dies and a new tuple of its size takes its
        # address from CPython's free list: its items must be read again.
        reused: list[bool] = []

        def replace(outer, rebind) -> None:
            inner = outer.__closure__[0].cell_contents
            recorded = id(inner.__defaults__)
            inner.__defaults__ = None
            made = [tuple([2, "x"]) for _ in range(64)]
            at_recorded = [t for t in made if id(t) == recorded]
            reused.append(bool(at_recorded))
            inner.__defaults__ = (at_recorded or made)[0]

        self.assert_held(replace, False)
        self.assertEqual(reused, [True], "a new tuple took the recorded one's address")

    def test_held_values_are_not_kept_alive(self):
        outer, rebind = self.closure_over(self.inner_function())
        root, _ = self.closure_tree(outer)
        self.assertTrue(root.check({"f": outer}))
        self.assertTrue(root.check({"f": outer}))
        old = weakref.ref(outer.__closure__[0].cell_contents)
        rebind(None)
        gc.collect()
        self.assertIsNone(old(), "the log holds no reference to a held value")
        self.assertFalse(root.check({"f": outer}))

    def test_held_method_function_and_self(self):
        holder = Holder()
        method = types.MethodType(self.inner_function(), holder)
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", method, PLAIN)
        m.add_type_match_guard(id_type(method), ["type(L['m'])"], None)
        func = m.getattr_manager("__func__", "L['m'].__func__", method.__func__, PLAIN)
        func.add_type_match_guard(id_type(method.__func__), ["type(L['m'].__func__)"], None)
        func.getattr_manager("__name__", "N", "inner", PLAIN).add_equals_match_guard("inner", ["N == 'inner'"], None)
        m.getattr_manager("__self__", "L['m'].__self__", holder, PLAIN).add_id_match_guard(id(holder), ["self"], None)
        root.finalize()
        self.assertTrue(root.check({"m": method}))
        self.assertNotIn("Walk", m.memo_log_kinds())
        self.assertTrue(root.check({"m": method}))
        method.__func__.__name__ = "renamed"
        self.assertFalse(root.check({"m": method}))
        method.__func__.__name__ = "inner"
        self.assertTrue(root.check({"m": method}))
        other = types.MethodType(method.__func__, Holder())
        self.assertFalse(root.check({"m": other}))


def function_from_source(source: str) -> types.FunctionType:
    """A function whose code object only the function references (no
    enclosing code keeps it as a constant), so replacing its ``__code__``
    frees that code object."""
    namespace: dict = {}
    exec(compile(source, "<code-attribute-test>", "exec"), namespace)
    return namespace.pop("g")


class CodeAttributeReadTests(TestCase):
    """``fn.__code__.co_varnames`` and the code object's other fixed
    attributes: logged as one step proving by a weak reference that the code
    object is the one recorded (MemoRecorder::live_object), with the subtree
    below skipped, where that subtree decides by the value's contents. Each
    test is named after a change the check must still notice, or a tree
    that must keep its walk."""

    SOURCE = "def g(a, b):\n    return a\n"

    def tree(self, outer, varnames_guard=None) -> tuple[guards.RootGuardManager, object]:
        """On ``L['f']``: its cell's function's code has the recorded
        co_varnames (held reads down to the code, as Dynamo reaches a
        decorated forward's code)."""
        fn = outer.__closure__[0].cell_contents
        root, f, g = HeldReadTests.cell_function_tree(outer)
        code = g.code_manager("G.__code__", fn.__code__, PLAIN)
        varnames = code.getattr_manager("co_varnames", "G.__code__.co_varnames", fn.__code__.co_varnames, PLAIN)
        if varnames_guard is None:
            varnames.add_equals_match_guard(fn.__code__.co_varnames, ["G.__code__.co_varnames == ('a', 'b')"], None)
        else:
            varnames_guard(varnames, fn.__code__.co_varnames)
        root.finalize()
        return root, f

    def recorded(self, source: str = SOURCE):
        outer, rebind = HeldReadTests.closure_over(function_from_source(source))
        root, f = self.tree(outer)
        self.assertTrue(root.check({"f": outer}))
        kinds = f.memo_log_kinds()
        self.assertEqual(kinds.get("LiveObject"), 1, kinds)
        self.assertNotIn("Walk", kinds, "the chain is held down to the code object")
        self.assertTrue(root.check({"f": outer}), "from the log")
        return root, outer

    def test_code_replaced_by_code_with_other_varnames(self):
        root, outer = self.recorded()
        outer.__closure__[0].cell_contents.__code__ = function_from_source("def g(x, y):\n    return x\n").__code__
        self.assertFalse(root.check({"f": outer}))
        self.assertFalse(root.check_verbose({"f": outer}).result)

    def test_code_replaced_by_code_with_same_varnames(self):
        # Another code object, equal co_varnames: the walk passes, and so does the check.
        root, outer = self.recorded()
        outer.__closure__[0].cell_contents.__code__ = function_from_source("def g(a, b):\n    return b\n").__code__
        self.assertTrue(root.check({"f": outer}))
        self.assertTrue(root.check_verbose({"f": outer}).result)

    def test_cell_rebound_to_function_with_other_varnames(self):
        root, outer = self.recorded()
        outer.__closure__[0].cell_contents = function_from_source("def g(x, y):\n    return x\n")
        self.assertFalse(root.check({"f": outer}))

    def test_code_freed_and_its_address_reused_by_other_varnames(self):
        # The recorded code object dies; code objects compiled after it
        # may take its address. The weak reference names none of them.
        root, outer = self.recorded()
        fn = outer.__closure__[0].cell_contents
        recorded = id(fn.__code__)
        dead = weakref.ref(fn.__code__)
        fn.__code__ = function_from_source("def g(p, q, r):\n    return p\n").__code__
        gc.collect()
        self.assertIsNone(dead(), "the log keeps no reference to the code object")
        made = [function_from_source("def g(x, y):\n    return x\n").__code__ for _ in range(64)]
        at_recorded = [c for c in made if id(c) == recorded]
        fn.__code__ = (at_recorded or made)[0]
        self.assertFalse(root.check({"f": outer}))
        self.assertFalse(root.check_verbose({"f": outer}).result)
        if os.environ.get("PYTHONMALLOC", "pymalloc").startswith("pymalloc"):
            # pymalloc hands the freed block to the next code object of its
            # size class (20 of 20 times on 3.11-3.13); the sanitizer run's
            # malloc quarantines freed blocks instead.
            self.assertTrue(at_recorded, "a new code object took the recorded one's address")

    def test_subtree_deciding_by_address_is_walked(self):
        # An ID_MATCH on the (freshly built, on 3.11) tuple decides by its
        # address, which no code object fixes: that read stays a walk.
        outer, _ = HeldReadTests.closure_over(function_from_source(self.SOURCE))
        root, f = self.tree(outer, lambda m, value: m.add_id_match_guard(id(value), ["id(co_varnames)"], None))
        root.check({"f": outer})
        self.assertNotIn("LiveObject", f.memo_log_kinds())

    def test_attribute_named_like_a_code_attribute_on_another_object(self):
        # Only an exact code object's attribute is fixed by it.
        holder = Holder(co_varnames=("a", "b"))
        root = guards.RootGuardManager()
        h = root.framelocals_manager(("h", 0), "L['h']", holder, PLAIN)
        h.add_type_match_guard(id_type(holder), ["type(L['h'])"], None)
        h.getattr_manager("co_varnames", "L['h'].co_varnames", holder.co_varnames, PLAIN).add_equals_match_guard(
            ("a", "b"), ["L['h'].co_varnames == ('a', 'b')"], None
        )
        root.finalize()
        self.assertTrue(root.check({"h": holder}))
        self.assertTrue(root.check({"h": holder}))
        self.assertNotIn("LiveObject", h.memo_log_kinds())
        holder.co_varnames = ("x", "y")
        self.assertFalse(root.check({"h": holder}))


class HeldWrapperReadTests(TestCase):
    """``prop.fget`` of an exact property and ``cm.__func__`` of an exact
    classmethod, read from their slots and held: the function below is
    re-checked on every call, and re-initializing the wrapper in place
    (which no class tag sees) fails the check."""

    @staticmethod
    def getter(obj=None):
        return obj

    def wrapper_tree(self, wrapper, attr: str) -> tuple[guards.RootGuardManager, object]:
        fn = getattr(wrapper, attr)
        root = guards.RootGuardManager()
        w = root.framelocals_manager(("w", 0), "L['w']", wrapper, PLAIN)
        w.add_type_match_guard(id_type(wrapper), ["type(L['w'])"], None)
        g = w.getattr_manager(attr, f"L['w'].{attr}", fn, PLAIN)
        g.add_type_match_guard(id_type(fn), ["type(G)"], None)
        g.code_manager("G.__code__", fn.__code__, PLAIN).add_id_match_guard(id(fn.__code__), ["G.__code__"], None)
        g.getattr_manager("__name__", "G.__name__", fn.__name__, PLAIN).add_equals_match_guard(
            fn.__name__, ["G.__name__"], None
        )
        root.finalize()
        return root, w

    def wrappers(self):
        yield "property", property(self.getter), "fget"
        yield "classmethod", classmethod(self.getter), "__func__"

    def test_held_wrapper_reinitialized(self):
        def other(obj=None):
            return None

        for kind, wrapper, attr in self.wrappers():
            with self.subTest(kind=kind):
                root, w = self.wrapper_tree(wrapper, attr)
                self.assertTrue(root.check({"w": wrapper}))
                self.assertNotIn("Walk", w.memo_log_kinds())
                self.assertTrue(root.check({"w": wrapper}))
                wrapper.__init__(other)
                self.assertFalse(root.check({"w": wrapper}))
                self.assertFalse(root.check_verbose({"w": wrapper}).result)

    def test_held_wrapped_function_code_replaced(self):
        def other(obj=None):
            return None

        for kind, wrapper, attr in self.wrappers():
            with self.subTest(kind=kind):
                fn = types.FunctionType(self.getter.__code__, globals(), "getter")
                wrapper.__init__(fn)
                root, _ = self.wrapper_tree(wrapper, attr)
                self.assertTrue(root.check({"w": wrapper}))
                self.assertTrue(root.check({"w": wrapper}))
                fn.__code__ = other.__code__
                self.assertFalse(root.check({"w": wrapper}))

    def test_held_wrapper_subclass_reads_generically(self):
        class Tracing(property):
            reads = 0

            def __getattribute__(self, name):
                if name == "fget":
                    Tracing.reads += 1
                return super().__getattribute__(name)

        wrapper = Tracing(self.getter)
        root, w = self.wrapper_tree(wrapper, "fget")
        self.assertTrue(root.check({"w": wrapper}))
        self.assertTrue(root.check({"w": wrapper}))
        before = Tracing.reads
        self.assertTrue(root.check({"w": wrapper}))
        self.assertEqual(Tracing.reads, before + 1, "a subclass's own lookup runs on every check")


class ClassAttributeReadTests(TestCase):
    """A class's own attributes read through type's lookup (``cls.flag``, a
    method, an enum member, ``cls.__name__``), pinned by a watch on the class
    (3.12 on) or a ClassTag step comparing its version tag (3.11, which has
    no type watchers), and its metaclass's tag, instead of a getattr on
    every check; and ``obj.__class__`` through object's getset, pinned as
    ``type(obj)``. Every change that makes getattr answer otherwise fails
    the check."""

    def class_tree(self, cls: type, names: list[str]) -> tuple[guards.RootGuardManager, Any]:
        root = guards.RootGuardManager()
        c = root.framelocals_manager(("c", 0), "L['c']", cls, PLAIN)
        c.add_id_match_guard(id(cls), ["L['c']"], None)
        for name in names:
            value = getattr(cls, name)
            m = c.getattr_manager(name, f"L['c'].{name}", value, PLAIN)
            if isinstance(value, str):
                m.add_equals_match_guard(value, [f"L['c'].{name} == {value!r}"], None)
            else:
                m.add_id_match_guard(id(value), [f"L['c'].{name}"], None)
        root.finalize()
        return root, c

    @staticmethod
    def guard_name(cls_mgr: Any, source: str, name: str) -> None:
        cls_mgr.getattr_manager("__name__", f"{source}.__name__", name, PLAIN).add_equals_match_guard(
            name, [f"{source}.__name__ == {name!r}"], None
        )

    def finalized_and_passing(self, root: Any, value: dict) -> None:
        root.finalize()
        self.assertTrue(root.check(value))
        self.assertTrue(root.check(value))  # validates the log the first check recorded

    def assert_not_walked(self, mgr: Any, class_state: bool = True) -> None:
        self.assertTrue(mgr.is_memoized())
        kinds = mgr.memo_log_kinds()
        self.assertNotIn("Walk", kinds)
        if class_state:
            # Without type watchers the class's own tag is a step of the log.
            self.assertEqual("ClassTag" in kinds, not guards.watchers()["type_watcher"], kinds)

    def fails_until_restored(self, root: Any, value: dict, mutate, restore) -> None:
        assert_fails_until_restored(self, root, value, mutate, restore)

    def test_class_value_shadowed_along_the_mro(self):
        class Base:
            flag = False

        class Mid(Base):
            pass

        class Leaf(Mid):
            label = "x"

            def method(self):
                return 1

        def other(self):
            return 2

        root, c = self.class_tree(Leaf, ["flag", "method", "label"])
        value = {"c": Leaf}
        self.assertTrue(root.check(value))
        self.assertTrue(root.check(value))
        self.assert_not_walked(c)
        self.fails_until_restored(root, value, lambda: setattr(Leaf, "flag", True), lambda: delattr(Leaf, "flag"))
        self.fails_until_restored(root, value, lambda: setattr(Mid, "flag", True), lambda: delattr(Mid, "flag"))
        self.fails_until_restored(root, value, lambda: setattr(Base, "flag", True), lambda: setattr(Base, "flag", False))
        method = Leaf.method
        self.fails_until_restored(root, value, lambda: setattr(Leaf, "method", other), lambda: setattr(Leaf, "method", method))
        self.fails_until_restored(root, value, lambda: setattr(Leaf, "label", "y"), lambda: setattr(Leaf, "label", "x"))
        # The same objects by another route: getattr answers alike.
        Mid.flag = False
        self.assertTrue(root.check(value))
        del Mid.flag
        self.assertTrue(root.check(value))

    def test_class_name_and_qualname_assigned(self):
        class Named:
            pass

        name, qualname = Named.__name__, Named.__qualname__
        root, c = self.class_tree(Named, ["__name__", "__qualname__"])
        value = {"c": Named}
        self.assertTrue(root.check(value))
        self.assertTrue(root.check(value))
        self.assert_not_walked(c, class_state=False)  # type's fields, read from the class
        self.fails_until_restored(root, value, lambda: setattr(Named, "__name__", "Other"), lambda: setattr(Named, "__name__", name))
        self.fails_until_restored(
            root, value, lambda: setattr(Named, "__qualname__", "Other"), lambda: setattr(Named, "__qualname__", qualname)
        )

    def test_class_name_read_through_a_closure(self):
        # The class is a held value here (a closure's cell): its name field
        # is then read by a walk, with the same verdicts.
        def make(name):
            cls = type(name, (), {})

            def f():
                return cls

            return f, cls

        f, Inner = make("Inner")
        _, twin = make("Inner")
        root = guards.RootGuardManager()
        fn = root.framelocals_manager(("f", 0), "L['f']", f, PLAIN)
        cell = fn.closure_manager("L['f'].__closure__", f.__closure__, PLAIN).tuple_getitem_manager(
            0, "L['f'].__closure__[0]", f.__closure__[0], PLAIN
        )
        held = cell.getattr_manager("cell_contents", "C", Inner, PLAIN)
        held.add_type_match_guard(id_type(Inner), ["type(C)"], None)
        self.guard_name(held, "C", "Inner")
        value = {"f": f}
        self.finalized_and_passing(root, value)
        self.fails_until_restored(root, value, lambda: setattr(Inner, "__name__", "Other"), lambda: setattr(Inner, "__name__", "Inner"))
        f.__closure__[0].cell_contents = twin
        self.assertTrue(root.check(value))
        twin.__name__ = "Twin"
        self.assertFalse(root.check(value))

    def test_metaclass_descriptor_or_getattribute_added(self):
        class Meta(type):
            pass

        class Configured(metaclass=Meta):
            flag = False

        root, c = self.class_tree(Configured, ["flag"])
        value = {"c": Configured}
        self.assertTrue(root.check(value))
        self.assertTrue(root.check(value))
        self.assert_not_walked(c)
        self.fails_until_restored(
            root, value, lambda: setattr(Meta, "flag", property(lambda cls: True)), lambda: delattr(Meta, "flag")
        )

        def getattribute(cls, name):
            return True if name == "flag" else type.__getattribute__(cls, name)

        self.fails_until_restored(
            root, value, lambda: setattr(Meta, "__getattribute__", getattribute), lambda: delattr(Meta, "__getattribute__")
        )

    def test_enum_member_rebound_or_given_get(self):
        class Action(enum.Enum):
            NONE = 0
            RAISE = 1

        root, c = self.class_tree(Action, ["NONE", "RAISE"])
        value = {"c": Action}
        self.assertTrue(root.check(value))
        self.assertTrue(root.check(value))
        # 3.11's EnumType has its own __getattr__, which runs only after
        # type's lookup missed.
        self.assert_not_walked(c)
        member = Action.NONE
        self.fails_until_restored(
            root,
            value,
            lambda: type.__setattr__(Action, "NONE", Action.RAISE),
            lambda: type.__setattr__(Action, "NONE", member),
        )
        self.fails_until_restored(
            root, value, lambda: setattr(Action, "__get__", lambda self, obj, cls: 5), lambda: delattr(Action, "__get__")
        )

    def test_metaclass_getattr_given_getattribute_or_attribute_deleted(self):
        class Meta(type):
            def __getattr__(cls, name):
                return "fallback"

        class Base(metaclass=Meta):
            flag = "set"

        class Configured(Base):
            pass

        root, c = self.class_tree(Configured, ["flag"])
        value = {"c": Configured}
        self.assertTrue(root.check(value))
        self.assertTrue(root.check(value))
        self.assert_not_walked(c)
        # The class loses the attribute: getattr now answers from __getattr__.
        self.fails_until_restored(root, value, lambda: delattr(Base, "flag"), lambda: setattr(Base, "flag", "set"))

        def getattribute(cls, name):
            return "other" if name == "flag" else type.__getattribute__(cls, name)

        self.fails_until_restored(
            root, value, lambda: setattr(Meta, "__getattribute__", getattribute), lambda: delattr(Meta, "__getattribute__")
        )
        # Without its __getattr__ the metaclass answers alike.
        getattr_hook = Meta.__dict__["__getattr__"]
        del Meta.__getattr__
        self.assertTrue(root.check(value))
        Meta.__getattr__ = getattr_hook
        self.assertTrue(root.check(value))

    def test_metaclass_getattribute_consulting_outside_state_is_walked(self):
        # A metaclass's own __getattribute__ may answer from anything; beside
        # a __getattr__ it still runs first. The read stays a walk.
        overrides: dict[str, str] = {}

        class Meta(type):
            def __getattribute__(cls, name):
                return overrides[name] if name in overrides else type.__getattribute__(cls, name)

            def __getattr__(cls, name):
                return "fallback"

        class Configured(metaclass=Meta):
            flag = "set"

        root, c = self.class_tree(Configured, ["flag"])
        value = {"c": Configured}
        self.assertTrue(root.check(value))
        self.assertTrue(root.check(value))
        self.assertIn("Walk", c.memo_log_kinds())
        self.fails_until_restored(root, value, lambda: overrides.update(flag="other"), overrides.clear)

    def test_class_freed_and_its_address_reused_by_other_values(self):
        # The memo's value (the class) is matched by address. The recorded
        # class dies; classes made after it may take its address, with the
        # same metaclass, and have another tag (or, watched, its death was
        # an event).
        def recorded() -> tuple[guards.RootGuardManager, Any, int]:
            first = type("First", (), {"flag": "a"})
            root = guards.RootGuardManager()
            c = root.framelocals_manager(("c", 0), "L['c']", first, PLAIN)
            c.add_type_match_guard(id_type(first), ["type(L['c'])"], None)
            c.getattr_manager("flag", "L['c'].flag", "a", PLAIN).add_equals_match_guard("a", ["L['c'].flag == 'a'"], None)
            self.finalized_and_passing(root, {"c": first})
            self.assert_not_walked(c)
            return root, weakref.ref(first), id(first)

        root, dead, address = recorded()
        gc.collect()
        self.assertIsNone(dead(), "the log keeps no reference to the class")
        made = []
        for _ in range(256):
            made.append(type("Second", (), {"flag": "b"}))
            if id(made[-1]) == address:
                break
        self.assertFalse(root.check({"c": made[-1]}))
        self.assertFalse(root.check_verbose({"c": made[-1]}).result)
        if os.environ.get("PYTHONMALLOC", "pymalloc").startswith("pymalloc"):
            # The freed class's block goes to a later class (20 of 20 times
            # on 3.11 and 3.13); the sanitizer run's malloc quarantines it.
            self.assertEqual(id(made[-1]), address, "a new class took the recorded one's address")

    def test_class_of_object_reassigned_or_looked_up_otherwise(self):
        class A:
            pass

        class B:
            pass

        obj = A()
        root = guards.RootGuardManager()
        o = root.framelocals_manager(("o", 0), "L['o']", obj, PLAIN)
        cls = o.getattr_manager("__class__", "L['o'].__class__", A, PLAIN)
        cls.add_id_match_guard(id(A), ["L['o'].__class__"], None)
        self.guard_name(cls, "L['o'].__class__", "A")
        value = {"o": obj}
        self.finalized_and_passing(root, value)
        # type(obj) is pinned by its tag or watch on every interpreter.
        self.assertNotIn("Walk", o.memo_log_kinds())
        self.fails_until_restored(root, value, lambda: setattr(obj, "__class__", B), lambda: setattr(obj, "__class__", A))

        def getattribute(self, name):
            return B if name == "__class__" else object.__getattribute__(self, name)

        self.fails_until_restored(
            root, value, lambda: setattr(A, "__getattribute__", getattribute), lambda: delattr(A, "__getattribute__")
        )
        self.fails_until_restored(root, value, lambda: setattr(A, "__name__", "Z"), lambda: setattr(A, "__name__", "A"))

    def test_module_class_reassigned(self):
        class Scaled(torch.nn.Linear):
            pass

        mod = torch.nn.Linear(2, 2)
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", mod, PLAIN)
        m.nn_module_attr_manager("__class__", "L['m'].__class__", torch.nn.Linear, PLAIN, mod).add_id_match_guard(
            id(torch.nn.Linear), ["L['m'].__class__"], None
        )
        value = {"m": mod}
        self.finalized_and_passing(root, value)
        self.assertNotIn("Walk", m.memo_log_kinds())
        self.fails_until_restored(
            root, value, lambda: setattr(mod, "__class__", Scaled), lambda: setattr(mod, "__class__", torch.nn.Linear)
        )


class Settings:
    def __init__(self) -> None:
        self.x = 1


class InstanceDictReadTests(TestCase):
    """``obj.__dict__`` read through the generic lookup (a config's
    ``super().__getattribute__("__dict__")``) or getattr, pinned by the
    class's tag and the object's __dict__ slot where the class's
    ``__dict__`` is the getset CPython gives Python classes, instead of a
    lookup on every check. Every change that makes the read answer
    otherwise, or the dict hold other keys, fails the check."""

    def tree(self, obj: object, generic: bool = True) -> tuple[guards.RootGuardManager, Any]:
        root = guards.RootGuardManager()
        o = root.framelocals_manager(("o", 0), "L['o']", obj, PLAIN)
        read = o.generic_getattr_manager if generic else o.getattr_manager
        d = read("__dict__", "L['o'].__dict__", obj.__dict__, PLAIN)
        d.add_dict_contains_guard(True, "x", ["'x' in L['o'].__dict__"], None)
        d.add_dict_contains_guard(False, "y", ["'y' not in L['o'].__dict__"], None)
        root.finalize()
        value = {"o": obj}
        self.assertTrue(root.check(value))
        self.assertTrue(root.check(value))
        return root, o

    def pinned(self, generic: bool = True) -> tuple[guards.RootGuardManager, Settings, dict]:
        obj = Settings()
        root, o = self.tree(obj, generic)
        self.assertTrue(o.is_memoized())
        self.assertNotIn("Walk", o.memo_log_kinds())
        return root, obj, {"o": obj}

    def test_dict_replaced(self):
        root, obj, value = self.pinned()
        old = obj.__dict__
        assert_fails_until_restored(
            self, root, value, lambda: setattr(obj, "__dict__", {"x": 1, "y": 2}), lambda: setattr(obj, "__dict__", old)
        )

    def test_key_added_or_removed(self):
        for generic in (True, False):
            root, obj, value = self.pinned(generic)
            assert_fails_until_restored(self, root, value, lambda: setattr(obj, "y", 2), lambda: delattr(obj, "y"))
            assert_fails_until_restored(self, root, value, lambda: obj.__dict__.update(y=2), lambda: obj.__dict__.pop("y"))
            assert_fails_until_restored(self, root, value, lambda: delattr(obj, "x"), lambda: setattr(obj, "x", 1))

    def test_class_switched_to_one_whose_dict_is_a_property(self):
        class Shadowing(Settings):
            __dict__ = property(lambda self: {"y": 2})

        root, obj, value = self.pinned()
        self.assertEqual(object.__getattribute__(Shadowing(), "__dict__"), {"y": 2})
        assert_fails_until_restored(
            self, root, value, lambda: setattr(obj, "__class__", Shadowing), lambda: setattr(obj, "__class__", Settings)
        )

    def test_class_given_getattribute_answering_otherwise(self):
        # Through getattr, not the generic lookup: a __getattribute__ the
        # class gains answers first.
        root, obj, value = self.pinned(generic=False)

        def getattribute(self, name):
            return {"y": 2} if name == "__dict__" else object.__getattribute__(self, name)

        assert_fails_until_restored(
            self, root, value, lambda: setattr(Settings, "__getattribute__", getattribute), lambda: delattr(Settings, "__getattribute__")
        )

    def test_builtin_type_dict_replaced_or_key_added(self):
        # functools.partial keeps its own __dict__ getset (CPython's generic
        # one): a subclass's instances read it through that.
        class Partial(functools.partial):
            pass

        obj = Partial(print)
        obj.x = 1
        root, o = self.tree(obj)
        self.assertNotIn("Walk", o.memo_log_kinds())
        value = {"o": obj}
        old = obj.__dict__
        assert_fails_until_restored(
            self, root, value, lambda: setattr(obj, "__dict__", {"x": 1, "y": 2}), lambda: setattr(obj, "__dict__", old)
        )
        assert_fails_until_restored(self, root, value, lambda: setattr(obj, "y", 2), lambda: delattr(obj, "y"))

    def test_dict_property_consulting_outside_state_is_walked(self):
        answers = [{"x": 1}]

        class Computed:
            __dict__ = property(lambda self: answers[0])

        obj = Computed()
        root, o = self.tree(obj)
        self.assertIn("Walk", o.memo_log_kinds())
        assert_fails_until_restored(self, root, {"o": obj}, lambda: answers.__setitem__(0, {"y": 2}), lambda: answers.__setitem__(0, {"x": 1}))


class PythonStepTests(TestCase):
    """A Leaf or Walk step of a log that runs Python code (here a lambda
    guard) may change what the steps before it compared in ways no dict
    version or watch reports: an object's ``__dict__`` slot or ``__class__``
    reassigned, or an object freed that later steps read. After such a step
    the steps before it are checked again, so the log gives the walk's
    verdict (``check_verbose``) and reads nothing freed."""

    def two_reads(self, obj: object, side_effect, second: str = "y") -> tuple[guards.RootGuardManager, Any]:
        # obj.x with the lambda guard, then obj.<second> compared to its value.
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("o", 0), "L['o']", obj, PLAIN)
        m.getattr_manager("x", "L['o'].x", obj.x, PLAIN).add_lambda_guard(side_effect, ["side_effect"], None)
        expected = getattr(obj, second)
        read = m.getattr_manager(second, f"L['o'].{second}", expected, PLAIN)
        if isinstance(expected, tuple):
            read.add_length_check_guard(len(expected), [f"len(L['o'].{second})"], None)
        else:
            read.add_equals_match_guard(expected, [f"L['o'].{second} == {expected!r}"], None)
        value = {"o": obj}
        assert_logged_without_walks(self, root, m, value)
        return root, value

    @staticmethod
    def armed(action) -> tuple[list[bool], Any]:
        arm = [False]

        def side_effect(_: object) -> bool:
            if arm[0]:
                arm[0] = False
                action()
            return True

        return arm, side_effect

    def test_instance_dict_swapped_by_a_python_guard(self):
        class Obj:
            pass

        o = Obj()
        o.x, o.y = 1, 1
        other, kept = {"x": 1, "y": 2}, []  # made before the check: no dict is created during it
        arm, side_effect = self.armed(lambda: (kept.append(o.__dict__), setattr(o, "__dict__", other)))
        root, value = self.two_reads(o, side_effect)
        arm[0] = True
        self.assertFalse(root.check(value))
        o.__dict__ = kept[0]
        self.assertTrue(root.check(value))

    def test_class_swapped_by_a_python_guard(self):
        class A:
            x, y = 1, 1

        class B:
            x, y = 1, 2

        o = A()
        arm, side_effect = self.armed(lambda: setattr(o, "__class__", B))
        root, value = self.two_reads(o, side_effect)
        arm[0] = True
        self.assertFalse(root.check(value))
        o.__class__ = A
        self.assertTrue(root.check(value))

    def test_class_attribute_replaced_by_a_python_guard(self):
        # No __dict__: the log pins the class attributes by the class alone.
        class Slotted:
            __slots__ = ()
            x, y = 1, 1

        o = Slotted()
        arm, side_effect = self.armed(lambda: setattr(Slotted, "y", 2))
        root, value = self.two_reads(o, side_effect)
        arm[0] = True
        self.assertFalse(root.check(value))
        Slotted.y = 1
        self.assertTrue(root.check(value))

    def test_value_freed_by_a_python_guard(self):
        # The swap frees the old dict and the 25-item tuple it held, which
        # the next step would read (under the sanitizer: a report).
        class Obj:
            pass

        class Marker:
            pass

        o = Obj()
        o.x, o.t, o.marker = 1, tuple(range(100, 125)), Marker()
        other = {"x": 1, "t": tuple(range(3))}
        arm, side_effect = self.armed(lambda: setattr(o, "__dict__", other))
        root, value = self.two_reads(o, side_effect, second="t")
        old_dict_alive = weakref.ref(o.marker)
        arm[0] = True
        self.assertFalse(root.check(value))
        self.assertIsNone(old_dict_alive(), "the old dict died during the check")
        self.assertFalse(root.check_verbose(value).result)

    def test_device_and_dtype_equality_runs_no_python(self):
        # `==` on torch.device and torch.dtype runs no Python code: those
        # leaves are no Python steps; one on a class with its own __eq__ is.
        class Tagged:
            def __init__(self, tag: str) -> None:
                self.tag = tag

            def __eq__(self, other: object) -> bool:
                return isinstance(other, Tagged) and other.tag == self.tag

        class Obj:
            pass

        o = Obj()
        o.device, o.dtype, o.tagged = torch.device("cpu"), torch.float32, Tagged("a")
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("o", 0), "L['o']", o, PLAIN)
        for name in ("device", "dtype", "tagged"):
            expected = getattr(o, name)
            m.getattr_manager(name, f"L['o'].{name}", expected, PLAIN).add_equals_match_guard(expected, [name], None)
        root.finalize()
        value = {"o": o}
        self.assertTrue(root.check(value))
        self.assertTrue(root.check(value))
        self.assertEqual(m.memo_python_steps(), [(len(m.memo_log_steps()) - 1, "EQUALS_MATCH")])
        assert_fails_until_restored(
            self, root, value, lambda: setattr(o, "device", torch.device("meta")), lambda: setattr(o, "device", torch.device("cpu"))
        )
        assert_fails_until_restored(self, root, value, lambda: setattr(o, "dtype", torch.float64), lambda: setattr(o, "dtype", torch.float32))
        assert_fails_until_restored(self, root, value, lambda: setattr(o, "tagged", Tagged("b")), lambda: setattr(o, "tagged", Tagged("a")))

    def test_python_guard_without_effects_passes(self):
        class Obj:
            pass

        o = Obj()
        o.x, o.y = 1, 1
        _, side_effect = self.armed(lambda: None)
        root, value = self.two_reads(o, side_effect)
        for _ in range(3):
            self.assertTrue(root.check(value))
        o.y = 2
        self.assertFalse(root.check(value))


class GlobalStateTests(TestCase):
    """The native GLOBAL_STATE agrees with torch's GlobalStateGuard on every
    state change torch's guard notices."""

    def changes(self):
        yield "grad mode", lambda: torch.set_grad_enabled(not torch.is_grad_enabled())
        yield "autocast cpu", lambda: torch.autocast("cpu", dtype=torch.bfloat16)
        yield "autocast cpu dtype", lambda: torch.autocast("cpu", dtype=torch.float16)
        yield "torch function off", lambda: torch._C.DisableTorchFunction()
        yield "torch function subclasses off", lambda: torch._C.DisableTorchFunctionSubclass()
        yield "deterministic", lambda: DeterministicAlgorithms()
        yield "threads", lambda: NumThreads(torch.get_num_threads() + 1)
        yield "default dtype", lambda: DefaultDtype(torch.float64)
        yield "tf32 matmul", lambda: BackendFlag(torch.backends.cuda.matmul, "allow_tf32")
        yield "fp16 reduction", lambda: BackendFlag(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction")
        yield "bf16 reduction", lambda: BackendFlag(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction")

    def assert_agrees_with_torch_on_every_change(self, guard, initial):
        for name, change in self.changes():
            with self.subTest(name), change():
                self.assertEqual(guard(None), initial.check(), name)
                self.assertFalse(guard(None), name)
            self.assertTrue(guard(None), f"restored after {name}")

    def test_global_state_agrees_with_torch(self):
        initial = torch._C._dynamo.guards.GlobalStateGuard()
        root = guards.RootGuardManager()
        root.add_global_state_guard(initial, ["___check_global_state()"], None)
        (guard,) = root.get_leaf_guards()
        self.assertTrue(guard.is_native())
        self.assertTrue(guard(None))
        self.assert_agrees_with_torch_on_every_change(guard, initial)

    def test_global_state_built_inside_disable_torch_function_goes_native_at_first_pass(self):
        # torch builds a frame's guards inside DisableTorchFunction: the
        # state then differs from the initial one in that flag only.
        initial = torch._C._dynamo.guards.GlobalStateGuard()
        root = guards.RootGuardManager()
        with torch._C.DisableTorchFunction():
            root.add_global_state_guard(initial, ["___check_global_state()"], None)
            (guard,) = root.get_leaf_guards()
            self.assertFalse(guard.is_native())
            self.assertFalse(guard(None))  # torch's check, failing: still not native
            self.assertFalse(guard.is_native())
        self.assertTrue(guard(None))
        self.assertTrue(guard.is_native())
        self.assert_agrees_with_torch_on_every_change(guard, initial)

    def test_compiled_frame_global_state_is_native_after_one_call(self):
        seen = []
        previous = torch._dynamo.guards.guard_manager_testing_hook_fn
        torch._dynamo.guards.guard_manager_testing_hook_fn = lambda wrapper, f_locals, builder: seen.append(wrapper)
        torch._dynamo.reset()
        try:
            with dynamo_guards.enabled():
                compiled = torch.compile(lambda x: x + 1, backend="eager")
                compiled(torch.ones(2))
                compiled(torch.ones(2))
        finally:
            torch._dynamo.guards.guard_manager_testing_hook_fn = previous
        (wrapper,) = seen
        (guard,) = [g for g in wrapper.fork_root.get_leaf_guards() if g.kind() == "GLOBAL_STATE"]
        self.assertTrue(guard.is_native())
        with torch.set_grad_enabled(not torch.is_grad_enabled()):
            self.assertFalse(wrapper.fork_root.check({"x": torch.ones(2)}))

    def test_global_state_failure_text_is_torchs(self):
        root = guards.RootGuardManager()
        root.add_global_state_guard(torch._C._dynamo.guards.GlobalStateGuard(), ["___check_global_state()"], None)
        with torch.set_grad_enabled(not torch.is_grad_enabled()):
            (reason,) = root.check_verbose({}).verbose_code_parts
        self.assertTrue(reason.startswith("GLOBAL_STATE changed: grad_mode"), reason)

    def test_torch_function_mode_stack(self):
        class Mode(torch.overrides.TorchFunctionMode):
            pass

        guard = guards.TORCH_FUNCTION_MODE_STACK(ROOT, [], ["___check_torch_function_mode_stack()"])
        self.assertTrue(guard(None))
        with Mode():
            self.assertFalse(guard(None))
            inner = guards.TORCH_FUNCTION_MODE_STACK(ROOT, [Mode()], ["stack"])
            self.assertTrue(inner(None))
        self.assertTrue(guard(None))


class DeterministicAlgorithms:
    def __enter__(self):
        self.previous = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)

    def __exit__(self, *exc):
        torch.use_deterministic_algorithms(self.previous)


class NumThreads:
    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self):
        self.previous = torch.get_num_threads()
        torch.set_num_threads(self.n)

    def __exit__(self, *exc):
        torch.set_num_threads(self.previous)


class BackendFlag:
    """Flips a boolean flag of a torch.backends module for the block. The
    module's fp32_precision, which flipping allow_tf32 sets, is restored
    too (on torch 2.15 restoring allow_tf32 alone leaves 'ieee' where
    'none' was)."""

    def __init__(self, owner: Any, name: str) -> None:
        self.owner, self.name = owner, name

    def __enter__(self):
        self.previous = getattr(self.owner, self.name)
        self.previous_precision = getattr(self.owner, "fp32_precision", None)
        setattr(self.owner, self.name, not self.previous)

    def __exit__(self, *exc):
        setattr(self.owner, self.name, self.previous)
        if self.previous_precision is not None:
            self.owner.fp32_precision = self.previous_precision


class DefaultDtype:
    def __init__(self, dtype: torch.dtype) -> None:
        self.dtype = dtype

    def __enter__(self):
        self.previous = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)

    def __exit__(self, *exc):
        torch.set_default_dtype(self.previous)


class ModuleAttributePathTests(TestCase):
    """The tree shows, for each module attribute, where Python finds it and,
    for every fallback to getattr, why."""

    def path_of(self, module: torch.nn.Module, name: str) -> str:
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("m", 0), "L['m']", module, PLAIN)
        value = getattr(module, name)
        m.nn_module_attr_manager(name, f"L['m'].{name}", value, PLAIN, module)
        (accessor,) = m.get_accessors()
        self.assertIs(root.check({"m": module}), True)
        return accessor.repr()

    def test_paths_in_lookup_order(self):
        class Base(torch.nn.Module):
            def linear(self, x):
                return x

        class Mod(Base):
            @property
            def doubled(self):
                return 2

            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(2, 2)
                self.plain = 1
                self.register_buffer("buf", torch.zeros(1))

        mod = Mod()
        self.assertEqual(self.path_of(mod, "plain"), "NNModuleAttrGuardAccessor('plain' from __dict__)")
        self.assertEqual(self.path_of(mod, "buf"), "NNModuleAttrGuardAccessor('buf' from _buffers)")
        self.assertEqual(self.path_of(mod._modules["linear"], "weight"), "NNModuleAttrGuardAccessor('weight' from _parameters)")
        self.assertIn("'linear' from class attribute on", self.path_of(mod, "linear"))
        self.assertIn("'doubled' from getattr: property on class", self.path_of(mod, "doubled"))

    def test_custom_getattr_falls_back_with_reason(self):
        class Custom(torch.nn.Module):
            def __getattr__(self, name):
                return super().__getattr__(name)

        mod = Custom()
        mod.register_buffer("buf", torch.zeros(1))
        self.assertIn("from getattr: custom __getattr__ on", self.path_of(mod, "buf"))


class CoverageTableTests(TestCase):
    def test_readme_coverage_table_matches_engine(self):
        text = COVERAGE_DOC.read_text()
        section = text.split("# Engine coverage", 1)[1].split("\n## ", 1)[0]
        table = dict(re.findall(r"^\| `([A-Z_]+)` \| (native|python) \|", section, flags=re.M))
        self.assertEqual(table, guards.guard_kinds())


if __name__ == "__main__":
    run_tests()
