//! gRPC's reconnect backoff (the connection-backoff document of the gRPC repository), sans-IO:
//! the simulator's virtual connections and the load generator's real ones wait the same delays.

use lblab_policy::{Nanos, NANOS_PER_SEC};
use rand::Rng;

/// How long a channel waits before its next connection attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// First delay (gRPC: 1 s).
    pub initial: Nanos,
    /// Growth per failed attempt (1.6).
    pub multiplier: f64,
    /// Random spread, ± this share (0.2).
    pub jitter: f64,
    /// Largest delay before the spread (120 s).
    pub max: Nanos,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: NANOS_PER_SEC,
            multiplier: 1.6,
            jitter: 0.2,
            max: 120 * NANOS_PER_SEC,
        }
    }
}

impl Backoff {
    /// The delay before the next attempt after `attempt` failed ones (0-based), drawing the
    /// spread from `rng` (nothing is drawn when `jitter` is 0).
    pub fn delay(&self, attempt: u32, rng: &mut impl Rng) -> Nanos {
        let ns = NANOS_PER_SEC as f64;
        let base = (self.initial as f64 / ns * self.multiplier.powi(attempt.min(60) as i32))
            .min(self.max as f64 / ns);
        let spread = if self.jitter > 0.0 {
            rng.random_range(1.0 - self.jitter..1.0 + self.jitter)
        } else {
            1.0
        };
        (base * spread * ns).max(0.0) as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn delays_grow_by_the_multiplier_to_the_cap_within_the_spread() {
        let b = Backoff::default();
        let mut rng = SmallRng::seed_from_u64(1);
        for attempt in 0..30 {
            let base = (1.6f64.powi(attempt)).min(120.0);
            let d = b.delay(attempt as u32, &mut rng) as f64 / 1e9;
            assert!(
                d >= 0.8 * base - 1e-9 && d <= 1.2 * base + 1e-9,
                "{attempt}: {d}"
            );
        }
        let exact = Backoff {
            jitter: 0.0,
            ..Backoff::default()
        };
        assert_eq!(exact.delay(0, &mut rng), NANOS_PER_SEC);
        assert_eq!(exact.delay(2, &mut rng), 2_560_000_000);
        assert_eq!(exact.delay(100, &mut rng), 120 * NANOS_PER_SEC);
    }
}
