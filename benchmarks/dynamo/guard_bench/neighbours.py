"""What else used the machine while a benchmark ran.

Other work moves the engines unequally: a neighbour that fills the shared
L3 evicts the lines of a check whose working set outgrows a core's L2
(stock's default on deep models) far more than those of one that fits
(docs/benchmarks.md, "Stock's default beside other work"). Each model's
result records how busy the machine was besides this process
(`neighbour_cpus`) and, since the L3 may be shared with work this machine
cannot see (other tenants of a virtual machine's host), how long a random
read of a buffer that fits the L3 took just before and after the model
(`l3_gather_ns`)."""

from __future__ import annotations

import dataclasses
import os
import statistics
import time

import torch

# Average CPUs used by other processes above which a result is flagged.
BUSY_NEIGHBOURS_CPUS = 0.25


@dataclasses.dataclass(frozen=True)
class CpuSnapshot:
    machine_busy_s: float  # every CPU's non-idle time since boot (/proc/stat)
    own_s: float  # this process's CPU time, and its waited-for children's
    wall_s: float


def _machine_busy_s() -> float:
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice]:
    # guest time is counted in user already.
    busy = sum(fields[:8]) - fields[3] - fields[4]
    return busy / os.sysconf("SC_CLK_TCK")


def snapshot() -> CpuSnapshot | None:
    """None where /proc/stat cannot be read (not Linux)."""
    try:
        busy = _machine_busy_s()
    except (OSError, ValueError, IndexError):
        return None
    t = os.times()
    return CpuSnapshot(busy, t.user + t.system + t.children_user + t.children_system, time.monotonic())


def neighbour_cpus(before: CpuSnapshot | None, after: CpuSnapshot | None) -> float | None:
    """Average number of CPUs kept busy by other processes between the two
    snapshots (clock-tick resolution; never below 0)."""
    if before is None or after is None or after.wall_s <= before.wall_s:
        return None
    others = (after.machine_busy_s - before.machine_busy_s) - (after.own_s - before.own_s)
    return max(0.0, others / (after.wall_s - before.wall_s))


# A buffer the shared L3 (32 MiB here) holds and a core's L2 (1 MiB) does not.
L3_PROBE_MIB = 8


def l3_gather_ns(mib: int = L3_PROBE_MIB, rounds: int = 7) -> float:
    """Median ns per element of a random gather over a ``mib`` MiB tensor:
    L3 hits on a quiet machine, slower when something else fills the L3."""
    n = mib * (1 << 20) // 8
    data = torch.arange(n, dtype=torch.int64)
    order = torch.randperm(n)
    out = torch.empty_like(data)
    for _ in range(2):  # fault the pages in, fill the caches
        torch.index_select(data, 0, order, out=out)
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        torch.index_select(data, 0, order, out=out)
        samples.append((time.perf_counter_ns() - start) / n)
    return statistics.median(samples)
