"""The check floor's parts timed in isolation against the same parts in turn.

``make bench`` reports the check floor warm as the sum of its parts
(``guard_bench/timing.py``, ``check_floor``), each timed over 200 passes
of its own: the call, the root's leaf guards, the Python attribute reads,
one word of every object the memo logs name, the tensor comparisons. A
part repeated alone keeps only its own data in the caches. A check runs
every part once, so each part finds in the caches what the others left,
and when together they need more than the core's L2 holds, every check
brings lines in from the shared L3 that no part timed alone does.

This times, in the same process and interleaved round by round:

    fork      the fork's check of the frame (``fork_root.check``), warm
    isolated  the check floor as ``make bench`` times it (200 passes a part)
    in turn   the same parts, one pass of each in turn, 200 times: each
              part's own timer, summed (the timers' overhead, tens of ns a
              part, stays in: this slightly overstates the floor)

    .venv/bin/python benchmarks/dynamo/floor_in_turn.py --models mobilebert,llama32_decode,mlp100
"""

from __future__ import annotations

import argparse
import statistics

from guard_bench.capture import engine_session
from guard_bench.models import DEFAULT_MODELS, ModelSpec, grad_mode, prepare_model, selected_models
from guard_bench.timing import check_floor_parts, make_check, time_batch_us

PASSES = 200


def measure(spec: ModelSpec, rounds: int) -> dict[str, float]:
    model, inputs = prepare_model(spec)
    with engine_session("fork", spec, model, inputs) as session, grad_mode(spec):
        frames = session.first_frames
        check = make_check(frames, direct_fork=True)
        if not check():
            raise RuntimeError(f"{spec.name}: the fork's check fails on its own frames")
        samples: dict[str, list[float]] = {"fork": [], "isolated": [], "in_turn": []}
        for _ in range(rounds):
            parts = [part for frame in frames for part in check_floor_parts(frame)]
            samples["fork"].append(time_batch_us(check, PASSES))
            samples["isolated"].append(sum(part(PASSES) for part in parts))
            samples["in_turn"].append(sum(part(1) for _ in range(PASSES) for part in parts) / PASSES)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds")
    args = parser.parse_args()
    print(f"{'model':<18}{'fork':>10}{'isolated':>10}{'in turn':>10}{'fork/isolated':>15}{'fork/in turn':>14}  (µs, warm medians)")
    for spec in selected_models(args.models):
        r = measure(spec, args.rounds)
        print(
            f"{spec.name:<18}{r['fork']:>10.2f}{r['isolated']:>10.2f}{r['in_turn']:>10.2f}"
            f"{r['fork'] / r['isolated']:>14.2f}x{r['fork'] / r['in_turn']:>13.2f}x"
        )


if __name__ == "__main__":
    main()
