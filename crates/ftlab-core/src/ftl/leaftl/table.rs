//! The log-structured mapping table of one group of 256 logical pages, and its conflict
//! resolution buffer (CRB).
//!
//! A group holds levels of segments; level 0 is the newest. Within a level, segments are
//! sorted by their first offset and their ranges `[x1, x2]` do not overlap, so a level is
//! searched by bisection. A lookup walks the levels top-down and the first segment whose
//! members include the offset wins: newer segments shadow older ones without rewriting them.
//!
//! Membership: a consecutive segment owns `x1, x1 + stride, ..., x2`; an irregular segment
//! owns exactly the offsets listed for it in the CRB. The CRB is the paper's structure: per
//! group, the member offsets (1 byte each) of the irregular segments, one sorted list per
//! segment, concatenated in order of their first offset; it never holds an offset twice
//! (a new irregular segment takes its offsets away from older lists), so it has at most 256
//! entries and its lists are delimited by the segments' first offsets. The simulator keeps
//! each list as a 256-bit set; memory is charged per entry (see `Stats`).
//!
//! Insertion (overlap resolution): a new segment goes to level 0. Level-0 segments whose
//! range overlaps it lose the offsets it owns: one that loses all of them is dropped, one
//! whose remaining members no longer overlap it is trimmed in place, and any other is moved
//! to a new level right below level 0 (the reference's non-recursive mode). Compaction
//! removes from every segment the offsets owned by segments above it (dropping segments
//! left empty); promotion moves each segment to the highest level where nothing in between
//! overlaps it, and drops empty levels.

use super::plr::{bounds, count, has, is_empty, Learned, Members, Seg};

/// Segment and CRB counts over all resident groups, kept up to date incrementally.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub single: u64,
    pub multi: u64,
    /// By kind: [accurate consecutive, accurate irregular, approximate consecutive,
    /// approximate irregular].
    pub kinds: [u64; 4],
    /// Offsets listed in the CRB (1 byte each in the paper's layout).
    pub crb_entries: u64,
    /// The reference's alternative charge for irregular segments: 1 byte per boundary
    /// between runs of set and clear bits inside the segment's membership bitmap.
    pub crb_runs: u64,
}

fn kind(s: &Seg) -> usize {
    (!s.accurate as usize) * 2 + (!s.is_consecutive()) as usize
}

/// Bit boundaries strictly inside `x1..=x2` of a membership bitmap (the reference counts
/// positions i in 1..n-2 of the bitmap where bit i differs from bit i - 1).
fn run_boundaries(m: &Members, x1: u8, x2: u8) -> u64 {
    let (lo, hi) = (x1 as u32 + 1, x2 as u32); // positions lo..hi (exclusive)
    if hi <= lo {
        return 0;
    }
    let mut n = 0;
    for w in 0..4 {
        // Bit i of `changed` is set when bit i differs from bit i - 1.
        let carry = if w == 0 { 0 } else { m[w - 1] >> 63 };
        let changed = m[w] ^ (m[w] << 1 | carry);
        let base = w as u32 * 64;
        let from = lo.clamp(base, base + 64) - base;
        let to = hi.clamp(base, base + 64) - base;
        if to > from {
            let mask = (u64::MAX >> (64 - (to - from))) << from;
            n += (changed & mask).count_ones() as u64;
        }
    }
    n
}

impl Stats {
    fn account(&mut self, s: &Seg, crb: &[Members], add: bool) {
        let d = |v: &mut u64, n: u64| {
            if add {
                *v += n
            } else {
                *v -= n
            }
        };
        if s.is_single() {
            d(&mut self.single, 1);
        } else {
            d(&mut self.multi, 1);
        }
        d(&mut self.kinds[kind(s)], 1);
        if !s.is_consecutive() {
            let m = &crb[s.crb as usize];
            d(&mut self.crb_entries, count(m) as u64);
            d(&mut self.crb_runs, run_boundaries(m, s.x1, s.x2));
        }
    }

    pub fn segments(&self) -> u64 {
        self.single + self.multi
    }
}

/// What removing members did to a segment.
enum Shrunk {
    Gone,
    Changed,
    Kept,
}

#[derive(Clone, Debug, Default)]
pub struct Group {
    pub levels: Vec<Vec<Seg>>,
    crb: Vec<Members>,
    crb_free: Vec<u16>,
}

/// Index of the first segment of a (sorted, disjoint) level that ends at or after `x`.
#[inline]
fn first_ending_from(level: &[Seg], x: u8) -> usize {
    level.partition_point(|s| s.x2 < x)
}

fn level_overlaps(level: &[Seg], x1: u8, x2: u8) -> bool {
    let i = first_ending_from(level, x1);
    i < level.len() && level[i].x1 <= x2
}

impl Group {
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    pub fn level_count(&self) -> usize {
        self.levels.len()
    }

    #[inline]
    fn owns(&self, s: &Seg, x: u8) -> bool {
        if x < s.x1 || x > s.x2 {
            return false;
        }
        if s.stride != 0 {
            (x - s.x1).is_multiple_of(s.stride)
        } else {
            has(&self.crb[s.crb as usize], x)
        }
    }

    /// The segment owning offset `x` and its level (0-based), top-down, first match.
    #[inline]
    pub fn lookup(&self, x: u8) -> Option<(Seg, usize)> {
        for (d, level) in self.levels.iter().enumerate() {
            let i = level.partition_point(|s| s.x1 <= x);
            if i == 0 {
                continue;
            }
            let s = &level[i - 1];
            if self.owns(s, x) {
                return Some((*s, d));
            }
        }
        None
    }

    pub fn members(&self, s: &Seg) -> Members {
        if s.stride != 0 {
            s.progression()
        } else {
            self.crb[s.crb as usize]
        }
    }

    /// Every segment, top level first (for tests and serialisation).
    pub fn segments(&self) -> impl Iterator<Item = (usize, &Seg)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(d, l)| l.iter().map(move |s| (d, s)))
    }

    fn crb_alloc(&mut self, m: Members) -> u16 {
        match self.crb_free.pop() {
            Some(slot) => {
                self.crb[slot as usize] = m;
                slot
            }
            None => {
                self.crb.push(m);
                (self.crb.len() - 1) as u16
            }
        }
    }

    /// Restricts segment `s` to `remaining` (a subset of its members). Accounting is the
    /// caller's: it has removed `s` before and adds it back unless it is gone.
    fn shrink(&mut self, s: &mut Seg, remaining: &Members) -> Shrunk {
        let Some((lo, hi)) = bounds(remaining) else {
            if s.stride == 0 {
                self.crb_free.push(s.crb);
            }
            return Shrunk::Gone;
        };
        if s.stride == 0 {
            self.crb[s.crb as usize] = *remaining;
            (s.x1, s.x2) = (lo, hi);
            return Shrunk::Changed;
        }
        let trimmed = Seg {
            x1: lo,
            x2: hi,
            ..*s
        };
        if lo >= s.x1 && (lo - s.x1).is_multiple_of(s.stride) && trimmed.progression() == *remaining
        {
            *s = trimmed;
            Shrunk::Changed
        } else {
            Shrunk::Kept
        }
    }

    /// Takes the offsets in `taken` away from the segment at `levels[d][i]`; returns
    /// whether it still exists.
    fn take_from(&mut self, d: usize, i: usize, taken: &Members, stats: &mut Stats) -> bool {
        let mut s = self.levels[d][i];
        let m = self.members(&s);
        let overlap = [
            m[0] & taken[0],
            m[1] & taken[1],
            m[2] & taken[2],
            m[3] & taken[3],
        ];
        if is_empty(&overlap) {
            return true;
        }
        let remaining = [
            m[0] & !taken[0],
            m[1] & !taken[1],
            m[2] & !taken[2],
            m[3] & !taken[3],
        ];
        stats.account(&s, &self.crb, false);
        match self.shrink(&mut s, &remaining) {
            Shrunk::Gone => {
                self.levels[d].remove(i);
                false
            }
            Shrunk::Changed | Shrunk::Kept => {
                self.levels[d][i] = s;
                stats.account(&s, &self.crb, true);
                true
            }
        }
    }

    /// Inserts freshly learned segments (disjoint, sorted by offset) on top.
    pub fn insert(&mut self, learned: &[Learned], stats: &mut Stats) {
        if self.levels.is_empty() {
            self.levels.push(Vec::new());
        }
        let mut pushed_down = false;
        for l in learned {
            let mut seg = l.seg;
            let taken = l.members;
            if seg.stride == 0 {
                // The CRB never lists an offset twice: older lists give these up.
                for d in 0..self.levels.len() {
                    let mut i = 0;
                    while i < self.levels[d].len() {
                        let s = self.levels[d][i];
                        if s.stride == 0
                            && s.overlaps(seg.x1, seg.x2)
                            && !self.take_from(d, i, &taken, stats)
                        {
                            continue;
                        }
                        i += 1;
                    }
                }
            }
            let level = &self.levels[0];
            let start = first_ending_from(level, seg.x1);
            let end = level.partition_point(|s| s.x1 <= seg.x2);
            for i in (start..end).rev() {
                if self.take_from(0, i, &taken, stats) && self.levels[0][i].overlaps(seg.x1, seg.x2)
                {
                    // Down to a new level right below level 0, created by the first conflict
                    // of this insertion (conflicts come from level 0, so they are disjoint).
                    let old = self.levels[0].remove(i);
                    if !pushed_down {
                        self.levels.insert(1, Vec::new());
                        pushed_down = true;
                    }
                    let at = self.levels[1].partition_point(|s| s.x1 < old.x1);
                    self.levels[1].insert(at, old);
                }
            }
            if seg.stride == 0 {
                seg.crb = self.crb_alloc(taken);
            }
            let at = self.levels[0].partition_point(|s| s.x1 < seg.x1);
            self.levels[0].insert(at, seg);
            stats.account(&seg, &self.crb, true);
        }
        self.levels.retain(|l| !l.is_empty());
    }

    /// Forgets offset `x` (TRIM): every segment owning it, at any level, gives it up.
    pub fn remove_offset(&mut self, x: u8, stats: &mut Stats) {
        for d in 0..self.levels.len() {
            let i = self.levels[d].partition_point(|s| s.x1 <= x);
            if i == 0 {
                continue;
            }
            let s = self.levels[d][i - 1];
            if !self.owns(&s, x) {
                continue;
            }
            if s.stride != 0 && x != s.x1 && x != s.x2 {
                // Split a consecutive segment around the hole.
                stats.account(&s, &self.crb, false);
                let left = Seg {
                    x2: x - s.stride,
                    ..s
                };
                let right = Seg {
                    x1: x + s.stride,
                    ..s
                };
                self.levels[d][i - 1] = left;
                self.levels[d].insert(i, right);
                stats.account(&left, &self.crb, true);
                stats.account(&right, &self.crb, true);
                continue;
            }
            let mut taken = [0; 4];
            super::plr::set(&mut taken, x);
            self.take_from(d, i - 1, &taken, stats);
        }
        self.levels.retain(|l| !l.is_empty());
    }

    /// Removes from every segment the offsets owned by segments above it.
    pub fn compact(&mut self, stats: &mut Stats) {
        let mut covered: Members = [0; 4];
        for d in 0..self.levels.len() {
            if d > 0 {
                let mut i = 0;
                while i < self.levels[d].len() {
                    if self.take_from(d, i, &covered, stats) {
                        i += 1;
                    }
                }
            }
            for s in &self.levels[d] {
                let m = self.members(s);
                for (c, w) in covered.iter_mut().zip(m) {
                    *c |= w;
                }
            }
        }
        self.levels.retain(|l| !l.is_empty());
    }

    /// Moves every segment to the highest level where nothing in between overlaps it.
    pub fn promote(&mut self) {
        for d in 1..self.levels.len() {
            let mut i = 0;
            while i < self.levels[d].len() {
                let s = self.levels[d][i];
                let mut t = d;
                while t > 0 && !level_overlaps(&self.levels[t - 1], s.x1, s.x2) {
                    t -= 1;
                }
                if t < d {
                    self.levels[d].remove(i);
                    let at = self.levels[t].partition_point(|o| o.x1 < s.x1);
                    self.levels[t].insert(at, s);
                } else {
                    i += 1;
                }
            }
        }
        self.levels.retain(|l| !l.is_empty());
    }

    /// Removes every segment from the statistics (the group leaves DRAM or is dropped).
    pub fn unaccount(&self, stats: &mut Stats) {
        for (_, s) in self.segments() {
            stats.account(s, &self.crb, false);
        }
    }

    /// Adds every segment to the statistics (the group enters DRAM).
    pub fn account(&self, stats: &mut Stats) {
        for (_, s) in self.segments() {
            stats.account(s, &self.crb, true);
        }
    }

    /// Bytes of the group in the 8-byte encoding plus its CRB entries (its size as a
    /// translation page).
    pub fn encoded_bytes(&self) -> u64 {
        let mut bytes = 0;
        for (_, s) in self.segments() {
            bytes += 8;
            if s.stride == 0 {
                bytes += count(&self.crb[s.crb as usize]) as u64;
            }
        }
        bytes
    }

    /// Checks the structural invariants (tests and debug builds).
    pub fn check(&self) -> Result<(), String> {
        let mut crb_seen: Members = [0; 4];
        for (d, level) in self.levels.iter().enumerate() {
            if level.is_empty() {
                return Err(format!("level {d} is empty"));
            }
            for w in level.windows(2) {
                if w[0].x2 >= w[1].x1 {
                    return Err(format!("level {d}: {:?} overlaps {:?}", w[0], w[1]));
                }
            }
            for s in level {
                let m = self.members(s);
                if bounds(&m) != Some((s.x1, s.x2)) {
                    return Err(format!(
                        "level {d}: {s:?} does not start and end on members"
                    ));
                }
                if s.stride == 0 {
                    for (c, w) in crb_seen.iter_mut().zip(m) {
                        if *c & w != 0 {
                            return Err(format!("offsets listed twice in the CRB ({s:?})"));
                        }
                        *c |= w;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::plr::{set, Codec, Learner, Point};
    use super::*;

    /// A reference model: offset -> page, applied in order.
    fn apply(
        group: &mut Group,
        stats: &mut Stats,
        model: &mut [Option<u32>; 256],
        gamma: u32,
        batch: &[(u8, u32)],
    ) {
        let codec = Codec::for_pages(1 << 20).unwrap();
        let learner = Learner::new(gamma, codec);
        let pts: Vec<Point> = batch
            .iter()
            .map(|&(x, y)| Point {
                x,
                y,
                run_lo: batch[0].1,
                run_hi: batch[batch.len() - 1].1,
            })
            .collect();
        let mut learned = Vec::new();
        learner.learn(&pts, &mut learned);
        group.insert(&learned, stats);
        for &(x, y) in batch {
            model[x as usize] = Some(y);
        }
    }

    fn verify(group: &Group, model: &[Option<u32>; 256], gamma: u32) {
        group.check().unwrap();
        for x in 0..=255u8 {
            match (group.lookup(x), model[x as usize]) {
                (None, None) => {}
                (Some((s, _)), Some(y)) => {
                    let p = s.predict(x) as i64;
                    assert!(
                        (p - y as i64).abs() <= gamma as i64,
                        "offset {x}: {p} vs {y}"
                    );
                    if s.accurate {
                        assert_eq!(p, y as i64);
                    }
                }
                (got, want) => panic!("offset {x}: table {got:?}, model {want:?}"),
            }
        }
    }

    #[test]
    fn run_boundaries_match_a_direct_count() {
        let mut m = [0u64; 4];
        for x in [3u8, 4, 5, 9, 63, 64, 65, 127, 200, 201, 255] {
            set(&mut m, x);
        }
        for (x1, x2) in [(3u8, 255u8), (3, 9), (63, 65), (64, 201), (255, 255)] {
            let direct = (x1 as u32 + 1..x2 as u32)
                .filter(|&x| has(&m, x as u8) != has(&m, x as u8 - 1))
                .count() as u64;
            assert_eq!(run_boundaries(&m, x1, x2), direct, "{x1}..{x2}");
        }
    }

    fn recount(group: &Group) -> Stats {
        let mut s = Stats::default();
        group.account(&mut s);
        s
    }

    #[test]
    fn newer_segments_shadow_older_ones() {
        let mut g = Group::default();
        let mut stats = Stats::default();
        let mut model = [None; 256];
        let full: Vec<(u8, u32)> = (0..=255).map(|x| (x as u8, 1000 + x as u32)).collect();
        apply(&mut g, &mut stats, &mut model, 0, &full);
        assert_eq!(g.level_count(), 1);
        // Rewrite the middle: the old segment stays below.
        let mid: Vec<(u8, u32)> = (100..120).map(|x| (x as u8, 5000 + x as u32)).collect();
        apply(&mut g, &mut stats, &mut model, 0, &mid);
        assert_eq!(g.level_count(), 2);
        verify(&g, &model, 0);
        assert_eq!(stats, recount(&g));
        // Rewrite the head: trimmed in place at level 0? No: the full segment is at level 1.
        let head: Vec<(u8, u32)> = (0..10).map(|x| (x as u8, 9000 + x as u32)).collect();
        apply(&mut g, &mut stats, &mut model, 0, &head);
        verify(&g, &model, 0);
        g.compact(&mut stats);
        g.promote();
        verify(&g, &model, 0);
        assert_eq!(stats, recount(&g));
    }

    #[test]
    fn trim_splits_and_forgets() {
        let mut g = Group::default();
        let mut stats = Stats::default();
        let mut model = [None; 256];
        let full: Vec<(u8, u32)> = (0..50).map(|x| (x as u8, 1000 + x as u32)).collect();
        apply(&mut g, &mut stats, &mut model, 0, &full);
        for x in [0u8, 49, 20, 21, 30] {
            g.remove_offset(x, &mut stats);
            model[x as usize] = None;
            verify(&g, &model, 0);
            assert_eq!(stats, recount(&g));
        }
    }

    #[test]
    fn crb_holds_each_offset_once() {
        let mut g = Group::default();
        let mut stats = Stats::default();
        let mut model = [None; 256];
        let a: Vec<(u8, u32)> = [0u8, 1, 3, 4, 7, 8, 11]
            .iter()
            .enumerate()
            .map(|(i, &x)| (x, 100 + i as u32))
            .collect();
        apply(&mut g, &mut stats, &mut model, 4, &a);
        let b: Vec<(u8, u32)> = [1u8, 2, 4, 6, 7, 9]
            .iter()
            .enumerate()
            .map(|(i, &x)| (x, 200 + i as u32))
            .collect();
        apply(&mut g, &mut stats, &mut model, 4, &b);
        verify(&g, &model, 4);
        assert_eq!(stats, recount(&g));
        let mut all = [0u64; 4];
        for x in [0u8, 1, 2, 3, 4, 6, 7, 8, 9, 11] {
            set(&mut all, x);
        }
        assert_eq!(stats.crb_entries, count(&all) as u64);
    }

    #[test]
    fn random_histories_match_the_model() {
        let mut state = 99u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for gamma in [0u32, 1, 4, 16] {
            let mut g = Group::default();
            let mut stats = Stats::default();
            let mut model = [None; 256];
            let mut page = 0u32;
            for round in 0..300 {
                match next() % 10 {
                    0 => {
                        let x = (next() % 256) as u8;
                        g.remove_offset(x, &mut stats);
                        model[x as usize] = None;
                    }
                    1 => {
                        g.compact(&mut stats);
                        g.promote();
                    }
                    _ => {
                        let start = (next() % 256) as u32;
                        let len = 1 + next() % 64;
                        let step = 1 + next() % 3;
                        let mut xs: Vec<u8> = (0..len)
                            .map(|i| {
                                start + i as u32 * step as u32 + (next() % 2) as u32 * (round % 2)
                            })
                            .filter(|&x| x < 256)
                            .map(|x| x as u8)
                            .collect();
                        xs.sort_unstable();
                        xs.dedup();
                        let batch: Vec<(u8, u32)> = xs
                            .iter()
                            .enumerate()
                            .map(|(i, &x)| (x, page + i as u32))
                            .collect();
                        page += xs.len() as u32 + 7;
                        if !batch.is_empty() {
                            apply(&mut g, &mut stats, &mut model, gamma, &batch);
                        }
                    }
                }
                verify(&g, &model, gamma);
                assert_eq!(stats, recount(&g), "gamma {gamma} round {round}");
            }
        }
    }
}
