//! A log-structured host file system in the F2FS style (Lee et al., FAST'15), in two
//! flavours: `f2fs`, the conventional one, and `alfs`, AMF's (Lee et al., FAST'16; spec
//! section 11), which never overwrites a device page and runs on the append-only `aftl`.
//!
//! **Main area.** The application's logical pages are the file's blocks; each is mapped to
//! a file-system block (a device page) of the main area, which is divided into *sections*,
//! the unit of cleaning: with `alfs` one device segment (a superblock: units x pages per
//! block, so that a section is an AFTL segment), with `f2fs` 2 MiB (F2FS's segment).
//! Writes append to one of three logs, each with an open section: application data, node
//! blocks, and the cold log that cleaning writes to. An overwrite or a trim invalidates the
//! old block; a full section left with no valid block is free again at once. Every direct
//! node block holds the addresses of `(page_size - 24) / 4` (1,018) consecutive pages: a
//! write or trim dirties its node, and dirty nodes are written to the node log every
//! `lfs.fsync_every_pages` application pages (an fsync) and at every checkpoint.
//!
//! **Cleaning.** When a log opens a section and fewer than three sections are free, the
//! file system cleans in the foreground: the victim (`lfs.victim`, greedy by default) has
//! its summary blocks (SSA) read, its valid blocks read and rewritten to the cold log, its
//! nodes' addresses updated, and is then free; `alfs` (and `f2fs` with `lfs.discard`)
//! trims the whole section, which an AFTL device erases without copies. With
//! `lfs.checkpoint_discard`, `f2fs` trims at each checkpoint every block invalidated since
//! the previous one that is still invalid (F2FS's `discard`).
//!
//! **Background cleaning**, as F2FS's GC thread does it (`fs/f2fs/gc.c`, `gc.h`): while
//! the application is idle (by its timestamps, so that timed and mapping-only runs decide
//! alike) one victim (`lfs.idle_victim`, cost-benefit, F2FS's background policy) is
//! cleaned per `lfs.idle_ns` of the gap, while it is wanted: fewer than
//! `lfs.idle_free_fraction` of the sections free, and the free sections holding less than
//! 40% of the main area's space without valid blocks (`LIMIT_FREE_BLOCK`, "percentage over
//! invalid + free space"; counted over the whole main area, so that the target is always
//! within reach: the other 60% may stay scattered in full sections). Where cleaning does
//! not pay (F2FS's `has_enough_invalid_blocks` false: at most 40% of the application's
//! space without valid blocks, `LIMIT_INVALID_BLOCK`) F2FS's thread sleeps its longest,
//! `max_sleep_time`: one victim per `lfs.idle_slow_ns` (60 s) of idle time, so that a full
//! file system does not move nearly full sections about in every short gap. Its requests
//! are background work ([`Origin::IdleCleaning`]): a request queued behind them waits in
//! `bg_host_cleaning`, not `fg_host_cleaning`. At the end of preconditioning (steady,
//! fill or the workload's own, [`HostStack::settle`]) background cleaning catches up as in
//! a long idle time, as the device's background GC does: an aged file system starts the
//! measured run with the free sections its background GC keeps, not at the foreground
//! threshold, so that a short trace is not charged the burst of cleaning that opening its
//! first sections would owe (on the MSR excerpt with `aftl`, 12 sections cleaned in the
//! foreground, 91% of the read latency, before). Foreground cleaning then runs only when
//! the free sections run out, as F2FS's does. `lfs.idle_ns=0` turns both off.
//! `lfs.over_provisioning` of the main area is kept from the application for cleaning.
//!
//! **Metadata**, sized as `mkfs.f2fs` sizes it for the main area: two checkpoint packs, the
//! SIT (74-byte entries, two copies), the NAT (9-byte entries, two copies) and the SSA (one
//! block per 2 MiB segment). A segment's SSA block is written when the segment is full. A
//! checkpoint (every `lfs.checkpoint_interval_ns` of the application's time, F2FS's 60 s, or
//! every `lfs.checkpoint_every_pages` application pages) writes the dirty
//! nodes, the dirty NAT blocks (unless at most 38 entries changed: they go to the
//! checkpoint's journal), the dirty SIT blocks (journal: at most 6 entries) to the copy
//! not current, and a 3-block checkpoint pack to the other pack. With `f2fs` these are
//! in-place writes at fixed addresses in front of the main area. With `alfs` the same
//! logical metadata blocks are appended to a *metadata log* of twice their size: the TIMB
//! (4 bytes per logical metadata block, `page_size / 4 - 4` entries per 4 KiB TIMB block)
//! says where each one is; when the log's head enters a section, the section after it (the
//! oldest) is cleaned first, its live blocks read, the section trimmed and the blocks
//! appended again. At each checkpoint the dirty TIMB blocks are appended to the *mapping
//! area* (three sections cycling the same way; the TIMB is in host memory, so its cleaning
//! reads nothing). The superblock section is never written. This is the layout of the ALFS
//! code (`NR_SUPERBLK_SECS` 1, `NR_MAPPING_SECS` 3, `NR_METALOG_TIMES` 2).
//!
//! **Host memory** (`metrics.host_stack.memory_bytes`, not the device's DRAM): the file's
//! block map (4 bytes per application page) and per-section state (8 bytes); with `alfs`
//! also the TIMB (its blocks, resident) and the metadata log's summary table (1 byte per
//! block): the two the paper counts as ALFS's memory.
//!
//! **Verification** (`--verify`): every device page the stack writes carries the version of
//! what it holds (an application write's number, or a node or metadata block's identity).
//! Each device read must serve the last write of that page, and each application read must
//! get the version the application last wrote to its page, through cleaning, metadata log
//! cleaning and the device's own GC.

use crate::device::blocks::{cost_benefit, GreedyIndex};
use crate::device::geometry::Layout;
use crate::device::nand::NONE;
use crate::error::{Error, Result};
use crate::ftl::settings::VictimPolicy;
use crate::ftl::MemoryBreakdown;
use crate::host::StackConfig;
use crate::host::{clear_bit, test_and_set, HostStack, Origin, StackKind};
use crate::request::{Op, Request};
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The `[lfs]` section: the log-structured file systems of the `f2fs` and `alfs` stacks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LfsConfig {
    /// Pages of a section, the unit of cleaning (0: `alfs` one device segment, units x
    /// pages per block; `f2fs` 2 MiB).
    pub section_pages: u64,
    /// Share of the main area's sections kept from the application for cleaning (at least
    /// six sections).
    pub over_provisioning: f64,
    /// Foreground cleaning's victims: `greedy` or `cost-benefit`.
    pub victim: VictimPolicy,
    /// Idle-time cleaning's victims.
    pub idle_victim: VictimPolicy,
    /// A gap in the application's arrivals this long is idle time: one victim is cleaned
    /// per `idle_ns` of it (0: no idle cleaning).
    #[serde(with = "units::nanos")]
    pub idle_ns: u64,
    /// With few invalid blocks (F2FS's `has_enough_invalid_blocks` false: at most 40% of
    /// the application's space without valid blocks), one victim per this much idle time
    /// instead (F2FS's `max_sleep_time`, 60 s; 0: none then).
    #[serde(with = "units::nanos")]
    pub idle_slow_ns: u64,
    /// Idle cleaning runs while fewer than this share of the sections are free and the
    /// free sections hold less than 40% of the main area's space without valid blocks
    /// (F2FS's `LIMIT_FREE_BLOCK`).
    pub idle_free_fraction: f64,
    /// Dirty node blocks are written every this many application pages written (an
    /// fsync; 0: at checkpoints only).
    pub fsync_every_pages: u64,
    /// A checkpoint every this many application pages written (0: by time only).
    pub checkpoint_every_pages: u64,
    /// A checkpoint when this much of the application's time has passed since the last
    /// one (F2FS's `cp_interval`, 60 s; 0: by pages only).
    #[serde(with = "units::nanos")]
    pub checkpoint_interval_ns: u64,
    /// `f2fs`: trim each section when it becomes free, whole (`alfs` always does).
    pub discard: bool,
    /// `f2fs`: at each checkpoint, trim every block invalidated since the previous one
    /// and still invalid (F2FS's `discard` mount option, which discards the blocks a
    /// checkpoint has made invalid, not only whole free sections).
    pub checkpoint_discard: bool,
}

impl Default for LfsConfig {
    fn default() -> Self {
        LfsConfig {
            section_pages: 0,
            over_provisioning: 0.05,
            victim: VictimPolicy::Greedy,
            idle_victim: VictimPolicy::CostBenefit,
            idle_ns: 50_000_000,
            idle_slow_ns: 60_000_000_000,
            idle_free_fraction: 0.1,
            fsync_every_pages: 0,
            checkpoint_every_pages: 0,
            checkpoint_interval_ns: 60_000_000_000,
            discard: false,
            checkpoint_discard: false,
        }
    }
}

impl LfsConfig {
    pub fn validate(&self) -> Result<()> {
        if !(0.0..1.0).contains(&self.over_provisioning) {
            return Err(Error::config(
                "lfs.over_provisioning",
                format!("{} is not a fraction in [0, 1)", self.over_provisioning),
            ));
        }
        if !(0.0..1.0).contains(&self.idle_free_fraction) {
            return Err(Error::config(
                "lfs.idle_free_fraction",
                format!("{} is not a fraction in [0, 1)", self.idle_free_fraction),
            ));
        }
        if self.section_pages > u32::MAX as u64 / 2 {
            return Err(Error::config("lfs.section_pages", "too large"));
        }
        for (key, policy) in [
            ("lfs.victim", self.victim),
            ("lfs.idle_victim", self.idle_victim),
        ] {
            if policy == VictimPolicy::Fifo {
                return Err(Error::config(
                    key,
                    "fifo is a device GC policy; the file system cleans greedy or cost-benefit",
                ));
            }
        }
        Ok(())
    }
}

/// F2FS's segment: 2 MiB of 4 KiB blocks (the unit of the SIT and the SSA).
const F2FS_SEGMENT_PAGES: u32 = 512;
/// Blocks of a checkpoint pack (header, compacted summaries, footer).
const CP_PACK_BLOCKS: u64 = 3;
/// Dirty NAT / SIT entries a checkpoint journals instead of writing their blocks.
const NAT_JOURNAL_ENTRIES: u64 = 38;
const SIT_JOURNAL_ENTRIES: u64 = 6;
/// ALFS: sections of the superblock and of the mapping area; the metadata log is this many
/// times the logical metadata.
const ALFS_SUPERBLOCK_SECTIONS: u64 = 1;
const ALFS_MAPPING_SECTIONS: u32 = 3;
const ALFS_METALOG_TIMES: u64 = 2;
/// Free sections below which a log opening a section cleans first.
const FOREGROUND_FREE_SECTIONS: usize = 3;
/// F2FS's background GC runs while more than this share of the user blocks hold no valid
/// block (`LIMIT_INVALID_BLOCK`, 40%) and the free ones are fewer than this share of those
/// (`LIMIT_FREE_BLOCK`, 40%).
const IDLE_INVALID_PERCENT: u64 = 40;
const IDLE_FREE_PERCENT: u64 = 40;
/// Sections kept from the application at least (the three open logs, the foreground
/// threshold).
const MIN_RESERVED_SECTIONS: u64 = 6;

/// Version tags of the blocks that are not application data (verification).
const NODE_TAG: u64 = 1 << 62;
const META_TAG: u64 = 2 << 62;
const TIMB_TAG: u64 = 3 << 62;

/// Where everything is, in device pages, and how much the application gets.
#[derive(Clone, Debug)]
pub struct FsLayout {
    pub kind: StackKind,
    pub page_size: u32,
    /// Pages of a section (the cleaning unit) and of an F2FS segment (SIT/SSA unit).
    pub section_pages: u32,
    pub segment_pages: u32,
    /// Entries per block: addresses in a direct node, NAT entries, SIT entries, TIMB entries.
    pub addrs_per_node: u32,
    pub nat_per_block: u32,
    pub sit_per_block: u32,
    pub timb_per_block: u32,
    /// Logical metadata (F2FS's layout), in blocks from 0: two checkpoint packs of one
    /// segment each, then the SIT, NAT (each two copies) and SSA.
    pub cp_start: u64,
    pub sit_start: u64,
    pub sit_copy_blocks: u64,
    pub nat_start: u64,
    pub nat_copy_blocks: u64,
    pub ssa_start: u64,
    pub meta_blocks: u64,
    /// First device page of the main area, its sections, and those kept for cleaning.
    pub main_start: u64,
    pub main_sections: u32,
    pub reserved_sections: u32,
    /// ALFS: the mapping area and the metadata log (device page, sections); TIMB blocks.
    pub mapping_start: u64,
    pub metalog_start: u64,
    pub metalog_sections: u32,
    pub timb_blocks: u64,
    /// Pages the application can address, and the direct nodes that map them.
    pub app_pages: u64,
    pub nodes: u32,
}

/// A section on a ZNS device: a zone (or `n` pages, a whole number of zones), so that every
/// section is written in order from its first page and reset whole. ALFS appends its
/// metadata to logs of sections; F2FS's zoned mode writes its metadata in place in the
/// device's conventional zones (`zns.conventional_zones`), which it needs
/// ([`FsLayout::place_zoned_f2fs`]).
fn zoned_section(
    zns: &crate::ftl::zns::ZnsConfig,
    layout: &Layout,
    kind: StackKind,
    n: u64,
) -> Result<u64> {
    let shape = zns.shape(layout)?;
    if kind != StackKind::Alfs && shape.conventional == 0 {
        return Err(Error::config(
            "host.stack",
            format!(
                "{} updates its metadata in place, which a zns device's sequential zones \
                 refuse (F2FS's zoned mode keeps it in conventional zones): give the device \
                 conventional zones (zns.conventional_zones) or run alfs, whose metadata is \
                 appended to zones",
                kind.name()
            ),
        ));
    }
    if shape.size != shape.capacity {
        return Err(Error::config(
            "zns.zone_size_pages",
            format!(
                "zones of {} pages with a capacity of {} leave holes in the logical space, \
                 which the file system's sections cannot have: set it to 0",
                shape.size, shape.capacity
            ),
        ));
    }
    let zone = shape.capacity as u64;
    match n {
        0 => Ok(zone),
        n if n.is_multiple_of(zone) => Ok(n),
        n => Err(Error::config(
            "lfs.section_pages",
            format!("{n} pages is not a whole number of the device's {zone}-page zones"),
        )),
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl FsLayout {
    /// The file system `kind` (`f2fs` or `alfs`) on a device of `layout.logical_pages`.
    pub fn new(cfg: &StackConfig, layout: &Layout, kind: StackKind) -> Result<FsLayout> {
        let lfs = &cfg.lfs;
        let page_size = layout.page_size;
        let section_pages = match (&cfg.zns, lfs.section_pages, kind) {
            (Some(zns), n, _) => zoned_section(zns, layout, kind, n)?,
            (None, 0, StackKind::Alfs) => layout.units as u64 * layout.pages_per_block as u64,
            (None, 0, _) => (2 << 20) / page_size as u64,
            (None, n, _) => n,
        };
        if section_pages == 0 || section_pages > u32::MAX as u64 / 4 {
            return Err(Error::config(
                "lfs.section_pages",
                format!("{section_pages} pages is not a usable section"),
            ));
        }
        let section_pages = section_pages as u32;
        let segment_pages = gcd(section_pages, F2FS_SEGMENT_PAGES);
        if (segment_pages as u64) < CP_PACK_BLOCKS + 1 {
            return Err(Error::config(
                "lfs.section_pages",
                format!(
                    "{section_pages} pages: a section must be a multiple of at least {} pages \
                     (the file system's segment, which holds a checkpoint pack)",
                    CP_PACK_BLOCKS + 1
                ),
            ));
        }
        let ps = page_size;
        let mut l = FsLayout {
            kind,
            page_size,
            section_pages,
            segment_pages,
            addrs_per_node: (ps - 24) / 4,
            nat_per_block: (ps / 9).max(1),
            sit_per_block: (ps / 74).max(1),
            timb_per_block: ps / 4 - 4,
            cp_start: 0,
            sit_start: 0,
            sit_copy_blocks: 0,
            nat_start: 0,
            nat_copy_blocks: 0,
            ssa_start: 0,
            meta_blocks: 0,
            main_start: 0,
            main_sections: 0,
            reserved_sections: 0,
            mapping_start: 0,
            metalog_start: 0,
            metalog_sections: 0,
            timb_blocks: 0,
            app_pages: 0,
            nodes: 0,
        };
        let device = layout.logical_pages;
        let s = section_pages as u64;
        if let (Some(zns), StackKind::F2fs) = (&cfg.zns, kind) {
            l.place_zoned_f2fs(&zns.shape(layout)?, lfs)?;
            return Ok(l);
        }
        let total_sections = device / s;
        let too_small = |what: String| {
            Error::config(
                "geometry.blocks_per_plane",
                format!(
                    "the device's {device} logical pages are too small for the {} stack: {what}",
                    kind.name()
                ),
            )
        };
        // mkfs.f2fs sizes the metadata for the main area, which is what the metadata
        // leaves: start from the whole device and shrink until it holds.
        let mut main = total_sections;
        for _ in 0..64 {
            l.size_metadata(main * (s / segment_pages as u64));
            let meta_sections = l.meta_blocks.div_ceil(s);
            let overhead = match kind {
                StackKind::Alfs => {
                    ALFS_SUPERBLOCK_SECTIONS
                        + ALFS_MAPPING_SECTIONS as u64
                        + ALFS_METALOG_TIMES * meta_sections
                }
                _ => meta_sections,
            };
            let fits = total_sections.saturating_sub(overhead);
            if fits >= main {
                break;
            }
            main = fits;
        }
        if main == 0 {
            return Err(too_small(format!(
                "its metadata takes all its {total_sections} sections of {s} pages"
            )));
        }
        let meta_sections = l.meta_blocks.div_ceil(s);
        match kind {
            StackKind::Alfs => {
                l.mapping_start = ALFS_SUPERBLOCK_SECTIONS * s;
                l.metalog_start = l.mapping_start + ALFS_MAPPING_SECTIONS as u64 * s;
                l.metalog_sections = (ALFS_METALOG_TIMES * meta_sections) as u32;
                l.main_start = l.metalog_start + l.metalog_sections as u64 * s;
            }
            _ => l.main_start = meta_sections * s,
        }
        l.timb_blocks = l.meta_blocks.div_ceil(l.timb_per_block as u64);
        l.main_sections = main as u32;
        let reserved =
            ((lfs.over_provisioning * main as f64).ceil() as u64).max(MIN_RESERVED_SECTIONS);
        if reserved >= main {
            return Err(too_small(format!(
                "its main area of {main} sections of {s} pages leaves none to the application \
                 beside the {reserved} kept for cleaning"
            )));
        }
        l.reserved_sections = reserved as u32;
        let usable = (main - reserved) * s;
        let apn = l.addrs_per_node as u64;
        l.app_pages = usable * apn / (apn + 1);
        l.nodes = l.app_pages.div_ceil(apn) as u32;
        debug_assert!(l.app_pages + l.nodes as u64 <= usable);
        debug_assert!(l.main_start + main * s <= device);
        Ok(l)
    }

    /// F2FS's zoned mode (`mkfs.f2fs -m`): the metadata in the conventional zones, at the
    /// start of the logical space, written in place; the main area the sequential zones,
    /// a section per zone (or per whole number of zones). Adaptive logging is off (LFS
    /// mode, as zoned mode forces it): the stack never does threaded logging anyway.
    fn place_zoned_f2fs(
        &mut self,
        shape: &crate::ftl::zns::ZoneShape,
        lfs: &LfsConfig,
    ) -> Result<()> {
        let s = self.section_pages as u64;
        let zone = shape.size as u64;
        let sequential = (shape.zones - shape.conventional) as u64 * zone;
        let main = sequential / s;
        self.size_metadata(main * (s / self.segment_pages as u64));
        let conventional_pages = shape.conventional as u64 * zone;
        if self.meta_blocks > conventional_pages {
            return Err(Error::config(
                "zns.conventional_zones",
                format!(
                    "f2fs's metadata (checkpoint packs, SIT, NAT, SSA) takes {} pages; the \
                     {} conventional zone(s) hold {conventional_pages}: give the device at \
                     least {} conventional zones",
                    self.meta_blocks,
                    shape.conventional,
                    self.meta_blocks.div_ceil(zone)
                ),
            ));
        }
        self.main_start = conventional_pages;
        self.main_sections = main as u32;
        let reserved =
            ((lfs.over_provisioning * main as f64).ceil() as u64).max(MIN_RESERVED_SECTIONS);
        if reserved >= main {
            return Err(Error::config(
                "zns.conventional_zones",
                format!(
                    "the {main} sequential sections of {s} pages leave none to the \
                     application beside the {reserved} f2fs keeps for cleaning"
                ),
            ));
        }
        self.reserved_sections = reserved as u32;
        let usable = (main - reserved) * s;
        let apn = self.addrs_per_node as u64;
        self.app_pages = usable * apn / (apn + 1);
        self.nodes = self.app_pages.div_ceil(apn) as u32;
        Ok(())
    }

    /// Metadata areas for `main_segments` F2FS segments in the main area.
    fn size_metadata(&mut self, main_segments: u64) {
        let seg = self.segment_pages as u64;
        let round = |blocks: u64| blocks.div_ceil(seg) * seg;
        let main_blocks = main_segments * seg;
        self.cp_start = 0;
        self.sit_start = 2 * seg;
        self.sit_copy_blocks = round(main_segments.div_ceil(self.sit_per_block as u64));
        self.nat_start = self.sit_start + 2 * self.sit_copy_blocks;
        self.nat_copy_blocks = round(main_blocks.div_ceil(self.nat_per_block as u64));
        self.ssa_start = self.nat_start + 2 * self.nat_copy_blocks;
        self.meta_blocks = self.ssa_start + round(main_segments);
    }

    /// The stack's host memory by component: the file's block map (4 bytes per application
    /// page) and per-section state (valid count and age, 8 bytes); with `alfs` also the
    /// TIMB and the metadata log's summary table ([`FsLayout::alfs_memory`]).
    pub fn memory(&self, out: &mut MemoryBreakdown) {
        out.push(("block_map", self.app_pages * 4));
        out.push(("section_info", self.main_sections as u64 * 8));
        if self.kind == StackKind::Alfs {
            let (timb, summary) = self.alfs_memory();
            out.push(("timb", timb));
            out.push(("metalog_summary", summary));
        }
    }

    /// Host memory ALFS adds to F2FS, as the paper counts it: the resident TIMB blocks and
    /// the metadata log's summary table (1 byte per block). 0 for `f2fs`.
    pub fn alfs_memory(&self) -> (u64, u64) {
        match self.kind {
            StackKind::Alfs => (
                self.timb_blocks * self.page_size as u64,
                self.metalog_sections as u64 * self.section_pages as u64,
            ),
            _ => (0, 0),
        }
    }
}

/// A section's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Section {
    Free,
    Open,
    Full,
}

const DATA: usize = 0;
const NODE: usize = 1;
const COLD: usize = 2;

#[derive(Clone, Copy, Debug)]
struct Log {
    section: u32,
    next: u32,
}

/// A ring of sections appended to, whose oldest section is cleaned when the head enters
/// the section before it (ALFS's metadata log and mapping area). Holds keys (logical
/// metadata blocks, TIMB blocks).
#[derive(Clone, Debug, Default)]
struct Ring {
    start: u64,
    sections: u32,
    section_pages: u32,
    head: u32,
    head_off: u32,
    used: Vec<bool>,
    /// Key at each position (NONE: free or stale).
    holder: Vec<u32>,
    /// Position of each key (NONE: never written).
    loc: Vec<u32>,
    queue: VecDeque<u32>,
    /// Keys of the section being cleaned, reused.
    live: Vec<(u32, u32)>,
    /// Pages moved by cleaning, sections trimmed.
    moved: u64,
    trimmed: u64,
}

impl Ring {
    fn new(start: u64, sections: u32, section_pages: u32, keys: u64) -> Ring {
        let mut used = vec![false; sections as usize];
        used[0] = true;
        Ring {
            start,
            sections,
            section_pages,
            head: 0,
            head_off: 0,
            used,
            holder: vec![NONE; sections as usize * section_pages as usize],
            loc: vec![NONE; keys as usize],
            queue: VecDeque::new(),
            live: Vec::new(),
            moved: 0,
            trimmed: 0,
        }
    }
}

/// A device page the stack expects to read or has written (verification).
#[derive(Clone, Copy, Debug)]
struct Check {
    block: u32,
    version: u64,
    /// The application page a read serves (NONE: the stack's own read).
    app_page: u32,
}

/// End-to-end verification state.
struct Verify {
    /// Last version the application wrote to each of its pages (0: never, or trimmed).
    app_shadow: Vec<u64>,
    /// What the stack put in each device page (its own knowledge, at issue time).
    written: Vec<u64>,
    /// What each device page holds once its write completed: sequence number and version.
    seq_of: Vec<u64>,
    version_of: Vec<u64>,
    checks: Vec<Check>,
    at: usize,
    next_version: u64,
}

/// Stack counters.
#[derive(Clone, Debug, Default)]
struct Counters {
    app_requests: u64,
    app_read_requests: u64,
    app_write_requests: u64,
    app_trim_requests: u64,
    app_bytes_read: u64,
    app_bytes_written: u64,
    app_pages_read: u64,
    app_pages_written: u64,
    app_pages_trimmed: u64,
    app_unmapped_reads: u64,
    sections_cleaned: u64,
    sections_cleaned_idle: u64,
    cleaning_pages_moved: u64,
    ssa_pages_read: u64,
    node_pages_written: u64,
    meta_pages_written: u64,
    checkpoints: u64,
    fsyncs: u64,
    sections_trimmed: u64,
    blocks_discarded: u64,
    timb_pages_written: u64,
}

/// The `f2fs` and `alfs` host stacks.
pub struct Lfs {
    l: FsLayout,
    alfs: bool,
    trim_freed: bool,
    /// `f2fs` with `lfs.checkpoint_discard`: main-area blocks (relative) invalidated since
    /// the last checkpoint, trimmed at the next if still invalid.
    checkpoint_discard: bool,
    pending_discard: Vec<u32>,
    page_bytes: u64,
    victim: VictimPolicy,
    idle_victim: VictimPolicy,
    idle_ns: u64,
    idle_slow_ns: u64,
    idle_free_sections: usize,
    fsync_every: u64,
    checkpoint_every: u64,
    checkpoint_interval: u64,
    /// Application time of the last checkpoint.
    last_checkpoint_time: Option<u64>,
    /// Application page -> block (device page), NONE when unmapped.
    map: Vec<u32>,
    /// Main-area block (relative) -> owner: application page, or `app_pages + nid` for a
    /// node block; NONE when free or stale.
    owner: Vec<u32>,
    node_addr: Vec<u32>,
    valid: Vec<u32>,
    /// Valid blocks of the main area (the sum of `valid`).
    valid_blocks: u64,
    mtime: Vec<u64>,
    state: Vec<Section>,
    free: VecDeque<u32>,
    greedy: GreedyIndex,
    logs: [Log; 3],
    /// Dirty node ids and their bits.
    dirty_nodes: Vec<u32>,
    node_dirty: Vec<u64>,
    /// Node ids whose NAT entry changed since the checkpoint.
    nat_dirty: Vec<u32>,
    nat_dirty_bits: Vec<u64>,
    /// F2FS segments (of the main area) whose SIT entry changed.
    sit_dirty: Vec<u32>,
    sit_dirty_bits: Vec<u64>,
    /// Current copy of each NAT and SIT block (bit set: the second), current pack.
    nat_copy: Vec<u64>,
    sit_copy: Vec<u64>,
    cp_pack: u64,
    /// Blocks (dirty NAT/SIT), reused at checkpoints.
    scratch_blocks: Vec<u32>,
    /// Valid blocks of a victim (relative block, owner), reused.
    victim_blocks: Vec<(u32, u32)>,
    /// ALFS: the metadata log (keys: logical metadata blocks) and the mapping area (keys:
    /// TIMB blocks); dirty TIMB blocks.
    metalog: Ring,
    mapping: Ring,
    timb_dirty: Vec<u32>,
    timb_dirty_bits: Vec<u64>,
    /// Application pages written (the clock of cost-benefit ages).
    clock: u64,
    since_fsync: u64,
    since_checkpoint: u64,
    last_app_time: Option<u64>,
    /// Time stamp of the device requests being issued.
    now: u64,
    verify: Option<Verify>,
    app_request: u64,
    c: Counters,
}

#[inline]
fn flip(bits: &mut [u64], i: u32) -> bool {
    let (w, m) = ((i >> 6) as usize, 1u64 << (i & 63));
    bits[w] ^= m;
    bits[w] & m != 0
}

fn bitset(n: u64) -> Vec<u64> {
    vec![0; n.div_ceil(64) as usize]
}

impl Lfs {
    /// The file system `kind` (`f2fs` or `alfs`) on a fresh device; `verify` checks every
    /// application read end to end.
    pub fn new(cfg: &StackConfig, layout: &Layout, kind: StackKind, verify: bool) -> Result<Lfs> {
        let l = FsLayout::new(cfg, layout, kind)?;
        let lfs = &cfg.lfs;
        let s = l.section_pages;
        let main_blocks = l.main_sections as u64 * s as u64;
        let main_segments = main_blocks / l.segment_pages as u64;
        let alfs = kind == StackKind::Alfs;
        let device = layout.logical_pages;
        let (metalog, mapping) = if alfs {
            (
                Ring::new(l.metalog_start, l.metalog_sections, s, l.meta_blocks),
                Ring::new(l.mapping_start, ALFS_MAPPING_SECTIONS, s, l.timb_blocks),
            )
        } else {
            (Ring::default(), Ring::default())
        };
        let nat_blocks = l.nat_copy_blocks;
        let sit_blocks = l.sit_copy_blocks;
        Ok(Lfs {
            alfs,
            // On zones a freed section is reset (F2FS's zoned mode resets a zone whose
            // section it frees), or it could not be written again.
            trim_freed: alfs || lfs.discard || cfg.zns.is_some(),
            checkpoint_discard: !alfs && lfs.checkpoint_discard,
            pending_discard: Vec::new(),
            page_bytes: l.page_size as u64,
            victim: lfs.victim,
            idle_victim: lfs.idle_victim,
            idle_ns: lfs.idle_ns,
            idle_slow_ns: lfs.idle_slow_ns,
            idle_free_sections: (lfs.idle_free_fraction * l.main_sections as f64).ceil() as usize,
            fsync_every: lfs.fsync_every_pages,
            checkpoint_every: lfs.checkpoint_every_pages,
            checkpoint_interval: lfs.checkpoint_interval_ns,
            last_checkpoint_time: None,
            map: vec![NONE; l.app_pages as usize],
            owner: vec![NONE; main_blocks as usize],
            node_addr: vec![NONE; l.nodes as usize],
            valid: vec![0; l.main_sections as usize],
            valid_blocks: 0,
            mtime: vec![0; l.main_sections as usize],
            state: vec![Section::Free; l.main_sections as usize],
            free: (0..l.main_sections).collect(),
            greedy: GreedyIndex::new(l.main_sections, s),
            logs: [Log {
                section: NONE,
                next: 0,
            }; 3],
            dirty_nodes: Vec::new(),
            node_dirty: bitset(l.nodes as u64),
            nat_dirty: Vec::new(),
            nat_dirty_bits: bitset(l.nodes as u64),
            sit_dirty: Vec::new(),
            sit_dirty_bits: bitset(main_segments),
            nat_copy: bitset(nat_blocks),
            sit_copy: bitset(sit_blocks),
            cp_pack: 0,
            scratch_blocks: Vec::new(),
            victim_blocks: Vec::new(),
            metalog,
            mapping,
            timb_dirty: Vec::new(),
            timb_dirty_bits: bitset(l.timb_blocks),
            clock: 0,
            since_fsync: 0,
            since_checkpoint: 0,
            last_app_time: None,
            now: 0,
            verify: verify.then(|| Verify {
                app_shadow: vec![0; l.app_pages as usize],
                written: vec![0; device as usize],
                seq_of: vec![0; device as usize],
                version_of: vec![0; device as usize],
                checks: Vec::new(),
                at: 0,
                next_version: 0,
            }),
            app_request: 0,
            c: Counters::default(),
            l,
        })
    }

    /// The layout of the file system.
    pub fn layout(&self) -> &FsLayout {
        &self.l
    }

    // ----- device requests -----

    /// Adds one device page to the requests: merged into the last request when it extends
    /// it (same operation, origin and time).
    #[inline]
    fn emit(
        &mut self,
        out: &mut Vec<(Request, Origin)>,
        op: Op,
        origin: Origin,
        block: u64,
        check: Option<(u64, u32)>,
    ) {
        let offset = block * self.page_bytes;
        let page = self.page_bytes as u32;
        match out.last_mut() {
            Some((last, o))
                if *o == origin
                    && last.op == op
                    && last.time_ns == self.now
                    && last.offset_bytes + last.len_bytes as u64 == offset
                    && last.len_bytes <= u32::MAX / 2 =>
            {
                last.len_bytes += page;
            }
            _ => out.push((
                Request {
                    time_ns: self.now,
                    offset_bytes: offset,
                    len_bytes: page,
                    op,
                },
                origin,
            )),
        }
        if let (Some(v), Some((version, app_page))) = (self.verify.as_mut(), check) {
            if op == Op::Write {
                v.written[block as usize] = version;
            }
            v.checks.push(Check {
                block: block as u32,
                version,
                app_page,
            });
        }
    }

    /// What the stack last put in device page `block` (verification; 0 otherwise).
    #[inline]
    fn written(&self, block: u64) -> u64 {
        self.verify
            .as_ref()
            .map_or(0, |v| v.written[block as usize])
    }

    #[inline]
    fn section_of(&self, block: u64) -> u32 {
        ((block - self.l.main_start) / self.l.section_pages as u64) as u32
    }

    #[inline]
    fn mark_sit(&mut self, block: u64) {
        let segment = ((block - self.l.main_start) / self.l.segment_pages as u64) as u32;
        if !test_and_set(&mut self.sit_dirty_bits, segment) {
            self.sit_dirty.push(segment);
        }
    }

    #[inline]
    fn mark_node(&mut self, nid: u32) {
        if !test_and_set(&mut self.node_dirty, nid) {
            self.dirty_nodes.push(nid);
        }
    }

    #[inline]
    fn mark_nat(&mut self, nid: u32) {
        if !test_and_set(&mut self.nat_dirty_bits, nid) {
            self.nat_dirty.push(nid);
        }
    }

    // ----- the main area -----

    /// A block of the main area no longer holds live data.
    fn invalidate(&mut self, block: u64, out: &mut Vec<(Request, Origin)>) {
        let rel = (block - self.l.main_start) as usize;
        debug_assert!(self.owner[rel] != NONE);
        self.owner[rel] = NONE;
        if self.checkpoint_discard {
            self.pending_discard.push(rel as u32);
        }
        let sec = self.section_of(block);
        self.valid[sec as usize] -= 1;
        self.valid_blocks -= 1;
        self.mark_sit(block);
        if self.state[sec as usize] == Section::Full {
            self.greedy.page_invalidated(sec);
            if self.valid[sec as usize] == 0 {
                self.release(sec, Origin::HostCleaning, out);
            }
        }
    }

    /// A section with no valid block becomes free (trimmed whole with `alfs`/discard, the
    /// trim issued as `origin`).
    fn release(&mut self, sec: u32, origin: Origin, out: &mut Vec<(Request, Origin)>) {
        debug_assert_eq!(self.valid[sec as usize], 0);
        self.greedy.remove(sec);
        self.state[sec as usize] = Section::Free;
        self.free.push_back(sec);
        if self.trim_freed {
            let first = self.l.main_start + sec as u64 * self.l.section_pages as u64;
            for b in first..first + self.l.section_pages as u64 {
                self.emit(out, Op::Trim, origin, b, None);
            }
            self.c.sections_trimmed += 1;
        }
    }

    /// The next block of log `log`, opening a section (and cleaning first, in the
    /// foreground, when few are free) when its section is full.
    fn alloc(&mut self, log: usize, out: &mut Vec<(Request, Origin)>) -> Result<u64> {
        let s = self.l.section_pages;
        let seg = self.l.segment_pages;
        let Log { section, next } = self.logs[log];
        if section != NONE && next > 0 && next.is_multiple_of(seg) {
            // The log's current F2FS segment is complete: its summary block.
            let segno = (section as u64 * s as u64 + next as u64 - 1) / seg as u64;
            self.write_meta(self.l.ssa_start + segno, out)?;
        }
        if section == NONE || self.logs[log].next == s {
            self.open_section(log, out)?;
        }
        let log_state = &mut self.logs[log];
        let sec = log_state.section;
        let block = self.l.main_start + sec as u64 * s as u64 + log_state.next as u64;
        log_state.next += 1;
        self.valid[sec as usize] += 1;
        self.valid_blocks += 1;
        self.mtime[sec as usize] = self.clock;
        self.mark_sit(block);
        Ok(block)
    }

    fn open_section(&mut self, log: usize, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        let old = self.logs[log].section;
        self.logs[log].section = NONE;
        if old != NONE {
            self.state[old as usize] = Section::Full;
            self.greedy.insert(old, self.valid[old as usize]);
            if self.valid[old as usize] == 0 {
                self.release(old, Origin::HostCleaning, out);
            }
        }
        if log != COLD {
            let mut rounds = self.l.main_sections;
            while self.free.len() < FOREGROUND_FREE_SECTIONS {
                rounds = rounds.saturating_sub(1);
                if rounds == 0 || !self.clean(self.victim, Origin::HostCleaning, out)? {
                    break;
                }
            }
        }
        let sec = self.free.pop_front().ok_or_else(|| Error::DeviceFull {
            message: format!(
                "the {} file system has no free section left and none to clean: its live \
                 data fills the main area (raise lfs.over_provisioning)",
                self.l.kind.name()
            ),
        })?;
        self.state[sec as usize] = Section::Open;
        self.logs[log] = Log {
            section: sec,
            next: 0,
        };
        Ok(())
    }

    /// The victim among the full sections: fewest valid blocks, or highest
    /// (1 - u) / 2u x age.
    fn select_victim(&mut self, policy: VictimPolicy) -> Option<u32> {
        let s = self.l.section_pages;
        match policy {
            // (Refused by `LfsConfig::validate`.)
            VictimPolicy::Greedy | VictimPolicy::Fifo => {
                self.greedy.min_below(s).map(|(sec, _)| sec)
            }
            VictimPolicy::CostBenefit => {
                let mut best: Option<(f64, u32)> = None;
                for sec in 0..self.l.main_sections {
                    if self.state[sec as usize] != Section::Full {
                        continue;
                    }
                    let valid = self.valid[sec as usize];
                    if valid >= s {
                        continue;
                    }
                    let age = self.clock.saturating_sub(self.mtime[sec as usize]);
                    let score = cost_benefit(valid as u64, s as u64, age);
                    if best.is_none_or(|(b, _)| score > b) {
                        best = Some((score, sec));
                    }
                }
                best.map(|(_, sec)| sec)
            }
        }
    }

    /// Cleans one victim: reads its summary and valid blocks, rewrites them to the cold
    /// log, frees (and with `alfs` trims) it, its requests issued as `origin` (in the
    /// foreground or in idle time). False when no section has an invalid block.
    fn clean(
        &mut self,
        policy: VictimPolicy,
        origin: Origin,
        out: &mut Vec<(Request, Origin)>,
    ) -> Result<bool> {
        let Some(victim) = self.select_victim(policy) else {
            return Ok(false);
        };
        let s = self.l.section_pages;
        let first = self.l.main_start + victim as u64 * s as u64;
        // Its summary blocks say who owns each block.
        let seg = self.l.segment_pages;
        let first_segment = victim as u64 * (s / seg) as u64;
        for segno in first_segment..first_segment + (s / seg) as u64 {
            self.read_meta(self.l.ssa_start + segno, out);
        }
        let mut blocks = std::mem::take(&mut self.victim_blocks);
        blocks.clear();
        let rel0 = (first - self.l.main_start) as usize;
        for off in 0..s as usize {
            let owner = self.owner[rel0 + off];
            if owner != NONE {
                blocks.push((off as u32, owner));
            }
        }
        for &(off, _) in &blocks {
            let b = first + off as u64;
            let version = self.written(b);
            self.emit(out, Op::Read, origin, b, Some((version, NONE)));
        }
        let app_pages = self.l.app_pages as u32;
        let mut result = Ok(());
        for &(off, owner) in &blocks {
            let old = first + off as u64;
            let version = self.written(old);
            let new = match self.alloc(COLD, out) {
                Ok(b) => b,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            self.owner[(new - self.l.main_start) as usize] = owner;
            self.owner[(old - self.l.main_start) as usize] = NONE;
            if self.checkpoint_discard {
                self.pending_discard.push((old - self.l.main_start) as u32);
            }
            self.valid[victim as usize] -= 1;
            self.valid_blocks -= 1;
            self.mark_sit(old);
            if owner < app_pages {
                self.map[owner as usize] = new as u32;
                self.mark_node(owner / self.l.addrs_per_node);
            } else {
                let nid = owner - app_pages;
                self.node_addr[nid as usize] = new as u32;
                self.mark_nat(nid);
            }
            self.emit(out, Op::Write, origin, new, Some((version, NONE)));
        }
        self.c.cleaning_pages_moved += blocks.len() as u64;
        self.victim_blocks = blocks;
        result?;
        self.c.sections_cleaned += 1;
        self.release(victim, origin, out);
        Ok(true)
    }

    // ----- metadata -----

    /// Writes logical metadata block `lid`: in place (`f2fs`) or appended to the metadata
    /// log (`alfs`).
    fn write_meta(&mut self, lid: u64, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        self.c.meta_pages_written += 1;
        if self.alfs {
            self.ring_append(false, lid as u32, out)
        } else {
            self.emit(
                out,
                Op::Write,
                Origin::FsMetadata,
                lid,
                Some((META_TAG | lid, NONE)),
            );
            Ok(())
        }
    }

    /// Reads logical metadata block `lid` (where the TIMB says, with `alfs`), if written.
    fn read_meta(&mut self, lid: u64, out: &mut Vec<(Request, Origin)>) {
        let block = if self.alfs {
            match self.metalog.loc[lid as usize] {
                NONE => return,
                pos => self.metalog.start + pos as u64,
            }
        } else if self.written_meta(lid) {
            lid
        } else {
            return;
        };
        self.c.ssa_pages_read += 1;
        self.emit(
            out,
            Op::Read,
            Origin::FsMetadata,
            block,
            Some((META_TAG | lid, NONE)),
        );
    }

    /// `f2fs`: whether a metadata block was ever written (an SSA block is written when its
    /// segment fills, before the segment can be a victim: always, unless verification says
    /// otherwise).
    fn written_meta(&self, lid: u64) -> bool {
        self.verify
            .as_ref()
            .is_none_or(|v| v.written[lid as usize] != 0)
    }

    /// Appends `key` to the metadata log (`mapping` false: a logical metadata block) or to
    /// the mapping area (true: a TIMB block), cleaning the ring's oldest section when its
    /// head reaches it.
    fn ring_append(
        &mut self,
        mapping: bool,
        key: u32,
        out: &mut Vec<(Request, Origin)>,
    ) -> Result<()> {
        let mut ring = std::mem::take(if mapping {
            &mut self.mapping
        } else {
            &mut self.metalog
        });
        let tag = if mapping { TIMB_TAG } else { META_TAG };
        let s = ring.section_pages;
        ring.queue.push_back(key);
        let mut guard = ring.sections as u64 * s as u64 * 4 + 16;
        while let Some(key) = ring.queue.pop_front() {
            guard -= 1;
            if guard == 0 {
                self.restore_ring(mapping, ring);
                return Err(Error::DeviceFull {
                    message: format!(
                        "the alfs {} area is full of live blocks",
                        if mapping { "mapping" } else { "metadata log" }
                    ),
                });
            }
            if ring.head_off == s {
                let next = (ring.head + 1) % ring.sections;
                ring.head = next;
                ring.head_off = 0;
                ring.used[next as usize] = true;
                let after = (next + 1) % ring.sections;
                if after != next && ring.used[after as usize] {
                    // Clean the oldest section: read its live blocks (the TIMB is in host
                    // memory: the mapping area is not read), trim it, append them again.
                    let base = after * s;
                    let mut live = std::mem::take(&mut ring.live);
                    live.clear();
                    for pos in base..base + s {
                        let k = ring.holder[pos as usize];
                        if k != NONE {
                            live.push((pos, k));
                        }
                    }
                    for &(pos, k) in &live {
                        if !mapping {
                            let version = tag | k as u64;
                            self.emit(
                                out,
                                Op::Read,
                                Origin::FsMetadata,
                                ring.start + pos as u64,
                                Some((version, NONE)),
                            );
                        }
                        ring.holder[pos as usize] = NONE;
                        ring.loc[k as usize] = NONE;
                        ring.queue.push_back(k);
                    }
                    ring.moved += live.len() as u64;
                    ring.live = live;
                    for pos in base..base + s {
                        self.emit(
                            out,
                            Op::Trim,
                            Origin::FsMetadata,
                            ring.start + pos as u64,
                            None,
                        );
                    }
                    ring.used[after as usize] = false;
                    ring.trimmed += 1;
                }
            }
            let pos = ring.head * s + ring.head_off;
            ring.head_off += 1;
            let old = ring.loc[key as usize];
            if old != NONE {
                ring.holder[old as usize] = NONE;
            }
            ring.loc[key as usize] = pos;
            ring.holder[pos as usize] = key;
            self.emit(
                out,
                Op::Write,
                Origin::FsMetadata,
                ring.start + pos as u64,
                Some((tag | key as u64, NONE)),
            );
            if !mapping {
                let t = key / self.l.timb_per_block;
                if !test_and_set(&mut self.timb_dirty_bits, t) {
                    self.timb_dirty.push(t);
                }
            }
        }
        self.restore_ring(mapping, ring);
        Ok(())
    }

    fn restore_ring(&mut self, mapping: bool, ring: Ring) {
        if mapping {
            self.mapping = ring;
        } else {
            self.metalog = ring;
        }
    }

    /// Writes the dirty node blocks to the node log (an fsync).
    fn flush_nodes(&mut self, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        let mut nodes = std::mem::take(&mut self.dirty_nodes);
        let app_pages = self.l.app_pages as u32;
        let mut result = Ok(());
        for &nid in &nodes {
            clear_bit(&mut self.node_dirty, nid);
            if result.is_err() {
                continue;
            }
            let old = self.node_addr[nid as usize];
            if old != NONE {
                self.invalidate(old as u64, out);
            }
            match self.alloc(NODE, out) {
                Ok(new) => {
                    self.node_addr[nid as usize] = new as u32;
                    self.owner[(new - self.l.main_start) as usize] = app_pages + nid;
                    self.mark_nat(nid);
                    self.c.node_pages_written += 1;
                    self.emit(
                        out,
                        Op::Write,
                        Origin::FsMetadata,
                        new,
                        Some((NODE_TAG | nid as u64, NONE)),
                    );
                }
                Err(e) => {
                    self.node_addr[nid as usize] = NONE;
                    result = Err(e);
                }
            }
        }
        nodes.clear();
        // Cleaning during the flush may have dirtied nodes again: they wait for the next.
        nodes.append(&mut self.dirty_nodes);
        self.dirty_nodes = nodes;
        self.c.fsyncs += 1;
        result
    }

    /// A checkpoint: dirty nodes, then the NAT and SIT blocks that changed (or their
    /// journal), then the pack; with `alfs`, the dirty TIMB blocks.
    fn checkpoint(&mut self, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        self.flush_nodes(out)?;
        let mut blocks = std::mem::take(&mut self.scratch_blocks);
        // NAT.
        let nat_entries = self.nat_dirty.len() as u64;
        blocks.clear();
        for &nid in &self.nat_dirty {
            blocks.push(nid / self.l.nat_per_block);
        }
        for &nid in &self.nat_dirty {
            clear_bit(&mut self.nat_dirty_bits, nid);
        }
        self.nat_dirty.clear();
        let mut result = Ok(());
        if nat_entries > NAT_JOURNAL_ENTRIES {
            blocks.sort_unstable();
            blocks.dedup();
            for &b in &blocks {
                let copy = flip(&mut self.nat_copy, b) as u64;
                let lid = self.l.nat_start + copy * self.l.nat_copy_blocks + b as u64;
                if let Err(e) = self.write_meta(lid, out) {
                    result = Err(e);
                    break;
                }
            }
        }
        // SIT.
        let sit_entries = self.sit_dirty.len() as u64;
        blocks.clear();
        for &segno in &self.sit_dirty {
            blocks.push(segno / self.l.sit_per_block);
        }
        for &segno in &self.sit_dirty {
            clear_bit(&mut self.sit_dirty_bits, segno);
        }
        self.sit_dirty.clear();
        if result.is_ok() && sit_entries > SIT_JOURNAL_ENTRIES {
            blocks.sort_unstable();
            blocks.dedup();
            for &b in &blocks {
                let copy = flip(&mut self.sit_copy, b) as u64;
                let lid = self.l.sit_start + copy * self.l.sit_copy_blocks + b as u64;
                if let Err(e) = self.write_meta(lid, out) {
                    result = Err(e);
                    break;
                }
            }
        }
        self.scratch_blocks = blocks;
        result?;
        // The pack, to the other of the two.
        self.cp_pack ^= 1;
        let pack = self.l.cp_start + self.cp_pack * self.l.segment_pages as u64;
        for i in 0..CP_PACK_BLOCKS {
            self.write_meta(pack + i, out)?;
        }
        if self.alfs {
            let dirty = std::mem::take(&mut self.timb_dirty);
            let mut result = Ok(());
            for &t in &dirty {
                clear_bit(&mut self.timb_dirty_bits, t);
                if result.is_ok() {
                    self.c.timb_pages_written += 1;
                    result = self.ring_append(true, t, out);
                }
            }
            let mut dirty = dirty;
            dirty.clear();
            self.timb_dirty = dirty;
            result?;
        }
        if self.checkpoint_discard {
            self.discard_invalidated(out);
        }
        self.c.checkpoints += 1;
        Ok(())
    }

    /// Trims the blocks invalidated since the last checkpoint that are still invalid (a
    /// block of a section freed and written again since holds live data and is kept).
    fn discard_invalidated(&mut self, out: &mut Vec<(Request, Origin)>) {
        let mut pending = std::mem::take(&mut self.pending_discard);
        pending.sort_unstable();
        pending.dedup();
        for &rel in &pending {
            if self.owner[rel as usize] == NONE {
                let block = self.l.main_start + rel as u64;
                self.emit(out, Op::Trim, Origin::HostCleaning, block, None);
                self.c.blocks_discarded += 1;
            }
        }
        pending.clear();
        self.pending_discard = pending;
    }

    // ----- application requests -----

    fn write_page(
        &mut self,
        page: u32,
        partial: bool,
        out: &mut Vec<(Request, Origin)>,
    ) -> Result<()> {
        let old = self.map[page as usize];
        if partial && old != NONE {
            // Read-modify-write of a partial block.
            let version = self
                .verify
                .as_ref()
                .map_or(0, |v| v.app_shadow[page as usize]);
            self.emit(
                out,
                Op::Read,
                Origin::Application,
                old as u64,
                Some((version, page)),
            );
        }
        let version = match self.verify.as_mut() {
            Some(v) => {
                v.next_version += 1;
                v.app_shadow[page as usize] = v.next_version;
                v.next_version
            }
            None => 0,
        };
        if old != NONE {
            self.map[page as usize] = NONE;
            self.invalidate(old as u64, out);
        }
        let block = self.alloc(DATA, out)?;
        self.map[page as usize] = block as u32;
        self.owner[(block - self.l.main_start) as usize] = page;
        self.mark_node(page / self.l.addrs_per_node);
        self.clock += 1;
        self.since_fsync += 1;
        self.since_checkpoint += 1;
        self.c.app_pages_written += 1;
        self.emit(
            out,
            Op::Write,
            Origin::Application,
            block,
            Some((version, page)),
        );
        Ok(())
    }

    fn read_page(&mut self, page: u32, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        self.c.app_pages_read += 1;
        let block = self.map[page as usize];
        let expected = self
            .verify
            .as_ref()
            .map_or(0, |v| v.app_shadow[page as usize]);
        if block == NONE {
            self.c.app_unmapped_reads += 1;
            if expected != 0 {
                return Err(Error::Verify {
                    request: self.app_request,
                    lpa: page as u64,
                    expected: format!("application write #{expected}"),
                    served: "nothing: the file system has no block for it".into(),
                });
            }
            return Ok(());
        }
        self.emit(
            out,
            Op::Read,
            Origin::Application,
            block as u64,
            Some((expected, page)),
        );
        Ok(())
    }

    fn trim_page(&mut self, page: u32, out: &mut Vec<(Request, Origin)>) {
        self.c.app_pages_trimmed += 1;
        if let Some(v) = self.verify.as_mut() {
            v.app_shadow[page as usize] = 0;
        }
        let old = self.map[page as usize];
        if old != NONE {
            self.map[page as usize] = NONE;
            self.invalidate(old as u64, out);
            self.mark_node(page / self.l.addrs_per_node);
        }
    }

    /// Whether background cleaning is wanted: fewer than `lfs.idle_free_fraction` of the
    /// sections free, and the free sections holding less than 40% of the main area's
    /// blocks without valid data (F2FS's `LIMIT_FREE_BLOCK`, counted over the whole main
    /// area: the rest of that space may stay scattered in full sections, so the target is
    /// always within reach of cleaning).
    fn background_wanted(&self) -> bool {
        let s = self.l.section_pages as u64;
        let main = self.l.main_sections as u64 * s;
        let without_valid = main.saturating_sub(self.valid_blocks);
        let free = self.free.len() as u64 * s;
        self.free.len() < self.idle_free_sections && free * 100 < without_valid * IDLE_FREE_PERCENT
    }

    /// Whether cleaning pays (F2FS's `has_enough_invalid_blocks`, with the reserved
    /// sections as its over-provisioning): more than 40% of the application's space holds
    /// no valid block, and less than 40% of that is in free sections beyond the reserve.
    /// F2FS's background GC then sleeps its shortest time between victims, otherwise its
    /// longest.
    fn enough_invalid(&self) -> bool {
        let s = self.l.section_pages as u64;
        let reserved = self.l.reserved_sections as u64;
        let user = (self.l.main_sections as u64 - reserved) * s;
        let without_valid = user.saturating_sub(self.valid_blocks);
        let free_user = (self.free.len() as u64).saturating_sub(reserved) * s;
        without_valid * 100 > user * IDLE_INVALID_PERCENT
            && free_user * 100 < without_valid * IDLE_FREE_PERCENT
    }

    /// Idle time before the request: clean in the background while the application is
    /// away, one victim per `idle_ns` of the gap (per `idle_slow_ns` while cleaning does
    /// not pay, [`Lfs::enough_invalid`]).
    fn idle(&mut self, time: u64, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        let Some(mut at) = self.last_app_time else {
            return Ok(());
        };
        if self.idle_ns == 0 {
            return Ok(());
        }
        while self.background_wanted() {
            let pace = if self.enough_invalid() {
                self.idle_ns
            } else {
                self.idle_slow_ns
            };
            if pace == 0 || at.saturating_add(pace) > time {
                break;
            }
            at += pace;
            self.now = at;
            if !self.clean(self.idle_victim, Origin::IdleCleaning, out)? {
                break;
            }
            self.c.sections_cleaned_idle += 1;
        }
        Ok(())
    }
}

impl HostStack for Lfs {
    fn name(&self) -> &'static str {
        self.l.kind.name()
    }

    fn app_pages(&self) -> Option<u64> {
        Some(self.l.app_pages)
    }

    fn transform(&mut self, req: &Request, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        self.app_request += 1;
        self.c.app_requests += 1;
        if let Some(v) = self.verify.as_mut() {
            v.checks.clear();
            v.at = 0;
        }
        self.idle(req.time_ns, out)?;
        self.last_app_time = Some(req.time_ns);
        self.now = req.time_ns;
        let page = self.page_bytes;
        let start = req.offset_bytes;
        let end = start.saturating_add(req.len_bytes as u64);
        let first = start / page;
        let last = end.div_ceil(page);
        if last > self.l.app_pages {
            return Err(Error::OutOfRange {
                request: self.app_request,
                lpa: last - 1,
                logical_pages: self.l.app_pages,
            });
        }
        match req.op {
            Op::Read => {
                self.c.app_read_requests += 1;
                self.c.app_bytes_read += req.len_bytes as u64;
                for p in first..last {
                    self.read_page(p as u32, out)?;
                }
            }
            Op::Write => {
                self.c.app_write_requests += 1;
                self.c.app_bytes_written += req.len_bytes as u64;
                for p in first..last {
                    let partial = (p == first && !start.is_multiple_of(page))
                        || (p == last - 1 && !end.is_multiple_of(page));
                    self.write_page(p as u32, partial, out)?;
                }
                if self.fsync_every > 0 && self.since_fsync >= self.fsync_every {
                    self.since_fsync = 0;
                    self.flush_nodes(out)?;
                }
                let since = *self.last_checkpoint_time.get_or_insert(req.time_ns);
                let by_pages =
                    self.checkpoint_every > 0 && self.since_checkpoint >= self.checkpoint_every;
                let by_time = self.checkpoint_interval > 0
                    && req.time_ns >= since.saturating_add(self.checkpoint_interval);
                if by_pages || by_time {
                    self.since_checkpoint = 0;
                    self.since_fsync = 0;
                    self.last_checkpoint_time = Some(req.time_ns);
                    self.checkpoint(out)?;
                }
            }
            Op::Trim => {
                self.c.app_trim_requests += 1;
                for p in start.div_ceil(page)..end / page {
                    self.trim_page(p as u32, out);
                }
            }
        }
        Ok(())
    }

    fn wants_completions(&self) -> bool {
        self.verify.is_some()
    }

    fn completed(&mut self, req: &Request, first_seq: u64, served: &[Option<u64>]) -> Result<()> {
        let Some(v) = self.verify.as_mut() else {
            return Ok(());
        };
        if req.op == Op::Trim {
            return Ok(());
        }
        let pages = (req.len_bytes as u64 / self.page_bytes) as usize;
        for i in 0..pages {
            let check = v.checks[v.at + i];
            let b = check.block as usize;
            match req.op {
                Op::Write => {
                    v.seq_of[b] = first_seq + i as u64;
                    v.version_of[b] = check.version;
                }
                _ => {
                    let got = served.get(i).copied().flatten();
                    let right_write = got == Some(v.seq_of[b]) && v.seq_of[b] != 0;
                    if !right_write || v.version_of[b] != check.version {
                        let what = if check.app_page == NONE {
                            format!("device page {b} (read by the file system itself)")
                        } else {
                            format!("application page {} (device page {b})", check.app_page)
                        };
                        return Err(Error::Verify {
                            request: self.app_request,
                            lpa: if check.app_page == NONE {
                                b as u64
                            } else {
                                check.app_page as u64
                            },
                            expected: format!(
                                "{what}: version {} (device write #{})",
                                check.version, v.seq_of[b]
                            ),
                            served: match got {
                                None => "nothing (unmapped)".into(),
                                Some(seq) if seq == v.seq_of[b] => format!(
                                    "device write #{seq}, which holds version {}",
                                    v.version_of[b]
                                ),
                                Some(seq) => format!("device write #{seq}"),
                            },
                        });
                    }
                }
            }
        }
        v.at += pages;
        Ok(())
    }

    fn reclaims(&self) -> u64 {
        self.c.sections_cleaned
    }

    /// A long idle time: background cleaning until it is no longer wanted
    /// ([`Lfs::background_wanted`]), whatever its pace.
    fn settle(&mut self, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        if self.idle_ns == 0 {
            return Ok(());
        }
        let mut rounds = self.l.main_sections as u64 * 4;
        while rounds > 0 && self.background_wanted() {
            rounds -= 1;
            if !self.clean(self.idle_victim, Origin::IdleCleaning, out)? {
                break;
            }
            self.c.sections_cleaned_idle += 1;
        }
        Ok(())
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        self.l.memory(out);
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        let c = &self.c;
        for (name, value) in [
            ("app_requests", c.app_requests),
            ("app_read_requests", c.app_read_requests),
            ("app_write_requests", c.app_write_requests),
            ("app_trim_requests", c.app_trim_requests),
            ("app_bytes_read", c.app_bytes_read),
            ("app_bytes_written", c.app_bytes_written),
            ("app_pages_read", c.app_pages_read),
            ("app_pages_written", c.app_pages_written),
            ("app_pages_trimmed", c.app_pages_trimmed),
            ("app_unmapped_reads", c.app_unmapped_reads),
            ("sections_cleaned", c.sections_cleaned),
            ("sections_cleaned_idle", c.sections_cleaned_idle),
            ("cleaning_pages_moved", c.cleaning_pages_moved),
            ("ssa_pages_read", c.ssa_pages_read),
            ("node_pages_written", c.node_pages_written),
            ("meta_pages_written", c.meta_pages_written),
            ("checkpoints", c.checkpoints),
            ("fsyncs", c.fsyncs),
            ("sections_trimmed", c.sections_trimmed),
            ("blocks_discarded", c.blocks_discarded),
            ("timb_pages_written", c.timb_pages_written),
            ("metalog_pages_moved", self.metalog.moved),
            ("metalog_sections_trimmed", self.metalog.trimmed),
            ("mapping_sections_trimmed", self.mapping.trimmed),
            ("free_sections", self.free.len() as u64),
            ("main_sections", self.l.main_sections as u64),
            ("section_pages", self.l.section_pages as u64),
        ] {
            out.push((name, value as f64));
        }
    }

    fn reset_counters(&mut self) {
        self.c = Counters::default();
        self.metalog.moved = 0;
        self.metalog.trimmed = 0;
        self.mapping.moved = 0;
        self.mapping.trimmed = 0;
        self.last_app_time = None;
        self.last_checkpoint_time = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::simulator::Simulator;
    use crate::device::nand::Flash;
    use crate::ftl::Scheme;
    use crate::host::Stacked;
    use crate::run::config::Config;

    fn stacked() -> Stacked<Lfs, crate::ftl::aftl::Aftl> {
        let mut cfg = Config::default();
        let g = &mut cfg.geometry;
        (
            g.channels,
            g.chips_per_channel,
            g.dies_per_chip,
            g.planes_per_die,
        ) = (2, 1, 2, 2);
        (g.blocks_per_plane, g.pages_per_block) = (64, 16);
        let layout = cfg.validate().unwrap();
        let ftl = crate::ftl::aftl::Aftl::new(&cfg.scheme_context(), &layout).unwrap();
        let flash = Flash::new(&cfg.device(), &layout, ftl.extra_oob_bytes(), true).unwrap();
        let sim = Simulator::new(&cfg.controller(), &layout, ftl, flash, true);
        let lfs = Lfs::new(&cfg.stack(), &layout, StackKind::Alfs, true).unwrap();
        Stacked::new(lfs, sim)
    }

    fn req(op: Op, page: u64, pages: u32) -> Request {
        Request {
            time_ns: 0,
            offset_bytes: page * 4096,
            len_bytes: pages * 4096,
            op,
        }
    }

    /// The end-to-end check fails when the file system's map points at the wrong block,
    /// or has lost a page: it compares what the device served with what the application
    /// wrote, not with what the file system believes.
    #[test]
    fn verification_catches_a_wrong_or_lost_mapping() {
        let mut s = stacked();
        s.submit(&req(Op::Write, 0, 8)).unwrap();
        s.submit(&req(Op::Read, 0, 8)).unwrap();
        s.stack.map.swap(2, 3);
        let err = s.submit(&req(Op::Read, 2, 1)).unwrap_err();
        assert!(matches!(err, Error::Verify { lpa: 2, .. }), "{err}");
        let mut s = stacked();
        s.submit(&req(Op::Write, 0, 8)).unwrap();
        s.stack.map[5] = NONE;
        let err = s.submit(&req(Op::Read, 4, 2)).unwrap_err();
        assert!(err.to_string().contains("no block for it"), "{err}");
    }

    /// Cleaning copies what the device served: a victim whose block the device no longer
    /// holds as written is caught when cleaning reads it.
    #[test]
    fn verification_follows_data_through_cleaning() {
        let mut s = stacked();
        let app = s.stack.l.app_pages;
        // Fill the space, then overwrite random pages of its first half: cleaning moves
        // the live blocks of the victims, the second half's among them.
        for p in (0..app - 4).step_by(4) {
            s.submit(&req(Op::Write, p, 4)).unwrap();
        }
        let mut rng = crate::rng::Rng::new(7);
        for _ in 0..3 * app {
            s.submit(&req(Op::Write, rng.below(app / 2), 1)).unwrap();
        }
        assert!(s.stack.c.sections_cleaned > 0);
        for p in (0..app - 4).step_by(4) {
            s.submit(&req(Op::Read, p, 4)).unwrap();
        }
        // Forge the version the stack believes a live block holds: the next cleaning or
        // read of it fails.
        let block = s.stack.map[app as usize - 5] as usize;
        s.stack.verify.as_mut().unwrap().version_of[block] += 1;
        let err = s.submit(&req(Op::Read, app - 5, 1)).unwrap_err();
        assert!(matches!(err, Error::Verify { .. }), "{err}");
    }
}
