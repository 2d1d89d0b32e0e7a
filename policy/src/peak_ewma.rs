//! `peak_ewma_experimental`: the proposed latency-aware policy (Finagle's and linkerd-tower's
//! algorithm with gRPC's P2C picker).
//!
//! Per endpoint a [`PeakEwma`] of client-observed RTT (unary RPCs only) and a count of outstanding
//! unary RPCs; `cost = decayed_rtt × (outstanding + 1)`; per pick, sample `choiceCount` READY
//! endpoints and keep the cheapest. The estimate decays toward 0 with time constant `decayTime`
//! also while the endpoint is not picked, so a backend that was slow becomes cheap again, is probed,
//! and recovers its share once it answers fast. The policy has no ejection of its own: a backend
//! that fails fast looks fast, so wrap it in `outlier_detection_experimental`.
//!
//! Two variations of the references are switchable for ablations through [`Ablation`] (service
//! config field `lblabAblation`, an lblab extension): decay-on-read as tower and Finagle do it, and
//! sampling distinct endpoints as tower, Finagle and Envoy do.

use rand::RngCore;

use crate::endpoints::{Endpoints, Unready};
use crate::estimator::{DecayMode, PeakEwma};
use crate::p2c::{self, Sampling};
use crate::{
    Clock, Connectivity, EndpointId, EndpointView, Nanos, Outcome, Pick, Policy, RpcKind, Status,
    Ticket, NANOS_PER_SEC,
};

/// Switches between the proposal's semantics (the default) and the references' variations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ablation {
    /// How the estimate decays: the proposal's time-weighted blend, or tower's decay-on-read.
    pub decay: DecayMode,
    /// How candidates are drawn: with replacement (A48), or distinct (tower, Finagle, Envoy).
    pub sampling: Sampling,
}

/// Configuration of `peak_ewma_experimental`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Endpoints sampled per pick: default 2; below 2 is rejected; above 10 is clamped to 10.
    pub choice_count: u32,
    /// Time constant of the decay, ns: default 10 s; must be > 0.
    pub decay_time: Nanos,
    /// RTT assumed for an endpoint that just became READY, ns: default 30 ms; must be > 0.
    pub default_rtt: Nanos,
    /// lblab-only: the reference variations, for ablations.
    pub ablation: Ablation,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            choice_count: 2,
            decay_time: 10 * NANOS_PER_SEC,
            default_rtt: 30_000_000,
            ablation: Ablation::default(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Load {
    rtt: PeakEwma,
    outstanding: u32,
}

/// The `peak_ewma_experimental` policy.
#[derive(Debug)]
pub struct PeakEwmaPolicy {
    config: Config,
    /// `1 / decayTime` in 1/ns.
    inv_tau: f64,
    endpoints: Endpoints<Load>,
    clock: Clock,
}

impl PeakEwmaPolicy {
    /// A policy with no endpoints.
    pub fn new(config: Config) -> Self {
        PeakEwmaPolicy {
            inv_tau: 1.0 / config.decay_time.max(1) as f64,
            config,
            endpoints: Endpoints::default(),
            clock: Clock::default(),
        }
    }

    fn fresh(&self, now: Nanos) -> Load {
        Load {
            rtt: PeakEwma::new(self.config.default_rtt, now),
            outstanding: 0,
        }
    }
}

impl Policy for PeakEwmaPolicy {
    fn name(&self) -> &'static str {
        "peak_ewma_experimental"
    }

    fn set_endpoints(&mut self, now: Nanos, endpoints: &[EndpointId]) {
        let now = self.clock.advance(now);
        let fresh = self.fresh(now);
        self.endpoints.set(endpoints, || fresh);
    }

    fn on_connectivity(&mut self, now: Nanos, endpoint: EndpointId, state: Connectivity) {
        let now = self.clock.advance(now);
        let fresh = self.fresh(now);
        if let Some((slot, old)) = self.endpoints.set_state(endpoint, state) {
            if state == Connectivity::Ready && old != Connectivity::Ready {
                // A (re)connected endpoint starts over: defaultRtt, nothing outstanding. Tickets
                // from the old connection no longer count against it.
                self.endpoints.slot_mut(slot).data = fresh;
                self.endpoints.bump_generation(slot);
            }
        }
    }

    fn pick(&mut self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        let now = self.clock.advance(now);
        let (ready, slots) = self.endpoints.ready_and_slots_mut();
        if ready.is_empty() {
            return match self.endpoints.unready() {
                Unready::Queue => Pick::Queue,
                Unready::Fail => Pick::Fail,
            };
        }
        let (inv_tau, decay) = (self.inv_tau, self.config.ablation.decay);
        let slot = p2c::pick(
            ready,
            self.config.choice_count,
            self.config.ablation.sampling,
            rng,
            |s| {
                let load = &mut slots[s as usize].data;
                load.rtt.read(now, inv_tau, decay) * f64::from(load.outstanding + 1)
            },
        );
        if kind == RpcKind::Unary {
            let load = &mut self.endpoints.slot_mut(slot).data;
            load.outstanding = load.outstanding.saturating_add(1);
        }
        Pick::Endpoint(self.endpoints.ticket(slot, kind))
    }

    fn on_done(&mut self, now: Nanos, ticket: Ticket, outcome: Outcome) {
        let now = self.clock.advance(now);
        if ticket.kind() != RpcKind::Unary {
            return; // a stream's duration is not a latency, and streams are not counted
        }
        let inv_tau = self.inv_tau;
        if let Some(load) = self.endpoints.redeem(&ticket) {
            load.outstanding = load.outstanding.saturating_sub(1);
            if outcome.status != Status::Cancelled {
                load.rtt.observe(now, outcome.elapsed, inv_tau);
            }
        }
    }

    fn endpoint_view(&self, now: Nanos, endpoint: EndpointId) -> Option<EndpointView> {
        let s = self.endpoints.slot(self.endpoints.lookup(endpoint)?);
        let now = now.max(self.clock.latest());
        let cost = s.data.rtt.decayed(now, self.inv_tau) * f64::from(s.data.outstanding + 1);
        Some(EndpointView {
            state: s.state,
            outstanding: s.data.outstanding,
            cost: Some(cost),
        })
    }
}
