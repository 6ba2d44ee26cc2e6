"""Guard build time over repeated compiles, engines alternating.

``guard_overhead.py`` times one guard build per engine per run, a single
sample that moves by about a third between runs. This compiles each model
``--rounds`` times per engine in one process, the engines' order rotating
round by round, and reports per engine the medians of
``CheckFunctionManager.__init__`` (all frames of one compile summed): wall
time, thread CPU time, wall time less the full garbage collections that
fell inside the build and how many such collections there were, with each
engine's ratio to stock, and the median number of collections of any
generation that started during a build (each young one comes after about
700 net allocations of tracked objects, and every tenth or so brings a full
one closer). ``--count-tracked`` adds the net change in the
objects the collector tracks across each build (what every later full
collection walks); counting collects before and after every build, so no
full collection then falls inside one, and that run's times leave them out.

    .venv/bin/python benchmarks/dynamo/guard_build_time.py --models mlp100,mobilebert --rounds 5
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

from guard_bench import capture
from guard_bench.capture import ENGINES, engine_session
from guard_bench.models import DEFAULT_MODELS, ModelSpec, prepare_model, selected_models
from guard_bench.timing import rotated


@dataclasses.dataclass
class BuildSample:
    wall_ms: float
    cpu_ms: float
    full_gc_ms: float
    full_gcs: int
    collections: int
    tracked_objects: int


def build_samples(spec: ModelSpec, rounds: int) -> dict[str, list[BuildSample]]:
    model, inputs = prepare_model(spec)
    samples: dict[str, list[BuildSample]] = {engine: [] for engine in ENGINES}
    for r in range(rounds):
        for engine in rotated(list(ENGINES), r):
            with engine_session(engine, spec, model, inputs) as session:
                builds = session.first_builds
                samples[engine].append(
                    BuildSample(
                        wall_ms=1e3 * sum(b.init_s for b in builds),
                        cpu_ms=1e3 * sum(b.init_cpu_s for b in builds),
                        full_gc_ms=1e3 * sum(b.full_gc_s for b in builds),
                        full_gcs=sum(b.full_gcs for b in builds),
                        collections=sum(b.collections for b in builds),
                        tracked_objects=sum(b.tracked_objects for b in builds),
                    )
                )
    return samples


TIME_COLUMNS = (
    ("wall ms", lambda s: s.wall_ms),
    ("cpu ms", lambda s: s.cpu_ms),
    ("less full gc ms", lambda s: s.wall_ms - s.full_gc_ms),
    ("collections", lambda s: s.collections),
)
TRACKED_COLUMN = ("tracked left", lambda s: s.tracked_objects)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--rounds", type=int, default=5, help="compiles per engine")
    parser.add_argument("--count-tracked", action="store_true", help="count the net change in tracked objects across each build")
    args = parser.parse_args()
    capture.COUNT_TRACKED_OBJECTS = args.count_tracked
    columns = TIME_COLUMNS + ((TRACKED_COLUMN,) if args.count_tracked else ())
    header = "".join(f"{name:>17}" for name, _ in columns)
    print(f"{'model':<16}{'engine':<17}{header}{'full gcs':>10}")
    for spec in selected_models(args.models):
        samples = build_samples(spec, args.rounds)
        medians = {e: [statistics.median(get(s) for s in samples[e]) for _, get in columns] for e in ENGINES}
        for engine in ENGINES:
            cells = "".join(
                f"{value:>10.0f} {value / stock:>5.2f}x" for value, stock in zip(medians[engine], medians["stock"])
            )
            full_gcs = sum(s.full_gcs for s in samples[engine])
            print(f"{spec.name:<16}{engine:<17}{cells}{full_gcs:>10}")


if __name__ == "__main__":
    main()
