"""A minimal NBD client (fixed newstyle, simple replies) and the crash cycle the crash test
and scripts/nbd_soak.py run: under fio load, a checker writes numbered blocks and flushes
(optionally qemu-io too, on regions of its own); the server is killed with SIGKILL at a
random moment and restarted; every block must then hold what it held at the checker's last
completed flush, or a write issued after it, and nothing else."""

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

from nbd_helpers import Served, need

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


class QemuIoChecker:
    """qemu-io as a checked client: rounds of one 64 KiB write of a one-byte pattern to one
    of `regions` regions from `first_byte` on, each followed by a flush. qemu-io runs its
    commands one after the other, so a round's flush has completed once the next round's
    write is reported ("wrote ..."); the writes after the last such flush may or may not
    have landed."""

    REGION = 64 << 10
    ROUNDS = 4000

    def __init__(self, first_byte: int, regions: int, seed: int) -> None:
        self.first, self.regions = first_byte, regions
        self.rng = random.Random(seed)
        # Per 4 KiB block of each region, its pattern byte at the last completed flush (0:
        # never written, zeros): a 64 KiB write cut by a crash may land in part.
        self.flushed = [[0] * (self.REGION // BLOCK) for _ in range(regions)]
        self.since: list[set[int]] = [set() for _ in range(regions)]
        self.flushes = 0

    def start(
        self, uri: str
    ) -> tuple[subprocess.Popen[str], list[tuple[int, int]], Callable[[], int]]:
        """Starts qemu-io on a new list of rounds; the process, the rounds (region, pattern)
        and, to call once the process has ended, the number of writes it reported before
        any failure."""
        rounds = [
            (self.rng.randrange(self.regions), self.rng.randrange(1, 256))
            for _ in range(self.ROUNDS)
        ]
        # Line-buffered: a pipe would hold qemu-io's last reports in its stdio buffer when
        # it is killed, and rounds done would look undone.
        args = ["stdbuf", "-oL", need("qemu-io", "qemu-utils"), "-f", "raw", uri]
        for region, pattern in rounds:
            offset = self.first + region * self.REGION
            args += ["-c", f"write -P {pattern} {offset} {self.REGION}", "-c", "flush"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        reported = [0]

        def read() -> None:
            assert proc.stdout is not None
            failed = False
            for line in proc.stdout:
                # (A failed flush would leave the rounds after it unconfirmed.)
                failed = failed or "failed" in line
                if line.startswith("wrote ") and not failed:
                    reported[0] += 1

        reader = threading.Thread(target=read, daemon=True)
        reader.start()

        def writes_reported() -> int:
            reader.join(30)
            return reported[0]

        return proc, rounds, writes_reported

    def stopped(self, rounds: list[tuple[int, int]], writes_reported: int) -> None:
        """After the kill: round k's flush completed if write k + 1 was reported; the last
        reported write and the one after it (possibly in flight) may have landed."""
        flushed_rounds = max(writes_reported - 1, 0)
        for region, pattern in rounds[:flushed_rounds]:
            self.flushed[region] = [pattern] * len(self.flushed[region])
            self.since[region] = set()
        self.flushes += flushed_rounds
        for region, pattern in rounds[flushed_rounds : writes_reported + 1]:
            self.since[region].add(pattern)

    def check(self, client: NbdClient) -> list[str]:
        """Each 4 KiB block holds one pattern: its own at the last completed flush, or one
        written to its region since; what it holds is then its baseline."""
        problems = []
        for region in range(self.regions):
            data = client.read(self.first + region * self.REGION, self.REGION)
            for block, at in enumerate(range(0, self.REGION, BLOCK)):
                got = data[at]
                flushed = self.flushed[region][block]
                if data[at : at + BLOCK] != bytes([got]) * BLOCK:
                    problems.append(f"qemu-io region {region}: torn or foreign block at {at}")
                elif got != flushed and got not in self.since[region]:
                    problems.append(
                        f"qemu-io region {region}, block at {at}: pattern {got}, flushed "
                        f"{flushed}, written since {sorted(self.since[region])}"
                    )
                self.flushed[region][block] = got
            self.since[region] = set()
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
    qemu: QemuIoChecker | None = None,
) -> tuple[list[str], str]:
    """One cycle on a running server: fio load and the checker (over `connections`
    pipelined connections if more than one), and qemu-io's checked rounds if `qemu`, SIGKILL
    after a random 0.3-1.5 s, restart, check. Returns (problems, the restarted server's
    start-up line)."""
    served = served_factory()
    load = fio_load(served.uri, workdir, 24, 16, 2)
    qemu_run = qemu.start(served.uri) if qemu else None
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
    if qemu and qemu_run:
        proc, rounds, writes_reported = qemu_run
        proc.kill()
        proc.wait(30)
        qemu.stopped(rounds, writes_reported())
    for client in clients:
        client.sock.close()
    again = served_factory()
    startup = next((line for line in again.log if "ready" in line), "")
    reader = NbdClient(again.host, again.port)
    problems = checker.check(reader)
    if qemu:
        problems += qemu.check(reader)
    reader.close()
    rc = again.stop()
    if rc != 0:
        problems.append(f"clean shutdown after recovery exited {rc}: {again.text()}")
    return problems, startup
