//! The page store: the device's bytes under `--store`, keyed by physical page, so that they
//! live where the scheme's mapping puts them.
//!
//! Format 2 (`meta.json`'s `format`; every integer little-endian). One file, `store`, so
//! that one fdatasync makes a flush durable (data and records together, and the file
//! system's own metadata with them), in three regions ([`Regions`]):
//! - records, at 0: one 32-byte OOB record per physical page: state (`PROGRAMMED` or 0
//!   for erased), logical page (`u32::MAX`: none, e.g. a translation page), sequence number
//!   (host write or translation page number), program number (a store-wide counter: which
//!   of two programs came later), CRC-32C of the page's bytes;
//! - erase counts, right after: one u32 per block;
//! - pages, from the next 4 KiB boundary: `physical_pages x page_size` bytes, page `ppn` at
//!   `ppn x page_size` within the region.
//!
//! Beside it: `trims`, the trim log, 16-byte records (logical page, last host sequence
//! number at the trim), so that a trimmed page stays trimmed across a crash; `meta.json`,
//! the scheme and geometry the store was made for; `checkpoint`, written by a clean
//! shutdown ([`crate::recovery`]). A store of format 1 (separate `pages`, `oob` and
//! `blocks` files) is converted by `ftlab serve` when it starts on it ([`upgrade`]);
//! `ftlab store check` refuses it until then, saying so.
//!
//! The records and erase counts are written with zeros when the store is made, and the
//! pages region is allocated (`fallocate`, if it takes at most half the free space;
//! `--preallocate` writes it with zeros), so that a write seldom allocates and a flush
//! seldom waits for the file system's journal.
//!
//! Ordering, so that recovery never exposes bytes that were not written there: a page's
//! data is written before its record, and the record's CRC must match the data for the
//! page to count as programmed (a torn page is not trusted). An erased block's records are
//! cleared only after the pages that garbage collection copied out of it are durable, and
//! a block erased since the last sync is synced before any page of it is programmed again,
//! so the source of a copy survives until its destination does. FLUSH (and FUA) fdatasync
//! the files written since their last sync (the store file, as a rule: one fdatasync;
//! the trim log too after a trim); concurrent flushes share one round (group commit,
//! [`SyncGroup`]); records of erased blocks are cleared after any sync that covers their
//! copies, not by a sync of their own.
//!
//! Programs are batched in memory (up to 8 MiB, [`PageStore::drain`]) and written sorted by
//! physical page: a run of consecutive pages with one pwritev, its records with one write.
//! A scheme striping over dies programs the pages of a block far apart in time, so writing
//! each at once cost two syscalls per page. The batch is written before a page of it is
//! read, before an erase and before every sync; it is process memory as the write buffer's
//! staged pages are, so a crash loses only what no flush has covered.
//!
//! Every page read is checked against its record's CRC (kept in memory, [`PageStore::crcs`]):
//! a mismatch is a media error of the request that read it ([`PageStore::take_media_error`]),
//! never data returned as good; GC copies a damaged page with its old CRC, so that the
//! damage stays visible where the page goes.
//!
//! Host data reaches the store before the simulator numbers it: the front stages each page
//! under the sequence number it will get ([`PageStore::stage`]); the flash model's program
//! of that page writes it. Partial pages are completed when the simulator's
//! read-modify-write read serves the old page ([`PageStore::stage_partial`]).

use ftlab_core::device::nand::{Oob, PageSink, Ppn, ServedPage, NONE};
use ftlab_core::run::config::Layout;
use std::any::Any;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Record state of a programmed page.
const PROGRAMMED: u32 = 0x4547_4150; // "PAGE"
pub const RECORD_BYTES: usize = 32;
pub const TRIM_BYTES: usize = 16;

/// One page's OOB record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub programmed: bool,
    pub lpa: u32,
    pub seq: u64,
    /// Store-wide program number (later programs have higher numbers).
    pub prog: u64,
    pub crc: u32,
}

impl Record {
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        if self.programmed {
            b[0..4].copy_from_slice(&PROGRAMMED.to_le_bytes());
            b[4..8].copy_from_slice(&self.lpa.to_le_bytes());
            b[8..16].copy_from_slice(&self.seq.to_le_bytes());
            b[16..24].copy_from_slice(&self.prog.to_le_bytes());
            b[24..28].copy_from_slice(&self.crc.to_le_bytes());
        }
        b
    }

    pub fn decode(b: &[u8]) -> Record {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        if u32_at(0) != PROGRAMMED {
            return Record::default();
        }
        Record {
            programmed: true,
            lpa: u32_at(4),
            seq: u64_at(8),
            prog: u64_at(16),
            crc: u32_at(24),
        }
    }

    pub fn oob(&self) -> Oob {
        Oob {
            lpa: self.lpa,
            seq: self.seq,
        }
    }
}

/// Fsyncs shared by concurrent flushes: a flush waits for a sync that started after its
/// writes, and one sync covers every flush waiting for it.
pub struct SyncGroup {
    files: Vec<Arc<File>>,
    /// Whether each file was written since its last sync: a flush syncs only those (the
    /// store file, as a rule; the trim log after a trim).
    dirty: Vec<AtomicBool>,
    /// fdatasync calls made.
    pub fsyncs: AtomicU64,
    state: Mutex<SyncState>,
    done: Condvar,
    /// A thread spinning while a sync is in flight (`--sync-poll`), once started.
    poller: std::sync::OnceLock<crate::sync_poll::SyncPoller>,
}

/// The files of [`SyncGroup`], by index.
const STORE: usize = 0;
const TRIMS: usize = 1;

#[derive(Default)]
struct SyncState {
    /// Generations: a sync started at generation g makes durable every write made before it.
    started: u64,
    completed: u64,
    running: bool,
    error: Option<String>,
}

impl SyncGroup {
    fn new(files: Vec<Arc<File>>) -> Self {
        SyncGroup {
            dirty: files.iter().map(|_| AtomicBool::new(false)).collect(),
            fsyncs: AtomicU64::new(0),
            files,
            state: Mutex::new(SyncState::default()),
            done: Condvar::new(),
            poller: std::sync::OnceLock::new(),
        }
    }

    /// Keeps a CPU busy during each sync from now on ([`crate::sync_poll`]).
    pub fn poll_syncs(&self) {
        if let Some(poller) = crate::sync_poll::SyncPoller::start() {
            let _ = self.poller.set(poller);
        }
    }

    /// Makes every write issued before the call durable (without the device lock held).
    pub fn sync(&self) -> Result<(), String> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // A sync that starts after this point covers our writes.
        let needed = st.started + 1;
        loop {
            if let Some(e) = &st.error {
                return Err(e.clone());
            }
            if st.completed >= needed {
                return Ok(());
            }
            if !st.running {
                break;
            }
            st = self.done.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.running = true;
        st.started += 1;
        let generation = st.started;
        drop(st);
        let result = self.sync_now();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.running = false;
        st.completed = generation;
        if let Err(e) = &result {
            st.error = Some(e.clone());
        }
        self.done.notify_all();
        result
    }

    fn sync_now(&self) -> Result<(), String> {
        match self.poller.get() {
            Some(poller) => poller.during(|| self.sync_files()),
            None => self.sync_files(),
        }
    }

    fn sync_files(&self) -> Result<(), String> {
        for (f, dirty) in self.files.iter().zip(&self.dirty) {
            if dirty.swap(false, Ordering::SeqCst) {
                self.fsyncs.fetch_add(1, Ordering::Relaxed);
                f.sync_data().map_err(|e| {
                    dirty.store(true, Ordering::SeqCst);
                    format!("fsync of the page store: {e}")
                })?;
            }
        }
        Ok(())
    }

    /// File `file` was written (the next sync covers it).
    fn wrote(&self, file: usize) {
        self.dirty[file].store(true, Ordering::SeqCst);
    }

    /// The generation a sync starting from now will have: the writes made so far are
    /// durable once [`SyncGroup::completed`] reaches it.
    fn next_generation(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).started + 1
    }

    fn completed(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .completed
    }
}

/// What the store was made for (`meta.json`): a store is reopened only with the same scheme
/// and geometry.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Meta {
    pub format: u32,
    pub scheme: String,
    pub page_size: u32,
    pub pages_per_block: u32,
    pub total_blocks: u32,
    pub physical_pages: u64,
    pub logical_pages: u64,
}

/// The store format this build reads and writes.
pub const FORMAT: u32 = 2;

/// Where the regions of the `store` file start, and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regions {
    pub erase_counts: u64,
    pub pages: u64,
    pub len: u64,
}

/// The pages start on a 4 KiB boundary, so that page writes are aligned on disk.
const PAGES_ALIGN: u64 = 4096;

pub fn regions(meta: &Meta) -> Regions {
    let erase_counts = meta.physical_pages * RECORD_BYTES as u64;
    let pages = (erase_counts + meta.total_blocks as u64 * 4).div_ceil(PAGES_ALIGN) * PAGES_ALIGN;
    Regions {
        erase_counts,
        pages,
        len: pages + meta.physical_pages * meta.page_size as u64,
    }
}

pub fn meta_for(scheme: &str, layout: &Layout) -> Meta {
    Meta {
        format: FORMAT,
        scheme: scheme.to_string(),
        page_size: layout.page_size,
        pages_per_block: layout.pages_per_block,
        total_blocks: layout.total_blocks,
        physical_pages: layout.physical_pages,
        logical_pages: layout.logical_pages,
    }
}

/// A part of the `store` file, addressed from its start.
#[derive(Clone)]
pub struct Region {
    file: Arc<File>,
    base: u64,
    len: u64,
}

impl Region {
    pub fn read_exact_at(&self, buf: &mut [u8], at: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, self.base + at)
    }

    pub fn write_all_at(&self, buf: &[u8], at: u64) -> io::Result<()> {
        self.file.write_all_at(buf, self.base + at)
    }

    /// Writes `bufs` one after the other from `at`, in as few pwritev calls as the kernel
    /// allows.
    pub fn write_vectored_at(&self, bufs: &[&[u8]], at: u64) -> io::Result<()> {
        use std::os::unix::io::AsRawFd;
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let mut done = 0usize;
        while done < total {
            // The buffers from `done` on (the first cut where a short write stopped).
            let mut skip = done;
            let mut iov: Vec<libc::iovec> = Vec::with_capacity(bufs.len());
            for b in bufs {
                if skip >= b.len() {
                    skip -= b.len();
                    continue;
                }
                iov.push(libc::iovec {
                    iov_base: b[skip..].as_ptr() as *mut libc::c_void,
                    iov_len: b.len() - skip,
                });
                skip = 0;
                if iov.len() == 1024 {
                    break; // IOV_MAX
                }
            }
            // SAFETY: the iovecs point into `bufs`, alive for the call.
            let n = unsafe {
                libc::pwritev(
                    self.file.as_raw_fd(),
                    iov.as_ptr(),
                    iov.len() as libc::c_int,
                    (self.base + at + done as u64) as libc::off_t,
                )
            };
            match n {
                n if n > 0 => done += n as usize,
                0 => return Err(io::ErrorKind::WriteZero.into()),
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// The whole region. The file's holes in it (never written, or allocated and never
    /// written: `SEEK_DATA` skips both on ext4 and XFS) are not read: they read as zeros,
    /// which the buffer holds already, its memory untouched until then. The records of a
    /// large store mostly written nowhere (a 64 GiB device of 2 KiB pages has a GiB of
    /// them) then cost what was written, not the device's size.
    pub fn read_all(&self) -> io::Result<Vec<u8>> {
        use std::os::unix::io::AsRawFd;
        let mut buf = vec![0u8; self.len as usize];
        let (start, end) = (self.base, self.base + self.len);
        let fd = self.file.as_raw_fd();
        // SAFETY: lseek on an open descriptor; only its offset changes, which nothing else
        // uses (every read and write of the store gives its own).
        let seek = |at: u64, whence: libc::c_int| match unsafe {
            libc::lseek(fd, at as libc::off_t, whence)
        } {
            -1 => Err(io::Error::last_os_error()),
            to => Ok(to as u64),
        };
        let mut at = start;
        while at < end {
            let data = match seek(at, libc::SEEK_DATA) {
                Ok(data) => data,
                // No data past `at`.
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) => break,
                Err(e) => return Err(e),
            };
            if data >= end {
                break;
            }
            let hole = seek(data, libc::SEEK_HOLE)?.min(end);
            self.file.read_exact_at(
                &mut buf[(data - start) as usize..(hole - start) as usize],
                data,
            )?;
            at = hole;
        }
        Ok(buf)
    }
}

/// The open files of a store.
pub struct Files {
    pub dir: PathBuf,
    /// The `store` file, and its regions.
    pub store: Arc<File>,
    pub oob: Region,
    pub blocks: Region,
    pub pages: Region,
    pub trims: Arc<File>,
}

fn io_err(path: &Path, e: io::Error) -> String {
    format!("{}: {e}", path.display())
}

/// Opens `path` for reading and writing, creating it if missing and keeping what it holds;
/// an error names the file.
pub(crate) fn open_rw(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io_err(path, e))
}

impl Files {
    /// Opens (creating if needed) the files of the store in `dir`, sized for `meta`; the
    /// records and erase counts are allocated with zeros, the pages with `fallocate` (with
    /// `preallocate`, with zeros written: no write then changes the file system's metadata).
    pub fn open(dir: &Path, meta: &Meta, preallocate: bool) -> Result<Files, String> {
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        let open = |name: &str, len: u64| -> Result<Arc<File>, String> {
            let path = dir.join(name);
            let f = open_rw(&path)?;
            let have = f.metadata().map_err(|e| io_err(&path, e))?.len();
            if have < len {
                f.set_len(len).map_err(|e| io_err(&path, e))?;
            }
            Ok(Arc::new(f))
        };
        let r = regions(meta);
        let store = open("store", r.len)?;
        let region = |base: u64, end: u64| Region {
            file: store.clone(),
            base,
            len: end - base,
        };
        let files = Files {
            dir: dir.to_path_buf(),
            oob: region(0, r.erase_counts),
            blocks: region(
                r.erase_counts,
                r.erase_counts + meta.total_blocks as u64 * 4,
            ),
            pages: region(r.pages, r.len),
            store,
            trims: open("trims", 0)?,
        };
        // Allocated on disk, so that recording a program or an erase never meets a full
        // disk, and a write seldom makes a flush commit the file system's journal for a new
        // block. On a full disk the holes stay (the free-space reserve covers them,
        // [`crate::space`]). (Records of a device of terabytes stay sparse unless asked:
        // gigabytes of zeros.)
        let path = dir.join("store");
        let allocated = if preallocate || r.pages <= 1 << 30 {
            fill_holes(&files.store, 0, if preallocate { r.len } else { r.pages })
        } else {
            Ok(())
        };
        // (The pages only while they take at most half the free space: a default must not
        // fill a shared disk; a fallocate cut short by ENOSPC would keep what it took.)
        let room = crate::space::free_bytes(dir).unwrap_or(0);
        let allocated = allocated.and_then(|()| match r.len - r.pages <= room / 2 {
            true => allocate(&files.store, r.pages, r.len),
            false => Ok(()),
        });
        match allocated {
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {}
            other => other.map_err(|e| io_err(&path, e))?,
        }
        Ok(files)
    }
}

/// Allocates `from .. to` of `file` (`fallocate`, the size kept); a file system without it
/// leaves the file sparse.
fn allocate(file: &File, from: u64, to: u64) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: fallocate on an open descriptor.
    let r = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_KEEP_SIZE,
            from as libc::off_t,
            (to - from) as libc::off_t,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => Ok(()),
        _ => Err(e),
    }
}

/// Writes zeros into the holes of `from .. len` of `file` (a sparse file's unallocated
/// ranges), so that later writes there allocate nothing. Data stays as it is.
fn fill_holes(file: &File, from: u64, len: u64) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let fd = file.as_raw_fd();
    let zeros = vec![0u8; 1 << 20];
    let mut at = from;
    while at < len {
        // SAFETY: lseek on an open descriptor.
        let hole = unsafe { libc::lseek(fd, at as libc::off_t, libc::SEEK_HOLE) };
        if hole < 0 {
            return Err(io::Error::last_os_error());
        }
        let hole = hole as u64;
        if hole >= len {
            break;
        }
        // SAFETY: as above; ENXIO: no data after the hole.
        let data = unsafe { libc::lseek(fd, hole as libc::off_t, libc::SEEK_DATA) };
        let end = if data < 0 {
            len
        } else {
            (data as u64).min(len)
        };
        let mut p = hole;
        while p < end {
            let n = (end - p).min(zeros.len() as u64) as usize;
            file.write_all_at(&zeros[..n], p)?;
            p += n as u64;
        }
        at = end;
    }
    Ok(())
}

/// A staged host page: the bytes of host write `seq` of logical page `lpa`.
struct Staged {
    lpa: u32,
    data: Box<[u8]>,
}

/// A partial page write waiting for the old page (read-modify-write).
struct Partial {
    lpa: u32,
    seq: u64,
    offset: usize,
    data: Vec<u8>,
}

/// A program not yet written to the store file.
struct Program {
    ppn: Ppn,
    data: Box<[u8]>,
    record: Record,
}

/// Programs wait in memory up to this many bytes, so that consecutive pages of a block
/// (which a scheme striping over dies programs apart) go to the file in one call.
const BATCH_BYTES: usize = 8 << 20;

/// The page store, attached to the flash model as its [`PageSink`].
pub struct PageStore {
    files: Files,
    page_size: usize,
    pages_per_block: u32,
    sync: Arc<SyncGroup>,
    /// Host pages not yet programmed, by sequence number.
    staged: HashMap<u64, Staged>,
    /// The newest staged sequence number of each logical page.
    newest: HashMap<u32, u64>,
    /// Staged copies replaced during the current request.
    superseded: Vec<u64>,
    partial: Vec<Partial>,
    /// Spare page buffers.
    pool: Vec<Box<[u8]>>,
    /// The next program number.
    next_prog: u64,
    erase_counts: Vec<u32>,
    /// Erased blocks whose records are still to clear, each with the sync generation that
    /// makes the copies out of it durable; and whether each block is in the list.
    erased: Vec<(u32, u64)>,
    erased_flag: Vec<bool>,
    /// Pages of the last host read, in address order.
    out: Vec<u8>,
    /// The CRC-32C each physical page's record holds.
    crcs: Vec<u32>,
    /// The media error the current request met (a page whose bytes fail their CRC).
    media: Option<String>,
    /// Media errors met in the session.
    pub media_errors: u64,
    /// Host writes completing a damaged page (a read-modify-write over it): programmed
    /// with a CRC that does not match, so that reads of the page fail as before.
    poisoned: std::collections::HashSet<u64>,
    scratch: Vec<u8>,
    /// Programs not yet written ([`PageStore::drain`]), and whether each physical page has
    /// one.
    batch: Vec<Program>,
    batched: Vec<bool>,
    trim_end: u64,
    /// The first I/O or consistency error: the device stops serving writes after it.
    error: Option<String>,
    /// Syncs forced by reprogramming a block erased since the last sync.
    pub barrier_syncs: u64,
    /// A bit per block: whether its records hold a programmed page (set by a program,
    /// cleared by the erase). A clean shutdown saves it, so that the next start-up reads
    /// only those blocks' records ([`crate::recovery`]).
    used_blocks: Vec<u64>,
}

impl PageStore {
    /// A store over `files`; `next_prog`, `erase_counts`, `crcs` (per physical page) and
    /// `trim_end` come from what the files hold (a new store: 1, zeros, zeros, 0).
    pub fn new(
        files: Files,
        meta: &Meta,
        next_prog: u64,
        erase_counts: Vec<u32>,
        crcs: Vec<u32>,
        trim_end: u64,
    ) -> Self {
        let sync = Arc::new(SyncGroup::new(vec![
            files.store.clone(),
            files.trims.clone(),
        ]));
        let blocks = meta.total_blocks as usize;
        PageStore {
            files,
            page_size: meta.page_size as usize,
            pages_per_block: meta.pages_per_block,
            sync,
            staged: HashMap::new(),
            newest: HashMap::new(),
            superseded: Vec::new(),
            partial: Vec::new(),
            pool: Vec::new(),
            next_prog,
            erase_counts,
            erased: Vec::new(),
            erased_flag: vec![false; blocks],
            out: Vec::new(),
            crcs,
            media: None,
            media_errors: 0,
            poisoned: Default::default(),
            scratch: vec![0; meta.page_size as usize],
            batch: Vec::new(),
            batched: vec![false; meta.physical_pages as usize],
            trim_end,
            error: None,
            barrier_syncs: 0,
            used_blocks: vec![0; blocks.div_ceil(64)],
        }
    }

    /// The blocks whose records hold a programmed page, a bit each (little-endian words).
    pub fn used_blocks(&self) -> &[u64] {
        &self.used_blocks
    }

    /// Marks `block` as holding programmed pages (a reopened store's, found by the scan).
    pub fn mark_used(&mut self, block: u32) {
        self.used_blocks[block as usize / 64] |= 1 << (block % 64);
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    pub fn dir(&self) -> &Path {
        &self.files.dir
    }

    /// The group-commit handle (usable without the device lock).
    pub fn sync_group(&self) -> Arc<SyncGroup> {
        self.sync.clone()
    }

    /// The first error the store met since the last call, if any.
    pub fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }

    fn fail(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(message);
        }
    }

    fn buffer(&mut self) -> Box<[u8]> {
        self.pool
            .pop()
            .unwrap_or_else(|| vec![0u8; self.page_size].into_boxed_slice())
    }

    /// Drops staged copy `seq`.
    fn drop_staged(&mut self, seq: u64) -> Option<Staged> {
        self.poisoned.remove(&seq);
        self.staged.remove(&seq)
    }

    fn recycle(&mut self, b: Box<[u8]>) {
        if self.pool.len() < 1024 + BATCH_BYTES / self.page_size {
            self.pool.push(b);
        }
    }

    /// Stages a whole page of host write `seq` of `lpa`.
    pub fn stage(&mut self, lpa: u32, seq: u64, data: &[u8]) {
        let mut b = self.buffer();
        b.copy_from_slice(data);
        self.staged.insert(seq, Staged { lpa, data: b });
        self.poisoned.remove(&seq);
        self.supersede(lpa, seq);
    }

    /// `seq` is now the newest copy of `lpa`; the one it replaces stays until the request
    /// is over (the write buffer may flush it during the request).
    fn supersede(&mut self, lpa: u32, seq: u64) {
        if let Some(old) = self.newest.insert(lpa, seq) {
            self.superseded.push(old);
        }
    }

    /// Stages part of a page (`data` at `offset` within it): completed by the simulator's
    /// read of the old page.
    pub fn stage_partial(&mut self, lpa: u32, seq: u64, offset: usize, data: &[u8]) {
        self.partial.push(Partial {
            lpa,
            seq,
            offset,
            data: data.to_vec(),
        });
    }

    /// After a write request: the older staged copies of the pages it wrote were
    /// programmed during it or replaced in the write buffer: drop them.
    pub fn settle_write(&mut self) {
        self.partial.clear();
        let superseded = std::mem::take(&mut self.superseded);
        for &seq in &superseded {
            if let Some(s) = self.drop_staged(seq) {
                self.recycle(s.data);
            }
        }
        self.superseded = superseded;
        self.superseded.clear();
    }

    /// After a failed write request: nothing it staged will be programmed.
    pub fn unstage_from(&mut self, first_seq: u64) {
        self.partial.clear();
        self.superseded.clear();
        let gone: Vec<u64> = self
            .staged
            .keys()
            .copied()
            .filter(|&s| s >= first_seq)
            .collect();
        for seq in gone {
            if let Some(s) = self.drop_staged(seq) {
                if self.newest.get(&s.lpa) == Some(&seq) {
                    self.newest.remove(&s.lpa);
                }
                self.recycle(s.data);
            }
        }
    }

    /// After a trim of `lpa`: its buffered copy was dropped.
    pub fn trimmed(&mut self, lpa: u32) {
        if let Some(seq) = self.newest.remove(&lpa) {
            if let Some(s) = self.drop_staged(seq) {
                self.recycle(s.data);
            }
        }
    }

    /// Appends trims of `lpas` to the trim log (recovery keeps them trimmed unless written
    /// after `last_seq`).
    pub fn log_trims(&mut self, lpas: std::ops::Range<u32>, last_seq: u64) {
        let mut rec = Vec::with_capacity(lpas.len() * TRIM_BYTES);
        for lpa in lpas {
            rec.extend_from_slice(&lpa.to_le_bytes());
            rec.extend_from_slice(&[0; 4]);
            rec.extend_from_slice(&last_seq.to_le_bytes());
        }
        self.sync.wrote(TRIMS);
        if let Err(e) = self.files.trims.write_all_at(&rec, self.trim_end) {
            self.fail(format!("writing the trim log: {e}"));
            return;
        }
        self.trim_end += rec.len() as u64;
    }

    /// The pages the last host read served, in address order.
    pub fn read_out(&self) -> &[u8] {
        &self.out
    }

    /// Starts a host read.
    pub fn begin_read(&mut self) {
        self.out.clear();
    }

    /// Reads physical page `ppn`; false when its bytes do not match their CRC.
    fn read_page(&mut self, ppn: Ppn, into: &mut [u8]) -> bool {
        if self.batched[ppn as usize] {
            self.drain();
        }
        let at = ppn as u64 * self.page_size as u64;
        if let Err(e) = self.files.pages.read_exact_at(into, at) {
            self.fail(format!("reading physical page {ppn}: {e}"));
            return true;
        }
        crc32c::crc32c(into) == self.crcs[ppn as usize]
    }

    fn media_error(&mut self, message: String) {
        self.media_errors += 1;
        self.media.get_or_insert(message);
    }

    /// The media error of the request just served, if any (the request fails with EIO; the
    /// device goes on).
    pub fn take_media_error(&mut self) -> Option<String> {
        self.media.take()
    }

    /// The bytes `from` served into `self.scratch`; false if they are damaged.
    fn load(&mut self, lpa: u32, from: ServedPage) -> bool {
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut good = true;
        match from {
            ServedPage::Unmapped => scratch.fill(0),
            ServedPage::Buffer(seq) if self.poisoned.contains(&seq) => {
                good = false;
                self.media_error(format!(
                    "logical page {lpa}: its buffered copy completes a damaged page"
                ));
            }
            ServedPage::Buffer(seq) => match self.staged.get(&seq) {
                Some(s) if s.lpa == lpa => scratch.copy_from_slice(&s.data),
                _ => {
                    scratch.fill(0);
                    self.fail(format!(
                        "internal: the write buffer served host write #{seq} of logical page {lpa}, \
                         whose bytes the store does not hold"
                    ));
                }
            },
            ServedPage::Flash(ppn) => {
                good = self.read_page(ppn, &mut scratch);
                if !good {
                    self.media_error(format!(
                        "logical page {lpa} at physical page {ppn}: its bytes do not match \
                         their stored checksum"
                    ));
                }
            }
        }
        self.scratch = scratch;
        good
    }

    /// Before a page of an erased block whose records are still to clear is programmed:
    /// the copies out of it durable (a sync, unless one has covered them already), then its
    /// records cleared.
    fn barrier(&mut self, block: u32) {
        if !self.erased_flag[block as usize] {
            return;
        }
        let covered = self
            .erased
            .iter()
            .all(|&(b, g)| b != block || g <= self.sync.completed());
        if !covered {
            self.barrier_syncs += 1;
            if let Err(e) = self.sync.sync() {
                self.fail(e);
            }
        }
        self.clear_erased();
    }

    /// Clears the records of the erased blocks whose copies a completed sync made durable.
    fn clear_erased(&mut self) {
        let completed = self.sync.completed();
        let blank = vec![0u8; self.pages_per_block as usize * RECORD_BYTES];
        let mut erased = std::mem::take(&mut self.erased);
        erased.retain(|&(block, generation)| {
            if generation > completed {
                return true;
            }
            self.erased_flag[block as usize] = false;
            let at = block as u64 * self.pages_per_block as u64 * RECORD_BYTES as u64;
            self.sync.wrote(STORE);
            if let Err(e) = self.files.oob.write_all_at(&blank, at) {
                self.fail(format!("clearing the OOB records of block {block}: {e}"));
            }
            let count = self.erase_counts[block as usize].to_le_bytes();
            self.sync.wrote(STORE);
            if let Err(e) = self.files.blocks.write_all_at(&count, block as u64 * 4) {
                self.fail(format!("writing the erase count of block {block}: {e}"));
            }
            false
        });
        self.erased = erased;
    }

    /// Before a flush's sync (the caller has drained the write buffer): records of erased
    /// blocks are cleared where a sync allows it already, the others wait (their stale
    /// records are harmless to recovery: the copies made out of them are later programs).
    pub fn prepare_flush(&mut self) -> Result<(), String> {
        self.drain();
        self.clear_erased();
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Before a checkpoint: every pending erase recorded, after the copies it depends on
    /// are synced (the caller syncs afterwards).
    pub fn prepare_sync(&mut self) -> Result<(), String> {
        self.drain();
        if !self.erased.is_empty() {
            self.sync.sync()?;
            self.clear_erased();
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Programs `data` at `ppn` with `crc` in its record (that of `data` unless the page is
    /// damaged and must stay so): batched, written by [`PageStore::drain`].
    fn program_bytes(&mut self, ppn: Ppn, oob: Oob, data: Box<[u8]>, crc: u32) {
        let record = Record {
            programmed: true,
            lpa: oob.lpa,
            seq: oob.seq,
            prog: self.next_prog,
            crc,
        };
        self.next_prog += 1;
        self.crcs[ppn as usize] = crc;
        self.mark_used(ppn / self.pages_per_block);
        self.batched[ppn as usize] = true;
        self.batch.push(Program { ppn, data, record });
        if self.batch.len() * self.page_size >= BATCH_BYTES {
            self.drain();
        }
    }

    /// Writes the batched programs: each run of consecutive physical pages with one
    /// pwritev, its records with one write. Called before a page of the batch is read,
    /// before an erase (so that the copies out of the block are in the file before any
    /// sync that lets its records be cleared) and before a sync.
    fn drain(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let mut batch = std::mem::take(&mut self.batch);
        // (A page is programmed once between erases, and an erase drains: no duplicates.)
        batch.sort_unstable_by_key(|p| p.ppn);
        self.sync.wrote(STORE);
        let mut records = Vec::new();
        for run in batch.chunk_by(|a, b| b.ppn == a.ppn + 1) {
            let first = run[0].ppn;
            let bufs: Vec<&[u8]> = run.iter().map(|p| &p.data[..]).collect();
            let at = first as u64 * self.page_size as u64;
            if let Err(e) = self.files.pages.write_vectored_at(&bufs, at) {
                self.fail(format!(
                    "writing physical pages {first}..{}: {e}",
                    first as usize + run.len()
                ));
                continue;
            }
            records.clear();
            for p in run {
                records.extend_from_slice(&p.record.encode());
            }
            if let Err(e) = self
                .files
                .oob
                .write_all_at(&records, first as u64 * RECORD_BYTES as u64)
            {
                self.fail(format!(
                    "writing the OOB records of physical pages {first}..{}: {e}",
                    first as usize + run.len()
                ));
            }
        }
        for p in batch.drain(..) {
            self.batched[p.ppn as usize] = false;
            self.recycle(p.data);
        }
        self.batch = batch;
    }

    /// Erase counts by block.
    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_counts
    }

    pub fn trim_log_bytes(&self) -> u64 {
        self.trim_end
    }

    pub fn next_prog(&self) -> u64 {
        self.next_prog
    }

    pub fn files(&self) -> &Files {
        &self.files
    }

    /// Empties the trim log (a checkpoint has recorded what it said).
    pub fn reset_trim_log(&mut self) -> Result<(), String> {
        self.files
            .trims
            .set_len(0)
            .map_err(|e| format!("truncating the trim log: {e}"))?;
        self.trim_end = 0;
        Ok(())
    }
}

impl PageSink for PageStore {
    fn program(&mut self, ppn: Ppn, oob: Oob, content: Option<&[u8]>) {
        let block = ppn / self.pages_per_block;
        self.barrier(block);
        if oob.lpa == NONE {
            let mut page = self.buffer();
            page.fill(0);
            if let Some(c) = content {
                let n = c.len().min(page.len());
                page[..n].copy_from_slice(&c[..n]);
            }
            let crc = crc32c::crc32c(&page);
            self.program_bytes(ppn, oob, page, crc);
            return;
        }
        match self.staged.remove(&oob.seq) {
            Some(s) if s.lpa == oob.lpa => {
                if self.newest.get(&s.lpa) == Some(&oob.seq) {
                    self.newest.remove(&s.lpa);
                }
                let mut crc = crc32c::crc32c(&s.data);
                if self.poisoned.remove(&oob.seq) {
                    crc = !crc;
                }
                self.program_bytes(ppn, oob, s.data, crc);
            }
            other => {
                if let Some(s) = other {
                    self.staged.insert(oob.seq, s);
                }
                self.fail(format!(
                    "internal: physical page {ppn} programmed with host write #{} of logical page {}, \
                     whose bytes were not staged",
                    oob.seq, oob.lpa
                ));
            }
        }
    }

    fn copy(&mut self, src: Ppn, dst: Ppn, oob: Oob) {
        self.barrier(dst / self.pages_per_block);
        let mut page = self.buffer();
        // A damaged page moves with its old CRC: reads of it still fail.
        let crc = match self.read_page(src, &mut page) {
            true => crc32c::crc32c(&page),
            false => self.crcs[src as usize],
        };
        self.program_bytes(dst, oob, page, crc);
    }

    fn erase(&mut self, block: u32) {
        self.drain();
        self.erase_counts[block as usize] += 1;
        self.used_blocks[block as usize / 64] &= !(1 << (block % 64));
        // (Erased again before its records were cleared: the later erase's copies count.)
        let generation = self.sync.next_generation();
        if self.erased_flag[block as usize] {
            for e in self.erased.iter_mut().filter(|e| e.0 == block) {
                e.1 = generation;
            }
        } else {
            self.erased_flag[block as usize] = true;
            self.erased.push((block, generation));
        }
    }

    fn served(&mut self, lpa: u32, from: ServedPage, host_read: bool) {
        if host_read {
            self.load(lpa, from);
            self.out.extend_from_slice(&self.scratch);
            return;
        }
        // (A damaged old page makes the new one damaged too: the write fails, and so do
        // reads of the page until it is written whole.)
        // Read-modify-write: the old page under the new bytes.
        let Some(i) = self.partial.iter().position(|p| p.lpa == lpa) else {
            self.fail(format!(
                "internal: a read-modify-write of logical page {lpa} with no partial write staged"
            ));
            return;
        };
        let p = self.partial.swap_remove(i);
        if !self.load(lpa, from) {
            self.poisoned.insert(p.seq);
        }
        let mut page = self.buffer();
        page.copy_from_slice(&self.scratch);
        page[p.offset..p.offset + p.data.len()].copy_from_slice(&p.data);
        self.staged.insert(p.seq, Staged { lpa, data: page });
        self.supersede(lpa, p.seq);
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Converts a store of format 1 (`pages`, `oob` and `blocks` files) in `dir` to the
/// current format, under its owner's lock: the `store` file is written and synced, then
/// `meta.json` says the new format (atomically), then the old files go. A crash before the
/// new `meta.json` leaves the old store as it was (the next start converts it again).
pub fn upgrade(dir: &Path, old: &Meta) -> Result<(), String> {
    let meta = Meta {
        format: FORMAT,
        ..old.clone()
    };
    let r = regions(&meta);
    let parts = [
        ("oob", 0, meta.physical_pages * RECORD_BYTES as u64),
        ("blocks", r.erase_counts, meta.total_blocks as u64 * 4),
        (
            "pages",
            r.pages,
            meta.physical_pages * meta.page_size as u64,
        ),
    ];
    for (name, _, want) in parts {
        let path = dir.join(name);
        let have = std::fs::metadata(&path)
            .map_err(|e| io_err(&path, e))?
            .len();
        if have < want {
            return Err(format!(
                "{}: {have} bytes, {want} expected (truncated): the store of format 1 cannot \
                 be converted; repair it with the ftlab that made it",
                path.display()
            ));
        }
    }
    let path = dir.join("store");
    let store = File::create(&path).map_err(|e| io_err(&path, e))?;
    store.set_len(r.len).map_err(|e| io_err(&path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    for (name, base, len) in parts {
        let from = dir.join(name);
        let src = File::open(&from).map_err(|e| io_err(&from, e))?;
        let mut at = 0;
        while at < len {
            let n = (len - at).min(buf.len() as u64) as usize;
            src.read_exact_at(&mut buf[..n], at)
                .map_err(|e| io_err(&from, e))?;
            // (Zeros stay holes: a sparse `pages` stays sparse until allocated.)
            if buf[..n].iter().any(|&b| b != 0) {
                store
                    .write_all_at(&buf[..n], base + at)
                    .map_err(|e| io_err(&path, e))?;
            }
            at += n as u64;
        }
    }
    store.sync_all().map_err(|e| io_err(&path, e))?;
    let text = serde_json::to_string_pretty(&meta).map_err(|e| e.to_string())?;
    crate::recovery::write_atomically(&dir.join("meta.json"), text.as_bytes())?;
    for (name, _, _) in parts {
        let _ = std::fs::remove_file(dir.join(name));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(physical_pages: u64, total_blocks: u32, page_size: u32) -> Meta {
        Meta {
            format: FORMAT,
            scheme: "page".into(),
            page_size,
            pages_per_block: (physical_pages / total_blocks as u64) as u32,
            total_blocks,
            physical_pages,
            logical_pages: physical_pages / 2,
        }
    }

    #[test]
    fn the_pages_start_on_a_4_kib_boundary_after_the_records_and_erase_counts() {
        // The small preset: 524,288 pages of 4 KiB in 4,096 blocks.
        let r = regions(&meta(524_288, 4096, 4096));
        assert_eq!(r.erase_counts, 524_288 * 32);
        assert_eq!(r.pages, 16_793_600);
        assert_eq!(r.len, 16_793_600 + 524_288 * 4096);
        // Records and erase counts ending off a boundary: the pages start at the next one.
        let r = regions(&meta(100, 10, 2048));
        assert_eq!(
            (r.erase_counts, r.pages, r.len),
            (3200, 4096, 4096 + 100 * 2048)
        );
    }

    /// A new empty file for a test, by `name` and this process; the caller removes it.
    fn scratch_file(name: &str) -> (PathBuf, Arc<File>) {
        let path = std::env::temp_dir().join(format!("ftlab-nbd-{name}-{}", std::process::id()));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        (path, Arc::new(file))
    }

    #[test]
    fn a_vectored_write_of_more_buffers_than_iov_max_writes_them_all_in_order() {
        let (path, file) = scratch_file("vec");
        let region = Region {
            file: file.clone(),
            base: 100,
            len: 1 << 20,
        };
        let bufs: Vec<Vec<u8>> = (0..2500u32).map(|i| i.to_le_bytes().repeat(3)).collect();
        let slices: Vec<&[u8]> = bufs.iter().map(|b| &b[..]).collect();
        region.write_vectored_at(&slices, 7).unwrap();
        let mut back = vec![0u8; 2500 * 12];
        region.read_exact_at(&mut back, 7).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(back, bufs.concat());
    }

    #[test]
    fn reading_a_region_skips_the_holes_and_reads_the_rest() {
        let (path, file) = scratch_file("holes");
        // A region from an unaligned base, with data before it, in it (at its start, in
        // its middle across a block boundary, at its end) and after it, holes between.
        let (base, len) = (5000u64, 3u64 << 20);
        file.set_len(base + len + (1 << 20)).unwrap();
        let mut expected = vec![0u8; len as usize];
        for (at, n, byte) in [
            (0u64, 4096usize, 1u8),
            (1_048_000, 9000, 2),
            (len - 100, 100, 3),
        ] {
            file.write_all_at(&vec![byte; n], base + at).unwrap();
            expected[at as usize..at as usize + n].fill(byte);
        }
        file.write_all_at(&[9; 4096], 0).unwrap();
        file.write_all_at(&[9; 4096], base + len).unwrap();
        let region = Region { file, base, len };
        let got = region.read_all().unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(got.len(), expected.len());
        assert!(got == expected, "the region read back differs");
    }
}
