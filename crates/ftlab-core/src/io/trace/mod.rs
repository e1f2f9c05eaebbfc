//! Trace readers: streaming (memory constant in the trace's length), auto-detected from the
//! content, transparent gzip / bzip2 / xz / zstd, and precise about bad input (file, line
//! and reason; never a panic).
//!
//! A reader yields [`Record`]s: a request as the trace states it, with the device it
//! addresses. [`crate::run::replay`] turns records into the simulator's requests (device filter,
//! per-device address ranges, address compaction, timestamp order); [`scan`] measures a
//! trace (`ftlab trace info`, device sizing, the compaction table).
//!
//! A text format implements [`LineFormat`] (one line in, at most one record out) and
//! [`LineReader`] does the rest: buffered reading, line splitting, line numbers, CRLF,
//! blank lines, a last line without a newline, bad-line policy.

mod ascii;
pub mod binary;
mod blkparse;
mod csv;
mod detect;
mod extents;
mod fio;
mod fiu;
mod input;
pub mod scan;
mod srt;
mod threaded;
mod vscsi;
mod wiscsee;

use crate::error::{Error, Result};
use crate::request::{Op, Request, RequestStream};
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

pub use ascii::DiskSimAscii;
pub use extents::{ExtentSet, Extents};
pub use input::InputProgress;
pub use threaded::BATCH_RECORDS;

/// One trace format.
#[derive(Debug)]
pub struct Format {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub description: &'static str,
    /// Unit of the format's timestamps, as `trace.time_unit` names it.
    pub time_unit: &'static str,
    /// One record as it appears in a real trace.
    pub example: &'static str,
    pub(crate) open: Open,
}

/// A binary format's reader over the (decompressed) input: (input, file, settings, skip
/// bad records).
pub(crate) type OpenBinary =
    fn(Box<dyn Read + Send>, PathBuf, &Settings, bool) -> Box<dyn RecordSource>;

/// How a format's records are read.
#[derive(Clone, Copy)]
pub(crate) enum Open {
    /// A text format: its line parser for the run's settings.
    Text(fn(&Settings) -> Parser),
    Binary(OpenBinary),
}

impl std::fmt::Debug for Open {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Open::Text(_) => "Text",
            Open::Binary(_) => "Binary",
        })
    }
}

/// Generates [`FORMATS`] and the text formats' [`Parser`] (one variant each, dispatched
/// statically) from one list, in order.
macro_rules! formats {
    ($(
        $kind:ident $($variant:ident($parser:ty))? {
            name: $name:literal,
            aliases: $aliases:expr,
            description: $description:expr,
            time_unit: $unit:literal,
            example: $example:literal,
            $open:ident: |$($arg:ident),+| $body:expr,
        }
    )+) => {
        /// Every format the readers know, in the order auto-detection tries them.
        pub const FORMATS: &[Format] = &[$(
            Format {
                name: $name,
                aliases: $aliases,
                description: $description,
                time_unit: $unit,
                example: $example,
                open: formats!(@open $kind $($variant)? ($($arg),+) $body),
            },
        )+];

        /// The text formats, dispatched statically.
        pub(crate) enum Parser {
            $($($variant($parser),)?)+
        }

        impl LineFormat for Parser {
            #[inline]
            fn parse(
                &mut self,
                line: &[u8],
                line_no: u64,
                devices: &mut Devices,
            ) -> std::result::Result<Option<Record>, String> {
                match self {
                    $($(Parser::$variant(p) => p.parse(line, line_no, devices),)?)+
                }
            }

            fn format_name(&self) -> &'static str {
                match self {
                    $($(Parser::$variant(p) => p.format_name(),)?)+
                }
            }
        }
    };
    (@open text $variant:ident ($s:ident) $body:expr) => {{
        fn new($s: &Settings) -> Parser {
            Parser::$variant($body)
        }
        Open::Text(new)
    }};
    (@open binary ($r:ident, $f:ident, $s:ident, $skip:ident) $body:expr) => {{
        fn open(
            $r: Box<dyn Read + Send>,
            $f: PathBuf,
            $s: &Settings,
            $skip: bool,
        ) -> Box<dyn RecordSource> {
            $body
        }
        Open::Binary(open)
    }};
}

// Every format the readers know, in the order auto-detection tries the text formats
// (binary formats are recognised by their bytes): adding a format is its module and one
// entry here.
formats! {
    text Fio(fio::Fio) {
        name: "fio",
        aliases: &["iolog", "fio-iolog"],
        description: "fio iolog v2 or v3 (`fio version N iolog` header): [time_us] file action offset length; trim supported",
        time_unit: "us",
        example: "878 /dev/nvme0n1 write 0 16384",
        new: |s| fio::Fio::new(s.unit_override),
    }
    text Blkparse(blkparse::Blkparse) {
        name: "blkparse",
        aliases: &["blktrace"],
        description: "blkparse default text: maj,min cpu seq time pid action RWBS sector + sectors; D events by default (trace.blkparse_event), RWBS D = discard",
        time_unit: "s",
        example: "8,16 2 41121 9.378422879 16766 D W 3428327290 + 8 [flush-8:16]",
        new: |s| blkparse::Blkparse::new(s.unit_override.unwrap_or(1_000_000_000), s.blkparse_event),
    }
    text WiscSee(wiscsee::WiscSee) {
        name: "wiscsee",
        aliases: &["wiscsee-events"],
        description: "WiscSee event files (blkparse-events-for-ftlsim.txt): pid action operation(read|write|discard) offset size timestamp(s) ...; bytes; D events by default (trace.blkparse_event); requests before the partition (negative offsets) skipped",
        time_unit: "s",
        example: "39949 D write 143331328 12288 1.413209718 2.9419e-05 True",
        new: |s| wiscsee::WiscSee::new(s.unit_override.unwrap_or(1_000_000_000), s.blkparse_event),
    }
    text Fiu(fiu::Fiu) {
        name: "fiu",
        aliases: &["iodedup"],
        description: "FIU IODedup blkparse: time_ns pid process lba sectors R|W major minor [md5...]; also as pandas saves it (tab- or comma-separated, header row, index column)",
        time_unit: "ns",
        example: "89966811921625 4257 nfsd 488846200 8 W 6 0 2c4787c7671c2f638777c4ab72859ce1",
        new: |s| fiu::Fiu::new(s.unit_override.unwrap_or(1)),
    }
    text Msr(csv::Msr) {
        name: "msr",
        aliases: &["msr-cambridge"],
        description: "MSR Cambridge CSV: Timestamp(100 ns FILETIME),Hostname,DiskNumber,Type,Offset,Size,ResponseTime; bytes",
        time_unit: "100ns",
        example: "128166385295514663,hm,0,Write,9056014336,2048,2833",
        new: |s| csv::Msr::new(s.unit_override.unwrap_or(100)),
    }
    text Systor(csv::Systor) {
        name: "systor",
        aliases: &["systor17", "snia-systor"],
        description: "SNIA Systor'17 CSV: Timestamp(s),Response,IOType(R|W),LUN,Offset,Size; bytes; rows not sorted",
        time_unit: "s",
        example: "1456095145.133076000,0.000806000,R,0,899056122368,131072",
        new: |s| csv::Systor::new(s.unit_override.unwrap_or(1_000_000_000)),
    }
    text Tencent(csv::Tencent) {
        name: "tencent",
        aliases: &["tencent-cbs", "cbs"],
        description: "Tencent CBS CSV: Timestamp(s),Offset,Size,IOType(0 read, 1 write),VolumeID; 512-byte sectors",
        time_unit: "s",
        example: "1538323200,4247200,128,1,1058",
        new: |s| csv::Tencent::new(s.unit_override.unwrap_or(1_000_000_000)),
    }
    text Spc(csv::Spc) {
        name: "spc",
        aliases: &["umass"],
        description: "UMass / SPC (Financial, WebSearch): ASU,LBA(512 B),Size(bytes),Opcode(r|w),Timestamp(s)",
        time_unit: "s",
        example: "0,303567,3584,w,0.000000",
        new: |s| csv::Spc::new(s.unit_override.unwrap_or(1_000_000_000)),
    }
    text Alibaba(csv::Alibaba) {
        name: "alibaba",
        aliases: &["alibaba-block", "ali"],
        description: "Alibaba Cloud block traces (2020 io_traces.csv): device_id,opcode(R|W),offset,length,timestamp(us); bytes; device = virtual disk",
        time_unit: "us",
        example: "0,R,126703644672,4096,1577808000000626",
        new: |s| csv::Alibaba::new(s.unit_override.unwrap_or(1_000)),
    }
    text DiskSim(ascii::DiskSimAscii) {
        name: "disksim",
        aliases: &["mqsim", "ssdsim", "ascii"],
        description: "DiskSim / MQSim / SSDSim ASCII: time dev lba sectors op; 512-byte sectors, op bit 0 = read; whole ns (MQSim, SSDSim) or decimal ms (DiskSim's own traces), decided by the first timestamp",
        time_unit: "ns",
        example: "26214000 0 303574 7 0",
        new: |s| match s.unit_override {
                Some(unit) => ascii::DiskSimAscii::new(unit),
                None => ascii::DiskSimAscii::auto_unit(),
            },
    }
    binary {
        name: "vscsi",
        aliases: &["cloudphysics"],
        description: "CloudPhysics VSCSI binary, version 1 (32-byte) or 2 (40-byte) little-endian records; SCSI READ/WRITE opcodes",
        time_unit: "us",
        example: "(binary) sn len nSG opcode=0x2a ver=0x0100 lbn ts_us",
        open: |r, f, s, skip| Box::new(vscsi::VscsiReader::new(r, f, s, skip)),
    }
    text VscsiCsv(csv::VscsiCsv) {
        name: "vscsi-csv",
        aliases: &["cloudphysics-csv"],
        description: "CloudPhysics vSCSI as CSV (libCacheSim's cloudPhysicsIO.csv): version,time(s),op(hex SCSI opcode),size(bytes),lbn(512 B); SCSI READ/WRITE opcodes, other commands skipped",
        time_unit: "s",
        example: "1,5633898,2a,6656,40409911",
        new: |s| csv::VscsiCsv::new(s.unit_override.unwrap_or(1_000_000_000)),
    }
    binary {
        name: "srt",
        aliases: &["hp-srt", "hpl"],
        description: "HP Labs SRT binary (`$$TR_IOREC-1.x` header, DiskSim's HPL traces): big-endian records, SHORTIO and SUSPECTIO requests, sectors of the header's sectorsize; device (devno >> 8) & 0xFF",
        time_unit: "us",
        example: "(binary) size id sec usec start stop bytes sectno devno drivertype cylno ioflags",
        open: |r, f, s, skip| Box::new(srt::SrtReader::new(r, f, s, skip)),
    }
    binary {
        name: "ftlab",
        aliases: &["ftlab-binary", "binary"],
        description: "ftlab's own binary form, written by `ftlab trace convert`: `FTLABTRC` header, CRC-32-checked blocks of varint-coded records (time and offset deltas, length, device, operation); device names and the source's diagnostics kept; read at memory speed",
        time_unit: "ns",
        example: "(binary) FTLABTRC v1; blocks: tag(dev, op) dtime doffset length",
        open: |r, f, s, skip| Box::new(binary::BinaryReader::new(r, f, s, skip)),
    }
}

/// The format named `name` (or one of its aliases).
pub fn format_by_name(name: &str) -> Option<&'static Format> {
    let name = name.to_ascii_lowercase();
    FORMATS
        .iter()
        .find(|f| f.name == name || f.aliases.contains(&name.as_str()))
}

fn unknown_format(name: &str) -> Error {
    let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
    Error::config(
        "trace.format",
        format!(
            "unknown trace format `{name}`; the formats are: auto, {}",
            names.join(", ")
        ),
    )
}

/// How many nanoseconds one unit of a trace's timestamps is.
pub fn time_unit_ns(unit: &str) -> Result<u64> {
    match unit {
        "ns" => Ok(1),
        "100ns" => Ok(100),
        "us" => Ok(1_000),
        "ms" => Ok(1_000_000),
        "s" => Ok(1_000_000_000),
        other => Err(Error::config(
            "trace.time_unit",
            format!("unknown time unit `{other}`; use auto, ns, 100ns, us, ms or s"),
        )),
    }
}

/// Where the devices of a multi-device trace go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceLayout {
    /// Each device (volume, LUN, ASU) in its own address range, one after the other.
    Separate,
    /// All devices share one address space (what MQSim and SSDSim do).
    Merged,
}

/// Address compaction: touched pages renumbered densely, in address order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compact {
    /// Only when the trace's addresses do not fit the device.
    Auto,
    Always,
    Never,
}

/// How the simulated device's capacity is chosen for a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceSize {
    /// Fit the device to the trace unless a preset, a file or an override sets a
    /// `geometry.*` key.
    Auto,
    /// Always fit `geometry.blocks_per_plane` to the trace's footprint.
    Fit,
    /// Always use the configured geometry.
    Config,
}

/// Timestamps that go backwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Sort within a window of `trace.sort_window` requests; later stragglers are clamped.
    Sort,
    /// Keep the file order; a timestamp earlier than the previous one is raised to it.
    Clamp,
}

/// The blkparse event that stands for a request (in blkparse text and WiscSee event files).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BlkEvent {
    /// Queued: what the file system submitted.
    Q,
    /// Issued to the device driver (the default): what the device saw.
    D,
    /// Completed.
    C,
}

/// How a trace is read and mapped onto the simulated device (`[trace]` keys).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TraceConfig {
    /// A format name, or `auto` to detect it from the content.
    pub format: String,
    /// Unit of the timestamps: `auto` (the format's own) or ns, 100ns, us, ms, s.
    pub time_unit: String,
    /// Devices to keep, named as in the trace (`hm_0`, `8,16`, a LUN or volume number);
    /// empty keeps them all.
    pub devices: Vec<String>,
    pub device_layout: DeviceLayout,
    pub compact: Compact,
    pub device_size: DeviceSize,
    pub blkparse_event: BlkEvent,
    /// Count bad lines and go on instead of stopping at the first.
    pub skip_bad_lines: bool,
    pub order: Order,
    /// Requests held back to sort out-of-order timestamps (`order = "sort"`).
    pub sort_window: u64,
    /// Idle gaps longer than this are shortened to it (0: kept as they are).
    #[serde(with = "units::nanos")]
    pub max_gap_ns: u64,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            format: "auto".into(),
            time_unit: "auto".into(),
            devices: Vec::new(),
            device_layout: DeviceLayout::Separate,
            compact: Compact::Auto,
            device_size: DeviceSize::Auto,
            blkparse_event: BlkEvent::D,
            skip_bad_lines: false,
            order: Order::Sort,
            sort_window: 65_536,
            max_gap_ns: 0,
        }
    }
}

impl TraceConfig {
    /// Checks the values a reader needs before opening a file.
    pub fn validate(&self) -> Result<()> {
        if self.format != "auto" && format_by_name(&self.format).is_none() {
            return Err(unknown_format(&self.format));
        }
        if self.time_unit != "auto" {
            time_unit_ns(&self.time_unit)?;
        }
        if self.sort_window == 0 {
            return Err(Error::config("trace.sort_window", "must be at least 1"));
        }
        if self.sort_window > 1 << 26 {
            return Err(Error::config(
                "trace.sort_window",
                "must be at most 67,108,864 requests",
            ));
        }
        Ok(())
    }

    fn unit_override(&self) -> Result<Option<u64>> {
        match self.time_unit.as_str() {
            "auto" => Ok(None),
            unit => time_unit_ns(unit).map(Some),
        }
    }
}

/// One request as a trace states it, before it is mapped onto the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Timestamp in nanoseconds, on the trace's own clock.
    pub time_ns: u64,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    /// Device index in [`Devices`] (order of first appearance).
    pub dev: u32,
    pub op: Op,
}

/// Largest request a record may describe (the simulator's request length is 32-bit).
pub const MAX_REQUEST_BYTES: u64 = u32::MAX as u64;

/// The devices a trace names, numbered in order of first appearance.
#[derive(Default)]
pub struct Devices {
    names: Vec<String>,
    index: HashMap<Box<[u8]>, u32>,
    last: usize,
}

/// At most this many distinct devices in one trace.
pub const MAX_DEVICES: usize = 1 << 20;

impl Devices {
    /// The index of device `name`, adding it if new.
    #[inline]
    pub fn id(&mut self, name: &[u8]) -> std::result::Result<u32, String> {
        if let Some(n) = self.names.get(self.last) {
            if n.as_bytes() == name {
                return Ok(self.last as u32);
            }
        }
        self.slow_id(name)
    }

    fn slow_id(&mut self, name: &[u8]) -> std::result::Result<u32, String> {
        let id = match self.index.get(name) {
            Some(&id) => id,
            None => {
                if self.names.len() >= MAX_DEVICES {
                    return Err(format!("more than {MAX_DEVICES} devices in one trace"));
                }
                let id = self.names.len() as u32;
                self.names.push(String::from_utf8_lossy(name).into_owned());
                self.index.insert(name.into(), id);
                id
            }
        };
        self.last = id as usize;
        Ok(id)
    }

    /// Forgets the devices numbered `len` and above: those a line named before it turned
    /// out to be bad. A device appears once a request of it does, so that the device
    /// numbers (and replay's address ranges, which follow them) have no gaps.
    /// Adds a device named elsewhere (by a reader on another thread).
    pub(crate) fn push(&mut self, name: String) {
        self.index
            .insert(name.as_bytes().into(), self.names.len() as u32);
        self.names.push(name);
    }

    pub(crate) fn truncate(&mut self, len: usize) {
        if len >= self.names.len() {
            return;
        }
        self.names.truncate(len);
        // By number: the names kept are lossy UTF-8, the keys the bytes as read.
        self.index.retain(|_, id| (*id as usize) < len);
        if self.last >= len {
            self.last = 0;
        }
    }

    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// Bad lines skipped and lines that held no request.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Diagnostics {
    /// Lines (or binary records) read.
    pub lines: u64,
    /// Lines or records that described no request: headers, comments, other blkparse
    /// events, fio file actions, non-data SCSI commands.
    pub lines_without_request: u64,
    /// Bad lines skipped (`trace.skip_bad_lines`).
    pub bad_lines: u64,
    /// The first few bad lines, as `FILE:LINE: reason`.
    pub bad_line_examples: Vec<String>,
}

/// How many bad lines are quoted in reports.
pub const BAD_LINE_EXAMPLES: usize = 5;

impl Diagnostics {
    fn bad(&mut self, message: String) {
        self.bad_lines += 1;
        if self.bad_line_examples.len() < BAD_LINE_EXAMPLES {
            self.bad_line_examples.push(message);
        }
    }
}

/// A stream of trace records.
pub trait RecordSource: Send {
    /// The next record; `Ok(None)` at the end. An error names the file and line.
    fn next_record(&mut self) -> Result<Option<Record>>;
    fn devices(&self) -> &Devices;
    fn diagnostics(&self) -> &Diagnostics;
    /// Line (or binary record) number of the last record returned.
    fn line(&self) -> u64;
    fn file(&self) -> &Path;
    /// The format's name.
    fn format(&self) -> &'static str;
}

/// What every reader keeps besides its input: the file, the number of the last line (or
/// binary record) read, the devices named so far, the diagnostics, and whether it stopped
/// on an error.
pub struct ReaderState {
    pub file: PathBuf,
    pub line: u64,
    pub devices: Devices,
    pub diagnostics: Diagnostics,
    failed: bool,
    /// Lines of nothing but white space (neither requests, nor bad, nor counted without
    /// a request).
    blank_lines: u64,
}

/// With `trace.skip_bad_lines`, this many bad lines (or records) before the first request
/// stop the reader: the trace is not in the format it is read as (or is not a trace), and
/// skipping on would only churn through it (forever, from a device or a pipe).
pub const MAX_BAD_BEFORE_A_REQUEST: u64 = 10_000;

impl ReaderState {
    pub fn new(file: PathBuf) -> Self {
        ReaderState {
            file,
            line: 0,
            devices: Devices::default(),
            diagnostics: Diagnostics::default(),
            failed: false,
            blank_lines: 0,
        }
    }

    /// Counts `err`, a bad line, as skipped (`trace.skip_bad_lines`); an error once
    /// [`MAX_BAD_BEFORE_A_REQUEST`] are, without a request among the lines read.
    pub(crate) fn skip_bad(&mut self, err: Error) -> Result<()> {
        self.diagnostics.bad(err.to_string());
        let d = &self.diagnostics;
        let requests = d
            .lines
            .saturating_sub(d.bad_lines + d.lines_without_request + self.blank_lines);
        if d.bad_lines >= MAX_BAD_BEFORE_A_REQUEST && requests == 0 {
            return Err(Error::Trace {
                file: self.file.clone(),
                line: self.line.max(1),
                message: format!(
                    "{} bad lines and not one request: is it a trace of the format it is read \
                     as? The first: {}",
                    d.bad_lines,
                    d.bad_line_examples.first().map_or("", String::as_str)
                ),
            });
        }
        Ok(())
    }
}

/// The reader of one format. Every one is a [`RecordSource`] that returns nothing more
/// after its first error.
pub trait FormatReader: Send {
    /// The next record; `Ok(None)` at the end. Not called again after an error.
    fn read_next(&mut self) -> Result<Option<Record>>;
    fn state(&self) -> &ReaderState;
    fn state_mut(&mut self) -> &mut ReaderState;
    fn format_name(&self) -> &'static str;
}

impl<T: FormatReader> RecordSource for T {
    fn next_record(&mut self) -> Result<Option<Record>> {
        if self.state().failed {
            return Ok(None);
        }
        let r = self.read_next();
        if r.is_err() {
            self.state_mut().failed = true;
        }
        r
    }

    fn devices(&self) -> &Devices {
        &self.state().devices
    }

    fn diagnostics(&self) -> &Diagnostics {
        &self.state().diagnostics
    }

    fn line(&self) -> u64 {
        self.state().line
    }

    fn file(&self) -> &Path {
        &self.state().file
    }

    fn format(&self) -> &'static str {
        self.format_name()
    }
}

/// An opened trace: its records, and what was learned opening it.
pub struct Opened {
    pub source: Box<dyn RecordSource>,
    /// `gzip`, `bzip2`, `xz`, `zstd` or `none`.
    pub compression: &'static str,
    /// Bytes of the file read so far, for progress.
    pub progress: InputProgress,
}

/// The requests of a trace file as it states them: addresses as in the trace (all
/// devices in one address space), timestamps on the trace's clock, in file order. For
/// replay onto a device (device layout, compaction, time order) use [`crate::run::replay`].
/// `format` is a format name or `auto`; `time_unit` is `auto` or a unit name.
pub fn open(path: &Path, format: &str, time_unit: &str) -> Result<RequestStream<'static>> {
    let cfg = TraceConfig {
        format: format.to_string(),
        time_unit: time_unit.to_string(),
        ..TraceConfig::default()
    };
    let mut source = open_trace(path, &cfg)?.source;
    Ok(Box::new(std::iter::from_fn(move || {
        source.next_record().transpose().map(|r| {
            r.map(|rec| Request {
                time_ns: rec.time_ns,
                offset_bytes: rec.offset_bytes,
                len_bytes: rec.len_bytes as u32, // checked by the readers
                op: rec.op,
            })
        })
    })))
}

/// How a trace's records are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// On a thread of its own, parsing ahead while the caller works, handing over
    /// batches of this many records (what runs use: [`BATCH_RECORDS`]).
    Threaded { batch_records: usize },
    /// On the caller's thread, one record at a time: the reference the threaded reading
    /// is tested against.
    Sequential,
}

impl Default for Reading {
    fn default() -> Self {
        Reading::Threaded {
            batch_records: BATCH_RECORDS,
        }
    }
}

/// Opens a trace file: decompresses it if needed, detects its format unless
/// `cfg.format` names one, and returns its records (read on a thread of their own).
pub fn open_trace(path: &Path, cfg: &TraceConfig) -> Result<Opened> {
    open_trace_with(path, cfg, Reading::default())
}

/// [`open_trace`], read as `reading` says.
pub fn open_trace_with(path: &Path, cfg: &TraceConfig, reading: Reading) -> Result<Opened> {
    cfg.validate()?;
    open_input(input::open(path)?, path, cfg, reading)
}

/// Like [`open_trace`], from bytes in memory (named `label` in messages).
pub fn open_bytes(bytes: Vec<u8>, label: &Path, cfg: &TraceConfig) -> Result<Opened> {
    open_bytes_with(bytes, label, cfg, Reading::default())
}

/// [`open_bytes`], read as `reading` says.
pub fn open_bytes_with(
    bytes: Vec<u8>,
    label: &Path,
    cfg: &TraceConfig,
    reading: Reading,
) -> Result<Opened> {
    cfg.validate()?;
    let total = bytes.len() as u64;
    let input = input::from_reader(Box::new(std::io::Cursor::new(bytes)), label, total)?;
    open_input(input, label, cfg, reading)
}

fn open_input(
    input: input::Input,
    path: &Path,
    cfg: &TraceConfig,
    reading: Reading,
) -> Result<Opened> {
    let format = if cfg.format == "auto" {
        detect::detect(path, &input.sample, cfg)?
    } else {
        format_by_name(&cfg.format).ok_or_else(|| unknown_format(&cfg.format))?
    };
    let settings = Settings {
        unit_override: cfg.unit_override()?,
        blkparse_event: cfg.blkparse_event,
    };
    let source: Box<dyn RecordSource> = match format.open {
        Open::Binary(open) => open(
            input.reader,
            path.to_path_buf(),
            &settings,
            cfg.skip_bad_lines,
        ),
        Open::Text(new) => Box::new(LineReader::new(
            input.reader,
            path.to_path_buf(),
            new(&settings),
            cfg.skip_bad_lines,
        )),
    };
    let source = match reading {
        Reading::Sequential => source,
        Reading::Threaded { batch_records } => {
            Box::new(threaded::Threaded::spawn(source, batch_records)?)
        }
    };
    Ok(Opened {
        source,
        compression: input.compression,
        progress: input.progress,
    })
}

/// Reader settings that come from the configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    /// Nanoseconds per timestamp unit, overriding the format's own.
    pub unit_override: Option<u64>,
    pub blkparse_event: BlkEvent,
}

/// One text trace format: a line in, at most one record out.
pub trait LineFormat {
    /// Parses line number `line_no` (without its line ending). `Ok(None)` skips the line
    /// (a header, comment or record that is not a request); `Err` says why it is bad.
    fn parse(
        &mut self,
        line: &[u8],
        line_no: u64,
        devices: &mut Devices,
    ) -> std::result::Result<Option<Record>, String>;

    /// The format's name, as [`FORMATS`] lists it.
    fn format_name(&self) -> &'static str;
}

impl Parser {
    /// The parser of text format `name` (a canonical name from [`FORMATS`]).
    pub(crate) fn new(name: &str, s: &Settings) -> Parser {
        match format_by_name(name).map(|f| f.open) {
            Some(Open::Text(new)) => new(s),
            _ => panic!("`{name}` is not a text format"),
        }
    }
}

/// The UTF-8 byte-order mark some tools write at the start of a text file.
pub(crate) const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

const CHUNK: usize = 1 << 20;
/// A line longer than this is an error (a binary file read as text, most likely).
const MAX_LINE: usize = 1 << 20;

/// Splits a byte stream into lines and feeds them to a [`LineFormat`].
pub struct LineReader<R, P> {
    input: R,
    parser: P,
    buf: Vec<u8>,
    /// Start of the unread part of `buf`.
    pos: usize,
    /// End of the valid bytes in `buf`.
    end: usize,
    eof: bool,
    skip_bad: bool,
    state: ReaderState,
}

impl<R: Read, P: LineFormat> LineReader<R, P> {
    pub fn new(input: R, file: PathBuf, parser: P, skip_bad: bool) -> Self {
        LineReader {
            input,
            parser,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            eof: false,
            skip_bad,
            state: ReaderState::new(file),
        }
    }

    /// Moves the unread tail to the front and reads more; grows the buffer for a line
    /// longer than it.
    fn refill(&mut self) -> Result<()> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        if self.end == self.buf.len() {
            if self.buf.len() > MAX_LINE {
                return Err(self.bad(format!(
                    "line longer than {} MiB (is this a text trace?)",
                    MAX_LINE >> 20
                )));
            }
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
                        file: self.state.file.clone(),
                        message: format!("read failed after line {}: {e}", self.state.line),
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
                self.state.line += 1;
                return Ok(Some((start, start + i)));
            }
            if self.eof {
                if self.pos < self.end {
                    let start = self.pos;
                    self.pos = self.end;
                    self.state.line += 1;
                    return Ok(Some((start, self.end)));
                }
                return Ok(None);
            }
            self.refill()?;
        }
    }

    fn bad(&self, message: String) -> Error {
        Error::Trace {
            file: self.state.file.clone(),
            line: self.state.line.max(1),
            message,
        }
    }

    fn next_inner(&mut self) -> Result<Option<Record>> {
        loop {
            let Some((start, mut end)) = self.next_line()? else {
                return Ok(None);
            };
            if end > start && self.buf[end - 1] == b'\r' {
                end -= 1;
            }
            // A UTF-8 byte-order mark (CSV saved by Windows tools) is not part of the
            // first field.
            let start = if self.state.line == 1 && self.buf[start..end].starts_with(UTF8_BOM) {
                start + UTF8_BOM.len()
            } else {
                start
            };
            let line = &self.buf[start..end];
            self.state.diagnostics.lines += 1;
            let devices_before = self.state.devices.len();
            let parsed = self
                .parser
                .parse(line, self.state.line, &mut self.state.devices)
                .and_then(|r| match r {
                    Some(r) if r.len_bytes > MAX_REQUEST_BYTES => Err(format!(
                        "a request of {} bytes is larger than the 4 GiB a request may have",
                        r.len_bytes
                    )),
                    Some(r) if r.offset_bytes.checked_add(r.len_bytes).is_none() => {
                        Err("the request ends beyond 2^64 bytes".to_string())
                    }
                    other => Ok(other),
                });
            match parsed {
                Ok(Some(rec)) => return Ok(Some(rec)),
                Ok(None) => {
                    if line.iter().any(|b| !b.is_ascii_whitespace()) {
                        self.state.diagnostics.lines_without_request += 1;
                    } else {
                        self.state.blank_lines += 1;
                    }
                }
                Err(message) => {
                    // The line may have named a new device before failing a check.
                    self.state.devices.truncate(devices_before);
                    let err = self.bad(message);
                    if !self.skip_bad {
                        return Err(err);
                    }
                    self.state.skip_bad(err)?;
                }
            }
        }
    }
}

impl<R: Read + Send, P: LineFormat + Send> FormatReader for LineReader<R, P> {
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
        self.parser.format_name()
    }
}

/// Splits a line into whitespace-separated fields (spaces and tabs).
#[inline]
pub(crate) fn fields(line: &[u8]) -> Fields<'_> {
    Fields { line, pos: 0 }
}

/// The fields of a line: runs of bytes between spaces and tabs (one pass, no empty ones).
pub(crate) struct Fields<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let b = self.line;
        let mut i = self.pos;
        while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        if i == b.len() {
            self.pos = i;
            return None;
        }
        let start = i;
        while i < b.len() && b[i] != b' ' && b[i] != b'\t' {
            i += 1;
        }
        self.pos = i;
        Some(&b[start..i])
    }
}

/// Splits a CSV line (no quoting: trace CSVs have none) into trimmed fields.
#[inline]
pub(crate) fn csv_fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&b| b == b',').map(|f| f.trim_ascii())
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

/// A one-letter operation, `R` or `W` in either case (field `name`, for the message).
#[inline]
pub(crate) fn read_or_write(field: &[u8], name: &str) -> std::result::Result<Op, String> {
    match field {
        b"R" | b"r" => Ok(Op::Read),
        b"W" | b"w" => Ok(Op::Write),
        _ => Err(format!("{name} `{}` is neither R nor W", show(field))),
    }
}

/// An unsigned decimal integer field.
#[inline]
pub(crate) fn parse_u64(field: &[u8], name: &str) -> std::result::Result<u64, String> {
    if field.is_empty() {
        return Err(not_unsigned(field, name));
    }
    // Leading zeros (zero-padded columns) do not make a number too long.
    let digits = if field.len() > 20 {
        without_leading_zeros(field)
    } else {
        field
    };
    if digits.len() > 20 {
        return Err(if digits.iter().all(u8::is_ascii_digit) {
            format!("{name} `{}` is too large", show(field))
        } else {
            not_unsigned(field, name)
        });
    }
    let mut v: u64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(not_unsigned(field, name));
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(d as u64))
            .ok_or_else(|| format!("{name} `{}` is too large", show(field)))?;
    }
    Ok(v)
}

/// `field` without its leading zeros, but one if it is all zeros.
#[cold]
fn without_leading_zeros(field: &[u8]) -> &[u8] {
    let zeros = field.iter().take_while(|&&b| b == b'0').count();
    &field[zeros.min(field.len().saturating_sub(1))..]
}

#[cold]
fn not_unsigned(field: &[u8], name: &str) -> String {
    if field.is_empty() {
        format!("{name} is empty")
    } else {
        format!("{name} `{}` is not an unsigned integer", show(field))
    }
}

/// A count of 512-byte sectors, or a sector address, in bytes.
#[inline]
pub(crate) fn sectors_to_bytes(sectors: u64, name: &str) -> std::result::Result<u64, String> {
    sectors
        .checked_mul(512)
        .ok_or_else(|| format!("{name} {sectors} is beyond any device"))
}

/// A non-negative timestamp (integer or decimal) times `ns_per_unit`, in nanoseconds.
/// Decimals are converted exactly (no floating point) unless written with an exponent.
#[inline]
pub(crate) fn parse_time_ns(field: &[u8], ns_per_unit: u64) -> std::result::Result<u64, String> {
    // Whole numbers of up to 19 digits (most traces' stamps), in one pass: they cannot
    // overflow a u64. Anything else takes the general path below.
    if !field.is_empty() && field.len() <= 19 {
        let mut v: u64 = 0;
        let mut whole = true;
        for &b in field {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                whole = false;
                break;
            }
            v = v * 10 + d as u64;
        }
        if whole {
            return v
                .checked_mul(ns_per_unit)
                .ok_or_else(|| time_out_of_range(field));
        }
    }
    let (int, frac) = match field.iter().position(|&b| b == b'.') {
        Some(i) => (&field[..i], &field[i + 1..]),
        None => (field, &field[field.len()..]),
    };
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    let int = if int.len() > 20 {
        without_leading_zeros(int)
    } else {
        int
    };
    if !int.is_empty() && int.len() <= 20 && digits(int) && digits(frac) {
        let whole = parse_u64(int, "time")?;
        let mut ns = whole
            .checked_mul(ns_per_unit)
            .ok_or_else(|| time_out_of_range(field))?;
        if !frac.is_empty() {
            // Up to 18 fraction digits count; beyond that they are below a nanosecond
            // for any unit up to seconds.
            let used = &frac[..frac.len().min(18)];
            let mut f: u128 = 0;
            for &b in used {
                f = f * 10 + (b - b'0') as u128;
            }
            let scale = 10u128.pow(used.len() as u32);
            let part = (f * ns_per_unit as u128 + scale / 2) / scale;
            ns = ns
                .checked_add(part as u64)
                .ok_or_else(|| time_out_of_range(field))?;
        }
        return Ok(ns);
    }
    parse_time_float(field, ns_per_unit)
}

#[cold]
fn parse_time_float(field: &[u8], ns_per_unit: u64) -> std::result::Result<u64, String> {
    let text = std::str::from_utf8(field)
        .map_err(|_| format!("time `{}` is not a number", show(field)))?;
    let v: f64 = text
        .parse()
        .map_err(|_| format!("time `{}` is not a number", show(field)))?;
    let ns = (v * ns_per_unit as f64).round();
    if !(ns.is_finite() && ns >= 0.0 && ns < u64::MAX as f64) {
        return Err(time_out_of_range(field));
    }
    Ok(ns as u64)
}

#[cold]
fn time_out_of_range(field: &[u8]) -> String {
    format!("time `{}` is negative or out of range", show(field))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8]) -> Vec<Result<Record>> {
        let mut r = LineReader::new(text, PathBuf::from("t.trace"), DiskSimAscii::new(1), false);
        let mut out = Vec::new();
        loop {
            match r.next_record() {
                Ok(Some(rec)) => out.push(Ok(rec)),
                Ok(None) => break,
                Err(e) => out.push(Err(e)),
            }
        }
        out
    }

    #[test]
    fn lines_crlf_blank_and_missing_final_newline() {
        let reqs = read(b"0 0 8 8 0\r\n\n   \n# comment\n5 0 16 8 1");
        let reqs: Vec<Record> = reqs.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(reqs.len(), 2);
        assert_eq!(
            reqs[1],
            Record {
                time_ns: 5,
                offset_bytes: 16 * 512,
                len_bytes: 4096,
                dev: 0,
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
    fn skip_bad_lines_counts_and_quotes_the_first_few() {
        let mut text = Vec::new();
        for i in 0..10 {
            text.extend_from_slice(format!("{i} 0 8 8 0\n{i} 0 bad 8 0\n").as_bytes());
        }
        let mut r = LineReader::new(&text[..], PathBuf::from("t"), DiskSimAscii::new(1), true);
        let mut n = 0;
        while r.next_record().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 10);
        let d = r.diagnostics();
        assert_eq!(d.bad_lines, 10);
        assert_eq!(d.bad_line_examples.len(), BAD_LINE_EXAMPLES);
        assert_eq!(
            d.bad_line_examples[1],
            "t:4: lba `bad` is not an unsigned integer"
        );
    }

    #[test]
    fn skipping_gives_up_on_a_trace_of_bad_lines_alone() {
        let read = |text: &[u8]| {
            let mut r = LineReader::new(text, PathBuf::from("t"), DiskSimAscii::new(1), true);
            let mut n = 0;
            loop {
                match r.next_record() {
                    Ok(Some(_)) => n += 1,
                    Ok(None) => return Ok(n),
                    Err(e) => return Err(e.to_string()),
                }
            }
        };
        let bad = b"x y z\n\n# comment\n".repeat(MAX_BAD_BEFORE_A_REQUEST as usize + 5);
        let e = read(&bad).unwrap_err();
        assert!(
            e.starts_with("t:29998: 10000 bad lines and not one request")
                && e.contains("The first: t:1: missing field `sectors`"),
            "{e}"
        );
        // One request first: the bad lines are skipped, however many.
        let some = [&b"0 0 8 8 0\n"[..], &bad].concat();
        assert_eq!(read(&some), Ok(1));
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
    fn absurdly_long_lines_are_an_error_not_a_memory_hog() {
        let text = vec![b'1'; 3 * MAX_LINE];
        let out = read(&text);
        let err = out.last().unwrap().clone().unwrap_err().to_string();
        assert!(err.contains("line longer than"), "{err}");
    }

    #[test]
    fn chunk_boundaries_do_not_split_requests() {
        let mut text = Vec::new();
        let n = 200_000u64;
        for i in 0..n {
            text.extend_from_slice(format!("{i} 0 {} 8 {}\n", i * 8, i % 2).as_bytes());
        }
        let reqs: Vec<Record> = read(&text).into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(reqs.len() as u64, n);
        for (i, r) in reqs.iter().enumerate() {
            assert_eq!(r.offset_bytes, i as u64 * 4096);
        }
    }

    #[test]
    fn time_units_and_decimals() {
        assert_eq!(parse_time_ns(b"1.5", 1_000_000), Ok(1_500_000));
        assert_eq!(parse_time_ns(b"3", 1000), Ok(3000));
        assert_eq!(parse_time_ns(b"2e3", 1), Ok(2000));
        assert_eq!(
            parse_time_ns(b"1456095145.133076000", 1_000_000_000),
            Ok(1_456_095_145_133_076_000)
        );
        assert_eq!(parse_time_ns(b"0.000001850", 1_000_000_000), Ok(1850));
        assert_eq!(parse_time_ns(b"7.", 1_000), Ok(7000));
        assert_eq!(parse_time_ns(b"0.0000000004", 1_000_000_000), Ok(0));
        assert!(parse_time_ns(b"-1", 1).is_err());
        assert!(parse_time_ns(b"nan", 1).is_err());
        assert!(parse_time_ns(b"", 1).is_err());
        assert!(parse_time_ns(b"99999999999999999999", 1000).is_err());
        // The one-pass whole-number path up to 19 digits, the general one beyond.
        let max19 = 9_999_999_999_999_999_999u64;
        assert_eq!(parse_time_ns(b"9999999999999999999", 1), Ok(max19));
        assert!(parse_time_ns(b"9999999999999999999", 2).is_err());
        assert_eq!(parse_time_ns(b"18446744073709551615", 1), Ok(u64::MAX));
        assert!(parse_time_ns(b"18446744073709551616", 1).is_err());
        assert_eq!(
            parse_time_ns(b"12a", 1).unwrap_err(),
            "time `12a` is not a number"
        );
        // Zero-padded: exact, however long.
        assert_eq!(
            parse_time_ns(b"0000000000001456095145.133076001", 1_000_000_000),
            Ok(1_456_095_145_133_076_001)
        );
        assert_eq!(parse_time_ns(b"000", 1), Ok(0));
        assert_eq!(parse_u64(b"0000000000000000000000042", "x"), Ok(42));
        assert_eq!(parse_u64(b"0", "x"), Ok(0));
        assert!(parse_u64(b"000000000000000000000000000000x", "x")
            .unwrap_err()
            .contains("not an unsigned integer"));
        assert!(parse_u64(b"123456789012345678901", "x")
            .unwrap_err()
            .contains("too large"));
        assert!(time_unit_ns("fortnight").is_err());
    }

    #[test]
    fn devices_are_numbered_in_order_of_appearance() {
        let mut d = Devices::default();
        assert_eq!(d.id(b"b"), Ok(0));
        assert_eq!(d.id(b"a"), Ok(1));
        assert_eq!(d.id(b"b"), Ok(0));
        assert_eq!(d.id(b"a"), Ok(1));
        assert_eq!(d.names(), ["b", "a"]);
    }

    #[test]
    fn missing_file_and_unknown_format_are_named() {
        let cfg = TraceConfig::default();
        let err = open_trace(Path::new("/nonexistent/x.trace"), &cfg)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("/nonexistent/x.trace: cannot open trace"),
            "{err}"
        );
        let cfg = TraceConfig {
            format: "msr-nope".into(),
            ..TraceConfig::default()
        };
        let err = open_trace(Path::new("x"), &cfg).err().unwrap().to_string();
        assert!(err.contains("unknown trace format"), "{err}");
        let err = open(Path::new("x"), "nope", "ns")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("unknown trace format"), "{err}");
    }
}
