"""Plain-text tables for the terminal (no dependencies, so the command line starts fast)."""

from __future__ import annotations

from collections.abc import Sequence
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
        *(
            [("mapping-cache hit ratio", number(s["cache_hit_ratio"], 4))]
            if s.get("cache_hit_ratio") is not None
            else []
        ),
        ("WAF", number(s["waf"])),
        ("GC invocations / pages moved", f"{s['gc_invocations']:,} / {s['gc_pages_moved']:,}"),
        (
            "mapping memory final / peak",
            f"{mib(s['memory_final_bytes'])} / {mib(s['memory_peak_bytes'])}",
        ),
    ]
    if s["mode"] == "timed":
        rows += [
            ("read latency mean / p99", latency_pair(s["read_mean_us"], s["read_p99_us"])),
            ("write latency mean / p99", latency_pair(s["write_mean_us"], s["write_p99_us"])),
            ("IOPS (simulated)", number(s["iops"], 1)),
        ]
    return rows


def latency_pair(mean: float | None, p99: float | None) -> str:
    if mean is None:
        return "-"
    return f"{mean:,.1f} / {p99:,.1f} us"
