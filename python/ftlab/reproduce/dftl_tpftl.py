"""DFTL (ASPLOS 2009) against TPFTL (EuroSys 2015) on real traces: translation-page writes
and mean response time at equal mapping-cache budgets. TPFTL paper: about 62% fewer
translation-induced writes on average, up to 24% lower response time. TPFTL's baseline is the
2009 DFTL, whose eviction writes back the victim's entry alone (`dftl.batch_writeback=false`);
ftlab's DFTL batches by default, so both are shown.

Setup here: every real trace in shared/traces, each on a fresh device just larger than its
footprint (addresses compacted; 8 parallel units, 4 KiB pages, 128 pages per block, 7%
over-provisioning, no write buffer), replayed open loop at its timestamps, with mapping
caches of 1%, 2%, 5% and 10% of the full page-level table. The average leaves out traces
whose DFTL writes no translation page (read-only ones). Quick mode: Financial1 at 2%.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

FRACTIONS = [0.01, 0.02, 0.05, 0.10]


def mean_latency_us(report: dict[str, Any]) -> float:
    latency = report["metrics"]["latency"]
    read, write = latency["read"], latency["write"]
    count = read["count"] + write["count"]
    total = read["count"] * read["mean_ns"] + write["count"] * write["mean_ns"]
    return float(total / max(count, 1)) / 1000.0


def run(out_dir: Path, quick: bool) -> None:
    traces = available_traces(quick)
    if not traces:
        print("skipped: ../shared/traces not found (set FTLAB_SHARED)")
        return
    fractions = [0.02] if quick else FRACTIONS
    rows = []
    reductions: dict[str, list[tuple[float, float]]] = {}
    for name, path, unit in traces:
        sets = trace_sets(path)

        def simulate(
            scheme: str,
            budget: int,
            extra: tuple[str, ...] = (),
            path: Path = path,
            unit: str = unit,
            sets: list[str] = sets,
        ) -> Any:
            return ftlab.simulate(
                scheme,
                trace=path,
                time_unit=unit,
                sets=[*sets, f"dram.budget_bytes={budget}", *extra],
            ).report

        full = simulate("page", 0)
        table = full_table_bytes(full)
        for fraction in fractions:
            budget = int(table * fraction)
            dftl09 = simulate("dftl", budget, ("dftl.batch_writeback=false",))
            dftl, tpftl = simulate("dftl", budget), simulate("tpftl", budget)
            runs = (dftl09, dftl, tpftl)
            writes = [r["metrics"]["flash"]["programs"]["translation"] for r in runs]
            latency = [mean_latency_us(r) for r in runs]

            def saved(base: float, new: float) -> float:
                return 1.0 - new / base if base else 0.0

            reduction = saved(writes[0], writes[2])
            if writes[0]:
                reductions.setdefault(name, []).append((fraction, reduction))
            rows.append(
                [
                    name,
                    f"{fraction:.0%}",
                    budget,
                    writes[0],
                    writes[1],
                    writes[2],
                    f"{100 * reduction:.1f}%",
                    f"{100 * saved(writes[1], writes[2]):.1f}%",
                    round(latency[0], 1),
                    round(latency[1], 1),
                    round(latency[2], 1),
                    f"{100 * saved(latency[0], latency[2]):.1f}%",
                    fmt(dftl["metrics"]["scheme"]["cache_hit_ratio"], 3),
                    fmt(tpftl["metrics"]["scheme"]["cache_hit_ratio"], 3),
                ]
            )
    all_reductions = [r for points in reductions.values() for _, r in points]
    average = sum(all_reductions) / max(len(all_reductions), 1)
    write_table(
        out_dir,
        "dftl_tpftl",
        "DFTL against TPFTL: translation-page writes and mean response time (TPFTL against "
        f"the 2009 DFTL: {100 * average:.1f}% fewer translation writes on average here; "
        "TPFTL paper: 62%)",
        [
            "trace",
            "cache / full table",
            "budget bytes",
            "DFTL-2009 tr. writes",
            "DFTL tr. writes",
            "TPFTL tr. writes",
            "saved vs DFTL-2009",
            "saved vs DFTL",
            "DFTL-2009 latency us",
            "DFTL latency us",
            "TPFTL latency us",
            "latency saved vs DFTL-2009",
            "DFTL hit ratio",
            "TPFTL hit ratio",
        ],
        rows,
        latency_columns=(8, 9, 10),
    )
    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    for name, points in reductions.items():
        ax.plot([100 * f for f, _ in points], [100 * r for _, r in points], marker="o", label=name)
    ax.axhline(62, color="black", linestyle="--", label="TPFTL paper (-62% on average)")
    ax.set_xscale("log")
    ax.set_xlabel("mapping cache, % of the full table")
    ax.set_ylabel("translation writes TPFTL saves against DFTL-2009, %")
    ax.set_ylim(-50, 100)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, out_dir, "dftl_tpftl")
