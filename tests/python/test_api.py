"""The Python API."""

from __future__ import annotations

import pytest

import ftlab


def test_simulate_returns_report_and_summary() -> None:
    result = ftlab.simulate("page", workload="hotcold", sets=["workload.requests=5000"])
    s = result.summary
    assert s["requests"] == 5000
    assert s["waf"] >= 1.0
    assert s["host_pages_trimmed"] > 0
    assert result.report["metrics"]["host"]["requests"] == 5000
    assert result.wall_seconds > 0


def test_errors_are_ftlab_errors() -> None:
    with pytest.raises(ftlab.FtlabError, match="workload.read_ratio"):
        ftlab.simulate("page", sets=["workload.read_ratio=2"])


def test_lists() -> None:
    assert "page" in dict(ftlab.schemes())
    assert "small" in dict(ftlab.presets())
    assert "default" in dict(ftlab.workloads())
