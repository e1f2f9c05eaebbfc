//! Analytic timing model: every die and every channel keeps the time at which it is next
//! free, and each flash operation is placed at the earliest instant its resources allow.
//!
//! A read occupies its die for tR, then the die and its channel for the transfer out. A
//! program first transfers over the channel (the die must be idle: cache programming is not
//! modelled), then occupies the die for tPROG. An erase occupies the die for tBERS. Planes of
//! one die share its timeline (multi-plane commands are not modelled), so concurrency comes
//! from dies and channels. There is no event queue: each operation is a few max/add steps.

use crate::config::{Config, Layout};

#[derive(Clone, Debug)]
pub struct Timeline {
    die_free: Vec<u64>,
    channel_free: Vec<u64>,
    read_ns: u64,
    program_ns: u64,
    erase_ns: u64,
    /// Channel time to move one page with its OOB.
    transfer_ns: u64,
}

/// When an operation's phases end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The data crossed the channel (for a program: the host buffer slot is free again).
    pub transferred: u64,
    /// The operation is complete.
    pub done: u64,
}

impl Timeline {
    pub fn new(cfg: &Config, layout: &Layout) -> Self {
        let bytes = layout.page_size as u128 + layout.oob_size as u128;
        let transfer_ns =
            (bytes * 1_000_000_000).div_ceil(cfg.nand.channel_bytes_per_s as u128) as u64;
        Timeline {
            die_free: vec![0; layout.dies as usize],
            channel_free: vec![0; layout.channels as usize],
            read_ns: cfg.nand.read_latency_ns,
            program_ns: cfg.nand.program_latency_ns,
            erase_ns: cfg.nand.erase_latency_ns,
            transfer_ns,
        }
    }

    #[inline]
    pub fn read(&mut self, die: u32, channel: u32, ready: u64) -> Span {
        let die_free = &mut self.die_free[die as usize];
        let sensed = ready.max(*die_free) + self.read_ns;
        let channel_free = &mut self.channel_free[channel as usize];
        let done = sensed.max(*channel_free) + self.transfer_ns;
        *channel_free = done;
        *die_free = done;
        Span {
            transferred: done,
            done,
        }
    }

    #[inline]
    pub fn program(&mut self, die: u32, channel: u32, ready: u64) -> Span {
        let die_free = &mut self.die_free[die as usize];
        let channel_free = &mut self.channel_free[channel as usize];
        let transferred = ready.max(*die_free).max(*channel_free) + self.transfer_ns;
        *channel_free = transferred;
        let done = transferred + self.program_ns;
        *die_free = done;
        Span { transferred, done }
    }

    #[inline]
    pub fn erase(&mut self, die: u32, ready: u64) -> Span {
        let die_free = &mut self.die_free[die as usize];
        let done = ready.max(*die_free) + self.erase_ns;
        *die_free = done;
        Span {
            transferred: done,
            done,
        }
    }

    pub fn transfer_ns(&self) -> u64 {
        self.transfer_ns
    }
}
