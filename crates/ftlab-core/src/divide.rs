//! Division by a number fixed at start-up, as a multiplication.

/// Division of a `u32` by a divisor fixed at start-up, as a multiplication: for 32-bit
/// `n`, `n / d` is the high 64 bits of `ceil(2^64 / d) * n` (Lemire, Kaser and Kurz,
/// "Faster remainder by direct computation", 2019). A hardware division costs tens of
/// cycles; every timed flash operation finds its unit so, and the demand-cached schemes
/// their translation unit.
#[derive(Clone, Copy, Debug)]
pub struct DivideBy {
    /// `ceil(2^64 / d)`; 0 for `d = 1`.
    c: u64,
}

impl DivideBy {
    pub fn new(d: u32) -> Self {
        assert!(d > 0, "division by zero");
        DivideBy {
            c: if d == 1 { 0 } else { u64::MAX / d as u64 + 1 },
        }
    }

    #[inline(always)]
    pub fn divide(self, n: u32) -> u32 {
        if self.c == 0 {
            n
        } else {
            ((self.c as u128 * n as u128) >> 64) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DivideBy;

    #[test]
    fn divide_by_matches_the_hardware_division() {
        let mut rng = crate::rng::Rng::new(7);
        let divisors = (1..=3000u32)
            .chain([65_535, 65_536, 65_537, 1 << 31, u32::MAX - 1, u32::MAX])
            .chain((0..2000).map(|_| rng.below(u32::MAX as u64) as u32 + 1))
            .collect::<Vec<_>>();
        for d in divisors {
            let div = DivideBy::new(d);
            let near = |k: u64| [k.saturating_sub(1), k, k + 1];
            let edges = near(d as u64)
                .into_iter()
                .chain(near(u32::MAX as u64 / d as u64 * d as u64))
                .chain([0, 1, u32::MAX as u64]);
            for n in edges.chain((0..50).map(|_| rng.below(1 << 32))) {
                let n = n.min(u32::MAX as u64) as u32;
                assert_eq!(div.divide(n), n / d, "{n} / {d}");
            }
        }
    }
}
