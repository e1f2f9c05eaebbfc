//! Out-of-place page allocation with per-unit garbage collection, shared by every scheme
//! that maps pages individually (the page-level FTL and the demand-cached schemes).
//!
//! Each parallel unit keeps an open block per stream: host data, GC data (relocated
//! pages, kept apart from host writes) and, for schemes that store their map on flash,
//! translation pages, which live in their own blocks. Host and translation writes go to
//! the units in round-robin order (channel first), each stream with its own cursor, so
//! consecutive writes spread over channels and dies. A unit opening a block with fewer free
//! blocks than `gc.threshold` reclaims one victim, and at or below `gc.hard_threshold`
//! reclaims until it is above again (FTL-algorithms spec section 2). Victims are chosen by
//! `gc.policy` among data and translation blocks alike. One free block per unit is
//! reserved for relocation, so GC always has somewhere to go.
//!
//! Two options serve LeaFTL (both off by default): a host stripe, so that the host stream
//! writes up to that many consecutive pages to one unit (until its open block is full)
//! before moving on, and sorted relocation, so that GC moves a data victim's valid pages in
//! logical-page order.
//!
//! Relocation streams (off by default, one stream: the unit's GC block): a scheme may key
//! the data pages GC relocates by their logical page ([`PageAllocator::set_relocation_streams`]),
//! so that what one key maps is rewritten together. Stream 0 stays the unit's GC block;
//! each other stream writes a line, one block on every parallel unit (the same block index
//! on each where the free pools allow, as in a superblock), page by page round-robin, so
//! that a sorted run of relocated pages has consecutive [`StripeOrder`] positions. A victim
//! belonging to a stream's line is collected with every other block of that stream, on
//! every unit: their valid pages, sorted by logical page, are rewritten into a fresh line
//! (LearnedFTL's group-based GC). A line opens only while every unit has free blocks to
//! spare; otherwise pages go to the unit's GC block, as without streams.
//!
//! GC does not know the scheme's map. It relocates valid pages and records every move
//! ([`PageAllocator::take_moves`]); the scheme applies them to its map before the next
//! lookup. Data pages move to the unit's GC block; translation pages move to the unit's
//! translation block, and the translation store updates its directory.

use super::slc::SlcCache;
use crate::device::blocks::{select_victim, FreeBlocks};
use crate::device::faults::FaultDraws;
use crate::device::geometry::Layout;
use crate::device::media::WearLeveling;
use crate::device::nand::{Cause, Flash, Oob, Ppn, NONE};
use crate::divide::DivideBy;
use crate::error::{Error, Result};
use crate::ftl::settings::SchemeContext;
use crate::ftl::settings::{CopyStream, GcMode, VictimPolicy};
use crate::ftl::MemoryBreakdown;

/// Physical pages in the order the host stream writes them: `chunk` pages on one parallel
/// unit, then `chunk` on the next, round-robin over the units in the allocator's order
/// (plane first with multi-plane operations, see [`Layout::stripe_unit`]). While the
/// units' open blocks are aligned (as in a superblock), consecutive host pages have
/// consecutive positions. With chunk `c`, page `o` of block index `b` of the `k`-th unit
/// is position `((b x pages_per_block / c + o / c) x units + k) x c + o mod c`; with one
/// page a chunk, `(b x pages_per_block + o) x units + k`. S-FTL's runs and LeaFTL's stripe
/// placement are stretches of consecutive positions.
#[derive(Clone, Debug)]
pub struct StripeOrder {
    chunk: u32,
    chunks_per_block: u32,
    blocks_per_unit: u32,
    units: u32,
    /// Division by the pages per block, the blocks per unit and the chunk (S-FTL asks for
    /// two positions per entry it scans: six hardware divisions each otherwise).
    per_block: DivideBy,
    per_unit: DivideBy,
    per_chunk: DivideBy,
    /// The round-robin rank of each unit, and the unit of each rank.
    rank: Vec<u32>,
    unit: Vec<u32>,
}

impl StripeOrder {
    /// The stripe order of the allocator `PageAllocator::new(cfg, layout, ..)` builds, with
    /// a host stripe of `chunk` pages (a divisor of the pages per block).
    pub fn new(cfg: &SchemeContext, layout: &Layout, chunk: u32) -> Self {
        debug_assert!(chunk > 0 && layout.pages_per_block.is_multiple_of(chunk));
        let unit = round_robin(cfg, layout);
        let mut rank = vec![0; unit.len()];
        for (k, &u) in unit.iter().enumerate() {
            rank[u as usize] = k as u32;
        }
        StripeOrder {
            chunk,
            chunks_per_block: layout.pages_per_block / chunk,
            blocks_per_unit: layout.blocks_per_unit,
            units: layout.units,
            per_block: DivideBy::new(layout.pages_per_block),
            per_unit: DivideBy::new(layout.blocks_per_unit),
            per_chunk: DivideBy::new(chunk),
            rank,
            unit,
        }
    }

    #[inline]
    pub fn position(&self, ppn: Ppn) -> u64 {
        let ppb = self.chunk * self.chunks_per_block;
        let block = self.per_block.divide(ppn);
        let offset = ppn - block * ppb;
        let unit = self.per_unit.divide(block);
        let index = block - unit * self.blocks_per_unit;
        let c = self.per_chunk.divide(offset);
        let row = index as u64 * self.chunks_per_block as u64 + c as u64;
        (row * self.units as u64 + self.rank[unit as usize] as u64) * self.chunk as u64
            + (offset - c * self.chunk) as u64
    }

    #[inline]
    pub fn page(&self, position: u64) -> Ppn {
        let chunk = self.chunk as u64;
        let (t, within) = (position / chunk, (position % chunk) as u32);
        let units = self.units as u64;
        let (k, row) = ((t % units) as u32, t / units);
        let per_block = self.chunks_per_block as u64;
        let (index, c) = ((row / per_block) as u32, (row % per_block) as u32);
        let ppb = self.chunk * self.chunks_per_block;
        (self.unit[k as usize] * self.blocks_per_unit + index) * ppb + c * self.chunk + within
    }
}

/// The units in the order the host stream visits them: plane first (the planes of a die
/// in turn, so that their pages pair up as multi-plane programs) with multi-plane
/// operations on, else in unit order (channel first).
pub(crate) fn round_robin(cfg: &SchemeContext, layout: &Layout) -> Vec<u32> {
    if cfg.device.scheduler.multi_plane && layout.planes_per_die > 1 {
        (0..layout.units).map(|k| layout.stripe_unit(k)).collect()
    } else {
        (0..layout.units).collect()
    }
}

/// An open block, the next page to program in it, and where its pages end: the pages per
/// block, or the page whose program fails (`[faults]`; see [`PageAllocator::retire_failed`]).
#[derive(Clone, Copy, Debug)]
struct OpenBlock {
    block: u32,
    next: u32,
    end: u32,
}

impl OpenBlock {
    const CLOSED: OpenBlock = OpenBlock {
        block: NONE,
        next: 0,
        end: 0,
    };
}

/// What a block holds (kept only when translation pages are stored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockKind {
    Data,
    Translation,
}

/// Relocation streams ([`PageAllocator::set_relocation_streams`]): the stream of each data
/// page GC relocates, the open line of each stream and the stream each block was opened for.
struct Relocation {
    /// The stream of a relocated data page by its logical page: 0, the unit's GC block; `s`
    /// from 1, line `s`.
    key: Box<dyn Fn(u32) -> u32 + Send + Sync>,
    /// Per stream (0 unused): its open line's block on each unit by round-robin rank (empty:
    /// no open line) and the pages written to it.
    lines: Vec<(Vec<u32>, u32)>,
    /// Per block: the stream whose line it belongs to (0: none).
    stream_of: Vec<u32>,
    /// Host writes of keyed pages go to their stream's line too ([`PageAllocator::host_page_for`]).
    host: bool,
    /// Lines open at once, at most: a line's blocks are reclaimed only when full or
    /// collected, so open lines hold spare room that GC cannot get back.
    max_open: usize,
    /// Blocks reclaimed together, reused.
    victims: Vec<u32>,
    /// Group collections (a stream's blocks collected together) and the blocks they took.
    collections: u64,
    blocks_collected: u64,
}

/// A valid page relocated by garbage collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// The OOB's logical page address (data) or translation-page number (translation).
    pub key: u32,
    pub from: Ppn,
    pub to: Ppn,
}

const HOST: usize = 0;
const GC: usize = 1;
const MAP: usize = 2;

/// Why a write finds no page.
const FULL: &str =
    "every parallel unit is out of free blocks and holds no block with an invalid page; \
                    the logical data fills the device (raise ftl.over_provisioning)";

/// Free blocks a unit keeps for garbage collection: host and translation writes never take
/// the last one, so relocation always has somewhere to go.
pub const GC_RESERVE_BLOCKS: usize = 1;

/// Blocks static wear levelling may move after one reclaim: one would fall behind a unit
/// with many blocks of cold data (the hot blocks cycle several times while each cold block
/// moves once); a few bound the work a reclaim adds.
const WL_MOVES_PER_RECLAIM: usize = 4;

/// Free blocks a unit keeps for garbage collection under `cfg`: [`GC_RESERVE_BLOCKS`],
/// and one more when programs or erases may fail (`[faults]`): for the pages of a GC block
/// that fails while GC fills it, or for GC to go on after a victim's erase fails.
pub fn gc_reserve(cfg: &SchemeContext) -> usize {
    let f = &cfg.device.faults;
    GC_RESERVE_BLOCKS + (f.program_failure_rate > 0.0 || f.erase_failure_rate > 0.0) as usize
}

/// Free-block counts for the GC thresholds of one unit: the hard threshold is at least the
/// reserve, the soft one above it. With background GC the soft threshold is at least two
/// blocks above the hard one: on a small device (a device fitted to a short trace has tens
/// of blocks per unit) the percentages round to adjacent counts, and background GC would
/// have no runway before writes wait for foreground GC.
pub fn gc_thresholds(cfg: &SchemeContext, layout: &Layout) -> (usize, usize) {
    let blocks = layout.blocks_per_unit as f64;
    let hard = ((cfg.gc.hard_threshold * blocks).ceil() as usize).max(gc_reserve(cfg));
    let runway = if cfg.gc.mode == GcMode::Background {
        2
    } else {
        1
    };
    let soft = ((cfg.gc.threshold * blocks).ceil() as usize).max(hard + runway);
    (soft, hard)
}

pub struct PageAllocator {
    layout: Layout,
    free: FreeBlocks,
    /// Open blocks by stream (host, GC, translation) and unit.
    open: [Vec<OpenBlock>; 3],
    /// Round-robin positions of the host and translation streams (see [`Self::unit_at`]).
    next_unit: [u32; 3],
    /// The unit at each round-robin position: with multi-plane operations the planes of a
    /// die one after the other (multi-plane pairs), else unit by unit (a table: no division
    /// per page).
    round_robin: Vec<u32>,
    /// Background GC: units below the soft threshold wait for [`Self::idle_gc`] instead of
    /// reclaiming in the foreground of the write that noticed it.
    background_gc: bool,
    /// Units waiting for background GC, and whether each is in the list.
    gc_pending: Vec<u32>,
    gc_pending_flag: Vec<bool>,
    /// Per pending unit: before this instant its die does not start the background work it
    /// had queued at the unit's last turn, so another turn would find it busy and change
    /// nothing (0: unknown). Valid while its die's queue has not run empty since
    /// (`gc_wake_drains`, [`Flash::background_drains`]) and the timing has not restarted;
    /// reset when the unit frees a block or rejoins.
    gc_wake: Vec<u64>,
    gc_wake_drains: Vec<u64>,
    /// The least `gc_wake` of the pending units: before it a round has nothing to do, unless
    /// the flash's background epoch has changed since `gc_wake_epoch`.
    gc_wake_min: u64,
    gc_wake_epoch: (u64, u64),
    /// Per block: data or translation (empty when the scheme stores no translation pages).
    kind: Vec<BlockKind>,
    policy: VictimPolicy,
    /// The stream data copies go to (`gc.copy_stream`).
    copy_stream: usize,
    soft_free_blocks: usize,
    hard_free_blocks: usize,
    /// Free blocks host and translation writes leave to GC ([`gc_reserve`]).
    reserve: usize,
    moved_data: Vec<Move>,
    moved_translation: Vec<Move>,
    /// Translation pages relocated by GC, in total.
    pub translation_pages_moved: u64,
    /// Host pages written to one unit before the host stream moves on (1: page by page
    /// round-robin), and what is left of the current stripe.
    host_stripe: u32,
    host_left: u32,
    /// GC relocates a data victim's valid pages in logical-page order.
    sorted_relocation: bool,
    /// A victim's valid pages (logical page, physical page), reused.
    victim_pages: Vec<(u32, Ppn)>,
    /// Relocation streams, when the scheme keys them.
    relocation: Option<Box<Relocation>>,
    /// The pseudo-SLC cache host writes go to first (`[slc]`; see [`super::slc`]).
    slc: Option<Box<SlcCache>>,
    /// `[faults]` is on, and the program and erase failures it draws, if any.
    faults_on: bool,
    faults: Option<Box<FaultDraws>>,
    /// `media.wear_leveling` and `media.static_wl_gap`.
    wear_leveling: WearLeveling,
    static_wl_gap: u32,
    /// `media.refresh_after_ns` (0: off), and the media time of the next scan for old data.
    refresh_after: u64,
    next_refresh_scan: u64,
}

impl PageAllocator {
    /// An allocator over a fresh device; `translation` enables the translation stream.
    pub fn new(cfg: &SchemeContext, layout: &Layout, translation: bool) -> Self {
        let (soft_free_blocks, hard_free_blocks) = gc_thresholds(cfg, layout);
        let units = layout.units as usize;
        let mut free = FreeBlocks::all(layout);
        let slc = SlcCache::new(&cfg.device.slc, layout).map(Box::new);
        for blocks in slc.iter().flat_map(|c| &c.static_free) {
            for &b in blocks {
                let taken = free.take(layout, b);
                debug_assert!(taken, "static SLC block {b} was not free");
            }
        }
        // The flash model marks the same blocks bad ([`Flash::retire`]).
        for b in cfg.device.faults.factory_bad_blocks(layout) {
            free.take(layout, b);
        }
        PageAllocator {
            layout: *layout,
            free,
            open: std::array::from_fn(|_| vec![OpenBlock::CLOSED; units]),
            next_unit: [0; 3],
            round_robin: round_robin(cfg, layout),
            background_gc: cfg.gc.mode == GcMode::Background,
            gc_pending: Vec::new(),
            gc_pending_flag: vec![false; units],
            gc_wake: vec![0; units],
            gc_wake_drains: vec![0; units],
            gc_wake_min: 0,
            gc_wake_epoch: (0, 0),
            kind: if translation {
                vec![BlockKind::Data; layout.total_blocks as usize]
            } else {
                Vec::new()
            },
            policy: cfg.gc.policy,
            copy_stream: match cfg.gc.copy_stream {
                CopyStream::Gc => GC,
                CopyStream::Host => HOST,
            },
            soft_free_blocks,
            hard_free_blocks,
            reserve: gc_reserve(cfg),
            moved_data: Vec::new(),
            moved_translation: Vec::new(),
            translation_pages_moved: 0,
            host_stripe: 1,
            host_left: 1,
            sorted_relocation: false,
            victim_pages: Vec::new(),
            relocation: None,
            slc,
            faults_on: cfg.device.faults.enabled(),
            faults: FaultDraws::new(&cfg.device.faults).map(Box::new),
            wear_leveling: cfg.device.media.wear_leveling,
            static_wl_gap: cfg.device.media.static_wl_gap,
            refresh_after: cfg.device.media.refresh_after_ns,
            next_refresh_scan: 0,
        }
    }

    /// Keys the data pages GC relocates by logical page: `key(lpa)` in `0..streams`, 0
    /// being the unit's GC block and each other stream a line over all units, whose blocks
    /// are collected together (see the module docs). With one stream (the default) GC
    /// relocates as without this call.
    /// With `host`, [`PageAllocator::host_page_for`] writes a host page to its stream's
    /// line as well, so that every page of a stream lives in its lines.
    pub fn set_relocation_streams(
        &mut self,
        streams: u32,
        host: bool,
        key: impl Fn(u32) -> u32 + Send + Sync + 'static,
    ) {
        // The spare blocks each unit has beside the four every scheme with a map on flash
        // needs (open host, GC and translation blocks, GC reserve), at least one. (Half as
        // many lines cost LearnedFTL most of its gain on the smallest trace device.)
        let layout = &self.layout;
        let logical_blocks = layout.logical_pages.div_ceil(layout.pages_per_block as u64);
        let spare = (layout.blocks_per_unit as u64)
            .saturating_sub(logical_blocks.div_ceil(layout.units as u64))
            .saturating_sub(Self::spare_blocks_per_unit(true));
        self.relocation = (streams > 1).then(|| {
            Box::new(Relocation {
                key: Box::new(key),
                lines: vec![(Vec::new(), 0); streams as usize],
                stream_of: vec![0; self.layout.total_blocks as usize],
                host,
                max_open: (spare as usize).max(1),
                victims: Vec::new(),
                collections: 0,
                blocks_collected: 0,
            })
        });
    }

    /// Group collections so far (a stream's blocks collected together) and the blocks they
    /// reclaimed.
    pub fn group_collections(&self) -> (u64, u64) {
        self.relocation
            .as_ref()
            .map_or((0, 0), |r| (r.collections, r.blocks_collected))
    }

    /// Host pages written to one unit before the host stream moves to the next (1, the
    /// default: page by page round-robin); a stripe also ends when the unit's open block is
    /// full. LeaFTL writes a sorted flush a block at a time so that it stays learnable.
    pub fn set_host_stripe(&mut self, pages: u32) {
        self.host_stripe = pages.max(1);
        self.host_left = self.host_stripe;
    }

    /// Whether GC relocates a data victim's valid pages in logical-page order (LeaFTL's
    /// coordinated GC relearns them as one sorted batch) rather than in physical order.
    pub fn set_sorted_relocation(&mut self, on: bool) {
        self.sorted_relocation = on;
    }

    /// Spare blocks per unit a scheme needs beyond its logical data: one open block per
    /// stream plus the GC reserve.
    pub fn spare_blocks_per_unit(translation: bool) -> u64 {
        2 + translation as u64 + GC_RESERVE_BLOCKS as u64
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The next free page for a host data write.
    #[inline]
    pub fn host_page(&mut self, flash: &mut Flash) -> Result<Ppn> {
        if self.slc.is_some() {
            if let Some(ppn) = self.slc_host_page(flash)? {
                return Ok(ppn);
            }
        }
        if self.host_stripe > 1 {
            return self.striped_host_page(flash);
        }
        self.stream_page(HOST, flash)
    }

    /// The next free page for a host write of `lpa`: its stream's line when the relocation
    /// streams key host writes ([`PageAllocator::set_relocation_streams`]) and the line has
    /// or can open room, else the host stream ([`PageAllocator::host_page`]).
    #[inline]
    pub fn host_page_for(&mut self, lpa: u32, flash: &mut Flash) -> Result<Ppn> {
        if self.relocation.as_ref().is_some_and(|r| r.host) && self.slc.is_none() {
            if let Some(ppn) = self.host_line_page(lpa, flash)? {
                return Ok(ppn);
            }
        }
        self.host_page(flash)
    }

    /// A host page of `lpa`'s line. Opening a line takes a block on every unit: each unit
    /// first collects as it would before opening a block of its own.
    fn host_line_page(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Ppn>> {
        let Some(r) = self.relocation.as_ref() else {
            return Ok(None);
        };
        let stream = (r.key)(lpa) as usize;
        let units = self.layout.units;
        let full = |line: &(Vec<u32>, u32)| {
            line.0.is_empty() || line.1 == units * self.layout.pages_per_block
        };
        if stream != 0 && full(&r.lines[stream]) {
            if r.lines.iter().filter(|l| !full(l)).count() >= r.max_open {
                return Ok(None);
            }
            for unit in 0..units {
                self.collect_if_low(unit, flash)?;
            }
        }
        let mut r = self.relocation.take().expect("relocation streams");
        let ppn = self.line_page(&mut r, stream, false);
        self.relocation = Some(r);
        Ok(ppn)
    }

    /// The host stream with a stripe: stay on the current unit while the stripe lasts and
    /// its open block has room, then move on round-robin.
    fn striped_host_page(&mut self, flash: &mut Flash) -> Result<Ppn> {
        for _ in 0..=self.layout.units {
            let unit = self.unit_at(self.next_unit[HOST]);
            if self.host_left > 0 {
                if let Some(ppn) = self.unit_page(HOST, unit, flash)? {
                    self.host_left -= 1;
                    if self.open[HOST][unit as usize].next == self.layout.pages_per_block {
                        self.host_left = 0;
                    }
                    return Ok(ppn);
                }
            }
            self.next_unit[HOST] = self.next_position(self.next_unit[HOST]);
            self.host_left = self.host_stripe;
        }
        Err(self.out_of_blocks(flash, FULL))
    }

    /// The next free page for a translation page (a translation store only).
    pub fn translation_page(&mut self, flash: &mut Flash) -> Result<Ppn> {
        debug_assert!(!self.kind.is_empty(), "translation stream not enabled");
        self.stream_page(MAP, flash)
    }

    /// Data pages relocated by GC since the last call, in the order they moved. The caller
    /// hands the vector back with [`PageAllocator::recycle_moves`] to keep its capacity.
    #[inline]
    pub fn take_moves(&mut self) -> Vec<Move> {
        std::mem::take(&mut self.moved_data)
    }

    /// Whether GC moved data pages that the scheme has not taken yet.
    #[inline]
    pub fn has_moves(&self) -> bool {
        !self.moved_data.is_empty()
    }

    /// Returns a drained move vector so that its allocation is reused.
    #[inline]
    pub fn recycle_moves(&mut self, mut moves: Vec<Move>) {
        if self.moved_data.is_empty() {
            moves.clear();
            self.moved_data = moves;
        }
    }

    /// Whether GC relocated translation pages the translation store has not taken yet.
    #[inline]
    pub(crate) fn has_translation_moves(&self) -> bool {
        !self.moved_translation.is_empty()
    }

    /// Translation pages relocated by GC since the last call (for the translation store).
    pub(crate) fn drain_translation_moves(&mut self) -> std::vec::Drain<'_, Move> {
        self.moved_translation.drain(..)
    }

    /// Round-robin over the units, each tried once. The common case, a page left in the
    /// next unit's open block, is inline; the rest is not.
    #[inline]
    fn stream_page(&mut self, stream: usize, flash: &mut Flash) -> Result<Ppn> {
        let position = self.next_unit[stream];
        if let Some(ppn) = self.next_in_open(stream, self.unit_at(position)) {
            self.next_unit[stream] = self.next_position(position);
            return Ok(ppn);
        }
        self.stream_page_slow(stream, flash)
    }

    #[inline(never)]
    fn stream_page_slow(&mut self, stream: usize, flash: &mut Flash) -> Result<Ppn> {
        for _ in 0..self.layout.units {
            let position = self.next_unit[stream];
            self.next_unit[stream] = self.next_position(position);
            let unit = self.unit_at(position);
            if let Some(ppn) = self.unit_page(stream, unit, flash)? {
                return Ok(ppn);
            }
        }
        Err(self.out_of_blocks(flash, FULL))
    }

    /// The unit at round-robin position `position`: channel first, and with multi-plane
    /// operations the planes of one die back to back.
    #[inline]
    fn unit_at(&self, position: u32) -> u32 {
        self.round_robin[position as usize]
    }

    /// The round-robin position after `position`.
    #[inline]
    fn next_position(&self, position: u32) -> u32 {
        if position + 1 == self.layout.units {
            0
        } else {
            position + 1
        }
    }

    #[inline]
    fn next_in_open(&mut self, stream: usize, unit: u32) -> Option<Ppn> {
        let open = &mut self.open[stream][unit as usize];
        if open.block != NONE && open.next < open.end {
            let ppn = open.block * self.layout.pages_per_block + open.next;
            open.next += 1;
            return Some(ppn);
        }
        None
    }

    fn unit_page(&mut self, stream: usize, unit: u32, flash: &mut Flash) -> Result<Option<Ppn>> {
        if let Some(ppn) = self.next_in_open(stream, unit) {
            return Ok(Some(ppn));
        }
        // (A block retired may have had its pages re-written to a block of this stream.)
        if !self.retire_failed(stream, unit, flash)? {
            self.open[stream][unit as usize] = OpenBlock::CLOSED;
        }
        self.collect_if_low(unit, flash)?;
        loop {
            // GC may have opened the unit's translation block for relocated translation
            // pages (and a block opened may fail at its first page).
            if let Some(ppn) = self.next_in_open(stream, unit) {
                return Ok(Some(ppn));
            }
            if self.retire_failed(stream, unit, flash)? {
                // Its pages may have gone to a block of this stream just opened.
                continue;
            }
            if self.free.count(unit) <= self.reserve {
                return Ok(None);
            }
            let Some(block) = self.pop_free(unit, false, flash) else {
                return Ok(None);
            };
            self.open_block(stream, unit, block);
        }
    }

    /// Makes erased `block` the open block of `stream` on `unit`, its first failing
    /// program drawn (`[faults]`).
    #[inline]
    fn open_block(&mut self, stream: usize, unit: u32, block: u32) {
        self.set_kind(block, stream);
        let ppb = self.layout.pages_per_block;
        let end = self.faults.as_mut().map_or(ppb, |f| f.failing_page(ppb));
        self.open[stream][unit as usize] = OpenBlock {
            block,
            next: 0,
            end,
        };
    }

    /// If the open block of `stream` on `unit` stopped at a page whose program fails: the
    /// failed program is issued, the block closed, its valid pages re-written elsewhere
    /// ([`Cause::Retire`]) and the block retired. The page that failed is then written to
    /// the page the caller takes next, so that the write is not lost. Returns whether it
    /// retired a block.
    #[inline(never)]
    fn retire_failed(&mut self, stream: usize, unit: u32, flash: &mut Flash) -> Result<bool> {
        let open = self.open[stream][unit as usize];
        if open.block == NONE || open.next < open.end || open.end == self.layout.pages_per_block {
            return Ok(false);
        }
        self.open[stream][unit as usize] = OpenBlock::CLOSED;
        flash.fail_program(flash.first_page(open.block) + open.end, Cause::Retire)?;
        self.evacuate(open.block, unit, Cause::Retire, flash)?;
        flash.retire(open.block)?;
        Ok(true)
    }

    /// Re-writes the valid pages of `block` on `unit` under `cause` (a block going bad, one
    /// refreshed or one static wear levelling empties): data pages to the stream GC copies
    /// to, translation pages to the translation stream.
    fn evacuate(&mut self, block: u32, unit: u32, cause: Cause, flash: &mut Flash) -> Result<()> {
        let translation = self.kind.get(block as usize) == Some(&BlockKind::Translation);
        let stream = if translation { MAP } else { self.copy_stream };
        let pages: Vec<Ppn> = flash.valid_pages(block).collect();
        for ppn in pages {
            self.relocate(ppn, stream, unit, translation, cause, flash)?;
        }
        Ok(())
    }

    /// Copies valid page `ppn` to the next page of `stream` on `unit` under `cause`,
    /// invalidates the old copy and records the move (a translation page's for the
    /// translation store, a data page's for the scheme's map).
    fn relocate(
        &mut self,
        ppn: Ppn,
        stream: usize,
        unit: u32,
        translation: bool,
        cause: Cause,
        flash: &mut Flash,
    ) -> Result<()> {
        let dst = self.relocation_page(stream, unit, flash)?;
        if translation {
            let oob = flash.copy(ppn, dst, cause)?;
            flash.invalidate(ppn)?;
            self.moved_translation.push(Move {
                key: oob.translation_page(),
                from: ppn,
                to: dst,
            });
            Ok(())
        } else {
            self.move_data_page(ppn, dst, cause, flash)
        }
    }

    /// Erases a reclaimed block and returns it to its unit's free pool; if the erase
    /// fails (`[faults]`), the block is retired instead.
    fn release(&mut self, block: u32, cause: Cause, flash: &mut Flash) -> Result<()> {
        flash.erase(block, cause)?;
        if self.faults.as_mut().is_some_and(|f| f.erase_fails()) {
            flash.stats.erase_failures += 1;
            flash.retire(block)?;
        } else {
            self.free.push(&self.layout, block);
        }
        Ok(())
    }

    /// A device-full error: `message`, and with faults on, how many blocks went bad.
    fn out_of_blocks(&self, flash: &Flash, message: &str) -> Error {
        let worn = if self.faults_on {
            format!(
                " ({} blocks are retired as bad: the device is worn out)",
                flash.retired_blocks()
            )
        } else {
            String::new()
        };
        Error::DeviceFull {
            message: format!("{message}{worn}"),
        }
    }

    /// Whether the allocator injects `[faults]`: on, and no relocation streams (whose
    /// lines it does not retire).
    pub fn has_faults(&self) -> bool {
        self.faults_on && self.relocation.is_none()
    }

    /// Before `unit` opens a block: below the soft threshold it reclaims a victim (or waits
    /// for background GC), at or below the hard one until it is above again.
    fn collect_if_low(&mut self, unit: u32, flash: &mut Flash) -> Result<()> {
        if self.slc.is_some() {
            self.fold_if_low(unit, flash)?;
        }
        let mut collected = false;
        if self.free.count(unit) < self.soft_free_blocks {
            if self.background_gc {
                self.want_gc(unit);
            } else {
                collected |= self.reclaim(unit, flash)?;
            }
        }
        while self.free.count(unit) <= self.hard_free_blocks {
            if !self.reclaim(unit, flash)? {
                break;
            }
            collected = true;
        }
        if collected && !self.background_gc {
            // 0.1's model (foreground GC): the request's later operations, on any die, wait
            // for this GC. With background GC only the unit's own die waits (its timeline
            // orders them), so foreground GC on several dies of one request runs in
            // parallel, as it does in a controller.
            flash.chain();
        }
        Ok(())
    }

    #[inline]
    fn set_kind(&mut self, block: u32, stream: usize) {
        if let Some(k) = self.kind.get_mut(block as usize) {
            *k = if stream == MAP {
                BlockKind::Translation
            } else {
                BlockKind::Data
            };
        }
    }

    /// The next page of the unit's GC or translation block during relocation, opening a free
    /// block (the reserve included) when it is full.
    fn relocation_page(&mut self, stream: usize, unit: u32, flash: &mut Flash) -> Result<Ppn> {
        loop {
            if let Some(ppn) = self.next_in_open(stream, unit) {
                return Ok(ppn);
            }
            if self.retire_failed(stream, unit, flash)? {
                continue;
            }
            let Some(block) = self.pop_free(unit, stream != MAP, flash) else {
                return Err(self.out_of_blocks(
                    flash,
                    &format!("parallel unit {unit} has no free block left for garbage collection"),
                ));
            };
            self.open_block(stream, unit, block);
        }
    }

    #[inline]
    fn want_gc(&mut self, unit: u32) {
        if !self.gc_pending_flag[unit as usize] {
            self.gc_pending_flag[unit as usize] = true;
            self.gc_pending.push(unit);
            self.forget_wake(unit);
        }
    }

    /// Background garbage collection, between requests: each unit below the soft threshold
    /// whose die has finished its earlier background work reclaims one victim, its
    /// operations issued as background work (the caller sets [`Flash::set_background`]). GC
    /// thus runs in idle die time; when that is not enough, free blocks fall to the hard
    /// threshold and the writes that need them wait for foreground GC. A unit stays pending
    /// while it is below the soft threshold. The scheme applies the moves afterwards, as
    /// after an allocation.
    #[inline(always)]
    pub fn idle_gc(&mut self, flash: &mut Flash) -> Result<()> {
        if self.slc.as_ref().is_some_and(|c| c.full_blocks > 0) {
            self.idle_fold(flash)?;
        }
        if self.refresh_after > 0 && flash.media_now() >= self.next_refresh_scan {
            self.refresh_old(flash)?;
        }
        // Most calls have nothing to do: keep that check inline and cheap.
        if self.gc_pending.is_empty()
            || (flash.background_now() < self.gc_wake_min
                && flash.background_epoch() == self.gc_wake_epoch)
        {
            return Ok(());
        }
        self.idle_gc_round(flash)
    }

    /// One round of [`PageAllocator::idle_gc`] over the pending units.
    fn idle_gc_round(&mut self, flash: &mut Flash) -> Result<()> {
        let epoch = flash.background_epoch();
        if epoch != self.gc_wake_epoch {
            // A die's queue ran empty since (or the timing restarted): the wake times of the
            // units on that die may no longer hold.
            let restarted = epoch.0 != self.gc_wake_epoch.0;
            for &unit in &self.gc_pending {
                if restarted || flash.background_drains(unit) != self.gc_wake_drains[unit as usize]
                {
                    self.gc_wake[unit as usize] = 0;
                }
            }
        }
        // Filtered in place (no allocation per round); reclaiming never adds a unit.
        let mut pending = std::mem::take(&mut self.gc_pending);
        let mut result = Ok(());
        let mut wake_min = u64::MAX;
        let mut kept = 0;
        for i in 0..pending.len() {
            let unit = pending[i];
            // A unit whose die is known to be busy stays as it is (as after an error). (A
            // reclaim may move the flash cursor: read the time for every unit.)
            let skip = flash.background_now() < self.gc_wake[unit as usize]
                && self.free.count(unit) < self.soft_free_blocks;
            let stays = skip
                || result.is_err()
                || self.stays_pending(unit, flash).unwrap_or_else(|e| {
                    result = Err(e);
                    true
                });
            self.gc_pending_flag[unit as usize] = stays;
            if stays {
                wake_min = wake_min.min(self.gc_wake[unit as usize]);
                pending[kept] = unit;
                kept += 1;
            }
        }
        pending.truncate(kept);
        debug_assert!(self.gc_pending.is_empty());
        self.gc_pending = pending;
        // The wake times hold while no queue runs empty: if one did during the round, the
        // next round starts afresh.
        self.gc_wake_min = if result.is_ok() { wake_min } else { 0 };
        self.gc_wake_epoch = epoch;
        result
    }

    /// One unit's turn in a background GC round: whether it stays pending (still below the
    /// soft threshold after reclaiming a victim, or its die still busy with earlier
    /// background work, which gets no more until it catches up). Kept out of line: most
    /// turns are skipped, and their loop stays small.
    #[inline(never)]
    fn stays_pending(&mut self, unit: u32, flash: &mut Flash) -> Result<bool> {
        let low = |a: &Self| a.free.count(unit) < a.soft_free_blocks;
        if self.slc.is_some() && low(self) && !flash.background_busy(unit) {
            // Dynamic SLC blocks give free blocks back more cheaply than any victim.
            self.fold_if_low(unit, flash)?;
        }
        let stays =
            low(self) && (flash.background_busy(unit) || (self.reclaim(unit, flash)? && low(self)));
        self.gc_wake[unit as usize] = flash.background_busy_until(unit).unwrap_or(0);
        self.gc_wake_drains[unit as usize] = flash.background_drains(unit);
        Ok(stays)
    }

    /// The unit's next turn must look at its die again.
    #[inline]
    fn forget_wake(&mut self, unit: u32) {
        self.gc_wake[unit as usize] = 0;
        self.gc_wake_min = 0;
    }

    /// Whether units below the soft threshold wait for [`PageAllocator::idle_gc`]
    /// (`gc.mode = "background"`) rather than collecting in the write's path.
    pub fn background_gc(&self) -> bool {
        self.background_gc
    }

    /// Whether [`PageAllocator::idle_gc`] may have work, or GC left moves to settle: false
    /// after most requests, when the scheme's idle hook would do nothing.
    #[inline]
    pub fn has_idle_work(&self) -> bool {
        !self.gc_pending.is_empty()
            || self.has_moves()
            || self.has_translation_moves()
            || self.slc.as_ref().is_some_and(|c| c.full_blocks > 0)
            || self.refresh_after > 0
    }

    /// Refresh, in idle time: every block whose data is at least `media.refresh_after_ns`
    /// old (since its first program, the media's clock) has its valid pages re-written
    /// (cause [`Cause::Refresh`]) and is erased; an open block that old is closed first.
    /// The scan runs eight times per refresh period, so that no data gets older than 1.125
    /// periods while the device has idle time. A unit without a free block beyond GC's
    /// reserve waits for the next scan. SLC blocks are left to folding; not with relocation
    /// streams (their lines are collected whole).
    #[inline(never)]
    fn refresh_old(&mut self, flash: &mut Flash) -> Result<()> {
        let now = flash.media_now();
        self.next_refresh_scan = now.saturating_add((self.refresh_after / 8).max(1));
        let Some(media) = flash.media().filter(|_| self.relocation.is_none()) else {
            return Ok(());
        };
        let old: Vec<u32> = (0..self.layout.total_blocks)
            .filter(|&b| {
                flash.valid_count(b) > 0
                    && !flash.is_slc(b)
                    && now.saturating_sub(media.first_program_ns(b)) >= self.refresh_after
            })
            .collect();
        for block in old {
            let unit = self.layout.unit_of_block(block);
            if self.free.count(unit) <= self.reserve {
                continue;
            }
            for stream in [HOST, GC, MAP] {
                if self.open[stream][unit as usize].block == block {
                    self.open[stream][unit as usize] = OpenBlock::CLOSED;
                }
            }
            self.evacuate(block, unit, Cause::Refresh, flash)?;
            self.release(block, Cause::Refresh, flash)?;
            flash.stats.refresh_blocks += 1;
        }
        Ok(())
    }

    /// Copies data page `ppn` to `dst` under `cause`, invalidates the old copy and records
    /// the move for the scheme's map (GC, the relocation streams and SLC folding alike).
    #[inline]
    fn move_data_page(
        &mut self,
        ppn: Ppn,
        dst: Ppn,
        cause: Cause,
        flash: &mut Flash,
    ) -> Result<()> {
        let oob = flash.copy(ppn, dst, cause)?;
        flash.invalidate(ppn)?;
        self.moved_data.push(Move {
            key: oob.lpa,
            from: ppn,
            to: dst,
        });
        Ok(())
    }

    /// The valid pages of `victim` as (logical page, physical page), in the buffer kept for
    /// them (hand it back to `victim_pages`): in logical order if `data` and the scheme
    /// relearns relocated pages as a sorted batch (LeaFTL: sorted relocation), else in
    /// physical order.
    fn take_victim_pages(&mut self, victim: u32, data: bool, flash: &Flash) -> Vec<(u32, Ppn)> {
        let mut pages = std::mem::take(&mut self.victim_pages);
        pages.clear();
        pages.extend(
            flash
                .valid_pages(victim)
                .map(|ppn| (flash.oob(ppn).lpa, ppn)),
        );
        if self.sorted_relocation && data {
            pages.sort_unstable();
        }
        pages
    }

    /// Reclaims one victim block of `unit`; false if no block has an invalid page.
    fn reclaim(&mut self, unit: u32, flash: &mut Flash) -> Result<bool> {
        let u = unit as usize;
        let exclude = [
            self.open[HOST][u].block,
            self.open[GC][u].block,
            self.open[MAP][u].block,
        ];
        let Some(victim) = select_victim(flash, unit, self.policy, &exclude) else {
            return Ok(false);
        };
        let translation = self.kind.get(victim as usize) == Some(&BlockKind::Translation);
        if !translation {
            if let Some(mut relocation) = self.relocation.take() {
                let reclaimed = self.reclaim_by_stream(&mut relocation, unit, victim, flash);
                self.relocation = Some(relocation);
                return reclaimed.map(|()| true);
            }
        }
        let stream = if translation { MAP } else { self.copy_stream };
        let pages = self.take_victim_pages(victim, !translation, flash);
        let mut moved = 0;
        for &(_, ppn) in &pages {
            self.relocate(ppn, stream, unit, translation, Cause::Gc, flash)?;
            moved += 1;
        }
        self.victim_pages = pages;
        if !self.background_gc {
            // (The erase follows the copies on the victim's die in any case.)
            flash.chain();
        }
        self.release(victim, Cause::Gc, flash)?;
        self.forget_wake(unit);
        flash.stats.gc_invocations += 1;
        flash.stats.gc_pages_moved += moved;
        if translation {
            self.translation_pages_moved += moved;
        }
        if self.wear_leveling == WearLeveling::Static {
            self.level_wear(unit, flash)?;
        }
        Ok(true)
    }

    /// A free block of `unit` to open: the oldest freed (FIFO) without wear levelling; with
    /// it, the least-worn, or for data GC relocates (`cold`) the most-worn (ties to the
    /// oldest freed). See [`WearLeveling`].
    #[inline]
    fn pop_free(&mut self, unit: u32, cold: bool, flash: &Flash) -> Option<u32> {
        if self.wear_leveling == WearLeveling::Off {
            return self.free.pop(unit);
        }
        let count = |b: u32| flash.erase_count(b);
        let pick = if cold {
            // The most worn; the first of equals (max_by_key would take the last).
            self.free
                .blocks(unit)
                .min_by_key(|&b| std::cmp::Reverse(count(b)))
        } else {
            self.free.blocks(unit).min_by_key(|&b| count(b))
        }?;
        self.free.take(&self.layout, pick);
        Some(pick)
    }

    /// Static wear levelling on `unit` after a reclaim: while the erase counts of its good
    /// blocks differ by more than `static_wl_gap`, the least-worn full native block holding
    /// data (not open; the lowest number of equals) has its valid pages moved (cause
    /// [`Cause::WearLevel`]) and is erased, so that dynamic levelling hands it to hot data.
    /// At most [`WL_MOVES_PER_RECLAIM`] blocks per reclaim, and only while the unit has a
    /// free block beyond GC's reserve (the moved pages need at most one; the erase gives one
    /// back). Not with relocation streams (their lines are collected whole).
    #[inline(never)]
    fn level_wear(&mut self, unit: u32, flash: &mut Flash) -> Result<()> {
        for _ in 0..WL_MOVES_PER_RECLAIM {
            if self.relocation.is_some() || self.free.count(unit) <= self.reserve {
                return Ok(());
            }
            let u = unit as usize;
            let open = [
                self.open[HOST][u].block,
                self.open[GC][u].block,
                self.open[MAP][u].block,
            ];
            let first = unit * self.layout.blocks_per_unit;
            let (mut coldest, mut least, mut most) = (NONE, u32::MAX, 0);
            for b in first..first + self.layout.blocks_per_unit {
                if flash.is_retired(b) {
                    continue;
                }
                let c = flash.erase_count(b);
                most = most.max(c);
                if c < least && flash.is_full(b) && !flash.is_slc(b) && !open.contains(&b) {
                    (coldest, least) = (b, c);
                }
            }
            if coldest == NONE || most - least <= self.static_wl_gap {
                return Ok(());
            }
            self.evacuate(coldest, unit, Cause::WearLevel, flash)?;
            self.release(coldest, Cause::WearLevel, flash)?;
            flash.stats.wear_level_blocks += 1;
        }
        Ok(())
    }

    /// Moves `pages` (logical page, physical page) each to its key's line, else to `unit`'s
    /// GC block; returns how many moved.
    fn move_to_lines(
        &mut self,
        r: &mut Relocation,
        pages: &[(u32, Ppn)],
        unit: u32,
        together: bool,
        flash: &mut Flash,
    ) -> Result<u64> {
        for &(lpa, ppn) in pages {
            let stream = (r.key)(lpa) as usize;
            let dst = match self.line_page(r, stream, together) {
                Some(dst) => dst,
                None => self.relocation_page(self.copy_stream, unit, flash)?,
            };
            self.move_data_page(ppn, dst, Cause::Gc, flash)?;
        }
        Ok(pages.len() as u64)
    }

    /// Reclaims data victim `victim` of `unit` through the relocation streams: with the
    /// other blocks of its stream on every unit when it belongs to a line and the free
    /// blocks allow, their valid pages sorted by logical page (alone, sorted with sorted
    /// relocation, otherwise); each page goes to its key's line, else to `unit`'s GC block.
    fn reclaim_by_stream(
        &mut self,
        r: &mut Relocation,
        unit: u32,
        victim: u32,
        flash: &mut Flash,
    ) -> Result<()> {
        let layout = self.layout;
        let line_pages = layout.units as u64 * layout.pages_per_block as u64;
        r.victims.clear();
        r.victims.push(victim);
        let group = r.stream_of[victim as usize];
        let mut together = false;
        if group != 0 {
            // The stream's blocks (its open line's too): they fit in fresh lines if every
            // unit has that many free blocks beside its reserve (the collecting unit may use
            // its own, as GC does).
            let blocks = (0..layout.total_blocks).filter(|&b| r.stream_of[b as usize] == group);
            let valid: u64 = blocks.clone().map(|b| flash.valid_count(b) as u64).sum();
            let lines = valid.div_ceil(line_pages) as usize;
            let room = (0..layout.units).all(|w| {
                let reserve = if w == unit { 0 } else { GC_RESERVE_BLOCKS };
                self.free.count(w) >= lines + reserve
            });
            if room {
                r.victims.clear();
                r.victims.extend(blocks);
                r.lines[group as usize].0.clear();
                together = true;
                r.collections += 1;
                r.blocks_collected += r.victims.len() as u64;
            }
        }
        let mut pages = std::mem::take(&mut self.victim_pages);
        pages.clear();
        for &b in &r.victims {
            pages.extend(flash.valid_pages(b).map(|ppn| (flash.oob(ppn).lpa, ppn)));
        }
        if together || self.sorted_relocation {
            pages.sort_unstable();
        }
        let moved = self.move_to_lines(r, &pages, unit, together, flash);
        // The buffer is kept for the next victim whether or not the moves succeeded.
        self.victim_pages = pages;
        let moved = moved?;
        if !self.background_gc {
            flash.chain();
        }
        for &b in &r.victims {
            self.release(b, Cause::Gc, flash)?;
            r.stream_of[b as usize] = 0;
            self.forget_wake(layout.unit_of_block(b));
        }
        flash.stats.gc_invocations += 1;
        flash.stats.gc_pages_moved += moved;
        Ok(())
    }

    /// The next page of `stream`'s line (stream 0: none, the unit's GC block takes it),
    /// opening a fresh line when it is full or closed: `together` (a group collection whose
    /// room was checked, replacing the group's line) always, otherwise only while fewer than
    /// `max_open` lines are open and every unit keeps more than its reserve. A line takes the
    /// same block index on every unit when one is free on all.
    fn line_page(&mut self, r: &mut Relocation, stream: usize, together: bool) -> Option<Ppn> {
        if stream == 0 {
            return None;
        }
        let units = self.layout.units;
        let ppb = self.layout.pages_per_block;
        let full = |line: &(Vec<u32>, u32)| line.0.is_empty() || line.1 == units * ppb;
        if full(&r.lines[stream]) {
            let open = r.lines.iter().filter(|l| !full(l)).count();
            let spare = |w: u32| self.free.count(w) > GC_RESERVE_BLOCKS;
            if !(0..units).all(|w| self.free.count(w) > 0)
                || !together && (open >= r.max_open || !(0..units).all(spare))
            {
                return None;
            }
        }
        let (blocks, next) = &mut r.lines[stream];
        if blocks.is_empty() || *next == units * ppb {
            blocks.clear();
            let bpu = self.layout.blocks_per_unit;
            let first = self.round_robin[0];
            let aligned = self.free.blocks(first).map(|b| b % bpu).find(|&i| {
                self.round_robin
                    .iter()
                    .all(|&w| self.free.blocks(w).any(|b| b == w * bpu + i))
            });
            for &w in &self.round_robin {
                let block = match aligned {
                    Some(i) => {
                        let b = w * bpu + i;
                        self.free.take(&self.layout, b);
                        b
                    }
                    None => self.free.pop(w).expect("every unit has a free block"),
                };
                blocks.push(block);
                r.stream_of[block as usize] = stream as u32;
                if let Some(k) = self.kind.get_mut(block as usize) {
                    *k = BlockKind::Data;
                }
            }
            *next = 0;
        }
        let i = *next;
        *next += 1;
        Some(blocks[(i % units) as usize] * ppb + i / units)
    }

    /// After a restart ([`crate::device::recovery`]), with the kept pages revalidated: the free
    /// pools, the open blocks and the block kinds from what the flash holds. A partly
    /// written block becomes the open block of its stream on its unit (data: the host
    /// stream, then GC's; translation pages: the translation stream); any other is closed
    /// with filler pages, as pblk pads its open lines, so that GC can take it.
    pub fn recover(&mut self, flash: &mut Flash) -> Result<()> {
        if self.slc.is_some() {
            return Err(Error::config(
                "slc.static_fraction",
                "recovery after a restart is not modelled with the pseudo-SLC cache on \
                 (turn slc.static_fraction and slc.dynamic_fraction to 0)",
            ));
        }
        if self.faults_on {
            return Err(Error::config(
                "faults",
                "recovery after a restart is not modelled with [faults] on (turn its \
                 fractions and rates to 0)",
            ));
        }
        let layout = self.layout;
        self.free = FreeBlocks::empty(&layout);
        for stream in &mut self.open {
            stream.fill(OpenBlock::CLOSED);
        }
        self.next_unit = [0; 3];
        self.host_left = self.host_stripe;
        if let Some(r) = self.relocation.as_mut() {
            // Lines are not rebuilt: their partly written blocks are closed like any other.
            r.lines.iter_mut().for_each(|l| l.0.clear());
            r.stream_of.fill(0);
        }
        let ppb = layout.pages_per_block;
        for block in 0..layout.total_blocks {
            let unit = layout.unit_of_block(block) as usize;
            if flash.is_erased(block) {
                self.free.push(&layout, block);
                continue;
            }
            let first = flash.first_page(block);
            let translation = !self.kind.is_empty()
                && (first..first + ppb).any(|p| {
                    flash.is_programmed(p)
                        && flash.oob(p).lpa == NONE
                        && flash.oob(p) != Oob::FILLER
                });
            if let Some(k) = self.kind.get_mut(block as usize) {
                *k = if translation {
                    BlockKind::Translation
                } else {
                    BlockKind::Data
                };
            }
            if flash.is_full(block) {
                continue;
            }
            let stream = if translation {
                Some(MAP).filter(|&s| self.open[s][unit].block == NONE)
            } else {
                [HOST, GC]
                    .into_iter()
                    .find(|&s| self.open[s][unit].block == NONE)
            };
            match stream {
                Some(s) => {
                    self.open[s][unit] = OpenBlock {
                        block,
                        next: flash.write_pointer(block),
                        end: ppb,
                    }
                }
                None => crate::device::recovery::pad_block(flash, block)?,
            }
        }
        if self.background_gc {
            for unit in 0..layout.units {
                if self.free.count(unit) < self.soft_free_blocks {
                    self.want_gc(unit);
                }
            }
        }
        Ok(())
    }

    /// GC bookkeeping every out-of-place scheme holds in DRAM: a valid bitmap (1 bit per
    /// physical page) and per-block counters (valid-page count and erase count, 4 bytes
    /// each, plus a 4-byte last-modified stamp with cost-benefit).
    pub fn memory(&self, out: &mut MemoryBreakdown) {
        let layout = &self.layout;
        out.push(("valid_bitmap", layout.physical_pages.div_ceil(8)));
        let per_block = if self.policy == VictimPolicy::CostBenefit {
            12
        } else {
            8
        };
        out.push(("block_counters", layout.total_blocks as u64 * per_block));
    }
}

/// The pseudo-SLC cache ([`super::slc`]): the host pages it takes, and folding.
impl PageAllocator {
    /// Whether host writes go to a pseudo-SLC cache first.
    pub fn has_slc_cache(&self) -> bool {
        self.slc.is_some()
    }

    /// A host page in the cache, on the unit at the cache's round-robin position: in its
    /// open SLC block, else in a block it opens, else (the unit's cache full, with
    /// `slc.when_full = "fold"`) in the block that folding the unit's oldest SLC block in the
    /// foreground frees. None when the unit has no SLC block to give: the write goes to the
    /// host stream's native block.
    #[inline(never)]
    fn slc_host_page(&mut self, flash: &mut Flash) -> Result<Option<Ppn>> {
        let Some(mut cache) = self.slc.take() else {
            return Ok(None);
        };
        let position = cache.next;
        cache.next = self.next_position(position);
        let unit = self.unit_at(position);
        let result = self.slc_page(&mut cache, unit, flash);
        self.slc = Some(cache);
        result
    }

    fn slc_page(
        &mut self,
        cache: &mut SlcCache,
        unit: u32,
        flash: &mut Flash,
    ) -> Result<Option<Ppn>> {
        let ppb = self.layout.pages_per_block;
        if let Some((block, offset)) = cache.next_in_open(unit) {
            return Ok(Some(block * ppb + offset));
        }
        let opened = self.open_slc(cache, unit, flash)?
            || (cache.fold_when_full
                && self.fold(cache, unit, flash)?
                && self.open_slc(cache, unit, flash)?);
        if !opened {
            return Ok(None);
        }
        Ok(cache
            .next_in_open(unit)
            .map(|(block, offset)| block * ppb + offset))
    }

    /// Opens an SLC block on `unit`: an erased static one, else a free block borrowed for
    /// the dynamic region if the unit is under its limit and keeps more free blocks than
    /// GC's soft threshold and reserve. False if neither.
    fn open_slc(&mut self, cache: &mut SlcCache, unit: u32, flash: &mut Flash) -> Result<bool> {
        let u = unit as usize;
        let block = match cache.static_free[u].pop_front() {
            Some(block) => block,
            None if cache.dynamic_used[u] < cache.dynamic_limit
                && self.free.count(unit) > self.soft_free_blocks + GC_RESERVE_BLOCKS =>
            {
                cache.dynamic_used[u] += 1;
                self.free.pop(unit).expect("the unit has free blocks")
            }
            None => return Ok(false),
        };
        flash.set_slc(block, true)?;
        self.set_kind(block, HOST);
        cache.open[u] = (block, 0);
        Ok(true)
    }

    /// Folds the oldest filled SLC block of `unit`: its valid pages copied to the unit's host
    /// (native) block, the moves recorded as GC's are, the block erased and returned to the
    /// static region or, in native mode, to the free pool. False if none waits.
    fn fold(&mut self, cache: &mut SlcCache, unit: u32, flash: &mut Flash) -> Result<bool> {
        let u = unit as usize;
        let Some(victim) = cache.full[u].pop_front() else {
            return Ok(false);
        };
        cache.full_blocks -= 1;
        let pages = self.take_victim_pages(victim, true, flash);
        let moved = self.fold_pages(&pages, unit, flash);
        self.victim_pages = pages;
        let moved = moved?;
        if !self.background_gc {
            flash.chain();
        }
        flash.erase(victim, Cause::Fold)?;
        if cache.is_static[victim as usize] {
            cache.static_free[u].push_back(victim);
        } else {
            flash.set_slc(victim, false)?;
            cache.dynamic_used[u] -= 1;
            self.free.push(&self.layout, victim);
            self.forget_wake(unit);
        }
        flash.stats.slc_folds += 1;
        flash.stats.slc_pages_folded += moved;
        Ok(true)
    }

    /// Copies `pages` (logical page, physical page) into `unit`'s host block (its GC block,
    /// the reserve included, when the unit has no block to open for host data).
    fn fold_pages(&mut self, pages: &[(u32, Ppn)], unit: u32, flash: &mut Flash) -> Result<u64> {
        for &(_, ppn) in pages {
            let dst = match self.unit_page(HOST, unit, flash)? {
                Some(dst) => dst,
                None => self.relocation_page(GC, unit, flash)?,
            };
            self.move_data_page(ppn, dst, Cause::Fold, flash)?;
        }
        Ok(pages.len() as u64)
    }

    /// Below the soft threshold, the unit first gets its free blocks back from the dynamic
    /// region: it folds its filled dynamic SLC blocks, oldest first, until it is above or
    /// has none (each gives a block for a third of one's worth of TLC pages, cheaper than
    /// any GC victim). Otherwise the cache's blocks, out of GC's reach, could hold the
    /// over-provisioning.
    fn fold_if_low(&mut self, unit: u32, flash: &mut Flash) -> Result<()> {
        let Some(mut cache) = self.slc.take() else {
            return Ok(());
        };
        let u = unit as usize;
        let mut result = Ok(());
        while self.free.count(unit) < self.soft_free_blocks {
            let Some(i) = cache.full[u]
                .iter()
                .position(|&b| !cache.is_static[b as usize])
            else {
                break;
            };
            // The oldest dynamic block goes first in the fold queue.
            let block = cache.full[u].remove(i).expect("a queued block");
            cache.full[u].push_front(block);
            result = self.fold(&mut cache, unit, flash).map(|_| ());
            if result.is_err() {
                break;
            }
        }
        self.slc = Some(cache);
        result
    }

    /// Folding in idle time: each unit whose die is idle before the next request
    /// ([`Flash::idle_in_gap`]) folds its oldest filled SLC block, as background work.
    fn idle_fold(&mut self, flash: &mut Flash) -> Result<()> {
        let Some(mut cache) = self.slc.take() else {
            return Ok(());
        };
        let mut result = Ok(());
        for unit in 0..self.layout.units {
            if !cache.full[unit as usize].is_empty() && flash.idle_in_gap(unit) {
                result = self.fold(&mut cache, unit, flash).map(|_| ());
                if result.is_err() {
                    break;
                }
            }
        }
        self.slc = Some(cache);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::run::config::Config;

    /// A device of 4 units, 24 blocks of 16 pages each, 40% over-provisioning, GC in the
    /// foreground.
    fn device() -> (Config, Layout) {
        let mut cfg = Config::default();
        let g = &mut cfg.geometry;
        (
            g.channels,
            g.chips_per_channel,
            g.dies_per_chip,
            g.planes_per_die,
        ) = (2, 1, 2, 1);
        (g.blocks_per_plane, g.pages_per_block) = (24, 16);
        cfg.ftl.over_provisioning = 0.4;
        cfg.gc.mode = GcMode::Foreground;
        let layout = cfg.validate().unwrap();
        (cfg, layout)
    }

    /// A sequential fill, then `n` random overwrites (a hot quarter taking most), each
    /// write's physical page and GC's moves applied to a map; returns every page handed out
    /// and every move, in order, and checks the map against the flash at the end.
    fn overwrite(alloc: &mut PageAllocator, n: usize) -> (Vec<Ppn>, Vec<Move>, Flash) {
        let (cfg, layout) = device();
        let mut flash = Flash::new(&cfg.device(), &layout, 0, true).unwrap();
        let logical = layout.logical_pages;
        let mut l2p = vec![NONE; logical as usize];
        let (mut pages, mut moves) = (Vec::new(), Vec::new());
        let mut rng = Rng::new(3);
        for i in 0..logical as usize + n {
            let lpa = if i < logical as usize {
                i as u32
            } else if rng.below(4) > 0 {
                rng.below(logical / 4) as u32
            } else {
                rng.below(logical) as u32
            };
            if l2p[lpa as usize] != NONE {
                flash.invalidate(l2p[lpa as usize]).unwrap();
            }
            let ppn = alloc.host_page_for(lpa, &mut flash).unwrap();
            flash
                .program(ppn, Oob { lpa, seq: i as u64 }, &[], Cause::Host)
                .unwrap();
            l2p[lpa as usize] = ppn;
            pages.push(ppn);
            for m in alloc.take_moves() {
                assert_eq!(l2p[m.key as usize], m.from);
                l2p[m.key as usize] = m.to;
                moves.push(m);
            }
        }
        for (lpa, &ppn) in l2p.iter().enumerate() {
            assert_eq!(flash.oob(ppn).lpa, lpa as u32);
            assert!(flash.is_valid(ppn));
        }
        (pages, moves, flash)
    }

    #[test]
    fn the_pages_of_two_streams_never_share_a_line() {
        let (cfg, layout) = device();
        // A stream per line's worth of logical pages (LearnedFTL's groups).
        let line = layout.units * layout.pages_per_block;
        let key = move |lpa: u32| 1 + lpa / line;
        let streams = 1 + layout.logical_pages.div_ceil(line as u64) as u32;
        for host in [false, true] {
            let mut alloc = PageAllocator::new(&cfg.scheme_context(), &layout, false);
            alloc.set_sorted_relocation(true);
            alloc.set_relocation_streams(streams, host, key);
            let (_, moves, flash) = overwrite(&mut alloc, 20_000);
            assert!(!moves.is_empty(), "GC never ran");
            // With host writes keyed too, a stream's lines take overwrites and become victims
            // (GC alone opens lines only while every unit has free blocks to spare).
            let (collections, blocks) = alloc.group_collections();
            assert!(
                !host || collections > 0 && blocks > collections,
                "no group collected"
            );
            let r = alloc.relocation.as_ref().unwrap();
            let mut lines = 0;
            for block in 0..layout.total_blocks {
                let stream = r.stream_of[block as usize];
                if stream != 0 {
                    lines += 1;
                    for ppn in flash.valid_pages(block) {
                        assert_eq!(key(flash.oob(ppn).lpa), stream, "block {block}");
                    }
                }
            }
            assert!(!host || lines > 0, "no line open");
        }
    }

    #[test]
    fn stream_zero_relocates_as_without_streams() {
        let (cfg, layout) = device();
        for sorted in [false, true] {
            let mut plain = PageAllocator::new(&cfg.scheme_context(), &layout, false);
            plain.set_sorted_relocation(sorted);
            let mut streams = PageAllocator::new(&cfg.scheme_context(), &layout, false);
            streams.set_sorted_relocation(sorted);
            streams.set_relocation_streams(2, true, |_| 0);
            let (p1, m1, _) = overwrite(&mut plain, 5_000);
            let (p2, m2, _) = overwrite(&mut streams, 5_000);
            assert!(!m1.is_empty());
            assert_eq!(p1, p2);
            assert_eq!(m1, m2);
        }
    }
}
