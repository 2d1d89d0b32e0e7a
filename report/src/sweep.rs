//! The charts of a scenario-space sweep (`lblab sweep --vary`): one line chart per quantity
//! against the swept axis, one line per policy with its interval band.

use std::path::{Path, PathBuf};

use lblab_policy::duration;
use lblab_record::ORACLE;
use lblab_stats::{Interval, PolicyIntervals};

use crate::chart::line::{write_line_chart, Line, LineChart, LinePoint};
use crate::name::ChartName;
use crate::ReportError;

/// One point of a scenario-space sweep (`lblab sweep --vary`), as `sweep.json` holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// The varied paths and their values at this point (`fleet.main.count` = `9`).
    pub overrides: Vec<(String, String)>,
    /// Backends at this point.
    pub backends: usize,
    /// Backends with a fault at some time.
    pub faulty_backends: usize,
    /// Offered rate, requests per second.
    pub rate: f64,
    /// `rate` over the fleet's capacity at full speed.
    pub utilization: f64,
    /// The calls' deadline at this point, ms, where a saturated policy's latency stops (`None` in
    /// a `sweep.json` written before it was recorded: the charts then do not mark it).
    pub deadline_ms: Option<f64>,
    /// Per policy (in [`Sweep::policies`] order), the intervals across seeds.
    pub policies: Vec<PolicyIntervals>,
}

/// A scenario-space sweep, for [`write_sweep_charts`].
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// Scenario name (the titles start with it).
    pub scenario: String,
    /// Seeds per point.
    pub seeds: u64,
    /// The charts' x axis: a varied path, or `backends`, `faulty_share`, `rate`,
    /// `utilization`.
    pub x: String,
    /// Policy labels, in the order of each point's `policies`.
    pub policies: Vec<String>,
    /// The points, in sweep order.
    pub points: Vec<SweepPoint>,
}

/// The x value of a point: a varied path's value (numbers as they are, durations in ms) or a
/// derived column.
fn x_value(point: &SweepPoint, x: &str) -> f64 {
    match x {
        "backends" => point.backends as f64,
        "faulty_share" => 100.0 * point.faulty_backends as f64 / point.backends.max(1) as f64,
        "rate" => point.rate,
        "utilization" => point.utilization,
        _ => point
            .overrides
            .iter()
            .find(|(path, _)| path == x)
            .map_or(f64::NAN, |(_, value)| {
                value
                    .parse::<f64>()
                    .ok()
                    .or_else(|| duration::parse_human(value).ok().map(|d| d as f64 / 1e6))
                    .unwrap_or(f64::NAN)
            }),
    }
}

/// The deadline of each point as a reference line (`deadline 1000 ms`, or `deadline` when it
/// varies), if every point records one.
fn deadline_line(points: &[SweepPoint], xs: &[f64]) -> Option<Line> {
    let deadlines: Vec<f64> = points
        .iter()
        .map(|p| p.deadline_ms)
        .collect::<Option<_>>()?;
    let first = *deadlines.first()?;
    let label = if deadlines.iter().all(|d| *d == first) {
        format!(
            "deadline ({})",
            duration::format_human((first * 1e6).round() as u64)
        )
    } else {
        "deadline".to_string()
    };
    Some(Line {
        label,
        reference: true,
        points: deadlines
            .iter()
            .zip(xs)
            .map(|(&y, &x)| LinePoint { x, y, lo: y, hi: y })
            .collect(),
    })
}

/// Writes the charts of a sweep into `dir`, one quantity each against `sweep.x`, one line per
/// policy with its interval band: `p99`, `p999`, with an oracle `p99_vs_oracle` and
/// `p999_vs_oracle`, with faulty backends `slow_share` (the share of requests sent to faulty
/// backends, with the `(faulty/n)²` floor of A48's draw), and `herd`. Returns the paths.
pub fn write_sweep_charts(dir: &Path, sweep: &Sweep) -> Result<Vec<PathBuf>, ReportError> {
    let (policies, points, x, seeds) = (&sweep.policies, &sweep.points, &sweep.x, sweep.seeds);
    let xs: Vec<f64> = points.iter().map(|p| x_value(p, x)).collect();
    let (lo, hi) = xs
        .iter()
        .filter(|v| v.is_finite() && **v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(*v), b.max(*v)));
    let log_x = lo.is_finite() && hi / lo >= 8.0;
    let band = if seeds > 1 {
        let cov = points
            .iter()
            .flat_map(|p| p.policies.iter())
            .filter_map(|p| p.get("p99_ms"))
            .map(|i| i.coverage)
            .fold(1.0f64, f64::min);
        format!(
            "Lines: median of {seeds} seeds; bands: {:.1} % confidence interval of the median.",
            100.0 * cov
        )
    } else {
        "One seed: no interval.".to_string()
    };
    let line_of = |label: &str, metric: &str, k: f64| {
        let idx = policies.iter().position(|p| p == label);
        Line {
            label: label.to_string(),
            reference: false,
            points: points
                .iter()
                .zip(&xs)
                .filter_map(|(p, &x)| {
                    let i: &Interval = idx.and_then(|k| p.policies.get(k))?.get(metric)?;
                    Some(LinePoint {
                        x,
                        y: i.median * k,
                        lo: i.lo * k,
                        hi: i.hi * k,
                    })
                })
                .collect(),
        }
    };
    let x_label = match x.as_str() {
        "backends" => "backends".to_string(),
        "faulty_share" => "backends with a fault (%)".to_string(),
        "rate" => "offered rate (req/s)".to_string(),
        "utilization" => "utilization of the fleet's capacity".to_string(),
        p => {
            let is_duration = points
                .first()
                .and_then(|pt| pt.overrides.iter().find(|(path, _)| path == p))
                .is_some_and(|(_, v)| v.parse::<f64>().is_err());
            if is_duration {
                format!("{p} (ms)")
            } else {
                p.to_string()
            }
        }
    };
    let mut written = Vec::new();
    let mut chart =
        |name: ChartName, title: &str, y_label: &str, lines: Vec<Line>, note: String| {
            let c = LineChart {
                title: format!("{}: {title}", sweep.scenario),
                x_label: x_label.clone(),
                y_label: y_label.to_string(),
                log_x,
                log_y: true,
                lines,
                note,
            };
            written.extend(write_line_chart(&dir.join(name.stem()), &c)?);
            Ok::<(), ReportError>(())
        };
    let all =
        |m: &str, k: f64| -> Vec<Line> { policies.iter().map(|p| line_of(p, m, k)).collect() };
    // The deadline, where the latency of a policy that saturates the fleet stops: a call counts
    // at its deadline when it runs out of time.
    let deadline = deadline_line(points, &xs);
    let with_deadline = |m: &str| -> (Vec<Line>, String) {
        let mut lines = all(m, 1.0);
        match &deadline {
            Some(line) => {
                lines.push(line.clone());
                (
                    lines,
                    format!("{band} Dashed: the calls' deadline, where a saturated policy's percentiles stop (a call that runs out of time counts at it)."),
                )
            }
            None => (lines, band.clone()),
        }
    };
    let (lines, note) = with_deadline("p99_ms");
    chart(ChartName::SweepP99, "p99 latency", "p99 (ms)", lines, note)?;
    let (lines, note) = with_deadline("p999_ms");
    chart(
        ChartName::SweepP999,
        "p99.9 latency",
        "p99.9 (ms)",
        lines,
        note,
    )?;
    if policies.iter().any(|p| p == ORACLE) {
        let rel = |m: &str| -> Vec<Line> {
            policies
                .iter()
                .filter(|p| *p != ORACLE)
                .map(|p| line_of(p, m, 1.0))
                .collect()
        };
        let note = format!("{band} Ratios are paired by seed (1 = as good as the oracle).");
        chart(
            ChartName::SweepP99VsOracle,
            "p99 relative to oracle",
            "p99 / oracle's p99",
            rel("p99_vs_oracle"),
            note.clone(),
        )?;
        chart(
            ChartName::SweepP999VsOracle,
            "p99.9 relative to oracle",
            "p99.9 / oracle's p99.9",
            rel("p999_vs_oracle"),
            note,
        )?;
    }
    if points.iter().any(|p| p.faulty_backends > 0) {
        let mut lines = all("slow_share", 100.0);
        lines.push(Line {
            label: "(faulty/n)²: A48 draw's floor".to_string(),
            reference: true,
            points: points
                .iter()
                .zip(&xs)
                .map(|(p, &x)| {
                    let f = p.faulty_backends as f64 / p.backends.max(1) as f64;
                    let y = 100.0 * f * f;
                    LinePoint { x, y, lo: y, hi: y }
                })
                .collect(),
        });
        let note = format!("{band} Dashed: the share two independent uniform draws both land on faulty backends, whatever their cost. Zero shares are not drawn (log scale).");
        chart(
            ChartName::SweepSlowShare,
            "share of requests sent to faulty backends",
            "share to faulty backends (%)",
            lines,
            note,
        )?;
    }
    chart(
        ChartName::SweepHerd,
        "herd: calls that waited for a worker while a healthy backend had one free",
        "avoidable waits (% of calls)",
        all("herd", 100.0),
        format!(
            "{band} 0 = no call queued while a worker was free elsewhere (the oracle's score)."
        ),
    )?;
    Ok(written)
}
