//! `lblab regress`: tail-latency regression testing against a baseline, for CI: of the
//! simulator's model of a fleet (scenarios over seeds), or, with `--targets`, of the real service
//! (repeated runs, `lblab_lab::regress::real`).
//!
//! Exit codes: 0 no figure is worse than the baseline; 1 at least one is (the table says which);
//! 2 the run could not be made or compared (a bad scenario or baseline file, a baseline of other
//! seeds or policies); 130 interrupted.

use std::path::PathBuf;
use std::process::ExitCode;

use lblab_model::units::Dur;

use super::flags;

use super::args;

/// Arguments of `lblab regress`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("mode").required(true).args(["baseline", "write_baseline"]))]
pub struct Args {
    /// Scenario files (TOML); each runs every policy the simulator runs (or those of --policy).
    /// With --targets, at most one, for its workload and policies (optional).
    #[arg(required_unless_present = "targets")]
    scenarios: Vec<PathBuf>,
    #[command(flatten)]
    targets: flags::Targets,
    #[command(flatten)]
    calls: flags::Calls,
    #[command(flatten)]
    tls: flags::Tls,
    /// With --targets: offered calls per second over all clients, open loop [default: the
    /// scenario's, else 100].
    #[arg(short = 'r', long, conflicts_with = "concurrency")]
    rate: Option<f64>,
    /// With --targets: a closed loop with this many calls in flight per client.
    #[arg(short = 'c', long)]
    concurrency: Option<u32>,
    /// With --targets: client channels, each with its own policy.
    #[arg(long)]
    clients: Option<u32>,
    /// With --targets: the per-call deadline.
    #[arg(short = 't', long, value_name = "DURATION")]
    deadline: Option<Dur>,
    /// With --targets: run the policies this many times, interleaved; the baseline and the
    /// comparison each need repeats (8 or more).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=200))]
    repeat: u32,
    /// With --targets: where the repeats' run folders go [default: lblab-out/regress-real].
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    realtime: args::Realtime,
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
    /// then not compared, so one baseline of every policy serves any selection. With --targets,
    /// the policies to run, as `lblab loadgen --policy` takes them [default: the scenario's, else
    /// round_robin, least_request_experimental and peak_ewma_experimental].
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
    /// baseline, in percent [default: 1; with --targets, 5, and it also bounds calls/s].
    #[arg(long)]
    min_change: Option<f64>,
    /// A share (errors, calls to faulty backends) counts as worse only if its median paired
    /// change is above this, in percentage points.
    #[arg(long, default_value_t = 0.02)]
    min_share_change: f64,
    /// A time to fair share counts as worse only if its median paired change is above this many
    /// seconds.
    #[arg(long, default_value_t = 1.0)]
    min_seconds_change: f64,
    /// Confidence of the interval of the median paired change, in percent; with --targets, 100
    /// minus the false-alarm rate of a whole run of an unchanged service.
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
    if !a.targets.targets.is_empty() {
        return real(a);
    }
    let thresholds = lblab_lab::regress::thresholds(
        a.min_change.unwrap_or(1.0),
        a.min_share_change,
        a.min_seconds_change,
        a.confidence,
        super::names::flag,
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
        &super::lab(Some(&a.budget), None),
        job,
        &mut super::say,
    )?))
}

/// `--targets`: the real service, repeated.
fn real(a: Args) -> anyhow::Result<ExitCode> {
    if a.scenarios.len() > 1 {
        anyhow::bail!(
            "with --targets, give at most one scenario (for its workload and policies); {} given",
            a.scenarios.len()
        );
    }
    if a.seed_offset != 0 || a.jobs.is_some() {
        anyhow::bail!(
            "--seed-offset and --jobs are for the simulator; with --targets, use --repeat"
        );
    }
    let _ = lblab_lab::regress::thresholds(
        0.0,
        a.min_share_change,
        0.0,
        a.confidence,
        super::names::flag,
    )?;
    let scenario = a
        .scenarios
        .first()
        .map(|p| args::scenario_path(p))
        .transpose()?;
    let load = flags::Load {
        rate: a.rate,
        concurrency: a.concurrency,
        clients: a.clients,
        constant: false,
        total: None,
        deadline: a.deadline,
        duration: a.duration,
        warmup: a.warmup,
        load_schedule: None,
        load_start: None,
        load_step: 0.0,
        load_step_duration: Dur(1_000_000_000),
        load_end: None,
        concurrency_schedule: None,
        concurrency_start: None,
        concurrency_step: 0.0,
        concurrency_step_duration: Dur(1_000_000_000),
        concurrency_end: None,
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("lblab-out/regress-real"));
    // What can be refused before the targets are asked anything (reflection) is refused first.
    lblab_lab::regress::real::check_repeats(a.repeat, super::names::flag)?;
    let baseline = a
        .baseline
        .as_deref()
        .map(|p| lblab_lab::regress::real::read_baseline(p, super::names::flag))
        .transpose()?;
    let prepared = flags::prepare(&a.targets, &a.calls, &a.tls, false)?;
    let given = flags::Given {
        file: scenario.as_deref(),
        load: &load,
        policies: &a.policies,
        seed: None,
    };
    let plan = flags::scenario(&given, &prepared.targets, prepared.call.as_ref())?;
    let job = lblab_lab::regress::real::RealJob {
        plan: &plan,
        targets: &prepared.targets,
        spec: prepared.spec.clone(),
        calls: prepared.call_options(&a.targets),
        connect_wait: a
            .targets
            .connect_timeout
            .map(|d| std::time::Duration::from_nanos(d.0)),
        repeats: a.repeat,
        baseline,
        write_baseline: a.write_baseline.as_deref(),
        report: a.report.as_deref(),
        confidence: a.confidence / 100.0,
        min_change: a.min_change.unwrap_or(5.0) / 100.0,
        min_share_change: a.min_share_change / 100.0,
        realtime: a.realtime.enabled(),
        stop: super::stop::stop_flag(),
        out,
    };
    Ok(super::exit(lblab_lab::regress::real::run(
        &super::lab(Some(&a.budget), None),
        job,
        &mut super::say,
    )?))
}
