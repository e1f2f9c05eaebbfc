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

use crate::blocks::{select_victim, FreeBlocks};
use crate::config::{Config, Layout, VictimPolicy};
use crate::error::{Error, Result};
use crate::ftl::{Ftl, MemoryBreakdown};
use crate::nand::{Cause, Flash, Oob, Ppn, NONE};

/// An open block and the next page to program in it.
#[derive(Clone, Copy, Debug)]
struct OpenBlock {
    block: u32,
    next: u32,
}

impl OpenBlock {
    const CLOSED: OpenBlock = OpenBlock {
        block: NONE,
        next: 0,
    };
}

pub struct PageFtl {
    l2p: Vec<Ppn>,
    free: FreeBlocks,
    host_open: Vec<OpenBlock>,
    gc_open: Vec<OpenBlock>,
    next_unit: u32,
    layout: Layout,
    policy: VictimPolicy,
    soft_free_blocks: usize,
    hard_free_blocks: usize,
}

/// Free blocks a unit keeps for garbage collection: host writes never take the last one,
/// so relocation always has somewhere to go.
const GC_RESERVE_BLOCKS: usize = 1;

/// Free-block counts for the GC thresholds of one unit: the hard threshold is at least the
/// reserve, the soft one above it.
pub fn gc_thresholds(cfg: &Config, layout: &Layout) -> (usize, usize) {
    let blocks = layout.blocks_per_unit as f64;
    let hard = ((cfg.gc.hard_threshold * blocks).ceil() as usize).max(GC_RESERVE_BLOCKS);
    let soft = ((cfg.gc.threshold * blocks).ceil() as usize).max(hard + 1);
    (soft, hard)
}

impl PageFtl {
    pub fn new(cfg: &Config, layout: &Layout) -> Self {
        let (soft_free_blocks, hard_free_blocks) = gc_thresholds(cfg, layout);
        PageFtl {
            l2p: vec![NONE; layout.logical_pages as usize],
            free: FreeBlocks::all(layout),
            host_open: vec![OpenBlock::CLOSED; layout.units as usize],
            gc_open: vec![OpenBlock::CLOSED; layout.units as usize],
            next_unit: 0,
            layout: *layout,
            policy: cfg.gc.policy,
            soft_free_blocks,
            hard_free_blocks,
        }
    }

    /// The next free page for a host write, trying every unit once in round-robin order.
    fn allocate(&mut self, flash: &mut Flash) -> Result<Ppn> {
        for _ in 0..self.layout.units {
            let unit = self.next_unit;
            self.next_unit = (unit + 1) % self.layout.units;
            if let Some(ppn) = self.host_page(unit, flash)? {
                return Ok(ppn);
            }
        }
        Err(Error::DeviceFull {
            message: "every parallel unit is out of free blocks and holds no block with an invalid page; \
                      the logical data fills the device (raise ftl.over_provisioning)"
                .into(),
        })
    }

    fn host_page(&mut self, unit: u32, flash: &mut Flash) -> Result<Option<Ppn>> {
        let open = self.host_open[unit as usize];
        if open.block != NONE && open.next < self.layout.pages_per_block {
            self.host_open[unit as usize].next += 1;
            return Ok(Some(flash.first_page(open.block) + open.next));
        }
        self.host_open[unit as usize] = OpenBlock::CLOSED;
        if self.free.count(unit) < self.soft_free_blocks {
            self.reclaim(unit, flash)?;
        }
        while self.free.count(unit) <= self.hard_free_blocks {
            if !self.reclaim(unit, flash)? {
                break;
            }
        }
        // Host writes after foreground GC wait for it.
        flash.chain();
        if self.free.count(unit) <= GC_RESERVE_BLOCKS {
            return Ok(None);
        }
        let Some(block) = self.free.pop(unit) else {
            return Ok(None);
        };
        self.host_open[unit as usize] = OpenBlock { block, next: 1 };
        Ok(Some(flash.first_page(block)))
    }

    /// The next page of the unit's GC block, opening a free block (the reserve included)
    /// when it is full.
    fn gc_page(&mut self, unit: u32, flash: &Flash) -> Result<Ppn> {
        let open = &mut self.gc_open[unit as usize];
        if open.block == NONE || open.next == self.layout.pages_per_block {
            let block = self.free.pop(unit).ok_or_else(|| Error::DeviceFull {
                message: format!(
                    "parallel unit {unit} has no free block left for garbage collection"
                ),
            })?;
            *open = OpenBlock { block, next: 0 };
        }
        let ppn = flash.first_page(open.block) + open.next;
        open.next += 1;
        Ok(ppn)
    }

    /// Reclaims one victim block of `unit`; false if no block has an invalid page.
    fn reclaim(&mut self, unit: u32, flash: &mut Flash) -> Result<bool> {
        let exclude = [
            self.host_open[unit as usize].block,
            self.gc_open[unit as usize].block,
        ];
        let Some(victim) = select_victim(flash, unit, self.policy, &exclude) else {
            return Ok(false);
        };
        let first = flash.first_page(victim);
        let mut moved = 0;
        for ppn in first..first + self.layout.pages_per_block {
            if !flash.is_valid(ppn) {
                continue;
            }
            let dst = self.gc_page(unit, flash)?;
            let oob = flash.copy(ppn, dst, Cause::Gc)?;
            flash.invalidate(ppn)?;
            self.l2p[oob.lpa as usize] = dst;
            moved += 1;
        }
        flash.chain();
        flash.erase(victim, Cause::Gc)?;
        self.free.push(&self.layout, victim);
        flash.stats.gc_invocations += 1;
        flash.stats.gc_pages_moved += moved;
        Ok(true)
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
    fn write(&mut self, lpa: u32, seq: u32, flash: &mut Flash) -> Result<()> {
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

    fn memory(&self, out: &mut MemoryBreakdown) {
        let layout = &self.layout;
        out.push(("l2p", layout.logical_pages * layout.ppa_entry_bytes()));
        out.push(("valid_bitmap", layout.physical_pages.div_ceil(8)));
        // Valid-page count and erase count per block, 4 bytes each (plus a 4-byte
        // last-modified stamp with cost-benefit).
        let per_block = if self.policy == VictimPolicy::CostBenefit {
            12
        } else {
            8
        };
        out.push(("block_counters", layout.total_blocks as u64 * per_block));
    }
}
