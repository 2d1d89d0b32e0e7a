//! The variations of `peak_ewma_experimental` that keep separate time constants for the blend,
//! the idle decay and a decaying peak, and the error-aware cost ([`Ablation::split`]): how such
//! an estimate is read and how a sample enters it. The default semantics do not come here.

use crate::estimator::Moment;
use crate::Nanos;

use super::{Ablation, Failures, Idle, Initial, Load, Peak, Probes};

/// The time constants of [`Ablation::split`]'s estimate, resolved against `decayTime`: the blend's
/// `τ`, the idle decay's and the peak's, as `1/τ` in 1/ns.
#[derive(Debug, Clone, Copy)]
pub(super) struct Split {
    inv_idle: f64,
    inv_peak: f64,
    /// `1/blendTime`, when set.
    inv_blend: Option<f64>,
    /// The idle time's least share of the wall time (`idle time constant / idleMaxTime`), with
    /// an `idleMaxTime`.
    idle_floor: Option<f64>,
    /// With the pick clock: picks per time constant of idle decay at most
    /// ([`Ablation::idle_picks_at`]).
    pub(super) idle_picks: f64,
    /// With the pick clock: the idle time one pick may count at most, `decayTime / idlePicks`
    /// (ns): the pick multiplies by it rather than divide, a division being the slowest step of
    /// reading an estimate (`results/bench/README.md`).
    per_pick: f64,
}

impl Split {
    pub(super) fn new(decay_time: Nanos, a: &Ablation) -> Self {
        let idle = a.idle_decay_time.unwrap_or(decay_time).max(1);
        let peak = match a.peak {
            Peak::Refutable => a.peak_decay_time.unwrap_or(decay_time),
            _ => a.peak_decay_time.unwrap_or(decay_time / 10),
        }
        .max(1);
        Split {
            inv_idle: 1.0 / idle as f64,
            inv_peak: 1.0 / peak as f64,
            inv_blend: a.blend_time.map(|b| 1.0 / b.max(1) as f64),
            // Never faster than the wall clock itself.
            idle_floor: a
                .idle_max_time_at(decay_time)
                .map(|m| (idle as f64 / m.max(1) as f64).min(1.0)),
            idle_picks: f64::from(a.idle_picks_at(decay_time)),
            per_pick: decay_time.max(1) as f64 / f64::from(a.idle_picks_at(decay_time)),
        }
    }
}

/// The weight `e^(−idle/τ_idle)` of `load`'s stored EWMA at `now` under [`Ablation::split`]: the
/// idle time is the time since the last sample, on the pick clock at most `picks since the last
/// sample × decayTime / idlePicks`; 0 when frozen, or when `probing` with `probes` one and calls
/// outstanding.
#[inline]
pub(super) fn idle_weight(
    a: &Ablation,
    split: &Split,
    picks: u64,
    load: &Load,
    now: Nanos,
    probing: bool,
) -> f64 {
    let wall = now.saturating_sub(load.rtt.stamp()) as f64;
    let idle = match a.idle {
        _ if probing && a.probes == Probes::One && load.outstanding > 0 => 0.0,
        Idle::ToZero => wall,
        Idle::Frozen => 0.0,
        Idle::PickClock => {
            let since = picks.saturating_sub(load.picks_at) as f64;
            let idle = wall.min(since * split.per_pick);
            match split.idle_floor {
                // However few picks: at least the wall-clock decay with time constant idleMaxTime.
                Some(floor) => idle.max(wall * floor),
                None => idle,
            }
        }
    };
    (-idle * split.inv_idle).exp()
}

/// [`Ablation::split`]'s estimate of `load` at `now` (ns, before the `outstanding + 1` factor):
/// the stored EWMA times its [`idle_weight`], or the [`Peak::Decaying`] peak decayed with its own
/// time constant, whichever is larger; with an `errorPenalty`, times `1 + errorPenalty × e / (1 − e)`.
#[inline]
pub(super) fn split_estimate(
    a: &Ablation,
    split: &Split,
    picks: u64,
    load: &Load,
    now: Nanos,
    probing: bool,
) -> f64 {
    let weight = idle_weight(a, split, picks, load, now, probing);
    estimate_with(a, split, load, now, weight)
}

/// [`split_estimate`] with its [`idle_weight`] already computed (one `exp` saved where the caller
/// needs the weight too).
#[inline]
fn estimate_with(a: &Ablation, split: &Split, load: &Load, now: Nanos, weight: f64) -> f64 {
    let ewma = load.rtt.stored() * weight;
    let estimate = match a.peak {
        Peak::Decaying | Peak::Refutable if load.peak > 0.0 => {
            let age = now.saturating_sub(load.peak_stamp) as f64;
            ewma.max(load.peak * (-age * split.inv_peak).exp())
        }
        _ => ewma,
    };
    match a.error_penalty {
        // Without failures the factor is exactly 1: skip its division (same bits).
        Some(_) if load.errors == 0.0 => estimate,
        Some(p) => {
            let e = load.errors.min(0.999);
            estimate * (1.0 + f64::from(p) / 100.0 * e / (1.0 - e))
        }
        None => estimate,
    }
}

/// Takes an answer to a call into `load` at `at` under [`Ablation::split`], for the sans-IO
/// policy and the concurrent one alike: the first answer of an endpoint, OK or not, is its
/// estimate (unless the semantics as first written blend it into the prior), so that an endpoint
/// that has only failed is not costed at 0 times its share of failures; later ones go through
/// [`split_observe`]. `quiet`: the endpoint gave no other answer
/// while this call was pending.
#[inline]
#[allow(clippy::too_many_arguments)]
pub(super) fn split_sample(
    a: &Ablation,
    split: &Split,
    picks: u64,
    load: &mut Load,
    at: Moment,
    rtt: Nanos,
    failed: bool,
    quiet: bool,
) {
    if !load.sampled && a.initial != Initial::Prior {
        load.rtt.replace(at, rtt);
        load.errors = if failed { 1.0 } else { 0.0 };
    } else {
        split_observe(a, split, picks, load, at, rtt, failed, quiet);
    }
    load.sampled = true;
    load.picks_at = picks;
}

/// Takes a sample `rtt` into `load` at `at` under [`Ablation::split`]: the peak test compares it
/// with the estimate now. The EWMA blends it as `stored × w + (1 − w) × rtt`: with one time
/// constant, `w` is the [`idle_weight`] (the decayed estimate is what the sample blends into, as
/// the proposal has it); with an `idleDecayTime` or a frozen estimate, `w = e^(−Δt/decayTime)`,
/// Δt since the last sample; with a `blendTime`, `w = e^(−Δt/blendTime)` and the stored estimate is
/// what the sample blends into. Under [`Peak::Jump`] a peak replaces the EWMA and under
/// [`Peak::Decaying`] a peak also sets the separate peak. Under [`Failures::Hold`] a failure only
/// counts toward the share of failures and holds the estimate (`PeakEwma::hold`). `quiet`: the
/// endpoint gave no other answer while this call was pending (what [`Peak::Stalled`] jumps on).
#[inline]
#[allow(clippy::too_many_arguments)]
fn split_observe(
    a: &Ablation,
    split: &Split,
    picks: u64,
    load: &mut Load,
    at: Moment,
    rtt: Nanos,
    failed: bool,
    quiet: bool,
) {
    let now = at.now();
    // The peak test compares RTTs: the estimate without the error factor.
    let rtt_only = Ablation {
        error_penalty: None,
        ..*a
    };
    let idle = idle_weight(a, split, picks, load, now, false);
    let current = estimate_with(&rtt_only, split, load, now, idle);
    let w = if let Some(inv_blend) = split.inv_blend {
        (-(now.saturating_sub(load.rtt.stamp()) as f64) * inv_blend).exp()
    } else if a.idle_decay_time.is_none() && a.idle != Idle::Frozen {
        idle
    } else {
        load.rtt.weight(at)
    };
    // With blendSamples, a sample's weight is at least 1 / blendSamples however recent the last.
    let w = match a.blend_samples {
        Some(n) => w.min(1.0 - 1.0 / f64::from(n)),
        None => w,
    };
    let failure = if failed { 1.0 } else { 0.0 };
    // With errorSamples, each answer moves the share of failures by at least 1 / errorSamples.
    let we = match a.error_samples {
        Some(n) => w.min(1.0 - 1.0 / f64::from(n)),
        None => w,
    };
    load.errors = load.errors * we + (1.0 - we) * failure;
    if failed && a.failures == Failures::Ignore {
        // No RTT sample, but news from the endpoint: the idle decay (wall time and picks)
        // restarts from where it had got to.
        load.rtt.restart(at, idle);
        return;
    }
    if failed && a.failures == Failures::Hold {
        // A failure says nothing about how fast the endpoint answers: it may raise the estimate
        // (a deadline), never lower it, and it restarts the idle decay as any answer does.
        load.rtt.hold(at, rtt);
        return;
    }
    let above = rtt as f64 > current;
    // With a peakRatio, a jump needs an answer that many times the estimate.
    let jumps = above
        && a.peak_ratio
            .is_none_or(|r| rtt as f64 > f64::from(r) * current);
    match a.peak {
        Peak::Jump if jumps => load.rtt.replace(at, rtt),
        Peak::Stalled if jumps && quiet => load.rtt.replace(at, rtt),
        Peak::Decaying | Peak::Refutable if above => {
            load.peak = rtt as f64;
            load.peak_stamp = now;
            load.rtt.observe_blend(at, rtt, w);
        }
        Peak::Refutable => {
            // A call sent after the peak (not one that was pending through the same stall)
            // answering at or below the plain EWMA (as of now, before this sample): the peak was
            // a tail.
            let sent = now.saturating_sub(rtt);
            if sent >= load.peak_stamp && rtt as f64 <= load.rtt.stored() * idle {
                load.peak = 0.0;
            }
            load.rtt.observe_blend(at, rtt, w);
        }
        _ => load.rtt.observe_blend(at, rtt, w),
    }
}
