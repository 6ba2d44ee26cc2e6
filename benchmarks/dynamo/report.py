"""The guard-overhead results of several interpreters side by side.

``make bench`` runs guard_overhead.py once per interpreter, each writing
``results/guard_overhead-X.Y-torchT.json``; this prints each interpreter's tables
again, then one summary line per model and interpreter, and writes one chart
with all of them (``make bench-zoo``: ``--zoo-only``, the zoo's tables)::

    python benchmarks/dynamo/report.py --plot results/guard_overhead.png results/guard_overhead-3.*.json
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from guard_bench.plots import write_plot
from guard_bench.tables import format_summary, format_table
from guard_bench.zoo_summary import format_zoo_summary, zoo_results


def load(paths: Sequence[str]) -> list[dict[str, Any]]:
    reports = []
    for path in paths:
        with open(path) as f:
            reports.append(json.load(f))
    return sorted(reports, key=lambda report: (report["environment"]["torch"], tuple(int(p) for p in report["environment"]["python"].split(".")[:2])))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="*", help="JSON files written by guard_overhead.py --json")
    parser.add_argument("--plot", metavar="PATH", help="write one PNG chart of every model on every interpreter")
    parser.add_argument("--summary-only", action="store_true", help="skip the per-model tables")
    parser.add_argument("--zoo-only", action="store_true", help="print only the zoo's tables (make bench-zoo)")
    args = parser.parse_args(argv)
    if not args.reports:
        print("report: no results to report (did every interpreter's benchmark fail?)", file=sys.stderr)
        return 1
    reports = load(args.reports)
    if args.zoo_only:
        print(format_zoo_summary(reports))
        for report in reports:
            for model, reason in report.get("skipped", {}).items():
                print(f"  {report['environment']['python']}: {model}: skipped, {reason}")
        return 0
    for report in reports:
        environment = report["environment"]
        stock_config = ", ".join(f"{k}={v}" for k, v in environment.get("stock_config", {}).items())
        print(f"#### CPython {environment['python']}, torch {environment['torch']} (stock: {stock_config or 'defaults'})")
        if not args.summary_only:
            for result in report["results"]:
                print(format_table(result, environment["python"]) + "\n")
        for model, reason in report.get("skipped", {}).items():
            print(f"  {model}: skipped, {reason}")
    print(
        "#### Summary: check time per call, median µs; floors, warm and in situ: touch, loading one word of"
        " every object the fork's logs name; tensor, the fork's tensor comparisons alone; leaves, the root's leaf"
        " guards alone (torch's ambient guards); floor, the check floor: the call, the root's leaf guards, the"
        " reads through Python attribute code, the other objects the logs name and the tensor comparisons;"
        " tags/<floor>: the most"
        " the fork could gain over stock with dict tags if its check cost nothing beyond that floor"
    )
    print(format_summary(reports))
    if any(zoo_results(report) for report in reports):
        print()
        print(format_zoo_summary(reports))
    if args.plot:
        write_plot(reports, args.plot)
        print(f"chart: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
