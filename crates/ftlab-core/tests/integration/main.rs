//! The core's integration tests, one binary (one link of the core) for them all: a module
//! per subject. Run one with `cargo test -p ftlab-core --test integration <module>::`.

mod common;

mod aftl;
mod amf;
mod breakdown;
mod bulk_moves;
mod config_errors;
mod demand;
mod demand_traces;
mod destage;
mod device_model;
mod faults;
mod fdp;
mod gc_scheduling;
mod hashed_background_gc;
mod hashed_ftl;
mod host_device;
mod layers;
mod leaftl;
mod leaftl_traces;
mod logblock;
mod media;
mod nand_rules;
mod native_scheme;
mod page_ftl;
mod recovery;
mod slc_cache;
mod timing;
mod trace_fuzz;
mod traces;
mod verification;
mod zns;
