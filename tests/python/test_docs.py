"""The documentation site and the reports the reproductions write.

- The site (`mkdocs.yml`) builds with `--strict`: a warning, such as a broken internal link
  or anchor (MkDocs' `validation:` settings) or a page left out of the navigation, fails it.
- Every configuration key, preset, scheme, trace format, summary column, cause, workload,
  host stack and command the code has is in the generated reference: the names are read
  from `ftlab._core` and the click command here, independently of the generator
  (`ftlab._docs`), and looked for in the built HTML.
- The README's links into the repository (`docs/...` among them) resolve.
- `ftlab reproduce NAME` writes `NAME.md` with its headline table and figures.
- No file `.gitignore` lists is tracked.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10
    import tomli as tomllib

import ftlab
from ftlab import _core, _docs, _sweep
from ftlab.cli import main
from ftlab.reproduce import markdown
from ftlab.reproduce._summary import Headline, read

# pytest-xdist (`pytest -n auto --dist loadgroup`): the site is built once, by one worker.
pytestmark = pytest.mark.xdist_group("docs")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module's tests (strict: warnings are errors)."""
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ)
    # The hook imports ftlab: the one these tests import (the tree's, or the installed one).
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(ftlab.__file__).parents[1]), *filter(None, [env.get("PYTHONPATH")])]
    )
    env["NO_MKDOCS_2_WARNING"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr}"
    return out


def page_text(site: Path, page: str) -> str:
    """A built page's HTML, entities decoded (`<code>a|b</code>` as written)."""
    return html.unescape((site / page / "index.html").read_text(encoding="utf-8"))


def missing_codes(text: str, names: list[str]) -> list[str]:
    """The names that do not appear as inline code (`<code>NAME</code>`) in `text`."""
    return [n for n in names if f"<code>{n}</code>" not in text]


def test_site_builds_strict_with_every_page(site: Path) -> None:
    pages = sorted(site.rglob("index.html"))
    assert len(pages) >= 30, f"only {len(pages)} pages built"
    for page in ("guide/install", "dev/architecture", "reference/cli", "reproductions"):
        assert (site / page / "index.html").is_file(), page


def test_reference_has_every_configuration_key_and_preset(site: Path) -> None:
    text = page_text(site, "reference/configuration")
    keys = _docs.flatten(tomllib.loads(_core.config_show()))
    assert len(keys) > 100
    assert not missing_codes(text, sorted(keys))
    presets = [name for name, _ in _core.presets()]
    assert not missing_codes(text, presets)
    # Each preset's own values are there too (the keys it changes).
    for name in presets:
        changed = _docs.flatten(tomllib.loads(_core.config_show(preset=name)))
        differ = [k for k, v in changed.items() if keys.get(k) != v]
        assert not missing_codes(text, differ), name


def test_reference_has_every_scheme_with_its_module_doc(site: Path) -> None:
    text = page_text(site, "reference/schemes")
    # The built-in schemes: a plugin another test registered in this process (the template
    # `rustpage`, through its entry point) is not ftlab's to document.
    info = [s for s in json.loads(_core.scheme_info()) if s["builtin"]]
    assert not missing_codes(text, [s["name"] for s in info])
    families = {s["family"] for s in info}
    assert not missing_codes(text, sorted(families))
    # The module headers are included: a sentence of one, read here from its source.
    header = (ROOT / "crates/ftlab-core/src/ftl/logblock/bast.rs").read_text().splitlines()[0]
    assert header.removeprefix("//! ").split(" (")[0] in text


def test_reference_has_every_trace_format_column_cause_workload_and_stack(site: Path) -> None:
    formats = page_text(site, "reference/trace-formats")
    names = [n for n, aliases, *_ in _core.trace_formats() for n in [n, *aliases]]
    assert not missing_codes(formats, names)
    columns = page_text(site, "reference/metrics")
    assert not missing_codes(columns, [name for name, _ in _core.summary_columns()])
    assert not missing_codes(columns, [*_sweep.AXIS_COLUMNS, *_sweep.EXTRA_COLUMNS])
    causes = page_text(site, "reference/causes")
    assert not missing_codes(causes, [name for name, _, _ in _core.causes()])
    workloads = page_text(site, "reference/workloads")
    assert not missing_codes(workloads, [name for name, _ in _core.workloads()])
    assert not missing_codes(workloads, [name for name, _ in _core.stacks()])


def _commands(command: click.Command, path: str) -> list[tuple[str, click.Command]]:
    out = [(path, command)]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            if not sub.hidden:
                out += _commands(sub, f"{path} {name}")
    return out


def test_reference_has_every_command_and_option(site: Path) -> None:
    text = page_text(site, "reference/cli")
    commands = _commands(main, "ftlab")
    assert len(commands) > 15
    assert not missing_codes(text, [path for path, _ in commands])
    for path, command in commands:
        section = text.split(f"<code>{path}</code>", 1)[1]
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.opts[0] in section, f"{path}: {param.opts[0]}"


def test_readme_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [link for link in links if "://" not in link and not link.startswith("#")]
    assert any(link.startswith("docs/") for link in local)
    broken = [link for link in local if not (ROOT / link.split("#")[0]).exists()]
    assert not broken, f"README links to missing files: {broken}"


def test_reproduction_writes_its_markdown_report(quick: Callable[[str], Path]) -> None:
    """The fastest reproduction's quick run writes `NAME.md`: setup, headline table (one
    row per headline of its summary.json), its figures."""
    folder = quick("demand-hit-ratio")
    report = (folder / "demand-hit-ratio.md").read_text()
    assert "--quick" in report and "Quick mode" in report
    assert "| paper | headline | paper's | ours | ratio | within tolerance | cause |" in report
    headlines = read(folder / "summary.json")
    assert headlines
    for h in headlines:
        assert h.metric in report
    figures = re.findall(r"!\[[^]]*\]\(([^)]+)\)", report)
    assert figures and all((folder / f).is_file() for f in figures)


def test_headline_table_says_within_tolerance_and_cause() -> None:
    agrees = Headline("P", "reads", 1.2, 1.0, "x")
    differs = Headline("P", "writes", 2.0, 1.0, "x", reason="the buffer")
    silent = Headline("P", "erases", 0.5, 1.0, "x")
    shape = Headline("P", "shape only", 3.0, None, "%")
    rows = markdown.headline_table([agrees, differs, silent, shape]).splitlines()[2:]
    assert rows[0] == "| P | reads | 1 x | 1.2 x | 1.20 | yes |  |"
    assert rows[1] == "| P | writes | 1 x | 2 x | 2.00 | no | the buffer |"
    assert rows[2].endswith("| 0.50 | no | no reason given |")
    assert rows[3] == "| P | shape only | - | 3 % | - | - |  |"


def test_no_tracked_file_is_ignored() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "-ci", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert listed == "", f"tracked files that .gitignore lists:\n{listed}"


def test_the_tutorial_notebook_is_a_guide_page(site: Path) -> None:
    notebook = json.loads((ROOT / _docs.NOTEBOOK).read_text())
    text = re.sub(r"<[^>]+>", "", page_text(site, "guide/notebook"))  # code is highlighted
    for cell in notebook["cells"]:
        first = "".join(cell["source"]).strip().splitlines()[0].lstrip("# ")
        assert first in text, f"notebook cell missing from the page: {first}"
