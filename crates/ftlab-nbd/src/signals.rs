//! SIGTERM, SIGHUP and SIGINT end a session cleanly (flush, checkpoint, report). They are
//! caught here, in Rust, for the time the server runs: a handler that only sets a flag the
//! accept loop reads, so that the stop never waits for a Python signal handler to get the
//! GIL (with a Python scheme, connection threads hold it for every request).

use std::sync::atomic::{AtomicI32, Ordering};

static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
}

const STOPPING: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT];

/// The handlers in place; the previous ones come back when dropped.
pub struct StopSignals {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl StopSignals {
    pub fn install() -> StopSignals {
        RECEIVED.store(0, Ordering::SeqCst);
        let mut previous = Vec::new();
        for signal in STOPPING {
            // SAFETY: sigaction with a handler that only stores to an atomic.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut old) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        StopSignals { previous }
    }

    /// The name of the stopping signal received, if one was.
    pub fn received(&self) -> Option<&'static str> {
        match RECEIVED.load(Ordering::SeqCst) {
            0 => None,
            libc::SIGTERM => Some("SIGTERM"),
            libc::SIGHUP => Some("SIGHUP"),
            _ => Some("SIGINT"),
        }
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for (signal, old) in &self.previous {
            // SAFETY: restores the action saved by `install`.
            unsafe {
                libc::sigaction(*signal, old, std::ptr::null_mut());
            }
        }
    }
}
