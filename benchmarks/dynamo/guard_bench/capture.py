"""What one engine's compile leaves for the benchmarks: every guard tree
built (through torch's testing hook), a copy of its frame's locals, the
build times, the log lines of logger "dynamo_guards", and the compiled code
kept alive."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import logging
import time
from typing import Any, Callable, ContextManager, Iterator, Sequence

import torch
import torch._dynamo
import torch._dynamo.guards as stock_guards
from torch import nn
from torch._dynamo.utils import CleanupManager

import dynamo_guards
from dynamo_guards.guard_manager_wrapper import ForkGuardManagerWrapper
from dynamo_guards.tree_printer import count_nodes
from guard_bench.models import Inputs, ModelSpec, grad_mode

ENGINES: tuple[str, ...] = ("stock", "stock_dict_tags", "fork")
FORK_DIRECT = "fork_root"  # the fork timed without torch's delegating root


@dataclasses.dataclass
class CapturedFrame:
    code_name: str
    wrapper: Any  # GuardManagerWrapper or ForkGuardManagerWrapper
    f_locals: dict[str, Any]

    @property
    def is_fork(self) -> bool:
        return isinstance(self.wrapper, ForkGuardManagerWrapper)


@dataclasses.dataclass
class BuildRecord:
    code_name: str
    init_s: float = 0.0
    build_guards_s: float = 0.0
    init_cpu_s: float = 0.0  # thread CPU time of the same span
    full_gc_s: float = 0.0  # of init_s, spent in full (oldest-generation) collections
    full_gcs: int = 0  # how many of them
    collections: int = 0  # collections of any generation that started during the build
    tracked_objects: int = 0  # net change in the objects the collector tracks, across the build


OLDEST_GENERATION = len(gc.get_count()) - 1


class CollectionTimer:
    """Time spent in the cyclic collector's full collections while
    ``active``: one that a build happens to trigger walks every tracked
    object in the process (0.2-0.9 s with transformers loaded). Which build
    pays for it depends on everything allocated before it, so it is
    reported apart. A build that runs more young collections (more net
    allocations of tracked objects while it runs) brings one closer; the
    objects it leaves alive (``tracked_objects``) are what every later one
    walks."""

    def __init__(self) -> None:
        self.active = False
        self.total_s = 0.0
        self.count = 0
        self.any_generation = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if not self.active:
            return
        if phase == "start":
            self.any_generation += 1
        if info.get("generation") != OLDEST_GENERATION:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.total_s += time.perf_counter() - self._started
            self.count += 1


# Counting the tracked objects each build leaves alive walks the whole heap
# (tens of milliseconds, outside the timed span); guard_build_time turns it on.
COUNT_TRACKED_OBJECTS = False


@dataclasses.dataclass
class CompileCapture:
    frames: list[CapturedFrame] = dataclasses.field(default_factory=list)
    builds: list[BuildRecord] = dataclasses.field(default_factory=list)


def live_output_codes() -> list[Any]:
    """Strong references to every compiled (output) code object alive now.

    Dynamo installs globals the guards read (``G['__builtins_dict___0']``, ...)
    into the frame's module and deletes them when the output code dies, which
    ``torch._dynamo.reset()`` causes; holding the code keeps the guards of an
    engine measured after a later reset valid.
    """
    codes = (ref() for ref in list(CleanupManager.instance.refs.values()))
    return [code for code in codes if code is not None]


def snapshot_container(value: Any) -> Any:
    """Copies of plain dicts, lists and tuples (recursively); other objects
    as they are."""
    if type(value) is dict:
        return {k: snapshot_container(v) for k, v in value.items()}
    if type(value) is list:
        return [snapshot_container(v) for v in value]
    if type(value) is tuple:
        return tuple(snapshot_container(v) for v in value)
    return value


def snapshot_locals(f_locals: Any) -> dict[str, Any]:
    """The frame's locals as they are while its guards are built. A plain
    ``dict(f_locals)`` is not enough: transformers' ``wrapper(*args, **kwargs)``
    frames later write into the ``kwargs`` dict (e.g. ``kwargs['use_cache']``)
    and the guards on its keys then fail."""
    return {name: snapshot_container(value) for name, value in dict(f_locals).items()}


@contextlib.contextmanager
def capture_compiles() -> Iterator[CompileCapture]:
    """Hooks that record every CheckFunctionManager built in the block: its
    build time and (through the testing hook) its wrapper and f_locals."""
    capture = CompileCapture()
    cfm = stock_guards.CheckFunctionManager
    current_init = cfm.__init__
    current_build_guards = cfm.build_guards

    collections = CollectionTimer()

    @functools.wraps(current_init)
    def timed_init(self: Any, f_code: Any, *args: Any, **kwargs: Any) -> None:
        record = BuildRecord(getattr(f_code, "co_name", "<unknown>"))
        capture.builds.append(record)
        if COUNT_TRACKED_OBJECTS:
            gc.collect()
            tracked_before = len(gc.get_objects())
        collections.total_s, collections.count, collections.any_generation = 0.0, 0, 0
        collections.active = True
        start, start_cpu = time.perf_counter(), time.thread_time()
        try:
            current_init(self, f_code, *args, **kwargs)
        finally:
            record.init_s = time.perf_counter() - start
            record.init_cpu_s = time.thread_time() - start_cpu
            collections.active = False
            record.full_gc_s, record.full_gcs = collections.total_s, collections.count
            record.collections = collections.any_generation
            if COUNT_TRACKED_OBJECTS:
                gc.collect()
                record.tracked_objects = len(gc.get_objects()) - tracked_before

    @functools.wraps(current_build_guards)
    def timed_build_guards(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return current_build_guards(self, *args, **kwargs)
        finally:
            if capture.builds:
                capture.builds[-1].build_guards_s += time.perf_counter() - start

    def hook(wrapper: Any, f_locals: Any, builder: Any) -> None:
        code_name = capture.builds[-1].code_name if capture.builds else "<unknown>"
        capture.frames.append(CapturedFrame(code_name, wrapper, snapshot_locals(f_locals)))

    saved_hook = stock_guards.guard_manager_testing_hook_fn
    gc.callbacks.append(collections)
    cfm.__init__ = timed_init  # type: ignore[method-assign]
    cfm.build_guards = timed_build_guards  # type: ignore[method-assign]
    stock_guards.guard_manager_testing_hook_fn = hook
    try:
        yield capture
    finally:
        gc.callbacks.remove(collections)
        cfm.__init__ = current_init  # type: ignore[method-assign]
        cfm.build_guards = current_build_guards  # type: ignore[method-assign]
        stock_guards.guard_manager_testing_hook_fn = saved_hook


class LogCollector(logging.Handler):
    """Keeps the records of one logger (here "dynamo_guards")."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname}: {record.getMessage()}")


@contextlib.contextmanager
def collect_logs(name: str) -> Iterator[LogCollector]:
    logger = logging.getLogger(name)
    collector = LogCollector()
    saved_level = logger.level
    logger.addHandler(collector)
    logger.setLevel(logging.DEBUG)
    try:
        yield collector
    finally:
        logger.removeHandler(collector)
        logger.setLevel(saved_level)


def engine_context(engine: str) -> ContextManager[Any]:
    if engine == "stock":
        return contextlib.nullcontext()
    if engine == "stock_dict_tags":
        return torch._dynamo.config.patch(use_recursive_dict_tags_for_guards=True)
    if engine == "fork":
        return dynamo_guards.enabled()
    raise ValueError(f"unknown engine {engine!r}")


def count_stock_nodes(root: Any) -> dict[str, int]:
    """Managers and leaf guards of a torch guard tree (dict key/value
    managers included, the way torch's own tree walks visit them)."""
    counts = {"managers": 0, "leaf_guards": 0}

    def visit(mgr: Any) -> None:
        if mgr is None:
            return
        counts["managers"] += 1
        counts["leaf_guards"] += len(mgr.get_leaf_guards())
        if isinstance(mgr, torch._C._dynamo.guards.DictGuardManager):
            for key_mgr, value_mgr in mgr.get_key_value_managers().values():
                visit(key_mgr)
                visit(value_mgr)
        else:
            for child in mgr.get_child_managers():
                visit(child)

    visit(root)
    counts["leaf_guards"] += len(root.get_epilogue_lambda_guards())
    return counts


def tree_size(frames: Sequence[CapturedFrame]) -> dict[str, int]:
    total = {"managers": 0, "leaf_guards": 0}
    for frame in frames:
        counts = count_nodes(frame.wrapper.fork_root) if frame.is_fork else count_stock_nodes(frame.wrapper.root)
        for key in total:
            total[key] += counts[key]
    total["nodes"] = total["managers"] + total["leaf_guards"]
    return total


@dataclasses.dataclass
class EngineSession:
    """One engine's compile of the model: the compiled callable, what the
    hooks saw, and the log lines of logger "dynamo_guards"."""

    engine: str
    compiled: Callable[..., Any]
    capture: CompileCapture
    logs: LogCollector
    fallbacks: int = 0  # frames of the first call the fork left to stock torch
    first_frames: list[CapturedFrame] = dataclasses.field(default_factory=list)
    first_builds: list[BuildRecord] = dataclasses.field(default_factory=list)
    keepalive: list[Any] = dataclasses.field(default_factory=list)
    first_output: Any = None  # what the first compiled call returned


def output_tensors(output: Any) -> list[torch.Tensor]:
    """The tensors of a model's output, in order (a transformers
    ModelOutput, tuples, lists, dicts; other leaves, such as a KV cache
    object, are left out)."""
    if isinstance(output, torch.Tensor):
        return [output]
    if hasattr(output, "to_tuple"):
        output = output.to_tuple()
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (tuple, list)):
        return [t for item in output for t in output_tensors(item)]
    return []


def outputs_match(compiled: Any, eager: Any) -> bool:
    """Whether a compiled call returned what the eager call did: the same
    tensors, equal up to float rounding."""
    a, b = output_tensors(compiled), output_tensors(eager)
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and torch.allclose(x, y, rtol=1e-4, atol=1e-5, equal_nan=True)
        for x, y in zip(a, b)
    )


@contextlib.contextmanager
def engine_session(engine: str, spec: ModelSpec, model: nn.Module, inputs: Inputs) -> Iterator[EngineSession]:
    """``reset()``, compile with ``engine`` and call once; the engine stays
    active (installed / config patched) until the block ends."""
    torch._dynamo.reset()
    with collect_logs("dynamo_guards") as logs, engine_context(engine), capture_compiles() as capture:
        session = EngineSession(engine, torch.compile(model, backend="eager"), capture, logs)
        fallbacks_before = dynamo_guards.fallback_count()
        with grad_mode(spec):
            session.first_output = spec.call(session.compiled, inputs)
        session.fallbacks = dynamo_guards.fallback_count() - fallbacks_before
        session.first_frames = list(capture.frames)
        session.first_builds = list(capture.builds)
        yield session
        session.keepalive = live_output_codes()
