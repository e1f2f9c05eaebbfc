//! Background (idle-time) GC of HPFTL and SlimFTL: it runs in the gaps between requests as
//! background flash work, no read returns wrong data, and foreground mode is unchanged.

use crate::common;

use common::*;
use ftlab_core::run::config::{Config, GcMode};
use ftlab_core::run::report::Report;
use ftlab_core::Request;

/// The schemes and settings under test: HPFTL, SlimFTL with the thesis's virtual blocks
/// and over superblocks.
const VARIANTS: [(&str, Option<&str>); 3] = [
    ("hpftl", None),
    ("slimftl", None),
    ("slimftl", Some("superblock")),
];

fn config(scheme: &str, virtual_blocks: Option<&str>, mode: GcMode) -> Config {
    let mut cfg = small_config((2, 1, 2, 1), 48, 32, 0.15);
    cfg.gc.mode = mode;
    cfg.gc.threshold = 0.1;
    cfg.gc.hard_threshold = 0.02;
    if let Some(v) = virtual_blocks {
        cfg.schemes
            .get_mut(scheme)
            .unwrap()
            .insert("virtual_blocks".into(), v.into());
    }
    cfg
}

/// Every logical page once, then three times the logical space in random runs of 8 pages,
/// with reads; requests `spacing_ns` apart.
fn workload(logical_pages: u64, page: u32, spacing_ns: u64) -> Vec<Request> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut reqs: Vec<Request> = (0..logical_pages).map(|p| write(p, 1, page)).collect();
    let mut written = 0;
    while written < 3 * logical_pages {
        let start = next() % (logical_pages - 8);
        reqs.push(write(start, 8, page));
        reqs.push(read(next() % logical_pages, 1, page));
        written += 8;
    }
    for (i, r) in reqs.iter_mut().enumerate() {
        r.time_ns = i as u64 * spacing_ns;
    }
    reqs
}

fn run_variant(
    scheme: &str,
    virtual_blocks: Option<&str>,
    mode: GcMode,
    spacing_ns: u64,
) -> Report {
    let cfg = config(scheme, virtual_blocks, mode);
    let layout = cfg.validate().unwrap();
    let reqs = workload(layout.logical_pages, layout.page_size, spacing_ns);
    // Verification on, every logical page read back at the end.
    run(scheme, &cfg, &reqs, true).unwrap_or_else(|e| panic!("{scheme} {virtual_blocks:?}: {e}"))
}

fn background_ops(report: &Report) -> u64 {
    report
        .metrics
        .scheduler
        .as_ref()
        .map_or(0, |s| s.background_operations)
}

fn mean_write_ns(report: &Report) -> f64 {
    report.metrics.latency.as_ref().unwrap().write.mean_ns
}

#[test]
fn background_gc_runs_in_idle_gaps_and_every_read_is_right() {
    for (scheme, vb) in VARIANTS {
        // 20 ms between requests: time enough to collect in the gaps.
        let bg = run_variant(scheme, vb, GcMode::Background, 20_000_000);
        let fg = run_variant(scheme, vb, GcMode::Foreground, 20_000_000);
        let what = format!("{scheme} {vb:?}");
        assert_eq!(bg.metrics.gc.scheduling, "background", "{what}");
        assert_eq!(fg.metrics.gc.scheduling, "foreground", "{what}");
        assert!(bg.metrics.gc.invocations > 0, "{what}: no GC");
        // GC's copies and erases were queued as background work; foreground GC queues none.
        assert!(background_ops(&bg) > 0, "{what}: no background work");
        assert_eq!(background_ops(&fg), 0, "{what}");
        // With idle gaps, writes no longer wait for GC.
        let (b, f) = (mean_write_ns(&bg), mean_write_ns(&fg));
        assert!(
            b < f,
            "{what}: mean write {b} ns in background, {f} ns in foreground"
        );
    }
}

/// With no gaps at all the background has no time: writes fall to the hard threshold and
/// collect in their path, and the data stay right.
#[test]
fn background_gc_without_idle_time_still_keeps_the_data() {
    for (scheme, vb) in VARIANTS {
        let report = run_variant(scheme, vb, GcMode::Background, 0);
        assert!(report.metrics.gc.invocations > 0, "{scheme} {vb:?}");
    }
}

/// Mapping-only runs take the decisions of a timed run with time enough between requests
/// (1 s: HPFTL on this device copies tens of pages per host page, so shorter gaps leave the
/// timed run less background work).
#[test]
fn background_gc_takes_the_same_decisions_in_mapping_only_mode() {
    for (scheme, vb) in VARIANTS {
        let mut cfg = config(scheme, vb, GcMode::Background);
        let layout = cfg.validate().unwrap();
        let reqs = workload(layout.logical_pages, layout.page_size, 1_000_000_000);
        let timed = run(scheme, &cfg, &reqs, true).unwrap();
        cfg.replay.timing = false;
        let untimed = run(scheme, &cfg, &reqs, true).unwrap();
        assert_eq!(
            serde_json::to_string(&timed.metrics.flash).unwrap(),
            serde_json::to_string(&untimed.metrics.flash).unwrap(),
            "{scheme} {vb:?}"
        );
    }
}

/// Foreground mode is the scheme's GC as before background GC existed: the counters of
/// this run (GCs, pages moved, programs, reads, mean write latency in ns) are those the code
/// gave before it (commit b6bb727).
#[test]
fn foreground_mode_is_unchanged() {
    let before: [(u64, u64, u64, u64, u64); 3] = [
        (15473, 389406, 500700, 481765, 29589341885),
        (1351, 28314, 49208, 30273, 1203056438),
        (1665, 38370, 59264, 40329, 2846024127),
    ];
    for ((scheme, vb), expected) in VARIANTS.into_iter().zip(before) {
        let report = run_variant(scheme, vb, GcMode::Foreground, 100_000);
        let m = &report.metrics;
        let got = (
            m.gc.invocations,
            m.gc.pages_moved,
            m.flash.programs.total,
            m.flash.reads.total,
            m.latency.as_ref().unwrap().write.mean_ns.round() as u64,
        );
        assert_eq!(got, expected, "{scheme} {vb:?}");
    }
}

/// Every logical page once, then four times the logical space in runs of 8 pages, 9 in 10
/// of them in the first tenth of the space (hot), with reads; requests `spacing_ns` apart.
fn skewed_workload(logical_pages: u64, page: u32, spacing_ns: u64) -> Vec<Request> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let hot = logical_pages / 10;
    let mut reqs: Vec<Request> = (0..logical_pages).map(|p| write(p, 1, page)).collect();
    let mut written = 0;
    while written < 4 * logical_pages {
        let start = if next() % 10 == 0 {
            next() % (logical_pages - 8)
        } else {
            next() % (hot - 8)
        };
        reqs.push(write(start, 8, page));
        reqs.push(read(next() % logical_pages, 1, page));
        written += 8;
    }
    for (i, r) in reqs.iter_mut().enumerate() {
        r.time_ns = i as u64 * spacing_ns;
    }
    reqs
}

/// SlimFTL's background GC compacts the virtual blocks writes found full, work its
/// foreground GC would do in the writes' path: on a skewed workload it writes no more than
/// foreground GC does (within 10%). A trigger on the unit's free pages compacted cold,
/// nearly-valid blocks the hot writes never reach.
#[test]
fn slimftl_background_gc_adds_no_copies_on_a_skewed_workload() {
    for vb in [None, Some("superblock")] {
        let waf = |mode: GcMode| {
            let cfg = config("slimftl", vb, mode);
            let layout = cfg.validate().unwrap();
            let reqs = skewed_workload(layout.logical_pages, layout.page_size, 1_000_000);
            let report = run("slimftl", &cfg, &reqs, true).unwrap();
            assert_eq!(
                report.metrics.gc.scheduling,
                format!("{mode:?}").to_lowercase()
            );
            report.metrics.flash.programs.total as f64 / report.metrics.host.pages_written as f64
        };
        let (bg, fg) = (waf(GcMode::Background), waf(GcMode::Foreground));
        assert!(fg > 1.0, "{vb:?}: no GC in the foreground (WAF {fg})");
        assert!(
            bg <= fg * 1.1,
            "{vb:?}: WAF {bg} with background GC, {fg} in the foreground"
        );
    }
}
