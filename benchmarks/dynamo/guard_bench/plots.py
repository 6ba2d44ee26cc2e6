"""One chart over every model and interpreter benchmarked: per metric, a
group of bars (one per engine) for each model on each interpreter."""

from __future__ import annotations

from typing import Any, Sequence

from guard_bench.capture import ENGINES
from guard_bench.tables import NAN, format_number

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


def write_plot(reports: Sequence[dict[str, Any]], path: str) -> None:
    """`reports`: the JSON reports of guard_overhead.py, one per interpreter."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [
        (f"{result['model']}\npy{report['environment']['python']} torch {report['environment']['torch'].split('+')[0]}", result)
        for report in reports
        for result in report["results"]
    ]
    groups.sort(key=lambda group: group[0])  # a model's interpreters side by side
    fig, axes = plt.subplots(
        1, len(PLOT_METRICS), figsize=(max(5.0, 1.1 * len(groups)) * len(PLOT_METRICS), 4.8), squeeze=False
    )
    width = 0.8 / len(ENGINES)
    for ax, (title, key) in zip(axes[0], PLOT_METRICS):
        shown: list[float] = []
        for i, engine in enumerate(ENGINES):
            xs = [g + (i - (len(ENGINES) - 1) / 2) * width for g in range(len(groups))]
            values = [plot_value(result, key, engine) for _, result in groups]
            bars = ax.bar(xs, values, width, label=engine)
            ax.bar_label(bars, labels=[format_number("{:.0f}" if v >= 100 else "{:.3g}", v) for v in values], fontsize=6)
            shown += [v for v in values if v == v]
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([label for label, _ in groups], rotation=45, ha="right", fontsize=8)
        ax.set_yscale("log")
        if shown:  # start well below the smallest bar so that every bar is visible
            ax.set_ylim(bottom=min(shown) / 4, top=max(shown) * 2)
        ax.set_title(title)
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0][0].legend()
    fig.suptitle("Guard evaluation cost per call, stock torch 2.13 vs the fork (median, lower is better)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
