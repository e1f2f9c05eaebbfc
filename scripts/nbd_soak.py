"""Crash soak of `ftlab serve`: N cycles (default 100) of fio load plus the flush checker
of tests/python/nbd_crash.py, kill -9 at a random moment, restart, check that every write
acknowledged before the last completed flush survived and nothing foreign is read.

    python scripts/nbd_soak.py [--cycles 100] [--ftl page] [--seed 1] [--connections 1]

With `--connections N` (N > 1) the checker pipelines its writes over N connections (up to
64 in flight), then flushes on one of them once all are acknowledged. With `--qemu-io`,
qemu-io writes and flushes 64 KiB regions of its own beside them (at 40 MiB), checked the
same way (nbd_crash.QemuIoChecker).

Prints one line per cycle and a summary (cycles, failures, recovery times)."""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))

from nbd_crash import Checker, QemuIoChecker, crash_cycle  # noqa: E402
from nbd_helpers import SMALL_DEVICE, Served  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--ftl", default="page")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--connections", type=int, default=1)
    ap.add_argument("--qemu-io", action="store_true", help="qemu-io's checked writes too")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    checker = Checker(first=0, count=2048, seed=args.seed)
    qemu = QemuIoChecker(40 << 20, 16, args.seed) if args.qemu_io else None
    failures = 0
    times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"

        def start() -> Served:
            return Served(store, ftl=args.ftl, sets=SMALL_DEVICE, extra=["--verify"])

        for cycle in range(args.cycles):
            problems, startup = crash_cycle(start, checker, Path(tmp), rng, args.connections, qemu)
            m = re.search(r"in ([0-9.]+) ms", startup)
            if m:
                times.append(float(m.group(1)))
            status = "ok" if not problems else f"FAILED: {problems[:3]}"
            failures += bool(problems)
            print(f"cycle {cycle + 1}: {status}; {startup}", flush=True)
    print(
        f"{args.cycles} cycles ({args.ftl}, {args.connections} checker connections"
        + (f", qemu-io with {qemu.flushes} flushes" if qemu else "")
        + f"), {failures} failed, {checker.flushes} checker "
        f"flushes; recovery {min(times):.1f}-{max(times):.1f} ms, median "
        f"{statistics.median(times):.1f} ms"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
