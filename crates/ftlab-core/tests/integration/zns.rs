//! ZNS, the zoned device: each rule a zoned device enforces, violated and refused; zone
//! append at the offsets a sequential writer uses; reset, finish and the zone limits; the
//! interface's selection and the block-device front's refusal; ALFS on zones end to end.

use crate::common;

use common::{read, run, small_config, trim, write};
use ftlab_core::device::nand::{Cause, Flash};
use ftlab_core::ftl::zns::{Zns, ZoneState};
use ftlab_core::ftl::{Ftl, Scheme};
use ftlab_core::run::api::{self, RunOptions};
use ftlab_core::run::block_device;
use ftlab_core::run::config::{Config, PreconditionMode};
use ftlab_core::{Error, Request};

/// 2 channels x 1 chip x 2 dies x 2 planes = 8 units; 16-page blocks: 128-page zones.
fn cfg() -> Config {
    let mut cfg = small_config((2, 1, 2, 2), 24, 16, 0.15);
    cfg.precondition.mode = PreconditionMode::None;
    cfg.precondition.warmup = false;
    cfg
}

const ZONE: u64 = 8 * 16;

fn with_zns(mut cfg: Config, keys: &[(&str, i64)]) -> Config {
    cfg.schemes.insert(
        "zns".into(),
        keys.iter()
            .map(|(k, v)| (k.to_string(), toml::Value::from(*v)))
            .collect(),
    );
    cfg
}

fn refused(result: ftlab_core::Result<ftlab_core::run::report::Report>) -> String {
    match result {
        Err(Error::Refused { message }) => message,
        Err(e) => panic!("expected a refusal, got {e}"),
        Ok(_) => panic!("expected a refusal, the run succeeded"),
    }
}

/// Zone `zone` written whole in `chunk`-page requests.
fn fill(zone: u64, chunk: u32) -> Vec<Request> {
    (0..ZONE)
        .step_by(chunk as usize)
        .map(|p| write(zone * ZONE + p, chunk, 4096))
        .collect()
}

/// A zns device and its flash, built as a run builds them.
fn device(cfg: &Config) -> (Zns, Flash) {
    let layout = cfg.validate().unwrap();
    let ctx = cfg.scheme_context();
    let zns = Zns::new(&ctx, &layout).unwrap();
    let flash = Flash::new(&ctx.device, &layout, 0, false).unwrap();
    (zns, flash)
}

#[test]
fn a_write_not_at_the_write_pointer_is_refused() {
    let cfg = cfg();
    // Ahead of the pointer, behind it (an overwrite), and a fresh zone not at its start.
    for reqs in [
        vec![write(0, 4, 4096), write(5, 1, 4096)],
        vec![write(0, 4, 4096), write(2, 1, 4096)],
        vec![write(ZONE + 1, 1, 4096)],
    ] {
        let message = refused(run("zns", &cfg, &reqs, true));
        assert!(message.contains("Zone Invalid Write"), "{message}");
        assert!(message.contains("write pointer"), "{message}");
    }
    let message = refused(run(
        "zns",
        &cfg,
        &[write(0, 4, 4096), write(6, 1, 4096)],
        true,
    ));
    assert!(message.contains("logical page 4"), "{message}");
}

#[test]
fn a_write_past_the_zone_capacity_is_refused() {
    // Zones of 256 logical pages holding 128: pages 128..256 of each are not writable.
    let cfg = with_zns(cfg(), &[("zone_size_pages", 256)]);
    let mut reqs = fill(0, 16); // zone 0 is logical pages 0..128 of 0..256
    reqs.push(write(256, 4, 4096)); // zone 1's first pages
    reqs.extend((0..4).map(|p| read(256 + p, 1, 4096)));
    let r = run("zns", &cfg, &reqs, true).unwrap();
    assert_eq!(r.metrics.scheme["zone_size_pages"], 256.0);
    assert_eq!(r.metrics.scheme["zone_capacity_pages"], ZONE as f64);
    let message = refused(run("zns", &cfg, &[write(ZONE, 1, 4096)], true));
    assert!(message.contains("Zone Boundary Error"), "{message}");
    assert!(message.contains("capacity of 128"), "{message}");
    // A zone written to its capacity is full.
    let mut reqs = fill(0, 16);
    reqs.push(write(0, 1, 4096));
    let message = refused(run("zns", &cfg, &reqs, true));
    assert!(message.contains("Zone Is Full"), "{message}");
}

#[test]
fn opening_more_zones_than_the_active_limit_is_refused() {
    let cfg = with_zns(cfg(), &[("max_active_zones", 2), ("max_open_zones", 2)]);
    let two = [write(0, 1, 4096), write(ZONE, 1, 4096)];
    run("zns", &cfg, &two, true).unwrap();
    let mut three = two.to_vec();
    three.push(write(2 * ZONE, 1, 4096));
    let message = refused(run("zns", &cfg, &three, true));
    assert!(message.contains("Too Many Active Zones"), "{message}");
    assert!(message.contains("zns.max_active_zones"), "{message}");
    // A full zone is no longer active: zone 0 written whole makes room for zone 2.
    let mut reqs = fill(0, 16);
    reqs.extend([write(ZONE, 1, 4096), write(2 * ZONE, 1, 4096)]);
    let r = run("zns", &cfg, &reqs, true).unwrap();
    assert_eq!(r.metrics.scheme["zones_active"], 2.0);
}

#[test]
fn at_the_open_limit_an_implicitly_opened_zone_is_closed_and_explicit_ones_refuse() {
    // Implicitly opened zones: the first opened is closed to make room, and reopened.
    let cfg = with_zns(cfg(), &[("max_open_zones", 2), ("max_active_zones", 0)]);
    let reqs = [
        write(0, 1, 4096),
        write(ZONE, 1, 4096),
        write(2 * ZONE, 1, 4096),
        write(1, 1, 4096),
    ];
    let r = run("zns", &cfg, &reqs, true).unwrap();
    assert_eq!(r.metrics.scheme["zones_auto_closed"], 2.0);
    assert_eq!(r.metrics.scheme["zones_open"], 2.0);
    assert_eq!(r.metrics.scheme["zones_active"], 3.0);
    // Explicitly opened zones are never closed by the device: the write is refused.
    let (mut zns, mut flash) = device(&cfg);
    zns.open(0).unwrap();
    zns.open(1).unwrap();
    let e = zns.write(2 * ZONE as u32, 1, &mut flash).unwrap_err();
    assert!(e.to_string().contains("Too Many Open Zones"), "{e}");
    assert_eq!(zns.state(2), ZoneState::Empty);
    // Closing one makes room.
    zns.close(1).unwrap();
    assert_eq!(zns.state(1), ZoneState::Empty, "nothing was written to it");
    zns.write(2 * ZONE as u32, 1, &mut flash).unwrap();
    assert_eq!(zns.state(2), ZoneState::ImplicitlyOpened);
}

#[test]
fn zone_append_returns_the_offsets_a_sequential_writer_would_have_used() {
    let cfg = cfg();
    let (mut zns, mut flash) = device(&cfg);
    let sizes = [3u32, 1, 8, 5, 16, 2, 7];
    let mut seq = 1;
    let mut expected = ZONE; // zone 1's first page
    for &n in &sizes {
        let at = zns.append(1, n, seq, &mut flash).unwrap();
        assert_eq!(at, expected);
        // What was appended reads back where the device put it.
        for i in 0..n as u64 {
            let oob = zns.read((at + i) as u32, &mut flash).unwrap().unwrap();
            assert_eq!((oob.lpa as u64, oob.seq), (at + i, seq + i));
        }
        seq += n as u64;
        expected += n as u64;
    }
    assert_eq!(zns.write_pointer(1), expected);
    // A sequential writer's next write goes where the appends left the pointer.
    zns.write(expected as u32, seq, &mut flash).unwrap();
    // An append that would cross the capacity is refused, the zone unchanged.
    let left = (2 * ZONE - expected - 1) as u32;
    let e = zns.append(1, left + 1, 100, &mut flash).unwrap_err();
    assert!(e.to_string().contains("Zone Boundary Error"), "{e}");
    assert_eq!(zns.append(1, left, 100, &mut flash).unwrap(), expected + 1);
    assert_eq!(zns.state(1), ZoneState::Full);
    assert!(zns.append(1, 1, 200, &mut flash).is_err());
}

#[test]
fn reset_and_finish() {
    let cfg = with_zns(cfg(), &[("max_active_zones", 1)]);
    let (mut zns, mut flash) = device(&cfg);
    for p in 0..10 {
        zns.write(p, p as u64 + 1, &mut flash).unwrap();
    }
    // Finish: full, no longer active, the rest of it never written.
    zns.finish(0).unwrap();
    assert_eq!(zns.state(0), ZoneState::Full);
    assert!(zns.read(12, &mut flash).unwrap().is_none());
    assert!(zns.read(9, &mut flash).unwrap().is_some());
    assert!(zns.write(10, 11, &mut flash).is_err());
    zns.write(ZONE as u32, 20, &mut flash).unwrap(); // the active slot is free
                                                     // Reset: erased without copies, empty, writable from its start.
    zns.finish(1).unwrap();
    zns.reset(0, &mut flash).unwrap();
    assert_eq!(zns.state(0), ZoneState::Empty);
    assert!(zns.read(3, &mut flash).unwrap().is_none());
    assert_eq!(flash.stats.erases[Cause::Host as usize], 8);
    assert_eq!(flash.stats.programs.iter().sum::<u64>(), 11);
    zns.write(0, 30, &mut flash).unwrap();
}

#[test]
fn a_whole_zone_trim_is_a_reset_and_a_partial_one_only_deallocates() {
    let cfg = cfg();
    let mut reqs = fill(0, 8);
    reqs.extend(fill(1, 8));
    reqs.push(trim(0, ZONE as u32, 4096)); // zone 0 reset
    reqs.push(trim(ZONE, 8, 4096)); // zone 1: its first 8 pages deallocated
    reqs.extend((0..4).map(|p| read(p, 1, 4096)));
    reqs.extend((ZONE..ZONE + 10).map(|p| read(p, 1, 4096)));
    reqs.extend(fill(0, 16));
    let r = run("zns", &cfg, &reqs, true).unwrap();
    let m = &r.metrics;
    assert_eq!(m.scheme["zone_resets"], 1.0);
    assert_eq!(m.flash.erases.total, 8);
    assert_eq!(m.host.unmapped_reads, 4 + 8);
    assert_eq!(m.gc.invocations, 0);
    assert_eq!(m.waf, Some(1.0));
    // Zone 1 still refuses its first page.
    let mut again = reqs.clone();
    again.push(write(ZONE, 1, 4096));
    refused(run("zns", &cfg, &again, true));
}

#[test]
fn the_zone_map_is_four_bytes_per_block_and_zones_may_span_fewer_or_more_units() {
    for (blocks, zones_of) in [(0, 8u64), (4, 4), (16, 16)] {
        let cfg = with_zns(cfg(), &[("zone_blocks", blocks)]);
        let layout = cfg.validate().unwrap();
        let zone = zones_of * 16;
        let zones = layout.logical_pages / zone;
        // Two zones written, read back, one reset and written again.
        let mut reqs: Vec<Request> = (0..2 * zone)
            .step_by(4)
            .map(|p| write(p, 4, 4096))
            .collect();
        reqs.push(trim(0, zone as u32, 4096));
        reqs.extend((0..zone).step_by(8).map(|p| write(p, 8, 4096)));
        let r = run("zns", &cfg, &reqs, true).unwrap();
        let m = &r.metrics;
        assert_eq!(m.scheme["zones"], zones as f64);
        assert_eq!(m.scheme["zone_capacity_pages"], zone as f64);
        let parts = &m.memory_bytes.final_components;
        assert_eq!(parts["zone_map"], zones * zones_of * 4);
        assert_eq!(parts["zone_state"], zones * 9);
        assert_eq!(m.flash.erases.total, zones_of);
    }
    let cfg = with_zns(cfg(), &[("zone_blocks", 3)]);
    let e = run("zns", &cfg, &[], true).unwrap_err().to_string();
    assert!(e.contains("zns.zone_blocks"), "{e}");
}

fn options(ftl: &str, sets: &[&str]) -> RunOptions {
    common::small_fresh_options(ftl, sets)
}

#[test]
fn the_interface_is_the_schemes_and_a_mismatch_is_named() {
    let cfg = api::resolve_config(&options("zns", &[])).unwrap();
    assert_eq!(cfg.device.interface.name(), "zns");
    assert_eq!(cfg.host.stack.name(), "alfs");
    let cfg = api::resolve_config(&options("page", &[])).unwrap();
    assert_eq!(cfg.device.interface.name(), "block");
    for (ftl, set) in [
        ("page", "device.interface=\"zns\""),
        ("zns", "device.interface=\"block\""),
    ] {
        let e = api::resolve_config(&options(ftl, &[set])).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("device.interface"), "{text}");
        assert!(text.contains(&format!("`{ftl}`")), "{text}");
    }
}

#[test]
fn the_block_device_front_refuses_a_zoned_device() {
    let cfg = api::resolve_config(&options("zns", &[])).unwrap();
    let e = block_device::open("zns", &cfg, false).err().unwrap();
    let text = e.to_string();
    assert!(
        text.contains("NBD") && text.contains("no zone commands"),
        "{text}"
    );
}

#[test]
fn alfs_on_zones_cleans_resets_and_every_read_is_verified() {
    let sets = [
        "workload.kind=\"hotcold\"",
        "workload.requests=20000",
        "workload.read_ratio=0.3",
        "workload.trim_ratio=0.05",
    ];
    let r = api::run(&options("zns", &sets), &mut |_| true)
        .unwrap()
        .report;
    let m = &r.metrics;
    assert_eq!(m.host_stack.name, "alfs");
    assert!(m.host_stack.counters["sections_cleaned"] > 0.0);
    assert!(m.scheme["zone_resets"] > 0.0);
    assert_eq!(m.scheme["refused_writes"], 0.0);
    assert_eq!(m.gc.invocations, 0);
    assert_eq!(m.waf, Some(1.0), "no device GC: every program a host write");
    assert!(m.fs_waf.unwrap() > 1.0);
    // f2fs's in-place metadata has no place on sequential zones alone.
    let e = api::run(&options("zns", &["host.stack=\"f2fs\""]), &mut |_| true)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("zns.conventional_zones"), "{e}");
}

// ----- conventional zones -----

/// Conventional zones 0 and 1 of the test device (128-page zones).
const CONV: [(&str, i64); 1] = [("conventional_zones", 2)];

#[test]
fn conventional_zones_take_random_overwrites_and_collect_their_own_garbage() {
    // Four conventional zones on 8 blocks of each unit (4 of them the zones', 4 spare):
    // written whole, their blocks are half valid.
    let mut cfg = small_config((2, 1, 2, 2), 24, 16, 0.15);
    cfg.precondition.mode = PreconditionMode::None;
    cfg.precondition.warmup = false;
    let cfg = with_zns(cfg, &[("conventional_zones", 4)]);
    // Both conventional zones overwritten at random, far beyond their size, so that their
    // blocks are collected; every read checked against the shadow copy.
    let mut reqs = Vec::new();
    let mut x = 7u64;
    for i in 0..6000u64 {
        x = (x * 1103515245 + 12345) % (1 << 31);
        let page = (x >> 4) % (4 * ZONE);
        reqs.push(write(page, 1, 4096));
        if i % 5 == 0 {
            reqs.push(read(x % (4 * ZONE), 1, 4096));
        }
    }
    reqs.push(trim(ZONE, 8, 4096));
    // The sequential zones keep their rules: zone 4 written in order.
    reqs.extend(fill(4, 16));
    let r = run("zns", &cfg, &reqs, true).unwrap();
    let m = &r.metrics;
    assert_eq!(m.scheme["conventional_zones"], 4.0);
    assert_eq!(m.scheme["conventional_host_pages"], 6000.0);
    assert!(m.scheme["conventional_gc_victims"] > 0.0, "{:?}", m.scheme);
    assert!(m.gc.invocations > 0);
    let copies = m.scheme["conventional_gc_pages"];
    assert!(copies > 0.0, "{:?}", m.scheme);
    // Device WAF: host pages (the conventional ones and zone 2's) plus the copies.
    let host = 6000.0 + ZONE as f64;
    assert!((m.waf.unwrap() - (host + copies) / host).abs() < 1e-9);
    let parts = &m.memory_bytes.final_components;
    assert_eq!(parts["conventional_map"], 4 * ZONE * 4);
    let blocks = m.scheme["conventional_blocks"] as u64;
    assert_eq!(parts["conventional_valid_counts"], blocks * 4);
    // The zone map covers the sequential zones only; their blocks and the conventional
    // ones are the device's.
    let zones = m.scheme["zones"] as u64;
    assert_eq!(parts["zone_map"], (zones - 4) * 8 * 4);
    assert_eq!(blocks + (zones - 4) * 8, 8 * 24);
}

#[test]
fn sequential_zones_after_conventional_ones_keep_every_rule() {
    let conv = with_zns(cfg(), &CONV);
    // Not at the write pointer, in the first sequential zone.
    for reqs in [
        vec![write(2 * ZONE + 3, 1, 4096)],
        vec![write(2 * ZONE, 4, 4096), write(2 * ZONE + 1, 1, 4096)],
    ] {
        let message = refused(run("zns", &conv, &reqs, true));
        assert!(message.contains("Zone Invalid Write"), "{message}");
    }
    // A full zone, then the active limit.
    let mut reqs = fill(2, 16);
    reqs.push(write(2 * ZONE, 1, 4096));
    assert!(refused(run("zns", &conv, &reqs, true)).contains("Zone Is Full"));
    let limited = with_zns(
        cfg(),
        &[
            ("conventional_zones", 2),
            ("max_active_zones", 1),
            ("max_open_zones", 1),
        ],
    );
    // Conventional writes open no zone: one sequential zone may still be opened.
    let reqs = [
        write(0, 1, 4096),
        write(ZONE + 5, 1, 4096),
        write(2 * ZONE, 1, 4096),
    ];
    run("zns", &limited, &reqs, true).unwrap();
    let mut more = reqs.to_vec();
    more.push(write(3 * ZONE, 1, 4096));
    assert!(refused(run("zns", &limited, &more, true)).contains("Too Many Active Zones"));
}

#[test]
fn zone_commands_refuse_conventional_zones_and_their_capacity_holds() {
    let (mut zns, mut flash) = device(&with_zns(cfg(), &CONV));
    assert_eq!(zns.state(0), ZoneState::NotWritePointer);
    assert_eq!(zns.state(2), ZoneState::Empty);
    for e in [
        zns.append(1, 1, 1, &mut flash).unwrap_err(),
        zns.reset(0, &mut flash).unwrap_err(),
        zns.finish(1).unwrap_err(),
        zns.open(0).unwrap_err(),
    ] {
        assert!(e.to_string().contains("conventional zone"), "{e}");
    }
    // A conventional zone's pages past its capacity are not writable either.
    let cfg = with_zns(
        cfg(),
        &[("conventional_zones", 2), ("zone_size_pages", 256)],
    );
    let message = refused(run("zns", &cfg, &[write(ZONE + 1, 1, 4096)], true));
    assert!(message.contains("Zone Boundary Error"), "{message}");
    run(
        "zns",
        &cfg,
        &[write(256 + 5, 1, 4096), write(5, 1, 4096)],
        true,
    )
    .unwrap();
}

#[test]
fn too_many_conventional_zones_for_the_spare_blocks_is_a_named_error() {
    // (The geometry's three spare blocks per unit always leave the conventional zones'
    // GC its two: the spare-block check guards the layout, it cannot be reached here.)
    for (zones, what) in [(2, ""), (1000, "leave no sequential zone")] {
        let cfg = with_zns(cfg(), &[("conventional_zones", zones)]);
        let result = run("zns", &cfg, &[write(0, 1, 4096)], true);
        if what.is_empty() {
            result.unwrap();
        } else {
            let e = result.unwrap_err().to_string();
            assert!(
                e.contains("zns.conventional_zones") && e.contains(what),
                "{e}"
            );
        }
    }
}

#[test]
fn f2fs_zoned_mode_keeps_its_metadata_in_the_conventional_zones() {
    let sets = [
        "host.stack=\"f2fs\"",
        "workload.kind=\"hotcold\"",
        "workload.requests=20000",
        "workload.read_ratio=0.3",
        "workload.trim_ratio=0.05",
        "lfs.checkpoint_every_pages=2000",
    ];
    // Too few conventional zones for the metadata: the error says how many it needs.
    let e = api::run(
        &options("zns", &[&sets[..], &["zns.conventional_zones=1"]].concat()),
        &mut |_| true,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("zns.conventional_zones"), "{e}");
    let needed: u32 = e
        .split("at least ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in: {e}"));
    assert!(needed > 1, "{e}");
    let set = format!("zns.conventional_zones={needed}");
    let r = api::run(
        &options("zns", &[&sets[..], &[set.as_str()]].concat()),
        &mut |_| true,
    )
    .unwrap()
    .report;
    let m = &r.metrics;
    assert_eq!(m.host_stack.name, "f2fs");
    let stack = &m.host_stack.counters;
    assert!(stack["sections_cleaned"] > 0.0);
    assert!(stack["meta_pages_written"] > 0.0 && stack["checkpoints"] > 0.0);
    // Every metadata write went to the conventional zones, every data write in order.
    assert_eq!(m.scheme["refused_writes"], 0.0);
    assert!(m.scheme["conventional_host_pages"] >= stack["meta_pages_written"]);
    assert!(
        m.scheme["zone_resets"] > 0.0,
        "freed sections reset their zones"
    );
    // fs WAF, device WAF and their product, as for the other stacks.
    let (fs, dev) = (m.fs_waf.unwrap(), m.waf.unwrap());
    assert!(fs > 1.0 && dev >= 1.0, "{fs} {dev}");
    let product = m.total_waf.unwrap();
    assert!(
        (product - fs * dev).abs() < 1e-6 * product,
        "{product} {fs} {dev}"
    );
}

/// F2FS on a ZNS device with `conventional` conventional zones, fitted to the MSR excerpt.
fn f2fs_on_msr(dir: &std::path::Path, conventional: u32, verify: bool) -> RunOptions {
    RunOptions {
        ftl: "zns".into(),
        trace: Some(dir.join("msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv")),
        sets: vec![
            "host.stack=\"f2fs\"".into(),
            format!("zns.conventional_zones={conventional}"),
        ],
        verify,
        ..RunOptions::default()
    }
}

#[test]
fn f2fs_on_zones_passes_verification_on_a_real_trace() {
    let Some(dir) = common::traces_dir() else {
        return;
    };
    let opts = f2fs_on_msr(&dir, 8, true);
    let r = api::run(&opts, &mut |_| true).unwrap().report;
    let m = &r.metrics;
    assert_eq!(m.host_stack.name, "f2fs");
    assert_eq!(m.scheme["refused_writes"], 0.0);
    assert!(m.host.pages_read > 0);
    assert!(m.fs_waf.unwrap() >= 1.0);
}

#[test]
fn a_device_fitted_to_a_trace_names_the_conventional_zones_f2fs_lacks() {
    let Some(dir) = common::traces_dir() else {
        return;
    };
    let opts = f2fs_on_msr(&dir, 1, false);
    let e = api::run(&opts, &mut |_| true).err().unwrap().to_string();
    assert!(
        e.contains("zns.conventional_zones") && e.contains("at least"),
        "{e}"
    );
}
