"""Plain-text tables for the terminal (no dependencies, so the command line starts fast)."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any


def render_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns aligned; numbers right-aligned, text left-aligned."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    numeric = [all(is_number(row[i]) for row in rows) and len(rows) > 0 for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric)]
        return "  ".join(parts).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in cells[1:])
    return "\n".join(out)


def is_number(value: Any) -> bool:
    if isinstance(value, (int, float)):
        return True
    try:
        float(str(value).split(" ")[0].replace(",", ""))
        return True
    except ValueError:
        return False


def number(value: float | None, digits: int = 3, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        text = f"{value:,}"
    else:
        text = f"{value:,.{digits}f}"
    return f"{text} {unit}".rstrip()


def latency(us: float | None) -> str:
    """A latency given in microseconds, for people: three significant digits in the unit
    that suits it (`850 ns`, `12.3 us`, `4.56 ms`, `1.20 s`; `1,234 s` from 1,000 s on).
    Every latency printed to the terminal or in a report table goes through here; JSON,
    CSV and DataFrames keep plain microseconds."""
    if us is None:
        return "-"
    if us == 0:
        return "0 us"
    # Rounded first, so that 999.6 us becomes 1.00 ms rather than 1000 us.
    ns = float(f"{us * 1000:.3g}")
    for unit, scale in (("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)):
        if abs(ns) < 1000 * scale:
            value = ns / scale
            digits = max(0, 2 - math.floor(math.log10(abs(value))))
            return f"{value:.{digits}f} {unit}"
    return f"{us / 1e6:,.0f} s"


def latency_table(
    header: Sequence[str], rows: Sequence[Sequence[Any]], columns: Collection[int]
) -> tuple[list[str], list[list[Any]]]:
    """A table for people from one with latencies in microseconds (as numbers) in
    `columns`: those cells through `latency`, and a trailing " us" dropped from their
    headers (the unit is in each cell)."""
    shown = [h.removesuffix(" us") if i in columns else h for i, h in enumerate(header)]
    out = [
        [latency(None if c is None else float(c)) if i in columns else c for i, c in enumerate(r)]
        for r in rows
    ]
    return shown, out


def mib(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.2f} MiB"


def summary_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    """The summary of one run as (metric, value) rows."""
    rows = [
        ("scheme", s["ftl"]),
        ("source", s["source"]),
        ("mode", s["mode"]),
        ("requests", number(s["requests"])),
        (
            "host pages read / written / trimmed",
            f"{s['host_pages_read']:,} / {s['host_pages_written']:,} / {s['host_pages_trimmed']:,}",
        ),
        ("unmapped page reads", number(s["unmapped_reads"])),
        (
            "flash reads / programs / erases",
            f"{s['flash_reads']:,} / {s['flash_programs']:,} / {s['flash_erases']:,}",
        ),
        (
            "translation reads / programs",
            f"{s['translation_reads']:,} / {s['translation_programs']:,}",
        ),
        ("misprediction reads", number(s["misprediction_reads"])),
        ("GC reads", number(s["gc_reads"])),
        *(
            [("mapping-cache hit ratio", number(s["cache_hit_ratio"], 4))]
            if s.get("cache_hit_ratio") is not None
            else []
        ),
        ("WAF", number(s["waf"])),
        *stack_rows(s),
        ("GC invocations / pages moved", f"{s['gc_invocations']:,} / {s['gc_pages_moved']:,}"),
        (
            "mapping memory final / peak",
            f"{mib(s['memory_final_bytes'])} / {mib(s['memory_peak_bytes'])}",
        ),
    ]
    rows += merge_rows(s)
    if s["mode"] == "timed":
        rows += [
            ("read latency mean / p99", latency_pair(s["read_mean_us"], s["read_p99_us"])),
            ("write latency mean / p99", latency_pair(s["write_mean_us"], s["write_p99_us"])),
            ("IOPS (simulated)", number(s["iops"], 1)),
        ]
    return rows


def stack_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    """The host stack's lines of the run summary (none for the trace as it is)."""
    if s.get("stack", "inplace") == "inplace":
        return []
    rows = [
        ("host stack", str(s["stack"])),
        (
            "WAF file system x device = total",
            f"{number(s.get('fs_waf'))} x {number(s['waf'])} = {number(s.get('total_waf'))}",
        ),
        ("host memory", mib(s.get("host_memory_bytes"))),
    ]
    if s.get("sections_cleaned") is not None:
        rows.append(("sections cleaned by the host", number(int(s["sections_cleaned"]))))
    return rows


def merge_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    """The merges of a log-block scheme (none for the other schemes)."""
    if s.get("merges_switch") is None:
        return []
    rows = [
        ("log blocks", number(s["log_blocks"])),
        (
            "merges switch / partial / full",
            f"{s['merges_switch']:,} / {s['merges_partial']:,} / {s['merges_full']:,}",
        ),
        ("pages copied by merges", number(s["merge_pages_copied"])),
    ]
    if s.get("merge_time_mean_us") is not None:
        rows.append(
            (
                "merge time mean / max",
                latency_pair(s["merge_time_mean_us"], s["merge_time_max_us"]),
            )
        )
    rows += [
        (
            "merge cost mean / max (serial model)",
            latency_pair(s["merge_cost_mean_us"], s["merge_cost_max_us"]),
        ),
        ("log block written at merge", percent(s["log_utilisation_at_merge"], digits=1)),
    ]
    return rows


def latency_pair(mean: float | None, p99: float | None) -> str:
    """`mean / p99`, each in its own unit; `-` when not measured."""
    if mean is None:
        return "-"
    return f"{latency(mean)} / {latency(p99)}"


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain HTML table (for notebooks and the compare report)."""
    from html import escape

    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def compact(value: float | None) -> str:
    """A count in few characters: 1,234 / 12.3 k / 4.56 M."""
    if value is None:
        return "-"
    if abs(value) < 10_000:
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3f}"
    if abs(value) < 10_000_000:
        return f"{value / 1e3:,.1f} k"
    return f"{value / 1e6:,.2f} M"


COMPARE_HEADER = [
    "scheme",
    "DRAM peak",
    "DRAM vs page",
    "WAF",
    "GC victims",
    "read mean/p99",
    "write mean/p99",
    "GC reads",
    "transl. reads",
    "mispred. reads",
    "merge reads",
    "wall s",
]


#: After the latencies of a scheme whose open-loop replay saturated the device.
SATURATED_MARK = "!"


def compare_rows(
    summaries: dict[str, dict[str, Any]], walls: dict[str, float] | None = None
) -> tuple[list[str], list[tuple[str, ...]]]:
    """The side-by-side table of `ftlab compare`: DRAM, WAF, GC, latency, extra flash
    reads by cause (beyond the host's own). The latencies of saturated runs are marked
    with `!` (see `compare_notes`)."""
    rows: list[tuple[str, ...]] = []
    # Latencies stay aligned: when a row is marked, the others are padded.
    marked = any(s.get("saturated") for s in summaries.values())
    pad = " " * (1 + len(SATURATED_MARK)) if marked else ""
    for name, s in summaries.items():
        mark = f" {SATURATED_MARK}" if s.get("saturated") else pad
        rows.append(
            (
                name,
                mib(s["memory_peak_bytes"]),
                percent(memory_vs_page(summaries, name), digits=1),
                number(s["waf"]),
                compact(s["gc_invocations"]),
                latency_pair(s["read_mean_us"], s["read_p99_us"]) + mark,
                latency_pair(s["write_mean_us"], s["write_p99_us"]) + mark,
                compact(s["gc_reads"]),
                compact(s["translation_reads"]),
                compact(s["misprediction_reads"]),
                compact(s["merge_reads"]),
                "-" if walls is None else f"{walls[name]:.2f}",
            )
        )
    header = list(COMPARE_HEADER)
    if any(s.get("stack", "inplace") != "inplace" for s in summaries.values()):
        # Host stacks: which, and the write amplification of the file system and of the
        # whole stack beside the device's.
        header[1:1] = ["stack"]
        header[5:5] = ["FS WAF", "total WAF"]
        rows = [
            (
                r[0],
                str(s.get("stack", "inplace")),
                *r[1:4],
                number(s.get("fs_waf")),
                number(s.get("total_waf")),
                *r[4:],
            )
            for r, s in zip(rows, summaries.values())
        ]
    if walls is None:
        header = header[:-1]
        rows = [r[:-1] for r in rows]
    return header, rows


def memory_vs_page(summaries: dict[str, dict[str, Any]], name: str) -> float | None:
    """A scheme's peak DRAM as a share of the page-level FTL's in the same comparison."""
    page = summaries.get("page")
    if page is None or not page["memory_peak_bytes"]:
        return None
    return float(summaries[name]["memory_peak_bytes"] / page["memory_peak_bytes"])


def compare_notes(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """Footnotes under the compare table: the mapping DRAM budget, when there is one, and
    which schemes' replays saturated the device."""
    notes = []
    budget = next(iter(summaries.values()), {}).get("dram_budget_bytes")
    if budget:
        table = next(iter(summaries.values())).get("page_table_bytes")
        share = f" ({percent(budget / table, digits=1)} of the page-level table)" if table else ""
        notes.append(
            f"mapping DRAM budget: {mib(budget)}{share}, for the schemes that cache their "
            "map; DRAM peak adds each scheme's GC bookkeeping; DRAM vs page: DRAM peak "
            "relative to the page-level FTL's"
        )
    by_flush: dict[str, list[str]] = {}
    for name, s in summaries.items():
        by_flush.setdefault(s.get("buffer_flush") or "no buffer", []).append(name)
    if len(by_flush) > 1:
        which = "; ".join(f"{flush} for {', '.join(names)}" for flush, names in by_flush.items())
        notes.append(
            f"write buffer flush: {which} (LeaFTL's design flushes its buffer sorted by "
            "logical page; that also groups pages on flash and changes write amplification: "
            "--set buffer.flush=sorted gives it to every scheme)"
        )
    saturated = [name for name, s in summaries.items() if s.get("saturated")]
    if not saturated:
        return notes
    scales = [
        s["suggested_time_scale"] for s in summaries.values() if s.get("suggested_time_scale")
    ]
    in_bursts = [name for name in saturated if summaries[name].get("saturated_in_bursts")]
    bursts = f"; in bursts only for {', '.join(in_bursts)}" if in_bursts else ""
    return notes + [
        f"{SATURATED_MARK} saturated: the open-loop replay outran the device for "
        f"{', '.join(saturated)}{bursts} (requests waited in a growing queue: these "
        f"latencies measure the queue, not the device); "
        f"{_remedy(max(scales) if scales else None)}"
    ]


def _remedy(time_scale: float | None) -> str:
    closed = "--set replay.mode=closed"
    if time_scale is None:
        return f"replay in closed loop with {closed}"
    return f"replay slower with --set replay.time_scale={scale_text(time_scale)} or use {closed}"


def scale_text(value: float) -> str:
    """A time scale for `--set`: three significant digits (whole numbers from 100 on),
    rounded up (slower is the safe side), always a float (`4.0`, `3.72`, `1235.0`)."""
    if value <= 0:
        return f"{value:.1f}"
    digits = max(0, 2 - math.floor(math.log10(value)))
    scaled = math.ceil(round(value * 10**digits, 6)) / 10**digits
    text = f"{scaled:.{digits}f}"
    if "." not in text:
        return text + ".0"
    text = text.rstrip("0")
    return text + "0" if text.endswith(".") else text


def percent(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def load_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """The offered load and how busy the dies were, for the run summary (nothing in
    mapping-only runs or reports without it)."""
    load = report["metrics"].get("load")
    if not load:
        return []
    text = (
        f"{load.get('mode', '?')} loop, {number(load.get('offered_iops'), 0)} IOPS / "
        f"{number(_mb(load.get('offered_bytes_per_s')), 1)} MB/s offered, busiest die "
        f"{percent(load.get('busiest_die_utilisation'))} busy "
        f"(mean {percent(load.get('mean_die_utilisation'))})"
    )
    rows = [("load", text)]
    peak = load.get("peak_window_utilisation")
    if peak is not None and load.get("mode") == "open":
        rows.append(
            (
                "busiest second",
                f"busiest die given {percent(peak)} of a second's work; "
                f"{_queued(load)} waited in a queue",
            )
        )
    if load.get("saturated"):
        if load.get("saturated_in_bursts"):
            rows.append(("SATURATED", "in bursts (see the warning)"))
        else:
            backlog = load.get("backlog_at_end_ns")
            at_end = "" if backlog is None else f", {latency(backlog / 1000)} of backlog at the end"
            rows.append(("SATURATED", f"yes{at_end} (see the warning)"))
    return rows


def _queued(load: dict[str, Any]) -> str:
    """The requests slower than one block's reclaim, for the summary."""
    limit = load.get("queue_limit_ns")
    share = f"{number(load.get('queued_requests'), 0)} requests"
    return share if limit is None else f"{share} (slower than {latency(limit / 1000)})"


def _mb(value: float | None) -> float | None:
    return None if value is None else float(value) / 1e6


def saturation_warning(report: dict[str, Any]) -> str | None:
    """The warning a run prints when its open-loop replay saturated the device."""
    load = report["metrics"].get("load") or {}
    if not load.get("saturated"):
        return None
    remedy = _remedy(load.get("suggested_time_scale"))
    if load.get("saturated_in_bursts"):
        peak = percent(load.get("peak_window_utilisation"))
        return (
            "warning: the open-loop replay saturated the device in bursts: in its busiest\n"
            f"  second the busiest die was given {peak} of a second's work (garbage collection\n"
            f"  included) and {_queued(load)} waited in a queue, so\n"
            "  the latencies of those bursts measure the queue, not the device. To measure the\n"
            f"  device, {remedy}."
        )
    busy = percent(load.get("busiest_die_utilisation"))
    return (
        "warning: the open-loop replay saturated the device: requests arrived faster than\n"
        f"  the busiest die could serve them ({busy} busy) and the queue grew without bound,\n"
        "  so the latencies measure the queue, not the device. To measure the device,\n"
        f"  {remedy}."
    )


#: What each stall is, for the warnings (the part names of `metrics.latency_breakdown`).
STALL_NAMES = {
    "buffer_wait": "waiting for a write-buffer slot",
    "queue_host": "queueing behind other host I/O",
    "bg_gc": "background garbage collection",
    "bg_merge": "background log-block merges",
    "bg_host_cleaning": "host-stack cleaning in the background",
    "bg_mapping": "background mapping write-back",
    "fg_gc": "garbage collection in the foreground",
    "fg_merge": "log-block merges in the foreground",
    "fg_host_cleaning": "host-stack cleaning in the foreground",
    "fg_mapping": "mapping write-back in the foreground",
}


def breakdown_rows(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The "where the time went" table of a run: per latency part with any time, its
    mean, p99 and share of the read and of the write latency (parts add up to the mean).
    Empty in mapping-only runs and reports without a breakdown."""
    b = report["metrics"].get("latency_breakdown")
    header = ["where the time went", "read mean", "p99", "share", "write mean", "p99", "share"]
    if not b:
        return header, []
    ops = [b[op] if b[op]["requests"] else None for op in ("read", "write")]
    rows = []
    for i, part in enumerate(b["read"]["parts"]):
        stats = [None if o is None else o["parts"][i] for o in ops]
        if not any(st and st["mean_ns"] > 0 for st in stats):
            continue
        row = [part["part"]]
        for st in stats:
            if st is None:
                row += ["-", "-", "-"]
            elif st["mean_ns"] == 0:
                row += ["-", "-", "-"]
            else:
                row += [
                    latency(st["mean_ns"] / 1000),
                    latency(st["p99_ns"] / 1000),
                    percent(st["share"]),
                ]
        rows.append(row)
    return header, rows


def top_parts(summary: dict[str, Any], op: str, count: int = 3) -> str:
    """The `count` largest parts of `op`'s mean latency with their shares
    (`fg_gc 61%, sense 20%, transfer 9%`), from a summary's breakdown columns."""
    prefix, suffix = f"{op}_", "_us"
    names = [k for k in summary if k.startswith(prefix) and k.endswith(suffix)]
    names = [k for k in names if k not in (f"{op}_mean_us", f"{op}_p99_us")]
    values = {k[len(prefix) : -len(suffix)]: summary[k] or 0.0 for k in names}
    total = sum(values.values())
    if total <= 0:
        return "-"
    top = sorted(values.items(), key=lambda kv: -kv[1])[:count]
    return ", ".join(f"{name} {percent(v / total)}" for name, v in top if v > 0)


def stall_warnings(report: dict[str, Any]) -> list[str]:
    """One warning per stall of the load report: a wait that holds a large share of the
    read or write latency, named, counted and with what to change."""
    load = report["metrics"].get("load") or {}
    out = []
    for st in load.get("stalls") or []:
        what = STALL_NAMES.get(st["part"], st["part"])
        out.append(
            f"warning: {what} ({st['part']}) held {st['requests']:,} {st['op']}s, "
            f"{percent(st['share'])} of {st['op']} latency "
            f"({latency(st['mean_ns'] / 1000)} of the {st['op']} mean).\n"
            f"  To change it: {st['remedy']}."
        )
    return out


def latency_explanations(summary: dict[str, Any], report: dict[str, Any]) -> list[str]:
    """A note for each request type whose p99 is clearly below its mean: the mean is
    carried by fewer than 1% of the requests (said with the p99.9, the maximum and the
    largest parts)."""
    out = []
    lat = report["metrics"].get("latency") or {}
    for op in ("read", "write"):
        mean, p99 = summary.get(f"{op}_mean_us"), summary.get(f"{op}_p99_us")
        stats = lat.get(op) or {}
        # (Quantiles are exact to 3 digits: a p99 within 5% of the mean is no news.)
        if mean is None or p99 is None or p99 >= 0.95 * mean:
            continue
        out.append(
            f"note: the {op} p99 ({latency(p99)}) is below the mean ({latency(mean)}): fewer "
            f"than 1% of the {op}s carry most of the time (p99.9 "
            f"{latency(stats.get('p999_ns', 0) / 1000)}, max "
            f"{latency(stats.get('max_ns', 0) / 1000)}; largest parts: {top_parts(summary, op)})"
        )
    return out


def precondition_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """How the device was prepared before the measured run (nothing in reports without
    it)."""
    p = report.get("precondition")
    if not p:
        return []
    mode = p.get("mode", "?")
    parts = []
    if mode != "none":
        parts.append(f"{number(p.get('host_pages_written'))} pages written")
        parts.append(f"WAF {number(p.get('waf'))}")
    if mode == "steady":
        windows = len(p.get("window_waf") or [])
        state = "steady" if p.get("steady") else "not steady"
        parts.append(f"{state} after {windows:,} window{'' if windows == 1 else 's'}")
    if p.get("warmup_pages"):
        parts.append(f"warm-up {number(p['warmup_pages'])} pages")
    return [("preconditioning", mode + (": " + ", ".join(parts) if parts else ""))]


def scheduler_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """What the flash scheduler did, when it did anything."""
    s = report["metrics"].get("scheduler")
    if not s or not any(s.values()):
        return []
    return [
        (
            "multi-plane reads / programs",
            f"{s.get('multi_plane_reads', 0):,} / {s.get('multi_plane_programs', 0):,}",
        ),
        (
            "suspensions / background operations",
            f"{s.get('suspensions', 0):,} / {s.get('background_operations', 0):,}",
        ),
    ]


def run_rows(report: dict[str, Any], summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The run summary: headline numbers, how the trace was read, the load, the
    preconditioning and the scheduler."""
    rows = summary_rows(summary)
    rows[2:2] = trace_rows(report)
    rows += load_rows(report) + precondition_rows(report) + scheduler_rows(report)
    return rows + media_rows(report)


def media_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """Read retries and wear (`[media]`), for the run summary."""
    m = report["metrics"].get("media")
    if not m:
        return []
    retries = f"{number(m['retries_per_read'])} per read"
    if m["uncorrectable_reads"] or m["uncorrectable_copies"]:
        retries += (
            f", {m['uncorrectable_reads']:,} reads and "
            f"{m['uncorrectable_copies']:,} copies uncorrectable"
        )
    life = f"{m['percentage_used']}% used of {m['rated_pe_cycles']:,} P/E cycles"
    if m["remaining_tbw_bytes"] is not None:
        life += f", {m['remaining_tbw_bytes'] / 1e12:.3g} TB left to write"
    return [("read retries", retries), ("media life", life)]


def trace_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """How a trace was read and mapped, for the run summary."""
    t = report.get("trace")
    if not t:
        return []
    devices = t["devices"]
    shown = ", ".join(devices[:5]) + (f", ... ({len(devices)} in all)" if len(devices) > 5 else "")
    mapping = []
    if t["compacted"]:
        mapping.append("addresses compacted")
    if t["device_sized_to_trace"]:
        mapping.append("device fitted to the trace")
    rows = [
        (
            "trace format",
            f"{t['format']}" + ("" if t["compression"] == "none" else f" ({t['compression']})"),
        ),
        ("devices", f"{shown} ({t['device_layout']})" if len(devices) > 1 else shown),
    ]
    if mapping:
        rows.append(("mapping", ", ".join(mapping)))
    if t["reordered"] or t["clamped"] or t["gaps_shortened"]:
        rows.append(
            (
                "timestamps",
                f"{t['reordered']:,} reordered, {t['clamped']:,} clamped, "
                f"{t['gaps_shortened']:,} gaps shortened",
            )
        )
    if t["diagnostics"]["bad_lines"]:
        rows.append(("bad lines skipped", number(t["diagnostics"]["bad_lines"])))
    return rows


def trace_info_rows(info: dict[str, Any]) -> list[tuple[str, str]]:
    """`ftlab trace info` as (metric, value) rows."""
    page = info["page_size"]

    def ops(key: str) -> str:
        o = info[key]
        if not o["requests"]:
            return "0"
        return (
            f"{o['requests']:,} ({o['bytes'] / 2**20:,.1f} MiB, "
            f"{o['min_bytes']:,} / {o['mean_bytes']:,.0f} / {o['max_bytes']:,} B min/mean/max)"
        )

    d = info["diagnostics"]
    rows = [
        ("file", info["file"]),
        (
            "format",
            info["format"] + ("" if info["compression"] == "none" else f" ({info['compression']})"),
        ),
        ("lines (records) read", number(d["lines"])),
        ("requests", number(info["requests"])),
        ("reads", ops("read")),
        ("writes", ops("write")),
        ("trims", ops("trim")),
        ("read ratio (of reads + writes)", f"{info['read_ratio']:.3f}"),
        (
            f"footprint ({page:,} B pages)",
            f"{info['footprint_pages']:,} pages = {mib(info['footprint_bytes'])}",
        ),
        (
            "pages written (distinct / in all)",
            f"{info['written_pages']:,} / {info['page_writes']:,}",
        ),
        ("overwrite factor", number(info["overwrite_factor"])),
        (
            "address span",
            f"{info['min_offset_bytes']:,} .. {info['max_end_bytes']:,} B "
            f"({(info['max_end_bytes'] - info['min_offset_bytes']) / 2**30:,.2f} GiB)",
        ),
        (f"span as laid out ({info['device_layout']})", f"{info['span_pages']:,} pages"),
        ("time span", f"{info['time_span_ns'] / 1e9:,.3f} s"),
        (
            "timestamp inversions",
            f"{info['timestamp_inversions']:,} (largest {info['max_inversion_ns'] / 1e6:,.3f} ms)",
        ),
        ("devices", f"{len(info['devices']):,} kept of {info['devices_in_trace']:,}"),
    ]
    if d["lines_without_request"]:
        rows.append(("lines without a request", number(d["lines_without_request"])))
    if d["bad_lines"]:
        rows.append(("bad lines skipped", number(d["bad_lines"])))
    return rows


def size_rows(info: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """The request-size histogram, non-empty buckets only."""
    rows = []
    low = 0
    for b in info["size_histogram"]:
        up = b["up_to_bytes"]
        label = f"> {low:,}" if up is None else f"{low + 1 if low else 0:,} .. {up:,}"
        if b["reads"] or b["writes"] or b["trims"]:
            rows.append((label, f"{b['reads']:,}", f"{b['writes']:,}", f"{b['trims']:,}"))
        low = up or low
    return rows


def device_rows(info: dict[str, Any], limit: int = 20) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for d in info["devices"][:limit]:
        rows.append(
            (
                str(d["name"]),
                f"{d['requests']:,}",
                f"{d['reads']:,}",
                f"{d['writes']:,}",
                f"{d['trims']:,}",
                f"{d['footprint_pages']:,}",
                f"{d['max_end_bytes'] / 2**30:,.2f}",
            )
        )
    return rows
