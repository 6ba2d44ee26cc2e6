"""Guard evaluation overhead: stock Dynamo vs. stock with recursive dict tags
vs. the dynamo_guards fork, measured in ONE process on the SAME frames.

Usage (``make bench`` runs it once per interpreter, then report.py)::

    python benchmarks/dynamo/guard_overhead.py                  # mobilebert, mlp100, llama32_decode
    python benchmarks/dynamo/guard_overhead.py --models bert,gpt2 --json out.json --plot out.png
    python benchmarks/dynamo/guard_overhead.py --quick          # fewer rounds, smoke test
    python benchmarks/dynamo/guard_overhead.py --list           # known models

Engines
    ``stock``            the running torch release's defaults (the header line
                         and the JSON's ``stock_config`` give the settings
                         that differ between releases, e.g. 2.14 turned
                         ``use_lamba_guard_for_object_aliasing`` off).
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
              cannot. ``--callgrind-cache-sim`` adds callgrind's cache
              simulation (32 KiB L1, 1 MiB L2: this machine's per core) and
              reports the L2 read misses per check: the lines a check must
              bring in from the shared L3 on every call, what makes a check
              slow, and sensitive to the machine's other tenants, when its
              working set outgrows the L2.

Times are medians (quartiles are in ``--json``); ratios stock/fork and
stock_dict_tags/fork are the figures to quote, not the absolute numbers
(machines are shared). Torch runs on one intra-op thread by default
(``--threads``), which keeps forward passes steady. Fork fallbacks to stock
(log lines from logger "dynamo_guards"), guards that fail on their own frame,
recompiles and exceptions are printed under each table.

This file is the runner; each concern has a module in ``guard_bench/``:
``models`` (the model zoo, built from configs), ``torchvision_shim``
(importing timm beside a torchvision that cannot load its ops), ``capture``
(compiling with one engine and keeping its trees), ``timing``, ``callgrind``,
``tables`` and ``plots``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import platform
import sys
import time
import traceback
from typing import Any, Sequence

import torch
from torch import nn

from guard_bench import neighbours
from guard_bench.callgrind import CALLGRIND_BASELINE, build_callgrind_helper, count_instructions, run_callgrind
from guard_bench.capture import ENGINES, FORK_DIRECT, CapturedFrame, EngineSession, engine_session, outputs_match, tree_size
from guard_bench.models import (
    DEFAULT_MODELS,
    MODELS,
    Inputs,
    ModelSpec,
    ModelUnavailable,
    grad_mode,
    prepare_model,
    selected_models,
)
from guard_bench.plots import write_plot
from guard_bench.tables import FLOOR_KEYS, format_table
from guard_bench.timing import (
    FLOORS,
    CheckFn,
    Stats,
    check_floor,
    make_check,
    measure_end_to_end,
    measure_in_situ,
    measure_floor,
    measure_in_situ_floor,
    measure_paired_floor_ratio,
    measure_warm,
)


@dataclasses.dataclass
class BenchConfig:
    rounds: int
    e2e_pairs: int
    in_situ_rounds: int
    warm_batch_s: float
    prewarm_s: float



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
    fallbacks: int  # frames the fork left to stock torch (dynamo_guards.fallback_count())
    first_output: Any = None  # the first compiled call's result


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
            e2e = measure_end_to_end(lambda: spec.call(session.compiled, inputs), bench.e2e_pairs)
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
        fallbacks=session.fallbacks,
        first_output=session.first_output,
    )


def bench_model(spec: ModelSpec, bench: BenchConfig) -> dict[str, Any]:
    model, inputs = prepare_model(spec)
    with grad_mode(spec):
        eager_output = spec.call(model, inputs)
    runs = {engine: run_engine(engine, spec, model, inputs, bench) for engine in ENGINES}
    checks = engine_checks(runs)

    def eager_forward() -> Any:
        return spec.call(model, inputs)

    with grad_mode(spec):
        warm = measure_warm(checks, bench.rounds, bench.warm_batch_s, bench.prewarm_s)
        in_situ, in_situ_failures = measure_in_situ(checks, eager_forward, bench.in_situ_rounds)
        fork_frames = runs["fork"].frames if "fork" in runs else []
        memoized = bool(fork_frames) and all(f.is_fork for f in fork_frames)
        floors: dict[str, dict[str, float]] = {}
        tags_over_check_floor: dict[str, float] = {}
        if memoized:
            for name, floor in FLOORS:
                floors[f"{name}_us"] = {"fork": measure_floor(fork_frames, bench.rounds, floor)}
                floors[f"{name}_in_situ_us"] = {
                    "fork": measure_in_situ_floor(fork_frames, eager_forward, bench.in_situ_rounds, floor)
                }
            if "stock_dict_tags" in checks:
                tags_over_check_floor = measure_paired_floor_ratio(
                    checks["stock_dict_tags"],
                    fork_frames,
                    check_floor,
                    eager_forward,
                    bench.rounds,
                    bench.in_situ_rounds,
                    bench.warm_batch_s,
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
        **{key: floors.get(key, {}) for key in FLOOR_KEYS},
        "tags_over_check_floor": tags_over_check_floor,
        "end_to_end": {engine: run.end_to_end for engine, run in runs.items()},
        "build_init_s": {engine: run.build_init_s for engine, run in runs.items()},
        "build_guards_s": {engine: run.build_guards_s for engine, run in runs.items()},
        "tree": {engine: run.tree for engine, run in runs.items()},
        "fallbacks": {engine: run.fallbacks for engine, run in runs.items() if engine == "fork"},
        "equal_to_eager": {engine: outputs_match(run.first_output, eager_output) for engine, run in runs.items()},
        "problems": {name: lines for name, lines in problems.items() if lines},
    }


def engine_checks(runs: dict[str, EngineRun]) -> dict[str, CheckFn]:
    """What each engine's cache entry runs per call, plus the fork's own root
    without torch's delegating root (only when every frame is the fork's)."""
    checks = {engine: make_check(run.frames) for engine, run in runs.items() if run.frames}
    fork_frames = runs["fork"].frames if "fork" in runs else []
    if fork_frames and all(frame.is_fork for frame in fork_frames):
        checks[FORK_DIRECT] = make_check(fork_frames, direct_fork=True)
    return checks


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
        runs[engine] = EngineRun(
            engine=engine,
            frames=session.first_frames,
            build_init_s=0.0,
            build_guards_s=0.0,
            tree={},
            end_to_end={},
            problems=problems,
            keepalive=session.keepalive,
            fallbacks=session.fallbacks,
        )
        for line in session_problems(session, "") + problems:
            print(f"  ! {engine}: {line}", flush=True)
    checks = engine_checks(runs)
    empty_root = torch._C._dynamo.guards.RootGuardManager()
    checks[CALLGRIND_BASELINE] = functools.partial(empty_root.check, {})
    with grad_mode(spec):
        count_instructions(helper, checks, calls)
    return 0


# Dynamo settings that decide what stock's guard tree holds (and the fork
# overrides while it builds: dynamo_guards/install.py), reported as the
# running release has them.
STOCK_SETTINGS = ("use_recursive_dict_tags_for_guards", "use_lamba_guard_for_object_aliasing", "skip_nnmodule_hook_guards")


def environment() -> dict[str, Any]:
    return {
        "torch": torch.__version__,
        "stock_config": {name: getattr(torch._dynamo.config, name) for name in STOCK_SETTINGS},
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
    }


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
    parser.add_argument(
        "--callgrind-cache-sim",
        action="store_true",
        help="with --callgrind: also simulate a 32 KiB L1 and a 1 MiB L2 (this machine's per core) and report "
        "the L2 read misses per check, the lines a check brings in from the shared L3",
    )
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


def bench_one(spec: ModelSpec, bench: BenchConfig, args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    cpu_before = neighbours.snapshot()
    l3_before = neighbours.l3_gather_ns()
    result = bench_model(spec, bench)
    result["l3_gather_ns"] = [l3_before, neighbours.l3_gather_ns()]
    if args.callgrind:
        try:
            events = run_callgrind(__file__, spec.name, max(1, args.callgrind_calls), args.callgrind_cache_sim)
            result["callgrind_ir_per_check"] = events["Ir"]
            if "DLmr" in events:
                result["callgrind_l2_read_misses_per_check"] = events["DLmr"]
        except Exception as e:  # noqa: BLE001 - timings stand without the counts
            result["problems"].setdefault("callgrind", []).append(f"{type(e).__name__}: {e}")
    result["bench_seconds"] = time.perf_counter() - started
    result["neighbour_cpus"] = neighbours.neighbour_cpus(cpu_before, neighbours.snapshot())
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
        print(format_table(result, platform.python_version()) + f"\n  ({result['bench_seconds']:.0f} s)\n", flush=True)
    for path in (args.json, args.plot):
        if path:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    report = {"environment": environment(), "config": dataclasses.asdict(bench), "results": results, "skipped": skipped}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    if args.plot and results:
        write_plot([report], args.plot)
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())

