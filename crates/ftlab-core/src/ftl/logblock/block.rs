//! Block-level FTL (FTL-algorithms spec section 3): the whole map is one physical block per
//! logical block, N times smaller than a page-level table.
//!
//! A page is written in place, at its offset in its logical block's data block, while that
//! page is still erased and programmable (the program order permitting). An overwrite is a
//! copy-merge: a fresh block receives the valid pages below the written offset, the new
//! page at its offset, and the valid pages above it, and replaces the old block, which is
//! erased: (valid - 1) copies, one program, one erase. The copies above the written offset
//! are made when the new block is closed, not at once: while it is open (a *replacement
//! block*) further writes of its logical block at or above its top go straight to their
//! offsets, so that a sequential rewrite of a whole block costs no copy at all (the spec's
//! "write the new block, then erase the old") and a random overwrite costs the spec's
//! (valid - 1) copies. A replacement block is closed when a write of its logical block goes
//! below its top (then a new copy-merge starts), when it is full, or when another logical
//! block needs a replacement and `block.open_blocks` are open (the least recently written
//! is closed). A close that copied nothing is a switch merge, one that only copied the pages
//! above the first write a partial merge, and a copy-merge with pages copied below it a
//! full merge (cause `merge_full` for all its copies).
//!
//! DRAM (by bits): the block map, and per open replacement block its logical block,
//! physical block and top.

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob, NONE};
use crate::error::{Error, Result};
use crate::ftl::logblock::{bits_for, max_log_blocks, Core, CoreOptions, VictimOrder, Widths};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use serde::{Deserialize, Serialize};

/// The `[block]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BlockConfig {
    /// Replacement blocks open at once (logical blocks being rewritten).
    pub open_blocks: u32,
}

impl Default for BlockConfig {
    fn default() -> Self {
        BlockConfig { open_blocks: 4 }
    }
}

pub struct BlockFtl {
    core: Core,
    widths: Widths,
}

impl Scheme for BlockFtl {
    const NAME: &'static str = "block";
    const DESCRIPTION: &'static str =
        "block-level FTL: one physical block per logical block, overwrite = copy-merge";
    type Section = BlockConfig;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c = Self::section(cfg)?;
        let max = max_log_blocks(layout);
        if c.open_blocks == 0 || c.open_blocks as u64 > max {
            return Err(Error::config(
                "block.open_blocks",
                format!(
                    "{} is not between 1 and the {max} spare blocks this geometry and \
                     ftl.over_provisioning leave",
                    c.open_blocks
                ),
            ));
        }
        let core = Core::new(
            cfg,
            layout,
            CoreOptions {
                logs: c.open_blocks,
                sequential_logs: 0,
                max_assoc: 1,
                victim_order: VictimOrder::Lru,
                fill_cause: Cause::MergeFull,
                fills_are_merge: true,
            },
        )?;
        Ok(BlockFtl {
            core,
            widths: Widths::new(layout),
        })
    }
}

impl Ftl for BlockFtl {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        self.core.read(lpa, flash)
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let core = &mut self.core;
        let (lbn, off) = core.split(lpa);
        let open = core.serial_of[lbn as usize];
        if open != NONE {
            if off >= core.slots[open as usize].top {
                core.place_serial(open, lpa, seq, flash)?;
                if core.slots[open as usize].top >= core.ppb {
                    core.reclaim(open, flash)?;
                }
                return Ok(());
            }
            // Below its top: close it (the rest of its copy-merge), then start another.
            core.reclaim(open, flash)?;
        } else if core.write_in_place(lpa, seq, flash)? {
            return Ok(());
        }
        let s = match core.free_slot() {
            Some(s) => s,
            None => {
                let v = core
                    .lru_victim()
                    .expect("open replacement blocks are in use");
                core.reclaim(v, flash)?;
                v
            }
        };
        // The copy-merge's head: the valid pages below the write, then the write.
        core.place_serial(s, lpa, seq, flash)?;
        if core.slots[s as usize].top >= core.ppb {
            core.reclaim(s, flash)?;
        }
        Ok(())
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
        let w = &self.widths;
        out.push(("block_map", w.block_map_bytes()));
        out.push(("free_block_bitmap", w.free_bitmap_bytes()));
        let entry = w.lbn_bits() + w.pbn_bits() + bits_for(w.ppb);
        out.push((
            "replacement_table",
            (self.core.logs() as u64 * entry).div_ceil(8),
        ));
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

    impl HasCore for BlockFtl {
        fn core(&self) -> &Core {
            &self.core
        }
    }

    #[test]
    fn an_overwrite_copies_every_other_valid_page_once() {
        let mut h = Harness::<BlockFtl>::new(&["block.open_blocks=1"]);
        h.fill();
        let ppb = h.ppb();
        h.write(3 * ppb + 5);
        h.write(7 * ppb); // closes block 3's replacement
        h.check_all();
        let c = h.counters();
        assert_eq!(c["merges_full"], 1.0, "{c:?}");
        assert_eq!(c["merge_pages_full"], (ppb - 1) as f64);
        assert_eq!(h.flash.stats.erases[Cause::MergeFull as usize], 1);
    }

    #[test]
    fn a_sequential_rewrite_costs_no_copy() {
        let mut h = Harness::<BlockFtl>::new(&[]);
        h.fill();
        let ppb = h.ppb();
        for lbn in 0..4 {
            for o in 0..ppb {
                h.write(lbn * ppb + o);
            }
        }
        h.check_all();
        let c = h.counters();
        assert_eq!(c["merges_switch"], 4.0, "{c:?}");
        assert_eq!(c["merge_pages_full"] + c["merge_pages_partial"], 0.0);
    }

    #[test]
    fn random_and_sequential_writes_keep_every_page_in_every_program_order() {
        for order in ["sequential", "ascending", "any"] {
            let set = format!("nand.program_order=\"{order}\"");
            let mut h = Harness::<BlockFtl>::new(&[&set]);
            churn(&mut h, 300, 41);
            runs(&mut h, 300, 10, 42);
            for lpa in (0..h.logical_pages()).step_by(5) {
                h.trim(lpa);
            }
            churn(&mut h, 200, 43);
            h.check_all();
            let c = h.counters();
            if order == "sequential" {
                assert!(c["filler_pages"] > 0.0, "{order}");
            } else {
                assert_eq!(c["filler_pages"], 0.0, "{order}");
            }
        }
    }
}
