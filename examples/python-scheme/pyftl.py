"""Two FTL schemes written in Python: the "Bring your own FTL" tutorial's.

`pypage`: a page-level FTL, the whole map in DRAM, pages from the core's page allocator
(its garbage collection runs in Rust and reports the valid pages it moved).

`clockftl`: the map kept on flash in translation pages, `cache_pages` of them cached in DRAM
and evicted by CLOCK (DFTL's design with whole translation pages as the cache unit). A miss
reads the page's translation page; evicting a dirty one writes it back; a data page that GC
moves while its translation page is not cached costs a read and a write of it, as in DFTL.

    ftlab --plugin examples/python-scheme/pyftl.py run --ftl clockftl --verify
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ftlab


@ftlab.register_scheme
class PyPage(ftlab.Scheme):
    name = "pypage"
    description = "page-level FTL written in Python (tutorial)"
    family = "page"

    def __init__(self, device: ftlab.Device, config: dict[str, Any]) -> None:
        super().__init__(device, config)
        self.map: list[int | None] = [None] * device.logical_pages
        self.alloc = device.page_allocator()

    def read(self, lpa: int, flash: ftlab.Flash) -> int | None:
        return self.map[lpa]

    def write(self, lpa: int, seq: int, flash: ftlab.Flash) -> None:
        self.trim(lpa, flash)  # invalidate first, so that GC sees the stale copy
        self.map[lpa] = ppn = self.alloc.host_page(flash)
        flash.program(ppn, lpa, seq)
        self.follow_moves()

    def follow_moves(self) -> None:
        for moved, to in self.alloc.take_moves():  # GC moved valid pages: follow them
            self.map[moved] = to

    def idle(self, flash: ftlab.Flash) -> None:  # GC in idle time (gc.mode = "background")
        self.alloc.idle_gc(flash)
        self.follow_moves()

    def has_idle_work(self) -> bool:
        return self.alloc.has_idle_work()

    def background_gc(self) -> bool:
        return self.alloc.background_gc()

    def trim(self, lpa: int, flash: ftlab.Flash) -> None:
        if (old := self.map[lpa]) is not None:
            flash.invalidate(old)
            self.map[lpa] = None

    def recover(self, live: list[int | None], flash: ftlab.Flash) -> None:
        self.map = live
        self.alloc.recover(flash)

    def memory(self) -> Mapping[str, int]:
        table = self.device.logical_pages * self.device.entry_bytes
        return {"l2p": table, **self.alloc.memory()}


@ftlab.register_scheme
class ClockFtl(ftlab.Scheme):
    name = "clockftl"
    description = "map on flash, translation pages cached by CLOCK, in Python (tutorial)"
    family = "demand"
    defaults = {"cache_pages": 64}
    advise = {"cache_pages": [16, 64]}  # what `ftlab advise` tries

    def __init__(self, device: ftlab.Device, config: dict[str, Any]) -> None:
        super().__init__(device, config)
        if config["cache_pages"] < 1:
            raise ftlab.SchemeConfigError("clockftl.cache_pages", "must be at least 1")
        self.per_page = device.page_size // device.entry_bytes  # entries per translation page
        tpages = -(-device.logical_pages // self.per_page)
        self.store = device.translation_store(tpages)
        self.map: list[int | None] = [None] * device.logical_pages  # on flash or cached
        self.frames: list[int] = []  # the cached translation pages, in CLOCK order
        self.frame_of: dict[int, int] = {}
        self.referenced: list[bool] = []
        self.dirty: list[bool] = []
        self.hand = 0
        self.hits = self.misses = self.write_backs = 0

    def cached(self, tpage: int, flash: ftlab.Flash, dirty: bool) -> None:
        frame = self.frame_of.get(tpage)
        if frame is None:
            self.misses += 1
            frame = self.free_frame(flash)
            self.frames[frame], self.frame_of[tpage] = tpage, frame
            self.store.read(tpage, flash)
        else:
            self.hits += 1
        self.referenced[frame] = True
        self.dirty[frame] |= dirty

    def free_frame(self, flash: ftlab.Flash) -> int:
        if len(self.frames) < self.config["cache_pages"]:
            self.frames.append(-1)
            self.referenced.append(False)
            self.dirty.append(False)
            return len(self.frames) - 1
        while self.referenced[self.hand]:  # CLOCK: a second chance for referenced pages
            self.referenced[self.hand] = False
            self.hand = (self.hand + 1) % len(self.frames)
        frame, self.hand = self.hand, (self.hand + 1) % len(self.frames)
        if self.dirty[frame]:
            self.write_back(self.frames[frame], flash)
            self.dirty[frame] = False
        del self.frame_of[self.frames[frame]]
        return frame

    def write_back(self, tpage: int, flash: ftlab.Flash) -> None:
        self.write_backs += 1
        self.store.write(tpage, flash)
        self.follow_moves(flash)

    def follow_moves(self, flash: ftlab.Flash) -> None:
        stale = set()
        for lpa, to in self.store.take_moves():
            self.map[lpa] = to
            tpage = lpa // self.per_page
            if (frame := self.frame_of.get(tpage)) is not None:
                self.dirty[frame] = True
            else:
                stale.add(tpage)
        for tpage in sorted(stale):  # not cached: update on flash (read, write a new version)
            self.store.read(tpage, flash)
            self.write_back(tpage, flash)

    def read(self, lpa: int, flash: ftlab.Flash) -> int | None:
        self.cached(lpa // self.per_page, flash, dirty=False)
        return self.map[lpa]

    def write(self, lpa: int, seq: int, flash: ftlab.Flash) -> None:
        self.cached(lpa // self.per_page, flash, dirty=True)
        self.trim(lpa, flash)
        self.map[lpa] = ppn = self.store.data_page(flash)
        flash.program(ppn, lpa, seq)
        self.follow_moves(flash)

    def trim(self, lpa: int, flash: ftlab.Flash) -> None:
        if (old := self.map[lpa]) is not None:
            flash.invalidate(old)
            self.map[lpa] = None

    def memory(self) -> Mapping[str, int]:
        cache = self.config["cache_pages"] * self.device.page_size
        return {"cached_map": cache, **self.store.memory()}

    def counters(self) -> Mapping[str, float]:
        return {"map_hits": self.hits, "map_misses": self.misses, "write_backs": self.write_backs}

    def reset_counters(self) -> None:
        self.hits = self.misses = self.write_backs = 0
