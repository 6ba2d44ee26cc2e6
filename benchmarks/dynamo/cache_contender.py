"""Keep one CPU copying a buffer that fits the shared L3 but not a core's L2,
as another process on the machine might (a build, a test run).

    python cache_contender.py --mib 24 --seconds 120 &
    python guard_overhead.py --models mobilebert --rounds 15

reproduces what such neighbours do to the guard timings (docs/benchmarks.md,
"Stock's default beside other work"): an engine whose check touches more
cache lines than a core's L2 holds loses them to the neighbour between
checks."""

from __future__ import annotations

import argparse
import time


def contend(mib: int, seconds: float) -> int:
    """Copy half the buffer onto the other half until ``seconds`` pass;
    returns the number of copies."""
    half = mib * (1 << 20) // 2
    source = bytearray(b"\x01" * half)
    target = bytearray(half)
    view = memoryview(target)
    deadline = time.monotonic() + seconds
    copies = 0
    while time.monotonic() < deadline:
        view[:] = source
        copies += 1
    return copies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=24, help="buffer size in MiB (both halves)")
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    copies = contend(args.mib, args.seconds)
    print(f"cache_contender: {copies} copies of {args.mib // 2} MiB in {args.seconds:.0f} s")


if __name__ == "__main__":
    main()
