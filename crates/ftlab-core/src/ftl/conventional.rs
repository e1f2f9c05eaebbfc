//! Conventional zones of a zoned device (`zns.conventional_zones`): the first zones of the
//! logical space written at random, as a conventional disk is, page-mapped by the device
//! with a small garbage collector of its own.
//!
//! The NVMe ZNS command set itself defines only sequential-write-required zones; Linux's
//! zoned block device model (ZBC/ZAC drives, `null_blk`'s `zone_nr_conv`) has conventional
//! zones at the start of the LBA space, and F2FS's zoned mode puts its metadata there (on
//! a ZNS SSD, on a conventional namespace or device beside the zoned one: the same thing to
//! the flash). Chosen here, as the standard leaves it to the drive:
//!
//! - **Blocks.** The area owns, in every parallel unit, the blocks the sequential zones do
//!   not need: its own zones' share and the device's over-provisioning, which no
//!   sequential zone uses (they have no device GC). At least [`MIN_SPARE_BLOCKS`] per unit
//!   beyond its data, or the device is refused.
//! - **Placement.** Writes go round-robin over the units (the stripe order), each to its
//!   unit's open block.
//! - **GC.** Per unit, greedy (fewest valid pages), when the unit opens a block with at most
//!   one free block left, until two are free; copies go to the unit's open block and are
//!   counted as GC (`metrics.waf` includes them).
//!
//! DRAM: a 4-byte page map entry per writable page of the conventional zones
//! (`conventional_map`) and a 4-byte valid count per block of the area
//! (`conventional_valid_counts`).

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob, Ppn, NONE};
use crate::error::{Error, Result};
use crate::ftl::MemoryBreakdown;
use std::collections::VecDeque;

/// Free blocks each unit of the area keeps beyond its share of the data: one for the host's
/// next open block, one for GC to copy into.
pub const MIN_SPARE_BLOCKS: u32 = 2;

pub struct Conventional {
    layout: Layout,
    /// Logical pages of one zone, and the writable ones (its capacity).
    zone_size: u32,
    zone_capacity: u32,
    /// Page map over the conventional zones' logical pages (NONE: unmapped).
    l2p: Vec<Ppn>,
    /// Valid pages per block of the device (only the area's blocks are used).
    valid: Vec<u32>,
    /// Per unit: the area's blocks, its free ones (oldest freed first) and its open block
    /// (block, next page).
    blocks: Vec<Vec<u32>>,
    free: Vec<VecDeque<u32>>,
    open: Vec<(u32, u32)>,
    /// Units in the stripe order, and the next one.
    order: Vec<u32>,
    next: usize,
    host_pages: u64,
    gc_pages: u64,
    gc_victims: u64,
}

impl Conventional {
    /// An area of `zones` zones of `zone_size` logical pages, `zone_capacity` of them
    /// writable, on `blocks[unit]` (the blocks each unit gives it, all erased).
    pub fn new(
        layout: &Layout,
        zones: u32,
        zone_size: u32,
        zone_capacity: u32,
        blocks: Vec<Vec<u32>>,
    ) -> Result<Self> {
        let units = layout.units;
        let ppb = layout.pages_per_block as u64;
        let data_pages = zones as u64 * zone_capacity as u64;
        // Round-robin placement spreads the data evenly: each unit holds its share.
        let share = data_pages.div_ceil(units as u64).div_ceil(ppb) as u32;
        for (unit, b) in blocks.iter().enumerate() {
            let have = b.len() as u32;
            if have < share + MIN_SPARE_BLOCKS {
                return Err(Error::config(
                    "zns.conventional_zones",
                    format!(
                        "{zones} conventional zone(s) hold {share} blocks of each parallel unit \
                         and their GC needs {MIN_SPARE_BLOCKS} more; unit {unit} has {have} \
                         left beside the sequential zones: use fewer conventional zones or \
                         raise ftl.over_provisioning"
                    ),
                ));
            }
        }
        Ok(Conventional {
            layout: *layout,
            zone_size,
            zone_capacity,
            l2p: vec![NONE; zones as usize * zone_size as usize],
            valid: vec![0; layout.total_blocks as usize],
            free: blocks.iter().map(|b| b.iter().copied().collect()).collect(),
            blocks,
            open: vec![(NONE, 0); units as usize],
            order: (0..units).map(|k| layout.stripe_unit(k)).collect(),
            next: 0,
            host_pages: 0,
            gc_pages: 0,
            gc_victims: 0,
        })
    }

    /// Logical pages the conventional zones span (the sequential zones start there).
    #[inline]
    pub fn pages(&self) -> u32 {
        self.l2p.len() as u32
    }

    /// Whether `lpa` (a page of the conventional zones) is within its zone's capacity.
    #[inline]
    pub fn writable(&self, lpa: u32) -> bool {
        lpa % self.zone_size < self.zone_capacity
    }

    /// The next page of `unit`'s open block, opening one (after GC when few are free, unless
    /// GC itself asks) when it is full.
    fn page(&mut self, unit: u32, collect: bool, flash: &mut Flash) -> Result<Ppn> {
        let u = unit as usize;
        let (block, next) = self.open[u];
        if block != NONE && next < self.layout.pages_per_block {
            self.open[u].1 += 1;
            return Ok(flash.first_page(block) + next);
        }
        if collect {
            self.collect(unit, flash)?;
            // GC's copies may have opened a block with room left: the host writes there.
            let (block, next) = self.open[u];
            if block != NONE && next < self.layout.pages_per_block {
                self.open[u].1 += 1;
                return Ok(flash.first_page(block) + next);
            }
        }
        let block = self.free[u].pop_front().ok_or_else(|| Error::DeviceFull {
            message: format!(
                "zns: the conventional zones' blocks of unit {unit} are full of valid \
                     pages (raise ftl.over_provisioning)"
            ),
        })?;
        self.open[u] = (block, 1);
        Ok(flash.first_page(block))
    }

    /// GC in `unit`: victims until [`MIN_SPARE_BLOCKS`] blocks are free.
    fn collect(&mut self, unit: u32, flash: &mut Flash) -> Result<()> {
        let u = unit as usize;
        // Each victim frees a block and its copies take less than one: progress is certain
        // while victims have an invalid page; the bound only guards that.
        let mut rounds = self.blocks[u].len();
        while self.free[u].len() < MIN_SPARE_BLOCKS as usize && rounds > 0 {
            rounds -= 1;
            self.reclaim_one(unit, flash)?;
        }
        Ok(())
    }

    /// Collects the closed block of `unit` with the fewest valid pages.
    fn reclaim_one(&mut self, unit: u32, flash: &mut Flash) -> Result<()> {
        let u = unit as usize;
        let ppb = self.layout.pages_per_block;
        let open = self.open[u].0;
        let victim = self.blocks[u]
            .iter()
            .copied()
            .filter(|&b| b != open && !self.free[u].contains(&b))
            .min_by_key(|&b| self.valid[b as usize]);
        let Some(victim) = victim.filter(|&b| self.valid[b as usize] < ppb) else {
            return Err(Error::DeviceFull {
                message: format!(
                    "zns: the conventional zones' blocks of unit {unit} have no invalid page \
                     to collect (raise ftl.over_provisioning)"
                ),
            });
        };
        flash.stats.gc_invocations += 1;
        self.gc_victims += 1;
        let start = flash.first_page(victim);
        for ppn in start..start + ppb {
            if !flash.is_valid(ppn) {
                continue;
            }
            let oob = flash.read(ppn, Cause::Gc)?;
            let to = self.page(unit, false, flash)?;
            flash.invalidate(ppn)?;
            flash.program(to, oob, &[], Cause::Gc)?;
            self.l2p[oob.lpa as usize] = to;
            self.valid[(to / ppb) as usize] += 1;
            self.gc_pages += 1;
        }
        flash.erase(victim, Cause::Gc)?;
        self.valid[victim as usize] = 0;
        self.free[u].push_back(victim);
        Ok(())
    }

    /// Drops the current copy of `lpa`.
    #[inline]
    fn unmap(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let old = self.l2p[lpa as usize];
        if old != NONE {
            flash.invalidate(old)?;
            self.valid[(old / self.layout.pages_per_block) as usize] -= 1;
            self.l2p[lpa as usize] = NONE;
        }
        Ok(())
    }

    #[inline]
    pub fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        match self.l2p[lpa as usize] {
            NONE => Ok(None),
            ppn => Ok(Some(flash.read(ppn, Cause::Host)?)),
        }
    }

    /// Writes `lpa` (within its zone's capacity: [`Conventional::writable`]).
    pub fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let unit = self.order[self.next];
        self.next = (self.next + 1) % self.order.len();
        let ppn = self.page(unit, true, flash)?;
        self.unmap(lpa, flash)?;
        flash.program(ppn, Oob { lpa, seq }, &[], Cause::Host)?;
        self.l2p[lpa as usize] = ppn;
        self.valid[(ppn / self.layout.pages_per_block) as usize] += 1;
        self.host_pages += 1;
        Ok(())
    }

    pub fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        self.unmap(lpa, flash)
    }

    pub fn memory(&self, out: &mut MemoryBreakdown) {
        let zones = self.l2p.len() as u64 / self.zone_size as u64;
        out.push(("conventional_map", zones * self.zone_capacity as u64 * 4));
        let blocks: usize = self.blocks.iter().map(Vec::len).sum();
        out.push(("conventional_valid_counts", blocks as u64 * 4));
    }

    pub fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("conventional_host_pages", self.host_pages as f64));
        out.push(("conventional_gc_pages", self.gc_pages as f64));
        out.push(("conventional_gc_victims", self.gc_victims as f64));
        let blocks: usize = self.blocks.iter().map(Vec::len).sum();
        out.push(("conventional_blocks", blocks as f64));
    }

    pub fn reset_counters(&mut self) {
        self.host_pages = 0;
        self.gc_pages = 0;
        self.gc_victims = 0;
    }
}
