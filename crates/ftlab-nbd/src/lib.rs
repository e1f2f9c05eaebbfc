//! ftlab as a real block device: any FTL scheme served over NBD (the network block device
//! protocol), its data in a page store that follows the scheme's physical placement.
//!
//! - [`proto`]: the NBD wire format and the fixed newstyle handshake.
//! - [`store`]: the page store (under `--store`: one `store` file with the OOB records, the
//!   erase counts and the pages by physical page, so that one fdatasync makes a flush
//!   durable; the trim log), its batched writes, write ordering and group commit.
//! - [`engine`]: byte-addressed requests over the simulated device and its store.
//! - [`server`]: the listener and the client connections.
//! - [`recovery`]: start-up over an existing store (checkpoint, OOB scan, the scheme's
//!   rebuild) and the checkpoint a clean shutdown writes.
//! - [`check`]: damage to a store (refused at start-up, `ftlab store check` / `repair`).
//! - [`lock`]: one owner per store; [`space`]: read-only while the disk is full;
//!   [`signals`]: SIGTERM, SIGHUP, SIGINT end a session cleanly; [`socket`]: TCP or Unix
//!   socket; [`status`]: the live metrics over HTTP; [`tls`]: TLS (PSK or certificate).
//!
//! The core stays free of networking: it knows the store only as a
//! [`ftlab_core::device::nand::PageSink`].

pub mod check;
pub mod engine;
pub mod lock;
pub mod proto;
pub mod recovery;
pub mod server;
pub mod signals;
pub mod socket;
pub mod space;
pub mod status;
pub mod store;
pub mod sync_poll;
pub mod tls;

use ftlab_core::run::config::Config;
use ftlab_core::run::report::Report;
use std::path::PathBuf;
use std::time::Instant;

/// What `ftlab serve` was asked.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub scheme: String,
    pub cfg: Config,
    pub store: PathBuf,
    pub listen: String,
    /// Hold each reply until the simulated SSD would have completed it.
    pub timing_real: bool,
    pub verify: bool,
    /// The export's name (clients may also ask for the default, empty, name).
    pub export_name: String,
    /// Write the store's pages region with zeros (in its holes) before serving, so that no
    /// write allocates or converts an extent and no flush commits the file system's journal
    /// for it (by default the region is allocated with `fallocate`).
    pub preallocate: bool,
    /// Keep a CPU busy while each fdatasync is in flight ([`sync_poll`]).
    pub sync_poll: bool,
    pub limits: server::Limits,
    /// Where to serve the live metrics over HTTP (JSON and Prometheus), if anywhere.
    pub status: Option<String>,
    /// TLS, required of every client ([`tls`]).
    pub tls: Option<tls::TlsConfig>,
}

/// What a live display shows, about every 200 ms.
#[derive(Clone, Debug)]
pub struct Status {
    pub address: String,
    pub elapsed_s: f64,
    pub live: ftlab_core::run::block_device::Live,
    pub connections: usize,
    pub flushes: u64,
    pub errors: u64,
    /// fdatasync calls on the store's files (a flush syncs the store file, and the trim log
    /// when trims were logged since).
    pub fsyncs: u64,
    /// Requests failed by a damaged page (its bytes not matching their checksum).
    pub media_errors: u64,
    /// How late replies went out after their simulated completion (`--timing real`).
    pub pacing: server::PacingSummary,
    /// Messages since the last status (connections, client errors).
    pub events: Vec<String>,
}

/// The end of a session.
pub struct Outcome {
    pub report: Report,
    pub startup: recovery::Startup,
    /// The signal that ended the session, if one did.
    pub signal: Option<&'static str>,
}

/// Opens (or recovers) the store, serves until `tick` returns false or SIGTERM, SIGHUP or
/// SIGINT arrives, then shuts down cleanly: flush, sync, checkpoint, report. `started` is told the start-up (recovery
/// time, address) once the server listens.
pub fn serve(
    opts: &ServeOptions,
    started: &mut dyn FnMut(&recovery::Startup, &str),
    tick: &mut dyn FnMut(&Status) -> bool,
) -> Result<Outcome, String> {
    // TLS's files first: a start that cannot serve reads and writes nothing.
    let tls = opts.tls.as_ref().map(tls::Tls::new).transpose()?;
    let signals = signals::StopSignals::install();
    // The store's owner first, then the address: a start that cannot serve reads and
    // writes nothing.
    let _lock = lock::StoreLock::acquire(&opts.store)?;
    let listener = server::Server::listen(&opts.listen)?;
    let status_listener = opts.status.as_deref().map(status::bind).transpose()?;
    let epoch = Instant::now();
    let (engine, startup) = recovery::open(opts, epoch)?;
    let mut server = server::Server::new(
        listener,
        engine,
        &opts.export_name,
        opts.timing_real,
        opts.limits,
        tls,
    );
    if let Some(listener) = status_listener {
        let at = server.serve_status(listener)?;
        server.shared().event(format!(
            "status at http://{at}/ (JSON) and http://{at}/metrics (Prometheus)"
        ));
    }
    let address = server.local_addr();
    if let Some(warning) = server::exposure_warning(&address, opts.tls.is_some()) {
        server.shared().event(warning);
    }
    started(&startup, &address);
    let t0 = Instant::now();
    let status = |shared: &server::Shared| {
        use std::sync::atomic::Ordering::Relaxed;
        Status {
            address: address.clone(),
            elapsed_s: t0.elapsed().as_secs_f64(),
            live: shared.live(),
            connections: shared.connections.load(Relaxed),
            flushes: shared.flushes.load(Relaxed),
            errors: shared.errors.load(Relaxed),
            media_errors: shared.media_errors(),
            fsyncs: shared.fsyncs(),
            pacing: shared.pacing.summary(),
            events: shared.take_events(),
        }
    };
    server.run(&mut |shared| {
        if let Some(signal) = signals.received() {
            shared.event(format!(
                "{signal}: shutting down cleanly (flush, checkpoint)"
            ));
        }
        tick(&status(shared)) && signals.received().is_none()
    });
    let pacing = server.shared().pacing.summary();
    if pacing.replies > 0 {
        let us = |ns: u64| ns as f64 / 1000.0;
        server.shared().event(format!(
            "paced replies (--timing real): {}, sent after their simulated completion by \
             {:.1} us at the median, {:.1} us at p99, {:.1} us at most",
            pacing.replies,
            us(pacing.late_p50_ns),
            us(pacing.late_p99_ns),
            us(pacing.late_max_ns)
        ));
    }
    // The last events (the pacing, clients gone) shown before the shutdown.
    tick(&status(server.shared()));
    let engine = server.stop();
    let report = recovery::shut_down(engine, opts)?;
    Ok(Outcome {
        report,
        startup,
        signal: signals.received(),
    })
}
