//! The simulated SSD controller: the host interface ([`interface`]), the write buffer
//! ([`buffer`]), the [`simulator`] that serves host requests through an FTL on the device
//! model, the [`metrics`] it keeps and the latency [`breakdown`] summed over a run; its
//! [`settings`]; and [`Origin`], who a device request comes from.

pub mod breakdown;
pub mod buffer;
pub mod interface;
pub mod metrics;
pub mod settings;
pub mod simulator;

use crate::device::nand::Cause;

/// Who a device request comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The application (the trace or workload): counted as host requests, flash operations
    /// under `host`.
    Application,
    /// The host stack's own cleaning (a log-structured file system moving live blocks out of
    /// a segment): flash operations under `host_cleaning`.
    HostCleaning,
    /// The same cleaning done in the background, in the application's idle time (F2FS's
    /// background GC): counted as `host_cleaning`, and those who queue behind it wait
    /// behind background work (`bg_host_cleaning`).
    IdleCleaning,
    /// The host stack's metadata (file-system checkpoints, segment summaries): flash
    /// operations under `fs_metadata`.
    FsMetadata,
}

impl Origin {
    /// The cause the flash operations serving a request of this origin are counted under.
    pub fn cause(self) -> Cause {
        match self {
            Origin::Application => Cause::Host,
            Origin::HostCleaning | Origin::IdleCleaning => Cause::HostCleaning,
            Origin::FsMetadata => Cause::FsMetadata,
        }
    }
}
