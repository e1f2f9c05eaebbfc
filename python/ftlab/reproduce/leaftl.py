"""LeaFTL (Sun et al., ASPLOS 2023) against DFTL and S-FTL on every real trace.

Regenerates, as tables (CSV, Markdown) and plots (PNG, SVG), on every trace of
../shared/traces that ftlab reads and that writes at least `MIN_PAGE_WRITES` pages:

- mapping-table memory of DFTL, S-FTL and LeaFTL (γ = 0) under one accounting, the
  reference artifact's (leaftl.md sections 3.8 and 4): DFTL 8 bytes per cached entry,
  S-FTL 4 bytes per run head plus 2 bits per entry and 4 bytes per cached translation page
  (`sftl.bits_per_entry = 2`), LeaFTL 8 bytes per segment (5 for a single point), its CRB
  entries and 4 bytes per group; the whole table in DRAM (paper: 2.9x less than S-FTL on
  average; the artifact's plots show 6 to 18x less than DFTL);
- LeaFTL's misprediction ratio and memory for γ in {0, 1, 4, 16} (paper: under 10% at
  γ = 16, memory about 1.3x smaller than at γ = 0);
- mean request latency of the three with the same DRAM (paper: LeaFTL 1.4x better than
  S-FTL on average), LeaFTL with the artifact's block placement and with stripe placement;
- where lookups find their segment, by level (paper: about 90% at the first level).

Setup, as the artifact's: the `leaftl` preset's device (16 channels x 4 chips x 2 planes,
256 pages per block, 4 KiB pages, 128 B OOB, 20/200/1500 us, 20% over-provisioning, an 8 MiB
sorted write buffer with the reference's group filtering, shared by the three schemes),
with as many blocks per plane as make the trace's footprint fill at most half the logical
space and at least 2^24 logical pages, so that page addresses take 4 bytes as on the
paper's 2 TiB device; replay closed loop at queue depth 1, as the artifact does (it ignores
the timestamps). The artifact's DRAM split: 1 GiB per 2 TiB of capacity; DFTL keeps
1/128 of it as data cache and the rest for its mapping cache; S-FTL and LeaFTL get 0.9 of
their mapping table estimated at device scale (bytes per page written in a first,
mapping-only run, per distinct page written, times the logical pages) and the rest is
data cache, which also caches reads (`buffer.cache_reads`): a smaller table buys a larger
data cache.

The quick mode (tests) replays the first two traces on a smaller device.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import ftlab
from ftlab._bench import shared_dir
from ftlab._format import latency_table, render_table

PRESET = "leaftl"
UNITS = 16 * 4 * 2
PAGES_PER_BLOCK = 256
PAGE_BYTES = 4096
OVER_PROVISIONING = 0.2
# At least 2^24 logical pages: 4-byte page addresses, as on the paper's 2 TiB device.
MIN_BLOCKS_PER_PLANE = math.ceil(2**24 / (UNITS * PAGES_PER_BLOCK * (1 - 0.2))) + 8
QUICK_BLOCKS_PER_PLANE = 24
MIN_PAGE_WRITES = 4096
GAMMAS = [0, 1, 4, 16]
SCHEMES = ["dftl", "sftl", "leaftl"]
# LeaFTL places a sorted flush a block at a time, as the artifact does; with the timing
# model's NAND (no cache programming) a 2,048-page flush then lands on 8 dies and a
# multi-page read on one. Stripe placement spreads pages over the units as DFTL and S-FTL
# do and learns over stripe order (exact segments only).
STRIPED = 'leaftl.placement="stripe"'
TIMED = ["dftl", "sftl", "leaftl", "leaftl-striped"]
CLOSED_LOOP = ["replay.mode=closed", "replay.queue_depth=1"]
# The artifact's DRAM: 1 GiB for 2 TiB; DFTL's data cache 8 MiB of it.
DRAM_PER_CAPACITY = 1 / 2048
DFTL_DATA_CACHE_SHARE = 1 / 128
ESTIMATE_SHARE = 0.9
FLUSH_BYTES = 8 * 2**20

PAPER: dict[str, Any] = {
    "memory_vs_sftl": 2.9,
    "memory_vs_dftl": "6-18x (artifact plots)",
    "misprediction_gamma16": "< 10%",
    "memory_gamma16_vs_0": 1.3,
    "latency_vs_sftl": 1.4,
    "level1_share": 0.9,
}

SKIP_NAMES = ("LICENSE", "PROVENANCE", "README", "COPYING", "license", "readme")


def _candidates(traces: Path) -> list[Path]:
    """Every trace file, a compressed copy skipped when the plain file is there."""
    files = []
    for folder in sorted(p for p in traces.iterdir() if p.is_dir()):
        for f in sorted(folder.iterdir()):
            if not f.is_file() or f.name.startswith(SKIP_NAMES) or f.suffix == ".json":
                continue
            if f.suffix in (".gz", ".bz2", ".xz", ".zst") and f.with_suffix("").exists():
                continue
            files.append(f)
    return files


def select_traces(traces: Path) -> tuple[list[tuple[Path, dict[str, Any]]], list[str]]:
    """The traces ftlab reads that write at least MIN_PAGE_WRITES pages, with their
    `trace info`; and a note for every file left out, saying why."""
    chosen: list[tuple[Path, dict[str, Any]]] = []
    notes = []
    # One trace in two encodings (CloudPhysics' .vscsi and .csv, FIU's native and pandas
    # files) counts once: the same requests and pages in the same folder. The binary
    # .vscsi keeps microsecond times where the .csv has whole seconds: it is preferred.
    seen: dict[tuple[Any, ...], str] = {}
    for f in sorted(_candidates(traces), key=lambda f: (f.parent.name, f.suffix != ".vscsi")):
        name = f"{f.parent.name}/{f.name}"
        try:
            info = ftlab.trace_info(f).info
        except ftlab.FtlabError as e:
            notes.append(f"{name}: not read ({str(e).splitlines()[0][:160]})")
            continue
        writes = info.get("page_writes") or 0
        if writes < MIN_PAGE_WRITES:
            notes.append(f"{name}: {writes} page writes, fewer than {MIN_PAGE_WRITES}")
            continue
        same = (f.parent, *(info.get(k) for k in SAME_TRACE_KEYS))
        if same in seen:
            notes.append(f"{name}: the same trace as {seen[same]} in another encoding")
            continue
        seen[same] = name
        chosen.append((f, info))
    chosen.sort(key=lambda c: (c[0].parent.name, c[0].name))
    return chosen, notes


#: `trace info` figures that two encodings of one trace share.
SAME_TRACE_KEYS = (
    "requests",
    "read_ratio",
    "footprint_pages",
    "page_writes",
    "min_offset_bytes",
    "max_end_bytes",
)


def device_sets(info: dict[str, Any], quick: bool) -> list[str]:
    if quick:
        blocks = QUICK_BLOCKS_PER_PLANE
    else:
        footprint = info["footprint_pages"]
        per_block_row = UNITS * PAGES_PER_BLOCK * (1 - OVER_PROVISIONING)
        blocks = max(MIN_BLOCKS_PER_PLANE, math.ceil(2 * footprint / per_block_row))
    return [f"geometry.blocks_per_plane={blocks}", f"ftl.over_provisioning={OVER_PROVISIONING}"]


def mapping_bytes(report: dict[str, Any]) -> int:
    """The scheme's mapping table (or cache) at the end of the run, by the accounting of
    the module docstring."""
    m = report["metrics"]
    parts = m["memory_bytes"]["final_components"]
    ftl = report["ftl"]
    if ftl == "dftl":
        return int(parts["cmt"])
    if ftl == "sftl":
        return int(parts["cached_pages"] + parts.get("dirty_buffer", 0))
    if ftl == "leaftl":
        return int(m["scheme"]["mapping_table_bytes"])
    raise ValueError(ftl)


def scheme_sets(scheme: str, gamma: int = 0) -> list[str]:
    if scheme == "leaftl":
        return [f"leaftl.gamma={gamma}"]
    if scheme == "sftl":
        return ["sftl.bits_per_entry=2"]
    return []


def levels(report: dict[str, Any]) -> list[float]:
    """Share of lookups answered at levels 1, 2, ... (the last bucket: beyond 32)."""
    s = report["metrics"]["scheme"]
    counts = [s[k] for k in sorted(k for k in s if k.startswith("lookup_level."))]
    total = sum(counts)
    return [c / total if total else 0.0 for c in counts]


def latency_mean_us(report: dict[str, Any]) -> float:
    lat = report["metrics"]["latency"]
    n = lat["read"]["count"] + lat["write"]["count"]
    if n == 0:
        return 0.0
    total = lat["read"]["mean_ns"] * lat["read"]["count"]
    total += lat["write"]["mean_ns"] * lat["write"]["count"]
    return float(total / n) / 1000


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def _markdown(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _fmt(x: float, digits: int = 2) -> str:
    return f"{x:,.{digits}f}"


def _geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


def run(out_dir: Path, quick: bool) -> None:
    shared = shared_dir()
    traces_dir = shared / "traces" if shared else None
    if traces_dir is None or not traces_dir.is_dir():
        print("../shared/traces not found (set FTLAB_SHARED): nothing to reproduce")
        (out_dir / "README.md").write_text("No traces found (set FTLAB_SHARED).\n")
        return
    chosen, notes = select_traces(traces_dir)
    if quick:
        chosen = chosen[:2]
    memory_rows, gamma_rows, latency_rows, level_rows = [], [], [], []
    level_curves: dict[str, list[float]] = {}
    for path, info in chosen:
        name = f"{path.parent.name}/{path.name}"
        print(f"{name}: {info['requests']:,} requests, {info['page_writes']:,} page writes")
        device = device_sets(info, quick)
        base = [*device, *CLOSED_LOOP]

        def simulate(
            scheme: str, sets: list[str], timed: bool, path: Path = path, base: list[str] = base
        ) -> dict[str, Any]:
            return ftlab.simulate(
                scheme,
                trace=path,
                preset=PRESET,
                sets=[*base, *sets],
                mapping_only=not timed,
            ).report

        # Whole tables in DRAM, mapping only: memory, mispredictions, lookup levels.
        whole = {s: simulate(s, ["dram.budget_bytes=0", *scheme_sets(s)], False) for s in SCHEMES}
        striped = simulate("leaftl", ["dram.budget_bytes=0", STRIPED], False)
        tables = {s: mapping_bytes(r) for s, r in whole.items()}
        written = info.get("written_pages") or whole["dftl"]["metrics"]["host"]["pages_written"]
        memory_rows.append(
            [
                name,
                tables["dftl"],
                tables["sftl"],
                tables["leaftl"],
                _fmt(tables["dftl"] / max(tables["leaftl"], 1)),
                _fmt(tables["sftl"] / max(tables["leaftl"], 1)),
                mapping_bytes(striped),
            ]
        )
        gamma_reports = {0: whole["leaftl"]}
        for gamma in GAMMAS[1:]:
            gamma_reports[gamma] = simulate(
                "leaftl", ["dram.budget_bytes=0", f"leaftl.gamma={gamma}"], False
            )
        base_table = tables["leaftl"]
        for gamma, r in gamma_reports.items():
            s = r["metrics"]["scheme"]
            # The same tables with the paper's CRB layout (1 byte per listed offset).
            entries = s["mapping_table_bytes"] - s["crb_run_boundaries"] + s["crb_entries"]
            gamma_rows.append(
                [
                    name,
                    gamma,
                    int(s["mapping_table_bytes"]),
                    _fmt(base_table / max(s["mapping_table_bytes"], 1)),
                    int(entries),
                    _fmt(100 * s["misprediction_ratio"]),
                    int(s["segments"]),
                    int(
                        s["segments_approximate_irregular"] + s["segments_approximate_consecutive"]
                    ),
                    int(r["metrics"]["flash"]["reads"]["misprediction"]),
                ]
            )
        shares = levels(whole["leaftl"])
        level_curves[name] = shares
        cumulative = [sum(shares[: i + 1]) for i in range(len(shares))]

        def depth(q: float, cumulative: list[float] = cumulative) -> str:
            for i, c in enumerate(cumulative):
                if c >= q - 1e-12:
                    return str(i + 1) if i < len(cumulative) - 1 else ">32"
            return "-"

        level_rows.append(
            [name, _fmt(100 * shares[0], 1), depth(0.99), depth(0.9999), int(sum(shares) > 0)]
        )
        # One DRAM, split as the artifact splits it, timed.
        logical = whole["dftl"]["device"]["logical_pages"]
        dram = int(logical * PAGE_BYTES * DRAM_PER_CAPACITY)
        floor_cache = max(PAGE_BYTES, int(dram * DFTL_DATA_CACHE_SHARE))
        timed = {}
        split = {}
        tables["leaftl-striped"] = mapping_bytes(striped)
        for variant in TIMED:
            scheme = variant.split("-")[0]
            if scheme == "dftl":
                budget = dram - floor_cache
            else:
                estimate = tables[variant] / max(written, 1) * logical
                budget = min(int(ESTIMATE_SHARE * estimate), dram - floor_cache)
            budget = max(budget, 8 * 1024)
            cache = max(dram - budget, PAGE_BYTES)
            split[variant] = (budget, cache)
            extra = [STRIPED] if variant == "leaftl-striped" else []
            timed[variant] = simulate(
                scheme,
                [
                    f"dram.budget_bytes={budget}",
                    f"buffer.size_bytes={cache}",
                    f"buffer.flush_bytes={min(FLUSH_BYTES, cache)}",
                    "buffer.cache_reads=true",
                    *scheme_sets(scheme),
                    *extra,
                ],
                True,
            )
        means = {s: latency_mean_us(r) for s, r in timed.items()}

        def ratio(a: str, b: str, means: dict[str, float] = means) -> str:
            # A run served entirely from DRAM has no latency to compare.
            return _fmt(means[a] / means[b]) if means[a] > 0 and means[b] > 0 else "-"

        latency_rows.append(
            [
                name,
                dram,
                *(split[s][1] for s in TIMED),
                *(round(means[s], 1) for s in TIMED),
                ratio("sftl", "leaftl-striped"),
                ratio("sftl", "leaftl"),
                ratio("dftl", "leaftl-striped"),
            ]
        )

    tables_out = _tables(memory_rows, gamma_rows, latency_rows, level_rows)
    summary = _summary(memory_rows, gamma_rows, latency_rows, level_rows, notes)
    for title, (header, rows) in tables_out.items():
        _write_csv(out_dir / f"{title}.csv", header, rows)
        # Latencies (microseconds in the CSV) in readable units for people.
        header, rows = latency_table(header, rows, LATENCY_COLUMNS.get(title, ()))
        (out_dir / f"{title}.md").write_text(_markdown(header, rows))
        print(f"\n{title}\n" + render_table(header, [[str(c) for c in r] for r in rows]))
    (out_dir / "summary.md").write_text(summary)
    print("\n" + summary)
    _plots(out_dir, memory_rows, gamma_rows, latency_rows, level_curves)


# The columns of each table that hold mean latencies in microseconds.
LATENCY_COLUMNS = {"latency": (6, 7, 8, 9)}


def _tables(
    memory_rows: list[list[Any]],
    gamma_rows: list[list[Any]],
    latency_rows: list[list[Any]],
    level_rows: list[list[Any]],
) -> dict[str, tuple[list[str], list[list[Any]]]]:
    return {
        "memory": (
            [
                "trace",
                "DFTL bytes",
                "S-FTL bytes",
                "LeaFTL bytes",
                "DFTL / LeaFTL",
                "S-FTL / LeaFTL",
                "LeaFTL (stripe placement) bytes",
            ],
            memory_rows,
        ),
        "gamma": (
            [
                "trace",
                "gamma",
                "LeaFTL bytes",
                "gamma 0 / this",
                "bytes with the paper's CRB",
                "misprediction %",
                "segments",
                "approximate segments",
                "misprediction reads",
            ],
            gamma_rows,
        ),
        "latency": (
            [
                "trace",
                "DRAM bytes",
                "DFTL data cache",
                "S-FTL data cache",
                "LeaFTL (block) data cache",
                "LeaFTL (stripe) data cache",
                "DFTL mean us",
                "S-FTL mean us",
                "LeaFTL (block) mean us",
                "LeaFTL (stripe) mean us",
                "S-FTL / LeaFTL (stripe)",
                "S-FTL / LeaFTL (block)",
                "DFTL / LeaFTL (stripe)",
            ],
            latency_rows,
        ),
        "lookup_levels": (
            ["trace", "% at level 1", "99% within", "99.99% within", "has lookups"],
            level_rows,
        ),
    }


def _summary(
    memory_rows: list[list[Any]],
    gamma_rows: list[list[Any]],
    latency_rows: list[list[Any]],
    level_rows: list[list[Any]],
    notes: list[str],
) -> str:
    def col(rows: list[list[Any]], i: int) -> list[float]:
        return [float(str(r[i]).replace(",", "")) for r in rows if str(r[i]) != "-"]

    lines = ["# LeaFTL reproduction: ours next to the paper's\n"]
    if memory_rows:
        lines.append(
            "- Mapping memory, S-FTL / LeaFTL: geometric mean "
            f"{_geomean(col(memory_rows, 5)):.2f}x (paper: {PAPER['memory_vs_sftl']}x); "
            "DFTL / LeaFTL: "
            f"{_geomean(col(memory_rows, 4)):.2f}x (artifact: {PAPER['memory_vs_dftl']})."
        )
    g16 = [r for r in gamma_rows if r[1] == 16]
    if g16:
        mis = col(g16, 5)
        g0 = {r[0]: float(r[4]) for r in gamma_rows if r[1] == 0}
        paper_crb = [g0[r[0]] / max(float(r[4]), 1) for r in g16]
        lines.append(
            f"- γ = 16: misprediction {sum(mis) / len(mis):.1f}% on average, at most "
            f"{max(mis):.1f}% (paper: {PAPER['misprediction_gamma16']}); memory γ0 / γ16: "
            f"{_geomean(col(g16, 3)):.2f}x by the artifact's formula, "
            f"{_geomean(paper_crb):.2f}x with the paper's CRB layout "
            f"(paper: {PAPER['memory_gamma16_vs_0']}x)."
        )
    if latency_rows:
        lines.append(
            f"- Mean latency with one DRAM, S-FTL / LeaFTL: geometric mean "
            f"{_geomean(col(latency_rows, 10)):.2f}x with stripe placement, "
            f"{_geomean(col(latency_rows, 11)):.2f}x with the artifact's block placement "
            f"(paper: {PAPER['latency_vs_sftl']}x); DFTL / LeaFTL (stripe) "
            f"{_geomean(col(latency_rows, 12)):.2f}x. Traces served entirely from DRAM by "
            "some scheme are left out of the means."
        )
    with_lookups = [r for r in level_rows if r[4]]
    if with_lookups:
        l1 = col(with_lookups, 1)
        lines.append(
            f"- Lookups answered at the first level: {sum(l1) / len(l1):.1f}% on average "
            f"(paper: about {100 * PAPER['level1_share']:.0f}%)."
        )
    if notes:
        lines.append("\nTraces left out:\n")
        lines += [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _plots(
    out_dir: Path,
    memory_rows: list[list[Any]],
    gamma_rows: list[list[Any]],
    latency_rows: list[list[Any]],
    level_curves: dict[str, list[float]],
) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: plots skipped")
        return
    if not memory_rows:
        return
    names = [r[0].split("/")[-1] for r in memory_rows]
    x = list(range(len(names)))

    def save(fig: Any, stem: str) -> None:
        fig.tight_layout()
        for ext in ("png", "svg"):
            fig.savefig(out_dir / f"{stem}.{ext}")
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(names)), 4))
    width = 0.27
    for i, (label, col) in enumerate([("DFTL", 1), ("S-FTL", 2), ("LeaFTL", 3)]):
        values = [r[col] / max(r[1], 1) for r in memory_rows]
        ax.bar([xi + (i - 1) * width for xi in x], values, width, label=label)
    ax.set_yscale("log")
    ax.set_ylabel("mapping memory / DFTL's")
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.legend()
    save(fig, "memory")

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for name in [r[0] for r in memory_rows]:
        rows = [r for r in gamma_rows if r[0] == name]
        gammas = [r[1] for r in rows]
        ax1.plot(gammas, [float(r[5]) for r in rows], marker="o", label=name.split("/")[-1])
        ax2.plot(gammas, [1 / float(r[3]) for r in rows], marker="o", label=name.split("/")[-1])
    ax1.set_title("misprediction")
    ax2.set_title("memory (artifact's formula)")
    ax1.set_xlabel("γ")
    ax1.set_ylabel("misprediction ratio (%)")
    ax2.set_xlabel("γ")
    ax2.set_ylabel("memory / memory at γ = 0")
    ax2.legend(fontsize=7)
    save(fig, "gamma")

    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(names)), 4))
    series = [("DFTL", 6), ("S-FTL", 7), ("LeaFTL (block)", 8), ("LeaFTL (stripe)", 9)]
    width = 0.2
    for i, (label, col) in enumerate(series):
        values = [
            float(str(r[col]).replace(",", "")) / max(float(str(r[6]).replace(",", "")), 1e-9)
            for r in latency_rows
        ]
        values = [max(v, 1e-3) for v in values]
        ax.bar([xi + (i - 1.5) * width for xi in x], values, width, label=label)
    ax.set_yscale("log")
    ax.set_ylabel("mean latency / DFTL's")
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.legend()
    save(fig, "latency")

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, shares in level_curves.items():
        cumulative = [sum(shares[: i + 1]) for i in range(len(shares))]
        ax.step(range(1, len(cumulative) + 1), cumulative, where="post", label=name.split("/")[-1])
    ax.set_xlabel("level of the segment found")
    ax.set_ylabel("share of lookups (cumulative)")
    ax.set_ylim(0, 1.01)
    ax.legend(fontsize=7)
    save(fig, "lookup_levels")
