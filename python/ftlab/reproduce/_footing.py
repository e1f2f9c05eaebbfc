"""Equal footing of the schemes in one comparison: the same GC scheduling.

Every run's report states when its scheme collects garbage (`metrics.gc.scheduling`:
"background", in idle time with `gc.mode = "background"` for a scheme with an idle hook,
or "foreground", in the path of the writes that need it). A comparison whose schemes are
scheduled differently measures the scheduler, not the schemes: a reproduction passes the
reports of the runs of each comparison to `common_scheduling`, which refuses unequal ones
and returns the common mode, for the headlines' `setup` strings (`setup_note`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class UnequalFooting(ValueError):
    """The runs of one comparison do not share one GC scheduling."""


def scheduling(report: Mapping[str, Any]) -> str:
    """The GC scheduling a run's report states (`metrics.gc.scheduling`)."""
    try:
        mode = report["metrics"]["gc"]["scheduling"]
    except (KeyError, TypeError) as e:
        raise ValueError(
            f"a report of {report.get('ftl', '?')!r} states no GC scheduling "
            "(metrics.gc.scheduling)"
        ) from e
    if mode not in ("background", "foreground"):
        raise ValueError(f"unknown GC scheduling {mode!r} in a report of {report.get('ftl')!r}")
    return str(mode)


def common_scheduling(reports: Iterable[Mapping[str, Any]], comparison: str) -> str:
    """The GC scheduling every run of `comparison` shares; `UnequalFooting`, naming each
    scheme's, when they differ (or ValueError when there is no run)."""
    return common_mode(
        ((str(report.get("ftl", "?")), scheduling(report)) for report in reports), comparison
    )


def common_mode(runs: Iterable[tuple[str, str]], comparison: str) -> str:
    """As `common_scheduling`, from (scheme, GC scheduling) pairs, for a reproduction that
    keeps a run's scheduling rather than its report."""
    by_scheme: dict[str, set[str]] = {}
    for scheme, mode in runs:
        by_scheme.setdefault(scheme, set()).add(mode)
    modes = set().union(*by_scheme.values()) if by_scheme else set()
    if not modes:
        raise ValueError(f"{comparison}: no runs to compare")
    if len(modes) > 1:
        detail = ", ".join(f"{s}: {'/'.join(sorted(m))}" for s, m in sorted(by_scheme.items()))
        raise UnequalFooting(
            f"{comparison}: the schemes are not compared on one GC scheduling ({detail}); "
            'run them all with the same gc.mode, e.g. gc.mode="background"'
        )
    return modes.pop()


def setup_note(mode: str) -> str:
    """The phrase a headline's `setup` gives the comparison's GC scheduling."""
    return f"GC in the {mode} for every scheme"
