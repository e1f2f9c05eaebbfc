//! HPFTL and SlimFTL: verification with GC active on nearly full devices, forced hash
//! collisions and shared virtual blocks, their counters, memory accounting and config errors.

use crate::common;

use common::*;
use ftlab_core::controller::simulator::Simulator;
use ftlab_core::device::nand::{Cause, Flash};
use ftlab_core::ftl::hashed::slimftl::SlimFtl;
use ftlab_core::ftl::Scheme;
use ftlab_core::run::config::Config;
use ftlab_core::run::report::Report;
use ftlab_core::{Op, Request};
use proptest::prelude::*;
use std::path::Path;

const SCHEMES: [&str; 2] = ["hpftl", "slimftl"];

/// A deterministic pseudo-random sequence (splitmix64).
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Fills every logical page, then `rounds` times the logical space in random overwrites
/// (runs of `run` pages from random places), with reads and a few trims.
fn fill_and_churn(pages: u64, page: u32, rounds: u64, run: u64, seed: u64) -> Vec<Request> {
    let mut rng = Mix(seed);
    let mut reqs: Vec<Request> = (0..pages).map(|p| write(p, 1, page)).collect();
    let mut written = 0;
    while written < rounds * pages {
        let start = rng.below(pages);
        let len = run.min(pages - start);
        for p in start..start + len {
            match rng.below(20) {
                0..=4 => reqs.push(read(rng.below(pages), 1, page)),
                5 => reqs.push(trim(p, 1, page)),
                _ => {}
            }
            reqs.push(write(p, 1, page));
        }
        written += len;
    }
    reqs
}

fn counter(report: &Report, name: &str) -> f64 {
    *report
        .metrics
        .scheme
        .get(name)
        .unwrap_or_else(|| panic!("no scheme counter `{name}`"))
}

fn set(cfg: &mut Config, scheme: &str, key: &str, value: toml::Value) {
    cfg.schemes
        .get_mut(scheme)
        .expect("scheme section")
        .insert(key.into(), value);
}

#[test]
fn both_pass_verification_with_gc_on_a_nearly_full_device() {
    for scheme in SCHEMES {
        for run_pages in [1, 16] {
            let cfg = small_config((2, 1, 2, 1), 32, 32, 0.12);
            let layout = cfg.validate().unwrap();
            let reqs = fill_and_churn(layout.logical_pages, layout.page_size, 4, run_pages, 7);
            let report = run(scheme, &cfg, &reqs, true).unwrap();
            let m = &report.metrics;
            assert!(m.gc.invocations > 0, "{scheme}: GC never ran");
            assert_eq!(
                m.flash.programs[Cause::Host],
                m.host.pages_written,
                "{scheme}"
            );
            assert!(m.waf.unwrap() > 1.0, "{scheme}");
        }
    }
}

#[test]
fn hpftl_collisions_fill_the_secondary_table_and_reclaim_empties_it() {
    // Six hash functions: collisions are frequent.
    let mut cfg = small_config((2, 1, 1, 1), 64, 16, 0.15);
    set(&mut cfg, "hpftl", "hid_bits", 3.into());
    set(&mut cfg, "hpftl", "secondary_fraction", 0.1.into());
    let layout = cfg.validate().unwrap();
    let reqs = fill_and_churn(layout.logical_pages, layout.page_size, 6, 1, 11);
    let report = run("hpftl", &cfg, &reqs, true).unwrap();
    let m = &report.metrics;
    let capacity = counter(&report, "secondary_capacity");
    assert_eq!(capacity, (0.1 * layout.logical_pages as f64).round());
    assert!(counter(&report, "hash_collisions") > 0.0);
    assert!(counter(&report, "reclaims") > 0.0);
    assert!(counter(&report, "reclaim_pages_moved") > 0.0);
    assert!(counter(&report, "secondary_entries_peak") <= capacity);
    assert!(counter(&report, "secondary_inserts_by_gc") > 0.0);
    // Reclaim copies are GC-caused programs but not GC relocations.
    assert_eq!(
        m.flash.programs[Cause::Gc] as f64,
        m.gc.pages_moved as f64 + counter(&report, "reclaim_pages_moved")
    );
    assert_eq!(
        m.gc.invocations as f64,
        counter(&report, "gc_hashed_victims") + counter(&report, "gc_log_victims")
    );
}

#[test]
fn slimftl_shares_virtual_blocks_when_hashing_cannot_place_a_page() {
    // One hash function and little spare space: every VBA a page can reach is often full
    // of valid pages, so pages go to shared virtual blocks and reads must probe.
    let mut cfg = small_config((1, 1, 2, 1), 32, 16, 0.1);
    set(&mut cfg, "slimftl", "hid_bits", 1.into());
    set(&mut cfg, "slimftl", "lpa_shift", 0.into());
    let layout = cfg.validate().unwrap();
    let reqs = fill_and_churn(layout.logical_pages, layout.page_size, 5, 3, 3);
    // Every read is still verified; without the final read-back the probe counter covers
    // exactly the run's flash reads.
    let report = run("slimftl", &cfg, &reqs, false).unwrap();
    assert!(counter(&report, "shared_block_writes") > 0.0);
    assert!(counter(&report, "probe_reads") > 0.0);
    assert!(counter(&report, "longest_probe_vbas") >= 1.0);
    let m = &report.metrics;
    assert_eq!(
        m.flash.reads[Cause::Misprediction] as f64,
        counter(&report, "probe_reads")
    );
    assert!(m.gc.invocations > 0);
}

#[test]
fn slimftl_gc_keeps_every_hash_id() {
    let cfg = small_config((2, 1, 1, 1), 32, 16, 0.15);
    let layout = cfg.validate().unwrap();
    let page = layout.page_size;
    let flash = Flash::new(&cfg.device(), &layout, 0, false).unwrap();
    let ftl = SlimFtl::new(&cfg.scheme_context(), &layout).unwrap();
    let mut sim = Simulator::new(&cfg.controller(), &layout, ftl, flash, true);
    let lp = layout.logical_pages;
    for p in 0..lp {
        sim.submit(&write(p, 1, page)).unwrap();
    }
    let before: Vec<u32> = (0..lp as u32).map(|l| sim.ftl().hash_id(l)).collect();
    // Overwrite only the first half, many times: GC must move pages of the second half.
    let mut rng = Mix(5);
    for _ in 0..lp * 6 {
        sim.submit(&write(rng.below(lp / 2), 1, page)).unwrap();
    }
    assert!(sim.flash().stats.gc_pages_moved > 0);
    let mut moved_untouched = 0;
    for l in lp / 2..lp {
        assert_eq!(sim.ftl().hash_id(l as u32), before[l as usize], "page {l}");
        moved_untouched += 1;
    }
    assert!(moved_untouched > 0);
    sim.check_all().unwrap();
}

#[test]
fn slimftl_sequentiality_aware_hashing_cuts_gc_copies_on_sequential_overwrites() {
    let moved = |shift: u32| {
        let mut cfg = small_config((2, 1, 1, 1), 64, 16, 0.12);
        set(&mut cfg, "slimftl", "lpa_shift", (shift as i64).into());
        let layout = cfg.validate().unwrap();
        // Whole 16-page runs, aligned, rewritten in random order.
        let runs = layout.logical_pages / 16;
        let mut reqs: Vec<Request> = (0..runs * 16).map(|p| write(p, 1, 4096)).collect();
        let mut rng = Mix(9);
        for _ in 0..runs * 6 {
            let r = rng.below(runs);
            reqs.extend((r * 16..r * 16 + 16).map(|p| write(p, 1, 4096)));
        }
        let report = run("slimftl", &cfg, &reqs, true).unwrap();
        report.metrics.gc.pages_moved
    };
    let (oblivious, aware) = (moved(0), moved(4));
    assert!(
        aware * 4 < oblivious,
        "GC copies: shift 4 -> {aware}, shift 0 -> {oblivious}"
    );
}

/// Superblock virtual blocks: a sequential write spreads over every die (each run's pages
/// on their own units) where one-block virtual blocks put a whole run on one die, and the
/// mapping stays as small; reads verify with GC and probing active.
#[test]
fn slimftl_superblocks_spread_sequential_runs_over_the_dies() {
    let config = |vb: &str| {
        let mut cfg = small_config((4, 1, 2, 1), 32, 16, 0.15);
        set(&mut cfg, "slimftl", "lpa_shift", 4.into());
        set(&mut cfg, "slimftl", "virtual_blocks", vb.into());
        cfg.replay.mode = ftlab_core::run::config::ReplayMode::Closed;
        cfg.replay.queue_depth = 1;
        cfg
    };
    let layout = config("block").validate().unwrap();
    let lp = layout.logical_pages;
    // 16-page sequential writes, then 16-page sequential reads, one at a time.
    let mut reqs: Vec<Request> = (0..lp / 16).map(|r| write(r * 16, 16, 4096)).collect();
    reqs.extend((0..lp / 16).map(|r| read(r * 16, 16, 4096)));
    let read_mean = |vb: &str| {
        let report = run("slimftl", &config(vb), &reqs, true).unwrap();
        let mapping = counter(&report, "mapping_vs_page_table");
        (report.metrics.latency.unwrap().read.mean_ns, mapping)
    };
    let ((block, block_map), (superblock, superblock_map)) =
        (read_mean("block"), read_mean("superblock"));
    assert!(
        superblock * 3.0 < block,
        "16-page reads: {superblock} ns with superblocks, {block} ns with blocks"
    );
    assert_eq!(block_map, superblock_map);
    // Churn with GC, collisions and shared blocks (one hash function, no shift).
    let mut cfg = config("superblock");
    set(&mut cfg, "slimftl", "hid_bits", 1.into());
    set(&mut cfg, "slimftl", "lpa_shift", 0.into());
    let reqs = fill_and_churn(lp, 4096, 4, 3, 13);
    let report = run("slimftl", &cfg, &reqs, true).unwrap();
    assert!(report.metrics.gc.invocations > 0);
    assert!(counter(&report, "shared_block_writes") > 0.0);
}

#[test]
fn mapping_memory_matches_the_thesis_on_its_device() {
    let cfg = ftlab_core::run::config::resolve(Some("slimftl"), None, &[], &[]).unwrap();
    let layout = cfg.validate().unwrap();
    assert_eq!(layout.logical_pages, 2 * 1024 * 1024);
    let one = [write(0, 1, layout.page_size)];
    let slim = run("slimftl", &cfg, &one, false).unwrap();
    let c = &slim.metrics.memory_bytes.final_components;
    assert_eq!(c["primary_table"], layout.logical_pages * 14 / 8);
    let vbas = layout.total_blocks as u64 - layout.units as u64;
    assert_eq!(c["virtual_block_table"], vbas * 4);
    let ratio = counter(&slim, "mapping_vs_page_table");
    assert!((0.4405..0.4420).contains(&ratio), "SlimFTL {ratio}");
    let hp = run("hpftl", &cfg, &one, false).unwrap();
    let c = &hp.metrics.memory_bytes.final_components;
    assert_eq!(c["primary_table"], layout.logical_pages * 14 / 8);
    assert_eq!(
        c["secondary_table"],
        (0.05 * layout.logical_pages as f64).round() as u64 * 8
    );
    let ratio = counter(&hp, "mapping_vs_page_table");
    assert!((0.537..0.538).contains(&ratio), "HPFTL {ratio}");
}

#[test]
fn bad_scheme_settings_name_the_key() {
    let err = |scheme: &str, key: &str, value: toml::Value| {
        let mut cfg = small_config((1, 1, 2, 1), 32, 64, 0.2);
        set(&mut cfg, scheme, key, value);
        run(scheme, &cfg, &[write(0, 1, 4096)], false)
            .unwrap_err()
            .to_string()
    };
    let e = err("slimftl", "ppid_bits", 5.into());
    assert!(
        e.contains("slimftl.ppid_bits") && e.contains("64 pages"),
        "{e}"
    );
    let e = err("hpftl", "hid_bits", 1.into());
    assert!(e.contains("hpftl.hid_bits"), "{e}");
    let e = err("slimftl", "hid_bits", 8.into());
    assert!(e.contains("slimftl.hid_bits"), "{e}");
    let e = err("slimftl", "lpa_shift", "eight".into());
    assert!(e.contains("slimftl.lpa_shift"), "{e}");
    let e = err("hpftl", "secondary_fraction", 0.001.into());
    assert!(e.contains("hpftl.secondary_fraction"), "{e}");
    let e = ftlab_core::run::config::resolve(None, None, &[], &["slimftl.lpa_shfit=3".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("slimftl.lpa_shift"), "{e}");
}

#[test]
fn identical_inputs_give_identical_json() {
    for scheme in SCHEMES {
        let cfg = small_config((2, 1, 1, 1), 32, 16, 0.15);
        let layout = cfg.validate().unwrap();
        let reqs = fill_and_churn(layout.logical_pages, layout.page_size, 2, 4, 1);
        let a = run(scheme, &cfg, &reqs, false).unwrap().to_json();
        let b = run(scheme, &cfg, &reqs, false).unwrap().to_json();
        assert_eq!(a, b);
    }
}

/// With foreground GC, whatever the timing (no gaps here); background GC takes the same
/// decisions when the gaps leave it time enough (`hashed_background_gc.rs`).
#[test]
fn mapping_only_mode_takes_the_same_decisions() {
    for scheme in SCHEMES {
        let mut cfg = small_config((2, 1, 2, 1), 32, 16, 0.15);
        cfg.gc.mode = ftlab_core::run::config::GcMode::Foreground;
        let layout = cfg.validate().unwrap();
        let reqs = fill_and_churn(layout.logical_pages, layout.page_size, 3, 2, 2);
        let timed = run(scheme, &cfg, &reqs, true).unwrap();
        cfg.replay.timing = false;
        let untimed = run(scheme, &cfg, &reqs, true).unwrap();
        assert_eq!(
            serde_json::to_string(&timed.metrics.flash).unwrap(),
            serde_json::to_string(&untimed.metrics.flash).unwrap(),
            "{scheme}"
        );
        assert_eq!(timed.metrics.scheme, untimed.metrics.scheme, "{scheme}");
    }
}

/// A real trace folded onto a small device (byte offsets modulo its logical size, so that
/// the trace's hot spots keep their shape) and replayed `passes` times after a full fill:
/// real access patterns with GC active.
fn folded_trace(path: &Path, logical_bytes: u64, page: u32, passes: usize) -> Vec<Request> {
    let trace = load_trace(path, "auto", "auto");
    let mut reqs: Vec<Request> = (0..logical_bytes / page as u64)
        .map(|p| write(p, 1, page))
        .collect();
    for _ in 0..passes {
        for r in &trace {
            let len = (r.len_bytes as u64).min(64 * page as u64);
            let offset = r.offset_bytes % logical_bytes;
            let offset = offset.min(logical_bytes - len);
            reqs.push(Request {
                time_ns: 0,
                offset_bytes: offset,
                len_bytes: len as u32,
                op: r.op,
            });
        }
    }
    reqs
}

#[test]
fn real_traces_verify_with_gc_active() {
    let Some(dir) = traces_dir() else { return };
    // (file, passes): every format with writes, each replayed until it overwrites the device.
    let files = [
        ("ssdsim_hust_financial1/example.ascii", 3),
        ("mqsim_umass_websearch_tpcc/tpcc-small.trace", 3),
        ("msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv", 8),
        (
            "snia_systor17_caffeine_sample/systor17-traces-sample.csv.gz",
            8,
        ),
        ("tencent_cbs_caffeine_sample/cloud_storage-sample.bz2", 1),
        ("cloudphysics_libCacheSim/cloudPhysicsIO.vscsi", 1),
        (
            "fiu_mail_excerpt/DERIVED_cheetah.cs.fiu.edu-110108-113008.1.head10000.blkparse",
            4,
        ),
        ("wiscsee_blkparse/blkparse-output.txt", 40),
    ];
    for (file, passes) in files {
        let cfg = small_config((2, 1, 2, 1), 64, 32, 0.1);
        let layout = cfg.validate().unwrap();
        let reqs = folded_trace(
            &dir.join(file),
            layout.logical_bytes(),
            layout.page_size,
            passes,
        );
        let writes = reqs.iter().filter(|r| r.op == Op::Write).count();
        assert!(writes as u64 > layout.logical_pages, "{file}");
        for scheme in SCHEMES {
            let report = run(scheme, &cfg, &reqs, true)
                .unwrap_or_else(|e| panic!("{scheme} on {file}: {e}"));
            assert!(
                report.metrics.gc.invocations > 0,
                "{scheme} on {file}: no GC"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Random writes, reads and trims over small random geometries, GC active, every read
    /// checked, and every page read back at the end.
    #[test]
    fn random_operations_always_read_back(
        scheme in prop::sample::select(SCHEMES.to_vec()),
        channels in 1u32..3,
        dies in 1u32..3,
        blocks in 16u32..40,
        ppb_log in 2u32..6,
        op in 0.08f64..0.3,
        hid_bits in 3u32..6,
        shift in 0u32..5,
        superblocks in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let mut cfg = small_config((channels, 1, dies, 1), blocks, 1 << ppb_log, op);
        set(&mut cfg, scheme, "hid_bits", (hid_bits as i64).into());
        if scheme == "slimftl" {
            set(&mut cfg, scheme, "lpa_shift", (shift as i64).into());
            let vb = if superblocks { "superblock" } else { "block" };
            set(&mut cfg, scheme, "virtual_blocks", vb.into());
        } else {
            set(&mut cfg, scheme, "secondary_fraction", 0.2.into());
        }
        let Ok(layout) = cfg.validate() else { return Ok(()) };
        let lp = layout.logical_pages;
        let mut rng = Mix(seed);
        let mut reqs = Vec::new();
        for _ in 0..lp * 5 {
            let p = rng.below(lp);
            let n = 1 + rng.below(4).min(lp - p - 1) as u32;
            reqs.push(match rng.below(10) {
                0..=2 => read(p, n, 4096),
                3 => trim(p, n, 4096),
                _ => write(p, n, 4096),
            });
        }
        let result = run(scheme, &cfg, &reqs, true);
        prop_assert!(result.is_ok(), "{}: {}", scheme, result.unwrap_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// With only two hash functions on a tiny device, HPFTL's secondary table can fill with
    /// pages whose every hashed block is full of valid data: a real limit of the design.
    /// It must then stop with a clear device-full error, never corrupt data or break a
    /// NAND rule.
    #[test]
    fn hpftl_with_two_hash_functions_stops_cleanly_if_at_all(
        blocks in 16u32..40,
        ppb_log in 2u32..5,
        seed in any::<u64>(),
    ) {
        let mut cfg = small_config((1, 1, 2, 1), blocks, 1 << ppb_log, 0.15);
        set(&mut cfg, "hpftl", "hid_bits", 2.into());
        set(&mut cfg, "hpftl", "secondary_fraction", 0.2.into());
        let Ok(layout) = cfg.validate() else { return Ok(()) };
        let reqs = fill_and_churn(layout.logical_pages, layout.page_size, 4, 1, seed);
        match run("hpftl", &cfg, &reqs, true) {
            Ok(_) => {}
            Err(ftlab_core::Error::DeviceFull { message }) => {
                prop_assert!(message.contains("hpftl.hid_bits"), "{}", message);
            }
            Err(e) => prop_assert!(false, "{}", e),
        }
    }
}
