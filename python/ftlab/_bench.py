"""`ftlab bench`: simulation speed and peak memory of each scheme.

Every case runs in a fresh process (`python -m ftlab._bench_one`), so that the peak
resident memory it reports belongs to that scheme alone. A case loads its requests into
memory first; the rate counts only the simulation. Each case runs `repeat` times and the
fastest run is kept (the machine's other load only ever slows a run down).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from ftlab import _core
from ftlab._format import render_table

TRACE_PRESET = "small"
WORKLOAD_PRESET = "default"
MODES = {"timed": [], "mapping-only": ["replay.timing=false"]}

# Settings a scheme is benchmarked with, on top of the preset (its paper's configuration).
# LeaFTL: error bound 4 behind the reference's sorted 8 MiB flush with group filtering (the
# workload preset has no write buffer: it gets an 8 MiB one).
SCHEME_SETS: dict[str, list[str]] = {
    "leaftl": [
        "leaftl.gamma=4",
        "buffer.flush=sorted",
        "buffer.flush_bytes=8MiB",
        "buffer.flush_group_pages=256",
    ],
    # AMF: AFTL under ALFS (`host.stack = "auto"`). AFTL collects no garbage and keeps only
    # the three spare blocks per unit the geometry asks for (3/128 on the `small` device),
    # so that ALFS gives the application the benchmark trace's 450,000 pages.
    "aftl": ["ftl.over_provisioning=0.0235"],
}
#: By family. The log-block schemes place a page at its offset in a block: their papers'
#: NAND lets a block skip pages (KRAFT's MLC: ascending order, as the `kraft` preset says).
#: On the `small` device's sequential order a third of their programs would be fillers.
FAMILY_SETS: dict[str, list[str]] = {"log-block": ['nand.program_order="ascending"']}


def scheme_sets(scheme: str, families: dict[str, str]) -> list[str]:
    """The settings a scheme is benchmarked with: its family's, then its own."""
    return FAMILY_SETS.get(families.get(scheme, ""), []) + SCHEME_SETS.get(scheme, [])


WORKLOAD_SCHEME_SETS: dict[str, list[str]] = {"leaftl": ["buffer.size_bytes=8MiB"]}


class BenchError(Exception):
    pass


def shared_dir() -> Path | None:
    """The project's `shared` folder: $FTLAB_SHARED, else `shared` beside a parent folder."""
    env = os.environ.get("FTLAB_SHARED")
    if env:
        return Path(env) if Path(env).is_dir() else None
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for parent in [start, *start.parents]:
            candidate = parent / "shared"
            if (candidate / "bench" / "gen_trace.py").is_file():
                return candidate
            candidate = parent.parent / "shared"
            if (candidate / "bench" / "gen_trace.py").is_file():
                return candidate
    return None


def standard_trace(echo: Callable[[str], Any]) -> Path | None:
    """The 1 M-request benchmark trace, generated once by `shared/bench/gen_trace.py` with its
    defaults and cached under ~/.cache/ftlab/bench, keyed by the generator's content."""
    shared = shared_dir()
    if shared is None:
        return None
    generator = shared / "bench" / "gen_trace.py"
    digest = hashlib.sha256(generator.read_bytes()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ftlab" / "bench"
    path = cache / f"gen_trace-{digest}.trace"
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        echo(f"generating the benchmark trace with {generator} ...")
        partial = path.with_suffix(".partial")
        subprocess.run([sys.executable, str(generator), str(partial)], check=True)
        partial.replace(path)
    return path


def run_case(case: dict[str, Any], repeat: int) -> dict[str, Any]:
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, "-m", "ftlab._bench_one", json.dumps(case)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise BenchError(proc.stderr.strip() or f"benchmark case {case} failed")
        result = json.loads(proc.stdout)
        if best is None or result["requests_per_second"] > best["requests_per_second"]:
            best = result
    assert best is not None
    return best


def end_to_end_seconds(trace: Path, repeat: int) -> float:
    """Wall time of the whole `ftlab run` process on the trace, start-up included."""
    best = float("inf")
    command = [
        sys.executable,
        "-m",
        "ftlab",
        "run",
        "--ftl",
        "page",
        "--trace",
        str(trace),
        "--preset",
        TRACE_PRESET,
        "--quiet",
    ]
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        best = min(best, time.perf_counter() - started)
    return best


def run_all(
    *,
    schemes: list[str] | None,
    trace: Path | None,
    requests: int | None,
    repeat: int,
    workloads: bool,
    echo: Callable[[str], Any],
) -> dict[str, Any]:
    from ftlab import scheme_info

    families = {s["name"]: s["family"] for s in scheme_info()}
    known = list(families)
    names = schemes or known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BenchError(
            f"unknown scheme(s) {', '.join(unknown)}; the schemes are: {', '.join(known)}"
        )
    cases: list[dict[str, Any]] = []
    notes: list[str] = []
    bench_trace = trace or standard_trace(echo)
    if bench_trace is None:
        notes.append("shared/bench/gen_trace.py not found (set FTLAB_SHARED): trace skipped")
    else:
        for scheme in names:
            for mode, sets in MODES.items():
                cases.append(
                    {
                        "workload": f"trace:{bench_trace.name}",
                        "ftl": scheme,
                        "mode": mode,
                        "trace": str(bench_trace),
                        "preset": TRACE_PRESET,
                        "sets": sets + scheme_sets(scheme, families),
                    }
                )
    if workloads:
        extra = [f"workload.requests={requests}"] if requests else []
        for name, _ in _core.workloads():
            for scheme in names:
                for mode, sets in MODES.items():
                    cases.append(
                        {
                            "workload": name,
                            "ftl": scheme,
                            "mode": mode,
                            "builtin": name,
                            "preset": WORKLOAD_PRESET,
                            "sets": sets
                            + extra
                            + WORKLOAD_SCHEME_SETS.get(scheme, [])
                            + scheme_sets(scheme, families),
                        }
                    )
    rows = []
    for i, case in enumerate(cases, 1):
        echo(f"[{i}/{len(cases)}] {case['workload']} {case['ftl']} {case['mode']}")
        result = run_case(case, repeat)
        rows.append({"workload": case["workload"], **result})
    out: dict[str, Any] = {"ftlab_version": _core.__version__, "repeat": repeat, "results": rows}
    if bench_trace is not None and "page" in names:
        out["end_to_end_run_seconds"] = end_to_end_seconds(bench_trace, repeat)
    if bench_trace is not None:
        from ftlab import _bench_read

        out["reading"] = _bench_read.measure(bench_trace, repeat, echo)
    out["notes"] = notes
    return out


def table(results: dict[str, Any]) -> str:
    rows = [
        (
            r["workload"],
            r["ftl"],
            r["mode"],
            f"{r['requests']:,}",
            f"{r['load_seconds']:.3f}",
            f"{r['requests_per_second'] / 1e6:.2f}",
            f"{r['peak_rss_bytes'] / 2**20:.1f}",
            "-" if r["waf"] is None else f"{r['waf']:.3f}",
        )
        for r in results["results"]
    ]
    text = render_table(
        ["workload", "scheme", "mode", "requests", "load s", "M req/s", "peak RSS MiB", "WAF"], rows
    )
    if "end_to_end_run_seconds" in results:
        text += (
            f"\n\nwhole `ftlab run --ftl page` process on the benchmark trace: "
            f"{results['end_to_end_run_seconds']:.3f} s"
        )
    if results.get("reading"):
        from ftlab import _bench_read

        text += "\n\ntrace reading speed (the benchmark trace in each text format):\n"
        text += render_table(
            ["format", "compression", "lines", "MiB", "s", "M lines/s"],
            _bench_read.rows(results["reading"]),
        )
    for note in results["notes"]:
        text += f"\nnote: {note}"
    return text
