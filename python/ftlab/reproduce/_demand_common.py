"""Helpers shared by the reproductions of the demand-cached schemes (DFTL, S-FTL, TPFTL,
selective mapping-table loading): real traces and devices sized to their footprints, the size of the
full mapping table, tables written as CSV and Markdown, plots written as PNG and SVG."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import ftlab
from ftlab import _core
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


def write_claims(out_dir: Path, checked: Sequence[tuple[str, bool, str]]) -> None:
    """The paper's claims as checked (claim, reproduced, numbers): `claims.json`, which
    the Markdown report reads, and the `claims` table."""
    claims = [{"claim": c, "reproduced": ok, "numbers": n} for c, ok, n in checked]
    (out_dir / "claims.json").write_text(json.dumps({"claims": claims}, indent=2) + "\n")
    write_table(
        out_dir,
        "claims",
        "The paper's claims",
        ["the paper's claim", "reproduced", "numbers"],
        [[c, "yes" if ok else "no", n] for c, ok, n in checked],
    )


def print_claims(checked: Sequence[tuple[str, bool, str]]) -> None:
    """A line per claim: whether it held, and its numbers."""
    for claim, ok, numbers in checked:
        print(f"  [{'yes' if ok else 'NO'}] {claim}: {numbers}")


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


#: A second pass of a trace starts this long after the first one's last request.
PASS_GAP_NS = 1_000_000_000


def write_passes(path: Path, unit: str, sets: list[str], out_dir: Path) -> tuple[Path, Path]:
    """The trace at `path` (read as `sets` read it: its addresses compacted) written once and
    twice in a row (the second pass `PASS_GAP_NS` after the first), as fio iologs in
    `out_dir`: the first pass warms the mapping caches up, so that what the second adds
    (`second_pass`) is measured without first-touch misses. Both files are written the same
    way, so the twice-run's first pass is exactly the once-run."""
    time_unit = [f'trace.time_unit="{unit}"'] if unit else []
    records, _ = _core.trace_requests(path, sets=[*sets, *time_unit])
    start = records[0][0] if records else 0
    span = (records[-1][0] - start) if records else 0
    ops = ("write", "read", "trim")

    def lines(offset_ns: int) -> list[str]:
        return [
            f"{(t - start + offset_ns) // 1000} dev {ops[op]} {off} {length}\n"
            for t, off, length, op in records
        ]

    head = "fio version 3 iolog\n"
    first = lines(0)
    once, twice = out_dir / "once.iolog", out_dir / "twice.iolog"
    once.write_text(head + "".join(first))
    twice.write_text(head + "".join(first) + "".join(lines(span + PASS_GAP_NS)))
    return once, twice


def _counts(report: dict[str, Any]) -> dict[str, float]:
    """Counters that add up over a run: flash traffic, cache lookups, latency totals."""
    m = report["metrics"]
    s = m["scheme"]
    lat = m.get("latency") or {}
    out = {
        "translation_writes": float(m["flash"]["programs"]["translation"]),
        "translation_reads": float(m["flash"]["reads"]["translation"]),
        "hits": float(s.get("cache_hits", 0)),
        "lookups": float(s.get("cache_lookups", 0)),
        "requests": float(m["host"]["requests"]),
    }
    for op in ("read", "write"):
        stats = lat.get(op) or {}
        out[f"{op}_count"] = float(stats.get("count", 0))
        out[f"{op}_total_ns"] = float(stats.get("mean_ns", 0.0)) * out[f"{op}_count"]
    return out


def second_pass(once: dict[str, Any], twice: dict[str, Any]) -> dict[str, float]:
    """What the second pass of `twice` adds to `once` (its first pass): translation reads
    and writes, hit ratio, mean latency in microseconds."""
    a, b = _counts(once), _counts(twice)
    d = {k: b[k] - a[k] for k in a}
    count = d["read_count"] + d["write_count"]
    total = d["read_total_ns"] + d["write_total_ns"]
    return {
        "translation_writes": d["translation_writes"],
        "translation_reads": d["translation_reads"],
        "hit_ratio": d["hits"] / d["lookups"] if d["lookups"] else 1.0,
        "mean_latency_us": total / count / 1000 if count else 0.0,
    }


def saturated(report: dict[str, Any]) -> bool:
    load = report["metrics"].get("load") or {}
    return bool(load.get("saturated") or load.get("saturated_in_bursts"))


def suggested_scale(report: dict[str, Any]) -> float:
    load = report["metrics"].get("load") or {}
    return float(load.get("suggested_time_scale") or 1.0)
