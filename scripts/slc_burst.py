"""Write latency of a phone-like burst workload with and without the SLC cache.

Builds a DiskSim trace of write bursts separated by idle gaps (sequential 128 KiB writes
and random 4 KiB writes, 4 to 48 MiB a burst, 5 s gaps) and replays it on the `phone`
preset after a full fill (`precondition.mode = "fill"`), once with the preset's SLC cache
and once with it off, printing the write latency (mean, p99) and the cache's figures.

    PYTHONPATH=python python3 scripts/slc_burst.py [--ftl page] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

PAGE = 4096
SECTOR = 512


def trace(path: Path, logical_bytes: int, seed: int) -> int:
    """Writes the bursts as DiskSim ASCII (ms, device, sector, sectors, flags); returns
    the number of requests."""
    rng = random.Random(seed)
    pages = logical_bytes // PAGE
    t_ms = 0.0
    n = 0
    with path.open("w") as f:
        for burst in range(24):
            size_mib = (4, 16, 48)[burst % 3]
            sequential = burst % 2 == 0
            req_pages = 32 if sequential else 1
            count = size_mib * 1024 * 1024 // (req_pages * PAGE)
            # 150 MB/s sequential (beyond what the TLC blocks take), 8K IOPS random.
            gap_ms = req_pages * PAGE / 150e3 if sequential else 0.125
            start = rng.randrange(pages - count * req_pages)
            for i in range(count):
                page = start + i * req_pages if sequential else rng.randrange(pages)
                sectors = req_pages * PAGE // SECTOR
                f.write(f"{t_ms:.4f} 0 {page * PAGE // SECTOR} {sectors} 0\n")
                t_ms += gap_ms
                n += 1
            t_ms += 5000.0
    return n


def run(ftl: str, path: Path, cache: bool) -> dict[str, object]:
    sets = ["precondition.mode=fill", "trace.device_size=config"]
    if not cache:
        sets += ["slc.static_fraction=0", "slc.dynamic_fraction=0"]
    cmd = [sys.executable, "-m", "ftlab", "run", "--ftl", ftl, "--preset", "phone"]
    cmd += ["--trace", str(path), "--format", "disksim", "-q", "--json", "-"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    report: dict[str, object] = json.loads(out)
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ftl", default="page")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    logical = int(16 * 1024 * 96 * PAGE * 0.92)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bursts.disksim"
        n = trace(path, logical, args.seed)
        print(f"{n} write requests in 24 bursts")
        for cache in (False, True):
            m = run(args.ftl, path, cache)["metrics"]
            assert isinstance(m, dict)
            w = m["latency"]["write"]
            line = (
                f"cache={'on ' if cache else 'off'} write mean={w['mean_ns'] / 1e3:.0f} us "
                f"p99={w['p99_ns'] / 1e3:.0f} us waf={m['waf']:.3f}"
            )
            if m["slc"]:
                s = m["slc"]
                line += (
                    f" hit_rate={s['hit_rate']:.3f} folds={s['folds']}"
                    f" pages_folded={s['pages_folded']} waf_added={s['waf_added']:.3f}"
                )
            print(line)


if __name__ == "__main__":
    main()
