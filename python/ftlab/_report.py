"""The report folder of `ftlab compare`: the table, every run's JSON, plots as PNG and SVG,
and an HTML page linking them.

Plots: mapping memory against latency, latency CDFs per scheme, flash traffic by cause,
mapping memory over the run. In mapping-only mode (no latencies), memory is plotted
against write amplification instead and the CDF is left out. Files are deterministic:
the same results give the same bytes (no dates in the SVG/PNG metadata, fixed SVG ids).
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ftlab import _core
from ftlab._format import compare_notes, compare_rows, html_table, render_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ftlab import CompareResult

# Flash operation causes in report order, as the core defines them.
CAUSES = [name for name, _, _ in _core.causes()]
MIB = 2**20


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "ftlab"
    plt.rcParams["figure.dpi"] = 100
    return plt


def _save(fig: Figure, folder: Path, name: str) -> list[str]:
    fig.tight_layout()
    fig.savefig(folder / f"{name}.svg", metadata={"Date": None})
    fig.savefig(folder / f"{name}.png", dpi=120, metadata={"Software": None})
    return [f"{name}.png", f"{name}.svg"]


def _has_latency(cmp: CompareResult) -> bool:
    return all(r.report["metrics"].get("latency") for r in cmp.results.values())


def plot_memory_vs_latency(cmp: CompareResult, folder: Path) -> tuple[str, list[str]]:
    """One colour per scheme; markers: read mean, read p99, write mean (or the WAF in
    mapping-only runs)."""
    from matplotlib.lines import Line2D

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    timed = _has_latency(cmp)
    markers = [("read_mean_us", "o", "read mean"), ("read_p99_us", "^", "read p99")]
    markers.append(("write_mean_us", "s", "write mean"))
    handles = []
    for i, (name, r) in enumerate(cmp.results.items()):
        s = r.summary
        x = s["memory_peak_bytes"] / MIB
        color = f"C{i % 10}"
        points = [(s[key], marker) for key, marker, _ in markers] if timed else [(s["waf"], "o")]
        points = [(y, m) for y, m in points if y is not None]
        for y, marker in points:
            ax.scatter([x], [y], color=color, marker=marker)
        if points:
            ax.annotate(
                name, (x, points[0][0]), xytext=(6, 0), textcoords="offset points",
                fontsize=8, color=color, va="center",
            )  # fmt: skip
        handles.append(Line2D([], [], color=color, marker="o", linestyle="", label=name))
    ax.set_xlabel("mapping DRAM, peak (MiB)")
    if timed:
        handles += [
            Line2D([], [], color="gray", marker=m, linestyle="", label=label)
            for _, m, label in markers
        ]
        ax.set_ylabel("latency (us)")
        ax.set_yscale("log")
        ax.set_title("Mapping memory vs latency")
        name = "memory_vs_latency"
    else:
        ax.set_ylabel("write amplification")
        ax.set_title("Mapping memory vs write amplification (mapping-only run)")
        name = "memory_vs_waf"
    ax.grid(True, alpha=0.3)
    ax.legend(handles=handles, fontsize=7, loc="best")
    files = _save(fig, folder, name)
    plt.close(fig)
    return ax.get_title(), files


def plot_latency_cdf(cmp: CompareResult, folder: Path) -> tuple[str, list[str]] | None:
    if not _has_latency(cmp):
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, op in zip(axes, ("read", "write")):
        for i, (name, r) in enumerate(cmp.results.items()):
            stats = r.report["metrics"]["latency"][op]
            if not stats["count"]:
                continue
            qs = [q for q, _ in stats["cdf"]]
            us = [max(ns / 1000.0, 1e-3) for _, ns in stats["cdf"]]
            ax.step(us, qs, where="post", color=f"C{i % 10}", label=name)
        ax.set_xscale("log")
        ax.set_xlabel(f"{op} latency (us)")
        ax.set_title(f"{op.capitalize()} latency CDF")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("fraction of requests")
    axes[1].legend(fontsize=8)
    files = _save(fig, folder, "latency_cdf")
    plt.close(fig)
    return "Latency CDF per scheme", files


def plot_latency_breakdown(cmp: CompareResult, folder: Path) -> tuple[str, list[str]] | None:
    """Where the time went: per scheme a stacked bar of the mean read and write latency,
    one segment per latency part (the parts add up to the mean)."""
    if not all(r.report["metrics"].get("latency_breakdown") for r in cmp.results.values()):
        return None
    plt = _pyplot()
    first = next(iter(cmp.results.values())).report["metrics"]["latency_breakdown"]
    parts = [p["part"] for p in first["read"]["parts"]]
    names = list(cmp.results)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    used: set[str] = set()
    for ax, op in zip(axes, ("read", "write")):
        bottoms = [0.0] * len(names)
        for j, part in enumerate(parts):
            means = [
                r.report["metrics"]["latency_breakdown"][op]["parts"][j]["mean_ns"] / 1000.0
                for r in cmp.results.values()
            ]
            if not any(means):
                continue
            label = part if part not in used else None
            used.add(part)
            color = plt.get_cmap("tab20")(j % 20)
            ax.bar(names, means, bottom=bottoms, color=color, label=label)
            bottoms = [b + m for b, m in zip(bottoms, means)]
        ax.set_ylabel(f"mean {op} latency (us)")
        ax.set_title(f"Where the {op} time went")
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    fig.legend(fontsize=7, loc="center right")
    fig.subplots_adjust(right=0.82)
    files = _save(fig, folder, "latency_breakdown")
    plt.close(fig)
    return "Where the time went (mean latency by part, per scheme)", files


def plot_flash_traffic(cmp: CompareResult, folder: Path) -> tuple[str, list[str]]:
    plt = _pyplot()
    names = list(cmp.results)
    fig, axes = plt.subplots(1, 3, figsize=(12, 4))
    for ax, (kind, label) in zip(
        axes, (("reads", "flash reads"), ("programs", "flash programs"), ("erases", "block erases"))
    ):
        bottoms = [0.0] * len(names)
        for j, cause in enumerate(CAUSES):
            values = [
                float(r.report["metrics"]["flash"][kind][cause]) for r in cmp.results.values()
            ]
            if not any(values):
                continue
            ax.bar(names, values, bottom=bottoms, color=f"C{j}", label=cause)
            bottoms = [b + v for b, v in zip(bottoms, values)]
        ax.set_title(f"{label.capitalize()} by cause")
        ax.set_ylabel(label)
        ax.tick_params(axis="x", rotation=45, labelsize=8)
        if any(bottoms):
            ax.legend(fontsize=7)
        ax.grid(True, axis="y", alpha=0.3)
    files = _save(fig, folder, "flash_traffic")
    plt.close(fig)
    return "Flash traffic by cause", files


def plot_memory_over_time(cmp: CompareResult, folder: Path) -> tuple[str, list[str]]:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for i, (name, r) in enumerate(cmp.results.items()):
        ts = r.report["metrics"]["time_series"]
        ax.plot(
            ts["request"],
            [b / MIB for b in ts["memory_bytes"]],
            color=f"C{i % 10}",
            label=name,
        )
    ax.set_xlabel("requests")
    ax.set_ylabel("mapping DRAM (MiB)")
    ax.set_title("Mapping memory over the run")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    files = _save(fig, folder, "memory_over_time")
    plt.close(fig)
    return "Mapping memory over the run", files


def plot_media(cmp: CompareResult, folder: Path) -> tuple[str, list[str]] | None:
    """The media's histograms, for the runs with `[media]` on: reads by the read-retry
    steps they took, good blocks by erase count, and blocks holding data by the raw bit
    error rate of their data at the end (a decade a bucket); None if no run has them."""
    media = {name: r.report["metrics"].get("media") for name, r in cmp.results.items()}
    runs = {name: m for name, m in media.items() if m}
    if not runs:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    width = 0.8 / len(runs)
    for i, (name, m) in enumerate(runs.items()):
        color = f"C{list(cmp.results).index(name) % 10}"
        reads = m["retry_histogram"]
        total = sum(reads) or 1
        axes[0].bar(
            [s + i * width for s in range(len(reads))],
            [n / total for n in reads],
            width=width,
            color=color,
            label=name,
        )
        start, step = m["wear_histogram_start"], m["wear_histogram_width"]
        cycles = [start + k * step for k in range(len(m["wear_histogram"]))]
        axes[1].step(cycles, m["wear_histogram"], where="post", color=color, label=name)
        rber = m["rber_histogram"]
        if rber:
            axes[2].bar(
                [d + i * width for d in range(len(rber))],
                rber,
                width=width,
                color=color,
                label=name,
            )
    axes[0].set_title("Reads by read-retry steps")
    axes[0].set_xlabel("extra sensing steps")
    axes[0].set_ylabel("share of reads")
    axes[1].set_title("Wear: good blocks by erase count")
    axes[1].set_xlabel("P/E cycles")
    axes[1].set_ylabel("blocks")
    axes[2].set_title("Blocks by their data's raw bit error rate")
    with_rates = [m for m in runs.values() if m["rber_histogram"]]
    if with_rates:
        decades = len(with_rates[0]["rber_histogram"])
        low = with_rates[0]["rber_histogram_first_decade"]
        axes[2].set_xticks(range(decades))
        axes[2].set_xticklabels([f"1e{low + d}" for d in range(decades)], fontsize=7, rotation=45)
    axes[2].set_ylabel("blocks holding data")
    for ax in axes:
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    files = _save(fig, folder, "media")
    plt.close(fig)
    return "The media: read retries, wear and raw bit error rates", files


def _source(cmp: CompareResult) -> str:
    first = next(iter(cmp.results.values())).report
    src = first["source"]
    device = first["device"]
    text = f"{src['kind']} {src['name']}"
    if src.get("format"):
        text += f" ({src['format']})"
    text += (
        f"; device {device['logical_bytes'] / 2**30:,.2f} GiB logical, "
        f"{device['page_size']:,} B pages"
    )
    if cmp.fitted_blocks_per_plane is not None:
        text += " (fitted to the trace, the same for every scheme)"
    precondition = (first.get("precondition") or {}).get("mode")
    if precondition and precondition != "none":
        text += f"; preconditioned: {precondition}"
    return text + f"; {first['mode']}"


def write(cmp: CompareResult, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    runs = folder / "runs"
    runs.mkdir(exist_ok=True)
    for name, r in cmp.results.items():
        (runs / f"{name}.json").write_text(r.json)
    # No wall-clock figures in the files: the same results give the same report.
    cmp.table.drop("wall_seconds").write_csv(folder / "table.csv")
    header, rows = compare_rows(cmp.summary)
    notes = compare_notes(cmp.summary)
    (folder / "table.md").write_text(
        "| "
        + " | ".join(header)
        + " |\n|"
        + "---|" * len(header)
        + "\n"
        + "".join("| " + " | ".join(row) + " |\n" for row in rows)
        + "".join(f"\n{note}\n" for note in notes)
    )
    (folder / "table.txt").write_text(
        render_table(header, rows) + "\n" + "".join(f"{n}\n" for n in notes)
    )
    plots = [
        plot_memory_vs_latency(cmp, folder),
        plot_latency_cdf(cmp, folder),
        plot_latency_breakdown(cmp, folder),
        plot_flash_traffic(cmp, folder),
        plot_memory_over_time(cmp, folder),
        plot_media(cmp, folder),
    ]
    figures = "".join(
        f'<figure><a href="{files[1]}"><img src="{files[0]}" alt="{escape(title)}"></a>'
        f'<figcaption>{escape(title)} (<a href="{files[0]}">PNG</a>, '
        f'<a href="{files[1]}">SVG</a>)</figcaption></figure>'
        for plot in plots
        if plot is not None
        for title, files in [plot]
    )
    links = " ".join(f'<a href="runs/{escape(n)}.json">{escape(n)}</a>' for n in cmp.results)
    first = next(iter(cmp.results.values())).report
    notes_html = "".join(f"\n<p>{escape(n)}</p>" for n in notes)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ftlab compare</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1200px; }}
table {{ border-collapse: collapse; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
figure {{ display: inline-block; margin: 1em; vertical-align: top; }}
img {{ max-width: 560px; }}
</style></head><body>
<h1>ftlab compare</h1>
<p>{escape(_source(cmp))}. ftlab {escape(str(first["ftlab_version"]))}.</p>
{html_table(header, rows)}{notes_html}
<p>DRAM: the scheme's mapping memory at its peak. GC victims: blocks reclaimed. Extra reads:
flash reads beyond the host's own, by cause. Table as <a href="table.csv">CSV</a>,
<a href="table.md">Markdown</a>; full reports: {links}.</p>
{figures}
</body></html>
"""
    index = folder / "index.html"
    index.write_text(page)
    (folder / "summary.json").write_text(json.dumps(cmp.summary, indent=2, sort_keys=True) + "\n")
    return index
