//! The trace readers never panic, whatever the bytes: arbitrary input, and valid lines
//! with random damage, through every format and through auto-detection. Every error
//! names the file. And replay maps any trace onto the device it plans for: every request
//! inside it, pages consecutive, offsets within the page kept, verification passing.

use ftlab_core::api::{self, RunOptions};
use ftlab_core::trace::{self, TraceConfig, FORMATS};
use proptest::prelude::*;
use std::io::Write;
use std::path::Path;

/// Reads everything; returns the number of records, or the error's text.
fn read_all(bytes: Vec<u8>, format: &str, skip_bad_lines: bool) -> Result<usize, String> {
    let cfg = TraceConfig {
        format: format.into(),
        skip_bad_lines,
        sort_window: 16,
        ..TraceConfig::default()
    };
    let opened =
        trace::open_bytes(bytes, Path::new("fuzz.trace"), &cfg).map_err(|e| e.to_string())?;
    let mut source = opened.source;
    let mut n = 0;
    loop {
        match source.next_record() {
            Ok(Some(r)) => {
                assert!(r.len_bytes <= trace::MAX_REQUEST_BYTES);
                assert!(r.offset_bytes.checked_add(r.len_bytes).is_some());
                n += 1;
            }
            Ok(None) => return Ok(n),
            Err(e) => return Err(e.to_string()),
        }
    }
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
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
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
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        for name in names() {
            for skip in [false, true] {
                if let Err(e) = read_all(bytes.clone(), name, skip) {
                    prop_assert!(e.starts_with("fuzz.trace"), "{name}: {e}");
                }
            }
        }
    }

    #[test]
    fn damaged_lines_never_panic(bytes in damaged()) {
        for name in names() {
            for skip in [false, true] {
                if let Err(e) = read_all(bytes.clone(), name, skip) {
                    prop_assert!(e.starts_with("fuzz.trace"), "{name}: {e}");
                }
            }
        }
    }

    #[test]
    fn binary_records_never_panic(bytes in vscsi_bytes()) {
        for name in ["vscsi", "auto"] {
            for skip in [false, true] {
                if let Err(e) = read_all(bytes.clone(), name, skip) {
                    prop_assert!(e.starts_with("fuzz.trace"), "{name}: {e}");
                }
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
            if let Err(e) = read_all(bytes.clone(), name, true) {
                prop_assert!(e.starts_with("fuzz.trace"), "{name}: {e}");
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
        let dir = std::env::temp_dir().join(format!("ftlab-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
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
    }
}
