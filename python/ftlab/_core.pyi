"""Type stubs of the Rust extension `ftlab._core` (crates/ftlab-py/src/lib.rs).

Keep in step with the `#[pymodule]` there: tests/python/test_stubs.py checks that every name
the extension exports is declared here. The run functions take the options of `options()`
in lib.rs as keyword arguments; any other keyword is a TypeError.
"""

from collections.abc import Callable, Sequence
from os import PathLike
from typing import final

from typing_extensions import TypeAlias

_Path: TypeAlias = str | PathLike[str]
#: progress(done, fraction or None, phase): phase "scan" (records) or "simulate" (requests).
_RunProgress: TypeAlias = Callable[[int, float | None, str], object]
#: progress(records, fraction), while a trace is described.
_ScanProgress: TypeAlias = Callable[[int, float], object]

__all__ = [
    "Cancel",
    "Device",
    "FlashHandle",
    "FtlabError",
    "PageAllocator",
    "TranslationStore",
    "__version__",
    "bench",
    "causes",
    "config_show",
    "families",
    "fitted_blocks_per_plane",
    "memory",
    "peak_rss_bytes",
    "presets",
    "read_speed",
    "convert_trace",
    "register_native_scheme",
    "register_scheme",
    "run",
    "scheme_info",
    "schemes",
    "serve",
    "split_stack",
    "stacks",
    "store_check",
    "summarize",
    "summary_columns",
    "trace_formats",
    "trace_info",
    "trace_requests",
    "unregister_scheme",
    "workloads",
]

__version__: str

class FtlabError(Exception):
    """An error reported by the ftlab core."""

@final
class Cancel:
    """A flag that stops the runs it is given to (`run(..., cancel=flag)`): set from any
    thread, seen by each run at its next progress point, which raises KeyboardInterrupt."""

    def __init__(self) -> None: ...
    def set(self) -> None:
        """Stops every run given this flag."""

    @property
    def is_set(self) -> bool:
        """Whether `set` was called."""

def run(
    ftl: str,
    progress: _RunProgress | None = None,
    cancel: Cancel | None = None,
    *,
    trace: _Path | None = None,
    workload: str | None = None,
    preset: str | None = None,
    config: Sequence[_Path] = (),
    sets: Sequence[str] = (),
    verify: bool = False,
    format: str = "",
    time_unit: str = "",
) -> tuple[str, float]:
    """Runs one scheme; returns (report JSON, wall-clock seconds). Ctrl-C (in the main
    thread), `cancel` being set or `progress` raising stops it with KeyboardInterrupt (or
    `progress`'s exception)."""

def serve(
    ftl: str,
    store: _Path,
    listen: str,
    timing_real: bool,
    verify: bool,
    on_start: Callable[[str, str], object],
    tick: Callable[[str], bool],
    preallocate: bool = False,
    max_connections: int = 64,
    handshake_timeout: float = 10.0,
    read_only: bool = False,
    status: str | None = None,
    tls_psk: _Path | None = None,
    tls_cert: _Path | None = None,
    tls_key: _Path | None = None,
    sync_poll: bool = True,
    *,
    preset: str | None = None,
    config: Sequence[_Path] = (),
    sets: Sequence[str] = (),
) -> str:
    """Serves scheme `ftl` over NBD until `tick(status_json)` returns False or a signal
    arrives; `on_start(startup_json, address)` once listening. Returns the report JSON."""

def store_check(store: _Path, repair: bool) -> str:
    """Verifies (or repairs) the page store in `store` under its lock; the findings JSON."""

def bench(
    ftl: str,
    *,
    trace: _Path | None = None,
    workload: str | None = None,
    preset: str | None = None,
    config: Sequence[_Path] = (),
    sets: Sequence[str] = (),
    verify: bool = False,
    format: str = "",
    time_unit: str = "",
) -> str:
    """Loads the requests into memory, then times the simulation alone; returns JSON."""

def memory(
    ftl: str,
    *,
    trace: _Path | None = None,
    workload: str | None = None,
    preset: str | None = None,
    config: Sequence[_Path] = (),
    sets: Sequence[str] = (),
    verify: bool = False,
    format: str = "",
    time_unit: str = "",
) -> str:
    """The scheme's DRAM on a fresh device and its host stack's memory, by component,
    without running: JSON {"device": [[name, bytes]...], "host": [...], "logical_pages",
    "app_pages"}."""

def fitted_blocks_per_plane(
    ftls: Sequence[str],
    *,
    trace: _Path | None = None,
    workload: str | None = None,
    preset: str | None = None,
    config: Sequence[_Path] = (),
    sets: Sequence[str] = (),
    verify: bool = False,
    format: str = "",
    time_unit: str = "",
) -> int | None:
    """When the device would be fitted to the trace: the `geometry.blocks_per_plane` every
    scheme of `ftls` accepts; else None."""

def config_show(
    ftl: str | None = None,
    *,
    trace: _Path | None = None,
    workload: str | None = None,
    preset: str | None = None,
    config: Sequence[_Path] = (),
    sets: Sequence[str] = (),
    verify: bool = False,
    format: str = "",
    time_unit: str = "",
) -> str:
    """The resolved configuration as TOML."""

def presets() -> list[tuple[str, str]]:
    """(name, description) of each preset."""

def scheme_info() -> str:
    """Every scheme's facts as JSON: name, description, family, builtin, append_only,
    section, device_defaults, advise."""

def summarize(report_json: str) -> str:
    """The headline numbers of a report (JSON in, JSON out)."""

def summary_columns() -> list[tuple[str, str]]:
    """(name, type) of each summary field: str, int, float or bool."""

def split_stack(name: str) -> tuple[str | None, str]:
    """A scheme named with its host stack, `STACK+SCHEME`: (the stack or None, the scheme)."""

def families() -> list[tuple[str, str]]:
    """(name, description) of each scheme family."""

def schemes(builtin: bool = False) -> list[tuple[str, str]]:
    """(name, description) of each FTL scheme (`builtin`: only those shipped with ftlab)."""

def stacks() -> list[tuple[str, str]]:
    """(name, description) of each host stack (`host.stack`)."""

def workloads() -> list[tuple[str, str]]:
    """(name, description) of each built-in workload."""

def causes() -> list[tuple[str, str, str]]:
    """(name, group, description) of each cause flash operations are counted by, in
    report order."""

def peak_rss_bytes() -> int:
    """Peak resident set size of this process in bytes (Linux; 0 elsewhere)."""

def trace_info(
    path: _Path,
    page_size: int = 4096,
    config: Sequence[_Path] = ...,
    sets: Sequence[str] = ...,
    progress: _ScanProgress | None = None,
) -> str:
    """Describes a trace: returns the `ftlab trace info` JSON."""

def convert_trace(
    path: _Path,
    output: _Path,
    config: Sequence[_Path] = ...,
    sets: Sequence[str] = ...,
    progress: _ScanProgress | None = None,
) -> str:
    """Converts a trace to ftlab's binary form; returns JSON (records, bytes in and out)."""

def read_speed(path: _Path, sets: Sequence[str] = ...) -> str:
    """Reads a whole trace and times it; returns JSON (lines per second, ...)."""

def trace_formats() -> list[tuple[str, list[str], str, str, str]]:
    """(name, aliases, description, time unit, example line) of each trace format."""

def trace_requests(
    trace: _Path, preset: str | None = None, sets: Sequence[str] = ...
) -> tuple[list[tuple[int, int, int, int]], int]:
    """The requests a run over `trace` would simulate, as (time_ns, offset_bytes,
    len_bytes, op) with op 0 = write, 1 = read, 2 = trim, and the device's logical pages."""

def register_scheme(
    name: str,
    description: str,
    defaults_json: str | None,
    factory: Callable[[Device, str], object],
    append_only: bool = False,
    device_defaults: str | None = None,
    family: str = ...,
    advise_json: str | None = None,
) -> None:
    """Registers a Python scheme: `factory(device, section_json)` builds its object."""

def register_native_scheme(address: int) -> str:
    """Registers a scheme built with `ftlab-scheme` from its ABI table's address."""

def unregister_scheme(name: str) -> bool:
    """Removes a registered scheme; whether it was registered."""

@final
class FlashHandle:
    """The simulated flash, lent to a Python scheme for one call."""

    def program(self, ppn: int, lpa: int, seq: int, cause: str = "host") -> None: ...
    def read(self, ppn: int, cause: str = "host") -> tuple[int, int]: ...
    def invalidate(self, ppn: int) -> None: ...
    def erase(self, block: int, cause: str = "gc") -> None: ...
    def is_valid(self, ppn: int) -> bool: ...
    def valid_count(self, block: int) -> int: ...
    def valid_pages(self, block: int) -> list[int]: ...
    def write_pointer(self, block: int) -> int: ...
    def is_erased(self, block: int) -> bool: ...
    def erase_count(self, block: int) -> int: ...
    def block_of(self, ppn: int) -> int: ...
    def first_page(self, block: int) -> int: ...

@final
class Device:
    """The device a Python scheme is built for."""

    @property
    def logical_pages(self) -> int: ...
    @property
    def physical_pages(self) -> int: ...
    @property
    def pages_per_block(self) -> int: ...
    @property
    def blocks(self) -> int: ...
    @property
    def units(self) -> int: ...
    @property
    def page_size(self) -> int: ...
    @property
    def entry_bytes(self) -> int: ...
    def gc_thresholds(self) -> tuple[int, int]: ...
    def page_allocator(self) -> PageAllocator: ...
    def translation_store(self, pages: int) -> TranslationStore: ...

@final
class PageAllocator:
    """The core's page allocator, with its garbage collection."""

    def host_page(self, flash: FlashHandle) -> int: ...
    def has_moves(self) -> bool: ...
    def take_moves(self) -> list[tuple[int, int]]: ...
    def idle_gc(self, flash: FlashHandle) -> None: ...
    def has_idle_work(self) -> bool: ...
    def background_gc(self) -> bool: ...
    def recover(self, flash: FlashHandle) -> None: ...
    def memory(self) -> dict[str, int]: ...

@final
class TranslationStore:
    """The core's translation-page store (map on flash) and its data pages."""

    def read(self, k: int, flash: FlashHandle) -> bool: ...
    def write(self, k: int, flash: FlashHandle) -> None: ...
    def data_page(self, flash: FlashHandle) -> int: ...
    def has_moves(self) -> bool: ...
    def take_moves(self) -> list[tuple[int, int]]: ...
    def idle_gc(self, flash: FlashHandle) -> None: ...
    def has_idle_work(self) -> bool: ...
    def background_gc(self) -> bool: ...
    def memory(self) -> dict[str, int]: ...
