//! ext4's own footprint under the `inplace` stack (`host.ext4_footprint`): the inode
//! tables and the journal an in-place file system keeps on the device beside the
//! application's data, which a page-mapped FTL must keep valid as any data.
//!
//! **Layout** (in device pages, as `mke2fs` sizes it with its defaults): the inode tables
//! first, one 256-byte inode per 16 KiB of the device (`inode_ratio`, 1/64 of the device:
//! 1.6%), then the journal, of `mke2fs`'s default size for the device
//! (`ext2fs_default_journal_size`: 32 MiB up to 2 GiB, 64 MiB up to 16 GiB, ... 1 GiB
//! from 128 GiB), then the application's data, which gets the rest. (ext4 spreads its
//! inode tables over flex groups; under a page-mapped FTL where they sit does not matter.)
//! Both are written once when the file system is made (`mke2fs` zeroes the journal, the
//! lazy initialisation thread the inode tables), so that they are valid from the start.
//!
//! **Inode updates.** Each application write or trim changes the size or the mtime of the
//! file it belongs to, which dirties the inode-table block holding that file's inode. The
//! application's space is a row of files of `host.ext4_file_bytes` each (16 KiB, the
//! average file `inode_ratio` assumes, unless the workload says otherwise), whose inodes
//! are numbered in the order of their data (ext4's allocator puts a file's blocks in the
//! block group of its inode): application page `p` belongs to file `p / file_pages`,
//! whose inode is in inode-table block `file / 16` (256-byte inodes).
//!
//! **Journal** (ordered mode, the default: metadata journaled, data written in place
//! first). Every `host.ext4_commit_interval_ns` of the application's time (`commit=5`) a
//! transaction holding the dirty inode-table blocks is appended to the journal: a
//! descriptor block per 255 blocks (16-byte tags), the blocks, and a commit block; the
//! journal is a circular region, written sequentially and rewritten on each pass. The
//! journaled blocks are written back in place (the checkpoint) when they have been dirty
//! for 30 s (`dirty_expire_centisecs`), in the first commit after that.
//!
//! Not modelled: block and inode bitmaps, group descriptors, extent-tree blocks and
//! directories (a few blocks a transaction), and discards of the journal (ext4 issues none).

use crate::device::geometry::Layout;
use crate::error::{Error, Result};
use crate::host::StackConfig;
use crate::host::{clear_bit, test_and_set, HostStack, Origin};
use crate::request::{Op, Request};

/// `mke2fs`'s defaults: bytes of the device per inode, bytes of an inode.
pub const INODE_RATIO_BYTES: u64 = 16384;
pub const INODE_BYTES: u64 = 256;
/// jbd2 descriptor tags per descriptor block (16-byte tags in a 4 KiB block, less the
/// header).
const TAGS_PER_DESCRIPTOR: u64 = 255;
/// The kernel's `dirty_expire_centisecs` (30 s): dirty metadata buffers are written back
/// in place once they have been dirty this long.
pub const WRITEBACK_NS: u64 = 30_000_000_000;
/// Largest request the stack issues for its own writes (pages).
const CHUNK_PAGES: u64 = 1024;

/// `mke2fs`'s default journal size, in 4 KiB blocks, for a file system of `blocks` 4 KiB
/// blocks (e2fsprogs, `ext2fs_default_journal_size`).
pub fn default_journal_blocks(blocks: u64) -> u64 {
    match blocks {
        b if b < 2048 => 0,
        b if b < 32768 => 1024,
        b if b < 256 * 1024 => 4096,
        b if b < 512 * 1024 => 8192,
        b if b < 4096 * 1024 => 16384,
        b if b < 8192 * 1024 => 32768,
        b if b < 16384 * 1024 => 65536,
        b if b < 32768 * 1024 => 131072,
        _ => 262144,
    }
}

/// Where ext4 puts its inode tables, journal and data, in device pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ext4Layout {
    pub page_size: u32,
    pub inode_table_pages: u64,
    pub journal_start: u64,
    pub journal_pages: u64,
    /// First device page of the application's data, and its pages.
    pub data_start: u64,
    pub app_pages: u64,
}

impl Ext4Layout {
    pub fn new(layout: &Layout) -> Result<Ext4Layout> {
        let page = layout.page_size as u64;
        let device = layout.logical_pages;
        let bytes = device * page;
        let inode_table_pages = (bytes / INODE_RATIO_BYTES * INODE_BYTES).div_ceil(page);
        let journal_pages = (default_journal_blocks(bytes / 4096) * 4096).div_ceil(page);
        let data_start = inode_table_pages + journal_pages;
        if data_start >= device {
            return Err(Error::config(
                "host.ext4_footprint",
                format!("the device's {device} pages are too small for ext4's metadata"),
            ));
        }
        Ok(Ext4Layout {
            page_size: layout.page_size,
            inode_table_pages,
            journal_start: inode_table_pages,
            journal_pages,
            data_start,
            app_pages: device - data_start,
        })
    }
}

#[derive(Clone, Debug, Default)]
struct Counters {
    commits: u64,
    journal_pages_written: u64,
    inode_table_pages_written: u64,
    mkfs_pages_written: u64,
}

/// The `inplace` stack with ext4's inode tables and journal.
pub struct Ext4 {
    l: Ext4Layout,
    page_bytes: u64,
    commit_ns: u64,
    file_pages: u64,
    inodes_per_block: u64,
    made: bool,
    last_commit: Option<u64>,
    /// Inode-table blocks dirtied since the last commit.
    dirty: Vec<u32>,
    dirty_bits: Vec<u64>,
    /// Inode-table blocks journaled and not yet written back, with the time each was
    /// first journaled.
    unwritten: Vec<(u32, u64)>,
    unwritten_bits: Vec<u64>,
    journal_head: u64,
    c: Counters,
}

impl Ext4 {
    pub fn new(cfg: &StackConfig, layout: &Layout) -> Result<Ext4> {
        let l = Ext4Layout::new(layout)?;
        let bits = vec![0; l.inode_table_pages.div_ceil(64) as usize];
        Ok(Ext4 {
            l,
            page_bytes: layout.page_size as u64,
            commit_ns: cfg.host.ext4_commit_interval_ns,
            file_pages: cfg
                .host
                .ext4_file_bytes
                .div_ceil(layout.page_size as u64)
                .max(1),
            inodes_per_block: (layout.page_size as u64 / INODE_BYTES).max(1),
            made: false,
            last_commit: None,
            dirty: Vec::new(),
            dirty_bits: bits.clone(),
            unwritten: Vec::new(),
            unwritten_bits: bits,
            journal_head: 0,
            c: Counters::default(),
        })
    }

    pub fn layout(&self) -> &Ext4Layout {
        &self.l
    }

    /// Adds device page `page` to the requests, merged into the last when it extends it.
    fn emit(&self, out: &mut Vec<(Request, Origin)>, time: u64, page: u64) {
        let offset = page * self.page_bytes;
        match out.last_mut() {
            Some((last, Origin::FsMetadata))
                if last.op == Op::Write
                    && last.offset_bytes + last.len_bytes as u64 == offset
                    && (last.len_bytes as u64) < CHUNK_PAGES * self.page_bytes =>
            {
                last.len_bytes += self.page_bytes as u32;
            }
            _ => out.push((
                Request {
                    time_ns: time,
                    offset_bytes: offset,
                    len_bytes: self.page_bytes as u32,
                    op: Op::Write,
                },
                Origin::FsMetadata,
            )),
        }
    }

    /// `mke2fs` and the lazy inode-table initialisation: every page of the inode tables and
    /// of the journal written once.
    fn make(&mut self, time: u64, out: &mut Vec<(Request, Origin)>) {
        for page in 0..self.l.data_start {
            self.emit(out, time, page);
        }
        self.c.mkfs_pages_written += self.l.data_start;
        self.made = true;
    }

    /// A transaction: the dirty inode-table blocks appended to the journal, then the
    /// blocks dirty for 30 s written back in place.
    fn commit(&mut self, time: u64, out: &mut Vec<(Request, Origin)>) {
        let n = self.dirty.len() as u64;
        if n > 0 {
            self.c.commits += 1;
            // (A file system too small for a journal, under 8 MiB, has none.)
            let blocks = if self.l.journal_pages == 0 {
                0
            } else {
                n.div_ceil(TAGS_PER_DESCRIPTOR) + n + 1
            };
            for _ in 0..blocks {
                let page = self.l.journal_start + self.journal_head;
                self.emit(out, time, page);
                self.journal_head = (self.journal_head + 1) % self.l.journal_pages;
            }
            self.c.journal_pages_written += blocks;
            for &b in &self.dirty {
                clear_bit(&mut self.dirty_bits, b);
                if !test_and_set(&mut self.unwritten_bits, b) {
                    self.unwritten.push((b, time));
                }
            }
            self.dirty.clear();
        }
        // Write back, in block order, every block first journaled 30 s ago or more.
        if self
            .unwritten
            .iter()
            .any(|&(_, t)| time.saturating_sub(t) >= WRITEBACK_NS)
        {
            let mut due: Vec<u32> = Vec::new();
            self.unwritten.retain(|&(b, t)| {
                let expired = time.saturating_sub(t) >= WRITEBACK_NS;
                if expired {
                    due.push(b);
                }
                !expired
            });
            due.sort_unstable();
            for &b in &due {
                clear_bit(&mut self.unwritten_bits, b);
                self.emit(out, time, b as u64);
            }
            self.c.inode_table_pages_written += due.len() as u64;
        }
    }

    /// The inode-table block of application page `page`.
    #[inline]
    fn inode_block(&self, page: u64) -> u32 {
        let inode = page / self.file_pages;
        (inode / self.inodes_per_block).min(self.l.inode_table_pages - 1) as u32
    }
}

impl HostStack for Ext4 {
    fn name(&self) -> &'static str {
        "inplace"
    }

    fn app_pages(&self) -> Option<u64> {
        Some(self.l.app_pages)
    }

    fn transform(&mut self, req: &Request, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        let time = req.time_ns;
        if !self.made {
            self.make(time, out);
        }
        match self.last_commit {
            None => self.last_commit = Some(time),
            Some(last) if time < last => self.last_commit = Some(time),
            Some(last) if self.commit_ns > 0 && time - last >= self.commit_ns => {
                self.commit(time, out);
                self.last_commit = Some(time);
            }
            _ => {}
        }
        let app_bytes = self.l.app_pages * self.page_bytes;
        let end = req.offset_bytes + req.len_bytes as u64;
        if end > app_bytes {
            return Err(Error::Usage(format!(
                "a request ends at byte {end}, beyond the {app_bytes} bytes ext4 leaves the \
                 application (host.ext4_footprint)"
            )));
        }
        let mut shifted = *req;
        shifted.offset_bytes += self.l.data_start * self.page_bytes;
        out.push((shifted, Origin::Application));
        if req.op != Op::Read && req.len_bytes > 0 {
            let first = self.inode_block(req.offset_bytes / self.page_bytes);
            let last = self.inode_block((end - 1) / self.page_bytes);
            for b in first..=last {
                if !test_and_set(&mut self.dirty_bits, b) {
                    self.dirty.push(b);
                }
            }
        }
        Ok(())
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("ext4_commits", self.c.commits as f64));
        out.push((
            "ext4_journal_pages_written",
            self.c.journal_pages_written as f64,
        ));
        out.push((
            "ext4_inode_table_pages_written",
            self.c.inode_table_pages_written as f64,
        ));
        out.push(("ext4_mkfs_pages_written", self.c.mkfs_pages_written as f64));
    }

    fn reset_counters(&mut self) {
        self.c = Counters::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::simulator::Simulator;
    use crate::device::nand::Flash;
    use crate::ftl::page::PageFtl;
    use crate::ftl::Scheme;
    use crate::host::Stacked;
    use crate::run::config::Config;

    /// 8 units of 64 blocks of 64 pages: 32,768 pages, a 4 MiB journal.
    fn stacked() -> Stacked<Ext4, PageFtl> {
        let mut cfg = Config::default();
        let g = &mut cfg.geometry;
        (
            g.channels,
            g.chips_per_channel,
            g.dies_per_chip,
            g.planes_per_die,
        ) = (2, 1, 2, 2);
        (g.blocks_per_plane, g.pages_per_block) = (64, 64);
        cfg.buffer.size_bytes = 0;
        cfg.host.ext4_footprint = true;
        cfg.host.ext4_file_bytes = 64 << 10;
        let layout = cfg.validate().unwrap();
        let ftl = PageFtl::new(&cfg.scheme_context(), &layout).unwrap();
        let flash = Flash::new(&cfg.device(), &layout, 0, true).unwrap();
        let mut sim = Simulator::new(&cfg.controller(), &layout, ftl, flash, true);
        sim.record_served(true);
        Stacked::new(Ext4::new(&cfg.stack(), &layout).unwrap(), sim)
    }

    fn req(op: Op, time_s: f64, page: u64, pages: u32) -> Request {
        Request {
            time_ns: (time_s * 1e9) as u64,
            offset_bytes: page * 4096,
            len_bytes: pages * 4096,
            op,
        }
    }

    /// The inode tables and the journal are written when the file system is made, the
    /// journal on every commit (round and round), the inode-table blocks in place 30 s
    /// after they were journaled, and all of them stay valid on the device (a page FTL
    /// keeps them) while the application's pages, shifted past them, overwrite and GC.
    #[test]
    fn the_footprint_is_written_and_stays_valid() {
        let mut s = stacked();
        let l = *s.stack.layout();
        let device = s.sim.layout().logical_pages;
        assert_eq!(
            l.inode_table_pages,
            (device * 4096 / 16384 * 256).div_ceil(4096)
        );
        assert_eq!(l.journal_pages, 1024);
        assert_eq!(l.app_pages, device - l.inode_table_pages - l.journal_pages);
        let mut rng = crate::rng::Rng::new(3);
        // Fill, then overwrite at random for 20 minutes of 100 writes a second: each
        // 5 s commit journals the inodes of the ~500 files written (64 KiB each).
        for p in (0..l.app_pages - 8).step_by(8) {
            s.submit(&req(Op::Write, 0.0, p, 8)).unwrap();
        }
        for i in 0..120_000u64 {
            let t = 1.0 + i as f64 / 100.0;
            s.submit(&req(Op::Write, t, rng.below(l.app_pages), 1))
                .unwrap();
        }
        let c = s.stack.c.clone();
        assert_eq!(c.mkfs_pages_written, l.data_start);
        assert!(c.commits >= 230, "{c:?}");
        assert!(c.journal_pages_written > 4 * l.journal_pages, "{c:?}");
        assert!(c.inode_table_pages_written > 0, "{c:?}");
        // Each inode-table block written back at most once per 30 s.
        let files = l.app_pages.div_ceil(16);
        let blocks = files.div_ceil(16);
        assert!(
            c.inode_table_pages_written <= blocks * (1200 / 30 + 1),
            "{c:?}"
        );
        assert!(
            s.sim.flash().stats.gc_pages_moved > 0,
            "the device collected garbage"
        );
        // Every page of the footprint is mapped, and the application's page p is device
        // page data_start + p: reading the device directly serves what was written.
        for page in 0..l.data_start {
            s.sim.submit(&req(Op::Read, 2000.0, page, 1)).unwrap();
            assert!(
                s.sim.served()[0].is_some(),
                "footprint page {page} unmapped"
            );
        }
        s.submit(&req(Op::Write, 2000.0, 5, 1)).unwrap();
        let seq = s.sim.last_seq();
        s.sim
            .submit(&req(Op::Read, 2000.0, l.data_start + 5, 1))
            .unwrap();
        assert_eq!(s.sim.served()[0], Some(seq));
        s.sim.check_all().unwrap();
        // Beyond the application's space: refused, not wrapped onto the metadata.
        let err = s.submit(&req(Op::Write, 2000.0, l.app_pages, 1));
        assert!(err.is_err());
    }

    #[test]
    fn the_journal_follows_mke2fs_default_sizes() {
        assert_eq!(default_journal_blocks(1000), 0);
        assert_eq!(default_journal_blocks(512 * 1024 - 1), 8192);
        assert_eq!(default_journal_blocks(512 * 1024), 16384);
        assert_eq!(default_journal_blocks(128 << 18), 262144);
    }
}
