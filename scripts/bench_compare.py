"""Wall time and memory of `ftlab.compare`: every scheme (or --schemes) on a workload (the
default one), `--jobs` at a time, run in a child interpreter as a user's script would, with
the summed resident memory of that interpreter and every process it starts (worker
processes included) sampled every 20 ms. Prints one line of figures and a digest of the
reports (equal digests: byte-identical reports).

    PYTHONPATH=python python3 scripts/bench_compare.py [--jobs 2] [--schemes a,b]
        [--workload NAME] [--requests N] [--preset NAME] [--repeat N]

To compare two versions of the front (processes against threads, say), run it with
PYTHONPATH pointing at each tree's `python/` folder in turn, on a quiet machine.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

CHILD = """
import hashlib, sys, time
import ftlab
names = sys.argv[1].split(",") if sys.argv[1] else [n for n, _ in ftlab.schemes()]
started = time.perf_counter()
sets = [f"workload.requests={sys.argv[4]}"] if sys.argv[4] else []
preset = sys.argv[5] or None
cmp = ftlab.compare(names, workload=sys.argv[2], jobs=int(sys.argv[3]), sets=sets, preset=preset)
wall = time.perf_counter() - started
digest = hashlib.sha256("".join(r.json for r in cmp.results.values()).encode()).hexdigest()
print(f"schemes={len(names)} compare_s={wall:.2f} digest={digest[:16]}")
"""


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and all its descendants (Linux /proc)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next(
                    int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:")
                )
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except (OSError, StopIteration):
            pass
    return total


def once(schemes: str, workload: str, jobs: int, requests: str, preset: str) -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = open("/proc/loadavg").read().split()[0]
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, schemes, workload, str(jobs), requests, preset],
        stdout=subprocess.PIPE,
        text=True,
    )
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss(child.pid))
        time.sleep(0.02)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert child.stdout is not None
    line = child.stdout.read().strip()
    if child.returncode != 0:
        sys.exit(f"the comparison failed (status {child.returncode})")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    print(
        f"{line} wall_s={wall:.2f} cpu_s={cpu:.1f} peak_tree_rss_mib={peak / 2**20:.0f} "
        f"load_before={load}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--schemes", default="", help="comma-separated (default: every one)")
    parser.add_argument("--workload", default="default")
    parser.add_argument(
        "--requests", default="", help="workload.requests (default: the workload's)"
    )
    parser.add_argument("--preset", default="", help="configuration preset (default: none)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    for _ in range(args.repeat):
        once(args.schemes, args.workload, args.jobs, args.requests, args.preset)


if __name__ == "__main__":
    main()
