//! `lblab sim`: simulate every policy of a scenario.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::Context;
use lblab_model::Scenario;
use lblab_record::RunSummary;
use lblab_record::{layout, write_atomic, Mode};
use lblab_sim::batch::Job;
use lblab_sim::PolicyRun;

use super::{args, output};

/// Arguments of `lblab sim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    budget: super::args::Budget,
    #[command(flatten)]
    charts: super::args::Charts,
    /// Scenario file (TOML).
    scenario: PathBuf,
    #[command(flatten)]
    run: args::Run,
    /// Also run this many seeds (the scenario's and the next ones) and write the median and its
    /// interval (at least 95 % coverage; the exact coverage, e.g. 96.9 % for 6 seeds, is printed) of every percentile, and of each policy's ratio to round_robin and oracle, to
    /// intervals.csv (every run in seeds.csv). The other files show the scenario's seed.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    seeds: u64,
    /// Threads to run policies on in parallel, 1 to 1024 [default: all cores].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    jobs: Option<u16>,
}

/// Runs the selected policies of `scenario` in the simulator, in parallel, in scenario order.
pub fn simulate(
    scenario: &Scenario,
    only: &[String],
    jobs: Option<usize>,
) -> anyhow::Result<(Vec<PolicyRun>, bool)> {
    args::check_policies(scenario, only)?;
    let entries: Vec<_> = scenario
        .policies
        .iter()
        .filter(|p| only.is_empty() || only.contains(&p.name))
        .filter(|p| {
            let ok = p.runs_in_sim();
            if !ok {
                eprintln!(
                    "note: policy {:?} runs only in the real harness; skipped",
                    p.name
                );
            }
            ok
        })
        .collect();
    anyhow::ensure!(
        !entries.is_empty(),
        "scenario {}: none of the selected policies runs in the simulator; add one or drop --policy",
        scenario.file.name
    );
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    super::check_memory(
        scenario,
        entries.len(),
        lblab_model::budget::Mode::Sim { jobs },
    )?;
    let stop = output::stop_flag();
    let batch: Vec<Job> = entries
        .iter()
        .map(|policy| Job { scenario, policy })
        .collect();
    let mut out = Vec::new();
    for run in lblab_sim::batch::run(&batch, jobs, Some(stop), &|_| {}, &|_, run| run)
        .into_iter()
        .flatten()
    {
        out.push(run?);
    }
    let partial = stop.load(Ordering::Relaxed)
        || out.len() < entries.len()
        || out.iter().any(|r| r.stats.interrupted);
    Ok((out, partial))
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.scenario = args::scenario_path(&args.scenario)?;
    args.budget.apply();
    args.charts.apply();
    let scenario = args::load(&args.scenario, args.run.seed)?;
    args::check_policies(&scenario, &args.run.policies)?;
    let dir = output::results_dir(&args.scenario, "sim", args.run.out.as_deref());
    let _out_dir = output::prepare_dir(&dir)?;
    let started = Instant::now();
    let (runs, partial) = simulate(&scenario, &args.run.policies, args.jobs.map(usize::from))?;
    let wall = started.elapsed();
    let results: Vec<_> = runs.iter().map(|r| r.result.clone()).collect();
    let requests: u64 = runs.iter().map(|r| r.stats.requests).sum();
    let mut notes = vec![("simulated_requests".into(), requests.to_string())];
    for r in &runs {
        // Requests sent after the warm-up, each of which the summary row must account for.
        notes.push((
            format!("sent_after_warmup:{}", r.result.summary.policy),
            r.stats.measured.to_string(),
        ));
        if r.stats.measured != r.result.summary.requests {
            eprintln!(
                "warning: {}: {} requests sent after the warm-up but {} accounted for",
                r.result.summary.policy, r.stats.measured, r.result.summary.requests
            );
        }
    }
    let mut seeded = None;
    let mut partial = partial;
    if args.seeds > 1 && !partial {
        let plan = lblab_sim::space::plan(&scenario, &[], args.seeds, &args.run.policies)?;
        let total = plan.runs();
        eprintln!("running {} seeds: {total} simulations", args.seeds);
        let bar = super::progress::Progress::new(total as u64, "simulations");
        let progress = |n: usize| bar.set(n as u64);
        let jobs = args
            .jobs
            .map(usize::from)
            .unwrap_or_else(lblab_sim::batch::default_threads);
        let points = lblab_sim::space::run(&plan, jobs, Some(output::stop_flag()), &progress)?;
        drop(bar);
        partial |= points.iter().any(|p| p.partial);
        notes.push((
            "seeds".into(),
            format!(
                "{} (seeds {} to {}): medians and intervals, with their coverage, in intervals.csv, every run in seeds.csv; the other files are seed {}",
                args.seeds,
                scenario.file.seed,
                scenario.file.seed + args.seeds - 1,
                scenario.file.seed
            ),
        ));
        seeded = points.into_iter().next();
    }
    let summary = RunSummary::of(scenario.run_head(), Mode::Sim, &results, partial, notes);
    output::write(&dir, &summary, &results).context("writing simulation results")?;
    outln!(
        "scenario {} (seed {}), simulated:",
        scenario.file.name,
        scenario.file.seed
    );
    output::print_table(&summary);
    if let Some(point) = &seeded {
        write_atomic(
            &dir.join(layout::INTERVALS_CSV),
            &lblab_record::stats::intervals_csv(&point.policies)?,
        )?;
        write_atomic(
            &dir.join(layout::SEEDS_CSV),
            &lblab_sim::space::runs_csv(&[], std::slice::from_ref(point))?,
        )?;
        print_intervals(point, args.seeds);
    }
    // Thread CPU time where measured (not inflated when other work shares the cores), else the
    // runs' wall time.
    let cpu: f64 = runs
        .iter()
        .map(|r| r.cpu.unwrap_or(r.wall).as_secs_f64())
        .sum();
    outln!(
        "simulated {requests} requests in {:.2}s wall ({:.2}s of simulating-thread CPU time): {:.2} M requests per core-second",
        wall.as_secs_f64(),
        cpu,
        requests as f64 / cpu.max(1e-9) / 1e6
    );
    outln!("wrote {}", dir.display());
    Ok(if partial {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// The intervals across seeds, one line per policy.
fn print_intervals(point: &lblab_sim::space::PointResult, seeds: u64) {
    let coverage = point
        .policies
        .iter()
        .filter_map(|p| p.get("p99_ms"))
        .map(|i| i.coverage)
        .fold(1.0f64, f64::min);
    outln!(
        "across {seeds} seeds: median [{:.1} % interval of the median]",
        100.0 * coverage
    );
    let width = point
        .policies
        .iter()
        .map(|p| p.policy.len())
        .max()
        .unwrap_or(6);
    for p in &point.policies {
        let f = |m: &str, d: usize| p.get(m).map_or("–".to_string(), |i| i.display(d));
        outln!(
            "{:<width$}  p99 {} ms  p99.9 {} ms  p99/round_robin {}  p99/oracle {}",
            p.policy,
            f("p99_ms", 2),
            f("p999_ms", 2),
            f("p99_vs_round_robin", 3),
            f("p99_vs_oracle", 3),
        );
    }
}
