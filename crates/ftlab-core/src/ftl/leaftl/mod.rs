//! LeaFTL (Sun, Li, Sun, Sun, Vucinic, Huang, ASPLOS 2023): the page table replaced by
//! learned linear segments.
//!
//! Writes arrive in sorted flushes from the write buffer and are programmed in logical page
//! order, a block at a time (a block per parallel unit in round-robin order), so that runs
//! of logical pages land on runs of physical pages. Each group of 256 logical pages keeps a
//! log-structured table of learned segments (`table.rs`): the points each flush programs in
//! a group are learned with greedy piecewise linear regression under error bound γ
//! (`plr.rs`) and the segments go on top; a lookup walks the levels top-down.
//!
//! Approximate segments predict a page within γ of the right one. Every page's OOB holds
//! the logical addresses of its neighbours programmed in the same batch in the same block
//! (as many as the OOB holds beyond its 8-byte header: 15 on each side with 128 bytes), so
//! a lookup reads the predicted page and, when it holds another logical page, finds the
//! right one in that OOB (or steps towards it) and pays the extra read, counted as a
//! `misprediction` read. The same holds when a write or trim must find the old copy to
//! invalidate it. A FIFO of the last OOB areas read (16 by default) saves reads, as in the
//! reference. The OOB contents are not stored per page: they are derived on read from the
//! headers of the neighbouring pages and one bit per physical page marking where each batch
//! starts in its block, which is exactly what the OOB would hold.
//!
//! Garbage collection is coordinated with the table: a victim's valid pages are relocated
//! in logical order, relearned and inserted on top, and the victim is erased. Compaction
//! (periodic, per group when it has too many levels, and at the end of a run) drops what
//! newer segments shadow; promotion lifts segments to the highest level they fit.
//!
//! Memory is charged as the reference does (leaftl.md section 3.8): 8 bytes per segment
//! (5 for a single point), 1 byte per CRB entry, 4 bytes per group in DRAM; the valid
//! bitmap, block counters and OOB cache are reported beside.

pub mod plr;
pub mod table;

use crate::blocks::{select_victim, FreeBlocks};
use crate::config::{Config, Layout, VictimPolicy, OOB_HEADER_BYTES};
use crate::error::{Error, Result};
use crate::ftl::page::gc_thresholds;
use crate::ftl::{Ftl, MemoryBreakdown};
use crate::nand::{Cause, Flash, Oob, Ppn, NONE};
use plr::{Codec, Learned, Learner, Point};
use serde::{Deserialize, Serialize};
use std::time::Instant;
use table::{Group, Stats};

/// Logical pages per group (the offsets of a segment are one byte).
pub const GROUP_PAGES: u32 = 256;

/// How the CRB is charged in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrbAccounting {
    /// The paper's layout: 1 byte per listed offset.
    Entries,
    /// The reference artifact's formula: 1 byte per run boundary of the membership bitmap.
    Runs,
}

/// The `[leaftl]` configuration section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LeaftlConfig {
    /// Error bound γ of the learned segments, in pages (0: every prediction exact).
    pub gamma: u32,
    /// A group with more levels than this is compacted and its segments promoted.
    pub max_levels: u32,
    /// Every this many bytes of host writes all groups are compacted (0: never).
    #[serde(with = "crate::units::bytes")]
    pub compaction_interval_bytes: u64,
    /// Most recently read OOB areas kept in controller memory (0: none).
    pub oob_cache_pages: u32,
    /// Consecutive pages of a flush written to one parallel unit before moving to the
    /// next (0: a whole block).
    pub stripe_pages: u32,
    pub crb_accounting: CrbAccounting,
    /// Measure the CPU time of learning and lookups (wall-clock: the report is then not
    /// reproducible to the byte).
    pub cpu_timing: bool,
}

impl Default for LeaftlConfig {
    fn default() -> Self {
        LeaftlConfig {
            gamma: 0,
            max_levels: 10,
            compaction_interval_bytes: 1 << 30,
            oob_cache_pages: 16,
            stripe_pages: 0,
            crb_accounting: CrbAccounting::Entries,
            cpu_timing: false,
        }
    }
}

impl LeaftlConfig {
    pub fn from_config(cfg: &Config) -> Result<LeaftlConfig> {
        let section = cfg.scheme_section("leaftl");
        toml::Value::Table(section)
            .try_into()
            .map_err(|e: toml::de::Error| Error::config("leaftl", e.message().to_string()))
    }
}

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

/// Levels probed by lookups: 1..=LEVEL_BUCKETS, then "more".
const LEVEL_BUCKETS: usize = 32;
const LEVEL_NAMES: [&str; LEVEL_BUCKETS + 1] = [
    "lookup_level.01",
    "lookup_level.02",
    "lookup_level.03",
    "lookup_level.04",
    "lookup_level.05",
    "lookup_level.06",
    "lookup_level.07",
    "lookup_level.08",
    "lookup_level.09",
    "lookup_level.10",
    "lookup_level.11",
    "lookup_level.12",
    "lookup_level.13",
    "lookup_level.14",
    "lookup_level.15",
    "lookup_level.16",
    "lookup_level.17",
    "lookup_level.18",
    "lookup_level.19",
    "lookup_level.20",
    "lookup_level.21",
    "lookup_level.22",
    "lookup_level.23",
    "lookup_level.24",
    "lookup_level.25",
    "lookup_level.26",
    "lookup_level.27",
    "lookup_level.28",
    "lookup_level.29",
    "lookup_level.30",
    "lookup_level.31",
    "lookup_level.32",
    "lookup_level.more",
];

#[derive(Clone, Debug, Default)]
struct Counters {
    /// Host page reads served from flash through a segment.
    lookups: u64,
    /// ... of which through an approximate segment.
    approximate_lookups: u64,
    /// ... whose predicted page held another logical page.
    wrong_predictions: u64,
    /// ... that needed more than one flash read (the reference's misprediction).
    mispredictions: u64,
    /// Extra reads to find the old copy of an overwritten or trimmed page.
    invalidation_reads: u64,
    invalidation_lookups: u64,
    oob_cache_hits: u64,
    /// Lookups by the level (1-based) of the segment that answered them.
    levels: Vec<u64>,
    learned_segments: u64,
    learned_points: u64,
    gc_learned_segments: u64,
    compactions: u64,
    promotions: u64,
    learn_ns: u64,
    lookup_ns: u64,
}

/// Where a chunk of a batch went: its pages are consecutive in one block.
#[derive(Clone, Copy, Debug)]
struct Written {
    lpa: u32,
    ppn: Ppn,
}

pub struct LeaFtl {
    layout: Layout,
    cfg: LeaftlConfig,
    learner: Learner,
    /// OOB neighbours stored on each side of a page.
    window: u32,
    /// Group number -> slot in `groups` (NONE: nothing mapped).
    index: Vec<u32>,
    groups: Vec<Group>,
    free_slots: Vec<u32>,
    stats: Stats,
    // Allocation and garbage collection.
    free: FreeBlocks,
    host_open: Vec<OpenBlock>,
    gc_open: Vec<OpenBlock>,
    unit: u32,
    stripe: u32,
    stripe_left: u32,
    policy: VictimPolicy,
    soft_free_blocks: usize,
    hard_free_blocks: usize,
    /// One bit per physical page: the first page a batch programmed in its block.
    batch_start: Vec<u64>,
    /// Recently read OOB areas (page addresses), oldest first.
    oob_cache: Vec<Ppn>,
    // Scratch, reused.
    batch: Vec<(u32, u32)>,
    pending: Vec<Written>,
    gc_moved: Vec<Written>,
    points: Vec<Point>,
    /// The run (first and last page) of each page being learned.
    runs: Vec<(Ppn, Ppn)>,
    learned: Vec<Learned>,
    bytes_since_compaction: u64,
    counters: Counters,
}

#[inline]
fn bit(bits: &[u64], i: u32) -> bool {
    bits[(i >> 6) as usize] >> (i & 63) & 1 != 0
}

#[inline]
fn set_bit(bits: &mut [u64], i: u32, on: bool) {
    let w = &mut bits[(i >> 6) as usize];
    let m = 1u64 << (i & 63);
    if on {
        *w |= m
    } else {
        *w &= !m
    }
}

fn internal(message: String) -> Error {
    Error::Usage(format!("internal error in leaftl: {message}"))
}

impl LeaFtl {
    pub fn new(cfg: &Config, layout: &Layout) -> Result<LeaFtl> {
        let lcfg = LeaftlConfig::from_config(cfg)?;
        let codec = Codec::for_pages(layout.physical_pages).ok_or_else(|| {
            Error::config(
                "geometry.blocks_per_plane",
                format!(
                    "LeaFTL's 8-byte segments address at most 2^30 physical pages; this device has {}",
                    layout.physical_pages
                ),
            )
        })?;
        if lcfg.stripe_pages > layout.pages_per_block {
            return Err(Error::config(
                "leaftl.stripe_pages",
                format!(
                    "{} is more than a block ({} pages)",
                    lcfg.stripe_pages, layout.pages_per_block
                ),
            ));
        }
        if lcfg.max_levels == 0 {
            return Err(Error::config("leaftl.max_levels", "must be at least 1"));
        }
        let (soft_free_blocks, hard_free_blocks) = gc_thresholds(cfg, layout);
        let groups = layout.logical_pages.div_ceil(GROUP_PAGES as u64) as usize;
        let extra = layout.oob_size as u64 - OOB_HEADER_BYTES;
        let stripe = if lcfg.stripe_pages == 0 {
            layout.pages_per_block
        } else {
            lcfg.stripe_pages
        };
        Ok(LeaFtl {
            layout: *layout,
            learner: Learner::new(lcfg.gamma, codec),
            window: (extra / 4 / 2) as u32,
            index: vec![NONE; groups],
            groups: Vec::new(),
            free_slots: Vec::new(),
            stats: Stats::default(),
            free: FreeBlocks::all(layout),
            host_open: vec![OpenBlock::CLOSED; layout.units as usize],
            gc_open: vec![OpenBlock::CLOSED; layout.units as usize],
            unit: 0,
            stripe,
            stripe_left: stripe,
            policy: cfg.gc.policy,
            soft_free_blocks,
            hard_free_blocks,
            batch_start: vec![0; (layout.physical_pages as usize).div_ceil(64)],
            oob_cache: Vec::with_capacity(lcfg.oob_cache_pages as usize),
            batch: Vec::new(),
            pending: Vec::new(),
            gc_moved: Vec::new(),
            points: Vec::new(),
            runs: Vec::new(),
            learned: Vec::new(),
            bytes_since_compaction: 0,
            counters: Counters {
                levels: vec![0; LEVEL_BUCKETS + 1],
                ..Counters::default()
            },
            cfg: lcfg,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &LeaftlConfig {
        &self.cfg
    }

    /// The group of `lpa` if it has a table.
    #[inline]
    fn group(&self, lpa: u32) -> Option<&Group> {
        let slot = self.index[(lpa / GROUP_PAGES) as usize];
        (slot != NONE).then(|| &self.groups[slot as usize])
    }

    /// The group's table, created if needed.
    fn group_mut(&mut self, group: u32) -> &mut Group {
        let slot = self.index[group as usize];
        if slot != NONE {
            return &mut self.groups[slot as usize];
        }
        let slot = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.groups.push(Group::default());
                (self.groups.len() - 1) as u32
            }
        };
        self.index[group as usize] = slot;
        &mut self.groups[slot as usize]
    }

    /// Drops the table of a group left without segments.
    fn release_if_empty(&mut self, group: u32) {
        let slot = self.index[group as usize];
        if slot != NONE && self.groups[slot as usize].is_empty() {
            self.groups[slot as usize] = Group::default();
            self.index[group as usize] = NONE;
            self.free_slots.push(slot);
        }
    }

    /// Segments and groups resident in DRAM (for tests and reports).
    pub fn table_stats(&self) -> &Stats {
        &self.stats
    }

    /// The table of the group holding `lpa` (for tests).
    pub fn group_of(&self, lpa: u32) -> Option<&Group> {
        self.group(lpa)
    }

    /// Every group satisfies the table's invariants (for tests).
    pub fn check_tables(&self) -> std::result::Result<(), String> {
        for (g, &slot) in self.index.iter().enumerate() {
            if slot != NONE {
                self.groups[slot as usize]
                    .check()
                    .map_err(|e| format!("group {g}: {e}"))?;
            }
        }
        Ok(())
    }

    fn resident_groups(&self) -> u64 {
        (self.groups.len() - self.free_slots.len()) as u64
    }

    // ----- OOB windows -----

    /// The pages whose logical addresses the OOB of `p` holds: its neighbours within the
    /// window that the same batch programmed in the same block (and `p` itself).
    fn window_of(&self, flash: &Flash, p: Ppn) -> (Ppn, Ppn) {
        let first = flash.first_page(flash.block_of(p));
        let end = first + flash.write_pointer(flash.block_of(p));
        let mut lo = p;
        while lo > first && p - lo < self.window && !bit(&self.batch_start, lo) {
            lo -= 1;
        }
        let mut hi = p;
        while hi + 1 < end && hi - p < self.window && !bit(&self.batch_start, hi + 1) {
            hi += 1;
        }
        (lo, hi)
    }

    /// The page among `lo..=hi` that holds `lpa`, from their OOB headers (the OOB of the
    /// page read lists them).
    fn find_in(flash: &Flash, lpa: u32, lo: Ppn, hi: Ppn) -> Option<Ppn> {
        (lo..=hi).find(|&q| flash.oob(q).lpa == lpa)
    }

    fn remember(&mut self, p: Ppn) {
        let cap = self.cfg.oob_cache_pages as usize;
        if cap == 0 {
            return;
        }
        if let Some(i) = self.oob_cache.iter().position(|&q| q == p) {
            self.oob_cache.remove(i);
        } else if self.oob_cache.len() == cap {
            self.oob_cache.remove(0);
        }
        self.oob_cache.push(p);
    }

    /// Where `lpa` is, if a cached OOB area of the run of `p` lists it.
    fn cached_location(&self, flash: &Flash, lpa: u32, p: Ppn) -> Option<Ppn> {
        let block = flash.block_of(p);
        for &q in self.oob_cache.iter().rev() {
            if flash.block_of(q) != block || q.abs_diff(p) > self.window {
                continue;
            }
            let (lo, hi) = self.window_of(flash, q);
            if (lo..=hi).contains(&p) {
                if let Some(x) = Self::find_in(flash, lpa, lo, hi) {
                    return Some(x);
                }
            }
        }
        None
    }

    /// Finds `lpa` from its predicted page `p` by reading OOB areas (each read counted as a
    /// misprediction read), starting with `p`'s. The segment guarantees that `lpa` lies
    /// within γ of `p` in the same run, which is sorted by logical address.
    fn search(&mut self, flash: &mut Flash, lpa: u32, p: Ppn) -> Result<Ppn> {
        let mut q = p;
        let steps = self.cfg.gamma / (self.window + 1) + 1;
        for _ in 0..=steps {
            flash.read(q, Cause::Misprediction)?;
            self.remember(q);
            let (lo, hi) = self.window_of(flash, q);
            if let Some(x) = Self::find_in(flash, lpa, lo, hi) {
                return Ok(x);
            }
            let here = flash.oob(q).lpa;
            let reach = self.window + 1;
            q = if lpa > here && hi == q + self.window {
                q + reach
            } else if lpa < here && q - lo == self.window {
                q - reach
            } else {
                break;
            };
        }
        Err(internal(format!(
            "logical page {lpa} is not within the error bound of its predicted page {p}"
        )))
    }

    /// The exact page holding `lpa` now, for invalidation (no data read), or None.
    fn locate_for_update(&mut self, flash: &mut Flash, lpa: u32) -> Result<Option<Ppn>> {
        let Some((seg, _)) = self
            .group(lpa)
            .and_then(|g| g.lookup((lpa % GROUP_PAGES) as u8))
        else {
            return Ok(None);
        };
        let p = seg.predict((lpa % GROUP_PAGES) as u8);
        if seg.accurate {
            return Ok(Some(p));
        }
        self.counters.invalidation_lookups += 1;
        if let Some(x) = self.cached_location(flash, lpa, p) {
            self.counters.oob_cache_hits += 1;
            return Ok(Some(x));
        }
        let before = flash.stats.reads[Cause::Misprediction as usize];
        let x = self.search(flash, lpa, p)?;
        self.counters.invalidation_reads +=
            flash.stats.reads[Cause::Misprediction as usize] - before;
        Ok(Some(x))
    }

    // ----- allocation -----

    /// The next page for a host write: the open block of the current unit, moving to the
    /// next unit when the block is full or the stripe is done. Learns what was written
    /// before opening a new block (garbage collection may run then and relocate it).
    fn next_host_page(&mut self, flash: &mut Flash) -> Result<Ppn> {
        let ppb = self.layout.pages_per_block;
        let u = self.unit as usize;
        let open = self.host_open[u];
        if self.stripe_left > 0 && open.block != NONE && open.next < ppb {
            self.host_open[u].next += 1;
            self.stripe_left -= 1;
            return Ok(flash.first_page(open.block) + open.next);
        }
        self.learn_pending(flash);
        for _ in 0..=self.layout.units {
            let u = self.unit as usize;
            let open = self.host_open[u];
            if self.stripe_left > 0 {
                if open.block != NONE && open.next < ppb {
                    self.host_open[u].next += 1;
                    self.stripe_left -= 1;
                    return Ok(flash.first_page(open.block) + open.next);
                }
                if let Some(block) = self.open_host_block(self.unit, flash)? {
                    self.host_open[u] = OpenBlock { block, next: 1 };
                    self.stripe_left -= 1;
                    return Ok(flash.first_page(block));
                }
            }
            self.unit = (self.unit + 1) % self.layout.units;
            self.stripe_left = self.stripe;
        }
        Err(Error::DeviceFull {
            message: "every parallel unit is out of free blocks and holds no block with an invalid page; \
                      the logical data fills the device (raise ftl.over_provisioning)"
                .into(),
        })
    }

    /// Opens a fresh host block in `unit` after the garbage collection its free-block count
    /// calls for; None if the unit has no block to give.
    fn open_host_block(&mut self, unit: u32, flash: &mut Flash) -> Result<Option<u32>> {
        self.host_open[unit as usize] = OpenBlock::CLOSED;
        if self.free.count(unit) < self.soft_free_blocks {
            self.reclaim(unit, flash)?;
        }
        while self.free.count(unit) <= self.hard_free_blocks {
            if !self.reclaim(unit, flash)? {
                break;
            }
        }
        flash.chain();
        if self.free.count(unit) <= 1 {
            return Ok(None);
        }
        Ok(self.free.pop(unit))
    }

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

    /// Coordinated GC: relocates a victim's valid pages in logical order, relearns their
    /// segments on top of their groups, and erases the victim. False if no victim.
    fn reclaim(&mut self, unit: u32, flash: &mut Flash) -> Result<bool> {
        let exclude = [
            self.host_open[unit as usize].block,
            self.gc_open[unit as usize].block,
        ];
        let Some(victim) = select_victim(flash, unit, self.policy, &exclude) else {
            return Ok(false);
        };
        let mut moved = std::mem::take(&mut self.gc_moved);
        moved.clear();
        moved.extend(flash.valid_pages(victim).map(|ppn| Written {
            lpa: flash.oob(ppn).lpa,
            ppn,
        }));
        moved.sort_unstable_by_key(|w| w.lpa);
        let mut chunk_start = 0;
        for i in 0..moved.len() {
            let src = moved[i].ppn;
            let dst = self.gc_page(unit, flash)?;
            if i > chunk_start && flash.block_of(dst) != flash.block_of(moved[i - 1].ppn) {
                chunk_start = i;
            }
            if i == chunk_start {
                set_bit(&mut self.batch_start, dst, true);
            }
            flash.copy(src, dst, Cause::Gc)?;
            flash.invalidate(src)?;
            moved[i].ppn = dst;
        }
        let before = self.counters.learned_segments;
        self.learn(&moved, flash);
        self.counters.gc_learned_segments += self.counters.learned_segments - before;
        flash.stats.gc_pages_moved += moved.len() as u64;
        self.gc_moved = moved;
        flash.chain();
        self.erase(victim, flash)?;
        self.free.push(&self.layout, victim);
        flash.stats.gc_invocations += 1;
        Ok(true)
    }

    fn erase(&mut self, block: u32, flash: &mut Flash) -> Result<()> {
        flash.erase(block, Cause::Gc)?;
        let first = flash.first_page(block);
        for p in first..first + self.layout.pages_per_block {
            set_bit(&mut self.batch_start, p, false);
        }
        self.oob_cache.retain(|&q| flash.block_of(q) != block);
        Ok(())
    }

    // ----- learning -----

    fn learn_pending(&mut self, flash: &Flash) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        self.learn(&pending, flash);
        self.pending = pending;
        self.pending.clear();
    }

    /// Learns pages just programmed (sorted by logical address, and so programmed: pages
    /// consecutive in one block form a run) and inserts the segments on top of their groups.
    fn learn(&mut self, written: &[Written], flash: &Flash) {
        let started = self.cfg.cpu_timing.then(Instant::now);
        // Runs: pages consecutive in one block (what each page's OOB window can see).
        self.runs.clear();
        let mut a = 0;
        while a < written.len() {
            let block = flash.block_of(written[a].ppn);
            let mut b = a + 1;
            while b < written.len()
                && written[b].ppn == written[b - 1].ppn + 1
                && flash.block_of(written[b].ppn) == block
            {
                b += 1;
            }
            let run = (written[a].ppn, written[b - 1].ppn);
            self.runs.extend(std::iter::repeat_n(run, b - a));
            a = b;
        }
        let mut i = 0;
        while i < written.len() {
            let group = written[i].lpa / GROUP_PAGES;
            let mut j = i;
            while j < written.len() && written[j].lpa / GROUP_PAGES == group {
                j += 1;
            }
            self.points.clear();
            for w in &written[i..j] {
                self.points.push(Point {
                    x: (w.lpa % GROUP_PAGES) as u8,
                    y: w.ppn,
                    run_lo: 0,
                    run_hi: 0,
                });
            }
            for (p, &run) in self.points.iter_mut().zip(&self.runs[i..j]) {
                (p.run_lo, p.run_hi) = run;
            }
            self.learned.clear();
            self.learner.learn(&self.points, &mut self.learned);
            self.counters.learned_segments += self.learned.len() as u64;
            self.counters.learned_points += (j - i) as u64;
            let learned = std::mem::take(&mut self.learned);
            let max_levels = self.cfg.max_levels as usize;
            let charge_runs = self.cfg.crb_accounting == CrbAccounting::Runs;
            let mut stats = std::mem::take(&mut self.stats);
            let table = self.group_mut(group);
            table.insert(&learned, &mut stats);
            let crowded = table.crowded(max_levels);
            if crowded {
                table.reorganise(charge_runs, &mut stats);
            }
            self.counters.promotions += crowded as u64;
            self.stats = stats;
            self.learned = learned;
            i = j;
        }
        if let Some(t) = started {
            self.counters.learn_ns += t.elapsed().as_nanos() as u64;
        }
    }

    /// Compacts and promotes every group.
    fn compact_all(&mut self) {
        let mut stats = std::mem::take(&mut self.stats);
        let charge_runs = self.cfg.crb_accounting == CrbAccounting::Runs;
        for slot in 0..self.groups.len() {
            let g = &mut self.groups[slot];
            if !g.is_empty() {
                g.reorganise(charge_runs, &mut stats);
            }
        }
        self.stats = stats;
        self.counters.compactions += 1;
    }

    /// Programs a batch sorted by logical address.
    fn program_batch(&mut self, flash: &mut Flash) -> Result<()> {
        let batch = std::mem::take(&mut self.batch);
        // Invalidate the old copies first, so that GC triggered by this batch sees them.
        for &(lpa, _) in &batch {
            if let Some(old) = self.locate_for_update(flash, lpa)? {
                flash.invalidate(old)?;
            }
        }
        let result = self.program_sorted(&batch, flash);
        self.batch = batch;
        result?;
        self.learn_pending(flash);
        let written = self.batch.len() as u64 * self.layout.page_size as u64;
        self.bytes_since_compaction += written;
        let interval = self.cfg.compaction_interval_bytes;
        if interval > 0 && self.bytes_since_compaction >= interval {
            self.bytes_since_compaction = 0;
            self.compact_all();
        }
        Ok(())
    }

    fn program_sorted(&mut self, batch: &[(u32, u32)], flash: &mut Flash) -> Result<()> {
        for &(lpa, seq) in batch {
            let ppn = self.next_host_page(flash)?;
            let new_run = match self.pending.last() {
                None => true,
                Some(w) => w.ppn + 1 != ppn || flash.block_of(w.ppn) != flash.block_of(ppn),
            };
            if new_run {
                self.learn_pending(flash);
                set_bit(&mut self.batch_start, ppn, true);
            }
            flash.program(ppn, Oob { lpa, seq }, &[], Cause::Host)?;
            self.pending.push(Written { lpa, ppn });
        }
        Ok(())
    }
}

impl Ftl for LeaFtl {
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        let started = self.cfg.cpu_timing.then(Instant::now);
        let x = (lpa % GROUP_PAGES) as u8;
        let found = self.group(lpa).and_then(|g| g.lookup(x));
        if let Some(t) = started {
            self.counters.lookup_ns += t.elapsed().as_nanos() as u64;
        }
        let Some((seg, level)) = found else {
            return Ok(None);
        };
        let c = &mut self.counters;
        c.lookups += 1;
        c.levels[level.min(LEVEL_BUCKETS)] += 1;
        let p = seg.predict(x);
        if seg.accurate {
            return Ok(Some(flash.read(p, Cause::Host)?));
        }
        c.approximate_lookups += 1;
        if let Some(at) = self.cached_location(flash, lpa, p) {
            self.counters.oob_cache_hits += 1;
            self.counters.wrong_predictions += (at != p) as u64;
            return Ok(Some(flash.read(at, Cause::Host)?));
        }
        // The predicted page is read; whether it was the right one shows in its OOB.
        if flash.is_programmed(p) && flash.oob(p).lpa == lpa {
            let oob = flash.read(p, Cause::Host)?;
            self.remember(p);
            return Ok(Some(oob));
        }
        self.counters.wrong_predictions += 1;
        self.counters.mispredictions += 1;
        let at = self.search(flash, lpa, p)?;
        flash.chain();
        Ok(Some(flash.read(at, Cause::Host)?))
    }

    fn write(&mut self, lpa: u32, seq: u32, flash: &mut Flash) -> Result<()> {
        self.batch.clear();
        self.batch.push((lpa, seq));
        self.program_batch(flash)
    }

    fn write_batch(&mut self, pages: &[(u32, u32)], flash: &mut Flash) -> Result<()> {
        self.batch.clear();
        self.batch.extend_from_slice(pages);
        // LeaFTL programs a flush in logical order whatever order the buffer gives; of two
        // writes to one page, the later wins.
        self.batch.sort_by_key(|&(lpa, _)| lpa);
        self.batch.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                *kept = *later;
            }
            same
        });
        self.program_batch(flash)
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        if let Some(old) = self.locate_for_update(flash, lpa)? {
            flash.invalidate(old)?;
            let group = lpa / GROUP_PAGES;
            let mut stats = std::mem::take(&mut self.stats);
            self.group_mut(group)
                .remove_offset((lpa % GROUP_PAGES) as u8, &mut stats);
            self.stats = stats;
            self.release_if_empty(group);
        }
        Ok(())
    }

    fn finish(&mut self, _flash: &mut Flash) -> Result<()> {
        // The reference compacts every group at the end of a run.
        self.compact_all();
        Ok(())
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        let s = &self.stats;
        out.push(("segments", s.single * 5 + s.multi * 8));
        out.push((
            "crb",
            match self.cfg.crb_accounting {
                CrbAccounting::Entries => s.crb_entries,
                CrbAccounting::Runs => s.crb_runs,
            },
        ));
        out.push(("group_directory", self.resident_groups() * 4));
        let layout = &self.layout;
        out.push(("valid_bitmap", layout.physical_pages.div_ceil(8)));
        let per_block = if self.policy == VictimPolicy::CostBenefit {
            12
        } else {
            8
        };
        out.push(("block_counters", layout.total_blocks as u64 * per_block));
        // Each cached OOB area: its page address and the neighbours' logical addresses.
        let oob_entry = 4 + (layout.oob_size as u64 - OOB_HEADER_BYTES);
        out.push(("oob_cache", self.cfg.oob_cache_pages as u64 * oob_entry));
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        let c = &self.counters;
        let s = &self.stats;
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let crb = match self.cfg.crb_accounting {
            CrbAccounting::Entries => s.crb_entries,
            CrbAccounting::Runs => s.crb_runs,
        };
        out.push((
            "mapping_table_bytes",
            (s.single * 5 + s.multi * 8 + crb + self.resident_groups() * 4) as f64,
        ));
        out.push(("segments", s.segments() as f64));
        out.push(("segments_single_point", s.single as f64));
        out.push(("segments_accurate_consecutive", s.kinds[0] as f64));
        out.push(("segments_accurate_irregular", s.kinds[1] as f64));
        out.push(("segments_approximate_consecutive", s.kinds[2] as f64));
        out.push(("segments_approximate_irregular", s.kinds[3] as f64));
        out.push(("crb_entries", s.crb_entries as f64));
        out.push(("groups_resident", self.resident_groups() as f64));
        out.push(("lookups", c.lookups as f64));
        out.push(("approximate_lookups", c.approximate_lookups as f64));
        out.push(("wrong_predictions", c.wrong_predictions as f64));
        out.push(("mispredictions", c.mispredictions as f64));
        out.push(("misprediction_ratio", ratio(c.mispredictions, c.lookups)));
        out.push(("invalidation_lookups", c.invalidation_lookups as f64));
        out.push(("invalidation_reads", c.invalidation_reads as f64));
        out.push(("oob_cache_hits", c.oob_cache_hits as f64));
        out.push(("oob_window_pages", self.window as f64));
        out.push(("learned_segments", c.learned_segments as f64));
        out.push(("learned_points", c.learned_points as f64));
        out.push(("gc_learned_segments", c.gc_learned_segments as f64));
        out.push(("compactions", c.compactions as f64));
        out.push(("promotions", c.promotions as f64));
        for (name, &n) in LEVEL_NAMES.iter().zip(&c.levels) {
            out.push((name, n as f64));
        }
        if self.cfg.cpu_timing {
            out.push((
                "learn_cpu_ns_per_256_pages",
                ratio(c.learn_ns * 256, c.learned_points),
            ));
            out.push(("lookup_cpu_ns_mean", ratio(c.lookup_ns, c.lookups)));
        }
    }
}
