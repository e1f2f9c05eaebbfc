//! Recovery after an unclean stop, for every scheme: a device with a page sink that keeps
//! the OOB of every program (as a block device's store does) serves random writes, trims
//! and reads with GC, flushes, serves more, and "crashes" (the write buffer and the
//! scheme's DRAM are lost). A device reopened over the flash contents must return, for
//! every logical page, a write made to that page no older than what it held at the last
//! flush; then it serves more requests with verification, through GC, and crashes and
//! recovers again. Schemes that cannot rebuild their state refuse to start.

mod common;

use common::{read, small_config, trim, write};
use ftlab_core::config::{Config, PreconditionMode};
use ftlab_core::device::{self, Device};
use ftlab_core::nand::{Oob, PageSink, Ppn, ServedPage};
use ftlab_core::recovery::FlashImage;
use ftlab_core::rng::Rng;
use std::any::Any;

/// Keeps what a store keeps: each programmed page's OOB and program number.
#[derive(Clone)]
struct OobSink {
    pages: Vec<Option<(Oob, u64)>>,
    erase_counts: Vec<u32>,
    pages_per_block: u32,
    prog: u64,
}

impl PageSink for OobSink {
    fn program(&mut self, ppn: Ppn, oob: Oob, _content: Option<&[u8]>) {
        self.prog += 1;
        self.pages[ppn as usize] = Some((oob, self.prog));
    }
    fn copy(&mut self, _src: Ppn, dst: Ppn, oob: Oob) {
        self.program(dst, oob, None);
    }
    fn erase(&mut self, block: u32) {
        let ppb = self.pages_per_block as usize;
        let first = block as usize * ppb;
        self.pages[first..first + ppb].fill(None);
        self.erase_counts[block as usize] += 1;
    }
    fn served(&mut self, _lpa: u32, _from: ServedPage, _host_read: bool) {}
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl OobSink {
    fn image(&self, trims: &[(u32, u64)]) -> FlashImage {
        FlashImage {
            pages: self
                .pages
                .iter()
                .enumerate()
                .filter_map(|(p, r)| r.map(|(oob, prog)| (p as Ppn, oob, prog)))
                .collect(),
            erase_counts: self.erase_counts.clone(),
            trims: trims.to_vec(),
        }
    }
}

fn sink_of(dev: &mut Box<dyn Device>) -> &mut OobSink {
    dev.sink()
        .unwrap()
        .as_any_mut()
        .downcast_mut::<OobSink>()
        .unwrap()
}

fn cfg() -> Config {
    let mut cfg = small_config((2, 1, 2, 1), 48, 16, 0.3);
    cfg.precondition.mode = PreconditionMode::None;
    cfg.buffer.size_bytes = 16 * 4096;
    cfg
}

/// The host's view: every sequence number written to each page, and the trims.
struct Host {
    written: Vec<Vec<u64>>,
    trims: Vec<(u32, u64)>,
    rng: Rng,
}

impl Host {
    /// `n` random requests: writes of 1-4 pages, trims, reads.
    fn run(&mut self, dev: &mut Box<dyn Device>, n: usize, logical: u64) {
        for _ in 0..n {
            let lpa = self.rng.below(logical - 4);
            let pages = 1 + self.rng.below(4) as u32;
            match self.rng.below(10) {
                0 => {
                    let last = dev.last_seq();
                    dev.submit(&trim(lpa, pages, 4096)).unwrap();
                    for p in lpa..lpa + pages as u64 {
                        self.trims.push((p as u32, last));
                    }
                }
                1 | 2 => {
                    dev.submit(&read(lpa, pages, 4096)).unwrap();
                }
                _ => {
                    let c = dev.submit(&write(lpa, pages, 4096)).unwrap();
                    for i in 0..pages as u64 {
                        self.written[(lpa + i) as usize].push(c.first_seq + i);
                    }
                }
            }
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

fn crash_and_recover(
    scheme: &str,
    cfg: &Config,
    dev: &mut Box<dyn Device>,
    host: &Host,
) -> Box<dyn Device> {
    let image = sink_of(dev).image(&host.trims);
    let sink = Box::new(sink_of(dev).clone());
    let (recovered, info) = device::open_recovered(scheme, cfg, true, sink, &image)
        .unwrap_or_else(|e| panic!("{scheme}: {e}"));
    assert!(info.last_seq >= dev.last_seq() - 64, "{scheme}: {info:?}");
    recovered
}

const RECOVERABLE: &[&str] = &["page", "dftl", "sftl", "tpftl", "selective"];

#[test]
fn every_flushed_write_survives_a_crash() {
    for &scheme in RECOVERABLE {
        let cfg = cfg();
        let layout = cfg.validate().unwrap();
        let logical = layout.logical_pages;
        let sink = OobSink {
            pages: vec![None; layout.physical_pages as usize],
            erase_counts: vec![0; layout.total_blocks as usize],
            pages_per_block: layout.pages_per_block,
            prog: 0,
        };
        let mut dev = device::open_with_sink(scheme, &cfg, true, Box::new(sink)).unwrap();
        let mut host = Host {
            written: vec![Vec::new(); logical as usize],
            trims: Vec::new(),
            rng: Rng::new(11),
        };
        for round in 0..3 {
            host.run(&mut dev, 3000, logical);
            dev.flush().unwrap();
            let flushed = contents(&mut dev, logical, &format!("{scheme} round {round} before"));
            // Acknowledged but not flushed: may be lost.
            host.run(&mut dev, 200, logical);
            let gc_before = dev.live().gc_invocations;
            let mut recovered = crash_and_recover(scheme, &cfg, &mut dev, &host);
            let now = contents(
                &mut recovered,
                logical,
                &format!("{scheme} round {round} after"),
            );
            for lpa in 0..logical as usize {
                let (was, is) = (flushed[lpa], now[lpa]);
                assert!(
                    is == 0 || host.written[lpa].contains(&is),
                    "{scheme} round {round}: page {lpa} reads write #{is}, never made to it"
                );
                assert!(
                    is >= was || host.trims.iter().any(|&(p, s)| p as usize == lpa && s >= was),
                    "{scheme} round {round}: page {lpa} held #{was} at the flush, #{is} after recovery"
                );
            }
            assert!(
                round > 0 || gc_before > 0 || scheme != "page",
                "{scheme}: no GC ran"
            );
            dev = recovered;
        }
        // The rebuilt structure keeps working: more traffic, verified, through GC.
        host.run(&mut dev, 3000, logical);
        dev.finish().unwrap();
    }
}

#[test]
fn schemes_that_cannot_recover_refuse_to_start() {
    let cfg = cfg();
    let layout = cfg.validate().unwrap();
    for (scheme, _) in ftlab_core::ftl::SCHEMES {
        if RECOVERABLE.contains(scheme) {
            continue;
        }
        let sink = OobSink {
            pages: vec![None; layout.physical_pages as usize],
            erase_counts: vec![0; layout.total_blocks as usize],
            pages_per_block: layout.pages_per_block,
            prog: 0,
        };
        let image = sink.image(&[]);
        let err = match device::open_recovered(scheme, &cfg, true, Box::new(sink), &image) {
            Ok(_) => panic!("{scheme} recovered without implementing it"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("cannot recover"), "{scheme}: {err}");
    }
}
