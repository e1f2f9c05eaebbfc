"""Selective mapping-table loading (Oh and Ahn, IJASC 2021), figure 6(a): throughput of fio
random writes with a Pareto distribution when the mapping cache holds 25%, 32%, 50% and 75%
of the full page-level table, relative to the whole table in memory. Paper: about 80% of the
throughput at 32% of the memory (400 GB open-channel SSD, 64 KiB mapping blocks).

Setup here: the `small` device grown to 16 GiB raw (32 parallel units on 16 dies; the full
table is 11.7 MB, 179 mapping blocks of 64 KiB), no write buffer, fio-like closed loop
(queue depth 32), 4 KiB random writes, Pareto h = 0.2 over the whole device. fio hashes the
Pareto ranks over the file (`scattered`); the `clustered` series keeps rank order (the hot
pages together), the case where mapping blocks have the locality the scheme relies on. A
third series uses 4 KiB mapping blocks. Quick mode: the 256 MiB `default` device, 4 KiB
mapping blocks, 20,000 requests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ftlab
from ftlab.reproduce._demand_common import (
    figure,
    fmt,
    full_table_bytes,
    save_figure,
    write_table,
)

FRACTIONS = [0.25, 0.32, 0.50, 0.75]


def _run(sets: list[str], preset: str) -> dict[str, Any]:
    return ftlab.simulate("selective", workload="pareto", preset=preset, sets=sets).report


def run(out_dir: Path, quick: bool) -> None:
    if quick:
        preset = "legacy"
        base = ["workload.requests=20000", "selective.mapping_block_bytes=4KiB"]
        series = {"scattered, 4 KiB blocks": ["workload.scatter_ranks=true"]}
    else:
        preset = "small"
        base = ["geometry.blocks_per_plane=1024", "workload.requests=400000"]
        series = {
            "scattered (fio), 64 KiB blocks": ["workload.scatter_ranks=true"],
            "clustered, 64 KiB blocks": ["workload.scatter_ranks=false"],
            "clustered, 4 KiB blocks": [
                "workload.scatter_ranks=false",
                "selective.mapping_block_bytes=4KiB",
            ],
        }
    common = [*base, "buffer.size_bytes=0", "replay.mode=closed", "replay.queue_depth=32"]
    rows = []
    curves: dict[str, list[tuple[float, float]]] = {}
    for name, extra in series.items():
        full = _run([*common, *extra, "dram.budget_bytes=0"], preset)
        table = full_table_bytes(full)
        full_throughput = full["metrics"]["throughput_bytes_per_s"]
        points = []
        for fraction in [*FRACTIONS, 1.0]:
            if fraction == 1.0:
                report = full
            else:
                budget = int(table * fraction)
                report = _run([*common, *extra, f"dram.budget_bytes={budget}"], preset)
            m = report["metrics"]
            s = m["scheme"]
            relative = m["throughput_bytes_per_s"] / full_throughput
            points.append((fraction, relative))
            rows.append(
                [
                    name,
                    f"{fraction:.0%}",
                    int(s["cache_slots"]),
                    int(s["mapping_blocks"]),
                    fmt(m["throughput_bytes_per_s"] / 1e6, 1),
                    fmt(relative, 3),
                    fmt(s["cache_hit_ratio"], 3),
                    m["flash"]["reads"]["translation"],
                    m["flash"]["programs"]["translation"],
                ]
            )
        curves[name] = points
    write_table(
        out_dir,
        "selective_tradeoff",
        "Selective mapping-table loading: throughput against mapping-cache size "
        "(paper: ~80% of the full table's throughput at 32% of its memory)",
        [
            "series",
            "cache / full table",
            "cache slots",
            "mapping blocks",
            "throughput MB/s",
            "relative to full table",
            "hit ratio",
            "translation reads",
            "translation writes",
        ],
        rows,
    )
    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    for name, points in curves.items():
        ax.plot([100 * f for f, _ in points], [100 * r for _, r in points], marker="o", label=name)
    ax.scatter([32], [80], marker="*", s=160, color="black", zorder=5, label="paper (32%, 80%)")
    ax.set_xlabel("mapping cache, % of the full table")
    ax.set_ylabel("throughput, % of the full table in memory")
    ax.set_ylim(0, 105)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, out_dir, "selective_tradeoff")
