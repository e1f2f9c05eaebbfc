//! The CSV trace formats of the SNIA IOTTA repository and the UMass trace repository.
//! None quotes its fields; a header line (first field `Timestamp` or `ASU`) is skipped.
//!
//! - MSR Cambridge (Narayanan et al., FAST'08): `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`;
//!   timestamps in Windows FILETIME ticks (100 ns), Type `Read`/`Write`, bytes. The device
//!   is `Hostname_DiskNumber` (`hm_0`), as the trace files are named.
//! - SNIA Systor'17 (Lee et al.): `Timestamp,Response,IOType,LUN,Offset,Size`; Unix
//!   seconds with fractions, IOType `R`/`W`, bytes; the device is the LUN. Rows are not
//!   strictly time-ordered (see `trace.order`).
//! - Tencent CBS (OSCA, ATC'20): `Timestamp,Offset,Size,IOType,VolumeID`; Unix seconds,
//!   512-byte sectors, IOType 0 = read, 1 = write; offsets are per volume.
//! - UMass / SPC (Financial, WebSearch): `ASU,LBA,Size,Opcode,Timestamp[,...]`; LBA in
//!   512-byte sectors, Size in bytes, Opcode `r`/`w`, seconds; the device is the ASU.
//! - Alibaba Cloud block traces (2020, `io_traces.csv`; 1,000 virtual disks of its elastic
//!   block service): `device_id,opcode,offset,length,timestamp`, no header; opcode `R`/`W`,
//!   bytes, Unix microseconds; the device is the virtual disk. Exactly five fields, so
//!   that a line of another layout with `R` or `W` second is not taken for one.
//! - CloudPhysics vSCSI as CSV (libCacheSim's `cloudPhysicsIO.csv`):
//!   `version,time,op,size,lbn` with that header; the vscsi record version (1 or 2),
//!   seconds (the binary trace's microseconds truncated), the SCSI opcode in hexadecimal
//!   (`2a`), bytes, 512-byte sectors. Opcodes are taken as the vscsi reader takes them:
//!   READ and WRITE (6/10/12/16) are requests, other commands are skipped. One virtual
//!   disk (device `0`).

use super::vscsi::scsi_op;
use super::{
    csv_fields, parse_time_ns, parse_u64, read_or_write, sectors_to_bytes, show, Devices,
    LineFormat, Record,
};
use crate::request::Op;

/// Up to `N` trimmed CSV fields; missing ones name the expected layout.
#[inline]
fn split<'a, const N: usize>(line: &'a [u8], layout: &str) -> Result<[&'a [u8]; N], String> {
    let mut out: [&[u8]; N] = [&[]; N];
    let mut it = csv_fields(line);
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = it
            .next()
            .ok_or_else(|| format!("{} field(s) where {N} are expected (`{layout}`)", i.max(1)))?;
    }
    Ok(out)
}

fn is_header(first: &[u8]) -> bool {
    first.eq_ignore_ascii_case(b"timestamp") || first.eq_ignore_ascii_case(b"asu")
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace) || line.first() == Some(&b'#')
}

pub struct Msr {
    ns_per_unit: u64,
    device: Vec<u8>,
}

impl Msr {
    pub fn new(ns_per_unit: u64) -> Self {
        Msr {
            ns_per_unit,
            device: Vec::new(),
        }
    }
}

const MSR_LAYOUT: &str = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime";

impl LineFormat for Msr {
    fn parse(
        &mut self,
        line: &[u8],
        _: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        if is_blank(line) {
            return Ok(None);
        }
        let [time, host, disk, kind, offset, size] = split::<6>(line, MSR_LAYOUT)?;
        if is_header(time) {
            return Ok(None);
        }
        let op = if kind.eq_ignore_ascii_case(b"read") {
            Op::Read
        } else if kind.eq_ignore_ascii_case(b"write") {
            Op::Write
        } else {
            return Err(format!("Type `{}` is neither Read nor Write", show(kind)));
        };
        parse_u64(disk, "DiskNumber")?;
        self.device.clear();
        self.device.extend_from_slice(host);
        self.device.push(b'_');
        self.device.extend_from_slice(disk);
        Ok(Some(Record {
            time_ns: parse_time_ns(time, self.ns_per_unit)?,
            offset_bytes: parse_u64(offset, "Offset")?,
            len_bytes: parse_u64(size, "Size")?,
            dev: devices.id(&self.device)?,
            op,
        }))
    }

    fn format_name(&self) -> &'static str {
        "msr"
    }
}

pub struct Systor {
    ns_per_unit: u64,
}

impl Systor {
    pub fn new(ns_per_unit: u64) -> Self {
        Systor { ns_per_unit }
    }
}

impl LineFormat for Systor {
    fn parse(
        &mut self,
        line: &[u8],
        _: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        if is_blank(line) {
            return Ok(None);
        }
        let [time, _response, kind, lun, offset, size] =
            split::<6>(line, "Timestamp,Response,IOType,LUN,Offset,Size")?;
        if is_header(time) {
            return Ok(None);
        }
        let op = read_or_write(kind, "IOType")?;
        parse_u64(lun, "LUN")?;
        Ok(Some(Record {
            time_ns: parse_time_ns(time, self.ns_per_unit)?,
            offset_bytes: parse_u64(offset, "Offset")?,
            len_bytes: parse_u64(size, "Size")?,
            dev: devices.id(lun)?,
            op,
        }))
    }

    fn format_name(&self) -> &'static str {
        "systor"
    }
}

pub struct Tencent {
    ns_per_unit: u64,
}

impl Tencent {
    pub fn new(ns_per_unit: u64) -> Self {
        Tencent { ns_per_unit }
    }
}

impl LineFormat for Tencent {
    fn parse(
        &mut self,
        line: &[u8],
        _: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        if is_blank(line) {
            return Ok(None);
        }
        let [time, offset, size, kind, volume] =
            split::<5>(line, "Timestamp,Offset,Size,IOType,VolumeID")?;
        if is_header(time) {
            return Ok(None);
        }
        let op = match kind {
            b"0" => Op::Read,
            b"1" => Op::Write,
            _ => {
                return Err(format!(
                    "IOType `{}` is neither 0 (read) nor 1 (write)",
                    show(kind)
                ))
            }
        };
        parse_u64(volume, "VolumeID")?;
        Ok(Some(Record {
            time_ns: parse_time_ns(time, self.ns_per_unit)?,
            offset_bytes: sectors_to_bytes(parse_u64(offset, "Offset")?, "Offset")?,
            len_bytes: sectors_to_bytes(parse_u64(size, "Size")?, "Size")?,
            dev: devices.id(volume)?,
            op,
        }))
    }

    fn format_name(&self) -> &'static str {
        "tencent"
    }
}

pub struct Spc {
    ns_per_unit: u64,
}

impl Spc {
    pub fn new(ns_per_unit: u64) -> Self {
        Spc { ns_per_unit }
    }
}

impl LineFormat for Spc {
    fn parse(
        &mut self,
        line: &[u8],
        _: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        if is_blank(line) {
            return Ok(None);
        }
        let [asu, lba, size, kind, time] = split::<5>(line, "ASU,LBA,Size,Opcode,Timestamp")?;
        if is_header(asu) {
            return Ok(None);
        }
        let op = match kind {
            b"r" | b"R" => Op::Read,
            b"w" | b"W" => Op::Write,
            _ => return Err(format!("Opcode `{}` is neither r nor w", show(kind))),
        };
        parse_u64(asu, "ASU")?;
        Ok(Some(Record {
            time_ns: parse_time_ns(time, self.ns_per_unit)?,
            offset_bytes: sectors_to_bytes(parse_u64(lba, "LBA")?, "LBA")?,
            len_bytes: parse_u64(size, "Size")?,
            dev: devices.id(asu)?,
            op,
        }))
    }

    fn format_name(&self) -> &'static str {
        "spc"
    }
}

pub struct Alibaba {
    ns_per_unit: u64,
}

impl Alibaba {
    pub fn new(ns_per_unit: u64) -> Self {
        Alibaba { ns_per_unit }
    }
}

const ALIBABA_LAYOUT: &str = "device_id,opcode,offset,length,timestamp";

impl LineFormat for Alibaba {
    fn parse(
        &mut self,
        line: &[u8],
        _: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        if is_blank(line) {
            return Ok(None);
        }
        let [device, kind, offset, length, time] = split::<5>(line, ALIBABA_LAYOUT)?;
        if device.eq_ignore_ascii_case(b"device_id") {
            return Ok(None); // a header, should a copy have one
        }
        let n = csv_fields(line).count();
        if n != 5 {
            return Err(format!(
                "{n} fields where 5 are expected (`{ALIBABA_LAYOUT}`)"
            ));
        }
        let op = read_or_write(kind, "opcode")?;
        parse_u64(device, "device_id")?;
        Ok(Some(Record {
            time_ns: parse_time_ns(time, self.ns_per_unit)?,
            offset_bytes: parse_u64(offset, "offset")?,
            len_bytes: parse_u64(length, "length")?,
            dev: devices.id(device)?,
            op,
        }))
    }

    fn format_name(&self) -> &'static str {
        "alibaba"
    }
}

pub struct VscsiCsv {
    ns_per_unit: u64,
}

impl VscsiCsv {
    pub fn new(ns_per_unit: u64) -> Self {
        VscsiCsv { ns_per_unit }
    }
}

/// A SCSI opcode written in hexadecimal, with or without `0x`.
fn parse_opcode(field: &[u8]) -> Result<u16, String> {
    let digits = field
        .strip_prefix(b"0x")
        .or_else(|| field.strip_prefix(b"0X"))
        .unwrap_or(field);
    std::str::from_utf8(digits)
        .ok()
        .filter(|d| !d.is_empty() && d.len() <= 4 && d.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|d| u16::from_str_radix(d, 16).ok())
        .ok_or_else(|| {
            format!(
                "op `{}` is not a SCSI opcode in hexadecimal (`2a`)",
                show(field)
            )
        })
}

impl LineFormat for VscsiCsv {
    fn parse(
        &mut self,
        line: &[u8],
        _: u64,
        devices: &mut Devices,
    ) -> Result<Option<Record>, String> {
        if is_blank(line) {
            return Ok(None);
        }
        let [version, time, opcode, size, lbn] = split::<5>(line, "version,time,op,size,lbn")?;
        if version.eq_ignore_ascii_case(b"version") {
            return Ok(None); // the header
        }
        if !matches!(version, b"1" | b"2") {
            return Err(format!(
                "version `{}` is not 1 or 2 (the vscsi record version)",
                show(version)
            ));
        }
        let time_ns = parse_time_ns(time, self.ns_per_unit)?;
        let Some(op) = scsi_op(parse_opcode(opcode)?) else {
            return Ok(None); // a command without data, as the vscsi reader skips it
        };
        Ok(Some(Record {
            time_ns,
            offset_bytes: sectors_to_bytes(parse_u64(lbn, "lbn")?, "lbn")?,
            len_bytes: parse_u64(size, "size")?,
            dev: devices.id(b"0")?,
            op,
        }))
    }

    fn format_name(&self) -> &'static str {
        "vscsi-csv"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one<P: LineFormat>(p: &mut P, line: &str) -> Result<Option<Record>, String> {
        p.parse(line.as_bytes(), 1, &mut Devices::default())
    }

    #[test]
    fn msr() {
        let mut p = Msr::new(100);
        let r = one(&mut p, "128166385295514663,hm,0,Write,9056014336,2048,2833")
            .unwrap()
            .unwrap();
        assert_eq!(r.time_ns, 12_816_638_529_551_466_300);
        assert_eq!(
            (r.offset_bytes, r.len_bytes, r.op),
            (9_056_014_336, 2048, Op::Write)
        );
        let mut devices = Devices::default();
        p.parse(b"1,web,3,Read,0,512,1", 1, &mut devices).unwrap();
        assert_eq!(devices.names(), ["web_3"]);
        assert_eq!(
            one(
                &mut p,
                "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"
            ),
            Ok(None)
        );
        assert!(one(&mut p, "1,hm,0,Trim,0,512,1")
            .unwrap_err()
            .contains("Type `Trim`"));
        assert!(one(&mut p, "1,hm,0,Read")
            .unwrap_err()
            .contains("4 field(s) where 6"));
        assert!(one(&mut p, "1,hm,0,Read,x,512,1")
            .unwrap_err()
            .contains("Offset `x`"));
    }

    #[test]
    fn systor() {
        let mut p = Systor::new(1_000_000_000);
        let r = one(
            &mut p,
            "1456095145.133076000,0.000806000,R,0,899056122368,131072",
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.time_ns, 1_456_095_145_133_076_000);
        assert_eq!(
            (r.offset_bytes, r.len_bytes, r.op),
            (899_056_122_368, 131_072, Op::Read)
        );
        // The response time may be empty.
        assert!(one(&mut p, "1.5,,W,2,0,4096").unwrap().is_some());
        assert_eq!(
            one(&mut p, "Timestamp,Response,IOType,LUN,Offset,Size"),
            Ok(None)
        );
        assert!(one(&mut p, "1.5,,X,2,0,4096")
            .unwrap_err()
            .contains("IOType `X`"));
    }

    #[test]
    fn tencent() {
        let mut p = Tencent::new(1_000_000_000);
        let r = one(&mut p, "1538323200,4247200,128,1,1058")
            .unwrap()
            .unwrap();
        assert_eq!(r.time_ns, 1_538_323_200_000_000_000);
        assert_eq!(
            (r.offset_bytes, r.len_bytes, r.op),
            (4_247_200 * 512, 65_536, Op::Write)
        );
        assert_eq!(one(&mut p, "1,0,8,0,7").unwrap().unwrap().op, Op::Read);
        assert!(one(&mut p, "1,0,8,2,7").unwrap_err().contains("IOType `2`"));
        assert!(one(&mut p, "1,0,8,0,vol")
            .unwrap_err()
            .contains("VolumeID `vol`"));
    }

    #[test]
    fn spc() {
        let mut p = Spc::new(1_000_000_000);
        let r = one(&mut p, "0,303567,3584,w,0.026214").unwrap().unwrap();
        assert_eq!(r.time_ns, 26_214_000);
        assert_eq!(
            (r.offset_bytes, r.len_bytes, r.op),
            (303_567 * 512, 3584, Op::Write)
        );
        assert_eq!(
            one(&mut p, "5,1,512,R,1.0,extra").unwrap().unwrap().op,
            Op::Read
        );
        assert!(one(&mut p, "0,1,512,x,0")
            .unwrap_err()
            .contains("Opcode `x`"));
        assert!(one(&mut p, "0,1,512,r").unwrap_err().contains("where 5"));
    }

    #[test]
    fn alibaba() {
        let mut p = Alibaba::new(1_000);
        let r = one(&mut p, "0,R,126703644672,4096,1577808000000626")
            .unwrap()
            .unwrap();
        assert_eq!(r.time_ns, 1_577_808_000_000_626_000);
        assert_eq!(
            (r.offset_bytes, r.len_bytes, r.op),
            (126_703_644_672, 4096, Op::Read)
        );
        let mut devices = Devices::default();
        p.parse(b"419,W,8728576,4096,1577808144249593", 1, &mut devices)
            .unwrap();
        assert_eq!(devices.names(), ["419"]);
        assert_eq!(
            one(&mut p, "device_id,opcode,offset,length,timestamp"),
            Ok(None)
        );
        let e = one(&mut p, "0,X,0,4096,1").unwrap_err();
        assert!(e.contains("opcode `X`"), "{e}");
        let e = one(&mut p, "0,R,0,4096,1,5").unwrap_err();
        assert!(e.contains("6 fields where 5"), "{e}");
        let e = one(&mut p, "0,R,0,4096").unwrap_err();
        assert!(e.contains("4 field(s) where 5"), "{e}");
        let e = one(&mut p, "vd1,R,0,4096,1").unwrap_err();
        assert!(e.contains("device_id `vd1`"), "{e}");
    }

    #[test]
    fn vscsi_csv() {
        let mut p = VscsiCsv::new(1_000_000_000);
        assert_eq!(one(&mut p, "version,time,op,size,lbn"), Ok(None));
        let r = one(&mut p, "1,5633898,2a,6656,40409911").unwrap().unwrap();
        assert_eq!(r.time_ns, 5_633_898_000_000_000);
        assert_eq!(
            (r.offset_bytes, r.len_bytes, r.op, r.dev),
            (40_409_911 * 512, 6656, Op::Write, 0)
        );
        // Every READ and WRITE opcode, in either case, with or without 0x.
        for (opcode, op) in [
            ("28", Op::Read),
            ("0x08", Op::Read),
            ("A8", Op::Read),
            ("88", Op::Read),
            ("0A", Op::Write),
            ("0XAA", Op::Write),
            ("8a", Op::Write),
        ] {
            let r = one(&mut p, &format!("2,1.5,{opcode},512,8"))
                .unwrap()
                .unwrap();
            assert_eq!((r.op, r.time_ns), (op, 1_500_000_000), "{opcode}");
        }
        // SYNCHRONIZE CACHE, TEST UNIT READY: no request, as in the binary trace.
        assert_eq!(one(&mut p, "1,7,35,0,0"), Ok(None));
        assert_eq!(one(&mut p, "1,7,0,0,0"), Ok(None));
        let e = one(&mut p, "1,7,2g,512,8").unwrap_err();
        assert!(e.contains("op `2g` is not a SCSI opcode"), "{e}");
        let e = one(&mut p, "1,7,,512,8").unwrap_err();
        assert!(e.contains("op `` is not a SCSI opcode"), "{e}");
        let e = one(&mut p, "3,7,2a,512,8").unwrap_err();
        assert!(e.contains("version `3` is not 1 or 2"), "{e}");
        let e = one(&mut p, "1,7,2a,512").unwrap_err();
        assert!(e.contains("4 field(s) where 5"), "{e}");
        let e = one(&mut p, "1,7,2a,512,-8").unwrap_err();
        assert!(e.contains("lbn `-8`"), "{e}");
    }
}
