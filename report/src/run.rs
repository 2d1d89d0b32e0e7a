//! A run's charts: [`write_run_charts`], which draws the spectrum, the p99 over time and the
//! traffic share from the run's data as its folder's files hold it
//! ([`PolicyData`](crate::chart::run_data::PolicyData)).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lblab_record::{PolicyResult, RunSummary};

use crate::chart::p99_over_time::P99OverTime;
use crate::chart::run_data::PolicyData;
use crate::chart::spectrum::Spectrum;
use crate::chart::traffic_share::TrafficShare;
use crate::name::ChartName;
use crate::render::write_named;
use crate::ReportError;

/// Writes the charts of one run into `dir` (created if missing) and returns the paths written:
///
/// - `spectrum.{png,svg}`: the latency percentile spectrum of every policy on one plot. x is the
///   percentile on a log "nines" axis from 0% to 99.99% (so 90%, 99%, 99.9% are equally spaced),
///   y the latency in ms on a log scale; one line per policy, from the whole-run histogram
///   (after warm-up).
/// - `p99_over_time.{png,svg}`: each policy's p99 per second (by completion time, warm-up
///   included) on a log scale, with the fault windows shaded red (overlapping windows merged) and
///   labelled with their backends above the plot, and the warm-up shaded grey. Seconds without
///   completions leave a gap.
/// - `traffic_share.{png,svg}`: one small panel per policy with each backend's share of the
///   requests sent per second. Backends that have a fault window are drawn in colour and named
///   in the legend, the others in light grey; fault windows and the warm-up are shaded as in
///   `p99_over_time`. A fleet of more than 20 backends has lines for 20 (those with a fault
///   window, then the busiest) and one line for the mean share of the rest.
///
/// The per-second charts leave out a first or last second that is partial (the run started or
/// stopped inside it, see `whole_seconds`), and the seconds after the last send. A fault window
/// longer than half the run is drawn as a strip along the top of the plot, not shaded over it.
/// A policy whose line lies exactly on an earlier policy's is drawn dashed over it, and its
/// legend entry says `(= other)`.
///
/// Titles are `"<scenario> (<mode>) — <subject>"`. A policy has the same colour (and dash) in
/// every chart, by its label: a fixed table for lblab's policies, variants such as
/// `peak_ewma(with_replacement)` in their base's colour with a dash, and a colour by the label's
/// hash for any other.
///
/// The charts are drawn from what the run's files hold (`timeseries.csv` at its precision, the
/// spectrum from the `.hlog` intervals after the warm-up), so that
/// [`redraw_run`](crate::redraw_run) gives byte-identical charts from a results folder.
pub fn write_run_charts(
    dir: &Path,
    summary: &RunSummary,
    results: &[PolicyResult],
) -> Result<Vec<PathBuf>, ReportError> {
    write_run_charts_until(dir, summary, results, &AtomicBool::new(false))
}

/// [`write_run_charts`], checking `stop` before each chart: once it is set (Ctrl-C), the charts
/// not yet drawn are left out and the result is [`ReportError::Interrupted`], so that a stop
/// asked for while a large run's charts are drawn is honoured within one chart.
pub fn write_run_charts_until(
    dir: &Path,
    summary: &RunSummary,
    results: &[PolicyResult],
    stop: &AtomicBool,
) -> Result<Vec<PathBuf>, ReportError> {
    write_run_charts_within(dir, summary, results, stop, None).map(|charts| charts.written)
}

/// What [`write_run_charts_within`] drew and what it left out for want of time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunCharts {
    /// The files written (PNG and SVG of each chart drawn).
    pub written: Vec<PathBuf>,
    /// The charts not drawn because the time budget was spent, in the order they would have
    /// been drawn (file stems: `traffic_share`).
    pub skipped: Vec<String>,
}

/// [`write_run_charts_until`] within a time `budget` (none: unlimited): the first chart is
/// always drawn; before each further one, if the time spent since the call (reading the run's
/// data included) has reached `budget`, that chart and the rest are skipped and named in
/// [`RunCharts::skipped`]. A stop (`stop`) still ends with [`ReportError::Interrupted`].
pub fn write_run_charts_within(
    dir: &Path,
    summary: &RunSummary,
    results: &[PolicyResult],
    stop: &AtomicBool,
    budget: Option<Duration>,
) -> Result<RunCharts, ReportError> {
    let start = Instant::now();
    let data = results
        .iter()
        .map(|r| PolicyData::from_result(dir, summary, r))
        .collect::<Result<Vec<_>, _>>()?;
    write_run_data_within(dir, summary, &data, stop, budget, start)
}

/// [`write_run_charts`] from the data as the files hold it.
pub(crate) fn write_run_data(
    dir: &Path,
    summary: &RunSummary,
    data: &[PolicyData],
) -> Result<Vec<PathBuf>, ReportError> {
    write_run_data_until(dir, summary, data, &AtomicBool::new(false))
}

/// [`write_run_data`], checking `stop` before each chart.
fn write_run_data_until(
    dir: &Path,
    summary: &RunSummary,
    data: &[PolicyData],
    stop: &AtomicBool,
) -> Result<Vec<PathBuf>, ReportError> {
    write_run_data_within(dir, summary, data, stop, None, Instant::now())
        .map(|charts| charts.written)
}

/// [`write_run_data_until`] within `budget` counted from `start`: see
/// [`write_run_charts_within`].
fn write_run_data_within(
    dir: &Path,
    summary: &RunSummary,
    data: &[PolicyData],
    stop: &AtomicBool,
    budget: Option<Duration>,
    start: Instant,
) -> Result<RunCharts, ReportError> {
    let total = ChartName::RUN.len();
    let mut charts = RunCharts::default();
    for (drawn, name) in ChartName::RUN.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            return Err(ReportError::Interrupted {
                dir: dir.to_path_buf(),
                drawn,
                total,
            });
        }
        if drawn > 0 && budget.is_some_and(|b| start.elapsed() >= b) {
            charts.skipped = ChartName::RUN[drawn..]
                .iter()
                .map(ChartName::stem)
                .collect();
            break;
        }
        let files = match name {
            ChartName::Spectrum => write_named(dir, name, &Spectrum::new(summary, data))?,
            ChartName::P99OverTime => write_named(dir, name, &P99OverTime::new(summary, data))?,
            ChartName::TrafficShare => write_named(dir, name, &TrafficShare::new(summary, data))?,
            // ChartName::RUN holds only the three above.
            _ => Vec::new(),
        };
        charts.written.extend(files);
    }
    Ok(charts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::run_data::fixtures;

    #[test]
    fn a_stop_between_charts_leaves_the_rest_undrawn() {
        let dir = std::env::temp_dir().join(format!("lblab-stop-{}", std::process::id()));
        let summary = fixtures::summary(vec![]);
        let data = vec![fixtures::data("p", 3.0)];
        let stop = AtomicBool::new(true);
        let e = write_run_data_until(&dir, &summary, &data, &stop).expect_err("stopped");
        assert!(
            matches!(
                e,
                ReportError::Interrupted {
                    drawn: 0,
                    total: 3,
                    ..
                }
            ),
            "{e}"
        );
        assert!(!dir.join("spectrum.svg").exists());
        let written = write_run_data(&dir, &summary, &data).expect("drawn");
        assert_eq!(written.len(), 6);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_run_of_days_draws_charts_of_what_a_reader_can_see() {
        // 200,000 seconds (two days and a bit) of 25 backends with shifting shares.
        let dir = std::env::temp_dir().join(format!("lblab-long-{}", std::process::id()));
        let backends = 25;
        let mut summary = fixtures::summary(vec![]);
        summary.backends = (0..backends).map(|b| format!("b/{b}")).collect();
        let mut data = fixtures::data("p", 3.0);
        data.timeseries = (0..200_000u64)
            .map(|s| {
                let mut r = fixtures::row(s, 1000, true);
                r.p99_ms = 2.0 + (s % 17) as f64;
                r.shares = (0..backends)
                    .map(|b| ((s + b) % 7) as f64 / (3.0 * backends as f64))
                    .collect();
                r
            })
            .collect();
        let written = write_run_data(&dir, &summary, &[data]).expect("drawn");
        for file in &written {
            let size = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
            assert!(size < 10 << 20, "{} is {size} bytes", file.display());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_spent_budget_skips_all_but_the_first_chart_by_name() {
        let dir = std::env::temp_dir().join(format!("lblab-budget-{}", std::process::id()));
        let summary = fixtures::summary(vec![]);
        let data = vec![fixtures::data("p", 3.0)];
        let stop = AtomicBool::new(false);
        let charts = write_run_data_within(
            &dir,
            &summary,
            &data,
            &stop,
            Some(Duration::from_nanos(1)),
            Instant::now(),
        )
        .expect("drawn");
        assert_eq!(charts.written.len(), 2, "{charts:?}");
        assert!(dir.join("spectrum.svg").exists());
        assert!(!dir.join("p99_over_time.svg").exists());
        assert_eq!(charts.skipped, ["p99_over_time", "traffic_share"]);
        let all = write_run_data_within(&dir, &summary, &data, &stop, None, Instant::now())
            .expect("drawn");
        assert_eq!((all.written.len(), all.skipped.len()), (6, 0));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
