"""Running several schemes side by side, in parallel processes where cores allow.

Each scheme runs in its own process (started with `spawn`, safe from notebooks and from
threads of already-imported libraries); the core releases the GIL, but separate
processes also keep one scheme's memory from another's. With one job, or one scheme,
runs stay in this process.
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing import get_context
from typing import Any, Callable

from ftlab import _core
from ftlab._core import FtlabError
from ftlab._registry import split_stack
from ftlab._run import Result
from ftlab._scheme import in_process_only, load_entry_points


def _run_one(ftl: str, common: dict[str, Any]) -> tuple[str, str, float]:
    """Runs one scheme; returns (status, JSON or error message, wall seconds). Errors are
    returned as text: the core's exception type does not cross process boundaries."""
    try:
        load_entry_points()
        text, wall = _core.run(ftl, **common)
    except _core.FtlabError as e:
        return ("error", str(e), 0.0)
    return ("ok", text, wall)


def default_jobs(schemes: int) -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(schemes, cores or 1))


def run_all(
    names: list[str],
    common: dict[str, Any],
    jobs: int | None,
    on_done: Callable[[str, Result], object] | None,
) -> dict[str, Result]:
    jobs = default_jobs(len(names)) if jobs is None else max(1, jobs)
    results: dict[str, Result] = {}

    def finish(name: str, outcome: tuple[str, str, float]) -> None:
        status, text, wall = outcome
        if status != "ok":
            raise FtlabError(f"{name}: {text}")
        results[name] = Result(json=text, wall_seconds=wall)
        if on_done is not None:
            on_done(name, results[name])

    # A Python scheme registered by the caller (not by a plugin that a worker loads too)
    # can only run in this process: it runs here while the workers run the others.
    here = [n for n in names if in_process_only(split_stack(n)[1])]
    there = [n for n in names if n not in here]
    if jobs == 1 or len(there) <= 1:
        for name in names:
            finish(name, _run_one(name, common))
        return results
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        pending: dict[Future[tuple[str, str, float]], str] = {
            pool.submit(_run_one, name, common): name for name in there
        }
        try:
            for name in here:
                finish(name, _run_one(name, common))
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: names.index(pending[f])):
                    finish(pending.pop(future), future.result())
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return results
