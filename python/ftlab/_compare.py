"""Running several schemes side by side, in threads of this process (`_parallel`): the
core releases the GIL for a whole run, so each job uses a core."""

from __future__ import annotations

from typing import Any, Callable

from ftlab._core import FtlabError
from ftlab._parallel import run_all as run_parallel
from ftlab._parallel import run_cancellable
from ftlab._run import Result
from ftlab._scheme import load_entry_points


def run_all(
    names: list[str],
    common: dict[str, Any],
    jobs: int | None,
    on_done: Callable[[str, Result], object] | None,
) -> dict[str, Result]:
    """Runs each scheme of `names` with the options `common`, `jobs` at a time (default:
    one per core); `on_done(name, result)` as each finishes. Raises FtlabError naming the
    scheme that failed (the others are stopped)."""
    load_entry_points()
    results: dict[str, Result] = {}

    def one(name: str) -> Result:
        try:
            text, wall = run_cancellable(name, **common)
        except FtlabError as e:
            raise FtlabError(f"{name}: {e}") from None
        return Result(json=text, wall_seconds=wall)

    def finish(name: str, result: Result) -> None:
        results[name] = result
        if on_done is not None:
            on_done(name, result)

    run_parallel(names, one, jobs, finish)
    return results
