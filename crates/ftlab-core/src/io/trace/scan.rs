//! One pass over a trace that measures it: `ftlab trace info`, and what replay needs to
//! know in advance to size the device and compact addresses (the footprint, the extents
//! it touches, each device's extent).

use super::{
    open_trace, DeviceLayout, Devices, Diagnostics, ExtentSet, Extents, Record, RecordSource,
    TraceConfig,
};
use crate::error::{Error, Result};
use crate::request::Op;
use serde::Serialize;
use std::path::Path;

/// Page keys carry the device (kept-device index) above this bit.
pub const DEVICE_SHIFT: u32 = 40;
/// Pages of one device must stay below this.
pub const MAX_PAGES: u64 = (1 << DEVICE_SHIFT) - 1;

/// Request sizes are counted in power-of-two buckets up to this many bytes, then "larger".
const SIZE_BUCKETS: usize = 16; // 512 B .. 16 MiB

/// Kept devices: the devices `trace.devices` selects, numbered densely in order of first
/// appearance.
pub(crate) struct DeviceFilter {
    wanted: Vec<String>,
    found: Vec<bool>,
    /// Per device of the trace: its kept index, or `DROPPED`.
    kept: Vec<u32>,
    pub names: Vec<String>,
}

const DROPPED: u32 = u32::MAX;

impl DeviceFilter {
    pub fn new(wanted: &[String]) -> Self {
        DeviceFilter {
            wanted: wanted.to_vec(),
            found: vec![false; wanted.len()],
            kept: Vec::new(),
            names: Vec::new(),
        }
    }

    /// The kept index of device `dev`, or None if it is filtered out.
    #[inline]
    pub fn kept(&mut self, dev: u32, devices: &Devices) -> Option<u32> {
        if let Some(&k) = self.kept.get(dev as usize) {
            return (k != DROPPED).then_some(k);
        }
        self.learn(dev, devices)
    }

    #[cold]
    fn learn(&mut self, dev: u32, devices: &Devices) -> Option<u32> {
        while self.kept.len() <= dev as usize {
            let name = devices.name(self.kept.len() as u32);
            let keep = match self.wanted.iter().position(|w| w == name) {
                Some(i) => {
                    self.found[i] = true;
                    true
                }
                None => self.wanted.is_empty(),
            };
            if keep {
                self.kept.push(self.names.len() as u32);
                self.names.push(name.to_string());
            } else {
                self.kept.push(DROPPED);
            }
        }
        let k = self.kept[dev as usize];
        (k != DROPPED).then_some(k)
    }

    /// At the end of the trace: every wanted device must have appeared.
    pub fn check(&self, file: &Path, devices: &Devices) -> Result<()> {
        let missing: Vec<&str> = self
            .wanted
            .iter()
            .zip(&self.found)
            .filter(|(_, &f)| !f)
            .map(|(w, _)| w.as_str())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut present: Vec<&str> = devices.names().iter().map(String::as_str).collect();
        let more = present.len() > 20;
        present.truncate(20);
        Err(Error::config(
            "trace.devices",
            format!(
                "device(s) {} not in {}; its devices are: {}{}",
                missing.join(", "),
                file.display(),
                present.join(", "),
                if more { ", ..." } else { "" }
            ),
        ))
    }
}

/// Size statistics of one request type.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OpStats {
    pub requests: u64,
    pub bytes: u64,
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub mean_bytes: f64,
}

impl OpStats {
    fn add(&mut self, len: u64) {
        if self.requests == 0 || len < self.min_bytes {
            self.min_bytes = len;
        }
        self.max_bytes = self.max_bytes.max(len);
        self.requests += 1;
        self.bytes += len;
    }

    fn finish(&mut self) {
        self.mean_bytes = if self.requests == 0 {
            0.0
        } else {
            self.bytes as f64 / self.requests as f64
        };
    }
}

/// Requests of sizes up to `up_to_bytes` (and above the previous bucket).
#[derive(Clone, Debug, Serialize)]
pub struct SizeBucket {
    /// Upper bound in bytes; null for the last bucket (anything larger).
    pub up_to_bytes: Option<u64>,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
}

/// One device of the trace.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceStats {
    pub name: String,
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub min_offset_bytes: u64,
    /// End of the highest request (exclusive).
    pub max_end_bytes: u64,
    /// Distinct pages touched.
    pub footprint_pages: u64,
}

/// What `ftlab trace info` reports.
#[derive(Clone, Debug, Serialize)]
pub struct TraceInfo {
    pub file: String,
    pub format: String,
    pub compression: String,
    /// Page size the footprint is counted in.
    pub page_size: u64,
    /// How the footprint treats several devices (`separate` or `merged`).
    pub device_layout: DeviceLayout,
    /// Requests kept (after the device filter).
    pub requests: u64,
    pub read: OpStats,
    pub write: OpStats,
    pub trim: OpStats,
    /// Reads / (reads + writes).
    pub read_ratio: f64,
    pub size_histogram: Vec<SizeBucket>,
    /// Distinct pages touched by any request.
    pub footprint_pages: u64,
    pub footprint_bytes: u64,
    /// Distinct pages written.
    pub written_pages: u64,
    /// Pages written in all (one per page a write touches).
    pub page_writes: u64,
    /// Page writes per distinct page written: 1 means every page written once.
    pub overwrite_factor: Option<f64>,
    /// Lowest byte any request touches and end of the highest one, over all devices.
    pub min_offset_bytes: u64,
    pub max_end_bytes: u64,
    /// Pages the addresses span, as replay lays them out without compaction (the sum over
    /// devices with `separate`, the highest end with `merged`).
    pub span_pages: u64,
    /// Timestamps (ns on the trace's clock) of the first and last requests in file order,
    /// and the lowest and highest.
    pub first_time_ns: u64,
    pub last_time_ns: u64,
    pub min_time_ns: u64,
    pub max_time_ns: u64,
    pub time_span_ns: u64,
    /// Requests whose timestamp is earlier than the previous request's.
    pub timestamp_inversions: u64,
    /// The largest such step back.
    pub max_inversion_ns: u64,
    /// Devices kept, in order of first appearance.
    pub devices: Vec<DeviceStats>,
    /// Devices in the trace, kept or not.
    pub devices_in_trace: u64,
    pub diagnostics: Diagnostics,
}

/// A finished scan: the report and what replay needs.
pub struct Scan {
    pub info: TraceInfo,
    /// Pages touched, keyed as replay keys them under the scan's layout.
    pub extents: Extents,
    /// Per kept device: one past its highest page.
    pub device_end_pages: Vec<u64>,
}

struct Accumulator {
    page: u64,
    read: OpStats,
    write: OpStats,
    trim: OpStats,
    histogram: Vec<[u64; 3]>,
    touched: ExtentSet,
    written: ExtentSet,
    page_writes: u64,
    first_time: Option<u64>,
    last_time: u64,
    min_time: u64,
    max_time: u64,
    inversions: u64,
    max_inversion: u64,
    devices: Vec<DeviceStats>,
    device_end_pages: Vec<u64>,
}

impl Accumulator {
    /// Counts `rec`, of kept device `k` (`names`: the kept devices' names).
    fn add(
        &mut self,
        rec: &Record,
        k: u32,
        names: &[String],
        file: &Path,
        line: u64,
    ) -> Result<()> {
        let end = rec.offset_bytes + rec.len_bytes;
        let first_page = rec.offset_bytes / self.page;
        let end_page = end.div_ceil(self.page);
        if end_page > MAX_PAGES {
            return Err(Error::Trace {
                file: file.to_path_buf(),
                line,
                message: format!(
                    "offset {} is beyond the 2^40 pages a device may have",
                    rec.offset_bytes
                ),
            });
        }
        let key = (k as u64) << DEVICE_SHIFT;
        self.touched.insert(key | first_page, key | end_page);
        let (stats, column) = match rec.op {
            Op::Read => (&mut self.read, 0),
            Op::Write => {
                self.written.insert(key | first_page, key | end_page);
                self.page_writes += end_page - first_page;
                (&mut self.write, 1)
            }
            Op::Trim => (&mut self.trim, 2),
        };
        stats.add(rec.len_bytes);
        let bucket = if rec.len_bytes <= 512 {
            0
        } else {
            ((64 - (rec.len_bytes - 1).leading_zeros()) as usize - 9).min(SIZE_BUCKETS)
        };
        self.histogram[bucket][column] += 1;
        let t = rec.time_ns;
        match self.first_time {
            None => {
                self.first_time = Some(t);
                self.min_time = t;
                self.max_time = t;
            }
            Some(_) => {
                if t < self.last_time {
                    self.inversions += 1;
                    self.max_inversion = self.max_inversion.max(self.last_time - t);
                }
                self.min_time = self.min_time.min(t);
                self.max_time = self.max_time.max(t);
            }
        }
        self.last_time = t;
        // Kept devices come in order, each with its first request; should one ever come
        // without (a device a reader named but gave no request of), it is listed empty
        // rather than misnumbering the ones after it.
        while self.devices.len() <= k as usize {
            self.devices.push(DeviceStats {
                name: names[self.devices.len()].clone(),
                requests: 0,
                reads: 0,
                writes: 0,
                trims: 0,
                min_offset_bytes: rec.offset_bytes,
                max_end_bytes: end,
                footprint_pages: 0,
            });
            self.device_end_pages.push(0);
        }
        let d = &mut self.devices[k as usize];
        if d.requests == 0 {
            (d.min_offset_bytes, d.max_end_bytes) = (rec.offset_bytes, end);
        }
        d.requests += 1;
        match rec.op {
            Op::Read => d.reads += 1,
            Op::Write => d.writes += 1,
            Op::Trim => d.trims += 1,
        }
        d.min_offset_bytes = d.min_offset_bytes.min(rec.offset_bytes);
        d.max_end_bytes = d.max_end_bytes.max(end);
        let e = &mut self.device_end_pages[k as usize];
        *e = (*e).max(end_page);
        Ok(())
    }
}

/// How often a scan reports progress, in records.
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// Reads the whole trace once. `progress(records, fraction of the file)` is called every
/// 65,536 records; returning false stops the scan.
pub fn scan(
    path: &Path,
    cfg: &TraceConfig,
    page_size: u64,
    progress: &mut dyn FnMut(u64, f64) -> bool,
) -> Result<Scan> {
    if page_size == 0 {
        return Err(Error::Usage("page size must be positive".into()));
    }
    let opened = open_trace(path, cfg)?;
    let mut source = opened.source;
    let mut filter = DeviceFilter::new(&cfg.devices);
    let mut acc = Accumulator {
        page: page_size,
        read: OpStats::default(),
        write: OpStats::default(),
        trim: OpStats::default(),
        histogram: vec![[0; 3]; SIZE_BUCKETS + 1],
        touched: ExtentSet::default(),
        written: ExtentSet::default(),
        page_writes: 0,
        first_time: None,
        last_time: 0,
        min_time: 0,
        max_time: 0,
        inversions: 0,
        max_inversion: 0,
        devices: Vec::new(),
        device_end_pages: Vec::new(),
    };
    let mut count = 0u64;
    while let Some(rec) = source.next_record()? {
        count += 1;
        if count.is_multiple_of(PROGRESS_EVERY) && !progress(count, opened.progress.fraction()) {
            return Err(Error::Usage("interrupted".into()));
        }
        let Some(k) = filter.kept(rec.dev, source.devices()) else {
            continue;
        };
        acc.add(&rec, k, &filter.names, source.file(), source.line())?;
    }
    progress(count, 1.0);
    filter.check(path, source.devices())?;
    finish(acc, source.as_ref(), opened.compression, cfg.device_layout)
}

fn finish(
    mut acc: Accumulator,
    source: &dyn RecordSource,
    compression: &str,
    layout: DeviceLayout,
) -> Result<Scan> {
    let by_device = std::mem::take(&mut acc.touched).finish();
    // Per-device footprints, from the device bits of the keys.
    for &(s, e) in by_device.ranges() {
        let k = (s >> DEVICE_SHIFT) as usize;
        acc.devices[k].footprint_pages += e - s;
    }
    let strip = |key: u64| key & MAX_PAGES;
    let (extents, written, span_pages) = match layout {
        DeviceLayout::Separate => (
            by_device,
            std::mem::take(&mut acc.written).finish().total(),
            acc.device_end_pages.iter().sum(),
        ),
        DeviceLayout::Merged => (
            by_device.map(strip),
            std::mem::take(&mut acc.written).finish().map(strip).total(),
            acc.device_end_pages.iter().copied().max().unwrap_or(0),
        ),
    };
    for s in [&mut acc.read, &mut acc.write, &mut acc.trim] {
        s.finish();
    }
    let requests = acc.read.requests + acc.write.requests + acc.trim.requests;
    let rw = acc.read.requests + acc.write.requests;
    let size_histogram = acc
        .histogram
        .iter()
        .enumerate()
        .map(|(i, c)| SizeBucket {
            up_to_bytes: (i < SIZE_BUCKETS).then(|| 512u64 << i),
            reads: c[0],
            writes: c[1],
            trims: c[2],
        })
        .collect();
    let footprint = extents.total();
    let info = TraceInfo {
        file: source.file().display().to_string(),
        format: source.format().to_string(),
        compression: compression.to_string(),
        page_size: acc.page,
        device_layout: layout,
        requests,
        read_ratio: if rw == 0 {
            0.0
        } else {
            acc.read.requests as f64 / rw as f64
        },
        read: acc.read,
        write: acc.write,
        trim: acc.trim,
        size_histogram,
        footprint_pages: footprint,
        footprint_bytes: footprint * acc.page,
        written_pages: written,
        page_writes: acc.page_writes,
        overwrite_factor: (written > 0).then(|| acc.page_writes as f64 / written as f64),
        min_offset_bytes: acc
            .devices
            .iter()
            .map(|d| d.min_offset_bytes)
            .min()
            .unwrap_or(0),
        max_end_bytes: acc
            .devices
            .iter()
            .map(|d| d.max_end_bytes)
            .max()
            .unwrap_or(0),
        span_pages,
        first_time_ns: acc.first_time.unwrap_or(0),
        last_time_ns: acc.last_time,
        min_time_ns: acc.min_time,
        max_time_ns: acc.max_time,
        time_span_ns: acc.max_time - acc.min_time,
        timestamp_inversions: acc.inversions,
        max_inversion_ns: acc.max_inversion,
        devices: acc.devices,
        devices_in_trace: source.devices().len() as u64,
        diagnostics: source.diagnostics().clone(),
    };
    Ok(Scan {
        info,
        extents,
        device_end_pages: acc.device_end_pages,
    })
}

impl TraceInfo {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }
}
