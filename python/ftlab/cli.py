"""The `ftlab` command line.

Start-up stays fast (a run on a 1 M-request trace takes well under a second in all): only
click and the core are imported up front; rich is imported when a progress bar is due,
polars and matplotlib only by `compare` and the report.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, NoReturn

import click

import ftlab
from ftlab import _core
from ftlab._format import (
    breakdown_rows,
    compare_notes,
    compare_rows,
    device_rows,
    latency_explanations,
    render_table,
    run_rows,
    saturation_warning,
    size_rows,
    stall_warnings,
    top_parts,
    trace_info_rows,
)

TRACE_FORMATS = ["auto"] + [name for name, *_ in _core.trace_formats()]


def fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def _nearest_existing(path: Path) -> Path:
    """`path` itself or its nearest ancestor that exists (the current directory at worst)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(".")


def _unwritable_dir(folder: Path) -> str | None:
    """Why files cannot be created in `folder` (which exists), or None."""
    if not folder.is_dir():
        return f"{folder} is not a directory"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"directory {folder} is not writable"
    return None


def file_problem(path: Path) -> str | None:
    """Why `path` cannot be written as a file, or None: it is a directory, its directory is
    missing, is not a directory, or is not writable, or the file itself is read-only."""
    if path.is_dir():
        return "it is a directory"
    folder = path.parent
    if not folder.exists():
        existing = _nearest_existing(folder)
        if existing.is_dir():
            return f"directory {folder} does not exist"
        return f"{existing} is not a directory"
    problem = _unwritable_dir(folder)
    if problem is not None:
        return problem
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is not writable"
    return None


def folder_problem(path: Path) -> str | None:
    """Why `path` cannot be used as an output folder (created with its parents when
    missing), or None."""
    if path.exists():
        return _unwritable_dir(path) if path.is_dir() else "it is not a directory"
    return _unwritable_dir(_nearest_existing(path.parent))


def check_output(option: str, path: str | Path | None, folder: bool = False) -> None:
    """Before any work: `error: cannot write OPTION PATH: reason` and exit status 2 when
    the output file (or folder) cannot be written. `-` (standard output) passes."""
    if path is None or str(path) == "-":
        return
    problem = folder_problem(Path(path)) if folder else file_problem(Path(path))
    if problem is not None:
        fail(f"cannot write {option} {path}: {problem}")


def write_output(option: str, path: str | Path, text: str) -> None:
    """Writes an output file; an error (a full disk, a folder removed meanwhile) is reported
    like the checks before the run."""
    try:
        Path(path).write_text(text)
    except OSError as e:
        fail(f"cannot write {option} {path}: {e.strerror or e}")


class Progress:
    """A progress bar (phase, requests, rate, ETA) that appears only once a run has taken
    more than a second, and only on a terminal."""

    def __init__(self, quiet: bool, unit: str = "req") -> None:
        self.quiet = quiet or not sys.stderr.isatty()
        self.unit = unit
        self.started = time.monotonic()
        self.phase = ""
        self.phase_started = self.started
        self.bar: Any = None
        self.task: Any = None

    def __call__(self, done: int, fraction: float | None = None, phase: str = "") -> bool:
        if self.quiet:
            return True
        now = time.monotonic()
        if phase != self.phase:
            self.phase, self.phase_started = phase, now
            if self.bar is not None:
                self.bar.reset(self.task)
        if self.bar is None:
            if now - self.started < 1.0:
                return True
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import (
                Progress as RichProgress,
            )

            self.bar = RichProgress(
                TextColumn("{task.description:<10}"),
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%"),
                TextColumn("{task.fields[count]}"),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                # On the stream whose being a terminal turned the bar on: the summary
                # (stdout) may go to a pipe.
                console=Console(stderr=True),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("", total=1000, count="", rate="")
        elapsed = max(now - self.phase_started, 1e-9)
        label = {"scan": "scanning", "simulate": "simulating"}.get(self.phase, self.phase)
        unit = "records" if self.phase == "scan" else self.unit
        self.bar.update(
            self.task,
            description=label,
            completed=1000 * (fraction if fraction is not None else 0.0),
            count=f"{done:,} {unit}",
            rate=f"{done / elapsed / 1e6:.2f} M/s",
        )
        return True

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def run_core(call: Callable[[], Any]) -> Any:
    """Calls into the core, turning its errors into `error: ...` and exit status 2, and
    Ctrl-C (which stops every run under way) into `interrupted` and status 130."""
    try:
        return call()
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except ftlab.FtlabError as e:
        fail(str(e))
    except OSError as e:
        fail(str(e))


#: The device's configuration: `--preset`, `--config` (repeatable), `--set KEY=VALUE`
#: (repeatable), received as `preset`, `configs` and `sets`.
#: How a trace file is read (`run`, `compare` and the other sources; `trace info` and
#: `trace convert`): its format and time unit, ...
TRACE_FORMAT_OPTIONS = [
    click.option(
        "--format",
        "trace_format",
        type=click.Choice(TRACE_FORMATS),
        help="Trace format (default: recognised from the content).",
    ),
    click.option(
        "--time-unit",
        type=click.Choice(["auto", "ns", "100ns", "us", "ms", "s"]),
        help="Unit of the trace's timestamps (default: the format's own).",
    ),
]
#: ... and which of its lines are requests.
TRACE_LINE_OPTIONS = [
    click.option(
        "--blkparse-event",
        type=click.Choice(["Q", "D", "C"]),
        help="blkparse (or WiscSee) event that stands for requests (default: D).",
    ),
    click.option(
        "--skip-bad-lines", is_flag=True, help="Count bad trace lines instead of stopping."
    ),
]

DEVICE_OPTIONS = [
    click.option("--preset", help="Configuration preset (see `ftlab config presets`)."),
    click.option(
        "--config",
        "configs",
        multiple=True,
        type=click.Path(path_type=Path),
        help="TOML configuration file (repeatable).",
    ),
    click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a key."),
]


def device_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Adds `DEVICE_OPTIONS` to a command."""
    for option in reversed(DEVICE_OPTIONS):
        func = option(func)
    return func


def source_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options shared by `run` and `compare`: what to replay and on what device. The
    command receives them as one `source` argument, the keyword arguments of
    `ftlab.simulate` and `ftlab.compare` (see `source_kwargs`)."""

    @functools.wraps(func)
    def command(
        *,
        trace: Path | None,
        trace_format: str | None,
        time_unit: str | None,
        devices: Sequence[str],
        device_layout: str | None,
        compact: str | None,
        blkparse_event: str | None,
        skip_bad_lines: bool,
        workload: str | None,
        preset: str | None,
        configs: Sequence[Path],
        sets: Sequence[str],
        verify: bool,
        mapping_only: bool,
        precondition: str | None,
        stack: str | None,
        **rest: Any,
    ) -> Any:
        source = source_kwargs(
            trace,
            workload,
            trace_format,
            time_unit,
            preset,
            configs,
            sets,
            trace_sets(devices, device_layout, compact, blkparse_event, skip_bad_lines),
            verify,
            mapping_only,
        )
        if precondition is not None:
            source["precondition"] = precondition
        if stack is not None:
            source["stack"] = stack
        return func(source=source, **rest)

    options = [
        click.option("--trace", type=click.Path(path_type=Path), help="Trace file to replay."),
        *TRACE_FORMAT_OPTIONS,
        click.option(
            "--device",
            "devices",
            multiple=True,
            metavar="NAME",
            help="Replay only this device of the trace (repeatable; see `ftlab trace info`).",
        ),
        click.option(
            "--device-layout",
            type=click.Choice(["separate", "merged"]),
            help="Devices in their own address ranges (default) or one shared space.",
        ),
        click.option(
            "--compact",
            type=click.Choice(["auto", "always", "never"]),
            help="Address compaction (default: auto, when the addresses do not fit).",
        ),
        *TRACE_LINE_OPTIONS,
        click.option("--workload", help="Built-in synthetic workload (default: `default`)."),
        *DEVICE_OPTIONS,
        click.option("--verify", is_flag=True, help="Check every read against a shadow copy."),
        click.option("--mapping-only", is_flag=True, help="Skip the timing model."),
        click.option(
            "--precondition",
            type=click.Choice(["none", "fill", "steady"]),
            help="Prepare the device before the measured run: none (fresh), fill (every "
            "logical page written once) or steady (fill, then random writes until the WAF "
            "settles). Default: the configuration's precondition.mode.",
        ),
        click.option(
            "--stack",
            type=click.Choice([name for name, _ in _core.stacks()]),
            help="Host stack between the application and the device: inplace (the trace as "
            "it is), f2fs, alfs (AMF's, for aftl); default auto (see `ftlab stacks`). A "
            "scheme named STACK+SCHEME (f2fs+dftl) chooses its own.",
        ),
    ]
    wrapped: Callable[..., Any] = command
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def trace_sets(
    devices: Sequence[str],
    device_layout: str | None,
    compact: str | None,
    blkparse_event: str | None,
    skip_bad_lines: bool,
) -> list[str]:
    """The trace options as `trace.*` overrides (applied before the user's `--set`)."""
    sets = []
    if devices:
        sets.append("trace.devices=" + json.dumps(list(devices)))
    for key, value in (
        ("device_layout", device_layout),
        ("compact", compact),
        ("blkparse_event", blkparse_event),
    ):
        if value:
            sets.append(f"trace.{key}={json.dumps(value)}")
    if skip_bad_lines:
        sets.append("trace.skip_bad_lines=true")
    return sets


def source_kwargs(
    trace: Path | None,
    workload: str | None,
    trace_format: str | None,
    time_unit: str | None,
    preset: str | None,
    configs: Sequence[Path],
    sets: Sequence[str],
    extra_sets: list[str],
    verify: bool,
    mapping_only: bool,
) -> dict[str, Any]:
    if trace is not None and workload is not None:
        fail("give either --trace or --workload, not both")
    if trace is None and workload is None:
        if extra_sets:
            fail("--device, --compact and the other trace options need --trace")
        workload = "default"
    return {
        "trace": trace,
        "workload": workload,
        "preset": preset,
        "config": configs,
        "sets": [*extra_sets, *sets],
        "verify": verify,
        "mapping_only": mapping_only,
        "format": trace_format or "",
        "time_unit": time_unit or "",
    }


def warn_bad_lines(report: dict[str, Any]) -> None:
    t = report.get("trace")
    if t and t["diagnostics"]["bad_lines"]:
        d = t["diagnostics"]
        click.echo(f"warning: {d['bad_lines']:,} bad trace line(s) skipped; the first:", err=True)
        for example in d["bad_line_examples"]:
            click.echo(f"  {example}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(ftlab.__version__, prog_name="ftlab")
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="FILE.py|MODULE",
    help="Import a Python file or module that registers schemes (ftlab.register_scheme); "
    "repeatable. Installed packages' schemes (entry points `ftlab.schemes`) need none.",
)
def main(plugins: tuple[str, ...]) -> None:
    """ftlab: replay block I/O traces through simulated SSDs running FTL schemes."""
    from ftlab._scheme import load_entry_points, load_plugin

    try:
        load_entry_points()
        for plugin in plugins:
            load_plugin(plugin)
    except ftlab.FtlabError as e:
        raise click.ClickException(str(e)) from e


@main.command()
@click.option("--ftl", "ftl_name", default="page", show_default=True, help="FTL scheme.")
@source_options
@click.option("--json", "json_out", metavar="FILE", help="Write the report as JSON (- for stdout).")
@click.option(
    "--per-volume",
    is_flag=True,
    help="Each volume (device) of the trace on a simulated SSD of its own, in parallel.",
)
@click.option("--jobs", "-j", type=int, help="With --per-volume: parallel runs (default: cores).")
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="With --per-volume: run the volumes on a Dask cluster (tcp://host:8786).",
)
@click.option(
    "--ship-traces",
    is_flag=True,
    help="With --scheduler: send the trace to every worker once (default: workers read it "
    "at the same path).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="With --per-volume: the Parquet table of the volumes (default: volumes.parquet).",
)
@click.option(
    "--age",
    metavar="DURATION",
    help="Simulated time the device idles between preconditioning and the run, its data "
    "ageing (media.age_ns; e.g. 30d, 12h): needs media.error_model.",
)
@click.option("--quiet", "-q", is_flag=True, help="No summary, no progress bar.")
def run(
    ftl_name: str,
    source: dict[str, Any],
    json_out: str | None,
    per_volume: bool,
    jobs: int | None,
    scheduler: str | None,
    ship_traces: bool,
    out: Path | None,
    age: str | None,
    quiet: bool,
) -> None:
    """Run one FTL scheme over a trace or a synthetic workload and print a summary."""
    check_output("--json", json_out)
    if ship_traces and scheduler is None:
        fail("--ship-traces needs --scheduler")
    if age is not None:
        source["sets"] = [*source["sets"], f"media.age_ns={json.dumps(age)}"]
    if per_volume:
        fleet = Fleet(jobs, scheduler, ship_traces, out or Path("volumes.parquet"))
        run_volumes(ftl_name, source, json_out, fleet, quiet)
        return
    if jobs is not None or out is not None or scheduler is not None:
        fail("--jobs, --scheduler and --out go with --per-volume")
    progress = Progress(quiet)
    try:
        result = run_core(lambda: ftlab.simulate(ftl_name, progress=progress, **source))
    finally:
        progress.close()
    if json_out == "-":
        click.echo(result.json, nl=False)
    elif json_out:
        write_output("--json", json_out, result.json)
    if not quiet:
        warn_bad_lines(result.report)
    if not quiet and json_out != "-":
        rows = run_rows(result.report, result.summary)
        rows.append(("wall time", f"{result.wall_seconds:.3f} s"))
        click.echo(render_table(["metric", "value"], rows))
        header, parts = breakdown_rows(result.report)
        if parts:
            click.echo()
            click.echo(render_table(header, parts))
        for note in latency_explanations(result.summary, result.report):
            click.echo(note)
    warning = saturation_warning(result.report)
    if not quiet:
        # Last, where they are seen: the latencies above measure the queue or the stall.
        for stall in stall_warnings(result.report):
            click.echo(stall, err=True)
        if warning:
            click.echo(warning, err=True)


@dataclasses.dataclass(frozen=True)
class Fleet:
    """Where `ftlab run --per-volume` runs its volumes and keeps their table."""

    jobs: int | None
    scheduler: str | None
    ship_traces: bool
    out: Path


def run_volumes(
    ftl_name: str,
    source: dict[str, Any],
    json_out: str | None,
    fleet_at: Fleet,
    quiet: bool,
) -> None:
    """`ftlab run --per-volume`: a sweep over the trace's volumes, and the fleet's totals."""
    if source["trace"] is None:
        fail("--per-volume needs --trace")
    if "stack" in source:
        fail("--per-volume runs the trace as it is: no --stack")
    out = fleet_at.out
    check_output("--out", out)
    table = run_core(
        lambda: ftlab.replay_volumes(
            source["trace"],
            ftl_name,
            preset=source["preset"],
            config=source["config"],
            sets=source["sets"],
            format=source["format"],
            time_unit=source["time_unit"],
            precondition=source.get("precondition"),
            verify=source["verify"],
            mapping_only=source["mapping_only"],
            jobs=fleet_at.jobs,
            scheduler=fleet_at.scheduler,
            ship_traces=fleet_at.ship_traces,
            out=out,
            progress=not quiet,
        )
    )
    fleet = ftlab.fleet_summary(table)
    if json_out:
        text = json.dumps(fleet, indent=2) + "\n"
        if json_out == "-":
            click.echo(text, nl=False)
        else:
            write_output("--json", json_out, text)
    if not quiet and json_out != "-":
        click.echo(render_table(["fleet", "value"], [(k, str(v)) for k, v in fleet.items()]))
        click.echo(f"one row per volume: {out}")


@main.command()
@click.option("--ftl", "ftl_name", default="page", show_default=True, help="FTL scheme.")
@source_options
@click.option("--years", type=float, default=5.0, show_default=True, help="Years in service.")
@click.option(
    "--points", type=click.IntRange(min=2), default=6, show_default=True, help="Ages sampled."
)
@click.option(
    "--dwpd",
    type=float,
    default=1.0,
    show_default=True,
    help="Device writes per day the host makes over the years (sets the wear).",
)
@click.option(
    "--data-age",
    "data_age_days",
    type=float,
    help="Age in days of the data the runs read (default: one device write's time, 1 / dwpd).",
)
@click.option("--out", type=click.Path(path_type=Path), help="Write the table as CSV.")
@click.option("--plot", "plot_to", type=click.Path(path_type=Path), help="Write a PNG plot.")
def lifetime(
    ftl_name: str,
    source: dict[str, Any],
    years: float,
    points: int,
    dwpd: float,
    data_age_days: float | None,
    out: Path | None,
    plot_to: Path | None,
) -> None:
    """A device's life sampled: the workload run at ages spread over the years, each on a
    device worn and aged to it; WAF, read retries, latencies and remaining life over time."""
    from ftlab import _lifetime

    check_output("--out", out)
    check_output("--plot", plot_to)
    sets = source.pop("sets")
    table = run_core(
        lambda: _lifetime.lifetime(
            ftl_name,
            years=years,
            points=points,
            dwpd=dwpd,
            data_age_days=data_age_days,
            sets=sets,
            **source,
        )
    )
    if out:
        table.write_csv(out)
    if plot_to:
        title = f"{ftl_name}: {years:g} years at {dwpd:g} drive writes per day"
        _lifetime.plot(table, plot_to, title)
    header = ["year", "P/E", "data age d", "used %", "WAF", "retries/read", "uncorr.",
              "read mean us", "read p99 us", "write p99 us", "life left y"]  # fmt: skip
    rows = [
        (
            f"{r['year']:.1f}",
            f"{r['pe_cycles']:,}",
            f"{r['data_age_days']:.1f}",
            str(r["percentage_used"]),
            f"{r['waf']:.3f}",
            f"{r['retries_per_read']:.2f}",
            f"{r['uncorrectable_reads']:,}",
            f"{r['read_mean_us']:.1f}",
            f"{r['read_p99_us']:.1f}",
            f"{r['write_p99_us']:.1f}",
            f"{r['remaining_years']:.1f}",
        )  # fmt: skip
        for r in table.iter_rows(named=True)
    ]
    click.echo(render_table(header, rows))


@main.command()
@click.option("--ftl", "ftl_name", default="page", show_default=True, help="FTL scheme.")
@device_options
@click.option(
    "--store",
    required=True,
    type=click.Path(path_type=Path),
    help="Directory of the page store (created if missing; reopened, or recovered, if not).",
)
@click.option(
    "--listen",
    default="127.0.0.1:10809",
    show_default=True,
    metavar="HOST:PORT|unix:PATH",
    help="Address to listen on (port 0: any free port), or a Unix socket.",
)
@click.option(
    "--timing",
    type=click.Choice(["none", "model", "real"]),
    default="none",
    show_default=True,
    help="none: mapping only, no timing model, replies at once; model: the timing model "
    "runs (the report has latencies), replies at once; real: each reply waits for the "
    "simulated SSD's completion time.",
)
@click.option("--verify", is_flag=True, help="Check every read against a shadow copy.")
@click.option(
    "--preallocate",
    is_flag=True,
    help="Write the page store's pages with zeros when it is made (its raw size; by default "
    "they are allocated with fallocate), so that no write changes the file system's "
    "metadata and no flush waits for its journal.",
)
@click.option(
    "--sync-poll/--no-sync-poll",
    default=True,
    show_default=True,
    help="Keep a CPU busy while each flush's fdatasync is in flight (up to 5 ms), so that "
    "an idle CPU's wake-up does not set the flush's latency.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Client connections served at once; more are closed at once, with a message.",
)
@click.option(
    "--handshake-timeout",
    type=click.FloatRange(min=0.001),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Time a client has to complete the NBD handshake.",
)
@click.option(
    "--read-only", is_flag=True, help="Export read-only: writes, trims and zero writes get EPERM."
)
@click.option(
    "--status",
    "status_listen",
    metavar="HOST:PORT",
    help="Serve the live metrics over HTTP there: JSON at /, Prometheus text at /metrics.",
)
@click.option(
    "--tls-psk",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Require TLS with pre-shared keys: FILE holds `identity:hexkey` lines (qemu's and "
    "nbdkit's keys.psk).",
)
@click.option(
    "--tls-cert",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Require TLS with this X.509 certificate (PEM, its chain after it); with --tls-key.",
)
@click.option(
    "--tls-key",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="The certificate's private key (PEM).",
)
@click.option("--json", "json_out", metavar="FILE", help="Write the report on shutdown.")
@click.option("--quiet", "-q", is_flag=True, help="No status line, no summary.")
def serve(
    ftl_name: str,
    preset: str | None,
    configs: Sequence[Path],
    sets: Sequence[str],
    store: Path,
    listen: str,
    timing: str,
    verify: bool,
    preallocate: bool,
    sync_poll: bool,
    max_connections: int,
    handshake_timeout: float,
    read_only: bool,
    status_listen: str | None,
    tls_psk: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    json_out: str | None,
    quiet: bool,
) -> None:
    """Serve a scheme as a block device over NBD, its data in a page store, until Ctrl-C or
    SIGTERM (then: flush, checkpoint, report)."""
    from ftlab._serve import StatusLine, install_sigterm, startup_message

    check_output("--json", json_out)
    if tls_psk and (tls_cert or tls_key):
        fail("--tls-psk or --tls-cert with --tls-key, not both")
    if bool(tls_cert) != bool(tls_key):
        fail("--tls-cert and --tls-key go together")
    if "+" in ftl_name:
        fail("serve runs a scheme alone: host stacks (STACK+SCHEME) are not served")
    install_sigterm()
    status = StatusLine(quiet=quiet)

    def on_start(startup: str, address: str) -> None:
        click.echo(startup_message(startup, address), err=True)

    try:
        text = run_core(
            lambda: _core.serve(
                ftl_name,
                str(store),
                listen,
                timing == "real",
                verify,
                on_start,
                status,
                preallocate,
                max_connections,
                handshake_timeout,
                read_only,
                status_listen,
                None if tls_psk is None else str(tls_psk),
                None if tls_cert is None else str(tls_cert),
                None if tls_key is None else str(tls_key),
                sync_poll,
                preset=preset,
                config=[str(c) for c in configs],
                # Mapping only unless the time is wanted (the user's keys come after).
                sets=(["replay.timing=false"] if timing == "none" else []) + list(sets),
            )
        )
    finally:
        status.close()
    if json_out == "-":
        click.echo(text, nl=False)
    elif json_out:
        write_output("--json", json_out, text)
    if not quiet and json_out != "-":
        report = json.loads(text)
        click.echo(render_table(["metric", "value"], run_rows(report, ftlab.summarize(report))))


@main.command()
@click.option(
    "--ftl",
    "ftl_names",
    metavar="A,B,...",
    help="Comma-separated schemes (default: every scheme, see `ftlab schemes`).",
)
@source_options
@click.option("--jobs", "-j", type=int, help="Parallel runs, in threads (default: one per core).")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Write a report folder: table, plots (PNG, SVG), index.html.",
)
@click.option("--json", "json_out", metavar="FILE", help="Write every report as one JSON object.")
@click.option("--quiet", "-q", is_flag=True, help="Only the table.")
def compare(
    ftl_names: str | None,
    source: dict[str, Any],
    jobs: int | None,
    out: Path | None,
    json_out: str | None,
    quiet: bool,
) -> None:
    """Run several FTL schemes over the same trace or workload; print them side by side."""
    check_output("--json", json_out)
    check_output("--out", out, folder=True)
    names = [n.strip() for n in ftl_names.split(",") if n.strip()] if ftl_names else None
    started = time.monotonic()

    def on_done(name: str, result: ftlab.Result) -> None:
        if not quiet:
            click.echo(
                f"{name}: done in {result.wall_seconds:.2f} s "
                f"({time.monotonic() - started:.1f} s elapsed)",
                err=True,
            )

    cmp = run_core(lambda: ftlab.compare(names, jobs=jobs, on_done=on_done, **source))
    first = next(iter(cmp.results.values()))
    if not quiet:
        warn_bad_lines(first.report)
        mode = first.report["mode"]
        precondition = first.summary["precondition_mode"]
        if precondition and precondition != "none":
            mode += f", preconditioned: {precondition}"
        click.echo(f"source: {first.summary['source']} ({mode})")
        if cmp.fitted_blocks_per_plane is not None:
            logical = first.report["device"]["logical_bytes"] / 2**20
            click.echo(
                f"device fitted to the trace, the same for every scheme: "
                f"{cmp.fitted_blocks_per_plane:,} blocks per plane, {logical:,.1f} MiB logical"
            )
    walls = {n: r.wall_seconds for n, r in cmp.results.items()}
    header, rows = compare_rows(cmp.summary, walls)
    click.echo(render_table(header, rows))
    for note in compare_notes(cmp.summary):
        click.echo(note)
    if not quiet and first.report["mode"] == "timed":
        click.echo()
        click.echo(
            render_table(
                ["where the time went", "read: largest parts", "write: largest parts"],
                [[n, top_parts(s, "read"), top_parts(s, "write")] for n, s in cmp.summary.items()],
            )
        )
        for name, r in cmp.results.items():
            for line in latency_explanations(r.summary, r.report) + stall_warnings(r.report):
                click.echo(f"{name}: {line}", err=line.startswith("warning"))
    if json_out:
        merged = {n: r.report for n, r in cmp.results.items()}
        write_output("--json", json_out, json.dumps(merged, indent=2) + "\n")
    if out is not None:
        index = run_core(lambda: cmp.write_report(out))
        click.echo(f"report: {index}")


@main.command()
@click.argument("spec", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="The results table (Parquet; default: SPEC-NAME.parquet here). Runs already in it "
    "are skipped.",
)
@click.option("--jobs", "-j", type=int, help="Parallel runs, in threads (default: one per core).")
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Run on an existing Dask cluster (tcp://host:8786) instead of local threads.",
)
@click.option(
    "--ship-traces",
    is_flag=True,
    help="With --scheduler: send each trace to every worker once (default: workers read "
    "the traces at the same path).",
)
@click.option("--retry-failed", is_flag=True, help="Run again the runs that failed before.")
@click.option("--dry-run", is_flag=True, help="Check the spec and count the runs; run nothing.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar, no summary.")
def sweep(
    spec: Path,
    out: Path | None,
    jobs: int | None,
    scheduler: str | None,
    ship_traces: bool,
    retry_failed: bool,
    dry_run: bool,
    quiet: bool,
) -> None:
    """Run a design-space sweep: every combination of the schemes, sources, presets and
    configuration values SPEC (TOML) names, repeated over seeds; one row per run in a
    Parquet table (resumable: runs already there are skipped)."""
    from ftlab import _sweep

    if ship_traces and scheduler is None:
        fail("--ship-traces needs --scheduler")
    table = out or _sweep.default_out(spec)
    check_output("--out", table)
    started = time.monotonic()
    plan = run_core(lambda: _sweep.plan(_sweep.parse_spec(spec)))
    if dry_run:
        done = 0
        if table.exists() or _sweep.parts_dir(table).is_dir():
            existing = run_core(lambda: _sweep.load_table(table))
            if existing.height:
                done = len(set(existing["run_key"].to_list()) & set(plan.run_keys))
        click.echo(
            f"{spec}: {len(plan.tasks):,} runs, {done:,} already in {table}, "
            f"{len(plan.tasks) - done:,} to run"
        )
        return
    result = run_core(
        lambda: _sweep.run_plan(
            plan,
            out=table,
            jobs=jobs,
            scheduler=scheduler,
            ship_traces=ship_traces,
            retry_failed=retry_failed,
            progress=not quiet and sys.stderr.isatty(),
        )
    )
    wall = time.monotonic() - started
    if result.interrupted:
        click.echo(
            f"interrupted: {result.ran:,} runs finished now are in {table} "
            f"({result.skipped + result.ran:,} of {result.planned:,}); run the same command "
            "to resume",
            err=True,
        )
        sys.exit(130)
    if not quiet:
        where = f"on {scheduler}" if scheduler else "locally"
        click.echo(
            f"{result.planned:,} runs: {result.ran:,} run now {where} in {wall:.1f} s, "
            f"{result.skipped:,} already in {table}"
            + (f", {len(result.failed):,} failed" if result.failed else "")
        )
        click.echo(f"table: {table} ({result.table.height:,} rows of this spec)")
    if result.failed:
        for key, message in result.failed[:5]:
            click.echo(f"error: run {key}: {message}", err=True)
        if len(result.failed) > 5:
            click.echo(f"... and {len(result.failed) - 5} more (the `error` column)", err=True)
        sys.exit(1)


@main.command()
@click.argument("table", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Folder for the plots (default: TABLE-NAME-plots beside the table).",
)
@click.option(
    "--x", "x_key", metavar="KEY", help="Swept key for the heatmap's x axis and the lines."
)
@click.option("--y", "y_key", metavar="KEY", help="Swept key for the heatmap's y axis.")
@click.option(
    "--metric",
    help="Metric of the heatmap and the lines (default: waf for the heatmap, mean latency "
    "for the lines).",
)
@click.option(
    "--op",
    type=click.Choice(["read", "write"]),
    default="read",
    show_default=True,
    help="Latency plotted against mapping DRAM.",
)
def plot(
    table: Path,
    out: Path | None,
    x_key: str | None,
    y_key: str | None,
    metric: str | None,
    op: str,
) -> None:
    """Plot a sweep table: Pareto front of mapping DRAM against mean and p99 latency per
    trace, a heatmap of the WAF over two swept keys, one line per scheme against a key."""
    from ftlab import _sweep, _sweep_plot
    from ftlab._format import latency

    folder = out or table.with_name(table.stem + "-plots")
    check_output("--out", folder, folder=True)
    df = run_core(lambda: _sweep.load_table(table))
    if not df.height or "memory_peak_bytes" not in df.columns:
        fail(f"{table}: no finished run to plot")
    for name, key in (("--x", x_key), ("--y", y_key), ("--metric", metric)):
        if key is not None and key not in df.columns:
            known = ", ".join(_sweep_plot.swept_keys(df, axes=True)) or "none"
            fail(f"{name} {key}: the table has no such column (swept keys: {known})")
    files, notes = _sweep_plot.write_plots(df, folder, x=x_key, y=y_key, metric=metric, op=op)
    columns = _sweep_plot._latency_columns(df, op)
    front = _sweep_plot.pareto_front(df, y=columns[0][0])
    front = front.filter(front["pareto"])
    keys = _sweep_plot.swept_keys(df)
    rows = [
        [
            Path(str(r["source"])).name,
            r["scheme"],
            ", ".join(f"{k}={r[k]}" for k in keys if r.get(k) is not None) or "-",
            f"{r['memory_peak_bytes'] / 2**20:,.2f}",
            latency(r[columns[0][0]]) if columns[0][0] != "waf" else f"{r['waf']:.3f}",
        ]
        for r in front.iter_rows(named=True)
    ]
    label = columns[0][1].split(" (")[0]
    click.echo(f"Pareto front (mapping DRAM against {label}):")
    click.echo(render_table(["source", "scheme", "settings", "DRAM MiB", label], rows))
    for note in notes:
        click.echo(note)
    for f in files:
        click.echo(f"plot: {f}")


@main.command()
@click.option("--trace", type=click.Path(path_type=Path), help="Trace file to advise for.")
@click.option("--workload", help="Or a built-in synthetic workload.")
@click.option(
    "--dram",
    required=True,
    metavar="BUDGET",
    help="Mapping DRAM budget (bytes, or with a suffix: 4MiB, 512KiB).",
)
@click.option(
    "--goal",
    type=click.Choice(["latency", "waf", "endurance"]),
    default="latency",
    show_default=True,
    help="What to rank by: mean read latency, write amplification, or the most-worn "
    "block's erases.",
)
@device_options
@click.option(
    "--precondition",
    type=click.Choice(["none", "fill", "steady"]),
    help="How the device is prepared (default: the configuration's, steady).",
)
@click.option("--ftl", "ftl_names", metavar="A,B,...", help="Only these schemes (default: all).")
@click.option("--seeds", type=int, default=1, show_default=True, help="Runs per configuration.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("advise"),
    show_default=True,
    help="Folder for the runs (advise.parquet, resumable), pareto.png/.svg and advice.txt.",
)
@click.option("--jobs", "-j", type=int, help="Parallel runs, in threads (default: one per core).")
@click.option("--scheduler", metavar="ADDRESS", help="Run on an existing Dask cluster.")
@click.option("--ship-traces", is_flag=True, help="With --scheduler: send the trace to workers.")
@click.option("--quiet", "-q", is_flag=True, help="Only the ranking and the explanation.")
def advise(
    trace: Path | None,
    workload: str | None,
    dram: str,
    goal: str,
    preset: str | None,
    configs: Sequence[Path],
    sets: Sequence[str],
    precondition: str | None,
    ftl_names: str | None,
    seeds: int,
    out: Path,
    jobs: int | None,
    scheduler: str | None,
    ship_traces: bool,
    quiet: bool,
) -> None:
    """Which FTL scheme to run on a trace within a mapping DRAM budget: runs the schemes
    that fit it (each with a small sweep of its own parameters), ranks them for the goal,
    says why, and saves the Pareto plot."""
    from ftlab import _advise

    if trace is None and workload is None:
        fail("give --trace FILE (or --workload NAME)")
    if ship_traces and scheduler is None:
        fail("--ship-traces needs --scheduler")
    check_output("--out", out, folder=True)
    names = [n.strip() for n in ftl_names.split(",") if n.strip()] if ftl_names else None
    dram_value: str | int = int(dram) if dram.isdigit() else dram
    advice = run_core(
        lambda: _advise.advise(
            dram=dram_value,
            trace=trace,
            workload=workload,
            goal=goal,  # type: ignore[arg-type]
            preset=preset,
            config=configs,
            sets=sets,
            precondition=precondition,
            seeds=seeds,
            schemes=names,
            out=out,
            jobs=jobs,
            scheduler=scheduler,
            ship_traces=ship_traces,
            progress=not quiet and sys.stderr.isatty(),
            on_note=None if quiet else lambda note: click.echo(note, err=True),
        )
    )
    if advice.ranking.height:
        header, rows = _advise.ranking_rows(advice)
        click.echo(render_table(header, rows))
        click.echo()
    for line in advice.lines:
        click.echo(line)
    for f in advice.files:
        click.echo(f"saved: {f}")
    if advice.best is None:
        sys.exit(1)


def trace_reading_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """How `trace info` and `trace convert` read their FILE: format, time unit, blkparse
    event, bad lines."""
    for option in reversed([*TRACE_FORMAT_OPTIONS, *TRACE_LINE_OPTIONS]):
        func = option(func)
    return func


@main.group()
def trace() -> None:
    """Describe traces and list the formats ftlab reads."""


@trace.command("info")
@click.argument("file", type=click.Path(path_type=Path))
@trace_reading_options
@click.option("--page-size", default=4096, show_default=True, help="Footprint page size, bytes.")
@click.option("--device", "devices", multiple=True, metavar="NAME", help="Only this device.")
@click.option(
    "--device-layout",
    type=click.Choice(["separate", "merged"]),
    help="Count footprint per device (default) or in one shared space.",
)
@click.option("--json", "json_out", metavar="FILE", help="Write the description as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No table, no progress bar.")
def trace_info(
    file: Path,
    trace_format: str | None,
    time_unit: str | None,
    page_size: int,
    devices: Sequence[str],
    device_layout: str | None,
    blkparse_event: str | None,
    skip_bad_lines: bool,
    json_out: str | None,
    quiet: bool,
) -> None:
    """Requests, read/write/trim mix, sizes, footprint, spans, overwrite factor, devices."""
    check_output("--json", json_out)
    sets = trace_sets(devices, device_layout, None, blkparse_event, skip_bad_lines)
    if time_unit:
        sets.append(f"trace.time_unit={json.dumps(time_unit)}")
    progress = Progress(quiet, unit="records")
    try:
        info = run_core(
            lambda: ftlab.trace_info(
                file,
                page_size=page_size,
                sets=sets,
                format=trace_format or "",
                progress=lambda done, fraction: progress(done, fraction, "scan"),
            )
        )
    finally:
        progress.close()
    if json_out:
        write_output("--json", json_out, info.json)
    if quiet:
        return
    d = info.info["diagnostics"]
    if d["bad_lines"]:
        click.echo(f"warning: {d['bad_lines']:,} bad line(s) skipped; the first:", err=True)
        for example in d["bad_line_examples"]:
            click.echo(f"  {example}", err=True)
    click.echo(render_table(["trace", "value"], trace_info_rows(info.info)))
    click.echo()
    click.echo(render_table(["request size (B)", "reads", "writes", "trims"], size_rows(info.info)))
    click.echo()
    rows = device_rows(info.info)
    click.echo(
        render_table(
            ["device", "requests", "reads", "writes", "trims", "footprint pages", "max GiB"], rows
        )
    )
    if len(info.info["devices"]) > len(rows):
        click.echo(f"... and {len(info.info['devices']) - len(rows):,} more devices (see --json)")


@trace.command("convert")
@click.argument("file", type=click.Path(path_type=Path))
@click.argument("output", type=click.Path(path_type=Path))
@trace_reading_options
@click.option("--quiet", "-q", is_flag=True, help="No progress bar, no summary.")
def trace_convert(
    file: Path,
    output: Path,
    trace_format: str | None,
    time_unit: str | None,
    blkparse_event: str | None,
    skip_bad_lines: bool,
    quiet: bool,
) -> None:
    """Write FILE in ftlab's binary form to OUTPUT, for runs that read it at memory speed."""
    check_output("OUTPUT", output)
    sets = trace_sets((), None, None, blkparse_event, skip_bad_lines)
    if time_unit:
        sets.append(f"trace.time_unit={json.dumps(time_unit)}")
    progress = Progress(quiet, unit="records")
    try:
        done = run_core(
            lambda: ftlab.convert_trace(
                file,
                output,
                sets=sets,
                format=trace_format or "",
                progress=lambda n, fraction: progress(n, fraction, "convert"),
            )
        )
    finally:
        progress.close()
    if not quiet:
        click.echo(
            f"{done['records']:,} records of {done['format']} "
            f"({done['input_bytes']:,} bytes) -> {done['output']} ({done['output_bytes']:,} bytes)"
        )


@trace.command("formats")
def trace_formats() -> None:
    """List the trace formats, with an example line of each."""
    rows = [
        (name, ", ".join(aliases), unit, example)
        for name, aliases, _, unit, example in ftlab.trace_formats()
    ]
    click.echo(render_table(["format", "aliases", "time unit", "example"], rows))
    click.echo("\nauto (the default) recognises the format from the content.")


@main.group()
def store() -> None:
    """Check or repair the page store of `ftlab serve` (offline: its server stopped)."""


def _store_findings(directory: Path, repair: bool) -> dict[str, Any]:
    if not (directory / "meta.json").exists():
        fail(f"{directory}: not a page store (no meta.json)")
    found: dict[str, Any] = json.loads(run_core(lambda: _core.store_check(str(directory), repair)))
    return found


@store.command("check")
@click.argument("directory", type=click.Path(path_type=Path))
def store_check(directory: Path) -> None:
    """Verify every file of the store, every OOB record against the checkpoint's map and
    every page against its checksum; list the damage. Exit status 1 if there is any."""
    found = _store_findings(directory, repair=False)
    for line in found["damage"]:
        click.echo(f"damaged: {line}")
    click.echo(
        f"{found['records']:,} OOB records, {found['pages_checked']:,} pages checked, "
        f"{found['torn']:,} torn writes since the checkpoint (ignored by recovery), "
        f"{len(found['damage']):,} problems"
    )
    if found["damage"]:
        click.echo(f"`ftlab store repair {directory}` rebuilds what can be rebuilt", err=True)
        sys.exit(1)


@store.command("repair")
@click.argument("directory", type=click.Path(path_type=Path))
def store_repair(directory: Path) -> None:
    """Rebuild what the OOB records and the checkpoint's map allow (truncated files
    extended, lost OOB records rebuilt) and list what cannot be rebuilt."""
    found = _store_findings(directory, repair=True)
    for line in found["repaired"]:
        click.echo(f"repaired: {line}")
    for line in found["unrepairable"]:
        click.echo(f"cannot repair: {line}")
    if not found["repaired"] and not found["unrepairable"]:
        click.echo("nothing to repair")


@main.group()
def config() -> None:
    """Show configurations and presets."""


@config.command("show")
@click.argument("preset", required=False)
@click.option("--ftl", help="With what this scheme assumes of the device (leaftl's flush).")
@click.option("--workload", help="Apply a built-in workload.")
@click.option("--config", "configs", multiple=True, type=click.Path(path_type=Path))
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE")
def config_show(
    preset: str | None,
    ftl: str | None,
    workload: str | None,
    configs: Sequence[Path],
    sets: Sequence[str],
) -> None:
    """Print the resolved configuration (PRESET, then what --ftl assumes of the device,
    then files, then overrides) as TOML."""
    names = [name for name, _ in ftlab.schemes()]
    if ftl is not None and ftl not in names:
        fail(f"unknown FTL scheme `{ftl}`; the schemes are: {', '.join(names)}")
    text = run_core(
        lambda: _core.config_show(
            ftl,
            preset=preset,
            workload=workload,
            config=[str(c) for c in configs],
            sets=list(sets),
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
def stacks() -> None:
    """List the host stacks (--stack, or STACK+SCHEME as a scheme's name)."""
    print_pairs(ftlab.stacks(), ("stack", "description"))


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
    """Requests per second and peak memory of each scheme, timed and mapping-only; trace
    reading speed of each text format."""
    from ftlab import _bench

    check_output("--json", json_out)
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
        write_output("--json", json_out, json.dumps(results, indent=2) + "\n")


@main.command()
@click.argument("name", required=False)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Output folder (default: reproduce/NAME; for `all`, reproduce).",
)
@click.option("--quick", is_flag=True, help="Small workloads: seconds instead of minutes.")
@click.option(
    "--why",
    is_flag=True,
    help="Check the causes NAME states for its misses: each experiment changes the one thing "
    "a cause names and measures the headline again (OUT/why.json).",
)
def reproduce(name: str | None, out: Path | None, quick: bool, why: bool) -> None:
    """Regenerate a paper's figures as tables and plots (no NAME: list them; `all`: every
    one, and one HTML report of them, OUT/index.html)."""
    from ftlab import reproduce as experiments

    if name is None:
        pairs = [(n, d) for n, (_, d) in sorted(experiments.EXPERIMENTS.items())]
        pairs.append(("all", "every experiment, and one HTML report: OUT/index.html"))
        print_pairs(pairs, ("experiment", "description"))
        return
    if name == "all":
        if why:
            fail("--why takes one experiment's NAME, not `all`")
        from ftlab.reproduce import report

        folder = out or Path("reproduce")
        check_output("--out", folder, folder=True)
        index = run_core(lambda: report.run_all(folder, quick))
        click.echo(f"report: {index}")
        return
    folder = out or Path("reproduce") / name
    if name in experiments.EXPERIMENTS:  # else the error is the unknown name
        check_output("--out", folder, folder=True)
    try:
        run_core(lambda: experiments.run(name, folder, quick, why))
    except KeyError as e:
        fail(str(e.args[0]))


@main.command()
@click.option("--quick", is_flag=True, help="The quick subset (every family; about a minute).")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Write index.html, a plot per family and scorecard.json here.",
)
@click.option("--json", "json_out", metavar="FILE", help="Write the scorecard as JSON.")
@click.option("--jobs", "-j", type=int, help="Parallel runs, in threads (default: one per core).")
@click.option("--quiet", "-q", is_flag=True, help="Only the table and the summary.")
def validate(
    quick: bool, out: Path | None, json_out: str | None, jobs: int | None, quiet: bool
) -> None:
    """Check ftlab's model against closed-form results, physical bounds and a peer
    simulator: a scorecard of reference cases; exit status 1 if any case fails."""
    from ftlab import validate as validation
    from ftlab.validate import report

    check_output("--json", json_out)
    check_output("--out", out, folder=True)
    started = time.monotonic()

    def on_done(key: str, wall: float) -> None:
        if not quiet:
            click.echo(
                f"{key}: {wall:.1f} s ({time.monotonic() - started:.0f} s elapsed)", err=True
            )

    card = run_core(lambda: validation.validate(quick=quick, jobs=jobs, on_done=on_done))
    click.echo(render_table(report.HEADER, report.rows(card)))
    for line in report.summary_lines(card):
        click.echo(line)
    for r in card.results:
        if r.status in ("fail", "xfail") and r.message:
            click.echo(f"{r.status}: {r.case.name}: {r.message}")
    click.echo(f"{time.monotonic() - started:.0f} s")
    if json_out:
        write_output("--json", json_out, card.to_json())
    if out is not None:
        index = run_core(lambda: card.write_report(out))
        click.echo(f"report: {index}")
    if not card.passed:
        sys.exit(1)


if __name__ == "__main__":
    main()
