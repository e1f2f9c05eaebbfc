//! HP Labs SRT traces (`$$TR_IOREC-1.x`, the format of the HP 1992 "cello" and "hplajw"
//! disk traces that DiskSim validates against), binary:
//!
//! - a text header (trace date, system, and per disk its geometry, `sectorsize = N`)
//!   ending with the byte `0x0C`;
//! - then big-endian 32-bit records `size, id, sec, usec, start, stop, bytes, sectno,
//!   devno, drivertype, cylno, ioflags, ...`, `size` bytes each (56 for I/O records).
//!
//! Record types (the low 16 bits of `id`) 1 (SHORTIO) and 4 (SUSPECTIO) are requests;
//! other types describe none and are skipped. `ioflags` bit 0 marks a read. The device is
//! `(devno >> 8) & 0xFF`, named by that number. The offset is `sectno` times the header's
//! sector size (every disk of the header must agree; 256 bytes, HP-UX's, when the header
//! names none). The timestamp is `sec` seconds and `usec` microseconds, counted in
//! microseconds (`trace.time_unit` may override the unit). Record numbers stand for line
//! numbers in error messages.

use super::{FormatReader, ReaderState, Record, Settings};
use crate::error::{Error, Result};
use crate::request::Op;
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::path::PathBuf;

/// The first bytes of every SRT trace.
pub(crate) const MAGIC: &[u8] = b"$$TR_IOREC-";
/// The byte that ends the text header.
const HEADER_END: u8 = 0x0C;
/// Longest header read before giving up on finding its end.
const MAX_HEADER: usize = 1 << 20;
/// Sector size when the header names none.
const DEFAULT_SECTOR: u64 = 256;
/// The fixed fields of a record: size, id, sec, usec.
const FIXED: usize = 16;
/// Largest record accepted (I/O records are 56 bytes; a larger size field is corrupt).
const MAX_RECORD: usize = 4096;
/// Bytes an I/O record needs: the fixed fields and start, stop, bytes, sectno, devno,
/// drivertype, cylno, ioflags.
const IO_RECORD: usize = FIXED + 32;

fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

pub struct SrtReader<R> {
    input: BufReader<R>,
    ns_per_unit: u64,
    skip_bad: bool,
    state: ReaderState,
    /// Bytes of the sector `sectno` counts, from the header (0 until it is read).
    sector_bytes: u64,
    /// Byte offset of the next record, for messages.
    offset: u64,
    rec: Vec<u8>,
}

impl<R: Read> SrtReader<R> {
    pub(crate) fn new(input: R, file: PathBuf, settings: &Settings, skip_bad: bool) -> Self {
        SrtReader {
            input: BufReader::with_capacity(1 << 20, input),
            ns_per_unit: settings.unit_override.unwrap_or(1_000),
            skip_bad,
            state: ReaderState::new(file),
            sector_bytes: 0,
            offset: 0,
            rec: Vec::with_capacity(64),
        }
    }

    fn io_error(&self, e: std::io::Error) -> Error {
        Error::Io {
            file: self.state.file.clone(),
            message: format!("read failed after record {}: {e}", self.state.line),
        }
    }

    fn bad(&self, offset: u64, message: String) -> Error {
        Error::Trace {
            file: self.state.file.clone(),
            line: self.state.line.max(1),
            message: format!("record at byte {offset}: {message}"),
        }
    }

    /// Reads the text header and the sector size it names.
    fn read_header(&mut self) -> Result<()> {
        let mut header = Vec::new();
        (&mut self.input)
            .take(MAX_HEADER as u64)
            .read_until(HEADER_END, &mut header)
            .map_err(|e| self.io_error(e))?;
        if !header.starts_with(MAGIC) || header.last() != Some(&HEADER_END) {
            return Err(Error::Trace {
                file: self.state.file.clone(),
                line: 1,
                message: format!(
                    "not an HP SRT trace: it must start with `$$TR_IOREC-` and its text header \
                     end with byte 0x0C within {} KiB",
                    MAX_HEADER >> 10
                ),
            });
        }
        self.offset = header.len() as u64;
        self.sector_bytes = sector_size(&header).map_err(|message| Error::Trace {
            file: self.state.file.clone(),
            line: 1,
            message: format!("SRT header: {message}"),
        })?;
        Ok(())
    }

    /// The next whole record into `self.rec`; false at the end of the trace.
    fn read_record(&mut self) -> Result<bool> {
        let at_end = match self.input.fill_buf() {
            Ok(buf) => buf.is_empty(),
            Err(e) => return Err(self.io_error(e)),
        };
        if at_end {
            return Ok(false);
        }
        self.state.line += 1;
        self.state.diagnostics.lines += 1;
        self.rec.resize(FIXED, 0);
        let offset = self.offset;
        let truncated = |this: &Self| this.bad(offset, "truncated record".into());
        match self.input.read_exact(&mut self.rec) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Err(truncated(self)),
            Err(e) => return Err(self.io_error(e)),
        }
        let size = be32(&self.rec, 0) as usize;
        if !(FIXED..=MAX_RECORD).contains(&size) {
            return Err(self.bad(
                offset,
                format!("size field {size} is not between a record's {FIXED} fixed bytes and {MAX_RECORD}"),
            ));
        }
        self.rec.resize(size, 0);
        match self.input.read_exact(&mut self.rec[FIXED..]) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Err(truncated(self)),
            Err(e) => return Err(self.io_error(e)),
        }
        self.offset += size as u64;
        Ok(true)
    }

    /// The request of the record in `self.rec`, if it is an I/O record.
    fn request(&mut self) -> std::result::Result<Option<Record>, String> {
        let rec = &self.rec;
        let kind = be32(rec, 4) & 0xFFFF;
        if kind != 1 && kind != 4 {
            return Ok(None);
        }
        if rec.len() < IO_RECORD {
            return Err(format!(
                "an I/O record of {} bytes; it needs at least {IO_RECORD}",
                rec.len()
            ));
        }
        let (sec, usec) = (be32(rec, 8) as u64, be32(rec, 12) as u64);
        let (bytes, sectno, devno, flags) =
            (be32(rec, 24), be32(rec, 28), be32(rec, 32), be32(rec, 44));
        let time_ns = (sec * 1_000_000 + usec)
            .checked_mul(self.ns_per_unit)
            .ok_or_else(|| format!("timestamp {sec}.{usec:06} is out of range"))?;
        let device = ((devno >> 8) & 0xFF).to_string();
        Ok(Some(Record {
            time_ns,
            offset_bytes: sectno as u64 * self.sector_bytes,
            len_bytes: bytes as u64,
            dev: self.state.devices.id(device.as_bytes())?,
            op: if flags & 1 == 1 { Op::Read } else { Op::Write },
        }))
    }

    fn next_inner(&mut self) -> Result<Option<Record>> {
        if self.sector_bytes == 0 {
            self.read_header()?;
        }
        loop {
            let offset = self.offset;
            if !self.read_record()? {
                return Ok(None);
            }
            match self.request() {
                Ok(Some(r)) => return Ok(Some(r)),
                Ok(None) => self.state.diagnostics.lines_without_request += 1,
                Err(message) => {
                    let err = self.bad(offset, message);
                    if !self.skip_bad {
                        return Err(err);
                    }
                    self.state.skip_bad(err)?;
                }
            }
        }
    }
}

/// The sector size the header's disks declare (`sectorsize = N`), the same for all.
fn sector_size(header: &[u8]) -> std::result::Result<u64, String> {
    let text = String::from_utf8_lossy(header);
    let mut size = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "sectorsize" {
            continue;
        }
        let value = value.trim().trim_end_matches([',', ';']).trim();
        let n: u64 = value
            .parse()
            .ok()
            .filter(|&n| n > 0 && n <= 1 << 20)
            .ok_or_else(|| format!("sectorsize `{value}` is not a number of bytes"))?;
        match size {
            Some(s) if s != n => {
                return Err(format!(
                    "disks of {s}- and {n}-byte sectors; one sector size is supported"
                ))
            }
            _ => size = Some(n),
        }
    }
    Ok(size.unwrap_or(DEFAULT_SECTOR))
}

impl<R: Read + Send> FormatReader for SrtReader<R> {
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
        "srt"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::trace::{Diagnostics, RecordSource};

    fn record(
        kind: u32,
        sec: u32,
        usec: u32,
        bytes: u32,
        sectno: u32,
        disk: u32,
        read: bool,
    ) -> Vec<u8> {
        let fields = [
            56,
            0x40000 | kind,
            sec,
            usec,
            0,
            0,
            bytes,
            sectno,
            0x800_0007 | (disk << 8),
            0,
            0,
            0x1a | read as u32,
            0,
            0,
        ];
        fields.iter().flat_map(|f| f.to_be_bytes()).collect()
    }

    fn trace(header: &str, records: &[Vec<u8>]) -> Vec<u8> {
        let mut out = header.as_bytes().to_vec();
        out.push(HEADER_END);
        for r in records {
            out.extend_from_slice(r);
        }
        out
    }

    fn read_all(bytes: Vec<u8>, skip_bad: bool) -> (Vec<Record>, Result<()>, Diagnostics) {
        let settings = Settings {
            unit_override: None,
            blkparse_event: super::super::BlkEvent::D,
        };
        let mut r = SrtReader::new(
            std::io::Cursor::new(bytes),
            "t.srt".into(),
            &settings,
            skip_bad,
        );
        let mut out = Vec::new();
        loop {
            match r.next_record() {
                Ok(Some(rec)) => out.push(rec),
                Ok(None) => return (out, Ok(()), r.diagnostics().clone()),
                Err(e) => return (out, Err(e), r.diagnostics().clone()),
            }
        }
    }

    const HEADER: &str = "$$TR_IOREC-1.3 (x)\0\ndisks = {\n 0 -> {\n\tsectorsize  = 256,\n}\n 1 -> {\n\tsectorsize  = 256,\n}\n};\n";

    #[test]
    fn io_records_become_requests_others_are_skipped() {
        let bytes = trace(
            HEADER,
            &[
                record(1, 0, 22_479, 4096, 1040, 1, true),
                record(7, 0, 30_000, 0, 0, 0, false),
                record(4, 2, 5, 2048, 12_256, 0, false),
            ],
        );
        let (recs, end, diag) = read_all(bytes, false);
        end.unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(
            (
                recs[0].time_ns,
                recs[0].offset_bytes,
                recs[0].len_bytes,
                recs[0].op
            ),
            (22_479_000, 1040 * 256, 4096, Op::Read)
        );
        assert_eq!(
            (recs[1].time_ns, recs[1].offset_bytes, recs[1].op),
            (2_000_005_000, 12_256 * 256, Op::Write)
        );
        assert_ne!(recs[0].dev, recs[1].dev);
        assert_eq!((diag.lines, diag.lines_without_request), (3, 1));
    }

    #[test]
    fn the_header_sector_size_is_used_and_must_agree() {
        let header = HEADER.replace("256", "512");
        let (recs, end, _) = read_all(trace(&header, &[record(1, 0, 0, 512, 3, 0, false)]), false);
        end.unwrap();
        assert_eq!(recs[0].offset_bytes, 3 * 512);
        let mixed = HEADER.replacen("256", "512", 1);
        let (_, end, _) = read_all(trace(&mixed, &[record(1, 0, 0, 512, 3, 0, false)]), false);
        let message = end.unwrap_err().to_string();
        assert!(
            message.contains("t.srt") && message.contains("sector"),
            "{message}"
        );
        let bare = "$$TR_IOREC-1.3\n";
        let (recs, _, _) = read_all(trace(bare, &[record(1, 0, 0, 512, 3, 0, false)]), false);
        assert_eq!(recs[0].offset_bytes, 3 * DEFAULT_SECTOR);
    }

    #[test]
    fn bad_records_name_the_record_and_can_be_skipped() {
        let mut short = record(1, 0, 0, 512, 3, 0, false);
        short[..4].copy_from_slice(&20u32.to_be_bytes());
        short.truncate(20);
        let good = record(1, 0, 1, 512, 4, 0, false);
        let (_, end, _) = read_all(trace(HEADER, &[short.clone(), good.clone()]), false);
        let message = end.unwrap_err().to_string();
        assert!(
            message.contains("t.srt:1") && message.contains("I/O record of 20 bytes"),
            "{message}"
        );
        let (recs, end, diag) = read_all(trace(HEADER, &[short, good]), true);
        end.unwrap();
        assert_eq!((recs.len(), diag.bad_lines), (1, 1));

        let mut tiny = record(1, 0, 0, 512, 3, 0, false);
        tiny[..4].copy_from_slice(&8u32.to_be_bytes());
        let (_, end, _) = read_all(trace(HEADER, &[tiny]), false);
        assert!(end.unwrap_err().to_string().contains("size field 8"));

        let mut cut = trace(HEADER, &[record(1, 0, 0, 512, 3, 0, false)]);
        cut.truncate(cut.len() - 10);
        let (_, end, _) = read_all(cut, false);
        assert!(end.unwrap_err().to_string().contains("truncated"));

        let (_, end, _) = read_all(b"$$TR_IOREC-1.3 no end".to_vec(), false);
        assert!(end.unwrap_err().to_string().contains("not an HP SRT trace"));
    }
}
