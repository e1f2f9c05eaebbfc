//! The status endpoint (`--status HOST:PORT`): the live metrics over HTTP while the device
//! serves, as JSON (`/`, `/status`) and in Prometheus' text format (`/metrics`). One
//! request per connection, answered by one thread that also accepts.

use crate::server::Shared;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The metrics, by name, with their Prometheus type and help.
fn metrics(shared: &Shared) -> Vec<(&'static str, &'static str, &'static str, u64)> {
    let l = shared.live();
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let pacing = shared.pacing.summary();
    vec![
        ("requests", "counter", "requests served", l.requests),
        (
            "pages_written",
            "counter",
            "host pages written",
            l.pages_written,
        ),
        ("pages_read", "counter", "host pages read", l.pages_read),
        (
            "flash_programs",
            "counter",
            "flash page programs",
            l.flash_programs,
        ),
        (
            "gc_invocations",
            "counter",
            "garbage collections",
            l.gc_invocations,
        ),
        (
            "memory_bytes",
            "gauge",
            "the scheme's mapping DRAM",
            l.memory_bytes,
        ),
        (
            "connections",
            "gauge",
            "client connections",
            shared.connections.load(Ordering::Relaxed) as u64,
        ),
        (
            "flushes",
            "counter",
            "FLUSH requests",
            load(&shared.flushes),
        ),
        ("errors", "counter", "failed requests", load(&shared.errors)),
        (
            "media_errors",
            "counter",
            "reads of damaged pages",
            shared.media_errors(),
        ),
        (
            "fsyncs",
            "counter",
            "fdatasyncs of the store",
            shared.fsyncs(),
        ),
        (
            "paced_replies",
            "counter",
            "replies held to their simulated completion (--timing real)",
            pacing.replies,
        ),
        (
            "pacing_late_p50_ns",
            "gauge",
            "median time a paced reply went out after its simulated completion",
            pacing.late_p50_ns,
        ),
        (
            "pacing_late_p99_ns",
            "gauge",
            "99th percentile of that time",
            pacing.late_p99_ns,
        ),
        (
            "pacing_late_max_ns",
            "gauge",
            "the longest of that time",
            pacing.late_max_ns,
        ),
    ]
}

fn answer(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 8192 {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&request);
    let path = text.split_whitespace().nth(1).unwrap_or("");
    let (status, kind, body) = match path {
        "/" | "/status" => {
            let fields: serde_json::Map<String, serde_json::Value> = metrics(shared)
                .into_iter()
                .map(|(name, _, _, v)| (name.to_string(), v.into()))
                .collect();
            (
                "200 OK",
                "application/json",
                serde_json::Value::Object(fields).to_string(),
            )
        }
        "/metrics" => {
            let mut out = String::new();
            for (name, kind, help, v) in metrics(shared) {
                let suffix = if kind == "counter" { "_total" } else { "" };
                out += &format!(
                    "# HELP ftlab_{name}{suffix} {help}\n# TYPE ftlab_{name}{suffix} {kind}\n\
                     ftlab_{name}{suffix} {v}\n"
                );
            }
            ("200 OK", "text/plain; version=0.0.4", out)
        }
        _ => (
            "404 Not Found",
            "text/plain",
            "try / or /metrics\n".to_string(),
        ),
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Binds `listen` for [`spawn`] (before the store is opened, as the server's own address).
pub fn bind(listen: &str) -> Result<TcpListener, String> {
    let fail = |e: std::io::Error| format!("cannot listen on {listen} (--status): {e}");
    let listener = TcpListener::bind(listen).map_err(fail)?;
    listener.set_nonblocking(true).map_err(fail)?;
    Ok(listener)
}

/// Answers status requests on `listener` until the server stops; the bound address and
/// the thread.
pub fn spawn(
    listener: TcpListener,
    shared: Arc<Shared>,
) -> Result<(String, JoinHandle<()>), String> {
    let address = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let handle = std::thread::Builder::new()
        .spawn(move || {
            while !shared.stopping() {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let _ = stream.set_nonblocking(false);
                        let _ = answer(stream, &shared);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        })
        .map_err(|e| format!("--status: no thread could be started ({e})"))?;
    Ok((address, handle))
}
