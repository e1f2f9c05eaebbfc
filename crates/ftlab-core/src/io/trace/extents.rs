//! Sets of page numbers kept as sorted, disjoint ranges: the trace's footprint and the
//! address-compaction table. Memory grows with the number of distinct extents a trace
//! touches (a sequential stream is one), not with its length.

/// Ranges of keys being collected. Insertion is O(1) amortised: ranges that continue
/// the last one extend it, and the list is sorted and merged whenever it has doubled.
#[derive(Default)]
pub struct ExtentSet {
    ranges: Vec<(u64, u64)>,
    /// Length after the last merge; the next merge happens at twice that.
    merged: usize,
}

impl ExtentSet {
    /// Adds keys `start..end`.
    #[inline]
    pub fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        if let Some(last) = self.ranges.last_mut() {
            if start <= last.1 && end >= last.0 {
                last.0 = last.0.min(start);
                last.1 = last.1.max(end);
                return;
            }
        }
        self.ranges.push((start, end));
        if self.ranges.len() >= (2 * self.merged).max(1 << 16) {
            self.merge();
        }
    }

    /// Sorts the ranges added since the last merge, then merges them with the sorted
    /// ranges before them, coalescing overlapping or adjacent ones.
    fn merge(&mut self) {
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(self.ranges.len());
        let (sorted, tail) = self.ranges.split_at_mut(self.merged);
        tail.sort_unstable();
        let (mut i, mut j) = (0, 0);
        while i < sorted.len() || j < tail.len() {
            let next = if j == tail.len() || (i < sorted.len() && sorted[i] <= tail[j]) {
                i += 1;
                sorted[i - 1]
            } else {
                j += 1;
                tail[j - 1]
            };
            match out.last_mut() {
                Some(last) if next.0 <= last.1 => last.1 = last.1.max(next.1),
                _ => out.push(next),
            }
        }
        self.merged = out.len();
        self.ranges = out;
    }

    /// The finished set, with each range's rank (keys before it).
    pub fn finish(mut self) -> Extents {
        self.merge();
        let mut bases = Vec::with_capacity(self.ranges.len());
        let mut total = 0u64;
        for &(s, e) in &self.ranges {
            bases.push(total);
            total += e - s;
        }
        Extents {
            ranges: self.ranges,
            bases,
            total,
            last: 0,
        }
    }
}

/// Sorted, disjoint, non-adjacent ranges of keys, and the dense rank of every key.
#[derive(Clone, Debug, Default)]
pub struct Extents {
    ranges: Vec<(u64, u64)>,
    bases: Vec<u64>,
    total: u64,
    /// The range of the last lookup: consecutive requests usually hit it again.
    last: usize,
}

impl Extents {
    /// Number of keys in the set.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// Position of `key` among the keys of the set, in increasing order; None if absent.
    /// Keys below `key` in the set: the rank `key` has, or would have.
    pub fn count_below(&self, key: u64) -> u64 {
        let i = self.ranges.partition_point(|&(_, e)| e <= key);
        match self.ranges.get(i) {
            Some(&(s, _)) => self.bases[i] + key.saturating_sub(s),
            None => self.total,
        }
    }

    /// The largest key of the set (None: empty).
    pub fn last_key(&self) -> Option<u64> {
        self.ranges.last().map(|&(_, e)| e - 1)
    }

    /// The keys of one range have consecutive ranks.
    #[inline]
    pub fn rank(&mut self, key: u64) -> Option<u64> {
        if let Some(&(s, e)) = self.ranges.get(self.last) {
            if key >= s && key < e {
                return Some(self.bases[self.last] + (key - s));
            }
        }
        let i = self.ranges.partition_point(|&(_, e)| e <= key);
        let &(s, _) = self.ranges.get(i)?;
        if key < s {
            return None;
        }
        self.last = i;
        Some(self.bases[i] + (key - s))
    }

    /// The set with every key mapped through `f`, merged again (for example with the
    /// device bits cleared).
    pub fn map(&self, f: impl Fn(u64) -> u64) -> Extents {
        let mut set = ExtentSet::default();
        for &(s, e) in &self.ranges {
            let start = f(s);
            set.insert(start, start + (e - s));
        }
        set.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn ranks_are_dense_in_key_order() {
        let mut set = ExtentSet::default();
        set.insert(100, 104);
        set.insert(10, 12);
        set.insert(103, 106);
        set.insert(12, 13);
        let mut x = set.finish();
        assert_eq!(x.ranges(), [(10, 13), (100, 106)]);
        assert_eq!(x.total(), 9);
        assert_eq!(x.rank(10), Some(0));
        assert_eq!(x.rank(12), Some(2));
        assert_eq!(x.rank(100), Some(3));
        assert_eq!(x.rank(105), Some(8));
        assert_eq!(x.rank(13), None);
        assert_eq!(x.rank(5), None);
        assert_eq!(x.rank(106), None);
    }

    #[test]
    fn keys_below_count_every_key_of_the_set_under_it() {
        let mut set = ExtentSet::default();
        set.insert(10, 13);
        set.insert(100, 106);
        let x = set.finish();
        for (key, below) in [
            (0, 0),
            (10, 0),
            (12, 2),
            (13, 3),
            (50, 3),
            (100, 3),
            (104, 7),
        ] {
            assert_eq!(x.count_below(key), below, "{key}");
        }
        assert_eq!(x.count_below(106), 9);
        assert_eq!(x.count_below(u64::MAX), 9);
        assert_eq!(x.last_key(), Some(105));
        assert_eq!(ExtentSet::default().finish().last_key(), None);
    }

    proptest! {
        #[test]
        fn matches_a_set_of_keys(ranges in proptest::collection::vec((0u64..2000, 0u64..40), 0..400)) {
            let mut set = ExtentSet::default();
            let mut keys = BTreeSet::new();
            for &(s, n) in &ranges {
                set.insert(s, s + n);
                keys.extend(s..s + n);
            }
            let mut x = set.finish();
            prop_assert_eq!(x.total(), keys.len() as u64);
            for (rank, &k) in keys.iter().enumerate() {
                prop_assert_eq!(x.rank(k), Some(rank as u64));
            }
            for k in 0..2100 {
                if !keys.contains(&k) {
                    prop_assert_eq!(x.rank(k), None);
                }
            }
        }
    }
}
