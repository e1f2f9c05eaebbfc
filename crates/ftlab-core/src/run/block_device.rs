//! A stateful device: the simulated SSD as a block device front (an NBD server, a test
//! harness) drives it, one request at a time, instead of replaying a whole trace. Each
//! request returns when it completed in simulated time; a read tells which write each of
//! its pages served (the write's sequence number), so that the front can return the data
//! it keeps for that write; `flush` persists the write buffer, as a FLUSH command does.
//!
//! The device holds no data: a write's pages get consecutive sequence numbers
//! ([`Completion::first_seq`]), which the front maps to the bytes it was given. A front
//! that keeps real data attaches a [`PageSink`] ([`open_with_sink`]): the flash model tells
//! it of every program, copy and erase, and the simulator of what each read served, so the
//! bytes live where the scheme put them. Reads are checked against the shadow copy when the
//! device was opened with verification.

use crate::controller::simulator::Simulator;
use crate::device::nand::{Flash, FlashStats, PageSink, Ppn, NONE};
use crate::device::recovery::{self, FlashImage};
use crate::error::Result;
use crate::ftl::{self, Ftl, Visitor};
use crate::request::{Op, Request};
use crate::run::config::{Config, Layout, PreconditionMode};
use crate::run::report::{Report, SourceInfo};

/// How a request went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// Completion time in simulated nanoseconds (0 in mapping-only mode).
    pub done_ns: u64,
    /// Writes: the sequence number of the request's first page; its other pages got the
    /// following numbers, in address order. 0 for reads and trims.
    pub first_seq: u64,
}

/// The simulated SSD as a block device.
pub trait Device: Send {
    /// The device's geometry: `logical_pages x page_size` bytes are addressable.
    fn layout(&self) -> &Layout;
    /// Serves one request; its `time_ns` is its arrival (open loop) or is ignored (closed
    /// loop), as in a replay.
    fn submit(&mut self, req: &Request) -> Result<Completion>;
    /// After a read: per page of the request, in address order, the sequence number of the
    /// write it served, or `None` for a page never written (or trimmed), which reads as
    /// zeros.
    fn served(&self) -> &[Option<u64>];
    /// Writes the write buffer's pages to flash.
    fn flush(&mut self) -> Result<()>;
    /// Flushes and reports the whole session, as a replay's report.
    fn finish(self: Box<Self>) -> Result<Report>;
    /// The attached page store ([`open_with_sink`]).
    fn sink(&mut self) -> Option<&mut (dyn PageSink + 'static)>;
    /// The last host write sequence number given (the next write's pages follow it).
    fn last_seq(&self) -> u64;
    /// Counters for a live display.
    fn live(&self) -> Live;
    /// The logical-to-physical map the flash holds (each valid page holding a logical
    /// page): after [`Device::flush`], every logical page's current copy. For a checkpoint
    /// ([`crate::device::recovery::MapCheckpoint`]).
    fn mapping(&self) -> Result<Vec<Ppn>>;
}

/// What a live display shows of a device in service.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Live {
    pub requests: u64,
    pub pages_written: u64,
    pub pages_read: u64,
    pub flash_programs: u64,
    pub gc_invocations: u64,
    /// The scheme's DRAM now, in bytes.
    pub memory_bytes: u64,
}

/// Opens scheme `scheme` on the device `cfg` describes, preconditioned as
/// `cfg.precondition` says, with every read checked if `verify`.
pub fn open(scheme: &str, cfg: &Config, verify: bool) -> Result<Box<dyn Device>> {
    open_device(scheme, cfg, verify, None)
}

/// Opens scheme `scheme` on a fresh device whose data `sink` keeps (see [`PageSink`]).
/// The device starts empty: `precondition.mode` must be `none` (preconditioning writes
/// pages that have no data).
pub fn open_with_sink(
    scheme: &str,
    cfg: &Config,
    verify: bool,
    sink: Box<dyn PageSink>,
) -> Result<Box<dyn Device>> {
    if cfg.precondition.mode != PreconditionMode::None {
        return Err(crate::Error::config(
            "precondition.mode",
            "a device that keeps data starts empty or from its store: set it to \"none\"",
        ));
    }
    open_device(scheme, cfg, verify, Some(sink))
}

/// What a restart rebuilt ([`open_recovered`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Logical pages mapped.
    pub mapped_pages: u64,
    /// Flash programs the scheme's rebuild made (translation pages rewritten, blocks
    /// closed), not counted in the session's report.
    pub programs: u64,
    /// The host write sequence number the device goes on from.
    pub last_seq: u64,
}

/// Opens scheme `scheme` over the flash contents `image` left by an earlier session (see
/// [`crate::device::recovery`]): the flash model is restored, the scheme rebuilds its state
/// ([`Ftl::recover`]), and the device goes on with its data in `sink`. With `verify`,
/// reads are checked against what the flash held (the shadow copy starts from it).
pub fn open_recovered(
    scheme: &str,
    cfg: &Config,
    verify: bool,
    sink: Box<dyn PageSink>,
    image: &FlashImage,
) -> Result<(Box<dyn Device>, Recovered)> {
    if cfg.precondition.mode != PreconditionMode::None {
        return Err(crate::Error::config(
            "precondition.mode",
            "a device that keeps data starts empty or from its store: set it to \"none\"",
        ));
    }
    let (device, recovered) = open_any(scheme, cfg, verify, Some(sink), Some(image))?;
    Ok((device, recovered.unwrap_or_default()))
}

fn open_device(
    scheme: &str,
    cfg: &Config,
    verify: bool,
    sink: Option<Box<dyn PageSink>>,
) -> Result<Box<dyn Device>> {
    open_any(scheme, cfg, verify, sink, None).map(|(d, _)| d)
}

fn open_any(
    scheme: &str,
    cfg: &Config,
    verify: bool,
    sink: Option<Box<dyn PageSink>>,
    image: Option<&FlashImage>,
) -> Result<(Box<dyn Device>, Option<Recovered>)> {
    // An FDP device is a block device too (every write on the default handle); a zoned
    // one is not. NBD's protocol, extensions included, carries reads, writes, trims,
    // flushes and zeroes of a flat block device: nothing to report zones, append, reset or
    // finish.
    let zns = ftl::interface::Interface::Zns;
    if ftl::scheme_interface(scheme) == zns || cfg.device.interface == zns {
        return Err(crate::Error::Usage(
            "a block device (`ftlab serve`, NBD) cannot be a zns device: the NBD protocol, \
             its extensions included, has no zone commands (report zones, zone append, \
             reset, finish), so a client could neither find the write pointers nor reset a \
             zone; replay zoned workloads with `ftlab run --ftl zns` instead"
                .into(),
        ));
    }
    let layout = cfg.validate()?;
    ftl::build(
        scheme,
        &cfg.scheme_context(),
        &layout,
        Open {
            cfg,
            layout: &layout,
            scheme,
            verify,
            sink,
            image,
        },
    )?
}

struct Open<'a> {
    cfg: &'a Config,
    layout: &'a Layout,
    scheme: &'a str,
    verify: bool,
    sink: Option<Box<dyn PageSink>>,
    image: Option<&'a FlashImage>,
}

impl Visitor for Open<'_> {
    type Output = Result<(Box<dyn Device>, Option<Recovered>)>;
    fn visit<F: Ftl>(self, mut ftl: F, mut flash: Flash) -> Self::Output {
        if self.sink.is_some() && ftl.packs_sectors() {
            // The page store and the recovery scan hold whole pages with one identity each.
            return Err(crate::Error::config(
                "fftl.sector_packing",
                format!(
                    "scheme `{}` packs 512 B sectors, which a device that keeps data (`serve`, \
                     recovery) does not model: set it to false, or give the device a write \
                     buffer (`buffer.size_bytes`), whose page slots take partial pages whole",
                    self.scheme
                ),
            ));
        }
        if let Some(sink) = self.sink {
            flash.attach_sink(sink);
        }
        let mut rebuilt = None;
        if let Some(image) = self.image {
            // The rebuild takes no simulated time and is not part of the session's counts.
            let timed = flash.pause_timing();
            let found = recovery::restore(image, &mut flash)?;
            // What each page holds, before the rebuild's GC moves pages.
            let seq_of: Vec<u64> = found
                .live
                .iter()
                .map(|&p| if p == NONE { 0 } else { flash.oob(p).seq })
                .collect();
            ftl.recover(&found, &mut flash).map_err(|e| {
                crate::Error::Usage(format!(
                    "scheme `{}` cannot recover its state from the store: {e}",
                    self.scheme
                ))
            })?;
            let programs = flash.stats.total_programs();
            flash.stats = FlashStats::default();
            ftl.reset_counters();
            if timed {
                flash.restart_timing(&self.cfg.device());
            }
            rebuilt = Some((found, seq_of, programs));
        }
        let mut sim = Simulator::new(&self.cfg.controller(), self.layout, ftl, flash, self.verify);
        if self.cfg.precondition.mode != PreconditionMode::None {
            sim.precondition(&self.cfg.precondition, &[], &mut |_, _| true)?;
        }
        sim.record_served(true);
        let recovered = rebuilt.map(|(found, seq_of, programs)| {
            sim.resume(found.last_seq, seq_of);
            Recovered {
                mapped_pages: found.mapped(),
                programs,
                last_seq: found.last_seq,
            }
        });
        let device: Box<dyn Device> = Box::new(SimDevice {
            sim,
            layout: *self.layout,
            scheme: self.scheme.to_string(),
            cfg: self.cfg.clone(),
        });
        Ok((device, recovered))
    }
}

struct SimDevice<F: Ftl> {
    sim: Simulator<F>,
    layout: Layout,
    scheme: String,
    cfg: Config,
}

impl<F: Ftl> Device for SimDevice<F> {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn submit(&mut self, req: &Request) -> Result<Completion> {
        let next_seq = self.sim.last_seq() + 1;
        self.sim.submit(req)?;
        Ok(Completion {
            done_ns: self.sim.last_done_ns(),
            first_seq: if req.op == Op::Write { next_seq } else { 0 },
        })
    }

    fn served(&self) -> &[Option<u64>] {
        self.sim.served()
    }

    fn flush(&mut self) -> Result<()> {
        self.sim.drain()
    }

    fn finish(self: Box<Self>) -> Result<Report> {
        let source = SourceInfo {
            kind: "device".into(),
            name: "device".into(),
            format: String::new(),
        };
        Ok(Report::new(
            &self.scheme,
            source,
            &self.cfg,
            self.sim.finish()?,
        ))
    }

    fn sink(&mut self) -> Option<&mut (dyn PageSink + 'static)> {
        self.sim.flash_mut().sink_mut()
    }

    fn last_seq(&self) -> u64 {
        self.sim.last_seq()
    }

    fn mapping(&self) -> Result<Vec<Ppn>> {
        let flash = self.sim.flash();
        let mut map = vec![NONE; self.layout.logical_pages as usize];
        for block in 0..self.layout.total_blocks {
            for ppn in flash.valid_pages(block) {
                let lpa = flash.oob(ppn).lpa;
                if lpa == NONE {
                    continue;
                }
                let slot = &mut map[lpa as usize];
                if *slot != NONE {
                    return Err(crate::Error::Usage(format!(
                        "internal error: logical page {lpa} has two valid copies, physical \
                         pages {} and {ppn}",
                        *slot
                    )));
                }
                *slot = ppn;
            }
        }
        Ok(map)
    }

    fn live(&self) -> Live {
        let host = self.sim.host();
        let flash = self.sim.flash();
        let mut memory = Vec::new();
        self.sim.ftl().memory(&mut memory);
        Live {
            requests: host.requests,
            pages_written: host.pages_written,
            pages_read: host.pages_read,
            flash_programs: flash.stats.total_programs(),
            gc_invocations: flash.stats.gc_invocations,
            memory_bytes: memory.iter().map(|(_, b)| b).sum(),
        }
    }
}
