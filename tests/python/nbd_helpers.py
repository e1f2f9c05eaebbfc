"""Starting and stopping `ftlab serve` for the block-device tests (test_serve*.py)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

#: A device small enough that the tests make garbage collection run within seconds: 32
#: parallel units x 16 blocks x 32 pages of 4 KiB (64 MiB raw, 44.8 MiB exported), a 1 MiB
#: write buffer.
SMALL_DEVICE = [
    "geometry.blocks_per_plane=16",
    "geometry.pages_per_block=32",
    "ftl.over_provisioning=0.3",
    'buffer.size_bytes="1MiB"',
]


def need(tool: str, package: str) -> str:
    """The path of `tool`, or a skip naming the Debian package to install."""
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not found: install {package} (scripts/install-deps.sh does)")
    return path


class Served:
    """A running `ftlab serve`; its stderr is collected in `log`."""

    def __init__(
        self,
        store: Path,
        ftl: str = "page",
        preset: str = "small",
        sets: Sequence[str] = (),
        extra: Sequence[str] = (),
        json_out: Path | None = None,
    ) -> None:
        args = [
            sys.executable, "-m", "ftlab", "serve", "--ftl", ftl, "--preset", preset,
            "--store", str(store), "--listen", "127.0.0.1:0",
        ]  # fmt: skip
        for s in sets:
            args += ["--set", s]
        if json_out is not None:
            args += ["--json", str(json_out)]
        args += list(extra)
        self.log: list[str] = []
        self.proc = subprocess.Popen(
            args, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.ready = threading.Event()
        self.address = ""
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()
        if not self.ready.wait(120) or not self.address:
            self.kill()
            raise AssertionError("ftlab serve did not start:\n" + "\n".join(self.log))

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line.rstrip("\n"))
            m = re.search(r"nbd://([0-9.]+:\d+)/ ready", line)
            if m:
                self.address = m.group(1)
                self.ready.set()
        self.ready.set()

    @property
    def host(self) -> str:
        return self.address.split(":")[0]

    @property
    def port(self) -> int:
        return int(self.address.split(":")[1])

    @property
    def uri(self) -> str:
        return f"nbd://{self.address}/ftlab"

    def text(self) -> str:
        return "\n".join(self.log)

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM (a clean shutdown); the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout)
        self.thread.join(10)
        return rc

    def kill(self) -> None:
        """kill -9: an unclean stop."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self.thread.join(10)


def wait_for(predicate: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")
