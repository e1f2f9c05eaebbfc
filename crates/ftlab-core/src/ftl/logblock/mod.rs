//! The machinery every log-block hybrid FTL shares (`block`, `bast`, `fast`, `kast`, `fftl`,
//! `kraft`; FTL-algorithms spec sections 1.3, 3 and 4), written once.
//!
//! **Data blocks** are mapped at block level: logical page `l` of logical block
//! `X = l / N` (N pages per block) lives at page `l mod N` of block `BMT[X]` (`dbm`), or in
//! a log block. A data block is allocated on its LBN's first write, on the parallel unit
//! `X mod units` (in the plane-first stripe order), so that consecutive logical blocks sit on
//! different dies. A write whose data-block page is still erased, and programmable in the
//! NAND's program order, goes there ("in place"), as in BAST and FAST.
//!
//! **Log blocks** are a pool of `slots`, each always holding one flash block (erased when the
//! slot is free). Pages are appended at the block's top (one past its highest programmed
//! page) or, for a *serial* log block, placed at their own offset: a log block is serial for
//! LBN X while every page it holds is X's page of the same offset (a sequential log, the
//! only kind a switch merge can turn into a data block). The newest copy of every logical
//! page is found through `newest` (logical page -> log page, zero-initialised so that pages
//! never logged cost no resident memory): a read or an overwrite never scans the log
//! blocks. (That index is the simulator's; a controller would scan its log page maps in
//! SRAM or keep a small hash, as the spec suggests for FAST. The modelled DRAM is each
//! scheme's own structures, see [`LogMemory`].)
//!
//! **Merges** (spec section 1.3), each flash operation tagged with its kind:
//! - *switch*: a serial log block holding every valid page of its LBN becomes the data
//!   block and the old data block is erased: no copy (`merge_switch`);
//! - *partial*: a serial log block is completed with the LBN's remaining valid pages (copied
//!   from the data block or other log blocks into their own offsets), then switched
//!   (`merge_partial`);
//! - *full*: the newest copy of each page of the LBN, wherever it is, is copied into a fresh
//!   block at its offset, the old data block is erased (`merge_full`); a victim log block
//!   holding pages of A logical blocks costs A full merges, then its own erase.
//!
//! Merge counts are per logical block (FlashSim's convention: a victim holding pages of
//! three LBNs is three full merges), pages copied by cause. Reclaiming a log block (a victim)
//! is one *merge operation*: its response time is measured from its first to its last flash
//! operation (timed runs; the request that needed it waits for it) and its cost is also given
//! by the serial cost model of the KRAFT paper's Table 1 (a copy costs tR + tPROG, an erase
//! tBERS), which holds in mapping-only runs too. A victim with no valid page is only erased
//! (counted under `gc`). For the report, `gc.invocations` counts merge operations (and
//! FFTL's cleanings) and `gc.pages_moved` every page the scheme copied.
//!
//! **Program order.** With `nand.program_order = "ascending"` (MLC, the `kraft` preset) a
//! page may be placed above skipped (erased) pages, which serial log blocks and merges use
//! for pages that hold no data. With `"sequential"` they cannot be skipped: the gap is
//! programmed with filler pages (no logical page, invalid at once), counted in
//! `filler_pages`: the price of block-mapped data on NAND that forbids skipping.
//!
//! **Victim policies**: least recently written (`lru`), oldest allocated (round-robin,
//! `fifo`), most-filled serial log block, least merge cost; each scheme picks its own.

pub mod bast;
pub mod block;
pub mod fast;
pub mod fftl;
pub mod kast;
pub mod kraft;
mod recovery;

use crate::device::blocks::FreeBlocks;
use crate::device::geometry::{Layout, ProgramOrder};
use crate::device::nand::{Cause, Flash, Oob, Ppn, NONE};
use crate::error::{Error, Result};
use crate::ftl::kit::mapcache::{Links, List, NIL};
use crate::ftl::settings::SchemeContext;
use crate::ftl::MemoryBreakdown;
use serde::{Deserialize, Serialize};

/// Bits to hold the values `0..=n` (`n` itself standing for "none" where one is needed).
pub fn bits_for(n: u64) -> u64 {
    64 - n.leading_zeros() as u64
}

/// One log block of the pool.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// The flash block it holds (erased while the slot is free).
    pub block: u32,
    /// One past the highest programmed page (0: free).
    pub top: u32,
    /// Valid pages.
    pub valid: u32,
    /// Logical blocks with at least one valid page here (schemes that track associativity).
    pub assoc: u32,
    /// Entries of its LBN table in use (live or dead).
    entries: u32,
    /// The LBN this log block is serial for, or [`NONE`].
    pub serial: u32,
    /// Sequential-log role (FAST, KAST, FFTL): the LBN it serves, or [`NONE`].
    pub owner: u32,
    /// Pages copied into it by fills (KRAFT's gap fills, the block scheme's head copies).
    pub filled: u32,
    /// The room list the slot is in ([`NIL`]: none).
    room_list: u32,
    /// Whether it is in the LRU list (random slots in use).
    in_lru: bool,
    /// Logical time of its last write (LRU among the sequential logs).
    pub stamp: u64,
}

impl Slot {
    fn fresh(block: u32) -> Slot {
        Slot {
            block,
            top: 0,
            valid: 0,
            assoc: 0,
            entries: 0,
            serial: NONE,
            owner: NONE,
            filled: 0,
            room_list: NIL,
            in_lru: false,
            stamp: 0,
        }
    }

    #[inline]
    pub fn is_free(&self) -> bool {
        self.top == 0
    }
}

/// Merge kinds, in the order of their causes.
pub const SWITCH: usize = 0;
pub const PARTIAL: usize = 1;
pub const FULL: usize = 2;
const MERGE_CAUSES: [Cause; 3] = [Cause::MergeSwitch, Cause::MergePartial, Cause::MergeFull];

fn merge_kind(cause: Cause) -> Option<usize> {
    MERGE_CAUSES.iter().position(|&c| c == cause)
}

/// Buckets of the associativity histogram: 0 to 16 one by one, then 17-32, 33-64, 65+.
const ASSOC_BUCKETS: usize = 20;
const ASSOC_NAMES: [&str; ASSOC_BUCKETS] = [
    "assoc_at_merge.00",
    "assoc_at_merge.01",
    "assoc_at_merge.02",
    "assoc_at_merge.03",
    "assoc_at_merge.04",
    "assoc_at_merge.05",
    "assoc_at_merge.06",
    "assoc_at_merge.07",
    "assoc_at_merge.08",
    "assoc_at_merge.09",
    "assoc_at_merge.10",
    "assoc_at_merge.11",
    "assoc_at_merge.12",
    "assoc_at_merge.13",
    "assoc_at_merge.14",
    "assoc_at_merge.15",
    "assoc_at_merge.16",
    "assoc_at_merge.17_32",
    "assoc_at_merge.33_64",
    "assoc_at_merge.65_up",
];

fn assoc_bucket(a: u32) -> usize {
    match a {
        0..=16 => a as usize,
        17..=32 => 17,
        33..=64 => 18,
        _ => 19,
    }
}

/// Event counters of the log-block machinery (reset after preconditioning).
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub in_place_writes: u64,
    pub log_writes: u64,
    /// Merges by kind ([`SWITCH`], [`PARTIAL`], [`FULL`]), per logical block.
    pub merges: [u64; 3],
    /// Pages copied under each merge cause (fills included).
    pub merge_pages: [u64; 3],
    /// Pages copied by fills (KRAFT's gap fills, the block scheme's head copies).
    pub fill_pages: u64,
    /// Filler pages programmed where the program order forbids skipping.
    pub filler_pages: u64,
    /// Log blocks reclaimed (merge operations), of which with no valid page (erase only).
    pub merge_ops: u64,
    pub dead_log_erases: u64,
    /// FFTL's cleanings (a nearly empty log block compacted) and the pages they moved.
    pub cleanings: u64,
    pub cleaning_pages: u64,
    /// Every page copy and erase the machinery issued (for the cost model).
    copies: u64,
    erases: u64,
    pub merge_time_sum_ns: u64,
    pub merge_time_max_ns: u64,
    pub merge_cost_sum_ns: u64,
    pub merge_cost_max_ns: u64,
    /// Sums over reclaimed log blocks of pages written and valid, as shares of a block.
    util_written: f64,
    util_valid: f64,
    pub assoc_hist: [u64; ASSOC_BUCKETS],
}

/// Where a reclamation started (see [`Core::begin_op`]).
struct OpMark {
    start_ns: u64,
    copies: u64,
    erases: u64,
    fillers: u64,
}

/// Keys every log-block scheme's section has: how many log blocks the pool holds, as a
/// count or as the DRAM their maps may use; with neither, every spare block (the spare
/// area is the log area, as in FlashSim's FAST, where the page-level FTL spends it on
/// garbage collection).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoolKeys {
    /// A count (0: from `log_dram_bytes`, else every spare block).
    pub log_blocks: u32,
    /// The DRAM the log-block maps may use, in bytes (0: unused).
    pub log_dram_bytes: u64,
}

/// What a scheme's DRAM holds, for [`LogMemory::breakdown`]: the block map, and per log
/// block its table entry and page map at the real entry widths.
#[derive(Clone, Copy, Debug)]
pub struct LogMemory {
    /// Bits of one log page's map entry (an absolute logical page, an offset, or KRAFT's
    /// (RI, RLSN) pair).
    pub entry_bits: u64,
    /// LBN slots per log block (KRAFT's `LBN[K]`, KAST's association set, BAST's owner).
    pub lbns_per_log: u64,
    /// Bits of other per-log-block state beyond the block number, top and flags.
    pub extra_bits_per_log: u64,
}

/// A log-block layout helper: the geometry's widths.
#[derive(Clone, Copy, Debug)]
pub struct Widths {
    pub ppb: u64,
    pub logical_blocks: u64,
    pub total_blocks: u64,
    pub logical_pages: u64,
}

impl Widths {
    pub fn new(layout: &Layout) -> Self {
        let ppb = layout.pages_per_block as u64;
        Widths {
            ppb,
            logical_blocks: layout.logical_pages.div_ceil(ppb),
            total_blocks: layout.total_blocks as u64,
            logical_pages: layout.logical_pages,
        }
    }

    /// A physical block number, with a value for "unmapped".
    pub fn pbn_bits(&self) -> u64 {
        bits_for(self.total_blocks)
    }

    pub fn lbn_bits(&self) -> u64 {
        bits_for(self.logical_blocks)
    }

    /// An absolute logical page number.
    pub fn lpn_bits(&self) -> u64 {
        bits_for(self.logical_pages - 1)
    }

    /// A page offset in a block.
    pub fn offset_bits(&self) -> u64 {
        bits_for(self.ppb - 1)
    }

    /// The block map (one entry per logical block).
    pub fn block_map_bytes(&self) -> u64 {
        (self.logical_blocks * self.pbn_bits()).div_ceil(8)
    }

    /// The free-block bitmap.
    pub fn free_bitmap_bytes(&self) -> u64 {
        self.total_blocks.div_ceil(8)
    }

    /// A log block's table entry: its block number, its top (0..=N) and two flags
    /// (serial, sequential role).
    pub fn log_entry_bits(&self) -> u64 {
        self.pbn_bits() + bits_for(self.ppb) + 2
    }
}

impl LogMemory {
    /// Bits one log block costs: table entry, page map, valid bitmap, LBN slots, extras.
    pub fn bits_per_log(&self, w: &Widths) -> u64 {
        w.log_entry_bits()
            + w.ppb * self.entry_bits
            + w.ppb
            + self.lbns_per_log * w.lbn_bits()
            + self.extra_bits_per_log
    }

    /// The DRAM of `logs` log blocks and the block map, by component.
    pub fn breakdown(&self, w: &Widths, logs: u64, out: &mut MemoryBreakdown) {
        out.push(("block_map", w.block_map_bytes()));
        out.push(("free_block_bitmap", w.free_bitmap_bytes()));
        out.push((
            "log_block_table",
            (logs * (w.log_entry_bits() + self.extra_bits_per_log)).div_ceil(8),
        ));
        out.push((
            "log_page_maps",
            (logs * w.ppb * self.entry_bits).div_ceil(8),
        ));
        out.push(("log_valid_bitmaps", (logs * w.ppb).div_ceil(8)));
        if self.lbns_per_log > 0 {
            out.push((
                "log_lbn_tables",
                (logs * self.lbns_per_log * w.lbn_bits()).div_ceil(8),
            ));
        }
    }
}

/// The largest log-block pool the spare area allows: every logical block may hold a data
/// block and one free block must remain for a full merge's destination.
pub fn max_log_blocks(layout: &Layout) -> u64 {
    let w = Widths::new(layout);
    w.total_blocks.saturating_sub(w.logical_blocks + 1)
}

/// The pool size `keys` give for scheme `scheme` whose log blocks cost `bits_per_log`,
/// at least `min` (errors name the key that set it).
pub fn pool_size(
    scheme: &str,
    keys: &PoolKeys,
    layout: &Layout,
    bits_per_log: u64,
    min: u32,
) -> Result<u32> {
    let max = max_log_blocks(layout);
    let op_error = |n: u64| {
        Error::config(
            "ftl.over_provisioning",
            format!(
                "{scheme} needs at least {min} log blocks, but the spare area holds {n} (every logical \
                 block needs its data block, and one block is kept free for merges)"
            ),
        )
    };
    if keys.log_blocks > 0 && keys.log_dram_bytes > 0 {
        return Err(Error::config(
            format!("{scheme}.log_dram_bytes"),
            format!("set together with {scheme}.log_blocks: give one of them"),
        ));
    }
    let n = if keys.log_blocks > 0 {
        if keys.log_blocks as u64 > max {
            return Err(Error::config(
                format!("{scheme}.log_blocks"),
                format!(
                    "{} log blocks do not fit the spare area: at most {max} with this geometry and \
                     ftl.over_provisioning",
                    keys.log_blocks
                ),
            ));
        }
        if keys.log_blocks < min {
            return Err(Error::config(
                format!("{scheme}.log_blocks"),
                format!("{scheme} needs at least {min} log blocks"),
            ));
        }
        keys.log_blocks as u64
    } else if keys.log_dram_bytes > 0 {
        let n = (keys.log_dram_bytes * 8 / bits_per_log.max(1)).min(max);
        if n < min as u64 {
            if max < min as u64 {
                return Err(op_error(max));
            }
            return Err(Error::config(
                format!("{scheme}.log_dram_bytes"),
                format!(
                    "{} bytes hold {n} log blocks ({} bits each); {scheme} needs at least {min}",
                    keys.log_dram_bytes, bits_per_log
                ),
            ));
        }
        n
    } else {
        if max < min as u64 {
            return Err(op_error(max));
        }
        max
    };
    Ok(n as u32)
}

/// The victim policies a scheme may choose among for its log blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VictimOrder {
    /// The least recently written log block (BAST's paper).
    Lru,
    /// The log block allocated first (round-robin over the pool, FlashSim's FAST).
    Fifo,
}

/// How the machinery behaves for one scheme.
#[derive(Clone, Copy, Debug)]
pub struct CoreOptions {
    /// Log blocks in the pool.
    pub logs: u32,
    /// Of which sequential logs, at the front of the pool (FAST, KAST, FFTL).
    pub sequential_logs: u32,
    /// LBN slots per log block (the associativity bound K), 0: associativity not tracked.
    pub max_assoc: u32,
    /// The order of the LRU list: touched on every write (LRU) or only when a log block is
    /// first written (FIFO).
    pub victim_order: VictimOrder,
    /// The cause of fill copies, and whether a fill makes the merge that completes the log
    /// block a full one (the block scheme's copy-merge) rather than a partial or switch.
    pub fill_cause: Cause,
    pub fills_are_merge: bool,
}

pub struct Core {
    pub layout: Layout,
    pub ppb: u32,
    shift: Option<u32>,
    pub order: ProgramOrder,
    pub logical_blocks: u32,
    /// LBN -> data block ([`NONE`]: unmapped).
    pub dbm: Vec<u32>,
    /// Logical page -> 1 + the log page holding its newest copy (0: none).
    newest: Vec<u32>,
    /// LBN -> the log block serial for it ([`NONE`]).
    pub serial_of: Vec<u32>,
    /// LBN -> the log block it was last written to while it holds a valid page of it
    /// (associativity-tracking schemes), [`NONE`].
    pub lbn_log: Vec<u32>,
    free: FreeBlocks,
    next_unit: u32,
    pub slots: Vec<Slot>,
    /// Per flash block: its log slot, or [`NONE`].
    slot_of: Vec<u32>,
    /// LBN tables: `max_assoc` entries per slot (LBN, valid pages).
    entry_lbn: Vec<u32>,
    entry_valid: Vec<u32>,
    pub opts: CoreOptions,
    /// Room lists over the random (non-sequential) slots: [`FREE_LIST`] holds free slots
    /// (oldest freed at the tail); list `1 + a` the slots in use with room and `a` live
    /// LBNs (associativity-tracking schemes; otherwise all in list 1).
    room_links: Links,
    room: Vec<List>,
    /// Random slots in use, least recently written (or first allocated) at the tail.
    lru_links: Links,
    lru: List,
    t_copy: u64,
    t_program: u64,
    t_erase: u64,
    clock: u64,
    pub stats: Stats,
    scratch: Vec<u32>,
    /// Pages to move (source, destination) in one [`Flash::move_pages`].
    moves: Vec<(Ppn, Ppn)>,
}

/// The room list of free slots.
pub const FREE_LIST: usize = 0;

impl Core {
    pub fn new(cfg: &SchemeContext, layout: &Layout, opts: CoreOptions) -> Result<Core> {
        let w = Widths::new(layout);
        let ppb = layout.pages_per_block;
        let logical_blocks = w.logical_blocks as u32;
        let logs = opts.logs as usize;
        let mut free = FreeBlocks::all(layout);
        let mut next_unit = 0;
        let mut slots = Vec::with_capacity(logs);
        let mut slot_of = vec![NONE; layout.total_blocks as usize];
        for s in 0..logs {
            let block = free.pop_round_robin(&mut next_unit, 0).ok_or_else(|| {
                Error::config("ftl.over_provisioning", "no block for a log block")
            })?;
            slot_of[block as usize] = s as u32;
            slots.push(Slot::fresh(block));
        }
        let k = opts.max_assoc as usize;
        let lists = 2 + k;
        let mut core = Core {
            layout: *layout,
            ppb,
            shift: ppb.is_power_of_two().then(|| ppb.trailing_zeros()),
            order: cfg.device.nand.program_order,
            logical_blocks,
            dbm: vec![NONE; logical_blocks as usize],
            newest: vec![0; logical_blocks as usize * ppb as usize],
            serial_of: vec![NONE; logical_blocks as usize],
            lbn_log: if k > 0 {
                vec![NONE; logical_blocks as usize]
            } else {
                Vec::new()
            },
            free,
            next_unit,
            slots,
            slot_of,
            entry_lbn: vec![NONE; logs * k],
            entry_valid: vec![0; logs * k],
            opts,
            room_links: Links::new(logs),
            room: vec![List::EMPTY; lists],
            lru_links: Links::new(logs),
            lru: List::EMPTY,
            t_copy: cfg.device.nand.read_latency_ns + cfg.device.nand.program_latency_ns,
            t_program: cfg.device.nand.program_latency_ns,
            t_erase: cfg.device.nand.erase_latency_ns,
            clock: 0,
            stats: Stats::default(),
            scratch: Vec::new(),
            moves: Vec::with_capacity(ppb as usize),
        };
        for s in opts.sequential_logs..opts.logs {
            core.room_push(s, FREE_LIST);
        }
        Ok(core)
    }

    // ----- addresses -----

    #[inline]
    pub fn split(&self, lpa: u32) -> (u32, u32) {
        match self.shift {
            Some(s) => (lpa >> s, lpa & ((1 << s) - 1)),
            None => (lpa / self.ppb, lpa % self.ppb),
        }
    }

    #[inline]
    pub fn lpa(&self, lbn: u32, off: u32) -> u32 {
        lbn * self.ppb + off
    }

    #[inline]
    fn ppn(&self, block: u32, off: u32) -> Ppn {
        block * self.ppb + off
    }

    /// The unit a logical block's data block is allocated on: consecutive LBNs on
    /// consecutive units of the plane-first stripe order.
    #[inline]
    fn home_unit(&self, lbn: u32) -> u32 {
        self.layout.stripe_unit(lbn % self.layout.units)
    }

    /// Log blocks in the pool.
    pub fn logs(&self) -> u32 {
        self.opts.logs
    }

    /// Whether slot `s` is a sequential (SW) log.
    #[inline]
    pub fn is_sequential(&self, s: u32) -> bool {
        s < self.opts.sequential_logs
    }

    // ----- lookups -----

    /// The page holding the newest copy of `lpa`: a log page, else its data-block page if
    /// valid; None if it has no copy (never written, or trimmed).
    #[inline]
    pub fn newest_copy(&self, lpa: u32, flash: &Flash) -> Option<Ppn> {
        let n = self.newest[lpa as usize];
        if n != 0 {
            return Some(n - 1);
        }
        let (lbn, off) = self.split(lpa);
        let pbn = self.dbm[lbn as usize];
        if pbn == NONE {
            return None;
        }
        let ppn = self.ppn(pbn, off);
        flash.is_valid(ppn).then_some(ppn)
    }

    #[inline]
    pub fn read(&self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        match self.newest_copy(lpa, flash) {
            Some(ppn) => Ok(Some(flash.read(ppn, Cause::Host)?)),
            None => Ok(None),
        }
    }

    /// Whether page `off` of `block` can be programmed next under the program order.
    #[inline]
    pub fn programmable(&self, flash: &Flash, block: u32, off: u32) -> bool {
        match self.order {
            ProgramOrder::Sequential => flash.write_pointer(block) == off,
            ProgramOrder::Ascending => flash.write_pointer(block) <= off,
            ProgramOrder::Any => !flash.is_programmed(self.ppn(block, off)),
        }
    }

    /// The live association of `lbn` (its last log block holding a valid page of it).
    #[inline]
    pub fn log_of(&self, lbn: u32) -> Option<u32> {
        let s = *self.lbn_log.get(lbn as usize)?;
        (s != NONE).then_some(s)
    }

    /// Pages a fill of `slot` for `lbn` from its top up to offset `to` (exclusive) would
    /// program: the offsets with a valid copy, or, when the program order forbids
    /// skipping, every offset.
    pub fn fill_cost(&self, s: u32, lbn: u32, to: u32, flash: &Flash) -> u32 {
        let from = self.slots[s as usize].top;
        if to <= from {
            return 0;
        }
        if self.order == ProgramOrder::Sequential {
            return to - from;
        }
        (from..to)
            .filter(|&o| self.newest_copy(self.lpa(lbn, o), flash).is_some())
            .count() as u32
    }

    /// Pages a switch of serial log block `s` would copy (its LBN's valid pages above its
    /// top; a partial merge when non-zero).
    pub fn switch_cost(&self, s: u32, flash: &Flash) -> u32 {
        let slot = self.slots[s as usize];
        if slot.serial == NONE {
            return self.ppb;
        }
        (slot.top..self.ppb)
            .filter(|&o| self.newest_copy(self.lpa(slot.serial, o), flash).is_some())
            .count() as u32
    }

    // ----- block allocation -----

    /// A free block, on `unit` when it has one.
    fn alloc_block(&mut self, unit: u32) -> Result<u32> {
        if self.free.count(unit) > 0 {
            if let Some(b) = self.free.pop(unit) {
                return Ok(b);
            }
        }
        self.free
            .pop_round_robin(&mut self.next_unit, 0)
            .ok_or_else(|| Error::DeviceFull {
                message:
                    "no free block left for a log-block merge (raise ftl.over_provisioning or \
                          lower the log-block count)"
                        .into(),
            })
    }

    fn release_block(&mut self, block: u32) {
        self.free.push(&self.layout, block);
    }

    // ----- room and LRU lists -----

    fn room_push(&mut self, s: u32, list: usize) {
        self.room_links.push_front(&mut self.room[list], s);
        self.slots[s as usize].room_list = list as u32;
    }

    fn room_remove(&mut self, s: u32) {
        let list = self.slots[s as usize].room_list;
        if list != NIL {
            self.room_links.remove(&mut self.room[list as usize], s);
            self.slots[s as usize].room_list = NIL;
        }
    }

    /// Files an in-use random slot in the room list its state says.
    fn room_update(&mut self, s: u32) {
        if self.is_sequential(s) {
            return;
        }
        let slot = self.slots[s as usize];
        let want = if slot.top == 0 {
            FREE_LIST as u32
        } else if slot.top >= self.ppb {
            NIL
        } else if self.opts.max_assoc > 0 {
            1 + slot.assoc.min(self.opts.max_assoc)
        } else {
            1
        };
        if want != slot.room_list {
            self.room_remove(s);
            if want != NIL {
                self.room_push(s, want as usize);
            }
        }
    }

    /// The oldest free random slot.
    pub fn free_slot(&self) -> Option<u32> {
        let t = self.room[FREE_LIST].tail;
        (t != NIL).then_some(t)
    }

    /// The random slot with room and the lowest associativity (free slots first), and that
    /// associativity; ties go to the slot that entered its list first.
    pub fn lowest_assoc_with_room(&self) -> Option<(u32, u32)> {
        for (i, list) in self.room.iter().enumerate() {
            if list.tail != NIL {
                let assoc = if i == FREE_LIST { 0 } else { i as u32 - 1 };
                return Some((list.tail, assoc));
            }
        }
        None
    }

    /// As [`Core::lowest_assoc_with_room`], among the slots that are not serial (KRAFT: a
    /// page of another LBN would end a serial log's seriality).
    pub fn lowest_assoc_nonserial_with_room(&self) -> Option<(u32, u32)> {
        for (i, list) in self.room.iter().enumerate() {
            let mut s = list.tail;
            while s != NIL {
                if self.slots[s as usize].serial == NONE {
                    let assoc = if i == FREE_LIST { 0 } else { i as u32 - 1 };
                    return Some((s, assoc));
                }
                s = self.room_links.prev(s);
            }
        }
        None
    }

    /// Random slots in use, least recently written (or oldest allocated) first.
    pub fn lru_iter(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors((self.lru.tail != NIL).then_some(self.lru.tail), move |&s| {
            let p = self.lru_links.prev(s);
            (p != NIL).then_some(p)
        })
    }

    // ----- LBN tables (associativity) -----

    fn entry_find(&self, s: u32, lbn: u32) -> Option<usize> {
        let k = self.opts.max_assoc as usize;
        let base = s as usize * k;
        let n = self.slots[s as usize].entries as usize;
        (base..base + n).find(|&i| self.entry_lbn[i] == lbn)
    }

    /// A valid page of `lbn` arrived in slot `s`.
    fn entry_add(&mut self, s: u32, lbn: u32) {
        self.entry_add_n(s, lbn, 1);
    }

    /// `n` (at least one) valid pages of `lbn` arrived in slot `s`.
    fn entry_add_n(&mut self, s: u32, lbn: u32, n: u32) {
        if self.opts.max_assoc == 0 {
            return;
        }
        let i = match self.entry_find(s, lbn) {
            Some(i) => i,
            None => {
                let k = self.opts.max_assoc as usize;
                let base = s as usize * k;
                let n = self.slots[s as usize].entries as usize;
                // Reuse a dead entry (no valid page refers to it), or take a new one.
                let i = (base..base + n)
                    .find(|&i| self.entry_valid[i] == 0)
                    .unwrap_or(base + n);
                assert!(
                    i < base + k,
                    "log block {s} would exceed its associativity bound {k}"
                );
                if i == base + n {
                    self.slots[s as usize].entries += 1;
                }
                self.entry_lbn[i] = lbn;
                i
            }
        };
        if self.entry_valid[i] == 0 {
            self.slots[s as usize].assoc += 1;
        }
        self.entry_valid[i] += n;
        self.lbn_log[lbn as usize] = s;
    }

    /// A valid page of `lbn` in slot `s` became invalid.
    fn entry_drop(&mut self, s: u32, lbn: u32) {
        if self.opts.max_assoc == 0 {
            return;
        }
        let i = self
            .entry_find(s, lbn)
            .expect("a valid log page has an LBN entry");
        self.entry_valid[i] -= 1;
        if self.entry_valid[i] == 0 {
            self.slots[s as usize].assoc -= 1;
            if self.lbn_log[lbn as usize] == s {
                self.lbn_log[lbn as usize] = NONE;
            }
            self.room_update(s);
        }
    }

    /// Whether log block `s` holds a valid page of `lbn`.
    pub fn holds(&self, s: u32, lbn: u32) -> bool {
        self.entry_find(s, lbn)
            .is_some_and(|i| self.entry_valid[i] > 0)
    }

    // ----- page placement -----

    /// Invalidates a copy that a newer one replaces (or a trim forgets).
    fn invalidate_copy(&mut self, ppn: Ppn, lbn: u32, flash: &mut Flash) -> Result<()> {
        flash.invalidate(ppn)?;
        self.forget_copy(ppn, lbn, flash);
        Ok(())
    }

    /// The machinery's side of invalidating page `ppn` of `lbn` (the flash's done already):
    /// a log block holds one valid page fewer.
    #[inline]
    fn forget_copy(&mut self, ppn: Ppn, lbn: u32, flash: &Flash) {
        let s = self.slot_of[flash.block_of(ppn) as usize];
        if s != NONE {
            self.slots[s as usize].valid -= 1;
            self.entry_drop(s, lbn);
        }
    }

    /// Forgets the newest copy of `lpa` (before a newer one is placed, or on trim).
    #[inline]
    fn supersede(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        if let Some(old) = self.newest_copy(lpa, flash) {
            let (lbn, _) = self.split(lpa);
            self.invalidate_copy(old, lbn, flash)?;
            self.newest[lpa as usize] = 0;
        }
        Ok(())
    }

    /// `lbn`'s page `off` now has a copy at `ppn` outside its serial log block: that block
    /// is no longer switchable if the copy lies below its top.
    #[inline]
    fn check_serial(&mut self, lbn: u32, off: u32, ppn: Ppn) {
        let t = self.serial_of[lbn as usize];
        if t != NONE {
            let slot = self.slots[t as usize];
            if off < slot.top && ppn != self.ppn(slot.block, off) {
                self.break_serial(t);
            }
        }
    }

    fn break_serial(&mut self, s: u32) {
        let lbn = self.slots[s as usize].serial;
        if lbn != NONE {
            self.serial_of[lbn as usize] = NONE;
            self.slots[s as usize].serial = NONE;
        }
    }

    /// Filler pages (no logical page, invalid at once) in `block` from its write pointer up
    /// to `off`, where the program order forbids skipping pages.
    #[inline]
    fn pad(&mut self, block: u32, off: u32, cause: Cause, flash: &mut Flash) -> Result<()> {
        let from = flash.write_pointer(block);
        if self.order == ProgramOrder::Sequential && from < off {
            flash.program_fillers(block, from, off, Oob { lpa: NONE, seq: 0 }, cause)?;
            self.stats.filler_pages += (off - from) as u64;
        }
        Ok(())
    }

    /// Copies a valid page (counted under `cause`) and invalidates the source.
    fn copy_page(
        &mut self,
        src: Ppn,
        dst: Ppn,
        lbn: u32,
        cause: Cause,
        flash: &mut Flash,
    ) -> Result<()> {
        flash.move_pages(&[(src, dst)], cause)?;
        self.forget_copy(src, lbn, flash);
        self.count_copies(1, cause, flash);
        Ok(())
    }

    fn count_copies(&mut self, n: u64, cause: Cause, flash: &mut Flash) {
        self.stats.copies += n;
        flash.stats.gc_pages_moved += n;
        if let Some(k) = merge_kind(cause) {
            self.stats.merge_pages[k] += n;
        }
    }

    /// Moves the newest copy of each of `lbn`'s pages at offsets `from..to` that has one to
    /// the same offset of `block` under `cause`, in offset order, and returns how many: what
    /// `pad` and `copy_page` would do page by page, with the data block's valid pages moved a
    /// stretch at a time ([`Flash::move_valid`]) between the copies in log blocks. Leaves in
    /// [`Core::moves`] the moves whose source the caller must forget ([`Core::forget_copy`]:
    /// at least those in log blocks), in offset order.
    fn move_newest(
        &mut self,
        lbn: u32,
        from: u32,
        to: u32,
        block: u32,
        cause: Cause,
        flash: &mut Flash,
    ) -> Result<u32> {
        let data = self.dbm[lbn as usize];
        // The pages of a data block that is a log block's need forgetting: page by page.
        if data != NONE && self.slot_of[data as usize] != NONE {
            self.gather(lbn, from, to, block, flash);
            self.move_gathered(block, cause, flash)?;
            return Ok(self.moves.len() as u32);
        }
        self.moves.clear();
        let base = self.lpa(lbn, 0) as usize;
        let mut moved = 0;
        let mut start = from;
        if self.newest[base + from as usize..base + to as usize]
            .iter()
            .any(|&n| n != 0)
        {
            for o in from..to {
                let n = self.newest[base + o as usize];
                if n != 0 {
                    if data != NONE {
                        moved += self.move_stretch(data, block, start, o, cause, flash)?;
                    }
                    let m = (n - 1, self.ppn(block, o));
                    self.pad(block, o, cause, flash)?;
                    flash.move_pages(&[m], cause)?;
                    self.moves.push(m);
                    moved += 1;
                    start = o + 1;
                }
            }
        }
        if data != NONE {
            moved += self.move_stretch(data, block, start, to, cause, flash)?;
        }
        Ok(moved)
    }

    /// The valid pages of `data` at offsets `from..to` moved to the same offsets of `block`
    /// ([`Flash::move_valid`]); where the order forbids skipping, each run of consecutive
    /// pages after the fillers that `pad` would program before its first.
    fn move_stretch(
        &mut self,
        data: u32,
        block: u32,
        from: u32,
        to: u32,
        cause: Cause,
        flash: &mut Flash,
    ) -> Result<u32> {
        if self.order != ProgramOrder::Sequential {
            return Ok(flash.move_valid(data, block, from, to, cause)?);
        }
        let mut moved = 0;
        let first = self.ppn(data, 0);
        let mut at = from;
        loop {
            let next = flash.valid_pages_in(data, at, to).next();
            let Some(p) = next else { break };
            // The run of consecutive valid pages from `p`.
            let start = p - first;
            let mut end = start + 1;
            for q in flash.valid_pages_in(data, end, to) {
                if q - first != end {
                    break;
                }
                end += 1;
            }
            self.pad(block, start, cause, flash)?;
            moved += flash.move_valid(data, block, start, end, cause)?;
            at = end;
        }
        Ok(moved)
    }

    /// Sets [`Core::moves`] to the newest copy of each of `lbn`'s pages at offsets
    /// `from..to` that has one, with the page of that offset in `block` as its destination
    /// (block 0: the offset alone).
    fn gather(&mut self, lbn: u32, from: u32, to: u32, block: u32, flash: &Flash) {
        self.moves.clear();
        let data = self.dbm[lbn as usize];
        let base = self.lpa(lbn, 0) as usize;
        let logged = &self.newest[base + from as usize..base + to as usize];
        if logged.iter().all(|&n| n == 0) {
            // No copy in a log block: the data block's valid pages, found a word at a time.
            if data != NONE {
                let (first, data_first) = (self.ppn(block, 0), self.ppn(data, 0));
                self.moves.extend(
                    flash
                        .valid_pages_in(data, from, to)
                        .map(|p| (p, p - data_first + first)),
                );
            }
            return;
        }
        for o in from..to {
            let n = self.newest[base + o as usize];
            let src = if n != 0 {
                n - 1
            } else if data != NONE && flash.is_valid(self.ppn(data, o)) {
                self.ppn(data, o)
            } else {
                continue;
            };
            self.moves.push((src, self.ppn(block, o)));
        }
    }

    /// Moves the pages of [`Core::moves`] (their destinations in `block`, at ascending
    /// offsets) under `cause`: one [`Flash::move_pages`] per stretch that needs no filler
    /// before it, the fillers between (sequential order): the operations, in their order,
    /// of a `pad` and a `copy_page` per page. The machinery's bookkeeping is the caller's
    /// ([`Core::forget_copy`] for each source, [`Core::count_copies`]).
    fn move_gathered(&mut self, block: u32, cause: Cause, flash: &mut Flash) -> Result<()> {
        let moves = std::mem::take(&mut self.moves);
        let result = (|| {
            let mut start = 0;
            if self.order == ProgramOrder::Sequential {
                let mut next = flash.write_pointer(block);
                for (k, &(_, dst)) in moves.iter().enumerate() {
                    let off = flash.page_offset(dst);
                    if off > next {
                        flash.move_pages(&moves[start..k], cause)?;
                        start = k;
                        self.pad(block, off, cause, flash)?;
                    }
                    next = off + 1;
                }
            }
            flash.move_pages(&moves[start..], cause)?;
            Ok(())
        })();
        self.moves = moves;
        result
    }

    /// Bookkeeping of a valid copy of `lpa` just programmed at position `p` of slot `s`.
    fn landed(&mut self, s: u32, lpa: u32, p: u32) {
        let (lbn, off) = self.split(lpa);
        let ppn = self.ppn(self.slots[s as usize].block, p);
        let was_free = self.slots[s as usize].is_free();
        let t = self.serial_of[lbn as usize];
        if t != NONE && t != s && self.slots[t as usize].valid == 0 {
            // A serial log block left with no valid page serves the LBN no more.
            self.break_serial(t);
        }
        let serial = self.slots[s as usize].serial;
        if was_free {
            if p == off && self.serial_of[lbn as usize] == NONE {
                self.slots[s as usize].serial = lbn;
                self.serial_of[lbn as usize] = s;
            }
        } else if serial != NONE && (serial != lbn || p != off) {
            self.break_serial(s);
        }
        self.clock += 1;
        let slot = &mut self.slots[s as usize];
        slot.top = p + 1;
        slot.valid += 1;
        slot.stamp = self.clock;
        self.newest[lpa as usize] = ppn + 1;
        self.entry_add(s, lbn);
        self.check_serial(lbn, off, ppn);
        if !self.is_sequential(s) {
            if !self.slots[s as usize].in_lru {
                self.lru_links.push_front(&mut self.lru, s);
                self.slots[s as usize].in_lru = true;
            } else if self.opts.victim_order == VictimOrder::Lru {
                self.lru_links.move_to_front(&mut self.lru, s);
            }
            self.room_update(s);
        }
    }

    /// [`Core::landed`] of `n` pages of `lbn` at their own offsets of `s`, serial for `lbn`
    /// and in use, the last at offset `last`, once the index points at them: such pages
    /// leave the slot serial and at the head of the LRU list, so that only its counts
    /// change; its room list, which only the last page can change, is the caller's to update
    /// ([`Core::room_update`]).
    #[inline]
    fn landed_serial(&mut self, s: u32, lbn: u32, last: u32, n: u32) {
        debug_assert!(self.serial_of[lbn as usize] == s && !self.slots[s as usize].is_free());
        self.clock += n as u64;
        let slot = &mut self.slots[s as usize];
        slot.top = last + 1;
        slot.valid += n;
        slot.stamp = self.clock;
        self.entry_add_n(s, lbn, n);
    }

    /// Writes `lpa` in place in its data block if that page is still erased and
    /// programmable (allocating the data block on the LBN's first write). Returns whether
    /// it did.
    pub fn write_in_place(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<bool> {
        let (lbn, off) = self.split(lpa);
        let mut pbn = self.dbm[lbn as usize];
        if pbn == NONE {
            if self.order == ProgramOrder::Sequential && off != 0 {
                return Ok(false);
            }
            pbn = self.alloc_block(self.home_unit(lbn))?;
            self.dbm[lbn as usize] = pbn;
        } else if !self.programmable(flash, pbn, off) {
            return Ok(false);
        }
        self.supersede(lpa, flash)?;
        let ppn = self.ppn(pbn, off);
        flash.program(ppn, Oob { lpa, seq }, &[], Cause::Host)?;
        self.check_serial(lbn, off, ppn);
        self.stats.in_place_writes += 1;
        Ok(true)
    }

    /// Appends `lpa` at the top of log block `s` (which must have room).
    pub fn append(&mut self, s: u32, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let p = self.slots[s as usize].top;
        debug_assert!(p < self.ppb, "append to a full log block");
        self.supersede(lpa, flash)?;
        let ppn = self.ppn(self.slots[s as usize].block, p);
        flash.program(ppn, Oob { lpa, seq }, &[], Cause::Host)?;
        self.landed(s, lpa, p);
        self.stats.log_writes += 1;
        Ok(())
    }

    /// Places `lpa` at its own offset in log block `s` (at or above its top), first filling
    /// the gap with the valid copies of the pages in between (and fillers where the order
    /// forbids skipping), so that the block stays serial.
    pub fn place_serial(&mut self, s: u32, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let (lbn, off) = self.split(lpa);
        let block = self.slots[s as usize].block;
        debug_assert!(off >= self.slots[s as usize].top);
        let cause = self.opts.fill_cause;
        let top = self.slots[s as usize].top;
        let n = self.move_newest(lbn, top, off, block, cause, flash)?;
        if n > 0 {
            // In offset order, as page by page: each page's source forgotten (the data
            // block's pages need nothing), then the page landed. The moved pages are the
            // valid ones of the gap, which was erased.
            let moves = std::mem::take(&mut self.moves);
            let mut next = moves.iter().peekable();
            let base = self.lpa(lbn, 0) as usize;
            let (mut serial, mut last) = (0, 0);
            for (k, dst) in flash.valid_pages_in(block, top, off).enumerate() {
                if let Some(&(src, _)) = next.next_if(|m| m.1 == dst) {
                    self.forget_copy(src, lbn, flash);
                }
                let o = flash.page_offset(dst);
                if k > 0 && self.serial_of[lbn as usize] == s {
                    // Landed once the run is over (`landed_serial`).
                    self.newest[base + o as usize] = dst + 1;
                    (serial, last) = (serial + 1, o);
                } else {
                    self.landed(s, self.lpa(lbn, o), o);
                }
            }
            if serial > 0 {
                self.landed_serial(s, lbn, last, serial);
            }
            self.room_update(s);
            self.moves = moves;
            self.count_copies(n as u64, cause, flash);
            self.slots[s as usize].filled += n;
            self.stats.fill_pages += n as u64;
        }
        self.pad(block, off, Cause::Host, flash)?;
        self.supersede(lpa, flash)?;
        let ppn = self.ppn(block, off);
        flash.program(ppn, Oob { lpa, seq }, &[], Cause::Host)?;
        // The fillers advanced the block: a fresh slot's first page is still its own.
        self.landed(s, lpa, off);
        self.stats.log_writes += 1;
        Ok(())
    }

    /// Forgets `lpa` (TRIM).
    pub fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        self.supersede(lpa, flash)
    }

    // ----- merges -----

    /// Starts timing a merge operation.
    fn begin_op(&mut self, s: u32, flash: &mut Flash) -> OpMark {
        flash.chain();
        let slot = self.slots[s as usize];
        let ppb = self.ppb as f64;
        self.stats.util_written += slot.top as f64 / ppb;
        self.stats.util_valid += slot.valid as f64 / ppb;
        OpMark {
            start_ns: flash.cursor(),
            copies: self.stats.copies,
            erases: self.stats.erases,
            fillers: self.stats.filler_pages,
        }
    }

    fn end_op(&mut self, mark: OpMark, flash: &mut Flash) {
        flash.chain();
        let st = &mut self.stats;
        let time = flash.cursor().saturating_sub(mark.start_ns);
        let cost = (st.copies - mark.copies) * self.t_copy
            + (st.filler_pages - mark.fillers) * self.t_program
            + (st.erases - mark.erases) * self.t_erase;
        st.merge_ops += 1;
        st.merge_time_sum_ns += time;
        st.merge_time_max_ns = st.merge_time_max_ns.max(time);
        st.merge_cost_sum_ns += cost;
        st.merge_cost_max_ns = st.merge_cost_max_ns.max(cost);
        flash.stats.gc_invocations += 1;
    }

    fn erase(&mut self, block: u32, cause: Cause, flash: &mut Flash) -> Result<()> {
        flash.erase(block, cause)?;
        self.stats.erases += 1;
        Ok(())
    }

    /// Empties slot `s` whose block was erased in place (it keeps it) or handed over as a
    /// data block (it takes `new_block`).
    fn reset_slot(&mut self, s: u32, new_block: Option<u32>) {
        let k = self.opts.max_assoc as usize;
        let base = s as usize * k;
        let n = self.slots[s as usize].entries as usize;
        for i in base..base + n {
            let lbn = self.entry_lbn[i];
            if self.lbn_log[lbn as usize] == s {
                self.lbn_log[lbn as usize] = NONE;
            }
            self.entry_valid[i] = 0;
            self.entry_lbn[i] = NONE;
        }
        self.break_serial(s);
        if self.slots[s as usize].in_lru {
            self.lru_links.remove(&mut self.lru, s);
        }
        let old = self.slots[s as usize];
        let block = match new_block {
            Some(b) => {
                self.slot_of[old.block as usize] = NONE;
                self.slot_of[b as usize] = s;
                b
            }
            None => old.block,
        };
        self.slots[s as usize] = Slot {
            room_list: old.room_list,
            ..Slot::fresh(block)
        };
        self.room_update(s);
    }

    /// Whether serial log block `s` can become its LBN's data block: below its top, every
    /// valid copy of the LBN's pages is its own page of that offset.
    fn switchable(&self, s: u32, flash: &Flash) -> bool {
        let slot = self.slots[s as usize];
        if slot.serial == NONE {
            return false;
        }
        self.serial_below(slot.block, slot.top, slot.serial, flash)
    }

    /// Whether, below `top`, every valid copy of `lbn`'s pages is `block`'s own page of that
    /// offset.
    fn serial_below(&self, block: u32, top: u32, lbn: u32, flash: &Flash) -> bool {
        (0..top).all(|o| {
            self.newest_copy(self.lpa(lbn, o), flash)
                .is_none_or(|p| p == self.ppn(block, o))
        })
    }

    /// Switch or partial merge of serial log block `s`: its LBN's valid pages above its top
    /// are copied in, it becomes the data block, the old data block is erased, and the slot
    /// takes a fresh block.
    fn merge_serial(&mut self, s: u32, flash: &mut Flash) -> Result<()> {
        let slot = self.slots[s as usize];
        let lbn = slot.serial;
        let block = slot.block;
        let full_class = self.opts.fills_are_merge && slot.filled > 0;
        let copy_cause = if full_class {
            Cause::MergeFull
        } else {
            Cause::MergePartial
        };
        let copies = self.fill_serial(block, slot.top, lbn, copy_cause, flash)?;
        let kind = if full_class {
            FULL
        } else if copies > 0 {
            PARTIAL
        } else {
            SWITCH
        };
        let unit = self.adopt_data_block(block, self.ppb, lbn, MERGE_CAUSES[kind], flash)?;
        let fresh = self.alloc_block(unit)?;
        self.reset_slot(s, Some(fresh));
        self.stats.merges[kind] += 1;
        Ok(())
    }

    /// The bookkeeping of `n` pages of `lbn` moved ([`Core::move_newest`]) into what
    /// becomes its data block: the sources of [`Core::moves`] forgotten, no copy in a log
    /// block any more.
    fn moved_to_data_block(&mut self, lbn: u32, n: u32, cause: Cause, flash: &mut Flash) {
        let moves = std::mem::take(&mut self.moves);
        for &(src, dst) in &moves {
            self.forget_copy(src, lbn, flash);
            let l = self.lpa(lbn, flash.page_offset(dst));
            self.newest[l as usize] = 0;
        }
        self.count_copies(n as u64, cause, flash);
        self.moves = moves;
    }

    /// Copies `lbn`'s valid pages at offsets `top..` into their offsets of `block` (serial for
    /// `lbn` below `top`) under `cause`; returns how many.
    fn fill_serial(
        &mut self,
        block: u32,
        top: u32,
        lbn: u32,
        cause: Cause,
        flash: &mut Flash,
    ) -> Result<u32> {
        let n = self.move_newest(lbn, top, self.ppb, block, cause, flash)?;
        self.moved_to_data_block(lbn, n, cause, flash);
        Ok(n)
    }

    /// `block`, holding every valid page of `lbn` (its own ones below `top`), becomes its
    /// data block: the old one is erased under `cause` and freed. Returns the old data
    /// block's unit (else `block`'s).
    fn adopt_data_block(
        &mut self,
        block: u32,
        top: u32,
        lbn: u32,
        cause: Cause,
        flash: &mut Flash,
    ) -> Result<u32> {
        // The block's own pages are data pages from now on.
        let base = self.lpa(lbn, 0) as usize;
        self.newest[base..base + top as usize].fill(0);
        let old = self.dbm[lbn as usize];
        let unit = if old != NONE {
            self.erase(old, cause, flash)?;
            self.release_block(old);
            self.layout.unit_of_block(old)
        } else {
            self.layout.unit_of_block(block)
        };
        self.dbm[lbn as usize] = block;
        Ok(unit)
    }

    /// Full merge of `lbn`: the newest copy of each of its pages, wherever it is, copied to a
    /// fresh block at its offset; the old data block erased.
    fn merge_full(&mut self, lbn: u32, flash: &mut Flash) -> Result<()> {
        let t = self.serial_of[lbn as usize];
        if t != NONE {
            // Its serial log block loses its pages: it is no longer switchable.
            self.break_serial(t);
        }
        let old = self.dbm[lbn as usize];
        let base = self.lpa(lbn, 0) as usize;
        let logged = self.newest[base..base + self.ppb as usize]
            .iter()
            .any(|&n| n != 0);
        let mut dst = NONE;
        // A page has a copy to move: in a log block, or valid in the data block.
        if logged || (old != NONE && flash.valid_count(old) > 0) {
            let unit = if old != NONE {
                self.layout.unit_of_block(old)
            } else {
                self.home_unit(lbn)
            };
            dst = self.alloc_block(unit)?;
            let n = self.move_newest(lbn, 0, self.ppb, dst, Cause::MergeFull, flash)?;
            self.moved_to_data_block(lbn, n, Cause::MergeFull, flash);
        }
        if old != NONE {
            self.erase(old, Cause::MergeFull, flash)?;
            self.release_block(old);
        }
        self.dbm[lbn as usize] = dst;
        self.stats.merges[FULL] += 1;
        Ok(())
    }

    /// Reclaims log block `s` (one merge operation): erased if it holds no valid page,
    /// switched (or partially merged) if it is serial and switchable, else every logical
    /// block with a valid page in it is merged (by its serial log block if it has one, else
    /// by a full merge) and it is erased. The slot is free afterwards.
    pub fn reclaim(&mut self, s: u32, flash: &mut Flash) -> Result<()> {
        let mark = self.begin_op(s, flash);
        let slot = self.slots[s as usize];
        let result = self.reclaim_inner(s, slot, flash);
        self.end_op(mark, flash);
        result
    }

    fn reclaim_inner(&mut self, s: u32, slot: Slot, flash: &mut Flash) -> Result<()> {
        if slot.valid == 0 {
            self.stats.assoc_hist[0] += 1;
            if !slot.is_free() {
                self.erase(slot.block, Cause::Gc, flash)?;
                self.stats.dead_log_erases += 1;
            }
            self.reset_slot(s, None);
            return Ok(());
        }
        let mut lbns = std::mem::take(&mut self.scratch);
        self.live_lbns(s, slot, flash, &mut lbns);
        self.stats.assoc_hist[assoc_bucket(lbns.len() as u32)] += 1;
        // Serial log blocks are switchable by construction: a placement that would make one
        // unswitchable breaks its seriality at once (`check_serial`, `landed`).
        let result = (|| {
            if slot.serial != NONE {
                debug_assert!(self.switchable(s, flash), "serial log block {s}");
                return self.merge_serial(s, flash);
            }
            for &lbn in lbns.iter() {
                let t = self.serial_of[lbn as usize];
                if t != NONE && t != s {
                    debug_assert!(self.switchable(t, flash), "serial log block {t}");
                    self.merge_serial(t, flash)?;
                } else {
                    self.merge_full(lbn, flash)?;
                }
            }
            debug_assert_eq!(self.slots[s as usize].valid, 0);
            self.erase(slot.block, Cause::MergeFull, flash)?;
            self.reset_slot(s, None);
            Ok(())
        })();
        self.scratch = lbns;
        result
    }

    /// The logical blocks with a valid page in log block `s` (holding `slot`, which has
    /// one), in ascending order: a serial log block's own, else those of its LBN table
    /// (associativity-tracking schemes), else those of its pages' OOB headers.
    fn live_lbns(&self, s: u32, slot: Slot, flash: &Flash, out: &mut Vec<u32>) {
        out.clear();
        if slot.serial != NONE {
            out.push(slot.serial);
        } else if self.opts.max_assoc > 0 {
            let base = s as usize * self.opts.max_assoc as usize;
            let entries = base..base + slot.entries as usize;
            out.extend(
                entries
                    .filter(|&i| self.entry_valid[i] > 0)
                    .map(|i| self.entry_lbn[i]),
            );
            out.sort_unstable();
        } else {
            out.extend(
                flash
                    .valid_pages(slot.block)
                    .map(|p| self.split(flash.oob(p).lpa).0),
            );
            out.sort_unstable();
            out.dedup();
        }
        debug_assert!({
            let mut scanned: Vec<u32> = flash
                .valid_pages(slot.block)
                .map(|p| self.split(flash.oob(p).lpa).0)
                .collect();
            scanned.sort_unstable();
            scanned.dedup();
            scanned == *out
        });
    }

    /// FFTL's cleaning: log block `s`'s valid pages copied, in order, to the start of a
    /// fresh block, which replaces it; the old block is erased. No data block changes.
    pub fn compact(&mut self, s: u32, flash: &mut Flash) -> Result<()> {
        let mark = self.begin_op(s, flash);
        let result = self.compact_inner(s, flash);
        self.end_op(mark, flash);
        result
    }

    fn compact_inner(&mut self, s: u32, flash: &mut Flash) -> Result<()> {
        let old = self.slots[s as usize];
        self.stats.assoc_hist[assoc_bucket(old.assoc)] += 1;
        self.stats.cleanings += 1;
        let fresh = self.alloc_block(self.layout.unit_of_block(old.block))?;
        let mut moves = std::mem::take(&mut self.moves);
        moves.clear();
        let first = self.ppn(fresh, 0);
        moves.extend(flash.valid_pages(old.block).zip(first..));
        let result = flash.move_pages(&moves, Cause::Gc);
        if result.is_ok() {
            for &(_, dst) in &moves {
                self.newest[flash.oob(dst).lpa as usize] = dst + 1;
            }
        }
        let p = moves.len() as u32;
        self.moves = moves;
        result?;
        self.count_copies(p as u64, Cause::Gc, flash);
        self.stats.cleaning_pages += p as u64;
        self.break_serial(s);
        self.erase(old.block, Cause::Gc, flash)?;
        self.release_block(old.block);
        self.slot_of[old.block as usize] = NONE;
        self.slot_of[fresh as usize] = s;
        let slot = &mut self.slots[s as usize];
        slot.block = fresh;
        slot.top = p;
        slot.filled = 0;
        debug_assert_eq!(slot.valid, p);
        if p == 0 {
            // Nothing was valid: the slot is free again (its LBN table is empty).
            self.reset_slot(s, None);
        } else {
            self.room_update(s);
        }
        Ok(())
    }

    // ----- victims -----

    /// The most-filled serial log block in use (ties: the least recently written).
    pub fn most_filled_serial(&self) -> Option<u32> {
        let mut best: Option<(u32, u32)> = None;
        for s in self.lru_iter() {
            let slot = self.slots[s as usize];
            if slot.serial != NONE && best.is_none_or(|(top, _)| slot.top > top) {
                best = Some((slot.top, s));
            }
        }
        best.map(|(_, s)| s)
    }

    /// The random log block in use whose merge costs least: fewest live LBNs, then fewest
    /// valid pages (ties: the least recently written).
    pub fn least_merge_cost(&self) -> Option<u32> {
        let mut best: Option<((u32, u32), u32)> = None;
        for s in self.lru_iter() {
            let slot = self.slots[s as usize];
            let key = (slot.assoc, slot.valid);
            if best.is_none_or(|(k, _)| key < k) {
                best = Some((key, s));
            }
        }
        best.map(|(_, s)| s)
    }

    /// The least recently written (or, with [`VictimOrder::Fifo`], oldest) random log
    /// block in use.
    pub fn lru_victim(&self) -> Option<u32> {
        self.lru_iter().next()
    }

    // ----- sequential logs (FAST, KAST, FFTL) -----

    /// The sequential log serving `lbn`, if any.
    fn sequential_of(&self, lbn: u32) -> Option<u32> {
        (0..self.opts.sequential_logs).find(|&s| self.slots[s as usize].owner == lbn)
    }

    /// FAST's sequential-write path (spec section 4.2), with `sequential_logs` such logs: a
    /// write at page offset 0 starts a sequential log for its LBN (reclaiming that LBN's
    /// previous one, else a free one, else the least recently written one); a write of the
    /// LBN that continues it in order appends to it; any other write of its LBN closes it
    /// (switch, partial or, if broken, full merge) and goes to the random logs. Returns
    /// whether the write was served here.
    pub fn sequential_write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<bool> {
        if self.opts.sequential_logs == 0 {
            return Ok(false);
        }
        let (lbn, off) = self.split(lpa);
        if let Some(s) = self.sequential_of(lbn) {
            let slot = self.slots[s as usize];
            if off != 0 && off == slot.top && slot.top < self.ppb && slot.serial == lbn {
                self.append(s, lpa, seq, flash)?;
                return Ok(true);
            }
            self.reclaim(s, flash)?;
            if off != 0 {
                return Ok(false);
            }
            self.start_sequential(s, lbn, lpa, seq, flash)?;
            return Ok(true);
        }
        if off != 0 {
            return Ok(false);
        }
        let s = (0..self.opts.sequential_logs)
            .find(|&s| self.slots[s as usize].is_free())
            .unwrap_or_else(|| {
                (0..self.opts.sequential_logs)
                    .min_by_key(|&s| self.slots[s as usize].stamp)
                    .expect("at least one sequential log")
            });
        if !self.slots[s as usize].is_free() {
            self.reclaim(s, flash)?;
        }
        self.start_sequential(s, lbn, lpa, seq, flash)?;
        Ok(true)
    }

    fn start_sequential(
        &mut self,
        s: u32,
        lbn: u32,
        lpa: u32,
        seq: u64,
        flash: &mut Flash,
    ) -> Result<()> {
        let t = self.serial_of[lbn as usize];
        if t != NONE && t != s {
            // Another log is serial for the LBN: the new sequential log supersedes it.
            self.break_serial(t);
        }
        self.slots[s as usize].owner = lbn;
        self.append(s, lpa, seq, flash)
    }

    // ----- report -----

    pub fn reset_counters(&mut self) {
        self.stats = Stats::default();
    }

    /// Counters shared by every log-block scheme.
    pub fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        let st = &self.stats;
        let ops = st.merge_ops.max(1) as f64;
        out.push(("log_blocks", self.opts.logs as f64));
        out.push(("sequential_logs", self.opts.sequential_logs as f64));
        out.push(("max_associativity", self.opts.max_assoc as f64));
        out.push(("in_place_writes", st.in_place_writes as f64));
        out.push(("log_writes", st.log_writes as f64));
        out.push(("merges_switch", st.merges[SWITCH] as f64));
        out.push(("merges_partial", st.merges[PARTIAL] as f64));
        out.push(("merges_full", st.merges[FULL] as f64));
        out.push(("merge_pages_switch", st.merge_pages[SWITCH] as f64));
        out.push(("merge_pages_partial", st.merge_pages[PARTIAL] as f64));
        out.push(("merge_pages_full", st.merge_pages[FULL] as f64));
        out.push(("fill_pages", st.fill_pages as f64));
        out.push(("filler_pages", st.filler_pages as f64));
        out.push(("merge_ops", st.merge_ops as f64));
        out.push(("dead_log_erases", st.dead_log_erases as f64));
        out.push(("cleanings", st.cleanings as f64));
        out.push(("cleaning_pages", st.cleaning_pages as f64));
        out.push(("merge_time_ns_mean", st.merge_time_sum_ns as f64 / ops));
        out.push(("merge_time_ns_max", st.merge_time_max_ns as f64));
        out.push(("merge_cost_ns_mean", st.merge_cost_sum_ns as f64 / ops));
        out.push(("merge_cost_ns_max", st.merge_cost_max_ns as f64));
        out.push(("log_utilisation_at_merge", st.util_written / ops));
        out.push(("log_valid_at_merge", st.util_valid / ops));
        for (name, &count) in ASSOC_NAMES.iter().zip(&st.assoc_hist) {
            out.push((name, count as f64));
        }
    }

    /// Checks the machinery's invariants against the flash (tests).
    #[cfg(test)]
    pub fn check(&self, flash: &Flash) {
        if let Err(e) = self.check_invariants(flash) {
            panic!("{e}");
        }
    }

    /// The machinery's invariants against the flash: every slot's block, counts, top,
    /// serial role and associativity; every valid page either in a log block (found through
    /// the index) or in its logical block's data block at its own offset.
    pub fn check_invariants(&self, flash: &Flash) -> std::result::Result<(), String> {
        let ensure = |ok: bool, what: String| if ok { Ok(()) } else { Err(what) };
        for (s, slot) in self.slots.iter().enumerate() {
            ensure(
                self.slot_of[slot.block as usize] == s as u32,
                format!("slot {s}: block {} not indexed", slot.block),
            )?;
            ensure(
                flash.valid_count(slot.block) == slot.valid,
                format!(
                    "slot {s}: {} valid pages counted, {} on flash",
                    slot.valid,
                    flash.valid_count(slot.block)
                ),
            )?;
            if self.order != ProgramOrder::Any {
                ensure(
                    flash.write_pointer(slot.block) == slot.top,
                    format!(
                        "slot {s}: top {} at write pointer {}",
                        slot.top,
                        flash.write_pointer(slot.block)
                    ),
                )?;
            }
            if slot.serial != NONE {
                ensure(
                    self.serial_of[slot.serial as usize] == s as u32,
                    format!("slot {s}: serial for {} unindexed", slot.serial),
                )?;
                ensure(
                    self.switchable(s as u32, flash),
                    format!("serial slot {s} not switchable"),
                )?;
            }
            if self.opts.max_assoc > 0 {
                let mut lbns: Vec<u32> = flash
                    .valid_pages(slot.block)
                    .map(|p| self.split(flash.oob(p).lpa).0)
                    .collect();
                lbns.sort_unstable();
                lbns.dedup();
                ensure(
                    lbns.len() as u32 == slot.assoc && slot.assoc <= self.opts.max_assoc,
                    format!(
                        "slot {s}: associativity {} for {} logical blocks",
                        slot.assoc,
                        lbns.len()
                    ),
                )?;
            }
        }
        for block in 0..self.layout.total_blocks {
            let in_log = self.slot_of[block as usize] != NONE;
            for p in flash.valid_pages(block) {
                let lpa = flash.oob(p).lpa;
                if lpa == NONE && !in_log {
                    // A page outside the machinery (FFTL's packed pages).
                    continue;
                }
                let (lbn, off) = self.split(lpa);
                let found = if in_log {
                    self.newest[lpa as usize] == p + 1
                } else {
                    self.newest[lpa as usize] == 0
                        && self.dbm[lbn as usize] == block
                        && flash.page_offset(p) == off
                };
                ensure(
                    found,
                    format!("valid page {p} of logical page {lpa} is not where the map says"),
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
