//! The trace readers never panic, never hang and never misplace an error, whatever the
//! bytes: arbitrary input, valid lines of every format with random damage (bytes flipped,
//! fields deleted, duplicated or replaced by huge, negative or non-numbers, lines cut,
//! junk lines, CRLF, a BOM, compression, compressed-looking headers, binary tails, very
//! long lines), through every format and through auto-detection. Every error names the
//! file and, where the problem is in a line or record, its number; a trace that reads
//! runs through a whole simulation (page FTL, mapping only, verified) without a panic and
//! replays exactly the requests it read. Transformations that do not change a trace
//! (line endings, a BOM, compression) give the same requests. And replay maps any trace
//! onto the device it plans for: every request inside it, pages consecutive, offsets
//! within the page kept, verification passing.

use ftlab_core::io::trace::{self, Reading, Record, TraceConfig, FORMATS};
use ftlab_core::run::api::{self, RunOptions};
use ftlab_core::Error;
use proptest::prelude::*;
use proptest::sample::Index;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// The name traces read from memory go by in messages.
const LABEL: &str = "fuzz.trace";

/// Longest a read of one fuzzed input may take before it counts as a hang (inputs are at
/// most a few MiB; reading them takes milliseconds).
const READ_LIMIT: Duration = Duration::from_secs(20);

/// What reading a trace gave.
#[derive(Debug)]
struct Outcome {
    /// The format read (None if opening failed).
    format: Option<&'static str>,
    records: Vec<Record>,
    bad_line_examples: Vec<String>,
    /// The error, and whether it came from opening the trace (detection).
    error: Option<(Error, bool)>,
}

/// The input, printable, shortened.
fn shown(bytes: &[u8]) -> String {
    let s: String = String::from_utf8_lossy(&bytes[..bytes.len().min(600)])
        .escape_debug()
        .collect();
    if bytes.len() > 600 {
        format!("{s}… ({} bytes)", bytes.len())
    } else {
        s
    }
}

/// Runs `f` on a thread of its own: a panic, or taking longer than `limit`, fails the
/// test with `what`.
fn guarded<T: Send + 'static>(
    what: impl Fn() -> String,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => {
            let _ = worker.join();
            v
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("hang (over {limit:?}): {}", what()),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("panic: {}", what()),
    }
}

/// Reads every record of `bytes` as `format` (or `auto`), guarded against panics and hangs.
fn read(bytes: &[u8], format: &str, skip_bad_lines: bool) -> Outcome {
    read_in(bytes, format, skip_bad_lines, "auto")
}

/// [`read`] with timestamps in `time_unit`.
fn read_in(bytes: &[u8], format: &str, skip_bad_lines: bool, time_unit: &str) -> Outcome {
    let owned = bytes.to_vec();
    let (name, unit) = (format.to_string(), time_unit.to_string());
    guarded(
        || {
            format!(
                "reading as {format} in {time_unit} (skip {skip_bad_lines}): \"{}\"",
                shown(bytes)
            )
        },
        READ_LIMIT,
        move || read_unguarded(owned, &name, skip_bad_lines, &unit),
    )
}

fn read_unguarded(bytes: Vec<u8>, format: &str, skip_bad_lines: bool, time_unit: &str) -> Outcome {
    let cfg = TraceConfig {
        format: format.into(),
        time_unit: time_unit.into(),
        skip_bad_lines,
        sort_window: 16,
        ..TraceConfig::default()
    };
    let mut out = Outcome {
        format: None,
        records: Vec::new(),
        bad_line_examples: Vec::new(),
        error: None,
    };
    let mut source = match trace::open_bytes(bytes, Path::new(LABEL), &cfg) {
        Ok(opened) => opened.source,
        Err(e) => {
            out.error = Some((e, true));
            return out;
        }
    };
    out.format = Some(source.format());
    loop {
        match source.next_record() {
            Ok(Some(r)) => out.records.push(r),
            Ok(None) => break,
            Err(e) => {
                out.error = Some((e, false));
                break;
            }
        }
    }
    out.bad_line_examples = source.diagnostics().bad_line_examples.clone();
    out
}

/// Checks what a read of `bytes` gave: records within the readers' limits; an error of the
/// right kind naming the file, and a line (or binary record) that the input has; quoted
/// bad lines too. `bytes` None: compressed, lines unknown.
fn check(out: &Outcome, bytes: Option<&[u8]>, what: &str) -> Result<(), TestCaseError> {
    let max_line = match (bytes, out.format) {
        (None, _) => u64::MAX,
        // Binary records are at least 16 bytes.
        (Some(b), Some("vscsi" | "srt")) => b.len() as u64 / 16 + 1,
        (Some(b), _) => b.iter().filter(|&&c| c == b'\n').count() as u64 + 1,
    };
    for r in &out.records {
        prop_assert!(r.len_bytes <= trace::MAX_REQUEST_BYTES, "{what}: {r:?}");
        prop_assert!(
            r.offset_bytes.checked_add(r.len_bytes).is_some(),
            "{what}: {r:?}"
        );
    }
    if let Some((e, at_open)) = &out.error {
        let text = e.to_string();
        prop_assert!(
            text.starts_with(LABEL),
            "{what}: `{text}` does not name the file"
        );
        match e {
            Error::Trace { line, message, .. } => {
                prop_assert!(
                    (1..=max_line).contains(line),
                    "{what}: line {line} of at most {max_line}: `{text}`"
                );
                prop_assert!(!message.trim().is_empty(), "{what}: `{text}`");
            }
            // Opening: the file cannot be read or its format told. Reading: only a
            // failure of the input (corrupt compressed data), which says after which line.
            Error::Io { message, .. } => prop_assert!(
                *at_open || message.contains("read failed after"),
                "{what}: `{text}`"
            ),
            other => prop_assert!(false, "{what}: unexpected kind of error {other:?}"),
        }
    }
    for example in &out.bad_line_examples {
        let rest = example.strip_prefix(&format!("{LABEL}:"));
        let line: Option<u64> = rest
            .and_then(|r| r.split_once(':'))
            .and_then(|(n, _)| n.parse().ok());
        prop_assert!(
            line.is_some_and(|l| (1..=max_line).contains(&l)),
            "{what}: bad line quoted as `{example}`"
        );
    }
    Ok(())
}

/// Reads `bytes` as every format and auto-detected, stopping at bad lines and skipping
/// them, and checks every outcome.
fn read_every_way(bytes: &[u8]) -> Result<(), TestCaseError> {
    for name in names() {
        for skip in [false, true] {
            let out = read(bytes, name, skip);
            check(
                &out,
                Some(bytes),
                &format!("{name} (skip {skip}) \"{}\"", shown(bytes)),
            )?;
        }
    }
    Ok(())
}

/// Cases per property: `default`, or `$PROPTEST_CASES` for a longer hunt
/// (`PROPTEST_CASES=20000 cargo test --test trace_fuzz`).
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn names() -> Vec<&'static str> {
    let mut n: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
    n.push("auto");
    n
}

/// One real line of each format, to damage.
const LINES: &[&str] = &[
    "fio version 3 iolog\n878 /dev/nvme0n1 write 0 16384\n900 /dev/nvme0n1 trim 4096 4096\n",
    "fio version 2 iolog\n/dev/sdb read 0 4096\n/dev/sdb wait 10 0\n",
    "  8,16   2    41121     9.378422879 16766  D   W 3428327290 + 8 [flush-8:16]\n",
    "89966811921625 4257 nfsd 488846200 8 W 6 0 2c4787c7671c2f638777c4ab72859ce1\n",
    "128166385295514663,hm,0,Write,9056014336,2048,2833\n",
    "Timestamp,Response,IOType,LUN,Offset,Size\n1456095145.133076000,0.000806000,R,0,899056122368,131072\n",
    "1538323200,4247200,128,1,1058\n",
    "0,303567,3584,w,0.000000\n",
    "26214000 0 303574 7 0\n13.5\t1\t8\t8\t1\n",
    "\t0\t1\t2\t3\t4\t5\t6\t7\t8\n0\t89966811921625\t4257\tnfsd\t488846200\t8\tW\t6\t0\t2c4787c7671c2f638777c4ab72859ce1\n",
    "39949 D write 143331328 12288 1.413209718 7.3902e-05 True\n1326 D read -8388608 4096 0.13 0 False\n",
    "version,time,op,size,lbn\n1,5633898,2a,6656,40409911\n",
    "42932745\n42932746\n",
];

fn damaged() -> impl Strategy<Value = Vec<u8>> {
    (
        0..LINES.len(),
        proptest::collection::vec((any::<Index>(), any::<u8>(), 0u8..3), 1..6),
        1usize..4,
    )
        .prop_map(|(i, edits, repeat)| {
            let mut bytes = LINES[i].repeat(repeat).into_bytes();
            for (at, byte, kind) in edits {
                if bytes.is_empty() {
                    bytes.push(byte);
                    continue;
                }
                let at = at.index(bytes.len());
                match kind {
                    0 => bytes[at] = byte,
                    1 => bytes.insert(at, byte),
                    _ => {
                        bytes.remove(at);
                    }
                }
            }
            bytes
        })
}

fn vscsi_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(any::<[u8; 32]>(), 0..8),
        any::<bool>(),
        0usize..40,
    )
        .prop_map(|(records, v2, cut)| {
            let mut out = Vec::new();
            for mut r in records {
                if v2 {
                    r[2] = 0;
                    r[3] = 2;
                } else {
                    r[14] = 0;
                    r[15] = 1;
                }
                r[12] = [0x28, 0x2a, 0x35][r[12] as usize % 3];
                out.extend_from_slice(&r);
                if v2 {
                    out.extend_from_slice(&[0; 8]);
                }
            }
            out.truncate(out.len().saturating_sub(cut));
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(128), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        read_every_way(&bytes)?;
    }

    #[test]
    fn damaged_lines_never_panic(bytes in damaged()) {
        read_every_way(&bytes)?;
    }

    #[test]
    fn binary_records_never_panic(bytes in vscsi_bytes()) {
        for name in ["vscsi", "auto"] {
            for skip in [false, true] {
                let out = read(&bytes, name, skip);
                check(&out, Some(&bytes), &format!("{name} \"{}\"", shown(&bytes)))?;
            }
        }
    }

    #[test]
    fn compressed_garbage_never_panics(
        magic in 0usize..4,
        tail in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let prefix: &[u8] = [&[0x1f, 0x8b][..], b"BZh9", &[0xfd, b'7', b'z', b'X', b'Z', 0], &[0x28, 0xb5, 0x2f, 0xfd]][magic];
        let bytes = [prefix, &tail].concat();
        for name in ["auto", "disksim"] {
            let out = read(&bytes, name, true);
            check(&out, None, &format!("{name} \"{}\"", shown(&bytes)))?;
        }
    }
}

/// A valid trace of each format, modelled on the real ones, and the requests it holds.
struct Sample {
    format: &'static str,
    bytes: Vec<u8>,
    requests: usize,
}

impl Sample {
    fn is_binary(&self) -> bool {
        matches!(self.format, "vscsi" | "srt")
    }
}

const BLKPARSE: &str =
    "  8,16   5        1     0.000000000 18615  A   R 1444645666 + 256 <- (8,17) 1444645632
  8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]
  8,16   5        3     0.000006438 18615  G   R 1444645666 + 256 [java]
  8,16   5        4     0.000008750 18615  P   N [java]
  8,16   5        5     0.000010000 18615  I   R 1444645666 + 256 [java]
  8,16   5        6     0.000012000 18615  U   N [java] 1
  8,16   5        7     0.000100000 18615  D   R 1444645666 + 256 [java]
  8,16   5        8     0.000200000 18615  D  WS 8 + 8 [java]
  8,16   5        9     0.000210000 18615  M  WS 16 + 8 [java]
  8,16   5       10     0.000300000 18615  D  DS 64 + 16 [fstrim]
  8,16   5       11     0.000400000 18615  D FWS 0 + 0 [jbd2]
  8,16   5       12     0.000500000     0  C   R 1444645666 + 256 [0]
  8,16   5       13     0.000600000     0  m   N cfq18615 alloced
CPU5 (8,16):
 Reads Queued:           1,      128KiB\t Writes Queued:           0,        0KiB
Total (8,16):
Events (8,16): 13 entries
";

/// HP SRT: a text header, then big-endian records (`size id sec usec start stop bytes
/// sectno devno drivertype cylno ioflags info queuelen`).
fn srt_sample() -> Vec<u8> {
    let mut out =
        b"$$TR_IOREC-1.3 (x)\0\ndisks = {\n 0 -> {\n\tsectorsize  = 256,\n}\n};\n\x0c".to_vec();
    for (kind, sec, usec, bytes, sectno, disk, read) in [
        (1u32, 0u32, 22_479u32, 4096u32, 1040u32, 1u32, 1u32),
        (7, 0, 30_000, 0, 0, 0, 0),
        (4, 2, 5, 2048, 12_256, 0, 0),
    ] {
        let fields = [
            56,
            0x40000 | kind,
            sec,
            usec,
            0,
            0,
            bytes,
            sectno,
            0x800_0007 | (disk << 8),
            0,
            0,
            0x1a | read,
            0,
            0,
        ];
        out.extend(fields.iter().flat_map(|f| f.to_be_bytes()));
    }
    out
}

/// CloudPhysics vscsi, version 1 (32-byte records) or 2 (40): READ(10), WRITE(10) and a
/// SYNCHRONIZE CACHE.
fn vscsi_sample(version: u8) -> Vec<u8> {
    let mut out = Vec::new();
    for (opcode, len, lbn, ts) in [
        (0x28u16, 4096u32, 42_932_745u64, 5_633_898_000_000u64),
        (0x2a, 6656, 40_409_911, 5_633_898_000_100),
        (0x35, 0, 0, 5_633_898_000_200),
    ] {
        if version == 1 {
            out.extend(7u32.to_le_bytes());
            out.extend(len.to_le_bytes());
            out.extend(1u32.to_le_bytes());
            out.extend(opcode.to_le_bytes());
            out.extend(0x0100u16.to_le_bytes());
            out.extend(lbn.to_le_bytes());
            out.extend(ts.to_le_bytes());
        } else {
            out.extend(opcode.to_le_bytes());
            out.extend(0x0200u16.to_le_bytes());
            out.extend(7u32.to_le_bytes());
            out.extend(len.to_le_bytes());
            out.extend(1u32.to_le_bytes());
            out.extend(lbn.to_le_bytes());
            out.extend(ts.to_le_bytes());
            out.extend(99u64.to_le_bytes());
        }
    }
    out
}

fn samples() -> Vec<Sample> {
    let text = |format, text: &str, requests| Sample {
        format,
        bytes: text.as_bytes().to_vec(),
        requests,
    };
    vec![
        text(
            "msr",
            "128166385295514663,hm,0,Write,9056014336,2048,2833\n\
             128166385295514878,hm,0,Write,11855351808,512,2617\n\
             128166385301451520,hm,1,Read,3163095040,40960,3438\n",
            3,
        ),
        text(
            "systor",
            "Timestamp,Response,IOType,LUN,Offset,Size\n\
             1455591804.310701000,0.006475000,R,0,203468398592,32768\n\
             1455591804.318699000,0.005276000,W,1,4590576115200,4096\n\
             1455591804.314955000,,R,0,4564742206976,65536\n",
            3,
        ),
        text(
            "tencent",
            "1538323200,4247200,128,1,1058\n1538323200,13896880,8,0,1063\n1538323201,0,16,1,1058\n",
            3,
        ),
        text(
            "spc",
            "0,303567,3584,w,0.000000\n1,55590,3072,W,0.000000\n0,303574,3584,r,0.026214\n5,1,512,R,1.5,extra\n",
            4,
        ),
        text(
            "alibaba",
            "419,W,8728576,4096,1577808144249593\n0,R,126703644672,4096,1577808000000626\n\
             419,W,8732672,8192,1577808144250001\n",
            3,
        ),
        text(
            "disksim",
            "938513000 4 264719034 16 0\n938828000 3 197570570 16 0\n938944000 13 93230992 32 1\n",
            3,
        ),
        text(
            "disksim",
            "13.191135\t30\t0\t5\t1\r\n17.829285\t20\t576560\t6\t1\r\n24.314779\t17\t0\t24\t0\r\n",
            3,
        ),
        text(
            "fiu",
            "89966811921625 4257 nfsd 488846200 8 W 6 0 2c4787c7671c2f638777c4ab72859ce1\n\
             89967003980393 4253 nfsd 508455704 16 W 6 0 88b93b628d84082186026d9da044f173b5e9f4e5ab62a4fff5313a606b0ad4e3\n\
             89990107519804 0 kworker/0:1 x 283476784 8 R 6 1 750c11013c9a156ee7c88cd71b687db5\n",
            3,
        ),
        text(
            "fiu",
            "\t0\t1\t2\t3\t4\t5\t6\t7\t8\n\
             0\t89966811921625\t4257\tnfsd\t488846200\t8\tW\t6\t0\t2c4787c7671c2f638777c4ab72859ce1\n\
             1\t89967003980393\t4253\tnfsd\t508455704\t8\tR\t6\t0\t88b93b628d84082186026d9da044f173\n",
            2,
        ),
        text("blkparse", BLKPARSE, 3),
        text(
            "wiscsee",
            "39949 D read 299008 4096 0.000000000 0 False\n\
             0 C read 299008 4096 0.000122793 0.000122793 False\n\
             39949 D write 143331328 12288 1.413209718 7.3902e-05 True\n\
             1386 D discard 136314880 4096 0.439239477 4.43e-06 False\n\
             1326 D read -8388608 4096 0.134961957 0.000221927 False\n",
            3,
        ),
        text(
            "vscsi-csv",
            "version,time,op,size,lbn\n1,5633898,2a,512,42932745\n1,5633898,28,6656,40409911\n1,5633899,35,0,0\n",
            2,
        ),
        text(
            "fio",
            "fio version 3 iolog\n2 /dev/nvme0n1 add\n3 /dev/nvme0n1 open\n\
             878 /dev/nvme0n1 write 0 16384\n900 /dev/nvme0n1 read 4096 4096\n\
             950 /dev/nvme0n1 trim 8192 4096\n990 /dev/nvme0n1 close\n",
            3,
        ),
        text(
            "fio",
            "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write 0 4096\n\
             /dev/sdb wait 10\n/dev/sdb read 4096 8192\n/dev/sdb close\n",
            2,
        ),
        Sample {
            format: "srt",
            bytes: srt_sample(),
            requests: 2,
        },
        Sample {
            format: "vscsi",
            bytes: vscsi_sample(1),
            requests: 2,
        },
        Sample {
            format: "vscsi",
            bytes: vscsi_sample(2),
            requests: 2,
        },
    ]
}

/// Values a field is replaced with: numbers past every limit, negative, not numbers.
const NASTY: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "9223372036854775808",
    "36028797018963968",
    "4294967295",
    "4294967296",
    "8796093022208",
    "17592186044416",
    "1e30",
    "1E30",
    "1e19",
    "1.8e19",
    "1e-30",
    "0.0000000001",
    "18446744073709551615.999",
    "-1",
    "-0",
    "-0.0",
    "-9223372036854775808",
    "-1e30",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "",
    " ",
    "0",
    "00000000000000000000000000001",
    "1.5",
    ".5",
    "5.",
    ".",
    "e",
    "+1",
    "--1",
    "0x2a",
    "1_000",
    "\u{663}\u{664}",
    "\u{feff}7",
    "\0",
    "R",
    "W",
    "Read",
    "r",
    "D",
    "+",
    "8,16",
    "2a",
    "write",
    "discard",
];

/// Lines inserted among the good ones.
const JUNK: &[&str] = &[
    "",
    "   ",
    "#",
    "# comment",
    "\r",
    "\0\0\0\0",
    "garbage here",
    ",,,,,,",
    "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
    "CPU0 (8,16):",
    "fio version 3 iolog",
    "\u{feff}",
    "\u{ff}\u{fe}",
    "\x1f\u{8b}\x08",
    "1",
    "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34",
];

/// One damage done to a text trace.
#[derive(Clone, Debug)]
enum Edit {
    /// Field `.1` of line `.0` replaced by `NASTY[.2]`.
    Field(Index, Index, Index),
    DeleteField(Index, Index),
    DuplicateField(Index, Index),
    SwapFields(Index, Index, Index),
    /// Line `.0` cut at `.1`.
    CutLine(Index, Index),
    DuplicateLine(Index),
    DeleteLine(Index),
    /// `JUNK[.1]` inserted before line `.0`.
    Junk(Index, Index),
    /// A byte of the file replaced.
    Byte(Index, u8),
    InsertByte(Index, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    let i = any::<Index>;
    prop_oneof![
        4 => (i(), i(), i()).prop_map(|(a, b, c)| Edit::Field(a, b, c)),
        1 => (i(), i()).prop_map(|(a, b)| Edit::DeleteField(a, b)),
        1 => (i(), i()).prop_map(|(a, b)| Edit::DuplicateField(a, b)),
        1 => (i(), i(), i()).prop_map(|(a, b, c)| Edit::SwapFields(a, b, c)),
        1 => (i(), i()).prop_map(|(a, b)| Edit::CutLine(a, b)),
        1 => i().prop_map(Edit::DuplicateLine),
        1 => i().prop_map(Edit::DeleteLine),
        1 => (i(), i()).prop_map(|(a, b)| Edit::Junk(a, b)),
        1 => (i(), any::<u8>()).prop_map(|(a, b)| Edit::Byte(a, b)),
        1 => (i(), any::<u8>()).prop_map(|(a, b)| Edit::InsertByte(a, b)),
    ]
}

/// A line as fields and what separates them (commas, or runs of spaces and tabs), so that
/// fields can be replaced, deleted or repeated and the line put back together.
struct Line {
    lead: Vec<u8>,
    fields: Vec<Vec<u8>>,
    /// `seps[i]` follows `fields[i]`; the last one is what ends the line.
    seps: Vec<Vec<u8>>,
}

impl Line {
    fn split(line: &[u8]) -> Line {
        let mut l = Line {
            lead: Vec::new(),
            fields: Vec::new(),
            seps: Vec::new(),
        };
        if line.contains(&b',') {
            for f in line.split(|&b| b == b',') {
                l.fields.push(f.to_vec());
                l.seps.push(b",".to_vec());
            }
            if let Some(last) = l.seps.last_mut() {
                last.clear();
            }
            return l;
        }
        let blank = |b: &u8| *b == b' ' || *b == b'\t';
        let mut i = 0;
        while i < line.len() && blank(&line[i]) {
            i += 1;
        }
        l.lead = line[..i].to_vec();
        while i < line.len() {
            let start = i;
            while i < line.len() && !blank(&line[i]) {
                i += 1;
            }
            let mid = i;
            while i < line.len() && blank(&line[i]) {
                i += 1;
            }
            l.fields.push(line[start..mid].to_vec());
            l.seps.push(line[mid..i].to_vec());
        }
        l
    }

    fn join(&self) -> Vec<u8> {
        let mut out = self.lead.clone();
        for (f, s) in self.fields.iter().zip(&self.seps) {
            out.extend_from_slice(f);
            out.extend_from_slice(s);
        }
        out
    }

    /// A separator to put after a field that gains a neighbour.
    fn separator(&self) -> Vec<u8> {
        self.seps
            .iter()
            .find(|s| !s.is_empty())
            .cloned()
            .unwrap_or_else(|| b" ".to_vec())
    }
}

/// Applies `edits` to a text trace.
fn damage(text: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let mut bytes_edits = Vec::new();
    for e in edits {
        if lines.is_empty() {
            lines.push(Vec::new());
        }
        let n = lines.len();
        match e {
            Edit::Field(l, f, v) => {
                let mut line = Line::split(&lines[l.index(n)]);
                if !line.fields.is_empty() {
                    let k = line.fields.len();
                    line.fields[f.index(k)] = v.get(NASTY).as_bytes().to_vec();
                    lines[l.index(n)] = line.join();
                }
            }
            Edit::DeleteField(l, f) => {
                let mut line = Line::split(&lines[l.index(n)]);
                if !line.fields.is_empty() {
                    let k = f.index(line.fields.len());
                    line.fields.remove(k);
                    let sep = line.seps.remove(k);
                    if k == line.seps.len() {
                        if let Some(last) = line.seps.last_mut() {
                            *last = sep; // the line's end stays the line's end
                        }
                    }
                    lines[l.index(n)] = line.join();
                }
            }
            Edit::DuplicateField(l, f) => {
                let mut line = Line::split(&lines[l.index(n)]);
                if !line.fields.is_empty() {
                    let k = f.index(line.fields.len());
                    let sep = line.separator();
                    line.fields.insert(k, line.fields[k].clone());
                    line.seps.insert(k, sep);
                    lines[l.index(n)] = line.join();
                }
            }
            Edit::SwapFields(l, a, b) => {
                let mut line = Line::split(&lines[l.index(n)]);
                if !line.fields.is_empty() {
                    let k = line.fields.len();
                    line.fields.swap(a.index(k), b.index(k));
                    lines[l.index(n)] = line.join();
                }
            }
            Edit::CutLine(l, at) => {
                let line = &mut lines[l.index(n)];
                let cut = at.index(line.len() + 1);
                line.truncate(cut);
            }
            Edit::DuplicateLine(l) => {
                let line = lines[l.index(n)].clone();
                lines.insert(l.index(n), line);
            }
            Edit::DeleteLine(l) => {
                lines.remove(l.index(n));
            }
            Edit::Junk(l, j) => lines.insert(l.index(n + 1), j.get(JUNK).as_bytes().to_vec()),
            Edit::Byte(..) | Edit::InsertByte(..) => bytes_edits.push(e),
        }
    }
    let mut out: Vec<u8> = lines
        .iter()
        .flat_map(|l| l.iter().copied().chain([b'\n']))
        .collect();
    for e in bytes_edits {
        match e {
            Edit::Byte(at, b) if !out.is_empty() => {
                let i = at.index(out.len());
                out[i] = *b;
            }
            Edit::InsertByte(at, b) => {
                let i = at.index(out.len() + 1);
                out.insert(i, *b);
            }
            _ => {}
        }
    }
    out
}

/// Values a binary field is overwritten with.
const EXTREMES: &[u64] = &[
    0,
    1,
    15,
    16,
    55,
    56,
    57,
    4096,
    4097,
    0x0100,
    0x0200,
    0x7fff_ffff,
    0x8000_0000,
    u32::MAX as u64,
    1 << 32,
    1 << 40,
    1 << 55,
    i64::MAX as u64,
    u64::MAX,
];

/// One damage done to a binary trace.
#[derive(Clone, Debug)]
enum BinaryEdit {
    /// A 4- or 8-byte field at an aligned offset set to `EXTREMES[.1]`, big-endian or not.
    Word(Index, Index, bool, bool),
    Byte(Index, u8),
    Cut(Index),
    /// A stretch of the file repeated.
    Repeat(Index, Index),
}

fn binary_edit() -> impl Strategy<Value = BinaryEdit> {
    let i = any::<Index>;
    prop_oneof![
        4 => (i(), i(), any::<bool>(), any::<bool>()).prop_map(|(a, b, c, d)| BinaryEdit::Word(a, b, c, d)),
        1 => (i(), any::<u8>()).prop_map(|(a, b)| BinaryEdit::Byte(a, b)),
        1 => i().prop_map(BinaryEdit::Cut),
        1 => (i(), i()).prop_map(|(a, b)| BinaryEdit::Repeat(a, b)),
    ]
}

fn damage_binary(bytes: &[u8], edits: &[BinaryEdit]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for e in edits {
        if out.is_empty() {
            break;
        }
        match e {
            BinaryEdit::Word(at, v, wide, big) => {
                let width = if *wide { 8 } else { 4 };
                if out.len() < width {
                    continue;
                }
                let at = at.index(out.len() / 4) * 4;
                let at = at.min(out.len() - width);
                let v = *v.get(EXTREMES);
                let b = match (wide, big) {
                    (true, true) => v.to_be_bytes().to_vec(),
                    (true, false) => v.to_le_bytes().to_vec(),
                    (false, true) => (v as u32).to_be_bytes().to_vec(),
                    (false, false) => (v as u32).to_le_bytes().to_vec(),
                };
                out[at..at + width].copy_from_slice(&b);
            }
            BinaryEdit::Byte(at, b) => {
                let i = at.index(out.len());
                out[i] = *b;
            }
            BinaryEdit::Cut(at) => {
                let cut = at.index(out.len() + 1);
                out.truncate(cut);
            }
            BinaryEdit::Repeat(a, b) => {
                let (a, b) = (a.index(out.len()), b.index(out.len()));
                let piece = out[a.min(b)..a.max(b)].to_vec();
                out.splice(a.max(b)..a.max(b), piece);
            }
        }
    }
    out
}

/// What is done to a whole (damaged) trace.
#[derive(Clone, Debug)]
enum Wrap {
    Plain,
    Crlf,
    Bom,
    NoFinalNewline,
    /// A gzip file (of the damaged text), cut short at `.0` or not.
    Gzip(Option<Index>),
    Zstd,
    /// The first bytes of a compressed file before the plain text.
    FakeMagic(Index),
    /// Binary bytes at the end.
    Tail(Vec<u8>),
    /// A line of 70,000 bytes (longer than what detection samples) before line `.0`.
    LongLine(Index, u8),
}

fn wrap() -> impl Strategy<Value = Wrap> {
    prop_oneof![
        6 => Just(Wrap::Plain),
        1 => Just(Wrap::Crlf),
        1 => Just(Wrap::Bom),
        1 => Just(Wrap::NoFinalNewline),
        1 => proptest::option::of(any::<Index>()).prop_map(Wrap::Gzip),
        1 => Just(Wrap::Zstd),
        1 => any::<Index>().prop_map(Wrap::FakeMagic),
        1 => proptest::collection::vec(any::<u8>(), 1..64).prop_map(Wrap::Tail),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(a, b)| Wrap::LongLine(a, b)),
    ]
}

const MAGIC: &[&[u8]] = &[
    &[0x1f, 0x8b],
    b"BZh9",
    &[0xfd, b'7', b'z', b'X', b'Z', 0],
    &[0x28, 0xb5, 0x2f, 0xfd],
];

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The wrapped trace, and whether its lines can be counted in it (not compressed).
fn apply(bytes: Vec<u8>, w: &Wrap) -> (Vec<u8>, bool) {
    match w {
        Wrap::Plain => (bytes, true),
        Wrap::Crlf => (crlf(&bytes), true),
        Wrap::Bom => ([&b"\xef\xbb\xbf"[..], &bytes].concat(), true),
        Wrap::NoFinalNewline => {
            let mut b = bytes;
            if b.last() == Some(&b'\n') {
                b.pop();
            }
            (b, true)
        }
        Wrap::Gzip(cut) => {
            let mut z = gzip(&bytes);
            if let Some(at) = cut {
                z.truncate(at.index(z.len() + 1));
            }
            (z, false)
        }
        Wrap::Zstd => (zstd::encode_all(&bytes[..], 1).unwrap(), false),
        Wrap::FakeMagic(m) => ([m.get(MAGIC), &bytes[..]].concat(), false),
        Wrap::Tail(tail) => ([&bytes[..], tail].concat(), true),
        Wrap::LongLine(at, b) => {
            let mut lines: Vec<&[u8]> = bytes.split(|&c| c == b'\n').collect();
            let long = vec![*b; 70_000];
            let at = at.index(lines.len());
            lines.insert(at, &long);
            (lines.join(&b'\n'), true)
        }
    }
}

fn crlf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for &b in bytes {
        if b == b'\n' && out.last() != Some(&b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

static CASE_DIRS: AtomicU64 = AtomicU64::new(0);

/// A temporary folder of one test case's own: the tests run on parallel threads, and a
/// folder they shared could be removed by one between another's creating it and writing.
fn case_dir() -> std::path::PathBuf {
    let n = CASE_DIRS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("ftlab-fuzz-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// How long a simulation of a fuzzed trace may take (they hold a few small requests).
const SIMULATION_LIMIT: Duration = Duration::from_secs(60);

/// Runs a whole simulation of `bytes` read as `format` (page FTL, mapping only, verified,
/// a small device fitted to the trace, replay set up as `variant` says), as `ftlab run
/// --trace` does: it must not panic, and must replay exactly the requests the reader
/// gives, or fail with an error about the trace that names its file.
fn simulate(
    bytes: &[u8],
    format: &str,
    skip_bad_lines: bool,
    variant: &Variant,
) -> Result<(), TestCaseError> {
    let (variant, time_unit) = *variant;
    let read = read_in(bytes, format, skip_bad_lines, time_unit);
    if read.error.is_some() {
        return Ok(()); // checked where it is read
    }
    let expected = &read.records;
    // A few pages at most: the point is every path, not volume.
    let pages: u64 = expected
        .iter()
        .map(|r| r.len_bytes.div_ceil(4096) + 1)
        .sum();
    if pages > 1 << 16 {
        return Ok(());
    }
    let dir = case_dir();
    let path = dir.join("sim.trace");
    std::fs::write(&path, bytes).unwrap();
    let mut sets: Vec<String> = vec![
        "replay.timing=false".into(),
        format!("trace.skip_bad_lines={skip_bad_lines}"),
        "trace.device_size=\"fit\"".into(),
        "geometry.channels=1".into(),
        "geometry.chips_per_channel=1".into(),
        "geometry.dies_per_chip=1".into(),
        "geometry.planes_per_die=2".into(),
        "geometry.pages_per_block=16".into(),
    ];
    sets.extend(variant.iter().map(|s| s.to_string()));
    sets.push(format!("trace.time_unit=\"{time_unit}\""));
    let opts = RunOptions {
        ftl: "page".into(),
        trace: Some(path.clone()),
        verify: true,
        format: format.into(),
        sets,
        ..RunOptions::default()
    };
    let what = format!(
        "simulating as {format} (skip {skip_bad_lines}, {variant:?}): \"{}\"",
        shown(bytes)
    );
    let out = guarded(
        || what.clone(),
        SIMULATION_LIMIT,
        move || api::run(&opts, &mut |_| true).map(|o| o.report.metrics.host.requests),
    );
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_dir(&dir).unwrap();
    match out {
        Ok(requests) => prop_assert_eq!(requests, expected.len() as u64, "{}", what),
        // A trace without requests is refused.
        Err(Error::Io { file, message }) if expected.is_empty() => {
            prop_assert_eq!(&file, &path, "{}", what);
            prop_assert!(message.starts_with("no request"), "{what}: {message}");
        }
        // Requests the reader gives but a device cannot hold (2^40 pages and more).
        Err(Error::Trace {
            file,
            line,
            message,
        }) => {
            prop_assert_eq!(&file, &path, "{}", what);
            prop_assert!(line >= 1, "{what}: {message}");
        }
        Err(e) => prop_assert!(false, "{what}: {e}"),
    }
    Ok(())
}

/// How replay is configured in the simulations: the default (devices laid out one after
/// the other, addresses compacted if they do not fit), and the other settings of
/// `[trace]` that do not change which requests are replayed.
/// `[trace]` settings, and the time unit.
type Variant = (&'static [&'static str], &'static str);

const VARIANTS: &[Variant] = &[
    (&[], "auto"),
    (&["trace.device_layout=\"merged\""], "auto"),
    (&["trace.compact=\"always\""], "auto"),
    (&["trace.order=\"clamp\"", "trace.max_gap_ns=1000"], "auto"),
    (&["trace.sort_window=1"], "auto"),
    (&[], "ns"),
    (&[], "s"),
];

/// Checks every way of reading a damaged sample, and simulates it where it reads.
fn exercise(
    sample: &Sample,
    bytes: &[u8],
    lines_known: bool,
    other: &Index,
    variant: &Index,
) -> Result<(), TestCaseError> {
    let other = other.get(FORMATS).name;
    let variant = variant.get(VARIANTS);
    for name in [sample.format, "auto", other] {
        for skip in [false, true] {
            let out = read(bytes, name, skip);
            let what = format!(
                "{} sample read as {name} (skip {skip}): \"{}\"",
                sample.format,
                shown(bytes)
            );
            check(&out, lines_known.then_some(bytes), &what)?;
            if name == sample.format && out.error.is_none() {
                simulate(bytes, name, skip, variant)?;
            }
        }
    }
    Ok(())
}

#[test]
fn samples_are_valid() {
    for s in samples() {
        for name in [s.format, "auto"] {
            let out = read(&s.bytes, name, false);
            assert!(out.error.is_none(), "{}: {:?}", s.format, out.error);
            assert_eq!(out.format, Some(s.format), "{}", shown(&s.bytes));
            assert_eq!(out.records.len(), s.requests, "{}", shown(&s.bytes));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(384), ..ProptestConfig::default() })]

    #[test]
    fn damaged_samples_read_or_say_where(
        which in any::<Index>(),
        edits in proptest::collection::vec(edit(), 1..5),
        w in wrap(),
        other in any::<Index>(),
        variant in any::<Index>(),
    ) {
        let all = samples();
        let text: Vec<&Sample> = all.iter().filter(|s| !s.is_binary()).collect();
        let sample = *which.get(&text);
        let (bytes, lines_known) = apply(damage(&sample.bytes, &edits), &w);
        exercise(sample, &bytes, lines_known, &other, &variant)?;
    }

    #[test]
    fn damaged_binary_samples_read_or_say_where(
        which in any::<Index>(),
        edits in proptest::collection::vec(binary_edit(), 1..5),
        gzipped in any::<bool>(),
        other in any::<Index>(),
        variant in any::<Index>(),
    ) {
        let all = samples();
        let binary: Vec<&Sample> = all.iter().filter(|s| s.is_binary()).collect();
        let sample = *which.get(&binary);
        let bytes = damage_binary(&sample.bytes, &edits);
        let bytes = if gzipped { gzip(&bytes) } else { bytes };
        exercise(sample, &bytes, !gzipped, &other, &variant)?;
    }
}

/// Line endings, a byte-order mark, no final newline, blank lines and compression change
/// nothing: the same requests, the same format detected.
#[test]
fn transparent_changes_keep_the_requests() {
    type Change = (&'static str, fn(&[u8]) -> Vec<u8>);
    let changes: &[Change] = &[
        ("crlf", |b| crlf(b)),
        ("bom", |b| [&b"\xef\xbb\xbf"[..], b].concat()),
        ("bom+crlf", |b| [&b"\xef\xbb\xbf"[..], &crlf(b)].concat()),
        ("no final newline", |b| {
            b.strip_suffix(b"\n").unwrap_or(b).to_vec()
        }),
        ("blank lines", |b| {
            let mut out = b"\n".to_vec();
            for l in b.split_inclusive(|&c| c == b'\n') {
                out.extend_from_slice(l);
                out.extend_from_slice(b"  \n");
            }
            out
        }),
        ("gzip", gzip),
        ("gzip members", |b| {
            let half = b.len() / 2;
            [gzip(&b[..half]), gzip(&b[half..])].concat()
        }),
        ("bzip2", |b| {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            e.write_all(b).unwrap();
            e.finish().unwrap()
        }),
        ("xz", |b| {
            let mut e = xz2::write::XzEncoder::new(Vec::new(), 1);
            e.write_all(b).unwrap();
            e.finish().unwrap()
        }),
        ("zstd", |b| zstd::encode_all(b, 1).unwrap()),
    ];
    for s in samples() {
        let original = read(&s.bytes, s.format, false).records;
        for (name, change) in changes {
            let text_only = !matches!(*name, "gzip" | "gzip members" | "bzip2" | "xz" | "zstd");
            if s.is_binary() && text_only {
                continue;
            }
            let bytes = change(&s.bytes);
            for format in [s.format, "auto"] {
                let out = read(&bytes, format, false);
                assert!(
                    out.error.is_none(),
                    "{} {name} as {format}: {:?}",
                    s.format,
                    out.error
                );
                assert_eq!(out.format, Some(s.format), "{} {name}", s.format);
                assert_eq!(out.records, original, "{} {name} as {format}", s.format);
            }
        }
    }
}

/// Inputs at the edges, in every format: empty, blank, headers alone, a byte-order mark
/// alone, NULs, a carriage return as the only line ending.
#[test]
fn edge_inputs_read_or_say_where() {
    let inputs: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"\n".to_vec(),
        b"\n\n \t\n".to_vec(),
        b"\r\n".to_vec(),
        b"\xef\xbb\xbf".to_vec(),
        b"\xef\xbb\xbf\n".to_vec(),
        b"\xff\xfe1\x000\x00".to_vec(),
        vec![0; 100],
        b"Timestamp,Response,IOType,LUN,Offset,Size\n".to_vec(),
        b"version,time,op,size,lbn\n".to_vec(),
        b"fio version 3 iolog\n".to_vec(),
        b"# t dev lba n op\n".to_vec(),
        b"0 0 8 8 0\r1 0 16 8 1\r".to_vec(),
    ];
    for bytes in &inputs {
        read_every_way(bytes).unwrap();
        for format in FORMATS.iter().map(|f| f.name) {
            if read(bytes, format, true).error.is_none() {
                for variant in VARIANTS {
                    simulate(bytes, format, true, variant).unwrap();
                }
            }
        }
    }
}

/// Lines longer than the readers take, and longer than detection samples before good ones:
/// read as their format and detected (every format on megabytes would be slow). Apart from
/// [`edge_inputs_read_or_say_where`] so that the two run side by side.
#[test]
fn long_lines_read_or_say_where() {
    let mut long: Vec<(&str, Vec<u8>)> = vec![
        ("disksim", vec![b'7'; 3 << 20]),
        (
            "disksim",
            [vec![b' '; 2 << 20], b"0 0 8 8 0\n".to_vec()].concat(),
        ),
    ];
    for s in samples().iter().filter(|s| !s.is_binary()) {
        let tail = [s.bytes.clone(), vec![b'x'; 3 << 20]].concat();
        long.push((s.format, tail));
        let head = [vec![b'#'; 70_000], b"\n".to_vec(), s.bytes.clone()].concat();
        long.push((s.format, head));
    }
    for (format, bytes) in &long {
        for name in [*format, "auto"] {
            for skip in [false, true] {
                let out = read(bytes, name, skip);
                let what = format!("{name} (skip {skip}) \"{}\"", shown(bytes));
                check(&out, Some(bytes), &what).unwrap();
                if name == *format && out.error.is_none() {
                    simulate(bytes, name, skip, &VARIANTS[0]).unwrap();
                }
            }
        }
    }
}

/// Random requests over several devices with huge, unaligned addresses, replayed with
/// every layout and compaction setting.
fn random_trace() -> impl Strategy<Value = Vec<(u64, u8, u64, u64, u8)>> {
    proptest::collection::vec(
        (0u64..1_000_000, 0u8..3, 0u64..(1 << 33), 0u64..64, 0u8..3),
        1..300,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn replay_fits_any_trace_onto_its_device(
        reqs in random_trace(),
        layout in 0usize..2,
        compact in 0usize..2,
    ) {
        // DiskSim ASCII: time dev lba sectors op (op 1 = read); sector counts 1..64.
        let mut text = String::new();
        for &(t, dev, lba, sectors, op) in &reqs {
            text += &format!("{t} {dev} {lba} {} {}\n", sectors + 1, (op == 0) as u8);
        }
        let dir = case_dir();
        let path = dir.join(format!("t{layout}{compact}.trace"));
        std::fs::File::create(&path).unwrap().write_all(text.as_bytes()).unwrap();
        let layouts = ["\"separate\"", "\"merged\""];
        let compacts = ["\"auto\"", "\"always\""];
        let opts = RunOptions {
            ftl: "page".into(),
            trace: Some(path.clone()),
            verify: true,
            sets: vec![
                format!("trace.device_layout={}", layouts[layout]),
                format!("trace.compact={}", compacts[compact]),
                "replay.timing=false".into(),
                "geometry.pages_per_block=8".into(),
                "trace.device_size=\"fit\"".into(),
            ],
            ..RunOptions::default()
        };
        let (mapped, cfg) = api::load_requests(&opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let logical = cfg.validate().unwrap().logical_bytes();
        prop_assert_eq!(mapped.len(), reqs.len());
        // Replay sorts by time (stable): compare in that order.
        let mut sorted = reqs.clone();
        sorted.sort_by_key(|r| r.0);
        for (m, &(_, _, lba, sectors, _)) in mapped.iter().zip(&sorted) {
            prop_assert_eq!(m.len_bytes as u64, (sectors + 1) * 512);
            prop_assert_eq!(m.offset_bytes % 4096, lba * 512 % 4096);
            prop_assert!(m.offset_bytes + m.len_bytes as u64 <= logical);
        }
        let out = api::run(&opts, &mut |_| true).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(out.report.metrics.host.requests, reqs.len() as u64);
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_dir(&dir).unwrap();
    }
}

/// Everything a reader tells its caller, record by record.
#[derive(Debug, PartialEq)]
struct Told {
    format: Option<&'static str>,
    /// Each record with the line (or binary record) number the reader gave with it.
    records: Vec<(Record, u64)>,
    /// Where the reading ended: its error (`None` at the end), the last line, the devices
    /// named and the diagnostics.
    error: Option<String>,
    line: u64,
    devices: Vec<String>,
    diagnostics: String,
}

fn told(bytes: &[u8], format: &str, skip_bad_lines: bool, reading: Reading) -> Told {
    let cfg = TraceConfig {
        format: format.into(),
        skip_bad_lines,
        ..TraceConfig::default()
    };
    let mut out = Told {
        format: None,
        records: Vec::new(),
        error: None,
        line: 0,
        devices: Vec::new(),
        diagnostics: String::new(),
    };
    let mut source = match trace::open_bytes_with(bytes.to_vec(), Path::new(LABEL), &cfg, reading) {
        Ok(opened) => opened.source,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    out.format = Some(source.format());
    loop {
        match source.next_record() {
            Ok(Some(r)) => out.records.push((r, source.line())),
            Ok(None) => break,
            Err(e) => {
                out.error = Some(e.to_string());
                break;
            }
        }
    }
    // Nothing more after the end or an error.
    assert_eq!(source.next_record(), Ok(None));
    out.line = source.line();
    out.devices = source.devices().names().to_vec();
    out.diagnostics = format!("{:?}", source.diagnostics());
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(128), ..ProptestConfig::default() })]

    /// Reading on a thread of its own, in batches of any size, tells the caller exactly
    /// what reading on the caller's thread does: the same records in the same order, the
    /// same line numbers, devices, diagnostics and error, for every format, damaged or
    /// not, compressed or not.
    #[test]
    fn threaded_reading_tells_what_sequential_reading_does(
        which in any::<Index>(),
        edits in proptest::collection::vec(edit(), 0..3),
        w in wrap(),
        repeat in 1usize..40,
        batch_records in 1usize..7,
        skip in any::<bool>(),
    ) {
        let all = samples();
        let sample = which.get(&all);
        let body = if sample.is_binary() {
            sample.bytes.repeat(repeat)
        } else {
            damage(&sample.bytes, &edits).repeat(repeat)
        };
        let (bytes, _) = if sample.is_binary() { (body, false) } else { apply(body, &w) };
        for name in [sample.format, "auto"] {
            let sequential = told(&bytes, name, skip, Reading::Sequential);
            let threaded = told(&bytes, name, skip, Reading::Threaded { batch_records });
            prop_assert_eq!(&threaded, &sequential, "{} as {} (skip {}): \"{}\"",
                sample.format, name, skip, shown(&bytes));
        }
    }
}

/// A trace longer than the reader's 1 MiB buffer, with devices appearing late and a bad
/// line near its end: the threaded reading (batches as runs use them) tells the same.
#[test]
fn threaded_reading_of_a_long_trace_tells_what_sequential_reading_does() {
    let mut text = String::new();
    for i in 0..150_000u64 {
        text += &format!("{i} {} {} 8 {}\n", i / 20_000, i * 8, i % 2);
    }
    let good = text.clone();
    text += "150000 0 x 8 0\n150001 0 8 8 0\n";
    for (bytes, skip) in [(&good, false), (&text, false), (&text, true)] {
        let sequential = told(bytes.as_bytes(), "disksim", skip, Reading::Sequential);
        let threaded = told(bytes.as_bytes(), "disksim", skip, Reading::default());
        assert_eq!(sequential.devices.len(), 8);
        assert!(sequential.records.len() >= 150_000);
        assert!(
            threaded == sequential,
            "skip {skip}: {:?} / {:?}",
            threaded.error,
            sequential.error
        );
    }
}

/// Converts `bytes` (read as `format`) to the binary form in `dir`; returns its path.
fn convert(dir: &Path, bytes: &[u8], format: &str, skip_bad_lines: bool) -> std::path::PathBuf {
    let source = dir.join("source.trace");
    std::fs::write(&source, bytes).unwrap();
    let cfg = TraceConfig {
        format: format.into(),
        skip_bad_lines,
        ..TraceConfig::default()
    };
    let out = dir.join("converted.ftl");
    api::convert_trace(&source, &cfg, &out, &mut |_, _| true).unwrap_or_else(|e| panic!("{e}"));
    out
}

/// Every format's sample (and a damaged one whose bad lines are skipped) reads back from
/// its binary form as the same records, devices and diagnostics, and runs to the same
/// report but for the file's name and format.
#[test]
fn converted_traces_read_and_run_as_their_source() {
    let mut cases: Vec<(&str, Vec<u8>, bool)> = samples()
        .into_iter()
        .map(|s| {
            (
                s.format,
                s.bytes.repeat(if s.format == "srt" { 1 } else { 3 }),
                true,
            )
        })
        .collect();
    cases.push((
        "disksim",
        b"0 0 8 8 0\n1 0 x 8 0\n2 7 16 8 1\n3 0 24 0 0\n".to_vec(),
        true,
    ));
    for (format, bytes, skip) in cases {
        let dir = case_dir();
        let converted = convert(&dir, &bytes, format, skip);
        let source = told(&bytes, format, skip, Reading::default());
        let mut back = told(
            &std::fs::read(&converted).unwrap(),
            "auto",
            false,
            Reading::default(),
        );
        // Bad lines are quoted as the conversion read them: from the file.
        let source_path = dir.join("source.trace").display().to_string();
        back.diagnostics = back.diagnostics.replace(&source_path, LABEL);
        assert_eq!(back.format, Some("ftlab"), "{format}");
        let strip = |t: &Told| {
            let records: Vec<Record> = t.records.iter().map(|r| r.0).collect();
            (
                records,
                t.devices.clone(),
                t.diagnostics.clone(),
                t.error.clone(),
            )
        };
        assert_eq!(strip(&back), strip(&source), "{format}");
        let run = |path: &Path| {
            let opts = RunOptions {
                ftl: "page".into(),
                trace: Some(path.to_path_buf()),
                verify: true,
                sets: vec![
                    format!("trace.skip_bad_lines={skip}"),
                    "trace.device_size=\"fit\"".into(),
                    "geometry.channels=1".into(),
                    "geometry.chips_per_channel=1".into(),
                    "geometry.dies_per_chip=1".into(),
                    "geometry.pages_per_block=16".into(),
                ],
                ..RunOptions::default()
            };
            let report = api::run(&opts, &mut |_| true)
                .unwrap_or_else(|e| panic!("{format}: {e}"))
                .report;
            let mut json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
            for (section, key) in [
                ("source", "name"),
                ("source", "format"),
                ("trace", "format"),
            ] {
                json[section][key] = serde_json::Value::Null;
            }
            json
        };
        assert_eq!(run(&converted), run(&dir.join("source.trace")), "{format}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A binary trace cut short anywhere, or with any one byte changed, is an error naming
/// the file (and never a panic), or, where the byte is not part of the records (the
/// source format's name), reads the same records.
#[test]
fn damaged_binary_traces_are_errors() {
    let mut text = String::new();
    for i in 0..60u64 {
        text += &format!(
            "{} {} {} {} {}\n",
            i * 1000,
            i % 3,
            i * 8 % 977,
            1 + i % 16,
            i % 2
        );
    }
    let dir = case_dir();
    let good = std::fs::read(convert(&dir, text.as_bytes(), "disksim", false)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let expected = told(&good, "auto", false, Reading::default());
    assert_eq!(expected.records.len(), 60);
    assert_eq!(expected.error, None);
    let read = |bytes: Vec<u8>| {
        let shown_bytes = format!("{} bytes", bytes.len());
        guarded(
            move || shown_bytes.clone(),
            READ_LIMIT,
            move || told(&bytes, "ftlab", false, Reading::default()),
        )
    };
    for cut in 0..good.len() {
        let out = read(good[..cut].to_vec());
        let e = out
            .error
            .unwrap_or_else(|| panic!("cut at {cut}: no error"));
        assert!(e.starts_with(LABEL), "cut at {cut}: {e}");
        if cut >= 13 {
            assert!(e.contains("truncated"), "cut at {cut}: {e}");
        }
    }
    let mut longer = good.clone();
    longer.push(0);
    assert!(read(longer)
        .error
        .unwrap()
        .contains("bytes after the end record"));
    for at in 0..good.len() {
        for flip in [0x01u8, 0xff] {
            let mut bad = good.clone();
            bad[at] ^= flip;
            let out = read(bad);
            match &out.error {
                Some(e) => assert!(e.starts_with(LABEL), "byte {at} ^ {flip:#x}: {e}"),
                None => assert_eq!(
                    out.records, expected.records,
                    "byte {at} ^ {flip:#x} read as other records"
                ),
            }
        }
    }
}
