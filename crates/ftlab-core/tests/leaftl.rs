//! LeaFTL: verification with garbage collection on nearly full devices, every γ, the
//! sorted flush, trims, and the accounting of mispredictions.

mod common;

use common::*;
use ftlab_core::config::{Config, FlushOrder};
use ftlab_core::rng::Rng;
use ftlab_core::{Request, Result};

fn leaftl_config(gamma: u32, buffer_pages: u64) -> Config {
    // 2 units x 32 blocks x 64 pages, 15% spare: GC runs constantly once the device is full.
    let mut cfg = small_config((1, 1, 2, 1), 32, 64, 0.15);
    cfg.buffer.size_bytes = buffer_pages * 4096;
    cfg.buffer.flush = FlushOrder::Sorted;
    let mut section = toml::Table::new();
    section.insert("gamma".into(), toml::Value::Integer(gamma as i64));
    cfg.schemes.insert("leaftl".into(), section);
    cfg
}

/// Random writes (with sequential runs), reads and trims over the whole logical space.
fn mixed(cfg: &Config, n: usize, seed: u64, trims: bool) -> Vec<Request> {
    let layout = cfg.validate().unwrap();
    let pages = layout.logical_pages;
    let page = layout.page_size;
    let mut rng = Rng::new(seed);
    let mut reqs = Vec::new();
    // Fill the device first so that GC runs.
    for p in (0..pages).step_by(8) {
        reqs.push(write(p, 8.min((pages - p) as u32), page));
    }
    let mut seq = 0u64;
    for _ in 0..n {
        let r = rng.next_u64() % 100;
        let len = 1 + (rng.next_u64() % 8) as u32;
        let start = if r < 30 {
            seq = (seq + len as u64) % (pages - 8);
            seq
        } else {
            rng.next_u64() % (pages - 8)
        };
        if r < 60 {
            reqs.push(write(start, len, page));
        } else if r < 95 || !trims {
            reqs.push(read(start, len, page));
        } else {
            reqs.push(trim(start, len, page));
        }
    }
    reqs
}

fn counter(report: &ftlab_core::metrics::Report, name: &str) -> f64 {
    report.metrics.scheme[name]
}

#[test]
fn verifies_with_gc_for_every_gamma() -> Result<()> {
    for gamma in [0, 1, 4, 16] {
        for buffer in [0, 64, 256] {
            let mut cfg = leaftl_config(gamma, buffer);
            if buffer == 256 {
                cfg.buffer.flush_bytes = 128 * 4096;
                cfg.buffer.flush_group_pages = 256;
            }
            let reqs = mixed(&cfg, 20_000, 7 + gamma as u64, true);
            let report = run("leaftl", &cfg, &reqs, true)?;
            assert!(
                report.metrics.gc.invocations > 0,
                "gamma {gamma}: GC never ran"
            );
            let m = &report.metrics;
            eprintln!(
                "gamma {gamma} buffer {buffer}: gc {} waf {:.2} segs {} approx {} mispred {} inval reads {} levels1 {}",
                m.gc.invocations,
                m.waf.unwrap_or(0.0),
                counter(&report, "segments"),
                counter(&report, "approximate_lookups"),
                counter(&report, "mispredictions"),
                counter(&report, "invalidation_reads"),
                counter(&report, "lookup_level.01"),
            );
        }
    }
    Ok(())
}
