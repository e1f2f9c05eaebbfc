"""The store under `ftlab serve`: one owner per store, damaged files refused or reported
(`ftlab store check` / `repair`), media errors instead of silent corruption."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from nbd_crash import BLOCK, NbdClient, block_bytes
from nbd_helpers import SMALL_DEVICE, Served


def store_digest(store: Path) -> dict[str, str]:
    """Every file of the store but `lock` (which names the last owner's process)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(store.iterdir())
        if p.is_file() and p.name != "lock"
    }


def serve_once(store: Path, ftl: str = "page") -> subprocess.CompletedProcess[str]:
    """`ftlab serve` expected to refuse to start."""
    return subprocess.run(
        [sys.executable, "-m", "ftlab", "serve", "--ftl", ftl, "--preset", "small",
         "--store", str(store), "--listen", "127.0.0.1:0",
         *[a for s in SMALL_DEVICE for a in ("--set", s)]],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_second_server_on_a_live_store_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    first = Served(store, ftl="dftl", sets=SMALL_DEVICE)
    try:
        client = NbdClient(first.host, first.port)
        for block in range(64):
            client.write(block * BLOCK, block_bytes(block, 1))
        client.flush()
        before = store_digest(store)
        second = serve_once(store, ftl="dftl")
        assert second.returncode == 2, second.stderr
        assert f"in use by process {first.proc.pid}" in second.stderr, second.stderr
        assert store_digest(store) == before
        # The first server goes on serving what it holds.
        assert client.read(0, 64 * BLOCK) == b"".join(block_bytes(b, 1) for b in range(64))
        client.close()
    finally:
        assert first.stop() == 0, first.text()
    # Its owner gone, the store opens again.
    again = Served(store, ftl="dftl", sets=SMALL_DEVICE)
    assert again.stop() == 0, again.text()


def test_a_start_that_cannot_listen_leaves_the_store_untouched(tmp_path: Path) -> None:
    store = tmp_path / "store"
    served = Served(store, sets=SMALL_DEVICE)
    client = NbdClient(served.host, served.port)
    client.write(0, block_bytes(0, 1))
    client.close()
    served.kill()  # unclean: the next start would recover and write a checkpoint
    before = store_digest(store)
    busy = Served(tmp_path / "other", sets=SMALL_DEVICE)  # holds a port
    try:
        out = subprocess.run(
            [sys.executable, "-m", "ftlab", "serve", "--ftl", "page", "--preset", "small",
             "--store", str(store), "--listen", busy.address,
             *[a for s in SMALL_DEVICE for a in ("--set", s)]],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        assert busy.stop() == 0, busy.text()
    assert out.returncode == 2 and f"cannot listen on {busy.address}" in out.stderr, out.stderr
    assert store_digest(store) == before
