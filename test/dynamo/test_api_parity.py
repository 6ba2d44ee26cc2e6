"""dynamo_guards._C against the running torch's torch._C._dynamo.guards: the
introspected differences are exactly the list in docs/api-differences.md,
and calls written the way torch's own engine-level tests make them behave the
same on both modules."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import functools
import traceback
import types
import weakref
from pathlib import Path
from typing import Any

import torch
import torch._dynamo
from torch._dynamo.guards import GuardManagerType
from torch._dynamo.test_case import run_tests, TestCase

import dynamo_guards
from dynamo_guards import _C
from api_parity import ALLOWED, all_differences, readme_table

API_DIFFERENCES_DOC = Path(__file__).resolve().parents[2] / "docs" / "api-differences.md"
PLAIN = GuardManagerType.GUARD_MANAGER
DICT = GuardManagerType.DICT_GUARD_MANAGER


class DifferencesTests(TestCase):
    def test_every_difference_is_listed(self):
        differences = all_differences()
        unlisted = {k: v for k, v in differences.items() if k not in ALLOWED}
        self.assertEqual(unlisted, {}, "differences from torch docs/api-differences.md does not list")
        stale = sorted(set(ALLOWED) - set(differences))
        self.assertEqual(stale, [], "listed differences that no longer differ")

    def test_readme_table_is_the_allow_list(self):
        section = API_DIFFERENCES_DOC.read_text().split("### Differences the introspection finds", 1)[1].split("\n#", 1)[0]
        table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
        self.assertEqual(table, readme_table())


class Pair:
    def __init__(self, x: object, y: object) -> None:
        self.x = x
        self.y = y


class TorchStyleCalls:
    """Calls as torch's own engine-level tests make them, asserted the same
    way on whichever module ``guards`` is (torch's, then the fork's)."""

    guards: types.ModuleType

    def test_guard_debug_info_with_user_stack(self):
        stack = traceback.StackSummary.from_list([traceback.FrameSummary("a.py", 3, "f", line="y = x")])
        info = self.guards.GuardDebugInfo(False, ["failed"], 1, stack)
        self.assertFalse(info.result)
        self.assertEqual(info.num_guards_executed, 1)
        self.assertEqual(info.user_stack[0].filename, "a.py")
        self.assertIsNone(self.guards.GuardDebugInfo(True, ["passed"], 2).user_stack)

    def test_global_state_leaf(self):
        guard = self.guards.GLOBAL_STATE(self.guards.RootGuardManager(), ["global_state_check"], None)
        self.assertTrue(guard(None))
        with torch.set_grad_enabled(not torch.is_grad_enabled()):
            self.assertFalse(guard(None))
            self.assertExpectedInline(
                str(guard.check_verbose(None)),
                """\
GuardDebugInfo(
result=0,
verbose_code_parts=['GLOBAL_STATE changed: grad_mode '],
num_guards_executed=0,
user_stack=None)
""",
            )
        self.assertTrue(guard.check_verbose(None).result)

    def test_value_leaves(self):
        g, root = self.guards, self.guards.RootGuardManager()
        equals_5 = g.LAMBDA_GUARD(root, functools.partial(lambda x, expected: x == expected, expected=5), ["x == 5"], None)
        self.assertEqual([equals_5(5), equals_5(4), equals_5("foo")], [True, False, False])
        type_int = g.TYPE_MATCH(root, id(int), ["type(x) == int"], None)
        self.assertEqual([type_int(5), type_int("foo")], [True, False])
        obj = {"a": 1}
        same = g.ID_MATCH(root, id(obj), ["x is obj"], None)
        self.assertEqual([same(obj), same({"a": 1})], [True, False])
        for constant, other in (((1, 2, 3), (1, 2, 3, 4)), ([1, 2, 3], [1, 2]), (int, float)):
            guard = g.EQUALS_MATCH(root, constant, ["x == constant"], None)
            self.assertEqual([guard(constant), guard(other)], [True, False])
        self.assertTrue(g.DEFAULT_DEVICE(root, ["cpu device"], None)(1))
        length = g.LENGTH_CHECK(root, 3, ["len(x) == 3"], None)
        self.assertEqual([length([1, 2, 3]), length([])], [True, False])
        no_foo = g.NO_HASATTR(root, "foo", ["not hasattr(x, 'foo')"], None)
        self.assertEqual([no_foo(Pair(1, 2)), no_foo(types.SimpleNamespace(foo=1))], [True, False])
        d = {"a": 1, "b": 2}
        version = g.DICT_VERSION(root, d, ["x.version == d.version"], None)
        self.assertEqual([version(d), version(dict(d))], [True, False])
        d["a"] = 2
        self.assertFalse(version(d))
        has_a = g.DICT_CONTAINS(root, True, "a", ["'a' in x"], None)
        lacks_c = g.DICT_CONTAINS(root, False, "c", ["'c' not in x"], None)
        self.assertEqual([has_a(d), has_a({}), lacks_c(d), lacks_c({"c": 3})], [True, False, True, False])
        tensor = torch.rand(3)
        ref = weakref.ref(tensor)
        alive = g.NOT_NONE(root, ["ref() is not None"], None)
        self.assertTrue(alive(ref()))
        del tensor
        self.assertFalse(alive(ref()))

    def test_relational_leaves_are_shared(self):
        g, root = self.guards, self.guards.RootGuardManager()
        a = torch.randn(3)
        x = root.getattr_manager("x", "", a, PLAIN)
        y = root.getattr_manager("y", "", a, PLAIN)
        g.install_object_aliasing_guard(x, y, ["x is y"], None)
        (x_leaf,), (y_leaf,) = x.get_leaf_guards(), y.get_leaf_guards()
        self.assertIsInstance(x_leaf, g.OBJECT_ALIASING)
        self.assertIs(x_leaf, y_leaf)
        self.assertTrue(root.check(Pair(a, a)))
        self.assertFalse(root.check(Pair(a, torch.randn(3))))

        root = g.RootGuardManager()
        managers = [root.getattr_manager(name, "", a, PLAIN) for name in "xyz"]
        g.install_no_tensor_aliasing_guard(managers, ["x", "y", "z"], ["no_aliasing(x, y, z)"], None)
        leaves = [m.get_leaf_guards()[0] for m in managers]
        self.assertIsInstance(leaves[0], g.NO_TENSOR_ALIASING)
        self.assertTrue(leaves[0] is leaves[1] is leaves[2])
        triple = types.SimpleNamespace
        self.assertFalse(root.check(triple(x=a, y=a, z=a)))
        self.assertTrue(root.check(triple(x=a, y=torch.randn(3), z=torch.randn(3))))
        self.assertTrue(root.check_verbose(triple(x=a, y=torch.randn(3), z=torch.randn(3))).result)
        self.assertFalse(root.check_verbose(triple(x=a, y=torch.randn(3), z=a)).result)

    def test_tensor_match_explains_a_stride_mismatch(self):
        root = self.guards.RootGuardManager()
        x = torch.randn(4, 4)
        root.add_tensor_match_guard(
            x, list(x.size()), list(x.stride()), "x", ["check_tensor(x)"], None, type(x), torch._C._dispatch_keys(x)
        )
        self.assertTrue(root.check(torch.randn(4, 4)))
        self.assertTrue(root.check_verbose(torch.randn(4, 4)).result)
        transposed = torch.randn(4, 4).t_()
        self.assertFalse(root.check(transposed))
        self.assertIn("tensor 'x' stride mismatch", root.check_verbose(transposed).verbose_code_parts[0])

    def test_manager_leaves_with_str_code_parts(self):
        root = self.guards.RootGuardManager()
        root.add_type_match_guard(id(int), ["type(x) == int"], None)
        root.add_lambda_guard(lambda x: x >= 5, "x >= 5", None)
        root.add_lambda_guard(lambda x: x < 10, ["x < 10"], None)
        self.assertEqual(len(root.get_leaf_guards()), 3)
        self.assertEqual(root.get_leaf_guards()[1].verbose_code_parts(), list("x >= 5"))
        self.assertEqual([root.check(6), root.check(4), root.check("foo")], [True, False, False])

    def test_attribute_and_item_managers(self):
        root = self.guards.RootGuardManager()
        root.add_type_match_guard(id(Pair), ["type(x) == Pair"], None)
        root.getattr_manager("x", "x", 1, PLAIN).add_lambda_guard(lambda v: v == 1, ["x == 1"], None)
        root.getattr_manager("y", "y", 2, PLAIN).add_lambda_guard(lambda v: v == 2, ["y == 2"], None)
        self.assertEqual(len(root.get_accessors()), 2)
        self.assertIsInstance(root.get_accessors()[0], self.guards.GetAttrGuardAccessor)
        again = root.getattr_manager(attr="x", source="x", example_value=None, guard_manager_enum=PLAIN)
        self.assertEqual(len(again.get_leaf_guards()), 1)
        self.assertEqual([root.check(Pair(1, 2)), root.check(Pair(3, 4))], [True, False])

        root = self.guards.RootGuardManager()
        root.getitem_manager(0, "", 1, PLAIN).add_lambda_guard(lambda v: v == 1, ["x[0] == 1"], None)
        self.assertIsInstance(root.get_accessors()[0], self.guards.GetItemGuardAccessor)
        self.assertEqual([root.check([1, 2]), root.check([3, 4]), root.check("foo")], [True, False, False])

    def test_frame_locals_and_dict_items(self):
        for method, key_a, key_b in (("framelocals_manager", ("a", 0), ("b", 1)), ("dict_getitem_manager", "a", "b")):
            root = self.guards.RootGuardManager()
            getattr(root, method)(key_a, "", 1, PLAIN).add_equals_match_guard(1, ["a == 1"], None)
            getattr(root, method)(key_b, "", 2, PLAIN).add_equals_match_guard(2, ["b == 2"], None)
            self.assertEqual([root.check({"a": 1, "b": 2}), root.check({"a": 1, "b": 3})], [True, False])

    def test_globals_type_and_lambda_managers(self):
        scope = {"pair": Pair(torch.randn(2), 1)}
        root = self.guards.RootGuardManager()
        pair = root.globals_dict_manager(scope, "", None, PLAIN).getitem_manager("pair", "", scope["pair"], PLAIN)
        pair.add_lambda_guard(lambda p: isinstance(p.y, int), "global guard fail", None)
        self.assertTrue(root.check(None))
        scope["pair"].y = "foo"
        self.assertFalse(root.check(None))

        class A:
            a = 4

        class B(A):
            pass

        root = self.guards.RootGuardManager()
        mro = root.getitem_manager("foo", "", B(), PLAIN).type_manager("", B, PLAIN).getattr_manager(
            "__mro__", "", B.__mro__, PLAIN
        )
        self.assertIsInstance(root.get_child_managers()[0].get_accessors()[0], self.guards.TypeGuardAccessor)
        mro.add_length_check_guard(3, "len(type(foo).__mro__) == 3", None)
        mro.getitem_manager(1, "", A, PLAIN).getattr_manager("a", "", 4, PLAIN).add_lambda_guard(
            lambda v: v == 4, "a == 4", None
        )
        self.assertTrue(root.check({"foo": B()}))

        root = self.guards.RootGuardManager()
        root.lambda_manager(lambda x: x[2], "", None, PLAIN).add_lambda_guard(lambda v: v == 3, "x[2] == 3", None)
        self.assertTrue(root.check((1, 1, 3)))

        def raising(x):
            raise AssertionError("Test")

        root = self.guards.RootGuardManager()
        root.lambda_manager(raising, "", None, PLAIN)
        self.assertFalse(root.check(None))
        info = root.check_verbose(None)
        self.assertFalse(info.result)
        self.assertIn("Test", info.verbose_code_parts[0])

    def test_tuple_iterator_and_global_weakref(self):
        items = (1, 2, 3, 4, 5, 6)
        it = iter(items)
        next(it)
        root = self.guards.RootGuardManager()
        root.add_tuple_iterator_length_guard(5, id(type(iter(()))), ["len == 5"], None)
        root.tuple_iterator_getitem_manager(2, "", it, PLAIN).add_equals_match_guard(items[3], ["x == 4"], None)
        self.assertFalse(root.check(False))
        self.assertTrue(root.check(it))
        self.assertFalse(root.check(iter((1, 2))))

        tensor = torch.ones(1)
        scope = {"ref": weakref.ref(tensor)}
        root = self.guards.RootGuardManager()
        root.globals_dict_manager(scope, "", None, PLAIN).global_weakref_manager("ref", "", None, PLAIN).add_lambda_guard(
            lambda x: isinstance(x, torch.Tensor), "global weakref fail", None
        )
        self.assertTrue(root.check(None))
        del tensor
        self.assertFalse(root.check(None))

    def test_dict_guard_manager(self):
        root = self.guards.RootGuardManager()

        def nothing():
            pass

        f_locals = {"d": {"a": 1, nothing: {"z": 3}, 100: torch.randn(4)}}
        d = root.getitem_manager("d", "", f_locals["d"], DICT)
        self.assertIsInstance(d, self.guards.DictGuardManager)
        self.assertTrue(root.check(f_locals))
        self.assertFalse(root.check({"d": {"a": 1, "b": 2}}))
        d.get_key_manager(0, "", "a", PLAIN).add_equals_match_guard("a", ["key 0 == 'a'"], None)
        d.get_value_manager(0, "", 1, PLAIN).add_equals_match_guard(1, ["value 0 == 1"], None)
        d.get_key_manager(1, "", nothing, PLAIN).add_lambda_guard(lambda k: k is nothing, ["key 1 is nothing"], None)
        self.assertIsInstance(d.get_value_manager(1, "", f_locals["d"][nothing], DICT), self.guards.DictGuardManager)
        self.assertEqual(len(d.get_key_value_managers()), 2)
        self.assertTrue(root.check(f_locals))
        f_locals["d"]["a"] = 2
        self.assertFalse(root.check(f_locals))
        self.assertFalse(root.check_verbose(f_locals).result)
        f_locals["d"]["a"] = 1
        self.assertTrue(root.check(f_locals))
        f_locals["d"].pop(100)
        self.assertFalse(root.check(f_locals))

    def test_clone_keeps_relations_and_epilogue(self):
        g, root = self.guards, self.guards.RootGuardManager()
        p = root.dict_getitem_manager("p", "L['p']", 1, PLAIN)
        q = root.dict_getitem_manager("q", "L['q']", 1, PLAIN)
        g.install_object_aliasing_guard(p, q, ["p is q"], None)
        root.add_epilogue_lambda_guard(lambda f_locals: True, ["epilogue"], None)
        clone = root.clone_manager(lambda mgr: True)
        obj = object()
        self.assertTrue(clone.check({"p": obj, "q": obj}))
        self.assertFalse(clone.check({"p": obj, "q": object()}))
        self.assertEqual(len(clone.get_epilogue_lambda_guards()), 1)
        self.assertIs(clone.get_child_managers()[0].get_leaf_guards()[0], p.get_leaf_guards()[0])
        # A relation whose other manager was not kept is never complete.
        partial = root.clone_manager(lambda mgr: mgr.get_source() != "L['q']")
        self.assertTrue(partial.check({"p": obj, "q": object()}))


class TorchStyleCallsOnTorch(TorchStyleCalls, TestCase):
    guards = torch._C._dynamo.guards


class TorchStyleCallsOnFork(TorchStyleCalls, TestCase):
    guards = _C


class CompiledTreeTests(TestCase):
    """The testing-hook pattern of torch's own end-to-end suites, and the
    printed tree of a compiled frame, with the fork installed."""

    def setUp(self):
        super().setUp()
        torch._dynamo.reset()
        dynamo_guards.reset_fallback_counts()
        dynamo_guards.install()

    def tearDown(self):
        dynamo_guards.uninstall()
        torch._dynamo.reset()
        super().tearDown()

    def compile_with_hook(self, hook: Any, fn: Any, *args: Any) -> Any:
        previous = torch._dynamo.guards.guard_manager_testing_hook_fn
        torch._dynamo.guards.guard_manager_testing_hook_fn = hook
        try:
            return torch.compile(fn, backend="eager", fullgraph=True)(*args)
        finally:
            torch._dynamo.guards.guard_manager_testing_hook_fn = previous

    def test_cloned_root_prints_and_checks_as_the_original(self):
        hooked = []

        def hook(wrapper, f_locals, builder):
            cloned = wrapper.root.clone_manager(lambda mgr: True)
            cloned_wrapper = torch._dynamo.guards.GuardManagerWrapper(cloned)
            self.assertEqual(str(wrapper), str(cloned_wrapper))
            self.assertTrue(cloned.check(f_locals))
            self.assertTrue(wrapper.diff_guard_root.check(f_locals))
            # Without the guards on foo, the clone passes where the original fails.
            no_foo = wrapper.root.clone_manager(lambda mgr: "foo" not in mgr.get_source())
            f_locals["foo"] = [3, 4]
            self.assertFalse(wrapper.root.check(f_locals))
            self.assertTrue(no_foo.check(f_locals))
            f_locals["foo"] = [2, 3]
            hooked.append(wrapper)

        class Bar:
            x = 4
            y = torch.randn(4)

        def fn(x, foo, bar):
            return x + foo[0] + bar.x * bar.y

        self.compile_with_hook(hook, fn, torch.randn(4), [2, 3], Bar())
        self.assertEqual(len(hooked), 1)
        self.assertEqual(dynamo_guards.fallback_counts(), {})

    def test_tree_text_names_frame_locals_as_torch_does(self):
        def fn(x, y, z):
            return x + y + z[0]

        torch.compile(fn, backend="eager")(torch.ones(3), 2, {0: 1, 2: 3})
        (entry,) = torch._C._dynamo.eval_frame._debug_get_cache_entry_list(fn.__code__)
        text = str(entry.guard_manager)
        for index, name in enumerate("xyz"):
            self.assertIn(
                f"source=L['{name}'], accessed_by=FrameLocalsGuardAccessor(key='{name}', framelocals_idx={index})", text
            )

    def test_no_guard_left_leaves_the_torch_root_empty(self):
        def fn(x):
            return x * 2

        opt = torch.compile(fn, backend="eager", options={"guard_filter_fn": torch.compiler.skip_all_guards_unsafe})
        opt(torch.randn(3))
        (entry,) = torch._C._dynamo.eval_frame._debug_get_cache_entry_list(fn.__code__)
        root = entry.guard_manager.root
        self.assertEqual(torch._C._dynamo.guards.RootGuardManager.get_leaf_guards(root), [])
        self.assertEqual(root.get_leaf_guards(), [])
        self.assertEqual(root.get_accessors(), [])
        self.assertEqual(opt(torch.randn(5)).shape, (5,))  # no guard: the entry is reused
        self.assertEqual(len(torch._C._dynamo.eval_frame._debug_get_cache_entry_list(fn.__code__)), 1)

    def test_wrapper_root_answers_for_the_engine_tree(self):
        def fn(x, n):
            return x * n

        torch.compile(fn, backend="eager")(torch.randn(3), 2)
        (entry,) = torch._C._dynamo.eval_frame._debug_get_cache_entry_list(fn.__code__)
        wrapper = entry.guard_manager
        root = wrapper.root
        self.assertEqual(
            [m.get_source() for m in root.get_child_managers()],
            [m.get_source() for m in wrapper.fork_root.get_child_managers()],
        )
        self.assertEqual(len(root.get_leaf_guards()), len(wrapper.fork_root.get_leaf_guards()))
        self.assertTrue(root.check({"x": torch.randn(3), "n": 2}))
        failed = root.check_verbose({"x": torch.randn(3), "n": 3})
        self.assertIsInstance(failed, torch._C._dynamo.guards.GuardDebugInfo)
        self.assertFalse(failed.result)
        self.assertIn("L['n'] == 2", failed.verbose_code_parts[0])
        clone = root.clone_manager(lambda mgr: mgr.get_source() != "L['n']")
        self.assertIsInstance(clone, torch._C._dynamo.guards.RootGuardManager)
        self.assertTrue(clone.check({"x": torch.randn(3), "n": 3}))
        # torch's C++ takes the clone as its own root type.
        self.assertIsInstance(torch._C._dynamo.guards.profile_guard_manager(clone, {"x": torch.randn(3), "n": 3}, 1), float)


if __name__ == "__main__":
    run_tests()
