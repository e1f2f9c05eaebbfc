//! DFTL: demand-based selective caching of page-level mappings (Gupta, Kim and Urgaonkar,
//! ASPLOS 2009; FTL-algorithms spec section 5).
//!
//! The page-level table lives on flash in translation pages, located by the global
//! translation directory; the cached mapping table (CMT) holds single entries (logical
//! page, physical page, dirty bit) within the DRAM budget, replaced by segmented LRU. A
//! miss reads the entry's translation page (writes too: the old location must be
//! invalidated). Evicting a dirty entry writes back, in one read-modify-write of its
//! translation page, every dirty entry of that page (batch update; `batch_writeback =
//! false` writes back the victim alone, as the 2009 code). GC updates cached entries of the
//! pages it moves in place and marks them dirty (the reference code forgot the dirty bit:
//! spec section 15), and records the moves of uncached entries with one read-modify-write
//! per translation page.
//!
//! DRAM: the directory (one physical address per translation page), the CMT at
//! (logical + physical address bytes) per entry (8 bytes at 4-byte addresses, as the
//! papers count it; list pointers and the index are not counted), and the GC bookkeeping.

use crate::device::geometry::Layout;
use crate::device::nand::{Flash, Oob, Ppn};
use crate::error::Result;
use crate::ftl::demand::{
    self, entries_in_budget, move_cached_entry, read_entry, settle, trim_entry, write_entry,
    CachesEntries, CachesSingleEntries, OnFlashTable,
};
use crate::ftl::kit::alloc::Move;
use crate::ftl::kit::mapcache::{Links, List, Replacement, ReplacementKind, Slots, NIL};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use serde::{Deserialize, Serialize};

/// The `[dftl]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DftlConfig {
    /// CMT replacement: `slru` (segmented LRU, the paper's) or `lru`.
    pub replacement: ReplacementKind,
    /// Share of the CMT held by the protected segment of segmented LRU.
    pub protected_fraction: f64,
    /// Evicting a dirty entry writes back every dirty entry of its translation page (true)
    /// or the victim alone (false).
    pub batch_writeback: bool,
}

impl Default for DftlConfig {
    fn default() -> Self {
        DftlConfig {
            replacement: ReplacementKind::Slru,
            protected_fraction: 0.8,
            batch_writeback: true,
        }
    }
}

/// A cached mapping entry.
#[derive(Clone, Copy, Debug)]
struct Entry {
    lpa: u32,
    ppn: Ppn,
    dirty: bool,
}

pub struct Dftl {
    table: OnFlashTable,
    /// Cache slot of each logical page ([`NIL`]: not cached).
    slot_of: Vec<u32>,
    slots: Slots<Entry>,
    replacement: Replacement,
    /// Dirty slots of each translation page, for batch write-back.
    dirty_links: Links,
    dirty_of_page: Vec<List>,
    batch_writeback: bool,
    entry_bytes: u64,
}

impl Scheme for Dftl {
    const NAME: &'static str = "dftl";
    const DESCRIPTION: &'static str =
        "DFTL (ASPLOS'09): page table on flash, cached entries (segmented LRU), batch write-back";
    type Section = DftlConfig;
    const ADVISE: &'static str = r#"replacement = ["slru", "lru"]"#;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c = Self::section(cfg)?;
        if !(0.0..1.0).contains(&c.protected_fraction) {
            return Err(crate::Error::config(
                "dftl.protected_fraction",
                format!("{} is not a fraction in [0, 1)", c.protected_fraction),
            ));
        }
        let table = OnFlashTable::new(cfg, layout, 1)?;
        let entry_bytes = table.lpa_bytes + table.ppa_bytes;
        let capacity = entries_in_budget(
            &cfg.dram,
            layout,
            entry_bytes,
            layout.logical_pages,
            "mapping entry",
        )?;
        let n = capacity as usize;
        Ok(Dftl {
            slot_of: vec![NIL; layout.logical_pages as usize],
            slots: Slots::new(capacity),
            replacement: Replacement::new(c.replacement, n, c.protected_fraction),
            dirty_links: Links::new(0),
            dirty_of_page: vec![List::EMPTY; table.units() as usize],
            batch_writeback: c.batch_writeback,
            entry_bytes,
            table,
        })
    }
}

impl Dftl {
    /// Evicts the replacement victim, writing dirty entries back first.
    fn evict(&mut self, flash: &mut Flash) -> Result<()> {
        let victim = self
            .replacement
            .victim()
            .expect("a full cache has a victim");
        let lpa = self.slots[victim].lpa;
        let page = self.table.unit_of(lpa);
        if self.slots[victim].dirty {
            self.table.stats.dirty_evictions += 1;
            let Dftl {
                table,
                slots,
                dirty_links,
                dirty_of_page,
                batch_writeback,
                ..
            } = self;
            let list = &mut dirty_of_page[page as usize];
            table.write_back(page, true, flash, |entries, base| {
                if *batch_writeback {
                    let mut s = list.head;
                    while s != NIL {
                        let e = &mut slots[s];
                        entries[(e.lpa - base) as usize] = e.ppn;
                        e.dirty = false;
                        s = dirty_links.next(s);
                    }
                    *list = List::EMPTY;
                } else {
                    let e = &mut slots[victim];
                    entries[(lpa - base) as usize] = e.ppn;
                    e.dirty = false;
                    dirty_links.remove(list, victim);
                }
            })?;
        } else {
            self.table.stats.clean_evictions += 1;
        }
        self.replacement.remove(victim);
        self.slot_of[lpa as usize] = NIL;
        self.slots.release(victim);
        // The write-back may have triggered GC; the victim is uncached by now, so a move
        // of its page is recorded on flash.
        settle(self, flash)
    }
}

impl Ftl for Dftl {
    /// The cache starts empty; the table on flash is rebuilt ([`OnFlashTable::recover`]).
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        self.table.recover(found, flash)
    }

    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        read_entry(self, lpa, flash)
    }

    #[inline]
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        write_entry(self, lpa, seq, flash)
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
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        trim_entry(self, lpa, flash)
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        self.table.memory(out);
        out.push(("cmt", self.replacement.len() as u64 * self.entry_bytes));
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        self.table.counters(out);
        out.push(("cmt_capacity_entries", self.slots.capacity() as f64));
    }
}

impl CachesEntries for Dftl {
    fn table(&mut self) -> &mut OnFlashTable {
        &mut self.table
    }

    fn move_cached(&mut self, m: &Move) -> bool {
        move_cached_entry(self, m)
    }
}

impl CachesSingleEntries for Dftl {
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

    fn miss(&mut self, lpa: u32, flash: &mut Flash) -> Result<u32> {
        let t0 = self.table.miss_started(flash);
        if self.slots.is_full() {
            self.evict(flash)?;
        }
        self.table.fetch(self.table.unit_of(lpa), flash)?;
        let slot = self
            .slots
            .insert(Entry {
                lpa,
                ppn: self.table.stored(lpa),
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
