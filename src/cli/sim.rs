//! `lblab sim`: simulate every policy of a scenario.

use std::path::PathBuf;
use std::process::ExitCode;

use super::args;

/// Arguments of `lblab sim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    budgets: super::args::Budgets,
    /// Scenario file (TOML), or the bare name of one in scenarios/ or built into lblab
    /// (`one-slow`).
    scenario: PathBuf,
    #[command(flatten)]
    run: args::Run,
    #[command(flatten)]
    length: args::Length,
    /// Also run this many seeds (the scenario's and the next ones) and write the median and its
    /// interval (at least 95 % coverage; the exact coverage, e.g. 96.9 % for 6 seeds, is printed) of every percentile, and of each policy's ratio to round_robin and oracle, to
    /// intervals.csv (every run in seeds.csv). The other files show the scenario's seed.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    seeds: u64,
    /// Threads to run policies on in parallel, 1 to 1024 [default: all cores].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    jobs: Option<u16>,
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.scenario = args::scenario_path(&args.scenario)?;
    let length = lblab_lab::scenario::Length {
        duration: args.length.duration,
        warmup: args.length.warmup,
    };
    let scenario = lblab_lab::scenario::load_with_length(
        &args.scenario,
        args.run.seed,
        length,
        &args.run.policies,
        super::names::flag,
    )?;
    args::check_policies(&scenario, &args.run.policies)?;
    let dir = lblab_lab::out_dir::results_dir(&args.scenario, "sim", args.run.out.as_deref());
    let job = lblab_lab::sim::SimJob {
        scenario: &scenario,
        dir: &dir,
        policies: &args.run.policies,
        seeds: args.seeds,
        jobs: args.jobs.map(usize::from),
    };
    Ok(super::exit(lblab_lab::sim::run(
        &super::run_lab(&args.budgets),
        job,
        &mut super::say,
    )?))
}
