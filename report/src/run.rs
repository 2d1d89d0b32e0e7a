//! A run's charts: [`write_run_charts`], which draws the spectrum, the p99 over time and the
//! traffic share from the run's data as its folder's files hold it
//! ([`PolicyData`](crate::chart::run_data::PolicyData)).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use lblab_model::results::{PolicyResult, RunSummary};

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
    let data = results
        .iter()
        .map(|r| PolicyData::from_result(dir, summary, r))
        .collect::<Result<Vec<_>, _>>()?;
    write_run_data_until(dir, summary, &data, stop)
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
    let [spectrum, p99_over_time, traffic_share] = &ChartName::RUN;
    let total = ChartName::RUN.len();
    let check = |drawn: usize| {
        if stop.load(Ordering::Relaxed) {
            Err(ReportError::Interrupted {
                dir: dir.to_path_buf(),
                drawn,
                total,
            })
        } else {
            Ok(())
        }
    };
    let mut written = Vec::new();
    check(0)?;
    written.extend(write_named(dir, spectrum, &Spectrum::new(summary, data))?);
    check(1)?;
    written.extend(write_named(
        dir,
        p99_over_time,
        &P99OverTime::new(summary, data),
    )?);
    check(2)?;
    written.extend(write_named(
        dir,
        traffic_share,
        &TrafficShare::new(summary, data),
    )?);
    Ok(written)
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
}
