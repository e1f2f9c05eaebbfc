//! The pseudo-SLC cache's device side (the `[slc]` section): blocks of the TLC array
//! programmed one bit per cell hold a third of the pages (`bits_per_cell`), with their own
//! tR, tPROG and tBERS. Which blocks are in SLC mode, and when their data is folded into
//! TLC blocks, the shared page allocator decides (`ftl::kit::slc`); the flash model
//! ([`crate::device::nand::Flash::set_slc`]) enforces the smaller capacity and times each
//! operation by the block's mode.

use crate::error::{Error, Result};
use crate::units;
use serde::{Deserialize, Serialize};

/// What a host write does when it finds its unit's SLC blocks all full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WhenFull {
    /// Goes to a native (TLC) block, as Samsung's TurboWrite and UFS WriteBooster write
    /// once their buffer is exhausted; the cache folds in idle time only.
    Bypass,
    /// Waits while the unit's oldest SLC block is folded, then takes its place: every write
    /// stays in SLC, at the cost of folding in the write's path.
    Fold,
}

/// The `[slc]` section: off (no SLC block) unless `static_fraction` or `dynamic_fraction`
/// is positive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlcConfig {
    /// Blocks of each parallel unit kept in SLC mode for good (the static region), as a
    /// fraction of the unit's blocks; they come out of the over-provisioning.
    pub static_fraction: f64,
    /// Free blocks of each parallel unit the cache may borrow in SLC mode while the unit has
    /// free blocks to spare (the dynamic region), at most, as a fraction of its blocks; a
    /// folded dynamic block returns to the free pool.
    pub dynamic_fraction: f64,
    /// Bits per cell of the native (TLC) mode: an SLC block holds `pages_per_block /
    /// bits_per_cell` pages.
    pub bits_per_cell: u32,
    /// What a host write does when its unit's cache is full.
    pub when_full: WhenFull,
    /// tR of a page in SLC mode, in ns.
    #[serde(with = "units::nanos")]
    pub read_latency_ns: u64,
    /// tPROG of a page in SLC mode, in ns.
    #[serde(with = "units::nanos")]
    pub program_latency_ns: u64,
    /// tBERS of a block in SLC mode, in ns.
    #[serde(with = "units::nanos")]
    pub erase_latency_ns: u64,
}

impl Default for SlcConfig {
    fn default() -> Self {
        // Off. The timings, for when it is turned on, scale the default TLC timings by the
        // SLC/TLC ratios of HP's "SSD technology differences between SLC, MLC and TLC NAND"
        // white paper (table 1: tR 25 vs ~75 us, tPROG 200-300 vs ~900-1350 us, tBERS
        // 1.5-2 vs ~4.5 ms): 74 us / 3, 475 us x 250 / 1125, 104 us x 1.75 / 4.5.
        SlcConfig {
            static_fraction: 0.0,
            dynamic_fraction: 0.0,
            bits_per_cell: 3,
            when_full: WhenFull::Bypass,
            read_latency_ns: 25_000,
            program_latency_ns: 105_000,
            erase_latency_ns: 40_000,
        }
    }
}

impl SlcConfig {
    /// Whether the device has SLC blocks at all.
    pub fn enabled(&self) -> bool {
        self.static_fraction > 0.0 || self.dynamic_fraction > 0.0
    }

    /// Pages an SLC block holds.
    pub fn pages(&self, pages_per_block: u32) -> u32 {
        pages_per_block / self.bits_per_cell.max(1)
    }

    /// Static and dynamic blocks of a unit of `blocks_per_unit` blocks (a positive fraction
    /// gives at least one block).
    pub fn blocks(&self, blocks_per_unit: u32) -> (u32, u32) {
        let count = |f: f64| (f * blocks_per_unit as f64).ceil() as u32;
        (count(self.static_fraction), count(self.dynamic_fraction))
    }

    /// Checks the section against the geometry; `spare_blocks` is what each unit has beyond
    /// its logical data and the blocks the FTL needs open.
    pub fn validate(
        &self,
        pages_per_block: u32,
        blocks_per_unit: u32,
        spare_blocks: u64,
    ) -> Result<()> {
        for (key, f) in [
            ("slc.static_fraction", self.static_fraction),
            ("slc.dynamic_fraction", self.dynamic_fraction),
        ] {
            if !(0.0..1.0).contains(&f) {
                return Err(Error::config(
                    key,
                    format!("{f} is not a fraction in [0, 1)"),
                ));
            }
        }
        if self.bits_per_cell < 2 || self.pages(pages_per_block) == 0 {
            return Err(Error::config(
                "slc.bits_per_cell",
                format!(
                    "{} must be at least 2 and leave an SLC block at least one of the {pages_per_block} pages",
                    self.bits_per_cell
                ),
            ));
        }
        let (fixed, _) = self.blocks(blocks_per_unit);
        if fixed as u64 * 2 > spare_blocks {
            return Err(Error::config(
                "slc.static_fraction",
                format!(
                    "{} keeps {fixed} blocks per parallel unit in SLC mode, more than half of the \
                     {spare_blocks} spare blocks per unit the over-provisioning leaves (raise ftl.over_provisioning)",
                    self.static_fraction
                ),
            ));
        }
        Ok(())
    }
}
