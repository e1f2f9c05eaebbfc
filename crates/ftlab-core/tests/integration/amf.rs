//! Application-Managed Flash end to end: the `alfs` host stack over the append-only `aftl`
//! device, and the conventional stacks it is measured against (`f2fs` over page-mapped
//! FTLs, `inplace`), through the public run API, every application read verified.

use crate::common;
use ftlab_core::device::breakdown::Part;
use ftlab_core::device::nand::Cause;
use ftlab_core::host::lfs::FsLayout;
use ftlab_core::host::StackKind;
use ftlab_core::run::api::{self, RunOptions};
use ftlab_core::run::config::PreconditionMode;
use ftlab_core::run::report::Report;
use ftlab_core::Error;

const F2FS: &str = "host.stack=\"f2fs\"";
/// F2FS's 2 MiB sections would leave the small device's application a few hundred pages.
const SECTION: &str = "lfs.section_pages=128";

/// Random 4-16 KiB writes over the whole application space (a fifth hot), 30% reads, 5%
/// trims; 1 ms apart.
fn churn(requests: u64) -> Vec<String> {
    [
        "workload.kind=\"hotcold\"".to_string(),
        format!("workload.requests={requests}"),
        "workload.read_ratio=0.3".into(),
        "workload.trim_ratio=0.05".into(),
        "workload.request_sizes_bytes=[4096, 8192, 16384]".into(),
        "workload.request_size_weights=[2, 1, 1]".into(),
    ]
    .into()
}

fn options(ftl: &str, extra: &[String]) -> RunOptions {
    let mut sets = vec!["metrics.sample_every_requests=997".to_string()];
    sets.extend(extra.iter().cloned());
    common::small_fresh_options(ftl, &sets)
}

fn run(ftl: &str, extra: &[String]) -> ftlab_core::Result<Report> {
    api::run(&options(ftl, extra), &mut |_| true).map(|o| o.report)
}

fn counter(r: &Report, name: &str) -> f64 {
    *r.metrics
        .host_stack
        .counters
        .get(name)
        .unwrap_or_else(|| panic!("no counter {name}"))
}

fn with(mut base: Vec<String>, more: &[&str]) -> Vec<String> {
    base.extend(more.iter().map(|s| s.to_string()));
    base
}

#[test]
fn alfs_on_aftl_cleans_trims_and_every_read_is_verified_end_to_end() {
    let r = run("aftl", &churn(20_000)).unwrap();
    let m = &r.metrics;
    assert_eq!(m.host_stack.name, "alfs", "auto picks alfs for aftl");
    let app = m.host_stack.app_pages as f64;
    // The workload wrote the application's space several times over.
    assert!(counter(&r, "app_pages_written") > 3.0 * app);
    assert!(counter(&r, "sections_cleaned") > 10.0);
    assert!(counter(&r, "sections_trimmed") >= counter(&r, "sections_cleaned"));
    assert!(counter(&r, "app_pages_read") > 1000.0);
    // No device GC, nothing copied by the device: every program is a page the host wrote.
    assert_eq!(m.gc.invocations, 0);
    assert_eq!(m.waf, Some(1.0));
    assert_eq!(m.scheme["refused_writes"], 0.0);
    assert!(m.flash.erases[Cause::HostCleaning] > 0);
    // The host's cleaning is the file system's write amplification.
    assert_eq!(
        m.flash.programs[Cause::HostCleaning] as f64,
        counter(&r, "cleaning_pages_moved")
    );
    assert!(m.fs_waf.unwrap() > 1.2, "{:?}", m.fs_waf);
    let total = m.total_waf.unwrap();
    assert!((total - m.fs_waf.unwrap() * m.waf.unwrap()).abs() < 1e-9);
    // Host memory apart from the device's.
    let host = &m.host_stack.memory_bytes;
    assert!(host["timb"] > 0 && host["metalog_summary"] > 0 && host["block_map"] > 0);
    assert!(m.memory_bytes.final_components.contains_key("block_map"));
    assert!(!m.memory_bytes.final_components.contains_key("timb"));
}

#[test]
fn alfs_metadata_log_and_mapping_area_cycle_and_stay_verified() {
    // A checkpoint every 16 pages: the metadata log and the TIMB's mapping area wrap and
    // clean their oldest sections many times.
    let extra = with(
        churn(12_000),
        &["lfs.checkpoint_every_pages=16", "lfs.fsync_every_pages=4"],
    );
    let r = run("aftl", &extra).unwrap();
    assert!(counter(&r, "checkpoints") > 400.0);
    assert!(counter(&r, "metalog_sections_trimmed") > 2.0);
    assert!(counter(&r, "metalog_pages_moved") > 0.0);
    assert!(counter(&r, "mapping_sections_trimmed") > 0.0);
    assert!(counter(&r, "timb_pages_written") >= counter(&r, "checkpoints"));
    let m = &r.metrics;
    assert!(m.flash.programs[Cause::FsMetadata] > 0);
    assert!(m.flash.reads[Cause::FsMetadata] > 0);
    assert_eq!(m.gc.invocations, 0);
    assert_eq!(m.scheme["refused_writes"], 0.0);
}

#[test]
fn f2fs_over_page_mapped_ftls_duplicates_the_log_structure() {
    for ftl in ["page", "dftl"] {
        let extra = with(churn(20_000), &[F2FS, SECTION, "dram.budget_fraction=0.25"]);
        let r = run(ftl, &extra).unwrap_or_else(|e| panic!("{ftl}: {e}"));
        let m = &r.metrics;
        assert_eq!(m.host_stack.name, "f2fs");
        assert!(counter(&r, "sections_cleaned") > 10.0, "{ftl}");
        // The file system cleans, and the device collects garbage below it again.
        assert!(m.gc.invocations > 0, "{ftl}");
        assert!(m.waf.unwrap() > 1.0 && m.fs_waf.unwrap() > 1.0, "{ftl}");
        assert!(m.flash.programs[Cause::FsMetadata] > 0, "{ftl}");
        assert_eq!(counter(&r, "sections_trimmed"), 0.0, "{ftl}: no discard");
    }
}

#[test]
fn f2fs_with_discard_trims_what_it_cleans_and_spares_the_device() {
    let extra = with(churn(20_000), &[F2FS, SECTION]);
    let plain = run("page", &extra).unwrap();
    let discard = run("page", &with(extra, &["lfs.discard=true"])).unwrap();
    assert!(counter(&discard, "sections_trimmed") > 0.0);
    assert!(
        discard.metrics.waf.unwrap() < plain.metrics.waf.unwrap(),
        "device WAF with discard {:?} vs without {:?}",
        discard.metrics.waf,
        plain.metrics.waf
    );
}

/// `lfs.checkpoint_discard`: at each checkpoint F2FS trims the blocks invalidated since
/// the last one (not only whole free sections), every read still verified end to end: the
/// device copies fewer stale pages than with whole-section discard or none.
#[test]
fn f2fs_checkpoint_discard_trims_invalidated_blocks_at_each_checkpoint() {
    let extra = with(
        churn(20_000),
        &[F2FS, SECTION, "lfs.checkpoint_every_pages=500"],
    );
    let plain = run("page", &extra).unwrap();
    let section = run("page", &with(extra.clone(), &["lfs.discard=true"])).unwrap();
    let blocks = run("page", &with(extra, &["lfs.checkpoint_discard=true"])).unwrap();
    assert_eq!(counter(&plain, "blocks_discarded"), 0.0);
    let checkpoints = counter(&blocks, "checkpoints");
    assert!(checkpoints > 10.0, "{checkpoints}");
    // Most of what the application overwrote (every block it invalidated) was trimmed.
    let written = counter(&blocks, "app_pages_written");
    let discarded = counter(&blocks, "blocks_discarded");
    assert!(discarded > 0.5 * written, "{discarded} of {written}");
    assert!(blocks.metrics.host.pages_trimmed > plain.metrics.host.pages_trimmed);
    let (p, s, b) = (
        plain.metrics.waf.unwrap(),
        section.metrics.waf.unwrap(),
        blocks.metrics.waf.unwrap(),
    );
    assert!(
        b < s && s <= p,
        "device WAF: per block {b}, per section {s}, none {p}"
    );
}

#[test]
fn alfs_also_runs_on_page_mapped_ftls() {
    for ftl in ["page", "dftl"] {
        let extra = with(churn(8_000), &["host.stack=\"alfs\""]);
        let r = run(ftl, &extra).unwrap_or_else(|e| panic!("{ftl}: {e}"));
        assert!(counter(&r, "sections_cleaned") > 0.0, "{ftl}");
    }
}

#[test]
fn an_append_only_device_refuses_in_place_stacks_with_a_clear_message() {
    for stack in ["f2fs", "inplace"] {
        let extra = with(
            churn(20_000),
            &[&format!("host.stack=\"{stack}\""), SECTION],
        );
        match run("aftl", &extra) {
            Err(Error::Refused { message }) => {
                assert!(message.contains("aftl"), "{stack}: {message}");
                assert!(message.contains("append-only"), "{stack}: {message}");
            }
            Err(e) => panic!("{stack}: expected a refusal, got {e}"),
            Ok(_) => panic!("{stack}: expected a refusal"),
        }
    }
}

#[test]
fn the_conventional_ftls_default_to_the_trace_as_it_is() {
    let r = run("page", &churn(2_000)).unwrap();
    assert_eq!(r.metrics.host_stack.name, "inplace");
    assert_eq!(r.metrics.fs_waf, Some(1.0));
    assert_eq!(r.config.host.stack, StackKind::Inplace);
}

#[test]
fn preconditioning_goes_through_the_file_system_to_steady_state() {
    let extra = with(
        churn(3_000),
        &["precondition.mode=\"steady\"", "workload.trim_ratio=0"],
    );
    let r = run("aftl", &extra).unwrap();
    let p = r.precondition.as_ref().unwrap();
    assert_eq!(p.mode, PreconditionMode::Steady);
    assert!(p.steady, "window WAF {:?}", p.window_waf);
    // The whole stack's WAF (cleaning included) settled above 1 with no device GC.
    assert!(p.waf.unwrap() > 1.2, "{:?}", p.waf);
    assert_eq!(p.gc_invocations, 0);
    // The run starts on a full, aged file system: reads are mapped, cleaning goes on.
    assert_eq!(counter(&r, "app_unmapped_reads"), 0.0);
    assert!(counter(&r, "sections_cleaned") > 0.0);
    assert_eq!(counter(&r, "app_requests"), 3000.0);
}

#[test]
fn idle_time_is_spent_cleaning() {
    // 100 ms between requests: every gap is idle time.
    let idle = with(
        churn(6_000),
        &[
            "workload.interarrival_ns=\"100ms\"",
            "lfs.idle_free_fraction=0.3",
        ],
    );
    let r = run("aftl", &idle).unwrap();
    assert!(counter(&r, "sections_cleaned_idle") > 0.0);
    let never = run("aftl", &with(idle.clone(), &["lfs.idle_ns=0"])).unwrap();
    assert_eq!(counter(&never, "sections_cleaned_idle"), 0.0);
    // Mapping-only runs take the same decisions (idle time is the application's).
    let mapping = run("aftl", &with(idle, &["replay.timing=false"])).unwrap();
    assert_eq!(
        counter(&mapping, "sections_cleaned_idle"),
        counter(&r, "sections_cleaned_idle")
    );
    assert_eq!(
        mapping.metrics.flash.programs.total,
        r.metrics.flash.programs.total
    );
    assert_eq!(
        mapping.metrics.flash.erases.total,
        r.metrics.flash.erases.total
    );
}

#[test]
fn a_full_file_system_does_not_clean_ahead_of_need() {
    // Every application page written (a fill), then overwrites with idle gaps and no
    // trims: nearly all of the space holds valid blocks, so idle cleaning (F2FS's
    // background GC) has nothing worth freeing. Before, it moved nearly full sections about
    // in every gap, up to a file-system WAF in the hundreds.
    let full = with(
        churn(3_000),
        &[
            "workload.interarrival_ns=\"100ms\"",
            "workload.trim_ratio=0",
            "lfs.idle_free_fraction=0.3",
            "precondition.mode=\"fill\"",
        ],
    );
    let r = run("aftl", &full).unwrap();
    assert_eq!(counter(&r, "sections_cleaned_idle"), 0.0);
    // The overwrites still need cleaning, in the foreground.
    assert!(counter(&r, "sections_cleaned") > 0.0);
    // The same overwrites of a third of a fresh file system do clean in the gaps.
    let sparse = with(
        churn(6_000),
        &[
            "workload.interarrival_ns=\"100ms\"",
            "workload.trim_ratio=0",
            "lfs.idle_free_fraction=0.3",
            "workload.working_set_fraction=0.3",
        ],
    );
    let r = run("aftl", &sparse).unwrap();
    assert!(counter(&r, "sections_cleaned_idle") > 0.0);
}

#[test]
fn cost_benefit_cleaning_and_the_segment_map_are_verified_too() {
    let extra = with(
        churn(10_000),
        &["lfs.victim=\"cost-benefit\"", "aftl.map=\"segment\""],
    );
    let r = run("aftl", &extra).unwrap();
    assert!(counter(&r, "sections_cleaned") > 0.0);
    assert!(r
        .metrics
        .memory_bytes
        .final_components
        .contains_key("segment_map"));
}

#[test]
fn a_write_buffer_in_the_device_keeps_the_appends_in_order() {
    let extra = with(churn(10_000), &["buffer.size_bytes=\"256KiB\""]);
    let r = run("aftl", &extra).unwrap();
    assert!(counter(&r, "sections_cleaned") > 0.0);
    assert_eq!(r.metrics.scheme["refused_writes"], 0.0);
}

#[test]
fn runs_are_deterministic() {
    let a = run("aftl", &churn(4_000)).unwrap().to_json();
    let b = run("aftl", &churn(4_000)).unwrap().to_json();
    assert_eq!(a, b);
}

#[test]
fn the_file_system_keeps_its_metadata_and_reserve_from_the_application() {
    let mut cfg = api::resolve_config(&options("aftl", &[])).unwrap();
    let layout = cfg.validate().unwrap();
    let alfs = FsLayout::new(&cfg.stack(), &layout, StackKind::Alfs).unwrap();
    // Sections are the device's segments: a block of every unit.
    assert_eq!(alfs.section_pages, 8 * 16);
    assert_eq!(alfs.main_start % 128, 0);
    assert_eq!(
        alfs.metalog_sections as u64,
        2 * alfs.meta_blocks.div_ceil(128)
    );
    let end = alfs.main_start + alfs.main_sections as u64 * 128;
    assert!(end <= layout.logical_pages);
    assert!(
        alfs.app_pages + alfs.nodes as u64
            <= (alfs.main_sections - alfs.reserved_sections) as u64 * 128
    );
    cfg.lfs.section_pages = 128;
    let f2fs = FsLayout::new(&cfg.stack(), &layout, StackKind::F2fs).unwrap();
    assert!(
        f2fs.app_pages > alfs.app_pages,
        "in-place metadata takes less room"
    );
    // Too small a device is a clear error.
    cfg.geometry.blocks_per_plane = 10;
    cfg.ftl.over_provisioning = 0.3;
    let layout = cfg.validate().unwrap();
    let err = FsLayout::new(&cfg.stack(), &layout, StackKind::Alfs).unwrap_err();
    assert!(
        err.to_string().contains("too small for the alfs stack"),
        "{err}"
    );
}

#[test]
fn the_workload_preconditions_itself_and_only_the_rest_is_measured() {
    let extra = with(churn(6_000), &["precondition.workload_requests=4000"]);
    let r = run("aftl", &extra).unwrap();
    let p = r.precondition.as_ref().unwrap();
    assert_eq!(p.workload_requests, 4000);
    assert!(p.workload_waf.unwrap() >= 1.0);
    assert!(p.host_pages_written > 0);
    assert_eq!(counter(&r, "app_requests"), 2000.0);
    let r = run("page", &extra).unwrap();
    assert_eq!(r.metrics.host.requests, 2000);
    assert_eq!(r.precondition.unwrap().workload_requests, 4000);
}

fn share(r: &Report, op: &str, part: Part) -> f64 {
    let b = r.metrics.latency_breakdown.as_ref().unwrap();
    let op = if op == "read" { &b.read } else { &b.write };
    op.get(part).share
}

fn steady(requests: u64) -> Vec<String> {
    with(
        churn(requests),
        &["precondition.mode=\"steady\"", "workload.trim_ratio=0"],
    )
}

#[test]
fn steady_preconditioning_ends_with_background_cleaning_caught_up() {
    // A short run after steady preconditioning: with the file system's idle-time cleaning
    // caught up (as F2FS's background GC leaves an aged file system between bursts) it
    // starts with free sections in hand; without it (`lfs.idle_ns=0`) at the foreground
    // threshold, so that its first writes pay a burst of cleaning debt.
    // A fifth of the main area kept for cleaning: background cleaning's target (40% of
    // the space without valid blocks in free sections) is then two sections above the
    // foreground threshold, more than the run writes.
    let short = with(steady(100), &["lfs.over_provisioning=0.2"]);
    let caught_up = run("aftl", &short).unwrap();
    let debt = run("aftl", &with(short, &["lfs.idle_ns=0"])).unwrap();
    assert!(counter(&debt, "sections_cleaned") > 0.0);
    assert!(counter(&caught_up, "sections_cleaned") < counter(&debt, "sections_cleaned"));
    let (fg_caught_up, fg_debt) = (
        share(&caught_up, "read", Part::FgHostCleaning),
        share(&debt, "read", Part::FgHostCleaning),
    );
    assert!(fg_debt > 0.0, "{fg_debt}");
    assert!(fg_caught_up < fg_debt, "{fg_caught_up} vs {fg_debt}");
}

#[test]
fn a_steadily_preconditioned_file_system_cleans_at_a_steady_rate() {
    // Sections cleaned per application page written, in the first and second halves of a
    // run (the same workload, the second run twice as long): within 15% of each other.
    let rate = |r: &Report| {
        (
            counter(r, "sections_cleaned"),
            counter(r, "app_pages_written"),
        )
    };
    let (c1, p1) = rate(&run("aftl", &steady(4_000)).unwrap());
    let (c2, p2) = rate(&run("aftl", &steady(8_000)).unwrap());
    let first = c1 / p1;
    let second = (c2 - c1) / (p2 - p1);
    assert!(c1 > 20.0, "{c1} sections cleaned");
    eprintln!("first half {first:.5}, second half {second:.5} sections per page");
    assert!(
        (second / first - 1.0).abs() < 0.15,
        "first half {first:.5}, second half {second:.5} sections per page"
    );
}

#[test]
fn idle_cleaning_is_background_work_in_the_breakdown() {
    // A third of a fresh file system overwritten with idle gaps: cleaning runs in the gaps,
    // and what its requests cost, or cost those behind them, is `bg_host_cleaning`.
    let sparse = with(
        churn(6_000),
        &[
            "workload.interarrival_ns=\"60ms\"",
            "workload.trim_ratio=0",
            "lfs.idle_free_fraction=0.3",
            "workload.working_set_fraction=0.3",
        ],
    );
    let r = run("aftl", &sparse).unwrap();
    assert!(counter(&r, "sections_cleaned_idle") > 0.0);
    let bg = share(&r, "read", Part::BgHostCleaning) + share(&r, "write", Part::BgHostCleaning);
    assert!(bg > 0.0);
    let never = run("aftl", &with(sparse, &["lfs.idle_ns=0"])).unwrap();
    assert_eq!(counter(&never, "sections_cleaned_idle"), 0.0);
    let bg =
        share(&never, "read", Part::BgHostCleaning) + share(&never, "write", Part::BgHostCleaning);
    assert_eq!(bg, 0.0);
}
