//! LeaFTL: verification with garbage collection on nearly full devices, every γ, the
//! sorted flush, trims, and the accounting of mispredictions.

use crate::common;

use common::*;
use ftlab_core::device::nand::Cause;
use ftlab_core::rng::Rng;
use ftlab_core::run::config::{Config, FlushOrder};
use ftlab_core::{Request, Result};
use proptest::prelude::*;

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

fn counter(report: &ftlab_core::run::report::Report, name: &str) -> f64 {
    report.metrics.scheme[name]
}

/// Groups cached under tiny budgets: evictions, lazy merges and reloads on every request,
/// with GC (translation writes trigger it too) and trims.
#[test]
fn verifies_with_a_mapping_cache_for_every_gamma() -> Result<()> {
    for gamma in [0, 4, 16] {
        let mut cfg = leaftl_config(gamma, 64);
        cfg.ftl.over_provisioning = 0.2;
        let reqs = mixed(&cfg, 20_000, 11 + gamma as u64, true);
        let whole = run("leaftl", &cfg, &reqs, true)?;
        let table = whole.metrics.memory_bytes.peak_total;
        for budget in [2308u64, table / 8, table / 3] {
            cfg.dram.budget_bytes = budget.max(2308);
            let report = run("leaftl", &cfg, &reqs, true)?;
            let m = &report.metrics;
            assert!(m.gc.invocations > 0);
            assert!(counter(&report, "dirty_evictions") > 0.0);
            assert!(counter(&report, "group_loads") > 0.0);
            assert!(
                m.flash.reads[Cause::Translation] > 0 && m.flash.programs[Cause::Translation] > 0
            );
            // The resident table never exceeds the budget between requests.
            assert!(
                counter(&report, "mapping_table_bytes") <= cfg.dram.budget_bytes as f64,
                "budget {budget}"
            );
            eprintln!(
                "gamma {gamma} budget {budget}: loads {} merges {} partial {} dirty ev {} clean ev {} tr reads {} tr progs {}",
                counter(&report, "group_loads"),
                counter(&report, "group_merges"),
                counter(&report, "partial_groups"),
                counter(&report, "dirty_evictions"),
                counter(&report, "clean_evictions"),
                m.flash.reads[Cause::Translation],
                m.flash.programs[Cause::Translation],
            );
        }
    }
    Ok(())
}

#[test]
fn verifies_with_gc_for_every_gamma() -> Result<()> {
    for gamma in [0, 1, 4, 16] {
        for buffer in [0, 64, 256] {
            let mut cfg = leaftl_config(gamma, buffer);
            if buffer == 64 && (gamma == 0 || gamma == 4) {
                if let Some(section) = cfg.schemes.get_mut("leaftl") {
                    section.insert("placement".into(), toml::Value::String("stripe".into()));
                    // Chunks of 8 pages per unit: approximate segments within them.
                    let chunk = if gamma == 0 { 1 } else { 8 };
                    section.insert("stripe_pages".into(), toml::Value::Integer(chunk));
                }
            }
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Random writes, reads and trims over small random geometries, error bounds, OOB sizes,
    /// buffers and budgets, GC active, every read verified and every page read back at the
    /// end; the tables keep their invariants.
    #[test]
    fn random_operations_verify(
        units in (1u32..=2, 1u32..=2),
        blocks in 16u32..28,
        ppb in prop::sample::select(&[8u32, 16, 64]),
        gamma in prop::sample::select(&[0u32, 1, 3, 16]),
        oob in prop::sample::select(&[8u64, 16, 40, 128]),
        budget in prop::sample::select(&[0u64, 2308, 6000]),
        buffer_pages in prop::sample::select(&[0u64, 3, 40]),
        stripe in prop::sample::select(&[0u32, 1, 4, 5]),
        striped_placement in any::<bool>(),
        ops in prop::collection::vec((0u8..10, any::<u32>(), 1u32..6), 200..1500),
    ) {
        let mut cfg = leaftl_config(gamma, buffer_pages);
        let g = &mut cfg.geometry;
        (g.channels, g.chips_per_channel, g.dies_per_chip, g.planes_per_die) = (units.0, 1, units.1, 1);
        g.blocks_per_plane = blocks;
        g.pages_per_block = ppb;
        g.oob_size = oob;
        cfg.ftl.over_provisioning = 0.3;
        cfg.dram.budget_bytes = budget;
        if let Some(section) = cfg.schemes.get_mut("leaftl") {
            // Stripe placement takes chunks that divide a block.
            let chunk = stripe.min(ppb);
            let chunk = if striped_placement && chunk > 1 && ppb % chunk != 0 { 4 } else { chunk };
            section.insert("stripe_pages".into(), toml::Value::Integer(chunk as i64));
            let placement = if striped_placement { "stripe" } else { "block" };
            section.insert("placement".into(), toml::Value::String(placement.into()));
        }
        let layout = cfg.validate().unwrap();
        let lp = layout.logical_pages;
        let page = layout.page_size;
        let mut reqs: Vec<Request> = (0..lp).map(|p| write(p, 1, page)).collect();
        for (op, at, len) in ops {
            let start = at as u64 % (lp - len as u64);
            reqs.push(match op {
                0..=5 => write(start, len, page),
                6..=8 => read(start, len, page),
                _ => trim(start, len, page),
            });
        }
        let report = run("leaftl", &cfg, &reqs, true);
        prop_assert!(report.is_ok(), "{:?}", report.err());
    }
}

/// One DRAM split between a read-caching data cache and the mapping cache, as LeaFTL's
/// evaluation compares schemes: every scheme still serves exactly what was written.
#[test]
fn data_cache_with_cached_reads_verifies() -> Result<()> {
    for scheme in ["page", "leaftl", "dftl", "sftl"] {
        let mut cfg = leaftl_config(4, 96);
        cfg.ftl.over_provisioning = 0.2;
        cfg.buffer.cache_reads = true;
        cfg.buffer.flush_bytes = 32 * 4096;
        cfg.dram.budget_bytes = if scheme == "page" { 0 } else { 8 * 1024 };
        let reqs = mixed(&cfg, 20_000, 5, true);
        let report = run(scheme, &cfg, &reqs, true)?;
        let host = &report.metrics.host;
        assert!(host.buffer_read_hits > 0, "{scheme}: no read hit");
    }
    Ok(())
}

/// Stripe placement in chunks: a sorted flush goes a chunk to each unit in turn (every die
/// takes part), a sequential write is still learned as one segment per group, and with
/// γ > 0 pages written with gaps make approximate segments that predict within their chunk.
#[test]
fn stripe_chunks_keep_long_segments_and_learn_approximate_ones() -> Result<()> {
    let with = |placement: &str, chunk: i64, gamma: i64| {
        // 8 units x 24 blocks x 256 pages; a 512-page sorted flush.
        let mut cfg = small_config((4, 1, 2, 1), 24, 256, 0.3);
        cfg.buffer.size_bytes = 512 * 4096;
        cfg.buffer.flush = FlushOrder::Sorted;
        let mut section = toml::Table::new();
        section.insert("gamma".into(), toml::Value::Integer(gamma));
        section.insert("placement".into(), toml::Value::String(placement.into()));
        section.insert("stripe_pages".into(), toml::Value::Integer(chunk));
        cfg.schemes.insert("leaftl".into(), section);
        cfg
    };
    let cfg = with("stripe", 8, 0);
    let layout = cfg.validate()?;
    let groups = layout.logical_pages / 256;
    // Sequential: the whole logical space once.
    let fill: Vec<Request> = (0..groups * 256)
        .step_by(16)
        .map(|p| write(p, 16, 4096))
        .collect();
    let stripe = run("leaftl", &cfg, &fill, true)?;
    assert_eq!(counter(&stripe, "segments"), groups as f64);
    let block = run("leaftl", &with("block", 8, 0), &fill, true)?;
    assert!(counter(&block, "segments") >= 8.0 * groups as f64);
    // Every unit takes a share of each flush, so a multi-page read of sequentially written
    // data spans several dies: 16-page reads, one at a time, take about half as long with
    // 8-page chunks as with a whole block per unit (one die each).
    let mut reads = fill.clone();
    reads.extend((0..groups * 256).step_by(16).map(|p| read(p, 16, 4096)));
    let closed = |mut cfg: Config| {
        cfg.replay.mode = ftlab_core::run::config::ReplayMode::Closed;
        cfg.replay.queue_depth = 1;
        cfg
    };
    let read_mean = |cfg: Config| -> Result<f64> {
        let report = run("leaftl", &closed(cfg), &reads, true)?;
        Ok(report.metrics.latency.as_ref().unwrap().read.mean_ns)
    };
    let (striped, whole) = (
        read_mean(with("stripe", 8, 0))?,
        read_mean(with("block", 0, 0))?,
    );
    assert!(striped * 1.8 < whole, "{striped} ns against {whole} ns");
    // Randomly spaced pages (about half of them), then read back: no line through them is
    // exact, so γ = 4 learns approximate segments, verified.
    let irregular = || (0..groups * 256).filter(|p| (p.wrapping_mul(2_654_435_761) >> 13) & 1 == 0);
    let mut reqs: Vec<Request> = irregular().map(|p| write(p, 1, 4096)).collect();
    reqs.extend(irregular().map(|p| read(p, 1, 4096)));
    let sparse = run("leaftl", &with("stripe", 16, 4), &reqs, true)?;
    assert!(
        counter(&sparse, "segments_approximate_consecutive")
            + counter(&sparse, "segments_approximate_irregular")
            > 0.0
    );
    assert!(counter(&sparse, "approximate_lookups") > 0.0);
    Ok(())
}
