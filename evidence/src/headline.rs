//! The headline charts of the evidence document: each policy's p99 relative to round_robin and to
//! the oracle, per scenario, with intervals.

use std::path::{Path, PathBuf};

use lblab_report::{write_interval_chart, IntervalChart, IntervalPoint, IntervalSeries};

use crate::load::Evidence;
use crate::text::CONTENDERS;
use crate::EvidenceError;

/// The charts' file stems, relative to the results folder, their metric and title (`{interval}`
/// stands for the intervals' true confidence).
pub const CHARTS: [(&str, &str, &str); 2] = [
    (
        "summary-p99-vs-round_robin",
        "p99_vs_round_robin",
        "p99 relative to round_robin (median over seeds, {interval}; below 1 is better)",
    ),
    (
        "summary-p99-vs-oracle",
        "p99_vs_oracle",
        "p99 relative to the oracle, which picks by expected completion from true queues (median over seeds, {interval})",
    ),
];

/// The chart for one metric: scenarios as rows (in file order), the contenders as series.
pub fn chart(ev: &Evidence, metric: &str, title: &str) -> IntervalChart {
    let scenarios: Vec<_> = ev
        .scenarios
        .iter()
        .filter(|s| s.intervals.is_some())
        .collect();
    let series = CONTENDERS
        .iter()
        .filter(|p| !(metric == "p99_vs_round_robin" && **p == "round_robin"))
        .map(|p| IntervalSeries {
            label: p.to_string(),
            points: scenarios
                .iter()
                .map(|s| {
                    ev.interval(&s.name, p, metric).map(|i| IntervalPoint {
                        median: i.median,
                        lo: i.lo,
                        hi: i.hi,
                    })
                })
                .collect(),
        })
        .collect();
    IntervalChart {
        title: title.to_string(),
        x_label: metric.replace('_', " "),
        rows: scenarios.iter().map(|s| s.name.clone()).collect(),
        series,
        reference: Some(1.0),
    }
}

/// Writes both charts (`.png` and `.svg` each) under `results`.
pub fn write(ev: &Evidence, results: &Path) -> Result<Vec<PathBuf>, EvidenceError> {
    let mut out = Vec::new();
    let seeds = ev
        .scenario(crate::text::HEADLINE)
        .and_then(|s| s.intervals.as_ref())
        .map_or(0, |i| i.seeds());
    for (stem, metric, title) in CHARTS {
        let title = title.replace("{interval}", &crate::text::interval(seeds));
        out.extend(write_interval_chart(
            &results.join(stem),
            &chart(ev, metric, &title),
        )?);
    }
    Ok(out)
}
