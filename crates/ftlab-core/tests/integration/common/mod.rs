//! Helpers shared by the integration tests: small configurations and a way to run any
//! scheme over a list of requests through the public interfaces.

#![allow(dead_code)]

pub mod store;

use ftlab_core::controller::simulator::Simulator;
use ftlab_core::device::nand::{Cause, Flash};
use ftlab_core::ftl::{self, Ftl, Visitor};
use ftlab_core::run::api::RunOptions;
use ftlab_core::run::config::{Config, Layout};
use ftlab_core::run::report::{Report, SourceInfo};
use ftlab_core::{Op, Request, Result};

/// A small device with the given shape; everything else default.
pub fn small_config(
    units: (u32, u32, u32, u32),
    blocks_per_plane: u32,
    pages_per_block: u32,
    op: f64,
) -> Config {
    let mut cfg = Config::default();
    let g = &mut cfg.geometry;
    (
        g.channels,
        g.chips_per_channel,
        g.dies_per_chip,
        g.planes_per_die,
    ) = units;
    g.blocks_per_plane = blocks_per_plane;
    g.pages_per_block = pages_per_block;
    cfg.ftl.over_provisioning = op;
    cfg.metrics.sample_every_requests = 97;
    // The flash alone: no host interface or DRAM time, and a buffer that flushes when full
    // (the write-back of the default device has its own tests, `destage.rs`), so that the
    // tests' hand-computed schedules are those of the flash operations.
    cfg.interface.command_ns = 0;
    cfg.interface.link_bytes_per_s = 0;
    cfg.buffer.dram_bytes_per_s = 0;
    cfg.buffer.destage = ftlab_core::run::config::Destage::OnFull;
    cfg
}

/// One channel, one die of `planes` planes, round timings so that schedules can be
/// computed by hand: tR 50 us, tPROG 500 us, tBERS 3 ms, 1 us to move a 4 KiB page and its
/// 128-byte OOB.
pub fn one_die_config(planes: u32) -> Config {
    let mut cfg = small_config((1, 1, 1, planes), 32, 16, 0.25);
    cfg.nand.read_latency_ns = 50_000;
    cfg.nand.program_latency_ns = 500_000;
    cfg.nand.erase_latency_ns = 3_000_000;
    cfg.nand.channel_bytes_per_s = (4096 + 128) * 1_000_000;
    cfg
}

pub fn write(offset_page: u64, pages: u32, page: u32) -> Request {
    Request {
        time_ns: 0,
        offset_bytes: offset_page * page as u64,
        len_bytes: pages * page,
        op: Op::Write,
    }
}

pub fn read(offset_page: u64, pages: u32, page: u32) -> Request {
    Request {
        op: Op::Read,
        ..write(offset_page, pages, page)
    }
}

pub fn trim(offset_page: u64, pages: u32, page: u32) -> Request {
    Request {
        op: Op::Trim,
        ..write(offset_page, pages, page)
    }
}

/// The scheme behind one dynamic call per FTL operation: the tests' visitors run every
/// scheme through one `Simulator<Box<dyn Ftl>>` (the path external schemes take), where a
/// `Simulator<F>` per scheme would make this binary compile the simulator once per scheme
/// again (the library's own runs keep the monomorphised simulators).
pub fn erased<F: Ftl>(ftl: F) -> Box<dyn Ftl> {
    Box::new(ftl)
}

/// The small fresh device of the append-only tests (amf, zns, fdp): 2 channels x 1 chip x
/// 2 dies x 2 planes (8 units), 16-page blocks (128-page AMF segments), 64 blocks per plane
/// (8192 pages); no write buffer; not preconditioned.
pub const SMALL_FRESH: &[&str] = &[
    "geometry.channels=2",
    "geometry.chips_per_channel=1",
    "geometry.dies_per_chip=2",
    "geometry.planes_per_die=2",
    "geometry.blocks_per_plane=64",
    "geometry.pages_per_block=16",
    "buffer.size_bytes=0",
    "precondition.mode=\"none\"",
    "precondition.warmup=false",
];

/// A verified run of `ftl` on [`SMALL_FRESH`], `sets` after it.
pub fn small_fresh_options<S: ToString>(ftl: &str, sets: &[S]) -> RunOptions {
    let mut all: Vec<String> = SMALL_FRESH.iter().map(|s| s.to_string()).collect();
    all.extend(sets.iter().map(|s| s.to_string()));
    RunOptions {
        ftl: ftl.into(),
        sets: all,
        verify: true,
        ..RunOptions::default()
    }
}

struct RunAll<'a> {
    cfg: &'a Config,
    layout: &'a Layout,
    requests: &'a [Request],
    verify: bool,
    check_all: bool,
    precondition: bool,
    name: &'a str,
}

impl Visitor for RunAll<'_> {
    type Output = Result<Report>;
    fn visit<F: Ftl>(self, ftl: F, flash: Flash) -> Result<Report> {
        let ftl = erased(ftl);
        let mut sim = Simulator::new(&self.cfg.controller(), self.layout, ftl, flash, self.verify);
        if self.precondition {
            let warmup = ftlab_core::run::api::read_before_written(
                self.requests.iter().map(|r| Ok(*r)),
                self.layout,
            )?;
            sim.precondition(&self.cfg.precondition, &warmup, &mut |_, _| true)?;
        }
        for r in self.requests {
            sim.submit(r)?;
        }
        if self.check_all {
            sim.drain()?;
            sim.check_all()?;
        }
        let source = SourceInfo {
            kind: "test".into(),
            name: "requests".into(),
            format: String::new(),
        };
        Ok(Report::new(self.name, source, self.cfg, sim.finish()?))
    }
}

/// Runs `scheme` over `requests` with verification; with `check_all`, every logical page
/// is read back against the shadow copy at the end.
pub fn run(scheme: &str, cfg: &Config, requests: &[Request], check_all: bool) -> Result<Report> {
    run_verified(scheme, cfg, requests, check_all, false)
}

/// [`run`] on a device preconditioned as `cfg.precondition` says (with the warm-up of the
/// pages `requests` read before writing them).
pub fn run_preconditioned(scheme: &str, cfg: &Config, requests: &[Request]) -> Result<Report> {
    run_verified(scheme, cfg, requests, true, true)
}

fn run_verified(
    scheme: &str,
    cfg: &Config,
    requests: &[Request],
    check_all: bool,
    precondition: bool,
) -> Result<Report> {
    let layout = cfg.validate()?;
    ftl::build(
        scheme,
        &cfg.scheme_context(),
        &layout,
        RunAll {
            cfg,
            layout: &layout,
            requests,
            verify: true,
            check_all,
            precondition,
            name: scheme,
        },
    )?
}

/// The records of a trace file as requests, every device in one address space (no
/// compaction, no sorting): what the tests that fold or size traces themselves need.
pub fn load_trace(path: &std::path::Path, format: &str, time_unit: &str) -> Vec<Request> {
    let cfg = ftlab_core::io::trace::TraceConfig {
        format: format.into(),
        time_unit: time_unit.into(),
        ..Default::default()
    };
    let mut source = ftlab_core::io::trace::open_trace(path, &cfg)
        .unwrap_or_else(|e| panic!("{e}"))
        .source;
    let mut out = Vec::new();
    while let Some(r) = source.next_record().unwrap_or_else(|e| panic!("{e}")) {
        out.push(Request {
            time_ns: r.time_ns,
            offset_bytes: r.offset_bytes,
            len_bytes: r.len_bytes.min(u32::MAX as u64) as u32,
            op: r.op,
        });
    }
    out
}

/// The shared trace folder: `$FTLAB_SHARED/traces`, else `shared/traces` beside the
/// repository. None, with a message, when absent: the tests that need it are skipped.
pub fn traces_dir() -> Option<std::path::PathBuf> {
    let dir = match std::env::var_os("FTLAB_SHARED") {
        Some(shared) => std::path::PathBuf::from(shared).join("traces"),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces"),
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: {} not found (set FTLAB_SHARED to run the real-trace tests)",
            dir.display()
        );
        None
    }
}

/// A real trace of the shared folder, in DiskSim's ascii format.
pub struct RealTrace {
    pub name: &'static str,
    /// Path below the shared trace folder.
    pub path: &'static str,
    pub time_unit: &'static str,
}

pub const FINANCIAL1: RealTrace = RealTrace {
    name: "Financial1",
    path: "ssdsim_hust_financial1/example.ascii",
    time_unit: "ns",
};

pub const DISKSIM_VALIDATION: RealTrace = RealTrace {
    name: "DiskSim validation",
    path: "disksim_hpl_validation/ascii.trace",
    time_unit: "ms",
};

impl RealTrace {
    /// Its requests, or None (with a message) when the shared folder is absent.
    pub fn load(&self) -> Option<Vec<Request>> {
        let path = traces_dir()?.join(self.path);
        Some(load_trace(&path, "disksim", self.time_unit))
    }
}

/// The end of the furthest extent `trace` addresses, in bytes.
pub fn span_bytes(trace: &[Request]) -> u64 {
    trace
        .iter()
        .map(|r| r.offset_bytes + r.len_bytes as u64)
        .max()
        .unwrap()
}

/// A device of four parallel units of 64-page blocks whose logical space just holds
/// `span_bytes` at over-provisioning `op`, with `spare_blocks` more blocks per plane.
pub fn device_for_span(span_bytes: u64, op: f64, spare_blocks: u32) -> Config {
    let pages_per_block = 64u64;
    let physical_pages = (span_bytes / 4096) as f64 / (1.0 - op);
    let blocks = (physical_pages / (4 * pages_per_block) as f64).ceil() as u32 + spare_blocks;
    small_config((2, 1, 2, 1), blocks, pages_per_block as u32, op)
}

/// Every logical page written once (64-page requests), then `trace` at time 0: the
/// trace's writes overwrite a full device, so GC runs.
pub fn after_full_fill(logical_pages: u64, trace: &[Request]) -> Vec<Request> {
    let mut reqs: Vec<Request> = (0..logical_pages)
        .step_by(64)
        .map(|p| write(p, 64.min((logical_pages - p) as u32), 4096))
        .collect();
    reqs.extend(trace.iter().map(|r| Request { time_ns: 0, ..*r }));
    reqs
}

/// A run over a real trace after a full fill did what it is meant to test: GC ran, pages
/// were read back and, under a DRAM budget, the mapping cache missed.
pub fn assert_gc_reads_and_misses(report: &Report, budget_bytes: u64, what: &str) {
    let m = &report.metrics;
    assert!(m.gc.invocations > 0, "{what}: GC never ran");
    assert!(m.flash.reads[Cause::Host] > 0, "{what}: nothing read back");
    if budget_bytes != 0 {
        assert!(
            m.flash.reads[Cause::Translation] > 0,
            "{what}: no mapping-cache miss"
        );
    }
}
