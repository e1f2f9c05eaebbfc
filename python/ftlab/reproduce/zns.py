"""ZNS against block-interface SSDs (Bjørling et al., "ZNS: Avoiding the Block Interface Tax
for Flash-based SSDs", USENIX ATC 2021), and AMF's file system on a standard zoned device.

Regenerates, as tables (CSV, Markdown) and plots (PNG, SVG):

- Figure 1 (`figure1`, `throughput`): write throughput against data written, on one flash
  array behind three interfaces: a block-interface SSD (page-mapped FTL, greedy GC) with 7%
  and with 28% over-provisioning under uniform random 4 KiB writes, and a ZNS SSD written
  as a zoned host writes it (the paper's figure: zones filled in order and reset before
  they are written again; here ALFS over sequential 4 KiB writes, whose cleaning then moves
  nothing). Each overwrites its usable capacity four times, as the paper's workload does.
  The paper's shape: the block SSD's throughput falls once its GC starts (after the first
  capacity written), the ZNS SSD's stays, and more over-provisioning buys throughput back
  at the price of capacity. A fourth line, the same random writes on the ZNS SSD through
  ALFS, shows what the host then pays itself (its cleaning: file-system WAF).
- `amf_on_zns`: AMF's ALFS on a standard ZNS device against ALFS on AMF's own AFTL, on
  AMF's workloads and a real trace: file-system, device and total WAF and the device's
  mapping DRAM. A zone of one block per parallel unit is an AFTL segment, so the two
  should write the flash alike; the zoned device's open and active limits, and its zone
  state, are what the standard adds.

Setup. One flash array for Figure 1: 8 parallel units of 64-page blocks, 4 KiB pages, the
default timing; no write buffer. The devices start **fresh** and the replays are
**saturated on purpose**: closed loop at queue depth 32, as the paper's multi-threaded
writer, so that throughput is what the device sustains and the fall when GC starts shows
(a preconditioned device would hide the transition the figure is about). Throughput is the
device's host writes per second between samples of the run's time series. The ZNS device
keeps the geometry's minimum of three spare blocks per unit (about 5%: the paper's ZNS
SSD has 0%; ftlab's geometry rules keep three blocks per unit for every scheme). The
`amf_on_zns` runs are mapping-only on the same array preconditioned to steady state
(`precondition steady`, through the file system): WAF and DRAM do not depend on time.

The paper gives Figure 1 as a shape, not numbers: the headlines with a paper value are the
ZNS device's write amplification (1: it collects no garbage) and its throughput kept
(flat in the figure: 1); the block SSDs' falls are checked as the shape (`claims.json`).

Quick mode (tests): 64 blocks per plane (a 128 MiB array; the full mode: 256, 512 MiB),
40,000 requests per AMF workload (full: 200,000), the real trace left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ftlab
from ftlab._bench import shared_dir
from ftlab.reproduce import _footing, _summary
from ftlab.reproduce._demand_common import (
    figure,
    fmt,
    print_claims,
    save_figure,
    write_claims,
    write_table,
)
from ftlab.reproduce._summary import Headline

DEVICE_MODEL = "current"

PAPER = "ZNS (ATC'21)"
PAPER_AMF = "ZNS (ATC'21) / AMF (FAST'16)"
#: The flash array of Figure 1: 2 channels x 2 dies x 2 planes (8 units), 64-page blocks.
GEOMETRY = [
    "geometry.channels=2",
    "geometry.chips_per_channel=1",
    "geometry.dies_per_chip=2",
    "geometry.planes_per_die=2",
    "geometry.pages_per_block=64",
    "buffer.size_bytes=0",
]
BLOCKS_PER_PLANE = 256
QUICK_BLOCKS_PER_PLANE = 64
#: Bytes of a page (the default geometry's, which every run here keeps).
PAGE = 4096
#: The ZNS device's over-provisioning: the geometry's three spare blocks per unit.
ZNS_OP_BLOCKS = 3
#: Closed loop at the paper's queue depth of a multi-threaded writer.
REPLAY = ['replay.mode="closed"', "replay.queue_depth=32"]
#: Usable capacity overwritten this many times (the paper's "four times").
OVERWRITES = 4
#: Samples of the time series over a run.
SAMPLES = 40
#: Throughput when fresh: the first share of the data written (before GC can start, which
#: is after one capacity, a quarter of the run); steady: the last quarter.
FRESH_SHARE = 0.2
STEADY_SHARE = 0.25
#: The paper's values where it gives one: ZNS collects no garbage (device WAF 1) and its
#: throughput in Figure 1 is flat (kept: 1).
PAPER_ZNS_WAF = 1.0
PAPER_ZNS_KEPT = 1.0
#: AMF's workloads for ALFS on ZNS against ALFS on AFTL, and the real trace (full mode).
AMF_WORKLOADS = ["fio-rand-write", "hotcold"]
AMF_TRACE = ("MSR Cambridge", "msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv")
AMF_REQUESTS = 200_000
QUICK_AMF_REQUESTS = 40_000


def _pages(blocks_per_plane: int) -> int:
    return 8 * 64 * blocks_per_plane


def _line_runs(blocks_per_plane: int) -> list[tuple[str, str, float, str]]:
    """(label, scheme, over-provisioning, workload) of Figure 1's lines."""
    zns_op = ZNS_OP_BLOCKS / blocks_per_plane + 0.001
    return [
        ("Block SSD (7% OP)", "page", 0.07, "rand-write"),
        ("Block SSD (28% OP)", "page", 0.28, "rand-write"),
        ("ZNS SSD (zone writer)", "zns", zns_op, "seq-write"),
        ("ZNS SSD + ALFS, random writes", "zns", zns_op, "rand-write"),
    ]


def _figure1_run(blocks_per_plane: int, scheme: str, op: float, workload: str) -> dict[str, Any]:
    usable = int(_pages(blocks_per_plane) * (1 - op))
    requests = OVERWRITES * usable
    sets = [
        *GEOMETRY,
        f"geometry.blocks_per_plane={blocks_per_plane}",
        f"ftl.over_provisioning={op}",
        *REPLAY,
        f"workload.requests={requests}",
        "workload.read_ratio=0",
        "workload.request_sizes_bytes=[4096]",
        "workload.request_size_weights=[1.0]",
        f"metrics.sample_every_requests={max(1, requests // SAMPLES)}",
        # One sequential run, wrapping: a zone writer, never jumping elsewhere.
        f"workload.sequential_run_requests={requests}",
    ]
    return ftlab.simulate(scheme, workload=workload, sets=sets, precondition="none").report


def throughput_curve(report: dict[str, Any]) -> list[tuple[float, float]]:
    """(GiB written by the host, MiB/s between this sample and the previous) of a run."""
    ts = report["metrics"]["time_series"]
    page = PAGE
    out = []
    for i in range(1, len(ts["request"])):
        dt = ts["time_ns"][i] - ts["time_ns"][i - 1]
        dp = ts["host_pages_written"][i] - ts["host_pages_written"][i - 1]
        if dt > 0:
            out.append((ts["host_pages_written"][i] * page / 2**30, dp * page / 2**20 / (dt / 1e9)))
    return out


def _mean_between(curve: list[tuple[float, float]], lo: float, hi: float) -> float | None:
    """Mean throughput over the samples whose data written lies in [lo, hi) of the run's."""
    if not curve:
        return None
    end = curve[-1][0]
    xs = [t for x, t in curve if lo * end <= x < hi * end or (hi >= 1 and x == end)]
    return sum(xs) / len(xs) if xs else None


def figure1(quick: bool) -> list[dict[str, Any]]:
    bpp = QUICK_BLOCKS_PER_PLANE if quick else BLOCKS_PER_PLANE
    lines = []
    for label, scheme, op, workload in _line_runs(bpp):
        report = _figure1_run(bpp, scheme, op, workload)
        s = ftlab.summarize(report)
        curve = throughput_curve(report)
        lines.append(
            {
                "label": label,
                "scheme": scheme,
                "op": op,
                "report": report,
                "curve": curve,
                "fresh": _mean_between(curve, 0.0, FRESH_SHARE),
                "steady": _mean_between(curve, 1.0 - STEADY_SHARE, 1.0),
                "waf": s["waf"],
                "fs_waf": s["fs_waf"],
                "total_waf": s["total_waf"],
                "gc_invocations": report["metrics"]["gc"]["invocations"],
                "usable_bytes": int(_pages(bpp) * (1 - op)) * PAGE,
            }
        )
    return lines


def amf_on_zns(quick: bool) -> list[dict[str, Any]]:
    """ALFS on ZNS and on AFTL: WAF (fs, device, total) and device DRAM, per source."""
    requests = QUICK_AMF_REQUESTS if quick else AMF_REQUESTS
    bpp = QUICK_BLOCKS_PER_PLANE if quick else BLOCKS_PER_PLANE
    sources: list[tuple[str, dict[str, Any]]] = [
        (w, {"workload": w, "sets": [f"workload.requests={requests}"]}) for w in AMF_WORKLOADS
    ]
    shared = shared_dir()
    if not quick and shared is not None:
        path = shared / "traces" / AMF_TRACE[1]
        if path.is_file():
            sources.append((AMF_TRACE[0], {"trace": path, "sets": []}))
    rows = []
    for name, source in sources:
        by: dict[str, dict[str, Any]] = {}
        for scheme in ("aftl", "zns"):
            report = ftlab.simulate(
                f"alfs+{scheme}",
                trace=source.get("trace"),
                workload=source.get("workload"),
                sets=[*GEOMETRY, f"geometry.blocks_per_plane={bpp}", *source["sets"]],
                precondition="steady",
                mapping_only=True,
            ).report
            s = ftlab.summarize(report)
            by[scheme] = {
                "fs_waf": s["fs_waf"],
                "waf": s["waf"],
                "total_waf": s["total_waf"],
                "dram": report["metrics"]["memory_bytes"]["final_total"],
            }
        rows.append({"source": name, **{k: v for k, v in by.items()}})
    return rows


def claims(lines: list[dict[str, Any]], amf: list[dict[str, Any]]) -> list[tuple[str, bool, str]]:
    by = {line["label"]: line for line in lines}
    b7, b28 = by["Block SSD (7% OP)"], by["Block SSD (28% OP)"]
    z, zr = by["ZNS SSD (zone writer)"], by["ZNS SSD + ALFS, random writes"]

    def kept(line: dict[str, Any]) -> float:
        return float(line["steady"] or 0) / float(line["fresh"] or 1)

    out = [
        (
            "the block SSD's throughput falls once its GC starts (7% OP: steady below 60% of "
            "fresh)",
            kept(b7) < 0.6,
            f"kept {kept(b7):.2f}",
        ),
        (
            "the ZNS SSD's throughput does not fall (steady within 10% of fresh)",
            kept(z) >= 0.9,
            f"kept {kept(z):.2f}",
        ),
        (
            "more over-provisioning buys throughput back (28% OP steady above 7% OP steady)",
            float(b28["steady"] or 0) > float(b7["steady"] or 0),
            f"{fmt(b28['steady'], 0)} vs {fmt(b7['steady'], 0)} MiB/s",
        ),
        (
            "the ZNS SSD sustains more than either block SSD",
            float(z["steady"] or 0) > max(float(b7["steady"] or 0), float(b28["steady"] or 0)),
            f"{fmt(z['steady'], 0)} MiB/s",
        ),
        (
            "the ZNS SSD does no device GC (device WAF 1), whatever the host writes",
            z["waf"] == 1.0 and zr["waf"] == 1.0 and z["gc_invocations"] == 0,
            f"{z['waf']}, {zr['waf']}",
        ),
        (
            "random writes on ZNS move the GC to the host (ALFS's file-system WAF above 1)",
            float(zr["fs_waf"] or 0) > 1.0,
            f"fs WAF {fmt(zr['fs_waf'], 2)}",
        ),
    ]
    for row in amf:
        a, zz = row["aftl"], row["zns"]
        same = abs(float(a["total_waf"]) - float(zz["total_waf"])) <= 0.02 * float(a["total_waf"])
        out.append(
            (
                f"ALFS writes the flash alike on ZNS and on AFTL ({row['source']})",
                same,
                f"total WAF {fmt(zz['total_waf'], 3)} vs {fmt(a['total_waf'], 3)}",
            )
        )
    return out


def headline_numbers(lines: list[dict[str, Any]], amf: list[dict[str, Any]]) -> list[Headline]:
    by = {line["label"]: line for line in lines}
    b7, b28 = by["Block SSD (7% OP)"], by["Block SSD (28% OP)"]
    z = by["ZNS SSD (zone writer)"]
    setup = (
        "fresh device, closed loop at queue depth 32 (saturated on purpose: throughput is "
        f"what the device sustains), usable capacity written {OVERWRITES} times; fresh = "
        f"first {FRESH_SHARE:.0%} of the data written, steady = last {STEADY_SHARE:.0%}"
    )

    def ratio(a: float | None, b: float | None) -> float | None:
        return None if a is None or not b else a / b

    shape = "the paper gives the shape (Figure 1), no number"
    out = [
        Headline(
            PAPER,
            "ZNS SSD device WAF under its zone writer (no device GC)",
            z["waf"],
            PAPER_ZNS_WAF,
            "x",
            key="zns_device_waf",
            setup=setup,
        ),
        Headline(
            PAPER,
            "ZNS SSD throughput kept: steady over fresh (Figure 1: flat)",
            ratio(z["steady"], z["fresh"]),
            PAPER_ZNS_KEPT,
            "x",
            key="zns_throughput_kept",
            setup=setup,
        ),
        Headline(
            PAPER,
            f"block SSD (7% OP) throughput kept: steady over fresh; {shape} (falls)",
            ratio(b7["steady"], b7["fresh"]),
            None,
            "x",
            key="block7_throughput_kept",
            setup=setup,
        ),
        Headline(
            PAPER,
            f"block SSD (28% OP) throughput kept: steady over fresh; {shape} (falls less)",
            ratio(b28["steady"], b28["fresh"]),
            None,
            "x",
            key="block28_throughput_kept",
            setup=setup,
        ),
        Headline(
            PAPER,
            f"ZNS steady throughput over the 7% OP block SSD's; {shape}",
            ratio(z["steady"], b7["steady"]),
            None,
            "x",
            key="zns_vs_block7_steady",
            setup=setup,
        ),
        Headline(
            PAPER,
            f"block SSD (7% OP) device WAF under random writes; {shape}",
            b7["waf"],
            None,
            "x",
            key="block7_waf",
            setup=setup,
        ),
        Headline(
            PAPER,
            f"block SSD (28% OP) device WAF under random writes; {shape}",
            b28["waf"],
            None,
            "x",
            key="block28_waf",
            setup=setup,
        ),
    ]
    for row in amf:
        key = row["source"].lower().replace(" ", "_").replace("-", "_")
        out.append(
            Headline(
                PAPER_AMF,
                f"ALFS total WAF on ZNS over ALFS on AFTL ({row['source']}); neither paper "
                "compares them",
                ratio(row["zns"]["total_waf"], row["aftl"]["total_waf"]),
                None,
                "x",
                key=f"alfs_zns_vs_aftl_{key}",
                setup="steady-state preconditioned device, mapping only, no write buffer",
            )
        )
    return out


def _plot(out_dir: Path, lines: list[dict[str, Any]]) -> None:
    fig = figure(7.0, 4.2)
    ax = fig.add_subplot(1, 1, 1)
    styles = ["-", "--", "-", ":"]
    for line, style in zip(lines, styles, strict=True):
        curve = line["curve"]
        ax.plot([x for x, _ in curve], [t for _, t in curve], style, label=line["label"])
    ax.set_xlabel("data written (GiB)")
    ax.set_ylabel("throughput (MiB/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, out_dir, "figure1")


def run(out_dir: Path, quick: bool) -> None:
    lines = figure1(quick)
    _footing.common_scheduling(
        [line["report"] for line in lines if line["scheme"] == "page"], "zns figure 1"
    )
    rows = [
        [
            line["label"],
            f"{line['op']:.1%}",
            round(line["usable_bytes"] / 2**20),
            fmt(line["fresh"], 1),
            fmt(line["steady"], 1),
            fmt((line["steady"] or 0) / (line["fresh"] or 1), 3),
            fmt(line["fs_waf"], 3),
            fmt(line["waf"], 3),
            fmt(line["total_waf"], 3),
            line["gc_invocations"],
        ]
        for line in lines
    ]
    text = write_table(
        out_dir,
        "throughput",
        "Figure 1: write throughput fresh and steady, write amplification",
        [
            "device",
            "OP",
            "usable MiB",
            "fresh MiB/s",
            "steady MiB/s",
            "kept",
            "FS WAF",
            "device WAF",
            "total WAF",
            "device GCs",
        ],
        rows,
    )
    series_rows = [
        [line["label"], fmt(x, 4), fmt(t, 1)] for line in lines for x, t in line["curve"]
    ]
    write_table(
        out_dir,
        "figure1",
        "Figure 1: throughput against data written",
        ["device", "GiB written", "MiB/s"],
        series_rows,
    )
    _plot(out_dir, lines)
    amf = amf_on_zns(quick)
    amf_text = write_table(
        out_dir,
        "amf_on_zns",
        "ALFS on a standard ZNS device against ALFS on AFTL",
        [
            "source",
            "AFTL FS WAF",
            "AFTL device WAF",
            "AFTL total",
            "ZNS FS WAF",
            "ZNS device WAF",
            "ZNS total",
            "AFTL DRAM bytes",
            "ZNS DRAM bytes",
        ],
        [
            [
                row["source"],
                fmt(row["aftl"]["fs_waf"], 3),
                fmt(row["aftl"]["waf"], 3),
                fmt(row["aftl"]["total_waf"], 3),
                fmt(row["zns"]["fs_waf"], 3),
                fmt(row["zns"]["waf"], 3),
                fmt(row["zns"]["total_waf"], 3),
                row["aftl"]["dram"],
                row["zns"]["dram"],
            ]
            for row in amf
        ],
    )
    checked = claims(lines, amf)
    write_claims(out_dir, checked)
    _summary.write(out_dir, headline_numbers(lines, amf))
    print(f"\n{text}\n{amf_text}")
    print_claims(checked)
