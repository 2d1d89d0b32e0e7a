//! `lblab regress`: tail-latency regression testing against a baseline, for CI.
//!
//! Exit codes: 0 no figure is worse than the baseline; 1 at least one is (the table says which);
//! 2 the run could not be made or compared (a bad scenario or baseline file, a baseline of other
//! seeds or policies); 130 interrupted.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use lblab_model::units::Dur;
use lblab_sim::regress::{self, Comparison, Finding, Thresholds};

use super::{args, output};

/// Arguments of `lblab regress`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("mode").required(true).args(["baseline", "write_baseline"]))]
pub struct Args {
    /// Scenario files (TOML); each runs every policy the simulator runs (or those of --policy).
    #[arg(required = true)]
    scenarios: Vec<PathBuf>,
    /// Compare with this baseline file (written earlier with --write-baseline): exit 1 if a
    /// figure is worse beyond its paired-seed interval and the threshold.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Run and write the baseline file instead of comparing (update it on purpose, and commit it).
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// Seeds per scenario (its seed and the next ones); the baseline and the comparison must use
    /// the same number. At the default confidence, 8 or more.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    seeds: u64,
    /// Only run the policies with these labels (repeatable).
    #[arg(long = "policy")]
    policies: Vec<String>,
    /// Shift every scenario's seeds by this much: the same code on other draws, paired by seed
    /// index with a baseline of the usual seeds (how the false-alarm rate is measured).
    #[arg(long, default_value_t = 0)]
    seed_offset: u64,
    /// Run each scenario shortened to this warm-up, with its fault timeline scaled in proportion
    /// (with --duration; e.g. --warmup 5s --duration 15s). The baseline must be made the same way.
    #[arg(long)]
    warmup: Option<Dur>,
    /// Measure each scenario for this long, its fault timeline scaled in proportion (see --warmup).
    #[arg(long)]
    duration: Option<Dur>,
    /// A latency counts as worse only if its median paired change is above this share of the
    /// baseline, in percent.
    #[arg(long, default_value_t = 1.0)]
    min_change: f64,
    /// A share (errors, calls to faulty backends) counts as worse only if its median paired
    /// change is above this, in percentage points.
    #[arg(long, default_value_t = 0.02)]
    min_share_change: f64,
    /// A time to fair share counts as worse only if its median paired change is above this many
    /// seconds.
    #[arg(long, default_value_t = 1.0)]
    min_seconds_change: f64,
    /// Confidence of the interval of the median paired change, in percent.
    #[arg(long, default_value_t = 99.0)]
    confidence: f64,
    /// Also write every compared figure to this CSV file.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Threads to run simulations on, 1 to 1024 [default: all cores].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    jobs: Option<u16>,
    #[command(flatten)]
    budget: args::Budget,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    a.budget.apply();
    anyhow::ensure!(
        (50.0..100.0).contains(&a.confidence),
        "--confidence {} is not a percentage from 50 to below 100 (e.g. --confidence 99)",
        a.confidence
    );
    anyhow::ensure!(
        a.min_change >= 0.0 && a.min_share_change >= 0.0 && a.min_seconds_change >= 0.0,
        "--min-change, --min-share-change and --min-seconds-change must not be negative"
    );
    let thresholds = Thresholds {
        relative: a.min_change / 100.0,
        absolute_share: a.min_share_change / 100.0,
        absolute_seconds: a.min_seconds_change,
        confidence: a.confidence / 100.0,
    };
    // Read the baseline first: a bad one fails before minutes of simulation.
    let baseline = match &a.baseline {
        Some(path) => Some(regress::read_baseline(path)?),
        None => None,
    };
    let mut scenarios = Vec::new();
    for path in &a.scenarios {
        let mut s = args::load(path, None)?;
        if a.seed_offset > 0 {
            let seed = s.file.seed.wrapping_add(a.seed_offset);
            s = s.with_seed(seed)?;
        }
        args::check_policies(&s, &a.policies)?;
        if a.warmup.is_some() || a.duration.is_some() {
            let warmup = a.warmup.unwrap_or(s.file.workload.warmup);
            let duration = a.duration.unwrap_or(s.file.workload.duration);
            anyhow::ensure!(duration.0 > 0, "--duration must be greater than 0s");
            s = s
                .rescaled(warmup, duration)
                .with_context(|| format!("{} shortened", path.display()))?;
        }
        let sim_policies = s
            .policies
            .iter()
            .filter(|p| p.runs_in_sim() && (a.policies.is_empty() || a.policies.contains(&p.name)))
            .count();
        super::check_memory(
            &s,
            sim_policies,
            lblab_model::budget::Mode::Sim {
                jobs: a
                    .jobs
                    .map_or_else(lblab_sim::batch::default_threads, usize::from),
            },
        )?;
        scenarios.push(s);
    }
    let mut names: Vec<&str> = scenarios.iter().map(|s| s.file.name.as_str()).collect();
    names.sort_unstable();
    if let Some(dup) = names.windows(2).find(|w| w[0] == w[1]) {
        anyhow::bail!("two scenarios are named {:?}: a baseline keys runs by scenario name; give each file its own name", dup[0]);
    }

    let started = Instant::now();
    let total_hint: usize = scenarios
        .iter()
        .map(|s| s.policies.iter().filter(|p| p.runs_in_sim()).count())
        .sum::<usize>()
        * a.seeds as usize;
    let bar = super::progress::Progress::new(total_hint as u64, "simulations");
    let progress = |n: usize, _total: usize| bar.set(n as u64);
    let jobs = a
        .jobs
        .map_or_else(lblab_sim::batch::default_threads, usize::from);
    let samples = match regress::measure(
        &scenarios,
        a.seeds,
        &a.policies,
        jobs,
        Some(output::stop_flag()),
        &progress,
    ) {
        Err(regress::RegressError::Interrupted { done, total }) => {
            drop(bar);
            eprintln!(
                "interrupted after {done} of {total} simulations: nothing compared or written"
            );
            return Ok(ExitCode::from(130));
        }
        other => other?,
    };
    drop(bar);
    let wall = started.elapsed();
    eprintln!(
        "regress: {} scenarios, {} runs ({} seeds each) in {:.1} s",
        scenarios.len(),
        samples.len(),
        a.seeds,
        wall.as_secs_f64()
    );

    let Some(baseline) = baseline else {
        let path = a.write_baseline.as_ref().expect("clap requires one mode");
        regress::write_baseline(path, &samples)?;
        outln!(
            "wrote the baseline {} ({} runs); compare with --baseline {}",
            path.display(),
            samples.len(),
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    let comparison = regress::compare(&baseline, &samples, &thresholds)?;
    if let Some(path) = &a.report {
        lblab_record::write_atomic(path, &regress::findings_csv(&comparison)?)
            .with_context(|| format!("writing --report {}", path.display()))?;
    }
    print_comparison(&comparison, &thresholds);
    Ok(if comparison.worse().next().is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A figure's value: ms with two decimals, or a share in percent.
fn value(f: &Finding, v: f64) -> String {
    if f.metric.is_share() {
        format!("{:.3} %", 100.0 * v)
    } else if v.is_infinite() {
        "never".into()
    } else {
        format!("{v:.2}")
    }
}

fn change(f: &Finding) -> String {
    let rel = f.relative();
    let rel = if rel.is_finite() {
        format!(" ({:+.1} %)", 100.0 * rel)
    } else {
        String::new()
    };
    if f.metric.is_share() {
        format!(
            "{:+.3} pp [{:+.3}, {:+.3}]{rel}",
            100.0 * f.change,
            100.0 * f.lo,
            100.0 * f.hi
        )
    } else {
        format!("{:+.2} [{:+.2}, {:+.2}]{rel}", f.change, f.lo, f.hi)
    }
}

fn print_comparison(c: &Comparison, t: &Thresholds) {
    let table = |title: &str, rows: Vec<&Finding>| {
        if rows.is_empty() {
            return;
        }
        outln!("{title}:");
        outln!(
            "  {:<22} {:<28} {:<13} {:>10} {:>10}  median paired change [{:.0} % interval]",
            "scenario",
            "policy",
            "figure",
            "baseline",
            "now",
            100.0 * t.confidence
        );
        for f in rows {
            outln!(
                "  {:<22} {:<28} {:<13} {:>10} {:>10}  {}",
                f.scenario,
                f.policy,
                f.metric.name(),
                value(f, f.baseline),
                value(f, f.now),
                change(f)
            );
        }
    };
    table("WORSE than the baseline", c.worse().collect());
    table("better than the baseline", c.better().collect());
    for new in &c.new {
        outln!("not in the baseline (not compared): {new}");
    }
    let (worse, better) = (c.worse().count(), c.better().count());
    outln!(
        "{} figures compared: {worse} worse, {better} better, {} unchanged (latencies in ms, times in s; a change counts beyond its interval and {:.1} % of the baseline, {:.3} pp for shares, {:.1} s for times)",
        c.findings.len(),
        c.findings.len() - worse - better,
        100.0 * t.relative,
        100.0 * t.absolute_share,
        t.absolute_seconds,
    );
}
