"""Reads Dynamo's trace makes without a guard (torch 2.13 to 2.15), found by
the audit in docs/audit.md ("What the trace reads without a guard"), one
test per mutation.

Each test compiles a module, calls it, mutates what the trace read, and calls
again, under stock torch and under the fork. The fork must equal eager after
every step. Where stock torch is stale the test checks that it still is, so
the audit table's "stock stale" column stays true on the running release
(``stock_stale=STALE_BEFORE_2_15`` where stock 2.15 fixed it); where stock
is right the fork must recompile exactly when stock does.

Classes are defined inside each ``make`` so that a class patched in the stock
run is not the class the fork run compiles."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import collections
import functools
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
import torch.nn.modules.module as module_py
from torch import nn
from torch._dynamo.test_case import run_tests, TestCase

from scenario import fork_used_everywhere, STALE_BEFORE_2_15, Step, stock_and_fork


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

        self.check(with_class_constant(0.0), mutate, stock_stale=STALE_BEFORE_2_15)

    def test_class_int_replaced_by_equal_float(self):
        def mutate(state):
            type(state.target).eps = 2.0

        self.check(with_class_constant(2), mutate, stock_stale=False)


def new_code(source: str) -> Any:
    """The code object of ``f`` in ``source``, compiled apart (what
    %autoreload assigns to a method's ``__code__``)."""
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    return namespace["f"].__code__


def with_classmethod_helper() -> nn.Module:
    class Net(nn.Module):
        @classmethod
        def helper(cls, x):
            return x + 1

        def forward(self, x):
            return self.helper(x) * 2

    return Net()


def with_staticmethod_helper() -> nn.Module:
    class Net(nn.Module):
        @staticmethod
        def helper(x):
            return x + 1

        def forward(self, x):
            return self.helper(x) * 2

    return Net()


def object_method_in_function() -> Callable[[torch.Tensor], torch.Tensor]:
    class Scaler:
        def apply(self, x):
            return x + 1

    scaler = Scaler()

    def call(x):
        return scaler.apply(x) * 2

    call.scaler = scaler  # type: ignore[attr-defined]
    return call


class TestCodeSwapped(StaleResultTestCase):
    """A method's ``__code__`` replaced in place: the class, the function
    object and every dict stay the same. The fork's CLASS_ATTR_MATCH pins
    the code of a function or classmethod it finds on the class."""

    def test_submodule_forward_code_swapped(self):
        def mutate(state):
            type(state.target.sub).forward.__code__ = new_code("def f(self, x): return x + 100")

        self.check(layered, mutate, stock_stale=True)

    def test_method_code_swapped(self):
        def mutate(state):
            type(state.target).helper.__code__ = new_code("def f(self, x): return x + 100")

        self.check(with_helper, mutate, stock_stale=True)

    def test_classmethod_code_swapped(self):
        def mutate(state):
            vars(type(state.target))["helper"].__func__.__code__ = new_code("def f(cls, x): return x + 100")

        self.check(with_classmethod_helper, mutate, stock_stale=STALE_BEFORE_2_15)

    def test_staticmethod_code_swapped(self):
        # torch guards a staticmethod's function by its own source (its
        # code guard): right under both, same recompiles.
        def mutate(state):
            vars(type(state.target))["helper"].__func__.__code__ = new_code("def f(x): return x + 100")

        self.check(with_staticmethod_helper, mutate, stock_stale=False)

    def test_hooked_submodule_forward_code_swapped(self):
        def make():
            net = layered()
            net.sub.register_forward_hook(lambda module, args, out: out * 3)
            return net

        def mutate(state):
            type(state.target.sub).forward.__code__ = new_code("def f(self, x): return x + 100")

        self.check(make, mutate, stock_stale=True)

    def test_submodule_own_call_code_swapped(self):
        # A module class with its own __call__: torch inlines it (no shortcut
        # to forward) without a guard on its code.
        def make():
            net = layered()

            class Calling(type(net.sub)):
                def __call__(self, x):
                    return self.forward(x) * 5

            net.sub = Calling()
            return net

        def mutate(state):
            type(state.target.sub).__call__.__code__ = new_code("def f(self, x): return self.forward(x) * 7")

        self.check(make, mutate, stock_stale=True)

    def test_object_method_code_swapped(self):
        def mutate(state):
            type(state.target.scaler).apply.__code__ = new_code("def f(self, x): return x + 100")

        self.check(object_method_in_function, mutate, stock_stale=True)


def with_ordered_dict(reorder_first: bool = False) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        class Net(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.table = collections.OrderedDict(a=1.0, b=2.0, c=3.0)
                if reorder_first:
                    self.table.move_to_end("a")  # linked b, c, a; stored a, b, c

            def forward(self, x):
                return torch.cat([x * v for v in self.table.values()])

        return Net()

    return make


def with_ordered_dict_read_by_key() -> nn.Module:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = collections.OrderedDict(a=1.0, b=2.0, c=3.0)

        def forward(self, x):
            return x * self.table["a"] + self.table["c"]

    return Net()


def with_ordered_module_dict() -> nn.Module:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleDict({"a": nn.Linear(4, 4), "b": nn.Linear(4, 4)})
            self.layers._modules = collections.OrderedDict(self.layers._modules)

        def forward(self, x):
            for layer in self.layers.values():
                x = layer(x).relu()
            return x

    return Net()


TABLE = collections.OrderedDict()


def reading_global_ordered_dict() -> Callable[[torch.Tensor], torch.Tensor]:
    TABLE.clear()
    TABLE.update(a=1.0, b=2.0, c=3.0)

    def call(x):
        return torch.cat([x * v for v in TABLE.values()])

    return call


class TestOrderedDictReordered(StaleResultTestCase):
    """``move_to_end`` relinks an OrderedDict's own list: its storage order,
    version tag and watchers stay the same, and torch's dict guards read
    storage order. The fork adds ORDERED_DICT_ORDER to every DictGuardManager
    over an OrderedDict."""

    def test_ordered_dict_attribute_moved_to_end(self):
        self.check(with_ordered_dict(), lambda state: state.target.table.move_to_end("a"), stock_stale=True)

    def test_ordered_dict_attribute_moved_to_front(self):
        self.check(with_ordered_dict(), lambda state: state.target.table.move_to_end("c", last=False), stock_stale=True)

    def test_ordered_dict_reordered_before_compiling_moved_back(self):
        def mutate(state):
            state.target.table.move_to_end("b")
            state.target.table.move_to_end("c")  # linked a, b, c: the storage order

        self.check(with_ordered_dict(reorder_first=True), mutate, stock_stale=True)

    def test_global_ordered_dict_moved_to_end(self):
        self.check(reading_global_ordered_dict, lambda state: TABLE.move_to_end("a"), stock_stale=True)

    def test_ordered_modules_dict_moved_to_end(self):
        self.check(with_ordered_module_dict, lambda state: state.target.layers._modules.move_to_end("a"), stock_stale=True)

    def test_ordered_dict_read_by_key_moved_to_end(self):
        # Order does not matter to this trace: no recompile, as under stock.
        self.check(with_ordered_dict_read_by_key, lambda state: state.target.table.move_to_end("a"), stock_stale=False)


def with_class_constant_read_through_type(value: Any) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        class Net(nn.Module):
            K = value

            def forward(self, x):
                return x / type(self).K

        return Net()

    return make


# Globals the traced functions below read (reset by each ``make``).
EPS = 0.0
SCALE = 1e-3
PAIR = (0.0, 1.0)


def divide_by_eps(x):
    return x / EPS


def divide_by_scale(x):
    return x / SCALE


def divide_by_pair(x):
    return x / PAIR[0] + PAIR[1]


def reading_global(name: str, value: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[], Any]:
    def make() -> Callable[[torch.Tensor], torch.Tensor]:
        globals()[name] = value
        return fn

    return make


def set_global(name: str, value: Any) -> Callable[[Any], None]:
    def mutate(state: Any) -> None:
        globals()[name] = value

    return mutate


class TestFloatConstantSign(StaleResultTestCase):
    """EQUALS_MATCH / CONSTANT_MATCH on a float: stock compares with ==, so
    0.0 -> -0.0 passes though ``x / eps`` tells them apart. The fork compares
    immutable constants by exact type and bits; an equal new float passes."""

    def test_class_float_read_through_type_negated(self):
        def mutate(state):
            type(state.target).K = -0.0

        self.check(with_class_constant_read_through_type(0.0), mutate, stock_stale=STALE_BEFORE_2_15)

    def test_class_float_read_through_type_replaced_by_equal_float(self):
        def mutate(state):
            type(state.target).K = float("1e-3")

        self.check(with_class_constant_read_through_type(1e-3), mutate, stock_stale=False)

    def test_global_zero_replaced_by_negative_zero(self):
        self.check(reading_global("EPS", 0.0, divide_by_eps), set_global("EPS", -0.0), stock_stale=STALE_BEFORE_2_15)

    def test_global_float_replaced_by_equal_float(self):
        self.check(reading_global("SCALE", 1e-3, divide_by_scale), set_global("SCALE", float("1e-3")), stock_stale=False)

    def test_global_float_replaced_by_other_float(self):
        self.check(reading_global("SCALE", 1e-3, divide_by_scale), set_global("SCALE", 0.5), stock_stale=False)

    def test_global_tuple_zero_replaced_by_negative_zero(self):
        self.check(reading_global("PAIR", (0.0, 1.0), divide_by_pair), set_global("PAIR", (-0.0, 1.0)), stock_stale=STALE_BEFORE_2_15)


def with_shadowed_class_attribute() -> nn.Module:
    class Net(nn.Module):
        k = 1.0

        def __init__(self) -> None:
            super().__init__()
            self.k = 2.0

        def forward(self, x):
            return x * self.k

    return Net()


def object_with_shadowed_class_attribute() -> Callable[[torch.Tensor], torch.Tensor]:
    class Config:
        k = 1.0

        def __init__(self) -> None:
            self.k = 2.0

    config = Config()

    def call(x):
        return x * config.k

    call.config = config  # type: ignore[attr-defined]
    return call


class TestShadowedClassAttribute(StaleResultTestCase):
    """A class attribute the instance __dict__ shadows: the fork guards the
    shadowing (CLASS_ATTR_SHADOWED), not the class attribute."""

    def test_shadowed_class_attribute_replaced(self):
        self.check(with_shadowed_class_attribute, lambda state: setattr(type(state.target), "k", 5.0), stock_stale=False)

    def test_shadowed_class_attribute_deleted(self):
        self.check(with_shadowed_class_attribute, lambda state: delattr(type(state.target), "k"), stock_stale=False)

    def test_shadowing_instance_attribute_deleted(self):
        self.check(with_shadowed_class_attribute, lambda state: delattr(state.target, "k"), stock_stale=False)

    def test_property_added_over_shadowing_instance_attribute(self):
        def mutate(state):
            type(state.target).k = property(lambda self: 7.0)

        self.check(with_shadowed_class_attribute, mutate, stock_stale=True)

    def test_object_shadowed_class_attribute_replaced(self):
        self.check(
            object_with_shadowed_class_attribute,
            lambda state: setattr(type(state.target.config), "k", 5.0),
            stock_stale=False,
        )

    def test_object_property_added_over_shadowing_instance_attribute(self):
        def mutate(state):
            type(state.target.config).k = property(lambda self: 7.0)

        self.check(object_with_shadowed_class_attribute, mutate, stock_stale=False)


UNPATCHED_CALL = nn.Module.__call__
UNPATCHED_CALL_IMPL = nn.Module._call_impl


def plus_100(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
    return UNPATCHED_CALL_IMPL(self, *args, **kwargs) + 100


def hooked_layered_in_function() -> Callable[[torch.Tensor], torch.Tensor]:
    call = layered_in_function()
    net = call.__closure__[0].cell_contents  # type: ignore[index]
    net.sub.register_forward_hook(lambda module, args, out: out * 3)
    return call


def submodule_of(state: Any) -> nn.Module:
    return state.target.__closure__[0].cell_contents.sub


class TestModuleCallPatched(StaleResultTestCase):
    """torch 2.13 reads ``type(mod).__call__`` and ``mod._call_impl`` when it
    calls a module and guards neither; the fork adds CLASS_ATTR_MATCH on
    both and a guard that the instance __dict__ holds no ``_call_impl``."""

    def tearDown(self) -> None:
        nn.Module.__call__ = UNPATCHED_CALL  # type: ignore[method-assign]
        nn.Module._call_impl = UNPATCHED_CALL_IMPL  # type: ignore[method-assign]
        super().tearDown()

    def test_submodule_call_replaced_on_class(self):
        self.check(layered_in_function, lambda state: setattr(type(submodule_of(state)), "__call__", plus_100), stock_stale=True)

    def test_module_call_replaced_on_nn_module(self):
        self.check(layered_in_function, lambda state: setattr(nn.Module, "__call__", plus_100), stock_stale=True)

    def test_submodule_call_impl_replaced_on_class(self):
        self.check(layered_in_function, lambda state: setattr(type(submodule_of(state)), "_call_impl", plus_100), stock_stale=True)

    def test_submodule_call_impl_set_on_instance(self):
        def mutate(state):
            sub = submodule_of(state)
            sub._call_impl = functools.partial(plus_100, sub)

        self.check(layered_in_function, mutate, stock_stale=True)

    def test_hooked_submodule_call_replaced_on_class(self):
        self.check(
            hooked_layered_in_function,
            lambda state: setattr(type(submodule_of(state)), "__call__", plus_100),
            stock_stale=STALE_BEFORE_2_15,
        )


def closure_reader() -> Callable[[torch.Tensor], torch.Tensor]:
    scale = 2.0

    def scaled(x):
        return x * scale

    def call(x):
        return scaled(x) + 1

    call.scaled = scaled  # type: ignore[attr-defined]
    return call


def default_reader() -> nn.Module:
    class Net(nn.Module):
        def helper(self, x, k=1.0, *, j=2.0):
            return x * k + j

        def forward(self, x):
            return self.helper(x)

    return Net()


def partial_reader() -> Callable[[torch.Tensor], torch.Tensor]:
    def affine(x, *, k, j):
        return x * k + j

    part = functools.partial(affine, k=2.0, j=1.0)

    def call(x):
        return part(x)

    call.part = part  # type: ignore[attr-defined]
    return call


class TestGuardedByTorch(StaleResultTestCase):
    """Reads torch 2.13 does guard (closure cells, defaults, partial
    keywords): the fork must recompile exactly as stock does."""

    def test_closure_cell_changed(self):
        def mutate(state):
            state.target.scaled.__closure__[0].cell_contents = 5.0

        self.check(closure_reader, mutate, stock_stale=False)

    def test_method_defaults_replaced(self):
        def mutate(state):
            type(state.target).helper.__defaults__ = (7.0,)

        self.check(default_reader, mutate, stock_stale=False)

    def test_method_kwdefaults_replaced(self):
        def mutate(state):
            type(state.target).helper.__kwdefaults__ = {"j": 9.0}

        self.check(default_reader, mutate, stock_stale=False)

    def test_partial_keyword_changed(self):
        def mutate(state):
            state.target.part.keywords["k"] = 3.0

        self.check(partial_reader, mutate, stock_stale=False)


def with_container_subclass(base: type, read: Callable[[Any, torch.Tensor], torch.Tensor], items: Any) -> Callable[[], nn.Module]:
    """A module holding an instance of a fresh subclass of ``base`` that
    adds nothing, read in forward by ``read(container, x)``."""

    def make() -> nn.Module:
        container_type = type(f"My{base.__name__.capitalize()}", (base,), {})

        class Net(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.items = container_type(items)

            def forward(self, x):
                return read(self.items, x)

        return Net()

    return make


def set_on_items_class(name: str, value: Any) -> Callable[[Any], None]:
    return lambda state: setattr(type(state.target.items), name, value)


class ContainerSubclassTests(StaleResultTestCase):
    """A list or dict subclass keeps its base type's dunder when compiled
    (the trace asks ``_maybe_get_baseclass_method``, which the fork hooks;
    torch 2.15 decides ``[]``, ``in`` and ``iter`` there), then the
    subclass gains its own."""

    def test_list_subclass_getitem_added_to_class(self):
        make = with_container_subclass(list, lambda items, x: x * items[0], [2.0, 3.0])
        self.check(make, set_on_items_class("__getitem__", lambda self, i: 10.0), stock_stale=True)

    def test_list_subclass_contains_added_to_class(self):
        make = with_container_subclass(list, lambda items, x: x * float(2.0 in items), [2.0, 3.0])
        self.check(make, set_on_items_class("__contains__", lambda self, v: False), stock_stale=True)

    def test_list_subclass_iter_added_to_class(self):
        make = with_container_subclass(list, lambda items, x: x * sum(v for v in items), [2.0, 3.0])
        self.check(make, set_on_items_class("__iter__", lambda self: iter([7.0])), stock_stale=True)

    def test_dict_subclass_getitem_added_to_class(self):
        make = with_container_subclass(dict, lambda items, x: x * items["a"], {"a": 2.0})
        self.check(make, set_on_items_class("__getitem__", lambda self, k: 10.0), stock_stale=True)

    def test_list_subclass_len_added_to_class(self):
        make = with_container_subclass(list, lambda items, x: x * len(items), [2.0, 3.0])
        self.check(make, set_on_items_class("__len__", lambda self: 5), stock_stale=False)  # torch guards len() by calling it


def reading_metaclass_attribute() -> nn.Module:
    """``type(self).scale`` where ``scale`` lives on the metaclass (and, one
    level up, on the metaclass's base), and ``type(self).factor()`` a
    method of the metaclass. The module's class and a plain base in its
    MRO define neither."""

    class MetaBase(type):
        scale = 3.0

    class Meta(MetaBase):
        scale = 2.0

        def factor(cls):
            return 0.5

    class Base:
        pass

    class Net(nn.Module, Base, metaclass=Meta):
        def forward(self, x):
            return x * type(self).scale + type(self).factor()

    return Net()


def metaclass_of(state: Any) -> type:
    return type(type(state.target))


class TestMetaclassAttribute(StaleResultTestCase):
    """``cls.name`` answered by the metaclass (CPython's ``type_getattro``
    consults the metaclass's MRO after the class's): torch's trace guards
    neither that the class lacks the name nor what the metaclass holds; the
    fork's METACLASS_ATTR_MATCH guards both."""

    def test_metaclass_attribute_reassigned(self):
        self.check(reading_metaclass_attribute, lambda state: setattr(metaclass_of(state), "scale", -5.0), stock_stale=True)

    def test_metaclass_attribute_deleted(self):
        # Python then finds the metaclass base's 3.0.
        self.check(reading_metaclass_attribute, lambda state: delattr(metaclass_of(state), "scale"), stock_stale=True)

    def test_shadowed_metaclass_base_attribute_replaced(self):
        # The metaclass's own scale still comes first: neither engine
        # recompiles.
        self.check(reading_metaclass_attribute, lambda state: setattr(metaclass_of(state).__base__, "scale", 9.0), stock_stale=False)

    def test_metaclass_attribute_replaced_by_equal_float(self):
        self.check(reading_metaclass_attribute, lambda state: setattr(metaclass_of(state), "scale", float("2.0")), stock_stale=False)

    def test_class_gains_metaclass_attribute_name(self):
        self.check(reading_metaclass_attribute, lambda state: setattr(type(state.target), "scale", 7.0), stock_stale=True)

    def test_base_class_in_mro_gains_metaclass_attribute_name(self):
        def mutate(state):
            base = next(k for k in type(state.target).__mro__ if k.__name__ == "Base")
            base.scale = 7.0

        self.check(reading_metaclass_attribute, mutate, stock_stale=True)

    def test_metaclass_method_replaced(self):
        self.check(
            reading_metaclass_attribute, lambda state: setattr(metaclass_of(state), "factor", lambda cls: -4.0), stock_stale=True
        )

    def test_metaclass_gains_getattribute(self):
        def mutate(state):
            meta = metaclass_of(state)

            def answer_otherwise(cls, name):
                return -6.0 if name == "scale" else type.__getattribute__(cls, name)

            meta.__getattribute__ = answer_otherwise

        self.check(reading_metaclass_attribute, mutate, stock_stale=True)

    def test_metaclass_method_code_swapped(self):
        def mutate(state):
            metaclass_of(state).factor.__code__ = (lambda cls: -4.0).__code__

        self.check(reading_metaclass_attribute, mutate, stock_stale=True)

if __name__ == "__main__":
    run_tests()
