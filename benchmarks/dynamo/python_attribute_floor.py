"""The Python attribute code a sound guard check cannot skip, timed alone.

Some objects the guards read define attribute access in Python (transformers'
configs define ``__getattribute__``). Every engine must run that code on
every check: it may answer differently each time. This records the reads
one fork check makes through a Python ``__getattribute__`` or ``__getattr__``
(those the engine calls, not those they make in turn), then times replaying
exactly those reads with ``getattr`` (an AttributeError, as a hasattr guard
meets it, included) beside the whole fork check: same process, same locals,
interleaved rounds, medians. The replay is a floor for any engine on that
frame, stock included (it slightly overstates one: a Python loop drives it).

    .venv/bin/python benchmarks/dynamo/python_attribute_floor.py --models mobilebert,distilbert
"""

from __future__ import annotations

import argparse
import sys
import types
from typing import Any, Callable

from guard_bench.capture import engine_session
from guard_bench.models import DEFAULT_MODELS, ModelSpec, grad_mode, prepare_model, selected_models
from guard_bench.timing import make_check, measure_warm

ATTRIBUTE_HOOKS = ("__getattribute__", "__getattr__")
Read = tuple[Any, str]


def reads_of_one_check(check: Callable[[], bool]) -> list[Read]:
    """(object, name) of each Python attribute hook the check calls itself."""
    # Engines are entered from this frame, or from make_check's loop over
    # several frames' roots.
    callers = {sys._getframe().f_code, getattr(check, "__code__", None)}
    reads: list[Read] = []
    last_hook = ""

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        nonlocal last_hook
        code = frame.f_code
        if event != "call" or code.co_name not in ATTRIBUTE_HOOKS or frame.f_back is None:
            return
        if frame.f_back.f_code not in callers:
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


def measure(spec: ModelSpec, rounds: int) -> dict[str, Any]:
    model, inputs = prepare_model(spec)
    with engine_session("fork", spec, model, inputs) as session, grad_mode(spec):
        check = make_check(session.first_frames, direct_fork=True)
        for _ in range(3):
            check()
        reads = reads_of_one_check(check)
        stats = measure_warm(
            {"python_reads_us": replayer(reads), "fork_check_us": check}, rounds, batch_s=0.02, prewarm_s=0.3
        )
    return {
        "model": spec.name,
        "reads": [f"{type(obj).__name__}.{name}" for obj, name in reads],
        **{name: s["median"] for name, s in stats.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--rounds", type=int, default=50, help="interleaved rounds of batched calls")
    args = parser.parse_args()
    print(f"{'model':<18}{'reads':>7}{'python reads (us)':>20}{'fork check (us)':>18}{'share':>8}")
    for spec in selected_models(args.models):
        r = measure(spec, args.rounds)
        share = r["python_reads_us"] / r["fork_check_us"]
        print(f"{r['model']:<18}{len(r['reads']):>7}{r['python_reads_us']:>20.2f}{r['fork_check_us']:>18.2f}{share:>8.0%}")
        if r["reads"]:
            print("  " + ", ".join(r["reads"]))


if __name__ == "__main__":
    main()
