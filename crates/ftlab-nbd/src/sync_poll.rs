//! A CPU kept busy while an fdatasync is in flight (`--sync-poll`, on by default).
//!
//! On a virtual machine, the time an fdatasync takes is set mostly by how fast an idle vCPU
//! wakes up for the I/O's completion, far more than by the I/O: measured in
//! `docs/guide/block-device.md` ("Flush"), with and without a thread spinning beside the
//! sync. This is the polling that storage targets (SPDK, io_uring's SQPOLL) do for the same
//! reason, limited to the sync: a thread parked on a condition variable is woken when a
//! sync starts and spins until it ends, or for at most [`SPIN_LIMIT`] (a sync that takes
//! longer, the first after a load, has its wake-up cost drowned in its own length).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The longest a sync is polled for.
pub const SPIN_LIMIT: Duration = Duration::from_millis(5);

#[derive(Default)]
struct State {
    /// Syncs in flight.
    syncs: Mutex<usize>,
    /// Signalled when a sync starts and when the last one ends.
    changed: Condvar,
    in_flight: AtomicBool,
    quit: AtomicBool,
}

/// The spinning thread; it ends when the poller is dropped.
pub struct SyncPoller {
    state: Arc<State>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SyncPoller {
    /// Starts the thread (`None` if it cannot be started: syncs then go unpolled).
    pub fn start() -> Option<SyncPoller> {
        let state = Arc::new(State::default());
        let spinning = state.clone();
        let thread = std::thread::Builder::new()
            .name("sync-poll".into())
            .spawn(move || spin(&spinning))
            .ok()?;
        Some(SyncPoller {
            state,
            thread: Some(thread),
        })
    }

    /// Runs `sync`, the poller spinning meanwhile.
    pub fn during<T>(&self, sync: impl FnOnce() -> T) -> T {
        {
            let mut syncs = self.state.syncs.lock().unwrap_or_else(|e| e.into_inner());
            *syncs += 1;
            self.state.in_flight.store(true, Ordering::SeqCst);
            self.state.changed.notify_all();
        }
        let result = sync();
        let mut syncs = self.state.syncs.lock().unwrap_or_else(|e| e.into_inner());
        *syncs -= 1;
        if *syncs == 0 {
            self.state.in_flight.store(false, Ordering::SeqCst);
            self.state.changed.notify_all();
        }
        result
    }
}

fn spin(state: &State) {
    loop {
        {
            let mut syncs = state.syncs.lock().unwrap_or_else(|e| e.into_inner());
            while *syncs == 0 && !state.quit.load(Ordering::SeqCst) {
                syncs = state.changed.wait(syncs).unwrap_or_else(|e| e.into_inner());
            }
        }
        if state.quit.load(Ordering::SeqCst) {
            return;
        }
        let start = Instant::now();
        while state.in_flight.load(Ordering::Relaxed) && start.elapsed() < SPIN_LIMIT {
            std::hint::spin_loop();
        }
        // A sync longer than the limit: wait for it to end rather than spin again.
        let mut syncs = state.syncs.lock().unwrap_or_else(|e| e.into_inner());
        while *syncs > 0 && !state.quit.load(Ordering::SeqCst) {
            syncs = state.changed.wait(syncs).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for SyncPoller {
    fn drop(&mut self) {
        self.state.quit.store(true, Ordering::SeqCst);
        {
            let _syncs = self.state.syncs.lock().unwrap_or_else(|e| e.into_inner());
            self.state.changed.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poller_runs_each_sync_and_stops_when_dropped() {
        let poller = SyncPoller::start().expect("a thread");
        for i in 0..100 {
            assert_eq!(poller.during(|| i * 2), i * 2);
        }
        // Two syncs at once, one of them longer than the spin limit.
        std::thread::scope(|s| {
            s.spawn(|| poller.during(|| std::thread::sleep(SPIN_LIMIT * 2)));
            s.spawn(|| poller.during(|| std::thread::sleep(Duration::from_millis(1))));
        });
        drop(poller); // (joins the thread: a hang here fails the test by its timeout)
    }
}
