//! How the controller is driven: the replay of requests (`[replay]`) and the
//! preconditioning before the measured run (`[precondition]`); and [`ControllerConfig`],
//! what a simulator is built from.

use crate::controller::buffer::BufferConfig;
use crate::controller::interface::InterfaceConfig;
use crate::controller::metrics::MetricsConfig;
use crate::device::DeviceConfig;
use serde::{Deserialize, Serialize};

/// Preconditioning: what is written to the device before the measured run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreconditionMode {
    /// A fresh device (only the pages read before they are written are mapped, if `warmup`).
    None,
    /// The whole logical space written once, sequentially.
    Fill,
    /// `fill`, then random page writes until the write amplification settles.
    Steady,
}

/// Preconditioning settings; its traffic is reported apart from the run's metrics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PreconditionConfig {
    pub mode: PreconditionMode,
    /// Steady state: a window of this many random page writes (0: an eighth of the logical
    /// pages) is one measurement of the write amplification.
    pub window_pages: u64,
    /// Steady state (SNIA PTS's rule, with the WAF as the variable): over the last
    /// `windows` windows, the WAF's range (max - min) is at most this fraction of its mean
    /// ("data excursion")...
    pub tolerance: f64,
    /// ...and its least-squares line rises or falls across the windows by at most this
    /// fraction of the mean ("slope excursion").
    pub slope_tolerance: f64,
    /// Windows compared for steady state (SNIA PTS: 5).
    pub windows: u32,
    /// Random writes stop after this many times the logical capacity, settled or not.
    pub max_capacity_writes: f64,
    /// Then this many requests of the run's own source (trace or workload) are replayed
    /// first, untimed and left out of the metrics, as SNIA PTS's workload-dependent
    /// preconditioning: a benchmark's file creation, a trace's first hours.
    pub workload_requests: u64,
    /// Pages the source reads before it writes them are written first (the LeaFTL
    /// artifact's warm-up), so that no scheme is charged or favoured for them.
    pub warmup: bool,
    /// Seed of the random writes.
    pub seed: u64,
}

impl Default for PreconditionConfig {
    fn default() -> Self {
        PreconditionConfig {
            mode: PreconditionMode::Steady,
            window_pages: 0,
            tolerance: 0.2,
            slope_tolerance: 0.1,
            windows: 5,
            max_capacity_writes: 4.0,
            workload_requests: 0,
            warmup: true,
            seed: 1,
        }
    }
}

/// How requests are fed to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayMode {
    /// Each request arrives at its trace timestamp (times the time scale).
    Open,
    /// Timestamps are ignored; `queue_depth` requests are kept outstanding.
    Closed,
}

/// Replay and timing options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplayConfig {
    pub mode: ReplayMode,
    /// Open loop: arrival times are multiplied by this (0.5 replays twice as fast).
    pub time_scale: f64,
    /// Closed loop: outstanding requests.
    pub queue_depth: u32,
    /// false selects mapping-only mode: no timing model, no latencies, same counters.
    pub timing: bool,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            mode: ReplayMode::Open,
            time_scale: 1.0,
            queue_depth: 32,
            timing: true,
        }
    }
}

/// What a [`Simulator`](crate::controller::simulator::Simulator) is built from: the device
/// model's settings and the controller's own sections, not the rest of the run's
/// configuration. The run assembles it (`run::config::Config::controller`).
#[derive(Clone, Debug, Default)]
pub struct ControllerConfig {
    pub device: DeviceConfig,
    pub buffer: BufferConfig,
    pub interface: InterfaceConfig,
    pub replay: ReplayConfig,
    pub metrics: MetricsConfig,
}
