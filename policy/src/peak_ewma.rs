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
//! ([`Peak`]: jump, blend, or a separate peak decaying over `peakDecayTime`), separate time
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
use crate::p2c::{self, Sampling};
use crate::{
    Clock, Connectivity, EndpointId, EndpointView, Nanos, Outcome, Pick, Policy, RpcKind, Status,
    Ticket, NANOS_PER_SEC,
};

pub mod per_method;
pub mod shared;
mod spec;
mod split;

use split::{split_estimate, split_sample, Split};

/// The policy's gRPC name.
pub const NAME: &str = "peak_ewma_experimental";

/// What a sample above the estimate does (`lblabAblation.peak`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Peak {
    /// `"jump"`: it replaces the estimate at once (the peak EWMA of Finagle, tower and the
    /// proposal).
    Jump,
    /// `"blend"`: it blends in like any other sample (a plain time-weighted EWMA, as Envoy's).
    Blend,
    /// `"decaying"`: every sample blends into a plain time-weighted EWMA (as `"blend"`), and a
    /// sample above the current estimate also sets a separate *peak* that decays toward 0 with its
    /// own, shorter time constant `peakDecayTime`; the estimate is the larger of the two. A
    /// sudden slowdown is seen at once, as with `"jump"`, but one slow answer from a healthy
    /// endpoint (its own tail, a queueing spike) marks it for about `peakDecayTime`, not for
    /// about `decayTime`.
    Decaying,
    /// `"refutable"`: a plain time-weighted EWMA of every sample, and a peak as with `"jump"`
    /// (a sample above the estimate is the estimate at once, decaying over `peakDecayTime`,
    /// default `decayTime`) that an answer at or below the EWMA to a call *sent after the peak*
    /// refutes: the peak is dropped, since a slow answer followed by a typical one to a later
    /// call was the endpoint's own tail, not a shift. Calls that were pending through the same
    /// stall do not refute it, and an avoided endpoint gets no call to refute it with, so it
    /// keeps the jump's memory.
    Refutable,
    /// `"stalled"`: a sample above the estimate replaces it (as `"jump"`) only if the endpoint
    /// gave no other answer while that call was pending, a stall as a pause makes it; a slow
    /// answer while the endpoint kept answering other calls (its own tail, a slow request) blends
    /// in like any other sample. The default, chosen by the design search's third round
    /// (`results/design/candidates/`).
    #[default]
    Stalled,
}

/// What a call that fails does to the RTT estimate (`lblabAblation.failures`). With an
/// `errorPenalty` every failure also counts toward the share of failures `e`, whichever this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Failures {
    /// `"sample"`: a failed call's elapsed time is an RTT sample like any other (the proposal
    /// as first written: any status gives a sample). A backend that fails fast therefore pulls
    /// its own estimate down, against the error-aware cost's `1 / (1 − e)`.
    Sample,
    /// `"hold"`: a failure never lowers the estimate. The estimate becomes the larger of the
    /// stored estimate (as of the last answer, undecayed) and the failure's elapsed time, as of
    /// now: a slow failure (a deadline) still raises it at once, and a fast one restarts the idle
    /// decay from the last measured latency instead of blending its near-zero time in. Only
    /// successful calls lower an estimate. The default: in the design search's third round,
    /// failures ignored (`"ignore"`) let a backend that fails 90 % of its calls fast take about
    /// six times as many failed calls (`results/design/candidates/README.md`).
    #[default]
    Hold,
    /// `"ignore"`: a failure is no RTT sample and leaves the estimate where it has decayed to
    /// (it still counts toward the share of failures with an `errorPenalty`); like any answer it
    /// restarts the idle decay from there. A call that fails slowly is seen while it is pending,
    /// by [`Ablation::stall`], not after.
    Ignore,
}

/// How many calls an avoided endpoint whose estimate has decayed may get before it answers
/// (`lblabAblation.probes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Probes {
    /// `"many"`: the decayed estimate is the cost whatever is outstanding, so a client may send
    /// several calls to an endpoint it is probing before the first answers.
    #[default]
    Many,
    /// `"one"`: while calls are outstanding on an endpoint, its cost uses the estimate as of its
    /// last sample, undecayed; so an avoided endpoint gets one probe, and the answer decides.
    One,
}

/// What an endpoint's estimate is before its first RTT sample (`lblabAblation.initial`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Initial {
    /// `"prior"`, the proposal as first written: the estimate starts at `defaultRtt` and the
    /// first samples blend into it like any other, so for about `decayTime` every endpoint looks
    /// like `defaultRtt`.
    Prior,
    /// `"first_sample"`: `defaultRtt` is the cost until the first sample, which then replaces it
    /// outright (Envoy's "the first sample initialises").
    FirstSample,
    /// `"penalty"`, Finagle's: before the first sample the cost is 0 while nothing is
    /// outstanding and a penalty above any measured cost (growing with the outstanding count)
    /// while calls are, so each new endpoint gets one call and then waits for its answer, which
    /// becomes the estimate. `defaultRtt` is not used. The default of the first two design
    /// rounds (`results/design/`).
    Penalty,
    /// `"zero"`: the estimate is 0 until the first sample replaces it; no penalty, no
    /// `defaultRtt`. On its own a new endpoint would take every call until it answers; with
    /// [`Ablation::stall`] its cost is the age of its oldest unanswered call, so it gets calls
    /// until that age says it is slower than the others. The default.
    #[default]
    Zero,
}

/// How an estimate decays while its endpoint gives no samples (`lblabAblation.idle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Idle {
    /// `"to_zero"`, the proposal as first written (and tower's and Finagle's): toward 0 with time
    /// constant `decayTime` on the wall clock, so every client re-probes an avoided endpoint
    /// every `decayTime × ln(its RTT / the others')`, and probe traffic grows with the number of
    /// clients.
    ToZero,
    /// `"frozen"`, Envoy's: no decay without samples (a sample still blends with weight
    /// `1 − e^(−Δt/decayTime)`, and the peak test compares it with the stored estimate). An
    /// avoided endpoint is never probed, so it never gets its traffic back after it heals unless
    /// the others are loaded enough to cost more.
    Frozen,
    /// `"pick_clock"`: toward 0 as `"to_zero"`, but the time an endpoint has been idle counts at
    /// most `decayTime / idlePicks` per pick this client made since its last sample. A busy client
    /// decays on the wall clock; a client with few picks decays in proportion to its own traffic,
    /// so its probes are a bounded share of its picks (about `1 / (idlePicks × ln(ratio))` per
    /// avoided endpoint) and the fleet's probe traffic no longer grows with the number of
    /// clients; the price is a slower return of a healed endpoint at clients with few picks. The
    /// default, chosen by the design search (`results/design/`).
    #[default]
    PickClock,
}

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
    /// The estimate before the first sample.
    pub initial: Initial,
    /// How an estimate decays without samples.
    pub idle: Idle,
    /// With [`Idle::PickClock`]: picks per `decayTime` of idle decay at most (at least 1).
    pub idle_picks: u32,
    /// Whether the idle decay also counts while calls are outstanding on the endpoint.
    pub probes: Probes,
    /// Whether a slow sample replaces the estimate, blends in, or sets a decaying peak.
    pub peak: Peak,
    /// With [`Peak::Decaying`]: the peak's time constant, ns (`peakDecayTime`); `None` is
    /// `decayTime / 10`.
    pub peak_decay_time: Option<Nanos>,
    /// The time constant of the idle decay alone, ns (`idleDecayTime`); `None` is `decayTime`,
    /// the proposal's single time constant. Set, it decouples how fast an avoided endpoint's cost
    /// falls (and so how soon it is probed again) from how a sample blends, which keeps
    /// `1 − e^(−Δt/decayTime)`.
    pub idle_decay_time: Option<Nanos>,
    /// With [`Idle::PickClock`]: a bound on how slowly an avoided endpoint's estimate falls, ns
    /// (`idleMaxTime`). The idle time counts at least `wall time × idle time constant /
    /// idleMaxTime`, so the estimate decays at least as fast as on the wall clock with time
    /// constant `idleMaxTime`, however few picks the client makes: a client that picks rarely
    /// still probes a backend it avoids within a few `idleMaxTime`, and so sees it heal. `None`
    /// (`"0s"`) is no bound (the pick clock alone); the default is 60 s with the pick clock.
    pub idle_max_time: Option<Nanos>,
    /// The time constant of the blend alone, ns (`blendTime`): a sample blends into the stored
    /// (undecayed) estimate with weight `1 − e^(−Δt/blendTime)`; `None` is the proposal's blend
    /// into the decayed estimate with the idle weight.
    pub blend_time: Option<Nanos>,
    /// An error-aware cost (`errorPenalty`, in hundredths; `None` is off): the estimate is
    /// multiplied by `1 + errorPenalty × e / (1 − e)`, `e` a time-weighted EWMA of the share of
    /// calls that ended with a status other than OK. At 1 this is `rtt / (1 − e)`, the expected
    /// time to a successful answer if failures were retried there; the analogue of A58's
    /// `errorUtilizationPenalty` for a backend that fails fast and so looks fast.
    pub error_penalty: Option<u32>,
    /// Whether a failed call is an RTT sample or only holds the estimate ([`Failures`]).
    pub failures: Failures,
    /// A decay adapted to the endpoint's own rate of answers (`blendSamples`; `None` is off): a
    /// sample blends with weight at least `1 / blendSamples`, so an estimate forgets a past
    /// answer within about `blendSamples` newer ones however short the time between them. A busy
    /// endpoint whose own tail jumped its estimate returns to its typical latency within a
    /// fraction of a second; an avoided one, which answers rarely, still decays over
    /// `decayTime`.
    pub blend_samples: Option<u32>,
    /// With an `errorPenalty`: each answer weighs at least `1 / errorSamples` in the share of
    /// failures (`errorSamples`; `None` is the RTT blend's weight alone). The time weight lets one
    /// answer after a long silence outweigh the old share, which brings a healed endpoint back with
    /// one probe, but it also lets one OK probe wipe out the share of an endpoint that still fails
    /// most calls, and the failures that follow then raise it only at `Δt / decayTime` each. With
    /// a floor, about `errorSamples` failures in a row bring the share back up.
    pub error_samples: Option<u32>,
    /// Stall-aware cost (`stall`): while calls are outstanding on an endpoint, its estimate is at
    /// least the time since it last answered (or since its oldest outstanding call was sent, if
    /// later): a pending call's age is a lower bound on its RTT. A pause, a black hole or a
    /// backend that stopped answering is avoided while it happens, before any slow answer comes
    /// back, instead of only after it; so the estimate itself need not jump to keep a stall's
    /// memory.
    pub stall: bool,
    /// Per-method estimates (`perMethod`): each method the channel calls gets its own instance of
    /// the policy, with its own estimates and outstanding counts, as if each method had a channel
    /// of its own ([`per_method`]).
    pub per_method: bool,
}

impl Default for Ablation {
    /// The chosen semantics: time-weighted blend, distinct draws, streams ignored, the first
    /// estimate 0 with the stall-aware cost, a peak only out of a stall, idle decay on the pick
    /// clock with `idlePicks` 5000 and at least the wall clock's with `idleMaxTime` 60 s, the
    /// error-aware cost with `errorPenalty` 1 and `errorSamples` 10, failures that hold the
    /// estimate.
    fn default() -> Self {
        Ablation {
            decay: DecayMode::TimeWeighted,
            sampling: Sampling::Distinct,
            streams: Streams::Ignore,
            initial: Initial::Zero,
            idle: Idle::PickClock,
            idle_picks: DEFAULT_IDLE_PICKS,
            probes: Probes::Many,
            peak: Peak::Stalled,
            peak_decay_time: None,
            idle_decay_time: None,
            idle_max_time: Some(DEFAULT_IDLE_MAX_TIME),
            blend_time: None,
            error_penalty: Some(DEFAULT_ERROR_PENALTY),
            failures: Failures::Hold,
            blend_samples: None,
            error_samples: Some(DEFAULT_ERROR_SAMPLES),
            stall: true,
            per_method: false,
        }
    }
}

impl Ablation {
    /// Whether the estimate is read and updated with separate time constants for the peak, the
    /// idle decay and the blend ([`Peak::Decaying`], an `idleDecayTime` or a `blendTime`), rather
    /// than with the proposal's one `decayTime`.
    #[inline]
    fn split(&self) -> bool {
        self.peak == Peak::Decaying
            || self.peak == Peak::Refutable
            || self.peak == Peak::Stalled
            || self.idle_decay_time.is_some()
            || self.idle_max_time.is_some()
            || self.blend_time.is_some()
            || self.error_penalty.is_some()
            || self.failures == Failures::Hold
            || self.blend_samples.is_some()
            || self.error_samples.is_some()
            || self.stall
            || self.initial == Initial::Zero
            || self.failures == Failures::Ignore
    }
}

/// `lblabAblation.errorPenalty`'s default, in hundredths (1): a failure costs as a retry would.
/// The semantics as first written (`initial: "prior"`) and tower's (`decay: "on_read"`) default
/// to no error-aware cost, as they were defined.
const DEFAULT_ERROR_PENALTY: u32 = 100;

/// `lblabAblation.errorSamples`' default (10): after an OK answer, about ten failures in a row
/// bring the share of failures back up, whatever the time between them. In `fail-fast` it cut the
/// failed calls tenfold beside `failures: "hold"` (`results/design/README.md`).
const DEFAULT_ERROR_SAMPLES: u32 = 10;

/// `lblabAblation.idlePicks`' default: the design search's trade-off between the probes of many
/// clients with few picks each and the return of a healed backend (`results/design/README.md`).
const DEFAULT_IDLE_PICKS: u32 = 5000;

/// `lblabAblation.idleMaxTime`'s default with the pick clock (60 s): a client that picks rarely
/// still probes an avoided backend about once a minute, so a healed backend carries its share
/// again within about two minutes at any number of clients, while the probes of 1,000 clients at
/// 2 requests/s each cost less p99.9 than Envoy's algorithm pays for never probing
/// (`results/design/README.md`, *Recovery against the number of clients*).
const DEFAULT_IDLE_MAX_TIME: Nanos = 60 * NANOS_PER_SEC;

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
        }
    }
}

/// The weight `e^(−idle/τ)` of `load`'s estimate at `at` under [`Idle::PickClock`], with `picks`
/// made so far: the wall-clock weight, or that of `picks since the last sample × τ / idle_picks`
/// if larger.
#[inline]
fn pick_clock_weight(picks: u64, idle_picks: u32, load: &Load, at: Moment) -> f64 {
    let since = picks.saturating_sub(load.picks_at) as f64;
    let by_picks = (-since / f64::from(idle_picks)).exp();
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
        Idle::PickClock => load.rtt.stored() * pick_clock_weight(picks, a.idle_picks, load, at) * n,
    }
}

/// [`cost`] under [`Ablation::split`], which needs only the time `now`.
#[inline]
fn split_cost(a: &Ablation, split: &Split, picks: u64, load: &Load, now: Nanos) -> f64 {
    if !load.sampled && a.initial == Initial::Penalty {
        return unsampled_cost(load);
    }
    let estimate = split_estimate(a, split, picks, load, now, true);
    let estimate = if a.stall && load.outstanding > 0 {
        estimate.max(now.saturating_sub(load.progress) as f64)
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
            if load.outstanding == 0 {
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
        let (at, picks, a) = (self.decay.at(now), self.picks, self.config.ablation);
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
                        pick_clock_weight(picks, a.idle_picks, load, at)
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
                        let w = pick_clock_weight(picks, a.idle_picks, load, at);
                        load.rtt.observe_weighted(at, rtt, w);
                    }
                }
            }
            load.sampled = true;
            load.picks_at = picks;
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
