//! A run's charts: its data as its folder's files hold it ([`PolicyData`]), and
//! [`write_run_charts`], which draws the spectrum, the p99 over time and the traffic share.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use hdrhistogram::Histogram;
use lblab_model::results::{file_stem, PolicyResult, RunSummary, TimeseriesRow};

use crate::chart::p99_over_time::P99OverTime;
use crate::chart::spectrum::Spectrum;
use crate::chart::traffic_share::TrafficShare;
use crate::name::ChartName;
use crate::render::write_named;
use crate::ReportError;

/// One policy's data as the run charts use it: exactly what its run folder's files hold, so
/// that charts redrawn from the files ([`crate::redraw_run`]) are the charts the run drew.
#[derive(Debug, Clone)]
pub(crate) struct PolicyData {
    /// Policy label.
    pub label: String,
    /// Its rows of `timeseries.csv`, values at the precision written there.
    pub timeseries: Vec<TimeseriesRow>,
    /// Its latency histogram after the warm-up: the sum of its `.hlog`'s measured intervals,
    /// which hold exactly the latencies its summary row measured.
    pub histogram: Histogram<u64>,
}

/// `v` as `timeseries.csv` holds it: written with `decimals` decimals and read back.
fn as_written(v: f64, decimals: usize) -> f64 {
    if v.is_nan() {
        return f64::NAN;
    }
    format!("{v:.decimals$}").parse().unwrap_or(f64::NAN)
}

impl PolicyData {
    /// The data of `result` as its files would hold it.
    pub(crate) fn from_result(
        dir: &Path,
        summary: &RunSummary,
        result: &PolicyResult,
    ) -> Result<Self, ReportError> {
        let label = result.summary.policy.clone();
        let file = dir.join(format!("{}.hlog", file_stem(&label)));
        let timeseries = result
            .timeseries
            .iter()
            .map(|row| TimeseriesRow {
                policy: row.policy.clone(),
                second: row.second,
                completed: row.completed,
                p50_ms: as_written(row.p50_ms, 3),
                p99_ms: as_written(row.p99_ms, 3),
                shares: row.shares.iter().map(|s| as_written(*s, 4)).collect(),
            })
            .collect();
        Ok(PolicyData {
            histogram: histogram_from_hlog(&result.hlog, &label, summary.warmup_s, &file)?,
            label,
            timeseries,
        })
    }
}

/// The sum of the measured intervals of `policy`'s hlog ([`lblab_model::results::sum_measured`]:
/// what its summary measured; `warmup_s` only for logs without tags). `file` names the log in
/// errors.
pub(crate) fn histogram_from_hlog(
    text: &str,
    policy: &str,
    warmup_s: f64,
    file: &Path,
) -> Result<Histogram<u64>, ReportError> {
    let invalid = |e: lblab_model::ModelError| ReportError::Read {
        file: file.to_path_buf(),
        message: e.to_string(),
    };
    lblab_model::results::sum_measured(text, &file.display().to_string(), policy, warmup_s)
        .map_err(invalid)
}

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

/// `"<scenario> (<mode>) — <subject>"`, marked when the run was interrupted.
pub(crate) fn run_title(summary: &RunSummary, subject: &str) -> String {
    let partial = if summary.partial {
        " (partial run)"
    } else {
        ""
    };
    format!(
        "{} ({}) — {}{}",
        summary.scenario, summary.mode, subject, partial
    )
}

/// Name of backend `i`.
pub(crate) fn backend_name(summary: &RunSummary, i: usize) -> String {
    summary
        .backends
        .get(i)
        .cloned()
        .unwrap_or_else(|| format!("backend {i}"))
}

/// Runs and policy data for the charts' unit tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use lblab_model::results::FaultWindow;

    pub(crate) fn row(second: u64, completed: u64, sends: bool) -> TimeseriesRow {
        TimeseriesRow {
            policy: "p".into(),
            second,
            completed,
            p50_ms: 1.0,
            p99_ms: 2.0,
            shares: if sends {
                vec![0.5, 0.5]
            } else {
                vec![0.0, 0.0]
            },
        }
    }

    pub(crate) fn summary(fault_windows: Vec<FaultWindow>) -> RunSummary {
        RunSummary {
            scenario: "t".into(),
            mode: lblab_model::results::Mode::Sim,
            seed: 1,
            partial: false,
            backends: vec!["a".into(), "b".into()],
            fault_windows,
            warmup_s: 0.0,
            measured_s: 0.0,
            rows: vec![],
            notes: vec![],
            incidents: vec![],
            rates: vec![],
        }
    }

    pub(crate) fn data(label: &str, p99: f64) -> PolicyData {
        let mut timeseries: Vec<_> = (0..10).map(|s| row(s, 1000, true)).collect();
        for r in &mut timeseries {
            r.policy = label.into();
            r.p99_ms = p99;
        }
        let mut histogram = Histogram::new(3).unwrap();
        histogram.record((p99 * 1e6) as u64).unwrap();
        PolicyData {
            label: label.into(),
            timeseries,
            histogram,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn data_as_written_rounds_like_the_csv() {
        assert_eq!(as_written(2.12345, 3), 2.123);
        assert!(as_written(f64::NAN, 3).is_nan());
    }
}
