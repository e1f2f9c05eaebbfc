//! The FTL interface and the registry of schemes.
//!
//! A scheme is one module implementing [`Ftl`]. It sees logical pages (the host layer has
//! already split requests and absorbed what the write buffer absorbs) and reaches flash
//! only through [`Flash`]. Its configuration section, if any, is a serde struct whose
//! defaults are registered in [`scheme_defaults`], so unknown keys are refused like any
//! other. The simulation loop is generic over the scheme ([`Visitor`]), so each scheme
//! gets its own monomorphised fast path.
//!
//! Adding a scheme: a module whose type implements [`Ftl`] and [`Scheme`] (name,
//! description, section type, constructor, extra OOB bytes), and one line in the
//! `schemes!` list at the end of this file. Everything else (the `--ftl` names, the
//! configuration defaults, `ftlab schemes`, the Python front) follows from that list.
//! Schemes from outside the core (Python, other crates) register at run time
//! ([`external`]) and are looked up after the built-in ones by the same functions.

pub mod aftl;
pub mod conventional;
pub mod demand;
pub mod external;
pub mod fdp;
pub mod hashed;
pub mod interface;
pub mod kit;
pub mod leaftl;
pub mod lifetime;
pub mod logblock;
pub mod native;
pub mod page;
pub mod settings;
pub mod zns;

use crate::device::geometry::Layout;
use crate::device::nand::{Flash, Oob, Ppn};
use crate::error::{Error, Result};
use crate::ftl::settings::SchemeContext;
use crate::request::Op;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// DRAM the scheme holds, by component, in bytes.
pub type MemoryBreakdown = Vec<(&'static str, u64)>;

/// Bytes of a sector, the unit of a sector-packing scheme's writes ([`Ftl::packs_sectors`]).
pub const SECTOR_BYTES: u64 = 512;

/// Where a read of a sector-packing scheme found one 512 B sector of a logical page
/// ([`Ftl::read_sectors`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SectorSource {
    /// Never written, or trimmed.
    Unmapped,
    /// The controller's packing buffer (DRAM), holding the data of host write `seq`.
    Dram(u64),
    /// Sector `slot` of flash page `ppn`, which the read read: its spare area says whose
    /// data it holds ([`Flash::sector_tag`]).
    Flash { ppn: Ppn, slot: u32 },
}

pub trait Ftl: 'static + Send {
    /// Serves a read of logical page `lpa`: the OOB header of the flash page it read, or
    /// `None` if the page is unmapped (never written, or trimmed).
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>>;

    /// Announces a host request covering logical pages `first_lpa .. first_lpa + pages`
    /// before its pages are served (schemes that prefetch by request extent use it).
    #[inline]
    fn begin_request(&mut self, _first_lpa: u32, _pages: u32, _op: Op) {}

    /// Writes logical page `lpa` with data identified by host write sequence number `seq`
    /// (64 bits: it never wraps).
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()>;

    /// Writes a batch of (lpa, seq) flushed from the write buffer, in the order given.
    fn write_batch(&mut self, pages: &[(u32, u64)], flash: &mut Flash) -> Result<()> {
        for &(lpa, seq) in pages {
            self.write(lpa, seq, flash)?;
        }
        Ok(())
    }

    /// Whether the scheme writes partial pages at sector granularity (FFTL's sub-page
    /// packing): the simulator then hands it a write covering part of a page as its sectors
    /// ([`Ftl::write_sectors`], no read-modify-write) and reads pages through
    /// [`Ftl::read_sectors`], checking every sector in verification mode. Static for a run.
    /// Only without a write buffer (whose slots are whole pages) and without a page store
    /// (the block-device front serves whole pages).
    fn packs_sectors(&self) -> bool {
        false
    }

    /// Writes sectors `first .. first + count` of logical page `lpa` (512 B each, fewer
    /// than the page holds) with the data of host write `seq` ([`Ftl::packs_sectors`]).
    fn write_sectors(
        &mut self,
        _lpa: u32,
        _seq: u64,
        _first: u32,
        _count: u32,
        _flash: &mut Flash,
    ) -> Result<()> {
        Err(Error::Usage("this scheme does not pack sectors".into()))
    }

    /// Serves a read of logical page `lpa` sector by sector ([`Ftl::packs_sectors`]): sets
    /// `out` to where each of its sectors was found, in sector order, having read (and
    /// counted) each flash page it names once.
    fn read_sectors(
        &mut self,
        _lpa: u32,
        _flash: &mut Flash,
        _out: &mut Vec<SectorSource>,
    ) -> Result<()> {
        Err(Error::Usage("this scheme does not pack sectors".into()))
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

    /// Whether the scheme collects garbage in the background (in idle time, through
    /// [`Ftl::idle`]) under the run's configuration, or only in the path of the writes that
    /// need it. Static: it is read once for the run's report (`metrics.gc.scheduling`), so
    /// that a comparison can check that its schemes are scheduled alike. The default,
    /// foreground, is right for every scheme without an idle hook.
    fn background_gc(&self) -> bool {
        false
    }

    /// Whether the scheme's host writes go through the shared page allocator's pseudo-SLC
    /// cache when `[slc]` turns it on. A scheme that places its pages itself (the log-block,
    /// hashed and append-only schemes), or whose learned placement the cache breaks
    /// (LeaFTL), keeps the default, false, and is refused a device with the cache on
    /// ([`check_slc_cache`]).
    fn slc_cache(&self) -> bool {
        false
    }

    /// Whether the scheme runs on the media faults `[faults]` injects: the shared page
    /// allocator retires the blocks that go bad and re-writes their pages
    /// ([`crate::ftl::kit::alloc::PageAllocator::has_faults`]). The schemes that place
    /// their pages themselves keep the default, false, and are refused a device with
    /// faults on ([`check_device_models`]).
    fn faults(&self) -> bool {
        false
    }

    /// False when [`Ftl::idle`] would do nothing: the simulator then skips it (and the
    /// gap-filling around it), as it does after most requests.
    fn has_idle_work(&mut self) -> bool {
        true
    }

    /// Forgets the scheme's event counters (hits, misses, merges, ...) but none of its
    /// state: preconditioning traffic is kept out of the run's counters.
    fn reset_counters(&mut self) {}

    /// Rebuilds the scheme's state after a restart ([`crate::device::recovery`]): `flash` holds
    /// every page as programmed before, none valid; the scheme is as [`Scheme::new`] made
    /// it. It revalidates the pages it keeps, rebuilds its map and structure from `found`,
    /// and may write (rewrite translation pages, close blocks, finish an interrupted merge).
    /// Every registered scheme implements it; the default refuses, so that a scheme added
    /// without it makes the device refuse to start rather than serve a wrong map.
    fn recover(
        &mut self,
        _found: &crate::device::recovery::Found,
        _flash: &mut Flash,
    ) -> Result<()> {
        Err(Error::Usage(
            "this scheme cannot rebuild its state from flash".into(),
        ))
    }

    /// End of the run, after the write buffer is drained and before the final metrics
    /// (for example a scheme's final background compaction).
    fn finish(&mut self, _flash: &mut Flash) -> Result<()> {
        Ok(())
    }
}

/// A scheme the registry can build: its name, its description, its configuration section
/// and its constructor. Each scheme's module implements it; `schemes!` lists the types
/// once, and [`SCHEMES`], [`scheme_defaults`] and [`build`] are generated from that list.
pub trait Scheme: Ftl + Sized {
    /// The `--ftl` name, which is also the name of its configuration section.
    const NAME: &'static str;
    /// One line for `ftlab schemes`: the paper and the design in a few words.
    const DESCRIPTION: &'static str;
    /// The `[NAME]` section: a serde struct whose `Default` gives the defaults (its keys are
    /// then the only ones accepted), or [`NoSection`].
    type Section: SchemeSection;

    /// The scheme for a fresh device, its configuration checked. Called before the flash is
    /// built, so a bad key of the scheme's section is reported before anything else.
    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self>;

    /// Whether the scheme refuses overwrites (an append-only device such as AMF's AFTL): it
    /// then needs a host stack that writes append-only, and `host.stack = "auto"` gives it
    /// one.
    const APPEND_ONLY: bool = false;

    /// The command interface the scheme serves (`device.interface`): a run under another
    /// is refused.
    const INTERFACE: interface::Interface = interface::Interface::Block;

    /// Keys outside its own section that the scheme's design assumes of the device it runs
    /// on (TOML), applied over the preset and under the user's files and `--set`: LeaFTL,
    /// for example, learns the runs that a write buffer flushed whole in logical order gives
    /// it.
    const DEVICE_DEFAULTS: Option<&'static str> = None;

    /// The scheme's own parameters worth sweeping when `ftlab advise` looks for its best
    /// configuration: TOML, keys of its section, each with the values to try
    /// (`replacement = ["slru", "lru"]`).
    const ADVISE: &'static str = "";

    /// OOB bytes per page the scheme stores beyond the OOB header (the flash is built with
    /// that many; a device whose OOB is too small is refused naming `geometry.oob_size`).
    fn extra_oob_bytes(&self) -> usize {
        0
    }

    /// The scheme's section of `cfg`, read into its typed configuration.
    fn section(cfg: &SchemeContext) -> Result<Self::Section>
    where
        Self::Section: serde::de::DeserializeOwned,
    {
        cfg.scheme_config(Self::NAME)
    }
}

/// What a scheme's configuration section is: any serde struct with defaults, or
/// [`NoSection`].
pub trait SchemeSection {
    /// The section's defaults as a TOML table; `None` when the scheme has no section.
    fn defaults() -> Option<toml::Table>;
}

impl<T: serde::Serialize + Default> SchemeSection for T {
    fn defaults() -> Option<toml::Table> {
        Some(toml::Table::try_from(T::default()).expect("a scheme section serialises to a table"))
    }
}

/// The section type of a scheme without a configuration section (`[NAME]` is then an
/// unknown key like any other).
pub enum NoSection {}

impl SchemeSection for NoSection {
    fn defaults() -> Option<toml::Table> {
        None
    }
}

/// Receives the constructed scheme and its flash, whatever the scheme's type.
pub trait Visitor {
    type Output;
    fn visit<F: Ftl>(self, ftl: F, flash: Flash) -> Self::Output;
}

/// Builds scheme `S` over a fresh device and hands it to `visitor`: the scheme first (its
/// configuration checked), then the flash with the OOB bytes the scheme asks for.
pub fn build_scheme<S: Scheme, V: Visitor>(
    cfg: &SchemeContext,
    layout: &Layout,
    visitor: V,
) -> Result<V::Output> {
    let ftl = S::new(cfg, layout)?;
    check_device_models(&ftl, S::NAME, cfg)?;
    let flash = Flash::new(&cfg.device, layout, ftl.extra_oob_bytes(), cfg.timed)?;
    Ok(visitor.visit(ftl, flash))
}

/// Refuses a scheme that cannot run on the pseudo-SLC cache `[slc]` turns on
/// ([`Ftl::slc_cache`]) or on the faults `[faults]` injects ([`Ftl::faults`]).
pub fn check_device_models<F: Ftl>(ftl: &F, name: &str, cfg: &SchemeContext) -> Result<()> {
    let faults = &cfg.device.faults;
    if faults.enabled() && !ftl.faults() {
        return Err(Error::config(
            faults.key(),
            format!(
                "scheme `{name}` does not run with media faults (the schemes that do: page, \
                 dftl, sftl, tpftl, selective, leaftl, and learnedftl without its group lines); \
                 set the fractions and rates of [faults] to 0 for it"
            ),
        ));
    }
    if cfg.device.slc.enabled() && !ftl.slc_cache() {
        return Err(Error::config(
            "slc.static_fraction",
            format!(
                "scheme `{name}` does not run on the pseudo-SLC cache (the schemes that do: page, \
                 dftl, sftl, tpftl, selective, leaftl, learnedftl); set slc.static_fraction and \
                 slc.dynamic_fraction to 0 for it"
            ),
        ));
    }
    Ok(())
}

/// Generates the registry from the list of scheme types: [`SCHEMES`], [`scheme_defaults`]
/// and [`build`] (one monomorphised arm per scheme).
macro_rules! schemes {
    ($($family:literal: $($scheme:ty),+;)+) => {
        /// Scheme names and one-line descriptions, in registry order.
        pub const SCHEMES: &[(&str, &str)] = &[
            $($((<$scheme as Scheme>::NAME, <$scheme as Scheme>::DESCRIPTION),)+)+
        ];

        /// The facts of every scheme, built-in ones in registry order, then the registered
        /// external ones: one source for the Python front, tests and benchmarks.
        pub fn scheme_info() -> Vec<SchemeInfo> {
            let mut out = vec![$($(
                SchemeInfo {
                    name: <$scheme as Scheme>::NAME.to_string(),
                    description: <$scheme as Scheme>::DESCRIPTION.to_string(),
                    family: $family.to_string(),
                    builtin: true,
                    append_only: <$scheme as Scheme>::APPEND_ONLY,
                    section: <<$scheme as Scheme>::Section as SchemeSection>::defaults(),
                    device_defaults: <$scheme as Scheme>::DEVICE_DEFAULTS.map(str::to_string),
                    advise: advise_table(<$scheme as Scheme>::NAME, <$scheme as Scheme>::ADVISE),
                },
            )+)+];
            for s in external::all() {
                out.push(SchemeInfo {
                    name: s.name,
                    description: s.description,
                    family: s.family,
                    builtin: s.builtin,
                    append_only: s.append_only,
                    section: s.section,
                    device_defaults: s.device_defaults,
                    advise: s.advise,
                });
            }
            out
        }

        /// Whether scheme `name` is append-only ([`Scheme::APPEND_ONLY`]); false for an
        /// unknown name.
        pub fn is_append_only(name: &str) -> bool {
            $($(
                if name == <$scheme as Scheme>::NAME {
                    return <$scheme as Scheme>::APPEND_ONLY;
                }
            )+)+
            external::get(name).is_some_and(|s| s.append_only)
        }

        /// The interface scheme `name` serves ([`Scheme::INTERFACE`]); `block` for a
        /// registered external scheme or an unknown name.
        pub fn scheme_interface(name: &str) -> interface::Interface {
            $($(
                if name == <$scheme as Scheme>::NAME {
                    return <$scheme as Scheme>::INTERFACE;
                }
            )+)+
            interface::Interface::Block
        }

        /// Default configuration sections of the schemes that have one, by scheme name
        /// (registered external schemes included).
        pub fn scheme_defaults() -> BTreeMap<String, toml::Table> {
            let mut sections = BTreeMap::new();
            $($(
                if let Some(table) = <<$scheme as Scheme>::Section as SchemeSection>::defaults() {
                    sections.insert(<$scheme as Scheme>::NAME.to_string(), table);
                }
            )+)+
            for scheme in external::all() {
                if let Some(table) = scheme.section {
                    sections.insert(scheme.name, table);
                }
            }
            sections
        }

        /// The [`Scheme::DEVICE_DEFAULTS`] of scheme `name`, if it has any.
        pub fn scheme_device_defaults(name: &str) -> Option<Cow<'static, str>> {
            $($(
                if name == <$scheme as Scheme>::NAME {
                    return <$scheme as Scheme>::DEVICE_DEFAULTS.map(Cow::Borrowed);
                }
            )+)+
            external::get(name).and_then(|s| s.device_defaults).map(Cow::Owned)
        }

        /// Builds scheme `name` over a fresh device and hands it to `visitor`.
        pub fn build<V: Visitor>(
            name: &str,
            cfg: &SchemeContext,
            layout: &Layout,
            visitor: V,
        ) -> Result<V::Output> {
            $($(
                if name == <$scheme as Scheme>::NAME {
                    return build_scheme::<$scheme, V>(cfg, layout, visitor);
                }
            )+)+
            if let Some(scheme) = external::get(name) {
                return external::build(&scheme, cfg, layout, visitor);
            }
            let names: Vec<String> = scheme_list().into_iter().map(|(n, _)| n).collect();
            Err(Error::Usage(format!(
                "unknown FTL scheme `{name}`; the schemes are: {}",
                names.join(", ")
            )))
        }
    };
}

/// The families of mapping design schemes belong to (tests, benchmarks and reports group
/// schemes by them): the page-level table in DRAM, demand-cached maps on flash, hashed
/// maps, learned maps, log-block hybrids, maps on the host (append-only devices), and
/// `custom` for a registered scheme that names none.
pub const FAMILIES: &[(&str, &str)] = &[
    ("page", "the whole page-level table in DRAM"),
    (
        "demand",
        "the page table on flash, part of it cached in DRAM",
    ),
    ("hashed", "hashed page-level maps"),
    ("learned", "learned (regression) maps"),
    ("log-block", "block-mapped data with page-mapped log blocks"),
    ("app-managed", "the map on the host, an append-only device"),
    ("custom", "a registered scheme of no named family"),
];

/// Everything the registry knows of a scheme ([`scheme_info`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct SchemeInfo {
    pub name: String,
    pub description: String,
    /// One of [`FAMILIES`].
    pub family: String,
    /// Shipped with ftlab: part of the core, or a crate of its workspace that ftlab
    /// registers itself (not registered by a user).
    pub builtin: bool,
    pub append_only: bool,
    /// The defaults of its configuration section.
    pub section: Option<toml::Table>,
    pub device_defaults: Option<String>,
    /// Its own parameters `ftlab advise` sweeps: full key (`dftl.replacement`) -> values.
    pub advise: toml::Table,
}

/// [`Scheme::ADVISE`] (keys of the scheme's own section) with full keys.
fn advise_table(name: &str, text: &str) -> toml::Table {
    let table: toml::Table =
        toml::from_str(text).unwrap_or_else(|e| panic!("scheme {name}'s ADVISE is not TOML: {e}"));
    table
        .into_iter()
        .map(|(k, v)| (format!("{name}.{k}"), v))
        .collect()
}

/// Every scheme's name and description: the built-in ones in registry order, then the
/// registered external ones by name.
pub fn scheme_list() -> Vec<(String, String)> {
    SCHEMES
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .chain(external::all().into_iter().map(|s| (s.name, s.description)))
        .collect()
}

// The registry: one line per scheme, grouped by family ([`FAMILIES`]), in the order
// `ftlab schemes` lists them.
schemes! {
    "page": page::PageFtl, fdp::Fdp;
    "demand":
        demand::dftl::Dftl,
        demand::selective::Selective,
        demand::sftl::Sftl,
        demand::tpftl::Tpftl;
    "hashed": hashed::hpftl::HpFtl, hashed::slimftl::SlimFtl;
    "learned": leaftl::LeaFtl;
    "log-block":
        logblock::block::BlockFtl,
        logblock::bast::Bast,
        logblock::fast::Fast,
        logblock::kast::Kast,
        logblock::fftl::Fftl,
        logblock::kraft::Kraft;
    "app-managed": aftl::Aftl, zns::Zns;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_described() {
        let mut names: Vec<&str> = SCHEMES.iter().map(|(n, _)| *n).collect();
        assert!(SCHEMES.iter().all(|(n, d)| !n.is_empty() && !d.is_empty()));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SCHEMES.len());
        // Every section belongs to a registered scheme.
        assert!(scheme_defaults()
            .keys()
            .all(|k| SCHEMES.iter().any(|(n, _)| n == k)));
        // A scheme without a section adds none; every scheme has one now (the page FTL's
        // holds `stripe_pages`).
        assert!(<NoSection as SchemeSection>::defaults().is_none());
        assert!(scheme_defaults()["page"].contains_key("stripe_pages"));
    }

    #[test]
    fn every_scheme_has_a_known_family_and_advises_its_own_keys() {
        let families: Vec<&str> = FAMILIES.iter().map(|(f, _)| *f).collect();
        for info in scheme_info().iter().filter(|s| s.builtin) {
            assert!(families.contains(&info.family.as_str()), "{}", info.name);
            for (key, values) in &info.advise {
                let own = key.strip_prefix(&format!("{}.", info.name)).unwrap();
                let section = info.section.as_ref().unwrap();
                assert!(section.contains_key(own), "{key}");
                assert!(values.as_array().is_some_and(|v| v.len() >= 2), "{key}");
            }
        }
        let demand: Vec<String> = scheme_info()
            .into_iter()
            .filter(|s| s.family == "demand")
            .map(|s| s.name)
            .collect();
        assert_eq!(demand, ["dftl", "selective", "sftl", "tpftl"]);
    }
}
