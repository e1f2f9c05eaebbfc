"""The text formatting of results (tables, summaries), on synthetic reports: no run needed."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from ftlab import CompareResult, Result, summarize
from ftlab import causes as ftlab_causes
from ftlab._format import (
    compare_notes,
    compare_rows,
    latency,
    latency_table,
    load_rows,
    precondition_rows,
    render_table,
    run_rows,
    saturation_warning,
    scale_text,
    scheduler_rows,
    summary_rows,
)


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
    causes = {name: 0 for name, _, _ in ftlab_causes()}
    causes.update(host=10, gc=2, translation=3)

    def stats(mean_ns: int, p99_ns: int) -> dict[str, Any]:
        return {"count": 5, "mean_ns": mean_ns, "p99_ns": p99_ns, "cdf": [[1.0, p99_ns]]}

    out: dict[str, Any] = {
        "ftl": "page",
        "mode": "timed",
        "source": {"kind": "workload", "name": "default"},
        "ftlab_version": "0.1.0",
        "device": {"logical_bytes": 2**30, "page_size": 4096},
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
            "memory_bytes": {
                "final_total": 2**20, "peak_total": 2**21,
                "final_components": {"l2p": 2**20}, "peak_components": {"l2p": 2**21},
            },
            "time_series": {
                "request": [50, 100], "time_ns": [10**6, 2 * 10**6],
                "host_pages_written": [25, 50], "flash_programs": [30, 60],
                "gc_invocations": [0, 1], "memory_bytes": [2**20, 2**20],
            },
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


# The load, preconditioning and scheduler sections of newer cores' reports.

LOAD: dict[str, Any] = {
    "mode": "open",
    "arrival_span_ns": 10**9,
    "offered_iops": 25_000.0,
    "offered_bytes_per_s": 102_400_000.0,
    "busiest_die_utilisation": 0.99,
    "mean_die_utilisation": 0.61,
    "backlog_at_end_ns": 3_200_000_000,
    "window_ns": 10**9,
    "peak_window_utilisation": 1.02,
    "queue_limit_ns": 35_000_000,
    "queued_requests": 1_234,
    "saturated": True,
    "saturated_in_bursts": False,
    "suggested_time_scale": 3.712,
}
PRECONDITION: dict[str, Any] = {
    "mode": "steady",
    "host_pages_written": 1_048_576,
    "flash_programs": 2_400_000,
    "gc_invocations": 9_000,
    "waf": 2.2891,
    "window_waf": [2.1, 2.25, 2.28, 2.29],
    "steady": True,
    "warmup_pages": 5_000,
}
SCHEDULER = {
    "multi_plane_reads": 1_200,
    "multi_plane_programs": 340,
    "suspensions": 7,
    "background_operations": 0,
}


def full_report(**load: Any) -> dict[str, Any]:
    out = report(load={**LOAD, **load}, scheduler=dict(SCHEDULER))
    out["precondition"] = dict(PRECONDITION)
    return out


def test_summary_keys_of_load_and_preconditioning() -> None:
    s = summarize(full_report())
    assert s["saturated"] is True
    assert s["busiest_die_utilisation"] == 0.99
    assert s["precondition_mode"] == "steady"
    assert s["precondition_waf"] == 2.2891
    s = summarize(full_report(saturated=False, suggested_time_scale=None))
    assert s["saturated"] is False


def test_older_reports_and_mapping_only_runs() -> None:
    """Reports without the sections (older cores) or with a null load (mapping-only)."""
    for r in (report(), report(load=None, scheduler=None, latency=None)):
        s = summarize(r)
        assert s["saturated"] is False
        assert s["busiest_die_utilisation"] is None
        assert s["precondition_mode"] is None and s["precondition_waf"] is None
        assert load_rows(r) == [] and precondition_rows(r) == [] and scheduler_rows(r) == []
        assert saturation_warning(r) is None
        labels = [label for label, _ in run_rows(r, s)]
        assert "load" not in labels and "preconditioning" not in labels
        assert compare_notes({"page": s}) == []


def test_run_summary_load_line() -> None:
    r = full_report(saturated=False, suggested_time_scale=None, backlog_at_end_ns=0)
    rows = dict(run_rows(r, summarize(r)))
    assert rows["load"] == (
        "open loop, 25,000 IOPS / 102.4 MB/s offered, busiest die 99% busy (mean 61%)"
    )
    assert "SATURATED" not in rows
    assert saturation_warning(r) is None


def test_run_saturated_in_bursts_says_so() -> None:
    r = full_report(
        busiest_die_utilisation=0.011,
        backlog_at_end_ns=0,
        peak_window_utilisation=2.69,
        saturated_in_bursts=True,
    )
    s = summarize(r)
    assert s["saturated"] is True and s["saturated_in_bursts"] is True
    assert s["peak_window_utilisation"] == 2.69
    rows = dict(run_rows(r, s))
    assert rows["SATURATED"] == "in bursts (see the warning)"
    assert rows["busiest second"] == (
        "busiest die given 269% of a second's work; "
        "1,234 requests (slower than 35.0 ms) waited in a queue"
    )
    warning = saturation_warning(r)
    assert warning is not None
    assert warning.startswith("warning: the open-loop replay saturated the device in bursts")
    assert "269% of a second's work" in warning and "--set replay.time_scale=3.72" in warning
    note = compare_notes({"page": s, "dftl": summarize(full_report())})[-1]
    assert "page, dftl; in bursts only for page" in note


def test_saturated_run_warns_with_a_time_scale() -> None:
    r = full_report()
    rows = dict(run_rows(r, summarize(r)))
    assert rows["SATURATED"] == "yes, 3.20 s of backlog at the end (see the warning)"
    warning = saturation_warning(r)
    assert warning is not None and warning.startswith("warning: the open-loop replay saturated")
    assert "the latencies measure the queue, not the device" in warning
    assert "(99% busy)" in warning
    # Rounded up to three significant digits: slower is the safe side.
    assert "--set replay.time_scale=3.72" in warning
    assert "--set replay.mode=closed" in warning
    # Without a suggested scale: only the closed loop.
    warning = saturation_warning(full_report(suggested_time_scale=None))
    assert warning is not None and "time_scale" not in warning and "replay.mode=closed" in warning


@pytest.mark.parametrize(
    ("value", "text"),
    [(3.712, "3.72"), (4.0, "4.0"), (12.31, "12.4"), (100.0, "100.0"), (1234.5, "1235.0")],
)
def test_scale_text(value: float, text: str) -> None:
    assert scale_text(value) == text


STEADY = "steady: 1,048,576 pages written, WAF 2.289"
FILL = "fill: 1,048,576 pages written"


@pytest.mark.parametrize(
    ("precondition", "text"),
    [
        ({}, f"{STEADY}, steady after 4 windows, warm-up 5,000 pages"),
        (
            {"steady": False, "window_waf": [2.0], "warmup_pages": 0},
            f"{STEADY}, not steady after 1 window",
        ),
        ({"mode": "fill", "waf": 1.0, "warmup_pages": 0}, f"{FILL}, WAF 1.000"),
        ({"mode": "fill", "waf": None, "warmup_pages": 0}, f"{FILL}, WAF -"),
        ({"mode": "none", "warmup_pages": 0}, "none"),
        ({"mode": "none", "warmup_pages": 12}, "none: warm-up 12 pages"),
    ],
)  # fmt: skip
def test_preconditioning_line(precondition: dict[str, Any], text: str) -> None:
    r = full_report()
    r["precondition"].update(precondition)
    assert precondition_rows(r) == [("preconditioning", text)]


def test_scheduler_rows() -> None:
    rows = dict(scheduler_rows(full_report()))
    assert rows["multi-plane reads / programs"] == "1,200 / 340"
    assert rows["suspensions / background operations"] == "7 / 0"
    idle = report(scheduler=dict.fromkeys(SCHEDULER, 0))
    assert scheduler_rows(idle) == []


def test_compare_marks_saturated_rows() -> None:
    summaries = {
        "page": summarize(report()),
        "dftl": summarize(full_report()),
        "tpftl": summarize(full_report(suggested_time_scale=5.5)),
    }
    header, rows = compare_rows(summaries)
    by_name = {row[0]: dict(zip(header, row)) for row in rows}
    assert by_name["page"]["read mean/p99"] == "850 us / 12.3 ms  "  # aligned with the mark
    assert by_name["dftl"]["read mean/p99"] == "850 us / 12.3 ms !"
    assert by_name["tpftl"]["write mean/p99"].endswith(" !")
    (note,) = compare_notes(summaries)
    assert note.startswith("! saturated:") and "dftl, tpftl" in note and "page" not in note
    # One scale for all: the largest.
    assert "--set replay.time_scale=5.5 " in note and "--set replay.mode=closed" in note
    table = render_table(header, rows)
    assert table.splitlines()[3].split()[0] == "dftl"


def test_compare_frame_and_report_files(tmp_path: Path) -> None:
    results = {
        "page": Result(json=json.dumps(report()), wall_seconds=1.0),
        "dftl": Result(json=json.dumps(full_report()), wall_seconds=1.0),
    }
    cmp = CompareResult(results=results)
    table = cmp.table
    assert table["saturated"].to_list() == [False, True]
    assert table["busiest_die_utilisation"].to_list() == [None, 0.99]
    assert table["precondition_mode"].to_list() == [None, "steady"]
    assert table["precondition_waf"].to_list() == [None, 2.2891]
    assert table["read_mean_us"].to_list() == [850.0, 850.0]  # plain microseconds
    assert "! saturated" in cmp._repr_html_()
    assert "<td>load</td>" in results["dftl"]._repr_html_()
    index = cmp.write_report(tmp_path / "r")
    for name in ("table.md", "table.txt", "index.html"):
        text = (tmp_path / "r" / name).read_text()
        assert "850 us / 12.3 ms !" in text and "! saturated: " in text and "dftl" in text, name
    with (tmp_path / "r" / "table.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["saturated"] for r in rows] == ["false", "true"]
    assert "preconditioned: steady" not in index.read_text()  # the first run's source: none


def test_cli_run_prints_load_preconditioning_and_the_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`ftlab run` on a synthetic saturated report: the load and preconditioning lines in the
    summary, the warning last."""
    from click.testing import CliRunner

    import ftlab
    from ftlab import cli

    def simulate(ftl: str, **_: Any) -> Result:
        return Result(json=json.dumps(full_report()), wall_seconds=0.5)

    monkeypatch.setattr(ftlab, "simulate", simulate)
    out = CliRunner().invoke(cli.main, ["run", "--ftl", "page"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    load = next(line for line in lines if line.startswith("load "))
    assert "25,000 IOPS / 102.4 MB/s offered, busiest die 99% busy" in load
    assert any(line.startswith("SATURATED ") for line in lines)
    assert any(line.startswith("preconditioning ") and "steady after 4" in line for line in lines)
    warning = out.output.index("warning: the open-loop replay saturated the device")
    assert warning > out.output.index("wall time")
    assert "--set replay.time_scale=3.72" in out.output[warning:]
    # Quiet: nothing at all.
    out = CliRunner().invoke(cli.main, ["run", "--ftl", "page", "-q"])
    assert out.exit_code == 0 and out.output == ""


def test_cli_compare_prints_the_footnote(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import ftlab
    from ftlab import cli

    def compare(names: Any, **_: Any) -> CompareResult:
        reports = {"page": full_report(saturated=False), "dftl": full_report()}
        return CompareResult(
            results={n: Result(json=json.dumps(r), wall_seconds=0.5) for n, r in reports.items()}
        )

    monkeypatch.setattr(ftlab, "compare", compare)
    out = CliRunner().invoke(cli.main, ["compare"])
    assert out.exit_code == 0, out.output
    assert "source: default (timed, preconditioned: steady)" in out.output
    table = out.output[out.output.index("scheme ") :].splitlines()
    assert table[2].startswith("page") and not table[2].rstrip().endswith("!")
    assert "ms !" in table[3] and table[3].startswith("dftl")
    assert table[4].startswith("! saturated: the open-loop replay outran the device for dftl ")
