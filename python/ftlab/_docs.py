"""The documentation site's reference pages, generated from the code when the site is built.

`pages(root)` gives each reference page as Markdown (its path under `docs/` -> text), read
from what the core and the command line declare: the configuration keys and their defaults
(`_core.config_show`, per preset), the schemes (`_core.scheme_info` and each scheme
module's `//!` header, read from its source file under `root`), the trace formats, the
summary columns, the flash operation causes, the workloads and host stacks, and every
command of `ftlab` (walked from `cli.main`). Nothing here is written by hand, so the pages
cannot drift from the code. The tutorial notebook (`examples/tutorial.ipynb`) becomes the
guide's notebook page the same way.

This file is also the MkDocs hook (`hooks:` in `mkdocs.yml`): `on_files` adds the pages to
the build. A hook rather than the mkdocs-gen-files plugin: the generation is one function
of the code, with no plugin or extra dependency, and the docs test reads the same function.
"""

from __future__ import annotations

import html
import inspect
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ftlab import _core

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10
    import tomli as tomllib

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

#: Where the reference pages go, under `docs/`.
REFERENCE = "reference"


def cell(value: Any) -> str:
    """A value as a Markdown table cell (pipes escaped, one line)."""
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value)
    return " ".join(text.replace("|", "\\|").split())


def code(value: Any) -> str:
    """A value as inline code in a table cell (a pipe cannot be escaped inside backticks
    there, so such a value is written as HTML)."""
    text = " ".join((value if isinstance(value, str) else json.dumps(value)).split())
    if text == "":
        return ""
    if "|" in text:
        return "<code>" + html.escape(text).replace("|", "&#124;") + "</code>"
    return f"`{text}`"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def flatten(section: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"a": {"b": 1}}` -> `{"a.b": 1}` (TOML tables to dotted keys)."""
    out: dict[str, Any] = {}
    for key, value in section.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def config_keys(preset: str | None = None) -> dict[str, Any]:
    """Every configuration key with its value under `preset` (default: the `default`
    preset), as the core resolves it, scheme sections included."""
    return flatten(tomllib.loads(_core.config_show(preset=preset)))


def scheme_names() -> set[str]:
    """The schemes the core itself knows (entry-point plugins are not loaded)."""
    return {s["name"] for s in json.loads(_core.scheme_info())}


def configuration_page() -> str:
    defaults = config_keys()
    scheme_sections = scheme_names()
    device = {k: v for k, v in defaults.items() if k.split(".")[0] not in scheme_sections}
    out = [
        "# Configuration keys and presets\n",
        "Generated from the core (`ftlab config show`, `ftlab config presets`). What each key "
        "means, and how the layers of a configuration combine: "
        "[Configuration](../guide/configuration.md).\n",
        "## Keys\n",
        "The value of each key in the `default` preset (`ftlab config show`).\n",
    ]
    sections: dict[str, list[list[str]]] = {}
    for key, value in device.items():
        sections.setdefault(key.split(".")[0], []).append([code(key), code(value)])
    for section, rows in sections.items():
        out.append(f"### `[{section}]` {{#keys-{section}}}\n")
        out.append(table(["key", "default"], rows))
    out.append("## Presets\n")
    out.append("Each preset's keys that differ from the `default` preset.\n")
    for name, description in _core.presets():
        out.append(f"### `{name}` {{#preset-{name}}}\n")
        out.append(cell(description) + "\n")
        if name == "default":
            continue
        changed = [
            [code(k), code(v), code(defaults.get(k, ""))]
            for k, v in config_keys(name).items()
            if defaults.get(k) != v
        ]
        out.append(table(["key", "value", "default"], changed) if changed else "No change.\n")
    out.append("## Scheme sections\n")
    out.append(
        "Each scheme's own section, with its defaults; what the keys mean is in the "
        "[schemes reference](schemes.md) and the [schemes guide](../guide/schemes/index.md).\n"
    )
    for info in json.loads(_core.scheme_info()):
        own: dict[str, Any] = info["section"] or {}
        out.append(f"### `[{info['name']}]` {{#section-{info['name']}}}\n")
        if not own:
            out.append("No section.\n")
            continue
        keys = [[code(f"{info['name']}.{k}"), code(v)] for k, v in flatten(own).items()]
        out.append(table(["key", "default"], keys))
    return "\n".join(out)


_NAME = re.compile(r'const NAME: &(?:\'static )?str = "([^"]+)";')


def scheme_sources(root: Path) -> dict[str, Path]:
    """scheme name -> the Rust source file that declares it (`const NAME`)."""
    found: dict[str, Path] = {}
    for path in sorted((root / "crates").glob("*/src/**/*.rs")):
        for name in _NAME.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, path)
    return found


def module_doc(path: Path) -> str:
    """The `//!` header of a Rust source file, as Markdown."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("//!"):
            break
        lines.append(line[4:] if line.startswith("//! ") else line[3:])
    return "\n".join(lines).strip() + "\n"


def schemes_page(root: Path) -> str:
    sources = scheme_sources(root)
    info = json.loads(_core.scheme_info())
    out = [
        "# Schemes\n",
        "Generated from the core's registry (`ftlab schemes`, `ftlab.scheme_info()`) and "
        "each scheme module's header. The schemes guide compares them and gives their "
        "setups: [Schemes](../guide/schemes/index.md).\n",
        table(
            ["scheme", "family", "description"],
            [
                [f"[`{s['name']}`](#{s['name']})", code(s["family"]), cell(s["description"])]
                for s in info
            ],
        ),
    ]
    for family, description in _core.families():
        members = [s for s in info if s["family"] == family]
        if not members:
            continue
        out.append(f"## Family `{family}`\n")
        out.append(cell(description) + "\n")
        shared = family_module(root, [sources[s["name"]] for s in members if s["name"] in sources])
        if shared is not None:
            out.append(f"What the family shares (`{shared.relative_to(root).as_posix()}`):\n")
            out.append(_demote(module_doc(shared), 2))
        for s in members:
            out.append(f"### `{s['name']}` {{#{s['name']}}}\n")
            out.append(cell(s["description"]) + "\n")
            facts = [
                [
                    "section",
                    f"[`[{s['name']}]`](configuration.md#section-{s['name']})"
                    if s["section"]
                    else "none",
                ],
                ["append-only", "yes" if s["append_only"] else "no"],
                ["device defaults", code(s["device_defaults"]) if s["device_defaults"] else "none"],
                [
                    "`ftlab advise` sweeps",
                    ", ".join(f"{code(k)} over {code(v)}" for k, v in (s["advise"] or {}).items())
                    or "nothing",
                ],
            ]
            path = sources.get(s["name"])
            if path is not None:
                facts.append(["source", code(path.relative_to(root).as_posix())])
            out.append(table(["", ""], facts))
            if path is not None:
                out.append(_demote(module_doc(path)))
    return "\n".join(out)


def family_module(root: Path, members: list[Path]) -> Path | None:
    """The `mod.rs` of the folder that holds every member's module, when they share one
    that is not one of them (`ftl/logblock/mod.rs`); else None."""
    folders = {path.parent for path in members}
    if len(folders) != 1:
        return None
    shared = folders.pop() / "mod.rs"
    if shared in members or not shared.exists() or shared.parent.name == "ftl":
        return None
    return shared


def _demote(markdown: str, by: int = 3) -> str:
    """Headings of an included module doc, below the page's own."""
    return re.sub(
        r"^(#+) ", lambda m: "#" * min(6, len(m.group(1)) + by) + " ", markdown, flags=re.M
    )


def trace_formats_page() -> str:
    rows = [
        [
            code(name),
            ", ".join(code(a) for a in aliases),
            code(unit),
            cell(description),
            code(example),
        ]
        for name, aliases, description, unit, example in _core.trace_formats()
    ]
    return (
        "# Trace formats\n\nGenerated from the core's list of readers (`ftlab trace formats`). "
        "How traces are read, sized and timed: [Workloads and traces](../guide/traces.md).\n\n"
        + table(["format", "aliases", "time unit", "description", "example line"], rows)
    )


def metrics_page() -> str:
    from ftlab._sweep import AXIS_COLUMNS, EXTRA_COLUMNS

    rows = [[code(name), code(kind)] for name, kind in _core.summary_columns()]
    axes = [[code(name), code(kind)] for name, kind in AXIS_COLUMNS.items()]
    extra = [[code(name), code(kind)] for name, kind in EXTRA_COLUMNS.items()]
    return (
        "# Summary columns\n\nGenerated from the core (`ftlab._core.summary_columns()`) and "
        "the sweep (`ftlab._sweep`). What the metrics mean: [Metrics](../guide/metrics.md).\n\n"
        "## A run's summary\n\nThe fields of a run's summary (`ftlab.summarize`, the core's "
        "`summary.rs`), which are also the columns of `compare`'s frame.\n\n"
        + table(["column", "type"], rows)
        + "\n## A sweep's table\n\nEach row of a sweep's Parquet table ([Sweeps]"
        "(../guide/sweeps.md)) has these columns, then one per configuration key the spec "
        "names, then the summary's (`ftl` is `scheme`), then these:\n\n"
        + table(["column", "type"], axes)
        + "\n"
        + table(["column", "type"], extra)
    )


def causes_page() -> str:
    rows = [
        [code(name), code(group), cell(description)] for name, group, description in _core.causes()
    ]
    return (
        "# Causes\n\nGenerated from the core's `causes!` list: every flash read, program "
        "and erase is counted under one cause (the keys of a report's `flash.reads`, "
        "`flash.programs`, `flash.erases`); a summary adds them up by group. See "
        "[Metrics](../guide/metrics.md).\n\n" + table(["cause", "group", "description"], rows)
    )


def workloads_page() -> str:
    workloads = table(
        ["workload", "description"], [[code(n), cell(d)] for n, d in _core.workloads()]
    )
    stacks = table(["stack", "description"], [[code(n), cell(d)] for n, d in _core.stacks()])
    return (
        "# Workloads and host stacks\n\nGenerated from the core (`ftlab workloads`, "
        "`ftlab stacks`).\n\n## Built-in workloads\n\n`--workload NAME`; the `[workload]` "
        "keys are in [Configuration keys](configuration.md).\n\n"
        + workloads
        + "\n## Host stacks\n\n`host.stack`, `--stack`; see [Host stacks]"
        "(../guide/host-stacks.md).\n\n" + stacks
    )


def cli_page() -> str:
    from ftlab.cli import main

    out = [
        "# Command line\n",
        "Generated from the `ftlab` command itself (`ftlab COMMAND --help` prints the "
        "same). How to use it: [Run](../guide/run.md).\n",
    ]
    _command(main, "ftlab", None, out)
    return "\n".join(out)


def _command(
    command: click.Command, path: str, parent: click.Context | None, out: list[str]
) -> None:
    """`command`'s section (`path`: its words after `ftlab`), then its subcommands'."""
    ctx = click.Context(command, info_name=path.split(" ")[-1], parent=parent)
    name = ctx.command_path
    level = "#" * min(6, name.count(" ") + 2)
    out.append(f"{level} `{name}` {{#{name.replace(' ', '-')}}}\n")
    usage = " ".join(command.collect_usage_pieces(ctx))
    out.append(f"```\n{name} {usage}\n```\n")
    if command.help:
        out.append(inspect.cleandoc(click.unstyle(command.help)) + "\n")
    rows = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is not None:
            rows.append([code(record[0]), cell(record[1])])
    if rows:
        out.append(table(["option", "what it does"], rows))
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            subcommand = command.get_command(ctx, sub)
            if subcommand is not None and not subcommand.hidden:
                _command(subcommand, f"{path} {sub}", ctx, out)


def index_page() -> str:
    return (
        "# Reference\n\nThese pages are generated from the code each time the site is "
        "built, so that they cannot drift from it.\n\n"
        "- [Command line](cli.md): every `ftlab` command and option\n"
        "- [Configuration keys and presets](configuration.md)\n"
        "- [Schemes](schemes.md): the registry, with each scheme module's own documentation\n"
        "- [Trace formats](trace-formats.md)\n"
        "- [Summary columns](metrics.md)\n"
        "- [Causes](causes.md) of flash operations\n"
        "- [Workloads and host stacks](workloads.md)\n"
    )


#: The tutorial notebook, and the guide page that shows it.
NOTEBOOK = "examples/tutorial.ipynb"
NOTEBOOK_PAGE = "guide/notebook.md"


def notebook_page(root: Path) -> str:
    """The tutorial notebook as a page: its Markdown cells as they are, its code cells as
    Python blocks (the notebook is stored without outputs; running it makes them)."""
    notebook = json.loads((root / NOTEBOOK).read_text())
    parts = []
    for cell in notebook["cells"]:
        source = "".join(cell["source"]).strip()
        if cell["cell_type"] == "markdown":
            parts.append(source)
        elif cell["cell_type"] == "code":
            parts.append(f"```py\n{source}\n```")
    text = "\n\n".join(parts) + "\n"
    title, _, rest = text.partition("\n")
    note = (
        f"*This page is `{NOTEBOOK}`, cell by cell (generated when the site is built). Open "
        "it in Jupyter to run it: its tables and figures appear under the cells.*"
    )
    return f"{title}\n\n{note}\n{rest}"


def pages(root: Path) -> dict[str, str]:
    """Every reference page: path under `docs/` -> Markdown. `root` is the repository (the
    scheme modules' sources are read from it)."""
    return {
        f"{REFERENCE}/index.md": index_page(),
        f"{REFERENCE}/cli.md": cli_page(),
        f"{REFERENCE}/configuration.md": configuration_page(),
        f"{REFERENCE}/schemes.md": schemes_page(root),
        f"{REFERENCE}/trace-formats.md": trace_formats_page(),
        f"{REFERENCE}/metrics.md": metrics_page(),
        f"{REFERENCE}/causes.md": causes_page(),
        f"{REFERENCE}/workloads.md": workloads_page(),
        NOTEBOOK_PAGE: notebook_page(root),
    }


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """MkDocs hook: adds the generated reference pages (and the notebook's) to the site."""
    from mkdocs.structure.files import File

    root = Path(config.config_file_path).parent
    for path, text in pages(root).items():
        files.append(File.generated(config, path, content=text))
    return files
