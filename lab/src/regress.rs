//! `lblab regress`'s job: scenarios over seeds in the simulator, then either the baseline
//! written or the runs compared with it seed by seed ([`lblab_sim::regress`]).

pub mod real;

use std::path::{Path, PathBuf};
use std::time::Instant;

use lblab_model::units::Dur;
use lblab_sim::regress::{self, Thresholds};

use crate::error::{bail, ensure, Context, Result};
use crate::{Exit, Lab, Names, Setting};

/// What `lblab regress` runs.
#[derive(Debug, Clone, Copy)]
pub struct RegressJob<'a> {
    /// The scenario files.
    pub scenarios: &'a [PathBuf],
    /// The baseline to compare with, if comparing.
    pub baseline: Option<&'a Path>,
    /// The baseline to write, if writing one.
    pub write_baseline: Option<&'a Path>,
    /// Seeds per scenario.
    pub seeds: u64,
    /// Only these policies (all if empty).
    pub policies: &'a [String],
    /// Shift every scenario's seeds by this much.
    pub seed_offset: u64,
    /// Shortened warm-up (the fault timeline scaled in proportion).
    pub warmup: Option<Dur>,
    /// Shortened measured duration.
    pub duration: Option<Dur>,
    /// What counts as worse.
    pub thresholds: Thresholds,
    /// A CSV file for every compared figure.
    pub report: Option<&'a Path>,
    /// Threads [default: all cores].
    pub jobs: Option<usize>,
}

/// The thresholds of `--min-change` (percent), `--min-share-change` (percentage points),
/// `--min-seconds-change` and `--confidence` (percent), checked; an error spells the settings
/// with `names`.
pub fn thresholds(
    min_change: f64,
    min_share_change: f64,
    min_seconds_change: f64,
    confidence: f64,
    names: Names,
) -> Result<Thresholds> {
    let confidence_setting = names(Setting::Confidence);
    ensure!(
        (50.0..100.0).contains(&confidence),
        "{confidence_setting} {} is not a percentage from 50 to below 100 (e.g. {confidence_setting} 99)",
        confidence
    );
    ensure!(
        min_change >= 0.0 && min_share_change >= 0.0 && min_seconds_change >= 0.0,
        "{}, {} and {} must not be negative",
        names(Setting::MinChange),
        names(Setting::MinShareChange),
        names(Setting::MinSecondsChange)
    );
    Ok(Thresholds {
        relative: min_change / 100.0,
        absolute_share: min_share_change / 100.0,
        absolute_seconds: min_seconds_change,
        confidence: confidence / 100.0,
    })
}

/// Whether `a` and `b` name the same existing file (however spelled: `./x`, a symlink).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Runs `job`: [`Exit::Worse`] if a figure is worse than the baseline (the lines to `out` say
/// which).
pub fn run(lab: &Lab, job: RegressJob<'_>, out: &mut dyn FnMut(&str)) -> Result<Exit> {
    let name = lab.names;
    // The report must not overwrite what the run reads (a committed baseline, a scenario).
    if let Some(report) = job.report {
        let inputs = job
            .baseline
            .into_iter()
            .chain(job.scenarios.iter().map(PathBuf::as_path));
        for input in inputs {
            let report_setting = name(Setting::Report);
            ensure!(
                !same_file(report, input),
                "{report_setting} {} is {}, which this run reads: give the report its own file (e.g. {report_setting} regress.csv)",
                report.display(),
                if Some(input) == job.baseline { "the baseline" } else { "a scenario file" }
            );
        }
    }
    // Read the baseline first: a bad one fails before minutes of simulation.
    let baseline = match &job.baseline {
        Some(path) => Some(regress::read_baseline(path, name)?),
        None => None,
    };
    let mut scenarios = Vec::new();
    for given in job.scenarios {
        // A bare name as every command takes it (`scenarios/`, or built into lblab).
        let path = &crate::scenario::scenario_path(given)?;
        let mut s = crate::scenario::load(path, None)?;
        if job.seed_offset > 0 {
            let seed = s.file.seed.wrapping_add(job.seed_offset);
            s = s.with_seed(seed)?;
        }
        crate::scenario::check_policies(&s, job.policies)?;
        if job.warmup.is_some() || job.duration.is_some() {
            let warmup = job.warmup.unwrap_or(s.file.workload.warmup);
            let duration = job.duration.unwrap_or(s.file.workload.duration);
            ensure!(
                duration.0 > 0,
                "{} must be greater than 0s",
                name(Setting::Duration)
            );
            s = s
                .rescaled(warmup, duration)
                .with_context(|| format!("{} shortened", path.display()))?;
        }
        let sim_policies = s
            .policies
            .iter()
            .filter(|p| {
                p.runs_in_sim() && (job.policies.is_empty() || job.policies.contains(&p.name))
            })
            .count();
        lab.check_memory(
            &s,
            sim_policies,
            lblab_model::budget::Mode::Sim {
                jobs: job.jobs.unwrap_or_else(lblab_sim::batch::default_threads),
            },
        )?;
        scenarios.push(s);
    }
    let mut names: Vec<&str> = scenarios.iter().map(|s| s.file.name.as_str()).collect();
    names.sort_unstable();
    if let Some(dup) = names.windows(2).find(|w| w[0] == w[1]) {
        bail!("two scenarios are named {:?}: a baseline keys runs by scenario name; give each file its own name", dup[0]);
    }

    let started = Instant::now();
    let total_hint: usize = scenarios
        .iter()
        .map(|s| s.policies.iter().filter(|p| p.runs_in_sim()).count())
        .sum::<usize>()
        * job.seeds as usize;
    let bar = crate::progress::Progress::new(total_hint as u64, "simulations");
    let progress = |n: usize, _total: usize| bar.set(n as u64);
    let jobs = job.jobs.unwrap_or_else(lblab_sim::batch::default_threads);
    let samples = match regress::measure(
        &scenarios,
        job.seeds,
        job.policies,
        jobs,
        Some(lab.stop),
        &progress,
    ) {
        Err(regress::RegressError::Interrupted { done, total }) => {
            drop(bar);
            crate::errln!(
                "interrupted after {done} of {total} simulations: nothing compared or written"
            );
            return Ok(Exit::Interrupted);
        }
        other => other?,
    };
    drop(bar);
    let wall = started.elapsed();
    crate::errln!(
        "regress: {} scenarios, {} runs ({} seeds each) in {:.1} s",
        scenarios.len(),
        samples.len(),
        job.seeds,
        wall.as_secs_f64()
    );

    let Some(baseline) = baseline else {
        let path = job
            .write_baseline
            .context("neither a baseline to compare with nor one to write: give one of the two")?;
        // Its folder too (`lblab-out/` in a fresh clone), as a run's results folder is.
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| {
                format!(
                    "{} {}: cannot create its folder {}",
                    name(Setting::WriteBaseline),
                    path.display(),
                    parent.display()
                )
            })?;
        }
        regress::write_baseline(path, &samples)?;
        out(&format!(
            "wrote the baseline {} ({} runs); compare with {} {}",
            path.display(),
            samples.len(),
            name(Setting::Baseline),
            path.display()
        ));
        return Ok(Exit::Success);
    };
    let scope = regress::Scope {
        policies: job.policies,
        other_seeds: job.seed_offset > 0,
        names: name,
    };
    let comparison = regress::compare(&baseline, &samples, &job.thresholds, &scope)?;
    if let Some(path) = job.report {
        lblab_record::write_atomic(path, &regress::findings_csv(&comparison)?)
            .with_context(|| format!("writing {} {}", name(Setting::Report), path.display()))?;
    }
    for line in lblab_sim::regress_lines::comparison_lines(&comparison, &job.thresholds) {
        out(&line);
    }
    Ok(if comparison.worse().next().is_some() {
        Exit::Worse
    } else {
        Exit::Success
    })
}
