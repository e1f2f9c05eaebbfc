//! Damage to a store's files: what start-up refuses, what `ftlab store check` lists and what
//! `ftlab store repair` rebuilds.
//!
//! - A `store` file shorter than its geometry says: truncated (what it cut off named: pages,
//!   erase counts, records).
//! - A logical page the checkpoint's map places at a physical page whose OOB record no
//!   longer holds it, with no later copy and no logged trim to explain why: its record was
//!   lost (zeroed or damaged records). Records of an erased block are cleared only
//!   after the copies out of it are durable, so a moved or replaced page always leaves a
//!   later record, and a trimmed one a logged trim.
//! - A page whose bytes do not match its record's CRC: programmed before the checkpoint, it
//!   is damaged (reads of it fail with EIO); after it, a torn write that recovery ignores.
//!
//! Repair extends a truncated store file, rebuilds each lost record from the checkpoint's map (the
//! page's bytes as they are; a page whose bytes were cut off gets a CRC that cannot match,
//! so that reads of it fail rather than return zeros), and drops a damaged map (a full scan
//! replaces it). What cannot be rebuilt is listed.

use crate::recovery::{
    check_format, read_checkpoint, read_map, read_meta, write_checkpoint, Checkpoint,
};
use crate::store::{open_rw, regions, Meta, Record, RECORD_BYTES, TRIM_BYTES};
use ftlab_core::device::nand::NONE;
use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// What a check found.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Findings {
    /// Damage, one line each (empty: the store is sound).
    pub damage: Vec<String>,
    /// What a repair did, or could not do.
    pub repaired: Vec<String>,
    pub unrepairable: Vec<String>,
    pub records: u64,
    pub pages_checked: u64,
    /// Pages programmed after the checkpoint whose bytes do not match (torn writes, which
    /// recovery ignores: not damage).
    pub torn: u64,
}

fn len_of(dir: &Path, name: &str) -> Result<u64, String> {
    let path = dir.join(name);
    match std::fs::metadata(&path) {
        Ok(m) => Ok(m.len()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The `store` file shorter than the geometry says, as one line naming what is cut off.
pub fn truncated(dir: &Path, meta: &Meta) -> Result<Vec<String>, String> {
    let r = regions(meta);
    let have = len_of(dir, "store")?;
    if have >= r.len {
        return Ok(Vec::new());
    }
    let cut = if have < r.erase_counts {
        format!(
            "the OOB records from physical page {} on, the erase counts and the pages",
            have / RECORD_BYTES as u64
        )
    } else if have < r.pages {
        "the erase counts and the pages".to_string()
    } else {
        format!(
            "the pages from physical page {} on",
            (have - r.pages) / meta.page_size as u64
        )
    };
    Ok(vec![format!(
        "{}: {have} bytes, {} expected (truncated: {cut} cut off)",
        dir.join("store").display(),
        r.len
    )])
}

/// `len` bytes of the `store` file from `at`, zeros past its end.
fn read_padded(dir: &Path, at: u64, len: u64) -> Result<Vec<u8>, String> {
    let path = dir.join("store");
    let mut buf = vec![0u8; len as usize];
    match File::open(&path) {
        Ok(f) => {
            let have = f
                .metadata()
                .map_err(|e| format!("{}: {e}", path.display()))?
                .len();
            let n = have.saturating_sub(at).min(len) as usize;
            f.read_exact_at(&mut buf[..n], at)
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", path.display())),
    }
    Ok(buf)
}

/// The bytes of the pages region the `store` file holds.
fn pages_len(dir: &Path, meta: &Meta) -> Result<u64, String> {
    Ok(len_of(dir, "store")?.saturating_sub(regions(meta).pages))
}

/// The logical pages the checkpoint's `map` places whose record is lost: (logical page,
/// physical page).
pub fn lost_records(
    map: &[u32],
    records: &[u8],
    durable_prog: u64,
    trims: &[u8],
) -> Vec<(u32, u32)> {
    let mut explained: HashSet<u32> = trims
        .chunks_exact(TRIM_BYTES)
        .map(|t| u32::from_le_bytes(t[0..4].try_into().unwrap()))
        .collect();
    for raw in records.chunks_exact(RECORD_BYTES) {
        let rec = Record::decode(raw);
        if rec.programmed && rec.prog > durable_prog && rec.lpa != NONE {
            explained.insert(rec.lpa);
        }
    }
    let mut lost = Vec::new();
    for (lpa, &ppn) in map.iter().enumerate() {
        if ppn == NONE {
            continue;
        }
        let at = ppn as usize * RECORD_BYTES;
        let rec = records
            .get(at..at + RECORD_BYTES)
            .map(Record::decode)
            .unwrap_or_default();
        let holds = rec.programmed && rec.lpa == lpa as u32 && rec.prog <= durable_prog;
        if !holds && !explained.contains(&(lpa as u32)) {
            lost.push((lpa as u32, ppn));
        }
    }
    lost
}

/// The records the checkpoint's map needs that are gone, as one line (if any).
pub fn lost_line(
    dir: &Path,
    map: &[u32],
    records: &[u8],
    durable_prog: u64,
    trims: &[u8],
) -> Option<String> {
    let lost = lost_records(map, records, durable_prog, trims);
    let &(lpa, ppn) = lost.first()?;
    Some(format!(
        "{}: the OOB records of {} logical pages the checkpoint's map places are gone \
         (zeroed or damaged), the first logical page {lpa} at physical page {ppn}",
        dir.join("store").display(),
        lost.len()
    ))
}

/// Start-up over a damaged store: an error saying what is damaged and what to do.
pub fn refuse(dir: &Path, damage: Vec<String>) -> Result<(), String> {
    if damage.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the store is damaged: {}. Nothing was changed; `ftlab store check {dir}` lists the \
         damage, `ftlab store repair {dir}` rebuilds what the OOB records and the map allow",
        damage.join("; "),
        dir = dir.display()
    ))
}

struct Loaded {
    meta: Meta,
    cp: Checkpoint,
    map: Option<Vec<u32>>,
    records: Vec<u8>,
    trims: Vec<u8>,
}

fn load(dir: &Path, f: &mut Findings) -> Result<Loaded, String> {
    let meta = read_meta(dir)?.ok_or_else(|| {
        format!(
            "{}: missing: not a page store (or its description is lost: it cannot be checked)",
            dir.join("meta.json").display()
        )
    })?;
    check_format(dir, &meta)?;
    f.damage.extend(truncated(dir, &meta)?);
    let cp = match read_checkpoint(dir) {
        Ok(cp) => cp,
        Err(e) => {
            f.damage.push(e);
            Checkpoint::default()
        }
    };
    let map = match read_map(dir, &cp, meta.logical_pages) {
        Ok(map) => map,
        Err(e) => {
            f.damage.push(e);
            None
        }
    };
    let records = read_padded(dir, 0, meta.physical_pages * RECORD_BYTES as u64)?;
    let trims_len = len_of(dir, "trims")? / TRIM_BYTES as u64 * TRIM_BYTES as u64;
    let trims = std::fs::read(dir.join("trims")).unwrap_or_default();
    let trims = trims[..(trims_len as usize).min(trims.len())].to_vec();
    Ok(Loaded {
        meta,
        cp,
        map,
        records,
        trims,
    })
}

/// Verifies the store in `dir` (its owner's lock held by the caller): every file's size,
/// the checkpoint and its map, every record against the map, every programmed page's bytes
/// against its CRC.
pub fn check(dir: &Path) -> Result<Findings, String> {
    let mut f = Findings::default();
    let l = load(dir, &mut f)?;
    if let Some(map) = &l.map {
        let lost = lost_records(map, &l.records, l.cp.durable_prog, &l.trims);
        for &(lpa, ppn) in &lost {
            f.damage.push(format!(
                "logical page {lpa}: the checkpoint's map places it at physical page {ppn}, \
                 whose OOB record is gone"
            ));
        }
    }
    let pages_len = pages_len(dir, &l.meta)?;
    let base = regions(&l.meta).pages;
    let pages = File::open(dir.join("store")).map_err(|e| format!("store: {e}"))?;
    let page_size = l.meta.page_size as u64;
    let mut page = vec![0u8; page_size as usize];
    for (ppn, raw) in l.records.chunks_exact(RECORD_BYTES).enumerate() {
        let rec = Record::decode(raw);
        if !rec.programmed {
            continue;
        }
        f.records += 1;
        let at = ppn as u64 * page_size;
        page.fill(0);
        if at + page_size <= pages_len {
            pages
                .read_exact_at(&mut page, base + at)
                .map_err(|e| format!("reading physical page {ppn}: {e}"))?;
        }
        f.pages_checked += 1;
        if crc32c::crc32c(&page) == rec.crc {
            continue;
        }
        if rec.prog > l.cp.durable_prog {
            f.torn += 1;
            continue;
        }
        let what = match rec.lpa {
            NONE => "a page holding no logical page (translation page or filler)".to_string(),
            lpa => format!("logical page {lpa}"),
        };
        f.damage.push(format!(
            "physical page {ppn} ({what}): its bytes do not match their checksum{}",
            if at + page_size > pages_len {
                " (cut off: the store file was truncated)"
            } else {
                ""
            }
        ));
    }
    Ok(f)
}

/// Repairs the store in `dir` (its owner's lock held by the caller): see the module's
/// comment. Returns what was done and what could not be.
pub fn repair(dir: &Path) -> Result<Findings, String> {
    let mut f = check(dir)?;
    let l = load(dir, &mut Findings::default())?;
    let r = regions(&l.meta);
    let pages_len = pages_len(dir, &l.meta)?;
    let have = len_of(dir, "store")?;
    let path = dir.join("store");
    let store = open_rw(&path)?;
    if have < r.len {
        store
            .set_len(r.len)
            .and_then(|_| store.sync_all())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        f.repaired.push(format!(
            "{}: extended from {have} to {} bytes",
            path.display(),
            r.len
        ));
        if have < r.pages {
            f.unrepairable.push(format!(
                "the erase counts of blocks {} and up are lost (counted from 0 again)",
                have.saturating_sub(r.erase_counts) / 4
            ));
        }
    }
    let mut cp = l.cp.clone();
    if l.map.is_none() && cp.map.is_some() {
        cp.map = None;
        cp.map_crc = 0;
        f.repaired.push(
            "the checkpoint's damaged map dropped: the next start-up scans every record".into(),
        );
        f.unrepairable.push(
            "pages trimmed before the checkpoint may read their old data again (the map held \
             those trims)"
                .into(),
        );
    }
    if let Some(map) = &l.map {
        let lost = lost_records(map, &l.records, l.cp.durable_prog, &l.trims);
        let page_size = l.meta.page_size as u64;
        let mut page = vec![0u8; page_size as usize];
        let mut cut = 0;
        for &(lpa, ppn) in &lost {
            let at = ppn as u64 * page_size;
            let present = at + page_size <= pages_len;
            page.fill(0);
            if present {
                store
                    .read_exact_at(&mut page, r.pages + at)
                    .map_err(|e| format!("reading physical page {ppn}: {e}"))?;
            }
            let crc = crc32c::crc32c(&page);
            let rec = Record {
                programmed: true,
                lpa,
                // Before every write since the checkpoint, as the original was.
                seq: l.cp.last_seq,
                prog: l.cp.durable_prog,
                crc: if present { crc } else { !crc },
            };
            store
                .write_all_at(&rec.encode(), ppn as u64 * RECORD_BYTES as u64)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if !present {
                cut += 1;
                f.unrepairable.push(format!(
                    "logical page {lpa}: its bytes were cut off with the store file; reads of it \
                     fail with EIO until it is written again"
                ));
            }
        }
        store
            .sync_all()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if !lost.is_empty() {
            f.repaired.push(format!(
                "{} OOB records rebuilt from the checkpoint's map ({cut} of them over bytes that \
                 are gone)",
                lost.len()
            ));
        }
    }
    if have < r.erase_counts {
        f.unrepairable.push(format!(
            "writes since the checkpoint whose records were cut off with the store file \
             (physical pages {} and up) cannot be found: those logical pages read as at the \
             checkpoint",
            have / RECORD_BYTES as u64
        ));
    }
    for line in &f.damage {
        if line.contains("do not match their checksum") {
            f.unrepairable.push(format!(
                "{line}: the data is lost; reads of it fail with EIO until it is written again"
            ));
        }
    }
    // A store repaired is recovered at its next start-up; a sound one is left as it is.
    if !f.repaired.is_empty() {
        cp.clean = false;
        write_checkpoint(dir, &cp)?;
    }
    f.damage.clear();
    Ok(f)
}
