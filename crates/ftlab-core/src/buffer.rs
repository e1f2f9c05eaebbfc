//! The DRAM write buffer shared by every scheme: a fixed number of page slots kept in
//! least-recently-written order. A write to a buffered page replaces it in place; a write
//! to a full buffer first evicts a batch of the least recently written pages, in that
//! order or sorted by logical page address (LeaFTL learns from sorted flushes). Reads that
//! hit the buffer are served from it. The buffer allocates nothing after construction.

use crate::config::{BufferConfig, FlushOrder};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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

/// What [`WriteBuffer::write`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffered {
    /// The page was buffered already; its copy was replaced.
    Replaced,
    /// The page took a free slot.
    Inserted,
    /// No slot is free: evict, then write again.
    Full,
}

#[derive(Clone, Copy)]
struct Slot {
    lpa: u32,
    seq: u32,
    /// Towards the most recently written end.
    newer: u32,
    /// Towards the least recently written end.
    older: u32,
}

pub struct WriteBuffer {
    slots: Vec<Slot>,
    index: LpaMap<u32>,
    free: Vec<u32>,
    newest: u32,
    oldest: u32,
    flush_pages: usize,
    sorted: bool,
    batch: Vec<(u32, u32)>,
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
                };
                capacity
            ],
            index,
            free: (0..capacity as u32).rev().collect(),
            newest: NIL,
            oldest: NIL,
            flush_pages,
            sorted,
            batch: Vec::with_capacity(flush_pages),
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
        self.free.is_empty()
    }

    pub fn contains(&self, lpa: u32) -> bool {
        self.index.contains_key(&lpa)
    }

    /// The sequence number of the buffered copy of `lpa`, if any.
    #[inline]
    pub fn get(&self, lpa: u32) -> Option<u32> {
        self.index.get(&lpa).map(|&s| self.slots[s as usize].seq)
    }

    fn unlink(&mut self, s: u32) {
        let Slot { newer, older, .. } = self.slots[s as usize];
        if newer != NIL {
            self.slots[newer as usize].older = older;
        } else {
            self.newest = older;
        }
        if older != NIL {
            self.slots[older as usize].newer = newer;
        } else {
            self.oldest = newer;
        }
    }

    fn push_newest(&mut self, s: u32) {
        self.slots[s as usize].newer = NIL;
        self.slots[s as usize].older = self.newest;
        if self.newest != NIL {
            self.slots[self.newest as usize].newer = s;
        } else {
            self.oldest = s;
        }
        self.newest = s;
    }

    /// Buffers a write, replacing a buffered copy of the same page, or taking a free slot.
    /// When the buffer is full and does not hold the page, nothing is written and
    /// [`Buffered::Full`] asks the caller to [`WriteBuffer::evict`] first.
    #[inline]
    pub fn write(&mut self, lpa: u32, seq: u32) -> Buffered {
        use std::collections::hash_map::Entry;
        match self.index.entry(lpa) {
            Entry::Occupied(e) => {
                let s = *e.get();
                self.slots[s as usize].seq = seq;
                self.unlink(s);
                self.push_newest(s);
                Buffered::Replaced
            }
            Entry::Vacant(e) => {
                let Some(s) = self.free.pop() else {
                    return Buffered::Full;
                };
                e.insert(s);
                self.slots[s as usize].lpa = lpa;
                self.slots[s as usize].seq = seq;
                self.push_newest(s);
                Buffered::Inserted
            }
        }
    }

    /// Drops the buffered copy of `lpa` (TRIM). Returns whether there was one.
    pub fn remove(&mut self, lpa: u32) -> bool {
        match self.index.remove(&lpa) {
            Some(s) => {
                self.unlink(s);
                self.free.push(s);
                true
            }
            None => false,
        }
    }

    /// Removes the next eviction batch and returns it as (lpa, seq) pairs: up to the flush
    /// size of the least recently written pages, sorted by lpa if so configured.
    pub fn evict(&mut self) -> &[(u32, u32)] {
        self.take(self.flush_pages)
    }

    /// Removes every page (end of run), in eviction order.
    pub fn drain(&mut self) -> &[(u32, u32)] {
        self.batch.reserve(self.len());
        self.take(usize::MAX)
    }

    fn take(&mut self, limit: usize) -> &[(u32, u32)] {
        self.batch.clear();
        while self.batch.len() < limit && self.oldest != NIL {
            let s = self.oldest;
            let Slot { lpa, seq, .. } = self.slots[s as usize];
            self.unlink(s);
            self.index.remove(&lpa);
            self.free.push(s);
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
        };
        WriteBuffer::new(&cfg, 4096).unwrap()
    }

    #[test]
    fn lru_order_and_overwrite() {
        let mut b = buffer(3, FlushOrder::Lru, 0);
        assert_eq!(b.write(10, 1), Buffered::Inserted);
        assert_eq!(b.write(20, 2), Buffered::Inserted);
        assert_eq!(b.write(30, 3), Buffered::Inserted);
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
            b.write(lpa, i as u32);
        }
        assert_eq!(b.evict(), &[(1, 3), (3, 1), (7, 0), (9, 2)]);
        assert!(b.is_empty());
    }

    #[test]
    fn partial_sorted_flush_takes_oldest_first() {
        let mut b = buffer(4, FlushOrder::Sorted, 2);
        for (i, lpa) in [7u32, 3, 9, 1].into_iter().enumerate() {
            b.write(lpa, i as u32);
        }
        assert_eq!(b.evict(), &[(3, 1), (7, 0)]);
        assert_eq!(b.len(), 2);
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
            flush_bytes: 0,
            flush: FlushOrder::Lru,
        };
        assert!(WriteBuffer::new(&cfg, 4096).is_none());
    }
}
