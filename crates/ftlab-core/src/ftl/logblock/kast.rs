//! KAST, K-associative sector translation (Cho, Shin, Eom, DATE 2009; FTL-algorithms spec
//! section 4.3).
//!
//! FAST with the associativity of every random log block bounded by K (`kast.max_associativity`),
//! so that merging one costs at most K full merges and its erase: the worst-case blocking time
//! is bounded. Sequential runs use `kast.sequential_logs` sequential log blocks (as FAST's,
//! switch or partial merge). A random write goes (1) to the log block its logical block was
//! last written to, if that has room (associativity does not grow); (2) else to the log block
//! with room and the lowest associativity below K (free ones first: spreading logical blocks
//! keeps every log block's merge small); (3) else the log block whose merge costs least
//! (fewest logical blocks, then fewest valid pages) is merged and takes the write.
//!
//! DRAM (by bits): FAST's (absolute logical page per log page, valid bitmap, table entry),
//! plus the K logical block numbers of each log block's association set.

use crate::device::geometry::Layout;
use crate::device::nand::{Cause, Flash, Oob};
use crate::error::{Error, Result};
use crate::ftl::logblock::{
    pool_size, Core, CoreOptions, LogMemory, PoolKeys, VictimOrder, Widths,
};
use crate::ftl::settings::SchemeContext;
use crate::ftl::{Ftl, MemoryBreakdown, Scheme};
use crate::units;
use serde::{Deserialize, Serialize};

/// The `[kast]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KastConfig {
    /// Log blocks in the pool, sequential ones included (0: as many as `log_dram_bytes` holds,
    /// else every spare block).
    pub log_blocks: u32,
    /// DRAM the log blocks' maps may use (0: unused).
    #[serde(with = "units::bytes")]
    pub log_dram_bytes: u64,
    /// K: logical blocks a random log block may hold pages of.
    pub max_associativity: u32,
    /// Sequential (SW) log blocks.
    pub sequential_logs: u32,
}

impl Default for KastConfig {
    fn default() -> Self {
        KastConfig {
            log_blocks: 0,
            log_dram_bytes: 0,
            max_associativity: 8,
            sequential_logs: 1,
        }
    }
}

/// Checks an associativity bound K (`key`) against the block size.
pub(crate) fn check_k(key: &str, k: u32, layout: &Layout) -> Result<()> {
    if k == 0 || k > layout.pages_per_block || k > 1024 {
        return Err(Error::config(
            key,
            format!(
                "{k} is not between 1 and the pages per block ({}, at most 1024)",
                layout.pages_per_block
            ),
        ));
    }
    Ok(())
}

/// The random-log write path of the K-associative schemes (KAST, FFTL): the log block the
/// logical block was last written to if it has room, else the one with room and the lowest
/// associativity below K, else `full` decides (FFTL cleans first) and the log block it
/// returns, freed or compacted, takes the write.
pub(crate) fn associative_write(
    core: &mut Core,
    lpa: u32,
    seq: u64,
    flash: &mut Flash,
    full: impl FnOnce(&mut Core, u32, &mut Flash) -> Result<u32>,
) -> Result<()> {
    let (lbn, _) = core.split(lpa);
    if let Some(s) = core.log_of(lbn) {
        if !core.is_sequential(s) && core.slots[s as usize].top < core.ppb {
            return core.append(s, lpa, seq, flash);
        }
    }
    if let Some((s, assoc)) = core.lowest_assoc_with_room() {
        if assoc < core.opts.max_assoc {
            return core.append(s, lpa, seq, flash);
        }
    }
    let s = full(core, lbn, flash)?;
    core.append(s, lpa, seq, flash)
}

/// KAST's victim: the random log block whose merge costs least, merged.
pub(crate) fn merge_least_cost(core: &mut Core, flash: &mut Flash) -> Result<u32> {
    let v = core
        .least_merge_cost()
        .expect("random log blocks without room are in use");
    core.reclaim(v, flash)?;
    Ok(v)
}

pub struct Kast {
    core: Core,
    mem: LogMemory,
    widths: Widths,
}

impl Scheme for Kast {
    const NAME: &'static str = "kast";
    const DESCRIPTION: &'static str =
        "KAST (DATE 2009): FAST with log-block associativity bounded by K, least-cost victim";
    type Section = KastConfig;

    fn new(cfg: &SchemeContext, layout: &Layout) -> Result<Self> {
        let c = Self::section(cfg)?;
        check_k("kast.max_associativity", c.max_associativity, layout)?;
        let widths = Widths::new(layout);
        let mem = LogMemory {
            entry_bits: widths.lpn_bits(),
            lbns_per_log: c.max_associativity as u64,
            extra_bits_per_log: 0,
        };
        let keys = PoolKeys {
            log_blocks: c.log_blocks,
            log_dram_bytes: c.log_dram_bytes,
        };
        let logs = pool_size(
            Self::NAME,
            &keys,
            layout,
            mem.bits_per_log(&widths),
            c.sequential_logs + 1,
        )?;
        let core = Core::new(
            cfg,
            layout,
            CoreOptions {
                logs,
                sequential_logs: c.sequential_logs,
                max_assoc: c.max_associativity,
                victim_order: VictimOrder::Lru,
                fill_cause: Cause::MergePartial,
                fills_are_merge: false,
            },
        )?;
        Ok(Kast { core, mem, widths })
    }
}

impl Ftl for Kast {
    #[inline]
    fn read(&mut self, lpa: u32, flash: &mut Flash) -> Result<Option<Oob>> {
        self.core.read(lpa, flash)
    }

    fn write(&mut self, lpa: u32, seq: u64, flash: &mut Flash) -> Result<()> {
        let core = &mut self.core;
        if core.write_in_place(lpa, seq, flash)? || core.sequential_write(lpa, seq, flash)? {
            return Ok(());
        }
        associative_write(core, lpa, seq, flash, |core, _, flash| {
            merge_least_cost(core, flash)
        })
    }

    fn trim(&mut self, lpa: u32, flash: &mut Flash) -> Result<()> {
        self.core.trim(lpa, flash)
    }

    /// The data-block map and the log-block pool are rebuilt from the OOB scan
    /// ([`Core::recover`]).
    fn recover(&mut self, found: &crate::device::recovery::Found, flash: &mut Flash) -> Result<()> {
        self.core.recover(found, flash)
    }

    fn memory(&self, out: &mut MemoryBreakdown) {
        self.mem
            .breakdown(&self.widths, self.core.logs() as u64, out);
    }

    fn counters(&self, out: &mut Vec<(&'static str, f64)>) {
        self.core.counters(out);
    }

    fn reset_counters(&mut self) {
        self.core.reset_counters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::logblock::tests::{churn, runs, Harness, HasCore};

    impl HasCore for Kast {
        fn core(&self) -> &Core {
            &self.core
        }
    }

    #[test]
    fn associativity_never_exceeds_k_and_bounds_the_merge() {
        for k in [1, 2, 4] {
            let set = format!("kast.max_associativity={k}");
            let mut h = Harness::<Kast>::new(&["kast.log_blocks=5", &set]);
            h.fill();
            churn(&mut h, 400, 11);
            runs(&mut h, 200, 16, 12);
            h.check_all();
            let c = h.counters();
            assert!(c["merges_full"] > 0.0);
            for a in (k + 1)..=16 {
                let name = format!("assoc_at_merge.{a:02}");
                assert_eq!(c[name.as_str()], 0.0, "K = {k}: {c:?}");
            }
        }
    }

    #[test]
    fn k_must_fit_a_block() {
        let cfg =
            crate::run::config::resolve(None, None, &[], &["kast.max_associativity=0".to_string()])
                .unwrap();
        let layout = cfg.validate().unwrap();
        let err = Kast::new(&cfg.scheme_context(), &layout)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("kast.max_associativity"), "{err}");
    }
}
