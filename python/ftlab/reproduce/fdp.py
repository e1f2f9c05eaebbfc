"""FDP: device write amplification with and without placement (Allison et al., "Towards
Efficient Flash Caches with Emerging NVMe Flexible Data Placement SSDs", EuroSys 2025).

The paper puts CacheLib's two flash engines on separate reclaim-unit handles of an FDP SSD:
BigHash (the small-object cache: small random overwrites of a small region) and BlockCache
(the large-object cache: a circular log written sequentially over the rest). Mixed in the
same erase blocks, the two lifetimes make the device collect garbage; apart, BlockCache's
reclaim units die whole and the device write amplification (DLWA) is about 1 (the paper's
"ideal DLWA of ~1", its headline), with the device full (no host over-provisioning).

Regenerates, as tables (CSV, Markdown) and a plot (PNG, SVG):

- `waf`: the device WAF of one two-stream workload under four placements on the same FDP
  device (`fdp`, 4 handles): **none** (every write on the default handle, as a drive
  without FDP: `fdp.placement = "origin"` with no host stack), **matched** (each stream
  on its own handle: `fdp.placement = "hint"`, the stream read from the trace's device),
  **mixed** (an adversarial placement: each handle gets half of each stream, so every
  reclaim unit mixes the two lifetimes again) and **lifetime** (no host hints: the
  device-side lifetime classifier, `fdp.placement = "lifetime"`);
- `handles`: the FDP statistics per handle of the matched run (host and media bytes).

The workload, CacheLib-like and generated here as a fio iolog with one file per stream: a
BigHash region of 5% of the device taking 80% of the requests (random 4 KiB overwrites) and
a BlockCache log over the rest taking 20% (64 KiB sequential writes, wrapping), so that
about a fifth of the pages written are BigHash's. Both regions are laid out first; the
layout and one more device's worth of writes precondition the device (left out of the
metrics, `precondition.workload_requests`), and the next three devices' worth are measured
(the device is at steady state, mapping-only: WAF does not depend on time).

Setup: 8 parallel units of 64-page blocks, 7% over-provisioning, greedy GC within each
reclaim group, no write buffer. Quick mode: 64 blocks per plane (full: 256).
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import ftlab
from ftlab.reproduce import _summary
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

PAPER = "FDP (EuroSys'25)"
GEOMETRY = [
    "geometry.channels=2",
    "geometry.chips_per_channel=1",
    "geometry.dies_per_chip=2",
    "geometry.planes_per_die=2",
    "geometry.pages_per_block=64",
    "buffer.size_bytes=0",
    "fdp.handles=4",
]
OP = 0.07
BLOCKS_PER_PLANE = 256
QUICK_BLOCKS_PER_PLANE = 64
PAGE = 4096
#: BigHash's share of the device and of the requests; BlockCache's write size.
SMALL_SPACE = 0.05
SMALL_REQUESTS = 0.8
LARGE_PAGES = 16
#: The regions fill this share of the logical space (a margin for rounding).
FILL = 0.98
#: Devices' worth of pages written after the layout: the first preconditions.
PASSES = 4
SEED = 33
#: The paper's headline: DLWA ~1 with the streams on their own handles.
PAPER_MATCHED_WAF = 1.0

PLACEMENTS = [
    ("none", "matched", "origin"),
    ("matched", "matched", "hint"),
    ("mixed (adversarial)", "mixed", "hint"),
    ("lifetime classifier", "matched", "lifetime"),
]


def _logical_pages(blocks_per_plane: int) -> int:
    return int(8 * 64 * blocks_per_plane * (1 - OP))


def write_traces(logical: int, out_dir: Path) -> tuple[Path, Path, int]:
    """The two-stream workload as fio iologs: `matched` (a file per stream) and `mixed`
    (each file half of each stream); the requests that precondition."""
    total = int(logical * FILL)
    small = int(total * SMALL_SPACE)
    large = (total - small) // LARGE_PAGES * LARGE_PAGES
    rng = random.Random(SEED)
    ops: list[tuple[str, int, int]] = []  # (stream, first page, pages)
    for p in range(0, large, LARGE_PAGES):
        ops.append(("large", p, LARGE_PAGES))
    for p in range(0, small, LARGE_PAGES):
        ops.append(("small", p, min(LARGE_PAGES, small - p)))
    layout = len(ops)
    head, written, precondition = 0, 0, 0
    while written < PASSES * logical:
        if written >= logical and not precondition:
            precondition = len(ops)
        if rng.random() < SMALL_REQUESTS:
            ops.append(("small", rng.randrange(small), 1))
            written += 1
        else:
            ops.append(("large", head, LARGE_PAGES))
            head = (head + LARGE_PAGES) % large
            written += LARGE_PAGES
    assert precondition > layout

    def matched(stream: str, page: int) -> tuple[str, int]:
        return ("smallcache" if stream == "small" else "largecache", page)

    half_small, half_large = small // 2, large // 2

    def mixed(stream: str, page: int) -> tuple[str, int]:
        # File k: the k-th half of the small region, then the k-th half of the large one.
        if stream == "small":
            k, off = (0, page) if page < half_small else (1, page - half_small)
            return (f"mix{k}", off)
        k, off = (0, page) if page < half_large else (1, page - half_large)
        size = half_small if k == 0 else small - half_small
        return (f"mix{k}", size + off)

    paths = []
    for name, place in (("matched", matched), ("mixed", mixed)):
        lines = ["fio version 3 iolog\n"]
        # The small stream's file first, so that it is device 0 (handle 0).
        first = "smallcache" if name == "matched" else "mix0"
        lines.append(f"0 {first} write 0 {PAGE}\n")
        for i, (stream, page, pages) in enumerate(ops):
            dev, off = place(stream, page)
            lines.append(f"{i + 1} {dev} write {off * PAGE} {pages * PAGE}\n")
        path = out_dir / f"{name}.iolog"
        path.write_text("".join(lines))
        paths.append(path)
    # The leading line is one more request to leave out.
    return paths[0], paths[1], precondition + 1


def measure(quick: bool) -> list[dict[str, Any]]:
    bpp = QUICK_BLOCKS_PER_PLANE if quick else BLOCKS_PER_PLANE
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        matched, mixed, warm = write_traces(_logical_pages(bpp), Path(tmp))
        traces = {"matched": matched, "mixed": mixed}
        for label, trace, placement in PLACEMENTS:
            sets = [
                *GEOMETRY,
                f"geometry.blocks_per_plane={bpp}",
                f"ftl.over_provisioning={OP}",
                f'fdp.placement="{placement}"',
                f"precondition.workload_requests={warm}",
                'trace.compact="never"',
                'host.stack="inplace"',
            ]
            report = ftlab.simulate(
                "fdp",
                trace=traces[trace],
                format="fio",
                sets=sets,
                precondition="none",
                mapping_only=True,
            ).report
            s = report["metrics"]["scheme"]
            out.append(
                {
                    "label": label,
                    "placement": placement,
                    "waf": report["metrics"]["waf"],
                    "gc_invocations": report["metrics"]["gc"]["invocations"],
                    "handles": [
                        (
                            s.get(f"ruh{h}_host_bytes_written", 0),
                            s.get(f"ruh{h}_media_bytes_written", 0),
                        )
                        for h in range(4)
                    ],
                    "streams": s.get("placement_streams"),
                }
            )
    return out


def claims(rows: list[dict[str, Any]]) -> list[tuple[str, bool, str]]:
    by = {r["label"]: r for r in rows}
    none, matched = by["none"]["waf"], by["matched"]["waf"]
    mixed, lifetime = by["mixed (adversarial)"]["waf"], by["lifetime classifier"]["waf"]
    return [
        (
            "with each stream on its own handle the device WAF is about 1 (within 10%)",
            matched <= 1.1,
            f"{matched:.3f}",
        ),
        (
            "without placement the streams mix and the device collects garbage (WAF above "
            "the matched placement's by 10% or more)",
            none >= 1.1 * matched,
            f"{none:.3f} vs {matched:.3f}",
        ),
        (
            "an adversarial placement (each handle mixing both lifetimes) loses the benefit: "
            "its WAF is nearer no placement's than the matched placement's",
            mixed - matched > none - mixed,
            f"{mixed:.3f} (none {none:.3f}, matched {matched:.3f})",
        ),
        (
            "a lifetime classifier without host hints recovers part of the gap",
            matched <= lifetime < none,
            f"{lifetime:.3f}",
        ),
    ]


def headline_numbers(rows: list[dict[str, Any]]) -> list[Headline]:
    by = {r["label"]: r for r in rows}
    setup = (
        "steady state (the layout and a device's worth of writes precondition), "
        "mapping only, 7% OP, 4 handles; CacheLib-like two streams (fdp.py)"
    )
    shape = "the paper gives DLWA above 1 without FDP, no number used here"
    return [
        Headline(
            PAPER,
            "device WAF with each stream on its own handle (matched placement)",
            by["matched"]["waf"],
            PAPER_MATCHED_WAF,
            "x",
            key="waf_matched",
            setup=setup,
        ),
        Headline(
            PAPER,
            f"device WAF without placement; {shape}",
            by["none"]["waf"],
            None,
            "x",
            key="waf_none",
            setup=setup,
        ),
        Headline(
            PAPER,
            "device WAF with an adversarial placement (each handle mixing both streams); "
            "the paper gives none",
            by["mixed (adversarial)"]["waf"],
            None,
            "x",
            key="waf_adversarial",
            setup=setup,
        ),
        Headline(
            PAPER,
            "device WAF with the device's lifetime classifier (no host hints); the paper "
            "gives none",
            by["lifetime classifier"]["waf"],
            None,
            "x",
            key="waf_lifetime",
            setup=setup,
        ),
    ]


def run(out_dir: Path, quick: bool) -> None:
    rows = measure(quick)
    text = write_table(
        out_dir,
        "waf",
        "Device WAF of the two-stream workload under each placement",
        ["placement", "fdp.placement", "device WAF", "device GCs"],
        [[r["label"], r["placement"], fmt(r["waf"], 3), r["gc_invocations"]] for r in rows],
    )
    matched = next(r for r in rows if r["label"] == "matched")
    write_table(
        out_dir,
        "handles",
        "FDP statistics per handle, matched placement (bytes)",
        ["handle", "host bytes written", "media bytes written", "media / host"],
        [
            [h, int(host), int(media), fmt(media / host if host else None, 3)]
            for h, (host, media) in enumerate(matched["handles"])
        ],
    )
    fig = figure(6.0, 3.6)
    ax = fig.add_subplot(1, 1, 1)
    ax.bar([r["label"] for r in rows], [r["waf"] for r in rows], color="#4477aa")
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_ylabel("device WAF")
    ax.tick_params(axis="x", labelsize=8)
    save_figure(fig, out_dir, "waf")
    checked = claims(rows)
    write_claims(out_dir, checked)
    _summary.write(out_dir, headline_numbers(rows))
    print(f"\n{text}")
    print_claims(checked)
