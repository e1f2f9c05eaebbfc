//! Schemes written in Python: the bridge between `ftlab.Scheme` subclasses and the core's
//! [`Ftl`] trait, through the core's external-scheme registry ([`ftl::external`]).
//!
//! A Python scheme sees the simulated flash through a [`FlashHandle`], valid only during
//! the call that receives it (the core lends its `&mut Flash` for the call's duration), so
//! every operation goes through the same [`Flash`] as a built-in scheme's: the same NAND
//! rules, timing and cause accounting. A read returns the physical page to read, not the
//! data: the bridge reads it, so that `--verify` checks what the flash holds, not what the
//! scheme says. The kit's page allocator ([`PageAllocator`], with its GC) is offered to
//! Python so that a scheme need not write allocation and garbage collection again.

use crate::to_py;
use ftlab_core::device::geometry::Layout;
use ftlab_core::device::nand::{Cause, Flash, Oob, Ppn, NONE};
use ftlab_core::ftl::external::{self, intern_name, ExternalScheme};
use ftlab_core::ftl::kit::alloc::{self, PageAllocator as CoreAllocator};
use ftlab_core::ftl::kit::translation::TranslationStore as CoreStore;
use ftlab_core::ftl::settings::SchemeContext;
use ftlab_core::ftl::{Ftl, MemoryBreakdown};
use ftlab_core::{Error, Result};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;
use std::sync::Mutex;

/// The simulated flash, lent to a Python scheme for the duration of one call. (A scheme may
/// be built on one thread and driven from another, as `ftlab serve` does: the handle is
/// `Send`, and the GIL orders the calls.)
#[pyclass(module = "ftlab._core")]
pub struct FlashHandle {
    flash: AtomicPtr<Flash>,
    /// The core error behind the last exception an operation raised: returned as itself
    /// (a NAND rule violation stays one) if the scheme lets the exception through.
    error: Mutex<Option<Error>>,
}

impl FlashHandle {
    fn new() -> Self {
        FlashHandle {
            flash: AtomicPtr::new(std::ptr::null_mut()),
            error: Mutex::new(None),
        }
    }

    fn lend(&self, flash: *mut Flash) {
        self.flash.store(flash, Ordering::Release);
    }

    fn take_error(&self) -> Option<Error> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    #[allow(clippy::mut_from_ref)]
    fn flash(&self) -> PyResult<&mut Flash> {
        let ptr = self.flash.load(Ordering::Acquire);
        if ptr.is_null() {
            return Err(PyRuntimeError::new_err(
                "the flash handle is only valid during the call that received it",
            ));
        }
        // SAFETY: the pointer is set from the `&mut Flash` the core lends to the scheme
        // call in progress ([`PyScheme::call`]) and cleared when it returns; the caller
        // does not touch the flash meanwhile, and the GIL, held for the whole call, keeps
        // any other thread from using the handle.
        Ok(unsafe { &mut *ptr })
    }

    /// A core error as a Python exception, the error kept for the bridge.
    fn raise(&self, e: impl Into<Error>) -> PyErr {
        let e = e.into();
        let py_err = to_py(e.clone());
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
        py_err
    }
}

fn cause(name: &str) -> PyResult<Cause> {
    Cause::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = ftlab_core::device::nand::CAUSES
            .iter()
            .map(|c| c.name())
            .collect();
        PyValueError::new_err(format!(
            "unknown cause `{name}`; the causes are: {}",
            names.join(", ")
        ))
    })
}

#[pymethods]
impl FlashHandle {
    /// Programs erased page `ppn` with logical page `lpa`'s data of write `seq`.
    #[pyo3(signature = (ppn, lpa, seq, cause="host"))]
    fn program(&self, ppn: Ppn, lpa: u32, seq: u64, cause: &str) -> PyResult<()> {
        let cause = self::cause(cause)?;
        self.flash()?
            .program(ppn, Oob { lpa, seq }, &[], cause)
            .map_err(|e| self.raise(e))
    }

    /// Reads page `ppn` (a flash read of that cause); returns its OOB `(lpa, seq)`.
    #[pyo3(signature = (ppn, cause="host"))]
    fn read(&self, ppn: Ppn, cause: &str) -> PyResult<(u32, u64)> {
        let cause = self::cause(cause)?;
        let oob = self.flash()?.read(ppn, cause).map_err(|e| self.raise(e))?;
        Ok((oob.lpa, oob.seq))
    }

    /// Marks page `ppn` invalid (its data superseded).
    fn invalidate(&self, ppn: Ppn) -> PyResult<()> {
        self.flash()?.invalidate(ppn).map_err(|e| self.raise(e))
    }

    /// Erases `block`.
    #[pyo3(signature = (block, cause="gc"))]
    fn erase(&self, block: u32, cause: &str) -> PyResult<()> {
        let cause = self::cause(cause)?;
        self.flash()?.erase(block, cause).map_err(|e| self.raise(e))
    }

    fn is_valid(&self, ppn: Ppn) -> PyResult<bool> {
        Ok(self.flash()?.is_valid(ppn))
    }

    fn valid_count(&self, block: u32) -> PyResult<u32> {
        Ok(self.flash()?.valid_count(block))
    }

    /// The valid pages of `block`, in page order.
    fn valid_pages(&self, block: u32) -> PyResult<Vec<Ppn>> {
        Ok(self.flash()?.valid_pages(block).collect())
    }

    /// Pages programmed in `block` (the next page to program, in sequential order).
    fn write_pointer(&self, block: u32) -> PyResult<u32> {
        Ok(self.flash()?.write_pointer(block))
    }

    fn is_erased(&self, block: u32) -> PyResult<bool> {
        Ok(self.flash()?.is_erased(block))
    }

    fn erase_count(&self, block: u32) -> PyResult<u32> {
        Ok(self.flash()?.erase_count(block))
    }

    fn block_of(&self, ppn: Ppn) -> PyResult<u32> {
        Ok(self.flash()?.block_of(ppn))
    }

    fn first_page(&self, block: u32) -> PyResult<Ppn> {
        Ok(self.flash()?.first_page(block))
    }
}

/// The device a Python scheme is built for: its geometry, and the kit's mechanisms
/// configured for the run.
#[pyclass(frozen, module = "ftlab._core")]
pub struct Device {
    cfg: SchemeContext,
    layout: Layout,
}

#[pymethods]
impl Device {
    #[getter]
    fn logical_pages(&self) -> u64 {
        self.layout.logical_pages
    }
    #[getter]
    fn physical_pages(&self) -> u64 {
        self.layout.physical_pages
    }
    #[getter]
    fn pages_per_block(&self) -> u32 {
        self.layout.pages_per_block
    }
    #[getter]
    fn blocks(&self) -> u32 {
        self.layout.total_blocks
    }
    /// Parallel units (planes), each with its own blocks.
    #[getter]
    fn units(&self) -> u32 {
        self.layout.units
    }
    #[getter]
    fn page_size(&self) -> u32 {
        self.layout.page_size
    }
    /// Bytes of one physical page address in a DRAM table (what a page-level table entry
    /// costs on this device).
    #[getter]
    fn entry_bytes(&self) -> u64 {
        self.layout.ppa_entry_bytes()
    }
    /// The `[gc]` soft and hard thresholds in free blocks per unit.
    fn gc_thresholds(&self) -> (usize, usize) {
        alloc::gc_thresholds(&self.cfg, &self.layout)
    }

    /// The kit's page allocator for this run: host pages striped over the parallel units,
    /// GC by the run's `[gc]` settings (greedy or cost-benefit victims, background or
    /// foreground), the pages it moves reported by `take_moves`.
    fn page_allocator(&self) -> PageAllocator {
        PageAllocator {
            inner: Kit::new(
                CoreAllocator::new(&self.cfg, &self.layout, false),
                "page allocator",
            ),
        }
    }

    /// The kit's translation-page store for a scheme that keeps its map on flash: `pages`
    /// translation pages in their own blocks, located by a directory in DRAM, and the
    /// data pages, garbage-collected together (fails, naming `ftl.over_provisioning`, if
    /// the spare area cannot hold them).
    fn translation_store(&self, pages: u32) -> PyResult<TranslationStore> {
        let store = CoreStore::new(&self.cfg, &self.layout, pages).map_err(to_py)?;
        Ok(TranslationStore {
            inner: Kit::new(store, "translation store"),
        })
    }
}

/// The kit's translation-page store ([`CoreStore`]): `read(k)` and `write(k)` of
/// translation pages under the `translation` cause, data pages from `data_page`, GC moves
/// of data pages reported as for the page allocator.
#[pyclass(module = "ftlab._core")]
pub struct TranslationStore {
    inner: Kit<CoreStore>,
}

#[pymethods]
impl TranslationStore {
    /// Reads translation page `k` (one flash read); False, reading nothing, if it was
    /// never written.
    fn read(&self, k: u32, flash: &FlashHandle) -> PyResult<bool> {
        self.inner.with(flash, |s, f| s.read(k, f))
    }

    /// Writes a new version of translation page `k` (the old one invalidated).
    fn write(&self, k: u32, flash: &FlashHandle) -> PyResult<()> {
        self.inner.with(flash, |s, f| s.write(k, f, |_| {}))
    }

    /// The next free page for a host data write.
    fn data_page(&self, flash: &FlashHandle) -> PyResult<Ppn> {
        self.inner.with(flash, |s, f| s.data_page(f))
    }

    fn has_moves(&self) -> bool {
        self.inner.lock().has_moves()
    }

    /// Data pages GC moved since the last call: `(lpa, new ppn)` pairs.
    fn take_moves(&self) -> Vec<(u32, Ppn)> {
        move_pairs(&mut self.inner.lock().alloc)
    }

    /// Background GC in idle time (with `gc.mode = "background"`).
    fn idle_gc(&self, flash: &FlashHandle) -> PyResult<()> {
        self.inner.with(flash, |s, f| s.idle_gc(f))
    }

    fn has_idle_work(&self) -> bool {
        self.inner.lock().alloc.has_idle_work()
    }

    fn background_gc(&self) -> bool {
        self.inner.lock().alloc.background_gc()
    }

    /// The directory's and GC bookkeeping's DRAM: `{name: bytes}`.
    fn memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut out = Vec::new();
        self.inner.lock().memory(&mut out);
        breakdown_dict(py, out)
    }
}

/// A kit mechanism shared with Python: operations that use the flash lock it for the call
/// (a scheme re-entering it is an error, not a deadlock), queries lock it briefly.
struct Kit<T> {
    inner: Mutex<T>,
    what: &'static str,
}

impl<T> Kit<T> {
    fn new(inner: T, what: &'static str) -> Self {
        Kit {
            inner: Mutex::new(inner),
            what,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, T> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` with the flash the handle lends; a core error is raised as Python's and
    /// kept by the handle.
    fn with<R>(
        &self,
        flash: &FlashHandle,
        f: impl FnOnce(&mut T, &mut Flash) -> Result<R>,
    ) -> PyResult<R> {
        let fl = flash.flash()?;
        let mut inner = self
            .inner
            .try_lock()
            .map_err(|_| PyRuntimeError::new_err(format!("{} re-entered", self.what)))?;
        f(&mut inner, fl).map_err(|e| flash.raise(e))
    }
}

/// The data pages GC moved since the last call, as `(lpa, new ppn)` pairs.
fn move_pairs(alloc: &mut CoreAllocator) -> Vec<(u32, Ppn)> {
    let moves = alloc.take_moves();
    let out = moves.iter().map(|m| (m.key, m.to)).collect();
    alloc.recycle_moves(moves);
    out
}

fn breakdown_dict(py: Python<'_>, out: MemoryBreakdown) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in out {
        d.set_item(k, v)?;
    }
    Ok(d)
}

/// The kit's page allocator ([`CoreAllocator`]): host pages in round-robin over the units,
/// garbage collection in Rust, the pages it moved reported as `(lpa, new ppn)` pairs.
#[pyclass(module = "ftlab._core")]
pub struct PageAllocator {
    inner: Kit<CoreAllocator>,
}

#[pymethods]
impl PageAllocator {
    /// The next free page for a host write (collecting garbage first if the unit needs it).
    fn host_page(&self, flash: &FlashHandle) -> PyResult<Ppn> {
        self.inner.with(flash, |a, f| a.host_page(f))
    }

    /// Whether GC moved pages since the last `take_moves`.
    fn has_moves(&self) -> bool {
        self.inner.lock().has_moves()
    }

    /// The pages GC moved since the last call: `(lpa, new ppn)` pairs, to apply to the map.
    fn take_moves(&self) -> Vec<(u32, Ppn)> {
        move_pairs(&mut self.inner.lock())
    }

    /// Background GC in idle time (with `gc.mode = "background"`).
    fn idle_gc(&self, flash: &FlashHandle) -> PyResult<()> {
        self.inner.with(flash, |a, f| a.idle_gc(f))
    }

    fn has_idle_work(&self) -> bool {
        self.inner.lock().has_idle_work()
    }

    fn background_gc(&self) -> bool {
        self.inner.lock().background_gc()
    }

    /// Rebuilds the allocator from the flash after a restart.
    fn recover(&self, flash: &FlashHandle) -> PyResult<()> {
        self.inner.with(flash, |a, f| a.recover(f))
    }

    /// The allocator's DRAM by component: `{name: bytes}`.
    fn memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut out = Vec::new();
        self.inner.lock().memory(&mut out);
        breakdown_dict(py, out)
    }
}

/// A Python scheme object behind the core's [`Ftl`] trait.
struct PyScheme {
    name: String,
    obj: Py<PyAny>,
    handle: Py<FlashHandle>,
    has_batch: bool,
    has_idle: bool,
    has_idle_check: bool,
    has_recover: bool,
    has_finish: bool,
    has_reset: bool,
    background: bool,
}

impl PyScheme {
    /// Calls `f` with the flash lent to the handle, and turns a Python exception into the
    /// core error behind it, or a scheme error with the traceback.
    fn call<T>(
        &self,
        flash: Option<&mut Flash>,
        f: impl FnOnce(Python<'_>, &Bound<'_, PyAny>, &Bound<'_, FlashHandle>) -> PyResult<T>,
    ) -> Result<T> {
        Python::with_gil(|py| {
            let handle = self.handle.bind(py);
            let h = handle.borrow();
            h.lend(flash.map_or(std::ptr::null_mut(), |f| f as *mut Flash));
            let result = f(py, self.obj.bind(py), handle);
            h.lend(std::ptr::null_mut());
            let kept = h.take_error();
            result.map_err(|e| match kept {
                Some(core) => core,
                None => scheme_error(py, &self.name, e),
            })
        })
    }
}

/// The `(key, value)` pairs of a mapping a scheme returned.
fn items<'py, V: FromPyObject<'py>>(mapping: &Bound<'py, PyAny>) -> PyResult<Vec<(String, V)>> {
    let py = mapping.py();
    let list = py
        .import("builtins")?
        .getattr("list")?
        .call1((mapping.call_method0(intern!(py, "items"))?,))?;
    list.extract()
}

fn scheme_error(py: Python<'_>, name: &str, e: PyErr) -> Error {
    let trace = e
        .traceback(py)
        .and_then(|t| t.format().ok())
        .unwrap_or_default();
    Error::Usage(format!("Python scheme `{name}` failed: {trace}{e}"))
}

impl Ftl for PyScheme {
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        let flash_ptr = flash as *mut Flash;
        let ppn = self.call(Some(flash), |py, obj, h| {
            let r = obj.call_method1(intern!(py, "read"), (lpa, h))?;
            if r.is_none() {
                Ok(NONE)
            } else {
                r.extract::<Ppn>()
            }
        })?;
        if ppn == NONE {
            return Ok(None);
        }
        // SAFETY: the call above has returned; the handle no longer holds the pointer.
        let flash = unsafe { &mut *flash_ptr };
        Ok(Some(flash.read(ppn, Cause::Host)?))
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        self.call(Some(flash), |py, obj, h| {
            obj.call_method1(intern!(py, "write"), (lpa, seq, h))
                .map(drop)
        })
    }

    fn write_batch(&mut self, pages: &[(u32, u64)], flash: &mut Flash) -> Result<()> {
        if !self.has_batch {
            for &(lpa, seq) in pages {
                self.write(lpa, seq, flash)?;
            }
            return Ok(());
        }
        self.call(Some(flash), |py, obj, h| {
            let list = PyList::new(
                py,
                pages
                    .iter()
                    .map(|&(l, s)| PyTuple::new(py, [l as u64, s]).unwrap()),
            )?;
            obj.call_method1(intern!(py, "write_batch"), (list, h))
                .map(drop)
        })
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        self.call(Some(flash), |py, obj, h| {
            obj.call_method1(intern!(py, "trim"), (lpa, h)).map(drop)
        })
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        let got = self.call(None, |py, obj, _| {
            let pairs: Vec<(String, u64)> = items(&obj.call_method0(intern!(py, "memory"))?)?;
            Ok(pairs)
        });
        // `memory` cannot fail in the trait; a scheme whose method fails reports nothing
        // and the error shows on the next operation's call.
        if let Ok(pairs) = got {
            out.extend(pairs.iter().map(|(k, v)| (intern_name(k), *v)));
        }
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        let got = self.call(None, |py, obj, _| {
            let pairs: Vec<(String, f64)> = items(&obj.call_method0(intern!(py, "counters"))?)?;
            Ok(pairs)
        });
        if let Ok(pairs) = got {
            out.extend(pairs.iter().map(|(k, v)| (intern_name(k), *v)));
        }
    }

    fn idle(&mut self, flash: &mut Flash) -> Result<()> {
        if !self.has_idle {
            return Ok(());
        }
        self.call(Some(flash), |py, obj, h| {
            obj.call_method1(intern!(py, "idle"), (h,)).map(drop)
        })
    }

    fn background_gc(&self) -> bool {
        self.background
    }

    fn has_idle_work(&mut self) -> bool {
        if !self.has_idle {
            return false;
        }
        if !self.has_idle_check {
            return true;
        }
        self.call(None, |py, obj, _| {
            obj.call_method0(intern!(py, "has_idle_work"))?
                .extract::<bool>()
        })
        .unwrap_or(true)
    }

    fn reset_counters(&mut self) {
        if self.has_reset {
            // Nothing to report if it fails: the counters then include preconditioning.
            let _ = self.call(None, |py, obj, _| {
                obj.call_method0(intern!(py, "reset_counters")).map(drop)
            });
        }
    }

    /// The bridge revalidates the live pages the OOB scan found, then hands the scheme
    /// the table (`live[lpa]` = ppn, or `None`) to rebuild its state from.
    fn recover(
        &mut self,
        found: &ftlab_core::device::recovery::Found,
        flash: &mut Flash,
    ) -> Result<()> {
        if !self.has_recover {
            return Err(Error::Usage(format!(
                "Python scheme `{}` cannot rebuild its state from flash: it defines no `recover`",
                self.name
            )));
        }
        ftlab_core::device::recovery::revalidate_live(found, flash)?;
        self.call(Some(flash), |py, obj, h| {
            let live: Vec<Option<Ppn>> = found
                .live
                .iter()
                .map(|&p| (p != NONE).then_some(p))
                .collect();
            obj.call_method1(intern!(py, "recover"), (live, h))
                .map(drop)
        })
    }

    fn finish(&mut self, flash: &mut Flash) -> Result<()> {
        if !self.has_finish {
            return Ok(());
        }
        self.call(Some(flash), |py, obj, h| {
            obj.call_method1(intern!(py, "finish"), (h,)).map(drop)
        })
    }
}

/// Whether `obj`'s class overrides `method` of `ftlab.Scheme` (the base class's own
/// methods are placeholders the bridge need not call).
fn overrides(obj: &Bound<'_, PyAny>, method: &str) -> PyResult<bool> {
    let py = obj.py();
    let cls = obj.get_type();
    let base = py.import("ftlab._scheme")?.getattr("Scheme")?;
    let mine = cls.getattr(method);
    let theirs = base.getattr(method);
    Ok(match (mine, theirs) {
        (Ok(m), Ok(t)) => !m.is(&t),
        (Ok(_), Err(_)) => true,
        _ => false,
    })
}

/// Registers a Python scheme with the core: `factory(device, section)` builds the scheme
/// object for a run, `section` being its configuration section as a dict (keys checked
/// against `defaults`, given as JSON).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (name, description, defaults_json, factory, append_only=false, device_defaults=None, family="custom".to_string(), advise_json=None))]
pub fn register_scheme(
    name: String,
    description: String,
    defaults_json: Option<String>,
    factory: PyObject,
    append_only: bool,
    device_defaults: Option<String>,
    family: String,
    advise_json: Option<String>,
) -> PyResult<()> {
    let advise = match advise_json {
        None => toml::Table::new(),
        Some(text) => serde_json::from_str::<toml::Table>(&text).map_err(|e| {
            PyValueError::new_err(format!("scheme `{name}`'s advise parameters: {e}"))
        })?,
    };
    let section = match defaults_json {
        None => None,
        Some(text) => Some(serde_json::from_str::<toml::Table>(&text).map_err(|e| {
            PyValueError::new_err(format!("scheme `{name}`'s section defaults: {e}"))
        })?),
    };
    let scheme_name = name.clone();
    let build = move |cfg: &SchemeContext, layout: &Layout| -> Result<Box<dyn Ftl>> {
        Python::with_gil(|py| {
            let section = serde_json::to_string(&cfg.scheme_section(&scheme_name))
                .map_err(|e| Error::Usage(format!("internal: {e}")))?;
            let device = Device {
                cfg: cfg.clone(),
                layout: *layout,
            };
            let made = (|| -> PyResult<Box<dyn Ftl>> {
                let obj = factory.call1(py, (device, section))?;
                let obj_b = obj.bind(py);
                let background = obj_b
                    .call_method0(intern!(py, "background_gc"))?
                    .extract::<bool>()?;
                Ok(Box::new(PyScheme {
                    name: scheme_name.clone(),
                    has_batch: overrides(obj_b, "write_batch")?,
                    has_idle: overrides(obj_b, "idle")?,
                    has_idle_check: overrides(obj_b, "has_idle_work")?,
                    has_recover: overrides(obj_b, "recover")?,
                    has_finish: overrides(obj_b, "finish")?,
                    has_reset: overrides(obj_b, "reset_counters")?,
                    background,
                    handle: Py::new(py, FlashHandle::new())?,
                    obj,
                }))
            })();
            made.map_err(|e| {
                // A configuration error raised by the scheme's constructor keeps its key.
                match e.value(py).getattr("ftlab_config_key") {
                    Ok(key) if !key.is_none() => Error::config(
                        key.extract::<String>().unwrap_or_default(),
                        e.value(py).to_string(),
                    ),
                    _ => scheme_error(py, &scheme_name, e),
                }
            })
        })
    };
    external::register(ExternalScheme {
        name,
        description,
        family,
        advise,
        builtin: false,
        section,
        append_only,
        device_defaults,
        extra_oob_bytes: 0,
        build: Arc::new(build),
    })
    .map_err(to_py)
}

/// Removes a registered scheme; whether it was registered.
#[pyfunction]
pub fn unregister_scheme(name: &str) -> bool {
    external::unregister(name)
}

/// Registers a scheme built in its own crate with `ftlab-scheme`: `address` is what its
/// `ftlab_scheme_api()` returned (the template's module exports it). Returns its name.
#[pyfunction]
pub fn register_native_scheme(address: usize) -> PyResult<String> {
    // SAFETY: the address comes from a loaded extension module's `ftlab_scheme_api()`;
    // Python never unloads extension modules.
    unsafe { ftlab_core::ftl::native::register(address as *const ftlab_scheme::SchemeApi) }
        .map_err(to_py)
}
