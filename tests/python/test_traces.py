"""Traces through the command line: `ftlab trace info` on every real excerpt, counted
independently here; runs with trace options; bad input in every format."""

from __future__ import annotations

import csv
import gzip
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest


def ftlab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ftlab", *args], capture_output=True, text=True, timeout=600
    )


def info_json(tmp_path: Path, path: Path, *extra: str) -> dict[str, Any]:
    target = tmp_path / "info.json"
    out = ftlab("trace", "info", str(path), "--json", str(target), "-q", *extra)
    assert out.returncode == 0, out.stderr
    info: dict[str, Any] = json.loads(target.read_text())
    return info


# Independent counts: (requests, reads), with the parsing of the traces' README.


def count_msr(path: Path) -> tuple[int, int]:
    rows = [r for r in csv.reader(path.open()) if r and r[0] != "Timestamp"]
    return len(rows), sum(r[3] == "Read" for r in rows)


def count_systor(path: Path) -> tuple[int, int]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        rows = list(csv.reader(f))[1:]
    return len(rows), sum(r[2] == "R" for r in rows)


def count_tencent(path: Path) -> tuple[int, int]:
    rows = list(csv.reader(path.open()))
    return len(rows), sum(r[3] == "0" for r in rows)


def count_ascii(path: Path) -> tuple[int, int]:
    rows = [line.split() for line in path.open() if line.strip()]
    return len(rows), sum(int(r[4]) & 1 for r in rows)


def count_fiu(path: Path) -> tuple[int, int]:
    rows = [line.split() for line in path.open() if len(line.split()) >= 9]
    return len(rows), sum(r[5] == "R" for r in rows)


def count_fiu_table(path: Path) -> tuple[int, int]:
    # pandas TSV: a header row, then an index column before the FIU fields.
    rows = [line.rstrip("\n").split("\t") for line in path.open()][1:]
    return len(rows), sum(r[6] == "R" for r in rows)


def count_wiscsee(path: Path) -> tuple[int, int]:
    # D events inside the partition (a negative offset lies before it).
    rows = [p for p in (line.split() for line in path.open()) if p[1] == "D" and int(p[3]) >= 0]
    return len(rows), sum(p[2] == "read" for p in rows)


def count_vscsi_csv(path: Path) -> tuple[int, int]:
    rows = list(csv.reader(path.open()))[1:]
    ops = [int(r[2], 16) for r in rows]
    reads, writes = {0x08, 0x28, 0x88, 0xA8}, {0x0A, 0x2A, 0x8A, 0xAA}
    return sum(op in reads or op in writes for op in ops), sum(op in reads for op in ops)


def count_blkparse(path: Path) -> tuple[int, int]:
    rows = [
        p
        for p in (line.split() for line in path.open())
        if len(p) >= 10 and p[5] == "D" and p[8] == "+" and p[9] != "0"
    ]
    return len(rows), sum("R" in p[6] for p in rows)


def count_vscsi(path: Path) -> tuple[int, int]:
    reads, writes = {0x08, 0x28, 0x88, 0xA8}, {0x0A, 0x2A, 0x8A, 0xAA}
    ops = [rec[3] for rec in struct.iter_unpack("<IIIHHQQ", path.read_bytes())]
    return sum(op in reads or op in writes for op in ops), sum(op in reads for op in ops)


CASES: list[tuple[str, str, Callable[[Path], tuple[int, int]]]] = [
    ("msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv", "msr", count_msr),
    ("snia_systor17_caffeine_sample/systor17-traces-sample.csv.gz", "systor", count_systor),
    ("snia_systor17_caffeine_sample/systor17-additional-sample.csv", "systor", count_systor),
    ("tencent_cbs_caffeine_sample/cloud_storage-sample", "tencent", count_tencent),
    ("cloudphysics_libCacheSim/cloudPhysicsIO.vscsi", "vscsi", count_vscsi),
    ("cloudphysics_libCacheSim/cloudPhysicsIO.csv", "vscsi-csv", count_vscsi_csv),
    ("mqsim_umass_websearch_tpcc/wsrch-small.trace", "disksim", count_ascii),
    ("mqsim_umass_websearch_tpcc/tpcc-small.trace", "disksim", count_ascii),
    ("ssdsim_hust_financial1/example.ascii", "disksim", count_ascii),
    ("disksim_hpl_validation/ascii.trace", "disksim", count_ascii),
    (
        "fiu_mail_excerpt/DERIVED_cheetah.cs.fiu.edu-110108-113008.1.head10000.blkparse",
        "fiu",
        count_fiu,
    ),
    ("fiu_mail_excerpt/smalltrace.csv", "fiu", count_fiu_table),
    ("apress_blktrace_hdd/blktrace.txt", "blkparse", count_blkparse),
    ("wiscsee_blkparse/blkparse-output.txt", "blkparse", count_blkparse),
    ("wiscsee_blkparse/sqlitewal-update/blkparse-events-for-ftlsim.txt", "wiscsee", count_wiscsee),
    (
        "wiscsee_blkparse/sqlitewal-update/blkparse-events-for-ftlsim-mkfs.txt",
        "wiscsee",
        count_wiscsee,
    ),
]


@pytest.mark.parametrize("relpath, fmt, count", CASES, ids=[c[0].split("/")[0] for c in CASES])
def test_trace_info_matches_independent_counts(
    traces: Path, tmp_path: Path, relpath: str, fmt: str, count: Callable[[Path], tuple[int, int]]
) -> None:
    path = traces / relpath
    requests, reads = count(path)
    report = info_json(tmp_path, path)
    assert report["format"] == fmt
    assert report["requests"] == requests
    assert report["read"]["requests"] == reads
    writes = report["write"]["requests"]
    assert report["read_ratio"] == pytest.approx(reads / (reads + writes))
    assert report["footprint_pages"] > 0
    assert report["devices"], "at least one device"


def test_trace_info_table_and_known_figures(traces: Path) -> None:
    out = ftlab(
        "trace", "info", str(traces / "tencent_cbs_caffeine_sample/cloud_storage-sample.bz2")
    )
    assert out.returncode == 0, out.stderr
    assert "tencent (bzip2)" in out.stdout
    assert "50,000" in out.stdout
    assert "2,038 kept of 2,038" in out.stdout
    assert "overwrite factor" in out.stdout and "1.03" in out.stdout


def test_run_with_device_filter_and_compaction(traces: Path, tmp_path: Path) -> None:
    path = traces / "tencent_cbs_caffeine_sample/cloud_storage-sample"
    rows = [r for r in csv.reader(path.open()) if r[4] == "1125"]
    target = tmp_path / "r.json"
    out = ftlab("run", "--trace", str(path), "--device", "1125", "--verify", "--json", str(target))
    assert out.returncode == 0, out.stderr
    assert "addresses compacted" in out.stdout and "device fitted" in out.stdout
    report = json.loads(target.read_text())
    assert report["metrics"]["host"]["requests"] == len(rows)
    assert report["metrics"]["host"]["read_requests"] == sum(r[3] == "0" for r in rows)
    assert report["trace"]["devices"] == ["1125"]
    assert report["source"]["format"] == "tencent"


def test_unknown_device_lists_the_present_ones(traces: Path) -> None:
    out = ftlab(
        "run",
        "--trace",
        str(traces / "msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv"),
        "--device",
        "hm_9",
    )
    assert out.returncode == 2
    assert "hm_9" in out.stderr and "hm_0" in out.stderr


def test_merged_layout_and_fixed_device(traces: Path, tmp_path: Path) -> None:
    path = traces / "ssdsim_hust_financial1/example.ascii"
    target = tmp_path / "r.json"
    out = ftlab(
        "run", "--trace", str(path), "--preset", "small", "--device-layout", "merged",
        "--compact", "never", "--json", str(target), "-q",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    report = json.loads(target.read_text())
    assert report["trace"]["compacted"] is False
    assert report["trace"]["device_sized_to_trace"] is False
    assert report["trace"]["device_layout"] == "merged"
    assert report["config"]["geometry"]["blocks_per_plane"] == 128


# Bad input: every format stops at the first bad line with file, line and reason.

BAD = [
    ("msr", "1,hm,0,Read,0,512,1\n2,hm,0,Erase,0,512,1\n", 2, "Type `Erase`"),
    (
        "systor",
        "Timestamp,Response,IOType,LUN,Offset,Size\n1.0,,R,0,0,4096\n1.0,,R,0,x,4096\n",
        3,
        "Offset `x`",
    ),
    ("tencent", "1,0,8,0,7\n1,0,8,0\n", 2, "4 field(s) where 5"),
    ("spc", "0,1,512,r,0.0\n0,1,512,q,0.1\n", 2, "Opcode `q`"),
    ("disksim", "0 0 8 8 0\n100 0 16 8 1\n200 0 sixteen 8 1\n", 3, "lba `sixteen`"),
    ("fiu", "1 2 nfsd 8 8 W 6 0\n2 2 nfsd 8 8 Z 6 0\n", 2, "operation `Z`"),
    ("blkparse", "8,0 1 1 0.1 7 D W 8 + 8 [x]\n8,0 1 2 0.2 7 D W 8 + eight [x]\n", 2, "eight"),
    ("fio", "fio version 3 iolog\n5 /dev/sdb read 0 4096\n6 /dev/sdb zap 0 1\n", 3, "zap"),
    (
        "wiscsee",
        "7 D read 0 4096 0.1 0 False\n7 D flush 0 4096 0.2 0.1 True\n",
        2,
        "operation `flush` is not read, write or discard",
    ),
    (
        "vscsi-csv",
        "version,time,op,size,lbn\n1,0,2a,512,8\n1,1,zz,512,8\n",
        3,
        "op `zz` is not a SCSI opcode",
    ),
]


@pytest.mark.parametrize("fmt, text, line, reason", BAD, ids=[b[0] for b in BAD])
def test_bad_line_names_file_line_and_reason(
    tmp_path: Path, fmt: str, text: str, line: int, reason: str
) -> None:
    path = tmp_path / f"bad.{fmt}"
    path.write_text(text)
    out = ftlab("run", "--trace", str(path), "--format", fmt)
    assert out.returncode == 2
    assert f"{path}:{line}:" in out.stderr and reason in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    # Auto-detection still finds the format and the same error.
    out = ftlab("run", "--trace", str(path))
    assert f"{path}:{line}:" in out.stderr and reason in out.stderr, out.stderr


def test_bad_binary_record(tmp_path: Path) -> None:
    record = struct.pack("<IIIHHQQ", 1, 4096, 1, 0x2A, 0x0100, 8, 5)
    path = tmp_path / "t.vscsi"
    path.write_bytes(record * 3 + record[:20])
    out = ftlab("run", "--trace", str(path))
    assert out.returncode == 2
    assert f"{path}:4: record at byte 96: truncated" in out.stderr


def test_skip_bad_lines_reports_count_and_first_few(tmp_path: Path) -> None:
    path = tmp_path / "t.trace"
    lines = []
    for i in range(40):
        lines.append(f"{i * 1000} 0 {i * 8} 8 0\n")
        if i % 4 == 0:
            lines.append(f"{i * 1000} 0 bad{i} 8 0\n")
    path.write_text("".join(lines))
    target = tmp_path / "r.json"
    out = ftlab("run", "--trace", str(path), "--skip-bad-lines", "--json", str(target))
    assert out.returncode == 0, out.stderr
    assert "10 bad trace line(s) skipped" in out.stderr
    assert f"{path}:2: lba `bad0`" in out.stderr
    assert out.stderr.count(str(path)) == 5
    report = json.loads(target.read_text())
    assert report["metrics"]["host"]["requests"] == 40
    assert report["trace"]["diagnostics"]["bad_lines"] == 10


def test_unrecognisable_and_empty_traces(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("hello world\n")
    out = ftlab("trace", "info", str(path))
    assert out.returncode == 2 and "cannot tell the trace format" in out.stderr
    path.write_text("")
    out = ftlab("run", "--trace", str(path))
    assert out.returncode == 2 and "empty" in out.stderr


def test_traces_without_operations_say_what_to_replay(traces: Path) -> None:
    base = traces / "cloudphysics_libCacheSim"
    for name, what in [
        ("cloudPhysicsIO.txt", "every line holds a single number"),
        ("cloudPhysicsIO.oracleGeneral.bin", "a libCacheSim oracleGeneral trace"),
    ]:
        path = base / name
        out = ftlab("run", "--trace", str(path), "--mapping-only", "--precondition", "none")
        assert out.returncode == 2
        assert f"{path}: {what}" in out.stderr, out.stderr
        assert "cannot be replayed" in out.stderr and ".vscsi or .csv" in out.stderr
        assert "Traceback" not in out.stderr


def test_unsorted_timestamps_are_reported(traces: Path, tmp_path: Path) -> None:
    path = traces / "snia_systor17_caffeine_sample/systor17-traces-sample.csv"
    assert info_json(tmp_path, path)["timestamp_inversions"] > 0
    out = ftlab("run", "--trace", str(path))
    assert out.returncode == 0, out.stderr
    assert "reordered" in out.stdout
    target = tmp_path / "r.json"
    out = ftlab("run", "--trace", str(path), "--set", 'trace.order="clamp"', "--json", str(target))
    assert out.returncode == 0, out.stderr
    assert json.loads(target.read_text())["trace"]["clamped"] > 0


def test_compressed_and_plain_give_identical_reports(traces: Path, tmp_path: Path) -> None:
    base = traces / "snia_systor17_caffeine_sample"
    reports = []
    for name in ("systor17-traces-sample.csv", "systor17-traces-sample.csv.gz"):
        target = tmp_path / f"{name}.json"
        out = ftlab("run", "--trace", str(base / name), "--json", str(target), "-q")
        assert out.returncode == 0, out.stderr
        reports.append(json.loads(target.read_text()))
    assert reports[0]["metrics"] == reports[1]["metrics"]
    assert reports[1]["trace"]["compression"] == "gzip"


def test_trace_formats_lists_examples() -> None:
    out = ftlab("trace", "formats")
    assert out.returncode == 0
    names = ("msr", "systor", "tencent", "spc", "disksim", "vscsi", "fiu", "blkparse", "fio")
    for name in (*names, "wiscsee", "vscsi-csv", "alibaba"):
        assert name in out.stdout


def test_converted_trace_runs_as_its_source(traces: Path, tmp_path: Path) -> None:
    """`ftlab trace convert` writes the binary form; a run of it reports what a run of the
    source does (a multi-device MSR excerpt), and a cut copy is a clear error."""
    source = traces / "msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv"
    converted = tmp_path / "t.ftl"
    out = ftlab("trace", "convert", str(source), str(converted))
    assert out.returncode == 0, out.stderr
    assert "records of msr" in out.stdout
    assert converted.stat().st_size < source.stat().st_size
    reports = []
    for path in (source, converted):
        target = tmp_path / f"{path.name}.json"
        out = ftlab("run", "--trace", str(path), "--json", str(target), "-q")
        assert out.returncode == 0, out.stderr
        reports.append(json.loads(target.read_text()))
    assert reports[1]["trace"]["format"] == "ftlab"
    assert reports[0]["metrics"] == reports[1]["metrics"]
    assert reports[0]["trace"]["devices"] == reports[1]["trace"]["devices"]
    cut = tmp_path / "cut.ftl"
    cut.write_bytes(converted.read_bytes()[:-5])
    out = ftlab("run", "--trace", str(cut), "-q")
    assert out.returncode != 0
    assert "truncated" in out.stderr and "Traceback" not in out.stderr


def test_per_volume_runs_in_parallel_equal_the_runs_one_by_one(tmp_path: Path) -> None:
    """`replay_volumes` (`ftlab run --per-volume`) with 2 jobs gives, volume by volume,
    the summary of a run of that volume alone."""
    import ftlab

    trace = tmp_path / "three.trace"
    lines = [f"{i * 1000} {i % 3} {(i * 7919) % 4096 * 8} 8 {(i // 3) % 2}" for i in range(600)]
    trace.write_text("\n".join(lines) + "\n")
    sets = ["geometry.pages_per_block=16", "geometry.channels=2"]
    table = ftlab.replay_volumes(
        trace, "page", sets=sets, jobs=2, out=tmp_path / "v.parquet", progress=False
    )
    assert table.height == 3
    columns = [name for name, _ in ftlab._core.summary_columns() if name in table.columns]
    for row in table.iter_rows(named=True):
        (name,) = json.loads(row["trace.devices"])
        alone = ftlab.simulate("page", trace=trace, sets=[*sets, f'trace.devices=["{name}"]'])
        assert alone.summary["requests"] == 200
        for column in columns:
            if column != "source":
                assert row[column] == alone.summary[column], (name, column)
    fleet = ftlab.fleet_summary(table)
    assert fleet["volumes"] == 3 and fleet["requests"] == 600
