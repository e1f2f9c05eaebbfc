//! The demand-cached family (DFTL, S-FTL, TPFTL, selective mapping-table loading: one
//! module each) and what it shares: the page-level table kept on flash, the mechanism
//! under their different caches.
//!
//! The whole logical-to-physical table lives in translation units on flash: a unit is
//! `unit_pages` translation pages (one for DFTL, S-FTL and TPFTL; a 64 KiB mapping block
//! for the selective scheme) holding `unit_pages x floor(page_size / E)` consecutive
//! entries, E being the geometry's physical-address size. The [`TranslationStore`] places
//! the pages (their own blocks, GC, the directory); this module keeps what they hold (the
//! table as last written to flash, which is simulation state and not DRAM) and the
//! accounting every scheme reports: lookups and hits, translation reads and writes by
//! purpose, evictions, prefetches, and the time misses add to requests.
//!
//! A scheme reads a unit's entries only after paying for its read ([`OnFlashTable::fetch`]),
//! and changes them only by writing the unit back ([`OnFlashTable::write_back`]) or by
//! staging GC's relocations of pages whose entries it does not cache
//! ([`OnFlashTable::stage_gc_update`], then [`OnFlashTable::commit_gc_updates`]: one read
//! and one write per unit, DFTL's batch update). Translation operations are serial with
//! the request that needs them: a data access waits for the translation read, a miss waits
//! for the write-back of the dirty victim it evicts (as DFTL's cost model has it).

pub mod dftl;
pub mod selective;
pub mod sftl;
pub mod tpftl;

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob, Ppn, NONE};
use crate::divide::DivideBy;
use crate::error::Result;
use crate::ftl::kit::alloc::Move;
use crate::ftl::kit::mapcache::NIL;
use crate::ftl::kit::translation::TranslationStore;
use crate::ftl::settings::DramConfig;
use crate::ftl::settings::SchemeContext;
use crate::ftl::MemoryBreakdown;
use std::ops::Range;

/// Counters every demand-cached scheme reports.
#[derive(Clone, Debug, Default)]
pub struct DemandStats {
    /// Translations asked of the mapping cache (one per page read, write or trim).
    pub lookups: u64,
    /// Of which found in the cache.
    pub hits: u64,
    /// Translation units read to serve misses (prefetching included).
    pub miss_reads: u64,
    /// Translation pages read / written to write dirty entries back.
    pub writeback_reads: u64,
    pub writeback_writes: u64,
    /// Translation pages read / written to record GC's relocations of uncached entries.
    pub gc_update_reads: u64,
    pub gc_update_writes: u64,
    /// Evictions that wrote mapping state back to flash / that did not.
    pub dirty_evictions: u64,
    pub clean_evictions: u64,
    /// Entries loaded beyond the one missed.
    pub prefetched_entries: u64,
    /// Time the miss handling (victim write-back and translation read) delayed requests.
    pub miss_delay_ns: u64,
}

pub struct OnFlashTable {
    pub store: TranslationStore,
    /// The table as stored in the translation pages (simulation state: what a read of a
    /// translation page returns).
    flash_table: Vec<Ppn>,
    /// Translation pages per unit.
    unit_pages: u32,
    /// Entries per unit, and division by it as a multiplication.
    unit_entries: u32,
    unit_divide: DivideBy,
    /// Bytes of a logical and of a physical page address.
    pub lpa_bytes: u64,
    pub ppa_bytes: u64,
    timed: bool,
    /// Whole-unit write-backs run in the background: the request that evicts does not wait
    /// for them (they still take their dies' time).
    background_writeback: bool,
    /// A unit's pages are read and written as one vector command each
    /// ([`Flash::begin_command`]): one command's time, not one per page.
    unit_command: bool,
    /// Units holding staged GC updates, and their marks.
    staged: Vec<u32>,
    staged_mark: Vec<bool>,
    pub stats: DemandStats,
}

/// Bytes of an address of `count` distinct values (whole bytes, as MQSim sizes them).
pub fn address_bytes(count: u64) -> u64 {
    let bits = 64 - (count.max(2) - 1).leading_zeros() as u64;
    bits.div_ceil(8)
}

/// A translation page's bytes: its entries, `width` bytes each, little-endian, unmapped as
/// all ones (the page-address width leaves that value free unless the device has exactly
/// 2^(8 x width) pages).
pub fn encode_entries(entries: &[Ppn], width: usize, out: &mut Vec<u8>) {
    for &ppn in entries {
        out.extend_from_slice(&ppn.to_le_bytes()[..width]);
    }
}

/// The entries a translation page's bytes hold (see [`encode_entries`]).
pub fn decode_entries(bytes: &[u8], width: usize, count: usize, out: &mut Vec<Ppn>) {
    let unmapped = (1u64 << (8 * width)) - 1;
    for chunk in bytes.chunks_exact(width).take(count) {
        let mut raw = [0u8; 4];
        raw[..width].copy_from_slice(chunk);
        let v = u32::from_le_bytes(raw);
        out.push(if v as u64 == unmapped { NONE } else { v });
    }
}

impl OnFlashTable {
    /// The table of a fresh device, in units of `unit_pages` translation pages.
    pub fn new(cfg: &SchemeContext, layout: &Layout, unit_pages: u32) -> Result<Self> {
        let ppa_bytes = layout.ppa_entry_bytes();
        let per_page = (layout.page_size as u64 / ppa_bytes) as u32;
        let unit_entries = per_page * unit_pages;
        let units = layout.logical_pages.div_ceil(unit_entries as u64) as u32;
        Ok(OnFlashTable {
            store: TranslationStore::new(cfg, layout, units * unit_pages)?,
            flash_table: vec![NONE; layout.logical_pages as usize],
            unit_pages,
            unit_entries,
            unit_divide: DivideBy::new(unit_entries),
            lpa_bytes: address_bytes(layout.logical_pages),
            ppa_bytes,
            timed: cfg.timed,
            background_writeback: false,
            unit_command: false,
            staged: Vec::new(),
            staged_mark: vec![false; units as usize],
            stats: DemandStats::default(),
        })
    }

    /// Makes whole-unit write-backs (those without a read) background work, as an evict
    /// thread does them.
    pub fn set_background_writeback(&mut self, on: bool) {
        self.background_writeback = on;
    }

    /// Makes each read and each write of a whole unit one vector command
    /// ([`Flash::begin_command`]): its pages are still read and programmed, but the unit
    /// takes one command's time.
    pub fn set_unit_command(&mut self, on: bool) {
        self.unit_command = on;
    }

    /// Number of translation units.
    #[inline]
    pub fn units(&self) -> u32 {
        self.staged_mark.len() as u32
    }

    /// Entries per translation unit.
    #[inline]
    pub fn unit_entries(&self) -> u32 {
        self.unit_entries
    }

    #[inline]
    pub fn unit_of(&self, lpa: u32) -> u32 {
        self.unit_divide.divide(lpa)
    }

    /// The logical pages unit `u` maps.
    #[inline]
    pub fn unit_range(&self, u: u32) -> Range<u32> {
        let start = u * self.unit_entries;
        let end = (start as u64 + self.unit_entries as u64).min(self.flash_table.len() as u64);
        start..end as u32
    }

    /// Entry of `lpa` as stored on flash: only for a unit just fetched (or written back).
    #[inline]
    pub fn stored(&self, lpa: u32) -> Ppn {
        self.flash_table[lpa as usize]
    }

    /// Entries of unit `u` as stored on flash: only for a unit just fetched.
    #[inline]
    pub fn stored_unit(&self, u: u32) -> &[Ppn] {
        let r = self.unit_range(u);
        &self.flash_table[r.start as usize..r.end as usize]
    }

    /// Whether unit `u` was ever written (a unit never written maps nothing, and the
    /// directory says so without a flash read).
    #[inline]
    pub fn unit_exists(&self, u: u32) -> bool {
        self.store.location(u * self.unit_pages).is_some()
    }

    /// Reads the pages of unit `u`, all issued at once (they sit on different parallel
    /// units when the unit spans several pages); returns the number of pages read.
    /// With [`Self::set_unit_command`], they are one vector command.
    fn read_unit(&mut self, u: u32, flash: &mut Flash) -> Result<u64> {
        if self.unit_command {
            flash.begin_command();
        }
        let mut read = 0;
        let mut result = Ok(());
        for p in 0..self.unit_pages {
            match self.store.read(u * self.unit_pages + p, flash) {
                Ok(r) => read += r as u64,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if self.unit_command {
            flash.end_command();
        }
        result.map(|()| read)
    }

    /// Writes every page of unit `u` (striped over the parallel units by the allocator),
    /// each holding its entries ([`encode_entries`]); with [`Self::set_unit_command`], as
    /// one vector command (GC that the allocation triggers is timed on its own).
    fn write_unit(&mut self, u: u32, flash: &mut Flash) -> Result<u64> {
        let range = self.unit_range(u);
        let per_page = (self.unit_entries / self.unit_pages) as usize;
        if self.unit_command {
            flash.begin_command();
        }
        let mut result = Ok(());
        for p in 0..self.unit_pages {
            let entries = self.flash_table[range.start as usize..range.end as usize]
                .chunks(per_page)
                .nth(p as usize)
                .unwrap_or(&[]);
            let width = self.ppa_bytes as usize;
            result = self.store.write(u * self.unit_pages + p, flash, |buf| {
                encode_entries(entries, width, buf)
            });
            if result.is_err() {
                break;
            }
        }
        if self.unit_command {
            flash.end_command();
        }
        result.map(|()| self.unit_pages as u64)
    }

    /// Starts timing miss handling.
    #[inline]
    pub fn miss_started(&self, flash: &Flash) -> u64 {
        flash.cursor()
    }

    /// Ends timing miss handling started at `t0`.
    #[inline]
    pub fn miss_ended(&mut self, flash: &Flash, t0: u64) {
        if self.timed {
            self.stats.miss_delay_ns += flash.cursor().saturating_sub(t0);
        }
    }

    /// Reads unit `u` to serve a miss; the request waits for it. Its entries are then
    /// available through [`Self::stored`].
    pub fn fetch(&mut self, u: u32, flash: &mut Flash) -> Result<()> {
        self.stats.miss_reads += self.read_unit(u, flash)?;
        flash.chain();
        Ok(())
    }

    /// Writes unit `u` back with `update` applied to its entries. `read_first`: the cache
    /// holds only some of the unit's entries, so the unit is read, merged and written
    /// (read-modify-write); otherwise the cache holds the whole unit and only writes it.
    /// GC triggered by the write may move data pages: settle them afterwards.
    pub fn write_back(
        &mut self,
        u: u32,
        read_first: bool,
        flash: &mut Flash,
        update: impl FnOnce(&mut [Ppn], u32),
    ) -> Result<()> {
        if read_first {
            self.stats.writeback_reads += self.read_unit(u, flash)?;
            flash.chain();
        }
        let r = self.unit_range(u);
        update(
            &mut self.flash_table[r.start as usize..r.end as usize],
            r.start,
        );
        if self.background_writeback && !read_first {
            flash.set_background(true);
            let written = self.write_unit(u, flash);
            flash.set_background(false);
            self.stats.writeback_writes += written?;
        } else {
            self.stats.writeback_writes += self.write_unit(u, flash)?;
            flash.chain();
        }
        Ok(())
    }

    /// Records that GC moved the data page of `lpa`, whose entry the cache does not hold,
    /// to `ppn`. The unit is rewritten by [`Self::commit_gc_updates`].
    #[inline]
    pub fn stage_gc_update(&mut self, lpa: u32, ppn: Ppn) {
        self.flash_table[lpa as usize] = ppn;
        let u = self.unit_of(lpa);
        if !self.staged_mark[u as usize] {
            self.staged_mark[u as usize] = true;
            self.staged.push(u);
        }
    }

    /// Rewrites every unit with staged GC updates: one read and one write each (DFTL's
    /// batch update). GC triggered by the writes may move data pages again: settle them.
    pub fn commit_gc_updates(&mut self, flash: &mut Flash) -> Result<()> {
        let mut i = 0;
        while i < self.staged.len() {
            let u = self.staged[i];
            self.staged_mark[u as usize] = false;
            self.stats.gc_update_reads += self.read_unit(u, flash)?;
            flash.chain();
            self.stats.gc_update_writes += self.write_unit(u, flash)?;
            flash.chain();
            i += 1;
        }
        self.staged.clear();
        Ok(())
    }

    /// The next free page for a host data write (GC may move data pages: settle them).
    #[inline]
    pub fn data_page(&mut self, flash: &mut Flash) -> Result<Ppn> {
        self.store.data_page(flash)
    }

    /// The host write of `lpa` whose data was at `old` (`NONE`: unmapped): invalidates
    /// `old` first, so that GC triggered by this write sees the stale copy, then programs
    /// the next free data page and returns it. GC's moves are left for the caller to settle.
    #[inline]
    pub fn program_data(&mut self, lpa: u32, seq: u64, old: Ppn, flash: &mut Flash) -> Result<Ppn> {
        if old != NONE {
            flash.invalidate(old)?;
        }
        let ppn = self.store.data_page_for(lpa, flash)?;
        flash.program(ppn, Oob { lpa, seq }, &[], Cause::Host)?;
        Ok(ppn)
    }

    #[inline]
    pub fn has_moves(&self) -> bool {
        self.store.has_moves()
    }

    #[inline]
    pub fn take_moves(&mut self) -> Vec<Move> {
        self.store.take_moves()
    }

    #[inline]
    pub fn recycle_moves(&mut self, moves: Vec<Move>) {
        self.store.recycle_moves(moves)
    }

    /// After a restart, the scheme's cache empty: the data pages `found` keeps are valid,
    /// the latest copy of each translation page is located, and every unit whose
    /// translation pages do not hold what the OOB scan found (the cache's dirty entries were
    /// lost; the data pages' OOB is the truth) is written again, so that the table on flash
    /// is current. A unit's pages are compared by their bytes when the front kept them
    /// ([`crate::device::recovery::FlashImage::contents`]); without them every unit that maps
    /// anything is written again.
    pub fn recover(
        &mut self,
        found: &crate::device::recovery::Found,
        flash: &mut Flash,
    ) -> Result<()> {
        crate::device::recovery::revalidate_live(found, flash)?;
        self.flash_table.copy_from_slice(&found.live);
        let at = found.translation_pages(self.store.pages());
        self.store.recover(&at, flash)?;
        let mut pending = vec![false; self.units() as usize];
        let per_page = (self.unit_entries / self.unit_pages) as usize;
        let width = self.ppa_bytes as usize;
        let mut decoded = Vec::with_capacity(per_page);
        let mut todo: Vec<u32> = Vec::new();
        for u in 0..self.units() {
            let entries = self.stored_unit(u);
            if !self.unit_exists(u) && entries.iter().all(|&p| p == NONE) {
                continue;
            }
            let current = entries.chunks(per_page).enumerate().all(|(p, want)| {
                let page = at[(u * self.unit_pages) as usize + p];
                decoded.clear();
                if let Some(bytes) = found.contents.get(&page) {
                    decode_entries(bytes, width, want.len(), &mut decoded);
                }
                page != NONE && decoded == want
            });
            if !current {
                todo.push(u);
            }
        }
        todo.reverse();
        for &u in &todo {
            pending[u as usize] = true;
        }
        while let Some(u) = todo.pop() {
            pending[u as usize] = false;
            self.write_unit(u, flash)?;
            // GC triggered by the writes moved data pages: their units are written again.
            let moves = self.store.take_moves();
            for m in &moves {
                self.flash_table[m.key as usize] = m.to;
                let mu = self.unit_of(m.key);
                if !pending[mu as usize] {
                    pending[mu as usize] = true;
                    todo.push(mu);
                }
            }
            self.store.recycle_moves(moves);
        }
        Ok(())
    }

    /// The directory and the GC bookkeeping.
    pub fn memory(&self, out: &mut MemoryBreakdown) {
        self.store.memory(out)
    }

    /// The counters every demand-cached scheme reports.
    pub fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        let s = &self.stats;
        let misses = s.lookups - s.hits;
        out.push(("cache_lookups", s.lookups as f64));
        out.push(("cache_hits", s.hits as f64));
        out.push(("cache_misses", misses as f64));
        out.push((
            "cache_hit_ratio",
            if s.lookups == 0 {
                0.0
            } else {
                s.hits as f64 / s.lookups as f64
            },
        ));
        out.push(("translation_reads_miss", s.miss_reads as f64));
        out.push(("translation_reads_writeback", s.writeback_reads as f64));
        out.push(("translation_writes_writeback", s.writeback_writes as f64));
        out.push(("translation_reads_gc_update", s.gc_update_reads as f64));
        out.push(("translation_writes_gc_update", s.gc_update_writes as f64));
        out.push((
            "translation_pages_moved_by_gc",
            self.store.pages_moved_by_gc() as f64,
        ));
        out.push(("dirty_evictions", s.dirty_evictions as f64));
        out.push(("clean_evictions", s.clean_evictions as f64));
        out.push(("prefetched_entries", s.prefetched_entries as f64));
        if self.timed {
            out.push(("miss_delay_ns_total", s.miss_delay_ns as f64));
            out.push((
                "miss_delay_ns_mean",
                if misses == 0 {
                    0.0
                } else {
                    s.miss_delay_ns as f64 / misses as f64
                },
            ));
        }
    }
}

/// A demand-cached scheme as GC's data-page moves see it: its table on flash and its DRAM
/// copy of some of the entries.
pub trait CachesEntries {
    fn table(&mut self) -> &mut OnFlashTable;
    /// Applies a GC move to the DRAM copy of its entry; false if the entry is not in DRAM.
    fn move_cached(&mut self, m: &Move) -> bool;
}

/// Background GC between requests, then its moves settled ([`crate::ftl::Ftl::idle`]).
#[inline]
pub fn idle<S: CachesEntries>(scheme: &mut S, flash: &mut Flash) -> Result<()> {
    scheme.table().store.idle_gc(flash)?;
    settle(scheme, flash)
}

/// Whether [`idle`] has work (background GC pending, or moves to settle).
#[inline]
pub fn has_idle_work<S: CachesEntries>(scheme: &mut S) -> bool {
    scheme.table().store.alloc.has_idle_work()
}

/// Applies GC's data-page moves: entries in DRAM in place, the others batched per
/// translation unit and written back (which may run GC again, hence the loop). Most calls
/// (after every request) find none: that check is inline.
#[inline]
pub fn settle<S: CachesEntries>(scheme: &mut S, flash: &mut Flash) -> Result<()> {
    if scheme.table().has_moves() {
        settle_moves(scheme, flash)?;
    }
    Ok(())
}

#[inline(never)]
fn settle_moves<S: CachesEntries>(scheme: &mut S, flash: &mut Flash) -> Result<()> {
    while scheme.table().has_moves() {
        let moves = scheme.table().take_moves();
        for m in &moves {
            if !scheme.move_cached(m) {
                let table = scheme.table();
                debug_assert_eq!(table.stored(m.key), m.from);
                table.stage_gc_update(m.key, m.to);
            }
        }
        let table = scheme.table();
        table.recycle_moves(moves);
        table.commit_gc_updates(flash)?;
    }
    Ok(())
}

/// DFTL and TPFTL: schemes whose cache holds single mapping entries, each in a slot. Their
/// reads, writes, trims and GC moves go through the slot alike, written once here.
pub trait CachesSingleEntries: CachesEntries {
    /// The slot holding `lpa`'s entry, or `NIL` when it is not cached.
    fn cached_slot(&self, lpa: u32) -> u32;
    /// The physical page of the entry in `slot`.
    fn slot_ppn(&mut self, slot: u32) -> &mut Ppn;
    fn mark_dirty(&mut self, slot: u32);
    /// A hit on `slot`: updates the replacement order.
    fn touch(&mut self, slot: u32);
    /// Loads `lpa`'s entry, not cached, into a slot (evicting as needed) and returns it.
    fn miss(&mut self, lpa: u32, flash: &mut Flash) -> Result<u32>;

    /// The slot holding `lpa`'s entry, loaded on a miss; counts the lookup and the hit.
    #[inline]
    fn translate(&mut self, lpa: u32, flash: &mut Flash) -> Result<u32> {
        self.table().stats.lookups += 1;
        let slot = self.cached_slot(lpa);
        if slot != NIL {
            self.table().stats.hits += 1;
            self.touch(slot);
            return Ok(slot);
        }
        self.miss(lpa, flash)
    }
}

/// The host read of the data page `ppn` (`NONE`: unmapped, nothing to read).
#[inline]
pub fn read_data(ppn: Ppn, flash: &mut Flash) -> Result<Option<Oob>> {
    if ppn == NONE {
        return Ok(None);
    }
    Ok(Some(flash.read(ppn, Cause::Host)?))
}

/// A host read of `lpa` through its cached entry (loaded on a miss).
#[inline]
pub fn read_entry<S: CachesSingleEntries>(
    scheme: &mut S,
    lpa: u32,
    flash: &mut Flash,
) -> Result<Option<Oob>> {
    let slot = scheme.translate(lpa, flash)?;
    read_data(*scheme.slot_ppn(slot), flash)
}

/// A host write of `lpa`: the old page invalidated, the new one programmed, the entry
/// dirty, then GC's moves settled.
#[inline]
pub fn write_entry<S: CachesSingleEntries>(
    scheme: &mut S,
    lpa: u32,
    seq: u64,
    flash: &mut Flash,
) -> Result<()> {
    let slot = scheme.translate(lpa, flash)?;
    let old = *scheme.slot_ppn(slot);
    let ppn = scheme.table().program_data(lpa, seq, old, flash)?;
    *scheme.slot_ppn(slot) = ppn;
    scheme.mark_dirty(slot);
    settle(scheme, flash)
}

/// A trim of `lpa`: its page invalidated, its entry unmapped and dirty.
pub fn trim_entry<S: CachesSingleEntries>(
    scheme: &mut S,
    lpa: u32,
    flash: &mut Flash,
) -> Result<()> {
    let slot = scheme.translate(lpa, flash)?;
    let old = *scheme.slot_ppn(slot);
    if old != NONE {
        flash.invalidate(old)?;
        *scheme.slot_ppn(slot) = NONE;
        scheme.mark_dirty(slot);
    }
    Ok(())
}

/// [`CachesEntries::move_cached`] for single entries: a cached entry takes the move and
/// becomes dirty.
pub fn move_cached_entry<S: CachesSingleEntries>(scheme: &mut S, m: &Move) -> bool {
    let slot = scheme.cached_slot(m.key);
    if slot == NIL {
        return false;
    }
    debug_assert_eq!(*scheme.slot_ppn(slot), m.from);
    *scheme.slot_ppn(slot) = m.to;
    scheme.mark_dirty(slot);
    true
}

/// Entries of `entry_bytes` the DRAM budget holds, at most `all` (0 bytes: unlimited); at
/// least one, or the error names the budget's key.
pub fn entries_in_budget(
    dram: &DramConfig,
    layout: &Layout,
    entry_bytes: u64,
    all: u64,
    what: &str,
) -> Result<u32> {
    let budget_bytes = dram.budget(layout);
    if budget_bytes == 0 {
        return Ok(all as u32);
    }
    let n = (budget_bytes / entry_bytes).min(all);
    if n == 0 {
        return Err(crate::error::Error::config(
            dram.budget_key(),
            format!("{budget_bytes} bytes cannot hold a single {what} of {entry_bytes} bytes"),
        ));
    }
    Ok(n as u32)
}
