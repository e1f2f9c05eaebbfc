"""A device's life, sampled: `ftlab lifetime` runs a workload at points spread over a
number of years, each on a device aged to that point, rather than replaying years request
by request.

At each point the device has worn as a host writing `dwpd` device writes per day for that
long would wear it: the mean P/E cycles of its blocks grow by the host's bytes times the
write amplification measured at the point before, over the flash's bytes
(`media.initial_pe_cycles`). The data it reads has the age of the data a host rewriting the
device `dwpd` times a day leaves behind, one device write's time (`1 / dwpd` days), or
`data_age_days` (`media.age_ns`), but never more than the device's age. Each point is one
ordinary run with the error model on (`media.error_model = "power-law"` unless the
configuration chose it), so its WAF, read retries, latency percentiles and wear are what a
run of the workload reports on a device of that age. The remaining life is the years left,
at the point's write amplification and the same `dwpd`, until the blocks reach
`media.rated_pe_cycles`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

DAY_NS = 86_400 * 10**9

#: The table's columns, in order.
COLUMNS = (
    "year",
    "pe_cycles",
    "data_age_days",
    "percentage_used",
    "waf",
    "retries_per_read",
    "uncorrectable_reads",
    "read_mean_us",
    "read_p99_us",
    "write_p99_us",
    "remaining_years",
)


def lifetime(
    ftl: str,
    *,
    years: float = 5.0,
    points: int = 6,
    dwpd: float = 1.0,
    data_age_days: float | None = None,
    sets: Sequence[str] = (),
    **source: Any,
) -> pl.DataFrame:
    """Runs `ftl` on the source (`ftlab.simulate`'s keyword arguments) at `points` ages
    from 0 to `years`, the host writing `dwpd` device writes per day; one row per point
    (see the module)."""
    import polars

    import ftlab

    if not (years > 0 and points >= 2 and dwpd > 0):
        raise ftlab.FtlabError(
            f"lifetime needs years > 0, at least 2 points and dwpd > 0 (got {years}, "
            f"{points}, {dwpd})"
        )
    if data_age_days is not None and data_age_days < 0:
        raise ftlab.FtlabError(f"the data's age must be 0 days or more (got {data_age_days})")
    model = [] if any(s.startswith("media.error_model") for s in sets) else [
        'media.error_model="power-law"'
    ]  # fmt: skip
    age_cap = 1.0 / dwpd if data_age_days is None else data_age_days
    rows: list[dict[str, Any]] = []
    pe = 0.0
    previous_year = 0.0
    wear_per_year = 0.0
    for i in range(points):
        year = years * i / (points - 1)
        pe += wear_per_year * (year - previous_year)
        previous_year = year
        age_days = min(year * 365.0, age_cap)
        point_sets = [
            *model,
            *sets,
            f"media.initial_pe_cycles={round(pe)}",
            f"media.age_ns={round(age_days * DAY_NS)}",
        ]
        result = ftlab.simulate(ftl, sets=point_sets, **source)
        device = result.report["device"]
        media = result.report["metrics"].get("media")
        if media is None:
            raise ftlab.FtlabError("the run reported no media section: is media.error_model on?")
        waf = result.summary["waf"] or 1.0
        # P/E cycles a year of `dwpd` host writes adds at this point's amplification.
        host_bytes_per_year = dwpd * device["logical_bytes"] * 365.0
        wear_per_year = host_bytes_per_year * waf / device["physical_bytes"]
        rated = media["rated_pe_cycles"]
        rows.append(
            {
                "year": year,
                "pe_cycles": round(pe),
                "data_age_days": age_days,
                "percentage_used": media["percentage_used"],
                "waf": waf,
                "retries_per_read": media["retries_per_read"] or 0.0,
                "uncorrectable_reads": media["uncorrectable_reads"],
                "read_mean_us": result.summary["read_mean_us"],
                "read_p99_us": result.summary["read_p99_us"],
                "write_p99_us": result.summary["write_p99_us"],
                "remaining_years": max(rated - pe, 0.0) / wear_per_year,
            }
        )
    return polars.DataFrame(rows, schema=list(COLUMNS), orient="row")


def plot(table: pl.DataFrame, path: Path, title: str) -> None:
    """WAF, read retries, read latency and remaining life over the years, one panel each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    years = table["year"].to_list()
    panels = [
        (axes[0][0], [("waf", "WAF")], "write amplification"),
        (axes[0][1], [("retries_per_read", "retries per read")], "read retries"),
        (
            axes[1][0],
            [("read_mean_us", "read mean"), ("read_p99_us", "read p99")],
            "read latency (us)",
        ),
        (axes[1][1], [("remaining_years", "remaining life")], "remaining life (years)"),
    ]
    for ax, series, label in panels:
        for column, name in series:
            ax.plot(years, table[column].to_list(), marker="o", label=name)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        if len(series) > 1:
            ax.legend()
    for ax in axes[1]:
        ax.set_xlabel("years in service")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
