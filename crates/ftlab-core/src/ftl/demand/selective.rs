//! Selective mapping-table loading for open-channel SSDs (Gijun Oh and Sungyong Ahn,
//! IJASC 10(1), 2021; the pblk-trans code of OSLAB, Pusan National University; FTL-algorithms
//! spec section 12.2).
//!
//! pblk's page-level table is split into mapping blocks of `mapping_block_bytes` (64 KiB:
//! 16 pages of entries) stored on flash. A global directory holds, per mapping block, its
//! id, hotness, location and cache slot (40 bytes an entry, as the paper counts it); a
//! cache of whole mapping blocks lives in host memory within the DRAM budget. A miss loads
//! the block into a free slot; with none free, the coldest cached block is evicted first,
//! written back only if it changed. Hotness follows pblk-trans: a bonus on load
//! (`load_bonus`, 1000), and per translation an increment by what the host says the page
//! is, as pblk-trans's update thread adds them (FTL-algorithms spec section 12.2): when the
//! host declares its journal (`hot_ranges`) and hints are on, `hinted_increment` (5) for a
//! journal page and `data_increment` (20) for any other (data), else `access_increment` (1:
//! an untyped page); plus `read_increment` or `write_increment` (0 by default; another
//! version of pblk-trans's calculation adds 50 and 10, with 500 for journal and file-system
//! metadata pages and 10 for data); every `decay_every_requests` host requests each cached
//! block loses max(hotness / 1000, 1) (pblk-trans decays every 250 ms; counting requests
//! keeps mapping-only and timed runs identical); and at eviction a block's hotness counts
//! one point less per `age_every_requests` requests since its last translation (pblk-trans
//! ages by half the milliseconds since the last access), so the victim is the block of
//! least `hotness - idle requests / age_every_requests`. An evicted block's hotness is
//! forgotten. `hints = false` types nothing (the paper's "no journal separation"): hot
//! ranges are then only counted.
//!
//! A mapping block is read and written as its pages, one operation each
//! (`mapping_block_io = "pages"`), or as one vector command that takes one page's time
//! (`"command"`: a device whose cost is per command, as the paper's emulator is; the
//! pages are still read and programmed, and counted, one by one).
//!
//! A dirty victim is written back in the background (`background_writeback`, as
//! pblk-trans's evict thread does): its programs take their dies' time, but the request
//! whose miss evicted it waits only for the load.
//!
//! Open-channel geometry: a parallel unit (PU) is a plane, a chunk is a block, a line is
//! the chunks of one index across the PUs. A mapping block's pages are written
//! line-striped, one per PU in turn (the allocator's translation stream), so that loading
//! one reads its pages from different PUs in parallel and writing one programs them in
//! parallel. The directory's location of a block is the (line, offset) of its first page
//! in stripe order; as GC here reclaims chunks per PU (not whole lines as pblk does), a
//! relocated page can leave its stripe, so the translation store also keeps each page's
//! address.

use crate::device::geometry::Layout;
use crate::device::nand::{Flash, Oob, Ppn, NONE};
use crate::error::{Error, Result};
use crate::ftl::demand::{self, read_data, settle, CachesEntries, OnFlashTable};
use crate::ftl::kit::alloc::Move;
use crate::ftl::kit::mapcache::IndexedHeap;
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use crate::request::Op;
use crate::units;
use serde::{Deserialize, Serialize};

/// A byte range `[start, end)` of the logical space.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ByteRange(
    #[serde(with = "units::bytes")] pub u64,
    #[serde(with = "units::bytes")] pub u64,
);

/// The `[selective]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelectiveConfig {
    /// Bytes of a mapping block (a whole number of pages).
    #[serde(with = "units::bytes")]
    pub mapping_block_bytes: u64,
    /// Hotness given to a block when it is loaded.
    pub load_bonus: u64,
    /// Hotness added per translation of an untyped logical page (no hot range declared,
    /// or hints off).
    pub access_increment: u64,
    /// Hotness added per translation of a data page: outside the hot ranges, when the host
    /// declares some and hints are on.
    pub data_increment: u64,
    /// Hotness added per translation of a logical page inside a hot range (hints on).
    pub hinted_increment: u64,
    /// Hotness added per translation for a read / for a write or trim.
    pub read_increment: u64,
    pub write_increment: u64,
    /// Host requests between two hotness decays.
    pub decay_every_requests: u64,
    /// Idle host requests that cost a block one point of hotness at eviction (0: no aging).
    pub age_every_requests: u64,
    /// Byte ranges the host declares hot, as `[[start, end], ...]`.
    pub hot_ranges: Vec<ByteRange>,
    /// Whether hot ranges are honoured (without, they are only counted).
    pub hints: bool,
    /// DRAM bytes of a directory entry.
    pub directory_entry_bytes: u64,
    /// Write-backs run in the background, as pblk-trans's evict thread does them: the
    /// request whose miss evicts waits only for the load.
    pub background_writeback: bool,
    /// How a mapping block is read and written: `"pages"`, each of its pages its own
    /// operation, striped over the parallel units (a device whose dies do each page's
    /// work); `"command"`, one vector command carrying its pages, which takes one
    /// command's time (a device whose cost is per command: the paper's emulator).
    pub mapping_block_io: MappingBlockIo,
}

/// How a mapping block's pages reach the device ([`SelectiveConfig::mapping_block_io`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MappingBlockIo {
    /// One operation per page, striped over the parallel units: a load reads them in
    /// parallel (one page time of latency), but every page takes its unit's time.
    #[default]
    Pages,
    /// One vector command: the pages are still read and programmed where the allocator
    /// places them (striped), but the block takes the time of one page's operation
    /// ([`crate::device::nand::Flash::begin_command`]).
    Command,
}

impl Default for SelectiveConfig {
    fn default() -> Self {
        SelectiveConfig {
            mapping_block_bytes: 64 << 10,
            load_bonus: 1000,
            access_increment: 1,
            data_increment: 20,
            hinted_increment: 5,
            read_increment: 0,
            write_increment: 0,
            decay_every_requests: 1000,
            age_every_requests: 8,
            hot_ranges: Vec::new(),
            hints: true,
            directory_entry_bytes: 40,
            background_writeback: true,
            mapping_block_io: MappingBlockIo::Pages,
        }
    }
}

pub struct Selective {
    table: OnFlashTable,
    /// The host-memory image of every cached mapping block.
    view: Vec<Ppn>,
    cached: Vec<bool>,
    dirty: Vec<bool>,
    /// Per block: hotness, and the host request of its last translation.
    hotness: Vec<u64>,
    last_access: Vec<u64>,
    /// Cached blocks by `hotness x age_every_requests + last access` (the coldest first):
    /// ordering by it is ordering by aged hotness, whatever the current request.
    heap: IndexedHeap,
    slots: u32,
    block_bytes: u64,
    c: SelectiveConfig,
    /// Hot logical-page ranges `[start, end)` (counted even when hints are off).
    hot_pages: Vec<(u32, u32)>,
    hinted_blocks: u32,
    /// Host requests so far.
    now: u64,
    until_decay: u64,
    decays: u64,
    hinted_translations: u64,
    hinted_misses: u64,
}

impl Scheme for Selective {
    const NAME: &'static str = "selective";
    const DESCRIPTION: &'static str =
        "selective mapping-table loading (IJASC'21, pblk): 64 KiB mapping blocks cached by hotness, host hints";
    type Section = SelectiveConfig;
    const ADVISE: &'static str = r#"mapping_block_bytes = ["16KiB", "64KiB"]"#;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c = Self::section(cfg)?;
        let page = layout.page_size as u64;
        if c.mapping_block_bytes < page || !c.mapping_block_bytes.is_multiple_of(page) {
            return Err(Error::config(
                "selective.mapping_block_bytes",
                format!(
                    "{} is not a whole number of {page}-byte pages",
                    c.mapping_block_bytes
                ),
            ));
        }
        if c.decay_every_requests == 0 {
            return Err(Error::config(
                "selective.decay_every_requests",
                "must be at least 1",
            ));
        }
        let block_pages = (c.mapping_block_bytes / page) as u32;
        let mut table = OnFlashTable::new(cfg, layout, block_pages)?;
        table.set_background_writeback(c.background_writeback);
        table.set_unit_command(c.mapping_block_io == MappingBlockIo::Command);
        let blocks = table.units();
        let budget = cfg.dram.budget(layout);
        let slots = if budget == 0 {
            blocks
        } else {
            let n = (budget / c.mapping_block_bytes).min(blocks as u64);
            if n == 0 {
                return Err(Error::config(
                    cfg.dram.budget_key(),
                    format!(
                        "{} bytes cannot hold a single {}-byte mapping block (selective.mapping_block_bytes)",
                        budget, c.mapping_block_bytes
                    ),
                ));
            }
            n as u32
        };
        let logical = layout.logical_bytes();
        let mut hot_pages = Vec::new();
        let mut hinted = vec![false; blocks as usize];
        for (i, ByteRange(start, end)) in c.hot_ranges.iter().enumerate() {
            if start >= end || *end > logical {
                return Err(Error::config(
                    "selective.hot_ranges",
                    format!(
                        "range #{} [{start}, {end}) is empty or beyond the {logical}-byte logical space",
                        i + 1
                    ),
                ));
            }
            let (first, last) = ((start / page) as u32, (end.div_ceil(page)) as u32);
            hot_pages.push((first, last));
            for b in table.unit_of(first)..=table.unit_of(last - 1) {
                hinted[b as usize] = true;
            }
        }
        Ok(Selective {
            view: vec![NONE; layout.logical_pages as usize],
            cached: vec![false; blocks as usize],
            dirty: vec![false; blocks as usize],
            hotness: vec![0; blocks as usize],
            last_access: vec![0; blocks as usize],
            heap: IndexedHeap::new(blocks as usize),
            slots,
            block_bytes: c.mapping_block_bytes,
            hot_pages,
            hinted_blocks: hinted.iter().filter(|&&h| h).count() as u32,
            now: 0,
            until_decay: c.decay_every_requests,
            decays: 0,
            hinted_translations: 0,
            hinted_misses: 0,
            c,
            table,
        })
    }
}

impl Selective {
    #[inline]
    fn key(&self, block: u32) -> u64 {
        let b = block as usize;
        self.hotness[b] * self.c.age_every_requests.max(1)
            + if self.c.age_every_requests == 0 {
                0
            } else {
                self.last_access[b]
            }
    }

    /// The hotness a translation of `lpa` adds, and whether `lpa` is in a hot range.
    #[inline]
    fn increment(&self, lpa: u32, op: Op) -> (u64, bool) {
        let hinted = self.hot_pages.iter().any(|&(s, e)| lpa >= s && lpa < e);
        let typed = self.c.hints && !self.hot_pages.is_empty();
        let add = (match (typed, hinted) {
            (false, _) => self.c.access_increment,
            (true, true) => self.c.hinted_increment,
            (true, false) => self.c.data_increment,
        }) + if op == Op::Read {
            self.c.read_increment
        } else {
            self.c.write_increment
        };
        (add, hinted)
    }

    #[inline]
    fn translate(&mut self, lpa: u32, op: Op, flash: &mut Flash) -> Result<Ppn> {
        self.table.stats.lookups += 1;
        let block = self.table.unit_of(lpa);
        let (add, hinted) = self.increment(lpa, op);
        self.hinted_translations += hinted as u64;
        if self.cached[block as usize] {
            self.table.stats.hits += 1;
        } else {
            self.hinted_misses += hinted as u64;
            self.load(block, flash)?;
        }
        self.hotness[block as usize] += add;
        self.last_access[block as usize] = self.now;
        let key = self.key(block);
        self.heap.set(block, key);
        Ok(self.view[lpa as usize])
    }

    fn load(&mut self, block: u32, flash: &mut Flash) -> Result<()> {
        let t0 = self.table.miss_started(flash);
        if self.heap.len() as u32 == self.slots {
            self.evict(flash)?;
        }
        self.table.fetch(block, flash)?;
        let range = self.table.unit_range(block);
        self.view[range.start as usize..range.end as usize]
            .copy_from_slice(self.table.stored_unit(block));
        self.cached[block as usize] = true;
        self.hotness[block as usize] = self.c.load_bonus;
        self.last_access[block as usize] = self.now;
        let key = self.key(block);
        self.heap.push(block, key);
        self.table.miss_ended(flash, t0);
        Ok(())
    }

    /// Evicts the coldest cached block, writing it back if it changed.
    fn evict(&mut self, flash: &mut Flash) -> Result<()> {
        let victim = self.heap.min().expect("a full cache has a victim");
        self.heap.remove(victim);
        self.cached[victim as usize] = false;
        self.hotness[victim as usize] = 0;
        if self.dirty[victim as usize] {
            self.dirty[victim as usize] = false;
            self.table.stats.dirty_evictions += 1;
            let view = &self.view;
            self.table
                .write_back(victim, false, flash, |entries, base| {
                    let s = base as usize;
                    entries.copy_from_slice(&view[s..s + entries.len()]);
                })?;
        } else {
            self.table.stats.clean_evictions += 1;
        }
        settle(self, flash)
    }

    #[inline]
    fn set(&mut self, lpa: u32, ppn: Ppn) {
        self.view[lpa as usize] = ppn;
        self.dirty[self.table.unit_of(lpa) as usize] = true;
    }

    /// Periodic decay: every cached block loses max(hotness / 1000, 1).
    fn decay(&mut self) {
        self.decays += 1;
        let Selective {
            heap,
            hotness,
            last_access,
            c,
            ..
        } = self;
        let age = c.age_every_requests;
        heap.update_all(|block, _| {
            let b = block as usize;
            let h = &mut hotness[b];
            *h = h.saturating_sub((*h / 1000).max(1));
            *h * age.max(1) + if age == 0 { 0 } else { last_access[b] }
        });
    }
}

impl Ftl for Selective {
    /// The cache starts empty; the table on flash is rebuilt ([`OnFlashTable::recover`]).
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        self.table.recover(found, flash)
    }

    #[inline]
    fn begin_request(&mut self, _first_lpa: u32, _pages: u32, _op: Op) {
        self.now += 1;
        self.until_decay -= 1;
        if self.until_decay == 0 {
            self.until_decay = self.c.decay_every_requests;
            self.decay();
        }
    }

    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        let ppn = self.translate(lpa, Op::Read, flash)?;
        read_data(ppn, flash)
    }

    #[inline]
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let old = self.translate(lpa, Op::Write, flash)?;
        let ppn = self.table.program_data(lpa, seq, old, flash)?;
        self.set(lpa, ppn);
        settle(self, flash)
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
        self.hinted_translations = 0;
        self.hinted_misses = 0;
        self.decays = 0;
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let old = self.translate(lpa, Op::Trim, flash)?;
        if old != NONE {
            flash.invalidate(old)?;
            self.set(lpa, NONE);
        }
        Ok(())
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        out.push((
            "directory",
            self.table.units() as u64 * self.c.directory_entry_bytes,
        ));
        self.table.store.alloc.memory(out);
        out.push(("mapping_cache", self.heap.len() as u64 * self.block_bytes));
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        self.table.counters(out);
        out.push(("mapping_blocks", self.table.units() as f64));
        out.push(("cache_slots", self.slots as f64));
        out.push(("hot_range_mapping_blocks", self.hinted_blocks as f64));
        out.push(("hot_range_translations", self.hinted_translations as f64));
        out.push(("hot_range_misses", self.hinted_misses as f64));
        out.push(("hotness_decays", self.decays as f64));
    }
}

impl CachesEntries for Selective {
    fn table(&mut self) -> &mut OnFlashTable {
        &mut self.table
    }

    /// Cached mapping blocks take the move in place.
    fn move_cached(&mut self, m: &Move) -> bool {
        if !self.cached[self.table.unit_of(m.key) as usize] {
            return false;
        }
        debug_assert_eq!(self.view[m.key as usize], m.from);
        self.set(m.key, m.to);
        true
    }
}
