//! The timing model seen from whole requests: replay modes, queueing and foreground GC.

use crate::common;

use common::*;
use ftlab_core::controller::metrics::LatencyStats;
use ftlab_core::run::config::{Config, ReplayMode};
use ftlab_core::Request;

/// One channel, one die: every operation serialises, so latencies are exact sums.
fn one_die() -> Config {
    one_die_config(1)
}

/// The write latencies of a timed run.
fn write_latency(scheme: &str, cfg: &Config, reqs: &[Request], check_all: bool) -> LatencyStats {
    run(scheme, cfg, reqs, check_all)
        .unwrap()
        .metrics
        .latency
        .unwrap()
        .write
}

#[test]
fn closed_loop_at_depth_one_has_no_queueing() {
    let mut cfg = one_die();
    cfg.replay.mode = ReplayMode::Closed;
    cfg.replay.queue_depth = 1;
    let reqs: Vec<Request> = (0..10).map(|p| write(p, 1, 4096)).collect();
    let m = run("page", &cfg, &reqs, false).unwrap().metrics;
    let w = &m.latency.unwrap().write;
    assert_eq!((w.count, w.max_ns, w.cdf[0].1), (10, 501_000, 501_000));
    assert_eq!(m.simulated_time_ns, Some(10 * 501_000));
    let iops = m.iops.unwrap();
    assert!((iops - 10.0 / (10.0 * 501e-6)).abs() < 1e-6, "{iops}");
}

#[test]
fn open_loop_queues_behind_a_busy_die_and_time_scale_spreads_arrivals() {
    let mut cfg = one_die();
    // Ten writes arriving together: the k-th waits for k-1 programs.
    let reqs: Vec<Request> = (0..10).map(|p| write(p, 1, 4096)).collect();
    let m = run("page", &cfg, &reqs, false).unwrap().metrics;
    let w = m.latency.unwrap().write;
    assert_eq!(w.max_ns, 10 * 501_000);
    assert_eq!(w.mean_ns, 501_000.0 * 5.5);
    // Arrivals 1 ms apart (0.5 ms scaled by 2): no queueing.
    cfg.replay.time_scale = 2.0;
    let spaced: Vec<Request> = reqs
        .iter()
        .enumerate()
        .map(|(i, r)| Request {
            time_ns: i as u64 * 500_000,
            ..*r
        })
        .collect();
    let w = write_latency("page", &cfg, &spaced, false);
    assert_eq!(w.max_ns, 501_000);
}

#[test]
fn reads_on_different_dies_overlap() {
    let mut cfg = one_die();
    cfg.geometry.channels = 2;
    cfg.replay.mode = ReplayMode::Closed;
    cfg.replay.queue_depth = 1;
    // Two pages written to two units (round robin), then read in one request.
    let reqs = vec![write(0, 2, 4096), read(0, 2, 4096)];
    let m = run("page", &cfg, &reqs, false).unwrap().metrics;
    let r = m.latency.unwrap().read;
    assert_eq!(
        r.max_ns, 51_000,
        "both dies read in parallel: tR + transfer"
    );
}

#[test]
fn foreground_gc_time_lands_on_the_waiting_write() {
    let mut cfg = one_die();
    cfg.replay.mode = ReplayMode::Closed;
    cfg.replay.queue_depth = 1;
    let layout = cfg.validate().unwrap();
    let lp = layout.logical_pages;
    let mut reqs: Vec<Request> = (0..lp).map(|p| write(p, 1, 4096)).collect();
    reqs.extend((0..lp).map(|p| write(p % 16, 1, 4096)));
    let m = run("page", &cfg, &reqs, true).unwrap().metrics;
    assert!(m.gc.invocations > 0);
    let w = m.latency.unwrap().write;
    // Some write waited for at least an erase on top of its own program.
    assert!(w.max_ns >= 3_000_000 + 501_000, "{}", w.max_ns);
    // Most writes do not wait for GC (percentiles are exact to 3 significant digits).
    assert!(w.p50_ns.abs_diff(501_000) <= 501, "{}", w.p50_ns);
}

#[test]
fn buffered_writes_are_acknowledged_when_their_eviction_crosses_the_channel() {
    let mut cfg = one_die();
    cfg.buffer.size_bytes = 2 * 4096;
    cfg.replay.mode = ReplayMode::Closed;
    cfg.replay.queue_depth = 1;
    let reqs: Vec<Request> = (0..4).map(|p| write(p, 1, 4096)).collect();
    let w = write_latency("page", &cfg, &reqs, false);
    // Two writes fill the buffer for free; the third evicts page 0 (1 us transfer);
    // the fourth evicts page 1, whose transfer waits for page 0's program.
    assert_eq!(w.cdf.iter().map(|&(_, v)| v).max(), Some(500_000 + 1_000));
    assert_eq!(w.p50_ns, 0);
}

#[test]
fn a_many_page_flush_delays_each_write_until_its_own_slot_is_free() {
    let mut cfg = one_die();
    cfg.buffer.size_bytes = 4 * 4096;
    // Sorted: the whole buffer at once, as LeaFTL flushes.
    cfg.buffer.flush = ftlab_core::run::config::FlushOrder::Sorted;
    cfg.replay.mode = ReplayMode::Closed;
    cfg.replay.queue_depth = 1;
    let reqs: Vec<Request> = (0..8).map(|p| write(p, 1, 4096)).collect();
    let w = write_latency("page", &cfg, &reqs, false);
    // Four writes fill the buffer for free. The fifth flushes all four: their transfers
    // end at 1, 502, 1003 and 1504 us (each waits for the program before it). The fifth
    // takes the first slot free (1 us); the sixth, issued then, the next (502 us), and so
    // on: each write waits for its own slot, none for the whole batch.
    assert_eq!(w.count, 8);
    assert_eq!(w.max_ns, 501_000);
    assert_eq!(w.mean_ns, (1_000 + 3 * 501_000) as f64 / 8.0);
    assert_eq!(w.p50_ns, 0);
}

#[test]
fn a_flushed_page_frees_its_slot_after_the_fillers_it_needs() {
    let mut cfg = one_die();
    cfg.buffer.size_bytes = 4096;
    cfg.replay.mode = ReplayMode::Closed;
    cfg.replay.queue_depth = 1;
    // Page 3 of a logical block first: on NAND programmed in order, the block FTL pads
    // offsets 0-2 with fillers before it.
    let reqs = vec![write(3, 1, 4096), write(40, 1, 4096)];
    let w = write_latency("block", &cfg, &reqs, true);
    // The second write flushes page 3: three fillers (1 us transfer, 500 us program each),
    // then page 3 crosses the channel at 1,504 us, and only then is its slot free.
    assert_eq!(w.max_ns, 3 * 501_000 + 1_000);
}

/// A vector command (`Flash::begin_command`) takes the time of its first page: the later
/// pages of translation are programmed and read, and counted, as usual but end with the
/// first; an operation of another cause inside the command is timed on its own.
#[test]
fn a_vector_command_takes_one_page_time() {
    use ftlab_core::device::nand::{Cause, Flash, Oob};
    let cfg = one_die();
    let layout = cfg.validate().unwrap();
    let (tr, tprog) = (cfg.nand.read_latency_ns, cfg.nand.program_latency_ns);
    let mut work = Vec::new();
    for command in [false, true] {
        let mut flash = Flash::new(&cfg.device(), &layout, 0, true).unwrap();
        flash.begin_request(0);
        if command {
            flash.begin_command();
        }
        for k in 0..4 {
            flash
                .program(k, Oob::translation(k), &[], Cause::Translation)
                .unwrap();
        }
        for k in 0..4 {
            assert_eq!(
                flash.read(k, Cause::Translation).unwrap(),
                Oob::translation(k)
            );
        }
        if command {
            flash.end_command();
        }
        assert_eq!(flash.stats.programs[Cause::Translation as usize], 4);
        assert_eq!(flash.stats.reads[Cause::Translation as usize], 4);
        let die: u64 = flash.die_work_ns().iter().sum();
        // Page transfers are 1 us each way.
        let expected = if command {
            tprog + tr + 2_000
        } else {
            4 * (tprog + tr) + 8_000
        };
        assert_eq!(die, expected, "command = {command}");
        // Inside a command, a GC program is its own operation.
        if command {
            flash.begin_command();
            flash
                .program(4, Oob::translation(4), &[], Cause::Translation)
                .unwrap();
            flash
                .program(5, Oob { lpa: 0, seq: 1 }, &[], Cause::Gc)
                .unwrap();
            flash
                .program(6, Oob::translation(6), &[], Cause::Translation)
                .unwrap();
            flash.end_command();
            let after: u64 = flash.die_work_ns().iter().sum();
            assert_eq!(after - die, 2 * tprog + 2_000);
        }
        work.push(die);
    }
    assert!(work[1] < work[0]);
}
