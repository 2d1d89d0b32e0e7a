//! Pickers shared across threads, as a gRPC client holds them: many application threads pick at
//! once and completions arrive on transport threads. What they cost under contention is what a
//! gRPC implementer pays, so the benchmark (`policy/benches/shared_pick.rs`) measures these at 1
//! to 8 threads.
//!
//! - [`RoundRobin`]: one atomic index, as grpc-java's and grpc-go's round_robin pickers.
//! - [`LeastRequest`]: one atomic outstanding count per endpoint, read without a lock and drawn
//!   with replacement (gRFC A48), as grpc-java's least_request picker.
//! - [`crate::peak_ewma::shared::SharedPeakEwma`]: each endpoint's estimate in atomics behind a
//!   sequence lock (reads take no lock and write nothing), its outstanding count an atomic, an
//!   atomic pick clock; a whole [`ConcurrentPolicy`], the one the real client uses.
//! - [`Locked`]: any sans-IO [`Policy`] behind one lock: how tower's balancer is shared (one task
//!   behind a buffer) and, here, weighted_round_robin, whose scheduler is not ported to atomics.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;

use rand::RngCore;

use crate::p2c;
use crate::{
    Connectivity, EndpointId, EndpointView, Nanos, Outcome, Pick, Policy, RpcKind, Status, Ticket,
};

/// A pick's result: the endpoint (an index in `0..endpoints()`) and what its completion needs.
#[derive(Debug)]
pub struct SharedTicket {
    /// The endpoint picked.
    pub endpoint: u32,
    /// A [`Locked`] policy's own ticket.
    inner: Option<Ticket>,
}

impl SharedTicket {
    /// A ticket for `endpoint`, for pickers that need nothing else back.
    pub fn of(endpoint: u32) -> Self {
        SharedTicket {
            endpoint,
            inner: None,
        }
    }

    /// A ticket carrying a policy's own [`Ticket`] for the completion.
    pub fn with(ticket: Ticket) -> Self {
        SharedTicket {
            endpoint: ticket.endpoint().0,
            inner: Some(ticket),
        }
    }

    /// The policy's own ticket, if it carries one.
    pub fn into_inner(self) -> Option<Ticket> {
        self.inner
    }
}

/// A policy whose picks and completions many threads make at once, without a lock over the
/// policy: gRPC's split between an LB policy (its endpoint list and connectivity changes, which
/// the caller serializes) and the picker (which application threads call concurrently). The
/// arguments mean what they mean in [`Policy`]; a real client uses one with
/// [`Concurrently`] for its serialized side.
pub trait ConcurrentPolicy: Send + Sync + std::fmt::Debug {
    /// The policy's gRPC name.
    fn policy_name(&self) -> &'static str;
    /// See [`Policy::set_endpoints`]; callers serialize this with `on_connectivity`.
    fn set_endpoints(&self, now: Nanos, endpoints: &[EndpointId]);
    /// See [`Policy::on_connectivity`]; callers serialize this with `set_endpoints`.
    fn on_connectivity(&self, now: Nanos, endpoint: EndpointId, state: Connectivity);
    /// See [`Policy::pick`]; any thread, at any time.
    fn pick_call(&self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick;
    /// See [`Policy::on_done`]; any thread, at any time.
    fn on_done(&self, now: Nanos, ticket: Ticket, outcome: Outcome);
    /// See [`Policy::endpoint_view`].
    fn endpoint_view(&self, now: Nanos, endpoint: EndpointId) -> Option<EndpointView>;
}

/// A [`ConcurrentPolicy`] as a sans-IO [`Policy`]: every call forwarded, so code that drives a
/// `Policy` (and serializes its calls) drives the concurrent one's serialized side unchanged,
/// while its hot path calls the shared [`ConcurrentPolicy`] directly.
#[derive(Debug, Clone)]
pub struct Concurrently(pub std::sync::Arc<dyn ConcurrentPolicy>);

impl Policy for Concurrently {
    fn name(&self) -> &'static str {
        self.0.policy_name()
    }

    fn set_endpoints(&mut self, now: Nanos, endpoints: &[EndpointId]) {
        self.0.set_endpoints(now, endpoints);
    }

    fn on_connectivity(&mut self, now: Nanos, endpoint: EndpointId, state: Connectivity) {
        self.0.on_connectivity(now, endpoint, state);
    }

    fn pick(&mut self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        self.0.pick_call(now, kind, rng)
    }

    fn on_done(&mut self, now: Nanos, ticket: Ticket, outcome: Outcome) {
        self.0.on_done(now, ticket, outcome);
    }

    fn endpoint_view(&self, now: Nanos, endpoint: EndpointId) -> Option<EndpointView> {
        self.0.endpoint_view(now, endpoint)
    }
}

/// A picker many threads use at once, over a fixed set of READY endpoints: what the benchmark
/// (`policy/benches/shared_pick.rs`) drives.
pub trait SharedPicker: Send + Sync {
    /// The policy's name.
    fn name(&self) -> &'static str;
    /// Picks an endpoint for a unary call started at `now` (ns); `None` if there is none.
    fn pick(&self, now: Nanos, rng: &mut dyn RngCore) -> Option<SharedTicket>;
    /// The call picked with `ticket` ended at `now` after `elapsed` ns, OK or not.
    fn done(&self, ticket: SharedTicket, now: Nanos, elapsed: Nanos, ok: bool);
    /// READY endpoints.
    fn endpoints(&self) -> usize;
    /// Bytes of state the picker keeps per endpoint (its own tables, not the connections').
    fn bytes_per_endpoint(&self) -> usize;
}

/// round_robin: one atomic index over the READY list.
#[derive(Debug)]
pub struct RoundRobin {
    next: AtomicUsize,
    endpoints: u32,
}

impl RoundRobin {
    /// Over `endpoints` READY endpoints, starting at `start` (gRPC starts at a random one).
    pub fn new(endpoints: u32, start: usize) -> Self {
        RoundRobin {
            next: AtomicUsize::new(start),
            endpoints,
        }
    }
}

impl SharedPicker for RoundRobin {
    fn name(&self) -> &'static str {
        "round_robin"
    }

    fn pick(&self, _now: Nanos, _rng: &mut dyn RngCore) -> Option<SharedTicket> {
        let n = self.endpoints as usize;
        if n == 0 {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % n;
        Some(SharedTicket::of(i as u32))
    }

    fn done(&self, _ticket: SharedTicket, _now: Nanos, _elapsed: Nanos, _ok: bool) {}

    fn endpoints(&self) -> usize {
        self.endpoints as usize
    }

    fn bytes_per_endpoint(&self) -> usize {
        0
    }
}

/// least_request_experimental: atomic outstanding counts, `choices` draws with replacement.
#[derive(Debug)]
pub struct LeastRequest {
    pub(crate) outstanding: Box<[AtomicU32]>,
    indices: Box<[u32]>,
    choices: u32,
}

impl LeastRequest {
    /// Over `endpoints` READY endpoints with `choiceCount` `choices`.
    pub fn new(endpoints: u32, choices: u32) -> Self {
        LeastRequest {
            outstanding: (0..endpoints).map(|_| AtomicU32::new(0)).collect(),
            indices: (0..endpoints).collect(),
            choices,
        }
    }
}

impl SharedPicker for LeastRequest {
    fn name(&self) -> &'static str {
        "least_request"
    }

    fn pick(&self, _now: Nanos, rng: &mut dyn RngCore) -> Option<SharedTicket> {
        if self.indices.is_empty() {
            return None;
        }
        let counts = &self.outstanding;
        let i = p2c::pick(
            &self.indices,
            self.choices,
            p2c::Sampling::WithReplacement,
            rng,
            |i| f64::from(counts[i as usize].load(Ordering::Relaxed)),
        );
        counts[i as usize].fetch_add(1, Ordering::Relaxed);
        Some(SharedTicket::of(i))
    }

    fn done(&self, ticket: SharedTicket, _now: Nanos, _elapsed: Nanos, _ok: bool) {
        self.outstanding[ticket.endpoint as usize].fetch_sub(1, Ordering::Relaxed);
    }

    fn endpoints(&self) -> usize {
        self.indices.len()
    }

    fn bytes_per_endpoint(&self) -> usize {
        std::mem::size_of::<AtomicU32>() + std::mem::size_of::<u32>()
    }
}

/// Any sans-IO policy behind one lock.
pub struct Locked {
    inner: Mutex<Box<dyn Policy>>,
    endpoints: usize,
    bytes_per_endpoint: usize,
    name: &'static str,
}

impl std::fmt::Debug for Locked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locked").field("name", &self.name).finish()
    }
}

impl Locked {
    /// `policy` over `endpoints` READY endpoints (`0..endpoints`, set here) behind one lock;
    /// `bytes_per_endpoint` as the caller measured it (the sans-IO policies do not expose their
    /// table sizes).
    pub fn new(mut policy: Box<dyn Policy>, endpoints: u32, bytes_per_endpoint: usize) -> Self {
        let ids: Vec<EndpointId> = (0..endpoints).map(EndpointId).collect();
        policy.set_endpoints(0, &ids);
        for &id in &ids {
            policy.on_connectivity(0, id, Connectivity::Ready);
        }
        Locked {
            name: policy.name(),
            inner: Mutex::new(policy),
            endpoints: ids.len(),
            bytes_per_endpoint,
        }
    }

    fn policy(&self) -> std::sync::MutexGuard<'_, Box<dyn Policy>> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl SharedPicker for Locked {
    fn name(&self) -> &'static str {
        self.name
    }

    fn pick(&self, now: Nanos, rng: &mut dyn RngCore) -> Option<SharedTicket> {
        match self.policy().pick(now, RpcKind::Unary, rng) {
            Pick::Endpoint(t) => Some(SharedTicket {
                endpoint: t.endpoint().0,
                inner: Some(t),
            }),
            Pick::Queue | Pick::Fail => None,
        }
    }

    fn done(&self, ticket: SharedTicket, now: Nanos, elapsed: Nanos, ok: bool) {
        if let Some(t) = ticket.inner {
            let status = if ok { Status::Ok } else { Status::Error };
            self.policy().on_done(now, t, Outcome::new(status, elapsed));
        }
    }

    fn endpoints(&self) -> usize {
        self.endpoints
    }

    fn bytes_per_endpoint(&self) -> usize {
        self.bytes_per_endpoint
    }
}
