"""Where ``dynamo_guards._C`` differs from the running torch's ``torch._C._dynamo.guards`` (2.13, 2.14 or 2.15).

Both modules are introspected the same way: the public names, each class's
bases and members, the pybind signatures in ``__doc__`` (torch's bindings are
positional, so a call torch accepts is an argument list: the fork must take
the same count, each argument at least as widely typed, and return the same
type; keyword names torch gives must be the fork's too), and the text of
sample objects built by the same calls in both modules (accessor reprs,
returned types, failure reports, the printed tree).

``ALLOWED`` is the one list of differences the project keeps, each with its
reason; the "API differences from torch" table in docs/api-differences.md
is generated from the same entries and test_api_parity.py checks that the two
agree and that nothing else differs.

Run as a script to count the differences:
``python test/dynamo/api_parity.py`` (``--all`` lists the allowed ones too,
``--readme`` prints the docs/api-differences.md table).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sys
import types
from typing import Any, Callable, Iterator

import torch
import torch._dynamo.guards

# ---------------------------------------------------------------------------
# The allowed differences (key -> reason). Keys name what differs:
#   "missing: NAME"       torch has NAME (a module name or Class.member), the fork not
#   "signature: NAME"     a call torch's binding accepts is refused, or the return type differs
#   "not torch's object: NAME"  a non-pybind name that is not torch's own object
#   "bases: NAME"         the class hierarchy differs
#   "sample: NAME"        the sample built by the same calls prints differently
# ---------------------------------------------------------------------------
ALLOWED: dict[str, str] = {
    "not torch's object: dict_version": (
        "the engine's own reading of a dict's version (CPython's tag without the watcher bits on 3.12+); "
        "same contract as torch's (an int that changes whenever the dict's contents change), other values"
    ),
    "signature: DictGuardManager.dict_getitem_manager": (
        "torch rebinds the accessor methods its DictGuardManager refuses, with three arguments, only to raise; "
        "the fork's DictGuardManager keeps GuardManager's (it takes every accessor and leaf: the fork's own "
        "guards, CLASS_ATTR_MATCH and the like, also sit on dict subclass instances)"
    ),
    "signature: DictGuardManager.getitem_manager": "as DictGuardManager.dict_getitem_manager",
    "signature: DictGuardManager.global_weakref_manager": "as DictGuardManager.dict_getitem_manager",
    "signature: DictGuardManager.globals_dict_manager": "as DictGuardManager.dict_getitem_manager",
    "signature: DictGuardManager.lambda_manager": "as DictGuardManager.dict_getitem_manager",
    "signature: DictGuardManager.tuple_iterator_getitem_manager": "as DictGuardManager.dict_getitem_manager",
    "sample: check_verbose (aliased tensors)": (
        "relations are verified once the whole tree has passed (torch: as each participating value is reached), "
        "so a failing relation is reported after more guards ran: num_guards_executed is larger"
    ),
}

TORCH_MODULE = torch._C._dynamo.guards
MODULE_PREFIXES = ("torch._C._dynamo.guards.", "dynamo_guards._C.")
CPP_PREFIXES = ("torch::dynamo::(anonymous namespace)::", "torch::dynamo::", "dynamo_guards::")
# pybind's own members of every class it binds; not API.
PYBIND_MEMBERS = {"_pybind11_conduit_v1_"}
DUNDERS_THAT_ARE_API = {"__init__", "__call__", "__str__", "__repr__"}


# ---------------------------------------------------------------------------
# pybind signatures
# ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    type: str
    has_default: bool


@dataclasses.dataclass(frozen=True)
class Signature:
    params: tuple[Param, ...]
    returns: str

    @property
    def required(self) -> int:
        return sum(1 for p in self.params if not p.has_default)

    def __str__(self) -> str:
        args = ", ".join(f"{p.name}: {p.type}{' = ...' if p.has_default else ''}" for p in self.params)
        return f"({args}) -> {self.returns}"


def normalize_type(text: str) -> str:
    text = text.strip()
    for prefix in MODULE_PREFIXES + CPP_PREFIXES:
        text = text.replace(prefix, "")
    text = text.replace("typing.SupportsInt | typing.SupportsIndex", "int")
    text = text.replace("typing.SupportsFloat | typing.SupportsIndex", "float")
    text = text.replace("collections.abc.", "")
    return {"handle": "object"}.get(text, text)


def split_top_level(text: str) -> list[str]:
    """Splits ``a: x, b: dict[int, str]`` at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return [p.strip() for p in parts]


def parse_param(text: str) -> Param:
    head, _, default = text.partition(" = ")
    name, _, type_text = head.partition(": ")
    return Param(name.strip(), normalize_type(type_text or "object"), bool(default))


def pybind_signatures(obj: Any, name: str) -> list[Signature]:
    """Every overload pybind documents for ``obj`` (an empty list when it is
    not a pybind callable or has no constructor)."""
    doc = getattr(obj, "__doc__", None) or ""
    out = []
    pattern = re.compile(rf"^(?:\d+\. )?{re.escape(name)}\((.*)\) -> (.+)$")
    for line in doc.splitlines():
        match = pattern.match(line.strip())
        if match is None or match.group(1) == "*args, **kwargs":
            continue
        params = [parse_param(p) for p in split_top_level(match.group(1))]
        if params and params[0].name == "self":
            params = params[1:]
        out.append(Signature(tuple(params), normalize_type(match.group(2))))
    return out


def type_accepts(fork_type: str, torch_type: str) -> bool:
    return fork_type in (torch_type, "object")


def positional_name(name: str) -> bool:
    return re.fullmatch(r"arg\d+", name) is not None


def signature_accepts(fork: Signature, torch_sig: Signature) -> bool:
    """Whether every argument list ``torch_sig`` accepts is accepted by
    ``fork`` with the same return type."""
    if fork.returns != torch_sig.returns:
        return False
    if len(fork.params) < len(torch_sig.params) or fork.required > torch_sig.required:
        return False
    for f, t in zip(fork.params, torch_sig.params):
        if not type_accepts(f.type, t.type):
            return False
        if not positional_name(t.name) and f.name != t.name:
            return False
    return True


def signature_difference(fork_obj: Any, torch_obj: Any, name: str) -> str | None:
    torch_sigs = pybind_signatures(torch_obj, name)
    fork_sigs = pybind_signatures(fork_obj, name)
    refused = [t for t in torch_sigs if not any(signature_accepts(f, t) for f in fork_sigs)]
    if not refused:
        return None
    return f"torch {'; '.join(map(str, refused))} | fork {'; '.join(map(str, fork_sigs)) or 'none'}"


# ---------------------------------------------------------------------------
# Module introspection
# ---------------------------------------------------------------------------
def is_pybind_class(obj: Any) -> bool:
    return isinstance(obj, type) and type(obj).__name__ == "pybind11_type"


def is_pybind_function(obj: Any, name: str) -> bool:
    return isinstance(obj, types.BuiltinFunctionType) and bool(pybind_signatures(obj, name))


def public_names(module: types.ModuleType) -> list[str]:
    return sorted(n for n in dir(module) if not n.startswith("__"))


def class_bases(cls: type) -> list[str]:
    return [c.__name__ for c in cls.__mro__[1:] if c.__name__ not in ("object", "pybind11_object")]


def class_members(cls: type) -> list[str]:
    return sorted(
        n
        for n in vars(cls)
        if n not in PYBIND_MEMBERS and (not n.startswith("__") or n in DUNDERS_THAT_ARE_API)
    )


def compare_class(name: str, torch_cls: type, fork_cls: Any) -> Iterator[tuple[str, str]]:
    if not is_pybind_class(fork_cls):
        yield f"not torch's object: {name}", f"fork's {name} is {fork_cls!r}"
        return
    if class_bases(torch_cls) != class_bases(fork_cls):
        yield f"bases: {name}", f"torch {class_bases(torch_cls)} | fork {class_bases(fork_cls)}"
    for member in class_members(torch_cls):
        qualified = f"{name}.{member}"
        torch_member = vars(torch_cls)[member]
        if not hasattr(fork_cls, member):
            yield f"missing: {qualified}", "absent from the fork"
            continue
        fork_member = getattr(fork_cls, member)
        if isinstance(torch_member, property):
            if not isinstance(fork_member, property):
                yield f"signature: {qualified}", "a property in torch, not in the fork"
            continue
        difference = signature_difference(fork_member, torch_member, member)
        if difference is not None:
            yield f"signature: {qualified}", difference


def api_differences(fork_module: types.ModuleType) -> Iterator[tuple[str, str]]:
    """(key, detail) for every name, member and signature of torch's module
    the fork does not match."""
    for name in public_names(TORCH_MODULE):
        torch_obj = getattr(TORCH_MODULE, name)
        if not hasattr(fork_module, name):
            yield f"missing: {name}", "absent from the fork"
            continue
        fork_obj = getattr(fork_module, name)
        if is_pybind_class(torch_obj):
            yield from compare_class(name, torch_obj, fork_obj)
        elif is_pybind_function(torch_obj, name):
            difference = signature_difference(fork_obj, torch_obj, name)
            if difference is not None:
                yield f"signature: {name}", difference
        elif fork_obj is not torch_obj:
            yield f"not torch's object: {name}", f"torch {torch_obj!r} | fork {fork_obj!r}"


# ---------------------------------------------------------------------------
# Samples: the same calls in both modules, compared as text
# ---------------------------------------------------------------------------
ADDRESS = re.compile(r"0x[0-9a-f]+")


def normalize_text(text: str) -> str:
    for prefix in MODULE_PREFIXES:
        text = text.replace(prefix, "guards.")
    return ADDRESS.sub("0x?", text)


class SampleValues:
    """Values the sample trees guard; one set shared by both modules so that
    reprs naming them agree."""

    def __init__(self) -> None:
        self.tensor = torch.zeros(2, 3)
        self.weak_tensor = torch.zeros(1)
        self.globals = {"w": __import__("weakref").ref(self.weak_tensor), "g": 1}

        def fn(a: int, b: int = 2, *, c: int = 3) -> int:
            return a + b + c

        self.fn = fn
        self.lambda_key = lambda x: x


# (method, key arguments) for every accessor a GuardManager can create.
ACCESSOR_CALLS: list[tuple[str, tuple[Any, ...]]] = [
    ("framelocals_manager", (("x", 0),)),
    ("dict_getitem_manager", ("k",)),
    ("dict_getitem_manager", (3,)),
    ("getitem_manager", ("k",)),
    ("getitem_manager", (3,)),
    ("list_getitem_manager", (1,)),
    ("tuple_getitem_manager", (2,)),
    ("indexed_manager", (2,)),
    ("tensor_property_size_manager", (0,)),
    ("tensor_property_stride_manager", (1,)),
    ("tensor_property_storage_offset_manager", (None,)),
    ("func_defaults_manager", ()),
    ("func_kwdefaults_manager", ()),
    ("type_manager", ()),
    ("type_dict_manager", ()),
    ("type_mro_manager", ()),
    ("weakref_call_manager", ()),
    ("call_function_no_args_manager", ()),
    ("tuple_iterator_getitem_manager", (1,)),
    ("set_getitem_manager", (0,)),
    ("code_manager", ()),
    ("closure_manager", ()),
    ("grad_manager", ()),
    ("get_generic_dict_manager", ()),
    ("generic_getattr_manager", ("y",)),
    ("getattr_manager", ("x",)),
]


Sample = Callable[[], str]


def accessor_sample(module: types.ModuleType, method: str, key: tuple[Any, ...]) -> str:
    plain = torch._dynamo.guards.GuardManagerType.GUARD_MANAGER
    root = module.RootGuardManager()
    child = getattr(root, method)(*key, f"S[{method}]", 1, plain)
    (accessor,) = root.get_accessors()
    return f"{type(accessor).__name__} {accessor.repr()} -> {type(child).__name__} {child.get_source()}"


# (method, key arguments, a parent value the accessor cannot read) for the
# accessors torch reports in words of its own. (Values torch's accessors
# read as the wrong type without checking, e.g. a tuple iterator, are left
# out: torch crashes on them.)
ACCESS_FAILURE_CALLS: list[tuple[str, tuple[Any, ...], Any]] = [
    ("framelocals_manager", (("x", 0),), {}),
    ("dict_getitem_manager", ("k",), {}),
    ("getitem_manager", ("k",), {}),
    ("list_getitem_manager", (5,), [1]),
    ("tuple_getitem_manager", (5,), (1,)),
    ("tensor_property_size_manager", (5,), torch.zeros(1)),
    ("tensor_property_stride_manager", (5,), torch.zeros(1)),
    ("tensor_property_storage_offset_manager", (None,), 1),
    ("func_defaults_manager", (), 1),
    ("func_kwdefaults_manager", (), 1),
    ("code_manager", (), 1),
    ("closure_manager", (), 1),
    ("weakref_call_manager", (), 1),
    ("call_function_no_args_manager", (), 1),
    ("grad_manager", (), 1),
    ("get_generic_dict_manager", (), 1),
    ("generic_getattr_manager", ("y",), 1),
    ("getattr_manager", ("y",), 1),
]


def access_failure_sample(module: types.ModuleType, method: str, key: tuple[Any, ...], parent: Any) -> str:
    plain = torch._dynamo.guards.GuardManagerType.GUARD_MANAGER
    root = module.RootGuardManager()
    getattr(root, method)(*key, "SRC", 1, plain).add_lambda_guard(lambda v: True, ["child"], None)
    return str(root.check_verbose(parent))


def raising_lambda_accessor_sample(module: types.ModuleType) -> str:
    def raising(value: Any) -> Any:
        raise AssertionError("raised by the accessor's callable")

    root = module.RootGuardManager()
    root.lambda_manager(raising, "SRC", None, torch._dynamo.guards.GuardManagerType.GUARD_MANAGER)
    return str(root.check_verbose(None))


def globals_accessor_sample(module: types.ModuleType, values: SampleValues) -> str:
    plain = torch._dynamo.guards.GuardManagerType.GUARD_MANAGER
    root = module.RootGuardManager()
    root.globals_dict_manager(values.globals, "G", None, plain).global_weakref_manager("w", "G['w']", None, plain)
    (globals_accessor,) = root.get_accessors()
    (weakref_accessor,) = root.get_child_managers()[0].get_accessors()
    return f"{globals_accessor.repr()} {weakref_accessor.repr()}"


def lambda_accessor_sample(module: types.ModuleType, values: SampleValues) -> str:
    plain = torch._dynamo.guards.GuardManagerType.GUARD_MANAGER
    root = module.RootGuardManager()
    root.lambda_manager(values.lambda_key, "lambda", None, plain)
    (accessor,) = root.get_accessors()
    return f"{type(accessor).__name__} {accessor.repr()}"


def leaf_constructor_calls(values: SampleValues) -> dict[str, tuple[Callable[[Any, Any], Any], tuple[Any, ...]]]:
    """torch's constructor call for every leaf guard class torch can build,
    and values to call the guard on (of the types the builder puts the guard
    behind: torch's leaves assume their value's type was checked before)."""
    parts = ["sample"]
    tensors = (values.tensor, torch.zeros(3), torch.zeros(2, 3, dtype=torch.int64))
    return {
        "TYPE_MATCH": (lambda m, r: m.TYPE_MATCH(r, id(int), parts, None), (5, "a", True)),
        "ID_MATCH": (lambda m, r: m.ID_MATCH(r, id(values), parts, None), (values, 5)),
        "EQUALS_MATCH": (lambda m, r: m.EQUALS_MATCH(r, 5, parts, None), (5, 4, 5.0)),
        "NONE_MATCH": (lambda m, r: m.NONE_MATCH(r, parts, None), (None, 0)),
        "NOT_NONE": (lambda m, r: m.NOT_NONE(r, parts, None), (None, 0)),
        "TRUE_MATCH": (lambda m, r: m.TRUE_MATCH(r, parts, None), (True, 1)),
        "FALSE_MATCH": (lambda m, r: m.FALSE_MATCH(r, parts, None), (False, 0)),
        "LENGTH_CHECK": (lambda m, r: m.LENGTH_CHECK(r, 2, parts, None), ([1, 2], [1])),
        "DICT_LENGTH": (lambda m, r: m.DICT_LENGTH(r, 1, parts, None), ({"a": 1}, {})),
        "TUPLE_ITERATOR_LEN": (
            lambda m, r: m.TUPLE_ITERATOR_LEN(r, 2, id(type(iter(()))), parts, None),
            (iter((1, 2)), iter((1,))),
        ),
        "RANGE_ITERATOR_MATCH": (
            lambda m, r: m.RANGE_ITERATOR_MATCH(r, 0, 4, 1, id(type(iter(range(1)))), parts, None),
            (iter(range(4)), iter(range(5))),
        ),
        "FLOAT_IS_NAN": (lambda m, r: m.FLOAT_IS_NAN(r, parts, None), (float("nan"), 1.0)),
        "COMPLEX_IS_NAN": (lambda m, r: m.COMPLEX_IS_NAN(r, parts, None), (complex("nan"), 1j)),
        "DEFAULT_DEVICE": (lambda m, r: m.DEFAULT_DEVICE(r, parts, None), (None,)),
        "DICT_CONTAINS": (lambda m, r: m.DICT_CONTAINS(r, True, "a", parts, None), ({"a": 1}, {})),
        "SET_CONTAINS": (lambda m, r: m.SET_CONTAINS(r, True, "a", parts, None), ({"a"}, set())),
        "DICT_VERSION": (lambda m, r: m.DICT_VERSION(r, values.globals, parts, None), (values.globals, {})),
        "NO_HASATTR": (lambda m, r: m.NO_HASATTR(r, "tensor", parts, None), (values, object())),
        "MAPPING_KEYS_MATCH": (
            lambda m, r: m.MAPPING_KEYS_MATCH(r, {"a": 1}, parts, None),
            (types.MappingProxyType({"a": 2}), types.MappingProxyType({"b": 1})),
        ),
        "DIMENSION_DYNAMIC_MARKING_GUARD": (
            lambda m, r: m.DIMENSION_DYNAMIC_MARKING_GUARD(r, {}, [], {}, parts, None),
            tensors,
        ),
        "DISPATCH_KEY_SET_MATCH": (
            lambda m, r: m.DISPATCH_KEY_SET_MATCH(r, torch._C._dispatch_keys(values.tensor), parts, None),
            tuple(torch._C._dispatch_keys(t) for t in tensors + (torch.zeros(1, requires_grad=True),)),
        ),
        "DUAL_LEVEL_MATCH": (lambda m, r: m.DUAL_LEVEL_MATCH(r, 0, parts, None), tensors),
        "FAKE_SCRIPT_TYPE_MATCH": (lambda m, r: m.FAKE_SCRIPT_TYPE_MATCH(r, int, id(int), parts, None), ()),
        "LAMBDA_GUARD": (lambda m, r: m.LAMBDA_GUARD(r, lambda x: x == 5, parts, None), (5, 4)),
        "GLOBAL_STATE": (lambda m, r: m.GLOBAL_STATE(r, parts, None), (None,)),
        "TORCH_FUNCTION_MODE_STACK": (lambda m, r: m.TORCH_FUNCTION_MODE_STACK(r, [], parts, None), (None,)),
        "TENSOR_MATCH": (
            lambda m, r: m.TENSOR_MATCH(
                r,
                values.tensor,
                list(values.tensor.size()),
                list(values.tensor.stride()),
                "t",
                parts,
                None,
                type(values.tensor),
                torch._C._dispatch_keys(values.tensor),
            ),
            tensors,
        ),
    }


def leaf_sample(
    module: types.ModuleType, build: Callable[[Any, Any], Any], probes: tuple[Any, ...]
) -> str:
    guard = build(module, module.RootGuardManager())
    verdicts = "".join("T" if guard(p) else "F" for p in probes)
    return f"{normalize_text(repr(guard))} {guard.verbose_code_parts()} {verdicts}"


def global_state_sample(module: types.ModuleType) -> str:
    guard = module.GLOBAL_STATE(module.RootGuardManager(), ["global state"], None)
    passing = str(guard.check_verbose(None))
    with torch.set_grad_enabled(not torch.is_grad_enabled()):
        return passing + str(guard.check_verbose(None))


def debug_info_sample(module: types.ModuleType, args: tuple[Any, ...]) -> str:
    info = module.GuardDebugInfo(*args)
    return f"{normalize_text(repr(info))} {info} {info.result} {info.verbose_code_parts} {info.user_stack}"


def sample_tree(module: types.ModuleType, values: SampleValues) -> Any:
    """A small tree with leaves, nested accessors, a dict manager, relations
    and an epilogue guard."""
    plain = torch._dynamo.guards.GuardManagerType.GUARD_MANAGER
    as_dict = torch._dynamo.guards.GuardManagerType.DICT_GUARD_MANAGER
    root = module.RootGuardManager()
    x = root.framelocals_manager(("x", 0), "L['x']", values.tensor, plain)
    x.add_type_match_guard(id(torch.Tensor), ["type(L['x']) == Tensor"], None)
    y = root.framelocals_manager(("y", 1), "L['y']", values.tensor, plain)
    d = root.framelocals_manager(("d", 2), "L['d']", {"a": 1}, as_dict)
    d.add_dict_length_check_guard(1, ["len(L['d']) == 1"], None)
    d.get_value_manager(0, "L['d']['a']", 1, plain).add_equals_match_guard(1, "L['d']['a'] == 1", None)
    p = root.framelocals_manager(("p", 3), "L['p']", values, plain)
    p.getattr_manager("tensor", "L['p'].tensor", values.tensor, plain).add_lambda_guard(
        lambda t: t.dim() == 2, ["L['p'].tensor.dim() == 2"], None
    )
    module.install_no_tensor_aliasing_guard([x, y], ["L['x']", "L['y']"], ["check_no_aliasing(L['x'], L['y'])"], None)
    module.install_object_aliasing_guard(x, p, ["L['x'] is L['p']"], None)
    root.add_epilogue_lambda_guard(lambda f_locals: True, ["epilogue"], None)
    return root


def tree_text(wrapper_type: type, root: Any, values: SampleValues) -> str:
    return normalize_text(str(wrapper_type(root)).replace(type(values).__qualname__, "SampleValues"))


def relational_leaves_sample(module: types.ModuleType, values: SampleValues) -> str:
    root = sample_tree(module, values)
    x, y = root.get_child_managers()[:2]
    (alias_x, object_x), (alias_y,) = x.get_leaf_guards()[1:], y.get_leaf_guards()
    return (
        f"{type(alias_x).__name__} {type(object_x).__name__} shared={alias_x is alias_y} "
        f"{alias_x.verbose_code_parts()} bases={class_bases(type(alias_x))}"
    )


def check_verbose_sample(module: types.ModuleType, values: SampleValues, f_locals: dict[str, Any]) -> str:
    return str(sample_tree(module, values).check_verbose(f_locals))


def clone_sample(module: types.ModuleType, values: SampleValues, wrapper_type: type) -> str:
    root = sample_tree(module, values)
    clone = root.clone_manager(lambda mgr: mgr.get_source() != "L['d']")
    return tree_text(wrapper_type, clone, values)


def sample_calls(module: types.ModuleType, wrapper_type: type, values: SampleValues) -> dict[str, Sample]:
    calls: dict[str, Sample] = {}
    for method, key in ACCESSOR_CALLS:
        calls[f"accessor {method}{key!r}"] = functools.partial(accessor_sample, module, method, key)
    calls["accessor globals_dict_manager/global_weakref_manager"] = lambda: globals_accessor_sample(module, values)
    calls["accessor lambda_manager"] = lambda: lambda_accessor_sample(module, values)
    for method, key, parent in ACCESS_FAILURE_CALLS:
        calls[f"access failure {method}"] = functools.partial(access_failure_sample, module, method, key, parent)
    calls["access failure lambda_manager"] = lambda: raising_lambda_accessor_sample(module)
    for name, (build, probes) in leaf_constructor_calls(values).items():
        calls[f"leaf {name}"] = functools.partial(leaf_sample, module, build, probes)
    calls["GLOBAL_STATE.check_verbose"] = lambda: global_state_sample(module)
    calls["GuardDebugInfo(3 args)"] = lambda: debug_info_sample(module, (False, ["x == 1"], 3))
    calls["GuardDebugInfo(4 args)"] = lambda: debug_info_sample(module, (True, [], 0, "stack"))
    calls["tree text"] = lambda: tree_text(wrapper_type, sample_tree(module, values), values)
    calls["relational leaves"] = lambda: relational_leaves_sample(module, values)
    aliased = {"x": values.tensor, "y": values.tensor, "d": {"a": 1}, "p": values}
    calls["check_verbose (aliased tensors)"] = lambda: check_verbose_sample(module, values, aliased)
    changed = {"x": values.tensor, "y": torch.zeros(2, 3), "d": {"a": 2}, "p": values}
    calls["check_verbose (dict value)"] = lambda: check_verbose_sample(module, values, changed)
    calls["clone_manager"] = lambda: clone_sample(module, values, wrapper_type)
    return calls


def run_sample(sample: Sample) -> str:
    try:
        return sample()
    except Exception as e:  # noqa: BLE001 - a call the fork refuses is a difference
        # The message is the implementation's; that both refuse is the API.
        return f"raised {type(e).__name__}"


def sample_differences(fork_module: types.ModuleType, fork_wrapper_type: type) -> Iterator[tuple[str, str]]:
    values = SampleValues()
    expected = sample_calls(TORCH_MODULE, torch._dynamo.guards.GuardManagerWrapper, values)
    actual = sample_calls(fork_module, fork_wrapper_type, values)
    for key, torch_sample in expected.items():
        torch_text, fork_text = run_sample(torch_sample), run_sample(actual[key])
        if torch_text != fork_text:
            yield f"sample: {key}", f"torch {torch_text!r}\n        fork  {fork_text!r}"


def all_differences() -> dict[str, str]:
    import dynamo_guards._C as fork_module
    from dynamo_guards.guard_manager_wrapper import ForkGuardManagerWrapper

    out = dict(api_differences(fork_module))
    out.update(sample_differences(fork_module, ForkGuardManagerWrapper))
    return out


def readme_table() -> str:
    """The table of allowed differences in docs/api-differences.md, generated from ALLOWED."""
    rows = ["| difference | reason |", "|---|---|"]
    rows += [f"| `{key}` | {reason} |" for key, reason in ALLOWED.items()]
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    if "--readme" in argv:
        print(readme_table())
        return 0
    differences = all_differences()
    unexplained = {k: v for k, v in differences.items() if k not in ALLOWED}
    shown = differences if "--all" in argv else unexplained
    for key, detail in sorted(shown.items()):
        marker = "allowed" if key in ALLOWED else "DIFFERS"
        print(f"[{marker}] {key}\n        {detail}")
    print(f"{len(differences)} API differences from torch, {len(differences) - len(unexplained)} of them listed in docs/api-differences.md")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
