//! The pseudo-SLC write cache of the shared page allocator (`[slc]`): host writes go to
//! blocks programmed one bit per cell ([`crate::device::slc`]) while the cache has room,
//! and the data is folded into native (TLC) blocks later.
//!
//! Each parallel unit has a static region (blocks in SLC mode for good, taken out of the
//! free pool at start) and may borrow free blocks as a dynamic region, up to its limit,
//! while it has more free blocks than GC's soft threshold asks for. Host pages go round-
//! robin over the units' open SLC blocks, as the host stream goes over its open blocks. A
//! filled SLC block waits to be folded, oldest first: its valid pages are copied into the
//! unit's host (TLC) block and it is erased ([`crate::device::nand::Cause::Fold`]); a
//! static block then returns to the static region, a dynamic one to the free pool, in
//! native mode. Folding happens in idle time (a gap before the next request in which the
//! unit's die has nothing else to do); a host write that finds the cache full on the unit
//! it is to go to either goes to the unit's native block (`slc.when_full = "bypass"`) or
//! waits while the unit's oldest SLC block is folded in the foreground (`"fold"`). GC never
//! takes an SLC block as its victim.
//!
//! The allocator holds the cache's state here and does the moving (`alloc.rs`), so that
//! every scheme built on it (page, the demand-cached schemes, LeaFTL, external schemes)
//! runs on the cache unchanged.

use crate::device::geometry::Layout;
use crate::device::nand::NONE;
use crate::device::slc::{SlcConfig, WhenFull};
use std::collections::VecDeque;

/// The cache's state (see the module docs).
pub(crate) struct SlcCache {
    /// Pages an SLC block holds.
    pub pages: u32,
    /// Dynamic blocks a unit may have in SLC mode at once.
    pub dynamic_limit: u32,
    /// A write finding its unit's cache full folds a block in the foreground (else it
    /// bypasses the cache).
    pub fold_when_full: bool,
    /// Per unit: the open SLC block (`NONE`: none) and its next page.
    pub open: Vec<(u32, u32)>,
    /// Per unit: erased blocks of the static region.
    pub static_free: Vec<VecDeque<u32>>,
    /// Per unit: filled SLC blocks waiting to be folded, oldest first.
    pub full: Vec<VecDeque<u32>>,
    /// Filled blocks waiting over all units.
    pub full_blocks: usize,
    /// Per unit: dynamic blocks in SLC mode (open or full).
    pub dynamic_used: Vec<u32>,
    /// Per block: in the static region.
    pub is_static: Vec<bool>,
    /// Round-robin position of the next host page.
    pub next: u32,
}

impl SlcCache {
    /// The cache of a fresh device, if `[slc]` turns it on; the static blocks (the last ones
    /// of each unit) are for the caller to take out of its free pool.
    pub fn new(cfg: &SlcConfig, layout: &Layout) -> Option<SlcCache> {
        if !cfg.enabled() {
            return None;
        }
        let units = layout.units as usize;
        let (fixed, dynamic) = cfg.blocks(layout.blocks_per_unit);
        let mut is_static = vec![false; layout.total_blocks as usize];
        let static_free = (0..layout.units)
            .map(|u| {
                let end = (u + 1) * layout.blocks_per_unit;
                let blocks: VecDeque<u32> = (end - fixed..end).collect();
                blocks.iter().for_each(|&b| is_static[b as usize] = true);
                blocks
            })
            .collect();
        Some(SlcCache {
            pages: cfg.pages(layout.pages_per_block),
            dynamic_limit: dynamic,
            fold_when_full: cfg.when_full == WhenFull::Fold,
            open: vec![(NONE, 0); units],
            static_free,
            full: vec![VecDeque::new(); units],
            full_blocks: 0,
            dynamic_used: vec![0; units],
            is_static,
            next: 0,
        })
    }

    /// The block and page offset of the next page of `unit`'s open SLC block, if it has
    /// room; a block filled by it joins the blocks waiting to be folded.
    #[inline]
    pub fn next_in_open(&mut self, unit: u32) -> Option<(u32, u32)> {
        let (block, next) = &mut self.open[unit as usize];
        if *block == NONE || *next == self.pages {
            return None;
        }
        let offset = *next;
        *next += 1;
        if *next == self.pages {
            self.full[unit as usize].push_back(*block);
            self.full_blocks += 1;
        }
        Some((*block, offset))
    }
}
