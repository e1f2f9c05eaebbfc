//! The host stack: what sits between the request source (a trace, a workload, a block-device
//! front) and the FTL. Today's stack is [`PassThrough`]: every application request goes to
//! the device unchanged. A stack may transform requests and originate its own (a host
//! log-structured file system rewriting live data when it cleans its segments, or writing
//! its metadata); each device request carries its [`Origin`], so that the report tells
//! file-system-level write amplification (device pages written per application page,
//! `metrics.fs_waf`) from device-level (flash programs per device page, `metrics.waf`), and
//! the flash operations serving a stack's own requests are counted under their own causes.
//! (Pages that wait in the write buffer are counted under the cause of the request whose
//! eviction flushes them: run stacks without a buffer when the split by cause matters.)
//!
//! Latencies stay per device request: a stack that splits an application request into
//! several reports each of them.

use crate::error::Result;
use crate::ftl::Ftl;
use crate::nand::Cause;
use crate::request::Request;
use crate::sim::Simulator;

/// Who a device request comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The application (the trace or workload): counted as host requests, flash operations
    /// under `host`.
    Application,
    /// The host stack's own cleaning (a log-structured file system moving live blocks out of
    /// a segment): flash operations under `host_cleaning`.
    HostCleaning,
    /// The host stack's metadata (file-system checkpoints, segment summaries): flash
    /// operations under `fs_metadata`.
    FsMetadata,
}

impl Origin {
    /// The cause the flash operations serving a request of this origin are counted under.
    pub fn cause(self) -> Cause {
        match self {
            Origin::Application => Cause::Host,
            Origin::HostCleaning => Cause::HostCleaning,
            Origin::FsMetadata => Cause::FsMetadata,
        }
    }
}

/// A host stack: turns each application request into the device requests that serve it.
pub trait HostStack {
    /// Pushes onto `out`, in issue order, the device requests that serve application
    /// request `req`, each with its origin: the request itself (possibly remapped or split)
    /// and whatever the stack issues on its own because of it (cleaning, metadata).
    fn transform(&mut self, req: &Request, out: &mut Vec<(Request, Origin)>) -> Result<()>;
}

/// The stack of a raw block device: every request reaches the device as it is.
#[derive(Clone, Copy, Debug, Default)]
pub struct PassThrough;

impl HostStack for PassThrough {
    #[inline]
    fn transform(&mut self, req: &Request, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        out.push((*req, Origin::Application));
        Ok(())
    }
}

/// A simulator behind a host stack.
pub struct Stacked<S: HostStack, F: Ftl> {
    pub stack: S,
    pub sim: Simulator<F>,
    scratch: Vec<(Request, Origin)>,
}

impl<S: HostStack, F: Ftl> Stacked<S, F> {
    pub fn new(stack: S, sim: Simulator<F>) -> Self {
        Stacked {
            stack,
            sim,
            scratch: Vec::new(),
        }
    }

    /// Serves one application request through the stack.
    pub fn submit(&mut self, req: &Request) -> Result<()> {
        let mut requests = std::mem::take(&mut self.scratch);
        requests.clear();
        let result = self.stack.transform(req, &mut requests).and_then(|()| {
            requests
                .iter()
                .try_for_each(|(r, origin)| self.sim.submit_from(r, *origin))
        });
        self.scratch = requests;
        result
    }
}
