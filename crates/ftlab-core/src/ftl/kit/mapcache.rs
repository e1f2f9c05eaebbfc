//! Mapping-cache building blocks shared by the demand-cached schemes: intrusive linked
//! lists over dense slot numbers, the replacement policies (LRU, segmented LRU), an indexed
//! min-heap for priority-based replacement (TPFTL's page hotness, the selective scheme's
//! mapping-block hotness), and the byte budget.
//!
//! Everything here is a flat array: a lookup, a touch or an eviction costs O(1) (lists) or
//! O(log n) (heap). Arrays indexed by cache slot grow with the slots in use, up to the
//! capacity, so that an unlimited budget on a 2 TiB device costs memory only for what the
//! cache holds.

use serde::{Deserialize, Serialize};
use std::ops::{Index, IndexMut};

/// No slot / no link.
pub const NIL: u32 = u32::MAX;

/// Links of doubly-linked lists whose nodes are slot numbers `0..capacity`. Several lists
/// can share one arena (a node is in at most one list at a time).
#[derive(Clone, Debug)]
pub struct Links {
    /// (previous, next) of each node, side by side: one cache line per node.
    link: Vec<[u32; 2]>,
}

/// One list in a [`Links`] arena: head is the most recently used end.
#[derive(Clone, Copy, Debug)]
pub struct List {
    pub head: u32,
    pub tail: u32,
    pub len: u32,
}

impl Default for List {
    fn default() -> Self {
        List::EMPTY
    }
}

impl List {
    pub const EMPTY: List = List {
        head: NIL,
        tail: NIL,
        len: 0,
    };

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Links {
    pub fn new(capacity: usize) -> Self {
        Links {
            link: vec![[NIL; 2]; capacity],
        }
    }

    #[inline]
    pub fn push_front(&mut self, list: &mut List, i: u32) {
        if i as usize >= self.link.len() {
            self.link.resize(i as usize + 1, [NIL; 2]);
        }
        self.link[i as usize] = [NIL, list.head];
        if list.head != NIL {
            self.link[list.head as usize][0] = i;
        } else {
            list.tail = i;
        }
        list.head = i;
        list.len += 1;
    }

    #[inline]
    pub fn remove(&mut self, list: &mut List, i: u32) {
        let [p, n] = self.link[i as usize];
        if p != NIL {
            self.link[p as usize][1] = n;
        } else {
            list.head = n;
        }
        if n != NIL {
            self.link[n as usize][0] = p;
        } else {
            list.tail = p;
        }
        list.len -= 1;
    }

    #[inline]
    pub fn move_to_front(&mut self, list: &mut List, i: u32) {
        if list.head != i {
            self.remove(list, i);
            self.push_front(list, i);
        }
    }

    /// The node after `i` (towards the tail).
    #[inline]
    pub fn next(&self, i: u32) -> u32 {
        self.link[i as usize][1]
    }

    /// The node before `i` (towards the head).
    #[inline]
    pub fn prev(&self, i: u32) -> u32 {
        self.link[i as usize][0]
    }
}

/// Replacement policy of a cache of fixed-size items (`[dftl] replacement`, `[sftl]
/// replacement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplacementKind {
    /// Least recently used.
    Lru,
    /// Segmented LRU (Karedla, Love and Wherry 1994): new items enter a probationary
    /// segment; a hit there promotes the item to the protected segment, whose overflow
    /// falls back to the head of the probationary one; victims come from the probationary
    /// tail. DFTL's choice.
    Slru,
}

/// A replacement policy over slots `0..capacity`: LRU or segmented LRU.
#[derive(Clone, Debug)]
pub struct Replacement {
    kind: ReplacementKind,
    links: Links,
    probation: List,
    protected: List,
    in_protected: Vec<bool>,
    protected_capacity: u32,
}

impl Replacement {
    /// `protected_fraction` is the share of `capacity` kept by the protected segment
    /// (segmented LRU only).
    pub fn new(kind: ReplacementKind, capacity: usize, protected_fraction: f64) -> Self {
        let protected_capacity = match kind {
            ReplacementKind::Lru => 0,
            ReplacementKind::Slru => (capacity as f64 * protected_fraction) as u32,
        };
        Replacement {
            kind,
            links: Links::new(0),
            probation: List::EMPTY,
            protected: List::EMPTY,
            in_protected: Vec::new(),
            protected_capacity,
        }
    }

    pub fn len(&self) -> u32 {
        self.probation.len + self.protected.len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A new item.
    #[inline]
    pub fn insert(&mut self, slot: u32) {
        if self.kind == ReplacementKind::Slru && slot as usize >= self.in_protected.len() {
            self.in_protected.resize(slot as usize + 1, false);
        }
        self.links.push_front(&mut self.probation, slot);
    }

    /// An access to a cached item.
    #[inline]
    pub fn touch(&mut self, slot: u32) {
        match self.kind {
            ReplacementKind::Lru => self.links.move_to_front(&mut self.probation, slot),
            ReplacementKind::Slru => {
                if self.in_protected[slot as usize] {
                    self.links.move_to_front(&mut self.protected, slot);
                    return;
                }
                self.links.remove(&mut self.probation, slot);
                self.links.push_front(&mut self.protected, slot);
                self.in_protected[slot as usize] = true;
                if self.protected.len > self.protected_capacity {
                    let demoted = self.protected.tail;
                    self.links.remove(&mut self.protected, demoted);
                    self.in_protected[demoted as usize] = false;
                    self.links.push_front(&mut self.probation, demoted);
                }
            }
        }
    }

    /// Forgets an item.
    #[inline]
    pub fn remove(&mut self, slot: u32) {
        if self.kind == ReplacementKind::Slru && self.in_protected[slot as usize] {
            self.in_protected[slot as usize] = false;
            self.links.remove(&mut self.protected, slot);
        } else {
            self.links.remove(&mut self.probation, slot);
        }
    }

    /// The item to evict next (not removed), if any.
    #[inline]
    pub fn victim(&self) -> Option<u32> {
        if self.probation.tail != NIL {
            Some(self.probation.tail)
        } else if self.protected.tail != NIL {
            Some(self.protected.tail)
        } else {
            None
        }
    }

    /// The next candidate after `slot` in eviction order (towards more recently used).
    pub fn next_victim(&self, slot: u32) -> Option<u32> {
        let p = self.links.prev(slot);
        if p != NIL {
            return Some(p);
        }
        if self.kind == ReplacementKind::Slru && !self.in_protected[slot as usize] {
            let t = self.protected.tail;
            return (t != NIL).then_some(t);
        }
        None
    }
}

/// Values in numbered slots `0..capacity`, allocated on demand: the most recently
/// released slot is reused first, else the next new number.
#[derive(Clone, Debug)]
pub struct Slots<T> {
    values: Vec<T>,
    released: Vec<u32>,
    capacity: u32,
}

impl<T> Slots<T> {
    pub fn new(capacity: u32) -> Self {
        Slots {
            values: Vec::new(),
            released: Vec::new(),
            capacity,
        }
    }

    /// True when every slot holds a value.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.released.is_empty() && self.values.len() == self.capacity as usize
    }

    /// Stores `value` in a free slot and returns its number; None when full.
    #[inline]
    pub fn insert(&mut self, value: T) -> Option<u32> {
        if let Some(slot) = self.released.pop() {
            self.values[slot as usize] = value;
            return Some(slot);
        }
        if self.values.len() == self.capacity as usize {
            return None;
        }
        self.values.push(value);
        Some(self.values.len() as u32 - 1)
    }

    /// Frees a slot (its value stays readable until the slot is reused).
    #[inline]
    pub fn release(&mut self, slot: u32) {
        self.released.push(slot);
    }

    /// Slots holding a value.
    pub fn len(&self) -> u32 {
        (self.values.len() - self.released.len()) as u32
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }
}

impl<T> Index<u32> for Slots<T> {
    type Output = T;
    #[inline]
    fn index(&self, slot: u32) -> &T {
        &self.values[slot as usize]
    }
}

impl<T> IndexMut<u32> for Slots<T> {
    #[inline]
    fn index_mut(&mut self, slot: u32) -> &mut T {
        &mut self.values[slot as usize]
    }
}

/// A binary min-heap of items `0..capacity` with keys, where any item's key can change:
/// the item of least key is the victim. Ties go to the lower item number (keys are
/// compared as `(key, item)`), so the order is deterministic. Keys live in the heap array
/// itself, so sifting touches no other memory than the positions.
#[derive(Clone, Debug)]
pub struct IndexedHeap {
    heap: Vec<(u64, u32)>,
    pos: Vec<u32>,
}

impl IndexedHeap {
    pub fn new(capacity: usize) -> Self {
        IndexedHeap {
            heap: Vec::with_capacity(capacity),
            pos: vec![NIL; capacity],
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    #[inline]
    pub fn contains(&self, item: u32) -> bool {
        self.pos[item as usize] != NIL
    }

    /// The key of an item in the heap.
    #[inline]
    pub fn key(&self, item: u32) -> u64 {
        self.heap[self.pos[item as usize] as usize].0
    }

    /// The item of least key.
    #[inline]
    pub fn min(&self) -> Option<u32> {
        self.heap.first().map(|&(_, item)| item)
    }

    /// The item of least key other than `item`.
    #[inline]
    pub fn min_except(&self, item: u32) -> Option<u32> {
        match self.heap.first() {
            None => None,
            Some(&(_, m)) if m != item => Some(m),
            Some(_) => match (self.heap.get(1), self.heap.get(2)) {
                (Some(&a), Some(&b)) => Some(a.min(b).1),
                (Some(&a), None) => Some(a.1),
                _ => None,
            },
        }
    }

    pub fn push(&mut self, item: u32, key: u64) {
        debug_assert!(!self.contains(item));
        self.pos[item as usize] = self.heap.len() as u32;
        self.heap.push((key, item));
        self.up(self.heap.len() - 1);
    }

    /// Changes the key of an item in the heap.
    #[inline]
    pub fn set(&mut self, item: u32, key: u64) {
        let i = self.pos[item as usize] as usize;
        let old = self.heap[i].0;
        self.heap[i].0 = key;
        if key < old {
            self.up(i);
        } else if key > old {
            self.down(i);
        }
    }

    pub fn remove(&mut self, item: u32) {
        let i = self.pos[item as usize] as usize;
        let last = self.heap.len() - 1;
        self.swap(i, last);
        self.heap.pop();
        self.pos[item as usize] = NIL;
        if i < self.heap.len() {
            self.down(i);
            self.up(i);
        }
    }

    /// Applies `f` to every key, then restores the heap order (O(n)).
    pub fn update_all(&mut self, mut f: impl FnMut(u32, u64) -> u64) {
        for entry in &mut self.heap {
            entry.0 = f(entry.1, entry.0);
        }
        for i in (0..self.heap.len() / 2).rev() {
            self.down(i);
        }
    }

    #[inline]
    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.pos[self.heap[i].1 as usize] = i as u32;
        self.pos[self.heap[j].1 as usize] = j as u32;
    }

    fn up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[i] >= self.heap[parent] {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    fn down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut best = i;
            if l < n && self.heap[l] < self.heap[best] {
                best = l;
            }
            if r < n && self.heap[r] < self.heap[best] {
                best = r;
            }
            if best == i {
                break;
            }
            self.swap(i, best);
            i = best;
        }
    }
}

/// The mapping-cache byte budget from `dram.budget_bytes` (0: unlimited).
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub bytes: u64,
}

impl Budget {
    pub fn new(budget_bytes: u64) -> Self {
        Budget {
            bytes: if budget_bytes == 0 {
                u64::MAX
            } else {
                budget_bytes
            },
        }
    }

    pub fn is_unlimited(&self) -> bool {
        self.bytes == u64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn slots_reuse_the_latest_released_then_number_new_ones_in_order() {
        let mut slots = Slots::new(3);
        assert_eq!(slots.insert('a'), Some(0));
        assert_eq!(slots.insert('b'), Some(1));
        slots.release(0);
        slots.release(1);
        assert_eq!(slots.len(), 0);
        assert_eq!(slots.insert('c'), Some(1));
        assert_eq!(slots.insert('d'), Some(0));
        assert!(!slots.is_full());
        assert_eq!(slots.insert('e'), Some(2));
        assert!(slots.is_full());
        assert_eq!(slots.insert('f'), None);
        assert_eq!((slots[0], slots[1], slots[2]), ('d', 'c', 'e'));
        assert_eq!((slots.len(), slots.capacity()), (3, 3));
    }

    #[test]
    fn lru_evicts_least_recent() {
        let mut r = Replacement::new(ReplacementKind::Lru, 4, 0.0);
        for s in 0..4 {
            r.insert(s);
        }
        r.touch(0);
        assert_eq!(r.victim(), Some(1));
        r.remove(1);
        assert_eq!(r.victim(), Some(2));
        assert_eq!(r.next_victim(2), Some(3));
        assert_eq!(r.len(), 3);
    }

    #[test]
    fn slru_protects_items_hit_twice() {
        let mut r = Replacement::new(ReplacementKind::Slru, 4, 0.5);
        for s in 0..4 {
            r.insert(s);
        }
        // 0 and 1 are promoted; 2 and 3 stay probationary and go first.
        r.touch(0);
        r.touch(1);
        assert_eq!(r.victim(), Some(2));
        // A third promotion overflows the protected segment (2 slots): 0 falls back.
        r.touch(2);
        assert_eq!(r.victim(), Some(3));
        r.remove(3);
        assert_eq!(r.victim(), Some(0));
        assert_eq!(r.next_victim(0), Some(1));
    }

    #[test]
    fn heap_matches_a_sorted_reference() {
        let mut h = IndexedHeap::new(64);
        let mut reference = vec![None; 64];
        let mut rng = Rng::new(3);
        for _ in 0..5000 {
            let item = rng.below(64) as u32;
            let key = rng.below(100);
            match (rng.below(3), reference[item as usize]) {
                (0, Some(_)) => {
                    h.remove(item);
                    reference[item as usize] = None;
                }
                (_, Some(_)) => {
                    h.set(item, key);
                    reference[item as usize] = Some(key);
                }
                (_, None) => {
                    h.push(item, key);
                    reference[item as usize] = Some(key);
                }
            }
            let best = (0..64u32)
                .filter_map(|i| reference[i as usize].map(|k| (k, i)))
                .min()
                .map(|(_, i)| i);
            assert_eq!(h.min(), best);
        }
        h.update_all(|item, k| k + item as u64 * 7 % 13);
        let best = (0..64u32)
            .filter_map(|i| reference[i as usize].map(|k| (k + i as u64 * 7 % 13, i)))
            .min()
            .map(|(_, i)| i);
        assert_eq!(h.min(), best);
    }
}
