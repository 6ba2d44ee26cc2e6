"""The zoo's summary (``--models zoo``, ``make bench-zoo``): per interpreter
and torch release, one line per architecture (the ratios of both stock
configurations to the fork, warm and in situ, frames, frames fallen back,
whether each engine's compiled call equals eager), then the medians and
worsts over the zoo."""

from __future__ import annotations

import statistics
from typing import Any, Sequence

from guard_bench.tables import format_number, median_of, NAN, ratio

ZOO_PREFIX = "zoo_"

# (header, result key, stock engine): stock engine's time over the fork's.
RATIOS: tuple[tuple[str, str, str], ...] = (
    ("stock/fork warm", "warm_check_us", "stock"),
    ("stock/fork situ", "in_situ_check_us", "stock"),
    ("tags/fork warm", "warm_check_us", "stock_dict_tags"),
    ("tags/fork situ", "in_situ_check_us", "stock_dict_tags"),
)


def zoo_results(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in report["results"] if r["model"].startswith(ZOO_PREFIX)]


def model_ratios(result: dict[str, Any]) -> list[float]:
    return [ratio(median_of(result, key, engine), median_of(result, key, "fork")) for _, key, engine in RATIOS]


def differs_from_eager(result: dict[str, Any], engine: str) -> bool:
    return not result.get("equal_to_eager", {}).get(engine, False)


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(cells, widths)))


def format_zoo_summary(reports: Sequence[dict[str, Any]]) -> str:
    headers = ["model", "fork warm us"] + [h for h, _, _ in RATIOS] + ["frames", "fallen back", "fork == eager", "stock == eager"]
    widths = [20, 13] + [16] * len(RATIOS) + [8, 12, 14, 15]
    blocks: list[str] = []
    for report in reports:
        results = zoo_results(report)
        if not results:
            continue
        environment = report["environment"]
        lines = [f"#### Zoo: CPython {environment['python']}, torch {environment['torch'].split('+')[0]}, {len(results)} models"]
        lines.append(_row(headers, widths))
        per_model: list[list[float]] = []
        fallen_back = differing_fork = differing_stock = 0
        for result in results:
            ratios = model_ratios(result)
            per_model.append(ratios)
            fallbacks = result.get("fallbacks", {}).get("fork", 0)
            fallen_back += fallbacks
            differing_fork += differs_from_eager(result, "fork")
            differing_stock += differs_from_eager(result, "stock")
            cells = [result["model"][len(ZOO_PREFIX):], format_number("{:.1f}", median_of(result, "warm_check_us", "fork"))]
            cells += [format_number("{:.2f}x", r) for r in ratios]
            cells += [
                str(result["frames"].get("fork", 0)),
                str(fallbacks),
                "no" if differs_from_eager(result, "fork") else "yes",
                "no" if differs_from_eager(result, "stock") else "yes",
            ]
            lines.append(_row(cells, widths))
        for label, pick in (("median", statistics.median), ("worst", min)):
            columns = [[m[i] for m in per_model if m[i] == m[i]] for i in range(len(RATIOS))]
            cells = [label, ""] + [format_number("{:.2f}x", pick(c) if c else NAN) for c in columns] + ["", "", "", ""]
            lines.append(_row(cells, widths))
        slower = sum(1 for m in per_model if m[0] == m[0] and m[0] < 1.0)
        lines.append(
            f"frames fallen back: {fallen_back}; compiles that differ from eager: fork {differing_fork}, "
            f"stock {differing_stock}; models where the fork is slower than stock's default (warm): {slower}"
        )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
