"""The scorecard as text (the command's table), HTML (`index.html`, in the reproductions'
report style), one plot per family (reference against measured), and `scorecard.json`."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

from ftlab._html import SCRIPT, STYLE
from ftlab._report import _pyplot, _save

if TYPE_CHECKING:
    from ftlab.validate import CaseResult, Scorecard

HEADER = ["family", "case", "reference", "source", "measured", "tolerance", "error", "result"]


def number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if unit == "ns":
        from ftlab._format import latency

        return latency(value / 1000.0)
    text = f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return f"{text} {unit}".rstrip() if unit not in ("", "B/s") else _bytes(value, unit)


def _bytes(value: float, unit: str) -> str:
    if unit == "B/s":
        return f"{value / 1e6:,.1f} MB/s"
    return f"{value:.4g}"


def error_text(r: CaseResult) -> str:
    return "-" if r.error is None else f"{r.error * 100:+.2f}%"


def measured_text(r: CaseResult) -> str:
    """The measured value; a bracket's two, `low .. high`."""
    text = number(r.measured, r.case.unit)
    if r.case.check == "bracket":
        text += " .. " + number(r.measured_high, r.case.unit)
    return text


def rows(card: Scorecard, sources: bool = True) -> list[list[str]]:
    out = []
    for r in card.results:
        c = r.case
        out.append(
            [
                c.family,
                c.name,
                number(c.reference, c.unit),
                c.source if sources else "",
                measured_text(r),
                c.tolerance_text,
                error_text(r),
                r.status,
            ]
        )
    return out


def summary_lines(card: Scorecard) -> list[str]:
    s = card.summary

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x * 100:.2f}%"

    lines = [
        f"{s['passed']} of {s['cases']} cases passed, {s['failed']} failed"
        + (f", {s['xfail']} expected failures" if s["xfail"] else "")
        + (f", {s['skipped']} skipped" if s["skipped"] else "")
        + f"; |error| of the value cases: median {pct(s['median_error'])}, "
        f"worst {pct(s['worst_error'])} ({s['worst_case']})"
    ]
    for family, f in s["families"].items():
        lines.append(
            f"  {family}: {f['passed']}/{f['cases']} passed"
            + (f", {f['failed']} failed" if f["failed"] else "")
            + (f", {f['xfail']} xfail" if f["xfail"] else "")
            + f"; median {pct(f['median_error'])}, worst {pct(f['worst_error'])}"
        )
    return lines


def html_table(card: Scorecard) -> str:
    head = "".join(f"<th>{h}</th>" for h in [*HEADER, "why this tolerance"])
    body = []
    for r, row in zip(card.results, rows(card)):
        cells = [html.escape(x) for x in row]
        cells.append(html.escape(r.case.reason + (f" [{r.message}]" if r.message else "")))
        tds = "".join(
            f'<td class="num">{c}</td>' if i in (2, 4, 6) else f"<td>{c}</td>"
            for i, c in enumerate(cells)
        )
        cls = "agrees" if r.status in ("pass", "xpass", "skipped") else "differs"
        body.append(f'<tr class="{cls}">{tds}</tr>')
    return f"<table>\n<tr>{head}</tr>\n" + "\n".join(body) + "\n</table>"


def plot_family(card: Scorecard, family: str, folder: Path) -> str | None:
    """Reference (lines) against measured (points) per series, over each case's `x`; the
    measured / reference ratio for bounds."""
    results = [r for r in card.results if r.case.family == family and r.case.x is not None]
    if not results:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.6))
    series = list(dict.fromkeys(r.case.series for r in results))
    ratio = family in ("timing", "peer") or any(r.case.check != "value" for r in results)
    for i, name in enumerate(series):
        points = sorted(
            (r for r in results if r.case.series == name), key=lambda r: float(r.case.x or 0)
        )
        xs = [float(r.case.x or 0) for r in points]
        color = f"C{i % 10}"
        if ratio and points[0].case.check == "bracket":
            # The two runs that bracket the reference: a vertical bar per case.
            lows = [(r.measured or 0.0) / r.case.reference for r in points]
            highs = [(r.measured_high or 0.0) / r.case.reference for r in points]
            ax.vlines(xs, lows, highs, color=color, linewidth=3, alpha=0.6, label=name)
        elif ratio:
            ys = [(r.measured or 0.0) / r.case.reference for r in points]
            ax.plot(xs, ys, marker="o", linestyle="-", color=color, label=name)
        else:
            ax.plot(xs, [r.case.reference for r in points], color=color, label=f"{name} model")
            ax.scatter(xs, [r.measured or 0.0 for r in points], color=color, marker="x")
        for r, x in zip(points, xs):
            if r.status == "fail":
                ax.annotate("fail", (x, 1.0 if ratio else r.measured or 0.0), color="red")
    if ratio:
        ax.axhline(1.0, color="gray", linewidth=0.8)
        ax.set_ylabel("measured / reference")
    else:
        ax.set_ylabel("write amplification (lines: model, x: ftlab)")
        ax.set_yscale("log")
    ax.set_xlabel(results[0].case.x_label or "case")
    ax.set_title(f"{family}: reference vs measured")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    files = _save(fig, folder, f"{family}")
    plt.close(fig)
    return files[0]


def write(card: Scorecard, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scorecard.json").write_text(card.to_json())
    families = list(card.summary["families"])
    plots = [p for p in (plot_family(card, f, folder) for f in families) if p]
    images = "\n".join(
        f'<a href="{p[:-4]}.svg"><img src="{p}" alt="{html.escape(p[:-4])}"></a>' for p in plots
    )
    summary = "".join(f"<p>{html.escape(line)}</p>" for line in summary_lines(card))
    mode = "quick mode (the subset the tests run)" if card.quick else "the full catalogue"
    overrides = (
        f'<p class="banner">Model overridden for every simulation (not the references): '
        f"{html.escape(str(card.overrides))}</p>"
        if card.overrides
        else ""
    )
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ftlab validate</title>
<style>{STYLE}</style>
<script>{SCRIPT}</script>
</head>
<body>
<h1>ftlab validate</h1>
<p>ftlab's model against references from outside ftlab ({mode}): closed-form models,
physical bounds and a peer simulator. A bound's distance from its reference is not an
error: the median and worst errors are over the cases compared with a value.
<a href="scorecard.json">scorecard.json</a>.</p>
{overrides}{summary}
{html_table(card)}
{images}
</body>
</html>
"""
    index = folder / "index.html"
    index.write_text(page)
    return index
