//! blkparse's default text output (blktrace): `maj,min cpu seq time pid action RWBS
//! sector + sectors [process]`, time in seconds. One event type stands for the requests:
//! `D` (issued to the driver: what the device saw) by default, `Q` (queued by the file
//! system) or `C` (completed) on request; the other events (A, G, I, M, P, U, m, ...) are
//! skipped. In RWBS, `D` is a discard (trim), `R` a read, `W` a write; events without
//! data (`N`, pure flushes of 0 sectors) are skipped. The per-CPU and total summary that
//! blkparse prints at the end is skipped (and events after it, of outputs concatenated,
//! read). The device is `maj,min`.

use super::{
    fields, parse_time_ns, parse_u64, sectors_to_bytes, show, BlkEvent, Devices, LineFormat, Record,
};
use crate::request::Op;

pub struct Blkparse {
    ns_per_unit: u64,
    event: &'static [u8],
    /// Inside the summary blkparse prints after the events.
    in_summary: bool,
}

impl Blkparse {
    pub fn new(ns_per_unit: u64, event: BlkEvent) -> Self {
        let event: &'static [u8] = match event {
            BlkEvent::Q => b"Q",
            BlkEvent::D => b"D",
            BlkEvent::C => b"C",
        };
        Blkparse {
            ns_per_unit,
            event,
            in_summary: false,
        }
    }
}

/// `8,16`: a device number.
fn is_device(field: &[u8]) -> bool {
    match field.iter().position(|&b| b == b',') {
        Some(i) => {
            i > 0
                && i + 1 < field.len()
                && field[..i].iter().all(u8::is_ascii_digit)
                && field[i + 1..].iter().all(u8::is_ascii_digit)
        }
        None => false,
    }
}

/// The first line of blkparse's closing summary: `CPU0 (8,16):` or `Total (8,16):`.
fn starts_summary(line: &[u8]) -> bool {
    let line = line.trim_ascii_start();
    (line.starts_with(b"CPU") || line.starts_with(b"Total")) && line.contains(&b'(')
}

const LAYOUT: &str = "maj,min cpu seq time pid action RWBS sector + sectors";

impl LineFormat for Blkparse {
    fn parse(
        &mut self,
        line: &[u8],
        _: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        let mut f = fields(line);
        let Some(dev) = f.next() else {
            return Ok(None);
        };
        if self.in_summary {
            if !is_device(dev) {
                return Ok(None);
            }
            // Events again after a summary: blkparse outputs of several runs or devices
            // concatenated. No summary line starts with a device number.
            self.in_summary = false;
        }
        if !is_device(dev) {
            if starts_summary(line) {
                self.in_summary = true;
                return Ok(None);
            }
            if dev[0] == b'#' {
                return Ok(None);
            }
            return Err(format!(
                "`{}` is not a device number maj,min (expected `{LAYOUT}`)",
                show(dev)
            ));
        }
        let mut next = |name: &str| {
            f.next()
                .ok_or_else(|| format!("missing field `{name}` (expected `{LAYOUT}`)"))
        };
        let _cpu = next("cpu")?;
        let _seq = next("seq")?;
        let time = next("time")?;
        let _pid = next("pid")?;
        let action = next("action")?;
        if action != self.event {
            return Ok(None);
        }
        let rwbs = next("RWBS")?;
        let op = if rwbs.contains(&b'D') {
            Op::Trim
        } else if rwbs.contains(&b'R') {
            Op::Read
        } else if rwbs.contains(&b'W') {
            Op::Write
        } else {
            return Ok(None); // no data: a pure flush, or a SCSI pass-through (`N`)
        };
        let sector = next("sector")?;
        let plus = match f.next() {
            // `sector [error]`: the data-less half of a flush or FUA request.
            None => return Ok(None),
            Some(p) if p.starts_with(b"[") => return Ok(None),
            Some(p) => p,
        };
        let mut next = |name: &str| {
            f.next()
                .ok_or_else(|| format!("missing field `{name}` (expected `{LAYOUT}`)"))
        };
        if plus != b"+" {
            return Err(format!(
                "`{}` where `+` is expected (expected `{LAYOUT}`)",
                show(plus)
            ));
        }
        let sectors = parse_u64(next("sectors")?, "sectors")?;
        if sectors == 0 {
            return Ok(None); // a flush carrying no data
        }
        Ok(Some(Record {
            time_ns: parse_time_ns(time, self.ns_per_unit)?,
            offset_bytes: sectors_to_bytes(parse_u64(sector, "sector")?, "sector")?,
            len_bytes: sectors_to_bytes(sectors, "sectors")?,
            dev: devices.id(dev)?,
            op,
        }))
    }

    fn format_name(&self) -> &'static str {
        "blkparse"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(event: BlkEvent, text: &str) -> Result<Vec<Record>, String> {
        let mut p = Blkparse::new(1_000_000_000, event);
        let mut d = Devices::default();
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if let Some(r) = p.parse(line.as_bytes(), i as u64 + 1, &mut d)? {
                out.push(r);
            }
        }
        Ok(out)
    }

    const SAMPLE: &str =
        "  8,16   5        1     0.000000000 18615  A   R 1444645666 + 256 <- (8,17) 1444645632
  8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]
  8,16   5        4     0.000008750 18615  P   N [java]
  8,33   4        1     0.000000000  3922  D   N 0 (00 ..) [kworker/u65:0]
  8,16   5        9     0.000100000 18615  D   R 1444645666 + 256 [java]
  8,16   5       10     0.000200000 18615  D  WS 8 + 8 [java]
  8,16   5       11     0.000300000 18615  D  DS 64 + 16 [fstrim]
  8,16   5       12     0.000400000 18615  D FWS 0 + 0 [jbd2]
  8,16   5       13     0.000500000     0  C   R 1444645666 + 256 [0]
  8,16   5      324     3.832956675     0  C  WS 1950885322 [0]
  8,16   5       14     0.000600000     0  m   N cfq18615 alloced

CPU0 (8,16):
 Reads Queued:           0,        0KiB	 Writes Queued:           0,        0KiB
Total (8,16):
Throughput (R/W): 0KiB/s / 0KiB/s
Events (8,33): 677 entries
";

    #[test]
    fn d_events_by_default_with_discards() {
        let r = parse_all(BlkEvent::D, SAMPLE).unwrap();
        let ops: Vec<Op> = r.iter().map(|r| r.op).collect();
        assert_eq!(ops, [Op::Read, Op::Write, Op::Trim]);
        assert_eq!(r[0].time_ns, 100_000);
        assert_eq!(
            (r[0].offset_bytes, r[0].len_bytes),
            (1_444_645_666 * 512, 256 * 512)
        );
        assert_eq!((r[2].offset_bytes, r[2].len_bytes), (64 * 512, 16 * 512));
    }

    #[test]
    fn q_or_c_on_request() {
        assert_eq!(parse_all(BlkEvent::Q, SAMPLE).unwrap().len(), 1);
        let c = parse_all(BlkEvent::C, SAMPLE).unwrap();
        assert_eq!((c.len(), c[0].time_ns), (1, 500_000));
    }

    #[test]
    fn events_after_a_summary_are_read() {
        let two = format!("{SAMPLE}{SAMPLE}");
        assert_eq!(parse_all(BlkEvent::D, &two).unwrap().len(), 6);
    }

    #[test]
    fn bad_lines() {
        let e = parse_all(BlkEvent::D, "8,16 5 1 0.1 7 D W 8 - 8 [x]").unwrap_err();
        assert!(e.contains("`-` where `+`"), "{e}");
        let e = parse_all(BlkEvent::D, "garbage here").unwrap_err();
        assert!(e.contains("not a device number"), "{e}");
        let e = parse_all(BlkEvent::D, "8,16 5 1 0.1 7 D W 8 +").unwrap_err();
        assert!(e.contains("missing field `sectors`"), "{e}");
    }
}
