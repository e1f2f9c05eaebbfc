//! FDP, Flexible Data Placement: writes placed by their origin's handle, GC within each
//! handle's reclaim units, and the FDP statistics adding up per handle.

use crate::common;
use ftlab_core::device::nand::Cause;
use ftlab_core::run::api::{self, RunOptions};
use ftlab_core::run::report::Report;

fn options(sets: &[&str]) -> RunOptions {
    let mut all = vec![
        "lfs.section_pages=32",
        "ftl.over_provisioning=0.15",
        "workload.kind=\"hotcold\"",
        "workload.requests=30000",
        "workload.read_ratio=0.2",
    ];
    all.extend(sets);
    common::small_fresh_options("fdp", &all)
}

fn run(sets: &[&str]) -> Report {
    api::run(&options(sets), &mut |_| true).unwrap().report
}

#[test]
fn media_bytes_are_host_bytes_plus_gc_copies_per_handle() {
    let r = run(&["host.stack=\"f2fs\""]);
    let m = &r.metrics;
    let s = &m.scheme;
    let page = 4096.0;
    assert!(m.gc.invocations > 0, "the run must collect garbage");
    // Each handle's host bytes are what its origin wrote: application data on handle 0,
    // the file system's cleaning on 1, its metadata on 2.
    assert_eq!(
        s["ruh0_host_bytes_written"],
        m.flash.programs[Cause::Host] as f64 * page
    );
    assert_eq!(
        s["ruh1_host_bytes_written"],
        m.flash.programs[Cause::HostCleaning] as f64 * page
    );
    assert_eq!(
        s["ruh2_host_bytes_written"],
        m.flash.programs[Cause::FsMetadata] as f64 * page
    );
    assert_eq!(s["ruh3_host_bytes_written"], 0.0);
    // Media bytes: host bytes plus GC copies, per handle and in all.
    let mut copies = 0.0;
    for h in 0..4 {
        let host = s[&format!("ruh{h}_host_bytes_written")];
        let media = s[&format!("ruh{h}_media_bytes_written")];
        assert!(media >= host, "handle {h}");
        copies += media - host;
    }
    assert!(copies > 0.0);
    assert_eq!(copies, m.flash.programs[Cause::Gc] as f64 * page);
    assert_eq!(
        s["fdp_media_bytes_written"],
        m.flash.programs.total as f64 * page
    );
    assert_eq!(
        s["fdp_media_bytes_written"] / s["fdp_host_bytes_written"],
        m.waf.unwrap()
    );
}

#[test]
fn without_placement_every_write_goes_to_the_default_handle() {
    let r = run(&[]);
    let s = &r.metrics.scheme;
    assert_eq!(r.metrics.host_stack.name, "inplace");
    assert!(s["ruh0_host_bytes_written"] > 0.0);
    for h in 1..4 {
        assert_eq!(s[&format!("ruh{h}_media_bytes_written")], 0.0, "handle {h}");
    }
    assert_eq!(s["fdp_media_bytes_written"], s["ruh0_media_bytes_written"]);
}

#[test]
fn the_interface_and_the_handle_count_are_checked() {
    let cfg = api::resolve_config(&options(&[])).unwrap();
    assert_eq!(cfg.device.interface.name(), "fdp");
    for bad in ["fdp.handles=0", "fdp.handles=9"] {
        let e = api::run(&options(&[bad]), &mut |_| true).err().unwrap();
        assert!(e.to_string().contains("fdp.handles"), "{e}");
    }
    let mut page = options(&["device.interface=\"fdp\""]);
    page.ftl = "page".into();
    let e = api::resolve_config(&page).unwrap_err().to_string();
    assert!(e.contains("device.interface"), "{e}");
}

/// Per handle, media bytes are host bytes plus GC copies; the handles' sums are the
/// flash's host and GC programs.
fn assert_statistics_add_up(r: &Report, handles: u32) {
    let m = &r.metrics;
    let s = &m.scheme;
    let page = 4096.0;
    let (mut host, mut copies) = (0.0, 0.0);
    for h in 0..handles {
        let hb = s[&format!("ruh{h}_host_bytes_written")];
        let mb = s[&format!("ruh{h}_media_bytes_written")];
        assert!(mb >= hb, "handle {h}");
        host += hb;
        copies += mb - hb;
    }
    assert_eq!(host, m.flash.programs[Cause::Host] as f64 * page);
    assert_eq!(copies, m.flash.programs[Cause::Gc] as f64 * page);
    assert_eq!(s["fdp_media_bytes_written"], host + copies);
}

#[test]
fn lifetime_placement_separates_hot_from_cold_and_its_statistics_add_up() {
    let lifetime = run(&["fdp.placement=\"lifetime\"", "fdp.lifetime_chunk_pages=16"]);
    let m = &lifetime.metrics;
    assert!(m.gc.invocations > 0, "the run must collect garbage");
    assert_statistics_add_up(&lifetime, 4);
    let used = (0..4)
        .filter(|h| m.scheme[&format!("ruh{h}_host_bytes_written")] > 0.0)
        .count();
    assert!(used >= 2, "{:?}", m.scheme);
    // The classifier's table: 8 bytes per 16-page chunk.
    let layout_pages = m.host_stack.app_pages;
    assert_eq!(
        m.memory_bytes.final_components["lifetime_table"],
        layout_pages.div_ceil(16) * 8
    );
    // Against the same device with every write on one handle, GC copies less.
    let none = run(&["fdp.handles=1"]);
    let (with, without) = (m.waf.unwrap(), none.metrics.waf.unwrap());
    assert!(with < without, "lifetime {with} vs no placement {without}");
}

#[test]
fn placement_is_deterministic() {
    for placement in ["origin", "lifetime"] {
        let set = format!("fdp.placement=\"{placement}\"");
        let a = run(&[&set, "host.stack=\"f2fs\""]);
        let b = run(&[&set, "host.stack=\"f2fs\""]);
        assert_eq!(a.metrics.scheme, b.metrics.scheme, "{placement}");
        assert_eq!(
            a.metrics.flash.programs.total,
            b.metrics.flash.programs.total
        );
    }
}

#[test]
fn hint_placement_follows_the_traces_devices_and_falls_back_to_the_default_handle() {
    // A workload has no hints: every write on the default handle, counted.
    let r = run(&["fdp.placement=\"hint\""]);
    let s = &r.metrics.scheme;
    assert_eq!(s["placement_streams"], 0.0);
    assert_eq!(s["unhinted_pages"] * 4096.0, s["ruh0_host_bytes_written"]);
    // The TPC-C excerpt names its devices: each one's pages on its device's handle.
    let Some(dir) = common::traces_dir() else {
        return;
    };
    let opts = RunOptions {
        ftl: "fdp".into(),
        trace: Some(dir.join("mqsim_umass_websearch_tpcc/tpcc-small.trace")),
        sets: vec!["fdp.placement=\"hint\"".into()],
        verify: true,
        ..RunOptions::default()
    };
    let r = api::run(&opts, &mut |_| true).unwrap().report;
    let s = &r.metrics.scheme;
    assert!(s["placement_streams"] > 4.0, "{s:?}");
    assert_eq!(s["unhinted_pages"], 0.0);
    for h in 0..4 {
        assert!(s[&format!("ruh{h}_host_bytes_written")] > 0.0, "{s:?}");
    }
    assert_statistics_add_up(&r, 4);
}

#[test]
fn a_lifetime_chunk_that_is_not_a_power_of_two_is_refused() {
    let e = api::run(&options(&["fdp.lifetime_chunk_pages=100"]), &mut |_| true)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("fdp.lifetime_chunk_pages"), "{e}");
    let e = api::run(&options(&["fdp.placement=\"nearest\""]), &mut |_| true)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("fdp.placement") || e.contains("placement"),
        "{e}"
    );
}
