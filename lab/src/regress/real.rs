//! `lblab regress --targets`: tail-latency regression testing against the real service. The
//! policies run against the targets several times, interleaved ([`crate::remote::run_repeats`]);
//! each repeat's p99, p99.9, failed share and calls per second are the baseline's rows, or are
//! compared with them.
//!
//! **The rule.** Repeats of a baseline and of a later run are not paired (they ran at other
//! times), so each figure is compared by the one-sided exact Mann–Whitney rank test
//! ([`rank_test_greater`]) between the baseline's repeats and this run's: a figure is **worse**
//! when the test's p-value is at most `(1 − confidence) / figures` (Bonferroni over every figure
//! compared) and its median moved by more than the practical threshold. If the service did not
//! change and the repeats of both runs are exchangeable (the same machine class, the same load),
//! a run raises a false alarm with probability at most `1 − confidence`, whatever the
//! distribution of the figures. With 8 repeats a side the smallest p-value is 1 / 12,870.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use lblab_stats::{median_interval_at, rank_test_greater};
use serde::{Deserialize, Serialize};

use crate::error::{bail, ensure, Context, LabError, Result};
use crate::{Exit, Lab, Names, Setting};
use lblab_loadgen::run::CallOptions;
use lblab_loadgen::target::{Target, TargetSpec};

/// One repeat of one policy: a row of a real-service baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RealSample {
    /// The policy's label.
    pub policy: String,
    /// The repeat, from 1.
    pub repeat: u32,
    /// The method called (`package.Service/Method`, or lblab's Echo/Unary).
    pub method: String,
    /// The load: offered calls per second (open loop), or 0.
    pub rate: f64,
    /// Calls in flight per client (closed loop), or 0.
    pub concurrency: u32,
    /// Client channels.
    pub clients: u32,
    /// Warm-up, s.
    pub warmup_s: f64,
    /// Measured duration, s.
    pub duration_s: f64,
    /// p99 latency, ms.
    pub p99_ms: f64,
    /// p99.9 latency, ms.
    pub p999_ms: f64,
    /// Share of the measured calls that failed.
    pub error_share: f64,
    /// Calls answered OK per measured second.
    pub calls_per_s: f64,
}

/// The figures compared, and whether a larger value is worse.
const FIGURES: [(&str, bool); 4] = [
    ("p99_ms", true),
    ("p999_ms", true),
    ("error_share", true),
    ("calls_per_s", false),
];

fn figure(s: &RealSample, name: &str) -> f64 {
    match name {
        "p99_ms" => s.p99_ms,
        "p999_ms" => s.p999_ms,
        "error_share" => s.error_share,
        _ => s.calls_per_s,
    }
}

/// What `lblab regress --targets` runs: the run planned (its scenario, with the load asked for),
/// the targets and the options of every call, as the caller resolved them.
pub struct RealJob<'a> {
    /// The plan: the scenario (a file's, or one made of the load asked for) and any schedule.
    pub plan: &'a lblab_harness::Plan,
    /// The targets, names resolved.
    pub targets: &'a [Target],
    /// The target list as given (re-resolved during the run for `dns:///` names).
    pub spec: TargetSpec,
    /// The options of every call (transport, `:authority`, method, metadata).
    pub calls: CallOptions,
    /// How long to wait for the first connections [default: the harness's].
    pub connect_wait: Option<Duration>,
    /// Repeats.
    pub repeats: u32,
    /// The baseline to compare with, read ([`read_baseline`]).
    pub baseline: Option<Vec<RealSample>>,
    /// The baseline to write.
    pub write_baseline: Option<&'a Path>,
    /// A CSV of every compared figure.
    pub report: Option<&'a Path>,
    /// Family-wise confidence, 0 to 1: a false alarm in at most `1 − confidence` of the runs
    /// of an unchanged service.
    pub confidence: f64,
    /// Latencies and calls/s: the median change that counts, relative (0.05 = 5 %).
    pub min_change: f64,
    /// Failed share: the median change that counts, absolute.
    pub min_share_change: f64,
    /// Real-time scheduling for the load generator.
    pub realtime: bool,
    /// The stop flag.
    pub stop: &'static AtomicBool,
    /// Where the repeats' run folders go.
    pub out: PathBuf,
}

/// Reads a real-service baseline; a simulator baseline, a non-regular file or a bad row is an
/// error naming the file and line, and the settings it names spelt by `names`.
pub fn read_baseline(path: &Path, names: Names) -> Result<Vec<RealSample>> {
    let [baseline, write, targets] =
        [Setting::Baseline, Setting::WriteBaseline, Setting::Targets].map(names);
    let given = || format!("{baseline} {}", path.display());
    let meta = std::fs::metadata(path).with_context(given)?;
    ensure!(
        meta.is_file() && meta.len() <= lblab_sim::regress::MAX_BASELINE_BYTES,
        "{}: not a regular file of at most {} MiB: give the CSV that {write} wrote",
        given(),
        lblab_sim::regress::MAX_BASELINE_BYTES >> 20
    );
    let text = std::fs::read(path).with_context(given)?;
    let mut r = csv::Reader::from_reader(text.as_slice());
    let header = r.headers().with_context(given)?;
    if header.iter().any(|h| h == "seed_index") {
        bail!(
            "{}: a simulator baseline (written without {targets}): compare it without {targets}, or write a real-service baseline with {targets} {write}",
            given()
        );
    }
    let mut out = Vec::new();
    for row in r.deserialize::<RealSample>() {
        let sample = row.map_err(|e| {
            LabError::Message(format!(
                "{}:{}: {e}",
                path.display(),
                e.position().map_or(0, |p| p.line())
            ))
        })?;
        let finite = [
            sample.p99_ms,
            sample.p999_ms,
            sample.error_share,
            sample.calls_per_s,
        ]
        .iter()
        .all(|x| x.is_finite() && *x >= 0.0);
        ensure!(
            finite,
            "{}: repeat {} of {}: a figure is not a finite number at or above 0",
            path.display(),
            sample.repeat,
            sample.policy
        );
        out.push(sample);
    }
    ensure!(
        !out.is_empty(),
        "{}: no rows: write one with {write}",
        path.display()
    );
    Ok(out)
}

/// One figure of one policy, compared.
#[derive(Debug, Clone, PartialEq)]
pub struct RealFinding {
    /// The policy.
    pub policy: String,
    /// The figure.
    pub figure: &'static str,
    /// The baseline's median over its repeats.
    pub baseline: f64,
    /// This run's median.
    pub now: f64,
    /// The rank test's p-value for "worse".
    pub p: f64,
    /// The p-value at or below which it counts.
    pub alpha: f64,
    /// Beyond the test and the threshold.
    pub worse: bool,
}

/// Compares this run's repeats with the baseline's, policy by policy (every policy of the run
/// must be in the baseline, made with the same method and load).
pub fn compare(
    baseline: &[RealSample],
    now: &[RealSample],
    confidence: f64,
    min_change: f64,
    min_share_change: f64,
) -> Result<Vec<RealFinding>> {
    let mut policies: Vec<&str> = now.iter().map(|s| s.policy.as_str()).collect();
    policies.dedup();
    let figures = policies.len() * FIGURES.len();
    let alpha = (1.0 - confidence) / figures.max(1) as f64;
    let mut out = Vec::new();
    for policy in policies {
        let mine: Vec<&RealSample> = now.iter().filter(|s| s.policy == policy).collect();
        let base: Vec<&RealSample> = baseline.iter().filter(|s| s.policy == policy).collect();
        let held: Vec<&str> = {
            let mut h: Vec<&str> = baseline.iter().map(|s| s.policy.as_str()).collect();
            h.dedup();
            h
        };
        ensure!(
            !base.is_empty(),
            "policy {policy:?} is not in the baseline (it holds {}); a renamed policy needs a new baseline, written on purpose",
            held.join(", ")
        );
        let (b, m) = (base[0], mine[0]);
        let same_load = b.method == m.method
            && b.rate == m.rate
            && b.concurrency == m.concurrency
            && b.clients == m.clients
            && b.warmup_s == m.warmup_s
            && b.duration_s == m.duration_s;
        ensure!(
            same_load,
            "{policy}: the baseline called {} at {} calls/s (concurrency {}, {} clients) for {} s after {} s, this run {} at {} calls/s (concurrency {}, {} clients) for {} s after {} s; give the same load, or write a new baseline on purpose",
            b.method, b.rate, b.concurrency, b.clients, b.duration_s, b.warmup_s,
            m.method, m.rate, m.concurrency, m.clients, m.duration_s, m.warmup_s
        );
        for (name, larger_is_worse) in FIGURES {
            let x: Vec<f64> = base.iter().map(|s| figure(s, name)).collect();
            let y: Vec<f64> = mine.iter().map(|s| figure(s, name)).collect();
            let (bm, nm) = (
                median_interval_at(&x, 0.95).median,
                median_interval_at(&y, 0.95).median,
            );
            let (p, moved) = if larger_is_worse {
                (rank_test_greater(&x, &y), nm - bm)
            } else {
                (rank_test_greater(&y, &x), bm - nm)
            };
            let threshold = if name == "error_share" {
                min_share_change
            } else {
                min_change * bm.abs()
            };
            out.push(RealFinding {
                policy: policy.to_string(),
                figure: name,
                baseline: bm,
                now: nm,
                p,
                alpha,
                worse: p <= alpha && moved > threshold,
            });
        }
    }
    Ok(out)
}

/// The findings as printed: one line per figure, the worse ones marked, then the count.
pub fn lines(findings: &[RealFinding], repeats: (usize, usize)) -> Vec<String> {
    let mut out = vec![format!(
        "  {:<28} {:<12} {:>12} {:>12} {:>9}  {:<24}",
        "policy", "figure", "baseline", "now", "change", "rank test p (worse if <=)"
    )];
    for f in findings {
        let change = if f.figure == "error_share" {
            format!("{:+.3} pp", 100.0 * (f.now - f.baseline))
        } else {
            format!("{:+.1} %", 100.0 * (f.now / f.baseline - 1.0))
        };
        out.push(format!(
            "  {:<28} {:<12} {:>12.4} {:>12.4} {:>9}  {:.2e} ({:.2e}){}",
            f.policy,
            f.figure,
            f.baseline,
            f.now,
            change,
            f.p,
            f.alpha,
            if f.worse { "  WORSE" } else { "" }
        ));
    }
    let worse = findings.iter().filter(|f| f.worse).count();
    out.push(format!(
        "{} figures compared ({} baseline repeats, {} now): {worse} worse (a one-sided rank test at its share of the false-alarm rate, and a change beyond the threshold)",
        findings.len(),
        repeats.0,
        repeats.1
    ));
    out
}

/// Every finding as CSV.
pub fn findings_csv(findings: &[RealFinding]) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let fail = |e: csv::Error| LabError::Message(format!("writing the report: {e}"));
    w.write_record([
        "policy", "figure", "baseline", "now", "p", "alpha", "verdict",
    ])
    .map_err(fail)?;
    for f in findings {
        w.write_record([
            f.policy.as_str(),
            f.figure,
            &f.baseline.to_string(),
            &f.now.to_string(),
            &f.p.to_string(),
            &f.alpha.to_string(),
            if f.worse { "worse" } else { "same" },
        ])
        .map_err(fail)?;
    }
    w.into_inner()
        .map_err(|e| LabError::Message(format!("writing the report: {e}")))
}

/// Refuses a repeat count that cannot be compared: a rank test needs repeats on each side. The
/// error spells the setting with `names`.
pub fn check_repeats(repeats: u32, names: Names) -> Result<()> {
    ensure!(
        repeats >= 2,
        "{} {repeats}: a real-service comparison needs repeats on each side (8 or more: with 8 a side a wholly separated figure has p = 1/12,870)",
        names(Setting::Repeat)
    );
    Ok(())
}

/// Runs `job`: [`Exit::Worse`] if a figure is worse than the baseline's.
pub fn run(lab: &Lab, mut job: RealJob<'_>, out: &mut dyn FnMut(&str)) -> Result<Exit> {
    let baseline = job.baseline.take();
    let name = lab.names;
    check_repeats(job.repeats, name)?;
    let scenario = &job.plan.scenario;
    let planned = scenario
        .policies
        .iter()
        .filter(|p| p.runs_in_real())
        .count();
    lab.check_memory(scenario, planned, lblab_model::budget::Mode::Real)?;
    let method = job
        .calls
        .call
        .as_ref()
        .map_or_else(|| "lblab.echo.v1.Echo/Unary".into(), |c| c.name.clone());
    let options = lblab_harness::RemoteOptions {
        targets: job.targets,
        resolver: Some(job.spec.clone()),
        calls: job.calls.clone(),
        realtime: job.realtime,
        origin: None,
        stop: Some(job.stop),
        live: None,
        max_calls: None,
        warp: job.plan.warp.clone(),
        slot_spans: job.plan.slot_spans.clone(),
        connect_wait: job.connect_wait,
        spin: lblab_wire::timer::DEFAULT_SPIN,
        threads: lblab_loadgen::run::WORKER_THREADS,
    };
    let _dir = crate::out_dir::prepare_dir(&job.out)?;
    let done = crate::remote::run_repeats(
        lab,
        scenario,
        &options,
        planned,
        &job.out,
        job.repeats,
        &mut |line| crate::errln!("{line}"),
    )?;
    if done.partial || done.failed.is_some() {
        crate::errln!(
            "{} after {} of {} repeats: nothing compared or written; the runs are in {}",
            done.failed.as_deref().unwrap_or("interrupted"),
            done.repeats.len(),
            job.repeats,
            job.out.display()
        );
        if let Some(why) = done.failed {
            bail!("{why}");
        }
        return Ok(Exit::Interrupted);
    }
    let w = &scenario.file.workload;
    let mut samples = Vec::new();
    for (r, repeat) in done.repeats.iter().enumerate() {
        for row in &repeat.summary.rows {
            let requests = row.requests.max(1) as f64;
            samples.push(RealSample {
                policy: row.policy.clone(),
                repeat: r as u32 + 1,
                method: method.clone(),
                rate: if w.concurrency.is_some() { 0.0 } else { w.rate },
                concurrency: w.concurrency.unwrap_or(0),
                clients: w.clients,
                warmup_s: w.warmup.0 as f64 / 1e9,
                duration_s: w.duration.0 as f64 / 1e9,
                p99_ms: row.p99_ms,
                p999_ms: row.p999_ms,
                error_share: (row.errors + row.dropped) as f64 / requests,
                calls_per_s: row.ok as f64 / repeat.summary.measured_s.max(1e-9),
            });
        }
    }
    let Some(baseline) = baseline else {
        let path = job
            .write_baseline
            .context("neither a baseline to compare with nor one to write: give one of the two")?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("{} {}", name(Setting::WriteBaseline), path.display()))?;
        }
        let mut w = csv::Writer::from_writer(Vec::new());
        for s in &samples {
            w.serialize(s)
                .map_err(|e| LabError::Message(format!("{}: {e}", path.display())))?;
        }
        let bytes = w
            .into_inner()
            .map_err(|e| LabError::Message(format!("{}: {e}", path.display())))?;
        lblab_record::write_atomic(path, &bytes)
            .with_context(|| format!("{} {}", name(Setting::WriteBaseline), path.display()))?;
        out(&format!(
            "wrote the real-service baseline {} ({} repeats of {} policies); compare with {} {}",
            path.display(),
            done.repeats.len(),
            planned,
            name(Setting::Baseline),
            path.display()
        ));
        return Ok(Exit::Success);
    };
    let findings = compare(
        &baseline,
        &samples,
        job.confidence,
        job.min_change,
        job.min_share_change,
    )?;
    if let Some(path) = job.report {
        lblab_record::write_atomic(path, &findings_csv(&findings)?)
            .with_context(|| format!("writing {} {}", name(Setting::Report), path.display()))?;
    }
    let base_repeats = baseline
        .iter()
        .filter(|s| s.policy == baseline[0].policy)
        .count();
    for line in lines(&findings, (base_repeats, done.repeats.len())) {
        out(&line);
    }
    Ok(if findings.iter().any(|f| f.worse) {
        Exit::Worse
    } else {
        Exit::Success
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(policy: &str, p99: &[f64]) -> Vec<RealSample> {
        p99.iter()
            .enumerate()
            .map(|(i, &p)| RealSample {
                policy: policy.into(),
                repeat: i as u32 + 1,
                method: "m".into(),
                rate: 100.0,
                concurrency: 0,
                clients: 1,
                warmup_s: 1.0,
                duration_s: 2.0,
                p99_ms: p,
                p999_ms: p * 2.0,
                error_share: 0.0,
                calls_per_s: 100.0,
            })
            .collect()
    }

    #[test]
    fn a_separated_shift_is_worse_and_noise_is_not() {
        let base = samples("rr", &[5.0, 5.1, 4.9, 5.2, 5.0, 4.8, 5.1, 5.05]);
        let slower: Vec<f64> = base.iter().map(|s| s.p99_ms * 1.2).collect();
        let f = compare(&base, &samples("rr", &slower), 0.95, 0.05, 0.001).unwrap();
        let worse: Vec<_> = f.iter().filter(|f| f.worse).map(|f| f.figure).collect();
        assert_eq!(worse, ["p99_ms", "p999_ms"]);
        // Shuffled values of the same spread: nothing.
        let same = samples("rr", &[5.1, 4.9, 5.0, 5.2, 4.8, 5.05, 5.0, 5.1]);
        let f = compare(&base, &same, 0.95, 0.05, 0.001).unwrap();
        assert!(f.iter().all(|f| !f.worse), "{f:?}");
        // Separated but below the threshold: nothing.
        let tiny: Vec<f64> = base.iter().map(|s| s.p99_ms + 0.01 + 0.5).collect();
        let f = compare(&base, &samples("rr", &tiny), 0.95, 0.2, 0.001).unwrap();
        assert!(f.iter().all(|f| !f.worse), "{f:?}");
    }

    #[test]
    fn another_load_or_a_policy_not_in_the_baseline_is_refused() {
        let base = samples("rr", &[5.0; 8]);
        let e = compare(&base, &samples("pe", &[5.0; 8]), 0.95, 0.05, 0.001).unwrap_err();
        assert!(
            e.to_string()
                .contains("\"pe\" is not in the baseline (it holds rr)"),
            "{e}"
        );
        let mut other = samples("rr", &[5.0; 8]);
        other.iter_mut().for_each(|s| s.rate = 200.0);
        let e = compare(&base, &other, 0.95, 0.05, 0.001).unwrap_err();
        assert!(e.to_string().contains("give the same load"), "{e}");
    }
}
