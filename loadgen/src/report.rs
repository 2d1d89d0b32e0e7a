//! What a load-generator run prints and exposes beside its results folder: the traffic-share and
//! status tables as text, the run as one JSON document (`-O json`) and as a Prometheus text
//! exposition (`-O prometheus`).
//!
//! Every function here is pure: it formats what the run measured ([`RunSummary`], [`TargetRow`],
//! [`StatusRow`]) and writes nothing.

use lblab_message::text::printable;
use lblab_record::{RunSummary, StatusRow, TargetRow};

/// The traffic share of every target, a column per policy, as text lines (none without rows).
pub fn share_lines(rows: &[TargetRow]) -> Vec<String> {
    let policies = distinct(rows.iter().map(|r| r.policy.as_str()));
    if policies.is_empty() {
        return Vec::new();
    }
    let keys = distinct(rows.iter().map(|r| (r.target.as_str(), r.address.as_str())));
    let label = |(t, a): &(&str, &str)| {
        if a.is_empty() || t == a {
            t.to_string()
        } else {
            format!("{t} ({a})")
        }
    };
    let width = keys
        .iter()
        .map(|k| label(k).len())
        .max()
        .unwrap_or(6)
        .max(13);
    let mut head = format!("{:width$}", "traffic share");
    for p in &policies {
        head += &format!("  {:>w$}", p, w = p.len().max(8));
    }
    let mut lines = vec![head];
    for k in &keys {
        let mut line = format!("{:width$}", label(k));
        for p in &policies {
            let cell = rows
                .iter()
                .find(|r| r.policy == *p && r.target == k.0 && r.address == k.1)
                .map(|r| {
                    let share: f64 = r.share.parse().unwrap_or(0.0);
                    format!("{:.1}%", share * 100.0)
                })
                .unwrap_or_default();
            line += &format!("  {:>w$}", cell, w = p.len().max(8));
        }
        lines.push(line);
    }
    lines
}

/// How the calls ended per policy, by status, with each status's first messages, as text lines
/// (none without rows).
pub fn status_lines(rows: &[StatusRow]) -> Vec<String> {
    let policies = distinct(rows.iter().map(|r| r.policy.as_str()));
    if policies.is_empty() {
        return Vec::new();
    }
    let mut lines = vec!["status distribution (every call that ended, warm-up included):".into()];
    for p in policies {
        let mine: Vec<&StatusRow> = rows.iter().filter(|r| r.policy == p).collect();
        let mut totals: Vec<(&str, u64)> = Vec::new();
        for r in &mine {
            match totals.iter_mut().find(|(s, _)| *s == r.status) {
                Some(t) => t.1 += r.count,
                None => totals.push((&r.status, r.count)),
            }
        }
        let line: Vec<String> = totals.iter().map(|(s, n)| format!("{s} {n}")).collect();
        lines.push(format!("  {p}: {}", line.join(", ")));
        for r in mine.iter().filter(|r| r.status != StatusRow::OK) {
            lines.push(format!(
                "    {} ×{}: {}",
                printable(&r.status),
                r.count,
                printable(&r.message)
            ));
        }
    }
    lines
}

/// The run as one JSON document: `summary.json`'s fields, plus `targets` (`targets.csv`'s rows)
/// and `statuses` (`statuses.csv`'s).
pub fn json(
    summary: &RunSummary,
    targets: &[TargetRow],
    statuses: &[StatusRow],
) -> serde_json::Result<String> {
    let mut value = serde_json::to_value(summary)?;
    if let Some(object) = value.as_object_mut() {
        object.insert("targets".into(), serde_json::to_value(targets)?);
        object.insert("statuses".into(), serde_json::to_value(statuses)?);
    }
    serde_json::to_string_pretty(&value)
}

/// The run in Prometheus's text exposition format (version 0.0.4), one series per policy (and
/// per target and status): calls by outcome, latency quantiles (seconds), calls per second, the
/// fastest call, calls per target and calls per gRPC status.
pub fn prometheus(summary: &RunSummary, targets: &[TargetRow], statuses: &[StatusRow]) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, samples: Vec<(String, String)>| {
        out += &format!("# HELP lblab_{name} {help}\n# TYPE lblab_{name} {kind}\n");
        for (labels, value) in samples {
            out += &format!("lblab_{name}{{{labels}}} {value}\n");
        }
    };
    let policy = |p: &str| format!("policy=\"{}\"", escape(p));
    let mut calls = Vec::new();
    for r in &summary.rows {
        for (outcome, n) in [
            ("ok", r.ok),
            ("error", r.errors.saturating_sub(r.deadline_exceeded)),
            ("deadline_exceeded", r.deadline_exceeded),
            ("dropped", r.dropped),
        ] {
            calls.push((
                format!("{},outcome=\"{outcome}\"", policy(&r.policy)),
                n.to_string(),
            ));
        }
    }
    family(
        "calls_total",
        "counter",
        "Calls intended after the warm-up, by how they ended.",
        calls,
    );
    let mut latency = Vec::new();
    for r in &summary.rows {
        for (q, ms) in [
            ("0.5", r.p50_ms),
            ("0.9", r.p90_ms),
            ("0.99", r.p99_ms),
            ("0.999", r.p999_ms),
            ("1", r.max_ms),
        ] {
            latency.push((
                format!("{},quantile=\"{q}\"", policy(&r.policy)),
                seconds(ms),
            ));
        }
    }
    family(
        "latency_seconds",
        "gauge",
        "Latency from the intended send time, by quantile (1 is the slowest call).",
        latency,
    );
    let per_policy = |f: &dyn Fn(&str) -> String| -> Vec<(String, String)> {
        summary
            .rows
            .iter()
            .map(|r| (policy(&r.policy), f(&r.policy)))
            .collect()
    };
    family(
        "latency_mean_seconds",
        "gauge",
        "Mean latency of the measured calls.",
        per_policy(&|p| {
            let mean = summary
                .rows
                .iter()
                .find(|r| r.policy == p)
                .map_or(0.0, |r| r.mean_ms);
            seconds(mean)
        }),
    );
    if !summary.rates.is_empty() {
        family(
            "calls_per_second",
            "gauge",
            "Calls that ended after the warm-up per second of the measured length.",
            per_policy(&|p| summary.rate(p).map_or(0.0, |r| r.calls_per_s).to_string()),
        );
        family(
            "latency_min_seconds",
            "gauge",
            "The fastest measured call.",
            per_policy(&|p| seconds(summary.rate(p).map_or(0.0, |r| r.min_ms))),
        );
    }
    if !targets.is_empty() {
        family(
            "target_calls_total",
            "counter",
            "Calls sent to each target after the warm-up.",
            targets
                .iter()
                .map(|t| {
                    (
                        format!(
                            "{},target=\"{}\",address=\"{}\"",
                            policy(&t.policy),
                            escape(&t.target),
                            escape(&t.address)
                        ),
                        t.sends.to_string(),
                    )
                })
                .collect(),
        );
    }
    if !statuses.is_empty() {
        let mut by_status: Vec<(String, u64)> = Vec::new();
        for s in statuses {
            let key = format!("{},code=\"{}\"", policy(&s.policy), escape(&s.status));
            match by_status.iter_mut().find(|(k, _)| *k == key) {
                Some(e) => e.1 += s.count,
                None => by_status.push((key, s.count)),
            }
        }
        family(
            "status_calls_total",
            "counter",
            "Calls that ended (warm-up included), by gRPC status.",
            by_status
                .into_iter()
                .map(|(k, n)| (k, n.to_string()))
                .collect(),
        );
    }
    out
}

/// Milliseconds as seconds, for Prometheus.
fn seconds(ms: f64) -> String {
    format!("{}", ms / 1e3)
}

/// A label value escaped as the text format wants (backslash, double quote, line feed).
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The distinct items, in first-seen order.
fn distinct<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_labels_are_escaped_and_families_typed() {
        let summary = RunSummary {
            scenario: "s".into(),
            mode: lblab_record::Mode::Real,
            seed: 1,
            partial: false,
            backends: vec![],
            fault_windows: vec![],
            warmup_s: 0.0,
            measured_s: 1.0,
            rows: vec![],
            notes: vec![],
            incidents: vec![],
            rates: vec![],
            configs: vec![],
            experiment: None,
        };
        let statuses = [StatusRow {
            policy: "a\"b".into(),
            status: "OK".into(),
            message: String::new(),
            count: 3,
        }];
        let text = prometheus(&summary, &[], &statuses);
        assert!(
            text.contains("# TYPE lblab_status_calls_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains("lblab_status_calls_total{policy=\"a\\\"b\",code=\"OK\"} 3\n"),
            "{text}"
        );
    }
}
