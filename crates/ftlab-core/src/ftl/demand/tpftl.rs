//! TPFTL: a translation-page-level caching FTL (Zhou, Wu, Huang, He, Xie and Zhou,
//! EuroSys 2015; FTL-algorithms spec section 7).
//!
//! The page-level table lives on flash as in DFTL, but the cache groups its entries by
//! translation page into TP nodes: a node costs 8 bytes, an entry (offset within the page
//! and physical address) 6 bytes at 4-byte addresses, so more entries fit a budget. Two
//! levels of LRU: nodes are ordered by page-level hotness (the mean of their entries'
//! last-access times; the coldest node is the victim node) and each node keeps its entries
//! in LRU order. Replacement is clean-first: the victim is the least recently used clean
//! entry of the coldest node, and only when the node holds nothing but dirty entries is
//! its least recent dirty entry evicted, after all of its dirty entries are written back
//! in one read-modify-write (batch update).
//!
//! Loading is workload-adaptive. Request-level prefetching: a miss inside a multi-page
//! request loads, with its one translation-page read, the rest of the request's extent
//! within that translation page. Selective prefetching: when the number of cached nodes
//! keeps falling (the node-count change reaches `-selective_threshold`; it is disabled again
//! at `+selective_threshold`, the counter restarting at each), a single-page miss loads as
//! many following entries as the entries cached consecutively before it. Prefetching is
//! capped by the space available: the free budget plus the entries of the coldest other
//! node, which is the only node evicted from for it (a later miss loads the rest). GC
//! updates cached entries in place (dirty) and batches the others per translation page,
//! as DFTL. Unlike the WiscSee code, selective prefetching is gated by its flag (spec
//! section 15).
//!
//! A scheme may build on this cache ([`Tpftl::with_model`]): a [`MissModel`] serves some
//! misses without reading the translation page and is told of every mapping change and
//! every rewrite of a translation page. LearnedFTL (crate `ftlab-learnedftl`) is TPFTL with
//! learned models, as its paper builds it; TPFTL itself runs with [`NoModel`].

use crate::device::geometry::Layout;
use crate::device::nand::{Flash, Oob, Ppn};
use crate::device::recovery::Found;
use crate::error::Result;
use crate::ftl::demand::{
    self, address_bytes, entries_in_budget, move_cached_entry, read_entry, settle, trim_entry,
    write_entry, CachesEntries, CachesSingleEntries, OnFlashTable,
};
use crate::ftl::kit::alloc::Move;
use crate::ftl::kit::mapcache::{IndexedHeap, Links, List, Slots, NIL};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use crate::request::Op;
use serde::{Deserialize, Serialize};

/// The `[tpftl]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TpftlConfig {
    /// Request-level prefetching on or off.
    pub request_prefetch: bool,
    /// Selective prefetching on or off.
    pub selective_prefetch: bool,
    /// Node-count change that enables (negative) or disables (positive) selective
    /// prefetching.
    pub selective_threshold: u32,
    /// DRAM bytes of a TP node.
    pub page_node_bytes: u64,
}

impl Default for TpftlConfig {
    fn default() -> Self {
        TpftlConfig {
            request_prefetch: true,
            selective_prefetch: true,
            selective_threshold: 3,
            page_node_bytes: 8,
        }
    }
}

/// What a scheme layered on TPFTL's cache adds to it: a way to know some uncached
/// mappings without reading their translation page (LearnedFTL's learned models). TPFTL
/// tells it of every change of a mapping and every rewrite of a translation page, and lets
/// it learn once each operation has settled, when every mapping is at hand.
pub trait MissModel: Send + 'static {
    /// DRAM bytes the model takes out of the budget; the cache gets the rest.
    fn dram_bytes(&self) -> u64 {
        0
    }
    /// The exact mapping of `lpa`, not cached, if the model knows it without a flash read.
    fn predict(&self, lpa: u32) -> Option<Ppn>;
    /// A miss was served by the model (`true`) or by reading the translation page.
    fn served(&mut self, _by_model: bool) {}
    /// `lpa`'s mapping changed (host write, trim, GC move): a prediction of it is void.
    fn changed(&mut self, lpa: u32);
    /// GC moved `lpa`'s page (told after [`Self::changed`]), its entry cached or not.
    fn moved(&mut self, _lpa: u32) {}
    /// Translation page `unit` was rewritten (a dirty eviction's write-back, GC's batch
    /// update, or the table rebuilt after a restart).
    fn rewritten(&mut self, unit: u32);
    /// After each operation: `current` gives any logical page's mapping (the cached entry,
    /// else the table on flash).
    fn settled(&mut self, _table: &OnFlashTable, _current: &dyn Fn(u32) -> Ppn) {}
    fn memory(&self, _out: &mut MemoryBreakdown) {}
    fn counters(&self, _out: &mut Vec<(&'static str, f64)>) {}
    fn reset_counters(&mut self) {}
}

/// TPFTL alone: no model, every miss reads its translation page.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoModel;

impl MissModel for NoModel {
    #[inline(always)]
    fn predict(&self, _lpa: u32) -> Option<Ppn> {
        None
    }
    #[inline(always)]
    fn changed(&mut self, _lpa: u32) {}
    #[inline(always)]
    fn rewritten(&mut self, _unit: u32) {}
}

/// A cached mapping entry.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Last access time.
    time: u64,
    lpa: u32,
    ppn: Ppn,
    dirty: bool,
}

pub struct Tpftl<M: MissModel = NoModel> {
    table: OnFlashTable,
    model: M,
    slot_of: Vec<u32>,
    slots: Slots<Entry>,
    /// Entry lists of the nodes (clean and dirty entries apart, each in LRU order: the
    /// least recently used clean entry is the clean list's tail).
    links: Links,
    clean: Vec<List>,
    dirty: Vec<List>,
    /// Sum of the entries' last access times, per node.
    time_sum: Vec<u64>,
    /// Cached nodes by page-level hotness (mean access time): the coldest first.
    nodes: IndexedHeap,
    clock: u64,
    entry_bytes: u64,
    node_bytes: u64,
    budget: u64,
    used_bytes: u64,
    request_prefetch: bool,
    selective_allowed: bool,
    selective_on: bool,
    threshold: i64,
    node_change: i64,
    /// Extent of the current request (logical pages), for request-level prefetching.
    request: (u32, u32),
}

impl Scheme for Tpftl {
    const NAME: &'static str = "tpftl";
    const DESCRIPTION: &'static str =
        "TPFTL (EuroSys'15): entries cached in translation-page nodes, two-level LRU, prefetching, clean-first";
    type Section = TpftlConfig;
    const ADVISE: &'static str = r#"selective_prefetch = [true, false]"#;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        Self::with_model(cfg, layout, &Self::section(cfg)?, NoModel)
    }
}

impl<M: MissModel> Tpftl<M> {
    /// TPFTL's cache with `model` under it, configured by `c`; the model's DRAM comes out of
    /// the budget first.
    pub fn with_model(
        cfg: &SchemeContext,
        layout: &Layout,
        c: &TpftlConfig,
        model: M,
    ) -> Result<Self> {
        if c.selective_threshold == 0 {
            return Err(crate::Error::config(
                "tpftl.selective_threshold",
                "must be at least 1",
            ));
        }
        let table = OnFlashTable::new(cfg, layout, 1)?;
        let entry_bytes = address_bytes(table.unit_entries() as u64) + table.ppa_bytes;
        let node_bytes = c.page_node_bytes;
        let budget = cfg.dram.budget(layout);
        let capacity = entries_in_budget(
            &cfg.dram,
            layout,
            entry_bytes + node_bytes,
            layout.logical_pages,
            "TP node with one entry",
        )?;
        let reserved = model.dram_bytes();
        let budget = if budget == 0 {
            0
        } else if budget < reserved + entry_bytes + node_bytes {
            return Err(crate::Error::config(
                cfg.dram.budget_key(),
                format!(
                    "{budget} bytes leave no room for a TP node with one entry ({} bytes) \
                     beside the model's {reserved} bytes",
                    entry_bytes + node_bytes
                ),
            ));
        } else {
            budget - reserved
        };
        // Entries the budget could hold if they all shared few nodes.
        let capacity = if budget == 0 {
            capacity
        } else {
            (budget / entry_bytes).min(layout.logical_pages) as u32
        };
        let units = table.units() as usize;
        Ok(Tpftl {
            slot_of: vec![NIL; layout.logical_pages as usize],
            slots: Slots::new(capacity),
            links: Links::new(0),
            clean: vec![List::EMPTY; units],
            dirty: vec![List::EMPTY; units],
            time_sum: vec![0; units],
            nodes: IndexedHeap::new(units),
            clock: 0,
            entry_bytes,
            node_bytes,
            budget: if budget == 0 { u64::MAX } else { budget },
            used_bytes: 0,
            request_prefetch: c.request_prefetch,
            selective_allowed: c.selective_prefetch,
            selective_on: false,
            threshold: c.selective_threshold as i64,
            node_change: 0,
            request: (0, 0),
            table,
            model,
        })
    }

    /// The table on flash (its counters, its allocator).
    pub fn table(&self) -> &OnFlashTable {
        &self.table
    }

    pub fn table_mut(&mut self) -> &mut OnFlashTable {
        &mut self.table
    }

    pub fn model(&self) -> &M {
        &self.model
    }

    /// Lets the model learn from the settled mappings.
    #[inline]
    fn settled(&mut self) {
        let Tpftl {
            model,
            table,
            slot_of,
            slots,
            ..
        } = self;
        model.settled(table, &|lpa| match slot_of[lpa as usize] {
            NIL => table.stored(lpa),
            s => slots[s].ppn,
        });
    }
    #[inline]
    fn entries(&self, node: u32) -> u32 {
        self.clean[node as usize].len + self.dirty[node as usize].len
    }

    #[inline]
    fn node_key(&self, node: u32) -> u64 {
        self.time_sum[node as usize] / self.entries(node).max(1) as u64
    }

    fn node_added(&mut self) {
        self.node_change += 1;
        if self.node_change >= self.threshold {
            self.selective_on = false;
            self.node_change = 0;
        }
    }

    fn node_removed(&mut self) {
        self.node_change -= 1;
        if self.node_change <= -self.threshold {
            self.selective_on = self.selective_allowed;
            self.node_change = 0;
        }
    }

    /// Entries to load from `lpa`'s translation page on a miss, `lpa` included.
    fn load_length(&self, lpa: u32) -> u32 {
        let node = self.table.unit_of(lpa);
        let page_end = self.table.unit_range(node).end;
        let (start, end) = self.request;
        if self.request_prefetch && lpa >= start && lpa < end && end - lpa > 1 {
            return end.min(page_end) - lpa;
        }
        if !self.selective_on {
            return 1;
        }
        let first = self.table.unit_range(node).start;
        let mut run = 1;
        let mut p = lpa;
        while p > first && self.slot_of[p as usize - 1] != NIL {
            run += 1;
            p -= 1;
        }
        run.min(page_end - lpa)
    }

    /// Frees room for one more entry of `node`. Prefetching (`must` false) evicts only from
    /// one victim node, chosen once (`victim`), and gives up when it is gone.
    fn make_room(
        &mut self,
        node: u32,
        victim: &mut u32,
        must: bool,
        flash: &mut Flash,
    ) -> Result<bool> {
        loop {
            let new_node = self.entries(node) == 0;
            let need = self.entry_bytes + if new_node { self.node_bytes } else { 0 };
            if self.used_bytes + need <= self.budget && !self.slots.is_full() {
                return Ok(true);
            }
            if *victim == NIL || !self.nodes.contains(*victim) {
                if *victim != NIL && !must {
                    return Ok(false);
                }
                *victim = match self.nodes.min_except(node) {
                    Some(v) => v,
                    None if must => node,
                    None => return Ok(false),
                };
            }
            self.evict_from(*victim, flash)?;
        }
    }

    fn insert(&mut self, lpa: u32) -> u32 {
        let node = self.table.unit_of(lpa);
        if self.entries(node) == 0 {
            self.used_bytes += self.node_bytes;
            self.node_added();
        }
        self.used_bytes += self.entry_bytes;
        self.clock += 1;
        let slot = self
            .slots
            .insert(Entry {
                time: self.clock,
                lpa,
                ppn: self.table.stored(lpa),
                dirty: false,
            })
            .expect("room was made");
        self.slot_of[lpa as usize] = slot;
        self.time_sum[node as usize] += self.clock;
        self.links.push_front(&mut self.clean[node as usize], slot);
        let key = self.node_key(node);
        if self.nodes.contains(node) {
            self.nodes.set(node, key);
        } else {
            self.nodes.push(node, key);
        }
        slot
    }

    /// Evicts one entry of `node`, clean first; a dirty victim means every entry of the
    /// node is dirty, and all are written back at once.
    fn evict_from(&mut self, node: u32, flash: &mut Flash) -> Result<()> {
        let n = node as usize;
        if self.clean[n].is_empty() {
            self.table.stats.dirty_evictions += 1;
            let Tpftl {
                table,
                links,
                clean,
                dirty,
                slots,
                ..
            } = self;
            let list = dirty[n];
            table.write_back(node, true, flash, |entries, base| {
                let mut s = list.head;
                while s != NIL {
                    let e = &mut slots[s];
                    entries[(e.lpa - base) as usize] = e.ppn;
                    e.dirty = false;
                    s = links.next(s);
                }
            })?;
            // All entries are clean now, in the same order.
            clean[n] = list;
            dirty[n] = List::EMPTY;
            self.model.rewritten(node);
        } else {
            self.table.stats.clean_evictions += 1;
        }
        let slot = self.clean[n].tail;
        self.links.remove(&mut self.clean[n], slot);
        let e = self.slots[slot];
        self.slot_of[e.lpa as usize] = NIL;
        self.time_sum[n] -= e.time;
        self.slots.release(slot);
        self.used_bytes -= self.entry_bytes;
        if self.entries(node) == 0 {
            self.nodes.remove(node);
            self.used_bytes -= self.node_bytes;
            self.node_removed();
        } else {
            let key = self.node_key(node);
            self.nodes.set(node, key);
        }
        settle(self, flash)
    }
}

impl<M: MissModel> Ftl for Tpftl<M> {
    /// The cache starts empty; the table on flash is rebuilt ([`OnFlashTable::recover`]),
    /// and the model learns it anew.
    fn recover(&mut self, found: &Found, flash: &mut Flash) -> Result<()> {
        self.table.recover(found, flash)?;
        for u in 0..self.table.units() {
            self.model.rewritten(u);
        }
        self.settled();
        Ok(())
    }

    #[inline]
    fn begin_request(&mut self, first_lpa: u32, pages: u32, _op: Op) {
        self.request = (first_lpa, first_lpa + pages);
    }

    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        let data = read_entry(self, lpa, flash)?;
        self.settled();
        Ok(data)
    }

    #[inline]
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        write_entry(self, lpa, seq, flash)?;
        self.model.changed(lpa);
        self.settled();
        Ok(())
    }

    /// A flush of the write buffer: each run of consecutive pages counts as one request
    /// for request-level prefetching.
    fn write_batch(&mut self, pages: &[(u32, u64)], flash: &mut Flash) -> Result<()> {
        let saved = self.request;
        let mut i = 0;
        while i < pages.len() {
            let mut j = i + 1;
            while j < pages.len() && pages[j].0 == pages[j - 1].0 + 1 {
                j += 1;
            }
            self.request = (pages[i].0, pages[j - 1].0 + 1);
            for &(lpa, seq) in &pages[i..j] {
                self.write(lpa, seq, flash)?;
            }
            i = j;
        }
        self.request = saved;
        Ok(())
    }

    #[inline]
    fn idle(&mut self, flash: &mut Flash) -> Result<()> {
        demand::idle(self, flash)?;
        self.settled();
        Ok(())
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
        self.model.reset_counters();
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        trim_entry(self, lpa, flash)?;
        self.model.changed(lpa);
        self.settled();
        Ok(())
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        self.table.memory(out);
        let entries = self.slots.len() as u64;
        out.push(("tp_nodes", self.nodes.len() as u64 * self.node_bytes));
        out.push(("cmt_entries", entries * self.entry_bytes));
        self.model.memory(out);
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        self.table.counters(out);
        out.push(("cached_tp_nodes", self.nodes.len() as f64));
        out.push(("selective_prefetch_on", self.selective_on as u8 as f64));
        self.model.counters(out);
    }
}

impl<M: MissModel> CachesEntries for Tpftl<M> {
    fn table(&mut self) -> &mut OnFlashTable {
        &mut self.table
    }

    /// A cached entry takes the move; the others are staged for the batch update, which
    /// rewrites their translation page.
    fn move_cached(&mut self, m: &Move) -> bool {
        self.model.changed(m.key);
        self.model.moved(m.key);
        let cached = move_cached_entry(self, m);
        if !cached {
            self.model.rewritten(self.table.unit_of(m.key));
        }
        cached
    }
}

impl<M: MissModel> CachesSingleEntries for Tpftl<M> {
    #[inline]
    fn cached_slot(&self, lpa: u32) -> u32 {
        self.slot_of[lpa as usize]
    }

    #[inline]
    fn slot_ppn(&mut self, slot: u32) -> &mut Ppn {
        &mut self.slots[slot].ppn
    }

    /// Moves an entry to the head of its list and refreshes its node's hotness.
    #[inline]
    fn touch(&mut self, slot: u32) {
        self.clock += 1;
        let entry = &mut self.slots[slot];
        let node = self.table.unit_of(entry.lpa);
        self.time_sum[node as usize] += self.clock - entry.time;
        entry.time = self.clock;
        let list = if entry.dirty {
            &mut self.dirty[node as usize]
        } else {
            &mut self.clean[node as usize]
        };
        self.links.move_to_front(list, slot);
        let key = self.node_key(node);
        self.nodes.set(node, key);
    }

    #[inline]
    fn mark_dirty(&mut self, slot: u32) {
        let entry = &mut self.slots[slot];
        if !entry.dirty {
            entry.dirty = true;
            let node = self.table.unit_of(entry.lpa) as usize;
            self.links.remove(&mut self.clean[node], slot);
            self.links.push_front(&mut self.dirty[node], slot);
        }
    }

    fn miss(&mut self, lpa: u32, flash: &mut Flash) -> Result<u32> {
        let t0 = self.table.miss_started(flash);
        let node = self.table.unit_of(lpa);
        if self.model.predict(lpa).is_some() {
            // Room first: the eviction's write-back may run GC, which may move `lpa`.
            let mut victim = NIL;
            self.make_room(node, &mut victim, true, flash)?;
            if let Some(ppn) = self.model.predict(lpa) {
                self.model.served(true);
                let slot = self.insert(lpa);
                debug_assert_eq!(self.slots[slot].ppn, ppn, "lpa {lpa}: a wrong prediction");
                self.table.miss_ended(flash, t0);
                return Ok(slot);
            }
        }
        self.model.served(false);
        let length = self.load_length(lpa);
        self.table.fetch(node, flash)?;
        // The missed entry first: it must fit, evicting from its own node if that is the
        // only one cached.
        let mut victim = NIL;
        self.make_room(node, &mut victim, true, flash)?;
        let slot = self.insert(lpa);
        if victim == node {
            victim = NIL; // prefetching never evicts from the node it loads
        }
        let mut loaded = 0;
        for next in lpa + 1..lpa + length {
            if self.slot_of[next as usize] != NIL {
                continue; // the cached entry is newer than the one on flash
            }
            if !self.make_room(node, &mut victim, false, flash)? {
                break;
            }
            self.insert(next);
            loaded += 1;
        }
        self.table.stats.prefetched_entries += loaded;
        self.table.miss_ended(flash, t0);
        Ok(slot)
    }
}
