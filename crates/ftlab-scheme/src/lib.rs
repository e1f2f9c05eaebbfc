//! Write an ftlab FTL scheme in your own crate.
//!
//! ftlab runs schemes from outside its tree through a small C ABI, so that a scheme built
//! separately (its own wheel, its own compiler run) plugs into an installed ftlab without
//! sharing Rust types across libraries. This crate is that ABI and a safe Rust face on it:
//!
//! - implement [`Scheme`] (read, write, trim, optional idle-time work and recovery, the
//!   DRAM it holds) against [`Flash`], the simulated flash that ftlab lends to each call,
//!   with the same NAND rules, timing and cause accounting as the built-in schemes, and
//!   [`PageAllocator`], ftlab's own allocator and garbage collector;
//! - export it with [`export_scheme!`], which defines the symbol ftlab looks for;
//! - hand its address to ftlab (`ftlab.register_native_scheme(address)` from Python: the
//!   template in `examples/rust-scheme` builds a wheel that does it at import).
//!
//! Every call crosses a function pointer, nothing else: a scheme runs at the speed of a
//! built-in one. The ABI is versioned ([`ABI_VERSION`]); ftlab refuses a scheme built for
//! another version. The crate has no dependencies.

use std::ffi::{c_char, c_void, CStr};

/// The ABI version this crate speaks; ftlab refuses a scheme built for another.
pub const ABI_VERSION: u32 = 2;

/// "No page": an unmapped logical page, an unused physical one.
pub const NONE: u32 = u32::MAX;

/// What a flash operation is for, as ftlab's reports count them (`ftlab.causes()`); the
/// numbers are ftlab's report order, which only ever grows at the end.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    Host = 0,
    Gc = 1,
    Translation = 2,
    Misprediction = 3,
    MergeSwitch = 4,
    MergePartial = 5,
    MergeFull = 6,
}

impl Cause {
    /// Every cause of this ABI, with ftlab's name for it.
    pub const ALL: [(Cause, &'static str); 7] = [
        (Cause::Host, "host"),
        (Cause::Gc, "gc"),
        (Cause::Translation, "translation"),
        (Cause::Misprediction, "misprediction"),
        (Cause::MergeSwitch, "merge_switch"),
        (Cause::MergePartial, "merge_partial"),
        (Cause::MergeFull, "merge_full"),
    ];
}

/// A page's out-of-band header: the logical page it holds and the write that wrote it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Oob {
    pub lpa: u32,
    pub seq: u64,
}

/// A valid page that garbage collection moved.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub lpa: u32,
    pub to: u32,
}

/// The device a scheme is built for.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub logical_pages: u64,
    pub physical_pages: u64,
    pub pages_per_block: u32,
    pub blocks: u32,
    /// Parallel units (planes), each with its own blocks.
    pub units: u32,
    pub page_size: u32,
    /// Bytes of one physical page address in a DRAM table.
    pub entry_bytes: u32,
}

/// An error a call failed with. ftlab keeps the error itself (a NAND rule violation stays
/// one in the report); a scheme that meets an error returns it unchanged.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error(pub i32);

pub type Result<T> = std::result::Result<T, Error>;

/// What ftlab provides: flash operations on the flash context of the call, and the kit's
/// page allocator. Status 0 is success; any other value is an [`Error`] whose message
/// ftlab kept.
#[repr(C)]
pub struct HostApi {
    pub program: unsafe extern "C" fn(*mut c_void, u32, u32, u64, u32) -> i32,
    pub read: unsafe extern "C" fn(*mut c_void, u32, u32, *mut Oob) -> i32,
    pub invalidate: unsafe extern "C" fn(*mut c_void, u32) -> i32,
    pub erase: unsafe extern "C" fn(*mut c_void, u32, u32) -> i32,
    pub is_valid: unsafe extern "C" fn(*mut c_void, u32) -> bool,
    pub valid_count: unsafe extern "C" fn(*mut c_void, u32) -> u32,
    /// Records a scheme's own error message; returns its status.
    pub fail: unsafe extern "C" fn(*mut c_void, *const u8, usize) -> i32,
    pub new_page_allocator: unsafe extern "C" fn(*const c_void) -> *mut c_void,
    pub free_page_allocator: unsafe extern "C" fn(*mut c_void),
    pub host_page: unsafe extern "C" fn(*mut c_void, *mut c_void, *mut u32) -> i32,
    /// Whether GC moved pages not yet taken.
    pub has_moves: unsafe extern "C" fn(*mut c_void) -> bool,
    /// Fills up to `cap` moves; returns how many (call again until 0).
    pub take_moves: unsafe extern "C" fn(*mut c_void, *mut Move, usize) -> usize,
    pub idle_gc: unsafe extern "C" fn(*mut c_void, *mut c_void) -> i32,
    pub has_idle_work: unsafe extern "C" fn(*mut c_void) -> bool,
    pub background_gc: unsafe extern "C" fn(*mut c_void) -> bool,
    pub recover_allocator: unsafe extern "C" fn(*mut c_void, *mut c_void) -> i32,
    /// Calls `emit(ctx, name, bytes)` for each component of the allocator's DRAM.
    pub allocator_memory: unsafe extern "C" fn(
        *mut c_void,
        unsafe extern "C" fn(*mut c_void, *const c_char, u64),
        *mut c_void,
    ),
}

/// Receives one component of a scheme's DRAM: `(ctx, NUL-terminated name, bytes)`.
pub type Emit = unsafe extern "C" fn(*mut c_void, *const c_char, u64);

/// What a scheme exports ([`export_scheme!`] builds it).
#[repr(C)]
pub struct SchemeApi {
    pub abi_version: u32,
    /// NUL-terminated: the `--ftl` name, one line of description, the `[name]` section's
    /// defaults as TOML (empty: no section).
    pub name: *const c_char,
    pub description: *const c_char,
    pub defaults: *const c_char,
    /// NUL-terminated: one of ftlab's families (`page`, `demand`, `hashed`, `learned`,
    /// `log-block`, `app-managed`, `custom`).
    pub family: *const c_char,
    /// `new(host, device, geometry, section TOML, flash context for errors)`: the scheme,
    /// or null after recording an error through `host.fail`.
    pub new: unsafe extern "C" fn(
        *const HostApi,
        *const c_void,
        *const Geometry,
        *const c_char,
        *mut c_void,
    ) -> *mut c_void,
    pub drop: unsafe extern "C" fn(*mut c_void),
    pub read: unsafe extern "C" fn(*mut c_void, u32, *mut c_void, *mut u32) -> i32,
    pub write: unsafe extern "C" fn(*mut c_void, u32, u64, *mut c_void) -> i32,
    pub trim: unsafe extern "C" fn(*mut c_void, u32, *mut c_void) -> i32,
    pub idle: unsafe extern "C" fn(*mut c_void, *mut c_void) -> i32,
    pub has_idle_work: unsafe extern "C" fn(*mut c_void) -> bool,
    pub background_gc: unsafe extern "C" fn(*mut c_void) -> bool,
    pub memory: unsafe extern "C" fn(*mut c_void, Emit, *mut c_void),
    pub recover: unsafe extern "C" fn(*mut c_void, *const u32, usize, *mut c_void) -> i32,
}

// The API is a table of constant pointers, shared read-only.
unsafe impl Sync for SchemeApi {}

/// The simulated flash, lent by ftlab for one call.
pub struct Flash<'a> {
    host: &'a HostApi,
    ctx: *mut c_void,
}

fn status(code: i32) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error(code))
    }
}

impl Flash<'_> {
    /// Programs erased page `ppn` with logical page `lpa`'s data of write `seq`.
    #[inline]
    pub fn program(&mut self, ppn: u32, lpa: u32, seq: u64, cause: Cause) -> Result<()> {
        status(unsafe { (self.host.program)(self.ctx, ppn, lpa, seq, cause as u32) })
    }

    /// Reads page `ppn`: its OOB header.
    #[inline]
    pub fn read(&mut self, ppn: u32, cause: Cause) -> Result<Oob> {
        let mut oob = Oob { lpa: NONE, seq: 0 };
        status(unsafe { (self.host.read)(self.ctx, ppn, cause as u32, &mut oob) })?;
        Ok(oob)
    }

    /// Marks page `ppn` invalid.
    #[inline]
    pub fn invalidate(&mut self, ppn: u32) -> Result<()> {
        status(unsafe { (self.host.invalidate)(self.ctx, ppn) })
    }

    pub fn erase(&mut self, block: u32, cause: Cause) -> Result<()> {
        status(unsafe { (self.host.erase)(self.ctx, block, cause as u32) })
    }

    pub fn is_valid(&self, ppn: u32) -> bool {
        unsafe { (self.host.is_valid)(self.ctx, ppn) }
    }

    pub fn valid_count(&self, block: u32) -> u32 {
        unsafe { (self.host.valid_count)(self.ctx, block) }
    }

    /// Fails the call with the scheme's own message.
    pub fn fail(&mut self, message: &str) -> Error {
        Error(unsafe { (self.host.fail)(self.ctx, message.as_ptr(), message.len()) })
    }
}

/// ftlab's page allocator for this run: host pages striped over the parallel units, GC by
/// the run's `[gc]` settings (in Rust, inside ftlab), the pages it moved reported by
/// [`PageAllocator::take_moves`].
pub struct PageAllocator {
    host: &'static HostApi,
    handle: *mut c_void,
    moves: Vec<Move>,
}

impl PageAllocator {
    /// The next free page for a host write (collecting garbage first if the unit needs it).
    #[inline]
    pub fn host_page(&mut self, flash: &mut Flash) -> Result<u32> {
        let mut ppn = NONE;
        status(unsafe { (self.host.host_page)(self.handle, flash.ctx, &mut ppn) })?;
        Ok(ppn)
    }

    /// The pages GC moved since the last call.
    #[inline]
    pub fn take_moves(&mut self) -> &[Move] {
        self.moves.clear();
        if !unsafe { (self.host.has_moves)(self.handle) } {
            return &self.moves;
        }
        let mut chunk = [Move {
            lpa: NONE,
            to: NONE,
        }; 64];
        loop {
            let n = unsafe { (self.host.take_moves)(self.handle, chunk.as_mut_ptr(), chunk.len()) };
            self.moves.extend_from_slice(&chunk[..n]);
            if n < chunk.len() {
                return &self.moves;
            }
        }
    }

    pub fn idle_gc(&mut self, flash: &mut Flash) -> Result<()> {
        status(unsafe { (self.host.idle_gc)(self.handle, flash.ctx) })
    }

    pub fn has_idle_work(&self) -> bool {
        unsafe { (self.host.has_idle_work)(self.handle) }
    }

    pub fn background_gc(&self) -> bool {
        unsafe { (self.host.background_gc)(self.handle) }
    }

    /// Rebuilds the allocator from the flash after a restart.
    pub fn recover(&mut self, flash: &mut Flash) -> Result<()> {
        status(unsafe { (self.host.recover_allocator)(self.handle, flash.ctx) })
    }

    /// The allocator's DRAM, added to `out`.
    pub fn memory(&self, out: &mut Memory) {
        unsafe { (self.host.allocator_memory)(self.handle, out.emit, out.ctx) }
    }
}

// The handle is used only through the scheme that owns it, one call at a time.
unsafe impl Send for PageAllocator {}

impl Drop for PageAllocator {
    fn drop(&mut self) {
        unsafe { (self.host.free_page_allocator)(self.handle) }
    }
}

/// The device a scheme is built for: its geometry and ftlab's kit.
pub struct Device {
    host: &'static HostApi,
    device: *const c_void,
    pub geometry: Geometry,
}

impl Device {
    pub fn page_allocator(&self) -> PageAllocator {
        PageAllocator {
            host: self.host,
            handle: unsafe { (self.host.new_page_allocator)(self.device) },
            moves: Vec::new(),
        }
    }
}

/// Where a scheme reports its DRAM, component by component.
pub struct Memory {
    emit: Emit,
    ctx: *mut c_void,
}

impl Memory {
    /// Adds a component; `name` must end with a NUL (`c"l2p"`).
    pub fn add(&mut self, name: &CStr, bytes: u64) {
        unsafe { (self.emit)(self.ctx, name.as_ptr(), bytes) }
    }
}

/// An FTL scheme. The methods mirror ftlab's built-in `Ftl` trait.
pub trait Scheme: Sized + Send + 'static {
    /// The `--ftl` name and the name of its configuration section (NUL-terminated).
    const NAME: &'static CStr;
    /// One line for `ftlab schemes`.
    const DESCRIPTION: &'static CStr;
    /// The `[NAME]` section's defaults as TOML (empty: no section); ftlab refuses other
    /// keys and hands [`Scheme::new`] the section as the run configures it.
    const DEFAULTS: &'static CStr = c"";
    /// The family of mapping design it belongs to (`ftlab.scheme_info()` lists them).
    const FAMILY: &'static CStr = c"custom";

    /// The scheme for a fresh device; `section` is its configuration section as TOML. An
    /// error message is reported as a configuration error of the scheme.
    fn new(device: &Device, section: &str) -> std::result::Result<Self, String>;
    /// The physical page holding `lpa`, or None: ftlab reads it (and `--verify` checks it).
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<u32>>;
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()>;
    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()>;
    /// Background work between requests.
    fn idle(&mut self, _flash: &mut Flash) -> Result<()> {
        Ok(())
    }
    fn has_idle_work(&mut self) -> bool {
        false
    }
    /// Whether the scheme collects garbage in `idle` (the report's GC scheduling).
    fn background_gc(&self) -> bool {
        false
    }
    /// The scheme's DRAM by component.
    fn memory(&self, out: &mut Memory);
    /// Rebuilds the state after a restart: `live[lpa]` is the physical page ftlab's OOB
    /// scan found ([`NONE`]: unmapped), already revalidated.
    fn recover(&mut self, _live: &[u32], flash: &mut Flash) -> Result<()> {
        Err(flash.fail("this scheme cannot rebuild its state from flash"))
    }
}

/// The C entry points of scheme `S` (used by [`export_scheme!`]).
pub mod glue {
    use super::*;

    fn flash<'a>(host: &'a HostApi, ctx: *mut c_void) -> Flash<'a> {
        Flash { host, ctx }
    }

    struct Instance<S> {
        host: &'static HostApi,
        scheme: S,
    }

    fn code(r: Result<()>) -> i32 {
        match r {
            Ok(()) => 0,
            Err(Error(c)) => c,
        }
    }

    /// # Safety
    /// Called by ftlab only, with valid pointers.
    pub unsafe extern "C" fn new<S: Scheme>(
        host: *const HostApi,
        device: *const c_void,
        geometry: *const Geometry,
        section: *const c_char,
        err: *mut c_void,
    ) -> *mut c_void {
        let host: &'static HostApi = &*host;
        let dev = Device {
            host,
            device,
            geometry: *geometry,
        };
        let section = CStr::from_ptr(section).to_str().unwrap_or("");
        match S::new(&dev, section) {
            Ok(scheme) => Box::into_raw(Box::new(Instance { host, scheme })) as *mut c_void,
            Err(message) => {
                (host.fail)(err, message.as_ptr(), message.len());
                std::ptr::null_mut()
            }
        }
    }

    unsafe fn me<'a, S>(obj: *mut c_void) -> &'a mut Instance<S> {
        &mut *(obj as *mut Instance<S>)
    }

    /// # Safety
    /// Called by ftlab only, with the pointer `new` returned.
    pub unsafe extern "C" fn drop<S: Scheme>(obj: *mut c_void) {
        std::mem::drop(Box::from_raw(obj as *mut Instance<S>));
    }

    /// # Safety
    /// Called by ftlab only.
    pub unsafe extern "C" fn read<S: Scheme>(
        obj: *mut c_void,
        lpa: u32,
        ctx: *mut c_void,
        out: *mut u32,
    ) -> i32 {
        let me = me::<S>(obj);
        match me.scheme.read(lpa, &mut flash(me.host, ctx)) {
            Ok(ppn) => {
                *out = ppn.unwrap_or(NONE);
                0
            }
            Err(Error(c)) => c,
        }
    }

    /// # Safety
    /// Called by ftlab only.
    pub unsafe extern "C" fn write<S: Scheme>(
        obj: *mut c_void,
        lpa: u32,
        seq: u64,
        ctx: *mut c_void,
    ) -> i32 {
        let me = me::<S>(obj);
        code(me.scheme.write(lpa, seq, &mut flash(me.host, ctx)))
    }

    /// # Safety
    /// Called by ftlab only.
    pub unsafe extern "C" fn trim<S: Scheme>(obj: *mut c_void, lpa: u32, ctx: *mut c_void) -> i32 {
        let me = me::<S>(obj);
        code(me.scheme.trim(lpa, &mut flash(me.host, ctx)))
    }

    /// # Safety
    /// Called by ftlab only.
    pub unsafe extern "C" fn idle<S: Scheme>(obj: *mut c_void, ctx: *mut c_void) -> i32 {
        let me = me::<S>(obj);
        code(me.scheme.idle(&mut flash(me.host, ctx)))
    }

    /// # Safety
    /// Called by ftlab only.
    pub unsafe extern "C" fn has_idle_work<S: Scheme>(obj: *mut c_void) -> bool {
        me::<S>(obj).scheme.has_idle_work()
    }

    /// # Safety
    /// Called by ftlab only.
    pub unsafe extern "C" fn background_gc<S: Scheme>(obj: *mut c_void) -> bool {
        me::<S>(obj).scheme.background_gc()
    }

    /// # Safety
    /// Called by ftlab only.
    pub unsafe extern "C" fn memory<S: Scheme>(obj: *mut c_void, emit: Emit, ctx: *mut c_void) {
        me::<S>(obj).scheme.memory(&mut Memory { emit, ctx })
    }

    /// # Safety
    /// Called by ftlab only, `live` holding `n` entries.
    pub unsafe extern "C" fn recover<S: Scheme>(
        obj: *mut c_void,
        live: *const u32,
        n: usize,
        ctx: *mut c_void,
    ) -> i32 {
        let me = me::<S>(obj);
        let live = std::slice::from_raw_parts(live, n);
        code(me.scheme.recover(live, &mut flash(me.host, ctx)))
    }
}

/// Exports scheme type `$scheme` as `ftlab_scheme_api`, the function ftlab looks for; it
/// returns the address of the scheme's [`SchemeApi`].
#[macro_export]
macro_rules! export_scheme {
    ($scheme:ty) => {
        /// The scheme's ABI table, for ftlab (`ftlab.register_native_scheme(address)`).
        #[no_mangle]
        pub extern "C" fn ftlab_scheme_api() -> *const $crate::SchemeApi {
            static API: $crate::SchemeApi = $crate::SchemeApi {
                abi_version: $crate::ABI_VERSION,
                name: <$scheme as $crate::Scheme>::NAME.as_ptr(),
                description: <$scheme as $crate::Scheme>::DESCRIPTION.as_ptr(),
                defaults: <$scheme as $crate::Scheme>::DEFAULTS.as_ptr(),
                family: <$scheme as $crate::Scheme>::FAMILY.as_ptr(),
                new: $crate::glue::new::<$scheme>,
                drop: $crate::glue::drop::<$scheme>,
                read: $crate::glue::read::<$scheme>,
                write: $crate::glue::write::<$scheme>,
                trim: $crate::glue::trim::<$scheme>,
                idle: $crate::glue::idle::<$scheme>,
                has_idle_work: $crate::glue::has_idle_work::<$scheme>,
                background_gc: $crate::glue::background_gc::<$scheme>,
                memory: $crate::glue::memory::<$scheme>,
                recover: $crate::glue::recover::<$scheme>,
            };
            &API
        }
    };
}
