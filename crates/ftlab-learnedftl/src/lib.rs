//! LearnedFTL: a learning-based page-level FTL for reducing double reads (Wang, Lin, Wu,
//! Jiang, Zhang and Mao, HPCA 2024), written only against `ftlab-core`'s public API and
//! registered at run time ([`register`]) as scheme `learnedftl`.
//!
//! # The paper's design, point by point
//!
//! 1. **An on-demand page-level FTL on TPFTL's cache.** The whole page-level table lives
//!    on flash in translation pages located by the global translation directory (GTD); DRAM
//!    caches mapping entries grouped by translation page, as TPFTL does (the paper builds
//!    LearnedFTL on TPFTL, and so does its artifact, `ld-tpftl.c`): two levels of LRU (TP
//!    nodes by hotness, entries within a node), clean-first replacement with batch
//!    write-back of a node's dirty entries, request-level and selective prefetching. This
//!    is the core's own TPFTL ([`Tpftl::with_model`]), configured by the `[tpftl]` section,
//!    with the models below as its [`MissModel`]; the core's [`OnFlashTable`] holds the
//!    translation pages (their blocks, their GC, the directory, the accounting).
//! 2. **In-place-update linear models, one per translation page.** Each translation page
//!    (the paper's GTD entry) carries a model made of `models_per_page` linear pieces, one
//!    per fixed interval of the page's logical pages (the reference artifact's
//!    `MAX_INTERVALS = 8` breakpoints per model). A piece is retrained in place, replacing
//!    the previous one, rather than appended as LeaFTL's log-structured segments are.
//! 3. **A bitmap filter.** One bit per logical page says whether its piece predicts its
//!    physical page exactly. A cache miss on a page whose bit is set takes the model's
//!    prediction and reads the data page at once: one flash read, no double read (and no
//!    prefetch: no translation page was read). A miss on a page whose bit is clear reads
//!    the translation page first (a double read) and prefetches as TPFTL does. A bit is set only when training found the prediction exact and is cleared by
//!    every change of the page's mapping (host write, trim, GC relocation), so a set bit is
//!    never wrong: there are no mispredictions, hence no misprediction reads.
//! 4. **Virtual PPNs.** Models predict the position of a page in the order the device
//!    writes pages ([`StripeOrder`]: one page per parallel unit in turn), not its raw
//!    physical address: logical pages written in order by one flush sit on different
//!    channels and dies, whose raw addresses are far apart, but at consecutive positions.
//! 5. **Model training at GC and rewrite time.** A translation page's model is trained when
//!    the page is written (a dirty eviction's write-back, the "rewrite"; GC's batch update
//!    of relocated entries), once the operation has settled, when every entry of the page
//!    is at hand (cached entries first, the table on flash for the rest), so training costs
//!    no flash operation, and when GC has moved its pages (`group_gc`). GC rewrites a
//!    group's pages sorted by logical page into the group's own line (group-based
//!    allocation, below), or a victim's valid pages sorted by logical page
//!    ([`PageAllocator::set_sorted_relocation`]), so that what GC rewrites is learnable again. A page is trained only once it maps at least `train_threshold`
//!    pages (the artifact's `TRAIN_THRESHOLD = 30`).
//! 6. **DRAM (the paper's accounting).** The GTD (through [`OnFlashTable::memory`]),
//!    TPFTL's nodes and entries as TPFTL counts them, each piece at `piece_bytes` (8: a
//!    4-byte slope and a 4-byte intercept, the artifact's `float w, b`; a piece's interval
//!    is implied by its index), and the bitmap at one bit per logical page. Under a DRAM
//!    budget, models and bitmap are taken out of the budget first and the cache gets the
//!    rest ([`MissModel::dram_bytes`]), so that LearnedFTL runs with the same DRAM as the
//!    schemes it is compared with.
//!
//! # Where the paper is silent or this implementation departs (choices, and why)
//!
//! - **The cache's settings** are TPFTL's `[tpftl]` section (prefetching, its threshold,
//!   the node's bytes): LearnedFTL compared with TPFTL runs the same cache.
//! - **Group-based allocation** (`group_gc`, `group_writes`, both on). The paper (and its
//!   artifact) gives each group of translation pages (as many as one line of blocks across
//!   all dies maps) its own write pointer, and collects a group's lines together: their
//!   valid pages, sorted by logical page, are rewritten through the group's pointer into
//!   consecutive virtual PPNs, so that every model of the group is exact again after GC.
//!   Here each group is a relocation stream of the core's allocator
//!   ([`PageAllocator::set_relocation_streams`]): a line (a block on every parallel unit,
//!   the same block index on each where the free pools allow) that host writes of the
//!   group (`group_writes`, as the artifact) and GC's relocations of its pages go to, page
//!   by page round-robin; GC takes a victim the allocator's way (per unit, by `gc.policy`)
//!   and, when it belongs to a group's line and every unit has the free blocks, collects all
//!   of that group's blocks together into a fresh line, sorted. Choices where the paper is
//!   silent: where a translation page maps more than a line (as on small devices), a group
//!   is as many whole pieces' intervals as a line holds, so that each piece lies in one
//!   group; at most as many lines are open at once as each unit has spare blocks beside the
//!   four every map-on-flash scheme needs (open lines hold room GC cannot take back); a
//!   write or relocation that finds no line open nor room for one goes to the shared host
//!   stream or the unit's GC block, as without groups; every translation page whose pages
//!   GC moved is retrained once the moves have settled ([`MissModel::moved`]), cached
//!   entries or not. With `group_gc = false`, GC relocates a victim's pages into the
//!   unit's GC block, sorted, and only rewritten translation pages are retrained.
//! - **Model hits are cached.** A miss served by the model inserts the predicted entry
//!   (clean) into the cache: it is the exact mapping, obtained without a flash read. Writes
//!   and trims use the model too: a write that misses on a predicted page need not read
//!   the translation page to find the old copy to invalidate.
//! - **Pieces.** A piece is the line through the longest run of the interval's mapped
//!   pages that lie on one line (in logical-page order, consecutive pairs with the same
//!   rational slope), evaluated in integers: exact by construction, where the artifact
//!   fits a float regression and lets the bitmap catch what it gets wrong. Host flushes give
//!   slope 1 in the stripe order, GC relocation within a block slope `units`.
//! - **Recovery.** After a restart the table on flash is rebuilt by the core
//!   ([`OnFlashTable::recover`]), the cache starts empty and every translation page's model
//!   is retrained from the recovered table (the scan read every page's OOB already).
//!
//! Counters: `double_reads` (host reads of a mapped page whose translation read a
//! translation page), `host_reads`, `double_read_ratio`, `model_hits` (misses the model
//! served), `model_misses`, `trainings`, `predictable_pages` (bits set),
//! `group_collections` and `group_blocks_collected` (groups GC collected together, and the
//! blocks they took), and the counters every demand-cached scheme reports.

use ftlab_core::device::geometry::Layout;
use ftlab_core::device::nand::{Flash, Oob, Ppn, NONE};
use ftlab_core::device::recovery::Found;
use ftlab_core::ftl::demand::tpftl::{MissModel, Tpftl, TpftlConfig};
use ftlab_core::ftl::demand::OnFlashTable;
use ftlab_core::ftl::external::{self, ExternalScheme};
use ftlab_core::ftl::kit::alloc::StripeOrder;
use ftlab_core::ftl::settings::SchemeContext;
use ftlab_core::ftl::{Ftl, MemoryBreakdown};
use ftlab_core::request::Op;
use ftlab_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[cfg(doc)]
use ftlab_core::ftl::kit::alloc::PageAllocator;

/// The scheme's name (`--ftl learnedftl`) and configuration section.
pub const NAME: &str = "learnedftl";

/// One line for `ftlab schemes`.
pub const DESCRIPTION: &str = "LearnedFTL (HPCA'24): TPFTL's cache over in-place linear models per translation page, bitmap-filtered double reads, GC-time training";

/// The `[learnedftl]` section (the cache under the models is configured by `[tpftl]`).
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
    /// GC relocates a victim's valid pages in logical-page order, so that they stay
    /// learnable (the paper's GC-time training).
    pub sorted_gc: bool,
    /// Group-based allocation at GC time: GC writes each group's pages to the group's own
    /// line and collects a group's blocks together, and every translation page whose pages
    /// GC moved is retrained.
    pub group_gc: bool,
    /// With `group_gc`, host writes go to their group's line too (the artifact's
    /// allocation), so that every page of a group lives in the group's lines.
    pub group_writes: bool,
}

impl Default for LearnedFtlConfig {
    fn default() -> Self {
        LearnedFtlConfig {
            models_per_page: 8,
            train_threshold: 30,
            piece_bytes: 8,
            sorted_gc: true,
            group_gc: true,
            group_writes: true,
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

/// The models' own counters.
#[derive(Clone, Debug, Default)]
struct Stats {
    model_hits: u64,
    model_misses: u64,
    trainings: u64,
}

/// The learned part under TPFTL's cache: per translation page `per_page` pieces, one bit
/// per logical page, and the pages due for training.
struct Models {
    /// Logical pages per translation page.
    entries: u32,
    order: StripeOrder,
    pieces: Vec<Piece>,
    per_page: u32,
    interval: u32,
    piece_bytes: u64,
    train_threshold: u32,
    /// One bit per logical page: its piece predicts it exactly.
    bitmap: Vec<u64>,
    bitmap_bytes: u64,
    predictable: u64,
    /// Pieces whose interval's mappings changed since they were fitted.
    stale: Vec<bool>,
    /// Whether each translation page's model is trained (it mapped `train_threshold` pages).
    trained: Vec<bool>,
    /// Translation pages rewritten since the last training, and their marks.
    pending: Vec<u32>,
    pending_mark: Vec<bool>,
    stats: Stats,
    /// Scratch for training: (offset, position) of each mapped page of a translation page.
    points: Vec<(u32, u64)>,
    /// Retrain every translation page whose pages GC moved (group-based GC), not only those
    /// GC's batch update rewrites.
    train_after_gc: bool,
}

impl Models {
    fn new(cfg: &SchemeContext, layout: &Layout, c: &LearnedFtlConfig, entries: u32) -> Self {
        let units = layout.logical_pages.div_ceil(entries as u64) as usize;
        let per_page = c.models_per_page.min(entries);
        Models {
            entries,
            order: StripeOrder::new(cfg, layout, 1),
            pieces: vec![Piece::NONE; units * per_page as usize],
            per_page,
            interval: entries.div_ceil(per_page),
            piece_bytes: c.piece_bytes,
            train_threshold: c.train_threshold,
            bitmap: vec![0; layout.logical_pages.div_ceil(64) as usize],
            bitmap_bytes: layout.logical_pages.div_ceil(8),
            predictable: 0,
            stale: vec![false; units * per_page as usize],
            trained: vec![false; units],
            pending: Vec::new(),
            pending_mark: vec![false; units],
            stats: Stats::default(),
            points: Vec::new(),
            train_after_gc: c.group_gc,
        }
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

    #[inline]
    fn set_bit(&mut self, lpa: u32) {
        let w = &mut self.bitmap[lpa as usize / 64];
        let m = 1u64 << (lpa % 64);
        if *w & m == 0 {
            *w |= m;
            self.predictable += 1;
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

    /// Index of `lpa`'s piece, and `lpa`'s offset in its translation page.
    #[inline]
    fn piece_index(&self, lpa: u32) -> (usize, u32) {
        let u = lpa / self.entries;
        let x = lpa - u * self.entries;
        ((u * self.per_page + x / self.interval) as usize, x)
    }

    /// Retrains translation page `u`'s pieces whose intervals changed since they were
    /// fitted (all of them when the page crosses `train_threshold` either way) from its
    /// current mappings, and sets the bits of the pages they predict exactly. Below
    /// `train_threshold` mapped pages the page has no model.
    fn train(&mut self, u: u32, first: u32, end: u32, current: &dyn Fn(u32) -> Ppn) {
        let mut points = std::mem::take(&mut self.points);
        points.clear();
        for lpa in first..end {
            let ppn = current(lpa);
            if ppn != NONE {
                points.push((lpa - first, self.order.position(ppn)));
            }
        }
        let trained = points.len() as u32 >= self.train_threshold;
        let all = trained != self.trained[u as usize];
        self.trained[u as usize] = trained;
        if trained {
            self.stats.trainings += 1;
        }
        let mut from = 0;
        for k in 0..self.per_page {
            let start = k * self.interval;
            if first + start >= end {
                break;
            }
            let stop = (start + self.interval).min(end - first);
            let to = from + points[from..].partition_point(|&(x, _)| x < stop);
            let i = (u * self.per_page + k) as usize;
            if all || self.stale[i] {
                self.stale[i] = false;
                let run = if trained { &points[from..to] } else { &[] };
                let piece = Piece::fit(run);
                self.pieces[i] = piece;
                self.clear_bits(first + start..first + stop);
                for &(x, pos) in run {
                    if piece.predict(x) == Some(pos) {
                        self.set_bit(first + x);
                    }
                }
            }
            from = to;
        }
        self.points = points;
    }
}

impl MissModel for Models {
    fn dram_bytes(&self) -> u64 {
        self.pieces.len() as u64 * self.piece_bytes + self.bitmap_bytes
    }

    /// The page the model predicts for `lpa` when its bit says the prediction is exact.
    #[inline]
    fn predict(&self, lpa: u32) -> Option<Ppn> {
        if !self.bit(lpa) {
            return None;
        }
        let (i, x) = self.piece_index(lpa);
        let pos = self.pieces[i]
            .predict(x)
            .expect("a page whose bit is set has an exact prediction");
        Some(self.order.page(pos))
    }

    #[inline]
    fn served(&mut self, by_model: bool) {
        if by_model {
            self.stats.model_hits += 1;
        } else {
            self.stats.model_misses += 1;
        }
    }

    /// Clears `lpa`'s bit; its piece is due for refitting.
    #[inline]
    fn changed(&mut self, lpa: u32) {
        self.clear_bit(lpa);
        let (i, _) = self.piece_index(lpa);
        self.stale[i] = true;
    }

    /// With group-based GC, a translation page is retrained once GC has moved its pages.
    #[inline]
    fn moved(&mut self, lpa: u32) {
        if self.train_after_gc {
            self.rewritten(lpa / self.entries);
        }
    }

    #[inline]
    fn rewritten(&mut self, unit: u32) {
        if !self.pending_mark[unit as usize] {
            self.pending_mark[unit as usize] = true;
            self.pending.push(unit);
        }
    }

    /// Trains every translation page rewritten since the last call.
    #[inline]
    fn settled(&mut self, table: &OnFlashTable, current: &dyn Fn(u32) -> Ppn) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        for &u in &pending {
            self.pending_mark[u as usize] = false;
            let r = table.unit_range(u);
            self.train(u, r.start, r.end, current);
        }
        pending.clear();
        self.pending = pending;
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        out.push(("models", self.pieces.len() as u64 * self.piece_bytes));
        out.push(("bitmaps", self.bitmap_bytes));
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        let s = &self.stats;
        out.push(("model_hits", s.model_hits as f64));
        out.push(("model_misses", s.model_misses as f64));
        out.push(("trainings", s.trainings as f64));
        out.push(("predictable_pages", self.predictable as f64));
    }

    fn reset_counters(&mut self) {
        self.stats = Stats::default();
    }
}

/// LearnedFTL: TPFTL's cache with the learned models under it, and its double-read count.
pub struct LearnedFtl {
    inner: Tpftl<Models>,
    host_reads: u64,
    double_reads: u64,
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
        let cache: TpftlConfig = cfg.scheme_config("tpftl")?;
        let entries = OnFlashTable::new(cfg, layout, 1)?.unit_entries();
        let models = Models::new(cfg, layout, &c, entries);
        let mut inner = Tpftl::with_model(cfg, layout, &cache, models)?;
        let alloc = &mut inner.table_mut().store.alloc;
        alloc.set_sorted_relocation(c.sorted_gc);
        if c.group_gc {
            // A group: the translation pages whose logical pages fill one line, a block on
            // every parallel unit (the artifact's `trans_per_line`); where a translation
            // page maps more than a line, as many whole pieces' intervals as a line holds.
            let line = layout.units * layout.pages_per_block;
            let interval = entries.div_ceil(c.models_per_page.min(entries));
            let span = if entries <= line {
                entries * (line / entries)
            } else {
                (line / interval).max(1) * interval
            };
            let groups = layout.logical_pages.div_ceil(span as u64) as u32;
            alloc.set_relocation_streams(1 + groups, c.group_writes, move |lpa| 1 + lpa / span);
        }
        Ok(LearnedFtl {
            inner,
            host_reads: 0,
            double_reads: 0,
        })
    }
}

impl Ftl for LearnedFtl {
    fn recover(&mut self, found: &Found, flash: &mut Flash) -> Result<()> {
        self.inner.recover(found, flash)
    }

    #[inline]
    fn begin_request(&mut self, first_lpa: u32, pages: u32, op: Op) {
        self.inner.begin_request(first_lpa, pages, op);
    }

    /// A host read; a double read when it read a translation page for a mapped page.
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        self.host_reads += 1;
        let before = self.inner.table().stats.miss_reads;
        let data = self.inner.read(lpa, flash)?;
        if data.is_some() && self.inner.table().stats.miss_reads > before {
            self.double_reads += 1;
        }
        Ok(data)
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        self.inner.write(lpa, seq, flash)
    }

    fn write_batch(&mut self, pages: &[(u32, u64)], flash: &mut Flash) -> Result<()> {
        self.inner.write_batch(pages, flash)
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        self.inner.trim(lpa, flash)
    }

    fn idle(&mut self, flash: &mut Flash) -> Result<()> {
        self.inner.idle(flash)
    }

    fn has_idle_work(&mut self) -> bool {
        self.inner.has_idle_work()
    }

    fn background_gc(&self) -> bool {
        self.inner.background_gc()
    }

    fn slc_cache(&self) -> bool {
        self.inner.table().store.alloc.has_slc_cache()
    }

    fn faults(&self) -> bool {
        self.inner.table().store.alloc.has_faults()
    }

    fn reset_counters(&mut self) {
        self.inner.reset_counters();
        self.host_reads = 0;
        self.double_reads = 0;
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        self.inner.memory(out);
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        self.inner.counters(out);
        let (collections, blocks) = self.inner.table().store.alloc.group_collections();
        out.push(("group_collections", collections as f64));
        out.push(("group_blocks_collected", blocks as f64));
        out.push(("host_reads", self.host_reads as f64));
        out.push(("double_reads", self.double_reads as f64));
        out.push((
            "double_read_ratio",
            if self.host_reads == 0 {
                0.0
            } else {
                self.double_reads as f64 / self.host_reads as f64
            },
        ));
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
