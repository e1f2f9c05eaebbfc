//! Application workloads as the block layer of an in-place file system sees them, for the
//! comparisons of Application-Managed Flash (FAST'16), whose benchmarks (Postmark, OLTP,
//! Hadoop) have no public traces: the requests an ext4-like file system issues for them.
//! Under the `f2fs` and `alfs` host stacks the same requests are the application's view
//! (its files' blocks), which the log-structured file system remaps.
//!
//! - `postmark` ([`PostmarkConfig`]): a small-file, metadata-intensive workload after
//!   Katcher's Postmark. `files` files of `min_file_bytes`..`max_file_bytes` are created,
//!   then transactions each create or delete a file (`create_bias`) and read or append to
//!   one (`read_bias`). The file system allocates data next-fit in a data area and keeps an
//!   inode table (256-byte inodes), a block bitmap and directories (`files_per_dir`
//!   32-byte entries each) in front of it. Each operation commits the metadata blocks it
//!   dirtied to a circular journal (`journal_bytes`, plus a commit block), and every
//!   `checkpoint_ops` operations the journalled blocks are written in place (ext4's
//!   ordered mode). Deleted files' blocks are trimmed when `trim_deletes` (a file system
//!   mounted with `discard`).
//! - `oltp` ([`OltpConfig`]): a database on a preallocated table file: each transaction
//!   reads `reads_per_txn` and updates `updates_per_txn` pages of `page_bytes` (a share
//!   `hot_access_fraction` of them in the first `hot_space_fraction` of the table), after
//!   appending `log_bytes_per_txn` to a circular redo log of `log_bytes` at the front.
//! - `hadoop` ([`HadoopConfig`]): HDFS-like large files (`file_bytes`) written and read
//!   sequentially in `request_bytes` requests, in file-sized slots; a share `read_fraction`
//!   of the operations reads a file, the others write a new one, deleting (trimming) the
//!   oldest first once `fill_fraction` of the slots hold files (DFSIO, TeraSort).

use crate::request::{Op, Request};
use crate::rng::Rng;
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `workload.postmark`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PostmarkConfig {
    /// Files created before the transactions.
    pub files: u64,
    #[serde(with = "units::bytes")]
    pub min_file_bytes: u64,
    #[serde(with = "units::bytes")]
    pub max_file_bytes: u64,
    /// Share of transactions that create (else delete) a file.
    pub create_bias: f64,
    /// Share of transactions that read (else append to) a file.
    pub read_bias: f64,
    #[serde(with = "units::bytes")]
    pub append_bytes: u64,
    pub files_per_dir: u64,
    /// Metadata journal size (0: no journal, metadata written in place at once).
    #[serde(with = "units::bytes")]
    pub journal_bytes: u64,
    /// Journalled metadata is written in place every this many operations.
    pub checkpoint_ops: u64,
    /// Deleting a file trims its blocks.
    pub trim_deletes: bool,
}

impl Default for PostmarkConfig {
    fn default() -> Self {
        // Postmark's "heavy" configurations: many files of up to 64 KiB, half creates and
        // deletes; ext4's 32 MiB minimum journal would do, 8 MiB keeps small devices usable.
        PostmarkConfig {
            files: 20_000,
            min_file_bytes: 4096,
            max_file_bytes: 64 << 10,
            create_bias: 0.5,
            read_bias: 0.5,
            append_bytes: 4096,
            files_per_dir: 512,
            journal_bytes: 8 << 20,
            checkpoint_ops: 64,
            trim_deletes: true,
        }
    }
}

/// `workload.oltp`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OltpConfig {
    /// Database page.
    #[serde(with = "units::bytes")]
    pub page_bytes: u64,
    pub reads_per_txn: u64,
    pub updates_per_txn: u64,
    /// Circular redo log in front of the table.
    #[serde(with = "units::bytes")]
    pub log_bytes: u64,
    #[serde(with = "units::bytes")]
    pub log_bytes_per_txn: u64,
    pub hot_space_fraction: f64,
    pub hot_access_fraction: f64,
}

impl Default for OltpConfig {
    fn default() -> Self {
        OltpConfig {
            page_bytes: 8192,
            reads_per_txn: 4,
            updates_per_txn: 2,
            log_bytes: 64 << 20,
            log_bytes_per_txn: 4096,
            hot_space_fraction: 0.2,
            hot_access_fraction: 0.8,
        }
    }
}

/// `workload.hadoop`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HadoopConfig {
    #[serde(with = "units::bytes")]
    pub file_bytes: u64,
    #[serde(with = "units::bytes")]
    pub request_bytes: u64,
    /// Share of the file slots in use before the oldest file is deleted for a new one.
    pub fill_fraction: f64,
    /// Share of operations that read a whole file (the others write one).
    pub read_fraction: f64,
}

impl Default for HadoopConfig {
    fn default() -> Self {
        HadoopConfig {
            file_bytes: 64 << 20,
            request_bytes: 1 << 20,
            fill_fraction: 0.7,
            read_fraction: 0.3,
        }
    }
}

fn fraction(key: &str, v: f64) -> crate::Result<()> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(crate::Error::config(
            key,
            format!("{v} is not a fraction between 0 and 1"),
        ))
    }
}

impl PostmarkConfig {
    pub fn validate(&self) -> crate::Result<()> {
        fraction("workload.postmark.create_bias", self.create_bias)?;
        fraction("workload.postmark.read_bias", self.read_bias)?;
        if self.min_file_bytes == 0 || self.min_file_bytes > self.max_file_bytes {
            return Err(crate::Error::config(
                "workload.postmark.min_file_bytes",
                "must be at least 1 byte and at most max_file_bytes",
            ));
        }
        if self.files_per_dir == 0 || self.checkpoint_ops == 0 || self.append_bytes == 0 {
            return Err(crate::Error::config(
                "workload.postmark",
                "files_per_dir, checkpoint_ops and append_bytes must be at least 1",
            ));
        }
        Ok(())
    }
}

impl OltpConfig {
    pub fn validate(&self) -> crate::Result<()> {
        fraction("workload.oltp.hot_space_fraction", self.hot_space_fraction)?;
        fraction(
            "workload.oltp.hot_access_fraction",
            self.hot_access_fraction,
        )?;
        if self.page_bytes == 0 || self.reads_per_txn + self.updates_per_txn == 0 {
            return Err(crate::Error::config(
                "workload.oltp",
                "page_bytes must be positive and a transaction must read or update a page",
            ));
        }
        Ok(())
    }
}

impl HadoopConfig {
    pub fn validate(&self) -> crate::Result<()> {
        fraction("workload.hadoop.read_fraction", self.read_fraction)?;
        if !(self.fill_fraction > 0.0 && self.fill_fraction <= 1.0) {
            return Err(crate::Error::config(
                "workload.hadoop.fill_fraction",
                format!("{} is not a fraction in (0, 1]", self.fill_fraction),
            ));
        }
        if self.request_bytes == 0 || self.file_bytes < self.request_bytes {
            return Err(crate::Error::config(
                "workload.hadoop.file_bytes",
                "must be at least one request (request_bytes, positive)",
            ));
        }
        Ok(())
    }
}

/// Pages of `bytes`, at least one.
fn pages_of(bytes: u64, page: u64) -> u64 {
    bytes.div_ceil(page).max(1)
}

/// A request of `pages` pages at page `first` of the region.
fn req(op: Op, first: u64, pages: u64, page: u64) -> Request {
    Request {
        time_ns: 0,
        offset_bytes: first * page,
        len_bytes: (pages * page).min(u32::MAX as u64 / page * page) as u32,
        op,
    }
}

/// An application model generating requests over a region of pages (addresses relative to
/// the region; the caller adds its base and the time).
pub enum App {
    Postmark(Box<Postmark>),
    Oltp(Oltp),
    Hadoop(Hadoop),
}

impl App {
    /// The next request (an operation's requests come one after another).
    pub fn next(&mut self, rng: &mut Rng) -> Request {
        match self {
            App::Postmark(p) => p.next(rng),
            App::Oltp(o) => o.next(rng),
            App::Hadoop(h) => h.next(rng),
        }
    }
}

// ----- Postmark -----

#[derive(Clone, Debug)]
struct File {
    inode: u32,
    dir_slot: u32,
    extents: Vec<(u64, u64)>,
}

pub struct Postmark {
    cfg: PostmarkConfig,
    page: u64,
    journal_pages: u64,
    journal_head: u64,
    inode_start: u64,
    inodes_per_page: u64,
    bitmap_start: u64,
    dir_start: u64,
    dir_pages: u64,
    data_start: u64,
    data_pages: u64,
    used: Vec<u64>,
    used_pages: u64,
    cursor: u64,
    files: Vec<File>,
    free_inodes: Vec<u32>,
    created: u64,
    ops: u64,
    dirty: Vec<u64>,
    checkpoint: Vec<u64>,
    queue: VecDeque<Request>,
}

impl Postmark {
    /// Over `pages` pages of `page` bytes; None when the region cannot hold the layout.
    pub fn new(cfg: &PostmarkConfig, pages: u64, page: u64) -> Option<Postmark> {
        let max_files = cfg.files.max(1) * 2;
        let inodes_per_page = (page / 256).max(1);
        let inode_pages = max_files.div_ceil(inodes_per_page);
        let dirs = max_files.div_ceil(cfg.files_per_dir);
        let dir_pages = pages_of(cfg.files_per_dir * 32, page);
        let journal_pages = cfg.journal_bytes.div_ceil(page);
        let meta = journal_pages + inode_pages + dirs * dir_pages;
        // The bitmap covers the data area: one bit per page.
        let bitmap_pages = pages.saturating_sub(meta).div_ceil(page * 8).max(1);
        let data_start = meta + bitmap_pages;
        if data_start + 64 > pages {
            return None;
        }
        let data_pages = pages - data_start;
        Some(Postmark {
            cfg: cfg.clone(),
            page,
            journal_pages,
            journal_head: 0,
            inode_start: journal_pages,
            inodes_per_page,
            bitmap_start: journal_pages + inode_pages,
            dir_start: journal_pages + inode_pages + bitmap_pages,
            dir_pages,
            data_start,
            data_pages,
            used: vec![0; data_pages.div_ceil(64) as usize],
            used_pages: 0,
            cursor: 0,
            files: Vec::new(),
            free_inodes: (0..max_files as u32).rev().collect(),
            created: 0,
            ops: 0,
            dirty: Vec::new(),
            checkpoint: Vec::new(),
            queue: VecDeque::new(),
        })
    }

    fn is_used(&self, p: u64) -> bool {
        self.used[(p >> 6) as usize] >> (p & 63) & 1 != 0
    }

    fn set_used(&mut self, p: u64, on: bool) {
        let w = &mut self.used[(p >> 6) as usize];
        if on {
            *w |= 1 << (p & 63);
        } else {
            *w &= !(1 << (p & 63));
        }
    }

    fn bitmap_page(&self, p: u64) -> u64 {
        self.bitmap_start + p / (self.page * 8)
    }

    /// `n` pages next-fit from the cursor, in as few extents as the free space allows.
    fn allocate(&mut self, n: u64, after: Option<u64>) -> Vec<(u64, u64)> {
        let mut extents: Vec<(u64, u64)> = Vec::new();
        let mut left = n.min(self.data_pages - self.used_pages);
        // Append goal: right after the file's last page.
        let mut p = after.map_or(self.cursor, |a| a % self.data_pages);
        let mut scanned = 0;
        while left > 0 && scanned < self.data_pages {
            if !self.is_used(p) {
                self.set_used(p, true);
                self.used_pages += 1;
                left -= 1;
                match extents.last_mut() {
                    Some((start, len)) if *start + *len == p => *len += 1,
                    _ => extents.push((p, 1)),
                }
                let bm = self.bitmap_page(p);
                self.mark(bm);
            }
            p = if p + 1 == self.data_pages { 0 } else { p + 1 };
            scanned += 1;
        }
        self.cursor = p;
        extents
    }

    fn mark(&mut self, meta_page: u64) {
        if !self.dirty.contains(&meta_page) {
            self.dirty.push(meta_page);
        }
    }

    fn inode_page(&self, inode: u32) -> u64 {
        self.inode_start + inode as u64 / self.inodes_per_page
    }

    fn dir_page(&self, slot: u32) -> u64 {
        let per_dir = self.cfg.files_per_dir;
        let dir = slot as u64 / per_dir;
        self.dir_start + dir * self.dir_pages + (slot as u64 % per_dir) * 32 / self.page
    }

    fn create(&mut self, rng: &mut Rng) {
        let Some(inode) = self.free_inodes.pop() else {
            return;
        };
        let span = self.cfg.max_file_bytes - self.cfg.min_file_bytes;
        let bytes = self.cfg.min_file_bytes + if span > 0 { rng.below(span + 1) } else { 0 };
        let extents = self.allocate(pages_of(bytes, self.page), None);
        for &(start, len) in &extents {
            self.queue
                .push_back(req(Op::Write, self.data_start + start, len, self.page));
        }
        let dir_slot = self.created as u32;
        self.created += 1;
        self.mark(self.inode_page(inode));
        self.mark(self.dir_page(dir_slot));
        self.files.push(File {
            inode,
            dir_slot,
            extents,
        });
    }

    fn delete(&mut self, rng: &mut Rng) {
        if self.files.is_empty() {
            return;
        }
        let i = rng.below(self.files.len() as u64) as usize;
        let file = self.files.swap_remove(i);
        for &(start, len) in &file.extents {
            for p in start..start + len {
                self.set_used(p, false);
                let bm = self.bitmap_page(p);
                self.mark(bm);
            }
            self.used_pages -= len;
            if self.cfg.trim_deletes {
                self.queue
                    .push_back(req(Op::Trim, self.data_start + start, len, self.page));
            }
        }
        self.mark(self.inode_page(file.inode));
        self.mark(self.dir_page(file.dir_slot));
        self.free_inodes.push(file.inode);
    }

    fn read(&mut self, rng: &mut Rng) {
        if self.files.is_empty() {
            return;
        }
        let i = rng.below(self.files.len() as u64) as usize;
        for &(start, len) in &self.files[i].extents {
            self.queue
                .push_back(req(Op::Read, self.data_start + start, len, self.page));
        }
    }

    fn append(&mut self, rng: &mut Rng) {
        if self.files.is_empty() {
            return;
        }
        let i = rng.below(self.files.len() as u64) as usize;
        let last = self.files[i].extents.last().map(|&(s, l)| s + l);
        let extents = self.allocate(pages_of(self.cfg.append_bytes, self.page), last);
        for &(start, len) in &extents {
            self.queue
                .push_back(req(Op::Write, self.data_start + start, len, self.page));
        }
        let inode = self.files[i].inode;
        self.files[i].extents.extend(extents);
        self.mark(self.inode_page(inode));
    }

    /// The operation's metadata: committed to the journal, written in place at checkpoints.
    fn commit(&mut self) {
        self.ops += 1;
        let dirty = std::mem::take(&mut self.dirty);
        if self.journal_pages == 0 {
            for &m in &dirty {
                self.queue.push_back(req(Op::Write, m, 1, self.page));
            }
        } else if !dirty.is_empty() {
            let n = (dirty.len() as u64 + 1).min(self.journal_pages);
            if self.journal_head + n > self.journal_pages {
                self.journal_head = 0;
            }
            self.queue
                .push_back(req(Op::Write, self.journal_head, n, self.page));
            self.journal_head += n;
            for m in dirty {
                if !self.checkpoint.contains(&m) {
                    self.checkpoint.push(m);
                }
            }
            if self.ops.is_multiple_of(self.cfg.checkpoint_ops) {
                self.checkpoint.sort_unstable();
                for m in std::mem::take(&mut self.checkpoint) {
                    self.queue.push_back(req(Op::Write, m, 1, self.page));
                }
            }
        }
    }

    fn next(&mut self, rng: &mut Rng) -> Request {
        while self.queue.is_empty() {
            let full = self.used_pages * 10 > self.data_pages * 9 || self.free_inodes.is_empty();
            if self.created < self.cfg.files && !full {
                self.create(rng);
                self.commit();
                continue;
            }
            // A transaction: create or delete, then read or append.
            if !full && (self.files.is_empty() || rng.unit_f64() < self.cfg.create_bias) {
                self.create(rng);
            } else {
                self.delete(rng);
            }
            if rng.unit_f64() < self.cfg.read_bias || full {
                self.read(rng);
            } else {
                self.append(rng);
            }
            self.commit();
        }
        self.queue.pop_front().expect("not empty")
    }
}

// ----- OLTP -----

pub struct Oltp {
    cfg: OltpConfig,
    page: u64,
    log_pages: u64,
    log_head: u64,
    db_pages: u64,
    /// Pages per database page.
    span: u64,
    queue: VecDeque<Request>,
}

impl Oltp {
    pub fn new(cfg: &OltpConfig, pages: u64, page: u64) -> Option<Oltp> {
        let log_pages = cfg.log_bytes.div_ceil(page);
        let span = pages_of(cfg.page_bytes, page);
        let db_pages = pages.checked_sub(log_pages)? / span;
        if db_pages < 16 || log_pages < pages_of(cfg.log_bytes_per_txn, page) {
            return None;
        }
        Some(Oltp {
            cfg: cfg.clone(),
            page,
            log_pages,
            log_head: 0,
            db_pages,
            span,
            queue: VecDeque::new(),
        })
    }

    fn db_page(&self, rng: &mut Rng) -> u64 {
        let hot = ((self.db_pages as f64 * self.cfg.hot_space_fraction) as u64)
            .clamp(1, self.db_pages - 1);
        let p = if rng.unit_f64() < self.cfg.hot_access_fraction {
            rng.below(hot)
        } else {
            hot + rng.below(self.db_pages - hot)
        };
        self.log_pages + p * self.span
    }

    fn next(&mut self, rng: &mut Rng) -> Request {
        if self.queue.is_empty() {
            for _ in 0..self.cfg.reads_per_txn {
                let p = self.db_page(rng);
                self.queue.push_back(req(Op::Read, p, self.span, self.page));
            }
            if self.cfg.log_bytes_per_txn > 0 {
                let n = pages_of(self.cfg.log_bytes_per_txn, self.page);
                if self.log_head + n > self.log_pages {
                    self.log_head = 0;
                }
                self.queue
                    .push_back(req(Op::Write, self.log_head, n, self.page));
                self.log_head += n;
            }
            for _ in 0..self.cfg.updates_per_txn {
                let p = self.db_page(rng);
                self.queue
                    .push_back(req(Op::Write, p, self.span, self.page));
            }
        }
        self.queue.pop_front().expect("a transaction has a request")
    }
}

// ----- Hadoop -----

pub struct Hadoop {
    cfg: HadoopConfig,
    page: u64,
    file_pages: u64,
    slots: u64,
    max_files: u64,
    /// Slots holding files, oldest first; free slots.
    files: VecDeque<u64>,
    free: Vec<u64>,
    queue: VecDeque<Request>,
}

impl Hadoop {
    pub fn new(cfg: &HadoopConfig, pages: u64, page: u64) -> Option<Hadoop> {
        let file_pages = pages_of(cfg.file_bytes, page);
        let slots = pages / file_pages;
        if slots < 2 {
            return None;
        }
        let max_files = ((slots as f64 * cfg.fill_fraction) as u64).clamp(1, slots - 1);
        Some(Hadoop {
            cfg: cfg.clone(),
            page,
            file_pages,
            slots,
            max_files,
            files: VecDeque::new(),
            free: (0..slots).rev().collect(),
            queue: VecDeque::new(),
        })
    }

    fn stream(&mut self, op: Op, slot: u64) {
        let chunk = pages_of(self.cfg.request_bytes, self.page);
        let first = slot * self.file_pages;
        let mut p = 0;
        while p < self.file_pages {
            let n = chunk.min(self.file_pages - p);
            self.queue.push_back(req(op, first + p, n, self.page));
            p += n;
        }
    }

    fn next(&mut self, rng: &mut Rng) -> Request {
        while self.queue.is_empty() {
            if !self.files.is_empty() && rng.unit_f64() < self.cfg.read_fraction {
                let i = rng.below(self.files.len() as u64) as usize;
                self.stream(Op::Read, self.files[i]);
                continue;
            }
            if self.files.len() as u64 >= self.max_files {
                if let Some(old) = self.files.pop_front() {
                    let first = old * self.file_pages;
                    self.queue
                        .push_back(req(Op::Trim, first, self.file_pages, self.page));
                    self.free.push(old);
                    self.free.sort_unstable_by(|a, b| b.cmp(a));
                }
            }
            if let Some(slot) = self.free.pop() {
                self.stream(Op::Write, slot);
                self.files.push_back(slot);
            }
            debug_assert!(self.slots > 0);
        }
        self.queue.pop_front().expect("not empty")
    }
}
