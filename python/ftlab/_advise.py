"""`ftlab advise`: which scheme to run on a trace within a mapping DRAM budget.

Every scheme is tried with a small sweep of its own parameters (the registry's `advise`
facts, `ftlab.scheme_info()`). A
one-request probe on the same device measures what each configuration allocates up front
(the page-level table, the hashed schemes' per-page tables, a demand-cached scheme's
directory and GC bookkeeping): a configuration whose fixed structures already fill the
budget is left out before the real runs; the others get the rest of the budget for their
mapping cache (`dram.budget_bytes` = budget - fixed), so that the whole stays within it,
and run as a sweep (resumable, in the output folder). A configuration fits when its
mapping DRAM at peak stayed within the budget. Each scheme is represented by its best
fitting configuration for the goal, and the schemes are ranked:

- `latency`: mean read latency, then p99 (write latency when the source has no reads);
- `waf`: write amplification, then block erases;
- `endurance`: the most-erased block's erase count, then all erases, then WAF.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

from ftlab import _core
from ftlab import _sweep as sw
from ftlab._core import FtlabError
from ftlab._parallel import run_cancellable

if TYPE_CHECKING:
    import polars as pl

Goal = Literal["latency", "waf", "endurance"]
GOALS: tuple[Goal, ...] = ("latency", "waf", "endurance")


#: The parameters of each scheme the advisor sweeps (every combination), beside the budget.
def own_parameters() -> dict[str, dict[str, list[Any]]]:
    """Each scheme's own parameters to sweep, from the registry: scheme -> key -> values."""
    from ftlab._registry import scheme_info

    return {s["name"]: dict(s["advise"]) for s in scheme_info()}


MIB = 2**20


@dataclass
class Advice:
    """What `advise` found: `ranking` has one row per scheme that fits (its best
    configuration for the goal), best first; `table` every run; `lines` the explanation."""

    goal: Goal
    budget_bytes: int
    ranking: pl.DataFrame
    table: pl.DataFrame
    excluded: list[tuple[str, str]]
    lines: list[str]
    files: list[Path] = field(default_factory=list)

    @property
    def best(self) -> str | None:
        """The recommended scheme, or None when none fits the budget."""
        return None if not self.ranking.height else str(self.ranking["scheme"][0])


def _order(goal: Goal, op: str) -> list[str]:
    if goal == "latency":
        return [f"{op}_mean_us", f"{op}_p99_us"]
    if goal == "waf":
        return ["waf", "flash_erases"]
    return ["erase_count_max", "flash_erases", "waf"]


LABELS = {
    "read_mean_us": "mean read latency",
    "read_p99_us": "p99 read latency",
    "write_mean_us": "mean write latency",
    "write_p99_us": "p99 write latency",
    "waf": "WAF",
    "flash_erases": "block erases",
    "erase_count_max": "erases of the most-worn block",
}

GOAL_TEXT = {
    "latency": "the lowest mean {op} latency",
    "waf": "the lowest write amplification",
    "endurance": "the fewest erases of the most-worn block",
}


def _parse_sets(sets: Sequence[str]) -> dict[str, Any]:
    """`key=value` overrides as spec keys (the value read as TOML, else kept as text)."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    out: dict[str, Any] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep:
            raise FtlabError(f"--set {item}: expected KEY=VALUE")
        try:
            out[key.strip()] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = value.strip()
    return out


def budget_bytes(dram: str | int) -> int:
    """The budget in bytes (`"2MiB"`, `"500KB"` or a number), read by the core."""
    text = _core.config_show(sets=[f"dram.budget_bytes={sw.toml_value(dram)}"])
    import re

    found = re.search(r"^budget_bytes = (\d+)$", text, re.MULTILINE)
    if found is None:  # pragma: no cover - the core always writes it
        raise FtlabError(f"--dram {dram}: not a size")
    value = int(found.group(1))
    if value <= 0:
        raise FtlabError(f"--dram {dram}: the budget must be more than 0 bytes")
    return value


def spec_for(
    budget: int,
    *,
    trace: str | None,
    workload: str | None,
    preset: str | None,
    config: Sequence[str],
    sets: Sequence[str],
    precondition: str | None,
    seeds: int,
    schemes: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The sweep spec the advisor runs: every scheme (or `schemes`) with each combination
    of its own parameters (those `sets` does not fix), all under the budget."""
    names = list(dict.fromkeys(schemes)) if schemes else sw.scheme_names()
    given = _parse_sets(sets)
    own = own_parameters()
    points: list[dict[str, Any]] = []
    for scheme in names:
        # A parameter the user set is kept as set, not swept.
        params = {k: v for k, v in own.get(scheme, {}).items() if k not in given}
        for combo in itertools.product(*params.values()):
            points.append({"scheme": scheme, **dict(zip(params, combo))})
    spec: dict[str, Any] = {
        "set": {**given, "dram.budget_bytes": budget},
        "points": points,
        "config": list(config),
    }
    if trace is not None:
        spec["traces"] = [trace]
    else:
        spec["workloads"] = [workload or "default"]
    if preset is not None:
        spec["presets"] = [preset]
    if precondition is not None:
        spec["preconditions"] = [precondition]
    if seeds > 1:
        spec["seeds"] = seeds
    return spec


def probe_memory(task: sw.Task, sets: Sequence[str] = ()) -> int:
    """The mapping DRAM a run's scheme allocates before any request (with `sets` on top
    of the run's): one request of a workload on the same device, fresh, mapping-only."""
    options = dict(task.options)
    options["trace"], options["workload"] = None, "default"
    options["verify"] = False
    options["sets"] = [
        *options["sets"],
        "workload.requests=1",
        'precondition.mode="none"',
        "precondition.warmup=false",
        "replay.timing=false",
        *sets,
    ]
    text, _ = run_cancellable(task.scheme, **options)
    return int(json.loads(text)["metrics"]["memory_bytes"]["peak_total"])


def _settings(row: dict[str, Any], keys: Sequence[str], scheme: str) -> str:
    own = [k for k in keys if k.split(".", 1)[0] == scheme and row.get(k) is not None]
    return ", ".join(f"{k.split('.', 1)[1]}={row[k]}" for k in own)


def _fmt(column: str, value: Any) -> str:
    from ftlab._format import latency

    if value is None:
        return "-"
    if column.endswith("_us"):
        return latency(float(value))
    if column in ("waf",):
        return f"{value:.3f}"
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    return f"{value:,.3g}" if isinstance(value, float) else f"{value:,}"


def _mib(value: float) -> str:
    """Bytes for people: KiB under a MiB, else MiB."""
    if value < MIB:
        return f"{value / 1024:,.1f} KiB"
    return f"{value / MIB:,.2f} MiB"


def advise(
    *,
    dram: str | int,
    trace: str | Path | None = None,
    workload: str | None = None,
    goal: Goal = "latency",
    preset: str | None = None,
    config: Sequence[str | Path] = (),
    sets: Sequence[str] = (),
    precondition: str | None = None,
    seeds: int = 1,
    schemes: Sequence[str] | None = None,
    out: str | Path | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    ship_traces: bool = False,
    progress: bool = False,
    on_note: Callable[[str], object] | None = None,
) -> Advice:
    """See `ftlab.advise`."""
    import polars as pl

    from ftlab import _sweep_plot

    if goal not in GOALS:
        raise FtlabError(f"unknown goal `{goal}`; the goals are: {', '.join(GOALS)}")
    if trace is not None and workload is not None:
        raise FtlabError("give either a trace or a workload, not both")
    budget = budget_bytes(dram)
    spec = spec_for(
        budget,
        trace=None if trace is None else str(Path(trace).resolve()),
        workload=workload,
        preset=preset,
        config=[str(Path(c).resolve()) for c in config],
        sets=sets,
        precondition=precondition,
        seeds=1,
        schemes=schemes,
    )
    # One run per point (one seed): probe what each configuration allocates up front.
    probes = sw.plan(sw.parse_spec(spec))
    if len(probes.tasks) != len(spec["points"]):  # pragma: no cover - points are distinct
        raise FtlabError("internal: the advisor's configurations are not distinct")
    excluded: list[tuple[str, str]] = []
    points: list[dict[str, Any]] = []
    smallest: tuple[int, str] | None = None
    for point, task in zip(spec["points"], probes.tasks):
        label = task.scheme + (f" ({_settings_of(task)})" if _settings_of(task) else "")
        fixed = probe_memory(task)
        smallest = min(smallest or (fixed, label), (fixed, label))
        if fixed >= budget:
            excluded.append((label, f"its map alone needs {_mib(fixed)} before any request"))
            continue
        # The schemes that cache their map get what the budget leaves beside their fixed
        # structures (directory, GC bookkeeping), so that the whole stays within it.
        cache = budget - fixed
        try:
            probe_memory(task, [f"dram.budget_bytes={cache}"])
        except FtlabError as e:
            excluded.append((label, f"the {_mib(cache)} left for its cache is too small: {e}"))
            continue
        points.append({**point, "dram.budget_bytes": cache})
    spec["points"] = points
    if seeds > 1:
        spec["seeds"] = seeds
    folder = Path(out) if out is not None else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    if points:
        p = sw.plan(sw.parse_spec(spec))
    else:
        p = sw.Plan(spec=probes.spec, tasks=[], key_columns=probes.key_columns)
    if on_note is not None:
        on_note(
            f"{len(points)} configurations of {len({pt['scheme'] for pt in points})} schemes "
            f"can fit {_mib(budget)} of mapping DRAM ({len(p.tasks)} runs); "
            f"{len(probes.tasks) - len(points)} left out"
        )
    result = sw.run_plan(
        p,
        out=None if folder is None else folder / "advise.parquet",
        jobs=jobs,
        scheduler=scheduler,
        ship_traces=ship_traces,
        progress=progress,
    )
    if result.interrupted:
        raise KeyboardInterrupt
    table = result.table
    for key, message in result.failed:
        row = table.filter(pl.col("run_key") == key).row(0, named=True)
        excluded.append((row["scheme"], f"failed: {message}"))
    agg = _sweep_plot.aggregate(table)
    keys = _sweep_plot.key_columns(agg)
    op = "read"
    if agg.height and agg["read_mean_us"].drop_nulls().len() == 0:
        op = "write"
    order = _order(goal, op)
    if goal == "latency" and agg.height and agg[order[0]].drop_nulls().len() == 0:
        raise FtlabError("the latency goal needs timed runs (not --mapping-only)")
    fits = agg.filter(pl.col("memory_peak_max_bytes") <= budget) if agg.height else agg
    over = agg.filter(pl.col("memory_peak_max_bytes") > budget) if agg.height else agg
    for row in over.iter_rows(named=True):
        label = row["scheme"] + (f" ({s})" if (s := _settings(row, keys, row["scheme"])) else "")
        peak = row["memory_peak_max_bytes"]
        excluded.append((label, f"its mapping DRAM peaked at {_mib(peak)}"))
    if fits.height:
        ranking = (
            fits.sort([*order, "scheme"], nulls_last=True)
            .group_by("scheme", maintain_order=True).first()
        )  # fmt: skip
    else:
        ranking = pl.DataFrame()
    lines = _explain(goal, op, budget, ranking, fits, keys, excluded, agg, smallest)
    advice = Advice(goal, budget, ranking, table, excluded, lines)
    if folder is not None and agg.height:
        fig = _sweep_plot.plot_pareto(table, op=op, budget_bytes=budget)
        advice.files = _sweep_plot._save(fig, folder, "pareto")
        _sweep_plot._pyplot().close(fig)
    if folder is not None:
        (folder / "advice.txt").write_text("\n".join(lines) + "\n")
        advice.files.append(folder / "advice.txt")
    return advice


def _settings_of(task: sw.Task) -> str:
    own = [s for s in task.options["sets"] if s.split(".", 1)[0] == task.scheme]
    return ", ".join(s.split(".", 1)[1] for s in own)


def _explain(
    goal: Goal,
    op: str,
    budget: int,
    ranking: pl.DataFrame,
    fits: pl.DataFrame,
    keys: Sequence[str],
    excluded: list[tuple[str, str]],
    agg: pl.DataFrame,
    smallest: tuple[int, str] | None,
) -> list[str]:
    import polars as pl

    order = _order(goal, op)
    metric = order[0]
    wanted = GOAL_TEXT[goal].format(op=op)
    lines: list[str] = []
    if not ranking.height:
        lines.append(f"No scheme fits a mapping DRAM budget of {_mib(budget)}.")
        if agg.height:
            least = agg.sort("memory_peak_max_bytes").row(0, named=True)
            lines.append(
                f"The smallest mapping DRAM was {_mib(least['memory_peak_max_bytes'])} "
                f"({least['scheme']}); raise --dram to at least that."
            )
        elif smallest is not None:
            lines.append(
                f"The smallest fixed mapping structures are {smallest[1]}'s, "
                f"{_mib(smallest[0])}: the budget must be larger."
            )
        lines += [f"  {name}: {reason}" for name, reason in excluded]
        return lines
    first = ranking.row(0, named=True)
    page_table = first.get("page_table_bytes")
    context = f"Budget {_mib(budget)} of mapping DRAM"
    if page_table:
        context += f" ({budget / page_table:.1%} of the page-level table, {_mib(page_table)})"
    lines.append(context + f"; goal: {wanted}.")
    settings = _settings(first, keys, first["scheme"])
    peak = first["memory_peak_max_bytes"]
    lines.append(
        f"Recommended: {first['scheme']}" + (f" ({settings})" if settings else "") + ": "
        f"{LABELS[metric]} {_fmt(metric, first[metric])}, WAF {_fmt('waf', first['waf'])}, "
        f"{op} mean/p99 {_fmt('x_us', first.get(f'{op}_mean_us'))} / "
        f"{_fmt('x_us', first.get(f'{op}_p99_us'))}, mapping DRAM "
        f"{_mib(peak)} ({peak / budget:.0%} of the budget)."
    )
    if ranking.height > 1:
        second = ranking.row(1, named=True)
        a, b = first[metric], second[metric]
        if a is not None and b is not None and b > 0 and (b - a) / b >= 0.02:
            why = f"{(b - a) / b:.0%} below the runner-up, {second['scheme']} ({_fmt(metric, b)})"
        elif a is not None and b is not None:
            tie = order[1]
            why = (
                f"level with {second['scheme']} ({_fmt(metric, b)}), ahead on "
                f"{LABELS[tie]} ({_fmt(tie, first[tie])} against {_fmt(tie, second[tie])})"
            )
        else:
            why = f"ahead of {second['scheme']}"
        lines.append(f"Why: of the schemes that fit, it has {wanted}: {why}.")
        costs = []
        for column in ("waf", f"{op}_p99_us", "flash_erases"):
            mine, theirs = first.get(column), second.get(column)
            if column in order or mine is None or theirs is None:
                continue
            if mine > 1.1 * theirs and mine - theirs > 1e-9:
                costs.append(
                    f"{LABELS[column]} {_fmt(column, mine)} against {_fmt(column, theirs)}"
                )
        if costs:
            lines.append(
                f"Trade-off: against {second['scheme']}, it costs more in " + "; ".join(costs) + "."
            )
    else:
        lines.append("Why: it is the only scheme that fits.")
    variants = fits.filter(pl.col("scheme") == first["scheme"])
    if variants.height > 1:
        others = [
            f"{_settings(r, keys, first['scheme'])}: {_fmt(metric, r[metric])}"
            for r in variants.sort(metric, nulls_last=True).iter_rows(named=True)
        ]
        lines.append(f"Its settings tried ({LABELS[metric]}): " + "; ".join(others) + ".")
    saturated = [r["scheme"] for r in ranking.iter_rows(named=True) if r.get("saturated")]
    if saturated:
        lines.append(
            "Warning: the replay saturated the device for "
            + ", ".join(saturated)
            + ": their latencies measure the queue (slow the trace down with "
            "--set replay.time_scale=X)."
        )
    if excluded:
        lines.append("Left out:")
        lines += [f"  {name}: {reason}" for name, reason in excluded]
    return lines


def ranking_rows(advice: Advice) -> tuple[list[str], list[list[str]]]:
    """The ranking as a text table for the terminal."""
    op = (
        "read"
        if advice.ranking.height and advice.ranking["read_mean_us"].drop_nulls().len()
        else "write"
    )
    keys = [c for c in advice.ranking.columns if "." in c]
    header = ["rank", "scheme", "settings", "cache budget", "DRAM peak", "of budget", "WAF",
              f"{op} mean", f"{op} p99", "max erases", "erases"]  # fmt: skip
    rows = []
    for i, r in enumerate(advice.ranking.iter_rows(named=True), 1):
        rows.append(
            [
                str(i),
                r["scheme"],
                _settings(r, keys, r["scheme"]) or "-",
                _mib(r["dram.budget_bytes"]),
                _mib(r["memory_peak_max_bytes"]),
                f"{r['memory_peak_max_bytes'] / advice.budget_bytes:.0%}",
                _fmt("waf", r["waf"]),
                _fmt("x_us", r.get(f"{op}_mean_us")),
                _fmt("x_us", r.get(f"{op}_p99_us")),
                _fmt("n", r["erase_count_max"]),
                _fmt("n", r["flash_erases"]),
            ]
        )
    return header, rows
