"""SlimFTL thesis (Jaemin Shin, SNU M.S. thesis 2020): HPFTL and SlimFTL against the page-level FTL.

Regenerates, as tables (CSV, Markdown) and plots (PNG, SVG):
- mapping size normalised to a page-level table of 4-byte entries (thesis: HPFTL 0.537 =
  0.437 primary + 0.1 secondary; SlimFTL 0.441 with a 0.004 virtual block table);
- IOPS and GC count normalised to the page-level FTL, and the WAF of each scheme, on
  sequential and non-sequential workloads and on real traces (thesis: SlimFTL about equal
  to PFTL; HPFTL 38% of PFTL's IOPS on average, > 5x its GCs on a sequential workload and
  > 1.5x on a non-sequential one);
- SlimFTL's GC count as the LPA shift grows from 1 to 8 bits (thesis, DBbench: 2.6x PFTL's
  GCs at sequentiality 2, 0.87x at 256);
- SlimFTL's read tail latency against S-FTL on a low-locality workload, when an S-FTL
  scheme (`sftl`) exists in this build.

Setup: the `slimftl` preset (16 GiB logical, 8 KiB pages, 256 pages per block, 10% OP, 64
hash functions = 6 HID bits + 8 PPID bits, GC at 1% free blocks). Every run first fills the
logical space sequentially, then runs the workload (twice the logical space in page writes),
closed loop at queue depth 32 so that IOPS measure what the device sustains; IOPS, GC counts
and WAF are those of the workload after the fill. The quick mode shrinks the device to 512
blocks (930 MiB logical, the smallest that leaves S-FTL room for its translation blocks) and
writes the logical space once. The thesis's workloads (DBbench, YCSB-A, TPC-C, Varmail,
Fileserver) are not available; synthetic stand-ins with the same sequentiality are used.
One file of each real trace in ../shared/traces is read as `ftlab run` reads it (format
detected, addresses compacted), folded onto the 930 MiB device (page offset modulo its
logical size, requests capped at 64 pages) and replayed until it has written 4x its logical
space (quick mode: the first two traces, 2x).
S-FTL gets a DRAM budget of 0.435 of a 4-byte page table, as in the thesis.
"""

from __future__ import annotations

import csv
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ftlab
from ftlab import _core
from ftlab._bench import shared_dir
from ftlab._format import latency_table, render_table

SCHEMES = ["page", "hpftl", "slimftl"]
PRESET = "slimftl"
# 8 channels x 64 blocks = 512 blocks of 256 pages: the thesis geometry, 930 MiB logical
# (the smallest that leaves S-FTL room for its translation blocks).
SMALL_DEVICE = ["geometry.blocks_per_plane=64"]
CLOSED_LOOP = ["replay.mode=closed", "replay.queue_depth=32"]
PAGE_BYTES = 8192
SECTORS_PER_PAGE = PAGE_BYTES // 512

THESIS_MEMORY = {
    "hpftl": {"primary": 0.437, "secondary": 0.1, "vbt": None, "total": 0.537},
    "slimftl": {"primary": 0.437, "secondary": None, "vbt": 0.004, "total": 0.441},
}
THESIS_SHIFT_GC = {1: 2.6, 8: 0.87}
SFTL_DRAM_FRACTION = 0.435
# One write-bearing file of each real trace in ../shared/traces (the first two are small).
REAL_TRACES = {
    "financial1": "ssdsim_hust_financial1/example.ascii",
    "tpcc": "mqsim_umass_websearch_tpcc/tpcc-small.trace",
    "msr-hm0": "msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv",
    "systor17": "snia_systor17_caffeine_sample/systor17-traces-sample.csv.gz",
    "tencent": "tencent_cbs_caffeine_sample/cloud_storage-sample.bz2",
    "cloudphysics": "cloudphysics_libCacheSim/cloudPhysicsIO.vscsi",
    "fiu-mail": "fiu_mail_excerpt/DERIVED_cheetah.cs.fiu.edu-110108-113008.1.head10000.blkparse",
    "disksim-valid": "disksim_hpl_validation/ascii.trace",
    "sqlite-wal": "wiscsee_blkparse/blkparse-output.txt",
}

# (op, first page, pages): op 0 = write, 1 = read.
Request = tuple[int, int, int]


def _fill(pages: int) -> Iterator[Request]:
    for start in range(0, pages, 128):
        yield (0, start, min(128, pages - start))


def _sequential(pages: int, writes: int, rng: random.Random) -> Iterator[Request]:
    """DBbench-like: 4 MiB files written sequentially in 256 KiB requests at random 1 MiB
    aligned places; one small random read for every ten requests."""
    written = 0
    while written < writes:
        start = rng.randrange(0, pages // 128) * 128
        for chunk in range(start, min(start + 512, pages), 32):
            n = min(32, pages - chunk)
            yield (0, chunk, n)
            written += n
            if rng.random() < 0.1:
                yield (1, rng.randrange(pages), 1)


def _mixed(pages: int, writes: int, rng: random.Random) -> Iterator[Request]:
    """YCSB-A-like on a log-structured store: half the requests are random 8-32 KiB reads,
    the other half append 64 KiB to 512 KiB sequential runs at random places."""
    written = 0
    while written < writes:
        start = rng.randrange(pages)
        run = rng.choice([8, 16, 32, 64])
        for chunk in range(start, min(start + run, pages), 8):
            n = min(8, pages - chunk)
            yield (0, chunk, n)
            written += n
            p = rng.randrange(pages - 4)
            yield (1, p, rng.randint(1, 4))


def _random(pages: int, writes: int, rng: random.Random) -> Iterator[Request]:
    """Varmail-like, non-sequential: uniformly random 8 KiB writes and reads, half each."""
    for _ in range(writes):
        yield (0, rng.randrange(pages), 1)
        yield (1, rng.randrange(pages), 1)


SYNTHETIC = {
    "sequential": _sequential,
    "mixed": _mixed,
    "random": _random,
}


def _write_trace(path: Path, requests: Iterator[Request]) -> None:
    with path.open("w") as f:
        lines = []
        for i, (op, page, n) in enumerate(requests):
            lines.append(f"{i} 0 {page * SECTORS_PER_PAGE} {n * SECTORS_PER_PAGE} {op}\n")
            if len(lines) == 65536:
                f.writelines(lines)
                lines.clear()
        f.writelines(lines)


def _real_trace(source: Path, pages: int, writes: int) -> Iterator[Request]:
    """A real trace (any format ftlab reads, its addresses compacted as `ftlab run` would)
    folded onto `pages` logical pages and replayed until it has written `writes` pages."""
    records, _ = _core.trace_requests(
        source, preset=PRESET, sets=SMALL_DEVICE + ['trace.device_size="fit"']
    )
    trace: list[tuple[int, int, int]] = []
    for _, offset, length, op in records:
        if op == 2:
            continue
        first = offset // PAGE_BYTES
        n = max(1, min(64, -(-(offset % PAGE_BYTES + length) // PAGE_BYTES)))
        trace.append((op, min(first % pages, pages - n), n))
    if not any(op == 0 for op, _, _ in trace):
        return
    written = 0
    while written < writes:
        for op, first, n in trace:
            yield (op, first, n)
            written += n if op == 0 else 0


def _logical_pages(sets: list[str]) -> int:
    report = ftlab.simulate(
        "page",
        workload="default",
        preset=PRESET,
        sets=sets + ["workload.requests=1", "replay.timing=false"],
    ).report
    return int(report["device"]["logical_pages"])


def _simulate(scheme: str, trace: Path, sets: list[str], fill: int = 0) -> dict[str, Any]:
    """Runs one scheme; with `fill` (the requests of the initial fill), IOPS, GC count and
    WAF are those of the workload after the fill (the first time-series sample)."""
    sample = [f"metrics.sample_every_requests={fill}"] if fill else []
    report = ftlab.simulate(scheme, trace=trace, preset=PRESET, sets=sets + sample).report
    m = report["metrics"]
    latency = m.get("latency") or {}
    read = latency.get("read") or {}
    requests = m["host"]["requests"]
    gc = m["gc"]["invocations"]
    programs = m["flash"]["programs"]["total"]
    written = m["host"]["pages_written"]
    elapsed = m.get("simulated_time_ns") or 0
    fill_gc = 0
    if fill:
        ts = m["time_series"]
        fill_gc = ts["gc_invocations"][0]
        gc -= fill_gc
        programs -= ts["flash_programs"][0]
        written -= ts["host_pages_written"][0]
        elapsed -= ts["time_ns"][0]
        requests -= fill
    return {
        "iops": requests / (elapsed / 1e9) if elapsed else 0.0,
        "gc": gc,
        "fill_gc": fill_gc,
        "waf": programs / written if written else 0.0,
        "read_mean_us": read.get("mean_ns", 0) / 1000.0,
        "read_p99_us": read.get("p99_ns", 0) / 1000.0,
        "read_p999_us": read.get("p999_ns", 0) / 1000.0,
        "read_cdf": read.get("cdf", []),
        "scheme": m["scheme"],
    }


def _save(
    out_dir: Path,
    name: str,
    header: list[str],
    rows: list[list[Any]],
    latency_columns: tuple[int, ...] = (),
) -> str:
    """Writes `name`.csv (latencies in microseconds) and `name`.md (the text table, with
    latencies in readable units); returns the text."""
    with (out_dir / f"{name}.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    shown, cells = latency_table(header, rows, latency_columns)
    text = render_table(shown, [[_cell(c) for c in r] for r in cells])
    (out_dir / f"{name}.md").write_text(text + "\n")
    return text


def _count(value: float | None) -> int | None:
    return None if value is None else int(value)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _memory(out_dir: Path) -> tuple[str, list[list[Any]]]:
    """Mapping size on the thesis's device, normalised to a 4-byte page table."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "one.trace"
        _write_trace(trace, iter([(0, 0, 1)]))
        for scheme in ("hpftl", "slimftl"):
            counters = _simulate(scheme, trace, ["replay.timing=false"])["scheme"]
            thesis = THESIS_MEMORY[scheme]
            rows.append(
                [
                    scheme,
                    counters["primary_vs_page_table"],
                    counters.get("secondary_vs_page_table"),
                    counters.get("vbt_vs_page_table"),
                    counters["mapping_vs_page_table"],
                    thesis["total"],
                ]
            )
    header = ["scheme", "primary", "secondary", "vbt", "total", "thesis total"]
    return _save(out_dir, "memory", header, rows), rows


def run(out_dir: Path, quick: bool) -> None:
    device = SMALL_DEVICE if quick else []
    sets = device + CLOSED_LOOP
    pages = _logical_pages(device)
    writes = (1 if quick else 2) * pages
    rng_seed = 20200801
    texts: list[tuple[str, str]] = []
    memory_text, memory_rows = _memory(out_dir)
    texts.append(("Mapping size normalised to a 4-byte page-level table", memory_text))

    results: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workloads: dict[str, tuple[Path, list[str], int]] = {}
        fill = -(-pages // 128)
        for name, generator in SYNTHETIC.items():
            path = Path(tmp) / f"{name}.trace"
            rng = random.Random(rng_seed)
            _write_trace(path, _chain(_fill(pages), generator(pages, writes, rng)))
            workloads[name] = (path, sets, fill)
        shared = shared_dir()
        real = list(REAL_TRACES.items())[: 2 if quick else None]
        notes: list[str] = []
        if shared is None:
            notes.append("../shared/traces not found: real traces skipped")
        else:
            small_pages = _logical_pages(SMALL_DEVICE)
            for name, rel in real:
                source = shared / "traces" / rel
                if not source.is_file():
                    notes.append(f"{rel} not found: skipped")
                    continue
                path = Path(tmp) / f"{name}.trace"
                try:
                    body = list(_real_trace(source, small_pages, (2 if quick else 4) * small_pages))
                except ftlab.FtlabError as e:
                    notes.append(f"{rel}: {e}: skipped")
                    continue
                if not body:
                    notes.append(f"{rel} has no writes: skipped")
                    continue
                _write_trace(path, _chain(_fill(small_pages), iter(body)))
                workloads[name] = (path, SMALL_DEVICE + CLOSED_LOOP, -(-small_pages // 128))
        for name, (path, wl_sets, wl_fill) in workloads.items():
            results[name] = {s: _simulate(s, path, wl_sets, wl_fill) for s in SCHEMES}

        # GC count as the LPA shift grows, on the sequential workload.
        seq_path, _, _ = workloads["sequential"]
        shift_rows = []
        page_gc = results["sequential"]["page"]["gc"]
        for shift in range(0, 9):
            r = _simulate("slimftl", seq_path, sets + [f"slimftl.lpa_shift={shift}"], fill)
            shift_rows.append(
                [
                    shift,
                    2**shift,
                    r["gc"],
                    r["gc"] / page_gc if page_gc else None,
                    THESIS_SHIFT_GC.get(shift),
                ]
            )

        tail_rows: list[list[Any]] = []
        tail_cdfs: dict[str, list[list[float]]] = {}
        if "sftl" in [n for n, _ in ftlab.schemes()]:
            # S-FTL gets the thesis's 0.435 of a 4-byte page table (SlimFTL: 0.441).
            path, wl_sets, wl_fill = workloads["random"]
            budget = round(SFTL_DRAM_FRACTION * pages * 4)
            for scheme in ("sftl", "slimftl"):
                extra = [f"dram.budget_bytes={budget}"] if scheme == "sftl" else []
                r = _simulate(scheme, path, wl_sets + extra, wl_fill)
                hits = r["scheme"].get("cache_hit_ratio")
                tail_rows.append(
                    [
                        scheme,
                        r["read_mean_us"],
                        r["read_p99_us"],
                        r["read_p999_us"],
                        hits,
                    ]
                )
                tail_cdfs[scheme] = r["read_cdf"]
        else:
            notes.append(
                "S-FTL (`sftl`) is not in this build: the tail-latency comparison is skipped"
            )

    rows = []
    for name, per in results.items():
        page = per["page"]
        for scheme in SCHEMES:
            r = per[scheme]
            rows.append(
                [
                    name,
                    scheme,
                    r["iops"] / page["iops"] if page["iops"] else None,
                    r["gc"] / page["gc"] if page["gc"] else None,
                    r["waf"],
                    r["iops"],
                    r["gc"],
                    r["fill_gc"],
                    _count(r["scheme"].get("hash_collisions")),
                    _count(r["scheme"].get("reclaims")),
                    _count(r["scheme"].get("shared_block_writes")),
                ]
            )
    header = [
        "workload",
        "scheme",
        "IOPS / PFTL",
        "GCs / PFTL",
        "WAF",
        "IOPS",
        "GCs",
        "GCs in fill",
        "collisions",
        "reclaims",
        "shared writes",
    ]
    texts.append(
        (
            "IOPS, GC count and WAF (closed loop, queue depth 32)",
            _save(out_dir, "workloads", header, rows),
        )
    )
    header = ["lpa_shift", "sequentiality (pages)", "GCs", "GCs / PFTL", "thesis"]
    texts.append(
        (
            "SlimFTL GC count as the sequentiality grows (sequential workload)",
            _save(out_dir, "lpa_shift", header, shift_rows),
        )
    )
    if tail_rows:
        header = ["scheme", "mean", "p99", "p99.9", "map hit ratio"]
        texts.append(
            (
                "Read latency, random (low-locality) workload; S-FTL at 0.435 of the table",
                _save(out_dir, "tail_latency", header, tail_rows, latency_columns=(1, 2, 3)),
            )
        )
    _plots(out_dir, memory_rows, rows, shift_rows, tail_cdfs)
    for title, text in texts:
        print(f"\n{title}\n{text}")
    for note in notes:
        print(f"note: {note}")
    (out_dir / "notes.txt").write_text("".join(f"{n}\n" for n in notes))


def _chain(*parts: Iterator[Request]) -> Iterator[Request]:
    for part in parts:
        yield from part


def _plots(
    out_dir: Path,
    memory_rows: list[list[Any]],
    rows: list[list[Any]],
    shift_rows: list[list[Any]],
    tail_cdfs: dict[str, list[list[float]]],
) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib is not installed: plots skipped")
        return

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        for ext in ("png", "svg"):
            fig.savefig(out_dir / f"{name}.{ext}")
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(5, 3.5))
    names = [r[0] for r in memory_rows]
    primary = [r[1] for r in memory_rows]
    extra = [(r[2] or 0.0) + (r[3] or 0.0) for r in memory_rows]
    ax.bar(names, primary, label="primary table")
    ax.bar(names, extra, bottom=primary, label="secondary table / VBT")
    ax.scatter(names, [r[5] for r in memory_rows], color="black", zorder=3, label="thesis")
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_ylabel("mapping size / page-level table")
    ax.legend()
    save(fig, "memory")

    workloads = list(dict.fromkeys(r[0] for r in rows))
    for column, label, name in (
        (2, "IOPS / PFTL", "iops"),
        (3, "GCs / PFTL", "gc"),
        (4, "WAF", "waf"),
    ):
        fig, ax = plt.subplots(figsize=(9, 4))
        width = 0.8 / len(SCHEMES)
        for i, scheme in enumerate(SCHEMES):
            values = [
                next((r[column] or 0.0) for r in rows if r[0] == w and r[1] == scheme)
                for w in workloads
            ]
            ax.bar([x + i * width for x in range(len(workloads))], values, width, label=scheme)
        ax.set_xticks(
            [x + width for x in range(len(workloads))], workloads, rotation=30, ha="right"
        )
        ax.set_ylabel(label)
        ax.legend()
        save(fig, name)

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(
        [r[1] for r in shift_rows[1:]], [r[3] for r in shift_rows[1:]], marker="o", label="ftlab"
    )
    ax.scatter(
        [2, 256], [THESIS_SHIFT_GC[1], THESIS_SHIFT_GC[8]], color="black", zorder=3, label="thesis"
    )
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequentiality (pages, 2^lpa_shift)")
    ax.set_ylabel("SlimFTL GCs / PFTL")
    ax.legend()
    save(fig, "lpa_shift")

    if tail_cdfs:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for scheme, cdf in tail_cdfs.items():
            ax.plot([c[1] / 1000.0 for c in cdf], [c[0] for c in cdf], marker=".", label=scheme)
        ax.set_xscale("log")
        ax.set_ylim(0.9, 1.0)
        ax.set_xlabel("read latency (us)")
        ax.set_ylabel("CDF (tail)")
        ax.legend()
        save(fig, "tail_latency")
