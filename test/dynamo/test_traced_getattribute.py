"""Attributes read through a class's own ``__getattribute__`` (transformers'
configs), which the fork guards through ``object.__getattribute__`` and the
facts of the traced chain instead of running the chain on every check
(dynamo_guards/traced_getattribute.py); and membership reads of an
instance ``__dict__``, which torch leaves unguarded
(dynamo_guards/instance_dict_reads.py).

One test per mutation that must still be noticed. Where stock torch is
right (it re-runs the chain on every check) the fork must recompile exactly
when stock does; where stock is stale the test checks that it still is."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from torch import nn
from torch._dynamo.test_case import run_tests, TestCase

import dynamo_guards
from scenario import fork_used_everywhere, Step, stock_and_fork

# Read by the chain of ``make_config``'s classes (a global the code consults).
SCALE_OVERRIDE: float | None = None


def make_config() -> Any:
    """A config in transformers' shape: a mapped name (``num_layers`` is
    ``n_layer``), a mixin's ``__getattribute__`` further down the MRO that
    consults the instance ``__dict__`` and a module global, and a
    ``__setattr__`` that maps names too. New classes per call."""

    class PerLayerMixin:
        def __getattribute__(self, key):
            overrides = super().__getattribute__("__dict__").get("_overrides")
            if overrides is not None and key in overrides:
                return overrides[key]
            if key == "scale" and SCALE_OVERRIDE is not None:
                return SCALE_OVERRIDE
            return super().__getattribute__(key)

    class Base(PerLayerMixin):
        pass

    class Config(Base):
        attribute_map = {"num_layers": "n_layer"}

        def __init__(self) -> None:
            self.n_layer = 2
            self.n_other = 7
            self.use_cache = True
            self.scale = 2.0

        def __getattribute__(self, key):
            if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
                key = super().__getattribute__("attribute_map")[key]
            return super().__getattribute__(key)

        def __setattr__(self, key, value):
            if key in super().__getattribute__("attribute_map"):
                key = super().__getattribute__("attribute_map")[key]
            super().__setattr__(key, value)

    return Config()


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = make_config()

    def forward(self, x):
        config = self.config
        y = x * config.scale * config.num_layers
        if config.use_cache:
            y = y + 1
        if hasattr(config, "extra"):
            y = y + config.extra
        return y - getattr(config, "bias", 0.0)


def call_module(module: Any, args: Any) -> Any:
    return module(*args)


class ChainTestCase(TestCase):
    def check(
        self, mutate: Callable[[Any], None], *, stock_stale: bool | None, make: Callable[[], nn.Module] = Model
    ) -> None:
        """``stock_stale=None``: stock's verdict differs between
        interpreters and is not asserted."""
        def make_state() -> Any:
            return SimpleNamespace(target=make(), x=torch.ones(2, 4))

        steps = [Step("first"), Step("again"), Step("mutated", mutate), Step("mutated again")]
        stock, fork = stock_and_fork(make_state, call_module, steps, lambda s: (s.x,))
        report = f"\nstock: {stock}\nfork: {fork}"
        self.assertTrue(fork_used_everywhere(fork), fork.wrapper_types)
        self.assertEqual(fork.equal_to_eager, [True] * len(steps), "the fork returned a stale result" + report)
        self.assertEqual(fork.frame_counts[1], 1, "the fork recompiled without a mutation" + report)
        self.assertEqual(fork.frame_counts[3], fork.frame_counts[2], "the fork recompiled twice" + report)
        if stock_stale is None:
            return
        if stock_stale:
            self.assertIn(False, stock.equal_to_eager, "stock torch is no longer stale here: update the test" + report)
        else:
            self.assertEqual(stock.equal_to_eager, [True] * len(steps), report)
            self.assertEqual(fork.frame_counts, stock.frame_counts, report)


def config_of(state: Any) -> Any:
    return state.target.config


class TestValueChanged(ChainTestCase):
    def test_value_set_by_setattr(self):
        self.check(lambda s: setattr(config_of(s), "scale", 3.0), stock_stale=False)

    def test_value_set_through_mapped_name(self):
        self.check(lambda s: setattr(config_of(s), "num_layers", 5), stock_stale=False)

    def test_value_set_in_instance_dict(self):
        self.check(lambda s: config_of(s).__dict__.__setitem__("use_cache", False), stock_stale=False)

    def test_value_set_by_object_setattr(self):
        self.check(lambda s: object.__setattr__(config_of(s), "scale", 0.5), stock_stale=False)

    def test_value_deleted_class_default_answers(self):
        def mutate(s: Any) -> None:
            type(config_of(s)).scale = 4.0
            del config_of(s).__dict__["scale"]

        self.check(mutate, stock_stale=False)

    def test_absent_attribute_added(self):
        self.check(lambda s: setattr(config_of(s), "extra", 10.0), stock_stale=False)

    def test_absent_attribute_added_on_class(self):
        self.check(lambda s: setattr(type(config_of(s)), "bias", 1.0), stock_stale=False)


class TestMappingChanged(ChainTestCase):
    def test_mapping_entry_changed(self):
        self.check(lambda s: type(config_of(s)).attribute_map.__setitem__("num_layers", "n_other"), stock_stale=False)

    def test_mapping_replaced_on_class(self):
        self.check(lambda s: setattr(type(config_of(s)), "attribute_map", {"num_layers": "n_other"}), stock_stale=False)

    def test_mapping_set_on_instance(self):
        # The chain reads attribute_map through object.__getattribute__: the
        # instance's own entry now answers (a class attribute, not a data
        # descriptor).
        self.check(lambda s: config_of(s).__dict__.__setitem__("attribute_map", {"num_layers": "n_other"}), stock_stale=False)


class TestChainChanged(ChainTestCase):
    def test_getattribute_replaced_on_class(self):
        def mutate(s: Any) -> None:
            cls = type(config_of(s))

            def answer_nine(self, key):
                if key == "scale":
                    return 9.0
                mapping = super(cls, self).__getattribute__("attribute_map")
                return super(cls, self).__getattribute__(mapping.get(key, key))

            cls.__getattribute__ = answer_nine

        self.check(mutate, stock_stale=False)

    def test_getattribute_code_swapped(self):
        class Other:
            def __getattribute__(self, key):
                if key == "scale":
                    return 5.0
                if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
                    key = super().__getattribute__("attribute_map")[key]
                return super().__getattribute__(key)

        def mutate(s: Any) -> None:
            type(config_of(s)).__getattribute__.__code__ = Other.__getattribute__.__code__

        self.check(mutate, stock_stale=False)

    def test_base_class_gains_getattribute(self):
        def mutate(s: Any) -> None:
            base = type(config_of(s)).__mro__[1]

            def shadow(self, key):
                return 6.0 if key == "scale" else super(base, self).__getattribute__(key)

            base.__getattribute__ = shadow

        self.check(mutate, stock_stale=False)

    def test_mixin_getattribute_deleted(self):
        # The chain then ends in object.__getattribute__ one step earlier;
        # the instance's overrides are no longer consulted.
        def mutate(s: Any) -> None:
            config_of(s).__dict__["_overrides"] = {"scale": 8.0}
            del type(config_of(s)).__mro__[2].__getattribute__

        self.check(mutate, stock_stale=False)

    def test_subclass_overrides_getattribute(self):
        def mutate(s: Any) -> None:
            config = config_of(s)

            class Sub(type(config)):
                def __getattribute__(self, key):
                    return 0.25 if key == "scale" else super().__getattribute__(key)

            config.__class__ = Sub

        self.check(mutate, stock_stale=False)

    def test_getattr_added_on_class(self):
        self.check(lambda s: setattr(type(config_of(s)), "__getattr__", lambda self, key: 3.0), stock_stale=False)


class TestWhatTheChainReads(ChainTestCase):
    def test_instance_dict_entry_the_chain_consults_set(self):
        self.check(lambda s: config_of(s).__dict__.__setitem__("_overrides", {"scale": 8.0}), stock_stale=False)

    def test_global_the_chain_reads_changed(self):
        def set_override(value: float | None) -> None:
            global SCALE_OVERRIDE
            SCALE_OVERRIDE = value

        def make() -> nn.Module:
            set_override(None)  # each engine's run starts from the same globals
            return Model()

        try:
            self.check(lambda s: set_override(1.5), stock_stale=False, make=make)
        finally:
            set_override(None)


class SlottedConfig:
    """The chain's generic lookup meets an unset slot: an AttributeError
    that no absence guard describes (the class has ``flag``)."""

    __slots__ = ("flag", "__dict__")

    def __getattribute__(self, key):
        return super().__getattribute__(key)


class SlottedModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = SlottedConfig()

    def forward(self, x):
        return x + 1 if hasattr(self.config, "flag") else x - 1


class TestUnsetSlot(ChainTestCase):
    def test_unset_slot_set(self):
        self.check(lambda s: setattr(s.target.config, "flag", 1), stock_stale=False, make=SlottedModel)


class Tracker:
    last: str = ""


class RecordingConfig:
    """A ``__getattribute__`` with a side effect: it records the name it
    was asked for on another object."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self.scale = 2.0

    def __getattribute__(self, key):
        super().__getattribute__("tracker").last = key
        return super().__getattribute__(key)


class RecordingModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = RecordingConfig(Tracker())

    def forward(self, x):
        return x * self.config.scale


class TestChainWithSideEffect(ChainTestCase):
    def test_side_effect_replayed_value_changed(self):
        """The compiled code replays the chain's write (the fork's check
        runs no chain), the result follows a changed value."""

        def mutate(s: Any) -> None:
            config = s.target.config
            config.scale = 3.0
            config.tracker.last = ""

        self.check(mutate, stock_stale=False, make=RecordingModel)

    def test_side_effect_matches_eager(self):
        torch._dynamo.reset()
        model, x = RecordingModel(), torch.ones(3)
        tracker = object.__getattribute__(model.config, "tracker")
        with dynamo_guards.enabled():
            compiled = torch.compile(model, backend="eager")
            compiled(x)
            tracker.last = ""
            out = compiled(x)
        torch._dynamo.reset()
        self.assertEqual(out, x * 2.0)
        self.assertEqual(tracker.last, "scale")


class Holder:
    def __init__(self) -> None:
        self.a = 1.0


class InstanceDictModel(nn.Module):
    def __init__(self, read: Callable[[Any, torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.holder = Holder()
        self.read = read

    def forward(self, x):
        return self.read(self.holder, x)


def reads_get(holder: Any, x: torch.Tensor) -> torch.Tensor:
    return x + 1 if vars(holder).get("flag") is None else x - 1


def reads_contains(holder: Any, x: torch.Tensor) -> torch.Tensor:
    return x - 1 if "flag" in holder.__dict__ else x + 1


def reads_length(holder: Any, x: torch.Tensor) -> torch.Tensor:
    return x * len(vars(holder))


def holder_of(state: Any) -> Any:
    return state.target.holder


class TestInstanceDictReads(ChainTestCase):
    def test_get_key_added(self):
        self.check(lambda s: setattr(holder_of(s), "flag", 1), stock_stale=True, make=lambda: InstanceDictModel(reads_get))

    def test_contains_key_added(self):
        self.check(lambda s: setattr(holder_of(s), "flag", 1), stock_stale=True, make=lambda: InstanceDictModel(reads_contains))

    def test_contains_key_deleted(self):
        def make() -> nn.Module:
            model = InstanceDictModel(reads_contains)
            model.holder.flag = 1
            return model

        # Stock guards the present key's value; measured: it notices the
        # deletion on 3.11 and 3.12, not on 3.13.0 (torch 2.15).
        self.check(lambda s: delattr(holder_of(s), "flag"), stock_stale=None, make=make)

    def test_keys_key_added(self):
        self.check(lambda s: setattr(holder_of(s), "b", 2.0), stock_stale=True, make=lambda: InstanceDictModel(reads_length))

    def test_unrelated_key_added(self):
        # A key the trace did not test: neither engine recompiles.
        self.check(lambda s: setattr(holder_of(s), "other", 1), stock_stale=False, make=lambda: InstanceDictModel(reads_get))


ENABLED = True


class Layer:
    compileable = True


def make_cache_model() -> nn.Module:
    """A module reading ``getattr(self.cache, "compileable", False)``, whose
    property getter loops over the cache's layers (transformers' Cache
    ``is_compileable``). Classes of their own per model, so a test may
    mutate them."""

    class Cache:
        def __init__(self) -> None:
            self.layers = [Layer(), Layer()]

        @property
        def compileable(self) -> bool:
            return ENABLED and all(layer.compileable for layer in self.layers)

    class CacheModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.cache = Cache()

        def forward(self, x):
            return x + 1 if getattr(self.cache, "compileable", False) else x - 1

    return CacheModel()


def cache_of(state: Any) -> Any:
    return state.target.cache


def compileable_property(state: Any) -> property:
    return vars(type(cache_of(state)))["compileable"]


def raise_attribute_error(self: Any) -> bool:
    raise AttributeError("compileable")


class TestHasattrThroughProperty(ChainTestCase):
    """``getattr(obj, name, default)`` on a property whose getter is Python
    code: the trace inlines the getter, and the fork keeps its True answer
    by the getter's lookup and code instead of torch's HASATTR guard, which
    calls the getter on every check."""

    def check_cache(self, mutate: Callable[[Any], None], *, stock_stale: bool | None) -> None:
        self.check(mutate, stock_stale=stock_stale, make=make_cache_model)

    def test_what_getter_reads_changed(self):
        self.check_cache(lambda s: setattr(cache_of(s).layers[0], "compileable", False), stock_stale=False)

    def test_getter_raises_attribute_error_now(self):
        self.check_cache(lambda s: delattr(cache_of(s), "layers"), stock_stale=False)

    def test_global_getter_reads_changed(self):
        def make() -> nn.Module:
            globals()["ENABLED"] = True
            return make_cache_model()

        try:
            self.check(lambda s: globals().__setitem__("ENABLED", False), stock_stale=False, make=make)
        finally:
            globals()["ENABLED"] = True

    def test_property_replaced_on_class(self):
        self.check_cache(lambda s: setattr(type(cache_of(s)), "compileable", property(raise_attribute_error)), stock_stale=False)

    def test_property_deleted_from_class(self):
        self.check_cache(lambda s: delattr(type(cache_of(s)), "compileable"), stock_stale=False)

    def test_property_reinitialized_with_other_getter(self):
        self.check_cache(lambda s: compileable_property(s).__init__(raise_attribute_error), stock_stale=False)

    def test_property_reinitialized_with_same_code_other_globals(self):
        def mutate(s: Any) -> None:
            getter = compileable_property(s).fget
            disabled = types.FunctionType(getter.__code__, {**getter.__globals__, "ENABLED": False}, getter.__name__)
            compileable_property(s).__init__(disabled)

        # Stock reads the getter's code and the module's ENABLED, both as
        # they were; the fork pins the getter itself.
        self.check_cache(mutate, stock_stale=True)

    def test_getter_code_swapped(self):
        self.check_cache(lambda s: setattr(compileable_property(s).fget, "__code__", raise_attribute_error.__code__), stock_stale=False)

    def test_class_gains_getattribute(self):
        # Stock's HASATTR still finds the name, and no guard of its own
        # looks at the class's hooks. (A __getattribute__ raising
        # AttributeError for the name is traced wrong by torch 2.13 after
        # the recompile, under either engine.)
        def answer_false(self: Any, name: str) -> Any:
            return False if name == "compileable" else object.__getattribute__(self, name)

        self.check_cache(lambda s: setattr(type(cache_of(s)), "__getattribute__", answer_false), stock_stale=True)

    def test_instance_dict_entry_added(self):
        # The property is a data descriptor: the instance's entry never
        # answers, and neither engine recompiles.
        self.check_cache(lambda s: cache_of(s).__dict__.__setitem__("compileable", False), stock_stale=False)

    def test_subclass_overrides_property(self):
        def mutate(s: Any) -> None:
            class Disabled(type(cache_of(s))):
                compileable = property(raise_attribute_error)

            s.target.cache = Disabled()

        self.check_cache(mutate, stock_stale=False)


def tiny_gpt2() -> Any:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=32, attn_implementation="eager")
    model = GPT2Model(config).eval()
    return SimpleNamespace(target=model, ids=torch.randint(0, 128, (1, 8)))


def call_gpt2(model: Any, args: Any) -> Any:
    """The output, comparable: its form (dict or tuple), the hidden states,
    the attention maps if any, and the cache's layer count if any."""
    out = model(input_ids=args[0])
    if isinstance(out, tuple):
        form, hidden, rest = "tuple", out[0], out[1:]
    else:
        form, hidden = "dict", out.last_hidden_state
        rest = tuple(value for key, value in out.items() if key != "last_hidden_state")
    summary: list[Any] = [form, hidden]
    for value in rest:
        layers = getattr(value, "layers", None)
        summary.append(("cache", len(layers)) if layers is not None else value)
    return tuple(summary)


class TestTransformersConfig(TestCase):
    """A real transformers config (PretrainedConfig's ``__getattribute__``
    with ``attribute_map`` and the heterogeneity mixin), changed through
    the routes users take. Stock is right (it runs the chain on every
    check); the fork must recompile exactly when it does."""

    def check(self, mutate: Callable[[Any], None]) -> None:
        steps = [Step("first"), Step("again"), Step("mutated", mutate), Step("mutated again")]
        stock, fork = stock_and_fork(tiny_gpt2, call_gpt2, steps, lambda s: (s.ids,), grad_mode=False)
        report = f"\nstock: {stock}\nfork: {fork}"
        self.assertTrue(fork_used_everywhere(fork), fork.wrapper_types)
        self.assertEqual(fork.equal_to_eager, [True] * len(steps), "the fork returned a stale result" + report)
        self.assertEqual(stock.equal_to_eager, [True] * len(steps), report)
        self.assertEqual(fork.frame_counts, stock.frame_counts, report)
        self.assertGreater(fork.frame_counts[2], fork.frame_counts[1], "the fork did not recompile" + report)

    def test_property_with_setter_changed(self):
        self.check(lambda s: setattr(s.target.config, "output_attentions", True))

    def test_plain_value_changed(self):
        self.check(lambda s: setattr(s.target.config, "return_dict", False))

    def test_use_cache_changed(self):
        self.check(lambda s: setattr(s.target.config, "use_cache", False))

    def test_value_changed_through_mapped_name(self):
        # GPT2Config maps num_hidden_layers to n_layer (on reads and writes);
        # the cache the model builds has that many layers.
        self.check(lambda s: setattr(s.target.config, "num_hidden_layers", 3))


def fork_tree_of(model: nn.Module, x: torch.Tensor) -> str:
    """The fork's guard tree (format_tree) of ``model``'s one compiled frame."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    torch._dynamo.reset()
    with dynamo_guards.enabled():
        compiled = torch.compile(model, backend="eager")
        compiled(x)
    roots = [entry.guard_manager.root.fork_root for entry in _debug_get_cache_entry_list(type(model).forward.__code__)]
    torch._dynamo.reset()
    assert len(roots) == 1, roots
    return dynamo_guards.format_tree(roots[0])


class TestGuardShape(TestCase):
    def test_property_hasattr_runs_no_getter(self):
        """No accessor calls the property (torch's HASATTR); its lookup and
        getter are pinned instead."""
        tree = fork_tree_of(make_cache_model(), torch.ones(2))
        self.assertNotIn("GetAttrGuardAccessor(compileable)", tree)
        self.assertIn("L['self'].cache.compileable from class attribute on", tree)
        self.assertRegex(tree, r"FUNCTION_CODE_MATCH: .*make_cache_model\.<locals>\.Cache\.compileable keeps its __code__")
        self.assertIn("type(L['self'].cache) keeps its __getattribute__ chain and __getattr__", tree)

    def test_config_reads_run_no_python(self):
        """The fork's tree for Model reads the config's values through
        object.__getattribute__ and keeps no hasattr guard that runs the
        chain."""
        torch._dynamo.reset()
        model, x = Model(), torch.ones(2)
        roots: list[Any] = []
        with dynamo_guards.enabled():
            compiled = torch.compile(model, backend="eager")
            compiled(x)
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        for entry in _debug_get_cache_entry_list(type(model).forward.__code__):
            roots.append(entry.guard_manager.root.fork_root)
        torch._dynamo.reset()
        self.assertEqual(len(roots), 1)
        tree = dynamo_guards.format_tree(roots[0])
        self.assertIn("GenericGetAttrGuardAccessor(scale)", tree)
        self.assertIn("GenericGetAttrGuardAccessor(n_layer)", tree)
        self.assertIn("ATTRIBUTE_HOOKS_MATCH", tree)
        self.assertIn("object.__getattribute__(L['self'].config, 'extra') finds nothing", tree)
        self.assertNotIn("GetAttrGuardAccessor(scale)", tree.replace("GenericGetAttrGuardAccessor", ""))
        self.assertNotIn("NO_HASATTR", tree)


if __name__ == "__main__":
    run_tests()
