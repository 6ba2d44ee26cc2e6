"""Membership reads of an object's instance ``__dict__`` (upstream:
``DunderDictVariable`` in torch/_dynamo/variables/dicts.py).

Dynamo models ``obj.__dict__`` (``vars(obj)``, or ``super().__getattribute__(
'__dict__')`` in a class's own ``__getattribute__``) as a dict whose
mutations live in the trace's side effects, and turns the guards a dict
read would install (a key's presence for ``k in d`` / ``d.get(k)``, the
keys for iteration or ``len``) into no-ops. A branch on
``obj.__dict__.get('flag')`` then stays compiled after ``obj.flag = 1``:
torch 2.13-2.15 return the stale result.

While the fork is installed, such a read of the object's own dict (not one
the trace itself wrote: those come from the side effects) installs
``INSTANCE_DICT_CONTAINS`` (torch's DICT_CONTAINS / DICT_NOT_CONTAINS on
``obj.__dict__``) and an iteration ``INSTANCE_DICT_KEYS_MATCH`` (torch's
DICT_KEYS_MATCH), while the trace has written no attribute of the object
(its view of the keys then mixes its own writes in; that case keeps
torch's behaviour).
"""

from __future__ import annotations

import functools
from typing import Any

from torch._dynamo.guards import GuardBuilder, install_guard
from torch._dynamo.side_effects import AttrMutationKind


def _owner(dict_variable: Any) -> Any:
    return dict_variable.items.item


def _reads_object_dict(tx: Any, dict_variable: Any, key: str | None) -> bool:
    """Whether the trace read the object's own ``__dict__`` (for ``key``,
    or as a whole), not entries it wrote itself."""
    if dict_variable.source is None:
        return False
    side_effects = tx.output.side_effects
    owner = _owner(dict_variable)
    if side_effects.has_pending_mutation_of_attr(owner, "__dict__", AttrMutationKind.GENERIC_SETATTR):
        return False
    if key is None:
        return not side_effects.has_pending_mutation(owner)
    return not side_effects.has_pending_mutation_of_attr(owner, key, AttrMutationKind.INSTANCE_DICT)


def guard_membership(tx: Any, dict_variable: Any, key_variable: Any) -> None:
    """The trace tested ``key in obj.__dict__`` (``in``, ``get``, ``pop``
    with a default)."""
    if key_variable.source is not None or not key_variable.is_python_constant():
        guard_keys(tx, dict_variable)
        return
    key = key_variable.as_python_constant()
    if not isinstance(key, str) or not _reads_object_dict(tx, dict_variable, key):
        return
    contains = key in _owner_dict(dict_variable)
    install_guard(dict_variable.make_guard(functools.partial(INSTANCE_DICT_CONTAINS, key=key, contains=contains)))


def guard_keys(tx: Any, dict_variable: Any) -> None:
    """The trace read the keys of ``obj.__dict__`` (iteration, ``len``)."""
    if _reads_object_dict(tx, dict_variable, None):
        install_guard(dict_variable.make_guard(INSTANCE_DICT_KEYS_MATCH))


def _owner_dict(dict_variable: Any) -> dict[str, Any]:
    return dict_variable.items.item_dict


def INSTANCE_DICT_CONTAINS(builder: Any, guard: Any, *, key: str, contains: bool) -> None:
    """Guard create function: ``guard.name`` (an instance ``__dict__``)
    still has ``key`` (``contains``) or still lacks it. Nothing when the
    dict disagrees by now (the trace's own write)."""
    if (key in builder.get(guard)) != contains:
        return
    create = GuardBuilder.DICT_CONTAINS if contains else GuardBuilder.DICT_NOT_CONTAINS
    create(builder, guard, key=key)


def INSTANCE_DICT_KEYS_MATCH(builder: Any, guard: Any) -> None:
    """Guard create function: ``guard.name`` (an instance ``__dict__``)
    keeps its keys."""
    GuardBuilder.DICT_KEYS_MATCH(builder, guard)
