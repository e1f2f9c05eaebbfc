"""Paper reproductions: `ftlab reproduce NAME` regenerates a paper's figures as tables and plots.

Each experiment is a module of this package with a function
`run(out_dir: pathlib.Path, quick: bool) -> None` that writes its tables (CSV and Markdown),
plots (PNG and SVG) and `summary.json` (its headline numbers beside the paper's: the
contract is in `_summary.py`) into `out_dir` and prints its tables. `quick` shrinks the
workloads so that the experiment runs in seconds (used by the tests). `ftlab reproduce all`
runs every experiment and gathers their summaries and plots into one HTML report
(`report.py`). After an experiment's `run`, `NAME.md` is written beside its outputs: its
report in Markdown, from its `summary.json` (`markdown.py`).

A module that sets `DEVICE_MODEL = "current"` runs on the current device model, preparing
and loading the device as it says (preconditioning, warm-up, unsaturated replays); any
other runs inside `ftlab.model_0_1()`, the model the first reproductions were set up on.
`run` writes `model.json` beside the experiment's outputs: which model it ran on and which
`ftlab validate` families validate that model (`MODELS`); `ftlab reproduce all` runs the
quick scorecard into `validation/` and links it.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

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

EXPERIMENTS["zns"] = (
    "ftlab.reproduce.zns",
    "ZNS (ATC'21) vs block SSDs at 7% and 28% OP: throughput and WAF over data written "
    "(Figure 1); AMF's ALFS on a standard zoned device vs AFTL",
)
EXPERIMENTS["fdp"] = (
    "ftlab.reproduce.fdp",
    "FDP (EuroSys'25, CacheLib on FDP): device WAF with matched, no, adversarial and "
    "lifetime-classified placement",
)

EXPERIMENTS["learnedftl"] = (
    "ftlab.reproduce.learnedftl",
    "LearnedFTL (HPCA'24) vs TPFTL, DFTL and LeaFTL on the real traces: double reads, read "
    "tail latency",
)

#: The device models a reproduction may run on, and the `ftlab validate` families that
#: check each: the GC closed forms and the timing (queueing, bandwidth) cases hold under
#: both; the steady-state and peer families run the current model's background GC, write
#: buffer destaging and host interface (the peer: MQSim's write-back and interface).
MODELS: dict[str, dict[str, Any]] = {
    "0.1": {
        "name": "model 0.1",
        "description": (
            "ftlab 0.1's device model (ftlab.model_0_1()): flash operations in issue order "
            "(no read priority, suspend or multi-plane), foreground GC, a write buffer that "
            "flushes only when full, no host interface or DRAM time, a fresh device"
        ),
        "validated_by": ["gc", "timing"],
    },
    "current": {
        "name": "the current model",
        "description": (
            "the current device model: read priority, program/erase suspend, multi-plane "
            "operations, background GC, watermark destaging of the write buffer, host "
            "interface and DRAM time"
        ),
        "validated_by": ["gc", "timing", "steady", "peer"],
    },
}
#: Written into each experiment's folder by `run`.
MODEL_FILE = "model.json"
#: Where `ftlab reproduce all` writes the quick scorecard (relative to its folder).
VALIDATION_DIR = "validation"


def device_model(name: str) -> str:
    """The device model experiment `name` runs on: "0.1" or "current"."""
    module = importlib.import_module(EXPERIMENTS[name][0])
    return "current" if getattr(module, "DEVICE_MODEL", "0.1") == "current" else "0.1"


def model_record(model: str) -> dict[str, Any]:
    """`model.json`'s content for `model`."""
    return {
        "device_model": model,
        **MODELS[model],
        "scorecard": f"ftlab validate (families {', '.join(MODELS[model]['validated_by'])})",
    }


def _module(name: str) -> Any:
    if name not in EXPERIMENTS:
        known = ", ".join(sorted(EXPERIMENTS)) or "none yet"
        raise KeyError(f"unknown experiment `{name}`; the experiments are: {known}")
    return importlib.import_module(EXPERIMENTS[name][0])


def has_why(name: str) -> bool:
    """Whether experiment `name` checks its stated causes (`_why.py`)."""
    return callable(getattr(_module(name), "why", None))


def run(name: str, out_dir: Path, quick: bool = False, why: bool = False) -> None:
    """Runs experiment `name`, writing its outputs into `out_dir`; with `why`, runs the
    experiments behind its stated causes instead and writes `why.json` (`_why.py`)."""
    module = _module(name)
    if why:
        _run_why(name, module, out_dir, quick)
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    model = device_model(name)
    record = model_record(model)
    (out_dir / MODEL_FILE).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    print(
        f"{name}: runs on {record['name']}; validated by `ftlab validate` "
        f"(families {', '.join(record['validated_by'])})",
        flush=True,
    )
    if model == "current":
        module.run(out_dir, quick)
    else:
        # Set up and checked against its paper on ftlab 0.1's device model, which it keeps
        # until it is redone on the current one (docs: Reproductions).
        with model_0_1():
            module.run(out_dir, quick)
    from ftlab.reproduce import markdown

    print(f"{name}: report {markdown.write(name, out_dir, quick)}", flush=True)


def _run_why(name: str, module: Any, out_dir: Path, quick: bool) -> None:
    from ftlab.reproduce import _why

    if not callable(getattr(module, "why", None)):
        raise KeyError(f"experiment `{name}` states no cause to check (it has no `why`)")
    out_dir.mkdir(parents=True, exist_ok=True)
    if device_model(name) == "current":
        experiments = module.why(out_dir, quick)
    else:
        with model_0_1():
            experiments = module.why(out_dir, quick)
    path = _why.write(out_dir, experiments)
    print(_why.table(experiments), flush=True)
    print(f"{name}: {len(experiments)} causes checked: {path}", flush=True)
