//! fio iologs (`write_iolog`), versions 2 and 3, told apart by their first line
//! (`fio version 2 iolog` / `fio version 3 iolog`).
//!
//! - v2: `file action [offset length]`. No timestamps: requests follow each other at the
//!   time reached so far, which `file wait usec` lines advance (as fio replays them).
//! - v3: `time_us file action [offset length]`, time in microseconds since the start.
//!
//! Actions `read`, `write` and `trim` are requests (bytes); `add`, `open`, `close`, `sync`
//! and `datasync` are not. The device is the file name.

use super::{fields, parse_time_ns, parse_u64, show, Devices, LineFormat, Record};
use crate::request::Op;

pub struct Fio {
    /// Nanoseconds per time unit: v2 wait delays and v3 timestamps are microseconds.
    ns_per_unit: u64,
    version: u8,
    /// v2: the time reached by the wait actions so far.
    clock_ns: u64,
}

impl Fio {
    pub fn new(unit_override: Option<u64>) -> Self {
        Fio {
            ns_per_unit: unit_override.unwrap_or(1_000),
            version: 0,
            clock_ns: 0,
        }
    }
}

const V2: &str = "file action [offset length]";
const V3: &str = "time file action [offset length]";

impl LineFormat for Fio {
    fn parse(
        &mut self,
        line: &[u8],
        _: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        let mut f: [&[u8]; 5] = [&[]; 5];
        let mut n = 0;
        for field in fields(line) {
            if n == 5 {
                return Err(format!(
                    "more than 5 fields (expected `{}`)",
                    if self.version == 2 { V2 } else { V3 }
                ));
            }
            f[n] = field;
            n += 1;
        }
        if n == 0 {
            return Ok(None);
        }
        if self.version == 0 {
            self.version =
                match line.trim_ascii() {
                    b"fio version 2 iolog" => 2,
                    b"fio version 3 iolog" => 3,
                    _ => return Err(
                        "a fio iolog starts with `fio version 2 iolog` or `fio version 3 iolog`"
                            .to_string(),
                    ),
                };
            return Ok(None);
        }
        let (time_ns, rest) = if self.version == 3 {
            (parse_time_ns(f[0], self.ns_per_unit)?, &f[1..n])
        } else {
            (self.clock_ns, &f[..n])
        };
        let layout = if self.version == 2 { V2 } else { V3 };
        if rest.len() < 2 {
            return Err(format!("missing action (expected `{layout}`)"));
        }
        let (file, action) = (rest[0], rest[1]);
        let op = match action {
            b"read" => Op::Read,
            b"write" => Op::Write,
            b"trim" => Op::Trim,
            b"add" | b"open" | b"close" | b"sync" | b"datasync" => return Ok(None),
            b"wait" => {
                if self.version == 2 {
                    let delay = rest
                        .get(2)
                        .ok_or_else(|| "wait without a delay".to_string())?;
                    let delay = parse_time_ns(delay, self.ns_per_unit)?;
                    self.clock_ns = self.clock_ns.saturating_add(delay);
                }
                return Ok(None); // fio ignores waits in v3 logs
            }
            _ => {
                return Err(format!(
                "unknown action `{}` (read, write, trim, sync, datasync, wait, add, open, close)",
                show(action)
            ))
            }
        };
        if rest.len() < 4 {
            return Err(format!(
                "`{}` without offset and length (expected `{layout}`)",
                show(action)
            ));
        }
        Ok(Some(Record {
            time_ns,
            offset_bytes: parse_u64(rest[2], "offset")?,
            len_bytes: parse_u64(rest[3], "length")?,
            dev: devices.id(file)?,
            op,
        }))
    }

    fn format_name(&self) -> &'static str {
        "fio"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(text: &str) -> Result<Vec<Record>, String> {
        let mut p = Fio::new(None);
        let mut d = Devices::default();
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if let Some(r) = p.parse(line.as_bytes(), i as u64 + 1, &mut d)? {
                out.push(r);
            }
        }
        Ok(out)
    }

    #[test]
    fn version_3() {
        let r = parse_all(
            "fio version 3 iolog\n2 /dev/nvme1n1 add\n872 /dev/nvme1n1 open\n878 /dev/nvme1n1 write 0 16384\n\
             900 /dev/nvme1n1 read 4096 4096\n950 /dev/nvme1n1 trim 8192 8192\n960 /dev/nvme1n1 sync\n\
             10001677 /dev/nvme1n1 close\n",
        )
        .unwrap();
        let ops: Vec<Op> = r.iter().map(|r| r.op).collect();
        assert_eq!(ops, [Op::Write, Op::Read, Op::Trim]);
        assert_eq!((r[0].time_ns, r[0].len_bytes), (878_000, 16384));
        assert_eq!(r[2].offset_bytes, 8192);
    }

    #[test]
    fn version_2_waits_advance_the_clock() {
        let r = parse_all(
            "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb read 0 4096\n\
             /dev/sdb wait 1500 0\n/dev/sdb write 4096 4096\n",
        )
        .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].time_ns, r[1].time_ns), (0, 1_500_000));
    }

    #[test]
    fn bad_lines() {
        let e = parse_all("/dev/sdb read 0 4096\n").unwrap_err();
        assert!(e.contains("starts with `fio version"), "{e}");
        let e = parse_all("fio version 3 iolog\n5 f frobnicate 0 1\n").unwrap_err();
        assert!(e.contains("unknown action `frobnicate`"), "{e}");
        let e = parse_all("fio version 3 iolog\n5 f read 0\n").unwrap_err();
        assert!(e.contains("without offset and length"), "{e}");
        let e = parse_all("fio version 2 iolog\nf read zero 8\n").unwrap_err();
        assert!(e.contains("offset `zero`"), "{e}");
    }
}
