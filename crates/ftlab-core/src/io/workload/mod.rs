//! Seeded synthetic workloads: sequential, uniform random, Zipf and hot/cold address
//! patterns, with a read/write/trim mix, a request-size distribution, a working-set size
//! and exponential inter-arrival times; and application models (Postmark, OLTP, Hadoop:
//! [`apps`]) as an in-place file system issues them. The `[workload]` section of the
//! configuration describes one; a few named ones are built in.

pub mod apps;

use crate::error::{Error, Result};
use crate::request::{Op, Request};
use crate::rng::{Rng, Zipf};
use crate::units;
use serde::{Deserialize, Serialize};

/// How request addresses are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// One stream from the start of the working set, wrapping around at its end.
    Sequential,
    /// Every page of the working set equally likely.
    Uniform,
    /// Page popularity follows a Zipf law with exponent `zipf_theta`.
    Zipf,
    /// `hot_access_fraction` of the requests go to `hot_space_fraction` of the pages.
    Hotcold,
    /// fio's Pareto distribution: page rank `(n - 1) x u^(ln h / ln(1 - h))` for uniform
    /// `u`, so a share `1 - h` of the requests goes to a share `h` of the pages
    /// (`pareto_h` 0.2: the 80/20 rule), scattered over the working set like `zipf`.
    Pareto,
    /// Postmark-like small files on an in-place file system (`workload.postmark`).
    Postmark,
    /// A database's table updates and redo log (`workload.oltp`).
    Oltp,
    /// HDFS-like large sequential files (`workload.hadoop`).
    Hadoop,
}

impl Kind {
    /// An application model (its own request sizes and mix) rather than an address pattern.
    pub fn is_app(self) -> bool {
        matches!(self, Kind::Postmark | Kind::Oltp | Kind::Hadoop)
    }
}

/// The `[workload]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadConfig {
    pub kind: Kind,
    /// Number of requests.
    pub requests: u64,
    /// Share of requests that are reads.
    pub read_ratio: f64,
    /// Share of requests that are trims.
    pub trim_ratio: f64,
    /// Bytes of the logical space the workload touches, from `start_offset_bytes`;
    /// 0 means the whole logical space (or `working_set_fraction` of it).
    #[serde(with = "units::bytes")]
    pub working_set_bytes: u64,
    /// The working set is first written whole, sequentially, in 1 MiB requests (a file or
    /// table laid out before the benchmark; these count among `requests`).
    pub layout: bool,
    /// The working set as a share of the logical space from `start_offset_bytes`, so that
    /// one setting fits every device (used when `working_set_bytes` is 0; 0: unused).
    pub working_set_fraction: f64,
    #[serde(with = "units::bytes")]
    pub start_offset_bytes: u64,
    /// Request sizes, drawn with `request_size_weights`.
    #[serde(with = "units::bytes_list")]
    pub request_sizes_bytes: Vec<u64>,
    pub request_size_weights: Vec<f64>,
    pub zipf_theta: f64,
    pub hot_space_fraction: f64,
    pub hot_access_fraction: f64,
    /// `pareto`: fio's `h` (share of the pages that gets a share `1 - h` of the requests).
    pub pareto_h: f64,
    /// `zipf` and `pareto`: scatter the popular ranks over the working set (true, as YCSB's
    /// scrambled Zipf and fio's hashed distributions) or keep rank order, the most popular
    /// pages first (false).
    pub scatter_ranks: bool,
    /// Journaling (ext4 `data=journal`): each write is preceded by a write of the same data
    /// plus `journal_metadata_bytes` (descriptor and commit blocks) at the head of a
    /// circular journal of `journal_bytes` starting at `journal_offset_bytes`; 0 disables.
    /// The journal must lie outside the working set.
    #[serde(with = "units::bytes")]
    pub journal_bytes: u64,
    #[serde(with = "units::bytes")]
    pub journal_offset_bytes: u64,
    #[serde(with = "units::bytes")]
    pub journal_metadata_bytes: u64,
    /// Share of requests (for the random kinds) that continue a sequential stream
    /// instead, as in the standard benchmark trace.
    pub sequential_fraction: f64,
    /// Requests in a sequential stream before it jumps to a new random place.
    pub sequential_run_requests: u64,
    /// Mean of the exponential inter-arrival time; 0 makes every request arrive at once.
    #[serde(with = "units::nanos")]
    pub interarrival_ns: u64,
    pub seed: u64,
    /// `postmark`, `oltp`, `hadoop`: the application's settings (their request sizes and
    /// mix replace `request_sizes_bytes`, `read_ratio` and `trim_ratio`).
    pub postmark: apps::PostmarkConfig,
    pub oltp: apps::OltpConfig,
    pub hadoop: apps::HadoopConfig,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            kind: Kind::Uniform,
            requests: 100_000,
            read_ratio: 0.3,
            trim_ratio: 0.0,
            working_set_bytes: 0,
            start_offset_bytes: 0,
            request_sizes_bytes: vec![4096],
            request_size_weights: vec![1.0],
            zipf_theta: 0.99,
            hot_space_fraction: 0.2,
            hot_access_fraction: 0.8,
            pareto_h: 0.2,
            scatter_ranks: true,
            journal_bytes: 0,
            journal_offset_bytes: 0,
            journal_metadata_bytes: 8192,
            sequential_fraction: 0.0,
            sequential_run_requests: 256,
            // 1,000 requests per second: a load the small default device sustains, so
            // that latencies measure the scheme rather than an ever-growing queue.
            interarrival_ns: 1_000_000,
            seed: 42,
            working_set_fraction: 0.0,
            layout: false,
            postmark: apps::PostmarkConfig::default(),
            oltp: apps::OltpConfig::default(),
            hadoop: apps::HadoopConfig::default(),
        }
    }
}

fn fraction(key: &str, v: f64) -> Result<()> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(Error::config(
            key,
            format!("{v} is not a fraction between 0 and 1"),
        ))
    }
}

impl WorkloadConfig {
    /// Checks what can be checked without the device; [`generate`] checks the rest.
    pub fn validate(&self) -> Result<()> {
        fraction("workload.read_ratio", self.read_ratio)?;
        fraction("workload.trim_ratio", self.trim_ratio)?;
        if self.read_ratio + self.trim_ratio > 1.0 {
            return Err(Error::config(
                "workload.trim_ratio",
                format!(
                    "read_ratio {} plus trim_ratio {} exceeds 1",
                    self.read_ratio, self.trim_ratio
                ),
            ));
        }
        fraction("workload.sequential_fraction", self.sequential_fraction)?;
        fraction("workload.working_set_fraction", self.working_set_fraction)?;
        self.postmark.validate()?;
        self.oltp.validate()?;
        self.hadoop.validate()?;
        fraction("workload.hot_space_fraction", self.hot_space_fraction)?;
        fraction("workload.hot_access_fraction", self.hot_access_fraction)?;
        if self.kind == Kind::Hotcold
            && (self.hot_space_fraction == 0.0 || self.hot_space_fraction == 1.0)
        {
            return Err(Error::config(
                "workload.hot_space_fraction",
                "a hot/cold workload needs a hot share strictly between 0 and 1",
            ));
        }
        if !(self.pareto_h > 0.0 && self.pareto_h < 1.0) {
            return Err(Error::config(
                "workload.pareto_h",
                format!(
                    "{} is not a fraction strictly between 0 and 1",
                    self.pareto_h
                ),
            ));
        }
        if !(self.zipf_theta.is_finite() && self.zipf_theta > 0.0) {
            return Err(Error::config(
                "workload.zipf_theta",
                "must be a positive number",
            ));
        }
        if self.sequential_run_requests == 0 {
            return Err(Error::config(
                "workload.sequential_run_requests",
                "must be at least 1",
            ));
        }
        if self.request_sizes_bytes.is_empty() {
            return Err(Error::config(
                "workload.request_sizes_bytes",
                "needs at least one size",
            ));
        }
        if let Some(bad) = self
            .request_sizes_bytes
            .iter()
            .find(|&&s| s == 0 || s > u32::MAX as u64)
        {
            return Err(Error::config(
                "workload.request_sizes_bytes",
                format!("{bad} is not a request size between 1 byte and 4 GiB"),
            ));
        }
        if self.request_size_weights.len() != self.request_sizes_bytes.len() {
            return Err(Error::config(
                "workload.request_size_weights",
                format!(
                    "has {} weights for {} sizes in request_sizes_bytes",
                    self.request_size_weights.len(),
                    self.request_sizes_bytes.len()
                ),
            ));
        }
        if self
            .request_size_weights
            .iter()
            .any(|w| !(w.is_finite() && *w >= 0.0))
            || self.request_size_weights.iter().sum::<f64>() <= 0.0
        {
            return Err(Error::config(
                "workload.request_size_weights",
                "weights must be non-negative and not all zero",
            ));
        }
        Ok(())
    }
}

/// A workload being generated: an iterator of requests, deterministic in the seed.
pub struct Workload {
    cfg: WorkloadConfig,
    rng: Rng,
    zipf: Option<Zipf>,
    page_size: u64,
    /// First byte of the working set.
    base: u64,
    /// Pages in the working set.
    pages: u64,
    /// Cumulative request-size weights, normalised to end at 1.
    size_cdf: Vec<f64>,
    /// Multiplier of the bijection that scatters Zipf ranks over the working set.
    scatter: u64,
    issued: u64,
    time_ns: f64,
    seq_next_page: u64,
    seq_left: u64,
    /// `pareto`: the exponent ln h / ln(1 - h).
    pareto_exponent: f64,
    /// Journaling: the next journal write's offset within the journal, and the data write
    /// that follows the journal write just issued.
    journal_head: u64,
    pending: Option<Request>,
    /// `postmark`, `oltp`, `hadoop`: the application model.
    app: Option<apps::App>,
    /// `layout`: the next page of the working set to lay out (`pages` when done).
    layout_next: u64,
}

/// Builds the workload for a logical space of `logical_bytes` in pages of `page_size`.
pub fn generate(cfg: &WorkloadConfig, logical_bytes: u64, page_size: u32) -> Result<Workload> {
    cfg.validate()?;
    let page_size = page_size as u64;
    if !cfg.start_offset_bytes.is_multiple_of(page_size) || cfg.start_offset_bytes >= logical_bytes
    {
        return Err(Error::config(
            "workload.start_offset_bytes",
            format!(
                "{} must be page-aligned and inside the {logical_bytes}-byte logical space",
                cfg.start_offset_bytes
            ),
        ));
    }
    let room = logical_bytes - cfg.start_offset_bytes;
    let span = if cfg.working_set_bytes > 0 {
        cfg.working_set_bytes
    } else if cfg.working_set_fraction > 0.0 {
        (room as f64 * cfg.working_set_fraction) as u64 / page_size * page_size
    } else {
        room
    };
    if span > room {
        return Err(Error::config(
            "workload.working_set_bytes",
            format!(
                "{span} bytes from offset {} do not fit the {logical_bytes}-byte logical space",
                cfg.start_offset_bytes
            ),
        ));
    }
    let pages = span / page_size;
    let largest = *cfg
        .request_sizes_bytes
        .iter()
        .max()
        .expect("validated non-empty");
    let app = match cfg.kind {
        Kind::Postmark => apps::Postmark::new(&cfg.postmark, pages, page_size)
            .map(|p| apps::App::Postmark(Box::new(p))),
        Kind::Oltp => apps::Oltp::new(&cfg.oltp, pages, page_size).map(apps::App::Oltp),
        Kind::Hadoop => apps::Hadoop::new(&cfg.hadoop, pages, page_size).map(apps::App::Hadoop),
        _ => None,
    };
    if cfg.kind.is_app() && app.is_none() {
        return Err(Error::config(
            "workload.working_set_bytes",
            format!(
                "{span} bytes cannot hold the {:?} workload's files, tables or logs \
                 (a larger device or working set, or smaller workload settings)",
                cfg.kind
            ),
        ));
    }
    if pages == 0 || (!cfg.kind.is_app() && largest > pages * page_size) {
        return Err(Error::config(
            "workload.working_set_bytes",
            format!("{span} bytes cannot hold a request of {largest} bytes"),
        ));
    }
    let zipf = match cfg.kind {
        Kind::Zipf => Some(
            Zipf::new(pages, cfg.zipf_theta)
                .map_err(|m| Error::config("workload.zipf_theta", m))?,
        ),
        _ => None,
    };
    if cfg.journal_bytes > 0 {
        let (start, end) = (
            cfg.journal_offset_bytes,
            cfg.journal_offset_bytes + cfg.journal_bytes,
        );
        let set_end = cfg.start_offset_bytes + pages * page_size;
        if !start.is_multiple_of(page_size) || end > logical_bytes {
            return Err(Error::config(
                "workload.journal_offset_bytes",
                format!(
                    "the journal [{start}, {end}) must start on a page boundary and lie inside the \
                     {logical_bytes}-byte logical space"
                ),
            ));
        }
        if start < set_end && cfg.start_offset_bytes < end {
            return Err(Error::config(
                "workload.journal_offset_bytes",
                format!(
                    "the journal [{start}, {end}) overlaps the working set [{}, {set_end}); \
                     move the working set with workload.start_offset_bytes",
                    cfg.start_offset_bytes
                ),
            ));
        }
        let record = largest + cfg.journal_metadata_bytes;
        if record > cfg.journal_bytes {
            return Err(Error::config(
                "workload.journal_bytes",
                format!(
                    "{} bytes cannot hold a journal record of {record} bytes (the largest request \
                     plus workload.journal_metadata_bytes)",
                    cfg.journal_bytes
                ),
            ));
        }
    }
    let total: f64 = cfg.request_size_weights.iter().sum();
    let mut acc = 0.0;
    let size_cdf = cfg
        .request_size_weights
        .iter()
        .map(|w| {
            acc += w / total;
            acc
        })
        .collect();
    let mut rng = Rng::new(cfg.seed);
    let seq_next_page = match cfg.kind {
        Kind::Sequential => 0,
        _ => rng.below(pages),
    };
    Ok(Workload {
        cfg: cfg.clone(),
        rng,
        zipf,
        page_size,
        base: cfg.start_offset_bytes,
        pages,
        size_cdf,
        scatter: coprime_multiplier(pages),
        issued: 0,
        time_ns: 0.0,
        seq_next_page,
        seq_left: cfg.sequential_run_requests,
        pareto_exponent: cfg.pareto_h.ln() / (1.0 - cfg.pareto_h).ln(),
        journal_head: 0,
        pending: None,
        app,
        layout_next: if cfg.layout { 0 } else { pages },
    })
}

/// An odd multiplier near `n` times the golden ratio that shares no factor with `n`, so
/// that `rank * m mod n` is a permutation: Zipf's popular ranks land spread over the
/// working set (as in YCSB's scrambled Zipf) rather than packed at its start.
fn coprime_multiplier(n: u64) -> u64 {
    fn gcd(mut a: u64, mut b: u64) -> u64 {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    }
    let mut m = ((n as f64 * 0.618_033_988_749_895) as u64) | 1;
    while gcd(m, n) != 1 {
        m += 2;
    }
    m
}

impl Workload {
    fn size(&mut self) -> u64 {
        let sizes = &self.cfg.request_sizes_bytes;
        if sizes.len() == 1 {
            return sizes[0];
        }
        let u = self.rng.unit_f64();
        let i = self
            .size_cdf
            .iter()
            .position(|&c| u < c)
            .unwrap_or(sizes.len() - 1);
        sizes[i]
    }

    /// Pages a request of `size` bytes covers when it starts on a page boundary.
    fn span_pages(&self, size: u64) -> u64 {
        size.div_ceil(self.page_size)
    }

    /// The next page of the sequential stream, or a jump when the run is over.
    fn sequential_page(&mut self, span: u64) -> u64 {
        if self.seq_left == 0 {
            self.seq_next_page = self.rng.below(self.pages);
            self.seq_left = self.cfg.sequential_run_requests;
        }
        self.seq_left -= 1;
        if self.seq_next_page + span > self.pages {
            self.seq_next_page = 0;
        }
        let page = self.seq_next_page;
        self.seq_next_page += span;
        page
    }

    /// The page of popularity rank `rank`.
    #[inline]
    fn place(&self, rank: u64) -> u64 {
        if self.cfg.scatter_ranks {
            ((rank as u128 * self.scatter as u128) % self.pages as u128) as u64
        } else {
            rank
        }
    }

    fn random_page(&mut self) -> u64 {
        match self.cfg.kind {
            Kind::Sequential | Kind::Uniform => self.rng.below(self.pages),
            Kind::Zipf => {
                let rank = self
                    .zipf
                    .as_ref()
                    .expect("built for zipf")
                    .sample(&mut self.rng);
                self.place(rank)
            }
            Kind::Pareto => {
                let u = self.rng.unit_f64();
                let rank = ((self.pages - 1) as f64 * u.powf(self.pareto_exponent)) as u64;
                self.place(rank)
            }
            Kind::Postmark | Kind::Oltp | Kind::Hadoop => {
                unreachable!("application workloads place their own requests")
            }
            Kind::Hotcold => {
                let hot = ((self.pages as f64 * self.cfg.hot_space_fraction) as u64)
                    .clamp(1, self.pages - 1);
                if self.rng.unit_f64() < self.cfg.hot_access_fraction {
                    self.rng.below(hot)
                } else {
                    hot + self.rng.below(self.pages - hot)
                }
            }
        }
    }
}

impl Iterator for Workload {
    type Item = Result<Request>;

    fn next(&mut self) -> Option<Result<Request>> {
        if self.issued == self.cfg.requests {
            return None;
        }
        self.issued += 1;
        if let Some(data) = self.pending.take() {
            return Some(Ok(data));
        }
        if self.cfg.interarrival_ns > 0 {
            self.time_ns += self.rng.exponential(self.cfg.interarrival_ns as f64);
        }
        if self.layout_next < self.pages {
            let n = ((1 << 20) / self.page_size).clamp(1, self.pages - self.layout_next);
            let request = Request {
                time_ns: self.time_ns as u64,
                offset_bytes: self.base + self.layout_next * self.page_size,
                len_bytes: (n * self.page_size) as u32,
                op: Op::Write,
            };
            self.layout_next += n;
            return Some(Ok(request));
        }
        if let Some(app) = self.app.as_mut() {
            let r = app.next(&mut self.rng);
            return Some(Ok(Request {
                time_ns: self.time_ns as u64,
                offset_bytes: self.base + r.offset_bytes,
                ..r
            }));
        }
        let size = self.size();
        let span = self.span_pages(size);
        let sequential = self.cfg.kind == Kind::Sequential
            || (self.cfg.sequential_fraction > 0.0
                && self.rng.unit_f64() < self.cfg.sequential_fraction);
        let page = if sequential {
            self.sequential_page(span)
        } else {
            // A request that would run past the working set starts earlier instead.
            self.random_page().min(self.pages - span)
        };
        let u = self.rng.unit_f64();
        let op = if u < self.cfg.trim_ratio {
            Op::Trim
        } else if u < self.cfg.trim_ratio + self.cfg.read_ratio {
            Op::Read
        } else {
            Op::Write
        };
        let request = Request {
            time_ns: self.time_ns as u64,
            offset_bytes: self.base + page * self.page_size,
            len_bytes: size as u32,
            op,
        };
        if op == Op::Write && self.cfg.journal_bytes > 0 {
            // The transaction goes to the journal first; the data follows (checkpoint).
            let len = size + self.cfg.journal_metadata_bytes;
            if self.journal_head + len > self.cfg.journal_bytes {
                self.journal_head = 0;
            }
            let journal = Request {
                offset_bytes: self.cfg.journal_offset_bytes + self.journal_head,
                len_bytes: len as u32,
                ..request
            };
            self.journal_head += len.div_ceil(self.page_size) * self.page_size;
            self.pending = Some(request);
            return Some(Ok(journal));
        }
        Some(Ok(request))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.cfg.requests - self.issued) as usize;
        (left, Some(left))
    }
}

/// The built-in workloads: (name, description).
pub fn builtin_names() -> &'static [(&'static str, &'static str)] {
    &[
        (
            "default",
            "200k 4 KiB requests, 30% reads, half in sequential runs, half uniform random (as the benchmark trace)",
        ),
        ("seq-write", "sequential 4-128 KiB writes, wrapping around the whole device"),
        ("rand-write", "uniform random 4 KiB writes over the whole device"),
        ("rand-rw", "uniform random 4-64 KiB requests, 50% reads"),
        ("zipf", "Zipf (theta 0.99) 4 KiB requests, 30% reads"),
        ("hotcold", "80% of 4 KiB requests to 20% of the pages, 30% reads, 5% trims"),
        ("read-heavy", "Zipf (theta 0.8) 4-16 KiB requests, 90% reads"),
        (
            "pareto",
            "fio random writes with random_distribution=pareto:0.2 (80% of writes to 20% of the pages), 4 KiB",
        ),
        (
            "journal",
            "ext4 data=journal: Pareto 4 KiB data writes (30% reads), each write preceded by its journal record in an 8 MiB circular journal at offset 0",
        ),
        (
            "fio-rand-write",
            "FIO random write: uniform 4 KiB writes over a file of half the logical space",
        ),
        (
            "fio-seq-write",
            "FIO sequential write: 128 KiB writes over a file of half the logical space, again and again",
        ),
        (
            "postmark",
            "Postmark-like (heavy): 20,000 files of 4-64 KiB, create/delete and read/append transactions, ext4-style metadata journal, deletes trimmed",
        ),
        (
            "oltp",
            "OLTP-like: transactions of 4 reads and 2 updates of 8 KiB pages (80% to a fifth of the table) after a 4 KiB redo-log append, table of 3/4 of the logical space",
        ),
        (
            "hadoop",
            "Hadoop-like: 64 MiB files written and read sequentially in 1 MiB requests, oldest deleted (trimmed) at 70% full",
        ),
    ]
}

/// A built-in workload by name.
pub fn builtin(name: &str) -> Option<WorkloadConfig> {
    let base = WorkloadConfig::default();
    let w = match name {
        "default" => WorkloadConfig {
            requests: 200_000,
            sequential_fraction: 0.5,
            ..base
        },
        "seq-write" => WorkloadConfig {
            kind: Kind::Sequential,
            requests: 200_000,
            read_ratio: 0.0,
            request_sizes_bytes: vec![4096, 32768, 131072],
            request_size_weights: vec![0.5, 0.3, 0.2],
            ..base
        },
        "rand-write" => WorkloadConfig {
            requests: 200_000,
            read_ratio: 0.0,
            ..base
        },
        "rand-rw" => WorkloadConfig {
            requests: 200_000,
            read_ratio: 0.5,
            request_sizes_bytes: vec![4096, 16384, 65536],
            request_size_weights: vec![0.6, 0.3, 0.1],
            ..base
        },
        "zipf" => WorkloadConfig {
            kind: Kind::Zipf,
            requests: 200_000,
            ..base
        },
        "hotcold" => WorkloadConfig {
            kind: Kind::Hotcold,
            requests: 200_000,
            trim_ratio: 0.05,
            ..base
        },
        "read-heavy" => WorkloadConfig {
            kind: Kind::Zipf,
            requests: 200_000,
            read_ratio: 0.9,
            zipf_theta: 0.8,
            request_sizes_bytes: vec![4096, 8192, 16384],
            request_size_weights: vec![0.5, 0.3, 0.2],
            ..base
        },
        "pareto" => WorkloadConfig {
            kind: Kind::Pareto,
            requests: 200_000,
            read_ratio: 0.0,
            ..base
        },
        "journal" => WorkloadConfig {
            kind: Kind::Pareto,
            requests: 200_000,
            journal_bytes: 8 << 20,
            start_offset_bytes: 8 << 20,
            ..base
        },
        "fio-rand-write" => WorkloadConfig {
            requests: 200_000,
            read_ratio: 0.0,
            working_set_fraction: 0.5,
            ..base
        },
        "fio-seq-write" => WorkloadConfig {
            kind: Kind::Sequential,
            requests: 200_000,
            // One stream over the whole file, again and again.
            sequential_run_requests: 1 << 40,
            read_ratio: 0.0,
            request_sizes_bytes: vec![128 << 10],
            working_set_fraction: 0.5,
            ..base
        },
        "postmark" => WorkloadConfig {
            kind: Kind::Postmark,
            requests: 200_000,
            ..base
        },
        "oltp" => WorkloadConfig {
            kind: Kind::Oltp,
            requests: 200_000,
            working_set_fraction: 0.75,
            ..base
        },
        "hadoop" => WorkloadConfig {
            kind: Kind::Hadoop,
            requests: 200_000,
            ..base
        },
        _ => return None,
    };
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOGICAL: u64 = 64 << 20;

    fn collect(cfg: &WorkloadConfig) -> Vec<Request> {
        generate(cfg, LOGICAL, 4096)
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

    #[test]
    fn same_seed_same_requests_other_seed_other_requests() {
        let cfg = builtin("default").unwrap();
        let cfg = WorkloadConfig {
            requests: 1000,
            ..cfg
        };
        assert_eq!(collect(&cfg), collect(&cfg));
        assert_ne!(
            collect(&cfg),
            collect(&WorkloadConfig {
                seed: 1,
                ..cfg.clone()
            })
        );
    }

    #[test]
    fn every_builtin_stays_inside_the_device() {
        // The application workloads need room for their files (64 MiB Hadoop files).
        let logical = 1 << 30;
        for (name, _) in builtin_names() {
            let cfg = WorkloadConfig {
                requests: 5000,
                ..builtin(name).unwrap()
            };
            for r in generate(&cfg, logical, 4096).unwrap() {
                let r = r.unwrap();
                assert!(
                    r.offset_bytes + r.len_bytes as u64 <= logical,
                    "{name}: {r:?}"
                );
                assert_eq!(r.offset_bytes % 4096, 0);
            }
        }
    }

    fn pages(r: &Request) -> std::ops::Range<u64> {
        r.offset_bytes / 4096..(r.offset_bytes + r.len_bytes as u64).div_ceil(4096)
    }

    #[test]
    fn layout_writes_the_working_set_first() {
        let cfg = WorkloadConfig {
            requests: 100,
            working_set_fraction: 0.5,
            layout: true,
            read_ratio: 0.0,
            ..WorkloadConfig::default()
        };
        let reqs = collect(&cfg);
        // 32 MiB in 1 MiB writes, in order, then the random writes.
        for (i, r) in reqs[..32].iter().enumerate() {
            assert_eq!(
                (r.op, r.offset_bytes, r.len_bytes),
                (Op::Write, (i as u64) << 20, 1 << 20)
            );
        }
        assert!(reqs[32..]
            .iter()
            .all(|r| r.len_bytes == 4096 && r.offset_bytes < 32 << 20));
        // A size in bytes wins over the fraction.
        let cfg = WorkloadConfig {
            working_set_bytes: 1 << 20,
            ..cfg
        };
        assert!(collect(&cfg).iter().all(|r| r.offset_bytes < 1 << 20));
    }

    #[test]
    fn postmark_creates_deletes_and_journals_its_metadata() {
        let mut cfg = WorkloadConfig {
            requests: 30_000,
            ..builtin("postmark").unwrap()
        };
        cfg.postmark.files = 2000;
        let pm = &cfg.postmark;
        let reqs: Vec<Request> = generate(&cfg, 1 << 30, 4096)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        let journal_pages = pm.journal_bytes / 4096;
        let in_journal = |r: &Request| pages(r).end <= journal_pages;
        let journal = reqs.iter().filter(|r| in_journal(r)).count();
        let trims = reqs.iter().filter(|r| r.op == Op::Trim).count();
        let reads = reqs.iter().filter(|r| r.op == Op::Read).count();
        assert!(journal > 5000, "a commit per operation: {journal}");
        assert!(trims > 100 && reads > 100, "trims {trims} reads {reads}");
        // Data writes are whole files of 1 to 16 pages (or appends), outside the metadata.
        let data: Vec<&Request> = reqs
            .iter()
            .filter(|r| r.op == Op::Write && !in_journal(r) && r.len_bytes > 4096)
            .collect();
        assert!(data.iter().all(|r| r.len_bytes <= 16 * 4096));
        // A trimmed file's pages are not read again before they are written again.
        let mut live = std::collections::HashSet::new();
        for r in &reqs {
            match r.op {
                Op::Write => live.extend(pages(r)),
                Op::Trim => pages(r).for_each(|p| {
                    live.remove(&p);
                }),
                Op::Read => assert!(pages(r).all(|p| live.contains(&p)), "{r:?}"),
            }
        }
        assert!(cfg.postmark.validate().is_ok());
    }

    #[test]
    fn oltp_appends_its_log_and_updates_table_pages() {
        let cfg = WorkloadConfig {
            requests: 7000,
            ..builtin("oltp").unwrap()
        };
        let reqs: Vec<Request> = generate(&cfg, 1 << 30, 4096)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        let log_pages = cfg.oltp.log_bytes / 4096;
        let log: Vec<&Request> = reqs
            .iter()
            .filter(|r| r.offset_bytes / 4096 < log_pages)
            .collect();
        // One 4 KiB record per transaction of 7 requests, each after the last.
        assert_eq!(log.len(), 1000);
        assert!(log
            .windows(2)
            .all(|w| w[1].offset_bytes == w[0].offset_bytes + 4096));
        assert!(reqs
            .iter()
            .filter(|r| r.offset_bytes / 4096 >= log_pages)
            .all(|r| r.len_bytes == 8192));
    }

    #[test]
    fn hadoop_streams_whole_files_and_deletes_the_oldest() {
        let cfg = WorkloadConfig {
            requests: 20_000,
            ..builtin("hadoop").unwrap()
        };
        let reqs: Vec<Request> = generate(&cfg, 1 << 30, 4096)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert!(reqs
            .iter()
            .filter(|r| r.op != Op::Trim)
            .all(|r| r.len_bytes == 1 << 20));
        let trims: Vec<&Request> = reqs.iter().filter(|r| r.op == Op::Trim).collect();
        assert!(!trims.is_empty());
        assert!(trims.iter().all(|r| r.len_bytes == 64 << 20));
        // 16 slots of 64 MiB, at most 70% in use.
        let first = reqs.iter().position(|r| r.op == Op::Trim).unwrap();
        let files = reqs[..first].iter().filter(|r| r.op == Op::Write).count() / 64;
        assert_eq!(files, 11);
    }

    #[test]
    fn application_workloads_refuse_a_working_set_too_small() {
        let cfg = builtin("hadoop").unwrap();
        let err = generate(&cfg, 64 << 20, 4096).err().unwrap();
        assert!(err.to_string().contains("cannot hold"), "{err}");
    }

    #[test]
    fn mix_and_sizes_follow_the_configuration() {
        let cfg = WorkloadConfig {
            requests: 20_000,
            read_ratio: 0.25,
            trim_ratio: 0.1,
            request_sizes_bytes: vec![4096, 65536],
            request_size_weights: vec![3.0, 1.0],
            ..WorkloadConfig::default()
        };
        let reqs = collect(&cfg);
        let share = |f: &dyn Fn(&Request) -> bool| {
            reqs.iter().filter(|r| f(r)).count() as f64 / reqs.len() as f64
        };
        assert!((share(&|r| r.op == Op::Read) - 0.25).abs() < 0.02);
        assert!((share(&|r| r.op == Op::Trim) - 0.10).abs() < 0.02);
        assert!((share(&|r| r.len_bytes == 65536) - 0.25).abs() < 0.02);
    }

    #[test]
    fn working_set_bounds_the_addresses() {
        let cfg = WorkloadConfig {
            kind: Kind::Zipf,
            requests: 10_000,
            start_offset_bytes: 1 << 20,
            working_set_bytes: 4 << 20,
            ..WorkloadConfig::default()
        };
        for r in collect(&cfg) {
            assert!(r.offset_bytes >= 1 << 20 && r.offset_bytes + r.len_bytes as u64 <= 5 << 20);
        }
    }

    #[test]
    fn sequential_is_sequential() {
        let cfg = WorkloadConfig {
            kind: Kind::Sequential,
            requests: 100,
            ..WorkloadConfig::default()
        };
        let reqs = collect(&cfg);
        for (i, r) in reqs.iter().enumerate() {
            assert_eq!(r.offset_bytes, i as u64 * 4096);
        }
        assert!(reqs.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    }

    #[test]
    fn pareto_sends_most_requests_to_few_pages() {
        let cfg = WorkloadConfig {
            kind: Kind::Pareto,
            requests: 20_000,
            ..WorkloadConfig::default()
        };
        let mut counts = std::collections::BTreeMap::new();
        for r in collect(&cfg) {
            *counts.entry(r.offset_bytes).or_insert(0u64) += 1;
        }
        let mut by_count: Vec<u64> = counts.values().copied().collect();
        by_count.sort_unstable_by(|a, b| b.cmp(a));
        let pages = LOGICAL / 4096;
        let top: u64 = by_count.iter().take((pages / 5) as usize).sum();
        assert!(top as f64 / 20_000.0 > 0.78, "{top}");
    }

    #[test]
    fn journal_writes_precede_each_data_write() {
        let cfg = WorkloadConfig {
            requests: 3000,
            journal_bytes: 1 << 20,
            start_offset_bytes: 1 << 20,
            request_sizes_bytes: vec![4096, 16384],
            request_size_weights: vec![1.0, 1.0],
            ..WorkloadConfig::default()
        };
        let reqs = collect(&cfg);
        assert_eq!(reqs.len(), 3000);
        let mut i = 0;
        let mut journal_writes = 0;
        while i < reqs.len() {
            let r = &reqs[i];
            if r.offset_bytes < 1 << 20 {
                assert_eq!(r.op, Op::Write);
                assert!(r.offset_bytes + r.len_bytes as u64 <= 1 << 20);
                if let Some(data) = reqs.get(i + 1) {
                    assert_eq!(data.op, Op::Write);
                    assert!(data.offset_bytes >= 1 << 20);
                    assert_eq!(r.len_bytes, data.len_bytes + 8192);
                }
                journal_writes += 1;
                i += 2;
            } else {
                assert_ne!(r.op, Op::Write, "a data write without its journal record");
                i += 1;
            }
        }
        assert!(journal_writes > 1000);
        let overlapping = WorkloadConfig {
            start_offset_bytes: 0,
            ..cfg
        };
        let err = generate(&overlapping, LOGICAL, 4096)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("workload.journal_offset_bytes"), "{err}");
    }

    #[test]
    fn hot_pages_get_their_share() {
        let cfg = WorkloadConfig {
            kind: Kind::Hotcold,
            requests: 20_000,
            ..WorkloadConfig::default()
        };
        let hot_end = (LOGICAL as f64 * 0.2) as u64;
        let reqs = collect(&cfg);
        let hot =
            reqs.iter().filter(|r| r.offset_bytes < hot_end).count() as f64 / reqs.len() as f64;
        assert!((hot - 0.8).abs() < 0.02, "{hot}");
    }

    #[test]
    fn bad_settings_name_their_key() {
        let bad = |cfg: WorkloadConfig, key: &str| {
            let err = generate(&cfg, LOGICAL, 4096)
                .err()
                .expect("should fail")
                .to_string();
            assert!(err.contains(key), "{err}");
        };
        bad(
            WorkloadConfig {
                read_ratio: 1.5,
                ..Default::default()
            },
            "workload.read_ratio",
        );
        bad(
            WorkloadConfig {
                read_ratio: 0.8,
                trim_ratio: 0.5,
                ..Default::default()
            },
            "workload.trim_ratio",
        );
        bad(
            WorkloadConfig {
                request_size_weights: vec![1.0, 2.0],
                ..Default::default()
            },
            "workload.request_size_weights",
        );
        bad(
            WorkloadConfig {
                working_set_bytes: LOGICAL * 2,
                ..Default::default()
            },
            "workload.working_set_bytes",
        );
        bad(
            WorkloadConfig {
                start_offset_bytes: 100,
                ..Default::default()
            },
            "workload.start_offset_bytes",
        );
        bad(
            WorkloadConfig {
                kind: Kind::Zipf,
                zipf_theta: -1.0,
                ..Default::default()
            },
            "workload.zipf_theta",
        );
    }
}
