"""Guard evaluation overhead: stock Dynamo vs. stock with recursive dict tags
vs. the dynamo_guards fork, measured in ONE process on the SAME frames.

Usage::

    python benchmarks/dynamo/guard_overhead.py                  # mobilebert, mlp100
    python benchmarks/dynamo/guard_overhead.py --models bert,gpt2 --json out.json --plot out.png
    python benchmarks/dynamo/guard_overhead.py --quick          # fewer rounds, smoke test
    python benchmarks/dynamo/guard_overhead.py --list           # known models

Engines
    ``stock``            torch 2.13 defaults.
    ``stock_dict_tags``  torch with ``use_recursive_dict_tags_for_guards=True``
                         (patched in while compiling; the tag-safe marking is
                         done when the tree is built).
    ``fork``             ``dynamo_guards.install()`` active while compiling.

Methodology (see shared/DESIGN.md, "Measuring")
    For each engine in turn: ``torch._dynamo.reset()``, ``torch.compile(model,
    backend="eager")`` and one call in the grad mode of the model config (the
    GLOBAL_STATE guard fails in any other grad mode). The
    ``guard_manager_testing_hook_fn`` hook captures each compiled frame's
    GuardManagerWrapper and a *copy* of its f_locals (transformers mutates
    ``kwargs`` in place). All engines compile the same model instance, so they
    guard the same objects. The compiled output code of every engine is kept
    alive: Dynamo deletes the globals it installed for a frame (which the
    guards read, e.g. ``G['__builtins_dict___0']``) when that code dies, which
    the next engine's ``reset()`` would otherwise cause.

    warm      Median over rounds of the per-check time of a batch (~20 ms) of
              back-to-back ``wrapper.root.check(f_locals)`` calls: the object
              the C++ cache entry calls (for the fork, torch's root delegating
              to the engine). Engines are interleaved round by round in
              rotating order, so machine noise hits all of them alike; every
              engine is pre-warmed first and each batch follows 3 untimed
              checks. The fork is also timed through ``wrapper.fork_root.check``.
    in situ   One check right after an eager forward pass of the model (which
              evicts the guard data from the CPU caches), median over rounds,
              interleaved like ``warm``. This is what a user pays per call.
    e2e       Per-call time of the compiled model minus its per-call time under
              ``torch.compiler.set_stance(skip_guard_eval_unsafe=True)``: the
              median of paired differences, measured in each engine's own phase
              (the cache entry of only one engine can be live at a time).
              Noisy when the forward pass dominates; read it with ``in situ``.
    build     Wall time of ``CheckFunctionManager.__init__``, summed over the
              frames of the first compile. The timing wrapper sits around
              whatever ``__init__`` is current, i.e. around the fork's install
              wrapper, so a fork fallback to stock is paid for. It includes
              finalize(), torch's sanity check of the fresh guards and its
              one-shot latency profile; ``build_guards`` (building the tree
              alone) is reported too.
    tree      Managers + leaf guards of the tree each engine evaluates (stock
              and stock_dict_tags share the stock tree; dict tags only skip
              parts of it at run time).
    callgrind (``--callgrind``) The script re-runs itself under
              ``valgrind --tool=callgrind --instr-atstart=no`` per model,
              compiles with every engine, and counts instructions of a batch
              of checks per engine through client requests (a tiny C helper
              built with ``cc``); the count for an empty torch root (the
              Python loop's share) is subtracted. Counts repeat exactly, so
              they settle small differences that timings on a shared machine
              cannot.

Times are medians (quartiles are in ``--json``); ratios stock/fork and
stock_dict_tags/fork are the figures to quote, not the absolute numbers
(machines are shared). Torch runs on one intra-op thread by default
(``--threads``), which keeps forward passes steady. Fork fallbacks to stock
(log lines from logger "dynamo_guards"), guards that fail on their own frame,
recompiles and exceptions are printed under each table.
"""

from __future__ import annotations

import os

# No downloads: models are built from configs with random weights.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import argparse
import contextlib
import dataclasses
import functools
import gc
import importlib
import importlib.util
import json
import logging
import pathlib
import platform
import statistics
import sys
import time
import traceback
from typing import Any, Callable, ContextManager, Iterator, Sequence

import torch
import torch._dynamo
import torch._dynamo.guards as stock_guards
from torch import nn
from torch._dynamo.utils import CleanupManager

import dynamo_guards
from dynamo_guards.guard_manager_wrapper import ForkGuardManagerWrapper
from dynamo_guards.tree_printer import count_nodes

Inputs = dict[str, torch.Tensor]
CheckFn = Callable[[], bool]

ENGINES: tuple[str, ...] = ("stock", "stock_dict_tags", "fork")
FORK_DIRECT = "fork_root"  # the fork timed without torch's delegating root
SEED = 0


# --------------------------------------------------------------------------
# Model registry: one entry per model.
# --------------------------------------------------------------------------


class ModelUnavailable(Exception):
    """The model cannot be built here (a package is missing)."""


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    build: Callable[[], nn.Module]
    make_inputs: Callable[[nn.Module], Inputs]
    train: bool = False  # train mode + grad enabled, else eval + no_grad


def _transformers_model(model_class: str, config_class: str, **config: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        transformers = _import_or_unavailable("transformers")
        cfg = getattr(transformers, config_class)(**config)
        return getattr(transformers, model_class)(cfg)

    return build


# Schemas of the torchvision ops that torchvision's import registers fake
# kernels for whether or not its C++ library loaded.
_TORCHVISION_OPS_FAKED_AT_IMPORT: dict[str, str] = {
    "nms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}


@functools.cache
def _declare_torchvision_ops_if_unloadable() -> None:
    """Lets torchvision import when its C++ ops library cannot load.

    The registries' torchvision 0.28 (the release for torch 2.13) is a CUDA
    build: its ``_C`` library does not load against the CPU torch wheel, and
    torchvision's import then fails while registering fake kernels for
    ``nms`` and ``qnms``, which that library would have defined. timm (and
    transformers, where torchvision is installed) import torchvision for
    Python helpers only, and the models benchmarked here call none of its
    ops. So, when the library does not load, this declares those two
    schemas, without kernels (a call raises), before either imports
    torchvision. Where the library loads, it defines them itself and this
    does nothing.
    """
    if "torchvision" in sys.modules:
        return
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return
    try:
        for library in pathlib.Path(spec.submodule_search_locations[0]).glob("_C*.so"):
            torch.ops.load_library(str(library))
        return
    except OSError:
        pass
    for name, schema in _TORCHVISION_OPS_FAKED_AT_IMPORT.items():
        torch.library.define(f"torchvision::{name}", schema)


def _timm_model(name: str, **kwargs: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        timm = _import_or_unavailable("timm")
        return timm.create_model(name, pretrained=False, **kwargs)

    return build


def _import_or_unavailable(module: str) -> Any:
    try:
        _declare_torchvision_ops_if_unloadable()  # timm and transformers import it when present
        return importlib.import_module(module)
    except ImportError as e:
        raise ModelUnavailable(f"{module} is not installed ({e})") from e
    except RuntimeError as e:  # e.g. a torchvision built for another torch
        raise ModelUnavailable(f"{module} fails to import ({e})") from e


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(SEED)


def token_inputs(model: nn.Module, seq_len: int = 16) -> Inputs:
    vocab_size = model.config.vocab_size  # type: ignore[union-attr]
    return {"input_ids": torch.randint(0, vocab_size, (1, seq_len), generator=_generator())}


def encoder_decoder_inputs(model: nn.Module, seq_len: int = 16) -> Inputs:
    inputs = token_inputs(model, seq_len)
    inputs["decoder_input_ids"] = inputs["input_ids"].clone()
    return inputs


def hf_image_inputs(model: nn.Module) -> Inputs:
    cfg = model.config  # type: ignore[union-attr]
    shape = (1, cfg.num_channels, cfg.image_size, cfg.image_size)
    return {"pixel_values": torch.randn(shape, generator=_generator())}


def image_inputs(size: int) -> Callable[[nn.Module], Inputs]:
    def make(model: nn.Module) -> Inputs:
        return {"x": torch.randn((1, 3, size, size), generator=_generator())}

    return make


def build_mlp100() -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(100):
        layers += [nn.Linear(16, 16), nn.ReLU()]
    return nn.Sequential(*layers)


def mlp_inputs(model: nn.Module) -> Inputs:
    return {"input": torch.randn((1, 16), generator=_generator())}


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec("mobilebert", _transformers_model("MobileBertModel", "MobileBertConfig"), token_inputs),
        ModelSpec(
            "mobilebert_train",
            _transformers_model("MobileBertModel", "MobileBertConfig"),
            token_inputs,
            train=True,
        ),
        ModelSpec("mlp100", build_mlp100, mlp_inputs),
        ModelSpec("bert", _transformers_model("BertModel", "BertConfig"), token_inputs),
        ModelSpec("distilbert", _transformers_model("DistilBertModel", "DistilBertConfig"), token_inputs),
        ModelSpec("gpt2", _transformers_model("GPT2Model", "GPT2Config"), token_inputs),
        ModelSpec("t5-small", _transformers_model("T5Model", "T5Config"), encoder_decoder_inputs),
        # 32x32 images (4 patches): the guard tree is that of the default ViT,
        # the forward pass is short enough for the e2e difference to show.
        ModelSpec("vit", _transformers_model("ViTModel", "ViTConfig", image_size=32), hf_image_inputs),
        # `make bench-timm` installs timm and torchvision (which timm imports)
        # and runs these two; `make setup` installs neither, so elsewhere they
        # report themselves unavailable.
        # Small images for the same reason as "vit": the guard trees are
        # those of 224x224 inputs, but for the input's sizes.
        ModelSpec("timm_resnet50", _timm_model("resnet50"), image_inputs(64)),
        ModelSpec("timm_vit", _timm_model("vit_base_patch16_224", img_size=32), image_inputs(32)),
    )
}
DEFAULT_MODELS: tuple[str, ...] = ("mobilebert", "mlp100")


def grad_mode(spec: ModelSpec) -> ContextManager[Any]:
    return torch.enable_grad() if spec.train else torch.no_grad()


# --------------------------------------------------------------------------
# Capturing frames and build times while one engine compiles.
# --------------------------------------------------------------------------


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

    @functools.wraps(current_init)
    def timed_init(self: Any, f_code: Any, *args: Any, **kwargs: Any) -> None:
        record = BuildRecord(getattr(f_code, "co_name", "<unknown>"))
        capture.builds.append(record)
        start = time.perf_counter()
        try:
            current_init(self, f_code, *args, **kwargs)
        finally:
            record.init_s = time.perf_counter() - start

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
    cfm.__init__ = timed_init  # type: ignore[method-assign]
    cfm.build_guards = timed_build_guards  # type: ignore[method-assign]
    stock_guards.guard_manager_testing_hook_fn = hook
    try:
        yield capture
    finally:
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


# --------------------------------------------------------------------------
# Guard tree size.
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# Timing.
# --------------------------------------------------------------------------


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def make_check(frames: Sequence[CapturedFrame], direct_fork: bool = False) -> CheckFn:
    """One guard evaluation of every frame the compiled call runs."""

    def root_of(frame: CapturedFrame) -> Any:
        return frame.wrapper.fork_root if direct_fork else frame.wrapper.root

    if len(frames) == 1:
        return functools.partial(root_of(frames[0]).check, frames[0].f_locals)
    pairs = [(root_of(frame).check, frame.f_locals) for frame in frames]

    def check_all() -> bool:
        ok = True
        for check, f_locals in pairs:
            ok = check(f_locals) and ok
        return ok

    return check_all


def engine_checks(runs: dict[str, EngineRun]) -> dict[str, CheckFn]:
    """What each engine's cache entry runs per call, plus the fork's own root
    without torch's delegating root (only when every frame is the fork's)."""
    checks = {engine: make_check(run.frames) for engine, run in runs.items() if run.frames}
    fork_frames = runs["fork"].frames if "fork" in runs else []
    if fork_frames and all(frame.is_fork for frame in fork_frames):
        checks[FORK_DIRECT] = make_check(fork_frames, direct_fork=True)
    return checks


def top_memoized_managers(root: Any) -> list[Any]:
    """The managers whose memo validates on a fork check (memos below them
    serve only when theirs is disabled)."""
    found: list[Any] = []

    def visit(mgr: Any) -> None:
        if mgr.is_memoized() and mgr.memo_log_size() is not None:
            found.append(mgr)
            return
        for child in mgr.get_child_managers():
            visit(child)
        if hasattr(mgr, "get_key_value_managers"):
            for pair in mgr.get_key_value_managers().values():
                for child in pair:
                    if child is not None:
                        visit(child)

    visit(root)
    return found


def measure_touch_floor(frames: Sequence[CapturedFrame], rounds: int) -> float:
    """A lower bound for any sound check of the fork's memoized subtrees: the
    time to load one word from every object their logs name, and from each
    tensor's TensorImpl and AutogradMeta (no comparison, no unmemoized part
    of the tree). Median over rounds, each right after a passing check."""
    samples = []
    for _ in range(rounds):
        total = 0.0
        for frame in frames:
            frame.wrapper.fork_root.check(frame.f_locals)
            for mgr in top_memoized_managers(frame.wrapper.fork_root):
                total += mgr.memo_touch_floor_us(200)[0]
        samples.append(total)
    return statistics.median(samples)


def time_batch_us(check: CheckFn, n: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(n):
        check()
    return (time.perf_counter_ns() - start) / n / 1e3


def run_for(check: CheckFn, seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        check()


def batch_size_for(check: CheckFn, target_s: float) -> int:
    one_us = max(time_batch_us(check, 5), 0.05)
    return max(5, min(100_000, int(target_s * 1e6 / one_us)))


def rotated(names: Sequence[str], round_index: int) -> list[str]:
    shift = round_index % len(names)
    return list(names[shift:]) + list(names[:shift])


Stats = dict[str, float]


def summarize(samples: Sequence[float]) -> Stats:
    """Median and spread of timing samples (µs)."""
    if not samples:
        return {"median": float("nan"), "p25": float("nan"), "p75": float("nan"), "min": float("nan"), "n": 0}
    if len(samples) == 1:
        p25 = p75 = samples[0]
    else:
        p25, _, p75 = statistics.quantiles(samples, n=4)
    return {"median": statistics.median(samples), "p25": p25, "p75": p75, "min": min(samples), "n": len(samples)}


WARM_UP_CALLS = 3  # untimed checks before each timed batch: the previous
# engine's batch has just evicted part of this engine's tree from the caches


def measure_warm(checks: dict[str, CheckFn], rounds: int, batch_s: float, prewarm_s: float) -> dict[str, Stats]:
    """Back-to-back checks, engines interleaved round by round. On shared VMs
    a tree that sat idle while other work ran stays slow for a few dozen
    checks, hence the pre-warm of every engine before the first round."""
    for check in checks.values():
        run_for(check, prewarm_s)
    batch = {name: batch_size_for(check, batch_s) for name, check in checks.items()}
    samples: dict[str, list[float]] = {name: [] for name in checks}
    names = list(checks)
    with no_gc():
        for r in range(rounds):
            for name in rotated(names, r):
                time_batch_us(checks[name], WARM_UP_CALLS)
                samples[name].append(time_batch_us(checks[name], batch[name]))
    return {name: summarize(values) for name, values in samples.items()}


def measure_in_situ(
    checks: dict[str, CheckFn], eager_forward: Callable[[], Any], rounds: int
) -> tuple[dict[str, Stats], dict[str, int]]:
    """One check right after an eager forward pass of the model; returns the
    timing stats (µs) and how many of the timed checks returned False."""
    samples: dict[str, list[float]] = {name: [] for name in checks}
    failures = {name: 0 for name in checks}
    names = list(checks)
    eager_forward()
    with no_gc():
        for r in range(rounds):
            for name in rotated(names, r):
                eager_forward()
                start = time.perf_counter_ns()
                ok = checks[name]()
                samples[name].append((time.perf_counter_ns() - start) / 1e3)
                failures[name] += not ok
    return {name: summarize(values) for name, values in samples.items()}, failures


def time_call_us(fn: Callable[[], Any]) -> float:
    start = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - start) / 1e3


def measure_end_to_end(compiled_call: Callable[[], Any], pairs: int) -> dict[str, Stats]:
    """Compiled call vs. the same call with guard evaluation skipped,
    alternating call by call; the overhead is the median paired difference."""
    guarded: list[float] = []
    skipped: list[float] = []
    skip_stance = functools.partial(torch.compiler.set_stance, skip_guard_eval_unsafe=True)
    for _ in range(3):  # warm up both paths
        compiled_call()
        with skip_stance():
            compiled_call()
    with no_gc():
        for _ in range(pairs):
            guarded.append(time_call_us(compiled_call))
            with skip_stance():
                skipped.append(time_call_us(compiled_call))
    return {
        "overhead_us": summarize([g - s for g, s in zip(guarded, skipped)]),
        "guarded_call_us": summarize(guarded),
        "skip_guards_call_us": summarize(skipped),
    }


# --------------------------------------------------------------------------
# One model: compile with every engine, then measure.
# --------------------------------------------------------------------------


@dataclasses.dataclass
class BenchConfig:
    rounds: int
    e2e_pairs: int
    in_situ_rounds: int
    warm_batch_s: float
    prewarm_s: float


@dataclasses.dataclass
class EngineSession:
    """One engine's compile of the model: the compiled callable, what the
    hooks saw, and the log lines of logger "dynamo_guards"."""

    engine: str
    compiled: Callable[..., Any]
    capture: CompileCapture
    logs: LogCollector
    first_frames: list[CapturedFrame] = dataclasses.field(default_factory=list)
    first_builds: list[BuildRecord] = dataclasses.field(default_factory=list)
    keepalive: list[Any] = dataclasses.field(default_factory=list)


@contextlib.contextmanager
def engine_session(engine: str, spec: ModelSpec, model: nn.Module, inputs: Inputs) -> Iterator[EngineSession]:
    """``reset()``, compile with ``engine`` and call once; the engine stays
    active (installed / config patched) until the block ends."""
    torch._dynamo.reset()
    with collect_logs("dynamo_guards") as logs, engine_context(engine), capture_compiles() as capture:
        session = EngineSession(engine, torch.compile(model, backend="eager"), capture, logs)
        with grad_mode(spec):
            session.compiled(**inputs)
        session.first_frames = list(capture.frames)
        session.first_builds = list(capture.builds)
        yield session
        session.keepalive = live_output_codes()


@dataclasses.dataclass
class EngineRun:
    engine: str
    frames: list[CapturedFrame]
    build_init_s: float
    build_guards_s: float
    tree: dict[str, int]
    end_to_end: dict[str, Stats]
    problems: list[str]
    keepalive: list[Any]  # output codes whose installed globals the guards read


def guard_failure_reason(frame: CapturedFrame) -> str:
    root = frame.wrapper.fork_root if frame.is_fork else frame.wrapper.root
    try:
        info = root.check_verbose(frame.f_locals)
        return "; ".join(info.verbose_code_parts[:3])
    except Exception as e:  # noqa: BLE001 - a report, not control flow
        return f"check_verbose raised {type(e).__name__}: {e}"


def frame_problems(engine: str, frames: Sequence[CapturedFrame]) -> list[str]:
    """Fallbacks to stock, and guards that fail or raise on their own frame
    (call in the grad mode of the compile)."""
    problems: list[str] = []
    if not frames:
        problems.append("no frame was compiled (hook never called)")
    for frame in frames:
        if engine == "fork" and not frame.is_fork:
            problems.append(f"frame {frame.code_name}: guarded by stock torch, not the fork (fallback)")
        try:
            ok = frame.wrapper.root.check(frame.f_locals)
        except Exception as e:  # noqa: BLE001
            problems.append(f"frame {frame.code_name}: root.check raised {type(e).__name__}: {e}")
            continue
        if not ok:
            problems.append(f"frame {frame.code_name}: guards fail on their own f_locals: {guard_failure_reason(frame)}")
    return problems


def session_problems(session: EngineSession, after: str) -> list[str]:
    problems = [f"log {line}" for line in session.logs.lines]
    recompiles = len(session.capture.builds) - len(session.first_builds)
    if recompiles:
        problems.append(f"{recompiles} recompile(s) after the first call ({after})")
    return problems


def run_engine(engine: str, spec: ModelSpec, model: nn.Module, inputs: Inputs, bench: BenchConfig) -> EngineRun:
    with engine_session(engine, spec, model, inputs) as session:
        with grad_mode(spec):
            e2e = measure_end_to_end(lambda: session.compiled(**inputs), bench.e2e_pairs)
            problems = frame_problems(engine, session.first_frames)
    return EngineRun(
        engine=engine,
        frames=session.first_frames,
        build_init_s=sum(b.init_s for b in session.first_builds),
        build_guards_s=sum(b.build_guards_s for b in session.first_builds),
        tree=tree_size(session.first_frames),
        end_to_end=e2e,
        problems=session_problems(session, "during e2e timing") + problems,
        keepalive=session.keepalive,
    )


def prepare_model(spec: ModelSpec) -> tuple[nn.Module, Inputs]:
    torch.manual_seed(SEED)
    model = spec.build()
    model.train(spec.train)
    return model, spec.make_inputs(model)


def bench_model(spec: ModelSpec, bench: BenchConfig) -> dict[str, Any]:
    model, inputs = prepare_model(spec)
    runs = {engine: run_engine(engine, spec, model, inputs, bench) for engine in ENGINES}
    checks = engine_checks(runs)

    def eager_forward() -> Any:
        return model(**inputs)

    with grad_mode(spec):
        warm = measure_warm(checks, bench.rounds, bench.warm_batch_s, bench.prewarm_s)
        in_situ, in_situ_failures = measure_in_situ(checks, eager_forward, bench.in_situ_rounds)
        fork_frames = runs["fork"].frames if "fork" in runs else []
        touch_floor = (
            {"fork": measure_touch_floor(fork_frames, bench.rounds)}
            if fork_frames and all(f.is_fork for f in fork_frames)
            else {}
        )

    problems = {engine: list(run.problems) for engine, run in runs.items()}
    for name, count in in_situ_failures.items():
        if count:
            problems.setdefault(name, []).append(f"{count}/{bench.in_situ_rounds} in-situ checks returned False")
    return {
        "model": spec.name,
        "mode": "train/grad" if spec.train else "eval/no_grad",
        "parameters": sum(p.numel() for p in model.parameters()),
        "frames": {engine: len(run.frames) for engine, run in runs.items()},
        "frame_names": {engine: [f.code_name for f in run.frames] for engine, run in runs.items()},
        "warm_check_us": warm,
        "in_situ_check_us": in_situ,
        "memo_touch_floor_us": touch_floor,
        "end_to_end": {engine: run.end_to_end for engine, run in runs.items()},
        "build_init_s": {engine: run.build_init_s for engine, run in runs.items()},
        "build_guards_s": {engine: run.build_guards_s for engine, run in runs.items()},
        "tree": {engine: run.tree for engine, run in runs.items()},
        "problems": {name: lines for name, lines in problems.items() if lines},
    }


# --------------------------------------------------------------------------
# Instruction counts under callgrind (--callgrind).
# --------------------------------------------------------------------------

CALLGRIND_HELPER_C = r"""
#include <valgrind/callgrind.h>
int cg_running(void) { return RUNNING_ON_VALGRIND; }
void cg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void cg_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
void cg_zero(void) { CALLGRIND_ZERO_STATS; }
void cg_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""
CALLGRIND_BASELINE = "empty_torch_root"  # torch root without guards: the loop's own cost
CALLGRIND_LABEL_PREFIX = "guard_overhead:"


def build_callgrind_helper(directory: str) -> Any:
    """A tiny C library whose functions issue callgrind client requests."""
    import ctypes
    import subprocess

    source = os.path.join(directory, "cg_helper.c")
    library = os.path.join(directory, "cg_helper.so")
    with open(source, "w") as f:
        f.write(CALLGRIND_HELPER_C)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", library, source], check=True)
    helper = ctypes.CDLL(library)
    helper.cg_dump.argtypes = [ctypes.c_char_p]
    return helper


def count_instructions(helper: Any, checks: dict[str, CheckFn], calls: int) -> None:
    """One callgrind dump per check, labelled with its name, covering
    ``calls`` back-to-back checks (instrumentation is off outside)."""
    for name, check in checks.items():
        for _ in range(WARM_UP_CALLS):  # lazy first-call work is not per-call cost
            check()
        helper.cg_start()
        helper.cg_zero()
        for _ in range(calls):
            check()
        helper.cg_dump(f"{CALLGRIND_LABEL_PREFIX}{name}:{calls}".encode())
        helper.cg_stop()


def callgrind_child(spec: ModelSpec, calls: int, directory: str) -> int:
    """Runs inside valgrind: compile with every engine, then count."""
    helper = build_callgrind_helper(directory)
    if not helper.cg_running():
        raise SystemExit("--_callgrind-child must run under valgrind --tool=callgrind")
    model, inputs = prepare_model(spec)
    runs: dict[str, EngineRun] = {}
    for engine in ENGINES:
        with engine_session(engine, spec, model, inputs) as session:
            with grad_mode(spec):
                problems = frame_problems(engine, session.first_frames)
        runs[engine] = EngineRun(engine, session.first_frames, 0.0, 0.0, {}, {}, problems, session.keepalive)
        for line in session_problems(session, "") + problems:
            print(f"  ! {engine}: {line}", flush=True)
    checks = engine_checks(runs)
    empty_root = torch._C._dynamo.guards.RootGuardManager()
    checks[CALLGRIND_BASELINE] = functools.partial(empty_root.check, {})
    with grad_mode(spec):
        count_instructions(helper, checks, calls)
    return 0


def parse_callgrind_dumps(directory: str) -> dict[str, float]:
    """Instructions per check, by check name, from the labelled dumps."""
    per_check: dict[str, float] = {}
    for file_name in sorted(os.listdir(directory)):
        if not file_name.startswith("callgrind.out"):
            continue
        label, total = None, None
        with open(os.path.join(directory, file_name)) as f:
            for line in f:
                if line.startswith("desc: Trigger:") and CALLGRIND_LABEL_PREFIX in line:
                    label = line.split(CALLGRIND_LABEL_PREFIX, 1)[1].strip()
                elif line.startswith(("totals:", "summary:")):
                    total = int(line.split()[1])
        if label is not None and total is not None:
            name, calls = label.rsplit(":", 1)
            per_check[name] = total / int(calls)
    return per_check


def run_callgrind(spec: ModelSpec, calls: int) -> dict[str, float]:
    """Re-runs this script under callgrind for one model; instructions per
    check (the empty-root baseline, the Python loop's share, subtracted)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="guard_overhead_cg_") as directory:
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={directory}/callgrind.out",
            sys.executable,
            os.path.abspath(__file__),
            "--_callgrind-child",
            directory,
            "--models",
            spec.name,
            "--callgrind-calls",
            str(calls),
        ]
        completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        counts = parse_callgrind_dumps(directory)
    if completed.returncode != 0 or not counts:
        tail = "\n".join(completed.stdout.splitlines()[-30:])
        raise RuntimeError(f"callgrind run failed (exit {completed.returncode}):\n{tail}")
    for line in completed.stdout.splitlines():
        if line.startswith("  ! "):
            print(line)
    baseline = counts.pop(CALLGRIND_BASELINE, 0.0)
    return {name: value - baseline for name, value in counts.items()} | {CALLGRIND_BASELINE: baseline}


# --------------------------------------------------------------------------
# Reporting.
# --------------------------------------------------------------------------

NAN = float("nan")


def ratio(numerator: float, denominator: float) -> float:
    if denominator == 0 or denominator != denominator or numerator != numerator:
        return NAN
    return numerator / denominator


def medians(stats: dict[str, Stats]) -> dict[str, float]:
    return {name: s["median"] for name, s in stats.items()}


def metric_rows(result: dict[str, Any]) -> list[tuple[str, dict[str, float], str]]:
    """(label, value per engine, number format); times are medians."""
    e2e = result["end_to_end"]
    rows = [
        ("warm check (us)", medians(result["warm_check_us"]), "{:.2f}"),
        ("in situ check (us)", medians(result["in_situ_check_us"]), "{:.2f}"),
        ("memo touch floor, warm (us)", result.get("memo_touch_floor_us", {}), "{:.2f}"),
        ("e2e guard overhead (us)", {e: v["overhead_us"]["median"] for e, v in e2e.items()}, "{:.1f}"),
        ("e2e guarded call (us)", {e: v["guarded_call_us"]["median"] for e, v in e2e.items()}, "{:.1f}"),
    ]
    if "callgrind_ir_per_check" in result:
        rows.append(("callgrind Ir / check", result["callgrind_ir_per_check"], "{:.0f}"))
    rows += [
        ("guard build, CFM init (ms)", {e: 1e3 * v for e, v in result["build_init_s"].items()}, "{:.1f}"),
        ("guard build, build_guards (ms)", {e: 1e3 * v for e, v in result["build_guards_s"].items()}, "{:.1f}"),
        ("tree nodes", {e: float(t["nodes"]) for e, t in result["tree"].items()}, "{:.0f}"),
        ("tree managers", {e: float(t["managers"]) for e, t in result["tree"].items()}, "{:.0f}"),
        ("tree leaf guards", {e: float(t["leaf_guards"]) for e, t in result["tree"].items()}, "{:.0f}"),
    ]
    return rows


def format_number(fmt: str, value: float | None) -> str:
    if value is None or value != value:
        return "-"
    return fmt.format(value)


LABEL_WIDTH = 32
CELL_WIDTH = 16


def table_line(label: str, cells: Sequence[str]) -> str:
    return f"{label:<{LABEL_WIDTH}}" + "".join(f"{c:>{CELL_WIDTH}}" for c in cells)


def format_table(result: dict[str, Any]) -> str:
    header = table_line("metric", [*ENGINES, "stock/fork", "tags/fork"])
    frames = ", ".join(f"{e} {n}" for e, n in result["frames"].items())
    lines = [
        f"== {result['model']}: {result['parameters'] / 1e6:.2f}M params, {result['mode']}, frames: {frames} ==",
        header,
        "-" * len(header),
    ]
    for label, values, fmt in metric_rows(result):
        cells = [format_number(fmt, values.get(e)) for e in ENGINES]
        fork = values.get("fork", NAN)
        cells.append(format_number("{:.2f}x", ratio(values.get("stock", NAN), fork)))
        cells.append(format_number("{:.2f}x", ratio(values.get("stock_dict_tags", NAN), fork)))
        lines.append(table_line(label, cells))
    direct_rows = [("warm", result["warm_check_us"]), ("in situ", result["in_situ_check_us"])]
    for label, stats in direct_rows:
        if FORK_DIRECT in stats:
            value = format_number("{:.2f}", stats[FORK_DIRECT]["median"])
            lines.append(table_line(f"  {label}, fork_root.check (us)", ["", "", value]))
    if CALLGRIND_BASELINE in result.get("callgrind_ir_per_check", {}):
        baseline = result["callgrind_ir_per_check"][CALLGRIND_BASELINE]
        lines.append(f"  (callgrind: loop + empty torch root = {baseline:.0f} Ir/check, subtracted)")
    for name, problems in result["problems"].items():
        for problem in problems:
            lines.append(f"  ! {name}: {problem}")
    return "\n".join(lines)


PLOT_METRICS: tuple[tuple[str, str], ...] = (
    ("warm check (us)", "warm_check_us"),
    ("in situ check (us)", "in_situ_check_us"),
    ("e2e guard overhead (us)", "end_to_end"),
)


def plot_value(result: dict[str, Any], key: str, engine: str) -> float:
    stats = result[key].get(engine)
    if stats is None:
        return NAN
    value = stats["overhead_us"]["median"] if key == "end_to_end" else stats["median"]
    return value if value > 0 else NAN  # log scale: noise can make e2e <= 0


def write_plot(results: Sequence[dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PLOT_METRICS), figsize=(5 * len(PLOT_METRICS), 4.5), squeeze=False)
    width = 0.8 / len(ENGINES)
    for ax, (title, key) in zip(axes[0], PLOT_METRICS):
        shown: list[float] = []
        for i, engine in enumerate(ENGINES):
            xs = [m + (i - (len(ENGINES) - 1) / 2) * width for m in range(len(results))]
            values = [plot_value(r, key, engine) for r in results]
            bars = ax.bar(xs, values, width, label=engine)
            ax.bar_label(bars, labels=[format_number("{:.0f}" if v >= 100 else "{:.3g}", v) for v in values], fontsize=7)
            shown += [v for v in values if v == v]
        ax.set_xticks(range(len(results)))
        ax.set_xticklabels([r["model"] for r in results], rotation=30, ha="right")
        ax.set_yscale("log")
        if shown:  # start well below the smallest bar so that every bar is visible
            ax.set_ylim(bottom=min(shown) / 4, top=max(shown) * 2)
        ax.set_title(title)
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0][0].legend()
    fig.suptitle("Guard evaluation cost per call (median, lower is better)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def environment() -> dict[str, Any]:
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
    }


# --------------------------------------------------------------------------
# Command line.
# --------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated subset of --list")
    parser.add_argument("--list", action="store_true", help="print the known models and exit")
    parser.add_argument("--rounds", type=int, default=50, help="warm rounds and e2e call pairs; in situ uses 3x")
    parser.add_argument("--quick", action="store_true", help="5 rounds, short batches (smoke test; rough numbers)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (default 1: guards run on one thread anyway, and one thread keeps "
        "forward passes steady on a shared machine)",
    )
    parser.add_argument("--json", metavar="PATH", help="write machine-readable results (medians and quartiles)")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG bar chart (log y)")
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="also count instructions per check under valgrind --tool=callgrind (slow: the models "
        "are compiled again, under valgrind)",
    )
    parser.add_argument("--callgrind-calls", type=int, default=20, help="checks counted per engine")
    parser.add_argument("--_callgrind-child", dest="callgrind_child", metavar="DIR", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def bench_config(args: argparse.Namespace) -> BenchConfig:
    rounds = 5 if args.quick else max(1, args.rounds)
    return BenchConfig(
        rounds=rounds,
        e2e_pairs=rounds,
        in_situ_rounds=3 * rounds,
        warm_batch_s=0.003 if args.quick else 0.02,
        prewarm_s=0.05 if args.quick else 0.3,
    )


def selected_models(names: str) -> list[ModelSpec]:
    specs = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        if name not in MODELS:
            raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODELS)}")
        specs.append(MODELS[name])
    return specs


def bench_one(spec: ModelSpec, bench: BenchConfig, args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    result = bench_model(spec, bench)
    if args.callgrind:
        try:
            result["callgrind_ir_per_check"] = run_callgrind(spec, max(1, args.callgrind_calls))
        except Exception as e:  # noqa: BLE001 - timings stand without the counts
            result["problems"].setdefault("callgrind", []).append(f"{type(e).__name__}: {e}")
    result["bench_seconds"] = time.perf_counter() - started
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print("\n".join(f"{name}{'  (default)' if name in DEFAULT_MODELS else ''}" for name in MODELS))
        return 0
    torch.set_num_threads(max(1, args.threads))
    if args.callgrind_child:
        (spec,) = selected_models(args.models)
        return callgrind_child(spec, max(1, args.callgrind_calls), args.callgrind_child)
    bench = bench_config(args)
    results: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    print(f"# {environment()}, {bench}", flush=True)
    for spec in selected_models(args.models):
        try:
            result = bench_one(spec, bench, args)
        except ModelUnavailable as e:
            skipped[spec.name] = str(e)
            print(f"== {spec.name}: skipped, {e}\n", flush=True)
            continue
        except Exception as e:  # noqa: BLE001 - one model's failure must not hide the others
            skipped[spec.name] = f"{type(e).__name__}: {e}"
            print(f"== {spec.name}: FAILED\n{traceback.format_exc()}", flush=True)
            continue
        results.append(result)
        print(format_table(result) + f"\n  ({result['bench_seconds']:.0f} s)\n", flush=True)
    for path in (args.json, args.plot):
        if path:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if args.json:
        report = {"environment": environment(), "config": dataclasses.asdict(bench), "results": results, "skipped": skipped}
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    if args.plot and results:
        write_plot(results, args.plot)
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
