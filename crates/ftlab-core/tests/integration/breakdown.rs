//! Where each request's time went (`metrics.latency_breakdown`): the parts of every
//! request add up to its latency exactly, on every scheme and under the host stacks, and a
//! hand-built schedule gives the parts computed by hand.

use crate::common;

use common::*;
use ftlab_core::controller::simulator::Simulator;
use ftlab_core::device::breakdown::{Part, Parts, PART_COUNT};
use ftlab_core::device::nand::{Cause, Flash, Oob};
use ftlab_core::ftl::{self, is_append_only, scheme_info, Ftl, Visitor};
use ftlab_core::rng::Rng;
use ftlab_core::run::api::{self, RunOptions};
use ftlab_core::run::config::{Config, Layout, PreconditionMode};
use ftlab_core::run::report::Report;
use ftlab_core::{Op, Request, Result};
use proptest::prelude::*;

/// Replays `requests` and checks after each read and write that its parts add up to its
/// latency, which is its completion less its arrival; returns how many it checked.
struct CheckEach<'a> {
    cfg: &'a Config,
    layout: &'a Layout,
    requests: &'a [Request],
}

impl Visitor for CheckEach<'_> {
    type Output = Result<u64>;
    fn visit<F: Ftl>(self, ftl: F, flash: Flash) -> Result<u64> {
        let ftl = common::erased(ftl);
        let mut sim = Simulator::new(&self.cfg.controller(), self.layout, ftl, flash, true);
        sim.precondition(&self.cfg.precondition, &[], &mut |_, _| true)?;
        let mut checked = 0;
        for r in self.requests {
            sim.submit(r)?;
            if r.op == Op::Trim {
                continue;
            }
            let (latency, parts) = sim.last_breakdown();
            assert_eq!(latency, sim.last_done_ns() - r.time_ns, "{r:?}");
            assert_eq!(parts.iter().sum::<u64>(), latency, "{r:?}: {parts:?}");
            checked += 1;
        }
        // The device was full: the writes needed GC or merges.
        assert!(sim.flash().stats.erases.iter().sum::<u64>() > 0);
        Ok(checked)
    }
}

/// A small device on the default timing (host interface, DRAM, read priority, suspension,
/// multi-plane), in steady state before the requests so that GC, merges and translation
/// I/O run.
fn device(scheme: &str, buffer_pages: u64) -> Config {
    let mut cfg = small_config((2, 1, 2, 2), 64, 16, 0.25);
    cfg.interface = Default::default();
    cfg.buffer.dram_bytes_per_s = 10_000_000_000;
    cfg.buffer.size_bytes = buffer_pages * 4096;
    cfg.scheduler.suspend = true;
    cfg.precondition.mode = PreconditionMode::Steady;
    // A mapping cache of half the map (selective loads 64 KiB blocks: the whole
    // small map).
    if scheme != "selective" {
        cfg.dram.budget_fraction = 0.5;
    }
    cfg
}

/// Reads, writes (some partial) and trims of 1 to 8 pages, arriving close enough to queue.
fn requests(cfg: &Config, seed: u64, count: u64) -> Vec<Request> {
    let logical = cfg.validate().unwrap().logical_pages;
    let mut rng = Rng::new(seed);
    let mut t = 0;
    (0..count)
        .map(|_| {
            t += rng.below(400_000);
            let pages = 1 + rng.below(8);
            let page = rng.below(logical - pages);
            let op = match rng.below(10) {
                0..=3 => Op::Read,
                4 => Op::Trim,
                _ => Op::Write,
            };
            let skew = if rng.below(4) == 0 { 512 } else { 0 };
            Request {
                time_ns: t,
                offset_bytes: page * 4096 + skew,
                len_bytes: (pages * 4096) as u32,
                op,
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3))]

    /// Every scheme of the registry (the append-only ones under their stack, below), with
    /// and without a write buffer.
    #[test]
    fn parts_add_up_to_each_requests_latency_on_every_scheme(seed in 0u64..1_000_000) {
        for scheme in scheme_info().into_iter().filter(|s| !is_append_only(&s.name)) {
            for buffer_pages in [0, 16] {
                let cfg = device(&scheme.name, buffer_pages);
                let layout = cfg.validate().unwrap();
                let reqs = requests(&cfg, seed, 600);
                let checked = ftl::build(&scheme.name, &cfg.scheme_context(), &layout, CheckEach {
                    cfg: &cfg,
                    layout: &layout,
                    requests: &reqs,
                })
                .and_then(|r| r)
                .unwrap_or_else(|e| panic!("{}: {e}", scheme.name));
                prop_assert!(checked > 400, "{}", scheme.name);
            }
        }
    }
}

fn stack_run(ftl: &str, stack: &str) -> Report {
    let sets: Vec<String> = [
        "geometry.channels=2",
        "geometry.chips_per_channel=1",
        "geometry.dies_per_chip=2",
        "geometry.planes_per_die=1",
        "geometry.blocks_per_plane=64",
        "geometry.pages_per_block=16",
        "buffer.size_bytes=0",
        "precondition.mode=\"none\"",
        "precondition.warmup=false",
        "lfs.section_pages=128",
        "workload.kind=\"hotcold\"",
        "workload.requests=3000",
        "workload.read_ratio=0.3",
        "workload.trim_ratio=0.05",
        "workload.request_sizes_bytes=[4096, 8192, 16384]",
        "workload.request_size_weights=[2, 1, 1]",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("host.stack=\"{stack}\"")])
    .collect();
    let opts = RunOptions {
        ftl: ftl.into(),
        sets,
        verify: true,
        ..RunOptions::default()
    };
    api::run(&opts, &mut |_| true).unwrap().report
}

/// Under a host stack every device request (the application's, the cleaning's, the
/// metadata's) is recorded with its parts: they add up to the latencies' total.
#[test]
fn parts_add_up_under_the_host_stacks() {
    for (ftl, stack) in [("aftl", "alfs"), ("page", "f2fs"), ("page", "inplace")] {
        let r = stack_run(ftl, stack);
        let m = &r.metrics;
        let (l, b) = (
            m.latency.as_ref().unwrap(),
            m.latency_breakdown.as_ref().unwrap(),
        );
        for (stats, parts) in [(&l.read, &b.read), (&l.write, &b.write)] {
            assert!(stats.count > 100, "{ftl}+{stack}");
            assert_eq!(parts.requests, stats.count, "{ftl}+{stack}");
            assert_eq!(parts.total_ns, stats.total_ns, "{ftl}+{stack}");
            let means: f64 = parts.parts.iter().map(|p| p.mean_ns).sum();
            assert!(
                (means - stats.mean_ns).abs() < 1e-6 * stats.mean_ns,
                "{ftl}+{stack}"
            );
        }
        if stack != "inplace" {
            let cleaning = b.read.get(Part::FgHostCleaning).mean_ns
                + b.write.get(Part::FgHostCleaning).mean_ns;
            assert!(
                cleaning > 0.0,
                "{ftl}+{stack}: the stack cleaned in the requests' path"
            );
        }
    }
}

/// One die, FIFO scheduling, round timings (tR 50 us, tPROG 500 us, 1 us a transfer; no
/// host interface): the flash alone.
fn one_die_flash() -> Flash {
    let mut cfg = one_die_config(1);
    cfg.scheduler.read_priority = false;
    cfg.scheduler.suspend = false;
    cfg.scheduler.multi_plane = false;
    let layout = cfg.validate().unwrap();
    Flash::new(&cfg.device(), &layout, 0, true).unwrap()
}

fn parts_of(flash: &Flash) -> Vec<(Part, u64)> {
    let parts: &Parts = flash.request_parts();
    (0..PART_COUNT)
        .filter(|&i| parts[i] > 0)
        .map(|i| (ftlab_core::device::breakdown::PARTS[i], parts[i]))
        .collect()
}

/// A read arriving at 100 us behind a foreground GC copy's program (0-501 us), a merge's
/// (501-1,002 us) and a host-stack cleaning write's (1,002-1,503 us): it waits behind each
/// for its stretch, then senses and transfers.
#[test]
fn a_read_behind_gc_a_merge_and_host_cleaning_is_charged_to_each() {
    let mut flash = one_die_flash();
    let oob = |lpa| Oob { lpa, seq: 1 };
    // Another request's work, in the foreground.
    flash.begin_request(0);
    flash.program(0, oob(0), &[], Cause::Gc).unwrap();
    flash.program(1, oob(1), &[], Cause::MergeFull).unwrap();
    flash.set_host_cause(Cause::HostCleaning);
    flash.program(2, oob(2), &[], Cause::Host).unwrap();
    flash.set_host_cause(Cause::Host);
    assert_eq!(flash.request_done(), 1_503_000);
    assert_eq!(
        parts_of(&flash),
        vec![
            (Part::FgGc, 501_000),
            (Part::FgMerge, 501_000),
            (Part::FgHostCleaning, 501_000),
        ]
    );
    // The read.
    flash.begin_request(100_000);
    flash.read(0, Cause::Host).unwrap();
    assert_eq!(flash.request_done(), 1_503_000 + 51_000);
    assert_eq!(
        parts_of(&flash),
        vec![
            (Part::FgGc, 401_000),
            (Part::FgMerge, 501_000),
            (Part::FgHostCleaning, 501_000),
            (Part::Sense, 50_000),
            (Part::Transfer, 1_000),
        ]
    );
}

/// The request's own service: a translation read, then the data read it locates; a
/// foreground GC copy and erase in its path; and a buffered write's wait for its slot.
#[test]
fn own_work_is_charged_by_its_cause() {
    let mut flash = one_die_flash();
    let oob = |lpa| Oob { lpa, seq: 1 };
    flash.begin_request(0);
    flash.program(0, oob(0), &[], Cause::Host).unwrap();
    flash
        .program(1, Oob::translation(0), &[], Cause::Translation)
        .unwrap();
    assert_eq!(
        parts_of(&flash),
        vec![
            (Part::FgMapping, 501_000),
            (Part::Program, 500_000),
            (Part::Transfer, 1_000),
        ]
    );
    flash.begin_request(2_000_000);
    flash.read(1, Cause::Translation).unwrap();
    flash.chain();
    flash.read(0, Cause::Host).unwrap();
    flash.wait_until(2_200_000, Part::BufferWait);
    assert_eq!(
        parts_of(&flash),
        vec![
            (Part::BufferWait, 98_000),
            (Part::Sense, 50_000),
            (Part::Transfer, 1_000),
            (Part::Translation, 51_000),
        ]
    );
}

/// A buffered write waiting for its slot is charged to what held the flush that frees it:
/// the flush's host program queued behind a foreground GC copy on its die, so the wait is
/// `fg_gc`; a flush that waited for nothing but its own data leaves `buffer_wait`.
#[test]
fn a_buffer_wait_is_charged_to_what_held_the_flush() {
    let mut flash = one_die_flash();
    flash.begin_request(0);
    flash.set_flushing(true);
    flash
        .program(0, Oob { lpa: 7, seq: 1 }, &[], Cause::Gc)
        .unwrap();
    flash
        .program(1, Oob { lpa: 0, seq: 2 }, &[], Cause::Host)
        .unwrap();
    flash.set_flushing(false);
    let transfers = flash.host_transfers().to_vec();
    assert_eq!(transfers.len(), 1, "{transfers:?}");
    let (freed, held_by) = transfers[0];
    assert_eq!(held_by, Part::FgGc);
    // The next write takes that slot: it waits from its start to the slot's release.
    flash.begin_request(100_000);
    flash.wait_until(freed, held_by);
    assert_eq!(parts_of(&flash), vec![(Part::FgGc, freed - 100_000)]);

    let mut flash = one_die_flash();
    flash.begin_request(0);
    flash.set_flushing(true);
    flash
        .program(0, Oob { lpa: 0, seq: 1 }, &[], Cause::Host)
        .unwrap();
    flash.set_flushing(false);
    assert_eq!(flash.host_transfers()[0].1, Part::BufferWait);
}

fn stalls_of(r: &Report) -> Vec<(&'static str, &'static str, f64)> {
    let load = r.metrics.load.as_ref().unwrap();
    load.stalls
        .iter()
        .map(|s| (s.op, s.part, s.share))
        .collect()
}

/// The case: aftl under ALFS on the MSR Cambridge excerpt (default device, steady
/// preconditioning) is not saturated by die time, but its reads queue behind the file
/// system's foreground cleaning: the load report names that stall. A page-FTL run the
/// device keeps up with has none.
#[test]
fn the_stall_is_named_on_msr_with_aftl_and_absent_when_unsaturated() {
    let Some(dir) = traces_dir() else { return };
    let opts = RunOptions {
        ftl: "aftl".into(),
        trace: Some(dir.join("msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv")),
        // Without the file system's background cleaning (`lfs.idle_ns=0`, nor its catch-up
        // after preconditioning) the run starts at the foreground threshold and its first
        // writes pay the cleaning debt; with it (the default) the stall is gone.
        sets: vec![
            "precondition.mode=\"steady\"".into(),
            "lfs.idle_ns=0".into(),
        ],
        ..RunOptions::default()
    };
    let r = api::run(&opts, &mut |_| true).unwrap().report;
    let stalls = stalls_of(&r);
    let cleaning = stalls
        .iter()
        .find(|s| s.0 == "read" && s.1 == "fg_host_cleaning")
        .unwrap_or_else(|| panic!("no host-cleaning stall: {stalls:?}"));
    assert!(cleaning.2 > 0.5, "{stalls:?}");
    assert!(!r.metrics.load.as_ref().unwrap().saturated);
    let caught_up = RunOptions {
        sets: vec!["precondition.mode=\"steady\"".into()],
        ..opts
    };
    let r = api::run(&caught_up, &mut |_| true).unwrap().report;
    let stalls = stalls_of(&r);
    assert!(
        stalls.iter().all(|s| s.1 != "fg_host_cleaning"),
        "{stalls:?}"
    );

    let opts = RunOptions {
        ftl: "page".into(),
        workload: Some("default".into()),
        sets: vec![
            "workload.requests=20000".into(),
            "precondition.mode=\"fill\"".into(),
        ],
        ..RunOptions::default()
    };
    let r = api::run(&opts, &mut |_| true).unwrap().report;
    assert!(!r.metrics.load.as_ref().unwrap().saturated);
    assert_eq!(stalls_of(&r), vec![]);
}
