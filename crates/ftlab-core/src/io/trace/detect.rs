//! Format detection from a trace's first bytes. An HP SRT trace is known by its header's
//! first bytes; other binary content (a NUL byte early on) must be a CloudPhysics vscsi
//! trace; text is tried against each text format, and the one that
//! reads the most sampled lines without an error wins (ties go to the earlier format in
//! [`FORMATS`](super::FORMATS)), provided it reads at least half of them and finds a
//! request. A bad line early in a trace thus still gets its precise error from the
//! reader. The formats' field counts, separators and operation codes differ enough that
//! real traces are never ambiguous; `--format` overrides the guess.
//!
//! Two kinds of file that cache simulators use are recognised only to say why they cannot
//! be replayed: a text file of one number per line (block addresses alone, as
//! libCacheSim's `.txt` traces) and libCacheSim's binary `oracleGeneral` traces. Neither
//! says whether a request reads or writes.

use super::{
    binary, input, srt, vscsi, BlkEvent, Devices, Format, LineFormat, Open, Parser, Settings,
    TraceConfig, FORMATS,
};
use crate::error::{Error, Result};
use std::path::Path;

/// Lines of the sample the text formats are tried on.
const LINES: usize = 32;

fn format(name: &str) -> &'static Format {
    FORMATS
        .iter()
        .find(|f| f.name == name)
        .expect("a known format name")
}

fn error(path: &Path, message: String) -> Error {
    Error::Io {
        file: path.to_path_buf(),
        message,
    }
}

pub(crate) fn detect(path: &Path, sample: &[u8], cfg: &TraceConfig) -> Result<&'static Format> {
    if sample.is_empty() {
        return Err(error(
            path,
            "the trace is empty: no format to detect (name one with --format)".into(),
        ));
    }
    if sample.starts_with(srt::MAGIC) {
        return Ok(format("srt"));
    }
    if sample.starts_with(binary::MAGIC) {
        return Ok(format("ftlab"));
    }
    let head = &sample[..sample.len().min(4096)];
    if head.contains(&0) {
        return detect_binary(path, sample);
    }
    let sample = sample.strip_prefix(super::UTF8_BOM).unwrap_or(sample);
    let mut lines: Vec<&[u8]> = sample.split(|&b| b == b'\n').collect();
    if sample.len() >= 64 << 10 && lines.len() > 1 {
        lines.pop(); // possibly cut short
    }
    let lines: Vec<&[u8]> = lines
        .into_iter()
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| l.iter().any(|b| !b.is_ascii_whitespace()))
        .take(LINES)
        .collect();
    if lines.is_empty() {
        return Err(error(
            path,
            format!(
                "the trace holds nothing but blank lines{}: no request to replay",
                if sample.len() >= input::SAMPLE {
                    format!(" in its first {} KiB", input::SAMPLE >> 10)
                } else {
                    String::new()
                }
            ),
        ));
    }
    let mut best: Option<(usize, &'static str)> = None;
    for f in FORMATS.iter().filter(|f| matches!(f.open, Open::Text(_))) {
        // blkparse: whichever event kind the first lines hold identifies the format.
        let events: &[BlkEvent] = if f.name == "blkparse" || f.name == "wiscsee" {
            &[BlkEvent::D, BlkEvent::Q, BlkEvent::C]
        } else {
            &[cfg.blkparse_event]
        };
        for &event in events {
            let settings = Settings {
                unit_override: None,
                blkparse_event: event,
            };
            let (good, requests) = score(Parser::new(f.name, &settings), &lines);
            if requests > 0 && 2 * good >= lines.len() && best.is_none_or(|(b, _)| good > b) {
                best = Some((good, f.name));
            }
        }
    }
    if let Some((_, name)) = best {
        return Ok(format(name));
    }
    if !lines.is_empty() && lines.iter().all(|l| is_one_number(l)) {
        return Err(error(
            path,
            format!(
                "every line holds a single number (first line: `{}`): block addresses alone, \
                 as in libCacheSim's `.txt` traces, with no operation, size or time. Such a \
                 file cannot be replayed: a flash device's cost depends on which requests \
                 write and how much each one covers. Replay the trace it was made from (for \
                 CloudPhysics' cloudPhysicsIO.txt: the .vscsi or .csv copy of the same trace)",
                super::show(lines[0])
            ),
        ));
    }
    let first = lines.first().map_or(String::new(), |l| {
        format!(" (first line: `{}`)", super::show(l))
    });
    let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
    Err(error(
        path,
        format!(
            "cannot tell the trace format from the first lines{first}; name it with --format \
             (one of {})",
            names.join(", ")
        ),
    ))
}

/// A line that is one unsigned integer.
fn is_one_number(line: &[u8]) -> bool {
    let mut f = super::fields(line);
    f.next().is_some_and(|n| n.iter().all(u8::is_ascii_digit)) && f.next().is_none()
}

/// Bytes of a libCacheSim oracleGeneral record: `u32 time, u64 obj_id, u32 obj_size,
/// i64 next_access_vtime`, little-endian.
const ORACLE_RECORD: usize = 24;

/// Whether binary content reads as libCacheSim oracleGeneral records: times that never go
/// back, and each record's next access to the same object either none (-1, or
/// `i64::MAX` in some versions) or a later request (counted from 1).
fn is_oracle_general(sample: &[u8]) -> bool {
    if sample.len() < input::SAMPLE && !sample.len().is_multiple_of(ORACLE_RECORD) {
        return false; // the whole file, and not whole records
    }
    let mut last_time = 0;
    let mut records = 0;
    for (i, rec) in sample.chunks_exact(ORACLE_RECORD).take(1024).enumerate() {
        let time = u32::from_le_bytes(rec[0..4].try_into().expect("4 bytes"));
        let next = i64::from_le_bytes(rec[16..24].try_into().expect("8 bytes"));
        if time < last_time || !(next == -1 || next == i64::MAX || next > i as i64 + 1) {
            return false;
        }
        last_time = time;
        records += 1;
    }
    records >= 4
}

/// Lines read without an error, and requests among them.
fn score(mut parser: Parser, lines: &[&[u8]]) -> (usize, usize) {
    let mut devices = Devices::default();
    let (mut good, mut requests) = (0, 0);
    for (i, line) in lines.iter().enumerate() {
        match parser.parse(line, i as u64 + 1, &mut devices) {
            Ok(Some(_)) => {
                good += 1;
                requests += 1;
            }
            Ok(None) => good += 1,
            Err(_) => {}
        }
    }
    (good, requests)
}

fn detect_binary(path: &Path, sample: &[u8]) -> Result<&'static Format> {
    if sample.len() >= 32 {
        let version = vscsi::record_version(&sample[..sample.len().min(40)]);
        let size = if version == 2 { 40 } else { 32 };
        let consistent = version != 0
            && sample
                .chunks_exact(size)
                .take(16)
                .all(|r| vscsi::record_version(r) == version);
        if consistent {
            return Ok(format("vscsi"));
        }
    }
    // Text saved as UTF-16 (Windows tools): every other byte of ASCII is a NUL.
    if sample.starts_with(&[0xff, 0xfe]) || sample.starts_with(&[0xfe, 0xff]) {
        return Err(error(
            path,
            "UTF-16 text (it starts with a UTF-16 byte-order mark): the text formats are read \
             as ASCII or UTF-8; convert the file (for example `iconv -f UTF-16 -t UTF-8`)"
                .into(),
        ));
    }
    if is_oracle_general(sample) {
        return Err(error(
            path,
            "a libCacheSim oracleGeneral trace (24-byte records: time, object id, size, next \
             access), made for cache simulation: it has no read/write field, so it cannot be \
             replayed (a flash device's cost depends on which requests write). Replay the trace \
             it was made from (for CloudPhysics' cloudPhysicsIO.oracleGeneral.bin: the .vscsi \
             or .csv copy of the same trace)"
                .into(),
        ));
    }
    Err(error(
        path,
        "binary content that is neither a CloudPhysics vscsi trace (version 1 or 2 records) \
         nor an HP SRT trace (`$$TR_IOREC-` header); \
         the text formats are read plain or compressed (gzip, bzip2, xz, zstd)"
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guess(text: &str) -> std::result::Result<&'static str, String> {
        detect(Path::new("t"), text.as_bytes(), &TraceConfig::default())
            .map(|f| f.name)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn each_format_is_recognised_from_real_lines() {
        let cases = [
            ("fio version 3 iolog\n2 /dev/sdb add\n878 /dev/sdb write 0 16384\n", "fio"),
            ("fio version 2 iolog\n/dev/sdb add\n/dev/sdb read 0 4096\n", "fio"),
            (
                "  8,16   5        1     0.000000000 18615  A   R 1444645666 + 256 <- (8,17) 1444645632\n  \
                 8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]\n",
                "blkparse",
            ),
            ("89966811921625 4257 nfsd 488846200 8 W 6 0 2c4787c7671c2f638777c4ab72859ce1\n", "fiu"),
            ("128166385295514663,hm,0,Write,9056014336,2048,2833\n", "msr"),
            (
                "Timestamp,Response,IOType,LUN,Offset,Size\n1456095145.133076000,0.000806000,R,0,899056122368,131072\n",
                "systor",
            ),
            ("1538323200,4247200,128,1,1058\n1538323199,13896880,128,0,1063\n", "tencent"),
            ("0,303567,3584,w,0.000000\n1,55590,3072,w,0.000000\n", "spc"),
            (
                "419,W,8728576,4096,1577808144249593\n0,R,126703644672,4096,1577808000000626\n",
                "alibaba",
            ),
            ("26214000 0 303574 7 0\n", "disksim"),
            ("13.191135\t30\t0\t5\t1\r\n17.829285\t20\t576560\t6\t1\r\n", "disksim"),
            (
                "\t0\t1\t2\t3\t4\t5\t6\t7\t8\n\
                 0\t89966811921625\t4257\tnfsd\t488846200\t8\tW\t6\t0\t2c4787c7671c2f638777c4ab72859ce1\n",
                "fiu",
            ),
            (
                "29162 D read 299008 4096 0.000000000 0 False\n\
                 29162 C read 299008 4096 0.000223461 0.000223461 False\n",
                "wiscsee",
            ),
            // Only completions among the first lines: still WiscSee events.
            ("0 C write 143331328 12288 1.413239137 2.94e-05 True\n", "wiscsee"),
            ("1123 write 0 4096 0 0 S\n13 write 40960 4096 1 1 S\n", "wiscsee"),
            (
                "version,time,op,size,lbn\r\n1,5633898,2a,512,42932745\r\n1,5633898,28,512,8\r\n",
                "vscsi-csv",
            ),
            ("1,5633898,2a,512,42932745\n", "vscsi-csv"),
        ];
        for (text, name) in cases {
            assert_eq!(guess(text), Ok(name), "{text}");
        }
    }

    #[test]
    fn a_bad_line_among_good_ones_does_not_hide_the_format() {
        assert_eq!(
            guess("0 0 8 8 0\n100 0 16 8 1\n200 0 sixteen 8 1\n"),
            Ok("disksim")
        );
        assert_eq!(guess("1,0,8,0,7\n1,0,8,x,7\n1,0,8,1,7\n"), Ok("tencent"));
    }

    #[test]
    fn unknown_content_says_so() {
        let e = guess("hello world\n").unwrap_err();
        assert!(
            e.contains("cannot tell the trace format") && e.contains("hello world"),
            "{e}"
        );
        let e = guess("").unwrap_err();
        assert!(e.contains("empty"), "{e}");
        let e = detect(Path::new("t"), &[0u8; 100], &TraceConfig::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("binary content"), "{e}");
    }

    #[test]
    fn traces_without_operations_are_recognised_and_refused() {
        let e = guess("42932745\n42932746\r\n40409911\n\n").unwrap_err();
        assert!(
            e.contains("single number (first line: `42932745`)")
                && e.contains("cannot be replayed")
                && e.contains(".vscsi or .csv"),
            "{e}"
        );
        // libCacheSim oracleGeneral: time, object, size, next access (1-based; -1: none).
        let record = |time: u32, obj: u64, size: u32, next: i64| {
            let mut r = time.to_le_bytes().to_vec();
            r.extend(obj.to_le_bytes());
            r.extend(size.to_le_bytes());
            r.extend(next.to_le_bytes());
            r
        };
        let oracle: Vec<u8> = [
            record(5633898, 42932745, 512, 5),
            record(5633898, 42932746, 512, -1),
            record(5633898, 42932747, 512, i64::MAX),
            record(5633899, 40409911, 6656, -1),
            record(5633899, 42932745, 512, -1),
        ]
        .concat();
        let binary = |bytes: &[u8]| {
            detect(Path::new("t.bin"), bytes, &TraceConfig::default())
                .unwrap_err()
                .to_string()
        };
        let e = binary(&oracle);
        assert!(
            e.starts_with("t.bin: a libCacheSim oracleGeneral trace")
                && e.contains("no read/write field")
                && e.contains(".vscsi or .csv"),
            "{e}"
        );
        // Not oracleGeneral: a next access that is not later, time going back, a partial
        // record at the end of the file.
        for bad in [
            [record(1, 1, 512, 1), oracle.clone()].concat(),
            [oracle.clone(), record(5633898, 1, 512, -1)].concat(),
            [oracle.clone(), vec![0; 7]].concat(),
        ] {
            assert!(binary(&bad).contains("binary content that is neither"));
        }
    }
}
