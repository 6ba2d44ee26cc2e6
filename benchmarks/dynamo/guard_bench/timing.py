"""Timing guard checks: warm batches and single checks after a forward pass
(engines interleaved round by round), end-to-end call overhead, and the
fork's floors (memo touch floor, tensor floor, root leaves). Times are in microseconds."""

from __future__ import annotations

import contextlib
import functools
import gc
import statistics
import time
from typing import Any, Callable, Iterator, Sequence

import torch
from dynamo_guards import _C as fork

from guard_bench.capture import CapturedFrame
from guard_bench.python_reads import reads_of_one_check, replayer

CheckFn = Callable[[], bool]
Stats = dict[str, float]


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


# A floor of one frame's fork check: prepared right after a passing check of
# the frame, then timed with a number of passes (microseconds per pass).
FloorTimer = Callable[[int], float]
FloorFn = Callable[[CapturedFrame], FloorTimer]


def touch_floor(frame: CapturedFrame) -> FloorTimer:
    """A lower bound for any sound check of the frame's memoized subtrees:
    the time to load one word from every object their logs name (through
    Walk steps, the logs below them too), and from each tensor's TensorImpl
    and AutogradMeta (no comparison, no unmemoized part of the tree)."""
    root = frame.wrapper.fork_root
    root.check(frame.f_locals)
    return memo_touches(root, tensors=True)


def memo_touches(root: Any, tensors: bool) -> FloorTimer:
    """The touch floor of the root's top memoized managers, with or without
    each Tensor step's tensor, TensorImpl and AutogradMeta."""
    managers = top_memoized_managers(root)
    return lambda passes: sum(mgr.memo_touch_floor_us(passes, tensors=tensors)[0] for mgr in managers)


def tensor_floor(frame: CapturedFrame) -> FloorTimer:
    """The fork's own comparisons of the frame's guarded tensors, alone
    (``memo_tensor_floor.h``): what every check pays while torch signals no
    change of tensor metadata, whatever the rest of the engine does."""
    floor = frame.wrapper.fork_root.tensor_floor(frame.f_locals)
    if floor is None:
        raise RuntimeError(f"frame {frame.code_name}: the fork's check failed on its own locals")

    def timed(passes: int) -> float:
        micros, mismatches = floor.time_us(passes)
        if mismatches:
            raise RuntimeError(f"{mismatches} of {len(floor)} tensors failed their check right after a passing check")
        return micros

    return timed


def root_leaves_floor(frame: CapturedFrame) -> FloorTimer:
    """The leaf guards on the frame's root, run alone (``leaf_floor.h``):
    torch's ambient guards (global state, the saved-tensors hooks lambda,
    the torch-function mode stack, the default device) and the function
    code matches. Stock runs the same guards on every check."""
    root, f_locals = frame.wrapper.fork_root, frame.f_locals

    def timed(passes: int) -> float:
        micros, passed = root.leaf_floor_us(f_locals, passes)
        if not passed:
            raise RuntimeError(f"frame {frame.code_name}: a root leaf guard failed right after a passing check")
        return micros

    return timed


def empty_check_floor(frame: CapturedFrame) -> FloorTimer:
    """A check of an empty fork root on the frame's locals, called as the
    benchmark calls every engine's check: the price of calling a check."""
    empty = fork.RootGuardManager()
    empty.finalize()
    return functools.partial(time_batch_us, functools.partial(empty.check, frame.f_locals))


def python_reads_floor(frame: CapturedFrame) -> FloorTimer:
    """The reads one fork check of the frame makes through Python attribute
    code, replayed (``python_reads.py``; a Python loop drives the replay,
    which overstates it by the loop's own cost, tens of ns per read)."""
    replay = replayer(reads_of_one_check(make_check([frame], direct_fork=True)))
    return functools.partial(time_batch_us, replay)


def check_floor_parts(frame: CapturedFrame) -> list[FloorTimer]:
    """What every sound fork check of the frame runs at least, in the order
    the check runs it: the call, the root's leaf guards, the reads through
    Python attribute code, one word of every other object the memo logs
    name, and the tensor comparisons, each timed by its own timer."""
    return [
        empty_check_floor(frame),
        root_leaves_floor(frame),
        python_reads_floor(frame),
        memo_touches(frame.wrapper.fork_root, tensors=False),
        tensor_floor(frame),
    ]


def check_floor(frame: CapturedFrame) -> FloorTimer:
    """The check floor: its parts (``check_floor_parts``) each timed on
    its own, one after the other; their sum leaves out the check's own
    bookkeeping. Warm, each part repeats alone and so keeps only its own
    data in the caches (``floor_in_turn.py`` times them in turn)."""
    parts = check_floor_parts(frame)
    return lambda passes: sum(part(passes) for part in parts)


# The floors the benchmark reports, by the name of their result keys.
FLOORS: tuple[tuple[str, FloorFn], ...] = (
    ("memo_touch_floor", touch_floor),
    ("tensor_floor", tensor_floor),
    ("root_leaves_floor", root_leaves_floor),
    ("check_floor", check_floor),
)


def measure_floor(frames: Sequence[CapturedFrame], rounds: int, floor: FloorFn) -> float:
    """``floor`` summed over the frames, warm (200 passes). Median over
    rounds, each prepared right after a passing check."""
    samples = []
    for _ in range(rounds):
        timers = [floor(frame) for frame in frames]
        samples.append(sum(timer(200) for timer in timers))
    return statistics.median(samples)


def measure_in_situ_floor(
    frames: Sequence[CapturedFrame], eager_forward: Callable[[], Any], rounds: int, floor: FloorFn
) -> float:
    """The same, one pass right after an eager forward pass (as the in-situ
    check runs): what it costs once the forward pass has evicted those
    objects from the caches. Median over rounds."""
    samples = []
    eager_forward()
    with no_gc():
        for _ in range(rounds):
            timers = [floor(frame) for frame in frames]
            eager_forward()
            samples.append(sum(timer(1) for timer in timers))
    return statistics.median(samples)


def measure_paired_floor_ratio(
    check: CheckFn,
    frames: Sequence[CapturedFrame],
    floor: FloorFn,
    eager_forward: Callable[[], Any],
    rounds: int,
    in_situ_rounds: int,
    batch_s: float,
) -> dict[str, float]:
    """``check`` (another engine's) over the fork's ``floor``, timed back to
    back round by round so that both see the same phase of a shared
    machine: warm, a batch of checks then 200 passes of the floor; in situ,
    one check and one pass, each right after its own eager forward pass.
    Medians of the per-round ratios."""
    batch = batch_size_for(check, batch_s)
    warm: list[float] = []
    in_situ: list[float] = []
    with no_gc():
        for _ in range(rounds):
            timers = [floor(frame) for frame in frames]
            time_batch_us(check, WARM_UP_CALLS)
            check_us = time_batch_us(check, batch)
            warm.append(check_us / sum(timer(200) for timer in timers))
        eager_forward()
        for _ in range(in_situ_rounds):
            timers = [floor(frame) for frame in frames]
            eager_forward()
            check_us = time_batch_us(check, 1)
            eager_forward()
            in_situ.append(check_us / sum(timer(1) for timer in timers))
    return {"warm": statistics.median(warm), "in_situ": statistics.median(in_situ)}


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
