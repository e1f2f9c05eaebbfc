"""Running simulations side by side: in threads of this process.

The core releases the GIL for a whole run, so `jobs` threads keep `jobs` cores busy with
no process start-up, no pickling and no `if __name__ == "__main__":` guard: the API works
the same from a script, `python -`, the REPL or a notebook. (Only Dask workers are other
processes.) Every run started here shares one cancel flag: Ctrl-C in the calling thread
sets it, each running simulation sees it at its next progress point (every 65,536
requests) and stops, and KeyboardInterrupt is raised to the caller.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextvars import ContextVar, copy_context
from typing import Any, Callable, TypeVar

from ftlab import _core

T = TypeVar("T")
R = TypeVar("R")

#: The cancel flag of the parallel runs the current thread belongs to (None outside them).
_CANCEL: ContextVar[_core.Cancel | None] = ContextVar("ftlab_cancel", default=None)


def run_cancellable(ftl: str, progress: Any = None, **options: Any) -> tuple[str, float]:
    """`_core.run`, stopped with the others when the parallel runs it belongs to are
    cancelled: every run of the package starts here."""
    return _core.run(ftl, progress, cancel=_CANCEL.get(), **options)


def default_jobs(runs: int) -> int:
    """One job per core this process may use, at most one per run."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(runs, cores or 1))


def run_all(
    items: Sequence[T],
    work: Callable[[T], R],
    jobs: int | None,
    on_result: Callable[[T, R], object],
) -> None:
    """Calls `work(item)` for every item in `jobs` threads (default: one per core; with one
    job, here), and `on_result(item, result)` in this thread as each finishes (items that
    finish together in their order in `items`). An exception, from a run or from
    `on_result`, or Ctrl-C, stops the runs under way and cancels the others, then is
    raised here."""
    jobs = default_jobs(len(items)) if jobs is None else max(1, min(jobs, len(items)))
    cancel = _core.Cancel()
    token = _CANCEL.set(cancel)
    try:
        if jobs == 1:
            for item in items:
                on_result(item, work(item))
            return
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="ftlab-run") as pool:
            # Each run in a copy of this context: the cancel flag and the caller's settings
            # (`model_0_1`) go with it.
            pending: dict[Future[R], int] = {
                pool.submit(copy_context().run, work, item): i for i, item in enumerate(items)
            }
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in sorted(done, key=pending.__getitem__):
                        on_result(items[pending.pop(future)], future.result())
            except BaseException:
                # Ctrl-C lands here, in the calling thread: the runs under way stop at
                # their next progress point, the queued ones never start.
                cancel.set()
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    finally:
        _CANCEL.reset(token)
