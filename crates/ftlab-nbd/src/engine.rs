//! The device with its data: byte-addressed reads, writes, trims and zero writes over a
//! simulated device whose page store keeps the bytes. Requests arrive at the wall-clock
//! time since the device opened (an open-loop replay of what the clients send), so the
//! simulated completion time is when the simulated SSD would have answered.

use crate::space::SpaceGuard;
use crate::store::{PageStore, SyncGroup};
use ftlab_core::run::block_device::{Device, Live};
use ftlab_core::{Op, Request};
use std::sync::Arc;
use std::time::Instant;

/// An NBD error for a request (an errno value) with what went wrong.
#[derive(Debug)]
pub struct Failure {
    pub errno: u32,
    pub message: String,
}

pub struct Engine {
    device: Box<dyn Device>,
    page: u64,
    size: u64,
    epoch: Instant,
    /// Set by the first error the simulator or the store met: later writes fail with EIO
    /// (what the device holds is no longer known to be right), reads go on.
    failed: Option<String>,
    /// Writes wait for free space under the store (else ENOSPC).
    space: SpaceGuard,
    /// Per logical page, whether it holds data (written and not trimmed since): what
    /// BLOCK_STATUS reports. Kept here rather than asked of the scheme, so that a status
    /// query costs no simulated flash operation.
    allocated: PageBits,
}

/// A bit per logical page.
struct PageBits(Vec<u64>);

impl PageBits {
    fn new(pages: usize) -> PageBits {
        PageBits(vec![0; pages.div_ceil(64)])
    }

    fn get(&self, page: u64) -> bool {
        self.0[(page / 64) as usize] >> (page % 64) & 1 == 1
    }

    fn set(&mut self, pages: std::ops::Range<u64>, on: bool) {
        for page in pages {
            let (word, bit) = ((page / 64) as usize, page % 64);
            if on {
                self.0[word] |= 1 << bit;
            } else {
                self.0[word] &= !(1 << bit);
            }
        }
    }
}

/// An extent of the `base:allocation` context: its length in bytes and its state flags.
pub type Extent = (u32, u32);

impl Engine {
    /// `device` must have a [`PageStore`] attached; writes need `reserve` bytes free under
    /// the store.
    pub fn new(
        mut device: Box<dyn Device>,
        epoch: Instant,
        reserve: u64,
    ) -> Result<Engine, String> {
        let layout = *device.layout();
        let Some(store) = store_of(&mut device) else {
            return Err("internal: the device has no page store".into());
        };
        let space = SpaceGuard::new(store.dir(), reserve);
        // What the flash holds at start-up (a fresh store: nothing; a reopened one: every
        // page recovered). The write buffer is empty here.
        let map = device.mapping().map_err(|e| e.to_string())?;
        let mut allocated = PageBits::new(map.len());
        for (lpa, &ppn) in map.iter().enumerate() {
            if ppn != ftlab_core::device::nand::NONE {
                allocated.set(lpa as u64..lpa as u64 + 1, true);
            }
        }
        Ok(Engine {
            space,
            allocated,
            device,
            page: layout.page_size as u64,
            size: layout.logical_pages * layout.page_size as u64,
            epoch,
            failed: None,
        })
    }

    /// Export size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn page_size(&self) -> u64 {
        self.page
    }

    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    pub fn live(&self) -> Live {
        self.device.live()
    }

    pub fn last_seq(&self) -> u64 {
        self.device.last_seq()
    }

    /// Media errors met in the session (reads of damaged pages).
    pub fn media_errors(&mut self) -> u64 {
        self.store().media_errors
    }

    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    pub fn store(&mut self) -> &mut PageStore {
        store_of(&mut self.device).expect("checked at construction")
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn check_range(&self, offset: u64, len: u64, errno: u32) -> Result<(), Failure> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Failure {
                errno,
                message: format!(
                    "request of {len} bytes at offset {offset} goes beyond the export's {} bytes",
                    self.size
                ),
            }),
        }
    }

    fn check_failed(&self) -> Result<(), Failure> {
        match &self.failed {
            Some(e) => Err(Failure {
                errno: crate::proto::EIO,
                message: format!("the device failed earlier: {e}"),
            }),
            None => Ok(()),
        }
    }

    /// What a request that changes the device checks first: no earlier failure, room on the
    /// disk.
    fn check_writable(&mut self) -> Result<(), Failure> {
        self.check_failed()?;
        self.space.writable().map_err(|message| Failure {
            errno: crate::proto::ENOSPC,
            message,
        })
    }

    /// Whether the disk under the store is short of space now.
    pub fn disk_full(&mut self) -> bool {
        self.space.is_short()
    }

    /// The media error the request just served met (a damaged page it read): EIO for this
    /// request only, the device goes on.
    fn media_check(&mut self) -> Result<(), Failure> {
        match self.store().take_media_error() {
            None => Ok(()),
            Some(m) => Err(Failure {
                errno: crate::proto::EIO,
                message: format!("media error: {m}"),
            }),
        }
    }

    /// Runs one request through the simulator; the store's error, if it met one, fails the
    /// request and the device.
    fn submit(&mut self, op: Op, offset: u64, len: u64) -> Result<u64, Failure> {
        let req = Request {
            time_ns: self.now_ns(),
            offset_bytes: offset,
            len_bytes: len as u32,
            op,
        };
        let result = self.device.submit(&req);
        // (Reported once: the device then refuses writes, reads go on.)
        let store_error = self.store().take_error();
        let message = match (result, store_error) {
            (Ok(c), None) => return Ok(c.done_ns),
            // An append-only scheme refusing an overwrite: the device is unchanged.
            (Err(e @ ftlab_core::Error::Refused { .. }), None) => {
                return Err(Failure {
                    errno: crate::proto::EPERM,
                    message: e.to_string(),
                })
            }
            (Err(e), _) => e.to_string(),
            (Ok(_), Some(e)) => e,
        };
        self.failed.get_or_insert(message.clone());
        Err(Failure {
            errno: crate::proto::EIO,
            message,
        })
    }

    /// Reads `len` bytes at `offset` into `out`; returns the simulated completion time.
    pub fn read(&mut self, offset: u64, len: u32, out: &mut Vec<u8>) -> Result<u64, Failure> {
        self.check_range(offset, len as u64, crate::proto::EINVAL)?;
        out.clear();
        if len == 0 {
            return Ok(self.now_ns());
        }
        self.store().begin_read();
        let done = self.submit(Op::Read, offset, len as u64)?;
        self.media_check()?;
        let start = (offset % self.page) as usize;
        let data = self.store().read_out();
        out.extend_from_slice(&data[start..start + len as usize]);
        Ok(done)
    }

    /// Writes `data` at `offset`.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<u64, Failure> {
        self.check_range(offset, data.len() as u64, crate::proto::ENOSPC)?;
        self.check_writable()?;
        if data.is_empty() {
            return Ok(self.now_ns());
        }
        let page = self.page;
        let end = offset + data.len() as u64;
        let first_seq = self.device.last_seq() + 1;
        let (first, last) = (offset / page, end.div_ceil(page));
        for lpa in first..last {
            let (page_start, page_end) = (lpa * page, (lpa + 1) * page);
            let (lo, hi) = (offset.max(page_start), end.min(page_end));
            let bytes = &data[(lo - offset) as usize..(hi - offset) as usize];
            let seq = first_seq + (lpa - first);
            let store = store_of(&mut self.device).expect("checked at construction");
            if lo == page_start && hi == page_end {
                store.stage(lpa as u32, seq, bytes);
            } else {
                store.stage_partial(lpa as u32, seq, (lo - page_start) as usize, bytes);
            }
        }
        match self.submit(Op::Write, offset, data.len() as u64) {
            Ok(done) => {
                self.store().settle_write();
                self.allocated.set(first..last, true);
                // (The write is done, over a damaged page: that page stays damaged.)
                self.media_check()?;
                Ok(done)
            }
            Err(e) => {
                self.store().unstage_from(first_seq);
                Err(e)
            }
        }
    }

    /// Trims the pages `offset .. offset + len` covers entirely (the rest is left as it
    /// is: TRIM is advisory).
    pub fn trim(&mut self, offset: u64, len: u64) -> Result<u64, Failure> {
        self.check_range(offset, len, crate::proto::ENOSPC)?;
        self.check_writable()?;
        let page = self.page;
        let (first, last) = (offset.div_ceil(page), (offset + len) / page);
        if first < last {
            let last_seq = self.device.last_seq();
            let store = self.store();
            for lpa in first..last {
                store.trimmed(lpa as u32);
            }
            store.log_trims(first as u32..last as u32, last_seq);
            self.allocated.set(first..last, false);
        }
        // Trims of more than 4 GiB go in pieces (a request's length is 32 bits).
        let mut done = self.now_ns();
        let mut at = offset;
        while at < offset + len {
            let piece = (offset + len - at).min(1 << 31);
            done = self.submit(Op::Trim, at, piece)?;
            at += piece;
        }
        Ok(done)
    }

    /// Makes `offset .. offset + len` read as zeros: whole pages are trimmed (and the trim
    /// logged, so they stay zero across a crash) unless `no_hole`, partial pages written.
    pub fn write_zeroes(&mut self, offset: u64, len: u64, no_hole: bool) -> Result<u64, Failure> {
        self.check_range(offset, len, crate::proto::ENOSPC)?;
        self.check_writable()?;
        let page = self.page;
        let end = offset + len;
        let zeros = vec![0u8; (len.min(1 << 20)) as usize];
        let mut done = self.now_ns();
        let mut write_zeros = |engine: &mut Engine, from: u64, to: u64| -> Result<(), Failure> {
            let mut at = from;
            while at < to {
                let n = (to - at).min(zeros.len() as u64);
                done = engine.write(at, &zeros[..n as usize])?;
                at += n;
            }
            Ok(())
        };
        let (whole_start, whole_end) = (offset.div_ceil(page) * page, end / page * page);
        if no_hole || whole_start >= whole_end {
            write_zeros(self, offset, end)?;
            return Ok(done);
        }
        write_zeros(self, offset, whole_start)?;
        write_zeros(self, whole_end, end)?;
        let t = self.trim(whole_start, whole_end - whole_start)?;
        Ok(done.max(t))
    }

    /// The `base:allocation` extents of `offset .. offset + len` (`len` > 0, inside the
    /// export): runs of pages that hold data (state 0) or are holes (read as zeros), at most
    /// `max` of them (the protocol's 2^20 per reply, or 1 for `NBD_CMD_FLAG_REQ_ONE`).
    pub fn block_status(&self, offset: u64, len: u32, max: usize) -> Result<Vec<Extent>, Failure> {
        self.check_range(offset, len as u64, crate::proto::EINVAL)?;
        if len == 0 {
            return Err(Failure {
                errno: crate::proto::EINVAL,
                message: "a block status query of 0 bytes".into(),
            });
        }
        let hole = crate::proto::STATE_HOLE | crate::proto::STATE_ZERO;
        let end = offset + len as u64;
        let mut extents: Vec<Extent> = Vec::new();
        let mut at = offset;
        while at < end {
            let lpa = at / self.page;
            let state = if self.allocated.get(lpa) { 0 } else { hole };
            let next = ((lpa + 1) * self.page).min(end);
            let n = (next - at) as u32;
            let full = extents.len() == max;
            match extents.last_mut() {
                Some((length, last)) if *last == state => *length += n,
                _ if full => break,
                _ => extents.push((n, state)),
            }
            at = next;
        }
        Ok(extents)
    }

    /// First half of a flush (with the device locked): writes the write buffer to flash and
    /// records pending erases; returns the sync to wait for (without the lock).
    pub fn flush(&mut self) -> Result<Arc<SyncGroup>, Failure> {
        let fail = |message: String| Failure {
            errno: crate::proto::EIO,
            message,
        };
        self.check_failed()?;
        if let Err(e) = self.device.flush() {
            let message = e.to_string();
            self.failed.get_or_insert(message.clone());
            return Err(fail(message));
        }
        let store = self.store();
        if let Err(message) = store.prepare_flush() {
            self.failed.get_or_insert(message.clone());
            return Err(fail(message));
        }
        Ok(self.store().sync_group())
    }

    /// The device, for the end of the session.
    /// The logical-to-physical map the flash holds (after a flush: every current copy).
    pub fn mapping(&self) -> Result<Vec<ftlab_core::device::nand::Ppn>, String> {
        self.device.mapping().map_err(|e| e.to_string())
    }

    pub fn into_device(self) -> Box<dyn Device> {
        self.device
    }
}

/// The page store attached to `device`, if it is one.
pub fn store_of(device: &mut Box<dyn Device>) -> Option<&mut PageStore> {
    device.sink()?.as_any_mut().downcast_mut::<PageStore>()
}

#[cfg(test)]
mod tests {
    use super::PageBits;

    #[test]
    fn page_bits_set_and_clear_ranges_across_words() {
        let mut bits = PageBits::new(200);
        bits.set(60..130, true);
        bits.set(64..70, false);
        let on: Vec<u64> = (0..200).filter(|&p| bits.get(p)).collect();
        let expected: Vec<u64> = (60..64).chain(70..130).collect();
        assert_eq!(on, expected);
        bits.set(199..200, true);
        assert!(bits.get(199) && !bits.get(198));
    }
}
