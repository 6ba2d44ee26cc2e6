"""Guards on nn.Module attributes, read along Python's own lookup order
(upstream: ``GuardBuilder.getattr_on_nn_module`` in torch/_dynamo/guards.py).

torch 2.13 chooses, at build time only, between ``mod.__dict__[name]``,
``mod.__dict__['_parameters' | '_buffers' | '_modules'][name]`` and getattr,
and never re-checks that choice; a class attribute, property or
``object.__setattr__`` added later makes the compiled code silently keep the
old value. Here every module attribute is read by one
``NNModuleAttrGuardAccessor``, which follows the lookup order on every call
and re-plans when the class changes (torch/csrc/dynamo/attribute_resolution.h
states the soundness argument). The accessor's ``repr`` shows the path taken
at build time and, for every fallback to getattr, why.
"""

from __future__ import annotations

import types
from typing import Any, Callable

from dynamo_guards import _C


def getattr_on_nn_module(
    builder: Any,
    source: Any,
    base_guard_manager: Any,
    base_example_value: Any,
    example_value: Any,
    base_source_name: str,
    source_name: str,
    guard_manager_enum: Any,
) -> Any:
    """Drop-in for ``GuardBuilder.getattr_on_nn_module`` (same arguments)."""
    return base_guard_manager.nn_module_attr_manager(
        attr=source.member,
        source=source_name,
        example_value=example_value,
        guard_manager_enum=guard_manager_enum,
        example_module=base_example_value,
    )


# nn.Module.__getattr__'s order; Dynamo's trace reads the dicts itself.
MODULE_DICTS = ("_parameters", "_buffers", "_modules")


def python_module_dict_slot(module: Any, name: str) -> str | None:
    """Which of nn.Module's dicts answers ``module.name`` by Python's lookup
    (None when something else does). The reference the native guard must
    agree with."""
    cls = type(module)
    if cls.__getattribute__ is not object.__getattribute__:
        return None
    if getattr(cls, "__getattr__", None) is not nn_module_getattr():
        return None
    if any(name in vars(klass) for klass in cls.__mro__):
        return None
    instance_dict = getattr(module, "__dict__", None)
    if instance_dict is None or name in instance_dict:
        return None
    for key in MODULE_DICTS:
        sub = instance_dict.get(key)
        if type(sub) is dict and name in sub:
            return key
    return None


def nn_module_getattr() -> Any:
    import torch

    return torch.nn.Module.__getattr__


def install_leaf(
    builder: Any,
    guard: Any,
    code: str,
    add_native: Callable[[Any, list[str], Any], None],
) -> None:
    """Adds one guard on ``guard``'s manager, once per ``code``. Only the
    engine builds these guards: a frame left to stock torch loses them with
    the rest of the engine's trace-time guards (fallback.py)."""
    if code in builder.already_added_code_parts:
        return
    from torch._dynamo.guards import get_verbose_code_parts

    add_native(builder.get_guard_manager(guard), get_verbose_code_parts(code, guard), guard.user_stack)
    builder.already_added_code_parts.add(code)


def NN_MODULE_ATTR_RESOLUTION(builder: Any, guard: Any, *, name: str, dict_name: str) -> None:
    """Guard create function: ``guard.name`` (a module) keeps answering
    ``.name`` from ``dict_name``. See module_attr_guards.h."""
    module = builder.get(guard)
    if python_module_dict_slot(module, name) != dict_name:
        # The trace read a dict Python would not answer from (the trace's
        # view of the dicts differs from the module's, after a mutation the
        # trace made itself): nothing this guard could keep valid.
        return
    install_leaf(
        builder,
        guard,
        f"{guard.name}.{name} is {guard.name}.{dict_name}[{name!r}]",
        lambda m, parts, stack: m.add_nn_module_attr_resolution_guard(name, dict_name, parts, stack),
    )


def class_lookup(cls: type, name: str) -> tuple[type, Any] | None:
    """(defining class, object) for ``name`` in ``cls.__mro__``, as
    CPython's type lookup finds it; None when absent."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass, vars(klass)[name]
    return None


def inlined_code(attribute: Any) -> Any:
    """The code object the trace runs for a class attribute it inlines: a
    function's, a classmethod's function's or a property's getter's; None
    for anything else (function_code_match.h)."""
    if type(attribute) is classmethod:
        attribute = attribute.__func__
    elif type(attribute) is property:
        attribute = attribute.fget
    return attribute.__code__ if isinstance(attribute, types.FunctionType) else None


def FUNCTION_CODE_MATCH(builder: Any, guard: Any, attribute: Any, where: str) -> None:
    """Pins, once per frame, the code ``attribute`` (a function, a
    classmethod or a property found on a class as ``where``) runs, on the
    root manager. See function_code_match.h."""
    code = inlined_code(attribute)
    if code is None:
        return
    text = f"{where}: {code.co_qualname} keeps its __code__ (id {id(code):#x})"
    if text in builder.already_added_code_parts:
        return
    from torch._dynamo.guards import get_verbose_code_parts

    parts = get_verbose_code_parts(text, guard)
    builder.guard_manager.root.add_function_code_match_guard(attribute, parts, guard.user_stack)
    builder.already_added_code_parts.add(text)


def CLASS_ATTR_MATCH(builder: Any, guard: Any, *, name: str, inlined: bool = True) -> None:
    """Guard create function: ``type(guard.name)``'s MRO lookup of ``name``
    still finds the object the trace found (or an equal immutable constant).
    When the trace ran what it found (``inlined``: everywhere but torch's
    identity test of ``__call__``), a function or classmethod there also gets
    FUNCTION_CODE_MATCH. See module_attr_guards.h."""
    value = builder.get(guard)
    found = class_lookup(type(value), name)
    if found is None:
        return
    _install_found_attribute(builder, guard, name, found, "class", lambda m: m.add_class_attr_match_guard, inlined)


def _install_found_attribute(
    builder: Any, guard: Any, name: str, found: tuple[type, Any], where: str, add: Callable[[Any], Any], inlined: bool
) -> None:
    """The leaf ``add(manager)`` builds for ``name``, found as ``found``
    (owner, object) on a ``where`` ("class", "metaclass"), once per frame;
    and, when the trace ran what it found, FUNCTION_CODE_MATCH."""
    owner, expected = found
    owner_name = f"{owner.__module__}.{owner.__qualname__}"
    install_leaf(
        builder,
        guard,
        f"{guard.name}.{name} from {where} attribute on {owner_name}",
        lambda m, parts, stack: add(m)(name, expected, parts, stack),
    )
    if inlined:
        FUNCTION_CODE_MATCH(builder, guard, expected, f"{owner_name}.{name}")


def metaclass_lookup(cls: type, name: str) -> tuple[type, Any] | None:
    """(defining metaclass, object) when Python answers ``cls.name`` from
    ``type(cls)``'s MRO as a plain attribute or non-data descriptor: the
    class's own MRO lacks ``name`` and no data descriptor on the metaclass
    comes first, under type's own lookup (a metaclass with its own
    ``__getattribute__`` answers otherwise). None otherwise (the class
    answers, or nothing does)."""
    if type(cls).__getattribute__ is not type.__getattribute__ or class_lookup(cls, name) is not None:
        return None
    found = class_lookup(type(cls), name)
    if found is None:
        return None
    kind = type(found[1])
    if class_lookup(kind, "__set__") is not None or class_lookup(kind, "__delete__") is not None:
        return None
    return found


def METACLASS_ATTR_MATCH(builder: Any, guard: Any, *, name: str) -> None:
    """Guard create function for the trace's read of ``cls.name`` (``cls``
    is ``guard.name``) resolved on the metaclass: no class in ``cls``'s MRO
    gains ``name`` and the metaclass still answers with the object the
    trace found; a function there also gets FUNCTION_CODE_MATCH. See
    module_attr_guards.h."""
    cls = builder.get(guard)
    found = metaclass_lookup(cls, name) if isinstance(cls, type) else None
    if found is None:
        return
    _install_found_attribute(builder, guard, name, found, "metaclass", lambda m: m.add_metaclass_attr_match_guard, True)


def instance_shadows(value: Any, name: str) -> bool:
    """Whether Python answers ``value.name`` from the instance __dict__
    ahead of the class attribute ``name``, in the engine's own verdict
    (CLASS_ATTR_SHADOWED). A special method name never counts: Python
    looks those up on the type, past the instance."""
    if name.startswith("__") and name.endswith("__"):
        return False
    return bool(_C.CLASS_ATTR_SHADOWED(name, [""])(value))


def CLASS_ATTR_LOOKUP(builder: Any, guard: Any, *, name: str) -> None:
    """Guard create function for the trace's lookup of ``name`` on
    ``type(guard.name)``: CLASS_ATTR_SHADOWED when the instance __dict__
    answers first (the class attribute is then never used, and replacing it
    must not recompile), else CLASS_ATTR_MATCH."""
    value = builder.get(guard)
    if class_lookup(type(value), name) is None:
        return
    if not instance_shadows(value, name):
        CLASS_ATTR_MATCH(builder, guard, name=name)
        return
    install_leaf(
        builder,
        guard,
        f"{guard.name}.{name} is {guard.name}.__dict__[{name!r}], ahead of the class attribute",
        lambda m, parts, stack: m.add_class_attr_shadowed_guard(name, parts, stack),
    )


def NN_MODULE_CALL_PATH(builder: Any, guard: Any, *, call_impl_on_instance: bool) -> None:
    """Guard create function for torch's call of a module (``guard.name``),
    which decides without a guard that ``type(module).__call__`` and
    ``module._call_impl`` are nn.Module's own: the class still answers
    ``__call__`` and ``_call_impl`` with the objects the trace found
    (CLASS_ATTR_MATCH, by identity) and, when the trace found no
    ``_call_impl`` in the instance __dict__, there still is none (torch's
    NOT_PRESENT_IN_GENERIC_DICT). One guard per call rather than three: a
    large model calls a thousand modules, and every guard the trace records
    is an object the build sorts and visits."""
    from torch._dynamo.guards import GuardBuilder

    for name in ("__call__", "_call_impl"):
        CLASS_ATTR_MATCH(builder, guard, name=name, inlined=False)
    if not call_impl_on_instance:
        GuardBuilder.NOT_PRESENT_IN_GENERIC_DICT(builder, guard, attr="_call_impl")


def falls_through_to_getattr(value: Any, name: str) -> bool:
    """Whether Python answers ``value.name`` by calling a custom
    ``type(value).__getattr__``: neither the class (with its bases) nor the
    instance __dict__ has ``name``. nn.Module's own __getattr__ is left to
    NN_MODULE_ATTR_RESOLUTION."""
    cls = type(value)
    if cls.__getattribute__ is not object.__getattribute__:
        return False
    found = class_lookup(cls, "__getattr__")
    if found is None or found[1] is nn_module_getattr():
        return False
    return generically_absent(value, name)


def generically_absent(value: Any, name: str) -> bool:
    """Whether ``object.__getattribute__(value, name)`` finds nothing at
    all: no class of ``type(value)``'s MRO has ``name`` and the instance
    __dict__ (if any) lacks it."""
    if class_lookup(type(value), name) is not None:
        return False
    try:
        instance_dict = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return True
    return type(instance_dict) is dict and name not in instance_dict


def install_absence_leaf(builder: Any, guard: Any, name: str, code: str) -> None:
    """The leaf that fails once ``object.__getattribute__(guard.name, name)``
    would find something (GETATTR_FALLTHROUGH's, module_attr_guards.h)."""
    install_leaf(builder, guard, code, lambda m, parts, stack: m.add_getattr_fallthrough_guard(name, parts, stack))


def GETATTR_FALLTHROUGH(builder: Any, guard: Any, *, name: str) -> None:
    """Guard create function: ``guard.name``'s ``.name`` still reaches the
    class's custom __getattr__. See module_attr_guards.h."""
    value = builder.get(guard)
    if falls_through_to_getattr(value, name):
        install_absence_leaf(builder, guard, name, f"{guard.name}.{name} falls through to {type(value).__qualname__}.__getattr__")


def EMPTY_NN_MODULE_HOOKS_DICT(builder: Any, guard: Any) -> None:
    """Stands in for torch's create function of the same name while the
    engine builds a frame's guards: ``guard.name`` (``module._forward_hooks``
    and the like) is still an empty dict, checked by one
    ``NN_MODULE_HOOKS_EMPTY`` leaf on the module's manager. Torch builds a
    manager, an accessor and a length guard per hook dict, for the same
    verdict. Like stock torch's default (which skips these guards), it
    records no export info. See module_attr_guards.h."""
    from torch._dynamo.guards import GuardBuilder, get_verbose_code_parts
    from torch._dynamo.source import AttrSource

    source = guard.originating_source
    manager = builder.get_guard_manager_from_source(source.base) if isinstance(source, AttrSource) else None
    if not isinstance(manager, _C.GuardManager):
        GuardBuilder.EMPTY_NN_MODULE_HOOKS_DICT(builder, guard)
        return
    code = f"not {guard.name}"
    if code in builder.already_added_code_parts:
        return
    manager.add_nn_module_hooks_empty_guard(source.member, get_verbose_code_parts(code, guard), guard.user_stack)
    builder.already_added_code_parts.add(code)
