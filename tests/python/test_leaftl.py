"""LeaFTL from Python: the scheme and its counters (its reproduction: test_reproduce.py)."""

from __future__ import annotations

import pytest

import ftlab


def test_leaftl_runs_verified_with_its_counters() -> None:
    result = ftlab.simulate(
        "leaftl",
        workload="rand-rw",
        preset="small",
        sets=[
            "workload.requests=20000",
            # A quarter of the small device: its steady preconditioning through LeaFTL
            # (verified) is most of the run.
            "geometry.channels=1",
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
