"""Guard build time over repeated compiles, engines alternating.

``guard_overhead.py`` times one guard build per engine per run, a single
sample that moves by about a third between runs. This compiles each model
``--rounds`` times per engine in one process, the engines' order rotating
round by round, and reports the median ``CheckFunctionManager.__init__``
time (all frames of one compile summed) and each engine's ratio to stock.

    .venv/bin/python benchmarks/dynamo/guard_build_time.py --models mlp100,mobilebert --rounds 5
"""

from __future__ import annotations

import argparse
import statistics

from guard_bench.capture import ENGINES, engine_session
from guard_bench.models import DEFAULT_MODELS, ModelSpec, prepare_model, selected_models
from guard_bench.timing import rotated


def build_times_ms(spec: ModelSpec, rounds: int) -> dict[str, list[float]]:
    model, inputs = prepare_model(spec)
    times: dict[str, list[float]] = {engine: [] for engine in ENGINES}
    for r in range(rounds):
        for engine in rotated(list(ENGINES), r):
            with engine_session(engine, spec, model, inputs) as session:
                times[engine].append(1e3 * sum(build.init_s for build in session.first_builds))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--rounds", type=int, default=5, help="compiles per engine")
    args = parser.parse_args()
    header = "".join(f"{engine + ' (ms)':>24}" for engine in ENGINES)
    ratios = "".join(f"{engine + '/stock':>22}" for engine in ENGINES[1:])
    print(f"{'model':<18}{header}{ratios}")
    for spec in selected_models(args.models):
        medians = {engine: statistics.median(values) for engine, values in build_times_ms(spec, args.rounds).items()}
        cells = "".join(f"{medians[engine]:>24.1f}" for engine in ENGINES)
        ratio_cells = "".join(f"{medians[engine] / medians['stock']:>21.2f}x" for engine in ENGINES[1:])
        print(f"{spec.name:<18}{cells}{ratio_cells}")


if __name__ == "__main__":
    main()
