//! The demand-cached schemes on real traces, verified, with GC active: the device is sized
//! to the trace's address span and filled first, so the trace's writes overwrite and GC
//! runs. DRAM budgets from 8 KiB to the whole table. Skipped when ../shared/traces is absent.

mod common;

use common::*;
use ftlab_core::config::Config;
use ftlab_core::Request;
use std::path::{Path, PathBuf};

fn load(path: &Path, time_unit: &str) -> Vec<Request> {
    load_trace(path, "disksim", time_unit)
}

/// A device of four parallel units whose logical space just holds `span_bytes`.
fn device_for(span_bytes: u64) -> Config {
    let pages_per_block = 64u64;
    let physical_pages = (span_bytes / 4096) as f64 / 0.93;
    let blocks = (physical_pages / (4 * pages_per_block) as f64).ceil() as u32 + 8;
    small_config((2, 1, 2, 1), blocks, pages_per_block as u32, 0.07)
}

fn verify_on(name: &str, path: PathBuf, time_unit: &str) {
    let trace = load(&path, time_unit);
    let span = trace
        .iter()
        .map(|r| r.offset_bytes + r.len_bytes as u64)
        .max()
        .unwrap();
    for scheme in ["dftl", "sftl", "tpftl", "selective"] {
        for budget in [8u64 << 10, 0] {
            let mut cfg = device_for(span);
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
    let Some(dir) = traces_dir() else { return };
    verify_on(
        "Financial1",
        dir.join("ssdsim_hust_financial1/example.ascii"),
        "ns",
    );
}

#[test]
fn disksim_validation_trace_verifies_under_every_scheme() {
    let Some(dir) = traces_dir() else { return };
    verify_on(
        "DiskSim ascii.trace",
        dir.join("disksim_hpl_validation/ascii.trace"),
        "ms",
    );
}
