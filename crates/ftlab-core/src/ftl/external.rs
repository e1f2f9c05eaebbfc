//! Schemes registered at run time, from outside the core: written in Python (the `ftlab`
//! package's `Scheme` class, bridged by `ftlab-py`) or in another crate linked into the
//! same program. The built-in schemes are generic parameters of the simulation loop (one
//! monomorphised copy each); an external scheme is a `Box<dyn Ftl>` (one dynamic call per
//! page operation) and otherwise goes through the same path: its configuration section
//! is validated like a built-in's (unknown keys refused, the defaults shown by `ftlab
//! config show`), its flash is the same [`Flash`] with the same NAND rules, timing and
//! cause accounting, and `--verify` checks every read it serves against the shadow copy.
//!
//! The registry is process-wide. A name is registered once; registering it again replaces
//! the scheme (a notebook re-running a cell), but a built-in name is refused.

use crate::device::geometry::Layout;
use crate::device::nand::{Flash, Oob};
use crate::error::{Error, Result};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Visitor};
use crate::request::Op;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// Builds an external scheme for a fresh device (its configuration section is
/// `cfg.scheme_section(name)`, already checked against the registered defaults' keys).
pub type Builder = dyn Fn(&SchemeContext, &Layout) -> Result<Box<dyn Ftl>> + Send + Sync;

/// What the registry knows of an external scheme: the facts [`crate::ftl::Scheme`] gives
/// for a built-in one, and its constructor.
#[derive(Clone)]
pub struct ExternalScheme {
    /// The `--ftl` name and the name of its configuration section.
    pub name: String,
    /// One line for `ftlab schemes`.
    pub description: String,
    /// One of [`crate::ftl::FAMILIES`] (`custom` if none fits).
    pub family: String,
    /// Its own parameters `ftlab advise` sweeps: full key -> values.
    pub advise: toml::Table,
    /// Shipped with ftlab (a crate of its workspace that ftlab registers itself), rather
    /// than registered by a user.
    pub builtin: bool,
    /// The defaults of its `[name]` section (`None`: it has no section).
    pub section: Option<toml::Table>,
    /// Whether it refuses overwrites (see [`crate::ftl::Scheme::APPEND_ONLY`]).
    pub append_only: bool,
    /// TOML applied over the preset (see [`crate::ftl::Scheme::DEVICE_DEFAULTS`]).
    pub device_defaults: Option<String>,
    /// OOB bytes per page it stores beyond the header.
    pub extra_oob_bytes: usize,
    pub build: Arc<Builder>,
}

static REGISTRY: RwLock<BTreeMap<String, ExternalScheme>> = RwLock::new(BTreeMap::new());

/// Registers (or replaces) an external scheme. A built-in name, an empty name or one that
/// could not be typed on a command line (`+` separates a host stack) is refused.
pub fn register(scheme: ExternalScheme) -> Result<()> {
    let name = &scheme.name;
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(Error::Usage(format!(
            "cannot register scheme `{name}`: a scheme name is letters, digits, `-` and `_`"
        )));
    }
    if !crate::ftl::FAMILIES
        .iter()
        .any(|(f, _)| *f == scheme.family)
    {
        let names: Vec<&str> = crate::ftl::FAMILIES.iter().map(|(f, _)| *f).collect();
        return Err(Error::Usage(format!(
            "cannot register scheme `{name}`: its family `{}` is not one of {}",
            scheme.family,
            names.join(", ")
        )));
    }
    if crate::ftl::SCHEMES.iter().any(|(n, _)| n == name) {
        return Err(Error::Usage(format!(
            "cannot register scheme `{name}`: a built-in scheme has that name"
        )));
    }
    if let Some(text) = &scheme.device_defaults {
        toml::from_str::<toml::Table>(text)
            .map_err(|e| Error::Usage(format!("scheme `{name}`'s device defaults: {e}")))?;
    }
    registry_mut().insert(name.clone(), scheme);
    Ok(())
}

/// Removes an external scheme; whether it was registered.
pub fn unregister(name: &str) -> bool {
    registry_mut().remove(name).is_some()
}

/// The registered external scheme `name`.
pub fn get(name: &str) -> Option<ExternalScheme> {
    REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(name)
        .cloned()
}

/// Every registered external scheme, by name.
pub fn all() -> Vec<ExternalScheme> {
    REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .cloned()
        .collect()
}

fn registry_mut() -> std::sync::RwLockWriteGuard<'static, BTreeMap<String, ExternalScheme>> {
    // A panic while holding the lock leaves the map itself consistent (single inserts).
    REGISTRY.write().unwrap_or_else(|e| e.into_inner())
}

/// Names of memory components and counters must live as long as the report: each distinct
/// name an external scheme uses is kept once, for the life of the process.
pub fn intern_name(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// Builds external scheme `scheme` over a fresh device and hands it to `visitor`.
pub fn build<V: Visitor>(
    scheme: &ExternalScheme,
    cfg: &SchemeContext,
    layout: &Layout,
    visitor: V,
) -> Result<V::Output> {
    let ftl = (scheme.build)(cfg, layout)?;
    super::check_device_models(&ftl, &scheme.name, cfg)?;
    let flash = Flash::new(&cfg.device, layout, scheme.extra_oob_bytes, cfg.timed)?;
    Ok(visitor.visit(ftl, flash))
}

/// A boxed scheme is a scheme: every method forwards, defaults included, so that a scheme's
/// own `idle`, `background_gc` or `recover` is the one that runs.
impl Ftl for Box<dyn Ftl> {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        (**self).read(lpa, flash)
    }
    #[inline]
    fn begin_request(&mut self, first_lpa: u32, pages: u32, op: Op) {
        (**self).begin_request(first_lpa, pages, op)
    }
    #[inline]
    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        (**self).write(lpa, seq, flash)
    }
    fn write_batch(&mut self, pages: &[(u32, u64)], flash: &mut Flash) -> Result<()> {
        (**self).write_batch(pages, flash)
    }
    fn packs_sectors(&self) -> bool {
        (**self).packs_sectors()
    }
    fn write_sectors(
        &mut self,
        lpa: u32,
        seq: u64,
        first: u32,
        count: u32,
        flash: &mut Flash,
    ) -> Result<()> {
        (**self).write_sectors(lpa, seq, first, count, flash)
    }
    fn read_sectors(
        &mut self,
        lpa: u32,
        flash: &mut Flash,
        out: &mut Vec<crate::ftl::SectorSource>,
    ) -> Result<()> {
        (**self).read_sectors(lpa, flash, out)
    }
    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        (**self).trim(lpa, flash)
    }
    fn memory(&self, out: &mut MemoryBreakdown) {
        (**self).memory(out)
    }
    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        (**self).counters(out)
    }
    fn idle(&mut self, flash: &mut Flash) -> Result<()> {
        (**self).idle(flash)
    }
    fn background_gc(&self) -> bool {
        (**self).background_gc()
    }
    fn slc_cache(&self) -> bool {
        (**self).slc_cache()
    }
    fn faults(&self) -> bool {
        (**self).faults()
    }
    #[inline]
    fn has_idle_work(&mut self) -> bool {
        (**self).has_idle_work()
    }
    fn reset_counters(&mut self) {
        (**self).reset_counters()
    }
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        (**self).recover(found, flash)
    }
    fn finish(&mut self, flash: &mut Flash) -> Result<()> {
        (**self).finish(flash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::page::PageFtl;
    use crate::ftl::Scheme;

    fn boxed_page(name: &str) -> ExternalScheme {
        ExternalScheme {
            name: name.into(),
            description: "the page FTL, boxed".into(),
            family: "page".into(),
            advise: toml::Table::new(),
            builtin: false,
            section: Some(toml::Table::from_iter([(
                "knob".to_string(),
                toml::Value::Integer(3),
            )])),
            append_only: false,
            device_defaults: None,
            extra_oob_bytes: 0,
            build: Arc::new(|cfg, layout| Ok(Box::new(PageFtl::new(cfg, layout)?))),
        }
    }

    #[test]
    fn built_in_and_malformed_names_are_refused() {
        assert!(register(boxed_page("page")).is_err());
        assert!(register(boxed_page("my+ftl")).is_err());
        assert!(register(boxed_page("")).is_err());
    }

    #[test]
    fn a_registered_scheme_is_listed_configured_and_built() {
        register(boxed_page("boxed-page-test")).unwrap();
        assert!(crate::ftl::scheme_list()
            .iter()
            .any(|(n, _)| n == "boxed-page-test"));
        assert_eq!(
            crate::ftl::scheme_defaults()["boxed-page-test"]["knob"].as_integer(),
            Some(3)
        );
        struct Programs;
        impl Visitor for Programs {
            type Output = u64;
            fn visit<F: Ftl>(self, mut ftl: F, mut flash: Flash) -> u64 {
                ftl.write(5, 1, &mut flash).unwrap();
                ftl.write(5, 2, &mut flash).unwrap();
                assert_eq!(ftl.read(5, &mut flash).unwrap().unwrap().seq, 2);
                flash.stats.total_programs()
            }
        }
        let sets: Vec<String> = crate::ftl::logblock::tests::BASE
            .iter()
            .map(|s| s.to_string())
            .chain(["boxed-page-test.knob=4".to_string()])
            .collect();
        let cfg = crate::run::config::resolve(None, None, &[], &sets).unwrap();
        assert_eq!(
            cfg.scheme_context().scheme_section("boxed-page-test")["knob"].as_integer(),
            Some(4)
        );
        let bad = ["boxed-page-test.nob=4".to_string()];
        let err = crate::run::config::resolve(None, None, &[], &bad).unwrap_err();
        assert!(err.to_string().contains("boxed-page-test.nob"), "{err}");
        let layout = cfg.validate().unwrap();
        assert_eq!(
            crate::ftl::build("boxed-page-test", &cfg.scheme_context(), &layout, Programs).unwrap(),
            2
        );
        assert!(unregister("boxed-page-test"));
        assert!(
            crate::ftl::build("boxed-page-test", &cfg.scheme_context(), &layout, Programs).is_err()
        );
    }
}
