"""IOPS and recovery time of `ftlab serve` per scheme: fio's nbd engine over loopback, one
job at queue depth 32, `--timing none` (mapping only), the `small` preset (2 GiB).

    python scripts/nbd_bench.py [--seconds 5] [--schemes page,dftl,...]
                                [--log-block-buffer 4MiB]

Per scheme, on a new store: 4 KiB random writes over the first GiB for `--seconds`; then
the server is killed (SIGKILL) and restarted, and the recovery time it reports is taken
(the OOB scan and the scheme's rebuild after an unclean stop, over what the writes left);
then 4 KiB random reads on the recovered device; then a clean shutdown, bounded by
`--shutdown-timeout` (a scheme still writing its buffer back then is killed, and the
table says so). AFTL accepts appends only: its writes are sequential, 1 GiB once, from
offset 0. Host stacks (STACK+SCHEME) are not served by `ftlab serve`, so AFTL runs alone.

The log-block schemes pay a merge for nearly every random page write: with the preset's
64 MiB write buffer their measured writes would mostly fill the buffer, and the clean
shutdown would then merge for minutes. They run with a smaller buffer
(`--log-block-buffer`), which the table notes.

Prints a Markdown table (the figures of docs/guide/block-device.md)."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))

from nbd_helpers import Served  # noqa: E402

from ftlab import _core  # noqa: E402

LOG_BLOCK = {s["name"] for s in json.loads(_core.scheme_info()) if s["family"] == "log-block"}


def fio(uri: str, rw: str, seconds: int | None, tmp: Path) -> float:
    """IOPS of one fio job: time-based over the first GiB, or (no `seconds`) 1 GiB once."""
    timed = f"time_based=1\nruntime={seconds}\n" if seconds else ""
    job = tmp / f"{rw}.fio"
    job.write_text(
        f"[j]\nioengine=nbd\nuri={uri}\nrw={rw}\nbs=4k\niodepth=32\nsize=1g\n{timed}randrepeat=0\n"
    )
    out = subprocess.run(["fio", "--output-format=json", str(job)], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    j = json.loads(out.stdout[out.stdout.index("{") :])["jobs"][0]
    side = "write" if "write" in rw else "read"
    return float(j[side]["iops"])


def recovery_ms(served: Served) -> str:
    line = next((x for x in served.log if "ready" in x), "")
    m = re.search(r"in ([0-9.]+) ms", line)
    return f"{float(m.group(1)):,.0f}" if m else "?"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--schemes", default=",".join(n for n, _ in _core.schemes()))
    ap.add_argument("--log-block-buffer", default="4MiB")
    ap.add_argument("--shutdown-timeout", type=float, default=120)
    args = ap.parse_args()
    print(
        "| scheme | 4 KiB random writes (IOPS) | 4 KiB random reads (IOPS) | "
        "recovery after kill -9 (ms) | note |"
    )
    print("| --- | ---: | ---: | ---: | --- |")
    for ftl in args.schemes.split(","):
        notes = []
        sets = []
        if ftl in LOG_BLOCK:
            sets.append(f'buffer.size_bytes="{args.log_block_buffer}"')
            notes.append(f"{args.log_block_buffer} write buffer")
        if ftl == "aftl":
            # Unbuffered, so that a refusal would answer the write that caused it.
            sets.append("buffer.size_bytes=0")
            notes.append("sequential writes (append-only), unbuffered")
        with tempfile.TemporaryDirectory() as tmp:
            store, work = Path(tmp) / "store", Path(tmp)
            served = Served(store, ftl=ftl, sets=sets)
            try:
                if ftl == "aftl":
                    w = fio(served.uri, "write", None, work)
                else:
                    w = fio(served.uri, "randwrite", args.seconds, work)
            finally:
                served.kill()
            served = Served(store, ftl=ftl, sets=sets)
            rec = recovery_ms(served)
            try:
                r = fio(served.uri, "randread", args.seconds, work)
            finally:
                try:
                    served.stop(args.shutdown_timeout)
                except subprocess.TimeoutExpired:
                    served.kill()
                    notes.append(f"clean shutdown over {args.shutdown_timeout:.0f} s: killed")
        print(f"| {ftl} | {w:,.0f} | {r:,.0f} | {rec} | {', '.join(notes)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
