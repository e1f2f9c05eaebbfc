//! The entry points the front ends call: resolve a configuration, run a scheme over a
//! trace or a synthetic workload, and measure speed for `ftlab bench`.

use crate::config::{self, Config, Layout};
use crate::error::{Error, Result};
use crate::ftl::{self, Ftl, Visitor};
use crate::metrics::{Report, SourceInfo};
use crate::nand::Flash;
use crate::request::{Request, RequestStream};
use crate::sim::Simulator;
use crate::{trace, workload};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Everything a run needs, as the command line gives it.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub ftl: String,
    pub preset: Option<String>,
    pub config_files: Vec<PathBuf>,
    pub sets: Vec<String>,
    pub verify: bool,
    /// A trace file; when absent the configuration's `[workload]` runs.
    pub trace: Option<PathBuf>,
    /// Trace format name.
    pub format: String,
    /// Time unit of the trace's timestamps ("ns", "us", "ms", "s").
    pub time_unit: String,
    /// A built-in workload applied before the configuration files and overrides.
    pub workload: Option<String>,
}

/// A finished run: the deterministic report and the wall-clock time it took.
pub struct RunOutput {
    pub report: Report,
    pub wall_seconds: f64,
}

/// The configuration a run would use.
pub fn resolve_config(opts: &RunOptions) -> Result<Config> {
    let files: Vec<&Path> = opts.config_files.iter().map(PathBuf::as_path).collect();
    let extra = match &opts.workload {
        None => None,
        Some(name) => {
            let w = workload::builtin(name).ok_or_else(|| {
                let names: Vec<&str> = workload::builtin_names().iter().map(|(n, _)| *n).collect();
                Error::Usage(format!(
                    "unknown workload `{name}`; the built-in workloads are: {}",
                    names.join(", ")
                ))
            })?;
            let table =
                toml::Table::try_from(w).map_err(|e| Error::Usage(format!("internal: {e}")))?;
            Some(toml::Table::from_iter([(
                "workload".to_string(),
                toml::Value::Table(table),
            )]))
        }
    };
    config::resolve(opts.preset.as_deref(), extra, &files, &opts.sets)
}

fn source_info(opts: &RunOptions) -> SourceInfo {
    match &opts.trace {
        Some(path) => SourceInfo {
            kind: "trace".into(),
            name: path.display().to_string(),
            format: opts.format.clone(),
        },
        None => SourceInfo {
            kind: "workload".into(),
            name: opts.workload.clone().unwrap_or_else(|| "config".into()),
            format: String::new(),
        },
    }
}

fn open_source(opts: &RunOptions, cfg: &Config, layout: &Layout) -> Result<RequestStream<'static>> {
    match &opts.trace {
        Some(path) => trace::open(path, &opts.format, &opts.time_unit),
        None => Ok(Box::new(workload::generate(
            &cfg.workload,
            layout.logical_bytes(),
            layout.page_size,
        )?)),
    }
}

struct RunVisitor<'a> {
    cfg: &'a Config,
    layout: &'a Layout,
    opts: &'a RunOptions,
    requests: RequestStream<'static>,
    progress: &'a mut dyn FnMut(u64) -> bool,
}

/// How often the progress callback is called, in requests.
const PROGRESS_EVERY: u64 = 1 << 16;

impl Visitor for RunVisitor<'_> {
    type Output = Result<Report>;
    fn visit<F: Ftl>(self, ftl: F, flash: Flash) -> Result<Report> {
        let mut sim = Simulator::new(self.cfg, self.layout, ftl, flash, self.opts.verify);
        let mut count = 0u64;
        for req in self.requests {
            sim.submit(&req?)?;
            count += 1;
            if count.is_multiple_of(PROGRESS_EVERY) && !(self.progress)(count) {
                return Err(Error::Usage("interrupted".into()));
            }
        }
        (self.progress)(count);
        sim.finish(&self.opts.ftl, source_info(self.opts), self.cfg)
    }
}

/// Runs one scheme. `progress` is called with the number of requests done every 65,536
/// requests and at the end; returning false stops the run.
pub fn run(opts: &RunOptions, progress: &mut dyn FnMut(u64) -> bool) -> Result<RunOutput> {
    let started = Instant::now();
    let cfg = resolve_config(opts)?;
    let layout = cfg.validate()?;
    let requests = open_source(opts, &cfg, &layout)?;
    let visitor = RunVisitor {
        cfg: &cfg,
        layout: &layout,
        opts,
        requests,
        progress,
    };
    let report = ftl::build(&opts.ftl, &cfg, &layout, visitor)??;
    Ok(RunOutput {
        report,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

/// Speed of one scheme on one request stream, as `ftlab bench` reports it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchResult {
    pub ftl: String,
    pub mode: &'static str,
    pub requests: u64,
    /// Seconds to read the requests into memory (not part of the rate).
    pub load_seconds: f64,
    /// Seconds to build the scheme and simulate every request.
    pub simulate_seconds: f64,
    pub requests_per_second: f64,
    /// Peak resident set of the process (VmHWM), bytes; 0 where unknown.
    pub peak_rss_bytes: u64,
    pub waf: Option<f64>,
}

struct BenchVisitor<'a> {
    cfg: &'a Config,
    layout: &'a Layout,
    requests: &'a [Request],
    verify: bool,
}

impl Visitor for BenchVisitor<'_> {
    type Output = Result<Option<f64>>;
    fn visit<F: Ftl>(self, ftl: F, flash: Flash) -> Result<Option<f64>> {
        let mut sim = Simulator::new(self.cfg, self.layout, ftl, flash, self.verify);
        for req in self.requests {
            sim.submit(req)?;
        }
        sim.drain()?;
        let written = sim.host().pages_written;
        Ok((written > 0).then(|| sim.flash().stats.total_programs() as f64 / written as f64))
    }
}

/// Loads the requests, then times the simulation alone.
pub fn bench(opts: &RunOptions) -> Result<BenchResult> {
    let cfg = resolve_config(opts)?;
    let layout = cfg.validate()?;
    let loading = Instant::now();
    let requests: Vec<Request> = open_source(opts, &cfg, &layout)?.collect::<Result<_>>()?;
    let load_seconds = loading.elapsed().as_secs_f64();
    let simulating = Instant::now();
    let visitor = BenchVisitor {
        cfg: &cfg,
        layout: &layout,
        requests: &requests,
        verify: opts.verify,
    };
    let waf = ftl::build(&opts.ftl, &cfg, &layout, visitor)??;
    let simulate_seconds = simulating.elapsed().as_secs_f64();
    Ok(BenchResult {
        ftl: opts.ftl.clone(),
        mode: if cfg.replay.timing {
            "timed"
        } else {
            "mapping-only"
        },
        requests: requests.len() as u64,
        load_seconds,
        simulate_seconds,
        requests_per_second: requests.len() as f64 / simulate_seconds.max(1e-9),
        peak_rss_bytes: peak_rss_bytes(),
        waf,
    })
}

/// Peak resident set size of this process, from /proc (Linux); 0 elsewhere.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}
