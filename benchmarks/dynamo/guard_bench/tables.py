"""The benchmark's tables: one per model (every metric, each engine, the
ratios to the fork), and a summary over models and interpreters."""

from __future__ import annotations

from typing import Any, Sequence

from guard_bench.callgrind import CALLGRIND_BASELINE
from guard_bench.capture import ENGINES, FORK_DIRECT
from guard_bench.neighbours import BUSY_NEIGHBOURS_CPUS, L3_PROBE_MIB
from guard_bench.timing import Stats

NAN = float("nan")


def ratio(numerator: float, denominator: float) -> float:
    if denominator == 0 or denominator != denominator or numerator != numerator:
        return NAN
    return numerator / denominator


def medians(stats: dict[str, Stats]) -> dict[str, float]:
    return {name: s["median"] for name, s in stats.items()}


def guard_share_percent(end_to_end: dict[str, Stats]) -> float:
    """The part of a compiled call's time that its guard check takes."""
    return 100 * ratio(end_to_end["overhead_us"]["median"], end_to_end["guarded_call_us"]["median"])


def metric_rows(result: dict[str, Any]) -> list[tuple[str, dict[str, float], str]]:
    """(label, value per engine, number format); times are medians."""
    e2e = result["end_to_end"]
    rows = [
        ("warm check (us)", medians(result["warm_check_us"]), "{:.2f}"),
        ("in situ check (us)", medians(result["in_situ_check_us"]), "{:.2f}"),
        *((label, result.get(key, {}), "{:.2f}") for label, _, key in FLOOR_COLUMNS),
        *(
            (f"tags/check floor, {when.replace('_', ' ')} (x)", {"fork": ratio_value}, "{:.1f}")
            for when, ratio_value in result.get("tags_over_check_floor", {}).items()
        ),
        ("e2e guard overhead (us)", {e: v["overhead_us"]["median"] for e, v in e2e.items()}, "{:.1f}"),
        ("e2e guarded call (us)", {e: v["guarded_call_us"]["median"] for e, v in e2e.items()}, "{:.1f}"),
        ("e2e guard share of call (%)", {e: guard_share_percent(v) for e, v in e2e.items()}, "{:.1f}"),
    ]
    if "callgrind_ir_per_check" in result:
        rows.append(("callgrind Ir / check", result["callgrind_ir_per_check"], "{:.0f}"))
    if "callgrind_l2_read_misses_per_check" in result:
        rows.append(("simulated L2 read misses / check", result["callgrind_l2_read_misses_per_check"], "{:.0f}"))
    rows += [
        ("guard build, CFM init (ms)", {e: 1e3 * v for e, v in result["build_init_s"].items()}, "{:.1f}"),
        ("guard build, build_guards (ms)", {e: 1e3 * v for e, v in result["build_guards_s"].items()}, "{:.1f}"),
        ("tree nodes", {e: float(t["nodes"]) for e, t in result["tree"].items()}, "{:.0f}"),
        ("tree managers", {e: float(t["managers"]) for e, t in result["tree"].items()}, "{:.0f}"),
        ("tree leaf guards", {e: float(t["leaf_guards"]) for e, t in result["tree"].items()}, "{:.0f}"),
        ("frames fallen back to stock", {e: float(n) for e, n in result.get("fallbacks", {}).items()}, "{:.0f}"),
    ]
    return rows


def format_number(fmt: str, value: float | None) -> str:
    if value is None or value != value:
        return "-"
    return fmt.format(value)


LABEL_WIDTH = 32
CELL_WIDTH = 16


def table_line(label: str, cells: Sequence[str]) -> str:
    return f"{label:<{LABEL_WIDTH}}" + "".join(f"{c:>{CELL_WIDTH}}" for c in cells)


# Rows whose ratio to the fork would mean nothing.
UNRATIOED_ROWS = frozenset({"e2e guard share of call (%)", "frames fallen back to stock"})


def format_table(result: dict[str, Any], python: str) -> str:
    header = table_line("metric", [*ENGINES, "stock/fork", "tags/fork"])
    frames = ", ".join(f"{e} {n}" for e, n in result["frames"].items())
    lines = [
        f"== {result['model']} on CPython {python}: {result['parameters'] / 1e6:.2f}M params, {result['mode']}, frames: {frames} ==",
        header,
        "-" * len(header),
    ]
    for label, values, fmt in metric_rows(result):
        cells = [format_number(fmt, values.get(e)) for e in ENGINES]
        fork = values.get("fork", NAN) if label not in UNRATIOED_ROWS else NAN
        cells.append(format_number("{:.2f}x", ratio(values.get("stock", NAN), fork)))
        cells.append(format_number("{:.2f}x", ratio(values.get("stock_dict_tags", NAN), fork)))
        lines.append(table_line(label, cells))
    direct_rows = [("warm", result["warm_check_us"]), ("in situ", result["in_situ_check_us"])]
    for label, stats in direct_rows:
        if FORK_DIRECT in stats:
            value = format_number("{:.2f}", stats[FORK_DIRECT]["median"])
            lines.append(table_line(f"  {label}, fork_root.check (us)", ["", "", value]))
    if CALLGRIND_BASELINE in result.get("callgrind_ir_per_check", {}):
        baseline = result["callgrind_ir_per_check"][CALLGRIND_BASELINE]
        lines.append(f"  (callgrind: loop + empty torch root = {baseline:.0f} Ir/check, subtracted)")
    for name, problems in result["problems"].items():
        for problem in problems:
            lines.append(f"  ! {name}: {problem}")
    lines.extend(neighbour_lines(result.get("neighbour_cpus")))
    if "l3_gather_ns" in result:
        before, after = result["l3_gather_ns"]
        lines.append(f"  random read over {L3_PROBE_MIB} MiB (fits the L3): {before:.2f} ns before, {after:.2f} ns after")
    return "\n".join(lines)


def neighbour_lines(cpus: float | None) -> list[str]:
    if cpus is None:
        return []
    lines = [f"  other processes kept {cpus:.2f} CPUs busy while this model ran (/proc/stat)"]
    if cpus > BUSY_NEIGHBOURS_CPUS:
        lines.append(
            "  ! other work ran beside this benchmark: it slows the engines unequally (most: stock's default,"
            " whose check outgrows a core's L2); docs/benchmarks.md, \"Stock's default beside other work\""
        )
    return lines


SUMMARY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    # (header, result key, engine)
    ("warm stock", "warm_check_us", "stock"),
    ("warm tags", "warm_check_us", "stock_dict_tags"),
    ("warm fork", "warm_check_us", "fork"),
    ("situ stock", "in_situ_check_us", "stock"),
    ("situ tags", "in_situ_check_us", "stock_dict_tags"),
    ("situ fork", "in_situ_check_us", "fork"),
)
SUMMARY_RATIOS: tuple[tuple[str, str, str], ...] = (
    # (header, result key, the stock engine divided by the fork)
    ("warm stock/fork", "warm_check_us", "stock"),
    ("warm tags/fork", "warm_check_us", "stock_dict_tags"),
    ("situ stock/fork", "in_situ_check_us", "stock"),
    ("situ tags/fork", "in_situ_check_us", "stock_dict_tags"),
)

# The fork's floors (timing.py), in the per-model table, the summary and
# the results: (row label, summary header, result key).
FLOOR_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("memo touch floor, warm (us)", "touch warm", "memo_touch_floor_us"),
    ("memo touch floor, in situ (us)", "touch situ", "memo_touch_floor_in_situ_us"),
    ("tensor floor, warm (us)", "tensor warm", "tensor_floor_us"),
    ("tensor floor, in situ (us)", "tensor situ", "tensor_floor_in_situ_us"),
    ("root leaves floor, warm (us)", "leaves warm", "root_leaves_floor_us"),
    ("root leaves floor, in situ (us)", "leaves situ", "root_leaves_floor_in_situ_us"),
    ("check floor, warm (us)", "floor warm", "check_floor_us"),
    ("check floor, in situ (us)", "floor situ", "check_floor_in_situ_us"),
)
FLOOR_KEYS: tuple[str, ...] = tuple(key for _, _, key in FLOOR_COLUMNS)

# Stock with dict tags over a floor: the most the fork could gain over it
# if its check cost nothing beyond that floor (the touch floor: loading the
# objects its logs name; the tensor floor: its tensor comparisons alone).
# (header, check key, floor key).
FLOOR_RATIOS: tuple[tuple[str, str, str], ...] = (
    ("warm tags/touch", "warm_check_us", "memo_touch_floor_us"),
    ("situ tags/touch", "in_situ_check_us", "memo_touch_floor_in_situ_us"),
    ("warm tags/tensor", "warm_check_us", "tensor_floor_us"),
    ("situ tags/tensor", "in_situ_check_us", "tensor_floor_in_situ_us"),
)
# Stock with dict tags over the check floor (timing.check_floor: every part
# of a check that no engine can skip), timed back to back round by round
# (timing.measure_paired_floor_ratio): (header, when).
PAIRED_FLOOR_RATIOS: tuple[tuple[str, str], ...] = (
    ("warm tags/floor", "warm"),
    ("situ tags/floor", "in_situ"),
)


def median_of(result: dict[str, Any], key: str, engine: str) -> float:
    stats = result[key].get(engine)
    return NAN if stats is None else stats["median"]


def format_summary(reports: Sequence[dict[str, Any]]) -> str:
    """One line per model and interpreter: medians in µs, the fork's
    floors, the ratios of both stock configurations to the fork, and of stock
    with dict tags to the floors."""
    headers = ["model", "python", "torch"] + [h for h, _, _ in SUMMARY_COLUMNS] + [h for _, h, _ in FLOOR_COLUMNS]
    headers += [h for h, _, _ in SUMMARY_RATIOS] + [h for h, _, _ in FLOOR_RATIOS]
    widths = [18, 8, 8] + [11] * len(SUMMARY_COLUMNS) + [12] * len(FLOOR_COLUMNS)
    headers += [h for h, _ in PAIRED_FLOOR_RATIOS]
    widths += [16] * len(SUMMARY_RATIOS) + [17] * (len(FLOOR_RATIOS) + len(PAIRED_FLOOR_RATIOS))
    lines = ["".join(f"{h:<{w}}" if i < 3 else f"{h:>{w}}" for i, (h, w) in enumerate(zip(headers, widths)))]
    lines.append("-" * len(lines[0]))
    for report in reports:
        python = report["environment"]["python"]
        torch_release = report["environment"]["torch"].split("+")[0]
        for result in report["results"]:
            cells = [result["model"], python, torch_release]
            cells += [format_number("{:.1f}", median_of(result, key, engine)) for _, key, engine in SUMMARY_COLUMNS]
            cells += [format_number("{:.1f}", result.get(key, {}).get("fork")) for _, _, key in FLOOR_COLUMNS]
            cells += [
                format_number("{:.1f}x", ratio(median_of(result, key, engine), median_of(result, key, "fork")))
                for _, key, engine in SUMMARY_RATIOS
            ]
            cells += [
                format_number("{:.1f}x", ratio(median_of(result, key, "stock_dict_tags"), result.get(floor_key, {}).get("fork", NAN)))
                for _, key, floor_key in FLOOR_RATIOS
            ]
            paired = result.get("tags_over_check_floor", {})
            cells += [format_number("{:.1f}x", paired.get(when, NAN)) for _, when in PAIRED_FLOOR_RATIOS]
            lines.append("".join(f"{c:<{w}}" if i < 3 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(cells, widths))))
    return "\n".join(lines)
