//! ftlab core: a simulated SSD (NAND model, timing model, write buffer) and flash
//! translation layers, replaying host requests from traces or synthetic workloads, with
//! verification of every read and metrics by cause. The documentation site's guide
//! (`docs/guide/run.md`) defines the model; [`run::api`] is the entry point the front ends
//! use.
//!
//! The crate is laid out in layers; each uses only the layers listed before it and owns its
//! own settings (the `[section]`s of a configuration file):
//!
//! - base: [`units`], [`rng`], [`divide`], [`error`], [`request`];
//! - [`io`]: where requests come from: trace readers and synthetic workloads;
//! - [`device`]: the device model: geometry, NAND rules and state, die/channel timing,
//!   free-block pools, the flash image a restart scans;
//! - [`ftl`]: the translation layer: the scheme trait and registry, the shared mechanisms
//!   (`ftl::kit`) and one folder or file per scheme family;
//! - [`controller`]: the simulated controller: host interface, write buffer, the
//!   simulator that serves requests through an FTL on the device model, and its metrics;
//! - [`host`]: the host stack above the device (in-place, ext4-like, F2FS-like, ALFS);
//! - [`run`]: a whole run: the configuration file (every layer's section assembled),
//!   trace replay planning, the report, the typed summary, the API the front ends call and
//!   the stateful block device `ftlab serve` exports.

pub mod controller;
pub mod device;
pub mod divide;
pub mod error;
pub mod ftl;
pub mod host;
pub mod io;
pub mod request;
pub mod rng;
pub mod run;
pub mod units;

pub use error::{Error, Result};
pub use request::{Op, Request};
