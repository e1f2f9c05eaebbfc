"""The Python API."""

from __future__ import annotations

import pytest

import ftlab

#: A quarter of the small device (`preset="small"`, one channel): what these tests check does
#: not depend on the device's size, and preconditioning the default device takes seconds.
QUARTER = ["geometry.channels=1"]


def test_simulate_returns_report_and_summary() -> None:
    result = ftlab.simulate(
        "page", workload="hotcold", preset="small", sets=["workload.requests=5000", *QUARTER]
    )
    s = result.summary
    assert s["requests"] == 5000
    m = result.report["metrics"]
    # The default device's write buffer absorbs overwrites, so WAF may be below 1.
    assert s["waf"] == pytest.approx(m["flash"]["programs"]["total"] / m["host"]["pages_written"])
    host = m["host"]
    assert m["flash"]["programs"]["host"] + host["buffer_write_hits"] <= host["pages_written"]
    assert s["host_pages_trimmed"] > 0
    assert result.report["metrics"]["host"]["requests"] == 5000
    assert result.wall_seconds > 0


def test_precondition_keyword() -> None:
    sets = ["workload.requests=1000", *QUARTER]
    result = ftlab.simulate(
        "page", workload="default", preset="small", sets=sets, precondition="fill"
    )
    assert result.report["config"]["precondition"]["mode"] == "fill"
    # An entry of `sets` naming the key wins over the keyword.
    result = ftlab.simulate(
        "page", preset="small", sets=[*sets, 'precondition.mode="none"'], precondition="steady"
    )
    assert result.report["config"]["precondition"]["mode"] == "none"
    cmp = ftlab.compare(
        ["page"], preset="small", sets=sets, precondition="steady", mapping_only=True, jobs=1
    )
    assert cmp.results["page"].report["config"]["precondition"]["mode"] == "steady"


def test_errors_are_ftlab_errors() -> None:
    with pytest.raises(ftlab.FtlabError, match="workload.read_ratio"):
        ftlab.simulate("page", sets=["workload.read_ratio=2"])


def test_lists() -> None:
    assert "page" in dict(ftlab.schemes())
    assert "small" in dict(ftlab.presets())
    assert "default" in dict(ftlab.workloads())


def test_causes_come_from_the_core_in_report_order() -> None:
    causes = ftlab.causes()
    names = [name for name, _, _ in causes]
    assert names[:4] == ["host", "gc", "translation", "misprediction"]
    assert {"merge_switch", "merge_partial", "merge_full", "host_cleaning", "fs_metadata"} <= set(
        names
    )
    result = ftlab.simulate(
        "page", workload="rand-write", preset="small", sets=["workload.requests=2000", *QUARTER]
    )
    for kind in ("reads", "programs", "erases"):
        assert list(result.report["metrics"]["flash"][kind]) == [*names, "total"]
    merges = [name for name, group, _ in causes if group == "merge"]
    assert merges == ["merge_switch", "merge_partial", "merge_full"]
    reads = result.report["metrics"]["flash"]["reads"]
    assert result.summary["merge_reads"] == sum(reads[m] for m in merges) == 0
    assert set(result.flash_ops["cause"].unique()) == set(names)


def test_result_frames() -> None:
    result = ftlab.simulate(
        "page", workload="rand-rw", preset="small", sets=["workload.requests=20000", *QUARTER]
    )
    ts = result.time_series
    assert ts.height == 3  # every 10,000 requests, and the end
    assert {"request", "memory_bytes", "waf"} <= set(ts.columns)
    cdf = result.latency_cdf
    assert set(cdf["op"].unique()) == {"read", "write"}
    assert (cdf["latency_us"] >= 0).all()
    ops = result.flash_ops
    assert ops.filter((ops["kind"] == "program") & (ops["cause"] == "host"))["count"][0] > 0
    assert result.memory["component"].to_list() == ["block_counters", "l2p", "valid_bitmap"]
    assert "<table>" in result._repr_html_()


def test_latency_breakdown_frame_adds_up_and_zero_is_no_latency() -> None:
    result = ftlab.simulate(
        "page", workload="rand-rw", preset="small", sets=["workload.requests=20000", *QUARTER]
    )
    frame = result.latency_breakdown
    assert frame.columns == ["op", "part", "mean_us", "p99_us", "share", "requests"]
    latency = result.report["metrics"]["latency"]
    command_us = 2.0  # interface.command_ns by default
    for op in ("read", "write"):
        rows = frame.filter(frame["op"] == op)
        assert abs(float(rows["mean_us"].sum()) - latency[op]["mean_ns"] / 1000) < 1e-6
        assert abs(float(rows["share"].sum()) - 1.0) < 1e-9
        # Every request pays the host interface: no quantile is 0.
        assert latency[op]["cdf"][0][1] >= command_us * 1000
        assert result.summary[f"{op}_host_interface_us"] >= command_us
    assert set(frame["part"]) >= {"host_interface", "sense", "program", "fg_gc"}


def test_compare_api_table_and_report(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cmp = ftlab.compare(
        ["page"], workload="zipf", preset="small", sets=["workload.requests=5000", *QUARTER], jobs=1
    )
    table = cmp.table
    assert table["scheme"].to_list() == ["page"]
    assert table["waf"][0] == cmp.summary["page"]["waf"]
    assert set(cmp.time_series["scheme"].unique()) == {"page"}
    index = cmp.write_report(tmp_path / "r")
    assert index.read_text().count("<figure>") == 5
    assert "latency_breakdown.svg" in index.read_text()
    assert set(cmp.latency_breakdown["scheme"].unique()) == {"page"}


def test_compare_in_parallel_threads() -> None:
    from ftlab import _compare

    common = {"workload": "zipf", "preset": "small", "sets": ["workload.requests=3000", *QUARTER]}
    done: list[str] = []
    results = _compare.run_all(["page", "page"], common, 2, lambda n, r: done.append(n))
    assert done == ["page", "page"]
    single = ftlab.simulate(
        "page", workload="zipf", preset="small", sets=["workload.requests=3000", *QUARTER]
    )
    assert results["page"].json == single.json


def test_compare_errors_name_the_scheme() -> None:
    with pytest.raises(ftlab.FtlabError, match="nope"):
        ftlab.compare(["nope"])
    with pytest.raises(ftlab.FtlabError, match="workload.read_ratio"):
        ftlab.compare(["page"], sets=["workload.read_ratio=2"])


def test_trace_info_api(traces) -> None:  # type: ignore[no-untyped-def]
    info = ftlab.trace_info(traces / "ssdsim_hust_financial1" / "example.ascii")
    assert info.info["requests"] == 10_000
    assert info.devices.height == len(info.info["devices"]) > 1
    assert info.size_histogram["reads"].sum() == info.info["read"]["requests"]


def test_compare_fits_one_device_for_every_scheme(traces) -> None:  # type: ignore[no-untyped-def]
    path = traces / "ssdsim_hust_financial1" / "example.ascii"
    cmp = ftlab.compare(["page"], trace=path, mapping_only=True)
    single = ftlab.simulate("page", trace=path, mapping_only=True)
    bpp = single.report["config"]["geometry"]["blocks_per_plane"]
    assert cmp.fitted_blocks_per_plane == bpp
    assert cmp.results["page"].report["metrics"] == single.report["metrics"]
    with_preset = ftlab.compare(["page"], trace=path, preset="small", mapping_only=True)
    assert with_preset.fitted_blocks_per_plane is None
