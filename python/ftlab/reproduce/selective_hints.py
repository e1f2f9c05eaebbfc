"""Selective mapping-table loading (Oh and Ahn, IJASC 2021), figure 6(b): the gain of
keeping the file-system journal's mappings resident (host hints) on a journaling workload.
Paper: about 10% more IOPS (Filebench OLTP on ext4 data=journal, 64 MB mapping cache).

Setup here: the `journal` workload (ext4 data=journal: each write preceded by its journal
record in a circular journal; data writes and 30% reads with a Pareto distribution) on the
`small` device grown to 16 GiB raw with a 128 MiB journal, no write buffer, closed loop at
queue depth 32, mapping caches from 10% to 50% of the full table, with the journal declared
hot (`selective.hot_ranges`) and without (`selective.hints=false`). Mapping blocks of 4 KiB
(5.3 MiB of data each), so that the journal spans 24 of them and those the journal head has
left can go cold; with 64 KiB blocks the journal is two blocks that the head never leaves
idle, and hints change nothing. Quick mode: the `default` device, an 8 MiB journal, 20,000
requests.
"""

from __future__ import annotations

from pathlib import Path

import ftlab
from ftlab.reproduce._demand_common import (
    figure,
    fmt,
    full_table_bytes,
    save_figure,
    write_table,
)


def run(out_dir: Path, quick: bool) -> None:
    if quick:
        preset = "legacy"
        journal = 8 << 20
        base = ["workload.requests=20000", "selective.mapping_block_bytes=4KiB"]
        fractions = [0.25]
    else:
        preset = "small"
        journal = 128 << 20
        base = [
            "geometry.blocks_per_plane=1024",
            "workload.requests=400000",
            "selective.mapping_block_bytes=4KiB",
        ]
        fractions = [0.10, 0.16, 0.25, 0.50]
    common = [
        *base,
        "buffer.size_bytes=0",
        "replay.mode=closed",
        "replay.queue_depth=32",
        f"workload.journal_bytes={journal}",
        f"workload.start_offset_bytes={journal}",
        f"selective.hot_ranges=[[0, {journal}]]",
    ]
    full = ftlab.simulate(
        "selective", workload="journal", preset=preset, sets=[*common, "dram.budget_bytes=0"]
    ).report
    table = full_table_bytes(full)
    rows = []
    gains = []
    for fraction in fractions:
        iops = {}
        for hints in (False, True):
            report = ftlab.simulate(
                "selective",
                workload="journal",
                preset=preset,
                sets=[
                    *common,
                    f"dram.budget_bytes={int(table * fraction)}",
                    f"selective.hints={'true' if hints else 'false'}",
                ],
            ).report
            m = report["metrics"]
            s = m["scheme"]
            iops[hints] = m["iops"]
            rows.append(
                [
                    f"{fraction:.0%}",
                    "journal hinted" if hints else "no hints",
                    fmt(m["iops"], 0),
                    fmt(s["cache_hit_ratio"], 4),
                    int(s["hot_range_misses"]),
                    int(s["cache_misses"]),
                    m["flash"]["reads"]["translation"],
                    m["flash"]["programs"]["translation"],
                ]
            )
        gains.append((fraction, iops[True] / iops[False] - 1.0))
    rows.append(["100%", "full table", fmt(full["metrics"]["iops"], 0), "1.0000", 0, 0, 0, 0])
    write_table(
        out_dir,
        "selective_hints",
        "Selective mapping-table loading: journal hints on a journaling workload "
        "(paper: about 10% more IOPS)",
        [
            "cache / full table",
            "policy",
            "IOPS",
            "hit ratio",
            "journal misses",
            "misses",
            "translation reads",
            "translation writes",
        ],
        rows,
    )
    write_table(
        out_dir,
        "selective_hints_gain",
        "IOPS gain of the journal hints",
        ["cache / full table", "IOPS gain"],
        [[f"{f:.0%}", f"{100 * g:+.1f}%"] for f, g in gains],
    )
    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    labels = [f"{f:.0%}" for f, _ in gains]
    ax.bar(labels, [100 * g for _, g in gains], color="tab:blue", label="ftlab")
    ax.axhline(10, color="black", linestyle="--", label="paper (+10%)")
    ax.set_xlabel("mapping cache, % of the full table")
    ax.set_ylabel("IOPS gain of journal hints, %")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, out_dir, "selective_hints")
