"""`ftlab validate`: ftlab's model against references from outside ftlab.

Each case compares one measured figure with a reference from a closed form, a physical
bound or a peer simulator, within a stated tolerance (see `_case.Case`). The families, one
module each:

- `gc`: garbage collection's write amplification against Desnoyers' FIFO model and the
  mean-field limit of greedy GC, uniform and hot/cold traffic;
- `queueing` (family `timing`): M/D/1 on one die, closed-loop bounds and Little's law,
  sequential bandwidth;
- `steady`: the fresh-out-of-box / transition / steady-state transient of random writes;
- `peer`: MQSim's mean response on the traces of ../shared/validation/mqsim-small.json.

    >>> import ftlab
    >>> card = ftlab.validate(quick=True)
    >>> card.passed, card.summary["median_error"]
    >>> card.frame            # one row per case (polars)

`overrides` (configuration keys and values) are applied to every simulation and to no
reference: a test breaks the model with them and checks that the scorecard fails.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

from ftlab.validate._case import Case, Run, sets

if TYPE_CHECKING:
    import polars

__all__ = ["CaseResult", "Scorecard", "catalogue", "validate"]

Status = Literal["pass", "fail", "xfail", "xpass", "skipped"]

#: The families in report order.
FAMILIES = ["gc", "timing", "steady", "peer"]


@dataclass
class CaseResult:
    """One case's outcome: the case, what ftlab measured (None when the run did not report
    it; a bracket's upper run in `measured_high`), the relative error (measured /
    reference - 1; none for a bracket) and the status: `pass`, `fail`, `xfail` (failed, as
    its `expected_failure` says it will), `xpass` (passed although expected to fail),
    `skipped` (not measured: `message` says why)."""

    case: Case
    measured: float | None
    status: Status
    message: str = ""
    #: A `bracket`'s upper measurement.
    measured_high: float | None = None

    @property
    def error(self) -> float | None:
        if self.measured is None or self.case.reference == 0 or self.case.check == "bracket":
            return None
        return self.measured / self.case.reference - 1.0

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "xfail", "xpass", "skipped")

    def to_dict(self) -> dict[str, Any]:
        row = asdict(self.case)
        row.update(
            measured=self.measured,
            measured_high=self.measured_high,
            error=self.error,
            status=self.status,
            message=self.message,
            tolerance_text=self.case.tolerance_text,
        )
        return row


def _summary(results: Sequence[CaseResult]) -> dict[str, Any]:
    """Counts, and the median and worst |relative error| over the `value` cases that pass
    or fail (a bound's distance from its reference is not an error; expected failures are
    counted apart)."""

    def stats(rows: Sequence[CaseResult]) -> dict[str, Any]:
        scored = [
            r
            for r in rows
            if r.case.check == "value" and r.error is not None and r.status in ("pass", "fail")
        ]
        errors = [abs(r.error or 0.0) for r in scored]
        worst = max(scored, key=lambda r: abs(r.error or 0.0)) if scored else None
        return {
            "cases": len(rows),
            "passed": sum(r.status in ("pass", "xpass") for r in rows),
            "failed": sum(r.status == "fail" for r in rows),
            "xfail": sum(r.status == "xfail" for r in rows),
            "skipped": sum(r.status == "skipped" for r in rows),
            "median_error": statistics.median(errors) if errors else None,
            "worst_error": max(errors) if errors else None,
            "worst_case": worst.case.name if worst else None,
        }

    out = stats(results)
    out["families"] = {
        family: stats([r for r in results if r.case.family == family])
        for family in FAMILIES
        if any(r.case.family == family for r in results)
    }
    return out


@dataclass
class Scorecard:
    """Every case's result, and the summary: counts and the median and worst relative
    error, overall and per family (over the cases compared with a value, not a bound)."""

    results: list[CaseResult]
    quick: bool
    overrides: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0

    @property
    def summary(self) -> dict[str, Any]:
        return _summary(self.results)

    @property
    def passed(self) -> bool:
        """No case failed (expected failures and skipped cases aside)."""
        return all(r.ok for r in self.results)

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if r.status == "fail"]

    @property
    def frame(self) -> polars.DataFrame:
        """One row per case: family, name, reference, source, measured, tolerance, error,
        status, ..."""
        import polars as pl

        rows = [r.to_dict() for r in self.results]
        columns = [
            "family", "name", "reference", "source", "measured", "measured_high", "unit",
            "check", "lower", "tolerance", "relative", "tolerance_text", "error", "status",
            "reason", "expected_failure", "message", "run", "measure", "x", "series",
        ]  # fmt: skip
        return pl.DataFrame(
            {c: [row[c] for row in rows] for c in columns},
            schema_overrides={
                "reference": pl.Float64,
                "measured": pl.Float64,
                "measured_high": pl.Float64,
                "lower": pl.Float64,
                "tolerance": pl.Float64,
                "error": pl.Float64,
                "x": pl.Float64,
            },  # fmt: skip
        )

    def to_json(self) -> str:
        """`scorecard.json`: the summary and every case (no wall-clock figures)."""
        from ftlab import __version__

        document = {
            "ftlab_version": __version__,
            "quick": self.quick,
            "overrides": self.overrides,
            "summary": self.summary,
            "cases": [r.to_dict() for r in self.results],
        }
        return json.dumps(document, indent=2, sort_keys=True) + "\n"

    def write_report(self, folder: str | Path) -> Path:
        """`index.html`, one plot per family (PNG, SVG) and `scorecard.json` in `folder`;
        returns the HTML page's path."""
        from ftlab.validate import report

        return report.write(self, Path(folder))

    def _repr_html_(self) -> str:
        from ftlab.validate import report

        return report.html_table(self)


def catalogue(quick: bool = False) -> tuple[list[Run], list[Case]]:
    """Every family's runs and cases (the quick subset with `quick`)."""
    from ftlab.validate import gc, peer, queueing, steady

    runs: list[Run] = []
    cases: list[Case] = []
    for module in (gc, queueing, steady, peer):
        r, c = module.catalogue(quick)
        runs += r
        cases += c
    keys = [r.key for r in runs]
    if len(set(keys)) != len(keys):
        raise AssertionError(f"duplicate run keys: {keys}")
    missing = {c.run for c in cases} - set(keys)
    if missing:
        raise AssertionError(f"cases name unknown runs: {sorted(missing)}")
    return runs, cases


def validate(
    quick: bool = False,
    overrides: Mapping[str, Any] | None = None,
    *,
    jobs: int | None = None,
    families: Sequence[str] | None = None,
    on_done: Callable[[str, float], object] | None = None,
) -> Scorecard:
    """Runs the catalogue (the quick subset with `quick`) and returns the scorecard.

    `overrides` (`{"nand.program_latency_ns": 1}`) are applied to every simulation, never
    to a reference. `jobs` threads run independent runs (default: one per core);
    `families` limits the catalogue; `on_done(run_key, wall_seconds)` is called as each run
    finishes. A run that raises fails its cases, with the error as their message.
    """
    import time

    from ftlab.validate import _runner

    started = time.monotonic()
    runs, cases = catalogue(quick)
    if families is not None:
        unknown = set(families) - set(FAMILIES)
        if unknown:
            raise ValueError(f"unknown families {sorted(unknown)}; they are {FAMILIES}")
        runs = [r for r in runs if r.family in families]
        cases = [c for c in cases if c.family in families]
    extra = sets(overrides or {})
    measured, errors = _runner.run_all(runs, extra, jobs, on_done)
    results = [_evaluate(case, measured, errors) for case in cases]
    return Scorecard(
        results=results,
        quick=quick,
        overrides=dict(overrides or {}),
        wall_seconds=time.monotonic() - started,
    )


def _evaluate(
    case: Case, measured: Mapping[str, Mapping[str, float]], errors: Mapping[str, str]
) -> CaseResult:
    if case.run in errors:
        return CaseResult(case, None, "fail", f"run failed: {errors[case.run]}")
    value = measured[case.run].get(case.measure)
    if value is None:
        return CaseResult(case, None, "skipped", f"the run does not report {case.measure}")
    high = measured[case.run].get(case.measure_high) if case.measure_high else None
    if case.measure_high and high is None:
        return CaseResult(case, value, "skipped", f"the run does not report {case.measure_high}")
    ok = case.passes(value, high)
    if case.expected_failure:
        return CaseResult(case, value, "xpass" if ok else "xfail", case.expected_failure, high)
    return CaseResult(case, value, "pass" if ok else "fail", measured_high=high)
