//! Rebuilding the log-block machinery after a restart ([`crate::device::recovery`]).
//!
//! The OOB scan gives each logical page's current copy; what is lost is which block was a
//! data block and which a log block, and each log block's page map and associations. They
//! are worked out from where the current copies lie, as a controller scanning its blocks'
//! OOB would:
//! - a block whose current pages all belong to one logical block X, each at its own offset,
//!   is *aligned* for X; X's data block is its aligned block written first (a log block or
//!   a merge's destination for X is written after X's data block);
//! - every other block holding current pages is a log block and takes a slot of the pool,
//!   the most recently written first: an aligned one a sequential slot if the scheme has
//!   them (it goes on serving X's run), the others the random slots (at most K logical
//!   blocks each where associativity is bounded). Its page map is its current pages, its
//!   LBN table their logical blocks; it is serial for X if it is aligned and no copy of X's
//!   pages below its top lies elsewhere (switchable); the LRU order is the order the
//!   blocks were last written;
//! - a crash in the middle of a merge or a cleaning leaves one log block more than the pool
//!   holds (the merge's destination, or the cleaned block's replacement). The excess is
//!   finished as the interrupted operation would have: an aligned, switchable block
//!   (preferred) is completed into X's data block (the rest of X copied in, the old data
//!   block erased), any other has its current pages appended to log blocks with room (else
//!   its logical blocks fully merged) and is erased;
//! - blocks holding no current page are erased, and with the erased ones form the free
//!   pool; free slots take free blocks.
//!
//! Counters that only classify merges (a slot's fill count) start at zero.

use super::{Core, Slot};
use crate::device::blocks::FreeBlocks;
use crate::device::nand::{Cause, Flash, NONE};
use crate::device::recovery::Found;
use crate::error::{Error, Result};
use crate::ftl::kit::mapcache::{Links, List};
use std::cmp::Reverse;

/// What a block's current pages are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// No current page.
    Dead,
    /// Every current page is the logical block's own page of the same offset.
    Aligned(u32),
    Mixed,
}

impl Core {
    /// One past the highest programmed page of `block`.
    fn top_of(&self, block: u32, flash: &Flash) -> u32 {
        let first = flash.first_page(block);
        (0..self.ppb)
            .rev()
            .find(|&o| flash.is_programmed(first + o))
            .map_or(0, |o| o + 1)
    }

    /// The logical blocks with a valid page in `block`, sorted.
    fn lbns_in(&self, block: u32, flash: &Flash) -> Vec<u32> {
        let mut lbns: Vec<u32> = flash
            .valid_pages(block)
            .map(|p| self.split(flash.oob(p).lpa).0)
            .collect();
        lbns.sort_unstable();
        lbns.dedup();
        lbns
    }

    /// Rebuilds the data-block map, the log-block pool with its page maps, LBN tables,
    /// serial and sequential roles and LRU order, and the free pool from `found` (see the
    /// module notes). `flash` holds every page as programmed before, none valid.
    pub fn recover(&mut self, found: &Found, flash: &mut Flash) -> Result<()> {
        crate::device::recovery::revalidate_live(found, flash)?;
        let total = self.layout.total_blocks as usize;
        let mut shape = vec![Shape::Dead; total];
        for (lpa, &ppn) in found.live.iter().enumerate() {
            if ppn == NONE {
                continue;
            }
            let b = flash.block_of(ppn) as usize;
            let (lbn, off) = self.split(lpa as u32);
            let own = flash.page_offset(ppn) == off;
            shape[b] = match shape[b] {
                Shape::Dead if own => Shape::Aligned(lbn),
                Shape::Aligned(x) if own && x == lbn => Shape::Aligned(x),
                _ => Shape::Mixed,
            };
        }
        let recency = |b: usize| found.block_last_prog.get(b).copied().unwrap_or(0);

        // Data blocks: per logical block, its aligned block written first.
        self.dbm.fill(NONE);
        for (b, &sh) in shape.iter().enumerate() {
            if let Shape::Aligned(x) = sh {
                let cur = self.dbm[x as usize];
                if cur == NONE || (recency(b), b) < (recency(cur as usize), cur as usize) {
                    self.dbm[x as usize] = b as u32;
                }
            }
        }
        let is_data = |b: usize| match shape[b] {
            Shape::Aligned(x) => self.dbm[x as usize] == b as u32,
            _ => false,
        };
        // Log blocks, most recently written first.
        let mut logs: Vec<u32> = (0..total)
            .filter(|&b| shape[b] != Shape::Dead && !is_data(b))
            .map(|b| b as u32)
            .collect();
        logs.sort_by_key(|&b| (Reverse(recency(b as usize)), b));

        // The pool, emptied; every current page outside the data blocks is indexed.
        self.newest.fill(0);
        self.serial_of.fill(NONE);
        self.lbn_log.fill(NONE);
        self.slot_of.fill(NONE);
        self.entry_lbn.fill(NONE);
        self.entry_valid.fill(0);
        let n = self.opts.logs as usize;
        self.room_links = Links::new(n);
        self.room = vec![List::EMPTY; self.room.len()];
        self.lru_links = Links::new(n);
        self.lru = List::EMPTY;
        self.slots = (0..n).map(|_| Slot::fresh(NONE)).collect();
        self.clock = 0;
        for &b in &logs {
            let pages: Vec<_> = flash.valid_pages(b).collect();
            for p in pages {
                self.newest[flash.oob(p).lpa as usize] = p + 1;
            }
        }

        // The excess over the pool: the least recent switchable aligned blocks first.
        let finishable = |core: &Core, b: u32, flash: &Flash| match shape[b as usize] {
            Shape::Aligned(x) => core.serial_below(b, core.top_of(b, flash), x, flash),
            _ => false,
        };
        let mut orphan = vec![false; total];
        let mut excess = logs.len().saturating_sub(n);
        for pass_finishable in [true, false] {
            for &b in logs.iter().rev() {
                if excess > 0
                    && !orphan[b as usize]
                    && finishable(self, b, flash) == pass_finishable
                {
                    orphan[b as usize] = true;
                    excess -= 1;
                }
            }
        }
        // The others take slots, the most recent first.
        let k = self.opts.max_assoc;
        let seq_slots = self.opts.sequential_logs as usize;
        let mut placed: Vec<Option<u32>> = vec![None; n];
        for &b in &logs {
            if orphan[b as usize] {
                continue;
            }
            let fits = k == 0 || self.lbns_in(b, flash).len() as u32 <= k;
            let aligned = matches!(shape[b as usize], Shape::Aligned(_));
            let free_seq = (0..seq_slots).find(|&s| placed[s].is_none());
            let free_random = (seq_slots..n).find(|&s| placed[s].is_none());
            let slot = match (aligned, free_seq, free_random) {
                _ if !fits => None,
                (true, Some(s), _) => Some(s),
                (_, _, Some(s)) => Some(s),
                (_, s, None) => s,
            };
            match slot {
                Some(s) => placed[s] = Some(b),
                None => orphan[b as usize] = true,
            }
        }

        // Each placed log block's state, the least recent first, so that the LRU list and
        // the stamps come out in write order.
        let mut order: Vec<usize> = (0..n).filter(|&s| placed[s].is_some()).collect();
        order.sort_by_key(|&s| {
            let b = placed[s].unwrap_or(NONE) as usize;
            (recency(b), b)
        });
        for &s in &order {
            let b = placed[s].unwrap_or(NONE);
            self.clock += 1;
            self.slot_of[b as usize] = s as u32;
            self.slots[s] = Slot {
                top: self.top_of(b, flash),
                valid: flash.valid_count(b),
                stamp: self.clock,
                ..Slot::fresh(b)
            };
            let lbns: Vec<u32> = flash
                .valid_pages(b)
                .map(|p| self.split(flash.oob(p).lpa).0)
                .collect();
            for lbn in lbns {
                self.entry_add(s as u32, lbn);
            }
            if !self.is_sequential(s as u32) {
                self.lru_links.push_front(&mut self.lru, s as u32);
                self.slots[s].in_lru = true;
            }
        }
        // Serial roles, the most recent log block of a logical block first.
        for &s in order.iter().rev() {
            let slot = self.slots[s];
            if let Shape::Aligned(x) = shape[slot.block as usize] {
                if self.is_sequential(s as u32) {
                    self.slots[s].owner = x;
                }
                if self.serial_of[x as usize] == NONE
                    && self.serial_below(slot.block, slot.top, x, flash)
                {
                    self.serial_of[x as usize] = s as u32;
                    self.slots[s].serial = x;
                }
            }
        }

        // Free blocks: the erased ones and those holding no current page.
        self.free = FreeBlocks::empty(&self.layout);
        self.next_unit = 0;
        for b in 0..total as u32 {
            if shape[b as usize] != Shape::Dead {
                continue;
            }
            if !flash.is_erased(b) {
                flash.erase(b, Cause::Gc)?;
            }
            self.free.push(&self.layout, b);
        }
        // The excess log blocks, finished.
        let orphans: Vec<u32> = logs
            .iter()
            .copied()
            .filter(|&b| orphan[b as usize])
            .collect();
        for &b in &orphans {
            if let Shape::Aligned(x) = shape[b as usize] {
                if finishable(self, b, flash) {
                    let top = self.top_of(b, flash);
                    self.fill_serial(b, top, x, Cause::Gc, flash)?;
                    self.adopt_data_block(b, self.ppb, x, Cause::Gc, flash)?;
                    continue;
                }
            }
            self.disperse(b, flash)?;
        }
        // Free slots take free blocks.
        for (s, at) in placed.iter().enumerate() {
            if at.is_none() {
                let b = self
                    .free
                    .pop_round_robin(&mut self.next_unit, 0)
                    .ok_or_else(|| Error::DeviceFull {
                        message: "no free block left for the log-block pool after recovery".into(),
                    })?;
                self.slot_of[b as usize] = s as u32;
                self.slots[s] = Slot::fresh(b);
            }
        }
        // Room lists: free random slots in slot order (the first at the tail, as in a fresh
        // pool), then those in use, the least recently written first.
        let in_use = order.iter().map(|&s| s as u32);
        let free = (0..self.opts.logs).filter(|&s| placed[s as usize].is_none());
        for s in free.chain(in_use) {
            self.room_update(s);
        }
        self.check_invariants(flash).map_err(|e| {
            Error::Usage(format!(
                "internal error: the rebuilt log-block structure is inconsistent: {e}"
            ))
        })
    }

    /// An excess log block's current pages are appended to the random log blocks with room
    /// that can take their logical block (the most recent first), else their logical block
    /// is fully merged; then it is erased.
    fn disperse(&mut self, block: u32, flash: &mut Flash) -> Result<()> {
        let pages: Vec<_> = flash.valid_pages(block).collect();
        for src in pages {
            if !flash.is_valid(src) {
                continue; // moved by a full merge of its logical block
            }
            let lpa = flash.oob(src).lpa;
            let (lbn, _) = self.split(lpa);
            let k = self.opts.max_assoc;
            let target = self.lru_iter().filter(|&s| {
                let slot = self.slots[s as usize];
                slot.top < self.ppb && (k == 0 || slot.assoc < k || self.holds(s, lbn))
            });
            match target.last() {
                Some(s) => {
                    let p = self.slots[s as usize].top;
                    let dst = self.ppn(self.slots[s as usize].block, p);
                    self.copy_page(src, dst, lbn, Cause::Gc, flash)?;
                    self.landed(s, lpa, p);
                }
                None => self.merge_full(lbn, flash)?,
            }
        }
        flash.erase(block, Cause::Gc)?;
        self.release_block(block);
        Ok(())
    }
}
