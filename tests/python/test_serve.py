"""`ftlab serve` with real NBD clients: qemu-io's patterns, discards and zero writes on
every scheme, then a clean shutdown's report."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from nbd_helpers import SMALL_DEVICE, Served, need

from ftlab import _core

#: Every block-interface scheme (a zoned device is refused: NBD has no zone commands).
SCHEMES = [name for name, _ in _core.schemes(builtin=True) if name != "zns"]


def qemu_io(uri: str, *commands: str) -> str:
    """Runs qemu-io commands against the export; a pattern mismatch fails the test."""
    args = [need("qemu-io", "qemu-utils"), "-f", "raw", uri]
    for c in commands:
        args += ["-c", c]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0 and "failed" not in text, text
    return text


#: Writes at aligned and unaligned offsets, overwrites, discards and zero writes, each read
#: back with qemu-io's pattern check (offsets in bytes; the device has 4 KiB pages).
PATTERNS = [
    "write -P 0xa1 0 256k",
    "read -P 0xa1 0 256k",
    "write -P 0xb2 1000 5000",
    "read -P 0xa1 0 1000",
    "read -P 0xb2 1000 5000",
    "read -P 0xa1 6000 256000",
    "write -P 0xc3 8M 1M",
    "write -P 0xd4 8704k 64k",
    "read -P 0xc3 8M 512k",
    "read -P 0xd4 8704k 64k",
    "read -P 0xc3 8768k 256k",
    "read -P 0 20M 64k",
    "discard 8M 256k",
    "read -P 0 8M 256k",
    "read -P 0xc3 8448k 256k",
    "write -z 128k 64k",
    "read -P 0 128k 64k",
    "read -P 0xa1 192k 64k",
    "write -z 3000 2000",
    "read -P 0 3000 2000",
    "read -P 0xb2 1000 2000",
    "flush",
]


@pytest.mark.parametrize("ftl", SCHEMES)
def test_qemu_io_patterns_on_every_scheme(tmp_path: Path, ftl: str) -> None:
    need("qemu-io", "qemu-utils")
    # AMF's device refuses overwrites, which behind a write buffer would come with a later
    # flush: it is served unbuffered, so that a refusal answers the write that caused it.
    buffer = "0" if ftl == "aftl" else '"256KiB"'
    served = Served(
        tmp_path / "store", ftl=ftl, sets=[f"buffer.size_bytes={buffer}"], extra=["--verify"]
    )
    try:
        if ftl == "aftl":
            # Appends at the write pointers of two 16 MiB segments; an overwrite is refused
            # (EPERM) and changes nothing.
            qemu_io(
                served.uri,
                "write -P 0xa1 0 256k",
                "write -P 0xb2 256k 256k",
                "write -P 0xc3 16M 1M",
                "read -P 0xa1 0 256k",
                "read -P 0xb2 256k 256k",
                "read -P 0xc3 16M 1M",
                "read -P 0 20M 64k",
                "flush",
            )
            out = subprocess.run(
                ["qemu-io", "-f", "raw", served.uri, "-c", "write -P 0xee 0 4k"],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert "Operation not permitted" in out.stdout + out.stderr
            qemu_io(served.uri, "read -P 0xa1 0 256k")
        else:
            qemu_io(served.uri, *PATTERNS)
    finally:
        rc = served.stop()
    assert rc == 0, served.text()
    if ftl != "aftl":
        assert "failed" not in served.text(), served.text()


def test_qemu_img_map_shows_the_holes(tmp_path: Path) -> None:
    """Structured replies and BLOCK_STATUS (the `base:allocation` context): `qemu-img map`
    sees what was written as data and the rest (never written, or trimmed) as holes that
    read as zeros, after a restart too; qemu-io's reads go through structured replies."""
    qemu_img = need("qemu-img", "qemu-utils")
    store = tmp_path / "store"

    def data_extents(uri: str) -> list[tuple[int, int]]:
        args = [qemu_img, "map", "--output=json", "-f", "raw", uri]
        out = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        extents = json.loads(out.stdout)
        assert all(e["zero"] for e in extents if not e["data"]), extents
        return [(e["start"], e["start"] + e["length"]) for e in extents if e["data"]]

    mib = 1 << 20
    written = [(mib, mib + 65536), (4 * mib + 4096, 4 * mib + 8192)]
    served = Served(store, sets=SMALL_DEVICE)
    try:
        assert data_extents(served.uri) == []
        qemu_io(
            served.uri,
            *("write -P 0xa1 1M 64k", "write -P 0xb2 4M 8k", "discard 4M 4k"),
            *("read -P 0xa1 1M 64k", "read -P 0 4M 4k", "read -P 0xb2 4198400 4096"),
        )
        assert data_extents(served.uri) == written
    finally:
        assert served.stop() == 0, served.text()
    again = Served(store, sets=SMALL_DEVICE)
    try:
        assert data_extents(again.uri) == written
    finally:
        assert again.stop() == 0, again.text()


def test_shutdown_writes_the_run_report(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    served = Served(tmp_path / "store", sets=SMALL_DEVICE, json_out=report_path)
    try:
        qemu_io(served.uri, "write -P 0x5a 0 4M", "read -P 0x5a 0 4M", "flush")
    finally:
        assert served.stop() == 0, served.text()
    report = json.loads(report_path.read_text())
    host = report["metrics"]["host"]
    # The same report as `ftlab run`: 4 MiB in 4 KiB pages, written and read.
    assert report["ftl"] == "page" and report["source"]["kind"] == "device"
    assert host["pages_written"] == 1024 and host["pages_read"] == 1024
    assert report["metrics"]["flash"]["programs"]["host"] == 1024


def test_an_interrupt_during_start_up_stops_the_server(tmp_path: Path) -> None:
    # SIGTERM sent as soon as the "ready" line appears can land while `on_start` still
    # runs Python code: the KeyboardInterrupt it raises there must stop the server too.
    def on_start(startup: str, address: str) -> None:
        raise KeyboardInterrupt

    ticks: list[str] = []

    def tick(status: str) -> bool:
        ticks.append(status)
        return len(ticks) < 50  # about 10 s: the server would otherwise run on

    report = json.loads(
        _core.serve(
            "page", str(tmp_path / "store"), "127.0.0.1:0", False, False, on_start, tick,
            preset="small", sets=SMALL_DEVICE,
        )
    )  # fmt: skip
    assert report["ftl"] == "page"
    assert ticks == [], f"the server ran on for {len(ticks)} ticks after the interrupt"


def test_a_zoned_device_is_refused_with_the_reason(tmp_path: Path) -> None:
    out = subprocess.run(
        ["python3", "-m", "ftlab", "serve", "--ftl", "zns", "--store", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    assert "NBD protocol" in out.stderr and "no zone commands" in out.stderr, out.stderr


@pytest.mark.parametrize("signal_name", ["SIGHUP", "SIGTERM", "SIGINT"])
def test_signals_shut_down_cleanly(tmp_path: Path, signal_name: str) -> None:
    import signal

    store = tmp_path / "store"
    served = Served(store, sets=SMALL_DEVICE)
    qemu_io(served.uri, "write -P 0x5a 0 1M")
    served.proc.send_signal(getattr(signal, signal_name))
    assert served.proc.wait(60) == 0, served.text()
    served.thread.join(10)
    assert f"{signal_name}: shutting down cleanly" in served.text(), served.text()
    assert json.loads((store / "checkpoint").read_text())["clean"]
    again = Served(store, sets=SMALL_DEVICE)
    try:
        assert "reopened after a clean shutdown" in again.text(), again.text()
        qemu_io(again.uri, "read -P 0x5a 0 1M")
    finally:
        assert again.stop() == 0, again.text()


def test_a_flush_syncs_each_file_written_once(tmp_path: Path) -> None:
    """One group commit per FLUSH: one fdatasync of the store file (pages and records in
    one), not of the trim log; a FLUSH with nothing written since syncs nothing."""
    import threading

    from nbd_crash import BLOCK, NbdClient, block_bytes

    statuses: list[dict[str, int]] = []
    address: list[str] = []
    done = threading.Event()
    problems: list[str] = []

    def fsyncs_now() -> int:
        seen = len(statuses)
        while len(statuses) < seen + 2:  # a status taken after the call
            threading.Event().wait(0.05)
        return statuses[-1]["fsyncs"]

    def client() -> None:
        try:
            while not address:
                threading.Event().wait(0.05)
            host, port = address[0].split(":")
            c = NbdClient(host, int(port))
            for block in range(64):
                c.write(block * BLOCK, block_bytes(block, 1))
            c.flush()
            before = fsyncs_now()
            c.write(0, block_bytes(0, 2))
            c.flush()
            after_one = fsyncs_now()
            c.flush()
            after_empty = fsyncs_now()
            c.request(1, BLOCK, BLOCK, block_bytes(1, 2), flags=1)  # FUA
            after_fua = fsyncs_now()
            c.close()
            deltas = (after_one - before, after_empty - after_one, after_fua - after_empty)
            if deltas != (1, 0, 1):
                problems.append(f"fdatasyncs per write+flush, flush, FUA write: {deltas}")
        except Exception as e:  # noqa: BLE001 (reported by the test)
            problems.append(repr(e))
        finally:
            done.set()

    def tick(status: str) -> bool:
        statuses.append(json.loads(status))
        return not done.is_set()

    thread = threading.Thread(target=client)
    thread.start()
    _core.serve(
        "page", str(tmp_path / "store"), "127.0.0.1:0", False, False,
        lambda startup, addr: address.append(addr), tick,
        preset="small", sets=SMALL_DEVICE + ["buffer.size_bytes=0"],
    )  # fmt: skip
    thread.join(30)
    assert not problems, problems
