//! AFTL, the device half of Application-Managed Flash: append-only segments (one block per
//! parallel unit), overwrites and out-of-order writes refused, whole-segment trims erase
//! without copies, no device GC, a map of 4-byte entries.

use crate::common;

use common::{read, run, small_config, trim, write};
use ftlab_core::device::nand::Cause;
use ftlab_core::ftl::is_append_only;
use ftlab_core::run::block_device;
use ftlab_core::run::config::{Config, PreconditionMode};
use ftlab_core::{Error, Request};

/// 2 channels x 1 chip x 2 dies x 2 planes = 8 units; 16-page blocks: 128-page segments.
fn cfg() -> Config {
    let mut cfg = small_config((2, 1, 2, 2), 24, 16, 0.15);
    cfg.precondition.mode = PreconditionMode::None;
    cfg.precondition.warmup = false;
    cfg
}

const SEG: u64 = 8 * 16;

/// Segment `seg` written whole, in `chunk`-page requests.
fn fill_segment(seg: u64, chunk: u32) -> Vec<Request> {
    (0..SEG)
        .step_by(chunk as usize)
        .map(|p| write(seg * SEG + p, chunk, 4096))
        .collect()
}

fn refused(result: ftlab_core::Result<ftlab_core::run::report::Report>) -> String {
    match result {
        Err(Error::Refused { message }) => message,
        Err(e) => panic!("expected a refusal, got {e}"),
        Ok(_) => panic!("expected a refusal, the run succeeded"),
    }
}

#[test]
fn appends_read_back_and_the_map_is_four_bytes_per_block() {
    let cfg = cfg();
    let layout = cfg.validate().unwrap();
    let mut reqs = fill_segment(0, 4);
    reqs.extend(fill_segment(1, 3).into_iter().take(10));
    reqs.extend((0..SEG + 40).map(|p| read(p, 1, 4096)));
    let r = run("aftl", &cfg, &reqs, true).unwrap();
    let m = &r.metrics;
    // 10 requests of 3 pages in segment 1: pages 30 to 39 of it were never written.
    assert_eq!(m.host.unmapped_reads, 10);
    assert_eq!(m.gc.invocations, 0);
    assert_eq!(m.waf, Some(1.0));
    let segments = layout.logical_pages.div_ceil(SEG);
    let parts = &m.memory_bytes.final_components;
    assert_eq!(parts["block_map"], segments * 8 * 4);
    assert_eq!(parts["segment_state"], segments * 8);
    // 16-page blocks: a page map of 4-byte entries over the same segments is 16 times
    // larger.
    assert_eq!(segments * SEG * 4 / parts["block_map"], 16);
    assert!(is_append_only("aftl") && !is_append_only("page"));
}

#[test]
fn segment_granularity_keeps_four_bytes_per_segment() {
    let mut cfg = cfg();
    cfg.schemes.insert(
        "aftl".into(),
        toml::Table::from_iter([("map".to_string(), toml::Value::from("segment"))]),
    );
    let layout = cfg.validate().unwrap();
    let mut reqs = fill_segment(2, 8);
    reqs.push(trim(2 * SEG, SEG as u32, 4096));
    reqs.extend(fill_segment(2, 16));
    reqs.extend(fill_segment(0, 1));
    let r = run("aftl", &cfg, &reqs, true).unwrap();
    let parts = &r.metrics.memory_bytes.final_components;
    assert_eq!(parts["segment_map"], layout.logical_pages.div_ceil(SEG) * 4);
    assert!(!parts.contains_key("block_map"));
    assert_eq!(r.metrics.flash.erases.total, 8);
}

#[test]
fn overwrites_and_out_of_order_writes_are_refused() {
    let cfg = cfg();
    let message = refused(run(
        "aftl",
        &cfg,
        &[write(0, 4, 4096), write(2, 1, 4096)],
        true,
    ));
    assert!(message.contains("overwrite"), "{message}");
    assert!(message.contains("logical page 2"), "{message}");
    assert!(message.contains("alfs"), "{message}");
    let message = refused(run(
        "aftl",
        &cfg,
        &[write(0, 4, 4096), write(5, 1, 4096)],
        true,
    ));
    assert!(message.contains("out of order"), "{message}");
    assert!(message.contains("must be logical page 4"), "{message}");
    // A fresh segment must start at its first page.
    let message = refused(run("aftl", &cfg, &[write(SEG + 1, 1, 4096)], true));
    assert!(message.contains("out of order"), "{message}");
    // A partial trim does not make a page writable again.
    let message = refused(run(
        "aftl",
        &cfg,
        &[write(0, 8, 4096), trim(0, 8, 4096), write(0, 1, 4096)],
        true,
    ));
    assert!(message.contains("overwrite"), "{message}");
}

#[test]
fn a_whole_segment_trim_erases_without_copies_and_the_segment_is_writable_again() {
    let cfg = cfg();
    let mut reqs = fill_segment(0, 8);
    reqs.extend(fill_segment(1, 8));
    reqs.push(trim(0, SEG as u32, 4096));
    reqs.extend((0..4).map(|p| read(p, 1, 4096)));
    reqs.extend(fill_segment(0, 2));
    reqs.extend((0..2 * SEG).step_by(7).map(|p| read(p, 1, 4096)));
    let r = run("aftl", &cfg, &reqs, true).unwrap();
    let m = &r.metrics;
    // One block per unit erased, nothing copied, no GC.
    assert_eq!(m.flash.erases.total, 8);
    assert_eq!(m.flash.erases[Cause::Host], 8);
    assert_eq!(m.flash.reads.total, m.flash.reads[Cause::Host]);
    assert_eq!(m.flash.programs.total, 3 * SEG);
    assert_eq!(m.gc.invocations, 0);
    assert_eq!(m.gc.pages_moved, 0);
    assert_eq!(m.host.unmapped_reads, 4);
    assert_eq!(m.scheme["segments_erased"], 1.0);
    assert_eq!(m.scheme["segments_allocated"], 3.0);
    assert_eq!(m.scheme["refused_writes"], 0.0);
}

#[test]
fn trims_covering_a_segment_in_order_erase_it_and_out_of_order_ones_do_not() {
    let cfg = cfg();
    let half = SEG as u32 / 2;
    let mut reqs = fill_segment(0, 8);
    reqs.extend(fill_segment(1, 8));
    // Segment 0 in two trims, in order: erased.
    reqs.push(trim(0, half, 4096));
    reqs.push(trim(half as u64, half, 4096));
    // Segment 1 second half first: every page invalid but not erased.
    reqs.push(trim(SEG + half as u64, half, 4096));
    reqs.push(trim(SEG, half, 4096));
    let r = run("aftl", &cfg, &reqs, true).unwrap();
    assert_eq!(r.metrics.flash.erases.total, 8);
    assert_eq!(r.metrics.scheme["segments_erased"], 1.0);
    // Segment 1 can still not be rewritten; segment 0 can.
    let mut again = reqs.clone();
    again.extend(fill_segment(0, 8));
    run("aftl", &cfg, &again, true).unwrap();
    again.push(write(SEG, 1, 4096));
    refused(run("aftl", &cfg, &again, true));
}

#[test]
fn many_append_trim_cycles_never_collect_garbage() {
    let cfg = cfg();
    let layout = cfg.validate().unwrap();
    let segments = layout.logical_pages / SEG;
    let mut reqs = Vec::new();
    // Four rounds over every whole segment: write it, then trim the one written before.
    for round in 0..4 {
        for seg in 0..segments {
            reqs.extend(fill_segment(seg, 16));
            let previous = (seg + segments - 1) % segments;
            if round > 0 || seg > 0 {
                reqs.push(trim(previous * SEG, SEG as u32, 4096));
            }
        }
    }
    let r = run("aftl", &cfg, &reqs, true).unwrap();
    let m = &r.metrics;
    let written = 4 * segments * SEG;
    assert!(written > 3 * layout.logical_pages);
    assert_eq!(m.waf, Some(1.0));
    assert_eq!(m.gc.invocations, 0);
    assert_eq!(m.flash.erases.total, (4 * segments - 1) * 8);
    // Striping: consecutive pages on the two planes of a die program together.
    assert!(m.scheduler.as_ref().unwrap().multi_plane_programs > 0);
}

#[test]
fn the_last_partial_segment_is_usable_up_to_the_logical_capacity() {
    let cfg = cfg();
    let layout = cfg.validate().unwrap();
    let last = layout.logical_pages / SEG;
    let tail = (layout.logical_pages - last * SEG) as u32;
    assert!(
        tail > 0 && tail < SEG as u32,
        "the test wants a partial last segment"
    );
    let reqs = vec![
        write(last * SEG, tail, 4096),
        trim(last * SEG, tail, 4096),
        write(last * SEG, tail, 4096),
        read(last * SEG, tail, 4096),
    ];
    let r = run("aftl", &cfg, &reqs, true).unwrap();
    assert_eq!(r.metrics.scheme["segments_erased"], 1.0);
}

#[test]
fn the_device_front_gets_the_refusal_counted_and_the_device_carries_on() {
    let cfg = cfg();
    let mut dev = block_device::open("aftl", &cfg, true).unwrap();
    let w = dev.submit(&write(0, 4, 4096)).unwrap();
    let err = dev.submit(&write(1, 1, 4096)).unwrap_err();
    assert!(matches!(err, Error::Refused { .. }), "{err}");
    // The device is unchanged: page 1 still holds the first write.
    dev.submit(&read(0, 4, 4096)).unwrap();
    let served: Vec<_> = dev.served().to_vec();
    assert_eq!(
        served,
        (0..4).map(|i| Some(w.first_seq + i)).collect::<Vec<_>>()
    );
    dev.submit(&write(4, 2, 4096)).unwrap();
    let report = dev.finish().unwrap();
    assert_eq!(report.metrics.scheme["refused_writes"], 1.0);
    assert_eq!(report.metrics.host.pages_written, 6);
}
