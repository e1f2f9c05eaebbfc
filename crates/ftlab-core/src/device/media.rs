//! The media's raw bit errors, ECC and read retry, and its wear (the `[media]` section).
//! Off by default (`media.error_model = "off"`): then the flash model keeps no media state
//! and a read costs what it always did.
//!
//! # The error model
//!
//! The raw bit error rate (RBER) of a page is the power-law fit of wear, retention and read
//! disturb of Mielke et al., "Reliability of Solid-State Drives Based on NAND Flash
//! Memory", Proceedings of the IEEE 105(9), 2017:
//!
//! ```text
//! RBER = epsilon + alpha * PE^k                 (wear)
//!                + beta  * PE^m * t^n           (retention, t in days)
//!                + gamma * PE^p * reads^q       (read disturb)
//! ```
//!
//! with `PE` the block's program/erase cycles, `t` the time since the block was first
//! programmed after its erase and `reads` the reads of the block since that erase. The
//! default coefficients are the fit for a 2y-nm MLC chip that SimpleSSD 2.1 uses for its
//! read-reclaim model (`ftl/read_reclaim/abstract_read_reclaim.cc`); every coefficient is a
//! key, so that another fit (a TLC chip's) can be given.
//!
//! Choices the fit leaves open, made here:
//!
//! - Retention and read disturb are counted per block, as a controller's block table keeps
//!   them: a page's age is its block's (the block's first program after its erase, the
//!   oldest data it holds), conservative for the pages programmed later.
//! - A read decodes when the *expected* errors of a codeword (RBER x codeword bits) are
//!   within the ECC's correction capability (`ecc_correctable_bits`): the model is the
//!   expected value, not a draw, so that retry counts follow the formula exactly.
//! - Read retry: each extra sensing step re-reads the page with shifted read reference
//!   voltages, which recovers the errors that come from shifted threshold voltages
//!   (retention loss and read disturb) but not the wear floor: step `s` leaves
//!   `retry_residual^s` of the retention and disturb terms
//!   (`RBER_s = epsilon + alpha PE^k + (retention + disturb) x retry_residual^s`). A read
//!   takes the first step `s` (0: the first read) whose expected errors decode; beyond
//!   `retry_steps` the read is uncorrectable: counted and reported, never served as data.
//!   Each extra step costs one more tR and transfer of the page on its die and channel
//!   (for a run of page copies out of one block, before the run).
//! - Process variation (`block_variation`): each block's RBER is scaled by a factor drawn
//!   once from a log-normal distribution (`exp(sigma z)`, `z` standard normal) seeded by
//!   `media.seed`; 0 (the default) gives every block the fit's RBER.

use crate::error::{Error, Result};
use crate::rng::Rng;
use crate::units;
use serde::{Deserialize, Serialize};

/// The longest retry table the model takes (`media.retry_steps`): vendors' read-retry
/// tables hold from 5 to about 15 voltage sets.
pub const MAX_RETRY_STEPS: u32 = 15;

/// One day, in nanoseconds: the fit's unit of retention time.
const DAY_NS: f64 = 86_400e9;

/// How the shared page allocator spreads erases over the blocks (`ftl::kit::alloc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WearLeveling {
    /// Free blocks are handed out oldest-freed first (FIFO), which spreads the erases of
    /// the blocks that cycle but leaves blocks of cold data where they are.
    Off,
    /// Dynamic: a unit opening a block for host or translation writes takes its least-worn
    /// free block (fewest erases; ties to the oldest freed), and for relocated data (cold by
    /// the time GC moves it) its most-worn.
    Dynamic,
    /// Dynamic, and static: after a unit reclaims a block, if the erase counts of its good
    /// blocks differ by more than `static_wl_gap`, the least-worn block holding data has
    /// its valid pages moved (cause `wear_level`) and is erased, so that its cycles go to
    /// hot data.
    Static,
}

/// Which raw bit error model the media follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorModel {
    /// No bit errors: every read decodes at once, no media state is kept.
    Off,
    /// The power-law fit of wear, retention and read disturb (see the module).
    PowerLaw,
}

/// The `[media]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MediaConfig {
    /// `off` or `power-law`.
    pub error_model: ErrorModel,
    /// Seed of the per-block process variation.
    pub seed: u64,
    /// Standard deviation of the natural logarithm of each block's RBER factor (0: none).
    pub block_variation: f64,
    /// The fit's coefficients (see the module): the wear floor `epsilon + alpha PE^k`,
    /// retention `beta PE^m t^n` (t in days), read disturb `gamma PE^p reads^q`.
    pub rber_epsilon: f64,
    pub rber_alpha: f64,
    pub rber_k: f64,
    pub rber_beta: f64,
    pub rber_m: f64,
    pub rber_n: f64,
    pub rber_gamma: f64,
    pub rber_p: f64,
    pub rber_q: f64,
    /// Bytes an ECC codeword protects.
    #[serde(with = "units::bytes")]
    pub ecc_codeword_bytes: u64,
    /// Bit errors per codeword the ECC corrects.
    pub ecc_correctable_bits: u32,
    /// Extra sensing steps of the read-retry table, at most [`MAX_RETRY_STEPS`].
    pub retry_steps: u32,
    /// The share of the retention and read-disturb errors left after each retry step.
    pub retry_residual: f64,
    /// P/E cycles every block has already been through when the run starts (a device at
    /// the middle or end of its life), preconditioning's erases adding to them.
    pub initial_pe_cycles: u32,
    /// P/E cycles the NAND is rated for: the wear report's "percentage used" is the
    /// blocks' mean erase count against it, as NVMe's SMART log reports it.
    pub rated_pe_cycles: u32,
    /// How the shared page allocator levels wear: `off`, `dynamic` or `static`.
    pub wear_leveling: WearLeveling,
    /// Static wear levelling moves a block's data when the erase counts of a unit's good
    /// blocks differ by more than this many cycles.
    pub static_wl_gap: u32,
    /// The FTL refreshes (re-writes elsewhere, then erases) every block whose data is older
    /// than this, in idle time (0: never). Needs the error model (its clock).
    #[serde(with = "units::nanos")]
    pub refresh_after_ns: u64,
    /// Simulated time that passes between preconditioning and the measured run (the data
    /// preconditioning wrote ages by it): `ftlab run --age`.
    #[serde(with = "units::nanos")]
    pub age_ns: u64,
}

impl Default for MediaConfig {
    fn default() -> Self {
        MediaConfig {
            error_model: ErrorModel::Off,
            seed: 1,
            block_variation: 0.0,
            // 2y-nm MLC (see the module).
            rber_epsilon: 8.34e-5,
            rber_alpha: 3.30e-11,
            rber_k: 1.71,
            rber_beta: 5.56e-19,
            rber_m: 2.49,
            rber_n: 3.33,
            rber_gamma: 6.26e-13,
            rber_p: 1.76,
            rber_q: 0.47,
            // A BCH code correcting 40 bits per 1 KiB, as 2y-nm MLC controllers used.
            ecc_codeword_bytes: 1024,
            ecc_correctable_bits: 40,
            retry_steps: 8,
            retry_residual: 0.5,
            initial_pe_cycles: 0,
            // The endurance commonly rated for 2y-nm MLC.
            rated_pe_cycles: 3000,
            wear_leveling: WearLeveling::Off,
            static_wl_gap: 100,
            refresh_after_ns: 0,
            age_ns: 0,
        }
    }
}

impl MediaConfig {
    /// Whether the error model is on (the flash model then keeps media state).
    pub fn enabled(&self) -> bool {
        self.error_model != ErrorModel::Off
    }

    /// Whether the run reports `metrics.media`: the error model or wear levelling is on.
    pub fn reported(&self) -> bool {
        self.enabled() || self.wear_leveling != WearLeveling::Off
    }

    /// Checks the section; `page_size` is the flash page's, in bytes.
    pub fn validate(&self, page_size: u64) -> Result<()> {
        let coefficients = [
            ("media.rber_epsilon", self.rber_epsilon),
            ("media.rber_alpha", self.rber_alpha),
            ("media.rber_k", self.rber_k),
            ("media.rber_beta", self.rber_beta),
            ("media.rber_m", self.rber_m),
            ("media.rber_n", self.rber_n),
            ("media.rber_gamma", self.rber_gamma),
            ("media.rber_p", self.rber_p),
            ("media.rber_q", self.rber_q),
            ("media.block_variation", self.block_variation),
        ];
        for (key, v) in coefficients {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::config(
                    key,
                    format!("{v} is not a finite non-negative number"),
                ));
            }
        }
        // (The codeword is the error model's: a device of small pages without the model
        // keeps the default.)
        let model_on = self.error_model != ErrorModel::Off;
        if self.ecc_codeword_bytes == 0 || (model_on && self.ecc_codeword_bytes > page_size) {
            return Err(Error::config(
                "media.ecc_codeword_bytes",
                format!(
                    "{} must be positive and at most the page size ({page_size} bytes)",
                    self.ecc_codeword_bytes
                ),
            ));
        }
        if self.retry_steps > MAX_RETRY_STEPS {
            return Err(Error::config(
                "media.retry_steps",
                format!("{} is more than {MAX_RETRY_STEPS}", self.retry_steps),
            ));
        }
        if !(0.0..1.0).contains(&self.retry_residual) {
            return Err(Error::config(
                "media.retry_residual",
                format!("{} is not a fraction in [0, 1)", self.retry_residual),
            ));
        }
        if self.age_ns > 0 && !self.enabled() {
            return Err(Error::config(
                "media.age_ns",
                "ages the data only for the error model: set media.error_model = \"power-law\" too",
            ));
        }
        if self.refresh_after_ns > 0 && !self.enabled() {
            return Err(Error::config(
                "media.refresh_after_ns",
                "refreshes by the error model's clock: set media.error_model = \"power-law\" too",
            ));
        }
        if self.static_wl_gap == 0 {
            return Err(Error::config("media.static_wl_gap", "must be positive"));
        }
        if self.rated_pe_cycles == 0 {
            return Err(Error::config("media.rated_pe_cycles", "must be positive"));
        }
        Ok(())
    }

    /// The two parts of the RBER of a block with `pe` P/E cycles, whose data is
    /// `retention_days` old and which has been read `reads` times since its erase: the
    /// wear floor that read retry cannot lower, and the retention and read-disturb part it
    /// can (see the module).
    pub fn rber(&self, pe: u32, retention_days: f64, reads: u32) -> (f64, f64) {
        let pe = pe as f64;
        let floor = self.rber_epsilon + self.rber_alpha * pe.powf(self.rber_k);
        let retention = self.rber_beta * pe.powf(self.rber_m) * retention_days.powf(self.rber_n);
        let disturb = self.rber_gamma * pe.powf(self.rber_p) * (reads as f64).powf(self.rber_q);
        (floor, retention + disturb)
    }

    /// The extra sensing steps a read of a page of RBER parts `(floor, shift)` takes before
    /// it decodes (0: the first read decodes), or `None` if even the last step leaves more
    /// errors than the ECC corrects (an uncorrectable read).
    pub fn retry_steps_for(&self, floor: f64, shift: f64) -> Option<u32> {
        let bits = (self.ecc_codeword_bytes * 8) as f64;
        let limit = self.ecc_correctable_bits as f64;
        let mut shift = shift;
        for step in 0..=self.retry_steps {
            if (floor + shift) * bits <= limit {
                return Some(step);
            }
            shift *= self.retry_residual;
        }
        None
    }
}

/// What the error model counted (part of [`crate::device::nand::FlashStats`], reset with
/// it after preconditioning).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MediaStats {
    /// Page reads decoded, by the extra sensing steps each took (index 0: none), every
    /// cause together, page copies of garbage collection and merges included.
    pub retry_histogram: [u64; MAX_RETRY_STEPS as usize + 1],
    /// Extra sensing steps of all reads (the sum of the histogram's steps).
    pub read_retries: u64,
    /// Reads (by [`crate::device::nand::Flash::read`]: host, translation, ...) and page
    /// copies (garbage collection, merges, folding) whose last retry step still failed.
    pub uncorrectable_reads: u64,
    pub uncorrectable_copies: u64,
}

/// The flash model's media state: per block, when its data was first programmed and how
/// often it was read since its erase; and the simulated clock that ages the data.
#[derive(Clone, Debug)]
pub struct MediaState {
    pub cfg: MediaConfig,
    /// Simulated time (ns) of each block's first program since its erase.
    first_program_ns: Vec<u64>,
    /// Reads (and copies out) of each block since its erase.
    reads: Vec<u32>,
    /// Each block's RBER factor (empty: no process variation).
    factor: Vec<f32>,
    /// The simulated time of the timing model's zero: preconditioning, `age_ns` and the
    /// measured runs before the current one.
    epoch_ns: u64,
    /// The current request's time in a run without the timing model.
    untimed_ns: u64,
}

impl MediaState {
    /// The state of a fresh device of `blocks` blocks.
    pub fn new(cfg: &MediaConfig, blocks: usize) -> MediaState {
        let factor = if cfg.block_variation > 0.0 {
            let mut rng = Rng::new(cfg.seed);
            (0..blocks)
                .map(|_| {
                    // Box-Muller: 1 - u is in (0, 1], so the logarithm is finite.
                    let (u1, u2) = (1.0 - rng.unit_f64(), rng.unit_f64());
                    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    (cfg.block_variation * z).exp() as f32
                })
                .collect()
        } else {
            Vec::new()
        };
        MediaState {
            cfg: cfg.clone(),
            first_program_ns: vec![0; blocks],
            reads: vec![0; blocks],
            factor,
            epoch_ns: 0,
            untimed_ns: 0,
        }
    }

    /// Simulated time now, `cursor` being the timing model's (None without it).
    #[inline]
    pub fn now(&self, cursor: Option<u64>) -> u64 {
        self.epoch_ns + cursor.unwrap_or(self.untimed_ns)
    }

    /// A run without the timing model: the current request arrived at `time_ns`.
    #[inline]
    pub fn set_untimed_now(&mut self, time_ns: u64) {
        self.untimed_ns = time_ns;
    }

    /// The timing model's clock goes back to 0 (or stops): simulated time goes on from `now`.
    pub fn rebase(&mut self, now: u64) {
        self.epoch_ns = now;
        self.untimed_ns = 0;
    }

    /// Simulated time passes with the device idle (`--age`).
    pub fn advance(&mut self, ns: u64) {
        self.epoch_ns = self.epoch_ns.saturating_add(ns);
    }

    /// Block `block` took its first program since its erase at `now`.
    #[inline]
    pub fn opened(&mut self, block: u32, now: u64) {
        self.first_program_ns[block as usize] = now;
    }

    /// Block `block` was erased.
    #[inline]
    pub fn erased(&mut self, block: u32) {
        self.reads[block as usize] = 0;
    }

    /// The extra sensing steps `reads` reads of block `block` (of `pe` P/E cycles) take
    /// at `now` (None: uncorrectable), counted in `stats`; the block's read-disturb count
    /// grows by `reads` afterwards.
    pub fn read(
        &mut self,
        block: u32,
        pe: u32,
        now: u64,
        reads: u32,
        stats: &mut MediaStats,
    ) -> Option<u32> {
        let b = block as usize;
        let days = now.saturating_sub(self.first_program_ns[b]) as f64 / DAY_NS;
        let (mut floor, mut shift) = self.cfg.rber(pe, days, self.reads[b]);
        if let Some(&f) = self.factor.get(b) {
            floor *= f as f64;
            shift *= f as f64;
        }
        self.reads[b] = self.reads[b].saturating_add(reads);
        let steps = self.cfg.retry_steps_for(floor, shift);
        if let Some(s) = steps {
            stats.retry_histogram[s as usize] += reads as u64;
            stats.read_retries += s as u64 * reads as u64;
        }
        steps
    }

    /// The raw bit error rate of block `block`'s data at `now`, before read retry (`pe`
    /// its P/E cycles): what its next read would meet.
    pub fn block_rber(&self, block: u32, pe: u32, now: u64) -> f64 {
        let b = block as usize;
        let days = now.saturating_sub(self.first_program_ns[b]) as f64 / DAY_NS;
        let (floor, shift) = self.cfg.rber(pe, days, self.reads[b]);
        let factor = self.factor.get(b).map_or(1.0, |&f| f as f64);
        (floor + shift) * factor
    }

    /// Simulated time (ns) of block `block`'s first program since its erase.
    pub fn first_program_ns(&self, block: u32) -> u64 {
        self.first_program_ns[block as usize]
    }

    /// Reads of block `block` since its erase (its read-disturb count).
    pub fn reads_since_erase(&self, block: u32) -> u32 {
        self.reads[block as usize]
    }
}
