"""The experiments behind the causes a reproduction states: `why.json`.

Where a headline misses the paper, the reproduction states a cause (the headline's
`reason`, `_summary.py`). A cause is a claim about our model or our setup, and a claim is
checked by an experiment: change that one thing, measure the headline again, and see
whether it moves toward the paper's value (closing at least a tenth of the gap, in log
ratio). `ftlab reproduce NAME --why` runs them.

A reproduction that states causes defines

    why(out_dir: pathlib.Path, quick: bool) -> list[Experiment]

which runs, for each stated cause, the headline once in the reproduction's own setup
(`before`) and once with the one thing the cause names changed (`after`); `run` writes
them into `why.json` in `out_dir` and prints them. An experiment that does not move the
headline toward the paper refutes its cause: the cause is then removed from the
reproduction's reasons, not kept beside the experiment that contradicts it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ftlab.reproduce._summary import DIFFERENCE, _round, read_json_list, write_json

WHY_FILE = "why.json"
#: The share of the gap (in log ratio) a change must close to count as moving the headline
#: toward the paper's.
MIN_SHARE_CLOSED = 0.1


@dataclass(frozen=True)
class Experiment:
    """One cause checked: headline `key` in the reproduction's setup (`before`) and with
    the one thing the cause names changed (`after`), beside the paper's value."""

    key: str
    cause: str
    change: str
    before: float
    after: float
    paper_value: float
    unit: str = "x"
    #: "log" for ratios and other positive quantities (half and double are as far);
    #: "linear" for signed ones, such as a gain in percent that may be negative.
    scale: str = "log"

    @staticmethod
    def _log_distance(value: float, paper: float) -> float:
        """|log(value / paper)| (inf if either is not positive)."""
        if value <= 0 or paper <= 0:
            return math.inf if value != paper else 0.0
        return abs(math.log(value / paper))

    def _distance(self, value: float) -> float:
        """How far `value` is from the paper's, on the experiment's scale."""
        if self.scale == "linear":
            return abs(value - self.paper_value)
        return self._log_distance(value, self.paper_value)

    @property
    def moves_toward_paper(self) -> bool:
        """The change closes at least `MIN_SHARE_CLOSED` of the distance to the paper's value
        (a change that barely moves the headline does not show a cause)."""
        before = self._distance(self.before)
        after = self._distance(self.after)
        return after < before and (
            math.isinf(before) or before - after >= MIN_SHARE_CLOSED * before
        )

    @property
    def closes_the_gap(self) -> bool:
        """With the change, the headline is within the report's band of the paper's."""
        return self._log_distance(self.after, self.paper_value) <= math.log(1 + DIFFERENCE)

    @property
    def verdict(self) -> str:
        if self.closes_the_gap and self.moves_toward_paper:
            return "explains the miss"
        if self.moves_toward_paper:
            return "explains part of the miss"
        return "refuted"


def write(out_dir: Path, experiments: list[Experiment]) -> Path:
    """Writes `why.json`: one object per experiment, with its verdict."""
    rows: list[dict[str, Any]] = []
    for e in experiments:
        row: dict[str, Any] = asdict(e)
        for k in ("before", "after", "paper_value"):
            row[k] = _round(row[k])
        row["verdict"] = e.verdict
        rows.append(row)
    return write_json(out_dir / WHY_FILE, rows)


def read(path: Path) -> list[Experiment]:
    """The experiments of a `why.json` (ValueError naming the file on a bad entry)."""
    data = read_json_list(path, "experiments")
    out = []
    for i, row in enumerate(data):
        try:
            out.append(
                Experiment(
                    key=str(row["key"]),
                    cause=str(row["cause"]),
                    change=str(row["change"]),
                    before=float(row["before"]),
                    after=float(row["after"]),
                    paper_value=float(row["paper_value"]),
                    unit=str(row.get("unit", "x")),
                    scale=str(row.get("scale", "log")),
                )
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{path}: entry {i}: {e}") from e
    return out


def table(experiments: list[Experiment]) -> str:
    """A Markdown table of the experiments."""
    lines = [
        "| headline | change | before | after | paper | verdict |",
        "|---|---|---:|---:|---:|---|",
    ]
    for e in experiments:
        lines.append(
            f"| {e.key} | {e.change} | {e.before:.4g} | {e.after:.4g} | "
            f"{e.paper_value:.4g} {e.unit} | {e.verdict} |"
        )
    return "\n".join(lines)
