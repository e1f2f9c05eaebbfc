//! Every trace format read from the real excerpts in `../shared/traces` (or
//! `$FTLAB_SHARED/traces`), with request counts and read ratios checked against counts made
//! here independently of the readers (plain string splitting, as the traces' README does).
//! Skipped, with a message, where the folder is absent.

use crate::common;

use common::traces_dir;
use ftlab_core::io::trace::scan::scan;
use ftlab_core::io::trace::{self, Record, TraceConfig};
use ftlab_core::run::api::{self, RunOptions};
use ftlab_core::run::replay::{Plan, Replay, FITTED_SPARE_BLOCKS};
use ftlab_core::{Op, Request};
use std::io::Write;
use std::path::{Path, PathBuf};

fn config(format: &str) -> TraceConfig {
    TraceConfig {
        format: format.into(),
        ..TraceConfig::default()
    }
}

fn records(path: &Path, cfg: &TraceConfig) -> (Vec<Record>, String, Vec<String>) {
    let opened = trace::open_trace(path, cfg).unwrap_or_else(|e| panic!("{e}"));
    let mut source = opened.source;
    let mut out = Vec::new();
    while let Some(r) = source.next_record().unwrap_or_else(|e| panic!("{e}")) {
        out.push(r);
    }
    let devices = source.devices().names().to_vec();
    (out, source.format().to_string(), devices)
}

/// Requests and reads of a text trace, counted by `classify` (None: not a request).
/// Lines are split at commas if `csv`, else at white space.
fn count_lines(
    path: &Path,
    csv: bool,
    classify: impl Fn(&[&str]) -> Option<bool>,
) -> (usize, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut n = 0;
    let mut reads = 0;
    for line in text.lines() {
        let fields: Vec<&str> = if csv {
            line.split(',').collect()
        } else {
            line.split_whitespace().collect()
        };
        if let Some(is_read) = classify(&fields) {
            n += 1;
            reads += is_read as usize;
        }
    }
    (n, reads)
}

fn check(path: &Path, format: &str, expected: (usize, usize), cfg: &TraceConfig) -> Vec<Record> {
    let (recs, detected, _) = records(path, cfg);
    assert_eq!(detected, format, "{}", path.display());
    let reads = recs.iter().filter(|r| r.op == Op::Read).count();
    assert_eq!((recs.len(), reads), expected, "{}", path.display());
    recs
}

#[test]
fn msr_cambridge() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv");
    let expected = count_lines(&path, true, |f| Some(f[3] == "Read"));
    assert_eq!(expected.0, 1000);
    let recs = check(&path, "msr", expected, &config("auto"));
    // 128166385295514663,hm,0,Write,9056014336,2048,2833
    assert_eq!(
        recs[0],
        Record {
            time_ns: 128_166_385_295_514_663 * 100,
            offset_bytes: 9_056_014_336,
            len_bytes: 2048,
            dev: 0,
            op: Op::Write
        }
    );
    let (_, _, devices) = records(&path, &config("msr"));
    assert_eq!(devices, ["hm_0"]);
}

#[test]
fn systor17_plain_and_gzip() {
    let Some(dir) = traces_dir() else { return };
    for name in ["systor17-traces-sample", "systor17-additional-sample"] {
        let plain = dir.join(format!("snia_systor17_caffeine_sample/{name}.csv"));
        let expected = count_lines(&plain, true, |f| (f[0] != "Timestamp").then(|| f[2] == "R"));
        assert_eq!(expected.0, 999);
        let a = check(&plain, "systor", expected, &config("auto"));
        let gz = plain.with_extension("csv.gz");
        let b = check(&gz, "systor", expected, &config("auto"));
        assert_eq!(a, b);
    }
}

#[test]
fn tencent_cbs_plain_and_bzip2() {
    let Some(dir) = traces_dir() else { return };
    let plain = dir.join("tencent_cbs_caffeine_sample/cloud_storage-sample");
    let expected = count_lines(&plain, true, |f| Some(f[3] == "0"));
    assert_eq!(expected.0, 50_000);
    let a = check(&plain, "tencent", expected, &config("auto"));
    let b = check(
        &plain.with_extension("bz2"),
        "tencent",
        expected,
        &config("auto"),
    );
    assert_eq!(a, b);
    let (_, _, devices) = records(&plain, &config("auto"));
    let text = std::fs::read_to_string(&plain).unwrap();
    let mut volumes: Vec<&str> = text
        .lines()
        .map(|l| l.rsplit(',').next().unwrap())
        .collect();
    volumes.sort_unstable();
    volumes.dedup();
    assert_eq!(devices.len(), volumes.len());
}

#[test]
fn cloudphysics_vscsi() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("cloudphysics_libCacheSim/cloudPhysicsIO.vscsi");
    let bytes = std::fs::read(&path).unwrap();
    let mut expected = (0, 0);
    for rec in bytes.chunks_exact(32) {
        let opcode = u16::from_le_bytes([rec[12], rec[13]]);
        if [0x08, 0x28, 0xa8, 0x88, 0x0a, 0x2a, 0xaa, 0x8a].contains(&opcode) {
            expected.0 += 1;
            expected.1 += [0x08, 0x28, 0xa8, 0x88].contains(&opcode) as usize;
        }
    }
    assert_eq!(expected.0, 113_872);
    let recs = check(&path, "vscsi", expected, &config("auto"));
    // The CSV copy of the same trace, read (and recognised) on its own: the same
    // operations, sizes and addresses, the times truncated to seconds.
    let csv_path = dir.join("cloudphysics_libCacheSim/cloudPhysicsIO.csv");
    let csv_expected = count_lines(&csv_path, true, |f| {
        (f[0] != "version").then(|| ["08", "28", "a8", "88"].contains(&f[2]))
    });
    assert_eq!(csv_expected, expected);
    let from_csv = check(&csv_path, "vscsi-csv", expected, &config("auto"));
    for (b, c) in recs.iter().zip(&from_csv) {
        assert_eq!(
            (b.op, b.offset_bytes, b.len_bytes, b.dev),
            (c.op, c.offset_bytes, c.len_bytes, c.dev)
        );
        assert_eq!(b.time_ns / 1_000_000_000 * 1_000_000_000, c.time_ns);
    }
    let (_, _, devices) = records(&csv_path, &config("cloudphysics-csv"));
    assert_eq!(devices, ["0"]);
}

/// The copies of the CloudPhysics trace that lost its operations (libCacheSim's block
/// numbers alone, and its oracleGeneral cache-simulation records) are refused, saying
/// what they are and what to replay instead.
#[test]
fn cloudphysics_copies_without_operations_are_refused() {
    let Some(dir) = traces_dir() else { return };
    for (file, what) in [
        ("cloudPhysicsIO.txt", "every line holds a single number"),
        (
            "cloudPhysicsIO.oracleGeneral.bin",
            "a libCacheSim oracleGeneral trace",
        ),
    ] {
        let path = dir.join("cloudphysics_libCacheSim").join(file);
        // As published, and zstd-compressed (as libCacheSim distributes its traces).
        let bytes = std::fs::read(&path).unwrap();
        let zst = write_file(
            &format!("{file}.zst"),
            &zstd::encode_all(&bytes[..], 1).unwrap(),
        );
        for path in [path, zst] {
            let err = trace::open_trace(&path, &config("auto"))
                .err()
                .unwrap_or_else(|| panic!("{} opened", path.display()))
                .to_string();
            assert!(
                err.starts_with(&format!("{}: {what}", path.display()))
                    && err.contains("cannot be replayed")
                    && err.contains("the .vscsi or .csv copy"),
                "{err}"
            );
        }
    }
}

#[test]
fn hp_srt() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("disksim_hpl_validation/ajw.1week.srt");
    // Independently of the reader: the records after the header's 0x0C byte, as the
    // traces' README parses them.
    let bytes = std::fs::read(&path).unwrap();
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    let mut p = bytes.iter().position(|&b| b == 0x0c).unwrap() + 1;
    let (mut expected, mut first) = ((0, 0), None);
    while p + 16 <= bytes.len() {
        if [1, 4].contains(&(be(p + 4) & 0xffff)) {
            expected.0 += 1;
            expected.1 += (be(p + 44) & 1) as usize;
            first.get_or_insert((be(p + 12), be(p + 24), be(p + 28)));
        }
        p += be(p) as usize;
    }
    assert_eq!(expected, (44_519, 13_040));
    let recs = check(&path, "srt", expected, &config("auto"));
    let (usec, len, sectno) = first.unwrap();
    assert_eq!(
        (recs[0].time_ns, recs[0].len_bytes, recs[0].offset_bytes),
        (usec as u64 * 1000, len as u64, sectno as u64 * 256)
    );
    let (_, _, devices) = records(&path, &config("auto"));
    assert_eq!(devices.len(), 2);
}

#[test]
fn disksim_family() {
    let Some(dir) = traces_dir() else { return };
    let ascii = |f: &[&str]| (f.len() >= 5).then(|| f[4].parse::<u64>().unwrap() & 1 == 1);
    for (file, requests) in [
        ("mqsim_umass_websearch_tpcc/wsrch-small.trace", 24_783),
        ("mqsim_umass_websearch_tpcc/tpcc-small.trace", 6_999),
        ("ssdsim_hust_financial1/example.ascii", 10_000),
        ("disksim_hpl_validation/ascii.trace", 100_000),
    ] {
        let path = dir.join(file);
        let expected = count_lines(&path, false, ascii);
        assert_eq!(expected.0, requests, "{file}");
        check(&path, "disksim", expected, &config("auto"));
    }
    // DiskSim's own trace is in decimal milliseconds, recognised as such or named.
    let path = dir.join("disksim_hpl_validation/ascii.trace");
    for unit in ["auto", "ms"] {
        let cfg = TraceConfig {
            time_unit: unit.into(),
            ..TraceConfig::default()
        };
        let (recs, _, devices) = records(&path, &cfg);
        assert_eq!(recs[0].time_ns, 13_191_135); // 13.191135 ms
        assert!(devices.len() > 10);
    }
    // MQSim's are in whole nanoseconds.
    let path = dir.join("mqsim_umass_websearch_tpcc/tpcc-small.trace");
    let (recs, _, _) = records(&path, &config("auto"));
    assert_eq!(recs[0].time_ns, 938_513_000);
}

#[test]
fn fiu_iodedup() {
    let Some(dir) = traces_dir() else { return };
    let path =
        dir.join("fiu_mail_excerpt/DERIVED_cheetah.cs.fiu.edu-110108-113008.1.head10000.blkparse");
    let expected = count_lines(&path, false, |f| Some(f[5] == "R"));
    assert_eq!(expected.0, 10_000);
    let recs = check(&path, "fiu", expected, &config("auto"));
    assert!(recs.iter().all(|r| r.len_bytes == 4096));
    // The pandas TSV it was derived from (a header row and an index column): recognised,
    // and the same requests.
    let tsv = dir.join("fiu_mail_excerpt/smalltrace.csv");
    let (from_tsv, format, devices) = records(&tsv, &config("auto"));
    assert_eq!((format.as_str(), devices), ("fiu", vec!["6,0".to_string()]));
    assert_eq!(from_tsv, recs);
    // FIU's own sample.
    let sample = dir.join("fiu_mail_excerpt/sample.blkparse");
    let expected = count_lines(&sample, false, |f| (f.len() >= 9).then(|| f[5] == "R"));
    check(&sample, "fiu", expected, &config("auto"));
}

/// WiscSee's event files: D events by default (C on request), discards as trims, and the
/// mkfs trace's read of the partition table (before the partition: a negative offset)
/// skipped.
#[test]
fn wiscsee_events() {
    let Some(dir) = traces_dir() else { return };
    let count = |event: &'static str| {
        move |f: &[&str]| {
            (f[1] == event && f[3].parse::<i64>().unwrap() >= 0).then(|| f[2] == "read")
        }
    };
    for (file, d_events) in [
        ("wiscsee_blkparse/blkparse-events-for-ftlsim.txt", 1),
        (
            "wiscsee_blkparse/sqlitewal-update/blkparse-events-for-ftlsim.txt",
            5_008,
        ),
        // 151 D events, one of them before the partition.
        (
            "wiscsee_blkparse/sqlitewal-update/blkparse-events-for-ftlsim-mkfs.txt",
            150,
        ),
    ] {
        let path = dir.join(file);
        let expected = count_lines(&path, false, count("D"));
        assert_eq!(expected.0, d_events, "{file}");
        let recs = check(&path, "wiscsee", expected, &config("auto"));
        let completions = count_lines(&path, false, count("C"));
        let cfg = TraceConfig {
            blkparse_event: trace::BlkEvent::C,
            ..TraceConfig::default()
        };
        check(&path, "wiscsee", completions, &cfg);
        let trims = count_lines(&path, false, |f| {
            (f[1] == "D" && f[2] == "discard").then_some(true)
        });
        assert_eq!(
            recs.iter().filter(|r| r.op == Op::Trim).count(),
            trims.0,
            "{file}"
        );
    }
    // The SQLite-WAL trace: 5,008 issued requests, one of them a discard; the first
    // `39949 D read 299008 4096 0.000000000 0 False`.
    let path = dir.join("wiscsee_blkparse/sqlitewal-update/blkparse-events-for-ftlsim.txt");
    let (recs, _, devices) = records(&path, &config("wiscsee"));
    assert_eq!(devices, ["0"]);
    assert_eq!(
        recs[0],
        Record {
            time_ns: 0,
            offset_bytes: 299_008,
            len_bytes: 4096,
            dev: 0,
            op: Op::Read
        }
    );
    assert_eq!(recs.iter().filter(|r| r.op == Op::Trim).count(), 1);
}

/// What users bring besides the files as published: Windows line endings, blank lines at
/// the end, FIU's header lines, compression. Each reads as the original.
#[test]
fn real_world_variants_read_the_same() {
    let Some(dir) = traces_dir() else { return };
    for file in [
        "fiu_mail_excerpt/DERIVED_cheetah.cs.fiu.edu-110108-113008.1.head10000.blkparse",
        "fiu_mail_excerpt/smalltrace.csv",
        "wiscsee_blkparse/sqlitewal-update/blkparse-events-for-ftlsim.txt",
        "cloudphysics_libCacheSim/cloudPhysicsIO.csv",
    ] {
        let path = dir.join(file);
        let (original, format, _) = records(&path, &config("auto"));
        let text = std::fs::read_to_string(&path).unwrap();
        let crlf = text.replace('\n', "\r\n") + "\r\n\r\n";
        let mut variants: Vec<(&str, Vec<u8>)> = vec![("crlf", crlf.clone().into_bytes())];
        if format == "fiu" && !file.ends_with(".csv") {
            let header = "# FIU IODedup trace: cheetah.cs.fiu.edu\n\
                          [ts in ns] [pid] [process] [lba] [size in 512 Bytes blocks] \
                          [Write or Read] [major device number] [minor device number] \
                          [MD5 per 4096 Bytes]\n\n";
            variants.push(("header", format!("{header}{text}").into_bytes()));
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(crlf.as_bytes()).unwrap();
        variants.push(("crlf.gz", gz.finish().unwrap()));
        let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        bz.write_all(text.as_bytes()).unwrap();
        variants.push(("bz2", bz.finish().unwrap()));
        let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(text.as_bytes()).unwrap();
        variants.push(("xz", xz.finish().unwrap()));
        variants.push(("zst", zstd::encode_all(text.as_bytes(), 1).unwrap()));
        for (kind, bytes) in variants {
            let name = format!("{}.{kind}", path.file_name().unwrap().to_string_lossy());
            let (recs, detected, _) = records(&write_file(&name, &bytes), &config("auto"));
            assert_eq!(detected, format, "{file} {kind}");
            assert!(recs == original, "{file} {kind}: different requests");
        }
    }
}

#[test]
fn blkparse_d_q_and_c_events() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("apress_blktrace_hdd/blktrace.txt");
    for (event, name) in [
        (trace::BlkEvent::D, "D"),
        (trace::BlkEvent::Q, "Q"),
        (trace::BlkEvent::C, "C"),
    ] {
        let expected = count_lines(&path, false, |f| {
            (f.len() >= 10 && f[5] == name && f[8] == "+" && f[9] != "0")
                .then(|| f[6].contains('R'))
        });
        let cfg = TraceConfig {
            blkparse_event: event,
            ..TraceConfig::default()
        };
        check(&path, "blkparse", expected, &cfg);
    }
    // README: 170 D events, 45.9% reads; 15,524 Q.
    let (recs, _, devices) = records(&path, &TraceConfig::default());
    assert_eq!((recs.len(), devices), (170, vec!["8,16".to_string()]));
    // With the closing summary, D N pass-through events and flushes.
    let path = dir.join("wiscsee_blkparse/blkparse-output.txt");
    let expected = count_lines(&path, false, |f| {
        (f.len() >= 10 && f[5] == "D" && f[8] == "+").then(|| f[6].contains('R'))
    });
    assert_eq!(expected, (673, 161));
    check(&path, "blkparse", expected, &config("auto"));
}

fn write_file(name: &str, content: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ftlab-traces-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(content)
        .unwrap();
    path
}

/// No real SPC file or fio iolog exists in the shared traces: Financial1's head (as
/// SSDSim ships it) is written back in those formats, and must read back the same.
#[test]
fn spc_and_fio_from_financial1() {
    let Some(dir) = traces_dir() else { return };
    let source = dir.join("ssdsim_hust_financial1/example.ascii");
    let (recs, _, devices) = records(&source, &config("disksim"));
    let mut spc = String::new();
    let mut fio = String::from("fio version 3 iolog\n");
    for r in &recs {
        let op = if r.op == Op::Read { 'r' } else { 'w' };
        let asu = &devices[r.dev as usize];
        let t = r.time_ns as f64 / 1e9;
        spc += &format!(
            "{asu},{},{},{op},{t:.6}\n",
            r.offset_bytes / 512,
            r.len_bytes
        );
        let action = if r.op == Op::Read { "read" } else { "write" };
        fio += &format!(
            "{} asu{asu} {action} {} {}\n",
            r.time_ns / 1000,
            r.offset_bytes,
            r.len_bytes
        );
    }
    let spc_path = write_file("financial1.spc", spc.as_bytes());
    let (back, format, spc_devices) = records(&spc_path, &config("auto"));
    assert_eq!((format.as_str(), spc_devices), ("spc", devices.clone()));
    for (a, b) in recs.iter().zip(&back) {
        assert_eq!(
            (a.offset_bytes, a.len_bytes, a.op, a.dev),
            (b.offset_bytes, b.len_bytes, b.op, b.dev)
        );
        assert!(a.time_ns.abs_diff(b.time_ns) <= 500);
    }
    let fio_path = write_file("financial1.iolog", fio.as_bytes());
    let (back, format, _) = records(&fio_path, &config("auto"));
    assert_eq!((format.as_str(), back.len()), ("fio", recs.len()));
    assert!(recs.iter().zip(&back).all(|(a, b)| (
        a.offset_bytes,
        a.len_bytes,
        a.op,
        a.time_ns / 1000
    ) == (
        b.offset_bytes,
        b.len_bytes,
        b.op,
        b.time_ns / 1000
    )));
}

/// The original interface: requests as the trace states them.
#[test]
fn open_gives_the_raw_requests() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("ssdsim_hust_financial1/example.ascii");
    let reqs: Vec<Request> = trace::open(&path, "disksim", "ns")
        .unwrap()
        .collect::<ftlab_core::Result<_>>()
        .unwrap();
    let (recs, _, _) = records(&path, &config("disksim"));
    assert_eq!(reqs.len(), recs.len());
    for (q, r) in reqs.iter().zip(&recs) {
        assert_eq!(
            (q.time_ns, q.offset_bytes, q.len_bytes as u64, q.op),
            (r.time_ns, r.offset_bytes, r.len_bytes, r.op)
        );
    }
}

#[test]
fn xz_and_zstd_read_transparently() {
    let Some(dir) = traces_dir() else { return };
    let plain = dir.join("mqsim_umass_websearch_tpcc/tpcc-small.trace");
    let text = std::fs::read(&plain).unwrap();
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(&text).unwrap();
    let xz_path = write_file("tpcc.trace.xz", &xz.finish().unwrap());
    let zst_path = write_file("tpcc.trace.zst", &zstd::encode_all(&text[..], 1).unwrap());
    let (a, _, _) = records(&plain, &config("auto"));
    for path in [xz_path, zst_path] {
        let (b, format, _) = records(&path, &config("auto"));
        assert_eq!(format, "disksim");
        assert_eq!(a, b);
    }
}

fn load(opts: &RunOptions) -> Vec<Request> {
    api::load_requests(opts).unwrap_or_else(|e| panic!("{e}")).0
}

/// The optimistic replay (started without a scan, restarted when the trace needs one)
/// gives exactly the requests of a replay planned from a scan.
#[test]
fn optimistic_replay_equals_planned_replay() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("ssdsim_hust_financial1/example.ascii"); // 22 ASUs
    let opts = RunOptions {
        trace: Some(path.clone()),
        preset: Some("small".into()),
        ..RunOptions::default()
    };
    let optimistic = load(&opts);
    let mut cfg = api::resolve_config(&opts).unwrap();
    let scanned = scan(&path, &cfg.trace, 4096, &mut |_, _| true).unwrap();
    let plan = Plan::from_scan(&scanned, &mut cfg, false).unwrap();
    assert!(!plan.is_optimistic());
    let layout = cfg.validate().unwrap();
    let planned: Vec<Request> = Replay::open(&path, &cfg.trace, plan, 4096, layout.logical_pages)
        .unwrap()
        .collect::<ftlab_core::Result<_>>()
        .unwrap();
    assert_eq!(optimistic, planned);
    assert_eq!(planned.len(), 10_000);
}

/// A 4.6 TiB volume onto a small device: compaction keeps every request's pages
/// consecutive and its offset within the page, and runs verified.
#[test]
fn compaction_and_auto_sizing_on_a_huge_volume() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("snia_systor17_caffeine_sample/systor17-additional-sample.csv.gz");
    let (recs, _, _) = records(&path, &config("auto"));
    let opts = RunOptions {
        ftl: "page".into(),
        trace: Some(path.clone()),
        verify: true,
        sets: vec!["trace.order=\"clamp\"".into()],
        ..RunOptions::default()
    };
    let (reqs, cfg) = api::load_requests(&opts).unwrap();
    let layout = cfg.validate().unwrap();
    assert_eq!(reqs.len(), recs.len());
    let info = scan(&path, &cfg.trace, 4096, &mut |_, _| true)
        .unwrap()
        .info;
    assert!(info.max_end_bytes > 4 << 40);
    assert!(layout.logical_pages >= info.footprint_pages);
    // Fitted: the smallest device of this parallelism that holds the footprint with the
    // spare blocks GC needs (one block per plane less is too small, has fewer spare blocks
    // or breaks a geometry rule).
    let mut smaller = cfg.clone();
    smaller.geometry.blocks_per_plane -= 1;
    let spare = |bpp: u32| bpp as f64 * cfg.ftl.over_provisioning;
    assert!(spare(cfg.geometry.blocks_per_plane) >= FITTED_SPARE_BLOCKS);
    assert!(
        spare(smaller.geometry.blocks_per_plane) < FITTED_SPARE_BLOCKS
            || smaller
                .validate()
                .map_or(true, |l| l.logical_pages < info.footprint_pages)
    );
    for (r, q) in recs.iter().zip(&reqs) {
        assert_eq!(r.offset_bytes % 4096, q.offset_bytes % 4096);
        assert_eq!(r.len_bytes, q.len_bytes as u64);
        assert!(q.offset_bytes + q.len_bytes as u64 <= layout.logical_bytes());
    }
    let out = api::run(&opts, &mut |_| true).unwrap();
    let t = out.report.trace.unwrap();
    assert!(t.compacted && t.device_sized_to_trace);
    assert_eq!(t.footprint_pages, Some(info.footprint_pages));
    assert_eq!(out.report.metrics.host.requests, 999);
}

/// Systor rows are not in time order: sorted within the window, the replayed times never
/// go back and nothing is lost.
#[test]
fn unsorted_timestamps_are_sorted() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("snia_systor17_caffeine_sample/systor17-traces-sample.csv");
    let info = scan(&path, &TraceConfig::default(), 4096, &mut |_, _| true)
        .unwrap()
        .info;
    assert!(info.timestamp_inversions > 0);
    let opts = RunOptions {
        ftl: "page".into(),
        trace: Some(path.clone()),
        ..RunOptions::default()
    };
    let reqs = load(&opts);
    assert_eq!(reqs.len(), 999);
    assert!(reqs.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    assert_eq!(reqs[0].time_ns, 0);
    assert_eq!(
        reqs.last().unwrap().time_ns,
        info.max_time_ns - info.min_time_ns
    );
    let out = api::run(&opts, &mut |_| true).unwrap();
    let t = out.report.trace.unwrap();
    assert!(t.reordered > 0);
    assert_eq!(t.clamped, 0);
}

#[test]
fn device_filter_keeps_one_volume() {
    let Some(dir) = traces_dir() else { return };
    let path = dir.join("tencent_cbs_caffeine_sample/cloud_storage-sample");
    let expected = count_lines(&path, true, |f| (f[4] == "1063").then_some(f[3] == "0"));
    let opts = RunOptions {
        ftl: "page".into(),
        trace: Some(path.clone()),
        verify: true,
        sets: vec!["trace.devices=[\"1063\"]".into()],
        ..RunOptions::default()
    };
    let out = api::run(&opts, &mut |_| true).unwrap();
    let host = &out.report.metrics.host;
    assert_eq!(
        (host.requests as usize, host.read_requests as usize),
        expected
    );
    assert_eq!(out.report.trace.unwrap().devices, ["1063"]);
    let opts = RunOptions {
        sets: vec!["trace.devices=[\"1063\", \"nope\"]".into()],
        ..opts
    };
    let err = api::run(&opts, &mut |_| true).err().unwrap().to_string();
    assert!(
        err.contains("trace.devices") && err.contains("nope"),
        "{err}"
    );
}

/// Every real trace replays with verification on a device fitted to it, with GC active
/// on the write-heavy ones.
#[test]
fn every_real_trace_replays_verified() {
    let Some(dir) = traces_dir() else { return };
    for (file, extra) in [
        (
            "msr_cambridge_caffeine_sample/msr-cambridge1-sample.csv",
            vec![],
        ),
        (
            "tencent_cbs_caffeine_sample/cloud_storage-sample.bz2",
            vec![],
        ),
        ("cloudphysics_libCacheSim/cloudPhysicsIO.vscsi", vec![]),
        ("mqsim_umass_websearch_tpcc/wsrch-small.trace", vec![]),
        (
            "fiu_mail_excerpt/DERIVED_cheetah.cs.fiu.edu-110108-113008.1.head10000.blkparse",
            vec![],
        ),
        (
            "apress_blktrace_hdd/blktrace.txt",
            vec!["trace.blkparse_event=\"Q\"".to_string()],
        ),
        ("wiscsee_blkparse/blkparse-output.txt", vec![]),
        ("fiu_mail_excerpt/smalltrace.csv", vec![]),
        (
            "wiscsee_blkparse/sqlitewal-update/blkparse-events-for-ftlsim.txt",
            vec![],
        ),
        (
            "disksim_hpl_validation/ascii.trace",
            vec!["trace.time_unit=\"ms\"".to_string()],
        ),
    ] {
        let opts = RunOptions {
            ftl: "page".into(),
            trace: Some(dir.join(file)),
            verify: true,
            sets: [extra, vec!["replay.timing=false".into()]].concat(),
            ..RunOptions::default()
        };
        let out = api::run(&opts, &mut |_| true).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(out.report.metrics.host.requests > 0, "{file}");
    }
    // The write-heavy CloudPhysics trace fills its fitted device: GC runs.
    let opts = RunOptions {
        ftl: "page".into(),
        trace: Some(dir.join("cloudphysics_libCacheSim/cloudPhysicsIO.vscsi")),
        verify: true,
        ..RunOptions::default()
    };
    let out = api::run(&opts, &mut |_| true).unwrap();
    assert!(out.report.metrics.gc.invocations > 0);
}

/// Unaligned and multi-page requests touch every page they overlap, compacted or not:
/// bytes 512..5632 are pages 0 and 1 (both partial); 8192..20480 pages 2..4 (whole).
#[test]
fn unaligned_requests_split_into_pages_with_and_without_compaction() {
    let text = b"0 0 1 10 0\n1 0 16 24 0\n2 0 1 10 1\n3 5 1099511627 40 0\n";
    // The last request: another device far away (about 512 GiB).
    let path = write_file("unaligned.trace", text);
    for (compact, fit) in [("always", "fit"), ("auto", "fit"), ("never", "config")] {
        let opts = RunOptions {
            ftl: "page".into(),
            trace: Some(path.clone()),
            verify: true,
            sets: vec![
                format!("trace.compact=\"{compact}\""),
                format!("trace.device_size=\"{fit}\""),
                "trace.device_layout=\"merged\"".into(),
                "trace.devices=[\"0\"]".into(),
            ],
            ..RunOptions::default()
        };
        let out = api::run(&opts, &mut |_| true).unwrap_or_else(|e| panic!("{compact}: {e}"));
        let host = &out.report.metrics.host;
        assert_eq!(host.requests, 3, "{compact}");
        assert_eq!(host.pages_written, 2 + 3, "{compact}");
        assert_eq!(host.partial_page_writes, 2, "{compact}");
        assert_eq!(host.pages_read, 2, "{compact}");
    }
}
