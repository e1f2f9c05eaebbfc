//! From trace records to the simulator's requests: the host-side layer between a trace
//! reader and the simulated device.
//!
//! - **Device filter** (`trace.devices`): only the named devices are kept.
//! - **Device layout** (`trace.device_layout`): with `separate` (the default) each kept
//!   device gets its own address range, one after the other in order of first
//!   appearance; with `merged` all share one address space, as MQSim and SSDSim do.
//! - **Address compaction** (`trace.compact`): the pages the trace touches are numbered
//!   densely in address order (device by device), so that a trace of a 4 TiB volume fits
//!   a small simulated device. Address order keeps sequential runs sequential and the
//!   pages of one request consecutive. `auto` compacts only when the addresses do not fit.
//! - **Device sizing** (`trace.device_size`): the device's `blocks_per_plane` is chosen so
//!   that its logical capacity holds the trace's footprint; over-provisioning comes on top.
//! - **Time**: timestamps are taken relative to the first request replayed. Out-of-order
//!   timestamps are sorted within a window of requests (`trace.order = "sort"`), or raised
//!   to the previous one (`clamp`); a request later than the whole window is clamped too.
//!   Idle gaps longer than `trace.max_gap_ns` are shortened to it.
//!
//! A replay that needs to know the trace in advance (sizing, compaction, several devices
//! laid out separately) gets a [`Plan`] from a [`scan`](crate::io::trace::scan). Otherwise the
//! trace is streamed at once with an optimistic plan; if it turns out to need one (a
//! second device, an address beyond the device), the replay stops and asks for a scan,
//! and the caller starts again. Both paths give identical results.

use crate::error::{Error, Result};
use crate::io::trace::scan::{DeviceFilter, Scan, DEVICE_SHIFT, MAX_PAGES};
use crate::io::trace::{
    open_trace, Compact, DeviceLayout, Diagnostics, Extents, InputProgress, Order, RecordSource,
    TraceConfig,
};
use crate::request::{Request, RequestStream};
use crate::run::config::Config;
use serde::Serialize;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// How the trace was read and mapped, as the run report states it.
#[derive(Clone, Debug, Serialize)]
pub struct TraceReport {
    pub format: String,
    pub compression: String,
    /// Devices replayed, in order of first appearance (their address ranges follow this
    /// order with the `separate` layout).
    pub devices: Vec<String>,
    pub devices_in_trace: u64,
    pub device_layout: DeviceLayout,
    /// Whether addresses were compacted.
    pub compacted: bool,
    /// Whether the device's capacity was fitted to the trace.
    pub device_sized_to_trace: bool,
    /// Distinct pages the trace touches (known when it was scanned first).
    pub footprint_pages: Option<u64>,
    pub requests: u64,
    /// Requests moved by the sort window.
    pub reordered: u64,
    /// Requests whose timestamp was raised to the previous one.
    pub clamped: u64,
    /// Idle gaps shortened to `trace.max_gap_ns`.
    pub gaps_shortened: u64,
    pub diagnostics: Diagnostics,
}

/// How replay maps addresses.
#[derive(Clone, Debug)]
pub struct Plan {
    layout: DeviceLayout,
    /// Compaction table over page keys (device index above `DEVICE_SHIFT` with
    /// `separate`, pages alone with `merged`).
    compaction: Option<Extents>,
    /// `separate` without compaction: first page of each kept device.
    bases: Vec<u64>,
    /// Made without a scan.
    optimistic: bool,
    sized_to_trace: bool,
    footprint: Option<u64>,
}

impl Plan {
    /// A plan made without knowing the trace: addresses as they are, one device at 0.
    /// Replay asks for a scan if the trace needs more.
    pub fn optimistic(cfg: &TraceConfig) -> Plan {
        Plan {
            layout: cfg.device_layout,
            compaction: None,
            bases: vec![0],
            optimistic: true,
            sized_to_trace: false,
            footprint: None,
        }
    }

    /// Whether a plan can only come from a scan: the device is to be fitted to the
    /// trace, or addresses always compacted.
    pub fn needs_scan(cfg: &TraceConfig, fit_device: bool) -> bool {
        fit_device || cfg.compact == Compact::Always
    }

    /// The plan for a scanned trace; fits the device to it first if `fit_device`.
    pub fn from_scan(scan: &Scan, cfg: &mut Config, fit_device: bool) -> Result<Plan> {
        let footprint = scan.extents.total();
        if fit_device {
            fit_to(cfg, footprint)?;
        }
        // The application's capacity: the device's, less what a host file system keeps.
        let logical = crate::host::app_pages(&cfg.stack(), &cfg.validate()?)?;
        let span = scan.info.span_pages;
        let compact = match cfg.trace.compact {
            Compact::Always => true,
            Compact::Never => false,
            Compact::Auto => span > logical,
        };
        let mut plan = Plan {
            layout: cfg.trace.device_layout,
            compaction: None,
            bases: Vec::new(),
            optimistic: false,
            sized_to_trace: fit_device,
            footprint: Some(footprint),
        };
        if compact {
            if footprint > logical {
                return Err(Error::config(
                    "trace.compact",
                    format!(
                        "the trace touches {footprint} distinct pages, more than the device's \
                         {logical} logical pages: use a larger device, trace.device_size = \"fit\", \
                         or keep fewer devices (trace.devices)"
                    ),
                ));
            }
            plan.compaction = Some(scan.extents.clone());
        } else {
            if span > logical {
                return Err(Error::config(
                    "trace.compact",
                    format!(
                        "the trace's addresses span {span} pages, more than the device's {logical} \
                         logical pages: use address compaction (trace.compact = \"auto\") or a \
                         larger device"
                    ),
                ));
            }
            let mut next = 0;
            for &end in &scan.device_end_pages {
                plan.bases.push(next);
                next += end;
            }
        }
        Ok(plan)
    }

    /// First logical page of each of the trace's devices (volumes, LUNs, disks) in the
    /// replay's address space, in device order, when they lie side by side
    /// (`trace.device_layout = "separate"`, more than one device): the only per-record
    /// identifier the trace readers keep, read back from a page's address by the schemes
    /// that place data by the host's hints (`fdp.placement = "hint"`). Empty otherwise.
    pub fn stream_starts(&self) -> Vec<u64> {
        if self.layout != DeviceLayout::Separate || self.optimistic {
            return Vec::new();
        }
        let starts = match &self.compaction {
            Some(table) => {
                let devices = table.last_key().map_or(0, |k| (k >> DEVICE_SHIFT) + 1);
                (0..devices)
                    .map(|k| table.count_below(k << DEVICE_SHIFT))
                    .collect()
            }
            None => self.bases.clone(),
        };
        if starts.len() > 1 {
            starts
        } else {
            Vec::new()
        }
    }

    pub fn is_optimistic(&self) -> bool {
        self.optimistic
    }

    /// Distinct pages the trace touches (when the plan comes from a scan).
    pub fn footprint(&self) -> Option<u64> {
        self.footprint
    }

    /// Whether the device was fitted to the trace.
    pub fn is_fitted(&self) -> bool {
        self.sized_to_trace
    }
}

/// Spare blocks (over-provisioning) a fitted device has at least per parallel unit. GC holds
/// a few free (the reserve, the hard and soft thresholds, the open blocks); invalid pages
/// gather in the rest. A device fitted to a short trace with only the three spare blocks
/// the geometry's rules ask for has greedy GC choose nearly full victims: at steady state
/// its write amplification reached 31 where a full-size device of the same
/// over-provisioning has 8-9.
pub const FITTED_SPARE_BLOCKS: f64 = 16.0;

/// Sets `geometry.blocks_per_plane` to the smallest value whose logical capacity holds
/// `pages` pages with at least [`FITTED_SPARE_BLOCKS`] spare blocks per parallel unit (and
/// that the geometry's rules accept: three spare blocks per parallel unit, a write buffer
/// smaller than the device). Under a host file system (`host.stack`), the capacity is
/// what the file system gives the application.
pub fn fit_to(cfg: &mut Config, pages: u64) -> Result<()> {
    let page_size = cfg.geometry.page_size;
    let g = &cfg.geometry;
    let units = g.channels as u64
        * g.chips_per_channel as u64
        * g.dies_per_chip as u64
        * g.planes_per_die as u64;
    let per_block_row = units * g.pages_per_block as u64;
    if per_block_row == 0 {
        return cfg.validate().map(|_| ());
    }
    let keep = 1.0 - cfg.ftl.over_provisioning;
    let wanted = pages.max(1) as f64 / keep.max(1e-9);
    let mut bpp = ((wanted / per_block_row as f64).ceil() as u64).max(3);
    let op = cfg.ftl.over_provisioning;
    if op > 0.0 {
        bpp = bpp.max((FITTED_SPARE_BLOCKS / op).ceil() as u64);
    }
    // Spare blocks and the buffer may need a little more than the footprint.
    for _ in 0..4096 {
        if bpp > u32::MAX as u64 {
            break;
        }
        cfg.geometry.blocks_per_plane = bpp as u32;
        match cfg.validate() {
            Ok(layout) => match crate::host::app_pages(&cfg.stack(), &layout) {
                Ok(app) if app >= pages => return Ok(()),
                // A stack the device's interface cannot hold (f2fs on zones without enough
                // conventional zones for its metadata): a larger device does not help.
                Err(Error::Config { key, message })
                    if key == "host.stack" || key == "zns.conventional_zones" =>
                {
                    return Err(Error::Config { key, message })
                }
                _ => bpp += 1,
            },
            Err(Error::Config { key, .. })
                if key == "ftl.over_provisioning" || key == "buffer.size_bytes" =>
            {
                bpp += (bpp / 64).max(1)
            }
            Err(e) => return Err(e),
        }
    }
    cfg.validate().and_then(|_| {
        Err(Error::config(
            "trace.device_size",
            format!(
                "no device of this geometry holds the trace's {pages} pages of {page_size} bytes"
            ),
        ))
    })
}

/// What a replay learned, shared with whoever runs it.
#[derive(Debug)]
pub struct ReplayState {
    /// The replay stopped early: the trace needs a plan from a scan.
    pub needs_scan: bool,
    pub report: TraceReport,
}

/// The requests of a trace, mapped onto a device by a [`Plan`].
pub struct Replay {
    source: Box<dyn RecordSource>,
    plan: Plan,
    filter: DeviceFilter,
    page: u64,
    logical_pages: u64,
    window: VecDeque<Request>,
    window_cap: usize,
    sort: bool,
    max_gap: u64,
    started: bool,
    origin: u64,
    last_raw: u64,
    shift: u64,
    exhausted: bool,
    done: bool,
    report: TraceReport,
    state: Arc<Mutex<ReplayState>>,
    progress: InputProgress,
}

impl Replay {
    /// Opens the trace for replay onto a device of `logical_pages` pages of `page_size`.
    pub fn open(
        path: &Path,
        cfg: &TraceConfig,
        plan: Plan,
        page_size: u64,
        logical_pages: u64,
    ) -> Result<Replay> {
        let opened = open_trace(path, cfg)?;
        let report = TraceReport {
            format: opened.source.format().to_string(),
            compression: opened.compression.to_string(),
            devices: Vec::new(),
            devices_in_trace: 0,
            device_layout: cfg.device_layout,
            compacted: plan.compaction.is_some(),
            device_sized_to_trace: plan.sized_to_trace,
            footprint_pages: plan.footprint,
            requests: 0,
            reordered: 0,
            clamped: 0,
            gaps_shortened: 0,
            diagnostics: Diagnostics::default(),
        };
        let sort = cfg.order == Order::Sort;
        Ok(Replay {
            source: opened.source,
            plan,
            filter: DeviceFilter::new(&cfg.devices),
            page: page_size,
            logical_pages,
            window: VecDeque::new(),
            window_cap: if sort { cfg.sort_window as usize } else { 0 },
            sort,
            max_gap: cfg.max_gap_ns,
            started: false,
            origin: 0,
            last_raw: 0,
            shift: 0,
            exhausted: false,
            done: false,
            state: Arc::new(Mutex::new(ReplayState {
                needs_scan: false,
                report: report.clone(),
            })),
            report,
            progress: opened.progress,
        })
    }

    /// Shared view of the outcome, complete once the stream has ended.
    pub fn state(&self) -> Arc<Mutex<ReplayState>> {
        self.state.clone()
    }

    pub fn progress(&self) -> InputProgress {
        self.progress.clone()
    }

    pub fn into_stream(self) -> RequestStream<'static> {
        Box::new(self)
    }

    fn publish(&mut self, needs_scan: bool) {
        self.done = true;
        self.report.devices = self.filter.names.clone();
        self.report.devices_in_trace = self.source.devices().len() as u64;
        self.report.diagnostics = self.source.diagnostics().clone();
        if let Ok(mut s) = self.state.lock() {
            s.needs_scan = needs_scan;
            s.report = self.report.clone();
        }
    }

    fn at(&self, message: String) -> Error {
        Error::Trace {
            file: self.source.file().to_path_buf(),
            line: self.source.line(),
            message,
        }
    }

    #[cold]
    fn no_requests(&self) -> Error {
        let d = &self.report.diagnostics;
        let mut message = format!(
            "no request to replay: {} line(s) or record(s) read as {}",
            d.lines, self.report.format
        );
        if d.lines_without_request > 0 {
            message += &format!(", {} without a request", d.lines_without_request);
        }
        if d.bad_lines > 0 {
            message += &format!(
                ", {} bad and skipped (first: {})",
                d.bad_lines,
                d.bad_line_examples.first().map_or("", String::as_str)
            );
        }
        Error::Io {
            file: self.source.file().to_path_buf(),
            message,
        }
    }

    /// Maps a record of kept device `k` onto the device; None when the optimistic plan
    /// does not fit the trace.
    fn map(&mut self, rec: &crate::io::trace::Record, k: u32) -> Result<Option<Request>> {
        let len = rec.len_bytes;
        if len == 0 {
            // Touches no page: its position does not matter.
            return Ok(Some(Request {
                time_ns: rec.time_ns,
                offset_bytes: 0,
                len_bytes: 0,
                op: rec.op,
            }));
        }
        let first = rec.offset_bytes / self.page;
        let pages = (rec.offset_bytes + len).div_ceil(self.page) - first;
        if first + pages > MAX_PAGES {
            return Err(self.at(format!(
                "offset {} is beyond the 2^40 pages a device may have",
                rec.offset_bytes
            )));
        }
        let device_key = match self.plan.layout {
            DeviceLayout::Separate => (k as u64) << DEVICE_SHIFT,
            DeviceLayout::Merged => 0,
        };
        let new_first =
            if let Some(table) = self.plan.compaction.as_mut() {
                match table.rank(device_key | first) {
                    Some(p) => p,
                    None => return Err(self.at(
                        "page missing from the compaction table: did the trace change since it \
                         was scanned?"
                            .into(),
                    )),
                }
            } else {
                match self.plan.layout {
                    DeviceLayout::Merged => first,
                    DeviceLayout::Separate => match self.plan.bases.get(k as usize) {
                        Some(base) => base + first,
                        None if self.plan.optimistic => return Ok(None),
                        None => return Err(self.at("device missing from the replay plan".into())),
                    },
                }
            };
        if new_first + pages > self.logical_pages {
            if self.plan.optimistic {
                return Ok(None);
            }
            return Err(self.at(format!(
                "offset {} (page {}) is beyond the device's {} logical pages",
                rec.offset_bytes,
                new_first + pages - 1,
                self.logical_pages
            )));
        }
        Ok(Some(Request {
            time_ns: rec.time_ns,
            offset_bytes: new_first * self.page + rec.offset_bytes % self.page,
            len_bytes: len as u32,
            op: rec.op,
        }))
    }

    fn push(&mut self, req: Request) {
        match self.window.back() {
            Some(last) if self.sort && req.time_ns < last.time_ns => {
                let at = self.window.partition_point(|r| r.time_ns <= req.time_ns);
                self.window.insert(at, req);
                self.report.reordered += 1;
            }
            _ => self.window.push_back(req),
        }
    }

    /// Timestamps relative to the first request, clamped, gaps shortened.
    fn retime(&mut self, mut req: Request) -> Request {
        let mut t = req.time_ns;
        if !self.started {
            self.started = true;
            self.origin = t;
            self.last_raw = t;
        }
        if t < self.last_raw {
            t = self.last_raw;
            self.report.clamped += 1;
        }
        if self.max_gap > 0 && t - self.last_raw > self.max_gap {
            self.shift += t - self.last_raw - self.max_gap;
            self.report.gaps_shortened += 1;
        }
        self.last_raw = t;
        req.time_ns = t - self.origin - self.shift;
        self.report.requests += 1;
        req
    }
}

impl Iterator for Replay {
    type Item = Result<Request>;

    fn next(&mut self) -> Option<Result<Request>> {
        loop {
            if self.done {
                return None;
            }
            if self.window.len() > self.window_cap || (self.exhausted && !self.window.is_empty()) {
                let req = self.window.pop_front()?;
                return Some(Ok(self.retime(req)));
            }
            if self.exhausted {
                self.publish(false);
                if self.report.requests == 0 {
                    // A run of nothing reports nothing: most likely the wrong --format, a
                    // trace of headers alone, or every line skipped as bad.
                    return Some(Err(self.no_requests()));
                }
                return None;
            }
            let rec = match self.source.next_record() {
                Ok(Some(rec)) => rec,
                Ok(None) => {
                    self.exhausted = true;
                    let checked = self.filter.check(self.source.file(), self.source.devices());
                    if let Err(e) = checked {
                        self.publish(false);
                        return Some(Err(e));
                    }
                    continue;
                }
                Err(e) => {
                    self.publish(false);
                    return Some(Err(e));
                }
            };
            let Some(k) = self.filter.kept(rec.dev, self.source.devices()) else {
                continue;
            };
            match self.map(&rec, k) {
                Ok(Some(req)) => self.push(req),
                Ok(None) => {
                    self.publish(true);
                    return None;
                }
                Err(e) => {
                    self.publish(false);
                    return Some(Err(e));
                }
            }
        }
    }
}
