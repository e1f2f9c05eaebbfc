//! The DRAM write buffer shared by every scheme: a fixed number of page slots kept in
//! least-recently-written order. A write to a buffered page replaces it in place; a write
//! to a full buffer first evicts a batch of the least recently written pages, in that
//! order or sorted by logical page address (LeaFTL learns from sorted flushes). A sorted
//! flush may also filter by group (LeaFTL's reference): of the flush candidates, the groups
//! of `flush_group_pages` logical pages holding the most candidates go first, up to
//! `flush_group_fill` of the flush size, and the rest stay buffered. Reads that hit the
//! buffer are served from it.
//!
//! With `cache_reads` the buffer is a data cache (LeaFTL's evaluation shares one DRAM
//! between it and the mapping table): pages read from flash are kept clean, in their own
//! least-recently-used order; a write or a read needing a slot takes the least recently
//! used clean page's, and dirty pages are flushed only when the buffer holds nothing clean
//! (a read never forces a flush: it is then not cached). The buffer allocates nothing after
//! construction.
//!
//! A flushed page's slot is free once the page has crossed the channel, not when the flush
//! starts: the simulator hands the flush's transfer times to [`WriteBuffer::freed_at`], and
//! a write that takes one of those slots is acknowledged no earlier than its slot is free
//! ([`Buffered::Inserted`]), the earliest-free slot first, as a controller reuses its
//! buffer. A many-page flush thus delays the writes that need its slots, each by its own
//! slot, rather than the one write that triggered it by the whole batch. (A clean copy
//! cached by a read may take such a slot without waiting for it: a simplification.)

use crate::device::breakdown::Part;
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// What the write buffer evicts when it is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlushOrder {
    /// The least recently written pages, in that order.
    Lru,
    /// The least recently written pages, sorted by logical page address.
    Sorted,
}

/// The DRAM write buffer in front of every FTL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BufferConfig {
    /// Capacity in bytes (rounded down to whole pages); 0 disables the buffer.
    #[serde(with = "units::bytes")]
    pub size_bytes: u64,
    /// Bytes evicted at once when the buffer is full; 0 means one page with `lru` and the
    /// whole buffer with `sorted`.
    #[serde(with = "units::bytes")]
    pub flush_bytes: u64,
    pub flush: FlushOrder,
    /// Sorted flush only: group the flush candidates by `lpa / flush_group_pages` and
    /// flush the groups with the most pages first, up to `flush_group_fill` of the flush
    /// size (LeaFTL's filtering, so that flushed runs are learnable); 0 disables it.
    pub flush_group_pages: u64,
    /// Share of the flush size the group filtering may fill (at least one group is taken).
    pub flush_group_fill: f64,
    /// Also keep clean copies of pages read from flash (a data cache, as in LeaFTL's
    /// evaluation); they give way to writes before any dirty page is flushed.
    pub cache_reads: bool,
    /// When dirty pages are written to flash.
    pub destage: Destage,
    /// `watermark`: destaging starts once this share of the buffer's pages is dirty...
    pub high_watermark: f64,
    /// ...and stops once at most this share is.
    pub low_watermark: f64,
    /// Rate at which data moves into and out of the buffer's DRAM, in bytes per second
    /// (one transfer at a time); 0: not modelled.
    #[serde(with = "units::bytes")]
    pub dram_bytes_per_s: u64,
}

impl Default for BufferConfig {
    fn default() -> Self {
        BufferConfig {
            size_bytes: 0,
            flush_bytes: 0,
            flush: FlushOrder::Lru,
            flush_group_pages: 0,
            flush_group_fill: 0.875,
            cache_reads: false,
            destage: Destage::Watermark,
            // ftlab's choice (controllers do not publish theirs): a quarter of the buffer
            // kept free for bursts, half of it left dirty for overwrites to hit.
            high_watermark: 0.75,
            low_watermark: 0.5,
            // DDR4-2666 on a 32-bit bus: 10.7 GB/s.
            dram_bytes_per_s: 10_000_000_000,
        }
    }
}

/// When the write buffer writes its dirty pages to flash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Destage {
    /// A controller's write-back: from `high_watermark` of the buffer dirty down to
    /// `low_watermark`, in the dies' idle time between requests, so that a write waits
    /// for flash only when it finds the buffer full.
    Watermark,
    /// Only when a write finds the buffer full, in that write's path (ftlab 0.2 and
    /// before).
    OnFull,
}

/// A multiplicative hash folded so that strided keys (every 1024th page) still spread.
#[derive(Default, Clone, Copy)]
pub struct LpaHasher(u64);

impl Hasher for LpaHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ b as u64);
        }
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        let x = (i ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 29);
    }
}

/// A hash map keyed by logical page address.
pub type LpaMap<V> = HashMap<u32, V, BuildHasherDefault<LpaHasher>>;

const NIL: u32 = u32::MAX;
/// A slot free now (never flushed, or freed without a flush).
const FREE: (u64, Part) = (0, Part::BufferWait);

/// What [`WriteBuffer::write`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffered {
    /// The page was buffered already; its copy was replaced.
    Replaced,
    /// The page took a slot, which is (or was) free at `ready_ns`: the write is
    /// acknowledged no earlier (0 for a slot that was never flushed, or a clean page's);
    /// the flush that freed it was held by `held_by` (`buffer_wait`: by nothing but the
    /// buffer's own data).
    Inserted { ready_ns: u64, held_by: Part },
    /// No slot is free: evict, then write again.
    Full,
}

#[derive(Clone, Copy)]
struct Slot {
    lpa: u32,
    seq: u64,
    /// Towards the most recently used end of its list.
    newer: u32,
    /// Towards the least recently used end of its list.
    older: u32,
    /// Written and not yet flushed (else a clean copy of a page read).
    dirty: bool,
}

/// The two lists: dirty pages in least-recently-written order, clean pages in
/// least-recently-read order.
const DIRTY: usize = 0;
const CLEAN: usize = 1;

pub struct WriteBuffer {
    slots: Vec<Slot>,
    index: LpaMap<u32>,
    /// Free slots, the next to take at the front.
    free: VecDeque<u32>,
    /// Per slot, when it is free: the transfer time of the page last flushed from it, and
    /// what held that flush ([`crate::device::nand::Flash::host_transfers`]).
    free_at: Vec<(u64, Part)>,
    newest_of: [u32; 2],
    oldest_of: [u32; 2],
    /// Dirty pages buffered (the length of the dirty list).
    dirty: usize,
    cache_reads: bool,
    flush_pages: usize,
    sorted: bool,
    group_pages: u32,
    group_fill: f64,
    batch: Vec<(u32, u64)>,
    /// Group filtering scratch: candidates (group, LRU rank, slot) and groups
    /// (count, rank of their oldest candidate, group).
    candidates: Vec<(u32, u32, u32)>,
    groups: Vec<(u32, u32, u32)>,
}

impl WriteBuffer {
    /// A buffer of `cfg.size_bytes / page_size` pages, or `None` when that is zero.
    pub fn new(cfg: &BufferConfig, page_size: u64) -> Option<WriteBuffer> {
        let capacity = (cfg.size_bytes / page_size) as usize;
        if capacity == 0 {
            return None;
        }
        let sorted = cfg.flush == FlushOrder::Sorted;
        let flush_pages = match cfg.flush_bytes / page_size {
            0 if sorted => capacity,
            0 => 1,
            n => n as usize,
        };
        let mut index = LpaMap::default();
        index.reserve(capacity);
        Some(WriteBuffer {
            slots: vec![
                Slot {
                    lpa: 0,
                    seq: 0,
                    newer: NIL,
                    older: NIL,
                    dirty: true,
                };
                capacity
            ],
            index,
            free: (0..capacity as u32).collect(),
            free_at: vec![FREE; capacity],
            newest_of: [NIL; 2],
            oldest_of: [NIL; 2],
            dirty: 0,
            cache_reads: cfg.cache_reads,
            flush_pages,
            sorted,
            group_pages: if sorted {
                cfg.flush_group_pages.min(u32::MAX as u64) as u32
            } else {
                0
            },
            group_fill: cfg.flush_group_fill,
            batch: Vec::with_capacity(flush_pages),
            candidates: Vec::with_capacity(flush_pages),
            groups: Vec::with_capacity(flush_pages),
        })
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.free.is_empty() && self.oldest_of[CLEAN] == NIL
    }

    /// Dirty pages buffered.
    #[inline]
    pub fn dirty_len(&self) -> usize {
        self.dirty
    }

    pub fn contains(&self, lpa: u32) -> bool {
        self.index.contains_key(&lpa)
    }

    /// The sequence number of the buffered copy of `lpa`, if any.
    #[inline]
    pub fn get(&self, lpa: u32) -> Option<u64> {
        self.index.get(&lpa).map(|&s| self.slots[s as usize].seq)
    }

    #[inline]
    fn list_of(&self, s: u32) -> usize {
        if self.slots[s as usize].dirty {
            DIRTY
        } else {
            CLEAN
        }
    }

    fn unlink(&mut self, s: u32) {
        let list = self.list_of(s);
        self.dirty -= (list == DIRTY) as usize;
        let Slot { newer, older, .. } = self.slots[s as usize];
        if newer != NIL {
            self.slots[newer as usize].older = older;
        } else {
            self.newest_of[list] = older;
        }
        if older != NIL {
            self.slots[older as usize].newer = newer;
        } else {
            self.oldest_of[list] = newer;
        }
    }

    fn push_newest(&mut self, s: u32) {
        let list = self.list_of(s);
        self.dirty += (list == DIRTY) as usize;
        let newest = self.newest_of[list];
        self.slots[s as usize].newer = NIL;
        self.slots[s as usize].older = newest;
        if newest != NIL {
            self.slots[newest as usize].newer = s;
        } else {
            self.oldest_of[list] = s;
        }
        self.newest_of[list] = s;
    }

    /// A slot for a new page: a free one, else the least recently used clean page's.
    fn take_slot(&mut self) -> Option<u32> {
        if let Some(s) = self.free.pop_front() {
            return Some(s);
        }
        let s = self.oldest_of[CLEAN];
        if s == NIL {
            return None;
        }
        self.unlink(s);
        self.index.remove(&self.slots[s as usize].lpa);
        Some(s)
    }

    fn fill(&mut self, s: u32, lpa: u32, seq: u64, dirty: bool) {
        let slot = &mut self.slots[s as usize];
        (slot.lpa, slot.seq, slot.dirty) = (lpa, seq, dirty);
        self.push_newest(s);
    }

    /// Buffers a write, replacing a buffered copy of the same page, or taking a free slot
    /// (or a clean page's). When the buffer is full of dirty pages and does not hold the
    /// page, nothing is written and [`Buffered::Full`] asks the caller to
    /// [`WriteBuffer::evict`] first.
    #[inline]
    pub fn write(&mut self, lpa: u32, seq: u64) -> Buffered {
        use std::collections::hash_map::Entry;
        match self.index.entry(lpa) {
            Entry::Occupied(e) => {
                let s = *e.get();
                self.unlink(s);
                self.fill(s, lpa, seq, true);
                return Buffered::Replaced;
            }
            Entry::Vacant(e) => {
                if let Some(s) = self.free.pop_front() {
                    e.insert(s);
                    self.fill(s, lpa, seq, true);
                    return self.inserted(s);
                }
            }
        }
        let Some(s) = self.take_slot() else {
            return Buffered::Full;
        };
        self.index.insert(lpa, s);
        self.fill(s, lpa, seq, true);
        self.inserted(s)
    }

    /// Slot `s` taken: when it is free, and what held it.
    #[inline(always)]
    fn inserted(&mut self, s: u32) -> Buffered {
        let (ready_ns, held_by) = std::mem::replace(&mut self.free_at[s as usize], FREE);
        Buffered::Inserted { ready_ns, held_by }
    }

    /// Records when the slots the last [`WriteBuffer::evict`] freed are free: `transfers`,
    /// the times the flushed pages crossed the channel (sorted here), go to the slots in the
    /// order writes will take them, the earliest first. Slots beyond the times given (pages
    /// the scheme did not program) are free with the last of them.
    #[inline]
    pub fn freed_at(&mut self, transfers: &mut [(u64, Part)]) {
        match (&*transfers, &self.batch[..], self.free.front()) {
            // Untimed, or a flush that programmed no host data: nothing to wait for.
            ([], ..) => {}
            // The usual flush: one page, one slot (at the front of the free queue).
            ([t], [_], Some(&s)) => self.free_at[s as usize] = *t,
            _ => self.freed_at_sorted(transfers),
        }
    }

    #[inline(never)]
    fn freed_at_sorted(&mut self, transfers: &mut [(u64, Part)]) {
        transfers.sort_unstable();
        let Some(&last) = transfers.last() else {
            return;
        };
        // The flush put its slots at the front of the free queue, where writes take them.
        let freed = self.batch.len().min(self.free.len());
        for i in 0..freed {
            let t = transfers.get(i).copied().unwrap_or(last);
            self.free_at[self.free[i] as usize] = t;
        }
    }

    /// Sends the slots the last [`WriteBuffer::evict`] freed to the back of the free queue,
    /// behind those free for longer: a background destage's pages may still be waiting for
    /// their dies, and a write takes the slot that has been free the longest.
    pub fn defer_freed(&mut self) {
        let freed = self.batch.len().min(self.free.len());
        for _ in 0..freed {
            if let Some(s) = self.free.pop_front() {
                self.free.push_back(s);
            }
        }
    }

    /// A host read: the buffered copy's sequence number, if any (a clean copy becomes the
    /// most recently used).
    #[inline]
    pub fn read(&mut self, lpa: u32) -> Option<u64> {
        let &s = self.index.get(&lpa)?;
        if !self.slots[s as usize].dirty {
            self.unlink(s);
            self.push_newest(s);
        }
        Some(self.slots[s as usize].seq)
    }

    /// Keeps a clean copy of a page just read from flash (`cache_reads` only), in a free
    /// slot or the least recently used clean page's; never flushes for it.
    #[inline]
    pub fn cache_read(&mut self, lpa: u32, seq: u64) {
        if !self.cache_reads || self.index.contains_key(&lpa) {
            return;
        }
        if let Some(s) = self.take_slot() {
            self.free_at[s as usize] = FREE;
            self.index.insert(lpa, s);
            self.fill(s, lpa, seq, false);
        }
    }

    /// Drops the buffered copy of `lpa` (TRIM). Returns whether there was one.
    pub fn remove(&mut self, lpa: u32) -> bool {
        match self.index.remove(&lpa) {
            Some(s) => {
                self.unlink(s);
                // A page that never left DRAM: its slot is free now.
                self.free_at[s as usize] = FREE;
                self.free.push_front(s);
                true
            }
            None => false,
        }
    }

    /// Removes the next eviction batch and returns it as (lpa, seq) pairs: up to the flush
    /// size of the least recently written pages, sorted by lpa if so configured.
    pub fn evict(&mut self) -> &[(u32, u64)] {
        if self.group_pages > 0 {
            return self.take_groups();
        }
        self.take(self.flush_pages)
    }

    /// The sorted flush with group filtering: of the `flush_pages` least recently written
    /// pages, the groups with the most of them (ties: the group with the older page first)
    /// while their total stays within `group_fill` of the flush size, at least one group.
    fn take_groups(&mut self) -> &[(u32, u64)] {
        self.candidates.clear();
        let mut s = self.oldest_of[DIRTY];
        while s != NIL && self.candidates.len() < self.flush_pages {
            let slot = &self.slots[s as usize];
            let rank = self.candidates.len() as u32;
            self.candidates.push((slot.lpa / self.group_pages, rank, s));
            s = slot.newer;
        }
        self.candidates.sort_unstable();
        self.groups.clear();
        for &(group, rank, _) in &self.candidates {
            match self.groups.last_mut() {
                Some(g) if g.2 == group => g.0 += 1,
                _ => self.groups.push((1, rank, group)),
            }
        }
        self.groups
            .sort_unstable_by_key(|&(count, first, _)| (std::cmp::Reverse(count), first));
        let budget = (self.group_fill * self.flush_pages as f64).floor() as u64;
        let mut taken = 0u64;
        let mut chosen = 0;
        for &(count, _, _) in &self.groups {
            if chosen > 0 && taken + count as u64 > budget {
                break;
            }
            taken += count as u64;
            chosen += 1;
        }
        self.groups.truncate(chosen);
        self.groups.sort_unstable_by_key(|&(_, _, group)| group);
        self.batch.clear();
        for i in 0..self.candidates.len() {
            let (group, _, s) = self.candidates[i];
            if self
                .groups
                .binary_search_by_key(&group, |&(_, _, g)| g)
                .is_ok()
            {
                let Slot { lpa, seq, .. } = self.slots[s as usize];
                self.unlink(s);
                self.index.remove(&lpa);
                self.free.push_front(s);
                self.batch.push((lpa, seq));
            }
        }
        self.batch.sort_unstable_by_key(|&(lpa, _)| lpa);
        &self.batch
    }

    /// Removes every dirty page (end of run), in eviction order.
    pub fn drain(&mut self) -> &[(u32, u64)] {
        self.batch.reserve(self.len());
        self.take(usize::MAX)
    }

    fn take(&mut self, limit: usize) -> &[(u32, u64)] {
        self.batch.clear();
        while self.batch.len() < limit && self.oldest_of[DIRTY] != NIL {
            let s = self.oldest_of[DIRTY];
            let Slot { lpa, seq, .. } = self.slots[s as usize];
            self.unlink(s);
            self.index.remove(&lpa);
            self.free.push_front(s);
            self.batch.push((lpa, seq));
        }
        if self.sorted {
            self.batch.sort_unstable_by_key(|&(lpa, _)| lpa);
        }
        &self.batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(pages: u64, flush: FlushOrder, flush_pages: u64) -> WriteBuffer {
        let cfg = BufferConfig {
            size_bytes: pages * 4096,
            flush_bytes: flush_pages * 4096,
            flush,
            ..BufferConfig::default()
        };
        WriteBuffer::new(&cfg, 4096).unwrap()
    }

    #[test]
    fn group_filtering_flushes_the_fullest_groups() {
        let cfg = BufferConfig {
            size_bytes: 8 * 4096,
            flush_bytes: 8 * 4096,
            flush: FlushOrder::Sorted,
            flush_group_pages: 10,
            flush_group_fill: 0.75,
            cache_reads: false,
            ..BufferConfig::default()
        };
        let mut b = WriteBuffer::new(&cfg, 4096).unwrap();
        // Groups: 0 -> {1, 2}, 1 -> {11, 12, 13}, 2 -> {25}, 3 -> {31, 32}.
        for (i, lpa) in [31u32, 1, 11, 25, 2, 12, 13, 32].into_iter().enumerate() {
            b.write(lpa, i as u64);
        }
        // Budget 6 pages: group 1 (3), then groups 3 and 0 tie at 2 pages; group 3 holds the
        // oldest page, so it goes first; group 0 would exceed the budget.
        assert_eq!(b.evict(), &[(11, 2), (12, 5), (13, 6), (31, 0), (32, 7)]);
        assert_eq!(b.len(), 3);
        assert_eq!(b.get(1), Some(1));
        // A group larger than the budget still goes (at least one group per flush).
        let cfg = BufferConfig {
            flush_group_fill: 0.1,
            ..cfg
        };
        let mut b = WriteBuffer::new(&cfg, 4096).unwrap();
        for lpa in [5u32, 6, 7, 40] {
            b.write(lpa, lpa as u64);
        }
        assert_eq!(b.evict(), &[(5, 5), (6, 6), (7, 7)]);
        assert_eq!(b.drain(), &[(40, 40)]);
    }

    #[test]
    fn lru_order_and_overwrite() {
        let mut b = buffer(3, FlushOrder::Lru, 0);
        assert_eq!(
            b.write(10, 1),
            Buffered::Inserted {
                ready_ns: 0,
                held_by: Part::BufferWait
            }
        );
        assert_eq!(
            b.write(20, 2),
            Buffered::Inserted {
                ready_ns: 0,
                held_by: Part::BufferWait
            }
        );
        assert_eq!(
            b.write(30, 3),
            Buffered::Inserted {
                ready_ns: 0,
                held_by: Part::BufferWait
            }
        );
        assert!(b.is_full());
        assert_eq!(b.write(40, 9), Buffered::Full);
        assert_eq!(b.get(40), None);
        assert_eq!(b.write(10, 4), Buffered::Replaced); // 10 becomes the most recent
        assert_eq!(b.get(10), Some(4));
        assert_eq!(b.evict(), &[(20, 2)]);
        assert_eq!(b.evict(), &[(30, 3)]);
        assert_eq!(b.evict(), &[(10, 4)]);
        assert!(b.is_empty());
        assert_eq!(b.evict(), &[]);
    }

    #[test]
    fn sorted_flush_takes_whole_buffer_by_default() {
        let mut b = buffer(4, FlushOrder::Sorted, 0);
        for (i, lpa) in [7u32, 3, 9, 1].into_iter().enumerate() {
            b.write(lpa, i as u64);
        }
        assert_eq!(b.evict(), &[(1, 3), (3, 1), (7, 0), (9, 2)]);
        assert!(b.is_empty());
    }

    #[test]
    fn partial_sorted_flush_takes_oldest_first() {
        let mut b = buffer(4, FlushOrder::Sorted, 2);
        for (i, lpa) in [7u32, 3, 9, 1].into_iter().enumerate() {
            b.write(lpa, i as u64);
        }
        assert_eq!(b.evict(), &[(3, 1), (7, 0)]);
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn cached_reads_give_way_to_writes_and_never_force_a_flush() {
        let cfg = BufferConfig {
            size_bytes: 3 * 4096,
            cache_reads: true,
            ..BufferConfig::default()
        };
        let mut b = WriteBuffer::new(&cfg, 4096).unwrap();
        b.cache_read(1, 10);
        b.cache_read(2, 20);
        assert_eq!(
            b.write(3, 30),
            Buffered::Inserted {
                ready_ns: 0,
                held_by: Part::BufferWait
            }
        );
        assert_eq!(b.len(), 3);
        assert!(!b.is_full()); // a write would take a clean slot
        assert_eq!(b.read(1), Some(10)); // 2 is now the least recently used clean page
        assert_eq!(
            b.write(4, 40),
            Buffered::Inserted {
                ready_ns: 0,
                held_by: Part::BufferWait
            }
        );
        assert_eq!(b.get(2), None);
        assert_eq!(b.write(1, 11), Buffered::Replaced); // the clean copy becomes dirty
        assert_eq!(b.dirty_len(), 3);
        b.cache_read(5, 50); // no clean slot left: not cached
        assert_eq!(b.get(5), None);
        assert_eq!(b.write(6, 60), Buffered::Full);
        assert_eq!(b.evict(), &[(3, 30)]);
        b.cache_read(7, 70);
        assert_eq!(b.drain(), &[(4, 40), (1, 11)]);
        assert_eq!(b.get(7), Some(70));
        // Without cache_reads nothing is kept.
        let mut b = WriteBuffer::new(
            &BufferConfig {
                cache_reads: false,
                ..cfg
            },
            4096,
        )
        .unwrap();
        b.cache_read(1, 10);
        assert_eq!(b.get(1), None);
    }

    #[test]
    fn remove_frees_a_slot() {
        let mut b = buffer(2, FlushOrder::Lru, 0);
        b.write(1, 1);
        b.write(2, 2);
        assert!(b.remove(1));
        assert!(!b.remove(1));
        assert!(!b.is_full());
        b.write(3, 3);
        assert_eq!(b.drain(), &[(2, 2), (3, 3)]);
    }

    #[test]
    fn disabled_when_smaller_than_a_page() {
        let cfg = BufferConfig {
            size_bytes: 100,
            ..BufferConfig::default()
        };
        assert!(WriteBuffer::new(&cfg, 4096).is_none());
    }
}
