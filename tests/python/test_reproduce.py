"""The paper reproductions in quick mode: each runs once per session (into one folder, as
`ftlab reproduce all --quick` lays them out), writes its tables, plots and `summary.json`,
and its headline numbers are pinned; then the HTML report over all of them is checked, in a
real headless browser where one is installed.

The pins are the quick runs' own values, within `TOLERANCE` (a share of the value) or
`ABSOLUTE` percentage points for the few headlines near zero: the runs are deterministic,
so a pin moves only when a scheme, the device model or a reproduction's setup changes, and
then the test says which headline moved and by how much. The full runs' values, which the
README quotes, are not what is pinned (they take minutes).
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ftlab import reproduce
from ftlab.reproduce import _summary, report

TOLERANCE = 0.10
ABSOLUTE = 2.0

#: Each experiment's quick headlines, pinned.
PINS: dict[str, dict[str, float]] = {
    "leaftl": {
        "memory_sftl_vs_leaftl": 1.40,
        "memory_dftl_vs_leaftl": 17.7,
        "misprediction_gamma16": 14.4,
        "memory_gamma0_vs_gamma16": 1.68,
        "latency_sftl_vs_leaftl": 0.90,
        "latency_dftl_vs_leaftl": 10.3,
        "latency_gamma0_vs_gamma16": 1.00,
        "level1_share": 99.7,
    },
    "slimftl": {
        "hpftl_mapping": 0.5375,
        "slimftl_mapping": 0.4418,
        "hpftl_iops": 0.0268,
        "slimftl_iops": 0.481,
        "slimftl_iops_real": 0.0493,
        "slimftl_superblocks_iops_real": 0.371,
        "hpftl_gc_sequential": 23.1,
        "hpftl_gc_random": 4.71,
        "slimftl_gc": 0.994,
        "slimftl_gc_shift1": 4.50,
        "slimftl_gc_shift8": 1.20,
        "sftl_vs_slimftl_read_p99": 1.18,
    },
    "selective": {"throughput_at_32_file_1000": 0.0718},
    # gain_default was -26.6 with a buffer that flushed only when full; background
    # write-back moves it to -22.2 (-23.2 without the host interface's time).
    "selective-hints": {"gain_default": -22.2, "gain_journal_first": -0.4},
    "dftl": {"translation_writes_saved": 91.5, "response_time_saved_best": 53.2},
    "amf": {
        "memory_page_level": 512.0,
        "memory_aftl": 4.0,
        "memory_alfs": 4.90,
        "waf_sequential_and_light_largest": 1.017,
        "waf_fio_rw_amf": 1.324,
        "waf_fio_rw_f2fs_dftl": 4.381,
        "waf_postmark_h_f2fs_pftl": 6.778,
        "waf_oltp_ext4_pftl": 1.694,
        "waf_oltp_f2fs_pftl": 7.224,
        "waf_tpc_c_amf": 1.450,
    },
    "kraft": {
        "latency_reduction_oltp1": 16.6,
        "latency_reduction_web": 0.0,
        "merge_time_kraft_vs_fftl": 1.21,
        "log_blocks_in_fast_dram": 235.0,
    },
    "demand-hit-ratio": {
        "hit_ratio_dftl_10": 0.700,
        "hit_ratio_dftl_100": 0.760,
        "hit_ratio_tpftl_10": 0.812,
        "hit_ratio_tpftl_100": 0.884,
        "hit_ratio_sftl_100": 1.0,
        "hit_ratio_selective_100": 1.0,
    },
}

#: Experiments that read ../shared/traces (the others run on synthetic workloads).
NEEDS_TRACES = {"leaftl", "dftl", "demand-hit-ratio", "kraft", "amf"}


def _needs(name: str, request: pytest.FixtureRequest) -> None:
    if name in NEEDS_TRACES:
        request.getfixturevalue("traces")  # skips without the real traces


@pytest.mark.parametrize("name", sorted(PINS))
def test_reproduction_headlines_are_pinned(
    name: str, quick: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    _needs(name, request)
    folder = quick(name)
    headlines = _summary.read(folder / "summary.json")
    assert {h.key for h in headlines} >= set(PINS[name])
    for h in headlines:
        assert h.paper and h.metric and h.unit, h
        # Wherever ours and the paper's differ by more than 30%, the reproduction says why.
        if h.differs:
            assert h.reason, f"{name}: {h.key} differs from the paper's without a reason"
    wrong = _summary.mismatches(headlines, PINS[name], TOLERANCE, ABSOLUTE)
    assert not wrong, f"{name}: " + "; ".join(wrong)


@pytest.mark.parametrize("name", sorted(PINS))
def test_reproduction_writes_tables_and_plots(
    name: str, quick: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    _needs(name, request)
    folder = quick(name)
    tables = sorted(folder.glob("*.csv"))
    assert tables, "no table written"
    for table in tables:
        with table.open() as f:
            rows = list(csv.reader(f))
        assert len(rows) >= 2, table
        assert (folder / f"{table.stem}.md").is_file()
    pngs = sorted(folder.glob("*.png"))
    assert pngs and all((folder / f"{p.stem}.svg").is_file() for p in pngs)


def test_every_experiment_is_pinned() -> None:
    # A reproduction added is pinned here once it writes a summary.json.
    assert set(reproduce.EXPERIMENTS) == set(PINS)


def test_leaftl_sweeps_the_papers_error_bounds(quick: Callable[[str], Path], traces: Path) -> None:
    folder = quick("leaftl")
    with (folder / "gamma.csv").open() as f:
        assert {int(r["gamma"]) for r in csv.DictReader(f)} == {0, 1, 4, 8, 16}
    with (folder / "latency.csv").open() as f:
        rows = list(csv.DictReader(f))
    # Every trace's working set exceeds the DRAM that LeaFTL's smaller table frees.
    assert rows and all(float(r["working set / DRAM"]) > 1 for r in rows)


def test_slimftl_tables(quick: Callable[[str], Path]) -> None:
    folder = quick("slimftl")
    with (folder / "memory.csv").open() as f:
        memory = {row["scheme"]: float(row["total"]) for row in csv.DictReader(f)}
    assert memory["hpftl"] == pytest.approx(0.537, abs=0.001)
    assert memory["slimftl"] == pytest.approx(0.441, abs=0.001)
    with (folder / "workloads.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {"sequential", "mixed", "random"} <= {row["workload"] for row in rows}
    schemes = {row["scheme"] for row in rows}
    assert {"PFTL striped", "PFTL runs", "SlimFTL", "SlimFTL superblocks"} <= schemes
    for row in rows:
        assert float(row["GCs"]) > 0, row
        assert row["PFTL"] in ("PFTL striped", "PFTL runs")
    with (folder / "lpa_shift.csv").open() as f:
        assert [int(r["lpa_shift"]) for r in csv.DictReader(f)] == list(range(9))


def test_summary_json_contract(tmp_path: Path) -> None:
    good = [
        _summary.Headline("P", "m", 2.0, 1.0, "x", key="a", reason="why"),
        _summary.Headline("P", "n", None, None, "%"),
    ]
    path = _summary.write(tmp_path, good)
    rows = json.loads(path.read_text())
    assert all(set(_summary.REQUIRED) <= set(r) for r in rows)
    assert _summary.read(path) == good
    assert good[0].differs and not good[1].differs
    assert not _summary.Headline("P", "m", 1.25, 1.0, "x").differs
    assert _summary.Headline("P", "m", 0.7, 1.0, "x").differs
    path.write_text(json.dumps([{"paper": "P", "metric": "m", "ours": "1", "unit": "x"}]))
    with pytest.raises(ValueError, match="paper_value"):
        _summary.read(path)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def test_report_in_a_headless_browser(
    quick: Callable[[str], Path], quick_dir: Path, request: pytest.FixtureRequest
) -> None:
    for name in sorted(PINS):
        _needs(name, request)
        quick(name)
    index = report.write(quick_dir, quick=True)
    page = index.read_text()
    # One row per headline, a ratio and a reason wherever ours and the paper's differ.
    every = [h for n in PINS for h in _summary.read(quick_dir / n / "summary.json")]
    assert page.count('<tr class="differs">') + page.count('<tr class="agrees">') == 2 * len(every)
    assert "no reason given" not in page
    images = re.findall(r'<img src="([^"]+)"', page)
    assert images and all((quick_dir / src).is_file() for src in images)
    browser = _chromium()
    if browser is None:
        pytest.skip(
            "no Chromium: install Debian's `chromium` (scripts/install-deps.sh does) to open "
            "the report in a headless browser"
        )
    result = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
            "--dump-dom",
            index.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert f'data-images="{len(images)}"' in dom, dom[:500]
    assert 'data-plots="ok"' in dom, re.findall(r'data-plots="[^"]*"', dom)
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    errors = [line for line in console if "ERROR" in line or "error" in line.lower()]
    assert not errors, errors


def test_reproduce_all_records_a_failure_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A registered experiment whose module does not exist fails; the next one still runs.
    monkeypatch.setitem(
        reproduce.EXPERIMENTS, "broken", ("ftlab.reproduce._no_such_module", "fails")
    )
    index = report.run_all(tmp_path, quick=True, names=["broken", "selective"])
    assert (tmp_path / "broken" / report.FAILED).is_file()
    assert _summary.read(tmp_path / "selective" / "summary.json")
    page = index.read_text()
    assert "The run failed" in page and "_no_such_module" in page
    assert "selective/selective_tradeoff.png" in page
    # Experiments not asked for are listed as not run.
    assert "Not run." in page


def test_every_reproduction_names_its_device_model() -> None:
    for name in reproduce.EXPERIMENTS:
        model = reproduce.device_model(name)
        assert model in reproduce.MODELS
        record = reproduce.model_record(model)
        assert {"gc", "timing"} <= set(record["validated_by"])
    # KRAFT is still set up on ftlab 0.1's model; LeaFTL on the current one, which the peer
    # family (MQSim) validates.
    assert reproduce.device_model("kraft") == "0.1"
    assert reproduce.device_model("leaftl") == "current"
    assert "peer" in reproduce.model_record("current")["validated_by"]
    assert "peer" not in reproduce.model_record("0.1")["validated_by"]


def test_report_links_the_scorecard_and_names_models(tmp_path: Path) -> None:
    from ftlab import validate

    # A small real scorecard (one family) where `ftlab reproduce all` puts it.
    validate.validate(quick=True, families=["steady"]).write_report(
        tmp_path / reproduce.VALIDATION_DIR
    )
    folder = tmp_path / "kraft"
    folder.mkdir()
    (folder / reproduce.MODEL_FILE).write_text(json.dumps(reproduce.model_record("0.1")))
    page = report.write(tmp_path, quick=True).read_text()
    assert 'href="validation/index.html"' in page
    assert re.search(r"\d+ of \d+ cases passed, 0 failed", page), page[:2000]
    assert "Runs on model 0.1 (" in page and "families gc, timing" in page
    # Without a scorecard the page says how to make one.
    other = tmp_path / "other"
    other.mkdir()
    assert "No validation scorecard here" in report.write(other).read_text()
