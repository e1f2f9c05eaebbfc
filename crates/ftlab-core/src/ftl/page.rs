//! Page-level FTL (PFTL), the baseline every memory-efficient scheme is measured against.
//!
//! The whole logical-to-physical table lives in DRAM. Writes go out of place to the open
//! block of the next parallel unit in round-robin order (channel first), so consecutive
//! writes spread over channels and dies. Each unit garbage-collects its own blocks
//! (FTL-algorithms spec section 2): when it opens a block with fewer free blocks than
//! `gc.threshold` it reclaims one victim, and at or below `gc.hard_threshold` it reclaims
//! until it is above again; victims are chosen greedily or by cost-benefit, and their valid
//! pages move to the unit's GC block. The reverse map is the OOB's logical page address, as
//! on a real device, so DRAM holds the table, a valid bitmap and per-block counters.
//!
//! `page.stripe_pages` (`[page]`) writes that many consecutive host pages to one unit
//! before moving on: a block's worth keeps a sequential run in one block, as an FTL with a
//! single active block does (GC then finds runs invalidated whole), at the cost of the
//! die parallelism of sequential I/O.

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob, Ppn, NONE};
use crate::error::{Error, Result};
use crate::ftl::kit::alloc::PageAllocator;
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use serde::{Deserialize, Serialize};

/// The `[page]` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PageConfig {
    /// Consecutive host pages written to one parallel unit before the next (0 or 1: page
    /// by page round-robin; at most a block).
    pub stripe_pages: u32,
}

pub use crate::ftl::kit::alloc::gc_thresholds;

pub struct PageFtl {
    l2p: Vec<Ppn>,
    alloc: PageAllocator,
    layout: Layout,
}

impl Scheme for PageFtl {
    const NAME: &'static str = "page";
    const DESCRIPTION: &'static str =
        "page-level FTL (PFTL): the whole L2P table in DRAM, greedy or cost-benefit GC";
    type Section = PageConfig;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c = Self::section(cfg)?;
        if c.stripe_pages > layout.pages_per_block {
            return Err(Error::config(
                "page.stripe_pages",
                format!(
                    "{} is more than a block ({} pages)",
                    c.stripe_pages, layout.pages_per_block
                ),
            ));
        }
        let mut alloc = PageAllocator::new(cfg, layout, false);
        alloc.set_host_stripe(c.stripe_pages);
        Ok(PageFtl {
            l2p: vec![NONE; layout.logical_pages as usize],
            alloc,
            layout: *layout,
        })
    }
}

impl PageFtl {
    /// The next free page for a host write; pages GC moved meanwhile are remapped.
    #[inline]
    fn allocate(&mut self, flash: &mut Flash) -> Result<Ppn> {
        let ppn = self.alloc.host_page(flash)?;
        self.apply_moves();
        Ok(ppn)
    }

    #[inline]
    fn apply_moves(&mut self) {
        if self.alloc.has_moves() {
            let moves = self.alloc.take_moves();
            for m in &moves {
                self.l2p[m.key as usize] = m.to;
            }
            self.alloc.recycle_moves(moves);
        }
    }
}

impl Ftl for PageFtl {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        let ppn = self.l2p[lpa as usize];
        if ppn == NONE {
            return Ok(None);
        }
        Ok(Some(flash.read(ppn, Cause::Host)?))
    }

    #[inline]
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let old = self.l2p[lpa as usize];
        if old != NONE {
            // Invalidate first so that GC triggered by this write sees the stale copy.
            flash.invalidate(old)?;
            self.l2p[lpa as usize] = NONE;
        }
        let ppn = self.allocate(flash)?;
        flash.program(ppn, Oob { lpa, seq }, &[], Cause::Host)?;
        self.l2p[lpa as usize] = ppn;
        Ok(())
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let old = self.l2p[lpa as usize];
        if old != NONE {
            flash.invalidate(old)?;
            self.l2p[lpa as usize] = NONE;
        }
        Ok(())
    }

    #[inline(always)]
    fn idle(&mut self, flash: &mut Flash) -> Result<()> {
        self.alloc.idle_gc(flash)?;
        self.apply_moves();
        Ok(())
    }

    #[inline]
    fn has_idle_work(&mut self) -> bool {
        self.alloc.has_idle_work()
    }

    fn background_gc(&self) -> bool {
        self.alloc.background_gc()
    }

    fn slc_cache(&self) -> bool {
        self.alloc.has_slc_cache()
    }

    fn faults(&self) -> bool {
        self.alloc.has_faults()
    }

    /// The table is the OOB scan's; the allocator is rebuilt around it.
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        crate::device::recovery::revalidate_live(found, flash)?;
        self.l2p.copy_from_slice(&found.live);
        self.alloc.recover(flash)?;
        self.apply_moves();
        Ok(())
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        let layout = &self.layout;
        out.push(("l2p", layout.logical_pages * layout.ppa_entry_bytes()));
        self.alloc.memory(out);
    }
}
