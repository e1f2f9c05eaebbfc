//! KRAFT, the K-associative relative-addressing FTL (Kang, Park, Kim, Lee, Kang, Yonsei
//! University; `shared/papers/kraft-log-block-ftl.txt`, FTL-algorithms spec section 4.5).
//!
//! Log blocks are shared by logical blocks as in FAST, but each may hold pages of at most K
//! (`kraft.max_associativity`) of them, and KRAFT keeps log blocks *serial* (written from
//! page 0 in offset order, for one logical block) as long as it can, so that they are
//! reclaimed by a switch (copying only what the log lacks) instead of a full merge. The
//! write path is the paper's Algorithm 1 as written:
//!
//! - A logical block with a log block associated (its pages are there): if that log block
//!   is full, it is switched if serial, else fully merged, and the write proceeds as for a
//!   logical block without one. Else a write at page offset 0 starts a new sequential run:
//!   if the log block is serial and its switch is cheap (at most `switch_max_fraction` of a
//!   block to copy), it is switched and a free log block starts a new serial run with the
//!   write; otherwise the write is appended (the log block is then no longer serial). A
//!   write above the top of a serial log block fills the gap with the pages' valid copies
//!   and goes to its own offset, keeping the block serial, when that fill is cheap (at most
//!   `fill_max_fraction` of a block to copy); otherwise it is appended.
//! - A logical block without one: the log block of lowest associativity with room takes it
//!   (balancing), among those that are not serial: a serial log block has associativity 1,
//!   the lowest of any in use, so balancing over all of them would hand every new logical
//!   block to a serial log and end its seriality at once, where the paper keeps serial logs
//!   "as much as possible" (its Algorithm 1 marks the one write that breaks seriality, line
//!   12, and its lines 19-32 mark none: L_Log is free or not serial). If even that one is at K, a victim is merged first: the most-filled serial
//!   log block (a switch), else the least recently written one (a full merge, "less
//!   recently used blocks are likely to hold fewer valid pages"), and the write goes to the
//!   freed block. A write at offset 0 to a free log block starts a serial run; at another
//!   offset, a free log block is filled from page 0 when that is cheap, so the run is
//!   serial.
//!
//! Like every log-block scheme here, a page whose data-block slot is still erased is
//! written there first (Algorithm 1 is the log path). "Serial" is kept exactly: a log block
//! stays serial while every page it holds is its logical block's page of the same offset,
//! and no newer copy of a page below its top lives elsewhere.
//!
//! **The open thresholds** (the paper says only "cheap"). `fill_max_fraction` (default
//! 1/16: 8 of 128 pages): a fill copies g pages now to keep a log block switchable; it pays
//! only if the run goes on to fill the block, and a random write that lands just above a
//! serial log's top (or at a small offset of a free log) would otherwise pay g copies for
//! nothing. 1/16 of a block covers the gaps a sequential stream leaves (a request or two
//! skipped, a stream starting a few pages into a block) and bounds the waste of a
//! mispredicted fill to 1/16 of a full merge's copies; the sweep in `ftlab reproduce kraft`
//! measures it. `switch_max_fraction` (default 1/2): switching a partly written serial log
//! when a new run starts copies the rest of its logical block now (c pages and one erase);
//! appending instead makes the log non-serial, and its later full merge copies every valid
//! page of the block (N pages, two erases). The switch is the cheaper of the two for any
//! c <= N, but it is paid by the write that starts the run: half a block bounds that stall
//! to half a full merge's copies.
//!
//! **Relative addressing** (the paper's Figure 2): each log block holds `LBN[K]`, the
//! logical blocks it is associated with, and each of its pages a pair (RI, RLSN) of
//! log2 K + log2 N bits, `LSN = LBN[RI] x N + RLSN`, instead of an absolute logical page
//! number: with the same DRAM KRAFT keeps about twice FAST's log blocks (the paper: 256
//! against 128). DRAM (by bits): the block map, and per log block its table entry, N
//! relative entries, the LBN array and a valid bitmap.

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob};
use crate::error::{Error, Result};
use crate::ftl::logblock::kast::check_k;
use crate::ftl::logblock::{
    bits_for, pool_size, Core, CoreOptions, LogMemory, PoolKeys, VictimOrder, Widths,
};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use crate::units;
use serde::{Deserialize, Serialize};

/// The `[kraft]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KraftConfig {
    /// Log blocks in the pool (0: as many as `log_dram_bytes` holds, else
    /// every spare block).
    pub log_blocks: u32,
    /// DRAM the log blocks' maps may use (0: unused): with relative addressing it holds
    /// about twice FAST's log blocks.
    #[serde(with = "units::bytes")]
    pub log_dram_bytes: u64,
    /// K: logical blocks a log block may hold pages of (the paper recommends 8 to 16).
    pub max_associativity: u32,
    /// A fill (valid pages copied into a serial log's gap to keep it serial) is "cheap"
    /// when it copies at most this share of a block.
    pub fill_max_fraction: f64,
    /// Switching a serial log when a new run starts at offset 0 is "cheap" when it copies at
    /// most this share of a block.
    pub switch_max_fraction: f64,
}

impl Default for KraftConfig {
    fn default() -> Self {
        KraftConfig {
            log_blocks: 0,
            log_dram_bytes: 0,
            max_associativity: 8,
            fill_max_fraction: 1.0 / 16.0,
            switch_max_fraction: 0.5,
        }
    }
}

/// KRAFT's own event counters.
#[derive(Clone, Debug, Default)]
struct KraftStats {
    serial_runs: u64,
    fills: u64,
    fills_refused: u64,
    early_switches: u64,
    switches_refused: u64,
    victims_serial: u64,
    victims_lru: u64,
}

pub struct Kraft {
    core: Core,
    mem: LogMemory,
    widths: Widths,
    k: u32,
    fill_max: u32,
    switch_max: u32,
    stats: KraftStats,
}

impl Scheme for Kraft {
    const NAME: &'static str = "kraft";
    const DESCRIPTION: &'static str =
        "KRAFT: K-associative log blocks kept serial (switch over full merge), relative addressing";
    type Section = KraftConfig;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c = Self::section(cfg)?;
        check_k("kraft.max_associativity", c.max_associativity, layout)?;
        for (key, v) in [
            ("kraft.fill_max_fraction", c.fill_max_fraction),
            ("kraft.switch_max_fraction", c.switch_max_fraction),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::config(
                    key,
                    format!("{v} is not a fraction in [0, 1]"),
                ));
            }
        }
        let widths = Widths::new(layout);
        let k = c.max_associativity;
        let mem = LogMemory {
            entry_bits: bits_for(k as u64 - 1) + widths.offset_bits(),
            lbns_per_log: k as u64,
            extra_bits_per_log: 0,
        };
        let keys = PoolKeys {
            log_blocks: c.log_blocks,
            log_dram_bytes: c.log_dram_bytes,
        };
        let logs = pool_size(Self::NAME, &keys, layout, mem.bits_per_log(&widths), 1)?;
        let core = Core::new(
            cfg,
            layout,
            CoreOptions {
                logs,
                sequential_logs: 0,
                max_assoc: k,
                victim_order: VictimOrder::Lru,
                fill_cause: Cause::MergePartial,
                fills_are_merge: false,
            },
        )?;
        let pages = |f: f64| (f * layout.pages_per_block as f64).floor() as u32;
        Ok(Kraft {
            core,
            mem,
            widths,
            k,
            fill_max: pages(c.fill_max_fraction),
            switch_max: pages(c.switch_max_fraction),
            stats: KraftStats::default(),
        })
    }
}

impl Kraft {
    /// Puts the write at its own offset in `s` after a fill, or appends it (Algorithm 1,
    /// lines 14-17 and 29-32).
    fn fill_or_append(&mut self, s: u32, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let (lbn, off) = self.core.split(lpa);
        let cost = self.core.fill_cost(s, lbn, off, flash);
        if cost <= self.fill_max {
            if cost > 0 {
                self.stats.fills += 1;
            }
            if self.core.slots[s as usize].is_free() {
                self.stats.serial_runs += 1;
            }
            self.core.place_serial(s, lpa, seq, flash)
        } else {
            self.stats.fills_refused += 1;
            self.core.append(s, lpa, seq, flash)
        }
    }

    /// Algorithm 1, lines 19-32: the log block of lowest associativity that is not serial,
    /// after a merge if it is at K.
    fn write_unassociated(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let core = &mut self.core;
        let s = match core.lowest_assoc_nonserial_with_room() {
            Some((s, assoc)) if assoc < self.k => s,
            _ => {
                let v = match core.most_filled_serial() {
                    Some(v) => {
                        self.stats.victims_serial += 1;
                        v
                    }
                    None => {
                        self.stats.victims_lru += 1;
                        core.lru_victim()
                            .expect("a pool at its bound has log blocks in use")
                    }
                };
                core.reclaim(v, flash)?;
                v
            }
        };
        let (_, off) = self.core.split(lpa);
        if off == 0 {
            if self.core.slots[s as usize].is_free() {
                self.stats.serial_runs += 1;
            }
            return self.core.append(s, lpa, seq, flash);
        }
        if self.core.slots[s as usize].is_free() {
            return self.fill_or_append(s, lpa, seq, flash);
        }
        self.core.append(s, lpa, seq, flash)
    }
}

impl Ftl for Kraft {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        self.core.read(lpa, flash)
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        if self.core.write_in_place(lpa, seq, flash)? {
            return Ok(());
        }
        let (lbn, off) = self.core.split(lpa);
        let Some(a) = self.core.log_of(lbn) else {
            return self.write_unassociated(lpa, seq, flash);
        };
        let slot = self.core.slots[a as usize];
        let serial = slot.serial == lbn;
        if slot.top >= self.core.ppb {
            // Lines 3-5: a full associated log block is switched if serial, else merged.
            self.core.reclaim(a, flash)?;
            return self.write_unassociated(lpa, seq, flash);
        }
        if off == 0 {
            // Lines 7-12: a new run starts.
            if serial && self.core.switch_cost(a, flash) <= self.switch_max {
                self.stats.early_switches += 1;
                self.core.reclaim(a, flash)?;
                self.stats.serial_runs += 1;
                return self.core.append(a, lpa, seq, flash);
            }
            if serial {
                self.stats.switches_refused += 1;
            }
            return self.core.append(a, lpa, seq, flash);
        }
        // Lines 14-17: keep a serial log serial when the fill is cheap.
        if serial && slot.top <= off {
            return self.fill_or_append(a, lpa, seq, flash);
        }
        self.core.append(a, lpa, seq, flash)
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        self.core.trim(lpa, flash)
    }

    /// The data-block map and the log-block pool are rebuilt from the OOB scan
    /// ([`Core::recover`]).
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        self.core.recover(found, flash)
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        self.mem
            .breakdown(&self.widths, self.core.logs() as u64, out);
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        self.core.counters(out);
        let s = &self.stats;
        out.push(("serial_runs", s.serial_runs as f64));
        out.push(("fills", s.fills as f64));
        out.push(("fills_refused", s.fills_refused as f64));
        out.push(("early_switches", s.early_switches as f64));
        out.push(("switches_refused", s.switches_refused as f64));
        out.push(("victims_serial", s.victims_serial as f64));
        out.push(("victims_lru", s.victims_lru as f64));
    }

    fn reset_counters(&mut self) {
        self.core.reset_counters();
        self.stats = KraftStats::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::logblock::tests::{churn, runs, Harness, HasCore};

    impl HasCore for Kraft {
        fn core(&self) -> &Core {
            &self.core
        }
    }

    #[test]
    fn a_run_with_a_small_gap_is_filled_and_switched() {
        // 16-page blocks: fills of up to 4 pages are cheap.
        let mut h = Harness::<Kraft>::new(&["kraft.log_blocks=4", "kraft.fill_max_fraction=0.25"]);
        h.fill();
        let ppb = h.ppb();
        // Rewrite logical block 5 in order, skipping pages 3 and 4.
        for o in (0..ppb).filter(|o| !(3..5).contains(o)) {
            h.write(5 * ppb + o);
        }
        // A run over all of block 9 in a second log block, then an overwrite in block 9: its
        // full serial log is switched (no copy), and the write, 8 valid pages above a free
        // log block's page 0, is too dear to fill: appended.
        for lpa in 9 * ppb..10 * ppb {
            h.write(lpa);
        }
        h.write(9 * ppb + 8);
        h.check_all();
        let c = h.counters();
        assert_eq!(c["fills"], 1.0, "{c:?}");
        assert_eq!(c["fill_pages"], 2.0);
        assert_eq!(c["fills_refused"], 1.0);
        assert_eq!(c["merges_full"], 0.0);
        assert!(c["merges_switch"] >= 1.0);
        assert_eq!(h.flash.stats.programs[Cause::MergeSwitch as usize], 0);
    }

    #[test]
    fn an_expensive_gap_breaks_seriality_and_costs_a_full_merge() {
        let mut h = Harness::<Kraft>::new(&[
            "kraft.log_blocks=2",
            "kraft.fill_max_fraction=0",
            "kraft.max_associativity=1",
        ]);
        h.fill();
        let ppb = h.ppb();
        h.write(2 * ppb); // serial run of block 2
        h.write(2 * ppb + 5); // gap of 4 valid pages: refused, appended (not serial)
        h.write(3 * ppb); // block 3: the other free log
        h.write(4 * ppb); // K = 1 and no free log: a victim is merged
        h.check_all();
        let c = h.counters();
        assert_eq!(c["fills_refused"], 1.0, "{c:?}");
        // Block 4 finds both log blocks at K: the serial one (block 3's) is the victim, by a
        // partial merge (its pages 1..N copied in); block 2's log, no longer serial, stays.
        assert_eq!(c["victims_serial"], 1.0);
        assert_eq!(c["merges_partial"], 1.0);
    }

    #[test]
    fn a_new_logical_block_does_not_end_a_serial_run() {
        let mut h = Harness::<Kraft>::new(&["kraft.log_blocks=3", "kraft.max_associativity=4"]);
        h.fill();
        let ppb = h.ppb();
        // Block 2 starts a serial run in one log block; block 3's overwrite at offset 5 is
        // too dear to fill (default: no gap filled above 1/16 of a block), so it takes a
        // second log block, not serial.
        h.write(2 * ppb);
        h.write(3 * ppb + 5);
        // Blocks 4 and 5 are new to the log: balancing over all log blocks would give one
        // of them block 2's serial log (associativity 1, the lowest in use); they go to
        // the non-serial ones.
        h.write(4 * ppb + 7);
        h.write(5 * ppb + 9);
        // Block 2's run goes on to fill its block: still serial, reclaimed by a switch.
        for o in 1..ppb {
            h.write(2 * ppb + o);
        }
        h.write(2 * ppb + 3);
        h.check_all();
        let c = h.counters();
        assert_eq!(c["merges_switch"], 1.0, "{c:?}");
        assert_eq!(c["merges_full"], 0.0, "{c:?}");
        assert_eq!(h.flash.stats.programs[Cause::MergeSwitch as usize], 0);
    }

    #[test]
    fn associativity_stays_within_k() {
        for k in [1, 3, 8] {
            let set = format!("kraft.max_associativity={k}");
            let mut h = Harness::<Kraft>::new(&["kraft.log_blocks=5", &set]);
            h.fill();
            churn(&mut h, 500, 31);
            runs(&mut h, 400, 20, 32);
            h.check_all();
            let c = h.counters();
            for a in (k + 1)..=16 {
                let name = format!("assoc_at_merge.{a:02}");
                assert_eq!(c[name.as_str()], 0.0, "K = {k}");
            }
        }
    }

    #[test]
    fn relative_entries_fit_twice_fast_s_log_blocks_in_the_same_dram() {
        // The KRAFT preset's device (64 GiB, 2 KiB pages, 128-page blocks).
        let cfg = crate::run::config::resolve(Some("kraft"), None, &[], &[]).unwrap();
        let layout = cfg.validate().unwrap();
        let w = Widths::new(&layout);
        let fast = LogMemory {
            entry_bits: w.lpn_bits(),
            lbns_per_log: 0,
            extra_bits_per_log: 0,
        };
        let kraft = LogMemory {
            entry_bits: bits_for(7) + w.offset_bits(),
            lbns_per_log: 8,
            extra_bits_per_log: 0,
        };
        assert_eq!(w.lpn_bits(), 25);
        assert_eq!(kraft.entry_bits, 3 + 7);
        let ratio = fast.bits_per_log(&w) as f64 / kraft.bits_per_log(&w) as f64;
        assert!(ratio > 2.0 && ratio < 2.3, "{ratio}");
    }
}
