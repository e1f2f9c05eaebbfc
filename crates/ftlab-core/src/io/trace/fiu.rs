//! FIU IODedup traces (Koller and Rangaswami, FAST'10): one request per line,
//! `time_ns pid process lba sectors R|W major minor [md5...]`, separated by spaces.
//! Addresses and sizes are 512-byte sectors; the device is `major,minor`. The content
//! hashes (one MD5 per 4 KiB, or per 512 bytes in the `homes` traces; concatenated, or in
//! fields of their own) are ignored. Process names may contain spaces, so the fields after
//! the name are found from the end of the line. The full FIU files start with a few
//! header lines: a line among the first three whose first field is not a number is
//! skipped.
//!
//! The same records saved by pandas (`DataFrame.to_csv`) are read too: cells separated by
//! tabs (`sep="\t"`) or commas (told by the separator after the first cell), a header row
//! among the first three lines (column names, or pandas' default `0 1 2 ... 8`, after an
//! empty cell when there is an index column), and a leading index column, recognised by
//! the number of cells (9 where a record has 8, not counting the hashes).

use super::{
    fields, parse_time_ns, parse_u64, read_or_write, sectors_to_bytes, Devices, LineFormat, Record,
};

const LAYOUT: &str = "time_ns pid process lba sectors R|W major minor [md5]";
const MAX_FIELDS: usize = 32;

pub struct Fiu {
    ns_per_unit: u64,
    device: Vec<u8>,
}

impl Fiu {
    pub fn new(ns_per_unit: u64) -> Self {
        Fiu {
            ns_per_unit,
            device: Vec::new(),
        }
    }
}

fn is_hashes(field: &[u8]) -> bool {
    field.len() >= 32 && field.len().is_multiple_of(32) && field.iter().all(u8::is_ascii_hexdigit)
}

/// The cell separator of a line saved as a table: a tab or a comma ending its first cell
/// (the native layout's first field, the timestamp, is followed by a space). None: the
/// native layout, fields separated by runs of spaces.
#[inline]
fn separator(line: &[u8]) -> Option<u8> {
    for &b in line {
        match b {
            b'\t' | b',' => return Some(b),
            b' ' => return None,
            _ => {}
        }
    }
    None
}

/// The line without its trailing hash fields (and, in a table, empty cells: a missing
/// hash).
fn strip_hashes(mut line: &[u8], sep: Option<u8>) -> &[u8] {
    loop {
        let (rest, last) = match sep {
            None => {
                let trimmed = line.trim_ascii_end();
                match trimmed.iter().rposition(|&b| b == b' ' || b == b'\t') {
                    Some(cut) => (&trimmed[..cut], &trimmed[cut + 1..]),
                    None => return line,
                }
            }
            Some(sep) => match line.iter().rposition(|&b| b == sep) {
                Some(cut) => (&line[..cut], line[cut + 1..].trim_ascii()),
                None => return line,
            },
        };
        if is_hashes(last) || (sep.is_some() && last.is_empty()) {
            line = rest;
        } else {
            return line;
        }
    }
}

/// Stores the fields into `f`; their number.
fn collect<'a>(
    it: impl Iterator<Item = &'a [u8]>,
    f: &mut [&'a [u8]; MAX_FIELDS],
) -> Result<usize, String> {
    let mut n = 0;
    for field in it {
        if n == MAX_FIELDS {
            return Err(format!(
                "more than {MAX_FIELDS} fields (expected `{LAYOUT}`)"
            ));
        }
        f[n] = field;
        n += 1;
    }
    Ok(n)
}

/// A header row: column names, or pandas' default names `0 1 2 ...` (after an empty
/// cell, the index column's, when there is one).
fn is_header(f: &[&[u8]]) -> bool {
    match f.first().and_then(|first| first.first()) {
        None => true,
        Some(b) if !b.is_ascii_digit() => true,
        Some(_) => {
            f.len() >= 8
                && f.iter()
                    .enumerate()
                    .all(|(i, cell)| parse_u64(cell, "") == Ok(i as u64))
        }
    }
}

impl LineFormat for Fiu {
    fn parse<'a>(
        &mut self,
        line: &'a [u8],
        line_no: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        let sep = separator(line);
        let mut f: [&[u8]; MAX_FIELDS] = [&[]; MAX_FIELDS];
        let split = |line: &'a [u8], f: &mut [&'a [u8]; MAX_FIELDS]| match sep {
            None => collect(fields(line), f),
            Some(sep) => collect(line.split(move |&b| b == sep).map(<[u8]>::trim_ascii), f),
        };
        let mut n = match split(line, &mut f) {
            Ok(n) => n,
            // Too many fields: hashes in fields of their own, perhaps (one per 512 bytes).
            Err(_) => split(strip_hashes(line, sep), &mut f)?,
        };
        if f[..n].iter().all(|cell| cell.is_empty()) {
            return Ok(None); // a blank line
        }
        if f[0].first() == Some(&b'#') {
            return Ok(None);
        }
        if line_no <= 3 && is_header(&f[..n]) {
            return Ok(None);
        }
        // The hashes (in a table, an empty cell: no hash) are not used.
        while n > 8 && (is_hashes(f[n - 1]) || (sep.is_some() && f[n - 1].is_empty())) {
            n -= 1;
        }
        if n < 8 {
            return Err(format!(
                "{n} fields where at least 8 are expected (`{LAYOUT}`)"
            ));
        }
        let (time, pid) = match (sep, n) {
            (None, _) | (Some(_), 8) => (f[0], f[1]),
            (Some(_), 9) => {
                parse_u64(f[0], "index")?;
                (f[1], f[2])
            }
            (Some(sep), _) => {
                return Err(format!(
                    "{n} {} cells where 8 are expected (`{LAYOUT}`), or 9 with a leading \
                     index column",
                    if sep == b'\t' {
                        "tab-separated"
                    } else {
                        "comma-separated"
                    }
                ))
            }
        };
        let (lba, sectors, kind, major, minor) = (f[n - 5], f[n - 4], f[n - 3], f[n - 2], f[n - 1]);
        let op = read_or_write(kind, "operation")?;
        let time_ns = parse_time_ns(time, self.ns_per_unit)?;
        parse_u64(pid, "pid")?;
        parse_u64(major, "major")?;
        parse_u64(minor, "minor")?;
        self.device.clear();
        self.device.extend_from_slice(major);
        self.device.push(b',');
        self.device.extend_from_slice(minor);
        Ok(Some(Record {
            time_ns,
            offset_bytes: sectors_to_bytes(parse_u64(lba, "lba")?, "lba")?,
            len_bytes: sectors_to_bytes(parse_u64(sectors, "sectors")?, "sectors")?,
            dev: devices.id(&self.device)?,
            op,
        }))
    }

    fn format_name(&self) -> &'static str {
        "fiu"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Op;

    fn parse(line: &str, line_no: u64) -> Result<Option<Record>, String> {
        Fiu::new(1).parse(line.as_bytes(), line_no, &mut Devices::default())
    }

    #[test]
    fn records_with_and_without_hashes() {
        let r = parse(
            "89966811921625 4257 nfsd 488846200 8 W 6 0 2c4787c7671c2f638777c4ab72859ce1",
            5,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.time_ns, 89_966_811_921_625);
        assert_eq!(
            (r.offset_bytes, r.len_bytes, r.op),
            (488_846_200 * 512, 4096, Op::Write)
        );
        let r = parse("5 1 kworker/0:1 with space 16 16 R 8 1", 9)
            .unwrap()
            .unwrap();
        assert_eq!(
            (r.offset_bytes, r.len_bytes, r.op),
            (16 * 512, 8192, Op::Read)
        );
        let mut devices = Devices::default();
        Fiu::new(1)
            .parse(b"5 1 p 16 16 R 8 1", 9, &mut devices)
            .unwrap();
        assert_eq!(devices.names(), ["8,1"]);
    }

    #[test]
    fn headers_only_at_the_top() {
        assert_eq!(parse("Trace of cheetah mail server", 1), Ok(None));
        assert!(parse("Trace of cheetah mail server", 4).is_err());
    }

    #[test]
    fn bad_lines() {
        assert!(parse("1 2 p 3 8 X 6 0", 5)
            .unwrap_err()
            .contains("operation `X`"));
        assert!(parse("1 2 p 3 8 W", 5).unwrap_err().contains("6 fields"));
        assert!(parse("1 2 p 3 8 W 6 z", 5)
            .unwrap_err()
            .contains("minor `z`"));
    }

    /// Every record of a whole file, through the line reader (line endings, blank lines).
    fn read_all(text: &str) -> Result<Vec<Record>, String> {
        use crate::io::trace::{LineReader, RecordSource};
        let mut r = LineReader::new(
            text.as_bytes(),
            std::path::PathBuf::from("t"),
            Fiu::new(1),
            false,
        );
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().map_err(|e| e.to_string())? {
            out.push(rec);
        }
        Ok(out)
    }

    const NATIVE: &str = "89966811921625 4257 nfsd 488846200 8 W 6 0 2c4787c7671c2f638777c4ab72859ce1
89967003980393 4253 nfsd 508455704 16 W 6 0 88b93b628d84082186026d9da044f173b5e9f4e5ab62a4fff5313a606b0ad4e3
89990107519804 0 swapper 283476784 8 R 6 1 750c11013c9a156ee7c88cd71b687db5
";

    #[test]
    fn pandas_tables_read_as_the_native_layout() {
        let native = read_all(NATIVE).unwrap();
        assert_eq!(native.len(), 3);
        let rows: Vec<Vec<&str>> = NATIVE.lines().map(|l| l.split(' ').collect()).collect();
        let table = |sep: &str, index: bool, header: bool, ending: &str| {
            let mut text = String::new();
            if header {
                let names: Vec<String> = (0..9).map(|i| i.to_string()).collect();
                // pandas names no index column: its header cell is empty.
                let index_name = if index { sep } else { "" };
                text += &format!("{index_name}{}{ending}", names.join(sep));
            }
            for (i, row) in rows.iter().enumerate() {
                let index = if index {
                    format!("{i}{sep}")
                } else {
                    String::new()
                };
                text += &format!("{index}{}{ending}", row.join(sep));
            }
            text + ending + ending // trailing blank lines
        };
        for sep in ["\t", ","] {
            for index in [true, false] {
                for header in [true, false] {
                    for ending in ["\n", "\r\n"] {
                        let text = table(sep, index, header, ending);
                        assert_eq!(read_all(&text).as_ref(), Ok(&native), "{text:?}");
                    }
                }
            }
        }
        // Named columns, as a user would write them, and a missing hash (an empty cell).
        let text = "\tts\tpid\tprocess\tlba\tsize\top\tmajor\tminor\tmd5\n\
                    0\t5\t1\tkworker/0:1 x\t16\t16\tR\t8\t1\t\n";
        let r = read_all(text).unwrap();
        assert_eq!(
            (r[0].time_ns, r[0].offset_bytes, r[0].len_bytes, r[0].op),
            (5, 16 * 512, 8192, Op::Read)
        );
    }

    #[test]
    fn full_files_header_lines_and_hashes_per_512_bytes() {
        // Hashes per 512 bytes as fields of their own: 2, and 64 (more fields than a
        // record has otherwise).
        let hashes = |n: usize| vec!["a".repeat(32); n].join(" ");
        let text = format!(
            "Trace of cheetah.cs.fiu.edu\nStarted 2008-11-01\n# ts pid process ...\n{NATIVE}\
             5 1 p 16 2 W 6 0 {}\n6 1 p q 32 64 R 6 0 {}\n",
            hashes(2),
            hashes(64),
        );
        let r = read_all(&text).unwrap();
        assert_eq!(r.len(), 5);
        assert_eq!((r[3].offset_bytes, r[3].len_bytes), (16 * 512, 1024));
        assert_eq!((r[4].offset_bytes, r[4].len_bytes), (32 * 512, 32768));
    }

    #[test]
    fn bad_table_rows() {
        let e = parse("x\t1\t2\tp\t3\t8\tW\t6\t0", 5).unwrap_err();
        assert!(e.contains("index `x`"), "{e}");
        let e = parse("0\t1\t1\t2\tp\t3\t8\tW\t6\t0", 5).unwrap_err();
        assert!(
            e.contains("10 tab-separated cells where 8 are expected") && e.contains("index"),
            "{e}"
        );
        let e = parse("1,2,p,3,8,W,6", 5).unwrap_err();
        assert!(e.contains("7 fields where at least 8"), "{e}");
        let e = read_all("1 2 p 3 8 W 6 0\n1\t2\tp\t3\t8\tQ\t6\t0\n").unwrap_err();
        assert_eq!(e, "t:2: operation `Q` is neither R nor W");
    }
}
