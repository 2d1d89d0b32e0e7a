//! Power of d choices: sample `d` READY endpoints and keep the cheapest. The picker half of
//! `least_request_experimental` and `peak_ewma_experimental`.

use rand::{Rng, RngCore};

/// How the `d` candidates are drawn.
///
/// `least_request_experimental` draws with replacement, as gRFC A48 specifies;
/// `peak_ewma_experimental` draws distinct endpoints (see [`crate::peak_ewma`] for why).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    /// Uniformly with replacement, as gRFC A48 specifies (the same endpoint may be drawn twice,
    /// so with `d` choices among `n` endpoints every draw lands on one given endpoint with
    /// probability `1/n^d`, whatever its cost).
    WithReplacement,
    /// `d` distinct endpoints (or all of them when there are fewer), as tower, Finagle and Envoy do.
    Distinct,
}

/// The largest `choiceCount` gRPC accepts; larger values are clamped to it.
pub const MAX_CHOICES: u32 = 10;

/// A uniform index in `0..n` (`n >= 1`): exactly what rand 0.9's `rng.random_range(0..n)` draws
/// (Canon's widening multiply, with a second draw only when the low half lands in the last `n`
/// values), without its generic overhead through `dyn RngCore`. A unit test holds the two equal.
#[inline]
pub(crate) fn index(rng: &mut dyn RngCore, n: usize) -> usize {
    let Ok(range) = u32::try_from(n) else {
        return rng.random_range(0..n);
    };
    let m = u64::from(rng.next_u32()) * u64::from(range);
    let (hi, lo) = ((m >> 32) as u32, m as u32);
    if lo > range.wrapping_neg() {
        let carry = (u64::from(rng.next_u32()) * u64::from(range)) >> 32;
        if lo.checked_add(carry as u32).is_none() {
            return hi as usize + 1;
        }
    }
    hi as usize
}

/// Picks from `candidates` (non-empty) the one with the lowest `cost`, drawing `choices` of them
/// as `sampling` says. Ties go to the earlier draw (strict `<`).
#[inline]
pub fn pick<T: Copy>(
    candidates: &[T],
    choices: u32,
    sampling: Sampling,
    rng: &mut dyn RngCore,
    cost: impl FnMut(T) -> f64,
) -> T {
    pick_by(
        candidates.len(),
        |i| candidates[i],
        choices,
        sampling,
        rng,
        cost,
    )
}

/// [`pick`] over `n >= 1` candidates read by `at(i)` rather than a slice (a list another thread
/// may be changing, which the caller validates afterwards); the same draws from `rng`.
#[inline]
pub fn pick_by<T: Copy>(
    n: usize,
    at: impl Fn(usize) -> T,
    choices: u32,
    sampling: Sampling,
    rng: &mut dyn RngCore,
    cost: impl FnMut(T) -> f64,
) -> T {
    debug_assert!(n > 0);
    if n == 1 {
        return at(0);
    }
    let d = choices.clamp(1, MAX_CHOICES) as usize;
    match sampling {
        Sampling::WithReplacement => cheapest(&at, d, |_| index(rng, n), cost),
        Sampling::Distinct => distinct(n, &at, d, rng, cost),
    }
}

/// Kept out of line so the default path stays small.
#[inline(never)]
fn distinct<T: Copy>(
    n: usize,
    at: &impl Fn(usize) -> T,
    d: usize,
    rng: &mut dyn RngCore,
    cost: impl FnMut(T) -> f64,
) -> T {
    let mut drawn = [usize::MAX; MAX_CHOICES as usize];
    cheapest(
        at,
        d.min(n),
        |k| {
            // Rejection sampling: d <= 10, and only d >= n/2 ever rejects much.
            let i = loop {
                let i = index(rng, n);
                if !drawn[..k].contains(&i) {
                    break i;
                }
            };
            drawn[k] = i;
            i
        },
        cost,
    )
}

/// The cheapest of `d >= 1` candidates, the `k`-th (from 0) at index `draw(k)`. Ties go to the
/// earlier draw (strict `<`).
#[inline]
fn cheapest<T: Copy>(
    at: &impl Fn(usize) -> T,
    d: usize,
    mut draw: impl FnMut(usize) -> usize,
    mut cost: impl FnMut(T) -> f64,
) -> T {
    let mut best = at(draw(0));
    let mut best_cost = cost(best);
    for k in 1..d {
        let c = at(draw(k));
        let cc = cost(c);
        if cc < best_cost {
            best = c;
            best_cost = cc;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, SeedableRng};

    #[test]
    fn index_draws_exactly_what_random_range_draws() {
        for seed in 0..20 {
            for n in [1usize, 2, 3, 5, 10, 20, 200, 1000, 65_537, 3_000_000_000] {
                let mut a = SmallRng::seed_from_u64(seed);
                let mut b = a.clone();
                for _ in 0..500 {
                    assert_eq!(index(&mut a, n), b.random_range(0..n), "n {n} seed {seed}");
                }
            }
        }
        // The rare second draw: a low half above 2^32 - n.
        struct Fixed(Vec<u32>);
        impl RngCore for Fixed {
            fn next_u32(&mut self) -> u32 {
                self.0.remove(0)
            }
            fn next_u64(&mut self) -> u64 {
                unimplemented!()
            }
            fn fill_bytes(&mut self, _: &mut [u8]) {
                unimplemented!()
            }
        }
        for (x, y) in [
            (u32::MAX, u32::MAX),
            (0x5555_5555, 0),
            (0x5555_5555, u32::MAX),
        ] {
            let n = 3;
            let (mut ours, mut theirs) = (Fixed(vec![x, y]), Fixed(vec![x, y]));
            let got = index(&mut ours, n);
            let want = theirs.random_range(0..n);
            assert_eq!(got, want, "{x:#x} {y:#x}");
            // The same number of draws too: with x = u32::MAX the low half is exactly 2^32 - n,
            // where rand takes no second draw (a `>=` there would, and shift every later pick).
            assert_eq!(
                ours.0.len(),
                theirs.0.len(),
                "draws taken for {x:#x} {y:#x}"
            );
        }
    }

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
