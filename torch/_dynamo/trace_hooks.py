"""Guards Dynamo's trace forgets (upstream: torch/_dynamo/variables/nn_module.py
and user_defined.py).

When Dynamo traces ``module.name`` that Python answers through
nn.Module.__getattr__, it reads ``module._modules['name']`` (or _parameters /
_buffers) directly and guards only that dict entry, not the facts that made
__getattr__ the one to answer. While the fork is installed, the dicts are
read in nn.Module.__getattr__'s order (_parameters, _buffers, _modules;
torch reads _modules before _buffers), and every such read also installs
NN_MODULE_ATTR_RESOLUTION on the module, which fails as soon as Python would
find ``name`` anywhere else.

When neither the class nor the instance has ``name`` and the class defines
its own __getattr__, the trace calls that __getattr__ and torch guards only
what it read; the fork also installs GETATTR_FALLTHROUGH, which fails as soon
as the class or the instance starts answering ``name`` itself.

Likewise, when the trace finds ``name`` on ``type(obj)`` (a method, a
property, a class constant), torch guards only ``type(obj)`` by id; while the
fork is installed the lookup also installs CLASS_ATTR_MATCH, which fails when
the class (or a base) no longer answers with that object, and, for a
function, classmethod or property with a Python getter, FUNCTION_CODE_MATCH
(once per function per frame), which fails when it runs another
``__code__`` (or, for a property, another getter). When the instance __dict__ shadows a
class attribute that is not a data descriptor, the trace takes the instance's
value (which torch guards) and the class attribute does not matter: the
lookup installs CLASS_ATTR_SHADOWED instead, which fails only when the
shadowing ends. A class attribute the trace goes on to use after all (its
resolve_type_attr step, e.g. once the trace deleted the instance attribute)
gets CLASS_ATTR_MATCH there.

When the trace reads ``cls.name`` on a class and Python's lookup answers from
the metaclass (no class in ``cls.__mro__`` has ``name``; the metaclass's
is not a data descriptor), torch guards nothing about either fact; the fork
installs METACLASS_ATTR_MATCH on ``cls``, which fails when the metaclass
stops answering with that object or a class in the MRO gains ``name``.

When the trace finds a global name in builtins (``max``, ``len``), torch
guards the builtins dict entry only; the fork also guards that the globals
the read searched first still lack the name (builtin_names.py).

When the trace decides whether a list, dict, set or tuple subclass keeps
its base type's dunder (``_maybe_get_baseclass_method``: ``obj[i]``,
``x in obj``, ``iter(obj)``, ``len(obj)``; torch 2.15 decides most of them
there, through ``inspect.getattr_static``), torch guards only the type's
identity; the fork installs the same guard as for a class attribute lookup,
so a dunder the subclass gains after compiling recompiles. (Some of these
reads also go through ``lookup_class_mro_attr``, on some interpreters and
releases, which is why the gap shows only on some configurations.)

When the trace calls a module, torch 2.13 compares ``type(module).__call__``
and ``module._call_impl`` with nn.Module's own and, when they are and the
module has no hooks, takes ``type(module).forward`` straight from the class,
checking without a guard that the global module hook dicts are empty;
otherwise it inlines ``type(module).__call__``. Neither read is guarded.
While the fork is installed that call also installs NN_MODULE_CALL_PATH:
CLASS_ATTR_MATCH on ``__call__`` and ``_call_impl`` (a class patched after
compiling; identity is what torch compared) and a guard that the instance
__dict__ holds no ``_call_impl`` (an instance patched after compiling),
EMPTY_NN_MODULE_HOOKS_DICT on each empty global hook dict (a global hook
registered after compiling), and CLASS_ATTR_MATCH plus FUNCTION_CODE_MATCH
on the class attribute torch inlines (``forward`` or ``__call__``, the name
whose source it takes from the class).

When the trace runs a class's own ``__getattribute__`` chain and reaches
``super().__getattribute__(name)``, the read and its outcome are recorded
and the chain's functions pinned (ATTRIBUTE_HOOKS_MATCH, GENERIC_ATTR_ABSENT;
traced_getattribute.py), as is a ``hasattr`` the chain answered; the engine
then reads those values through ``object.__getattribute__``. A ``hasattr``
the trace answered True by inlining a property's Python getter keeps no
HASATTR guard either: the getter's lookup and code are pinned instead
(traced_getattribute.py). When the trace
tests an instance ``__dict__`` for a key or reads its keys, which torch
leaves unguarded, the fork guards that (instance_dict_reads.py).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch.nn.modules.module as module_py
from torch._dynamo.exc import ObservedAttributeError
from torch._dynamo.guards import GuardBuilder, install_guard
from torch._dynamo.source import AttrSource
from torch._dynamo.symbolic_convert import InstructionTranslator, InstructionTranslatorBase
from torch._dynamo.variables.builder import SourcelessBuilder
from torch._dynamo.variables.dicts import DunderDictVariable
from torch._dynamo.variables.nn_module import UnspecializedNNModuleVariable
from torch._dynamo.variables.user_defined import (
    NO_SUCH_SUBOBJ,
    UserDefinedClassVariable,
    UserDefinedObjectVariable,
    UserDefinedVariable,
)

from dynamo_guards.builtin_names import absence_guard
from dynamo_guards.instance_dict_reads import guard_keys, guard_membership
from dynamo_guards.nn_module_attributes import (
    CLASS_ATTR_LOOKUP,
    CLASS_ATTR_MATCH,
    falls_through_to_getattr,
    GETATTR_FALLTHROUGH,
    METACLASS_ATTR_MATCH,
    metaclass_lookup,
    MODULE_DICTS,
    NN_MODULE_ATTR_RESOLUTION,
    NN_MODULE_CALL_PATH,
)
from dynamo_guards.torch_release import CLASS_GETATTR_METHOD
from dynamo_guards.traced_getattribute import (
    answered_by_property_getter,
    guard_attribute_hooks,
    guard_generic_failure,
    read_through_super,
    record_generic_read,
    record_hasattr,
)

# (class, method name) -> the method the fork's hook replaced.
_originals: dict[tuple[type, str], Callable[..., Any]] = {}


def _original(owner: type, name: str) -> Callable[..., Any]:
    return _originals[(owner, name)]


# The dicts of torch/nn/modules/module.py that UnspecializedNNModuleVariable
# .call_function reads through len() before it inlines ``forward``.
GLOBAL_MODULE_HOOK_DICTS = (
    "_global_backward_pre_hooks",
    "_global_backward_hooks",
    "_global_forward_hooks",
    "_global_forward_pre_hooks",
)


# NN_MODULE_CALL_PATH's create functions, by whether the instance __dict__
# held a ``_call_impl`` when the trace called the module (shared objects:
# a guard's hash includes its create function's identity).
NN_MODULE_CALL_PATHS = {
    on_instance: functools.partial(NN_MODULE_CALL_PATH, call_impl_on_instance=on_instance) for on_instance in (False, True)
}


def _manually_trace_nn_module_getattr(self: Any, tx: Any, name: str) -> Any:
    """Reads ``module.name`` from the module's dicts in nn.Module.__getattr__'s
    own order (torch 2.13 reads _modules before _buffers, so a name in both
    traced the submodule where Python returns the buffer)."""
    name_vt = SourcelessBuilder.create(tx, name)
    for dict_name in MODULE_DICTS:
        out = self.getattr_helper(tx, dict_name, name_vt)
        if out is not None:
            break
    else:
        return _original(UnspecializedNNModuleVariable, "manually_trace_nn_module_getattr")(self, tx, name)  # raises AttributeError as torch does
    if self.source is not None:
        create = functools.partial(NN_MODULE_ATTR_RESOLUTION, name=name, dict_name=dict_name)
        install_guard(self.source.make_guard(create))
    return out


def _lookup_class_mro_attr(self: Any, name: str) -> object:
    first_lookup = name not in self._subobj_from_class
    result = _original(UserDefinedObjectVariable, "lookup_class_mro_attr")(self, name)
    if first_lookup and result is not NO_SUCH_SUBOBJ and self.source is not None:
        install_guard(self.source.make_guard(functools.partial(CLASS_ATTR_LOOKUP, name=name)))
    return result


def _base_class_method(self: Any, name: str) -> Any:
    """The trace asks which object ``type(obj)`` answers ``name`` with
    (``inspect.getattr_static``), to decide whether a list, dict, set or
    tuple subclass keeps its base type's ``__getitem__``, ``__contains__``,
    ``__iter__``, ``__len__``, ... and so whether the compiled code uses the
    base type's semantics; torch guards only ``type(obj)`` by id. The same
    guard as a class attribute lookup (CLASS_ATTR_LOOKUP), once per name
    and variable."""
    result = _original(UserDefinedVariable, "_maybe_get_baseclass_method")(self, name)
    if result is not None and self.source is not None and isinstance(self, UserDefinedObjectVariable):
        guarded = self.__dict__.setdefault(_BASE_SLOT_NAMES_GUARDED, set())
        if name not in guarded:
            guarded.add(name)
            install_guard(self.source.make_guard(functools.partial(CLASS_ATTR_LOOKUP, name=name)))
    return result


# Attribute of a UserDefinedObjectVariable: the names _base_class_method guarded.
_BASE_SLOT_NAMES_GUARDED = "_dynamo_guards_base_slot_names"


def _class_getattr(self: Any, tx: Any, name: str) -> Any:
    """The trace reads ``cls.name`` along CPython's ``type_getattro`` order;
    when the answer comes from the metaclass, that it still does is what
    the compiled code assumes. (A name the trace itself set on the class
    earlier in the frame is read from its side effects instead.)"""
    if (
        self.source is not None
        and isinstance(self.value, type)
        and metaclass_lookup(self.value, name) is not None
        and not tx.output.side_effects.has_pending_mutation_of_attr(self, name)
    ):
        install_guard(self.source.make_guard(functools.partial(METACLASS_ATTR_MATCH, name=name)))
    return _original(UserDefinedClassVariable, CLASS_GETATTR_METHOD)(self, tx, name)


def _load_builtin(self: Any, inst: Any) -> Any:
    """LOAD_GLOBAL found ``inst.argval`` missing from the globals and reads
    builtins: the compiled code is only right while the globals keep
    lacking it. Installed before the read, which may raise NameError (a
    global defined later changes that too)."""
    guard = absence_guard(self, inst.argval)
    if guard is not None:
        install_guard(guard)
    return _original(InstructionTranslatorBase, "load_builtin")(self, inst)


def _resolve_type_attr(self: Any, tx: Any, name: str, type_attr: Any, source: Any) -> Any:
    """The trace uses the class attribute ``name`` itself: whatever the
    lookup found, its identity (and code) now matter."""
    if self.source is not None:
        install_guard(self.source.make_guard(functools.partial(CLASS_ATTR_MATCH, name=name)))
    return _original(UserDefinedObjectVariable, "resolve_type_attr")(self, tx, name, type_attr, source)


def _generic_getattr(self: Any, tx: Any, name: str) -> Any:
    """The trace reads ``self.name`` along ``object.__getattribute__``."""
    # Installed before the trace runs __getattr__: an AttributeError it
    # raises (getattr with a default) depends on the same facts.
    if self.source is not None and falls_through_to_getattr(self.value, name):
        install_guard(self.source.make_guard(functools.partial(GETATTR_FALLTHROUGH, name=name)))
    through_chain = self.source is not None and self._object_has_getattribute and read_through_super()
    if not through_chain:
        return _original(UserDefinedObjectVariable, "generic_getattr")(self, tx, name)
    # ``super().__getattribute__(name)`` inside the class's own chain
    # (traced_getattribute.py): what the chain is, and what that lookup gave.
    guard_attribute_hooks(self)
    try:
        result = _original(UserDefinedObjectVariable, "generic_getattr")(self, tx, name)
    except ObservedAttributeError:
        guard_generic_failure(tx, self, name)
        raise
    record_generic_read(tx, self, name)
    return result


def _object_hasattr(self: Any, tx: Any, name: str) -> Any:
    """``hasattr(obj, name)``: for a class with a Python ``__getattribute__``
    the trace runs the chain, for a property with a Python getter it inlines
    the getter; the answer is then kept by the guards on what the trace ran
    (traced_getattribute.py), not by a hasattr guard that runs it again."""
    result = _original(UserDefinedObjectVariable, "call_obj_hasattr")(self, tx, name)
    if self.source is None or not result.is_python_constant():
        return result
    answer = bool(result.as_python_constant())
    if self._object_has_getattribute:
        guard_attribute_hooks(self)
        record_hasattr(tx, self, name, answer)
    elif answer and answered_by_property_getter(self.value, name):
        guard_attribute_hooks(self)
        install_guard(self.source.make_guard(functools.partial(CLASS_ATTR_MATCH, name=name)))
        record_hasattr(tx, self, name, answer)
    return result


def _instance_dict_contains(self: Any, tx: Any, args: Any) -> None:
    """A membership test of ``obj.__dict__`` (torch installs no guard)."""
    guard_membership(tx, self, args[0])


def _instance_dict_keys(self: Any) -> None:
    """A read of ``obj.__dict__``'s keys (torch installs no guard). torch
    calls this without the translator; the current one is torch's own
    global."""
    guard_keys(InstructionTranslator.current_tx(), self)


def _call_unspecialized_module(self: Any, tx: Any, args: Any, kwargs: Any) -> Any:
    """Guards what torch's call decides on without a guard: ``__call__``
    and ``_call_impl`` (by identity), the absence of an instance
    ``_call_impl``, and the emptiness of the global module hook dicts. (The
    function it then inlines is guarded by _module_class_attr_source.)"""
    if self.source is not None:
        instance_dict = getattr(self.value, "__dict__", None)
        on_instance = not isinstance(instance_dict, dict) or "_call_impl" in instance_dict
        install_guard(self.source.make_guard(NN_MODULE_CALL_PATHS[on_instance]))
        empty = [name for name in GLOBAL_MODULE_HOOK_DICTS if not getattr(module_py, name)]
        if empty:
            module_source = tx.import_source(module_py.__name__)
            for dict_name in empty:
                hooks_source = AttrSource(module_source, dict_name)
                install_guard(hooks_source.make_guard(GuardBuilder.EMPTY_NN_MODULE_HOOKS_DICT))
    return _original(UnspecializedNNModuleVariable, "call_function")(self, tx, args, kwargs)


def _module_class_attr_source(self: Any, tx: Any, name: str) -> Any:
    """The trace takes the source of a class attribute of a module in order
    to call it without a guard (``forward`` or ``__call__`` in
    call_function): that attribute and its code are what it runs."""
    if self.source is not None:
        install_guard(self.source.make_guard(functools.partial(CLASS_ATTR_MATCH, name=name)))
    return _original(UnspecializedNNModuleVariable, "get_source_by_walking_mro")(self, tx, name)


def _hooks() -> tuple[tuple[type, str, Callable[..., Any]], ...]:
    return (
        (InstructionTranslatorBase, "load_builtin", _load_builtin),
        (UserDefinedClassVariable, CLASS_GETATTR_METHOD, _class_getattr),
        (UserDefinedVariable, "_maybe_get_baseclass_method", _base_class_method),
        (UnspecializedNNModuleVariable, "call_function", _call_unspecialized_module),
        (UnspecializedNNModuleVariable, "get_source_by_walking_mro", _module_class_attr_source),
        (UnspecializedNNModuleVariable, "manually_trace_nn_module_getattr", _manually_trace_nn_module_getattr),
        (UserDefinedObjectVariable, "lookup_class_mro_attr", _lookup_class_mro_attr),
        (UserDefinedObjectVariable, "resolve_type_attr", _resolve_type_attr),
        (UserDefinedObjectVariable, "generic_getattr", _generic_getattr),
        (UserDefinedObjectVariable, "call_obj_hasattr", _object_hasattr),
        (DunderDictVariable, "install_dict_contains_guard", _instance_dict_contains),
        (DunderDictVariable, "install_dict_keys_match_guard", _instance_dict_keys),
    )


# (class, method name) of the hooks set on a class that inherited the
# method: uninstalling deletes them again.
_inherited: set[tuple[type, str]] = set()


def install_trace_hooks() -> None:
    if _originals:
        return
    for owner, name, replacement in _hooks():
        _originals[(owner, name)] = getattr(owner, name)
        if name not in vars(owner):
            _inherited.add((owner, name))
        setattr(owner, name, replacement)


def uninstall_trace_hooks() -> None:
    for (owner, name), original in _originals.items():
        if (owner, name) in _inherited:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
    _originals.clear()
    _inherited.clear()
