"""`ftlab serve`: the live status line and the start-up message of a served device."""

from __future__ import annotations

import json
import signal
import sys
import time
from types import FrameType
from typing import Any, TextIO


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM ends the server as Ctrl-C does: cleanly, with a checkpoint and a report.
    raise KeyboardInterrupt


def install_sigterm() -> None:
    signal.signal(signal.SIGTERM, _interrupt)


def size_text(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


class StatusLine:
    """Prints the live counters (IOPS over the last second, WAF, GC, mapping DRAM) about
    once a second on `stream`: overwritten in place on a terminal, one line per update
    elsewhere (every 10 s) so that a log stays short. Connection events go above it."""

    def __init__(self, stream: TextIO = sys.stderr, quiet: bool = False) -> None:
        self.stream = stream
        self.quiet = quiet
        self.tty = stream.isatty()
        self.every = 1.0 if self.tty else 10.0
        self.last_print = 0.0
        self.last_requests = 0
        self.last_time = time.monotonic()
        self.width = 0

    def line(self, s: dict[str, Any], iops: float) -> str:
        written = s["pages_written"]
        waf = f"{s['flash_programs'] / written:.2f}" if written else "-"
        return (
            f"{s['address']}  {s['connections']} client(s)  {iops:,.0f} IOPS  "
            f"{s['requests']:,} requests  WAF {waf}  GC {s['gc_invocations']:,}  "
            f"mapping DRAM {size_text(s['memory_bytes'])}  flushes {s['flushes']:,}  "
            f"errors {s['errors']:,}"
            + (f" (media errors {s['media_errors']:,})" if s.get("media_errors") else "")
            + (
                f"  paced replies late p99 {s['pacing']['late_p99_ns'] / 1000:,.0f} us"
                if s.get("pacing", {}).get("replies")
                else ""
            )
        )

    def __call__(self, status_json: str) -> bool:
        s = json.loads(status_json)
        if self.quiet:
            return True
        for event in s["events"]:
            self._clear()
            print(f"ftlab serve: {event}", file=self.stream, flush=True)
        now = time.monotonic()
        if now - self.last_print >= self.every:
            span = max(now - self.last_time, 1e-9)
            iops = (s["requests"] - self.last_requests) / span
            self.last_requests, self.last_time = s["requests"], now
            self.last_print = now
            text = self.line(s, iops)
            if self.tty:
                self._clear()
                self.stream.write(text)
                self.width = len(text)
                self.stream.flush()
            else:
                print(text, file=self.stream, flush=True)
        return True

    def _clear(self) -> None:
        if self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.width = 0

    def close(self) -> None:
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0


def startup_message(startup_json: str, address: str) -> str:
    s = json.loads(startup_json)
    if not s["existing"]:
        how = "new store"
    elif s["clean"]:
        how = (
            f"reopened after a clean shutdown in {s['recovery_seconds'] * 1000:.1f} ms "
            f"({s['record_bytes_read'] / 1024:,.0f} KiB of the {s['record_bytes'] / 1024:,.0f} "
            "KiB of OOB records read: the blocks holding data)"
        )
    else:
        how = (
            f"recovered after an unclean stop in {s['recovery_seconds'] * 1000:.1f} ms "
            f"({s['records_scanned']:,} OOB records scanned, {s['pages_since_checkpoint']:,} "
            f"programmed since the checkpoint"
            + (" and its map" if s.get("from_checkpoint_map") else "")
            + f", {s.get('trims_replayed', 0):,} trims replayed, "
            f"{s['mapped_pages']:,} pages mapped"
            + (f", {s['torn_pages']:,} torn pages ignored" if s["torn_pages"] else "")
            + ")"
        )
    if s.get("disk_full"):
        how += (
            "; the disk under the store is full: read-only until space is freed "
            f"(no start-up checkpoint: {s['disk_full']})"
        )
    uri = (
        f"nbd+unix:///?socket={address.removeprefix('unix:')}"
        if address.startswith("unix:")
        else f"nbd://{address}/"
    )
    return f"ftlab serve: {uri} ready ({how})"
