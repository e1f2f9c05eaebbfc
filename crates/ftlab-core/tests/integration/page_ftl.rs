//! The page-level FTL against the NAND rules, the shadow copy and the accounting.

use crate::common;

use common::*;
use ftlab_core::device::nand::Cause;
use ftlab_core::run::config::{GcMode, ProgramOrder, VictimPolicy};
use ftlab_core::{Op, Request};
use proptest::prelude::*;

#[test]
fn waf_is_one_without_overwrites_or_gc() {
    let cfg = small_config((2, 1, 2, 1), 64, 32, 0.2);
    let layout = cfg.validate().unwrap();
    let page = layout.page_size;
    // Write half the logical space once, read it all back.
    let n = layout.logical_pages / 2;
    let mut reqs: Vec<Request> = (0..n).map(|p| write(p, 1, page)).collect();
    reqs.extend((0..n).map(|p| read(p, 1, page)));
    let report = run("page", &cfg, &reqs, true).unwrap();
    let m = &report.metrics;
    assert_eq!(m.gc.invocations, 0);
    assert_eq!(m.host.pages_written, n);
    assert_eq!(m.flash.programs.total, n);
    assert_eq!(m.waf, Some(1.0));
    assert_eq!(m.flash.reads[Cause::Host], n);
    assert_eq!(m.flash.erases.total, 0);
}

#[test]
fn gc_keeps_every_valid_page_under_heavy_overwrite() {
    for policy in [VictimPolicy::Greedy, VictimPolicy::CostBenefit] {
        let mut cfg = small_config((2, 1, 1, 2), 32, 16, 0.25);
        cfg.gc.policy = policy;
        let layout = cfg.validate().unwrap();
        let page = layout.page_size;
        let lp = layout.logical_pages;
        // Fill, then overwrite a hot third many times: GC must run and lose nothing.
        let mut reqs: Vec<Request> = (0..lp).map(|p| write(p, 1, page)).collect();
        for i in 0..(lp * 8) {
            reqs.push(write((i * 7919) % (lp / 3), 1, page));
            if i % 5 == 0 {
                reqs.push(read((i * 104_729) % lp, 1, page));
            }
        }
        let report = run("page", &cfg, &reqs, true).unwrap();
        let m = &report.metrics;
        assert!(m.gc.invocations > 0, "{policy:?}: GC never ran");
        assert_eq!(m.flash.programs[Cause::Gc], m.gc.pages_moved);
        assert_eq!(m.flash.programs[Cause::Host], m.host.pages_written);
        assert!(m.waf.unwrap() > 1.0);
    }
}

#[test]
fn unmapped_and_trimmed_reads_are_counted_not_fatal() {
    let cfg = small_config((1, 1, 1, 1), 16, 8, 0.3);
    let page = cfg.validate().unwrap().page_size;
    let reqs = vec![
        read(3, 2, page),
        write(3, 1, page),
        read(3, 2, page),
        trim(3, 1, page),
        read(3, 1, page),
    ];
    let report = run("page", &cfg, &reqs, true).unwrap();
    let h = &report.metrics.host;
    assert_eq!(h.unmapped_reads, 4);
    assert_eq!(h.pages_trimmed, 1);
    assert_eq!(report.metrics.flash.reads.total, 1);
}

#[test]
fn partial_page_writes_read_modify_write() {
    let cfg = small_config((1, 1, 1, 1), 16, 8, 0.3);
    let page = cfg.validate().unwrap().page_size;
    let reqs = vec![
        write(0, 2, page),
        // 512 bytes into page 0 through 512 bytes into page 1: both partial.
        Request {
            time_ns: 0,
            offset_bytes: 512,
            len_bytes: page,
            op: Op::Write,
        },
        // Trim of less than a page discards nothing.
        Request {
            time_ns: 0,
            offset_bytes: 512,
            len_bytes: 1024,
            op: Op::Trim,
        },
    ];
    let report = run("page", &cfg, &reqs, true).unwrap();
    let m = &report.metrics;
    assert_eq!(m.host.partial_page_writes, 2);
    assert_eq!(m.flash.reads[Cause::Host], 2);
    assert_eq!(m.host.pages_trimmed, 0);
    assert_eq!(m.host.pages_written, 4);
}

#[test]
fn out_of_range_request_is_an_error_naming_it() {
    let cfg = small_config((1, 1, 1, 1), 16, 8, 0.3);
    let layout = cfg.validate().unwrap();
    let reqs = vec![
        write(0, 1, layout.page_size),
        write(layout.logical_pages, 1, layout.page_size),
    ];
    let err = run("page", &cfg, &reqs, false).unwrap_err().to_string();
    assert!(err.contains("request #2"), "{err}");
    assert!(err.contains("beyond the device"), "{err}");
}

#[test]
fn any_program_order_also_works() {
    let mut cfg = small_config((1, 1, 2, 1), 16, 8, 0.3);
    cfg.nand.program_order = ProgramOrder::Any;
    let layout = cfg.validate().unwrap();
    let reqs: Vec<Request> = (0..layout.logical_pages * 4)
        .map(|i| write((i * 13) % layout.logical_pages, 1, layout.page_size))
        .collect();
    let report = run("page", &cfg, &reqs, true).unwrap();
    assert!(report.metrics.gc.invocations > 0);
}

#[test]
fn identical_inputs_give_identical_json() {
    let mut cfg = small_config((2, 1, 1, 1), 32, 16, 0.2);
    cfg.buffer.size_bytes = 16 * 4096;
    let layout = cfg.validate().unwrap();
    let reqs: Vec<Request> = (0..5000u64)
        .map(|i| Request {
            time_ns: i * 20_000,
            offset_bytes: ((i * 2_654_435_761) % layout.logical_pages) * 4096,
            len_bytes: 4096 * (1 + (i % 3) as u32),
            op: if i % 4 == 0 { Op::Read } else { Op::Write },
        })
        .filter(|r| r.offset_bytes / 4096 + 3 < layout.logical_pages)
        .collect();
    let a = run("page", &cfg, &reqs, false).unwrap().to_json();
    let b = run("page", &cfg, &reqs, false).unwrap().to_json();
    assert_eq!(a, b);
    assert!(a.contains("\"p99_ns\""));
}

/// Mapping-only runs take the decisions of a timed run: always with foreground GC, and with
/// background GC when it has time enough between requests (10 ms here, enough to reclaim
/// what one request needs; a busier timed run leaves more to foreground GC).
#[test]
fn mapping_only_mode_has_the_same_counters() {
    for (mode, spacing_ns) in [
        (GcMode::Foreground, 50_000),
        (GcMode::Background, 10_000_000),
    ] {
        let mut cfg = small_config((2, 1, 2, 1), 32, 16, 0.2);
        cfg.buffer.size_bytes = 8 * 4096;
        cfg.gc.mode = mode;
        let layout = cfg.validate().unwrap();
        let reqs: Vec<Request> = (0..20_000u64)
            .map(|i| Request {
                time_ns: i * spacing_ns,
                offset_bytes: ((i * 7_777_777) % layout.logical_pages) * 4096,
                len_bytes: 4096,
                op: if i % 3 == 0 { Op::Read } else { Op::Write },
            })
            .collect();
        let timed = run("page", &cfg, &reqs, true).unwrap();
        cfg.replay.timing = false;
        let untimed = run("page", &cfg, &reqs, true).unwrap();
        let (t, u) = (&timed.metrics, &untimed.metrics);
        assert!(t.latency.is_some() && u.latency.is_none());
        assert_eq!(
            serde_json::to_string(&t.flash).unwrap(),
            serde_json::to_string(&u.flash).unwrap(),
            "{mode:?}"
        );
        assert_eq!(t.gc.pages_moved, u.gc.pages_moved);
        assert!(t.gc.invocations > 0);
    }
}

#[test]
fn memory_breakdown_of_the_page_ftl() {
    let cfg = small_config((2, 1, 1, 1), 32, 16, 0.2);
    let layout = cfg.validate().unwrap();
    let report = run("page", &cfg, &[write(0, 1, 4096)], false).unwrap();
    let m = &report.metrics.memory_bytes;
    // 1024 physical pages need 10-bit addresses: 2-byte entries.
    assert_eq!(layout.ppa_entry_bytes(), 2);
    assert_eq!(m.final_components["l2p"], layout.logical_pages * 2);
    assert_eq!(
        m.final_components["valid_bitmap"],
        layout.physical_pages.div_ceil(8)
    );
    assert_eq!(
        m.final_components["block_counters"],
        layout.total_blocks as u64 * 8
    );
    assert_eq!(m.peak_total, m.final_total);
}

/// One random operation on a small device: (kind, page, pages).
fn op_strategy() -> impl Strategy<Value = (u8, u64, u32)> {
    (0u8..10, 0u64..1_000_000, 1u32..5)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random writes, reads and trims over random small geometries never break a NAND rule
    /// and always read back what was written, with GC active.
    #[test]
    fn random_operations_keep_data_and_rules(
        channels in 1u32..3, dies in 1u32..3, planes in 1u32..3,
        blocks in 8u32..24, ppb_shift in 2u32..6, op in 0.15f64..0.45,
        buffer_pages in prop_oneof![Just(0u64), 1u64..12],
        sorted in any::<bool>(), order in 0u8..3, cost_benefit in any::<bool>(),
        timed in any::<bool>(),
        ops in prop::collection::vec(op_strategy(), 200..1500),
    ) {
        let mut cfg = small_config((channels, 1, dies, planes), blocks, 1 << ppb_shift, op);
        cfg.buffer.size_bytes = buffer_pages * 4096;
        if sorted { cfg.buffer.flush = ftlab_core::run::config::FlushOrder::Sorted; }
        cfg.nand.program_order =
            [ProgramOrder::Sequential, ProgramOrder::Ascending, ProgramOrder::Any][order as usize];
        if cost_benefit { cfg.gc.policy = VictimPolicy::CostBenefit; }
        cfg.replay.timing = timed;
        let Ok(layout) = cfg.validate() else { return Ok(()); };
        let lp = layout.logical_pages;
        let page = layout.page_size;
        // Skew addresses to a hot region so pages are overwritten and GC runs.
        let reqs: Vec<Request> = ops.iter().map(|&(kind, x, n)| {
            let n = n.min(lp as u32);
            let start = if x % 3 == 0 { x % lp } else { x % (lp / 4).max(1) };
            let start = start.min(lp - n as u64);
            match kind {
                0..=5 => write(start, n, page),
                6..=8 => read(start, n, page),
                _ => trim(start, n, page),
            }
        }).collect();
        let report = run("page", &cfg, &reqs, true);
        prop_assert!(report.is_ok(), "{}", report.unwrap_err());
        let m = report.unwrap().metrics;
        prop_assert_eq!(m.flash.programs[Cause::Gc], m.gc.pages_moved);
    }
}
