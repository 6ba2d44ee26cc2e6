"""nn.Module attribute resolution under the fork: Python's lookup order
(data descriptor > instance __dict__ > class attribute > _parameters >
_buffers > _modules), and every mutation that changes what Python finds.

Each scenario compiles a module, calls it, mutates it, calls again, under
stock torch and under the fork. The fork must equal eager after every step;
where stock torch also equals eager, the fork must recompile exactly when
stock does. Where stock torch 2.13 returns a stale result, the test says so
(``stock_stale=True``) and checks that stock still does, so the list of
stock's wrong verdicts stays true."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import collections
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
import torch._dynamo
import torch._dynamo.guards
from torch import nn
from torch._dynamo.test_case import run_tests, TestCase

import dynamo_guards
from scenario import fork_used_everywhere, STALE_BEFORE_2_15, STALE_FROM_2_14, Step, stock_and_fork


def call_module(module: Any, args: Any) -> Any:
    return module(*args)


class ShadowingTestCase(TestCase):
    def check(
        self,
        make_module: Callable[[], nn.Module],
        mutate: Callable[[Any], None],
        *,
        stock_stale: bool = False,
        recompiles: bool | None = None,
        grad_mode: bool = False,
        shape: tuple[int, ...] = (2, 4),
    ):
        """Compile, call, ``mutate(state)``, call again."""

        def make():
            torch.manual_seed(0)
            return SimpleNamespace(target=make_module(), x=torch.randn(*shape))

        steps = [Step("first"), Step("again"), Step("mutated", mutate), Step("mutated again")]
        stock, fork = stock_and_fork(make, call_module, steps, lambda s: (s.x,), grad_mode=grad_mode)
        report = f"\nstock: {stock}\nfork: {fork}"
        self.assertTrue(fork_used_everywhere(fork), fork.wrapper_types)
        self.assertEqual(fork.equal_to_eager, [True] * len(steps), "the fork returned a stale result" + report)
        self.assertEqual(fork.frame_counts[1], 1, "the fork recompiled without a mutation")
        if stock_stale:
            self.assertIn(False, stock.equal_to_eager, "stock torch is no longer stale here: update the test" + report)
        else:
            self.assertEqual(stock.equal_to_eager, [True] * len(steps), report)
            self.assertEqual(fork.frame_counts, stock.frame_counts, report)
        if recompiles is not None:
            self.assertEqual(fork.frame_counts[2] > fork.frame_counts[1], recompiles, report)
        return stock, fork


# ---------------------------------------------------------------------------
# Modules used by the scenarios
# ---------------------------------------------------------------------------
class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("offset", torch.ones(4))
        self.scale = 2.0

    def forward(self, x):
        return self.lin(x) * self.scale + self.offset


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Scaled()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 4)})

    def forward(self, x):
        x = self.inner(x)
        for layer in self.layers:
            x = layer(x)
        return self.heads["a"](x)


class ModeDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Sequential(nn.Linear(4, 4), Branchy())

    def forward(self, x):
        return self.inner(x)


class Branchy(nn.Module):
    def forward(self, x):
        return x * 2 if self.training else x * 3


# ---------------------------------------------------------------------------
# The upstream review's attribute-precedence example
# ---------------------------------------------------------------------------
class PrecedenceBase(nn.Module):
    def linear(self, x):
        return x * 5

    def b(self, x):
        return x * 7


class Precedence(PrecedenceBase):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(11, 11)  # stored in _modules: the base method still wins
        self.a = 2
        self.b = 2  # instance __dict__ beats the class method b

    def forward(self, x):
        return self.linear(x) * self.a * self.b


class AttributePrecedenceTests(ShadowingTestCase):
    def test_attribute_precedence(self):
        trees = []
        previous = torch._dynamo.guards.guard_manager_testing_hook_fn
        torch._dynamo.guards.guard_manager_testing_hook_fn = lambda w, f_locals, b: trees.append(str(w))
        try:
            torch._dynamo.reset()
            mod = Precedence()
            x = torch.randn(3, 11)
            with dynamo_guards.enabled():
                counter = torch._dynamo.testing.CompileCounter()
                opt = torch.compile(mod, backend=counter)
                self.assertEqual(opt(x), mod(x))
                self.assertEqual(opt(x), mod(x))
            self.assertEqual(counter.frame_count, 1)
        finally:
            torch._dynamo.guards.guard_manager_testing_hook_fn = previous
            torch._dynamo.reset()
        (tree,) = trees
        lines = tree.splitlines()
        accessors = {line.split("accessed_by=")[1].split(", type=")[0] for line in lines if "NNModuleAttr" in line}
        self.assertIn("NNModuleAttrGuardAccessor('a' from __dict__)", accessors)
        self.assertIn("NNModuleAttrGuardAccessor('b' from __dict__)", accessors)
        # linear is registered in _modules, but the base-class method answers:
        # the tree reads it from the class, never from _modules.
        self.assertTrue(
            any(
                f"CLASS_ATTR_MATCH: L['self'].linear from class attribute on {PrecedenceBase.__module__}.PrecedenceBase"
                in line
                for line in lines
            )
        )
        self.assertFalse([l for l in lines if "_modules['linear']" in l or "'linear' from _modules" in l])


# ---------------------------------------------------------------------------
# Mutations that change what Python finds: each must give the eager result
# ---------------------------------------------------------------------------
class InstanceAttributeTests(ShadowingTestCase):
    def test_instance_attribute_set(self):
        self.check(Scaled, lambda s: setattr(s.target, "scale", 3.0), recompiles=True)

    def test_instance_attribute_set_under_recursive_dict_tags(self):
        # Stock torch's recursive dict tags trust the module __dict__'s dict
        # watcher, which CPython 3.13.0 does not call for attribute writes
        # through the object (gh-125608): stock keeps the old scale there.
        # The fork does not read that setting.
        with torch._dynamo.config.patch(use_recursive_dict_tags_for_guards=True):
            self.check(
                Scaled,
                lambda s: setattr(s.target, "scale", 3.0),
                recompiles=True,
                stock_stale=sys.version_info[:3] == (3, 13, 0),
            )

    def test_training_toggled_deep_under_recursive_dict_tags(self):
        with torch._dynamo.config.patch(use_recursive_dict_tags_for_guards=True):
            self.check(
                ModeDependent,
                lambda s: s.target.inner[1].train(False),
                recompiles=True,
                stock_stale=sys.version_info[:3] == (3, 13, 0),
            )

    def test_instance_attribute_deleted_falls_back_to_class(self):
        self.check(local_instance(Scaled, scale=5.0), lambda s: delattr(s.target, "scale"), recompiles=True)

    def test_object_setattr_shadows_submodule(self):
        def shadow(s):
            object.__setattr__(s.target, "lin", nn.Identity())

        self.check(Scaled, shadow, stock_stale=True, recompiles=True)

    def test_object_setattr_shadows_parameter(self):
        def shadow(s):
            object.__setattr__(s.target.lin, "bias", torch.zeros(4))

        self.check(Scaled, shadow, stock_stale=True)

    def test_object_setattr_shadows_buffer(self):
        def shadow(s):
            object.__setattr__(s.target, "offset", torch.zeros(4))

        self.check(Scaled, shadow, stock_stale=True)


class AnsweringGetattr(Scaled):
    """Its own __getattr__ answers ``shift``; nothing else defines it."""

    def __getattr__(self, name):
        if name == "shift":
            return 100.0
        return nn.Module.__getattr__(self, name)

    def forward(self, x):
        return super().forward(x) + self.shift


class BufferAndModule(nn.Module):
    """``shift`` is both a buffer and a submodule; Python answers the buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("shift", torch.ones(4))
        self._modules["shift"] = nn.Identity()

    def forward(self, x):
        shift = self.shift
        return x + shift if isinstance(shift, torch.Tensor) else shift(x) * 2


def local_instance(base: type, *args: Any, **attrs: Any) -> Callable[[], nn.Module]:
    """A factory making an instance of a fresh subclass of ``base`` per call,
    so that class mutations of one run (stock, fork) never leak into the
    other. ``attrs`` become class attributes of the subclass."""

    def make() -> nn.Module:
        return type(base.__name__ + "Local", (base,), dict(attrs))(*args)

    return make


class ClassAttributeTests(ShadowingTestCase):
    def test_class_attribute_added_shadows_submodule(self):
        def shadow(s):
            type(s.target).lin = nn.Identity()

        self.check(local_instance(Scaled), shadow, stock_stale=True, recompiles=True)

    def test_class_attribute_added_shadows_buffer(self):
        def shadow(s):
            type(s.target).offset = torch.zeros(4)

        self.check(local_instance(Scaled), shadow, stock_stale=True, recompiles=True)

    def test_class_attribute_added_shadows_parameter(self):
        def make():
            mod = Scaled()
            mod.lin = local_instance(nn.Linear, 4, 4)()
            return mod

        def shadow(s):
            type(s.target.lin).bias = torch.zeros(4)

        self.check(make, shadow, stock_stale=True, recompiles=True)

    def test_class_attribute_deleted_stops_shadowing(self):
        def make():
            mod = local_instance(Scaled)()
            type(mod).lin = nn.Identity()  # shadows the submodule at compile time
            return mod

        def unshadow(s):
            del type(s.target).lin

        self.check(make, unshadow, recompiles=True)

    def test_property_added_over_instance_attribute(self):
        def shadow(s):
            type(s.target).scale = property(lambda self: 10.0)

        self.check(local_instance(Scaled), shadow, stock_stale=True, recompiles=True)

    def test_property_replaced(self):
        def forward(self, x):
            return Scaled.forward(self, x) * self.factor

        def replace(s):
            type(s.target).factor = property(lambda self: 4.0)

        self.check(local_instance(Scaled, factor=property(lambda self: 2.0), forward=forward), replace, recompiles=True)

    def test_method_replaced_on_class(self):
        def replace(s):
            type(s.target).b = lambda self, x: x * 11

        make = local_instance(PrecedenceBase, forward=lambda self, x: self.b(x))
        # Stock 2.15 guards that no class before the one a method is found
        # on (the instance's own class included) gains the name.
        self.check(make, replace, shape=(3, 11), stock_stale=STALE_BEFORE_2_15, recompiles=True)

    def test_method_deleted_on_class(self):
        def delete(s):
            del type(s.target).b  # PrecedenceBase.b answers again

        make = local_instance(PrecedenceBase, forward=lambda self, x: self.b(x), b=lambda self, x: x * 13)
        self.check(make, delete, shape=(3, 11), stock_stale=True, recompiles=True)

    def test_custom_getattr_added_to_class(self):
        def add_getattr(s):
            def __getattr__(self, name):
                if name == "lin":
                    return nn.Identity()
                return nn.Module.__getattr__(self, name)

            type(s.target).__getattr__ = __getattr__

        self.check(local_instance(Scaled), add_getattr, stock_stale=True, recompiles=True)

    def test_class_attribute_added_over_custom_getattr_answer(self):
        def shadow(s):
            type(s.target).shift = 0.0

        self.check(local_instance(AnsweringGetattr), shadow, stock_stale=True, recompiles=True)

    def test_instance_attribute_set_over_custom_getattr_answer(self):
        def shadow(s):
            object.__setattr__(s.target, "shift", 0.0)

        self.check(local_instance(AnsweringGetattr), shadow, stock_stale=True, recompiles=True)

    def test_name_in_buffers_and_modules_reads_the_buffer(self):
        # nn.Module.__getattr__ reads _buffers before _modules; torch 2.13's
        # trace reads _modules first and so compiles the wrong object.
        def update_buffer(s):
            s.target._buffers["shift"].mul_(3.0)

        self.check(BufferAndModule, update_buffer, stock_stale=True, recompiles=False)

    def test_class_swapped(self):
        class Tripled(Scaled):
            def forward(self, x):
                return super().forward(x) * 3

        def swap(s):
            s.target.__class__ = Tripled

        self.check(Scaled, swap, recompiles=True)


class SubmoduleTests(ShadowingTestCase):
    def test_submodule_swapped(self):
        # Same type and parameter shapes: parameters are graph inputs, so the
        # swap needs no recompile, only the new weights.
        self.check(Outer, lambda s: setattr(s.target.inner, "lin", nn.Linear(4, 4)), recompiles=False)

    def test_submodule_swapped_for_another_type(self):
        self.check(Outer, lambda s: setattr(s.target.inner, "lin", nn.Identity()), recompiles=True)

    def test_module_list_appended(self):
        self.check(Outer, lambda s: s.target.layers.append(nn.Linear(4, 4)), recompiles=True)

    def test_module_dict_replaced(self):
        self.check(Outer, lambda s: s.target.heads.__setitem__("a", nn.Linear(4, 4)), recompiles=False)
        self.check(Outer, lambda s: s.target.heads.__setitem__("a", nn.Identity()), recompiles=True)

    def test_training_toggled_deep(self):
        self.check(ModeDependent, lambda s: s.target.inner[1].train(False), recompiles=True)

    def test_training_toggled_at_root(self):
        self.check(ModeDependent, lambda s: s.target.train(False), recompiles=True)

    def test_forward_hook_added_to_submodule(self):
        def add_hook(s):
            s.target.inner.lin.register_forward_hook(lambda mod, args, out: out * 10)

        self.check(Outer, add_hook, stock_stale=True, recompiles=True)

    def test_forward_pre_hook_added_to_root(self):
        def add_hook(s):
            s.target.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))

        self.check(Outer, add_hook, recompiles=True)

    def test_forward_hook_written_into_hook_dict(self):
        def add_hook(s):
            s.target.inner.lin._forward_hooks[0] = lambda mod, args, out: out * 10

        self.check(Outer, add_hook, stock_stale=True, recompiles=True)

    def test_forward_hook_dict_replaced_by_empty_dict(self):
        def replace(s):
            s.target.inner.lin.__dict__["_forward_hooks"] = collections.OrderedDict()

        self.check(Outer, replace, recompiles=False)

    def test_forward_monkeypatched_on_instance(self):
        self.check(Scaled, lambda s: setattr(s.target, "forward", lambda x: x * 9))

    def test_forward_monkeypatched_on_submodule(self):
        self.check(Outer, lambda s: setattr(s.target.layers[0], "forward", lambda x: x - 1))


class ParameterTests(ShadowingTestCase):
    def test_parameter_reassigned(self):
        def reassign(s):
            s.target.lin.weight = nn.Parameter(torch.randn(4, 4))

        self.check(Scaled, reassign)

    def test_parameter_requires_grad_flipped(self):
        self.check(Scaled, lambda s: s.target.lin.weight.requires_grad_(False), grad_mode=True)

    def test_parameter_dtype_changed(self):
        def to_double(s):
            s.target.double()
            s.x = s.x.double()

        self.check(Scaled, to_double, recompiles=True)


class NoRecompileTests(ShadowingTestCase):
    def test_parameter_values_changed_in_place(self):
        def update(s):
            with torch.no_grad():
                s.target.lin.weight.add_(1.0)

        self.check(Scaled, update, recompiles=False)

    def test_buffer_values_updated(self):
        self.check(Scaled, lambda s: s.target.offset.mul_(3.0), recompiles=False)

    def test_unrelated_attribute_on_unrelated_module(self):
        unrelated = nn.Linear(2, 2)
        self.check(Scaled, lambda s: setattr(unrelated, "note", "hello"), recompiles=False)



class SharedConfig:
    """One object held by a module and its submodules, as transformers'
    configs are: Dynamo guards ``self.config is layer.config``
    (OBJECT_ALIASING)."""

    def __init__(self, scale: float = 2.0) -> None:
        self.scale = scale


class ConfiguredLayer(nn.Module):
    def __init__(self, config: SharedConfig) -> None:
        super().__init__()
        self.config = config
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x) * self.config.scale


class ConfiguredTower(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = SharedConfig()
        self.layers = nn.ModuleList([ConfiguredLayer(self.config) for _ in range(2)])

    def forward(self, x):
        x = x * self.config.scale
        for layer in self.layers:
            x = layer(x)
        return x


def memo_log_kinds(root: Any) -> collections.Counter:
    """The step kinds of the logs a check of ``root`` validates first."""
    kinds: collections.Counter = collections.Counter()

    def visit(manager: Any) -> None:
        if manager.is_memoized() and manager.memo_log_size() is not None:
            kinds.update(manager.memo_log_kinds())
            return
        for child in manager.get_child_managers():
            visit(child)

    visit(root)
    return kinds


class SharedObjectTests(ShadowingTestCase):
    """The fork's memo log pins an aliasing relation both of whose sides it
    reads (MemoRecorder::held_slot): every way the sides stop being one
    object must still recompile."""

    def test_aliasing_pinned_by_the_log(self):
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        torch._dynamo.reset()
        model, x = ConfiguredTower(), torch.randn(2, 4)
        with dynamo_guards.enabled():
            compiled = torch.compile(model, backend="eager")
            compiled(x)
            compiled(x)
        roots = [entry.guard_manager.root.fork_root for entry in _debug_get_cache_entry_list(ConfiguredTower.forward.__code__)]
        torch._dynamo.reset()
        self.assertEqual(len(roots), 1)
        self.assertEqual(dynamo_guards.format_tree(roots[0]).count("OBJECT_ALIASING: L['self'].config is"), 2)
        self.assertEqual(memo_log_kinds(roots[0])["SlotAddress"], 4, "both relations' slots are stores")

    def test_layer_config_replaced_by_equal_copy(self):
        self.check(ConfiguredTower, lambda s: setattr(s.target.layers[1], "config", SharedConfig()), recompiles=True)

    def test_layer_config_replaced_by_other_value(self):
        self.check(ConfiguredTower, lambda s: setattr(s.target.layers[0], "config", SharedConfig(3.0)), recompiles=True)

    def test_root_config_replaced(self):
        self.check(ConfiguredTower, lambda s: setattr(s.target, "config", SharedConfig()), recompiles=True)

    def test_shared_config_value_changed(self):
        self.check(ConfiguredTower, lambda s: setattr(s.target.config, "scale", 3.0), recompiles=True)

    def test_every_config_replaced_by_one_new_object(self):
        def replace_everywhere(s):
            config = SharedConfig()
            s.target.config = config
            for layer in s.target.layers:
                layer.config = config

        self.check(ConfiguredTower, replace_everywhere)

    def test_layer_config_shadowed_by_class_property(self):
        # A data descriptor on the layers' class beats their __dict__ entry:
        # stock torch 2.14 and later read the __dict__ and keep the old
        # result (scenario.STALE_FROM_2_14).
        def shadow(s):
            type(s.target.layers[1]).config = property(lambda self: SharedConfig(3.0))

        def make():
            cls = type("LocalLayer", (ConfiguredLayer,), {})
            tower = ConfiguredTower()
            for layer in tower.layers:
                layer.__class__ = cls
            return tower

        self.check(make, shadow, stock_stale=STALE_FROM_2_14, recompiles=True)

if __name__ == "__main__":
    run_tests()
