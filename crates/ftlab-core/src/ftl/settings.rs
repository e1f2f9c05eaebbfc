//! The translation layer's settings: over-provisioning (`[ftl]`), garbage collection
//! (`[gc]`) and the mapping's DRAM budget (`[dram]`). A scheme's own section is its
//! `Scheme::Section`.

use crate::device::geometry::Layout;
use crate::units;
use serde::{Deserialize, Serialize};

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
