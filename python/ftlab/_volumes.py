"""Many volumes at once: a multi-volume trace replayed as one simulated SSD per volume, in
parallel (a sweep over `trace.devices`), and the fleet's totals."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    import polars as pl

PathLike = Union[str, Path]


def replay_volumes(
    trace: PathLike,
    ftl: str = "page",
    *,
    preset: str | None = None,
    config: Sequence[PathLike] = (),
    sets: Sequence[str] = (),
    format: str = "",
    time_unit: str = "",
    precondition: str | None = None,
    verify: bool = False,
    mapping_only: bool = False,
    jobs: int | None = None,
    scheduler: str | None = None,
    ship_traces: bool = False,
    out: PathLike | None = None,
    progress: bool | None = None,
) -> pl.DataFrame:
    """Replays each volume (device) of a multi-volume trace on a simulated SSD of its own,
    `jobs` at a time (default: one per core), or on the Dask cluster at `scheduler`
    (`tcp://host:8786`; `ship_traces` sends the trace to each worker once, else the workers
    read it at the same path), as a sweep over `trace.devices` whose table (one row per
    volume, its name in `trace.devices`; resumable in `out`) it returns; a fleet of
    volumes runs on a cluster as a sweep does.
    Each volume's row is what `simulate(ftl, trace=trace, sets=[*sets,
    'trace.devices=["NAME"]'])` reports. `sets` are `key=value` overrides; `fleet_summary`
    totals the table."""
    from ftlab import _sweep, trace_info
    from ftlab._advise import _parse_sets

    overrides = list(sets)
    if format:
        overrides.append(f'trace.format="{format}"')
    if time_unit:
        overrides.append(f'trace.time_unit="{time_unit}"')
    info = trace_info(trace, sets=[s for s in overrides if s.startswith("trace.")])
    names = [d["name"] for d in info.info["devices"]]
    set_keys = _parse_sets(overrides)
    spec: dict[str, Any] = {
        "schemes": [ftl],
        "traces": [str(Path(trace).resolve())],
        "set": set_keys,
        "grid": {"trace.devices": [[name] for name in names]},
        "verify": verify,
        "mapping_only": mapping_only,
        "config": [str(Path(c).resolve()) for c in config],
    }
    if preset:
        spec["presets"] = [preset]
    if precondition:
        spec["precondition"] = precondition
    return _sweep.sweep(
        spec,
        out=out,
        jobs=jobs,
        scheduler=scheduler,
        ship_traces=ship_traces,
        progress=progress,
    )


def fleet_summary(table: pl.DataFrame) -> dict[str, Any]:
    """Totals of a `replay_volumes` table: volumes (and how many failed), requests, host
    pages written, flash programs and erases, GC pages moved, the fleet's WAF (the
    volumes' WAF weighted by the host pages each wrote), the sum of the volumes' peak
    mapping DRAM, and the worst volume's mean and p99 latencies."""
    import polars

    ok = table.filter(polars.col("error").is_null()) if "error" in table.columns else table
    total = {
        key: int(ok[key].sum())
        for key in (
            "requests",
            "host_pages_written",
            "flash_programs",
            "flash_erases",
            "gc_pages_moved",
            "memory_peak_bytes",
        )
    }
    written = total["host_pages_written"]
    return {
        "volumes": table.height,
        "failed": table.height - ok.height,
        **total,
        "waf": (ok["waf"] * ok["host_pages_written"]).sum() / written if written else None,
        **{f"{key}_max": ok[key].max() for key in ("read_mean_us", "read_p99_us", "write_p99_us")},
    }
