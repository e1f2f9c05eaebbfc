"""Running the validation runs, in threads of this process where cores allow (as `compare`
does, `ftlab._parallel`), the longest first."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Callable

from ftlab import _parallel
from ftlab.validate._case import Measurements, Run


def _one(run: Run, overrides: Sequence[str]) -> tuple[Measurements, str, float]:
    """(measurements, error message or "", wall seconds)."""
    started = time.monotonic()
    try:
        measured = run.func(overrides)
    except Exception as e:  # noqa: BLE001 - reported as the run's failure
        return {}, f"{type(e).__name__}: {e}", time.monotonic() - started
    return measured, "", time.monotonic() - started


def run_all(
    runs: Sequence[Run],
    overrides: Sequence[str],
    jobs: int | None,
    on_done: Callable[[str, float], object] | None,
) -> tuple[dict[str, Measurements], dict[str, str]]:
    """Every run's measurements, and the error of each run that failed."""
    measured: dict[str, Measurements] = {}
    errors: dict[str, str] = {}

    def finish(run: Run, outcome: tuple[Measurements, str, float]) -> None:
        values, error, wall = outcome
        measured[run.key] = values
        if error:
            errors[run.key] = error
        if on_done is not None:
            on_done(run.key, wall)

    ordered = sorted(runs, key=lambda r: -r.cost)
    _parallel.run_all(ordered, lambda run: _one(run, overrides), jobs, finish)
    return measured, errors
