"""Trace reading speed for `ftlab bench`: the standard benchmark trace written in every
text format (once, cached beside it), each read through by the core's reader.

The rate is trace lines per second of wall time, reading only (parsing into records, no
simulation), best of `repeat`.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Callable

from ftlab import _core

MD5 = "2c4787c7671c2f638777c4ab72859ce1"
Row = tuple[int, str, int, int, bool]  # time_ns, dev, lba (sectors), sectors, is_read


def _msr(r: Row) -> str:
    t, dev, lba, n, read = r
    op = "Read" if read else "Write"
    return f"{128166372000000000 + t // 100},hm,{dev},{op},{lba * 512},{n * 512},100\n"


def _systor(r: Row) -> str:
    t, dev, lba, n, read = r
    s, ns = divmod(t, 1_000_000_000)
    op = "R" if read else "W"
    return f"{1456095145 + s}.{ns:09d},0.000100000,{op},{dev},{lba * 512},{n * 512}\n"


def _tencent(r: Row) -> str:
    t, dev, lba, n, read = r
    return f"{1538323200 + t // 1_000_000_000},{lba},{n},{0 if read else 1},{dev}\n"


def _spc(r: Row) -> str:
    t, dev, lba, n, read = r
    s, ns = divmod(t, 1_000_000_000)
    return f"{dev},{lba},{n * 512},{'r' if read else 'w'},{s}.{ns // 1000:06d}\n"


def _fiu(r: Row) -> str:
    t, dev, lba, n, read = r
    return f"{t} 4257 nfsd {lba} {n} {'R' if read else 'W'} 6 {dev} {MD5}\n"


def _blkparse(r: Row) -> str:
    t, dev, lba, n, read = r
    s, ns = divmod(t, 1_000_000_000)
    op = "R" if read else "W"
    return f"  8,16   1 {lba % 100000:>8} {s:>5}.{ns:09d} 4257  D   {op} {lba} + {n} [java]\n"


def _wiscsee(r: Row) -> str:
    t, dev, lba, n, read = r
    s, ns = divmod(t, 1_000_000_000)
    op = "read" if read else "write"
    return f"4257 D {op} {lba * 512} {n * 512} {s}.{ns:09d} 0.000001 True\n"


def _vscsi_csv(r: Row) -> str:
    t, dev, lba, n, read = r
    return f"1,{5633898 + t // 1_000_000_000},{'28' if read else '2a'},{n * 512},{lba}\n"


def _alibaba(r: Row) -> str:
    t, dev, lba, n, read = r
    us = 1577808000000000 + t // 1000
    return f"{dev},{'R' if read else 'W'},{lba * 512},{n * 512},{us}\n"


def _fio(r: Row) -> str:
    t, dev, lba, n, read = r
    return f"{t // 1000} /dev/sdb {'read' if read else 'write'} {lba * 512} {n * 512}\n"


WRITERS: dict[str, tuple[str, Callable[[Row], str]]] = {
    "msr": ("", _msr),
    "systor": ("Timestamp,Response,IOType,LUN,Offset,Size\n", _systor),
    "tencent": ("", _tencent),
    "spc": ("", _spc),
    "fiu": ("", _fiu),
    "blkparse": ("", _blkparse),
    "wiscsee": ("", _wiscsee),
    "vscsi-csv": ("version,time,op,size,lbn\n", _vscsi_csv),
    "fio": ("fio version 3 iolog\n0 /dev/sdb add\n", _fio),
    "alibaba": ("", _alibaba),
}


def converted(trace: Path, echo: Callable[[str], Any]) -> list[tuple[str, Path]]:
    """The benchmark trace in every text format (DiskSim ASCII itself, gzipped too)."""
    out = [("disksim", trace)]
    rows: list[Row] | None = None
    for name, (header, write) in WRITERS.items():
        path = trace.with_name(f"{trace.stem}.{name}")
        if not path.is_file():
            if rows is None:
                echo("writing the benchmark trace in every text format (once) ...")
                rows = []
                with open(trace) as f:
                    for line in f:
                        t, dev, lba, n, op = line.split()[:5]
                        rows.append((int(t), dev, int(lba), int(n), int(op) & 1 == 1))
            partial = path.with_suffix(".partial")
            with open(partial, "w") as f:
                f.write(header)
                f.writelines(map(write, rows))
            partial.replace(path)
        out.append((name, path))
    gz = trace.with_name(trace.name + ".gz")
    if not gz.is_file():
        partial = gz.with_suffix(".partial")
        with open(trace, "rb") as src, gzip.open(partial, "wb", compresslevel=6) as dst:
            dst.write(src.read())
        partial.replace(gz)
    out.append(("disksim", gz))
    return out


def measure(trace: Path, repeat: int, echo: Callable[[str], Any]) -> list[dict[str, Any]]:
    results = []
    for name, path in converted(trace, echo):
        best: dict[str, Any] | None = None
        for _ in range(repeat):
            r = json.loads(_core.read_speed(str(path), sets=[f'trace.format="{name}"']))
            if best is None or r["lines_per_second"] > best["lines_per_second"]:
                best = r
        assert best is not None
        results.append(best)
    return results


def rows(results: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    return [
        (
            r["format"],
            r["compression"],
            f"{r['lines']:,}",
            f"{r['bytes'] / 2**20:,.1f}",
            f"{r['seconds']:.3f}",
            f"{r['lines_per_second'] / 1e6:.2f}",
        )
        for r in results
    ]
