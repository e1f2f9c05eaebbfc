//! AFTL: the device half of Application-Managed Flash (Lee, Liu, Jun, Xu, Kim and Arvind,
//! FAST 2016; FTL-algorithms spec section 11; the reference is `bdbm_drv`'s block-mapped
//! "RSD" FTL).
//!
//! The device exposes append-only segments and keeps no page map. A segment is one block
//! on every parallel unit (a superblock), its pages striped across them in the plane-first
//! stripe order: segment page `o` is page `o / units` of the segment's `o % units`-th
//! block, so that consecutive pages go to different planes, dies and channels. Logical
//! segment `s` covers logical pages `s x segment_pages ..`; the last one may be partial.
//!
//! - A write must append: logical page `lpa` is accepted only at its segment's write
//!   pointer. An overwrite (a page below the pointer) or a write ahead of it (which would
//!   leave erased pages that sequential NAND can no longer program) is refused with
//!   [`Error::Refused`] and counted (`refused_writes`); the device is unchanged and the host
//!   decides (a replay stops with the message). The first write to a segment allocates its
//!   blocks: the oldest-freed free block of each unit (`map = "block"`, as `bdbm_drv` and
//!   the paper) or a whole free superblock (`map = "segment"`).
//! - A trim invalidates the pages it covers. When trims have covered a whole segment, in
//!   page order (one trim of the segment, or several in a row), the segment is dead: its
//!   blocks are erased at once (queued as background work, counted under the trim's cause:
//!   `host_cleaning` when a host stack's cleaning issued it) and return to the free pools.
//!   Nothing is ever copied: the host cleaned the segment before trimming it.
//! - A read computes the page from the segment's blocks; a page above the write pointer or
//!   trimmed reads as unmapped.
//! - There is no device garbage collection.
//!
//! DRAM: with `map = "block"` one 4-byte block address per block of every logical segment
//! (`block_map`: the paper's AFTL figure, `B x 4 B`, Npb times smaller than a page map);
//! with `map = "segment"` one 4-byte superblock address per logical segment
//! (`segment_map`). Both keep per segment a 4-byte write pointer and a 4-byte trim cursor
//! (`segment_state`). The driver's per-page state array is simulator bookkeeping (the
//! flash's valid bits), not device DRAM.

use crate::device::blocks::FreeBlocks;
use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob, NONE};
use crate::error::{Error, Result};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// What a logical segment maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MapGranularity {
    /// Each block of a segment is mapped on its own (any free block of its unit): one
    /// entry per block, as `bdbm_drv` and the paper's memory table.
    Block,
    /// A segment maps to one whole physical superblock: one entry per segment.
    Segment,
}

/// The `[aftl]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AftlConfig {
    /// `block` (one 4-byte entry per block of each segment, the paper's) or `segment` (one
    /// 4-byte entry per segment).
    pub map: MapGranularity,
}

impl Default for AftlConfig {
    fn default() -> Self {
        AftlConfig {
            map: MapGranularity::Block,
        }
    }
}

/// Bytes of one block or superblock address in the map (the paper's 4-byte entries).
pub const ENTRY_BYTES: u64 = 4;
/// Bytes of per-segment state: write pointer and trim cursor, 4 bytes each.
pub const SEGMENT_STATE_BYTES: u64 = 8;

pub struct Aftl {
    layout: Layout,
    map: MapGranularity,
    units: u32,
    /// Blocks of a segment (AFTL: `units`, a superblock; a ZNS zone may have more or
    /// fewer, [`crate::ftl::zns`]).
    width: u32,
    /// Pages of a segment: width x pages per block.
    segment_pages: u32,
    /// Logical pages a segment spans (AFTL: `segment_pages`; a ZNS zone's size may exceed
    /// its capacity, and the pages past it are never written).
    span: u32,
    /// Logical pages the segments cover.
    logical_pages: u64,
    /// Logical segments (the last may be partial).
    segments: u32,
    /// Pages appended to each logical segment since it was last emptied (0: unallocated).
    write_ptr: Vec<u32>,
    /// Per logical segment: the next page a trim must cover for the trims so far to have
    /// covered the segment from its first page, in order.
    trim_next: Vec<u32>,
    /// Block of member `k` of logical segment `s` at `s * width + k` (NONE: unallocated).
    members: Vec<u32>,
    /// `map = "block"`: free (erased) blocks of each unit.
    free: FreeBlocks,
    /// `map = "segment"`: free (erased) superblocks, oldest freed first.
    free_superblocks: VecDeque<u32>,
    /// The units in the plane-first stripe order: member `k` of segment `s` is on unit
    /// `stripe[(s * width + k) % units]`.
    stripe: Vec<u32>,
    refused_writes: u64,
    segments_allocated: u64,
    segments_erased: u64,
    blocks_erased: u64,
}

impl Scheme for Aftl {
    const NAME: &'static str = "aftl";
    const DESCRIPTION: &'static str =
        "AFTL (AMF, FAST'16): append-only segments of one block per unit, \
         overwrites refused, segment trim erases without copies, no device GC";
    type Section = AftlConfig;
    const APPEND_ONLY: bool = true;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let section: AftlConfig = Self::section(cfg)?;
        Aftl::with_segments(layout, section.map, layout.units, 0, layout.logical_pages)
    }
}

impl Aftl {
    /// Append-only segments of `width` blocks each, one every `span` logical pages (at least
    /// the segment's pages; 0: the segment's pages), over `logical_pages` (the last segment
    /// may be partial). `map = "segment"` needs `width == units`; otherwise `width` divides
    /// the units or is a multiple of them, so that a segment's members fall on distinct
    /// units as far as there are units.
    pub fn with_segments(
        layout: &Layout,
        map: MapGranularity,
        width: u32,
        span: u32,
        logical_pages: u64,
    ) -> Result<Self> {
        let units = layout.units;
        debug_assert!(width > 0 && (units.is_multiple_of(width) || width.is_multiple_of(units)));
        debug_assert!(map == MapGranularity::Block || width == units);
        let segment_pages = width
            .checked_mul(layout.pages_per_block)
            .ok_or_else(|| Error::config("geometry.pages_per_block", "segment too large"))?;
        let span = if span == 0 { segment_pages } else { span };
        debug_assert!(span >= segment_pages);
        let segments = logical_pages.div_ceil(span as u64) as u32;
        // Members go round the units: the busiest unit gives this many blocks.
        let per_unit = (segments as u64 * width as u64).div_ceil(units as u64);
        if per_unit > layout.blocks_per_unit as u64 {
            // Cannot happen with the geometry rules (three spare blocks per unit) for AFTL,
            // but the map relies on it.
            return Err(Error::config(
                "ftl.over_provisioning",
                format!(
                    "{segments} segments of {width} blocks need {per_unit} blocks of each \
                     parallel unit; the device has {}",
                    layout.blocks_per_unit
                ),
            ));
        }
        let n = segments as usize;
        let mut free_superblocks = VecDeque::new();
        let free = match map {
            MapGranularity::Block => FreeBlocks::all(layout),
            MapGranularity::Segment => {
                free_superblocks.extend(0..layout.superblocks());
                FreeBlocks::empty(layout)
            }
        };
        Ok(Aftl {
            layout: *layout,
            map,
            units,
            width,
            segment_pages,
            span,
            logical_pages,
            segments,
            write_ptr: vec![0; n],
            trim_next: vec![0; n],
            members: vec![NONE; n * width as usize],
            free,
            free_superblocks,
            stripe: (0..units).map(|k| layout.stripe_unit(k)).collect(),
            refused_writes: 0,
            segments_allocated: 0,
            segments_erased: 0,
            blocks_erased: 0,
        })
    }

    /// Blocks of each unit that segments `first..` take when all are allocated.
    pub fn blocks_needed_from(&self, first: u32) -> Vec<u32> {
        let mut need = vec![0u32; self.units as usize];
        for seg in first..self.segments {
            for k in 0..self.width {
                need[self.unit_of(seg, k) as usize] += 1;
            }
        }
        need
    }

    /// Free (erased) blocks of `unit` left to the segments (`map = "block"`).
    pub fn free_blocks(&self, unit: u32) -> usize {
        self.free.count(unit)
    }

    /// Takes a free block of `unit` from the segments for good (`map = "block"`): a ZNS
    /// device's conventional zones are made of blocks its sequential zones never use.
    pub fn take_free_block(&mut self, unit: u32) -> Option<u32> {
        debug_assert_eq!(self.map, MapGranularity::Block);
        self.free.pop(unit)
    }

    /// Pages of one segment (units x pages per block).
    pub fn segment_pages(&self) -> u32 {
        self.segment_pages
    }

    /// Logical segments (the last may be partial).
    pub fn segments(&self) -> u32 {
        self.segments
    }

    /// Logical pages of segment `seg` (all but the last: `segment_pages`).
    #[inline]
    fn len_of(&self, seg: u32) -> u32 {
        let start = seg as u64 * self.span as u64;
        (self.logical_pages - start).min(self.segment_pages as u64) as u32
    }

    #[inline]
    fn locate(&self, lpa: u32) -> (u32, u32) {
        (lpa / self.span, lpa % self.span)
    }

    /// The physical page of offset `off` of segment `seg` (allocated).
    #[inline]
    fn page_of(&self, seg: u32, off: u32) -> u32 {
        let block = self.members[(seg * self.width + off % self.width) as usize];
        block * self.layout.pages_per_block + off / self.width
    }

    /// The unit member `k` of segment `seg` is on.
    #[inline]
    fn unit_of(&self, seg: u32, k: u32) -> u32 {
        self.stripe[((seg as u64 * self.width as u64 + k as u64) % self.units as u64) as usize]
    }

    /// Pages of segment `seg` written since it was last emptied (its write pointer).
    #[inline]
    pub fn write_pointer(&self, seg: u32) -> u32 {
        self.write_ptr[seg as usize]
    }

    /// Segment `seg` closed for writing as if written to its end (a ZNS zone finish): its
    /// blocks allocated if it had none, its write pointer at its end. The pages it skips
    /// stay erased and read as unmapped.
    pub fn close_segment(&mut self, seg: u32) -> Result<()> {
        if self.write_ptr[seg as usize] == 0 {
            self.allocate(seg)?;
        }
        self.write_ptr[seg as usize] = self.len_of(seg);
        Ok(())
    }

    /// Segment `seg` emptied at once (a ZNS zone reset): its pages invalidated, its blocks
    /// erased and freed, whatever trims came before.
    pub fn empty_segment(&mut self, seg: u32, flash: &mut Flash) -> Result<()> {
        let s = seg as usize;
        if self.write_ptr[s] == 0 {
            self.trim_next[s] = 0;
            return Ok(());
        }
        for off in 0..self.write_ptr[s] {
            let ppn = self.page_of(seg, off);
            if flash.is_valid(ppn) {
                flash.invalidate(ppn)?;
            }
        }
        self.release(seg, flash)
    }

    fn refuse(&mut self, lpa: u32, seg: u32, off: u32) -> Error {
        self.refused_writes += 1;
        let wp = self.write_ptr[seg as usize];
        let what = if off < wp {
            format!(
                "an overwrite: segment {seg} is written up to page {wp} and a page may be \
                 written again only after the whole segment is trimmed"
            )
        } else {
            format!(
                "out of order: segment {seg} is written up to page {wp}, and segments are \
                 append-only (the next write to it must be logical page {})",
                seg as u64 * self.span as u64 + wp as u64
            )
        };
        Error::Refused {
            message: format!(
                "aftl (AMF append-only segments of {} pages) refuses the write of logical page \
                 {lpa}: {what}; run it under a host stack that writes append-only \
                 (host.stack = \"alfs\")",
                self.segment_pages
            ),
        }
    }

    /// Gives logical segment `seg` its blocks.
    fn allocate(&mut self, seg: u32) -> Result<()> {
        let base = (seg * self.width) as usize;
        match self.map {
            MapGranularity::Block => {
                for k in 0..self.width {
                    let unit = self.unit_of(seg, k);
                    let block = self.free.pop(unit).ok_or_else(|| Error::DeviceFull {
                        message: format!("aftl: unit {unit} has no free block for segment {seg}"),
                    })?;
                    self.members[base + k as usize] = block;
                }
            }
            MapGranularity::Segment => {
                let sb = self
                    .free_superblocks
                    .pop_front()
                    .ok_or_else(|| Error::DeviceFull {
                        message: format!("aftl: no free superblock for segment {seg}"),
                    })?;
                for k in 0..self.units {
                    self.members[base + k as usize] = self.layout.superblock_member(sb, k);
                }
            }
        }
        self.segments_allocated += 1;
        Ok(())
    }

    /// A dead segment (trimmed whole): its blocks are erased, as background work, and freed.
    fn release(&mut self, seg: u32, flash: &mut Flash) -> Result<()> {
        let base = (seg * self.width) as usize;
        let superblock = self.layout.superblock_of(self.members[base]);
        flash.set_background(true);
        let mut result: Result<()> = Ok(());
        for k in 0..self.width as usize {
            let block = self.members[base + k];
            if !flash.is_erased(block) {
                if let Err(e) = flash.erase(block, Cause::Host) {
                    result = Err(e.into());
                    break;
                }
                self.blocks_erased += 1;
            }
        }
        flash.set_background(false);
        result?;
        for k in 0..self.width as usize {
            if self.map == MapGranularity::Block {
                self.free.push(&self.layout, self.members[base + k]);
            }
            self.members[base + k] = NONE;
        }
        if self.map == MapGranularity::Segment {
            self.free_superblocks.push_back(superblock);
        }
        self.write_ptr[seg as usize] = 0;
        self.trim_next[seg as usize] = 0;
        self.segments_erased += 1;
        Ok(())
    }
}

impl Ftl for Aftl {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        let (seg, off) = self.locate(lpa);
        if off >= self.write_ptr[seg as usize] {
            return Ok(None);
        }
        let ppn = self.page_of(seg, off);
        if !flash.is_valid(ppn) {
            return Ok(None);
        }
        Ok(Some(flash.read(ppn, Cause::Host)?))
    }

    #[inline]
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let (seg, off) = self.locate(lpa);
        let s = seg as usize;
        if off != self.write_ptr[s] {
            return Err(self.refuse(lpa, seg, off));
        }
        if off == 0 {
            self.allocate(seg)?;
        }
        let ppn = self.page_of(seg, off);
        flash.program(ppn, Oob { lpa, seq }, &[], Cause::Host)?;
        self.write_ptr[s] = off + 1;
        if off < self.trim_next[s] {
            // Written again after trims passed it: no longer trimmed from the start.
            self.trim_next[s] = 0;
        }
        Ok(())
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let (seg, off) = self.locate(lpa);
        let s = seg as usize;
        if off < self.write_ptr[s] {
            let ppn = self.page_of(seg, off);
            if flash.is_valid(ppn) {
                flash.invalidate(ppn)?;
            }
        }
        if off == self.trim_next[s] {
            self.trim_next[s] = off + 1;
            if off + 1 == self.len_of(seg) {
                self.trim_next[s] = 0;
                if self.write_ptr[s] > 0 {
                    self.release(seg, flash)?;
                }
            }
        } else {
            self.trim_next[s] = u32::from(off == 0);
        }
        Ok(())
    }

    /// The segment map and append points are rebuilt from the pages' OOB. A segment's
    /// current generation starts with the highest-numbered write of its first page (a
    /// segment is written again only after a whole-segment trim, so an older generation's
    /// pages carry lower numbers); its pages give the member blocks (page `o` lies in member
    /// `o mod units`) and the write pointer (one past the highest page written). Its trims
    /// logged since that write are replayed for the trim cursor: a segment they covered
    /// whole is dead and erased, as it was before the crash. Members the segment has not
    /// reached yet get free blocks of their units. Blocks of no live segment are erased.
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        crate::device::recovery::revalidate_live(found, flash)?;
        let ppb = self.layout.pages_per_block;
        let (n, width) = (self.segments as usize, self.width);
        let programmed = |flash: &Flash, block: u32| {
            let first = flash.first_page(block);
            (first..first + ppb)
                .filter(|&p| flash.is_programmed(p) && flash.oob(p).lpa != NONE)
                .collect::<Vec<_>>()
        };
        // Each segment's generation: the highest-numbered write of its first page.
        let mut start: Vec<Option<u64>> = vec![None; n];
        for block in 0..self.layout.total_blocks {
            for p in programmed(flash, block) {
                let oob = flash.oob(p);
                let (seg, off) = self.locate(oob.lpa);
                if off == 0 {
                    let s = &mut start[seg as usize];
                    *s = Some(s.map_or(oob.seq, |v| v.max(oob.seq)));
                }
            }
        }
        self.members.fill(NONE);
        self.write_ptr.fill(0);
        self.trim_next.fill(0);
        let mut owner = vec![NONE; self.layout.total_blocks as usize];
        for block in 0..self.layout.total_blocks {
            for p in programmed(flash, block) {
                let oob = flash.oob(p);
                let (seg, off) = self.locate(oob.lpa);
                let s = seg as usize;
                let Some(first) = start[s] else {
                    if found.live[oob.lpa as usize] == p {
                        return Err(Error::Usage(format!(
                            "aftl: segment {seg} holds current pages but not its first page: its \
                             generation cannot be told"
                        )));
                    }
                    continue;
                };
                if oob.seq < first {
                    continue; // an earlier generation, trimmed whole
                }
                let k = off % width;
                let unit = self.unit_of(seg, k);
                let slot = &mut self.members[s * width as usize + k as usize];
                let placed = flash.page_offset(p) == off / width
                    && self.layout.unit_of_block(block) == unit
                    && (*slot == NONE || *slot == block);
                if !placed {
                    return Err(Error::Usage(format!(
                        "aftl: physical page {p} holds page {off} of segment {seg}, which \
                         segment placement cannot put there"
                    )));
                }
                *slot = block;
                owner[block as usize] = seg;
                self.write_ptr[s] = self.write_ptr[s].max(off + 1);
            }
        }
        // Trims since each generation began, replayed.
        let mut dead = vec![false; n];
        for &(lpa, seq) in &found.trims {
            let (seg, off) = self.locate(lpa);
            let s = seg as usize;
            if start[s].is_none_or(|first| seq < first) || dead[s] {
                continue;
            }
            if off == self.trim_next[s] {
                self.trim_next[s] = off + 1;
                if off + 1 == self.len_of(seg) {
                    self.trim_next[s] = 0;
                    dead[s] = true;
                }
            } else {
                self.trim_next[s] = u32::from(off == 0);
            }
        }
        for (s, _) in dead.iter().enumerate().filter(|(_, &d)| d) {
            let base = s * width as usize;
            for m in &mut self.members[base..base + width as usize] {
                if *m != NONE {
                    owner[*m as usize] = NONE;
                }
                *m = NONE;
            }
            self.write_ptr[s] = 0;
            self.trim_next[s] = 0;
        }
        // Everything else is erased and free.
        for block in 0..self.layout.total_blocks {
            if owner[block as usize] == NONE && !flash.is_erased(block) {
                let first = flash.first_page(block);
                for p in first..first + ppb {
                    if flash.is_valid(p) {
                        flash.invalidate(p)?; // a dead segment's untrimmed page
                    }
                }
                flash.erase(block, Cause::Host)?;
            }
        }
        match self.map {
            MapGranularity::Block => {
                self.free = FreeBlocks::empty(&self.layout);
                for block in 0..self.layout.total_blocks {
                    if owner[block as usize] == NONE {
                        self.free.push(&self.layout, block);
                    }
                }
                for s in 0..n {
                    if self.write_ptr[s] == 0 {
                        continue;
                    }
                    for k in 0..width {
                        let slot = s * width as usize + k as usize;
                        if self.members[slot] == NONE {
                            let unit = self.unit_of(s as u32, k);
                            self.members[slot] =
                                self.free.pop(unit).ok_or_else(|| Error::DeviceFull {
                                    message: format!(
                                        "aftl: unit {unit} has no free block for segment {s}"
                                    ),
                                })?;
                        }
                    }
                }
            }
            MapGranularity::Segment => {
                let mut used = vec![false; self.layout.superblocks() as usize];
                for s in 0..n {
                    if self.write_ptr[s] == 0 {
                        continue;
                    }
                    let base = s * width as usize;
                    let any = self.members[base..base + width as usize]
                        .iter()
                        .copied()
                        .find(|&b| b != NONE)
                        .unwrap_or(NONE);
                    let sb = self.layout.superblock_of(any);
                    for k in 0..width {
                        let b = self.layout.superblock_member(sb, k);
                        let m = &mut self.members[base + k as usize];
                        if *m != NONE && *m != b {
                            return Err(Error::Usage(format!(
                                "aftl: segment {s} spans superblocks {sb} and {}",
                                self.layout.superblock_of(*m)
                            )));
                        }
                        *m = b;
                    }
                    used[sb as usize] = true;
                }
                self.free_superblocks = (0..self.layout.superblocks())
                    .filter(|&sb| !used[sb as usize])
                    .collect();
            }
        }
        Ok(())
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        let segments = self.segments as u64;
        match self.map {
            MapGranularity::Block => {
                out.push(("block_map", segments * self.width as u64 * ENTRY_BYTES));
            }
            MapGranularity::Segment => out.push(("segment_map", segments * ENTRY_BYTES)),
        }
        out.push(("segment_state", segments * SEGMENT_STATE_BYTES));
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("refused_writes", self.refused_writes as f64));
        out.push(("segments_allocated", self.segments_allocated as f64));
        out.push(("segments_erased", self.segments_erased as f64));
        out.push(("blocks_erased", self.blocks_erased as f64));
        out.push(("segment_pages", self.segment_pages as f64));
    }

    fn reset_counters(&mut self) {
        self.refused_writes = 0;
        self.segments_allocated = 0;
        self.segments_erased = 0;
        self.blocks_erased = 0;
    }
}
