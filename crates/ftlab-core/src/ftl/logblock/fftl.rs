//! FFTL, the fast responsive FTL (Kwon, Cho, Chung, IEEE Transactions on Consumer
//! Electronics 60(1):52-59, 2014), as far as the FTL-algorithms spec (section 4.4) describes
//! it: the paper's text is not available, only three verified points, and this module
//! implements those on KAST's machinery.
//!
//! 1. *Cleaning before merging.* When no random log block can take a write (every one is
//!    full or at the associativity bound K), FFTL first reclaims a log block that needs no
//!    merge: one with no valid page is erased; else the one with the fewest valid pages, if
//!    at most `fftl.clean_max_fraction` of a block, is *cleaned*: its valid pages are
//!    compacted into a fresh block, which replaces it with its associations unchanged, and
//!    the old block is erased. Cleaning copies v pages and erases one block, where merging a
//!    log block of associativity A copies up to A x N pages and erases A + 1 blocks. Only
//!    when no log block is that cheap is the least-cost one merged, as in KAST.
//! 2. *Associativity balancing*: a write of a logical block with no log block of its own goes
//!    to the log block of lowest associativity (KAST's rule), so that no merge is much
//!    dearer than the others; associativity is bounded by K (`fftl.max_associativity`).
//! 3. *Sub-page (sector) packing* (`fftl.sector_packing`, on by default, only without a
//!    write buffer, whose slots are pages): the simulator hands FFTL a partial-page write as
//!    its 512 B sectors ([`Ftl::write_sectors`]) instead of a read-modify-write. They go to a
//!    packing buffer of one page in DRAM (a sector still there is rewritten in place; reads
//!    of it are served from DRAM), programmed when full as one page of the *packing area*
//!    (one page program, each sector's identity in its spare area:
//!    [`Flash::program_sectors`]), padded at the end of a run. A sector-level map gives
//!    each packed sector's place. Whole-page writes and trims supersede a page's packed
//!    sectors. A cleaning or a merge that copies a page with packed sectors *absorbs* them:
//!    the controller reads the packed pages (counted under the cleaning's or the merge's
//!    cause) and programs the gathered page in the copy's place (no extra program). When the
//!    area's head block is full, the area block with the fewest live sectors is reclaimed:
//!    each logical page with a live sector in it is *folded* (its newest sectors gathered
//!    from its page copy, packed pages and the buffer, one read per distinct page, and
//!    written whole through the page path, under `gc`), then the block is erased (`gc`).
//!    Reads gather a page's sectors the same way ([`Ftl::read_sectors`]).
//!
//! Sequential runs use sequential log blocks as in FAST and KAST. Choices not in the
//! spec: the cleaning threshold (default 1/4 of a block: cleaning then costs at most a
//! quarter of the copies of one logical block's full merge, and frees at least 3/4 of a
//! block for new writes), and that cleaning only considers log blocks that can take the
//! write afterwards (below K, or already holding the write's logical block); for packing,
//! the separate packing area (`fftl.packing_blocks` of the pool, default an eighth, at
//! least one), its greedy reclaim and the folds (the paper packs into its log blocks; its
//! policy for them is not known).
//!
//! A device that keeps data (`serve`, recovery) refuses packing: its page store and the
//! recovery scan hold one identity per page, so the sector map could not be rebuilt.
//!
//! DRAM (by bits): as KAST's, the log page map with packing holding a logical sector number
//! per sector (the spec's `N_log x Npb x sectors_per_page x E`, over the whole pool), and
//! the packing buffer (one page).

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob, Ppn, SectorTag, NONE};
use crate::error::{Error, Result};
use crate::ftl::logblock::bits_for;
use crate::ftl::logblock::kast::{associative_write, check_k, merge_least_cost};
use crate::ftl::logblock::{
    pool_size, Core, CoreOptions, LogMemory, PoolKeys, VictimOrder, Widths,
};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme, SectorSource, SECTOR_BYTES};
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The `[fftl]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FftlConfig {
    /// Log blocks in the pool, sequential ones included (0: as many as `log_dram_bytes` holds,
    /// else every spare block).
    pub log_blocks: u32,
    /// DRAM the log blocks' maps may use (0: unused).
    #[serde(with = "units::bytes")]
    pub log_dram_bytes: u64,
    /// K: logical blocks a random log block may hold pages of.
    pub max_associativity: u32,
    /// Sequential (SW) log blocks.
    pub sequential_logs: u32,
    /// A log block with at most this share of a block valid is cleaned (compacted)
    /// instead of merged (0: only log blocks with no valid page).
    pub clean_max_fraction: f64,
    /// Sub-page (sector) packing: partial-page writes go to packed log pages at 512 B
    /// granularity (the paper's design) instead of a read-modify-write of the page. Only
    /// without a write buffer (`buffer.size_bytes = 0`).
    pub sector_packing: bool,
    /// Log blocks of the pool that hold packed pages (0: an eighth of the pool, at least 1).
    pub packing_blocks: u32,
}

impl Default for FftlConfig {
    fn default() -> Self {
        FftlConfig {
            log_blocks: 0,
            log_dram_bytes: 0,
            max_associativity: 8,
            sequential_logs: 1,
            clean_max_fraction: 0.25,
            sector_packing: true,
            packing_blocks: 0,
        }
    }
}

pub struct Fftl {
    core: Core,
    mem: LogMemory,
    widths: Widths,
    clean_max: u32,
    /// Sector packing, when on (and the device has no write buffer).
    packing: Option<Packing>,
}

/// A sector's place in the packing area: none (the page copy holds it), a slot of the
/// packing buffer ([`IN_BUFFER`] set), or `1 + page * sectors + slot` for slot `slot` of
/// page `page` of the area (pages counted over the area's blocks in ring order).
type Loc = u32;
const IN_BUFFER: Loc = 1 << 31;

/// FFTL's sub-page packing: a packing buffer of one page in DRAM, programmed (one page
/// program) into the packing area when its sectors fill it; a sector-level map from each
/// logical page with packed sectors to where each of them is; the area's blocks reclaimed
/// in ring order, each live sector's page first rebuilt whole ("folded") through the page
/// path.
struct Packing {
    sectors: u32,
    ppb: u32,
    /// The area's blocks, a ring.
    blocks: Vec<u32>,
    /// The block being filled and its next page.
    head: usize,
    top: u32,
    /// Per page of the area: sectors it holds that are their logical page's newest.
    live: Vec<u32>,
    /// The packing buffer: one page of sectors ([`SectorTag::EMPTY`]: superseded).
    buffer: Vec<SectorTag>,
    /// Logical page -> the place of each of its sectors (pages with a packed sector only).
    map: HashMap<u32, Box<[Loc]>>,
    stats: PackingStats,
    /// Physical pages a read or a fold reads (distinct).
    reads: Vec<Ppn>,
}

#[derive(Clone, Copy, Debug, Default)]
struct PackingStats {
    sector_writes: u64,
    buffer_rewrites: u64,
    packed_pages: u64,
    padded_pages: u64,
    folds: u64,
    fold_reads: u64,
    absorbed_pages: u64,
    absorb_reads_merge: u64,
    absorb_reads_cleaning: u64,
    area_erases: u64,
}

impl Scheme for Fftl {
    const NAME: &'static str = "fftl";
    const DESCRIPTION: &'static str =
        "FFTL (TCE 2014): K-associative log blocks, balanced, cleaned before merged";
    type Section = FftlConfig;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c = Self::section(cfg)?;
        check_k("fftl.max_associativity", c.max_associativity, layout)?;
        if !(0.0..1.0).contains(&c.clean_max_fraction) {
            return Err(Error::config(
                "fftl.clean_max_fraction",
                format!("{} is not a fraction in [0, 1)", c.clean_max_fraction),
            ));
        }
        let widths = Widths::new(layout);
        let sectors = (layout.page_size as u64 / SECTOR_BYTES).max(1) as u32;
        let packs = c.sector_packing && cfg.buffer_bytes == 0 && sectors > 1;
        // With packing, each log page's map entry holds a logical sector number per sector
        // (the spec's `N_log x Npb x sectors_per_page x E`).
        let entry_bits = if packs {
            sectors as u64 * (widths.lpn_bits() + bits_for(sectors as u64 - 1))
        } else {
            widths.lpn_bits()
        };
        let mem = LogMemory {
            entry_bits,
            lbns_per_log: c.max_associativity as u64,
            extra_bits_per_log: 0,
        };
        let keys = PoolKeys {
            log_blocks: c.log_blocks,
            log_dram_bytes: c.log_dram_bytes,
        };
        let logs = pool_size(
            Self::NAME,
            &keys,
            layout,
            mem.bits_per_log(&widths),
            c.sequential_logs + 1,
        )?;
        let area = if !packs {
            0
        } else if c.packing_blocks == 0 {
            (logs / 8).max(1)
        } else {
            c.packing_blocks
        };
        if area > 0 && logs < area + c.sequential_logs + 1 {
            return Err(Error::config(
                "fftl.packing_blocks",
                format!(
                    "{area} packing blocks leave too few of the {logs} log blocks for the \
                     sequential and random logs (or set fftl.sector_packing = false)"
                ),
            ));
        }
        let mut core = Core::new(
            cfg,
            layout,
            CoreOptions {
                logs: logs - area,
                sequential_logs: c.sequential_logs,
                max_assoc: c.max_associativity,
                victim_order: VictimOrder::Lru,
                fill_cause: Cause::MergePartial,
                fills_are_merge: false,
            },
        )?;
        let clean_max = (c.clean_max_fraction * layout.pages_per_block as f64).floor() as u32;
        let packing = if area > 0 {
            let mut blocks = Vec::with_capacity(area as usize);
            for _ in 0..area {
                let block = core
                    .free
                    .pop_round_robin(&mut core.next_unit, 0)
                    .ok_or_else(|| {
                        Error::config("ftl.over_provisioning", "no block for a packing block")
                    })?;
                blocks.push(block);
            }
            Some(Packing {
                sectors,
                ppb: layout.pages_per_block,
                live: vec![0; (area * layout.pages_per_block) as usize],
                blocks,
                head: 0,
                top: 0,
                buffer: Vec::with_capacity(sectors as usize),
                map: HashMap::new(),
                stats: PackingStats::default(),
                reads: Vec::new(),
            })
        } else {
            None
        };
        Ok(Fftl {
            core,
            mem,
            widths,
            clean_max,
            packing,
        })
    }
}

/// FFTL's cleaning pass: a log block with no valid page is erased; else the one with the
/// fewest valid pages, at most `clean_max`, among those that can take the write of `lbn`
/// afterwards, is compacted; else the least-cost one is merged. Returns the log block that
/// takes the write. With sector packing, the pages a cleaning or a merge copies absorb
/// their packed sectors ([`Packing::absorb`]).
fn clean_or_merge(
    core: &mut Core,
    packing: &mut Option<Packing>,
    lbn: u32,
    clean_max: u32,
    flash: &mut Flash,
) -> Result<u32> {
    let k = core.opts.max_assoc;
    let mut dead = None;
    let mut best: Option<(u32, u32)> = None;
    for s in core.lru_iter() {
        let slot = core.slots[s as usize];
        if slot.valid == 0 {
            dead = Some(s);
            break;
        }
        let takes = slot.assoc < k || core.holds(s, lbn);
        if takes
            && slot.valid <= clean_max
            && slot.valid < slot.top
            && best.is_none_or(|(v, _)| slot.valid < v)
        {
            best = Some((slot.valid, s));
        }
    }
    if let Some(s) = dead {
        core.reclaim(s, flash)?;
        return Ok(s);
    }
    if let Some((_, s)) = best {
        let copied = packing.as_mut().map(|p| p.candidates(core, s, true, flash));
        core.compact(s, flash)?;
        if let (Some(p), Some(copied)) = (packing.as_mut(), copied) {
            p.absorb(core, &copied, Cause::Gc, flash)?;
        }
        return Ok(s);
    }
    let Some(v) = core.least_merge_cost() else {
        return merge_least_cost(core, flash);
    };
    let copied = packing
        .as_mut()
        .map(|p| p.candidates(core, v, false, flash));
    core.reclaim(v, flash)?;
    if let (Some(p), Some(copied)) = (packing.as_mut(), copied) {
        p.absorb(core, &copied, Cause::MergeFull, flash)?;
    }
    Ok(v)
}

/// A whole page through KAST's machinery: in place, a sequential log, else a random log
/// block (cleaning or merging one first when none can take it).
fn page_write(
    core: &mut Core,
    packing: &mut Option<Packing>,
    clean_max: u32,
    lpa: u32,
    seq: u64,
    flash: &mut Flash,
) -> Result<()> {
    if core.write_in_place(lpa, seq, flash)? || core.sequential_write(lpa, seq, flash)? {
        return Ok(());
    }
    associative_write(core, lpa, seq, flash, |core, lbn, flash| {
        clean_or_merge(core, packing, lbn, clean_max, flash)
    })
}

impl Packing {
    /// The logical pages with packed sectors whose page copy the reclaim of log block `s`
    /// (`cleaning`: its compaction) may copy, each with that copy (`NONE`: none yet): a
    /// cleaning copies the block's valid pages, a merge every page of the logical blocks
    /// it merges.
    fn candidates(&self, core: &Core, s: u32, cleaning: bool, flash: &Flash) -> Vec<(u32, Ppn)> {
        let mut out = Vec::new();
        if self.map.is_empty() {
            return out;
        }
        let slot = core.slots[s as usize];
        let mut lpas = Vec::new();
        if cleaning {
            lpas.extend(flash.valid_pages(slot.block).map(|p| flash.oob(p).lpa));
        } else if slot.valid > 0 {
            let mut lbns = Vec::new();
            core.live_lbns(s, slot, flash, &mut lbns);
            for lbn in lbns {
                lpas.extend((0..core.ppb).map(|o| core.lpa(lbn, o)));
            }
        }
        for lpa in lpas {
            if self.map.contains_key(&lpa) {
                out.push((lpa, core.newest_copy(lpa, flash).unwrap_or(NONE)));
            }
        }
        out
    }

    /// After a cleaning or a merge: each page of `copied` (a logical page with packed
    /// sectors, and its copy before) that was copied (its copy moved) took its newest
    /// sectors with it. The controller read the copy and the packed pages (one read per
    /// distinct page beyond the copy's own, counted under `cause`) and programmed the
    /// gathered page (the copy's program): its spare area holds each sector's identity,
    /// and the packed sectors are superseded.
    fn absorb(
        &mut self,
        core: &Core,
        copied: &[(u32, Ppn)],
        cause: Cause,
        flash: &mut Flash,
    ) -> Result<()> {
        for &(lpa, before) in copied {
            let Some(now) = core.newest_copy(lpa, flash) else {
                continue;
            };
            if now == before {
                continue;
            }
            let Some(locs) = self.map.get(&lpa).cloned() else {
                continue;
            };
            let tags = self.gather(lpa, &locs, Some(now), flash);
            for &ppn in &self.reads {
                if ppn != now {
                    flash.read(ppn, cause)?;
                    if cause == Cause::Gc {
                        self.stats.absorb_reads_cleaning += 1;
                    } else {
                        self.stats.absorb_reads_merge += 1;
                    }
                }
            }
            self.stats.absorbed_pages += 1;
            self.drop_page(lpa, flash)?;
            flash.set_sector_tags(now, &tags);
        }
        Ok(())
    }

    /// The newest identity of each sector of `lpa` (placed at `locs`, the others in its
    /// page copy `copy`), and in [`Packing::reads`] the distinct flash pages holding them.
    fn gather(
        &mut self,
        lpa: u32,
        locs: &[Loc],
        copy: Option<Ppn>,
        flash: &Flash,
    ) -> Vec<SectorTag> {
        let mut tags = Vec::with_capacity(locs.len());
        self.reads.clear();
        for (j, &loc) in locs.iter().enumerate() {
            let tag = if loc & IN_BUFFER != 0 {
                self.buffer[(loc & !IN_BUFFER) as usize]
            } else if loc != 0 {
                let ppn = self.ppn((loc - 1) / self.sectors);
                self.reads.push(ppn);
                flash
                    .sector_tag(ppn, (loc - 1) % self.sectors)
                    .unwrap_or(SectorTag::EMPTY)
            } else if let Some(ppn) = copy {
                self.reads.push(ppn);
                flash.sector_tag(ppn, j as u32).unwrap_or(SectorTag::EMPTY)
            } else {
                SectorTag::EMPTY
            };
            tags.push(SectorTag {
                lpa,
                sector: j as u32,
                seq: tag.seq,
            });
        }
        self.reads.sort_unstable();
        self.reads.dedup();
        tags
    }

    /// The physical page of page `a` of the area.
    #[inline]
    fn ppn(&self, a: u32) -> Ppn {
        self.blocks[(a / self.ppb) as usize] * self.ppb + a % self.ppb
    }

    /// Forgets the sector at `loc` (a newer copy replaces it): a packing-buffer slot
    /// becomes padding, a packed page holds one live sector fewer (invalid with none).
    fn drop_sector(&mut self, loc: Loc, flash: &mut Flash) -> Result<()> {
        if loc == 0 {
            return Ok(());
        }
        if loc & IN_BUFFER != 0 {
            self.buffer[(loc & !IN_BUFFER) as usize] = SectorTag::EMPTY;
            return Ok(());
        }
        let a = (loc - 1) / self.sectors;
        self.live[a as usize] -= 1;
        if self.live[a as usize] == 0 {
            flash.invalidate(self.ppn(a))?;
        }
        Ok(())
    }

    /// Forgets every packed sector of `lpa` (a whole-page write or a trim replaces them).
    fn drop_page(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        if let Some(locs) = self.map.remove(&lpa) {
            for &loc in locs.iter() {
                self.drop_sector(loc, flash)?;
            }
        }
        Ok(())
    }
}

impl Fftl {
    /// Packs sectors `first .. first + count` of `lpa` (host write `seq`): each goes to the
    /// packing buffer (a sector still in the buffer is rewritten there), the buffer is
    /// programmed as one page whenever it is full.
    fn pack(
        &mut self,
        lpa: u32,
        seq: u64,
        first: u32,
        count: u32,
        flash: &mut Flash,
    ) -> Result<()> {
        for j in first..first + count {
            let Some(p) = self.packing.as_mut() else {
                return Err(Error::Usage("fftl: sector packing is off".into()));
            };
            p.stats.sector_writes += 1;
            let sectors = p.sectors as usize;
            let old = p.map.entry(lpa).or_insert_with(|| vec![0; sectors].into())[j as usize];
            if old & IN_BUFFER != 0 {
                p.buffer[(old & !IN_BUFFER) as usize].seq = seq;
                p.stats.buffer_rewrites += 1;
                continue;
            }
            p.drop_sector(old, flash)?;
            let slot = p.buffer.len() as u32;
            p.buffer.push(SectorTag {
                lpa,
                sector: j,
                seq,
            });
            if let Some(locs) = p.map.get_mut(&lpa) {
                locs[j as usize] = IN_BUFFER | slot;
            }
            if p.buffer.len() == sectors {
                self.flush_buffer(flash)?;
            }
        }
        Ok(())
    }

    /// Programs the packing buffer as the next page of the area (padded if not full),
    /// reclaiming the area's next block first when the head block is full.
    fn flush_buffer(&mut self, flash: &mut Flash) -> Result<()> {
        let Some(p) = self.packing.as_ref() else {
            return Ok(());
        };
        if p.buffer.iter().all(|t| t.lpa == NONE) {
            if let Some(p) = self.packing.as_mut() {
                p.buffer.clear();
            }
            return Ok(());
        }
        if p.top == p.ppb {
            self.reclaim_next(flash)?;
        }
        let Some(p) = self.packing.as_mut() else {
            return Ok(());
        };
        let mut tags = std::mem::take(&mut p.buffer);
        let live = tags.iter().filter(|t| t.lpa != NONE).count() as u32;
        if live == 0 {
            // Every sector was folded while the area made room.
            tags.clear();
            p.buffer = tags;
            return Ok(());
        }
        if tags.len() < p.sectors as usize {
            p.stats.padded_pages += 1;
            tags.resize(p.sectors as usize, SectorTag::EMPTY);
        }
        let a = p.head as u32 * p.ppb + p.top;
        let ppn = p.ppn(a);
        let seq = tags.iter().map(|t| t.seq).max().unwrap_or(0);
        flash.program_sectors(ppn, Oob { lpa: NONE, seq }, &tags, Cause::Host)?;
        p.top += 1;
        p.live[a as usize] = live;
        p.stats.packed_pages += 1;
        for (slot, t) in tags.iter().enumerate() {
            if t.lpa == NONE {
                continue;
            }
            if let Some(locs) = p.map.get_mut(&t.lpa) {
                locs[t.sector as usize] = 1 + a * p.sectors + slot as u32;
            }
        }
        tags.clear();
        p.buffer = tags;
        Ok(())
    }

    /// Makes the area's next block the head, empty: the logical pages with a live sector in
    /// it are folded (see [`Fftl::fold`]), then it is erased.
    fn reclaim_next(&mut self, flash: &mut Flash) -> Result<()> {
        let Some(p) = self.packing.as_mut() else {
            return Ok(());
        };
        // Greedy: the block with the fewest live sectors (the first of equals after the
        // head, in ring order).
        let n = p.blocks.len();
        let live_in = |i: usize| -> u32 {
            let base = i * p.ppb as usize;
            p.live[base..base + p.ppb as usize].iter().sum()
        };
        p.head = (1..n)
            .map(|k| (p.head + k) % n)
            .min_by_key(|&i| live_in(i))
            .unwrap_or((p.head + 1) % n);
        p.top = 0;
        let block = p.blocks[p.head];
        if flash.is_erased(block) {
            return Ok(());
        }
        let mut lpas = Vec::new();
        let base = p.head as u32 * p.ppb;
        for a in base..base + p.ppb {
            if p.live[a as usize] == 0 {
                continue;
            }
            for slot in 0..p.sectors {
                let loc = 1 + a * p.sectors + slot;
                if let Some(t) = flash.sector_tag(p.ppn(a), slot) {
                    if t.lpa != NONE
                        && p.map
                            .get(&t.lpa)
                            .is_some_and(|l| l[t.sector as usize] == loc)
                    {
                        lpas.push(t.lpa);
                    }
                }
            }
        }
        lpas.dedup();
        for lpa in lpas {
            if self
                .packing
                .as_ref()
                .is_some_and(|p| p.map.contains_key(&lpa))
            {
                self.fold(lpa, flash)?;
            }
        }
        let Some(p) = self.packing.as_mut() else {
            return Ok(());
        };
        debug_assert!(p.live[base as usize..(base + p.ppb) as usize]
            .iter()
            .all(|&l| l == 0));
        flash.erase(block, Cause::Gc)?;
        p.stats.area_erases += 1;
        Ok(())
    }

    /// Rebuilds `lpa` whole from its newest sectors, wherever they are (its page copy,
    /// packed pages, the packing buffer: one read per distinct flash page), and writes it
    /// through the page path, each sector's identity in the page's spare area; its packed
    /// sectors are then superseded.
    fn fold(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let Some(p) = self.packing.as_mut() else {
            return Ok(());
        };
        let Some(locs) = p.map.get(&lpa).cloned() else {
            return Ok(());
        };
        let copy = self.core.newest_copy(lpa, flash);
        let tags = p.gather(lpa, &locs, copy, flash);
        for &ppn in &p.reads {
            flash.read(ppn, Cause::Gc)?;
        }
        p.stats.fold_reads += p.reads.len() as u64;
        p.stats.folds += 1;
        p.drop_page(lpa, flash)?;
        let seq = tags.iter().map(|t| t.seq).max().unwrap_or(0);
        let cause = flash.host_cause();
        flash.set_host_cause(Cause::Gc);
        let written = page_write(
            &mut self.core,
            &mut self.packing,
            self.clean_max,
            lpa,
            seq,
            flash,
        );
        flash.set_host_cause(cause);
        written?;
        if tags.iter().any(|t| t.seq != seq) {
            let Some(ppn) = self.core.newest_copy(lpa, flash) else {
                return Err(Error::Usage(format!("fftl: folded page {lpa} not found")));
            };
            flash.set_sector_tags(ppn, &tags);
        }
        Ok(())
    }
}

impl Ftl for Fftl {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        self.core.read(lpa, flash)
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        if let Some(p) = self.packing.as_mut() {
            p.drop_page(lpa, flash)?;
        }
        page_write(
            &mut self.core,
            &mut self.packing,
            self.clean_max,
            lpa,
            seq,
            flash,
        )
    }

    fn packs_sectors(&self) -> bool {
        self.packing.is_some()
    }

    fn write_sectors(
        &mut self,
        lpa: u32,
        seq: u64,
        first: u32,
        count: u32,
        flash: &mut Flash,
    ) -> Result<()> {
        self.pack(lpa, seq, first, count, flash)
    }

    fn read_sectors(
        &mut self,
        lpa: u32,
        flash: &mut Flash,
        out: &mut Vec<SectorSource>,
    ) -> Result<()> {
        let Some(p) = self.packing.as_mut() else {
            return Err(Error::Usage("fftl: sector packing is off".into()));
        };
        let locs = p.map.get(&lpa);
        let copy = if locs.is_none_or(|l| l.contains(&0)) {
            self.core.newest_copy(lpa, flash)
        } else {
            None
        };
        p.reads.clear();
        for j in 0..p.sectors {
            let loc = locs.map_or(0, |l| l[j as usize]);
            out.push(if loc & IN_BUFFER != 0 {
                SectorSource::Dram(p.buffer[(loc & !IN_BUFFER) as usize].seq)
            } else if loc != 0 {
                let ppn = p.ppn((loc - 1) / p.sectors);
                p.reads.push(ppn);
                SectorSource::Flash {
                    ppn,
                    slot: (loc - 1) % p.sectors,
                }
            } else if let Some(ppn) = copy {
                p.reads.push(ppn);
                SectorSource::Flash { ppn, slot: j }
            } else {
                SectorSource::Unmapped
            });
        }
        p.reads.sort_unstable();
        p.reads.dedup();
        for &ppn in &p.reads {
            flash.read(ppn, Cause::Host)?;
        }
        Ok(())
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        if let Some(p) = self.packing.as_mut() {
            p.drop_page(lpa, flash)?;
        }
        self.core.trim(lpa, flash)
    }

    /// The data-block map and the log-block pool are rebuilt from the OOB scan
    /// ([`Core::recover`]). With sector packing on, refused: the scan does not rebuild the
    /// sector map (a device that keeps data refuses packing before it gets here).
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        if self.packing.is_some() {
            return Err(Error::config(
                "fftl.sector_packing",
                "recovery does not rebuild the sector map of packed pages",
            ));
        }
        self.core.recover(found, flash)
    }

    /// The packing buffer goes out, padded.
    fn finish(&mut self, flash: &mut Flash) -> Result<()> {
        self.flush_buffer(flash)
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        let logs = self.core.logs() + self.packing.as_ref().map_or(0, |p| p.blocks.len() as u32);
        self.mem.breakdown(&self.widths, logs as u64, out);
        if let Some(p) = &self.packing {
            out.push(("packing_buffer", (p.sectors as u64) * SECTOR_BYTES));
        }
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        self.core.counters(out);
        if let Some(p) = &self.packing {
            // The pool: the machinery's log blocks and the packing area.
            for (name, value) in out.iter_mut() {
                if *name == "log_blocks" {
                    *value += p.blocks.len() as f64;
                }
            }
            let st = &p.stats;
            out.push(("packing_blocks", p.blocks.len() as f64));
            out.push(("sector_writes", st.sector_writes as f64));
            out.push(("packing_buffer_rewrites", st.buffer_rewrites as f64));
            out.push(("packed_pages", st.packed_pages as f64));
            out.push(("padded_packed_pages", st.padded_pages as f64));
            out.push(("folds", st.folds as f64));
            out.push(("fold_reads", st.fold_reads as f64));
            out.push(("absorbed_pages", st.absorbed_pages as f64));
            out.push(("absorb_reads_merge", st.absorb_reads_merge as f64));
            out.push(("absorb_reads_cleaning", st.absorb_reads_cleaning as f64));
            out.push(("packing_erases", st.area_erases as f64));
        }
    }

    fn reset_counters(&mut self) {
        self.core.reset_counters();
        if let Some(p) = self.packing.as_mut() {
            p.stats = PackingStats::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::logblock::tests::{churn, runs, Harness, HasCore};

    impl HasCore for Fftl {
        fn core(&self) -> &Core {
            &self.core
        }
    }

    #[test]
    fn nearly_empty_log_blocks_are_cleaned_not_merged() {
        let mut h = Harness::<Fftl>::new(&["fftl.log_blocks=6", "fftl.max_associativity=4"]);
        h.fill();
        // A hot set of a few pages rewritten over and over: log blocks fill with copies that
        // are superseded at once, so cleaning finds nearly empty ones.
        for i in 0..600u32 {
            h.write((i * 7) % 24);
        }
        h.check_all();
        let c = h.counters();
        assert!(c["cleanings"] + c["dead_log_erases"] > 0.0, "{c:?}");
        assert_eq!(
            h.flash.stats.programs[Cause::Gc as usize] as f64,
            c["cleaning_pages"]
        );
    }

    /// A simulator over the harness's device with 2 KiB pages (4 sectors), verifying.
    fn sector_sim<F: Scheme>(sets: &[&str]) -> crate::controller::simulator::Simulator<F> {
        use crate::ftl::logblock::tests::BASE;
        let all: Vec<String> = BASE
            .iter()
            .chain(&["geometry.page_size=\"2KiB\""])
            .chain(sets)
            .map(|s| s.to_string())
            .collect();
        let cfg =
            crate::run::config::resolve(None, None, &[], &all).unwrap_or_else(|e| panic!("{e}"));
        let layout = cfg.validate().unwrap();
        let ftl = F::new(&cfg.scheme_context(), &layout).unwrap_or_else(|e| panic!("{e}"));
        let flash = Flash::new(&cfg.device(), &layout, 0, cfg.replay.timing).unwrap();
        crate::controller::simulator::Simulator::new(&cfg.controller(), &layout, ftl, flash, true)
    }

    fn request(op: crate::request::Op, sector: u64, sectors: u32) -> crate::request::Request {
        crate::request::Request {
            time_ns: 0,
            offset_bytes: sector * 512,
            len_bytes: sectors * 512,
            op,
        }
    }

    /// `n` requests over the first `span` sectors: writes of 1-3 sectors (every eighth a
    /// whole 2 KiB page), a read every fourth, a trim every 50th; verified as they go.
    fn sector_churn<F: Ftl>(
        sim: &mut crate::controller::simulator::Simulator<F>,
        n: u32,
        span: u64,
        seed: u64,
    ) {
        use crate::request::Op;
        let mut rng = crate::rng::Rng::new(seed);
        for i in 0..n {
            let sector = rng.below(span - 4);
            let req = if i % 50 == 49 {
                request(Op::Trim, sector & !3, 4)
            } else if i % 4 == 3 {
                request(Op::Read, sector, 1 + rng.below(8) as u32)
            } else if i % 8 == 0 {
                request(Op::Write, sector & !3, 4)
            } else {
                request(Op::Write, sector, 1 + rng.below(3) as u32)
            };
            sim.submit(&req)
                .unwrap_or_else(|e| panic!("request {i}: {e}"));
        }
    }

    fn counter<F: Ftl>(sim: &crate::controller::simulator::Simulator<F>, name: &str) -> f64 {
        let mut out = Vec::new();
        sim.ftl().counters(&mut out);
        out.into_iter()
            .find(|(n, _)| *n == name)
            .map_or(0.0, |(_, v)| v)
    }

    #[test]
    fn sector_packing_programs_fewer_pages_than_kast_on_512_byte_writes() {
        use crate::ftl::logblock::kast::Kast;
        use crate::request::Op;
        let programs = |ftl: &str| {
            let mut rng = crate::rng::Rng::new(5);
            let writes: Vec<_> = (0..6000)
                .map(|_| request(Op::Write, rng.below(2048), 1))
                .collect();
            if ftl == "kast" {
                let mut sim = sector_sim::<Kast>(&["kast.log_blocks=8"]);
                writes.iter().for_each(|r| sim.submit(r).unwrap());
                sim.check_all().unwrap();
                let stats = &sim.flash().stats;
                (stats.total_programs(), stats.programs[Cause::Host as usize])
            } else {
                let mut sim = sector_sim::<Fftl>(&["fftl.log_blocks=8", ftl]);
                writes.iter().for_each(|r| sim.submit(r).unwrap());
                sim.check_all().unwrap();
                assert_eq!(sim.ftl().packs_sectors(), ftl.ends_with("true"));
                let stats = &sim.flash().stats;
                (stats.total_programs(), stats.programs[Cause::Host as usize])
            }
        };
        let (kast, unpacked, packed) = (
            programs("kast"),
            programs("fftl.sector_packing=false"),
            programs("fftl.sector_packing=true"),
        );
        // The mechanism: four 512 B sectors share a host page program, so host programs
        // fall about fourfold (at least threefold: the last pages go out padded). The
        // packing area's folds and the merges take part of the saving back (with 8 log
        // blocks, one of them for packing: 6,000 -> 1,498 host programs, 26,679 -> 22,500
        // in all), so the whole is checked to be fewer, not fourfold fewer.
        assert!(
            packed.1 * 3 < unpacked.1,
            "host programs: packed {packed:?}, unpacked {unpacked:?}"
        );
        assert!(
            packed.0 < unpacked.0,
            "packed {packed:?}, unpacked {unpacked:?}"
        );
        assert!(packed.0 < kast.0, "packed {packed:?}, kast {kast:?}");
    }

    #[test]
    fn every_sector_reads_back_through_folds_merges_and_cleanings() {
        for (span, sets) in [
            (1500, ["fftl.log_blocks=8", "fftl.clean_max_fraction=0.5"]),
            (3000, ["fftl.log_blocks=6", "fftl.packing_blocks=2"]),
        ] {
            let mut sim = sector_sim::<Fftl>(&sets);
            assert!(sim.ftl().packs_sectors());
            sector_churn(&mut sim, 8000, span, 9);
            sim.check_all().unwrap();
            sim.ftl().core.check(sim.flash());
            for name in [
                "folds",
                "absorbed_pages",
                "packed_pages",
                "merge_ops",
                "packing_erases",
            ] {
                assert!(counter(&sim, name) > 0.0, "{span}: no {name}");
            }
            if span == 1500 {
                assert!(counter(&sim, "cleanings") + counter(&sim, "dead_log_erases") > 0.0);
            }
            // The buffer's last sectors go out padded at the end, and still read back.
            let (ftl, flash) = sim.parts_mut();
            ftl.finish(flash).unwrap();
            sim.check_all().unwrap();
        }
    }

    #[test]
    fn a_wrong_sector_identity_is_caught() {
        use crate::request::Op;
        let mut sim = sector_sim::<Fftl>(&["fftl.log_blocks=8"]);
        for s in 0..8 {
            // Sectors 0 and 1 of pages 0..3, then 2 and 3: two packed pages.
            sim.submit(&request(Op::Write, (s % 4) * 4 + (s / 4) * 2, 2))
                .unwrap();
        }
        sim.check_all().unwrap();
        let first = {
            let p = sim.ftl().packing.as_ref().unwrap();
            p.ppn(0)
        };
        let mut tags: Vec<SectorTag> = (0..4)
            .map(|k| sim.flash().sector_tag(first, k).unwrap())
            .collect();
        // Sector 1 of page 0 claims an older write.
        assert_eq!((tags[1].lpa, tags[1].sector), (0, 1));
        tags[1].seq -= 1;
        sim.flash_mut().set_sector_tags(first, &tags);
        let err = sim.submit(&request(Op::Read, 0, 4)).unwrap_err();
        assert!(matches!(err, Error::Verify { lpa: 0, .. }), "{err}");
        // Another logical page's sector in its place.
        tags[1] = SectorTag {
            lpa: 1,
            sector: 1,
            seq: tags[1].seq + 1,
        };
        sim.flash_mut().set_sector_tags(first, &tags);
        assert!(matches!(
            sim.submit(&request(Op::Read, 0, 4)),
            Err(Error::Verify { lpa: 0, .. })
        ));
    }

    #[test]
    fn random_and_sequential_writes_keep_every_page() {
        for clean in ["0", "0.5"] {
            let set = format!("fftl.clean_max_fraction={clean}");
            let mut h = Harness::<Fftl>::new(&["fftl.log_blocks=5", &set]);
            h.fill();
            churn(&mut h, 500, 21);
            runs(&mut h, 300, 24, 22);
            h.check_all();
        }
    }
}
