//! Shared block management: per-unit free-block pools and garbage-collection victim
//! selection (greedy and cost-benefit). Written once for every scheme that allocates
//! blocks out of place.

use crate::device::geometry::Layout;
use crate::device::nand::Flash;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// How garbage-collection victims are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VictimPolicy {
    /// Fewest valid pages.
    Greedy,
    /// Highest (1 - u) / 2u x age (Rosenblum and Ousterhout), age in host page writes.
    CostBenefit,
    /// The block that filled first (FIFO, as a circular log cleans): the policy of
    /// Desnoyers' closed-form model (SYSTOR 2012), for validation; a block with no invalid
    /// page is passed over.
    Fifo,
}

/// Erased blocks of each parallel unit, handed out oldest-freed first (FIFO), which
/// spreads erases over the blocks without a separate wear-levelling policy.
#[derive(Clone, Debug)]
pub struct FreeBlocks {
    per_unit: Vec<VecDeque<u32>>,
    /// Free blocks over all units.
    total: usize,
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
        FreeBlocks {
            per_unit,
            total: layout.total_blocks as usize,
        }
    }

    #[inline]
    pub fn count(&self, unit: u32) -> usize {
        self.per_unit[unit as usize].len()
    }

    #[inline]
    pub fn total(&self) -> usize {
        self.total
    }

    #[inline]
    pub fn pop(&mut self, unit: u32) -> Option<u32> {
        let block = self.per_unit[unit as usize].pop_front();
        self.total -= block.is_some() as usize;
        block
    }

    /// The free blocks of `unit`, oldest freed first.
    pub fn blocks(&self, unit: u32) -> impl Iterator<Item = u32> + '_ {
        self.per_unit[unit as usize].iter().copied()
    }

    /// Takes `block` out of its unit's pool; false if it is not free.
    pub fn take(&mut self, layout: &Layout, block: u32) -> bool {
        let pool = &mut self.per_unit[layout.unit_of_block(block) as usize];
        match pool.iter().position(|&b| b == block) {
            Some(i) => {
                pool.remove(i);
                self.total -= 1;
                true
            }
            None => false,
        }
    }

    /// Returns an erased block to its unit's pool.
    #[inline]
    pub fn push(&mut self, layout: &Layout, block: u32) {
        self.per_unit[layout.unit_of_block(block) as usize].push_back(block);
        self.total += 1;
    }
}

/// The cost-benefit score of a victim (Rosenblum and Ousterhout's LFS cleaner): the space
/// reclaimed per unit of copying, (1 - u) / 2u, weighted by the age of its data; infinite
/// for a victim with nothing valid. `valid` of `capacity` units are live, `age` is the
/// time since it was last modified.
pub fn cost_benefit(valid: u64, capacity: u64, age: u64) -> f64 {
    if valid == 0 {
        return f64::INFINITY;
    }
    let u = valid as f64 / capacity as f64;
    (1.0 - u) / (2.0 * u) * (age as f64 + 1.0)
}

/// The best victim among the full native-mode blocks of `unit` that have at least one
/// invalid page, skipping `exclude` (blocks the caller is still writing). Ties go to the lowest block
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
    let candidates = (first..first + layout.blocks_per_unit).filter(|&b| {
        flash.is_full(b)
                && flash.valid_count(b) < ppb
                && !exclude.contains(&b)
                // An SLC block belongs to the allocator's cache, which folds it.
                && !flash.is_slc(b)
                // A retired block is never erased.
                && !flash.is_retired(b)
    });
    match policy {
        VictimPolicy::Greedy => candidates.min_by_key(|&b| (flash.valid_count(b), b)),
        VictimPolicy::CostBenefit => {
            let mut best: Option<(f64, u32)> = None;
            for b in candidates {
                let age = flash.clock.saturating_sub(flash.modified_at(b));
                let score = cost_benefit(flash.valid_count(b) as u64, ppb as u64, age);
                if best.is_none_or(|(s, _)| score > s) {
                    best = Some((score, b));
                }
            }
            best.map(|(_, b)| b)
        }
        VictimPolicy::Fifo => candidates.min_by_key(|&b| (flash.programmed_at(b), b)),
    }
}

impl FreeBlocks {
    /// No block free (a scheme that hands its blocks out itself fills the pools with `push`).
    pub fn empty(layout: &Layout) -> Self {
        FreeBlocks {
            per_unit: vec![VecDeque::new(); layout.units as usize],
            total: 0,
        }
    }

    /// Pops from the first unit, in round-robin order from `*next_unit`, that holds more
    /// than `keep` free blocks, and advances `*next_unit` past it. Spreads a scheme's
    /// allocations over the parallel units while each unit keeps a reserve.
    pub fn pop_round_robin(&mut self, next_unit: &mut u32, keep: usize) -> Option<u32> {
        let units = self.per_unit.len() as u32;
        for _ in 0..units {
            let unit = *next_unit;
            *next_unit = (unit + 1) % units;
            if self.per_unit[unit as usize].len() > keep {
                return self.pop(unit);
            }
        }
        None
    }
}

/// Full blocks bucketed by valid-page count: greedy victim selection over a whole device in
/// O(1), for schemes whose victims are not confined to one parallel unit (a device-wide scan
/// per garbage collection would dominate their run time). Within a count, blocks leave in
/// the order they entered it, so the choice is deterministic.
#[derive(Clone, Debug)]
pub struct GreedyIndex {
    /// First and last block of each valid-count bucket (`NO_BLOCK` when empty).
    head: Vec<u32>,
    tail: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Valid count each block is filed under, `NO_BLOCK` when the block is not indexed.
    filed: Vec<u32>,
    /// No non-empty bucket lies below this one.
    lowest: usize,
}

const NO_BLOCK: u32 = u32::MAX;

impl GreedyIndex {
    pub fn new(blocks: u32, pages_per_block: u32) -> Self {
        let buckets = pages_per_block as usize + 1;
        GreedyIndex {
            head: vec![NO_BLOCK; buckets],
            tail: vec![NO_BLOCK; buckets],
            next: vec![NO_BLOCK; blocks as usize],
            prev: vec![NO_BLOCK; blocks as usize],
            filed: vec![NO_BLOCK; blocks as usize],
            lowest: buckets,
        }
    }

    #[inline]
    pub fn contains(&self, block: u32) -> bool {
        self.filed[block as usize] != NO_BLOCK
    }

    /// Files `block` under `valid` valid pages.
    pub fn insert(&mut self, block: u32, valid: u32) {
        debug_assert!(!self.contains(block));
        let (b, v) = (block as usize, valid as usize);
        self.filed[b] = valid;
        self.next[b] = NO_BLOCK;
        self.prev[b] = self.tail[v];
        match self.tail[v] {
            NO_BLOCK => self.head[v] = block,
            t => self.next[t as usize] = block,
        }
        self.tail[v] = block;
        self.lowest = self.lowest.min(v);
    }

    /// Takes `block` out of the index (no-op if it is not filed).
    pub fn remove(&mut self, block: u32) {
        let b = block as usize;
        let v = self.filed[b];
        if v == NO_BLOCK {
            return;
        }
        let (p, n) = (self.prev[b], self.next[b]);
        match p {
            NO_BLOCK => self.head[v as usize] = n,
            p => self.next[p as usize] = n,
        }
        match n {
            NO_BLOCK => self.tail[v as usize] = p,
            n => self.prev[n as usize] = p,
        }
        self.filed[b] = NO_BLOCK;
    }

    /// One page of `block` was invalidated (no-op if the block is not filed).
    #[inline]
    pub fn page_invalidated(&mut self, block: u32) {
        let v = self.filed[block as usize];
        if v != NO_BLOCK && v > 0 {
            self.remove(block);
            self.insert(block, v - 1);
        }
    }

    /// The filed block with the fewest valid pages, if it has fewer than `below`.
    pub fn min_below(&mut self, below: u32) -> Option<(u32, u32)> {
        while self.lowest < self.head.len() && self.head[self.lowest] == NO_BLOCK {
            self.lowest += 1;
        }
        (self.lowest < below as usize).then(|| (self.head[self.lowest], self.lowest as u32))
    }
}
