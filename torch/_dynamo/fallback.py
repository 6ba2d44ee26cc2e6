"""Frames the engine does not take, rebuilt by stock torch as if the engine
had never touched them.

Two kinds of frame go to stock torch: frames whose guards are serialized
(``save_guards``, ``caching_precompile``), which need torch's own tree, and
frames whose build failed inside the engine. A failed build has already run
part of torch's GuardBuilder, which writes to the frame's Guard objects
(export info: ``guard_types``, ``code_list``, ``obj_weakref``, ...), freezes
the shape environment, appends to the compile context's shape guards and
fills the CheckFunctionManager itself. ``FrameSnapshot`` records all of it
before the engine starts and puts it back before stock builds. Guards the
engine's trace hooks added (trace_hooks.py) are removed from the frame's
guard set: stock torch's trace would not have installed them, and their
create functions address the engine's managers.

What the snapshot does not undo, and why that is the same as stock: weakref
finalizers the failed build registered for ID_MATCH'd objects call
``CheckFunctionManager.invalidate`` on the same manager that stock then
completes, for objects stock's build registers too (the engine adds no
ID_MATCH of its own); a second call of ``invalidate`` does nothing.

Errors that are the user's (a dimension marked dynamic that the code
specializes, anything else torch raises to the user from guard building:
its TorchDynamoException family) are not engine failures: they pass
through once, unchanged, without a second build or a log line.

Every frame that falls back is counted by reason (``fallback_counts()``).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import operator
from typing import Any

import torch._guards
from torch._dynamo.exc import TorchDynamoException
from torch._dynamo.guards import GuardBuilder
from torch.fx.experimental.symbolic_shapes import ConstraintViolationError

from dynamo_guards.trace_hooks import GLOBAL_MODULE_HOOK_DICTS

log = logging.getLogger("dynamo_guards")

# Raised by torch to the user while guards are built; never the engine's.
USER_ERRORS: tuple[type[BaseException], ...] = (ConstraintViolationError, TorchDynamoException)

SERIALIZED_GUARDS = "serialized guards"
LOADED_PACKAGE = "loaded package"
ENGINE_ERROR = "engine error"

_counts: collections.Counter[str] = collections.Counter()


def fallback_counts() -> dict[str, int]:
    """Frames built by stock torch since the process started (or the last
    ``reset_fallback_counts()``), by reason: ``"serialized guards"``
    (save_guards / caching_precompile), ``"loaded package"`` (torch 2.14+:
    guards rebuilt under a saved package's LocalState) and
    ``"engine error"``."""
    return dict(_counts)


def fallback_count() -> int:
    """All frames built by stock torch, whatever the reason."""
    return sum(_counts.values())


def reset_fallback_counts() -> None:
    _counts.clear()


def record_fallback(reason: str, frame: str, detail: str, level: int) -> None:
    _counts[reason] += 1
    log.log(
        level,
        "dynamo_guards: stock guards for frame %s: %s (%s; %d frames fell back so far)",
        frame,
        detail,
        reason,
        fallback_count(),
    )


def is_engine_guard(guard: torch._guards.Guard) -> bool:
    """Whether the engine's trace hooks installed ``guard``: its create
    function is the engine's, or it is the empty-hooks guard they put on
    torch's global module hook dicts (stock's trace guards only a module's
    own hook dicts)."""
    create_fn = guard.inner_create_fn()
    if getattr(create_fn, "__module__", "").startswith("dynamo_guards"):
        return True
    source = guard.originating_source
    return create_fn is GuardBuilder.EMPTY_NN_MODULE_HOOKS_DICT and getattr(source, "member", None) in GLOBAL_MODULE_HOOK_DICTS


def drop_engine_guards(output_graph: Any) -> None:
    """Removes the guards the engine's trace hooks added from the frame's
    guard set, for stock torch to build."""
    guards = output_graph.guards
    kept = [g for g in guards if not is_engine_guard(g)]
    if len(kept) == len(guards):
        return
    guards.clear()
    for guard in kept:
        guards.inner.add(guard)
        guards.track_guard_by_source(guard)


# The Guard fields a build writes (``Guard.set_export_info``,
# ``_unserializable``; torch 2.15 also ``_force_dict_keys_match`` when it
# saves guards), with the value a guard has before any build. The others are
# fixed before the build: source and create function, the stacks
# GuardsSet.add records, and ``_hash``, a cache of a hash of those.
_GUARD_FIELD_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(torch._guards.Guard)}
_BUILD_WRITTEN_FIELDS: tuple[str, ...] = tuple(
    name
    for name in ("guard_types", "code_list", "obj_weakref", "guarded_class_weakref", "_unserializable", "_force_dict_keys_match")
    if name in _GUARD_FIELD_DEFAULTS
)
_build_written_state = operator.attrgetter(*_BUILD_WRITTEN_FIELDS)
_UNBUILT_STATE: tuple[Any, ...] = tuple(_GUARD_FIELD_DEFAULTS[name] for name in _BUILD_WRITTEN_FIELDS)


def _copied(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


def _set_build_written_state(guard: torch._guards.Guard, state: tuple[Any, ...]) -> None:
    for name, value in zip(_BUILD_WRITTEN_FIELDS, state):
        setattr(guard, name, _copied(value))


@dataclasses.dataclass
class FrameSnapshot:
    """What a guard build may change outside its own result.

    A frame's guards are normally unbuilt (every written field at its
    default): only the others are recorded, so a snapshot of a large frame
    allocates next to nothing (a tuple per guard would be tens of thousands
    of objects for the garbage collector to count during the build)."""

    manager: Any
    manager_state: dict[str, Any]
    guards: Any
    guard_list: list[torch._guards.Guard]
    built_guard_states: dict[int, tuple[Any, ...]]  # index in guard_list -> written fields, copied
    shape_env: Any
    shape_env_frozen: bool | None
    compile_context: Any
    shape_env_guards: list[str] | None

    @classmethod
    def take(cls, manager: Any, output_graph: Any) -> FrameSnapshot:
        guards = output_graph.guards
        guard_list = list(guards)
        built: dict[int, tuple[Any, ...]] = {}
        for i, guard in enumerate(guard_list):
            state = _build_written_state(guard)
            if not all(map(operator.is_, state, _UNBUILT_STATE)):
                built[i] = tuple(_copied(value) for value in state)
        shape_env = getattr(output_graph, "shape_env", None)
        compile_context = torch._guards.CompileContext.try_get()
        return cls(
            manager=manager,
            manager_state=dict(vars(manager)),
            guards=guards,
            guard_list=guard_list,
            built_guard_states=built,
            shape_env=shape_env,
            shape_env_frozen=getattr(shape_env, "frozen", None),
            compile_context=compile_context,
            shape_env_guards=list(compile_context.shape_env_guards) if compile_context is not None else None,
        )

    def restore(self) -> None:
        vars(self.manager).clear()
        vars(self.manager).update(self.manager_state)
        for i, guard in enumerate(self.guard_list):
            _set_build_written_state(guard, self.built_guard_states.get(i, _UNBUILT_STATE))
        current = list(self.guards)
        if len(current) != len(self.guard_list) or any(a is not b for a, b in zip(current, self.guard_list)):
            self.guards.clear()
            for guard in self.guard_list:
                self.guards.inner.add(guard)
                self.guards.track_guard_by_source(guard)
        if self.shape_env_frozen is not None:
            self.shape_env.frozen = self.shape_env_frozen
        if self.shape_env_guards is not None:
            self.compile_context.shape_env_guards[:] = self.shape_env_guards
