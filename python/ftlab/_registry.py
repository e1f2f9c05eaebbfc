"""What the core knows: its schemes (with the registered ones), families, host stacks,
presets, flash operation causes, workloads and trace formats, the rule of a `STACK+SCHEME`
name, and the typed summary of a report. Re-exported by the package."""

from __future__ import annotations

import json
from typing import Any

from ftlab import _core
from ftlab._core import FtlabError
from ftlab._scheme import load_entry_points


def split_stack(name: str) -> tuple[str | None, str]:
    """A scheme named with its host stack, `STACK+SCHEME` (`f2fs+dftl`, `alfs+aftl`): the
    stack (None when not named) and the scheme (the core's rule)."""
    return _core.split_stack(name)


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers of a report (latencies in microseconds; None where not measured).

    `saturated` is True when an open-loop replay outran the device (its latencies then
    measure the queue), `saturated_in_bursts` when it did so only in bursts (in its busiest
    second, `peak_window_utilisation`, a die was given more than a second's work);
    `busiest_die_utilisation` is the busiest die's busy share of the
    run (None in mapping-only runs); `precondition_mode` and `precondition_waf` say how
    the device was prepared (None in reports of cores without preconditioning).

    Log-block schemes (block, bast, fast, kast, fftl, kraft) add `log_blocks`,
    `merges_switch`, `merges_partial`, `merges_full` (per logical block),
    `merge_pages_copied`, `merge_time_mean_us` and `merge_time_max_us` (from the first to
    the last flash operation of each merge operation, timed runs), `merge_cost_mean_us`
    and `merge_cost_max_us` (the serial cost model, copies x (tR + tPROG) + erases x
    tBERS) and `log_utilisation_at_merge` (share of a victim log block written); None for
    the other schemes.

    The core computes it (`ftlab._core.summarize`; its fields and their types:
    `_core.summary_columns()`), from the report's JSON, so that saved reports summarise
    the same way."""
    return dict(json.loads(_core.summarize(json.dumps(report))))


def presets() -> list[tuple[str, str]]:
    """(name, description) of each configuration preset."""
    return list(_core.presets())


def stacks() -> list[tuple[str, str]]:
    """(name, description) of each host stack (`host.stack`)."""
    return list(_core.stacks())


def scheme_info(family: str | None = None) -> list[dict[str, Any]]:
    """Everything the registry knows of each scheme (of `family`, if given), built-in ones
    in registry order then the registered ones: `name`, `description`, `family` (see
    `families()`), `builtin`, `append_only`, `section` (its configuration defaults, or
    None), `device_defaults` (TOML it applies over the preset, or None) and `advise` (its
    own parameters `ftlab advise` sweeps: full key -> values)."""
    load_entry_points()
    info: list[dict[str, Any]] = json.loads(_core.scheme_info())
    if family is not None:
        known = {name for name, _ in _core.families()}
        if family not in known:
            raise FtlabError(f"unknown family `{family}`; the families are: {', '.join(known)}")
        info = [s for s in info if s["family"] == family]
    return info


def families() -> list[tuple[str, str]]:
    """(name, description) of each family of schemes (`scheme_info()["family"]`)."""
    return list(_core.families())


def schemes() -> list[tuple[str, str]]:
    """(name, description) of each FTL scheme, as the core registers them: the built-in
    ones, then the registered ones (`register_scheme`, installed plugins)."""
    load_entry_points()
    return list(_core.schemes())


def causes() -> list[tuple[str, str, str]]:
    """(name, group, description) of each flash operation cause, in report order: the keys
    of a report's `flash.reads`, `flash.programs` and `flash.erases` (then `total`). The
    group (`host`, `gc`, `translation`, `misprediction`, `merge`) is the family a summary
    adds up (`merge_reads` is every `merge` cause's reads)."""
    return list(_core.causes())


def workloads() -> list[tuple[str, str]]:
    """(name, description) of each built-in synthetic workload."""
    return list(_core.workloads())


def trace_formats() -> list[tuple[str, list[str], str, str, str]]:
    """(name, aliases, description, time unit, example line) of each trace format."""
    return list(_core.trace_formats())
