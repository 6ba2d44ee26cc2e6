"""The reads a fork check makes through Python attribute code (a
``__getattribute__``, ``__getattr__`` or property getter the engine calls),
recorded from one check and replayed with ``getattr``: code every engine
runs on every check of the frame, since it may answer differently each
time (python_attribute_floor.py, the check floor in timing.py)."""

from __future__ import annotations

import sys
import types
from typing import Any, Callable

ATTRIBUTE_HOOKS = ("__getattribute__", "__getattr__")
Read = tuple[Any, str]


def property_read(frame: types.FrameType) -> Read | None:
    """(object, name) when ``frame`` runs the getter of a property of its
    first argument's class, found under the getter's own name."""
    code = frame.f_code
    if code.co_argcount != 1:
        return None
    obj = frame.f_locals.get(code.co_varnames[0])
    for klass in type(obj).__mro__:
        attribute = vars(klass).get(code.co_name)
        if attribute is not None:
            getter = getattr(attribute, "fget", None) if isinstance(attribute, property) else None
            return (obj, code.co_name) if getattr(getter, "__code__", None) is code else None
    return None


def reads_of_one_check(check: Callable[[], bool]) -> list[Read]:
    """(object, name) of each Python attribute hook or property getter the
    check calls itself."""
    # Engines are entered from this frame, or from make_check's loop over
    # several frames' roots.
    callers = {sys._getframe().f_code, getattr(check, "__code__", None)}
    reads: list[Read] = []
    last_hook = ""

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        nonlocal last_hook
        code = frame.f_code
        if event != "call" or frame.f_back is None or frame.f_back.f_code not in callers:
            return
        if code.co_name not in ATTRIBUTE_HOOKS:
            read = property_read(frame)
            if read is not None:
                reads.append(read)
                last_hook = ""
            return
        obj, name = (frame.f_locals[v] for v in code.co_varnames[:2])
        # A __getattr__ right after a failed __getattribute__ of the same
        # read is that read's fallback; getattr() replays both.
        fallback = code.co_name == "__getattr__" and last_hook == "__getattribute__"
        if not (fallback and reads and reads[-1][0] is obj and reads[-1][1] == name):
            reads.append((obj, name))
        last_hook = code.co_name

    sys.setprofile(profile)
    try:
        passed = check()
    finally:
        sys.setprofile(None)
    if not passed:
        raise RuntimeError("the fork's check failed on the frame's own locals")
    return reads


def replayer(reads: list[Read]) -> Callable[[], bool]:
    def replay() -> bool:
        for obj, name in reads:
            try:
                getattr(obj, name)
            except AttributeError:
                pass
        return True

    return replay
