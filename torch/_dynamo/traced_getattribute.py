"""Attributes of objects whose class defines ``__getattribute__`` in
Python, checked without running it (upstream: ``generic_getattr`` and
``call_obj_hasattr`` in torch/_dynamo/variables/user_defined.py, and
``get_guard_manager_from_source`` in torch/_dynamo/guards.py).

Python answers ``config.use_cache`` for such a class (transformers'
configs) by calling the class's ``__getattribute__``; ``super().
__getattribute__(key)`` in it calls the next one along the MRO, down to
``object.__getattribute__``, the generic lookup. Dynamo traces that chain:
the value it uses is the one ``object.__getattribute__(config, key)``
returned at trace time (``SuperVariable`` calls ``generic_getattr``), and
whatever the chain read on the way (the key mapping, the instance
``__dict__``) is guarded like any other inlined code. Torch then guards the
value through ``getattr(config, key)``, so every check runs the whole chain
in Python again: on a small transformers model, most of the check.

While the fork is installed, a value the trace read that way is guarded
through ``object.__getattribute__`` itself (``GenericGetAttrGuardAccessor``:
in a memo log, the class's version tag and the instance ``__dict__``), a name
that lookup did not find gets ``GENERIC_ATTR_ABSENT``, and a ``hasattr``
the chain answered keeps no ``hasattr`` guard of its own (torch's runs the
chain). That is sound
when the guards of the frame pin every fact the chain's outcome depends on,
which is what this module and its neighbours install:

- which functions make the chain: ``ATTRIBUTE_HOOKS_MATCH`` on the object
  (the class's attribute slot, each ``__getattribute__`` along its MRO by
  identity and in order, ``__getattr__`` by identity or absence; see
  attribute_hooks_match.h) and ``FUNCTION_CODE_MATCH`` on each of them
  (``f.__code__ = g``). Torch guards neither the class's own
  ``__getattribute__`` (it takes it without a guard) nor what ``super()``
  reaches;
- what the chain's code reads: guarded by the trace as in any inlined
  function, plus the fork's guards on the instance ``__dict__`` read
  through ``vars(obj)`` / ``super().__getattribute__('__dict__')``
  (instance_dict_reads.py: torch guards no membership test there);
- the generic lookup's own outcome: the value, by the accessor above and
  the leaves on it; the absence, by ``GENERIC_ATTR_ABSENT`` (no class of
  the MRO has the name, the instance ``__dict__`` lacks it).

Given those, the chain takes the path the trace took and ends in the same
generic lookup, so reading that lookup directly gives what Python's
``getattr`` would. What stays out: a read the trace made without a guard
that torch would also leave unguarded in any other inlined function; there
stock's check, which re-ran the chain, could notice a change the fork does
not (docs/limitations.md). A read through ``getattr`` that the trace did
not resolve this way (the name mapped to another, a fallback after the
chain raised) keeps torch's accessor.

A property getter written in Python is the same case on a smaller scale
(transformers' ``getattr(cache, "is_compileable", False)``, whose getter
loops over every layer of the cache). Torch answers ``hasattr(obj, name)``
by tracing the lookup (``call_obj_hasattr``: ``var_getattr`` in 2.13,
``tp_getattro_impl`` in 2.14 and 2.15), which inlines the getter
(``PropertyVariable``) and guards what it reads; its HASATTR guard then
calls the getter again on every check. When the class answers with a
generic lookup and finds ``name`` as a property whose getter is a Python
function, a True answer is the inlined getter having returned, so the fork
keeps it by pinning what made that call the one Python makes:
``ATTRIBUTE_HOOKS_MATCH`` (no ``__getattribute__`` or ``__getattr__``
appears), ``CLASS_ATTR_MATCH`` (the MRO lookup still finds that property;
a data descriptor, so the instance ``__dict__`` never answers first) and
``FUNCTION_CODE_MATCH`` on the property (still the same getter function,
running the same code; function_code_match.h), plus the trace's guards on
what the getter read; and installs no HASATTR. A False answer (the getter
raised AttributeError) keeps torch's guard.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import types
from typing import Any, Iterator

import torch
from torch._dynamo.guards import install_guard
from torch._dynamo.source import AttrSource
from torch._dynamo.variables.misc import SuperVariable

from dynamo_guards.nn_module_attributes import (
    class_lookup,
    FUNCTION_CODE_MATCH,
    generically_absent,
    getattr_on_nn_module,
    install_absence_leaf,
    install_leaf,
)


@dataclasses.dataclass
class TracedReads:
    """What one frame's trace read through a Python ``__getattribute__``."""

    # Sources whose value the trace took from object.__getattribute__.
    generic_sources: set[str] = dataclasses.field(default_factory=set)
    # (object's source, name) -> what hasattr answered through the traced chain.
    hasattr_answers: dict[tuple[str, str], bool] = dataclasses.field(default_factory=dict)
    # Objects (sources) whose chain met an AttributeError no guard of the
    # engine can keep (an unset slot, a property that raised): their
    # hasattr answers keep torch's guard.
    unpinned_failures: set[str] = dataclasses.field(default_factory=set)


_OUTPUT_GRAPH_SLOT = "_dynamo_guards_traced_reads"
# The reads of the frame whose guards the engine is building (None between builds).
_building: TracedReads | None = None


def traced_reads(output_graph: Any) -> TracedReads:
    reads = output_graph.__dict__.get(_OUTPUT_GRAPH_SLOT)
    if reads is None:
        reads = output_graph.__dict__[_OUTPUT_GRAPH_SLOT] = TracedReads()
    return reads


@contextlib.contextmanager
def building(output_graph: Any) -> Iterator[None]:
    """The engine builds ``output_graph``'s guards in this block."""
    global _building
    outer, _building = _building, traced_reads(output_graph)
    try:
        yield
    finally:
        _building = outer


def has_python_getattribute(value: Any) -> bool:
    """Whether ``type(value)`` answers attributes through a ``__getattribute__``
    written in Python (a function on its MRO)."""
    found = class_lookup(type(value), "__getattribute__")
    return found is not None and isinstance(found[1], types.FunctionType)


def answered_by_property_getter(value: Any, name: str) -> bool:
    """Whether Python answers ``value.name`` by calling the Python getter of
    a property its class finds for ``name`` (the class's lookup generic):
    torch's trace then inlines that getter."""
    cls = type(value)
    if cls.__getattribute__ is not object.__getattribute__:
        return False
    found = class_lookup(cls, name)
    return found is not None and type(found[1]) is property and isinstance(found[1].fget, types.FunctionType)


def read_through_super() -> bool:
    """Whether the caller of the hook that calls this is torch's
    ``SuperVariable.call_method``: the trace is inlining
    ``super().__getattribute__(key)``, that is ``object.__getattribute__``.
    (torch's attribute trace also calls ``generic_getattr`` after a traced
    ``__getattribute__`` raised; Python calls ``__getattr__`` there, so such
    a read keeps torch's guard.)"""
    return sys._getframe(2).f_code is SuperVariable.call_method.__code__


def guard_attribute_hooks(variable: Any) -> None:
    install_guard(variable.source.make_guard(ATTRIBUTE_HOOKS_MATCH))


def record_generic_read(tx: Any, variable: Any, name: str) -> None:
    traced_reads(tx.output).generic_sources.add(AttrSource(variable.source, name).name)


def guard_generic_failure(tx: Any, variable: Any, name: str) -> None:
    """``object.__getattribute__(obj, name)`` raised AttributeError in the
    trace: GENERIC_ATTR_ABSENT when nothing answers ``name`` at all; else
    (an unset slot, a descriptor that raised) the object's hasattr answers
    keep torch's guard."""
    if generically_absent(variable.value, name):
        install_guard(variable.source.make_guard(functools.partial(GENERIC_ATTR_ABSENT, name=name)))
    else:
        traced_reads(tx.output).unpinned_failures.add(variable.source.name)


def record_hasattr(tx: Any, variable: Any, name: str, answer: bool) -> None:
    traced_reads(tx.output).hasattr_answers[(variable.source.name, name)] = answer


def hasattr_answer_of_trace(guard: Any, name: str) -> bool | None:
    """While the engine builds: what the trace answered for ``hasattr(guard's
    object, name)`` through the object's Python chain (None: not that way)."""
    if _building is None or guard.name in _building.unpinned_failures:
        return None
    return _building.hasattr_answers.get((guard.name, name))


def reads_generically(source_name: str) -> bool:
    """While the engine builds: the trace took ``source_name``'s value from
    ``object.__getattribute__``."""
    return _building is not None and source_name in _building.generic_sources


def ATTRIBUTE_HOOKS_MATCH(builder: Any, guard: Any) -> None:
    """Guard create function: ``type(guard.name)`` keeps its attribute
    hooks (attribute_hooks_match.h) and each of them its code."""
    cls = type(builder.get(guard))
    hooks = [(klass, vars(klass)["__getattribute__"]) for klass in cls.__mro__ if "__getattribute__" in vars(klass)]
    getattr_found = class_lookup(cls, "__getattr__")
    getattr_hook = None if getattr_found is None else getattr_found[1]
    install_leaf(
        builder,
        guard,
        f"type({guard.name}) keeps its __getattribute__ chain and __getattr__",
        lambda m, parts, stack: m.add_attribute_hooks_match_guard(cls, [hook for _, hook in hooks], getattr_hook, parts, stack),
    )
    if getattr_found is not None:
        hooks.append(getattr_found)
    for owner, hook in hooks:
        FUNCTION_CODE_MATCH(builder, guard, hook, f"{owner.__module__}.{owner.__qualname__}.{getattr(hook, '__name__', '')}")


def GENERIC_ATTR_ABSENT(builder: Any, guard: Any, *, name: str) -> None:
    """Guard create function: ``object.__getattribute__(guard.name, name)``
    still finds nothing (no class of the MRO has ``name``, the instance
    ``__dict__`` lacks it: the same leaf as GETATTR_FALLTHROUGH). Nothing
    is installed when the object has ``name`` by now (the trace saw its own
    deletion)."""
    if generically_absent(builder.get(guard), name):
        install_absence_leaf(builder, guard, name, f"object.__getattribute__({guard.name}, {name!r}) finds nothing")


def should_optimize_getattr(value: Any) -> bool:
    """Stands in for torch's ``should_optimize_getattr_on_nn_module`` while
    the engine builds: the attributes of objects with a Python
    ``__getattribute__`` reach ``getattr_manager`` too."""
    return isinstance(value, torch.nn.Module) or has_python_getattribute(value)


def getattr_manager(
    builder: Any,
    source: Any,
    base_guard_manager: Any,
    base_example_value: Any,
    example_value: Any,
    base_source_name: str,
    source_name: str,
    guard_manager_enum: Any,
) -> Any:
    """Stands in for ``GuardBuilder.getattr_on_nn_module`` (same arguments)
    while the engine builds: a module's attribute is the engine's
    nn.Module accessor's; an attribute the trace read through
    ``object.__getattribute__`` is read that way; any other by getattr, as
    torch reads it."""
    if isinstance(base_example_value, torch.nn.Module):
        return getattr_on_nn_module(
            builder, source, base_guard_manager, base_example_value, example_value, base_source_name, source_name, guard_manager_enum
        )
    read = base_guard_manager.generic_getattr_manager if reads_generically(source_name) else base_guard_manager.getattr_manager
    return read(attr=source.member, source=source_name, example_value=example_value, guard_manager_enum=guard_manager_enum)
