//! Where the server listens: a TCP address (`HOST:PORT`) or a Unix socket (`unix:PATH`),
//! and the client connections of either, behind one type.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

pub enum Listener {
    Tcp(TcpListener),
    /// The socket file is removed when the listener goes.
    Unix(UnixListener, PathBuf),
}

#[derive(Debug)]
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Listener {
    /// Binds `listen` (`HOST:PORT` or `unix:PATH`), non-blocking. A socket file left by a
    /// server that is gone is replaced; one a live server answers on is not.
    pub fn bind(listen: &str) -> Result<Listener, String> {
        let fail = |e: io::Error| format!("cannot listen on {listen}: {e}");
        let listener = match listen.strip_prefix("unix:") {
            Some(path) => {
                let path = PathBuf::from(path);
                if UnixStream::connect(&path).is_ok() {
                    return Err(format!(
                        "cannot listen on {listen}: a server is listening there already"
                    ));
                }
                let stale = std::fs::symlink_metadata(&path).is_ok_and(|m| {
                    use std::os::unix::fs::FileTypeExt;
                    m.file_type().is_socket()
                });
                if stale {
                    std::fs::remove_file(&path).map_err(fail)?;
                }
                let l = UnixListener::bind(&path).map_err(fail)?;
                l.set_nonblocking(true).map_err(fail)?;
                Listener::Unix(l, path)
            }
            None => {
                let l = TcpListener::bind(listen).map_err(fail)?;
                l.set_nonblocking(true).map_err(fail)?;
                Listener::Tcp(l)
            }
        };
        Ok(listener)
    }

    /// `HOST:PORT` as bound, or `unix:PATH`.
    pub fn address(&self) -> String {
        match self {
            Listener::Tcp(l) => l.local_addr().map(|a| a.to_string()).unwrap_or_default(),
            Listener::Unix(_, path) => format!("unix:{}", path.display()),
        }
    }

    /// A client (blocking, TCP_NODELAY on TCP) and its name.
    pub fn accept(&self) -> io::Result<(Stream, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, peer) = l.accept()?;
                s.set_nonblocking(false)?;
                s.set_nodelay(true)?;
                Ok((Stream::Tcp(s), peer.to_string()))
            }
            Listener::Unix(l, path) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok((Stream::Unix(s), format!("unix:{}", path.display())))
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Stream {
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    pub fn shutdown(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        }
    }

    pub fn read_timeout(&self) -> io::Result<Option<Duration>> {
        match self {
            Stream::Tcp(s) => s.read_timeout(),
            Stream::Unix(s) => s.read_timeout(),
        }
    }

    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }
}

impl std::os::fd::AsRawFd for Stream {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}
