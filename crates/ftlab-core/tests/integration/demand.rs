//! The demand-cached schemes (DFTL, S-FTL, TPFTL, selective mapping-table loading) against
//! the shadow copy, the NAND rules and their own accounting, with GC active and DRAM
//! budgets from a few entries to the whole table.

use crate::common;

use common::*;
use ftlab_core::device::nand::Cause;
use ftlab_core::rng::Rng;
use ftlab_core::run::config::Config;
use ftlab_core::run::report::Report;
use ftlab_core::Request;
use proptest::prelude::*;

/// The demand-cached schemes, from the registry.
fn demand_schemes() -> Vec<&'static str> {
    ftlab_core::ftl::SCHEMES
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| {
            ftlab_core::ftl::scheme_info()
                .iter()
                .any(|s| s.name == *name && s.family == "demand")
        })
        .collect()
}

fn counter(report: &Report, name: &str) -> f64 {
    *report
        .metrics
        .scheme
        .get(name)
        .unwrap_or_else(|| panic!("{}: no counter {name}", report.ftl))
}

/// A nearly full device with a hot region rewritten many times, reads and trims mixed in.
fn churn(cfg: &Config, requests: usize, seed: u64) -> Vec<Request> {
    let layout = cfg.validate().unwrap();
    let page = layout.page_size;
    let lp = layout.logical_pages;
    let mut rng = Rng::new(seed);
    let mut reqs: Vec<Request> = (0..lp)
        .step_by(4)
        .map(|p| write(p, 4.min((lp - p) as u32), page))
        .collect();
    for _ in 0..requests {
        let hot = rng.below(10) < 7;
        let span = if hot { lp / 5 } else { lp };
        let len = 1 + rng.below(4) as u32;
        let start = rng.below(span - len as u64);
        reqs.push(match rng.below(10) {
            0..=5 => write(start, len, page),
            6..=8 => read(start, len, page),
            _ => trim(start, len, page),
        });
    }
    reqs
}

/// A DRAM budget of roughly `bytes` that `scheme` can run with: S-FTL caches whole
/// translation pages and needs room for one uncompressed page (548 bytes on [`device`]).
fn budget(scheme: &str, bytes: u64) -> u64 {
    match (scheme, bytes) {
        (_, 0) => 0,
        ("sftl", b) => 700 + b,
        // The budget counts whole mapping blocks (one 512-byte page on [`device`]).
        ("selective", b) => 512 + b,
        (_, b) => b,
    }
}

fn device() -> Config {
    let mut cfg = small_config((2, 1, 2, 1), 24, 16, 0.25);
    cfg.geometry.page_size = 512;
    with_key(
        &mut cfg,
        "selective",
        "mapping_block_bytes",
        toml::Value::Integer(512),
    );
    cfg
}

#[test]
fn every_budget_serves_every_read_right_with_gc() {
    for scheme in demand_schemes() {
        for bytes in [64, 256, 1024, 4096, 0] {
            let mut cfg = device();
            cfg.dram.budget_bytes = budget(scheme, bytes);
            let reqs = churn(&cfg, 6000, 1);
            let report = run(scheme, &cfg, &reqs, true)
                .unwrap_or_else(|e| panic!("{scheme} at {bytes} B: {e}"));
            let m = &report.metrics;
            assert!(m.gc.invocations > 0, "{scheme} at {bytes} B: GC never ran");
            assert!(counter(&report, "cache_lookups") > 0.0);
            // The cache never holds more than the budget: the peak total less the parts
            // that do not change (directory and GC bookkeeping).
            let fixed: u64 = ["gtd", "directory", "valid_bitmap", "block_counters"]
                .iter()
                .filter_map(|c| m.memory_bytes.final_components.get(*c))
                .sum();
            let cache = m.memory_bytes.peak_total - fixed;
            assert!(cache > 0, "{scheme}: no cache in {:?}", m.memory_bytes);
            if cfg.dram.budget_bytes != 0 {
                assert!(
                    cache <= cfg.dram.budget_bytes,
                    "{scheme}: {cache} > {}",
                    cfg.dram.budget_bytes
                );
            }
            if bytes != 0 && bytes <= 256 {
                assert!(
                    m.flash.programs[Cause::Translation] > 0,
                    "{scheme} at {bytes} B wrote no translation page"
                );
                assert!(counter(&report, "dirty_evictions") > 0.0);
            }
        }
    }
}

#[test]
fn the_whole_table_in_dram_never_writes_translation_pages() {
    for scheme in demand_schemes() {
        let cfg = device();
        let reqs = churn(&cfg, 3000, 2);
        let report = run(scheme, &cfg, &reqs, true).unwrap();
        let m = &report.metrics;
        assert!(m.gc.invocations > 0);
        assert_eq!(m.flash.programs[Cause::Translation], 0, "{scheme}");
        assert_eq!(
            m.flash.reads[Cause::Translation],
            0,
            "{scheme}: nothing was ever on flash"
        );
        assert_eq!(counter(&report, "dirty_evictions"), 0.0);
    }
}

#[test]
fn translation_blocks_are_garbage_collected() {
    for scheme in demand_schemes() {
        let mut cfg = device();
        cfg.dram.budget_bytes = budget(scheme, 128);
        let reqs = churn(&cfg, 20_000, 3);
        // No read-back at the end: its reads would count in the scheme's counters only.
        let report = run(scheme, &cfg, &reqs, false).unwrap();
        assert!(
            counter(&report, "translation_pages_moved_by_gc") > 0.0,
            "{scheme}: no translation page was relocated"
        );
        let m = &report.metrics;
        let translation_reads = counter(&report, "translation_reads_miss")
            + counter(&report, "translation_reads_writeback")
            + counter(&report, "translation_reads_gc_update");
        assert_eq!(translation_reads, m.flash.reads[Cause::Translation] as f64);
        let translation_writes = counter(&report, "translation_writes_writeback")
            + counter(&report, "translation_writes_gc_update");
        assert_eq!(
            translation_writes,
            m.flash.programs[Cause::Translation] as f64
        );
        assert_eq!(m.flash.programs[Cause::Host], m.host.pages_written);
    }
}

#[test]
fn a_bigger_cache_hits_more() {
    for scheme in demand_schemes() {
        let mut ratios = Vec::new();
        for bytes in [128, 512, 0] {
            let mut cfg = device();
            cfg.dram.budget_bytes = budget(scheme, bytes);
            let reqs = churn(&cfg, 4000, 4);
            let report = run(scheme, &cfg, &reqs, true).unwrap();
            ratios.push(counter(&report, "cache_hit_ratio"));
        }
        assert!(
            ratios[0] < ratios[1] && ratios[1] < ratios[2],
            "{scheme}: {ratios:?}"
        );
    }
}

#[test]
fn dftl_batch_write_back_saves_translation_writes() {
    let mut writes = Vec::new();
    for batch in [false, true] {
        let mut cfg = device();
        cfg.dram.budget_bytes = 512;
        cfg.schemes
            .get_mut("dftl")
            .unwrap()
            .insert("batch_writeback".into(), toml::Value::Boolean(batch));
        let reqs = churn(&cfg, 6000, 5);
        let report = run("dftl", &cfg, &reqs, true).unwrap();
        writes.push(counter(&report, "translation_writes_writeback"));
    }
    assert!(writes[1] < writes[0], "{writes:?}");
}

#[test]
fn a_budget_below_one_entry_names_the_key() {
    for scheme in demand_schemes() {
        let mut cfg = device();
        cfg.dram.budget_bytes = 3;
        let err = run(scheme, &cfg, &[], false).unwrap_err().to_string();
        assert!(err.contains("dram.budget_bytes"), "{scheme}: {err}");
    }
}

#[test]
fn a_budget_fraction_is_a_share_of_the_page_table() {
    let mut cfg = device();
    let layout = cfg.validate().unwrap();
    let table = layout.logical_pages * layout.ppa_entry_bytes();
    cfg.dram.budget_fraction = 0.75;
    let budget = (table as f64 * 0.75) as u64;
    assert_eq!(cfg.dram.budget(&layout), budget);
    // The same runs as the same budget in bytes.
    let reqs = churn(&cfg, 2000, 6);
    for scheme in demand_schemes() {
        let by_fraction = run(scheme, &cfg, &reqs, true).unwrap();
        let mut bytes = cfg.clone();
        bytes.dram.budget_fraction = 0.0;
        bytes.dram.budget_bytes = budget;
        let by_bytes = run(scheme, &bytes, &reqs, true).unwrap();
        let flash = |r: &ftlab_core::run::report::Report| format!("{:?}", r.metrics.flash);
        assert_eq!(flash(&by_fraction), flash(&by_bytes), "{scheme}");
        assert_eq!(by_fraction.device.dram_budget_bytes, budget);
    }
    // Too small for the smallest cache unit: the error names the key that was set.
    cfg.dram.budget_fraction = 1e-9;
    for scheme in demand_schemes() {
        let err = run(scheme, &cfg, &[], false).unwrap_err().to_string();
        assert!(err.contains("dram.budget_fraction"), "{scheme}: {err}");
    }
    for bad in [-0.5, 1.5] {
        cfg.dram.budget_fraction = bad;
        let err = cfg.validate().unwrap_err().to_string();
        assert!(err.contains("dram.budget_fraction"), "{err}");
    }
    cfg.dram.budget_fraction = 0.5;
    cfg.dram.budget_bytes = 4096;
    let err = cfg.validate().unwrap_err().to_string();
    assert!(err.contains("give one of them"), "{err}");
}

#[test]
fn results_are_deterministic() {
    for scheme in demand_schemes() {
        let mut cfg = device();
        cfg.dram.budget_bytes = budget(scheme, 300);
        let reqs = churn(&cfg, 2000, 6);
        let a = run(scheme, &cfg, &reqs, true).unwrap().to_json();
        let b = run(scheme, &cfg, &reqs, true).unwrap().to_json();
        assert_eq!(a, b);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random writes, reads and trims over small random geometries and budgets, GC active,
    /// every read verified and every page read back at the end.
    #[test]
    fn random_operations_verify(
        scheme in prop::sample::select(demand_schemes()),
        units in (1u32..=2, 1u32..=2),
        blocks in 16u32..28,
        ppb in prop::sample::select(&[8u32, 16]),
        bytes in prop::sample::select(&[24u64, 100, 700, 0]),
        buffer_pages in prop::sample::select(&[0u64, 3]),
        ops in prop::collection::vec((0u8..10, any::<u32>(), 1u32..4), 200..1200),
    ) {
        let mut cfg = small_config((units.0, 1, units.1, 1), blocks, ppb, 0.35);
        cfg.geometry.page_size = 512;
        // Mapping blocks of two pages, striped over two parallel units when there are two.
        with_key(&mut cfg, "selective", "mapping_block_bytes", toml::Value::Integer(1024));
        cfg.dram.budget_bytes = match (scheme, bytes) {
            ("selective", b) if b > 0 => 1024 + 2 * b,
            _ => budget(scheme, bytes),
        };
        cfg.buffer.size_bytes = buffer_pages * 512;
        let layout = cfg.validate().unwrap();
        let lp = layout.logical_pages;
        let mut reqs: Vec<Request> = (0..lp).map(|p| write(p, 1, 512)).collect();
        for (op, at, len) in ops {
            let start = at as u64 % (lp - len as u64);
            reqs.push(match op {
                0..=5 => write(start, len, 512),
                6..=8 => read(start, len, 512),
                _ => trim(start, len, 512),
            });
        }
        let result = run(scheme, &cfg, &reqs, true);
        prop_assert!(result.is_ok(), "{}: {}", scheme, result.err().unwrap());
    }
}

fn with_key(cfg: &mut Config, section: &str, key: &str, value: toml::Value) {
    cfg.schemes
        .get_mut(section)
        .unwrap()
        .insert(key.into(), value);
}

#[test]
fn tpftl_request_level_prefetch_loads_a_request_with_one_read() {
    let mut reports = Vec::new();
    for prefetch in [false, true] {
        let mut cfg = device();
        cfg.dram.budget_bytes = 2048;
        with_key(
            &mut cfg,
            "tpftl",
            "request_prefetch",
            toml::Value::Boolean(prefetch),
        );
        with_key(
            &mut cfg,
            "tpftl",
            "selective_prefetch",
            toml::Value::Boolean(false),
        );
        let layout = cfg.validate().unwrap();
        let lp = layout.logical_pages;
        let mut reqs: Vec<Request> = (0..lp / 8).map(|i| write(i * 8, 8, 512)).collect();
        reqs.extend((0..lp / 8).map(|i| read(((i * 37) % (lp / 8)) * 8, 8, 512)));
        reports.push(run("tpftl", &cfg, &reqs, false).unwrap());
    }
    let (off, on) = (&reports[0], &reports[1]);
    assert_eq!(counter(off, "prefetched_entries"), 0.0);
    assert!(counter(on, "prefetched_entries") > 0.0);
    assert!(
        counter(on, "translation_reads_miss") * 3.0 < counter(off, "translation_reads_miss"),
        "{} vs {}",
        counter(on, "translation_reads_miss"),
        counter(off, "translation_reads_miss")
    );
}

#[test]
fn tpftl_writes_fewer_translation_pages_than_dftl_at_equal_budget() {
    let mut writes = Vec::new();
    for scheme in ["dftl", "tpftl"] {
        let mut cfg = device();
        cfg.dram.budget_bytes = 600;
        let reqs = churn(&cfg, 8000, 8);
        let report = run(scheme, &cfg, &reqs, false).unwrap();
        writes.push(report.metrics.flash.programs[Cause::Translation]);
    }
    assert!(
        writes[1] < writes[0],
        "dftl {} tpftl {}",
        writes[0],
        writes[1]
    );
}

#[test]
fn sftl_compresses_sequential_pages_and_buffers_sparse_updates() {
    let mut cfg = device();
    let layout = cfg.validate().unwrap();
    let lp = layout.logical_pages;
    // A sequential fill: each translation page is a handful of runs.
    let fill: Vec<Request> = (0..lp).step_by(8).map(|p| write(p, 8, 512)).collect();
    let full = run("sftl", &cfg, &fill, true).unwrap();
    let cached = full.metrics.memory_bytes.final_components["cached_pages"];
    let entry_bytes = layout.ppa_entry_bytes();
    assert!(
        cached * 4 < lp * entry_bytes,
        "{cached} bytes for a table of {} bytes",
        lp * entry_bytes
    );
    // Sparse random updates under a small budget go through the dirty buffer.
    cfg.dram.budget_bytes = budget("sftl", 400);
    let mut reqs = fill.clone();
    let mut rng = Rng::new(9);
    for _ in 0..4000 {
        reqs.push(write(rng.below(lp), 1, 512));
        reqs.push(read(rng.below(lp), 1, 512));
    }
    let report = run("sftl", &cfg, &reqs, true).unwrap();
    assert!(counter(&report, "buffered_evictions") > 0.0);
    assert!(counter(&report, "dirty_buffer_flushes") > 0.0);
    assert!(report.metrics.gc.invocations > 0);
}

#[test]
fn sftl_runs_follow_the_allocators_plane_first_stripe() {
    // Two planes per die with multi-plane operations: the allocator writes the planes of a
    // die in turn; a sequential fill must still be one run per translation page (S-FTL's
    // stripe order once followed unit numbers, and cut every entry into its own run).
    for multi_plane in [true, false] {
        let mut cfg = small_config((2, 1, 2, 2), 24, 16, 0.25);
        cfg.geometry.page_size = 512;
        cfg.scheduler.multi_plane = multi_plane;
        let layout = cfg.validate().unwrap();
        let lp = layout.logical_pages;
        let fill: Vec<Request> = (0..lp).step_by(8).map(|p| write(p, 8, 512)).collect();
        let report = run("sftl", &cfg, &fill, true).unwrap();
        let cached = report.metrics.memory_bytes.final_components["cached_pages"];
        let entries = 512 / layout.ppa_entry_bytes();
        let pages = lp.div_ceil(entries);
        // Per translation page: E x runs + ceil(EPT / 8) + 4 bytes, at most two runs (a
        // page may straddle the end of a block row).
        let most = pages * (2 * layout.ppa_entry_bytes() + entries.div_ceil(8) + 4);
        assert!(
            cached <= most,
            "multi_plane = {multi_plane}: {cached} bytes for {pages} translation pages (at most {most})"
        );
    }
}

fn journal_run(hints: bool) -> Report {
    let mut cfg = small_config((2, 1, 2, 1), 64, 32, 0.2);
    cfg.geometry.page_size = 512;
    cfg.dram.budget_bytes = 8 * 512;
    with_key(
        &mut cfg,
        "selective",
        "mapping_block_bytes",
        toml::Value::Integer(512),
    );
    with_key(&mut cfg, "selective", "hints", toml::Value::Boolean(hints));
    // The constants of pblk-trans's calculation that favours the journal (500 per journal
    // translation, 10 per data one, 50 per read, 10 per write): hints must then keep it.
    for (key, value) in [
        ("hinted_increment", 500),
        ("data_increment", 10),
        ("read_increment", 50),
        ("write_increment", 10),
    ] {
        with_key(&mut cfg, "selective", key, toml::Value::Integer(value));
    }
    let journal = toml::Value::Array(vec![
        toml::Value::Integer(0),
        toml::Value::Integer(512 << 10),
    ]);
    with_key(
        &mut cfg,
        "selective",
        "hot_ranges",
        toml::Value::Array(vec![journal]),
    );
    cfg.workload.kind = ftlab_core::io::workload::Kind::Pareto;
    cfg.workload.requests = 20_000;
    cfg.workload.request_sizes_bytes = vec![512];
    cfg.workload.journal_bytes = 512 << 10;
    cfg.workload.journal_metadata_bytes = 1024;
    cfg.workload.start_offset_bytes = 512 << 10;
    let layout = cfg.validate().unwrap();
    let reqs: Vec<Request> =
        ftlab_core::io::workload::generate(&cfg.workload, layout.logical_bytes(), layout.page_size)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
    run("selective", &cfg, &reqs, true).unwrap()
}

#[test]
fn selective_hints_keep_the_journal_resident() {
    let (without, with) = (journal_run(false), journal_run(true));
    // A 512 KiB journal is four mapping blocks of 256 entries; eight blocks are cached.
    for report in [&with, &without] {
        assert_eq!(counter(report, "hot_range_mapping_blocks"), 4.0);
        assert!(counter(report, "hotness_decays") > 0.0);
    }
    let (a, b) = (
        counter(&without, "hot_range_misses"),
        counter(&with, "hot_range_misses"),
    );
    assert!(b < a, "journal misses: {a} without hints, {b} with");
    assert!(with.metrics.gc.invocations > 0);
}

#[test]
fn selective_mapping_blocks_span_pages_read_in_parallel() {
    // Mapping blocks of four 512-byte pages on a device of four parallel units (four
    // dies), one block cached.
    let mut cfg = device();
    cfg.dram.budget_bytes = 2048;
    with_key(
        &mut cfg,
        "selective",
        "mapping_block_bytes",
        toml::Value::Integer(2048),
    );
    let layout = cfg.validate().unwrap();
    let lp = layout.logical_pages;
    let mut reqs: Vec<Request> = (0..lp).map(|p| write(p, 1, 512)).collect();
    // Reads alternating between the two mapping blocks, each on an idle device: every one
    // misses, and all but the first evict a clean block.
    for i in 1..=20u64 {
        let mut r = read(if i % 2 == 1 { 0 } else { lp - 1 }, 1, 512);
        r.time_ns = i * 1_000_000_000;
        reqs.push(r);
    }
    let report = run("selective", &cfg, &reqs, false).unwrap();
    let reads = counter(&report, "translation_reads_miss");
    assert_eq!(reads % 4.0, 0.0, "whole blocks are read");
    assert_eq!(counter(&report, "translation_writes_writeback") % 4.0, 0.0);
    // A clean miss costs the four translation reads side by side, then the data read:
    // about two page reads, where reading the pages one after another would take five.
    let tr = cfg.nand.read_latency_ns;
    let fastest = report.metrics.latency.as_ref().unwrap().read.cdf[0].1;
    assert!(
        fastest > 2 * tr && fastest < 2 * tr + tr / 2,
        "{fastest} ns"
    );
}

#[test]
fn selective_hot_range_beyond_the_device_names_the_key() {
    let mut cfg = device();
    let range = toml::Value::Array(vec![toml::Value::Integer(0), toml::Value::Integer(1 << 40)]);
    with_key(
        &mut cfg,
        "selective",
        "hot_ranges",
        toml::Value::Array(vec![range]),
    );
    let err = run("selective", &cfg, &[], false).unwrap_err().to_string();
    assert!(err.contains("selective.hot_ranges"), "{err}");
}

#[test]
fn selective_background_write_back_shortens_the_evicting_request() {
    let mut means = Vec::new();
    for background in [false, true] {
        let mut cfg = device();
        cfg.dram.budget_bytes = 512;
        with_key(
            &mut cfg,
            "selective",
            "background_writeback",
            toml::Value::Boolean(background),
        );
        let layout = cfg.validate().unwrap();
        let lp = layout.logical_pages;
        // Writes on an idle device, alternating between far-apart pages: every one evicts a
        // dirty block.
        let reqs: Vec<Request> = (0..400u64)
            .map(|i| Request {
                time_ns: i * 100_000_000,
                ..write(if i % 2 == 0 { i % 64 } else { lp - 1 - i % 64 }, 1, 512)
            })
            .collect();
        let report = run("selective", &cfg, &reqs, false).unwrap();
        assert!(counter(&report, "dirty_evictions") > 300.0);
        means.push(report.metrics.latency.as_ref().unwrap().write.mean_ns);
    }
    // In the foreground the evicting write waits for the write-back's program too.
    let program = 500_000.0;
    assert!(means[0] - means[1] > 0.8 * program, "{means:?}");
}

#[test]
fn selective_mapping_block_as_one_command_does_one_pages_work() {
    // Mapping blocks of four 512-byte pages on four parallel units (four dies), one block
    // cached: the pages of both ends of the device written once, then writes alternating
    // between the two ends, closed loop: each misses, loads a block (four translation
    // reads) and evicts a dirty one (four translation programs).
    let mut reports = Vec::new();
    for io in ["pages", "command"] {
        let mut cfg = device();
        cfg.dram.budget_bytes = 2048;
        cfg.replay.mode = ftlab_core::run::config::ReplayMode::Closed;
        cfg.replay.queue_depth = 8;
        with_key(
            &mut cfg,
            "selective",
            "mapping_block_bytes",
            toml::Value::Integer(2048),
        );
        with_key(
            &mut cfg,
            "selective",
            "mapping_block_io",
            toml::Value::String(io.into()),
        );
        let layout = cfg.validate().unwrap();
        let lp = layout.logical_pages;
        let mut reqs: Vec<Request> = (0..64)
            .chain(lp - 64..lp)
            .map(|p| write(p, 1, 512))
            .collect();
        reqs.extend(
            (0..400u64).map(|i| write(if i % 2 == 0 { i % 64 } else { lp - 1 - i % 64 }, 1, 512)),
        );
        reports.push(run("selective", &cfg, &reqs, true).unwrap());
    }
    let (pages, command) = (&reports[0], &reports[1]);
    // The same pages are read and programmed, block by block, and verified.
    for name in [
        "translation_reads_miss",
        "translation_writes_writeback",
        "dirty_evictions",
    ] {
        assert_eq!(counter(pages, name), counter(command, name), "{name}");
    }
    assert!(counter(command, "dirty_evictions") > 300.0);
    assert_eq!(
        pages.metrics.flash.programs.total,
        command.metrics.flash.programs.total
    );
    // The dies' work: per miss, the pages take four reads and four programs where the
    // command takes one of each, beside the data program (2.7 ms against 1.05 ms).
    let work = |r: &Report| {
        let m = &r.metrics;
        m.load.as_ref().unwrap().mean_die_utilisation * m.simulated_time_ns.unwrap() as f64
    };
    let (a, b) = (work(pages), work(command));
    assert!(2.0 * b < a, "{b} ns of work as commands, {a} ns as pages");
}

#[test]
fn mapping_only_takes_the_same_decisions_as_timed() {
    for scheme in demand_schemes() {
        let mut reports = Vec::new();
        for timing in [true, false] {
            let mut cfg = device();
            cfg.dram.budget_bytes = budget(scheme, 300);
            cfg.replay.timing = timing;
            // Background GC waits for idle die time, which mapping-only runs do not have;
            // with GC in the foreground both runs take the same decisions.
            cfg.gc.mode = ftlab_core::run::config::GcMode::Foreground;
            let reqs = churn(&cfg, 3000, 12);
            reports.push(run(scheme, &cfg, &reqs, false).unwrap());
        }
        let (timed, mapping) = (&reports[0].metrics, &reports[1].metrics);
        assert_eq!(
            timed.flash.programs.total, mapping.flash.programs.total,
            "{scheme}"
        );
        assert_eq!(
            timed.flash.reads.total, mapping.flash.reads.total,
            "{scheme}"
        );
        assert_eq!(timed.gc.pages_moved, mapping.gc.pages_moved, "{scheme}");
        for (name, value) in &mapping.scheme {
            assert_eq!(timed.scheme[name], *value, "{scheme}: {name}");
        }
        assert!(timed.scheme.contains_key("miss_delay_ns_total"));
        assert!(!mapping.scheme.contains_key("miss_delay_ns_total"));
    }
}

#[test]
fn tpftl_selective_prefetch_turns_on_for_sequential_misses() {
    // 18 translation pages of 256 entries, a cache of about 90 entries.
    let mut cfg = small_config((2, 1, 2, 1), 96, 16, 0.25);
    cfg.geometry.page_size = 512;
    cfg.dram.budget_bytes = 300;
    with_key(
        &mut cfg,
        "tpftl",
        "request_prefetch",
        toml::Value::Boolean(false),
    );
    let layout = cfg.validate().unwrap();
    let lp = layout.logical_pages;
    // Every page written once (so translation pages exist), then scattered single-page
    // reads that spread the cache over many nodes, then a sequential scan of single pages.
    let mut reqs: Vec<Request> = (0..lp).map(|p| write(p, 1, 512)).collect();
    reqs.extend((0..200).map(|i| read((i * 389) % lp, 1, 512)));
    reqs.extend((0..2000).map(|p| read(p, 1, 512)));
    let on = run("tpftl", &cfg, &reqs, false).unwrap();
    assert!(counter(&on, "prefetched_entries") > 100.0);
    with_key(
        &mut cfg,
        "tpftl",
        "selective_prefetch",
        toml::Value::Boolean(false),
    );
    let off = run("tpftl", &cfg, &reqs, false).unwrap();
    assert_eq!(counter(&off, "prefetched_entries"), 0.0);
    assert!(counter(&on, "translation_reads_miss") < counter(&off, "translation_reads_miss"));
}

#[test]
fn a_value_of_the_wrong_type_names_its_key() {
    for (scheme, key, value) in [
        (
            "dftl",
            "protected_fraction",
            toml::Value::String("x".into()),
        ),
        ("dftl", "replacement", toml::Value::String("fifo".into())),
        ("tpftl", "request_prefetch", toml::Value::Integer(3)),
        ("sftl", "bits_per_entry", toml::Value::Boolean(true)),
        ("selective", "hot_ranges", toml::Value::Integer(3)),
    ] {
        let mut cfg = device();
        with_key(&mut cfg, scheme, key, value);
        let err = run(scheme, &cfg, &[], false).unwrap_err().to_string();
        assert!(err.contains(&format!("{scheme}.{key}")), "{err}");
    }
}
