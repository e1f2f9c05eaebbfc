"""`ftlab serve` under many clients: a bounded pool of connections (a flood beyond it is
refused, the clients in it go on), a handshake timeout, and a long request that does not
hold the other clients' reads."""

from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path

from nbd_crash import BLOCK, NbdClient, block_bytes
from nbd_helpers import SMALL_DEVICE, Served, wait_for


def closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        while True:
            if not sock.recv(4096):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_connection_flood_beyond_the_limit_is_refused(tmp_path: Path) -> None:
    served = Served(tmp_path / "store", sets=SMALL_DEVICE, extra=["--max-connections", "4"])
    try:
        clients = [NbdClient(served.host, served.port) for _ in range(4)]
        flood = [socket.create_connection((served.host, served.port)) for _ in range(40)]
        assert all(closed_by_server(s) for s in flood)
        for s in flood:
            s.close()
        # The four in the pool go on.
        for i, c in enumerate(clients):
            c.write(i * BLOCK, block_bytes(i, 1))
            assert c.read(i * BLOCK, BLOCK) == block_bytes(i, 1)
        # A place freed is taken again.
        clients.pop().close()
        wait_for(lambda: "disconnected" in served.text())
        again = NbdClient(served.host, served.port)
        assert again.read(0, BLOCK) == block_bytes(0, 1)
        again.close()
        for c in clients:
            c.close()
    finally:
        assert served.stop() == 0, served.text()
    assert "refused: 4 clients connected already (--max-connections)" in served.text()


def test_a_client_silent_in_the_handshake_is_dropped(tmp_path: Path) -> None:
    served = Served(tmp_path / "store", sets=SMALL_DEVICE, extra=["--handshake-timeout", "0.5"])
    try:
        silent = socket.create_connection((served.host, served.port))
        assert len(silent.recv(18)) == 18  # the greeting, then nothing from the client
        assert closed_by_server(silent)
        silent.close()
        good = NbdClient(served.host, served.port)
        time.sleep(1)  # past the timeout: a connection in transmission is not timed out
        good.write(0, block_bytes(0, 1))
        good.close()
    finally:
        assert served.stop() == 0, served.text()
    assert "no handshake within 0.5 s" in served.text(), served.text()


def test_a_long_request_does_not_hold_other_clients_reads(tmp_path: Path) -> None:
    served = Served(tmp_path / "store", sets=[], extra=[])
    try:
        reader = NbdClient(served.host, served.port)
        reader.write(1 << 30, block_bytes(7, 1))  # beyond the zeroed range
        zeroes = NbdClient(served.host, served.port)
        zeroes.write(0, block_bytes(0, 1))
        stop = threading.Event()
        done_at: list[float] = []

        def read_on() -> None:
            while not stop.is_set():
                assert reader.read(1 << 30, BLOCK) == block_bytes(7, 1)
                done_at.append(time.monotonic())

        t = threading.Thread(target=read_on)
        t.start()
        time.sleep(0.2)
        # WRITE_ZEROES of 256 MiB with NO_HOLE: every page written.
        sent = time.monotonic()
        zeroes.handle += 1
        zeroes.sock.sendall(struct.pack(">IHHQQI", 0x25609513, 2, 6, zeroes.handle, 0, 256 << 20))
        magic, error, handle = struct.unpack(">IIQ", zeroes._recv(16))
        replied = time.monotonic()
        stop.set()
        t.join(30)
        assert error == 0 and handle == zeroes.handle
        during = [x for x in done_at if sent < x < replied]
        # Before the pieces, the reader waited for the whole request: one read at most.
        assert len(during) >= 10, (len(during), replied - sent)
        assert zeroes.read(0, BLOCK) == bytes(BLOCK)
        reader.close()
        zeroes.close()
    finally:
        assert served.stop() == 0, served.text()


def test_a_read_only_export_refuses_writes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    served = Served(store, sets=SMALL_DEVICE)
    client = NbdClient(served.host, served.port)
    client.write(0, block_bytes(0, 1))
    client.close()
    assert served.stop() == 0, served.text()
    ro = Served(store, sets=SMALL_DEVICE, extra=["--read-only"])
    try:
        client = NbdClient(ro.host, ro.port)
        assert client.flags & 2  # NBD_FLAG_READ_ONLY
        assert client.request(1, 0, BLOCK, block_bytes(0, 2))[0] == 1  # EPERM
        assert client.request(4, 0, BLOCK)[0] == 1
        assert client.request(6, 0, BLOCK)[0] == 1
        assert client.read(0, BLOCK) == block_bytes(0, 1)
        client.close()
    finally:
        assert ro.stop() == 0, ro.text()
    assert "the export is read-only (--read-only)" in ro.text()


def test_listening_beyond_loopback_warns(tmp_path: Path) -> None:
    served = Served(tmp_path / "store", sets=SMALL_DEVICE, extra=["--listen", "0.0.0.0:0"])
    try:
        wait_for(lambda: "reachable from other machines" in served.text())
    finally:
        assert served.stop() == 0, served.text()
    quiet = Served(tmp_path / "other", sets=SMALL_DEVICE)
    assert quiet.stop() == 0
    assert "reachable from other machines" not in quiet.text()


def test_a_unix_socket_serves_qemu_io(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    from nbd_helpers import need

    qemu_io = need("qemu-io", "qemu-utils")
    sock = tmp_path / "nbd.sock"
    sets = [a for s in SMALL_DEVICE for a in ("--set", s)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ftlab", "serve", "--preset", "small", "--store",
         str(tmp_path / "store"), "--listen", f"unix:{sock}", *sets],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert f"nbd+unix:///?socket={sock} ready" in line, line
        uri = f"nbd+unix:///ftlab?socket={sock}"
        for commands in (["write -P 0x3c 0 1M", "flush"], ["read -P 0x3c 0 1M"]):
            args = [qemu_io, "-f", "raw", uri]
            for c in commands:
                args += ["-c", c]
            out = subprocess.run(args, capture_output=True, text=True, timeout=60)
            assert out.returncode == 0 and "failed" not in out.stdout + out.stderr, out
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    assert not sock.exists()


def test_the_status_endpoint_serves_json_and_prometheus(tmp_path: Path) -> None:
    import json
    import re
    import urllib.request

    served = Served(tmp_path / "store", sets=SMALL_DEVICE, extra=["--status", "127.0.0.1:0"])
    try:
        wait_for(lambda: "status at http://" in served.text())
        m = re.search(r"status at http://([0-9.]+:\d+)/", served.text())
        assert m, served.text()
        base = f"http://{m.group(1)}"
        client = NbdClient(served.host, served.port)
        for block in range(8):
            client.write(block * BLOCK, block_bytes(block, 1))
        client.flush()
        with urllib.request.urlopen(f"{base}/", timeout=10) as r:
            status = json.loads(r.read())
        assert status["pages_written"] == 8 and status["connections"] == 1, status
        assert status["flushes"] == 1 and status["fsyncs"] >= 1, status
        assert status["paced_replies"] == 0, status  # no --timing real
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as r:
            text = r.read().decode()
        assert "# TYPE ftlab_pages_written_total counter" in text
        assert "\nftlab_pages_written_total 8\n" in text, text
        assert "# TYPE ftlab_pacing_late_p99_ns gauge" in text, text
        client.close()
    finally:
        assert served.stop() == 0, served.text()
