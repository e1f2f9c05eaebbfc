//! WiscSee event files (`blkparse-events-for-ftlsim.txt`; He et al., "The Unwritten
//! Contract of Solid State Drives", EuroSys'17): blkparse's data events as WiscSee writes
//! them for its FTL simulator, one per line, fields separated by spaces, in the order of
//! its `event_file_column_names` setting:
//!
//! - `pid action operation offset size timestamp pre_wait_time sync` (the layout of its
//!   published experiments; a `latency` column may come before `sync`);
//! - `pid operation offset size timestamp pre_wait_time [sync]` (earlier, without the
//!   action: every line is a request).
//!
//! `operation` is `read`, `write` or `discard` (a trim); offset and size are bytes, the
//! offset counted from the start of the traced partition (WiscSee subtracts its
//! `dev_padding` from the device address); the timestamp is seconds. With an action
//! column, one event kind stands for the requests, as for blkparse: `D` (issued to the
//! device) by default, `C` (completed) or `Q` (queued) with `trace.blkparse_event`; other
//! events are skipped. The fields after the timestamp are not used. A request wholly
//! before the partition (a negative offset: mkfs and udev read the partition table) is
//! skipped, and one that starts before it keeps the part inside. Requests of no bytes
//! (data-less flushes) are skipped. The trace is of one device (`0`).

use super::{fields, parse_time_ns, parse_u64, show, BlkEvent, Devices, LineFormat, Record};
use crate::request::Op;

const LAYOUT: &str = "pid action operation offset size timestamp ...";

pub struct WiscSee {
    ns_per_unit: u64,
    event: &'static [u8],
}

impl WiscSee {
    pub fn new(ns_per_unit: u64, event: BlkEvent) -> Self {
        let event: &'static [u8] = match event {
            BlkEvent::Q => b"Q",
            BlkEvent::D => b"D",
            BlkEvent::C => b"C",
        };
        WiscSee { ns_per_unit, event }
    }
}

fn operation(field: &[u8]) -> Option<Op> {
    match field {
        b"read" => Some(Op::Read),
        b"write" => Some(Op::Write),
        b"discard" => Some(Op::Trim),
        _ => None,
    }
}

/// A blkparse action: one letter (`D`, `C`, `Q`, `A`, `M`, ...) or two (`UT`).
fn is_action(field: &[u8]) -> bool {
    (1..=2).contains(&field.len()) && field.iter().all(u8::is_ascii_alphabetic)
}

impl LineFormat for WiscSee {
    fn parse(
        &mut self,
        line: &[u8],
        _: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        let mut f = fields(line);
        let Some(pid) = f.next() else {
            return Ok(None);
        };
        if pid[0] == b'#' {
            return Ok(None);
        }
        let mut next = |name: &str| {
            f.next()
                .ok_or_else(|| format!("missing field `{name}` (expected `{LAYOUT}`)"))
        };
        let second = next("action")?;
        let (action, kind) = match operation(second) {
            Some(op) => (None, op),
            None => {
                if !is_action(second) {
                    return Err(format!(
                        "`{}` is neither a blkparse action (D, C, Q, ...) nor an operation \
                         (read, write, discard) (expected `{LAYOUT}`)",
                        show(second)
                    ));
                }
                let field = next("operation")?;
                let op = operation(field).ok_or_else(|| {
                    format!("operation `{}` is not read, write or discard", show(field))
                })?;
                (Some(second), op)
            }
        };
        let offset = next("offset")?;
        let size = next("size")?;
        let time = next("timestamp")?;
        parse_u64(pid, "pid")?;
        let time_ns = parse_time_ns(time, self.ns_per_unit)?;
        let size = parse_u64(size, "size")?;
        let (offset_bytes, len_bytes) = match offset.strip_prefix(b"-") {
            None => (parse_u64(offset, "offset")?, size),
            // Before the partition: only the part from its start on is a request to it.
            Some(before) => {
                let before = parse_u64(before, "offset")
                    .map_err(|_| format!("offset `{}` is not an integer", show(offset)))?;
                (0, size.saturating_sub(before))
            }
        };
        if action.is_some_and(|a| a != self.event) || len_bytes == 0 {
            return Ok(None);
        }
        Ok(Some(Record {
            time_ns,
            offset_bytes,
            len_bytes,
            dev: devices.id(b"0")?,
            op: kind,
        }))
    }

    fn format_name(&self) -> &'static str {
        "wiscsee"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(event: BlkEvent, text: &str) -> Result<Vec<Record>, String> {
        let mut p = WiscSee::new(1_000_000_000, event);
        let mut d = Devices::default();
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if let Some(r) = p.parse(line.as_bytes(), i as u64 + 1, &mut d)? {
                out.push(r);
            }
        }
        Ok(out)
    }

    // The first events of WiscSee's SQLite-WAL experiment, with its mkfs discard and
    // partition-table read.
    const SAMPLE: &str = "39949 D read 299008 4096 0.000000000 0 False
0 C read 299008 4096 0.000122793 0.000122793 False
39949 D write 143331328 12288 1.413209718 7.3902e-05 True
1386 D discard 136314880 4096 0.439239477 4.43e-06 False
1326 D read -8388608 4096 0.134961957 0.000221927 False
1326 D read -4096 8192 0.135 NA False
1326 D write 0 0 0.136 0 True
0 C write 143331328 12288 1.413239137 2.94189999999e-05 True
";

    #[test]
    fn d_events_by_default() {
        let r = parse_all(BlkEvent::D, SAMPLE).unwrap();
        let got: Vec<(Op, u64, u64, u64)> = r
            .iter()
            .map(|r| (r.op, r.offset_bytes, r.len_bytes, r.time_ns))
            .collect();
        assert_eq!(
            got,
            [
                (Op::Read, 299_008, 4096, 0),
                (Op::Write, 143_331_328, 12_288, 1_413_209_718),
                (Op::Trim, 136_314_880, 4096, 439_239_477),
                // -4096 + 8192: the half inside the partition.
                (Op::Read, 0, 4096, 135_000_000),
            ]
        );
        assert!(r.iter().all(|r| r.dev == 0));
    }

    #[test]
    fn completions_or_queue_events_on_request() {
        let c = parse_all(BlkEvent::C, SAMPLE).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!((c[1].op, c[1].time_ns), (Op::Write, 1_413_239_137));
        let q = parse_all(
            BlkEvent::Q,
            "7 Q write 8192 4096 0.5 0 True\n7 D write 8192 4096 0.6 0.1 True\n",
        )
        .unwrap();
        assert_eq!((q.len(), q[0].time_ns), (1, 500_000_000));
    }

    #[test]
    fn the_earlier_layout_without_actions() {
        let r = parse_all(
            BlkEvent::D,
            "1123 write 0 4096 0 0 S\n13 read 40960 4096 1 1 S\n13 discard 8192 4096 2.5 1.5\n",
        )
        .unwrap();
        let ops: Vec<Op> = r.iter().map(|r| r.op).collect();
        assert_eq!(ops, [Op::Write, Op::Read, Op::Trim]);
        assert_eq!((r[1].offset_bytes, r[2].time_ns), (40_960, 2_500_000_000));
    }

    #[test]
    fn bad_lines() {
        let e = parse_all(BlkEvent::D, "1 D flush 0 4096 0.1 0 True").unwrap_err();
        assert!(
            e.contains("operation `flush` is not read, write or discard"),
            "{e}"
        );
        let e = parse_all(BlkEvent::D, "1 DDD read 0 4096 0.1 0 True").unwrap_err();
        assert!(e.contains("`DDD` is neither a blkparse action"), "{e}");
        let e = parse_all(BlkEvent::D, "1 D read 0 4096").unwrap_err();
        assert!(e.contains("missing field `timestamp`"), "{e}");
        let e = parse_all(BlkEvent::D, "1 D read 4k 4096 0.1").unwrap_err();
        assert!(e.contains("offset `4k`"), "{e}");
        let e = parse_all(BlkEvent::D, "1 D read -4k 4096 0.1").unwrap_err();
        assert!(e.contains("offset `-4k` is not an integer"), "{e}");
        let e = parse_all(BlkEvent::D, "p D read 0 4096 0.1").unwrap_err();
        assert!(e.contains("pid `p`"), "{e}");
        let e = parse_all(BlkEvent::D, "1 D read 0 4096 -0.1").unwrap_err();
        assert!(e.contains("time `-0.1`"), "{e}");
    }
}
