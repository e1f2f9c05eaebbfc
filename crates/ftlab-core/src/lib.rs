//! ftlab core: a simulated SSD (NAND model, timing model, write buffer) and flash
//! translation layers, replaying host requests from traces or synthetic workloads, with
//! verification of every read and metrics by cause. See the repository README for the
//! model's definitions; `api` is the entry point the front ends use.

pub mod api;
pub mod blocks;
pub mod breakdown;
pub mod buffer;
pub mod config;
pub mod device;
pub mod divide;
pub mod error;
pub mod ftl;
pub mod host;
pub mod interface;
pub mod metrics;
pub mod nand;
pub mod recovery;
pub mod request;
pub mod rng;
pub mod sim;
pub mod summary;
pub mod timing;
pub mod trace;
pub mod units;
pub mod workload;

pub use error::{Error, Result};
pub use request::{Op, Request};
