//! How sure a result is: medians across seeds with distribution-free 95 % confidence intervals,
//! per policy and for each policy's ratio to a baseline (round_robin, oracle).
//!
//! One seed gives one draw of arrivals, service times and picks. Running `N` seeds gives `N`
//! independent draws of every summary quantity; lblab reports their **median** and a confidence
//! interval *for that median* from order statistics: with the values sorted, `[x₍ₖ₎, x₍ₙ₋ₖ₊₁₎]`
//! covers the true median with probability `1 − 2·P(B ≤ k−1)`, `B ~ Binomial(n, ½)`, whatever the
//! distribution of the values. `k` is the largest for which that probability is at least 95 %.
//! Below 6 seeds no pair of order statistics reaches 95 %: the interval is then the whole range,
//! and its [`Interval::coverage`] says how much less than 95 % it is (3 seeds: 75 %; 5: 93.75 %).
//!
//! Ratios to a baseline are paired: seed `i` of a policy is divided by seed `i` of the baseline,
//! which saw the same arrivals and service times (every component draws from its own stream of
//! the seed), so the ratio's interval is much narrower than the two intervals apart would say.
//!
//! ```
//! use lblab_stats::median_interval;
//! let i = median_interval(&[5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 8.0, 7.0, 6.0, 10.0]);
//! assert_eq!((i.median, i.lo, i.hi), (5.5, 2.0, 9.0));
//! assert!(i.coverage > 0.95);
//! ```

use serde::{Deserialize, Serialize};

use lblab_policy::{Nanos, NANOS_PER_SEC};
use lblab_record::{SummaryRow, TimeseriesRow};

/// The confidence the intervals aim for.
pub const CONFIDENCE: f64 = 0.95;

/// A median across runs and its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Median of the values.
    #[serde(with = "extended_f64")]
    pub median: f64,
    /// Lower end of the confidence interval for the median.
    #[serde(with = "extended_f64")]
    pub lo: f64,
    /// Upper end.
    #[serde(with = "extended_f64")]
    pub hi: f64,
    /// How many values (seeds).
    pub n: usize,
    /// The interval's actual coverage: at least [`CONFIDENCE`] from 6 values on; with fewer, the
    /// interval is the whole range and covers less.
    pub coverage: f64,
}

/// JSON for an interval's ends: a number, `"inf"` for a time that never came (JSON has no
/// infinity), `null` for NaN.
mod extended_f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if *v == f64::INFINITY {
            s.serialize_str("inf")
        } else if v.is_nan() {
            s.serialize_none()
        } else {
            s.serialize_f64(*v)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Cell {
            Number(f64),
            Text(String),
            Null(()),
        }
        match Option::<Cell>::deserialize(d)? {
            Some(Cell::Number(v)) => Ok(v),
            Some(Cell::Text(t)) if t == "inf" => Ok(f64::INFINITY),
            Some(Cell::Text(t)) => Err(serde::de::Error::custom(format!(
                "{t:?} is not a number or \"inf\""
            ))),
            Some(Cell::Null(())) | None => Ok(f64::NAN),
        }
    }
}

impl Interval {
    /// `median [lo, hi]` with the given number of decimals.
    pub fn display(&self, decimals: usize) -> String {
        if self.n <= 1 {
            format!("{:.decimals$}", self.median)
        } else {
            format!(
                "{:.decimals$} [{:.decimals$}, {:.decimals$}]",
                self.median, self.lo, self.hi
            )
        }
    }
}

/// The median of the `values` that are not NaN (an infinite one, a time that never came, counts as
/// the largest) and its confidence interval (see the module docs). None: every field NaN and `n` 0.
pub fn median_interval(values: &[f64]) -> Interval {
    median_interval_at(values, CONFIDENCE)
}

/// [`median_interval`] at another confidence (0 to 1): the narrowest interval between order
/// statistics whose coverage is at least `confidence`, or the whole range when none is.
pub fn median_interval_at(values: &[f64], confidence: f64) -> Interval {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return Interval {
            median: f64::NAN,
            lo: f64::NAN,
            hi: f64::NAN,
            n: 0,
            coverage: 0.0,
        };
    }
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let (k, coverage) = median_rank(n, confidence);
    Interval {
        median,
        lo: v[k - 1],
        hi: v[n - k],
        n,
        coverage,
    }
}

/// The order statistics that bound [`median_interval_at`]'s interval over `n` values: the 1-based
/// rank `k` (the interval is the `k`-th smallest to the `k`-th largest) and its coverage, the
/// narrowest whose coverage is at least `confidence` (`k` = 1, the whole range, when none is).
/// The interval excludes a value exactly when fewer than `k` of the values lie on one side of it
/// (the sign test).
pub fn median_rank(n: usize, confidence: f64) -> (usize, f64) {
    // P(B <= j) for B ~ Binomial(n, 1/2), accumulated.
    let mut k = 1;
    let mut tail = 0.5f64.powi(n.min(i32::MAX as usize) as i32); // P(B <= 0)
    let mut coverage = 1.0 - 2.0 * tail;
    let mut term = tail; // C(n, j) / 2^n
    for j in 1..n / 2 {
        term *= (n - j + 1) as f64 / j as f64;
        let next_tail = tail + term; // P(B <= j)
        let next_coverage = 1.0 - 2.0 * next_tail;
        if next_coverage < confidence {
            break;
        }
        k = j + 1;
        tail = next_tail;
        coverage = next_coverage;
    }
    (k, coverage.max(0.0))
}

/// The one-sided exact Mann–Whitney rank test: if `before` and `after` came from one
/// distribution (every arrangement of their ranks equally likely), the probability of a U at
/// least the one observed, U counting the pairs in which the `after` value is the larger (a tie
/// counts one half, rounded up). Small when `after` tends to be larger. Exact from U's null
/// distribution, counted over the arrangements; 1 when either side is empty.
pub fn rank_test_greater(before: &[f64], after: &[f64]) -> f64 {
    let (n, m) = (before.len(), after.len());
    if n == 0 || m == 0 {
        return 1.0;
    }
    let mut twice_u = 0usize;
    for a in after {
        for b in before {
            twice_u += match a.total_cmp(b) {
                std::cmp::Ordering::Greater => 2,
                std::cmp::Ordering::Equal => 1,
                std::cmp::Ordering::Less => 0,
            };
        }
    }
    let u = twice_u.div_ceil(2);
    let counts = u_distribution(n, m);
    let total: f64 = counts.iter().sum();
    counts.get(u..).map_or(0.0, |tail| tail.iter().sum::<f64>()) / total
}

/// How many arrangements of `n` and `m` values give each U from 0 to n × m: c(i, j, u) =
/// c(i − 1, j, u − j) + c(i, j − 1, u), the largest value being from one side or the other.
fn u_distribution(n: usize, m: usize) -> Vec<f64> {
    // c[j] holds the counts for the current i and j values.
    let mut c: Vec<Vec<f64>> = (0..=m).map(|_| vec![1.0]).collect();
    for i in 1..=n {
        let mut next: Vec<Vec<f64>> = Vec::with_capacity(m + 1);
        next.push(vec![1.0]);
        for j in 1..=m {
            let mut row = vec![0.0; i * j + 1];
            for (u, x) in c[j].iter().enumerate() {
                row[u + j] += x; // the largest is one of the i: it beats all j
            }
            for (u, x) in next[j - 1].iter().enumerate() {
                row[u] += x; // the largest is one of the j
            }
            next.push(row);
        }
        c = next;
    }
    c.swap_remove(m)
}

/// What one run of one policy contributes to the intervals.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSample {
    /// Its summary row.
    pub row: SummaryRow,
    /// The herd measure ([`herd`]).
    pub herd: f64,
    /// Seconds until backends whose faults ended carry their share ([`time_to_fair_share`]).
    pub time_to_fair_s: f64,
}

/// The share of a fair share (`1/n`) a backend must carry, averaged over [`FAIR_WINDOW_S`]
/// seconds, to count as back ([`time_to_fair_share`]).
pub const FAIR_FRACTION: f64 = 0.8;
/// The seconds [`FAIR_FRACTION`] is averaged over.
pub const FAIR_WINDOW_S: usize = 3;

/// How long a policy takes to give back their traffic to backends whose faults end within the run
/// (a slowdown that heals, a crashed backend that restarts, one that joins): the seconds from the
/// latest end of a fault window before `run_end` until the backends whose last window ended then
/// carry, on average over them and over [`FAIR_WINDOW_S`] seconds, [`FAIR_FRACTION`] of a fair
/// share (`1/backends`) each. Infinite if that never happens in the run; NaN if no fault window
/// ends before `run_end` (nothing to come back). `timeseries` holds the per-second traffic shares;
/// the last second, cut short by the drain, is not counted.
pub fn time_to_fair_share(
    timeseries: &[TimeseriesRow],
    windows: &[(usize, Nanos, Nanos)],
    backends: usize,
    run_end: Nanos,
) -> f64 {
    // Each backend's last window end, if before the end of the run.
    let mut last_end = vec![0; backends];
    for &(b, _, end) in windows {
        if let Some(e) = last_end.get_mut(b) {
            *e = (*e).max(end);
        }
    }
    let Some(back_at) = last_end
        .iter()
        .copied()
        .filter(|&e| e > 0 && e < run_end)
        .max()
    else {
        return f64::NAN;
    };
    let coming_back: Vec<usize> = (0..backends).filter(|&b| last_end[b] == back_at).collect();
    let fair = FAIR_FRACTION / backends.max(1) as f64;
    let from = back_at.div_ceil(NANOS_PER_SEC);
    let rows: Vec<&TimeseriesRow> = timeseries
        .iter()
        .filter(|r| r.second >= from && (r.second + 1) * NANOS_PER_SEC <= run_end)
        .collect();
    let share = |r: &TimeseriesRow| {
        coming_back
            .iter()
            .map(|&b| r.shares.get(b).copied().unwrap_or(0.0))
            .sum::<f64>()
            / coming_back.len() as f64
    };
    for w in rows.windows(FAIR_WINDOW_S) {
        let consecutive =
            w.last().map(|r| r.second) == Some(w[0].second + FAIR_WINDOW_S as u64 - 1);
        if consecutive && w.iter().map(|r| share(r)).sum::<f64>() / FAIR_WINDOW_S as f64 >= fair {
            return (w[0].second * NANOS_PER_SEC) as f64 / 1e9 - back_at as f64 / 1e9;
        }
    }
    f64::INFINITY
}

/// The herd measure: the share of the calls sent after warm-up that waited for a worker at their
/// backend while a backend without an active fault had a worker free
/// ([`lblab_record::PolicyResult::avoidable_waits`] over the calls sent). Many clients that all
/// chase the same cheapest backend make such waits; a policy that spreads its calls where workers
/// are free does not, and the oracle, which picks by the true queues, scores lowest (about 0: only
/// a call that loses a race for a worker in the half round trip after its pick counts, and where
/// backends differ in speed, a call it queues at a fast backend rather than start on a slow one
/// that would finish later). It reads
/// load rather than traffic: the earlier measure, the busiest healthy backend's whole-run share
/// of traffic, scored the oracle worse than least_request and round_robin, because evenness of
/// traffic is not the goal. NaN when nothing was sent.
pub fn herd(avoidable_waits: u64, sends: &[u64]) -> f64 {
    let sent: u64 = sends.iter().sum();
    if sent == 0 {
        f64::NAN
    } else {
        avoidable_waits as f64 / sent as f64
    }
}

/// One summarized quantity: its name in files (`p99_ms`, `p99_vs_round_robin`, …) and how to read
/// it from a run.
struct Metric {
    name: &'static str,
    value: fn(&RunSample) -> f64,
}

const fn metric(name: &'static str, value: fn(&RunSample) -> f64) -> Metric {
    Metric { name, value }
}

/// The quantities every policy gets an interval for, in file order.
const METRICS: &[Metric] = &[
    metric("p50_ms", |s| s.row.p50_ms),
    metric("p90_ms", |s| s.row.p90_ms),
    metric("p99_ms", |s| s.row.p99_ms),
    metric("p999_ms", |s| s.row.p999_ms),
    metric("max_ms", |s| s.row.max_ms),
    metric("mean_ms", |s| s.row.mean_ms),
    metric("slow_share", |s| s.row.slow_share),
    metric("error_share", |s| {
        s.row.errors as f64 / (s.row.requests.max(1)) as f64
    }),
    metric("herd", |s| s.herd),
    metric("time_to_fair_s", |s| s.time_to_fair_s),
];

/// The quantities compared with a baseline as a paired ratio.
const RATIOS: &[Metric] = &[
    metric("p99", |s| s.row.p99_ms),
    metric("p999", |s| s.row.p999_ms),
];

/// One quantity's interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedInterval {
    /// `p99_ms`, `slow_share`, `p99_vs_round_robin`, …
    pub metric: String,
    /// Its median and interval.
    #[serde(flatten)]
    pub interval: Interval,
}

/// Every interval of one policy across seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyIntervals {
    /// Policy label.
    pub policy: String,
    /// Seeds summarized.
    pub seeds: usize,
    /// The intervals, in a fixed order: the metrics, then the ratios to each baseline present.
    pub intervals: Vec<NamedInterval>,
}

impl PolicyIntervals {
    /// The interval of `metric`, if summarized.
    pub fn get(&self, metric: &str) -> Option<&Interval> {
        self.intervals
            .iter()
            .find(|i| i.metric == metric)
            .map(|i| &i.interval)
    }
}

/// The intervals of every policy in `runs` (label, one sample per seed in seed order), with paired
/// ratios to each baseline label in `baselines` that is among them (a baseline is not compared
/// with itself).
pub fn summarize(runs: &[(String, Vec<RunSample>)], baselines: &[&str]) -> Vec<PolicyIntervals> {
    runs.iter()
        .map(|(policy, samples)| {
            let mut intervals: Vec<NamedInterval> = METRICS
                .iter()
                .map(|m| NamedInterval {
                    metric: m.name.to_string(),
                    interval: median_interval(
                        &samples.iter().map(|s| (m.value)(s)).collect::<Vec<_>>(),
                    ),
                })
                .collect();
            for base in baselines {
                let Some((_, base_samples)) = runs.iter().find(|(p, _)| p == base) else {
                    continue;
                };
                if policy == base {
                    continue;
                }
                for m in RATIOS {
                    let ratios: Vec<f64> = samples
                        .iter()
                        .zip(base_samples)
                        .map(|(s, b)| (m.value)(s) / (m.value)(b))
                        .collect();
                    intervals.push(NamedInterval {
                        metric: format!("{}_vs_{base}", m.name),
                        interval: median_interval(&ratios),
                    });
                }
            }
            PolicyIntervals {
                policy: policy.clone(),
                seeds: samples.len(),
                intervals,
            }
        })
        .collect()
}

/// `intervals.csv`: one line per policy and quantity,
/// `policy,metric,median,lo,hi,seeds,coverage`.
pub fn intervals_csv(rows: &[PolicyIntervals]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "policy", "metric", "median", "lo", "hi", "seeds", "coverage",
    ])?;
    for r in rows {
        // A quantity that applies to no run (a time to fair share where no fault ends) is left out.
        for i in r.intervals.iter().filter(|i| i.interval.n > 0) {
            let iv = &i.interval;
            w.write_record([
                r.policy.clone(),
                i.metric.clone(),
                num(iv.median),
                num(iv.lo),
                num(iv.hi),
                iv.n.to_string(),
                format!("{:.4}", iv.coverage),
            ])?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// A number for a CSV cell: 6 significant digits, `inf` for an infinite one (a time that never
/// came, [`time_to_fair_share`]), empty for NaN (not applicable).
pub fn num(v: f64) -> String {
    if v == f64::INFINITY {
        return "inf".into();
    }
    if v.is_finite() {
        let s = format!("{v:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s.is_empty() || s == "-" {
            "0".into()
        } else {
            s.to_string()
        }
    } else {
        String::new()
    }
}

/// The 95 % interval of the `q` quantile of the latencies in `h` (ns), in ms: distribution-free,
/// from the order statistics (the ranks `nq ± 1.96 √(nq(1 − q))` of `n` samples). It assumes
/// independent samples; a run's latencies are correlated in time, so the true spread is wider, and
/// a tie judged with it is the least a reader should allow for. `None` without samples.
pub fn quantile_interval(h: &hdrhistogram::Histogram<u64>, q: f64) -> Option<(f64, f64)> {
    let n = h.len() as f64;
    if n < 1.0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let half = 1.96 * (n * q * (1.0 - q)).sqrt();
    let lo = ((n * q - half).floor() / n).clamp(0.0, 1.0);
    let hi = ((n * q + half).ceil() / n).clamp(0.0, 1.0);
    let ms = |v: u64| v as f64 / 1e6;
    Some((ms(h.value_at_quantile(lo)), ms(h.value_at_quantile(hi))))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_interval_of_a_quantile_follows_the_sample_count() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        for v in 1..=10_000u64 {
            h.record(v * 1_000).unwrap(); // 1 µs … 10 ms
        }
        let (lo, hi) = super::quantile_interval(&h, 0.99).unwrap();
        // n = 10,000: ranks 9,900 ± 19.5 → 9,880 … 9,920, i.e. 9.88 … 9.92 ms (3 digits).
        assert!(
            (9.86..9.89).contains(&lo) && (9.91..9.94).contains(&hi),
            "{lo} {hi}"
        );
        assert!(
            super::quantile_interval(&hdrhistogram::Histogram::<u64>::new(3).unwrap(), 0.99)
                .is_none()
        );
    }

    #[test]
    fn the_rank_test_is_exact() {
        // Three against three, wholly separated: 1 arrangement in C(6, 3) = 20.
        let p = rank_test_greater(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert!((p - 0.05).abs() < 1e-12, "{p}");
        // The mirror: every arrangement has U >= 0.
        assert_eq!(rank_test_greater(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]), 1.0);
        // Eight against eight, separated: 1 / C(16, 8) = 1 / 12870.
        let b: Vec<f64> = (0..8).map(f64::from).collect();
        let a: Vec<f64> = (10..18).map(f64::from).collect();
        assert!((rank_test_greater(&b, &a) - 1.0 / 12870.0).abs() < 1e-15);
        // One overlap: U = 63 of 64, two arrangements reach it or more.
        let mut a2 = a.clone();
        a2[0] = 6.5;
        assert!((rank_test_greater(&b, &a2) - 2.0 / 12870.0).abs() < 1e-15);
        // The null distribution sums to one however the sides are sized.
        for (n, m) in [(1, 5), (4, 7), (10, 10)] {
            assert_eq!(u_distribution(n, m).len(), n * m + 1);
        }
    }

    use super::*;

    fn row(p99: f64) -> SummaryRow {
        SummaryRow {
            policy: "x".into(),
            requests: 100,
            ok: 100,
            errors: 0,
            deadline_exceeded: 0,
            dropped: 0,
            p50_ms: 1.0,
            p90_ms: 2.0,
            p99_ms: p99,
            p999_ms: p99 * 2.0,
            max_ms: 100.0,
            mean_ms: 1.5,
            slow_share: 0.01,
            incidents: 0,
        }
    }

    #[test]
    fn interval_of_few_seeds_is_the_range_with_its_coverage() {
        let i = median_interval(&[3.0, 1.0, 2.0]);
        assert_eq!((i.median, i.lo, i.hi, i.n), (2.0, 1.0, 3.0, 3));
        assert!((i.coverage - 0.75).abs() < 1e-12);
        let one = median_interval(&[4.0]);
        assert_eq!((one.median, one.lo, one.hi), (4.0, 4.0, 4.0));
        assert!(median_interval(&[]).median.is_nan());
        assert_eq!(median_interval(&[f64::NAN, 2.0]).n, 1);
    }

    #[test]
    fn interval_reaches_95_percent_from_six_seeds() {
        // n = 6: [x1, x6] covers 1 - 2/64 = 96.9 %.
        let i = median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!((i.lo, i.hi), (1.0, 6.0));
        assert!(i.coverage >= 0.95);
        // n = 20: k = 6, coverage 95.9 %.
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let i = median_interval(&v);
        assert_eq!((i.lo, i.hi), (6.0, 15.0));
        assert!(i.coverage >= 0.95 && i.coverage < 0.97, "{}", i.coverage);
    }

    #[test]
    fn interval_covers_the_median_about_95_percent_of_the_time() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        let trials = 4000;
        let covered = (0..trials)
            .filter(|_| {
                let v: Vec<f64> = (0..20).map(|_| rng.random::<f64>()).collect();
                let i = median_interval(&v);
                i.lo <= 0.5 && 0.5 <= i.hi
            })
            .count();
        let rate = covered as f64 / trials as f64;
        assert!((0.94..0.975).contains(&rate), "{rate}");
    }

    #[test]
    fn ratios_are_paired_by_seed() {
        let samples = |p99s: [f64; 3], herd: f64| -> Vec<RunSample> {
            p99s.map(|p| RunSample {
                row: row(p),
                herd,
                time_to_fair_s: f64::NAN,
            })
            .into()
        };
        let rr = samples([10.0, 20.0, 30.0], 1.0);
        let pe = samples([5.0, 10.0, 15.0], 1.2);
        let out = summarize(
            &[("round_robin".into(), rr), ("peak_ewma".into(), pe)],
            &["round_robin", "oracle"],
        );
        assert!(out[0].get("p99_vs_round_robin").is_none());
        let r = out[1].get("p99_vs_round_robin").unwrap();
        // Every paired ratio is exactly 0.5, though the p99s themselves spread 5 to 15.
        assert_eq!((r.median, r.lo, r.hi), (0.5, 0.5, 0.5));
        assert_eq!(out[1].get("p99_ms").unwrap().lo, 5.0);
        assert!(out[1].get("p99_vs_oracle").is_none());
        let csv = String::from_utf8(intervals_csv(&out).unwrap()).unwrap();
        assert!(csv.contains("peak_ewma,p99_vs_round_robin,0.5,0.5,0.5,3,0.7500"));
    }

    #[test]
    fn time_to_fair_share_counts_from_the_end_of_the_last_window() {
        let row = |second: u64, share1: f64| TimeseriesRow {
            policy: "p".into(),
            second,
            completed: 1,
            p50_ms: 1.0,
            p99_ms: 1.0,
            shares: vec![1.0 - share1, share1],
        };
        let s = NANOS_PER_SEC;
        // Backend 1 faulty from 0 to 2.5 s; back from second 5 (0.4 ≥ 0.8 × 1/2 for 3 s).
        let rows: Vec<_> = (0..10)
            .map(|t| row(t, if t >= 5 { 0.45 } else { 0.05 }))
            .collect();
        let windows = [(1, 0, 5 * s / 2)];
        assert_eq!(time_to_fair_share(&rows, &windows, 2, 10 * s), 2.5);
        // Never back within the run: infinite; no window ending in the run: NaN.
        let low: Vec<_> = (0..10).map(|t| row(t, 0.1)).collect();
        assert_eq!(time_to_fair_share(&low, &windows, 2, 10 * s), f64::INFINITY);
        assert!(time_to_fair_share(&rows, &[(1, 0, 10 * s)], 2, 10 * s).is_nan());
        assert!(time_to_fair_share(&rows, &[], 2, 10 * s).is_nan());
        assert_eq!(num(f64::INFINITY), "inf");
        // Intervals of such times survive JSON.
        let never = median_interval(&[f64::INFINITY, f64::INFINITY, 3.0]);
        let back: Interval = serde_json::from_str(&serde_json::to_string(&never).unwrap()).unwrap();
        assert_eq!(back, never);
        let none: Interval =
            serde_json::from_str(&serde_json::to_string(&median_interval(&[])).unwrap()).unwrap();
        assert!(none.median.is_nan());
    }

    #[test]
    fn herd_is_the_share_of_calls_that_waited_avoidably() {
        assert_eq!(herd(0, &[10, 10]), 0.0);
        assert_eq!(herd(5, &[10, 10]), 0.25);
        assert!(herd(0, &[0, 0]).is_nan());
    }
}
