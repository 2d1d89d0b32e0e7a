//! Writing a run's results folder: the data files (`lblab_record::write_run`) with what an
//! earlier run there left removed, then the charts (`lblab_report`) within the chart budget.

use std::path::Path;

use lblab_record::{PolicyResult, RunSummary};

use crate::error::{Context, Result};
use crate::{Lab, Setting};

/// The key of the note that lists an earlier run's `.hlog`/`.hgrm` files kept in the folder
/// because this run (interrupted, or still going) has not replaced them yet.
pub const KEPT_NOTE: &str = "kept from an earlier run";

/// The `.hlog` and `.hgrm` files that the `summary.json` already in `dir` (an earlier run's, or
/// this run's checkpoint) lists, by its policies or by its [`KEPT_NOTE`]: the only ones
/// [`settle_earlier_files`] may remove. None when there is no such file or it cannot be read.
fn listed_policy_files(dir: &Path) -> Vec<String> {
    let Ok(text) = lblab_record::read_result_file(&dir.join(lblab_record::layout::SUMMARY_JSON))
    else {
        return Vec::new();
    };
    let Ok(previous) = serde_json::from_str::<RunSummary>(&text) else {
        return Vec::new();
    };
    let mut files = policy_files(&previous);
    for (key, value) in &previous.notes {
        if key == KEPT_NOTE {
            files.extend(kept_files(value));
        }
    }
    files.sort();
    files.dedup();
    files
}

/// The file names a [`KEPT_NOTE`] lists: `a.hlog, a.hgrm (…)`.
fn kept_files(note: &str) -> Vec<String> {
    let list = note.split(" (").next().unwrap_or("");
    list.split(", ")
        .map(str::trim)
        .filter(|n| {
            (n.ends_with(".hlog") || n.ends_with(".hgrm"))
                && !n.contains('/')
                && !n.contains('\\')
                && !n.starts_with('.')
        })
        .map(str::to_string)
        .collect()
}

/// The `.hlog` and `.hgrm` file names of `summary`'s policies.
fn policy_files(summary: &RunSummary) -> Vec<String> {
    summary
        .rows
        .iter()
        .flat_map(|r| {
            let stem = lblab_record::file_stem(&r.policy);
            [format!("{stem}.hlog"), format!("{stem}.hgrm")]
        })
        .collect()
}

/// What becomes of the `.hlog` and `.hgrm` files an earlier run in `dir` wrote (`listed`) that
/// this run (`summary`) has not written over. A finished run removes them: their policies are
/// not in it, and they would be read as its own. A run that is not finished (a checkpoint, an
/// interrupted run) keeps them, since it may not have reached their policies yet, and returns
/// their names for its `summary.json` to list under [`KEPT_NOTE`], so that the next run into
/// the folder still knows them. Any other file is not lblab's to delete, whatever its name.
fn settle_earlier_files(dir: &Path, summary: &RunSummary, listed: &[String]) -> Vec<String> {
    let current = policy_files(summary);
    let earlier: Vec<&String> = listed
        .iter()
        .filter(|n| !current.contains(n) && dir.join(n).is_file())
        .collect();
    if summary.partial {
        return earlier.into_iter().cloned().collect();
    }
    for name in earlier {
        if std::fs::remove_file(dir.join(name)).is_ok() {
            crate::errln!(
                "note: removed {} from an earlier run in {} (this run, which is finished, has no policy of that name)",
                name,
                dir.display()
            );
        }
    }
    Vec::new()
}

/// The note a checkpoint carries: results written after `measured` policies while the run
/// went on (a finished run's files do not have it).
pub fn in_progress_note(measured: usize) -> (String, String) {
    (
        "in progress".into(),
        format!(
            "written after {measured} measured policies while the run went on; had it finished, this note would be gone"
        ),
    )
}

/// Writes the data files and the charts into `dir` ([`write_data`], then [`write_charts`]).
pub fn write(lab: &Lab, dir: &Path, summary: &RunSummary, results: &[PolicyResult]) -> Result<()> {
    write_data(dir, summary, results)?;
    write_charts(lab, dir, summary, results)
}

/// Writes the data files into `dir` and settles what an earlier run there left that would be
/// read as this run's: the `.hlog`/`.hgrm` of policies not in this run are removed once the run
/// is finished, and kept (listed in `summary.json`'s [`KEPT_NOTE`]) while it is not
/// ([`settle_earlier_files`]); the run charts are removed (drawn again by [`write_charts`], or
/// named as missing when they are not).
pub fn write_data(dir: &Path, summary: &RunSummary, results: &[PolicyResult]) -> Result<()> {
    // Read before this run's summary.json replaces it.
    let listed = listed_policy_files(dir);
    let kept = settle_earlier_files(dir, summary, &listed);
    let mut summary = summary.clone();
    summary.notes.retain(|(key, _)| key != KEPT_NOTE);
    if !kept.is_empty() {
        summary.notes.push((
            KEPT_NOTE.into(),
            format!(
                "{} (not this run's: it stopped before their policies, or has none of those names; a finished run into this folder removes them)",
                kept.join(", ")
            ),
        ));
    }
    lblab_record::write_run(dir, &summary, results)
        .with_context(|| format!("writing results into {}", dir.display()))?;
    remove_stale_charts(dir);
    Ok(())
}

/// `summary` with the [`KEPT_NOTE`] that [`write_data`] wrote into `dir`'s `summary.json`, so
/// that a rewrite of that file keeps listing the earlier run's files.
fn with_kept_note(dir: &Path, summary: &RunSummary) -> RunSummary {
    let mut marked = summary.clone();
    let on_disk = lblab_record::read_result_file(&dir.join(lblab_record::layout::SUMMARY_JSON))
        .ok()
        .and_then(|text| serde_json::from_str::<RunSummary>(&text).ok());
    if let Some(on_disk) = on_disk {
        marked.notes.retain(|(key, _)| key != KEPT_NOTE);
        marked.notes.extend(
            on_disk
                .notes
                .into_iter()
                .filter(|(key, _)| key == KEPT_NOTE),
        );
    }
    marked
}

/// Removes the run charts (`spectrum.png` …) an earlier run drew in `dir`, so that a chart this
/// run does not draw (skipped, interrupted, failed) is missing rather than another run's.
fn remove_stale_charts(dir: &Path) {
    for name in &lblab_report::ChartName::RUN {
        for format in [lblab_report::Format::Png, lblab_report::Format::Svg] {
            let path = name.path(dir, format);
            if path.is_file() {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// Draws the run charts into `dir`, whose data files [`write_data`] wrote, within
/// the chart budget ([`Lab::chart_budget`]). If the charts cannot be drawn (a full disk), the data files stay and
/// `summary.json` says which charts are missing. A stop (Ctrl-C) that arrives while the charts
/// are drawn, or while the data files of a finished run were written, is honoured between two
/// charts: the rest are left out, `summary.json` says so, and the write succeeds (the data
/// files are whole). A stop that interrupted the run itself (`summary.partial`) does not skip
/// them: its charts show what it measured, and a further Ctrl-C exits at once. Charts skipped
/// because the budget was spent are named on stderr and in `summary.json`.
pub fn write_charts(
    lab: &Lab,
    dir: &Path,
    summary: &RunSummary,
    results: &[PolicyResult],
) -> Result<()> {
    let already = std::sync::atomic::AtomicBool::new(false);
    let stop = if summary.partial && lab.stop.load(std::sync::atomic::Ordering::Relaxed) {
        &already
    } else {
        lab.stop
    };
    let charts = match lblab_report::write_run_charts_within(
        dir,
        summary,
        results,
        stop,
        lab.chart_budget,
    ) {
        Ok(charts) => charts,
        Err(e) => {
            if let lblab_report::ReportError::Interrupted { .. } = e {
                let mut marked = with_kept_note(dir, summary);
                marked
                    .notes
                    .push(("charts".into(), format!("missing: not drawn ({e})")));
                lblab_record::write_run(dir, &marked, results)
                    .with_context(|| format!("writing results into {}", dir.display()))?;
                crate::errln!("interrupted while drawing charts: {e}; the data files are written");
                return Ok(());
            }
            let mut marked = with_kept_note(dir, summary);
            marked
                .notes
                .push(("charts".into(), format!("missing: not drawn ({e})")));
            // Best effort: the disk that refused a chart may refuse this too.
            let _ = lblab_record::write_run(dir, &marked, results);
            return Err(e).context(format!(
                "drawing charts into {} (the data files are written)",
                dir.display()
            ));
        }
    };
    if !charts.skipped.is_empty() {
        let skipped = charts.skipped.join(", ");
        let budget = (lab.names)(Setting::ChartBudget);
        let why = format!(
            "missing: {skipped} not drawn (the {budget} of {} was spent)",
            lab.chart_budget.map_or("unlimited".to_string(), |b| {
                lblab_model::units::Dur(b.as_nanos() as u64).to_string()
            })
        );
        crate::errln!(
            "charts skipped: {skipped} in {} (the {budget} was spent; a larger one, or 0 for none, draws them); the data files are written",
            dir.display()
        );
        let mut marked = with_kept_note(dir, summary);
        marked.notes.push(("charts".into(), why));
        let json = serde_json::to_string_pretty(&marked).context("encoding summary.json")?;
        lblab_record::write_atomic(
            &dir.join(lblab_record::layout::SUMMARY_JSON),
            (json + "\n").as_bytes(),
        )
        .with_context(|| format!("writing results into {}", dir.display()))?;
    }
    Ok(())
}
