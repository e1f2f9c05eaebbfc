//! Media faults (the `[faults]` section): factory bad blocks, and blocks that go bad during
//! the run when a program or an erase fails. Off by default; seeded, so that a seed names
//! one set of faults for good.
//!
//! The flash model ([`crate::device::nand::Flash`]) marks the factory bad blocks when it is
//! built and refuses to program or erase a retired block ([`crate::device::nand::Flash::retire`]).
//! When a program or an erase fails, the shared page allocator decides (`ftl::kit::alloc`):
//! it retires the block, re-writes the page being programmed and the block's valid pages
//! elsewhere ([`crate::device::nand::Cause::Retire`]), so that no acknowledged write is lost.

use crate::device::geometry::Layout;
use crate::error::{Error, Result};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// The `[faults]` section: off (no fault) unless a fraction or a rate is positive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FaultConfig {
    /// Seed of the fault draws (which blocks are bad from the factory, which programs and
    /// erases fail).
    pub seed: u64,
    /// Blocks of each parallel unit marked bad before the run (never allocated), as a
    /// fraction of the unit's blocks; they come out of the over-provisioning.
    pub factory_bad_fraction: f64,
    /// Probability that a page program fails: the block is retired (a grown bad block).
    pub program_failure_rate: f64,
    /// Probability that a block erase fails: the block is retired.
    pub erase_failure_rate: f64,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            seed: 1,
            factory_bad_fraction: 0.0,
            program_failure_rate: 0.0,
            erase_failure_rate: 0.0,
        }
    }
}

impl FaultConfig {
    /// Whether any fault is injected.
    pub fn enabled(&self) -> bool {
        self.factory_bad_fraction > 0.0
            || self.program_failure_rate > 0.0
            || self.erase_failure_rate > 0.0
    }

    /// The key that turns faults on (the first of them set), for messages that refuse them.
    pub fn key(&self) -> &'static str {
        if self.factory_bad_fraction > 0.0 {
            "faults.factory_bad_fraction"
        } else if self.program_failure_rate > 0.0 {
            "faults.program_failure_rate"
        } else {
            "faults.erase_failure_rate"
        }
    }

    /// Factory bad blocks per parallel unit (a positive fraction gives at least one).
    pub fn bad_per_unit(&self, blocks_per_unit: u32) -> u32 {
        (self.factory_bad_fraction * blocks_per_unit as f64).ceil() as u32
    }

    /// The factory bad blocks, in increasing order: [`FaultConfig::bad_per_unit`] on every
    /// unit, drawn uniformly from the seed. The flash model and the allocator both call it,
    /// and get the same blocks.
    pub fn factory_bad_blocks(&self, layout: &Layout) -> Vec<u32> {
        let per_unit = self.bad_per_unit(layout.blocks_per_unit);
        if per_unit == 0 {
            return Vec::new();
        }
        let mut rng = Rng::new(self.seed ^ FACTORY_STREAM);
        let bpu = layout.blocks_per_unit;
        let mut out = Vec::with_capacity((per_unit * layout.units) as usize);
        let mut order: Vec<u32> = (0..bpu).collect();
        for unit in 0..layout.units {
            // The first `per_unit` of a partial Fisher-Yates shuffle.
            order
                .iter_mut()
                .enumerate()
                .for_each(|(i, b)| *b = i as u32);
            for i in 0..per_unit as usize {
                let j = i + rng.below((bpu as usize - i) as u64) as usize;
                order.swap(i, j);
            }
            let mut bad: Vec<u32> = order[..per_unit as usize]
                .iter()
                .map(|&b| unit * bpu + b)
                .collect();
            bad.sort_unstable();
            out.extend(bad);
        }
        out
    }

    /// Checks the section against the geometry; `spare_blocks` is what each unit has beyond
    /// its logical data and the blocks the FTL needs open.
    pub fn validate(&self, blocks_per_unit: u32, spare_blocks: u64) -> Result<()> {
        for (key, f) in [
            ("faults.factory_bad_fraction", self.factory_bad_fraction),
            ("faults.program_failure_rate", self.program_failure_rate),
            ("faults.erase_failure_rate", self.erase_failure_rate),
        ] {
            if !(0.0..1.0).contains(&f) {
                return Err(Error::config(
                    key,
                    format!("{f} is not a fraction in [0, 1)"),
                ));
            }
        }
        let bad = self.bad_per_unit(blocks_per_unit);
        if bad as u64 * 2 > spare_blocks {
            return Err(Error::config(
                "faults.factory_bad_fraction",
                format!(
                    "{} makes {bad} blocks per parallel unit bad, more than half of the \
                     {spare_blocks} spare blocks per unit the over-provisioning leaves (raise ftl.over_provisioning)",
                    self.factory_bad_fraction
                ),
            ));
        }
        Ok(())
    }
}

/// Mixed into the seed of the factory bad blocks, so that they and the failures the
/// allocator draws ([`FaultDraws`]) come from different streams.
const FACTORY_STREAM: u64 = 0xBAD_B10C;

/// The program and erase failures of a run, drawn from the seed in the order the
/// operations happen.
#[derive(Clone, Debug)]
pub struct FaultDraws {
    rng: Rng,
    program_rate: f64,
    erase_rate: f64,
}

impl FaultDraws {
    /// The draws of `[faults]`, if it turns failures on.
    pub fn new(cfg: &FaultConfig) -> Option<FaultDraws> {
        (cfg.program_failure_rate > 0.0 || cfg.erase_failure_rate > 0.0).then(|| FaultDraws {
            rng: Rng::new(cfg.seed),
            program_rate: cfg.program_failure_rate,
            erase_rate: cfg.erase_failure_rate,
        })
    }

    /// The offset of the first page whose program fails among the `pages` of a block just
    /// opened (`pages` if none): one draw per page, as if each program were drawn when it
    /// happens (the pages after a failure are never programmed).
    pub fn failing_page(&mut self, pages: u32) -> u32 {
        if self.program_rate <= 0.0 {
            return pages;
        }
        (0..pages)
            .find(|_| self.rng.unit_f64() < self.program_rate)
            .unwrap_or(pages)
    }

    /// Whether the erase just done failed.
    pub fn erase_fails(&mut self) -> bool {
        self.erase_rate > 0.0 && self.rng.unit_f64() < self.erase_rate
    }
}
