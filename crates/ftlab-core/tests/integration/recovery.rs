//! Recovery after an unclean stop, for every scheme: a device with a page sink that keeps
//! the OOB of every program as a block device's store does (the records of an erased block
//! are cleared only at the next sync, or before the block is programmed again) serves
//! random writes, trims and reads with GC or merges, flushes, serves more, and "crashes":
//! between two requests (the write buffer and the scheme's DRAM are lost), or in the middle
//! of one, the sink recording nothing after a random operation (a kill in the middle of a
//! GC, a merge or a translation write). A device reopened over the flash contents must
//! return, for every logical page, a write made to that page no older than what it held at
//! the last flush; then it serves more requests with verification, through GC, and crashes
//! and recovers again. AFTL, append-only, is crashed under appends and segment trims.

use crate::common;

use common::store::{sink_of, OobSink};
use common::{read, small_config, trim, write};
use ftlab_core::device::nand::Oob;
use ftlab_core::device::recovery::MapCheckpoint;
use ftlab_core::rng::Rng;
use ftlab_core::run::block_device::{self, Device};
use ftlab_core::run::config::{Config, FlushOrder, PreconditionMode, ProgramOrder};

fn cfg() -> Config {
    let mut cfg = small_config((2, 1, 2, 1), 48, 16, 0.3);
    cfg.precondition.mode = PreconditionMode::None;
    cfg.buffer.size_bytes = 16 * 4096;
    cfg
}

/// The host's view: every sequence number written to each page, and the trims the store
/// logged (before the crash).
struct Host {
    written: Vec<Vec<u64>>,
    trims: Vec<(u32, u64)>,
    /// The last checkpoint taken.
    checkpoint: Option<MapCheckpoint>,
    rng: Rng,
    /// Requests go to the first `span` logical pages (a hot set when below the device).
    span: u64,
}

impl Host {
    fn new(logical: u64, seed: u64) -> Self {
        Host {
            written: vec![Vec::new(); logical as usize],
            trims: Vec::new(),
            checkpoint: None,
            rng: Rng::new(seed),
            span: logical,
        }
    }

    /// `n` random requests: writes of 1-4 pages, trims, reads.
    fn run(&mut self, dev: &mut Box<dyn Device>, n: usize) {
        for _ in 0..n {
            let lpa = self.rng.below(self.span - 4);
            let pages = 1 + self.rng.below(4) as u32;
            match self.rng.below(10) {
                0 => {
                    self.log_trims(dev, lpa..lpa + pages as u64);
                    dev.submit(&trim(lpa, pages, 4096)).unwrap();
                }
                1 | 2 => {
                    dev.submit(&read(lpa, pages, 4096)).unwrap();
                }
                _ => self.write(dev, lpa, pages),
            }
        }
    }

    fn write(&mut self, dev: &mut Box<dyn Device>, lpa: u64, pages: u32) {
        let c = dev.submit(&write(lpa, pages, 4096)).unwrap();
        for i in 0..pages as u64 {
            self.written[(lpa + i) as usize].push(c.first_seq + i);
        }
    }

    /// The store logs a trim before the device serves it, if the process is alive.
    fn log_trims(&mut self, dev: &mut Box<dyn Device>, lpas: std::ops::Range<u64>) {
        let last = dev.last_seq();
        if sink_of(dev).left != Some(0) {
            self.trims.extend(lpas.map(|p| (p as u32, last)));
        }
    }
}

/// What each page holds now (its write's sequence number, 0 unmapped), read through the
/// device.
fn contents(dev: &mut Box<dyn Device>, logical: u64, label: &str) -> Vec<u64> {
    (0..logical)
        .map(|lpa| {
            if let Err(e) = dev.submit(&read(lpa, 1, 4096)) {
                panic!("{label}: {e}");
            }
            dev.served()[0].unwrap_or(0)
        })
        .collect()
}

/// Reopens the device over what its sink recorded (the trims `host` logged since
/// `checkpoint`, if one was taken).
fn crash_and_recover(
    scheme: &str,
    cfg: &Config,
    dev: &mut Box<dyn Device>,
    host: &Host,
) -> (Box<dyn Device>, ftlab_core::run::block_device::Recovered) {
    let mut image = sink_of(dev).image(&host.trims);
    image.checkpoint = host.checkpoint.clone();
    let mut sink = sink_of(dev).clone();
    sink.left = None;
    block_device::open_recovered(scheme, cfg, true, Box::new(sink), &image)
        .unwrap_or_else(|e| panic!("{scheme}: {e}"))
}

/// A checkpoint of a flushed device, as a clean shutdown or a start-up writes: its map,
/// and the trim log emptied.
fn checkpoint(dev: &mut Box<dyn Device>, host: &mut Host) {
    host.checkpoint = Some(MapCheckpoint {
        live: dev.mapping().unwrap(),
        durable_prog: sink_of(dev).prog,
        last_seq: dev.last_seq(),
    });
    host.trims.clear();
}

/// After a recovery: every page holds a write made to it, no older than at the flush
/// (unless a logged trim came after that).
fn check_survivors(label: &str, host: &Host, flushed: &[u64], now: &[u64]) {
    for (lpa, (&was, &is)) in flushed.iter().zip(now).enumerate() {
        assert!(
            is == 0 || host.written[lpa].contains(&is),
            "{label}: page {lpa} reads write #{is}, never made to it"
        );
        assert!(
            is >= was
                || host
                    .trims
                    .iter()
                    .any(|&(p, s)| p as usize == lpa && s >= was),
            "{label}: page {lpa} held #{was} at the flush, #{is} after recovery"
        );
    }
}

/// Every scheme but the append-only one.
fn overwriting_schemes() -> Vec<&'static str> {
    ftlab_core::ftl::SCHEMES
        .iter()
        .map(|(n, _)| *n)
        .filter(|&n| !ftlab_core::ftl::is_append_only(n))
        .collect()
}

/// Crashes a scheme `rounds` times, alternately between requests and in the middle of
/// one; returns the GC invocations seen before the crashes and the rebuilds' programs.
fn crash_rounds(
    scheme: &str,
    cfg: &Config,
    rounds: u32,
    seed: u64,
    span: Option<u64>,
) -> (u64, u64) {
    crash_rounds_with(scheme, cfg, cfg, rounds, seed, span)
}

/// [`crash_rounds`], the device written with `first` until the first crash and reopened
/// with `cfg` every time.
fn crash_rounds_with(
    scheme: &str,
    first: &Config,
    cfg: &Config,
    rounds: u32,
    seed: u64,
    span: Option<u64>,
) -> (u64, u64) {
    let layout = cfg.validate().unwrap();
    let logical = layout.logical_pages;
    let mut dev =
        block_device::open_with_sink(scheme, first, true, Box::new(OobSink::new(&layout)))
            .unwrap_or_else(|e| panic!("{scheme}: {e}"));
    let mut host = Host::new(logical, seed);
    host.span = span.unwrap_or(logical);
    let (mut gc, mut rebuilt) = (0, 0);
    for round in 0..rounds {
        let label = format!("{scheme} round {round}");
        host.run(&mut dev, 2000);
        dev.flush().unwrap();
        sink_of(&mut dev).sync();
        if round >= 2 && round % 2 == 0 {
            // From here on recovery starts from this map (and the next round's from it too,
            // across a recovery that took none).
            checkpoint(&mut dev, &mut host);
        }
        let flushed_seq = dev.last_seq();
        let flushed = contents(&mut dev, logical, &format!("{label} before"));
        let mid_request = round % 2 == 1;
        if mid_request {
            // Dies after a random number of the operations the next requests cause.
            sink_of(&mut dev).left = Some(host.rng.below(800));
        }
        // Acknowledged but not flushed: may be lost.
        host.run(&mut dev, 400);
        gc += dev.live().gc_invocations;
        let (mut recovered, info) = crash_and_recover(scheme, cfg, &mut dev, &host);
        assert!(info.last_seq >= flushed_seq, "{label}: {info:?}");
        if !mid_request && host.span == logical {
            // Only what the write buffer held was lost (16 pages; overwrites in the buffer
            // are rare over the whole device).
            assert!(info.last_seq + 64 >= dev.last_seq(), "{label}: {info:?}");
        }
        rebuilt += info.programs;
        let now = contents(&mut recovered, logical, &format!("{label} after"));
        check_survivors(&label, &host, &flushed, &now);
        dev = recovered;
    }
    // The rebuilt structure keeps working: more traffic, verified, through GC.
    host.run(&mut dev, 2000);
    dev.finish().unwrap_or_else(|e| panic!("{scheme}: {e}"));
    (gc, rebuilt)
}

#[test]
fn every_flushed_write_survives_crashes_on_every_scheme() {
    let cfg = cfg();
    for scheme in overwriting_schemes() {
        let (gc, _) = crash_rounds(scheme, &cfg, 4, 11, None);
        assert!(gc > 0, "{scheme}: no GC or merge ran before the crashes");
    }
}

#[test]
fn log_block_schemes_recover_in_every_program_order() {
    for order in [
        ProgramOrder::Sequential,
        ProgramOrder::Ascending,
        ProgramOrder::Any,
    ] {
        let mut cfg = cfg();
        cfg.nand.program_order = order;
        for scheme in ["block", "bast", "fast", "kast", "fftl", "kraft"] {
            crash_rounds(scheme, &cfg, 12, 23, None);
        }
    }
}

#[test]
fn log_block_schemes_recover_from_crashes_in_small_pools() {
    // A pool of 6 log blocks: merges (and FFTL's cleanings of nearly empty log blocks)
    // nearly every few writes, crashes in the middle of them.
    for scheme in ["bast", "fast", "kast", "fftl", "kraft"] {
        let mut cfg = cfg();
        cfg.schemes.insert(
            scheme.into(),
            toml::Table::from_iter([("log_blocks".to_string(), toml::Value::from(6))]),
        );
        let rounds = if scheme == "fftl" { 60 } else { 12 };
        crash_rounds(scheme, &cfg, rounds, 5, Some(256));
    }
}

#[test]
fn a_store_reopened_with_a_smaller_pool_finishes_its_excess_log_blocks() {
    // Written with 16 log blocks, reopened with 3: the excess log blocks are completed into
    // data blocks or dispersed into the others (else merged), as after a crash in the middle
    // of a merge, but many at once.
    let pool = |scheme: &str, n: i64| {
        let mut cfg = cfg();
        cfg.schemes.insert(
            scheme.into(),
            toml::Table::from_iter([("log_blocks".to_string(), toml::Value::from(n))]),
        );
        cfg
    };
    for scheme in ["bast", "fast", "kast", "fftl", "kraft"] {
        crash_rounds_with(scheme, &pool(scheme, 16), &pool(scheme, 3), 2, 7, Some(512));
    }
}

#[test]
fn leaftl_recovers_with_approximate_segments_and_under_a_dram_budget() {
    // Sorted flushes give runs; an error bound of 4 makes approximate segments, whose
    // lookups read OOB windows (bounded by each recovered run).
    let mut cfg = cfg();
    cfg.buffer.flush = FlushOrder::Sorted;
    cfg.schemes.insert(
        "leaftl".into(),
        toml::Table::from_iter([("gamma".to_string(), toml::Value::from(4))]),
    );
    crash_rounds("leaftl", &cfg, 6, 13, None);
    // About one group of segments in DRAM: the others evicted to translation pages.
    cfg.dram.budget_bytes = 3000;
    crash_rounds("leaftl", &cfg, 6, 17, None);
}

/// AFTL's host: appends to random segments at their write pointers (`wp`, by segment),
/// whole-segment trims of full ones, reads.
fn append_only_run(host: &mut Host, dev: &mut Box<dyn Device>, wp: &mut [u64], seg: u64, n: usize) {
    let logical = host.written.len() as u64;
    for _ in 0..n {
        let s = host.rng.below(wp.len() as u64);
        let (first, len) = (s * seg, seg.min(logical - s * seg));
        let at = wp[s as usize];
        match host.rng.below(10) {
            0 | 1 => {
                dev.submit(&read(host.rng.below(logical), 1, 4096)).unwrap();
            }
            _ if at == len => {
                host.log_trims(dev, first..first + len);
                dev.submit(&trim(first, len as u32, 4096)).unwrap();
                wp[s as usize] = 0;
            }
            _ => {
                let pages = (1 + host.rng.below(8)).min(len - at);
                host.write(dev, first + at, pages as u32);
                wp[s as usize] += pages;
            }
        }
    }
}

#[test]
fn aftl_recovers_its_segments_and_append_points() {
    // 8 units of 16-page blocks: 128-page segments.
    let mut cfg = small_config((2, 1, 2, 2), 24, 16, 0.15);
    cfg.precondition.mode = PreconditionMode::None;
    // No write buffer: an overwrite is refused at once (behind a buffer it would be refused
    // at the flush of a later request).
    cfg.buffer.size_bytes = 0;
    let layout = cfg.validate().unwrap();
    let (logical, seg) = (layout.logical_pages, 128);
    let mut dev =
        block_device::open_with_sink("aftl", &cfg, true, Box::new(OobSink::new(&layout))).unwrap();
    let mut host = Host::new(logical, 3);
    let mut wp = vec![0u64; logical.div_ceil(seg) as usize];
    let mut erased = 0.0;
    for round in 0..6 {
        let label = format!("aftl round {round}");
        append_only_run(&mut host, &mut dev, &mut wp, seg, 600);
        dev.flush().unwrap();
        sink_of(&mut dev).sync();
        if round >= 2 && round % 2 == 0 {
            checkpoint(&mut dev, &mut host);
        }
        let flushed_seq = dev.last_seq();
        let flushed = contents(&mut dev, logical, &format!("{label} before"));
        if round % 2 == 1 {
            sink_of(&mut dev).left = Some(host.rng.below(300));
        }
        append_only_run(&mut host, &mut dev, &mut wp, seg, 150);
        let (mut recovered, info) = crash_and_recover("aftl", &cfg, &mut dev, &host);
        assert!(info.last_seq >= flushed_seq, "{label}: {info:?}");
        let now = contents(&mut recovered, logical, &format!("{label} after"));
        check_survivors(&label, &host, &flushed, &now);
        // The append points: each segment is written up to its first unwritten page (a
        // segment is only ever trimmed whole), and an overwrite below it is refused.
        for (s, w) in wp.iter_mut().enumerate() {
            let first = s * seg as usize;
            let end = (first + seg as usize).min(logical as usize);
            *w = now[first..end].iter().take_while(|&&q| q != 0).count() as u64;
            if *w > 0 {
                let again = recovered.submit(&write(first as u64, 1, 4096));
                assert!(
                    matches!(again, Err(ftlab_core::Error::Refused { .. })),
                    "{label}: segment {s} overwritten at page 0 after recovery: {again:?}"
                );
            }
        }
        erased += dev.finish().unwrap().metrics.scheme["segments_erased"];
        dev = recovered;
    }
    append_only_run(&mut host, &mut dev, &mut wp, seg, 600);
    dev.finish().unwrap();
    assert!(erased > 0.0, "no segment was trimmed whole");
}

#[test]
fn translation_pages_hold_their_entries_so_a_second_recovery_rewrites_none() {
    // The first recovery rewrites the units whose dirty cached entries were lost; then
    // every translation page holds what the scan finds, and recovering again (nothing
    // written in between) reads them and writes nothing.
    let cfg = cfg();
    let layout = cfg.validate().unwrap();
    for scheme in ["dftl", "sftl", "tpftl", "selective"] {
        let sink = OobSink::new(&layout);
        let mut dev = block_device::open_with_sink(scheme, &cfg, true, Box::new(sink)).unwrap();
        let mut host = Host::new(layout.logical_pages, 31);
        host.run(&mut dev, 2000);
        dev.flush().unwrap();
        let (mut first, info) = crash_and_recover(scheme, &cfg, &mut dev, &host);
        assert!(
            info.programs > 0,
            "{scheme}: no unit rewritten after the crash"
        );
        let (_, again) = crash_and_recover(scheme, &cfg, &mut first, &host);
        assert_eq!(again.programs, 0, "{scheme}: {again:?}");
        assert_eq!(again.mapped_pages, info.mapped_pages, "{scheme}");
    }
}

#[test]
fn an_image_the_device_cannot_hold_is_refused_naming_the_page() {
    let cfg = cfg();
    let layout = cfg.validate().unwrap();
    let mut sink = OobSink::new(&layout);
    let beyond = layout.logical_pages as u32 + 5;
    sink.pages[3] = Some((
        Oob {
            lpa: beyond,
            seq: 1,
        },
        1,
    ));
    let image = sink.image(&[]);
    let err = match block_device::open_recovered("page", &cfg, true, Box::new(sink), &image) {
        Ok(_) => panic!("an impossible image was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("physical page 3") && err.contains(&beyond.to_string()),
        "{err}"
    );
}

/// FFTL's sector packing keeps identities per 512 B sector, which neither the page store
/// nor the OOB scan holds: a device that keeps data refuses it, naming the key, unless a
/// write buffer takes partial pages whole (then FFTL packs nothing and recovers as above).
#[test]
fn a_device_that_keeps_data_refuses_fftl_sector_packing() {
    let mut cfg = cfg();
    let layout = cfg.validate().unwrap();
    assert!(
        block_device::open_with_sink("fftl", &cfg, true, Box::new(OobSink::new(&layout))).is_ok()
    );
    cfg.buffer.size_bytes = 0;
    let err =
        match block_device::open_with_sink("fftl", &cfg, true, Box::new(OobSink::new(&layout))) {
            Ok(_) => panic!("a packing FFTL kept data"),
            Err(e) => e.to_string(),
        };
    assert!(err.contains("fftl.sector_packing"), "{err}");
    cfg.schemes
        .entry("fftl".to_string())
        .or_default()
        .insert("sector_packing".into(), toml::Value::Boolean(false));
    assert!(
        block_device::open_with_sink("fftl", &cfg, true, Box::new(OobSink::new(&layout))).is_ok()
    );
}
