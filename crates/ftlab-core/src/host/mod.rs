//! The host stack: what sits between the request source (a trace, a workload, a block-device
//! front) and the FTL. A stack may transform requests and originate its own (a host
//! log-structured file system rewriting live data when it cleans its segments, or writing
//! its metadata); each device request carries its [`Origin`], so that the report tells
//! file-system-level write amplification (device pages written per application page,
//! `metrics.fs_waf`) from device-level (flash programs per device page, `metrics.waf`), and
//! the flash operations serving a stack's own requests are counted under their own causes.
//! (Pages that wait in the write buffer are counted under the cause of the request whose
//! eviction flushes them: run stacks without a buffer when the split by cause matters.)
//!
//! The stacks (`host.stack`):
//! - `inplace` ([`PassThrough`]): the trace as it is, as an in-place-update file system
//!   (ext4) issues it; with `host.ext4_footprint` ([`ext4::Ext4`]) also ext4's inode tables
//!   and journal, which take their share of the device and are rewritten in place;
//! - `f2fs` and `alfs` ([`lfs::Lfs`]): a log-structured file system in the F2FS style, with
//!   its own cleaning; `alfs` is AMF's (FAST'16), whose every write appends to a segment of
//!   an append-only device (`aftl`) and which trims segments it has cleaned;
//! - `auto` (the default): `alfs` over an append-only scheme ([`crate::ftl::is_append_only`]),
//!   `inplace` over any other.
//!
//! Latencies stay per device request: a stack that splits an application request into
//! several reports each of them.

pub mod ext4;
pub mod lfs;

use crate::controller::metrics::{Finished, HostStackReport};
use crate::controller::simulator::Simulator;
pub use crate::controller::Origin;
use crate::device::geometry::Layout;
use crate::error::{Error, Result};
use crate::ftl::{Ftl, MemoryBreakdown};
use crate::request::{Op, Request};
use serde::{Deserialize, Serialize};

/// Sets bit `i` of a bitmap (dirty-block sets of the host stacks); whether it was set.
#[inline]
fn test_and_set(bits: &mut [u64], i: u32) -> bool {
    let (w, m) = ((i >> 6) as usize, 1u64 << (i & 63));
    let was = bits[w] & m != 0;
    bits[w] |= m;
    was
}

/// Clears bit `i` of a bitmap.
#[inline]
fn clear_bit(bits: &mut [u64], i: u32) {
    bits[(i >> 6) as usize] &= !(1u64 << (i & 63));
}

/// Which host stack a run uses (`host.stack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StackKind {
    /// `alfs` over an append-only scheme, `inplace` over any other.
    Auto,
    /// The trace as it is: an in-place-update file system (ext4).
    #[serde(alias = "none")]
    Inplace,
    /// A log-structured file system in the F2FS style: data and node logs, greedy or
    /// cost-benefit cleaning, its metadata (checkpoint, NAT, SIT, SSA) updated in place.
    F2fs,
    /// AMF's ALFS: the F2FS-style file system on an append-only device, segments aligned to
    /// the device's, metadata appended to a log located by the TIMB, cleaned segments
    /// trimmed.
    Alfs,
}

impl StackKind {
    /// The concrete stack for scheme `ftl` (`auto` chosen by the scheme).
    pub fn resolve(self, ftl: &str) -> StackKind {
        match self {
            StackKind::Auto if crate::ftl::is_append_only(ftl) => StackKind::Alfs,
            StackKind::Auto => StackKind::Inplace,
            kind => kind,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            StackKind::Auto => "auto",
            StackKind::Inplace => "inplace",
            StackKind::F2fs => "f2fs",
            StackKind::Alfs => "alfs",
        }
    }

    /// Every stack, with a line of description (`ftlab stacks`).
    pub const ALL: &'static [(&'static str, &'static str)] = &[
        (
            "auto",
            "alfs over an append-only scheme (aftl), inplace over any other (the default)",
        ),
        (
            "inplace",
            "the trace as it is: an in-place-update file system such as ext4 (alias: none)",
        ),
        (
            "f2fs",
            "log-structured file system in the F2FS style: data/node logs, greedy or cost-benefit \
             cleaning, checkpoint/NAT/SIT/SSA updated in place",
        ),
        (
            "alfs",
            "AMF's ALFS (FAST'16): the F2FS-style file system appending to device segments, \
             metadata in a log located by the TIMB, cleaned segments trimmed",
        ),
    ];
}

/// What a host stack is built from: the `[host]` and `[lfs]` sections (the run assembles
/// it, `run::config::Config::stack`).
#[derive(Clone, Debug, Default)]
pub struct StackConfig {
    pub host: HostConfig,
    pub lfs: lfs::LfsConfig,
    /// The device's zones when it is a ZNS device (`device.interface = "zns"`): a file
    /// system's sections are then its zones.
    pub zns: Option<crate::ftl::zns::ZnsConfig>,
}

/// The `[host]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    /// `auto`, `inplace`, `f2fs` or `alfs`.
    pub stack: StackKind,
    /// `inplace`: model ext4's own footprint ([`ext4`]): inode tables (1/64 of the
    /// device) and `mke2fs`'s default journal in front of the application's data, inode
    /// blocks journaled at each commit and written back in place. Off: the trace as it is.
    pub ext4_footprint: bool,
    /// ext4's journal commit interval (`commit=`, 5 s), of the application's time.
    #[serde(with = "crate::units::nanos")]
    pub ext4_commit_interval_ns: u64,
    /// ext4's files: the application's space is a row of files of this size, each write
    /// or trim dirtying its file's inode (16 KiB: `mke2fs`'s `inode_ratio`).
    #[serde(with = "crate::units::bytes")]
    pub ext4_file_bytes: u64,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            stack: StackKind::Auto,
            ext4_footprint: false,
            ext4_commit_interval_ns: 5_000_000_000,
            ext4_file_bytes: 16384,
        }
    }
}

/// A host stack: turns each application request into the device requests that serve it.
pub trait HostStack {
    /// The stack passes every request through unchanged ([`Stacked`] then calls the
    /// simulator directly).
    const PASS_THROUGH: bool = false;

    /// Its name in reports.
    fn name(&self) -> &'static str {
        "custom"
    }

    /// Logical pages the application can address (None: the device's).
    fn app_pages(&self) -> Option<u64> {
        None
    }

    /// Pushes onto `out`, in issue order, the device requests that serve application
    /// request `req`, each with its origin: the request itself (possibly remapped or split)
    /// and whatever the stack issues on its own because of it (cleaning, metadata).
    fn transform(&mut self, req: &Request, out: &mut Vec<(Request, Origin)>) -> Result<()>;

    /// Whether [`HostStack::completed`] is to be called (verification).
    fn wants_completions(&self) -> bool {
        false
    }

    /// After each device request of the last [`HostStack::transform`], in order: the
    /// sequence number of its first page written (writes) and, for reads, the write each
    /// of its pages served (None: unmapped).
    fn completed(
        &mut self,
        _req: &Request,
        _first_seq: u64,
        _served: &[Option<u64>],
    ) -> Result<()> {
        Ok(())
    }

    /// Segments (or sections) the stack has cleaned so far (steady-state detection).
    fn reclaims(&self) -> u64 {
        0
    }

    /// The end of preconditioning: pushes onto `out` what the stack does in a long idle
    /// time (a file system's background cleaning caught up), so that the measured run
    /// starts from the state the stack keeps between bursts, as the device's own background
    /// GC is caught up ([`Simulator::precondition`]).
    fn settle(&mut self, _out: &mut Vec<(Request, Origin)>) -> Result<()> {
        Ok(())
    }

    /// Host memory the stack holds, by component (not the device's DRAM).
    fn memory(&self, _out: &mut MemoryBreakdown) {}

    /// Stack counters (application requests, cleaning, metadata).
    fn counters(&self, _out: &mut Vec<(&'static str, f64)>) {}

    /// Forgets the counters (after preconditioning), keeps the state.
    fn reset_counters(&mut self) {}
}

/// The stack of a raw block device: every request reaches the device as it is.
#[derive(Clone, Copy, Debug, Default)]
pub struct PassThrough;

impl HostStack for PassThrough {
    const PASS_THROUGH: bool = true;

    fn name(&self) -> &'static str {
        "inplace"
    }

    #[inline]
    fn transform(&mut self, req: &Request, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        out.push((*req, Origin::Application));
        Ok(())
    }
}

/// Pages the application can address on `layout` under the configuration's stack
/// (`host.stack` resolved: `auto` counts as `inplace`).
pub fn app_pages(cfg: &StackConfig, layout: &Layout) -> Result<u64> {
    match cfg.host.stack {
        StackKind::Auto | StackKind::Inplace if cfg.host.ext4_footprint => {
            ext4::Ext4Layout::new(layout).map(|l| l.app_pages)
        }
        StackKind::Auto | StackKind::Inplace => Ok(layout.logical_pages),
        StackKind::F2fs | StackKind::Alfs => {
            lfs::FsLayout::new(cfg, layout, cfg.host.stack).map(|l| l.app_pages)
        }
    }
}

/// A simulator behind a host stack.
pub struct Stacked<S: HostStack, F: Ftl> {
    pub stack: S,
    pub sim: Simulator<F>,
    scratch: Vec<(Request, Origin)>,
}

impl<S: HostStack, F: Ftl> Stacked<S, F> {
    pub fn new(stack: S, mut sim: Simulator<F>) -> Self {
        if stack.wants_completions() {
            sim.record_served(true);
        }
        Stacked {
            stack,
            sim,
            scratch: Vec::new(),
        }
    }

    /// Serves one application request through the stack.
    #[inline]
    pub fn submit(&mut self, req: &Request) -> Result<()> {
        if S::PASS_THROUGH {
            return self.sim.submit(req);
        }
        Self::submit_through(&mut self.stack, &mut self.sim, &mut self.scratch, req)
    }

    fn submit_through(
        stack: &mut S,
        sim: &mut Simulator<F>,
        scratch: &mut Vec<(Request, Origin)>,
        req: &Request,
    ) -> Result<()> {
        Self::issue(stack, sim, scratch, |stack, out| stack.transform(req, out))
    }

    /// Serves the device requests `make` pushes (the stack's, for one application request
    /// or on its own), telling the stack of their completions.
    fn issue(
        stack: &mut S,
        sim: &mut Simulator<F>,
        scratch: &mut Vec<(Request, Origin)>,
        make: impl FnOnce(&mut S, &mut Vec<(Request, Origin)>) -> Result<()>,
    ) -> Result<()> {
        let mut requests = std::mem::take(scratch);
        requests.clear();
        let result = make(stack, &mut requests).and_then(|()| {
            let completions = stack.wants_completions();
            for (r, origin) in &requests {
                let first_seq = sim.last_seq() + 1;
                sim.submit_from(r, *origin)?;
                if completions {
                    stack.completed(r, first_seq, sim.served())?;
                }
            }
            Ok(())
        });
        *scratch = requests;
        result
    }

    /// The stack's idle-time work before the measured run ([`HostStack::settle`]).
    fn settle_stack(
        stack: &mut S,
        sim: &mut Simulator<F>,
        scratch: &mut Vec<(Request, Origin)>,
    ) -> Result<()> {
        Self::issue(stack, sim, scratch, |stack, out| stack.settle(out))
    }

    /// Preconditions as [`Simulator::precondition`] does, the application's pages written
    /// through the stack (so that its file system is as full and as aged as the device);
    /// the steady state is that of the whole stack's write amplification (flash programs
    /// per application page), and cleaning by the stack counts as reclaiming. At the end the
    /// stack's background work catches up ([`HostStack::settle`]), before the device's.
    pub fn precondition(
        &mut self,
        cfg: &crate::controller::settings::PreconditionConfig,
        warmup: &[u32],
        progress: &mut dyn FnMut(u64, f64) -> bool,
    ) -> Result<()> {
        if S::PASS_THROUGH {
            return self.sim.precondition(cfg, warmup, progress);
        }
        let pages = self
            .stack
            .app_pages()
            .unwrap_or(self.sim.layout().logical_pages);
        let page_size = self.sim.layout().page_size;
        let (stack, scratch) = (&mut self.stack, &mut self.scratch);
        let mut write = |sim: &mut Simulator<F>, lpa: Option<u32>| -> Result<u64> {
            let Some(lpa) = lpa else {
                Self::settle_stack(stack, sim, scratch)?;
                return Ok(stack.reclaims());
            };
            let req = Request {
                time_ns: 0,
                offset_bytes: lpa as u64 * page_size as u64,
                len_bytes: page_size,
                op: Op::Write,
            };
            Self::submit_through(stack, sim, scratch, &req)?;
            Ok(stack.reclaims())
        };
        self.sim
            .precondition_with(cfg, warmup, pages, &mut write, progress)?;
        self.stack.reset_counters();
        Ok(())
    }

    /// Replays the first `count` requests of `requests` as workload-dependent
    /// preconditioning (untimed, left out of the metrics; [`Simulator::precondition_workload`]).
    pub fn precondition_workload(
        &mut self,
        requests: &mut dyn Iterator<Item = Result<Request>>,
        count: u64,
    ) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let (stack, scratch) = (&mut self.stack, &mut self.scratch);
        let mut run = |sim: &mut Simulator<F>| -> Result<(u64, u64)> {
            let written = sim.host().pages_written - sim.host().stack_pages_written;
            let mut done = 0;
            while done < count {
                let Some(req) = requests.next() else {
                    break;
                };
                let req = req?;
                if S::PASS_THROUGH {
                    sim.submit(&req)?;
                } else {
                    Self::submit_through(stack, sim, scratch, &req)?;
                }
                done += 1;
            }
            if !S::PASS_THROUGH {
                Self::settle_stack(stack, sim, scratch)?;
            }
            let app = sim.host().pages_written - sim.host().stack_pages_written - written;
            Ok((done, app))
        };
        self.sim.precondition_workload(&mut run)?;
        self.stack.reset_counters();
        Ok(())
    }

    /// Drains the device's buffer and hands over what was measured, with the stack's
    /// section.
    pub fn finish(self) -> Result<Finished> {
        let Stacked { stack, sim, .. } = self;
        let app_pages = stack.app_pages().unwrap_or(sim.layout().logical_pages);
        let mut report = sim.finish()?;
        let mut memory = Vec::new();
        stack.memory(&mut memory);
        let mut counters = Vec::new();
        stack.counters(&mut counters);
        report.metrics.host_stack = HostStackReport {
            name: stack.name(),
            app_pages,
            memory_total_bytes: memory.iter().map(|(_, b)| b).sum(),
            memory_bytes: memory
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            counters: counters
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        };
        Ok(report)
    }
}

/// Receives the simulator behind its stack, whatever the stack's type.
pub trait StackVisitor {
    type Output;
    fn visit<S: HostStack, F: Ftl>(self, stacked: Stacked<S, F>) -> Self::Output;
}

/// Puts `sim` behind the stack the configuration names (`host.stack`, resolved for scheme
/// `ftl`) and hands it to `visitor`; `verify` checks every application read end to end.
pub fn with_stack<F: Ftl, V: StackVisitor>(
    cfg: &StackConfig,
    ftl: &str,
    sim: Simulator<F>,
    verify: bool,
    visitor: V,
) -> Result<V::Output> {
    match cfg.host.stack.resolve(ftl) {
        StackKind::Inplace if cfg.host.ext4_footprint => {
            let stack = ext4::Ext4::new(cfg, sim.layout())?;
            Ok(visitor.visit(Stacked::new(stack, sim)))
        }
        StackKind::Inplace => Ok(visitor.visit(Stacked::new(PassThrough, sim))),
        kind @ (StackKind::F2fs | StackKind::Alfs) => {
            let stack = lfs::Lfs::new(cfg, sim.layout(), kind, verify)?;
            Ok(visitor.visit(Stacked::new(stack, sim)))
        }
        StackKind::Auto => Err(Error::Usage("internal: host.stack not resolved".into())),
    }
}
