"""Sweep tables as frames and figures: runs averaged over seeds, Pareto fronts of mapping
DRAM against latency, heatmaps over two swept keys, one line per scheme against a key.

Every helper takes a sweep table (`ftlab.sweep`'s result or `load_sweep(path)`) and
returns a polars DataFrame or a matplotlib Figure; `write_plots` saves the figures of
`ftlab plot`. Failed runs (a non-null `error`) are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ftlab._sweep import AXIS_COLUMNS, EXTRA_COLUMNS, SUMMARY_COLUMNS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MIB = 2**20
#: The axis columns a configuration is told apart by (the seed is averaged over).
CONFIG_AXES = ("scheme", "trace", "workload", "preset", "precondition")


def key_columns(df: pl.DataFrame) -> list[str]:
    """The configuration keys of a table (`dram.budget_bytes`, ...), in table order."""
    return [c for c in df.columns if "." in c]


def swept_keys(df: pl.DataFrame, axes: bool = False) -> list[str]:
    """Configuration keys (with `axes`, also scheme, trace, workload, preset,
    precondition) that take more than one value in the table."""
    candidates = key_columns(df)
    if axes:
        candidates = [c for c in CONFIG_AXES if c in df.columns] + candidates
    return [c for c in candidates if df[c].drop_nulls().n_unique() > 1]


def _ok(df: pl.DataFrame) -> pl.DataFrame:
    if "error" in df.columns:
        df = df.filter(pl.col("error").is_null())
    return df


def _metrics(df: pl.DataFrame) -> list[str]:
    numeric = {"int", "float"}
    names = [c for c, k in {**SUMMARY_COLUMNS, **EXTRA_COLUMNS}.items() if k in numeric]
    return [c for c in names if c in df.columns and c != "wall_seconds"]


def aggregate(df: pl.DataFrame) -> pl.DataFrame:
    """One row per configuration (runs differing only by seed together): the mean of
    every metric over the seeds, `runs` the number of runs averaged, `saturated` true if
    any was, `memory_peak_max_bytes` the largest peak mapping DRAM of the seeds. Failed
    runs are left out."""
    df = _ok(df)
    groups = [c for c in (*CONFIG_AXES, *key_columns(df)) if c in df.columns]
    extra = ["source"] if "source" in df.columns else []
    aggs: list[pl.Expr] = [pl.len().alias("runs")]
    aggs += [pl.col(c).first() for c in extra]
    aggs += [pl.col(c).cast(pl.Float64).mean() for c in _metrics(df)]
    if "saturated" in df.columns:
        aggs.append(pl.col("saturated").any())
    if "memory_peak_bytes" in df.columns:
        aggs.append(pl.col("memory_peak_bytes").max().alias("memory_peak_max_bytes"))
    if not groups or not df.height:
        return df.head(0)
    out = df.group_by(groups, maintain_order=True).agg(aggs)
    return out.sort(groups, nulls_last=True)


def pareto_front(
    df: pl.DataFrame,
    x: str = "memory_peak_bytes",
    y: str = "read_mean_us",
    by: Sequence[str] = ("source",),
) -> pl.DataFrame:
    """Every configuration (averaged over seeds) with a boolean `pareto`: true when no
    other configuration of the same `by` group (by default: the same trace or workload)
    has both less `x` (mapping DRAM) and less `y` (latency; WAF in mapping-only runs).
    Sorted by group, then `x`."""
    agg = aggregate(df)
    if not agg.height:
        return agg.with_columns(pl.lit(False).alias("pareto"))
    by = [c for c in by if c in agg.columns]
    agg = agg.filter(pl.col(x).is_not_null() & pl.col(y).is_not_null())
    agg = agg.sort([*by, x, y], nulls_last=True)
    best = pl.col(y).cum_min().shift(1)
    if by:
        best = best.over(by)
    return agg.with_columns((best.is_null() | (pl.col(y) < best)).alias("pareto"))


def _pyplot() -> Any:
    from ftlab._report import _pyplot

    return _pyplot()


def _latency_columns(df: pl.DataFrame, op: str) -> list[tuple[str, str]]:
    """(column, label) of the latencies to plot: the mean and p99 of `op` (read, or write
    when no run read), or the WAF in mapping-only tables."""
    ok = _ok(df)
    for kind in (op, "write" if op == "read" else "read"):
        mean = f"{kind}_mean_us"
        if mean in ok.columns and ok[mean].drop_nulls().len():
            return [(mean, f"{kind} mean latency (us)"), (f"{kind}_p99_us", f"{kind} p99 (us)")]
    return [("waf", "write amplification")]


def _scheme_colors(df: pl.DataFrame) -> dict[str, str]:
    schemes = sorted(set(df["scheme"].to_list())) if "scheme" in df.columns else []
    return {s: f"C{i % 10}" for i, s in enumerate(schemes)}


def plot_pareto(df: pl.DataFrame, op: str = "read", budget_bytes: int | None = None) -> Figure:
    """Mapping DRAM (peak) against mean and p99 latency of `op`, one row of panels per
    trace or workload: every configuration (averaged over seeds) as a point coloured by
    scheme, the Pareto front joined by a line and labelled. `budget_bytes` draws a DRAM
    budget. Mapping-only tables plot the WAF instead."""
    plt = _pyplot()
    columns = _latency_columns(df, op)
    agg = aggregate(df)
    sources = sorted(set(agg["source"].to_list())) if agg.height else []
    rows = max(1, len(sources))
    fig, axes = plt.subplots(
        rows, len(columns), figsize=(6.0 * len(columns), 4.2 * rows), squeeze=False
    )
    colors = _scheme_colors(agg)
    for r, source in enumerate(sources or [None]):
        for c, (column, label) in enumerate(columns):
            ax: Axes = axes[r][c]
            front = pareto_front(df, y=column)
            if source is not None:
                front = front.filter(pl.col("source") == source)
            for scheme, color in colors.items():
                part = front.filter(pl.col("scheme") == scheme)
                if part.height:
                    ax.scatter(
                        (part["memory_peak_bytes"] / MIB).to_list(),
                        part[column].to_list(),
                        color=color, alpha=0.6, s=18, label=scheme,
                    )  # fmt: skip
            best = front.filter(pl.col("pareto"))
            if best.height:
                xs = (best["memory_peak_bytes"] / MIB).to_list()
                ys = best[column].to_list()
                ax.step(xs, ys, where="post", color="black", linewidth=1, label="Pareto front")
                for x, y, scheme in zip(xs, ys, best["scheme"].to_list()):
                    ax.annotate(
                        scheme, (x, y), xytext=(4, 4), textcoords="offset points",
                        fontsize=7, color=colors.get(scheme, "black"),
                    )  # fmt: skip
            if budget_bytes:
                ax.axvline(budget_bytes / MIB, color="gray", linestyle="--", label="budget")
            ax.set_xscale("log")
            if column != "waf":
                ax.set_yscale("log")
            _plain_ticks(ax, y=column != "waf")
            ax.set_xlabel("mapping DRAM, peak (MiB)")
            ax.set_ylabel(label)
            ax.set_title(f"{_short(source)}: DRAM vs {label.split(' (')[0]}")
            ax.grid(True, alpha=0.3, which="both")
            ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    figure: Figure = fig
    return figure


def _plain_ticks(ax: Axes, y: bool = True) -> None:
    """Log axes ticked and labelled 0.1, 0.2, 0.5, 1, 2, 5 rather than 2 x 10^-1."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    for axis in (ax.xaxis, ax.yaxis) if y else (ax.xaxis,):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def _short(source: Any) -> str:
    return "all" if source is None else Path(str(source)).name


def _ticks(values: Sequence[Any]) -> list[str]:
    out = []
    for v in values:
        if isinstance(v, float):
            out.append(f"{v:g}")
        elif isinstance(v, int) and not isinstance(v, bool) and v >= 1 << 20 and v % 1024 == 0:
            out.append(_bytes(v))
        else:
            out.append(str(v))
    return out


def _bytes(v: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v % scale == 0:
            return f"{v // scale} {unit}"
    return str(v)


def plot_heatmap(df: pl.DataFrame, x: str, y: str, metric: str = "waf") -> Figure:
    """`metric` (the WAF by default) over two swept keys: one panel per trace or workload
    and scheme, each cell the mean over seeds and over any other key."""
    plt = _pyplot()
    for key in (x, y, metric):
        if key not in df.columns:
            raise KeyError(f"the table has no column `{key}`")
    ok = _ok(df).filter(pl.col(x).is_not_null() & pl.col(y).is_not_null())
    cells = ok.group_by(["source", "scheme", x, y]).agg(pl.col(metric).cast(pl.Float64).mean())
    panels = sorted({(s, k) for s, k in zip(cells["source"], cells["scheme"])})
    xs = sorted(set(cells[x].to_list()))
    ys = sorted(set(cells[y].to_list()))
    n = max(1, len(panels))
    cols = min(n, 4)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
    for i, ax in enumerate(ax for row in axes for ax in row):
        if i >= len(panels):
            ax.axis("off")
            continue
        source, scheme = panels[i]
        part = cells.filter((pl.col("source") == source) & (pl.col("scheme") == scheme))
        grid = [[float("nan")] * len(xs) for _ in ys]
        for xv, yv, value in zip(part[x], part[y], part[metric]):
            grid[ys.index(yv)][xs.index(xv)] = float("nan") if value is None else value
        image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
        values = [v for line in grid for v in line if v == v]  # not NaN
        middle = (min(values) + max(values)) / 2 if values else 0.0
        for r, line in enumerate(grid):
            for c, value in enumerate(line):
                if value == value:
                    ax.text(c, r, f"{value:.3g}", ha="center", va="center", fontsize=7,
                            color="black" if value > middle else "white")  # fmt: skip
        ax.set_xticks(range(len(xs)), _ticks(xs), fontsize=7, rotation=30)
        ax.set_yticks(range(len(ys)), _ticks(ys), fontsize=7)
        ax.set_xlabel(x, fontsize=8)
        ax.set_ylabel(y, fontsize=8)
        ax.set_title(f"{scheme} ({_short(source)})", fontsize=9)
        fig.colorbar(image, ax=ax, label=metric)
    fig.suptitle(f"{metric} over {x} and {y}")
    fig.tight_layout()
    figure: Figure = fig
    return figure


def plot_lines(df: pl.DataFrame, x: str, metric: str = "read_mean_us") -> Figure:
    """`metric` against the swept key `x`: one panel per trace or workload, one line per
    scheme (and per value of any other swept key), each point the mean over seeds."""
    plt = _pyplot()
    for key in (x, metric):
        if key not in df.columns:
            raise KeyError(f"the table has no column `{key}`")
    agg = aggregate(df).filter(pl.col(x).is_not_null())
    others = [k for k in swept_keys(agg, axes=True) if k not in (x, "scheme", "trace", "workload")]
    sources = sorted(set(agg["source"].to_list())) if agg.height else []
    fig, axes = plt.subplots(
        1, max(1, len(sources)), figsize=(6.0 * max(1, len(sources)), 4.2), squeeze=False
    )
    colors = _scheme_colors(agg)
    xs = sorted(set(agg[x].to_list()))
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs)
    for ax, source in zip(axes[0], sources or [None]):
        part = agg if source is None else agg.filter(pl.col("source") == source)
        lines = part.group_by(["scheme", *others], maintain_order=True).agg(
            pl.col(x), pl.col(metric)
        )
        styles: dict[str, int] = {}
        for line in lines.sort(["scheme", *others], nulls_last=True).iter_rows(named=True):
            pairs = sorted(zip(line[x], line[metric]), key=lambda p: xs.index(p[0]))
            pos = [p[0] if numeric else xs.index(p[0]) for p in pairs]
            scheme = line["scheme"]
            label = scheme + "".join(f", {k}={line[k]}" for k in others if line[k] is not None)
            style = styles[scheme] = styles.get(scheme, -1) + 1
            ax.plot(
                pos, [p[1] for p in pairs], marker="o", color=colors.get(scheme),
                linestyle=["-", "--", ":", "-."][style % 4], label=label,
            )  # fmt: skip
        if numeric and xs and min(xs) > 0 and max(xs) / min(xs) >= 16:
            ax.set_xscale("log", base=2)
        if not numeric:
            ax.set_xticks(range(len(xs)), _ticks(xs))
        ax.set_xlabel(x)
        ax.set_ylabel(metric)
        ax.set_title(f"{_short(source)}: {metric} vs {x}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    figure: Figure = fig
    return figure


def _save(fig: Figure, folder: Path, name: str) -> list[Path]:
    fig.savefig(folder / f"{name}.svg", metadata={"Date": None})
    fig.savefig(folder / f"{name}.png", dpi=120, metadata={"Software": None})
    return [folder / f"{name}.png", folder / f"{name}.svg"]


def write_plots(
    df: pl.DataFrame,
    folder: Path,
    x: str | None = None,
    y: str | None = None,
    metric: str | None = None,
    op: str = "read",
    budget_bytes: int | None = None,
) -> tuple[list[Path], list[str]]:
    """Saves the plots of `ftlab plot` (PNG and SVG) in `folder`: `pareto`, then
    `heatmap_METRIC` over `x` and `y` (default: the first two swept keys) and
    `lines_METRIC` against `x` (default: the first swept key) when the table has them.
    Returns the files and notes on the plots left out."""
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    notes: list[str] = []
    swept = swept_keys(df)
    fig = plot_pareto(df, op=op, budget_bytes=budget_bytes)
    files += _save(fig, folder, "pareto")
    plt.close(fig)
    heat_x = x or (swept[0] if swept else None)
    heat_y = y or next((k for k in swept if k != heat_x), None)
    if heat_x and heat_y:
        fig = plot_heatmap(df, heat_x, heat_y, metric or "waf")
        files += _save(fig, folder, f"heatmap_{metric or 'waf'}")
        plt.close(fig)
    else:
        notes.append(f"no heatmap: it needs two swept keys, the table has {len(swept)}")
    if heat_x:
        default = _latency_columns(df, op)[0][0]
        fig = plot_lines(df, heat_x, metric or default)
        files += _save(fig, folder, f"lines_{metric or default}")
        plt.close(fig)
    else:
        notes.append("no line plot: no configuration key takes more than one value")
    return files, notes


__all__ = [
    "AXIS_COLUMNS",
    "aggregate",
    "key_columns",
    "pareto_front",
    "plot_heatmap",
    "plot_lines",
    "plot_pareto",
    "swept_keys",
    "write_plots",
]
