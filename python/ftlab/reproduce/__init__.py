"""Paper reproductions: `ftlab reproduce NAME` regenerates a paper's figures as tables and plots.

Each experiment is a module of this package with a function
`run(out_dir: pathlib.Path, quick: bool) -> None` that writes its tables (CSV and Markdown),
plots (PNG and SVG) and `summary.json` (its headline numbers beside the paper's: the
contract is in `_summary.py`) into `out_dir` and prints its tables. `quick` shrinks the
workloads so that the experiment runs in seconds (used by the tests). `ftlab reproduce all`
runs every experiment and gathers their summaries and plots into one HTML report
(`report.py`).

A module that sets `DEVICE_MODEL = "current"` runs on the current device model, preparing
and loading the device as it says (preconditioning, warm-up, unsaturated replays); any
other runs inside `ftlab.model_0_1()`, the model the first reproductions were set up on.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ftlab import model_0_1

# name -> (module, one-line description). Schemes register their experiments here.
EXPERIMENTS: dict[str, tuple[str, str]] = {}
EXPERIMENTS["selective"] = (
    "ftlab.reproduce.selective_tradeoff",
    "selective mapping-table loading: throughput at 25-75% of the table (IJASC'21 fig. 6a)",
)
EXPERIMENTS["selective-hints"] = (
    "ftlab.reproduce.selective_hints",
    "selective mapping-table loading: IOPS gain of journal hints (IJASC'21 fig. 6b)",
)
EXPERIMENTS["dftl"] = (
    "ftlab.reproduce.dftl_tpftl",
    "DFTL against TPFTL on real traces: translation writes and mean latency (EuroSys'15)",
)
EXPERIMENTS["demand-hit-ratio"] = (
    "ftlab.reproduce.demand_hit_ratio",
    "hit ratio of DFTL, S-FTL, TPFTL and selective loading against the DRAM budget",
)
EXPERIMENTS["slimftl"] = (
    "ftlab.reproduce.slimftl",
    "SlimFTL thesis (SNU 2020): HPFTL and SlimFTL vs the page-level FTL: mapping size, "
    "IOPS, GCs, WAF, LPA-shift sweep",
)
EXPERIMENTS["leaftl"] = (
    "ftlab.reproduce.leaftl",
    "LeaFTL (ASPLOS'23) vs DFTL and S-FTL on the real traces: mapping memory, error bound "
    "sweep, latency with one DRAM, lookup levels",
)
EXPERIMENTS["kraft"] = (
    "ftlab.reproduce.kraft",
    "KRAFT vs FAST, KAST and FFTL: merge response time and R/W latency (Table 2, Figure 4), "
    "DRAM, associativity sweep",
)
EXPERIMENTS["amf"] = (
    "ftlab.reproduce.amf",
    "Application-Managed Flash (FAST'16): mapping memory at 512 GB / 1 TB, WAF of EXT4, F2FS "
    "and AMF stacks, throughput on the paper's SSD",
)


def run(name: str, out_dir: Path, quick: bool = False) -> None:
    """Runs experiment `name`, writing its outputs into `out_dir`."""
    if name not in EXPERIMENTS:
        known = ", ".join(sorted(EXPERIMENTS)) or "none yet"
        raise KeyError(f"unknown experiment `{name}`; the experiments are: {known}")
    module = importlib.import_module(EXPERIMENTS[name][0])
    out_dir.mkdir(parents=True, exist_ok=True)
    if getattr(module, "DEVICE_MODEL", "0.1") == "current":
        module.run(out_dir, quick)
        return
    # Set up and checked against its paper on ftlab 0.1's device model, which it keeps
    # until it is redone on the current one (README, Reproductions).
    with model_0_1():
        module.run(out_dir, quick)
