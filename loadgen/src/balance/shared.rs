//! The state a balancer's service, its connection tasks and its updaters share: endpoint
//! slots, connectivity, the policy behind its lock, ticket completion.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use http::Uri;
use hyper::client::conn::http2::SendRequest;
use lblab_policy::shared::ConcurrentPolicy;
use lblab_policy::{Connectivity, EndpointId, Nanos, Outcome, Policy, Status, Ticket};
use lblab_wire::Clock;
use rand::rngs::SmallRng;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::options::BalancerOptions;
use super::outages::Outages;

pub(super) struct Core {
    pub(super) policy: Box<dyn Policy>,
    pub(super) rng: SmallRng,
}

/// One endpoint's connection, if it has one.
#[derive(Clone)]
pub(super) struct Conn {
    pub(super) generation: u64,
    pub(super) send: SendRequest<tonic::body::Body>,
    /// `scheme://authority` of the endpoint, for the request URI.
    pub(super) scheme: http::uri::Scheme,
    pub(super) authority: http::uri::Authority,
}

pub(super) struct Slot {
    pub(super) uri: Uri,
    /// Its connection task while the endpoint is in the list; `None` once it was removed.
    pub(super) task: Mutex<Option<AbortHandle>>,
    /// True while the endpoint is in the policy's list: only then are its changes reported.
    pub(super) active: std::sync::atomic::AtomicBool,
    pub(super) channel: Mutex<Option<Conn>>,
    pub(super) generation: AtomicU64,
    /// The latest connection generation that served a call (a response came back on it): a
    /// connection that ends without having served one is reconnected after a backoff.
    pub(super) served: AtomicU64,
    /// Notified when a connection ends; `broken_generation` says which one did (a connection
    /// that ends while its attempt still waits for the server's preface leaves a notification
    /// that concerns no later connection).
    pub(super) broken: Notify,
    pub(super) broken_generation: AtomicU64,
    pub(super) state: Mutex<Connectivity>,
    pub(super) outages: Mutex<Outages>,
    /// A probe ([`Policy::probe_interval`]) to the endpoint is pending.
    pub(super) probing: std::sync::atomic::AtomicBool,
}

pub(super) struct Shared {
    pub(super) clock: Clock,
    /// The policy for everything that is serialized (endpoint list, connectivity, timers) and,
    /// without a concurrent form, for picks and completions too.
    pub(super) core: Mutex<Core>,
    /// The policy's concurrent form, if it has one: picks and completions call it without the
    /// core's lock (the core holds the same policy as a [`Concurrently`]).
    pub(super) concurrent: Option<Arc<dyn ConcurrentPolicy>>,
    /// Every endpoint ever in the list, by [`EndpointId`]: ids are never reused, so an endpoint
    /// that leaves and comes back keeps its id.
    pub(super) slots: RwLock<Vec<Arc<Slot>>>,
    pub(super) options: BalancerOptions,
    /// Notified on every connectivity change, for calls waiting on a "queue" pick.
    pub(super) changed: Notify,
    /// Calls whose answer carried an ORCA load report.
    pub(super) load_reports: AtomicU64,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub(super) fn core(&self) -> MutexGuard<'_, Core> {
        lock(&self.core)
    }

    /// Runs the policy's timer if it is due. Call with the core locked.
    pub(super) fn timers(core: &mut Core, now: Nanos) {
        if core.policy.next_timer().is_some_and(|t| t <= now) {
            let Core { policy, rng } = core;
            policy.on_timer(now, rng);
        }
    }

    pub(super) fn slot(&self, idx: usize) -> Option<Arc<Slot>> {
        self.slots
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(idx)
            .cloned()
    }

    pub(super) fn set_state(&self, idx: usize, state: Connectivity) {
        let Some(slot) = self.slot(idx) else { return };
        {
            let mut s = lock(&slot.state);
            // Sticky TRANSIENT_FAILURE: reconnect attempts after a failure are not reported.
            if *s == state
                || (*s == Connectivity::TransientFailure && state == Connectivity::Connecting)
            {
                return;
            }
            *s = state;
        }
        let now = self.clock.now();
        {
            let mut core = self.core();
            // Checked with the core locked: a removed endpoint's last change never reaches the
            // policy after its removal.
            if !slot.active.load(Ordering::Acquire) {
                return;
            }
            core.policy
                .on_connectivity(now, EndpointId(idx as u32), state);
            Self::timers(&mut core, now);
        }
        self.changed.notify_waiters();
    }

    pub(super) fn channel(&self, idx: usize) -> Option<Conn> {
        lock(&self.slot(idx)?.channel).clone()
    }

    /// Records that connection `generation` of endpoint `idx` served a call.
    pub(super) fn mark_served(&self, idx: usize, generation: u64) {
        if let Some(slot) = self.slot(idx) {
            slot.served.fetch_max(generation, Ordering::AcqRel);
        }
    }

    pub(super) fn mark_broken(&self, idx: usize, generation: u64, why: Option<String>) {
        let Some(slot) = self.slot(idx) else { return };
        if slot.generation.load(Ordering::Acquire) == generation {
            lock(&slot.outages).begin(self.clock.now(), why, false);
            slot.broken_generation.store(generation, Ordering::Release);
            slot.broken.notify_one();
        }
    }

    pub(super) fn complete(
        &self,
        ticket: Ticket,
        started: Nanos,
        status: Status,
        load: Option<lblab_policy::LoadReport>,
    ) {
        let now = self.clock.now();
        if load.is_some() {
            self.load_reports.fetch_add(1, Ordering::Relaxed);
        }
        let outcome = Outcome {
            status,
            elapsed: now.saturating_sub(started),
            load,
        };
        if let Some(policy) = &self.concurrent {
            policy.on_done(now, ticket, outcome);
            return;
        }
        let mut core = self.core();
        core.policy.on_done(now, ticket, outcome);
        Self::timers(&mut core, now);
    }
}

impl Shared {
    pub(super) fn all_slots(&self) -> Vec<Arc<Slot>> {
        self.slots.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
