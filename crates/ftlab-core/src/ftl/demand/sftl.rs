//! S-FTL: page-level mapping with whole translation pages cached compressed (Jiang, Zhang,
//! Yuan, Hu and Chen, MSST 2011; FTL-algorithms spec section 6).
//!
//! The page-level table lives on flash as in DFTL, but the cache unit is a whole
//! translation page (a miss brings in all its neighbours: clustered access), kept
//! compressed: a run of entries whose physical pages follow one another (sequential
//! writes, in the allocator's stripe order over the parallel units) costs one stored
//! address. A cached page costs `E x runs + ceil(EPT x b / 8) + 4`
//! bytes (E: physical-address bytes; a run-head bitmap of `bits_per_entry` = b bits per
//! entry; a 4-byte page number), so the budget holds a variable number of pages, evicted in
//! LRU order until the cache fits. A run starts at the page's first entry, after an
//! unmapped entry, or where the physical page is not the previous one plus one; a stretch
//! of unmapped entries is one run.
//!
//! Sparse writes: evicting a cached page with few dirty entries (at most
//! `sparse_max_entries`) moves them to a small dirty buffer (a share of the budget, at
//! (logical + physical address bytes) per entry) instead of rewriting the page; a lookup
//! that finds its entry there is a hit, and loading the page merges its buffered entries.
//! When the buffer is full, the page with the most buffered entries is written back (one
//! read-modify-write). Other dirty pages are written back whole on eviction (one write, no
//! read: the cache holds the whole page). Writes load the page like reads (the old
//! location must be invalidated). GC updates cached pages and buffered entries in place
//! and batches the rest per translation page, as DFTL.

use crate::device::geometry::Layout;
use crate::device::nand::{Flash, Oob, Ppn, NONE};
use crate::error::{Error, Result};
use crate::ftl::demand::{self, read_data, settle, CachesEntries, OnFlashTable};
use crate::ftl::kit::alloc::{Move, StripeOrder};
use crate::ftl::kit::mapcache::{IndexedHeap, Links, List, Replacement, ReplacementKind, NIL};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use serde::{Deserialize, Serialize};

/// The `[sftl]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SftlConfig {
    /// Bits per entry of the run-head bitmap: 1 (the paper) or 2 (LeaFTL's model).
    pub bits_per_entry: u32,
    /// Share of the DRAM budget kept for the dirty buffer (0: no buffer).
    pub dirty_buffer_fraction: f64,
    /// A page evicted with at most this many dirty entries sends them to the dirty buffer.
    pub sparse_max_entries: u32,
    /// Replacement of cached pages: `lru` (the paper's) or `slru`.
    pub replacement: ReplacementKind,
}

impl Default for SftlConfig {
    fn default() -> Self {
        SftlConfig {
            bits_per_entry: 1,
            dirty_buffer_fraction: 0.1,
            sparse_max_entries: 16,
            replacement: ReplacementKind::Lru,
        }
    }
}

/// Bytes of a translation page's number in the cache.
const PAGE_ID_BYTES: u64 = 4;

/// Whether an entry `cur` starts a run after the entry `prev` (each with its stripe
/// position, [`placed`]). A run is a stretch of consecutive positions in the allocator's
/// stripe order ([`StripeOrder`]), so a sequential write striped over the channels stays
/// one run; unmapped entries make one run together.
#[inline]
fn starts_run(prev: (Ppn, u64), cur: (Ppn, u64)) -> bool {
    let (p, p_pos) = prev;
    let (c, c_pos) = cur;
    if c == NONE {
        p != NONE
    } else {
        p == NONE || c_pos != p_pos + 1
    }
}

/// An entry with its stripe position (0 when unmapped): each position computed once.
#[inline]
fn placed(stripe: &StripeOrder, ppn: Ppn) -> (Ppn, u64) {
    (ppn, if ppn == NONE { 0 } else { stripe.position(ppn) })
}

/// How many of entries `i` and `i + 1` start a run when entry `i` is `cur`, between
/// `prev` (entry `i - 1`, if any) and `next` (entry `i + 1`, if any), each placed.
#[inline]
fn heads_around(prev: Option<(Ppn, u64)>, cur: (Ppn, u64), next: Option<(Ppn, u64)>) -> u32 {
    prev.is_none_or(|p| starts_run(p, cur)) as u32 + next.is_some_and(|n| starts_run(cur, n)) as u32
}

pub struct Sftl {
    table: OnFlashTable,
    stripe: StripeOrder,
    /// The DRAM image of every cached page (entries of uncached pages are meaningless).
    view: Vec<Ppn>,
    /// The stripe position of each entry of the view ([`placed`]; below the physical pages,
    /// so 32 bits): an update compares its neighbours' without computing them again.
    view_pos: Vec<u32>,
    cached: Vec<bool>,
    /// Per cached page: runs, and entries that differ from flash.
    runs: Vec<u32>,
    dirty_entries: Vec<u32>,
    /// Per logical page of a cached page: differs from flash.
    entry_dirty: Vec<bool>,
    replacement: Replacement,
    used_bytes: u64,
    cache_budget: u64,
    fixed_page_bytes: u64,
    ppa_bytes: u64,
    // The dirty buffer.
    buffer_slot_of: Vec<u32>,
    buffer_lpa: Vec<u32>,
    buffer_ppn: Vec<Ppn>,
    buffer_free: Vec<u32>,
    buffer_links: Links,
    buffered_of_page: Vec<List>,
    /// Pages with buffered entries, the most first.
    buffered_pages: IndexedHeap,
    buffer_entry_bytes: u64,
    sparse_max_entries: u32,
    buffered_evictions: u64,
    buffer_flushes: u64,
}

impl Scheme for Sftl {
    const NAME: &'static str = "sftl";
    const DESCRIPTION: &'static str =
        "S-FTL (MSST'11): whole translation pages cached compressed (runs of sequential PPNs), dirty buffer";
    type Section = SftlConfig;
    const ADVISE: &'static str = r#"dirty_buffer_fraction = [0.05, 0.2]"#;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c = Self::section(cfg)?;
        if !(1..=2).contains(&c.bits_per_entry) {
            return Err(Error::config("sftl.bits_per_entry", "must be 1 or 2"));
        }
        if !(0.0..1.0).contains(&c.dirty_buffer_fraction) {
            return Err(Error::config(
                "sftl.dirty_buffer_fraction",
                format!("{} is not a fraction in [0, 1)", c.dirty_buffer_fraction),
            ));
        }
        let table = OnFlashTable::new(cfg, layout, 1)?;
        let ept = table.unit_entries() as u64;
        let fixed_page_bytes = (ept * c.bits_per_entry as u64).div_ceil(8) + PAGE_ID_BYTES;
        let ppa_bytes = table.ppa_bytes;
        let buffer_entry_bytes = table.lpa_bytes + ppa_bytes;
        let budget = cfg.dram.budget(layout);
        let (cache_budget, buffer_entries) = if budget == 0 {
            (u64::MAX, 0)
        } else {
            let buffer_bytes = (budget as f64 * c.dirty_buffer_fraction) as u64;
            (budget - buffer_bytes, buffer_bytes / buffer_entry_bytes)
        };
        let worst_page = ept * ppa_bytes + fixed_page_bytes;
        if cache_budget < worst_page {
            return Err(Error::config(
                cfg.dram.budget_key(),
                format!(
                    "S-FTL needs room for one uncompressed translation page ({worst_page} bytes) \
                     besides its dirty buffer; the budget leaves {cache_budget}"
                ),
            ));
        }
        let units = table.units() as usize;
        let pages = layout.logical_pages as usize;
        let b = buffer_entries as usize;
        Ok(Sftl {
            stripe: StripeOrder::new(cfg, layout, 1),
            view: vec![NONE; pages],
            view_pos: vec![0; pages],
            cached: vec![false; units],
            runs: vec![0; units],
            dirty_entries: vec![0; units],
            entry_dirty: vec![false; pages],
            replacement: Replacement::new(c.replacement, units, 0.8),
            used_bytes: 0,
            cache_budget,
            fixed_page_bytes,
            ppa_bytes,
            buffer_slot_of: vec![NIL; if b > 0 { pages } else { 0 }],
            buffer_lpa: vec![NONE; b],
            buffer_ppn: vec![NONE; b],
            buffer_free: (0..buffer_entries as u32).rev().collect(),
            buffer_links: Links::new(b),
            buffered_of_page: vec![List::EMPTY; if b > 0 { units } else { 0 }],
            buffered_pages: IndexedHeap::new(if b > 0 { units } else { 0 }),
            buffer_entry_bytes,
            sparse_max_entries: c.sparse_max_entries,
            buffered_evictions: 0,
            buffer_flushes: 0,
            table,
        })
    }
}

impl Sftl {
    #[inline]
    fn page_bytes(&self, page: u32) -> u64 {
        self.runs[page as usize] as u64 * self.ppa_bytes + self.fixed_page_bytes
    }

    #[inline]
    fn buffered(&self, lpa: u32) -> u32 {
        match self.buffer_slot_of.get(lpa as usize) {
            Some(&s) => s,
            None => NIL,
        }
    }

    /// The current mapping of `lpa`, loading its page on a miss.
    #[inline]
    fn translate(&mut self, lpa: u32, flash: &mut Flash) -> Result<Ppn> {
        self.table.stats.lookups += 1;
        let page = self.table.unit_of(lpa);
        if self.cached[page as usize] {
            self.table.stats.hits += 1;
            self.replacement.touch(page);
            return Ok(self.view[lpa as usize]);
        }
        let slot = self.buffered(lpa);
        if slot != NIL {
            self.table.stats.hits += 1;
            return Ok(self.buffer_ppn[slot as usize]);
        }
        self.load(page, flash)?;
        Ok(self.view[lpa as usize])
    }

    /// Places entries `s..e` of the view (`view_pos`) and returns their runs.
    fn place_entries(&mut self, s: usize, e: usize) -> u32 {
        let mut runs = 0;
        let mut prev = None;
        for i in s..e {
            let cur = placed(&self.stripe, self.view[i]);
            self.view_pos[i] = cur.1 as u32;
            runs += prev.is_none_or(|p| starts_run(p, cur)) as u32;
            prev = Some(cur);
        }
        runs
    }

    fn load(&mut self, page: u32, flash: &mut Flash) -> Result<()> {
        let t0 = self.table.miss_started(flash);
        self.table.fetch(page, flash)?;
        let range = self.table.unit_range(page);
        let (s, e) = (range.start as usize, range.end as usize);
        self.view[s..e].copy_from_slice(self.table.stored_unit(page));
        // Buffered entries are newer than the page on flash: merge them (still dirty).
        let mut dirty = 0;
        if !self.buffered_of_page.is_empty() {
            let mut slot = self.buffered_of_page[page as usize].head;
            while slot != NIL {
                let lpa = self.buffer_lpa[slot as usize];
                self.view[lpa as usize] = self.buffer_ppn[slot as usize];
                self.entry_dirty[lpa as usize] = true;
                dirty += 1;
                self.buffer_slot_of[lpa as usize] = NIL;
                self.buffer_free.push(slot);
                slot = self.buffer_links.next(slot);
            }
            if dirty > 0 {
                self.buffered_of_page[page as usize] = List::EMPTY;
                self.buffered_pages.remove(page);
            }
        }
        self.runs[page as usize] = self.place_entries(s, e);
        self.dirty_entries[page as usize] = dirty;
        self.cached[page as usize] = true;
        self.used_bytes += self.page_bytes(page);
        self.replacement.insert(page);
        settle(self, flash)?;
        self.fit(page, flash)?;
        self.table.miss_ended(flash, t0);
        Ok(())
    }

    /// Evicts least recently used pages other than `keep` until the cache fits its budget.
    fn fit(&mut self, keep: u32, flash: &mut Flash) -> Result<()> {
        while self.used_bytes > self.cache_budget {
            let mut victim = self
                .replacement
                .victim()
                .expect("an over-full cache is not empty");
            if victim == keep {
                match self.replacement.next_victim(victim) {
                    Some(v) => victim = v,
                    None => break, // `keep` alone fits: the budget holds one worst-case page
                }
            }
            self.evict(victim, flash)?;
        }
        Ok(())
    }

    fn evict(&mut self, page: u32, flash: &mut Flash) -> Result<()> {
        let range = self.table.unit_range(page);
        let dirty = self.dirty_entries[page as usize];
        if dirty == 0 {
            self.table.stats.clean_evictions += 1;
        } else if dirty <= self.sparse_max_entries && dirty as usize <= self.buffer_lpa.len() {
            self.buffered_evictions += 1;
            while self.buffer_free.len() < dirty as usize {
                self.flush_buffer(flash)?;
            }
            for lpa in range.clone() {
                if self.entry_dirty[lpa as usize] {
                    self.buffer_insert(lpa, self.view[lpa as usize]);
                }
            }
        } else {
            self.table.stats.dirty_evictions += 1;
            let view = &self.view;
            self.table.write_back(page, false, flash, |entries, base| {
                let s = base as usize;
                entries.copy_from_slice(&view[s..s + entries.len()]);
            })?;
        }
        for lpa in range {
            self.entry_dirty[lpa as usize] = false;
        }
        self.dirty_entries[page as usize] = 0;
        self.used_bytes -= self.page_bytes(page);
        self.cached[page as usize] = false;
        self.replacement.remove(page);
        settle(self, flash)
    }

    fn buffer_insert(&mut self, lpa: u32, ppn: Ppn) {
        let slot = self
            .buffer_free
            .pop()
            .expect("room was made in the dirty buffer");
        self.buffer_slot_of[lpa as usize] = slot;
        self.buffer_lpa[slot as usize] = lpa;
        self.buffer_ppn[slot as usize] = ppn;
        let page = self.table.unit_of(lpa);
        let list = &mut self.buffered_of_page[page as usize];
        self.buffer_links.push_front(list, slot);
        let key = u64::MAX - list.len as u64;
        if self.buffered_pages.contains(page) {
            self.buffered_pages.set(page, key);
        } else {
            self.buffered_pages.push(page, key);
        }
    }

    /// Writes back the page with the most buffered entries (read-modify-write).
    fn flush_buffer(&mut self, flash: &mut Flash) -> Result<()> {
        let page = self
            .buffered_pages
            .min()
            .expect("a full buffer holds entries");
        self.buffered_pages.remove(page);
        self.buffer_flushes += 1;
        self.table.stats.dirty_evictions += 1;
        let list = std::mem::take(&mut self.buffered_of_page[page as usize]);
        let Sftl {
            table,
            buffer_lpa,
            buffer_ppn,
            buffer_links,
            buffer_slot_of,
            buffer_free,
            ..
        } = self;
        table.write_back(page, true, flash, |entries, base| {
            let mut slot = list.head;
            while slot != NIL {
                let lpa = buffer_lpa[slot as usize];
                entries[(lpa - base) as usize] = buffer_ppn[slot as usize];
                buffer_slot_of[lpa as usize] = NIL;
                buffer_free.push(slot);
                slot = buffer_links.next(slot);
            }
        })?;
        // GC the write triggered is settled by the caller's loop.
        Ok(())
    }

    /// Sets the mapping of `lpa`, whose page is cached or whose entry is buffered.
    #[inline]
    fn update(&mut self, lpa: u32, ppn: Ppn) {
        let page = self.table.unit_of(lpa);
        if self.cached[page as usize] {
            let range = self.table.unit_range(page);
            let (s, e) = (range.start as usize, range.end as usize);
            let i = lpa as usize;
            let at = |j: usize| (self.view[j], self.view_pos[j] as u64);
            let prev = (i > s).then(|| at(i - 1));
            let next = (i + 1 < e).then(|| at(i + 1));
            let new = placed(&self.stripe, ppn);
            let before = heads_around(prev, at(i), next);
            let after = heads_around(prev, new, next);
            self.view[i] = ppn;
            self.view_pos[i] = new.1 as u32;
            self.used_bytes -= self.page_bytes(page);
            self.runs[page as usize] = self.runs[page as usize] + after - before;
            self.used_bytes += self.page_bytes(page);
            if !self.entry_dirty[lpa as usize] {
                self.entry_dirty[lpa as usize] = true;
                self.dirty_entries[page as usize] += 1;
            }
        } else {
            let slot = self.buffered(lpa);
            debug_assert!(
                slot != NIL,
                "update of an entry neither cached nor buffered"
            );
            self.buffer_ppn[slot as usize] = ppn;
        }
    }

    /// The write or trim of `lpa`: sets its new location, then settles.
    fn remap(&mut self, lpa: u32, ppn: Ppn, flash: &mut Flash) -> Result<()> {
        self.update(lpa, ppn);
        settle(self, flash)?;
        self.fit(self.table.unit_of(lpa), flash)
    }
}

impl Ftl for Sftl {
    /// The cache starts empty; the table on flash is rebuilt ([`OnFlashTable::recover`]).
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        self.table.recover(found, flash)
    }

    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        let ppn = self.translate(lpa, flash)?;
        read_data(ppn, flash)
    }

    #[inline]
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let old = self.translate(lpa, flash)?;
        let ppn = self.table.program_data(lpa, seq, old, flash)?;
        self.remap(lpa, ppn, flash)
    }

    #[inline]
    fn idle(&mut self, flash: &mut Flash) -> Result<()> {
        demand::idle(self, flash)
    }

    #[inline]
    fn has_idle_work(&mut self) -> bool {
        demand::has_idle_work(self)
    }

    fn background_gc(&self) -> bool {
        self.table.store.alloc.background_gc()
    }

    fn slc_cache(&self) -> bool {
        self.table.store.alloc.has_slc_cache()
    }

    fn faults(&self) -> bool {
        self.table.store.alloc.has_faults()
    }

    fn reset_counters(&mut self) {
        self.table.stats = Default::default();
        self.buffered_evictions = 0;
        self.buffer_flushes = 0;
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let old = self.translate(lpa, flash)?;
        if old != NONE {
            flash.invalidate(old)?;
            self.remap(lpa, NONE, flash)?;
        }
        Ok(())
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        self.table.memory(out);
        out.push(("cached_pages", self.used_bytes));
        let buffered = self.buffer_lpa.len() - self.buffer_free.len();
        out.push(("dirty_buffer", buffered as u64 * self.buffer_entry_bytes));
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        self.table.counters(out);
        out.push(("cached_translation_pages", self.replacement.len() as f64));
        out.push(("buffered_evictions", self.buffered_evictions as f64));
        out.push(("dirty_buffer_flushes", self.buffer_flushes as f64));
        out.push((
            "dirty_buffer_capacity_entries",
            self.buffer_lpa.len() as f64,
        ));
    }
}

impl CachesEntries for Sftl {
    fn table(&mut self) -> &mut OnFlashTable {
        &mut self.table
    }

    /// Cached pages and buffered entries take the move in place (the cache may exceed its
    /// budget until [`Sftl::fit`]).
    fn move_cached(&mut self, m: &Move) -> bool {
        let page = self.table.unit_of(m.key);
        if !self.cached[page as usize] && self.buffered(m.key) == NIL {
            return false;
        }
        self.update(m.key, m.to);
        true
    }
}
