//! LeaFTL (Sun, Li, Sun, Sun, Vucinic, Huang, ASPLOS 2023): the page table replaced by
//! learned linear segments.
//!
//! Writes arrive in sorted flushes from the write buffer and are programmed in logical page
//! order, a block at a time (the shared allocator's host stripe), so that runs of logical
//! pages land on runs of physical pages. Each group of 256 logical pages keeps a
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
//! Garbage collection is coordinated with the table: the shared allocator relocates a
//! victim's valid pages in logical order, and LeaFTL relearns them and inserts the segments
//! on top before the next lookup. Compaction (periodic, per group when it has too many
//! levels, and at the end of a run) drops what newer segments shadow; promotion lifts
//! segments to the highest level they fit.
//!
//! Under a DRAM budget (`dram.budget_bytes`), groups are cached: the least recently used
//! group is compacted and written to its translation page (the shared translation-page
//! store, cause `translation`) when the resident table exceeds the budget, and read back on
//! a lookup that needs it. A write or GC relearning into a group that is on flash does not
//! read it: it starts a fresh group in DRAM whose segments shadow the flash copy, merged
//! lazily, when a lookup misses in DRAM or when the group is evicted (the reference's lazy
//! merge).
//!
//! Memory is charged as the reference does (leaftl.md section 3.8): 8 bytes per segment
//! (5 for a single point), 1 byte per CRB entry, 4 bytes per group in DRAM; the directory
//! of translation pages, the valid bitmap, block counters and OOB cache are reported beside.

pub mod plr;
pub mod table;

use crate::device::geometry::{Layout, OOB_HEADER_BYTES};
use crate::device::nand::{Cause, Flash, Oob, Ppn, NONE};
use crate::error::{Error, Result};
use crate::ftl::kit::alloc::{Move, PageAllocator, StripeOrder};
use crate::ftl::kit::mapcache::{Links, List, NIL};
use crate::ftl::kit::translation::TranslationStore;
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use plr::{Codec, Learned, Learner, Point};
use serde::{Deserialize, Serialize};
use std::time::Instant;
use table::{Group, Stats};

/// Logical pages per group (the offsets of a segment are one byte).
pub const GROUP_PAGES: u32 = 256;

/// The largest compacted group in the 8-byte encoding: 256 segments and 256 CRB entries.
pub const MAX_GROUP_BYTES: u64 = 256 * 8 + 256;

/// How the members of irregular segments are charged in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrbAccounting {
    /// The paper's CRB layout: 1 byte per listed offset.
    Entries,
    /// The reference artifact's formula (leaftl.md section 3.8), the default: the
    /// membership bitmap run-length encoded, 1 byte per run boundary inside the segment.
    Runs,
}

/// Where a flush's pages go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// A block at a time (up to `stripe_pages` pages) on one parallel unit, then the next:
    /// the artifact's allocation; segments are learned over physical page numbers.
    Block,
    /// `stripe_pages` pages (default 1) on one parallel unit, then as many on the next, as a
    /// superblock stripe; segments are learned over positions in that stripe order, which
    /// stay consecutive while the units' open blocks are aligned, so a segment spans the
    /// units. An approximate segment predicts each member within the chunk it was written
    /// in (the pages of its block that its OOB describes): with one-page chunks only
    /// accurate segments are learned (γ has no effect).
    Stripe,
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
    pub placement: Placement,
    /// Consecutive pages of a flush written to one parallel unit before moving to the next:
    /// block placement, up to a block (0: a whole block); stripe placement, a divisor of
    /// the pages per block (0: one page).
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
            placement: Placement::Block,
            stripe_pages: 0,
            crb_accounting: CrbAccounting::Runs,
            cpu_timing: false,
        }
    }
}

/// Where pages come from: the shared allocator alone (the whole table in DRAM) or the
/// translation-page store over it (groups cached under a DRAM budget).
enum Backing {
    Dram(PageAllocator),
    Flash(TranslationStore),
}

impl Backing {
    fn alloc(&mut self) -> &mut PageAllocator {
        match self {
            Backing::Dram(a) => a,
            Backing::Flash(s) => &mut s.alloc,
        }
    }

    #[inline]
    fn host_page(&mut self, flash: &mut Flash) -> Result<Ppn> {
        match self {
            Backing::Dram(a) => a.host_page(flash),
            Backing::Flash(s) => s.data_page(flash),
        }
    }

    #[inline]
    fn has_moves(&self) -> bool {
        match self {
            Backing::Dram(a) => a.has_moves(),
            Backing::Flash(s) => s.has_moves(),
        }
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        match self {
            Backing::Dram(a) => a.memory(out),
            Backing::Flash(s) => s.memory(out),
        }
    }
}

/// Per group: a DRAM copy that does not include its flash copy yet, and a DRAM copy that
/// differs from the flash copy.
const PARTIAL: u8 = 1;
const DIRTY: u8 = 2;

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
    crowded_compactions: u64,
    /// Mapping cache: groups read from flash on a miss, partial groups merged with their
    /// flash copy, dirty and clean evictions, and partial groups started by a write.
    group_loads: u64,
    group_merges: u64,
    dirty_evictions: u64,
    clean_evictions: u64,
    partial_groups: u64,
    learn_ns: u64,
    lookup_ns: u64,
}

/// A page just programmed: its logical address and where it went.
#[derive(Clone, Copy, Debug)]
struct Written {
    lpa: u32,
    ppn: Ppn,
}

pub struct LeaFtl {
    layout: Layout,
    cfg: LeaftlConfig,
    learner: Learner,
    /// The segments' 8-byte encoding (translation pages hold it).
    codec: Codec,
    /// OOB neighbours stored on each side of a page.
    window: u32,
    /// Group number -> slot in `groups` (NONE: not in DRAM).
    index: Vec<u32>,
    groups: Vec<Group>,
    free_slots: Vec<u32>,
    stats: Stats,
    // The mapping cache.
    budget: u64,
    lru_links: Links,
    lru: List,
    flags: Vec<u8>,
    /// Group number -> slot in `flash_groups`: what its translation page holds (simulation
    /// state, not DRAM).
    flash_index: Vec<u32>,
    flash_groups: Vec<Group>,
    flash_free: Vec<u32>,
    pages_per_group: u32,
    backing: Backing,
    /// Stripe placement: segments map to positions in stripe order.
    stripe_order: Option<StripeOrder>,
    /// One bit per physical page: the first page a batch programmed in its block.
    batch_start: Vec<u64>,
    /// Recently read OOB areas (page, erase count of its block then), oldest first.
    oob_cache: Vec<(Ppn, u32)>,
    // Scratch, reused.
    batch: Vec<(u32, u64)>,
    pending: Vec<Written>,
    gc_moved: Vec<Written>,
    points: Vec<Point>,
    /// The run (first and last page) of each page being learned.
    runs: Vec<(Ppn, Ppn)>,
    learned: Vec<Learned>,
    bytes_since_compaction: u64,
    /// Batches of GC moves applied so far (a lookup made before a move is stale).
    moves_applied: u64,
    counters: Counters,
}

#[inline]
fn bit(bits: &[u64], i: u32) -> bool {
    bits[(i >> 6) as usize] >> (i & 63) & 1 != 0
}

#[inline]
fn set_bit(bits: &mut [u64], i: u32) {
    bits[(i >> 6) as usize] |= 1u64 << (i & 63);
}

fn internal(message: String) -> Error {
    Error::Usage(format!("internal error in leaftl: {message}"))
}

impl Scheme for LeaFtl {
    const NAME: &'static str = "leaftl";
    const DESCRIPTION: &'static str =
        "LeaFTL (ASPLOS'23): learned linear segments per 256-page group, OOB-verified predictions";
    type Section = LeaftlConfig;
    const ADVISE: &'static str = r#"gamma = [0, 4, 16]"#;
    /// The reference flushes its write buffer whole, in logical page order, the 256-page
    /// groups with the most dirty pages first (up to 7/8 of the flush): what it learns are
    /// the runs such flushes give. Evicting one page at a time (the `default` preset's
    /// buffer) would leave it one single-point segment per write. The flush starts when the
    /// buffer is full, as the reference's, but in the background (one batch brings it
    /// below the low watermark).
    const DEVICE_DEFAULTS: Option<&'static str> = Some(
        r#"
[buffer]
flush = "sorted"
flush_bytes = 0
flush_group_pages = 256
flush_group_fill = 0.875
high_watermark = 1.0
low_watermark = 0.5
"#,
    );

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let lcfg = Self::section(cfg)?;
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
        if lcfg.placement == Placement::Stripe
            && lcfg.stripe_pages > 1
            && !layout.pages_per_block.is_multiple_of(lcfg.stripe_pages)
        {
            return Err(Error::config(
                "leaftl.stripe_pages",
                format!(
                    "stripe placement needs a divisor of the pages per block ({}), not {}",
                    layout.pages_per_block, lcfg.stripe_pages
                ),
            ));
        }
        if lcfg.max_levels == 0 {
            return Err(Error::config("leaftl.max_levels", "must be at least 1"));
        }
        let budget = cfg.dram.budget(layout);
        if budget != 0 && budget < MAX_GROUP_BYTES + 4 {
            return Err(Error::config(
                cfg.dram.budget_key(),
                format!(
                    "{budget} bytes cannot hold one group of LeaFTL's table ({} bytes at most once compacted)",
                    MAX_GROUP_BYTES + 4
                ),
            ));
        }
        let groups = layout.logical_pages.div_ceil(GROUP_PAGES as u64) as usize;
        let pages_per_group = MAX_GROUP_BYTES.div_ceil(layout.page_size as u64) as u32;
        let mut backing = if budget == 0 {
            Backing::Dram(PageAllocator::new(cfg, layout, false))
        } else {
            Backing::Flash(TranslationStore::new(
                cfg,
                layout,
                groups as u32 * pages_per_group,
            )?)
        };
        let stripe = match (lcfg.placement, lcfg.stripe_pages) {
            (Placement::Stripe, n) => n.max(1),
            (Placement::Block, 0) => layout.pages_per_block,
            (Placement::Block, n) => n,
        };
        backing.alloc().set_host_stripe(stripe);
        backing.alloc().set_sorted_relocation(true);
        let extra = layout.oob_size as u64 - OOB_HEADER_BYTES;
        Ok(LeaFtl {
            layout: *layout,
            learner: Learner::new(lcfg.gamma, codec)
                .across_runs(lcfg.placement == Placement::Stripe),
            codec,
            window: (extra / 4 / 2) as u32,
            index: vec![NONE; groups],
            groups: Vec::new(),
            free_slots: Vec::new(),
            stats: Stats::default(),
            budget: if budget == 0 { u64::MAX } else { budget },
            lru_links: Links::new(if budget == 0 { 0 } else { groups }),
            lru: List::EMPTY,
            flags: vec![0; groups],
            flash_index: vec![NONE; if budget == 0 { 0 } else { groups }],
            flash_groups: Vec::new(),
            flash_free: Vec::new(),
            pages_per_group,
            backing,
            stripe_order: (lcfg.placement == Placement::Stripe)
                .then(|| StripeOrder::new(cfg, layout, stripe)),
            batch_start: vec![0; (layout.physical_pages as usize).div_ceil(64)],
            oob_cache: Vec::with_capacity(lcfg.oob_cache_pages as usize),
            batch: Vec::new(),
            pending: Vec::new(),
            gc_moved: Vec::new(),
            points: Vec::new(),
            runs: Vec::new(),
            learned: Vec::new(),
            bytes_since_compaction: 0,
            moves_applied: 0,
            counters: Counters {
                levels: vec![0; LEVEL_BUCKETS + 1],
                ..Counters::default()
            },
            cfg: lcfg,
        })
    }
}

impl LeaFtl {
    /// The configuration in force.
    pub fn config(&self) -> &LeaftlConfig {
        &self.cfg
    }

    /// Segments and CRB entries of the groups in DRAM.
    pub fn table_stats(&self) -> &Stats {
        &self.stats
    }

    /// The DRAM table of the group holding `lpa`, if it is in DRAM (for tests).
    pub fn group_of(&self, lpa: u32) -> Option<&Group> {
        let slot = self.index[(lpa / GROUP_PAGES) as usize];
        (slot != NONE).then(|| &self.groups[slot as usize])
    }

    /// Every group in DRAM and on flash satisfies the table's invariants (for tests).
    pub fn check_tables(&self) -> std::result::Result<(), String> {
        for (g, &slot) in self.index.iter().enumerate() {
            if slot != NONE {
                self.groups[slot as usize]
                    .check()
                    .map_err(|e| format!("group {g}: {e}"))?;
            }
        }
        for (g, &slot) in self.flash_index.iter().enumerate() {
            if slot != NONE {
                self.flash_groups[slot as usize]
                    .check()
                    .map_err(|e| format!("group {g} on flash: {e}"))?;
            }
        }
        Ok(())
    }

    fn resident_groups(&self) -> u64 {
        (self.groups.len() - self.free_slots.len()) as u64
    }

    fn crb_bytes(&self) -> u64 {
        match self.cfg.crb_accounting {
            CrbAccounting::Entries => self.stats.crb_entries,
            CrbAccounting::Runs => self.stats.crb_runs,
        }
    }

    /// The mapping table in DRAM, by the reference's formula.
    pub fn mapping_table_bytes(&self) -> u64 {
        self.stats.single * 5 + self.stats.multi * 8 + self.crb_bytes() + self.resident_groups() * 4
    }

    fn charge_runs(&self) -> bool {
        self.cfg.crb_accounting == CrbAccounting::Runs
    }

    // ----- groups in DRAM and on flash -----

    #[inline]
    fn on_flash(&self, group: u32) -> bool {
        self.flash_index
            .get(group as usize)
            .is_some_and(|&s| s != NONE)
    }

    fn cached(&self) -> bool {
        self.budget != u64::MAX
    }

    #[inline]
    fn touch(&mut self, group: u32) {
        if self.cached() {
            self.lru_links.move_to_front(&mut self.lru, group);
        }
    }

    /// A new, empty DRAM table for `group`.
    fn make_resident(&mut self, group: u32) -> u32 {
        let slot = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.groups.push(Group::default());
                (self.groups.len() - 1) as u32
            }
        };
        self.index[group as usize] = slot;
        if self.cached() {
            self.lru_links.push_front(&mut self.lru, group);
        }
        slot
    }

    /// Takes `group`'s table out of DRAM (its statistics already removed).
    fn drop_resident(&mut self, group: u32) -> Group {
        let slot = self.index[group as usize];
        self.index[group as usize] = NONE;
        self.free_slots.push(slot);
        if self.cached() {
            self.lru_links.remove(&mut self.lru, group);
        }
        self.flags[group as usize] = 0;
        std::mem::take(&mut self.groups[slot as usize])
    }

    /// Reads the translation pages of `group`.
    fn read_group(&mut self, group: u32, flash: &mut Flash) -> Result<()> {
        if let Backing::Flash(store) = &mut self.backing {
            for j in 0..self.pages_per_group {
                store.read(group * self.pages_per_group + j, flash)?;
            }
        }
        Ok(())
    }

    /// Brings the flash copy of `group` into DRAM (one translation read per page): a new
    /// DRAM table, or the lazy merge below a partial one.
    fn load(&mut self, group: u32, flash: &mut Flash) -> Result<()> {
        self.read_group(group, flash)?;
        flash.chain();
        let copy = self.flash_groups[self.flash_index[group as usize] as usize].clone();
        let slot = self.index[group as usize];
        if slot == NONE {
            let slot = self.make_resident(group);
            copy.account(&mut self.stats);
            self.groups[slot as usize] = copy;
            self.counters.group_loads += 1;
        } else {
            let charge_runs = self.charge_runs();
            let g = &mut self.groups[slot as usize];
            g.unaccount(&mut self.stats);
            g.append_below(&copy);
            g.account(&mut self.stats);
            g.reorganise(charge_runs, &mut self.stats);
            self.flags[group as usize] &= !PARTIAL;
            self.counters.group_merges += 1;
        }
        Ok(())
    }

    /// The DRAM table of `group` for new segments: a partial one is started (without
    /// reading the flash copy) if the group is not in DRAM.
    fn table_for_update(&mut self, group: u32) -> u32 {
        let mut slot = self.index[group as usize];
        if slot == NONE {
            slot = self.make_resident(group);
            if self.on_flash(group) {
                self.flags[group as usize] |= PARTIAL;
                self.counters.partial_groups += 1;
            }
        } else {
            self.touch(group);
        }
        self.flags[group as usize] |= DIRTY;
        slot
    }

    /// The segment owning `lpa` and its level: from DRAM, else from the flash copy (read
    /// and merged or loaded).
    fn find(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<(plr::Seg, usize)>> {
        let group = lpa / GROUP_PAGES;
        let x = (lpa % GROUP_PAGES) as u8;
        let slot = self.index[group as usize];
        if slot != NONE {
            self.touch(group);
            let found = self.groups[slot as usize].lookup(x);
            if found.is_some() || self.flags[group as usize] & PARTIAL == 0 {
                return Ok(found);
            }
        } else if !self.on_flash(group) {
            return Ok(None);
        }
        self.load(group, flash)?;
        let slot = self.index[group as usize];
        Ok(self.groups[slot as usize].lookup(x))
    }

    /// `find`, then the evictions the budget calls for; again if they moved pages (their
    /// translation writes may trigger GC), so that the answer is current.
    fn find_within_budget(
        &mut self,
        lpa: u32,
        flash: &mut Flash,
    ) -> Result<Option<(plr::Seg, usize)>> {
        loop {
            let generation = self.moves_applied;
            let found = self.find(lpa, flash)?;
            self.fit_budget(flash)?;
            if self.moves_applied == generation {
                return Ok(found);
            }
        }
    }

    /// Evicts least recently used groups until the DRAM table fits the budget.
    fn fit_budget(&mut self, flash: &mut Flash) -> Result<()> {
        while self.mapping_table_bytes() > self.budget && self.lru.tail != NIL {
            let victim = self.lru.tail;
            self.evict(victim, flash)?;
            self.apply_moves(flash);
        }
        Ok(())
    }

    /// Writes `group` to its translation pages if it changed (compacted first, and merged
    /// with its flash copy if partial) and drops it from DRAM.
    fn evict(&mut self, group: u32, flash: &mut Flash) -> Result<()> {
        if self.flags[group as usize] & PARTIAL != 0 {
            self.load(group, flash)?;
        }
        let dirty = self.flags[group as usize] & DIRTY != 0;
        let slot = self.index[group as usize];
        let charge_runs = self.charge_runs();
        let g = &mut self.groups[slot as usize];
        if dirty {
            g.reorganise(charge_runs, &mut self.stats);
        }
        g.unaccount(&mut self.stats);
        let table = self.drop_resident(group);
        if !dirty {
            self.counters.clean_evictions += 1;
            return Ok(());
        }
        self.counters.dirty_evictions += 1;
        debug_assert!(table.encoded_bytes() <= MAX_GROUP_BYTES);
        let fslot = match self.flash_index[group as usize] {
            NONE => match self.flash_free.pop() {
                Some(s) => s,
                None => {
                    self.flash_groups.push(Group::default());
                    (self.flash_groups.len() - 1) as u32
                }
            },
            s => s,
        };
        // The pages hold the group's encoding (when a page store keeps their bytes).
        let mut bytes = Vec::new();
        if flash.has_sink() {
            table.encode(&self.codec, &mut bytes);
        }
        let page = self.layout.page_size as usize;
        debug_assert!(bytes.len() <= self.pages_per_group as usize * page);
        self.flash_groups[fslot as usize] = table;
        self.flash_index[group as usize] = fslot;
        if let Backing::Flash(store) = &mut self.backing {
            for j in 0..self.pages_per_group {
                let part = bytes.chunks(page).nth(j as usize).unwrap_or(&[]);
                store.write(group * self.pages_per_group + j, flash, |buf| {
                    buf.extend_from_slice(part)
                })?;
            }
        }
        Ok(())
    }

    /// Forgets the flash copy of a group that maps nothing any more.
    fn forget_flash_copy(&mut self, group: u32) {
        if let Some(slot) = self.flash_index.get_mut(group as usize) {
            if *slot != NONE {
                self.flash_groups[*slot as usize] = Group::default();
                self.flash_free.push(*slot);
                *slot = NONE;
            }
        }
    }

    /// The physical page of a predicted position.
    #[inline]
    fn page_of(&self, predicted: u32) -> Ppn {
        match &self.stripe_order {
            None => predicted,
            Some(order) => order.page(predicted as u64),
        }
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

    fn remember(&mut self, flash: &Flash, p: Ppn) {
        let cap = self.cfg.oob_cache_pages as usize;
        if cap == 0 {
            return;
        }
        if let Some(i) = self.oob_cache.iter().position(|&(q, _)| q == p) {
            self.oob_cache.remove(i);
        } else if self.oob_cache.len() == cap {
            self.oob_cache.remove(0);
        }
        self.oob_cache
            .push((p, flash.erase_count(flash.block_of(p))));
    }

    /// Where `lpa` is, if a cached OOB area of the run of `p` lists it. An area cached
    /// before its block was erased is stale and ignored.
    fn cached_location(&self, flash: &Flash, lpa: u32, p: Ppn) -> Option<Ppn> {
        let block = flash.block_of(p);
        for &(q, erases) in self.oob_cache.iter().rev() {
            if flash.block_of(q) != block
                || q.abs_diff(p) > self.window
                || flash.erase_count(block) != erases
            {
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
            self.remember(flash, q);
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
        let Some((seg, _)) = self.find_within_budget(lpa, flash)? else {
            return Ok(None);
        };
        let p = self.page_of(seg.predict((lpa % GROUP_PAGES) as u8));
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
        // Runs: pages consecutive in one block (what each page's OOB window can see), and in
        // stripe placement consecutive in stripe order too (within one chunk), bounded in
        // the coordinates segments predict: physical pages, or stripe positions.
        self.runs.clear();
        let coord = |ppn: Ppn| match &self.stripe_order {
            None => ppn,
            Some(order) => order.position(ppn) as u32,
        };
        let mut a = 0;
        while a < written.len() {
            let block = flash.block_of(written[a].ppn);
            let mut b = a + 1;
            while b < written.len()
                && written[b].ppn == written[b - 1].ppn + 1
                && flash.block_of(written[b].ppn) == block
                && coord(written[b].ppn) == coord(written[b - 1].ppn) + 1
            {
                b += 1;
            }
            let run = (coord(written[a].ppn), coord(written[b - 1].ppn));
            self.runs.extend(std::iter::repeat_n(run, b - a));
            a = b;
        }
        let max_levels = self.cfg.max_levels as usize;
        let charge_runs = self.charge_runs();
        let mut i = 0;
        while i < written.len() {
            let group = written[i].lpa / GROUP_PAGES;
            let mut j = i;
            while j < written.len() && written[j].lpa / GROUP_PAGES == group {
                j += 1;
            }
            self.points.clear();
            for (w, &(run_lo, run_hi)) in written[i..j].iter().zip(&self.runs[i..j]) {
                self.points.push(Point {
                    x: (w.lpa % GROUP_PAGES) as u8,
                    y: match &self.stripe_order {
                        None => w.ppn,
                        Some(order) => order.position(w.ppn) as u32,
                    },
                    run_lo,
                    run_hi,
                });
            }
            self.learned.clear();
            self.learner.learn(&self.points, &mut self.learned);
            self.counters.learned_segments += self.learned.len() as u64;
            self.counters.learned_points += (j - i) as u64;
            let slot = self.table_for_update(group);
            let table = &mut self.groups[slot as usize];
            table.insert(&self.learned, &mut self.stats);
            if table.crowded(max_levels) {
                table.reorganise(charge_runs, &mut self.stats);
                self.counters.crowded_compactions += 1;
            }
            i = j;
        }
        if let Some(t) = started {
            self.counters.learn_ns += t.elapsed().as_nanos() as u64;
        }
    }

    /// Coordinated GC: GC relocated valid pages (each victim's in logical order, as a batch
    /// of the GC block); relearn them on top of their groups before any lookup. A page of
    /// the batch being written that GC moved before it was learned is learned with it.
    fn apply_moves(&mut self, flash: &Flash) {
        while self.backing.has_moves() {
            self.moves_applied += 1;
            let moves = self.backing.alloc().take_moves();
            let mut relearn = std::mem::take(&mut self.gc_moved);
            let mut start = 0;
            for (i, m) in moves.iter().enumerate() {
                let batch_begins = i == 0
                    || flash.block_of(m.from) != flash.block_of(moves[i - 1].from)
                    || m.to != moves[i - 1].to + 1
                    || flash.block_of(m.to) != flash.block_of(moves[i - 1].to);
                if batch_begins && i > start {
                    self.relearn(&moves[start..i], &mut relearn, flash);
                    start = i;
                }
                self.mark_programmed(flash, m.to, batch_begins);
            }
            self.relearn(&moves[start..], &mut relearn, flash);
            self.gc_moved = relearn;
            self.backing.alloc().recycle_moves(moves);
        }
    }

    /// Relearns one batch of relocated pages (sorted by logical address).
    fn relearn(&mut self, moves: &[Move], scratch: &mut Vec<Written>, flash: &Flash) {
        scratch.clear();
        for m in moves {
            match self.pending.binary_search_by_key(&m.key, |w| w.lpa) {
                Ok(i) if self.pending[i].ppn == m.from => self.pending[i].ppn = m.to,
                _ => scratch.push(Written {
                    lpa: m.key,
                    ppn: m.to,
                }),
            }
        }
        let before = self.counters.learned_segments;
        self.learn(scratch, flash);
        self.counters.gc_learned_segments += self.counters.learned_segments - before;
    }

    /// Records the program of `ppn`: a fresh block forgets its previous batch marks, and
    /// the first page of a batch in a block is marked.
    fn mark_programmed(&mut self, flash: &Flash, ppn: Ppn, batch_begins: bool) {
        if flash.page_offset(ppn) == 0 {
            let first = ppn as usize;
            let ppb = self.layout.pages_per_block as usize;
            if first.is_multiple_of(64) && ppb.is_multiple_of(64) {
                self.batch_start[first / 64..(first + ppb) / 64].fill(0);
            } else {
                for p in first..first + ppb {
                    self.batch_start[p / 64] &= !(1u64 << (p % 64));
                }
            }
        }
        if batch_begins {
            set_bit(&mut self.batch_start, ppn);
        }
    }

    /// Compacts and promotes every group in DRAM.
    fn compact_all(&mut self) {
        let charge_runs = self.charge_runs();
        for g in &mut self.groups {
            if !g.is_empty() {
                g.reorganise(charge_runs, &mut self.stats);
            }
        }
        self.counters.compactions += 1;
    }

    /// Programs a batch sorted by logical address.
    fn program_batch(&mut self, flash: &mut Flash) -> Result<()> {
        let batch = std::mem::take(&mut self.batch);
        let result = self.program_sorted(&batch, flash);
        self.batch = batch;
        result?;
        let written = self.batch.len() as u64 * self.layout.page_size as u64;
        self.bytes_since_compaction += written;
        let interval = self.cfg.compaction_interval_bytes;
        if interval > 0 && self.bytes_since_compaction >= interval {
            self.bytes_since_compaction = 0;
            self.compact_all();
        }
        Ok(())
    }

    fn program_sorted(&mut self, batch: &[(u32, u64)], flash: &mut Flash) -> Result<()> {
        // Invalidate the old copies first, so that GC triggered by this batch sees them.
        for &(lpa, _) in batch {
            if let Some(old) = self.locate_for_update(flash, lpa)? {
                flash.invalidate(old)?;
            }
        }
        for &(lpa, seq) in batch {
            let ppn = self.backing.host_page(flash)?;
            self.apply_moves(flash);
            let new_run = match self.pending.last() {
                None => true,
                Some(w) => w.ppn + 1 != ppn || flash.block_of(w.ppn) != flash.block_of(ppn),
            };
            // Block placement learns a run as soon as it ends; stripe placement learns the
            // whole batch at the end (its runs are in stripe order, across units).
            if new_run && self.stripe_order.is_none() {
                self.learn_pending(flash);
            }
            self.mark_programmed(flash, ppn, new_run);
            flash.program(ppn, Oob { lpa, seq }, &[], Cause::Host)?;
            self.pending.push(Written { lpa, ppn });
        }
        self.learn_pending(flash);
        self.fit_budget(flash)
    }
}

impl Ftl for LeaFtl {
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        let started = self.cfg.cpu_timing.then(Instant::now);
        let found = if self.cached() {
            let translation = |f: &Flash| {
                f.stats.reads[Cause::Translation as usize]
                    + f.stats.programs[Cause::Translation as usize]
            };
            let before = translation(flash);
            let found = self.find_within_budget(lpa, flash)?;
            if translation(flash) != before {
                // A miss: the data read waits for the group's translation read and for
                // the write-back of the groups it pushes out.
                flash.chain();
            }
            found
        } else {
            self.find(lpa, flash)?
        };
        if let Some(t) = started {
            self.counters.lookup_ns += t.elapsed().as_nanos() as u64;
        }
        let Some((seg, level)) = found else {
            return Ok(None);
        };
        let x = (lpa % GROUP_PAGES) as u8;
        let p = self.page_of(seg.predict(x));
        let c = &mut self.counters;
        c.lookups += 1;
        c.levels[level.min(LEVEL_BUCKETS)] += 1;
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
        if flash.oob(p).lpa == lpa {
            let oob = flash.read(p, Cause::Host)?;
            self.remember(flash, p);
            return Ok(Some(oob));
        }
        self.counters.wrong_predictions += 1;
        self.counters.mispredictions += 1;
        let at = self.search(flash, lpa, p)?;
        flash.chain();
        Ok(Some(flash.read(at, Cause::Host)?))
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        self.batch.clear();
        self.batch.push((lpa, seq));
        self.program_batch(flash)
    }

    fn write_batch(&mut self, pages: &[(u32, u64)], flash: &mut Flash) -> Result<()> {
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

    #[inline]
    fn idle(&mut self, flash: &mut Flash) -> Result<()> {
        match &mut self.backing {
            Backing::Dram(a) => a.idle_gc(flash)?,
            Backing::Flash(s) => s.idle_gc(flash)?,
        }
        self.apply_moves(flash);
        Ok(())
    }

    fn background_gc(&self) -> bool {
        match &self.backing {
            Backing::Dram(a) => a.background_gc(),
            Backing::Flash(s) => s.alloc.background_gc(),
        }
    }

    fn slc_cache(&self) -> bool {
        match &self.backing {
            Backing::Dram(a) => a.has_slc_cache(),
            Backing::Flash(s) => s.alloc.has_slc_cache(),
        }
    }

    fn faults(&self) -> bool {
        match &self.backing {
            Backing::Dram(a) => a.has_faults(),
            Backing::Flash(s) => s.alloc.has_faults(),
        }
    }

    fn reset_counters(&mut self) {
        self.counters = Counters {
            levels: vec![0; LEVEL_BUCKETS + 1],
            ..Counters::default()
        };
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let Some(old) = self.locate_for_update(flash, lpa)? else {
            return Ok(());
        };
        flash.invalidate(old)?;
        let group = lpa / GROUP_PAGES;
        // Every segment owning the page gives it up, the flash copy's included.
        let resident = self.index[group as usize] != NONE;
        if (!resident || self.flags[group as usize] & PARTIAL != 0) && self.on_flash(group) {
            self.load(group, flash)?;
        }
        let slot = self.table_for_update(group);
        let table = &mut self.groups[slot as usize];
        table.remove_offset((lpa % GROUP_PAGES) as u8, &mut self.stats);
        if table.is_empty() {
            self.drop_resident(group);
            self.forget_flash_copy(group);
        }
        self.fit_budget(flash)
    }

    /// LeaFTL relearns its segments from the recovered mapping, as it would from the
    /// pages' OOB (each page's logical address): the current pages, sorted by logical
    /// address, are learned with the configured error bound into fresh groups, a run being
    /// pages consecutive in one block in both orders (what a batch was), and each page's OOB
    /// window is bounded by its run (the batches written before the crash are not known, so
    /// every other page is a batch of its own). The allocator is rebuilt; translation pages
    /// of groups evicted before the crash are dropped (their groups are relearned) and,
    /// under a DRAM budget, the groups that do not fit are evicted again.
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        crate::device::recovery::revalidate_live(found, flash)?;
        match &mut self.backing {
            Backing::Dram(a) => a.recover(flash)?,
            Backing::Flash(s) => s.recover(&vec![NONE; s.pages() as usize], flash)?,
        }
        let written: Vec<Written> = found
            .live
            .iter()
            .enumerate()
            .filter(|&(_, &ppn)| ppn != NONE)
            .map(|(lpa, &ppn)| Written {
                lpa: lpa as u32,
                ppn,
            })
            .collect();
        self.batch_start.fill(0);
        for block in 0..self.layout.total_blocks {
            let first = flash.first_page(block);
            for p in first..first + self.layout.pages_per_block {
                if flash.is_programmed(p) {
                    set_bit(&mut self.batch_start, p);
                }
            }
        }
        for pair in written.windows(2) {
            let (a, b) = (pair[0].ppn, pair[1].ppn);
            if b == a + 1 && flash.block_of(a) == flash.block_of(b) {
                self.batch_start[(b >> 6) as usize] &= !(1u64 << (b & 63));
            }
        }
        self.oob_cache.clear();
        self.learn(&written, flash);
        self.compact_all();
        self.fit_budget(flash)
    }

    fn finish(&mut self, _flash: &mut Flash) -> Result<()> {
        // The reference compacts every group at the end of a run.
        self.compact_all();
        Ok(())
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        let s = &self.stats;
        out.push(("segments", s.single * 5 + s.multi * 8));
        out.push(("crb", self.crb_bytes()));
        out.push(("group_directory", self.resident_groups() * 4));
        self.backing.memory(out);
        // Each cached OOB area: its page address and the neighbours' logical addresses.
        let oob_entry = 4 + (self.layout.oob_size as u64 - OOB_HEADER_BYTES);
        out.push(("oob_cache", self.cfg.oob_cache_pages as u64 * oob_entry));
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        let c = &self.counters;
        let s = &self.stats;
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        out.push(("mapping_table_bytes", self.mapping_table_bytes() as f64));
        out.push(("segments", s.segments() as f64));
        out.push(("segments_single_point", s.single as f64));
        out.push(("segments_accurate_consecutive", s.kinds[0] as f64));
        out.push(("segments_accurate_irregular", s.kinds[1] as f64));
        out.push(("segments_approximate_consecutive", s.kinds[2] as f64));
        out.push(("segments_approximate_irregular", s.kinds[3] as f64));
        out.push(("crb_entries", s.crb_entries as f64));
        out.push(("crb_run_boundaries", s.crb_runs as f64));
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
        out.push(("crowded_compactions", c.crowded_compactions as f64));
        if self.cached() {
            out.push(("group_loads", c.group_loads as f64));
            out.push(("group_merges", c.group_merges as f64));
            out.push(("dirty_evictions", c.dirty_evictions as f64));
            out.push(("clean_evictions", c.clean_evictions as f64));
            out.push(("partial_groups", c.partial_groups as f64));
        }
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
