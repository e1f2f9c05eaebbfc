//! A page store for crash tests: it keeps what a block device's store keeps (each
//! programmed page's OOB and program number, the bytes of pages holding no logical page;
//! an erased block's records cleared only at the next sync, or before the block is
//! programmed again), and can "crash": record nothing after a given number of operations.

use ftlab_core::device::nand::{Oob, PageSink, Ppn, ServedPage};
use ftlab_core::device::recovery::FlashImage;
use ftlab_core::run::block_device::Device;
use ftlab_core::run::config::Layout;
use std::any::Any;

/// Keeps what a store keeps: each programmed page's OOB and program number, and the
/// bytes of pages holding no logical page (translation pages).
#[derive(Clone)]
pub struct OobSink {
    pub pages: Vec<Option<(Oob, u64)>>,
    pub contents: Vec<Option<Vec<u8>>>,
    pub erase_counts: Vec<u32>,
    pub pages_per_block: u32,
    pub prog: u64,
    /// Blocks erased since the last sync, whose records are still there.
    pub erased: Vec<u32>,
    /// Operations still recorded before the crash (`None`: no crash planned).
    pub left: Option<u64>,
    /// Programs, copies and erases recorded.
    pub ops: u64,
}

impl OobSink {
    pub fn new(layout: &Layout) -> Self {
        OobSink {
            pages: vec![None; layout.physical_pages as usize],
            contents: vec![None; layout.physical_pages as usize],
            erase_counts: vec![0; layout.total_blocks as usize],
            pages_per_block: layout.pages_per_block,
            prog: 0,
            erased: Vec::new(),
            left: None,
            ops: 0,
        }
    }

    /// Whether the process is still alive to record operation `ops + 1`.
    fn alive(&mut self) -> bool {
        match &mut self.left {
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                self.ops += 1;
                true
            }
            None => {
                self.ops += 1;
                true
            }
        }
    }

    /// A sync: the erased blocks' records are cleared.
    pub fn sync(&mut self) {
        let ppb = self.pages_per_block as usize;
        for block in std::mem::take(&mut self.erased) {
            let first = block as usize * ppb;
            self.pages[first..first + ppb].fill(None);
            self.contents[first..first + ppb].fill(None);
        }
    }
}

impl PageSink for OobSink {
    fn program(&mut self, ppn: Ppn, oob: Oob, content: Option<&[u8]>) {
        if !self.alive() {
            return;
        }
        if self.erased.contains(&(ppn / self.pages_per_block)) {
            self.sync();
        }
        self.prog += 1;
        self.pages[ppn as usize] = Some((oob, self.prog));
        self.contents[ppn as usize] = content.map(<[u8]>::to_vec);
    }
    fn copy(&mut self, src: Ppn, dst: Ppn, oob: Oob) {
        let content = self.contents[src as usize].clone();
        self.program(dst, oob, content.as_deref());
    }
    fn erase(&mut self, block: u32) {
        if !self.alive() {
            return;
        }
        self.erase_counts[block as usize] += 1;
        if !self.erased.contains(&block) {
            self.erased.push(block);
        }
    }
    fn served(&mut self, _lpa: u32, _from: ServedPage, _host_read: bool) {}
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl OobSink {
    pub fn image(&self, trims: &[(u32, u64)]) -> FlashImage {
        FlashImage {
            pages: self
                .pages
                .iter()
                .enumerate()
                .filter_map(|(p, r)| r.map(|(oob, prog)| (p as Ppn, oob, prog)))
                .collect(),
            erase_counts: self.erase_counts.clone(),
            trims: trims.to_vec(),
            checkpoint: None,
            contents: self
                .contents
                .iter()
                .enumerate()
                .filter(|&(p, c)| c.is_some() && self.pages[p].is_some())
                .map(|(p, c)| (p as Ppn, c.clone().unwrap_or_default()))
                .collect(),
        }
    }
}

pub fn sink_of(dev: &mut Box<dyn Device>) -> &mut OobSink {
    dev.sink()
        .unwrap()
        .as_any_mut()
        .downcast_mut::<OobSink>()
        .unwrap()
}
