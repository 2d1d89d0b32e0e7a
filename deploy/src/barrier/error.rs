//! What goes wrong at the start barrier, for the starter and for a pod that checks in.

use super::{list, PodId};

/// What goes wrong at the start barrier.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BarrierError {
    /// The starter's deadline passed before every pod had checked in.
    #[error(
        "the start barrier gave up: {} of {expected} pods had not checked in: {}",
        missing.len(),
        list(missing)
    )]
    GaveUp {
        /// The pods that had not checked in.
        missing: Vec<PodId>,
        /// How many pods it waited for.
        expected: usize,
    },
    /// A pod checked in after the starter had released the others.
    #[error(
        "{id} checked in after the start barrier had released the other pods (their slots start \
         at Unix time {start}): a pod that arrives late does not join a run under way"
    )]
    Late {
        /// The pod.
        id: PodId,
        /// The start the others were given, Unix seconds.
        start: u64,
    },
    /// A pod checked in that the starter does not wait for.
    #[error("the start barrier at {addr} does not wait for {id} (it waits for {expected})")]
    Unknown {
        /// The starter's address.
        addr: String,
        /// The pod.
        id: PodId,
        /// The groups it waits for, as it said them.
        expected: String,
    },
    /// No starter answered a pod by its deadline.
    #[error(
        "no start barrier answered at {addr} by Unix time {until} (last: {last}); is its pod \
         running and its Service there?"
    )]
    NoAnswer {
        /// The starter's address.
        addr: String,
        /// The pod's deadline, Unix seconds.
        until: u64,
        /// What the last attempt met.
        last: String,
    },
    /// The other side does not speak the barrier's protocol.
    #[error("{peer} said {line:?}, which is not the start barrier's protocol")]
    Protocol {
        /// Who said it.
        peer: String,
        /// What it said (at most a line's start).
        line: String,
    },
    /// The starter refused a check-in line.
    #[error("the start barrier at {peer} refused the check-in: {reason}")]
    Refused {
        /// The starter's address.
        peer: String,
        /// Why, as it said.
        reason: String,
    },
    /// Not a pod's id.
    #[error("{0:?} is not a pod's id: give <group>-<index>, e.g. fleet-3")]
    Id(String),
    /// Not a group of pods.
    #[error(
        "{0:?} is not a group of pods: give <group>=<count>, e.g. fleet=20 (a lower-case name, \
         1 to 100000 pods)"
    )]
    Group(String),
    /// A group named twice, or no group at all.
    #[error("the start barrier's groups {0}: give each group once, and at least one")]
    Groups(String),
    /// The starter's socket failed.
    #[error("the start barrier's socket: {0}")]
    Io(#[from] std::io::Error),
}
