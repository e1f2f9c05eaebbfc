//! The NAND model: the state of every physical page and block, the OOB contents, the rules
//! real NAND enforces, the operation counters by cause, and the timing of each operation.
//!
//! An FTL touches flash only through [`Flash`]: `read`, `program` (with OOB bytes), `erase`,
//! each tagged with a [`Cause`]. Programming a page twice without an erase, out of order in
//! a block (when the program order is sequential), or with more OOB bytes than the page has,
//! is a [`NandError`]. So is reading an erased page or erasing a block that still holds valid
//! pages (which would lose data).
//!
//! Per page the model stores the OOB header (logical page address and 64-bit write sequence
//! number, 12 bytes) and one valid bit (plus one programmed bit when any program order is
//! allowed); a scheme may ask for a fixed number of extra OOB bytes per page at
//! construction. The write sequence number stands in for the page's data: verification
//! compares it with the shadow copy, so a read is correct only if the FTL found the page
//! that really holds the data. The device's OOB budget counts the header as
//! [`OOB_HEADER_BYTES`] (8) bytes, as a controller would store it (a 4-byte logical page and
//! a 4-byte sequence number): the simulator's wider sequence number is the data's identity,
//! not device OOB.

use crate::device::breakdown::{Part, Parts};
use crate::device::geometry::{Layout, ProgramOrder, OOB_HEADER_BYTES};
use crate::device::media::{MediaState, MediaStats};
use crate::device::timing::{Place, SchedulerStats, Span, Timeline};
use crate::device::DeviceConfig;
use crate::divide::DivideBy;
pub use crate::error::NandError;
use crate::error::{Error, Result};
use serde::Serialize;
use std::any::Any;

pub type Ppn = u32;
/// An unmapped entry / a page holding no logical page.
pub const NONE: u32 = u32::MAX;

/// What one page of a read served, for a [`PageSink`]: nothing (unmapped: zeros), the copy
/// of host write `seq` in the write buffer, or flash page `ppn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServedPage {
    Unmapped,
    Buffer(u64),
    Flash(Ppn),
}

/// Where a block device front keeps the data: told of every program, copy and erase the
/// flash model carries out (so the bytes follow the scheme's physical placement) and of
/// what each page read served, at the moment it is served. The simulator holds no data;
/// a sink that fails records its error and the front reports it after the request.
pub trait PageSink: Send {
    /// Page `ppn` was programmed with `oob` (host data: the bytes the front staged for
    /// `oob.seq`; a page holding no logical page: [`Flash::page_content`], if set).
    fn program(&mut self, ppn: Ppn, oob: Oob, content: Option<&[u8]>);
    /// Valid page `src` was copied to `dst` (garbage collection, merges).
    fn copy(&mut self, src: Ppn, dst: Ppn, oob: Oob);
    /// Block `block` was erased.
    fn erase(&mut self, block: u32);
    /// Page `lpa` of a host read (`host_read`) or of the read-modify-write of a partial
    /// page write served `from`.
    fn served(&mut self, lpa: u32, from: ServedPage, host_read: bool);
    /// For the front to reach its concrete sink.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// Declares the causes once: the [`Cause`] enum (its discriminant is the index into the
/// counters), [`CAUSES`], [`CAUSE_COUNT`] and each cause's name, group and description.
macro_rules! causes {
    ($($variant:ident = $name:literal, $group:literal, $description:literal;)+) => {
        /// Why a flash operation was issued. The report counts operations by cause, in
        /// the order of [`CAUSES`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Cause {
            $(
                #[doc = $description]
                $variant,
            )+
        }

        /// Number of causes: the length of the per-cause counters.
        pub const CAUSE_COUNT: usize = [$($name),+].len();

        /// Every cause, in report order (`CAUSES[c as usize] == c`).
        pub const CAUSES: [Cause; CAUSE_COUNT] = [$(Cause::$variant),+];

        impl Cause {
            /// The cause's name in reports (`flash.reads.NAME`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Cause::$variant => $name,)+
                }
            }

            /// The family the cause belongs to: `host`, `gc`, `translation`,
            /// `misprediction`, `merge`, `fold`, `fault` or `wear` (summaries add up a family, e.g. merge
            /// reads).
            pub const fn group(self) -> &'static str {
                match self {
                    $(Cause::$variant => $group,)+
                }
            }

            /// What operations of this cause are, in a few words.
            pub const fn description(self) -> &'static str {
                match self {
                    $(Cause::$variant => $description,)+
                }
            }
        }
    };
}

// The flash operation causes, in report order. New causes go at the end, so that existing
// reports keep their order and plots their colours.
causes! {
    Host = "host", "host", "serving a host read or write";
    Gc = "gc", "gc", "relocating valid pages and erasing blocks in garbage collection";
    Translation = "translation", "translation", "reading or writing mapping (translation) pages";
    Misprediction = "misprediction", "misprediction",
        "extra reads after a wrong prediction of a page's location (learned and hashed maps)";
    MergeSwitch = "merge_switch", "merge",
        "switch merge of a log-block FTL: a log block written in order becomes the data block";
    MergePartial = "merge_partial", "merge",
        "partial merge of a log-block FTL: the rest of a data block copied into its log block";
    MergeFull = "merge_full", "merge",
        "full merge of a log-block FTL: the valid pages of a data block and its log blocks copied to a new block";
    HostCleaning = "host_cleaning", "host",
        "host writes and reads of a log-structured file system's cleaning (segment cleaning)";
    FsMetadata = "fs_metadata", "host", "host writes and reads of file-system metadata";
    Fold = "fold", "fold", "folding the pseudo-SLC cache: its valid pages copied into TLC blocks, its blocks erased";
    Retire = "retire", "fault",
        "retiring a grown bad block: the failed program, and the block's valid pages copied elsewhere";
    WearLevel = "wear_level", "wear",
        "static wear levelling: the valid pages of the least-worn block holding data copied elsewhere, the block erased";
    Refresh = "refresh", "wear",
        "refreshing data older than media.refresh_after_ns: its block's valid pages copied elsewhere, the block erased";
}

impl Cause {
    /// The cause named `name`, if any.
    pub fn from_name(name: &str) -> Option<Cause> {
        CAUSES.into_iter().find(|c| c.name() == name)
    }
}

/// The OOB header of a programmed page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Oob {
    /// Logical page the data belongs to ([`NONE`] for pages that hold no logical page).
    pub lpa: u32,
    /// Host write sequence number of the data (its identity, for verification; 64 bits,
    /// so it never wraps). Pages holding no logical page may use it as a key: a
    /// translation page carries its page number ([`Oob::translation`]).
    pub seq: u64,
}

impl Oob {
    /// The OOB header of an erased page.
    pub const ERASED: Oob = Oob { lpa: NONE, seq: 0 };

    /// The OOB header of a filler page programmed at recovery to close a partly written
    /// block (no logical page, no translation page).
    pub const FILLER: Oob = Oob {
        lpa: NONE,
        seq: u64::MAX,
    };

    /// The OOB header of translation page `k` (the page-table store of the demand-cached
    /// schemes): no logical page, and the translation page number in the sequence field.
    #[inline]
    pub const fn translation(k: u32) -> Oob {
        Oob {
            lpa: NONE,
            seq: k as u64,
        }
    }

    /// The translation page number of a header written by [`Oob::translation`].
    #[inline]
    pub fn translation_page(self) -> u32 {
        debug_assert!(self.lpa == NONE && self.seq <= u32::MAX as u64, "{self:?}");
        self.seq as u32
    }
}

/// The OOB headers of every page. A header is kept as 8 bytes, the logical page
/// complemented and the low half of the sequence number, so that an erased page
/// ([`Oob::ERASED`]) is all zero bits: a fresh device's array is zeroed memory, which the
/// operating system maps lazily (pages never programmed cost no resident memory). The high
/// halves, zero until a run passes 2^32 writes (or a filler page is programmed), get an
/// array of their own only then: a third less memory touched on every program.
struct OobStore {
    low: Vec<[u32; 2]>,
    /// Empty while every header's high half is zero; then one per page.
    high: Vec<u32>,
}

impl OobStore {
    fn new(pages: usize) -> Self {
        OobStore {
            low: vec![[0; 2]; pages],
            high: Vec::new(),
        }
    }

    #[inline]
    fn get(&self, ppn: usize) -> Oob {
        let [lpa, low] = self.low[ppn];
        let high = self.high.get(ppn).copied().unwrap_or(0);
        Oob {
            lpa: !lpa,
            seq: low as u64 | (high as u64) << 32,
        }
    }

    #[inline]
    fn set(&mut self, ppn: usize, oob: Oob) {
        self.low[ppn] = [!oob.lpa, oob.seq as u32];
        let high = (oob.seq >> 32) as u32;
        if high != 0 || !self.high.is_empty() {
            self.set_high(ppn, high);
        }
    }

    #[cold]
    fn set_high(&mut self, ppn: usize, high: u32) {
        if self.high.is_empty() {
            self.high = vec![0; self.low.len()];
        }
        self.high[ppn] = high;
    }

    #[inline]
    fn copy(&mut self, src: usize, dst: usize) {
        self.low[dst] = self.low[src];
        if !self.high.is_empty() {
            self.high[dst] = self.high[src];
        }
    }

    /// Pages `first..end` erased.
    fn erase(&mut self, first: usize, end: usize) {
        self.low[first..end].fill([0; 2]);
        if !self.high.is_empty() {
            self.high[first..end].fill(0);
        }
    }
}

/// How far a page of [`Flash::move_pages`] got before an error: not read, read, or copied
/// (its invalidation failed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MoveStage {
    None,
    Read,
    Copied,
}

/// Flash operation counters, indexed by [`Cause`] (`stats.reads[cause as usize]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlashStats {
    pub reads: [u64; CAUSE_COUNT],
    pub programs: [u64; CAUSE_COUNT],
    pub erases: [u64; CAUSE_COUNT],
    /// Victim blocks reclaimed by garbage collection.
    pub gc_invocations: u64,
    /// Valid pages relocated by garbage collection.
    pub gc_pages_moved: u64,
    /// Host-group programs (host, cleaning, metadata) into SLC-mode blocks: the writes the
    /// pseudo-SLC cache absorbed.
    pub slc_host_programs: u64,
    /// SLC blocks folded, and the valid pages their folding copied into native blocks.
    pub slc_folds: u64,
    pub slc_pages_folded: u64,
    /// Page programs and block erases that failed (`[faults]`): each retired its block.
    pub program_failures: u64,
    pub erase_failures: u64,
    /// Blocks static wear levelling emptied and erased (`media.wear_leveling = "static"`).
    pub wear_level_blocks: u64,
    /// Blocks refreshed (`media.refresh_after_ns`): their data re-written, the block erased.
    pub refresh_blocks: u64,
    /// Read retries and uncorrectable reads (`[media]`).
    pub media: MediaStats,
}

impl FlashStats {
    pub fn total_programs(&self) -> u64 {
        self.programs.iter().sum()
    }

    /// Blocks reclaimed so far by garbage collection and by folding the SLC cache.
    pub fn reclaims(&self) -> u64 {
        self.gc_invocations + self.slc_folds
    }
}

/// The simulated flash array.
pub struct Flash {
    layout: Layout,
    /// log2(pages per block) when it is a power of two: divisions become shifts.
    block_shift: Option<u32>,
    /// Per parallel unit, where its operations take place (offset 0): looked up for every
    /// timed operation instead of three divisions.
    unit_places: Vec<Place>,
    /// `block / blocks_per_unit` by a multiplication ([`DivideBy`]).
    unit_of_block: DivideBy,
    order: ProgramOrder,
    /// OOB headers, interleaved so that a read touches one cache line.
    oob: OobStore,
    valid: Vec<u64>,
    /// Programmed bits, kept unless the order is sequential (then a page is programmed iff
    /// it lies below the write pointer).
    programmed: Vec<u64>,
    extra_width: usize,
    extra: Vec<u8>,
    /// Next page to program (sequential order), one past the highest programmed page
    /// (ascending order) or pages programmed (any order).
    write_ptr: Vec<u32>,
    valid_count: Vec<u32>,
    /// Pages each block holds in its current mode: `pages_per_block`, or fewer in SLC
    /// mode ([`Flash::set_slc`]).
    capacity: Vec<u32>,
    /// Retired blocks (bad from the factory, or grown bad: [`Flash::retire`]), a bit each;
    /// their capacity is 0, so that a program is refused at no cost to the common path.
    retired: Vec<u64>,
    retired_count: u32,
    /// Pages of a block in SLC mode.
    slc_pages: u32,
    erase_count: Vec<u32>,
    /// Logical time of the last program or invalidation in the block (for cost-benefit).
    modified_at: Vec<u64>,
    /// Logical time of the last program in the block: a full block's is when it filled
    /// (FIFO victim selection).
    programmed_at: Vec<u64>,
    timeline: Option<Timeline>,
    cursor: u64,
    request_done: u64,
    /// The current request's time so far (`request_done` less its start), by part
    /// ([`crate::device::breakdown`]).
    parts: Parts,
    /// While a write-back buffer flushes: host programs do not hold the request, their
    /// transfer times are recorded in `host_transfers` instead, with what held them.
    flushing: bool,
    host_transfers: Vec<(u64, Part)>,
    /// While set, operations occupy their die and channel but the request does not wait
    /// for them (work a controller does in the background).
    background: bool,
    /// While background work fills an idle gap: the arrival of the next request, the
    /// instant up to which [`Flash::background_busy`] looks (0: the cursor).
    idle_until: u64,
    /// The cause under which operations issued with [`Cause::Host`] are counted.
    host_cause: Cause,
    /// The host stack's current request is its background work ([`Flash::set_host_background`]).
    host_background: bool,
    /// Times the timing model was stopped or restarted ([`Flash::background_epoch`]).
    timing_restarts: u64,
    /// Logical time: host pages written so far. Used for block ages, so that mapping-only
    /// and timed runs take the same decisions.
    pub clock: u64,
    pub stats: FlashStats,
    /// The page store of a block device front, told of every program, copy and erase.
    sink: Option<Box<dyn PageSink>>,
    /// The page read last (the simulator finds from it the page a read served).
    last_read: Ppn,
    /// The bytes of the next page programmed without a logical page (a translation page's
    /// entries), kept only while a sink is attached.
    content: Vec<u8>,
    has_content: bool,
    /// The vector command in progress, if any ([`Flash::begin_command`]).
    command: Option<Command>,
    /// Bit errors and read retry (`[media]` on), else None: no cost to a read.
    media: Option<Box<MediaState>>,
    /// Per-sector identities of the pages programmed with them ([`Flash::program_sectors`]:
    /// a sector-packing scheme's packed and gathered pages), by physical page: the spare
    /// area of each 512 B sector. Empty for every other scheme.
    sector_tags: std::collections::HashMap<Ppn, Box<[SectorTag]>>,
}

/// The identity a 512 B sector's spare area holds: the logical page and the sector of it
/// whose data the sector holds, and the host write sequence number of that data
/// ([`SectorTag::EMPTY`]: a padding sector holding nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectorTag {
    pub lpa: u32,
    pub sector: u32,
    pub seq: u64,
}

impl SectorTag {
    /// A sector holding no data (padding of a page programmed before it was full).
    pub const EMPTY: SectorTag = SectorTag {
        lpa: NONE,
        sector: NONE,
        seq: 0,
    };
}

/// A vector command in progress ([`Flash::begin_command`]): when its first read and its
/// first program ended, which its later pages share.
#[derive(Clone, Copy, Debug, Default)]
struct Command {
    read: Option<u64>,
    program: Option<Span>,
}

#[inline]
fn bit(bits: &[u64], i: u32) -> bool {
    bits[(i >> 6) as usize] >> (i & 63) & 1 != 0
}

#[inline]
fn set_bit(bits: &mut [u64], i: u32, on: bool) {
    let w = &mut bits[(i >> 6) as usize];
    let m = 1u64 << (i & 63);
    if on {
        *w |= m
    } else {
        *w &= !m
    }
}

/// The indices of the set bits of `bits` in `from..to`, in order, a word at a time.
#[inline]
fn ones(bits: &[u64], from: u32, to: u32) -> impl Iterator<Item = u32> + '_ {
    let mut word = from >> 6;
    let mut w = if from < to {
        bits[word as usize] & (!0u64 << (from & 63))
    } else {
        0
    };
    let last_word = to.saturating_sub(1) >> 6;
    std::iter::from_fn(move || loop {
        if w != 0 {
            let i = (word << 6) + w.trailing_zeros();
            if i >= to {
                return None;
            }
            w &= w - 1;
            return Some(i);
        }
        if word >= last_word {
            return None;
        }
        word += 1;
        w = bits[word as usize];
    })
}

/// `len` (1 to 64) bits of `bits` from bit `at`, as the low bits of a word.
#[inline]
fn get_bits(bits: &[u64], at: u32, len: u32) -> u64 {
    let (w, shift) = ((at >> 6) as usize, at & 63);
    let mut v = bits[w] >> shift;
    if shift + len > 64 {
        v |= bits[w + 1] << (64 - shift);
    }
    if len < 64 {
        v & ((1 << len) - 1)
    } else {
        v
    }
}

/// Sets (or clears) the bits of `bits` that `mask` gives (its bit `i` for bit `at + i`).
#[inline]
fn put_bits(bits: &mut [u64], at: u32, mask: u64, on: bool) {
    let (w, shift) = ((at >> 6) as usize, at & 63);
    let parts = [
        (w, mask << shift),
        (w + 1, if shift > 0 { mask >> (64 - shift) } else { 0 }),
    ];
    for (i, m) in parts {
        if m != 0 {
            if on {
                bits[i] |= m;
            } else {
                bits[i] &= !m;
            }
        }
    }
}

/// Clears the bits of `bits` in `from..to`, a word at a time.
fn clear_bits(bits: &mut [u64], from: u32, to: u32) {
    let mut i = from;
    while i < to {
        let shift = i & 63;
        let n = (64 - shift).min(to - i);
        let mask = if n == 64 {
            !0
        } else {
            ((1u64 << n) - 1) << shift
        };
        bits[(i >> 6) as usize] &= !mask;
        i += n;
    }
}

impl Flash {
    /// A fresh, fully erased device. `extra_oob_bytes` is the per-page OOB space a scheme
    /// stores beyond the 8-byte header; `timed` enables the timing model.
    pub fn new(
        cfg: &DeviceConfig,
        layout: &Layout,
        extra_oob_bytes: usize,
        timed: bool,
    ) -> Result<Flash> {
        let limit = (layout.oob_size as u64 - OOB_HEADER_BYTES) as usize;
        if extra_oob_bytes > limit {
            return Err(Error::config(
                "geometry.oob_size",
                format!(
                    "the scheme stores {extra_oob_bytes} OOB bytes per page beyond the {OOB_HEADER_BYTES}-byte header, \
                     but only {limit} are available"
                ),
            ));
        }
        let pages = layout.physical_pages as usize;
        let blocks = layout.total_blocks as usize;
        let words = pages.div_ceil(64);
        let ppb = layout.pages_per_block;
        let mut flash = Flash {
            layout: *layout,
            block_shift: ppb.is_power_of_two().then(|| ppb.trailing_zeros()),
            unit_of_block: DivideBy::new(layout.blocks_per_unit),
            unit_places: (0..layout.units)
                .map(|unit| Place {
                    die: layout.die_of_unit(unit),
                    channel: layout.channel_of_unit(unit),
                    plane: layout.plane_of_unit(unit),
                    offset: 0,
                    slc: false,
                })
                .collect(),
            order: cfg.nand.program_order,
            oob: OobStore::new(pages),
            valid: vec![0; words],
            programmed: if cfg.nand.program_order != ProgramOrder::Sequential {
                vec![0; words]
            } else {
                Vec::new()
            },
            extra_width: extra_oob_bytes,
            extra: vec![0; pages * extra_oob_bytes],
            write_ptr: vec![0; blocks],
            valid_count: vec![0; blocks],
            capacity: vec![ppb; blocks],
            retired: vec![0; blocks.div_ceil(64)],
            retired_count: 0,
            slc_pages: cfg.slc.pages(ppb),
            erase_count: vec![0; blocks],
            modified_at: vec![0; blocks],
            programmed_at: vec![0; blocks],
            timeline: timed.then(|| Timeline::new(cfg, layout)),
            cursor: 0,
            idle_until: 0,
            request_done: 0,
            parts: Parts::default(),
            flushing: false,
            host_transfers: Vec::new(),
            background: false,
            host_cause: Cause::Host,
            host_background: false,
            timing_restarts: 0,
            clock: 0,
            stats: FlashStats::default(),
            sink: None,
            last_read: NONE,
            content: Vec::new(),
            has_content: false,
            command: None,
            sector_tags: std::collections::HashMap::new(),
            media: cfg
                .media
                .enabled()
                .then(|| Box::new(MediaState::new(&cfg.media, blocks))),
        };
        if cfg.media.initial_pe_cycles > 0 {
            flash.erase_count.fill(cfg.media.initial_pe_cycles);
        }
        for block in cfg.faults.factory_bad_blocks(layout) {
            flash.retire(block)?;
        }
        Ok(flash)
    }

    /// Attaches the page store of a block device front ([`PageSink`]).
    pub fn attach_sink(&mut self, sink: Box<dyn PageSink>) {
        self.sink = Some(sink);
    }

    /// The attached page store, if any.
    pub fn sink_mut(&mut self) -> Option<&mut (dyn PageSink + 'static)> {
        self.sink.as_deref_mut()
    }

    /// Whether a page store is attached (schemes then give their translation pages'
    /// bytes with [`Flash::page_content`]).
    #[inline]
    pub fn has_sink(&self) -> bool {
        self.sink.is_some()
    }

    /// With a sink attached: a buffer for the bytes of the next page programmed without a
    /// logical page (cleared; the next such program hands it to the sink). `None` without
    /// a sink, so that simulations encode nothing.
    #[inline]
    pub fn page_content(&mut self) -> Option<&mut Vec<u8>> {
        self.sink.as_ref()?;
        self.content.clear();
        self.has_content = true;
        Some(&mut self.content)
    }

    /// The page read last (with the OOB it returned, the simulator checks that it is the
    /// page a scheme served).
    #[inline]
    pub fn last_read(&self) -> Ppn {
        self.last_read
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn program_order(&self) -> ProgramOrder {
        self.order
    }

    #[inline]
    pub fn block_of(&self, ppn: Ppn) -> u32 {
        match self.block_shift {
            Some(shift) => ppn >> shift,
            None => ppn / self.layout.pages_per_block,
        }
    }

    /// Offset of the page within its block.
    #[inline]
    pub fn page_offset(&self, ppn: Ppn) -> u32 {
        match self.block_shift {
            Some(shift) => ppn & ((1 << shift) - 1),
            None => ppn % self.layout.pages_per_block,
        }
    }

    #[inline]
    pub fn first_page(&self, block: u32) -> Ppn {
        block * self.layout.pages_per_block
    }

    #[inline]
    fn check_ppn(&self, ppn: Ppn) -> std::result::Result<(), NandError> {
        if (ppn as u64) < self.layout.physical_pages {
            Ok(())
        } else {
            Err(NandError::AddressOutOfRange { ppn: ppn as u64 })
        }
    }

    #[inline]
    fn check_block(&self, block: u32) -> std::result::Result<(), NandError> {
        if block < self.layout.total_blocks {
            Ok(())
        } else {
            Err(NandError::BlockOutOfRange {
                block: block as u64,
            })
        }
    }

    /// Whether the page has been programmed since its block was last erased.
    #[inline]
    pub fn is_programmed(&self, ppn: Ppn) -> bool {
        match self.order {
            ProgramOrder::Sequential => {
                self.page_offset(ppn) < self.write_ptr[self.block_of(ppn) as usize]
            }
            ProgramOrder::Ascending | ProgramOrder::Any => bit(&self.programmed, ppn),
        }
    }

    #[inline]
    pub fn is_valid(&self, ppn: Ppn) -> bool {
        bit(&self.valid, ppn)
    }

    /// Sequential and ascending order: the lowest page offset that may be programmed next
    /// (one past the highest programmed page). Any order: pages programmed.
    #[inline]
    pub fn write_pointer(&self, block: u32) -> u32 {
        self.write_ptr[block as usize]
    }

    /// The block has no programmed page.
    #[inline]
    pub fn is_erased(&self, block: u32) -> bool {
        self.write_ptr[block as usize] == 0
    }

    /// No page of the block can be programmed any more (every page programmed, or, in
    /// ascending order, the last page programmed; in SLC mode, of the pages it holds).
    #[inline]
    pub fn is_full(&self, block: u32) -> bool {
        self.write_ptr[block as usize] == self.capacity[block as usize]
    }

    /// Pages the block holds in its current mode.
    #[inline]
    pub fn capacity(&self, block: u32) -> u32 {
        self.capacity[block as usize]
    }

    /// Whether the block is in SLC mode.
    #[inline]
    pub fn is_slc(&self, block: u32) -> bool {
        self.capacity[block as usize] == self.slc_pages
    }

    /// Whether the block is in native mode and not retired: the fast copy paths take it.
    #[inline]
    fn is_native(&self, block: u32) -> bool {
        self.capacity[block as usize] == self.layout.pages_per_block
    }

    /// Whether the block is retired ([`Flash::retire`]): bad from the factory or grown bad.
    #[inline]
    pub fn is_retired(&self, block: u32) -> bool {
        bit(&self.retired, block)
    }

    /// Blocks retired so far, factory bad blocks included.
    pub fn retired_blocks(&self) -> u32 {
        self.retired_count
    }

    /// Retires a block that holds no valid page (a bad block: from the factory, or after a
    /// failed program or erase): it is never programmed or erased again (either is a NAND
    /// rule violation); the pages it holds stay readable.
    pub fn retire(&mut self, block: u32) -> std::result::Result<(), NandError> {
        self.check_block(block)?;
        let valid = self.valid_count[block as usize];
        if valid != 0 {
            return Err(NandError::RetireWithValidPages { block, valid });
        }
        if !self.is_retired(block) {
            set_bit(&mut self.retired, block, true);
            self.retired_count += 1;
        }
        self.capacity[block as usize] = 0;
        Ok(())
    }

    /// A program of page `ppn` that fails: it takes its time and counts as a program of
    /// `cause`, but the page holds nothing (a filler, invalid at once). The caller retires
    /// the block once its valid pages are safe elsewhere.
    pub fn fail_program(&mut self, ppn: Ppn, cause: Cause) -> std::result::Result<(), NandError> {
        self.program_at(ppn, Oob::FILLER, &[], cause, self.cursor, false)?;
        self.invalidate(ppn)?;
        self.stats.program_failures += 1;
        Ok(())
    }

    /// Puts an erased block in SLC mode (one bit per cell: `[slc]`'s share of the pages,
    /// timed with its tR, tPROG and tBERS) or back in native mode. The mode lasts until the
    /// next call: an erase keeps it. Changing the mode of a block that holds data is a NAND
    /// rule violation.
    pub fn set_slc(&mut self, block: u32, on: bool) -> std::result::Result<(), NandError> {
        self.check_block(block)?;
        if !self.is_erased(block) {
            return Err(NandError::ModeNotErased { block });
        }
        if self.is_retired(block) {
            return Err(NandError::RetiredBlock { block });
        }
        self.capacity[block as usize] = if on {
            self.slc_pages
        } else {
            self.layout.pages_per_block
        };
        Ok(())
    }

    #[inline]
    pub fn valid_count(&self, block: u32) -> u32 {
        self.valid_count[block as usize]
    }

    pub fn erase_count(&self, block: u32) -> u32 {
        self.erase_count[block as usize]
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    /// Logical time of the block's last program or invalidation.
    #[inline]
    pub fn modified_at(&self, block: u32) -> u64 {
        self.modified_at[block as usize]
    }

    /// Logical time of the last program in `block` (for a full block, when it filled).
    pub fn programmed_at(&self, block: u32) -> u64 {
        self.programmed_at[block as usize]
    }

    /// The OOB header as it is on flash, without a read being counted: for schemes that
    /// already paid the read (the OOB arrives with the page) and for tests.
    #[inline]
    pub fn oob(&self, ppn: Ppn) -> Oob {
        self.oob.get(ppn as usize)
    }

    /// The identity of sector `slot` of programmed page `ppn` as its spare area holds it
    /// (no read counted: the read of the page brings it): a page programmed with sector
    /// identities ([`Flash::program_sectors`]) gives its own; any other page holds one
    /// logical page whole, and its sector `slot` is that page's sector `slot`, of the
    /// page's write. `None` for an erased page.
    pub fn sector_tag(&self, ppn: Ppn, slot: u32) -> Option<SectorTag> {
        if !self.is_programmed(ppn) {
            return None;
        }
        if let Some(tags) = self.sector_tags.get(&ppn) {
            return Some(tags.get(slot as usize).copied().unwrap_or(SectorTag::EMPTY));
        }
        let oob = self.oob(ppn);
        Some(SectorTag {
            lpa: oob.lpa,
            sector: slot,
            seq: oob.seq,
        })
    }

    /// The scheme's extra OOB bytes of a page (see [`Flash::oob`]).
    pub fn oob_extra(&self, ppn: Ppn) -> &[u8] {
        let start = ppn as usize * self.extra_width;
        &self.extra[start..start + self.extra_width]
    }

    // ----- request timing -----

    /// Starts timing a host request that may begin at `time_ns`.
    #[inline]
    pub fn begin_request(&mut self, time_ns: u64) {
        self.cursor = time_ns;
        self.request_done = time_ns;
        self.parts.clear();
        self.flushing = false;
    }

    /// The current request's time from its start to [`Flash::request_done`], by part: the
    /// parts add up to it exactly.
    #[inline]
    pub fn request_parts(&self) -> &Parts {
        &self.parts
    }

    /// The current request's parts, for the simulator to add the host interface's and the
    /// DRAM's time once the flash's is done.
    #[inline]
    pub fn request_parts_mut(&mut self) -> &mut Parts {
        &mut self.parts
    }

    /// When the current request is complete: its reads done, its foreground GC done, and
    /// its writes acknowledged.
    #[inline]
    pub fn request_done(&self) -> u64 {
        self.request_done
    }

    /// The earliest time the next operation of the current request may start (its arrival,
    /// or the completion of what it waited for with [`Flash::chain`]).
    #[inline]
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// Makes later operations of this request wait for everything issued so far (a data
    /// read after the translation read that located it; a write after the GC it waited for).
    #[inline]
    pub fn chain(&mut self) {
        self.cursor = self.cursor.max(self.request_done);
    }

    /// While set (a write-back buffer's flush), host programs do not hold the current
    /// request: the time each one's data has crossed the channel, when its buffer slot is
    /// free again, is recorded in [`Flash::host_transfers`] (cleared when set). Other
    /// operations, the foreground GC the flush needs among them, hold it as usual.
    #[inline]
    pub fn set_flushing(&mut self, on: bool) {
        self.flushing = on;
        if on {
            self.host_transfers.clear();
        }
    }

    /// The transfer times of the host programs of the last flush ([`Flash::set_flushing`]),
    /// each with what held the program longest before it ran ([`Phases::holder`]:
    /// `buffer_wait` when the flush only waited for the buffer's own data).
    pub fn host_transfers(&mut self) -> &mut [(u64, Part)] {
        &mut self.host_transfers
    }

    /// The current request is not complete before `t` (a buffered write waiting for its
    /// buffer slot to be free), the wait charged to `held_by`, what held the flush that
    /// frees the slot ([`Flash::host_transfers`]).
    #[inline]
    pub fn wait_until(&mut self, t: u64, held_by: Part) {
        if !self.background && t > self.request_done {
            self.parts.add(held_by, t - self.request_done);
            self.request_done = t;
        }
    }

    /// While set, operations are issued in the background: they take their die and channel
    /// time (later operations queue behind them) but the current request does not wait for
    /// them to complete.
    #[inline]
    pub fn set_background(&mut self, on: bool) {
        self.background = on;
    }

    /// Starts a vector command (one command carrying several pages, as an open-channel
    /// SSD's vector read or write): until [`Flash::end_command`], the reads and the
    /// programs of [`Cause::Translation`] are the pages of one command, whose time is its
    /// first read's and its first program's. The later pages are read or programmed as
    /// usual (the NAND rules, the page state and the counters are unchanged) but take no
    /// die or channel time of their own: they end when the first did. This models a device
    /// whose cost is per command (an emulator bound by the host's work per command), not
    /// one whose dies do the work of every page. Operations of other causes (GC that a
    /// program triggers) are timed as usual. Without the timing model it changes nothing.
    #[inline]
    pub fn begin_command(&mut self) {
        self.command = Some(Command::default());
    }

    /// Ends the vector command started by [`Flash::begin_command`].
    #[inline]
    pub fn end_command(&mut self) {
        self.command = None;
    }

    /// Background work issued from now on may fill the dies' idle time up to `t`, the next
    /// request's arrival (0: only up to the cursor, as after a request).
    #[inline]
    pub fn set_idle_until(&mut self, t: u64) {
        self.idle_until = t;
    }

    /// Counts the operations a scheme issues with [`Cause::Host`] under `cause` from now on
    /// ([`Cause::Host`] again by default): the simulator sets [`Cause::HostCleaning`] or
    /// [`Cause::FsMetadata`] while it serves requests that a host stack originates (a log-
    /// structured file system's cleaning, file-system metadata), so that schemes need not
    /// know. Only the counting changes: such operations are host operations in every other
    /// respect (a buffered host write is acknowledged on transfer whatever its cause).
    #[inline]
    pub fn set_host_cause(&mut self, cause: Cause) {
        self.host_cause = cause;
    }

    /// While set, the requests served are a host stack's background work (a file system's
    /// idle-time cleaning, F2FS's background GC): they are timed as requests, but whoever
    /// queues behind their operations waits behind background work (`bg_host_cleaning`,
    /// not `fg_host_cleaning`).
    #[inline]
    pub fn set_host_background(&mut self, on: bool) {
        self.host_background = on;
    }

    /// The cause host operations are currently counted under.
    #[inline]
    pub fn host_cause(&self) -> Cause {
        self.host_cause
    }

    /// The counter an operation of `cause` goes to.
    #[inline(always)]
    fn counter(&self, cause: Cause) -> usize {
        if cause == Cause::Host {
            self.host_cause as usize
        } else {
            cause as usize
        }
    }

    /// The current request waits for an operation of `cause` that ends at `done`: what it
    /// adds to the request's time is charged to the phases the timing model gave the
    /// operation (`phased`), the rest (all of it for a run of operations) to `rest`, as
    /// the operation's cause counts it ([`Part::service_of`]; `rest` is
    /// [`Part::Program`] or [`Part::Erase`] for a program or an erase).
    #[inline(always)]
    fn waits_for(&mut self, done: u64, cause: Cause, rest: Part, phased: bool) {
        if !self.background && done > self.request_done {
            self.charge(done, cause, rest, phased);
        }
    }

    /// [`Flash::waits_for`] when the request's end moves.
    #[inline(never)]
    fn charge(&mut self, done: u64, cause: Cause, rest: Part, phased: bool) {
        let from = self.request_done;
        let program = matches!(rest, Part::Program | Part::Erase);
        let service = match Part::service_of(CAUSES[self.counter(cause)], program) {
            // A host stack's background cleaning doing its own work.
            Some(Part::FgHostCleaning) if self.host_background => Some(Part::BgHostCleaning),
            service => service,
        };
        match (phased, self.timeline.as_ref()) {
            (true, Some(t)) => t
                .phases()
                .charge(from, done, service, rest, &mut self.parts),
            _ => self.parts.add(rest.own(service), done - from),
        }
        self.request_done = done;
    }

    /// Tells the timing model what the operations of `cause` issued next are, for those
    /// who wait behind them.
    #[inline(always)]
    fn classify(&mut self, cause: Cause, program: bool) {
        let background = self.background | self.host_background;
        let class = Part::behind(CAUSES[self.counter(cause)], background, program);
        if let Some(t) = self.timeline.as_mut() {
            t.set_class(class);
        }
    }

    pub fn is_timed(&self) -> bool {
        self.timeline.is_some()
    }

    /// The timing model's state (None in mapping-only mode): for tests that compare two
    /// ways of issuing the same operations.
    pub fn timeline(&self) -> Option<&Timeline> {
        self.timeline.as_ref()
    }

    #[inline]
    fn place(&self, ppn: Ppn) -> Place {
        let block = self.block_of(ppn);
        let unit = self.unit_of_block.divide(block);
        Place {
            offset: self.page_offset(ppn),
            slc: self.is_slc(block),
            ..self.unit_places[unit as usize]
        }
    }

    /// Whether the die of `unit` still has background work queued that it has not started
    /// by now, or while an idle gap is being filled ([`Flash::set_idle_until`]) by the end of
    /// the gap (timed runs only): background GC adds a victim only when the die has caught
    /// up, so that it runs in the die's idle time. Always false in mapping-only mode, where
    /// background GC reclaims a victim after every request.
    pub fn background_busy(&mut self, unit: u32) -> bool {
        let die = self.layout.die_of_unit(unit);
        let now = self.background_now();
        self.timeline
            .as_mut()
            .is_some_and(|t| t.background_busy(die, now))
    }

    /// Whether the die of `unit` is idle before the next request while an idle gap is
    /// being filled ([`Flash::set_idle_until`]): no background work of its own left and its
    /// last operation done before the gap ends. Always true in a gap of a mapping-only run;
    /// never outside a gap (just after a request).
    pub fn idle_in_gap(&mut self, unit: u32) -> bool {
        let until = self.idle_until;
        if until == 0 {
            return false;
        }
        let die = self.layout.die_of_unit(unit);
        self.timeline
            .as_mut()
            .is_none_or(|t| !t.background_busy(die, until) && t.die_free(die) < until)
    }

    /// The instant [`Flash::background_busy`] looks at: the cursor, or the end of the idle
    /// gap being filled.
    #[inline]
    pub fn background_now(&self) -> u64 {
        self.cursor.max(self.idle_until)
    }

    /// Before this instant the die of `unit` is surely [`Flash::background_busy`], if it has
    /// background work queued (timed runs). While [`Flash::background_drains`] and the first
    /// part of [`Flash::background_epoch`] stay the same, this never decreases.
    pub fn background_busy_until(&self, unit: u32) -> Option<u64> {
        let die = self.layout.die_of_unit(unit);
        self.timeline.as_ref()?.background_busy_until(die)
    }

    /// How many times the background queue of `unit`'s die has run empty: while it stays
    /// the same (and so does [`Flash::background_epoch`]'s first part), the die's
    /// [`Flash::background_busy_until`] only grows.
    #[inline]
    pub fn background_drains(&self, unit: u32) -> u64 {
        let die = self.layout.die_of_unit(unit);
        self.timeline.as_ref().map_or(0, |t| t.die_drained(die))
    }

    /// Changes whenever a die's background queue runs empty or the timing model stops or
    /// restarts (see [`Flash::background_busy_until`]).
    #[inline]
    pub fn background_epoch(&self) -> (u64, u64) {
        let drained = self.timeline.as_ref().map_or(0, Timeline::drained);
        (self.timing_restarts, drained)
    }

    /// Scheduling counters (multi-plane operations, suspensions, background work); None in
    /// mapping-only mode.
    pub fn scheduler_stats(&self) -> Option<&SchedulerStats> {
        self.timeline.as_ref().map(|t| &t.stats)
    }

    /// Runs all queued background work to its end; returns when the last die is done (0
    /// in mapping-only mode).
    pub fn settle_timeline(&mut self) -> u64 {
        self.timeline.as_mut().map_or(0, Timeline::settle)
    }

    /// Work given to each die so far, in ns ([`Timeline::die_work_ns`]; empty in
    /// mapping-only mode).
    pub fn die_work_ns(&self) -> Vec<u64> {
        self.timeline
            .as_ref()
            .map(|t| t.die_work_ns().collect())
            .unwrap_or_default()
    }

    /// Stops the timing model (preconditioning runs untimed); returns whether it ran.
    pub fn pause_timing(&mut self) -> bool {
        self.rebase_media_clock();
        self.timing_restarts += 1;
        self.timeline.take().is_some()
    }

    /// Restarts the timing model with every die and channel idle at time 0.
    pub fn restart_timing(&mut self, cfg: &DeviceConfig) {
        self.rebase_media_clock();
        self.timeline = Some(Timeline::new(cfg, &self.layout));
        self.timing_restarts += 1;
        self.cursor = 0;
        self.request_done = 0;
    }

    // ----- media (`[media]`) -----

    /// The media's error model and per-block state, if `[media]` turns it on.
    pub fn media(&self) -> Option<&MediaState> {
        self.media.as_deref()
    }

    /// Simulated time now as the media sees it (ns since the device was new): the data's
    /// retention time is measured on it.
    pub fn media_now(&self) -> u64 {
        match self.media.as_deref() {
            Some(m) => m.now(self.timeline.as_ref().map(|_| self.cursor)),
            None => 0,
        }
    }

    /// A run without the timing model: the current request arrives at `time_ns`, for the
    /// media's clock (a timed run's clock is the timing model's).
    #[inline]
    pub fn set_untimed_time(&mut self, time_ns: u64) {
        if let Some(m) = self.media.as_mut() {
            m.set_untimed_now(time_ns);
        }
    }

    /// Simulated time passes with the device idle (`media.age_ns`, between preconditioning
    /// and the measured run): the data ages.
    pub fn age_media(&mut self, ns: u64) {
        self.rebase_media_clock();
        if let Some(m) = self.media.as_mut() {
            m.advance(ns);
        }
    }

    /// The timing model's clock is about to stop or go back to 0: the media's goes on.
    fn rebase_media_clock(&mut self) {
        let now = self.media_now();
        if let Some(m) = self.media.as_mut() {
            m.rebase(now);
        }
    }

    /// Block `block` takes its first program since its erase: its data's age starts now.
    #[inline(never)]
    fn media_opened(&mut self, block: u32) {
        let now = self.media_now();
        if let Some(m) = self.media.as_mut() {
            m.opened(block, now);
        }
    }

    /// The read-retry steps a read of `ppn` takes (counted); an uncorrectable read is
    /// counted and takes every step of the table.
    #[inline(never)]
    fn media_read(&mut self, ppn: Ppn) -> u32 {
        let block = self.block_of(ppn);
        let (pe, now) = (self.erase_count[block as usize], self.media_now());
        let Some(m) = self.media.as_mut() else {
            return 0;
        };
        match m.read(block, pe, now, 1, &mut self.stats.media) {
            Some(steps) => steps,
            None => {
                self.stats.media.uncorrectable_reads += 1;
                self.stats.media.read_retries += m.cfg.retry_steps as u64;
                m.cfg.retry_steps
            }
        }
    }

    /// `copies` pages copied out of the block of `src` (garbage collection, merges): their
    /// reads disturb it and are decoded (counted); returns the extra sensing steps they take
    /// in all (every step of the table for an uncorrectable page).
    #[inline(never)]
    fn media_copies(&mut self, src: Ppn, copies: u32) -> u64 {
        let block = self.block_of(src);
        let (pe, now) = (self.erase_count[block as usize], self.media_now());
        let Some(m) = self.media.as_mut() else {
            return 0;
        };
        let steps = match m.read(block, pe, now, copies, &mut self.stats.media) {
            Some(steps) => steps,
            None => {
                self.stats.media.uncorrectable_copies += copies as u64;
                self.stats.media.read_retries += m.cfg.retry_steps as u64 * copies as u64;
                m.cfg.retry_steps
            }
        };
        steps as u64 * copies as u64
    }

    // ----- recovery -----

    /// Recovery after a restart: page `ppn` holds `oob`, as programmed before (no time, no
    /// counter, not valid: the scheme revalidates what it keeps). Pages must come in
    /// ascending order within a block; in sequential order, pages of the block skipped
    /// below `ppn` (programs lost or torn) become filler pages holding no logical page.
    pub fn restore_page(&mut self, ppn: Ppn, oob: Oob) -> std::result::Result<(), NandError> {
        self.check_ppn(ppn)?;
        let block = self.block_of(ppn);
        let offset = self.page_offset(ppn);
        let wp = self.write_ptr[block as usize];
        if offset < wp || (self.order != ProgramOrder::Sequential && bit(&self.programmed, ppn)) {
            return Err(NandError::ProgramNotErased { ppn });
        }
        let first = self.first_page(block);
        if self.media.is_some() && wp == 0 {
            self.media_opened(block);
        }
        if self.order == ProgramOrder::Sequential {
            for hole in wp..offset {
                self.oob
                    .set((first + hole) as usize, Oob { lpa: NONE, seq: 0 });
            }
        } else {
            set_bit(&mut self.programmed, ppn, true);
        }
        self.write_ptr[block as usize] = match self.order {
            ProgramOrder::Sequential | ProgramOrder::Ascending => offset + 1,
            ProgramOrder::Any => wp + 1,
        };
        self.oob.set(ppn as usize, oob);
        Ok(())
    }

    /// Recovery: the block's erase count before the restart.
    pub fn restore_erase_count(&mut self, block: u32, count: u32) {
        self.erase_count[block as usize] = count;
    }

    /// Recovery: the scheme keeps programmed page `ppn`; it is valid again.
    pub fn revalidate(&mut self, ppn: Ppn) -> std::result::Result<(), NandError> {
        self.check_ppn(ppn)?;
        if !self.is_programmed(ppn) || bit(&self.valid, ppn) {
            return Err(NandError::InvalidateNotValid { ppn });
        }
        set_bit(&mut self.valid, ppn, true);
        let block = self.block_of(ppn) as usize;
        self.valid_count[block] += 1;
        Ok(())
    }

    // ----- operations -----

    /// Reads a programmed page; returns its OOB header.
    #[inline]
    pub fn read(&mut self, ppn: Ppn, cause: Cause) -> std::result::Result<Oob, NandError> {
        self.read_at(ppn, cause, self.cursor).map(|(oob, _)| oob)
    }

    #[inline]
    fn read_at(
        &mut self,
        ppn: Ppn,
        cause: Cause,
        ready: u64,
    ) -> std::result::Result<(Oob, u64), NandError> {
        self.check_ppn(ppn)?;
        if !self.is_programmed(ppn) {
            return Err(NandError::ReadErased { ppn });
        }
        self.last_read = ppn;
        self.stats.reads[self.counter(cause)] += 1;
        let retries = if self.media.is_some() {
            self.media_read(ppn)
        } else {
            0
        };
        let mut done = ready;
        if self.timeline.is_some() {
            let in_command = cause == Cause::Translation && self.command.is_some();
            let mut phased = false;
            if let Some(first) = self.command.and_then(|c| c.read).filter(|_| in_command) {
                // A later page of a vector command: it ends with the command's first read.
                done = first.max(ready);
            } else {
                phased = true;
                self.classify(cause, false);
                let place = self.place(ppn);
                let background = self.background;
                if let Some(t) = self.timeline.as_mut() {
                    done = t.read(place, ready, background).done;
                    // Each read-retry step senses and transfers the page again.
                    for _ in 0..retries {
                        done = t.read(place, done, background).done;
                    }
                }
                if in_command {
                    if let Some(c) = self.command.as_mut() {
                        c.read = Some(done);
                    }
                }
            }
            self.waits_for(done, cause, Part::Sense, phased);
        }
        Ok((self.oob(ppn), done))
    }

    /// Programs an erased page with its OOB header and `extra` scheme bytes (zero-padded to
    /// the scheme's width). The page becomes valid.
    #[inline]
    pub fn program(
        &mut self,
        ppn: Ppn,
        oob: Oob,
        extra: &[u8],
        cause: Cause,
    ) -> std::result::Result<(), NandError> {
        let ready = self.cursor;
        // A page of host data (not a filler) frees its buffer slot when flushed.
        self.program_at(ppn, oob, extra, cause, ready, oob.lpa != NONE)?;
        if self.sink.is_some() {
            self.notify_program(ppn, oob);
        }
        Ok(())
    }

    /// [`Flash::program`] of a page whose sectors hold data of different writes (or
    /// logical pages): one page program, the identity of each 512 B sector written in its
    /// spare area ([`Flash::sector_tag`]). Copies of the page carry them; an erase clears
    /// them.
    pub fn program_sectors(
        &mut self,
        ppn: Ppn,
        oob: Oob,
        tags: &[SectorTag],
        cause: Cause,
    ) -> std::result::Result<(), NandError> {
        self.program(ppn, oob, &[], cause)?;
        self.sector_tags.insert(ppn, tags.into());
        Ok(())
    }

    /// Gives page `ppn`, just programmed whole by [`Flash::program`] (a scheme's page
    /// path), the sector identities `tags`, as if [`Flash::program_sectors`] had
    /// programmed it: for a scheme whose page path programs a page gathered from sectors
    /// of several writes. No operation is counted (the program was).
    pub fn set_sector_tags(&mut self, ppn: Ppn, tags: &[SectorTag]) {
        debug_assert!(self.is_programmed(ppn));
        self.sector_tags.insert(ppn, tags.into());
    }

    #[inline(never)]
    fn notify_program(&mut self, ppn: Ppn, oob: Oob) {
        let content = (oob.lpa == NONE && self.has_content).then_some(&self.content[..]);
        if let Some(sink) = self.sink.as_mut() {
            sink.program(ppn, oob, content);
        }
        if oob.lpa == NONE {
            self.has_content = false;
        }
    }

    fn program_at(
        &mut self,
        ppn: Ppn,
        oob: Oob,
        extra: &[u8],
        cause: Cause,
        ready: u64,
        host_data: bool,
    ) -> std::result::Result<(), NandError> {
        self.program_state(ppn, oob, extra)?;
        let counter = self.counter(cause);
        self.stats.programs[counter] += 1;
        if self.is_slc(self.block_of(ppn)) && CAUSES[counter].group() == "host" {
            self.stats.slc_host_programs += 1;
        }
        if self.timeline.is_some() {
            let in_command = cause == Cause::Translation && self.command.is_some();
            if let Some(first) = self.command.and_then(|c| c.program).filter(|_| in_command) {
                // A later page of a vector command: it ends with the command's first program.
                let span = Span {
                    transferred: first.transferred.max(ready),
                    done: first.done.max(ready),
                };
                self.programmed(cause, host_data, span, false);
                return Ok(());
            }
            self.classify(cause, true);
            let place = self.place(ppn);
            let background = self.background;
            if let Some(t) = self.timeline.as_mut() {
                let span = t.program(place, ready, background);
                if in_command {
                    if let Some(c) = self.command.as_mut() {
                        c.program = Some(span);
                    }
                }
                self.programmed(cause, host_data, span, true);
            }
        }
        Ok(())
    }

    /// A program of `cause` that took `span` holds the current request until it is done,
    /// but a program of host data (`host_data`: not a copy, not a filler) while a
    /// write-back buffer flushes has its transfer time recorded instead, when its buffer
    /// slot is free ([`Flash::set_flushing`]). Copies and fillers free no slot: the page
    /// they make room for, programmed after them, does.
    #[inline]
    fn programmed(&mut self, cause: Cause, host_data: bool, span: Span, phased: bool) {
        if host_data && cause == Cause::Host && self.flushing {
            let held_by = match (phased, self.timeline.as_ref()) {
                (true, Some(t)) => t.phases().holder(),
                _ => Part::BufferWait,
            };
            self.host_transfers.push((span.transferred, held_by));
        } else {
            self.waits_for(span.done, cause, Part::Program, phased);
        }
    }

    /// A program's effect on the page and block state, after the NAND rules are checked:
    /// no counter, no time. (Inlined: it is most of every program.)
    #[inline(always)]
    fn program_state(
        &mut self,
        ppn: Ppn,
        oob: Oob,
        extra: &[u8],
    ) -> std::result::Result<(), NandError> {
        self.check_ppn(ppn)?;
        if extra.len() > self.extra_width {
            return Err(NandError::OobTooLarge {
                ppn,
                bytes: extra.len(),
                limit: self.extra_width,
            });
        }
        let block = self.block_of(ppn);
        let offset = self.page_offset(ppn);
        if offset >= self.capacity[block as usize] {
            if self.is_retired(block) {
                return Err(NandError::RetiredBlock { block });
            }
            return Err(NandError::ProgramBeyondCapacity {
                ppn,
                pages: self.capacity[block as usize],
            });
        }
        match self.order {
            ProgramOrder::Sequential => {
                let wp = self.write_ptr[block as usize];
                if offset < wp {
                    return Err(NandError::ProgramNotErased { ppn });
                }
                if offset != wp {
                    return Err(NandError::ProgramOutOfOrder {
                        ppn,
                        expected_page: wp,
                    });
                }
            }
            ProgramOrder::Ascending => {
                let wp = self.write_ptr[block as usize];
                if bit(&self.programmed, ppn) {
                    return Err(NandError::ProgramNotErased { ppn });
                }
                if offset < wp {
                    return Err(NandError::ProgramBelowHighest {
                        ppn,
                        lowest_page: wp,
                    });
                }
                set_bit(&mut self.programmed, ppn, true);
            }
            ProgramOrder::Any => {
                if bit(&self.programmed, ppn) {
                    return Err(NandError::ProgramNotErased { ppn });
                }
                set_bit(&mut self.programmed, ppn, true);
            }
        }
        if self.media.is_some() && self.write_ptr[block as usize] == 0 {
            self.media_opened(block);
        }
        self.write_ptr[block as usize] = match self.order {
            ProgramOrder::Ascending => offset + 1,
            ProgramOrder::Sequential | ProgramOrder::Any => self.write_ptr[block as usize] + 1,
        };
        self.oob.set(ppn as usize, oob);
        if self.extra_width > 0 {
            let start = ppn as usize * self.extra_width;
            let dst = &mut self.extra[start..start + self.extra_width];
            dst[..extra.len()].copy_from_slice(extra);
            dst[extra.len()..].fill(0);
        }
        set_bit(&mut self.valid, ppn, true);
        self.valid_count[block as usize] += 1;
        self.modified_at[block as usize] = self.clock;
        self.programmed_at[block as usize] = self.clock;
        Ok(())
    }

    /// Copies a valid page to an erased page (read, then program once the read is done),
    /// keeping its OOB header and extra bytes. The source stays valid: the caller
    /// invalidates it when the mapping moves.
    pub fn copy(
        &mut self,
        src: Ppn,
        dst: Ppn,
        cause: Cause,
    ) -> std::result::Result<Oob, NandError> {
        let (oob, read_done) = self.read_at(src, cause, self.cursor)?;
        self.program_at(dst, oob, &[], cause, read_done, false)?;
        self.copied(src, dst, oob);
        Ok(oob)
    }

    /// The end of a copy: the extra OOB bytes follow the page, and the sink is told.
    #[inline]
    fn copied(&mut self, src: Ppn, dst: Ppn, oob: Oob) {
        if !self.sector_tags.is_empty() {
            if let Some(tags) = self.sector_tags.get(&src).cloned() {
                self.sector_tags.insert(dst, tags);
            }
        }
        let w = self.extra_width;
        if w > 0 {
            let from = src as usize * w;
            self.extra.copy_within(from..from + w, dst as usize * w);
        }
        if let Some(sink) = self.sink.as_mut() {
            sink.copy(src, dst, oob);
        }
    }

    /// Programs pages `from..to` of `block` with `oob` and no data, each invalidated at once:
    /// the filler pages that block-mapped data needs where the program order forbids
    /// skipping a page. The state, counters, times and errors are exactly those of a
    /// [`Flash::program`] and an [`Flash::invalidate`] per page, in order; the time is taken
    /// once for the run ([`Timeline::program_run`]). With a page store attached, or when a
    /// page would break a NAND rule, the pages go one by one.
    pub fn program_fillers(
        &mut self,
        block: u32,
        from: u32,
        to: u32,
        oob: Oob,
        cause: Cause,
    ) -> std::result::Result<(), NandError> {
        if from >= to {
            return Ok(());
        }
        let first = self.first_page(block);
        let fits = block < self.layout.total_blocks && to <= self.capacity[block as usize];
        let ok = fits
            && self.sink.is_none()
            && match self.order {
                ProgramOrder::Sequential => self.write_ptr[block as usize] == from,
                ProgramOrder::Ascending => {
                    self.write_ptr[block as usize] <= from
                        && (from..to).all(|o| !bit(&self.programmed, first + o))
                }
                ProgramOrder::Any => (from..to).all(|o| !bit(&self.programmed, first + o)),
            };
        if !ok {
            for o in from..to {
                self.program(first + o, oob, &[], cause)?;
                self.invalidate(first + o)?;
            }
            return Ok(());
        }
        let n = to - from;
        if self.media.is_some() && self.write_ptr[block as usize] == 0 {
            self.media_opened(block);
        }
        for p in first + from..first + to {
            // Programmed, valid, then invalid again: the valid bit and count are unchanged.
            self.oob.set(p as usize, oob);
            if self.order != ProgramOrder::Sequential {
                set_bit(&mut self.programmed, p, true);
            }
        }
        let w = self.extra_width;
        if w > 0 {
            self.extra[(first + from) as usize * w..(first + to) as usize * w].fill(0);
        }
        self.write_ptr[block as usize] = match self.order {
            ProgramOrder::Sequential | ProgramOrder::Ascending => to,
            ProgramOrder::Any => self.write_ptr[block as usize] + n,
        };
        self.modified_at[block as usize] = self.clock;
        self.programmed_at[block as usize] = self.clock;
        self.stats.programs[self.counter(cause)] += n as u64;
        if self.timeline.is_some() {
            let place = self.place(first + from);
            let (cursor, background) = (self.cursor, self.background);
            self.classify(cause, true);
            if let Some(t) = self.timeline.as_mut() {
                let span = t.program_run(place, to - 1, n, cursor, background);
                self.waits_for(span.done, cause, Part::Program, false);
            }
        }
        Ok(())
    }

    /// Moves every valid page of block `src` at page offsets `from..to` to the same offset of
    /// block `dst`, in offset order, as [`Flash::move_pages`] would (returns how many): the
    /// block-to-block copy of merges, done 64 pages at a time on the page bitmaps. When a
    /// page would break a NAND rule (or the blocks are the same), the pages go through
    /// [`Flash::move_pages`] one by one, which
    /// gives the error where a single move would.
    pub fn move_valid(
        &mut self,
        src: u32,
        dst: u32,
        from: u32,
        to: u32,
        cause: Cause,
    ) -> std::result::Result<u32, NandError> {
        self.check_block(src)?;
        self.check_block(dst)?;
        let to = to.min(self.layout.pages_per_block);
        let (src_first, dst_first) = (self.first_page(src), self.first_page(dst));
        // First every rule checked (nothing changes yet), with the destination's write
        // pointer as the pages would move it.
        let src_wp = self.write_ptr[src as usize];
        let mut wp = self.write_ptr[dst as usize];
        let mut ok = src != dst && self.is_native(dst);
        let mut moved = 0;
        let mut last = 0;
        let mut c = from;
        while ok && c < to {
            let len = (to - c).min(64);
            let m = get_bits(&self.valid, src_first + c, len);
            c += len;
            if m == 0 {
                continue;
            }
            let (lo, hi) = (
                c - len + m.trailing_zeros(),
                c - len + 63 - m.leading_zeros(),
            );
            let count = m.count_ones();
            let base = c - len;
            ok = match self.order {
                // Programmed below the write pointer; programs at the write pointer, in turn.
                ProgramOrder::Sequential => hi < src_wp && lo == wp && hi - lo + 1 == count,
                ProgramOrder::Ascending => {
                    get_bits(&self.programmed, src_first + base, len) & m == m
                        && get_bits(&self.programmed, dst_first + base, len) & m == 0
                        && lo >= wp
                }
                ProgramOrder::Any => {
                    get_bits(&self.programmed, src_first + base, len) & m == m
                        && get_bits(&self.programmed, dst_first + base, len) & m == 0
                }
            };
            wp = match self.order {
                ProgramOrder::Sequential | ProgramOrder::Ascending => hi + 1,
                ProgramOrder::Any => wp + count,
            };
            moved += count;
            last = hi;
        }
        if !ok {
            let moves: Vec<(Ppn, Ppn)> = self
                .valid_pages_in(src, from, to)
                .map(|p| (p, p - src_first + dst_first))
                .collect();
            self.move_pages(&moves, cause)?;
            return Ok(moves.len() as u32);
        }
        if moved == 0 {
            return Ok(0);
        }
        let notify = self.extra_width > 0 || self.sink.is_some() || !self.sector_tags.is_empty();
        let mut first = None;
        let mut c = from;
        while c < to {
            let len = (to - c).min(64);
            let mut m = get_bits(&self.valid, src_first + c, len);
            if m != 0 {
                put_bits(&mut self.valid, dst_first + c, m, true);
                put_bits(&mut self.valid, src_first + c, m, false);
                if self.order != ProgramOrder::Sequential {
                    put_bits(&mut self.programmed, dst_first + c, m, true);
                }
                first.get_or_insert(c + m.trailing_zeros());
                while m != 0 {
                    let o = c + m.trailing_zeros();
                    m &= m - 1;
                    let (s, d) = (src_first + o, dst_first + o);
                    self.oob.copy(s as usize, d as usize);
                    if notify {
                        self.copied(s, d, self.oob(d));
                    }
                }
            }
            c += len;
        }
        if self.media.is_some() && self.write_ptr[dst as usize] == 0 {
            self.media_opened(dst);
        }
        self.write_ptr[dst as usize] = wp;
        self.valid_count[dst as usize] += moved;
        self.valid_count[src as usize] -= moved;
        self.modified_at[dst as usize] = self.clock;
        self.modified_at[src as usize] = self.clock;
        self.programmed_at[dst as usize] = self.clock;
        self.last_read = src_first + last;
        let first = first.unwrap_or(last);
        self.time_copies(
            (src_first + first, dst_first + first),
            (src_first + last, dst_first + last),
            moved,
            cause,
        );
        Ok(moved)
    }

    /// Moves pages (merges, garbage collection): for each `(src, dst)` in turn, valid page
    /// `src` is copied to erased page `dst` ([`Flash::copy`]) and then invalidated
    /// ([`Flash::invalidate`]). The state, counters, times and errors are exactly those of
    /// these calls page by page (on an error, the pages before have moved), at a fraction
    /// of their cost: the pages' state is updated one by one (the NAND rules checked as
    /// each is programmed), but the counters and the time once per run of moves between
    /// the same two blocks ([`Timeline::copy_run`]).
    pub fn move_pages(
        &mut self,
        moves: &[(Ppn, Ppn)],
        cause: Cause,
    ) -> std::result::Result<(), NandError> {
        let mut i = 0;
        while i < moves.len() {
            let (moved, failed) = self.move_run(&moves[i..]);
            match failed {
                None => self.time_moves(&moves[i..i + moved], cause),
                Some((reached, e)) => {
                    // The failing page's operations that were done count too.
                    let copied = moved + (reached == MoveStage::Copied) as usize;
                    self.time_moves(&moves[i..i + copied], cause);
                    if reached == MoveStage::Read {
                        self.read_at(moves[i + moved].0, cause, self.cursor)?;
                    }
                    return Err(e);
                }
            }
            i += moved;
        }
        Ok(())
    }

    /// The state of the leading run of `moves` between the same two blocks (see
    /// [`Flash::move_pages`]); returns how many moved, and the error of the next one if it
    /// failed. The blocks' counters and write pointer are updated once per run, the pages
    /// checked and updated one by one; a page that breaks a rule goes through
    /// [`Flash::move_state`], which gives the error as a single move would.
    fn move_run(&mut self, moves: &[(Ppn, Ppn)]) -> (usize, Option<(MoveStage, NandError)>) {
        let (src_block, dst_block) = (self.block_of(moves[0].0), self.block_of(moves[0].1));
        let n = moves
            .iter()
            .position(|&(s, d)| self.block_of(s) != src_block || self.block_of(d) != dst_block)
            .unwrap_or(moves.len());
        let blocks_ok = src_block != dst_block
            && src_block < self.layout.total_blocks
            && dst_block < self.layout.total_blocks
            && self.is_native(dst_block);
        let (src_first, dst_first) = (self.first_page(src_block), self.first_page(dst_block));
        let mut k = 0;
        while k < n {
            if blocks_ok {
                let src_wp = self.write_ptr[src_block as usize];
                let mut wp = self.write_ptr[dst_block as usize];
                let start = k;
                let notify =
                    self.extra_width > 0 || self.sink.is_some() || !self.sector_tags.is_empty();
                while k < n {
                    let (src, dst) = moves[k];
                    let offset = dst - dst_first;
                    let ok = match self.order {
                        ProgramOrder::Sequential => src - src_first < src_wp && offset == wp,
                        ProgramOrder::Ascending => {
                            bit(&self.programmed, src)
                                && !bit(&self.programmed, dst)
                                && offset >= wp
                        }
                        ProgramOrder::Any => {
                            bit(&self.programmed, src) && !bit(&self.programmed, dst)
                        }
                    };
                    if !ok || !bit(&self.valid, src) {
                        break;
                    }
                    if self.order != ProgramOrder::Sequential {
                        set_bit(&mut self.programmed, dst, true);
                    }
                    wp = match self.order {
                        ProgramOrder::Ascending => offset + 1,
                        ProgramOrder::Sequential | ProgramOrder::Any => wp + 1,
                    };
                    self.oob.copy(src as usize, dst as usize);
                    set_bit(&mut self.valid, dst, true);
                    set_bit(&mut self.valid, src, false);
                    if notify {
                        self.copied(src, dst, self.oob(dst));
                    }
                    k += 1;
                }
                let moved = (k - start) as u32;
                if moved > 0 {
                    if self.media.is_some() && self.write_ptr[dst_block as usize] == 0 {
                        self.media_opened(dst_block);
                    }
                    self.write_ptr[dst_block as usize] = wp;
                    self.valid_count[dst_block as usize] += moved;
                    self.valid_count[src_block as usize] -= moved;
                    self.modified_at[dst_block as usize] = self.clock;
                    self.modified_at[src_block as usize] = self.clock;
                    self.programmed_at[dst_block as usize] = self.clock;
                    self.last_read = moves[k - 1].0;
                }
                if k == n {
                    break;
                }
            }
            // A page the loop above does not take (one that breaks a rule, or blocks it
            // does not handle): as a single move.
            if let Err(e) = self.move_state(moves[k].0, moves[k].1) {
                return (k, Some(e));
            }
            k += 1;
        }
        (n, None)
    }

    /// One page of [`Flash::move_pages`]: its state only (no counter, no time). On an error,
    /// how far it got.
    #[inline]
    fn move_state(
        &mut self,
        src: Ppn,
        dst: Ppn,
    ) -> std::result::Result<(), (MoveStage, NandError)> {
        let fail = |stage| move |e| (stage, e);
        self.check_ppn(src).map_err(fail(MoveStage::None))?;
        if !self.is_programmed(src) {
            return Err((MoveStage::None, NandError::ReadErased { ppn: src }));
        }
        self.last_read = src;
        let oob = self.oob(src);
        self.program_state(dst, oob, &[])
            .map_err(fail(MoveStage::Read))?;
        self.copied(src, dst, oob);
        self.invalidate(src).map_err(fail(MoveStage::Copied))
    }

    /// Counts and times a run of copies between the same two blocks whose state
    /// [`Flash::move_state`] updated.
    fn time_moves(&mut self, run: &[(Ppn, Ppn)], cause: Cause) {
        if let (Some(&first), Some(&last)) = (run.first(), run.last()) {
            self.time_copies(first, last, run.len() as u32, cause);
        }
    }

    /// Counts and times `copies` copies between the same two blocks, the first and the last
    /// (source, destination) given (not for programs whose transfers are recorded).
    fn time_copies(&mut self, first: (Ppn, Ppn), last: (Ppn, Ppn), copies: u32, cause: Cause) {
        let retries = if self.media.is_some() {
            self.media_copies(first.0, copies)
        } else {
            0
        };
        let counter = self.counter(cause);
        self.stats.reads[counter] += copies as u64;
        self.stats.programs[counter] += copies as u64;
        if self.timeline.is_some() {
            let (from, to) = (self.place(first.0), self.place(first.1));
            let last = (self.page_offset(last.0), self.page_offset(last.1));
            let (mut cursor, background) = (self.cursor, self.background);
            self.classify(cause, true);
            if let Some(t) = self.timeline.as_mut() {
                // The read-retry steps of the copies: their extra senses and transfers
                // occupy the source die before the run, which starts after them.
                for _ in 0..retries {
                    cursor = t.read(from, cursor, background).done;
                }
                let done = t.copy_run(from, to, last, copies, cursor, background);
                self.waits_for(done.read_done, cause, Part::Sense, false);
                self.waits_for(done.program.done, cause, Part::Program, false);
            }
        }
    }

    /// Marks a page as no longer holding live data.
    #[inline]
    pub fn invalidate(&mut self, ppn: Ppn) -> std::result::Result<(), NandError> {
        self.check_ppn(ppn)?;
        if !bit(&self.valid, ppn) {
            return Err(NandError::InvalidateNotValid { ppn });
        }
        set_bit(&mut self.valid, ppn, false);
        let block = self.block_of(ppn) as usize;
        self.valid_count[block] -= 1;
        self.modified_at[block] = self.clock;
        Ok(())
    }

    /// Erases a block that holds no valid page.
    pub fn erase(&mut self, block: u32, cause: Cause) -> std::result::Result<(), NandError> {
        self.check_block(block)?;
        let valid = self.valid_count[block as usize];
        if valid != 0 {
            return Err(NandError::EraseWithValidPages { block, valid });
        }
        if self.is_retired(block) {
            return Err(NandError::RetiredBlock { block });
        }
        let first = self.first_page(block) as usize;
        let ppb = self.layout.pages_per_block as usize;
        self.oob.erase(first, first + ppb);
        if !self.sector_tags.is_empty() {
            for ppn in first..first + ppb {
                self.sector_tags.remove(&(ppn as Ppn));
            }
        }
        if self.order != ProgramOrder::Sequential {
            clear_bits(&mut self.programmed, first as u32, (first + ppb) as u32);
        }
        self.write_ptr[block as usize] = 0;
        self.erase_count[block as usize] += 1;
        if let Some(m) = self.media.as_mut() {
            m.erased(block);
        }
        self.modified_at[block as usize] = self.clock;
        self.stats.erases[self.counter(cause)] += 1;
        if let Some(sink) = self.sink.as_mut() {
            sink.erase(block);
        }
        if self.timeline.is_some() {
            let die = self.layout.die_of_unit(self.layout.unit_of_block(block));
            let slc = self.is_slc(block);
            let (cursor, background) = (self.cursor, self.background);
            self.classify(cause, true);
            if let Some(t) = self.timeline.as_mut() {
                let done = t.erase(die, slc, cursor, background).done;
                self.waits_for(done, cause, Part::Erase, true);
            }
        }
        Ok(())
    }

    /// Valid pages of a block, in page order.
    pub fn valid_pages(&self, block: u32) -> impl Iterator<Item = Ppn> + '_ {
        self.valid_pages_in(block, 0, self.layout.pages_per_block)
    }

    /// Valid pages of a block at offsets `from..to`, in page order.
    #[inline]
    pub fn valid_pages_in(&self, block: u32, from: u32, to: u32) -> impl Iterator<Item = Ppn> + '_ {
        let first = self.first_page(block);
        ones(&self.valid, first + from, first + to)
    }
}
