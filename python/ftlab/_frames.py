"""Reports as polars DataFrames (imported only when a frame is asked for)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from ftlab import _core
from ftlab._format import memory_vs_page

if TYPE_CHECKING:
    from ftlab import Result

# Flash operation causes in report order, as the core defines them.
CAUSES = [name for name, _, _ in _core.causes()]


def time_series(report: dict[str, Any]) -> pl.DataFrame:
    ts = report["metrics"]["time_series"]
    frame = pl.DataFrame(ts, schema={k: pl.UInt64 for k in ts})
    written = pl.col("host_pages_written").cast(pl.Float64)
    return frame.with_columns(
        pl.when(written > 0)
        .then(pl.col("flash_programs").cast(pl.Float64) / written)
        .otherwise(None)
        .alias("waf")
    )


def latency_cdf(report: dict[str, Any]) -> pl.DataFrame:
    rows: dict[str, list[Any]] = {"op": [], "quantile": [], "latency_us": []}
    latency = report["metrics"].get("latency") or {}
    for op in ("read", "write"):
        stats = latency.get(op)
        if not stats or not stats["count"]:
            continue
        for q, ns in stats["cdf"]:
            rows["op"].append(op)
            rows["quantile"].append(float(q))
            rows["latency_us"].append(ns / 1000.0)
    return pl.DataFrame(
        rows, schema={"op": pl.Utf8, "quantile": pl.Float64, "latency_us": pl.Float64}
    )


def latency_breakdown(report: dict[str, Any]) -> pl.DataFrame:
    """Where the time went: per op and latency part, its mean and p99 in us, its share of
    the op's total latency and the requests it held. Empty in mapping-only mode."""
    rows: dict[str, list[Any]] = {
        "op": [], "part": [], "mean_us": [], "p99_us": [], "share": [], "requests": []
    }  # fmt: skip
    breakdown = report["metrics"].get("latency_breakdown") or {}
    for op in ("read", "write"):
        b = breakdown.get(op)
        if not b or not b["requests"]:
            continue
        for p in b["parts"]:
            rows["op"].append(op)
            rows["part"].append(p["part"])
            rows["mean_us"].append(p["mean_ns"] / 1000.0)
            rows["p99_us"].append(p["p99_ns"] / 1000.0)
            rows["share"].append(float(p["share"]))
            rows["requests"].append(p["requests"])
    return pl.DataFrame(
        rows,
        schema={
            "op": pl.Utf8,
            "part": pl.Utf8,
            "mean_us": pl.Float64,
            "p99_us": pl.Float64,
            "share": pl.Float64,
            "requests": pl.UInt64,
        },
    )


def flash_ops(report: dict[str, Any]) -> pl.DataFrame:
    flash = report["metrics"]["flash"]
    rows: dict[str, list[Any]] = {"kind": [], "cause": [], "count": []}
    for kind, key in (("read", "reads"), ("program", "programs"), ("erase", "erases")):
        for cause in CAUSES:
            rows["kind"].append(kind)
            rows["cause"].append(cause)
            rows["count"].append(flash[key][cause])
    return pl.DataFrame(rows, schema={"kind": pl.Utf8, "cause": pl.Utf8, "count": pl.UInt64})


def memory(report: dict[str, Any]) -> pl.DataFrame:
    m = report["metrics"]["memory_bytes"]
    names = sorted(set(m["final_components"]) | set(m["peak_components"]))
    return pl.DataFrame(
        {
            "component": names,
            "final_bytes": [m["final_components"].get(n, 0) for n in names],
            "peak_bytes": [m["peak_components"].get(n, 0) for n in names],
        },
        schema={"component": pl.Utf8, "final_bytes": pl.UInt64, "peak_bytes": pl.UInt64},
    )


MERGE_KINDS = ("switch", "partial", "full")


def merges(report: dict[str, Any]) -> pl.DataFrame:
    """A log-block scheme's merges by kind: count (per logical block) and pages copied."""
    counters = report["metrics"]["scheme"]
    kinds = [k for k in MERGE_KINDS if f"merges_{k}" in counters]
    return pl.DataFrame(
        {
            "kind": kinds,
            "merges": [int(counters[f"merges_{k}"]) for k in kinds],
            "pages_copied": [int(counters[f"merge_pages_{k}"]) for k in kinds],
        },
        schema={"kind": pl.Utf8, "merges": pl.UInt64, "pages_copied": pl.UInt64},
    )


def associativity(report: dict[str, Any]) -> pl.DataFrame:
    """A log-block scheme's histogram of the logical blocks each reclaimed log block held."""
    prefix = "assoc_at_merge."
    counters = report["metrics"]["scheme"]
    names = sorted(k for k in counters if k.startswith(prefix))

    def label(name: str) -> str:
        bucket = name.removeprefix(prefix)
        if bucket.endswith("_up"):
            return f"{int(bucket.removesuffix('_up'))}+"
        return "-".join(str(int(part)) for part in bucket.split("_"))

    return pl.DataFrame(
        {
            "associativity": [label(n) for n in names],
            "merges": [int(counters[n]) for n in names],
        },
        schema={"associativity": pl.Utf8, "merges": pl.UInt64},
    )


def concat_with_scheme(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    parts = [f.with_columns(pl.lit(name).alias("scheme")) for name, f in frames.items()]
    if not parts:
        return pl.DataFrame()
    out = pl.concat(parts, how="vertical")
    return out.select(["scheme", *[c for c in out.columns if c != "scheme"]])


def _total_merges(s: dict[str, Any]) -> int | None:
    """Merges of every kind (log-block schemes; None for the others)."""
    kinds = [s[f"merges_{k}"] for k in MERGE_KINDS]
    return None if any(k is None for k in kinds) else sum(kinds)


def compare_table(results: dict[str, Result]) -> pl.DataFrame:
    """One row per scheme, the columns of `ftlab compare`'s table, in base units."""
    rows = []
    summaries = {name: r.summary for name, r in results.items()}
    for name, r in results.items():
        s = r.summary
        rows.append(
            {
                "scheme": name,
                "dram_peak_bytes": s["memory_peak_bytes"],
                "dram_final_bytes": s["memory_final_bytes"],
                "dram_vs_page": memory_vs_page(summaries, name),
                "dram_budget_bytes": s["dram_budget_bytes"],
                "waf": s["waf"],
                "gc_invocations": s["gc_invocations"],
                "gc_pages_moved": s["gc_pages_moved"],
                "read_mean_us": s["read_mean_us"],
                "read_p99_us": s["read_p99_us"],
                "write_mean_us": s["write_mean_us"],
                "write_p99_us": s["write_p99_us"],
                "gc_reads": s["gc_reads"],
                "translation_reads": s["translation_reads"],
                "misprediction_reads": s["misprediction_reads"],
                "merge_reads": s["merge_reads"],
                "merges": _total_merges(s),
                "merge_time_mean_us": s["merge_time_mean_us"],
                "merge_cost_mean_us": s["merge_cost_mean_us"],
                "translation_programs": s["translation_programs"],
                "flash_programs": s["flash_programs"],
                "flash_erases": s["flash_erases"],
                "iops": s["iops"],
                "saturated": s["saturated"],
                "saturated_in_bursts": s["saturated_in_bursts"],
                "busiest_die_utilisation": s["busiest_die_utilisation"],
                "peak_window_utilisation": s["peak_window_utilisation"],
                "precondition_mode": s["precondition_mode"],
                "precondition_waf": s["precondition_waf"],
                "wall_seconds": r.wall_seconds,
            }
        )
    schema = {
        "scheme": pl.Utf8,
        "dram_peak_bytes": pl.UInt64,
        "dram_final_bytes": pl.UInt64,
        "dram_vs_page": pl.Float64,
        "dram_budget_bytes": pl.UInt64,
        "waf": pl.Float64,
        "gc_invocations": pl.UInt64,
        "gc_pages_moved": pl.UInt64,
        "read_mean_us": pl.Float64,
        "read_p99_us": pl.Float64,
        "write_mean_us": pl.Float64,
        "write_p99_us": pl.Float64,
        "gc_reads": pl.UInt64,
        "translation_reads": pl.UInt64,
        "misprediction_reads": pl.UInt64,
        "merge_reads": pl.UInt64,
        "merges": pl.UInt64,
        "merge_time_mean_us": pl.Float64,
        "merge_cost_mean_us": pl.Float64,
        "translation_programs": pl.UInt64,
        "flash_programs": pl.UInt64,
        "flash_erases": pl.UInt64,
        "iops": pl.Float64,
        "saturated": pl.Boolean,
        "saturated_in_bursts": pl.Boolean,
        "busiest_die_utilisation": pl.Float64,
        "peak_window_utilisation": pl.Float64,
        "precondition_mode": pl.Utf8,
        "precondition_waf": pl.Float64,
        "wall_seconds": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)
