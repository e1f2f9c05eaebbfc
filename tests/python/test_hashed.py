"""HPFTL and SlimFTL through the Python API (their reproduction: test_reproduce.py)."""

from __future__ import annotations

import pytest

import ftlab


@pytest.mark.parametrize("scheme", [s["name"] for s in ftlab.scheme_info("hashed")])
def test_schemes_verify_with_gc_on_a_full_device(scheme: str) -> None:
    # A quarter of the small device (one channel): 60,000 uniform requests over it, after
    # the fill, keep GC running; the default device's fill took most of a minute.
    sets = [
        "geometry.channels=1",
        "workload.requests=60000",
        "replay.timing=false",
        "workload.read_ratio=0.3",
        "workload.working_set_bytes=0",
        "ftl.over_provisioning=0.12",
        "workload.kind=uniform",
    ]
    result = ftlab.simulate(scheme, preset="small", verify=True, sets=sets)
    s = result.summary
    assert s["gc_invocations"] > 0
    memory = result.report["metrics"]["memory_bytes"]["final_components"]
    assert "primary_table" in memory
    counters = result.report["metrics"]["scheme"]
    assert 0.3 < counters["mapping_vs_page_table"] < 0.7


def test_scheme_keys_are_checked() -> None:
    with pytest.raises(ftlab.FtlabError, match="slimftl.ppid_bits"):
        ftlab.simulate("slimftl", sets=["slimftl.ppid_bits=3", "workload.requests=10"])
