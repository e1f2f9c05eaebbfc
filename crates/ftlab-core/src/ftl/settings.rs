//! The translation layer's settings: over-provisioning (`[ftl]`), garbage collection
//! (`[gc]`) and the mapping's DRAM budget (`[dram]`). A scheme's own section is its
//! `Scheme::Section`.

pub use crate::device::blocks::VictimPolicy;
use crate::device::geometry::Layout;
use crate::device::DeviceConfig;
use crate::error::{Error, Result};
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Settings every FTL shares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FtlConfig {
    /// Fraction of the raw capacity hidden from the host (MQSim's convention:
    /// logical pages = physical pages x (1 - over_provisioning), rounded to the nearest page).
    pub over_provisioning: f64,
}

impl Default for FtlConfig {
    fn default() -> Self {
        FtlConfig {
            over_provisioning: 0.07,
        }
    }
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

/// What a scheme is built from: the device it runs on, the FTL's settings and the
/// configuration sections of the schemes, and nothing else of the run's configuration (the
/// trace, the host stack, the report are not a scheme's business). The run assembles it
/// (`run::config::Config::scheme_context`).
#[derive(Clone, Debug, Default)]
pub struct SchemeContext {
    pub device: DeviceConfig,
    pub ftl: FtlConfig,
    pub gc: GcConfig,
    pub dram: DramConfig,
    /// Whether the run models timing (false: mapping-only).
    pub timed: bool,
    /// Bytes of the controller's write buffer (0: no buffer).
    pub buffer_bytes: u64,
    /// Every scheme's section (`[NAME]`), by scheme name, checked against its defaults.
    pub sections: BTreeMap<String, toml::Table>,
    /// The host's placement hints, when the run has them: the first logical page of each
    /// of a trace's devices, side by side ([`crate::run::replay::Plan::stream_starts`]),
    /// when the application's pages reach the device as they are (the `inplace` stack).
    /// Empty: no hints.
    pub stream_starts: Vec<u64>,
}

impl SchemeContext {
    /// A scheme's own section, or an empty one.
    pub fn scheme_section(&self, scheme: &str) -> toml::Table {
        self.sections.get(scheme).cloned().unwrap_or_default()
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
