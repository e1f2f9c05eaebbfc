"""fio's nbd engine against `ftlab serve` and against `qemu-nbd` on a raw file, on the same
disk, in one run (issue 31's table).

    python scripts/nbd_vs_qemu.py [--seconds 5] [--ftl page] [--dir /var/tmp] [--set K=V]...
                                  [--preallocate] [--no-sync-poll]

Each server gets a new store (ftlab: `--preset small`, 2 GiB raw, `--timing none`) or a new
sparse raw file of the same size (qemu-nbd, its default writeback cache, so that FLUSH is
an fdatasync), under `--dir`. Lines, all within the first GiB: 128 KiB sequential write
(1 GiB once, QD32), 4 KiB random write at QD32 and QD1, 4 KiB random read at QD32 and QD1
(`--seconds` each), one FLUSH timed right after the QD32 random writes, and write + flush:
4 KiB random writes at QD1, each followed by a FLUSH (fio's `fsync=1`), per second, with the
mean FLUSH latency, on the new device (first) and after the rest (last).

Prints a Markdown table."""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))

from nbd_crash import NbdClient  # noqa: E402
from nbd_helpers import Served  # noqa: E402

WRITE_FLUSH = ("write + flush QD1 (writes/s)", "randwrite", "4k", 1, "fsync=1\n", True)
#: (label, rw, block size, queue depth, extra fio options, time-based); FIRST_FLUSH: one
#: FLUSH timed right after the line before it.
FIRST_FLUSH = ("first FLUSH after the QD32 random writes (ms)", "", "", 0, "", False)
LINES = [
    ("write + flush QD1, new device (writes/s)", *WRITE_FLUSH[1:]),
    ("128 KiB seq write QD32 (MiB/s)", "write", "128k", 32, "", False),
    ("4 KiB rand write QD32 (IOPS)", "randwrite", "4k", 32, "", True),
    FIRST_FLUSH,
    ("4 KiB rand write QD1 (IOPS)", "randwrite", "4k", 1, "", True),
    ("4 KiB rand read QD32 (IOPS)", "randread", "4k", 32, "", True),
    ("4 KiB rand read QD1 (IOPS)", "randread", "4k", 1, "", True),
    ("write + flush QD1, after the above (writes/s)", *WRITE_FLUSH[1:]),
]


def timed_flush(host: str, port: int) -> str:
    client = NbdClient(host, port)
    t0 = time.perf_counter()
    client.flush()
    ms = (time.perf_counter() - t0) * 1e3
    client.close()
    return f"{ms:,.1f}"


def measure(host: str, port: int, seconds: int, tmp: Path) -> list[str]:
    uri = f"nbd://{host}:{port}/ftlab"
    return [
        timed_flush(host, port) if line is FIRST_FLUSH else fio(uri, line, seconds, tmp)
        for line in LINES
    ]


def fio(uri: str, line: tuple[str, str, str, int, str, bool], seconds: int, tmp: Path) -> str:
    label, rw, bs, qd, extra, timed = line
    job = tmp / "job.fio"
    run = f"time_based=1\nruntime={seconds}\n" if timed else ""
    job.write_text(
        f"[j]\nioengine=nbd\nuri={uri}\nrw={rw}\nbs={bs}\niodepth={qd}\nsize=1g\n"
        f"{run}{extra}randrepeat=0\n"
    )
    out = subprocess.run(["fio", "--output-format=json", str(job)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    j = json.loads(out.stdout[out.stdout.index("{") :])["jobs"][0]
    side = j["write" if "write" in rw else "read"]
    if "MiB/s" in label:
        return f"{side['bw_bytes'] / (1 << 20):,.0f}"
    text = f"{side['iops']:,.0f}"
    if extra.startswith("fsync"):
        text += f" (flush {j['sync']['lat_ns']['mean'] / 1e6:.2f} ms)"
    return text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--ftl", default="page")
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--set", dest="sets", action="append", default=[])
    ap.add_argument(
        "--preallocate",
        action="store_true",
        help="ftlab serve --preallocate, and qemu's raw file made with preallocation=full",
    )
    ap.add_argument(
        "--no-sync-poll", action="store_true", help="ftlab serve --no-sync-poll (no CPU kept busy)"
    )
    args = ap.parse_args()
    results: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        tmp = Path(d)
        served = Served(
            tmp / "store",
            ftl=args.ftl,
            preset="small",
            sets=args.sets,
            extra=(["--preallocate"] if args.preallocate else [])
            + (["--no-sync-poll"] if args.no_sync_poll else []),
        )
        try:
            results["ftlab"] = measure(served.host, served.port, args.seconds, tmp)
        finally:
            served.stop(600)
        shutil.rmtree(tmp / "store")
        raw = tmp / "disk.raw"
        size = 2 << 30
        full = ["-o", "preallocation=full"] if args.preallocate else []
        subprocess.run(
            ["qemu-img", "create", "-q", "-f", "raw", *full, str(raw), str(size)], check=True
        )
        port = free_port()
        qemu = subprocess.Popen(
            ["qemu-nbd", "-f", "raw", "-x", "ftlab", "-b", "127.0.0.1", "-p", str(port),
             "-t", "-e", "8", str(raw)],
        )  # fmt: skip
        try:
            time.sleep(1)
            results["qemu-nbd"] = measure("127.0.0.1", port, args.seconds, tmp)
        finally:
            qemu.terminate()
            qemu.wait(30)
    head = (
        f"fio nbd engine, {args.seconds} s per line"
        + (", preallocated" if args.preallocate else "")
        + (", ftlab --no-sync-poll" if args.no_sync_poll else "")
    )
    print(f"| {head} | ftlab serve --ftl {args.ftl} | qemu-nbd |")
    print("|---|---:|---:|")
    for i, line in enumerate(LINES):
        print(f"| {line[0]} | {results['ftlab'][i]} | {results['qemu-nbd'][i]} |")


if __name__ == "__main__":
    main()
