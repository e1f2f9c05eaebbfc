//! Format detection from a trace's first bytes. An HP SRT trace is known by its header's
//! first bytes; other binary content (a NUL byte early on) must be a CloudPhysics vscsi
//! trace; text is tried against each text format, and the one that
//! reads the most sampled lines without an error wins (ties go to the earlier format in
//! [`FORMATS`](super::FORMATS)), provided it reads at least half of them and finds a
//! request. A bad line early in a trace thus still gets its precise error from the
//! reader. The formats' field counts, separators and operation codes differ enough that
//! real traces are never ambiguous; `--format` overrides the guess.

use super::{
    srt, vscsi, BlkEvent, Devices, Format, LineFormat, Parser, Settings, TraceConfig, FORMATS,
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
    let head = &sample[..sample.len().min(4096)];
    if head.contains(&0) {
        return detect_binary(path, sample);
    }
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
    let mut best: Option<(usize, &'static str)> = None;
    for f in FORMATS
        .iter()
        .filter(|f| !f.example.starts_with("(binary)"))
    {
        // blkparse: whichever event kind the first lines hold identifies the format.
        let events: &[BlkEvent] = if f.name == "blkparse" {
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
            ("26214000 0 303574 7 0\n", "disksim"),
            ("13.191135\t30\t0\t5\t1\r\n17.829285\t20\t576560\t6\t1\r\n", "disksim"),
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
}
