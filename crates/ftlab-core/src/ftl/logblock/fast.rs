//! FAST, fully-associative sector translation (Lee, Park, Chung, Lee, Park, Song, ACM
//! Transactions on Embedded Computing Systems 6(3), 2007; FTL-algorithms spec section 4.2,
//! after FlashSim's `fast.c`).
//!
//! The log area is one sequential (SW) log block and N-1 random (RW) log blocks shared by
//! every logical block. A write whose data-block page is still erased goes there. A write at
//! page offset 0 starts a new sequential run: the SW log is merged first (switch when full,
//! partial merge when it holds a prefix) and takes the write for its logical block; writes
//! that continue that run in order append to it. A write of the SW log's logical block out
//! of order closes the run (switch or partial merge; FlashSim does a full merge when the
//! write goes back, which costs more and buys nothing) and goes to the RW logs, like every
//! other write: appended to the current RW log; when it is full, the next RW log in
//! round-robin order (the oldest) is the victim and every logical block with a valid page in
//! it is fully merged (up to N of them: FAST's long worst-case merges), or, for the SW log's
//! logical block, the SW log is partially merged instead. Reads find the newest copy without
//! scanning the log blocks (see the machinery's notes).
//!
//! DRAM (by bits): the block map, and per log block its table entry, a page map of absolute
//! logical page numbers and a valid bitmap; the SW log's logical block number.

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob};
use crate::error::Result;
use crate::ftl::logblock::{
    pool_size, Core, CoreOptions, LogMemory, PoolKeys, VictimOrder, Widths,
};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use crate::units;
use serde::{Deserialize, Serialize};

/// The `[fast]` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FastConfig {
    /// Log blocks in the pool, the SW log included (0: as many as `log_dram_bytes` holds,
    /// else every spare block).
    pub log_blocks: u32,
    /// DRAM the log blocks' maps may use (0: unused).
    #[serde(with = "units::bytes")]
    pub log_dram_bytes: u64,
}

pub struct Fast {
    core: Core,
    mem: LogMemory,
    widths: Widths,
    /// The RW log being filled.
    current: u32,
}

impl Scheme for Fast {
    const NAME: &'static str = "fast";
    const DESCRIPTION: &'static str =
        "FAST (TECS 2007): log-block hybrid, one sequential + fully associative random log blocks";
    type Section = FastConfig;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c = Self::section(cfg)?;
        let widths = Widths::new(layout);
        let mem = LogMemory {
            entry_bits: widths.lpn_bits(),
            lbns_per_log: 0,
            extra_bits_per_log: 0,
        };
        let keys = PoolKeys {
            log_blocks: c.log_blocks,
            log_dram_bytes: c.log_dram_bytes,
        };
        // The SW log's owner costs one LBN for the whole pool: negligible in the sizing.
        let logs = pool_size(Self::NAME, &keys, layout, mem.bits_per_log(&widths), 2)?;
        let core = Core::new(
            cfg,
            layout,
            CoreOptions {
                logs,
                sequential_logs: 1,
                max_assoc: 0,
                victim_order: VictimOrder::Fifo,
                fill_cause: Cause::MergePartial,
                fills_are_merge: false,
            },
        )?;
        Ok(Fast {
            core,
            mem,
            widths,
            current: 1,
        })
    }
}

impl Ftl for Fast {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        self.core.read(lpa, flash)
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let core = &mut self.core;
        if core.write_in_place(lpa, seq, flash)? || core.sequential_write(lpa, seq, flash)? {
            return Ok(());
        }
        if core.slots[self.current as usize].top >= core.ppb {
            // The next RW log in round-robin order; if it is in use it is the oldest: merge.
            let next = self.current + 1;
            self.current = if next == core.logs() { 1 } else { next };
            if !core.slots[self.current as usize].is_free() {
                core.reclaim(self.current, flash)?;
            }
        }
        core.append(self.current, lpa, seq, flash)
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        self.core.trim(lpa, flash)
    }

    /// The machinery is rebuilt ([`Core::recover`]); the RW log being filled is the one
    /// written last.
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        self.core.recover(found, flash)?;
        let core = &self.core;
        self.current = (1..core.logs())
            .filter(|&s| !core.slots[s as usize].is_free())
            .max_by_key(|&s| core.slots[s as usize].stamp)
            .unwrap_or(1);
        Ok(())
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        self.mem
            .breakdown(&self.widths, self.core.logs() as u64, out);
        out.push(("sequential_log_owner", self.widths.lbn_bits().div_ceil(8)));
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        self.core.counters(out);
    }

    fn reset_counters(&mut self) {
        self.core.reset_counters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::logblock::tests::{churn, runs, Harness, HasCore};

    impl HasCore for Fast {
        fn core(&self) -> &Core {
            &self.core
        }
    }

    #[test]
    fn a_sequential_rewrite_goes_through_the_sw_log_and_is_switched() {
        let mut h = Harness::<Fast>::new(&["fast.log_blocks=3"]);
        h.fill();
        let ppb = h.ppb();
        for lbn in [2, 5] {
            for o in 0..ppb {
                h.write(lbn * ppb + o);
            }
        }
        h.check_all();
        let c = h.counters();
        // Block 2's full SW log is switched when block 5's run starts.
        assert_eq!(c["merges_switch"], 1.0, "{c:?}");
        assert_eq!(c["log_writes"], 2.0 * ppb as f64);
        assert_eq!(c["merges_full"], 0.0);
    }

    #[test]
    fn a_victim_is_fully_merged_for_every_logical_block_it_holds() {
        let mut h = Harness::<Fast>::new(&["fast.log_blocks=3"]);
        h.fill();
        churn(&mut h, 300, 3);
        h.check_all();
        let c = h.counters();
        assert!(c["merges_full"] > c["merge_ops"], "{c:?}");
        // Random victims hold pages of many logical blocks.
        let many: f64 = (4..=16)
            .map(|a| c[format!("assoc_at_merge.{a:02}").as_str()])
            .sum();
        assert!(many > 0.0, "{c:?}");
    }

    #[test]
    fn mixed_runs_and_trims_keep_every_page() {
        let mut h = Harness::<Fast>::new(&["fast.log_blocks=4"]);
        runs(&mut h, 600, 20, 5);
        for lpa in (0..h.logical_pages()).step_by(7) {
            h.trim(lpa);
        }
        churn(&mut h, 300, 9);
        h.check_all();
    }
}
