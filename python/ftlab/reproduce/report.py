"""`ftlab reproduce all`: every reproduction in one HTML report.

`run_all(out_dir, quick)` runs each experiment of `EXPERIMENTS` into `out_dir/NAME` and
`write(out_dir)` gathers what they wrote into `out_dir/index.html`: one table of every
headline (the paper, the metric, the paper's number, ours, their ratio, and the one-line
reason wherever they differ by more than 30%), then a section per experiment with its
headlines, its plots (`*.png`, linked relative to the report) and links to its tables.
Headlines come from each experiment's `summary.json` (the contract is in `_summary.py`), so
any experiment registered in `EXPERIMENTS` takes part by writing one; an experiment
without it, or whose run failed, is listed as such. Each section names the device model
the experiment ran on (its `model.json`) and the scorecard families that validate it;
`run_all` also runs the quick `ftlab validate` scorecard into `out_dir/validation`, and the
page links it with its headline (cases passed, median and worst error).

The page marks whether its plots loaded: a script sets `data-plots` on `<body>` to `ok`,
or to `broken: ...` naming the images that did not load, and shows a banner then (the
browser test reads it).
"""

from __future__ import annotations

import html
import json
import traceback
from pathlib import Path
from typing import Any

from ftlab._html import SCRIPT, STYLE
from ftlab.reproduce import EXPERIMENTS, MODEL_FILE, MODELS, VALIDATION_DIR, run
from ftlab.reproduce._summary import DIFFERENCE, Headline, read

#: Written by `run_all` when an experiment's run raised: its traceback.
FAILED = "FAILED.txt"


def run_all(
    out_dir: Path, quick: bool, names: list[str] | None = None, validation: bool | None = None
) -> Path:
    """Runs the experiments (default: all) into `out_dir/NAME`, each failure recorded in its
    folder and the others run on, then (with `validation`; by default when running all) the
    quick `ftlab validate` scorecard into `out_dir/validation`, and writes the report;
    returns `out_dir/index.html`."""
    if validation is None:
        validation = names is None
    for name in names or sorted(EXPERIMENTS):
        folder = out_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / FAILED).unlink(missing_ok=True)
        print(f"== {name}", flush=True)
        try:
            run(name, folder, quick)
        except Exception:  # noqa: BLE001 - one experiment's failure is reported, not fatal
            (folder / FAILED).write_text(traceback.format_exc())
            print(f"{name} failed: see {folder / FAILED}", flush=True)
    if validation:
        run_validation(out_dir / VALIDATION_DIR)
    return write(out_dir, quick=quick)


def run_validation(folder: Path) -> None:
    """The quick scorecard (`ftlab validate --quick --out folder`); a failure to run it is
    recorded in `folder/FAILED.txt`, as an experiment's."""
    from ftlab import validate

    folder.mkdir(parents=True, exist_ok=True)
    (folder / FAILED).unlink(missing_ok=True)
    print("== validation (ftlab validate --quick)", flush=True)
    try:
        validate.validate(quick=True).write_report(folder)
    except Exception:  # noqa: BLE001 - reported in the page, not fatal
        (folder / FAILED).write_text(traceback.format_exc())
        print(f"validation failed: see {folder / FAILED}", flush=True)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.2f}%"


def validation_html(out_dir: Path) -> str:
    """The scorecard's headline and link, from `out_dir/validation/scorecard.json`."""
    folder = out_dir / VALIDATION_DIR
    card = folder / "scorecard.json"
    run = "<code>ftlab validate --quick --out DIR</code>"
    if (folder / FAILED).is_file():
        return (
            f'<p class="banner">The validation scorecard did not run '
            f'(<a href="{VALIDATION_DIR}/{FAILED}">traceback</a>); run {run}.</p>'
        )
    if not card.is_file():
        return f'<p class="note">No validation scorecard here: run {run}.</p>'
    document: dict[str, Any] = json.loads(card.read_text())
    s = document["summary"]
    mode = "quick" if document.get("quick") else "full"
    families = "; ".join(
        f"{name}: {f['passed']}/{f['cases']} passed, worst {_pct(f['worst_error'])}"
        for name, f in s["families"].items()
    )
    return (
        f'<p>Validation (<a href="{VALIDATION_DIR}/index.html">{mode} scorecard</a>, '
        f"ftlab {html.escape(str(document.get('ftlab_version', '')))}): "
        f"{s['passed']} of {s['cases']} cases passed, {s['failed']} failed"
        + (f", {s['xfail']} expected failures" if s["xfail"] else "")
        + f"; |error| median {_pct(s['median_error'])}, worst {_pct(s['worst_error'])}. "
        f"{html.escape(families)}.</p>"
    )


def model_html(folder: Path) -> str:
    """The device model an experiment ran on (its `model.json`) and what validates it."""
    path = folder / MODEL_FILE
    if not path.is_file():
        return ""
    record: dict[str, Any] = json.loads(path.read_text())
    model = MODELS.get(str(record.get("device_model")), record)
    families = ", ".join(model["validated_by"])
    return (
        f'<p class="note">Runs on {html.escape(model["name"])} '
        f"({html.escape(model['description'])}), validated by the scorecard families "
        f'{html.escape(families)} (<a href="{VALIDATION_DIR}/index.html">scorecard</a>).</p>'
    )


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    text = f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{text}{'' if unit in ('', 'ratio') else ' ' + unit}"


def _ratio(h: Headline) -> str:
    r = h.ratio
    return "-" if r is None else f"{r:.2f}"


def _headline_rows(headlines: list[Headline], with_paper: bool) -> list[str]:
    rows = []
    for h in headlines:
        reason = ""
        if h.differs:
            reason = html.escape(h.reason) if h.reason else "<i>no reason given</i>"
        cells = [html.escape(h.paper)] if with_paper else []
        cells += [
            html.escape(h.metric),
            f'<td class="num">{_number(h.paper_value, h.unit)}</td>',
            f'<td class="num">{_number(h.ours, h.unit)}</td>',
            f'<td class="num ratio">{_ratio(h)}</td>',
            reason,
        ]
        tds = "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in cells)
        rows.append(f'<tr class="{"differs" if h.differs else "agrees"}">{tds}</tr>')
    return rows


def _table(headlines: list[Headline], with_paper: bool) -> str:
    head = ["paper"] if with_paper else []
    head += ["metric", "paper's", "ours", "ours / paper's", "why they differ"]
    ths = "".join(f"<th>{h}</th>" for h in head)
    body = "\n".join(_headline_rows(headlines, with_paper))
    return f"<table>\n<tr>{ths}</tr>\n{body}\n</table>"


def write(out_dir: Path, quick: bool = False) -> Path:
    """Writes `out_dir/index.html` from the experiments' folders under `out_dir`."""
    sections = []
    every: list[Headline] = []
    for name in sorted(EXPERIMENTS):
        folder = out_dir / name
        description = EXPERIMENTS[name][1]
        parts = [f'<h2 id="{name}">{html.escape(name)}</h2>']
        parts.append(f"<p>{html.escape(description)}</p>")
        if not folder.is_dir():
            parts.append('<p class="note">Not run.</p>')
            sections.append("\n".join(parts))
            continue
        parts.append(model_html(folder))
        if (folder / FAILED).is_file():
            last = (folder / FAILED).read_text().strip().splitlines()[-1:]
            parts.append(
                f'<p class="banner">The run failed: {html.escape(" ".join(last))} '
                f'(<a href="{name}/{FAILED}">traceback</a>).</p>'
            )
        summary = folder / "summary.json"
        if summary.is_file():
            try:
                headlines = read(summary)
            except ValueError as e:
                parts.append(f'<p class="banner">{html.escape(str(e))}</p>')
                headlines = []
            every += headlines
            if headlines:
                setups = sorted({h.setup for h in headlines if h.setup})
                parts.append(_table(headlines, with_paper=False))
                if setups:
                    items = "".join(f"<li>{html.escape(s)}</li>" for s in setups)
                    parts.append(f'<p class="note">How ours were measured:</p><ul>{items}</ul>')
        else:
            parts.append('<p class="note">No summary.json: no headline numbers.</p>')
        for png in sorted(folder.glob("*.png")):
            src = f"{name}/{png.name}"
            parts.append(f'<a href="{src}"><img src="{src}" alt="{html.escape(png.stem)}"></a>')
        report = folder / f"{name}.md"
        if report.is_file():
            parts.append(f'<p>Report: <a href="{name}/{report.name}">{report.name}</a>.</p>')
        tables = sorted(t for t in folder.glob("*.md") if t != report)
        if tables:
            links = ", ".join(
                f'<a href="{name}/{t.name}">{html.escape(t.stem)}</a>' for t in tables
            )
            parts.append(f"<p>Tables: {links}.</p>")
        sections.append("\n".join(parts))
    differing = sum(h.differs for h in every)
    mode = "quick mode (small runs for tests; not the figures to quote)" if quick else "full runs"
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ftlab reproductions</title>
<style>{STYLE}</style>
<script>{SCRIPT}</script>
</head>
<body>
<h1>ftlab reproductions</h1>
<p>{len(every)} headline numbers from {len(EXPERIMENTS)} experiments ({mode}); {differing}
differ from the paper's by more than {DIFFERENCE:.0%} (ratio outside
{1 / (1 + DIFFERENCE):.2f}-{1 + DIFFERENCE:.2f}), each with the reason its reproduction
gives. Each experiment runs on a device model that <code>ftlab validate</code> checks
against closed forms, physical bounds and a peer simulator; its section names it.</p>
{validation_html(out_dir)}
{_table(every, with_paper=True)}
{"".join(chr(10) + s for s in sections)}
</body>
</html>
"""
    index = out_dir / "index.html"
    index.write_text(page)
    return index
