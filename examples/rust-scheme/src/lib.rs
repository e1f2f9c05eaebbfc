//! Template: an ftlab FTL scheme in its own crate.
//!
//! `rustpage` is a page-level FTL: the whole map in DRAM, pages from ftlab's page
//! allocator (garbage collection inside ftlab, in idle time when the run's `gc.mode` is
//! `background`), written only against `ftlab-scheme`. Copy this folder, rename the crate
//! and the scheme, and `pip install .` builds a wheel whose import registers the scheme
//! with the installed ftlab (`python/ftlab_rust_scheme/__init__.py`, the entry point in
//! `pyproject.toml`).

use ftlab_scheme::{export_scheme, Cause, Device, Flash, Memory, PageAllocator, Result, Scheme};

pub struct RustPage {
    map: Vec<u32>,
    alloc: PageAllocator,
    entry_bytes: u64,
}

impl RustPage {
    fn follow_moves(&mut self) {
        for m in self.alloc.take_moves() {
            self.map[m.lpa as usize] = m.to;
        }
    }
}

impl Scheme for RustPage {
    const NAME: &'static std::ffi::CStr = c"rustpage";
    const DESCRIPTION: &'static std::ffi::CStr =
        c"page-level FTL in its own Rust crate (template of ftlab-scheme)";
    const FAMILY: &'static std::ffi::CStr = c"page";

    fn new(device: &Device, _section: &str) -> std::result::Result<Self, String> {
        let g = device.geometry;
        Ok(RustPage {
            map: vec![ftlab_scheme::NONE; g.logical_pages as usize],
            alloc: device.page_allocator(),
            entry_bytes: g.entry_bytes as u64,
        })
    }

    #[inline]
    fn read(&mut self, lpa: u32, _flash: &mut Flash) -> Result<Option<u32>> {
        let ppn = self.map[lpa as usize];
        Ok((ppn != ftlab_scheme::NONE).then_some(ppn))
    }

    #[inline]
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        self.trim(lpa, flash)?; // invalidate first, so that GC sees the stale copy
        let ppn = self.alloc.host_page(flash)?;
        flash.program(ppn, lpa, seq, Cause::Host)?;
        self.map[lpa as usize] = ppn;
        self.follow_moves();
        Ok(())
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let old = std::mem::replace(&mut self.map[lpa as usize], ftlab_scheme::NONE);
        if old != ftlab_scheme::NONE {
            flash.invalidate(old)?;
        }
        Ok(())
    }

    fn idle(&mut self, flash: &mut Flash) -> Result<()> {
        self.alloc.idle_gc(flash)?;
        self.follow_moves();
        Ok(())
    }

    fn has_idle_work(&mut self) -> bool {
        self.alloc.has_idle_work()
    }

    fn background_gc(&self) -> bool {
        self.alloc.background_gc()
    }

    fn memory(&self, out: &mut Memory) {
        out.add(c"l2p", self.map.len() as u64 * self.entry_bytes);
        self.alloc.memory(out);
    }

    fn recover(&mut self, live: &[u32], flash: &mut Flash) -> Result<()> {
        self.map.copy_from_slice(live);
        self.alloc.recover(flash)
    }
}

export_scheme!(RustPage);

/// The Python module of the wheel: the address ftlab registers the scheme from.
#[cfg(feature = "python")]
#[pyo3::pymodule]
fn _native(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    use pyo3::types::PyModuleMethods;
    m.add("SCHEME_API", ftlab_scheme_api() as usize)
}
