//! The evidence report: one Markdown document over every scenario's simulated and real results,
//! written so that it can be pasted as the evidence section of a gRFC.

use std::fmt::Write as _;

use lblab_model::results::{RunSummary, SummaryRow};

/// Relative tolerance of sim-vs-real agreement.
pub const AGREEMENT_RELATIVE: f64 = 0.20;
/// Absolute tolerance (ms) of sim-vs-real agreement, for small values.
pub const AGREEMENT_ABSOLUTE_MS: f64 = 1.0;

/// Whether a real value agrees with the simulated one: within ±20 % or within 1 ms.
pub fn agrees(sim_ms: f64, real_ms: f64) -> bool {
    (real_ms - sim_ms).abs() <= (AGREEMENT_RELATIVE * sim_ms).max(AGREEMENT_ABSOLUTE_MS)
}

/// One scenario's results, as read from its results folders.
#[derive(Debug, Clone)]
pub struct ScenarioEvidence {
    /// Scenario name.
    pub name: String,
    /// What it models and why (the scenario file's opening comment).
    pub description: String,
    /// The full simulated run (`results/<name>/sim/summary.json`), if present.
    pub sim: Option<RunSummary>,
    /// The real run, if present.
    pub real: Option<RunSummary>,
    /// The simulated run of the same length as the real one (from `lblab compare`), which the
    /// agreement is computed against; `None` to use `sim`.
    pub sim_matched: Option<RunSummary>,
    /// Folder of the real run's charts, relative to the report.
    pub real_dir: String,
    /// The real-vs-simulated chart (without extension), relative to the report, if any.
    pub compare_chart: Option<String>,
}

/// Agreement of one policy's real and simulated percentiles.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyAgreement {
    /// Policy label.
    pub policy: String,
    /// Simulated and real p50 (ms).
    pub p50: (f64, f64),
    /// Simulated and real p99 (ms).
    pub p99: (f64, f64),
}

impl PolicyAgreement {
    /// Whether both p50 and p99 agree.
    pub fn agrees(&self) -> bool {
        agrees(self.p50.0, self.p50.1) && agrees(self.p99.0, self.p99.1)
    }
}

/// Pairs the policies that both runs have, in the simulated run's order.
pub fn agreement(sim: &RunSummary, real: &RunSummary) -> Vec<PolicyAgreement> {
    sim.rows
        .iter()
        .filter_map(|s| {
            let r = real.rows.iter().find(|r| r.policy == s.policy)?;
            Some(PolicyAgreement {
                policy: s.policy.clone(),
                p50: (s.p50_ms, r.p50_ms),
                p99: (s.p99_ms, r.p99_ms),
            })
        })
        .collect()
}

fn pct(x: f64) -> String {
    format!("{:.2} %", 100.0 * x)
}

fn table(out: &mut String, rows: &[SummaryRow]) {
    out.push_str("| policy | requests | errors | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | to faulty backends |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let _ = writeln!(
            out,
            "| {}{} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
            r.policy,
            if r.incidents > 0 {
                format!(" (affected: {} harness incidents)", r.incidents)
            } else {
                String::new()
            },
            r.requests,
            r.errors,
            r.p50_ms,
            r.p90_ms,
            r.p99_ms,
            r.p999_ms,
            r.max_ms,
            pct(r.slow_share)
        );
    }
}

fn notes(out: &mut String, run: &RunSummary) {
    if !run.notes.is_empty() {
        out.push('\n');
        for (k, v) in &run.notes {
            let _ = writeln!(out, "- `{k}`: {v}");
        }
    }
    if !run.incidents.is_empty() {
        out.push_str(
            "\nHarness incidents (the harness, not the scenario, affected these runs):\n\n",
        );
        for i in &run.incidents {
            let backend = i
                .backend
                .and_then(|b| run.backends.get(b))
                .map(|n| format!(" `{n}`"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "- {} `{}`{backend} at {:.2}–{:.2} s: {}",
                i.policy,
                i.kind.name(),
                i.start_s,
                i.end_s,
                i.detail
            );
        }
    }
}

/// Renders the whole report. `preface` goes after the title (how it was generated, on what).
pub fn markdown(items: &[ScenarioEvidence], preface: &str) -> String {
    let mut out =
        String::from("# lblab evidence: latency-aware load balancing under slow backends\n\n");
    out.push_str(preface.trim_end());
    out.push_str("\n\n");
    out.push_str(
        "Latency counts from each request's intended send time (open loop, no coordinated \
         omission), recorded in HdrHistogram at nanosecond resolution and 3 significant digits. \
         Percentiles are over unary calls that succeeded or ran out of time; `to faulty backends` \
         is the share of requests sent to a backend while a fault was active on it. Simulated \
         and real runs execute the same scenario file, the same policy code and the same backend \
         model; they agree when the real value is within ±20 % of the simulated one, or within \
         1 ms.\n\n",
    );

    // Overview: p99 per scenario and policy.
    let mut policies: Vec<String> = Vec::new();
    for item in items {
        for run in [&item.sim, &item.real].into_iter().flatten() {
            for r in &run.rows {
                if !policies.contains(&r.policy) {
                    policies.push(r.policy.clone());
                }
            }
        }
    }
    out.push_str("## Overview: p99 (ms), simulated / real\n\nWhere a real run exists, the simulated value is from the simulated run of the same length and seed (`lblab compare`); the per-scenario sections also give the full-length simulation.\n\n| scenario |");
    for p in &policies {
        let _ = write!(out, " {p} |");
    }
    out.push_str("\n|---|");
    for _ in &policies {
        out.push_str("---:|");
    }
    out.push('\n');
    for item in items {
        let _ = write!(out, "| [{}](#{}) |", item.name, item.name);
        for p in &policies {
            let find = |run: &Option<RunSummary>| {
                run.as_ref()
                    .and_then(|r| r.rows.iter().find(|row| &row.policy == p))
                    .map(|row| format!("{:.1}", row.p99_ms))
            };
            // Against a real run, the simulated run of the same length (the full-length one can
            // differ for reasons of length alone, e.g. WRR's blackout in a short run).
            let sim = if item.real.is_some() {
                item.sim_matched.as_ref().or(item.sim.as_ref())
            } else {
                item.sim.as_ref()
            };
            let cell = match (find(&sim.cloned()), find(&item.real)) {
                (Some(s), Some(r)) => format!("{s} / {r}"),
                (Some(s), None) => s,
                (None, Some(r)) => format!("– / {r}"),
                (None, None) => "–".into(),
            };
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out.push('\n');

    for item in items {
        let _ = writeln!(out, "## {}\n", item.name);
        if !item.description.is_empty() {
            let _ = writeln!(out, "{}\n", item.description.trim());
        }
        if let Some(sim) = &item.sim {
            let _ = writeln!(
                out,
                "### Simulated{}\n",
                if sim.partial { " (partial run)" } else { "" }
            );
            table(&mut out, &sim.rows);
            notes(&mut out, sim);
            let _ = writeln!(
                out,
                "\n![p99 per second, simulated]({0}/sim/p99_over_time.png)\n![traffic share, simulated]({0}/sim/traffic_share.png)\n",
                item.name
            );
        }
        if let Some(real) = &item.real {
            let _ = writeln!(
                out,
                "### Real gRPC over loopback TCP{}\n",
                if real.partial { " (partial run)" } else { "" }
            );
            table(&mut out, &real.rows);
            notes(&mut out, real);
            let _ = writeln!(
                out,
                "\n![p99 per second, real]({}/p99_over_time.png)\n",
                item.real_dir
            );
        }
        if let (Some(sim), Some(real)) =
            (item.sim_matched.as_ref().or(item.sim.as_ref()), &item.real)
        {
            let rows = agreement(sim, real);
            let agreeing = rows.iter().filter(|r| r.agrees()).count();
            let _ = writeln!(
                out,
                "### Agreement: {agreeing} of {} policies within tolerance\n",
                rows.len()
            );
            if item.sim_matched.is_some() {
                out.push_str(
                    "Against a simulated run of the same length and seed as the real one \
                     (`lblab compare`).\n\n",
                );
            }
            out.push_str("| policy | p50 sim | p50 real | p99 sim | p99 real | agrees |\n|---|---:|---:|---:|---:|:---:|\n");
            for r in &rows {
                let _ = writeln!(
                    out,
                    "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
                    r.policy,
                    r.p50.0,
                    r.p50.1,
                    r.p99.0,
                    r.p99.1,
                    if r.agrees() { "yes" } else { "**no**" }
                );
            }
            out.push('\n');
            if let Some(chart) = &item.compare_chart {
                let _ = writeln!(out, "![real vs simulated p50 and p99]({chart}.png)\n");
            }
        }
    }
    out
}

/// The opening comment block of a scenario file (its `# ...` lines before the first key), without
/// the `# ` markers.
pub fn scenario_description(toml_text: &str) -> String {
    toml_text
        .lines()
        .take_while(|l| l.trim_start().starts_with('#') || l.trim().is_empty())
        .filter_map(|l| l.trim_start().strip_prefix('#'))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_tolerance_is_twenty_percent_or_one_ms() {
        assert!(agrees(10.0, 11.9));
        assert!(!agrees(10.0, 12.1));
        assert!(agrees(2.0, 2.9)); // within 1 ms
        assert!(!agrees(2.0, 3.1));
    }

    #[test]
    fn harness_incidents_mark_the_real_rows_and_are_listed() {
        use lblab_model::results::{Incident, IncidentKind};
        let row = SummaryRow {
            policy: "peak_ewma".into(),
            requests: 10,
            ok: 10,
            errors: 0,
            deadline_exceeded: 0,
            dropped: 0,
            p50_ms: 1.0,
            p90_ms: 1.0,
            p99_ms: 1.0,
            p999_ms: 1.0,
            max_ms: 1.0,
            mean_ms: 1.0,
            slow_share: 0.0,
            incidents: 1,
        };
        let run = RunSummary {
            scenario: "s".into(),
            mode: "real".into(),
            seed: 1,
            partial: false,
            backends: vec!["main/0".into(), "main/1".into()],
            fault_windows: Vec::new(),
            warmup_s: 0.0,
            rows: vec![row],
            notes: Vec::new(),
            incidents: vec![Incident {
                policy: "peak_ewma".into(),
                kind: IncidentKind::ConnectionLost,
                backend: Some(1),
                start_s: 2.0,
                end_s: 3.0,
                count: 1,
                detail: "connection to 127.0.0.1:1 lost 1 time(s)".into(),
            }],
        };
        let item = ScenarioEvidence {
            name: "s".into(),
            description: String::new(),
            sim: None,
            real: Some(run),
            sim_matched: None,
            real_dir: "s/real".into(),
            compare_chart: None,
        };
        let md = markdown(&[item], "");
        assert!(
            md.contains("| peak_ewma (affected: 1 harness incidents) |"),
            "{md}"
        );
        assert!(
            md.contains("- peak_ewma `connection_lost` `main/1` at 2.00–3.00 s: connection to"),
            "{md}"
        );
    }

    #[test]
    fn description_is_the_opening_comment() {
        let text = "# one-slow: a\n# slow one.\n\nname = \"x\" # not this\n# nor this\n";
        assert_eq!(scenario_description(text), "one-slow: a slow one.");
    }
}
