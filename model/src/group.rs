//! `[[fleet]]`: a group of identical backends, as written in a scenario file.
//!
//! On its own floor, below both the scenario and the faults: a fault's targets are checked
//! against the groups, and the scenario holds them; `scenario::GroupSpec` re-exports it.

use serde::{Deserialize, Serialize};

use crate::dist::DistSpec;
use crate::units::Dur;

/// `[[fleet]]`: a group of identical backends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// Group name, used in fault targets and backend names (`name/index`).
    pub name: String,
    /// Backends in the group.
    #[serde(default = "one_backend")]
    pub count: u32,
    /// Requests each backend serves in parallel (default 4).
    #[serde(default = "default_workers")]
    pub workers: u32,
    /// Requests that may wait for a worker (default 1000).
    #[serde(default = "default_queue")]
    pub queue_limit: u32,
    /// Nominal service time.
    pub service_time: DistSpec,
    /// Network round trip between clients and this group (default 0).
    #[serde(default)]
    pub network_rtt: Dur,
    /// Zone label, for reports (default "local").
    #[serde(default = "default_zone")]
    pub zone: String,
}

fn default_workers() -> u32 {
    4
}

fn default_queue() -> u32 {
    1000
}

fn default_zone() -> String {
    "local".into()
}

fn one_backend() -> u32 {
    1
}
