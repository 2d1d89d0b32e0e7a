//! `lblab regress`: tail-latency regression testing against a baseline, for CI.
//!
//! Exit codes: 0 no figure is worse than the baseline; 1 at least one is (the table says which);
//! 2 the run could not be made or compared (a bad scenario or baseline file, a baseline of other
//! seeds or policies); 130 interrupted.

use std::path::PathBuf;
use std::process::ExitCode;

use lblab_model::units::Dur;

use super::args;

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
    /// Only run the policies with these labels (repeatable); the baseline's other policies are
    /// then not compared, so one baseline of every policy serves any selection.
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
    /// Also write every compared figure to this CSV file (never the baseline or a scenario).
    #[arg(long, value_name = "FILE", conflicts_with = "write_baseline")]
    report: Option<PathBuf>,
    /// Threads to run simulations on, 1 to 1024 [default: all cores].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    jobs: Option<u16>,
    #[command(flatten)]
    budget: args::Budget,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    a.budget.apply();
    let thresholds = lblab_lab::regress::thresholds(
        a.min_change,
        a.min_share_change,
        a.min_seconds_change,
        a.confidence,
    )?;
    let job = lblab_lab::regress::RegressJob {
        scenarios: &a.scenarios,
        baseline: a.baseline.as_deref(),
        write_baseline: a.write_baseline.as_deref(),
        seeds: a.seeds,
        policies: &a.policies,
        seed_offset: a.seed_offset,
        warmup: a.warmup,
        duration: a.duration,
        thresholds,
        report: a.report.as_deref(),
        jobs: a.jobs.map(usize::from),
    };
    Ok(super::exit(lblab_lab::regress::run(
        &super::lab(),
        job,
        &mut super::say,
    )?))
}
