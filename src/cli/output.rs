//! Writing a run's results folder and printing its table: shared by `sim`, `real` and `compare`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use lblab_record::{Layout, PolicyResult, RunSummary};

/// The run folder of `command` for the scenario file `file`: `--out` if given, else the scratch
/// folder ([`Layout::scratch`]), which git ignores, so ad-hoc runs never overwrite the committed
/// evidence in `results/` (the evidence scripts write there with `--out`).
pub fn results_dir(file: &Path, command: &str, out: Option<&Path>) -> PathBuf {
    match out {
        Some(dir) => dir.to_path_buf(),
        None => Layout::scratch(file).run(command),
    }
}

/// Extensions of the files lblab writes into a results folder; a `.<name>.tmp` left by a run
/// killed while writing one of them is lblab's, any other is not touched.
const OWN_EXTENSIONS: &[&str] = &[".csv", ".json", ".hlog", ".hgrm", ".png", ".svg", ".html"];

/// Creates the results folder before any work starts and checks that a file can be written in
/// it, so a bad `--out` (a file, a folder that cannot be created, a read-only folder, `/proc`)
/// fails at once rather than after a long run whose results would then be lost. Files inside
/// are named by the program (policy labels go through `lblab_record::file_stem`), so nothing is
/// written outside it.
pub fn prepare_dir(dir: &Path) -> anyhow::Result<OutDir> {
    // The folders this run makes, deepest first: on failure each is removed again while empty.
    let created: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!(
            "--out {}: exists and is not a folder; give a folder for the results",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--out {}: cannot create the results folder", dir.display()))?;
    // One writer per folder: taken before anything in it is touched (another run's temporary
    // files included), held until the guard is dropped.
    let lock = match super::lock::FolderLock::acquire(dir) {
        Ok(lock) => lock,
        Err(e) => {
            drop(OutDir {
                lock: None,
                created,
            });
            return Err(e);
        }
    };
    let guard = OutDir {
        lock: Some(lock),
        created,
    };
    let probe = dir.join(format!(".lblab-write-probe-{}.tmp", std::process::id()));
    std::fs::write(&probe, b"probe")
        .and_then(|()| std::fs::remove_file(&probe))
        .with_context(|| {
            format!(
                "--out {}: cannot write into the results folder (nothing was run)",
                dir.display()
            )
        })?;
    // A run killed outright (SIGKILL) while writing can leave a temporary file behind: remove
    // those, and only those: `.<name>.tmp` where `<name>` is a file lblab writes.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let own = name
                .strip_prefix('.')
                .and_then(|n| n.strip_suffix(".tmp"))
                .is_some_and(|inner| OWN_EXTENSIONS.iter().any(|x| inner.ends_with(x)));
            if own && e.path().is_file() {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Ok(guard)
}

/// A results folder [`prepare_dir`] made ready and locked for this run
/// ([`super::lock::FolderLock`]: a second run into it is refused). Hold it for the whole run:
/// when it is dropped, the lock is released and its file removed, a folder this run created and
/// left empty (the run failed before writing anything) is removed, and so are the parents it
/// created for it (`lblab-out/<scenario>/`), so a failure leaves no empty folder behind. A folder
/// with anything in it is kept.
#[must_use = "hold the guard until the run has written its results"]
pub struct OutDir {
    lock: Option<super::lock::FolderLock>,
    /// Deepest first.
    created: Vec<PathBuf>,
}

impl Drop for OutDir {
    fn drop(&mut self) {
        drop(self.lock.take());
        for dir in &self.created {
            // remove_dir only removes an empty folder; a parent with content stops the walk.
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}

/// The `.hlog` and `.hgrm` files of the policies that the `summary.json` already in `dir` (an
/// earlier run's, or this run's checkpoint) lists: the only ones [`remove_stale_hlogs`] may
/// remove. None when there is no such file or it cannot be read.
fn listed_policy_files(dir: &Path) -> Vec<String> {
    let Ok(text) = lblab_record::read_result_file(&dir.join(lblab_record::layout::SUMMARY_JSON))
    else {
        return Vec::new();
    };
    let Ok(previous) = serde_json::from_str::<RunSummary>(&text) else {
        return Vec::new();
    };
    policy_files(&previous)
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

/// Removes the `.hlog` and `.hgrm` files that an earlier run in `dir` wrote (those its
/// `summary.json` listed, `listed`) for policies that are not in `summary`: they would be read
/// as this run's. Any other file is not lblab's to delete, whatever its name.
fn remove_stale_hlogs(dir: &Path, summary: &RunSummary, listed: &[String]) {
    let current = policy_files(summary);
    for name in listed.iter().filter(|n| !current.contains(n)) {
        let path = dir.join(name);
        if path.is_file() && std::fs::remove_file(&path).is_ok() {
            eprintln!(
                "note: removed {} from an earlier run in {} (its policy is not in this one)",
                name,
                dir.display()
            );
        }
    }
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
pub fn write(dir: &Path, summary: &RunSummary, results: &[PolicyResult]) -> anyhow::Result<()> {
    write_data(dir, summary, results)?;
    write_charts(dir, summary, results)
}

/// Writes the data files into `dir` and removes what an earlier run there left that would be
/// read as this run's: the `.hlog`/`.hgrm` of policies not in this run, and the run charts
/// (drawn again by [`write_charts`], or named as missing when they are not).
pub fn write_data(
    dir: &Path,
    summary: &RunSummary,
    results: &[PolicyResult],
) -> anyhow::Result<()> {
    // Read before this run's summary.json replaces it.
    let listed = listed_policy_files(dir);
    lblab_record::write_run(dir, summary, results)
        .with_context(|| format!("writing results into {}", dir.display()))?;
    remove_stale_hlogs(dir, summary, &listed);
    remove_stale_charts(dir);
    Ok(())
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
/// `--chart-budget`. If the charts cannot be drawn (a full disk), the data files stay and
/// `summary.json` says which charts are missing. A stop (Ctrl-C) that arrives while the charts
/// are drawn is honoured between two charts: the rest are left out, `summary.json` says so, and
/// the write succeeds (the data files are whole). A stop that came before (the run was
/// interrupted) does not skip them: a further Ctrl-C exits at once. Charts skipped because the
/// budget was spent are named on stderr and in `summary.json`.
pub fn write_charts(
    dir: &Path,
    summary: &RunSummary,
    results: &[PolicyResult],
) -> anyhow::Result<()> {
    let already = std::sync::atomic::AtomicBool::new(false);
    let stop = if STOP.load(std::sync::atomic::Ordering::Relaxed) {
        &already
    } else {
        &STOP
    };
    let charts =
        match lblab_report::write_run_charts_within(dir, summary, results, stop, chart_budget()) {
            Ok(charts) => charts,
            Err(e) => {
                if let lblab_report::ReportError::Interrupted { .. } = e {
                    let mut marked = summary.clone();
                    marked
                        .notes
                        .push(("charts".into(), format!("missing: not drawn ({e})")));
                    lblab_record::write_run(dir, &marked, results)
                        .with_context(|| format!("writing results into {}", dir.display()))?;
                    eprintln!("interrupted while drawing charts: {e}; the data files are written");
                    return Ok(());
                }
                let mut marked = summary.clone();
                marked
                    .notes
                    .push(("charts".into(), format!("missing: not drawn ({e})")));
                // Best effort: the disk that refused a chart may refuse this too.
                let _ = lblab_record::write_run(dir, &marked, results);
                return Err(anyhow::Error::new(e).context(format!(
                    "drawing charts into {} (the data files are written)",
                    dir.display()
                )));
            }
        };
    if !charts.skipped.is_empty() {
        let skipped = charts.skipped.join(", ");
        let why = format!(
            "missing: {skipped} not drawn (the --chart-budget of {} was spent)",
            chart_budget().map_or("unlimited".to_string(), |b| {
                lblab_model::units::Dur(b.as_nanos() as u64).to_string()
            })
        );
        eprintln!(
            "charts skipped: {skipped} in {} (the --chart-budget was spent; a larger one, or 0 for none, draws them); the data files are written",
            dir.display()
        );
        let mut marked = summary.clone();
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

/// `--chart-budget` of the command that runs ([`super::args::Charts`]): `Some(None)` when it is
/// unlimited.
static CHART_BUDGET: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();

/// The chart budget when a command gives no `--chart-budget`.
const DEFAULT_CHART_BUDGET: std::time::Duration = std::time::Duration::from_secs(60);

/// Sets the time [`write`] may spend on a run's charts (`None`: unlimited).
pub fn set_chart_budget(budget: Option<std::time::Duration>) {
    let _ = CHART_BUDGET.set(budget);
}

/// The time [`write`] may spend on a run's charts: `--chart-budget`, else 60 s.
fn chart_budget() -> Option<std::time::Duration> {
    CHART_BUDGET
        .get()
        .copied()
        .unwrap_or(Some(DEFAULT_CHART_BUDGET))
}

/// Prints the summary as an aligned table.
pub fn print_table(summary: &RunSummary) {
    for line in table_lines(summary) {
        outln!("{line}");
    }
    if summary.partial {
        outln!("(partial: the run was interrupted; these are the results measured so far)");
    }
    print_incidents(summary);
}

/// The lines of [`print_table`]'s table: counts and percentiles per policy; a real run's calls
/// per second and fastest and mean call; the share sent to faulty backends only when the run has
/// fault windows (a run against someone else's service has none).
pub fn table_lines(summary: &RunSummary) -> Vec<String> {
    let width = summary
        .rows
        .iter()
        .map(|r| r.policy.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let rates = !summary.rates.is_empty();
    let faulty = !summary.fault_windows.is_empty();
    let mut head = format!(
        "{:<width$} {:>9} {:>9} {:>7}",
        "policy", "requests", "ok", "errors"
    );
    if rates {
        head += &format!(" {:>9} {:>8} {:>8}", "calls/s", "min ms", "mean ms");
    }
    head += &format!(
        " {:>8} {:>8} {:>8} {:>9} {:>9}",
        "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms"
    );
    if faulty {
        head += &format!(" {:>9}", "to faulty");
    }
    let mut lines = vec![head];
    for r in &summary.rows {
        let mut line = format!(
            "{:<width$} {:>9} {:>9} {:>7}",
            r.policy, r.requests, r.ok, r.errors
        );
        if rates {
            let (per_s, min) = summary
                .rate(&r.policy)
                .map_or((0.0, 0.0), |x| (x.calls_per_s, x.min_ms));
            line += &format!(" {per_s:>9.1} {min:>8.2} {:>8.2}", r.mean_ms);
        }
        line += &format!(
            " {:>8.2} {:>8.2} {:>8.2} {:>9.2} {:>9.2}",
            r.p50_ms, r.p90_ms, r.p99_ms, r.p999_ms, r.max_ms
        );
        if faulty {
            line += &format!(" {:>8.2}%", 100.0 * r.slow_share);
        }
        lines.push(line);
    }
    lines
}

/// Lists the harness incidents of a run, which mark its affected rows: one short line each; what
/// happened in words is in `summary.json`.
pub fn print_incidents(summary: &RunSummary) {
    for line in incident_lines(&summary.incidents, &summary.backends) {
        outln!("{line}");
    }
}

/// The lines [`print_incidents`] prints: a heading, one line per incident (policy, kind, backend,
/// how many times and when) and where the details are.
fn incident_lines(incidents: &[lblab_record::Incident], backends: &[String]) -> Vec<String> {
    if incidents.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "harness incidents ({}): these rows are affected by the harness, not only by the scenario:",
        incidents.len()
    )];
    for i in incidents {
        let backend = i
            .backend
            .and_then(|b| backends.get(b).map(|n| format!(" {n}")))
            .unwrap_or_default();
        lines.push(format!(
            "  {}: {}{backend}, {} times, {:.1}-{:.1} s",
            i.policy,
            i.kind.name(),
            i.count,
            i.start_s,
            i.end_s,
        ));
    }
    lines.push("  (what happened, in full: `incidents` in the run's summary.json)".to_string());
    lines
}

/// Set by the first Ctrl-C / SIGTERM once [`stop_flag`] installed its handler.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Installs a Ctrl-C / SIGTERM handler that sets the returned flag. A second signal exits at once.
pub fn stop_flag() -> &'static std::sync::atomic::AtomicBool {
    stop_flag_saying("stopping and writing the results measured so far")
}

/// [`stop_flag`] for a command that writes no results (`backend`): the first signal says
/// `doing` ("stopping the fleet") instead of promising results.
pub fn stop_flag_saying(doing: &'static str) -> &'static std::sync::atomic::AtomicBool {
    use std::sync::atomic::Ordering;
    static DOING: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    let _ = DOING.set(doing);
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        let doing = DOING.get().copied().unwrap_or("stopping");
        eprintln!("\ninterrupted: {doing} (again to quit at once)");
    });
    &STOP
}

#[cfg(test)]
mod tests {
    use super::*;
    use lblab_record::{Incident, IncidentKind};

    #[test]
    fn incidents_print_one_short_line_each_with_the_detail_left_to_the_files() {
        let detail = "the load generator could not keep to the schedule: ".repeat(12);
        let incident = Incident {
            policy: "peak_ewma".into(),
            kind: IncidentKind::LateDispatch,
            backend: Some(1),
            start_s: 12.0,
            end_s: 21.5,
            count: 37,
            detail: detail.clone(),
        };
        let lines = incident_lines(
            &[incident.clone(), incident],
            &["main/0".into(), "slow/0".into()],
        );
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert_eq!(
            lines[1],
            "  peak_ewma: late_dispatch slow/0, 37 times, 12.0-21.5 s"
        );
        assert!(
            lines
                .iter()
                .all(|l| l.len() < 100 && !l.contains(&detail[..40])),
            "{lines:#?}"
        );
        assert!(lines[3].contains("summary.json"), "{lines:#?}");
        assert!(incident_lines(&[], &[]).is_empty());
    }
}
