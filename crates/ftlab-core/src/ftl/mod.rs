//! The FTL interface and the registry of schemes.
//!
//! A scheme is one module implementing [`Ftl`]. It sees logical pages (the host layer has
//! already split requests and absorbed what the write buffer absorbs) and reaches flash
//! only through [`Flash`]. Its configuration section, if any, is a serde struct whose
//! defaults are registered in [`scheme_defaults`], so unknown keys are refused like any
//! other. The simulation loop is generic over the scheme ([`Visitor`]), so each scheme
//! gets its own monomorphised fast path.

pub mod alloc;
pub mod demand;
pub mod dftl;
pub mod hashed;
pub mod hpftl;
pub mod leaftl;
pub mod mapcache;
pub mod page;
pub mod selective;
pub mod sftl;
pub mod slimftl;
pub mod tpftl;
pub mod translation;

use crate::config::{Config, Layout};
use crate::error::{Error, Result};
use crate::nand::{Flash, Oob};
use crate::request::Op;
use std::collections::BTreeMap;

/// DRAM the scheme holds, by component, in bytes.
pub type MemoryBreakdown = Vec<(&'static str, u64)>;

pub trait Ftl {
    /// Serves a read of logical page `lpa`: the OOB header of the flash page it read, or
    /// `None` if the page is unmapped (never written, or trimmed).
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>>;

    /// Announces a host request covering logical pages `first_lpa .. first_lpa + pages`
    /// before its pages are served (schemes that prefetch by request extent use it).
    #[inline]
    fn begin_request(&mut self, _first_lpa: u32, _pages: u32, _op: Op) {}

    /// Writes logical page `lpa` with data identified by host write sequence number `seq`.
    fn write(&mut self, lpa: u32, seq: u32, flash: &mut Flash) -> Result<()>;

    /// Writes a batch flushed from the write buffer, in the order given.
    fn write_batch(&mut self, pages: &[(u32, u32)], flash: &mut Flash) -> Result<()> {
        for &(lpa, seq) in pages {
            self.write(lpa, seq, flash)?;
        }
        Ok(())
    }

    /// Forgets logical page `lpa` (TRIM).
    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()>;

    /// Current DRAM use by component (appended to `out`).
    fn memory(&self, out: &mut MemoryBreakdown);

    /// Scheme-specific counters (appended to `out`).
    fn counters(&self, _out: &mut Vec<(&'static str, f64)>) {}

    /// Background work between requests (garbage collection below the soft threshold with
    /// `gc.mode = "background"`). The simulator calls it after every request, in mapping-only
    /// runs too (so both take the same decisions), with the flash in background mode: the
    /// operations queue behind host work on their dies and no request waits for them.
    fn idle(&mut self, _flash: &mut Flash) -> Result<()> {
        Ok(())
    }

    /// Forgets the scheme's event counters (hits, misses, merges, ...) but none of its
    /// state: preconditioning traffic is kept out of the run's counters.
    fn reset_counters(&mut self) {}

    /// End of the run, after the write buffer is drained and before the final metrics
    /// (for example a scheme's final background compaction).
    fn finish(&mut self, _flash: &mut Flash) -> Result<()> {
        Ok(())
    }
}

/// Scheme names and one-line descriptions.
pub const SCHEMES: &[(&str, &str)] = &[
    (
        "page",
        "page-level FTL (PFTL): the whole L2P table in DRAM, greedy or cost-benefit GC",
    ),
    (
        "dftl",
        "DFTL (ASPLOS'09): page table on flash, cached entries (segmented LRU), batch write-back",
    ),
    (
        "selective",
        "selective mapping-table loading (IJASC'21, pblk): 64 KiB mapping blocks cached by hotness, host hints",
    ),
    (
        "sftl",
        "S-FTL (MSST'11): whole translation pages cached compressed (runs of sequential PPNs), dirty buffer",
    ),
    (
        "tpftl",
        "TPFTL (EuroSys'15): entries cached in translation-page nodes, two-level LRU, prefetching, clean-first",
    ),
    (
        "hpftl",
        "HPFTL (NAS'17): hashed page-level map (HID + page id per page), bounded secondary table with reclaim",
    ),
    (
        "slimftl",
        "SlimFTL (SNU thesis 2020): hashed page-level map over a virtual block table, sequentiality-aware md5 hasher, shared virtual blocks",
    ),
    (
        "leaftl",
        "LeaFTL (ASPLOS'23): learned linear segments per 256-page group, OOB-verified predictions",
    ),
];

/// Default configuration sections of the schemes that have one.
pub fn scheme_defaults() -> BTreeMap<String, toml::Table> {
    fn section<T: serde::Serialize + Default>() -> toml::Table {
        toml::Table::try_from(T::default()).expect("a scheme section serialises to a table")
    }
    BTreeMap::from([
        ("dftl".to_string(), section::<dftl::DftlConfig>()),
        (
            "selective".to_string(),
            section::<selective::SelectiveConfig>(),
        ),
        ("sftl".to_string(), section::<sftl::SftlConfig>()),
        ("tpftl".to_string(), section::<tpftl::TpftlConfig>()),
        ("hpftl".to_string(), section::<hpftl::HpConfig>()),
        ("slimftl".to_string(), section::<slimftl::SlimConfig>()),
        ("leaftl".to_string(), section::<leaftl::LeaftlConfig>()),
    ])
}

/// Receives the constructed scheme and its flash, whatever the scheme's type.
pub trait Visitor {
    type Output;
    fn visit<F: Ftl>(self, ftl: F, flash: Flash) -> Self::Output;
}

/// Builds scheme `name` over a fresh device and hands it to `visitor`.
pub fn build<V: Visitor>(
    name: &str,
    cfg: &Config,
    layout: &Layout,
    visitor: V,
) -> Result<V::Output> {
    let timed = cfg.replay.timing;
    match name {
        "page" => {
            let flash = Flash::new(cfg, layout, 0, timed)?;
            Ok(visitor.visit(page::PageFtl::new(cfg, layout), flash))
        }
        "dftl" => {
            let flash = Flash::new(cfg, layout, 0, timed)?;
            Ok(visitor.visit(dftl::Dftl::new(cfg, layout)?, flash))
        }
        "selective" => {
            let flash = Flash::new(cfg, layout, 0, timed)?;
            Ok(visitor.visit(selective::Selective::new(cfg, layout)?, flash))
        }
        "sftl" => {
            let flash = Flash::new(cfg, layout, 0, timed)?;
            Ok(visitor.visit(sftl::Sftl::new(cfg, layout)?, flash))
        }
        "tpftl" => {
            let flash = Flash::new(cfg, layout, 0, timed)?;
            Ok(visitor.visit(tpftl::Tpftl::new(cfg, layout)?, flash))
        }
        "hpftl" => {
            let ftl = hpftl::HpFtl::new(cfg, layout)?;
            Ok(visitor.visit(ftl, Flash::new(cfg, layout, 0, timed)?))
        }
        "slimftl" => {
            let ftl = slimftl::SlimFtl::new(cfg, layout)?;
            Ok(visitor.visit(ftl, Flash::new(cfg, layout, 0, timed)?))
        }
        "leaftl" => {
            let ftl = leaftl::LeaFtl::new(cfg, layout)?;
            let flash = Flash::new(cfg, layout, 0, timed)?;
            Ok(visitor.visit(ftl, flash))
        }
        _ => {
            let names: Vec<&str> = SCHEMES.iter().map(|(n, _)| *n).collect();
            Err(Error::Usage(format!(
                "unknown FTL scheme `{name}`; the schemes are: {}",
                names.join(", ")
            )))
        }
    }
}
