//! The device model of a current SSD: multi-plane operations, program/erase suspend, read
//! priority over queued background work (timed against hand-computed schedules),
//! background GC, preconditioning on every scheme, saturation detection, superblocks.

use crate::common;

use common::*;
use ftlab_core::device::timing::{Place, Timeline};
use ftlab_core::ftl::{is_append_only, SCHEMES};
use ftlab_core::rng::Rng;
use ftlab_core::run::api::{self, RunOptions};
use ftlab_core::run::config::{Config, FlushOrder, GcMode, PreconditionMode, ReplayMode};
use ftlab_core::Request;

/// One channel, one die, `planes` planes, round numbers: tR 50 us, tPROG 500 us, tBERS
/// 3 ms, 1 us to move a page; FIFO scheduling, nothing else on.
fn one_die(planes: u32) -> Config {
    let mut cfg = one_die_config(planes);
    cfg.scheduler.read_priority = false;
    cfg.scheduler.suspend = false;
    cfg.scheduler.multi_plane = false;
    cfg.replay.mode = ReplayMode::Closed;
    cfg.replay.queue_depth = 1;
    cfg
}

fn read_and_write_max(cfg: &Config, reqs: &[Request]) -> (u64, u64) {
    let l = run("page", cfg, reqs, false)
        .unwrap()
        .metrics
        .latency
        .unwrap();
    (l.read.max_ns, l.write.max_ns)
}

#[test]
fn two_planes_program_and_read_as_one_multi_plane_operation() {
    // Two pages in one request land on the two planes of the die at offset 0.
    let reqs = vec![write(0, 2, 4096), read(0, 2, 4096)];
    let mut cfg = one_die(2);
    // Serialised: program 1 us + 500 us, then the second; reads 50 + 1 us each.
    assert_eq!(read_and_write_max(&cfg, &reqs), (102_000, 1_002_000));
    cfg.scheduler.multi_plane = true;
    // Multi-plane: both transfers, then one tPROG (2 + 500 us); one tR, two transfers.
    assert_eq!(read_and_write_max(&cfg, &reqs), (52_000, 502_000));
    let r = run("page", &cfg, &reqs, false).unwrap();
    let s = r.metrics.scheduler.unwrap();
    assert_eq!((s.multi_plane_programs, s.multi_plane_reads), (1, 1));
}

#[test]
fn a_read_suspends_the_program_in_progress() {
    let mut cfg = one_die(1);
    cfg.replay.mode = ReplayMode::Open;
    let at = |t_us: u64, r: Request| Request {
        time_ns: t_us * 1000,
        ..r
    };
    // Page 0 programmed by 501 us; page 1's program runs 1001..1501 us; a read of page 0
    // arrives at 1100 us.
    let reqs = vec![
        at(0, write(0, 1, 4096)),
        at(1000, write(1, 1, 4096)),
        at(1100, read(0, 1, 4096)),
    ];
    // Without suspend the read waits for the program: 1501 + 50 + 1 - 1100 = 452 us.
    assert_eq!(read_and_write_max(&cfg, &reqs).0, 452_000);
    cfg.scheduler.suspend = true;
    cfg.scheduler.suspend_ns = 20_000;
    // Suspended: 20 us to suspend, 50 us tR, 1 us out.
    assert_eq!(read_and_write_max(&cfg, &reqs).0, 71_000);
    let s = run("page", &cfg, &reqs, false)
        .unwrap()
        .metrics
        .scheduler
        .unwrap();
    assert_eq!(s.suspensions, 1);
}

#[test]
fn host_reads_go_ahead_of_queued_background_work() {
    let mut cfg = one_die(1);
    let layout = cfg.validate().unwrap();
    let place = Place {
        die: 0,
        channel: 0,
        plane: 0,
        offset: 0,
        slc: false,
    };
    let schedule = |cfg: &Config| {
        let mut t = Timeline::new(&cfg.device(), &layout);
        // Three background programs queued at time 0, then a host read at 10 us.
        for _ in 0..3 {
            t.program(place, 0, true);
        }
        t.read(place, 10_000, false).done
    };
    // FIFO: the background programs were placed at once (1 + 500 us each, back to back).
    assert_eq!(schedule(&cfg), 3 * 501_000 + 51_000);
    // Read priority: only the program already running when the read arrives is ahead
    // of it (background work has no transfer: copy-back).
    cfg.scheduler.read_priority = true;
    assert_eq!(schedule(&cfg), 500_000 + 51_000);
    // ... and with suspend, not even that one.
    cfg.scheduler.suspend = true;
    cfg.scheduler.suspend_ns = 20_000;
    assert_eq!(schedule(&cfg), 10_000 + 20_000 + 51_000);
}

/// Random overwrites of a small device, arriving 2 ms apart.
fn churn_requests(cfg: &Config, count: u64, read_every: u64) -> Vec<Request> {
    let logical = cfg.validate().unwrap().logical_pages;
    let mut rng = Rng::new(5);
    (0..count)
        .map(|i| {
            let page = rng.below(logical);
            let r = if i % read_every == 0 {
                read(page, 1, 4096)
            } else {
                write(page, 1, 4096)
            };
            Request {
                time_ns: i * 2_000_000,
                ..r
            }
        })
        .collect()
}

fn small_device() -> Config {
    let mut cfg = small_config((2, 1, 2, 2), 48, 32, 0.12);
    cfg.gc.threshold = 0.06;
    cfg.precondition.window_pages = 512;
    cfg
}

#[test]
fn background_gc_keeps_reads_off_the_gc_path() {
    let mut cfg = small_device();
    cfg.precondition.mode = PreconditionMode::Steady;
    let reqs = churn_requests(&cfg, 6000, 3);
    let mut p99 = Vec::new();
    for mode in [GcMode::Foreground, GcMode::Background] {
        cfg.gc.mode = mode;
        let r = run_preconditioned("page", &cfg, &reqs).unwrap();
        assert!(r.metrics.gc.invocations > 50, "{mode:?}: GC ran");
        let l = r.metrics.latency.unwrap();
        p99.push(l.read.p99_ns);
    }
    // Foreground GC holds its die for a whole block's copies while reads queue behind it.
    assert!(
        p99[1] * 5 < p99[0],
        "read p99 foreground vs background: {p99:?}"
    );
}

#[test]
fn preconditioning_reaches_steady_state_on_every_scheme_verified() {
    // An append-only device (aftl) refuses the random overwrites: it is preconditioned
    // through its host stack (tests/amf.rs).
    for (scheme, _) in SCHEMES.iter().filter(|(s, _)| !is_append_only(s)) {
        let mut cfg = small_device();
        cfg.precondition.mode = PreconditionMode::Steady;
        if *scheme == "hpftl" || *scheme == "slimftl" {
            // Hashed schemes need a larger secondary area / spare room.
            cfg.ftl.over_provisioning = 0.25;
        }
        let reqs = churn_requests(&cfg, 3000, 4);
        let r = run_preconditioned(scheme, &cfg, &reqs).unwrap_or_else(|e| panic!("{scheme}: {e}"));
        let p = r.precondition.as_ref().unwrap();
        assert!(p.steady, "{scheme}: window WAF {:?}", p.window_waf);
        assert!(p.gc_invocations > 0, "{scheme}");
        let logical = cfg.validate().unwrap().logical_pages;
        assert!(p.host_pages_written > logical, "{scheme}");
        // The run's own counters start after preconditioning...
        assert_eq!(r.metrics.host.requests, 3000, "{scheme}");
        assert!(
            r.metrics.host.pages_written < p.host_pages_written,
            "{scheme}"
        );
        // ... on a full device: every read is mapped, and the trace's writes need GC.
        assert_eq!(r.metrics.host.unmapped_reads, 0, "{scheme}");
        assert!(r.metrics.gc.invocations > 0, "{scheme}: GC in the run");
    }
}

#[test]
fn the_gc_preconditioning_owes_is_not_charged_to_the_measured_run() {
    // Steady preconditioning ends with the buffer drained and background GC caught up (as
    // a device idle before the run): a trace that only reads then runs no GC. Before, the
    // drain's GC fell into the run's first idle gaps (a WAF in the thousands on traces
    // that write a few pages).
    let mut cfg = small_device();
    cfg.precondition.mode = PreconditionMode::Steady;
    // A buffer of four blocks a unit: its drain needs GC.
    cfg.buffer.size_bytes = 8 * 4 * 32 * 4096;
    let logical = cfg.validate().unwrap().logical_pages;
    let reads: Vec<Request> = (0..200u64)
        .map(|i| Request {
            time_ns: i * 1_000_000,
            ..read(i * 97 % logical, 1, 4096)
        })
        .collect();
    let r = run_preconditioned("page", &cfg, &reads).unwrap();
    assert!(r.precondition.as_ref().unwrap().gc_invocations > 0);
    assert_eq!(r.metrics.gc.invocations, 0);
    assert_eq!(r.metrics.flash.programs.total, 0);
}

#[test]
fn warm_up_maps_the_pages_read_before_they_are_written() {
    let mut cfg = small_device();
    cfg.precondition.mode = PreconditionMode::None;
    let reqs = vec![
        read(10, 4, 4096),
        write(12, 1, 4096),
        read(12, 2, 4096),
        read(3, 1, 4096),
    ];
    let r = run_preconditioned("dftl", &cfg, &reqs).unwrap();
    let p = r.precondition.unwrap();
    // 10, 11, 12, 13 and 3: page 12 is read before it is written too.
    assert_eq!(p.warmup_pages, 5);
    assert_eq!(r.metrics.host.unmapped_reads, 0);
    cfg.precondition.warmup = false;
    let r = run_preconditioned("dftl", &cfg, &reqs).unwrap();
    assert_eq!(r.metrics.host.unmapped_reads, 6);
}

fn default_workload(sets: &[&str]) -> RunOptions {
    RunOptions {
        ftl: "page".into(),
        workload: Some("default".into()),
        sets: sets.iter().map(|s| s.to_string()).collect(),
        ..RunOptions::default()
    }
}

#[test]
fn saturation_is_detected_when_a_replay_is_too_fast_and_not_when_slow() {
    let base = ["workload.requests=4000", "precondition.mode=\"fill\""];
    let run_at = |scale: &str| {
        let mut sets = base.to_vec();
        sets.push(scale);
        api::run(&default_workload(&sets), &mut |_| true)
            .unwrap()
            .report
            .metrics
            .load
            .unwrap()
    };
    let slow = run_at("replay.time_scale=1.0");
    assert!(!slow.saturated, "{slow:?}");
    assert!(slow.busiest_die_utilisation < 0.5);
    assert!(slow.suggested_time_scale.is_none());
    let fast = run_at("replay.time_scale=0.0001");
    assert!(fast.saturated, "{fast:?}");
    let scale = fast.suggested_time_scale.unwrap();
    assert!(scale > 0.0001, "{scale}");
    let closed = api::run(
        &default_workload(&["workload.requests=4000", "replay.mode=\"closed\""]),
        &mut |_| true,
    )
    .unwrap()
    .report
    .metrics
    .load
    .unwrap();
    assert!(!closed.saturated, "a closed loop cannot saturate");
}

#[test]
fn the_default_device_is_a_current_ssd_and_fitting_keeps_its_parallelism() {
    let cfg = api::resolve_config(&RunOptions::default()).unwrap();
    let layout = cfg.validate().unwrap();
    assert_eq!((layout.channels, layout.dies, layout.units), (8, 32, 64));
    assert!(cfg.buffer.size_bytes > 0);
    assert_eq!(cfg.precondition.mode, PreconditionMode::Steady);
    let legacy = api::resolve_config(&RunOptions {
        preset: Some("legacy".into()),
        ..RunOptions::default()
    })
    .unwrap();
    assert_eq!(legacy.validate().unwrap().units, 4);
    assert_eq!(legacy.gc.mode, GcMode::Foreground);
    // A trace fitted to the device: blocks per plane scale, the parallelism stays.
    let Some(dir) = traces_dir() else { return };
    let opts = RunOptions {
        ftl: "page".into(),
        trace: Some(dir.join("ssdsim_hust_financial1/example.ascii")),
        sets: vec!["precondition.mode=\"none\"".into()],
        ..RunOptions::default()
    };
    let (_, fitted) = api::load_requests(&opts).unwrap();
    let l = fitted.validate().unwrap();
    assert_eq!((l.dies, l.units), (32, 64));
}

#[test]
fn superblocks_take_one_block_of_every_unit() {
    let cfg = small_config((2, 2, 1, 2), 10, 8, 0.4);
    let layout = cfg.validate().unwrap();
    assert_eq!(layout.superblocks(), 10);
    for sb in 0..layout.superblocks() {
        let mut units: Vec<u32> = (0..layout.units)
            .map(|k| {
                let block = layout.superblock_member(sb, k);
                assert_eq!(layout.superblock_of(block), sb);
                layout.unit_of_block(block)
            })
            .collect();
        // Stripe order: the two planes of a die back to back.
        assert_eq!(layout.die_of_unit(units[0]), layout.die_of_unit(units[1]));
        units.sort_unstable();
        assert_eq!(units, (0..layout.units).collect::<Vec<_>>());
    }
}

/// A replay quiet over its 100 s but with a burst of 3,000 writes in one instant at 50 s:
/// the run as a whole keeps the die 2% busy and the queue drains long before the end, yet
/// the burst saturates the device. Spread over 10 s, the same writes do not; and at the
/// suggested time scale the burst fits.
#[test]
fn a_burst_that_saturates_the_device_is_detected() {
    let mut cfg = small_config((1, 1, 1, 1), 64, 16, 0.25);
    cfg.buffer.size_bytes = 0;
    cfg.replay.mode = ReplayMode::Open;
    let layout = cfg.validate().unwrap();
    let replay = |burst_ns: u64| -> Vec<Request> {
        let quiet = (0..1000u64).map(|i| Request {
            time_ns: i * 100_000_000,
            ..read(i % layout.logical_pages, 1, 4096)
        });
        let burst = (0..3000u64).map(|i| Request {
            time_ns: 50_000_000_000 + i * burst_ns / 3000,
            ..write(i % layout.logical_pages, 1, 4096)
        });
        let mut reqs: Vec<Request> = quiet.chain(burst).collect();
        reqs.sort_by_key(|r| r.time_ns);
        reqs
    };
    let load = |cfg: &Config, reqs: &[Request]| {
        run_preconditioned("page", cfg, reqs)
            .unwrap()
            .metrics
            .load
            .unwrap()
    };
    let burst = load(&cfg, &replay(0));
    assert!(burst.busiest_die_utilisation < 0.05, "{burst:?}");
    assert!(burst.backlog_at_end_ns < 1_000_000, "{burst:?}");
    assert!(burst.peak_window_utilisation > 1.0, "{burst:?}");
    assert!(burst.queued_requests > 1000, "{burst:?}");
    assert!(burst.saturated && burst.saturated_in_bursts, "{burst:?}");
    let spread = load(&cfg, &replay(10_000_000_000));
    assert!(spread.peak_window_utilisation < 0.7, "{spread:?}");
    assert!(
        !spread.saturated && !spread.saturated_in_bursts,
        "{spread:?}"
    );
    // The suggestion spreads every window's work: the burst's instant stays an instant, so
    // try it on the burst spread over 1 s instead.
    let second = load(&cfg, &replay(1_000_000_000));
    assert!(second.saturated_in_bursts, "{second:?}");
    cfg.replay.time_scale = second.suggested_time_scale.unwrap();
    let scaled = load(&cfg, &replay(1_000_000_000));
    assert!(!scaled.saturated, "{scaled:?}");
}

#[test]
fn leaftl_brings_its_sorted_flush_and_preconditioning_writes_through_it() {
    let opts = |ftl: &str, sets: &[&str]| RunOptions {
        ftl: ftl.into(),
        workload: Some("default".into()),
        sets: [
            &["workload.requests=2000", "precondition.mode=\"fill\""],
            sets,
        ]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect(),
        ..RunOptions::default()
    };
    // Over any preset, under the user's keys; other schemes keep the preset's buffer.
    let cfg = api::resolve_config(&opts("leaftl", &[])).unwrap();
    assert_eq!(cfg.buffer.flush, FlushOrder::Sorted);
    assert_eq!(cfg.buffer.flush_group_pages, 256);
    let page = api::resolve_config(&opts("page", &[])).unwrap();
    assert_eq!(page.buffer.flush, FlushOrder::Lru);
    let lru = api::resolve_config(&opts("leaftl", &["buffer.flush=\"lru\""])).unwrap();
    assert_eq!(lru.buffer.flush, FlushOrder::Lru);
    // A fill written in sorted flushes is learned as runs: a few segments per 256-page
    // group (31,342 for 7,619 groups here), not one single-point segment per page (1.94 M
    // when preconditioning wrote page by page).
    let verified = RunOptions {
        verify: true,
        ..opts("leaftl", &[])
    };
    let report = api::run(&verified, &mut |_| true).unwrap().report;
    let logical = report.device.logical_pages as f64;
    let segments = report.metrics.scheme["segments"];
    assert!(
        segments < logical / 16.0,
        "{segments} segments for {logical} pages"
    );
}
