"""LearnedFTL (Wang et al., HPCA 2024) against TPFTL, DFTL and LeaFTL on the real traces:
address-translation double reads and read tail latency.

The paper (arXiv 2303.13226, abstract and evaluation on FEMU): LearnedFTL cuts the double
reads that address translation causes by up to 55.5%, and the P99 tail latency by 2.9x to
12.2x, 5.5x on average against TPFTL and 8.2x against LeaFTL.

Setup. Every real trace of shared/traces that ftlab reads (quick mode: Financial1), each on
a device just larger than its footprint (`_demand_common.trace_sets`: addresses compacted, 8
parallel units, 128-page blocks, 7% over-provisioning, no write buffer), filled first
(`precondition = fill`: every translation page exists, the data written in logical order, as
the paper's experiments write their data set before reading it), replayed closed loop at
queue depth 1 (no replay saturates the device: each run's `metrics.load` is checked), GC
scheduled alike for the four schemes (`_footing`). One DRAM for all: a quarter of the
page-level table, at least 4 KiB (so that LeaFTL holds one group of its table on every trace);
LearnedFTL's models and bitmap come out of it, the rest is its mapping cache. The traces
stand for the paper's: MSR Cambridge hm_0 and the UMass Financial1 / WebSearch excerpts for
its MSR and UMass traces, FIU mail for its FIU ones; the others are extra.

Double reads are measured the same way for every scheme: flash reads for the mapping
(translation pages, and LeaFTL's mispredicted reads) per host page read. The headline takes
the largest saving over the traces (the paper's "up to"); tail latency is the P99 of host
reads, its ratio (the other scheme's over LearnedFTL's) averaged over the traces.

LearnedFTL here (crate `ftlab-learnedftl`, its module docs) is built on the core's TPFTL
cache (the same `[tpftl]` settings as the TPFTL it is compared with), as the paper builds
it, with its group-based allocation: each group of translation pages (a line's worth of
logical pages) writes to its own line, and GC collects a group's blocks together and
rewrites them as one sorted run (`learnedftl.group_gc = false` turns it off: quick, double
reads saved against TPFTL 39.4% without it, 65% with it; read P99 of TPFTL over
LearnedFTL's 0.94x and 1.09x; of LeaFTL 4.56x and 5.32x).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ftlab
from ftlab.reproduce import _footing, _summary, _why
from ftlab.reproduce._demand_common import (
    PAGES_PER_BLOCK,
    TRACE_UNITS,
    available_traces,
    entry_bytes,
    figure,
    fmt,
    save_figure,
    trace_sets,
    write_table,
)
from ftlab.reproduce._summary import Headline

DEVICE_MODEL = "current"
PAPER = "LearnedFTL (HPCA'24)"
SCHEMES = ["learnedftl", "tpftl", "dftl", "leaftl"]
#: The DRAM of every scheme, as a share of the page-level table, and at least MIN_DRAM_BYTES
#: (LeaFTL's table needs room for one group of 256 entries: a small trace's quarter has not).
BUDGET_FRACTION = 0.25
MIN_DRAM_BYTES = 4096
CLOSED_LOOP = ["replay.mode=closed", "replay.queue_depth=1"]

#: The paper's headline numbers (abstract).
PAPER_VALUES: dict[str, float] = {
    "double_reads_saved_vs_tpftl": 55.5,
    "p99_read_vs_tpftl": 5.5,
    "p99_read_vs_leaftl": 8.2,
}


@dataclass
class _Measured:
    """Per trace and scheme: double reads per host read and the read P99 (ns)."""

    double: dict[str, dict[str, float]] = field(default_factory=dict)
    p99: dict[str, dict[str, float]] = field(default_factory=dict)
    rows: list[list[str]] = field(default_factory=list)
    gc_modes: set[str] = field(default_factory=set)

    def saved(self, other: str) -> float | None:
        """The largest saving of double reads against `other` over the traces (%)."""
        values = [
            100.0 * (1.0 - d["learnedftl"] / d[other]) for d in self.double.values() if d[other] > 0
        ]
        return max(values) if values else None

    def p99_ratio(self, other: str) -> float | None:
        """Mean over the traces of `other`'s read P99 over LearnedFTL's."""
        values = [p[other] / p["learnedftl"] for p in self.p99.values() if p["learnedftl"] > 0]
        return sum(values) / len(values) if values else None


def _double_reads(report: dict[str, Any]) -> float:
    reads = report["metrics"]["flash"]["reads"]
    host = float(reads["host"])
    return (float(reads["translation"]) + float(reads["misprediction"])) / host if host else 0.0


def _p99(report: dict[str, Any]) -> float:
    latency = report["metrics"].get("latency") or {}
    read = latency.get("read") or {}
    return float(read.get("p99_ns") or 0.0)


def _dram_bytes(device: list[str], fraction: float = BUDGET_FRACTION) -> int:
    """`fraction` of the page-level table of the device `device` sets (at least
    MIN_DRAM_BYTES)."""
    values = dict(s.split("=", 1) for s in device)
    blocks = int(values["geometry.blocks_per_plane"])
    op = float(values["ftl.over_provisioning"])
    physical = blocks * TRACE_UNITS * PAGES_PER_BLOCK
    table = int(physical * (1 - op)) * entry_bytes(physical)
    return max(int(fraction * table), MIN_DRAM_BYTES)


def _measure(
    quick: bool,
    extra: dict[str, list[str]] | None = None,
    learned_fraction: float = BUDGET_FRACTION,
) -> _Measured:
    """Every available trace, every scheme, with `extra` settings per scheme and LearnedFTL's
    DRAM at `learned_fraction` of the table."""
    out = _Measured()
    for name, path, unit in available_traces(quick):
        device = trace_sets(path)
        sets = [*device, f"dram.budget_bytes={_dram_bytes(device)}", *CLOSED_LOOP]
        if unit:
            sets.append(f'trace.time_unit="{unit}"')
        reports = {}
        for scheme in SCHEMES:
            more = (extra or {}).get(scheme, [])
            if scheme == "learnedftl" and learned_fraction != BUDGET_FRACTION:
                more = [*more, f"dram.budget_bytes={_dram_bytes(device, learned_fraction)}"]
            report = ftlab.simulate(
                scheme, trace=path, sets=[*sets, *more], precondition="fill"
            ).report
            load = report["metrics"].get("load") or {}
            if load.get("saturated") or load.get("saturated_in_bursts"):
                raise RuntimeError(f"learnedftl: {name} saturates the device under {scheme}")
            reports[scheme] = report
        out.gc_modes.add(_footing.common_scheduling(reports.values(), f"learnedftl: {name}"))
        out.double[name] = {s: _double_reads(r) for s, r in reports.items()}
        out.p99[name] = {s: _p99(r) for s, r in reports.items()}
        learned = reports["learnedftl"]["metrics"]["scheme"]
        out.rows.append(
            [
                name,
                *(fmt(100 * out.double[name][s], 3) for s in SCHEMES),
                *(fmt(out.p99[name][s] / 1000, 4) for s in SCHEMES),
                fmt(
                    100
                    * learned.get("model_hits", 0.0)
                    / max(1.0, learned.get("cache_misses", 0.0)),
                    3,
                ),
            ]
        )
    return out


def _headlines(m: _Measured) -> list[Headline]:
    setup = (
        f"real traces, device filled, closed loop QD 1, DRAM {BUDGET_FRACTION:.0%} of the table "
        f"(at least {MIN_DRAM_BYTES} bytes) for every scheme; "
        + ", ".join(_footing.setup_note(x) for x in sorted(m.gc_modes))
    )
    values = {
        "double_reads_saved_vs_tpftl": m.saved("tpftl"),
        "double_reads_saved_vs_dftl": m.saved("dftl"),
        "double_reads_saved_vs_leaftl": m.saved("leaftl"),
        "p99_read_vs_tpftl": m.p99_ratio("tpftl"),
        "p99_read_vs_leaftl": m.p99_ratio("leaftl"),
    }
    metrics = {
        "double_reads_saved_vs_tpftl": ("double reads saved against TPFTL, best trace", "%"),
        "double_reads_saved_vs_dftl": ("double reads saved against DFTL, best trace", "%"),
        "double_reads_saved_vs_leaftl": ("double reads saved against LeaFTL, best trace", "%"),
        "p99_read_vs_tpftl": ("read P99 of TPFTL over LearnedFTL's, mean over traces", "x"),
        "p99_read_vs_leaftl": ("read P99 of LeaFTL over LearnedFTL's, mean over traces", "x"),
    }
    out = []
    for key, value in values.items():
        metric, unit = metrics[key]
        h = Headline(
            paper=PAPER,
            metric=metric,
            ours=value,
            paper_value=PAPER_VALUES.get(key),
            unit=unit,
            key=key,
            setup=setup,
        )
        if h.differs:
            above = h.ours is not None and h.paper_value is not None and h.ours > h.paper_value
            reason = REASONS_ABOVE[key] if above else REASONS[key]
            h = Headline(**{**h.__dict__, "reason": reason})
        out.append(h)
    return out


#: Why ours differs from the paper's, where it does by more than 30%: what `why` measured.
REASONS = {
    "double_reads_saved_vs_tpftl": (
        "cause not yet measured; not the pieces per translation page (64 instead of 8 in the "
        "same DRAM, refuted before group-based allocation was built)"
    ),
    "p99_read_vs_tpftl": (
        "cause not yet measured: LearnedFTL still double-reads more than 1% of its reads, so "
        "its P99 read is a double read as TPFTL's; not the pieces per translation page "
        "(`--why`: 64 instead of 8 in the same DRAM, refuted) nor group-based allocation "
        "(0.94x without it, 1.09x with it)"
    ),
    "p99_read_vs_leaftl": (
        "LearnedFTL's cache is smaller than the others' by its models and bitmap: with them "
        "added to its DRAM the ratio rises (`--why`: explains part of the miss); the rest is "
        "not yet measured"
    ),
}


#: Where ours is above the paper's (the full run's best trace).
REASONS_ABOVE = {
    "double_reads_saved_vs_tpftl": (
        "cause not yet measured; the best traces (the MSR Cambridge and FIU excerpts) read "
        "sequentially filled pages at random: with group-based allocation LearnedFTL's models "
        "serve 99-100% of its misses while TPFTL reads more than one translation page per "
        "host read"
    ),
}


def run(out_dir: Path, quick: bool) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    m = _measure(quick)
    if not m.rows:
        print("learnedftl: shared/traces is absent: nothing to reproduce")
        _summary.write(out_dir, [])
        return
    header = [
        "trace",
        *(f"{s} double reads %" for s in SCHEMES),
        *(f"{s} read P99 us" for s in SCHEMES),
        "learnedftl misses served by the model %",
    ]
    write_table(
        out_dir,
        "double_reads_and_tail",
        "LearnedFTL vs TPFTL, DFTL, LeaFTL: double reads per host read, read P99",
        header,
        m.rows,
    )
    _plot(m, out_dir)
    headlines = _headlines(m)
    _summary.write(out_dir, headlines)
    for h in headlines:
        ours = "-" if h.ours is None else f"{h.ours:.3g}"
        paper = "-" if h.paper_value is None else f"{h.paper_value:g}"
        print(f"{h.key}: ours {ours} {h.unit}, paper {paper}")


def _plot(m: _Measured, out_dir: Path) -> None:
    """Double reads per host read and read P99, per trace and scheme (grouped bars)."""
    fig = figure(11.0, 4.0)
    ax1, ax2 = fig.subplots(1, 2)
    traces = list(m.double)
    width = 0.8 / len(SCHEMES)
    for i, scheme in enumerate(SCHEMES):
        xs = [t + i * width for t in range(len(traces))]
        ax1.bar(xs, [100 * m.double[t][scheme] for t in traces], width, label=scheme)
        ax2.bar(xs, [m.p99[t][scheme] / 1000 for t in traces], width, label=scheme)
    for ax, label in ((ax1, "double reads per host read (%)"), (ax2, "read P99 (us)")):
        ax.set_xticks([t + 0.4 - width / 2 for t in range(len(traces))])
        ax.set_xticklabels(traces, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel(label)
    ax2.set_yscale("log")
    ax1.legend(fontsize=7)
    save_figure(fig, out_dir, "double_reads_and_tail")


#: The one change the causes below name: eight times the artifact's pieces per translation
#: page, in the same DRAM (a byte each instead of eight), so that the cache keeps its size.
MORE_PIECES = ["learnedftl.models_per_page=64", "learnedftl.piece_bytes=1"]


def why(out_dir: Path, quick: bool) -> list[_why.Experiment]:
    """The experiments behind the stated causes, each one change from the run's setup."""
    if not available_traces(quick):
        return []
    base = _measure(quick)
    more_pieces = _measure(quick, {"learnedftl": MORE_PIECES})
    # Its models (1/64 of the table at most) and bitmap (1/8 byte per entry of at least 2
    # bytes: 1/16) on top of the common DRAM: its cache as large as the others'.
    more_dram = _measure(quick, learned_fraction=BUDGET_FRACTION + 1 / 16 + 1 / 64)
    pieces = "64 pieces per translation page instead of 8, in the same DRAM"
    dram = "LearnedFTL's models and bitmap added to its DRAM (its cache as the others')"
    # Per headline: (before, after, the change).
    measured = {
        "p99_read_vs_tpftl": (base.p99_ratio("tpftl"), more_pieces.p99_ratio("tpftl"), pieces),
        "p99_read_vs_leaftl": (base.p99_ratio("leaftl"), more_dram.p99_ratio("leaftl"), dram),
    }
    return [
        _why.Experiment(
            key=key,
            cause=REASONS[key],
            change=change,
            before=before or 0.0,
            after=after or 0.0,
            paper_value=PAPER_VALUES[key],
            unit="%" if key.startswith("double") else "x",
            scale="linear" if key.startswith("double") else "log",
        )
        for key, (before, after, change) in measured.items()
    ]
