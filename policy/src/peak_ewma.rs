//! `peak_ewma_experimental`: the proposed latency-aware policy (Finagle's and linkerd-tower's
//! algorithm with gRPC's P2C picker).
//!
//! Per endpoint a [`PeakEwma`] of client-observed RTT (unary RPCs only) and a count of outstanding
//! unary RPCs; `cost = decayed_rtt × (outstanding + 1)`; per pick, sample `choiceCount` *distinct*
//! READY endpoints (all of them when fewer are READY) and keep the cheapest. The estimate decays toward 0 with time constant `decayTime`
//! also while the endpoint is not picked, so a backend that was slow becomes cheap again, is probed,
//! and recovers its share once it answers fast. The policy has no ejection of its own: a backend
//! that fails fast looks fast, so wrap it in `outlier_detection_experimental`.
//!
//! Distinct draws depart from gRFC A48 on purpose. A48 samples with replacement, so both draws land
//! on the same endpoint `1/n²` of the time whatever its cost: with one slow endpoint among 10, 1 %
//! of picks go to it no matter how slow it is, which is exactly the p99. tower, Finagle and Envoy
//! draw distinct endpoints.
//!
//! Three variations are switchable for ablations through [`Ablation`] (service config field
//! `lblabAblation`, an lblab extension): decay-on-read as tower and Finagle do it, A48's
//! with-replacement draw, and what streaming RPCs count for ([`Streams`]).

use rand::RngCore;
use serde_json::{json, Value};

use crate::config::{choice_name, ConfigError, Fields, Spec};
use crate::endpoints::Endpoints;
use crate::estimator::{Decay, DecayMode, PeakEwma};
use crate::p2c::{self, Sampling};
use crate::{
    duration, Clock, Connectivity, EndpointId, EndpointView, Nanos, Outcome, Pick, Policy, RpcKind,
    Status, Ticket, NANOS_PER_SEC,
};

/// The policy's gRPC name.
pub const NAME: &str = "peak_ewma_experimental";

/// `lblabAblation.decay`'s values.
const DECAYS: &[(&str, DecayMode)] = &[
    ("time_weighted", DecayMode::TimeWeighted),
    ("on_read", DecayMode::OnRead),
];

/// `lblabAblation.sampling`'s values.
const SAMPLINGS: &[(&str, Sampling)] = &[
    ("distinct", Sampling::Distinct),
    ("with_replacement", Sampling::WithReplacement),
];

/// `lblabAblation.streams`'s values.
const STREAMS: &[(&str, Streams)] = &[
    ("ignore", Streams::Ignore),
    ("outstanding", Streams::Outstanding),
    ("count", Streams::Count),
];

/// What streaming RPCs do to an endpoint's load (service config `lblabAblation.streams`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Streams {
    /// The proposal (`"ignore"`): a stream is neither outstanding load nor an RTT sample; only
    /// unary RPCs count.
    #[default]
    Ignore,
    /// `"outstanding"`: a stream counts as outstanding while it is open but its duration is no
    /// sample. What a client must do when it cannot tell a stream from a unary call at pick time.
    Outstanding,
    /// `"count"`: a stream counts as outstanding until it ends and its whole duration is an RTT
    /// sample, as for a unary call. (tower sees requests, not RPC kinds, but with
    /// `CompleteOnResponse` a stream is pending and timed only until its response headers arrive;
    /// linkerd, until the first data frame: neither counts a stream's whole length.)
    Count,
}

impl Streams {
    /// Whether an RPC of `kind` counts as outstanding while it runs.
    #[inline]
    fn outstanding(self, kind: RpcKind) -> bool {
        kind == RpcKind::Unary || self != Streams::Ignore
    }

    /// Whether an RPC of `kind` gives an RTT sample when it ends.
    #[inline]
    fn samples(self, kind: RpcKind) -> bool {
        kind == RpcKind::Unary || self == Streams::Count
    }
}

/// Switches between the proposal's semantics (the default) and the references' variations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ablation {
    /// How the estimate decays: the proposal's time-weighted blend, or tower's decay-on-read.
    pub decay: DecayMode,
    /// How candidates are drawn: distinct (the proposal; tower, Finagle, Envoy), or with
    /// replacement (A48).
    pub sampling: Sampling,
    /// What streaming RPCs count for: nothing (the proposal), outstanding load, or load and
    /// samples.
    pub streams: Streams,
}

impl Default for Ablation {
    /// The proposal: time-weighted decay, distinct draws, streams ignored.
    fn default() -> Self {
        Ablation {
            decay: DecayMode::TimeWeighted,
            sampling: Sampling::Distinct,
            streams: Streams::Ignore,
        }
    }
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

impl Spec for Config {
    fn parse(f: &mut Fields<'_>) -> Result<Self, ConfigError> {
        let d = Config::default();
        let choice_count = f.choice_count()?;
        let decay_time = f.positive_duration("decayTime", d.decay_time)?;
        let default_rtt = f.positive_duration("defaultRtt", d.default_rtt)?;
        let ablation = f
            .object("lblabAblation", |a| {
                let d = Ablation::default();
                Ok(Ablation {
                    decay: a.choice("decay", DECAYS, d.decay)?,
                    sampling: a.choice("sampling", SAMPLINGS, d.sampling)?,
                    streams: a.choice("streams", STREAMS, d.streams)?,
                })
            })?
            .unwrap_or_default();
        Ok(Config {
            choice_count,
            decay_time,
            default_rtt,
            ablation,
        })
    }

    fn to_json(&self) -> Value {
        json!({
            "choiceCount": self.choice_count,
            "decayTime": duration::format(self.decay_time),
            "defaultRtt": duration::format(self.default_rtt),
            "lblabAblation": {
                "decay": choice_name(DECAYS, self.ablation.decay),
                "sampling": choice_name(SAMPLINGS, self.ablation.sampling),
                "streams": choice_name(STREAMS, self.ablation.streams),
            },
        })
    }

    fn build(&self, _now: Nanos) -> Box<dyn Policy> {
        Box::new(PeakEwmaPolicy::new(*self))
    }
}

#[derive(Debug, Clone, Copy)]
struct Load {
    rtt: PeakEwma,
    outstanding: u32,
}

/// The cost as the picker compares it: proportional to `decayed × (outstanding + 1)` with the same
/// factor for every endpoint at one instant (see [`crate::estimator::Decay`]), so a pick computes
/// no `exp`.
#[inline]
fn comparable_cost(load: &Load) -> f64 {
    load.rtt.comparable() * (f64::from(load.outstanding) + 1.0)
}

/// The `peak_ewma_experimental` policy.
#[derive(Debug)]
pub struct PeakEwmaPolicy {
    config: Config,
    /// `decayTime` and the epoch the estimates are compared against.
    decay: Decay,
    endpoints: Endpoints<Load>,
    clock: Clock,
}

impl PeakEwmaPolicy {
    /// A policy with no endpoints.
    pub fn new(config: Config) -> Self {
        PeakEwmaPolicy {
            decay: Decay::new(config.decay_time, 0),
            config,
            endpoints: Endpoints::default(),
            clock: Clock::default(),
        }
    }

    /// Clamps `now` to the latest time seen and moves the decay epoch forward when it is due.
    #[inline]
    fn advance(&mut self, now: Nanos) -> Nanos {
        let now = self.clock.advance(now);
        if self.decay.needs_rebase(now) {
            let k = self.decay.rebase(now);
            for s in self.endpoints.ready_and_slots_mut().1 {
                s.data.rtt.rescale(k);
            }
        }
        now
    }

    fn fresh(&self, now: Nanos) -> Load {
        Load {
            rtt: PeakEwma::new(self.config.default_rtt, self.decay.at(now)),
            outstanding: 0,
        }
    }
}

impl Policy for PeakEwmaPolicy {
    fn name(&self) -> &'static str {
        NAME
    }

    fn set_endpoints(&mut self, now: Nanos, endpoints: &[EndpointId]) {
        let now = self.advance(now);
        let fresh = self.fresh(now);
        self.endpoints.set(endpoints, || fresh);
    }

    fn on_connectivity(&mut self, now: Nanos, endpoint: EndpointId, state: Connectivity) {
        let now = self.advance(now);
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
        let now = self.advance(now);
        let (ready, slots) = self.endpoints.ready_and_slots_mut();
        if ready.is_empty() {
            return self.endpoints.unready();
        }
        let (choices, sampling) = (self.config.choice_count, self.config.ablation.sampling);
        let slot = match self.config.ablation.decay {
            DecayMode::TimeWeighted => p2c::pick(ready, choices, sampling, rng, |s| {
                comparable_cost(&slots[s as usize].data)
            }),
            DecayMode::OnRead => {
                // Reading decays the estimate and moves its stamp; it does not change the cost
                // now, only how the next sample blends.
                let at = self.decay.at(now);
                p2c::pick(ready, choices, sampling, rng, |s| {
                    let load = &mut slots[s as usize].data;
                    load.rtt.read_on(at);
                    comparable_cost(load)
                })
            }
        };
        if self.config.ablation.streams.outstanding(kind) {
            let load = &mut self.endpoints.slot_mut(slot).data;
            load.outstanding = load.outstanding.saturating_add(1);
        }
        Pick::Endpoint(self.endpoints.ticket(slot, kind))
    }

    fn on_done(&mut self, now: Nanos, ticket: Ticket, outcome: Outcome) {
        let now = self.advance(now);
        let (streams, kind) = (self.config.ablation.streams, ticket.kind());
        if !streams.outstanding(kind) {
            return; // by default a stream's duration is not a latency, and streams are not counted
        }
        let (decay, mode) = (&self.decay, self.config.ablation.decay);
        if let Some(load) = self.endpoints.redeem(&ticket) {
            load.outstanding = load.outstanding.saturating_sub(1);
            if outcome.status != Status::Cancelled && streams.samples(kind) {
                match mode {
                    DecayMode::TimeWeighted => load.rtt.observe(decay.at(now), outcome.elapsed),
                    DecayMode::OnRead => load.rtt.observe_stored(decay.at(now), outcome.elapsed),
                }
            }
        }
    }

    fn endpoint_view(&self, now: Nanos, endpoint: EndpointId) -> Option<EndpointView> {
        let s = self.endpoints.slot(self.endpoints.lookup(endpoint)?);
        let now = now.max(self.clock.latest());
        let cost = s.data.rtt.decayed(now, &self.decay) * (f64::from(s.data.outstanding) + 1.0);
        Some(EndpointView {
            state: s.state,
            outstanding: s.data.outstanding,
            cost: Some(cost),
        })
    }
}
