"""The store under `ftlab serve`: one owner per store, damaged files refused or reported
(`ftlab store check` / `repair`), media errors instead of silent corruption."""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
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


def ftlab_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ftlab", *args], capture_output=True, text=True, timeout=120
    )


def written_store(tmp_path: Path, blocks: int = 64) -> Path:
    """A store holding blocks 0..`blocks` (version 1), cleanly shut down."""
    store = tmp_path / "store"
    served = Served(store, sets=SMALL_DEVICE)
    client = NbdClient(served.host, served.port)
    for block in range(blocks):
        client.write(block * BLOCK, block_bytes(block, 1))
    client.flush()
    client.close()
    assert served.stop() == 0, served.text()
    return store


def physical_page(store: Path, lpa: int) -> int:
    """Where the checkpoint's map places logical page `lpa`."""
    checkpoint = json.loads((store / "checkpoint").read_text())
    raw = (store / checkpoint["map"]).read_bytes()
    ppn: int = struct.unpack_from("<I", raw, 4 * lpa)[0]
    assert ppn != 0xFFFFFFFF
    return ppn


def regions(store: Path) -> tuple[int, int]:
    """Where the `store` file's erase counts and pages start (format 2: the records, the
    erase counts, then the pages from a 4 KiB boundary)."""
    meta = json.loads((store / "meta.json").read_text())
    assert meta["format"] == 2, meta
    erase_counts = 32 * meta["physical_pages"]
    pages = (erase_counts + 4 * meta["total_blocks"] + 4095) // 4096 * 4096
    return erase_counts, pages


def flip_byte(store: Path, lpa: int) -> None:
    at = regions(store)[1] + physical_page(store, lpa) * BLOCK + 100
    with open(store / "store", "r+b") as f:
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ 0x40]))


EIO = 5


def test_a_flipped_byte_is_a_media_error_on_that_request_only(tmp_path: Path) -> None:
    store = written_store(tmp_path)
    flip_byte(store, 5)
    flip_byte(store, 7)
    check = ftlab_cli("store", "check", str(store))
    assert check.returncode == 1, check.stdout + check.stderr
    assert "(logical page 5): its bytes do not match their checksum" in check.stdout
    assert "(logical page 7)" in check.stdout and "2 problems" in check.stdout, check.stdout
    served = Served(store, sets=SMALL_DEVICE)
    client = NbdClient(served.host, served.port)
    try:
        assert client.request(0, 5 * BLOCK, BLOCK)[0] == EIO
        assert client.request(0, 4 * BLOCK, 3 * BLOCK)[0] == EIO  # a range over it
        assert client.read(4 * BLOCK, BLOCK) == block_bytes(4, 1)  # the others go on
        assert client.read(6 * BLOCK, BLOCK) == block_bytes(6, 1)
        # Part of a damaged page written: the write fails and the page stays damaged.
        assert client.request(1, 7 * BLOCK, 512, b"\x01" * 512)[0] == EIO
        assert client.request(0, 7 * BLOCK, BLOCK)[0] == EIO
        # Written whole, it reads again.
        client.write(5 * BLOCK, block_bytes(5, 2))
        client.flush()
        assert client.read(5 * BLOCK, BLOCK) == block_bytes(5, 2)
        client.close()
    finally:
        assert served.stop() == 0, served.text()
    assert "media error: logical page 5 at physical page" in served.text(), served.text()


def test_a_truncated_store_file_is_refused_then_repaired(tmp_path: Path) -> None:
    store = written_store(tmp_path)
    data = store / "store"
    data.write_bytes(data.read_bytes()[: 32 * 600])
    before = store_digest(store)
    refused = serve_once(store)
    assert refused.returncode == 2, refused.stderr
    assert "store: 19200 bytes" in refused.stderr, refused.stderr
    assert "(truncated: the OOB records from physical page 600 on" in refused.stderr
    assert "ftlab store repair" in refused.stderr, refused.stderr
    assert store_digest(store) == before
    assert ftlab_cli("store", "check", str(store)).returncode == 1
    # The pages went with the records: repair rebuilds the 60 records cut off from the
    # checkpoint's map, with CRCs that cannot match, so that the lost pages read as media
    # errors, not as zeros (as do the 4 whose records were kept).
    repair = ftlab_cli("store", "repair", str(store))
    assert repair.returncode == 0, repair.stderr
    assert (
        "60 OOB records rebuilt from the checkpoint's map (60 of them over bytes that are gone)"
        in (repair.stdout)
    ), repair.stdout
    assert "logical page 5: its bytes were cut off with the store file" in repair.stdout
    served = Served(store, sets=SMALL_DEVICE)
    client = NbdClient(served.host, served.port)
    try:
        assert client.request(0, 5 * BLOCK, BLOCK)[0] == EIO
        assert client.request(0, 0, BLOCK)[0] == EIO  # its record kept, its bytes gone
        client.write(5 * BLOCK, block_bytes(5, 2))  # written whole, it reads again
        client.flush()
        assert client.read(5 * BLOCK, BLOCK) == block_bytes(5, 2)
        assert client.read(64 * BLOCK, BLOCK) == bytes(BLOCK)  # never written: zeros
        client.close()
    finally:
        assert served.stop() == 0, served.text()


def test_zeroed_records_are_refused_then_repaired(tmp_path: Path) -> None:
    store = written_store(tmp_path)
    with open(store / "store", "r+b") as f:
        f.write(bytes(regions(store)[0]))
    refused = serve_once(store)
    assert refused.returncode == 2, refused.stderr
    assert "the OOB records of 64 logical pages the checkpoint's map places are gone" in (
        refused.stderr
    ), refused.stderr
    check = ftlab_cli("store", "check", str(store))
    assert check.returncode == 1 and "64 problems" in check.stdout, check.stdout
    repair = ftlab_cli("store", "repair", str(store))
    assert "64 OOB records rebuilt" in repair.stdout, repair.stdout + repair.stderr
    served = Served(store, sets=SMALL_DEVICE, extra=["--verify"])
    client = NbdClient(served.host, served.port)
    assert client.read(0, 64 * BLOCK) == b"".join(block_bytes(b, 1) for b in range(64))
    # The device goes on: new writes, flushed, read back.
    for block in range(64, 128):
        client.write(block * BLOCK, block_bytes(block, 1))
    client.flush()
    assert client.read(64 * BLOCK, 64 * BLOCK) == b"".join(
        block_bytes(b, 1) for b in range(64, 128)
    )
    client.close()
    assert served.stop() == 0, served.text()


def records_read(text: str) -> tuple[int, int]:
    """The KiB of OOB records a clean reopen read, and the KiB the store holds."""
    found = re.search(r"\(([\d,]+) KiB of the ([\d,]+) KiB of OOB records read", text)
    assert found, text
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


def test_a_clean_reopen_reads_only_the_records_of_blocks_holding_data(tmp_path: Path) -> None:
    """A clean shutdown saves which blocks hold programmed pages; the next start-up reads
    their records alone (a 64-page store: a few blocks of the 512), also after garbage
    collection erased blocks (their bits cleared), and the data reads back verified."""
    store = written_store(tmp_path)
    again = Served(store, sets=SMALL_DEVICE, extra=["--verify"])
    try:
        read, total = records_read(again.text())
        assert 0 < read <= total // 8, again.text()
        client = NbdClient(again.host, again.port)
        assert client.read(0, 64 * BLOCK) == b"".join(block_bytes(b, 1) for b in range(64))
        # 80 MiB of overwrites of the first 4 MiB (beyond the 1 MiB write buffer), more
        # than the 64 MiB of flash: GC erases.
        for version in range(2, 22):
            for mib in range(4):
                blocks = range(mib * 256, (mib + 1) * 256)
                client.write(mib << 20, b"".join(block_bytes(b, version) for b in blocks))
        client.flush()
        client.close()
    finally:
        assert again.stop() == 0, again.text()
    third = Served(store, sets=SMALL_DEVICE, extra=["--verify"])
    try:
        read, total = records_read(third.text())
        assert 0 < read < total, third.text()
        client = NbdClient(third.host, third.port)
        assert client.read(0, 1024 * BLOCK) == b"".join(block_bytes(b, 21) for b in range(1024))
        client.close()
    finally:
        assert third.stop() == 0, third.text()
    erase_counts, pages = regions(store)
    counts = (store / "store").read_bytes()[erase_counts:pages]
    assert sum(struct.unpack_from(f"<{len(counts) // 4}I", counts)) > 0  # GC erased


def test_a_live_store_is_not_checked(tmp_path: Path) -> None:
    store = tmp_path / "store"
    served = Served(store, sets=SMALL_DEVICE)
    try:
        out = ftlab_cli("store", "repair", str(store))
        assert out.returncode == 2 and f"in use by process {served.proc.pid}" in out.stderr
    finally:
        assert served.stop() == 0, served.text()


ENOSPC = 28


def fill(directory: Path, leave: int) -> Path:
    """A file taking the free space of `directory`'s file system but `leave` bytes."""
    filler = directory / "filler"
    st = os.statvfs(directory)
    size = st.f_bavail * st.f_frsize - leave
    with open(filler, "ab") as f:
        os.posix_fallocate(f.fileno(), filler.stat().st_size, max(size, 4096))
    return filler


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 48 MiB tmpfs (root only)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mnt)],
        capture_output=True, text=True,
    )  # fmt: skip
    if mount.returncode != 0:
        pytest.skip(f"a small disk is needed (a tmpfs) and mount failed: {mount.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_makes_the_device_read_only(small_disk: Path) -> None:
    store = small_disk / "store"
    served = Served(store, sets=SMALL_DEVICE)
    client = NbdClient(served.host, served.port)
    try:
        for block in range(256):
            client.write(block * BLOCK, block_bytes(block, 1))
        client.flush()
        filler = fill(small_disk, leave=4 << 20)  # under the reserve (10 MiB here)
        time.sleep(0.3)
        assert client.request(1, 0, BLOCK, block_bytes(0, 2))[0] == ENOSPC
        assert client.request(4, 0, BLOCK)[0] == ENOSPC  # TRIM
        assert client.read(0, 256 * BLOCK) == b"".join(block_bytes(b, 1) for b in range(256))
        assert client.request(3, 0, 0)[0] == 0  # FLUSH
        filler.unlink()
        time.sleep(0.3)
        client.write(0, block_bytes(0, 2))
        client.flush()
        assert client.read(0, BLOCK) == block_bytes(0, 2)
        client.close()
    finally:
        assert served.stop() == 0, served.text()
    assert "the disk under the store is full" in served.text(), served.text()
    # A restart on a full disk serves reads.
    fill(small_disk, leave=0)
    again = Served(store, sets=SMALL_DEVICE, extra=["--verify"])
    try:
        assert "read-only until space is freed" in again.text(), again.text()
        client = NbdClient(again.host, again.port)
        assert client.read(0, BLOCK) == block_bytes(0, 2)
        assert client.read(BLOCK, 255 * BLOCK) == b"".join(block_bytes(b, 1) for b in range(1, 256))
        assert client.request(1, 0, BLOCK, block_bytes(0, 3))[0] == ENOSPC
        client.close()
    finally:
        assert again.stop() == 0, again.text()


def test_a_sound_store_is_left_as_it_is(tmp_path: Path) -> None:
    store = written_store(tmp_path)
    before = store_digest(store)
    check = ftlab_cli("store", "check", str(store))
    assert check.returncode == 0 and "0 problems" in check.stdout, check.stdout + check.stderr
    repair = ftlab_cli("store", "repair", str(store))
    assert repair.returncode == 0 and "nothing to repair" in repair.stdout, repair.stdout
    assert store_digest(store) == before


def as_format_1(store: Path) -> None:
    """Rewrites a store in format 1: separate `oob`, `blocks` and `pages` files."""
    erase_counts, pages = regions(store)
    meta = json.loads((store / "meta.json").read_text())
    data = (store / "store").read_bytes()
    (store / "oob").write_bytes(data[:erase_counts])
    (store / "blocks").write_bytes(data[erase_counts : erase_counts + 4 * meta["total_blocks"]])
    (store / "pages").write_bytes(data[pages:])
    (store / "store").unlink()
    meta["format"] = 1
    (store / "meta.json").write_text(json.dumps(meta))


def test_a_format_1_store_is_converted_at_start_up(tmp_path: Path) -> None:
    store = written_store(tmp_path)
    as_format_1(store)
    check = ftlab_cli("store", "check", str(store))
    assert check.returncode != 0 and "a store of format 1" in check.stderr, check.stderr
    served = Served(store, sets=SMALL_DEVICE)
    client = NbdClient(served.host, served.port)
    assert client.read(0, 64 * BLOCK) == b"".join(block_bytes(b, 1) for b in range(64))
    client.close()
    assert served.stop() == 0, served.text()
    assert not any((store / name).exists() for name in ("oob", "blocks", "pages"))
    assert json.loads((store / "meta.json").read_text())["format"] == 2
    check = ftlab_cli("store", "check", str(store))
    assert check.returncode == 0 and "0 problems" in check.stdout, check.stdout + check.stderr


def test_a_store_of_an_unknown_format_is_refused(tmp_path: Path) -> None:
    store = written_store(tmp_path)
    meta = json.loads((store / "meta.json").read_text())
    meta["format"] = 9
    (store / "meta.json").write_text(json.dumps(meta))
    before = store_digest(store)
    refused = serve_once(store)
    assert refused.returncode == 2, refused.stderr
    assert "meta.json: a store of format 9; this ftlab reads format 2" in refused.stderr
    assert store_digest(store) == before
