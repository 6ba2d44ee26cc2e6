"""Instruction counts per guard check under ``valgrind --tool=callgrind``.

The benchmark script re-runs itself under callgrind with instrumentation off
(``--instr-atstart=no``); in there, a tiny C helper built with ``cc`` issues
client requests that count a batch of checks per engine, each batch dumped
under its own label. Counts repeat exactly, so they settle differences that
timings on a shared machine cannot.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
from typing import Any

from guard_bench.timing import WARM_UP_CALLS, CheckFn

CALLGRIND_HELPER_C = r"""
#include <valgrind/callgrind.h>
int cg_running(void) { return RUNNING_ON_VALGRIND; }
void cg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void cg_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
void cg_zero(void) { CALLGRIND_ZERO_STATS; }
void cg_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""
CALLGRIND_BASELINE = "empty_torch_root"  # torch root without guards: the loop's own cost
CALLGRIND_LABEL_PREFIX = "guard_overhead:"


def build_callgrind_helper(directory: str) -> Any:
    """A tiny C library whose functions issue callgrind client requests."""
    source = os.path.join(directory, "cg_helper.c")
    library = os.path.join(directory, "cg_helper.so")
    with open(source, "w") as f:
        f.write(CALLGRIND_HELPER_C)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", library, source], check=True)
    helper = ctypes.CDLL(library)
    helper.cg_dump.argtypes = [ctypes.c_char_p]
    return helper


def count_instructions(helper: Any, checks: dict[str, CheckFn], calls: int) -> None:
    """One callgrind dump per check, labelled with its name, covering
    ``calls`` back-to-back checks (instrumentation is off outside)."""
    for name, check in checks.items():
        for _ in range(WARM_UP_CALLS):  # lazy first-call work is not per-call cost
            check()
        helper.cg_start()
        helper.cg_zero()
        for _ in range(calls):
            check()
        helper.cg_dump(f"{CALLGRIND_LABEL_PREFIX}{name}:{calls}".encode())
        helper.cg_stop()


def parse_callgrind_dumps(directory: str) -> dict[str, dict[str, float]]:
    """Events per check (Ir, and with the cache simulation Dr, D1mr, DLmr,
    ...), by check name, from the labelled dumps."""
    per_check: dict[str, dict[str, float]] = {}
    for file_name in sorted(os.listdir(directory)):
        if not file_name.startswith("callgrind.out"):
            continue
        label, events, totals = None, None, None
        with open(os.path.join(directory, file_name)) as f:
            for line in f:
                if line.startswith("desc: Trigger:") and CALLGRIND_LABEL_PREFIX in line:
                    label = line.split(CALLGRIND_LABEL_PREFIX, 1)[1].strip()
                elif line.startswith("events:"):
                    events = line.split()[1:]
                elif line.startswith(("totals:", "summary:")):
                    totals = [int(x) for x in line.split()[1:]]
        if label is not None and events is not None and totals is not None:
            name, calls = label.rsplit(":", 1)
            per_check[name] = {event: total / int(calls) for event, total in zip(events, totals)}
    return per_check


# The cache the simulation's last level stands for (--callgrind-cache-sim):
# this machine's per-core L2 (AMD EPYC, 1 MiB, 8-way), behind a 32 KiB L1.
# Its read misses (DLmr) are the lines a check brings in from the shared L3
# or memory, which other tenants of the host contend for.
CACHE_SIM_ARGS = ("--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64", "--LL=1048576,8,64")


def run_callgrind(script: str, model: str, calls: int, cache_sim: bool = False) -> dict[str, dict[str, float]]:
    """Re-runs the benchmark `script` under callgrind for one model, as
    ``script --_callgrind-child DIR``; events per check, by event (``Ir``,
    and with ``cache_sim`` the simulated cache's reads and misses), with the
    empty-root baseline (the Python loop's share) subtracted, and the
    baseline itself under its own name."""
    with tempfile.TemporaryDirectory(prefix="guard_overhead_cg_") as directory:
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            *(CACHE_SIM_ARGS if cache_sim else ()),
            f"--callgrind-out-file={directory}/callgrind.out",
            sys.executable,
            os.path.abspath(script),
            "--_callgrind-child",
            directory,
            "--models",
            model,
            "--callgrind-calls",
            str(calls),
        ]
        completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        counts = parse_callgrind_dumps(directory)
    if completed.returncode != 0 or not counts:
        tail = "\n".join(completed.stdout.splitlines()[-30:])
        raise RuntimeError(f"callgrind run failed (exit {completed.returncode}):\n{tail}")
    for line in completed.stdout.splitlines():
        if line.startswith("  ! "):
            print(line)
    baseline = counts.pop(CALLGRIND_BASELINE, {})
    events = sorted({event for per_check in counts.values() for event in per_check})
    result = {
        event: {name: per_check.get(event, 0.0) - baseline.get(event, 0.0) for name, per_check in counts.items()}
        for event in events
    }
    for event in events:
        result[event][CALLGRIND_BASELINE] = baseline.get(event, 0.0)
    return result


# --------------------------------------------------------------------------
# Reporting.
