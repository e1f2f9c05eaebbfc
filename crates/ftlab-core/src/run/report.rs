//! The report of a run: what ran on what (the scheme, the source of its requests, the
//! device, the whole configuration) and what the controller measured.

use crate::controller::metrics::{Finished, Metrics, PreconditionReport};
use crate::device::geometry::Layout;
use crate::run::config::Config;
use crate::run::replay::TraceReport;
use serde::Serialize;

/// Device size as simulated.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceInfo {
    pub physical_pages: u64,
    pub logical_pages: u64,
    pub page_size: u32,
    pub physical_bytes: u64,
    pub logical_bytes: u64,
    pub parallel_units: u32,
    pub dies: u32,
    pub blocks: u32,
    /// The page-level table: logical pages x entry bytes (the reference of
    /// `dram.budget_fraction` and of the "DRAM vs page" comparisons).
    pub page_table_bytes: u64,
    /// The mapping DRAM budget of the run in bytes (`dram.budget_bytes`, or
    /// `dram.budget_fraction` of the page table); 0: unlimited.
    pub dram_budget_bytes: u64,
}

impl DeviceInfo {
    pub fn from(cfg: &Config, layout: &Layout) -> Self {
        DeviceInfo {
            physical_pages: layout.physical_pages,
            logical_pages: layout.logical_pages,
            page_size: layout.page_size,
            physical_bytes: layout.physical_pages * layout.page_size as u64,
            logical_bytes: layout.logical_bytes(),
            parallel_units: layout.units,
            dies: layout.dies,
            blocks: layout.total_blocks,
            page_table_bytes: layout.logical_pages * layout.ppa_entry_bytes(),
            dram_budget_bytes: cfg.dram.budget(layout),
        }
    }
}

/// Where the requests came from.
#[derive(Clone, Debug, Serialize)]
pub struct SourceInfo {
    /// "trace" or "workload".
    pub kind: String,
    /// Trace path as given, or workload name.
    pub name: String,
    /// Trace format ("" for workloads).
    pub format: String,
}

/// The result of one run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub ftlab_version: &'static str,
    pub ftl: String,
    pub source: SourceInfo,
    /// How a trace was read and mapped onto the device (absent for synthetic workloads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceReport>,
    /// "timed" or "mapping-only".
    pub mode: &'static str,
    pub verify: bool,
    pub device: DeviceInfo,
    pub config: Config,
    /// What was written before the run (absent when nothing was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precondition: Option<PreconditionReport>,
    pub metrics: Metrics,
}

impl Report {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }
}

impl Report {
    /// The report of scheme `ftl` fed from `source` under `cfg`, from what the simulation
    /// measured.
    pub fn new(ftl: &str, source: SourceInfo, cfg: &Config, finished: Finished) -> Report {
        Report {
            ftlab_version: env!("CARGO_PKG_VERSION"),
            ftl: ftl.to_string(),
            source,
            trace: None,
            mode: if finished.timed {
                "timed"
            } else {
                "mapping-only"
            },
            verify: finished.verified,
            device: DeviceInfo::from(cfg, &finished.layout),
            config: report_config(cfg, ftl),
            precondition: finished.precondition,
            metrics: finished.metrics,
        }
    }
}

/// The configuration a report records: every section shipped with ftlab and the run's own
/// scheme's, but not the sections of schemes users registered in this process, so that a
/// report's bytes do not depend on which plugins happen to be loaded.
fn report_config(cfg: &Config, ftl_name: &str) -> Config {
    let mut cfg = cfg.clone();
    let user: Vec<String> = crate::ftl::scheme_info()
        .into_iter()
        .filter(|s| !s.builtin && s.name != ftl_name)
        .map(|s| s.name)
        .collect();
    cfg.schemes.retain(|name, _| !user.contains(name));
    cfg
}
