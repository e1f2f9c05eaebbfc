//! FDP: NVMe Flexible Data Placement (TP4146, ratified 2022; Allison et al., "Towards
//! Efficient Flash Caches with Emerging NVMe Flexible Data Placement SSDs", EuroSys 2025).
//! A page-mapped SSD whose host tags writes with a placement identifier: the device keeps
//! each reclaim-unit handle's data in reclaim units of its own, and still collects garbage.
//!
//! - **Reclaim units and groups.** A reclaim unit (RU) is one block; a reclaim group (RG)
//!   is a parallel unit, whose blocks are its RUs. Each of the `fdp.handles` reclaim-unit
//!   handles (RUHs) has an open RU in every group; writes go round-robin over the groups
//!   (channel first), each to its handle's RU there.
//! - **Placement identifiers** (`fdp.placement`). A `Request` carries no identifier of its
//!   own (it is reads, writes and trims, and adding one would touch every trace reader,
//!   host stack and front); the host's placement is one of:
//!   - `origin` (the default): the host stack's log a write comes from. Application data
//!     is handle 0 (the default handle, which also takes every write of a stack that tags
//!     nothing), a file system's cleaning handle 1, its metadata handle 2 (modulo the
//!     handles). With `f2fs` on top, the file system's hot data, cold (cleaned) data and
//!     metadata each get reclaim units of their own.
//!   - `hint`: the trace's own identifier of each write. The trace readers keep one per
//!     record, its device (volume, LUN, disk: no format they read has stream or file ids
//!     that they keep); with `trace.device_layout = "separate"` each device's pages lie
//!     side by side, so a page's address tells its device, and device `k` is handle
//!     `k mod handles`. Where there is no hint (a one-device trace, a workload, a host
//!     file system that remaps the pages) every write goes to the default handle
//!     (`unhinted_pages` counts them).
//!   - `lifetime`: a classifier of each chunk's write frequency ([`crate::ftl::lifetime`],
//!     after AutoStream's multi-queue), its level the handle: data rewritten often shares
//!     reclaim units with data like it. Its table is device DRAM.
//! - **GC within reclaim groups.** A group opening an RU with fewer free blocks than
//!   `gc.threshold` collects one victim (greedy: fewest valid pages), and at or below
//!   `gc.hard_threshold` until it is above again; the victim's valid pages move to the open
//!   RU of the victim's own handle in the same group (initially isolated handles: GC never
//!   mixes handles).
//! - **Statistics** (the FDP statistics log page, per handle as well): host bytes written
//!   (`fdp_host_bytes_written`, `ruh<i>_host_bytes_written`) and media bytes written
//!   (`fdp_media_bytes_written`, `ruh<i>_media_bytes_written`): host pages plus GC copies.
//!   A handle's media bytes are its host bytes and its GC copies, exactly.
//!
//! DRAM: the page map (4 bytes per logical page), per block a valid count (4 bytes), the
//! reclaim-unit handle table (4 bytes per handle per group: its open RU), and with
//! `lifetime` the classifier's table.
//! The handle of each page is kept in one OOB byte beyond the header, so that a restart
//! rebuilds which handle each RU belongs to.

use crate::device::blocks::FreeBlocks;
use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob, Ppn, NONE};
use crate::error::{Error, Result};
use crate::ftl::interface::Interface;
use crate::ftl::kit::alloc::{gc_thresholds, round_robin};
use crate::ftl::lifetime::Lifetime;
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use serde::{Deserialize, Serialize};

/// Most reclaim-unit handles (the counters' names are static).
pub const MAX_HANDLES: u32 = 8;

const HOST_NAMES: [&str; MAX_HANDLES as usize] = [
    "ruh0_host_bytes_written",
    "ruh1_host_bytes_written",
    "ruh2_host_bytes_written",
    "ruh3_host_bytes_written",
    "ruh4_host_bytes_written",
    "ruh5_host_bytes_written",
    "ruh6_host_bytes_written",
    "ruh7_host_bytes_written",
];
const MEDIA_NAMES: [&str; MAX_HANDLES as usize] = [
    "ruh0_media_bytes_written",
    "ruh1_media_bytes_written",
    "ruh2_media_bytes_written",
    "ruh3_media_bytes_written",
    "ruh4_media_bytes_written",
    "ruh5_media_bytes_written",
    "ruh6_media_bytes_written",
    "ruh7_media_bytes_written",
];

/// How the host picks a write's placement identifier (`fdp.placement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// The host stack's log: application data, cleaning, metadata.
    Origin,
    /// The trace's own identifier (its device, side by side), else the default handle.
    Hint,
    /// A classifier of each chunk's write frequency.
    Lifetime,
}

/// The `[fdp]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FdpConfig {
    /// Reclaim-unit handles, 1 to 8 (each keeps an open reclaim unit in every group).
    pub handles: u32,
    /// `origin`, `hint` or `lifetime`.
    pub placement: Placement,
    /// `lifetime`: pages of a classifier chunk (a power of two; 256: 1 MiB of 4 KiB pages,
    /// AutoStream's chunk).
    pub lifetime_chunk_pages: u32,
    /// `lifetime`: a chunk's count halves every this many host pages written (0: the
    /// device's logical pages).
    pub lifetime_window_pages: u64,
}

impl Default for FdpConfig {
    fn default() -> Self {
        FdpConfig {
            handles: 4,
            placement: Placement::Origin,
            lifetime_chunk_pages: 256,
            lifetime_window_pages: 0,
        }
    }
}

/// A block no handle owns (free).
const FREE: u8 = u8::MAX;

pub struct Fdp {
    layout: Layout,
    handles: u32,
    placement: Placement,
    /// `hint`: first logical page of each of the trace's devices (empty: no hints).
    streams: Vec<u64>,
    lifetime: Option<Lifetime>,
    unhinted_pages: u64,
    l2p: Vec<Ppn>,
    /// Per block: valid pages, and the handle whose reclaim unit it is.
    valid: Vec<u32>,
    owner: Vec<u8>,
    free: FreeBlocks,
    /// Open reclaim unit of handle `h` in group `g` at `h * units + g`: (block, next page).
    open: Vec<(u32, u32)>,
    /// Groups in round-robin order, and the next position.
    order: Vec<u32>,
    next: usize,
    soft_free: usize,
    hard_free: usize,
    /// Host pages and GC copies per handle.
    host_pages: [u64; MAX_HANDLES as usize],
    gc_pages: [u64; MAX_HANDLES as usize],
}

impl Scheme for Fdp {
    const NAME: &'static str = "fdp";
    const DESCRIPTION: &'static str =
        "FDP (NVMe Flexible Data Placement): page-mapped, each placement handle's data in \
         reclaim units of its own, GC within each reclaim group keeps handles apart";
    type Section = FdpConfig;
    const INTERFACE: Interface = Interface::Fdp;
    const DEVICE_DEFAULTS: Option<&'static str> = Some("device.interface = \"fdp\"\n");

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let section: FdpConfig = Self::section(cfg)?;
        let handles = section.handles;
        if !(1..=MAX_HANDLES).contains(&handles) {
            return Err(Error::config(
                "fdp.handles",
                format!("{handles} is not between 1 and {MAX_HANDLES}"),
            ));
        }
        let chunk = section.lifetime_chunk_pages;
        if !chunk.is_power_of_two() {
            return Err(Error::config(
                "fdp.lifetime_chunk_pages",
                format!("{chunk} is not a power of two"),
            ));
        }
        let window = match section.lifetime_window_pages {
            0 => layout.logical_pages,
            n => n,
        };
        let lifetime = (section.placement == Placement::Lifetime)
            .then(|| Lifetime::new(layout.logical_pages, chunk, window, handles));
        let (soft_free, hard_free) = gc_thresholds(cfg, layout);
        Ok(Fdp {
            layout: *layout,
            handles,
            placement: section.placement,
            streams: cfg.stream_starts.clone(),
            lifetime,
            unhinted_pages: 0,
            l2p: vec![NONE; layout.logical_pages as usize],
            valid: vec![0; layout.total_blocks as usize],
            owner: vec![FREE; layout.total_blocks as usize],
            free: FreeBlocks::all(layout),
            open: vec![(NONE, 0); (handles * layout.units) as usize],
            order: round_robin(cfg, layout),
            next: 0,
            soft_free,
            hard_free,
            host_pages: [0; MAX_HANDLES as usize],
            gc_pages: [0; MAX_HANDLES as usize],
        })
    }

    fn extra_oob_bytes(&self) -> usize {
        1
    }
}

impl Fdp {
    /// The placement identifier of a host write of `lpa` (`fdp.placement`).
    #[inline]
    fn placement(&mut self, lpa: u32, flash: &Flash) -> u32 {
        let pid = match self.placement {
            Placement::Origin => match flash.host_cause() {
                Cause::HostCleaning => 1,
                Cause::FsMetadata => 2,
                _ => 0,
            },
            Placement::Hint => match self.streams.partition_point(|&s| s <= lpa as u64) {
                0 => {
                    self.unhinted_pages += 1;
                    0
                }
                k => (k - 1) as u32,
            },
            Placement::Lifetime => match self.lifetime.as_mut() {
                Some(classifier) => classifier.classify(lpa),
                None => 0,
            },
        };
        pid % self.handles
    }

    /// Host bytes and media bytes written through handle `h`.
    pub fn handle_bytes(&self, h: u32) -> (u64, u64) {
        let page = self.layout.page_size as u64;
        let (host, gc) = (self.host_pages[h as usize], self.gc_pages[h as usize]);
        (host * page, (host + gc) * page)
    }

    /// The next page of handle `h`'s reclaim unit in group `unit`, opening one if full;
    /// `collect`: the group collects first if it is low on free blocks (not from GC itself).
    fn page(&mut self, h: u32, unit: u32, collect: bool, flash: &mut Flash) -> Result<Ppn> {
        let slot = (h * self.layout.units + unit) as usize;
        let (block, next) = self.open[slot];
        if block != NONE && next < self.layout.pages_per_block {
            self.open[slot].1 += 1;
            return Ok(flash.first_page(block) + next);
        }
        if collect {
            self.collect(unit, flash)?;
        }
        // GC relocates into an RU taken from its reserve: host writes leave it one block.
        let keep = if collect { 1 } else { 0 };
        if self.free.count(unit) <= keep {
            return Err(Error::DeviceFull {
                message: format!(
                    "fdp: reclaim group {unit} has no free reclaim unit for handle {h}: each \
                     handle in use keeps a reclaim unit open in every group, beside the \
                     data; use fewer handles (fdp.handles) or raise ftl.over_provisioning"
                ),
            });
        }
        let block = self.free.pop(unit).expect("counted");
        self.owner[block as usize] = h as u8;
        self.open[slot] = (block, 1);
        Ok(flash.first_page(block))
    }

    /// GC in reclaim group `unit`: one victim below the soft threshold, victims until above
    /// the hard one.
    fn collect(&mut self, unit: u32, flash: &mut Flash) -> Result<()> {
        if self.free.count(unit) >= self.soft_free {
            return Ok(());
        }
        loop {
            self.reclaim_one(unit, flash)?;
            if self.free.count(unit) > self.hard_free {
                return Ok(());
            }
        }
    }

    /// Collects the closed RU of group `unit` with the fewest valid pages (greedy).
    fn reclaim_one(&mut self, unit: u32, flash: &mut Flash) -> Result<()> {
        let ppb = self.layout.pages_per_block;
        let first = unit * self.layout.blocks_per_unit;
        let victim = (first..first + self.layout.blocks_per_unit)
            .filter(|&b| self.owner[b as usize] != FREE && !self.is_open(b))
            .min_by_key(|&b| self.valid[b as usize]);
        let Some(victim) = victim.filter(|&b| self.valid[b as usize] < ppb) else {
            return Err(Error::DeviceFull {
                message: format!(
                    "fdp: reclaim group {unit} has no reclaim unit with an invalid page to \
                     collect (raise ftl.over_provisioning)"
                ),
            });
        };
        let h = self.owner[victim as usize] as u32;
        flash.stats.gc_invocations += 1;
        let start = flash.first_page(victim);
        for ppn in start..start + ppb {
            if !flash.is_valid(ppn) {
                continue;
            }
            let oob = flash.read(ppn, Cause::Gc)?;
            let to = self.page(h, unit, false, flash)?;
            flash.invalidate(ppn)?;
            flash.program(to, oob, &[h as u8], Cause::Gc)?;
            self.l2p[oob.lpa as usize] = to;
            let b = self.layout_block(to) as usize;
            self.valid[b] += 1;
            self.gc_pages[h as usize] += 1;
        }
        flash.erase(victim, Cause::Gc)?;
        self.valid[victim as usize] = 0;
        self.owner[victim as usize] = FREE;
        self.free.push(&self.layout, victim);
        Ok(())
    }

    #[inline]
    fn layout_block(&self, ppn: Ppn) -> u32 {
        ppn / self.layout.pages_per_block
    }

    fn is_open(&self, block: u32) -> bool {
        let unit = self.layout.unit_of_block(block);
        (0..self.handles).any(|h| self.open[(h * self.layout.units + unit) as usize].0 == block)
    }

    /// Drops the current copy of `lpa`.
    #[inline]
    fn unmap(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let old = self.l2p[lpa as usize];
        if old != NONE {
            flash.invalidate(old)?;
            let b = self.layout_block(old) as usize;
            self.valid[b] -= 1;
            self.l2p[lpa as usize] = NONE;
        }
        Ok(())
    }
}

impl Ftl for Fdp {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        match self.l2p[lpa as usize] {
            NONE => Ok(None),
            ppn => Ok(Some(flash.read(ppn, Cause::Host)?)),
        }
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let h = self.placement(lpa, flash);
        let unit = self.order[self.next];
        self.next = (self.next + 1) % self.order.len();
        let ppn = self.page(h, unit, true, flash)?;
        self.unmap(lpa, flash)?;
        flash.program(ppn, Oob { lpa, seq }, &[h as u8], Cause::Host)?;
        self.l2p[lpa as usize] = ppn;
        let b = self.layout_block(ppn) as usize;
        self.valid[b] += 1;
        self.host_pages[h as usize] += 1;
        Ok(())
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        self.unmap(lpa, flash)
    }

    /// The map from the live pages; each programmed block belongs to the handle its pages
    /// name (the OOB byte), closed (writes resume in fresh reclaim units); erased blocks
    /// are free.
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        crate::device::recovery::revalidate_live(found, flash)?;
        self.l2p.copy_from_slice(&found.live);
        self.valid.fill(0);
        self.owner.fill(FREE);
        self.open.fill((NONE, 0));
        for &ppn in found.live.iter().filter(|&&p| p != NONE) {
            let b = self.layout_block(ppn) as usize;
            self.valid[b] += 1;
        }
        self.free = FreeBlocks::empty(&self.layout);
        for block in 0..self.layout.total_blocks {
            if flash.is_erased(block) {
                self.free.push(&self.layout, block);
            } else {
                let h = flash
                    .oob_extra(flash.first_page(block))
                    .first()
                    .copied()
                    .unwrap_or(0);
                self.owner[block as usize] = (h as u32 % self.handles) as u8;
            }
        }
        Ok(())
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        out.push(("page_map", self.layout.logical_pages * 4));
        out.push(("valid_counts", self.layout.total_blocks as u64 * 4));
        out.push((
            "ruh_table",
            self.handles as u64 * self.layout.units as u64 * 4,
        ));
        if let Some(classifier) = &self.lifetime {
            classifier.memory(out);
        }
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        let (mut host, mut media) = (0, 0);
        for h in 0..self.handles {
            let (hb, mb) = self.handle_bytes(h);
            out.push((HOST_NAMES[h as usize], hb as f64));
            out.push((MEDIA_NAMES[h as usize], mb as f64));
            host += hb;
            media += mb;
        }
        out.push(("fdp_host_bytes_written", host as f64));
        out.push(("fdp_media_bytes_written", media as f64));
        out.push(("reclaim_unit_handles", self.handles as f64));
        if self.placement == Placement::Hint {
            out.push(("placement_streams", self.streams.len() as f64));
            out.push(("unhinted_pages", self.unhinted_pages as f64));
        }
    }

    fn reset_counters(&mut self) {
        self.host_pages = [0; MAX_HANDLES as usize];
        self.gc_pages = [0; MAX_HANDLES as usize];
        self.unhinted_pages = 0;
    }
}
