//! The device's command interface (`[device]`, `device.interface`): what the host may ask of
//! the SSD. `block` is the conventional logical block interface (any page written at any
//! time, the FTL's own GC makes room); `zns` is NVMe Zoned Namespaces (the `zns` scheme,
//! [`crate::ftl::zns`]); `fdp` is NVMe Flexible Data Placement (the `fdp` scheme,
//! [`crate::ftl::fdp`]). Each scheme serves one interface ([`crate::ftl::Scheme::INTERFACE`]):
//! the run refuses a scheme under another interface, and a zoned scheme sets its own
//! interface by default, so `--ftl zns` alone is a ZNS run.

use serde::{Deserialize, Serialize};

/// The command set the device exposes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Interface {
    /// The logical block interface: reads, writes and trims of any page.
    #[default]
    Block,
    /// NVMe Zoned Namespaces: sequential-write zones with a write pointer, zone append,
    /// reset and finish, open and active zone limits; no device GC.
    Zns,
    /// NVMe Flexible Data Placement: block writes tagged with a placement identifier, each
    /// reclaim-unit handle's data in reclaim units of its own, device GC within them.
    Fdp,
}

impl Interface {
    pub fn name(self) -> &'static str {
        match self {
            Interface::Block => "block",
            Interface::Zns => "zns",
            Interface::Fdp => "fdp",
        }
    }
}

/// The `[device]` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeviceSection {
    /// `block`, `zns` or `fdp`.
    pub interface: Interface,
}
