"""The command line, end to end, through a subprocess as a user runs it."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def ftlab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ftlab", *args], capture_output=True, text=True, timeout=600
    )


#: A short workload on a quarter of the small device (one channel): what these tests check
#: does not depend on the device's size, and preconditioning the default device would be
#: most of each run's time.
SMALL = ["--set", "workload.requests=3000", "--preset", "small", "--set", "geometry.channels=1"]


def test_run_prints_a_summary() -> None:
    out = ftlab("run", "--ftl", "page", "--workload", "default", *SMALL)
    assert out.returncode == 0, out.stderr
    assert "WAF" in out.stdout
    assert "requests" in out.stdout and "3,000" in out.stdout
    assert "where the time went" in out.stdout and "host_interface" in out.stdout


def test_age_ages_the_data_and_needs_the_error_model(tmp_path: Path) -> None:
    path = tmp_path / "aged.json"
    model = ["--set", 'media.error_model="power-law"', "--set", "media.initial_pe_cycles=3000"]
    out = ftlab("run", "--workload", "read-heavy", *SMALL, *model, "--age", "1y", "-q")
    assert out.returncode != 0 and "1y" in out.stderr and "unknown time unit" in out.stderr
    out = ftlab(
        "run", "--workload", "read-heavy", *SMALL, *model, "--age", "365d", "--json", str(path)
    )
    assert out.returncode == 0, out.stderr
    media = json.loads(path.read_text())["metrics"]["media"]
    # A year at the rated cycles: the preconditioned data needs 5 retry steps (docs/guide/media.md).
    assert media["retry_histogram"][5] > 0 and media["uncorrectable_reads"] == 0
    assert "read retries" in out.stdout and "media life" in out.stdout
    out = ftlab("run", "--workload", "read-heavy", *SMALL, "--age", "30d", "-q")
    assert out.returncode != 0 and "media.age_ns" in out.stderr


def test_lifetime_samples_wear_and_age_over_the_years(tmp_path: Path) -> None:
    """`ftlab lifetime`: each point's device has worn by a year of `dwpd` host writes at
    the point before's WAF (P/E cycles = years x dwpd x logical / physical bytes x WAF),
    its data aged as asked; wear, retries and latency grow, the life left shrinks."""
    import ftlab as api

    table = api.lifetime(
        "page", years=4, points=3, dwpd=2, data_age_days=365, workload="read-heavy",
        preset="small", sets=["workload.requests=3000", "geometry.channels=1"],
    )  # fmt: skip
    rows = list(table.iter_rows(named=True))
    assert [r["year"] for r in rows] == [0.0, 2.0, 4.0]
    assert [r["data_age_days"] for r in rows] == [0.0, 365.0, 365.0]
    device = api.simulate(
        "page", workload="read-heavy", preset="small",
        sets=["workload.requests=3000", "geometry.channels=1"],
    ).report["device"]  # fmt: skip
    per_year = 2 * 365 * device["logical_bytes"] / device["physical_bytes"]
    assert rows[1]["pe_cycles"] == round(2 * per_year * rows[0]["waf"])
    assert rows[0]["percentage_used"] < rows[1]["percentage_used"] < rows[2]["percentage_used"]
    assert rows[0]["retries_per_read"] == 0 < rows[2]["retries_per_read"]
    assert rows[0]["read_p99_us"] < rows[2]["read_p99_us"]
    assert rows[0]["remaining_years"] > rows[1]["remaining_years"] > rows[2]["remaining_years"]
    with pytest.raises(api.FtlabError, match="dwpd > 0"):
        api.lifetime("page", dwpd=0, workload="read-heavy")
    out = ftlab(
        "lifetime", "--workload", "read-heavy", *SMALL, "--years", "4", "--points", "2",
        "--dwpd", "2", "--data-age", "365", "--out", str(tmp_path / "life.csv"),
        "--plot", str(tmp_path / "life.png"),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "life left y" in out.stdout
    with open(tmp_path / "life.csv") as f:
        years = [float(r["year"]) for r in csv.DictReader(f)]
    assert years == [0.0, 4.0]
    assert (tmp_path / "life.png").stat().st_size > 10_000


def test_json_is_byte_identical_across_runs(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        out = ftlab("run", "--workload", "zipf", *SMALL, "--json", str(path), "--quiet")
        assert out.returncode == 0, out.stderr
    assert a.read_bytes() == b.read_bytes()
    report = json.loads(a.read_text())
    assert report["config"]["workload"]["requests"] == 3000
    assert report["metrics"]["host"]["requests"] == 3000


def test_mapping_only_has_same_counters_and_no_latency(tmp_path: Path) -> None:
    # Gaps long enough for the background work each request leaves (the buffer's
    # write-back of a quarter of its 16 MiB takes about 8 ms of the dies' time), which a
    # mapping-only run always gives it.
    reports: list[dict[str, Any]] = []
    idle = ["--set", "workload.interarrival_ns=20ms"]
    for flags in ([], ["--mapping-only"]):
        path = tmp_path / f"r{len(reports)}.json"
        out = ftlab(
            "run", "--workload", "rand-rw", *SMALL, *idle, *flags, "--json", str(path), "-q"
        )
        assert out.returncode == 0, out.stderr
        reports.append(json.loads(path.read_text()))
    timed, mapping = reports
    assert mapping["mode"] == "mapping-only"
    assert mapping["metrics"]["latency"] is None
    assert timed["metrics"]["latency"]["read"]["count"] > 0
    assert timed["metrics"]["host"] == mapping["metrics"]["host"]
    assert timed["metrics"]["flash"] == mapping["metrics"]["flash"]


def test_unknown_key_names_it() -> None:
    out = ftlab("run", "--set", "gc.polcy=greedy")
    assert out.returncode == 2
    assert "gc.polcy" in out.stderr and "gc.policy" in out.stderr
    assert "Traceback" not in out.stderr


def test_impossible_geometry_names_the_key() -> None:
    out = ftlab("run", "--set", "geometry.page_size=1000")
    assert out.returncode == 2
    assert "geometry.page_size" in out.stderr


def test_unknown_preset_and_scheme() -> None:
    out = ftlab("run", "--preset", "huge")
    assert out.returncode == 2 and "huge" in out.stderr
    out = ftlab("run", "--ftl", "nope")
    assert out.returncode == 2 and "nope" in out.stderr and "page" in out.stderr


def test_missing_trace_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent.trace"
    out = ftlab("run", "--trace", str(missing))
    assert out.returncode == 2
    assert str(missing) in out.stderr


def test_bad_trace_line_names_file_and_line(tmp_path: Path) -> None:
    trace = tmp_path / "bad.trace"
    trace.write_text("0 0 8 8 0\n100 0 16 8 1\n200 0 sixteen 8 1\n")
    out = ftlab("run", "--trace", str(trace))
    assert out.returncode == 2
    assert f"{trace}:3:" in out.stderr and "sixteen" in out.stderr


def test_verification_on_a_real_trace(traces: Path, tmp_path: Path) -> None:
    trace = traces / "ssdsim_hust_financial1" / "example.ascii"
    path = tmp_path / "r.json"
    # A small write buffer, so that pages reach flash and are read back from it.
    out = ftlab(
        "run",
        "--trace",
        str(trace),
        "--preset",
        "small",
        "--verify",
        "--set",
        "buffer.size_bytes=1MiB",
        "--json",
        str(path),
        "-q",
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(path.read_text())
    assert report["verify"] is True
    assert report["metrics"]["host"]["requests"] == 10_000
    assert report["metrics"]["flash"]["reads"]["host"] > 0


def test_config_show_and_lists() -> None:
    out = ftlab("config", "show", "small")
    assert out.returncode == 0
    assert "blocks_per_plane = 128" in out.stdout
    for command in (["config", "presets"], ["schemes"], ["workloads"]):
        out = ftlab(*command)
        assert out.returncode == 0 and len(out.stdout.splitlines()) > 2
    # What a scheme assumes of the device comes over the preset, under --set.
    assert 'flush = "lru"' in ftlab("config", "show").stdout
    assert 'flush = "sorted"' in ftlab("config", "show", "--ftl", "leaftl").stdout
    lru = ftlab("config", "show", "--ftl", "leaftl", "--set", 'buffer.flush="lru"')
    assert 'flush = "lru"' in lru.stdout
    bad = ftlab("config", "show", "--ftl", "nope")
    assert bad.returncode == 2 and "unknown FTL scheme `nope`" in bad.stderr


def test_bench_smoke(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    trace.write_text(
        "".join(f"{i * 1000} 0 {(i * 7919 % 4096) * 8} 8 {i % 3 == 0:d}\n" for i in range(2000))
    )
    path = tmp_path / "bench.json"
    out = ftlab(
        "bench",
        "--trace",
        str(trace),
        "--requests",
        "2000",
        "--repeat",
        "1",
        "--schemes",
        "page",
        "--json",
        str(path),
    )
    assert out.returncode == 0, out.stderr
    results = json.loads(path.read_text())
    cases = {(r["workload"], r["mode"]) for r in results["results"]}
    assert ("trace:t.trace", "timed") in cases and ("default", "mapping-only") in cases
    assert all(r["requests_per_second"] > 0 and r["peak_rss_bytes"] > 0 for r in results["results"])
    assert results["end_to_end_run_seconds"] > 0


def test_compare_prints_a_table_and_writes_a_report(tmp_path: Path) -> None:
    out_dir = tmp_path / "report"
    merged = tmp_path / "all.json"
    out = ftlab(
        "compare", "--ftl", "page", "--workload", "hotcold", *SMALL,
        "--out", str(out_dir), "--json", str(merged),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "DRAM peak" in out.stdout and "WAF" in out.stdout and "page" in out.stdout
    assert "where the time went" in out.stdout
    names = ("memory_vs_latency", "latency_cdf", "latency_breakdown", "flash_traffic")
    for name in (*names, "memory_over_time"):
        for ext in ("png", "svg"):
            assert (out_dir / f"{name}.{ext}").stat().st_size > 1000
    page = (out_dir / "index.html").read_text()
    assert "<table>" in page and "latency_cdf.svg" in page and "runs/page.json" in page
    assert not (out_dir / "media.png").exists()  # no [media]: no media histograms
    assert json.loads((out_dir / "runs" / "page.json").read_text())["ftl"] == "page"
    assert "page" in json.loads(merged.read_text())
    assert (out_dir / "table.csv").read_text().startswith("scheme,")
    # Latencies: in units chosen per value for people, plain microseconds in the CSV.
    unit_pair = re.compile(r"\d (ns|us|ms|s) / [\d.,]+ (ns|us|ms|s)")
    assert "read mean/p99" in out.stdout and unit_pair.search(out.stdout)
    for name in ("table.md", "table.txt", "index.html"):
        text = (out_dir / name).read_text()
        assert "read mean/p99" in text and unit_pair.search(text), name
    with (out_dir / "table.csv").open() as f:
        row = next(csv.DictReader(f))
    assert float(row["read_mean_us"]) > 0


def test_compare_report_plots_the_media_histograms(tmp_path: Path) -> None:
    """With `[media]` on, the report has the retry, wear and error-rate histograms, from
    the runs' `metrics.media`."""
    out_dir = tmp_path / "report"
    model = ["--set", 'media.error_model="power-law"', "--set", "media.initial_pe_cycles=3000",
             "--set", 'media.wear_leveling="dynamic"', "--set", 'media.age_ns="200d"']  # fmt: skip
    out = ftlab(
        "compare", "--ftl", "page,dftl", "--workload", "read-heavy", *SMALL,
        *model, "--out", str(out_dir),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert (out_dir / "media.png").stat().st_size > 10_000
    assert "media.svg" in (out_dir / "index.html").read_text()
    for scheme in ("page", "dftl"):
        media = json.loads((out_dir / "runs" / f"{scheme}.json").read_text())["metrics"]["media"]
        assert sum(media["retry_histogram"][1:]) > 0 and sum(media["rber_histogram"]) > 0
        assert sum(media["wear_histogram"]) > 0


def test_compare_report_is_deterministic_and_runs_every_scheme(tmp_path: Path) -> None:
    # Every scheme (no --ftl), filled first, on a quarter of the small device (one
    # channel): steady preconditioning (8x the CPU here; one run's bytes under it are
    # checked by test_json_is_byte_identical_across_runs) and the default device add
    # nothing checked here.
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        out = ftlab(
            "compare", "--workload", "zipf", *SMALL, "--precondition", "fill", "--mapping-only",
            "--out", str(folder),
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
    listed = ftlab("schemes").stdout.splitlines()[2:]
    for line in listed:
        assert line.split()[0] in out.stdout
    files = sorted(p.relative_to(folders[0]) for p in folders[0].rglob("*") if p.is_file())
    assert any(str(f).endswith("memory_vs_waf.svg") for f in files)
    assert not (folders[0] / "latency_cdf.svg").exists()
    for f in files:
        if f.suffix != ".png":
            assert (folders[0] / f).read_bytes() == (folders[1] / f).read_bytes(), f


def test_compare_with_no_arguments_shows_the_dram_trade_off() -> None:
    """The default comparison: the demand-cached schemes and LeaFTL under one stated DRAM
    budget, on a preconditioned device, not saturated, differing from page-level mapping."""
    out = ftlab("compare", "--json", "/dev/stdout", "-q")
    assert out.returncode == 0, out.stderr
    table, _, rest = out.stdout.partition("{")
    reports = json.loads("{" + rest)
    assert list(reports) == ["page", "dftl", "sftl", "tpftl", "selective", "leaftl"]
    page = reports["page"]
    table_bytes = page["device"]["page_table_bytes"]
    for name, r in reports.items():
        assert r["precondition"]["mode"] == "fill"
        assert r["device"]["dram_budget_bytes"] == int(table_bytes * 0.125)
        assert not r["metrics"]["load"]["saturated"], name
        if name == "page":
            continue
        # Part of the map in DRAM: far less memory than page, paid in translation reads.
        peak = r["metrics"]["memory_bytes"]["peak_total"]
        assert peak < page["metrics"]["memory_bytes"]["peak_total"] / 2, name
        assert r["metrics"]["flash"]["reads"]["translation"] > 0, name
        read = r["metrics"]["latency"]["read"]["mean_ns"]
        assert read > page["metrics"]["latency"]["read"]["mean_ns"], name
    assert "12.5% of the page-level table" in table
    assert "DRAM vs page" in table


def test_compare_errors() -> None:
    out = ftlab("compare", "--ftl", "page,nope")
    assert out.returncode == 2 and "nope" in out.stderr and "Traceback" not in out.stderr
    out = ftlab("compare", "--ftl", "page", "--set", "gc.threshold=7")
    assert out.returncode == 2 and "gc.threshold" in out.stderr


def test_trace_options_need_a_trace() -> None:
    out = ftlab("run", "--device", "0")
    assert out.returncode == 2 and "--trace" in out.stderr


def tiny_trace(tmp_path: Path) -> Path:
    trace = tmp_path / "tiny.trace"
    trace.write_text("".join(f"{i * 1000} 0 {i * 8} 8 {i % 2}\n" for i in range(100)))
    return trace


# Each command that writes a file, with the option naming it last (the path follows).
OUTPUT_COMMANDS = {
    "run --json": ["run", *SMALL, "--json"],
    "compare --json": ["compare", "--ftl", "page", *SMALL, "--json"],
    "compare --out": ["compare", "--ftl", "page", *SMALL, "--out"],
    "trace info --json": ["trace", "info", "{trace}", "--json"],
    "bench --json": ["bench", "--schemes", "page", "--requests", "1000", "--json"],
    "reproduce --out": ["reproduce", "selective", "--quick", "--out"],
}


def bad_output(command: str, tmp_path: Path, target: Path) -> subprocess.CompletedProcess[str]:
    """Runs `command` with its output at `target`; checks the error and that nothing ran."""
    args = [a.replace("{trace}", str(tiny_trace(tmp_path))) for a in OUTPUT_COMMANDS[command]]
    out = ftlab(*args, str(target))
    option = command.split()[-1]
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"error: cannot write {option} {target}: " in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stdout == ""  # no summary, no table: the check came before the run
    return out


@pytest.mark.parametrize("command", list(OUTPUT_COMMANDS))
def test_output_under_a_missing_directory(command: str, tmp_path: Path) -> None:
    if command.endswith("--out"):
        # Output folders are created with their parents: a regular file in the way fails.
        blocker = tmp_path / "afile"
        blocker.write_text("")
        out = bad_output(command, tmp_path, blocker / "sub" / "report")
        assert "afile is not a directory" in out.stderr
    else:
        out = bad_output(command, tmp_path, tmp_path / "missing" / "out.json")
        assert "does not exist" in out.stderr


@pytest.mark.parametrize("command", list(OUTPUT_COMMANDS))
def test_output_under_a_regular_file(command: str, tmp_path: Path) -> None:
    # Fails for root too (root may write into read-only directories).
    blocker = tmp_path / "somefile"
    blocker.write_text("")
    out = bad_output(command, tmp_path, blocker / "out.json")
    assert "somefile is not a directory" in out.stderr


@pytest.mark.parametrize("command", ["run --json", "compare --out", "trace info --json"])
def test_output_in_a_read_only_directory(command: str, tmp_path: Path) -> None:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("root may write into read-only directories")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        out = bad_output(command, tmp_path, folder / "out")
        assert "is not writable" in out.stderr
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("command", ["run --json", "compare --json", "trace info --json"])
def test_json_to_a_directory(command: str, tmp_path: Path) -> None:
    out = bad_output(command, tmp_path, tmp_path)
    assert "it is a directory" in out.stderr


def test_out_to_a_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "report"
    target.write_text("")
    out = bad_output("compare --out", tmp_path, target)
    assert "it is not a directory" in out.stderr


def test_json_to_a_writable_place_still_works(tmp_path: Path) -> None:
    # A path without a directory part: the current directory.
    out = subprocess.run(
        [sys.executable, "-m", "ftlab", "run", *SMALL, "--json", "r.json", "-q"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "r.json").read_text())["ftl"] == "page"


def test_read_only_reasons_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The read-only cases even as root: os.access made to refuse writing to one folder."""
    from ftlab import cli

    folder = tmp_path / "ro"
    folder.mkdir()
    real_access = os.access

    def access(path: Any, mode: int) -> bool:
        return Path(path) != folder and real_access(path, mode)

    monkeypatch.setattr(os, "access", access)
    assert cli.file_problem(folder / "out.json") == f"directory {folder} is not writable"
    assert cli.folder_problem(folder / "a" / "b") == f"directory {folder} is not writable"
    assert cli.folder_problem(folder) == f"directory {folder} is not writable"
    assert cli.file_problem(tmp_path / "out.json") is None
    assert cli.folder_problem(tmp_path / "new" / "report") is None


def test_precondition_option(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    out = ftlab("run", *SMALL, "--precondition", "fill", "--json", str(path), "-q")
    assert out.returncode == 0, out.stderr
    assert json.loads(path.read_text())["config"]["precondition"]["mode"] == "fill"
    # The user's --set comes after it, and wins.
    out = ftlab(
        "run", *SMALL, "--precondition", "fill", "--set", 'precondition.mode="none"',
        "--json", str(path), "-q",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(path.read_text())["config"]["precondition"]["mode"] == "none"
    merged = tmp_path / "all.json"
    out = ftlab(
        "compare", "--ftl", "page,dftl", *SMALL, "--precondition", "steady", "--mapping-only",
        "--json", str(merged), "-q",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    reports = json.loads(merged.read_text())
    assert {r["config"]["precondition"]["mode"] for r in reports.values()} == {"steady"}


def test_precondition_option_is_checked_and_documented() -> None:
    out = ftlab("run", "--precondition", "warm")
    assert out.returncode == 2 and "--precondition" in out.stderr and "steady" in out.stderr
    for command in ("run", "compare"):
        out = ftlab(command, "--help")
        assert "--precondition [none|fill|steady]" in out.stdout
