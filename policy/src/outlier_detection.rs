//! `outlier_detection_experimental` (gRFC A50): a wrapper that counts each endpoint's successes
//! and failures per `interval` and ejects outliers, which the child policy then sees as
//! TRANSIENT_FAILURE.
//!
//! Two algorithms, each run only when its config object is present: *success rate* ejects endpoints
//! whose success rate is below `mean − stdev × stdevFactor / 1000`; *failure percentage* ejects
//! those whose failure percentage is above `threshold`. Each ejection raises the endpoint's
//! multiplier; an ejection lasts `min(baseEjectionTime × multiplier, max(baseEjectionTime,
//! maxEjectionTime))`; the multiplier falls by one per interval while the endpoint is not ejected.
//! At most `maxEjectionPercent` of endpoints are ejected at once (but one can always be).
//!
//! An endpoint that is already ejected stays a candidate in every sweep (its in-flight calls still
//! complete and are counted): flagged again, by either algorithm, it is ejected again, which
//! raises its multiplier and restarts its ejection from this sweep, as A50's text, grpc-go and
//! grpc-java do. Flagged by both algorithms in one sweep, it is ejected twice (the multiplier
//! rises by two), as in grpc-go and grpc-java. The `maxEjectionPercent` check runs before each
//! ejection, re-ejections included, but counts endpoints, not ejections: re-ejecting an endpoint
//! does not make it count twice (grpc-go's counter does count it twice).
//!
//! A call counts as a success when its status is OK; calls cancelled by the client are not counted
//! at all (they say nothing about the server).

use std::collections::HashMap;

use rand::{Rng, RngCore};
use serde_json::{json, Map, Value};

use crate::config::fields::{ConfigError, Fields};
use crate::config::spec::Spec;
use crate::config::{self, PolicyConfig, Selected};
use crate::{
    duration, Clock, Connectivity, EndpointId, EndpointView, LoadReport, Nanos, Outcome, Pick,
    Policy, RpcKind, Status, Ticket, NANOS_PER_SEC,
};

/// The policy's gRPC name.
pub const NAME: &str = "outlier_detection_experimental";

/// The shortest sweep `interval`: shorter ones are clamped to it (a sweep every nanosecond would
/// be a busy loop, not a policy).
pub const MIN_INTERVAL: Nanos = 100_000_000;

/// What both ejection algorithms share: whether an interval has enough endpoints with enough
/// calls for the algorithm to run, and the chance that a detected outlier is ejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// Chance, in percent, that a detected outlier is ejected (default 100).
    pub enforcement_percentage: u32,
    /// Endpoints with enough volume needed before the algorithm runs (default 5).
    pub minimum_hosts: u32,
    /// Calls in the interval an endpoint needs to be considered (default 100 for the success
    /// rate, 50 for the failure percentage).
    pub request_volume: u32,
}

impl Gate {
    /// The defaults, with the algorithm's own `request_volume`.
    const fn with_volume(request_volume: u32) -> Gate {
        Gate {
            enforcement_percentage: 100,
            minimum_hosts: 5,
            request_volume,
        }
    }

    /// Reads the gate's fields of an algorithm's object, `d` where they are absent.
    fn parse(o: &mut Fields<'_>, d: Gate) -> Result<Gate, ConfigError> {
        Ok(Gate {
            enforcement_percentage: o.percent("enforcementPercentage", d.enforcement_percentage)?,
            minimum_hosts: o.u32("minimumHosts", d.minimum_hosts)?,
            request_volume: o.u32("requestVolume", d.request_volume)?,
        })
    }

    /// An algorithm's normalized object: its own field (`key`: `value`) and the gate's.
    fn to_json(self, key: &str, value: u32) -> Value {
        let mut m = Map::new();
        m.insert(key.into(), json!(value));
        m.insert(
            "enforcementPercentage".into(),
            json!(self.enforcement_percentage),
        );
        m.insert("minimumHosts".into(), json!(self.minimum_hosts));
        m.insert("requestVolume".into(), json!(self.request_volume));
        Value::Object(m)
    }
}

/// The success-rate algorithm's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuccessRateEjection {
    /// Ejection threshold in thousandths of a standard deviation below the mean (default 1900).
    pub stdev_factor: u32,
    /// When it runs and ejects.
    pub gate: Gate,
}

impl Default for SuccessRateEjection {
    fn default() -> Self {
        SuccessRateEjection {
            stdev_factor: 1900,
            gate: Gate::with_volume(100),
        }
    }
}

/// The failure-percentage algorithm's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailurePercentageEjection {
    /// Failure percentage above which an endpoint is an outlier (default 85).
    pub threshold: u32,
    /// When it runs and ejects.
    pub gate: Gate,
}

impl Default for FailurePercentageEjection {
    fn default() -> Self {
        FailurePercentageEjection {
            threshold: 85,
            gate: Gate::with_volume(50),
        }
    }
}

/// Configuration of `outlier_detection_experimental`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Time between ejection sweeps (default 10 s).
    pub interval: Nanos,
    /// Base ejection time, multiplied by the endpoint's multiplier (default 30 s).
    pub base_ejection_time: Nanos,
    /// Longest ejection (default max(300 s, baseEjectionTime)).
    pub max_ejection_time: Nanos,
    /// Most endpoints ejected at once, in percent (default 10).
    pub max_ejection_percent: u32,
    /// The success-rate algorithm, if enabled.
    pub success_rate_ejection: Option<SuccessRateEjection>,
    /// The failure-percentage algorithm, if enabled.
    pub failure_percentage_ejection: Option<FailurePercentageEjection>,
    /// The wrapped policy.
    pub child_policy: Box<PolicyConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            interval: 10 * NANOS_PER_SEC,
            base_ejection_time: 30 * NANOS_PER_SEC,
            max_ejection_time: 300 * NANOS_PER_SEC,
            max_ejection_percent: 10,
            success_rate_ejection: None,
            failure_percentage_ejection: None,
            child_policy: Box::new(PolicyConfig::RoundRobin(Default::default())),
        }
    }
}

impl Spec for Config {
    fn parse(f: &mut Fields<'_>) -> Result<Self, ConfigError> {
        let d = Config::default();
        // An interval of 0 would make the sweep timer due for ever: a spin, not a policy. A
        // positive one below the floor is clamped to it, as gRPC clamps WRR's timers.
        let interval = f
            .positive_duration("interval", d.interval)?
            .max(MIN_INTERVAL);
        let base_ejection_time = f.duration("baseEjectionTime", d.base_ejection_time)?;
        let max_ejection_time = f.duration(
            "maxEjectionTime",
            d.max_ejection_time.max(base_ejection_time),
        )?;
        let max_ejection_percent = f.percent("maxEjectionPercent", d.max_ejection_percent)?;
        let success_rate_ejection = f.object("successRateEjection", |o| {
            let d = SuccessRateEjection::default();
            Ok(SuccessRateEjection {
                stdev_factor: o.u32("stdevFactor", d.stdev_factor)?,
                gate: Gate::parse(o, d.gate)?,
            })
        })?;
        let failure_percentage_ejection = f.object("failurePercentageEjection", |o| {
            let d = FailurePercentageEjection::default();
            Ok(FailurePercentageEjection {
                threshold: o.percent("threshold", d.threshold)?,
                gate: Gate::parse(o, d.gate)?,
            })
        })?;
        let child_path = f.path_of("childPolicy");
        let child = match f.take("childPolicy") {
            None => return Err(ConfigError::at(&child_path, "is required: a loadBalancingConfig list for the wrapped policy, e.g. [{\"round_robin\":{}}]")),
            Some(list) => match config::select(list, &child_path, &[])? {
                Selected::Policy(p) => p,
                Selected::Extra { .. } => unreachable!("no extra names"),
            },
        };
        Ok(Config {
            interval,
            base_ejection_time,
            max_ejection_time,
            max_ejection_percent,
            success_rate_ejection,
            failure_percentage_ejection,
            child_policy: Box::new(child),
        })
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("interval".into(), json!(duration::format(self.interval)));
        m.insert(
            "baseEjectionTime".into(),
            json!(duration::format(self.base_ejection_time)),
        );
        m.insert(
            "maxEjectionTime".into(),
            json!(duration::format(self.max_ejection_time)),
        );
        m.insert(
            "maxEjectionPercent".into(),
            json!(self.max_ejection_percent),
        );
        if let Some(s) = self.success_rate_ejection {
            m.insert(
                "successRateEjection".into(),
                s.gate.to_json("stdevFactor", s.stdev_factor),
            );
        }
        if let Some(s) = self.failure_percentage_ejection {
            m.insert(
                "failurePercentageEjection".into(),
                s.gate.to_json("threshold", s.threshold),
            );
        }
        m.insert("childPolicy".into(), json!([self.child_policy.to_json()]));
        Value::Object(m)
    }

    fn build(&self, now: Nanos) -> Box<dyn Policy> {
        Box::new(OutlierDetection::new(
            self.clone(),
            self.child_policy.build(now),
            now,
        ))
    }

    /// The child's: ejection changes nothing until there are outliers.
    fn warmup_need(&self) -> Option<(Nanos, String)> {
        self.child_policy.warmup_need()
    }

    fn label(&self) -> Option<String> {
        Some(format!("outlier_detection({})", self.child_policy.label()))
    }

    /// Neither ejection algorithm: gRFC A50 then ejects nothing (the config is valid, and its
    /// child alone routes), which is rarely what was meant. Then the child's warnings.
    fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.success_rate_ejection.is_none() && self.failure_percentage_ejection.is_none() {
            out.push(format!(
                "{NAME} has neither successRateEjection nor failurePercentageEjection, so it \
                 ejects nothing and only its child policy routes; add one, e.g. \
                 \"failurePercentageEjection\":{{\"threshold\":50,\"minimumHosts\":2}}"
            ));
        }
        out.extend(self.child_policy.warnings());
        out
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    success: u64,
    failure: u64,
}

impl Counts {
    fn total(&self) -> u64 {
        self.success + self.failure
    }
}

#[derive(Debug, Clone, Copy)]
struct Tracker {
    /// The endpoint's real connectivity (the child sees TRANSIENT_FAILURE while ejected).
    state: Connectivity,
    active: Counts,
    inactive: Counts,
    ejected_at: Option<Nanos>,
    multiplier: u32,
}

/// The `outlier_detection_experimental` policy, wrapping a child policy.
#[derive(Debug)]
pub struct OutlierDetection {
    config: Config,
    child: Box<dyn Policy>,
    trackers: HashMap<EndpointId, Tracker>,
    /// Endpoints in list order, so sweeps are deterministic.
    order: Vec<EndpointId>,
    clock: Clock,
    next_sweep: Option<Nanos>,
}

impl OutlierDetection {
    /// Wraps `child`; `now` starts the interval timer.
    pub fn new(config: Config, child: Box<dyn Policy>, now: Nanos) -> Self {
        let enabled =
            config.success_rate_ejection.is_some() || config.failure_percentage_ejection.is_some();
        OutlierDetection {
            next_sweep: enabled.then(|| now.saturating_add(config.interval)),
            config,
            child,
            trackers: HashMap::new(),
            order: Vec::new(),
            clock: Clock::default(),
        }
    }

    /// Whether `endpoint` is ejected now.
    pub fn is_ejected(&self, endpoint: EndpointId) -> bool {
        self.trackers
            .get(&endpoint)
            .is_some_and(|t| t.ejected_at.is_some())
    }

    fn ejected_count(&self) -> usize {
        self.trackers
            .values()
            .filter(|t| t.ejected_at.is_some())
            .count()
    }

    /// Whether another ejection stays within `maxEjectionPercent`.
    fn may_eject(&self) -> bool {
        let ejected = self.ejected_count() as u64;
        let total = self.order.len() as u64;
        ejected * 100 < total * u64::from(self.config.max_ejection_percent)
    }

    /// Ejects `endpoint`, or ejects it again if it already is: either way the multiplier rises
    /// and the ejection runs from `now`; only a new ejection tells the child.
    fn eject(&mut self, now: Nanos, endpoint: EndpointId) {
        if let Some(t) = self.trackers.get_mut(&endpoint) {
            let newly = t.ejected_at.is_none();
            t.ejected_at = Some(now);
            t.multiplier = t.multiplier.saturating_add(1);
            if newly {
                self.child
                    .on_connectivity(now, endpoint, Connectivity::TransientFailure);
            }
        }
    }

    /// Endpoints with at least `volume` calls (and at least one) in the last interval, ejected
    /// or not, with their counts. An endpoint without calls has no rate: with `requestVolume` 0
    /// its 0/0 would make the success-rate mean NaN and stop every ejection.
    fn candidates(&self, volume: u32) -> Vec<(EndpointId, Counts)> {
        let volume = u64::from(volume).max(1);
        self.order
            .iter()
            .filter_map(|id| {
                let t = self.trackers.get(id)?;
                (t.inactive.total() >= volume).then_some((*id, t.inactive))
            })
            .collect()
    }

    fn sweep(&mut self, now: Nanos, rng: &mut dyn RngCore) {
        for t in self.trackers.values_mut() {
            t.inactive = std::mem::take(&mut t.active);
        }
        if let Some(sr) = self.config.success_rate_ejection {
            let candidates = self.candidates(sr.gate.request_volume);
            if candidates.len() >= sr.gate.minimum_hosts as usize && !candidates.is_empty() {
                let rates: Vec<f64> = candidates
                    .iter()
                    .map(|(_, c)| c.success as f64 / c.total() as f64)
                    .collect();
                let n = rates.len() as f64;
                let mean = rates.iter().sum::<f64>() / n;
                let var = rates.iter().map(|r| (r - mean) * (r - mean)).sum::<f64>() / n;
                let threshold = mean - var.sqrt() * (f64::from(sr.stdev_factor) / 1000.0);
                for ((id, _), rate) in candidates.into_iter().zip(rates) {
                    if !self.may_eject() {
                        break;
                    }
                    if rate < threshold && rng.random_range(0..100) < sr.gate.enforcement_percentage
                    {
                        self.eject(now, id);
                    }
                }
            }
        }
        if let Some(fp) = self.config.failure_percentage_ejection {
            let candidates = self.candidates(fp.gate.request_volume);
            if candidates.len() >= fp.gate.minimum_hosts as usize {
                for (id, c) in candidates {
                    if !self.may_eject() {
                        break;
                    }
                    let failure_pct = 100.0 * c.failure as f64 / c.total() as f64;
                    if failure_pct > f64::from(fp.threshold)
                        && rng.random_range(0..100) < fp.gate.enforcement_percentage
                    {
                        self.eject(now, id);
                    }
                }
            }
        }
        let (base, max) = (
            self.config.base_ejection_time,
            self.config.max_ejection_time,
        );
        for &id in &self.order {
            let Some(t) = self.trackers.get_mut(&id) else {
                continue;
            };
            match t.ejected_at {
                None => t.multiplier = t.multiplier.saturating_sub(1),
                Some(at) => {
                    let span = base
                        .saturating_mul(u64::from(t.multiplier))
                        .min(base.max(max));
                    if now >= at.saturating_add(span) {
                        t.ejected_at = None;
                        self.child.on_connectivity(now, id, t.state);
                    }
                }
            }
        }
    }
}

impl Policy for OutlierDetection {
    fn name(&self) -> &'static str {
        NAME
    }

    fn set_endpoints(&mut self, now: Nanos, endpoints: &[EndpointId]) {
        let now = self.clock.advance(now);
        self.order.clear();
        for &id in endpoints {
            if !self.order.contains(&id) {
                self.order.push(id);
            }
        }
        let listed: std::collections::HashSet<EndpointId> = self.order.iter().copied().collect();
        self.trackers.retain(|id, _| listed.contains(id));
        for &id in &self.order {
            self.trackers.entry(id).or_insert(Tracker {
                state: Connectivity::Idle,
                active: Counts::default(),
                inactive: Counts::default(),
                ejected_at: None,
                multiplier: 0,
            });
        }
        self.child.set_endpoints(now, endpoints);
    }

    fn on_connectivity(&mut self, now: Nanos, endpoint: EndpointId, state: Connectivity) {
        let now = self.clock.advance(now);
        let Some(t) = self.trackers.get_mut(&endpoint) else {
            return;
        };
        t.state = state;
        if t.ejected_at.is_none() {
            self.child.on_connectivity(now, endpoint, state);
        }
    }

    fn pick(&mut self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        let now = self.clock.advance(now);
        self.child.pick(now, kind, rng)
    }

    fn pick_method(
        &mut self,
        now: Nanos,
        kind: RpcKind,
        method: u32,
        rng: &mut dyn RngCore,
    ) -> Pick {
        let now = self.clock.advance(now);
        self.child.pick_method(now, kind, method, rng)
    }

    fn on_done(&mut self, now: Nanos, ticket: Ticket, outcome: Outcome) {
        let now = self.clock.advance(now);
        if outcome.status != Status::Cancelled {
            if let Some(t) = self.trackers.get_mut(&ticket.endpoint()) {
                if outcome.status.is_ok() {
                    t.active.success += 1;
                } else {
                    t.active.failure += 1;
                }
            }
        }
        self.child.on_done(now, ticket, outcome);
    }

    fn on_load_report(&mut self, now: Nanos, endpoint: EndpointId, report: &LoadReport) {
        let now = self.clock.advance(now);
        self.child.on_load_report(now, endpoint, report);
    }

    fn oob_reporting_period(&self) -> Option<Nanos> {
        self.child.oob_reporting_period()
    }

    fn probe_interval(&self) -> Option<Nanos> {
        self.child.probe_interval()
    }

    fn on_probe_sent(&mut self, now: Nanos, endpoint: EndpointId) {
        self.child.on_probe_sent(now, endpoint);
    }

    fn on_probe_done(&mut self, now: Nanos, endpoint: EndpointId, answered: bool) {
        self.child.on_probe_done(now, endpoint, answered);
    }

    fn next_timer(&self) -> Option<Nanos> {
        match (self.next_sweep, self.child.next_timer()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timer(&mut self, now: Nanos, rng: &mut dyn RngCore) {
        let now = self.clock.advance(now);
        if let Some(due) = self.next_sweep {
            if now >= due {
                self.sweep(now, rng);
                self.next_sweep = Some(now.saturating_add(self.config.interval));
            }
        }
        if self.child.next_timer().is_some_and(|t| now >= t) {
            self.child.on_timer(now, rng);
        }
    }

    fn endpoint_view(&self, now: Nanos, endpoint: EndpointId) -> Option<EndpointView> {
        self.child.endpoint_view(now, endpoint)
    }
}
