"""Results kept: saved to a folder and loaded back, and pickled."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import polars as pl
import pytest

import ftlab


@pytest.fixture(scope="module")
def cmp() -> ftlab.CompareResult:
    return ftlab.compare(
        ["page", "dftl"], workload="zipf", preset="small", sets=["workload.requests=3000"], jobs=2
    )


def test_a_result_saved_and_loaded_is_the_same(cmp: ftlab.CompareResult, tmp_path: Path) -> None:
    result = cmp.results["dftl"]
    folder = result.save(tmp_path / "run")
    assert (folder / "report.json").read_text() == result.json
    assert json.loads((folder / "result.json").read_text())["kind"] == "result"
    # The frames are there for other tools, as Parquet.
    saved = pl.read_parquet(folder / "time_series.parquet")
    assert saved.equals(result.time_series) and saved.height > 0
    assert pl.read_parquet(folder / "flash_ops.parquet").equals(result.flash_ops)
    assert not (folder / "merges.parquet").exists()  # empty for a page-mapped scheme
    loaded = ftlab.Result.load(folder)
    assert loaded == result
    assert loaded.summary == result.summary


def test_a_comparison_saved_and_loaded_is_the_same(
    cmp: ftlab.CompareResult, tmp_path: Path
) -> None:
    folder = cmp.save(tmp_path / "cmp")
    assert pl.read_parquet(folder / "table.parquet").equals(cmp.table)
    assert sorted(p.name for p in (folder / "runs").iterdir()) == ["dftl", "page"]
    loaded = ftlab.CompareResult.load(folder)
    assert list(loaded.results) == list(cmp.results)
    assert loaded == cmp
    assert loaded.table.equals(cmp.table)
    assert loaded._repr_html_() == cmp._repr_html_()


def test_results_pickle(cmp: ftlab.CompareResult) -> None:
    result = cmp.results["page"]
    again = pickle.loads(pickle.dumps(result))
    assert again == result and again.report == result.report
    # Pickled as the report's text, not twice (text and dict).
    assert len(pickle.dumps(result)) < 1.1 * len(result.json.encode())
    both = pickle.loads(pickle.dumps(cmp))
    assert both == cmp and both.table.equals(cmp.table)


def test_loading_what_is_not_a_saved_result_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ftlab.FtlabError, match="no result.json"):
        ftlab.Result.load(tmp_path)
    (tmp_path / "result.json").write_text("{not json")
    with pytest.raises(ftlab.FtlabError, match="result.json: not JSON"):
        ftlab.Result.load(tmp_path)
    (tmp_path / "result.json").write_text('{"kind": "result", "version": 99}')
    with pytest.raises(ftlab.FtlabError, match="version 99"):
        ftlab.Result.load(tmp_path)
    (tmp_path / "result.json").write_text('{"kind": "result", "version": 1, "wall_seconds": 1}')
    with pytest.raises(ftlab.FtlabError, match="report.json"):
        ftlab.Result.load(tmp_path)
    with pytest.raises(ftlab.FtlabError, match="not a saved ftlab compare"):
        ftlab.CompareResult.load(tmp_path)
