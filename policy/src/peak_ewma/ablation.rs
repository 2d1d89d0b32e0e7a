//! `peak_ewma_experimental`'s variations, switchable for ablations through the lab-only service
//! config field `lblabAblation`: one enum per choice and [`Ablation`], which holds them with the
//! default the design search chose (`results/design/`, `results/design/candidates/`).

use crate::estimator::DecayMode;
use crate::p2c::Sampling;
use crate::{Nanos, RpcKind, NANOS_PER_SEC};

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
    pub(crate) fn outstanding(self, kind: RpcKind) -> bool {
        kind == RpcKind::Unary || self != Streams::Ignore
    }

    /// Whether an RPC of `kind` gives an RTT sample when it ends.
    #[inline]
    pub(crate) fn samples(self, kind: RpcKind) -> bool {
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
    /// With [`Idle::PickClock`]: picks per `decayTime` of idle decay at most (at least 1);
    /// `None` (the default) is [`IDLE_PICK_RATE`] per second of `decayTime` (5,000 at 10 s), so
    /// the pick clock and the wall clock meet at the same number of picks per second whatever
    /// `decayTime` is, and `decayTime` scales the idle decay at every rate of picks.
    pub idle_picks: Option<u32>,
    /// Whether the idle decay also counts while calls are outstanding on the endpoint.
    pub probes: Probes,
    /// Whether a slow sample replaces the estimate, blends in, or sets a decaying peak.
    pub peak: Peak,
    /// With [`Peak::Decaying`]: the peak's time constant, ns (`peakDecayTime`); `None` is
    /// `decayTime / 10`.
    pub peak_decay_time: Option<Nanos>,
    /// With [`Peak::Jump`] or [`Peak::Stalled`]: a slow answer is a peak only if it is more than
    /// this many times the estimate (`peakRatio`, a whole number of at least 2; `None` is any
    /// answer above it). A stop-the-world pause of a backend answering in a few milliseconds is
    /// tens of times its estimate, a busy healthy endpoint's own queueing tail a few times: a
    /// ratio tells one from the other by magnitude where the quiet test cannot (a client with
    /// few calls in flight on the endpoint sees most answers as quiet).
    pub peak_ratio: Option<u32>,
    /// The time constant of the idle decay alone, ns (`idleDecayTime`); `None` is `decayTime`,
    /// the proposal's single time constant. Set, it decouples how fast an avoided endpoint's cost
    /// falls (and so how soon it is probed again) from how a sample blends, which keeps
    /// `1 − e^(−Δt/decayTime)`.
    pub idle_decay_time: Option<Nanos>,
    /// With [`Idle::PickClock`]: a bound on how slowly an avoided endpoint's estimate falls
    /// ([`IdleMax`]). The idle time counts at least `wall time × idle time constant /
    /// idleMaxTime`, so the estimate decays at least as fast as on the wall clock with time
    /// constant `idleMaxTime`, however few picks the client makes: a client that picks rarely
    /// still probes a backend it avoids within a few `idleMaxTime`, and so sees it heal. The
    /// default with the pick clock is [`IDLE_MAX_DECAY_TIMES`] × `decayTime` (60 s at 10 s).
    pub idle_max: IdleMax,
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
    /// Out-of-band probes (`probeInterval`; `None` is off): the owner sends each READY endpoint a
    /// unary `grpc.health.v1.Health/Check` every `probeInterval`, at most one outstanding per
    /// endpoint ([`crate::Policy::probe_interval`]). A probe is no RTT sample and no load: a
    /// health service answers in microseconds however slow the application's calls are, so its
    /// time says nothing of theirs. It shows stalls: a pending probe makes the stall-aware cost
    /// apply as a pending call does (the time since the endpoint was last seen answering), so a
    /// client sees a pause or a black hole on an endpoint it has sent no call to; and a probe
    /// answered within the endpoint's estimate shows it is not stalled, so the stall term of its
    /// pending calls counts from that answer. A probe answered later than that waited through
    /// the same stall and counts for nothing. Probe answers leave the quiet test alone: counted
    /// there, they made a steadily slow backend's slow answers blend instead of jump
    /// (`one-slow-busy` p99.9 23.7 → 26.5 ms at 0.1 s). Needs `stall`. Lab-only: the search's
    /// probe candidate.
    pub probe_interval: Option<Nanos>,
    /// Per-method estimates (`perMethod`): each method the channel calls gets its own instance of
    /// the policy, with its own estimates and outstanding counts, as if each method had a channel
    /// of its own ([`super::per_method`]).
    pub per_method: bool,
}

impl Default for Ablation {
    /// The chosen semantics: time-weighted blend, distinct draws, streams ignored, the first
    /// estimate 0 with the stall-aware cost, a peak only out of a stall, idle decay on the pick
    /// clock at 500 picks per second of `decayTime` and at least the wall clock's with
    /// `idleMaxTime` 6 × `decayTime` (5,000 picks and 60 s at the default 10 s), the
    /// error-aware cost with `errorPenalty` 1 and `errorSamples` 10, failures that hold the
    /// estimate.
    fn default() -> Self {
        Ablation {
            decay: DecayMode::TimeWeighted,
            sampling: Sampling::Distinct,
            streams: Streams::Ignore,
            initial: Initial::Zero,
            idle: Idle::PickClock,
            idle_picks: None,
            probes: Probes::Many,
            peak: Peak::Stalled,
            peak_decay_time: None,
            peak_ratio: None,
            idle_decay_time: None,
            idle_max: IdleMax::DecayTimes(IDLE_MAX_DECAY_TIMES),
            blend_time: None,
            error_penalty: Some(DEFAULT_ERROR_PENALTY),
            failures: Failures::Hold,
            blend_samples: None,
            error_samples: Some(DEFAULT_ERROR_SAMPLES),
            stall: true,
            probe_interval: None,
            per_method: false,
        }
    }
}

impl Ablation {
    /// Whether the estimate reads the wall-clock decay of the stored estimate through the
    /// policy's decay factor ([`crate::estimator::PeakEwma::weight`]): decay on read, or a split
    /// estimate with an `idleDecayTime` or a frozen estimate and no `blendTime`. The others
    /// decay from the stored estimate and its stamp alone.
    #[inline]
    pub(crate) fn needs_decay_factor(&self) -> bool {
        self.decay == DecayMode::OnRead
            || (self.blend_time.is_none()
                && (self.idle_decay_time.is_some() || self.idle == Idle::Frozen))
    }

    /// Whether the estimate is read and updated with separate time constants for the peak, the
    /// idle decay and the blend ([`Peak::Decaying`], an `idleDecayTime` or a `blendTime`), rather
    /// than with the proposal's one `decayTime`.
    #[inline]
    pub(crate) fn split(&self) -> bool {
        self.peak == Peak::Decaying
            || self.peak == Peak::Refutable
            || self.peak == Peak::Stalled
            || self.idle_decay_time.is_some()
            || self.idle_max != IdleMax::Unbounded
            || self.blend_time.is_some()
            || self.error_penalty.is_some()
            || self.failures == Failures::Hold
            || self.blend_samples.is_some()
            || self.error_samples.is_some()
            || self.stall
            || self.initial == Initial::Zero
            || self.failures == Failures::Ignore
            || self.peak_ratio.is_some()
            || self.probe_interval.is_some()
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

/// The pick clock's rate (500 picks per second): without `lblabAblation.idlePicks`, an avoided
/// endpoint's idle time advances by at most one second per 500 of the client's picks, so its
/// estimate decays by at most one time constant per `500 × decayTime` picks (5,000 at the
/// default 10 s, the design search's trade-off between the probes of many clients with few picks
/// each and the return of a healed backend: `results/design/README.md`). A client that picks more
/// often decays on the wall clock alone.
pub const IDLE_PICK_RATE: u32 = 500;

/// The bound on the pick clock's slowness (6): without `lblabAblation.idleMaxTime`, an avoided
/// endpoint's idle time advances by at least a sixth of the wall time, so its estimate decays at
/// least as fast as with time constant `6 × decayTime` (60 s at the default 10 s) however rarely
/// the client picks: a healed backend carries its share again within about `12 × decayTime` at
/// any number of clients, while the probes of 1,000 clients at 2 requests/s each cost less p99.9
/// than Envoy's algorithm pays for never probing (`results/design/README.md`, *Recovery against
/// the number of clients*).
pub const IDLE_MAX_DECAY_TIMES: u32 = 6;

/// How slowly the pick clock may let an avoided endpoint's estimate fall
/// (`lblabAblation.idleMaxTime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleMax {
    /// `"0s"`: no bound, the pick clock alone.
    Unbounded,
    /// A given `idleMaxTime`, ns.
    Time(Nanos),
    /// A multiple of `decayTime` (the default: [`IDLE_MAX_DECAY_TIMES`]).
    DecayTimes(u32),
}

impl Ablation {
    /// The picks per time constant of idle decay at most, resolved against `decay_time` (ns):
    /// the given `idlePicks`, else [`IDLE_PICK_RATE`] per second of `decay_time`, rounded to a
    /// whole number of picks and at least 1 (so that the normalized config, which states it,
    /// reads back to the same policy).
    pub fn idle_picks_at(&self, decay_time: Nanos) -> u32 {
        match self.idle_picks {
            Some(p) => p,
            None => {
                let picks = f64::from(IDLE_PICK_RATE) * decay_time as f64 / NANOS_PER_SEC as f64;
                // `as` saturates at u32::MAX for a decayTime of years.
                (picks.round() as u32).max(1)
            }
        }
    }

    /// The `idleMaxTime` resolved against `decay_time` (ns); `None` is no bound.
    pub fn idle_max_time_at(&self, decay_time: Nanos) -> Option<Nanos> {
        match self.idle_max {
            IdleMax::Unbounded => None,
            IdleMax::Time(t) => Some(t),
            IdleMax::DecayTimes(k) => Some(decay_time.saturating_mul(Nanos::from(k))),
        }
    }
}
