//! LeaFTL on real traces, verified, with GC active: the device is sized to the trace's
//! address span and filled first, so the trace's writes overwrite and GC runs; every error
//! bound, both placements, the whole table in DRAM and a 3 KiB mapping cache. Skipped when
//! ../shared/traces is absent.

mod common;

use common::*;
use ftlab_core::config::{Config, FlushOrder};
use ftlab_core::{trace, Request};
use std::path::{Path, PathBuf};

fn load(path: &Path, time_unit: &str) -> Vec<Request> {
    trace::open(path, "disksim", time_unit)
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// A device of four parallel units whose logical space just holds `span_bytes`.
fn device_for(span_bytes: u64) -> Config {
    let pages_per_block = 64u64;
    let physical_pages = (span_bytes / 4096) as f64 / 0.95;
    let blocks = (physical_pages / (4 * pages_per_block) as f64).ceil() as u32 + 6;
    let mut cfg = small_config((2, 1, 2, 1), blocks, pages_per_block as u32, 0.05);
    cfg.buffer.size_bytes = 256 * 4096;
    cfg.buffer.flush = FlushOrder::Sorted;
    cfg.buffer.flush_group_pages = 256;
    cfg
}

fn verify_on(name: &str, path: PathBuf, time_unit: &str) {
    let trace = load(&path, time_unit);
    let span = trace
        .iter()
        .map(|r| r.offset_bytes + r.len_bytes as u64)
        .max()
        .unwrap();
    for gamma in [0i64, 1, 4, 16] {
        for (placement, budget) in [("block", 0u64), ("block", 3 << 10), ("stripe", 3 << 10)] {
            let mut cfg = device_for(span);
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
    let Some(dir) = traces_dir() else { return };
    verify_on(
        "Financial1",
        dir.join("ssdsim_hust_financial1/example.ascii"),
        "ns",
    );
}

#[test]
fn disksim_validation_trace_verifies() {
    let Some(dir) = traces_dir() else { return };
    verify_on(
        "DiskSim validation",
        dir.join("disksim_hpl_validation/ascii.trace"),
        "ms",
    );
}
