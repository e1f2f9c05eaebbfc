//! The host-stack layer (requests tagged by origin, file-system-level against device-level
//! WAF) and the stateful device API (submit, read back what was served, flush).

use crate::common;

use common::{erased, read, small_config, trim, write};
use ftlab_core::controller::simulator::Simulator;
use ftlab_core::device::nand::{Cause, Flash};
use ftlab_core::ftl::{self, is_append_only, Ftl, Visitor, SCHEMES};
use ftlab_core::host::{HostStack, Origin, PassThrough, Stacked};
use ftlab_core::rng::Rng;
use ftlab_core::run::block_device;
use ftlab_core::run::config::{Config, Layout, PreconditionMode};
use ftlab_core::run::report::{Report, SourceInfo};
use ftlab_core::{Op, Request, Result};

fn device_config() -> Config {
    let mut cfg = small_config((2, 1, 1, 2), 32, 16, 0.25);
    cfg.precondition.mode = PreconditionMode::None;
    cfg.precondition.warmup = false;
    cfg
}

/// A journaling stack: every application write is followed by a one-page metadata write
/// to the last logical page, and every third by a cleaning rewrite of the page before it.
struct Journal {
    last_page: u64,
    page: u32,
    writes: u64,
}

impl HostStack for Journal {
    fn transform(&mut self, req: &Request, out: &mut Vec<(Request, Origin)>) -> Result<()> {
        out.push((*req, Origin::Application));
        if req.op == Op::Write {
            self.writes += 1;
            let meta = write(self.last_page, 1, self.page);
            out.push((
                Request {
                    time_ns: req.time_ns,
                    ..meta
                },
                Origin::FsMetadata,
            ));
            if self.writes.is_multiple_of(3) && req.offset_bytes >= self.page as u64 {
                let page = req.offset_bytes / self.page as u64 - 1;
                let clean = write(page, 1, self.page);
                out.push((
                    Request {
                        time_ns: req.time_ns,
                        ..clean
                    },
                    Origin::HostCleaning,
                ));
            }
        }
        Ok(())
    }
}

struct RunStacked<'a, S: HostStack> {
    cfg: &'a Config,
    layout: &'a Layout,
    stack: S,
    requests: &'a [Request],
}

impl<S: HostStack> Visitor for RunStacked<'_, S> {
    type Output = Result<Report>;
    fn visit<F: Ftl>(self, ftl: F, flash: Flash) -> Result<Report> {
        let sim = Simulator::new(
            &self.cfg.controller(),
            self.layout,
            erased(ftl),
            flash,
            true,
        );
        let mut host = Stacked::new(self.stack, sim);
        for r in self.requests {
            host.submit(r)?;
        }
        host.sim.check_all()?;
        let source = SourceInfo {
            kind: "test".into(),
            name: "test".into(),
            format: String::new(),
        };
        Ok(Report::new("page", source, self.cfg, host.sim.finish()?))
    }
}

fn run_stacked<S: HostStack>(cfg: &Config, stack: S, requests: &[Request]) -> Report {
    let layout = cfg.validate().unwrap();
    let visitor = RunStacked {
        cfg,
        layout: &layout,
        stack,
        requests,
    };
    ftl::build("page", &cfg.scheme_context(), &layout, visitor)
        .unwrap()
        .unwrap()
}

fn random_requests(cfg: &Config, n: usize, seed: u64) -> Vec<Request> {
    let layout = cfg.validate().unwrap();
    let page = layout.page_size;
    // The last logical page is the journal's.
    let pages = layout.logical_pages - 1;
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| {
            let len = 1 + rng.below(4) as u32;
            let lpa = rng.below(pages - len as u64);
            let r = match rng.below(10) {
                0..=5 => write(lpa, len, page),
                6..=8 => read(lpa, len, page),
                _ => trim(lpa, len, page),
            };
            Request {
                time_ns: i as u64 * 200_000,
                ..r
            }
        })
        .collect()
}

#[test]
fn pass_through_stack_changes_nothing() {
    let cfg = device_config();
    let reqs = random_requests(&cfg, 3000, 1);
    let stacked = run_stacked(&cfg, PassThrough, &reqs);
    let plain = common::run("page", &cfg, &reqs, true).unwrap();
    // The same run: only the source name differs.
    assert_eq!(
        serde_json::to_value(&stacked.metrics).unwrap(),
        serde_json::to_value(&plain.metrics).unwrap()
    );
    assert_eq!(stacked.metrics.fs_waf, Some(1.0));
    assert_eq!(stacked.metrics.host.stack_requests, 0);
}

#[test]
fn stack_requests_are_tagged_and_fs_waf_is_reported_apart() {
    let mut cfg = device_config();
    cfg.buffer.size_bytes = 0;
    let layout = cfg.validate().unwrap();
    let reqs = random_requests(&cfg, 3000, 2);
    let journal = Journal {
        last_page: layout.logical_pages - 1,
        page: layout.page_size,
        writes: 0,
    };
    let report = run_stacked(&cfg, journal, &reqs);
    let m = &report.metrics;
    let app_writes = reqs.iter().filter(|r| r.op == Op::Write).count() as u64;
    let app_pages: u64 = reqs
        .iter()
        .filter(|r| r.op == Op::Write)
        .map(|r| (r.len_bytes / layout.page_size) as u64)
        .sum();
    let cleaning = reqs
        .iter()
        .filter(|r| r.op == Op::Write)
        .enumerate()
        .filter(|(i, r)| (i + 1) % 3 == 0 && r.offset_bytes >= layout.page_size as u64)
        .count() as u64;
    assert_eq!(m.host.stack_requests, app_writes + cleaning);
    assert_eq!(m.host.stack_pages_written, app_writes + cleaning);
    assert_eq!(m.host.pages_written, app_pages + app_writes + cleaning);
    let fs_waf = m.host.pages_written as f64 / app_pages as f64;
    assert_eq!(m.fs_waf, Some(fs_waf));
    assert!(fs_waf > 1.2, "{fs_waf}");
    // Without a write buffer every stack page is programmed under its own cause.
    let programs = &m.flash.programs;
    assert_eq!(programs[Cause::FsMetadata], app_writes);
    assert_eq!(programs[Cause::HostCleaning], cleaning);
    assert_eq!(programs[Cause::Host], app_pages);
    // Device-level WAF counts every page the device was given.
    let total = programs.total;
    assert_eq!(m.waf, Some(total as f64 / m.host.pages_written as f64));
}

/// Drives a device like a block-device front: a model of what each page holds, checked
/// against what every read served.
fn exercise(scheme: &str, cfg: &Config, seed: u64) {
    let mut dev = block_device::open(scheme, cfg, true).unwrap();
    let layout = *dev.layout();
    let page = layout.page_size;
    let pages = layout.logical_pages;
    let mut model: Vec<Option<u64>> = vec![None; pages as usize];
    let mut rng = Rng::new(seed);
    let mut last_done = 0;
    for i in 0..4000u64 {
        let len = 1 + rng.below(8) as u32;
        let lpa = rng.below(pages - len as u64);
        let kind = rng.below(10);
        let req = Request {
            time_ns: i * 100_000,
            ..match kind {
                0..=4 => write(lpa, len, page),
                5..=8 => read(lpa, len, page),
                _ => trim(lpa, len, page),
            }
        };
        let done = dev.submit(&req).unwrap();
        assert!(done.done_ns >= req.time_ns, "{scheme}");
        last_done = last_done.max(done.done_ns);
        let range = lpa as usize..(lpa + len as u64) as usize;
        match req.op {
            Op::Write => {
                assert!(done.first_seq > 0, "{scheme}");
                for (k, p) in range.enumerate() {
                    model[p] = Some(done.first_seq + k as u64);
                }
            }
            Op::Read => assert_eq!(dev.served(), &model[range], "{scheme} request {i}"),
            Op::Trim => model[range].fill(None),
        }
        if i % 1000 == 999 {
            dev.flush().unwrap();
        }
    }
    let report = dev.finish().unwrap();
    assert_eq!(report.metrics.host.requests, 4000);
    assert_eq!(report.source.kind, "device");
    assert!(last_done > 0);
    assert!(report.metrics.simulated_time_ns.unwrap() > 0);
}

#[test]
fn every_scheme_serves_a_device_front() {
    // An append-only device refuses the random overwrites (tests/aftl.rs has its own).
    for (scheme, _) in SCHEMES.iter().filter(|(s, _)| !is_append_only(s)) {
        let mut cfg = device_config();
        cfg.buffer.size_bytes = 8 * 4096;
        if *scheme == "leaftl" || *scheme == "slimftl" || *scheme == "hpftl" {
            // Map-on-flash and hash schemes want more spare space.
            cfg.ftl.over_provisioning = 0.4;
        }
        exercise(scheme, &cfg, 7);
    }
}

#[test]
fn a_device_is_preconditioned_when_configured() {
    let mut cfg = device_config();
    cfg.precondition.mode = PreconditionMode::Fill;
    let mut dev = block_device::open("page", &cfg, true).unwrap();
    let page = dev.layout().page_size;
    dev.submit(&read(0, 4, page)).unwrap();
    assert!(
        dev.served().iter().all(|s| s.is_some()),
        "{:?}",
        dev.served()
    );
    let w = dev.submit(&write(2, 1, page)).unwrap();
    dev.submit(&read(2, 1, page)).unwrap();
    assert_eq!(dev.served(), &[Some(w.first_seq)]);
}
