"""IOPS of `ftlab serve` per scheme: fio's nbd engine over loopback, 4 KiB random writes
then random reads at queue depth 32 (one job), --timing none, the `small` preset (2 GiB).

    python scripts/nbd_bench.py [--seconds 5] [--schemes page,dftl,...]

Prints a Markdown table (the README's "Block device (NBD)" figures)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))

from nbd_helpers import Served  # noqa: E402

from ftlab import _core  # noqa: E402


def fio(uri: str, rw: str, seconds: int, tmp: Path) -> float:
    job = tmp / f"{rw}.fio"
    job.write_text(
        f"[j]\nioengine=nbd\nuri={uri}\nrw={rw}\nbs=4k\niodepth=32\nsize=1g\n"
        f"time_based=1\nruntime={seconds}\nrandrepeat=0\n"
    )
    out = subprocess.run(["fio", "--output-format=json", str(job)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    j = json.loads(out.stdout[out.stdout.index("{") :])["jobs"][0]
    side = "write" if "write" in rw else "read"
    return float(j[side]["iops"])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--schemes", default=",".join(n for n, _ in _core.schemes()))
    args = ap.parse_args()
    print("| scheme | 4 KiB random writes (IOPS) | 4 KiB random reads (IOPS) |")
    print("| --- | ---: | ---: |")
    for ftl in args.schemes.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            served = Served(Path(tmp) / "store", ftl=ftl)
            try:
                if ftl == "aftl":
                    print(f"| {ftl} | (append-only: random writes refused) | - |", flush=True)
                    continue
                w = fio(served.uri, "randwrite", args.seconds, Path(tmp))
                r = fio(served.uri, "randread", args.seconds, Path(tmp))
                print(f"| {ftl} | {w:,.0f} | {r:,.0f} |", flush=True)
            finally:
                served.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
