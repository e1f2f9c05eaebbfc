"""Mapping-cache hit ratio of each demand-cached scheme against the DRAM budget, on the real
traces (FTL-algorithms spec section 14, item 2: the shape, hit ratio rising steeply with
the cache, rather than a published value).

Setup here: every real trace, each on a fresh device just larger than its footprint (as in
`dftl`),
mapping-only, budgets from 0.5% of the full page-level table to all of it. The selective
scheme uses 4 KiB mapping blocks (one page) so that small budgets hold some; S-FTL needs
room for one uncompressed translation page, so its smallest budgets are missing. Quick mode:
Financial1 at three budgets.
"""

from __future__ import annotations

from pathlib import Path

import ftlab
from ftlab.reproduce._demand_common import (
    available_traces,
    figure,
    fmt,
    full_table_bytes,
    save_figure,
    trace_sets,
    write_table,
)

SCHEMES = ["dftl", "sftl", "tpftl", "selective"]
FRACTIONS = [0.005, 0.01, 0.02, 0.05, 0.10, 0.25, 0.50, 1.0]


def run(out_dir: Path, quick: bool) -> None:
    traces = available_traces(quick)
    if not traces:
        print("skipped: ../shared/traces not found (set FTLAB_SHARED)")
        return
    fractions = [0.01, 0.10, 1.0] if quick else FRACTIONS
    rows = []
    curves: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for name, path, unit in traces:
        sets = [
            *trace_sets(path),
            "replay.timing=false",
            "selective.mapping_block_bytes=4KiB",
        ]
        full = ftlab.simulate("page", trace=path, time_unit=unit, sets=sets).report
        table = full_table_bytes(full)
        for fraction in fractions:
            budget = int(table * fraction)
            row: list[object] = [name, f"{fraction:.1%}", budget]
            for scheme in SCHEMES:
                try:
                    report = ftlab.simulate(
                        scheme,
                        trace=path,
                        time_unit=unit,
                        sets=[*sets, f"dram.budget_bytes={budget}"],
                    ).report
                except ftlab.FtlabError:
                    row.append("-")  # the budget cannot hold the scheme's cache unit
                    continue
                ratio = report["metrics"]["scheme"]["cache_hit_ratio"]
                curves.setdefault((name, scheme), []).append((fraction, ratio))
                row.append(fmt(ratio, 4))
            rows.append(row)
    write_table(
        out_dir,
        "demand_hit_ratio",
        "Mapping-cache hit ratio against the DRAM budget",
        ["trace", "cache / full table", "budget bytes", *SCHEMES],
        rows,
    )
    fig = figure(7.2, 4.2)
    ax = fig.add_subplot(1, 1, 1)
    markers = {"dftl": "o", "sftl": "s", "tpftl": "^", "selective": "d"}
    for (trace, scheme), points in curves.items():
        ax.plot(
            [100 * f for f, _ in points],
            [r for _, r in points],
            marker=markers[scheme],
            linestyle="-" if trace == traces[0][0] else "--",
            label=f"{scheme}, {trace}",
            markersize=4,
        )
    ax.set_xscale("log")
    ax.set_xlabel("mapping cache, % of the full table")
    ax.set_ylabel("hit ratio")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    save_figure(fig, out_dir, "demand_hit_ratio")
