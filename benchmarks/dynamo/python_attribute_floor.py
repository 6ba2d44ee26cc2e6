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
from typing import Any

from guard_bench.capture import engine_session
from guard_bench.models import DEFAULT_MODELS, ModelSpec, grad_mode, prepare_model, selected_models
from guard_bench.python_reads import reads_of_one_check, replayer
from guard_bench.timing import make_check, measure_in_situ, measure_warm


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
