//! Start-up and shutdown: a new store, or the state rebuilt from an existing one; and the
//! checkpoint a clean shutdown writes.

use crate::engine::Engine;
use crate::store::{meta_for, Files, Meta, PageStore};
use crate::ServeOptions;
use ftlab_core::device;
use ftlab_core::metrics::Report;
use std::path::Path;
use std::time::Instant;

/// How the device started.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Startup {
    /// An existing store was opened (else a new, empty one was made).
    pub existing: bool,
    /// The last session ended with a clean shutdown (its checkpoint is current).
    pub clean: bool,
    /// Wall time of the rebuild, in seconds.
    pub recovery_seconds: f64,
    /// OOB records read, and of those, pages programmed since the checkpoint.
    pub records_scanned: u64,
    pub pages_since_checkpoint: u64,
    /// Logical pages mapped after the rebuild.
    pub mapped_pages: u64,
    /// Pages whose record did not match their data (torn writes), ignored.
    pub torn_pages: u64,
}

fn read_meta(dir: &Path) -> Result<Option<Meta>, String> {
    let path = dir.join("meta.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{}: not a page store's description: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    };
    write().map_err(|e| format!("{}: {e}", path.display()))
}

/// Checks what serving needs of the configuration.
fn check_config(opts: &ServeOptions) -> Result<(), String> {
    if opts.cfg.buffer.cache_reads {
        return Err(
            "buffer.cache_reads is not supported by serve: a read cached in the write buffer \
             has no staged bytes"
                .into(),
        );
    }
    Ok(())
}

/// Opens the store in `opts.store`: a new one, or the state rebuilt from an existing one.
pub fn open(opts: &ServeOptions, epoch: Instant) -> Result<(Engine, Startup), String> {
    check_config(opts)?;
    let layout = opts.cfg.validate().map_err(|e| e.to_string())?;
    let meta = meta_for(&opts.scheme, &layout);
    if let Some(existing) = read_meta(&opts.store)? {
        if existing != meta {
            return Err(format!(
                "{} holds a store for scheme `{}` with {} blocks of {} pages of {} bytes; this \
                 device is `{}` with {} blocks of {} pages of {} bytes (use another --store)",
                opts.store.display(),
                existing.scheme,
                existing.total_blocks,
                existing.pages_per_block,
                existing.page_size,
                meta.scheme,
                meta.total_blocks,
                meta.pages_per_block,
                meta.page_size
            ));
        }
        return Err(format!(
            "{}: reopening an existing store is not implemented yet",
            opts.store.display()
        ));
    }
    let files = Files::open(&opts.store, &meta)?;
    let text = serde_json::to_string_pretty(&meta).map_err(|e| e.to_string())?;
    write_atomically(&opts.store.join("meta.json"), text.as_bytes())?;
    let store = PageStore::new(files, &meta, 1, vec![0; meta.total_blocks as usize], 0);
    let device = device::open_with_sink(&opts.scheme, &opts.cfg, opts.verify, Box::new(store))
        .map_err(|e| e.to_string())?;
    Ok((Engine::new(device, epoch)?, Startup::default()))
}

/// Clean shutdown: the write buffer to flash, everything synced, the checkpoint written;
/// returns the session's report.
pub fn shut_down(mut engine: Engine, _opts: &ServeOptions) -> Result<Report, String> {
    let sync = engine
        .flush()
        .map_err(|f| format!("final flush: {}", f.message))?;
    sync.sync()?;
    let device = engine.into_device();
    device.finish().map_err(|e| e.to_string())
}
