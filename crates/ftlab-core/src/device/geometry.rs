//! The device's physical organisation and NAND characteristics (the `[geometry]` and
//! `[nand]` sections), and the [`Layout`] derived from them that every layer addresses the
//! flash by.

use crate::units;
use serde::{Deserialize, Serialize};

/// Physical organisation of the simulated SSD.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Geometry {
    pub channels: u32,
    pub chips_per_channel: u32,
    pub dies_per_chip: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    /// Bytes of data per flash page.
    #[serde(with = "units::bytes")]
    pub page_size: u64,
    /// Bytes of out-of-band (spare) area per page.
    #[serde(with = "units::bytes")]
    pub oob_size: u64,
}

impl Default for Geometry {
    fn default() -> Self {
        // The `default` preset: a current TLC SSD's parallelism (8 channels x 4 dies x 2
        // planes) and about as many blocks per plane as the B17A die (504), so that the
        // blocks GC keeps free and open cost little of the over-provisioning; 8 GiB raw, so
        // that any bundled workload runs in seconds. A device fitted to a trace keeps this
        // parallelism and scales the blocks per plane.
        Geometry {
            channels: 8,
            chips_per_channel: 4,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 512,
            pages_per_block: 64,
            page_size: 4096,
            oob_size: 128,
        }
    }
}

/// In what order the pages of an erased block may be programmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgramOrder {
    /// Page by page from the first, as modern MLC/TLC NAND requires.
    Sequential,
    /// In increasing page order, skipping allowed: a page may be programmed only above the
    /// block's highest programmed page, and pages skipped stay erased until the block is
    /// erased. The rule of the MLC NAND that later log-block FTLs (KRAFT) were designed for.
    Ascending,
    /// Any erased page of the block, as the SLC NAND of log-block FTLs allowed.
    Any,
}

/// NAND timings and rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Nand {
    /// Array read time tR, in ns.
    #[serde(with = "units::nanos")]
    pub read_latency_ns: u64,
    /// Program time tPROG, in ns.
    #[serde(with = "units::nanos")]
    pub program_latency_ns: u64,
    /// Block erase time tBERS, in ns.
    #[serde(with = "units::nanos")]
    pub erase_latency_ns: u64,
    /// Channel transfer rate, in bytes per second.
    #[serde(with = "units::bytes")]
    pub channel_bytes_per_s: u64,
    pub program_order: ProgramOrder,
}

impl Default for Nand {
    fn default() -> Self {
        // 3D TLC NAND (Micron B17A, as in the CAES UT81NDQ512G8T datasheet): single-plane
        // page read 74 us; effective program time 1.9 ms per 16 KiB page, i.e. 475 us per
        // simulated 4 KiB page, so that a die programs at the datasheet's rate; block erase
        // 15 ms per 2,304 x 16 KiB pages, scaled to the simulated 64 x 4 KiB block (104 us)
        // so that erasing costs the same time per page written; NV-DDR3 at 667 MT/s.
        Nand {
            read_latency_ns: 74_000,
            program_latency_ns: 475_000,
            erase_latency_ns: 104_000,
            channel_bytes_per_s: 667_000_000,
            program_order: ProgramOrder::Sequential,
        }
    }
}

/// Geometry derived from the configuration, in the units the simulator uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub channels: u32,
    /// Parallel units (planes) in the device; block `b` belongs to unit `b / blocks_per_unit`.
    pub units: u32,
    /// Dies: the unit of timing concurrency (planes of one die are serialised).
    pub dies: u32,
    pub planes_per_die: u32,
    pub blocks_per_unit: u32,
    pub pages_per_block: u32,
    pub total_blocks: u32,
    pub physical_pages: u64,
    pub logical_pages: u64,
    pub page_size: u32,
    pub oob_size: u32,
}

impl Layout {
    /// Parallel unit of block `b`. Units are numbered channel first, then chip, die and
    /// plane, so that consecutive units sit on different channels.
    #[inline]
    pub fn unit_of_block(&self, block: u32) -> u32 {
        block / self.blocks_per_unit
    }

    /// Die (timing resource) of unit `u`.
    #[inline]
    pub fn die_of_unit(&self, unit: u32) -> u32 {
        unit % self.dies
    }

    #[inline]
    pub fn channel_of_unit(&self, unit: u32) -> u32 {
        unit % self.channels
    }

    /// Plane of unit `u` within its die.
    #[inline]
    pub fn plane_of_unit(&self, unit: u32) -> u32 {
        unit / self.dies
    }

    /// The unit of plane `plane` on die `die`.
    #[inline]
    pub fn unit_at(&self, die: u32, plane: u32) -> u32 {
        plane * self.dies + die
    }

    /// The `k`-th unit of the plane-first stripe order: the planes of die 0, then those of
    /// die 1, ..., dies channel first. Consecutive pages written in this order can pair up as
    /// multi-plane programs, and consecutive dies sit on different channels.
    #[inline]
    pub fn stripe_unit(&self, k: u32) -> u32 {
        let k = k % self.units;
        self.unit_at(k / self.planes_per_die, k % self.planes_per_die)
    }

    /// Superblocks: block `i` of every parallel unit forms superblock `i`, a die- and
    /// plane-parallel stripe (SlimFTL's virtual blocks, log-block data blocks, AMF segments).
    #[inline]
    pub fn superblocks(&self) -> u32 {
        self.blocks_per_unit
    }

    /// The superblock block `b` belongs to.
    #[inline]
    pub fn superblock_of(&self, block: u32) -> u32 {
        block % self.blocks_per_unit
    }

    /// The block of superblock `sb` on the `k`-th unit of the stripe order.
    #[inline]
    pub fn superblock_member(&self, sb: u32, k: u32) -> u32 {
        self.stripe_unit(k) * self.blocks_per_unit + sb
    }

    /// Bytes of a page-address entry: enough bits for every physical page, rounded up
    /// to whole bytes (4 bytes up to 2^32 pages), as MQSim and pblk size them.
    pub fn ppa_entry_bytes(&self) -> u64 {
        let bits = 64 - (self.physical_pages.max(2) - 1).leading_zeros() as u64;
        bits.div_ceil(8)
    }

    pub fn logical_bytes(&self) -> u64 {
        self.logical_pages * self.page_size as u64
    }
}

/// Bytes of OOB every page spends on the header the simulator keeps: the logical page
/// address (4 bytes) and the write sequence number (4 bytes).
pub const OOB_HEADER_BYTES: u64 = 8;
