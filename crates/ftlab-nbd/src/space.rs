//! A full disk under the store: the device turns read-only (writes, trims and zero writes
//! get ENOSPC, reads go on) while the store's file system has less free space than a
//! reserve, and read-write again once it has it back. The reserve covers what one request
//! can make the store allocate (its pages, a write-buffer flush, GC copies into sparse
//! slots), so that a write never meets ENOSPC half done.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often the free space is looked at (a statvfs), at most.
const EVERY: Duration = Duration::from_millis(100);

/// Free bytes for an unprivileged writer on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let path = CString::new(dir.as_os_str().as_bytes())?;
    // SAFETY: statvfs into a zeroed struct, with a NUL-terminated path.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut st) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(st.f_bavail as u64 * st.f_frsize as u64)
    }
}

pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Watches the free space under the store.
pub struct SpaceGuard {
    dir: PathBuf,
    reserve: u64,
    checked: Option<Instant>,
    /// The free space last seen, when it was under the reserve.
    short: Option<u64>,
}

impl SpaceGuard {
    pub fn new(dir: &Path, reserve: u64) -> Self {
        SpaceGuard {
            dir: dir.to_path_buf(),
            reserve,
            checked: None,
            short: None,
        }
    }

    /// The reserve for a device whose write buffer holds `buffer_bytes`.
    pub fn reserve_for(buffer_bytes: u64) -> u64 {
        (8 << 20) + 2 * buffer_bytes
    }

    /// Whether the file system is short of space now (fresh, not rate-limited).
    pub fn is_short(&mut self) -> bool {
        self.checked = None;
        self.writable().is_err()
    }

    /// Ok if the store may grow; else why not.
    pub fn writable(&mut self) -> Result<(), String> {
        if self.checked.is_none_or(|t| t.elapsed() >= EVERY) {
            self.checked = Some(Instant::now());
            // A file system that cannot say is taken as having room.
            self.short = match free_bytes(&self.dir) {
                Ok(free) if free < self.reserve => Some(free),
                _ => None,
            };
        }
        match self.short {
            None => Ok(()),
            Some(free) => Err(format!(
                "the disk under the store is full ({} free, under the {} kept in reserve): \
                 the device is read-only until space is freed",
                mib(free),
                mib(self.reserve)
            )),
        }
    }
}
