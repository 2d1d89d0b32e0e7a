//! A run's data as its charts use it ([`PolicyData`]: what the run folder's files hold), and the
//! names every run chart shares (titles, backends). The run charts and `run.rs`, which draws
//! them, both read it; it reads neither.

use std::path::Path;

use hdrhistogram::Histogram;
use lblab_record::{file_stem, fixed, PolicyResult, RunSummary, TimeseriesRow};

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
                p50_ms: fixed::as_written(row.p50_ms, fixed::MS_DECIMALS),
                p99_ms: fixed::as_written(row.p99_ms, fixed::MS_DECIMALS),
                shares: row
                    .shares
                    .iter()
                    .map(|s| fixed::as_written(*s, fixed::SHARE_DECIMALS))
                    .collect(),
            })
            .collect();
        Ok(PolicyData {
            histogram: histogram_from_hlog(&result.hlog, &label, summary.warmup_s, &file)?,
            label,
            timeseries,
        })
    }
}

/// The sum of the measured intervals of `policy`'s hlog ([`lblab_record::sum_measured`]:
/// what its summary measured; `warmup_s` only for logs without tags). `file` names the log in
/// errors.
pub(crate) fn histogram_from_hlog(
    text: &str,
    policy: &str,
    warmup_s: f64,
    file: &Path,
) -> Result<Histogram<u64>, ReportError> {
    let invalid = |e: lblab_record::FileError| ReportError::Read {
        file: file.to_path_buf(),
        message: e.to_string(),
    };
    lblab_record::sum_measured(text, &file.display().to_string(), policy, warmup_s).map_err(invalid)
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
    use lblab_record::FaultWindow;

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
            mode: lblab_record::Mode::Sim,
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
            configs: vec![],
            experiment: None,
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
