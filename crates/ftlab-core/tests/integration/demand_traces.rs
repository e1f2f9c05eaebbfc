//! The demand-cached schemes on real traces, verified, with GC active: the device is sized
//! to the trace's address span and filled first, so the trace's writes overwrite and GC
//! runs. DRAM budgets from 8 KiB to the whole table. Skipped when ../shared/traces is absent.

use crate::common;

use common::*;

fn verify_on(real: &RealTrace) {
    let Some(trace) = real.load() else { return };
    let name = real.name;
    let span = span_bytes(&trace);
    for scheme in ["dftl", "sftl", "tpftl", "selective"] {
        for budget in [8u64 << 10, 0] {
            let mut cfg = device_for_span(span, 0.07, 8);
            cfg.dram.budget_bytes = budget;
            cfg.replay.timing = false;
            // Mapping blocks of one page, so that a few KiB hold some.
            cfg.schemes
                .get_mut("selective")
                .unwrap()
                .insert("mapping_block_bytes".into(), toml::Value::Integer(4096));
            let layout = cfg.validate().unwrap();
            let reqs = after_full_fill(layout.logical_pages, &trace);
            let report = run(scheme, &cfg, &reqs, false)
                .unwrap_or_else(|e| panic!("{name}, {scheme} at {budget} bytes: {e}"));
            assert_gc_reads_and_misses(&report, budget, &format!("{name}, {scheme}"));
        }
    }
}

#[test]
fn financial1_verifies_under_every_scheme() {
    verify_on(&FINANCIAL1);
}

#[test]
fn disksim_validation_trace_verifies_under_every_scheme() {
    verify_on(&DISKSIM_VALIDATION);
}
