//! `lblab compare`'s job: one scenario in the simulator and over real TCP, a calibrated
//! simulation (the harness floor's median as network round trip), `compare.csv` and its chart,
//! and how well the two modes agree (`crate::compare_lines`).

use std::path::Path;
use std::time::Duration;

use crate::compare_lines;
use lblab_harness::HarnessOptions;
use lblab_model::Scenario;
use lblab_record::{write_atomic, CompareRow, Layout, Mode, RunSummary};

use crate::out_dir;

use crate::error::{bail, Context, Result};
use crate::{run_folder, Exit, Lab};

/// The scenario with `extra` ns added to every backend's network round trip.
fn with_extra_rtt(scenario: &Scenario, extra: u64) -> Scenario {
    let mut s = scenario.clone();
    for b in &mut s.backends {
        b.network_rtt += extra;
    }
    s
}

/// Runs `scenario` (its run length applied) in the simulator and then over real TCP with the
/// options `harness` gives (asked for once the simulation is written) into `base` (`sim/`,
/// `real/`, `compare.csv` and the chart), printing the results and the agreement (each line to
/// `out`). With `repeat` above 1 the real run is repeated (without the floor) into
/// `real-repeat/run-<k>/`, and the headline is judged over every run
/// ([`compare_lines::headline`]).
pub fn run<'o>(
    lab: &Lab,
    scenario: &Scenario,
    policies: &[String],
    harness: impl FnOnce() -> HarnessOptions<'o>,
    base: &Path,
    repeat: u32,
    out: &mut dyn FnMut(&str),
) -> Result<Exit> {
    let layout = Layout::new(base);

    let _out_dir = out_dir::prepare_dir(base)?;
    // Its own sim/ too, so that a run already writing there is found before any work (a run
    // starting into it later is refused by the lock of `base`, around it).
    let _sim_dir = out_dir::prepare_dir(&layout.sim())?;
    crate::errln!("simulating {} ...", scenario.file.name);
    let (sim_runs, sim_partial) = crate::sim::simulate(lab, scenario, policies, None)?;
    let sim_results: Vec<_> = sim_runs.iter().map(|r| r.result.clone()).collect();
    let sim_summary = RunSummary::of(
        scenario.run_head(),
        Mode::Sim,
        &sim_results,
        sim_partial,
        Vec::new(),
    );
    run_folder::write(lab, &layout.sim(), &sim_summary, &sim_results)
        .context("writing simulation results")?;
    if sim_partial {
        out(&format!(
            "interrupted during the simulation; wrote {}",
            layout.sim().display()
        ));
        return Ok(Exit::Interrupted);
    }

    let options = &harness();
    let repeat = repeat.max(1);
    let again = HarnessOptions {
        floor: None,
        ..options.clone()
    };
    let schedule =
        real_schedule(scenario, options) + real_schedule(scenario, &again) * (repeat - 1);
    crate::errln!(
        "running {} over real TCP{}: {} scheduled ...",
        scenario.file.name,
        if repeat > 1 {
            format!(" {repeat} times")
        } else {
            String::new()
        },
        minutes(schedule)
    );
    let (real, real_summary, real_results, real_dir) =
        crate::real::run_and_write(lab, scenario, options, &layout.real())?;
    run_folder::write_charts(lab, &real_dir, &real_summary, &real_results)
        .context("writing real-harness results")?;
    // The repeats: the same scenario and seed again, each a run folder of its own.
    let mut repeats: Vec<(
        RunSummary,
        Vec<lblab_record::PolicyResult>,
        std::path::PathBuf,
    )> = Vec::new();
    let mut repeat_failed = None;
    for k in 2..=repeat {
        if real.failed.is_some() || lab.stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        crate::errln!("real run {k} of {repeat} ...");
        let dir = layout.real_repeat().join(format!("run-{k}"));
        let (run, summary, results, dir) = crate::real::run_and_write(lab, scenario, &again, &dir)?;
        run_folder::write_charts(lab, &dir, &summary, &results)
            .with_context(|| format!("writing the results of real run {k}"))?;
        repeats.push((summary, results, dir));
        if let Some(why) = run.failed {
            repeat_failed = Some(format!("real run {k}: {why}"));
            break;
        }
    }

    // The simulator models no cost per RPC; the real stack has one, which the floor measures. A
    // second simulation with the floor's median as network round trip separates that fixed cost
    // from modelling error.
    let floor_ns = real.floor.as_ref().map(|f| (f.p50_ms * 1e6) as u64);
    let calibrated = match floor_ns {
        Some(extra) => {
            let (runs, _) =
                crate::sim::simulate(lab, &with_extra_rtt(scenario, extra), policies, None)?;
            runs.into_iter().map(|r| r.result.summary).collect()
        }
        None => Vec::new(),
    };
    let rows: Vec<CompareRow> = real_summary
        .rows
        .iter()
        .filter_map(|r| {
            let s = sim_summary.rows.iter().find(|s| s.policy == r.policy)?;
            let c = calibrated.iter().find(|c| c.policy == r.policy);
            let floor_ms = floor_ns.unwrap_or(0) as f64 / 1e6;
            Some(CompareRow::new(
                s,
                r,
                c.map(|c| (c, floor_ms)),
                real_summary.partial,
            ))
        })
        .collect();
    let csv = CompareRow::to_csv(&rows).context("writing compare.csv")?;
    write_atomic(&layout.compare_csv(), &csv)?;
    // The chart is drawn from compare.csv, so that `redraw_compare` redraws the same chart from
    // the folder (adding the multi-seed intervals and the repeated real runs when there are).
    let charts = lblab_report::redraw_compare_from(base, &scenario.file.name, &csv, false)
        .context("drawing the comparison chart")?;

    let (name, seed) = (&scenario.file.name, scenario.file.seed);
    let order: Vec<&str> = scenario.policies.iter().map(|p| p.name.as_str()).collect();
    let intervals_of = |results: &[lblab_record::PolicyResult]| -> Vec<(String, (f64, f64))> {
        results
            .iter()
            .filter_map(|r| {
                let i = lblab_stats::quantile_interval(&r.histogram, 0.99)?;
                Some((r.summary.policy.clone(), i))
            })
            .collect()
    };
    let intervals: Vec<Vec<(String, (f64, f64))>> = std::iter::once(&real_results)
        .chain(repeats.iter().map(|(_, results, _)| results))
        .map(|results| intervals_of(results))
        .collect();
    // The headline is judged over the first run and the repeats that finished (a repeat cut
    // short is left out, and said so).
    let runs: Vec<compare_lines::RealRun<'_>> = std::iter::once(&real_summary)
        .chain(repeats.iter().map(|(summary, _, _)| summary))
        .zip(&intervals)
        .enumerate()
        .filter(|(i, (summary, _))| *i == 0 || !summary.partial)
        .map(|(_, (summary, intervals))| compare_lines::RealRun { summary, intervals })
        .collect();
    let cut_short = repeats.iter().filter(|(s, _, _)| s.partial).count();
    let results = compare_lines::result_lines(name, seed, &order, &sim_summary, &runs, lab.names);
    for line in results {
        out(&line);
    }
    if cut_short > 0 {
        out(&format!(
            "({cut_short} repeated real run(s) stopped early and are left out of the headline)"
        ));
    }
    out("");
    for line in compare_lines::comparison_lines(name, seed, &rows, &real_summary, floor_ns) {
        out(&line);
    }
    out("");
    for line in lblab_harness::lines::harness_lines(&real.summary()) {
        out(&line);
    }
    let mut written = vec![
        layout.sim().display().to_string(),
        real_dir.display().to_string(),
    ];
    written.extend(repeats.iter().map(|(_, _, dir)| dir.display().to_string()));
    written.push(layout.compare_csv().display().to_string());
    // The chart in PNG (its SVG twin lies beside it).
    written.extend(
        charts
            .iter()
            .filter(|c| c.extension().is_some_and(|x| x == "png"))
            .map(|c| c.display().to_string()),
    );
    out(&format!("wrote {}", list(&written)));
    if let Some(why) = &repeat_failed {
        bail!(
            "{why}; the results measured before it are in {}",
            base.display()
        );
    }
    if let Some(why) = &real.failed {
        bail!(
            "{why}; the results measured before it are in {}",
            base.display()
        );
    }
    let partial = real.partial
        || repeats.iter().any(|(s, _, _)| s.partial)
        || (repeats.len() + 1 < repeat as usize);
    Ok(Exit::of(partial))
}

/// How long the real half of a comparison is scheduled to run: the floor's and every real
/// policy's warm-up and measured time (the progress bar counts these).
pub fn real_schedule(scenario: &Scenario, options: &lblab_harness::HarnessOptions<'_>) -> Duration {
    let floor = options
        .floor
        .map(|length| lblab_harness::floor_schedule(scenario, length))
        .unwrap_or_default();
    let runs = scenario
        .policies
        .iter()
        .filter(|p| options.only.is_empty() || options.only.contains(&p.name))
        .filter(|p| p.runs_in_real())
        .count();
    floor + Duration::from_nanos(scenario.workload.end()) * runs as u32
}

/// `d` as `3 min 51 s`.
pub fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    format!("{} min {} s", s / 60, s % 60)
}

/// `items` as an English list: `a`, `a and b`, `a, b and c`.
fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_written_files_read_as_a_list() {
        let files = ["a", "b", "c"].map(String::from);
        assert_eq!(list(&files), "a, b and c");
        assert_eq!(list(&files[..1]), "a");
    }
}
