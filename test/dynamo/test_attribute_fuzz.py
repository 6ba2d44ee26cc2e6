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
* end to end, a compiled forward reading every name (and iterating an
  OrderedDict attribute and a global OrderedDict) equals eager after each
  mutation. The mutations include, besides the attribute collisions,
  replacing ``forward`` on a class, swapping a method's, classmethod's,
  staticmethod's or ``forward``'s ``__code__`` in place, registering a
  global module forward hook or pre-hook (removed at the end of the
  example), and reordering either OrderedDict with ``move_to_end``. The
  compiled target is the module itself or a function calling it.

``DYNAMO_GUARDS_FUZZ_EXAMPLES`` raises the budgets (docs/testing.md,
"Reliability", gives the longer command); each class prints the
number of examples run and of divergences found."""

# Owner(s): ["module: dynamo"]
from __future__ import annotations

import collections
import os
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch._dynamo
import torch.nn.modules.module as module_py
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
CLASS_KINDS = ("value", "tensor", "method", "property", "data_descriptor", "nondata_descriptor", "staticmethod", "classmethod")
TABLE_KEYS = ("p", "q", "r")
# A global OrderedDict the forward iterates (refilled by every build).
GLOBAL_TABLE: collections.OrderedDict[str, float] = collections.OrderedDict()
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
    if kind == "classmethod":
        return classmethod(lambda cls, x: x * 2 - k)
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
        # A function of its own: a __code__ swap must not reach later examples.
        base.forward = types.FunctionType(forward_reading_every_name.__code__, globals(), "forward")
        mod = base()
        mod.table = collections.OrderedDict((key, float(i + 2)) for i, key in enumerate(TABLE_KEYS))
        GLOBAL_TABLE.clear()
        GLOBAL_TABLE.update((key, float(i + 7)) for i, key in enumerate(TABLE_KEYS))
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
    # In order: each step halves what came before.
    for v in getattr(self, "table", {}).values():
        x = x * 0.5 + v
    for v in GLOBAL_TABLE.values():
        x = x * 0.5 - v
    return x


def forward_scaled_by(k: int) -> Callable[[nn.Module, torch.Tensor], torch.Tensor]:
    """A replacement ``forward`` for a class (what kernel-patching libraries
    do): reads every name, then scales."""

    def forward(self: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return forward_reading_every_name(self, x) * k

    return forward


def code_swapped_in(function: types.FunctionType, k: int) -> types.CodeType:
    """A code object ``function.__code__`` may be replaced by (the same
    arguments, as many free variables) that computes something else, as an
    edited source reloaded by %autoreload would."""
    code = function.__code__
    params = code.co_varnames[: code.co_argcount]
    x = params[-1]
    if function.__name__ == "forward":
        body = f"forward_reading_every_name({params[0]}, {x}) * 3 - {k}"
    else:
        body = f"{x} * 3 - {k}"
    cells = [f"v{i}" for i in range(len(code.co_freevars))]
    body += "".join(f" + 0 * ({cell} is None)" for cell in cells)
    source = f"def outer({', '.join(cells)}):\n    def f({', '.join(params)}):\n        return {body}\n    return f\n"
    namespace = dict(globals())
    exec(source, namespace)
    return namespace["outer"](*([None] * len(cells))).__code__


def global_forward_hook(module: nn.Module, args: Any, out: Any) -> Any:
    # torch's compiled wrapper runs module hooks itself, so a hook firing on
    # it would fire twice by torch's design.
    if isinstance(module, torch._dynamo.eval_frame.OptimizedModule) or not isinstance(out, torch.Tensor):
        return out
    return out * 2 + 1


def global_forward_pre_hook(module: nn.Module, args: Any) -> Any:
    if isinstance(module, torch._dynamo.eval_frame.OptimizedModule):
        return None
    return tuple(a - 1 if isinstance(a, torch.Tensor) else a for a in args)


# Handles of the global hooks registered by the current example.
GLOBAL_HOOK_HANDLES: list[Any] = []


def remove_global_hooks() -> None:
    while GLOBAL_HOOK_HANDLES:
        GLOBAL_HOOK_HANDLES.pop().remove()


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
        elif self.op == "swap_code":
            target = cls.__dict__.get("forward" if self.k % 2 else self.name)
            function = target.__func__ if isinstance(target, (classmethod, staticmethod)) else target
            if isinstance(function, types.FunctionType):
                function.__code__ = code_swapped_in(function, self.k)
        elif self.op == "global_hook":
            if self.k % 2:
                GLOBAL_HOOK_HANDLES.append(module_py.register_module_forward_hook(global_forward_hook))
            else:
                GLOBAL_HOOK_HANDLES.append(module_py.register_module_forward_pre_hook(global_forward_pre_hook))
        elif self.op == "reorder":
            table = GLOBAL_TABLE if self.level % 2 else mod.__dict__.get("table")
            if isinstance(table, collections.OrderedDict):
                table.move_to_end(TABLE_KEYS[len(self.name) % len(TABLE_KEYS)], last=self.k >= 0)
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
    "swap_code",
    "global_hook",
    "reorder",
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
    ops: collections.Counter[str] = field(default_factory=collections.Counter)  # mutations followed by a compared call


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
    @given(spec=module_spec, steps=mutations, through_function=st.booleans())
    def test_compiled_equals_eager_after_mutations(self, spec, steps, through_function):
        tally = CompiledForwardFuzzTests.tally
        tally.examples += 1
        divergences: list[str] = []
        torch._dynamo.reset()
        x = torch.arange(2.0)
        try:
            with dynamo_guards.enabled():
                mod = spec.build()
                counter = CompileCounter()
                if through_function:
                    # The frame calls the module like a submodule: the path
                    # that inlines ``type(mod).forward``.
                    def call(x: torch.Tensor) -> torch.Tensor:
                        return mod(x)

                    compiled = torch._dynamo.optimize(counter)(call)
                else:
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
                        divergences.append(f"{spec} then {steps} (through a function: {through_function}): compiled != eager after {step}")
                    tally.calls += 1
                    if step is not None:
                        tally.ops[step.op] += 1
                tally.frames += counter.frame_count
        finally:
            remove_global_hooks()
        tally.divergences += divergences
        self.assertEqual(divergences, [])

    @classmethod
    def tearDownClass(cls) -> None:
        t = cls.tally
        print(
            f"\nattribute fuzz (compiled): {t.examples} examples, {t.calls} calls compared with eager, "
            f"{t.frames} frames compiled, {len(t.divergences)} divergences; mutations compared: {dict(sorted(t.ops.items()))}"
        )
        super().tearDownClass()


if __name__ == "__main__":
    run_tests()
