"""Guards that a name the trace found in builtins is still absent from the
globals that Python searches first (upstream: ``load_builtin`` in
torch/_dynamo/symbolic_convert.py).

``LOAD_GLOBAL`` searches the function's globals, then its builtins. When the
trace finds a name in builtins, torch guards the builtins dict entry (for a
callable) and nothing else; a module global of the same name defined later
(``max = ...`` at module level, ``globals()['max'] = ...``, ``setattr(module,
'max', ...)``, ``exec`` in the module's namespace) is what Python calls from
then on, and the compiled code keeps calling the builtin. GLOBAL_NAME_ABSENT
guards the absence: a ``DICT_CONTAINS(False)`` leaf on the globals dict the
read searched, which a memo log pins by that dict's version or watch (the
dict is already validated there for the builtins alias every such frame
reads), so it adds no step to a memoized check.

Which dict, and through which source:
- the frame's own globals (the root frame, or a function inlined from the
  same module): the root's globals manager, as torch reads ``G[...]``;
- a function inlined from a module in ``sys.modules`` whose ``__dict__`` is
  the function's globals: that module's ``__dict__``, through the module
  alias torch's trace installs for its own reads of that module's globals;
- other globals dicts (``exec`` with a plain dict): the dict itself,
  installed as a frame global by id, as torch 2.14+ does for such scopes.
Functions of standard-library modules get no guard, as torch guards none of
their globals (torch's ``is_stdlib``: "users don't mutate" them).
"""

from __future__ import annotations

import enum
import functools
import sys
from typing import Any

from torch._dynamo.source import GlobalSource


class GlobalsScope(enum.Enum):
    FRAME = "frame"  # the root frame's globals (torch's ``G``)
    MODULE = "module"  # the guard's source is the module whose __dict__ it is
    DICT = "dict"  # the guard's source is the globals dict itself


def GLOBAL_NAME_ABSENT(builder: Any, guard: Any, *, name: str, scope: GlobalsScope) -> None:
    """Guard create function: ``name`` is not in the globals dict the
    trace's read searched before builtins (``scope`` says how ``guard``'s
    source reaches it)."""
    from torch._dynamo.guards import GuardBuilder, get_verbose_code_parts

    if scope is GlobalsScope.MODULE:
        GuardBuilder.NOT_PRESENT_IN_GENERIC_DICT(builder, guard, attr=name)
    elif scope is GlobalsScope.DICT:
        GuardBuilder.DICT_NOT_CONTAINS(builder, guard, key=name)
    else:
        code = f"not ___dict_contains({name!r}, G)"
        if code in builder.already_added_code_parts:
            return
        parts = get_verbose_code_parts(code, guard)
        builder.get_global_guard_manager().add_dict_contains_guard(False, name, parts, guard.user_stack)
        builder.already_added_code_parts.add(code)


def _is_stdlib_scope(f_globals: dict[str, Any]) -> bool:
    module_name = f_globals.get("__name__")
    return isinstance(module_name, str) and module_name.split(".")[0] in sys.stdlib_module_names


def _registered_module_name(f_globals: dict[str, Any]) -> str | None:
    """The name under which sys.modules holds the module whose __dict__ is
    ``f_globals``, if any."""
    module_name = f_globals.get("__name__")
    if not isinstance(module_name, str):
        return None
    module = sys.modules.get(module_name)
    return module_name if getattr(module, "__dict__", None) is f_globals else None


def absence_guard(tx: Any, name: str) -> Any | None:
    """The guard that ``name``, found in builtins by ``tx``'s read, stays
    out of ``tx``'s globals; None for a standard-library function."""
    f_globals = tx.f_globals
    if f_globals is tx.output.global_scope:
        create = functools.partial(GLOBAL_NAME_ABSENT, name=name, scope=GlobalsScope.FRAME)
        return GlobalSource(name).make_guard(create)
    if _is_stdlib_scope(f_globals):
        return None
    module_name = _registered_module_name(f_globals)
    if module_name is not None:
        create = functools.partial(GLOBAL_NAME_ABSENT, name=name, scope=GlobalsScope.MODULE)
        return tx.import_source(module_name).make_guard(create)
    globals_name = tx.output.install_global_by_id("___unnamed_scope", f_globals)
    create = functools.partial(GLOBAL_NAME_ABSENT, name=name, scope=GlobalsScope.DICT)
    return GlobalSource(globals_name).make_guard(create)
