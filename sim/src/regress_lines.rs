//! A regression comparison ([`crate::regress::Comparison`]) as text lines, as `lblab regress`
//! prints it.

use crate::regress::{Comparison, Finding, Thresholds};

/// A figure's value: ms with two decimals, or a share in percent.
fn value(f: &Finding, v: f64) -> String {
    if f.metric.is_share() {
        format!("{:.3} %", 100.0 * v)
    } else if v.is_infinite() {
        "never".into()
    } else {
        format!("{v:.2}")
    }
}

/// A figure's median paired change with its interval, and relative to the baseline.
fn change(f: &Finding) -> String {
    let rel = f.relative();
    let rel = if rel.is_finite() {
        format!(" ({:+.1} %)", 100.0 * rel)
    } else {
        String::new()
    };
    if f.metric.is_share() {
        format!(
            "{:+.3} pp [{:+.3}, {:+.3}]{rel}",
            100.0 * f.change,
            100.0 * f.lo,
            100.0 * f.hi
        )
    } else {
        format!("{:+.2} [{:+.2}, {:+.2}]{rel}", f.change, f.lo, f.hi)
    }
}

/// The comparison as printed: the worse figures, the better ones (each a table with its
/// interval), the runs not in the baseline, and a closing count with the thresholds.
pub fn comparison_lines(c: &Comparison, t: &Thresholds) -> Vec<String> {
    let mut lines = Vec::new();
    let mut table = |title: &str, rows: Vec<&Finding>| {
        if rows.is_empty() {
            return;
        }
        lines.push(format!("{title}:"));
        lines.push(format!(
            "  {:<22} {:<28} {:<13} {:>10} {:>10}  median paired change [{:.0} % interval]",
            "scenario",
            "policy",
            "figure",
            "baseline",
            "now",
            100.0 * t.confidence
        ));
        for f in rows {
            lines.push(format!(
                "  {:<22} {:<28} {:<13} {:>10} {:>10}  {}",
                f.scenario,
                f.policy,
                f.metric.name(),
                value(f, f.baseline),
                value(f, f.now),
                change(f)
            ));
        }
    };
    table("WORSE than the baseline", c.worse().collect());
    table("better than the baseline", c.better().collect());
    for new in &c.new {
        lines.push(format!("not in the baseline (not compared): {new}"));
    }
    let (worse, better) = (c.worse().count(), c.better().count());
    lines.push(format!(
        "{} figures compared: {worse} worse, {better} better, {} unchanged (latencies in ms, times in s; a change counts beyond its interval and {:.1} % of the baseline, {:.3} pp for shares, {:.1} s for times)",
        c.findings.len(),
        c.findings.len() - worse - better,
        100.0 * t.relative,
        100.0 * t.absolute_share,
        t.absolute_seconds,
    ));
    lines
}
