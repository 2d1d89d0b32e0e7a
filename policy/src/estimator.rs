//! Load estimators: how a policy *measures* an endpoint, kept apart from how it *decides*
//! ([`crate::p2c`]). A policy is an estimator joined to a picker by a comparable cost.

use crate::Nanos;

/// How a [`PeakEwma`] estimate decays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DecayMode {
    /// The proposal's semantics: reading the cost changes nothing; a sample blends with weight
    /// `1 − exp(−Δt/τ)` where Δt is the time since the last *sample*.
    #[default]
    TimeWeighted,
    /// tower's and Finagle's semantics: every cost read first decays the estimate and moves its
    /// stamp to now, so on a busy endpoint Δt is tiny and a fast sample barely moves the estimate;
    /// and the peak test compares a sample with the *stored* estimate (as of the last read or
    /// update), not with the estimate decayed to now ([`PeakEwma::observe_stored`]).
    OnRead,
}

/// The time base shared by all of one policy's [`PeakEwma`]s: the decay time constant `τ` and an
/// *epoch*.
///
/// Every estimate also keeps a *comparable* value, its estimate lifted to the epoch
/// (`estimate × e^((stamp − epoch)/τ)`). All estimates decay by the same factor
/// `e^(−(now − epoch)/τ)`, so at any one instant the comparable values are in the same order as
/// the decayed estimates: a picker compares costs without a single `exp`, and a sample needs one
/// (for that factor). Comparable values grow as time passes the epoch; once they may have grown by
/// `e^64` the owner calls [`Decay::rebase`] and rescales every estimate with
/// [`PeakEwma::rescale`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decay {
    /// `1/τ` in 1/ns.
    inv_tau: f64,
    epoch: Nanos,
    /// When to rebase: comparable values may have grown by `e^REBASE_AFTER` since the epoch.
    rebase_at: Nanos,
}

/// Rebase after this many time constants (comparable values stay below `e^64 × max RTT`).
const REBASE_AFTER: f64 = 64.0;

impl Decay {
    /// A time base for `decay_time` (ns, at least 1) with its epoch at `now`.
    pub fn new(decay_time: Nanos, now: Nanos) -> Self {
        let mut d = Decay {
            inv_tau: 1.0 / decay_time.max(1) as f64,
            epoch: now,
            rebase_at: now,
        };
        d.rebase(now);
        d
    }

    /// `now` with its decay factor `e^(−(now − epoch)/τ)`, computed once per policy call.
    #[inline]
    pub fn at(&self, now: Nanos) -> Moment {
        let dt = if now >= self.epoch {
            -((now - self.epoch) as f64)
        } else {
            (self.epoch - now) as f64
        };
        let factor = (dt * self.inv_tau).exp();
        Moment {
            now,
            factor,
            lift: 1.0 / factor,
        }
    }

    /// Whether the comparable values have grown enough by `now` that the epoch should move.
    #[inline]
    pub fn needs_rebase(&self, now: Nanos) -> bool {
        now >= self.rebase_at
    }

    /// Moves the epoch to `now` and returns the factor every estimate of this time base must be
    /// rescaled by ([`PeakEwma::rescale`]).
    pub fn rebase(&mut self, now: Nanos) -> f64 {
        let k = self.at(now).factor;
        self.epoch = now;
        let span = (REBASE_AFTER / self.inv_tau).min(u64::MAX as f64) as Nanos;
        self.rebase_at = now.saturating_add(span.max(1));
        k
    }
}

/// A time and its decay factor relative to a [`Decay`]'s epoch (see [`Decay::at`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moment {
    now: Nanos,
    factor: f64,
    /// `1 / factor`: the lift of an estimate stamped at `now`.
    lift: f64,
}

impl Moment {
    /// `now` without a decay factor (factor and lift 1): for estimates whose comparable value is
    /// never read, such as the split estimate of `peak_ewma_experimental`'s variations, which
    /// decays from the stored estimate and its stamp. Saves the `exp` of [`Decay::at`].
    #[inline]
    pub fn unscaled(now: Nanos) -> Self {
        Moment {
            now,
            factor: 1.0,
            lift: 1.0,
        }
    }

    /// The time (ns).
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }
}

/// A peak-sensitive exponentially weighted moving average of round-trip time.
///
/// The estimate jumps to a sample that is above its (decayed) value at once and otherwise blends
/// toward it, and between samples it decays toward 0 with time constant `τ` (`decayTime`). The
/// decay is what lets an endpoint that stopped being picked look cheap again and be probed.
///
/// All estimates of one policy share a [`Decay`]; see there for the comparable value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeakEwma {
    /// Estimate in nanoseconds as of `stamp`.
    estimate: f64,
    /// Time of the last update.
    stamp: Nanos,
    /// `e^((stamp − epoch)/τ)`: times the factor of `now` it gives the weight `e^(−(now − stamp)/τ)`.
    lift: f64,
    /// `estimate × lift`: in the same order as the decayed estimates at any one instant.
    comparable: f64,
}

impl PeakEwma {
    /// A new estimator holding `initial` (the configured `defaultRtt`) as of `at`.
    pub fn new(initial: Nanos, at: Moment) -> Self {
        let lift = at.lift;
        let estimate = initial as f64;
        PeakEwma {
            estimate,
            stamp: at.now,
            lift,
            comparable: estimate * lift,
        }
    }

    /// An estimator holding `estimate` (ns) as of `stamp` without a decay factor (as
    /// [`Moment::unscaled`] stamps it): how a picker that keeps the estimate and its stamp in
    /// atomics rebuilds it to read or update.
    #[inline]
    pub fn unscaled(estimate: f64, stamp: Nanos) -> Self {
        PeakEwma {
            estimate,
            stamp,
            lift: 1.0,
            comparable: estimate,
        }
    }

    /// The estimate decayed to `now`, in nanoseconds: `estimate × e^(−(now − stamp)/τ)`. Does not
    /// change state.
    #[inline]
    pub fn decayed(&self, now: Nanos, decay: &Decay) -> f64 {
        let dt = now.saturating_sub(self.stamp) as f64;
        self.estimate * (-dt * decay.inv_tau).exp()
    }

    /// A value proportional to [`PeakEwma::decayed`] with the same positive factor for every
    /// estimate sharing the [`Decay`]: compare these at one instant, never across instants.
    #[inline]
    pub fn comparable(&self) -> f64 {
        self.comparable
    }

    /// The stored estimate (ns) as of the last update, without any decay.
    #[inline]
    pub fn stored(&self) -> f64 {
        self.estimate
    }

    /// The time of the last update (ns).
    #[inline]
    pub fn stamp(&self) -> Nanos {
        self.stamp
    }

    /// Replaces the estimate with `rtt` (ns) as of `at`, whatever it was: the first sample of an
    /// endpoint, where the configured prior is no measurement to blend with.
    #[inline]
    pub fn replace(&mut self, at: Moment, rtt: Nanos) {
        self.set(at, rtt as f64);
    }

    /// Holds the estimate as of `at`: it becomes the larger of the stored (undecayed) estimate and
    /// `rtt` (ns), and its decay restarts from there. What a failed call does under
    /// `lblabAblation.failures: "hold"`: it can show an endpoint slow, never fast.
    #[inline]
    pub fn hold(&mut self, at: Moment, rtt: Nanos) {
        self.set(at, self.estimate.max(rtt as f64));
    }

    /// Restarts the decay at `at` from the estimate decayed by `w` (the idle weight at `at`): what
    /// an answer that is no RTT sample does under `lblabAblation.failures: "ignore"`. It moves the
    /// estimate nowhere; only the clocks it decays on start again from now.
    #[inline]
    pub fn restart(&mut self, at: Moment, w: f64) {
        self.set(at, self.estimate * w);
    }

    /// `e^(−(now − stamp)/τ)`, exactly 1 at the stamp.
    #[inline]
    pub fn weight(&self, at: Moment) -> f64 {
        if at.now <= self.stamp {
            1.0
        } else {
            (self.lift * at.factor).min(1.0)
        }
    }

    /// Reads the estimate as [`DecayMode::OnRead`] does: decays it to `at` and moves the stamp
    /// there. The comparable value does not change (reading does not change the cost now).
    #[inline]
    pub fn read_on(&mut self, at: Moment) {
        if at.now > self.stamp {
            self.estimate *= self.weight(at);
            self.stamp = at.now;
            self.lift = at.lift;
        }
    }

    /// Takes an RTT sample (ns) observed at `at`, as the proposal does ([`DecayMode::TimeWeighted`]):
    /// a sample above the estimate decayed to now is the new peak; otherwise
    /// `estimate = decayed + (1 − w) × rtt` with `w = e^(−(now − stamp)/τ)`.
    #[inline]
    pub fn observe(&mut self, at: Moment, rtt: Nanos) {
        self.observe_weighted(at, rtt, self.weight(at));
    }

    /// [`PeakEwma::observe`] with the decay weight `w` given (in `(0, 1]`) instead of the one of
    /// the time since the last sample: for an idle clock that is not the wall clock.
    #[inline]
    pub fn observe_weighted(&mut self, at: Moment, rtt: Nanos, w: f64) {
        let decayed = self.estimate * w;
        let rtt = rtt as f64;
        let estimate = if rtt > decayed {
            rtt
        } else {
            decayed + (1.0 - w) * rtt
        };
        self.set(at, estimate);
    }

    /// Takes an RTT sample (ns) observed at `at` without the peak test: always
    /// `estimate × w + (1 − w) × rtt`, a plain time-weighted EWMA as Envoy's, with the decay
    /// weight `w` given.
    #[inline]
    pub fn observe_blend(&mut self, at: Moment, rtt: Nanos, w: f64) {
        let estimate = self.estimate * w + (1.0 - w) * rtt as f64;
        self.set(at, estimate);
    }

    /// Takes an RTT sample (ns) observed at `at` as tower's `RttEstimate::update` does
    /// ([`DecayMode::OnRead`]): the peak test compares the sample with the *stored* estimate (as
    /// of the last read or update); otherwise `estimate = stored × w + rtt × (1 − w)`, the same
    /// blend as [`PeakEwma::observe`]. Only the peak test differs: a sample between the decayed
    /// and the stored estimate blends here and is a new peak there.
    #[inline]
    pub fn observe_stored(&mut self, at: Moment, rtt: Nanos) {
        let w = self.weight(at);
        let rtt = rtt as f64;
        let estimate = if self.estimate < rtt {
            rtt
        } else {
            self.estimate * w + rtt * (1.0 - w)
        };
        self.set(at, estimate);
    }

    /// Stores `estimate` as of `at` (or as of the stamp, if the clock went backwards).
    #[inline]
    fn set(&mut self, at: Moment, estimate: f64) {
        self.estimate = estimate;
        if at.now > self.stamp {
            self.stamp = at.now;
            self.lift = at.lift;
        }
        self.comparable = self.estimate * self.lift;
    }

    /// Rescales after [`Decay::rebase`] returned `k`.
    #[inline]
    pub fn rescale(&mut self, k: f64) {
        self.lift *= k;
        self.comparable *= k;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAU: Nanos = 10_000_000_000; // 10 s

    fn decay() -> Decay {
        Decay::new(TAU, 0)
    }

    #[test]
    fn a_moment_before_the_epoch_lifts_instead_of_decaying() {
        // A clock read before the epoch (e.g. a policy's first call at an earlier time than its
        // decay base) gives a factor above 1, the inverse of the same distance after it.
        let d = Decay::new(TAU, 20_000_000_000);
        let before = d.at(10_000_000_000);
        let after = d.at(30_000_000_000);
        assert!(
            (before.factor - 1.0f64.exp()).abs() < 1e-12,
            "{}",
            before.factor
        );
        assert!(
            (after.factor - (-1.0f64).exp()).abs() < 1e-12,
            "{}",
            after.factor
        );
        assert!((before.lift * before.factor - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_sample_equal_to_the_decayed_estimate_blends() {
        // The peak test is strict: a sample exactly at the decayed estimate blends. With a weight
        // of exactly 1/2 the decayed estimate of 200 is exactly 100.
        let start = Moment {
            now: 0,
            factor: 1.0,
            lift: 1.0,
        };
        let half = Moment {
            now: 1_000,
            factor: 0.5,
            lift: 2.0,
        };
        let mut e = PeakEwma::new(200, start);
        e.observe(half, 100);
        // decayed + (1 − w) × rtt = 100 + 0.5 × 100, not the peak 100.
        assert_eq!(e.estimate, 150.0);
    }

    #[test]
    fn slow_sample_jumps_to_peak() {
        let d = decay();
        let mut e = PeakEwma::new(30_000_000, d.at(0));
        e.observe(d.at(1_000), 500_000_000);
        assert_eq!(e.decayed(1_000, &d), 500_000_000.0);
    }

    #[test]
    fn decays_with_time_constant() {
        let d = decay();
        let e = PeakEwma::new(100_000_000, d.at(0));
        let after_tau = e.decayed(10_000_000_000, &d);
        assert!((after_tau / 100_000_000.0 - (-1.0f64).exp()).abs() < 1e-12);
        assert_eq!(e.decayed(0, &d), 100_000_000.0);
    }

    #[test]
    fn fast_sample_blends_by_elapsed_time() {
        let d = decay();
        let mut e = PeakEwma::new(100_000_000, d.at(0));
        // One time constant later a 10 ms sample: e^-1 * 100ms + (1 - e^-1) * 10ms.
        e.observe(d.at(10_000_000_000), 10_000_000);
        let w = (-1.0f64).exp();
        let want = 100_000_000.0 * w + (1.0 - w) * 10_000_000.0;
        assert!((e.decayed(10_000_000_000, &d) - want).abs() < 1e-3);
    }

    #[test]
    fn read_on_moves_the_stamp_so_a_sample_right_after_barely_counts() {
        let d = decay();
        let mut a = PeakEwma::new(100_000_000, d.at(0));
        let mut b = a;
        b.read_on(d.at(5_000_000_000));
        // A fast sample right after the read: without the read it blends over the 5 s since the
        // last update; after it, over ~0 s, so the sample does not count at all.
        a.observe(d.at(5_000_000_000), 1_000_000);
        b.observe(d.at(5_000_000_000), 1_000_000);
        let w = (-0.5f64).exp();
        let blended = 100_000_000.0 * w + (1.0 - w) * 1_000_000.0;
        assert!((a.decayed(5_000_000_000, &d) - blended).abs() < 1e-3);
        assert!((b.decayed(5_000_000_000, &d) - 100_000_000.0 * w).abs() < 1e-3);
    }

    #[test]
    fn observe_stored_compares_with_the_stored_estimate_not_the_decayed_one() {
        // 100 ms stored at 0; 10 s later it has decayed to 36.8 ms. A 50 ms sample is a peak for
        // the proposal (above the decayed value) but blends for tower (below the stored one).
        let d = decay();
        let mut proposal = PeakEwma::new(100_000_000, d.at(0));
        let mut tower = proposal;
        let at = d.at(TAU);
        proposal.observe(at, 50_000_000);
        tower.observe_stored(at, 50_000_000);
        assert_eq!(proposal.decayed(TAU, &d), 50_000_000.0);
        let w = (-1.0f64).exp();
        let want = 100_000_000.0 * w + 50_000_000.0 * (1.0 - w);
        assert!((tower.decayed(TAU, &d) / want - 1.0).abs() < 1e-12);
        // Above the stored estimate both jump.
        tower.observe_stored(d.at(TAU), 200_000_000);
        assert_eq!(tower.decayed(TAU, &d), 200_000_000.0);
    }

    #[test]
    fn comparable_values_order_like_decayed_estimates_and_survive_a_rebase() {
        let mut d = decay();
        let mut es = [
            PeakEwma::new(30_000_000, d.at(0)),
            PeakEwma::new(30_000_000, d.at(3_000_000_000)),
            PeakEwma::new(30_000_000, d.at(0)),
        ];
        es[0].observe(d.at(1_000_000_000), 200_000_000);
        es[2].observe(d.at(9_000_000_000), 50_000_000);
        let check = |es: &[PeakEwma], d: &Decay, now: Nanos| {
            for a in es {
                for b in es {
                    let by_cost = a.decayed(now, d).partial_cmp(&b.decayed(now, d));
                    let by_key = a.comparable().partial_cmp(&b.comparable());
                    assert_eq!(by_cost, by_key, "at {now}");
                    // The ratio is the same too.
                    let (ra, rb) = (
                        a.decayed(now, d) / b.decayed(now, d),
                        a.comparable() / b.comparable(),
                    );
                    assert!((ra / rb - 1.0).abs() < 1e-12);
                }
            }
        };
        check(&es, &d, 10_000_000_000);
        let before: Vec<f64> = es.iter().map(|e| e.decayed(700_000_000_000, &d)).collect();
        assert!(d.needs_rebase(700_000_000_000));
        let k = d.rebase(700_000_000_000);
        for e in &mut es {
            e.rescale(k);
        }
        check(&es, &d, 700_000_000_000);
        for (e, b) in es.iter().zip(before) {
            assert_eq!(e.decayed(700_000_000_000, &d), b);
        }
        // Samples after the rebase blend as before.
        let mut e = es[0];
        e.observe(d.at(700_000_000_000), 100_000_000);
        e.observe(d.at(710_000_000_000), 1_000_000);
        let w = (-1.0f64).exp();
        let want = 100_000_000.0 * w + (1.0 - w) * 1_000_000.0;
        assert!((e.decayed(710_000_000_000, &d) / want - 1.0).abs() < 1e-12);
    }

    #[test]
    fn clock_going_backwards_is_harmless() {
        let d = decay();
        let mut e = PeakEwma::new(30_000_000, d.at(1_000_000_000));
        assert_eq!(e.decayed(0, &d), 30_000_000.0);
        e.observe(d.at(0), 1_000);
        assert!(e.decayed(0, &d).is_finite());
        assert!(e.comparable().is_finite());
    }
}
