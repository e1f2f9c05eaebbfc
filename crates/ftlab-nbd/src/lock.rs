//! One owner per store: an exclusive `flock` on `DIR/lock`, taken before anything of the
//! store is read or written and held until the owner exits (the kernel drops it when the
//! process dies, `kill -9` included). The lock file holds the owner's process id, so that
//! a refused start can say who owns the store.

use crate::store::open_rw;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// The held lock of a store; released when dropped.
pub struct StoreLock {
    _file: File,
}

impl StoreLock {
    /// Takes the lock of the store in `dir` (created if missing), or says which process
    /// holds it.
    pub fn acquire(dir: &Path) -> Result<StoreLock, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join("lock");
        let mut file = open_rw(&path)?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(format!("{}: cannot lock the store: {e}", path.display()));
            }
            let mut owner = String::new();
            let _ = file.read_to_string(&mut owner);
            let owner = match owner.trim() {
                "" => "another process".to_string(),
                pid => format!("process {pid}"),
            };
            return Err(format!(
                "{} is in use by {owner} (a store has one owner: stop that server first, \
                 or use another --store); nothing was read or written",
                dir.display()
            ));
        }
        let pid = std::process::id().to_string();
        file.set_len(0)
            .and_then(|_| file.rewind())
            .and_then(|_| file.write_all(pid.as_bytes()))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(StoreLock { _file: file })
    }
}
