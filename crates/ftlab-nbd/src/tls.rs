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
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

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
        let stream = ssl
            .accept(stream)
            .map_err(|e| format!("TLS handshake failed: {e}"))?;
        Ok(TlsIo(Rc::new(RefCell::new(stream))))
    }
}

/// A TLS session, as the reading and the writing half of one connection's thread (both
/// halves share the one TLS state).
#[derive(Clone)]
pub struct TlsIo(Rc<RefCell<SslStream<Stream>>>);

impl Read for TlsIo {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.borrow_mut().read(buf)
    }
}

impl Write for TlsIo {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.borrow_mut().flush()
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
