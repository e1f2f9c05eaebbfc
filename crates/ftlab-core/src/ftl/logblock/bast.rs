//! BAST, block-associative sector translation (Kim, Kim, Noh, Min, Cho, IEEE Transactions on
//! Consumer Electronics 48(2), 2002; FTL-algorithms spec section 4.1).
//!
//! Data blocks are mapped at block level; a write whose data-block page is still erased goes
//! there, any other goes to the log block of its logical block: one log block per logical
//! block (associativity 1), pages appended in arrival order. A logical block without a log
//! block takes a free one, or the least recently written log block is merged to free one
//! (the paper's LRU; `bast.victim = "fifo"` for round-robin). A full log block is merged and
//! then serves the write again: by a switch when it holds its logical block's pages 0..N-1 in
//! order, a partial merge when it holds a prefix in order, else a full merge. Reads look up
//! the log first. Its weakness is log-block thrashing under random writes: every write to a
//! new logical block can cost a full merge of a nearly empty log block.
//!
//! DRAM (by bits): the block map (one physical block number per logical block), and per log
//! block its table entry (block number, top, flags), its owner LBN, its page table (page
//! index of each offset, with "absent") and a valid bitmap.

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob};
use crate::error::Result;
use crate::ftl::logblock::{
    bits_for, pool_size, Core, CoreOptions, LogMemory, PoolKeys, VictimOrder, Widths,
};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use crate::units;
use serde::{Deserialize, Serialize};

/// The `[bast]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BastConfig {
    /// Log blocks in the pool (0: as many as `log_dram_bytes` holds, else
    /// every spare block).
    pub log_blocks: u32,
    /// DRAM the log blocks' maps may use (0: unused).
    #[serde(with = "units::bytes")]
    pub log_dram_bytes: u64,
    /// Victim when a logical block needs a log block and none is free: `lru` (the paper)
    /// or `fifo` (round-robin).
    pub victim: VictimOrder,
}

impl Default for BastConfig {
    fn default() -> Self {
        BastConfig {
            log_blocks: 0,
            log_dram_bytes: 0,
            victim: VictimOrder::Lru,
        }
    }
}

pub struct Bast {
    core: Core,
    mem: LogMemory,
    widths: Widths,
}

impl Scheme for Bast {
    const NAME: &'static str = "bast";
    const DESCRIPTION: &'static str =
        "BAST (TCE 2002): log-block hybrid, one log block per logical block, LRU victim";
    type Section = BastConfig;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c = Self::section(cfg)?;
        let widths = Widths::new(layout);
        let mem = LogMemory {
            entry_bits: bits_for(widths.ppb),
            lbns_per_log: 1,
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
                max_assoc: 1,
                victim_order: c.victim,
                fill_cause: Cause::MergePartial,
                fills_are_merge: false,
            },
        )?;
        Ok(Bast { core, mem, widths })
    }
}

impl Ftl for Bast {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        self.core.read(lpa, flash)
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let core = &mut self.core;
        if core.write_in_place(lpa, seq, flash)? {
            return Ok(());
        }
        let (lbn, _) = core.split(lpa);
        let s = match core.log_of(lbn) {
            Some(s) if core.slots[s as usize].top < core.ppb => s,
            Some(s) => {
                // Its log block is full: merge it; the emptied slot serves the write.
                core.reclaim(s, flash)?;
                s
            }
            None => match core.free_slot() {
                Some(s) => s,
                None => {
                    let v = core
                        .lru_victim()
                        .expect("a pool without a free slot has a victim");
                    core.reclaim(v, flash)?;
                    v
                }
            },
        };
        core.append(s, lpa, seq, flash)
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
    }

    fn reset_counters(&mut self) {
        self.core.reset_counters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::logblock::tests::{churn, Harness, HasCore};

    impl HasCore for Bast {
        fn core(&self) -> &Core {
            &self.core
        }
    }

    #[test]
    fn a_log_block_written_in_order_is_switched() {
        let mut h = Harness::<Bast>::new(&["bast.log_blocks=2"]);
        h.fill();
        // Rewrite logical block 3 in order: its log block fills and is switched.
        let ppb = h.ppb();
        for o in 0..ppb {
            h.write(3 * ppb + o);
        }
        h.write(3 * ppb); // the full log block is merged before this write
        h.check_all();
        let c = h.counters();
        assert_eq!(c["merges_switch"], 1.0);
        assert_eq!(c["merges_full"], 0.0);
        assert_eq!(h.flash.stats.programs[Cause::MergeSwitch as usize], 0);
    }

    #[test]
    fn random_writes_thrash_the_log_blocks() {
        let mut h = Harness::<Bast>::new(&["bast.log_blocks=4"]);
        h.fill();
        churn(&mut h, 400, 7);
        h.check_all();
        let c = h.counters();
        // Nearly every write to a new logical block evicts a log block: full merges of
        // nearly empty log blocks, one logical block each.
        assert!(c["merges_full"] > 50.0, "{c:?}");
        assert_eq!(
            c["assoc_at_merge.01"],
            c["merge_ops"] - c["dead_log_erases"]
        );
        assert!(c["log_utilisation_at_merge"] < 0.5);
    }
}
