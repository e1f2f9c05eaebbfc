//! The device model: the geometry and NAND characteristics ([`geometry`]), the NAND
//! array's rules and state ([`nand`]), die and channel timing ([`timing`]) and how a
//! request's time splits into parts on it ([`breakdown`]), free-block pools ([`blocks`]),
//! the flash image a restart scans ([`recovery`]) and the pseudo-SLC mode ([`slc`]) and the
//! media's faults ([`faults`]), bit errors, read retry and wear ([`media`]).

pub mod blocks;
pub mod breakdown;
pub mod faults;
pub mod geometry;
pub mod media;
pub mod nand;
pub mod recovery;
pub mod slc;
pub mod timing;

use faults::FaultConfig;
use geometry::Nand;
use media::MediaConfig;
use serde::Serialize;
use slc::SlcConfig;
use timing::SchedulerConfig;

/// What the device model is built from: the NAND's characteristics, its SLC mode, its faults,
/// its bit errors and the die scheduler's policy (the `[nand]`, `[slc]`, `[faults]`, `[media]`
/// and `[scheduler]` sections; the geometry
/// comes as the derived [`geometry::Layout`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeviceConfig {
    pub nand: Nand,
    pub scheduler: SchedulerConfig,
    pub slc: SlcConfig,
    pub faults: FaultConfig,
    pub media: MediaConfig,
}
