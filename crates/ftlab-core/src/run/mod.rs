//! A whole run: the configuration file with every layer's section ([`config`]), planning a
//! trace's replay onto the device ([`replay`]), the run's [`report`] and typed [`summary`],
//! the [`api`] the front ends call, and the stateful [`block_device`] that `ftlab serve`
//! exports.

pub mod api;
pub mod block_device;
pub mod config;
pub mod replay;
pub mod report;
pub mod summary;
