"""How closely `ftlab serve --timing real` holds replies to the simulated SSD's completion
times (issue 31's pacing line): fio's nbd engine at queue depth 1 and at a 20,000 IOPS rate,
4 KiB random reads then writes over the first 256 MiB, against a new store each.

    python scripts/nbd_pacing.py [--seconds 5] [--ftl page] [--dir /var/tmp] [--tls]
        [--set K=V]...

`--tls` serves over TLS with a pre-shared key. fio's nbd engine cannot be the client then
(libnbd refuses a PSK file named in the URI it is given), so qemu-io is, and only the QD1
lines run: 4 KiB requests at consecutive offsets, one at a time, its own start-up in the
IOPS, no fio percentiles.

Prints a Markdown table of the server's pacing figures (from its shutdown line: how late
each reply went out after its simulated completion, the server's own time included) and
fio's latency percentiles (submission to completion)."""

from __future__ import annotations

import argparse
import json
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))

from nbd_helpers import Served, need  # noqa: E402

#: (label, fio rw, queue depth, rate in IOPS or 0 for none).
LINES = [
    ("4 KiB rand read QD1", "randread", 1, 0),
    ("4 KiB rand read QD32, 20k IOPS", "randread", 32, 20_000),
    ("4 KiB rand write QD1", "randwrite", 1, 0),
    ("4 KiB rand write QD32, 20k IOPS", "randwrite", 32, 20_000),
]

PACED = re.compile(
    r"paced replies \(--timing real\): ([\d,]+), sent after their simulated completion by "
    r"([\d.]+) us at the median, ([\d.]+) us at p99, ([\d.]+) us at most"
)


def fio(uri: str, rw: str, depth: int, rate: int, seconds: int) -> dict[str, float]:
    """One fio job on the first 256 MiB: for `seconds` (time-based), or once over the range
    (`seconds` 0)."""
    args = [
        need("fio", "fio"), "--ioengine=nbd", f"--uri={uri}", f"--rw={rw}", "--bs=4k",
        f"--iodepth={depth}", "--size=256m", "--name=pacing", "--output-format=json",
        "--randrepeat=1", "--lat_percentiles=1",
    ]  # fmt: skip
    if seconds:
        args += ["--time_based", f"--runtime={seconds}"]
    if rate:
        args.append(f"--rate_iops={rate}")
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=seconds + 600)
    # (fio may print notices before its JSON.)
    job = json.loads(out.stdout[out.stdout.index("{") :])["jobs"][0]
    side = job["read" if "read" in rw else "write"]
    # Submission to completion (the nbd engine's clat leaves out most of the wait).
    pct = side["lat_ns"].get("percentile", {})
    return {
        "iops": side["iops"],
        "p50_us": pct.get("50.000000", 0) / 1000,
        "p99_us": pct.get("99.000000", 0) / 1000,
    }


def qemu_io_qd1(served: Served, keys: Path, rw: str, seconds: int) -> dict[str, float]:
    """qemu-io over TLS (pre-shared key `keys`, identity alice), one request at a time: 4 KiB
    at consecutive offsets within the first 256 MiB, read from its standard input (about
    5,000 a second; `seconds` 0: the whole range once)."""
    count = min(5_000 * seconds, 65_536) if seconds else 65_536
    verb = "write" if rw == "randwrite" else "read"
    commands = "".join(f"{verb} {i * 4096} 4k\n" for i in range(count))
    args = [
        need("qemu-io", "qemu-utils"), "--object",
        f"tls-creds-psk,id=tls0,endpoint=client,dir={keys.parent},username=alice",
        "--image-opts",
        f"driver=nbd,host={served.host},port={served.port},export=ftlab,tls-creds=tls0",
        "-t", "none",
    ]  # fmt: skip
    start = time.monotonic()
    out = subprocess.run(args, input=commands, capture_output=True, text=True, timeout=900)
    took = time.monotonic() - start
    if out.returncode != 0 or "failed" in out.stdout + out.stderr:
        raise SystemExit(f"qemu-io failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return {"iops": count / took, "p50_us": 0.0, "p99_us": 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--ftl", default="page")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--set", action="append", default=[], dest="sets")
    ap.add_argument("--tls", action="store_true", help="serve over TLS (a pre-shared key)")
    args = ap.parse_args()
    print(
        "| line | IOPS | fio latency p50 / p99 (us) | paced replies | late p50 / p99 / max (us) |\n"
        "|---|---|---|---|---|"
    )
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        tls: list[str] = []
        if args.tls:
            keys = Path(tmp) / "keys.psk"
            keys.write_text(f"alice:{secrets.token_hex(32)}\n")
            tls = ["--tls-psk", str(keys)]

        for i, (label, rw, depth, rate) in enumerate(LINES):
            if args.tls and depth > 1:
                continue
            store = Path(tmp) / f"store{i}"
            if rw == "randread":  # something to read: the range written once, in a session
                # of its own (the pacing figures are the session's)
                filling = Served(store, ftl=args.ftl, sets=args.sets, extra=tls)
                try:
                    if args.tls:
                        qemu_io_qd1(filling, keys, "randwrite", seconds=0)
                    else:
                        fio(filling.uri, "write", 32, 0, seconds=0)
                finally:
                    filling.stop(120)
            served = Served(store, ftl=args.ftl, sets=args.sets, extra=["--timing", "real", *tls])
            try:
                if args.tls:
                    got = qemu_io_qd1(served, keys, rw, args.seconds)
                else:
                    got = fio(served.uri, rw, depth, rate, args.seconds)
            finally:
                served.stop(120)
            found = PACED.findall(served.text())
            if not found:
                raise SystemExit("no pacing line in the server's output:\n" + served.text())
            n, p50, p99, worst = found[-1]
            if args.tls:  # (consecutive offsets)
                label = label.replace("rand", "seq")
            fio_lat = f"{got['p50_us']:.0f} / {got['p99_us']:.0f}" if not args.tls else "-"
            print(
                f"| {label} | {got['iops']:,.0f} | {fio_lat} | {n} | {p50} / {p99} / {worst} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
