"""LeaFTL from Python: the scheme, its counters, and its paper reproduction in quick mode."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import ftlab
from ftlab import reproduce


def test_leaftl_runs_verified_with_its_counters() -> None:
    result = ftlab.simulate(
        "leaftl",
        workload="rand-rw",
        sets=[
            "workload.requests=20000",
            "leaftl.gamma=4",
            "buffer.size_bytes=1MiB",
            "buffer.flush=sorted",
            "buffer.flush_group_pages=256",
        ],
        verify=True,
    )
    scheme = result.report["metrics"]["scheme"]
    assert scheme["learned_segments"] > 0
    assert 0 <= scheme["misprediction_ratio"] <= 1
    parts = result.report["metrics"]["memory_bytes"]["final_components"]
    assert (
        scheme["mapping_table_bytes"] == parts["segments"] + parts["crb"] + parts["group_directory"]
    )


def test_leaftl_rejects_a_budget_smaller_than_a_group() -> None:
    with pytest.raises(ftlab.FtlabError, match="dram.budget_bytes"):
        ftlab.simulate("leaftl", workload="default", sets=["dram.budget_bytes=1000"])


def test_reproduction_quick(traces: Path, tmp_path: Path) -> None:
    reproduce.run("leaftl", tmp_path, quick=True)
    for stem in ("memory", "gamma", "latency", "lookup_levels"):
        assert (tmp_path / f"{stem}.csv").is_file()
        assert (tmp_path / f"{stem}.md").is_file()
    with (tmp_path / "memory.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows, "no trace was reproduced"
    for row in rows:
        assert int(row["LeaFTL bytes"]) > 0
    with (tmp_path / "gamma.csv").open() as f:
        gammas = {int(r["gamma"]) for r in csv.DictReader(f)}
    assert gammas == {0, 1, 4, 16}
    assert "paper" in (tmp_path / "summary.md").read_text()
