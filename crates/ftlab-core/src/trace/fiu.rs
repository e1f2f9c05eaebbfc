//! FIU IODedup traces (Koller and Rangaswami, FAST'10): one request per line,
//! `time_ns pid process lba sectors R|W major minor [md5...]`, separated by spaces.
//! Addresses and sizes are 512-byte sectors; the device is `major,minor`. The content
//! hashes (one MD5 per 4 KiB, concatenated) are ignored. Process names may contain spaces,
//! so the fields after the name are found from the end of the line. The full FIU files
//! start with a few header lines: a line among the first three whose first field is not
//! a number is skipped.

use super::{
    fields, parse_time_ns, parse_u64, sectors_to_bytes, show, Devices, LineFormat, Record,
};
use crate::request::Op;

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

impl LineFormat for Fiu {
    fn parse(
        &mut self,
        line: &[u8],
        line_no: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        let mut f: [&[u8]; MAX_FIELDS] = [&[]; MAX_FIELDS];
        let mut n = 0;
        for field in fields(line) {
            if n == MAX_FIELDS {
                return Err(format!(
                    "more than {MAX_FIELDS} fields (expected `{LAYOUT}`)"
                ));
            }
            f[n] = field;
            n += 1;
        }
        if n == 0 || f[0][0] == b'#' {
            return Ok(None);
        }
        if line_no <= 3 && !f[0][0].is_ascii_digit() {
            return Ok(None);
        }
        if n > 8 && is_hashes(f[n - 1]) {
            n -= 1;
        }
        if n < 8 {
            return Err(format!(
                "{n} fields where at least 8 are expected (`{LAYOUT}`)"
            ));
        }
        let (lba, sectors, kind, major, minor) = (f[n - 5], f[n - 4], f[n - 3], f[n - 2], f[n - 1]);
        let op = match kind {
            b"R" | b"r" => Op::Read,
            b"W" | b"w" => Op::Write,
            _ => return Err(format!("operation `{}` is neither R nor W", show(kind))),
        };
        let time_ns = parse_time_ns(f[0], self.ns_per_unit)?;
        parse_u64(f[1], "pid")?;
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
}
