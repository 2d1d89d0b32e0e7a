//! The start barrier: a tiny starter that the pods of a deployment reach over TCP, so that a pod
//! that pulled its image slowly does not start its slots late (or skip them).
//!
//! The starter ([`serve`]) knows the pods it waits for, by group and count ([`Group`]: the
//! fleet's backends, the load-generator shards, the collector). Each pod, once running, checks in
//! with its id ([`PodId`], `fleet-3`) and waits ([`join`]). When the last one has checked in, the
//! starter releases them all at once with one common start: the wall-clock start it was given, or
//! [`START_MARGIN_S`] after the last check-in if that is later ([`Plan::margin`]), a whole Unix
//! second. If some have not checked in by its deadline it gives up and tells every waiting pod
//! which are missing; a pod that checks in after the release (or after it gave up) is told so
//! and gets no start. No Kubernetes API is asked anything: the pods need no RBAC, only to reach
//! the starter's Service.
//!
//! The decisions are [`Barrier`]'s, which reads no clock and does no I/O (its caller passes `now`
//! and delivers check-ins and departures); [`serve`] and [`join`] are its thin TCP shells, one
//! line each way ([`wire`]).

mod core;
mod error;
mod id;
mod net;
pub mod wire;

pub use self::core::{Answer, Barrier, Conn, Outcome, Plan};
pub use error::BarrierError;
pub use id::{list, Group, PodId};
pub use net::{join, serve};

/// The port the starter listens on.
pub const BARRIER_PORT: u16 = 50050;
/// Seconds between the last check-in and the common start, at least: enough for the fleet to
/// listen [`crate::FLEET_LEAD_S`] before the start (so that the headless Service's name resolves
/// to it when the load generators connect), and 10 s for the release to reach every pod.
pub const START_MARGIN_S: u64 = crate::FLEET_LEAD_S + 10;
/// Seconds after the wall-clock start until which the starter waits for pods to check in before
/// it gives up, naming the missing ones.
pub const BARRIER_WAIT_S: u64 = 600;
/// Seconds a pod waits for the starter's answer beyond the starter's own deadline, so that it
/// hears the starter give up rather than giving up first.
pub const JOIN_SLACK_S: u64 = 30;

#[cfg(test)]
mod tests;
