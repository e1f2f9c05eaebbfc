//! The entry points the front ends call: resolve a configuration, run a scheme over a
//! trace or a synthetic workload, describe a trace, and measure speed for `ftlab bench`.

use crate::controller::simulator::Simulator;
use crate::device::nand::Flash;
use crate::error::{Error, Result};
use crate::ftl::{self, Ftl, Visitor};
use crate::host::{self, HostStack, StackVisitor, Stacked};
use crate::io::trace::scan::{self, TraceInfo};
use crate::io::trace::{self, DeviceSize, InputProgress, TraceConfig};
use crate::io::workload;
use crate::request::{Request, RequestStream};
use crate::run::config::{self, Config, Layout};
use crate::run::replay::{Plan, Replay, ReplayState};
use crate::run::report::{Report, SourceInfo};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
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
    /// Trace format; empty keeps `trace.format` from the configuration (`auto`).
    pub format: String,
    /// Unit of the trace's timestamps; empty keeps `trace.time_unit` (`auto`).
    pub time_unit: String,
    /// A built-in workload applied before the configuration files and overrides.
    pub workload: Option<String>,
}

/// A finished run: the deterministic report and the wall-clock time it took.
pub struct RunOutput {
    pub report: Report,
    pub wall_seconds: f64,
}

/// Where a run is, for progress bars.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// `scan` (reading a trace through once to plan its replay) or `simulate`.
    pub phase: &'static str,
    /// Requests (or trace records, while scanning) done.
    pub done: u64,
    /// Share of the work done, when known.
    pub fraction: Option<f64>,
}

/// A run's scheme may be named with its host stack, `STACK+SCHEME` (`f2fs+dftl`,
/// `alfs+aftl`, `inplace+page`): the scheme and the stack, if one is named.
pub fn split_stack(name: &str) -> (Option<&str>, &str) {
    match name.split_once('+') {
        Some((stack, scheme)) => (Some(stack.trim()), scheme.trim()),
        None => (None, name),
    }
}

/// The options with a `STACK+SCHEME` name split: the scheme alone, and the stack as a
/// `host.stack` override after every other.
fn normalized(opts: &RunOptions) -> RunOptions {
    let (stack, scheme) = split_stack(&opts.ftl);
    let mut opts = opts.clone();
    if let Some(stack) = stack {
        opts.sets.push(format!(
            "host.stack={}",
            toml::Value::String(stack.to_string())
        ));
        opts.ftl = scheme.to_string();
    }
    opts
}

/// The configuration a run would use.
pub fn resolve_config(opts: &RunOptions) -> Result<Config> {
    let opts = &normalized(opts);
    resolve_config_keys(opts).map(|(cfg, _)| cfg)
}

/// The configuration and every key its layers set, `host.stack` resolved for the run's
/// scheme (`auto`: `alfs` over an append-only scheme, `inplace` otherwise).
fn resolve_config_keys(opts: &RunOptions) -> Result<(Config, Vec<String>)> {
    let (mut cfg, keys) = resolve_layers(opts)?;
    if !opts.ftl.is_empty() {
        cfg.host.stack = cfg.host.stack.resolve(&opts.ftl);
        let served = ftl::scheme_interface(&opts.ftl);
        if cfg.device.interface != served {
            return Err(Error::config(
                "device.interface",
                format!(
                    "scheme `{}` serves the {} interface, not {}: a {} device is the scheme of \
                     that name (`--ftl {}`), and block-interface schemes run with \
                     device.interface = \"block\"",
                    opts.ftl,
                    served.name(),
                    cfg.device.interface.name(),
                    cfg.device.interface.name(),
                    cfg.device.interface.name(),
                ),
            ));
        }
    }
    Ok((cfg, keys))
}

fn resolve_layers(opts: &RunOptions) -> Result<(Config, Vec<String>)> {
    let files: Vec<&Path> = opts.config_files.iter().map(PathBuf::as_path).collect();
    let mut extra = match &opts.workload {
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
    // What the scheme's design assumes of the device, over the preset, under the user's
    // files and keys.
    if let Some(text) = crate::ftl::scheme_device_defaults(&opts.ftl) {
        let layer: toml::Table = toml::from_str(&text)
            .map_err(|e| Error::Usage(format!("internal: {}'s device defaults: {e}", opts.ftl)))?;
        extra.get_or_insert_with(toml::Table::new).extend(layer);
    }
    let mut sets = opts.sets.clone();
    for (key, value) in [("format", &opts.format), ("time_unit", &opts.time_unit)] {
        if !value.is_empty() {
            sets.push(format!(
                "trace.{key}={}",
                toml::Value::String(value.clone())
            ));
        }
    }
    // No preset named: the `default` one (the built-in defaults and a write buffer).
    let preset = opts.preset.as_deref().unwrap_or("default");
    config::resolve_with_keys(Some(preset), extra, &files, &sets)
}

/// Whether the device is fitted to the trace: `trace.device_size = "fit"`, or `auto` when
/// no layer set a `geometry.*` key.
fn fit_device(cfg: &Config, keys: &[String]) -> bool {
    match cfg.trace.device_size {
        DeviceSize::Fit => true,
        DeviceSize::Config => false,
        DeviceSize::Auto => !keys.iter().any(|k| k.starts_with("geometry.")),
    }
}

fn source_info(opts: &RunOptions, format: &str) -> SourceInfo {
    match &opts.trace {
        Some(path) => SourceInfo {
            kind: "trace".into(),
            name: path.display().to_string(),
            format: format.to_string(),
        },
        None => SourceInfo {
            kind: "workload".into(),
            name: opts.workload.clone().unwrap_or_else(|| "config".into()),
            format: String::new(),
        },
    }
}

/// How often the progress callback is called, in requests.
const PROGRESS_EVERY: u64 = 1 << 16;

struct RunVisitor<'a> {
    /// Pages the source reads before writing them (preconditioning's warm-up).
    warmup: Vec<u32>,
    cfg: &'a Config,
    layout: &'a Layout,
    opts: &'a RunOptions,
    requests: RequestStream<'static>,
    /// Trace replay: stops early when the trace needs a scan first.
    replay: Option<(Arc<Mutex<ReplayState>>, InputProgress)>,
    progress: &'a mut dyn FnMut(&Progress) -> bool,
}

impl RunVisitor<'_> {
    fn fraction(&self, done: u64) -> Option<f64> {
        match &self.replay {
            Some((_, input)) => Some(input.fraction()),
            None => Some((done as f64 / self.cfg.workload.requests.max(1) as f64).min(1.0)),
        }
    }
}

impl Visitor for RunVisitor<'_> {
    /// None: the replay needs a scan first.
    type Output = Result<Option<Report>>;
    fn visit<F: Ftl>(self, ftl: F, flash: Flash) -> Result<Option<Report>> {
        let sim = Simulator::new(
            &self.cfg.controller(),
            self.layout,
            ftl,
            flash,
            self.opts.verify,
        );
        let (cfg, name, verify) = (self.cfg, self.opts.ftl.clone(), self.opts.verify);
        host::with_stack(&cfg.stack(), &name, sim, verify, self)?
    }
}

impl StackVisitor for RunVisitor<'_> {
    type Output = Result<Option<Report>>;
    fn visit<S: HostStack, F: Ftl>(mut self, mut host: Stacked<S, F>) -> Result<Option<Report>> {
        let progress = &mut *self.progress;
        host.precondition(
            &self.cfg.precondition,
            &self.warmup,
            &mut |done, fraction| {
                progress(&Progress {
                    phase: "precondition",
                    done,
                    fraction: Some(fraction.min(1.0)),
                })
            },
        )?;
        let mut count = 0u64;
        let mut requests = std::mem::replace(&mut self.requests, Box::new(std::iter::empty()));
        host.precondition_workload(&mut requests, self.cfg.precondition.workload_requests)?;
        for req in requests {
            host.submit(&req?)?;
            count += 1;
            if count.is_multiple_of(PROGRESS_EVERY) {
                let p = Progress {
                    phase: "simulate",
                    done: count,
                    fraction: self.fraction(count),
                };
                if !(self.progress)(&p) {
                    return Err(Error::Usage("interrupted".into()));
                }
            }
        }
        let mut trace_report = None;
        if let Some((state, _)) = &self.replay {
            let state = state
                .lock()
                .map_err(|_| Error::Usage("internal: replay state".into()))?;
            if state.needs_scan {
                return Ok(None);
            }
            trace_report = Some(state.report.clone());
        }
        (self.progress)(&Progress {
            phase: "simulate",
            done: count,
            fraction: Some(1.0),
        });
        let format = trace_report.as_ref().map_or("", |r| r.format.as_str());
        let source = source_info(self.opts, format);
        let mut report = Report::new(&self.opts.ftl, source, self.cfg, host.finish()?);
        report.trace = trace_report;
        Ok(Some(report))
    }
}

/// Runs one scheme. `progress` is called with the number of requests done every 65,536
/// requests and at the end; returning false stops the run.
pub fn run(opts: &RunOptions, progress: &mut dyn FnMut(u64) -> bool) -> Result<RunOutput> {
    run_with_progress(opts, &mut |p: &Progress| {
        p.phase != "simulate" || progress(p.done)
    })
}

/// Scans the trace and plans its replay (fitting the device to it if `fit`).
fn scan_plan(
    path: &Path,
    cfg: &mut Config,
    fit: bool,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<Plan> {
    let page_size = cfg.geometry.page_size;
    let scan = scan::scan(path, &cfg.trace, page_size, &mut |done, fraction| {
        progress(&Progress {
            phase: "scan",
            done,
            fraction: Some(fraction),
        })
    })?;
    Plan::from_scan(&scan, cfg, fit)
}

/// Runs one scheme, reporting progress (scan and simulation phases) to `progress`;
/// returning false stops the run.
pub fn run_with_progress(
    opts: &RunOptions,
    progress: &mut dyn FnMut(&Progress) -> bool,
) -> Result<RunOutput> {
    let opts = &normalized(opts);
    let started = Instant::now();
    let (mut cfg, keys) = resolve_config_keys(opts)?;
    let report = match &opts.trace {
        None => {
            let layout = cfg.validate()?;
            let app_pages = host::app_pages(&cfg.stack(), &layout)?;
            let generate = || {
                workload::generate(
                    &cfg.workload,
                    app_pages * layout.page_size as u64,
                    layout.page_size,
                )
            };
            let requests = Box::new(generate()?);
            // The warm-up needs a pass of its own over the workload, before the replay.
            let warmup = if wants_warmup(&cfg) {
                read_before_written_in(generate()?, app_pages, layout.page_size)?
            } else {
                Vec::new()
            };
            let visitor = RunVisitor {
                warmup,
                cfg: &cfg,
                layout: &layout,
                opts,
                requests,
                replay: None,
                progress,
            };
            ftl::build(&opts.ftl, &cfg.scheme_context(), &layout, visitor)??
                .ok_or_else(|| Error::Usage("internal: workload asked for a scan".into()))?
        }
        Some(path) => {
            let fit = fit_device(&cfg, &keys);
            let mut plan = if Plan::needs_scan(&cfg.trace, fit) {
                scan_plan(path, &mut cfg, fit, progress)?
            } else {
                Plan::optimistic(&cfg.trace)
            };
            // A scheme may need more spare space than the geometry rules ask for (map
            // on flash: translation blocks); a device fitted to the trace grows until
            // the scheme accepts it.
            let mut grown = 0;
            loop {
                let layout = cfg.validate()?;
                let app_pages = host::app_pages(&cfg.stack(), &layout)?;
                let open = || {
                    Replay::open(
                        path,
                        &cfg.trace,
                        plan.clone(),
                        layout.page_size as u64,
                        app_pages,
                    )
                };
                let replay = open()?;
                // The warm-up needs a pass of its own over the trace, before the replay.
                let warmup = if wants_warmup(&cfg) {
                    read_before_written_in(open()?, app_pages, layout.page_size)?
                } else {
                    Vec::new()
                };
                let visitor = RunVisitor {
                    warmup,
                    cfg: &cfg,
                    layout: &layout,
                    opts,
                    replay: Some((replay.state(), replay.progress())),
                    requests: replay.into_stream(),
                    progress: &mut *progress,
                };
                let mut ctx = cfg.scheme_context();
                // Hints are addresses of the application's pages: only where they reach
                // the device as they are.
                if app_pages == layout.logical_pages
                    && cfg.host.stack.resolve(&opts.ftl) == host::StackKind::Inplace
                {
                    ctx.stream_starts = plan.stream_starts();
                }
                match ftl::build(&opts.ftl, &ctx, &layout, visitor) {
                    Err(e) if plan.is_fitted() && needs_more_spare(&e) && grown < MAX_GROWTH => {
                        grown += 1;
                        grow(&mut cfg);
                    }
                    Err(e) => return Err(e),
                    Ok(output) => match output? {
                        Some(report) => break report,
                        None => plan = scan_plan(path, &mut cfg, false, progress)?,
                    },
                }
            }
        }
    };
    Ok(RunOutput {
        report,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

/// Whether the run needs the list of pages read before written: only a device that is not
/// filled by preconditioning is warmed up page by page.
fn wants_warmup(cfg: &Config) -> bool {
    cfg.precondition.warmup && cfg.precondition.mode == crate::run::config::PreconditionMode::None
}

/// The logical pages `requests` read before they write them, in address order: the
/// pages preconditioning's warm-up writes first (as the LeaFTL artifact does), so that no
/// scheme is charged or favoured for reads of data the trace never wrote. Requests beyond
/// the device are left to the run to report.
pub fn read_before_written(
    requests: impl Iterator<Item = Result<Request>>,
    layout: &Layout,
) -> Result<Vec<u32>> {
    read_before_written_in(requests, layout.logical_pages, layout.page_size)
}

/// [`read_before_written`] over the first `pages` logical pages of `page_size` bytes (the
/// application's capacity under a host file system).
pub fn read_before_written_in(
    requests: impl Iterator<Item = Result<Request>>,
    pages: u64,
    page_size: u32,
) -> Result<Vec<u32>> {
    let words = pages.div_ceil(64) as usize;
    let (mut written, mut warm) = (vec![0u64; words], vec![0u64; words]);
    let page = page_size as u64;
    for req in requests {
        let req = req?;
        let first = req.offset_bytes / page;
        let last = req
            .offset_bytes
            .saturating_add(req.len_bytes as u64)
            .div_ceil(page)
            .min(pages);
        for p in first..last {
            let (w, bit) = ((p >> 6) as usize, 1u64 << (p & 63));
            match req.op {
                crate::Op::Read if written[w] & bit == 0 => warm[w] |= bit,
                crate::Op::Write => written[w] |= bit,
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for (w, &bits) in warm.iter().enumerate() {
        let mut b = bits;
        while b != 0 {
            out.push((w as u64 * 64 + b.trailing_zeros() as u64) as u32);
            b &= b - 1;
        }
    }
    Ok(out)
}

/// Times a fitted device may grow for a scheme that needs more spare space.
const MAX_GROWTH: u32 = 64;

/// The error of a scheme that needs more spare space than the device has.
fn needs_more_spare(e: &Error) -> bool {
    matches!(e, Error::Config { key, .. } if key == "ftl.over_provisioning")
}

fn grow(cfg: &mut Config) {
    let bpp = cfg.geometry.blocks_per_plane;
    cfg.geometry.blocks_per_plane = bpp.saturating_add((bpp / 16).max(1));
}

struct Nothing;

impl Visitor for Nothing {
    type Output = ();
    fn visit<F: Ftl>(self, _: F, _: Flash) {}
}

/// For comparing schemes on one device: when a run of `opts` would fit the device to its
/// trace, the `geometry.blocks_per_plane` that fits the trace and that every scheme of
/// `schemes` accepts (some need more spare space); None when the device is not fitted.
pub fn fitted_blocks_per_plane(opts: &RunOptions, schemes: &[String]) -> Result<Option<u32>> {
    let (mut cfg, keys) = resolve_config_keys(opts)?;
    let Some(path) = &opts.trace else {
        return Ok(None);
    };
    if !fit_device(&cfg, &keys) {
        return Ok(None);
    }
    let footprint = scan_plan(path, &mut cfg, true, &mut |_| true)?
        .footprint()
        .unwrap_or(0);
    let asked = cfg.host.stack;
    for name in schemes {
        // Each scheme under its own stack: its file system must hold the trace too.
        let (stack, scheme) = split_stack(name);
        cfg.host.stack = match stack {
            Some(_) => {
                let one = normalized(&RunOptions {
                    ftl: name.clone(),
                    ..opts.clone()
                });
                resolve_config(&one)?.host.stack.resolve(scheme)
            }
            None => asked.resolve(scheme),
        };
        let (mut grown, mut grown_for_app) = (0, 0);
        loop {
            let layout = cfg.validate()?;
            if !host::app_pages(&cfg.stack(), &layout).is_ok_and(|app| app >= footprint)
                && grown_for_app < 4096
            {
                grown_for_app += 1;
                cfg.geometry.blocks_per_plane += 1;
                continue;
            }
            match ftl::build(scheme, &cfg.scheme_context(), &layout, Nothing) {
                Err(e) if needs_more_spare(&e) && grown < MAX_GROWTH => {
                    grown += 1;
                    grow(&mut cfg);
                }
                Err(e) => return Err(e),
                Ok(()) => break,
            }
        }
    }
    Ok(Some(cfg.geometry.blocks_per_plane))
}

/// The requests a run would simulate, in memory, and the configuration they are for
/// (its device fitted to the trace if the run would fit it).
pub fn load_requests(opts: &RunOptions) -> Result<(Vec<Request>, Config)> {
    let opts = &normalized(opts);
    let (mut cfg, keys) = resolve_config_keys(opts)?;
    let Some(path) = &opts.trace else {
        let layout = cfg.validate()?;
        let app_bytes = host::app_pages(&cfg.stack(), &layout)? * layout.page_size as u64;
        let requests = workload::generate(&cfg.workload, app_bytes, layout.page_size)?
            .collect::<Result<Vec<_>>>()?;
        return Ok((requests, cfg));
    };
    let fit = fit_device(&cfg, &keys);
    let mut ignore = |_: &Progress| true;
    let mut plan = if Plan::needs_scan(&cfg.trace, fit) {
        scan_plan(path, &mut cfg, fit, &mut ignore)?
    } else {
        Plan::optimistic(&cfg.trace)
    };
    loop {
        let layout = cfg.validate()?;
        let replay = Replay::open(
            path,
            &cfg.trace,
            plan,
            layout.page_size as u64,
            host::app_pages(&cfg.stack(), &layout)?,
        )?;
        let state = replay.state();
        let requests: Vec<Request> = replay.collect::<Result<_>>()?;
        let needs_scan = state.lock().map(|s| s.needs_scan).unwrap_or(false);
        if !needs_scan {
            return Ok((requests, cfg));
        }
        plan = scan_plan(path, &mut cfg, false, &mut ignore)?;
    }
}

/// Describes a trace (`ftlab trace info`): counts, sizes, footprint in pages of
/// `page_size` bytes, address and time spans, devices. `progress(records, fraction)` is
/// called every 65,536 records; returning false stops.
pub fn trace_info(
    path: &Path,
    cfg: &TraceConfig,
    page_size: u64,
    progress: &mut dyn FnMut(u64, f64) -> bool,
) -> Result<TraceInfo> {
    scan::scan(path, cfg, page_size, progress).map(|s| s.info)
}

/// What `ftlab trace convert` wrote.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Converted {
    pub input: String,
    pub output: String,
    /// The input's format.
    pub format: String,
    pub records: u64,
    pub input_bytes: u64,
    pub output_bytes: u64,
}

/// Converts a trace (any format, read as `cfg` says) to ftlab's binary form at `output`
/// (written beside it under a temporary name, then renamed: a failed conversion leaves no
/// half-written trace). `progress(records, fraction of the input)` is called every
/// 65,536 records; returning false stops.
pub fn convert_trace(
    input: &Path,
    cfg: &TraceConfig,
    output: &Path,
    progress: &mut dyn FnMut(u64, f64) -> bool,
) -> Result<Converted> {
    let opened = trace::open_trace(input, cfg)?;
    let mut source = opened.source;
    let io = |e: std::io::Error| Error::Io {
        file: output.to_path_buf(),
        message: format!("cannot write the converted trace: {e}"),
    };
    let mut partial = output.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let file = std::fs::File::create(&partial).map_err(io)?;
    let written = trace::binary::write(
        source.as_mut(),
        std::io::BufWriter::with_capacity(1 << 20, file),
        output,
        &mut |records| progress(records, opened.progress.fraction()),
    );
    let records = match written {
        Ok(n) => n,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, output).map_err(io)?;
    let output_bytes = std::fs::metadata(output).map_err(io)?.len();
    Ok(Converted {
        input: input.display().to_string(),
        output: output.display().to_string(),
        format: source.format().to_string(),
        records,
        input_bytes: opened.progress.total,
        output_bytes,
    })
}

/// Memory of a run's scheme and host stack, without running it.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct MemoryFootprint {
    /// The scheme's DRAM on a fresh device, by component (what its report's
    /// `memory_bytes` starts from).
    pub device: Vec<(String, u64)>,
    /// The host stack's memory by component (empty for `inplace`).
    pub host: Vec<(String, u64)>,
    pub logical_pages: u64,
    /// Pages the application can address.
    pub app_pages: u64,
}

struct MemoryOf;

impl Visitor for MemoryOf {
    type Output = Vec<(String, u64)>;
    fn visit<F: Ftl>(self, ftl: F, _: Flash) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        ftl.memory(&mut out);
        out.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

/// The DRAM a run's scheme holds on a fresh device and the host memory of its stack, by
/// their own accounting (the scheme is built, untimed; nothing is simulated): for memory
/// tables at sizes too large to run.
pub fn memory(opts: &RunOptions) -> Result<MemoryFootprint> {
    let opts = &normalized(opts);
    let (mut cfg, _) = resolve_config_keys(opts)?;
    cfg.replay.timing = false;
    let layout = cfg.validate()?;
    let device = ftl::build(&opts.ftl, &cfg.scheme_context(), &layout, MemoryOf)?;
    let mut host = Vec::new();
    match cfg.host.stack {
        host::StackKind::F2fs | host::StackKind::Alfs => {
            host::lfs::FsLayout::new(&cfg.stack(), &layout, cfg.host.stack)?.memory(&mut host)
        }
        _ => {}
    }
    Ok(MemoryFootprint {
        device,
        host: host.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        logical_pages: layout.logical_pages,
        app_pages: host::app_pages(&cfg.stack(), &layout)?,
    })
}

/// How fast a trace is read (parsed into records, nothing else).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReadSpeed {
    pub file: String,
    pub format: String,
    pub compression: String,
    pub bytes: u64,
    pub lines: u64,
    pub records: u64,
    pub seconds: f64,
    pub lines_per_second: f64,
    pub bytes_per_second: f64,
}

/// Reads a whole trace and times it (for `ftlab bench`).
pub fn read_speed(path: &Path, cfg: &TraceConfig) -> Result<ReadSpeed> {
    let started = Instant::now();
    let opened = trace::open_trace(path, cfg)?;
    let mut source = opened.source;
    let mut records = 0u64;
    let mut sum = 0u64;
    while let Some(rec) = source.next_record()? {
        records += 1;
        sum = sum.wrapping_add(rec.offset_bytes ^ rec.time_ns);
    }
    std::hint::black_box(sum);
    let seconds = started.elapsed().as_secs_f64().max(1e-9);
    let lines = source.diagnostics().lines;
    let bytes = opened.progress.total;
    Ok(ReadSpeed {
        file: path.display().to_string(),
        format: source.format().to_string(),
        compression: opened.compression.to_string(),
        bytes,
        lines,
        records,
        seconds,
        lines_per_second: lines as f64 / seconds,
        bytes_per_second: bytes as f64 / seconds,
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
    ftl: &'a str,
    cfg: &'a Config,
    layout: &'a Layout,
    requests: &'a [Request],
    verify: bool,
}

impl Visitor for BenchVisitor<'_> {
    type Output = Result<Option<f64>>;
    fn visit<F: Ftl>(self, ftl: F, flash: Flash) -> Result<Option<f64>> {
        let sim = Simulator::new(&self.cfg.controller(), self.layout, ftl, flash, self.verify);
        let (cfg, name, verify) = (self.cfg, self.ftl, self.verify);
        host::with_stack(&cfg.stack(), name, sim, verify, self)?
    }
}

impl StackVisitor for BenchVisitor<'_> {
    type Output = Result<Option<f64>>;
    fn visit<S: HostStack, F: Ftl>(self, mut host: Stacked<S, F>) -> Result<Option<f64>> {
        for req in self.requests {
            host.submit(req)?;
        }
        let sim = &mut host.sim;
        sim.drain()?;
        // The whole stack's write amplification: flash programs per application page.
        let written = sim.host().pages_written - sim.host().stack_pages_written;
        Ok((written > 0).then(|| sim.flash().stats.total_programs() as f64 / written as f64))
    }
}

/// Loads the requests, then times the simulation alone.
pub fn bench(opts: &RunOptions) -> Result<BenchResult> {
    let opts = &normalized(opts);
    let loading = Instant::now();
    let (requests, cfg) = load_requests(opts)?;
    let layout = cfg.validate()?;
    let load_seconds = loading.elapsed().as_secs_f64();
    let simulating = Instant::now();
    let visitor = BenchVisitor {
        ftl: &opts.ftl,
        cfg: &cfg,
        layout: &layout,
        requests: &requests,
        verify: opts.verify,
    };
    let waf = ftl::build(&opts.ftl, &cfg.scheme_context(), &layout, visitor)??;
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
