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

use super::plr::{bounds, count, has, Codec, Learned, Members, Seg};

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

/// The levels of a group, stored contiguously (level 0 first): `starts[d]..starts[d + 1]`
/// are the segments of level `d`. One allocation per group keeps lookups, which walk the
/// levels top-down, in cache.
#[derive(Clone, Debug, Default)]
pub struct Levels {
    segs: Vec<Seg>,
    /// The first offset of every segment, beside `segs`: lookups bisect these bytes.
    x1s: Vec<u8>,
    starts: Vec<u16>,
    /// Per level: first offset of its first segment and last offset of its last one (an
    /// empty level: (1, 0)), side by side so that a lookup skips levels in one cache line.
    spans: Vec<(u8, u8)>,
}

impl Levels {
    #[inline]
    pub fn count(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    #[inline]
    pub fn level(&self, d: usize) -> &[Seg] {
        &self.segs[self.starts[d] as usize..self.starts[d + 1] as usize]
    }

    #[inline]
    fn get(&self, d: usize, i: usize) -> Seg {
        self.segs[self.starts[d] as usize + i]
    }

    /// The span of level `d`, for lookups.
    #[inline]
    pub fn span(&self, d: usize) -> (u8, u8) {
        self.spans[d]
    }

    fn refresh(&mut self, d: usize) {
        let (lo, hi) = (self.starts[d] as usize, self.starts[d + 1] as usize);
        self.spans[d] = if lo == hi {
            (1, 0)
        } else {
            (self.segs[lo].x1, self.segs[hi - 1].x2)
        };
    }

    #[inline]
    fn set(&mut self, d: usize, i: usize, s: Seg) {
        let at = self.starts[d] as usize + i;
        self.segs[at] = s;
        self.x1s[at] = s.x1;
        self.refresh(d);
    }

    fn insert(&mut self, d: usize, i: usize, s: Seg) {
        self.segs.insert(self.starts[d] as usize + i, s);
        self.x1s.insert(self.starts[d] as usize + i, s.x1);
        for e in &mut self.starts[d + 1..] {
            *e += 1;
        }
        self.refresh(d);
    }

    fn remove(&mut self, d: usize, i: usize) -> Seg {
        for e in &mut self.starts[d + 1..] {
            *e -= 1;
        }
        let s = self.segs.remove(self.starts[d] as usize + i);
        self.x1s.remove(self.starts[d] as usize + i);
        self.refresh(d);
        s
    }

    /// Replaces segment `i` of level `d` by `pieces`.
    fn splice(&mut self, d: usize, i: usize, pieces: impl ExactSizeIterator<Item = Seg>) {
        let at = self.starts[d] as usize + i;
        let n = pieces.len();
        self.segs.splice(at..=at, pieces);
        let x1s: Vec<u8> = self.segs[at..at + n].iter().map(|s| s.x1).collect();
        self.x1s.splice(at..=at, x1s);
        for e in &mut self.starts[d + 1..] {
            *e = *e + n as u16 - 1;
        }
        self.refresh(d);
    }

    /// Inserts an empty level at index `d`.
    fn new_level(&mut self, d: usize) {
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        let at = self.starts[d];
        self.starts.insert(d, at);
        self.spans.insert(d, (1, 0));
    }

    fn drop_empty(&mut self) {
        self.starts.dedup();
        if self.starts.len() == 1 {
            self.starts.clear();
        }
        self.spans.clear();
        self.spans.resize(self.count(), (1, 0));
        for d in 0..self.count() {
            self.refresh(d);
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (usize, &Seg)> {
        (0..self.count()).flat_map(move |d| self.level(d).iter().map(move |s| (d, s)))
    }
}

#[derive(Clone, Debug, Default)]
pub struct Group {
    pub levels: Levels,
    crb: Vec<Members>,
    crb_free: Vec<u16>,
    /// Levels left by the last compaction (see `crowded`).
    compacted_levels: usize,
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
        self.levels.count() == 0
    }

    pub fn level_count(&self) -> usize {
        self.levels.count()
    }

    /// More than `max_levels` levels, and at least `max_levels / 2` more than the last
    /// compaction left: compaction is due (a group whose live segments overlap too much to
    /// go below the limit is not compacted again after every insertion).
    pub fn crowded(&self, max_levels: usize) -> bool {
        self.levels.count() > max_levels.max(self.compacted_levels + max_levels / 2)
    }

    #[inline]
    fn owns(&self, s: &Seg, x: u8) -> bool {
        if x < s.x1 || x > s.x2 {
            return false;
        }
        match s.stride {
            1 => true,
            0 => has(&self.crb[s.crb as usize], x),
            stride => (x - s.x1).is_multiple_of(stride),
        }
    }

    /// The segment owning offset `x` and its level (0-based), top-down, first match.
    #[inline]
    pub fn lookup(&self, x: u8) -> Option<(Seg, usize)> {
        let segs = &self.levels.segs;
        let starts = &self.levels.starts;
        for (d, &(first, last)) in self.levels.spans.iter().enumerate() {
            // Most levels are short: skip those whose span misses x without searching.
            if x < first || x > last {
                continue;
            }
            let (lo, hi) = (starts[d] as usize, starts[d + 1] as usize);
            let i = lo + self.levels.x1s[lo..hi].partition_point(|&a| a <= x);
            let s = &segs[i - 1];
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

    /// The group as its translation pages hold it: the number of levels (2 bytes), then,
    /// top level first, each level's segment count (2 bytes) and segments (8 bytes each,
    /// [`Codec::encode`]), then the member list of each irregular segment in the same order
    /// (its member count less one, 1 byte, and the offsets, 1 byte each: the CRB). All
    /// little-endian.
    pub fn encode(&self, codec: &Codec, out: &mut Vec<u8>) {
        let levels = self.levels.count();
        out.extend_from_slice(&(levels as u16).to_le_bytes());
        for d in 0..levels {
            let level = self.levels.level(d);
            out.extend_from_slice(&(level.len() as u16).to_le_bytes());
            for s in level {
                out.extend_from_slice(&codec.encode(s));
            }
        }
        for (_, s) in self.segments() {
            if !s.is_consecutive() {
                let m = self.members(s);
                let offsets: Vec<u8> = (0..=255u8).filter(|&x| has(&m, x)).collect();
                out.push((offsets.len() - 1) as u8);
                out.extend_from_slice(&offsets);
            }
        }
    }

    /// Every segment, top level first (for tests and serialisation).
    pub fn segments(&self) -> impl Iterator<Item = (usize, &Seg)> {
        self.levels.iter()
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

    /// Restricts the segment at `levels[d][i]` to the members not in `taken`; returns how
    /// many segments now stand in its place (at `i..`, disjoint, within its old range).
    ///
    /// An irregular segment keeps its remaining members in its CRB list. A consecutive one
    /// is trimmed when what remains is still a progression; otherwise, with `restructure`,
    /// it becomes whichever is cheaper in memory (`charge_runs` selects the CRB formula):
    /// its maximal consecutive pieces, or one irregular segment listing its members in the
    /// CRB (the caller then owes the CRB's uniqueness below it). Without `restructure` it is
    /// kept whole: the offsets it loses are shadowed anyway.
    fn take_from(
        &mut self,
        d: usize,
        i: usize,
        taken: &Members,
        restructure: Option<bool>,
        stats: &mut Stats,
    ) -> usize {
        let mut s = self.levels.get(d, i);
        let m = self.members(&s);
        let remaining = [
            m[0] & !taken[0],
            m[1] & !taken[1],
            m[2] & !taken[2],
            m[3] & !taken[3],
        ];
        if remaining == m {
            return 1;
        }
        stats.account(&s, &self.crb, false);
        let Some((lo, hi)) = bounds(&remaining) else {
            if s.stride == 0 {
                self.crb_free.push(s.crb);
            }
            self.levels.remove(d, i);
            return 0;
        };
        if s.stride == 0 {
            self.crb[s.crb as usize] = remaining;
            (s.x1, s.x2) = (lo, hi);
            self.levels.set(d, i, s);
            stats.account(&s, &self.crb, true);
            return 1;
        }
        // Maximal runs of the progression among the remaining members.
        let mut pieces: Vec<(u8, u8)> = Vec::new();
        let mut x = s.x1 as u32;
        while x <= s.x2 as u32 {
            if has(&remaining, x as u8) {
                match pieces.last_mut() {
                    Some(p) if p.1 as u32 + s.stride as u32 == x => p.1 = x as u8,
                    _ => pieces.push((x as u8, x as u8)),
                }
            }
            x += s.stride as u32;
        }
        let one = |(a, b): (u8, u8)| Seg { x1: a, x2: b, ..s };
        if pieces.len() == 1 || restructure.is_none() {
            let kept = if pieces.len() == 1 { one(pieces[0]) } else { s };
            self.levels.set(d, i, kept);
            stats.account(&kept, &self.crb, true);
            return 1;
        }
        let split_cost: u64 = pieces.iter().map(|p| if p.0 == p.1 { 5 } else { 8 }).sum();
        let crb_cost = if restructure == Some(true) {
            run_boundaries(&remaining, lo, hi)
        } else {
            count(&remaining) as u64
        };
        if split_cost <= 8 + crb_cost {
            self.levels.splice(d, i, pieces.iter().map(|&p| one(p)));
            for p in &pieces {
                stats.account(&one(*p), &self.crb, true);
            }
            pieces.len()
        } else {
            s.stride = 0;
            (s.x1, s.x2) = (lo, hi);
            s.crb = self.crb_alloc(remaining);
            self.levels.set(d, i, s);
            stats.account(&s, &self.crb, true);
            1
        }
    }

    /// Inserts freshly learned segments (disjoint, sorted by offset) on top.
    pub fn insert(&mut self, learned: &[Learned], stats: &mut Stats) {
        if self.levels.count() == 0 {
            self.levels.new_level(0);
        }
        let mut pushed_down = false;
        for l in learned {
            let mut seg = l.seg;
            let taken = l.members;
            if seg.stride == 0 {
                // The CRB never lists an offset twice: older lists give these up.
                for d in 0..self.levels.count() {
                    let mut i = first_ending_from(self.levels.level(d), seg.x1);
                    while i < self.levels.level(d).len() && self.levels.get(d, i).x1 <= seg.x2 {
                        if self.levels.get(d, i).stride != 0
                            || self.take_from(d, i, &taken, None, stats) == 1
                        {
                            i += 1;
                        }
                    }
                }
            }
            let level = self.levels.level(0);
            let start = first_ending_from(level, seg.x1);
            let end = level.partition_point(|s| s.x1 <= seg.x2);
            for i in (start..end).rev() {
                if self.take_from(0, i, &taken, None, stats) == 1
                    && self.levels.get(0, i).overlaps(seg.x1, seg.x2)
                {
                    // Down to level 1 if nothing there overlaps it (it stays above every
                    // older segment it overlaps), else to a new level right below level 0,
                    // created by the first such conflict of this insertion (conflicts come
                    // from level 0, so they are disjoint).
                    let old = self.levels.remove(0, i);
                    let fits = self.levels.count() > 1
                        && !level_overlaps(self.levels.level(1), old.x1, old.x2);
                    if !pushed_down && !fits {
                        self.levels.new_level(1);
                        pushed_down = true;
                    }
                    let at = self.levels.level(1).partition_point(|s| s.x1 < old.x1);
                    self.levels.insert(1, at, old);
                }
            }
            if seg.stride == 0 {
                seg.crb = self.crb_alloc(taken);
            }
            let at = self.levels.level(0).partition_point(|s| s.x1 < seg.x1);
            self.levels.insert(0, at, seg);
            stats.account(&seg, &self.crb, true);
        }
        self.levels.drop_empty();
    }

    /// Forgets offset `x` (TRIM): every segment owning it, at any level, gives it up.
    pub fn remove_offset(&mut self, x: u8, stats: &mut Stats) {
        for d in 0..self.levels.count() {
            let i = self.levels.level(d).partition_point(|s| s.x1 <= x);
            if i == 0 {
                continue;
            }
            let s = self.levels.get(d, i - 1);
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
                self.levels.set(d, i - 1, left);
                self.levels.insert(d, i, right);
                stats.account(&left, &self.crb, true);
                stats.account(&right, &self.crb, true);
                continue;
            }
            let mut taken = [0; 4];
            super::plr::set(&mut taken, x);
            self.take_from(d, i - 1, &taken, None, stats);
        }
        self.levels.drop_empty();
    }

    /// Removes from every segment the offsets owned by segments above it, restructuring
    /// partly shadowed consecutive segments (see `take_from`; `charge_runs` selects the
    /// CRB formula that decides between pieces and a CRB list).
    pub fn compact(&mut self, charge_runs: bool, stats: &mut Stats) {
        let mut covered: Members = [0; 4];
        for d in 0..self.levels.count() {
            if d > 0 {
                let mut i = 0;
                while i < self.levels.level(d).len() {
                    i += self.take_from(d, i, &covered, Some(charge_runs), stats);
                }
            }
            for s in self.levels.level(d) {
                let m = self.members(s);
                for (c, w) in covered.iter_mut().zip(m) {
                    *c |= w;
                }
            }
        }
        self.levels.drop_empty();
    }

    /// Compaction then promotion.
    pub fn reorganise(&mut self, charge_runs: bool, stats: &mut Stats) {
        self.compact(charge_runs, stats);
        self.promote();
        self.compacted_levels = self.levels.count();
    }

    /// Moves every segment to the highest level where nothing in between overlaps it.
    pub fn promote(&mut self) {
        for d in 1..self.levels.count() {
            let mut i = 0;
            while i < self.levels.level(d).len() {
                let s = self.levels.get(d, i);
                let mut t = d;
                while t > 0 && !level_overlaps(self.levels.level(t - 1), s.x1, s.x2) {
                    t -= 1;
                }
                if t < d {
                    self.levels.remove(d, i);
                    let at = self.levels.level(t).partition_point(|o| o.x1 < s.x1);
                    self.levels.insert(t, at, s);
                } else {
                    i += 1;
                }
            }
        }
        self.levels.drop_empty();
    }

    /// Puts the levels of `older` (this group's flash copy, which this group's segments
    /// shadow) below this group's levels. The caller reorganises the group next: that
    /// drops what is shadowed and restores the CRB's uniqueness.
    pub fn append_below(&mut self, older: &Group) {
        for d in 0..older.levels.count() {
            let at = self.levels.count();
            self.levels.new_level(at);
            for s in older.levels.level(d) {
                let mut s = *s;
                if s.stride == 0 {
                    s.crb = self.crb_alloc(older.crb[s.crb as usize]);
                }
                let end = self.levels.level(at).len();
                self.levels.insert(at, end, s);
            }
        }
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
        let l = &self.levels;
        if l.x1s.len() != l.segs.len() || l.segs.iter().zip(&l.x1s).any(|(s, &a)| s.x1 != a) {
            return Err("the first-offset index is out of step".into());
        }
        if l.spans.len() != l.count() {
            return Err("the level spans are out of step".into());
        }
        for d in 0..l.count() {
            let level = l.level(d);
            if level.first().map(|s| (s.x1, level[level.len() - 1].x2)) != Some(l.span(d)) {
                return Err(format!("level {d}: wrong span"));
            }
        }
        let mut crb_seen: Members = [0; 4];
        for d in 0..self.levels.count() {
            let level = self.levels.level(d);
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
        g.compact(false, &mut stats);
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
                        g.compact(round % 3 == 0, &mut stats);
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
