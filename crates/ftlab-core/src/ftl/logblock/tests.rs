//! Unit-test harness of the log-block schemes: a small device, a shadow copy of every
//! logical page, and the machinery's invariants checked against the flash.

use super::Core;
use crate::device::geometry::Layout;
use crate::device::nand::Flash;
use crate::ftl::Scheme;
use crate::rng::Rng;
use crate::run::config::resolve;
use std::collections::BTreeMap;

/// Access to a log-block scheme's machinery (tests).
pub(crate) trait HasCore {
    fn core(&self) -> &Core;
}

/// A scheme on a small device: 2 parallel units of 32 blocks of 16 pages, 25% spare,
/// ascending program order, mapping only; `sets` override any key.
pub(crate) struct Harness<F> {
    pub ftl: F,
    pub flash: Flash,
    pub layout: Layout,
    shadow: Vec<u64>,
    seq: u64,
}

pub(crate) const BASE: &[&str] = &[
    "geometry.channels=2",
    "geometry.chips_per_channel=1",
    "geometry.dies_per_chip=1",
    "geometry.planes_per_die=1",
    "geometry.blocks_per_plane=32",
    "geometry.pages_per_block=16",
    "ftl.over_provisioning=0.25",
    "nand.program_order=\"ascending\"",
    "replay.timing=false",
];

impl<F: Scheme + HasCore> Harness<F> {
    pub fn new(sets: &[&str]) -> Self {
        let all: Vec<String> = BASE.iter().chain(sets).map(|s| s.to_string()).collect();
        let cfg = resolve(None, None, &[], &all).unwrap_or_else(|e| panic!("{e}"));
        let layout = cfg.validate().unwrap();
        let ftl = F::new(&cfg.scheme_context(), &layout).unwrap_or_else(|e| panic!("{e}"));
        let flash = Flash::new(&cfg.device(), &layout, 0, cfg.replay.timing).unwrap();
        Harness {
            ftl,
            flash,
            shadow: vec![0; layout.logical_pages as usize],
            seq: 0,
            layout,
        }
    }

    pub fn ppb(&self) -> u32 {
        self.layout.pages_per_block
    }

    pub fn logical_pages(&self) -> u32 {
        self.layout.logical_pages as u32
    }

    pub fn write(&mut self, lpa: u32) {
        self.seq += 1;
        self.flash.clock += 1;
        self.ftl
            .write(lpa, self.seq, &mut self.flash)
            .unwrap_or_else(|e| panic!("write of {lpa}: {e}"));
        self.shadow[lpa as usize] = self.seq;
    }

    pub fn trim(&mut self, lpa: u32) {
        self.ftl.trim(lpa, &mut self.flash).unwrap();
        self.shadow[lpa as usize] = 0;
    }

    pub fn read(&mut self, lpa: u32) {
        let got = self
            .ftl
            .read(lpa, &mut self.flash)
            .unwrap_or_else(|e| panic!("read of {lpa}: {e}"));
        let expected = self.shadow[lpa as usize];
        match got {
            None => assert_eq!(expected, 0, "page {lpa} lost"),
            Some(oob) => assert_eq!((oob.lpa, oob.seq), (lpa, expected), "page {lpa}"),
        }
    }

    /// Every logical page once, in address order.
    pub fn fill(&mut self) {
        for lpa in 0..self.logical_pages() {
            self.write(lpa);
        }
    }

    /// Reads back every page and checks the machinery's invariants.
    pub fn check_all(&mut self) {
        self.ftl.core().check(&self.flash);
        for lpa in 0..self.logical_pages() {
            self.read(lpa);
        }
    }

    pub fn counters(&self) -> BTreeMap<&'static str, f64> {
        let mut out = Vec::new();
        self.ftl.counters(&mut out);
        out.into_iter().collect()
    }
}

/// `n` random page writes (a read every third), seeded.
pub(crate) fn churn<F: Scheme + HasCore>(h: &mut Harness<F>, n: u32, seed: u64) {
    let mut rng = Rng::new(seed);
    let pages = h.logical_pages() as u64;
    for i in 0..n {
        let lpa = rng.below(pages) as u32;
        h.write(lpa);
        if i % 3 == 0 {
            h.read(rng.below(pages) as u32);
        }
    }
}

/// Sequential runs of `run` pages starting at random offsets, `n` pages in all.
pub(crate) fn runs<F: Scheme + HasCore>(h: &mut Harness<F>, n: u32, run: u32, seed: u64) {
    let mut rng = Rng::new(seed);
    let pages = h.logical_pages();
    let mut written = 0;
    while written < n {
        let start = rng.below(pages as u64) as u32;
        for lpa in start..(start + run).min(pages) {
            h.write(lpa);
            written += 1;
        }
    }
}
