//! LearnedFTL through the core's public interfaces, held to the checks the core's
//! integration tests make of every built-in scheme: shadow-verified runs with GC over
//! synthetic and real traces (every logical page read back at the end), GC scheduling
//! stated in the report, recovery after a crash, configuration errors named by key; and
//! its own claim: on a sequentially written device its models serve cache misses without
//! reading translation pages, so it double-reads far less than DFTL and TPFTL (whose cache
//! it runs on) with the same DRAM.

#[path = "../../ftlab-core/tests/integration/common/mod.rs"]
mod common;

use common::store::{sink_of, OobSink};
use common::*;
use ftlab_core::device::nand::Cause;
use ftlab_core::rng::Rng;
use ftlab_core::run::block_device::{self, Device};
use ftlab_core::run::config::{Config, GcMode, PreconditionMode};
use ftlab_core::run::report::Report;
use ftlab_core::Request;

fn registered() {
    ftlab_learnedftl::register().unwrap();
}

fn counter(report: &Report, key: &str) -> f64 {
    *report
        .metrics
        .scheme
        .get(key)
        .unwrap_or_else(|| panic!("no counter {key}"))
}

/// A device of 4 parallel units, 64-page blocks, 25% over-provisioning, the mapping cache
/// a tenth of the page-level table.
fn device() -> Config {
    let mut cfg = small_config((2, 1, 2, 1), 64, 64, 0.25);
    cfg.dram.budget_fraction = 0.1;
    cfg
}

/// Random 1-4-page writes, reads and trims over the whole device after a sequential fill.
fn mixed(logical: u64, n: usize, seed: u64) -> Vec<Request> {
    let mut rng = Rng::new(seed);
    let mut reqs = after_full_fill(logical, &[]);
    for _ in 0..n {
        let lpa = rng.below(logical - 4);
        let pages = 1 + rng.below(4) as u32;
        reqs.push(match rng.below(10) {
            0 => trim(lpa, pages, 4096),
            1..=4 => read(lpa, pages, 4096),
            _ => write(lpa, pages, 4096),
        });
    }
    reqs
}

#[test]
fn verified_runs_through_gc_read_back_every_page() {
    registered();
    let cfg = device();
    let logical = cfg.validate().unwrap().logical_pages;
    for seed in [1, 2] {
        let report = run("learnedftl", &cfg, &mixed(logical, 40_000, seed), true).unwrap();
        assert!(report.verify);
        assert!(report.metrics.gc.invocations > 0, "GC never ran");
        assert!(report.metrics.flash.reads[Cause::Translation] > 0);
        assert!(counter(&report, "trainings") > 0.0);
        assert_eq!(report.metrics.flash.reads[Cause::Misprediction], 0);
        // Group-based allocation: GC collected groups' lines together.
        assert!(counter(&report, "group_collections") > 0.0);
        assert!(counter(&report, "group_blocks_collected") > counter(&report, "group_collections"));
    }
    // Group collection at GC time only (host writes on the shared stream), and none.
    for (writes, gc) in [(false, true), (false, false)] {
        let mut cfg = device();
        let section = cfg.schemes.entry("learnedftl".into()).or_default();
        section.insert("group_writes".into(), writes.into());
        section.insert("group_gc".into(), gc.into());
        let report = run("learnedftl", &cfg, &mixed(logical, 20_000, 4), true).unwrap();
        assert!(report.metrics.gc.invocations > 0);
        if !gc {
            assert_eq!(counter(&report, "group_collections"), 0.0);
        }
    }
    // Unlimited DRAM and background GC too.
    let mut cfg = device();
    cfg.dram.budget_fraction = 0.0;
    cfg.gc.mode = GcMode::Background;
    let report = run("learnedftl", &cfg, &mixed(logical, 20_000, 3), true).unwrap();
    assert!(report.metrics.gc.invocations > 0);
}

/// The shared allocator's device models: the pseudo-SLC cache (folding in the foreground
/// when full, and in idle gaps) and, without group lines, media faults (factory bad blocks,
/// failed programs and erases, the blocks retired and their data rewritten), every read
/// verified.
#[test]
fn verified_on_the_slc_cache_and_under_media_faults() {
    registered();
    let logical = device().validate().unwrap().logical_pages;
    let mut reqs = mixed(logical, 20_000, 5);
    // Idle gaps of 20 ms every 500 requests, for folding in the background.
    let mut t = 0;
    for (i, r) in reqs.iter_mut().enumerate() {
        t += if i % 500 == 499 { 20_000_000 } else { 5_000 };
        r.time_ns = t;
    }
    let mut slc = device();
    slc.slc.static_fraction = 0.02;
    slc.slc.dynamic_fraction = 0.1;
    slc.slc.when_full = ftlab_core::run::config::WhenFull::Fold;
    let report = run("learnedftl", &slc, &reqs, true).unwrap();
    let cache = report.metrics.slc.as_ref().expect("the cache is on");
    assert!(cache.folds > 0 && cache.pages_folded > 0);
    assert!(counter(&report, "trainings") > 0.0);
    // Faults: the group lines (relocation streams) do not retire blocks, so without them.
    let mut faults = device();
    let section = faults.schemes.entry("learnedftl".into()).or_default();
    section.insert("group_writes".into(), false.into());
    section.insert("group_gc".into(), false.into());
    faults.faults.factory_bad_fraction = 0.03;
    faults.faults.program_failure_rate = 2e-4;
    faults.faults.erase_failure_rate = 2e-3;
    let report = run("learnedftl", &faults, &reqs, true).unwrap();
    assert!(
        report.metrics.flash.programs[Cause::Retire] > 0,
        "no block retired"
    );
}

#[test]
fn real_traces_replay_verified_after_a_full_fill() {
    registered();
    for trace in [FINANCIAL1, DISKSIM_VALIDATION] {
        let Some(reqs) = trace.load() else { return };
        // As the core's demand_traces.rs: little over-provisioning, so that GC runs.
        let mut cfg = device_for_span(span_bytes(&reqs), 0.07, 8);
        // (8 KiB, its budget there, cannot hold learnedftl's bitmap: a tenth of the table.)
        cfg.dram.budget_fraction = 0.1;
        let logical = cfg.validate().unwrap().logical_pages;
        let report = run("learnedftl", &cfg, &after_full_fill(logical, &reqs), true)
            .unwrap_or_else(|e| panic!("{}: {e}", trace.name));
        assert_gc_reads_and_misses(&report, 1, trace.name);
    }
}

#[test]
fn the_report_states_the_gc_scheduling() {
    registered();
    for (mode, expected) in [
        (GcMode::Background, "background"),
        (GcMode::Foreground, "foreground"),
    ] {
        let mut cfg = small_config((2, 1, 1, 1), 32, 16, 0.25);
        cfg.gc.mode = mode;
        let layout = cfg.validate().unwrap();
        let reqs: Vec<_> = (0..layout.logical_pages / 2)
            .map(|p| write(p, 1, layout.page_size))
            .collect();
        let report = run("learnedftl", &cfg, &reqs, true).unwrap();
        assert_eq!(report.metrics.gc.scheduling, expected);
    }
}

/// Double-read ratio (translation reads of host reads' misses over host reads) of
/// `scheme` reading random single pages of a device written sequentially and then
/// partly overwritten at random, so that GC runs and relocates.
fn double_reads(scheme: &str) -> (f64, Report) {
    let cfg = device();
    let logical = cfg.validate().unwrap().logical_pages;
    let mut rng = Rng::new(7);
    let mut reqs = after_full_fill(logical, &[]);
    // Sequential rewrites of most of the device, random overwrites of the rest.
    for p in (0..logical * 3 / 4).step_by(64) {
        reqs.push(write(p, 64, 4096));
    }
    for _ in 0..2000 {
        reqs.push(write(logical * 3 / 4 + rng.below(logical / 4 - 1), 1, 4096));
    }
    let before = reqs.len();
    for _ in 0..20_000 {
        reqs.push(read(rng.below(logical), 1, 4096));
    }
    let report = run(scheme, &cfg, &reqs, false).unwrap();
    let reads = (reqs.len() - before) as f64;
    let misses = report
        .metrics
        .scheme
        .get("translation_reads_miss")
        .copied()
        .unwrap_or(0.0);
    (misses / reads, report)
}

#[test]
fn models_serve_misses_without_double_reads_on_sequential_data() {
    registered();
    let (dftl, _) = double_reads("dftl");
    let (learned, report) = double_reads("learnedftl");
    assert!(dftl > 0.5, "the baseline should miss: {dftl}");
    assert!(counter(&report, "model_hits") > 0.0);
    assert!(
        learned < dftl / 2.0,
        "learnedftl {learned:.3} vs dftl {dftl:.3} double reads per read"
    );
    // Its own counter agrees: host reads whose translation read a translation page.
    assert!(counter(&report, "double_read_ratio") < dftl / 2.0);
    // Its cache is TPFTL's (nodes of translation pages), and the models save double reads
    // on top of it, in the same DRAM.
    assert!(counter(&report, "cached_tp_nodes") > 0.0);
    let (tpftl, _) = double_reads("tpftl");
    assert!(
        learned < tpftl * 0.75,
        "learnedftl {learned:.3} vs tpftl {tpftl:.3} double reads per read ({} misses served by the models, {} not)",
        counter(&report, "model_hits"),
        counter(&report, "model_misses"),
    );
    // The models and the bitmap are in its DRAM, within the budget.
    let mem = &report.metrics.memory_bytes.final_components;
    assert!(mem["models"] > 0 && mem["bitmaps"] > 0, "{mem:?}");
}

#[test]
fn configuration_errors_name_their_key() {
    registered();
    let sets = |s: &str| -> Vec<String> {
        [
            "geometry.channels=2",
            "geometry.blocks_per_plane=32",
            "geometry.pages_per_block=16",
            "ftl.over_provisioning=0.25",
            "replay.timing=false",
            s,
        ]
        .iter()
        .map(|x| x.to_string())
        .collect()
    };
    let err =
        ftlab_core::run::config::resolve(None, None, &[], &sets("learnedftl.nope=1")).unwrap_err();
    assert!(err.to_string().contains("learnedftl.nope"), "{err}");
    let cfg =
        ftlab_core::run::config::resolve(None, None, &[], &sets("learnedftl.models_per_page=0"))
            .unwrap();
    let err = run("learnedftl", &cfg, &[], false).unwrap_err();
    assert!(
        err.to_string().contains("learnedftl.models_per_page"),
        "{err}"
    );
    // A budget that cannot hold the bitmap and one entry is refused naming the budget.
    let mut cfg = device();
    cfg.dram.budget_fraction = 0.01;
    let err = run("learnedftl", &cfg, &[], false).unwrap_err();
    assert!(err.to_string().contains("dram.budget_fraction"), "{err}");
}

// Recovery, as the core's `recovery.rs` checks every built-in scheme: a page store that
// keeps each program's OOB (an erased block's records cleared at the next sync), crashes
// between requests and in the middle of one, and every flushed write survives.

/// `n` random requests of 1-4 pages (writes, reads, trims with `trims`), each write's
/// sequence numbers kept in `written`.
fn serve(
    dev: &mut Box<dyn Device>,
    rng: &mut Rng,
    written: &mut [Vec<u64>],
    n: usize,
    trims: bool,
) {
    let logical = written.len() as u64;
    for _ in 0..n {
        let lpa = rng.below(logical - 4);
        let pages = 1 + rng.below(4) as u32;
        match rng.below(10) {
            0 if trims => {
                dev.submit(&trim(lpa, pages, 4096)).unwrap();
            }
            0..=2 => {
                dev.submit(&read(lpa, pages, 4096)).unwrap();
            }
            _ => {
                let c = dev.submit(&write(lpa, pages, 4096)).unwrap();
                for i in 0..pages as u64 {
                    written[(lpa + i) as usize].push(c.first_seq + i);
                }
            }
        }
    }
}

fn contents(dev: &mut Box<dyn Device>, logical: u64) -> Vec<u64> {
    (0..logical)
        .map(|lpa| {
            dev.submit(&read(lpa, 1, 4096)).unwrap();
            dev.served()[0].unwrap_or(0)
        })
        .collect()
}

#[test]
fn every_flushed_write_survives_crashes() {
    registered();
    let mut cfg = small_config((2, 1, 2, 1), 48, 16, 0.3);
    cfg.precondition.mode = PreconditionMode::None;
    cfg.buffer.size_bytes = 16 * 4096;
    cfg.dram.budget_fraction = 0.25;
    let layout = cfg.validate().unwrap();
    let logical = layout.logical_pages;
    let sink = OobSink::new(&layout);
    let mut dev = block_device::open_with_sink("learnedftl", &cfg, true, Box::new(sink)).unwrap();
    let mut rng = Rng::new(11);
    let mut written: Vec<Vec<u64>> = vec![Vec::new(); logical as usize];
    let mut gc = 0;
    for round in 0..4 {
        serve(&mut dev, &mut rng, &mut written, 2000, true);
        dev.flush().unwrap();
        sink_of(&mut dev).sync();
        let flushed = contents(&mut dev, logical);
        if round % 2 == 1 {
            sink_of(&mut dev).left = Some(rng.below(800));
        }
        // Acknowledged, not flushed: may be lost (no trims here, which the store would log).
        serve(&mut dev, &mut rng, &mut written, 400, false);
        gc += dev.live().gc_invocations;
        let mut image_sink = sink_of(&mut dev).clone();
        image_sink.left = None;
        let image = image_sink.image(&[]);
        let (mut recovered, _) =
            block_device::open_recovered("learnedftl", &cfg, true, Box::new(image_sink), &image)
                .unwrap();
        let now = contents(&mut recovered, logical);
        for lpa in 0..logical as usize {
            let (was, is) = (flushed[lpa], now[lpa]);
            if was != 0 {
                assert!(
                    is >= was && written[lpa].contains(&is),
                    "round {round}: page {lpa} held #{was} at the flush, #{is} after recovery"
                );
            }
        }
        dev = recovered;
    }
    assert!(gc > 0, "no GC before the crashes");
    // The rebuilt models keep serving verified reads through GC.
    serve(&mut dev, &mut rng, &mut written, 3000, true);
    dev.finish().unwrap();
}

// As the core's device_model.rs checks every scheme: steady-state preconditioning, verified,
// and the run's counters starting after it.
#[test]
fn preconditioning_reaches_steady_state_verified() {
    registered();
    let mut cfg = small_config((2, 1, 2, 2), 48, 32, 0.12);
    cfg.gc.threshold = 0.06;
    cfg.precondition.window_pages = 512;
    cfg.precondition.mode = PreconditionMode::Steady;
    cfg.dram.budget_fraction = 0.2;
    let logical = cfg.validate().unwrap().logical_pages;
    let mut rng = Rng::new(5);
    let reqs: Vec<Request> = (0..3000u64)
        .map(|i| {
            let page = rng.below(logical);
            let r = if i % 4 == 0 {
                read(page, 1, 4096)
            } else {
                write(page, 1, 4096)
            };
            Request {
                time_ns: i * 2_000_000,
                ..r
            }
        })
        .collect();
    let r = run_preconditioned("learnedftl", &cfg, &reqs).unwrap();
    let p = r.precondition.as_ref().unwrap();
    assert!(p.steady, "window WAF {:?}", p.window_waf);
    assert!(p.gc_invocations > 0 && p.host_pages_written > logical);
    assert_eq!(r.metrics.host.requests, 3000);
    assert_eq!(r.metrics.host.unmapped_reads, 0);
    assert!(r.metrics.gc.invocations > 0);
}

// As the core's demand.rs checks the demand-cached schemes: from a few entries to the whole
// table, every read right through GC, and the cache within what the budget leaves it.
#[test]
fn every_budget_serves_every_read_right_and_keeps_within_it() {
    registered();
    let mut base = small_config((2, 1, 2, 1), 24, 16, 0.25);
    base.geometry.page_size = 512;
    let layout = base.validate().unwrap();
    let lp = layout.logical_pages;
    // The models and bitmap, which come out of the budget first.
    let entries_per_tp = 512 / layout.ppa_entry_bytes();
    let models = lp.div_ceil(entries_per_tp) * 8 * 8;
    let fixed_learned = models + lp.div_ceil(8);
    let mut rng = Rng::new(1);
    let mut reqs: Vec<Request> = (0..lp)
        .step_by(4)
        .map(|p| write(p, 4.min((lp - p) as u32), 512))
        .collect();
    for _ in 0..6000 {
        let span = if rng.below(10) < 7 { lp / 5 } else { lp };
        let len = 1 + rng.below(4) as u32;
        let start = rng.below(span - len as u64);
        reqs.push(match rng.below(10) {
            0..=5 => write(start, len, 512),
            6..=8 => read(start, len, 512),
            _ => trim(start, len, 512),
        });
    }
    for bytes in [64u64, 256, 1024, 4096, 0] {
        let mut cfg = base.clone();
        cfg.dram.budget_bytes = if bytes == 0 { 0 } else { fixed_learned + bytes };
        let report = run("learnedftl", &cfg, &reqs, true)
            .unwrap_or_else(|e| panic!("learnedftl at {bytes} B: {e}"));
        let m = &report.metrics;
        assert!(m.gc.invocations > 0, "{bytes} B: GC never ran");
        let c = &m.memory_bytes.final_components;
        assert_eq!(c["models"] + c["bitmaps"], fixed_learned);
        let fixed: u64 = ["gtd", "valid_bitmap", "block_counters"]
            .iter()
            .filter_map(|k| c.get(*k))
            .sum();
        let learned = m.memory_bytes.peak_total - fixed;
        assert!(learned > fixed_learned, "no cache in {:?}", m.memory_bytes);
        if bytes != 0 {
            assert!(
                learned <= cfg.dram.budget_bytes,
                "{learned} > {}",
                cfg.dram.budget_bytes
            );
        }
        if bytes != 0 && bytes <= 256 {
            assert!(m.flash.programs[Cause::Translation] > 0, "{bytes} B");
            assert!(counter(&report, "dirty_evictions") > 0.0);
        }
    }
}
