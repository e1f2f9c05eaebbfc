"""Saving and loading results: one folder per result.

A run's folder holds `report.json` (the report as the core wrote it, byte for byte: loading
it gives the same `Result`), `result.json` (what kind of result this is, the format
version, the run's wall-clock seconds) and each of the run's non-empty frames as Parquet
(`time_series.parquet`, ...), for tools that read Parquet; loading reads only the JSON, as
the frames are computed from the report. A comparison's folder holds `compare.json` (the
schemes in order, the fitted device), `table.parquet` and the merged frames, and one run
folder per scheme under `runs/`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ftlab._core import FtlabError

if TYPE_CHECKING:
    from ftlab import CompareResult
    from ftlab._run import Result

PathLike = Union[str, Path]
#: The version of the folder layout; a newer one is refused by an older ftlab.
VERSION = 1
#: The frames written beside a run's report (those with rows).
RUN_FRAMES = (
    "time_series",
    "latency_cdf",
    "latency_breakdown",
    "flash_ops",
    "memory",
    "merges",
    "associativity",
)
#: The frames written beside a comparison's `table.parquet`.
COMPARE_FRAMES = ("time_series", "latency_cdf", "latency_breakdown")


def _write_meta(path: Path, meta: dict[str, Any]) -> None:
    path.write_text(json.dumps({**meta, "version": VERSION}, indent=2) + "\n")


def _read_meta(folder: Path, name: str, kind: str) -> dict[str, Any]:
    """The folder's metadata file, checked: it exists, is JSON, names `kind`, and has a
    version this ftlab reads."""
    path = folder / name
    if not path.is_file():
        raise FtlabError(f"{folder}: not a saved ftlab {kind} (no {name})")
    try:
        meta = json.loads(path.read_text())
    except ValueError as e:
        raise FtlabError(f"{path}: not JSON: {e}") from None
    if not isinstance(meta, dict) or meta.get("kind") != kind:
        raise FtlabError(f"{path}: not a saved ftlab {kind}")
    if meta.get("version") != VERSION:
        raise FtlabError(
            f"{path}: format version {meta.get('version')!r}; this ftlab reads version {VERSION}"
        )
    return meta


def save_result(result: Result, folder: PathLike) -> Path:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(result.json)
    for name in RUN_FRAMES:
        frame = getattr(result, name)
        if frame.height:
            frame.write_parquet(out / f"{name}.parquet")
    _write_meta(out / "result.json", {"kind": "result", "wall_seconds": result.wall_seconds})
    return out


def load_result(folder: PathLike) -> Result:
    from ftlab._run import Result

    path = Path(folder)
    meta = _read_meta(path, "result.json", "result")
    report = path / "report.json"
    try:
        return Result(json=report.read_text(), wall_seconds=float(meta["wall_seconds"]))
    except (OSError, ValueError, KeyError) as e:
        raise FtlabError(f"{report}: cannot load the report: {e}") from None


def save_compare(cmp: CompareResult, folder: PathLike) -> Path:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    names = list(cmp.results)
    for name in names:
        if not name or "/" in name or name.startswith("."):
            raise FtlabError(f"cannot save scheme {name!r}: not usable as a folder name")
        save_result(cmp.results[name], out / "runs" / name)
    cmp.table.write_parquet(out / "table.parquet")
    for frame in COMPARE_FRAMES:
        getattr(cmp, frame).write_parquet(out / f"{frame}.parquet")
    _write_meta(
        out / "compare.json",
        {
            "kind": "compare",
            "schemes": names,
            "fitted_blocks_per_plane": cmp.fitted_blocks_per_plane,
        },
    )
    return out


def load_compare(folder: PathLike) -> tuple[dict[str, Result], int | None]:
    """A saved comparison's runs, in order, and its fitted `blocks_per_plane`."""
    path = Path(folder)
    meta = _read_meta(path, "compare.json", "compare")
    schemes = meta.get("schemes")
    if not isinstance(schemes, list) or not all(isinstance(s, str) for s in schemes):
        raise FtlabError(f"{path / 'compare.json'}: `schemes` is not a list of names")
    blocks = meta.get("fitted_blocks_per_plane")
    if blocks is not None and not isinstance(blocks, int):
        raise FtlabError(f"{path / 'compare.json'}: `fitted_blocks_per_plane` is not a number")
    return {name: load_result(path / "runs" / name) for name in schemes}, blocks
