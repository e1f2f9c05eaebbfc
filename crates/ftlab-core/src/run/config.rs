//! Configuration: typed sections, named presets, TOML files and `--set key=value` overrides.
//!
//! Layers apply in order: built-in defaults, then a preset, then each configuration file,
//! then each override. Every key a layer names must exist in the defaults (scheme sections
//! included); an unknown key is an error that names it and suggests the nearest known key.
//! After merging, the tree is read into [`Config`] and [`Config::validate`] checks that the
//! geometry is possible, naming the key at fault.

pub use crate::controller::buffer::{BufferConfig, Destage, FlushOrder};
pub use crate::controller::interface::InterfaceConfig;
pub use crate::controller::metrics::MetricsConfig;
pub use crate::controller::settings::{
    ControllerConfig, PreconditionConfig, PreconditionMode, ReplayConfig, ReplayMode,
};
pub use crate::device::faults::FaultConfig;
pub use crate::device::geometry::{Geometry, Layout, Nand, ProgramOrder, OOB_HEADER_BYTES};
pub use crate::device::media::{ErrorModel, MediaConfig, WearLeveling};
pub use crate::device::slc::{SlcConfig, WhenFull};
pub use crate::device::timing::SchedulerConfig;
pub use crate::device::DeviceConfig;
use crate::error::{Error, Result};
pub use crate::ftl::settings::{
    CopyStream, DramConfig, FtlConfig, GcConfig, GcMode, SchemeContext, VictimPolicy,
};
pub use crate::host::StackConfig;
use crate::io::workload::WorkloadConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The whole configuration of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub geometry: Geometry,
    pub nand: Nand,
    /// The device's command interface (`block` or `zns`).
    pub device: crate::ftl::interface::DeviceSection,
    /// The pseudo-SLC cache (off by default).
    pub slc: SlcConfig,
    /// Factory bad blocks and program and erase failures (off by default).
    pub faults: FaultConfig,
    /// Raw bit errors, ECC, read retry and wear (off by default).
    pub media: MediaConfig,
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

impl Default for Config {
    fn default() -> Self {
        Config {
            geometry: Geometry::default(),
            nand: Nand::default(),
            device: Default::default(),
            slc: SlcConfig::default(),
            faults: FaultConfig::default(),
            media: MediaConfig::default(),
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
        "phone",
        "a phone's UFS flash: the default TLC NAND on 4 channels x 2 dies x 2 planes, 6 GiB raw (fitted to traces), no write buffer, a pseudo-SLC cache (1.8% static + up to 10.8% dynamic blocks; 25/105/40 us)",
        include_str!("../../presets/phone.toml"),
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
        let spare_blocks =
            (physical_pages - logical_pages - min_spare) / g.pages_per_block as u64 / units;
        self.slc
            .validate(g.pages_per_block, g.blocks_per_plane, spare_blocks)?;
        self.faults.validate(g.blocks_per_plane, spare_blocks)?;
        self.media.validate(g.page_size)?;
        if self.faults.enabled() && self.slc.enabled() {
            return Err(Error::config(
                self.faults.key(),
                "faults are not modelled on a device with the pseudo-SLC cache on \
                 (turn slc.static_fraction and slc.dynamic_fraction to 0, or the faults off)",
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

    /// The configuration [`to_toml`](Self::to_toml) wrote, read back as it is: no preset,
    /// no merge, nothing validated.
    pub fn from_toml(text: &str) -> Result<Config> {
        toml::from_str(text)
            .map_err(|e| Error::Usage(format!("not a valid TOML configuration: {e}")))
    }

    /// The device model's settings ([`Flash::new`](crate::device::nand::Flash::new)).
    pub fn device(&self) -> DeviceConfig {
        DeviceConfig {
            nand: self.nand.clone(),
            scheduler: self.scheduler.clone(),
            slc: self.slc.clone(),
            faults: self.faults.clone(),
            media: self.media.clone(),
        }
    }

    /// What a simulator is built from: the device model's settings and the controller's
    /// sections.
    pub fn controller(&self) -> ControllerConfig {
        ControllerConfig {
            device: self.device(),
            buffer: self.buffer.clone(),
            interface: self.interface.clone(),
            replay: self.replay.clone(),
            metrics: self.metrics.clone(),
        }
    }

    /// What a host stack is built from: `[host]` and `[lfs]`, and `[zns]` on a zoned device.
    pub fn stack(&self) -> StackConfig {
        let zns = self.device.interface == crate::ftl::interface::Interface::Zns;
        StackConfig {
            host: self.host.clone(),
            lfs: self.lfs.clone(),
            // A bad `[zns]` section is the scheme's to refuse, naming the key, when it is built.
            zns: zns.then(|| {
                self.scheme_context()
                    .scheme_config("zns")
                    .unwrap_or_default()
            }),
        }
    }

    /// What a scheme is built from: the device, the FTL's settings and every scheme's
    /// section, not the rest of the run's configuration.
    pub fn scheme_context(&self) -> SchemeContext {
        SchemeContext {
            device: self.device(),
            ftl: self.ftl.clone(),
            gc: self.gc.clone(),
            dram: self.dram.clone(),
            timed: self.replay.timing,
            buffer_bytes: self.buffer.size_bytes,
            sections: self.schemes.clone(),
            stream_starts: Vec::new(),
        }
    }
}
