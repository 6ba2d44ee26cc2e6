"""Wiring the engine into the Dynamo of torch 2.13, 2.14 and 2.15.

torch/_dynamo/guards.py looks several module-level names up at call time:
``GuardManagerWrapper`` (built once per compiled frame), ``DictGuardManager``
(the builder's isinstance checks) and the ``install_*_guard`` functions for
relational guards. ``install()`` wraps ``CheckFunctionManager.__init__`` so
that, while one frame's guards are built, those names refer to this engine.
Outside that window the names are torch's, so anything else in torch that
uses them is unaffected.

While the engine builds a frame's guards, ``skip_nnmodule_hook_guards`` is
off (a hook registered on a module after compilation must recompile; stock
stock torch keeps calling the compiled code without the hook) and object
aliasing is guarded natively (``_ENGINE_CONFIG``).

A frame the engine cannot take falls back to stock torch for that frame,
with one log line saying why, and is counted (``fallback_counts()``):
frames whose guards are serialized (precompile / ``save_guards``), frames
of a loaded package (torch 2.14+), and any frame whose build raised in the
engine. The stock build then starts from the
frame as it was before the engine touched it (fallback.py). An error that is
the user's passes through unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from typing import Any, Callable, Iterator

import torch._dynamo.config
import torch._dynamo.guards as stock_guards
import torch._guards
import torch.utils._traceback

from dynamo_guards import _C
from dynamo_guards.fallback import (
    drop_engine_guards,
    ENGINE_ERROR,
    FrameSnapshot,
    LOADED_PACKAGE,
    record_fallback,
    SERIALIZED_GUARDS,
    USER_ERRORS,
)
from dynamo_guards.guard_manager_wrapper import ForkGuardManagerWrapper
from dynamo_guards.nn_module_attributes import EMPTY_NN_MODULE_HOOKS_DICT
from dynamo_guards.trace_hooks import install_trace_hooks, uninstall_trace_hooks
from dynamo_guards.traced_getattribute import building, getattr_manager, hasattr_answer_of_trace, should_optimize_getattr

_ENGINE_NAMES: dict[str, Any] = {
    "GuardManagerWrapper": ForkGuardManagerWrapper,
    "DictGuardManager": _C.DictGuardManager,
    "install_no_tensor_aliasing_guard": _C.install_no_tensor_aliasing_guard,
    "install_object_aliasing_guard": _C.install_object_aliasing_guard,
    "install_storage_overlapping_guard": _C.install_storage_overlapping_guard,
    "install_symbolic_shape_guard": _C.install_symbolic_shape_guard,
    "should_optimize_getattr_on_nn_module": should_optimize_getattr,
}

# GuardBuilder methods replaced while the engine builds a frame's guards.
_ENGINE_BUILDER_METHODS: dict[str, Any] = {
    "getattr_on_nn_module": getattr_manager,
}

# Guard create functions torch's trace attaches to guards, and the engine's
# stand-ins for them, used while the engine builds a frame's guards (a guard
# keeps the function object, so the builder's method cannot simply be
# replaced).
_ENGINE_CREATE_FUNCTIONS: dict[Any, Callable[[Any, Any], None]] = {
    stock_guards.GuardBuilder.EMPTY_NN_MODULE_HOOKS_DICT: EMPTY_NN_MODULE_HOOKS_DICT,
}
_stock_guard_create = torch._guards.Guard.create


def _create_guard(guard: Any, builder: Any) -> Any:
    """``Guard.create`` while the engine builds: the engine's create
    function where it has one, torch's otherwise."""
    replacement = _ENGINE_CREATE_FUNCTIONS.get(guard.create_fn)
    if replacement is not None:
        return replacement(builder, guard)
    if _kept_by_traced_chain(guard, builder):
        return None
    return _stock_guard_create(guard, builder)


def _kept_by_traced_chain(guard: Any, builder: Any) -> bool:
    """A ``hasattr(obj, name)`` the trace answered by running obj's Python
    ``__getattribute__`` chain: the chain's guards keep that answer
    (traced_getattribute.py), so the engine adds no guard running the chain
    on every check. (An answer that differs by now, after the trace's own
    writes, gets torch's guard.)"""
    create_fn = guard.create_fn
    if not (isinstance(create_fn, functools.partial) and create_fn.func is stock_guards.GuardBuilder.HASATTR):
        return False
    name = create_fn.keywords.get("attr")
    answer = hasattr_answer_of_trace(guard, name)
    return answer is not None and hasattr(builder.get(guard), name) == answer


# torch formats the user's frame into the code parts of every guard it
# builds; with thousands of guards per frame, the path shortening in there
# (os.path.commonpath) is a visible share of the build. It is a function of
# its two strings alone, so the engine remembers its answers while building.
_stock_shorten_filename = torch.utils._traceback.shorten_filename
_shorten_filename = functools.lru_cache(maxsize=1024)(_stock_shorten_filename)


# Dynamo config while the engine builds a frame's guards:
# - empty nn.Module hook dicts are guarded (torch skips them by default and
#   then misses hooks added after compilation);
# - object-aliasing relations become native OBJECT_ALIASING guards instead
#   of one Python lambda evaluated on every call.
_ENGINE_CONFIG: dict[str, Any] = {
    "skip_nnmodule_hook_guards": False,
    "use_lamba_guard_for_object_aliasing": False,
}

_stock_sort_key = torch._guards.Guard.sort_key


def _guard_order_key(guard: Any) -> str:
    """``Guard.sort_key`` while the engine builds: the same order as torch's
    key ``(is_duplicate_input, source value or -1, len(name), name, first
    line of the create function)``, as one str. torch sorts a frame's guards
    by that key before building them, and every key is alive until the sort
    ends: as tuples that is one object per guard for the cyclic collector
    to count (tens of thousands on a large model, a young collection every
    700); a str is not tracked. The fields before the name have fixed
    widths, so two keys reach the names only when those fields are equal,
    names of equal length included, and str comparison then orders them as
    the tuple would. The create function's first line is looked up once
    per function (reading ``__code__`` raises an audit event every time)."""
    create_fn = guard.inner_create_fn()
    first_line = _create_fn_first_lines.get(create_fn)
    if first_line is None:
        first_line = _create_fn_first_lines[create_fn] = create_fn.__code__.co_firstlineno
    is_duplicate_input = (
        isinstance(guard.create_fn, functools.partial)
        and guard.create_fn.func is stock_guards.GuardBuilder.DUPLICATE_INPUT
    )
    source = guard.source
    name = guard.name
    source_rank = source.value + 1 if source else 0
    return f"{is_duplicate_input:d}{source_rank:08x}{len(name):08x}{name}{first_line:08x}"


# First lines of the create functions seen in the current build, emptied
# after it (a create function may be a closure: nothing outlives the build).
_create_fn_first_lines: dict[Any, int] = {}

_original_init: Callable[..., None] | None = None


@contextlib.contextmanager
def _engine_names_in_torch() -> Iterator[None]:
    builder = stock_guards.GuardBuilder
    saved_names = {name: getattr(stock_guards, name) for name in _ENGINE_NAMES}
    saved_methods = {name: builder.__dict__[name] for name in _ENGINE_BUILDER_METHODS}
    for name, value in _ENGINE_NAMES.items():
        setattr(stock_guards, name, value)
    for name, value in _ENGINE_BUILDER_METHODS.items():
        setattr(builder, name, value)
    torch._guards.Guard.create = _create_guard  # type: ignore[method-assign]
    torch._guards.Guard.sort_key = _guard_order_key  # type: ignore[method-assign,assignment]
    torch.utils._traceback.shorten_filename = _shorten_filename
    try:
        yield
    finally:
        torch._guards.Guard.create = _stock_guard_create  # type: ignore[method-assign]
        torch._guards.Guard.sort_key = _stock_sort_key  # type: ignore[method-assign]
        _create_fn_first_lines.clear()
        torch.utils._traceback.shorten_filename = _stock_shorten_filename
        for name, value in saved_names.items():
            setattr(stock_guards, name, value)
        for name, value in saved_methods.items():
            setattr(builder, name, value)


def _stock_fallback_reason(kwargs: dict[str, Any]) -> tuple[str, str] | None:
    """(reason, detail) when the frame goes to stock torch before the engine
    starts; None when the engine builds it."""
    if kwargs.get("save_guards"):
        return SERIALIZED_GUARDS, "guards of this frame are serialized (save_guards), which needs torch's own guard tree"
    if torch._dynamo.config.caching_precompile:
        return SERIALIZED_GUARDS, "caching_precompile serializes guards, which needs torch's own guard tree"
    if kwargs.get("guard_build_local_state") is not None:
        # torch 2.14+: a saved package's guards are rebuilt under the
        # dispatch-key state it was compiled in, a torch LocalState the
        # engine cannot read.
        return LOADED_PACKAGE, "the frame's guards come from a loaded package, rebuilt under its saved torch LocalState"
    return None


class _PassThrough:
    """Exceptions raised during a build by code that is not the engine's
    (torch's testing hook, ``guard_manager_testing_hook_fn``): they reach
    the caller once, unchanged, as under stock torch, instead of being
    taken for an engine failure."""

    def __init__(self) -> None:
        self.raised: BaseException | None = None

    def wrap(self, hook: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(hook)
        def run_hook(*args: Any, **kwargs: Any) -> Any:
            try:
                return hook(*args, **kwargs)
            except BaseException as e:
                self.raised = e
                raise

        return run_hook


@contextlib.contextmanager
def _testing_hook_passed_through(passthrough: _PassThrough) -> Iterator[None]:
    hook = stock_guards.guard_manager_testing_hook_fn
    if hook is None:
        yield
        return
    stock_guards.guard_manager_testing_hook_fn = passthrough.wrap(hook)
    try:
        yield
    finally:
        stock_guards.guard_manager_testing_hook_fn = hook


def _frame_name(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    code = kwargs.get("f_code", args[0] if args else None)
    return getattr(code, "co_name", "<unknown frame>")


def _output_graph(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return kwargs.get("output_graph", args[1] if len(args) > 1 else None)


def _check_function_manager_init(self: Any, *args: Any, **kwargs: Any) -> None:
    assert _original_init is not None
    output_graph = _output_graph(args, kwargs)
    if output_graph is None:
        _original_init(self, *args, **kwargs)  # torch refuses it
        return
    stock_reason = _stock_fallback_reason(kwargs)
    if stock_reason is not None:
        drop_engine_guards(output_graph)
        record_fallback(stock_reason[0], _frame_name(args, kwargs), stock_reason[1], logging.INFO)
        _original_init(self, *args, **kwargs)
        return
    snapshot = FrameSnapshot.take(self, output_graph)
    passthrough = _PassThrough()
    try:
        with (
            _engine_names_in_torch(),
            building(output_graph),
            torch._dynamo.config.patch(**_ENGINE_CONFIG),
            _testing_hook_passed_through(passthrough),
        ):
            _original_init(self, *args, **kwargs)
    except USER_ERRORS:
        raise
    except Exception as e:  # noqa: BLE001 - any other failure is the engine's: stock builds the frame
        if e is passthrough.raised:
            raise
        snapshot.restore()
        drop_engine_guards(output_graph)
        detail = f"the engine could not build them ({type(e).__name__}: {e})"
        record_fallback(ENGINE_ERROR, _frame_name(args, kwargs), detail, logging.WARNING)
        _original_init(self, *args, **kwargs)


def install() -> None:
    """Guard every frame torch.compile compiles from now on with this engine.

    Frames compiled before the call keep their stock guards. Idempotent.
    """
    global _original_init
    if _original_init is not None:
        return
    _original_init = stock_guards.CheckFunctionManager.__init__
    wrapped = functools.wraps(_original_init)(_check_function_manager_init)
    stock_guards.CheckFunctionManager.__init__ = wrapped  # type: ignore[method-assign]
    install_trace_hooks()


def uninstall() -> None:
    """Back to stock torch for frames compiled from now on. Frames already
    compiled keep the engine that guards them. Idempotent."""
    global _original_init
    if _original_init is None:
        return
    stock_guards.CheckFunctionManager.__init__ = _original_init  # type: ignore[method-assign]
    _original_init = None
    uninstall_trace_hooks()


def is_installed() -> bool:
    return _original_init is not None


@contextlib.contextmanager
def enabled() -> Iterator[None]:
    """``with dynamo_guards.enabled():`` installs the engine for the block and
    restores the previous state after it."""
    was_installed = is_installed()
    install()
    try:
        yield
    finally:
        if not was_installed:
            uninstall()
