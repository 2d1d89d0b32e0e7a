//! `envoy_peak_ewma`: Envoy's shipped peak EWMA balancer (`envoy.load_balancing_policies.peak_ewma`,
//! contrib, proto `envoy.extensions.load_balancing_policies.peak_ewma.v3alpha.PeakEwma`), written
//! here as a reference to compare the proposal against. It is an lblab name, not a gRPC policy.
//!
//! What Envoy does, and therefore what this module does (Envoy sources:
//! `contrib/peak_ewma/load_balancing_policies/source/{peak_ewma_lb,host_data,cost}.cc` and
//! `contrib/peak_ewma/filters/http/source/peak_ewma_filter.cc`, as of the bug fix of envoy PR #43526):
//!
//! - **Samples.** A required HTTP filter, on the response headers, records
//!   `duration_cast<milliseconds>(first upstream byte received − first upstream byte sent)`: an
//!   RTT truncated to *whole milliseconds*, stamped with the time of the response. Here: the
//!   elapsed time of a unary call that got an answer (`OK` or another status from the server),
//!   truncated to whole milliseconds, stamped with the completion time. A call that ended without
//!   an answer (`DEADLINE_EXCEEDED`, `CANCELLED`) gives none, as Envoy has no upstream byte then.
//!   Streaming calls give none either (the lab only knows their whole duration, not the time to
//!   their response headers).
//! - **Storage.** Each host has a ring of the last `maxSamplesPerHost` samples since the last fold;
//!   older ones are overwritten and never folded.
//! - **Fold.** At the start of a pick, if `aggregationInterval` has passed since the last fold
//!   (counted from when the policy was built), every host's new samples are folded in order:
//!   samples of 0 ms are skipped (so a backend that answers in under a millisecond never gets an
//!   estimate); the first sample sets the estimate; each later one blends with
//!   `α = 1 − exp(−Δt/τ)` where `Δt` is the time since the previous *folded sample* (α = 1 if
//!   `Δt ≤ 0`) and `τ = decayTime`. The estimate is in milliseconds (a float).
//! - **No peak, no decay.** A slow sample does not replace the estimate; it blends like any other.
//!   Between samples the estimate is frozen: a host that is no longer picked keeps its last
//!   estimate for ever and only recovers once it is picked again and answers fast.
//! - **Cost** (milliseconds): `ewma × (active + 1)` when the host has an estimate; otherwise
//!   `penaltyValue + active` when it has calls in flight; otherwise `defaultRtt`. `active` counts
//!   every call in flight, unary or streaming (Envoy reads the host's `rq_active` gauge).
//! - **Pick.** Exactly two choices, distinct: one 64-bit random `r`, `i = r mod n`,
//!   `j = (r >> 16) mod n`, `j = (j + 1) mod n` if `j = i`; the lower cost wins; on a tie the first
//!   wins if `r` is odd. With one READY endpoint, that one. Since `i` has the parity of `r` when `n`
//!   is even, ties are not fair: the odd positions get `3/4 + 1/(2n)` of them (all of them at
//!   `n = 2`), which matters where costs tie often, as on a sub-millisecond fleet.
//! - **Config.** Durations are truncated to whole milliseconds (`DurationUtil::durationToMilliseconds`).
//!   Defaults: `decayTime` 10 s, `aggregationInterval` 100 ms, `maxSamplesPerHost` 1000,
//!   `defaultRtt` 10 ms, `penaltyValue` 1e6. Validation as the proto's `v3` copy states it (the
//!   `v3alpha` proto carries no rules): durations > 0, `maxSamplesPerHost` ≥ 1, `penaltyValue` > 0.
//!   lblab also rejects a duration that truncates to 0 ms, which Envoy would accept and then use
//!   as 0 (fold on every pick, α = 1, an unsampled idle host costing 0).
//! - A host keeps its estimate when its connection fails and comes back (Envoy attaches the data to
//!   the host, not to the connection).
//!
//! The fold runs lazily inside [`Policy::pick`], as Envoy's does since PR #43526 (before it, a
//! main-thread timer folded every `aggregationInterval`); a timer would fold at slightly different
//! instants and is not needed, so [`Policy::next_timer`] stays `None`.

use std::collections::VecDeque;

use rand::RngCore;
use serde_json::{json, Value};

use crate::config::fields::{ConfigError, Fields};
use crate::config::spec::Spec;
use crate::endpoints::Endpoints;
use crate::{
    duration, Clock, Connectivity, EndpointId, EndpointView, Nanos, Outcome, Pick, Policy, RpcKind,
    Status, Ticket, NANOS_PER_SEC,
};

/// The policy's name (an lblab name, not a gRPC policy).
pub const NAME: &str = "envoy_peak_ewma";

const MS: Nanos = 1_000_000;

/// Configuration of `envoy_peak_ewma`, Envoy's `PeakEwma` proto fields. Durations are whole
/// milliseconds (in nanoseconds), as Envoy uses them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// `decayTime` (`decay_time`): the EWMA's time constant τ. Default 10 s.
    pub decay_time: Nanos,
    /// `aggregationInterval` (`aggregation_interval`): how often samples are folded. Default 100 ms.
    pub aggregation_interval: Nanos,
    /// `maxSamplesPerHost` (`max_samples_per_host`): samples kept per host between folds. Default 1000.
    pub max_samples_per_host: u32,
    /// `defaultRtt` (`default_rtt`): the cost of a host with no estimate and nothing in flight.
    /// Default 10 ms.
    pub default_rtt: Nanos,
    /// `penaltyValue` (`penalty_value`): the cost (plus calls in flight) of a host with no estimate
    /// and calls in flight. Default 1e6.
    pub penalty_value: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            decay_time: 10 * NANOS_PER_SEC,
            aggregation_interval: 100 * MS,
            max_samples_per_host: 1000,
            default_rtt: 10 * MS,
            penalty_value: 1e6,
        }
    }
}

impl Spec for Config {
    fn parse(f: &mut Fields<'_>) -> Result<Config, ConfigError> {
        let d = Config::default();
        let ms = |f: &mut Fields<'_>, key: &'static str, default: Nanos| {
            let v = f.positive_duration(key, default)?;
            let whole = v / MS * MS;
            if whole == 0 {
                return Err(f.err(key, format!("{} is under 1ms; Envoy truncates durations to whole milliseconds, so this would be 0ms", duration::format(v))));
            }
            Ok(whole)
        };
        let decay_time = ms(f, "decayTime", d.decay_time)?;
        let aggregation_interval = ms(f, "aggregationInterval", d.aggregation_interval)?;
        let max_samples_per_host = f.u32("maxSamplesPerHost", d.max_samples_per_host)?;
        if max_samples_per_host == 0 {
            return Err(f.err("maxSamplesPerHost", "must be at least 1"));
        }
        let default_rtt = ms(f, "defaultRtt", d.default_rtt)?;
        let penalty_value = f.f64("penaltyValue", d.penalty_value)?;
        if penalty_value <= 0.0 {
            return Err(f.err(
                "penaltyValue",
                format!("{penalty_value} must be greater than 0"),
            ));
        }
        Ok(Config {
            decay_time,
            aggregation_interval,
            max_samples_per_host,
            default_rtt,
            penalty_value,
        })
    }

    fn to_json(&self) -> Value {
        json!({
            "decayTime": duration::format(self.decay_time),
            "aggregationInterval": duration::format(self.aggregation_interval),
            "maxSamplesPerHost": self.max_samples_per_host,
            "defaultRtt": duration::format(self.default_rtt),
            "penaltyValue": self.penalty_value,
        })
    }

    fn build(&self, now: Nanos) -> Box<dyn Policy> {
        Box::new(EnvoyPeakEwma::new(*self, now))
    }
}

/// One host's state, as Envoy's `PeakEwmaHostLbPolicyData` holds it.
#[derive(Debug, Clone, Default)]
struct Host {
    /// Samples since the last fold, oldest first: (whole milliseconds, time of the response).
    ring: VecDeque<(u64, Nanos)>,
    /// The estimate in milliseconds; 0 means none yet.
    ewma_ms: f64,
    /// Time of the last folded sample (Envoy's `last_update_timestamp_`).
    reference: Nanos,
    /// Calls in flight, of any kind.
    active: u32,
}

/// The `envoy_peak_ewma` policy.
#[derive(Debug)]
pub struct EnvoyPeakEwma {
    config: Config,
    /// `1/τ` in 1/ns.
    inv_tau: f64,
    endpoints: Endpoints<Host>,
    last_fold: Nanos,
    clock: Clock,
}

impl EnvoyPeakEwma {
    /// A policy with no endpoints, built at `now` (the first fold is due one interval later).
    pub fn new(config: Config, now: Nanos) -> Self {
        let mut clock = Clock::default();
        clock.advance(now);
        EnvoyPeakEwma {
            inv_tau: 1.0 / config.decay_time.max(1) as f64,
            config,
            endpoints: Endpoints::default(),
            last_fold: now,
            clock,
        }
    }

    fn cost(&self, h: &Host) -> f64 {
        let active = f64::from(h.active);
        if h.ewma_ms > 0.0 {
            h.ewma_ms * (active + 1.0)
        } else if h.active > 0 {
            self.config.penalty_value + active
        } else {
            (self.config.default_rtt / MS) as f64
        }
    }

    /// Folds every host's new samples (Envoy's `processHostSamples`).
    fn fold(&mut self) {
        let inv_tau = self.inv_tau;
        for s in self.endpoints.ready_and_slots_mut().1 {
            let h = &mut s.data;
            for (rtt_ms, at) in h.ring.drain(..) {
                if rtt_ms == 0 {
                    continue; // Envoy skips samples <= 0 ms, and they do not move the reference
                }
                let rtt = rtt_ms as f64;
                h.ewma_ms = if h.ewma_ms == 0.0 {
                    rtt
                } else {
                    let alpha = if at <= h.reference {
                        1.0
                    } else {
                        1.0 - (-((at - h.reference) as f64) * inv_tau).exp()
                    };
                    alpha * rtt + (1.0 - alpha) * h.ewma_ms
                };
                h.reference = at;
            }
        }
    }
}

impl Policy for EnvoyPeakEwma {
    fn name(&self) -> &'static str {
        NAME
    }

    fn set_endpoints(&mut self, now: Nanos, endpoints: &[EndpointId]) {
        self.clock.advance(now);
        self.endpoints.set(endpoints, Host::default);
    }

    fn on_connectivity(&mut self, now: Nanos, endpoint: EndpointId, state: Connectivity) {
        self.clock.advance(now);
        self.endpoints.set_state(endpoint, state);
    }

    fn pick(&mut self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        let now = self.clock.advance(now);
        if now - self.last_fold >= self.config.aggregation_interval {
            self.fold();
            self.last_fold = now;
        }
        let ready = self.endpoints.ready();
        let slot = match ready.len() {
            0 => return self.endpoints.unready(),
            1 => ready[0],
            n => {
                let r = rng.next_u64();
                let i = (r % n as u64) as usize;
                let mut j = ((r >> 16) % n as u64) as usize;
                if j == i {
                    j = (j + 1) % n;
                }
                let (a, b) = (ready[i], ready[j]);
                let ca = self.cost(&self.endpoints.slot(a).data);
                let cb = self.cost(&self.endpoints.slot(b).data);
                let first = if ca == cb { r & 1 != 0 } else { ca < cb };
                if first {
                    a
                } else {
                    b
                }
            }
        };
        let h = &mut self.endpoints.slot_mut(slot).data;
        h.active = h.active.saturating_add(1);
        Pick::Endpoint(self.endpoints.ticket(slot, kind))
    }

    fn on_done(&mut self, now: Nanos, ticket: Ticket, outcome: Outcome) {
        let now = self.clock.advance(now);
        let max = self.config.max_samples_per_host as usize;
        let Some(h) = self.endpoints.redeem(&ticket) else {
            return;
        };
        h.active = h.active.saturating_sub(1);
        let answered = matches!(outcome.status, Status::Ok | Status::Error);
        if ticket.kind() == RpcKind::Unary && answered {
            if h.ring.len() == max {
                h.ring.pop_front(); // the ring overwrites its oldest sample
            }
            h.ring.push_back((outcome.elapsed / MS, now));
        }
    }

    /// The cost is Envoy's, in milliseconds.
    fn endpoint_view(&self, _now: Nanos, endpoint: EndpointId) -> Option<EndpointView> {
        let s = self.endpoints.slot(self.endpoints.lookup(endpoint)?);
        Some(EndpointView {
            state: s.state,
            outstanding: s.data.active,
            cost: Some(self.cost(&s.data)),
        })
    }
}
