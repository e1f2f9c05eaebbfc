"""The `why.json` contract (`ftlab.reproduce._why`): the verdict of an experiment that
changes the one thing a stated cause names."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ftlab.cli import main
from ftlab.reproduce import _why


def _exp(before: float, after: float, paper: float = 1.0) -> _why.Experiment:
    return _why.Experiment("k", "a cause", "one change", before, after, paper)


def test_a_change_toward_the_paper_confirms_the_cause() -> None:
    assert _exp(3.0, 1.1).verdict == "explains the miss"
    assert _exp(3.0, 2.0).verdict == "explains part of the miss"
    # Half and double are as far: 0.5 -> 1.9 moves away in log ratio.
    assert _exp(0.5, 2.1).verdict == "refuted"
    assert _exp(3.0, 3.0).verdict == "refuted"
    # Closing under a tenth of the gap shows nothing.
    assert _exp(3.0, 2.95).verdict == "refuted"
    assert _exp(0.0, 0.5).moves_toward_paper
    # A signed quantity (a gain in %) is measured on a linear scale: -22 -> -1 moves toward
    # +10 (on the log scale both are infinitely far).
    gain = _why.Experiment("g", "c", "x", -22.0, -1.0, 10.0, unit="%", scale="linear")
    assert gain.verdict == "explains part of the miss"
    assert _why.Experiment("g", "c", "x", -22.0, 11.0, 10.0, scale="linear").closes_the_gap


def test_why_json_round_trips(tmp_path: Path) -> None:
    experiments = [_exp(3.0, 1.1), _exp(0.5, 0.4, paper=2.0)]
    path = _why.write(tmp_path, experiments)
    assert _why.read(path) == experiments
    assert "refuted" in path.read_text()
    (tmp_path / "bad.json").write_text('[{"key": "k"}]')
    with pytest.raises(ValueError, match=r"bad\.json: entry 0"):
        _why.read(tmp_path / "bad.json")


def test_why_refuses_all_and_unknown_names(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["reproduce", "all", "--why", "--out", str(tmp_path)])
    assert result.exit_code != 0 and "--why takes one experiment" in result.output
    result = runner.invoke(main, ["reproduce", "nope", "--why", "--out", str(tmp_path / "x")])
    assert result.exit_code != 0 and "unknown experiment" in result.output


def test_dftl_causes_checked(tmp_path: Path, traces: Path) -> None:
    """`reproduce dftl --why --quick`: batching the baseline's write-backs moves the response
    time TPFTL saves toward the paper's; a larger cache and GC steady state do not move the
    translation writes it saves (so the reason rules them out)."""
    from ftlab import reproduce

    reproduce.run("dftl", tmp_path, quick=True, why=True)
    verdicts = [(e.key, e.verdict) for e in _why.read(tmp_path / _why.WHY_FILE)]
    assert verdicts == [
        ("translation_writes_saved", "refuted"),
        ("translation_writes_saved", "refuted"),
        ("response_time_saved_best", "explains part of the miss"),
    ]
