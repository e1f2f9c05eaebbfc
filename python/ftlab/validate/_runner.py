"""Running the validation runs, in parallel processes where cores allow (as `compare`
does: `spawn`ed workers, errors returned as text), the longest first."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing import get_context
from typing import Callable

from ftlab._compare import default_jobs
from ftlab.validate._case import Measurements, Run, RunFunction

Outcome = tuple[str, Measurements, str, float]


def _one(key: str, func: RunFunction, overrides: Sequence[str]) -> Outcome:
    """(key, measurements, error message or "", wall seconds)."""
    started = time.monotonic()
    try:
        measured = func(overrides)
    except Exception as e:  # noqa: BLE001 - reported as the run's failure
        return key, {}, f"{type(e).__name__}: {e}", time.monotonic() - started
    return key, measured, "", time.monotonic() - started


def run_all(
    runs: Sequence[Run],
    overrides: Sequence[str],
    jobs: int | None,
    on_done: Callable[[str, float], object] | None,
) -> tuple[dict[str, Measurements], dict[str, str]]:
    """Every run's measurements, and the error of each run that failed."""
    measured: dict[str, Measurements] = {}
    errors: dict[str, str] = {}

    def finish(outcome: Outcome) -> None:
        key, values, error, wall = outcome
        measured[key] = values
        if error:
            errors[key] = error
        if on_done is not None:
            on_done(key, wall)

    ordered = sorted(runs, key=lambda r: -r.cost)
    jobs = default_jobs(len(runs)) if jobs is None else max(1, jobs)
    if jobs == 1 or len(runs) <= 1:
        for run in ordered:
            finish(_one(run.key, run.func, overrides))
        return measured, errors
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        pending: set[Future[Outcome]] = {
            pool.submit(_one, run.key, run.func, list(overrides)) for run in ordered
        }
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: f.result()[0]):
                    finish(future.result())
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return measured, errors
