//! ftlab's own binary trace form (`ftlab trace convert`): what a run needs of any trace
//! (times in ns, operations, byte offsets and lengths, devices and their names, the
//! source's format and diagnostics), compact and read at memory speed. Little-endian:
//!
//! - header: magic `FTLABTRC`, `u16` version (1), `u16` 0, `u8` length + the source
//!   format's name;
//! - blocks: `u32` payload bytes (1 to 1 MiB), `u32` CRC-32 of the payload, the payload;
//! - end: `u32` 0, `u32` payload bytes, `u32` CRC-32, a payload of LEB128 varints: the
//!   records, the source's lines, lines without a request and bad lines, the number of
//!   bad-line examples and each (length + UTF-8); nothing after it.
//!
//! A payload is a sequence of entries, each a varint tag `dev << 2 | kind`: kind 0, 1, 2 a
//! read, write or trim of device `dev`, followed by three varints: the time minus the
//! previous record's (zigzag, wrapping), the offset minus the previous record's end
//! (zigzag, wrapping) and the length; kind 3 names device `dev` (the next one, in order
//! of first appearance): a varint length and the name's bytes. Devices named by the
//! source without a request are named before the end. Record numbers stand for line
//! numbers in error messages. A damaged or cut file is an error naming the block and its
//! byte offset, never a panic.

use super::{Diagnostics, FormatReader, ReaderState, Record, RecordSource, Settings};
use crate::error::{Error, Result};
use crate::request::Op;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

pub(crate) const MAGIC: &[u8] = b"FTLABTRC";
pub const VERSION: u16 = 1;
/// Payload bytes after which the writer closes a block.
const BLOCK_BYTES: usize = 64 << 10;
/// Largest payload a reader accepts (a corrupt length must not allocate gigabytes).
const MAX_BLOCK_BYTES: usize = 1 << 20;
const NAME: u8 = 3;

fn crc(bytes: &[u8]) -> u32 {
    let mut c = flate2::Crc::new();
    c.update(bytes);
    c.sum()
}

#[inline]
fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn zigzag(v: u64) -> u64 {
    ((v as i64) << 1 ^ ((v as i64) >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> u64 {
    (v >> 1) ^ (v & 1).wrapping_neg()
}

/// Writes a trace's records in the binary form: [`write`] drives it.
struct Writer<W: Write> {
    out: W,
    block: Vec<u8>,
    named: usize,
    time: u64,
    end: u64,
}

impl<W: Write> Writer<W> {
    fn name_devices(&mut self, names: &[String]) {
        for (i, name) in names.iter().enumerate().skip(self.named) {
            put(&mut self.block, (i as u64) << 2 | NAME as u64);
            put(&mut self.block, name.len() as u64);
            self.block.extend_from_slice(name.as_bytes());
        }
        self.named = self.named.max(names.len());
    }

    fn record(&mut self, r: &Record) {
        let kind = match r.op {
            Op::Read => 0,
            Op::Write => 1,
            Op::Trim => 2,
        };
        put(&mut self.block, (r.dev as u64) << 2 | kind);
        put(&mut self.block, zigzag(r.time_ns.wrapping_sub(self.time)));
        put(
            &mut self.block,
            zigzag(r.offset_bytes.wrapping_sub(self.end)),
        );
        put(&mut self.block, r.len_bytes);
        self.time = r.time_ns;
        self.end = r.offset_bytes.wrapping_add(r.len_bytes);
    }

    fn flush_block(&mut self) -> std::io::Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        self.out
            .write_all(&(self.block.len() as u32).to_le_bytes())?;
        self.out.write_all(&crc(&self.block).to_le_bytes())?;
        self.out.write_all(&self.block)?;
        self.block.clear();
        Ok(())
    }
}

/// Writes every record of `source` to `out` in the binary form; `progress(records)` is
/// called every 65,536 records (false stops). Returns the records written.
pub fn write(
    source: &mut dyn RecordSource,
    out: impl Write,
    output: &Path,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<u64> {
    let io = |e: std::io::Error| Error::Io {
        file: output.to_path_buf(),
        message: format!("cannot write the converted trace: {e}"),
    };
    let mut w = Writer {
        out,
        block: Vec::with_capacity(BLOCK_BYTES + 1024),
        named: 0,
        time: 0,
        end: 0,
    };
    let format = source.format().as_bytes();
    w.out.write_all(MAGIC).map_err(io)?;
    w.out.write_all(&VERSION.to_le_bytes()).map_err(io)?;
    w.out.write_all(&[0, 0, format.len() as u8]).map_err(io)?;
    w.out.write_all(format).map_err(io)?;
    let mut records = 0u64;
    while let Some(r) = source.next_record()? {
        w.name_devices(source.devices().names());
        w.record(&r);
        records += 1;
        if w.block.len() >= BLOCK_BYTES {
            w.flush_block().map_err(io)?;
        }
        if records.is_multiple_of(1 << 16) && !progress(records) {
            return Err(Error::Usage("interrupted".into()));
        }
    }
    w.name_devices(source.devices().names());
    w.flush_block().map_err(io)?;
    let d = source.diagnostics();
    let mut end = Vec::new();
    for v in [records, d.lines, d.lines_without_request, d.bad_lines] {
        put(&mut end, v);
    }
    put(&mut end, d.bad_line_examples.len() as u64);
    for e in &d.bad_line_examples {
        put(&mut end, e.len() as u64);
        end.extend_from_slice(e.as_bytes());
    }
    w.out.write_all(&0u32.to_le_bytes()).map_err(io)?;
    w.block = end;
    w.flush_block().map_err(io)?;
    w.out.flush().map_err(io)?;
    progress(records);
    Ok(records)
}

/// Reads the binary form.
pub(crate) struct BinaryReader<R> {
    input: R,
    /// The current block's payload, and the next entry's position in it.
    block: Vec<u8>,
    pos: usize,
    /// Byte offset in the file of the current block, and its number (from 1).
    block_offset: u64,
    block_no: u64,
    /// Bytes of the file read so far.
    offset: u64,
    started: bool,
    unit_override: Option<u64>,
    time: u64,
    end: u64,
    state: ReaderState,
}

/// A varint at `*pos` of `b`; None if it runs past the end or beyond 64 bits.
#[inline]
fn get(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = *b.get(*pos)?;
        *pos += 1;
        if shift == 63 && byte > 1 {
            return None;
        }
        v |= ((byte & 0x7f) as u64) << shift;
        if byte < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

impl<R: Read> BinaryReader<R> {
    pub(crate) fn new(input: R, file: PathBuf, settings: &Settings, _skip_bad: bool) -> Self {
        BinaryReader {
            input,
            block: Vec::new(),
            pos: 0,
            block_offset: 0,
            block_no: 0,
            offset: 0,
            started: false,
            unit_override: settings.unit_override,
            time: 0,
            end: 0,
            state: ReaderState::new(file),
        }
    }

    fn bad(&self, message: String) -> Error {
        Error::Trace {
            file: self.state.file.clone(),
            line: self.state.line.max(1),
            message,
        }
    }

    /// Fills `buf` from the input; `what` names it if the file ends first.
    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        let mut got = 0;
        while got < buf.len() {
            match self.input.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(self.bad(format!(
                        "the file ends at byte {} inside {what}: it is truncated",
                        self.offset + got as u64
                    )))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::Io {
                        file: self.state.file.clone(),
                        message: format!("read failed after record {}: {e}", self.state.line),
                    })
                }
            }
        }
        self.offset += got as u64;
        Ok(())
    }

    fn header(&mut self) -> Result<()> {
        let mut head = [0u8; 13];
        self.fill(&mut head, "the header")?;
        if &head[..8] != MAGIC {
            return Err(self.bad("not an ftlab binary trace (no `FTLABTRC` header)".into()));
        }
        let version = u16::from_le_bytes([head[8], head[9]]);
        if version != VERSION {
            return Err(self.bad(format!(
                "binary trace version {version}; this ftlab reads version {VERSION}"
            )));
        }
        if self.unit_override.is_some() {
            return Err(Error::config(
                "trace.time_unit",
                "a converted trace's times are in ns: give the time unit when converting",
            ));
        }
        // The source's format name: for people reading the file.
        let mut name = vec![0; head[12] as usize];
        self.fill(&mut name, "the header")
    }

    /// Reads the next block (or the end); false at the end.
    fn next_block(&mut self) -> Result<bool> {
        self.block_offset = self.offset;
        self.block_no += 1;
        let mut head = [0u8; 8];
        let what = format!("block {} (byte {})", self.block_no, self.block_offset);
        self.fill(&mut head[..4], &what)?;
        let mut len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
        let last = len == 0;
        if last {
            self.fill(&mut head[..4], "the end record")?;
            len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
        }
        self.fill(&mut head[4..], &what)?;
        if len > MAX_BLOCK_BYTES {
            return Err(self.bad(format!(
                "{what} claims {len} bytes, more than a block may have: the file is corrupt"
            )));
        }
        let stored = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
        let mut block = std::mem::take(&mut self.block);
        block.resize(len, 0);
        self.fill(&mut block, &what)?;
        self.block = block;
        self.pos = 0;
        if crc(&self.block) != stored {
            return Err(self.bad(format!("{what}: checksum mismatch: the file is corrupt")));
        }
        if last {
            self.finish()?;
        }
        Ok(!last)
    }

    /// Reads the end record: the counts must agree, nothing may follow.
    fn finish(&mut self) -> Result<()> {
        let corrupt = |r: &Self| r.bad("the end record is corrupt".into());
        let b = std::mem::take(&mut self.block);
        let mut pos = 0;
        let mut next = || get(&b, &mut pos);
        let (Some(records), Some(lines), Some(without), Some(bad), Some(examples)) =
            (next(), next(), next(), next(), next())
        else {
            return Err(corrupt(self));
        };
        if records != self.state.line {
            return Err(self.bad(format!(
                "the end record counts {records} records but the file holds {}: the file is corrupt",
                self.state.line
            )));
        }
        let mut d = Diagnostics {
            lines,
            lines_without_request: without,
            bad_lines: bad,
            bad_line_examples: Vec::new(),
        };
        for _ in 0..examples.min(super::BAD_LINE_EXAMPLES as u64 + 1) {
            let len = get(&b, &mut pos).ok_or_else(|| corrupt(self))? as usize;
            let text = b
                .get(pos..pos.saturating_add(len))
                .ok_or_else(|| corrupt(self))?;
            d.bad_line_examples
                .push(String::from_utf8_lossy(text).into_owned());
            pos += len;
        }
        if pos != b.len() || d.bad_line_examples.len() as u64 != examples {
            return Err(corrupt(self));
        }
        let mut one = [0u8; 1];
        if !matches!(self.input.read(&mut one), Ok(0)) {
            return Err(self.bad(format!(
                "bytes after the end record (byte {}): the file is corrupt",
                self.offset
            )));
        }
        self.state.diagnostics = d;
        Ok(())
    }

    #[cold]
    fn corrupt_entry(&self) -> Error {
        self.bad(format!(
            "block {} (byte {}): a bad entry at payload byte {}: the file is corrupt",
            self.block_no, self.block_offset, self.pos
        ))
    }

    fn next_inner(&mut self) -> Result<Option<Record>> {
        if !self.started {
            self.started = true;
            self.header()?;
        }
        loop {
            if self.pos == self.block.len() && !self.next_block()? {
                return Ok(None);
            }
            let b = &self.block;
            let mut pos = self.pos;
            let Some(tag) = get(b, &mut pos) else {
                return Err(self.corrupt_entry());
            };
            let dev = tag >> 2;
            if tag & 3 == NAME as u64 {
                let name = get(b, &mut pos)
                    .and_then(|len| b.get(pos..pos.checked_add(len as usize)?))
                    .filter(|_| dev == self.state.devices.len() as u64);
                let Some(name) = name else {
                    return Err(self.corrupt_entry());
                };
                pos += name.len();
                let name = name.to_vec();
                if let Err(m) = self.state.devices.id(&name) {
                    return Err(self.bad(m));
                }
                self.pos = pos;
                continue;
            }
            let fields = (get(b, &mut pos), get(b, &mut pos), get(b, &mut pos));
            let (Some(dt), Some(doff), Some(len)) = fields else {
                return Err(self.corrupt_entry());
            };
            let op = [Op::Read, Op::Write, Op::Trim][(tag & 3) as usize];
            let time = self.time.wrapping_add(unzigzag(dt));
            let offset = self.end.wrapping_add(unzigzag(doff));
            if dev >= self.state.devices.len() as u64
                || len > super::MAX_REQUEST_BYTES
                || offset.checked_add(len).is_none()
            {
                return Err(self.corrupt_entry());
            }
            self.pos = pos;
            self.time = time;
            self.end = offset + len;
            self.state.line += 1;
            self.state.diagnostics.lines += 1;
            return Ok(Some(Record {
                time_ns: time,
                offset_bytes: offset,
                len_bytes: len,
                dev: dev as u32,
                op,
            }));
        }
    }
}

impl<R: Read + Send> FormatReader for BinaryReader<R> {
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
        "ftlab"
    }
}
