//! Start-up and shutdown: a new store, or the state rebuilt from an existing one; and the
//! checkpoint a clean shutdown (and every start-up) writes.
//!
//! The checkpoint (`checkpoint`, JSON) records the store-wide program number up to which
//! every page was durable, the host sequence number, whether the session ended cleanly,
//! and the file holding the logical-to-physical map then (`map-N`, one little-endian u32
//! physical page per logical page, `u32::MAX` unmapped; its CRC-32C in the checkpoint) and
//! the blocks whose records hold a programmed page (`used-N`, a bit per block). A start-up
//! over an existing store reads the OOB records (the flash model needs every programmed
//! page's header; the records play the part of each block's metadata): after a clean
//! shutdown those of the blocks `used-N` names, else all of them; records programmed
//! after the checkpoint are checked against their data's CRC (a torn or lost write is not
//! trusted), older ones were synced before the checkpoint was written. The mapping is the
//! checkpoint's map, updated from the pages programmed since (highest sequence number) and
//! the trims logged since; pages programmed before it are not looked at for the mapping.
//! The flash model is restored from the records ([`ftlab_core::device::recovery`]) and the scheme
//! rebuilds its own structure ([`ftlab_core::ftl::Ftl::recover`]), reading the latest
//! translation pages' bytes where it keeps its map on flash. Then the files are synced and
//! a new checkpoint with the rebuilt map, marked unclean until the next clean shutdown, is
//! written, and the trim log is emptied: what it said is in the map.

use crate::check;
use crate::engine::Engine;
use crate::store::{meta_for, Files, Meta, PageStore, Record};
use crate::ServeOptions;
use ftlab_core::device::recovery::{FlashImage, MapCheckpoint};
use ftlab_core::run::block_device;
use ftlab_core::run::report::Report;
use std::path::Path;
use std::time::Instant;

/// How the device started.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Startup {
    /// An existing store was opened (else a new, empty one was made).
    pub existing: bool,
    /// The last session ended with a clean shutdown (its checkpoint is current).
    pub clean: bool,
    /// Wall time of the rebuild, in seconds.
    pub recovery_seconds: f64,
    /// Bytes of OOB records read: after a clean shutdown only the records of the blocks it
    /// saved as holding programmed pages, else every record.
    pub record_bytes_read: u64,
    /// Bytes of OOB records the store holds (one per physical page).
    pub record_bytes: u64,
    /// Programmed pages among the records read, and of those, pages programmed since the
    /// checkpoint.
    pub records_scanned: u64,
    pub pages_since_checkpoint: u64,
    /// Logical pages mapped after the rebuild.
    pub mapped_pages: u64,
    /// Pages whose record did not match their data (torn writes), ignored.
    pub torn_pages: u64,
    /// The mapping started from the checkpoint's map (else from a scan of every page).
    pub from_checkpoint_map: bool,
    /// Trims read from the trim log (those logged since the checkpoint).
    pub trims_replayed: u64,
    /// Started on a full disk: no start-up checkpoint written, read-only until space is
    /// freed (why).
    pub disk_full: Option<String>,
}

pub(crate) fn read_meta(dir: &Path) -> Result<Option<Meta>, String> {
    let path = dir.join("meta.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{}: not a page store's description: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// A store of a format this build does not read is refused, saying what to do.
pub(crate) fn check_format(dir: &Path, meta: &Meta) -> Result<(), String> {
    if meta.format == crate::store::FORMAT {
        return Ok(());
    }
    let upgrade = match meta.format {
        1 => "`ftlab serve` converts it when it starts on it",
        _ => "use the ftlab that made it",
    };
    Err(format!(
        "{}: a store of format {}; this ftlab reads format {} ({upgrade})",
        dir.join("meta.json").display(),
        meta.format,
        crate::store::FORMAT
    ))
}

pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

/// Checks what serving needs of the configuration.
fn check_config(opts: &ServeOptions) -> Result<(), String> {
    if opts.cfg.buffer.cache_reads {
        return Err(
            "buffer.cache_reads is not supported by serve: a read cached in the write buffer \
             has no staged bytes"
                .into(),
        );
    }
    Ok(())
}

/// Opens the store in `opts.store`: a new one, or the state rebuilt from an existing one.
pub fn open(opts: &ServeOptions, epoch: Instant) -> Result<(Engine, Startup), String> {
    check_config(opts)?;
    let layout = opts.cfg.validate().map_err(|e| e.to_string())?;
    let meta = meta_for(&opts.scheme, &layout);
    if let Some(mut existing) = read_meta(&opts.store)? {
        if existing.format == 1 {
            crate::store::upgrade(&opts.store, &existing)?;
            existing.format = crate::store::FORMAT;
        }
        check_format(&opts.store, &existing)?;
        if existing != meta {
            return Err(format!(
                "{} holds a store for scheme `{}` with {} blocks of {} pages of {} bytes; this \
                 device is `{}` with {} blocks of {} pages of {} bytes (use another --store)",
                opts.store.display(),
                existing.scheme,
                existing.total_blocks,
                existing.pages_per_block,
                existing.page_size,
                meta.scheme,
                meta.total_blocks,
                meta.pages_per_block,
                meta.page_size
            ));
        }
        return reopen(opts, &meta, epoch);
    }
    let files = Files::open(&opts.store, &meta, opts.preallocate)?;
    let text = serde_json::to_string_pretty(&meta).map_err(|e| e.to_string())?;
    write_atomically(&opts.store.join("meta.json"), text.as_bytes())?;
    write_checkpoint(&opts.store, &Checkpoint::default())?;
    let pages = meta.physical_pages as usize;
    let store = PageStore::new(
        files,
        &meta,
        1,
        vec![0; meta.total_blocks as usize],
        vec![0; pages],
        0,
    );
    if opts.sync_poll {
        store.sync_group().poll_syncs();
    }
    let device =
        block_device::open_with_sink(&opts.scheme, &opts.cfg, opts.verify, Box::new(store))
            .map_err(|e| e.to_string())?;
    Ok((
        Engine::new(device, epoch, reserve(opts))?,
        Startup::default(),
    ))
}

/// The free space writes need under the store.
fn reserve(opts: &ServeOptions) -> u64 {
    crate::space::SpaceGuard::reserve_for(opts.cfg.buffer.size_bytes)
}

/// What `checkpoint` says.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// Written by a clean shutdown (else by the start-up of a session that has not ended
    /// cleanly).
    pub clean: bool,
    /// Every page programmed up to this program number was durable.
    pub durable_prog: u64,
    /// The last host write sequence number of the session.
    pub last_seq: u64,
    /// The file holding the map at `durable_prog` (none: a scan of every page rebuilds it),
    /// and its CRC-32C.
    #[serde(default)]
    pub map: Option<String>,
    #[serde(default)]
    pub map_crc: u32,
    /// The file holding a bit per block, set for the blocks whose records hold a programmed
    /// page (`used-N`, little-endian u64 words), and its CRC-32C: trusted after a clean
    /// shutdown only, when start-up reads the records of those blocks alone.
    #[serde(default)]
    pub used_blocks: Option<String>,
    #[serde(default)]
    pub used_blocks_crc: u32,
}

pub(crate) fn read_checkpoint(dir: &Path) -> Result<Checkpoint, String> {
    let path = dir.join("checkpoint");
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a checkpoint: {e}", path.display())),
        // A store whose first session died before its first checkpoint: nothing is trusted
        // without its CRC.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Checkpoint::default()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

pub(crate) fn write_checkpoint(dir: &Path, cp: &Checkpoint) -> Result<(), String> {
    let text = serde_json::to_string_pretty(cp).map_err(|e| e.to_string())?;
    write_atomically(&dir.join("checkpoint"), text.as_bytes())
}

/// Writes a checkpoint with the engine's map (everything flushed and synced before):
/// the map file first, then the checkpoint naming it; then the trim log is emptied (what
/// it said is in the map) and older map files go.
fn checkpoint_with_map(engine: &mut Engine, dir: &Path, clean: bool) -> Result<(), String> {
    let map = engine.mapping()?;
    let durable_prog = engine.store().next_prog() - 1;
    let bytes: Vec<u8> = map.iter().flat_map(|p| p.to_le_bytes()).collect();
    let name = format!("map-{durable_prog}");
    write_atomically(&dir.join(&name), &bytes)?;
    let used: Vec<u8> = engine
        .store()
        .used_blocks()
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let used_name = format!("used-{durable_prog}");
    write_atomically(&dir.join(&used_name), &used)?;
    write_checkpoint(
        dir,
        &Checkpoint {
            clean,
            durable_prog,
            last_seq: engine.last_seq(),
            map: Some(name.clone()),
            map_crc: crc32c::crc32c(&bytes),
            used_blocks: Some(used_name.clone()),
            used_blocks_crc: crc32c::crc32c(&used),
        },
    )?;
    engine.store().reset_trim_log()?;
    engine
        .store()
        .files()
        .trims
        .sync_data()
        .map_err(|e| format!("the trim log: {e}"))?;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let file = entry.file_name();
            let file = file.to_string_lossy();
            let old_map = file.starts_with("map-") && file != name;
            if old_map || (file.starts_with("used-") && file != used_name) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    Ok(())
}

/// The map a checkpoint names, checked against its CRC.
pub(crate) fn read_map(
    dir: &Path,
    cp: &Checkpoint,
    logical: u64,
) -> Result<Option<Vec<u32>>, String> {
    let Some(name) = &cp.map else {
        return Ok(None);
    };
    let path = dir.join(name);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 != logical * 4 || crc32c::crc32c(&bytes) != cp.map_crc {
        return Err(format!(
            "{}: the checkpoint's map is damaged (its size or CRC does not match); the store \
             cannot be recovered safely",
            path.display()
        ));
    }
    Ok(Some(
        bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .collect(),
    ))
}

/// The blocks a clean shutdown saved as holding programmed pages, a bit each; `None` when
/// the checkpoint names no such file or it does not match its CRC (then every record is
/// read: the file only spares reading the others).
fn read_used_blocks(dir: &Path, cp: &Checkpoint, blocks: u32) -> Option<Vec<u64>> {
    let bytes = std::fs::read(dir.join(cp.used_blocks.as_ref()?)).ok()?;
    let words = (blocks as usize).div_ceil(64);
    if bytes.len() != words * 8 || crc32c::crc32c(&bytes) != cp.used_blocks_crc {
        return None;
    }
    Some(
        bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .collect(),
    )
}

/// The records of the blocks set in `used` (runs of neighbours read at once), zeros
/// elsewhere, and the physical page ranges read.
fn read_used_records(
    region: &crate::store::Region,
    used: &[u64],
    meta: &Meta,
) -> Result<(Vec<u8>, Vec<std::ops::Range<usize>>), String> {
    let per_block = meta.pages_per_block as usize;
    let is_used = |b: usize| used[b / 64] >> (b % 64) & 1 == 1;
    let mut records = vec![0u8; meta.physical_pages as usize * crate::store::RECORD_BYTES];
    let mut ranges = Vec::new();
    let blocks = meta.total_blocks as usize;
    let mut b = 0;
    while b < blocks {
        if !is_used(b) {
            b += 1;
            continue;
        }
        let start = b;
        while b < blocks && is_used(b) {
            b += 1;
        }
        let pages = start * per_block..b * per_block;
        let bytes =
            pages.start * crate::store::RECORD_BYTES..pages.end * crate::store::RECORD_BYTES;
        region
            .read_exact_at(&mut records[bytes.clone()], bytes.start as u64)
            .map_err(|e| format!("reading the OOB records of blocks {start}..{b}: {e}"))?;
        ranges.push(pages);
    }
    Ok((records, ranges))
}

fn read_all(file: &std::fs::File, len: u64, what: &str) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, 0)
        .map_err(|e| format!("reading the {what}: {e}"))?;
    Ok(buf)
}

fn read_region(region: &crate::store::Region, what: &str) -> Result<Vec<u8>, String> {
    region
        .read_all()
        .map_err(|e| format!("reading the {what}: {e}"))
}

/// Rebuilds the device from an existing store.
fn reopen(opts: &ServeOptions, meta: &Meta, epoch: Instant) -> Result<(Engine, Startup), String> {
    let t0 = Instant::now();
    let cp = read_checkpoint(&opts.store)?;
    // A truncated file is refused, not extended (half the device would read zeros).
    check::refuse(&opts.store, check::truncated(&opts.store, meta)?)?;
    let files = Files::open(&opts.store, meta, opts.preallocate)?;
    // After a clean shutdown, the records of the blocks it saved as holding programmed
    // pages; else all of them.
    let used = match cp.clean {
        true => read_used_blocks(&opts.store, &cp, meta.total_blocks),
        false => None,
    };
    let (records, ranges) = match &used {
        Some(used) => read_used_records(&files.oob, used, meta)?,
        None => {
            let all = read_region(&files.oob, "OOB records")?;
            let every = std::iter::once(0..meta.physical_pages as usize);
            (all, every.collect())
        }
    };
    let mut startup = Startup {
        existing: true,
        clean: cp.clean,
        record_bytes_read: ranges.iter().map(|r| r.len()).sum::<usize>() as u64
            * crate::store::RECORD_BYTES as u64,
        record_bytes: meta.physical_pages * crate::store::RECORD_BYTES as u64,
        ..Startup::default()
    };
    let mut image = FlashImage::default();
    if let Some(live) = read_map(&opts.store, &cp, meta.logical_pages)? {
        startup.from_checkpoint_map = true;
        image.checkpoint = Some(MapCheckpoint {
            live,
            durable_prog: cp.durable_prog,
            last_seq: cp.last_seq,
        });
    }
    let mut page = vec![0u8; meta.page_size as usize];
    let mut max_prog = cp.durable_prog;
    let mut crcs = vec![0u32; meta.physical_pages as usize];
    let mut used_blocks = Vec::new();
    for ppn in ranges.into_iter().flatten() {
        let at = ppn * crate::store::RECORD_BYTES;
        let rec = Record::decode(&records[at..at + crate::store::RECORD_BYTES]);
        if !rec.programmed {
            continue;
        }
        if used_blocks.last() != Some(&(ppn as u32 / meta.pages_per_block)) {
            used_blocks.push(ppn as u32 / meta.pages_per_block);
        }
        crcs[ppn] = rec.crc;
        startup.records_scanned += 1;
        if rec.prog > cp.durable_prog {
            startup.pages_since_checkpoint += 1;
            let at = ppn as u64 * meta.page_size as u64;
            files
                .pages
                .read_exact_at(&mut page, at)
                .map_err(|e| format!("reading physical page {ppn}: {e}"))?;
            if crc32c::crc32c(&page) != rec.crc {
                startup.torn_pages += 1;
                continue;
            }
        }
        max_prog = max_prog.max(rec.prog);
        image.pages.push((ppn as u32, rec.oob(), rec.prog));
    }
    // The bytes of the latest copy of each page holding no logical page (translation
    // pages): schemes with their map on flash check them against the scan.
    let mut latest: std::collections::HashMap<u64, (u64, u32)> = Default::default();
    for &(ppn, oob, prog) in &image.pages {
        if oob.lpa == ftlab_core::device::nand::NONE && oob != ftlab_core::device::nand::Oob::FILLER
        {
            let e = latest.entry(oob.seq).or_insert((prog, ppn));
            if prog >= e.0 {
                *e = (prog, ppn);
            }
        }
    }
    let mut keys: Vec<_> = latest.into_values().map(|(_, ppn)| ppn).collect();
    keys.sort_unstable();
    for ppn in keys {
        let at = ppn as u64 * meta.page_size as u64;
        files
            .pages
            .read_exact_at(&mut page, at)
            .map_err(|e| format!("reading physical page {ppn}: {e}"))?;
        image.contents.push((ppn, page.clone()));
    }
    let blocks = read_region(&files.blocks, "erase counts")?;
    image.erase_counts = blocks
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let trim_len = files
        .trims
        .metadata()
        .map_err(|e| format!("the trim log: {e}"))?
        .len()
        / crate::store::TRIM_BYTES as u64
        * crate::store::TRIM_BYTES as u64;
    let trims = read_all(&files.trims, trim_len, "trim log")?;
    image.trims = trims
        .chunks_exact(crate::store::TRIM_BYTES)
        .map(|t| {
            (
                u32::from_le_bytes(t[0..4].try_into().unwrap()),
                u64::from_le_bytes(t[8..16].try_into().unwrap()),
            )
        })
        .collect();
    startup.trims_replayed = image.trims.len() as u64;
    if let Some(cp) = &image.checkpoint {
        let lost = check::lost_line(&opts.store, &cp.live, &records, cp.durable_prog, &trims);
        check::refuse(&opts.store, lost.into_iter().collect())?;
    }
    let erase_counts = image.erase_counts.clone();
    let mut store = PageStore::new(files, meta, max_prog + 1, erase_counts, crcs, trim_len);
    for block in used_blocks {
        store.mark_used(block);
    }
    if opts.sync_poll {
        store.sync_group().poll_syncs();
    }
    let (device, info) = block_device::open_recovered(
        &opts.scheme,
        &opts.cfg,
        opts.verify,
        Box::new(store),
        &image,
    )
    .map_err(|e| e.to_string())?;
    startup.mapped_pages = info.mapped_pages;
    let mut engine = Engine::new(device, epoch, reserve(opts))?;
    // What the rebuild wrote, and what was found, is durable before the new checkpoint.
    engine
        .store()
        .prepare_sync()
        .and_then(|_| engine.store().sync_group().sync())?;
    // After a clean shutdown whose state the rebuild left as it was (nothing programmed,
    // no trim replayed), the checkpoint's map is still the map: the session's checkpoint
    // names it rather than writing it again (on a large device, a map file of 4 bytes per
    // logical page and its sync).
    let unchanged = cp.clean
        && cp.map.is_some()
        && startup.trims_replayed == 0
        && engine.store().next_prog() == cp.durable_prog + 1;
    let written = if unchanged {
        write_checkpoint(
            &opts.store,
            &Checkpoint {
                clean: false,
                last_seq: engine.last_seq(),
                ..cp
            },
        )
    } else {
        checkpoint_with_map(&mut engine, &opts.store, false)
    };
    if let Err(e) = written {
        // On a full disk the device serves reads; its writes wait for space (the last
        // checkpoint and the trim log since stay as they were, still right).
        if !engine.disk_full() {
            return Err(e);
        }
        startup.disk_full = Some(e);
    }
    startup.recovery_seconds = t0.elapsed().as_secs_f64();
    Ok((engine, startup))
}

/// Clean shutdown: the write buffer to flash, everything synced, the checkpoint written;
/// returns the session's report.
pub fn shut_down(mut engine: Engine, opts: &ServeOptions) -> Result<Report, String> {
    let sync = engine
        .flush()
        .map_err(|f| format!("final flush: {}", f.message))?;
    sync.sync()?;
    // Every erase recorded before the checkpoint.
    engine
        .store()
        .prepare_sync()
        .and_then(|_| engine.store().sync_group().sync())?;
    if let Some(e) = engine.failed() {
        return Err(format!(
            "the device failed during the session ({e}); no clean checkpoint written"
        ));
    }
    if let Err(e) = checkpoint_with_map(&mut engine, &opts.store, true) {
        if !engine.disk_full() {
            return Err(e);
        }
        // Everything acknowledged is durable: the next start-up recovers it.
        eprintln!(
            "ftlab serve: no clean checkpoint written, the disk is full ({e}); the next \
             start-up recovers from the store"
        );
    }
    let device = engine.into_device();
    device.finish().map_err(|e| e.to_string())
}
