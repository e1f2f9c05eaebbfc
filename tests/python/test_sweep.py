"""Design-space sweeps (`ftlab sweep`, `ftlab plot`, `ftlab advise`, `ftlab.sweep`): the
table, its determinism locally and on a Dask cluster, resuming, bad specs, plots, advice.

Runs are tiny (a few thousand requests of a built-in workload on the `small` device, or a
1,000-request trace excerpt); the Dask cluster is a LocalCluster on loopback whose two
workers are threads of this process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import ftlab
from ftlab import _advise, _dask, _sweep, _sweep_plot

# pytest-xdist (`pytest -n auto --dist loadgroup`): the module's sweeps and its Dask cluster
# are made once, by one worker.
pytestmark = pytest.mark.xdist_group("sweep")

SMALL: dict[str, Any] = {
    "workloads": ["default"],
    "presets": ["small"],
    "precondition": "fill",
    "set": {"workload.requests": 2000, "dram.budget_bytes": 0},
}
MSR = "msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv"


def spec(**fields: Any) -> dict[str, Any]:
    out = {**SMALL, **fields}
    out["set"] = {**SMALL["set"], **fields.get("set", {})}
    return out


def grid_spec() -> dict[str, Any]:
    """3 schemes x 2 budgets x 2 seeds, and LeaFTL's gamma over 2 values (which applies
    to LeaFTL only): 4 + 4 + 8 = 16 runs."""
    return spec(
        schemes=["page", "dftl", "leaftl"],
        seeds=2,
        grid={"dram.budget_fraction": [0.0625, 0.25], "leaftl.gamma": [0, 4]},
    )


def same(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    """Equal tables, the wall-clock column aside."""
    return a.select(_sweep.compare_columns(a)).equals(b.select(_sweep.compare_columns(b)))


def ftlab_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ftlab", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def write_spec(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


SPEC_TOML = """
schemes = ["page", "dftl", "sftl"]
workloads = ["default"]
presets = ["small"]
precondition = "fill"
seeds = [1, 2]

[set]
workload.requests = 2000

[grid]
dram.budget_bytes = ["256KiB", "1MiB"]
"""


@pytest.fixture(scope="module")
def local() -> pl.DataFrame:
    """The grid spec, run in this process."""
    return ftlab.sweep(grid_spec(), jobs=1)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A Dask LocalCluster on loopback (TCP), two single-threaded workers."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    ) as c:
        yield str(c.scheduler_address)


def test_grid_table_has_one_typed_row_per_run(local: pl.DataFrame) -> None:
    assert local.height == 16
    assert local["run_key"].n_unique() == 16
    counts = dict(local.group_by("scheme").len().iter_rows())
    assert counts == {"page": 4, "dftl": 4, "leaftl": 8}
    # A key of another scheme's section is null for it (and does not multiply its runs).
    assert local.filter(pl.col("scheme") != "leaftl")["leaftl.gamma"].null_count() == 8
    assert sorted(local["seed"].unique().to_list()) == [1, 2]
    schema = local.schema
    assert schema["dram.budget_fraction"] == pl.Float64
    assert schema["leaftl.gamma"] == pl.Int64
    assert schema["workload.requests"] == pl.Int64
    assert schema["memory_peak_bytes"] == pl.Int64
    assert schema["read_mean_us"] == pl.Float64
    assert schema["saturated"] == pl.Boolean
    assert local["error"].null_count() == 16
    assert (local["requests"] == 2000).all()
    assert set(local["source"]) == {"default"}
    # Seeds change the workload: the two seeds of one configuration differ.
    page = local.filter((pl.col("scheme") == "page") & (pl.col("dram.budget_fraction") == 0.25))
    assert page["workload.requests"].to_list() == [2000, 2000]
    assert page["read_mean_us"][0] != page["read_mean_us"][1]
    # The budget is applied: DFTL's mapping DRAM grows with it.
    dftl = (
        local.filter(pl.col("scheme") == "dftl")
        .group_by("dram.budget_fraction")
        .agg(pl.col("memory_peak_bytes").max())
    )
    peaks = dict(dftl.iter_rows())
    assert peaks[0.0625] < peaks[0.25]
    # Sorted: by scheme, then the keys, then the seed.
    assert local["scheme"].to_list() == sorted(local["scheme"].to_list())


def test_summary_columns_cover_every_summary_metric() -> None:
    result = ftlab.simulate(
        "page", workload="default", preset="small", sets=["workload.requests=500"]
    )
    keys = set(result.summary) - {"ftl"}
    assert keys <= set(_sweep.SUMMARY_COLUMNS), keys - set(_sweep.SUMMARY_COLUMNS)


def test_same_run_written_two_ways_is_one_run() -> None:
    a = _sweep.plan(_sweep.parse_spec(spec(schemes=["dftl"], set={"dram.budget_bytes": "1MiB"})))
    b = _sweep.plan(_sweep.parse_spec(spec(schemes=["dftl"], set={"dram.budget_bytes": 1 << 20})))
    assert a.run_keys == b.run_keys
    c = _sweep.plan(_sweep.parse_spec(spec(schemes=["dftl"], set={"dram.budget_bytes": "2MiB"})))
    assert a.run_keys != c.run_keys


def test_points_replace_the_axes_they_name() -> None:
    p = _sweep.plan(
        _sweep.parse_spec(
            spec(
                schemes=["page", "dftl"],
                grid={"workload.read_ratio": [0.3, 0.5]},
                points=[{}, {"scheme": "leaftl", "leaftl.gamma": 4, "workload.read_ratio": 0.9}],
            )
        )
    )
    assert sorted(t.scheme for t in p.tasks) == ["dftl", "dftl", "leaftl", "page", "page"]
    (leaftl,) = [t for t in p.tasks if t.scheme == "leaftl"]
    assert "leaftl.gamma=4" in leaftl.options["sets"]
    assert "workload.read_ratio=0.9" in leaftl.options["sets"]


def test_local_threads_give_the_same_table(local: pl.DataFrame) -> None:
    parallel = ftlab.sweep(grid_spec(), jobs=2)
    assert same(parallel, local)


def test_local_sweep_runs_one_thread_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    import concurrent.futures

    from ftlab import _parallel

    pools: list[int | None] = []

    class Watched(concurrent.futures.ThreadPoolExecutor):
        def __init__(self, max_workers: int | None = None, **kwargs: Any) -> None:
            pools.append(max_workers)
            super().__init__(max_workers=max_workers, **kwargs)

    monkeypatch.setattr(_parallel, "ThreadPoolExecutor", Watched)
    table = ftlab.sweep(
        spec(schemes=["page", "dftl", "sftl"], seeds=2, set={"workload.requests": 500})
    )
    assert table.height == 6 and table["error"].null_count() == 6
    jobs = min(len(os.sched_getaffinity(0)), 6)
    # One thread per core (no more than the runs); a single core runs them here.
    assert pools == ([jobs] if jobs > 1 else [])


def test_progress_bar_with_eta_on_a_terminal(tmp_path: Path) -> None:
    import fcntl
    import pty
    import struct
    import termios
    import threading

    spec_file = write_spec(
        tmp_path / "bar.toml",
        SPEC_TOML.replace("seeds = [1, 2]", "seeds = 1").replace("2000", "20000"),
    )
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ftlab", "sweep", str(spec_file), "-j", "1"],
        stdout=subprocess.PIPE,
        stderr=terminal,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "160"},
    )
    os.close(terminal)
    shown: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(main, 4096)
            except OSError:  # the terminal closed with the process
                return
            if not data:
                return
            shown.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    stdout, _ = proc.communicate(timeout=300)
    reader.join(timeout=30)
    os.close(main)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(shown).decode(errors="replace"))
    assert proc.returncode == 0, text
    # On the terminal (standard error): the bar, runs done of all, and the ETA.
    assert "ETA" in text and "0/6 runs" in text and "6/6 runs" in text, text
    # Standard output keeps the summary alone.
    assert "ETA" not in stdout and stdout.startswith("6 runs: 6 run now locally"), stdout


def test_dask_cluster_gives_the_same_table(
    local: pl.DataFrame, cluster: str, tmp_path: Path
) -> None:
    table = tmp_path / "dask.parquet"
    on_cluster = ftlab.sweep(grid_spec(), scheduler=cluster, out=table)
    assert same(on_cluster, local)
    assert same(ftlab.load_sweep(table), local)


def test_cli_sweep_on_the_cluster(cluster: str, tmp_path: Path) -> None:
    spec_file = write_spec(tmp_path / "grid.toml", SPEC_TOML)
    out = ftlab_cli("sweep", str(spec_file), "--scheduler", cluster, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"12 runs: 12 run now on {cluster}" in out.stdout
    assert "ETA" not in out.stdout + out.stderr  # no bar off a terminal
    table = pl.read_parquet(tmp_path / "grid.parquet")
    assert same(table, ftlab.sweep(spec_file, jobs=1))
    assert sorted(set(table["dram.budget_bytes"])) == [256 * 1024, 1 << 20]
    # Once more: nothing left to run.
    again = ftlab_cli("sweep", str(spec_file), "--scheduler", cluster, cwd=tmp_path)
    assert "0 run now" in again.stdout and "12 already in grid.parquet" in again.stdout


def shipped_files(dask_worker: Any) -> list[str]:
    """Run on a Dask worker: the traces shipped to it (`DIGEST/FILE`)."""
    root = Path(dask_worker.local_directory) / _dask.SHIPPED_DIR
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_traces_by_path_and_shipped(
    traces: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace_spec = {
        "schemes": ["page", "dftl"],
        "traces": [str(traces / MSR)],
        "presets": ["small"],
        "precondition": "fill",
        "set": {"trace.device_size": "fit", "dram.budget_bytes": "512KiB"},
    }
    here = ftlab.sweep(trace_spec, jobs=1)
    assert here.height == 2 and (here["requests"] == 1000).all()
    # One device fitted to the trace for both schemes (as `ftlab compare` does).
    assert _sweep.plan(_sweep.parse_spec(trace_spec)).fitted == 2
    assert here["logical_bytes"].n_unique() == 1
    assert set(here["source"]) == {str(traces / MSR)}
    # The workers are threads of this process: what they open can be watched here.
    opened: list[str] = []

    def watched(name: str) -> str:
        path = shipped_path(name)
        opened.append(path)
        return path

    shipped_path = _dask.shipped_path
    monkeypatch.setattr(_dask, "shipped_path", watched)
    by_path = ftlab.sweep(trace_spec, scheduler=cluster)
    assert opened == []
    shipped = ftlab.sweep(trace_spec, scheduler=cluster, ship_traces=True)
    assert same(by_path, here) and same(shipped, here)
    # Each run read the copy shipped to its worker, not the trace's own path; every worker
    # holds one copy (the plugin runs once per worker).
    assert len(opened) == 2 and all(o != str(traces / MSR) for o in opened)
    assert all(Path(o).read_bytes() == (traces / MSR).read_bytes() for o in opened)
    distributed = pytest.importorskip("distributed")
    with distributed.Client(cluster) as client:
        copies = client.run(shipped_files)
    assert len(copies) == 2
    assert all(c == [f"{Path(opened[0]).parent.name}/{Path(MSR).name}"] for c in copies.values())


def test_resume_runs_only_the_missing_rows(local: pl.DataFrame, tmp_path: Path) -> None:
    table = tmp_path / "t.parquet"
    p = _sweep.plan(_sweep.parse_spec(grid_spec()))
    seen: list[str] = []

    def stop_after_five(status: str, row: dict[str, Any]) -> None:
        seen.append(row["run_key"])
        if len(seen) == 5:
            raise KeyboardInterrupt

    first = _sweep.run_plan(p, out=table, jobs=1, on_result=stop_after_five)
    assert first.interrupted and first.ran == 5
    assert pl.read_parquet(table).height == 5  # merged at the interrupt
    assert not _sweep.parts_dir(table).exists()
    again: list[str] = []
    second = _sweep.run_plan(
        p, out=table, jobs=1, on_result=lambda s, r: again.append(r["run_key"])
    )
    assert second.skipped == 5 and second.ran == 11
    assert not set(again) & set(seen)
    assert same(second.table, local)
    # A sweep killed outright leaves its finished rows as part files: they count too.
    table2 = tmp_path / "killed.parquet"
    t = _sweep.Table(table2)
    t.open()
    for row in local.head(7).iter_rows(named=True):
        t.add(pl.DataFrame([row], schema=local.schema), row["run_key"])
    t.close()
    assert ftlab.load_sweep(table2).height == 7
    third = _sweep.run_plan(p, out=table2, jobs=1)
    assert third.skipped == 7 and third.ran == 9
    assert same(third.table, local)


def test_ctrl_c_keeps_the_finished_runs(tmp_path: Path) -> None:
    spec_file = write_spec(
        tmp_path / "long.toml",
        """
schemes = ["dftl", "sftl", "tpftl", "leaftl"]
workloads = ["default"]
presets = ["small"]
precondition = "fill"
seeds = 3
[set]
workload.requests = 60000
dram.budget_bytes = "512KiB"
""",
    )
    table = tmp_path / "long.parquet"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ftlab", "sweep", str(spec_file), "--out", str(table), "-j", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # A terminal's Ctrl-C: not ignored, even when the suite itself runs in the
        # background of a script (which starts it with SIGINT ignored, and Python keeps that).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    parts = _sweep.parts_dir(table)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (parts.is_dir() and any(parts.glob("*.parquet"))):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: to the whole process group
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    kept = pl.read_parquet(table)
    assert 1 <= kept.height < 12 and kept["error"].null_count() == kept.height
    resumed = ftlab_cli("sweep", str(spec_file), "--out", str(table), "-j", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{kept.height} already in" in resumed.stdout
    assert pl.read_parquet(table).height == 12


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[set]\ndram.budget_byts = 1\n",
            ["bad.toml", "[set]", "dram.budget_byts", "dram.budget_bytes"],
        ),
        ('[grid]\n"gc.polcy" = ["greedy"]\n', ["bad.toml", "[grid]", "gc.polcy", "gc.policy"]),
        ("[grid]\ndram.budget_bytes = []\n", ["bad.toml", "dram.budget_bytes", "empty"]),
        ("schemes = []\n", ["bad.toml", "schemes", "empty"]),
        ('traces = ["absent.trace"]\n', ["bad.toml", "absent.trace", "no such file"]),
        ('schemes = ["nope"]\n', ["bad.toml", "nope", "leaftl"]),
        ('workloads = ["nope"]\n', ["bad.toml", "nope"]),
        ("budget = 1\n", ["bad.toml", "budget", "[set]"]),
        ("[grid]\ngc.threshold = [0.01, 5]\n", ["bad.toml", "gc.threshold", "[grid]"]),
        ("schemes = [\n", ["bad.toml", "TOML"]),
        (
            "[[points]]\nscheme = 'dftl'\nleaftl.gamm = 4\n",
            ["bad.toml", "[[points]] 1", "leaftl.gamm"],
        ),
    ],
)
def test_bad_specs_stop_before_anything_runs(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    spec_file = write_spec(tmp_path / "bad.toml", text)
    out = ftlab_cli("sweep", str(spec_file), cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.startswith("error: ") and "Traceback" not in out.stderr
    for word in expected:
        assert word in out.stderr, (word, out.stderr)
    assert not (tmp_path / "bad.parquet").exists()
    assert not _sweep.parts_dir(tmp_path / "bad.parquet").exists()


def test_missing_spec_and_dry_run(tmp_path: Path) -> None:
    out = ftlab_cli("sweep", str(tmp_path / "absent.toml"))
    assert out.returncode == 2 and "absent.toml" in out.stderr and "no such file" in out.stderr
    spec_file = write_spec(tmp_path / "grid.toml", SPEC_TOML)
    dry = ftlab_cli("sweep", str(spec_file), "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "12 runs, 0 already in grid.parquet, 12 to run" in dry.stdout
    assert not (tmp_path / "grid.parquet").exists()


def test_pareto_front_and_plots(local: pl.DataFrame, tmp_path: Path) -> None:
    front = ftlab.pareto_front(local)
    assert front.height == 8  # configurations: the seeds averaged
    assert (front["runs"] == 2).all()
    on = front.filter(pl.col("pareto")).sort("memory_peak_bytes")
    # Along the front, more DRAM buys strictly less latency; everything else is dominated.
    latencies = on["read_mean_us"].to_list()
    assert latencies == sorted(latencies, reverse=True) and len(set(latencies)) == len(latencies)
    for row in front.filter(~pl.col("pareto")).iter_rows(named=True):
        assert any(
            o["memory_peak_bytes"] <= row["memory_peak_bytes"]
            and o["read_mean_us"] <= row["read_mean_us"]
            for o in on.iter_rows(named=True)
        )
    assert _sweep_plot.swept_keys(local) == ["dram.budget_fraction", "leaftl.gamma"]
    # The Pareto plot: mapping DRAM against mean and p99 latency, one row per source.
    other = local.with_columns(pl.lit("other").alias("workload"), pl.lit("other").alias("source"))
    two = pl.concat([local, other])
    fronts = ftlab.pareto_front(two)
    assert fronts.height == 16 and fronts.filter(pl.col("pareto")).height == 2 * on.height
    fig = ftlab.plot_pareto(two)
    assert [ax.get_ylabel() for ax in fig.axes] == ["read mean latency (us)", "read p99 (us)"] * 2
    assert [ax.get_title().split(":")[0] for ax in fig.axes] == ["default"] * 2 + ["other"] * 2
    # The WAF heatmap: one panel per scheme with both keys (LeaFTL), a cell per pair.
    fig = ftlab.plot_heatmap(local, "dram.budget_fraction", "leaftl.gamma")
    (panel,) = [ax for ax in fig.axes if ax.get_title()]
    assert panel.get_title() == "leaftl (default)" and len(panel.texts) == 4
    # One line per scheme (LeaFTL's per gamma) against the swept key.
    fig = ftlab.plot_lines(local, "dram.budget_fraction", "waf")
    labels = sorted(str(line.get_label()) for line in fig.axes[0].get_lines())
    assert labels == ["dftl", "leaftl, leaftl.gamma=0", "leaftl, leaftl.gamma=4", "page"]
    table = tmp_path / "grid.parquet"
    local.write_parquet(table)
    out = ftlab_cli("plot", str(table))
    assert out.returncode == 0, out.stderr
    # It prints the front: the configurations on it, which scheme's they are depending on
    # the numbers.
    assert "Pareto front" in out.stdout
    for scheme in set(on["scheme"].to_list()):
        assert scheme in out.stdout, (scheme, out.stdout)
    folder = tmp_path / "grid-plots"
    for name in ("pareto", "heatmap_waf", "lines_read_mean_us"):
        assert (folder / f"{name}.png").stat().st_size > 0
        assert (folder / f"{name}.svg").stat().st_size > 0
    bad = ftlab_cli("plot", str(table), "--x", "nope")
    assert bad.returncode == 2 and "nope" in bad.stderr and "dram.budget_fraction" in bad.stderr


def test_advise_ranks_what_fits(tmp_path: Path) -> None:
    advice = ftlab.advise(
        workload="default",
        preset="small",
        sets=["workload.requests=3000"],
        precondition="fill",
        dram="512KiB",
        schemes=["page", "dftl", "sftl", "leaftl"],
        out=tmp_path / "advice",
    )
    budget = 512 * 1024
    assert advice.budget_bytes == budget
    # The page-level table (1.5 MiB) cannot fit: left out before running.
    assert any(name == "page" and "needs" in why for name, why in advice.excluded)
    assert "page" not in advice.table["scheme"].to_list()
    assert advice.best in {"dftl", "sftl", "leaftl"}
    assert (advice.ranking["memory_peak_max_bytes"] <= budget).all()
    means = advice.ranking["read_mean_us"].to_list()
    assert means == sorted(means)
    text = "\n".join(advice.lines)
    assert f"Recommended: {advice.best}" in text and "Why:" in text
    assert (tmp_path / "advice" / "pareto.png").is_file()
    assert (tmp_path / "advice" / "advise.parquet").is_file()
    # LeaFTL's own parameter was swept.
    assert advice.table.filter(pl.col("scheme") == "leaftl")["leaftl.gamma"].n_unique() == 3
    # The other goals rank the same runs (resumed from the table: nothing runs again).
    for goal, column in (("waf", "waf"), ("endurance", "erase_count_max")):
        again = ftlab.advise(
            workload="default", preset="small", sets=["workload.requests=3000"],
            precondition="fill", dram="512KiB", schemes=["page", "dftl", "sftl", "leaftl"],
            out=tmp_path / "advice", goal=goal,  # type: ignore[arg-type]
        )  # fmt: skip
        assert again.table.equals(advice.table)  # wall_seconds too: not run again
        ranked = again.ranking[column].to_list()
        assert ranked == sorted(ranked), (goal, ranked)
        # Each scheme is represented by its best configuration for the goal.
        for row in again.ranking.iter_rows(named=True):
            mine = _sweep_plot.aggregate(again.table).filter(
                (pl.col("scheme") == row["scheme"]) & (pl.col("memory_peak_max_bytes") <= budget)
            )
            assert row[column] == mine[column].min()
    too_small = ftlab.advise(
        workload="default", preset="small", dram="4KiB", schemes=["page", "dftl"]
    )
    assert too_small.best is None and "No scheme fits" in too_small.lines[0]


def test_advise_keeps_a_parameter_given_with_set() -> None:
    # The spec: DFTL's replacement is set once (not a point of its own), LeaFTL's gamma is
    # still swept, and a scheme named twice is tried once.
    spec = _advise.spec_for(
        1 << 20, trace=None, workload="default", preset="small", config=[],
        sets=["dftl.replacement=lru"], precondition=None, seeds=1,
        schemes=["dftl", "leaftl", "dftl"],
    )  # fmt: skip
    assert spec["set"]["dftl.replacement"] == "lru"
    assert spec["points"] == [
        {"scheme": "dftl"},
        {"scheme": "leaftl", "leaftl.gamma": 0},
        {"scheme": "leaftl", "leaftl.gamma": 4},
        {"scheme": "leaftl", "leaftl.gamma": 16},
    ]
    # The runs: DFTL runs once, with LRU replacement.
    advice = ftlab.advise(
        workload="default", preset="small", sets=["workload.requests=1000", "dftl.replacement=lru"],
        precondition="fill", dram="512KiB", schemes=["dftl"],
    )  # fmt: skip
    assert advice.table["dftl.replacement"].to_list() == ["lru"]
    assert advice.best == "dftl"


def test_advise_cli_on_a_trace(traces: Path, tmp_path: Path) -> None:
    out = ftlab_cli(
        "advise", "--trace", str(traces / MSR), "--dram", "1MiB", "--goal", "waf",
        "--preset", "small", "--set", 'trace.device_size="fit"', "--precondition", "fill",
        "--ftl", "page,dftl,tpftl,hpftl", "--out", str(tmp_path / "adv"),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Recommended:" in out.stdout and "write amplification" in out.stdout
    assert "page: its map alone needs" in out.stdout
    assert (tmp_path / "adv" / "pareto.svg").is_file()
    assert (tmp_path / "adv" / "advice.txt").read_text().startswith("Budget 1.00 MiB")


def test_example_spec_is_valid() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "sweep.toml"
    p = _sweep.plan(_sweep.parse_spec(example))
    assert len(p.tasks) > 1


def test_toml_values_round_trip() -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    for value in (1, -2.5, 1e-05, True, 'a"b', [1, "x", [2]], {"a": 1}):
        assert tomllib.loads(f"v = {_sweep.toml_value(value)}")["v"] == value


def test_volumes_on_a_cluster_equal_the_volumes_run_here(tmp_path: Path, cluster: str) -> None:
    """A fleet of volumes on the Dask cluster (the trace shipped to the workers) gives the
    table the local threads give, row for row; the command line runs it too."""
    trace = tmp_path / "three.trace"
    lines = [f"{i * 1000} {i % 3} {(i * 7919) % 4096 * 8} 8 {(i // 3) % 2}" for i in range(600)]
    trace.write_text("\n".join(lines) + "\n")
    sets = ["geometry.pages_per_block=16", "geometry.channels=2"]
    here = ftlab.replay_volumes(trace, "page", sets=sets, jobs=2, progress=False)
    there = ftlab.replay_volumes(
        trace, "page", sets=sets, scheduler=cluster, ship_traces=True, progress=False
    )
    columns = _sweep.compare_columns(here)
    key = "trace.devices"
    assert here.height == 3
    assert there.select(columns).sort(key).equals(here.select(columns).sort(key))
    out = ftlab_cli(
        "run", "--trace", str(trace), *[a for s in sets for a in ("--set", s)],
        "--per-volume", "--scheduler", cluster, "--out", str(tmp_path / "v.parquet"), "-q",
        cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert pl.read_parquet(tmp_path / "v.parquet").height == 3
