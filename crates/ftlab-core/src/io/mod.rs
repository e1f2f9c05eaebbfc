//! Where host requests come from: real block I/O traces ([`trace`]) and synthetic
//! workloads ([`workload`]).

pub mod trace;
pub mod workload;
