//! Schemes built in their own crate, against the `ftlab-scheme` C ABI, and handed to ftlab
//! as the address of their [`SchemeApi`] table (`ftlab.register_native_scheme`). The
//! table's functions are called through pointers; the flash and the kit's page allocator
//! are offered back through [`HOST`], the ftlab side of the ABI. A scheme built separately
//! shares no Rust type with ftlab, so it need not be built by the same compiler.
//!
//! Errors keep their kind: a flash operation that breaks a NAND rule records the core's
//! error in the call's context and returns a status; the scheme passes the status back and
//! the bridge returns the recorded error.

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob, CAUSES};
use crate::error::{Error, Result};
use crate::ftl::external::{self, intern_name, ExternalScheme};
use crate::ftl::kit::alloc::{Move as CoreMove, PageAllocator};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown};
use ftlab_scheme::{Geometry, HostApi, Move, SchemeApi, ABI_VERSION, NONE};
use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::Arc;

/// The context of one call into a scheme: the flash it may use and the error a host
/// function recorded.
struct Call<'a> {
    flash: Option<&'a mut Flash>,
    name: &'a str,
    error: Option<Error>,
}

const FAILED: i32 = 1;

impl Call<'_> {
    fn record(&mut self, e: impl Into<Error>) -> i32 {
        self.error = Some(e.into());
        FAILED
    }
}

unsafe fn call<'a>(ctx: *mut c_void) -> &'a mut Call<'a> {
    &mut *(ctx as *mut Call<'a>)
}

/// The call's flash: a call without one (construction) has none to give.
unsafe fn flash<'a>(ctx: *mut c_void) -> std::result::Result<&'a mut Flash, i32> {
    let c = call(ctx);
    match c.flash.as_deref_mut() {
        Some(f) => Ok(&mut *(f as *mut Flash)),
        None => Err(c.record(Error::Usage(format!(
            "scheme `{}` used the flash outside a call that lends it",
            c.name
        )))),
    }
}

fn cause(c: u32) -> Cause {
    // The ABI's causes are the core's first ones, in report order (checked by a test);
    // an unknown number is a host operation rather than a crash.
    CAUSES.get(c as usize).copied().unwrap_or(Cause::Host)
}

fn status(ctx: *mut c_void, r: std::result::Result<(), impl Into<Error>>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => unsafe { call(ctx).record(e) },
    }
}

unsafe extern "C" fn program(ctx: *mut c_void, ppn: u32, lpa: u32, seq: u64, c: u32) -> i32 {
    match flash(ctx) {
        Ok(f) => status(ctx, f.program(ppn, Oob { lpa, seq }, &[], cause(c))),
        Err(code) => code,
    }
}

unsafe extern "C" fn read(ctx: *mut c_void, ppn: u32, c: u32, out: *mut ftlab_scheme::Oob) -> i32 {
    match flash(ctx) {
        Ok(f) => match f.read(ppn, cause(c)) {
            Ok(oob) => {
                *out = ftlab_scheme::Oob {
                    lpa: oob.lpa,
                    seq: oob.seq,
                };
                0
            }
            Err(e) => call(ctx).record(e),
        },
        Err(code) => code,
    }
}

unsafe extern "C" fn invalidate(ctx: *mut c_void, ppn: u32) -> i32 {
    match flash(ctx) {
        Ok(f) => status(ctx, f.invalidate(ppn)),
        Err(code) => code,
    }
}

unsafe extern "C" fn erase(ctx: *mut c_void, block: u32, c: u32) -> i32 {
    match flash(ctx) {
        Ok(f) => status(ctx, f.erase(block, cause(c))),
        Err(code) => code,
    }
}

unsafe extern "C" fn is_valid(ctx: *mut c_void, ppn: u32) -> bool {
    flash(ctx).is_ok_and(|f| f.is_valid(ppn))
}

unsafe extern "C" fn valid_count(ctx: *mut c_void, block: u32) -> u32 {
    flash(ctx).map_or(0, |f| f.valid_count(block))
}

unsafe extern "C" fn fail(ctx: *mut c_void, message: *const u8, len: usize) -> i32 {
    let c = call(ctx);
    let text = String::from_utf8_lossy(std::slice::from_raw_parts(message, len));
    let e = Error::Usage(format!("scheme `{}`: {text}", c.name));
    c.record(e)
}

/// The configuration a scheme's kit is built from (`device` of `new`).
struct DeviceRef<'a> {
    cfg: &'a SchemeContext,
    layout: &'a Layout,
}

/// The kit's allocator as a scheme holds it, with the moves not yet handed over.
struct Allocator {
    alloc: PageAllocator,
    pending: VecDeque<CoreMove>,
}

unsafe fn allocator<'a>(a: *mut c_void) -> &'a mut Allocator {
    &mut *(a as *mut Allocator)
}

unsafe extern "C" fn new_page_allocator(device: *const c_void) -> *mut c_void {
    let d = &*(device as *const DeviceRef);
    Box::into_raw(Box::new(Allocator {
        alloc: PageAllocator::new(d.cfg, d.layout, false),
        pending: VecDeque::new(),
    })) as *mut c_void
}

unsafe extern "C" fn free_page_allocator(a: *mut c_void) {
    drop(Box::from_raw(a as *mut Allocator));
}

unsafe extern "C" fn host_page(a: *mut c_void, ctx: *mut c_void, out: *mut u32) -> i32 {
    match flash(ctx) {
        Ok(f) => match allocator(a).alloc.host_page(f) {
            Ok(ppn) => {
                *out = ppn;
                0
            }
            Err(e) => call(ctx).record(e),
        },
        Err(code) => code,
    }
}

unsafe extern "C" fn has_moves(a: *mut c_void) -> bool {
    let a = allocator(a);
    !a.pending.is_empty() || a.alloc.has_moves()
}

unsafe extern "C" fn take_moves(a: *mut c_void, out: *mut Move, cap: usize) -> usize {
    let a = allocator(a);
    if a.pending.is_empty() && a.alloc.has_moves() {
        let moves = a.alloc.take_moves();
        a.pending.extend(moves.iter().copied());
        a.alloc.recycle_moves(moves);
    }
    let n = cap.min(a.pending.len());
    for (i, m) in a.pending.drain(..n).enumerate() {
        *out.add(i) = Move {
            lpa: m.key,
            to: m.to,
        };
    }
    n
}

unsafe extern "C" fn idle_gc(a: *mut c_void, ctx: *mut c_void) -> i32 {
    match flash(ctx) {
        Ok(f) => status(ctx, allocator(a).alloc.idle_gc(f)),
        Err(code) => code,
    }
}

unsafe extern "C" fn has_idle_work(a: *mut c_void) -> bool {
    allocator(a).alloc.has_idle_work()
}

unsafe extern "C" fn background_gc(a: *mut c_void) -> bool {
    allocator(a).alloc.background_gc()
}

unsafe extern "C" fn recover_allocator(a: *mut c_void, ctx: *mut c_void) -> i32 {
    match flash(ctx) {
        Ok(f) => status(ctx, allocator(a).alloc.recover(f)),
        Err(code) => code,
    }
}

unsafe extern "C" fn allocator_memory(a: *mut c_void, emit: ftlab_scheme::Emit, ectx: *mut c_void) {
    let mut out = Vec::new();
    allocator(a).alloc.memory(&mut out);
    for (name, bytes) in out {
        let name = CString::new(name).expect("component names have no NUL");
        emit(ectx, name.as_ptr(), bytes);
    }
}

/// ftlab's side of the ABI.
pub static HOST: HostApi = HostApi {
    program,
    read,
    invalidate,
    erase,
    is_valid,
    valid_count,
    fail,
    new_page_allocator,
    free_page_allocator,
    host_page,
    has_moves,
    take_moves,
    idle_gc,
    has_idle_work,
    background_gc,
    recover_allocator,
    allocator_memory,
};

/// A scheme behind the ABI, as the core's [`Ftl`].
struct NativeScheme {
    api: &'static SchemeApi,
    obj: *mut c_void,
    name: String,
}

// The scheme object is used by one run, one call at a time (ftlab-scheme requires its
// type to be `Send`).
unsafe impl Send for NativeScheme {}

impl Drop for NativeScheme {
    fn drop(&mut self) {
        unsafe { (self.api.drop)(self.obj) }
    }
}

impl NativeScheme {
    /// Runs `f` with a call context lending `flash`; a failed status becomes the error a
    /// host function recorded, or the scheme's.
    #[inline]
    fn with<T>(
        &self,
        flash: Option<&mut Flash>,
        f: impl FnOnce(*mut c_void) -> (i32, T),
    ) -> Result<T> {
        let mut c = Call {
            flash,
            name: &self.name,
            error: None,
        };
        let (code, value) = f(&mut c as *mut Call as *mut c_void);
        if code == 0 {
            return Ok(value);
        }
        Err(c.error.take().unwrap_or_else(|| {
            Error::Usage(format!(
                "scheme `{}` failed with status {code} and no message",
                self.name
            ))
        }))
    }
}

unsafe extern "C" fn emit_into(ctx: *mut c_void, name: *const c_char, bytes: u64) {
    let out = &mut *(ctx as *mut MemoryBreakdown);
    let name = CStr::from_ptr(name).to_string_lossy();
    out.push((intern_name(&name), bytes));
}

impl Ftl for NativeScheme {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        let (api, obj) = (self.api, self.obj);
        let ppn = self.with(Some(&mut *flash), |ctx| {
            let mut ppn = NONE;
            let code = unsafe { (api.read)(obj, lpa, ctx, &mut ppn) };
            (code, ppn)
        })?;
        if ppn == NONE {
            return Ok(None);
        }
        Ok(Some(flash.read(ppn, Cause::Host)?))
    }

    #[inline]
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let (api, obj) = (self.api, self.obj);
        self.with(Some(flash), |ctx| {
            (unsafe { (api.write)(obj, lpa, seq, ctx) }, ())
        })
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        let (api, obj) = (self.api, self.obj);
        self.with(Some(flash), |ctx| {
            (unsafe { (api.trim)(obj, lpa, ctx) }, ())
        })
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        unsafe {
            (self.api.memory)(
                self.obj,
                emit_into,
                out as *mut MemoryBreakdown as *mut c_void,
            )
        }
    }

    fn idle(&mut self, flash: &mut Flash) -> Result<()> {
        let (api, obj) = (self.api, self.obj);
        self.with(Some(flash), |ctx| (unsafe { (api.idle)(obj, ctx) }, ()))
    }

    fn background_gc(&self) -> bool {
        unsafe { (self.api.background_gc)(self.obj) }
    }

    #[inline]
    fn has_idle_work(&mut self) -> bool {
        unsafe { (self.api.has_idle_work)(self.obj) }
    }

    /// The live pages the OOB scan found are revalidated, then handed to the scheme.
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        crate::device::recovery::revalidate_live(found, flash)?;
        let (api, obj) = (self.api, self.obj);
        self.with(Some(flash), |ctx| {
            let code = unsafe { (api.recover)(obj, found.live.as_ptr(), found.live.len(), ctx) };
            (code, ())
        })
    }
}

unsafe fn text(p: *const c_char, what: &str) -> Result<String> {
    if p.is_null() {
        return Err(Error::Usage(format!("native scheme: no {what}")));
    }
    CStr::from_ptr(p)
        .to_str()
        .map(str::to_string)
        .map_err(|_| Error::Usage(format!("native scheme: its {what} is not UTF-8")))
}

/// Registers the scheme whose ABI table is at `api`; returns its name.
///
/// # Safety
/// `api` must be the address a scheme's `ftlab_scheme_api()` returned (built with
/// `ftlab-scheme`'s `export_scheme!`), in a library that stays loaded.
pub unsafe fn register(api: *const SchemeApi) -> Result<String> {
    if api.is_null() {
        return Err(Error::Usage("native scheme: null ABI table".into()));
    }
    let api: &'static SchemeApi = &*api;
    if api.abi_version != ABI_VERSION {
        return Err(Error::Usage(format!(
            "native scheme built for ftlab-scheme ABI {}, this ftlab speaks ABI {ABI_VERSION}: \
             rebuild it against this ftlab's ftlab-scheme",
            api.abi_version
        )));
    }
    let name = text(api.name, "name")?;
    let description = text(api.description, "description")?;
    let defaults = text(api.defaults, "section defaults")?;
    let section = if defaults.trim().is_empty() {
        None
    } else {
        Some(toml::from_str::<toml::Table>(&defaults).map_err(|e| {
            Error::Usage(format!("native scheme `{name}`: its section defaults: {e}"))
        })?)
    };
    let scheme_name = name.clone();
    let build = move |cfg: &SchemeContext, layout: &Layout| -> Result<Box<dyn Ftl>> {
        let section = toml::to_string(&cfg.scheme_section(&scheme_name))
            .map_err(|e| Error::Usage(format!("internal: {e}")))?;
        let section = CString::new(section).map_err(|e| Error::Usage(e.to_string()))?;
        let geometry = Geometry {
            logical_pages: layout.logical_pages,
            physical_pages: layout.physical_pages,
            pages_per_block: layout.pages_per_block,
            blocks: layout.total_blocks,
            units: layout.units,
            page_size: layout.page_size,
            entry_bytes: layout.ppa_entry_bytes() as u32,
        };
        let device = DeviceRef { cfg, layout };
        let mut c = Call {
            flash: None,
            name: &scheme_name,
            error: None,
        };
        let obj = unsafe {
            (api.new)(
                &HOST,
                &device as *const DeviceRef as *const c_void,
                &geometry,
                section.as_ptr(),
                &mut c as *mut Call as *mut c_void,
            )
        };
        if obj.is_null() {
            let message = match c.error.take() {
                Some(Error::Usage(m)) => m,
                Some(e) => e.to_string(),
                None => "its constructor failed".into(),
            };
            return Err(Error::config(scheme_name.clone(), message));
        }
        Ok(Box::new(NativeScheme {
            api,
            obj,
            name: scheme_name.clone(),
        }))
    };
    external::register(ExternalScheme {
        name: name.clone(),
        description,
        family: text(api.family, "family")?,
        advise: toml::Table::new(),
        builtin: false,
        section,
        append_only: false,
        device_defaults: None,
        extra_oob_bytes: 0,
        build: Arc::new(build),
    })?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_abi_causes_are_the_cores_first_ones() {
        for (c, name) in ftlab_scheme::Cause::ALL {
            assert_eq!(cause(c as u32).name(), name);
        }
    }
}
