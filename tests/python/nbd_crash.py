"""A minimal NBD client (fixed newstyle, simple replies) and the crash cycle the crash test
and scripts/nbd_soak.py run: under fio load, a checker writes numbered blocks and flushes;
the server is killed with SIGKILL at a random moment and restarted; every block must then
hold what it held at the checker's last completed flush, or a write issued after it, and
nothing else."""

from __future__ import annotations

import os
import random
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from nbd_helpers import Served

BLOCK = 4096


class NbdClient:
    """Requests one at a time over one connection."""

    def __init__(self, host: str, port: int, export: str = "ftlab") -> None:
        self.sock = socket.create_connection((host, port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        magic, opt, flags = struct.unpack(">QQH", self._recv(18))
        assert magic == 0x4E42444D41474943 and opt == 0x49484156454F5054, "not an NBD server"
        self.sock.sendall(struct.pack(">I", 3))  # fixed newstyle, no zeroes
        name = export.encode()
        self.sock.sendall(struct.pack(">QII", opt, 1, len(name)) + name)  # EXPORT_NAME
        self.size, self.flags = struct.unpack(">QH", self._recv(10))
        self.handle = 0

    def _recv(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("server closed the connection")
            out += chunk
        return bytes(out)

    def send(self, kind: int, offset: int, length: int, data: bytes = b"", flags: int = 0) -> int:
        """Sends a request without waiting for its reply; its handle."""
        self.handle += 1
        self.sock.sendall(
            struct.pack(">IHHQQI", 0x25609513, flags, kind, self.handle, offset, length) + data
        )
        return self.handle

    def reply(self) -> tuple[int, int]:
        """The next reply to a request without payload: (error, handle)."""
        magic, error, handle = struct.unpack(">IIQ", self._recv(16))
        assert magic == 0x67446698
        return error, handle

    def request(
        self, kind: int, offset: int, length: int, data: bytes = b"", flags: int = 0
    ) -> tuple[int, bytes]:
        sent = self.send(kind, offset, length, data, flags)
        magic, error, handle = struct.unpack(">IIQ", self._recv(16))
        assert magic == 0x67446698 and handle == sent
        payload = self._recv(length) if kind == 0 and error == 0 else b""
        return error, payload

    def read(self, offset: int, length: int) -> bytes:
        error, data = self.request(0, offset, length)
        assert error == 0, f"read error {error}"
        return data

    def write(self, offset: int, data: bytes) -> None:
        error, _ = self.request(1, offset, len(data), data)
        assert error == 0, f"write error {error}"

    def flush(self) -> None:
        error, _ = self.request(3, 0, 0)
        assert error == 0, f"flush error {error}"

    def close(self) -> None:
        try:
            self.sock.sendall(struct.pack(">IHHQQI", 0x25609513, 0, 2, 0, 0, 0))
        except OSError:
            pass
        self.sock.close()


def block_bytes(block: int, version: int) -> bytes:
    head = struct.pack(">QQ", block, version)
    return (head * (BLOCK // len(head)))[:BLOCK]


class Checker:
    """Writes versions of blocks `first .. first + count` and remembers, for each block,
    the version at the last completed flush and every version issued since."""

    def __init__(self, first: int, count: int, seed: int) -> None:
        self.first, self.count = first, count
        self.rng = random.Random(seed)
        self.flushed = [0] * count  # 0: never written (reads as zeros)
        self.since: list[set[int]] = [set() for _ in range(count)]
        self.version = 0
        self.flushes = 0

    def run(self, client: NbdClient, stop: threading.Event) -> None:
        current = list(self.flushed)
        try:
            while not stop.is_set():
                for _ in range(self.rng.randint(1, 40)):
                    i = self.rng.randrange(self.count)
                    self.version += 1
                    self.since[i].add(self.version)
                    client.write(
                        (self.first + i) * BLOCK, block_bytes(self.first + i, self.version)
                    )
                    current[i] = self.version
                client.flush()
                self.flushes += 1
                self.flushed = list(current)
                self.since = [set() for _ in range(self.count)]
        except (OSError, ConnectionError, AssertionError):
            return  # the server was killed

    def run_pipelined(self, clients: list[NbdClient], stop: threading.Event) -> None:
        """As `run`, over several connections with many requests in flight: each round
        sends writes of distinct blocks, spread over the connections, before reading any
        reply, then a FLUSH on one connection once every write is acknowledged (the export
        has CAN_MULTI_CONN: it covers them all)."""
        current = list(self.flushed)
        try:
            while not stop.is_set():
                blocks = self.rng.sample(range(self.count), self.rng.randint(1, 64))
                sent = [0] * len(clients)
                for n, i in enumerate(blocks):
                    self.version += 1
                    self.since[i].add(self.version)
                    c = n % len(clients)
                    data = block_bytes(self.first + i, self.version)
                    clients[c].send(1, (self.first + i) * BLOCK, BLOCK, data)
                    sent[c] += 1
                    current[i] = self.version
                for c, count in enumerate(sent):
                    for _ in range(count):
                        error, _ = clients[c].reply()
                        assert error == 0, f"write error {error}"
                clients[self.rng.randrange(len(clients))].flush()
                self.flushes += 1
                self.flushed = list(current)
                self.since = [set() for _ in range(self.count)]
        except (OSError, ConnectionError, AssertionError):
            return  # the server was killed

    def check(self, client: NbdClient) -> list[str]:
        problems = []
        for i in range(self.count):
            data = client.read((self.first + i) * BLOCK, BLOCK)
            if data == bytes(BLOCK):
                got = 0
            else:
                block, got = struct.unpack(">QQ", data[:16])
                if data != block_bytes(block, got) or block != self.first + i:
                    problems.append(f"block {self.first + i}: foreign or torn data")
                    continue
            if got != self.flushed[i] and got not in self.since[i]:
                problems.append(
                    f"block {self.first + i}: version {got}, flushed {self.flushed[i]}, "
                    f"issued since {sorted(self.since[i])[:5]}"
                )
            # What survived is the next cycle's baseline (the restart made it durable).
            self.flushed[i] = got
            self.since[i] = set()
        return problems


def fio_load(
    uri: str, workdir: Path, offset_mib: int, size_mib: int, seconds: float
) -> subprocess.Popen[bytes]:
    job = workdir / "load.fio"
    job.write_text(
        f"""[load]
ioengine=nbd
uri={uri}
rw=randrw
rwmixwrite=70
bs=4k
iodepth=16
offset={offset_mib}M
size={size_mib}M
time_based=1
runtime={max(int(seconds) + 5, 1)}
fsync=64
"""
    )
    # Its own process group: fio forks its jobs, and all of them go when the load is killed.
    return subprocess.Popen(
        ["fio", str(job)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def crash_cycle(
    served_factory: Callable[[], Served],
    checker: Checker,
    workdir: Path,
    rng: random.Random,
    connections: int = 1,
) -> tuple[list[str], str]:
    """One cycle on a running server: fio load and the checker (over `connections`
    pipelined connections if more than one), SIGKILL after a random 0.3-1.5 s, restart,
    check. Returns (problems, the restarted server's start-up line)."""
    served = served_factory()
    load = fio_load(served.uri, workdir, 24, 16, 2)
    clients = [NbdClient(served.host, served.port) for _ in range(connections)]
    stop = threading.Event()
    if connections == 1:
        t = threading.Thread(target=checker.run, args=(clients[0], stop), daemon=True)
    else:
        t = threading.Thread(target=checker.run_pipelined, args=(clients, stop), daemon=True)
    t.start()
    time.sleep(rng.uniform(0.3, 1.5))
    served.kill()
    stop.set()
    t.join(30)
    os.killpg(load.pid, signal.SIGKILL)
    load.wait(30)
    for client in clients:
        client.sock.close()
    again = served_factory()
    startup = next((line for line in again.log if "ready" in line), "")
    reader = NbdClient(again.host, again.port)
    problems = checker.check(reader)
    reader.close()
    rc = again.stop()
    if rc != 0:
        problems.append(f"clean shutdown after recovery exited {rc}: {again.text()}")
    return problems, startup
