//! `peak_ewma_experimental`: the proposed latency-aware policy (Finagle's and linkerd-tower's
//! algorithm with gRPC's P2C picker), with the semantics lblab's design search chose
//! (`results/design/README.md`, `docs/design.md`).
//!
//! Per endpoint a [`PeakEwma`] of client-observed RTT (unary RPCs only) and a count of outstanding
//! unary RPCs; `cost = decayed_rtt × (outstanding + 1)`; per pick, sample `choiceCount` *distinct*
//! READY endpoints (all of them when fewer are READY) and keep the cheapest.
//!
//! - **The first estimate and stalls** ([`Initial::Zero`], [`Ablation::stall`]): an endpoint
//!   without a sample has the estimate 0, and while calls are outstanding on any endpoint its
//!   estimate is at least the time since it last answered (or became busy): a pending call's age
//!   is a lower bound on its RTT. So a new, joining or reconnected endpoint gets calls until its
//!   first call's age says it is slower than the others, and its first answer becomes the
//!   estimate; and a backend that stops answering is avoided while it happens. No constant
//!   (Finagle's penalty of 1e300 is not needed).
//! - **The peak, only out of a stall** ([`Peak::Stalled`]): an answer slower than the estimate
//!   replaces it at once if the endpoint gave no other answer while that call was pending (a
//!   pause, a throttle, a slow dependency that holds every call); a slow answer while the
//!   endpoint kept answering other calls is its own tail and blends in like any sample. The
//!   memory of stalls stays; a busy healthy endpoint's tail no longer marks it slow for about
//!   `decayTime`.
//! - **Idle decay** ([`Idle::PickClock`]): the estimate decays toward 0 while the endpoint gives
//!   no samples, so a backend that was slow is probed again and recovers its share once it answers
//!   fast; but the idle time counts at most `decayTime / idlePicks` per pick this client made
//!   since the endpoint's last sample. A busy client decays on the wall clock; a client with few
//!   picks probes in proportion to its own traffic, so many clients do not each re-probe a slow
//!   backend on their own clocks. And at least `decayTime / idleMaxTime` (60 s) per second of
//!   wall time: however few picks a client makes, it tries an avoided backend again within a few
//!   minutes and so sees it heal (recovering within T costs each client one possibly slow call per
//!   T; the bound chooses T).
//! - **An error-aware cost** (`errorPenalty` 1): the estimate is multiplied by `1 / (1 − e)`, `e`
//!   the time-weighted share of the endpoint's calls that failed (same weights as the RTT blend,
//!   capped at 0.999): the expected time to a success if failures were retried there. A backend
//!   that fails fast no longer looks fast. A failure is no RTT sample ([`Failures::Hold`]: it
//!   never lowers the estimate, which becomes the larger of the stored estimate and the
//!   failure's time as of now, so its decay restarts from the last measured latency), and each
//!   answer weighs at least a tenth in `e` (`errorSamples` 10), so the failures that follow an OK
//!   probe raise `e` again within about ten calls. Its way back: while avoided, its estimate decays
//!   like any other, and the probe's answer then outweighs the old share, which is weighted by
//!   the time since the last answer. The analogue of A58's `errorUtilizationPenalty`, whose
//!   default is also 1.
//!
//! The policy has no ejection of its own: wrap it in `outlier_detection_experimental` to eject a
//! backend that keeps failing.
//!
//! Distinct draws depart from gRFC A48 on purpose. A48 samples with replacement, so both draws land
//! on the same endpoint `1/n²` of the time whatever its cost: with one slow endpoint among 10, 1 %
//! of picks go to it no matter how slow it is, which is exactly the p99. tower, Finagle and Envoy
//! draw distinct endpoints.
//!
//! The variations are switchable for ablations through [`Ablation`] (service config field
//! `lblabAblation`, an lblab extension): the first estimate ([`Initial`]), the idle decay
//! ([`Idle`]) with its `idlePicks` and `idleMaxTime`, one probe at a time ([`Probes`]), what a slow sample does
//! ([`Peak`]: jump, blend, or a separate peak decaying over `peakDecayTime`; `peakRatio`, a jump
//! only for an answer that many times the estimate), separate time
//! constants for the blend (`blendTime`) and the idle decay (`idleDecayTime`), a decay adapted to
//! the endpoint's rate of answers (`blendSamples`), an error-aware cost (`errorPenalty`), whether
//! a failure is an RTT sample or only holds the estimate ([`Failures`]), decay-on-read as
//! tower and Finagle do it, A48's with-replacement draw, what streaming RPCs count for
//! ([`Streams`]), a stall-aware cost (`stall`), a first estimate of 0 ([`Initial::Zero`]) and
//! failures that leave the estimate alone ([`Failures::Ignore`]). `{"initial":"prior","idle":"to_zero"}` is the proposal as first written (with
//! `initial: "prior"` or `decay: "on_read"` the error-aware cost is off unless `errorPenalty` is
//! given; `errorPenalty: 0` turns it off anywhere).
//!
//! Why the peak stays, and only out of a stall (`results/design/README.md`,
//! `results/design/candidates/README.md`): its memory is what avoids a backend through repeated
//! stalls (GC pauses) and what makes a probe's answer the new estimate at once, so a healed
//! backend comes back within about `decayTime`; a plain EWMA (`peak: "blend"`) has the steadier
//! estimate where load or speeds vary steadily, but forgets stalls. A jump on every slow answer
//! also jumps on a busy healthy endpoint's own tail; a jump only when nothing else answered
//! meanwhile keeps the memory of stalls and drops most of that noise.

use rand::RngCore;

use crate::endpoints::Endpoints;
use crate::estimator::{Decay, DecayMode, Moment, PeakEwma};
use crate::p2c;
use crate::{
    Clock, Connectivity, EndpointId, EndpointView, Nanos, Outcome, Pick, Policy, RpcKind, Status,
    Ticket, NANOS_PER_SEC,
};

mod ablation;
pub mod per_method;
pub mod shared;
mod spec;
mod split;

pub use ablation::{
    Ablation, Failures, Idle, IdleMax, Initial, Peak, Probes, Streams, IDLE_MAX_DECAY_TIMES,
    IDLE_PICK_RATE,
};

use split::{split_estimate, split_sample, Split};

/// The policy's gRPC name.
pub const NAME: &str = "peak_ewma_experimental";

/// The cost of an endpoint without a sample but with calls outstanding, under
/// [`Initial::Penalty`]: above any measured cost (comparable values stay below `e^64 × 1 h`),
/// growing with the outstanding count as Finagle's `penalty + pending`.
const PENALTY: f64 = 1e300;

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
    /// [`Peak::Decaying`]'s peak (ns) as of `peak_stamp`; 0 when none.
    peak: f64,
    /// With an `errorPenalty`: the time-weighted share of calls that failed.
    errors: f64,
    peak_stamp: Nanos,
    outstanding: u32,
    /// Whether the endpoint has given an RTT sample since it became READY.
    sampled: bool,
    /// The policy's pick count at the last sample (or when the endpoint became READY).
    picks_at: u64,
    /// With [`Ablation::stall`]: when the endpoint last showed progress while calls were
    /// outstanding on it (its last answer, or the pick that made it busy, whichever is later).
    progress: Nanos,
    /// With [`Ablation::probe_interval`]: a probe sent to the endpoint has not ended yet.
    probing: bool,
    /// With [`Ablation::probe_interval`]: when the pending probe was sent.
    probe_sent: Nanos,
    /// With [`Ablation::probe_interval`]: when a probe was last answered within the estimate.
    probe_answered: Nanos,
}

/// The cost as the picker compares it: proportional to `decayed × (outstanding + 1)` with the same
/// factor for every endpoint at one instant (see [`crate::estimator::Decay`]), so a pick computes
/// no `exp`.
#[inline]
fn comparable_cost(load: &Load) -> f64 {
    load.rtt.comparable() * (f64::from(load.outstanding) + 1.0)
}

/// [`Initial::Penalty`]'s cost of an endpoint without a sample: 0 while idle, else above every
/// measured cost.
#[inline]
fn unsampled_cost(load: &Load) -> f64 {
    if load.outstanding == 0 {
        0.0
    } else {
        PENALTY * (1.0 + 1e-6 * f64::from(load.outstanding))
    }
}

/// The `peak_ewma_experimental` policy.
#[derive(Debug)]
pub struct PeakEwmaPolicy {
    /// The policy's name: [`NAME`], or a reference's that is a fixed configuration of this one.
    name: &'static str,
    config: Config,
    /// `decayTime` and the epoch the estimates are compared against.
    decay: Decay,
    endpoints: Endpoints<Load>,
    clock: Clock,
    /// Picks made so far (the clock of [`Idle::PickClock`]).
    picks: u64,
    /// The time constants of [`Ablation::split`].
    split: Split,
}

impl PeakEwmaPolicy {
    /// A policy with no endpoints.
    pub fn new(config: Config) -> Self {
        Self::named(NAME, config)
    }

    /// A policy with no endpoints that reports `name` (for a reference algorithm that is a fixed
    /// configuration of this one, such as Finagle's).
    pub fn named(name: &'static str, config: Config) -> Self {
        PeakEwmaPolicy {
            name,
            decay: Decay::new(config.decay_time, 0),
            config,
            endpoints: Endpoints::default(),
            clock: Clock::default(),
            picks: 0,
            split: Split::new(config.decay_time, &config.ablation),
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
        let initial = match self.config.ablation.initial {
            Initial::Penalty | Initial::Zero => 0,
            Initial::Prior | Initial::FirstSample => self.config.default_rtt,
        };
        Load {
            rtt: PeakEwma::new(initial, self.decay.at(now)),
            peak: 0.0,
            errors: 0.0,
            peak_stamp: now,
            outstanding: 0,
            sampled: false,
            picks_at: self.picks,
            progress: now,
            probing: false,
            probe_sent: now,
            probe_answered: 0,
        }
    }
}

/// The weight `e^(−idle/τ)` of `load`'s estimate at `at` under [`Idle::PickClock`], with `picks`
/// made so far: the wall-clock weight, or that of `picks since the last sample × τ / idle_picks`
/// if larger.
#[inline]
fn pick_clock_weight(picks: u64, idle_picks: f64, load: &Load, at: Moment) -> f64 {
    let since = picks.saturating_sub(load.picks_at) as f64;
    let by_picks = (-since / idle_picks).exp();
    load.rtt.weight(at).max(by_picks)
}

/// The cost the picker compares at `at` (`picks` made so far): the decayed estimate in ns times
/// `outstanding + 1` (the same scale for every endpoint at one instant, as the picker needs; the
/// default-free fast path compares `comparable_cost` instead); an unsampled endpoint's under
/// [`Initial::Penalty`]; the undecayed estimate while calls are outstanding under [`Probes::One`].
#[inline]
fn cost(a: &Ablation, split: &Split, picks: u64, load: &Load, at: Moment) -> f64 {
    if a.split() {
        return split_cost(a, split, picks, load, at.now());
    }
    if !load.sampled && a.initial == Initial::Penalty {
        return unsampled_cost(load);
    }
    let n = f64::from(load.outstanding) + 1.0;
    if a.probes == Probes::One && load.outstanding > 0 {
        return load.rtt.stored() * n;
    }
    match a.idle {
        Idle::ToZero => load.rtt.stored() * load.rtt.weight(at) * n,
        Idle::Frozen => load.rtt.stored() * n,
        Idle::PickClock => {
            load.rtt.stored() * pick_clock_weight(picks, split.idle_picks, load, at) * n
        }
    }
}

/// [`cost`] under [`Ablation::split`], which needs only the time `now`.
#[inline]
fn split_cost(a: &Ablation, split: &Split, picks: u64, load: &Load, now: Nanos) -> f64 {
    if !load.sampled && a.initial == Initial::Penalty {
        return unsampled_cost(load);
    }
    let estimate = split_estimate(a, split, picks, load, now, true);
    let estimate = if a.stall && (load.outstanding > 0 || load.probing) {
        estimate.max(now.saturating_sub(load.progress.max(load.probe_answered)) as f64)
    } else {
        estimate
    };
    estimate * (f64::from(load.outstanding) + 1.0)
}

impl Policy for PeakEwmaPolicy {
    fn name(&self) -> &'static str {
        self.name
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
        let a = self.config.ablation;
        let plain = a.idle == Idle::ToZero
            && a.initial != Initial::Penalty
            && a.probes == Probes::Many
            && !a.split();
        let slot = match self.config.ablation.decay {
            DecayMode::TimeWeighted if plain => p2c::pick(ready, choices, sampling, rng, |s| {
                comparable_cost(&slots[s as usize].data)
            }),
            // The split estimate reads only the time, so the decay factor's `exp` is not needed.
            DecayMode::TimeWeighted if a.split() => {
                let (picks, split) = (self.picks, &self.split);
                p2c::pick(ready, choices, sampling, rng, |s| {
                    split_cost(&a, split, picks, &slots[s as usize].data, now)
                })
            }
            DecayMode::TimeWeighted => {
                let (at, picks, split) = (self.decay.at(now), self.picks, &self.split);
                p2c::pick(ready, choices, sampling, rng, |s| {
                    cost(&a, split, picks, &slots[s as usize].data, at)
                })
            }
            DecayMode::OnRead => {
                // Reading decays the estimate and moves its stamp; it does not change the cost
                // now, only how the next sample blends.
                let at = self.decay.at(now);
                let penalty = a.initial == Initial::Penalty;
                p2c::pick(ready, choices, sampling, rng, |s| {
                    let load = &mut slots[s as usize].data;
                    if penalty && !load.sampled {
                        return unsampled_cost(load);
                    }
                    load.rtt.read_on(at);
                    comparable_cost(load)
                })
            }
        };
        self.picks += 1;
        if self.config.ablation.streams.outstanding(kind) {
            let load = &mut self.endpoints.slot_mut(slot).data;
            if load.outstanding == 0 && !load.probing {
                load.progress = now;
            }
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
        let (picks, a) = (self.picks, self.config.ablation);
        // Most split estimates decay from their stored value and stamp: no decay factor needed.
        let at = if a.split() && !a.needs_decay_factor() {
            Moment::unscaled(now)
        } else {
            self.decay.at(now)
        };
        let Some(load) = self.endpoints.redeem(&ticket) else {
            return;
        };
        load.outstanding = load.outstanding.saturating_sub(1);
        // Whether the endpoint gave no other answer while this call was pending (a stall).
        let quiet = load.progress <= now.saturating_sub(outcome.elapsed);
        if outcome.status != Status::Cancelled {
            load.progress = now;
        }
        if outcome.status != Status::Cancelled && streams.samples(kind) {
            let rtt = outcome.elapsed;
            let failed = outcome.status != Status::Ok;
            if a.split() {
                split_sample(&a, &self.split, picks, load, at, rtt, failed, quiet);
                return;
            }
            if !load.sampled && a.initial != Initial::Prior {
                load.rtt.replace(at, rtt);
                load.errors = if failed { 1.0 } else { 0.0 };
            } else if a.peak == Peak::Blend {
                let w = match (a.decay, a.idle) {
                    (DecayMode::TimeWeighted, Idle::PickClock) => {
                        pick_clock_weight(picks, self.split.idle_picks, load, at)
                    }
                    _ => load.rtt.weight(at),
                };
                load.rtt.observe_blend(at, rtt, w);
            } else {
                match (a.decay, a.idle) {
                    (DecayMode::OnRead, _) => load.rtt.observe_stored(at, rtt),
                    (DecayMode::TimeWeighted, Idle::ToZero) => load.rtt.observe(at, rtt),
                    (DecayMode::TimeWeighted, Idle::Frozen) => load.rtt.observe_stored(at, rtt),
                    (DecayMode::TimeWeighted, Idle::PickClock) => {
                        let w = pick_clock_weight(picks, self.split.idle_picks, load, at);
                        load.rtt.observe_weighted(at, rtt, w);
                    }
                }
            }
            load.sampled = true;
            load.picks_at = picks;
        }
    }

    fn probe_interval(&self) -> Option<Nanos> {
        self.config.ablation.probe_interval
    }

    fn on_probe_sent(&mut self, now: Nanos, endpoint: EndpointId) {
        let now = self.advance(now);
        let Some(slot) = self.endpoints.lookup(endpoint) else {
            return;
        };
        let load = &mut self.endpoints.slot_mut(slot).data;
        if load.outstanding == 0 && !load.probing {
            load.progress = now;
        }
        load.probing = true;
        load.probe_sent = now;
    }

    fn on_probe_done(&mut self, now: Nanos, endpoint: EndpointId, answered: bool) {
        let now = self.advance(now);
        let Some(slot) = self.endpoints.lookup(endpoint) else {
            return;
        };
        let (a, picks) = (self.config.ablation, self.picks);
        let load = &mut self.endpoints.slot_mut(slot).data;
        if !std::mem::take(&mut load.probing) || !answered {
            return;
        }
        // A probe answered within the endpoint's estimate shows that it is not stalled now: the
        // stall-aware cost counts from its answer. One answered only as late as the calls are
        // (it waited through the same stall) shows nothing the calls' answers will not.
        let rtt = now.saturating_sub(load.probe_sent) as f64;
        if rtt <= split_estimate(&a, &self.split, picks, load, now, true) {
            load.probe_answered = now;
        }
    }

    fn endpoint_view(&self, now: Nanos, endpoint: EndpointId) -> Option<EndpointView> {
        let s = self.endpoints.slot(self.endpoints.lookup(endpoint)?);
        let now = now.max(self.clock.latest());
        let load = &s.data;
        let n = f64::from(load.outstanding) + 1.0;
        let a = &self.config.ablation;
        let cost = match a.idle {
            Idle::ToZero
                if !a.split()
                    && (load.sampled || a.initial != Initial::Penalty)
                    && (a.probes == Probes::Many || load.outstanding == 0) =>
            {
                load.rtt.decayed(now, &self.decay) * n
            }
            _ => cost(a, &self.split, self.picks, load, self.decay.at(now)),
        };
        Some(EndpointView {
            state: s.state,
            outstanding: s.data.outstanding,
            cost: Some(cost),
        })
    }
}
