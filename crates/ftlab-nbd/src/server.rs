//! The NBD server: a listener, one thread per client connection up to a limit (beyond it a
//! connection is closed at once, with a message), the device behind one lock. A client has a
//! bounded time to complete the handshake (TLS's included, when configured: [`crate::tls`]).
//! Long TRIM and WRITE_ZEROES requests run in pieces, taking the lock for each and letting
//! waiting requests in between, so that a 1 GiB zero write does not hold other clients'
//! reads for seconds. A connection reads requests as they come (a client may pipeline
//! many), serves each under the lock, and writes the reply; replies are flushed to the
//! socket when no further request is waiting in the input buffer, so a queue of requests
//! costs one write. With real timing a connection's replies go through a writer thread that
//! holds each one until the simulated SSD would have completed it, polling for the last
//! [`SPIN`] before it, and records how late each went out ([`Pacing`]). Flushes sync the
//! store outside the lock, shared between concurrent flushes.
//!
//! A client that breaks the protocol (bad magic, an oversized write) is disconnected with a
//! message naming what it sent; a request outside the export gets an error reply; either
//! way the other clients go on.

use crate::engine::{Engine, Failure};
use crate::proto::{self, Export, Handshake, RequestHeader, Session};
use crate::socket::{Listener, Stream};
use std::collections::BinaryHeap;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Limits of the connections.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Client connections served at once; more are refused.
    pub max_connections: usize,
    /// Time a client has to complete the handshake.
    pub handshake_timeout: Duration,
    /// The export is read-only: writes, trims and zero writes get EPERM.
    pub read_only: bool,
}

/// A warning when `address` (as bound) is reachable from other machines and the device is
/// served without TLS (hence without authentication).
pub fn exposure_warning(address: &str, tls: bool) -> Option<String> {
    let ip: std::net::SocketAddr = address.parse().ok()?;
    if ip.ip().is_loopback() || tls {
        return None;
    }
    Some(format!(
        "warning: listening on {address}, reachable from other machines, without TLS or \
         authentication: anyone who can connect can read and write the device (listen on \
         127.0.0.1, behind a tunnel, or with --tls-psk or --tls-cert)"
    ))
}

/// How long before a paced reply's due time its writer stops sleeping and polls: a timed
/// wait wakes up tens of microseconds late, a poll within a microsecond.
pub const SPIN: Duration = Duration::from_micros(200);

/// How late paced replies (`--timing real`) went out: from the simulated completion to the
/// write to the socket (the server's own time to serve the request included).
pub struct Pacing {
    late_ns: Mutex<hdrhistogram::Histogram<u64>>,
}

/// [`Pacing`]'s figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct PacingSummary {
    pub replies: u64,
    pub late_p50_ns: u64,
    pub late_p99_ns: u64,
    pub late_max_ns: u64,
}

impl Pacing {
    fn new() -> Pacing {
        let h = hdrhistogram::Histogram::new(3).expect("3 significant figures are valid");
        Pacing {
            late_ns: Mutex::new(h),
        }
    }

    fn record(&self, late: Duration) {
        let mut h = self.late_ns.lock().unwrap_or_else(|e| e.into_inner());
        h.saturating_record(late.as_nanos().min(u64::MAX as u128) as u64);
    }

    pub fn summary(&self) -> PacingSummary {
        let h = self.late_ns.lock().unwrap_or_else(|e| e.into_inner());
        PacingSummary {
            replies: h.len(),
            late_p50_ns: h.value_at_quantile(0.5),
            late_p99_ns: h.value_at_quantile(0.99),
            late_max_ns: h.max(),
        }
    }
}

/// The piece of a long TRIM or WRITE_ZEROES served under one hold of the lock.
const PIECE: u64 = 8 << 20;

/// State the connections share.
pub struct Shared {
    engine: Mutex<Engine>,
    /// Threads waiting for the engine's lock (a long request lets them in between pieces).
    waiting: AtomicUsize,
    limits: Limits,
    export: Export,
    timing_real: bool,
    stop: AtomicBool,
    events: Mutex<Vec<String>>,
    pub connections: AtomicUsize,
    pub flushes: AtomicU64,
    pub errors: AtomicU64,
    /// The store's group commit (its fdatasync count).
    sync: Arc<crate::store::SyncGroup>,
    pub pacing: Arc<Pacing>,
    /// TLS, required of every client when configured.
    tls: Option<crate::tls::Tls>,
}

impl Shared {
    fn engine(&self) -> MutexGuard<'_, Engine> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        // A connection thread that panicked leaves the engine usable: its state is only
        // changed by whole requests.
        let guard = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// Between the pieces of a long request: the lock goes to the requests waiting for it
    /// (a mutex is not fair: the long request would otherwise take it straight back).
    fn let_others_in(&self) {
        let since = Instant::now();
        while self.waiting.load(Ordering::SeqCst) > 0 && since.elapsed() < Duration::from_millis(5)
        {
            std::thread::yield_now();
        }
    }

    pub fn event(&self, message: String) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(message);
    }

    pub fn take_events(&self) -> Vec<String> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn live(&self) -> ftlab_core::run::block_device::Live {
        self.engine().live()
    }

    /// The server is stopping (threads serving it end).
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    pub fn fsyncs(&self) -> u64 {
        self.sync.fsyncs.load(Ordering::Relaxed)
    }

    pub fn media_errors(&self) -> u64 {
        self.engine().media_errors()
    }
}

/// A listening server.
pub struct Server {
    listener: Listener,
    shared: Arc<Shared>,
    clients: Vec<(Stream, JoinHandle<()>)>,
    /// The status endpoint's thread, if one runs.
    status: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `listen` (before the store is opened: a start that cannot serve changes
    /// nothing).
    pub fn listen(listen: &str) -> Result<Listener, String> {
        Listener::bind(listen)
    }

    /// Serves `engine` as export `name` on `listener` (from [`Server::listen`]).
    pub fn new(
        listener: Listener,
        mut engine: Engine,
        name: &str,
        timing_real: bool,
        limits: Limits,
        tls: Option<crate::tls::Tls>,
    ) -> Server {
        let sync = engine.store().sync_group();
        let flags = proto::FLAG_HAS_FLAGS
            | proto::FLAG_SEND_FLUSH
            | proto::FLAG_SEND_FUA
            | proto::FLAG_SEND_TRIM
            | proto::FLAG_SEND_WRITE_ZEROES
            | proto::FLAG_CAN_MULTI_CONN
            | if limits.read_only {
                proto::FLAG_READ_ONLY
            } else {
                0
            };
        let export = Export {
            name: name.to_string(),
            size: engine.size(),
            flags,
            block_size: engine.page_size() as u32,
        };
        Server {
            listener,
            shared: Arc::new(Shared {
                engine: Mutex::new(engine),
                waiting: AtomicUsize::new(0),
                limits,
                export,
                timing_real,
                stop: AtomicBool::new(false),
                events: Mutex::new(Vec::new()),
                connections: AtomicUsize::new(0),
                flushes: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                sync,
                pacing: Arc::new(Pacing::new()),
                tls,
            }),
            clients: Vec::new(),
            status: None,
        }
    }

    /// Serves the status endpoint on `listener` ([`crate::status`]); its address.
    pub fn serve_status(&mut self, listener: std::net::TcpListener) -> Result<String, String> {
        let (address, handle) = crate::status::spawn(listener, self.shared.clone())?;
        self.status = Some(handle);
        Ok(address)
    }

    pub fn local_addr(&self) -> String {
        self.listener.address()
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Accepts connections until `tick` (called about every 200 ms) returns false.
    pub fn run(&mut self, tick: &mut dyn FnMut(&Shared) -> bool) {
        let mut last_tick = Instant::now();
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => self.spawn(stream, peer),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => {
                    self.shared.event(format!("accept: {e}"));
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            if last_tick.elapsed() >= Duration::from_millis(200) {
                last_tick = Instant::now();
                self.clients.retain(|(_, h)| !h.is_finished());
                if !tick(&self.shared) {
                    break;
                }
            }
        }
    }

    fn spawn(&mut self, stream: Stream, peer: String) {
        self.clients.retain(|(_, h)| !h.is_finished());
        let limit = self.shared.limits.max_connections;
        if self.clients.len() >= limit {
            self.shared.event(format!(
                "client {peer} refused: {limit} clients connected already (--max-connections)"
            ));
            let _ = stream.shutdown();
            return;
        }
        let prepared = stream.try_clone();
        let control = match prepared {
            Ok(c) => c,
            Err(e) => {
                self.shared.event(format!("client {peer}: {e}"));
                return;
            }
        };
        let shared = self.shared.clone();
        let spawned = std::thread::Builder::new().spawn(move || {
            shared.connections.fetch_add(1, Ordering::Relaxed);
            shared.event(format!("client {peer} connected"));
            let result = connection(stream, &shared);
            shared.connections.fetch_sub(1, Ordering::Relaxed);
            match result {
                Ok(()) => shared.event(format!("client {peer} disconnected")),
                Err(e) => {
                    shared.errors.fetch_add(1, Ordering::Relaxed);
                    shared.event(format!("client {peer}: {e}; connection closed"))
                }
            }
        });
        match spawned {
            Ok(handle) => self.clients.push((control, handle)),
            // (The stream went with the closure: dropped, the connection is closed.)
            Err(e) => self.shared.event(format!(
                "client refused: no thread could be started for it ({e})"
            )),
        }
    }

    /// Disconnects every client and waits for their threads; returns the engine.
    pub fn stop(mut self) -> Engine {
        self.shared.stop.store(true, Ordering::SeqCst);
        for (stream, _) in &self.clients {
            let _ = stream.shutdown();
        }
        for (_, handle) in self.clients.drain(..) {
            let _ = handle.join();
        }
        if let Some(handle) = self.status.take() {
            let _ = handle.join();
        }
        let shared = Arc::try_unwrap(self.shared)
            .ok()
            .expect("every connection thread has ended");
        shared
            .engine
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// Where a connection's replies go: straight to the socket, or through the writer thread
/// that holds each until its simulated completion.
enum Replies {
    /// The connection's buffered writer (over the socket, or its TLS session).
    Direct(Box<dyn Write>),
    Paced {
        send: mpsc::Sender<Reply>,
        writer: JoinHandle<io::Result<()>>,
    },
}

struct Reply {
    due: Instant,
    bytes: Vec<u8>,
}

impl PartialEq for Reply {
    fn eq(&self, other: &Self) -> bool {
        self.due == other.due
    }
}
impl Eq for Reply {}
impl PartialOrd for Reply {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Reply {
    // Earliest first in a max-heap.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.due.cmp(&self.due)
    }
}

/// The writer thread of a paced connection: each reply written at its due time (the last
/// [`SPIN`] before it polled rather than slept), its lateness recorded.
fn paced_writer<W: Write>(
    stream: W,
    recv: mpsc::Receiver<Reply>,
    pacing: &Pacing,
) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 18, stream);
    let mut heap = BinaryHeap::new();
    let mut open = true;
    while open || !heap.is_empty() {
        let now = Instant::now();
        let mut wrote = false;
        while heap.peek().is_some_and(|r: &Reply| r.due <= now) {
            let r = heap.pop().expect("peeked");
            out.write_all(&r.bytes)?;
            pacing.record(now - r.due);
            wrote = true;
        }
        if wrote {
            out.flush()?;
        }
        let wait = heap
            .peek()
            .map(|r| r.due.saturating_duration_since(Instant::now()));
        let got = match wait {
            // Close to the next reply: poll for new ones without blocking.
            Some(d) if d <= SPIN => match recv.try_recv() {
                Ok(r) => Ok(r),
                Err(mpsc::TryRecvError::Empty) => {
                    std::hint::spin_loop();
                    continue;
                }
                Err(mpsc::TryRecvError::Disconnected) => Err(mpsc::RecvTimeoutError::Disconnected),
            },
            Some(d) if !open => {
                std::thread::sleep(d - SPIN);
                continue;
            }
            Some(d) => recv.recv_timeout(d - SPIN),
            None => recv
                .recv()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match got {
            Ok(r) => heap.push(r),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => open = false,
        }
    }
    out.flush()
}

impl Replies {
    /// The replies of a connection written through `direct`: by the connection's thread,
    /// or with real timing by a writer thread of their own.
    fn new<W: Write + Send + 'static>(
        direct: BufWriter<W>,
        shared: &Shared,
    ) -> Result<Replies, String> {
        if !shared.timing_real {
            return Ok(Replies::Direct(Box::new(direct)));
        }
        let (send, recv) = mpsc::channel();
        let stream = direct.into_inner().map_err(|e| e.to_string())?;
        let pacing = shared.pacing.clone();
        let writer = std::thread::Builder::new()
            .spawn(move || paced_writer(stream, recv, &pacing))
            .map_err(|e| format!("no thread could be started for its replies ({e})"))?;
        Ok(Replies::Paced { send, writer })
    }

    fn send(&mut self, bytes: &[u8], due: Option<Instant>) -> io::Result<()> {
        match self {
            Replies::Direct(w) => w.write_all(bytes),
            Replies::Paced { send, .. } => send
                .send(Reply {
                    due: due.unwrap_or_else(Instant::now),
                    bytes: bytes.to_vec(),
                })
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "reply writer ended")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Replies::Direct(w) => w.flush(),
            Replies::Paced { .. } => Ok(()),
        }
    }

    fn close(self) -> io::Result<()> {
        match self {
            Replies::Direct(mut w) => w.flush(),
            Replies::Paced { send, writer } => {
                drop(send);
                writer
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("reply writer panicked")))
            }
        }
    }
}

/// Serves one client until it disconnects; an error names the protocol violation.
fn connection(stream: Stream, shared: &Shared) -> Result<(), String> {
    let control = stream.try_clone().map_err(|e| e.to_string())?;
    let read_half = stream.try_clone().map_err(|e| e.to_string())?;
    let mut input = BufReader::with_capacity(1 << 18, read_half);
    let mut direct = BufWriter::with_capacity(1 << 18, stream);
    // The handshake (TLS's included) within the timeout; no timeout in transmission.
    let timeout = shared.limits.handshake_timeout;
    let set_timeout = |t: Option<Duration>| control.set_read_timeout(t).map_err(|e| e.to_string());
    set_timeout(Some(timeout))?;
    let started = Instant::now();
    let timed_out = |e: String| {
        if started.elapsed() >= timeout {
            format!(
                "no handshake within {:.1} s (--handshake-timeout)",
                timeout.as_secs_f64()
            )
        } else {
            e
        }
    };
    let Some(no_zeroes) = proto::greet(&mut input, &mut direct).map_err(timed_out)? else {
        return Ok(());
    };
    let phase = match shared.tls {
        Some(_) => proto::TlsPhase::Required,
        None => proto::TlsPhase::Off,
    };
    let shaken = proto::options(&mut input, &mut direct, &shared.export, no_zeroes, phase);
    match shaken.map_err(timed_out)? {
        Handshake::Left => Ok(()),
        Handshake::Go(session) => {
            set_timeout(None)?;
            let replies = Replies::new(direct, shared)?;
            session_until_closed(&mut input, replies, shared, session)
        }
        Handshake::StartTls => {
            let tls = shared
                .tls
                .as_ref()
                .expect("STARTTLS is acknowledged with TLS only");
            if !input.buffer().is_empty() {
                return Err("the client sent data before the TLS handshake".into());
            }
            let raw = direct.into_inner().map_err(|e| e.to_string())?;
            let io = tls.accept(raw).map_err(timed_out)?;
            let mut input = BufReader::with_capacity(1 << 18, io.clone());
            let mut direct = BufWriter::with_capacity(1 << 18, io);
            let shaken = proto::options(
                &mut input,
                &mut direct,
                &shared.export,
                no_zeroes,
                proto::TlsPhase::Active,
            );
            match shaken.map_err(timed_out)? {
                Handshake::Go(session) => {
                    set_timeout(None)?;
                    let replies = Replies::new(direct, shared)?;
                    session_until_closed(&mut input, replies, shared, session)
                }
                // (STARTTLS is refused once TLS is active.)
                Handshake::Left | Handshake::StartTls => Ok(()),
            }
        }
    }
}

/// The transmission phase, then the replies written out.
fn session_until_closed<R: Read>(
    input: &mut BufReader<R>,
    mut replies: Replies,
    shared: &Shared,
    session: Session,
) -> Result<(), String> {
    let result = transmission(input, &mut replies, shared, session);
    let closed = replies.close();
    result?;
    match closed {
        Ok(()) => Ok(()),
        // The client went away before its replies: nothing to report to it.
        Err(e) if shared.stop.load(Ordering::Relaxed) => {
            let _ = e;
            Ok(())
        }
        Err(e) => Err(format!("writing replies: {e}")),
    }
}

fn transmission<R: Read>(
    input: &mut BufReader<R>,
    replies: &mut Replies,
    shared: &Shared,
    session: Session,
) -> Result<(), String> {
    let mut header = [0u8; 28];
    let mut payload = Vec::new();
    let mut data = Vec::new();
    let epoch = shared.engine().epoch();
    loop {
        if let Err(e) = input.read_exact(&mut header) {
            return match e.kind() {
                // Gone without NBD_CMD_DISC (or stopped by the server): nothing half done.
                io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => Ok(()),
                _ if shared.stop.load(Ordering::Relaxed) => Ok(()),
                _ => Err(format!("reading a request: {e}")),
            };
        }
        let req = proto::parse_request(&header)?;
        if req.kind == proto::CMD_DISC {
            return Ok(());
        }
        if req.kind == proto::CMD_WRITE {
            if req.length > proto::MAX_PAYLOAD {
                return Err(format!(
                    "a write of {} bytes (the limit is {} bytes): its payload cannot be skipped safely",
                    req.length,
                    proto::MAX_PAYLOAD
                ));
            }
            payload.resize(req.length as usize, 0);
            if let Err(e) = input.read_exact(&mut payload) {
                return Err(format!(
                    "disconnected in the middle of a write of {} bytes at offset {} ({e}); \
                     nothing of it was written",
                    req.length, req.offset
                ));
            }
        }
        let result = serve(&req, &payload, &mut data, shared, session);
        let (reply, done_ns) = match result {
            Ok(done) => (answer(&req, &data, session), done),
            Err(f) => {
                shared.errors.fetch_add(1, Ordering::Relaxed);
                shared.event(format!(
                    "request {} (type {}, {} bytes at offset {}) failed: {}",
                    req.handle, req.kind, req.length, req.offset, f.message
                ));
                let reply = if session.structured {
                    proto::structured_error(req.handle, f.errno, &f.message)
                } else {
                    proto::simple_reply(f.errno, req.handle).to_vec()
                };
                (reply, None)
            }
        };
        let due = done_ns.map(|ns| epoch + Duration::from_nanos(ns));
        replies
            .send(&reply, due)
            .map_err(|e| format!("writing a reply: {e}"))?;
        if input.buffer().is_empty() {
            replies
                .flush()
                .map_err(|e| format!("writing a reply: {e}"))?;
        }
    }
}

/// The reply to a request served: a READ's data or a BLOCK_STATUS's extents (`data`) in a
/// chunk when structured replies were negotiated, a simple reply otherwise.
fn answer(req: &RequestHeader, data: &[u8], session: Session) -> Vec<u8> {
    let done = proto::REPLY_FLAG_DONE;
    match req.kind {
        proto::CMD_READ if session.structured && data.is_empty() => {
            proto::structured_reply(done, proto::REPLY_TYPE_NONE, req.handle, &[])
        }
        proto::CMD_READ if session.structured => proto::structured_reply(
            done,
            proto::REPLY_TYPE_OFFSET_DATA,
            req.handle,
            &[&req.offset.to_be_bytes(), data],
        ),
        proto::CMD_BLOCK_STATUS => proto::structured_reply(
            done,
            proto::REPLY_TYPE_BLOCK_STATUS,
            req.handle,
            &[&proto::BASE_ALLOCATION_ID.to_be_bytes(), data],
        ),
        proto::CMD_READ => [&proto::simple_reply(0, req.handle)[..], data].concat(),
        _ => proto::simple_reply(0, req.handle).to_vec(),
    }
}

/// Serves one request (a READ's data, or a BLOCK_STATUS's extents encoded, into `data`);
/// the simulated completion time (None: now).
fn serve(
    req: &RequestHeader,
    payload: &[u8],
    data: &mut Vec<u8>,
    shared: &Shared,
    session: Session,
) -> Result<Option<u64>, Failure> {
    let fua = req.flags & proto::CMD_FLAG_FUA != 0;
    let writes = matches!(
        req.kind,
        proto::CMD_WRITE | proto::CMD_TRIM | proto::CMD_WRITE_ZEROES
    );
    if writes && shared.limits.read_only {
        return Err(Failure {
            errno: proto::EPERM,
            message: "the export is read-only (--read-only)".into(),
        });
    }
    let done = match req.kind {
        proto::CMD_READ => {
            if req.length > proto::MAX_PAYLOAD {
                return Err(Failure {
                    errno: proto::EINVAL,
                    message: format!(
                        "a read of {} bytes (the limit is {})",
                        req.length,
                        proto::MAX_PAYLOAD
                    ),
                });
            }
            shared.engine().read(req.offset, req.length, data)?
        }
        proto::CMD_WRITE => shared.engine().write(req.offset, payload)?,
        proto::CMD_TRIM => in_pieces(shared, req, |e, at, len| e.trim(at, len))?,
        proto::CMD_WRITE_ZEROES => {
            let no_hole = req.flags & proto::CMD_FLAG_NO_HOLE != 0;
            in_pieces(shared, req, |e, at, len| e.write_zeroes(at, len, no_hole))?
        }
        proto::CMD_FLUSH => {
            flush(shared)?;
            return Ok(None);
        }
        proto::CMD_BLOCK_STATUS => {
            if !session.allocation {
                return Err(Failure {
                    errno: proto::EINVAL,
                    message: format!(
                        "BLOCK_STATUS without the `{}` metadata context selected",
                        proto::BASE_ALLOCATION
                    ),
                });
            }
            let one = req.flags & proto::CMD_FLAG_REQ_ONE != 0;
            let max = if one { 1 } else { proto::MAX_EXTENTS };
            let extents = shared.engine().block_status(req.offset, req.length, max)?;
            data.clear();
            for (length, state) in extents {
                data.extend_from_slice(&length.to_be_bytes());
                data.extend_from_slice(&state.to_be_bytes());
            }
            return Ok(None);
        }
        other => {
            return Err(Failure {
                errno: proto::EINVAL,
                message: format!("unknown command type {other}"),
            })
        }
    };
    if fua {
        flush(shared)?;
    }
    Ok(Some(done))
}

/// Serves a long request in pieces of [`PIECE`] bytes (their boundaries page-aligned, so
/// that a piece trims what the whole would), each under its own hold of the lock; the
/// latest simulated completion.
fn in_pieces(
    shared: &Shared,
    req: &RequestHeader,
    mut serve: impl FnMut(&mut Engine, u64, u64) -> Result<u64, Failure>,
) -> Result<u64, Failure> {
    let (start, len) = (req.offset, req.length as u64);
    // A request beyond the export is refused whole (by the engine), changing nothing.
    let end = match start.checked_add(len) {
        Some(end) if end <= shared.export.size => end,
        _ => return serve(&mut shared.engine(), start, len),
    };
    let mut done = 0;
    let mut at = start;
    loop {
        let next = ((at / PIECE + 1) * PIECE).min(end);
        done = done.max(serve(&mut shared.engine(), at, next - at)?);
        at = next;
        if at >= end {
            return Ok(done);
        }
        shared.let_others_in();
    }
}

/// Makes every acknowledged write durable: the write buffer to flash under the lock, then
/// the store's fsync outside it (shared with concurrent flushes).
fn flush(shared: &Shared) -> Result<(), Failure> {
    let sync = shared.engine().flush()?;
    shared.flushes.fetch_add(1, Ordering::Relaxed);
    sync.sync().map_err(|message| Failure {
        errno: proto::EIO,
        message,
    })
}
