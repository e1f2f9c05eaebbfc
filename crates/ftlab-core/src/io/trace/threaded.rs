//! Reading a trace on a thread of its own: the format's reader parses ahead while the
//! replay runs, and hands over batches of records through a bounded channel (memory: a
//! few batches, whatever the trace's length). The consumer sees exactly what the reader
//! would have given it, in the same order: the records and their line numbers, the
//! devices named, the diagnostics, and the error that ended the reading, after the
//! records before it.

use super::{Devices, Diagnostics, Record, RecordSource};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

/// Records per batch: a hand-over (a futex wake at most) every 4,096 records costs
/// nothing next to parsing them, and a batch (160 KiB) stays in the cache.
pub const BATCH_RECORDS: usize = 4096;

/// Batches parsed ahead of the consumer, at most: 64 Ki records, 2.6 MB. On a busy
/// machine a woken reader may wait milliseconds for a core; the queue covers that while
/// the replay goes on (a queue of 4 holds only about 8 ms of replay).
const AHEAD: usize = 16;

/// Records read in one go, and what the reader knew at the end of them.
struct Batch {
    records: Vec<Record>,
    /// Line (or binary record) number of each record.
    lines: Vec<u64>,
    /// Devices the reader named since the previous batch (it only ever adds devices
    /// between two records).
    new_devices: Vec<String>,
    diagnostics: Diagnostics,
    /// The reader's line at the end of the batch.
    line: u64,
    /// On the last batch: how the reading ended.
    end: Option<Result<()>>,
}

impl Batch {
    fn new(capacity: usize) -> Batch {
        Batch {
            records: Vec::with_capacity(capacity),
            lines: Vec::with_capacity(capacity),
            new_devices: Vec::new(),
            diagnostics: Diagnostics::default(),
            line: 0,
            end: None,
        }
    }
}

/// A [`RecordSource`] fed by a reader on another thread.
pub(crate) struct Threaded {
    batches: Receiver<Batch>,
    /// Drained batches go back to the reader, to be filled again (no allocation per batch).
    drained: Sender<Batch>,
    batch: Batch,
    /// Next record of `batch`.
    pos: usize,
    devices: Devices,
    diagnostics: Diagnostics,
    file: PathBuf,
    format: &'static str,
    line: u64,
    finished: bool,
    worker: Option<JoinHandle<()>>,
}

impl Threaded {
    /// Starts reading `source` on a thread of its own, `batch_records` records at a time.
    pub(crate) fn spawn(source: Box<dyn RecordSource>, batch_records: usize) -> Result<Threaded> {
        let batch_records = batch_records.max(1);
        let file = source.file().to_path_buf();
        let format = source.format();
        let (tx, batches) = mpsc::sync_channel(AHEAD);
        let (drained, recycled) = mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("ftlab-trace-reader".into())
            .spawn(move || produce(source, tx, recycled, batch_records))
            .map_err(|e| Error::Io {
                file: file.clone(),
                message: format!("cannot start the trace reader's thread: {e}"),
            })?;
        Ok(Threaded {
            batches,
            drained,
            batch: Batch::new(0),
            pos: 0,
            devices: Devices::default(),
            diagnostics: Diagnostics::default(),
            file,
            format,
            line: 0,
            finished: false,
            worker: Some(worker),
        })
    }

    /// The reader's thread ended without saying how (it panicked): an error, not a
    /// silently shortened trace.
    #[cold]
    fn lost(&mut self) -> Error {
        let why = match self.worker.take().map(JoinHandle::join) {
            Some(Err(panic)) => panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "it panicked".into()),
            _ => "it stopped".into(),
        };
        Error::Io {
            file: self.file.clone(),
            message: format!("the trace reader failed after line {}: {why}", self.line),
        }
    }
}

/// The reader's thread: fills batches until the end, an error, or the consumer is gone.
fn produce(
    mut source: Box<dyn RecordSource>,
    batches: SyncSender<Batch>,
    recycled: Receiver<Batch>,
    batch_records: usize,
) {
    let mut named = 0;
    loop {
        let mut b = recycled
            .try_recv()
            .unwrap_or_else(|_| Batch::new(batch_records));
        b.records.clear();
        b.lines.clear();
        b.new_devices.clear();
        let end = loop {
            if b.records.len() == batch_records {
                break None;
            }
            match source.next_record() {
                Ok(Some(r)) => {
                    b.records.push(r);
                    b.lines.push(source.line());
                }
                Ok(None) => break Some(Ok(())),
                Err(e) => break Some(Err(e)),
            }
        };
        let names = source.devices().names();
        b.new_devices.extend(names.iter().skip(named).cloned());
        named = named.max(names.len());
        b.diagnostics.clone_from(source.diagnostics());
        b.line = source.line();
        let last = end.is_some();
        b.end = end;
        if batches.send(b).is_err() || last {
            return;
        }
    }
}

impl RecordSource for Threaded {
    #[inline]
    fn next_record(&mut self) -> Result<Option<Record>> {
        loop {
            if let Some(&r) = self.batch.records.get(self.pos) {
                self.line = self.batch.lines[self.pos];
                self.pos += 1;
                return Ok(Some(r));
            }
            if self.finished {
                return Ok(None);
            }
            if let Some(end) = self.batch.end.take() {
                self.finished = true;
                self.line = self.batch.line;
                return end.map(|()| None);
            }
            let Ok(next) = self.batches.recv() else {
                self.finished = true;
                return Err(self.lost());
            };
            let drained = std::mem::replace(&mut self.batch, next);
            let _ = self.drained.send(drained);
            self.pos = 0;
            for name in self.batch.new_devices.drain(..) {
                self.devices.push(name);
            }
            self.diagnostics.clone_from(&self.batch.diagnostics);
        }
    }

    fn devices(&self) -> &Devices {
        &self.devices
    }

    fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    fn line(&self) -> u64 {
        self.line
    }

    fn file(&self) -> &Path {
        &self.file
    }

    fn format(&self) -> &'static str {
        self.format
    }
}
