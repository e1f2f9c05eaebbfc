//! LeaFTL on real traces, verified, with GC active: the device is sized to the trace's
//! address span and filled first, so the trace's writes overwrite and GC runs; every error
//! bound, both placements, the whole table in DRAM and a 3 KiB mapping cache. Skipped when
//! ../shared/traces is absent.

use crate::common;

use common::*;
use ftlab_core::run::config::FlushOrder;

fn verify_on(real: &RealTrace) {
    let Some(trace) = real.load() else { return };
    let name = real.name;
    let span = span_bytes(&trace);
    for gamma in [0i64, 1, 4, 16] {
        for (placement, budget) in [("block", 0u64), ("block", 3 << 10), ("stripe", 3 << 10)] {
            let mut cfg = device_for_span(span, 0.05, 6);
            cfg.buffer.size_bytes = 256 * 4096;
            cfg.buffer.flush = FlushOrder::Sorted;
            cfg.buffer.flush_group_pages = 256;
            cfg.dram.budget_bytes = budget;
            cfg.replay.timing = false;
            let section = cfg.schemes.get_mut("leaftl").unwrap();
            section.insert("gamma".into(), toml::Value::Integer(gamma));
            section.insert("placement".into(), toml::Value::String(placement.into()));
            let layout = cfg.validate().unwrap();
            let reqs = after_full_fill(layout.logical_pages, &trace);
            let report = run("leaftl", &cfg, &reqs, true).unwrap_or_else(|e| {
                panic!("{name}, gamma {gamma}, {placement}, {budget} bytes: {e}")
            });
            assert_gc_reads_and_misses(&report, budget, name);
        }
    }
}

#[test]
fn financial1_verifies() {
    verify_on(&FINANCIAL1);
}

#[test]
fn disksim_validation_trace_verifies() {
    verify_on(&DISKSIM_VALIDATION);
}
