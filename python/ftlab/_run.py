"""Running one scheme: `simulate` and the `Result` it returns, and the overrides every run
applies (`precondition`, `mapping_only`, a `STACK+SCHEME` name, ftlab 0.1's device model).
Re-exported by the package."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Union

from ftlab._parallel import run_cancellable
from ftlab._registry import summarize
from ftlab._scheme import load_entry_points

if TYPE_CHECKING:
    import polars

PathLike = Union[str, Path]
Progress = Callable[[int, Union[float, None], str], object]
#: How the device is prepared before the measured run (`precondition.mode`).
Precondition = Literal["none", "fill", "steady"]


@dataclass
class Result:
    """One finished run.

    `report` is the full report (the `--json` output) as a dict, `summary` its headline
    numbers; `time_series`, `latency_cdf`, `flash_ops`, `memory`, and for the log-block
    schemes `merges` and `associativity`, are the same data as polars DataFrames.
    """

    json: str
    wall_seconds: float
    report: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.report = json.loads(self.json)

    @property
    def ftl(self) -> str:
        """The scheme's name."""
        return str(self.report["ftl"])

    @property
    def summary(self) -> dict[str, Any]:
        """The headline numbers of the run, flat (latencies in microseconds)."""
        return summarize(self.report)

    @property
    def time_series(self) -> polars.DataFrame:
        """Samples every `metrics.sample_every_requests` requests: request, time_ns,
        host_pages_written, flash_programs, gc_invocations, memory_bytes, and the running
        write amplification `waf`."""
        from ftlab import _frames

        return _frames.time_series(self.report)

    @property
    def latency_cdf(self) -> polars.DataFrame:
        """Request latency distributions: op (read, write), quantile, latency_us.
        Empty in mapping-only mode."""
        from ftlab import _frames

        return _frames.latency_cdf(self.report)

    @property
    def latency_breakdown(self) -> polars.DataFrame:
        """Where the time went: op (read, write), part (host_interface, dram, buffer_wait,
        queue_host, bg_* and fg_* waits, suspension, sense, program, erase, transfer,
        translation, misprediction), mean_us, p99_us, share (of the op's total latency)
        and requests (that had some of it). Each op's part means add up to its mean
        latency. Empty in mapping-only mode."""
        from ftlab import _frames

        return _frames.latency_breakdown(self.report)

    @property
    def flash_ops(self) -> polars.DataFrame:
        """Flash operations by kind (read, program, erase) and cause (every cause of
        `causes()`, in report order)."""
        from ftlab import _frames

        return _frames.flash_ops(self.report)

    @property
    def memory(self) -> polars.DataFrame:
        """Mapping DRAM by component: final and peak bytes."""
        from ftlab import _frames

        return _frames.memory(self.report)

    @property
    def merges(self) -> polars.DataFrame:
        """Log-block schemes: merges by kind (switch, partial, full; per logical block)
        and the pages each kind copied. Empty for the other schemes."""
        from ftlab import _frames

        return _frames.merges(self.report)

    @property
    def associativity(self) -> polars.DataFrame:
        """Log-block schemes: how many logical blocks each reclaimed log block held
        (`associativity`: 0 to 16, then `17-32`, `33-64`, `65+`) and how often
        (`merges`). Empty for the other schemes."""
        from ftlab import _frames

        return _frames.associativity(self.report)

    def save(self, folder: PathLike) -> Path:
        """Writes the run to `folder` (created): `report.json` (the report, byte for byte),
        `result.json` (kind, format version, wall seconds) and its non-empty frames as
        Parquet (`time_series.parquet`, ...). `Result.load(folder)` reads it back.
        Returns the folder."""
        from ftlab import _persist

        return _persist.save_result(self, folder)

    @classmethod
    def load(cls, folder: PathLike) -> Result:
        """A run saved with `save`. Raises FtlabError naming the file when the folder is
        not a saved run."""
        from ftlab import _persist

        return _persist.load_result(folder)

    def __reduce__(self) -> tuple[type[Result], tuple[str, float]]:
        # Pickled as its report text: the dict and the frames are computed from it.
        return (Result, (self.json, self.wall_seconds))

    def _repr_html_(self) -> str:
        from ftlab._format import html_table, run_rows

        return html_table(["metric", "value"], run_rows(self.report, self.summary))


def _sets(sets: Sequence[str], mapping_only: bool, precondition: str | None = None) -> list[str]:
    """The overrides of a run: `precondition` first (so that `sets` may override it), then
    `sets`, then `mapping_only`."""
    overrides = [] if precondition is None else [f"precondition.mode={json.dumps(precondition)}"]
    overrides += sets
    if mapping_only:
        overrides.append("replay.timing=false")
    return overrides


#: Overrides that select ftlab 0.1's device model on any preset: every flash operation
#: placed in issue order (no read priority, suspend or multi-plane operations), garbage
#: collection in the foreground, a fresh device, a write buffer that flushes only when a
#: write finds it full, and no host interface or DRAM time. The paper reproductions run on it (with
#: the `legacy` device where they named no preset) until they are set up again on the
#: current model; see docs/reproductions/.
MODEL_0_1_SETS = [
    'precondition.mode="none"',
    "precondition.warmup=false",
    'gc.mode="foreground"',
    "scheduler.read_priority=false",
    "scheduler.suspend=false",
    "scheduler.multi_plane=false",
    'buffer.destage="on-full"',
    "buffer.dram_bytes_per_s=0",
    "interface.link_bytes_per_s=0",
    "interface.command_ns=0",
]
_MODEL_0_1: ContextVar[bool] = ContextVar("ftlab_model_0_1", default=False)


@contextmanager
def model_0_1() -> Iterator[None]:
    """Within the block, `simulate` and `compare` run on ftlab 0.1's device model
    (`MODEL_0_1_SETS`, preset `legacy` where none is named)."""
    token = _MODEL_0_1.set(True)
    try:
        yield
    finally:
        _MODEL_0_1.reset(token)


def _model(preset: str | None, sets: list[str]) -> tuple[str | None, list[str]]:
    if not _MODEL_0_1.get():
        return preset, sets
    return preset or "legacy", [*MODEL_0_1_SETS, *sets]


def _stack_sets(stack: str | None) -> list[str]:
    return [] if stack is None else [f"host.stack={json.dumps(stack)}"]


def simulate(
    ftl: str = "page",
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
    progress: Progress | None = None,
    stack: str | None = None,
) -> Result:
    """Runs scheme `ftl` over a trace file or a synthetic workload.

    `stack` names the host stack between the application and the device (`host.stack`:
    `auto`, `inplace`, `f2fs`, `alfs`; see `stacks()`), as does naming the scheme
    `STACK+SCHEME` (`f2fs+dftl`, which wins over `stack`).

    Without `trace` or `workload`, the configuration's `[workload]` section runs.
    `sets` are `key=value` overrides applied last (`trace.devices=["hm_0"]`,
    `geometry.channels=8`, ...); `mapping_only` skips the timing model. `format` and
    `time_unit` override `trace.format` and `trace.time_unit` (default: detected, and the
    format's own unit). `precondition` (`none`, `fill`, `steady`) overrides
    `precondition.mode`: how the device is prepared before the measured run (an entry of
    `sets` naming the key wins). `progress(done, fraction, phase)` is called every 65,536 requests
    (`phase` is "scan" while a trace is measured first, then "simulate"; `fraction` is the
    share done). Ctrl-C (or an exception `progress` raises) stops the run and is raised
    here. Raises FtlabError with a message naming the key, file, line or request at fault.
    """
    load_entry_points()
    preset, overrides = _model(preset, _stack_sets(stack) + _sets(sets, mapping_only, precondition))
    text, wall = run_cancellable(
        ftl,
        trace=None if trace is None else str(trace),
        workload=workload,
        preset=preset,
        config=[str(c) for c in config],
        sets=overrides,
        verify=verify,
        format=format,
        time_unit=time_unit,
        progress=progress,
    )
    return Result(json=text, wall_seconds=wall)
