"""ftlab: a laboratory for flash translation layers.

The simulator is the Rust core (`ftlab._core`); this package is its front. Importing it is
cheap: heavy modules (rich, data frames, plots) are imported only where they are used.

    >>> import ftlab
    >>> result = ftlab.simulate("page", workload="zipf")
    >>> result.summary["waf"]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Union

from ftlab import _core
from ftlab._core import FtlabError

__version__: str = _core.__version__

__all__ = [
    "FtlabError",
    "Result",
    "__version__",
    "presets",
    "schemes",
    "simulate",
    "summarize",
    "workloads",
]

PathLike = Union[str, Path]


@dataclass
class Result:
    """One finished run: the report as JSON text and as a dict, and its wall-clock time."""

    json: str
    wall_seconds: float
    report: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.report = json.loads(self.json)

    @property
    def summary(self) -> dict[str, Any]:
        """The headline numbers of the run, flat."""
        return summarize(self.report)


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
    format: str = "disksim",
    time_unit: str = "ns",
    progress: Callable[[int], object] | None = None,
) -> Result:
    """Runs scheme `ftl` over a trace file or a synthetic workload.

    Without `trace` or `workload`, the configuration's `[workload]` section runs.
    `sets` are `key=value` overrides applied last; `mapping_only` skips the timing model.
    `progress(n)` is called with the number of requests done every 65,536 requests.
    Raises FtlabError with a message naming the key, file, line or request at fault.
    """
    overrides = list(sets)
    if mapping_only:
        overrides.append("replay.timing=false")
    text, wall = _core.run(
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


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers of a report (latencies in microseconds; None where not measured)."""
    m = report["metrics"]
    host, flash = m["host"], m["flash"]
    latency = m.get("latency") or {}
    memory = m["memory_bytes"]

    def lat(kind: str, key: str) -> float | None:
        stats = latency.get(kind)
        if not stats or not stats.get("count"):
            return None
        return stats[key] / 1000.0

    return {
        "ftl": report["ftl"],
        "source": report["source"]["name"],
        "mode": report["mode"],
        "requests": host["requests"],
        "host_pages_read": host["pages_read"],
        "host_pages_written": host["pages_written"],
        "host_pages_trimmed": host["pages_trimmed"],
        "unmapped_reads": host["unmapped_reads"],
        "flash_reads": flash["reads"]["total"],
        "flash_programs": flash["programs"]["total"],
        "flash_erases": flash["erases"]["total"],
        "translation_reads": flash["reads"]["translation"],
        "translation_programs": flash["programs"]["translation"],
        "misprediction_reads": flash["reads"]["misprediction"],
        "waf": m["waf"],
        "gc_invocations": m["gc"]["invocations"],
        "gc_pages_moved": m["gc"]["pages_moved"],
        "read_mean_us": lat("read", "mean_ns"),
        "read_p99_us": lat("read", "p99_ns"),
        "write_mean_us": lat("write", "mean_ns"),
        "write_p99_us": lat("write", "p99_ns"),
        "iops": m.get("iops"),
        "memory_final_bytes": memory["final_total"],
        "memory_peak_bytes": memory["peak_total"],
        # Demand-cached schemes only.
        "cache_hit_ratio": m["scheme"].get("cache_hit_ratio"),
    }


def presets() -> list[tuple[str, str]]:
    """(name, description) of each configuration preset."""
    return list(_core.presets())


def schemes() -> list[tuple[str, str]]:
    """(name, description) of each FTL scheme."""
    return list(_core.schemes())


def workloads() -> list[tuple[str, str]]:
    """(name, description) of each built-in synthetic workload."""
    return list(_core.workloads())
