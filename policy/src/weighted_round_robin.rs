//! `weighted_round_robin` (gRFC A58): endpoints weighted by the load they report through ORCA
//! (`qps / (utilization + eps/qps × errorUtilizationPenalty)`), scheduled earliest deadline first.
//!
//! Reports arrive per call (the `endpoint-load-metrics-bin` trailer, as [`Outcome::load`]) or, when
//! `enableOobLoadReport` is set, out of band through [`Policy::on_load_report`]; then per-call
//! reports are ignored. A weight counts only after `blackoutPeriod` of non-empty reports, expires
//! after `weightExpirationPeriod` without one, and endpoints without a weight get the mean weight.
//! With fewer than two weighted endpoints the policy behaves like round robin. The scheduler is
//! rebuilt every `weightUpdatePeriod` and whenever the READY set changes.

use std::collections::BinaryHeap;

use rand::{Rng, RngCore};
use serde_json::{json, Value};

use crate::config::fields::{ConfigError, Fields};
use crate::config::spec::Spec;
use crate::endpoints::Endpoints;
use crate::heap::{Earliest, HeapKey};
use crate::{
    duration, Clock, Connectivity, EndpointId, EndpointView, LoadReport, Nanos, Outcome, Pick,
    Policy, RpcKind, Ticket, NANOS_PER_SEC,
};

/// The policy's gRPC name.
pub const NAME: &str = "weighted_round_robin";

/// Configuration of `weighted_round_robin`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Use out-of-band reports instead of per-call ones (default false).
    pub enable_oob_load_report: bool,
    /// Period at which out-of-band reports are requested (default 10 s).
    pub oob_reporting_period: Nanos,
    /// Time a weight must have been reported for before it counts (default 10 s).
    pub blackout_period: Nanos,
    /// Time without a report after which a weight is forgotten (default 3 min).
    pub weight_expiration_period: Nanos,
    /// How often the scheduler is rebuilt (default 1 s; raised to 100 ms if lower).
    pub weight_update_period: Nanos,
    /// Multiplier of `eps/qps` added to utilization (default 1.0; must be >= 0).
    pub error_utilization_penalty: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            enable_oob_load_report: false,
            oob_reporting_period: 10 * NANOS_PER_SEC,
            blackout_period: 10 * NANOS_PER_SEC,
            weight_expiration_period: 180 * NANOS_PER_SEC,
            weight_update_period: NANOS_PER_SEC,
            error_utilization_penalty: 1.0,
        }
    }
}

impl Spec for Config {
    fn parse(f: &mut Fields<'_>) -> Result<Self, ConfigError> {
        let d = Config::default();
        let penalty = f.f64("errorUtilizationPenalty", d.error_utilization_penalty)?;
        if penalty < 0.0 {
            return Err(f.err(
                "errorUtilizationPenalty",
                format!("{penalty} is negative; must be >= 0"),
            ));
        }
        Ok(Config {
            enable_oob_load_report: f.bool("enableOobLoadReport", d.enable_oob_load_report)?,
            // A period of 0 would make the report timer due for ever; clamped like
            // weightUpdatePeriod, as gRPC does for that one.
            oob_reporting_period: f
                .duration("oobReportingPeriod", d.oob_reporting_period)?
                .max(MIN_WEIGHT_UPDATE_PERIOD),
            blackout_period: f.duration("blackoutPeriod", d.blackout_period)?,
            weight_expiration_period: f
                .duration("weightExpirationPeriod", d.weight_expiration_period)?,
            weight_update_period: f
                .duration("weightUpdatePeriod", d.weight_update_period)?
                .max(MIN_WEIGHT_UPDATE_PERIOD),
            error_utilization_penalty: penalty,
        })
    }

    fn to_json(&self) -> Value {
        json!({
            "enableOobLoadReport": self.enable_oob_load_report,
            "oobReportingPeriod": duration::format(self.oob_reporting_period),
            "blackoutPeriod": duration::format(self.blackout_period),
            "weightExpirationPeriod": duration::format(self.weight_expiration_period),
            "weightUpdatePeriod": duration::format(self.weight_update_period),
            "errorUtilizationPenalty": self.error_utilization_penalty,
        })
    }

    fn build(&self, now: Nanos) -> Box<dyn Policy> {
        Box::new(WeightedRoundRobin::new(*self, now))
    }

    /// No weights are used until an endpoint has reported load for `blackoutPeriod` and the
    /// next weight update has run: until then the policy is round_robin.
    fn warmup_need(&self) -> Option<(Nanos, String)> {
        Some((
            self.blackout_period + self.weight_update_period,
            format!(
                "{NAME}'s blackoutPeriod {} + weightUpdatePeriod {}",
                duration::format(self.blackout_period),
                duration::format(self.weight_update_period)
            ),
        ))
    }
}

/// Smallest weight the scheduler uses, relative to the largest (gRPC scales weights to 16 bits).
const MIN_WEIGHT_RATIO: f64 = 1.0 / 65535.0;

/// Smallest `weightUpdatePeriod` A58 allows.
pub const MIN_WEIGHT_UPDATE_PERIOD: Nanos = 100_000_000;

#[derive(Debug, Clone, Copy, Default)]
struct Weight {
    weight: f64,
    non_empty_since: Option<Nanos>,
    last_updated: Nanos,
    outstanding: u32,
}

impl Weight {
    fn update(&mut self, now: Nanos, report: &LoadReport, penalty: f64) {
        let utilization = if report.application_utilization > 0.0 {
            report.application_utilization
        } else {
            report.cpu_utilization
        };
        let qps = report.rps_fractional;
        let weight = if qps > 0.0 && utilization > 0.0 {
            qps / (utilization + report.eps / qps * penalty)
        } else {
            0.0
        };
        if !(weight > 0.0 && weight.is_normal()) {
            // A zero never overwrites a stored weight; nor does a subnormal one, whose inverse
            // (the cost) would be infinite.
            return;
        }
        if self.non_empty_since.is_none() {
            self.non_empty_since = Some(now);
        }
        self.last_updated = now;
        self.weight = weight;
    }

    /// The weight in effect at `now` (0 while blacked out or once expired).
    fn effective(&mut self, now: Nanos, config: &Config) -> f64 {
        let Some(since) = self.non_empty_since else {
            return 0.0;
        };
        if now.saturating_sub(self.last_updated) >= config.weight_expiration_period {
            self.non_empty_since = None;
            return 0.0;
        }
        if config.blackout_period > 0 && now.saturating_sub(since) < config.blackout_period {
            return 0.0;
        }
        self.weight
    }
}

/// One scheduler entry: the next virtual deadline of a READY endpoint.
#[derive(Debug, Clone, Copy)]
struct Entry {
    deadline: f64,
    period: f64,
    order: u32,
    slot: u32,
}

impl HeapKey for Entry {
    /// The earliest deadline first; ties go to list order. Deadlines are finite and not
    /// negative, and such an `f64`'s bits order as its value does (as `f64::total_cmp`).
    type Key = (u64, u32);
    fn key(&self) -> (u64, u32) {
        (self.deadline.to_bits(), self.order)
    }
}

/// The `weighted_round_robin` policy.
#[derive(Debug)]
pub struct WeightedRoundRobin {
    config: Config,
    endpoints: Endpoints<Weight>,
    clock: Clock,
    /// EDF schedule; empty means "round robin over READY".
    schedule: BinaryHeap<Earliest<Entry>>,
    rr_next: usize,
    /// READY-set version the schedule was built for; `None` forces a rebuild.
    built_for: Option<u64>,
    next_update: Nanos,
}

impl WeightedRoundRobin {
    /// A policy with no endpoints; `now` starts the weight-update timer.
    pub fn new(mut config: Config, now: Nanos) -> Self {
        config.weight_update_period = config.weight_update_period.max(MIN_WEIGHT_UPDATE_PERIOD);
        WeightedRoundRobin {
            next_update: now.saturating_add(config.weight_update_period),
            config,
            endpoints: Endpoints::default(),
            clock: Clock::default(),
            schedule: BinaryHeap::new(),
            rr_next: 0,
            built_for: None,
        }
    }

    fn rebuild(&mut self, now: Nanos, rng: &mut dyn RngCore) {
        self.schedule.clear();
        self.built_for = Some(self.endpoints.version);
        let config = self.config;
        let (ready, slots) = self.endpoints.ready_and_slots_mut();
        let n = ready.len();
        if n == 0 {
            return;
        }
        self.rr_next = rng.random_range(0..n);
        let mut weights = Vec::with_capacity(n);
        let (mut max, mut count) = (0.0f64, 0usize);
        for &slot in ready {
            let w = slots[slot as usize].data.effective(now, &config);
            if w > 0.0 {
                max = max.max(w);
                count += 1;
            }
            weights.push(w);
        }
        if count < 2 {
            return; // round robin
        }
        // Only ratios matter to the schedule. Scaled by the largest weight, the mean cannot
        // overflow and every period is finite; ratios beyond 65535:1 are clamped, as gRPC's 16-bit
        // scaled weights are.
        let mean = weights
            .iter()
            .filter(|&&w| w > 0.0)
            .map(|&w| w / max)
            .sum::<f64>()
            / count as f64;
        for (order, (&slot, w)) in ready.iter().zip(weights).enumerate() {
            let w = if w > 0.0 { w / max } else { mean }.max(MIN_WEIGHT_RATIO);
            let period = 1.0 / w;
            // A random phase, so clients that rebuild together do not move in lockstep.
            let deadline = rng.random::<f64>() * period;
            self.schedule.push(Earliest(Entry {
                deadline,
                period,
                order: order as u32,
                slot,
            }));
        }
    }
}

impl Policy for WeightedRoundRobin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn set_endpoints(&mut self, now: Nanos, endpoints: &[EndpointId]) {
        self.clock.advance(now);
        self.endpoints.set(endpoints, Weight::default);
    }

    fn on_connectivity(&mut self, now: Nanos, endpoint: EndpointId, state: Connectivity) {
        self.clock.advance(now);
        if let Some((slot, old)) = self.endpoints.set_state(endpoint, state) {
            if state == Connectivity::Ready && old != Connectivity::Ready {
                // A reconnected endpoint goes through the blackout period again.
                self.endpoints.slot_mut(slot).data.non_empty_since = None;
            }
        }
    }

    fn pick(&mut self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        let now = self.clock.advance(now);
        if self.endpoints.ready().is_empty() {
            return self.endpoints.unready();
        }
        if self.built_for != Some(self.endpoints.version) {
            self.rebuild(now, rng);
        }
        let slot = match self.schedule.peek_mut() {
            Some(mut top) => {
                let slot = top.slot;
                top.deadline += top.period;
                slot
            }
            None => {
                let ready = self.endpoints.ready();
                let slot = ready[self.rr_next % ready.len()];
                self.rr_next = (self.rr_next + 1) % ready.len();
                slot
            }
        };
        let s = self.endpoints.slot_mut(slot);
        s.data.outstanding = s.data.outstanding.saturating_add(1);
        Pick::Endpoint(self.endpoints.ticket(slot, kind))
    }

    fn on_done(&mut self, now: Nanos, ticket: Ticket, outcome: Outcome) {
        let now = self.clock.advance(now);
        let (oob, penalty) = (
            self.config.enable_oob_load_report,
            self.config.error_utilization_penalty,
        );
        if let Some(w) = self.endpoints.redeem(&ticket) {
            w.outstanding = w.outstanding.saturating_sub(1);
            if let (false, Some(report)) = (oob, outcome.load.as_ref()) {
                w.update(now, report, penalty);
            }
        }
    }

    fn on_load_report(&mut self, now: Nanos, endpoint: EndpointId, report: &LoadReport) {
        let now = self.clock.advance(now);
        if !self.config.enable_oob_load_report {
            return;
        }
        if let Some(slot) = self.endpoints.lookup(endpoint) {
            let penalty = self.config.error_utilization_penalty;
            self.endpoints
                .slot_mut(slot)
                .data
                .update(now, report, penalty);
        }
    }

    fn oob_reporting_period(&self) -> Option<Nanos> {
        self.config
            .enable_oob_load_report
            .then_some(self.config.oob_reporting_period)
    }

    fn next_timer(&self) -> Option<Nanos> {
        Some(self.next_update)
    }

    fn on_timer(&mut self, now: Nanos, rng: &mut dyn RngCore) {
        let now = self.clock.advance(now);
        if now >= self.next_update {
            self.rebuild(now, rng);
            self.next_update = now.saturating_add(self.config.weight_update_period);
        }
    }

    fn endpoint_view(&self, _now: Nanos, endpoint: EndpointId) -> Option<EndpointView> {
        let s = self.endpoints.slot(self.endpoints.lookup(endpoint)?);
        let mut w = s.data;
        let weight = w.effective(self.clock.latest(), &self.config);
        Some(EndpointView {
            state: s.state,
            outstanding: s.data.outstanding,
            cost: (weight > 0.0).then(|| 1.0 / weight),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(deadline: f64, order: u32) -> Earliest<Entry> {
        Earliest(Entry {
            deadline,
            period: 1.0,
            order,
            slot: 7,
        })
    }

    #[test]
    fn entries_are_equal_exactly_when_they_order_equal() {
        let a = entry(0.5, 1);
        assert!(a == entry(0.5, 1));
        // The period and slot do not take part in the order, so not in equality either.
        assert!(
            a == Earliest(Entry {
                period: 9.0,
                slot: 0,
                ..a.0
            })
        );
        assert!(a != entry(0.5, 2));
        assert!(a != entry(0.25, 1));
        // The earliest deadline is the greatest (BinaryHeap pops it first); ties go to list order.
        assert!(entry(0.25, 3) > a && entry(0.5, 0) > a);
        // The bits order as the values (0, subnormals, large): as total_cmp did.
        let values = [0.0, f64::MIN_POSITIVE / 4.0, 1e-300, 0.5, 1.0, 3.0, 1e300];
        for w in values.windows(2) {
            assert!(entry(w[0], 0) > entry(w[1], 0), "{w:?}");
        }
    }
}
