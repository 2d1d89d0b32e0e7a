//! Power of d choices: sample `d` READY endpoints and keep the cheapest. The picker half of
//! `least_request_experimental` and `peak_ewma_experimental`.

use rand::{Rng, RngCore};

/// How the `d` candidates are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sampling {
    /// Uniformly with replacement, as gRFC A48 specifies (the same endpoint may be drawn twice).
    #[default]
    WithReplacement,
    /// `d` distinct endpoints (or all of them when there are fewer), as tower, Finagle and Envoy do.
    Distinct,
}

/// The largest `choiceCount` gRPC accepts; larger values are clamped to it.
pub const MAX_CHOICES: u32 = 10;

/// Picks from `candidates` (non-empty) the one with the lowest `cost`, drawing `choices` of them
/// as `sampling` says. Ties go to the earlier draw (strict `<`).
#[inline]
pub fn pick<T: Copy>(
    candidates: &[T],
    choices: u32,
    sampling: Sampling,
    rng: &mut dyn RngCore,
    mut cost: impl FnMut(T) -> f64,
) -> T {
    let n = candidates.len();
    debug_assert!(n > 0);
    if n == 1 {
        return candidates[0];
    }
    let d = choices.clamp(1, MAX_CHOICES) as usize;
    match sampling {
        Sampling::WithReplacement => {
            let mut best = candidates[rng.random_range(0..n)];
            let mut best_cost = cost(best);
            for _ in 1..d {
                let c = candidates[rng.random_range(0..n)];
                let cc = cost(c);
                if cc < best_cost {
                    best = c;
                    best_cost = cc;
                }
            }
            best
        }
        Sampling::Distinct => {
            let mut drawn = [usize::MAX; MAX_CHOICES as usize];
            let d = d.min(n);
            let mut best = None::<(T, f64)>;
            for k in 0..d {
                // Rejection sampling: d <= 10, and only d >= n/2 ever rejects much.
                let i = loop {
                    let i = rng.random_range(0..n);
                    if !drawn[..k].contains(&i) {
                        break i;
                    }
                };
                drawn[k] = i;
                let c = candidates[i];
                let cc = cost(c);
                if best.is_none_or(|(_, b)| cc < b) {
                    best = Some((c, cc));
                }
            }
            best.map(|(c, _)| c).unwrap_or(candidates[0])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, SeedableRng};

    #[test]
    fn distinct_never_draws_the_same_twice() {
        let mut rng = SmallRng::seed_from_u64(1);
        // Two candidates, the first cheaper: distinct sampling always sees both.
        for _ in 0..1000 {
            let got = pick(&[0u32, 1], 2, Sampling::Distinct, &mut rng, |c| c as f64);
            assert_eq!(got, 0);
        }
    }

    #[test]
    fn with_replacement_sometimes_draws_the_same_twice() {
        let mut rng = SmallRng::seed_from_u64(1);
        let worse = (0..4000)
            .filter(|_| {
                pick(&[0u32, 1], 2, Sampling::WithReplacement, &mut rng, |c| {
                    c as f64
                }) == 1
            })
            .count();
        // P(both draws are the worse endpoint) = 1/4.
        assert!((800..1200).contains(&worse), "{worse}");
    }

    #[test]
    fn ties_go_to_the_first_draw() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut counts = [0; 3];
        for _ in 0..3000 {
            counts[pick(
                &[0usize, 1, 2],
                2,
                Sampling::WithReplacement,
                &mut rng,
                |_| 1.0,
            )] += 1;
        }
        assert!(counts.iter().all(|&c| c > 800), "{counts:?}");
    }
}
