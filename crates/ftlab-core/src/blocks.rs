//! Shared block management: per-unit free-block pools and garbage-collection victim
//! selection (greedy and cost-benefit). Written once for every scheme that allocates
//! blocks out of place.

use crate::config::{Layout, VictimPolicy};
use crate::nand::Flash;
use std::collections::VecDeque;

/// Erased blocks of each parallel unit, handed out oldest-freed first (FIFO), which
/// spreads erases over the blocks without a separate wear-levelling policy.
#[derive(Clone, Debug)]
pub struct FreeBlocks {
    per_unit: Vec<VecDeque<u32>>,
}

impl FreeBlocks {
    /// Every block of the device, free.
    pub fn all(layout: &Layout) -> Self {
        let per_unit = (0..layout.units)
            .map(|u| {
                let first = u * layout.blocks_per_unit;
                (first..first + layout.blocks_per_unit).collect()
            })
            .collect();
        FreeBlocks { per_unit }
    }

    #[inline]
    pub fn count(&self, unit: u32) -> usize {
        self.per_unit[unit as usize].len()
    }

    pub fn total(&self) -> usize {
        self.per_unit.iter().map(VecDeque::len).sum()
    }

    #[inline]
    pub fn pop(&mut self, unit: u32) -> Option<u32> {
        self.per_unit[unit as usize].pop_front()
    }

    /// Returns an erased block to its unit's pool.
    #[inline]
    pub fn push(&mut self, layout: &Layout, block: u32) {
        self.per_unit[layout.unit_of_block(block) as usize].push_back(block);
    }
}

/// The best victim among the full blocks of `unit` that have at least one invalid page,
/// skipping `exclude` (blocks the caller is still writing). Ties go to the lowest block
/// number, so the choice is deterministic.
pub fn select_victim(
    flash: &Flash,
    unit: u32,
    policy: VictimPolicy,
    exclude: &[u32],
) -> Option<u32> {
    let layout = flash.layout();
    let ppb = layout.pages_per_block;
    let first = unit * layout.blocks_per_unit;
    let candidates = (first..first + layout.blocks_per_unit)
        .filter(|&b| flash.is_full(b) && flash.valid_count(b) < ppb && !exclude.contains(&b));
    match policy {
        VictimPolicy::Greedy => candidates.min_by_key(|&b| (flash.valid_count(b), b)),
        VictimPolicy::CostBenefit => {
            let mut best: Option<(f64, u32)> = None;
            for b in candidates {
                let u = flash.valid_count(b) as f64 / ppb as f64;
                let age = flash.clock.saturating_sub(flash.modified_at(b)) as f64 + 1.0;
                let score = if u == 0.0 {
                    f64::INFINITY
                } else {
                    (1.0 - u) / (2.0 * u) * age
                };
                if best.is_none_or(|(s, _)| score > s) {
                    best = Some((score, b));
                }
            }
            best.map(|(_, b)| b)
        }
    }
}
