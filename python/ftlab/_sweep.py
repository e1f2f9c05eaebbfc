"""Design-space sweeps: a grid (or an explicit list) of runs over schemes, traces,
workloads, presets and any configuration key, repeated over seeds, run in parallel
threads of this process (`_parallel`) or on a Dask cluster, each finished run one row of a
Parquet table.

The spec (a TOML file or a dict) is checked whole before anything runs: every run's
configuration is resolved by the core (`_core.config_show`), so an unknown key, a bad
value or an impossible geometry is reported naming the spec and the key; schemes, traces
and configuration files are checked too. Each run gets a *run key*: a hash of its scheme,
its source and its whole resolved configuration (the sections of other schemes left out),
so that the same run written two ways (`"1MiB"`, `1048576`) is one run, and a run already
in the table is skipped. Finished rows are written at once, one Parquet part file per run
in `TABLE.parts/`, and merged into `TABLE` when the sweep ends or is interrupted: an
interrupt (or a crash) loses no finished run.

Rows hold no wall-clock figure except `wall_seconds` (the run's own time): the same spec
gives the same table, locally or on a cluster, `wall_seconds` aside.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Union

from ftlab import _core
from ftlab._core import FtlabError
from ftlab._parallel import run_cancellable
from ftlab._registry import summarize
from ftlab._run import _sets

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10
    import tomli as tomllib

if TYPE_CHECKING:
    import polars as pl

PathLike = Union[str, Path]
#: A spec: a TOML file, or its content as a dict.
SpecSource = Union[PathLike, Mapping[str, Any]]

#: The axes of a spec: each may be given as one value (singular name) or a list (plural).
AXES = {
    "scheme": "schemes",
    "trace": "traces",
    "workload": "workloads",
    "preset": "presets",
    "precondition": "preconditions",
    "seed": "seeds",
}
#: The other top-level fields of a spec.
FIELDS = ("set", "grid", "points", "config", "mapping_only", "verify")
PRECONDITIONS = ("none", "fill", "steady")

#: The configuration columns every table has, before the keys the spec names.
AXIS_COLUMNS: dict[str, str] = {
    "run_key": "str",
    "scheme": "str",
    "trace": "str",
    "workload": "str",
    "preset": "str",
    "precondition": "str",
    "seed": "int",
}
#: The columns of `ftlab.summarize` (without `ftl`, which is `scheme`), with their types,
#: as the core declares them; then the sweep's own metrics.
SUMMARY_COLUMNS: dict[str, str] = {
    name: kind for name, kind in _core.summary_columns() if name != "ftl"
}
EXTRA_COLUMNS: dict[str, str] = {
    "erase_count_mean": "float",
    "erase_count_max": "int",
    "simulated_time_ns": "int",
    "error": "str",
    "ftlab_version": "str",
    # The run's wall-clock seconds: the only column that differs between two sweeps of
    # the same spec.
    "wall_seconds": "float",
}
#: Columns that are not results: left out when two tables are compared.
NONDETERMINISTIC_COLUMNS = ("wall_seconds",)


def _dtype(kind: str) -> Any:
    import polars as pl

    return {"str": pl.Utf8, "int": pl.Int64, "float": pl.Float64, "bool": pl.Boolean}[kind]


def _kind_of(value: Any) -> str:
    """The column type of a resolved configuration value (lists are stored as JSON)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str"


def toml_value(value: Any) -> str:
    """`value` written as a TOML value, for a `key=value` override."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return (
            "{"
            + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items())
            + "}"
        )
    raise FtlabError(f"cannot write {value!r} as a configuration value")


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested tables as dotted keys: `{dram: {budget_bytes: 1}}` -> `dram.budget_bytes`."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _section(key: str) -> str:
    return key.split(".", 1)[0]


def scheme_names() -> list[str]:
    from ftlab._registry import schemes

    return [name for name, _ in schemes()]


# --- the spec -------------------------------------------------------------------------


@dataclass
class Point:
    """One product of runs: axis values and configuration keys (each with its values)."""

    axes: dict[str, list[Any]] = field(default_factory=dict)
    keys: dict[str, list[Any]] = field(default_factory=dict)
    #: Where each key was given, for messages (`[set]`, `[grid]`, `[[points]] 2`).
    origin: dict[str, str] = field(default_factory=dict)


@dataclass
class Spec:
    """A parsed sweep spec. `name` is how messages call it (the file's path)."""

    name: str
    base: Path
    points: list[Point]
    config: list[Path]
    mapping_only: bool
    verify: bool


def _axis_values(name: str, where: str, value: Any, plural: bool) -> list[Any]:
    values = list(value) if isinstance(value, list) else [value]
    if not values:
        raise FtlabError(f"{where}: `{AXES[name] if plural else name}` is empty: no run to do")
    if name == "seed":
        if plural and isinstance(value, int) and not isinstance(value, bool):
            if value < 1:
                raise FtlabError(f"{where}: `seeds = {value}`: give a count of at least 1")
            return list(range(1, value + 1))
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise FtlabError(f"{where}: seed {v!r} is not a non-negative integer")
        return values
    for v in values:
        if not isinstance(v, str):
            raise FtlabError(f"{where}: {name} {v!r} is not a string")
    if name == "precondition":
        for v in values:
            if v not in PRECONDITIONS:
                raise FtlabError(
                    f"{where}: precondition `{v}` is not one of {', '.join(PRECONDITIONS)}"
                )
    return values


def _take_axes(table: Mapping[str, Any], where: str) -> dict[str, list[Any]]:
    axes: dict[str, list[Any]] = {}
    for singular, plural in AXES.items():
        for name, is_plural in ((singular, False), (plural, True)):
            if name in table:
                if singular in axes:
                    raise FtlabError(f"{where}: give `{singular}` or `{plural}`, not both")
                axes[singular] = _axis_values(singular, where, table[name], is_plural)
    return axes


def parse_spec(source: SpecSource) -> Spec:
    """Reads a spec (a TOML file or a dict) and checks its shape; the configuration keys
    are checked by `plan`."""
    if isinstance(source, Mapping):
        name, base, data = "sweep spec", Path.cwd(), dict(source)
    else:
        path = Path(source).expanduser()
        name, base = str(source), path.resolve().parent
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise FtlabError(f"sweep spec {source}: no such file") from None
        except OSError as e:
            raise FtlabError(f"sweep spec {source}: {e.strerror or e}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise FtlabError(f"{source}: not valid TOML: {e}") from None
    known = set(AXES) | set(AXES.values()) | set(FIELDS)
    unknown = sorted(set(data) - known)
    if unknown:
        raise FtlabError(
            f"{name}: unknown field(s) {', '.join(f'`{u}`' for u in unknown)}; a spec has "
            f"{', '.join(sorted(AXES.values()))}, {', '.join(FIELDS)} (a configuration "
            "key goes in [set] or [grid])"
        )
    top = Point(axes=_take_axes(data, name))
    sets = data.get("set", {})
    grid = data.get("grid", {})
    for section, value in (("set", sets), ("grid", grid)):
        if not isinstance(value, Mapping):
            raise FtlabError(f"{name}: `{section}` must be a table of configuration keys")
    for key, value in _flatten(sets).items():
        top.keys[key], top.origin[key] = [value], "[set]"
    for key, values in _flatten(grid).items():
        if key in top.keys:
            raise FtlabError(f"{name}: `{key}` is both in [set] and in [grid]")
        if not isinstance(values, list):
            raise FtlabError(
                f"{name}: [grid] {key}: give a list of values (one value goes in [set])"
            )
        if not values:
            raise FtlabError(f"{name}: [grid] {key} is an empty list: the grid has no run")
        top.keys[key], top.origin[key] = list(values), "[grid]"
    points_data = data.get("points", [])
    if not isinstance(points_data, list) or not all(isinstance(p, Mapping) for p in points_data):
        raise FtlabError(f"{name}: `points` must be an array of tables ([[points]])")
    if "points" in data and not points_data:
        raise FtlabError(f"{name}: `points` is empty: no run to do")
    points: list[Point] = []
    for i, p in enumerate(points_data, 1):
        where = f"{name}: [[points]] {i}"
        axes = _take_axes(p, where)
        point = Point(axes={**top.axes, **axes}, keys=dict(top.keys), origin=dict(top.origin))
        if "trace" in axes or "workload" in axes:
            # A point naming its source replaces the spec's sources.
            for other in ("trace", "workload"):
                if other not in axes:
                    point.axes.pop(other, None)
        rest = {k: v for k, v in p.items() if k not in AXES and k not in AXES.values()}
        for key, value in _flatten(rest).items():
            point.keys[key], point.origin[key] = [value], f"[[points]] {i}"
        points.append(point)
    config = data.get("config", [])
    if isinstance(config, str):
        config = [config]
    if not isinstance(config, list) or not all(isinstance(c, str) for c in config):
        raise FtlabError(f"{name}: `config` must be a list of configuration files")
    for flag in ("mapping_only", "verify"):
        if not isinstance(data.get(flag, False), bool):
            raise FtlabError(f"{name}: `{flag}` must be true or false")
    return Spec(
        name=name,
        base=base,
        points=points or [top],
        config=[_resolve(base, c) for c in config],
        mapping_only=bool(data.get("mapping_only", False)),
        verify=bool(data.get("verify", False)),
    )


def _resolve(base: Path, path: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else base / p


def default_out(spec: PathLike) -> Path:
    """Where `ftlab sweep SPEC` writes its table by default: `SPEC-NAME.parquet` in the
    current directory."""
    return Path(Path(spec).stem + ".parquet")


# --- the plan -------------------------------------------------------------------------


@dataclass
class Task:
    """One run, as a worker executes it."""

    run_key: str
    scheme: str
    #: Keyword arguments of `_core.run`: trace, workload, preset, config, sets, verify.
    options: dict[str, Any]
    #: The row's axis columns (scheme, trace, workload, preset, precondition, seed).
    columns: dict[str, Any]
    #: Configuration keys whose resolved values are columns of the row.
    keys: list[str]
    #: The row's `source`: the trace as the spec names it, or the workload.
    source: str
    #: On a Dask cluster, the trace shipped to the workers (see `_dask`), else None.
    shipped: str | None = None


@dataclass
class Plan:
    """Every run of a spec, checked, in spec order, with the table's column types."""

    spec: Spec
    tasks: list[Task]
    #: Configuration key columns, in the order the spec names them, and their types.
    key_columns: dict[str, str]
    #: Trace runs whose device was fitted to the trace, once for the schemes that share it.
    fitted: int = 0

    @property
    def run_keys(self) -> list[str]:
        return [t.run_key for t in self.tasks]

    def kinds(self) -> dict[str, str]:
        """Every column of the table and its type (`str`, `int`, `float`, `bool`)."""
        return {**AXIS_COLUMNS, **self.key_columns, **SUMMARY_COLUMNS, **EXTRA_COLUMNS}


def _describe(columns: Mapping[str, Any], keys: Mapping[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in columns.items() if v is not None and k != "run_key"]
    parts += [f"{k}={toml_value(v)}" for k, v in keys.items()]
    return ", ".join(parts)


def _key_error(spec: Spec, point: Point, message: str, run: str) -> FtlabError:
    """The core's message, prefixed with the spec and where the key it names was given."""
    where = ""
    if message.startswith("configuration key `"):
        key = message.split("`")[1]
        if key in point.origin:
            where = f" {point.origin[key]}"
    return FtlabError(f"{spec.name}:{where} {message} (run: {run})")


def _canonical(toml_text: str, scheme: str, schemes: Sequence[str]) -> dict[str, Any]:
    """The resolved configuration of a run, without the sections of other schemes."""
    config = tomllib.loads(toml_text)
    return {k: v for k, v in config.items() if k == scheme or k not in schemes}


def _config_value(config: Mapping[str, Any], key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _run_key(identity: Mapping[str, Any]) -> str:
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: Settings that cannot change the device a trace is fitted to: runs differing only in
#: these share the fit.
_NOT_FITTING = ("precondition.", "workload.", "replay.", "metrics.", "scheduler.")


def plan(spec: Spec, fit: bool = True) -> Plan:
    """Expands the spec into runs and checks each one with the core, before any runs.
    Trace runs that differ only by scheme get one device fitted to the trace (as `ftlab
    compare` does), large enough for each of them. Runs written twice are kept once."""
    schemes = scheme_names()
    for path in spec.config:
        if not path.is_file():
            raise FtlabError(f"{spec.name}: configuration file {path}: no such file")
    key_columns: dict[str, str] = {}
    drafts: list[tuple[Task, dict[str, Any], dict[str, Any]]] = []
    for point in spec.points:
        for scheme in point.axes.get("scheme", []):
            if scheme not in schemes:
                raise FtlabError(
                    f"{spec.name}: unknown scheme `{scheme}`; the schemes are: {', '.join(schemes)}"
                )
        seeds = point.axes.get("seed", [None])
        if seeds != [None]:
            for key in ("workload.seed", "precondition.seed"):
                if key in point.keys:
                    raise FtlabError(
                        f"{spec.name}: {point.origin[key]} {key} and `seeds` both set the seed"
                    )
        sources: list[tuple[str | None, str | None]] = [
            (t, None) for t in point.axes.get("trace", [])
        ] + [(None, w) for w in point.axes.get("workload", [])]
        if not sources:
            sources = [(None, "default")]
        for trace, _ in sources:
            if trace is not None and not _resolve(spec.base, trace).is_file():
                where = "" if spec.name == "sweep spec" else f" (relative to {spec.base})"
                raise FtlabError(f"{spec.name}: trace {trace}: no such file{where}")
        keys = list(point.keys)
        for values in itertools.product(
            sources,
            point.axes.get("preset", [None]),
            point.axes.get("precondition", [None]),
            *(point.keys[k] for k in keys),
            point.axes.get("scheme", schemes),
            seeds,
        ):
            (trace, workload), preset, precondition = values[0], values[1], values[2]
            chosen = dict(zip(keys, values[3 : 3 + len(keys)]))
            scheme, seed = values[-2], values[-1]
            drafts.append(
                _draft(spec, point, schemes, trace, workload, preset, precondition, chosen,
                       scheme, seed, key_columns)
            )  # fmt: skip
    if not drafts:
        raise FtlabError(f"{spec.name}: the spec has no run")
    fitted = _fit_devices(spec, drafts) if fit else 0
    tasks: list[Task] = []
    seen: set[str] = set()
    for task, config, identity in drafts:
        identity["config"] = config
        task.run_key = task.columns["run_key"] = _run_key(identity)
        if task.run_key not in seen:
            seen.add(task.run_key)
            tasks.append(task)
    return Plan(spec=spec, tasks=tasks, key_columns=key_columns, fitted=fitted)


def _draft(
    spec: Spec,
    point: Point,
    schemes: Sequence[str],
    trace: str | None,
    workload: str | None,
    preset: str | None,
    precondition: str | None,
    chosen: dict[str, Any],
    scheme: str,
    seed: int | None,
    key_columns: dict[str, str],
) -> tuple[Task, dict[str, Any], dict[str, Any]]:
    """One run, checked by the core: (task, canonical configuration, identity)."""
    sets = [f"{k}={toml_value(v)}" for k, v in chosen.items()]
    if seed is not None:
        if workload is not None:
            sets.append(f"workload.seed={seed}")
        sets.append(f"precondition.seed={seed}")
    trace_path = None if trace is None else str(_resolve(spec.base, trace).resolve())
    options: dict[str, Any] = {
        "trace": trace_path,
        "workload": workload,
        "preset": preset,
        "config": [str(c) for c in spec.config],
        "sets": _sets(sets, spec.mapping_only, precondition),
        "verify": spec.verify,
    }
    columns: dict[str, Any] = {
        "run_key": "",
        "scheme": scheme,
        "trace": trace,
        "workload": workload,
        "preset": preset,
        "precondition": precondition,
        "seed": seed,
    }
    try:
        text = _core.config_show(**{k: v for k, v in options.items() if k != "verify"})
    except FtlabError as e:
        raise _key_error(spec, point, str(e), _describe(columns, chosen)) from None
    config = _canonical(text, scheme, schemes)
    full = tomllib.loads(text)
    for key in chosen:
        value = _config_value(full, key)
        if key not in key_columns:
            key_columns[key] = _kind_of(value) if value is not None else "str"
    # A key of another scheme's section does not apply to this run (it is left out of
    # the run key, so the run is not repeated for each of its values).
    applies = [k for k in chosen if _section(k) not in schemes or _section(k) == scheme]
    source: dict[str, Any]
    if trace_path is not None:
        source = {"trace": trace_path, "bytes": os.path.getsize(trace_path)}
    else:
        source = {"workload": workload}
    identity = {"v": 1, "scheme": scheme, "source": source, "verify": spec.verify}
    task = Task(
        run_key="",
        scheme=scheme,
        options=options,
        columns=columns,
        keys=applies,
        source=trace if trace is not None else str(workload),
    )
    return task, config, identity


def _fit_devices(spec: Spec, drafts: list[tuple[Task, dict[str, Any], dict[str, Any]]]) -> int:
    """Fits one device per trace and configuration for all the schemes that run on it;
    returns the number of runs whose device was fitted."""
    schemes = scheme_names()
    groups: dict[tuple[Any, ...], list[tuple[Task, dict[str, Any]]]] = {}
    for task, config, _ in drafts:
        o = task.options
        if o["trace"] is None:
            continue
        common = tuple(
            s for s in o["sets"] if not s.startswith(_NOT_FITTING) and _section(s) not in schemes
        )
        group = (o["trace"], o["preset"], tuple(o["config"]), common)
        groups.setdefault(group, []).append((task, config))
    fitted = 0
    for (trace, preset, files, common), members in groups.items():
        variants: dict[tuple[str, ...], list[str]] = {}
        for task, _ in members:
            own = tuple(s for s in task.options["sets"] if _section(s) == task.scheme)
            names = variants.setdefault(own, [])
            if task.scheme not in names:
                names.append(task.scheme)
        blocks: int | None = None
        for own, names in variants.items():
            sets = [*common, *own]
            try:
                b = _core.fitted_blocks_per_plane(
                    names, trace=trace, preset=preset, config=list(files), sets=sets
                )
            except FtlabError as e:
                raise FtlabError(f"{spec.name}: trace {trace}: {e}") from None
            if b is not None:
                blocks = b if blocks is None else max(blocks, b)
        if blocks is None:
            continue
        for task, config in members:
            task.options["sets"] = [
                *task.options["sets"],
                f"geometry.blocks_per_plane={blocks}",
                'trace.device_size="config"',
            ]
            config["geometry"]["blocks_per_plane"] = blocks
            config["trace"]["device_size"] = "config"
            fitted += 1
    return fitted


# --- running one --------------------------------------------------------------------------

#: An outcome: ("ok" | "error" | "interrupted", row).
Outcome = tuple[str, dict[str, Any]]


def _in_process_only(scheme: str) -> bool:
    from ftlab._registry import split_stack
    from ftlab._scheme import in_process_only

    return in_process_only(split_stack(scheme)[1])


def execute(task: Task) -> Outcome:
    """Runs one task and returns its row (in a thread here, or on a Dask worker)."""
    from ftlab._scheme import load_entry_points

    load_entry_points()
    options = dict(task.options)
    if task.shipped is not None:
        from ftlab import _dask

        options["trace"] = _dask.shipped_path(task.shipped)
    row: dict[str, Any] = {**task.columns, "source": task.source}
    started = time.perf_counter()
    try:
        text, _ = run_cancellable(task.scheme, **options)
    except KeyboardInterrupt:
        return ("interrupted", row)
    except (FtlabError, OSError) as e:
        row.update(error=str(e), wall_seconds=time.perf_counter() - started)
        row["ftlab_version"] = _core.__version__
        return ("error", row)
    wall = time.perf_counter() - started
    report = json.loads(text)
    return ("ok", make_row(task, report, wall))


def make_row(task: Task, report: dict[str, Any], wall_seconds: float) -> dict[str, Any]:
    """A table row: the axis columns, the configuration keys as resolved, the summary
    metrics and the sweep's own."""
    row: dict[str, Any] = dict(task.columns)
    config = report["config"]
    for key in task.keys:
        value = _config_value(config, key)
        row[key] = json.dumps(value) if isinstance(value, (list, dict)) else value
    summary = summarize(report)
    del summary["ftl"]
    summary["source"] = task.source
    row.update(summary)
    m = report["metrics"]
    row["erase_count_mean"] = float(m["erase_count"]["mean"])
    row["erase_count_max"] = m["erase_count"]["max"]
    row["simulated_time_ns"] = m.get("simulated_time_ns")
    row["error"] = None
    row["ftlab_version"] = report["ftlab_version"]
    row["wall_seconds"] = wall_seconds
    return row


# --- the table ----------------------------------------------------------------------------


def parts_dir(table: Path) -> Path:
    """Where finished rows wait, one Parquet file per run, until they are merged."""
    return table.with_name(table.name + ".parts")


def _read_parquet(path: Path) -> pl.DataFrame:
    import polars as pl

    try:
        return pl.read_parquet(path)
    except Exception as e:  # polars raises its own types (ComputeError, OSError, ...)
        raise FtlabError(f"cannot read {path}: {e}") from None


def _concat(frames: Sequence[pl.DataFrame]) -> pl.DataFrame | None:
    import polars as pl

    frames = [f for f in frames if f.width]
    if not frames:
        return None
    return pl.concat(frames, how="diagonal_relaxed")


def load_table(path: PathLike) -> pl.DataFrame:
    """A sweep's table: the merged file and any rows not merged yet (an interrupted
    sweep's `TABLE.parts/`), sorted."""
    import polars as pl

    table = Path(path)
    frames: list[pl.DataFrame] = []
    if table.is_file():
        frames.append(_read_parquet(table))
    parts = parts_dir(table)
    if parts.is_dir():
        frames += [_read_parquet(p) for p in sorted(parts.glob("*.parquet"))]
    elif not table.is_file():
        raise FtlabError(f"sweep table {path}: no such file")
    df = _concat(frames)
    if df is None:
        return pl.DataFrame()
    return tidy(df.unique(subset="run_key", keep="last", maintain_order=True))


def tidy(df: pl.DataFrame) -> pl.DataFrame:
    """Columns in table order, rows sorted by scheme, source, preset, precondition, the
    configuration keys (as named in the spec), seed and run key."""
    keys = [c for c in df.columns if "." in c]
    first = [c for c in AXIS_COLUMNS if c in df.columns] + keys
    rest = [c for c in (*SUMMARY_COLUMNS, *EXTRA_COLUMNS) if c in df.columns]
    others = [c for c in df.columns if c not in first and c not in rest]
    df = df.select([*first, *others, *rest])
    order: list[str] = [
        c for c in ("scheme", "trace", "workload", "preset", "precondition") if c in df.columns
    ]
    order += keys + [c for c in ("seed", "run_key") if c in df.columns]
    return df.sort(order, nulls_last=True) if order else df


class Table:
    """The table a sweep writes: finished rows go to `parts/` one file per run (written
    whole, then renamed), and are merged into the table file at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.parts = parts_dir(path)
        self.lock = path.with_name(path.name + ".lock")
        self._lock: int | None = None

    def open(self) -> pl.DataFrame | None:
        """Takes the table's lock and returns the rows already there."""
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise FtlabError(f"{self.path}: another sweep is writing this table") from None
        self._lock = fd
        if not self.path.exists() and not self.parts.is_dir():
            return None
        return load_table(self.path)

    def add(self, frame: pl.DataFrame, run_key: str) -> None:
        self.parts.mkdir(exist_ok=True)
        final = self.parts / f"{run_key}.parquet"
        temporary = self.parts / f"{run_key}.parquet.tmp"
        frame.write_parquet(temporary)
        os.replace(temporary, final)

    def merge(self) -> pl.DataFrame:
        """Merges the parts into the table file (written whole, then renamed); returns
        the whole table."""
        import polars as pl

        if not self.parts.is_dir():
            return load_table(self.path) if self.path.is_file() else pl.DataFrame()
        parts = sorted(self.parts.glob("*.parquet"))
        df = load_table(self.path)
        temporary = self.path.with_name(self.path.name + ".tmp")
        df.write_parquet(temporary)
        os.replace(temporary, self.path)
        for p in parts:
            p.unlink()
        for leftover in self.parts.glob("*.tmp"):
            leftover.unlink()
        try:
            self.parts.rmdir()
        except OSError:
            pass
        return df

    def close(self) -> None:
        if self._lock is not None:
            self.lock.unlink(missing_ok=True)
            os.close(self._lock)
            self._lock = None


# --- running them all ---------------------------------------------------------------------


@dataclass
class SweepResult:
    """What a sweep did: the table's rows for the spec's runs and counts."""

    table: pl.DataFrame
    planned: int
    skipped: int
    ran: int
    failed: list[tuple[str, str]]
    interrupted: bool
    wall_seconds: float
    path: Path | None


class _Bar:
    """A rich progress bar with an ETA, on standard error (`enabled` when that is a
    terminal; nothing otherwise), so that standard output keeps only the summary."""

    def __init__(self, total: int, skipped: int, enabled: bool) -> None:
        self.bar: Any = None
        if not enabled or total == 0:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[failed]}"),
            console=Console(stderr=True),
            transient=True,
        )
        description = "sweep" + (f" ({skipped:,} done before)" if skipped else "")
        self.bar.start()
        self.task = self.bar.add_task(description, total=total, failed="")

    def advance(self, failed: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, advance=1, failed=f"{failed} failed" if failed else "")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def run_plan(
    p: Plan,
    *,
    out: Path | None,
    jobs: int | None = None,
    scheduler: str | None = None,
    ship_traces: bool = False,
    retry_failed: bool = False,
    progress: bool = False,
    on_result: Callable[[str, dict[str, Any]], object] | None = None,
) -> SweepResult:
    """Runs the plan's runs not yet in the table `out` (all of them without a table)."""
    import polars as pl

    started = time.monotonic()
    kinds = p.kinds()
    schema = {name: _dtype(kind) for name, kind in kinds.items()}
    table = Table(out) if out is not None else None
    existing = table.open() if table is not None else None
    rows: list[pl.DataFrame] = []
    failed: list[tuple[str, str]] = []
    recorded = 0
    interrupted = False
    try:
        done: set[str] = set()
        if existing is not None and existing.height:
            keep = existing
            if retry_failed and "error" in existing.columns:
                keep = existing.filter(pl.col("error").is_null())
            done = set(keep["run_key"].to_list())
        todo = [t for t in p.tasks if t.run_key not in done]
        skipped = len(p.tasks) - len(todo)
        bar = _Bar(len(todo), skipped, progress)

        def record(outcome: Outcome) -> None:
            nonlocal recorded
            status, row = outcome
            if status == "interrupted":
                raise KeyboardInterrupt
            frame = row_frame(row, kinds)
            if table is not None:
                table.add(frame, row["run_key"])
            else:
                rows.append(frame)
            recorded += 1
            if status == "error":
                failed.append((row["run_key"], str(row["error"])))
            bar.advance(len(failed))
            if on_result is not None:
                on_result(status, row)

        try:
            if scheduler is not None:
                from ftlab import _dask

                local = sorted({t.scheme for t in todo if _in_process_only(t.scheme)})
                if local:
                    raise FtlabError(
                        f"scheme(s) {', '.join(local)} were registered in this process only; "
                        "Dask workers find Python schemes through plugins: install them as "
                        "a package (entry points `ftlab.schemes`) or register them in a module "
                        "the workers can import"
                    )
                _dask.run(todo, execute, scheduler, ship_traces, record)
            else:
                _run_local(todo, jobs, record)
        except KeyboardInterrupt:
            interrupted = True
        except BaseException:
            # Whatever stopped the sweep, the finished runs go into the table.
            if table is not None:
                table.merge()
            raise
        finally:
            bar.close()
        if table is not None:
            whole = table.merge()
        else:
            merged = _concat(rows)
            whole = tidy(merged if merged is not None else pl.DataFrame(schema=schema))
    finally:
        if table is not None:
            table.close()
    if whole.height:
        whole = whole.filter(pl.col("run_key").is_in(p.run_keys))
    return SweepResult(
        table=whole,
        planned=len(p.tasks),
        skipped=skipped,
        ran=recorded,
        failed=failed,
        interrupted=interrupted,
        wall_seconds=time.monotonic() - started,
        path=out,
    )


def row_frame(row: dict[str, Any], kinds: Mapping[str, str]) -> pl.DataFrame:
    """One row as a DataFrame, its columns typed (and in table order)."""
    import polars as pl

    convert: dict[str, Callable[[Any], Any]] = {
        "int": int,
        "float": float,
        "bool": bool,
        "str": str,
    }
    data = {
        name: [None if row[name] is None else convert[kind](row[name])]
        for name, kind in kinds.items()
        if name in row
    }
    return pl.DataFrame(data, schema={name: _dtype(kinds[name]) for name in data})


def _run_local(tasks: list[Task], jobs: int | None, record: Callable[[Outcome], None]) -> None:
    """In `jobs` threads (default one per core), or here with one job."""
    from ftlab import _parallel

    _parallel.run_all(tasks, execute, jobs, lambda task, outcome: record(outcome))


def sweep(
    spec: SpecSource,
    *,
    out: PathLike | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    ship_traces: bool = False,
    retry_failed: bool = False,
    progress: bool | None = None,
) -> pl.DataFrame:
    """See `ftlab.sweep`."""
    result = run_plan(
        plan(parse_spec(spec)),
        out=None if out is None else Path(out),
        jobs=jobs,
        scheduler=scheduler,
        ship_traces=ship_traces,
        retry_failed=retry_failed,
        progress=sys.stderr.isatty() if progress is None else progress,
    )
    if result.interrupted:
        raise KeyboardInterrupt
    return result.table


def compare_columns(df: pl.DataFrame) -> list[str]:
    """The columns two sweeps of the same spec agree on (all but `wall_seconds`)."""
    return [c for c in df.columns if c not in NONDETERMINISTIC_COLUMNS]
