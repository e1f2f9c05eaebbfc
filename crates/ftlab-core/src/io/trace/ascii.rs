//! DiskSim / MQSim / SSDSim ASCII traces: `time dev lba sectors op` per line, separated by
//! spaces or tabs. Addresses and sizes are in 512-byte sectors; bit 0 of `op` set means a
//! read (DiskSim's convention, which MQSim's 1 = read / 0 = write agrees with). The time
//! unit differs between tools: whole nanoseconds for MQSim and SSDSim, decimal
//! milliseconds for DiskSim's own traces (`13.191135`). Unless a unit is given, the first
//! request's timestamp decides for the whole trace: with a decimal point, milliseconds;
//! without, nanoseconds (a bare `0`, the same in any unit, leaves it to the next). Fields after the fifth are ignored; lines starting with `#` are
//! comments. `dev` is a device (or ASU) number.

use super::{fields, parse_time_ns, parse_u64, sectors_to_bytes, Devices, LineFormat, Record};
use crate::request::Op;

pub struct DiskSimAscii {
    /// None until the first request decides (see the module's comment).
    ns_per_unit: Option<u64>,
}

impl DiskSimAscii {
    pub fn new(ns_per_unit: u64) -> Self {
        DiskSimAscii {
            ns_per_unit: Some(ns_per_unit),
        }
    }

    /// The unit decided by the first request's timestamp.
    pub fn auto_unit() -> Self {
        DiskSimAscii { ns_per_unit: None }
    }
}

impl LineFormat for DiskSimAscii {
    #[inline]
    fn parse(
        &mut self,
        line: &[u8],
        _line_no: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        let mut f = fields(line);
        let Some(time) = f.next() else {
            return Ok(None);
        };
        if time[0] == b'#' {
            return Ok(None);
        }
        let mut next = |name: &str| {
            f.next().ok_or_else(|| {
                format!("missing field `{name}` (expected `time dev lba sectors op`)")
            })
        };
        let dev = next("dev")?;
        let lba = next("lba")?;
        let sectors = next("sectors")?;
        let op = next("op")?;
        let decimal = time.contains(&b'.');
        let unit = self
            .ns_per_unit
            .unwrap_or(if decimal { 1_000_000 } else { 1 });
        let time_ns = parse_time_ns(time, unit)?;
        parse_u64(dev, "dev")?;
        let offset_bytes = sectors_to_bytes(parse_u64(lba, "lba")?, "lba")?;
        let len_bytes = sectors_to_bytes(parse_u64(sectors, "sectors")?, "sectors")?;
        let op = parse_u64(op, "op")?;
        // Only a good line decides, and a bare `0` does not (it is 0 in any unit: SSDSim's
        // traces start with several), so that `0` then `13.191135` reads as milliseconds.
        if decimal || time_ns != 0 {
            self.ns_per_unit.get_or_insert(unit);
        }
        Ok(Some(Record {
            time_ns,
            offset_bytes,
            len_bytes,
            dev: devices.id(dev)?,
            op: if op & 1 == 1 { Op::Read } else { Op::Write },
        }))
    }

    fn format_name(&self) -> &'static str {
        "disksim"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Option<Record>, String> {
        DiskSimAscii::new(1).parse(line.as_bytes(), 1, &mut Devices::default())
    }

    #[test]
    fn reads_writes_and_tabs() {
        assert_eq!(
            parse("26214000\t0\t303574\t7\t0").unwrap(),
            Some(Record {
                time_ns: 26_214_000,
                offset_bytes: 303_574 * 512,
                len_bytes: 3584,
                dev: 0,
                op: Op::Write
            })
        );
        assert_eq!(parse("1 3 8 8 1 extra").unwrap().unwrap().op, Op::Read);
        // DiskSim flags: bit 0 is the read bit.
        assert_eq!(parse("1 3 8 8 3").unwrap().unwrap().op, Op::Read);
        assert_eq!(parse("1 3 8 8 2").unwrap().unwrap().op, Op::Write);
        // DiskSim's own traces: decimal milliseconds.
        let r = DiskSimAscii::new(1_000_000)
            .parse(b"13.191135\t30\t0\t5\t1", 1, &mut Devices::default())
            .unwrap()
            .unwrap();
        assert_eq!(r.time_ns, 13_191_135);
    }

    #[test]
    fn the_first_timestamp_decides_the_unit() {
        let times = |lines: &[&str]| -> Vec<u64> {
            let mut p = DiskSimAscii::auto_unit();
            let mut devices = Devices::default();
            lines
                .iter()
                .filter_map(|l| p.parse(l.as_bytes(), 1, &mut devices).unwrap())
                .map(|r| r.time_ns)
                .collect()
        };
        // DiskSim: decimal milliseconds, for the whole trace (the comment does not count).
        assert_eq!(
            times(&["# t dev lba n op", "13.191135 30 0 5 1", "17 20 8 6 1"]),
            [13_191_135, 17_000_000]
        );
        // MQSim / SSDSim: whole nanoseconds.
        assert_eq!(
            times(&["938513000 4 264 16 0", "938828000.25 3 197 16 0"]),
            [938_513_000, 938_828_000]
        );
        assert_eq!(
            times(&[
                "0 0 303567 7 0",
                "0 1 55590 6 0",
                "26214000 0 303574 7 0",
                "7.5 0 8 8 0"
            ]),
            [0, 0, 26_214_000, 8]
        );
        // A bare 0 does not decide; a bad line does not either.
        assert_eq!(times(&["0 0 8 8 0", "13.191135 30 0 5 1"]), [0, 13_191_135]);
        let mut p = DiskSimAscii::auto_unit();
        let mut devices = Devices::default();
        assert!(p.parse(b"5 0 x 8 0", 1, &mut devices).is_err());
        let r = p.parse(b"13.5 0 8 8 0", 2, &mut devices).unwrap().unwrap();
        assert_eq!(r.time_ns, 13_500_000);
    }

    #[test]
    fn bad_lines_say_why() {
        assert!(parse("1 0 8")
            .unwrap_err()
            .contains("missing field `sectors`"));
        assert!(parse("1 0 8 8 r").unwrap_err().contains("op `r`"));
        assert!(parse("1 0 -8 8 0").unwrap_err().contains("lba `-8`"));
        assert!(parse("1 0 99999999999999999999 8 0")
            .unwrap_err()
            .contains("too large"));
        assert!(parse("1 0 36028797018963968 8 0")
            .unwrap_err()
            .contains("beyond any device"));
    }
}
