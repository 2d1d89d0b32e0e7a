//! A verdict with its doubt: the figures of policies run several times, interleaved (`lblab
//! loadgen --repeat N`: A B C, A B C, …, so drift hits every policy alike), as medians with
//! distribution-free intervals over the repeats, and each policy against a baseline policy by the
//! paired differences of the same repeat: lower, higher, or not separable at this many repeats,
//! with how many more would separate it if they went as these did.

use lblab_record::{RunSummary, TargetRow};
use lblab_stats::{median_interval_at, median_rank, Interval};
use serde::Serialize;

/// The confidence of every interval of a verdict.
pub const CONFIDENCE: f64 = 0.95;

/// The most repeats [`Comparison::more_repeats`] looks ahead to.
const MAX_REPEATS: usize = 1000;

/// One repeat: the summary of every policy's run in it, and each policy's share per target.
#[derive(Debug, Clone)]
pub struct Repeat {
    /// The repeat's summary (one row per policy).
    pub summary: RunSummary,
    /// Its `targets.csv` rows.
    pub shares: Vec<TargetRow>,
}

/// Which way a policy's figure lies from the baseline policy's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Lower (better): the interval of the median paired difference lies below 0.
    Lower,
    /// Higher (worse): it lies above 0.
    Higher,
    /// Its interval holds 0, or has less than the confidence asked for.
    NotSeparable,
}

/// One figure of a policy against the same figure of the baseline policy in the same repeats.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// `p99_ms` or `p999_ms`.
    pub metric: &'static str,
    /// The median paired difference (this policy − the baseline), ms, and its interval.
    pub change: Interval,
    /// The change relative to the baseline's median.
    pub relative: f64,
    /// Lower, higher or not separable.
    pub outcome: Outcome,
    /// When not separable: how many more repeats would separate it if the differences kept the
    /// balance of signs they have (`None`: no sign of a difference, or more than 1,000).
    pub more_repeats: Option<usize>,
}

/// A target's share of one policy's calls over the repeats.
#[derive(Debug, Clone, Serialize)]
pub struct TargetShare {
    /// The target as named.
    pub target: String,
    /// The address connected to.
    pub address: String,
    /// Its share (0 to 1): median and interval over repeats.
    pub share: Interval,
}

/// One policy's figures over the repeats.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyVerdict {
    /// The policy's label.
    pub policy: String,
    /// Median p50 over repeats, ms, with its interval.
    pub p50_ms: Interval,
    /// p99, ms.
    pub p99_ms: Interval,
    /// p99.9, ms.
    pub p999_ms: Interval,
    /// Share of calls that failed (errors, deadlines, dropped).
    pub error_share: Interval,
    /// Each target's share.
    pub targets: Vec<TargetShare>,
    /// p99 and p99.9 against the baseline policy (empty for the baseline itself).
    pub against_baseline: Vec<Comparison>,
}

/// What the repeats say.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// Repeats that measured every policy.
    pub repeats: usize,
    /// The confidence of the intervals.
    pub confidence: f64,
    /// The baseline policy's label.
    pub baseline: String,
    /// Every policy, in run order.
    pub policies: Vec<PolicyVerdict>,
    /// Per repeat (1-based), the incidents the harness saw: a repeat with any may not measure
    /// what the others did.
    pub incidents: Vec<(usize, usize)>,
}

/// Why no verdict can be given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerdictError {
    /// The baseline policy is not among those run.
    #[error("the baseline policy {baseline:?} is not among those run ({known})")]
    NoBaseline {
        /// The label asked for.
        baseline: String,
        /// The labels run.
        known: String,
    },
    /// No repeat measured anything.
    #[error("no repeat measured every policy")]
    Empty,
}

/// The verdict of `repeats` (each with every policy) against the policy labelled `baseline`.
pub fn verdict(repeats: &[Repeat], baseline: &str) -> Result<Verdict, VerdictError> {
    let first = repeats.first().ok_or(VerdictError::Empty)?;
    let labels: Vec<&str> = first
        .summary
        .rows
        .iter()
        .map(|r| r.policy.as_str())
        .collect();
    if !labels.contains(&baseline) {
        return Err(VerdictError::NoBaseline {
            baseline: baseline.to_string(),
            known: labels.join(", "),
        });
    }
    // Only repeats in which every policy ran: pairs are made within a repeat.
    let complete: Vec<&Repeat> = repeats
        .iter()
        .filter(|r| {
            labels
                .iter()
                .all(|l| r.summary.rows.iter().any(|row| row.policy == *l))
        })
        .collect();
    let figure = |policy: &str, f: &dyn Fn(&lblab_record::SummaryRow) -> f64| -> Vec<f64> {
        complete
            .iter()
            .map(|r| {
                r.summary
                    .rows
                    .iter()
                    .find(|row| row.policy == policy)
                    .map_or(f64::NAN, f)
            })
            .collect()
    };
    let p99 = |r: &lblab_record::SummaryRow| r.p99_ms;
    let p999 = |r: &lblab_record::SummaryRow| r.p999_ms;
    let mut policies = Vec::new();
    for label in &labels {
        let errors =
            |r: &lblab_record::SummaryRow| (r.errors + r.dropped) as f64 / r.requests.max(1) as f64;
        let mut against = Vec::new();
        if *label != baseline {
            for (metric, f) in [
                ("p99_ms", &p99 as &dyn Fn(&lblab_record::SummaryRow) -> f64),
                ("p999_ms", &p999),
            ] {
                let (mine, base) = (figure(label, f), figure(baseline, f));
                against.push(compare(metric, &mine, &base));
            }
        }
        policies.push(PolicyVerdict {
            policy: label.to_string(),
            p50_ms: median_interval_at(&figure(label, &|r| r.p50_ms), CONFIDENCE),
            p99_ms: median_interval_at(&figure(label, &p99), CONFIDENCE),
            p999_ms: median_interval_at(&figure(label, &p999), CONFIDENCE),
            error_share: median_interval_at(&figure(label, &errors), CONFIDENCE),
            targets: shares(&complete, label),
            against_baseline: against,
        });
    }
    Ok(Verdict {
        repeats: complete.len(),
        confidence: CONFIDENCE,
        baseline: baseline.to_string(),
        policies,
        incidents: repeats
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.summary.incidents.is_empty())
            .map(|(i, r)| (i + 1, r.summary.incidents.len()))
            .collect(),
    })
}

/// Each target's share of `policy`'s calls over the repeats, in the order the first repeat
/// names them.
fn shares(repeats: &[&Repeat], policy: &str) -> Vec<TargetShare> {
    let Some(first) = repeats.first() else {
        return Vec::new();
    };
    first
        .shares
        .iter()
        .filter(|row| row.policy == policy)
        .map(|row| {
            let values: Vec<f64> = repeats
                .iter()
                .map(|r| {
                    r.shares
                        .iter()
                        .find(|s| s.policy == policy && s.target == row.target)
                        .and_then(|s| s.share.parse().ok())
                        .unwrap_or(0.0)
                })
                .collect();
            TargetShare {
                target: row.target.clone(),
                address: row.address.clone(),
                share: median_interval_at(&values, CONFIDENCE),
            }
        })
        .collect()
}

/// `mine` against `base`, repeat by repeat.
fn compare(metric: &'static str, mine: &[f64], base: &[f64]) -> Comparison {
    let d: Vec<f64> = mine
        .iter()
        .zip(base)
        .map(|(m, b)| m - b)
        .filter(|x| !x.is_nan())
        .collect();
    let change = median_interval_at(&d, CONFIDENCE);
    let outcome = if change.coverage >= CONFIDENCE && change.hi < 0.0 {
        Outcome::Lower
    } else if change.coverage >= CONFIDENCE && change.lo > 0.0 {
        Outcome::Higher
    } else {
        Outcome::NotSeparable
    };
    let base_median = median_interval_at(base, CONFIDENCE).median;
    Comparison {
        metric,
        relative: change.median / base_median,
        more_repeats: (outcome == Outcome::NotSeparable)
            .then(|| more_repeats(&d))
            .flatten(),
        change,
        outcome,
    }
}

/// How many more paired differences would make the interval of their median exclude 0, if the
/// share of them on the minority side stayed what it is in `d` (a difference of 0 counts for
/// the minority). `None` when the signs are balanced or it would take more than
/// [`MAX_REPEATS`] in all.
fn more_repeats(d: &[f64]) -> Option<usize> {
    let n = d.len();
    if n == 0 {
        return None;
    }
    let below = d.iter().filter(|x| **x < 0.0).count();
    let above = d.iter().filter(|x| **x > 0.0).count();
    let minority = n - below.max(above);
    let q = minority as f64 / n as f64;
    if q >= 0.5 {
        return None;
    }
    // The interval excludes 0 when fewer than its rank k of the m values lie on the minority
    // side.
    (n + 1..=MAX_REPEATS)
        .find(|&m| {
            let (k, coverage) = median_rank(m, CONFIDENCE);
            coverage >= CONFIDENCE && ((q * m as f64).round() as usize) < k
        })
        .map(|m| m - n)
}

/// A median with its interval, `scale`d (100 for percent), and the coverage when it is below the
/// confidence (too few repeats for the interval asked for).
fn interval_text(i: &Interval, scale: f64, decimals: usize) -> String {
    if i.n == 0 || i.median.is_nan() {
        return "–".into();
    }
    let mut s = format!(
        "{:.d$} [{:.d$}, {:.d$}]",
        i.median * scale,
        i.lo * scale,
        i.hi * scale,
        d = decimals
    );
    if i.coverage < CONFIDENCE {
        s.push_str(&format!(" ({:.0} %)", 100.0 * i.coverage));
    }
    s
}

/// One comparison as words: "p99 lower, -12.30 ms [-15.10, -9.00], -45 %".
fn comparison_text(c: &Comparison, repeats: usize) -> String {
    let name = if c.metric == "p99_ms" { "p99" } else { "p99.9" };
    let i = &c.change;
    let coverage = if i.coverage < CONFIDENCE {
        format!(" ({:.0} % interval)", 100.0 * i.coverage)
    } else {
        String::new()
    };
    let by = format!(
        "{:+.2} ms [{:+.2}, {:+.2}]{coverage}, {:+.0} %",
        i.median,
        i.lo,
        i.hi,
        100.0 * c.relative
    );
    match c.outcome {
        Outcome::Lower => format!("{name} lower, {by}"),
        Outcome::Higher => format!("{name} higher, {by}"),
        Outcome::NotSeparable => format!(
            "{name} not separable at {repeats} repeats, {by}{}",
            match c.more_repeats {
                Some(m) => format!("; about {m} more would separate it if they went as these did"),
                None => "; no sign of a difference".into(),
            }
        ),
    }
}

/// The verdict as printed: the line per policy against the baseline first, then the table of
/// medians and the shares per target.
pub fn lines(v: &Verdict) -> Vec<String> {
    let mut out = vec![format!(
        "verdict over {} repeats, policies interleaved; medians with {:.0} % intervals over repeats (a lower coverage in parentheses: too few repeats for {:.0} %)",
        v.repeats,
        100.0 * v.confidence,
        100.0 * v.confidence
    )];
    for p in v.policies.iter().filter(|p| !p.against_baseline.is_empty()) {
        let said: Vec<String> = p
            .against_baseline
            .iter()
            .map(|c| comparison_text(c, v.repeats))
            .collect();
        out.push(format!(
            "  {} against {}: {}",
            p.policy,
            v.baseline,
            said.join("; ")
        ));
    }
    out.push(String::new());
    out.push(format!(
        "  {:<28} {:<30} {:<30} {:<30} {}",
        "policy", "p50 ms", "p99 ms", "p99.9 ms", "failed %"
    ));
    for p in &v.policies {
        out.push(format!(
            "  {:<28} {:<30} {:<30} {:<30} {}",
            p.policy,
            interval_text(&p.p50_ms, 1.0, 2),
            interval_text(&p.p99_ms, 1.0, 2),
            interval_text(&p.p999_ms, 1.0, 2),
            interval_text(&p.error_share, 100.0, 3)
        ));
    }
    out.push(String::new());
    out.push("  share of calls per target, % (median [interval] over repeats):".into());
    for p in &v.policies {
        for t in &p.targets {
            out.push(format!(
                "  {:<28} {:<24} {}",
                p.policy,
                t.target,
                interval_text(&t.share, 100.0, 1)
            ));
        }
    }
    if !v.incidents.is_empty() {
        out.push(String::new());
        let each: Vec<String> = v
            .incidents
            .iter()
            .map(|(r, n)| format!("repeat {r}: {n}"))
            .collect();
        out.push(format!(
            "  incidents (each repeat's summary.json says what): {}",
            each.join(", ")
        ));
    }
    out
}

/// The verdict as Prometheus text exposition: per policy the medians and interval ends, and per
/// comparison its outcome (-1 lower, 0 not separable, 1 higher).
pub fn prometheus(v: &Verdict) -> String {
    let mut out = String::new();
    let mut gauge = |name: &str, help: &str, rows: Vec<(String, f64)>| {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n"));
        for (labels, value) in rows {
            out.push_str(&format!("{name}{{{labels}}} {value}\n"));
        }
    };
    let ends = |f: &dyn Fn(&PolicyVerdict) -> &Interval| -> Vec<(String, f64)> {
        v.policies
            .iter()
            .flat_map(|p| {
                let i = f(p);
                [("median", i.median), ("lo", i.lo), ("hi", i.hi)]
                    .map(|(stat, x)| (format!("policy=\"{}\",stat=\"{stat}\"", p.policy), x))
            })
            .collect()
    };
    gauge(
        "lblab_verdict_p99_seconds",
        "p99 latency over repeats: median and interval ends",
        ends(&|p| &p.p99_ms)
            .into_iter()
            .map(|(l, x)| (l, x / 1e3))
            .collect(),
    );
    gauge(
        "lblab_verdict_p999_seconds",
        "p99.9 latency over repeats: median and interval ends",
        ends(&|p| &p.p999_ms)
            .into_iter()
            .map(|(l, x)| (l, x / 1e3))
            .collect(),
    );
    gauge(
        "lblab_verdict_outcome",
        "against the baseline policy: -1 lower, 0 not separable, 1 higher",
        v.policies
            .iter()
            .flat_map(|p| {
                p.against_baseline.iter().map(|c| {
                    let value = match c.outcome {
                        Outcome::Lower => -1.0,
                        Outcome::NotSeparable => 0.0,
                        Outcome::Higher => 1.0,
                    };
                    (
                        format!(
                            "policy=\"{}\",baseline=\"{}\",metric=\"{}\"",
                            p.policy, v.baseline, c.metric
                        ),
                        value,
                    )
                })
            })
            .collect(),
    );
    out
}

/// The self-contained page of a repeated run: the verdict (each policy against the baseline, the
/// medians, the shares per target), then `parameters` (name, value: the targets, the load, the
/// durations, the date, the version, the command line) and the incidents per repeat; each
/// repeat's own `report.html` has its tables and charts.
pub fn html(
    dir: &std::path::Path,
    v: &Verdict,
    parameters: &[(String, String)],
) -> Result<String, lblab_report::ReportError> {
    use lblab_report::HtmlTable;
    let strings = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut tables = vec![HtmlTable {
        title: format!(
            "Verdict: each policy against {} over {} repeats (paired by repeat)",
            v.baseline, v.repeats
        ),
        header: strings(&["policy", "figure", "verdict"]),
        rows: v
            .policies
            .iter()
            .flat_map(|p| {
                p.against_baseline.iter().map(|c| {
                    vec![
                        p.policy.clone(),
                        c.metric.to_string(),
                        comparison_text(c, v.repeats),
                    ]
                })
            })
            .collect(),
    }];
    tables.push(HtmlTable {
        title: format!(
            "Medians over repeats, with {:.0} % intervals",
            100.0 * v.confidence
        ),
        header: strings(&["policy", "p50 ms", "p99 ms", "p99.9 ms", "failed %"]),
        rows: v
            .policies
            .iter()
            .map(|p| {
                vec![
                    p.policy.clone(),
                    interval_text(&p.p50_ms, 1.0, 2),
                    interval_text(&p.p99_ms, 1.0, 2),
                    interval_text(&p.p999_ms, 1.0, 2),
                    interval_text(&p.error_share, 100.0, 3),
                ]
            })
            .collect(),
    });
    tables.push(HtmlTable {
        title: "Share of calls per target, %".into(),
        header: strings(&["policy", "target", "address", "share"]),
        rows: v
            .policies
            .iter()
            .flat_map(|p| {
                p.targets.iter().map(|t| {
                    vec![
                        p.policy.clone(),
                        t.target.clone(),
                        t.address.clone(),
                        interval_text(&t.share, 100.0, 1),
                    ]
                })
            })
            .collect(),
    });
    tables.push(HtmlTable {
        title: "The run".into(),
        header: strings(&["parameter", "value"]),
        rows: parameters
            .iter()
            .map(|(k, val)| vec![k.clone(), val.clone()])
            .collect(),
    });
    tables.push(HtmlTable {
        title: "Incidents (each repeat's report.html and summary.json say what)".into(),
        header: strings(&["repeat", "incidents"]),
        rows: v
            .incidents
            .iter()
            .map(|(r, n)| vec![format!("repeat-{r}"), n.to_string()])
            .collect(),
    });
    lblab_report::html_page(dir, "lblab loadgen: verdict", &tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_repeats_follows_the_sign_test() {
        // Three of three below 0: at 95 % the whole range needs 6 values.
        assert_eq!(more_repeats(&[-1.0, -2.0, -0.5]), Some(3));
        // Balanced signs: no sign of a difference.
        assert_eq!(more_repeats(&[-1.0, 1.0]), None);
        // One in five the other way: separable once m is large enough that a fifth of m is
        // below its rank.
        let m = more_repeats(&[-1.0, -2.0, 1.0, -3.0, -1.5]).expect("separable in time");
        let (k, _) = median_rank(5 + m, CONFIDENCE);
        assert!((0.2 * (5 + m) as f64).round() < k as f64, "{m}");
        let (k, _) = median_rank(5 + m - 1, CONFIDENCE);
        assert!((0.2 * (5 + m - 1) as f64).round() >= k as f64, "{m}");
    }

    #[test]
    fn a_comparison_is_lower_only_with_the_confidence_asked_for() {
        let base = [10.0, 11.0, 10.5, 10.2, 10.8, 10.1, 10.9];
        let lower: Vec<f64> = base.iter().map(|b| b - 2.0).collect();
        let c = compare("p99_ms", &lower, &base);
        assert_eq!(c.outcome, Outcome::Lower, "{c:?}");
        assert!((c.change.median + 2.0).abs() < 1e-9);
        // The same, over 3 repeats: too few for 95 %.
        let c = compare("p99_ms", &lower[..3], &base[..3]);
        assert_eq!(c.outcome, Outcome::NotSeparable);
        assert_eq!(c.more_repeats, Some(3));
        let text = comparison_text(&c, 3);
        assert!(text.contains("not separable at 3 repeats"), "{text}");
        assert!(text.contains("about 3 more"), "{text}");
        let higher: Vec<f64> = base.iter().map(|b| b * 1.5).collect();
        assert_eq!(compare("p99_ms", &higher, &base).outcome, Outcome::Higher);
    }
}
