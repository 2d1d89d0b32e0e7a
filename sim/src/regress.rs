//! Tail-latency regression testing: run scenarios over seeds, keep each run's tail figures as a
//! baseline, and later compare a new build's runs with it seed by seed.
//!
//! The simulator is deterministic, so the same seed under the same code gives the same figures
//! and an unchanged policy never differs from its baseline. A change is judged on the *paired*
//! differences `now − baseline` of the runs with the same seed index: a figure is **worse** when
//! the confidence interval of the median difference ([`median_interval_at`], distribution-free)
//! lies wholly above 0 and the median difference is larger than the practical threshold
//! ([`Thresholds`]); **better** in the mirror case, which is reported but never fails. Pairing
//! removes what the seed decides (the arrivals, and the service times wherever routing agrees),
//! so small shifts of a policy's behaviour stand out of the noise between seeds.
//!
//! Used by `lblab regress` and by lblab's own regression test against a committed baseline.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use lblab_model::scenario::Scenario;
use lblab_record::stats::median_interval_at;
use serde::{Deserialize, Serialize};

use crate::batch::{self, Job};
use crate::SimError;

/// The figures compared, all "lower is better".
pub const METRICS: [Metric; 5] = [
    Metric::P99,
    Metric::P999,
    Metric::ErrorShare,
    Metric::FaultyShare,
    Metric::TimeToFair,
];

/// One compared figure of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    /// p99 latency, ms.
    P99,
    /// p99.9 latency, ms.
    P999,
    /// Share of calls that failed (errors, deadlines and drops), 0 to 1.
    ErrorShare,
    /// Share of calls sent to a backend while it was faulty, 0 to 1.
    FaultyShare,
    /// Seconds until backends whose faults ended carry their fair share again
    /// ([`lblab_record::stats::time_to_fair_share`]); infinite if never within the run. Only
    /// where a fault ends within the run.
    TimeToFair,
}

impl Metric {
    /// The column name, as in the baseline file and the report.
    pub fn name(self) -> &'static str {
        match self {
            Metric::P99 => "p99_ms",
            Metric::P999 => "p999_ms",
            Metric::ErrorShare => "error_share",
            Metric::FaultyShare => "faulty_share",
            Metric::TimeToFair => "time_to_fair_s",
        }
    }

    /// Whether the figure is a share (its threshold is absolute) rather than a latency (its
    /// threshold is relative).
    pub fn is_share(self) -> bool {
        matches!(self, Metric::ErrorShare | Metric::FaultyShare)
    }

    fn of(self, s: &Sample) -> f64 {
        match self {
            Metric::P99 => s.p99_ms,
            Metric::P999 => s.p999_ms,
            Metric::ErrorShare => s.error_share,
            Metric::FaultyShare => s.faulty_share,
            Metric::TimeToFair => s.time_to_fair_s,
        }
    }
}

/// One run's figures: a row of a baseline file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The scenario's name (its `name` field).
    pub scenario: String,
    /// The policy's label in the scenario.
    pub policy: String,
    /// The seed index: 0 is the first seed (the scenario's), k the first + k. Runs are paired by
    /// it.
    pub seed_index: u64,
    /// The seed the run used.
    pub seed: u64,
    /// p99 latency of the measured calls, ms.
    pub p99_ms: f64,
    /// p99.9 latency, ms.
    pub p999_ms: f64,
    /// Share of measured calls that failed (errors, deadlines exceeded, dropped).
    pub error_share: f64,
    /// Share of measured calls sent to a backend while it was faulty.
    pub faulty_share: f64,
    /// Seconds until the backends whose faults ended carry their fair share (`inf`: never in the
    /// run; `NaN`: no fault ends within it).
    pub time_to_fair_s: f64,
}

/// Why a regression run or comparison could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegressError {
    /// A simulation failed.
    #[error("{scenario}: {source}")]
    Sim {
        /// The scenario.
        scenario: String,
        /// What failed.
        source: SimError,
    },
    /// The run was interrupted before every simulation ended.
    #[error("interrupted: {done} of {total} simulations ran; nothing was compared or written")]
    Interrupted {
        /// Simulations that ended.
        done: usize,
        /// Simulations planned.
        total: usize,
    },
    /// The baseline file could not be read or written.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The baseline file could not be written.
    #[error("{file}: {message}")]
    Write {
        /// The file.
        file: String,
        /// What failed.
        message: String,
    },
    /// A baseline row does not parse.
    #[error("{file}:{line}: {message}")]
    Baseline {
        /// The file.
        file: String,
        /// 1-based line.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The baseline and this run cannot be compared.
    #[error("{0}")]
    Mismatch(String),
}

/// Runs every scenario's simulated policies (all, or those labelled in `only`) over `seeds` seeds
/// (the scenario's seed and the next ones) on `threads` threads, and returns each run's figures,
/// in scenario, seed and policy order. `progress` gets the number of runs done and the total.
pub fn measure(
    scenarios: &[Scenario],
    seeds: u64,
    only: &[String],
    threads: usize,
    stop: Option<&AtomicBool>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Sample>, RegressError> {
    let mut seeded = Vec::new();
    for s in scenarios {
        for k in 0..seeds.max(1) {
            let seed = s.file.seed.wrapping_add(k);
            let scenario = s
                .clone()
                .with_seed(seed)
                .map_err(|e| RegressError::Mismatch(format!("{}: {e}", s.file.name)))?;
            seeded.push((k, scenario));
        }
    }
    let mut jobs = Vec::new();
    let mut keys = Vec::new();
    for (k, scenario) in &seeded {
        for policy in scenario
            .policies
            .iter()
            .filter(|p| p.runs_in_sim() && (only.is_empty() || only.contains(&p.name)))
        {
            jobs.push(Job {
                scenario,
                policy,
                clock: None,
            });
            keys.push((*k, scenario.file.seed));
        }
    }
    let total = jobs.len();
    let reduce = |i: usize, run: crate::PolicyRun| {
        let scenario = jobs[i].scenario;
        let time_to_fair_s = lblab_record::stats::time_to_fair_share(
            &run.result.timeseries,
            &scenario.fault_windows(),
            scenario.backends.len(),
            scenario.workload.end(),
        );
        let s = &run.result.summary;
        let requests = s.requests.max(1) as f64;
        Sample {
            scenario: jobs[i].scenario.file.name.clone(),
            policy: s.policy.clone(),
            seed_index: keys[i].0,
            seed: keys[i].1,
            p99_ms: s.p99_ms,
            p999_ms: s.p999_ms,
            error_share: (s.errors + s.dropped) as f64 / requests,
            faulty_share: s.slow_share,
            time_to_fair_s,
        }
    };
    let results = batch::run(&jobs, threads, stop, &|n| progress(n, total), &reduce);
    let done = results.iter().filter(|r| r.is_some()).count();
    let mut out = Vec::with_capacity(total);
    for (job, r) in jobs.iter().zip(results) {
        match r {
            Some(Ok(sample)) => out.push(sample),
            Some(Err(source)) => {
                return Err(RegressError::Sim {
                    scenario: job.scenario.file.name.clone(),
                    source,
                })
            }
            None => return Err(RegressError::Interrupted { done, total }),
        }
    }
    Ok(out)
}

/// Writes `samples` to a baseline file (CSV with a header), replacing it atomically.
pub fn write_baseline(path: &Path, samples: &[Sample]) -> Result<(), RegressError> {
    let fail = |message: String| RegressError::Write {
        file: path.display().to_string(),
        message,
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    for s in samples {
        w.serialize(s).map_err(|e| fail(e.to_string()))?;
    }
    let bytes = w.into_inner().map_err(|e| fail(e.to_string()))?;
    lblab_record::write_atomic(path, &bytes).map_err(|e| fail(e.to_string()))
}

/// Reads a baseline file written by [`write_baseline`]; a row that does not parse is an error
/// naming its line.
pub fn read_baseline(path: &Path) -> Result<Vec<Sample>, RegressError> {
    let file = path.display().to_string();
    let text = std::fs::read(path).map_err(|source| RegressError::Io {
        file: file.clone(),
        source,
    })?;
    let mut r = csv::Reader::from_reader(text.as_slice());
    let mut out = Vec::new();
    for row in r.deserialize::<Sample>() {
        let sample = row.map_err(|e| RegressError::Baseline {
            file: file.clone(),
            line: e.position().map_or(0, |p| p.line()),
            message: e.to_string(),
        })?;
        out.push(sample);
    }
    if out.is_empty() {
        return Err(RegressError::Baseline {
            file,
            line: 1,
            message: "no rows: write one with --write-baseline".into(),
        });
    }
    Ok(out)
}

/// How large a paired change must be to count, besides lying beyond the interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Latencies: the median difference relative to the baseline's median (0.01 = 1 %).
    pub relative: f64,
    /// Shares: the median difference in absolute terms (0.0002 = 0.02 percentage points).
    pub absolute_share: f64,
    /// Times to fair share: the median difference in seconds.
    pub absolute_seconds: f64,
    /// The confidence of the interval of the median difference (0.99: with 10 seeds, every
    /// paired difference must have the same sign).
    pub confidence: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            relative: 0.01,
            absolute_share: 0.0002,
            absolute_seconds: 1.0,
            confidence: 0.99,
        }
    }
}

/// What a figure did against its baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Worse beyond the interval and the threshold: a regression.
    Worse,
    /// Better beyond the interval and the threshold.
    Better,
    /// Neither.
    Same,
}

/// One figure of one policy in one scenario, compared with its baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The scenario.
    pub scenario: String,
    /// The policy.
    pub policy: String,
    /// The figure.
    pub metric: Metric,
    /// The baseline's median over the paired seeds.
    pub baseline: f64,
    /// This run's median over the paired seeds.
    pub now: f64,
    /// Median of the paired differences `now − baseline`, and its interval.
    pub change: f64,
    /// Lower end of the interval of the median difference.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// Paired seeds.
    pub seeds: usize,
    /// The verdict.
    pub verdict: Verdict,
}

impl Finding {
    /// The change relative to the baseline's median (NaN when that is 0).
    pub fn relative(&self) -> f64 {
        if self.baseline == 0.0 {
            f64::NAN
        } else {
            self.change / self.baseline
        }
    }
}

/// The comparison of a run with its baseline.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Comparison {
    /// Every compared figure, in scenario, policy and metric order.
    pub findings: Vec<Finding>,
    /// `scenario/policy` pairs run now that the baseline lacks (reported, not compared).
    pub new: Vec<String>,
}

impl Comparison {
    /// The regressions.
    pub fn worse(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.verdict == Verdict::Worse)
    }

    /// The improvements.
    pub fn better(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.verdict == Verdict::Better)
    }
}

/// The fewest seeds whose whole range covers the median with `confidence`:
/// `1 − 2^(1−n) ≥ confidence`.
pub fn seeds_needed(confidence: f64) -> u64 {
    (1.0 - (1.0 - confidence.clamp(0.0, 0.999_999)).log2())
        .ceil()
        .max(1.0) as u64
}

/// Every compared figure as CSV: scenario, policy, metric, the baseline's and this run's
/// medians, the median paired change and its interval, the seeds, and the verdict.
pub fn findings_csv(c: &Comparison) -> Result<Vec<u8>, csv::Error> {
    let num = lblab_record::stats::num;
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "scenario", "policy", "metric", "baseline", "now", "change", "lo", "hi", "seeds", "verdict",
    ])?;
    for f in &c.findings {
        let verdict = match f.verdict {
            Verdict::Worse => "worse",
            Verdict::Better => "better",
            Verdict::Same => "same",
        };
        w.write_record([
            f.scenario.as_str(),
            f.policy.as_str(),
            f.metric.name(),
            &num(f.baseline),
            &num(f.now),
            &num(f.change),
            &num(f.lo),
            &num(f.hi),
            &f.seeds.to_string(),
            verdict,
        ])?;
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

type Key = (String, String);

fn by_pair(samples: &[Sample]) -> BTreeMap<Key, BTreeMap<u64, &Sample>> {
    let mut m: BTreeMap<Key, BTreeMap<u64, &Sample>> = BTreeMap::new();
    for s in samples {
        m.entry((s.scenario.clone(), s.policy.clone()))
            .or_default()
            .insert(s.seed_index, s);
    }
    m
}

/// Compares `now` with `baseline`, pairing runs by scenario, policy and seed index. Every
/// scenario/policy pair of the baseline that this run covers must have been run with the same
/// seed indices; a baseline pair this run lacks is an error only if its scenario was run (a
/// policy dropped from a scenario), so a baseline of many scenarios can check a few.
pub fn compare(
    baseline: &[Sample],
    now: &[Sample],
    t: &Thresholds,
) -> Result<Comparison, RegressError> {
    let base = by_pair(baseline);
    let cur = by_pair(now);
    let scenarios_run: std::collections::BTreeSet<&str> =
        now.iter().map(|s| s.scenario.as_str()).collect();
    let mut out = Comparison::default();
    for ((scenario, policy), runs) in &cur {
        let Some(before) = base.get(&(scenario.clone(), policy.clone())) else {
            out.new.push(format!("{scenario}/{policy}"));
            continue;
        };
        let pairs: Vec<(&Sample, &Sample)> = runs
            .iter()
            .filter_map(|(k, s)| before.get(k).map(|b| (*b, *s)))
            .collect();
        if !runs.keys().eq(before.keys()) {
            return Err(RegressError::Mismatch(format!(
                "{scenario}/{policy}: the baseline has seed indices {:?}, this run {:?}; run as many seeds as the baseline",
                before.keys().collect::<Vec<_>>(),
                runs.keys().collect::<Vec<_>>()
            )));
        }
        for metric in METRICS {
            let mut d = Vec::new();
            let (mut b, mut n) = (Vec::new(), Vec::new());
            for (old, new) in &pairs {
                let (x, y) = (metric.of(old), metric.of(new));
                if x.is_nan() || y.is_nan() {
                    continue;
                }
                // Never (infinite) on both sides is no change; on one side, an infinite one.
                d.push(if x == y { 0.0 } else { y - x });
                b.push(x);
                n.push(y);
            }
            if d.is_empty() {
                continue;
            }
            let iv = median_interval_at(&d, t.confidence);
            if iv.coverage < t.confidence {
                return Err(RegressError::Mismatch(format!(
                    "{scenario}/{policy}: {} paired seeds give an interval of at most {:.1} % confidence, below the {:.1} % asked for; run more seeds (at least {})",
                    d.len(),
                    100.0 * iv.coverage,
                    100.0 * t.confidence,
                    seeds_needed(t.confidence)
                )));
            }
            let base_median = median_interval_at(&b, t.confidence).median;
            let threshold = match metric {
                Metric::ErrorShare | Metric::FaultyShare => t.absolute_share,
                Metric::TimeToFair => t.absolute_seconds,
                Metric::P99 | Metric::P999 => t.relative * base_median.abs(),
            };
            let verdict = if iv.lo > 0.0 && iv.median > threshold {
                Verdict::Worse
            } else if iv.hi < 0.0 && -iv.median > threshold {
                Verdict::Better
            } else {
                Verdict::Same
            };
            out.findings.push(Finding {
                scenario: scenario.clone(),
                policy: policy.clone(),
                metric,
                baseline: base_median,
                now: median_interval_at(&n, t.confidence).median,
                change: iv.median,
                lo: iv.lo,
                hi: iv.hi,
                seeds: d.len(),
                verdict,
            });
        }
    }
    for (scenario, policy) in base.keys() {
        if scenarios_run.contains(scenario.as_str())
            && !cur.contains_key(&(scenario.clone(), policy.clone()))
        {
            return Err(RegressError::Mismatch(format!(
                "{scenario}/{policy} is in the baseline but was not run; run it, or write a new baseline on purpose"
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(policy: &str, k: u64, p99: f64) -> Sample {
        Sample {
            scenario: "s".into(),
            policy: policy.into(),
            seed_index: k,
            seed: 1 + k,
            p99_ms: p99,
            p999_ms: p99 * 2.0,
            error_share: 0.0,
            faulty_share: 0.01,
            // Seconds, and one run whose backend never came back.
            time_to_fair_s: if k == 9 { f64::INFINITY } else { k as f64 },
        }
    }

    fn runs(policy: &str, p99: impl Fn(u64) -> f64) -> Vec<Sample> {
        (0..10).map(|k| sample(policy, k, p99(k))).collect()
    }

    #[test]
    fn identical_runs_change_nothing() {
        let base = runs("p", |k| 8.0 + k as f64 * 0.1);
        let c = compare(&base, &base, &Thresholds::default()).unwrap();
        assert_eq!(c.findings.len(), METRICS.len());
        assert!(c.findings.iter().all(|f| f.verdict == Verdict::Same));
    }

    #[test]
    fn a_shift_on_every_seed_beyond_the_threshold_is_worse_and_its_mirror_better() {
        // Seeds vary by a whole millisecond; the change is +2 % on every one of them.
        let base = runs("p", |k| 8.0 + k as f64);
        let worse = runs("p", |k| (8.0 + k as f64) * 1.02);
        let c = compare(&base, &worse, &Thresholds::default()).unwrap();
        let p99 = &c.findings[0];
        assert_eq!((p99.metric, p99.verdict), (Metric::P99, Verdict::Worse));
        assert!((p99.relative() - 0.02).abs() < 0.005, "{p99:?}");
        let c = compare(&worse, &base, &Thresholds::default()).unwrap();
        assert_eq!(c.findings[0].verdict, Verdict::Better);
        assert_eq!(c.worse().count(), 0);
    }

    #[test]
    fn a_shift_below_the_threshold_or_not_on_every_seed_is_not_a_regression() {
        let base = runs("p", |k| 8.0 + k as f64);
        let tiny = runs("p", |k| (8.0 + k as f64) * 1.005);
        let c = compare(&base, &tiny, &Thresholds::default()).unwrap();
        assert_eq!(c.worse().count(), 0, "{:?}", c.findings[0]);
        // Large, but one seed of ten went the other way: at 99 % that is inside the interval.
        let mixed = runs("p", |k| (8.0 + k as f64) * if k == 3 { 0.9 } else { 1.1 });
        let c = compare(&base, &mixed, &Thresholds::default()).unwrap();
        assert_eq!(c.findings[0].verdict, Verdict::Same);
    }

    #[test]
    fn shares_have_an_absolute_threshold() {
        let base = runs("p", |_| 8.0);
        let mut now = base.clone();
        for s in &mut now {
            s.faulty_share += 0.0001; // below 0.0002
        }
        let c = compare(&base, &now, &Thresholds::default()).unwrap();
        assert_eq!(c.worse().count(), 0);
        for s in &mut now {
            s.faulty_share += 0.001;
        }
        let c = compare(&base, &now, &Thresholds::default()).unwrap();
        let f: Vec<_> = c.worse().map(|f| f.metric).collect();
        assert_eq!(f, [Metric::FaultyShare]);
    }

    #[test]
    fn a_baseline_policy_not_run_or_other_seeds_are_refused_and_new_policies_reported() {
        let base = [runs("a", |_| 8.0), runs("b", |_| 8.0)].concat();
        let e = compare(&base, &runs("a", |_| 8.0), &Thresholds::default()).unwrap_err();
        assert!(e.to_string().contains("s/b is in the baseline"), "{e}");
        let five: Vec<_> = runs("a", |_| 8.0).into_iter().take(5).collect();
        let e = compare(&five, &runs("a", |_| 8.0), &Thresholds::default()).unwrap_err();
        assert!(e.to_string().contains("seed indices"), "{e}");
        let e = compare(&five, &five, &Thresholds::default()).unwrap_err();
        assert!(e.to_string().contains("run more seeds"), "{e}");
        let c = compare(
            &runs("a", |_| 8.0),
            &[runs("a", |_| 8.0), runs("c", |_| 8.0)].concat(),
            &Thresholds::default(),
        )
        .unwrap();
        assert_eq!(c.new, ["s/c"]);
    }

    #[test]
    fn a_baseline_round_trips_and_a_bad_row_names_its_line() {
        let dir = std::env::temp_dir().join(format!("lblab-regress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("baseline.csv");
        let base = runs("p", |k| 8.0 + k as f64 / 3.0);
        write_baseline(&path, &base).unwrap();
        assert_eq!(read_baseline(&path).unwrap(), base);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text = text.replacen("8.0,16.0", "8.0,fast", 1);
        std::fs::write(&path, text).unwrap();
        let e = read_baseline(&path).unwrap_err().to_string();
        assert!(e.contains("baseline.csv:2:"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
