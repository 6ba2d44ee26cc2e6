"""The Python attribute code a sound guard check cannot skip, timed alone.

Some objects the guards read define attribute access in Python (transformers'
configs define ``__getattribute__``, and properties such as
``_attn_implementation``). Every engine must run that code on every check:
it may answer differently each time. This records the reads one fork check
makes through a Python ``__getattribute__``, ``__getattr__`` or property
getter (those the engine calls, not those they make in turn), then times replaying
exactly those reads with ``getattr`` (an AttributeError, as a hasattr guard
meets it, included) beside the whole fork check: same process, same locals,
interleaved rounds, medians; warm (batches of back-to-back calls) and in
situ (one call right after an eager forward pass of the model, which evicts
the caches as a real step does). The replay is a floor for any engine on
that frame, stock included (it slightly overstates one: a Python loop
drives it).

    .venv/bin/python benchmarks/dynamo/python_attribute_floor.py --models mobilebert,distilbert
"""

from __future__ import annotations

import argparse
import sys
import types
from typing import Any, Callable

from guard_bench.capture import engine_session
from guard_bench.models import DEFAULT_MODELS, ModelSpec, grad_mode, prepare_model, selected_models
from guard_bench.timing import make_check, measure_in_situ, measure_warm

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


def measure(spec: ModelSpec, rounds: int) -> dict[str, Any]:
    model, inputs = prepare_model(spec)
    with engine_session("fork", spec, model, inputs) as session, grad_mode(spec):
        check = make_check(session.first_frames, direct_fork=True)
        for _ in range(3):
            check()
        reads = reads_of_one_check(check)
        checks = {"python_reads_us": replayer(reads), "fork_check_us": check}
        warm = measure_warm(checks, rounds, batch_s=0.02, prewarm_s=0.3)
        in_situ, failures = measure_in_situ(checks, lambda: spec.call(model, inputs), rounds)
    if failures["fork_check_us"]:
        raise RuntimeError("the fork's check failed after an eager forward pass")
    return {
        "model": spec.name,
        "reads": [f"{type(obj).__name__}.{name}" for obj, name in reads],
        **{name: s["median"] for name, s in warm.items()},
        **{f"in_situ_{name}": s["median"] for name, s in in_situ.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--rounds", type=int, default=50, help="interleaved rounds of batched calls")
    args = parser.parse_args()
    columns = ("python reads", "fork check", "share")
    header = "".join(f"{f'{c} ({when})':>26}" for when in ("warm", "in situ") for c in columns)
    print(f"{'model':<18}{'reads':>7}{header}")
    for spec in selected_models(args.models):
        r = measure(spec, args.rounds)
        cells = ""
        for prefix in ("", "in_situ_"):
            python_us, check_us = r[f"{prefix}python_reads_us"], r[f"{prefix}fork_check_us"]
            cells += f"{python_us:>23.2f} us{check_us:>23.2f} us{python_us / check_us:>26.0%}"
        print(f"{r['model']:<18}{len(r['reads']):>7}{cells}")
        if r["reads"]:
            print("  " + ", ".join(r["reads"]))


if __name__ == "__main__":
    main()
