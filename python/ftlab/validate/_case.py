"""What a validation case is: a reference value from outside ftlab (a closed form, a
physical bound, a peer simulator's figure), a simulation that measures the same quantity,
and a tolerance with its reason.

Simulations are grouped in `Run`s (one or a few `ftlab.simulate` calls whose measurements
several cases read: the M/D/1 mean and quantiles come from one run). A `Run`'s function
takes the extra `key=value` settings of the caller's `overrides` (applied to every
simulation, never to a reference) and returns named measurements; it is a module-level
function or a `functools.partial` of one, so that a process pool can run it.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Literal

from ftlab import _core

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10
    import tomli as tomllib

#: How a case compares its measurement with its reference:
#: `value`: |measured - reference| within the tolerance;
#: `upper`: measured at most reference (plus the tolerance): a physical bound;
#: `lower`: measured at least reference (minus the tolerance);
#: `range`: between `lower` and the reference (plus the tolerance);
#: `bracket`: two measurements on either side of the reference: `measure` at most the
#: reference plus the tolerance, `measure_high` at least the reference (a stated cause of a
#: difference checked by experiment: the model with and without it).
Check = Literal["value", "upper", "lower", "range", "bracket"]

#: Measurements of one run, by name.
Measurements = dict[str, float]
RunFunction = Callable[[Sequence[str]], Measurements]


@dataclass(frozen=True)
class Run:
    """One simulation job (or a few): its function returns the measurements its cases
    read. `cost` is a rough weight (seconds) used to start the longest jobs first."""

    key: str
    family: str
    func: RunFunction
    cost: float = 1.0


@dataclass(frozen=True)
class Case:
    """One reference check.

    `reference` comes from `source` (a paper and its equation, a formula, a physical
    bound, a peer's figure), never from ftlab's own output. `tolerance` is relative
    (a share of the reference) when `relative`, else absolute (in `unit`); `reason` says
    in one line why it is what it is. `run` and `measure` name the measurement. `x` and
    `series` place the case on its family's plot. A case with `expected_failure` (a
    reason) is reported as `xfail` when it fails and does not fail the scorecard.
    """

    family: str
    name: str
    run: str
    measure: str
    reference: float
    source: str
    tolerance: float
    reason: str
    relative: bool = True
    check: Check = "value"
    lower: float | None = None
    unit: str = ""
    x: float | None = None
    x_label: str = ""
    series: str = ""
    expected_failure: str | None = None
    measure_high: str | None = None

    @property
    def tolerance_text(self) -> str:
        """The tolerance as printed: `±2%`, `±0.5 us`, `<= bound`, ..."""
        if self.relative:
            amount = f"{self.tolerance * 100:.3g}%"
        else:
            amount = (
                f"{self.tolerance / 1000:.3g} us"
                if self.unit == "ns"
                else f"{self.tolerance:.3g}{' ' + self.unit if self.unit else ''}"
            )
        if self.check == "value":
            return f"±{amount}"
        if self.check == "upper":
            return f"<= ref +{amount}"
        if self.check == "lower":
            return f">= ref -{amount}"
        if self.check == "bracket":
            return f"low <= ref +{amount}, high >= ref"
        assert self.lower is not None
        return f"{self.lower:.4g}..ref +{amount}"

    def slack(self) -> float:
        """The tolerance in the unit of the reference."""
        return self.tolerance * abs(self.reference) if self.relative else self.tolerance

    def passes(self, measured: float, high: float | None = None) -> bool:
        """Whether `measured` (and, for a `bracket`, `high`) meets the reference."""
        if not math.isfinite(measured):
            return False
        slack = self.slack()
        if self.check == "bracket":
            if high is None or not math.isfinite(high):
                return False
            return measured <= self.reference + slack and high >= self.reference
        if self.check == "value":
            return abs(measured - self.reference) <= slack
        if self.check == "upper":
            return measured <= self.reference + slack
        if self.check == "lower":
            return measured >= self.reference - slack
        assert self.lower is not None
        return self.lower - slack <= measured <= self.reference + slack


def toml_value(value: Any) -> str:
    """A Python value as the TOML text of a `--set key=value` override."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot express {value!r} as a configuration value")


def sets(values: Mapping[str, Any]) -> list[str]:
    """`key=value` overrides of a mapping of configuration keys."""
    return [f"{key}={toml_value(value)}" for key, value in values.items()]


def resolved(preset: str | None, values: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration a case's simulations run on, without the caller's overrides:
    what the references are computed from."""
    text = _core.config_show(None, preset=preset, sets=sets(values))
    return tomllib.loads(text)


def channel_transfer_ns(cfg: Mapping[str, Any]) -> int:
    """The channel time of one page with its OOB bytes, as the timing model rounds it
    (crates/ftlab-core/src/device/timing.rs, `Timeline::new`): ceil(bytes x 1e9 / rate)."""
    geometry, nand = cfg["geometry"], cfg["nand"]
    size = int(geometry["page_size"]) + int(geometry["oob_size"])
    rate = int(nand["channel_bytes_per_s"])
    return -(-size * 1_000_000_000 // rate)
