//! Media faults (`[faults]`, the shared page allocator's): factory bad blocks are never
//! programmed, every scheme on the allocator survives program and erase failures at a high
//! rate with every page readable (no acknowledged write lost), runs repeat for a seed, a
//! device that runs out of good blocks says so, and the schemes that place their pages
//! themselves are refused.

use crate::common;

use common::*;
use ftlab_core::device::nand::{Cause, Flash, NandError, Oob};
use ftlab_core::error::Error;
use ftlab_core::rng::Rng;
use ftlab_core::run::config::Config;
use ftlab_core::Request;

/// The schemes whose blocks the shared page allocator hands out.
const ON_THE_ALLOCATOR: [&str; 6] = ["page", "dftl", "sftl", "tpftl", "selective", "leaftl"];

/// 4 units of 64 blocks of 16 pages, 30% over-provisioning (16 spare blocks per unit).
fn device() -> Config {
    small_config((2, 1, 2, 1), 64, 16, 0.3)
}

/// A fill of the logical space, then twice as many random page writes (a hot quarter
/// taking most), a read after every fourth.
fn overwrites(logical_pages: u64, page: u32) -> Vec<Request> {
    let mut rng = Rng::new(36);
    let mut reqs: Vec<Request> = (0..logical_pages).map(|p| write(p, 1, page)).collect();
    for i in 0..2 * logical_pages {
        let lpa = if rng.below(4) > 0 {
            rng.below(logical_pages / 4)
        } else {
            rng.below(logical_pages)
        };
        reqs.push(write(lpa, 1, page));
        if i % 4 == 3 {
            reqs.push(read(rng.below(logical_pages), 1, page));
        }
    }
    reqs
}

/// Each kind of fault alone, at a rate that makes it frequent on this device.
fn each_kind() -> [(&'static str, Config); 3] {
    let mut factory = device();
    factory.faults.factory_bad_fraction = 0.1;
    let mut program = device();
    program.faults.program_failure_rate = 0.002;
    let mut erase = device();
    erase.faults.erase_failure_rate = 0.02;
    [("factory", factory), ("program", program), ("erase", erase)]
}

#[test]
fn every_scheme_survives_each_fault_kind_with_every_page_readable() {
    for (kind, cfg) in each_kind() {
        let layout = cfg.validate().unwrap();
        let reqs = overwrites(layout.logical_pages, layout.page_size);
        for scheme in ON_THE_ALLOCATOR {
            // Every read verified, and every logical page read back at the end.
            let report =
                run(scheme, &cfg, &reqs, true).unwrap_or_else(|e| panic!("{kind} {scheme}: {e}"));
            let f = report.metrics.faults.as_ref().expect("faults are on");
            let ops = &report.metrics.flash;
            match kind {
                "factory" => {
                    // 7 of the 64 blocks of each of the 4 units.
                    assert_eq!(f.factory_bad_blocks, 28, "{scheme}");
                    assert_eq!(f.retired_blocks, 28, "{scheme}");
                    assert_eq!(ops.programs[Cause::Retire], 0, "{scheme}");
                }
                "program" => {
                    assert!(f.program_failures >= 5, "{scheme}: {f:?}");
                    assert!(f.pages_rewritten > 0, "{scheme}: {f:?}");
                    assert_eq!(f.retired_blocks, f.program_failures, "{scheme}");
                    // The failed programs and the re-written pages, each read first.
                    assert_eq!(
                        ops.programs[Cause::Retire],
                        f.program_failures + f.pages_rewritten,
                        "{scheme}"
                    );
                    assert_eq!(ops.reads[Cause::Retire], f.pages_rewritten, "{scheme}");
                    assert!(f.waf_added.unwrap() > 0.0, "{scheme}");
                }
                _ => {
                    assert!(f.erase_failures >= 5, "{scheme}: {f:?}");
                    assert_eq!(f.retired_blocks, f.erase_failures, "{scheme}");
                    assert_eq!(ops.programs[Cause::Retire], 0, "{scheme}");
                }
            }
        }
    }
}

#[test]
fn a_factory_bad_block_is_never_programmed_or_erased() {
    let mut cfg = device();
    cfg.faults.factory_bad_fraction = 0.05;
    let layout = cfg.validate().unwrap();
    let bad = cfg.faults.factory_bad_blocks(&layout);
    // 4 of the 64 blocks of each unit, each unit's own.
    assert_eq!(bad.len(), 16);
    for unit in 0..layout.units {
        let on_unit = bad.iter().filter(|&&b| layout.unit_of_block(b) == unit);
        assert_eq!(on_unit.count(), 4);
    }
    let mut flash = Flash::new(&cfg.device(), &layout, 0, false).unwrap();
    assert_eq!(flash.retired_blocks(), 16);
    for b in 0..layout.total_blocks {
        assert_eq!(flash.is_retired(b), bad.contains(&b), "block {b}");
    }
    let block = bad[0];
    let oob = Oob { lpa: 0, seq: 1 };
    let refused = Error::Nand(NandError::RetiredBlock { block });
    let ppn = flash.first_page(block);
    assert_eq!(
        flash
            .program(ppn, oob, &[], Cause::Host)
            .map_err(Error::Nand),
        Err(refused.clone())
    );
    assert_eq!(
        flash.erase(block, Cause::Gc).map_err(Error::Nand),
        Err(refused)
    );
    // A good block takes the same program.
    let good = (0..layout.total_blocks).find(|b| !bad.contains(b)).unwrap();
    flash
        .program(flash.first_page(good), oob, &[], Cause::Host)
        .unwrap();
    // A block holding valid data cannot be retired (its data would be lost).
    assert_eq!(
        flash.retire(good),
        Err(NandError::RetireWithValidPages {
            block: good,
            valid: 1
        })
    );
}

#[test]
fn faults_repeat_for_a_seed_and_change_with_it() {
    let mut cfg = device();
    cfg.faults.factory_bad_fraction = 0.05;
    cfg.faults.program_failure_rate = 0.001;
    cfg.faults.erase_failure_rate = 0.01;
    let layout = cfg.validate().unwrap();
    let reqs = overwrites(layout.logical_pages, layout.page_size);
    let json = |cfg: &Config| run("page", cfg, &reqs, false).unwrap().to_json();
    assert_eq!(json(&cfg), json(&cfg));
    let mut other = cfg.clone();
    other.faults.seed = 2;
    let faults = |cfg: &Config| {
        let f = run("page", cfg, &reqs, false)
            .unwrap()
            .metrics
            .faults
            .unwrap();
        (f.program_failures, f.erase_failures, f.pages_rewritten)
    };
    assert_ne!(faults(&cfg), faults(&other));
}

#[test]
fn a_device_out_of_good_blocks_is_worn_out_not_a_crash() {
    let mut cfg = device();
    cfg.faults.erase_failure_rate = 0.5;
    let layout = cfg.validate().unwrap();
    let reqs = overwrites(layout.logical_pages, layout.page_size);
    for scheme in ["page", "dftl"] {
        let e = run(scheme, &cfg, &reqs, false).unwrap_err();
        assert!(
            matches!(e, Error::DeviceFull { .. }) && e.to_string().contains("worn out"),
            "{scheme}: {e}"
        );
    }
}

#[test]
fn schemes_that_place_their_pages_themselves_are_refused() {
    let mut cfg = device();
    cfg.faults.program_failure_rate = 0.001;
    let layout = cfg.validate().unwrap();
    let reqs = [write(0, 1, layout.page_size)];
    for scheme in ["bast", "fast", "kast", "hpftl", "slimftl", "fdp"] {
        let e = run(scheme, &cfg, &reqs, false).unwrap_err().to_string();
        assert!(
            e.contains("faults.program_failure_rate") && e.contains(scheme),
            "{scheme}: {e}"
        );
    }
}

#[test]
fn faults_and_the_slc_cache_are_refused_together() {
    let mut cfg = device();
    cfg.faults.erase_failure_rate = 0.001;
    cfg.slc.static_fraction = 0.02;
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("faults.erase_failure_rate"), "{e}");
}
