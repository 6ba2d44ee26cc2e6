"""Bad input to the engine's Python API: the caller gets a clear Python
exception at build time or a clean guard failure at check time, never a
crash and never an exception left set behind a returned value (CPython
turns that into a SystemError, so every plain ``check`` below would raise).

``DYNAMO_GUARDS_FUZZ_EXAMPLES`` raises the budget of the builder fuzz test
(see docs/testing.md, "Reliability")."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import gc
import os
import weakref
from typing import Any, Callable

import torch
from hypothesis import given, HealthCheck, settings, strategies as st
from torch._dynamo.guards import GuardManagerType
from torch._dynamo.test_case import run_tests, TestCase

from dynamo_guards import _C as guards

PLAIN = GuardManagerType.GUARD_MANAGER
DICT = GuardManagerType.DICT_GUARD_MANAGER
# 0: the suite's small budget, with a fixed seed so that CI is repeatable; a
# larger number draws fresh examples on every run.
FUZZ_EXAMPLES = int(os.environ.get("DYNAMO_GUARDS_FUZZ_EXAMPLES", "0"))
# Exceptions a builder call may raise on bad arguments. Anything else (or a
# SystemError, which means an error was left set) fails the fuzz test.
CLEAR_ERRORS = (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError, OverflowError)


class Boom(Exception):
    pass


class RaisingEq:
    """Hashes like the int 1 so a dict lookup reaches __eq__, which raises."""

    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        raise Boom("__eq__")


class RaisingHash:
    def __hash__(self) -> int:
        raise Boom("__hash__")


class RaisingGetattr:
    def __getattr__(self, name: str) -> Any:
        raise Boom(name)


class RaisingProperty:
    @property
    def value(self) -> Any:
        raise Boom("property")


class ListAsDict:
    """Its class-level ``__dict__`` is a property returning a list; the
    instance's real dict slot is untouched."""

    @property
    def __dict__(self) -> Any:  # type: ignore[override]
        return ["not", "a", "dict"]


class Slotted:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 1


class Holder:
    def __init__(self, **attrs: object) -> None:
        self.__dict__.update(attrs)


class Other:
    pass


def root_with(name: str, value: object, build: Callable[[Any], None], kind: Any = PLAIN) -> Any:
    root = guards.RootGuardManager()
    build(root.framelocals_manager((name, 0), f"L['{name}']", value, kind))
    return root


class BuilderArgumentTests(TestCase):
    def test_missing_arguments(self):
        root = guards.RootGuardManager()
        with self.assertRaises(TypeError):
            root.getattr_manager("a")
        with self.assertRaises(TypeError):
            root.add_equals_match_guard(1)
        with self.assertRaises(TypeError):
            guards.TYPE_MATCH()

    def test_wrong_types(self):
        root = guards.RootGuardManager()
        with self.assertRaises(TypeError):
            root.add_length_check_guard("three", ["len(x) == 3"], None)
        with self.assertRaises(TypeError):
            root.add_dict_contains_guard("yes", "k", ["'k' in x"], None)
        with self.assertRaises(TypeError):
            root.framelocals_manager(("x", 0), 5, 1, PLAIN)
        with self.assertRaises(TypeError):
            root.add_tensor_match_guard(5, [1], [1], "x", ["x"], None, type(5), None)
        with self.assertRaises(TypeError):
            root.add_type_match_guard(id(int), None, None)  # verbose_code_parts not iterable
        with self.assertRaises(TypeError):
            guards.install_object_aliasing_guard(root, "not a manager", ["x is y"], None)

    def test_unhashable_keys(self):
        root = guards.RootGuardManager()
        for build in (
            lambda: root.dict_getitem_manager({}, "x[{}]", 1, PLAIN),
            lambda: root.add_dict_contains_guard(True, [1], ["[1] in x"], None),
            lambda: root.add_set_contains_guard(True, {1}, ["{1} in x"], None),
        ):
            with self.assertRaisesRegex(TypeError, "hashable"):
                build()

    def test_key_whose_hash_raises_at_build(self):
        root = guards.RootGuardManager()
        with self.assertRaises((Boom, TypeError)):
            root.dict_getitem_manager(RaisingHash(), "x[k]", 1, PLAIN)

    def test_verbose_code_parts_of_wrong_type(self):
        # As in torch: constructors take a list, builder methods any iterable.
        root = guards.RootGuardManager()
        for parts in ("x == 1", None, 5):
            with self.assertRaises(TypeError):
                guards.EQUALS_MATCH(root, 1, parts, None)
        for parts in (None, 5):
            with self.assertRaisesRegex(TypeError, "verbose_code_parts must be an iterable"):
                root.add_equals_match_guard(1, parts, None)

    def test_dimension_marking_with_bad_contents(self):
        root = guards.RootGuardManager()
        with self.assertRaises(TypeError):
            root.add_dimension_marking_guard("not a dict", [], {}, ["x"], None)


class CheckTimeFailureTests(TestCase):
    def test_f_locals_that_are_not_a_dict(self):
        root = root_with("x", 1, lambda m: m.add_equals_match_guard(1, ["x == 1"], None))
        for f_locals in (None, 5, [1], "x", object()):
            self.assertIs(root.check(f_locals), False)
            self.assertFalse(root.check_verbose(f_locals).result)

    def test_key_whose_eq_raises_during_lookup(self):
        # The guarded dict holds a key with the same hash as 1; looking up 1
        # compares the two, and that comparison raises.
        d = {1: "one"}
        root = root_with("d", d, lambda m: m.dict_getitem_manager(1, "L['d'][1]", "one", PLAIN).add_equals_match_guard("one", ["x == 'one'"], None))
        self.assertIs(root.check({"d": d}), True)
        self.assertIs(root.check({"d": {RaisingEq(): "one"}}), False)
        info = root.check_verbose({"d": {RaisingEq(): "one"}})
        self.assertFalse(info.result)

    def test_value_whose_eq_raises(self):
        root = root_with("x", 1, lambda m: m.add_equals_match_guard(1, ["x == 1"], None))
        self.assertIs(root.check({"x": RaisingEq()}), False)

    def test_getattr_that_raises(self):
        holder = Holder(value=1)
        root = root_with("h", holder, lambda m: m.getattr_manager("value", "L['h'].value", 1, PLAIN).add_equals_match_guard(1, ["x == 1"], None))
        self.assertIs(root.check({"h": holder}), True)
        self.assertIs(root.check({"h": RaisingGetattr()}), False)
        self.assertIs(root.check({"h": RaisingProperty()}), False)
        self.assertIn("getattr failed", root.check_verbose({"h": RaisingGetattr()}).verbose_code_parts[0])

    def test_module_getattr_that_raises(self):
        class Raising(torch.nn.Module):
            def __getattr__(self, name: str) -> Any:
                raise Boom(name)

        mod = torch.nn.Module()
        mod.register_buffer("buf", torch.zeros(1))
        buf = mod._buffers["buf"]
        root = root_with("m", mod, lambda m: m.nn_module_attr_manager("buf", "L['m'].buf", buf, PLAIN, mod).add_id_match_guard(id(buf), ["x is buf"], None))
        root.finalize()
        self.assertIs(root.check({"m": mod}), True)
        self.assertIs(root.check({"m": Raising()}), False)
        mod.__class__ = Raising  # its __getattr__ no longer searches _buffers
        with self.assertRaises(Boom):
            getattr(mod, "buf")
        self.assertIs(root.check({"m": mod}), False)

    def test_lambda_guard_that_raises(self):
        def raising(x: object) -> bool:
            raise Boom("lambda")

        root = root_with("x", 1, lambda m: m.add_lambda_guard(raising, ["raising(x)"], None))
        self.assertIs(root.check({"x": 1}), False)
        self.assertFalse(root.check_verbose({"x": 1}).result)

    def test_lambda_guard_returning_an_object_whose_bool_raises(self):
        class NoBool:
            def __bool__(self) -> bool:
                raise Boom("bool")

        root = root_with("x", 1, lambda m: m.add_lambda_guard(lambda x: NoBool(), ["nobool(x)"], None))
        self.assertIs(root.check({"x": 1}), False)

    def test_weakref_whose_target_is_gone(self):
        class Target:
            pass

        target = Target()
        ref = weakref.ref(target)
        root = root_with(
            "r", ref, lambda m: m.weakref_call_manager("L['r']()", target, PLAIN).add_type_match_guard(id(Target), ["type(x) is Target"], None)
        )
        self.assertIs(root.check({"r": ref}), True)
        del target
        gc.collect()
        self.assertIsNone(ref())
        self.assertIs(root.check({"r": ref}), False)
        self.assertIs(root.check({"r": 5}), False)  # not a weakref at all

    def test_global_weakref_whose_target_is_gone(self):
        class Target:
            pass

        target = Target()
        ref = weakref.ref(target)
        f_globals = {"w": ref}
        root = guards.RootGuardManager()
        g = root.globals_dict_manager(f_globals, "G", f_globals, PLAIN)
        g.global_weakref_manager("w", "G['w']()", target, PLAIN).add_id_match_guard(id(target), ["G['w']() is target"], None)
        self.assertIs(root.check({}), True)
        del target
        gc.collect()
        self.assertIs(root.check({}), False)

    def test_dunder_dict_that_is_not_a_dict(self):
        obj = ListAsDict()
        object.__setattr__(obj, "value", 1)
        root = root_with("o", obj, lambda m: m.getattr_manager("value", "L['o'].value", 1, PLAIN).add_equals_match_guard(1, ["x == 1"], None))
        root.finalize()
        for _ in range(3):
            self.assertIs(root.check({"o": obj}), True)
        object.__setattr__(obj, "value", 2)
        self.assertIs(root.check({"o": obj}), False)

        holder = Holder(value=1)
        root = root_with("o", holder, lambda m: m.get_generic_dict_manager("L['o'].__dict__", holder.__dict__, PLAIN).add_dict_length_check_guard(1, ["len(x) == 1"], None))
        self.assertIs(root.check({"o": holder}), True)
        self.assertIs(root.check({"o": obj}), True)  # the real instance dict, as stock reads it
        object.__setattr__(obj, "other", 0)
        self.assertIs(root.check({"o": obj}), False)
        self.assertIs(root.check({"o": Slotted()}), False)

    def test_tensor_match_on_a_non_tensor(self):
        t = torch.zeros(2)
        root = root_with("t", t, lambda m: m.add_tensor_match_guard(t, [2], [1], "t", ["check_tensor(t)"], None, type(t), torch._C._dispatch_keys(t)))
        self.assertIs(root.check({"t": t}), True)
        for other in (None, 1, [t], torch.zeros(3)):
            self.assertIs(root.check({"t": other}), False)


class TreeSizeTests(TestCase):
    def test_deep_chain_within_the_limit(self):
        depth = guards.MAX_TREE_DEPTH
        head = Holder()
        node = head
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("x", 0), "L['x']", head, PLAIN)
        for _ in range(depth - 1):
            node.n = Holder()
            node = node.n
            m = m.getattr_manager("n", "...n", node, PLAIN)
        m.add_type_match_guard(id(Holder), ["type(x) is Holder"], None)
        root.finalize()
        self.assertIs(root.check({"x": head}), True)
        self.assertIs(root.check({"x": head}), True)
        node.__class__ = Other
        self.assertIs(root.check({"x": head}), False)
        self.assertFalse(root.check_verbose({"x": head}).result)
        self.assertIsNotNone(root.clone_manager(lambda m: True))

    def test_deeper_than_the_limit_is_a_recursion_error(self):
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("x", 0), "L['x']", 1, PLAIN)
        with self.assertRaisesRegex(RecursionError, "guard tree deeper than"):
            for _ in range(100_000):
                m = m.getattr_manager("n", "...n", 1, PLAIN)

    def test_class_attr_match_on_a_deeply_nested_tuple(self):
        # Deeper than immutable_constants' tuple limit: compared by identity,
        # never walked on the C stack.
        deep: tuple = ()
        for _ in range(1_000_000):
            deep = (deep,)
        owner = type("Owner", (), {"k": deep})
        root = guards.RootGuardManager()
        root.add_class_attr_match_guard("k", deep, ["type(x).k is deep"], None)
        self.assertIs(root.check(owner()), True)
        owner.k = (deep[0],)  # equal, not the same object
        self.assertIs(root.check(owner()), False)
        owner.k = deep
        self.assertIs(root.check(owner()), True)

    def test_wide_tree(self):
        n = 20_000
        holder = Holder(**{f"a{i}": i for i in range(n)})
        root = guards.RootGuardManager()
        m = root.framelocals_manager(("h", 0), "L['h']", holder, PLAIN)
        for i in range(n):
            m.getattr_manager(f"a{i}", f"L['h'].a{i}", i, PLAIN).add_equals_match_guard(i, [f"x == {i}"], None)
        root.finalize()
        self.assertIs(root.check({"h": holder}), True)
        self.assertIs(root.check({"h": holder}), True)
        holder.a19999 = -1
        self.assertIs(root.check({"h": holder}), False)


# -- builder fuzz ------------------------------------------------------------

# Values offered to builder calls: good ones, wrong types, raising objects.
ODD_VALUES: list[Any] = [
    None, 0, 1, -1, 2**70, 1.5, float("nan"), "a", "", b"x", (), (1,), [], [1], {}, {"a": 1}, {1, 2},
    object(), RaisingEq(), RaisingHash(), RaisingGetattr(), ListAsDict(), Slotted(), Holder(a=1),
    torch.zeros(2), torch.nn.Linear(1, 1), int, type, PLAIN, DICT, lambda x: True, ["x == 1"],
]
value_strategy = st.sampled_from(range(len(ODD_VALUES))).map(lambda i: ODD_VALUES[i])


def builder_signatures() -> dict[str, list[str]]:
    """Each builder method's parameter names, read off pybind's docstring."""
    signatures = {}
    for cls in (guards.GuardManager, guards.DictGuardManager):
        for name in dir(cls):
            if not (name.startswith("add_") or name.endswith("_manager") or name in ("get_key_manager", "get_value_manager")):
                continue
            first_line = getattr(cls, name).__doc__.splitlines()[0]
            params = first_line[first_line.index("(") + 1 : first_line.rindex(")")].split(", ")[1:]
            signatures[name] = [p.split(":")[0] for p in params]
    return signatures


SIGNATURES = builder_signatures()
# What a well-formed call passes for a parameter of this name; the fuzz test
# mostly passes these, and otherwise any of ODD_VALUES.
PLAUSIBLE: dict[str, list[Any]] = {
    "source": ["L['x']", "G['y']"],
    "verbose_code_parts": [["x == 1"], ["check(x)", "and more"]],
    "user_stack": [None],
    "guard_manager_enum": [PLAIN, DICT],
    "attr": ["a", "value", "__dict__"],
    "key": ["x", "a", 1],
    "index": [0, 1, 5],
    "idx": [0, 1],
    "length": [0, 1, 2],
    "contains": [True, False],
}


@st.composite
def builder_call(draw: Callable[..., Any]) -> tuple[str, int, list[Any]]:
    name = draw(st.sampled_from(sorted(SIGNATURES)))
    args = []
    for param in SIGNATURES[name]:
        if param in PLAUSIBLE and draw(st.integers(0, 4)) > 0:
            args.append(draw(st.sampled_from(PLAUSIBLE[param])))
        else:
            args.append(draw(value_strategy))
    if draw(st.integers(0, 9)) == 0:  # a wrong number of arguments
        args = args[: draw(st.integers(0, len(args)))] if args and draw(st.booleans()) else args + [None]
    return name, draw(st.integers(0, 8)), args


class BuilderFuzzTests(TestCase):
    calls_made = 0
    calls_accepted = 0

    @settings(max_examples=FUZZ_EXAMPLES or 60, deadline=None, derandomize=not FUZZ_EXAMPLES, suppress_health_check=list(HealthCheck))
    @given(
        calls=st.lists(builder_call(), min_size=1, max_size=25),
        f_locals=st.dictionaries(st.sampled_from(["x", "y", "d"]), value_strategy, max_size=3),
    )
    def test_random_builder_calls(self, calls, f_locals):
        root = guards.RootGuardManager()
        managers: list[Any] = [root]
        for name, which, args in calls:
            method = getattr(managers[which % len(managers)], name, None)
            if method is None:
                continue
            BuilderFuzzTests.calls_made += 1
            try:
                result = method(*args)
            except CLEAR_ERRORS:
                continue
            except Boom:  # a raising __hash__/__eq__ among the arguments
                continue
            BuilderFuzzTests.calls_accepted += 1
            if isinstance(result, guards.GuardManager):
                managers.append(result)
        for _ in range(2):
            self.assertIsInstance(root.check(f_locals), bool)
            self.assertIsInstance(root.check_verbose(f_locals).result, bool)
        root.finalize()
        for _ in range(2):
            self.assertIsInstance(root.check(f_locals), bool)
        self.assertIsInstance(str(root.clone_manager(lambda m: True)), str)

    @classmethod
    def tearDownClass(cls) -> None:
        print(f"\nbuilder fuzz: {cls.calls_made} calls, {cls.calls_accepted} accepted, no crash")
        super().tearDownClass()


if __name__ == "__main__":
    run_tests()
