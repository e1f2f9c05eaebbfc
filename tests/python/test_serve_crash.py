"""kill -9 under load: every write acknowledged before the last completed flush survives
the restart, and no block reads data that was never written to it (nbd_crash.py; the
100-cycle soak is scripts/nbd_soak.py)."""

from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from nbd_crash import BLOCK, Checker, NbdClient, QemuIoChecker, block_bytes, crash_cycle
from nbd_helpers import SMALL_DEVICE, Served, need


#: Page-level, demand-cached, log-block (FAST: merges in the middle of which the kill may
#: land) and learned (LeaFTL: segments relearned at start-up) schemes.
#: The page scheme also with the checker pipelining over 4 connections (a flush on one
#: covers the writes acknowledged on all) beside qemu-io's checked writes and flushes.
@pytest.mark.parametrize(
    ("ftl", "connections"), [("page", 1), ("dftl", 1), ("fast", 1), ("leaftl", 1), ("page", 4)]
)
def test_flushed_writes_survive_kill_9(tmp_path: Path, ftl: str, connections: int) -> None:
    need("fio", "fio")
    store = tmp_path / "store"
    rng = random.Random(5)
    checker = Checker(first=0, count=2048, seed=7)
    # 16 regions of 64 KiB at 40 MiB: past the checker's 8 MiB and fio's 24-40 MiB.
    qemu = QemuIoChecker(first_byte=40 << 20, regions=16, seed=3) if connections > 1 else None

    def start() -> Served:
        return Served(store, ftl=ftl, sets=SMALL_DEVICE, extra=["--verify"])

    for cycle in range(3):
        problems, startup = crash_cycle(start, checker, tmp_path, rng, connections, qemu)
        assert not problems, f"cycle {cycle}: " + "\n".join(problems[:20])
        assert "recovered after an unclean stop" in startup, startup
        # From the second cycle on, recovery starts from the map the last start-up wrote.
        assert cycle == 0 or "and its map" in startup, startup
    # The checker's flushes happened, so the survivors were checked against real data.
    assert checker.flushes > 3 and any(checker.flushed)
    assert qemu is None or (qemu.flushes > 3 and any(map(any, qemu.flushed)))


def test_a_store_reopens_only_with_its_own_scheme(tmp_path: Path) -> None:
    store = tmp_path / "store"
    served = Served(store, ftl="page", sets=SMALL_DEVICE)
    assert served.stop() == 0, served.text()
    out = subprocess.run(
        [sys.executable, "-m", "ftlab", "serve", "--ftl", "fast", "--preset", "small",
         "--store", str(store), "--listen", "127.0.0.1:0",
         *[a for s in SMALL_DEVICE for a in ("--set", s)]],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2
    assert "holds a store for scheme `page`" in out.stderr, out.stderr
    assert "use another --store" in out.stderr, out.stderr


def test_a_clean_shutdown_checkpoints_the_map_and_empties_the_trim_log(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    served = Served(store, ftl="page", sets=SMALL_DEVICE)
    client = NbdClient(served.host, served.port)
    for block in range(64):
        client.write(block * BLOCK, block_bytes(block, 1))
    client.request(4, 0, 16 * BLOCK)  # TRIM blocks 0-15
    client.flush()
    client.close()
    assert (store / "trims").stat().st_size > 0
    assert served.stop() == 0, served.text()
    checkpoint = json.loads((store / "checkpoint").read_text())
    assert checkpoint["clean"] and checkpoint["map"], checkpoint
    # One little-endian u32 per logical page: the 16 trimmed pages unmapped, 48 mapped.
    raw = (store / checkpoint["map"]).read_bytes()
    entries = struct.unpack(f"<{len(raw) // 4}I", raw)
    assert sum(e != 0xFFFFFFFF for e in entries) == 48
    assert all(e == 0xFFFFFFFF for e in entries[:16])
    assert (store / "trims").stat().st_size == 0
    # Reopened: the trimmed blocks still read as zeros, the others as written. The
    # session's checkpoint names the clean one's map (unchanged: nothing was rebuilt)
    # rather than writing it again.
    map_file = (store / checkpoint["map"]).stat().st_ino
    again = Served(store, ftl="page", sets=SMALL_DEVICE)
    session = json.loads((store / "checkpoint").read_text())
    assert not session["clean"] and session["map"] == checkpoint["map"], session
    # (A map written again would be a new file, renamed into place.)
    assert (store / checkpoint["map"]).stat().st_ino == map_file
    assert sorted(p.name for p in store.glob("map-*")) == [checkpoint["map"]]
    reader = NbdClient(again.host, again.port)
    assert reader.read(0, 16 * BLOCK) == bytes(16 * BLOCK)
    assert reader.read(16 * BLOCK, BLOCK) == block_bytes(16, 1)
    # Written over, then killed: recovery from that map and the pages programmed since.
    reader.write(20 * BLOCK, block_bytes(20, 2))
    reader.flush()
    reader.close()
    again.kill()
    last = Served(store, ftl="page", sets=SMALL_DEVICE)
    assert "and its map" in last.text(), last.text()
    reader = NbdClient(last.host, last.port)
    assert reader.read(0, 16 * BLOCK) == bytes(16 * BLOCK)
    assert reader.read(16 * BLOCK, BLOCK) == block_bytes(16, 1)
    assert reader.read(20 * BLOCK, BLOCK) == block_bytes(20, 2)
    reader.close()
    assert last.stop() == 0, last.text()
