//! A data-lifetime classifier for placement (`fdp.placement = "lifetime"`), after
//! AutoStream's multi-queue (MQ) stream assignment (Yang, Pandurangan, Choi, Balakrishnan,
//! "AutoStream: Automatic Stream Management for Multi-streamed SSDs", SYSTOR 2017): the
//! logical space is cut into chunks, each chunk's recent write frequency decides its queue,
//! and the queue is the stream (here the reclaim-unit handle): data written often dies
//! young and shares reclaim units with data like it.
//!
//! Chosen here, where AutoStream's details do not carry over to a page-level device:
//! - A chunk counts the pages written to it, so that its level is the number of times it
//!   was rewritten whole (a request-counting chunk would rank a sequential fill as hot):
//!   level = floor(log2(1 + writes / chunk_pages)), capped at the last handle.
//! - Counts decay by half every `window_pages` host pages written (AutoStream demotes
//!   expired chunks from the queues' tails), applied lazily at a chunk's next write. The
//!   default window is the device's logical pages: a chunk's level is then its rewrite
//!   rate over about the last two device writes.
//!
//! DRAM: per chunk a 4-byte write count and the 4-byte window of its last write,
//! `lifetime_table`.

use crate::ftl::MemoryBreakdown;

/// Bytes per chunk: write count and time of last write.
pub const CHUNK_BYTES: u64 = 8;

pub struct Lifetime {
    chunk_shift: u32,
    chunk_pages: u32,
    window: u64,
    levels: u32,
    writes: Vec<u32>,
    /// Window (host pages written / window) of each chunk's last write.
    last: Vec<u32>,
    /// Host pages written (the classifier's clock).
    now: u64,
}

impl Lifetime {
    /// Over `logical_pages` in chunks of `chunk_pages` (a power of two), `levels` levels,
    /// halving a chunk's count every `window` pages written.
    pub fn new(logical_pages: u64, chunk_pages: u32, window: u64, levels: u32) -> Self {
        debug_assert!(chunk_pages.is_power_of_two() && levels > 0 && window > 0);
        let chunks = logical_pages.div_ceil(chunk_pages as u64) as usize;
        Lifetime {
            chunk_shift: chunk_pages.trailing_zeros(),
            chunk_pages,
            window,
            levels,
            writes: vec![0; chunks],
            last: vec![0; chunks],
            now: 0,
        }
    }

    /// The level of a write to `lpa` (0: coldest), the write counted.
    #[inline]
    pub fn classify(&mut self, lpa: u32) -> u32 {
        let c = (lpa >> self.chunk_shift) as usize;
        self.now += 1;
        // Halved once per window boundary crossed since the chunk's last write.
        let epoch = (self.now / self.window) as u32;
        let halvings = epoch.wrapping_sub(self.last[c]);
        let mut w = self.writes[c];
        if halvings > 0 {
            w = w.checked_shr(halvings).unwrap_or(0);
        }
        w = w.saturating_add(1);
        self.writes[c] = w;
        self.last[c] = epoch;
        let rewrites = w / self.chunk_pages;
        (u32::BITS - 1 - (rewrites + 1).leading_zeros()).min(self.levels - 1)
    }

    pub fn memory(&self, out: &mut MemoryBreakdown) {
        out.push(("lifetime_table", self.writes.len() as u64 * CHUNK_BYTES));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn often_rewritten_chunks_rank_higher_and_cool_down() {
        // 4 chunks of 4 pages, 4 levels, halving every 64 pages written.
        let mut c = Lifetime::new(16, 4, 64, 4);
        // Chunk 0 rewritten 8 times (32 pages), chunk 2 written once.
        let mut level = 0;
        for _ in 0..8 {
            for p in 0..4 {
                level = c.classify(p);
            }
        }
        assert_eq!(level, 3, "1 + 32 / 4 = 9: log2 is 3");
        assert_eq!(c.classify(8), 0);
        // Two window boundaries later chunk 0's count is a quarter: 32 / 4 = 8, + 1 = 9:
        // 9 / 4 = 2 rewrites, level floor(log2(3)) = 1.
        for _ in 0..128 {
            c.classify(12);
        }
        assert_eq!(c.classify(0), 1);
        let mut memory = Vec::new();
        c.memory(&mut memory);
        assert_eq!(memory, vec![("lifetime_table", 4 * CHUNK_BYTES)]);
    }
}
