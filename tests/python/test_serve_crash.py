"""kill -9 under load: every write acknowledged before the last completed flush survives
the restart, and no block reads data that was never written to it (nbd_crash.py; the
100-cycle soak is scripts/nbd_soak.py)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from nbd_crash import Checker, crash_cycle
from nbd_helpers import SMALL_DEVICE, Served, need


@pytest.mark.parametrize("ftl", ["page", "dftl"])
def test_flushed_writes_survive_kill_9(tmp_path: Path, ftl: str) -> None:
    need("fio", "fio")
    store = tmp_path / "store"
    rng = random.Random(5)
    checker = Checker(first=0, count=2048, seed=7)

    def start() -> Served:
        return Served(store, ftl=ftl, sets=SMALL_DEVICE, extra=["--verify"])

    for cycle in range(3):
        problems, startup = crash_cycle(start, checker, tmp_path, rng)
        assert not problems, f"cycle {cycle}: " + "\n".join(problems[:20])
        assert "recovered after an unclean stop" in startup, startup
    # The checker's flushes happened, so the survivors were checked against real data.
    assert checker.flushes > 3 and any(checker.flushed)


def test_a_scheme_that_cannot_recover_says_so(tmp_path: Path) -> None:
    store = tmp_path / "store"
    served = Served(store, ftl="fast", sets=SMALL_DEVICE)
    served.kill()
    out = subprocess.run(
        [sys.executable, "-m", "ftlab", "serve", "--ftl", "fast", "--preset", "small",
         "--store", str(store), "--listen", "127.0.0.1:0",
         *[a for s in SMALL_DEVICE for a in ("--set", s)]],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2
    assert "scheme `fast` cannot recover its state from the store" in out.stderr, out.stderr
