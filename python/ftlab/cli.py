"""The `ftlab` command line.

Start-up stays fast (a run on a 1 M-request trace takes well under a second in all): only
click and the core are imported up front; rich is imported when a progress bar is due.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, NoReturn

import click

import ftlab
from ftlab import _core
from ftlab._format import render_table, summary_rows

TRACE_FORMATS = ["auto"] + [name for name, *_ in _core.trace_formats()]


def fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


class Progress:
    """A progress bar that appears only once a run has taken more than a second."""

    def __init__(self, total: int | None, quiet: bool) -> None:
        self.total = total
        self.quiet = quiet or not sys.stderr.isatty()
        self.started = time.monotonic()
        self.bar: Any = None
        self.task: Any = None

    def __call__(self, done: int, fraction: float | None = None, phase: str = "") -> bool:
        if self.quiet:
            return True
        if self.bar is None:
            if time.monotonic() - self.started < 1.0:
                return True
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import (
                Progress as RichProgress,
            )

            self.bar = RichProgress(
                TextColumn("simulating"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("run", total=self.total, rate="")
        elapsed = max(time.monotonic() - self.started, 1e-9)
        self.bar.update(self.task, completed=done, rate=f"{done / elapsed / 1e6:.2f} M req/s")
        return True

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def run_core(call: Callable[[], Any]) -> Any:
    """Calls into the core, turning its errors into `error: ...` and exit status 2."""
    try:
        return call()
    except ftlab.FtlabError as e:
        fail(str(e))
    except OSError as e:
        fail(str(e))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(ftlab.__version__, prog_name="ftlab")
def main() -> None:
    """ftlab: replay block I/O traces through simulated SSDs running FTL schemes."""


@main.command()
@click.option("--ftl", "ftl_name", default="page", show_default=True, help="FTL scheme.")
@click.option("--trace", type=click.Path(path_type=Path), help="Trace file to replay.")
@click.option(
    "--format",
    "trace_format",
    type=click.Choice(TRACE_FORMATS),
    help="Trace format (default: detected from the content).",
)
@click.option(
    "--time-unit",
    type=click.Choice(["auto", "ns", "100ns", "us", "ms", "s"]),
    help="Unit of the trace's timestamps (default: the format's own).",
)
@click.option("--workload", help="Built-in synthetic workload (default: `default`).")
@click.option("--preset", help="Configuration preset (see `ftlab config presets`).")
@click.option(
    "--config",
    "configs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="TOML configuration file (repeatable).",
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a key.")
@click.option("--verify", is_flag=True, help="Check every read against a shadow copy.")
@click.option("--mapping-only", is_flag=True, help="Skip the timing model.")
@click.option("--json", "json_out", metavar="FILE", help="Write the report as JSON (- for stdout).")
@click.option("--quiet", "-q", is_flag=True, help="No summary, no progress bar.")
def run(
    ftl_name: str,
    trace: Path | None,
    trace_format: str | None,
    time_unit: str | None,
    workload: str | None,
    preset: str | None,
    configs: Sequence[Path],
    sets: Sequence[str],
    verify: bool,
    mapping_only: bool,
    json_out: str | None,
    quiet: bool,
) -> None:
    """Run one FTL scheme over a trace or a synthetic workload and print a summary."""
    if trace is not None and workload is not None:
        fail("give either --trace or --workload, not both")
    if trace is None and workload is None:
        workload = "default"
    progress = Progress(None, quiet)
    try:
        result = run_core(
            lambda: ftlab.simulate(
                ftl_name,
                trace=trace,
                workload=workload,
                preset=preset,
                config=configs,
                sets=sets,
                verify=verify,
                mapping_only=mapping_only,
                format=trace_format or "",
                time_unit=time_unit or "",
                progress=progress,
            )
        )
    finally:
        progress.close()
    if json_out == "-":
        click.echo(result.json)
    elif json_out:
        Path(json_out).write_text(result.json + "\n")
    if not quiet and json_out != "-":
        rows = summary_rows(result.summary)
        rows.append(("wall time", f"{result.wall_seconds:.3f} s"))
        click.echo(render_table(["metric", "value"], rows))


@main.group()
def config() -> None:
    """Show configurations and presets."""


@config.command("show")
@click.argument("preset", required=False)
@click.option("--workload", help="Apply a built-in workload.")
@click.option("--config", "configs", multiple=True, type=click.Path(path_type=Path))
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE")
def config_show(
    preset: str | None, workload: str | None, configs: Sequence[Path], sets: Sequence[str]
) -> None:
    """Print the resolved configuration (PRESET, then files, then overrides) as TOML."""
    text = run_core(
        lambda: _core.config_show(
            preset=preset, workload=workload, config=[str(c) for c in configs], sets=list(sets)
        )
    )
    click.echo(text, nl=False)


def print_pairs(pairs: list[tuple[str, str]], header: tuple[str, str]) -> None:
    click.echo(render_table(list(header), pairs))


@config.command("presets")
def config_presets() -> None:
    """List the configuration presets."""
    print_pairs(ftlab.presets(), ("preset", "description"))


@main.command()
def schemes() -> None:
    """List the FTL schemes."""
    print_pairs(ftlab.schemes(), ("scheme", "description"))


@main.command()
def workloads() -> None:
    """List the built-in synthetic workloads."""
    print_pairs(ftlab.workloads(), ("workload", "description"))


@main.command()
@click.option("--json", "json_out", metavar="FILE", help="Write the results as JSON.")
@click.option("--schemes", "scheme_list", help="Comma-separated schemes (default: all).")
@click.option("--trace", type=click.Path(path_type=Path), help="Benchmark trace (DiskSim ASCII).")
@click.option("--requests", type=int, help="Requests per built-in workload (default: theirs).")
@click.option("--repeat", type=int, default=3, show_default=True, help="Runs per case; best.")
@click.option("--no-workloads", is_flag=True, help="Only the benchmark trace.")
def bench(
    json_out: str | None,
    scheme_list: str | None,
    trace: Path | None,
    requests: int | None,
    repeat: int,
    no_workloads: bool,
) -> None:
    """Requests per second and peak memory of each scheme, timed and mapping-only."""
    from ftlab import _bench

    names = [s for s in scheme_list.split(",") if s] if scheme_list else None
    try:
        results = _bench.run_all(
            schemes=names,
            trace=trace,
            requests=requests,
            repeat=max(repeat, 1),
            workloads=not no_workloads,
            echo=click.echo,
        )
    except _bench.BenchError as e:
        fail(str(e))
    click.echo(_bench.table(results))
    if json_out:
        Path(json_out).write_text(json.dumps(results, indent=2) + "\n")


@main.command()
@click.argument("name", required=False)
@click.option(
    "--out", type=click.Path(path_type=Path), help="Output folder (default: reproduce/NAME)."
)
@click.option("--quick", is_flag=True, help="Small workloads: seconds instead of minutes.")
def reproduce(name: str | None, out: Path | None, quick: bool) -> None:
    """Regenerate a paper's figures as tables and plots (no NAME: list them)."""
    from ftlab import reproduce as experiments

    if name is None:
        pairs = [(n, d) for n, (_, d) in sorted(experiments.EXPERIMENTS.items())]
        print_pairs(pairs, ("experiment", "description"))
        return
    try:
        run_core(lambda: experiments.run(name, out or Path("reproduce") / name, quick))
    except KeyError as e:
        fail(str(e.args[0]))


if __name__ == "__main__":
    main()
