"""Steady state, as the SNIA Solid State Storage Performance Test Specification (PTS)
describes it: random writes to a fresh device go from fresh-out-of-box (FOB: no garbage
collection, WAF 1, the dies' program rate) through a transition to a steady state (the
WAF of the GC model, IOPS lower by the GC's die time). And ftlab's steady
preconditioning stops once the WAF is steady by the PTS rule.

References: FOB WAF 1 (nothing to collect while free blocks last); FOB IOPS between the
product-form closed-network throughput and the dies' bound dies / (t_x + tPROG); steady
WAF the mean-field greedy limit at the configuration's effective spare factor
(`gc.greedy_wa`, `gc.effective_spare`); steady IOPS the dies' time per host write at that
WAF: each host write costs its program (t_x + tPROG), WA - 1 copy-backs (tR + tPROG, on
the die only) and WA / b of an erase, so X = dies / (t_x + tPROG + (WA - 1)(tR + tPROG)
+ WA tBERS / b).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from ftlab.validate._case import Case, Measurements, Run, channel_transfer_ns, resolved, sets
from ftlab.validate.gc import GREEDY, effective_spare, greedy_wa, logical_pages, random_writes
from ftlab.validate.queueing import _interface, closed_loop_product_form

FAMILY = "steady"
#: The timed steady state is not yet modelled: see the cases.
TIMED_STEADY = (
    "under investigation: in a saturated timed closed loop background GC has no idle time, "
    "so the free-block level (and the effective a) is not the mapping-only one that "
    "gc.effective_spare derives; measured WAF 4.5 against 6.1 (256 blocks per unit)"
)
SNIA = "SNIA PTS (Solid State Storage Performance Test Specification) v2.0, steady state"


def device(blocks: int, timed: bool) -> dict[str, Any]:
    """4 dies on 2 channels, one plane each (one parallel unit per die), 64-page blocks,
    10% OP, no buffer, multi-plane off (each program its own t_x + tPROG)."""
    return {
        "geometry.channels": 2,
        "geometry.chips_per_channel": 2,
        "geometry.dies_per_chip": 1,
        "geometry.planes_per_die": 1,
        "geometry.blocks_per_plane": blocks,
        "geometry.pages_per_block": 64,
        "geometry.page_size": 4096,
        "ftl.over_provisioning": 0.1,
        "buffer.size_bytes": 0,
        "gc.policy": "greedy",
        "scheduler.multi_plane": False,
        "precondition.warmup": False,
        "replay.timing": timed,
        **(_interface() if timed else {}),
    }


def measure_transient(
    values: dict[str, Any], window: int, overrides: Sequence[str]
) -> Measurements:
    """WAF and IOPS of the first window and of the last three (samples every `window`
    requests)."""
    import ftlab

    result = ftlab.simulate("page", sets=[*sets(values), *overrides])
    ts = result.report["metrics"]["time_series"]
    req, t, host, prog = (
        ts["request"],
        ts["time_ns"],
        ts["host_pages_written"],
        ts["flash_programs"],
    )
    # Samples every `window` requests, at the sampled request's arrival: in a closed loop
    # arrivals run QD requests ahead of completions, so rates are taken between samples.
    first = next(i for i, r in enumerate(req) if r >= window)
    second = next(i for i, r in enumerate(req) if r >= 2 * window)
    last = len(req) - 1
    tail = max(second, last - 3)
    return {
        "fob_waf": prog[second] / host[second],
        "fob_iops": (req[second] - req[first]) / ((t[second] - t[first]) / 1e9),
        "steady_waf": (prog[last] - prog[tail]) / (host[last] - host[tail]),
        "steady_iops": (req[last] - req[tail]) / ((t[last] - t[tail]) / 1e9),
    }


def measure_precondition(values: dict[str, Any], overrides: Sequence[str]) -> Measurements:
    """Whether steady preconditioning settled, and the mean WAF of its last windows."""
    import ftlab

    result = ftlab.simulate("page", sets=[*sets(values), *overrides])
    pre = result.report["precondition"]
    windows = int(result.report["config"]["precondition"]["windows"])
    last = pre["window_waf"][-windows:]
    return {"settled": 1.0 if pre["steady"] else 0.0, "waf": sum(last) / len(last)}


def catalogue(quick: bool) -> tuple[list[Run], list[Case]]:
    runs: list[Run] = []
    cases: list[Case] = []
    # Timed: a fresh device, closed-loop random writes, QD 32, 4 logical capacities.
    blocks = 256 if quick else 512
    values = {
        **device(blocks, timed=True),
        **random_writes(1, seed=3),
        "precondition.mode": "none",
        "replay.mode": "closed",
        "replay.queue_depth": 32,
    }
    cfg = resolved(None, values)
    pages = logical_pages(cfg)
    window = pages // 8
    values["workload.requests"] = 4 * pages
    values["metrics.sample_every_requests"] = window
    runs.append(Run("transient", FAMILY, functools.partial(measure_transient, values, window), 2))
    a = effective_spare(cfg)
    wa = greedy_wa(a, 64)
    nand = cfg["nand"]
    t_x = channel_transfer_ns(cfg)
    dies = 4
    program = t_x + nand["program_latency_ns"]
    fob_bound = dies / program * 1e9
    fob_lower = closed_loop_product_form(dies, 32, program) * 1e9
    copy = nand["read_latency_ns"] + nand["program_latency_ns"]
    steady_iops = dies / (program + (wa - 1) * copy + wa * nand["erase_latency_ns"] / 64) * 1e9
    setup = f"fresh device, {dies} dies, {blocks} x 64-page blocks, OP 10%, QD 32 random writes"
    cases += [
        Case(
            family=FAMILY,
            name=f"FOB WAF, first 2/8 capacity, {setup}",
            run="transient",
            measure="fob_waf",
            reference=1.0,
            source="physical: nothing to collect while free blocks last",
            tolerance=0.0,
            relative=False,
            reason="exact",
            x=0,
            x_label="phase (0 FOB, 1 steady)",
            series="WAF",
        ),
        Case(
            family=FAMILY,
            name=f"FOB IOPS, 2nd 1/8 capacity, {setup}",
            run="transient",
            measure="fob_iops",
            reference=fob_bound,
            lower=fob_lower,
            check="range",
            source=(
                "dies / (t_x + tPROG); lower: product-form closed network "
                "(dies QD / ((QD + dies - 1)(t_x + tPROG)))"
            ),
            tolerance=dies / window,
            reason=(
                "bounds; a window of requests between two arrival samples may complete up "
                "to one operation per die more than the rate allows: dies / window"
            ),
            unit="IOPS",
            x=0,
            x_label="phase (0 FOB, 1 steady)",
            series="IOPS",
        ),
        Case(
            family=FAMILY,
            name=f"steady WAF, last 3/8 of 4 capacities, {setup} (a_eff={a:.4f})",
            run="transient",
            measure="steady_waf",
            reference=wa,
            source=f"{SNIA}; WAF: {GREEDY}",
            tolerance=0.04,
            reason=(
                "4%: 3 windows of 1/8 capacity vary by ~1.5%; 4 units collect apart "
                "(per-unit occupancy varies) on 256-512 blocks each (greedy's finite-size gain)"
            ),
            x=1,
            x_label="phase (0 FOB, 1 steady)",
            series="WAF",
            expected_failure=TIMED_STEADY,
        ),
        Case(
            family=FAMILY,
            name=f"steady IOPS, last 3/8 of 4 capacities, {setup}",
            run="transient",
            measure="steady_iops",
            reference=steady_iops,
            source=(
                "die time per host write at the greedy WA: dies / (t_x + tPROG + "
                "(WA-1)(tR + tPROG) + WA tBERS / b)"
            ),
            tolerance=0.05,
            reason="5%: the WA's own tolerance (4%) and the windows' spread",
            unit="IOPS",
            expected_failure=TIMED_STEADY,
            x=1,
            x_label="phase (0 FOB, 1 steady)",
            series="IOPS",
        ),
    ]
    # Mapping-only: steady preconditioning settles by the PTS rule, at the model's WAF.
    pre_blocks = 512 if quick else 1024
    pre_values = {
        **device(pre_blocks, timed=False),
        **random_writes(1000, seed=3),
        "precondition.mode": "steady",
    }
    pre_cfg = resolved(None, pre_values)
    runs.append(Run("precondition", FAMILY, functools.partial(measure_precondition, pre_values)))
    pre_a = effective_spare(pre_cfg)
    cases += [
        Case(
            family=FAMILY,
            name=f"steady preconditioning settles, 4 units x {pre_blocks} blocks, OP 10%",
            run="precondition",
            measure="settled",
            reference=1.0,
            check="lower",
            source=f"{SNIA}: WAF range within 20% and slope within 10% over 5 windows",
            tolerance=0.0,
            relative=False,
            reason="a yes/no criterion",
        ),
        Case(
            family=FAMILY,
            name=f"WAF of the settled windows, 4 units x {pre_blocks} blocks (a_eff={pre_a:.4f})",
            run="precondition",
            measure="waf",
            reference=greedy_wa(pre_a, 64),
            source=GREEDY,
            tolerance=0.04,
            reason="4%: as the steady WAF above (windows of 1/8 capacity, 4 units)",
            x=1,
            x_label="phase (0 FOB, 1 steady)",
            series="WAF (preconditioning)",
        ),
    ]
    return runs, cases
