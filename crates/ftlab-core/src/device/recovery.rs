//! Rebuilding a device's state after a restart from what its flash holds, as a real SSD
//! does after power loss (pblk's recovery: the last checkpoint, then an OOB scan).
//!
//! The front hands over a [`FlashImage`]: every programmed page with its OOB header and
//! program number (which of two programs came later), the erase counts, the trims it
//! logged, the bytes of the pages holding no logical page it kept (translation pages) and,
//! if a checkpoint saved one, the map then. The flash model is restored page by page (no
//! page valid), then [`Found`] is worked out once for every scheme: each logical page's
//! current copy is its programmed page with the highest host sequence number (the latest
//! program among equal ones: a GC copy and its source hold the same data), starting from
//! the checkpoint's map (whose entries stand while their pages are unchanged) and looking
//! only at the pages programmed after it, unless a logged trim came after it; pages without
//! a logical page (translation pages, fillers) are listed in program order. The scheme's
//! [`crate::ftl::Ftl::recover`] then revalidates what it keeps and rebuilds its map and
//! structure from that.

use crate::device::nand::{Cause, Flash, Oob, Ppn, NONE};

/// What the flash of a device held when it stopped.
#[derive(Clone, Debug, Default)]
pub struct FlashImage {
    /// Every programmed page: (physical page, OOB header, program number).
    pub pages: Vec<(Ppn, Oob, u64)>,
    /// Erase count of each block.
    pub erase_counts: Vec<u32>,
    /// Logged trims: (logical page, the last host write sequence number at the trim).
    pub trims: Vec<(u32, u64)>,
    /// The bytes of pages holding no logical page (translation pages), those the front
    /// kept: a scheme checks its translation pages against the scan with them.
    pub contents: Vec<(Ppn, Vec<u8>)>,
    /// The map a checkpoint saved, if any: then only the pages programmed after it are
    /// scanned for the mapping, and `trims` need only hold the trims logged after it.
    pub checkpoint: Option<MapCheckpoint>,
}

/// The logical-to-physical map at a checkpoint, every page programmed up to
/// `durable_prog` being durable then.
#[derive(Clone, Debug, Default)]
pub struct MapCheckpoint {
    /// Per logical page, the physical page of its current copy ([`NONE`]: unmapped).
    pub live: Vec<Ppn>,
    pub durable_prog: u64,
    /// The last host write sequence number then.
    pub last_seq: u64,
}

/// What a scheme rebuilds from.
#[derive(Clone, Debug, Default)]
pub struct Found {
    /// Per logical page, the physical page holding its current data ([`NONE`]: unmapped).
    pub live: Vec<Ppn>,
    /// Pages holding no logical page (translation pages, fillers), in program order: the
    /// later copy of a translation page is the current one.
    pub other: Vec<(Ppn, Oob)>,
    /// The highest host write sequence number on flash or in the trim log.
    pub last_seq: u64,
    /// The logged trims, in log order (schemes whose structure follows trims, such as
    /// AFTL's segment trim cursors, replay them).
    pub trims: Vec<(u32, u64)>,
    /// Per block, the program number of its latest page (0: erased): which blocks were
    /// written last, for schemes that order blocks by recency (log-block LRU lists).
    pub block_last_prog: Vec<u64>,
    /// The kept bytes of pages holding no logical page, by physical page.
    pub contents: std::collections::HashMap<Ppn, Vec<u8>>,
}

impl Found {
    /// Logical pages mapped.
    pub fn mapped(&self) -> u64 {
        self.live.iter().filter(|&&p| p != NONE).count() as u64
    }

    /// The current copy of each translation page `k < pages` (the latest program of
    /// `Oob::translation(k)`), [`NONE`] for those never written. Only for schemes whose
    /// pages without a logical page are all translation pages.
    pub fn translation_pages(&self, pages: u32) -> Vec<Ppn> {
        let mut at = vec![NONE; pages as usize];
        for &(ppn, oob) in &self.other {
            if let Some(slot) = at.get_mut(oob.seq as usize) {
                *slot = ppn;
            }
        }
        at
    }
}

/// Restores `image` into a fresh `flash` and works out what each logical page holds.
pub fn restore(image: &FlashImage, flash: &mut Flash) -> crate::Result<Found> {
    let logical = flash.layout().logical_pages as usize;
    let mut pages = image.pages.clone();
    // Block order for the restore, then program order for the rest.
    pages.sort_unstable_by_key(|&(ppn, _, _)| ppn);
    for &(ppn, oob, _) in &pages {
        flash.restore_page(ppn, oob)?;
    }
    for (block, &count) in image.erase_counts.iter().enumerate() {
        flash.restore_erase_count(block as u32, count);
    }
    let mut block_last_prog = vec![0u64; flash.layout().total_blocks as usize];
    for &(ppn, _, prog) in &pages {
        let b = flash.block_of(ppn) as usize;
        block_last_prog[b] = block_last_prog[b].max(prog);
    }
    let mut live = vec![NONE; logical];
    let mut seq_of = vec![0u64; logical];
    let mut last_seq = 0;
    // From a checkpoint's map: an entry stands while its page still holds that logical
    // page as programmed before the checkpoint (else its block was erased since, the data
    // having moved or been replaced by a later program, or trimmed by a later logged trim).
    let mut scan_from = 0;
    if let Some(cp) = &image.checkpoint {
        if cp.live.len() != logical {
            return Err(crate::Error::Usage(format!(
                "the checkpoint's map has {} logical pages; the device has {logical}",
                cp.live.len()
            )));
        }
        scan_from = cp.durable_prog;
        last_seq = cp.last_seq;
        for (lpa, &ppn) in cp.live.iter().enumerate() {
            // (Most of a large, sparsely written device: no search for them.)
            if ppn == NONE {
                continue;
            }
            let Ok(i) = pages.binary_search_by_key(&ppn, |&(p, _, _)| p) else {
                continue;
            };
            let (_, oob, prog) = pages[i];
            if oob.lpa == lpa as u32 && prog <= scan_from {
                live[lpa] = ppn;
                seq_of[lpa] = oob.seq;
            }
        }
    }
    pages.sort_unstable_by_key(|&(_, _, prog)| prog);
    let mut other = Vec::new();
    for &(ppn, oob, prog) in &pages {
        if oob.lpa == NONE {
            other.push((ppn, oob));
            continue;
        }
        if prog <= scan_from {
            // The checkpoint's map says what the pages programmed before it hold.
            last_seq = last_seq.max(oob.seq);
            continue;
        }
        let Some(slot) = live.get_mut(oob.lpa as usize) else {
            return Err(crate::Error::Usage(format!(
                "physical page {ppn} holds logical page {}, beyond the device's {logical}",
                oob.lpa
            )));
        };
        last_seq = last_seq.max(oob.seq);
        // Later programs of the same data (GC copies) win ties.
        if oob.seq >= seq_of[oob.lpa as usize] {
            seq_of[oob.lpa as usize] = oob.seq;
            *slot = ppn;
        }
    }
    for &(lpa, seq) in &image.trims {
        last_seq = last_seq.max(seq);
        if let Some(s) = seq_of.get(lpa as usize) {
            if *s != 0 && *s <= seq {
                live[lpa as usize] = NONE;
            }
        }
    }
    Ok(Found {
        live,
        other,
        last_seq,
        trims: image.trims.clone(),
        block_last_prog,
        contents: image.contents.iter().cloned().collect(),
    })
}

/// Revalidates every page `found` maps (the data a scheme keeps where it lies).
pub fn revalidate_live(found: &Found, flash: &mut Flash) -> crate::Result<()> {
    for &ppn in &found.live {
        if ppn != NONE {
            flash.revalidate(ppn)?;
        }
    }
    Ok(())
}

/// Closes a partly written block with filler pages (no logical page, invalid at once), as
/// pblk pads the open lines it does not reopen, so that it can be garbage-collected like
/// any full block.
pub fn pad_block(flash: &mut Flash, block: u32) -> crate::Result<()> {
    let first = flash.first_page(block);
    // Below the write pointer only an any-order block has pages left to program.
    let from = match flash.program_order() {
        crate::device::geometry::ProgramOrder::Any => 0,
        _ => flash.write_pointer(block),
    };
    for p in first + from..first + flash.layout().pages_per_block {
        if !flash.is_programmed(p) {
            flash.program(p, Oob::FILLER, &[], Cause::Gc)?;
            flash.invalidate(p)?;
        }
    }
    Ok(())
}
