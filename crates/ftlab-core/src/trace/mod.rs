//! Trace readers: streaming, constant memory in the trace's length, and precise about bad
//! input (file, line and reason).
//!
//! A text format implements [`LineFormat`], which turns one line into at most one request;
//! [`LineReader`] does the rest (buffered reading, line splitting, line numbers, CRLF,
//! blank lines, a last line without a newline, error positions).

mod ascii;

use crate::error::{Error, Result};
use crate::request::{Request, RequestStream};
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

pub use ascii::DiskSimAscii;

/// Trace formats: (name, description).
pub const FORMATS: &[(&str, &str)] = &[
    (
        "disksim",
        "DiskSim / MQSim / SSDSim ASCII: `time dev lba sectors op`, 512-byte sectors, op bit 0 = read",
    ),
    ("mqsim", "alias of disksim"),
    ("ssdsim", "alias of disksim"),
    ("ascii", "alias of disksim"),
];

/// How many nanoseconds one unit of a trace's timestamps is.
pub fn time_unit_ns(unit: &str) -> Result<f64> {
    match unit {
        "ns" => Ok(1.0),
        "us" => Ok(1e3),
        "ms" => Ok(1e6),
        "s" => Ok(1e9),
        other => Err(Error::Usage(format!(
            "unknown time unit `{other}`; use one of ns, us, ms, s"
        ))),
    }
}

/// Opens a trace file as a stream of requests.
pub fn open(path: &Path, format: &str, time_unit: &str) -> Result<RequestStream<'static>> {
    let ns_per_unit = time_unit_ns(time_unit)?;
    let parser = match format {
        "disksim" | "mqsim" | "ssdsim" | "ascii" => DiskSimAscii::new(ns_per_unit),
        other => {
            let names: Vec<&str> = FORMATS.iter().map(|(n, _)| *n).collect();
            return Err(Error::Usage(format!(
                "unknown trace format `{other}`; the formats are: {}",
                names.join(", ")
            )));
        }
    };
    let file = File::open(path).map_err(|e| Error::Io {
        file: path.to_path_buf(),
        message: format!("cannot open trace: {e}"),
    })?;
    Ok(Box::new(LineReader::new(file, path.to_path_buf(), parser)))
}

/// One text trace format: a line in, at most one request out.
pub trait LineFormat {
    /// Parses one line (without its line ending). `Ok(None)` skips the line (a comment or
    /// a record that is not a request); `Err` is the reason the line is bad.
    fn parse(&mut self, line: &[u8]) -> std::result::Result<Option<Request>, String>;
}

const CHUNK: usize = 1 << 20;

/// Splits a byte stream into lines and feeds them to a [`LineFormat`].
pub struct LineReader<R, P> {
    input: R,
    file: PathBuf,
    parser: P,
    buf: Vec<u8>,
    /// Start of the unread part of `buf`.
    pos: usize,
    /// End of the valid bytes in `buf`.
    end: usize,
    eof: bool,
    line: u64,
    failed: bool,
}

impl<R: Read, P: LineFormat> LineReader<R, P> {
    pub fn new(input: R, file: PathBuf, parser: P) -> Self {
        LineReader {
            input,
            file,
            parser,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            eof: false,
            line: 0,
            failed: false,
        }
    }

    /// Moves the unread tail to the front and reads more; grows the buffer for a line
    /// longer than it.
    fn refill(&mut self) -> Result<()> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(Error::Io {
                        file: self.file.clone(),
                        message: format!("read failed after line {}: {e}", self.line),
                    })
                }
            }
        }
    }

    /// The next line's byte range in `buf`, or None at the end.
    fn next_line(&mut self) -> Result<Option<(usize, usize)>> {
        loop {
            if let Some(i) = self.buf[self.pos..self.end]
                .iter()
                .position(|&b| b == b'\n')
            {
                let start = self.pos;
                self.pos += i + 1;
                self.line += 1;
                return Ok(Some((start, start + i)));
            }
            if self.eof {
                if self.pos < self.end {
                    let start = self.pos;
                    self.pos = self.end;
                    self.line += 1;
                    return Ok(Some((start, self.end)));
                }
                return Ok(None);
            }
            self.refill()?;
        }
    }

    fn bad(&self, message: String) -> Error {
        Error::Trace {
            file: self.file.clone(),
            line: self.line,
            message,
        }
    }
}

impl<R: Read, P: LineFormat> Iterator for LineReader<R, P> {
    type Item = Result<Request>;

    fn next(&mut self) -> Option<Result<Request>> {
        if self.failed {
            return None;
        }
        loop {
            let (start, mut end) = match self.next_line() {
                Ok(Some(range)) => range,
                Ok(None) => return None,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            };
            if end > start && self.buf[end - 1] == b'\r' {
                end -= 1;
            }
            match self.parser.parse(&self.buf[start..end]) {
                Ok(Some(req)) => return Some(Ok(req)),
                Ok(None) => continue,
                Err(message) => {
                    self.failed = true;
                    return Some(Err(self.bad(message)));
                }
            }
        }
    }
}

/// Splits a line into whitespace-separated fields (spaces and tabs).
pub(crate) fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&b| b == b' ' || b == b'\t')
        .filter(|f| !f.is_empty())
}

/// A field as text for error messages, shortened if long.
pub(crate) fn show(field: &[u8]) -> String {
    let s = String::from_utf8_lossy(field);
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s.into_owned()
    }
}

/// An unsigned decimal integer field.
pub(crate) fn parse_u64(field: &[u8], name: &str) -> std::result::Result<u64, String> {
    if field.is_empty() || field.len() > 20 {
        return Err(format!(
            "{name} `{}` is not an unsigned integer",
            show(field)
        ));
    }
    let mut v: u64 = 0;
    for &b in field {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(format!(
                "{name} `{}` is not an unsigned integer",
                show(field)
            ));
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(d as u64))
            .ok_or_else(|| format!("{name} `{}` is too large", show(field)))?;
    }
    Ok(v)
}

/// A non-negative timestamp field (integer or decimal) scaled to nanoseconds.
pub(crate) fn parse_time_ns(field: &[u8], ns_per_unit: f64) -> std::result::Result<u64, String> {
    if let Ok(v) = parse_u64(field, "time") {
        if ns_per_unit == 1.0 {
            return Ok(v);
        }
        return scale_time(v as f64, ns_per_unit, field);
    }
    let text = std::str::from_utf8(field)
        .map_err(|_| format!("time `{}` is not a number", show(field)))?;
    let v: f64 = text
        .parse()
        .map_err(|_| format!("time `{}` is not a number", show(field)))?;
    scale_time(v, ns_per_unit, field)
}

fn scale_time(v: f64, ns_per_unit: f64, field: &[u8]) -> std::result::Result<u64, String> {
    let ns = (v * ns_per_unit).round();
    if !(ns.is_finite() && ns >= 0.0 && ns < u64::MAX as f64) {
        return Err(format!(
            "time `{}` is negative or out of range",
            show(field)
        ));
    }
    Ok(ns as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Op;

    fn read(text: &[u8]) -> Vec<Result<Request>> {
        LineReader::new(text, PathBuf::from("t.trace"), DiskSimAscii::new(1.0)).collect()
    }

    #[test]
    fn lines_crlf_blank_and_missing_final_newline() {
        let reqs = read(b"0 0 8 8 0\r\n\n   \n# comment\n5 0 16 8 1");
        let reqs: Vec<Request> = reqs.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(reqs.len(), 2);
        assert_eq!(
            reqs[1],
            Request {
                time_ns: 5,
                offset_bytes: 16 * 512,
                len_bytes: 4096,
                op: Op::Read
            }
        );
    }

    #[test]
    fn errors_name_file_line_and_field_then_stop() {
        let out = read(b"0 0 8 8 0\n1 0 x 8 0\n2 0 8 8 0\n");
        assert_eq!(out.len(), 2);
        let err = out[1].clone().unwrap_err().to_string();
        assert_eq!(err, "t.trace:2: lba `x` is not an unsigned integer");
    }

    #[test]
    fn lines_longer_than_the_buffer_are_read_whole() {
        let mut text = vec![b' '; CHUNK + 100];
        text.extend_from_slice(b"7 0 1 1 1\n");
        let reqs = read(&text);
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].clone().unwrap().time_ns, 7);
    }

    #[test]
    fn chunk_boundaries_do_not_split_requests() {
        let mut text = Vec::new();
        let n = 200_000u64;
        for i in 0..n {
            text.extend_from_slice(format!("{i} 0 {} 8 {}\n", i * 8, i % 2).as_bytes());
        }
        let reqs: Vec<Request> = read(&text).into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(reqs.len() as u64, n);
        for (i, r) in reqs.iter().enumerate() {
            assert_eq!(r.offset_bytes, i as u64 * 4096);
        }
    }

    #[test]
    fn time_units_and_decimals() {
        assert_eq!(parse_time_ns(b"1.5", 1e6), Ok(1_500_000));
        assert_eq!(parse_time_ns(b"3", 1e3), Ok(3000));
        assert_eq!(parse_time_ns(b"2e3", 1.0), Ok(2000));
        assert!(parse_time_ns(b"-1", 1.0).is_err());
        assert!(parse_time_ns(b"nan", 1.0).is_err());
        assert!(time_unit_ns("fortnight").is_err());
    }

    #[test]
    fn missing_file_names_the_file() {
        let err = open(Path::new("/nonexistent/x.trace"), "disksim", "ns")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("/nonexistent/x.trace: cannot open trace"),
            "{err}"
        );
        let err = open(Path::new("x"), "msr-nope", "ns")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("unknown trace format"), "{err}");
    }
}
