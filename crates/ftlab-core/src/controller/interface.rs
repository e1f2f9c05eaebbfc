//! The controller's front: the host interface (a fixed command time, and the link that
//! carries each request's data in its direction) and the write buffer's DRAM. Each of the
//! three data paths (link in, link out, DRAM) moves one transfer at a time, in the order
//! the transfers are placed, except that a transfer that fits wholly before the latest run
//! of back-to-back transfers goes there (requests finish out of order: a read that waited
//! for a busy die must not hold back the data of a later read that did not). Runs before
//! the latest are forgotten: such a transfer may overlap one of them.
//!
//! A request's latency then runs from its arrival: `command_ns`; a write's data crosses
//! the link in, waits for its buffer slot and is written into DRAM (unbuffered: it is
//! programmed once it has crossed); a read's flash pages are read (or its buffered pages
//! read from DRAM), then its data crosses the link out.

use crate::controller::settings::ControllerConfig;
use crate::units;
use serde::{Deserialize, Serialize};

/// The host interface: the command protocol and the link between host and controller
/// (NVMe over PCIe). Every request pays `command_ns`; its data crosses the link at
/// `link_bytes_per_s` in its direction (one transfer at a time per direction).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InterfaceConfig {
    /// Payload rate of the link, each direction, in bytes per second (lanes x lane rate x
    /// line-code and packet efficiency); 0: not modelled.
    #[serde(with = "units::bytes")]
    pub link_bytes_per_s: u64,
    /// Fixed time per command: doorbell, command fetch, completion post.
    #[serde(with = "units::nanos")]
    pub command_ns: u64,
}

impl Default for InterfaceConfig {
    fn default() -> Self {
        // PCIe 4.0 x4: 16 GT/s x 4 lanes x 128/130 = 7.88 GB/s, less ~9% of packet headers
        // at a 256-byte payload (24 bytes a packet): 7.2 GB/s. The command: a doorbell
        // write, a 64-byte command fetch (one PCIe read round trip, ~1 us) and a 16-byte
        // completion with its interrupt (ftlab's estimate; controllers do not publish it).
        InterfaceConfig {
            link_bytes_per_s: 7_200_000_000,
            command_ns: 2_000,
        }
    }
}

/// One data path: its rate and the latest run of back-to-back transfers placed on it.
#[derive(Clone, Copy, Debug, Default)]
struct Path {
    bytes_per_s: u64,
    run_start: u64,
    free: u64,
}

impl Path {
    /// Moves `bytes` once ready at `ready`; returns when they are across (`ready` when the
    /// path is not modelled).
    #[inline]
    fn carry(&mut self, ready: u64, bytes: u64) -> u64 {
        if self.bytes_per_s == 0 || bytes == 0 {
            return ready;
        }
        let len = (bytes as u128 * 1_000_000_000).div_ceil(self.bytes_per_s as u128) as u64;
        if ready + len <= self.run_start {
            return ready + len;
        }
        if ready > self.free {
            self.run_start = ready;
            self.free = ready;
        }
        self.free += len;
        self.free
    }
}

/// The host interface and the buffer's DRAM (see the module).
#[derive(Clone, Copy, Debug, Default)]
pub struct Front {
    command_ns: u64,
    link_in: Path,
    link_out: Path,
    dram: Path,
}

impl Front {
    pub fn new(cfg: &ControllerConfig) -> Self {
        let link = Path {
            bytes_per_s: cfg.interface.link_bytes_per_s,
            ..Path::default()
        };
        Front {
            command_ns: cfg.interface.command_ns,
            link_in: link,
            link_out: link,
            dram: Path {
                bytes_per_s: cfg.buffer.dram_bytes_per_s,
                ..Path::default()
            },
        }
    }

    /// When a command arriving at `arrival` has been fetched.
    #[inline]
    pub fn command(&self, arrival: u64) -> u64 {
        arrival + self.command_ns
    }

    /// When a write's `bytes`, sent at `ready`, have crossed the link in.
    #[inline]
    pub fn data_in(&mut self, ready: u64, bytes: u64) -> u64 {
        self.link_in.carry(ready, bytes)
    }

    /// When a read's `bytes`, ready at `ready`, have crossed the link out.
    #[inline]
    pub fn data_out(&mut self, ready: u64, bytes: u64) -> u64 {
        self.link_out.carry(ready, bytes)
    }

    /// When `bytes` ready at `ready` have been written into (or read from) the DRAM.
    #[inline]
    pub fn dram(&mut self, ready: u64, bytes: u64) -> u64 {
        self.dram.carry(ready, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn front(link: u64, command: u64, dram: u64) -> Front {
        let mut cfg = ControllerConfig::default();
        cfg.interface.link_bytes_per_s = link;
        cfg.interface.command_ns = command;
        cfg.buffer.dram_bytes_per_s = dram;
        Front::new(&cfg)
    }

    /// Hand-computed schedule: 4 KiB at 4.096 GB/s is 1,000 ns on the link, at 409.6 MB/s
    /// 10,000 ns in DRAM.
    #[test]
    fn transfers_queue_in_each_path_and_leave_gaps_open() {
        let mut f = front(4_096_000_000, 2_000, 409_600_000);
        assert_eq!(f.command(500), 2_500);
        // Two writes' data back to back on the link in: the second waits for the first.
        assert_eq!(f.data_in(2_500, 4096), 3_500);
        assert_eq!(f.data_in(3_000, 4096), 4_500);
        // The DRAM: the first write's copy, then the second's behind it.
        assert_eq!(f.dram(3_500, 4096), 13_500);
        assert_eq!(f.dram(4_500, 4096), 23_500);
        // A third, ready with the first, does not slip into the first's place.
        assert_eq!(f.data_in(2_500, 4096), 5_500);
        // The link out is independent of the link in.
        assert_eq!(f.data_out(3_000, 8192), 5_000);
        // A read that waited for its die does not hold back an earlier-ready one placed
        // after it, which fits before it...
        assert_eq!(f.data_out(100_000, 4096), 101_000);
        assert_eq!(f.data_out(6_000, 4096), 7_000);
        // ...but one that overlaps it goes after it.
        assert_eq!(f.data_out(99_500, 4096), 102_000);
    }

    #[test]
    fn unmodelled_paths_take_no_time() {
        let mut f = front(0, 0, 0);
        assert_eq!(f.command(7), 7);
        assert_eq!(f.data_in(7, 4096), 7);
        assert_eq!(f.data_out(7, 4096), 7);
        assert_eq!(f.dram(7, 4096), 7);
        // Nothing to move: no time either.
        let mut f = front(1_000_000_000, 0, 1_000_000_000);
        assert_eq!(f.data_out(9, 0), 9);
    }
}
