//! The translation-page store: mapping state kept on flash in translation pages, with a
//! global translation directory (GTD) in DRAM giving each translation page's location.
//! Written once for every scheme that keeps its map on flash and caches part of it (DFTL,
//! S-FTL, TPFTL, selective mapping-table loading, LeaFTL's evicted groups).
//!
//! A scheme asks: read translation page `k`, or write a new version of it (the old one is
//! invalidated), both under [`Cause::Translation`]. The store allocates the pages from the
//! shared [`PageAllocator`]'s translation stream, so translation pages live in their own
//! blocks, spread round-robin over the parallel units, and are garbage-collected like
//! data: when GC relocates a translation page the store updates the directory itself; when
//! it relocates data pages the scheme takes the moves ([`TranslationStore::take_moves`])
//! and updates its map. What a translation page holds is the scheme's business; the store
//! tracks where it is. A translation page carries no logical page in its OOB (the
//! logical-page field is [`NONE`]) and its page number in the sequence field, which the
//! store checks on every read.
//!
//! A translation page that was never written holds no mapping: the directory says so, and
//! looking it up costs no flash read (a fresh device has no translation pages).

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob, Ppn, NONE};
use crate::error::{Error, Result};
use crate::ftl::kit::alloc::{Move, PageAllocator};
use crate::ftl::settings::SchemeContext;
use crate::ftl::MemoryBreakdown;

pub struct TranslationStore {
    pub alloc: PageAllocator,
    /// Location of each translation page ([`NONE`]: never written).
    gtd: Vec<Ppn>,
    /// Bytes of a directory entry (a physical page address).
    entry_bytes: u64,
}

impl TranslationStore {
    /// A store of `pages` translation pages over a fresh device. Fails, naming
    /// `ftl.over_provisioning`, when the spare area cannot hold them beside the open and
    /// reserved blocks.
    pub fn new(cfg: &SchemeContext, layout: &Layout, pages: u32) -> Result<Self> {
        let spare_blocks = layout.units as u64 * PageAllocator::spare_blocks_per_unit(true);
        let needed =
            layout.logical_pages + pages as u64 + spare_blocks * layout.pages_per_block as u64;
        if layout.physical_pages < needed {
            return Err(Error::config(
                "ftl.over_provisioning",
                format!(
                    "{} leaves {} spare pages; a scheme with its map on flash needs {} for its {pages} \
                     translation pages and 4 blocks per parallel unit (open host, GC and translation \
                     blocks, GC reserve)",
                    cfg.ftl.over_provisioning,
                    layout.physical_pages - layout.logical_pages,
                    needed - layout.logical_pages
                ),
            ));
        }
        Ok(TranslationStore {
            alloc: PageAllocator::new(cfg, layout, true),
            gtd: vec![NONE; pages as usize],
            entry_bytes: layout.ppa_entry_bytes(),
        })
    }

    /// After a restart: translation page `k` is at `at[k]` ([`NONE`]: never written);
    /// those pages are kept (revalidated) and the allocator rebuilt. The data pages must
    /// be revalidated first.
    pub fn recover(&mut self, at: &[Ppn], flash: &mut Flash) -> Result<()> {
        for (k, &ppn) in at.iter().enumerate() {
            if ppn != NONE {
                flash.revalidate(ppn)?;
            }
            self.gtd[k] = ppn;
        }
        self.alloc.recover(flash)
    }

    /// Number of translation pages.
    pub fn pages(&self) -> u32 {
        self.gtd.len() as u32
    }

    /// Where translation page `k` is, if it was ever written.
    #[inline]
    pub fn location(&self, k: u32) -> Option<Ppn> {
        let ppn = self.gtd[k as usize];
        (ppn != NONE).then_some(ppn)
    }

    /// Reads translation page `k` (one flash read, not chained: the caller decides what
    /// waits for it). Returns false, reading nothing, if the page was never written.
    #[inline]
    pub fn read(&mut self, k: u32, flash: &mut Flash) -> Result<bool> {
        let ppn = self.gtd[k as usize];
        if ppn == NONE {
            return Ok(false);
        }
        let oob = flash.read(ppn, Cause::Translation)?;
        if oob != Oob::translation(k) {
            return Err(Error::Usage(format!(
                "internal: the directory locates translation page {k} at physical page {ppn}, \
                 which holds {oob:?}"
            )));
        }
        Ok(true)
    }

    /// Writes a new version of translation page `k` and invalidates the old one; `content`
    /// puts the page's bytes (the mapping state it holds) in the buffer it is given, when
    /// a page store keeps them ([`Flash::page_content`]). GC that the allocation triggers
    /// may move data pages: take them with [`Self::take_moves`].
    pub fn write(
        &mut self,
        k: u32,
        flash: &mut Flash,
        content: impl FnOnce(&mut Vec<u8>),
    ) -> Result<()> {
        let old = self.gtd[k as usize];
        if old != NONE {
            // Invalidate first so that GC triggered by this write sees the stale copy.
            flash.invalidate(old)?;
            self.gtd[k as usize] = NONE;
        }
        let ppn = self.alloc.translation_page(flash)?;
        self.settle_translation_moves();
        // After the allocation: its GC must not take the bytes for a page it programs.
        if let Some(buf) = flash.page_content() {
            content(buf);
        }
        flash.program(ppn, Oob::translation(k), &[], Cause::Translation)?;
        self.gtd[k as usize] = ppn;
        Ok(())
    }

    /// The next free page for a host data write. GC that the allocation triggers may move
    /// data pages: take them with [`Self::take_moves`].
    #[inline]
    pub fn data_page(&mut self, flash: &mut Flash) -> Result<Ppn> {
        let ppn = self.alloc.host_page(flash)?;
        self.settle_translation_moves();
        Ok(ppn)
    }

    /// [`Self::data_page`] for a write of `lpa`, in its stream's line when the allocator
    /// keys host writes ([`PageAllocator::host_page_for`]).
    #[inline]
    pub fn data_page_for(&mut self, lpa: u32, flash: &mut Flash) -> Result<Ppn> {
        let ppn = self.alloc.host_page_for(lpa, flash)?;
        self.settle_translation_moves();
        Ok(ppn)
    }

    /// Background GC between requests ([`PageAllocator::idle_gc`]); translation pages it
    /// moves are settled here, data pages left for the scheme.
    #[inline]
    pub fn idle_gc(&mut self, flash: &mut Flash) -> Result<()> {
        self.alloc.idle_gc(flash)?;
        self.settle_translation_moves();
        Ok(())
    }

    /// Points the directory at the translation pages GC moved (most calls: none, checked
    /// inline).
    #[inline]
    fn settle_translation_moves(&mut self) {
        if self.alloc.has_translation_moves() {
            self.apply_translation_moves();
        }
    }

    #[inline(never)]
    fn apply_translation_moves(&mut self) {
        for m in self.alloc.drain_translation_moves() {
            debug_assert_eq!(self.gtd[m.key as usize], m.from);
            self.gtd[m.key as usize] = m.to;
        }
    }

    /// Whether GC moved data pages the scheme has not taken yet.
    #[inline]
    pub fn has_moves(&self) -> bool {
        self.alloc.has_moves()
    }

    /// Data pages GC moved since the last call (key = logical page); hand the vector back
    /// with [`Self::recycle_moves`].
    #[inline]
    pub fn take_moves(&mut self) -> Vec<Move> {
        self.alloc.take_moves()
    }

    #[inline]
    pub fn recycle_moves(&mut self, moves: Vec<Move>) {
        self.alloc.recycle_moves(moves)
    }

    /// Translation pages GC relocated, in total.
    pub fn pages_moved_by_gc(&self) -> u64 {
        self.alloc.translation_pages_moved
    }

    /// DRAM of the directory (one physical page address per translation page) and the GC
    /// bookkeeping.
    pub fn memory(&self, out: &mut MemoryBreakdown) {
        out.push(("gtd", self.gtd.len() as u64 * self.entry_bytes));
        self.alloc.memory(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::run::config::Config;

    /// Data and translation pages overwritten at random on a nearly full device: GC must
    /// relocate both kinds, keep them apart, and every location must stay right.
    #[test]
    fn data_and_translation_pages_survive_gc() {
        let mut cfg = Config::default();
        let g = &mut cfg.geometry;
        (
            g.channels,
            g.chips_per_channel,
            g.dies_per_chip,
            g.planes_per_die,
        ) = (2, 1, 1, 1);
        (g.blocks_per_plane, g.pages_per_block) = (24, 16);
        cfg.ftl.over_provisioning = 0.3;
        let layout = cfg.validate().unwrap();
        let mut flash = Flash::new(&cfg.device(), &layout, 0, true).unwrap();
        let tps = 20;
        let mut store = TranslationStore::new(&cfg.scheme_context(), &layout, tps).unwrap();
        let mut l2p = vec![NONE; layout.logical_pages as usize];
        let mut rng = Rng::new(7);
        let mut seq = 0;
        for i in 0..20_000u32 {
            if i % 3 == 0 {
                let k = rng.below(tps as u64) as u32;
                store.write(k, &mut flash, |_| {}).unwrap();
            } else {
                let lpa = rng.below(layout.logical_pages) as u32;
                if l2p[lpa as usize] != NONE {
                    flash.invalidate(l2p[lpa as usize]).unwrap();
                }
                let ppn = store.data_page(&mut flash).unwrap();
                seq += 1;
                flash
                    .program(ppn, Oob { lpa, seq }, &[], Cause::Host)
                    .unwrap();
                l2p[lpa as usize] = ppn;
            }
            // Background GC between requests, as the simulator runs it.
            flash.set_background(true);
            store.idle_gc(&mut flash).unwrap();
            flash.set_background(false);
            // Translation writes trigger GC too: its data moves are applied before the next
            // lookup, whoever caused them.
            let moves = store.take_moves();
            for m in &moves {
                assert_eq!(l2p[m.key as usize], m.from);
                l2p[m.key as usize] = m.to;
            }
            store.recycle_moves(moves);
        }
        assert!(
            store.pages_moved_by_gc() > 0,
            "no translation page was relocated"
        );
        assert!(flash.stats.gc_pages_moved > store.pages_moved_by_gc());
        for k in 0..tps {
            assert!(store.read(k, &mut flash).unwrap());
        }
        for (lpa, &ppn) in l2p.iter().enumerate() {
            if ppn != NONE {
                assert_eq!(flash.oob(ppn).lpa, lpa as u32);
                assert!(flash.is_valid(ppn));
            }
        }
        // Translation and data pages never share a block.
        for block in 0..layout.total_blocks {
            let kinds: Vec<bool> = flash
                .valid_pages(block)
                .map(|p| flash.oob(p).lpa == NONE)
                .collect();
            assert!(
                kinds.iter().all(|&t| t) || kinds.iter().all(|&t| !t),
                "block {block}"
            );
        }
    }

    #[test]
    fn too_little_spare_room_names_the_key() {
        let mut cfg = Config::default();
        cfg.geometry.blocks_per_plane = 8;
        cfg.ftl.over_provisioning = 0.38;
        let layout = cfg.validate().unwrap();
        let err = TranslationStore::new(&cfg.scheme_context(), &layout, 100)
            .err()
            .unwrap();
        assert!(err.to_string().contains("ftl.over_provisioning"), "{err}");
    }
}
