//! HPFTL (Fan Ni, Chunyi Liu, Yang Wang, Chengzhong Xu, Xiao Zhang, Song Jiang, "A
//! hash-based space-efficient page-level FTL for large-capacity SSDs", IEEE NAS 2017), as the
//! SlimFTL thesis (SNU 2020, sections 2.2-2.3) describes it.
//!
//! The primary table holds, per logical page, an encoded address: a hash id (HID) and the
//! page id in the block (PPID), `hid_bits + ppid_bits` bits. The HID-th hash function of
//! the logical page picks a *physical* block directly, so each page can live in only a few
//! blocks, and the hashing ignores sequentiality (consecutive pages land in unrelated
//! blocks, spreading invalid pages uniformly).
//! * write: HIDs 1, 2, ... are tried in order; the first block with a free page takes the
//!   page at its write pointer. When every block the page can reach is full (a hash
//!   collision) the page goes to a log block and into the secondary table;
//! * secondary table: fully associative (LPA, PPA) pairs, bounded (`secondary_fraction` of
//!   the logical pages, 8 bytes an entry); the primary entry holds the reserved HID
//!   2^hid_bits - 1 meaning "look in the secondary table";
//! * GC: greedy over the whole device; every valid page it copies goes to a log block and
//!   into the secondary table (the page's hashed blocks are full, which is why GC ran), and
//!   this is what makes GC and reclaim feed each other;
//! * reclaim: when the secondary table is within one block of full, a free block is taken
//!   and filled with the secondary-table pages that one of their hash functions maps to it,
//!   which move back to the primary table.
//!
//! Background GC (`gc.mode = "background"`, the default; the thesis and the paper collect
//! in the write's path): the soft threshold's collections move to the idle hook. While the
//! hashed blocks' free pages are under `gc.threshold`, each idle turn collects the victim
//! (the same choice as in the foreground) if its die has no background work queued, and
//! while the secondary table is at its reclaim point, reclaims once if the die of the pool
//! block it would take has none, both issued as background flash work that no request
//! waits for. A write still collects in its own path at or under `gc.hard_threshold`, when
//! the pool runs short, or reclaims when the secondary table is at its reclaim point
//! because the idle time did not suffice. With `gc.mode = "foreground"` the write collects
//! one victim under the soft threshold, as before.
//!
//! Choices where the thesis is silent (docs/guide/schemes/hash-based.md): a few erased
//! blocks are kept out of the hash range as a pool for log blocks and reclaims; GC runs when the free pages
//! of the hashed blocks fall under `gc.threshold` (and until they are above
//! `gc.hard_threshold`) or the pool runs short; victims are the full blocks with the fewest
//! valid pages, device-wide.

use crate::device::blocks::{FreeBlocks, GreedyIndex};
use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob, Ppn, NONE};
use crate::error::{Error, Result};
use crate::ftl::hashed::{self, EncodedTable, Md5Hasher};
use crate::ftl::settings::GcMode;
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use serde::{Deserialize, Serialize};

/// The `[hpftl]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HpConfig {
    /// Bits of hash id per primary entry: 2^bits - 2 hash functions (HID 0 = unmapped,
    /// the largest HID = in the secondary table).
    pub hid_bits: u32,
    /// Bits of page id per primary entry: must address every page of a block.
    pub ppid_bits: u32,
    /// Capacity of the secondary table as a share of the logical pages.
    pub secondary_fraction: f64,
}

impl Default for HpConfig {
    fn default() -> Self {
        HpConfig {
            hid_bits: 6,
            ppid_bits: 8,
            // 5% of the logical pages at 8 bytes an entry is 0.1 of a 4-byte page table,
            // the thesis's figure.
            secondary_fraction: 0.05,
        }
    }
}

/// Bytes of a secondary-table entry: a 4-byte logical and a 4-byte physical page address.
pub const SECONDARY_ENTRY_BYTES: u64 = 8;
/// Erased blocks kept out of the hash range for log blocks and reclaims.
const POOL_TARGET: usize = 4;
/// Below this many pool blocks, GC runs to refill the pool.
const POOL_MIN: usize = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Reachable by hashing: programmed by host writes at its write pointer.
    Hashed,
    /// Erased and held back for log blocks and reclaims.
    Pool,
    /// Holds pages mapped by the secondary table (GC copies, collided host writes).
    Log,
}

#[derive(Clone, Debug, Default)]
struct Counters {
    hash_collisions: u64,
    secondary_peak: u64,
    secondary_inserts_by_gc: u64,
    reclaims: u64,
    reclaims_without_candidates: u64,
    reclaims_into_open_blocks: u64,
    reclaim_pages_moved: u64,
    gc_hashed_victims: u64,
    gc_log_victims: u64,
    gc_in_place: u64,
}

pub struct HpFtl {
    primary: EncodedTable,
    /// The secondary table, held densely (LPA -> physical page); an entry means something
    /// only while the page's primary entry holds the secondary HID, so the array starts
    /// zeroed and untouched (the operating system maps it on first write). DRAM is counted
    /// at the table's bounded capacity.
    secondary: Vec<Ppn>,
    secondary_len: u64,
    capacity: u64,
    reclaim_at: u64,
    /// Per block: secondary-table pages one of whose hash functions picks the block (the
    /// reclaim candidates). Entries of pages that have left the table are skipped and
    /// dropped lazily; this is the simulator's index, not modelled DRAM.
    candidates: Vec<Vec<u32>>,
    candidate_entries: u64,
    compact_at: u64,
    /// Per logical page: the last candidate list a compaction kept it in (compaction
    /// number x blocks + block + 1; 0 never). Allocated by the first compaction.
    compaction_marks: Vec<u64>,
    compactions: u64,
    role: Vec<Role>,
    pool: FreeBlocks,
    next_unit: u32,
    log_open: u32,
    hashed_victims: GreedyIndex,
    log_victims: GreedyIndex,
    /// Erased pages of the hashed blocks.
    hashed_free: u64,
    soft_pages: u64,
    hard_pages: u64,
    hasher: Md5Hasher,
    hash_functions: u32,
    secondary_hid: u32,
    layout: Layout,
    counters: Counters,
    /// Background GC (`gc.mode = "background"`).
    background: bool,
}

impl Scheme for HpFtl {
    const NAME: &'static str = "hpftl";
    const DESCRIPTION: &'static str =
        "HPFTL (NAS'17): hashed page-level map (HID + page id per page), bounded secondary table with reclaim";
    type Section = HpConfig;
    const ADVISE: &'static str = r#"hid_bits = [3, 6]"#;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c = Self::section(cfg)?;
        hashed::check_bits("hpftl", c.hid_bits, 2, c.ppid_bits, layout)?;
        let ppb = layout.pages_per_block as u64;
        if !(c.secondary_fraction.is_finite() && (0.0..=1.0).contains(&c.secondary_fraction)) {
            return Err(Error::config(
                "hpftl.secondary_fraction",
                format!("{} is not a fraction between 0 and 1", c.secondary_fraction),
            ));
        }
        let capacity = (c.secondary_fraction * layout.logical_pages as f64).round() as u64;
        if capacity < 2 * ppb {
            return Err(Error::config(
                "hpftl.secondary_fraction",
                format!(
                    "{} gives a secondary table of {capacity} entries; HPFTL needs at least two blocks' worth \
                     ({}) so that a GC victim's valid pages always fit",
                    c.secondary_fraction,
                    2 * ppb
                ),
            ));
        }
        if layout.total_blocks < 4 * POOL_TARGET as u32 {
            return Err(Error::config(
                "geometry.blocks_per_plane",
                format!(
                    "HPFTL needs at least {} blocks (it keeps {POOL_TARGET} out of the hash range); the device has {}",
                    4 * POOL_TARGET,
                    layout.total_blocks
                ),
            ));
        }
        let mut pool = FreeBlocks::empty(layout);
        let mut role = vec![Role::Hashed; layout.total_blocks as usize];
        for i in 0..POOL_TARGET as u32 {
            // The first block of the first units, spread over the device.
            let unit = i % layout.units;
            let block = unit * layout.blocks_per_unit + i / layout.units;
            pool.push(layout, block);
            role[block as usize] = Role::Pool;
        }
        let hash_functions = (1 << c.hid_bits) - 2;
        let physical = layout.physical_pages as f64;
        Ok(HpFtl {
            primary: EncodedTable::new(layout.logical_pages, c.hid_bits, c.ppid_bits),
            secondary: vec![0; layout.logical_pages as usize],
            secondary_len: 0,
            capacity,
            reclaim_at: capacity - ppb,
            candidates: vec![Vec::new(); layout.total_blocks as usize],
            candidate_entries: 0,
            compaction_marks: Vec::new(),
            compactions: 0,
            compact_at: 4 * hash_functions as u64 * capacity,
            role,
            pool,
            next_unit: 0,
            log_open: NONE,
            hashed_victims: GreedyIndex::new(layout.total_blocks, layout.pages_per_block),
            log_victims: GreedyIndex::new(layout.total_blocks, layout.pages_per_block),
            hashed_free: (layout.total_blocks as u64 - POOL_TARGET as u64) * ppb,
            soft_pages: (cfg.gc.threshold * physical).ceil() as u64,
            hard_pages: (cfg.gc.hard_threshold * physical).ceil() as u64,
            hasher: Md5Hasher::new(0, layout.total_blocks, layout.logical_pages),
            hash_functions,
            secondary_hid: hash_functions + 1,
            layout: *layout,
            counters: Counters::default(),
            background: cfg.gc.mode == GcMode::Background,
        })
    }
}

impl HpFtl {
    /// Marks a page invalid and keeps the victim index of its block current.
    #[inline]
    fn invalidate(&mut self, ppn: Ppn, flash: &mut Flash) -> Result<()> {
        flash.invalidate(ppn)?;
        let block = flash.block_of(ppn);
        match self.role[block as usize] {
            Role::Hashed => self.hashed_victims.page_invalidated(block),
            Role::Log => self.log_victims.page_invalidated(block),
            Role::Pool => {}
        }
        Ok(())
    }

    /// Files a block that just became full as a GC candidate.
    #[inline]
    fn file_if_full(&mut self, block: u32, flash: &Flash) {
        if flash.is_full(block) {
            let valid = flash.valid_count(block);
            match self.role[block as usize] {
                Role::Hashed => self.hashed_victims.insert(block, valid),
                Role::Log => self.log_victims.insert(block, valid),
                Role::Pool => {}
            }
        }
    }

    fn pop_pool(&mut self) -> Result<u32> {
        self.pool
            .pop_round_robin(&mut self.next_unit, 0)
            .ok_or_else(|| Error::DeviceFull {
                message:
                    "HPFTL has no free block left for its log or a reclaim \
                          (raise ftl.over_provisioning, hpftl.secondary_fraction or hpftl.hid_bits)"
                        .into(),
            })
    }

    /// The next page of the open log block, opening one from the pool when needed.
    fn log_page(&mut self, flash: &Flash) -> Result<Ppn> {
        if self.log_open == NONE {
            let block = self.pop_pool()?;
            self.role[block as usize] = Role::Log;
            self.log_open = block;
        }
        Ok(flash.first_page(self.log_open) + flash.write_pointer(self.log_open))
    }

    /// After a program into the open log block: a full log block becomes a GC candidate
    /// and is no longer open (GC may erase it from now on).
    fn log_programmed(&mut self, flash: &Flash) {
        if flash.is_full(self.log_open) {
            self.file_if_full(self.log_open, flash);
            self.log_open = NONE;
        }
    }

    /// Enters `lpa` -> `ppn` in the secondary table.
    fn secondary_insert(&mut self, lpa: u32, ppn: Ppn) {
        self.secondary[lpa as usize] = ppn;
        self.primary.set(lpa, self.secondary_hid, 0);
        self.secondary_len += 1;
        self.counters.secondary_peak = self.counters.secondary_peak.max(self.secondary_len);
        let digest = self.hasher.digest(lpa);
        for hid in 1..=self.hash_functions {
            self.candidates[self.hasher.target(digest, hid) as usize].push(lpa);
        }
        self.candidate_entries += self.hash_functions as u64;
        if self.candidate_entries > self.compact_at {
            self.compact_candidates();
        }
    }

    /// Drops the candidate entries of pages no longer in the secondary table, and repeated
    /// entries of a page in one list (left by pages that re-entered the table).
    fn compact_candidates(&mut self) {
        if self.compaction_marks.is_empty() {
            self.compaction_marks = vec![0; self.layout.logical_pages as usize];
        }
        let (primary, secondary_hid) = (&self.primary, self.secondary_hid);
        let seen = &mut self.compaction_marks;
        let mut total = 0;
        let base = self.compactions * self.layout.total_blocks as u64;
        self.compactions += 1;
        for (block, list) in self.candidates.iter_mut().enumerate() {
            let mark = base + block as u64 + 1;
            list.retain(|&lpa| {
                // Most entries are stale: test the table first, touch the marks only for
                // pages still in it.
                if primary.get(lpa).0 != secondary_hid || seen[lpa as usize] == mark {
                    return false;
                }
                seen[lpa as usize] = mark;
                true
            });
            total += list.len() as u64;
        }
        self.candidate_entries = total;
        self.compact_at = self.compact_at.max(3 * total);
    }

    /// Moves secondary-table pages that one of their hash functions maps to `block` into
    /// it, at its write pointer, until it is full; they go back to the primary table.
    /// Returns the pages moved.
    fn reclaim_into(&mut self, block: u32, flash: &mut Flash) -> Result<u32> {
        let first = flash.first_page(block);
        let mut list = std::mem::take(&mut self.candidates[block as usize]);
        let before = list.len();
        let mut moved = 0;
        let mut used = 0;
        for &lpa in &list {
            if flash.is_full(block) {
                break;
            }
            used += 1;
            if !self.in_secondary(lpa) {
                continue;
            }
            let src = self.secondary[lpa as usize];
            let digest = self.hasher.digest(lpa);
            let hid = (1..=self.hash_functions)
                .find(|&h| self.hasher.target(digest, h) == block)
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "internal error: HPFTL reclaim candidate {lpa} does not hash to block {block}"
                    ))
                })?;
            let ppid = flash.write_pointer(block);
            flash.copy(src, first + ppid, Cause::Gc)?;
            self.invalidate(src, flash)?;
            self.secondary_len -= 1;
            self.primary.set(lpa, hid, ppid);
            moved += 1;
        }
        list.drain(..used);
        self.candidate_entries -= (before - list.len()) as u64;
        self.candidates[block as usize] = list;
        self.counters.reclaim_pages_moved += moved as u64;
        Ok(moved)
    }

    /// One reclaim (the thesis's): a free block from the pool is filled with the
    /// secondary-table pages that hash to it. Returns the pages moved.
    fn reclaim(&mut self, flash: &mut Flash) -> Result<u64> {
        let block = self.pop_pool()?;
        let moved = self.reclaim_into(block, flash)?;
        flash.chain();
        self.counters.reclaims += 1;
        if moved == 0 {
            self.counters.reclaims_without_candidates += 1;
            self.pool.push(&self.layout, block);
        } else {
            self.role[block as usize] = Role::Hashed;
            self.hashed_free += (self.layout.pages_per_block - moved) as u64;
            self.file_if_full(block, flash);
        }
        Ok(moved as u64)
    }

    /// Fallback when no pool block can be spared (or none has candidates): secondary-table
    /// pages move into the free pages of hashed blocks one of their hash functions picks.
    /// Without it a full secondary table and an empty pool would wait on each other.
    fn reclaim_into_open_blocks(&mut self, flash: &mut Flash) -> Result<u64> {
        let mut moved = 0u64;
        for block in 0..self.layout.total_blocks {
            if self.secondary_len < self.reclaim_at {
                break;
            }
            if self.role[block as usize] != Role::Hashed || flash.is_full(block) {
                continue;
            }
            let n = self.reclaim_into(block, flash)? as u64;
            self.hashed_free -= n;
            self.file_if_full(block, flash);
            moved += n;
        }
        flash.chain();
        if moved > 0 {
            self.counters.reclaims_into_open_blocks += 1;
        }
        Ok(moved)
    }

    /// Reclaims by the pool if a block can be spared, else into open hashed blocks.
    fn reclaim_any(&mut self, flash: &mut Flash) -> Result<u64> {
        if self.pool.total() > 1 {
            let moved = self.reclaim(flash)?;
            if moved > 0 {
                return Ok(moved);
            }
        }
        match self.reclaim_into_open_blocks(flash)? {
            0 => self.reclaim_by_collecting(flash),
            moved => Ok(moved),
        }
    }

    /// The next GC victim: the full block with the fewest valid pages, hashed or log (block,
    /// valid pages).
    fn next_victim(&mut self) -> Option<(u32, u32)> {
        let ppb = self.layout.pages_per_block;
        let hashed = self.hashed_victims.min_below(ppb);
        let log = self.log_victims.min_below(ppb);
        match (hashed, log) {
            (Some(h), Some(l)) if h.1 < l.1 => Some(h),
            (Some(h), None) => Some(h),
            (_, Some(l)) => Some(l),
            (None, None) => None,
        }
    }

    /// The unit whose pool block the next reclaim would take (`None`: the pool is empty).
    fn next_pool_unit(&self) -> Option<u32> {
        let units = self.layout.units;
        (0..units)
            .map(|i| (self.next_unit + i) % units)
            .find(|&u| self.pool.count(u) > 0)
    }

    /// Collects the full block with the fewest valid pages (a hashed block only if its
    /// valid pages fit in the secondary table). False if no block has an invalid page.
    fn collect_one(&mut self, flash: &mut Flash) -> Result<bool> {
        let ppb = self.layout.pages_per_block;
        let room = self.capacity - self.secondary_len;
        let Some(victim) = self.next_victim() else {
            return Ok(false);
        };
        if self.role[victim.0 as usize] == Role::Hashed && victim.1 as u64 > room {
            // The secondary table cannot take the victim's valid pages.
            if self.pool.total() == 0 {
                return Ok(false);
            }
            self.collect_in_place(victim.0, flash)?;
            return Ok(true);
        }
        let victim = victim.0;
        let from_hashed = self.role[victim as usize] == Role::Hashed;
        if from_hashed {
            self.hashed_victims.remove(victim);
            self.counters.gc_hashed_victims += 1;
        } else {
            self.log_victims.remove(victim);
            self.counters.gc_log_victims += 1;
        }
        let first = flash.first_page(victim);
        let mut moved = 0;
        for ppn in first..first + ppb {
            if !flash.is_valid(ppn) {
                continue;
            }
            let dst = self.log_page(flash)?;
            let oob = flash.copy(ppn, dst, Cause::Gc)?;
            flash.invalidate(ppn)?;
            self.log_programmed(flash);
            if from_hashed {
                self.secondary_insert(oob.lpa, dst);
                self.counters.secondary_inserts_by_gc += 1;
            } else {
                self.secondary[oob.lpa as usize] = dst;
            }
            moved += 1;
        }
        flash.chain();
        flash.erase(victim, Cause::Gc)?;
        if self.pool.total() < POOL_TARGET {
            self.role[victim as usize] = Role::Pool;
            self.pool.push(&self.layout, victim);
        } else {
            self.role[victim as usize] = Role::Hashed;
            self.hashed_free += ppb as u64;
        }
        flash.stats.gc_invocations += 1;
        flash.stats.gc_pages_moved += moved;
        Ok(true)
    }

    /// Collects a hashed block without the secondary table, when it is full: the valid
    /// pages are staged in a pool block, the victim is erased and they are written back
    /// into it (their HIDs stay, their PPIDs change), then the staging block is erased.
    /// Costs two copies per valid page; leaves the victim's invalid pages free for
    /// reclaims and hashed writes.
    fn collect_in_place(&mut self, victim: u32, flash: &mut Flash) -> Result<()> {
        let ppb = self.layout.pages_per_block;
        let staging = self.pop_pool()?;
        self.hashed_victims.remove(victim);
        let (first, stage) = (flash.first_page(victim), flash.first_page(staging));
        let mut staged = 0;
        for ppn in first..first + ppb {
            if flash.is_valid(ppn) {
                flash.copy(ppn, stage + staged, Cause::Gc)?;
                flash.invalidate(ppn)?;
                staged += 1;
            }
        }
        flash.chain();
        flash.erase(victim, Cause::Gc)?;
        for ppid in 0..staged {
            let oob = flash.copy(stage + ppid, first + ppid, Cause::Gc)?;
            flash.invalidate(stage + ppid)?;
            self.primary.set_ppid(oob.lpa, ppid);
        }
        flash.chain();
        flash.erase(staging, Cause::Gc)?;
        self.pool.push(&self.layout, staging);
        self.hashed_free += (ppb - staged) as u64;
        self.counters.gc_hashed_victims += 1;
        self.counters.gc_in_place += 1;
        flash.stats.gc_invocations += 1;
        flash.stats.gc_pages_moved += 2 * staged as u64;
        Ok(())
    }

    /// Last resort when no reclaim can move a page: the hashed block with the most
    /// secondary-table pages that could move into its invalid space is collected in place,
    /// then reclaimed into.
    fn reclaim_by_collecting(&mut self, flash: &mut Flash) -> Result<u64> {
        if self.pool.total() == 0 {
            return Ok(0);
        }
        let ppb = self.layout.pages_per_block;
        let mut best = (0, NONE);
        for block in 0..self.layout.total_blocks {
            if self.role[block as usize] != Role::Hashed || !flash.is_full(block) {
                continue;
            }
            let invalid = (ppb - flash.valid_count(block)) as usize;
            if invalid <= best.0 {
                continue;
            }
            let movable = self.candidates[block as usize]
                .iter()
                .filter(|&&lpa| self.in_secondary(lpa))
                .take(invalid)
                .count();
            if movable > best.0 {
                best = (movable, block);
            }
        }
        if best.1 == NONE {
            return Ok(0);
        }
        self.collect_in_place(best.1, flash)?;
        let moved = self.reclaim_into(best.1, flash)? as u64;
        self.hashed_free -= moved;
        self.file_if_full(best.1, flash);
        flash.chain();
        Ok(moved)
    }

    /// Before a host write: reclaims while the secondary table is near full, and collects
    /// while free space or the pool is short.
    fn make_room(&mut self, flash: &mut Flash) -> Result<()> {
        let mut collected = false;
        let mut reclaim_useful = true;
        loop {
            if reclaim_useful && self.secondary_len >= self.reclaim_at {
                if self.reclaim_any(flash)? == 0 {
                    reclaim_useful = false;
                }
                continue;
            }
            let short = self.pool.total() < POOL_MIN
                || self.hashed_free <= self.hard_pages
                || (!self.background && !collected && self.hashed_free < self.soft_pages);
            if !short || !self.collect_one(flash)? {
                break;
            }
            collected = true;
        }
        // The host write waits for the GC it triggered.
        flash.chain();
        Ok(())
    }

    /// Whether `lpa` is mapped by the secondary table.
    #[inline]
    fn in_secondary(&self, lpa: u32) -> bool {
        self.primary.get(lpa).0 == self.secondary_hid
    }

    /// The flash page holding `lpa`, from its primary entry.
    #[inline]
    fn lookup(&mut self, lpa: u32, hid: u32, ppid: u32) -> Ppn {
        if hid == self.secondary_hid {
            self.secondary[lpa as usize]
        } else {
            let digest = self.hasher.digest(lpa);
            self.hasher.target(digest, hid) * self.layout.pages_per_block + ppid
        }
    }
}

impl Ftl for HpFtl {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        let (hid, ppid) = self.primary.get(lpa);
        if hid == 0 {
            return Ok(None);
        }
        let ppn = self.lookup(lpa, hid, ppid);
        Ok(Some(flash.read(ppn, Cause::Host)?))
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        // Invalidate first, so that GC triggered by this write sees the stale copy.
        self.trim(lpa, flash)?;
        self.make_room(flash)?;
        let digest = self.hasher.digest(lpa);
        let ppb = self.layout.pages_per_block;
        for hid in 1..=self.hash_functions {
            let block = self.hasher.target(digest, hid);
            if self.role[block as usize] == Role::Hashed && !flash.is_full(block) {
                let ppid = flash.write_pointer(block);
                flash.program(block * ppb + ppid, Oob { lpa, seq }, &[], Cause::Host)?;
                self.hashed_free -= 1;
                self.file_if_full(block, flash);
                self.primary.set(lpa, hid, ppid);
                return Ok(());
            }
        }
        // Hash collision: every block the page can reach is full.
        self.counters.hash_collisions += 1;
        if self.secondary_len >= self.capacity && self.reclaim_any(flash)? == 0 {
            return Err(Error::DeviceFull {
                message: format!(
                    "the HPFTL secondary table is full ({} entries) and no reclaim can empty it \
                     (raise hpftl.secondary_fraction, hpftl.hid_bits or ftl.over_provisioning)",
                    self.capacity
                ),
            });
        }
        let dst = self.log_page(flash)?;
        flash.program(dst, Oob { lpa, seq }, &[], Cause::Host)?;
        self.log_programmed(flash);
        self.secondary_insert(lpa, dst);
        Ok(())
    }

    fn reset_counters(&mut self) {
        self.counters = Counters::default();
    }

    /// Background GC: one reclaim while the secondary table is at its reclaim point and one
    /// collection while the hashed blocks' free pages are under the soft threshold, each
    /// only if the die it starts on has no background work queued (the simulator calls the
    /// hook again while it collects, and sets [`Flash::set_background`]).
    fn idle(&mut self, flash: &mut Flash) -> Result<()> {
        if self.secondary_len >= self.reclaim_at && self.pool.total() > 1 {
            if let Some(unit) = self.next_pool_unit() {
                if !flash.background_busy(unit) {
                    self.reclaim_any(flash)?;
                }
            }
        }
        if self.hashed_free < self.soft_pages && self.pool.total() >= POOL_MIN {
            if let Some((victim, _)) = self.next_victim() {
                if !flash.background_busy(self.layout.unit_of_block(victim)) {
                    self.collect_one(flash)?;
                }
            }
        }
        Ok(())
    }

    #[inline]
    fn has_idle_work(&mut self) -> bool {
        self.background
            && (self.hashed_free < self.soft_pages || self.secondary_len >= self.reclaim_at)
    }

    fn background_gc(&self) -> bool {
        self.background
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let (hid, ppid) = self.primary.get(lpa);
        if hid == 0 {
            return Ok(());
        }
        let ppn = self.lookup(lpa, hid, ppid);
        if hid == self.secondary_hid {
            self.secondary_len -= 1;
        }
        self.invalidate(ppn, flash)?;
        self.primary.clear(lpa);
        Ok(())
    }

    /// A block whose every page one of its own hash functions maps to it is a hashed block
    /// (host writes and reclaims only put such pages there), its current pages back in the
    /// primary table; any other block holding current pages is a log block, its pages in
    /// the secondary table (with their reclaim candidates); log blocks holding none are
    /// erased. Erased blocks refill the pool, the rest are hashed; the log block written
    /// last stays open, other partly written ones are closed with fillers. Then reclaims
    /// and GC run as before a host write, should the secondary table or the pool be short.
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        crate::device::recovery::revalidate_live(found, flash)?;
        let ppb = self.layout.pages_per_block;
        let blocks = self.layout.total_blocks;
        let mut live = vec![0u32; blocks as usize];
        for &p in found.live.iter().filter(|&&p| p != NONE) {
            live[flash.block_of(p) as usize] += 1;
        }
        self.pool = FreeBlocks::empty(&self.layout);
        self.hashed_free = 0;
        self.log_open = NONE;
        let mut open_logs = Vec::new();
        for block in 0..blocks {
            let first = flash.first_page(block);
            let mut hashed = true;
            for p in first..first + flash.write_pointer(block) {
                let lpa = flash.oob(p).lpa;
                if flash.is_programmed(p) && lpa != NONE {
                    let digest = self.hasher.digest(lpa);
                    if !(1..=self.hash_functions).any(|h| self.hasher.target(digest, h) == block) {
                        hashed = false;
                        break;
                    }
                }
            }
            if !hashed && live[block as usize] == 0 {
                flash.erase(block, Cause::Gc)?;
            }
            self.role[block as usize] = if flash.is_erased(block) {
                Role::Pool
            } else if hashed {
                Role::Hashed
            } else {
                Role::Log
            };
            match self.role[block as usize] {
                Role::Hashed => self.hashed_free += (ppb - flash.write_pointer(block)) as u64,
                Role::Log if !flash.is_full(block) => open_logs.push(block),
                _ => {}
            }
        }
        // The erased blocks: the first of each unit in turn refill the pool.
        let units = self.layout.units;
        let mut pooled = 0;
        for i in 0..self.layout.blocks_per_unit {
            for unit in 0..units {
                let block = unit * self.layout.blocks_per_unit + i;
                if self.role[block as usize] != Role::Pool {
                    continue;
                }
                if pooled < POOL_TARGET {
                    self.pool.push(&self.layout, block);
                    pooled += 1;
                } else {
                    self.role[block as usize] = Role::Hashed;
                    self.hashed_free += ppb as u64;
                }
            }
        }
        let recency = |b: u32| found.block_last_prog.get(b as usize).copied().unwrap_or(0);
        open_logs.sort_by_key(|&b| (recency(b), b));
        if let Some(last) = open_logs.pop() {
            self.log_open = last;
        }
        for block in open_logs {
            crate::device::recovery::pad_block(flash, block)?;
        }
        for block in 0..blocks {
            if block != self.log_open {
                self.file_if_full(block, flash);
            }
        }
        for (lpa, &ppn) in found.live.iter().enumerate() {
            if ppn == NONE {
                continue;
            }
            let lpa = lpa as u32;
            let block = flash.block_of(ppn);
            if self.role[block as usize] == Role::Hashed {
                let digest = self.hasher.digest(lpa);
                let hid = (1..=self.hash_functions)
                    .find(|&h| self.hasher.target(digest, h) == block)
                    .ok_or_else(|| {
                        Error::Usage(format!(
                            "internal error: HPFTL recovery filed block {block} as hashed, but \
                             logical page {lpa} in it does not hash to it"
                        ))
                    })?;
                self.primary.set(lpa, hid, flash.page_offset(ppn));
            } else {
                self.secondary_insert(lpa, ppn);
            }
        }
        self.make_room(flash)
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        out.push(("primary_table", self.primary.bytes()));
        out.push(("secondary_table", self.capacity * SECONDARY_ENTRY_BYTES));
        hashed::bookkeeping_memory(&self.layout, out);
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        let c = &self.counters;
        let page_table = hashed::page_table_bytes(&self.layout) as f64;
        let secondary = (self.capacity * SECONDARY_ENTRY_BYTES) as f64;
        out.push(("hash_collisions", c.hash_collisions as f64));
        out.push(("secondary_entries", self.secondary_len as f64));
        out.push(("secondary_entries_peak", c.secondary_peak as f64));
        out.push(("secondary_capacity", self.capacity as f64));
        out.push(("secondary_inserts_by_gc", c.secondary_inserts_by_gc as f64));
        out.push(("reclaims", c.reclaims as f64));
        out.push((
            "reclaims_without_candidates",
            c.reclaims_without_candidates as f64,
        ));
        out.push((
            "reclaims_into_open_blocks",
            c.reclaims_into_open_blocks as f64,
        ));
        out.push(("reclaim_pages_moved", c.reclaim_pages_moved as f64));
        out.push(("gc_hashed_victims", c.gc_hashed_victims as f64));
        out.push(("gc_log_victims", c.gc_log_victims as f64));
        out.push(("gc_in_place", c.gc_in_place as f64));
        out.push((
            "primary_vs_page_table",
            self.primary.bytes() as f64 / page_table,
        ));
        out.push(("secondary_vs_page_table", secondary / page_table));
        out.push((
            "mapping_vs_page_table",
            (self.primary.bytes() as f64 + secondary) / page_table,
        ));
    }
}
