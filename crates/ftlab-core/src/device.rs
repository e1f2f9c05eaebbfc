//! A stateful device: the simulated SSD as a block device front (an NBD server, a test
//! harness) drives it, one request at a time, instead of replaying a whole trace. Each
//! request returns when it completed in simulated time; a read tells which write each of
//! its pages served (the write's sequence number), so that the front can return the data
//! it keeps for that write; `flush` persists the write buffer, as a FLUSH command does.
//!
//! The device holds no data: a write's pages get consecutive sequence numbers
//! ([`Completion::first_seq`]), which the front maps to the bytes it was given. Reads are
//! checked against the shadow copy when the device was opened with verification.

use crate::config::{Config, Layout, PreconditionMode};
use crate::error::Result;
use crate::ftl::{self, Ftl, Visitor};
use crate::metrics::{Report, SourceInfo};
use crate::nand::Flash;
use crate::request::{Op, Request};
use crate::sim::Simulator;

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
pub trait Device {
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
}

/// Opens scheme `scheme` on the device `cfg` describes, preconditioned as
/// `cfg.precondition` says, with every read checked if `verify`.
pub fn open(scheme: &str, cfg: &Config, verify: bool) -> Result<Box<dyn Device>> {
    let layout = cfg.validate()?;
    ftl::build(
        scheme,
        cfg,
        &layout,
        Open {
            cfg,
            layout: &layout,
            scheme,
            verify,
        },
    )?
}

struct Open<'a> {
    cfg: &'a Config,
    layout: &'a Layout,
    scheme: &'a str,
    verify: bool,
}

impl Visitor for Open<'_> {
    type Output = Result<Box<dyn Device>>;
    fn visit<F: Ftl>(self, ftl: F, flash: Flash) -> Self::Output {
        let mut sim = Simulator::new(self.cfg, self.layout, ftl, flash, self.verify);
        if self.cfg.precondition.mode != PreconditionMode::None {
            sim.precondition(&self.cfg.precondition, &[], &mut |_, _| true)?;
        }
        sim.record_served(true);
        Ok(Box::new(SimDevice {
            sim,
            layout: *self.layout,
            scheme: self.scheme.to_string(),
            cfg: self.cfg.clone(),
        }))
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
        self.sim.finish(&self.scheme, source, &self.cfg)
    }
}
