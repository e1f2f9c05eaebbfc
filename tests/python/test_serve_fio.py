"""`ftlab serve` under fio's nbd engine with verify=crc32c: sequential and random writes
from several jobs at queue depth 16, on a device small enough that the second pass runs
garbage collection (or merges), each pass read back and checked by fio."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from nbd_helpers import SMALL_DEVICE, Served, need


def fio(
    uri: str, tmp: Path, name: str, rw: str, bs: str, jobs: int, size_mib: int
) -> dict[str, Any]:
    """One fio run with a verify pass; fails the test on any error or verify mismatch."""
    job = tmp / f"{name}.fio"
    job.write_text(
        f"""[global]
ioengine=nbd
uri={uri}
rw={rw}
bs={bs}
iodepth=16
numjobs={jobs}
size={size_mib}M
offset_increment={size_mib}M
verify=crc32c
verify_fatal=1
do_verify=1
randrepeat=0
group_reporting=1
[{name}]
"""
    )
    # In the test's directory: fio leaves its verify state files where it runs.
    out = subprocess.run(
        [need("fio", "fio"), "--output-format=json", str(job)],
        capture_output=True, text=True, timeout=600, cwd=tmp,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout[out.stdout.index("{") :])
    job_result = result["jobs"][0]
    assert job_result["error"] == 0, job_result
    return dict(job_result)


@pytest.mark.parametrize("ftl", ["page", "dftl", "fast", "leaftl"])
def test_fio_verify_sequential_then_random(tmp_path: Path, ftl: str) -> None:
    need("fio", "fio")
    served = Served(tmp_path / "store", ftl=ftl, sets=SMALL_DEVICE, extra=["--verify"])
    try:
        # 4 jobs x 10 MiB = 40 MiB of the 44.8 MiB export, written sequentially, then
        # overwritten at random: the flash (64 MiB) fills and its GC moves real pages.
        seq = fio(served.uri, tmp_path, "seq", "write", "128k", 4, 10)
        rand = fio(served.uri, tmp_path, "rand", "randwrite", "4k", 4, 10)
        assert seq["write"]["io_bytes"] == 4 * 10 << 20
        assert rand["write"]["io_bytes"] == 4 * 10 << 20
        # fio's verify pass read everything back.
        assert rand["read"]["io_bytes"] == 4 * 10 << 20
    finally:
        rc = served.stop()
    assert rc == 0, served.text()
    assert "failed" not in served.text(), served.text()


def test_gc_moved_real_pages(tmp_path: Path) -> None:
    """The verify runs above would pass on a device without GC: here the report shows that
    garbage collection relocated pages while fio's data stayed right."""
    need("fio", "fio")
    report = tmp_path / "report.json"
    served = Served(tmp_path / "store", sets=SMALL_DEVICE, json_out=report)
    try:
        fio(served.uri, tmp_path, "seq", "write", "128k", 4, 10)
        fio(served.uri, tmp_path, "rand", "randwrite", "4k", 4, 10)
    finally:
        assert served.stop() == 0, served.text()
    gc = json.loads(report.read_text())["metrics"]["gc"]
    assert gc["pages_moved"] > 0, gc
