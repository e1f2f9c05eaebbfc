//! The controller's front against hand-computed schedules: the host interface and DRAM
//! times in every latency, and the write buffer's background destaging between its
//! watermarks.

use crate::common;

use common::*;
use ftlab_core::run::config::{Config, Destage};
use ftlab_core::Request;

/// One die ([`one_die_config`]: 1 us per page on the channel), 2 us per command, 1 us per
/// 4 KiB on the link, 0.5 us per 4 KiB in DRAM; an 8-page buffer destaging from 4 dirty
/// pages down to 2.
fn device() -> Config {
    let mut cfg = one_die_config(1);
    cfg.interface.command_ns = 2_000;
    cfg.interface.link_bytes_per_s = 4_096_000_000;
    cfg.buffer.dram_bytes_per_s = 8_192_000_000;
    cfg.buffer.size_bytes = 8 * 4096;
    cfg.buffer.destage = Destage::Watermark;
    cfg.buffer.high_watermark = 0.5;
    cfg.buffer.low_watermark = 0.25;
    cfg
}

fn at(time_ns: u64, r: Request) -> Request {
    Request { time_ns, ..r }
}

#[test]
fn light_load_writes_wait_for_the_interface_and_dram_only() {
    let cfg = device();
    // Ten writes 1 ms apart: each takes the command, the link and the DRAM copy.
    let reqs: Vec<Request> = (0..10)
        .map(|i| at(i * 1_000_000, write(i, 1, 4096)))
        .collect();
    let m = run("page", &cfg, &reqs, true).unwrap().metrics;
    let w = m.latency.unwrap().write;
    assert_eq!((w.count, w.cdf[0].1, w.max_ns), (10, 3_500, 3_500));
    // Dirty pages reach 4 after writes 4, 6 and 8; the gap after each brings them back
    // to 2 (the drain at the end is no destage).
    assert_eq!(m.host.pages_destaged, 6);
    // Without a buffer the same writes wait for their programs: 2 + 1 + 1 (channel) +
    // 500 us.
    let mut unbuffered = cfg.clone();
    unbuffered.buffer.size_bytes = 0;
    let w = run("page", &unbuffered, &reqs, true).unwrap().metrics;
    assert_eq!(w.latency.unwrap().write.max_ns, 504_000);
}

#[test]
fn reads_pay_the_command_the_flash_and_the_link_out() {
    let cfg = device();
    let mut reqs: Vec<Request> = (0..6)
        .map(|i| at(i * 1_000_000, write(i, 1, 4096)))
        .collect();
    // Pages 0 and 1 were destaged in the gap after write 4 (the least recently written);
    // page 5 is still buffered.
    reqs.push(at(10_000_000, read(0, 1, 4096)));
    reqs.push(at(11_000_000, read(5, 1, 4096)));
    let m = run("page", &cfg, &reqs, true).unwrap().metrics;
    let r = m.latency.unwrap().read;
    // From flash: 2 + 50 (tR) + 1 (channel) + 1 (link) us; from the buffer: 2 + 0.5 + 1.
    assert_eq!((r.cdf[0].1, r.max_ns), (3_500, 54_000));
    assert_eq!(m.host.buffer_read_hits, 1);
}

#[test]
fn a_write_waits_only_when_it_finds_the_buffer_full() {
    for destage in [Destage::Watermark, Destage::OnFull] {
        let mut cfg = device();
        cfg.buffer.destage = destage;
        // Nine writes at once: no idle gap to destage in. The k-th write's data crosses
        // the link at 2 + k us and is in DRAM 0.5 us later; the ninth finds the buffer full,
        // flushes the oldest page (its transfer to the die ends at 11 + 1 us) and is copied
        // in after that.
        let reqs: Vec<Request> = (0..9).map(|i| write(i, 1, 4096)).collect();
        let m = run("page", &cfg, &reqs, true).unwrap().metrics;
        let w = m.latency.unwrap().write;
        assert_eq!((w.cdf[0].1, w.max_ns), (3_500, 12_500), "{destage:?}");
        assert_eq!(m.host.pages_destaged, 0);
    }
}

#[test]
fn mapping_only_destages_as_a_timed_run_with_idle_time_enough() {
    let mut cfg = device();
    cfg.geometry.blocks_per_plane = 64;
    let reqs: Vec<Request> = (0..3_000u64)
        .map(|i| at(i * 2_000_000, write((i * 7919) % 600, 1, 4096)))
        .collect();
    let timed = run("page", &cfg, &reqs, true).unwrap().metrics;
    cfg.replay.timing = false;
    let untimed = run("page", &cfg, &reqs, true).unwrap().metrics;
    assert!(timed.host.pages_destaged > 0);
    assert_eq!(timed.host.pages_destaged, untimed.host.pages_destaged);
    assert_eq!(timed.flash.programs.total, untimed.flash.programs.total);
}
