//! Verification mode must catch an FTL that serves the wrong data.

use crate::common;

use common::*;
use ftlab_core::controller::simulator::Simulator;
use ftlab_core::device::nand::{Flash, Oob};
use ftlab_core::ftl::page::PageFtl;
use ftlab_core::ftl::{Ftl, MemoryBreakdown, Scheme};
use ftlab_core::{Error, Request, Result};

/// A page FTL that silently drops every tenth write.
struct LosesWrites {
    inner: PageFtl,
    writes: u64,
}

impl Ftl for LosesWrites {
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        self.inner.read(lpa, flash)
    }
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        self.writes += 1;
        if self.writes.is_multiple_of(10) {
            return Ok(());
        }
        self.inner.write(lpa, seq, flash)
    }
    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        self.inner.trim(lpa, flash)
    }
    fn memory(&self, out: &mut MemoryBreakdown) {
        self.inner.memory(out)
    }
}

fn simulate(verify: bool, buffer_pages: u64) -> Result<()> {
    let mut cfg = small_config((1, 1, 2, 1), 16, 16, 0.3);
    cfg.buffer.size_bytes = buffer_pages * 4096;
    let layout = cfg.validate().unwrap();
    let flash = Flash::new(&cfg.device(), &layout, 0, true)?;
    let ftl = LosesWrites {
        inner: PageFtl::new(&cfg.scheme_context(), &layout)?,
        writes: 0,
    };
    let mut sim = Simulator::new(&cfg.controller(), &layout, ftl, flash, verify);
    let page = layout.page_size;
    let mut reqs: Vec<Request> = (0..40).map(|p| write(p, 1, page)).collect();
    reqs.extend((0..40).map(|p| write(p, 1, page)));
    reqs.extend((0..40).map(|p| read(p, 1, page)));
    for r in &reqs {
        sim.submit(r)?;
    }
    Ok(())
}

#[test]
fn a_lost_write_is_caught_and_named() {
    let err = simulate(true, 0).unwrap_err();
    let Error::Verify {
        request,
        lpa,
        expected,
        served,
    } = &err
    else {
        panic!("expected a verification error, got {err}");
    };
    // The 10th write (page 9) was dropped: the first read that meets it is request 81 + 9.
    assert_eq!((*request, *lpa), (90, 9));
    assert_eq!(expected, "host write #50");
    // Its rewrite (write #50) was the 50th write and was dropped too.
    assert_eq!(served, "nothing (unmapped)");
    assert!(err.to_string().contains("request #90"));
}

#[test]
fn without_verification_the_same_bug_goes_unnoticed() {
    assert!(simulate(false, 0).is_ok());
}

#[test]
fn lost_writes_behind_the_buffer_are_caught_too() {
    // A 4-page buffer flushes one page at a time; the dropped flush shows on a later read.
    assert!(matches!(simulate(true, 4), Err(Error::Verify { .. })));
}
