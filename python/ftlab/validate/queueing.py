"""The timing engine against queueing theory and the device's physical limits.

- Poisson reads on one die: an M/D/1 queue (service D = tR + one page's channel transfer:
  the die is held until its data is out, crates/ftlab-core/src/device/timing.rs). Mean response
  D + rho D / (2 (1 - rho)) (Pollaczek-Khinchine); quantiles from the exact M/D/1 waiting
  time distribution (Erlang 1909; Crommelin 1932): P(W <= t) = (1 - rho) sum_{k=0}^{floor(t/D)}
  (lambda (kD - t))^k / k! e^{-lambda (kD - t)}, computed in 60-digit decimals (the sum
  alternates). Standard deviation of the response (the core's exact `stdev_ns`, population
  standard deviation): from the P-K second moment,
  Var W = rho D^2 / (3 (1 - rho)) + (rho D / (2 (1 - rho)))^2.
  Tolerances are statistical: 4 standard errors of the estimate for the same number of
  requests, the standard errors from replications of the M/D/1 Lindley recursion (numpy,
  fixed seed; independent of ftlab), plus the latency histogram's 3-digit resolution.
- Closed-loop random reads: IOPS at most min(QD / D, dies / D, channels / transfer), and
  at least the product-form throughput of the same closed network with exponential service
  (dies x QD / ((QD + dies - 1) D)); Little's law QD = X R on every closed-loop run.
- Sequential bandwidth: min(channels x page / transfer, dies x planes x page / (die time of
  one multi-plane operation)).

The host interface is not part of these models: where the core has `interface.command_ns`
and `interface.link_bytes_per_s`, they are set to 0.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from decimal import Decimal, localcontext
from typing import Any

from ftlab.validate._case import Case, Measurements, Run, channel_transfer_ns, resolved, sets

FAMILY = "timing"

MD1 = "M/D/1, Pollaczek-Khinchine mean (Kleinrock, Queueing Systems vol. 1, eq. 5.72)"
MD1_DIST = "M/D/1 waiting-time distribution (Erlang 1909; Crommelin 1932), exact sum"
LITTLE = "Little's law, L = X R (Little 1961): QD outstanding at all times but the final drain"
CLOSED_BOUND = "physical bound min(QD/D, dies/D, channels/transfer), D = tR + transfer"
CLOSED_LOWER = (
    "product-form closed network, dies identical exponential servers, uniform routing: "
    "X = dies QD / ((QD + dies - 1) D); deterministic service does at least as well"
)
BANDWIDTH = "physical bound min(channels x page/transfer, dies x planes x page / die time)"

#: The host-interface keys the core may have (set to 0: not in the models).
INTERFACE_OFF = {"interface.command_ns": 0, "interface.link_bytes_per_s": 0}


def has_interface_keys() -> bool:
    """Whether the core knows the host-interface keys."""
    from ftlab import _core

    try:
        _core.config_show(None, sets=sets(INTERFACE_OFF))
    except _core.FtlabError:
        return False
    return True


# --- Reference formulas -------------------------------------------------------------------


def md1_mean_response(service: float, rho: float) -> float:
    """Mean response time of an M/D/1 queue: D + rho D / (2 (1 - rho))."""
    if not 0 <= rho < 1:
        raise ValueError(f"utilisation must be in [0, 1), not {rho}")
    return service + rho * service / (2 * (1 - rho))


def md1_response_variance(service: float, rho: float) -> float:
    """Variance of the M/D/1 response time (= of the wait, D being constant): from the
    Pollaczek-Khinchine moments, E[W^2] = 2 E[W]^2 + lambda E[S^3] / (3 (1 - rho))."""
    wait = rho * service / (2 * (1 - rho))
    return rho * service**2 / (3 * (1 - rho)) + wait**2


def md1_wait_cdf(t: float, service: float, rho: float) -> float:
    """P(W <= t) for the M/D/1 queue (Erlang's formula)."""
    if t < 0:
        return 0.0
    with localcontext() as ctx:
        ctx.prec = 60
        lam = Decimal(rho) / Decimal(service)
        total = Decimal(0)
        factorial = Decimal(1)
        for k in range(int(t // service) + 1):
            if k:
                factorial *= k
            x = lam * (Decimal(k) * Decimal(service) - Decimal(t))
            power = x**k if k else Decimal(1)
            total += power / factorial * (-x).exp()
        return float((1 - Decimal(rho)) * total)


def md1_response_quantile(q: float, service: float, rho: float) -> float:
    """The q-quantile of the M/D/1 response time (wait + D), by bisection."""
    if md1_wait_cdf(0.0, service, rho) >= q:
        return service
    lo, hi = 0.0, service
    while md1_wait_cdf(hi, service, rho) < q:
        lo, hi = hi, hi * 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if md1_wait_cdf(mid, service, rho) < q:
            lo = mid
        else:
            hi = mid
    return service + (lo + hi) / 2


def md1_standard_errors(
    rho: float, requests: int, quantiles: Sequence[float], replications: int = 16, seed: int = 1
) -> tuple[float, list[float], float]:
    """Relative standard errors of the mean response, of the response quantiles and of the
    response's standard deviation that `requests` consecutive requests of an empty-started
    M/D/1 queue estimate: the spread of
    `replications` runs of the Lindley recursion W_{n+1} = max(0, W_n + D - A_{n+1}) (in
    closed form, W_n = S_n - min(0, min_{k<=n} S_k) for the walk S of D - A)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    means, quants, stdevs = [], [], []
    for _ in range(replications):
        gaps = rng.exponential(1.0 / rho, requests - 1)
        walk = np.concatenate(([0.0], np.cumsum(1.0 - gaps)))
        response = walk - np.minimum.accumulate(np.minimum(walk, 0.0)) + 1.0
        means.append(float(response.mean()))
        quants.append([float(x) for x in np.quantile(response, list(quantiles))])
        stdevs.append(float(response.std()))
    mean_se = float(np.std(means, ddof=1)) / md1_mean_response(1.0, rho)
    q_se = [
        float(np.std([row[i] for row in quants], ddof=1)) / md1_response_quantile(q, 1.0, rho)
        for i, q in enumerate(quantiles)
    ]
    stdev_se = float(np.std(stdevs, ddof=1)) / math.sqrt(md1_response_variance(1.0, rho))
    return mean_se, q_se, stdev_se


def closed_loop_product_form(dies: int, depth: int, service: float) -> float:
    """Throughput of `depth` requests circulating over `dies` identical exponential servers
    of mean `service`, each request to a uniformly chosen one (every state of the product
    form equally likely: a server is busy with probability QD / (QD + dies - 1))."""
    return dies * depth / ((depth + dies - 1) * service)


# --- Runs -------------------------------------------------------------------------------


def _interface() -> dict[str, Any]:
    return dict(INTERFACE_OFF) if has_interface_keys() else {}


def geometry(channels: int, chips: int, planes: int, blocks: int = 64) -> dict[str, Any]:
    return {
        "geometry.channels": channels,
        "geometry.chips_per_channel": chips,
        "geometry.dies_per_chip": 1,
        "geometry.planes_per_die": planes,
        "geometry.blocks_per_plane": blocks,
        "geometry.pages_per_block": 64,
        "geometry.page_size": 4096,
        "buffer.size_bytes": 0,
        "precondition.warmup": False,
        "workload.trim_ratio": 0.0,
        "workload.sequential_fraction": 0.0,
        "workload.request_size_weights": [1.0],
        "workload.working_set_bytes": 0,
        "workload.working_set_fraction": 0.0,
        "workload.layout": False,
        "workload.journal_bytes": 0,
        "workload.seed": 5,
    }


def measure_latency(values: dict[str, Any], overrides: Sequence[str]) -> Measurements:
    """Read latency mean, quantiles (and standard deviation where reported), IOPS and
    Little's law's L = X R of one timed run."""
    import ftlab

    result = ftlab.simulate("page", sets=[*sets(values), *overrides])
    metrics = result.report["metrics"]
    out: Measurements = {}
    for op in ("read", "write"):
        stats = metrics["latency"][op]
        if not stats["count"]:
            continue
        out[f"{op}_mean_ns"] = float(stats["mean_ns"])
        for q, ns in stats["cdf"]:
            out[f"{op}_q{q:g}_ns"] = float(ns)
        if "stdev_ns" in stats:
            out[f"{op}_stdev_ns"] = float(stats["stdev_ns"])
    span = metrics["simulated_time_ns"]
    requests = metrics["host"]["requests"]
    iops = requests / (span / 1e9)
    total_ns = sum(
        metrics["latency"][op]["mean_ns"] * metrics["latency"][op]["count"]
        for op in ("read", "write")
    )
    out["iops"] = iops
    out["little_l"] = total_ns / span
    out["bandwidth_bytes_per_s"] = (
        metrics["host"]["bytes_read"] + metrics["host"]["bytes_written"]
    ) / (span / 1e9)
    return out


# --- The catalogue ----------------------------------------------------------------------

MD1_RHOS = [0.1, 0.3, 0.5, 0.7, 0.9]
MD1_QUICK = [0.3, 0.7]
QUANTILES = [0.9, 0.99]
QUEUE_DEPTHS = [1, 2, 8, 32, 128, 256]
QUICK_DEPTHS = [1, 32, 256]


def _md1(quick: bool) -> tuple[list[Run], list[Case]]:
    runs: list[Run] = []
    cases: list[Case] = []
    base = {
        **geometry(1, 1, 1),
        **_interface(),
        "precondition.mode": "fill",
        "workload.kind": "uniform",
        "workload.read_ratio": 1.0,
        "workload.request_sizes_bytes": [4096],
    }
    cfg = resolved(None, base)
    service = cfg["nand"]["read_latency_ns"] + channel_transfer_ns(cfg)
    for rho_target in MD1_QUICK if quick else MD1_RHOS:
        requests = (2_000_000 if rho_target >= 0.7 else 500_000) // (2 if quick else 1)
        gap = round(service / rho_target)
        rho = service / gap
        key = f"md1-rho{rho_target:.1f}"
        values = {**base, "workload.requests": requests, "workload.interarrival_ns": gap}
        runs.append(Run(key, FAMILY, functools.partial(measure_latency, values), 0.1))
        mean_se, q_se, stdev_se = md1_standard_errors(rho, requests, QUANTILES)
        setup = f"rho={rho:.3f}, D={service / 1000:.2f} us, {requests:,} reads"
        reason = "4 standard errors of {} over {:,} requests (M/D/1 Lindley replications)"
        cases.append(
            Case(
                family=FAMILY,
                name=f"M/D/1 mean read response, {setup}",
                run=key,
                measure="read_mean_ns",
                reference=md1_mean_response(service, rho),
                source=f"{MD1}, D = tR + page transfer",
                tolerance=max(4 * mean_se, 0.002),
                reason=reason.format("the mean", requests),
                unit="ns",
                x=rho,
                x_label="utilisation rho",
                series="mean",
            )
        )
        for q, se in zip(QUANTILES, q_se):
            cases.append(
                Case(
                    family=FAMILY,
                    name=f"M/D/1 p{q * 100:g} read response, {setup}",
                    run=key,
                    measure=f"read_q{q:g}_ns",
                    reference=md1_response_quantile(q, service, rho),
                    source=MD1_DIST,
                    tolerance=4 * se + 0.002,
                    reason=reason.format(f"the p{q * 100:g}", requests)
                    + ", + 0.2% for the histogram's 3 digits",
                    unit="ns",
                    x=rho,
                    x_label="utilisation rho",
                    series=f"p{q * 100:g}",
                )
            )
        cases.append(
            Case(
                family=FAMILY,
                name=f"M/D/1 response standard deviation, {setup}",
                run=key,
                measure="read_stdev_ns",
                reference=math.sqrt(md1_response_variance(service, rho)),
                source=f"{MD1}: second moment, Var W = rho D^2/(3(1-rho)) + E[W]^2",
                tolerance=4 * stdev_se + 0.002,
                reason=reason.format("the standard deviation", requests)
                + ", + 0.2% (the core's exact stdev_ns; as the quantiles' margin)",
                unit="ns",
                x=rho,
                x_label="utilisation rho",
                series="stdev",
            )
        )
    return runs, cases


def _closed_loop(quick: bool) -> tuple[list[Run], list[Case]]:
    runs: list[Run] = []
    cases: list[Case] = []
    channels, chips = 4, 2
    base = {
        **geometry(channels, chips, 2),
        **_interface(),
        "precondition.mode": "fill",
        "workload.kind": "uniform",
        "workload.read_ratio": 1.0,
        "workload.request_sizes_bytes": [4096],
        "workload.interarrival_ns": 0,
        "replay.mode": "closed",
        # Random reads rarely share a page offset: multi-plane reads off, so that a read
        # holds its die for tR + transfer as the bound assumes.
        "scheduler.multi_plane": False,
    }
    cfg = resolved(None, base)
    transfer = channel_transfer_ns(cfg)
    service = cfg["nand"]["read_latency_ns"] + transfer
    dies = channels * chips
    requests = 500_000 if quick else 1_000_000
    for depth in QUICK_DEPTHS if quick else QUEUE_DEPTHS:
        key = f"closed-qd{depth}"
        values = {**base, "replay.queue_depth": depth, "workload.requests": requests}
        runs.append(Run(key, FAMILY, functools.partial(measure_latency, values), 0.1))
        bound = min(depth / service, dies / service, channels / transfer) * 1e9
        lower = closed_loop_product_form(dies, depth, service) * 1e9
        setup = f"QD {depth}, {dies} dies x {channels} channels, {requests:,} random reads"
        cases.append(
            Case(
                family=FAMILY,
                name=f"closed-loop read IOPS, {setup}",
                run=key,
                measure="iops",
                reference=bound,
                lower=lower,
                check="range",
                source=f"{CLOSED_BOUND}; lower: {CLOSED_LOWER}",
                tolerance=1e-6,
                reason="a bound: nothing but rounding may exceed it",
                unit="IOPS",
                x=depth,
                x_label="queue depth",
                series="IOPS / bound",
            )
        )
        drain = depth * dies / requests
        cases.append(
            Case(
                family=FAMILY,
                name=f"Little's law L = X R, {setup}",
                run=key,
                measure="little_l",
                reference=float(depth),
                lower=depth * (1 - drain),
                check="range",
                source=LITTLE,
                tolerance=1e-6,
                reason=(
                    f"exact but for the final drain: at most QD x dies / requests = "
                    f"{drain:.2%} below QD"
                ),
                unit="requests",
                x=depth,
                x_label="queue depth",
                series="Little L / QD",
            )
        )
    return runs, cases


def _bandwidth(quick: bool) -> tuple[list[Run], list[Case]]:
    runs: list[Run] = []
    cases: list[Case] = []
    channels, chips, planes = 4, 2, 2
    dies = channels * chips
    base = {
        **geometry(channels, chips, planes),
        **_interface(),
        "workload.kind": "sequential",
        "workload.interarrival_ns": 0,
        "replay.mode": "closed",
        "replay.queue_depth": 64,
    }
    cfg = resolved(None, base)
    nand = cfg["nand"]
    transfer = channel_transfer_ns(cfg)
    page = cfg["geometry"]["page_size"]
    channel_bound = channels * page / transfer * 1e9
    # (name, read?, multi-plane, request bytes, requests, die ns per page, in quick)
    setups = [
        ("sequential read, multi-plane", True, True, 131072, 4000, None, True),
        ("sequential write, one plane at a time", False, False, 131072, 1500, None, True),
        ("sequential write, multi-plane", False, True, 131072, 1500, None, False),
        ("write at QD 1 (t_x + tPROG each)", False, False, 4096, 2000, None, True),
    ]
    for name, read, multi, size, requests, _, in_quick in setups:
        if quick and not in_quick:
            continue
        group = planes if multi else 1
        if read:
            die_ns = nand["read_latency_ns"] + group * transfer
        else:
            die_ns = group * transfer + nand["program_latency_ns"]
        die_bound = dies * group * page / die_ns * 1e9
        values = {
            **base,
            "precondition.mode": "fill" if read else "none",
            "workload.read_ratio": 1.0 if read else 0.0,
            "workload.request_sizes_bytes": [size],
            "workload.requests": requests,
            "scheduler.multi_plane": multi,
        }
        qd1 = size == page
        if qd1:
            values["replay.queue_depth"] = 1
        key = (
            "bw-"
            + name.split(",")[0].replace(" ", "-")
            + ("-mp" if multi else "")
            + ("-qd1" if qd1 else "")
        )
        runs.append(Run(key, FAMILY, functools.partial(measure_latency, values), 0.1))
        if qd1:
            reference = page / (transfer + nand["program_latency_ns"]) * 1e9
            cases.append(
                Case(
                    family=FAMILY,
                    name=f"{name}: write bandwidth, 4 KiB, closed loop QD 1",
                    run=key,
                    measure="bandwidth_bytes_per_s",
                    reference=reference,
                    source="one write at a time: transfer then tPROG, page / (t_x + tPROG)",
                    tolerance=0.001,
                    reason="exact: one operation at a time, integer-ns rounding only",
                    unit="B/s",
                    x=1,
                    x_label="",
                    series="write QD1",
                )
            )
            continue
        bound = min(channel_bound, die_bound)
        what = "tR + planes x t_x" if read else "planes x t_x + tPROG"
        cases.append(
            Case(
                family=FAMILY,
                name=f"{name}: bandwidth, {size // 1024} KiB requests, QD 64",
                run=key,
                measure="bandwidth_bytes_per_s",
                reference=bound,
                lower=0.97 * bound,
                check="range",
                source=f"{BANDWIDTH}; die time {what}",
                tolerance=1e-4,
                reason="a bound; at QD 64 every die is kept busy (within 3% of it)",
                unit="B/s",
                x=1 if read else 2,
                x_label="",
                series="read" if read else "write",
            )
        )
    return runs, cases


def catalogue(quick: bool) -> tuple[list[Run], list[Case]]:
    runs: list[Run] = []
    cases: list[Case] = []
    for part in (_md1, _closed_loop, _bandwidth):
        r, c = part(quick)
        runs += r
        cases += c
    return runs, cases
