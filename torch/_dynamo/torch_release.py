"""The torch facts dynamo_guards' Python side depends on that differ between
the releases it supports (2.13, 2.14, 2.15), one name per concern, keyed on
the release torch reports. The C++ counterpart is
torch/csrc/dynamo/torch_release.h; a new torch release changes both files.

What differs, and where it is used:

- 2.14: ``GuardManagerWrapper(root, local_state)`` (the wrapper hands the
  state to ``root.set_local_state``) and ``CheckFunctionManager(...,
  guard_build_local_state=...)``, passed when a saved package is loaded.
  ``WRAPPER_TAKES_LOCAL_STATE`` (guard_manager_wrapper.py); a frame built
  under a loaded package's state goes to stock torch (install.py).
- 2.15: ``GuardManagerWrapper.populate_code_parts_for_debugging`` also
  collects the root's epilogue guards. ``CODE_PARTS_INCLUDE_EPILOGUE_GUARDS``.
- 2.14: ``use_lamba_guard_for_object_aliasing`` defaults to False (2.13:
  True). The engine builds with it False on every release (install.py); the
  benchmark reports stock's value on the running release.
- 2.14: a class's attribute is traced by
  ``UserDefinedClassVariable.tp_getattro_impl`` (2.13: ``var_getattr``,
  the same CPython ``type_getattro`` order). ``CLASS_GETATTR_METHOD``
  (trace_hooks.py hooks it).
- 2.15: ``Guard._unserializable`` is ``type | None`` (2.13, 2.14: bool);
  fallback.py takes the unbuilt value from the dataclass default, so it
  needs no name here.
"""

from __future__ import annotations

import re

import torch

# (major, minor) of every release the engine is written and tested for.
SUPPORTED_RELEASES: tuple[tuple[int, int], ...] = ((2, 13), (2, 14), (2, 15))


class UnsupportedTorchRelease(ImportError):
    """Raised by ``import dynamo_guards`` when the running torch is not one
    dynamo_guards supports, or not the one its C++ engine was built
    against: the engine refuses at once rather than leaving every frame to
    stock torch."""


def release_of(version: str) -> tuple[int, int] | None:
    """(major, minor) of a torch version string such as ``2.15.0+cu132``;
    None when the string does not start with two numbers."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _format(release: tuple[int, int] | None) -> str:
    return "unknown" if release is None else "%d.%d" % release


def unsupported_reason(version: str, built_against: tuple[int, int] | None) -> str | None:
    """Why dynamo_guards cannot run under torch ``version`` with an engine
    built against ``built_against`` (None: the engine did not load); None
    when it can."""
    running = release_of(version)
    supported = ", ".join(_format(r) for r in SUPPORTED_RELEASES)
    if running not in SUPPORTED_RELEASES:
        return f"dynamo_guards supports torch {supported}; this is torch {version}"
    if built_against is None:
        return f"dynamo_guards' C++ engine did not load under torch {version}; reinstall dynamo_guards against it"
    if tuple(built_against) != running:
        return (
            f"dynamo_guards' C++ engine was built against torch {_format(tuple(built_against))} "
            f"and this is torch {version}; reinstall dynamo_guards against it"
        )
    return None


RUNNING: tuple[int, int] | None = release_of(torch.__version__)


def _at_least(major: int, minor: int) -> bool:
    return RUNNING is not None and RUNNING >= (major, minor)


WRAPPER_TAKES_LOCAL_STATE: bool = _at_least(2, 14)
CODE_PARTS_INCLUDE_EPILOGUE_GUARDS: bool = _at_least(2, 15)
CLASS_GETATTR_METHOD: str = "tp_getattro_impl" if _at_least(2, 14) else "var_getattr"
