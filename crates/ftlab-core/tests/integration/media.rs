//! Raw bit errors, ECC and read retry (`[media]`): the retry steps follow the power-law
//! model at a point computed by hand, each step costs a tR and a transfer in the read's
//! latency, aged data needs more steps than fresh data, data past the last step is
//! reported uncorrectable, runs repeat for a seed, and bad values are refused by name.
//! Static wear levelling bounds the erase-count spread of a hot/cold workload.

use crate::common;

use common::*;
use ftlab_core::device::nand::Cause;
use ftlab_core::error::Error;
use ftlab_core::run::config::{Config, ErrorModel, MediaConfig, PreconditionMode, WearLeveling};
use ftlab_core::run::report::Report;
use ftlab_core::Request;

const DAY_NS: u64 = 86_400 * 1_000_000_000;

#[test]
fn retry_steps_follow_the_power_law_at_a_point_computed_by_hand() {
    // 2y-nm MLC defaults; PE 3000, data 200 days old, its block read 100,000 times:
    //   wear floor  8.34e-5 + 3.30e-11 x 3000^1.71            = 1.12533e-4
    //   retention   5.56e-19 x 3000^2.49 x 200^3.33           = 1.16288e-2
    //   disturb     6.26e-13 x 3000^1.76 x 100000^0.47        = 1.84632e-4
    // Expected errors in a 1 KiB codeword (8192 bits), the shift part halved each step:
    //   step 0: 97.70, step 1: 49.31, step 2: 25.12 <= 40 correctable: 2 retry steps.
    let media = MediaConfig::default();
    let (floor, shift) = media.rber(3000, 200.0, 100_000);
    let close = |a: f64, b: f64| (a - b).abs() <= b * 1e-4;
    assert!(close(floor, 1.12533e-4), "{floor}");
    assert!(close(shift, 1.16288e-2 + 1.84632e-4), "{shift}");
    assert_eq!(media.retry_steps_for(floor, shift), Some(2));
    // Fresh data decodes at once; 1000 days old, even the 8th step leaves 80 errors.
    let (f, s) = media.rber(3000, 0.0, 0);
    assert_eq!(media.retry_steps_for(f, s), Some(0));
    let (f, s) = media.rber(3000, 1000.0, 0);
    assert_eq!(media.retry_steps_for(f, s), None);
}

/// One die of 32 blocks of 16 pages (tR 50 us, 1 us a page transfer), filled once before
/// the run, every block at `pe` P/E cycles, then idle for `age_days`; no read disturb, so
/// that every read of the run sees the same error rate.
fn aged(pe: u32, age_days: u64) -> Config {
    let mut cfg = one_die_config(1);
    cfg.precondition.mode = PreconditionMode::Fill;
    cfg.media.error_model = ErrorModel::PowerLaw;
    cfg.media.initial_pe_cycles = pe;
    cfg.media.age_ns = age_days * DAY_NS;
    cfg.media.rber_gamma = 0.0;
    cfg
}

/// A read of every logical page, 10 ms apart (no read waits for another).
fn spaced_reads(cfg: &Config) -> Vec<Request> {
    let layout = cfg.validate().unwrap();
    (0..layout.logical_pages)
        .map(|p| Request {
            time_ns: p * 10_000_000,
            ..read(p, 1, layout.page_size)
        })
        .collect()
}

fn media_run(cfg: &Config) -> Report {
    run_preconditioned("page", cfg, &spaced_reads(cfg)).unwrap()
}

#[test]
fn each_retry_step_costs_a_sense_and_a_transfer() {
    let fresh = media_run(&aged(3000, 0));
    // 200 days at PE 3000: 96.19 expected errors, 48.55 after one step, 24.74 after two.
    let old = media_run(&aged(3000, 200));
    let (f, o) = (
        fresh.metrics.media.as_ref().unwrap(),
        old.metrics.media.as_ref().unwrap(),
    );
    let reads = fresh.metrics.host.pages_read;
    assert!(reads > 300);
    assert_eq!(f.retry_histogram[0], reads);
    assert_eq!(f.read_retries, 0);
    assert_eq!(o.retry_histogram[2], reads);
    assert_eq!(o.retry_histogram.iter().sum::<u64>(), reads);
    assert_eq!(o.read_retries, 2 * reads);
    assert_eq!(o.uncorrectable_reads, 0);
    // Fresh: tR + transfer = 51 us; two more steps: three times that.
    let (lf, lo) = (
        &fresh.metrics.latency.as_ref().unwrap().read,
        &old.metrics.latency.as_ref().unwrap().read,
    );
    assert_eq!((lf.p50_ns, lf.max_ns), (51_000, 51_000));
    assert_eq!((lo.p50_ns, lo.max_ns), (153_000, 153_000));
}

#[test]
fn data_past_the_last_retry_step_is_reported_uncorrectable() {
    let report = media_run(&aged(3000, 1000));
    let m = report.metrics.media.as_ref().unwrap();
    assert_eq!(m.uncorrectable_reads, report.metrics.host.pages_read);
    assert_eq!(m.retry_histogram.iter().sum::<u64>(), 0);
    // Every step of the table was tried.
    assert_eq!(m.read_retries, 8 * m.uncorrectable_reads);
}

#[test]
fn wear_is_reported_as_a_drive_reports_it() {
    let report = media_run(&aged(1500, 0));
    let m = report.metrics.media.as_ref().unwrap();
    // Every block at 1500 of its 3000 rated cycles (the fill erased none).
    assert_eq!(m.percentage_used, 50);
    assert_eq!(m.data_units_written, 0);
    assert_eq!(m.rated_pe_cycles, 3000);
}

/// The report's histograms: every good block in the wear histogram, every block holding
/// data in the RBER histogram, in the decade the model gives its data.
#[test]
fn the_wear_and_error_rate_histograms_count_every_block() {
    // Every block at 1500 cycles, its data 200 days old: RBER 2.16e-3 (the wear floor
    // 9.23e-5 and retention 2.07e-3), the decade from 1e-3.
    let report = media_run(&aged(1500, 200));
    let m = report.metrics.media.as_ref().unwrap();
    let blocks = report.device.blocks as u64;
    assert_eq!(m.wear_histogram.iter().sum::<u64>(), blocks);
    assert_eq!((m.wear_histogram_start, m.wear_histogram_width), (1500, 1));
    let holding: u64 = m.rber_histogram.iter().sum();
    assert!(holding > 0 && holding <= blocks, "{:?}", m.rber_histogram);
    let decade = |i: usize| i as i32 + ftlab_core::controller::metrics::RBER_LOWEST_DECADE;
    let (floor, shift) = MediaConfig::default().rber(1500, 200.0, 0);
    let expected = (floor + shift).log10().floor() as i32;
    assert_eq!(expected, -3);
    for (i, &n) in m.rber_histogram.iter().enumerate() {
        assert_eq!(
            n > 0,
            decade(i) == expected,
            "{:?} {expected}",
            m.rber_histogram
        );
    }
    // A hot/cold workload's wear spreads over buckets of its range.
    let worn = hot_cold(WearLeveling::Dynamic, 12_000);
    let w = worn.metrics.media.as_ref().unwrap();
    assert_eq!(w.wear_histogram_start, worn.metrics.erase_count.min);
    assert!(w.wear_histogram.len() > 1 && w.wear_histogram.len() <= 20);
    assert!(w.rber_histogram.is_empty(), "the error model is off");
}

#[test]
fn process_variation_repeats_for_a_seed() {
    let mut cfg = aged(3000, 170);
    cfg.media.block_variation = 0.5;
    let histogram = |cfg: &Config| media_run(cfg).metrics.media.unwrap().retry_histogram;
    let first = histogram(&cfg);
    assert_eq!(first, histogram(&cfg));
    // Blocks differ: some reads retry more than others.
    assert!(first.iter().filter(|&&n| n > 0).count() >= 2, "{first:?}");
    cfg.media.seed = 2;
    assert_ne!(first, histogram(&cfg));
}

#[test]
fn bad_media_values_are_refused_by_name() {
    type Spoil = fn(&mut MediaConfig);
    let cases: [(&str, Spoil); 4] = [
        ("media.retry_residual", |m| m.retry_residual = 1.5),
        ("media.retry_steps", |m| m.retry_steps = 40),
        ("media.ecc_codeword_bytes", |m| m.ecc_codeword_bytes = 0),
        ("media.rber_alpha", |m| m.rber_alpha = -1.0),
    ];
    for (key, spoil) in cases {
        let mut cfg = aged(0, 0);
        spoil(&mut cfg.media);
        match cfg.validate() {
            Err(Error::Config { key: k, .. }) => assert_eq!(k, key),
            other => panic!("{key}: {other:?}"),
        }
    }
    // Ageing and refresh go by the error model's clock: without it they are refused.
    type Set = fn(&mut MediaConfig);
    let clocked: [(&str, Set); 2] = [
        ("media.age_ns", |m| m.age_ns = 30 * DAY_NS),
        ("media.refresh_after_ns", |m| {
            m.refresh_after_ns = 30 * DAY_NS
        }),
    ];
    for (key, set) in clocked {
        let mut cfg = one_die_config(1);
        set(&mut cfg.media);
        match cfg.validate() {
            Err(Error::Config { key: k, .. }) => assert_eq!(k, key),
            other => panic!("{key}: {other:?}"),
        }
    }
}

/// A filled device, then `writes` page writes all to the first tenth of the logical
/// space: the rest is cold data whose blocks GC never picks.
fn hot_cold(wear_leveling: WearLeveling, writes: u64) -> Report {
    let mut cfg = one_die_config(1);
    cfg.precondition.mode = PreconditionMode::Fill;
    cfg.media.wear_leveling = wear_leveling;
    cfg.media.static_wl_gap = 8;
    let layout = cfg.validate().unwrap();
    let hot = layout.logical_pages / 10;
    let mut rng = ftlab_core::rng::Rng::new(7);
    let reqs: Vec<Request> = (0..writes)
        .map(|_| write(rng.below(hot), 1, layout.page_size))
        .collect();
    // Verified, and every page read back at the end.
    run_preconditioned("page", &cfg, &reqs).unwrap()
}

#[test]
fn static_wear_levelling_bounds_the_erase_count_spread() {
    let off = hot_cold(WearLeveling::Off, 12_000);
    let on = hot_cold(WearLeveling::Static, 12_000);
    let spread = |r: &Report| r.metrics.erase_count.max - r.metrics.erase_count.min;
    // Without levelling the cold blocks are never erased; the hot ones cycle.
    assert_eq!(off.metrics.erase_count.min, 0);
    assert!(spread(&off) > 60, "{:?}", off.metrics.erase_count);
    // With it the spread stays near the gap (8): a block moves once the gap is passed.
    assert!(
        spread(&on) <= 12,
        "{:?} {:?}",
        on.metrics.erase_count,
        on.metrics.media
    );
    let m = on.metrics.media.as_ref().unwrap();
    assert!(m.wear_level_blocks > 10, "{m:?}");
    assert_eq!(
        m.wear_level_pages_moved,
        on.metrics.flash.programs[Cause::WearLevel]
    );
    assert!(m.wear_level_waf_added.unwrap() > 0.0);
    // Off: no media report, no wear-levelling traffic.
    assert!(off.metrics.media.is_none());
    assert_eq!(off.metrics.flash.programs[Cause::WearLevel], 0);
}

/// Every block at PE 3000, filled once; then a read of a random page every 10 simulated
/// hours for 300 days (720 reads), with refresh after `refresh_days` (0: never).
fn ageing_reads(refresh_days: u64) -> Report {
    let mut cfg = aged(3000, 0);
    cfg.media.refresh_after_ns = refresh_days * DAY_NS;
    let layout = cfg.validate().unwrap();
    let mut rng = ftlab_core::rng::Rng::new(11);
    let reqs: Vec<Request> = (0..720u64)
        .map(|i| Request {
            time_ns: i * DAY_NS * 10 / 24,
            ..read(rng.below(layout.logical_pages), 1, layout.page_size)
        })
        .collect();
    run_preconditioned("page", &cfg, &reqs).unwrap()
}

#[test]
fn refresh_bounds_the_retries_of_ageing_data() {
    let kept = ageing_reads(0);
    let refreshed = ageing_reads(60);
    let (k, r) = (
        kept.metrics.media.as_ref().unwrap(),
        refreshed.metrics.media.as_ref().unwrap(),
    );
    // Unrefreshed, the data ages to 300 days: 2 steps past 200 days, 4 at 300 (by the
    // model: 96 expected errors at 200 days, 368 at 300), none of it uncorrectable yet.
    assert!(k.retry_histogram[2..].iter().sum::<u64>() > 100, "{k:?}");
    assert!(k.retry_histogram[4] > 0, "{k:?}");
    assert_eq!(k.refresh_blocks, 0);
    // Refreshed after 60 days (scanned every 7.5): data at most 67.5 days old, 3.5 expected
    // errors, within the ECC at the first read, for the host's reads and the refresh's
    // copies alike.
    let reads = refreshed.metrics.host.pages_read + r.refresh_pages_moved;
    assert_eq!(r.retry_histogram[0], reads, "{r:?}");
    assert_eq!(r.read_retries, 0);
    // Every block of data refreshed about four times over the 300 days.
    assert!(r.refresh_blocks >= 4 * 24, "{r:?}");
    assert_eq!(
        r.refresh_pages_moved,
        refreshed.metrics.flash.programs[Cause::Refresh]
    );
}

#[test]
fn every_scheme_on_the_allocator_stays_verified_with_levelling_and_refresh() {
    let mut cfg = aged(3000, 0);
    cfg.media.wear_leveling = WearLeveling::Static;
    cfg.media.static_wl_gap = 4;
    cfg.media.refresh_after_ns = 20 * DAY_NS;
    let layout = cfg.validate().unwrap();
    let mut rng = ftlab_core::rng::Rng::new(5);
    // Hot writes and reads of everything, an hour apart, over 125 days.
    let reqs: Vec<Request> = (0..3000u64)
        .map(|i| {
            let r = if i % 3 == 0 {
                read(rng.below(layout.logical_pages), 1, layout.page_size)
            } else {
                write(rng.below(layout.logical_pages / 8), 1, layout.page_size)
            };
            Request {
                time_ns: i * DAY_NS / 24,
                ..r
            }
        })
        .collect();
    for scheme in ["page", "dftl", "sftl", "tpftl", "selective", "leaftl"] {
        // Verified, and every page read back at the end.
        let report =
            run_preconditioned(scheme, &cfg, &reqs).unwrap_or_else(|e| panic!("{scheme}: {e}"));
        let m = report.metrics.media.as_ref().unwrap();
        assert!(m.refresh_blocks > 0, "{scheme}: {m:?}");
        assert_eq!(m.uncorrectable_reads, 0, "{scheme}");
    }
}

#[test]
fn the_retry_steps_of_page_copies_take_their_time_on_the_die() {
    use ftlab_core::device::nand::{Flash, Oob};
    // Four pages of block 0 moved to block 1: 2 steps each for 200-day-old data at PE 3000.
    let moved = |age_days: u64| {
        let cfg = aged(3000, 0);
        let layout = cfg.validate().unwrap();
        let mut flash = Flash::new(&cfg.device(), &layout, 0, true).unwrap();
        for p in 0..4 {
            flash
                .program(
                    p,
                    Oob {
                        lpa: p,
                        seq: p as u64 + 1,
                    },
                    &[],
                    Cause::Host,
                )
                .unwrap();
        }
        flash.age_media(age_days * DAY_NS);
        flash.begin_request(flash.request_done());
        let start = flash.cursor();
        let ppb = layout.pages_per_block;
        let moves: Vec<(u32, u32)> = (0..4).map(|p| (p, ppb + p)).collect();
        flash.move_pages(&moves, Cause::Gc).unwrap();
        (flash.request_done() - start, flash.stats.media.clone())
    };
    let (fresh, fresh_stats) = moved(0);
    let (old, old_stats) = moved(200);
    assert_eq!(fresh_stats.retry_histogram[0], 4);
    assert_eq!(old_stats.retry_histogram[2], 4);
    assert_eq!(old_stats.read_retries, 8);
    // Eight more senses and transfers of 50 us + 1 us, one after the other on the die.
    assert_eq!(old - fresh, 8 * 51_000);
}
