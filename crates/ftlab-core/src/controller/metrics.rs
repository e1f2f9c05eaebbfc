//! Counters, latency histograms, memory tracking and the result report.
//!
//! The report is plain data with a fixed field order and no wall-clock figures, so that
//! identical inputs give byte-identical JSON.

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, CAUSES, CAUSE_COUNT};
use crate::ftl::MemoryBreakdown;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Metric collection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// A time-series sample (memory, WAF, GC) is taken every this many requests.
    pub sample_every_requests: u64,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            sample_every_requests: 10_000,
        }
    }
}

/// What the host asked for, in requests and in logical pages.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HostCounters {
    pub requests: u64,
    pub read_requests: u64,
    pub write_requests: u64,
    pub trim_requests: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub pages_read: u64,
    pub pages_written: u64,
    pub pages_trimmed: u64,
    /// Host page reads of never-written or trimmed pages: served as zeros, with no flash
    /// operation beyond what the scheme spends to learn the page is unmapped. (The reads of
    /// read-modify-write are not host reads and are not counted here.)
    pub unmapped_reads: u64,
    /// Page reads served by the write buffer.
    pub buffer_read_hits: u64,
    /// Page writes that replaced a copy still in the write buffer.
    pub buffer_write_hits: u64,
    /// Dirty pages the buffer wrote to flash in the background (`buffer.destage =
    /// "watermark"`), not in a write's path.
    pub pages_destaged: u64,
    /// Writes covering part of a page: the rest of the page is read first (read-modify-write).
    pub partial_page_writes: u64,
    /// Requests the host stack issued on its own (cleaning, metadata; see [`crate::host`]),
    /// included in the counts above.
    pub stack_requests: u64,
    /// Pages those requests wrote.
    pub stack_pages_written: u64,
}

/// Flash operations of one kind, by cause: reported as a map from each cause's name to its
/// count, in the order of [`CAUSES`], then `total`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ByCause {
    counts: [u64; CAUSE_COUNT],
    /// Operations of every cause.
    pub total: u64,
}

impl ByCause {
    pub fn from(counts: &[u64; CAUSE_COUNT]) -> Self {
        ByCause {
            counts: *counts,
            total: counts.iter().sum(),
        }
    }

    /// Operations of `cause`.
    #[inline]
    pub fn get(&self, cause: Cause) -> u64 {
        self.counts[cause as usize]
    }

    /// Operations of every cause of `group` ([`Cause::group`]), e.g. `merge`.
    pub fn group(&self, group: &str) -> u64 {
        CAUSES
            .iter()
            .filter(|c| c.group() == group)
            .map(|&c| self.get(c))
            .sum()
    }

    /// (cause, count) pairs in report order.
    pub fn iter(&self) -> impl Iterator<Item = (Cause, u64)> + '_ {
        CAUSES.iter().map(|&c| (c, self.get(c)))
    }
}

impl std::ops::Index<Cause> for ByCause {
    type Output = u64;
    #[inline]
    fn index(&self, cause: Cause) -> &u64 {
        &self.counts[cause as usize]
    }
}

impl Serialize for ByCause {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(CAUSE_COUNT + 1))?;
        for (cause, count) in self.iter() {
            map.serialize_entry(cause.name(), &count)?;
        }
        map.serialize_entry("total", &self.total)?;
        map.end()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct FlashOps {
    pub reads: ByCause,
    pub programs: ByCause,
    pub erases: ByCause,
}

#[derive(Clone, Debug, Serialize)]
pub struct GcReport {
    /// Victim blocks reclaimed.
    pub invocations: u64,
    /// Valid pages relocated.
    pub pages_moved: u64,
    /// When the scheme collects: `"background"` (in idle time, below the soft threshold,
    /// and in the foreground only when free space runs short) or `"foreground"` (in the
    /// path of the writes that need it); see [`crate::ftl::Ftl::background_gc`].
    pub scheduling: &'static str,
}

/// What the pseudo-SLC cache absorbed and what folding it cost.
#[derive(Clone, Debug, Serialize)]
pub struct SlcReport {
    /// Host-written pages (host, cleaning and metadata programs) programmed into SLC
    /// blocks, and their share of all host-written pages programmed (the hit rate).
    pub host_pages_absorbed: u64,
    pub hit_rate: Option<f64>,
    /// SLC blocks folded, and the valid pages folding copied into native blocks.
    pub folds: u64,
    pub pages_folded: u64,
    /// The write amplification folding adds: its programs per page the host wrote to the
    /// device (part of `waf`).
    pub waf_added: Option<f64>,
}

impl SlcReport {
    pub fn new(flash: &Flash, host_pages_written: u64) -> Self {
        let host_programs: u64 = CAUSES
            .iter()
            .filter(|c| c.group() == "host")
            .map(|&c| flash.stats.programs[c as usize])
            .sum();
        let ratio = |n: u64, d: u64| (d > 0).then(|| n as f64 / d as f64);
        SlcReport {
            host_pages_absorbed: flash.stats.slc_host_programs,
            hit_rate: ratio(flash.stats.slc_host_programs, host_programs),
            folds: flash.stats.slc_folds,
            pages_folded: flash.stats.slc_pages_folded,
            waf_added: ratio(
                flash.stats.programs[Cause::Fold as usize],
                host_pages_written,
            ),
        }
    }
}

/// The media faults `[faults]` injected, and what surviving them cost.
#[derive(Clone, Debug, Serialize)]
pub struct FaultReport {
    /// Blocks bad from the factory (never allocated).
    pub factory_bad_blocks: u64,
    /// Page programs and block erases that failed during the run: each retired its block
    /// (a grown bad block).
    pub program_failures: u64,
    pub erase_failures: u64,
    /// Blocks retired by the end of the run (factory bad blocks, and grown bad blocks of
    /// the run and of preconditioning).
    pub retired_blocks: u64,
    /// Valid pages of failing blocks re-written elsewhere (the page whose program failed
    /// is written again by the write that goes on).
    pub pages_rewritten: u64,
    /// The write amplification retiring blocks adds: its programs (failed ones and
    /// re-written pages) per page the host wrote to the device (part of `waf`).
    pub waf_added: Option<f64>,
}

impl FaultReport {
    pub fn new(flash: &Flash, factory_bad_blocks: u64, host_pages_written: u64) -> Self {
        let programs = flash.stats.programs[Cause::Retire as usize];
        FaultReport {
            factory_bad_blocks,
            program_failures: flash.stats.program_failures,
            erase_failures: flash.stats.erase_failures,
            retired_blocks: flash.retired_blocks() as u64,
            pages_rewritten: programs - flash.stats.program_failures,
            waf_added: (host_pages_written > 0)
                .then(|| programs as f64 / host_pages_written as f64),
        }
    }
}

/// The media's bit errors and read retries (`[media]`), and its wear as a drive's SMART log
/// reports it.
#[derive(Clone, Debug, Serialize)]
pub struct MediaReport {
    /// Page reads decoded, by the extra sensing steps each took (index 0: the first read
    /// decoded; one entry per step of `media.retry_steps`), every cause and page copies
    /// included; uncorrectable reads are not in it.
    pub retry_histogram: Vec<u64>,
    /// Extra sensing steps of every read (each one more tR and page transfer), and their
    /// mean per decoded read.
    pub read_retries: u64,
    pub retries_per_read: Option<f64>,
    /// Reads whose last retry step still left more errors than the ECC corrects: an error
    /// returned for the page, never its data. Page copies (garbage collection, merges,
    /// folding) apart.
    pub uncorrectable_reads: u64,
    pub uncorrectable_copies: u64,
    /// P/E cycles the NAND is rated for (`media.rated_pe_cycles`).
    pub rated_pe_cycles: u32,
    /// NVMe SMART "Percentage Used": the mean erase count of the good blocks against the
    /// rated cycles, in percent, rounded down (past 100 when the rating is exceeded; 255 at
    /// most, as NVMe caps it).
    pub percentage_used: u8,
    /// NVMe SMART "Data Units Written" of the measured run: thousands of 512-byte units the
    /// host wrote, rounded up.
    pub data_units_written: u64,
    /// Bytes the host may still write before the good blocks reach their rated cycles, at
    /// the run's write amplification (null without writes): the drive's remaining TBW.
    pub remaining_tbw_bytes: Option<u64>,
    /// `media.wear_leveling`, the blocks static wear levelling emptied and the pages it
    /// moved, and the write amplification it adds (its programs per page the host wrote to
    /// the device; part of `waf`).
    pub wear_leveling: crate::device::media::WearLeveling,
    pub wear_level_blocks: u64,
    pub wear_level_pages_moved: u64,
    pub wear_level_waf_added: Option<f64>,
    /// Blocks refreshed for their data's age (`media.refresh_after_ns`), the pages it
    /// re-wrote and the write amplification it adds (part of `waf`).
    pub refresh_blocks: u64,
    pub refresh_pages_moved: u64,
    pub refresh_waf_added: Option<f64>,
    /// The good blocks by erase count at the end of the run: `wear_histogram[i]` blocks
    /// have from `wear_histogram_start + i x wear_histogram_width` cycles on (at most
    /// [`WEAR_BUCKETS`] buckets from the least worn block to the most).
    pub wear_histogram_start: u32,
    pub wear_histogram_width: u32,
    pub wear_histogram: Vec<u64>,
    /// The blocks holding valid data by the raw bit error rate of that data at the end of
    /// the run, before read retry, a bucket per decade: `rber_histogram[i]` counts rates
    /// from 10^(i + [`RBER_LOWEST_DECADE`]) up to ten times that (the first bucket holds
    /// anything lower, the last anything higher). Empty without the error model.
    pub rber_histogram: Vec<u64>,
    /// [`RBER_LOWEST_DECADE`], for readers of the report.
    pub rber_histogram_first_decade: i32,
}

/// Buckets of [`MediaReport::wear_histogram`], at most.
pub const WEAR_BUCKETS: u32 = 20;
/// The decade of [`MediaReport::rber_histogram`]'s first bucket (1e-10), and its buckets
/// (up to 1e-1 and beyond).
pub const RBER_LOWEST_DECADE: i32 = -10;
pub const RBER_BUCKETS: usize = 10;

impl MediaReport {
    /// The report of `cfg`, if it turns the error model or wear levelling on; the host
    /// wrote `host_pages_written` pages of `host_bytes_written` bytes.
    pub fn new(
        cfg: &crate::device::media::MediaConfig,
        flash: &Flash,
        host_pages_written: u64,
        host_bytes_written: u64,
    ) -> Option<Self> {
        if !cfg.reported() {
            return None;
        }
        let stats = &flash.stats.media;
        let steps = cfg.retry_steps as usize;
        let decoded: u64 = stats.retry_histogram.iter().sum();
        let rated = cfg.rated_pe_cycles;
        let ratio = |n: u64, d: u64| (d > 0).then(|| n as f64 / d as f64);
        let waf = ratio(flash.stats.total_programs(), host_pages_written);
        let wl_pages = flash.stats.programs[Cause::WearLevel as usize];
        let refresh_pages = flash.stats.programs[Cause::Refresh as usize];
        let (mut cycles, mut good) = (0u64, 0u64);
        for (block, &count) in flash.erase_counts().iter().enumerate() {
            if !flash.is_retired(block as u32) {
                cycles += count as u64;
                good += 1;
            }
        }
        let mean = cycles as f64 / good.max(1) as f64;
        let used = (mean / rated as f64 * 100.0).floor().min(255.0) as u8;
        let layout = flash.layout();
        let good_bytes = good as f64 * layout.pages_per_block as f64 * layout.page_size as f64;
        let left = (rated as f64 - mean).max(0.0);
        let good_counts = || {
            (0..flash.layout().total_blocks)
                .filter(|&b| !flash.is_retired(b))
                .map(|b| flash.erase_count(b))
        };
        let low = good_counts().min().unwrap_or(0);
        let high = good_counts().max().unwrap_or(0);
        let width = (high - low + 1).div_ceil(WEAR_BUCKETS).max(1);
        let mut wear_histogram = vec![0u64; ((high - low) / width + 1) as usize];
        for count in good_counts() {
            wear_histogram[((count - low) / width) as usize] += 1;
        }
        let mut rber_histogram = Vec::new();
        if let Some(media) = flash.media().filter(|_| cfg.enabled()) {
            rber_histogram = vec![0u64; RBER_BUCKETS];
            let now = flash.media_now();
            for b in 0..flash.layout().total_blocks {
                if flash.is_retired(b) || flash.valid_count(b) == 0 {
                    continue;
                }
                let rber = media.block_rber(b, flash.erase_count(b), now);
                let decade = rber.max(f64::MIN_POSITIVE).log10().floor() as i32;
                let i = (decade - RBER_LOWEST_DECADE).clamp(0, RBER_BUCKETS as i32 - 1);
                rber_histogram[i as usize] += 1;
            }
        }
        Some(MediaReport {
            retry_histogram: stats.retry_histogram[..=steps].to_vec(),
            read_retries: stats.read_retries,
            retries_per_read: (decoded > 0).then(|| stats.read_retries as f64 / decoded as f64),
            uncorrectable_reads: stats.uncorrectable_reads,
            uncorrectable_copies: stats.uncorrectable_copies,
            rated_pe_cycles: rated,
            percentage_used: used,
            data_units_written: host_bytes_written.div_ceil(512).div_ceil(1000),
            remaining_tbw_bytes: waf
                .filter(|&w| w > 0.0)
                .map(|w| (left * good_bytes / w) as u64),
            wear_leveling: cfg.wear_leveling,
            wear_level_blocks: flash.stats.wear_level_blocks,
            wear_level_pages_moved: wl_pages,
            wear_level_waf_added: ratio(wl_pages, host_pages_written),
            refresh_blocks: flash.stats.refresh_blocks,
            refresh_pages_moved: refresh_pages,
            refresh_waf_added: ratio(refresh_pages, host_pages_written),
            wear_histogram_start: low,
            wear_histogram_width: width,
            wear_histogram,
            rber_histogram,
            rber_histogram_first_decade: RBER_LOWEST_DECADE,
        })
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct EraseCounts {
    pub min: u32,
    pub mean: f64,
    pub max: u32,
}

/// Per-request latency of one request type.
///
/// Recorded into counts with exactly the buckets of an HdrHistogram of three significant
/// digits (values below 2,048 exact, then 1,024 sub-buckets per power of two), which
/// [`Latency::stats`] hands to `hdrhistogram` for the quantiles: the same results as
/// recording every value there, for a fifth of the cost on every timed request.
#[derive(Clone)]
pub struct Latency {
    counts: Vec<u64>,
    sum: u128,
    sum_squares: u128,
    min: u64,
    max: u64,
}

/// Sub-buckets per power of two: 2 x 10^3 rounded up to a power of two, halved.
const HALF_BUCKETS_LOG2: u32 = 10;

/// The index of `ns`'s bucket: with `b` the number of bits `ns` has beyond the 11 of a value
/// below 2,048, its bucket is `2^b` wide, one of 1,024 from `1,024 x 2^b` (`b` = 0: the
/// values 0 to 2,047, one each).
#[inline(always)]
fn bucket(ns: u64) -> usize {
    let b = (64 - (ns | ((2 << HALF_BUCKETS_LOG2) - 1)).leading_zeros()) - (HALF_BUCKETS_LOG2 + 1);
    ((b as usize) << HALF_BUCKETS_LOG2) + (ns >> b) as usize
}

/// The lowest value of bucket `index` (the inverse of [`bucket`]).
fn bucket_floor(index: usize) -> u64 {
    let half = 1usize << HALF_BUCKETS_LOG2;
    let b = (index / half).saturating_sub(1) as u32;
    ((index - ((b as usize) << HALF_BUCKETS_LOG2)) as u64) << b
}

/// Quantiles reported for every latency distribution (the CDF used by plots).
pub const LATENCY_QUANTILES: [f64; 16] = [
    0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999, 0.9999,
];

#[derive(Clone, Debug, Serialize)]
pub struct LatencyStats {
    pub count: u64,
    /// The latencies added up (what [`crate::device::breakdown`]'s parts add up to).
    pub total_ns: u128,
    pub mean_ns: f64,
    /// Standard deviation (population), from the exact sums of values and squares.
    pub stdev_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// (quantile, latency in ns) pairs at [`LATENCY_QUANTILES`], then (1.0, max). Quantile
    /// 0 is the exact minimum; the others are exact to 3 significant digits (HdrHistogram).
    pub cdf: Vec<(f64, u64)>,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            counts: Vec::new(),
            sum: 0,
            sum_squares: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl Latency {
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let i = bucket(ns);
        match self.counts.get_mut(i) {
            Some(c) => *c += 1,
            None => self.grow_to(i),
        }
        self.sum += ns as u128;
        // Exact up to 2^128 (values of centuries); saturates, never wraps, beyond.
        self.sum_squares = self.sum_squares.saturating_add(ns as u128 * ns as u128);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Counts `ns` for the quantiles only: the mean and deviation are left to the caller
    /// (a latency part's sum is kept with the breakdown).
    #[inline]
    pub fn record_for_quantiles(&mut self, ns: u64) {
        let i = bucket(ns);
        match self.counts.get_mut(i) {
            Some(c) => *c += 1,
            None => self.grow_to(i),
        }
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The value at quantile `q` of the values recorded and `zeros` zeros more (the
    /// requests a latency part did not touch); 0 with nothing at all.
    pub fn quantile_with_zeros(&self, zeros: u64, q: f64) -> u64 {
        if self.count() + zeros == 0 {
            return 0;
        }
        let min = if zeros > 0 { 0 } else { self.min };
        self.histogram(zeros)
            .value_at_quantile(q)
            .clamp(min, self.max)
    }

    /// Counts a first value in bucket `i`, beyond the buckets so far.
    #[cold]
    fn grow_to(&mut self, i: usize) {
        self.counts.resize(i + 1, 0);
        self.counts[i] = 1;
    }

    /// The histogram of the values recorded and `zeros` zeros more: each bucket's count at
    /// its lowest value, which falls in the same HdrHistogram bucket as every value counted
    /// there.
    fn histogram(&self, zeros: u64) -> Histogram<u64> {
        let mut hist = Histogram::new(3).expect("3 significant digits is a valid histogram");
        let first = self.counts.first().copied().unwrap_or(0) + zeros;
        let rest = self.counts.iter().skip(1).copied();
        for (i, n) in std::iter::once(first).chain(rest).enumerate() {
            // The histogram grows to fit any value; saturate only if growing ever failed.
            if n > 0 && hist.record_n(bucket_floor(i), n).is_err() {
                hist.saturating_record_n(bucket_floor(i), n);
            }
        }
        hist
    }

    pub fn stats(&self) -> LatencyStats {
        let hist = self.histogram(0);
        let count = hist.len();
        // Quantiles are exact to 3 significant digits, and clamped to the exact extremes.
        let q = |x: f64| {
            if count == 0 {
                0
            } else {
                hist.value_at_quantile(x).clamp(self.min, self.max)
            }
        };
        let mut cdf: Vec<(f64, u64)> = LATENCY_QUANTILES.iter().map(|&x| (x, q(x))).collect();
        cdf.push((1.0, self.max));
        let n = count.max(1) as f64;
        let mean_ns = self.sum as f64 / n;
        LatencyStats {
            count,
            total_ns: self.sum,
            mean_ns,
            stdev_ns: (self.sum_squares as f64 / n - mean_ns * mean_ns)
                .max(0.0)
                .sqrt(),
            p50_ns: q(0.5),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            max_ns: self.max,
            cdf,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LatencyReport {
    pub read: LatencyStats,
    pub write: LatencyStats,
}

/// DRAM of the mapping scheme: total and by component, at the end and at the peak
/// (each component's own peak).
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemoryReport {
    pub final_total: u64,
    pub peak_total: u64,
    pub final_components: BTreeMap<String, u64>,
    pub peak_components: BTreeMap<String, u64>,
}

/// Columnar samples taken every `metrics.sample_every_requests` requests and at the end.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TimeSeries {
    pub request: Vec<u64>,
    /// Simulated time (arrival of the sampled request); 0 in mapping-only mode.
    pub time_ns: Vec<u64>,
    pub host_pages_written: Vec<u64>,
    pub flash_programs: Vec<u64>,
    pub gc_invocations: Vec<u64>,
    pub memory_bytes: Vec<u64>,
}

/// Tracks memory samples and the time series.
#[derive(Default)]
pub struct Sampler {
    scratch: MemoryBreakdown,
    pub memory: MemoryReport,
    pub series: TimeSeries,
}

impl Sampler {
    pub fn sample(
        &mut self,
        request: u64,
        time_ns: u64,
        host: &HostCounters,
        flash: &Flash,
        memory: impl FnOnce(&mut MemoryBreakdown),
    ) {
        self.scratch.clear();
        memory(&mut self.scratch);
        let total: u64 = self.scratch.iter().map(|(_, b)| b).sum();
        let m = &mut self.memory;
        m.final_total = total;
        m.peak_total = m.peak_total.max(total);
        m.final_components.clear();
        for &(name, bytes) in &self.scratch {
            m.final_components.insert(name.to_string(), bytes);
            let peak = m.peak_components.entry(name.to_string()).or_insert(0);
            *peak = (*peak).max(bytes);
        }
        let s = &mut self.series;
        s.request.push(request);
        s.time_ns.push(time_ns);
        s.host_pages_written.push(host.pages_written);
        s.flash_programs.push(flash.stats.total_programs());
        s.gc_invocations.push(flash.stats.gc_invocations);
        s.memory_bytes.push(total);
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Metrics {
    pub host: HostCounters,
    pub flash: FlashOps,
    /// Device-level write amplification: flash programs of every cause per page the host
    /// wrote to the device (null if nothing was written).
    pub waf: Option<f64>,
    /// File-system-level write amplification: pages written to the device per page the
    /// application wrote (1 with the pass-through host stack; null if nothing was written).
    pub fs_waf: Option<f64>,
    /// The whole stack's write amplification: flash programs per page the application
    /// wrote, `fs_waf x waf`.
    pub total_waf: Option<f64>,
    pub gc: GcReport,
    /// The pseudo-SLC cache (null when `[slc]` leaves it off).
    pub slc: Option<SlcReport>,
    /// Media faults (null when `[faults]` leaves them off).
    pub faults: Option<FaultReport>,
    /// Bit errors, read retries and wear (null when `[media]` leaves its error model off).
    pub media: Option<MediaReport>,
    pub erase_count: EraseCounts,
    pub memory_bytes: MemoryReport,
    /// Null in mapping-only mode.
    pub latency: Option<LatencyReport>,
    /// Where the read and write latencies went, by part (null in mapping-only mode).
    pub latency_breakdown: Option<crate::controller::breakdown::LatencyBreakdown>,
    /// From the first arrival to the last completion; null in mapping-only mode.
    pub simulated_time_ns: Option<u64>,
    pub iops: Option<f64>,
    pub throughput_bytes_per_s: Option<f64>,
    /// Offered load against what the device served, and whether an open-loop replay
    /// saturated it; null in mapping-only mode.
    pub load: Option<LoadReport>,
    /// Multi-plane operations, suspensions and background work; null in mapping-only mode.
    pub scheduler: Option<crate::device::timing::SchedulerStats>,
    /// Scheme-specific counters.
    pub scheme: BTreeMap<String, f64>,
    /// The host stack: its name, the application's capacity, its host memory and counters.
    pub host_stack: HostStackReport,
    pub time_series: TimeSeries,
}

/// What the host stack ([`crate::host`]) held and did.
#[derive(Clone, Debug, Serialize)]
pub struct HostStackReport {
    /// `inplace`, `f2fs`, `alfs` (or `custom`).
    pub name: &'static str,
    /// Logical pages the application could address.
    pub app_pages: u64,
    /// Host memory of the stack (not the device's DRAM), at the end, by component.
    pub memory_bytes: BTreeMap<String, u64>,
    pub memory_total_bytes: u64,
    /// Application requests and pages, cleaning, metadata (empty for `inplace`).
    pub counters: BTreeMap<String, f64>,
}

impl HostStackReport {
    /// The pass-through stack over a device of `logical_pages`.
    pub fn inplace(logical_pages: u64) -> Self {
        HostStackReport {
            name: "inplace",
            app_pages: logical_pages,
            memory_bytes: BTreeMap::new(),
            memory_total_bytes: 0,
            counters: BTreeMap::new(),
        }
    }
}

/// The load a timed replay offered and how the device coped.
///
/// An open-loop replay *saturates* the device when requests arrive faster than it serves
/// them: the queue grows without bound and latencies measure the queue, not the device.
/// It is reported as saturated when the busiest die was busy for at least 98% of the time
/// requests were arriving, or when the last request completed later after the last arrival
/// than a tenth of the arrival span (and at least 100 ms): the queue did not drain. A
/// replay can also saturate the device in bursts and drain between them: it is reported
/// as saturated in bursts when in some window of one second of arrival time a die was
/// given more work than the window holds, and at least 1% of the requests waited in the
/// queue (took longer than `queue_limit_ns`, one block's whole reclaim).
#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    /// "open" or "closed".
    pub mode: &'static str,
    /// From the first to the last arrival.
    pub arrival_span_ns: u64,
    /// Requests and bytes per second over the arrival span (closed loop: over the run).
    pub offered_iops: f64,
    pub offered_bytes_per_s: f64,
    /// Share of the arrival span (closed loop: of the run) the busiest die and the average
    /// die spent working, background work included.
    pub busiest_die_utilisation: f64,
    pub mean_die_utilisation: f64,
    /// Last completion minus last arrival.
    pub backlog_at_end_ns: u64,
    /// The window of arrival time for bursts: one second, or the arrival span if shorter.
    pub window_ns: u64,
    /// The most work one die was given in one window, as a share of the window (open
    /// loop; above 1 the queue grew in that window).
    pub peak_window_utilisation: f64,
    /// Requests slower than this waited in a queue: `pages_per_block` x (tR + tPROG) +
    /// tBERS, one block's whole reclaim.
    pub queue_limit_ns: u64,
    /// Requests slower than `queue_limit_ns`.
    pub queued_requests: u64,
    /// The open-loop replay outran the device, over the run or in bursts.
    pub saturated: bool,
    /// Saturated in bursts only: the run as a whole did not saturate the device.
    pub saturated_in_bursts: bool,
    /// The waits that hold a large share of the read or write latency, whatever the die
    /// utilisation: which, how many requests, and what to change
    /// ([`crate::controller::breakdown::stalls`]).
    pub stalls: Vec<crate::controller::breakdown::Stall>,
    /// A `replay.time_scale` at which the busiest die would be about 70% busy, over the
    /// run and in its busiest window (saturated open-loop runs only).
    pub suggested_time_scale: Option<f64>,
}

/// What preconditioning wrote before the measured run (none of it is in the run's metrics).
#[derive(Clone, Debug, Serialize)]
pub struct PreconditionReport {
    pub mode: crate::controller::settings::PreconditionMode,
    /// Pages the source reads before writing them, written first (`precondition.warmup`).
    pub warmup_pages: u64,
    pub host_pages_written: u64,
    pub flash_programs: u64,
    pub gc_invocations: u64,
    /// Write amplification of the random writes (steady state), or of everything written.
    pub waf: Option<f64>,
    /// Steady state: the write amplification of each window of random writes.
    pub window_waf: Vec<f64>,
    /// Whether the write amplification settled within `precondition.tolerance`.
    pub steady: bool,
    /// Requests of the run's own source replayed before the measured run
    /// (`precondition.workload_requests`), and the whole stack's write amplification over
    /// them (flash programs per application page).
    pub workload_requests: u64,
    pub workload_waf: Option<f64>,
}

impl PreconditionReport {
    /// Nothing written yet, in `mode`.
    pub fn new(mode: crate::controller::settings::PreconditionMode) -> Self {
        PreconditionReport {
            mode,
            warmup_pages: 0,
            host_pages_written: 0,
            flash_programs: 0,
            gc_invocations: 0,
            waf: None,
            window_waf: Vec::new(),
            steady: false,
            workload_requests: 0,
            workload_waf: None,
        }
    }
}

impl Metrics {
    pub fn flash_ops(flash: &Flash) -> FlashOps {
        FlashOps {
            reads: ByCause::from(&flash.stats.reads),
            programs: ByCause::from(&flash.stats.programs),
            erases: ByCause::from(&flash.stats.erases),
        }
    }

    pub fn erase_counts(flash: &Flash) -> EraseCounts {
        let counts = flash.erase_counts();
        let n = counts.len().max(1) as f64;
        EraseCounts {
            min: counts.iter().copied().min().unwrap_or(0),
            mean: counts.iter().map(|&c| c as f64).sum::<f64>() / n,
            max: counts.iter().copied().max().unwrap_or(0),
        }
    }
}

/// What a finished simulation hands the run's report (`run::report::Report::new`).
#[derive(Clone, Debug)]
pub struct Finished {
    pub layout: Layout,
    /// Whether the timing model ran (false: mapping-only).
    pub timed: bool,
    /// Whether every read was checked against the shadow copy.
    pub verified: bool,
    /// What was written before the run (absent when nothing was).
    pub precondition: Option<PreconditionReport>,
    pub metrics: Metrics,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_with_zeros_is_the_quantile_with_the_zeros_recorded() {
        let mut some = Latency::default();
        for ns in [5_000, 70_000, 70_000, 1_300_000, 40_000_000] {
            some.record_for_quantiles(ns);
        }
        for zeros in [0, 3, 400] {
            let mut all = some.clone();
            for _ in 0..zeros {
                all.record(0);
            }
            let stats = all.stats();
            for (q, expected) in [
                (0.5, stats.p50_ns),
                (0.99, stats.p99_ns),
                (0.999, stats.p999_ns),
            ] {
                assert_eq!(
                    some.quantile_with_zeros(zeros, q),
                    expected,
                    "{zeros} zeros, {q}"
                );
            }
        }
        assert_eq!(Latency::default().quantile_with_zeros(0, 0.99), 0);
        assert_eq!(Latency::default().quantile_with_zeros(7, 0.99), 0);
    }

    #[test]
    fn flash_ops_by_cause_serialise_in_list_order_then_total() {
        let mut counts = [0u64; CAUSE_COUNT];
        for (i, c) in counts.iter_mut().enumerate() {
            *c = i as u64 + 1;
        }
        let by = ByCause::from(&counts);
        assert_eq!(by.total, (1..=CAUSE_COUNT as u64).sum::<u64>());
        assert_eq!(by[Cause::Gc], 2);
        assert_eq!(
            by.group("merge"),
            by[Cause::MergeSwitch] + by[Cause::MergePartial] + by[Cause::MergeFull]
        );
        let json = serde_json::to_string(&by).unwrap();
        let mut expected: Vec<String> = CAUSES
            .iter()
            .map(|c| format!("\"{}\":{}", c.name(), by[*c]))
            .collect();
        expected.push(format!("\"total\":{}", by.total));
        assert_eq!(json, format!("{{{}}}", expected.join(",")));
    }

    /// The statistics of values recorded directly in a three-digit HdrHistogram.
    fn hdr_stats(values: &[u64]) -> Vec<(f64, u64)> {
        let mut hist = Histogram::<u64>::new(3).unwrap();
        for &v in values {
            hist.record(v).unwrap();
        }
        let (min, max) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
        let mut cdf: Vec<(f64, u64)> = LATENCY_QUANTILES
            .iter()
            .map(|&q| (q, hist.value_at_quantile(q).clamp(min, max)))
            .collect();
        cdf.push((1.0, max));
        cdf
    }

    #[test]
    fn buckets_are_hdrhistogram_buckets_and_invert() {
        let hist = Histogram::<u64>::new(3).unwrap();
        let mut values: Vec<u64> = (0..70_000).collect();
        values.extend((11..64).flat_map(|k| {
            let p = 1u64 << k;
            [p - 2, p - 1, p, p + 1, p + (p >> 1), p | (p >> 11)]
        }));
        values.push(u64::MAX);
        for v in values {
            let i = bucket(v);
            let floor = bucket_floor(i);
            assert_eq!(floor, hist.lowest_equivalent(v), "{v}");
            assert_eq!(bucket(floor), i, "{v}");
        }
    }

    proptest::proptest! {
        #[test]
        fn latency_stats_equal_recording_every_value_in_hdrhistogram(
            values in proptest::collection::vec(
                proptest::prop_oneof![0u64..5_000, 0u64..50_000_000, 0u64..u64::MAX / 2],
                1..400,
            )
        ) {
            let mut latency = Latency::default();
            for &v in &values {
                latency.record(v);
            }
            let stats = latency.stats();
            proptest::prop_assert_eq!(stats.count, values.len() as u64);
            proptest::prop_assert_eq!(stats.cdf, hdr_stats(&values));
        }
    }
}
