"""Equal footing (`ftlab.reproduce._footing`): the runs of one comparison share one GC
scheduling, which every report states (`metrics.gc.scheduling`)."""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ftlab
from ftlab import reproduce
from ftlab.reproduce import _footing, slimftl

SMALL = ["replay.timing=false", "workload.requests=200"]


def _report(scheme: str, mode: str) -> dict[str, Any]:
    return ftlab.simulate(
        scheme,
        workload="default",
        preset="small",
        sets=SMALL + [f'gc.mode="{mode}"'],
        precondition="none",
    ).report


def test_reports_state_their_scheduling() -> None:
    for scheme in ("page", "hpftl", "slimftl"):
        assert _footing.scheduling(_report(scheme, "background")) == "background"
        assert _footing.scheduling(_report(scheme, "foreground")) == "foreground"
    # A scheme without an idle hook collects in the foreground whatever gc.mode says.
    assert _footing.scheduling(_report("fast", "background")) == "foreground"


def test_unequal_scheduling_is_refused() -> None:
    page = _report("page", "background")
    slim = _report("slimftl", "foreground")
    with pytest.raises(_footing.UnequalFooting, match=r"random: .*page: background.*slimftl: "):
        _footing.common_scheduling([page, slim], "random")
    assert _footing.common_scheduling([page, _report("slimftl", "background")], "x") == (
        "background"
    )
    with pytest.raises(ValueError, match="no runs"):
        _footing.common_scheduling([], "x")
    with pytest.raises(ValueError, match="states no GC scheduling"):
        _footing.common_scheduling([{"ftl": "page", "metrics": {}}], "x")


@pytest.mark.reproduction("slimftl")
def test_slimftl_quick_run_compares_on_one_scheduling(quick: Callable[[str], Path]) -> None:
    folder = quick("slimftl")
    headlines = json.loads((folder / "summary.json").read_text())
    note = _footing.setup_note(slimftl.GC_MODE)
    assert slimftl.GC_MODE == "background"
    assert headlines and all(note in h["setup"] for h in headlines), [h["setup"] for h in headlines]


#: Every reproduction that compares schemes, and the GC scheduling it compares them on (the
#: selective reproductions compare one scheme with itself).
COMPARISONS = {
    "amf": "background",
    "dftl": "background",
    "demand-hit-ratio": "background",
    "kraft": "foreground",
    "leaftl": "background",
    "slimftl": "background",
}


@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_every_comparison_states_one_scheduling(
    name: str, quick: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    """Each reproduction checks its comparisons with `_footing.common_scheduling` (its quick
    run fails on unequal footing) and states the mode in the setup of the headlines its
    timed or GC-dependent comparisons give."""
    if name != "slimftl":
        request.getfixturevalue("traces")  # these replay ../shared/traces
    module = importlib.import_module(reproduce.EXPERIMENTS[name][0])
    assert "_footing.common_scheduling" in inspect.getsource(module)
    headlines = json.loads((quick(name) / "summary.json").read_text())
    note = _footing.setup_note(COMPARISONS[name])
    stated = [h["key"] for h in headlines if note in h.get("setup", "")]
    assert stated, f"{name}: no headline states {note!r}"
    other = "foreground" if COMPARISONS[name] == "background" else "background"
    assert not any(_footing.setup_note(other) in h.get("setup", "") for h in headlines)
