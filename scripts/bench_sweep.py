"""Times a 200-run sweep: in a plain loop, with `ftlab sweep` locally (one process, then
one per core) and on a 2-worker Dask LocalCluster; prints the wall times (the best of
`--repeat`, as `ftlab bench` does: other load only ever slows a run down) and the
overhead per run. Usage: python scripts/bench_sweep.py [--requests N] [--repeat N]

The runs: the 8 page-mapped schemes (the ones a mapping DRAM budget concerns) x 5 mapping
DRAM budgets (1/16 to 1/2 of the page-level table) x 5 seeds of the built-in `default`
workload on the `small` device, filled first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import ftlab
from ftlab import _core, _sweep


def spec(requests: int) -> dict[str, object]:
    return {
        "schemes": ["page", "dftl", "sftl", "tpftl", "selective", "hpftl", "slimftl", "leaftl"],
        "workloads": ["default"],
        "presets": ["small"],
        "precondition": "fill",
        "seeds": 5,
        "set": {"workload.requests": requests, "dram.budget_bytes": 0},
        "grid": {"dram.budget_fraction": [1 / 16, 1 / 8, 1 / 4, 3 / 8, 1 / 2]},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="ftlab-bench-sweep-"))
    folder.mkdir(parents=True, exist_ok=True)
    s = spec(args.requests)
    plan = _sweep.plan(_sweep.parse_spec(s))
    runs = len(plan.tasks)
    print(f"{runs} runs, {os.cpu_count()} cores, load average {os.getloadavg()}")

    from distributed import LocalCluster

    results: dict[str, float] = {}

    def best(name: str, seconds: float) -> None:
        results[name] = min(results.get(name, seconds), seconds)

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:  # fmt: skip
        for _ in range(max(1, args.repeat)):
            started = time.perf_counter()
            for task in plan.tasks:
                _core.run(task.scheme, **task.options)
            best("loop", time.perf_counter() - started)
            for name, kwargs in (
                ("sweep, 1 process", {"jobs": 1}),
                ("sweep, default jobs", {}),
                ("Dask LocalCluster, 2 workers", {"scheduler": cluster.scheduler_address}),
            ):
                table = folder / f"{name.split(',')[1].strip().replace(' ', '-')}.parquet"
                table.unlink(missing_ok=True)
                started = time.perf_counter()
                df = ftlab.sweep(s, out=table, progress=False, **kwargs)  # type: ignore[arg-type]
                best(name, time.perf_counter() - started)
                assert df.height == runs and df["error"].null_count() == runs
            print(f"load average {os.getloadavg()}", flush=True)
    loop = results.pop("loop")
    print(f"plain loop (_core.run one by one): {loop:.1f} s, {loop / runs * 1000:.0f} ms a run")
    dask = ftlab.load_sweep(folder / "2-workers.parquet")
    local = ftlab.load_sweep(folder / "default-jobs.parquet")
    cols = _sweep.compare_columns(local)
    print("local and Dask tables identical:", local.select(cols).equals(dask.select(cols)))
    jobs = _sweep.default_jobs(runs)
    for name, wall in results.items():
        workers = 1 if "1 process" in name else (2 if "Dask" in name else jobs)
        overhead = (wall * workers - loop) / runs * 1000
        print(
            f"{name}: {wall:.1f} s ({loop / wall:.2f}x the loop); overhead "
            f"{overhead:+.0f} ms a run (wall x workers - loop, per run)"
        )
    if args.out is None:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
