"""The text formatting of results (tables, summaries), on synthetic reports: no run needed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ftlab import summarize
from ftlab._format import compare_rows, latency, latency_table, summary_rows


@pytest.mark.parametrize(
    ("us", "text"),
    [
        (None, "-"),
        (0, "0 us"),
        (0.85, "850 ns"),
        (1, "1.00 us"),
        (12.34, "12.3 us"),
        (850, "850 us"),
        (999.4, "999 us"),
        (999.6, "1.00 ms"),  # rounded first: never "1000 us"
        (12_345.6, "12.3 ms"),
        (4_560_000, "4.56 s"),
        (123_456_789, "123 s"),
        (1_234_567_890, "1,235 s"),
    ],
)
def test_latency_units(us: float | None, text: str) -> None:
    assert latency(us) == text


def test_latency_table_converts_only_its_columns() -> None:
    header, rows = latency_table(
        ["trace", "mean us", "p99 us", "count"], [["a", 12_345.6, None, 12_345]], (1, 2)
    )
    assert header == ["trace", "mean", "p99", "count"]
    assert rows == [["a", "12.3 ms", "-", 12_345]]


def report(**metrics: Any) -> dict[str, Any]:
    """A minimal report as the core writes it (timed), with `metrics` overriding."""
    causes = {"host": 10, "gc": 2, "translation": 3, "misprediction": 0, "merge": 0}

    def stats(mean_ns: int, p99_ns: int) -> dict[str, Any]:
        return {"count": 5, "mean_ns": mean_ns, "p99_ns": p99_ns, "cdf": [[1.0, p99_ns]]}

    out: dict[str, Any] = {
        "ftl": "page",
        "mode": "timed",
        "source": {"kind": "workload", "name": "default"},
        "device": {"logical_bytes": 2**30},
        "metrics": {
            "host": {
                "requests": 100, "read_requests": 50, "write_requests": 50,
                "trim_requests": 0, "pages_read": 50, "pages_written": 50,
                "pages_trimmed": 0, "unmapped_reads": 0,
            },
            "flash": {
                "reads": {"total": 15, **causes},
                "programs": {"total": 15, **causes},
                "erases": {"total": 1, **causes},
            },
            "waf": 1.25,
            "gc": {"invocations": 1, "pages_moved": 4},
            "latency": {"read": stats(850_000, 12_300_000), "write": stats(45_600_000_000, 0)},
            "iops": 1000.0,
            "memory_bytes": {"final_total": 2**20, "peak_total": 2**21},
            "scheme": {},
        },
    }  # fmt: skip
    out["metrics"].update(metrics)
    return out


def test_summary_prints_latencies_in_units() -> None:
    rows = dict(summary_rows(summarize(report())))
    assert rows["read latency mean / p99"] == "850 us / 12.3 ms"
    assert rows["write latency mean / p99"] == "45.6 s / 0 us"


def test_compare_table_prints_latencies_in_units() -> None:
    summaries = {"page": summarize(report()), "dftl": summarize(copy.deepcopy(report()))}
    header, rows = compare_rows(summaries)
    assert "read mean/p99" in header and "write mean/p99" in header
    assert not any("us" in h.split() for h in header)
    cells = dict(zip(header, rows[0]))
    assert cells["read mean/p99"] == "850 us / 12.3 ms"
    assert cells["write mean/p99"] == "45.6 s / 0 us"
    # The summary itself (and so JSON, CSV and DataFrames) keeps plain microseconds.
    assert summaries["page"]["read_mean_us"] == 850.0


def test_mapping_only_has_no_latency() -> None:
    s = summarize(report(latency=None))
    assert s["read_mean_us"] is None
    header, rows = compare_rows({"page": {**s, "mode": "mapping-only"}})
    assert dict(zip(header, rows[0]))["read mean/p99"] == "-"
