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

use lblab_message::setting::{Names, Setting};
use lblab_model::scenario::Scenario;
use lblab_stats::median_interval_at;
use serde::{Deserialize, Serialize};

use crate::batch::{self, Job};

mod error;
pub use error::{Mismatch, RegressError};

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
    /// ([`lblab_stats::time_to_fair_share`]); infinite if never within the run. Only
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
    /// The scenario's warm-up, s (as run: `--warmup` shortens it).
    pub warmup_s: f64,
    /// The scenario's measured duration, s (as run: `--duration` shortens it).
    pub duration_s: f64,
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
                .map_err(|source| RegressError::Seed {
                    scenario: s.file.name.clone(),
                    source: Box::new(source),
                })?;
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
        let time_to_fair_s = lblab_stats::time_to_fair_share(
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
            warmup_s: scenario.file.workload.warmup.0 as f64 / 1e9,
            duration_s: scenario.file.workload.duration.0 as f64 / 1e9,
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

/// The largest baseline file read: far above any real one (a row is about 120 bytes), and a
/// bound on what a wrong path (a device that never ends) can make it read.
pub const MAX_BASELINE_BYTES: u64 = 64 << 20;

/// Reads a baseline file written by [`write_baseline`]. Only a regular file is read (a named
/// pipe would block and a device may never end), at most [`MAX_BASELINE_BYTES`]; a row that
/// does not parse, or whose figures are out of their range (a latency or share that is not a
/// finite number at or above 0, a share above 1), is an error naming its line and column. The
/// setting that writes a baseline, named in the hints, is spelt by `names`.
pub fn read_baseline(path: &Path, names: Names) -> Result<Vec<Sample>, RegressError> {
    let write = names(Setting::WriteBaseline);
    use std::io::Read;
    let file = path.display().to_string();
    let bad = |line: u64, message: String| RegressError::Baseline {
        file: file.clone(),
        line,
        message,
    };
    let io = |source| RegressError::Io {
        file: file.clone(),
        source,
    };
    // Looked at before it is opened: opening a named pipe blocks until a writer comes.
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(bad(
            0,
            format!("not a regular file (a folder, a named pipe or a device): give the CSV that {write} wrote"),
        ));
    }
    if meta.len() > MAX_BASELINE_BYTES {
        return Err(bad(
            0,
            format!(
                "{} bytes, more than a baseline's limit of {} MiB: is this the CSV that {write} wrote?",
                meta.len(),
                MAX_BASELINE_BYTES >> 20
            ),
        ));
    }
    let mut text = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BASELINE_BYTES + 1).read_to_end(&mut text))
        .map_err(io)?;
    if text.len() as u64 > MAX_BASELINE_BYTES {
        return Err(bad(
            0,
            format!(
                "grew past a baseline's limit of {} MiB while read",
                MAX_BASELINE_BYTES >> 20
            ),
        ));
    }
    let mut r = csv::Reader::from_reader(text.as_slice());
    let mut out = Vec::new();
    let mut line = 1;
    for row in r.deserialize::<Sample>() {
        let sample = row.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            let mut message = e.to_string();
            if message.contains("missing field") {
                message.push_str(&format!(
                    " (a baseline written by an older lblab: write it again with {write})"
                ));
            }
            bad(line, message)
        })?;
        line += 1;
        if let Some(message) = out_of_range(&sample) {
            return Err(bad(line, message));
        }
        out.push(sample);
    }
    if out.is_empty() {
        return Err(bad(1, format!("no rows: write one with {write}")));
    }
    Ok(out)
}

/// What is wrong with a row's figures, if anything: each compared figure must be a number in its
/// range, or a run would compare as unchanged whatever it measured.
fn out_of_range(s: &Sample) -> Option<String> {
    let latency = |v: f64| v.is_finite() && v >= 0.0;
    let share = |v: f64| (0.0..=1.0).contains(&v);
    let checks = [
        (
            "p99_ms",
            s.p99_ms,
            latency(s.p99_ms),
            "a finite latency in ms, 0 or more",
        ),
        (
            "p999_ms",
            s.p999_ms,
            latency(s.p999_ms),
            "a finite latency in ms, 0 or more",
        ),
        (
            "error_share",
            s.error_share,
            share(s.error_share),
            "a share from 0 to 1",
        ),
        (
            "faulty_share",
            s.faulty_share,
            share(s.faulty_share),
            "a share from 0 to 1",
        ),
        (
            "time_to_fair_s",
            s.time_to_fair_s,
            s.time_to_fair_s.is_nan() || s.time_to_fair_s >= 0.0,
            "seconds, 0 or more (inf: never; NaN: no fault ends in the run)",
        ),
        (
            "warmup_s",
            s.warmup_s,
            latency(s.warmup_s),
            "seconds, 0 or more",
        ),
        (
            "duration_s",
            s.duration_s,
            latency(s.duration_s) && s.duration_s > 0.0,
            "seconds, more than 0",
        ),
    ];
    checks
        .iter()
        .find(|(_, _, ok, _)| !ok)
        .map(|(name, v, _, want)| format!("`{name}` is {v}, not {want}"))
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
    let num = lblab_stats::num;
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

/// What a comparison covers and allows, besides its [`Thresholds`].
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The policies this run was limited to (`--policy`; empty: all): the baseline's other
    /// policies are not expected.
    pub policies: &'a [String],
    /// Whether this run used other seeds than the baseline on purpose (`--seed-offset`); if not,
    /// a paired run with another seed is an error (the scenario's `seed` changed).
    pub other_seeds: bool,
    /// How the settings named in a mismatch's hint are spelt.
    pub names: Names,
}

impl Default for Scope<'_> {
    fn default() -> Self {
        Scope {
            policies: &[],
            other_seeds: false,
            names: Setting::word,
        }
    }
}

/// Compares `now` with `baseline`, pairing runs by scenario, policy and seed index. Every
/// scenario/policy pair of the baseline that this run covers must have been run with the same
/// seed indices, the same seeds (unless `scope.other_seeds`), the same warm-up and duration; a
/// baseline pair this run lacks is an error only if its scenario was run and its policy was
/// not left out by `scope.policies` (a policy dropped from a scenario), so a baseline of many
/// scenarios can check a few. A run that compares no figure at all (its scenarios are not in the
/// baseline, renamed perhaps) is an error, not a pass; so is a figure that is not a number where
/// the baseline has one.
pub fn compare(
    baseline: &[Sample],
    now: &[Sample],
    t: &Thresholds,
    scope: &Scope<'_>,
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
            return Err(Mismatch::SeedIndices {
                scenario: scenario.clone(),
                policy: policy.clone(),
                baseline: before.keys().copied().collect(),
                now: runs.keys().copied().collect(),
            }
            .into());
        }
        for (old, new) in &pairs {
            check_pair(old, new, scope)?;
        }
        for metric in METRICS {
            let mut d = Vec::new();
            let (mut b, mut n) = (Vec::new(), Vec::new());
            for (old, new) in &pairs {
                let (x, y) = (metric.of(old), metric.of(new));
                if x.is_nan() && y.is_nan() {
                    continue;
                }
                if x.is_nan() != y.is_nan() || (metric != Metric::TimeToFair && !y.is_finite()) {
                    return Err(Mismatch::Unmeasured {
                        scenario: scenario.clone(),
                        policy: policy.clone(),
                        seed: new.seed,
                        metric: metric.name(),
                        baseline: x,
                        now: y,
                    }
                    .into());
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
                return Err(Mismatch::FewSeeds {
                    scenario: scenario.clone(),
                    policy: policy.clone(),
                    seeds: d.len(),
                    coverage: iv.coverage,
                    confidence: t.confidence,
                    needed: seeds_needed(t.confidence),
                }
                .into());
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
            && (scope.policies.is_empty() || scope.policies.contains(policy))
            && !cur.contains_key(&(scenario.clone(), policy.clone()))
        {
            return Err(Mismatch::NotRun {
                scenario: scenario.clone(),
                policy: policy.clone(),
            }
            .into());
        }
    }
    if out.findings.is_empty() {
        let mut held: Vec<String> = baseline.iter().map(|s| s.scenario.clone()).collect();
        held.sort_unstable();
        held.dedup();
        return Err(Mismatch::NothingToCompare {
            baseline: held,
            ran: scenarios_run.into_iter().map(String::from).collect(),
        }
        .into());
    }
    Ok(out)
}

/// Whether two paired runs were made the same way: the same seed (unless other seeds are meant),
/// the same warm-up and measured duration.
fn check_pair(old: &Sample, new: &Sample, scope: &Scope<'_>) -> Result<(), Mismatch> {
    let (scenario, policy, seed_index) = (new.scenario.clone(), new.policy.clone(), new.seed_index);
    if !scope.other_seeds && old.seed != new.seed {
        return Err(Mismatch::SeedChanged {
            scenario,
            policy,
            seed_index,
            baseline: old.seed,
            now: new.seed,
            seed_offset: (scope.names)(Setting::SeedOffset),
        });
    }
    if old.warmup_s != new.warmup_s || old.duration_s != new.duration_s {
        return Err(Mismatch::Length {
            scenario,
            policy,
            seed_index,
            baseline: (old.warmup_s, old.duration_s),
            now: (new.warmup_s, new.duration_s),
            warmup: (scope.names)(Setting::Warmup),
            duration: (scope.names)(Setting::Duration),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
