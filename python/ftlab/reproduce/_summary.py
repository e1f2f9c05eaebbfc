"""The headline numbers of a reproduction, beside the paper's: `summary.json`.

Every reproduction writes `summary.json` into its output folder: a JSON list with one
object per headline number, each with at least

- `paper` (str): the paper, e.g. "LeaFTL (ASPLOS'23)";
- `metric` (str): what is measured, in words;
- `ours` (number or null): this version's value (null: not measured in this run, for
  example a trace that is absent);
- `paper_value` (number or null): the paper's value (null: the paper gives a shape, not a
  number);
- `unit` (str): the unit of both values ("x" for a ratio, "%", "us", ...);

and optionally

- `key` (str): a stable identifier, unique within the file (tests look headlines up by it);
- `reason` (str): one line saying why ours differs from the paper's; `ftlab reproduce all`
  prints it wherever the two differ by more than `DIFFERENCE` (30%), and says "no reason
  given" where a reproduction gave none;
- `setup` (str): one line on how ours was measured (device preparation, replay, load).

`ftlab reproduce all` (`report.py`) reads these files; any reproduction, present or to
come, takes part in the report by writing one.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: Ours and the paper's differ when their ratio is off 1 by more than this.
DIFFERENCE = 0.3

REQUIRED = ("paper", "metric", "ours", "paper_value", "unit")


@dataclass(frozen=True)
class Headline:
    paper: str
    metric: str
    ours: float | None
    paper_value: float | None
    unit: str
    key: str = ""
    reason: str = ""
    setup: str = ""

    @property
    def ratio(self) -> float | None:
        """Ours over the paper's, where both are numbers and the paper's is not zero."""
        if self.ours is None or self.paper_value is None or self.paper_value == 0:
            return None
        return self.ours / self.paper_value

    @property
    def differs(self) -> bool:
        """Whether ours is more than DIFFERENCE away from the paper's (in ratio, either way:
        half and double are as far)."""
        r = self.ratio
        if r is None:
            return False
        if r <= 0:
            return True
        return max(r, 1 / r) > 1 + DIFFERENCE


def write(out_dir: Path, headlines: list[Headline]) -> Path:
    """Writes `summary.json` (the headlines in order, keys sorted, numbers rounded to six
    significant digits so that the file does not change with the last bits of a float)."""
    keys = [h.key for h in headlines if h.key]
    if len(keys) != len(set(keys)):
        raise ValueError(f"headline keys repeat: {keys}")
    rows = []
    for h in headlines:
        row: dict[str, Any] = {k: v for k, v in asdict(h).items() if v != "" or k in REQUIRED}
        for k in ("ours", "paper_value"):
            row[k] = _round(row[k])
        rows.append(row)
    return write_json(out_dir / "summary.json", rows)


def write_json(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Writes `rows` as the reproductions' JSON files are written: indented, keys sorted."""
    path.write_text(json.dumps(rows, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    return path


def read_json_list(path: Path, what: str) -> list[Any]:
    """The JSON list in `path`; ValueError naming the file when it is not JSON or not a
    list (of `what`)."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from e
    if not isinstance(data, list):
        raise ValueError(f"{path}: a list of {what} expected, not {type(data).__name__}")
    return data


def read(path: Path) -> list[Headline]:
    """The headlines of a `summary.json`; raises ValueError naming the file and the entry
    that breaks the contract above."""
    data = read_json_list(path, "headlines")
    out = []
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: entry {i} is not an object")
        missing = [k for k in REQUIRED if k not in row]
        if missing:
            raise ValueError(f"{path}: entry {i} lacks {', '.join(missing)}")
        for k in ("ours", "paper_value"):
            v = row[k]
            if v is not None and (
                isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
            ):
                raise ValueError(f"{path}: entry {i}: `{k}` must be a number or null, not {v!r}")
        out.append(
            Headline(
                paper=str(row["paper"]),
                metric=str(row["metric"]),
                ours=None if row["ours"] is None else float(row["ours"]),
                paper_value=None if row["paper_value"] is None else float(row["paper_value"]),
                unit=str(row["unit"]),
                key=str(row.get("key", "")),
                reason=str(row.get("reason", "")),
                setup=str(row.get("setup", "")),
            )
        )
    return out


def by_key(headlines: list[Headline]) -> dict[str, Headline]:
    return {h.key: h for h in headlines if h.key}


def _round(value: float | None) -> float | None:
    if value is None:
        return None
    if value == 0 or not math.isfinite(value):
        return float(value)
    return float(f"{value:.6g}")


def geomean(values: list[float]) -> float | None:
    """The geometric mean of the positive values (None when there are none)."""
    xs = [x for x in values if x > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def mismatches(
    headlines: list[Headline], expected: dict[str, float], rel: float, absolute: float = 0.0
) -> list[str]:
    """The headlines whose value is not within `rel` (a share of the expected value), or
    `absolute` if that is more, of `expected` (key -> value), one line each; empty when
    every one is."""
    found = by_key(headlines)
    out = []
    for key, value in expected.items():
        h = found.get(key)
        if h is None or h.ours is None:
            out.append(f"{key}: missing (expected {value:g})")
        elif abs(h.ours - value) > max(rel * abs(value), absolute):
            out.append(f"{key}: {h.ours:.4g}, expected {value:.4g} within {rel:.0%}")
    return out
