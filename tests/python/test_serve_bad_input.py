"""Bad input to `ftlab serve`: garbage instead of NBD, requests beyond the export, an
oversized write, an unknown command, a client gone in the middle of a write. Each gets a
clear error (a reply, or the connection closed with a message naming it), the server
keeps serving the other clients, and nothing already written is lost."""

from __future__ import annotations

import json
import socket
import struct
import time
from pathlib import Path

from nbd_crash import BLOCK, NbdClient, block_bytes
from nbd_helpers import SMALL_DEVICE, Served, wait_for


def test_bad_clients_do_not_disturb_the_others(tmp_path: Path) -> None:
    served = Served(tmp_path / "store", sets=SMALL_DEVICE, extra=["--verify"])
    try:
        good = NbdClient(served.host, served.port)
        good.write(0, block_bytes(0, 1))
        good.flush()

        # Garbage instead of a handshake.
        s = socket.create_connection((served.host, served.port))
        s.recv(18)
        s.sendall(b"\x00\x00\x00\x03GET / HTTP/1.1\r\n\r\n" + bytes(64))
        s.settimeout(10)
        assert s.recv(4096) == b""  # closed by the server
        s.close()

        # Garbage after a good handshake.
        bad = NbdClient(served.host, served.port)
        bad.sock.sendall(b"\xde\xad\xbe\xef" * 7)
        bad.sock.settimeout(10)
        assert bad.sock.recv(16) == b""
        bad.sock.close()

        # Requests beyond the export: error replies, the connection goes on.
        size = good.size
        assert good.request(0, size - BLOCK, 2 * BLOCK)[0] == 22  # EINVAL
        assert good.request(1, size, BLOCK, bytes(BLOCK))[0] == 28  # ENOSPC
        assert good.request(4, size - BLOCK, 2 * BLOCK)[0] == 28
        assert good.request(0, 2**64 - BLOCK, BLOCK)[0] == 22  # offset + length overflows
        # An unknown command.
        assert good.request(77, 0, 0)[0] == 22

        # An oversized write cannot be skipped: that connection is closed.
        big = NbdClient(served.host, served.port)
        big.sock.sendall(struct.pack(">IHHQQI", 0x25609513, 0, 1, 1, 0, 1 << 30))
        big.sock.settimeout(10)
        assert big.sock.recv(16) == b""
        big.sock.close()

        # Gone in the middle of a write to block 0: nothing of it is written.
        half = NbdClient(served.host, served.port)
        half.sock.sendall(struct.pack(">IHHQQI", 0x25609513, 0, 1, 1, 0, BLOCK))
        half.sock.sendall(block_bytes(0, 99)[: BLOCK // 2])
        half.sock.close()
        wait_for(lambda: "in the middle of a write" in served.text())

        assert good.read(0, BLOCK) == block_bytes(0, 1)
        good.write(BLOCK, block_bytes(1, 2))
        assert good.read(BLOCK, BLOCK) == block_bytes(1, 2)
        good.close()
    finally:
        rc = served.stop()
    assert rc == 0, served.text()
    log = served.text()
    assert "bad request magic" in log, log
    assert "a write of 1073741824 bytes" in log, log
    assert "goes beyond the export" in log, log
    assert "unknown command type 77" in log, log


def test_real_timing_holds_replies_for_the_simulated_latency(tmp_path: Path) -> None:
    """With --timing real an unbuffered write is answered when the simulated program is
    done (here 300 ms, a latency no machine makes up for); with --timing model at once,
    the timing model still running (the report has the latency); with --timing none at
    once, mapping only (no timing model)."""
    sets = [*SMALL_DEVICE, "buffer.size_bytes=0", 'nand.program_latency_ns="300ms"']
    waits = {}
    reports = {}
    for timing in ("real", "model", "none"):
        report = tmp_path / f"{timing}.json"
        served = Served(tmp_path / timing, sets=sets, extra=["--timing", timing], json_out=report)
        try:
            c = NbdClient(served.host, served.port)
            t0 = time.monotonic()
            c.write(0, block_bytes(0, 1))
            waits[timing] = time.monotonic() - t0
            c.close()
        finally:
            assert served.stop() == 0, served.text()
        reports[timing] = json.loads(report.read_text())
        # Only real timing paces replies, and says how late they went out.
        assert ("paced replies (--timing real): 1, sent after" in served.text()) == (
            timing == "real"
        ), served.text()
    assert waits["real"] >= 0.3, waits
    assert waits["model"] < 0.3 and waits["none"] < 0.3, waits
    assert reports["real"]["mode"] == reports["model"]["mode"] == "timed"
    assert reports["none"]["mode"] == "mapping-only"
