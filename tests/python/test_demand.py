"""The demand-cached schemes from the Python front: verification on a real trace and the
journaling workload with hints (their reproductions: test_reproduce.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ftlab

DEMAND = [s["name"] for s in ftlab.scheme_info("demand") if s["builtin"]]


def test_schemes_are_listed() -> None:
    names = [n for n, _ in ftlab.schemes()]
    for scheme in DEMAND:
        assert scheme in names


@pytest.mark.parametrize("scheme", DEMAND)
def test_verified_on_financial1_with_a_small_cache(scheme: str, traces: Path) -> None:
    trace = traces / "ssdsim_hust_financial1" / "example.ascii"
    # One channel (a quarter of the small device): preconditioning to steady state, most of
    # the run, fills 128k pages rather than 512k; GC and translation traffic still run.
    sets = ["buffer.size_bytes=0", "dram.budget_bytes=64KiB", "geometry.channels=1"]
    if scheme == "selective":
        # 64 KiB mapping blocks would make the budget one slot, which covers the excerpt's
        # hot range: a cache of 4 KiB blocks is one that misses.
        sets.append("selective.mapping_block_bytes=4KiB")
    result = ftlab.simulate(scheme, trace=trace, preset="small", verify=True, sets=sets)
    m = result.report["metrics"]
    assert result.report["verify"] is True
    assert m["host"]["requests"] == 10_000
    assert 0.0 < m["scheme"]["cache_hit_ratio"] < 1.0
    assert m["memory_bytes"]["peak_total"] > 0
    assert m["gc"]["invocations"] > 0


def test_journal_workload_with_hints() -> None:
    sets = [
        "workload.requests=4000",
        "dram.budget_bytes=16KiB",
        "selective.mapping_block_bytes=4KiB",
        'selective.hot_ranges=[[0, "8MiB"]]',
        "geometry.channels=1",
    ]
    # A quarter of the small device: the default one's preconditioning took 10x the CPU.
    report = ftlab.simulate(
        "selective", workload="journal", preset="small", sets=sets, verify=True
    ).report
    scheme = report["metrics"]["scheme"]
    assert scheme["hot_range_mapping_blocks"] >= 1
    assert scheme["hot_range_translations"] > 0


def test_mapping_blocks_as_commands_are_verified_and_cheaper() -> None:
    """`selective.mapping_block_io = "command"`: the same pages read and programmed
    (verified), in less device time than one operation per page."""
    reports = {}
    for io in ("pages", "command"):
        sets = [
            "workload.requests=4000",
            "dram.budget_bytes=256KiB",
            "replay.timing=true",
            "replay.mode=closed",
            "replay.queue_depth=8",
            "buffer.size_bytes=0",
            f'selective.mapping_block_io="{io}"',
        ]
        reports[io] = ftlab.simulate(
            "selective",
            workload="pareto",
            preset="small",
            precondition="none",
            sets=sets,
            verify=True,
        ).report
    pages, command = (reports[k]["metrics"] for k in ("pages", "command"))
    assert command["scheme"]["cache_misses"] == pages["scheme"]["cache_misses"] > 0
    assert command["flash"]["programs"]["translation"] == pages["flash"]["programs"]["translation"]
    # A miss with a dirty victim: 16 reads and 16 programs of work as pages, one of each as
    # a command (beside the data program): the closed loop runs well faster.
    assert command["iops"] > 1.5 * pages["iops"]


def test_a_bad_hot_range_names_the_key() -> None:
    with pytest.raises(ftlab.FtlabError, match="selective.hot_ranges"):
        ftlab.simulate(
            "selective",
            workload="journal",
            sets=["workload.requests=10", "selective.hot_ranges=[[10, 5]]"],
        )


@pytest.mark.parametrize(
    "trace_path",
    [
        "fiu_mail_excerpt/DERIVED_cheetah.cs.fiu.edu-110108-113008.1.head10000.blkparse",
        "msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv",
        "mqsim_umass_websearch_tpcc/tpcc-small.trace",
    ],
)
def test_verified_on_other_trace_formats(trace_path: str, traces: Path) -> None:
    from ftlab.reproduce._demand_common import trace_sets

    path = traces / trace_path
    for scheme in DEMAND:
        report = ftlab.simulate(
            scheme,
            trace=path,
            verify=True,
            sets=[
                *trace_sets(path),
                "dram.budget_bytes=16KiB",
                "selective.mapping_block_bytes=4KiB",
            ],
        ).report
        m = report["metrics"]
        assert m["host"]["requests"] > 0
        assert m["scheme"]["cache_lookups"] > 0
