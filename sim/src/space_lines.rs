//! A sweep's points ([`PointResult`]) as text: each policy's p99, p99.9 and share to faulty
//! backends with its interval across seeds, as `lblab sweep --vary` and `lblab sim --seeds`
//! print them.

use lblab_stats::Interval;

use crate::space::PointResult;

/// What the brackets of [`point_lines`] are: the interval's coverage over `seeds` seeds (the
/// lowest of any policy's p99), or that one seed gives none.
fn interval_legend(points: &[PointResult], seeds: u64) -> String {
    let coverage = points
        .iter()
        .flat_map(|p| p.policies.iter())
        .filter_map(|p| p.get("p99_ms"))
        .map(|i| i.coverage)
        .fold(1.0f64, f64::min);
    if seeds > 1 {
        format!(
            "median over {seeds} seeds [{:.1} % interval of the median]",
            100.0 * coverage
        )
    } else {
        "one seed: no interval".to_string()
    }
}

/// One line per point and one per policy at it: each policy's p99 with its interval.
pub fn point_lines(
    policies: &[String],
    points: &[PointResult],
    paths: &[String],
    seeds: u64,
) -> Vec<String> {
    let mut lines = Vec::new();
    lines.push(format!("{}:", interval_legend(points, seeds)));
    for p in points {
        let label: Vec<String> = p.overrides.iter().map(|o| o.to_string()).collect();
        let label = if paths.is_empty() {
            "scenario".to_string()
        } else {
            label.join(" ")
        };
        lines.push(format!(
            "{label} ({} backends, {:.0} req/s, utilization {:.1} %):",
            p.backends,
            p.rate,
            100.0 * p.utilization
        ));
        for (name, pol) in policies.iter().zip(&p.policies) {
            let f = |m: &str, d: usize| pol.get(m).map_or("–".to_string(), |i| i.display(d));
            lines.push(format!(
                "  {name:<24} p99 {} ms  p99.9 {} ms  to faulty {} %",
                f("p99_ms", 2),
                f("p999_ms", 2),
                pol.get("slow_share")
                    .map_or("–".into(), |i| scaled(i, 100.0).display(2))
            ));
        }
    }
    lines
}

fn scaled(i: &Interval, k: f64) -> Interval {
    Interval {
        median: i.median * k,
        lo: i.lo * k,
        hi: i.hi * k,
        ..*i
    }
}

/// The intervals across seeds: a legend, then one line per policy.
pub fn interval_lines(point: &PointResult, seeds: u64) -> Vec<String> {
    let mut lines = Vec::new();
    let coverage = point
        .policies
        .iter()
        .filter_map(|p| p.get("p99_ms"))
        .map(|i| i.coverage)
        .fold(1.0f64, f64::min);
    lines.push(format!(
        "across {seeds} seeds: median [{:.1} % interval of the median]",
        100.0 * coverage
    ));
    let width = point
        .policies
        .iter()
        .map(|p| p.policy.len())
        .max()
        .unwrap_or(6);
    for p in &point.policies {
        let f = |m: &str, d: usize| p.get(m).map_or("–".to_string(), |i| i.display(d));
        lines.push(format!(
            "{:<width$}  p99 {} ms  p99.9 {} ms  p99/round_robin {}  p99/oracle {}",
            p.policy,
            f("p99_ms", 2),
            f("p999_ms", 2),
            f("p99_vs_round_robin", 3),
            f("p99_vs_oracle", 3),
        ));
    }
    lines
}
