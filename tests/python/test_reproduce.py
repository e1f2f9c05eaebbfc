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

Both read the quick runs; the full runs' values, which docs/notes/ quotes, take minutes and
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
    # ZNS (ATC'21): no device GC, and Figure 1's flat ZNS line. FDP (EuroSys'25): "an ideal
    # device write amplification of ~1" with CacheLib's streams on their own handles.
    "zns": {"zns_device_waf": 1.0, "zns_throughput_kept": 1.0},
    "fdp": {"waf_matched": 1.0},
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
        "latency_reduction_oltp_standin": 24.8101,
        "merge_time_kraft_vs_fftl": 1.07437,
        "merge_time_kraft_vs_fftl_oltp_standin": 1.07437,
        "log_blocks_in_fast_dram": 256.0,
    },
    "learnedftl": {
        "double_reads_saved_vs_tpftl": 55.5,
        "p99_read_vs_tpftl": 5.5,
        "p99_read_vs_leaftl": 8.2,
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
    " the table here)"
)
_LFS_CLEANING = (
    "the log-structured file systems clean greedily in the foreground (F2FS's foreground policy;"
    " its background GC picks by cost-benefit): under the skewed OLTP and TPC-C loads greedy "
    "takes victims whose valid blocks are cold and moves them again"
)
_F2FS_BLOCKS = (
    "F2FS's device WAF depends on how its 2 MiB sections fall on the device's blocks: with the "
    "paper's 128-page blocks a section F2FS rewrites whole leaves whole blocks invalid, which the"
    " page FTL erases without copies"
)
_EXT4_FOOTPRINT = (
    "EXT4's metadata as modelled here (inode tables and journal kept valid on the device, inode "
    "blocks journaled every 5 s and written back after 30 s)"
)
KNOWN_MISSES: dict[tuple[str, str], str] = {
    ("amf", "memory_block_level"): (
        "the block scheme counts bit-exact entries (21 bits for 1.06 M blocks), the paper 4 bytes"
    ),
    ("amf", "memory_hybrid"): (
        "the paper does not say which hybrid FTL or how many log blocks: FAST with its default "
        "log-block pool (log page maps of 4-byte entries) here"
    ),
    ("amf", "waf_fio_rw_f2fs_pftl"): _F2FS_BLOCKS,
    ("amf", "waf_fio_rw_f2fs_dftl"): _F2FS_BLOCKS,
    ("amf", "waf_postmark_h_ext4_pftl"): _EXT4_FOOTPRINT,
    ("amf", "waf_postmark_h_ext4_dftl"): _DFTL_CACHE,
    ("amf", "waf_postmark_h_f2fs_pftl"): "cause not yet measured",
    ("amf", "waf_postmark_h_f2fs_dftl"): "cause not yet measured",
    ("amf", "waf_oltp_ext4_pftl"): _EXT4_FOOTPRINT,
    ("amf", "waf_oltp_ext4_dftl"): _DFTL_CACHE,
    ("amf", "waf_oltp_f2fs_dftl"): _LFS_CLEANING,
    ("amf", "waf_oltp_amf"): _LFS_CLEANING,
    ("amf", "waf_tpc_c_ext4_dftl"): _DFTL_CACHE,
    ("amf", "waf_tpc_c_f2fs_pftl"): _LFS_CLEANING,
    ("dftl", "translation_writes_saved"): (
        "all of TPFTL's saving here is batch write-back (against a DFTL that batches it saves "
        "nothing on Financial1), the 2009 DFTL writing one translation page per dirty entry "
        "evicted; the paper's 62% lies between: cause not yet measured, not the cache size nor "
        "GC (`--why`)"
    ),
    ("dftl", "response_time_saved_best"): (
        "the 2009 DFTL's misses that evict a dirty entry wait for a translation read and "
        "program: against a DFTL that batches its write-backs, TPFTL saves 18% (`--why`)"
    ),
    ("kraft", "latency_reduction_oltp1"): (
        "the 10,000-request excerpt (Financial1's first 260 s) overwrites little (4% of the "
        "pages it writes): on the fresh device its log writes are first writes below a data "
        "block's top, and twice the log blocks saves KRAFT few merges; and FFTL packs the "
        "excerpt's partial-page writes (46% of its page writes) four sectors a page where the "
        "other three read-modify-write them, so its LATE falls below KAST's (the paper's FFTL "
        "is 3% slower than its KAST)"
    ),
    ("kraft", "latency_reduction_web"): (
        "the WebSearch excerpt writes 16 pages: no scheme merges, all are equal"
    ),
    ("kraft", "latency_reduction_oltp_standin"): "cause not yet measured",
    ("learnedftl", "p99_read_vs_tpftl"): (
        "cause not yet measured: LearnedFTL still double-reads more than 1% of its reads, so "
        "its P99 read is a double read as TPFTL's; not the pieces per translation page "
        "(`--why`: 64 instead of 8 in the same DRAM, refuted) nor group-based allocation "
        "(0.94x without it, 1.09x with it)"
    ),
    ("learnedftl", "p99_read_vs_leaftl"): (
        "LearnedFTL's cache is smaller than the others' by its models and bitmap: with them "
        "added to its DRAM the ratio rises (`--why`: explains part of the miss); the rest is "
        "not yet measured"
    ),
    ("leaftl", "memory_dftl_vs_leaftl"): (
        "cause not yet measured; not the excerpts' sequentiality: on the MSR and FIU excerpts, "
        "the artifact's trace families, DFTL / LeaFTL is 21x (`--why`)"
    ),
    ("leaftl", "latency_dftl_vs_leaftl"): (
        "DFTL's data cache is 1/128 of the DRAM: with a data cache as large as LeaFTL's, DFTL / "
        "LeaFTL halves (15x to 7.3x quick, `--why`); the rest is not yet measured"
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
        "cause not yet measured: without hints the journal's blocks stay cached too (journal "
        "hit ratio 0.999 without hints, 0.9999 with: each block misses once, when the journal "
        "head enters it), and a cache of 0.5% of the table changes neither the ratios nor the "
        "gain (--why)"
    ),
    ("slimftl", "hpftl_iops"): (
        "cause not yet measured: HPFTL's WAF is 26-29 on the stand-ins, but neither a "
        "secondary table four times larger (0.033 to 0.036) nor GC at 5% free instead of 1% "
        "closes a tenth of the gap (`--why`: both refuted)"
    ),
    ("slimftl", "slimftl_iops_real"): (
        "neighbouring pages hash into one block on one die, so the traces' requests queue "
        "there; virtual blocks over superblocks spread them (explains part of the miss)"
    ),
    ("slimftl", "slimftl_superblocks_iops_real"): (
        "cause not yet measured: SlimFTL writes more than the page FTL (quick: WAF 1.9 on "
        "TPC-C, 1.4 on Financial1, against 1.0 and 1.1); not GC scheduling (with every "
        "scheme's GC in the foreground the ratio falls to 0.40)"
    ),
    ("slimftl", "slimftl_gc_shift1"): (
        "normalised to the page FTL that keeps runs together, the faster on the sequential "
        "stand-in; against the striped page FTL it is 1.79x"
    ),
    ("slimftl", "slimftl_gc_shift8"): (
        "cause not yet measured; normalised to the page FTL that keeps runs together, the "
        "faster on the sequential stand-in; against the striped page FTL it is 0.44x"
    ),
}

#: Experiments that read ../shared/traces (the others run on synthetic workloads).
NEEDS_TRACES = {"leaftl", "learnedftl", "dftl", "demand-hit-ratio", "kraft", "amf"}


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
    # The quick run's memory, γ and level headlines are the full run's (the full device,
    # mapping only); its latency runs two of the traces the full headline averages.
    "leaftl": {
        "memory_sftl_vs_leaftl": 2.50,
        "memory_dftl_vs_leaftl": 15.6,
        "misprediction_gamma16": 8.30,
        "memory_gamma0_vs_gamma16": 1.50,
        "latency_sftl_vs_leaftl": 1.09,
        "latency_dftl_vs_leaftl": 15.4,
        "latency_gamma0_vs_gamma16": 1.00,
        "level1_share": 97.1,
    },
    "slimftl": {
        # Every scheme with GC in the background (before: the page FTL alone, HPFTL and
        # SlimFTL in the write's path: hpftl_iops 0.0268, slimftl_iops 0.481, real 0.0493,
        # superblocks real 0.371, hpftl GCs 23.1 / 4.71, slimftl_gc 0.994, shift 4.50 / 1.20).
        # SlimFTL's background GC by wanted VBAs instead of a unit's free pages (before:
        # slimftl_iops 0.954, real 0.0760, superblocks real 0.164, slimftl_gc 1.18, shift
        # 6.01 / 1.13, read p99 0.125).
        "hpftl_mapping": 0.5375,
        "slimftl_mapping": 0.4418,
        "hpftl_iops": 0.0327,
        "slimftl_iops": 1.17,
        "slimftl_iops_real": 0.0822,
        "slimftl_superblocks_iops_real": 0.661,
        "hpftl_gc_sequential": 20.5,
        "hpftl_gc_random": 3.99,
        "slimftl_gc": 1.005,
        "slimftl_gc_shift1": 4.65,
        "slimftl_gc_shift8": 1.15,
        # On a cliff of a bimodal distribution in the quick run (reads wait tens of ms):
        # 0.0721 before background GC for SlimFTL, 1.00 with GC at 5% free.
        "sftl_vs_slimftl_read_p99": 0.125,
    },
    # 0.0718 while a mapping block's load and write-back took 16 page operations; one
    # vector command each (selective.mapping_block_io = "command") moves it to 0.463.
    "selective": {"throughput_at_32_file_1000": 0.463},
    # gain_default was -26.6 with a buffer that flushed only when full; background
    # write-back moves it to -22.2 (-23.2 without the host interface's time).
    "selective-hints": {"gain_default": -22.2, "gain_journal_first": -0.4},
    "dftl": {"translation_writes_saved": 91.5, "response_time_saved_best": 53.2},
    # 128-page blocks, EXT4's footprint, F2FS's checkpoint discard and the calibrated
    # TPC-C stand-in (before: 16-page blocks, none of them; see the AMF commit body).
    # The log-structured stacks' cleaning in idle time and its catch-up after
    # preconditioning moved their WAF (FIO(RW) AMF 1.427, F2FS+DFTL 1.758; Postmark(H)
    # F2FS+PFTL 1.967; OLTP F2FS+PFTL 3.217, AMF 2.078; TPC-C AMF 2.879 before).
    "amf": {
        "memory_page_level": 512.0,
        "memory_aftl": 4.0,
        "memory_alfs": 4.90,
        "waf_sequential_and_light_largest": 1.024,
        "waf_fio_rw_amf": 1.397,
        "waf_fio_rw_f2fs_dftl": 1.677,
        "waf_postmark_h_f2fs_pftl": 1.929,
        "waf_oltp_ext4_pftl": 1.916,
        "waf_oltp_f2fs_pftl": 2.818,
        "waf_oltp_amf": 1.938,
        "waf_tpc_c_ext4_pftl": 2.315,
        "waf_tpc_c_amf": 2.369,
    },
    # Quick: a 128 MiB array. The full run (512 MiB) keeps the shapes; FDP's matched WAF
    # is 1.04 there (1.18 quick).
    "zns": {
        "zns_device_waf": 1.0,
        "zns_throughput_kept": 0.995,
        "block7_throughput_kept": 0.146,
        "block28_throughput_kept": 0.349,
        "block7_waf": 3.717,
        "block28_waf": 1.477,
        "alfs_zns_vs_aftl_fio_rand_write": 1.0,
        "alfs_zns_vs_aftl_hotcold": 1.0,
    },
    "fdp": {
        "waf_matched": 1.180,
        "waf_none": 4.094,
        "waf_adversarial": 4.156,
        "waf_lifetime": 3.011,
    },
    "kraft": {
        "latency_reduction_oltp1": -13.6,
        "latency_reduction_web": 0.0,
        "latency_reduction_oltp_standin": 37.3,
        "merge_time_kraft_vs_fftl": 1.01,
        "merge_time_kraft_vs_fftl_oltp_standin": 1.27,
        "log_blocks_in_fast_dram": 235.0,
    },
    # Financial1 alone (quick): LearnedFTL's double reads against each scheme, read P99 ratios.
    "learnedftl": {
        "double_reads_saved_vs_tpftl": 65.0,
        "double_reads_saved_vs_dftl": 81.3,
        "double_reads_saved_vs_leaftl": 55.1,
        "p99_read_vs_tpftl": 1.09,
        "p99_read_vs_leaftl": 5.32,
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


@pytest.mark.reproduction("leaftl")
def test_leaftl_quick_is_the_full_runs_setup_where_cheap(
    quick: Callable[[str], Path], traces: Path
) -> None:
    from ftlab.reproduce import leaftl

    folder = quick("leaftl")
    # The γ values the headlines compare (the full run sweeps 0, 1, 4, 8, 16), on every
    # trace the full run maps.
    chosen, _ = leaftl.select_traces(traces)
    with (folder / "gamma.csv").open() as f:
        gammas = list(csv.DictReader(f))
    assert {int(r["gamma"]) for r in gammas} == {0, 16} and leaftl.GAMMAS == [0, 1, 4, 8, 16]
    assert {r["trace"] for r in gammas} == {f"{p.parent.name}/{p.name}" for p, _ in chosen}
    with (folder / "latency.csv").open() as f:
        rows = list(csv.DictReader(f))
    # Timed: traces the full latency headline averages (working set at least twice the DRAM
    # of the full run's device), whose working sets exceed the quick device's DRAM too.
    counted = {
        f"{p.parent.name}/{p.name}"
        for p, info in chosen
        if leaftl.full_scale_working_set_over_dram(info) >= leaftl.MIN_WORKING_SET_OVER_DRAM
    }
    assert len(rows) == leaftl.QUICK_TRACES and {r["trace"] for r in rows} <= counted
    assert all(float(r["working set / DRAM"]) > 1 for r in rows)


@pytest.mark.reproduction("slimftl")
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


def test_selective_why_verdicts(tmp_path: Path) -> None:
    """The causes the selective reproductions state, checked in quick mode (about 10 s)."""
    from ftlab.reproduce import selective_hints, selective_tradeoff

    verdicts = [e.verdict for e in selective_tradeoff.why(tmp_path, quick=True)]
    # One 64 KiB command per mapping block (the model before: 16 page operations), then
    # fio's hashing of the Pareto ranks (the hot pages contiguous instead).
    assert verdicts == ["explains part of the miss", "explains the miss"]
    hints = selective_hints.why(tmp_path, quick=True)
    assert [(e.key, e.verdict) for e in hints] == [
        ("gain_default", "explains the miss"),
        ("gain_default", "explains part of the miss"),
        ("gain_journal_first", "refuted"),
    ]


def test_learnedftl_why_verdicts(tmp_path: Path, traces: Path) -> None:
    """The causes the LearnedFTL reproduction states, checked in quick mode (seconds)."""
    from ftlab.reproduce import learnedftl

    verdicts = [(e.key, e.verdict) for e in learnedftl.why(tmp_path, quick=True)]
    assert verdicts == [
        ("p99_read_vs_tpftl", "refuted"),
        ("p99_read_vs_leaftl", "explains part of the miss"),
    ]


@pytest.mark.reproduction("selective-hints")
def test_selective_hints_journal_stays_cached_without_hints(
    quick: Callable[[str], Path],
) -> None:
    """The facts gain_journal_first's reason states: the journal hits about 99.9% of its
    translations without hints, 99.99% with the journal-first constants."""
    with (quick("selective-hints") / "selective_hints.csv").open() as f:
        rows = {row["policy"]: float(row["journal hit ratio"]) for row in csv.DictReader(f)}
    assert rows["no hints"] == pytest.approx(0.999, abs=0.0005)
    assert rows["hints, +500 journal / +10 data"] == pytest.approx(0.9999, abs=0.00005)


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
    # Each experiment's Markdown report, written by its run, is linked.
    assert 'Report: <a href="selective/selective.md">' in page
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


@pytest.mark.reproduction("kraft")
def test_kraft_why_checks_its_stated_causes(
    tmp_path: Path, quick: Callable[[str], Path], traces: Path
) -> None:
    """KRAFT's `--why` (quick, about 3 s): each latency cause it states is checked by
    replacing the excerpt with a synthetic stand-in of the paper's trace (and OLTP1's also
    by filling the device, and its FFTL cause by turning FFTL's sector packing off), and
    none is refuted; each experiment's cause is the reason the summary gives."""
    from ftlab.reproduce import _why

    found = _summary.by_key(_summary.read(quick("kraft") / "summary.json"))
    reproduce.run("kraft", tmp_path, quick=True, why=True)
    experiments = _why.read(tmp_path / _why.WHY_FILE)
    assert [e.key for e in experiments] == [
        "latency_reduction_oltp1",
        "latency_reduction_oltp1",
        "latency_reduction_oltp1",
        "latency_reduction_web",
    ]
    for e in experiments:
        assert e.cause == found[e.key].reason, e.key
        assert e.before == pytest.approx(found[e.key].ours, abs=1e-3), e.key
        assert e.verdict == "explains part of the miss", e
    standin, filled, unpacked, _ = experiments
    # KRAFT's LATE is far below the others' on the OLTP stand-in; on the excerpt it is
    # above them (FFTL packs sectors), less so on the filled device, and about equal to
    # them with FFTL's packing off.
    assert standin.after > 20.0
    assert standin.before < filled.after < 0.0 < standin.after
    assert standin.before < -5.0
    assert abs(unpacked.after) < 5.0
