//! The simulated SSD controller: the host interface ([`interface`]), the write buffer
//! ([`buffer`]), the [`simulator`] that serves host requests through an FTL on the device
//! model, and the [`metrics`] it keeps.

pub mod buffer;
pub mod interface;
pub mod metrics;
pub mod simulator;
