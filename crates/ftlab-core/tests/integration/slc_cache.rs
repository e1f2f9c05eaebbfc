//! The pseudo-SLC cache (`[slc]`, the shared page allocator's): every scheme on the
//! allocator keeps every page readable through cache-full bursts and idle-time folding, a
//! burst's schedule is the one the SLC timings give, runs repeat, and the schemes that place
//! their pages themselves are refused.

use crate::common;

use common::*;
use ftlab_core::device::nand::Cause;
use ftlab_core::rng::Rng;
use ftlab_core::run::config::{Config, WhenFull};
use ftlab_core::Request;

/// The schemes whose writes go through the shared page allocator.
const ON_THE_CACHE: [&str; 6] = ["page", "dftl", "sftl", "tpftl", "selective", "leaftl"];

/// 2 units of 32 blocks of 12 pages (an SLC block holds 4), a static SLC block per unit and
/// up to 7 dynamic ones, writes that find the cache full going to `when_full`.
fn cached_device(when_full: WhenFull) -> Config {
    let mut cfg = small_config((2, 1, 1, 1), 32, 12, 0.3);
    cfg.slc.static_fraction = 0.01;
    cfg.slc.dynamic_fraction = 0.2;
    cfg.slc.when_full = when_full;
    cfg
}

/// A fill of the logical space, then bursts of 40 random and sequential page writes (each
/// burst's requests 10 us apart) separated by idle gaps of 50 ms, with reads mixed in.
fn bursts(logical_pages: u64, page: u32) -> Vec<Request> {
    let mut rng = Rng::new(36);
    let mut reqs: Vec<Request> = (0..logical_pages).map(|p| write(p, 1, page)).collect();
    let mut t = 1_000_000_000;
    for burst in 0..30 {
        let start = rng.below(logical_pages);
        for i in 0..40 {
            let lpa = if burst % 2 == 0 {
                (start + i) % logical_pages
            } else {
                rng.below(logical_pages)
            };
            let mut r = if i % 5 == 4 {
                read(lpa, 1, page)
            } else {
                write(lpa, 1, page)
            };
            r.time_ns = t;
            reqs.push(r);
            t += 10_000;
        }
        t += 50_000_000;
    }
    reqs
}

#[test]
fn folding_keeps_every_page_readable_through_full_and_idle_periods() {
    for when_full in [WhenFull::Bypass, WhenFull::Fold] {
        let cfg = cached_device(when_full);
        let layout = cfg.validate().unwrap();
        let reqs = bursts(layout.logical_pages, layout.page_size);
        for scheme in ON_THE_CACHE {
            check_cached_run(scheme, &cfg, &reqs);
        }
        // LeaFTL learns segments over the pages each flush and each relocation (GC's and
        // the folds') writes: with its table on flash under a budget, and in stripe
        // placement.
        let mut budget = cfg.clone();
        budget.dram.budget_bytes = 6000;
        check_cached_run("leaftl", &budget, &reqs);
        let mut stripe = cfg.clone();
        let section = stripe.schemes.entry("leaftl".into()).or_default();
        section.insert("placement".into(), toml::Value::String("stripe".into()));
        section.insert("stripe_pages".into(), toml::Value::Integer(4));
        check_cached_run("leaftl", &stripe, &reqs);
    }
}

/// Runs `scheme` on the cache with every read and, at the end, every logical page verified,
/// and checks that the cache absorbed and folded pages, and the counters agree.
fn check_cached_run(scheme: &str, cfg: &Config, reqs: &[Request]) {
    let report = run(scheme, cfg, reqs, true).unwrap_or_else(|e| panic!("{scheme}: {e}"));
    let slc = report.metrics.slc.as_ref().expect("the cache is on");
    let hit_rate = slc.hit_rate.unwrap();
    assert!(
        slc.folds > 0 && slc.pages_folded > 0,
        "{scheme}: nothing folded"
    );
    assert!(
        hit_rate > 0.0 && hit_rate <= 1.0,
        "{scheme}: hit rate {hit_rate}"
    );
    let ops = &report.metrics.flash;
    assert_eq!(ops.programs[Cause::Fold], slc.pages_folded, "{scheme}");
    assert_eq!(ops.reads[Cause::Fold], slc.pages_folded, "{scheme}");
    assert_eq!(ops.erases[Cause::Fold], slc.folds, "{scheme}");
}

#[test]
fn a_full_cache_folds_in_the_foreground_and_every_page_stays_readable() {
    // Every request at time 0: no idle gap, so the cache folds only when a write finds it
    // full.
    let cfg = cached_device(WhenFull::Fold);
    let layout = cfg.validate().unwrap();
    let mut rng = Rng::new(7);
    let reqs: Vec<Request> = (0..3 * layout.logical_pages)
        .map(|_| write(rng.below(layout.logical_pages), 1, layout.page_size))
        .collect();
    for scheme in ON_THE_CACHE {
        let report = run(scheme, &cfg, &reqs, true).unwrap_or_else(|e| panic!("{scheme}: {e}"));
        let slc = report.metrics.slc.as_ref().unwrap();
        assert!(slc.folds > 0, "{scheme}: the cache never folded");
        assert!(slc.waf_added.unwrap() > 0.0, "{scheme}");
    }
}

/// One die, one plane (the round timings of `one_die_config`: transfer 1 us, TLC tPROG
/// 500 us), no write buffer, and one static SLC block of 4 pages with tR 20 us, tPROG
/// 100 us, tBERS 1 ms.
fn one_die_cache() -> Config {
    let mut cfg = one_die_config(1);
    cfg.slc.when_full = WhenFull::Fold;
    cfg.slc.static_fraction = 0.01;
    cfg.slc.bits_per_cell = 4;
    cfg.slc.read_latency_ns = 20_000;
    cfg.slc.program_latency_ns = 100_000;
    cfg.slc.erase_latency_ns = 1_000_000;
    cfg
}

fn at(mut r: Request, time_ns: u64) -> Request {
    r.time_ns = time_ns;
    r
}

#[test]
fn a_burst_takes_the_slc_program_time_and_folds_in_the_idle_gap() {
    let cfg = one_die_cache();
    let page = cfg.validate().unwrap().page_size;
    // Four writes 200 us apart fill the SLC block; the fifth comes 10 ms later.
    let reqs: Vec<Request> = (0..4)
        .map(|i| at(write(i, 1, page), i * 200_000))
        .chain([at(write(4, 1, page), 10_000_000)])
        .collect();
    let report = run("page", &cfg, &reqs, false).unwrap();
    let w = &report.metrics.latency.as_ref().unwrap().write;
    // Each write: its transfer (1 us) and the SLC tPROG (100 us). The fold (4 x (20 us
    // + 500 us) and a 1 ms erase, from 701 us) is done long before the fifth write, which
    // finds the SLC block erased again and waits for nothing.
    assert_eq!((w.count, w.max_ns), (5, 101_000));
    assert_eq!(w.total_ns, 5 * 101_000);
    let slc = report.metrics.slc.as_ref().unwrap();
    assert_eq!((slc.folds, slc.pages_folded), (1, 4));
    assert_eq!(slc.host_pages_absorbed, 5);
    assert_eq!(slc.hit_rate, Some(1.0));
    assert_eq!(slc.waf_added, Some(4.0 / 5.0));
    // Without the cache every write takes the TLC tPROG (501 us with its transfer), and the
    // first four queue: done at 501, 1,002, 1,503 and 2,004 us, the fifth alone.
    let mut off = cfg.clone();
    off.slc.static_fraction = 0.0;
    let report = run("page", &off, &reqs, false).unwrap();
    let w = &report.metrics.latency.as_ref().unwrap().write;
    assert_eq!(w.max_ns, 1_404_000);
    assert_eq!(w.total_ns, (501 + 802 + 1_103 + 1_404 + 501) * 1_000);
    assert!(report.metrics.slc.is_none());
}

#[test]
fn a_write_that_finds_the_cache_full_waits_for_the_fold() {
    let cfg = one_die_cache();
    let page = cfg.validate().unwrap().page_size;
    // Five writes at once: the first four queue for the SLC block (101, 202, 303, 404 us);
    // the fifth finds it full and folds it first: 4 copies of 20 + 1 + 1 + 500 us from
    // 404 us (to 2,492 us), the 1 ms SLC erase (to 3,492 us), then its own 101 us.
    let reqs: Vec<Request> = (0..5).map(|i| write(i, 1, page)).collect();
    let report = run("page", &cfg, &reqs, false).unwrap();
    let w = &report.metrics.latency.as_ref().unwrap().write;
    assert_eq!(w.max_ns, 3_593_000);
    assert_eq!(w.total_ns, (101 + 202 + 303 + 404 + 3_593) * 1_000);
    assert_eq!(report.metrics.slc.as_ref().unwrap().folds, 1);
}

#[test]
fn runs_on_the_cache_repeat() {
    let cfg = cached_device(WhenFull::Fold);
    let layout = cfg.validate().unwrap();
    let reqs = bursts(layout.logical_pages, layout.page_size);
    let json = |scheme| run(scheme, &cfg, &reqs, false).unwrap().to_json();
    for scheme in ["page", "dftl"] {
        assert_eq!(json(scheme), json(scheme), "{scheme}");
    }
}

#[test]
fn schemes_that_place_their_pages_themselves_are_refused() {
    let cfg = cached_device(WhenFull::Bypass);
    let layout = cfg.validate().unwrap();
    let reqs = [write(0, 1, layout.page_size)];
    for scheme in ["bast", "fast", "hpftl", "slimftl"] {
        let e = run(scheme, &cfg, &reqs, false).unwrap_err().to_string();
        assert!(
            e.contains("slc.static_fraction") && e.contains(scheme),
            "{scheme}: {e}"
        );
    }
}
