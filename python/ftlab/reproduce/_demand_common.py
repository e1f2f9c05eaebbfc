"""Helpers shared by the reproductions of the demand-cached schemes (DFTL, S-FTL, TPFTL,
selective mapping-table loading): real traces and devices sized to their footprints, the size of the
full mapping table, tables written as CSV and Markdown, plots written as PNG and SVG."""

from __future__ import annotations

import csv
import math
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import ftlab
from ftlab._bench import shared_dir
from ftlab._format import latency_table, render_table

# (name, path under shared/traces, time unit ("": the format's own)): the real traces, the
# first being the one quick mode uses.
REAL_TRACES: list[tuple[str, str, str]] = [
    ("Financial1", "ssdsim_hust_financial1/example.ascii", "ns"),
    ("DiskSim validation", "disksim_hpl_validation/ascii.trace", "ms"),
    ("MQSim TPC-C", "mqsim_umass_websearch_tpcc/tpcc-small.trace", "ns"),
    ("MQSim WebSearch", "mqsim_umass_websearch_tpcc/wsrch-small.trace", "ns"),
    (
        "FIU mail",
        "fiu_mail_excerpt/DERIVED_cheetah.cs.fiu.edu-110108-113008.1.head10000.blkparse",
        "",
    ),
    ("MSR Cambridge", "msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv", ""),
    ("Systor'17", "snia_systor17_caffeine_sample/systor17-traces-sample.csv", ""),
    ("Tencent CBS", "tencent_cbs_caffeine_sample/cloud_storage-sample", ""),
    ("CloudPhysics", "cloudphysics_libCacheSim/cloudPhysicsIO.vscsi", ""),
]

# The devices sized to a trace: 4 channels x 2 dies (8 parallel units), 128 pages of 4 KiB
# per block, no write buffer (so that every write reaches the map).
TRACE_DEVICE = [
    "geometry.channels=4",
    "geometry.chips_per_channel=1",
    "geometry.dies_per_chip=2",
    "geometry.planes_per_die=1",
    "geometry.pages_per_block=128",
    "geometry.page_size=4096",
    "ftl.over_provisioning=0.07",
    "buffer.size_bytes=0",
]
TRACE_UNITS = 8
PAGES_PER_BLOCK = 128
PAGE = 4096


def traces_dir() -> Path | None:
    """shared/traces, or None where it is absent."""
    shared = shared_dir()
    if shared is None or not (shared / "traces").is_dir():
        return None
    return shared / "traces"


def available_traces(quick: bool) -> list[tuple[str, Path, str]]:
    """The real traces present (only the first in quick mode)."""
    base = traces_dir()
    if base is None:
        return []
    found = [(n, base / p, u) for n, p, u in REAL_TRACES if (base / p).is_file()]
    return found[:1] if quick else found


def trace_sets(path: Path) -> list[str]:
    """Overrides that replay `path` on a device just larger than its footprint: addresses
    compacted (the pages a trace touches, renumbered densely in address order), 8 parallel
    units, 7% over-provisioning and at least six spare blocks per unit (the demand-cached
    schemes need four: open host, GC and translation blocks, GC reserve)."""
    pages = int(ftlab.trace_info(path).info["footprint_pages"])
    data_blocks = math.ceil(pages / (TRACE_UNITS * PAGES_PER_BLOCK))
    blocks = max(math.ceil(data_blocks / 0.93), data_blocks + 6)
    return [
        *[s for s in TRACE_DEVICE if not s.startswith("ftl.over_provisioning")],
        f"geometry.blocks_per_plane={blocks}",
        f"ftl.over_provisioning={(blocks - data_blocks) / blocks!r}",
        'trace.compact="always"',
        'trace.device_size="config"',
    ]


def entry_bytes(physical_pages: int) -> int:
    """Bytes of a physical page address (as the core sizes it)."""
    bits = max(physical_pages - 1, 1).bit_length()
    return (bits + 7) // 8


def full_table_bytes(report: dict[str, Any]) -> int:
    """Bytes of the whole page-level table of the report's device."""
    device = report["device"]
    return int(device["logical_pages"]) * entry_bytes(int(device["physical_pages"]))


def write_table(
    out_dir: Path,
    name: str,
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
    latency_columns: Collection[int] = (),
) -> str:
    """Writes `name`.csv and `name`.md; returns the table as text (also printed). The
    `latency_columns` hold microseconds: plain numbers in the CSV, readable units
    (`_format.latency`) in the Markdown and the text."""
    with (out_dir / f"{name}.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    header, rows = latency_table(header, rows, latency_columns)
    lines = [f"# {title}", "", "| " + " | ".join(header) + " |"]
    lines.append("|" + "---|" * len(header))
    lines.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)
    (out_dir / f"{name}.md").write_text("\n".join(lines) + "\n")
    text = f"{title}\n\n{render_table(header, rows)}\n"
    print(text)
    return text


def figure(width: float = 6.4, height: float = 4.0) -> Any:
    """A matplotlib figure (matplotlib imported here, so that `ftlab` starts fast)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.figure(figsize=(width, height))


def save_figure(fig: Any, out_dir: Path, name: str) -> None:
    fig.tight_layout()
    # No timestamps in the files: the same inputs give the same bytes.
    fig.savefig(out_dir / f"{name}.png", dpi=120, metadata={"Software": None})
    fig.savefig(out_dir / f"{name}.svg", metadata={"Date": None})
    import matplotlib.pyplot as plt

    plt.close(fig)


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
