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
