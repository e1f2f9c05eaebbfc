"""SlimFTL thesis (Jaemin Shin, SNU M.S. thesis 2020): HPFTL and SlimFTL against the page-level FTL.

Regenerates, as tables (CSV, Markdown), plots (PNG, SVG) and `summary.json`:
- mapping size normalised to a page-level table of 4-byte entries (thesis: HPFTL 0.537 =
  0.437 primary + 0.1 secondary; SlimFTL 0.441 with a 0.004 virtual block table);
- IOPS and GC count normalised to the page-level FTL, and the WAF of each scheme, on
  sequential and non-sequential workloads and on real traces (thesis: SlimFTL about equal
  to PFTL on every workload; HPFTL 38% of PFTL's IOPS on average, > 5x its GCs on a
  sequential workload and > 1.5x on a non-sequential one);
- SlimFTL's GC count as the LPA shift grows from 1 to 8 bits (thesis, DBbench: 2.6x PFTL's
  GCs at sequentiality 2, 0.87x at 256);
- SlimFTL's read tail latency against S-FTL on a low-locality workload (thesis: S-FTL's
  is worse when its hit ratio is under 90%).

Setup: the `slimftl` preset (16 GiB logical, 8 KiB pages, 256 pages per block, 10% OP, 8
dies, 64 hash functions = 6 HID bits + 8 PPID bits, GC at 1% free blocks) on the current
device model. Every run is preconditioned by a sequential fill of the logical space
(`precondition = fill`, untimed), then runs the workload (twice the logical space in page
writes), closed loop at queue depth 32 so that IOPS measure what the device sustains
(a closed loop cannot saturate the device; `metrics.load` is checked). The quick mode
shrinks the device to 512 blocks (930 MiB logical, the smallest that leaves S-FTL room for
its translation blocks) and writes the logical space once. The thesis's workloads
(DBbench, YCSB-A, TPC-C, Varmail, Fileserver) are not available; synthetic stand-ins with
the same sequentiality are used. One file of each real trace in ../shared/traces is read
as `ftlab run` reads it (format detected, addresses compacted), folded onto the 930 MiB
device (page offset modulo its logical size, requests capped at 64 pages) and replayed
until it has written 4x its logical space (quick mode: the first two traces, 2x).

Two page-level baselines. The page FTL stripes consecutive host pages over the 8 dies
(`PFTL striped`): on the sequential stand-ins (files rewritten whole, one stream after
another) each block then holds pieces of several files, and garbage collection copies the
rest of the block, a WAF over 3, which stalls it. A page FTL that keeps runs together
(`PFTL runs`: `page.stripe_pages` = a block, each block filled with consecutive host pages,
as an FTL with one active block does) collects whole files for free, but serves small
random I/O from fewer dies at once. Each workload is normalised to the faster of the two
(`PFTL` in the tables names it): a baseline stalled by neither.

SlimFTL likewise runs with the thesis's one-block virtual blocks (`SlimFTL`, the headlines)
and with virtual blocks over superblocks (`slimftl.virtual_blocks = "superblock"`, LPA
shift 11: a row of 8 blocks, 2,048 pages), which spreads a run over the dies as the
striped page FTL does, and mixes runs in its blocks as it does. S-FTL gets a DRAM budget
of 0.435 of a 4-byte page table, as in the thesis.

GC scheduling (the thesis gives none): every scheme of every comparison collects in the
background (`gc.mode = "background"`, `GC_MODE`), HPFTL and SlimFTL through the same idle
hook and keys as the page FTL; `_footing` checks each comparison's reports
(`metrics.gc.scheduling`) and every headline's setup states it. Before, the page FTL alone
collected in idle time and the SlimFTL IOPS ratio measured that (quick: 0.48; 0.95 with
every scheme in the background, 1.97 with every scheme in the foreground). SlimFTL's
background GC compacts the virtual blocks that writes found full (the scheme's module doc):
its first trigger, a unit's free pages, compacted cold blocks over superblocks (quick,
TPC-C: WAF 21 against 1.5 in the foreground; now 1.9). `why` checks each stated cause of a
remaining miss by changing the one thing it names.
"""

from __future__ import annotations

import csv
import random
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import ftlab
from ftlab import Precondition, _core
from ftlab._bench import shared_dir
from ftlab._format import latency_table, render_table
from ftlab.reproduce import _footing, _summary, _why
from ftlab.reproduce._summary import Headline, geomean

DEVICE_MODEL = "current"
PAPER = "SlimFTL (SNU thesis 2020)"
PRESET = "slimftl"
PRECONDITION: Precondition = "fill"
PAGES_PER_BLOCK = 256
UNITS = 8
# (label, scheme, settings): the runs of every workload. The baseline (PFTL) of a workload
# is whichever of the two page-level FTLs serves it faster.
VARIANTS: list[tuple[str, str, list[str]]] = [
    ("PFTL striped", "page", []),
    ("PFTL runs", "page", [f"page.stripe_pages={PAGES_PER_BLOCK}"]),
    ("HPFTL", "hpftl", []),
    ("SlimFTL", "slimftl", []),
    (
        "SlimFTL superblocks",
        "slimftl",
        ['slimftl.virtual_blocks="superblock"', f"slimftl.lpa_shift={8 + UNITS.bit_length() - 1}"],
    ),
]
PAGE_FTLS = ("PFTL striped", "PFTL runs")
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
# Every scheme of every comparison collects garbage in the background (idle time), as the
# page FTL does by default: HPFTL and SlimFTL through the same idle hook and keys
# (`_footing` checks the reports).
GC_MODE = "background"


@dataclass(frozen=True)
class Footing:
    """The GC scheduling of the runs: `gc.mode` for the page FTLs and for the other
    schemes, and any other settings given to every run. `equal` runs are checked by
    `_footing`; the unequal one is the setup before equal footing, kept for `why`."""

    page_gc: str = GC_MODE
    other_gc: str = GC_MODE
    extra: tuple[str, ...] = ()

    @property
    def equal(self) -> bool:
        return self.page_gc == self.other_gc

    def sets(self, scheme: str) -> list[str]:
        mode = self.page_gc if scheme == "page" else self.other_gc
        return [f'gc.mode="{mode}"', *self.extra]


EQUAL = Footing()
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


def _simulate(
    scheme: str, trace: Path, sets: list[str], footing: Footing = EQUAL
) -> dict[str, Any]:
    """Runs one scheme on the filled device: IOPS, GC count and WAF of the workload."""
    report = ftlab.simulate(
        scheme,
        trace=trace,
        preset=PRESET,
        sets=sets + footing.sets(scheme),
        precondition=PRECONDITION,
    ).report
    m = report["metrics"]
    load = m.get("load") or {}
    if load.get("saturated") or load.get("saturated_in_bursts"):
        raise RuntimeError(f"{scheme} on {trace.name}: the replay saturated the device")
    latency = m.get("latency") or {}
    read = latency.get("read") or {}
    written = m["host"]["pages_written"]
    return {
        "iops": m.get("iops") or 0.0,
        "gc": m["gc"]["invocations"],
        "waf": m["flash"]["programs"]["total"] / written if written else 0.0,
        "read_mean_us": read.get("mean_ns", 0) / 1000.0,
        "read_p99_us": read.get("p99_ns", 0) / 1000.0,
        "read_p999_us": read.get("p999_ns", 0) / 1000.0,
        "read_cdf": read.get("cdf", []),
        "scheme": m["scheme"],
        # What `_footing` reads: the scheme and its GC scheduling.
        "report": {"ftl": report["ftl"], "metrics": {"gc": m["gc"]}},
    }


def _scheduling(runs: list[dict[str, Any]], comparison: str, footing: Footing) -> str | None:
    """The GC scheduling the runs of one comparison share (`_footing`); None for the
    deliberately unequal footing of `why`."""
    if not footing.equal:
        return None
    return _footing.common_scheduling((r["report"] for r in runs), comparison)


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


def _memory(out_dir: Path, footing: Footing, modes: set[str | None]) -> list[list[Any]]:
    """Mapping size on the thesis's device, normalised to a 4-byte page table."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "one.trace"
        _write_trace(trace, iter([(0, 0, 1)]))
        runs = []
        for scheme in ("hpftl", "slimftl"):
            r = _simulate(scheme, trace, ["replay.timing=false"], footing)
            runs.append(r)
            counters = r["scheme"]
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
        modes.add(_scheduling(runs, "mapping size", footing))
    header = ["scheme", "primary", "secondary", "vbt", "total", "thesis total"]
    _save(out_dir, "memory", header, rows)
    return rows


def run(out_dir: Path, quick: bool) -> None:
    headlines, texts, notes = _measure(out_dir, quick, EQUAL)
    for title, text in texts:
        print(f"\n{title}\n{text}")
    for h in headlines:
        ours = "-" if h.ours is None else f"{h.ours:.3g}"
        paper = "-" if h.paper_value is None else f"{h.paper_value:g}"
        print(f"{h.metric}: {ours} (thesis {paper}){'; ' + h.reason if h.reason else ''}")
    for note in notes:
        print(f"note: {note}")


def _measure(
    out_dir: Path, quick: bool, footing: Footing
) -> tuple[list[Headline], list[tuple[str, str]], list[str]]:
    """Every run of the reproduction with the given GC footing: writes the tables, plots
    and summary.json into `out_dir`; returns the headlines, the tables' texts and notes."""
    device = SMALL_DEVICE if quick else []
    sets = device + CLOSED_LOOP
    pages = _logical_pages(device)
    writes = (1 if quick else 2) * pages
    rng_seed = 20200801
    texts: list[tuple[str, str]] = []
    modes: set[str | None] = set()
    memory_rows = _memory(out_dir, footing, modes)
    texts.append(
        (
            "Mapping size normalised to a 4-byte page-level table",
            (out_dir / "memory.md").read_text().rstrip("\n"),
        )
    )

    results: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workloads: dict[str, tuple[Path, list[str]]] = {}
        for name, generator in SYNTHETIC.items():
            path = Path(tmp) / f"{name}.trace"
            rng = random.Random(rng_seed)
            _write_trace(path, generator(pages, writes, rng))
            workloads[name] = (path, sets)
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
                _write_trace(path, iter(body))
                workloads[name] = (path, SMALL_DEVICE + CLOSED_LOOP)
        for name, (path, wl_sets) in workloads.items():
            print(f"{name} ...", flush=True)
            results[name] = {
                label: _simulate(scheme, path, wl_sets + extra, footing)
                for label, scheme, extra in VARIANTS
            }
            modes.add(_scheduling(list(results[name].values()), name, footing))

        # GC count as the LPA shift grows, on the sequential workload.
        seq_path, _ = workloads["sequential"]
        shift_rows = []
        base_gc = results["sequential"][_baseline(results["sequential"])]["gc"]
        striped_gc = results["sequential"]["PFTL striped"]["gc"]
        shift_runs = [results["sequential"][label] for label in PAGE_FTLS]
        for shift in range(0, 9):
            r = _simulate("slimftl", seq_path, sets + [f"slimftl.lpa_shift={shift}"], footing)
            shift_runs.append(r)
            shift_rows.append(
                [
                    shift,
                    2**shift,
                    r["gc"],
                    r["gc"] / base_gc if base_gc else None,
                    r["gc"] / striped_gc if striped_gc else None,
                    THESIS_SHIFT_GC.get(shift),
                ]
            )

        modes.add(_scheduling(shift_runs, "LPA shift sweep", footing))
        tail_rows: list[list[Any]] = []
        tail_cdfs: dict[str, list[list[float]]] = {}
        # S-FTL gets the thesis's 0.435 of a 4-byte page table (SlimFTL: 0.441).
        path, wl_sets = workloads["random"]
        budget = round(SFTL_DRAM_FRACTION * pages * 4)
        tail_runs = []
        for scheme in ("sftl", "slimftl"):
            extra = [f"dram.budget_bytes={budget}"] if scheme == "sftl" else []
            r = _simulate(scheme, path, wl_sets + extra, footing)
            tail_runs.append(r)
            hits = r["scheme"].get("cache_hit_ratio")
            tail_rows.append([scheme, r["read_mean_us"], r["read_p99_us"], r["read_p999_us"], hits])
            tail_cdfs[scheme] = r["read_cdf"]
        modes.add(_scheduling(tail_runs, "read tail latency", footing))
    if len(modes) != 1:
        raise _footing.UnequalFooting(f"the comparisons differ in GC scheduling: {modes}")
    mode = modes.pop()
    gc_note = (
        _footing.setup_note(mode)
        if mode is not None
        else f"GC in the {footing.page_gc} for the page FTL, in the {footing.other_gc} for "
        "the others"
    )

    rows = []
    for name, per in results.items():
        baseline = _baseline(per)
        base = per[baseline]
        for label, _, _ in VARIANTS:
            r = per[label]
            rows.append(
                [
                    name,
                    label,
                    r["iops"] / base["iops"] if base["iops"] else None,
                    r["gc"] / base["gc"] if base["gc"] else None,
                    baseline,
                    r["waf"],
                    r["iops"],
                    r["gc"],
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
        "PFTL",
        "WAF",
        "IOPS",
        "GCs",
        "collisions",
        "reclaims",
        "shared writes",
    ]
    texts.append(
        (
            "IOPS, GC count and WAF (filled device, closed loop, queue depth 32)",
            _save(out_dir, "workloads", header, rows),
        )
    )
    header = [
        "lpa_shift",
        "sequentiality (pages)",
        "GCs",
        "GCs / PFTL",
        "GCs / PFTL striped",
        "thesis",
    ]
    texts.append(
        (
            "SlimFTL GC count as the sequentiality grows (sequential workload)",
            _save(out_dir, "lpa_shift", header, shift_rows),
        )
    )
    header = ["scheme", "mean", "p99", "p99.9", "map hit ratio"]
    texts.append(
        (
            "Read latency, random (low-locality) workload; S-FTL at 0.435 of the table",
            _save(out_dir, "tail_latency", header, tail_rows, latency_columns=(1, 2, 3)),
        )
    )
    headlines = headline_numbers(memory_rows, rows, shift_rows, tail_rows, list(SYNTHETIC), gc_note)
    _summary.write(out_dir, headlines)
    _plots(out_dir, memory_rows, rows, shift_rows, tail_cdfs)
    (out_dir / "notes.txt").write_text("".join(f"{n}\n" for n in notes))
    return headlines, texts, notes


def headline_numbers(
    memory_rows: list[list[Any]],
    rows: list[list[Any]],
    shift_rows: list[list[Any]],
    tail_rows: list[list[Any]],
    synthetic: list[str],
    gc_note: str = _footing.setup_note(GC_MODE),
) -> list[Headline]:
    """The thesis's headlines with ours (ratios to the faster page FTL of each workload)."""
    total = {r[0]: r[4] for r in memory_rows}

    def ratio(workload: str, scheme: str, column: int) -> float | None:
        value = next((r[column] for r in rows if r[0] == workload and r[1] == scheme), None)
        return None if value is None else float(value)

    def mean(scheme: str, column: int, workloads: list[str]) -> float | None:
        values = [ratio(w, scheme, column) for w in workloads]
        xs = [v for v in values if v is not None]
        return sum(xs) / len(xs) if xs else None

    real = [w for w in dict.fromkeys(r[0] for r in rows) if w not in synthetic]
    shift_gc = {r[0]: r[3] for r in shift_rows}
    shift_striped = {r[0]: r[4] for r in shift_rows}
    p99 = {r[0]: r[2] for r in tail_rows}
    tail = p99["sftl"] / p99["slimftl"] if p99.get("slimftl") else None
    setup = f"filled device, closed loop at queue depth 32 (unsaturated); {gc_note}"
    specs: list[tuple[str, str, float | None, float | None, str, str]] = [
        (
            "hpftl_mapping",
            "HPFTL mapping size / 4-byte page table",
            total.get("hpftl"),
            0.537,
            "x",
            f"the thesis's device, its table sizes; {gc_note}",
        ),
        (
            "slimftl_mapping",
            "SlimFTL mapping size / 4-byte page table",
            total.get("slimftl"),
            0.441,
            "x",
            f"the thesis's device, its table sizes; {gc_note}",
        ),
        (
            "hpftl_iops",
            "HPFTL IOPS / PFTL, mean over the synthetic workloads",
            mean("HPFTL", 2, synthetic),
            0.38,
            "x",
            setup,
        ),
        (
            "slimftl_iops",
            "SlimFTL IOPS / PFTL, mean over the synthetic workloads",
            mean("SlimFTL", 2, synthetic),
            1.0,
            "x",
            setup,
        ),
        (
            "slimftl_iops_real",
            "SlimFTL IOPS / PFTL, geometric mean over the real traces",
            geomean([v for v in (ratio(w, "SlimFTL", 2) for w in real) if v is not None]),
            1.0,
            "x",
            setup + "; traces folded onto 930 MiB",
        ),
        (
            "slimftl_superblocks_iops_real",
            "SlimFTL with virtual blocks over superblocks: IOPS / PFTL, geometric mean over the "
            "real traces",
            geomean(
                [v for v in (ratio(w, "SlimFTL superblocks", 2) for w in real) if v is not None]
            ),
            1.0,
            "x",
            setup + "; traces folded onto 930 MiB",
        ),
        (
            "hpftl_gc_sequential",
            "HPFTL GCs / PFTL, sequential workload (thesis: over 5x)",
            ratio("sequential", "HPFTL", 3),
            5.0,
            "x",
            setup,
        ),
        (
            "hpftl_gc_random",
            "HPFTL GCs / PFTL, non-sequential workload (thesis: over 1.5x)",
            ratio("random", "HPFTL", 3),
            1.5,
            "x",
            setup,
        ),
        (
            "slimftl_gc",
            "SlimFTL GCs / PFTL, mean over the synthetic workloads",
            mean("SlimFTL", 3, synthetic),
            1.0,
            "x",
            setup,
        ),
        (
            "slimftl_gc_shift1",
            "SlimFTL GCs / PFTL at sequentiality 2 (LPA shift 1)",
            shift_gc.get(1),
            2.6,
            "x",
            setup + "; sequential workload",
        ),
        (
            "slimftl_gc_shift8",
            "SlimFTL GCs / PFTL at sequentiality 256 (LPA shift 8)",
            shift_gc.get(8),
            0.87,
            "x",
            setup + "; sequential workload",
        ),
        (
            "sftl_vs_slimftl_read_p99",
            "read p99, S-FTL / SlimFTL, random workload, S-FTL at 0.435 of the table (thesis: "
            "S-FTL worse, no number)",
            tail,
            None,
            "x",
            setup,
        ),
    ]
    reasons = dict(REASONS)
    for shift in (1, 8):
        striped = shift_striped.get(shift)
        if striped is not None:
            reasons[f"slimftl_gc_shift{shift}"] = (
                # At shift 8 the striped normalisation moves ours away from the thesis's
                # (`why`: refuted), so it is no cause there.
                ("cause not yet measured; " if shift == 8 else "")
                + "normalised to the page FTL that keeps runs together, the faster on the "
                f"sequential stand-in; against the striped page FTL it is {striped:.2f}x"
            )
    out = []
    for key, metric, ours, thesis, unit, how in specs:
        h = Headline(PAPER, metric, ours, thesis, unit, key=key, setup=how)
        reason = ""
        if h.differs:
            lower_bound = key in ("hpftl_gc_sequential", "hpftl_gc_random")
            if lower_bound and ours is not None and thesis is not None and ours >= thesis:
                reason = "the thesis gives a lower bound (more than), which ours exceeds"
            else:
                reason = reasons.get(key, "")
        out.append(replace(h, reason=reason))
    return out


#: Why ours differs from the thesis's, where it does by more than 30%. Each cause is checked
#: by `why` (an experiment that changes the one thing it names).
REASONS = {
    "hpftl_iops": (
        "cause not yet measured: HPFTL's WAF is 26-29 on the stand-ins, but neither a "
        "secondary table four times larger (0.033 to 0.036) nor GC at 5% free instead of 1% "
        "closes a tenth of the gap (`--why`: both refuted)"
    ),
    "slimftl_iops_real": (
        "neighbouring pages hash into one block on one die, so the traces' requests queue "
        "there; virtual blocks over superblocks spread them (explains part of the miss)"
    ),
    "slimftl_superblocks_iops_real": (
        "cause not yet measured: SlimFTL writes more than the page FTL (quick: WAF 1.9 on "
        "TPC-C, 1.4 on Financial1, against 1.0 and 1.1); not GC scheduling (with every "
        "scheme's GC in the foreground the ratio falls to 0.40)"
    ),
}


def why(out_dir: Path, quick: bool) -> list[_why.Experiment]:
    """The stated causes, each checked by changing the one thing it names: the reproduction
    in its own setup (`base`), with the GC of every scheme in the foreground (`foreground`)
    with GC at 5% free blocks instead of 1% (`threshold`) and with HPFTL's secondary table
    four times larger (`secondary`), each in its own folder."""
    runs: dict[str, dict[str, float]] = {}
    for name, footing in (
        ("base", EQUAL),
        ("foreground", Footing("foreground", "foreground")),
        ("threshold", Footing(extra=("gc.threshold=0.05",))),
        ("secondary", Footing(extra=("hpftl.secondary_fraction=0.2",))),
    ):
        folder = out_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        headlines, _, _ = _measure(folder, quick, footing)
        runs[name] = {h.key: h.ours for h in headlines if h.ours is not None}
    with (out_dir / "base" / "lpa_shift.csv").open() as f:
        striped = {int(r["lpa_shift"]): float(r["GCs / PFTL striped"]) for r in csv.DictReader(f)}
    base = runs["base"]
    return [
        _why.Experiment(
            "hpftl_iops",
            "WAF about 35 with GC at 1% free",
            "gc.threshold 0.01 -> 0.05 for every scheme (more GC headroom)",
            base["hpftl_iops"],
            runs["threshold"]["hpftl_iops"],
            0.38,
        ),
        _why.Experiment(
            "hpftl_iops",
            "every page GC copies goes to the secondary table and is copied again by reclaim",
            "hpftl.secondary_fraction 0.05 -> 0.2 (fewer reclaims)",
            base["hpftl_iops"],
            runs["secondary"]["hpftl_iops"],
            0.38,
        ),
        _why.Experiment(
            "slimftl_iops_real",
            "a hash run lives in one block on one die",
            'slimftl.virtual_blocks = "superblock" (LPA shift 11)',
            base["slimftl_iops_real"],
            base["slimftl_superblocks_iops_real"],
            1.0,
        ),
        _why.Experiment(
            "slimftl_superblocks_iops_real",
            "GC scheduling: background GC compacts blocks the traces' hot rows do not reach "
            "(refuted since it compacts the virtual blocks writes found full)",
            "GC of every scheme in the foreground instead of the background",
            base["slimftl_superblocks_iops_real"],
            runs["foreground"]["slimftl_superblocks_iops_real"],
            1.0,
        ),
        _why.Experiment(
            "slimftl_gc_shift1",
            "normalised to the page FTL that keeps runs together",
            "normalised to the striped page FTL",
            base["slimftl_gc_shift1"],
            striped[1],
            2.6,
        ),
        _why.Experiment(
            "slimftl_gc_shift8",
            "normalised to the page FTL that keeps runs together",
            "normalised to the striped page FTL",
            base["slimftl_gc_shift8"],
            striped[8],
            0.87,
        ),
    ]


def _baseline(per: dict[str, dict[str, Any]]) -> str:
    """The page-level FTL a workload is normalised to: the faster of the two."""
    return max(PAGE_FTLS, key=lambda label: (per[label]["iops"], label))


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
        fig.savefig(out_dir / f"{name}.png", dpi=100, metadata={"Software": None})
        fig.savefig(out_dir / f"{name}.svg", metadata={"Date": None})
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
    labels = [label for label, _, _ in VARIANTS]
    for column, label, name in (
        (2, "IOPS / PFTL (the faster page FTL)", "iops"),
        (3, "GCs / PFTL (the faster page FTL)", "gc"),
        (5, "WAF", "waf"),
    ):
        fig, ax = plt.subplots(figsize=(10, 4))
        width = 0.8 / len(labels)
        for i, scheme in enumerate(labels):
            values = [
                next((r[column] or 0.0) for r in rows if r[0] == w and r[1] == scheme)
                for w in workloads
            ]
            ax.bar([x + i * width for x in range(len(workloads))], values, width, label=scheme)
        ax.set_xticks(
            [x + 0.4 - width / 2 for x in range(len(workloads))],
            workloads,
            rotation=30,
            ha="right",
        )
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
        save(fig, name)

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(
        [r[1] for r in shift_rows[1:]],
        [r[3] for r in shift_rows[1:]],
        marker="o",
        label="ftlab, against PFTL",
    )
    ax.scatter(
        [2, 256], [THESIS_SHIFT_GC[1], THESIS_SHIFT_GC[8]], color="black", zorder=3, label="thesis"
    )
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequentiality (pages, 2^lpa_shift)")
    ax.plot(
        [r[1] for r in shift_rows[1:]],
        [r[4] for r in shift_rows[1:]],
        marker="s",
        linestyle="--",
        label="ftlab, against PFTL striped",
    )
    ax.set_ylabel("SlimFTL GCs / PFTL")
    ax.legend(fontsize=7)
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
