"""Differential fuzzing of nn.Module attribute resolution.

Hypothesis builds random nn.Module class hierarchies and instances in which
the same few names collide across class attributes, methods, properties,
data and non-data descriptors, a custom ``__getattr__``, instance attributes,
parameters, buffers and submodules. For every name:

* the engine's module-attribute path (NNModuleAttrGuardAccessor, NO_HASATTR)
  must find the object ``getattr`` returns, or agree that there is none;
* after random mutations, a passing verdict must mean ``getattr`` still
  returns that object (never stale); a failing one where it does is counted
  as a spurious recompile;
* end to end, a compiled forward reading every name equals eager after each
  mutation.

``DYNAMO_GUARDS_FUZZ_EXAMPLES`` raises the budgets (the README's
"Reliability" section gives the longer command); each class prints the
number of examples run and of divergences found."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import os
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch._dynamo
from hypothesis import given, HealthCheck, settings, strategies as st
from torch import nn
from torch._dynamo.guards import GuardManagerType
from torch._dynamo.test_case import run_tests, TestCase
from torch._dynamo.testing import CompileCounter

import dynamo_guards
from dynamo_guards import _C as guards

PLAIN = GuardManagerType.GUARD_MANAGER
# 0: the suite's small budget, with a fixed seed so that CI is repeatable; a
# larger number draws fresh examples on every run.
FUZZ_EXAMPLES = int(os.environ.get("DYNAMO_GUARDS_FUZZ_EXAMPLES", "0"))
NAMES = ("a", "b", "c", "training2")
CLASS_KINDS = ("value", "tensor", "method", "property", "data_descriptor", "nondata_descriptor", "staticmethod")
INSTANCE_KINDS = ("dict", "parameter", "buffer", "module")


class Scale(nn.Module):
    def __init__(self, k: float) -> None:
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.k


class DataDescriptor:
    def __init__(self, value: Any) -> None:
        self.value = value

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self if obj is None else self.value

    def __set__(self, obj: Any, value: Any) -> None:
        self.value = value


class NonDataDescriptor:
    def __init__(self, value: Any) -> None:
        self.value = value

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self if obj is None else self.value


def class_member(kind: str, k: int) -> Any:
    """A class-level definition whose value, as read from an instance, is
    a number, a tensor or a callable taking and returning a tensor."""
    if kind == "value":
        return float(k)
    if kind == "tensor":
        return torch.full((2,), float(k))
    if kind == "method":
        return lambda self, x: x * k
    if kind == "property":
        value = float(k)  # one object: getattr returns the same one each time
        return property(lambda self: value)
    if kind == "data_descriptor":
        return DataDescriptor(float(k))
    if kind == "nondata_descriptor":
        return NonDataDescriptor(float(k))
    if kind == "staticmethod":
        return staticmethod(lambda x: x - k)
    raise ValueError(kind)


def custom_getattr(answers: str, k: int) -> Callable[[Any, str], Any]:
    answer = float(k)

    def __getattr__(self: Any, name: str) -> Any:
        if name == answers:
            return answer
        return nn.Module.__getattr__(self, name)

    return __getattr__


@dataclass
class ClassSpec:
    members: dict[str, str]
    getattr_answers: str | None


@dataclass
class ModuleSpec:
    classes: list[ClassSpec]
    instance: dict[str, list[str]]  # name -> where the instance holds it

    def build(self) -> nn.Module:
        base: type = nn.Module
        for level, spec in enumerate(self.classes):
            namespace: dict[str, Any] = {name: class_member(kind, 10 * level + i) for i, (name, kind) in enumerate(spec.members.items())}
            if spec.getattr_answers is not None:
                namespace["__getattr__"] = custom_getattr(spec.getattr_answers, 100 + level)
            base = type(f"Fuzzed{level}", (base,), namespace)
        base.forward = forward_reading_every_name
        mod = base()
        for i, (name, places) in enumerate(self.instance.items()):
            for place in places:
                place_on_instance(mod, place, name, 1000 + 10 * i + len(place))
        return mod


def place_on_instance(mod: nn.Module, place: str, name: str, k: int) -> None:
    """Writes straight into the dicts, so that every collision is possible."""
    if place == "dict":
        mod.__dict__[name] = float(k)
    elif place == "parameter":
        mod._parameters[name] = nn.Parameter(torch.full((2,), float(k)))
    elif place == "buffer":
        mod._buffers[name] = torch.full((2,), float(k))
    elif place == "module":
        mod._modules[name] = Scale(float(k))
    else:
        raise ValueError(place)


def remove_from_instance(mod: nn.Module, place: str, name: str) -> None:
    target = {"dict": mod.__dict__, "parameter": mod._parameters, "buffer": mod._buffers, "module": mod._modules}[place]
    target.pop(name, None)


def use(value: Any, x: torch.Tensor) -> torch.Tensor:
    if value is None:
        return x
    if isinstance(value, (int, float, torch.Tensor)):
        return x + value
    return value(x)


def forward_reading_every_name(self: nn.Module, x: torch.Tensor) -> torch.Tensor:
    for name in NAMES:
        x = use(getattr(self, name, None), x)
    return x


def forward_scaled_by(k: int) -> Callable[[nn.Module, torch.Tensor], torch.Tensor]:
    """A replacement ``forward`` for a class (what kernel-patching libraries
    do): reads every name, then scales."""

    def forward(self: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return forward_reading_every_name(self, x) * k

    return forward


# -- mutations ---------------------------------------------------------------


@dataclass
class Mutation:
    op: str
    name: str
    level: int
    kind: str
    k: int

    def apply(self, mod: nn.Module) -> None:
        classes = [c for c in type(mod).__mro__ if c.__name__.startswith("Fuzzed")]
        cls = classes[self.level % len(classes)] if classes else type(mod)
        if self.op == "set_class_member":
            setattr(cls, self.name, class_member(self.kind, self.k))
        elif self.op == "delete_class_member":
            if self.name in cls.__dict__:
                delattr(cls, self.name)
        elif self.op == "add_getattr":
            cls.__getattr__ = custom_getattr(self.name, self.k)
        elif self.op == "remove_getattr":
            if "__getattr__" in cls.__dict__:
                del cls.__getattr__
        elif self.op == "place":
            place_on_instance(mod, self.kind, self.name, self.k)
        elif self.op == "remove":
            remove_from_instance(mod, self.kind, self.name)
        elif self.op == "module_setattr":
            try:
                setattr(mod, self.name, float(self.k))
            except (AttributeError, TypeError):  # a property without a setter, a parameter slot
                pass
        elif self.op == "replace_forward":
            cls.forward = forward_scaled_by(self.k)
        elif self.op == "swap_class":
            mod.__class__ = type("Swapped", (type(mod),), {})
        else:
            raise ValueError(self.op)


OPS = (
    "set_class_member",
    "delete_class_member",
    "add_getattr",
    "remove_getattr",
    "place",
    "remove",
    "module_setattr",
    "replace_forward",
    "swap_class",
)

class_spec = st.builds(
    ClassSpec,
    members=st.dictionaries(st.sampled_from(NAMES), st.sampled_from(CLASS_KINDS), max_size=len(NAMES)),
    getattr_answers=st.one_of(st.none(), st.sampled_from(NAMES)),
)
module_spec = st.builds(
    ModuleSpec,
    classes=st.lists(class_spec, min_size=1, max_size=3),
    instance=st.dictionaries(st.sampled_from(NAMES), st.lists(st.sampled_from(INSTANCE_KINDS), max_size=3, unique=True), max_size=len(NAMES)),
)
mutation = st.builds(
    Mutation,
    op=st.sampled_from(OPS),
    name=st.sampled_from(NAMES),
    level=st.integers(0, 2),
    kind=st.one_of(st.sampled_from(CLASS_KINDS), st.sampled_from(INSTANCE_KINDS)),
    k=st.integers(-50, 50),
)


def fixed_kind(m: Mutation) -> Mutation:
    """Instance ops take an instance place, class ops a class kind."""
    if m.op in ("place", "remove") and m.kind not in INSTANCE_KINDS:
        m.kind = INSTANCE_KINDS[len(m.kind) % len(INSTANCE_KINDS)]
    if m.op == "set_class_member" and m.kind not in CLASS_KINDS:
        m.kind = CLASS_KINDS[len(m.kind) % len(CLASS_KINDS)]
    return m


mutations = st.lists(mutation.map(fixed_kind), min_size=1, max_size=4)

# -- the engine-level differential --------------------------------------------

MISSING = object()


def lookup(mod: nn.Module, name: str) -> Any:
    try:
        return getattr(mod, name)
    except AttributeError:
        return MISSING


def same_object(a: Any, b: Any) -> bool:
    """Identity, except that bound methods are made afresh on every read."""
    if isinstance(a, types.MethodType) and isinstance(b, types.MethodType):
        return a.__func__ is b.__func__ and a.__self__ is b.__self__
    return a is b


@dataclass
class Tally:
    examples: int = 0
    names_checked: int = 0
    divergences: list[str] = field(default_factory=list)
    spurious: int = 0
    calls: int = 0  # compiled calls compared with eager
    frames: int = 0  # frames compiled


def guard_on(mod: nn.Module, name: str, expected: Any) -> Any:
    """A finalized tree that passes iff the engine's path for ``mod.name``
    finds ``expected`` (or, for MISSING, finds nothing)."""
    root = guards.RootGuardManager()
    m = root.framelocals_manager(("m", 0), "L['m']", mod, PLAIN)
    m.add_type_match_guard(id(type(mod)), ["type(m) is M"], None)
    if expected is MISSING:
        m.add_no_hasattr_guard(name, [f"not hasattr(m, {name!r})"], None)
    else:
        child = m.nn_module_attr_manager(name, f"L['m'].{name}", expected, PLAIN, mod)
        child.add_lambda_guard(lambda value: same_object(value, expected), [f"m.{name} is expected"], None)
    root.finalize()
    return root


class AttributeResolutionFuzzTests(TestCase):
    tally = Tally()

    @settings(max_examples=FUZZ_EXAMPLES or 150, deadline=None, derandomize=not FUZZ_EXAMPLES, suppress_health_check=list(HealthCheck))
    @given(spec=module_spec, steps=mutations)
    def test_fast_path_agrees_with_getattr(self, spec, steps):
        tally = AttributeResolutionFuzzTests.tally
        tally.examples += 1
        divergences: list[str] = []
        mod = spec.build()
        roots = {}
        for name in NAMES:
            expected = lookup(mod, name)
            root = guard_on(mod, name, expected)
            for _ in range(2):  # the walk, then the memo's log
                if not root.check({"m": mod}):
                    divergences.append(f"{spec}: engine and getattr disagree on {name!r} before any mutation")
            roots[name] = (root, expected)
            tally.names_checked += 1
        for step in steps:
            step.apply(mod)
            for name, (root, expected) in roots.items():
                passed = root.check({"m": mod})
                now = lookup(mod, name)
                unchanged = now is MISSING if expected is MISSING else same_object(now, expected)
                if passed and not unchanged:
                    divergences.append(f"{spec} then {steps}: stale verdict for {name!r}")
                elif unchanged and not passed:
                    tally.spurious += 1
        tally.divergences += divergences
        self.assertEqual(divergences, [])

    @classmethod
    def tearDownClass(cls) -> None:
        t = cls.tally
        print(
            f"\nattribute fuzz (engine): {t.examples} examples, {t.names_checked} names, "
            f"{len(t.divergences)} divergences, {t.spurious} spurious failures"
        )
        super().tearDownClass()


class CompiledForwardFuzzTests(TestCase):
    tally = Tally()

    def setUp(self) -> None:
        super().setUp()
        torch._dynamo.reset()

    def tearDown(self) -> None:
        torch._dynamo.reset()
        super().tearDown()

    @settings(max_examples=(FUZZ_EXAMPLES // 10) or 15, deadline=None, derandomize=not FUZZ_EXAMPLES, suppress_health_check=list(HealthCheck))
    @given(spec=module_spec, steps=mutations)
    def test_compiled_equals_eager_after_mutations(self, spec, steps):
        tally = CompiledForwardFuzzTests.tally
        tally.examples += 1
        divergences: list[str] = []
        torch._dynamo.reset()
        x = torch.arange(2.0)
        with dynamo_guards.enabled():
            mod = spec.build()
            counter = CompileCounter()
            compiled = torch._dynamo.optimize(counter)(mod)
            for step in [None, *steps]:
                if step is not None:
                    step.apply(mod)
                try:
                    expected = mod(x)
                except Exception as e:  # a mutation can make eager itself fail
                    with self.assertRaises(type(e)):
                        compiled(x)
                    continue
                actual = compiled(x)
                if not (actual.shape == expected.shape and torch.allclose(actual, expected)):
                    divergences.append(f"{spec} then {steps}: compiled != eager after {step}")
                tally.calls += 1
            tally.frames += counter.frame_count
        tally.divergences += divergences
        self.assertEqual(divergences, [])

    @classmethod
    def tearDownClass(cls) -> None:
        t = cls.tally
        print(
            f"\nattribute fuzz (compiled): {t.examples} examples, {t.calls} calls compared with eager, "
            f"{t.frames} frames compiled, {len(t.divergences)} divergences"
        )
        super().tearDownClass()


if __name__ == "__main__":
    run_tests()
