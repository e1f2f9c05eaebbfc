//! LearnedFTL: a learning-based page-level FTL for reducing double reads (Wang, Lin, Wu,
//! Jiang, Zhang and Mao, HPCA 2024), written only against `ftlab-core`'s public API and
//! registered at run time ([`register`]) as scheme `learnedftl`.
//!
//! # The paper's design, point by point
//!
//! 1. **An on-demand page-level FTL.** The whole page-level table lives on flash in
//!    translation pages located by the global translation directory (GTD); DRAM caches
//!    single mapping entries (the cached mapping table, CMT), as DFTL and TPFTL do. Here the
//!    core's [`OnFlashTable`] holds the translation pages (their own blocks, their GC, the
//!    directory, the miss and write-back accounting), exactly as for the built-in demand
//!    schemes.
//! 2. **In-place-update linear models, one per translation page.** Each translation page
//!    (the paper's GTD entry) carries a model made of `models_per_page` linear pieces, one
//!    per fixed interval of the page's logical pages (the reference artifact's
//!    `MAX_INTERVALS = 8` breakpoints per model). A piece is retrained in place, replacing
//!    the previous one, rather than appended as LeaFTL's log-structured segments are.
//! 3. **A bitmap filter.** One bit per logical page says whether its piece predicts its
//!    physical page exactly. A CMT miss on a page whose bit is set takes the model's
//!    prediction and reads the data page at once: one flash read, no double read. A miss on
//!    a page whose bit is clear reads the translation page first (a double read), as DFTL
//!    would. A bit is set only when training found the prediction exact and is cleared by
//!    every change of the page's mapping (host write, trim, GC relocation), so a set bit is
//!    never wrong: there are no mispredictions, hence no misprediction reads.
//! 4. **Virtual PPNs.** Models predict the position of a page in the order the device
//!    writes pages ([`StripeOrder`]: one page per parallel unit in turn), not its raw
//!    physical address: logical pages written in order by one flush sit on different
//!    channels and dies, whose raw addresses are far apart, but at consecutive positions.
//! 5. **Model training at GC and rewrite time.** A translation page's model is trained when
//!    the page is written (a dirty eviction's write-back, the "rewrite"; GC's batch update
//!    of relocated entries), the moment when every entry of the page is at hand, so
//!    training costs no flash operation. GC relocates a victim's valid pages sorted by
//!    logical page ([`PageAllocator::set_sorted_relocation`]) so that what GC rewrites is
//!    learnable again. A page is trained only once it maps at least `train_threshold`
//!    pages (the artifact's `TRAIN_THRESHOLD = 30`).
//! 6. **DRAM (the paper's accounting).** The GTD (through [`OnFlashTable::memory`]), the
//!    CMT at logical + physical address bytes per entry (8 bytes at 4-byte addresses, as
//!    DFTL), each piece at `piece_bytes` (8: a 4-byte slope and a 4-byte intercept, the
//!    artifact's `float w, b`; a piece's interval is implied by its index), and the bitmap
//!    at one bit per logical page. Under a DRAM budget, models and bitmap are taken out of
//!    the budget first and the CMT gets the rest, so that LearnedFTL runs with the same
//!    DRAM as the schemes it is compared with.
//!
//! # Where the paper is silent or this implementation departs (choices, and why)
//!
//! - **The cache.** The paper builds on TPFTL's cache. Here the CMT is DFTL's: single
//!   entries, LRU (`replacement`), batch write-back of a translation page's dirty entries on
//!   a dirty eviction, no prefetching. The core's TPFTL keeps its node structure private
//!   and the learned part is independent of the replacement policy; what the reproduction
//!   measures (double reads of cache misses) is the model's contribution on top of a
//!   demand cache. Said in the reproduction beside the numbers.
//! - **Group-based allocation.** The paper allocates the data of a group of translation
//!   pages to the same blocks, so that GC of a group retrains all of its models at once.
//!   The core's allocator has one host stream and one GC stream per parallel unit and no
//!   per-group streams; this scheme uses it as it is (one host stream, sorted GC
//!   relocation) and retrains every translation page that a write-back or a GC batch
//!   update rewrites. Not implemented: per-group streams.
//! - **Model hits are cached.** A miss served by the model inserts the predicted entry
//!   (clean) into the CMT: it is the exact mapping, obtained without a flash read. Writes
//!   and trims use the model too: a write that misses on a predicted page need not read
//!   the translation page to find the old copy to invalidate.
//! - **Pieces.** A piece is the line through the longest run of the interval's mapped
//!   pages that lie on one line (in logical-page order, consecutive pairs with the same
//!   rational slope), evaluated in integers: exact by construction, where the artifact
//!   fits a float regression and lets the bitmap catch what it gets wrong. Host flushes give
//!   slope 1 in the stripe order, GC relocation within a block slope `units`.
//! - **Recovery.** After a restart the table on flash is rebuilt by the core
//!   ([`OnFlashTable::recover`]), the CMT starts empty and every translation page's model
//!   is retrained from the recovered table (the scan read every page's OOB already).
//!
//! Counters: `double_reads` (host reads of a mapped page whose translation read a
//! translation page), `host_reads`, `double_read_ratio`, `model_hits` (misses the model
//! served), `model_misses`, `trainings`, `predictable_pages` (bits set), and the
//! counters every demand-cached scheme reports.

use ftlab_core::device::geometry::Layout;
use ftlab_core::device::nand::{Flash, Oob, Ppn, NONE};
use ftlab_core::ftl::demand::{
    self, read_data, settle, CachesEntries, CachesSingleEntries, OnFlashTable,
};
use ftlab_core::ftl::external::{self, ExternalScheme};
use ftlab_core::ftl::kit::alloc::{Move, StripeOrder};
use ftlab_core::ftl::kit::mapcache::{Links, List, Replacement, ReplacementKind, Slots, NIL};
use ftlab_core::ftl::settings::SchemeContext;
use ftlab_core::ftl::{Ftl, MemoryBreakdown};
use ftlab_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[cfg(doc)]
use ftlab_core::ftl::kit::alloc::PageAllocator;

/// The scheme's name (`--ftl learnedftl`) and configuration section.
pub const NAME: &str = "learnedftl";

/// One line for `ftlab schemes`.
pub const DESCRIPTION: &str = "LearnedFTL (HPCA'24): demand-cached page table, in-place linear models per translation page, bitmap-filtered double reads, GC-time training";

/// The `[learnedftl]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnedFtlConfig {
    /// Linear pieces per translation page, each over an equal interval of its logical
    /// pages (the artifact's `MAX_INTERVALS`).
    pub models_per_page: u32,
    /// Mapped pages a translation page needs before its model is trained (the artifact's
    /// `TRAIN_THRESHOLD`).
    pub train_threshold: u32,
    /// DRAM bytes of one piece (slope and intercept, 4 bytes each).
    pub piece_bytes: u64,
    /// CMT replacement: `lru` or `slru`.
    pub replacement: ReplacementKind,
    /// Share of the CMT held by the protected segment with `slru`.
    pub protected_fraction: f64,
    /// GC relocates a victim's valid pages in logical-page order, so that they stay
    /// learnable (the paper's GC-time training).
    pub sorted_gc: bool,
}

impl Default for LearnedFtlConfig {
    fn default() -> Self {
        LearnedFtlConfig {
            models_per_page: 8,
            train_threshold: 30,
            piece_bytes: 8,
            replacement: ReplacementKind::Lru,
            protected_fraction: 0.8,
            sorted_gc: true,
        }
    }
}

/// Registers scheme `learnedftl` with the core's run-time registry: `ftl::build`,
/// `scheme_defaults` and `scheme_list` find it from then on.
pub fn register() -> Result<()> {
    let section = toml::Table::try_from(LearnedFtlConfig::default())
        .map_err(|e| Error::Usage(format!("learnedftl's section: {e}")))?;
    external::register(ExternalScheme {
        name: NAME.into(),
        description: DESCRIPTION.into(),
        family: "learned".into(),
        // The paper's artifact uses 8 pieces per translation page; fewer pieces cost less
        // DRAM, more fit more runs exactly.
        advise: toml::Table::from_iter([(
            format!("{NAME}.models_per_page"),
            toml::Value::Array(vec![4.into(), 8.into(), 16.into()]),
        )]),
        builtin: true,
        section: Some(section),
        append_only: false,
        device_defaults: None,
        extra_oob_bytes: 0,
        build: Arc::new(|cfg, layout| Ok(Box::new(LearnedFtl::new(cfg, layout)?))),
    })
}

/// A cached mapping entry.
#[derive(Clone, Copy, Debug)]
struct Entry {
    lpa: u32,
    ppn: Ppn,
    dirty: bool,
}

/// One linear piece: position = `p0 + (x - x0) * dp / dx` for a page at offset `x` of its
/// translation page (exact integer division only); `dx == 0`: no piece.
#[derive(Clone, Copy, Debug, Default)]
struct Piece {
    x0: u32,
    p0: u64,
    dp: i64,
    dx: u32,
}

impl Piece {
    const NONE: Piece = Piece {
        x0: 0,
        p0: 0,
        dp: 0,
        dx: 0,
    };

    #[inline]
    fn predict(&self, x: u32) -> Option<u64> {
        if self.dx == 0 {
            return None;
        }
        let d = (x as i64 - self.x0 as i64) * self.dp;
        let pos = if self.dx == 1 {
            self.p0 as i64 + d
        } else {
            if d % self.dx as i64 != 0 {
                return None;
            }
            self.p0 as i64 + d / self.dx as i64
        };
        (pos >= 0).then_some(pos as u64)
    }

    /// The line through the longest run of `points` (sorted by offset) lying on one line.
    fn fit(points: &[(u32, u64)]) -> Piece {
        match points.len() {
            0 => return Piece::NONE,
            1 => {
                return Piece {
                    x0: points[0].0,
                    p0: points[0].1,
                    dp: 0,
                    dx: 1,
                }
            }
            _ => {}
        }
        let (mut best, mut best_len) = (Piece::NONE, 0usize);
        let mut i = 0;
        while i + 1 < points.len() {
            let (x0, p0) = points[i];
            let dx = points[i + 1].0 - x0;
            let dp = points[i + 1].1 as i64 - p0 as i64;
            let mut j = i + 2;
            while j < points.len() {
                let (x, p) = points[j];
                if (p as i64 - p0 as i64) * dx as i64 != (x - x0) as i64 * dp {
                    break;
                }
                j += 1;
            }
            if j - i > best_len {
                best_len = j - i;
                best = Piece { x0, p0, dp, dx };
            }
            i = j - 1;
        }
        best
    }
}

/// LearnedFTL's own counters.
#[derive(Clone, Debug, Default)]
struct Stats {
    host_reads: u64,
    double_reads: u64,
    model_hits: u64,
    model_misses: u64,
    trainings: u64,
}

pub struct LearnedFtl {
    table: OnFlashTable,
    /// Cache slot of each logical page ([`NIL`]: not cached).
    slot_of: Vec<u32>,
    slots: Slots<Entry>,
    replacement: Replacement,
    /// Dirty slots of each translation page, for batch write-back.
    dirty_links: Links,
    dirty_of_page: Vec<List>,
    entry_bytes: u64,
    order: StripeOrder,
    /// `models_per_page` pieces per translation page.
    pieces: Vec<Piece>,
    per_page: u32,
    interval: u32,
    piece_bytes: u64,
    train_threshold: u32,
    /// One bit per logical page: its piece predicts it exactly.
    bitmap: Vec<u64>,
    predictable: u64,
    /// Pieces whose interval's mappings changed since they were fitted.
    stale: Vec<bool>,
    /// Mapped pages of each translation page.
    mapped: Vec<u32>,
    /// Translation pages rewritten since the last training, and their marks.
    pending: Vec<u32>,
    pending_mark: Vec<bool>,
    stats: Stats,
    /// Scratch for training.
    points: Vec<(u32, u64)>,
}

impl LearnedFtl {
    /// The scheme for a fresh device, its `[learnedftl]` section checked.
    pub fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c: LearnedFtlConfig = cfg.scheme_config(NAME)?;
        if c.models_per_page == 0 {
            return Err(Error::config(
                "learnedftl.models_per_page",
                "must be at least 1",
            ));
        }
        if !(0.0..1.0).contains(&c.protected_fraction) {
            return Err(Error::config(
                "learnedftl.protected_fraction",
                format!("{} is not a fraction in [0, 1)", c.protected_fraction),
            ));
        }
        let mut table = OnFlashTable::new(cfg, layout, 1)?;
        table.store.alloc.set_sorted_relocation(c.sorted_gc);
        let entries = table.unit_entries();
        let per_page = c.models_per_page.min(entries);
        let interval = entries.div_ceil(per_page);
        let units = table.units();
        let entry_bytes = table.lpa_bytes + table.ppa_bytes;
        let model_bytes = units as u64 * per_page as u64 * c.piece_bytes;
        let bitmap_bytes = layout.logical_pages.div_ceil(8);
        let budget = cfg.dram.budget(layout);
        let capacity = if budget == 0 {
            layout.logical_pages
        } else {
            let left = budget.saturating_sub(model_bytes + bitmap_bytes);
            let n = (left / entry_bytes).min(layout.logical_pages);
            if n == 0 {
                return Err(Error::config(
                    cfg.dram.budget_key(),
                    format!(
                        "{budget} bytes leave no room for a mapping entry of {entry_bytes} bytes \
                         beside learnedftl's models ({model_bytes} bytes) and bitmap \
                         ({bitmap_bytes} bytes)"
                    ),
                ));
            }
            n
        } as u32;
        Ok(LearnedFtl {
            slot_of: vec![NIL; layout.logical_pages as usize],
            slots: Slots::new(capacity),
            replacement: Replacement::new(c.replacement, capacity as usize, c.protected_fraction),
            dirty_links: Links::new(0),
            dirty_of_page: vec![List::EMPTY; units as usize],
            entry_bytes,
            order: StripeOrder::new(cfg, layout, 1),
            pieces: vec![Piece::NONE; units as usize * per_page as usize],
            per_page,
            interval,
            piece_bytes: c.piece_bytes,
            train_threshold: c.train_threshold,
            bitmap: vec![0; layout.logical_pages.div_ceil(64) as usize],
            predictable: 0,
            stale: vec![false; units as usize * per_page as usize],
            mapped: vec![0; units as usize],
            pending: Vec::new(),
            pending_mark: vec![false; units as usize],
            stats: Stats::default(),
            points: Vec::new(),
            table,
        })
    }

    #[inline]
    fn bit(&self, lpa: u32) -> bool {
        self.bitmap[lpa as usize / 64] >> (lpa % 64) & 1 != 0
    }

    #[inline]
    fn clear_bit(&mut self, lpa: u32) {
        let w = &mut self.bitmap[lpa as usize / 64];
        let m = 1u64 << (lpa % 64);
        if *w & m != 0 {
            *w &= !m;
            self.predictable -= 1;
        }
    }

    /// Clears the bits of `lpas`, a word at a time.
    fn clear_bits(&mut self, lpas: std::ops::Range<u32>) {
        let (mut lo, hi) = (lpas.start as usize, lpas.end as usize);
        while lo < hi {
            let w = lo / 64;
            let end = ((w + 1) * 64).min(hi);
            let width = end - lo;
            let mask = if width == 64 {
                u64::MAX
            } else {
                ((1u64 << width) - 1) << (lo % 64)
            };
            self.predictable -= (self.bitmap[w] & mask).count_ones() as u64;
            self.bitmap[w] &= !mask;
            lo = end;
        }
    }

    /// The mapping of `lpa` changed: its bit is cleared and its piece is due for refitting.
    #[inline]
    fn changed(&mut self, lpa: u32) {
        self.clear_bit(lpa);
        let u = self.table.unit_of(lpa);
        let x = lpa - self.table.unit_range(u).start;
        self.stale[(u * self.per_page + x / self.interval) as usize] = true;
    }

    #[inline]
    fn set_bit(&mut self, lpa: u32) {
        let w = &mut self.bitmap[lpa as usize / 64];
        let m = 1u64 << (lpa % 64);
        if *w & m == 0 {
            *w |= m;
            self.predictable += 1;
        }
    }

    /// The piece of `lpa`, and `lpa`'s offset in its translation page.
    #[inline]
    fn piece_of(&self, lpa: u32) -> (Piece, u32) {
        let u = self.table.unit_of(lpa);
        let x = lpa - self.table.unit_range(u).start;
        let p = self.pieces[(u * self.per_page + x / self.interval) as usize];
        (p, x)
    }

    /// The physical page the model predicts for `lpa`, whose bit is set.
    #[inline]
    fn predicted(&self, lpa: u32) -> Ppn {
        let (piece, x) = self.piece_of(lpa);
        let pos = piece
            .predict(x)
            .expect("a page whose bit is set has an exact prediction");
        self.order.page(pos)
    }

    /// The current mapping of `lpa` (the cached entry, else the table on flash).
    #[inline]
    fn current(&self, lpa: u32) -> Ppn {
        match self.slot_of[lpa as usize] {
            NIL => self.table.stored(lpa),
            s => self.slots[s].ppn,
        }
    }

    fn queue_training(&mut self, u: u32) {
        if !self.pending_mark[u as usize] {
            self.pending_mark[u as usize] = true;
            self.pending.push(u);
        }
    }

    /// Trains the model of every translation page rewritten since the last call.
    #[inline]
    fn train_pending(&mut self) {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            for &u in &pending {
                self.pending_mark[u as usize] = false;
                self.train(u, false);
            }
            self.pending = pending;
            self.pending.clear();
        }
    }

    /// Retrains translation page `u`'s pieces whose intervals changed since they were
    /// fitted (all of them with `all`) from its current entries, and sets the bits of the
    /// pages they predict exactly. Below `train_threshold` mapped pages the page has no
    /// model.
    fn train(&mut self, u: u32, all: bool) {
        let range = self.table.unit_range(u);
        let trained = self.mapped[u as usize] >= self.train_threshold;
        if trained {
            self.stats.trainings += 1;
        }
        for k in 0..self.per_page {
            let start = range.start + k * self.interval;
            if start >= range.end {
                break;
            }
            let i = (u * self.per_page + k) as usize;
            let refit = if trained {
                all || self.stale[i]
            } else {
                all || self.pieces[i].dx != 0
            };
            if !refit {
                continue;
            }
            self.stale[i] = false;
            let end = (start + self.interval).min(range.end);
            let mut points = std::mem::take(&mut self.points);
            points.clear();
            if trained {
                for lpa in start..end {
                    let ppn = self.current(lpa);
                    if ppn != NONE {
                        points.push((lpa - range.start, self.order.position(ppn)));
                    }
                }
            }
            let piece = Piece::fit(&points);
            self.pieces[(u * self.per_page + k) as usize] = piece;
            self.clear_bits(start..end);
            for &(x, pos) in &points {
                if piece.predict(x) == Some(pos) {
                    self.set_bit(range.start + x);
                }
            }
            self.points = points;
        }
    }

    /// Evicts the replacement victim, writing back its translation page's dirty entries
    /// first (and queueing the page's training: it is being rewritten).
    fn evict(&mut self, flash: &mut Flash) -> Result<()> {
        let victim = self
            .replacement
            .victim()
            .expect("a full cache has a victim");
        let lpa = self.slots[victim].lpa;
        let page = self.table.unit_of(lpa);
        if self.slots[victim].dirty {
            self.table.stats.dirty_evictions += 1;
            let LearnedFtl {
                table,
                slots,
                dirty_links,
                dirty_of_page,
                ..
            } = self;
            let list = &mut dirty_of_page[page as usize];
            table.write_back(page, true, flash, |entries, base| {
                let mut s = list.head;
                while s != NIL {
                    let e = &mut slots[s];
                    entries[(e.lpa - base) as usize] = e.ppn;
                    e.dirty = false;
                    s = dirty_links.next(s);
                }
                *list = List::EMPTY;
            })?;
            self.queue_training(page);
        } else {
            self.table.stats.clean_evictions += 1;
        }
        self.replacement.remove(victim);
        self.slot_of[lpa as usize] = NIL;
        self.slots.release(victim);
        settle(self, flash)
    }
}

impl Ftl for LearnedFtl {
    /// The cache starts empty, the table on flash is rebuilt ([`OnFlashTable::recover`]) and
    /// every translation page's model is retrained from it.
    fn recover(
        &mut self,
        found: &ftlab_core::device::recovery::Found,
        flash: &mut Flash,
    ) -> Result<()> {
        self.table.recover(found, flash)?;
        for u in 0..self.table.units() {
            self.mapped[u as usize] = self
                .table
                .unit_range(u)
                .filter(|&lpa| self.table.stored(lpa) != NONE)
                .count() as u32;
            self.train(u, true);
        }
        Ok(())
    }

    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        self.stats.host_reads += 1;
        let before = self.table.stats.miss_reads;
        let slot = self.translate(lpa, flash)?;
        let ppn = self.slots[slot].ppn;
        if ppn != NONE && self.table.stats.miss_reads > before {
            self.stats.double_reads += 1;
        }
        let data = read_data(ppn, flash);
        self.train_pending();
        data
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let slot = self.translate(lpa, flash)?;
        let old = self.slots[slot].ppn;
        self.changed(lpa);
        if old == NONE {
            self.mapped[self.table.unit_of(lpa) as usize] += 1;
        }
        let ppn = self.table.program_data(lpa, seq, old, flash)?;
        self.slots[slot].ppn = ppn;
        self.mark_dirty(slot);
        settle(self, flash)?;
        self.train_pending();
        Ok(())
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let slot = self.translate(lpa, flash)?;
        let old = self.slots[slot].ppn;
        if old != NONE {
            self.changed(lpa);
            self.mapped[self.table.unit_of(lpa) as usize] -= 1;
            flash.invalidate(old)?;
            self.slots[slot].ppn = NONE;
            self.mark_dirty(slot);
        }
        self.train_pending();
        Ok(())
    }

    fn idle(&mut self, flash: &mut Flash) -> Result<()> {
        demand::idle(self, flash)?;
        self.train_pending();
        Ok(())
    }

    fn has_idle_work(&mut self) -> bool {
        demand::has_idle_work(self)
    }

    fn background_gc(&self) -> bool {
        self.table.store.alloc.background_gc()
    }

    fn reset_counters(&mut self) {
        self.table.stats = Default::default();
        self.stats = Stats::default();
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        self.table.memory(out);
        out.push(("cmt", self.replacement.len() as u64 * self.entry_bytes));
        out.push(("models", self.pieces.len() as u64 * self.piece_bytes));
        out.push(("bitmaps", (self.slot_of.len() as u64).div_ceil(8)));
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        self.table.counters(out);
        let s = &self.stats;
        out.push(("cmt_capacity_entries", self.slots.capacity() as f64));
        out.push(("host_reads", s.host_reads as f64));
        out.push(("double_reads", s.double_reads as f64));
        out.push((
            "double_read_ratio",
            if s.host_reads == 0 {
                0.0
            } else {
                s.double_reads as f64 / s.host_reads as f64
            },
        ));
        out.push(("model_hits", s.model_hits as f64));
        out.push(("model_misses", s.model_misses as f64));
        out.push(("trainings", s.trainings as f64));
        out.push(("predictable_pages", self.predictable as f64));
    }
}

impl CachesEntries for LearnedFtl {
    fn table(&mut self) -> &mut OnFlashTable {
        &mut self.table
    }

    /// Every GC move clears its page's bit; an uncached entry is staged and its translation
    /// page rewritten by the batch update, so that page is retrained.
    fn move_cached(&mut self, m: &Move) -> bool {
        self.changed(m.key);
        let slot = self.slot_of[m.key as usize];
        if slot == NIL {
            let u = self.table.unit_of(m.key);
            self.queue_training(u);
            return false;
        }
        debug_assert_eq!(self.slots[slot].ppn, m.from);
        self.slots[slot].ppn = m.to;
        self.mark_dirty(slot);
        true
    }
}

impl CachesSingleEntries for LearnedFtl {
    #[inline]
    fn cached_slot(&self, lpa: u32) -> u32 {
        self.slot_of[lpa as usize]
    }

    #[inline]
    fn slot_ppn(&mut self, slot: u32) -> &mut Ppn {
        &mut self.slots[slot].ppn
    }

    #[inline]
    fn touch(&mut self, slot: u32) {
        self.replacement.touch(slot);
    }

    /// A CMT miss: the model's prediction when the bitmap says it is exact (no flash
    /// read), else the translation page (a double read for a host read).
    fn miss(&mut self, lpa: u32, flash: &mut Flash) -> Result<u32> {
        let t0 = self.table.miss_started(flash);
        if self.slots.is_full() {
            self.evict(flash)?;
        }
        // After the eviction: its write-back may have run GC, which clears moved pages' bits.
        let ppn = if self.bit(lpa) {
            self.stats.model_hits += 1;
            self.predicted(lpa)
        } else {
            self.stats.model_misses += 1;
            self.table.fetch(self.table.unit_of(lpa), flash)?;
            self.table.stored(lpa)
        };
        debug_assert_eq!(ppn, self.table.stored(lpa), "lpa {lpa}");
        let slot = self
            .slots
            .insert(Entry {
                lpa,
                ppn,
                dirty: false,
            })
            .expect("eviction freed a slot");
        self.slot_of[lpa as usize] = slot;
        self.replacement.insert(slot);
        self.table.miss_ended(flash, t0);
        Ok(slot)
    }

    #[inline]
    fn mark_dirty(&mut self, slot: u32) {
        let entry = &mut self.slots[slot];
        if !entry.dirty {
            entry.dirty = true;
            let page = self.table.unit_of(entry.lpa);
            self.dirty_links
                .push_front(&mut self.dirty_of_page[page as usize], slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_fits_the_longest_collinear_run_exactly() {
        // A flush at slope 1, then a GC run at slope 4 that is longer.
        let pts = [
            (0, 10),
            (1, 11),
            (2, 12),
            (5, 100),
            (6, 104),
            (7, 108),
            (8, 112),
        ];
        let p = Piece::fit(&pts);
        assert_eq!((p.dp, p.dx), (4, 1));
        assert_eq!(p.predict(6), Some(104));
        assert_eq!(p.predict(0), Some(80));
        // A stride-2 run: odd offsets are not predicted.
        let p = Piece::fit(&[(0, 7), (2, 8), (4, 9)]);
        assert_eq!(p.predict(4), Some(9));
        assert_eq!(p.predict(3), None);
        assert!(Piece::fit(&[]).predict(0).is_none());
        assert_eq!(Piece::fit(&[(3, 9)]).predict(3), Some(9));
    }
}
