//! TLS for the NBD connections (`--tls-psk FILE`, or `--tls-cert FILE --tls-key FILE`), with
//! the conventions of the NBD tools (nbdkit, qemu-nbd): the client upgrades the connection
//! with NBD_OPT_STARTTLS during the handshake, and a server with TLS configured requires
//! it (every other option before it gets NBD_REP_ERR_TLS_REQD). A PSK file holds one
//! `identity:key` per line, the key in hexadecimal (the `keys.psk` of qemu's
//! `tls-creds-psk` and of nbdkit's `--tls-psk`).
//!
//! OpenSSL (the system's libssl, through the `openssl` crate) rather than rustls: rustls has
//! no TLS-PSK, which the NBD tools use.

use crate::socket::Stream;
use openssl::ssl::{SslAcceptor, SslContext, SslFiletype, SslMethod, SslStream, SslVersion};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// How the server authenticates (and is authenticated by) its clients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlsConfig {
    /// Pre-shared keys: the file of `identity:hexkey` lines.
    Psk(PathBuf),
    /// An X.509 certificate (PEM, its chain after it) and its private key (PEM).
    Cert { cert: PathBuf, key: PathBuf },
}

/// The server's TLS context, made once at start-up (a bad file fails the start).
pub struct Tls {
    context: SslContext,
}

/// Reads a PSK file: identity to key.
pub fn read_psk_file(path: &Path) -> Result<HashMap<Vec<u8>, Vec<u8>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut keys = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |what: &str| format!("{}:{}: {what}", path.display(), n + 1);
        let (identity, hex) = line
            .split_once(':')
            .ok_or_else(|| bad("expected `identity:hexkey`"))?;
        if identity.is_empty() {
            return Err(bad("the identity is empty"));
        }
        if hex.is_empty() || hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("the key is not an even number of hexadecimal digits"));
        }
        let key = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("checked hex"))
            .collect();
        keys.insert(identity.as_bytes().to_vec(), key);
    }
    if keys.is_empty() {
        return Err(format!("{}: no `identity:hexkey` line", path.display()));
    }
    Ok(keys)
}

impl Tls {
    pub fn new(config: &TlsConfig) -> Result<Tls, String> {
        let ssl = |what: &str, e: openssl::error::ErrorStack| format!("TLS: {what}: {e}");
        let context = match config {
            TlsConfig::Psk(path) => {
                let keys = read_psk_file(path)?;
                let mut b =
                    SslContext::builder(SslMethod::tls_server()).map_err(|e| ssl("context", e))?;
                // TLS 1.2's PSK cipher suites: what GnuTLS clients (qemu, nbdkit) offer for
                // a PSK, and no certificate is involved.
                b.set_min_proto_version(Some(SslVersion::TLS1_2))
                    .and_then(|_| b.set_max_proto_version(Some(SslVersion::TLS1_2)))
                    .and_then(|_| b.set_cipher_list("PSK"))
                    .map_err(|e| ssl("PSK cipher suites", e))?;
                b.set_psk_server_callback(move |_ssl, identity, out| {
                    let key = identity.and_then(|id| keys.get(id)).ok_or_else(|| {
                        openssl::error::ErrorStack::get() // (empty: an unknown identity)
                    })?;
                    if key.len() > out.len() {
                        return Err(openssl::error::ErrorStack::get());
                    }
                    out[..key.len()].copy_from_slice(key);
                    Ok(key.len())
                });
                b.build()
            }
            TlsConfig::Cert { cert, key } => {
                let mut b = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server())
                    .map_err(|e| ssl("context", e))?;
                b.set_certificate_chain_file(cert)
                    .map_err(|e| ssl(&format!("{}", cert.display()), e))?;
                b.set_private_key_file(key, SslFiletype::PEM)
                    .map_err(|e| ssl(&format!("{}", key.display()), e))?;
                b.check_private_key().map_err(|e| {
                    ssl(
                        &format!("{} does not match {}", key.display(), cert.display()),
                        e,
                    )
                })?;
                b.build().into_context()
            }
        };
        Ok(Tls { context })
    }

    /// The server side of the TLS handshake on `stream` (after STARTTLS was acknowledged).
    pub fn accept(&self, stream: Stream) -> Result<TlsIo, String> {
        let ssl = openssl::ssl::Ssl::new(&self.context).map_err(|e| format!("TLS: {e}"))?;
        let socket = Arc::new(stream.try_clone().map_err(|e| e.to_string())?);
        let stream = ssl
            .accept(stream)
            .map_err(|e| format!("TLS handshake failed: {e}"))?;
        Ok(TlsIo {
            session: Arc::new(Mutex::new(stream)),
            socket,
        })
    }
}

/// A TLS session, as the reading and the writing half of one connection (both halves share
/// the one TLS state, which OpenSSL lets one thread use at a time). The halves may be on two
/// threads (a paced connection's replies are written by a thread of their own): a read
/// waits for the socket to be readable without holding the session, so that a reply can be
/// written while the client is silent, then takes it to decrypt what came.
#[derive(Clone)]
pub struct TlsIo {
    session: Arc<Mutex<SslStream<Stream>>>,
    /// The connection's socket (a second handle): what the wait for input polls, with the
    /// read timeout set on it (the handshake's, none in transmission).
    socket: Arc<Stream>,
}

impl TlsIo {
    fn session(&self) -> MutexGuard<'_, SslStream<Stream>> {
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the socket has input (or the timeout passes: `TimedOut`).
    fn wait_readable(&self) -> io::Result<()> {
        let timeout = self.socket.read_timeout()?;
        let ms = timeout.map_or(-1, |t| t.as_millis().clamp(1, i32::MAX as u128) as i32);
        let mut poll = libc::pollfd {
            fd: self.socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: one valid pollfd, for the socket this session owns.
            match unsafe { libc::poll(&mut poll, 1, ms) } {
                0 => return Err(io::Error::new(io::ErrorKind::TimedOut, "read timed out")),
                n if n > 0 => return Ok(()),
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
    }
}

impl Read for TlsIo {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Bytes already decrypted, or a record buffered by OpenSSL, need no wait.
        if self.session().ssl().pending() == 0 {
            self.wait_readable()?;
        }
        // (A record that arrived in part blocks here, the session held, until the rest
        // comes: the client sends whole records, so that is the time of one packet.)
        self.session().read(buf)
    }
}

impl Write for TlsIo {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.session().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.session().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psk_files_are_read_and_bad_lines_named() {
        let dir = std::env::temp_dir().join(format!("ftlab-psk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys.psk");
        std::fs::write(&path, "# comment\nalice:00ff10\n\nbob:abcd\n").unwrap();
        let keys = read_psk_file(&path).unwrap();
        assert_eq!(keys[&b"alice".to_vec()], vec![0x00, 0xff, 0x10]);
        assert_eq!(keys.len(), 2);
        for (text, problem) in [
            ("alice\n", ":1: expected `identity:hexkey`"),
            ("alice:0g\n", ":1: the key is not"),
            ("ok:00\n:00\n", ":2: the identity is empty"),
            ("# nothing\n", "no `identity:hexkey` line"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = read_psk_file(&path).unwrap_err();
            assert!(err.contains(problem), "{text:?}: {err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
