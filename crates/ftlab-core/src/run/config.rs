//! Configuration: typed sections, named presets, TOML files and `--set key=value` overrides.
//!
//! Layers apply in order: built-in defaults, then a preset, then each configuration file,
//! then each override. Every key a layer names must exist in the defaults (scheme sections
//! included); an unknown key is an error that names it and suggests the nearest known key.
//! After merging, the tree is read into [`Config`] and [`Config::validate`] checks that the
//! geometry is possible, naming the key at fault.

use crate::error::{Error, Result};
use crate::io::workload::WorkloadConfig;
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Physical organisation of the simulated SSD.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Geometry {
    pub channels: u32,
    pub chips_per_channel: u32,
    pub dies_per_chip: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    /// Bytes of data per flash page.
    #[serde(with = "units::bytes")]
    pub page_size: u64,
    /// Bytes of out-of-band (spare) area per page.
    #[serde(with = "units::bytes")]
    pub oob_size: u64,
}

/// In what order the pages of an erased block may be programmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgramOrder {
    /// Page by page from the first, as modern MLC/TLC NAND requires.
    Sequential,
    /// In increasing page order, skipping allowed: a page may be programmed only above the
    /// block's highest programmed page, and pages skipped stay erased until the block is
    /// erased. The rule of the MLC NAND that later log-block FTLs (KRAFT) were designed for.
    Ascending,
    /// Any erased page of the block, as the SLC NAND of log-block FTLs allowed.
    Any,
}

/// NAND timings and rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Nand {
    /// Array read time tR, in ns.
    #[serde(with = "units::nanos")]
    pub read_latency_ns: u64,
    /// Program time tPROG, in ns.
    #[serde(with = "units::nanos")]
    pub program_latency_ns: u64,
    /// Block erase time tBERS, in ns.
    #[serde(with = "units::nanos")]
    pub erase_latency_ns: u64,
    /// Channel transfer rate, in bytes per second.
    #[serde(with = "units::bytes")]
    pub channel_bytes_per_s: u64,
    pub program_order: ProgramOrder,
}

/// Settings every FTL shares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FtlConfig {
    /// Fraction of the raw capacity hidden from the host (MQSim's convention:
    /// logical pages = physical pages x (1 - over_provisioning), rounded to the nearest page).
    pub over_provisioning: f64,
}

/// How garbage-collection victims are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VictimPolicy {
    /// Fewest valid pages.
    Greedy,
    /// Highest (1 - u) / 2u x age (Rosenblum and Ousterhout), age in host page writes.
    CostBenefit,
    /// The block that filled first (FIFO, as a circular log cleans): the policy of
    /// Desnoyers' closed-form model (SYSTOR 2012), for validation; a block with no invalid
    /// page is passed over.
    Fifo,
}

/// Garbage-collection trigger and policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GcConfig {
    /// When a parallel unit opens a block with fewer free blocks than this fraction of its
    /// blocks, one victim is reclaimed first.
    pub threshold: f64,
    /// At or below this fraction of free blocks (at least one block), victims are reclaimed
    /// until the unit is above it again before the write proceeds.
    pub hard_threshold: f64,
    pub policy: VictimPolicy,
    /// When victims are reclaimed: in the background between requests (below `threshold`,
    /// queued behind host work) with foreground GC only at `hard_threshold`, or entirely in
    /// the foreground of the write that needs a block (the behaviour before background GC).
    pub mode: GcMode,
    /// Where GC writes the valid pages it moves: a block of their own (`gc`), or the host's
    /// open block (`host`: one write stream, as the closed-form models assume).
    pub copy_stream: CopyStream,
}

/// The open block that GC's copies go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CopyStream {
    Gc,
    Host,
}

/// When garbage collection runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcMode {
    /// Below `gc.threshold`, victims are reclaimed between requests as low-priority work;
    /// a write waits for GC only at `gc.hard_threshold`.
    Background,
    /// The write that opens a block below `gc.threshold` waits for the GC it triggers.
    Foreground,
}

/// How the controller orders flash operations on a die.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// Host reads go ahead of queued background work (GC, write-back) on their die.
    pub read_priority: bool,
    /// A host read arriving while its die programs or erases suspends that operation
    /// (program/erase suspend), paying `suspend_ns`; the suspended operation resumes after.
    pub suspend: bool,
    /// Cost of one suspension (suspend plus resume), in ns.
    #[serde(with = "units::nanos")]
    pub suspend_ns: u64,
    /// Reads and programs to the same page offset on different planes of one die, issued
    /// back to back, run as one multi-plane operation (one tR or tPROG).
    pub multi_plane: bool,
}

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

/// What the write buffer evicts when it is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlushOrder {
    /// The least recently written pages, in that order.
    Lru,
    /// The least recently written pages, sorted by logical page address.
    Sorted,
}

/// The DRAM write buffer in front of every FTL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BufferConfig {
    /// Capacity in bytes (rounded down to whole pages); 0 disables the buffer.
    #[serde(with = "units::bytes")]
    pub size_bytes: u64,
    /// Bytes evicted at once when the buffer is full; 0 means one page with `lru` and the
    /// whole buffer with `sorted`.
    #[serde(with = "units::bytes")]
    pub flush_bytes: u64,
    pub flush: FlushOrder,
    /// Sorted flush only: group the flush candidates by `lpa / flush_group_pages` and
    /// flush the groups with the most pages first, up to `flush_group_fill` of the flush
    /// size (LeaFTL's filtering, so that flushed runs are learnable); 0 disables it.
    pub flush_group_pages: u64,
    /// Share of the flush size the group filtering may fill (at least one group is taken).
    pub flush_group_fill: f64,
    /// Also keep clean copies of pages read from flash (a data cache, as in LeaFTL's
    /// evaluation); they give way to writes before any dirty page is flushed.
    pub cache_reads: bool,
    /// When dirty pages are written to flash.
    pub destage: Destage,
    /// `watermark`: destaging starts once this share of the buffer's pages is dirty...
    pub high_watermark: f64,
    /// ...and stops once at most this share is.
    pub low_watermark: f64,
    /// Rate at which data moves into and out of the buffer's DRAM, in bytes per second
    /// (one transfer at a time); 0: not modelled.
    #[serde(with = "units::bytes")]
    pub dram_bytes_per_s: u64,
}

/// When the write buffer writes its dirty pages to flash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Destage {
    /// A controller's write-back: from `high_watermark` of the buffer dirty down to
    /// `low_watermark`, in the dies' idle time between requests, so that a write waits
    /// for flash only when it finds the buffer full.
    Watermark,
    /// Only when a write finds the buffer full, in that write's path (ftlab 0.2 and
    /// before).
    OnFull,
}

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

/// DRAM available to the mapping (used by the schemes that cache their map).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[derive(Default)]
pub struct DramConfig {
    /// Bytes of controller DRAM for mapping state; 0 means unlimited (or see
    /// `budget_fraction`).
    #[serde(with = "units::bytes")]
    pub budget_bytes: u64,
    /// The budget as a share of the page-level table (logical pages x entry bytes), so that
    /// one setting means the same on every device size; 0: unused. Exclusive with
    /// `budget_bytes`.
    pub budget_fraction: f64,
}

impl DramConfig {
    /// The mapping DRAM budget in bytes on `layout` (0: unlimited).
    pub fn budget(&self, layout: &Layout) -> u64 {
        if self.budget_fraction > 0.0 {
            let table = layout.logical_pages * layout.ppa_entry_bytes();
            ((table as f64 * self.budget_fraction) as u64).max(1)
        } else {
            self.budget_bytes
        }
    }

    /// The key that set the budget, for errors about it.
    pub fn budget_key(&self) -> &'static str {
        if self.budget_fraction > 0.0 {
            "dram.budget_fraction"
        } else {
            "dram.budget_bytes"
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

/// Metric collection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// A time-series sample (memory, WAF, GC) is taken every this many requests.
    pub sample_every_requests: u64,
}

/// The whole configuration of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub geometry: Geometry,
    pub nand: Nand,
    pub ftl: FtlConfig,
    pub gc: GcConfig,
    pub buffer: BufferConfig,
    pub dram: DramConfig,
    pub replay: ReplayConfig,
    pub scheduler: SchedulerConfig,
    pub interface: InterfaceConfig,
    pub precondition: PreconditionConfig,
    pub metrics: MetricsConfig,
    pub workload: WorkloadConfig,
    /// How traces are read and mapped onto the device.
    pub trace: crate::io::trace::TraceConfig,
    /// The host stack between the application and the device.
    pub host: crate::host::HostConfig,
    /// The log-structured file systems of the `f2fs` and `alfs` stacks.
    pub lfs: crate::host::lfs::LfsConfig,
    /// Scheme-specific sections (`[leaftl]`, `[dftl]`, ...), checked by each scheme.
    #[serde(flatten)]
    pub schemes: BTreeMap<String, toml::Table>,
}

impl Default for Geometry {
    fn default() -> Self {
        // The `default` preset: a current TLC SSD's parallelism (8 channels x 4 dies x 2
        // planes) and about as many blocks per plane as the B17A die (504), so that the
        // blocks GC keeps free and open cost little of the over-provisioning; 8 GiB raw, so
        // that any bundled workload runs in seconds. A device fitted to a trace keeps this
        // parallelism and scales the blocks per plane.
        Geometry {
            channels: 8,
            chips_per_channel: 4,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 512,
            pages_per_block: 64,
            page_size: 4096,
            oob_size: 128,
        }
    }
}

impl Default for Nand {
    fn default() -> Self {
        // 3D TLC NAND (Micron B17A, as in the CAES UT81NDQ512G8T datasheet): single-plane
        // page read 74 us; effective program time 1.9 ms per 16 KiB page, i.e. 475 us per
        // simulated 4 KiB page, so that a die programs at the datasheet's rate; block erase
        // 15 ms per 2,304 x 16 KiB pages, scaled to the simulated 64 x 4 KiB block (104 us)
        // so that erasing costs the same time per page written; NV-DDR3 at 667 MT/s.
        Nand {
            read_latency_ns: 74_000,
            program_latency_ns: 475_000,
            erase_latency_ns: 104_000,
            channel_bytes_per_s: 667_000_000,
            program_order: ProgramOrder::Sequential,
        }
    }
}

impl Default for FtlConfig {
    fn default() -> Self {
        FtlConfig {
            over_provisioning: 0.07,
        }
    }
}

impl Default for GcConfig {
    fn default() -> Self {
        GcConfig {
            threshold: 0.02,
            hard_threshold: 0.005,
            policy: VictimPolicy::Greedy,
            copy_stream: CopyStream::Gc,
            mode: GcMode::Background,
        }
    }
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            read_priority: true,
            suspend: true,
            suspend_ns: 20_000,
            multi_plane: true,
        }
    }
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

impl Default for BufferConfig {
    fn default() -> Self {
        BufferConfig {
            size_bytes: 0,
            flush_bytes: 0,
            flush: FlushOrder::Lru,
            flush_group_pages: 0,
            flush_group_fill: 0.875,
            cache_reads: false,
            destage: Destage::Watermark,
            // ftlab's choice (controllers do not publish theirs): a quarter of the buffer
            // kept free for bursts, half of it left dirty for overwrites to hit.
            high_watermark: 0.75,
            low_watermark: 0.5,
            // DDR4-2666 on a 32-bit bus: 10.7 GB/s.
            dram_bytes_per_s: 10_000_000_000,
        }
    }
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

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            sample_every_requests: 10_000,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            geometry: Geometry::default(),
            nand: Nand::default(),
            ftl: FtlConfig::default(),
            gc: GcConfig::default(),
            buffer: BufferConfig::default(),
            dram: DramConfig::default(),
            replay: ReplayConfig::default(),
            scheduler: SchedulerConfig::default(),
            interface: InterfaceConfig::default(),
            precondition: PreconditionConfig::default(),
            metrics: MetricsConfig::default(),
            workload: WorkloadConfig::default(),
            trace: crate::io::trace::TraceConfig::default(),
            host: crate::host::HostConfig::default(),
            lfs: crate::host::lfs::LfsConfig::default(),
            schemes: crate::ftl::scheme_defaults(),
        }
    }
}

/// Named configurations: (name, description, TOML applied over the defaults).
pub const PRESETS: &[(&str, &str, &str)] = &[
    (
        "default",
        "a current TLC SSD: 8 channels x 4 dies x 2 planes, 8 GiB raw (fitted to traces), 74/475/104 us, 16 MiB write buffer, background GC, read priority, suspend",
        include_str!("../../presets/default.toml"),
    ),
    (
        "legacy",
        "ftlab's default before the device model of 0.2: 256 MiB raw, 2 channels x 2 dies, 50/500/3000 us, FIFO scheduling, foreground GC, no preconditioning",
        include_str!("../../presets/legacy.toml"),
    ),
    (
        "small",
        "anchors.md section 3: 2 GiB raw, 4 ch x 2 chips x 2 dies x 2 planes, 128 pages/block, 7% OP, 50/500/3000 us",
        include_str!("../../presets/small.toml"),
    ),
    (
        "leaftl",
        "LeaFTL (ASPLOS'23): 2 TiB raw, 16 channels, 4 KiB pages, 256 pages/block, 128 B OOB, 20/200/1500 us, 20% OP",
        include_str!("../../presets/leaftl.toml"),
    ),
    (
        "slimftl",
        "SlimFTL thesis: 16 GiB logical, 8 KiB pages, 256 pages/block, 10% OP of the logical size",
        include_str!("../../presets/slimftl.toml"),
    ),
    (
        "amf",
        "AMF (FAST'16): the BlueDBM SSD, 512 GB of MLC, 8 channels x 4 ways, 128 x 4 KiB pages/block, 100/490/3500 us, 120 MB/s channels (240K/67K IOPS raw), no write buffer",
        include_str!("../../presets/amf.toml"),
    ),
    (
        "kraft",
        "KRAFT: 64 GiB of MLC NAND (Samsung K9G8G08U0A): 2 KiB pages, 128 pages/block, 60/800/1500 us",
        include_str!("../../presets/kraft.toml"),
    ),
];

/// Names and descriptions of the presets.
pub fn preset_names() -> Vec<(&'static str, &'static str)> {
    PRESETS.iter().map(|(n, d, _)| (*n, *d)).collect()
}

fn preset_toml(name: &str) -> Result<&'static str> {
    PRESETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = PRESETS.iter().map(|(n, _, _)| *n).collect();
            Error::Usage(format!(
                "unknown preset `{name}`; the presets are: {}",
                names.join(", ")
            ))
        })
}

/// Builds the configuration from a preset, a table of extra defaults applied over it (for
/// example a named workload), configuration files and `key=value` overrides, in that order.
pub fn resolve(
    preset: Option<&str>,
    extra: Option<toml::Table>,
    files: &[&Path],
    sets: &[String],
) -> Result<Config> {
    resolve_with_keys(preset, extra, files, sets).map(|(cfg, _)| cfg)
}

/// [`resolve`], also returning every key the layers set (`geometry.channels`, ...), in
/// the order they were set.
pub fn resolve_with_keys(
    preset: Option<&str>,
    extra: Option<toml::Table>,
    files: &[&Path],
    sets: &[String],
) -> Result<(Config, Vec<String>)> {
    let known = toml::Table::try_from(Config::default())
        .map_err(|e| Error::Usage(format!("internal: default configuration: {e}")))?;
    let mut tree = known.clone();
    // Every key a layer sets, to name the culprit if the merged tree has a wrong type.
    let mut touched = Vec::new();
    if let Some(name) = preset {
        let text = preset_toml(name)?;
        let layer: toml::Table = toml::from_str(text)
            .map_err(|e| Error::Usage(format!("internal: preset `{name}`: {e}")))?;
        merge(&mut tree, &known, layer, "", &mut touched)?;
    }
    if let Some(layer) = extra {
        merge(&mut tree, &known, layer, "", &mut touched)?;
    }
    for file in files {
        let text = std::fs::read_to_string(file).map_err(|e| Error::Io {
            file: file.to_path_buf(),
            message: e.to_string(),
        })?;
        let layer: toml::Table = toml::from_str(&text).map_err(|e| Error::Io {
            file: file.to_path_buf(),
            message: format!("not a valid TOML configuration: {e}"),
        })?;
        merge(&mut tree, &known, layer, "", &mut touched).map_err(|e| in_file(e, file))?;
    }
    for set in sets {
        let layer = parse_set(set)?;
        merge(&mut tree, &known, layer, "", &mut touched)?;
    }
    let cfg: Config = match toml::Value::Table(tree.clone()).try_into() {
        Ok(cfg) => cfg,
        Err(e) => return Err(type_error(&known, &tree, &touched, e)),
    };
    cfg.validate()?;
    Ok((cfg, touched))
}

fn in_file(e: Error, file: &Path) -> Error {
    match e {
        Error::Config { key, message } => Error::Config {
            key,
            message: format!("{message} (in {})", file.display()),
        },
        other => other,
    }
}

/// Finds which key made deserialisation fail by applying the touched keys one at a time
/// to the defaults (only on the error path).
fn type_error(
    known: &toml::Table,
    tree: &toml::Table,
    touched: &[String],
    e: toml::de::Error,
) -> Error {
    for path in touched {
        let mut probe = known.clone();
        let (mut from, mut to) = (tree, &mut probe);
        let parts: Vec<&str> = path.split('.').collect();
        for (i, part) in parts.iter().enumerate() {
            let Some(value) = from.get(*part) else { break };
            if i + 1 == parts.len() {
                to.insert(part.to_string(), value.clone());
            } else if let (toml::Value::Table(f), Some(toml::Value::Table(t))) =
                (value, to.get_mut(*part))
            {
                from = f;
                to = t;
            } else {
                break;
            }
        }
        if let Err(err) = toml::Value::Table(probe).try_into::<Config>() {
            return Error::config(path.clone(), err.message().to_string());
        }
    }
    Error::config("(configuration)", e.message().to_string())
}

/// Turns `geometry.channels=8` into a one-key TOML table. The value is read as a TOML
/// literal (number, boolean, quoted string, array); anything else is taken as a string.
fn parse_set(set: &str) -> Result<toml::Table> {
    let (key, value) = set
        .split_once('=')
        .ok_or_else(|| Error::Usage(format!("override `{set}` is not of the form key=value")))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(|p| p.trim().is_empty()) {
        return Err(Error::Usage(format!("override `{set}` has an empty key")));
    }
    let value = value.trim();
    let parsed: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    let mut parts: Vec<&str> = key.split('.').map(str::trim).collect();
    let last = parts.pop().unwrap_or(key);
    let mut table = toml::Table::new();
    table.insert(last.to_string(), parsed);
    for part in parts.into_iter().rev() {
        let mut outer = toml::Table::new();
        outer.insert(part.to_string(), toml::Value::Table(table));
        table = outer;
    }
    Ok(table)
}

/// Overlays `layer` on `tree`, refusing keys absent from `known`.
fn merge(
    tree: &mut toml::Table,
    known: &toml::Table,
    layer: toml::Table,
    prefix: &str,
    touched: &mut Vec<String>,
) -> Result<()> {
    for (key, value) in layer {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        let Some(known_value) = known.get(&key) else {
            return Err(unknown_key(&path, known, prefix));
        };
        match (known_value, value) {
            (toml::Value::Table(known_sub), toml::Value::Table(sub)) => {
                let target = tree
                    .entry(key.clone())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                match target {
                    toml::Value::Table(t) => merge(t, known_sub, sub, &path, touched)?,
                    _ => unreachable!("the merged tree keeps the shape of the defaults"),
                }
            }
            (toml::Value::Table(_), _) => {
                return Err(Error::config(
                    path,
                    "is a section; set one of its keys instead",
                ));
            }
            (_, toml::Value::Table(_)) => {
                return Err(Error::config(path, "is a single value, not a section"));
            }
            (_, value) => {
                tree.insert(key, value);
                touched.push(path);
            }
        }
    }
    Ok(())
}

fn unknown_key(path: &str, known: &toml::Table, prefix: &str) -> Error {
    let last = path.rsplit('.').next().unwrap_or(path);
    let nearest = known
        .keys()
        .map(|k| (edit_distance(k, last), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min();
    let mut message = "unknown key".to_string();
    if let Some((_, k)) = nearest {
        let full = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        message.push_str(&format!("; did you mean `{full}`?"));
    } else {
        let keys: Vec<&str> = known.keys().map(String::as_str).collect();
        message.push_str(&format!("; known keys here: {}", keys.join(", ")));
    }
    Error::config(path, message)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Geometry derived from the configuration, in the units the simulator uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub channels: u32,
    /// Parallel units (planes) in the device; block `b` belongs to unit `b / blocks_per_unit`.
    pub units: u32,
    /// Dies: the unit of timing concurrency (planes of one die are serialised).
    pub dies: u32,
    pub planes_per_die: u32,
    pub blocks_per_unit: u32,
    pub pages_per_block: u32,
    pub total_blocks: u32,
    pub physical_pages: u64,
    pub logical_pages: u64,
    pub page_size: u32,
    pub oob_size: u32,
}

impl Layout {
    /// Parallel unit of block `b`. Units are numbered channel first, then chip, die and
    /// plane, so that consecutive units sit on different channels.
    #[inline]
    pub fn unit_of_block(&self, block: u32) -> u32 {
        block / self.blocks_per_unit
    }

    /// Die (timing resource) of unit `u`.
    #[inline]
    pub fn die_of_unit(&self, unit: u32) -> u32 {
        unit % self.dies
    }

    #[inline]
    pub fn channel_of_unit(&self, unit: u32) -> u32 {
        unit % self.channels
    }

    /// Plane of unit `u` within its die.
    #[inline]
    pub fn plane_of_unit(&self, unit: u32) -> u32 {
        unit / self.dies
    }

    /// The unit of plane `plane` on die `die`.
    #[inline]
    pub fn unit_at(&self, die: u32, plane: u32) -> u32 {
        plane * self.dies + die
    }

    /// The `k`-th unit of the plane-first stripe order: the planes of die 0, then those of
    /// die 1, ..., dies channel first. Consecutive pages written in this order can pair up as
    /// multi-plane programs, and consecutive dies sit on different channels.
    #[inline]
    pub fn stripe_unit(&self, k: u32) -> u32 {
        let k = k % self.units;
        self.unit_at(k / self.planes_per_die, k % self.planes_per_die)
    }

    /// Superblocks: block `i` of every parallel unit forms superblock `i`, a die- and
    /// plane-parallel stripe (SlimFTL's virtual blocks, log-block data blocks, AMF segments).
    #[inline]
    pub fn superblocks(&self) -> u32 {
        self.blocks_per_unit
    }

    /// The superblock block `b` belongs to.
    #[inline]
    pub fn superblock_of(&self, block: u32) -> u32 {
        block % self.blocks_per_unit
    }

    /// The block of superblock `sb` on the `k`-th unit of the stripe order.
    #[inline]
    pub fn superblock_member(&self, sb: u32, k: u32) -> u32 {
        self.stripe_unit(k) * self.blocks_per_unit + sb
    }

    /// Bytes of a page-address entry: enough bits for every physical page, rounded up
    /// to whole bytes (4 bytes up to 2^32 pages), as MQSim and pblk size them.
    pub fn ppa_entry_bytes(&self) -> u64 {
        let bits = 64 - (self.physical_pages.max(2) - 1).leading_zeros() as u64;
        bits.div_ceil(8)
    }

    pub fn logical_bytes(&self) -> u64 {
        self.logical_pages * self.page_size as u64
    }
}

/// Bytes of OOB every page spends on the header the simulator keeps: the logical page
/// address (4 bytes) and the write sequence number (4 bytes).
pub const OOB_HEADER_BYTES: u64 = 8;

impl Config {
    /// Checks every value and derives the [`Layout`]; errors name the key at fault.
    pub fn validate(&self) -> Result<Layout> {
        let g = &self.geometry;
        for (key, v) in [
            ("geometry.channels", g.channels),
            ("geometry.chips_per_channel", g.chips_per_channel),
            ("geometry.dies_per_chip", g.dies_per_chip),
            ("geometry.planes_per_die", g.planes_per_die),
            ("geometry.blocks_per_plane", g.blocks_per_plane),
        ] {
            if v == 0 {
                return Err(Error::config(key, "must be at least 1"));
            }
        }
        if g.pages_per_block < 2 {
            return Err(Error::config(
                "geometry.pages_per_block",
                "must be at least 2",
            ));
        }
        if g.page_size < 512 || !g.page_size.is_multiple_of(512) || g.page_size > 1 << 20 {
            return Err(Error::config(
                "geometry.page_size",
                format!(
                    "{} is not a multiple of 512 bytes between 512 B and 1 MiB",
                    g.page_size
                ),
            ));
        }
        if g.oob_size < OOB_HEADER_BYTES || g.oob_size > g.page_size {
            return Err(Error::config(
                "geometry.oob_size",
                format!(
                    "{} bytes: the OOB must hold at least the {OOB_HEADER_BYTES}-byte header \
                     (4-byte logical page address + 4-byte write sequence number) and be no larger than a page",
                    g.oob_size
                ),
            ));
        }
        let dies = g.channels as u64 * g.chips_per_channel as u64 * g.dies_per_chip as u64;
        let units = dies * g.planes_per_die as u64;
        let total_blocks = units * g.blocks_per_plane as u64;
        let physical_pages = total_blocks * g.pages_per_block as u64;
        if total_blocks > u32::MAX as u64 / 2 || physical_pages >= u32::MAX as u64 {
            return Err(Error::config(
                "geometry.blocks_per_plane",
                format!(
                    "the device has {physical_pages} pages; at most {} physical pages (32-bit page addresses) are supported",
                    u32::MAX - 1
                ),
            ));
        }
        let op = self.ftl.over_provisioning;
        if !(0.0..1.0).contains(&op) {
            return Err(Error::config(
                "ftl.over_provisioning",
                format!("{op} is not a fraction in [0, 1)"),
            ));
        }
        let logical_pages = (physical_pages as f64 * (1.0 - op)).round() as u64;
        // Every parallel unit needs an open host block, an open GC block and a reserved
        // free block beyond the logical data, or garbage collection can deadlock.
        let min_spare = units * 3 * g.pages_per_block as u64;
        if physical_pages < logical_pages + min_spare || logical_pages == 0 {
            return Err(Error::config(
                "ftl.over_provisioning",
                format!(
                    "{op} leaves {} spare pages; this geometry needs at least {min_spare} \
                     (3 blocks per parallel unit: open host block, open GC block, GC reserve)",
                    physical_pages - logical_pages.min(physical_pages)
                ),
            ));
        }
        let n = &self.nand;
        if n.channel_bytes_per_s == 0 {
            return Err(Error::config(
                "nand.channel_bytes_per_s",
                "must be positive",
            ));
        }
        let gc = &self.gc;
        if !(0.0..1.0).contains(&gc.threshold) {
            return Err(Error::config(
                "gc.threshold",
                format!("{} is not a fraction in [0, 1)", gc.threshold),
            ));
        }
        if !(0.0..1.0).contains(&gc.hard_threshold) || gc.hard_threshold > gc.threshold {
            return Err(Error::config(
                "gc.hard_threshold",
                format!(
                    "{} must be a fraction no larger than gc.threshold ({})",
                    gc.hard_threshold, gc.threshold
                ),
            ));
        }
        let page_size = g.page_size;
        let b = &self.buffer;
        if b.size_bytes / page_size >= logical_pages {
            return Err(Error::config(
                "buffer.size_bytes",
                "the write buffer must be smaller than the logical capacity",
            ));
        }
        if b.flush_bytes > b.size_bytes {
            return Err(Error::config(
                "buffer.flush_bytes",
                "must not exceed buffer.size_bytes",
            ));
        }
        if b.flush_bytes != 0 && b.flush_bytes < page_size {
            return Err(Error::config(
                "buffer.flush_bytes",
                "must be 0 or at least one page",
            ));
        }
        if !(0.0..=1.0).contains(&b.high_watermark) {
            return Err(Error::config(
                "buffer.high_watermark",
                format!("{} is not a fraction in [0, 1]", b.high_watermark),
            ));
        }
        if !(0.0..=1.0).contains(&b.low_watermark) || b.low_watermark > b.high_watermark {
            return Err(Error::config(
                "buffer.low_watermark",
                format!(
                    "{} must be a fraction no larger than buffer.high_watermark ({})",
                    b.low_watermark, b.high_watermark
                ),
            ));
        }
        if !(b.flush_group_fill > 0.0 && b.flush_group_fill <= 1.0) {
            return Err(Error::config(
                "buffer.flush_group_fill",
                format!("{} is not a fraction in (0, 1]", b.flush_group_fill),
            ));
        }
        let r = &self.replay;
        if !(r.time_scale.is_finite() && r.time_scale > 0.0) {
            return Err(Error::config(
                "replay.time_scale",
                "must be a positive number",
            ));
        }
        if r.queue_depth == 0 {
            return Err(Error::config("replay.queue_depth", "must be at least 1"));
        }
        let p = &self.precondition;
        for (key, value) in [
            ("precondition.tolerance", p.tolerance),
            ("precondition.slope_tolerance", p.slope_tolerance),
        ] {
            if !(value > 0.0 && value < 1.0) {
                return Err(Error::config(
                    key,
                    format!("{value} is not a fraction in (0, 1)"),
                ));
            }
        }
        if p.windows < 2 {
            return Err(Error::config("precondition.windows", "must be at least 2"));
        }
        if !(p.max_capacity_writes.is_finite() && p.max_capacity_writes >= 0.0) {
            return Err(Error::config(
                "precondition.max_capacity_writes",
                "must be a non-negative number",
            ));
        }
        if self.metrics.sample_every_requests == 0 {
            return Err(Error::config(
                "metrics.sample_every_requests",
                "must be at least 1",
            ));
        }
        let f = self.dram.budget_fraction;
        if !(0.0..=1.0).contains(&f) {
            return Err(Error::config(
                "dram.budget_fraction",
                format!("{f} is not a fraction in [0, 1]"),
            ));
        }
        if f > 0.0 && self.dram.budget_bytes > 0 {
            return Err(Error::config(
                "dram.budget_fraction",
                "set together with dram.budget_bytes: give one of them",
            ));
        }
        self.workload.validate()?;
        self.trace.validate()?;
        self.lfs.validate()?;
        Ok(Layout {
            channels: g.channels,
            units: units as u32,
            dies: dies as u32,
            planes_per_die: g.planes_per_die,
            blocks_per_unit: g.blocks_per_plane,
            pages_per_block: g.pages_per_block,
            total_blocks: total_blocks as u32,
            physical_pages,
            logical_pages,
            page_size: page_size as u32,
            oob_size: g.oob_size as u32,
        })
    }

    /// The configuration as TOML, every key written out.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    }

    /// A scheme's own section, or an empty one.
    pub fn scheme_section(&self, scheme: &str) -> toml::Table {
        self.schemes.get(scheme).cloned().unwrap_or_default()
    }

    /// A scheme's section read into its typed configuration (a serde struct with defaults);
    /// a value of the wrong type is an error naming `scheme.key`.
    pub fn scheme_config<T: serde::de::DeserializeOwned>(&self, scheme: &str) -> Result<T> {
        let table = self.scheme_section(scheme);
        toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| {
                let culprit = table.iter().find(|(k, v)| {
                    let one = toml::Table::from_iter([(k.to_string(), (*v).clone())]);
                    toml::Value::Table(one).try_into::<T>().is_err()
                });
                match culprit {
                    Some((k, _)) => Error::config(format!("{scheme}.{k}"), e.message().to_string()),
                    None => Error::config(scheme, e.message().to_string()),
                }
            })
    }
}
