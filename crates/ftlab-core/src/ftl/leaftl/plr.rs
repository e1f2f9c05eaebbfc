//! Learning: greedy piecewise linear regression with error bound γ over the sorted
//! (logical offset, physical page) points of one group, and the 8-byte segment encoding.
//!
//! The fit is the reference's streaming "shrinking cone" (leaftl.md section 3.1): the first
//! two points open a cone of lines that pass within γ of both, later points are accepted
//! while they lie strictly inside it and narrow it, and the emitted line has the mean slope
//! of the cone through the cones' intersection point. γ = 0 is learned with γ = 1e-4, as the
//! reference does, so that exactly collinear points share a segment.
//!
//! Then the line is quantised to what the 8-byte encoding can hold (a float16 slope and a
//! fixed-point intercept) and every point is checked again with the quantised line: the
//! segment ends before the first point whose prediction is more than γ off, or, for an
//! approximate segment, falls outside the program run the point was written in (so that
//! the predicted page is a programmed page whose OOB describes the same run). This makes
//! the error bound hold exactly, whatever the rounding.

/// A point to learn: the logical page's offset in its group and where it was programmed.
/// `run_lo..=run_hi` are the pages programmed in the same block by the same batch (the
/// pages whose OOB windows describe each other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    pub x: u8,
    pub y: u32,
    pub run_lo: u32,
    pub run_hi: u32,
}

/// Member offsets of a segment within its 256-page group.
pub type Members = [u64; 4];

#[inline]
pub fn has(m: &Members, x: u8) -> bool {
    m[(x >> 6) as usize] >> (x & 63) & 1 != 0
}

#[inline]
pub fn set(m: &mut Members, x: u8) {
    m[(x >> 6) as usize] |= 1 << (x & 63);
}

#[inline]
pub fn count(m: &Members) -> u32 {
    m.iter().map(|w| w.count_ones()).sum()
}

#[inline]
pub fn is_empty(m: &Members) -> bool {
    m.iter().all(|&w| w == 0)
}

/// The offsets `lo..=hi`.
pub fn range(lo: u8, hi: u8) -> Members {
    let mut m = [0; 4];
    let (lo, end) = (lo as u32, hi as u32 + 1);
    for (w, word) in m.iter_mut().enumerate() {
        let base = w as u32 * 64;
        let from = lo.clamp(base, base + 64) - base;
        let to = end.clamp(base, base + 64) - base;
        if to > from {
            *word = (u64::MAX >> (64 - (to - from))) << from;
        }
    }
    m
}

/// Lowest and highest member.
pub fn bounds(m: &Members) -> Option<(u8, u8)> {
    let lo = m.iter().enumerate().find(|(_, w)| **w != 0)?;
    let hi = m.iter().enumerate().rev().find(|(_, w)| **w != 0)?;
    Some((
        (lo.0 * 64 + lo.1.trailing_zeros() as usize) as u8,
        (hi.0 * 64 + 63 - hi.1.leading_zeros() as usize) as u8,
    ))
}

/// A learned segment: `prediction(x) = floor(k * x + b + 1/2)` for the members `x` (offsets
/// in the group) between `x1` and `x2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seg {
    /// The intercept at offset 0 and the slope, as encoded (a fixed-point number, see
    /// [`Codec`], and a float16, both exact in these types).
    pub b: f64,
    pub k: f32,
    pub x1: u8,
    pub x2: u8,
    /// Constant stride of the members (consecutive segment); 0 for an irregular segment,
    /// whose members are listed in the group's conflict resolution buffer.
    pub stride: u8,
    /// Every member is predicted exactly (no OOB verification needed).
    pub accurate: bool,
    /// Irregular segments: the slot of their member list in the group's CRB.
    pub crb: u16,
}

impl Seg {
    #[inline]
    pub fn predict(&self, x: u8) -> u32 {
        (self.k as f64 * x as f64 + self.b + 0.5).floor() as u32
    }

    #[inline]
    pub fn is_single(&self) -> bool {
        self.x1 == self.x2
    }

    #[inline]
    pub fn is_consecutive(&self) -> bool {
        self.stride != 0
    }

    #[inline]
    pub fn overlaps(&self, x1: u8, x2: u8) -> bool {
        self.x1 <= x2 && x1 <= self.x2
    }

    /// Members of a consecutive segment.
    pub fn progression(&self) -> Members {
        if self.stride == 1 {
            return range(self.x1, self.x2);
        }
        let mut m = [0; 4];
        let mut x = self.x1 as u32;
        while x <= self.x2 as u32 {
            set(&mut m, x as u8);
            x += self.stride as u32;
        }
        m
    }
}

/// Converts to IEEE 754 binary16, rounding to nearest, ties to even.
pub fn f16_from_f64(v: f64) -> u16 {
    let sign = if v.is_sign_negative() { 0x8000 } else { 0 };
    let a = v.abs();
    if a.is_nan() {
        return sign | 0x7e00;
    }
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    let exp = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    if exp < -14 {
        // Subnormal: a multiple of 2^-24 (1024 rounds up into the smallest normal).
        return sign | (a * 2f64.powi(24)).round_ties_even() as u16;
    }
    let mut exp = exp;
    let mut m = (a * 2f64.powi(10 - exp)).round_ties_even() as u32;
    if m == 2048 {
        m = 1024;
        exp += 1;
    }
    if exp > 15 {
        return sign | 0x7c00;
    }
    sign | (((exp + 15) as u16) << 10) | (m - 1024) as u16
}

pub fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    sign * match exp {
        0 => m * 2f64.powi(-24),
        31 if m == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1024.0 + m) * 2f64.powi(exp - 25),
    }
}

/// The 8-byte segment encoding and its fixed-point intercept.
///
/// Layout (little endian): byte 0 `S` = first offset in the group, byte 1 `L` = last minus
/// first offset, bytes 2-3 `K` = the slope as float16 whose sign bit (slopes of sorted
/// flushes are never negative) flags an approximate segment, bytes 4-7 `I` = bit 31 flags
/// an irregular segment (members in the CRB), bits 0-30 the intercept at offset 0 as a
/// signed fixed-point number with `frac_bits` fractional bits. `frac_bits` is chosen per
/// device so that any physical page address fits: 30 minus the address bits (at most 16);
/// the 2 TiB preset (2^29 pages) keeps 1 fractional bit. A float32 intercept, as a literal
/// reading of the paper would suggest, cannot address more than 2^24 pages exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Codec {
    pub frac_bits: u32,
}

const INTERCEPT_MAX: i64 = (1 << 30) - 1;
const INTERCEPT_MIN: i64 = -(1 << 30);

impl Codec {
    /// The codec for a device of `physical_pages`, or None when 31 bits cannot hold its
    /// page addresses (more than 2^30 pages).
    pub fn for_pages(physical_pages: u64) -> Option<Codec> {
        let bits = 64 - (physical_pages.max(2) - 1).leading_zeros();
        (bits <= 30).then(|| Codec {
            frac_bits: (30 - bits).min(16),
        })
    }

    pub fn quantise_intercept(&self, b: f64) -> i32 {
        let scaled = (b * (1u64 << self.frac_bits) as f64).round_ties_even();
        scaled.clamp(INTERCEPT_MIN as f64, INTERCEPT_MAX as f64) as i32
    }

    pub fn intercept_value(&self, i: i32) -> f64 {
        i as f64 / (1u64 << self.frac_bits) as f64
    }

    pub fn encode(&self, s: &Seg) -> [u8; 8] {
        let k = f16_from_f64(s.k as f64) | if s.accurate { 0 } else { 0x8000 };
        let intercept = self.quantise_intercept(s.b);
        let i = (intercept as u32 & 0x7fff_ffff) | if s.is_consecutive() { 0 } else { 1 << 31 };
        let mut out = [0; 8];
        out[0] = s.x1;
        out[1] = s.x2 - s.x1;
        out[2..4].copy_from_slice(&k.to_le_bytes());
        out[4..8].copy_from_slice(&i.to_le_bytes());
        out
    }

    /// Decodes a segment; the stride of a consecutive segment is `round(1 / K)` (1 for a
    /// single point). The CRB slot is not part of the encoding.
    pub fn decode(&self, bytes: [u8; 8]) -> Seg {
        let k_raw = u16::from_le_bytes([bytes[2], bytes[3]]);
        let i_raw = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        let k_bits = k_raw & 0x7fff;
        // Sign-extend the 31-bit intercept.
        let intercept = (((i_raw & 0x7fff_ffff) << 1) as i32) >> 1;
        let (x1, x2) = (bytes[0], bytes[0] + bytes[1]);
        let k = f16_to_f64(k_bits);
        let irregular = i_raw >> 31 != 0;
        let stride = if irregular {
            0
        } else if x1 == x2 {
            1
        } else {
            (1.0 / k).round() as u8
        };
        Seg {
            k: k as f32,
            b: self.intercept_value(intercept),
            x1,
            x2,
            stride,
            accurate: k_raw & 0x8000 == 0,
            crb: 0,
        }
    }
}

/// A learned segment with its member set.
#[derive(Clone, Copy, Debug)]
pub struct Learned {
    pub seg: Seg,
    pub members: Members,
}

#[derive(Clone, Copy, Debug)]
struct Line {
    k: f64,
    b: f64,
}

impl Line {
    fn through(x0: f64, y0: f64, x1: f64, y1: f64) -> Line {
        let k = (y1 - y0) / (x1 - x0);
        Line { k, b: y0 - k * x0 }
    }
    #[inline]
    fn at(&self, x: f64) -> f64 {
        self.k * x + self.b
    }
}

/// The greedy learner, reusable without allocating.
pub struct Learner {
    gamma: f64,
    gamma_int: u32,
    codec: Codec,
    across_runs: bool,
}

impl Learner {
    pub fn new(gamma: u32, codec: Codec) -> Learner {
        Learner {
            gamma: if gamma == 0 { 1e-4 } else { gamma as f64 },
            gamma_int: gamma,
            codec,
            across_runs: false,
        }
    }

    /// Lets a segment take points of several program runs as long as each point's
    /// prediction stays within its own run (an exact prediction always does): stripe
    /// placement, whose runs are chunks on different units that consecutive logical pages
    /// cross. Without it a segment ends where a run ends.
    pub fn across_runs(mut self, yes: bool) -> Learner {
        self.across_runs = yes;
        self
    }

    /// Learns `points` (sorted by offset, offsets distinct) into segments appended to `out`.
    pub fn learn(&self, points: &[Point], out: &mut Vec<Learned>) {
        let mut i = 0;
        while i < points.len() {
            let (n, (k, b)) = self.cone(&points[i..]);
            i += self.emit(&points[i..i + n], k, b, out);
        }
    }

    /// How many points from the start the cone accepts, and the line it ends with.
    fn cone(&self, p: &[Point]) -> (usize, (f64, f64)) {
        let g = self.gamma;
        let s0 = p[0];
        let (x0, y0) = (s0.x as f64, s0.y as f64);
        let other_run = |q: &Point| !self.across_runs && q.run_lo != s0.run_lo;
        if p.len() == 1 || other_run(&p[1]) {
            return (1, (0.0, y0));
        }
        let (x1, y1) = (p[1].x as f64, p[1].y as f64);
        let mut lower = Line::through(x0, y0 + g, x1, y1 - g);
        let mut upper = Line::through(x0, y0 - g, x1, y1 + g);
        // Both lines cross halfway between the two points.
        let (sx, sy) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
        let mut n = 2;
        for q in &p[2..] {
            let (x, y) = (q.x as f64, q.y as f64);
            if other_run(q) || !(y > lower.at(x) && y < upper.at(x)) {
                break;
            }
            if y + g < upper.at(x) {
                upper = Line::through(sx, sy, x, y + g);
            }
            if y - g > lower.at(x) {
                lower = Line::through(sx, sy, x, y - g);
            }
            n += 1;
        }
        let k = (lower.k + upper.k) / 2.0;
        (n, (k, sy - sx * k))
    }

    /// Quantises the line, keeps the longest prefix of `p` it predicts within bounds, and
    /// appends that segment; returns how many points it took.
    fn emit(&self, p: &[Point], k: f64, b: f64, out: &mut Vec<Learned>) -> usize {
        let quantised = if p.len() == 1 {
            None
        } else {
            let k_bits = f16_from_f64(k.max(0.0));
            let intercept = self.codec.quantise_intercept(b);
            Some((k_bits, intercept))
        };
        let mut taken = p.len();
        let mut accurate = true;
        if let Some((k_bits, intercept)) = quantised {
            let (kq, bq) = (f16_to_f64(k_bits), self.codec.intercept_value(intercept));
            for (j, q) in p.iter().enumerate() {
                let pred = (kq * q.x as f64 + bq + 0.5).floor();
                let err = (pred - q.y as f64).abs();
                let in_run = pred >= q.run_lo as f64 && pred <= q.run_hi as f64;
                if err > self.gamma_int as f64 || !in_run {
                    taken = j;
                    break;
                }
                accurate &= err == 0.0;
            }
        }
        if taken <= 1 {
            out.push(self.single(p[0]));
            return 1;
        }
        let (k_bits, intercept) = quantised.unwrap_or_default();
        let p = &p[..taken];
        let mut members = [0; 4];
        for q in p {
            set(&mut members, q.x);
        }
        let stride = p[1].x - p[0].x;
        let kq = f16_to_f64(k_bits);
        let regular = p.windows(2).all(|w| w[1].x - w[0].x == stride)
            && kq > 0.0
            && (1.0 / kq).round() == stride as f64;
        out.push(Learned {
            seg: Seg {
                k: kq as f32,
                b: self.codec.intercept_value(intercept),
                x1: p[0].x,
                x2: p[taken - 1].x,
                stride: if regular { stride } else { 0 },
                accurate,
                crb: 0,
            },
            members,
        });
        taken
    }

    fn single(&self, q: Point) -> Learned {
        let mut members = [0; 4];
        set(&mut members, q.x);
        let intercept = self.codec.quantise_intercept(q.y as f64);
        Learned {
            seg: Seg {
                k: 0.0,
                b: self.codec.intercept_value(intercept),
                x1: q.x,
                x2: q.x,
                stride: 1,
                accurate: true,
                crb: 0,
            },
            members,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(points: &[(u8, u32)]) -> Vec<Point> {
        points
            .iter()
            .map(|&(x, y)| Point {
                x,
                y,
                run_lo: 0,
                run_hi: 1 << 20,
            })
            .collect()
    }

    fn learn(gamma: u32, points: &[Point]) -> Vec<Learned> {
        let mut out = Vec::new();
        Learner::new(gamma, Codec::for_pages(1 << 20).unwrap()).learn(points, &mut out);
        out
    }

    /// Every point is a member of exactly one segment and predicted within gamma.
    fn check_bound(gamma: u32, points: &[Point], segs: &[Learned]) {
        for q in points {
            let owners: Vec<_> = segs.iter().filter(|l| has(&l.members, q.x)).collect();
            assert_eq!(owners.len(), 1, "point {q:?}");
            let s = &owners[0].seg;
            let err = (s.predict(q.x) as i64 - q.y as i64).unsigned_abs();
            assert!(
                err <= gamma as u64,
                "point {q:?} predicted {}",
                s.predict(q.x)
            );
            if s.accurate {
                assert_eq!(err, 0);
            }
            assert!(s.x1 <= q.x && q.x <= s.x2);
        }
    }

    #[test]
    fn f16_round_trip_and_rounding() {
        for v in [
            0.0,
            1.0,
            0.5,
            0.25,
            1.0 / 3.0,
            2.0,
            65504.0,
            6.0e-8,
            1e-5,
            0.999,
        ] {
            let h = f16_from_f64(v);
            let back = f16_to_f64(h);
            assert!(
                (back - v).abs() <= v.abs() * 2f64.powi(-11) + 2f64.powi(-25),
                "{v} -> {back}"
            );
            assert_eq!(f16_from_f64(back), h, "{v}");
        }
        assert_eq!(f16_from_f64(1.0), 0x3c00);
        assert_eq!(f16_from_f64(-2.0), 0xc000);
        assert_eq!(f16_from_f64(65520.0), 0x7c00);
        // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: to even.
        assert_eq!(f16_from_f64(1.0 + 2f64.powi(-11)), 0x3c00);
        assert_eq!(f16_from_f64(1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
    }

    #[test]
    fn sequential_run_is_one_accurate_consecutive_segment() {
        let pts = run(&(0..=255u32)
            .map(|x| (x as u8, 1000 + x))
            .collect::<Vec<_>>());
        let segs = learn(0, &pts);
        assert_eq!(segs.len(), 1);
        let s = segs[0].seg;
        assert!(s.accurate && s.stride == 1 && s.x1 == 0 && s.x2 == 255);
        check_bound(0, &pts, &segs);
    }

    #[test]
    fn strided_run_keeps_its_stride() {
        for stride in [2u32, 3, 5, 7] {
            let pts = run(&(0..(256 / stride))
                .map(|i| ((i * stride) as u8, 77 + i))
                .collect::<Vec<_>>());
            let segs = learn(0, &pts);
            assert_eq!(segs.len(), 1, "stride {stride}");
            assert_eq!(segs[0].seg.stride as u32, stride);
            check_bound(0, &pts, &segs);
        }
    }

    #[test]
    fn gamma_zero_splits_irregular_gaps() {
        let pts = run(&[(0, 10), (1, 11), (2, 12), (5, 13), (6, 14), (9, 15)]);
        let segs = learn(0, &pts);
        assert!(segs.len() >= 3);
        assert!(segs.iter().all(|l| l.seg.accurate));
        check_bound(0, &pts, &segs);
    }

    #[test]
    fn gamma_allows_irregular_approximate_segments() {
        let pts = run(&[
            (0, 10),
            (1, 11),
            (2, 12),
            (5, 13),
            (6, 14),
            (9, 15),
            (10, 16),
        ]);
        let segs = learn(4, &pts);
        assert_eq!(segs.len(), 1);
        assert_eq!(segs[0].seg.stride, 0);
        check_bound(4, &pts, &segs);
    }

    #[test]
    fn segments_never_span_runs() {
        let mut pts = run(&[(0, 10), (1, 11), (2, 12), (3, 13)]);
        for p in &mut pts[2..] {
            p.run_lo = 12;
        }
        for p in &mut pts[..2] {
            p.run_hi = 11;
        }
        for gamma in [0, 4] {
            let segs = learn(gamma, &pts);
            assert_eq!(segs.len(), 2);
            check_bound(gamma, &pts, &segs);
        }
    }

    #[test]
    fn encoding_round_trips() {
        let codec = Codec::for_pages(1 << 29).unwrap();
        assert_eq!(codec.frac_bits, 1);
        let learner = Learner::new(4, codec);
        let pts = run(&[
            (3, 500_000_000),
            (4, 500_000_001),
            (9, 500_000_002),
            (12, 500_000_003),
        ]);
        let mut out = Vec::new();
        learner.learn(&pts, &mut out);
        for l in &out {
            let d = codec.decode(codec.encode(&l.seg));
            assert_eq!(
                (d.x1, d.x2, d.accurate, d.stride),
                (l.seg.x1, l.seg.x2, l.seg.accurate, l.seg.stride)
            );
            for x in l.seg.x1..=l.seg.x2 {
                assert_eq!(d.predict(x), l.seg.predict(x));
            }
        }
        assert!(Codec::for_pages(1 << 31).is_none());
    }

    #[test]
    fn random_points_respect_the_bound() {
        let mut state = 12345u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for gamma in [0, 1, 4, 16] {
            for _ in 0..200 {
                let mut xs: Vec<u8> = (0..40).map(|_| (next() % 256) as u8).collect();
                xs.sort_unstable();
                xs.dedup();
                let base = (next() % 100_000) as u32;
                let pts: Vec<Point> = xs
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| Point {
                        x,
                        y: base + i as u32,
                        run_lo: base,
                        run_hi: base + xs.len() as u32 - 1,
                    })
                    .collect();
                let segs = learn(gamma, &pts);
                check_bound(gamma, &pts, &segs);
                for l in &segs {
                    if !l.seg.accurate {
                        for q in pts.iter().filter(|q| has(&l.members, q.x)) {
                            let p = l.seg.predict(q.x);
                            assert!(p >= q.run_lo && p <= q.run_hi);
                        }
                    }
                }
            }
        }
    }
}
