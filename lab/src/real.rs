//! `lblab real`'s job: every policy of a scenario against real tonic servers on loopback
//! ([`lblab_harness::run_real`]), with its progress, checkpoints after each policy, results
//! folder, `harness.json` and `statuses.csv`, table and the harness's own figures.

use std::path::{Path, PathBuf};

use lblab_harness::{self as harness, HarnessOptions, RealRun};
use lblab_model::Scenario;
use lblab_record::{layout, write_atomic, Mode, PolicyResult, RunSummary};

use crate::out_dir;

use crate::error::{bail, Context, LabError, Result};
use crate::{run_folder, Exit, Lab};

/// Runs every selected policy of `scenario` with `options` into `dir`, printing the table and
/// the harness's figures (each line to `out`) before drawing the charts.
pub fn run(
    lab: &Lab,
    scenario: &Scenario,
    options: &HarnessOptions<'_>,
    dir: &Path,
    out: &mut dyn FnMut(&str),
) -> Result<Exit> {
    let Measured {
        real,
        summary,
        results,
        dir,
        unwritten,
    } = measure_and_write(lab, scenario, options, dir)?;
    // The table first, then the charts: the results are on the screen and in the data files
    // (harness.json included) whatever happens to the charts, and on the screen even when the
    // data files could not be written (a full disk).
    out(&format!(
        "scenario {} (seed {}), real over loopback TCP:",
        scenario.file.name, scenario.file.seed
    ));
    for line in crate::table::summary_lines(&summary) {
        out(&line);
    }
    for line in harness::lines::harness_lines(&real.summary()) {
        out(&line);
    }
    if let Some(e) = unwritten {
        return Err(e).context(format!(
            "the table above is what the run measured; its files in {} are not all written",
            dir.display()
        ));
    }
    run_folder::write_charts(lab, &dir, &summary, &results)
        .context("writing real-harness results")?;
    out(&format!("wrote {}", dir.display()));
    if let Some(why) = &real.failed {
        bail!(
            "{why}; the results measured before it are in {}",
            dir.display()
        );
    }
    Ok(Exit::of(real.partial))
}

/// What a real run measured, and whether its data files were written.
pub struct Measured {
    /// The run.
    pub real: RealRun,
    /// Its summary.
    pub summary: RunSummary,
    /// Each policy's results.
    pub results: Vec<PolicyResult>,
    /// Its results folder.
    pub dir: PathBuf,
    /// Why its data files could not all be written (a full disk), if so: the figures above are
    /// then all that is left of it, to be shown before the error.
    pub unwritten: Option<LabError>,
}

/// [`measure_and_write`], failing when the data files could not be written.
pub fn run_and_write(
    lab: &Lab,
    scenario: &Scenario,
    options: &HarnessOptions<'_>,
    dir: &Path,
) -> Result<(RealRun, RunSummary, Vec<PolicyResult>, PathBuf)> {
    let m = measure_and_write(lab, scenario, options, dir)?;
    match m.unwritten {
        Some(e) => Err(e),
        None => Ok((m.real, m.summary, m.results, m.dir)),
    }
}

/// Runs the real harness and writes its data files and `harness.json` (not the final charts:
/// the caller prints the table first, then draws them with [`run_folder::write_charts`]); returns
/// the results with the folder, and why the files could not be written if they could not. The
/// results so far, charts included, are also written after each policy (marked partial), so a
/// run killed outright keeps the policies it finished.
pub fn measure_and_write(
    lab: &Lab,
    scenario: &Scenario,
    options: &HarnessOptions<'_>,
    dir: &Path,
) -> Result<Measured> {
    let planned = scenario
        .policies
        .iter()
        .filter(|p| options.only.is_empty() || options.only.contains(&p.name))
        .filter(|p| p.runs_in_real())
        .count();
    lab.check_memory(scenario, planned, lblab_model::budget::Mode::Real)?;
    // In-process: a listener per backend, and both ends of every client's connection to it.
    let clients = u64::from(scenario.file.workload.clients.max(1));
    lblab_wire::ensure_open_files(64 + scenario.backends.len() as u64 * (1 + 2 * clients))?;
    let _out_dir = out_dir::prepare_dir(dir)?;
    let schedule = crate::progress::Schedule {
        first: options
            .floor
            .map(|length| harness::floor_schedule(scenario, length)),
        each: std::time::Duration::from_nanos(scenario.workload.end()),
    };
    let bar = crate::progress::Progress::scheduled(planned as u64, "policies", schedule);
    let live = std::sync::Arc::new(lblab_loadgen::run::Live::new());
    let options = HarnessOptions {
        live: Some(live.clone()),
        ..options.clone()
    };
    let watch = bar.watch(live);
    let real = harness::run_real(
        scenario,
        &options,
        &mut |line| {
            bar.line(line);
            bar.message(line.to_string());
        },
        &mut |so_far| {
            bar.set(so_far.policies.len() as u64);
            let written = write(scenario, so_far, dir, true).and_then(|(summary, results)| {
                run_folder::write_charts(lab, dir, &summary, &results)
            });
            if let Err(e) = written {
                bar.line(&format!(
                    "warning: could not write the results so far: {}",
                    e.chain_named(lab.names)
                ));
            }
        },
    )?;
    drop(watch);
    drop(bar);
    let (summary, results, unwritten) = match write(scenario, &real, dir, false) {
        Ok((summary, results)) => (summary, results, None),
        Err(e) => {
            let (summary, results) = summarize(scenario, &real, false);
            (summary, results, Some(e))
        }
    };
    Ok(Measured {
        real,
        summary,
        results,
        dir: dir.to_path_buf(),
        unwritten,
    })
}

/// A real run's summary and each policy's results; `in_progress` marks a checkpoint.
fn summarize(
    scenario: &Scenario,
    real: &RealRun,
    in_progress: bool,
) -> (RunSummary, Vec<PolicyResult>) {
    let results: Vec<PolicyResult> = real.policies.iter().map(|p| p.run.result.clone()).collect();
    let mut notes = Vec::new();
    if in_progress {
        notes.push(run_folder::in_progress_note(real.policies.len()));
    }
    notes.extend(real.notes(&real.summary()));
    let partial = real.partial || in_progress;
    let summary = RunSummary::of(scenario.run_head(), Mode::Real, &results, partial, notes);
    (summary, results)
}

/// Writes a real run's data files, `harness.json` and `statuses.csv` into `dir` (not its charts,
/// so that a chart that cannot be drawn loses none of them); `in_progress` marks a checkpoint
/// written while the run goes on.
fn write(
    scenario: &Scenario,
    real: &RealRun,
    dir: &Path,
    in_progress: bool,
) -> Result<(RunSummary, Vec<PolicyResult>)> {
    let (summary, results) = summarize(scenario, real, in_progress);
    let h = real.summary();
    run_folder::write_data(dir, &summary, &results).context("writing real-harness results")?;
    let json = serde_json::to_string_pretty(&h).context("encoding harness.json")?;
    let harness_json = dir.join(layout::HARNESS_JSON);
    write_atomic(&harness_json, (json + "\n").as_bytes())
        .with_context(|| format!("writing {}", harness_json.display()))?;
    let statuses: Vec<lblab_record::StatusRow> = real
        .policies
        .iter()
        .flat_map(|p| p.run.statuses.iter().cloned())
        .collect();
    let csv = lblab_record::StatusRow::to_csv(&statuses).context("encoding statuses.csv")?;
    let statuses_csv = dir.join(layout::STATUSES_CSV);
    write_atomic(&statuses_csv, &csv)
        .with_context(|| format!("writing {}", statuses_csv.display()))?;
    Ok((summary, results))
}
