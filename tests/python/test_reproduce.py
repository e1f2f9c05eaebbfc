"""The paper reproductions in quick mode: each runs once per session (into one folder, as
`ftlab reproduce all --quick` lays them out) and writes its tables, plots and `summary.json`;
then the HTML report over all of them is checked, in a real headless browser where one is
installed. Two kinds of checks read the headlines, kept apart:

- Fidelity (`test_headline_is_within_the_papers_band`): each headline that has a paper value
  is checked against a band around the PAPER's value (`PAPER_VALUES`, `BAND`). A headline
  known to miss is an expected failure (`KNOWN_MISSES`, `xfail(strict=True)`) whose reason
  is the cause the reproduction states in its `summary.json`: fixing it makes the test pass
  unexpectedly, which fails the run until the marker is removed. No test certifies a miss.
- Regression (`test_regression_pins`): the quick runs' own values, within `TOLERANCE` (a
  share of the value) or `ABSOLUTE` percentage points for the few headlines near zero. They
  catch unintended changes (a scheme, the device model or a reproduction's setup changed);
  they are not fidelity checks, and several pin values far from the paper's.

Both read the quick runs; the full runs' values, which the README quotes, take minutes and
are not what is tested (some headlines differ between the two: see the reasons).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from browser_helpers import check_page_in_browser

from ftlab import reproduce
from ftlab.reproduce import _summary, report

# --- Fidelity: the papers' values -----------------------------------------------------------

#: The band around the paper's value within which a headline counts as reproduced: ours over
#: the paper's within 1/1.3 .. 1.3. It is the measure of "within" that issue 30 and the
#: report (`_summary.DIFFERENCE`, the report's "differs") use, one band for every unit: most
#: headlines are ratios of two schemes on the same device, whose absolute levels differ from
#: the papers' hardware, and a relative band in ratio is symmetric (half and double are as
#: far). Percentages are checked the same way, relative to the paper's percentage.
BAND = _summary.DIFFERENCE

#: Headlines whose paper value is a bound, not a point: the thesis says "more than" (HPFTL's
#: GC count against the page FTL's), so the band is one-sided, at or above the paper's value.
LOWER_BOUNDS = {("slimftl", "hpftl_gc_sequential"), ("slimftl", "hpftl_gc_random")}

#: Every headline that has a paper value: the paper's value, as the reproduction states it
#: (`test_paper_values_are_the_reproductions` keeps the two in step, so the paper's value
#: cannot move to meet ours unseen).
PAPER_VALUES: dict[str, dict[str, float]] = {
    "amf": {
        "memory_block_level": 4.0,
        "memory_hybrid": 96.0,
        "memory_page_level": 512.0,
        "memory_aftl": 4.0,
        "memory_alfs": 5.3,
        "waf_sequential_and_light_largest": 1.0,
        "waf_fio_rw_ext4_pftl": 1.41,
        "waf_fio_rw_ext4_dftl": 1.45,
        "waf_fio_rw_f2fs_pftl": 2.457,
        "waf_fio_rw_f2fs_dftl": 2.9212,
        "waf_fio_rw_amf": 1.38,
        "waf_postmark_h_ext4_pftl": 1.12,
        "waf_postmark_h_ext4_dftl": 1.35,
        "waf_postmark_h_f2fs_pftl": 2.6091,
        "waf_postmark_h_f2fs_dftl": 3.4102,
        "waf_postmark_h_amf": 1.16,
        "waf_oltp_ext4_pftl": 1.45,
        "waf_oltp_ext4_dftl": 1.46,
        "waf_oltp_f2fs_pftl": 2.1894,
        "waf_oltp_f2fs_dftl": 2.2017,
        "waf_oltp_amf": 1.24,
        "waf_tpc_c_ext4_pftl": 2.33,
        "waf_tpc_c_ext4_dftl": 2.21,
        "waf_tpc_c_f2fs_pftl": 5.068,
        "waf_tpc_c_f2fs_dftl": 9.919,
        "waf_tpc_c_amf": 1.87,
    },
    "dftl": {
        "translation_writes_saved": 62.0,
        "response_time_saved_best": 24.0,
    },
    "kraft": {
        "latency_reduction_oltp1": 24.8101,
        "latency_reduction_web": 0.384827,
        "merge_time_kraft_vs_fftl": 1.07437,
        "log_blocks_in_fast_dram": 256.0,
    },
    "leaftl": {
        "memory_sftl_vs_leaftl": 2.9,
        "memory_dftl_vs_leaftl": 10.5,
        "misprediction_gamma16": 10.0,
        "memory_gamma0_vs_gamma16": 1.3,
        "latency_sftl_vs_leaftl": 1.4,
        "latency_dftl_vs_leaftl": 1.6,
        "latency_gamma0_vs_gamma16": 1.3,
        "level1_share": 90.0,
    },
    "selective": {
        "throughput_at_32_file_1000": 0.8,
    },
    "selective-hints": {
        "gain_default": 10.0,
        "gain_journal_first": 10.0,
    },
    "slimftl": {
        "hpftl_mapping": 0.537,
        "slimftl_mapping": 0.441,
        "hpftl_iops": 0.38,
        "slimftl_iops": 1.0,
        "slimftl_iops_real": 1.0,
        "slimftl_superblocks_iops_real": 1.0,
        "hpftl_gc_sequential": 5.0,
        "hpftl_gc_random": 1.5,
        "slimftl_gc": 1.0,
        "slimftl_gc_shift1": 2.6,
        "slimftl_gc_shift8": 0.87,
    },
}

#: Headlines outside the band in the quick run, each with its cause: the reproduction's own
#: reason in `summary.json` (`test_known_misses_give_the_reproductions_cause` keeps them in
#: step), or "cause not yet measured" where it gives none. A fix removes the entry.
_DFTL_CACHE = (
    "DFTL's translation traffic depends on its cache, which the paper does not size (an eighth of"
    " the table here) and on its GC's updates of uncached entries"
)
_F2FS_NO_DISCARD = (
    "F2FS without discard: the device keeps every block F2FS has freed valid until F2FS writes "
    "that section again, and each of the device's blocks holds pieces of eight F2FS sections: the"
    " duplicated log structure the paper describes, stronger here where the workloads keep the "
    "file system fuller than the paper's runs may have"
)
KNOWN_MISSES: dict[tuple[str, str], str] = {
    ("amf", "memory_block_level"): (
        "the block scheme counts bit-exact entries (21 bits for 1.06 M blocks), the paper 4 bytes"
    ),
    ("amf", "memory_hybrid"): (
        "the paper does not say which hybrid FTL or how many log blocks: FAST with its default "
        "log-block pool (log page maps of 4-byte entries) here"
    ),
    ("amf", "waf_fio_rw_f2fs_dftl"): _DFTL_CACHE,
    ("amf", "waf_postmark_h_f2fs_pftl"): _F2FS_NO_DISCARD,
    ("amf", "waf_postmark_h_f2fs_dftl"): _DFTL_CACHE,
    ("amf", "waf_oltp_ext4_dftl"): _DFTL_CACHE,
    ("amf", "waf_oltp_f2fs_pftl"): _F2FS_NO_DISCARD,
    ("amf", "waf_oltp_f2fs_dftl"): _DFTL_CACHE,
    ("amf", "waf_oltp_amf"): (
        "the file systems' metadata here is a model (nodes, NAT/SIT/SSA, checkpoints every 60 s):"
        " F2FS's real metadata traffic depends on fsync and page-cache writeback; the OLTP "
        "benchmark's table size, skew and log volume are not given: a table of 75% of the device,"
        " 80/20 skew and a 4 KiB log record per transaction are assumed"
    ),
    ("amf", "waf_tpc_c_ext4_pftl"): (
        "the TPC-C excerpt is 7,000 requests (2,618 writes, overwrite factor 1.0): tiled and "
        "repeated it is a steadier, more uniform load than the paper's full run"
    ),
    ("amf", "waf_tpc_c_f2fs_pftl"): _F2FS_NO_DISCARD,
    ("amf", "waf_tpc_c_f2fs_dftl"): _DFTL_CACHE,
    ("dftl", "translation_writes_saved"): (
        "the 2009 DFTL writes a translation page back for every dirty victim entry; on these "
        "excerpts' scattered updates TPFTL's page-level batching saves more than on the paper's "
        "Financial and MSR traces"
    ),
    ("dftl", "response_time_saved_best"): (
        "a miss of the 2009 DFTL that evicts a dirty entry waits for a translation read and "
        "program; TPFTL's prefetching and batching remove most of them"
    ),
    ("kraft", "latency_reduction_oltp1"): (
        "ours is each request's host-visible latency on a filled device, where every write is an "
        "overwrite and requests wait behind foreground merges; the paper's is a per-page flash "
        "time on its full traces"
    ),
    ("kraft", "latency_reduction_web"): (
        "the WebSearch excerpt writes 16 pages: no scheme merges, all are equal"
    ),
    ("leaftl", "memory_sftl_vs_leaftl"): (
        "the excerpts are small and sequential (S-FTL compresses their runs about as well as "
        "LeaFTL learns them), unlike the paper's MSR and FIU traces"
    ),
    ("leaftl", "memory_dftl_vs_leaftl"): (
        "the excerpts are more sequential than the artifact's MSR and FIU traces: LeaFTL learns "
        "long runs as one segment where DFTL pays 8 bytes a page"
    ),
    ("leaftl", "misprediction_gamma16"): (
        "the paper's figure is an upper bound; the excerpts' runs are mostly exact, so few "
        "segments are approximate"
    ),
    ("leaftl", "latency_sftl_vs_leaftl"): (
        "S-FTL's table after a fill is small (one run per translation page): the DRAM LeaFTL "
        "frees is a small share of the data cache, which changes the hit ratio little"
    ),
    ("leaftl", "latency_dftl_vs_leaftl"): (
        "DFTL's data cache (1/128 of the DRAM) absorbs few writes, each write-back of a dirty "
        "translation page is in a request's path, and on the filled device the excerpts' first "
        "touches miss its mapping cache"
    ),
    ("leaftl", "latency_gamma0_vs_gamma16"): (
        "both tables fit in the DRAM with room to spare: what γ = 16 saves barely grows the data "
        "cache; the paper's gain is where the table fills most of the DRAM"
    ),
    ("selective", "throughput_at_32_file_1000"): (
        "fio hashes its Pareto ranks over the file, so the hot pages of a file of 100% of the "
        "device fall in most of its mapping blocks: a 32% cache misses on most writes, each miss "
        "a 64 KiB load (and often a write-back)"
    ),
    ("selective-hints", "gain_default"): (
        "pblk-trans's update thread adds less per journal translation (+5) than per data one "
        "(+20): declaring the journal makes its blocks colder, not hotter"
    ),
    ("selective-hints", "gain_journal_first"): (
        "without hints the journal's blocks already stay cached (the head touches each for a "
        "thousand writes in a row): the misses are the data's, which hints leave"
    ),
    ("slimftl", "hpftl_iops"): (
        "every page HPFTL's GC copies goes to the secondary table and is copied again by "
        "reclaim (WAF 26-29 on the stand-ins), but a secondary table four times larger, "
        "reclaiming less often, recovers only a small part; not the GC trigger (at 5% free "
        "instead of 1% the ratio does not move); the rest of the cause not yet measured"
    ),
    ("slimftl", "slimftl_iops_real"): (
        "neighbouring pages hash into one block on one die, so the traces' requests queue "
        "there; virtual blocks over superblocks spread them (explains part of the miss)"
    ),
    ("slimftl", "slimftl_superblocks_iops_real"): (
        "background GC by a unit's free pages compacts blocks that the traces' hot rows do "
        "not reach (TPC-C, quick run: WAF 21 against 1.5 with GC in the foreground for every "
        "scheme); "
        "the rest not yet measured"
    ),
    ("slimftl", "slimftl_gc_shift1"): (
        "normalised to the page FTL that keeps runs together, the faster on the sequential "
        "stand-in; against the striped page FTL it is 2.32x"
    ),
}

#: Experiments that read ../shared/traces (the others run on synthetic workloads).
NEEDS_TRACES = {"leaftl", "dftl", "demand-hit-ratio", "kraft", "amf"}


def _needs(name: str, request: pytest.FixtureRequest) -> None:
    if name in NEEDS_TRACES:
        request.getfixturevalue("traces")  # skips without the real traces


def _fidelity_cases() -> Iterator[object]:
    for name in sorted(PAPER_VALUES):
        for key, paper in PAPER_VALUES[name].items():
            cause = KNOWN_MISSES.get((name, key))
            marks = (
                [pytest.mark.xfail(strict=True, raises=AssertionError, reason=cause)]
                if cause is not None
                else []
            )
            yield pytest.param(name, key, paper, marks=marks, id=f"{name}:{key}")


def _within(ours: float, paper: float, lower_bound: bool) -> bool:
    if lower_bound:
        return ours >= paper
    ratio = ours / paper
    return ratio > 0 and max(ratio, 1 / ratio) <= 1 + BAND


@pytest.mark.parametrize(("name", "key", "paper"), list(_fidelity_cases()))
def test_headline_is_within_the_papers_band(
    name: str, key: str, paper: float, quick: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    """The quick run's headline within `BAND` of the paper's value (at or above it for a
    lower bound); an expected failure, with its cause, where it is known to miss."""
    _needs(name, request)
    h = _summary.by_key(_summary.read(quick(name) / "summary.json"))[key]
    assert h.ours is not None, f"{name}: {key} not measured"
    band = "at or above" if (name, key) in LOWER_BOUNDS else f"within {BAND:.0%} of"
    assert _within(h.ours, paper, (name, key) in LOWER_BOUNDS), (
        f"{name}: {key} = {h.ours:.4g} {h.unit}, not {band} the paper's {paper:.4g}"
        + (f" ({h.reason})" if h.reason else "")
    )


@pytest.mark.parametrize("name", sorted(reproduce.EXPERIMENTS))
def test_paper_values_are_the_reproductions(
    name: str, quick: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    """Every headline with a paper value has a fidelity test, at the value stated here."""
    _needs(name, request)
    headlines = _summary.read(quick(name) / "summary.json")
    stated = {h.key: h.paper_value for h in headlines if h.paper_value is not None}
    assert stated == pytest.approx(PAPER_VALUES.get(name, {}), rel=1e-6)
    assert all(h.key for h in headlines if h.paper_value is not None)


@pytest.mark.parametrize("name", sorted(reproduce.EXPERIMENTS))
def test_known_misses_give_the_reproductions_cause(
    name: str, quick: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    """Each expected failure's reason is the cause the reproduction states (or says that
    none is measured where it states none), so that the marker does not outlive it."""
    _needs(name, request)
    found = _summary.by_key(_summary.read(quick(name) / "summary.json"))
    for (experiment, key), cause in KNOWN_MISSES.items():
        if experiment == name:
            assert cause == (found[key].reason or "cause not yet measured"), f"{name}: {key}"


@pytest.mark.parametrize("name", sorted(reproduce.EXPERIMENTS))
def test_headlines_name_the_paper_and_say_why_they_differ(
    name: str, quick: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    _needs(name, request)
    for h in _summary.read(quick(name) / "summary.json"):
        assert h.paper and h.metric and h.unit, h
        # Wherever ours and the paper's differ by more than 30%, the reproduction says why.
        if h.differs:
            assert h.reason, f"{name}: {h.key} differs from the paper's without a reason"


# --- Regression pins: our own quick values ----------------------------------------------------

TOLERANCE = 0.10
ABSOLUTE = 2.0

#: Each experiment's quick headlines as this version computes them. Regression pins, not
#: fidelity checks: they catch unintended changes, and many sit far from the paper's value.


REGRESSION_PINS: dict[str, dict[str, float]] = {
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
        # Every scheme with GC in the background (before: the page FTL alone, HPFTL and
        # SlimFTL in the write's path: hpftl_iops 0.0268, slimftl_iops 0.481, real 0.0493,
        # superblocks real 0.371, hpftl GCs 23.1 / 4.71, slimftl_gc 0.994, shift 4.50 / 1.20).
        "hpftl_mapping": 0.5375,
        "slimftl_mapping": 0.4418,
        "hpftl_iops": 0.0327,
        "slimftl_iops": 0.954,
        "slimftl_iops_real": 0.0760,
        "slimftl_superblocks_iops_real": 0.164,
        "hpftl_gc_sequential": 20.5,
        "hpftl_gc_random": 3.99,
        "slimftl_gc": 1.18,
        "slimftl_gc_shift1": 6.01,
        "slimftl_gc_shift8": 1.13,
        # On a cliff of a bimodal distribution in the quick run (reads wait tens of ms):
        # 0.0721 before background GC for SlimFTL, 1.00 with GC at 5% free.
        "sftl_vs_slimftl_read_p99": 0.125,
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


@pytest.mark.parametrize("name", sorted(REGRESSION_PINS))
def test_regression_pins(
    name: str, quick: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    """The quick headlines at this version's values (`REGRESSION_PINS`): catches unintended
    changes; not a fidelity check (that is `test_headline_is_within_the_papers_band`)."""
    _needs(name, request)
    headlines = _summary.read(quick(name) / "summary.json")
    assert {h.key for h in headlines} >= set(REGRESSION_PINS[name])
    wrong = _summary.mismatches(headlines, REGRESSION_PINS[name], TOLERANCE, ABSOLUTE)
    assert not wrong, f"{name} (regression pin): " + "; ".join(wrong)


@pytest.mark.parametrize("name", sorted(REGRESSION_PINS))
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
    # A reproduction added gets regression pins here (and its paper values in PAPER_VALUES)
    # once it writes a summary.json.
    assert set(reproduce.EXPERIMENTS) == set(REGRESSION_PINS)


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


def test_report_in_a_headless_browser(
    quick: Callable[[str], Path], quick_dir: Path, request: pytest.FixtureRequest
) -> None:
    for name in sorted(REGRESSION_PINS):
        _needs(name, request)
        quick(name)
    index = report.write(quick_dir, quick=True)
    page = index.read_text()
    # One row per headline, a ratio and a reason wherever ours and the paper's differ.
    every = [h for n in REGRESSION_PINS for h in _summary.read(quick_dir / n / "summary.json")]
    assert page.count('<tr class="differs">') + page.count('<tr class="agrees">') == 2 * len(every)
    assert "no reason given" not in page
    images = re.findall(r'<img src="([^"]+)"', page)
    assert images and all((quick_dir / src).is_file() for src in images)
    check_page_in_browser(index, len(images))


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
