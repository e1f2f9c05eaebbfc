"""FTL schemes written in Python.

A scheme is a subclass of `Scheme` that implements `read`, `write` and `trim` against the
simulated flash (`Flash`, lent to each call) and declares its DRAM in `memory`. Registered
(`register_scheme`, or the `ftlab.schemes` entry-point group of an installed package), it
runs wherever a built-in scheme does: `ftlab run --ftl NAME`, `compare`, sweeps,
`--verify`, `serve` (if it implements `recover`). Its `[NAME]` configuration section takes
the keys of its `defaults`, checked like a built-in section's.

The flash is the core's: the same NAND rules (a page is programmed once between erases, in
order), timing and cause accounting as the built-in schemes. `read` returns the physical
page that holds the logical page (or None); the bridge reads it, so that `--verify` checks
what the flash holds. `Device.page_allocator()` offers the core's page allocator, with its
garbage collection in Rust, so that a page-mapped scheme needs no GC of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from ftlab import _core

#: The simulated flash, valid during the call that received it (`ftlab._core.FlashHandle`).
Flash = _core.FlashHandle
#: The device a scheme is built for (`ftlab._core.Device`): geometry and the kit.
Device = _core.Device
#: The core's page allocator (`ftlab._core.PageAllocator`).
PageAllocator = _core.PageAllocator

ENTRY_POINT_GROUP = "ftlab.schemes"


class SchemeConfigError(ValueError):
    """A bad value in a scheme's configuration section: raised by a scheme's constructor, it
    is reported like any configuration error, naming `key` (`NAME.KEY`)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.ftlab_config_key = key


class Scheme:
    """Base class of an FTL scheme written in Python.

    Class attributes: `name` (the `--ftl` name and section name), `description` (one line
    for `ftlab schemes`), `family` (one of `ftlab.families()`), `defaults` (the `[name]`
    section's keys and default values; None: no section), `advise` (keys of the section,
    each with the values `ftlab advise` should try), `append_only` and `device_defaults`
    (TOML applied over the preset), as for the built-in schemes.

    The constructor receives the device and the section's values (defaults overridden by
    the run's configuration, types checked). Override `read`, `write` and `trim`; the other
    methods are optional: `write_batch` (pages the write buffer flushes together, in one
    call: fewer crossings of the boundary), `idle` and `has_idle_work` (background work
    between requests; `background_gc` says whether it collects garbage there), `memory`
    and `counters` (for the report), `reset_counters`, `recover` (rebuild after a restart:
    `live[lpa]` is the physical page the OOB scan found for each logical page, already
    revalidated) and `finish`.
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""
    family: ClassVar[str] = "custom"
    defaults: ClassVar[Mapping[str, Any] | None] = None
    advise: ClassVar[Mapping[str, Sequence[Any]]] = {}
    append_only: ClassVar[bool] = False
    device_defaults: ClassVar[str | None] = None

    def __init__(self, device: Device, config: dict[str, Any]) -> None:
        self.device = device
        self.config = config

    def read(self, lpa: int, flash: Flash) -> int | None:
        """The physical page holding logical page `lpa`, or None if it is unmapped."""
        raise NotImplementedError

    def write(self, lpa: int, seq: int, flash: Flash) -> None:
        """Writes logical page `lpa` with the data of host write `seq`."""
        raise NotImplementedError

    def write_batch(self, pages: Sequence[tuple[int, int]], flash: Flash) -> None:
        """Writes `(lpa, seq)` pairs in order (default: `write` for each)."""
        for lpa, seq in pages:
            self.write(lpa, seq, flash)

    def trim(self, lpa: int, flash: Flash) -> None:
        """Forgets logical page `lpa`."""
        raise NotImplementedError

    def idle(self, flash: Flash) -> None:
        """Background work between requests (not called unless overridden)."""

    def has_idle_work(self) -> bool:
        """Whether `idle` has work now (default: always, if `idle` is overridden)."""
        return True

    def background_gc(self) -> bool:
        """Whether the scheme collects garbage in `idle` (the report's GC scheduling)."""
        return False

    def memory(self) -> Mapping[str, int]:
        """The scheme's DRAM by component, in bytes."""
        return {}

    def counters(self) -> Mapping[str, float]:
        """Scheme-specific counters for the report."""
        return {}

    def reset_counters(self) -> None:
        """Forgets the counters (after preconditioning), not the state."""

    def recover(self, live: list[int | None], flash: Flash) -> None:
        """Rebuilds the state after a restart (not supported unless overridden)."""
        raise NotImplementedError

    def finish(self, flash: Flash) -> None:
        """End of the run, before the final metrics."""


S = TypeVar("S", bound=type[Scheme])

_registered: dict[str, type[Scheme]] = {}
#: Schemes registered from a native library (`register_native_scheme`), by name.
_native: set[str] = set()
#: Names registered by plugins (files, modules, entry points): a worker process finds them
#: again by loading the same plugins; the others exist only in this process.
_portable: set[str] = set()
_loading_plugins = 0


def _same_kind(value: Any, default: Any) -> bool:
    """Whether `value` may stand for `default`: the same type, but an int is a valid float
    and a bool is never a number."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (float, int))
    return isinstance(value, type(default))


def _checked_section(cls: type[Scheme], values: Mapping[str, Any]) -> dict[str, Any]:
    """The section's values, each of its default's kind (`_same_kind`)."""
    out: dict[str, Any] = {}
    for key, default in (cls.defaults or {}).items():
        value = values.get(key, default)
        if not _same_kind(value, default):
            raise SchemeConfigError(
                f"{cls.name}.{key}",
                f"{value!r} is not a {type(default).__name__} like its default {default!r}",
            )
        out[key] = float(value) if isinstance(default, float) else value
    return out


def register_scheme(cls: S) -> S:
    """Registers a `Scheme` subclass under its `name` (usable as a class decorator);
    registering a name again replaces the scheme. Raises FtlabError for a built-in name or
    one that is not letters, digits, `-` and `_`."""
    if not (isinstance(cls, type) and issubclass(cls, Scheme)):
        raise TypeError(f"{cls!r} is not a subclass of ftlab.Scheme")
    name = getattr(cls, "name", None)
    if not isinstance(name, str):
        raise TypeError(f"{cls.__name__} has no `name` (a str class attribute)")
    for method in ("read", "write", "trim"):
        if getattr(cls, method) is getattr(Scheme, method):
            raise TypeError(f"{cls.__name__} does not implement `{method}`")
    defaults = None if cls.defaults is None else json.dumps(dict(cls.defaults))
    unknown = [k for k in cls.advise if k not in (cls.defaults or {})]
    if unknown:
        raise TypeError(f"{cls.__name__}.advise names keys not in its defaults: {unknown}")
    advise = json.dumps({f"{name}.{k}": list(v) for k, v in cls.advise.items()})

    def build(device: Device, section: str) -> Scheme:
        return cls(device, _checked_section(cls, json.loads(section)))

    _core.register_scheme(
        name,
        cls.description or (cls.__doc__ or name).strip().splitlines()[0],
        defaults,
        build,
        append_only=cls.append_only,
        device_defaults=cls.device_defaults,
        family=cls.family,
        advise_json=advise,
    )
    _registered[name] = cls
    if _loading_plugins:
        _portable.add(name)
    else:
        _portable.discard(name)
    return cls


def register_native_scheme(address: int) -> str:
    """Registers a scheme built in its own Rust crate with `ftlab-scheme`: `address` is what
    its `ftlab_scheme_api()` returns (the template's Python module exports it as
    `SCHEME_API`; see examples/rust-scheme). Returns the scheme's name. Raises FtlabError
    for a scheme built for another version of the ABI."""
    name = _core.register_native_scheme(address)
    _native.add(name)
    if _loading_plugins:
        _portable.add(name)
    else:
        _portable.discard(name)
    return name


def unregister_scheme(name: str) -> bool:
    """Removes a registered scheme (Python or native); whether it was registered."""
    _registered.pop(name, None)
    _native.discard(name)
    return _core.unregister_scheme(name)


def python_schemes() -> dict[str, type[Scheme]]:
    """The registered Python schemes, by name."""
    return dict(_registered)


def in_process_only(name: str) -> bool:
    """Whether scheme `name` was registered in this process only (not by a plugin that a
    worker process would load too): runs of it must stay in this process (local runs are
    threads here; a Dask sweep refuses it)."""
    return (name in _registered or name in _native) and name not in _portable


_entry_points_loaded = False


def load_entry_points() -> None:
    """Registers the schemes of installed packages (entry-point group `ftlab.schemes`: each
    entry names a `Scheme` subclass, or a module or function that registers its schemes
    when loaded), and the plugins `FTLAB_PLUGINS` names (set by `--plugin`, for worker
    processes). Once per process. An installed package whose plugin fails to load is a
    warning naming it (its schemes are then unknown), not the end of every command."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    import os
    from importlib.metadata import entry_points

    for spec in filter(None, os.environ.get("FTLAB_PLUGINS", "").split(os.pathsep)):
        load_plugin(spec)
    for ep in _entry_points(entry_points):
        global _loading_plugins
        _loading_plugins += 1
        try:
            obj = ep.load()
            if isinstance(obj, type) and issubclass(obj, Scheme):
                if obj.name not in _registered:
                    register_scheme(obj)
            elif callable(obj):
                obj()
        except Exception as e:
            import warnings

            warnings.warn(
                f"the ftlab scheme plugin `{ep.name}` ({ep.value}) failed to load, its schemes "
                f"are left out: {e}",
                stacklevel=2,
            )
        finally:
            _loading_plugins -= 1


def _entry_points(entry_points: Any) -> list[Any]:
    """The group's entry points (Python 3.9's `entry_points()` takes no group)."""
    try:
        return list(entry_points(group=ENTRY_POINT_GROUP))
    except TypeError:
        return list(entry_points().get(ENTRY_POINT_GROUP, []))


def load_plugin(spec: str) -> None:
    """Imports a Python file (`path/to/schemes.py`) or module (`my_ftl.schemes`) for the
    schemes it registers; the file's or module's own errors are reported naming it. The
    modules are kept in `sys.modules`, so that worker processes started with `spawn` can
    find a file plugin's classes again through `FTLAB_PLUGINS`."""
    import importlib
    import importlib.util
    import os
    import sys
    from pathlib import Path

    global _loading_plugins
    _loading_plugins += 1
    try:
        if spec.endswith(".py") or os.sep in spec:
            path = Path(spec).resolve()
            if not path.is_file():
                raise _core.FtlabError(f"{spec}: no such plugin file")
            name = f"ftlab_plugin_{path.stem}"
            loader = importlib.util.spec_from_file_location(name, path)
            if loader is None or loader.loader is None:
                raise _core.FtlabError(f"{spec}: not a Python file")
            module = importlib.util.module_from_spec(loader)
            sys.modules[name] = module
            loader.loader.exec_module(module)
        else:
            importlib.import_module(spec)
    except _core.FtlabError:
        raise
    except Exception as e:
        raise _core.FtlabError(f"plugin {spec}: {type(e).__name__}: {e}") from e
    finally:
        _loading_plugins -= 1
    known = os.environ.get("FTLAB_PLUGINS", "")
    if spec not in known.split(os.pathsep):
        os.environ["FTLAB_PLUGINS"] = os.pathsep.join(p for p in (known, spec) if p)
