"""HPFTL and SlimFTL through the Python API and the `slimftl` reproduction (quick mode)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import ftlab
from ftlab import reproduce


@pytest.mark.parametrize("scheme", ["hpftl", "slimftl"])
def test_schemes_verify_with_gc_on_a_full_device(scheme: str) -> None:
    sets = [
        "workload.requests=150000",
        "replay.timing=false",
        "workload.read_ratio=0.3",
        "workload.working_set_bytes=0",
        "ftl.over_provisioning=0.12",
        "workload.kind=uniform",
    ]
    result = ftlab.simulate(scheme, verify=True, sets=sets)
    s = result.summary
    assert s["gc_invocations"] > 0
    memory = result.report["metrics"]["memory_bytes"]["final_components"]
    assert "primary_table" in memory
    counters = result.report["metrics"]["scheme"]
    assert 0.3 < counters["mapping_vs_page_table"] < 0.7


def test_scheme_keys_are_checked() -> None:
    with pytest.raises(ftlab.FtlabError, match="slimftl.ppid_bits"):
        ftlab.simulate("slimftl", sets=["slimftl.ppid_bits=3", "workload.requests=10"])


def test_reproduction_quick(tmp_path: Path) -> None:
    reproduce.run("slimftl", tmp_path, quick=True)
    with (tmp_path / "memory.csv").open() as f:
        memory = {row["scheme"]: float(row["total"]) for row in csv.DictReader(f)}
    assert memory["hpftl"] == pytest.approx(0.537, abs=0.001)
    assert memory["slimftl"] == pytest.approx(0.441, abs=0.001)
    with (tmp_path / "workloads.csv").open() as f:
        rows = list(csv.DictReader(f))
    workloads = {row["workload"] for row in rows}
    assert {"sequential", "mixed", "random"} <= workloads
    for row in rows:
        assert float(row["GCs"]) > 0, row
        assert float(row["WAF"]) >= 1.0, row
    with (tmp_path / "lpa_shift.csv").open() as f:
        shifts = list(csv.DictReader(f))
    assert [int(r["lpa_shift"]) for r in shifts] == list(range(9))
    for name in ("memory", "iops", "gc", "waf", "lpa_shift"):
        assert (tmp_path / f"{name}.png").is_file()
