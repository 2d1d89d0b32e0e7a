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
    /// stamp to now, so on a busy endpoint Δt is tiny and a fast sample barely moves the estimate.
    OnRead,
}

/// A peak-sensitive exponentially weighted moving average of round-trip time.
///
/// The estimate jumps to a sample that is above its (decayed) value at once and otherwise blends
/// toward it, and between samples it decays toward 0 with time constant `τ` (`decayTime`). The
/// decay is what lets an endpoint that stopped being picked look cheap again and be probed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeakEwma {
    /// Estimate in nanoseconds as of `stamp`.
    estimate: f64,
    /// Time of the last update.
    stamp: Nanos,
    /// Whether any real sample has been taken since the last reset.
    sampled: bool,
}

impl PeakEwma {
    /// A new estimator holding `initial` (the configured `defaultRtt`) as of `now`.
    pub fn new(initial: Nanos, now: Nanos) -> Self {
        PeakEwma {
            estimate: initial as f64,
            stamp: now,
            sampled: false,
        }
    }

    /// `exp(−Δt/τ)` for the time since the last update; 1 when time has not moved forward.
    #[inline]
    fn weight(&self, now: Nanos, inv_tau: f64) -> f64 {
        let dt = now.saturating_sub(self.stamp) as f64;
        (-dt * inv_tau).exp()
    }

    /// The estimate decayed to `now`, in nanoseconds. Does not change state. `inv_tau` is
    /// `1 / decayTime` in 1/ns.
    #[inline]
    pub fn decayed(&self, now: Nanos, inv_tau: f64) -> f64 {
        self.estimate * self.weight(now, inv_tau)
    }

    /// The estimate as the given decay mode reads it: [`DecayMode::OnRead`] moves the state to now.
    #[inline]
    pub fn read(&mut self, now: Nanos, inv_tau: f64, mode: DecayMode) -> f64 {
        let value = self.decayed(now, inv_tau);
        if mode == DecayMode::OnRead && now > self.stamp {
            self.estimate = value;
            self.stamp = now;
        }
        value
    }

    /// Takes an RTT sample (ns) observed at `now`.
    #[inline]
    pub fn observe(&mut self, now: Nanos, rtt: Nanos, inv_tau: f64) {
        let w = self.weight(now, inv_tau);
        let decayed = self.estimate * w;
        let rtt = rtt as f64;
        self.estimate = if rtt > decayed {
            rtt
        } else {
            decayed + (1.0 - w) * rtt
        };
        if now > self.stamp {
            self.stamp = now;
        }
        self.sampled = true;
    }

    /// Whether a real sample has been observed.
    pub fn sampled(&self) -> bool {
        self.sampled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAU: f64 = 10e9; // 10 s in ns
    const INV: f64 = 1.0 / TAU;

    #[test]
    fn slow_sample_jumps_to_peak() {
        let mut e = PeakEwma::new(30_000_000, 0);
        e.observe(1_000, 500_000_000, INV);
        assert_eq!(e.decayed(1_000, INV), 500_000_000.0);
    }

    #[test]
    fn decays_with_time_constant() {
        let e = PeakEwma::new(100_000_000, 0);
        let after_tau = e.decayed(10_000_000_000, INV);
        assert!((after_tau / 100_000_000.0 - (-1.0f64).exp()).abs() < 1e-12);
        assert_eq!(e.decayed(0, INV), 100_000_000.0);
    }

    #[test]
    fn fast_sample_blends_by_elapsed_time() {
        let mut e = PeakEwma::new(100_000_000, 0);
        // One time constant later a 10 ms sample: e^-1 * 100ms + (1 - e^-1) * 10ms.
        e.observe(10_000_000_000, 10_000_000, INV);
        let w = (-1.0f64).exp();
        let want = 100_000_000.0 * w + (1.0 - w) * 10_000_000.0;
        assert!((e.decayed(10_000_000_000, INV) - want).abs() < 1e-3);
    }

    #[test]
    fn read_on_read_moves_stamp_time_weighted_does_not() {
        let mut a = PeakEwma::new(100_000_000, 0);
        let mut b = a;
        a.read(5_000_000_000, INV, DecayMode::TimeWeighted);
        b.read(5_000_000_000, INV, DecayMode::OnRead);
        // A fast sample right after the read: time-weighted blends over the 5 s since the last
        // update; on-read blends over ~0 s, so the sample does not count at all.
        a.observe(5_000_000_000, 1_000_000, INV);
        b.observe(5_000_000_000, 1_000_000, INV);
        let w = (-0.5f64).exp();
        let blended = 100_000_000.0 * w + (1.0 - w) * 1_000_000.0;
        assert!((a.decayed(5_000_000_000, INV) - blended).abs() < 1e-3);
        assert!((b.decayed(5_000_000_000, INV) - 100_000_000.0 * w).abs() < 1e-3);
    }

    #[test]
    fn clock_going_backwards_is_harmless() {
        let mut e = PeakEwma::new(30_000_000, 1_000_000_000);
        assert_eq!(e.decayed(0, INV), 30_000_000.0);
        e.observe(0, 1_000, INV);
        assert!(e.decayed(0, INV).is_finite());
    }
}
