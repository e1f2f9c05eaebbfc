//! ZNS: an NVMe Zoned Namespace device (NVMe ZNS command set 1.1; Bjørling et al., "ZNS:
//! Avoiding the Block Interface Tax for Flash-based SSDs", USENIX ATC 2021), the standard
//! that grew out of AMF's append-only segments. A zone is an AFTL segment
//! ([`crate::ftl::aftl`], whose machinery it runs on): `zns.zone_blocks` blocks striped
//! across the parallel units (default one per unit, a superblock), written only at its
//! write pointer, emptied whole by a reset that erases its blocks without copies. There is
//! no device GC.
//!
//! - **Zone size and capacity.** A zone's capacity is its blocks' pages; its size
//!   (`zns.zone_size_pages`, default the capacity) is the logical pages it spans, as a
//!   drive's zones are a power of two apart. Pages past the capacity are never writable.
//!   The zones are as many as the logical space holds.
//! - **States** (the standard's): empty, implicitly opened (by a write), explicitly opened,
//!   closed, full. A write to an empty or closed zone opens it implicitly. At most
//!   `zns.max_open_zones` are open and `zns.max_active_zones` active (open or closed); a
//!   zone written to its capacity, or finished, is full and neither. At the open limit the
//!   device closes the implicitly opened zone opened first, as the standard lets it; when
//!   every open zone was opened explicitly the write is refused.
//! - **Refusals** ([`Error::Refused`], counted, the device unchanged), by the standard's
//!   status: a write not at the write pointer (Zone Invalid Write), at or past the capacity
//!   or an append that would cross it (Zone Boundary Error), to a full zone (Zone Is Full),
//!   beyond the open limit (Too Many Open Zones) or the active one (Too Many Active Zones).
//! - **Commands.** [`Zns::append`] (Zone Append: the device writes at the write pointer and
//!   returns the logical page it used), [`Zns::reset`], [`Zns::finish`], [`Zns::open`] and
//!   [`Zns::close`] (Zone Management Send) are the device's methods. A replayed trace
//!   reaches the device through [`crate::request::Request`], which has reads, writes and
//!   trims: a zone reset travels as trims that cover the zone whole, from its first page
//!   in order (one trim of the zone, as a host stack that resets zones issues it), and the
//!   device resets the zone then; a trim of part of a zone only deallocates its pages (the
//!   Dataset Management command), the write pointer stays. Keeping the request three
//!   kinds keeps every trace reader, the write buffer, the host stacks and the NBD front as
//!   they are; a host stack writes at the write pointer it tracks itself, which is what
//!   zone append would return (a test checks it).
//!
//! - **Conventional zones** (`zns.conventional_zones`, 0 by default): the first zones of the
//!   logical space may be written at random, page-mapped by the device with a GC of their
//!   own ([`crate::ftl::conventional`], which says what it chooses); F2FS's zoned mode keeps
//!   its metadata there. They have no write pointer (the standard's "not write pointer"
//!   state), zone commands refuse them, and they own the blocks the sequential zones do not
//!   need: the device's over-provisioning serves them alone.
//!
//! DRAM: the zone-to-blocks table (`zone_map`: a 4-byte block address per block of every
//! zone, the device's only mapping) and per zone its write pointer, trim cursor and state
//! (`zone_state`: 4 + 4 + 1 bytes), both over the sequential zones; with conventional zones
//! also their page map and valid counts.

use crate::device::geometry::Layout;
use crate::device::nand::{Flash, Oob};
use crate::error::{Error, Result};
use crate::ftl::aftl::{Aftl, MapGranularity, ENTRY_BYTES};
use crate::ftl::conventional::Conventional;
use crate::ftl::interface::Interface;
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use serde::{Deserialize, Serialize};

/// The `[zns]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZnsConfig {
    /// Blocks of a zone, striped across the parallel units: a divisor or a multiple of the
    /// units (0: one block per unit, a superblock, as AMF's segments).
    pub zone_blocks: u32,
    /// Logical pages a zone spans, at least its capacity (0: its capacity).
    pub zone_size_pages: u64,
    /// Zones open at once (0: no limit). 14: Western Digital's Ultrastar DC ZN540.
    pub max_open_zones: u32,
    /// Zones open or closed at once (0: no limit).
    pub max_active_zones: u32,
    /// Conventional zones at the start of the logical space, randomly writable and
    /// page-mapped by the device (0: none, every zone sequential).
    pub conventional_zones: u32,
}

impl Default for ZnsConfig {
    fn default() -> Self {
        ZnsConfig {
            zone_blocks: 0,
            zone_size_pages: 0,
            max_open_zones: 14,
            max_active_zones: 14,
            conventional_zones: 0,
        }
    }
}

/// A zone's shape on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneShape {
    /// Blocks of a zone.
    pub blocks: u32,
    /// Writable pages of a zone (its capacity).
    pub capacity: u32,
    /// Logical pages a zone spans (its size).
    pub size: u32,
    /// Zones of the device (conventional and sequential).
    pub zones: u32,
    /// Conventional zones, the first ones.
    pub conventional: u32,
}

impl ZnsConfig {
    /// The zones of this section on `layout`, checked.
    pub fn shape(&self, layout: &Layout) -> Result<ZoneShape> {
        let units = layout.units;
        let blocks = if self.zone_blocks == 0 {
            units
        } else {
            self.zone_blocks
        };
        if !(units.is_multiple_of(blocks) || blocks.is_multiple_of(units)) {
            return Err(Error::config(
                "zns.zone_blocks",
                format!(
                    "{blocks} blocks cannot be striped evenly over the device's {units} \
                     parallel units: give a divisor or a multiple of {units}"
                ),
            ));
        }
        let capacity = blocks as u64 * layout.pages_per_block as u64;
        let size = match self.zone_size_pages {
            0 => capacity,
            n if n < capacity => {
                return Err(Error::config(
                    "zns.zone_size_pages",
                    format!("{n} pages is less than the zone's capacity, {capacity} pages"),
                ))
            }
            n => n,
        };
        let zones = layout.logical_pages / size;
        if zones == 0 || size > u32::MAX as u64 / 2 {
            return Err(Error::config(
                "zns.zone_size_pages",
                format!(
                    "zones of {size} pages do not fit the device's {} logical pages",
                    layout.logical_pages
                ),
            ));
        }
        if self.conventional_zones as u64 >= zones {
            return Err(Error::config(
                "zns.conventional_zones",
                format!(
                    "{} conventional zones leave no sequential zone of the device's {zones}",
                    self.conventional_zones
                ),
            ));
        }
        Ok(ZoneShape {
            blocks,
            capacity: capacity as u32,
            size: size as u32,
            zones: zones as u32,
            conventional: self.conventional_zones,
        })
    }
}

/// Bytes of a zone's state: write pointer, trim cursor (4 bytes each) and state (1).
pub const ZONE_STATE_BYTES: u64 = 9;

/// A zone's state (the standard's zone states; read-only and offline are not modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    Empty,
    ImplicitlyOpened,
    ExplicitlyOpened,
    Closed,
    Full,
    /// A conventional zone: no write pointer, written at random.
    NotWritePointer,
}

pub struct Zns {
    /// The zones, as append-only segments (the conventional ones' never used).
    segs: Aftl,
    /// The conventional zones, and the logical pages they span (0: none).
    conv: Option<Conventional>,
    conv_pages: u32,
    shape: ZoneShape,
    max_open: u32,
    max_active: u32,
    state: Vec<ZoneState>,
    /// Open zones, in the order they were opened (at most `max_open`).
    open: Vec<u32>,
    /// Zones open or closed.
    active: u32,
    zone_appends: u64,
    zone_resets: u64,
    zone_finishes: u64,
    zones_auto_closed: u64,
    refused_not_at_write_pointer: u64,
    refused_past_capacity: u64,
    refused_zone_full: u64,
    refused_open_limit: u64,
    refused_active_limit: u64,
}

impl Scheme for Zns {
    const NAME: &'static str = "zns";
    const DESCRIPTION: &'static str =
        "ZNS (NVMe Zoned Namespaces, ATC'21): sequential-write zones of blocks across the units, \
         write pointer, zone append, reset and finish, open/active zone limits, no device GC";
    type Section = ZnsConfig;
    const APPEND_ONLY: bool = true;
    const INTERFACE: Interface = Interface::Zns;
    const DEVICE_DEFAULTS: Option<&'static str> = Some("device.interface = \"zns\"\n");

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let section: ZnsConfig = Self::section(cfg)?;
        let shape = section.shape(layout)?;
        let logical = shape.zones as u64 * shape.size as u64;
        let segs = Aftl::with_segments(
            layout,
            MapGranularity::Block,
            shape.blocks,
            shape.size,
            logical,
        )
        .map_err(|e| match e {
            Error::Config { message, .. } => Error::config("zns.zone_blocks", message),
            e => e,
        })?;
        let mut segs = segs;
        let conv = if shape.conventional > 0 {
            // Every block the sequential zones will never need goes to the conventional ones.
            let need = segs.blocks_needed_from(shape.conventional);
            let blocks = (0..layout.units)
                .map(|unit| {
                    let mut own = Vec::new();
                    while segs.free_blocks(unit) > need[unit as usize] as usize {
                        own.extend(segs.take_free_block(unit));
                    }
                    own
                })
                .collect();
            Some(Conventional::new(
                layout,
                shape.conventional,
                shape.size,
                shape.capacity,
                blocks,
            )?)
        } else {
            None
        };
        let mut state = vec![ZoneState::Empty; shape.zones as usize];
        state[..shape.conventional as usize].fill(ZoneState::NotWritePointer);
        Ok(Zns {
            conv_pages: conv.as_ref().map_or(0, Conventional::pages),
            conv,
            segs,
            shape,
            max_open: section.max_open_zones,
            max_active: section.max_active_zones,
            state,
            open: Vec::new(),
            active: 0,
            zone_appends: 0,
            zone_resets: 0,
            zone_finishes: 0,
            zones_auto_closed: 0,
            refused_not_at_write_pointer: 0,
            refused_past_capacity: 0,
            refused_zone_full: 0,
            refused_open_limit: 0,
            refused_active_limit: 0,
        })
    }
}

impl Zns {
    /// The zones' shape.
    pub fn shape(&self) -> ZoneShape {
        self.shape
    }

    /// Zone `zone`'s state.
    pub fn state(&self, zone: u32) -> ZoneState {
        self.state[zone as usize]
    }

    /// Zone `zone`'s write pointer, as a logical page.
    pub fn write_pointer(&self, zone: u32) -> u64 {
        zone as u64 * self.shape.size as u64 + self.segs.write_pointer(zone) as u64
    }

    fn refused(&self, status: &str, lpa: u64, what: String) -> Error {
        Error::Refused {
            message: format!(
                "zns ({} zones of {} pages, capacity {}) refuses the write of logical page \
                 {lpa} ({status}): {what}",
                self.shape.zones, self.shape.size, self.shape.capacity
            ),
        }
    }

    /// Whether `pages` pages may be written to `zone` at `off` now; the zone opened for
    /// them (implicitly) if it may.
    fn admit(&mut self, zone: u32, off: u32, pages: u32, lpa: u64) -> Result<()> {
        let wp = self.segs.write_pointer(zone);
        if self.state[zone as usize] == ZoneState::Full {
            self.refused_zone_full += 1;
            return Err(self.refused(
                "Zone Is Full",
                lpa,
                format!("zone {zone} is full: reset it before writing it again"),
            ));
        }
        if off as u64 + pages as u64 > self.shape.capacity as u64 {
            self.refused_past_capacity += 1;
            return Err(self.refused(
                "Zone Boundary Error",
                lpa,
                format!(
                    "{pages} page(s) at offset {off} of zone {zone} go past its capacity of {} \
                     pages",
                    self.shape.capacity
                ),
            ));
        }
        if off != wp {
            self.refused_not_at_write_pointer += 1;
            return Err(self.refused(
                "Zone Invalid Write",
                lpa,
                format!(
                    "zone {zone}'s write pointer is at logical page {}: a zone is written \
                     only there (run it under a host stack that writes zones in order, \
                     host.stack = \"alfs\")",
                    self.write_pointer(zone)
                ),
            ));
        }
        self.open_zone(zone, false, lpa)
    }

    /// Opens `zone` (explicitly or by a write), within the limits.
    fn open_zone(&mut self, zone: u32, explicit: bool, lpa: u64) -> Result<()> {
        let z = zone as usize;
        let opened = if explicit {
            ZoneState::ExplicitlyOpened
        } else {
            ZoneState::ImplicitlyOpened
        };
        match self.state[z] {
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened => {
                if explicit {
                    self.state[z] = opened;
                }
                return Ok(());
            }
            ZoneState::Full => {
                self.refused_zone_full += 1;
                return Err(self.refused(
                    "Zone Is Full",
                    lpa,
                    format!("zone {zone} is full and cannot be opened"),
                ));
            }
            ZoneState::Empty if self.max_active > 0 && self.active >= self.max_active => {
                self.refused_active_limit += 1;
                return Err(self.refused(
                    "Too Many Active Zones",
                    lpa,
                    format!(
                        "opening zone {zone} would make {} zones active (open or closed); the \
                         device allows {} (zns.max_active_zones): finish or reset one first",
                        self.active + 1,
                        self.max_active
                    ),
                ));
            }
            ZoneState::NotWritePointer => {
                return Err(self.refused(
                    "Invalid Zone Operation",
                    lpa,
                    format!("zone {zone} is conventional and is never opened"),
                ))
            }
            ZoneState::Empty | ZoneState::Closed => {}
        }
        if self.max_open > 0 && self.open.len() as u32 >= self.max_open {
            // The implicitly opened zone opened first is closed to make room.
            let Some(i) = self
                .open
                .iter()
                .position(|&o| self.state[o as usize] == ZoneState::ImplicitlyOpened)
            else {
                self.refused_open_limit += 1;
                return Err(self.refused(
                    "Too Many Open Zones",
                    lpa,
                    format!(
                        "opening zone {zone} would make {} zones open; the device allows {} \
                         (zns.max_open_zones) and all of them were opened explicitly: close \
                         or finish one first",
                        self.open.len() + 1,
                        self.max_open
                    ),
                ));
            };
            let closed = self.open.remove(i);
            self.state[closed as usize] = ZoneState::Closed;
            self.zones_auto_closed += 1;
        }
        if self.state[z] == ZoneState::Empty {
            self.active += 1;
        }
        self.state[z] = opened;
        self.open.push(zone);
        Ok(())
    }

    /// Zone `zone` leaves the open and active sets, as `to` (full or empty).
    fn retire(&mut self, zone: u32, to: ZoneState) {
        let z = zone as usize;
        match self.state[z] {
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened => {
                self.open.retain(|&o| o != zone);
                self.active -= 1;
            }
            ZoneState::Closed => self.active -= 1,
            ZoneState::Empty | ZoneState::Full | ZoneState::NotWritePointer => {}
        }
        self.state[z] = to;
    }

    /// A zone command's zone: a sequential zone of the device.
    fn check_zone(&self, zone: u32) -> Result<()> {
        if zone >= self.shape.zones {
            return Err(Error::Usage(format!(
                "zns: no zone {zone}; the device has {} zones",
                self.shape.zones
            )));
        }
        if zone < self.shape.conventional {
            return Err(Error::Refused {
                message: format!(
                    "zns refuses a zone command on zone {zone}: it is a conventional zone \
                     (zns.conventional_zones = {}), which has no write pointer to append at, \
                     reset, open, close or finish",
                    self.shape.conventional
                ),
            });
        }
        Ok(())
    }

    /// Zone Append: writes `pages` pages (host writes `seq`, `seq + 1`, ...) at zone
    /// `zone`'s write pointer, chosen by the device; returns the logical page of the first.
    pub fn append(&mut self, zone: u32, pages: u32, seq: u64, flash: &mut Flash) -> Result<u64> {
        self.check_zone(zone)?;
        let off = self.segs.write_pointer(zone);
        let first = zone as u64 * self.shape.size as u64 + off as u64;
        self.admit(zone, off, pages, first)?;
        for i in 0..pages {
            self.put(zone, (first + i as u64) as u32, seq + i as u64, flash)?;
        }
        self.zone_appends += 1;
        Ok(first)
    }

    /// Zone reset: every page of zone `zone` dropped, its blocks erased; the zone empty.
    pub fn reset(&mut self, zone: u32, flash: &mut Flash) -> Result<()> {
        self.check_zone(zone)?;
        self.segs.empty_segment(zone, flash)?;
        if self.state[zone as usize] != ZoneState::Empty {
            self.zone_resets += 1;
        }
        self.retire(zone, ZoneState::Empty);
        Ok(())
    }

    /// Zone finish: zone `zone` full as it stands (its unwritten pages left erased, read as
    /// unmapped), no longer open or active.
    pub fn finish(&mut self, zone: u32) -> Result<()> {
        self.check_zone(zone)?;
        if self.state[zone as usize] == ZoneState::Full {
            return Ok(());
        }
        self.segs.close_segment(zone)?;
        self.retire(zone, ZoneState::Full);
        self.zone_finishes += 1;
        Ok(())
    }

    /// Zone open (explicit): within the open and active limits.
    pub fn open(&mut self, zone: u32) -> Result<()> {
        self.check_zone(zone)?;
        let lpa = self.write_pointer(zone);
        self.open_zone(zone, true, lpa)
    }

    /// Zone close: an open zone closed (still active), or empty again if nothing was
    /// written to it.
    pub fn close(&mut self, zone: u32) -> Result<()> {
        self.check_zone(zone)?;
        let z = zone as usize;
        if matches!(
            self.state[z],
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened
        ) {
            if self.segs.write_pointer(zone) == 0 {
                self.retire(zone, ZoneState::Empty);
            } else {
                self.open.retain(|&o| o != zone);
                self.state[z] = ZoneState::Closed;
            }
        }
        Ok(())
    }

    /// Programs one admitted page; the zone is full at its capacity.
    #[inline]
    fn put(&mut self, zone: u32, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        self.segs.write(lpa, seq, flash)?;
        if self.segs.write_pointer(zone) == self.shape.capacity {
            self.retire(zone, ZoneState::Full);
        }
        Ok(())
    }

    /// A write to a conventional zone: anywhere within its capacity, any number of times.
    fn write_conventional(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let Some(conv) = self.conv.as_mut() else {
            unreachable!("conv_pages is 0 without conventional zones")
        };
        if conv.writable(lpa) {
            return conv.write(lpa, seq, flash);
        }
        self.refused_past_capacity += 1;
        let (zone, off) = self.locate(lpa);
        Err(self.refused(
            "Zone Boundary Error",
            lpa as u64,
            format!(
                "offset {off} of conventional zone {zone} is past its capacity of {} pages",
                self.shape.capacity
            ),
        ))
    }

    #[inline]
    fn locate(&self, lpa: u32) -> (u32, u32) {
        (lpa / self.shape.size, lpa % self.shape.size)
    }
}

impl Ftl for Zns {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        if lpa < self.conv_pages {
            return match &mut self.conv {
                Some(conv) if conv.writable(lpa) => conv.read(lpa, flash),
                _ => Ok(None),
            };
        }
        let (zone, off) = self.locate(lpa);
        if zone >= self.shape.zones || off >= self.shape.capacity {
            return Ok(None);
        }
        self.segs.read(lpa, flash)
    }

    #[inline]
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        if lpa < self.conv_pages {
            return self.write_conventional(lpa, seq, flash);
        }
        let (zone, off) = self.locate(lpa);
        if zone >= self.shape.zones {
            self.refused_past_capacity += 1;
            return Err(self.refused(
                "LBA Out of Range",
                lpa as u64,
                format!(
                    "the zones end at logical page {}",
                    self.shape.zones as u64 * self.shape.size as u64
                ),
            ));
        }
        let open = matches!(
            self.state[zone as usize],
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened
        );
        // The common case, an open zone written at its pointer, checks no more.
        if !open || off != self.segs.write_pointer(zone) {
            self.admit(zone, off, 1, lpa as u64)?;
        }
        self.put(zone, lpa, seq, flash)
    }

    /// A trim deallocates; trims covering a zone whole, in order, reset it.
    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        if lpa < self.conv_pages {
            return match &mut self.conv {
                Some(conv) if conv.writable(lpa) => conv.trim(lpa, flash),
                _ => Ok(()),
            };
        }
        let (zone, off) = self.locate(lpa);
        if zone >= self.shape.zones || off >= self.shape.capacity {
            return Ok(());
        }
        let written = self.segs.write_pointer(zone);
        self.segs.trim(lpa, flash)?;
        if written > 0 && self.segs.write_pointer(zone) == 0 {
            self.zone_resets += 1;
            self.retire(zone, ZoneState::Empty);
        }
        Ok(())
    }

    /// The zones as AFTL rebuilds its segments; after the restart no zone is open (the
    /// standard's power-loss rule): a zone part written is closed, one written to its
    /// capacity full.
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        if self.conv.is_some() {
            // Not modelled: the segments' OOB scan would take the conventional blocks for
            // stray segment pages.
            return Err(Error::Usage(
                "zns: a restart with conventional zones is not modelled (the conventional \
                 zones' page map is not rebuilt from flash): set zns.conventional_zones = 0 \
                 for recovery runs"
                    .into(),
            ));
        }
        self.segs.recover(found, flash)?;
        self.open.clear();
        self.active = 0;
        for zone in self.shape.conventional..self.shape.zones {
            let wp = self.segs.write_pointer(zone);
            self.state[zone as usize] = if wp == 0 {
                ZoneState::Empty
            } else if wp >= self.shape.capacity {
                ZoneState::Full
            } else {
                self.active += 1;
                ZoneState::Closed
            };
        }
        Ok(())
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        let zones = (self.shape.zones - self.shape.conventional) as u64;
        out.push(("zone_map", zones * self.shape.blocks as u64 * ENTRY_BYTES));
        out.push(("zone_state", zones * ZONE_STATE_BYTES));
        if let Some(conv) = &self.conv {
            conv.memory(out);
        }
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("zones", self.shape.zones as f64));
        out.push(("conventional_zones", self.shape.conventional as f64));
        if let Some(conv) = &self.conv {
            conv.counters(out);
        }
        out.push(("zone_capacity_pages", self.shape.capacity as f64));
        out.push(("zone_size_pages", self.shape.size as f64));
        out.push(("zones_active", self.active as f64));
        out.push(("zones_open", self.open.len() as f64));
        out.push(("zone_appends", self.zone_appends as f64));
        out.push(("zone_resets", self.zone_resets as f64));
        out.push(("zone_finishes", self.zone_finishes as f64));
        out.push(("zones_auto_closed", self.zones_auto_closed as f64));
        let refused = [
            self.refused_not_at_write_pointer,
            self.refused_past_capacity,
            self.refused_zone_full,
            self.refused_open_limit,
            self.refused_active_limit,
        ];
        out.push(("refused_writes", refused.iter().sum::<u64>() as f64));
        out.push((
            "refused_not_at_write_pointer",
            self.refused_not_at_write_pointer as f64,
        ));
        out.push(("refused_past_capacity", self.refused_past_capacity as f64));
        out.push(("refused_zone_full", self.refused_zone_full as f64));
        out.push(("refused_open_limit", self.refused_open_limit as f64));
        out.push(("refused_active_limit", self.refused_active_limit as f64));
    }

    fn reset_counters(&mut self) {
        self.segs.reset_counters();
        if let Some(conv) = &mut self.conv {
            conv.reset_counters();
        }
        self.zone_appends = 0;
        self.zone_resets = 0;
        self.zone_finishes = 0;
        self.zones_auto_closed = 0;
        self.refused_not_at_write_pointer = 0;
        self.refused_past_capacity = 0;
        self.refused_zone_full = 0;
        self.refused_open_limit = 0;
        self.refused_active_limit = 0;
    }
}
