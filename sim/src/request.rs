//! The simulator's requests: a slot per call in flight, referred to by slot and generation so that
//! events about a call whose slot was reused are recognised as stale, and which calls the recorder
//! sees.

use lblab_policy::{LoadReport, Nanos, RpcKind, Ticket};

/// A request's slot and generation: events about a request whose slot was reused are stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReqRef {
    pub(crate) slot: u32,
    pub(crate) gen: u32,
}

impl ReqRef {
    pub(crate) fn token(self) -> u64 {
        u64::from(self.slot) | (u64::from(self.gen) << 32)
    }

    pub(crate) fn from_token(token: u64) -> Self {
        ReqRef {
            slot: token as u32,
            gen: (token >> 32) as u32,
        }
    }
}

/// One call in flight (or in its client's queue), in a slot reused after it ends.
#[derive(Debug)]
pub(crate) struct Req {
    pub(crate) gen: u32,
    pub(crate) live: bool,
    pub(crate) client: u32,
    pub(crate) backend: u32,
    pub(crate) kind: RpcKind,
    /// Its method (0 without `[[workload.methods]]`).
    pub(crate) method: u32,
    /// Whether the recorder sees it: every call, or with `workload.measured_method` only the
    /// unary calls of that method.
    pub(crate) measured: bool,
    pub(crate) intended: Nanos,
    pub(crate) sent: Nanos,
    pub(crate) ticket: Option<Ticket>,
    /// Holds a worker or a queue place at its backend.
    pub(crate) at_server: bool,
    /// Waiting in its client's queue for a READY endpoint.
    pub(crate) pending: bool,
    pub(crate) load: Option<LoadReport>,
    /// Closed loop: its slot's failed requests in a row before it.
    pub(crate) failures: u32,
}

/// A request's backend before it is sent.
pub(crate) const NO_BACKEND: u32 = u32::MAX;

/// Whether a call of `kind` and `method` is measured: all are, unless `workload.measured_method`
/// names one method, whose unary calls alone are then.
#[inline]
pub(crate) fn is_measured(measured_method: Option<u32>, kind: RpcKind, method: u32) -> bool {
    match measured_method {
        None => true,
        Some(m) => kind == RpcKind::Unary && method == m,
    }
}
