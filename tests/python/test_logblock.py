"""The log-block hybrid schemes (block, bast, fast, kast, fftl, kraft) from Python: their
merge figures in the summary, frames and run table, and the KRAFT reproduction (quick)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ftlab
from ftlab import reproduce
from ftlab._format import summary_rows
from ftlab._frames import compare_table
from ftlab.reproduce import kraft

LOG_BLOCK_SCHEMES = [s["name"] for s in ftlab.scheme_info("log-block") if s["builtin"]]
# A small filled device and a Zipf workload: every write is an overwrite, merges happen.
SMALL = ["workload.requests=5000", "geometry.blocks_per_plane=64"]


def _run(scheme: str) -> ftlab.Result:
    sets = list(SMALL)
    if scheme not in ("page", "block"):
        sets.append(f"{scheme}.log_blocks=16")
    return ftlab.simulate(scheme, workload="zipf", precondition="fill", sets=sets, verify=True)


@pytest.mark.parametrize("scheme", LOG_BLOCK_SCHEMES)
def test_merge_figures_agree_with_the_counters(scheme: str) -> None:
    result = _run(scheme)
    s = result.summary
    counters = result.report["metrics"]["scheme"]
    merges = result.merges
    assert merges["kind"].to_list() == ["switch", "partial", "full"]
    by_kind = dict(zip(merges["kind"].to_list(), merges["merges"].to_list()))
    assert by_kind == {
        "switch": s["merges_switch"],
        "partial": s["merges_partial"],
        "full": s["merges_full"],
    }
    assert s["merges_full"] > 0
    # A switch copies nothing; every page a merge copied is in one of the other two kinds.
    pages = dict(zip(merges["kind"].to_list(), merges["pages_copied"].to_list()))
    assert pages["switch"] == 0
    assert s["merge_pages_copied"] == pages["partial"] + pages["full"] > 0
    flash = result.report["metrics"]["flash"]
    assert flash["programs"]["merge_full"] == pages["full"]
    # Every reclaimed log block (and FFTL cleaning) is in the associativity histogram.
    assert int(result.associativity["merges"].sum()) == int(counters["merge_ops"])
    assert s["log_blocks"] == int(counters["log_blocks"])
    assert 0 < s["merge_time_mean_us"] <= s["merge_time_max_us"]
    assert 0 < s["merge_cost_mean_us"] <= s["merge_cost_max_us"]
    assert 0 < s["log_utilisation_at_merge"] <= 1
    rows = dict(summary_rows(s))
    assert rows["merges switch / partial / full"] == (
        f"{s['merges_switch']:,} / {s['merges_partial']:,} / {s['merges_full']:,}"
    )
    assert "merge time mean / max" in rows


def test_kraft_associativity_histogram_stops_at_k() -> None:
    result = ftlab.simulate(
        "kraft",
        workload="zipf",
        precondition="fill",
        sets=[*SMALL, "kraft.log_blocks=16", "kraft.max_associativity=3"],
        mapping_only=True,
    )
    hist = dict(zip(result.associativity["associativity"], result.associativity["merges"]))
    assert hist["3"] > 0
    assert all(hist[str(a)] == 0 for a in range(4, 17))
    # Mapping only: the cost model is there, the measured times are not.
    s = result.summary
    assert s["merge_time_mean_us"] is None and s["merge_cost_mean_us"] > 0


def test_other_schemes_have_no_merge_figures() -> None:
    result = _run("page")
    s = result.summary
    assert s["merges_full"] is None and s["merge_pages_copied"] is None
    assert result.merges.is_empty() and result.associativity.is_empty()
    assert "merges switch / partial / full" not in dict(summary_rows(s))


def test_compare_table_has_the_merge_columns() -> None:
    table = compare_table({"page": _run("page"), "kraft": _run("kraft")})
    rows = {r["scheme"]: r for r in table.iter_rows(named=True)}
    assert rows["page"]["merges"] is None
    kraft_summary = ftlab.summarize(_run("kraft").report)
    assert rows["kraft"]["merges"] == (
        kraft_summary["merges_switch"]
        + kraft_summary["merges_partial"]
        + kraft_summary["merges_full"]
    )
    assert rows["kraft"]["merge_time_mean_us"] == pytest.approx(kraft_summary["merge_time_mean_us"])


def test_latency_reduction() -> None:
    assert kraft.reduction({"fast": 300.0, "kast": 200.0, "fftl": 100.0, "kraft": 150.0}) == (
        pytest.approx(0.25)
    )
    assert kraft.reduction({"fast": None, "kast": None, "fftl": None, "kraft": 1.0}) is None


def test_unsaturated_slows_a_saturating_replay_down(traces: Path) -> None:
    # MQSim's TPC-C excerpt: 7,000 requests in 0.14 s, far more than the MLC device serves.
    tpcc = traces / "mqsim_umass_websearch_tpcc" / "tpcc-small.trace"
    sets = [*kraft.QUICK_SETS, "kraft.log_blocks=64"]
    with ftlab.model_0_1():
        first = kraft._run("kraft", tpcc, sets)
        assert kraft.saturated(first)
        scale, reports = kraft.unsaturated({"kraft": ("kraft", tpcc, sets)})
    assert scale == int(scale) >= first["metrics"]["load"]["suggested_time_scale"]
    assert not kraft.saturated(reports["kraft"])
    assert reports["kraft"]["config"]["replay"]["time_scale"] == scale


def test_reproduction_quick(traces: Path, tmp_path: Path) -> None:
    reproduce.run("kraft", tmp_path, quick=True)
    for stem in ("table2", "memory", "k_sweep"):
        assert (tmp_path / f"{stem}.csv").is_file()
        assert (tmp_path / f"{stem}.md").is_file()
    for plot in ("figure4", "k_sweep"):
        assert (tmp_path / f"{plot}.png").is_file()
    with (tmp_path / "table2.csv").open() as f:
        rows = {(r["trace"], r["scheme"]): r for r in csv.DictReader(f)}
    assert len(rows) == (len(kraft.QUICK_TRACES) + 1) * len(kraft.SCHEMES)
    for (_, scheme), row in rows.items():
        assert int(row["log blocks"]) == kraft.LOG_BLOCKS[scheme]
        assert row["precondition"] == "none"
        assert row["saturated"] == "no"
    oltp = "OLTP1 (Financial1)"
    for scheme in kraft.SCHEMES:
        assert int(rows[oltp, scheme]["merge ops"]) > 0, scheme
        # LATE on WebSearch (no merge, 16 pages written): one tR per sector read, as the
        # paper's 60.4 us.
        assert 60.0 <= float(rows["Web (WebSearch)", scheme]["LATE: flash us per sector"]) < 61
    # The OLTP stand-in exercises every merge kind: the sequential logs of FAST, KAST and
    # FFTL and KRAFT's serial logs are reclaimed by switch and partial merges, and with
    # twice the log blocks KRAFT merges least often and has the lowest LATE.
    standin = kraft.STANDIN_LABEL
    kinds = {
        s: [int(k) for k in rows[standin, s]["merges switch / partial / full"].split(" / ")]
        for s in kraft.SCHEMES
    }
    for scheme, (switch, partial, full) in kinds.items():
        assert switch > 0 and partial > 0 and full > 0, (scheme, kinds)
    late = {s: float(rows[standin, s]["LATE: flash us per sector"]) for s in kraft.SCHEMES}
    assert late["kraft"] == min(late.values())
    ops = {s: int(rows[standin, s]["merge ops"]) for s in kraft.SCHEMES}
    assert ops["kraft"] == min(ops.values())
    with (tmp_path / "memory.csv").open() as f:
        memory = {r["scheme"]: r for r in csv.DictReader(f)}
    # Relative addressing: KRAFT's 256 log blocks cost little more than FAST's 128, and
    # FAST's log DRAM holds well over 1.8 times its log blocks.
    assert int(memory["kraft"]["log area B"]) < 1.2 * int(memory["fast"]["log area B"])
    assert int(memory["kraft in FAST's log DRAM"]["log blocks"]) > 1.8 * 128
    with (tmp_path / "k_sweep.csv").open() as f:
        sweep = [r for r in csv.DictReader(f) if r["source"] == standin]
    assert [int(r["K"]) for r in sweep] == kraft.QUICK_K_VALUES
    # On the stand-in K binds: a larger K merges less often, and dearer.
    k_ops = [int(r["merge ops"]) for r in sweep]
    assert k_ops[0] > k_ops[1] > k_ops[2] > 0
    cost = [float(r["merge cost ms"]) for r in sweep]
    assert cost[0] < cost[1] < cost[2]
    assert "paper" in (tmp_path / "summary.md").read_text()


def test_a_sweep_table_has_the_merge_columns() -> None:
    table = ftlab.sweep(
        {
            "schemes": ["page", "kraft"],
            "workloads": ["zipf"],
            "preconditions": ["fill"],
            "set": {
                "workload.requests": 5000,
                "geometry.blocks_per_plane": 64,
                "kraft.log_blocks": 16,
            },
        },
        jobs=1,
    )
    rows = {r["scheme"]: r for r in table.iter_rows(named=True)}
    assert rows["page"]["merges_full"] is None
    summary = _run("kraft").summary
    for column in ("log_blocks", "merges_full", "merge_pages_copied", "merge_cost_mean_us"):
        assert rows["kraft"][column] == pytest.approx(summary[column]), column


@pytest.mark.parametrize("workload", [name for name, _ in ftlab.workloads()])
def test_every_builtin_workload_verifies_on_every_scheme(workload: str) -> None:
    # The KRAFT preset's MLC device (ascending program order) shrunk to 256 MiB, filled:
    # every write is an overwrite, through the log blocks.
    sets = ["geometry.blocks_per_plane=128", "ftl.over_provisioning=0.07"]
    for scheme in LOG_BLOCK_SCHEMES:
        result = ftlab.simulate(
            scheme,
            workload=workload,
            preset="kraft",
            precondition="fill",
            verify=True,
            sets=[*sets, "workload.requests=3000"],
        )
        report = result.report
        assert report["config"]["nand"]["program_order"] == "ascending"
        # Verified: every read returned the last write (or nothing, for a trimmed page).
        if report["config"]["workload"]["trim_ratio"] == 0:
            assert report["metrics"]["host"]["unmapped_reads"] == 0, (workload, scheme)
        # Every workload but the read-mostly ones (hotcold, read-heavy) merges on every
        # scheme; those merge on the schemes with few or small log blocks, as does
        # fio-rand-write, whose 3,000 writes over half the device fit KRAFT's log blocks.
        light = ("hotcold", "read-heavy", "fio-rand-write")
        if workload not in light or scheme in ("block", "bast"):
            assert report["metrics"]["scheme"]["merge_ops"] > 0, (workload, scheme)


def _fftl_cli(trace: Path, out: Path, *sets: str) -> dict[str, Any]:
    """`ftlab run --ftl fftl --verify` on `trace`, the KRAFT reproduction's quick device."""
    args = ["--set", "geometry.blocks_per_plane=2048", "--set", "fftl.log_blocks=128"]
    for s in sets:
        args += ["--set", s]
    done = subprocess.run(
        [sys.executable, "-m", "ftlab", "run", "--ftl", "fftl", "--trace", str(trace)]
        + ["--preset", "kraft", "--precondition", "none", "--verify", "--json", str(out)]
        + [*args, "-q"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def test_fftl_packs_financial1_sectors_verified(traces: Path, tmp_path: Path) -> None:
    """FFTL's sub-page packing on the Financial1 excerpt (512 B-granular, 2 KiB pages):
    every read checked sector by sector against the identities the flash holds; the
    partial-page writes packed, merged pages absorbing packed sectors, and fewer pages
    programmed than with packing off (read-modify-writes)."""
    trace = traces / "ssdsim_hust_financial1" / "example.ascii"
    packed = _fftl_cli(trace, tmp_path / "packed.json")
    unpacked = _fftl_cli(trace, tmp_path / "unpacked.json", "fftl.sector_packing=false")
    for r in (packed, unpacked):
        assert r["verify"] is True
        assert r["metrics"]["host"]["requests"] == 10_000
    c = packed["metrics"]["scheme"]
    host = packed["metrics"]["host"]
    assert host["partial_page_writes"] > 0
    assert c["sector_writes"] >= host["partial_page_writes"]
    assert c["packed_pages"] > 0 and c["absorbed_pages"] + c["folds"] > 0
    assert c["log_blocks"] == 128 and c["packing_blocks"] == 16
    assert "sector_writes" not in unpacked["metrics"]["scheme"]
    programs = [r["metrics"]["flash"]["programs"]["total"] for r in (packed, unpacked)]
    assert programs[0] < programs[1], programs
    # The host read the partial pages' other sectors before; packing reads none.
    reads = [r["metrics"]["flash"]["reads"]["host"] for r in (packed, unpacked)]
    assert reads[0] < reads[1], reads
