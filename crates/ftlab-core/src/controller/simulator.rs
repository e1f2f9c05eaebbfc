//! The host layer and the replay loop: splits requests into logical pages, runs them
//! through the write buffer and the FTL, times them, checks every read in verification
//! mode, and gathers the metrics.
//!
//! Page semantics: a request touches every page its byte range overlaps. A write that
//! covers only part of a page first reads the page (read-modify-write); a TRIM discards
//! only the pages it covers entirely. Each page write gets the next host write sequence
//! number, which stands in for its data.
//!
//! Timing: in open loop a request arrives at its timestamp times `replay.time_scale`; in
//! closed loop it is issued as soon as fewer than `replay.queue_depth` requests are
//! outstanding. Its command takes the host interface's time, and a write's data crosses
//! the link ([`crate::controller::interface`]). A request completes when its page reads are done and
//! their data has crossed the link back, its writes are acknowledged (buffered writes once
//! copied into the buffer's DRAM in a free slot: at once while the buffer has room, else
//! when the page flushed from that slot has crossed the channel; unbuffered writes when
//! programmed) and the foreground GC it triggered is over. Trims take only the command.
//!
//! The buffer writes back in the background (`buffer.destage = "watermark"`): from its
//! high watermark down to its low one, in the idle time before each request.

use crate::controller::breakdown::{BreakdownStats, LatencyBreakdown};
use crate::controller::buffer::Destage;
use crate::controller::buffer::{Buffered, WriteBuffer};
use crate::controller::interface::Front;
use crate::controller::metrics::{
    FaultReport, Finished, GcReport, HostCounters, Latency, LatencyReport, LoadReport, MediaReport,
    Metrics, PreconditionReport, Sampler, SlcReport,
};
use crate::controller::settings::{
    ControllerConfig, PreconditionConfig, PreconditionMode, ReplayMode,
};
use crate::controller::Origin;
use crate::device::breakdown::{Part, Parts};
use crate::device::geometry::{Layout, Nand};
use crate::device::nand::{Cause, Flash, FlashStats, Oob, ServedPage};
use crate::device::DeviceConfig;
use crate::error::{Error, Result};
use crate::ftl::{Ftl, SectorSource, SECTOR_BYTES};
use crate::request::{Op, Request};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// What a page read returned.
#[derive(Clone, Copy, Debug)]
enum Served {
    Unmapped,
    Buffer(u64),
    Flash(Oob),
}

fn describe_expected(seq: u64) -> String {
    if seq == 0 {
        "nothing (never written, or trimmed)".into()
    } else {
        format!("host write #{seq}")
    }
}

fn describe_served(served: Served) -> String {
    match served {
        Served::Unmapped => "nothing (unmapped)".into(),
        Served::Buffer(seq) => format!("host write #{seq} from the write buffer"),
        Served::Flash(oob) if oob.lpa == crate::device::nand::NONE => {
            format!(
                "a flash page holding no logical page (sequence #{})",
                oob.seq
            )
        }
        Served::Flash(oob) => format!(
            "host write #{} of logical page {} from flash",
            oob.seq, oob.lpa
        ),
    }
}

pub struct Simulator<F: Ftl> {
    layout: Layout,
    page: PageSize,
    mode: ReplayMode,
    time_scale: f64,
    queue_depth: usize,
    sample_every: u64,
    flash: Flash,
    ftl: F,
    buffer: Option<WriteBuffer>,
    /// Watermark destaging (`buffer.destage`): it starts once this many pages are dirty...
    destage_high: Option<usize>,
    /// ...and stops once at most this many are.
    destage_low: usize,
    /// Destaging has started and not yet reached the low watermark.
    destaging: bool,
    /// The host interface and the buffer's DRAM.
    front: Front,
    /// Verification: the sequence number of the last write to each logical page.
    shadow: Option<Vec<u64>>,
    /// The last host write sequence number given (64 bits: it never wraps; 0 is "never
    /// written").
    last_seq: u64,
    host: HostCounters,
    read_latency: Latency,
    write_latency: Latency,
    /// Where the requests' time went ([`crate::device::breakdown`]).
    read_breakdown: BreakdownStats,
    write_breakdown: BreakdownStats,
    /// The last timed request's latency (its parts: the flash's, [`Flash::request_parts`]).
    last_latency: u64,
    /// Closed loop: completion times of the outstanding requests.
    outstanding: BinaryHeap<Reverse<u64>>,
    last_issue: u64,
    first_arrival: Option<u64>,
    last_done: u64,
    sampler: Sampler,
    /// Requests left until the next time-series sample.
    until_sample: u64,
    last_time: u64,
    /// The device model's settings (the timing model restarts from them after
    /// preconditioning).
    device: DeviceConfig,
    precondition: Option<PreconditionReport>,
    /// Completion time of the last request.
    request_done: u64,
    /// When recording ([`Simulator::record_served`]): what each page of the last host read
    /// served (the sequence number of its write, `None` if unmapped).
    served: Option<Vec<Option<u64>>>,
    bursts: BurstMeter,
    /// The sector path of a sector-packing scheme ([`Ftl::packs_sectors`]), `None` for
    /// every other.
    sectors: Option<Box<SectorPath>>,
}

/// The simulator's side of a sector-packing scheme: partial-page writes go to the scheme
/// as sectors, reads come back sector by sector, and verification checks every sector.
#[derive(Debug, Default)]
struct SectorPath {
    /// Sectors per page.
    per_page: u32,
    /// Verification: the logical pages whose sectors hold different writes, each sector's
    /// sequence number (the others' sectors all hold the page's `shadow` entry).
    mixed: std::collections::HashMap<u32, Box<[u64]>>,
    /// What the last page read served, sector by sector.
    read: Vec<SectorSource>,
}

impl SectorPath {
    /// The write sector `sector` of `lpa` should hold, its page's shadow entry being `page`.
    #[inline]
    fn expected(&self, lpa: u32, sector: u32, page: u64) -> u64 {
        self.mixed
            .get(&lpa)
            .map_or(page, |sectors| sectors[sector as usize])
    }
}

/// Finds bursts that saturate the device while the run as a whole does not: the work each
/// die was given per window of arrival time (work is charged to a die when the request
/// that causes it arrives, so a window's share is the load offered in it), and the
/// requests that waited in a queue (took longer than a whole block's reclaim).
#[derive(Debug, Default)]
struct BurstMeter {
    /// End of the current window, in ns of arrival time.
    end: u64,
    /// The work given to each die when the current window began.
    busy_at_start: Vec<u64>,
    /// The most work one die was given in one window, in ns.
    peak_ns: u64,
    /// Requests slower than `queue_limit_ns`.
    queued: u64,
    /// Longer than one block's whole reclaim ([`crate::device::timing::block_reclaim_ns`]): no
    /// request on an unsaturated device waits that long.
    queue_limit_ns: u64,
}

impl BurstMeter {
    /// Windows of one second of (scaled) arrival time.
    const WINDOW_NS: u64 = 1_000_000_000;

    fn new(nand: &Nand, layout: &Layout) -> Self {
        BurstMeter {
            queue_limit_ns: crate::device::timing::block_reclaim_ns(nand, layout),
            ..BurstMeter::default()
        }
    }

    /// Closes the current window if `arrival` lies beyond it.
    #[inline]
    fn arrive(&mut self, arrival: u64, first_arrival: u64, flash: &Flash) {
        if arrival >= self.end {
            self.close(flash);
            self.end = arrival - (arrival - first_arrival) % Self::WINDOW_NS + Self::WINDOW_NS;
        }
    }

    fn close(&mut self, flash: &Flash) {
        let busy = flash.die_work_ns();
        let at_start = |d: usize| self.busy_at_start.get(d).copied().unwrap_or(0);
        let peak = busy
            .iter()
            .enumerate()
            .map(|(d, &b)| b - at_start(d))
            .max()
            .unwrap_or(0);
        self.peak_ns = self.peak_ns.max(peak);
        self.busy_at_start = busy;
    }
}

/// The page size, for turning byte ranges into pages: by shifts when it is a power of two
/// (a division costs tens of cycles, three or four of them per request).
#[derive(Clone, Copy)]
struct PageSize {
    bytes: u64,
    shift: Option<u32>,
}

impl PageSize {
    fn new(bytes: u32) -> Self {
        PageSize {
            bytes: bytes as u64,
            shift: bytes.is_power_of_two().then(|| bytes.trailing_zeros()),
        }
    }

    /// The page holding byte `b`.
    #[inline(always)]
    fn floor(self, b: u64) -> u64 {
        match self.shift {
            Some(s) => b >> s,
            None => b / self.bytes,
        }
    }

    /// The first page starting at or after byte `b`.
    #[inline(always)]
    fn ceil(self, b: u64) -> u64 {
        match self.shift {
            Some(s) => (b >> s) + (b & ((1 << s) - 1) != 0) as u64,
            None => b.div_ceil(self.bytes),
        }
    }

    #[inline(always)]
    fn aligned(self, b: u64) -> bool {
        match self.shift {
            Some(s) => b & ((1 << s) - 1) == 0,
            None => b.is_multiple_of(self.bytes),
        }
    }
}

impl<F: Ftl> Simulator<F> {
    pub fn new(
        cfg: &ControllerConfig,
        layout: &Layout,
        ftl: F,
        flash: Flash,
        verify: bool,
    ) -> Self {
        let buffer = WriteBuffer::new(&cfg.buffer, layout.page_size as u64);
        let pages = |share: f64| share * buffer.as_ref().map_or(0, |b| b.capacity()) as f64;
        let watermark = buffer.is_some() && cfg.buffer.destage == Destage::Watermark;
        Simulator {
            layout: *layout,
            page: PageSize::new(layout.page_size),
            mode: cfg.replay.mode,
            time_scale: cfg.replay.time_scale,
            queue_depth: cfg.replay.queue_depth as usize,
            sample_every: cfg.metrics.sample_every_requests,
            flash,
            ftl,
            // At least one page dirty, or destaging would never stop.
            destage_high: watermark
                .then(|| (pages(cfg.buffer.high_watermark).ceil() as usize).max(1)),
            destage_low: pages(cfg.buffer.low_watermark).floor() as usize,
            buffer,
            destaging: false,
            front: Front::new(cfg),
            shadow: verify.then(|| vec![0; layout.logical_pages as usize]),
            last_seq: 0,
            host: HostCounters::default(),
            read_latency: Latency::default(),
            write_latency: Latency::default(),
            read_breakdown: BreakdownStats::default(),
            write_breakdown: BreakdownStats::default(),
            last_latency: 0,
            outstanding: BinaryHeap::with_capacity(cfg.replay.queue_depth as usize + 1),
            last_issue: 0,
            first_arrival: None,
            last_done: 0,
            sampler: Sampler::default(),
            until_sample: cfg.metrics.sample_every_requests,
            last_time: 0,
            device: cfg.device.clone(),
            precondition: None,
            request_done: 0,
            served: None,
            bursts: BurstMeter::new(&cfg.device.nand, layout),
            sectors: None,
        }
        .with_sector_path()
    }

    /// Turns the sector path on for a scheme that packs sectors, without a write buffer
    /// (its slots are pages) or a page store (it serves pages).
    fn with_sector_path(mut self) -> Self {
        if self.ftl.packs_sectors() && self.buffer.is_none() && !self.flash.has_sink() {
            self.sectors = Some(Box::new(SectorPath {
                per_page: (self.layout.page_size as u64 / SECTOR_BYTES).max(1) as u32,
                ..SectorPath::default()
            }));
        }
        self
    }

    /// Records what each page of every host read served, for [`Simulator::served`].
    pub fn record_served(&mut self, on: bool) {
        self.served = on.then(Vec::new);
    }

    /// With [`Simulator::record_served`]: per page of the last read request, the sequence
    /// number of the write it served (`None`: never written or trimmed).
    pub fn served(&self) -> &[Option<u64>] {
        self.served.as_deref().unwrap_or(&[])
    }

    /// After a restart: host writes go on from `last_seq`, and the shadow copy (with
    /// verification) starts from what each logical page holds (`seq_of`).
    pub fn resume(&mut self, last_seq: u64, seq_of: Vec<u64>) {
        self.last_seq = last_seq;
        if let Some(shadow) = self.shadow.as_mut() {
            *shadow = seq_of;
        }
        if let Some(sectors) = self.sectors.as_mut() {
            sectors.mixed.clear();
        }
    }

    /// The last host write sequence number given.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Completion time of the last request, in simulated ns (0 without timing).
    pub fn last_done_ns(&self) -> u64 {
        self.request_done
    }

    /// The last timed request: its latency and where its time went (the parts add up to
    /// the latency), until the next request.
    pub fn last_breakdown(&self) -> (u64, &Parts) {
        (self.last_latency, self.flash.request_parts())
    }

    pub fn flash(&self) -> &Flash {
        &self.flash
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn ftl(&self) -> &F {
        &self.ftl
    }

    /// The scheme and the flash (tests that drive the scheme directly).
    #[cfg(test)]
    pub(crate) fn parts_mut(&mut self) -> (&mut F, &mut Flash) {
        (&mut self.ftl, &mut self.flash)
    }

    pub fn host(&self) -> &HostCounters {
        &self.host
    }

    fn arrival(&mut self, req: &Request) -> u64 {
        match self.mode {
            // Unscaled, the timestamp as it is: exact beyond 2^53 ns, and no rounding call
            // per request (5% of a page-FTL replay's instructions).
            ReplayMode::Open if self.time_scale == 1.0 => req.time_ns,
            ReplayMode::Open => (req.time_ns as f64 * self.time_scale).round() as u64,
            ReplayMode::Closed => {
                let mut issue = self.last_issue;
                if self.outstanding.len() >= self.queue_depth {
                    if let Some(Reverse(done)) = self.outstanding.pop() {
                        issue = issue.max(done);
                    }
                }
                self.last_issue = issue;
                issue
            }
        }
    }

    /// Simulates one request the host stack issued on its own behalf or the application's
    /// ([`crate::host`]): the flash operations serving it are counted under the origin's
    /// cause, and its pages written as the stack's.
    pub fn submit_from(&mut self, req: &Request, origin: Origin) -> Result<()> {
        if origin == Origin::Application {
            return self.submit(req);
        }
        let written = self.host.pages_written;
        self.flash.set_host_cause(origin.cause());
        let background = origin == Origin::IdleCleaning;
        self.flash.set_host_background(background);
        let result = self.submit(req);
        self.flash.set_host_background(false);
        self.flash.set_host_cause(Cause::Host);
        self.host.stack_requests += 1;
        self.host.stack_pages_written += self.host.pages_written - written;
        result
    }

    /// Simulates one request.
    pub fn submit(&mut self, req: &Request) -> Result<()> {
        let index = self.host.requests;
        self.host.requests += 1;
        let page = self.page;
        let start = req.offset_bytes;
        let end = start.saturating_add(req.len_bytes as u64);
        let first = page.floor(start);
        let last = page.ceil(end); // exclusive
        if last > self.layout.logical_pages {
            return Err(Error::OutOfRange {
                request: index + 1,
                lpa: last - 1,
                logical_pages: self.layout.logical_pages,
            });
        }
        let timed = self.flash.is_timed();
        let arrival = if timed { self.arrival(req) } else { 0 };
        if !timed {
            // The media's clock (retention) follows the trace's time all the same.
            self.flash.set_untimed_time(req.time_ns);
        }
        // Mapping-only runs have no time: every gap between requests is long enough.
        if index > 0 && (!timed || arrival > self.last_time) {
            self.fill_idle_gap(arrival)?;
        }
        // When the command is fetched; a write's flash work also waits for its data.
        let mut begin = arrival;
        if timed {
            let first = *self.first_arrival.get_or_insert(arrival);
            if self.mode == ReplayMode::Open {
                self.bursts.arrive(arrival, first, &self.flash);
            }
            begin = self.front.command(arrival);
            if req.op == Op::Write {
                begin = self.front.data_in(begin, req.len_bytes as u64);
            }
            self.flash.begin_request(begin);
        }
        // Pages answered from the controller's DRAM: the buffer's, or zeros for unmapped.
        let dram_pages = self.host.buffer_read_hits + self.host.unmapped_reads;
        self.ftl
            .begin_request(first as u32, (last - first) as u32, req.op);
        match req.op {
            Op::Read => {
                self.host.read_requests += 1;
                self.host.bytes_read += req.len_bytes as u64;
                if let Some(served) = self.served.as_mut() {
                    served.clear();
                }
                for lpa in first..last {
                    self.host.pages_read += 1;
                    self.read_page(index, lpa as u32, true)?;
                }
            }
            Op::Write => {
                self.host.write_requests += 1;
                self.host.bytes_written += req.len_bytes as u64;
                for lpa in first..last {
                    let partial = (lpa == first && !page.aligned(start))
                        || (lpa == last - 1 && !page.aligned(end));
                    if partial {
                        self.host.partial_page_writes += 1;
                        if self.sectors.is_some() {
                            self.write_sectors(lpa as u32, start, end)?;
                            continue;
                        }
                        self.read_page(index, lpa as u32, false)?;
                    }
                    self.write_page(lpa as u32)?;
                }
            }
            Op::Trim => {
                self.host.trim_requests += 1;
                for lpa in page.ceil(start)..page.floor(end) {
                    self.trim_page(lpa as u32)?;
                }
            }
        }
        if req.op == Op::Write {
            self.note_dirty();
        }
        if timed {
            let mut done = self.flash.request_done();
            // The flash's parts, completed in place (not copied: a request's parts are a
            // few of 19 slots, and copying them all cost more than summing them).
            let parts = self.flash.request_parts_mut();
            parts.add(Part::HostInterface, begin - arrival);
            let mut then = |to: u64, part: Part, done: &mut u64| {
                parts.add(part, to.saturating_sub(*done));
                *done = to.max(*done);
            };
            let bytes = req.len_bytes as u64;
            match req.op {
                // Into the buffer's DRAM once its slots are free.
                Op::Write if self.buffer.is_some() => {
                    then(self.front.dram(done, bytes), Part::Dram, &mut done)
                }
                Op::Write | Op::Trim => {}
                Op::Read => {
                    let pages = self.host.buffer_read_hits + self.host.unmapped_reads - dram_pages;
                    if pages > 0 {
                        let dram = self.front.dram(begin, pages * self.page.bytes);
                        then(dram, Part::Dram, &mut done);
                    }
                    then(
                        self.front.data_out(done, bytes),
                        Part::HostInterface,
                        &mut done,
                    );
                }
            }
            let latency = done - arrival;
            if latency > self.bursts.queue_limit_ns {
                self.bursts.queued += 1;
            }
            debug_assert_eq!(parts.iter().sum::<u64>(), latency, "{parts:?}");
            match req.op {
                Op::Read => {
                    self.read_latency.record(latency);
                    self.read_breakdown.record(parts);
                }
                Op::Write => {
                    self.write_latency.record(latency);
                    self.write_breakdown.record(parts);
                }
                Op::Trim => {}
            }
            self.last_latency = latency;
            if self.mode == ReplayMode::Closed {
                self.outstanding.push(Reverse(done));
            }
            self.last_done = self.last_done.max(done);
            self.request_done = done;
            self.last_time = arrival;
        }
        self.until_sample -= 1;
        if self.until_sample == 0 {
            self.until_sample = self.sample_every;
            self.sample();
        }
        self.idle()
    }

    /// Background work in the gap before a request arriving at `arrival`: the scheme's idle
    /// hook runs again as long as it reclaims blocks and its dies' queued work starts before
    /// the arrival ([`Flash::set_idle_until`]; in mapping-only runs, until no unit is below
    /// its soft threshold), so that a controller with idle time spends it on GC instead of
    /// one victim per request. (The hook's operations are queued from the previous
    /// request's cursor; host operations go ahead of what is left.)
    #[inline(always)]
    fn fill_idle_gap(&mut self, arrival: u64) -> Result<()> {
        if self.destaging {
            self.destage(arrival)?;
        }
        if !self.ftl.has_idle_work() {
            return Ok(());
        }
        self.flash.set_idle_until(arrival);
        // Most gaps: one round that reclaims nothing. (The error, a large value, is moved
        // only on its own path.)
        let before = self.flash.stats.reclaims();
        if let Err(e) = self.idle() {
            self.flash.set_idle_until(0);
            return Err(e);
        }
        if self.flash.stats.reclaims() != before {
            return self.more_idle_rounds();
        }
        self.flash.set_idle_until(0);
        Ok(())
    }

    /// [`Simulator::fill_idle_gap`] after a round that reclaimed.
    #[inline(never)]
    fn more_idle_rounds(&mut self) -> Result<()> {
        // Every round reclaims at least one block of a unit below its soft threshold, so
        // the rounds are bounded by the blocks; the cap only guards against a scheme whose
        // GC frees nothing.
        let mut rounds = self.layout.total_blocks;
        let result = loop {
            let before = self.flash.stats.reclaims();
            if let Err(e) = self.idle() {
                break Err(e);
            }
            rounds = rounds.saturating_sub(1);
            if self.flash.stats.reclaims() == before || rounds == 0 {
                break Ok(());
            }
        };
        self.flash.set_idle_until(0);
        result
    }

    /// Starts watermark destaging once the high watermark of the buffer is dirty.
    #[inline]
    fn note_dirty(&mut self) {
        if let (Some(high), Some(buffer)) = (self.destage_high, self.buffer.as_ref()) {
            self.destaging |= buffer.dirty_len() >= high;
        }
    }

    /// Watermark destaging in the gap before a request arriving at `until` (mapping-only
    /// runs: all of it): flush batches as a full buffer's (`buffer.flush_bytes`),
    /// programmed as the device's own work (no request waits for them; their slots go to
    /// the back of the free queue), until at most the low watermark is dirty or, timed, a
    /// batch's data reaches its die only at or after `until`: the dies are then busy up to
    /// the next request, and a controller destages in their idle time.
    #[inline(never)]
    fn destage(&mut self, until: u64) -> Result<()> {
        let timed = self.flash.is_timed();
        let Some(buffer) = self.buffer.as_mut() else {
            return Ok(());
        };
        while buffer.dirty_len() > self.destage_low {
            if timed {
                // From the previous request's arrival: the gap's start.
                self.flash.begin_request(self.last_time);
            }
            self.flash.set_flushing(true);
            let batch = buffer.evict();
            self.host.pages_destaged += batch.len() as u64;
            let result = self.ftl.write_batch(batch, &mut self.flash);
            self.flash.set_flushing(false);
            result?;
            let transfers = self.flash.host_transfers();
            let reached = transfers.iter().map(|&(t, _)| t).max().unwrap_or(0);
            buffer.freed_at(transfers);
            buffer.defer_freed();
            if timed && reached >= until {
                return Ok(());
            }
        }
        self.destaging = false;
        Ok(())
    }

    /// The scheme's background work after a request (see [`Ftl::idle`]).
    #[inline]
    fn idle(&mut self) -> Result<()> {
        if !self.ftl.has_idle_work() {
            return Ok(());
        }
        self.flash.set_background(true);
        let result = self.ftl.idle(&mut self.flash);
        self.flash.set_background(false);
        result
    }

    /// Preconditions the device before the measured run (`precondition.*`): the pages in
    /// `warmup` (those the source reads before writing them) are written first, then with
    /// `fill` every logical page once in address order, and with `steady` random pages in
    /// windows until the write amplification of the last `windows` windows is steady
    /// ([`is_steady`]; with GC running), or `max_capacity_writes` times the logical
    /// capacity has been written. Writes go through the write buffer, as the host's do
    /// (drained at the end), untimed, with the scheme's background work between them;
    /// verification follows them. Afterwards every counter, latency and time series
    /// starts from zero and every die is idle at time 0: preconditioning is reported only
    /// in the report's `precondition` section.
    ///
    /// `progress(pages written, share done)` is called every 65,536 pages; returning false
    /// stops with an error.
    pub fn precondition(
        &mut self,
        cfg: &PreconditionConfig,
        warmup: &[u32],
        progress: &mut dyn FnMut(u64, f64) -> bool,
    ) -> Result<()> {
        let logical = self.layout.logical_pages;
        self.precondition_with(
            cfg,
            warmup,
            logical,
            &mut |sim: &mut Self, lpa| {
                let Some(lpa) = lpa else {
                    return Ok(0);
                };
                // Through the write buffer, as a host write goes (a scheme sees the flushes
                // it would see in the run: LeaFTL learns sorted runs).
                sim.write_page(lpa)?;
                sim.note_dirty();
                if sim.destaging {
                    sim.destage(u64::MAX)?;
                }
                sim.idle()?;
                Ok(0)
            },
            progress,
        )
    }

    /// [`Simulator::precondition`] over `logical` pages, each page written by `write`
    /// (a host stack's, through its file system), which returns how many times the writer
    /// has reclaimed space on its own so far (a file system's cleaning; 0 for the device
    /// alone): a window counts towards steady state once the device's GC or the writer has
    /// reclaimed. At the end `write` is called with None (the writer's own idle-time work,
    /// [`crate::host::HostStack::settle`]), then the device settles.
    pub fn precondition_with(
        &mut self,
        cfg: &PreconditionConfig,
        warmup: &[u32],
        logical: u64,
        write: &mut dyn FnMut(&mut Self, Option<u32>) -> Result<u64>,
        progress: &mut dyn FnMut(u64, f64) -> bool,
    ) -> Result<()> {
        let timed = self.flash.pause_timing();
        // Pages preconditioning writes at most, for the progress fraction.
        let expected = match cfg.mode {
            PreconditionMode::None => warmup.len() as u64,
            PreconditionMode::Fill => logical,
            PreconditionMode::Steady => logical + (cfg.max_capacity_writes * logical as f64) as u64,
        }
        .max(1);
        let mut report = PreconditionReport::new(cfg.mode);
        let mut reclaims = 0u64;
        let mut step = |sim: &mut Self, lpa: Option<u32>| -> Result<u64> {
            let done = sim.host.pages_written;
            if done.is_multiple_of(1 << 16)
                && done > 0
                && !progress(done, done as f64 / expected as f64)
            {
                return Err(Error::Usage("interrupted".into()));
            }
            write(sim, lpa)
        };
        let result = (|| -> Result<()> {
            if cfg.mode == PreconditionMode::None && cfg.warmup {
                for &lpa in warmup {
                    reclaims = step(self, Some(lpa))?;
                }
                report.warmup_pages = warmup.len() as u64;
            }
            if cfg.mode == PreconditionMode::None {
                return Ok(());
            }
            for lpa in 0..logical as u32 {
                reclaims = step(self, Some(lpa))?;
            }
            if cfg.mode != PreconditionMode::Steady {
                return step(self, None).map(drop);
            }
            let window = if cfg.window_pages == 0 {
                (logical / 8).max(1)
            } else {
                cfg.window_pages
            };
            let limit = (cfg.max_capacity_writes * logical as f64) as u64;
            let mut rng = crate::rng::Rng::new(cfg.seed);
            let programs_before = self.flash.stats.total_programs();
            let mut written = 0u64;
            let keep = cfg.windows as usize;
            while written < limit {
                let (programs, gcs) = (
                    self.flash.stats.total_programs(),
                    self.flash.stats.reclaims(),
                );
                let reclaimed = reclaims;
                for _ in 0..window {
                    reclaims = step(self, Some(rng.below(logical) as u32))?;
                }
                written += window;
                let waf = (self.flash.stats.total_programs() - programs) as f64 / window as f64;
                report.window_waf.push(waf);
                let gc_ran = self.flash.stats.reclaims() > gcs || reclaims > reclaimed;
                let last = &report.window_waf[report.window_waf.len().saturating_sub(keep)..];
                if gc_ran && last.len() == keep && is_steady(last, cfg) {
                    report.steady = true;
                    break;
                }
            }
            if written > 0 {
                report.waf = Some(
                    (self.flash.stats.total_programs() - programs_before) as f64 / written as f64,
                );
            }
            step(self, None).map(drop)
        })()
        // The measured run starts with an empty buffer and background GC caught up.
        .and_then(|()| self.settle());
        result?;
        report.host_pages_written = self.host.pages_written;
        report.flash_programs = self.flash.stats.total_programs();
        report.gc_invocations = self.flash.stats.gc_invocations;
        if report.waf.is_none() && report.host_pages_written > 0 {
            report.waf = Some(report.flash_programs as f64 / report.host_pages_written as f64);
        }
        self.start_measured_run(timed, report);
        Ok(())
    }

    /// The end of preconditioning: the buffer drained, then background GC and folding given
    /// the idle time to catch up (rounds until no unit reclaims or folds), as a
    /// device left idle between preconditioning and the measured run would. Without it the
    /// GC that the drain's writes owe would fall into the measured run's first idle gaps
    /// and be charged to a trace that may write only a few pages (a WAF in the thousands).
    fn settle(&mut self) -> Result<()> {
        self.drain()?;
        // An idle gap without end: the SLC cache folds too.
        self.flash.set_idle_until(u64::MAX);
        self.more_idle_rounds()
    }

    /// Every counter, latency and time series from zero, every die idle at time 0.
    fn start_measured_run(&mut self, timed: bool, report: PreconditionReport) {
        self.flash.stats = FlashStats::default();
        self.host = HostCounters::default();
        self.read_breakdown = BreakdownStats::default();
        self.write_breakdown = BreakdownStats::default();
        self.ftl.reset_counters();
        self.sampler = Sampler::default();
        self.until_sample = self.sample_every;
        self.bursts = BurstMeter::new(&self.device.nand, &self.layout);
        if timed {
            self.flash.restart_timing(&self.device);
        }
        // The device idles between preconditioning and the run (`--age`): its data ages.
        self.flash.age_media(self.device.media.age_ns);
        self.precondition = Some(report);
    }

    /// Workload-dependent preconditioning (`precondition.workload_requests`): `run`
    /// replays requests of the run's own source, untimed, and returns how many it replayed
    /// and the application pages they wrote; the buffer is drained, the report's
    /// precondition section records them, and the measured run starts afresh.
    pub fn precondition_workload(
        &mut self,
        run: &mut dyn FnMut(&mut Self) -> Result<(u64, u64)>,
    ) -> Result<()> {
        let timed = self.flash.pause_timing();
        let programs = self.flash.stats.total_programs();
        let (requests, app_pages) = run(self)?;
        self.settle()?;
        let mut report = self
            .precondition
            .take()
            .unwrap_or_else(|| PreconditionReport::new(PreconditionMode::None));
        let flash_programs = self.flash.stats.total_programs() - programs;
        report.workload_requests = requests;
        report.workload_waf = (app_pages > 0).then(|| flash_programs as f64 / app_pages as f64);
        report.host_pages_written += self.host.pages_written;
        report.flash_programs += flash_programs;
        report.gc_invocations += self.flash.stats.gc_invocations;
        self.start_measured_run(timed, report);
        Ok(())
    }

    fn sample(&mut self) {
        let ftl = &self.ftl;
        self.sampler.sample(
            self.host.requests,
            self.last_time,
            &self.host,
            &self.flash,
            |out| ftl.memory(out),
        );
    }

    /// Reads one page for the host (`host_read`) or for the read-modify-write of a partial
    /// page write. A page never written (or trimmed) costs no data read, only what the
    /// scheme spends to learn that it is unmapped, as a real controller answers it with zeros
    /// from the map; host reads of such pages are counted in `unmapped_reads`.
    fn read_page(&mut self, index: u64, lpa: u32, host_read: bool) -> Result<()> {
        if self.sectors.is_some() {
            return self.read_sectors(index, lpa, host_read);
        }
        let served = match self.buffer.as_mut().and_then(|b| b.read(lpa)) {
            Some(seq) => {
                self.host.buffer_read_hits += 1;
                Served::Buffer(seq)
            }
            None => match self.ftl.read(lpa, &mut self.flash)? {
                Some(oob) => Served::Flash(oob),
                None => {
                    self.host.unmapped_reads += host_read as u64;
                    Served::Unmapped
                }
            },
        };
        if let Some(shadow) = &self.shadow {
            let expected = shadow[lpa as usize];
            let correct = match served {
                Served::Unmapped => expected == 0,
                Served::Buffer(seq) => seq == expected,
                Served::Flash(oob) => oob.lpa == lpa && oob.seq == expected,
            };
            if !correct {
                return Err(Error::Verify {
                    request: index + 1,
                    lpa: lpa as u64,
                    expected: describe_expected(expected),
                    served: describe_served(served),
                });
            }
        }
        if self.flash.has_sink() {
            self.serve_to_sink(lpa, served, host_read)?;
        }
        if let (true, Some(log)) = (host_read, self.served.as_mut()) {
            log.push(match served {
                Served::Unmapped => None,
                Served::Buffer(seq) => Some(seq),
                Served::Flash(oob) => Some(oob.seq),
            });
        }
        if let (Served::Flash(oob), true, Some(buffer)) = (served, host_read, self.buffer.as_mut())
        {
            buffer.cache_read(lpa, oob.seq);
        }
        Ok(())
    }

    /// The sector path's write of the part of page `lpa` that bytes `start..end` cover:
    /// every 512 B sector they overlap (block traces address whole sectors), handed to the
    /// scheme as sectors; one host page write, numbered as any. A write covering every
    /// sector of the page is a page write.
    fn write_sectors(&mut self, lpa: u32, start: u64, end: u64) -> Result<()> {
        let bytes = self.page.bytes;
        let page_start = lpa as u64 * bytes;
        let from = start.max(page_start) - page_start;
        let to = end.min(page_start + bytes) - page_start;
        let per_page = self.sectors.as_ref().map_or(1, |s| s.per_page);
        let (first, last) = (
            (from / SECTOR_BYTES) as u32,
            (to.div_ceil(SECTOR_BYTES) as u32).min(per_page),
        );
        if first == 0 && last == per_page {
            return self.write_page(lpa);
        }
        let previous = self.shadow.as_ref().map(|s| s[lpa as usize]);
        let seq = self.next_write(lpa);
        if let (Some(sectors), Some(previous)) = (self.sectors.as_mut(), previous) {
            let mixed = sectors
                .mixed
                .entry(lpa)
                .or_insert_with(|| vec![previous; per_page as usize].into());
            mixed[first as usize..last as usize].fill(seq);
        }
        self.ftl
            .write_sectors(lpa, seq, first, last - first, &mut self.flash)
    }

    /// [`Simulator::read_page`] of a sector-packing scheme: each sector checked against
    /// the write it should hold, by the identity its spare area holds on flash (or the
    /// packing buffer's, for a sector not yet programmed).
    fn read_sectors(&mut self, index: u64, lpa: u32, host_read: bool) -> Result<()> {
        let Some(mut path) = self.sectors.take() else {
            return Ok(());
        };
        path.read.clear();
        let result = self.ftl.read_sectors(lpa, &mut self.flash, &mut path.read);
        let result = result.and_then(|()| self.check_sectors(index, lpa, host_read, &path));
        self.sectors = Some(path);
        result
    }

    fn check_sectors(
        &mut self,
        index: u64,
        lpa: u32,
        host_read: bool,
        path: &SectorPath,
    ) -> Result<()> {
        if path.read.len() != path.per_page as usize {
            return Err(Error::Usage(format!(
                "internal: the read of logical page {lpa} returned {} sectors of {}",
                path.read.len(),
                path.per_page
            )));
        }
        let mut newest: Option<u64> = None;
        for (j, &source) in path.read.iter().enumerate() {
            let held = match source {
                SectorSource::Unmapped => None,
                SectorSource::Dram(seq) => Some(seq),
                SectorSource::Flash { ppn, slot } => {
                    let tag = self.flash.sector_tag(ppn, slot);
                    match tag {
                        Some(t) if t.lpa == lpa && t.sector == j as u32 => Some(t.seq),
                        _ => {
                            if self.shadow.is_some() {
                                return Err(Error::Verify {
                                    request: index + 1,
                                    lpa: lpa as u64,
                                    expected: format!("its sector {j}"),
                                    served: match tag {
                                        None => format!("erased physical page {ppn}"),
                                        Some(t) => format!(
                                            "sector {} of logical page {} (host write #{}) \
                                             from sector {slot} of physical page {ppn}",
                                            t.sector, t.lpa, t.seq
                                        ),
                                    },
                                });
                            }
                            None
                        }
                    }
                }
            };
            if let Some(shadow) = &self.shadow {
                let expected = path.expected(lpa, j as u32, shadow[lpa as usize]);
                if held.unwrap_or(0) != expected {
                    return Err(Error::Verify {
                        request: index + 1,
                        lpa: lpa as u64,
                        expected: format!("in sector {j} {}", describe_expected(expected)),
                        served: match source {
                            SectorSource::Unmapped => "nothing (unmapped)".into(),
                            SectorSource::Dram(seq) => {
                                format!("host write #{seq} from the packing buffer")
                            }
                            SectorSource::Flash { ppn, slot } => format!(
                                "host write #{} from sector {slot} of physical page {ppn}",
                                held.unwrap_or(0)
                            ),
                        },
                    });
                }
            }
            newest = newest.max(held.filter(|&s| s != 0));
        }
        if newest.is_none() {
            self.host.unmapped_reads += host_read as u64;
        }
        if let (true, Some(log)) = (host_read, self.served.as_mut()) {
            log.push(newest);
        }
        Ok(())
    }

    /// Tells the page store what a page read served, while the page still holds it (the
    /// background work after the request may move it). A scheme's read returns the OOB of
    /// the last page it read: the page is found from it.
    #[inline(never)]
    fn serve_to_sink(&mut self, lpa: u32, served: Served, host_read: bool) -> Result<()> {
        let from = match served {
            Served::Unmapped => ServedPage::Unmapped,
            Served::Buffer(seq) => ServedPage::Buffer(seq),
            Served::Flash(oob) => {
                let ppn = self.flash.last_read();
                if ppn == crate::device::nand::NONE || self.flash.oob(ppn) != oob {
                    return Err(Error::Usage(format!(
                        "internal: the read of logical page {lpa} returned {oob:?}, which is                          not the page the scheme read last"
                    )));
                }
                ServedPage::Flash(ppn)
            }
        };
        if let Some(sink) = self.flash.sink_mut() {
            sink.served(lpa, from, host_read);
        }
        Ok(())
    }

    /// The flash model (the device front attaches its page store to it).
    pub fn flash_mut(&mut self) -> &mut Flash {
        &mut self.flash
    }

    /// Numbers a host write of `lpa`, counts it and records it in the shadow copy.
    fn next_write(&mut self, lpa: u32) -> u64 {
        self.last_seq += 1;
        self.host.pages_written += 1;
        self.flash.clock += 1;
        if let Some(shadow) = self.shadow.as_mut() {
            shadow[lpa as usize] = self.last_seq;
        }
        self.last_seq
    }

    fn write_page(&mut self, lpa: u32) -> Result<()> {
        let previous = self.shadow.as_ref().map(|s| s[lpa as usize]);
        let seq = self.next_write(lpa);
        if let Some(sectors) = self.sectors.as_mut() {
            sectors.mixed.remove(&lpa);
        }
        let Some(buffer) = self.buffer.as_mut() else {
            let result = self.ftl.write(lpa, seq, &mut self.flash);
            if let Err(Error::Refused { .. }) = &result {
                // The device refused the page and is unchanged: so is what the host wrote.
                // (Behind a write buffer a refusal comes with the flush of an older write,
                // and stops the run.)
                self.host.pages_written -= 1;
                self.flash.clock -= 1;
                if let (Some(shadow), Some(previous)) = (self.shadow.as_mut(), previous) {
                    shadow[lpa as usize] = previous;
                }
            }
            return result;
        };
        match buffer.write(lpa, seq) {
            Buffered::Replaced => self.host.buffer_write_hits += 1,
            Buffered::Inserted { ready_ns, held_by } => self.flash.wait_until(ready_ns, held_by),
            Buffered::Full => {
                self.flash.set_flushing(true);
                let batch = buffer.evict();
                let result = self.ftl.write_batch(batch, &mut self.flash);
                self.flash.set_flushing(false);
                result?;
                buffer.freed_at(self.flash.host_transfers());
                if let Buffered::Inserted { ready_ns, held_by } = buffer.write(lpa, seq) {
                    self.flash.wait_until(ready_ns, held_by);
                }
            }
        }
        Ok(())
    }

    fn trim_page(&mut self, lpa: u32) -> Result<()> {
        self.host.pages_trimmed += 1;
        if let Some(sectors) = self.sectors.as_mut() {
            sectors.mixed.remove(&lpa);
        }
        if let Some(buffer) = self.buffer.as_mut() {
            buffer.remove(lpa);
        }
        if let Some(shadow) = self.shadow.as_mut() {
            shadow[lpa as usize] = 0;
        }
        self.ftl.trim(lpa, &mut self.flash)
    }

    /// Writes what is left in the buffer to flash, so that every host write reaches the
    /// flash counters. Its time counts in no request.
    pub fn drain(&mut self) -> Result<()> {
        if let Some(buffer) = self.buffer.as_mut() {
            self.flash.begin_request(self.last_done);
            let batch = buffer.drain();
            self.ftl.write_batch(batch, &mut self.flash)?;
        }
        Ok(())
    }

    /// Checks that every logical page reads back as last written (verification mode),
    /// without counting the reads. Used by tests after a run.
    pub fn check_all(&mut self) -> Result<()> {
        let Some(shadow) = self.shadow.clone() else {
            return Ok(());
        };
        let (stats, host) = (self.flash.stats.clone(), self.host.clone());
        let index = self.host.requests;
        for lpa in 0..shadow.len() as u32 {
            self.read_page(index, lpa, false)?;
        }
        (self.flash.stats, self.host) = (stats, host);
        Ok(())
    }

    /// Drains the buffer and hands over what was measured.
    pub fn finish(mut self) -> Result<Finished> {
        self.drain()?;
        self.ftl.finish(&mut self.flash)?;
        self.sample();
        let timed = self.flash.is_timed();
        let breakdown = timed.then(|| LatencyBreakdown {
            read: self.read_breakdown.report(),
            write: self.write_breakdown.report(),
        });
        let load = timed.then(|| self.load(breakdown.as_ref()));
        let flash = &self.flash;
        let span = self
            .first_arrival
            .map(|first| self.last_done.saturating_sub(first));
        let per_second = |count: u64| {
            span.filter(|&s| s > 0)
                .map(|s| count as f64 / (s as f64 / 1e9))
        };
        let mut scheme = Vec::new();
        self.ftl.counters(&mut scheme);
        let scheme: BTreeMap<String, f64> = scheme
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let written = self.host.pages_written;
        let application = written - self.host.stack_pages_written;
        let metrics = Metrics {
            flash: Metrics::flash_ops(flash),
            waf: (written > 0).then(|| flash.stats.total_programs() as f64 / written as f64),
            fs_waf: (application > 0).then(|| written as f64 / application as f64),
            total_waf: (application > 0)
                .then(|| flash.stats.total_programs() as f64 / application as f64),
            gc: GcReport {
                invocations: flash.stats.gc_invocations,
                pages_moved: flash.stats.gc_pages_moved,
                scheduling: if self.ftl.background_gc() {
                    "background"
                } else {
                    "foreground"
                },
            },
            slc: self
                .device
                .slc
                .enabled()
                .then(|| SlcReport::new(flash, written)),
            faults: self.device.faults.enabled().then(|| {
                let layout = flash.layout();
                let bad = self.device.faults.bad_per_unit(layout.blocks_per_unit);
                FaultReport::new(flash, bad as u64 * layout.units as u64, written)
            }),
            media: MediaReport::new(&self.device.media, flash, written, self.host.bytes_written),
            erase_count: Metrics::erase_counts(flash),
            memory_bytes: self.sampler.memory.clone(),
            latency: timed.then(|| LatencyReport {
                read: self.read_latency.stats(),
                write: self.write_latency.stats(),
            }),
            latency_breakdown: breakdown,
            simulated_time_ns: if timed { span } else { None },
            iops: if timed {
                per_second(self.host.requests)
            } else {
                None
            },
            throughput_bytes_per_s: if timed {
                per_second(self.host.bytes_read + self.host.bytes_written)
            } else {
                None
            },
            load,
            scheduler: self.flash.scheduler_stats().cloned(),
            scheme,
            host_stack: crate::controller::metrics::HostStackReport::inplace(
                self.layout.logical_pages,
            ),
            time_series: std::mem::take(&mut self.sampler.series),
            host: self.host.clone(),
        };
        Ok(Finished {
            layout: self.layout,
            timed,
            verified: self.shadow.is_some(),
            precondition: self.precondition.take(),
            metrics,
        })
    }

    /// The offered load and whether the replay saturated the device ([`LoadReport`]).
    fn load(&mut self, breakdown: Option<&LatencyBreakdown>) -> LoadReport {
        let first = self.first_arrival.unwrap_or(0);
        let arrival_span = self.last_time.saturating_sub(first);
        let open = self.mode == ReplayMode::Open;
        if open {
            self.bursts.close(&self.flash);
        }
        // Background work left at the end still occupied the dies.
        self.flash.settle_timeline();
        let span = if open {
            arrival_span
        } else {
            self.last_done.saturating_sub(first)
        };
        let busy = self.flash.die_work_ns();
        let per_span = |ns: u64| {
            if span == 0 {
                0.0
            } else {
                ns as f64 / span as f64
            }
        };
        let busiest = busy.iter().copied().max().unwrap_or(0);
        let mean = busy.iter().sum::<u64>() as f64 / busy.len().max(1) as f64;
        let busiest_die_utilisation = per_span(busiest);
        let backlog_at_end_ns = self.last_done.saturating_sub(self.last_time);
        let requests = self.host.requests;
        let sustained = open
            && requests > 1
            && (busiest_die_utilisation >= 0.98
                || backlog_at_end_ns as f64 >= (arrival_span as f64 / 10.0).max(1e8));
        // A run shorter than a window is one window as long as the run.
        let window_ns = BurstMeter::WINDOW_NS.min(arrival_span).max(1);
        let peak_window_utilisation = if open {
            self.bursts.peak_ns as f64 / window_ns as f64
        } else {
            0.0
        };
        let queued_share = self.bursts.queued as f64 / requests.max(1) as f64;
        let saturated_in_bursts = open
            && !sustained
            && requests > 1
            && peak_window_utilisation >= 1.0
            && queued_share >= 0.01;
        let saturated = sustained || saturated_in_bursts;
        let seconds = span as f64 / 1e9;
        let rate = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        LoadReport {
            mode: if open { "open" } else { "closed" },
            arrival_span_ns: arrival_span,
            offered_iops: rate(requests),
            offered_bytes_per_s: rate(self.host.bytes_read + self.host.bytes_written),
            busiest_die_utilisation,
            mean_die_utilisation: if span == 0 { 0.0 } else { mean / span as f64 },
            backlog_at_end_ns,
            window_ns,
            peak_window_utilisation,
            queue_limit_ns: self.bursts.queue_limit_ns,
            queued_requests: self.bursts.queued,
            saturated,
            saturated_in_bursts,
            stalls: breakdown
                .map(crate::controller::breakdown::stalls)
                .unwrap_or_default(),
            suggested_time_scale: saturated.then(|| {
                // Spreading arrivals by s divides every die's utilisation, over the run and
                // in each window, by s.
                let needed =
                    busiest.max(self.last_done.saturating_sub(first)) as f64 / span.max(1) as f64;
                let needed = needed.max(peak_window_utilisation);
                (self.time_scale * needed / 0.7 * 100.0).ceil() / 100.0
            }),
        }
    }
}

/// SNIA PTS's steady-state rule (Solid State Storage Performance Test Specification,
/// section 3): over the measurement window, the range of the values is at most
/// `tolerance` (20%) of their mean, and their least-squares line changes across the window
/// by at most `slope_tolerance` (10%) of it.
pub fn is_steady(values: &[f64], cfg: &PreconditionConfig) -> bool {
    let n = values.len() as f64;
    if values.len() < 2 {
        return false;
    }
    let mean = values.iter().sum::<f64>() / n;
    let (min, max) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let centre = (n - 1.0) / 2.0;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, &v) in values.iter().enumerate() {
        let dx = i as f64 - centre;
        sxy += dx * (v - mean);
        sxx += dx * dx;
    }
    let slope_excursion = (sxy / sxx * (n - 1.0)).abs();
    max - min <= cfg.tolerance * mean && slope_excursion <= cfg.slope_tolerance * mean
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::{page::PageFtl, Scheme};
    use crate::run::config::Config;

    #[test]
    fn steady_state_is_snia_pts_rule() {
        let cfg = PreconditionConfig::default();
        // Flat, or noisy within 20% without a trend: steady.
        assert!(is_steady(&[9.0, 9.0, 9.0, 9.0, 9.0], &cfg));
        assert!(is_steady(&[11.3, 11.3, 13.2, 11.1, 11.1], &cfg));
        // A range beyond 20% of the mean.
        assert!(!is_steady(&[8.0, 10.0, 8.0, 10.0, 8.0], &cfg));
        // Within range but still rising: 5.8 .. 6.8 is a 16% trend.
        assert!(!is_steady(&[5.8, 6.0, 6.3, 6.6, 6.8], &cfg));
        assert!(!is_steady(&[9.0], &cfg));
    }

    /// Host write sequence numbers go past 2^32 without wrapping, through the write buffer,
    /// the FTL, the flash and the verification shadow.
    #[test]
    fn sequence_numbers_do_not_wrap() {
        for buffer_pages in [0, 4] {
            let mut cfg = Config::default();
            cfg.buffer.size_bytes = buffer_pages * 4096;
            let layout = cfg.validate().unwrap();
            let flash = Flash::new(&cfg.device(), &layout, 0, true).unwrap();
            let ftl = PageFtl::new(&cfg.scheme_context(), &layout).unwrap();
            let mut sim = Simulator::new(&cfg.controller(), &layout, ftl, flash, true);
            sim.last_seq = u32::MAX as u64 - 2;
            let page = |lpa: u64, op| Request {
                time_ns: 0,
                offset_bytes: lpa * 4096,
                len_bytes: 4096,
                op,
            };
            for lpa in 0..10 {
                sim.submit(&page(lpa, Op::Write)).unwrap();
            }
            sim.drain().unwrap();
            for lpa in 0..10 {
                sim.submit(&page(lpa, Op::Read)).unwrap();
            }
            assert_eq!(sim.last_seq, u32::MAX as u64 + 8);
            let shadow = sim.shadow.as_ref().unwrap();
            assert_eq!(shadow[9], u32::MAX as u64 + 8);
            assert!(shadow[..10].iter().all(|&s| s != 0));
        }
    }
}
