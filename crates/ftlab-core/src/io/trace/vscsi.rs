//! CloudPhysics VSCSI traces (SHARDS, FAST'15), binary, little-endian, as libCacheSim
//! reads them:
//!
//! - version 1, 32-byte records: `u32 sn, u32 len_bytes, u32 nSG, u16 opcode, u16 ver
//!   (0x01xx), u64 lbn (512 B), u64 ts_us`;
//! - version 2, 40-byte records: `u16 opcode, u16 ver (0x02xx), u32 sn, u32 len_bytes,
//!   u32 nSG, u64 lbn, u64 ts_us, u64 response_us`.
//!
//! The version is read from the first record. SCSI READ(6/10/12/16) are reads and
//! WRITE(6/10/12/16) writes; other commands carry no data range and are skipped. The
//! trace is of one virtual disk (device `0`). Record numbers stand for line numbers in
//! error messages.

use super::{FormatReader, ReaderState, Record, Settings};
use crate::error::{Error, Result};
use crate::request::Op;
use std::io::{ErrorKind, Read};
use std::path::PathBuf;

const READS: [u16; 4] = [0x08, 0x28, 0xA8, 0x88];
const WRITES: [u16; 4] = [0x0A, 0x2A, 0xAA, 0x8A];

/// The request a SCSI command is: READ(6/10/12/16) a read, WRITE(6/10/12/16) a write,
/// anything else (TEST UNIT READY, SYNCHRONIZE CACHE, INQUIRY, ...) none.
pub(crate) fn scsi_op(opcode: u16) -> Option<Op> {
    if READS.contains(&opcode) {
        Some(Op::Read)
    } else if WRITES.contains(&opcode) {
        Some(Op::Write)
    } else {
        None
    }
}

/// The version a record announces (0 if neither layout fits).
pub(crate) fn record_version(rec: &[u8]) -> u8 {
    let v1 = u16::from_le_bytes([rec[14], rec[15]]);
    let v2 = u16::from_le_bytes([rec[2], rec[3]]);
    if v1 >> 8 == 1 {
        1
    } else if v2 >> 8 == 2 && rec.len() >= 40 {
        2
    } else {
        0
    }
}

fn record_size(version: u8) -> usize {
    if version == 2 {
        40
    } else {
        32
    }
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

pub struct VscsiReader<R> {
    input: R,
    ns_per_unit: u64,
    skip_bad: bool,
    state: ReaderState,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    version: u8,
    device: u32,
}

impl<R: Read> VscsiReader<R> {
    pub(crate) fn new(input: R, file: PathBuf, settings: &Settings, skip_bad: bool) -> Self {
        let mut state = ReaderState::new(file);
        let device = state.devices.id(b"0").expect("the first device");
        VscsiReader {
            input,
            ns_per_unit: settings.unit_override.unwrap_or(1_000),
            skip_bad,
            state,
            buf: vec![0; 1 << 20],
            pos: 0,
            end: 0,
            eof: false,
            version: 0,
            device,
        }
    }

    /// Makes at least `n` bytes available unless the input ends first.
    fn fill(&mut self, n: usize) -> Result<()> {
        while self.end - self.pos < n && !self.eof {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
            }
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::Io {
                        file: self.state.file.clone(),
                        message: format!("read failed after record {}: {e}", self.state.line),
                    })
                }
            }
        }
        Ok(())
    }

    fn bad(&self, offset: u64, message: String) -> Error {
        Error::Trace {
            file: self.state.file.clone(),
            line: self.state.line.max(1),
            message: format!("record at byte {offset}: {message}"),
        }
    }

    fn next_inner(&mut self) -> Result<Option<Record>> {
        loop {
            let size = record_size(self.version);
            self.fill(if self.version == 0 { 40 } else { size })?;
            let available = self.end - self.pos;
            if available == 0 {
                return Ok(None);
            }
            let offset = self.state.line * size as u64;
            self.state.line += 1;
            self.state.diagnostics.lines += 1;
            if self.version == 0 {
                self.version = if available >= 32 {
                    record_version(&self.buf[self.pos..self.pos + available.min(40)])
                } else {
                    0
                };
                if self.version == 0 {
                    self.state.failed = true;
                    return Err(self.bad(
                        0,
                        "not a CloudPhysics vscsi record (no version 1 or 2 field)".into(),
                    ));
                }
            }
            let size = record_size(self.version);
            if available < size {
                self.pos = self.end;
                let err = self.bad(
                    offset,
                    format!("truncated: {available} bytes of a {size}-byte record"),
                );
                if !self.skip_bad {
                    return Err(err);
                }
                self.state.skip_bad(err)?;
                continue;
            }
            let rec = &self.buf[self.pos..self.pos + size];
            self.pos += size;
            let (opcode, version, len, lbn, ts) = if self.version == 1 {
                (
                    u16_at(rec, 12),
                    u16_at(rec, 14),
                    u32_at(rec, 4),
                    u64_at(rec, 16),
                    u64_at(rec, 24),
                )
            } else {
                (
                    u16_at(rec, 0),
                    u16_at(rec, 2),
                    u32_at(rec, 8),
                    u64_at(rec, 16),
                    u64_at(rec, 24),
                )
            };
            let checked = if version >> 8 != self.version as u16 {
                Err(format!(
                    "version field 0x{version:04x} in a version {} trace",
                    self.version
                ))
            } else if let (Some(offset_bytes), Some(time_ns)) =
                (lbn.checked_mul(512), ts.checked_mul(self.ns_per_unit))
            {
                Ok((offset_bytes, time_ns))
            } else {
                Err(format!("lbn {lbn} or timestamp {ts} is out of range"))
            };
            let (offset_bytes, time_ns) = match checked {
                Ok(v) => v,
                Err(message) => {
                    let err = self.bad(offset, message);
                    if !self.skip_bad {
                        return Err(err);
                    }
                    self.state.skip_bad(err)?;
                    continue;
                }
            };
            let Some(op) = scsi_op(opcode) else {
                self.state.diagnostics.lines_without_request += 1;
                continue;
            };
            if offset_bytes.checked_add(len as u64).is_none() {
                let err = self.bad(offset, "the request ends beyond 2^64 bytes".into());
                if !self.skip_bad {
                    return Err(err);
                }
                self.state.skip_bad(err)?;
                continue;
            }
            return Ok(Some(Record {
                time_ns,
                offset_bytes,
                len_bytes: len as u64,
                dev: self.device,
                op,
            }));
        }
    }
}

impl<R: Read + Send> FormatReader for VscsiReader<R> {
    fn read_next(&mut self) -> Result<Option<Record>> {
        self.next_inner()
    }

    fn state(&self) -> &ReaderState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut ReaderState {
        &mut self.state
    }

    fn format_name(&self) -> &'static str {
        "vscsi"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::trace::BlkEvent;
    use crate::io::trace::{Diagnostics, RecordSource};

    fn v1(opcode: u16, len: u32, lbn: u64, ts: u64) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&7u32.to_le_bytes());
        r.extend_from_slice(&len.to_le_bytes());
        r.extend_from_slice(&1u32.to_le_bytes());
        r.extend_from_slice(&opcode.to_le_bytes());
        r.extend_from_slice(&0x0100u16.to_le_bytes());
        r.extend_from_slice(&lbn.to_le_bytes());
        r.extend_from_slice(&ts.to_le_bytes());
        r
    }

    fn v2(opcode: u16, len: u32, lbn: u64, ts: u64) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&opcode.to_le_bytes());
        r.extend_from_slice(&0x0200u16.to_le_bytes());
        r.extend_from_slice(&7u32.to_le_bytes());
        r.extend_from_slice(&len.to_le_bytes());
        r.extend_from_slice(&1u32.to_le_bytes());
        r.extend_from_slice(&lbn.to_le_bytes());
        r.extend_from_slice(&ts.to_le_bytes());
        r.extend_from_slice(&99u64.to_le_bytes());
        r
    }

    fn read_all(bytes: &[u8], skip: bool) -> (Vec<Record>, Option<String>, Diagnostics) {
        let settings = Settings {
            unit_override: None,
            blkparse_event: BlkEvent::D,
        };
        let mut r = VscsiReader::new(bytes, PathBuf::from("t.vscsi"), &settings, skip);
        let mut out = Vec::new();
        loop {
            match r.next_record() {
                Ok(Some(rec)) => out.push(rec),
                Ok(None) => return (out, None, r.diagnostics().clone()),
                Err(e) => return (out, Some(e.to_string()), r.diagnostics().clone()),
            }
        }
    }

    #[test]
    fn both_versions() {
        for make in [v1, v2] {
            let mut bytes = make(0x2a, 4096, 100, 5);
            bytes.extend(make(0x35, 0, 0, 6)); // SYNCHRONIZE CACHE: skipped
            bytes.extend(make(0x28, 512, 8, 7));
            let (recs, err, diag) = read_all(&bytes, false);
            assert_eq!(err, None);
            assert_eq!(recs.len(), 2);
            assert_eq!(
                (recs[0].op, recs[0].offset_bytes, recs[0].len_bytes),
                (Op::Write, 51_200, 4096)
            );
            assert_eq!((recs[1].op, recs[1].time_ns), (Op::Read, 7_000));
            assert_eq!(diag.lines_without_request, 1);
        }
    }

    #[test]
    fn skipping_bad_records_of_an_endless_stream_ends() {
        // A SYNCHRONIZE CACHE (no request), then nothing but records of another version.
        let first = v1(0x35, 0, 0, 0);
        let input = std::io::Cursor::new(first).chain(std::io::repeat(2));
        let settings = Settings {
            unit_override: None,
            blkparse_event: BlkEvent::D,
        };
        let mut r = VscsiReader::new(input, PathBuf::from("t.vscsi"), &settings, true);
        let e = r.next_record().unwrap_err().to_string();
        assert!(
            e.starts_with("t.vscsi:10001: 10000 bad lines and not one request"),
            "{e}"
        );
    }

    #[test]
    fn truncated_and_bad_records() {
        let mut bytes = v1(0x2a, 4096, 100, 5);
        bytes.extend_from_slice(&[1, 2, 3]);
        let (recs, err, _) = read_all(&bytes, false);
        assert_eq!(recs.len(), 1);
        assert_eq!(
            err.unwrap(),
            "t.vscsi:2: record at byte 32: truncated: 3 bytes of a 32-byte record"
        );
        let mut bytes = v1(0x2a, 4096, 100, 5);
        bytes.extend(v2(0x2a, 4096, 100, 5)[..32].to_vec());
        bytes.extend(v1(0x28, 4096, 100, 5));
        let (recs, err, diag) = read_all(&bytes, true);
        assert_eq!((recs.len(), err), (2, None));
        assert_eq!(diag.bad_lines, 1);
        assert!(
            diag.bad_line_examples[0].contains("version field 0x"),
            "{:?}",
            diag
        );
        let (_, err, _) = read_all(b"this is not binary at all, not at all, really", false);
        assert!(err.unwrap().contains("not a CloudPhysics vscsi record"));
    }
}
