//! `lblab sim`'s job: every selected policy of a scenario in the simulator, in parallel, its
//! results folder and table, and with several seeds the intervals across them.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use lblab_model::Scenario;
use lblab_record::{layout, write_atomic, Mode, RunSummary};
use lblab_sim::batch::Job;
use lblab_sim::PolicyRun;

use crate::out_dir;

use crate::error::{ensure, Context, Result};
use crate::{run_folder, Exit, Lab, Setting};

/// What `lblab sim` runs.
#[derive(Debug, Clone, Copy)]
pub struct SimJob<'a> {
    /// The scenario, its seed applied.
    pub scenario: &'a Scenario,
    /// The results folder.
    pub dir: &'a Path,
    /// Only these policies (all if empty).
    pub policies: &'a [String],
    /// Seeds to run for the intervals (1: only the scenario's).
    pub seeds: u64,
    /// Threads [default: all cores].
    pub jobs: Option<usize>,
}

/// Runs the selected policies of `scenario` in the simulator, in parallel, in scenario order.
pub fn simulate(
    lab: &Lab,
    scenario: &Scenario,
    only: &[String],
    jobs: Option<usize>,
) -> Result<(Vec<PolicyRun>, bool)> {
    crate::scenario::check_policies(scenario, only)?;
    let entries: Vec<_> = scenario
        .policies
        .iter()
        .filter(|p| only.is_empty() || only.contains(&p.name))
        .filter(|p| {
            let ok = p.runs_in_sim();
            if !ok {
                crate::errln!(
                    "note: policy {:?} runs only in the real harness; skipped",
                    p.name
                );
            }
            ok
        })
        .collect();
    ensure!(
        !entries.is_empty(),
        "scenario {}: none of the selected policies runs in the simulator; add one or drop {}",
        scenario.file.name,
        (lab.names)(Setting::Policy)
    );
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    lab.check_memory(
        scenario,
        entries.len(),
        lblab_model::budget::Mode::Sim { jobs },
    )?;
    let stop = lab.stop;
    // Each run's simulated clock, which the progress follows: a long simulation shows how far
    // it has got, not only how many policies have ended.
    let clocks: Arc<Vec<AtomicU64>> = Arc::new(entries.iter().map(|_| AtomicU64::new(0)).collect());
    let batch: Vec<Job> = entries
        .iter()
        .zip(clocks.iter())
        .map(|(policy, clock)| Job {
            scenario,
            policy,
            clock: Some(clock),
        })
        .collect();
    let per_run_s = scenario.workload.end().div_ceil(1_000_000_000);
    let bar = crate::progress::Progress::new(per_run_s * entries.len() as u64, "simulated s");
    let follow = {
        let clocks = clocks.clone();
        bar.follow(move || {
            clocks
                .iter()
                .map(|c| c.load(Ordering::Relaxed) / 1_000_000_000)
                .sum()
        })
    };
    let mut out = Vec::new();
    let runs = lblab_sim::batch::run(&batch, jobs, Some(stop), &|_| {}, &|_, run| run);
    drop(follow);
    drop(bar);
    for run in runs.into_iter().flatten() {
        out.push(run?);
    }
    let partial = stop.load(Ordering::Relaxed)
        || out.len() < entries.len()
        || out.iter().any(|r| r.stats.interrupted);
    Ok((out, partial))
}

/// Runs `job`: writes its results folder and prints its table (each line to `out`).
pub fn run(lab: &Lab, job: SimJob<'_>, out: &mut dyn FnMut(&str)) -> Result<Exit> {
    let (scenario, dir) = (job.scenario, job.dir);
    let _out_dir = out_dir::prepare_dir(dir)?;
    let started = Instant::now();
    let (runs, partial) = simulate(lab, scenario, job.policies, job.jobs)?;
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
            crate::errln!(
                "warning: {}: {} requests sent after the warm-up but {} accounted for",
                r.result.summary.policy,
                r.stats.measured,
                r.result.summary.requests
            );
        }
    }
    let mut seeded = None;
    let mut partial = partial;
    if job.seeds > 1 && !partial {
        let plan = lblab_sim::space::plan(scenario, &[], job.seeds, job.policies)?;
        let total = plan.runs();
        crate::errln!("running {} seeds: {total} simulations", job.seeds);
        let bar = crate::progress::Progress::new(total as u64, "simulations");
        let progress = |n: usize| bar.set(n as u64);
        let jobs = job.jobs.unwrap_or_else(lblab_sim::batch::default_threads);
        let points = lblab_sim::space::run(&plan, jobs, Some(lab.stop), &progress)?;
        drop(bar);
        partial |= points.iter().any(|p| p.partial);
        notes.push((
            "seeds".into(),
            format!(
                "{} (seeds {} to {}): medians and intervals, with their coverage, in intervals.csv, every run in seeds.csv; the other files are seed {}",
                job.seeds,
                scenario.file.seed,
                scenario.file.seed + job.seeds - 1,
                scenario.file.seed
            ),
        ));
        seeded = points.into_iter().next();
    }
    let summary = RunSummary::of(scenario.run_head(), Mode::Sim, &results, partial, notes);
    let written = run_folder::write(lab, dir, &summary, &results);
    out(&format!(
        "scenario {} (seed {}), simulated:",
        scenario.file.name, scenario.file.seed
    ));
    for line in crate::table::summary_lines(&summary) {
        out(&line);
    }
    // The table is shown whatever happened to the files (a full disk): it may be all that is
    // left of the run.
    written.with_context(|| {
        format!(
            "writing simulation results (the table above is what the run measured; its files in \
             {} are not all written)",
            dir.display()
        )
    })?;
    if let Some(point) = &seeded {
        write_atomic(
            &dir.join(layout::INTERVALS_CSV),
            &lblab_stats::intervals_csv(&point.policies)?,
        )?;
        write_atomic(
            &dir.join(layout::SEEDS_CSV),
            &lblab_sim::space::runs_csv(&[], std::slice::from_ref(point))?,
        )?;
        for line in lblab_sim::space_lines::interval_lines(point, job.seeds) {
            out(&line);
        }
    }
    // Thread CPU time where measured (not inflated when other work shares the cores), else the
    // runs' wall time.
    let cpu: f64 = runs
        .iter()
        .map(|r| r.cpu.unwrap_or(r.wall).as_secs_f64())
        .sum();
    out(&format!(
        "simulated {requests} requests in {:.2}s wall ({:.2}s of simulating-thread CPU time): {:.2} M requests per core-second",
        wall.as_secs_f64(),
        cpu,
        requests as f64 / cpu.max(1e-9) / 1e6
    ));
    out(&format!("wrote {}", dir.display()));
    Ok(Exit::of(partial))
}
