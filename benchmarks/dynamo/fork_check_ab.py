"""The fork's warm check alone, for comparing two builds of the engine.

Each run compiles the chosen models under the fork (eager backend) and
times ``fork_root.check`` on the compile's frames: after 200 warm-up
checks, 15 batches of 1,000 checks, and prints the median of the batches'
means (µs per check) with the path of the ``dynamo_guards`` it imported.
To compare two builds, run it alternately against each, the other build
first on ``PYTHONPATH`` (e.g. a copy of an earlier installed
``dynamo_guards`` package), three or more times:

    PYTHONPATH=/tmp/before .venv-3.12-torch2.15.0/bin/python benchmarks/dynamo/fork_check_ab.py
    .venv-3.12-torch2.15.0/bin/python benchmarks/dynamo/fork_check_ab.py

Alternating processes spreads the machine's drifts over both builds;
differences of a few percent that one ``make bench`` does not resolve
show up as a consistent order across the alternations.
"""

from __future__ import annotations

import argparse
import statistics

import dynamo_guards
from guard_bench.capture import engine_session
from guard_bench.models import grad_mode, prepare_model, selected_models
from guard_bench.timing import make_check, time_batch_us

WARMUP_CHECKS = 200
BATCH_CHECKS = 1000


def median_check_us(model_name: str, batches: int) -> float:
    spec = selected_models(model_name)[0]
    model, inputs = prepare_model(spec)
    with engine_session("fork", spec, model, inputs) as session, grad_mode(spec):
        check = make_check(session.first_frames, direct_fork=True)
        if not check():
            raise RuntimeError(f"{model_name}: the fork's check fails on its own frames")
        for _ in range(WARMUP_CHECKS):
            check()
        return statistics.median(time_batch_us(check, BATCH_CHECKS) for _ in range(batches))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="llama32_decode,mobilebert")
    parser.add_argument("--batches", type=int, default=15)
    args = parser.parse_args()
    print(f"dynamo_guards from {dynamo_guards.__file__}")
    for name in args.models.split(","):
        print(f"{name:<18}{median_check_us(name, args.batches):>8.2f} µs")


if __name__ == "__main__":
    main()
