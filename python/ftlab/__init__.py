"""ftlab: a laboratory for flash translation layers.

The simulator is the Rust core (`ftlab._core`); this package is its front. Importing it is
cheap: heavy modules (rich, polars, matplotlib) are imported only where they are used.

    >>> import ftlab
    >>> result = ftlab.simulate("page", workload="zipf")
    >>> result.summary["waf"]
    >>> result.time_series          # a polars DataFrame
    >>> cmp = ftlab.compare(["page"], trace="financial1.spc.gz")
    >>> cmp.table                   # one row per scheme
    >>> cmp.write_report("report")  # plots (PNG, SVG) and an HTML page
    >>> table = ftlab.sweep("sweep.toml", out="sweep.parquet")  # one row per run
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ftlab import _core
from ftlab._core import FtlabError
from ftlab._lifetime import lifetime
from ftlab._registry import (
    causes,
    families,
    presets,
    scheme_info,
    schemes,
    split_stack,
    stacks,
    summarize,
    trace_formats,
    workloads,
)
from ftlab._run import (
    MODEL_0_1_SETS,
    PathLike,
    Precondition,
    Result,
    _model,
    _sets,
    _stack_sets,
    model_0_1,
    simulate,
)
from ftlab._scheme import (
    Device,
    Flash,
    Scheme,
    SchemeConfigError,
    register_native_scheme,
    register_scheme,
    unregister_scheme,
)
from ftlab._volumes import fleet_summary, replay_volumes

if TYPE_CHECKING:
    import polars
    from matplotlib.figure import Figure

    from ftlab._advise import Advice, Goal

__version__: str = _core.__version__

__all__ = [
    "MODEL_0_1_SETS",
    "CompareResult",
    "Device",
    "Flash",
    "FtlabError",
    "Precondition",
    "Result",
    "Scheme",
    "SchemeConfigError",
    "TraceInfo",
    "__version__",
    "advise",
    "causes",
    "compare",
    "families",
    "load_sweep",
    "model_0_1",
    "pareto_front",
    "plot_heatmap",
    "plot_lines",
    "plot_pareto",
    "presets",
    "register_native_scheme",
    "register_scheme",
    "scheme_info",
    "schemes",
    "simulate",
    "split_stack",
    "stacks",
    "summarize",
    "sweep",
    "sweep_means",
    "trace_formats",
    "trace_info",
    "convert_trace",
    "replay_volumes",
    "fleet_summary",
    "lifetime",
    "unregister_scheme",
    "workloads",
]


@dataclass
class CompareResult:
    """Several schemes over the same trace or workload.

    `results` maps each scheme to its Result; `summary` gives one flat dict per scheme;
    `table` is the side-by-side comparison as a polars DataFrame.
    """

    results: dict[str, Result]
    #: When the device was fitted to the trace: its `geometry.blocks_per_plane`, chosen
    #: once for every scheme.
    fitted_blocks_per_plane: int | None = None

    @property
    def summary(self) -> dict[str, dict[str, Any]]:
        """The headline numbers of each scheme."""
        return {name: r.summary for name, r in self.results.items()}

    @property
    def table(self) -> polars.DataFrame:
        """One row per scheme: DRAM, WAF, GC, mean and p99 latency, extra flash reads by
        cause."""
        from ftlab import _frames

        return _frames.compare_table(self.results)

    @property
    def time_series(self) -> polars.DataFrame:
        """Every scheme's time series, with a `scheme` column."""
        from ftlab import _frames

        return _frames.concat_with_scheme({n: r.time_series for n, r in self.results.items()})

    @property
    def latency_cdf(self) -> polars.DataFrame:
        """Every scheme's latency distributions, with a `scheme` column."""
        from ftlab import _frames

        return _frames.concat_with_scheme({n: r.latency_cdf for n, r in self.results.items()})

    @property
    def latency_breakdown(self) -> polars.DataFrame:
        """Every scheme's latency breakdown, with a `scheme` column."""
        from ftlab import _frames

        return _frames.concat_with_scheme({n: r.latency_breakdown for n, r in self.results.items()})

    def write_report(self, folder: PathLike) -> Path:
        """Writes the report folder: the table (CSV, Markdown), every run's JSON, plots
        (PNG and SVG) and `index.html` linking them. Returns the HTML page's path."""
        from ftlab import _report

        return _report.write(self, Path(folder))

    def save(self, folder: PathLike) -> Path:
        """Writes the comparison to `folder` (created): `compare.json` (kind, format
        version, the schemes in order, the fitted device), `table.parquet`, the merged
        `time_series`, `latency_cdf` and `latency_breakdown` as Parquet, and each scheme's
        run under `runs/SCHEME/` (see `Result.save`). `CompareResult.load(folder)` reads it
        back. Returns the folder."""
        from ftlab import _persist

        return _persist.save_compare(self, folder)

    @classmethod
    def load(cls, folder: PathLike) -> CompareResult:
        """A comparison saved with `save`. Raises FtlabError naming the file when the
        folder is not a saved comparison."""
        from ftlab import _persist

        results, blocks = _persist.load_compare(folder)
        return cls(results=results, fitted_blocks_per_plane=blocks)

    def _repr_html_(self) -> str:
        from html import escape

        from ftlab._format import compare_notes, compare_rows, html_table

        header, rows = compare_rows(self.summary)
        notes = "".join(f"<p>{escape(n)}</p>" for n in compare_notes(self.summary))
        return html_table(header, rows) + notes


#: The schemes of `ftlab compare` run with no arguments: page-level mapping as the
#: reference, and the schemes that keep only part of the map in DRAM.
DEFAULT_COMPARISON = ["page", "dftl", "sftl", "tpftl", "selective", "leaftl"]
#: Their mapping DRAM budget in that comparison, as a share of the page-level table
#: (`dram.budget_fraction`): one eighth, within the 1/32 to 1/4 range the demand-caching
#: papers evaluate.
DEFAULT_COMPARISON_BUDGET = 0.125


def compare(
    ftls: Sequence[str] | None = None,
    *,
    trace: PathLike | None = None,
    workload: str | None = None,
    preset: str | None = None,
    config: Sequence[PathLike] = (),
    sets: Sequence[str] = (),
    verify: bool = False,
    mapping_only: bool = False,
    format: str = "",
    time_unit: str = "",
    precondition: Precondition | None = None,
    jobs: int | None = None,
    on_done: Callable[[str, Result], object] | None = None,
    stack: str | None = None,
) -> CompareResult:
    """Runs several schemes (default: every scheme the core has) over the same trace or
    workload, on the same device (a scheme may be named with its host stack,
    `STACK+SCHEME`, and `stack` sets the stack of the others), in parallel threads of this
    process (`jobs`, default: one per core, at most one per scheme; the core releases the
    GIL). A device fitted to a trace is fitted once, large enough for every scheme. Other
    arguments are those of `simulate`. `on_done(name, result)` is called, in the calling
    thread, as each scheme finishes. Ctrl-C stops every run and raises KeyboardInterrupt.
    Raises FtlabError naming the scheme that failed (the others are stopped).

    With no schemes, no settings and no source but the default workload, runs the
    default comparison (`DEFAULT_COMPARISON`): the page-level FTL against the schemes that
    cache their map, under one mapping DRAM budget, on the default workload and a filled
    device.
    """
    from ftlab import _compare

    if not ftls and trace is None and workload in (None, "default") and not config and not sets:
        ftls, workload = DEFAULT_COMPARISON, "default"
        sets = [f"dram.budget_fraction={DEFAULT_COMPARISON_BUDGET}"]
        precondition = precondition or "fill"
    names = list(dict.fromkeys(ftls)) if ftls else [name for name, _ in schemes()]
    known = {name for name, _ in schemes()}
    unknown = [n for n in names if split_stack(n)[1] not in known]
    if unknown:
        raise FtlabError(
            f"unknown FTL scheme(s) {', '.join(unknown)}; the schemes are: "
            + ", ".join(sorted(known))
        )
    known_stacks = {name for name, _ in stacks()}
    bad = [n for n in names if split_stack(n)[0] not in (None, *known_stacks)]
    bad += [stack] if stack is not None and stack not in known_stacks else []
    if bad:
        raise FtlabError(
            f"unknown host stack in {', '.join(bad)}; the stacks are: "
            + ", ".join(sorted(known_stacks))
        )
    if trace is None and workload is None and not config and not sets:
        workload = "default"
    preset, overrides = _model(preset, _stack_sets(stack) + _sets(sets, mapping_only, precondition))
    common: dict[str, Any] = {
        "trace": None if trace is None else str(trace),
        "workload": workload,
        "preset": preset,
        "config": [str(c) for c in config],
        "sets": overrides,
        "verify": verify,
        "format": format,
        "time_unit": time_unit,
    }
    # One device for every scheme: when the device is fitted to the trace, fit it once,
    # to what every scheme accepts (map-on-flash schemes need more spare space).
    blocks = _core.fitted_blocks_per_plane(names, **common)
    if blocks is not None:
        common["sets"] = [
            *common["sets"],
            f"geometry.blocks_per_plane={blocks}",
            'trace.device_size="config"',
        ]
    outputs = _compare.run_all(names, common, jobs, on_done)
    return CompareResult(
        results={name: outputs[name] for name in names}, fitted_blocks_per_plane=blocks
    )


@dataclass
class TraceInfo:
    """What `ftlab trace info` reports: `info` as a dict, the size histogram and the
    devices as DataFrames."""

    json: str
    info: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.info = json.loads(self.json)

    @property
    def size_histogram(self) -> polars.DataFrame:
        """Requests by size bucket (`up_to_bytes`, null for the largest) and type."""
        import polars as pl

        return pl.DataFrame(self.info["size_histogram"])

    @property
    def devices(self) -> polars.DataFrame:
        """One row per device kept."""
        import polars as pl

        return pl.DataFrame(self.info["devices"])


def trace_info(
    path: PathLike,
    *,
    page_size: int = 4096,
    config: Sequence[PathLike] = (),
    sets: Sequence[str] = (),
    format: str = "",
    progress: Callable[[int, float], object] | None = None,
) -> TraceInfo:
    """Describes a trace: requests, read/write/trim mix, sizes, footprint in distinct
    pages of `page_size` bytes, address span, overwrite factor, time span, devices.
    `sets` are `trace.*` overrides (`trace.devices=["0"]`, ...)."""
    overrides = list(sets)
    if format:
        overrides.append(f'trace.format="{format}"')
    text = _core.trace_info(
        str(path),
        page_size=page_size,
        config=[str(c) for c in config],
        sets=overrides,
        progress=progress,
    )
    return TraceInfo(json=text)


def convert_trace(
    path: PathLike,
    output: PathLike,
    *,
    config: Sequence[PathLike] = (),
    sets: Sequence[str] = (),
    format: str = "",
    progress: Callable[[int, float], object] | None = None,
) -> dict[str, Any]:
    """Converts a trace (any format) to ftlab's binary form at `output`, which runs then
    read like any trace, at memory speed. Returns what was written: `records`,
    `input_bytes`, `output_bytes`, the input's `format`. `sets` are `trace.*` overrides
    for reading the input (`trace.time_unit`, `trace.skip_bad_lines`, ...)."""
    overrides = list(sets)
    if format:
        overrides.append(f'trace.format="{format}"')
    text = _core.convert_trace(
        str(path),
        str(output),
        config=[str(c) for c in config],
        sets=overrides,
        progress=progress,
    )
    result: dict[str, Any] = json.loads(text)
    return result


def sweep(
    spec: PathLike | dict[str, Any],
    *,
    out: PathLike | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    ship_traces: bool = False,
    retry_failed: bool = False,
    progress: bool | None = None,
) -> polars.DataFrame:
    """Runs a design-space sweep and returns its table: one row per run, sorted, with
    the configuration columns (`run_key`, `scheme`, `trace`, `workload`, `preset`,
    `precondition`, `seed`, then each configuration key the spec names, as resolved:
    `dram.budget_bytes`, ...) and every summary metric (`waf`, `read_mean_us`, ...,
    `erase_count_max`; `error` for a run that failed; `wall_seconds`).

    `spec` is a TOML file (see docs/guide/sweeps.md) or the same content as a dict.
    With `out` (a Parquet file), runs already in it are skipped and each finished run is
    written at once (an interrupted sweep loses none); the file keeps the rows of earlier
    specs too, the frame returned holds this spec's. Runs go to `jobs` threads (default:
    one per core) or, with `scheduler` (`tcp://host:8786`), to a Dask cluster, whose
    workers read traces by path or, with `ship_traces`, get a copy once each.
    `retry_failed` runs again the runs that failed. The spec is checked whole first: an
    unknown key, scheme, preset or workload, an empty grid, a missing trace or
    configuration file raise FtlabError naming the spec and the key before any run.
    """
    from ftlab import _sweep

    return _sweep.sweep(
        spec,
        out=out,
        jobs=jobs,
        scheduler=scheduler,
        ship_traces=ship_traces,
        retry_failed=retry_failed,
        progress=progress,
    )


def load_sweep(path: PathLike) -> polars.DataFrame:
    """A sweep's table (with the rows of an interrupted sweep not merged yet), sorted."""
    from ftlab import _sweep

    return _sweep.load_table(path)


def sweep_means(table: polars.DataFrame) -> polars.DataFrame:
    """One row per configuration of a sweep table: every metric averaged over the seeds
    (`runs`: how many), failed runs left out."""
    from ftlab import _sweep_plot

    return _sweep_plot.aggregate(table)


def pareto_front(
    table: polars.DataFrame,
    x: str = "memory_peak_bytes",
    y: str = "read_mean_us",
    by: Sequence[str] = ("source",),
) -> polars.DataFrame:
    """The configurations of a sweep table (averaged over seeds) with a `pareto` column:
    true when no other configuration on the same trace or workload has less `x` (mapping
    DRAM) and less `y` (a latency, the WAF, ...)."""
    from ftlab import _sweep_plot

    return _sweep_plot.pareto_front(table, x=x, y=y, by=by)


def plot_pareto(
    table: polars.DataFrame, op: str = "read", budget_bytes: int | None = None
) -> Figure:
    """Mapping DRAM against mean and p99 latency (of reads, or `op`), per trace or
    workload, the Pareto front drawn (WAF in mapping-only sweeps)."""
    from ftlab import _sweep_plot

    return _sweep_plot.plot_pareto(table, op=op, budget_bytes=budget_bytes)


def plot_heatmap(table: polars.DataFrame, x: str, y: str, metric: str = "waf") -> Figure:
    """A metric (the WAF by default) over two swept keys, one panel per scheme."""
    from ftlab import _sweep_plot

    return _sweep_plot.plot_heatmap(table, x, y, metric)


def plot_lines(table: polars.DataFrame, x: str, metric: str = "read_mean_us") -> Figure:
    """A metric against a swept key, one line per scheme."""
    from ftlab import _sweep_plot

    return _sweep_plot.plot_lines(table, x, metric)


def advise(
    *,
    dram: str | int,
    trace: PathLike | None = None,
    workload: str | None = None,
    goal: Goal = "latency",
    preset: str | None = None,
    config: Sequence[PathLike] = (),
    sets: Sequence[str] = (),
    precondition: Precondition | None = None,
    seeds: int = 1,
    schemes: Sequence[str] | None = None,
    out: PathLike | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    ship_traces: bool = False,
    progress: bool = False,
) -> Advice:
    """Which scheme to run on a trace (or workload) with `dram` bytes of mapping DRAM
    (`"4MiB"` or a number), for a `goal`: `latency` (mean read latency), `waf` or
    `endurance` (erases of the most-worn block). Every scheme (or `schemes`) runs with a
    small sweep of its own parameters under the budget; those whose map cannot fit are
    left out. Returns the ranking (one row per scheme, its best configuration first),
    every run's row, what was left out and why, and the explanation. With `out`, the
    runs are kept in `out/advise.parquet` (resumable) beside `pareto.png`/`.svg` and
    `advice.txt`."""
    from ftlab import _advise

    return _advise.advise(
        dram=dram,
        trace=trace,
        workload=workload,
        goal=goal,
        preset=preset,
        config=config,
        sets=sets,
        precondition=precondition,
        seeds=seeds,
        schemes=schemes,
        out=out,
        jobs=jobs,
        scheduler=scheduler,
        ship_traces=ship_traces,
        progress=progress,
    )
