//! A run's summary as text: the aligned table of its rows and the list of its harness
//! incidents, as the run commands print them.

use lblab_record::{Incident, RunSummary};

/// The note printed under the table of a run that was interrupted.
pub const PARTIAL_NOTE: &str =
    "(partial: the run was interrupted; these are the results measured so far)";

/// Every line printed for a run's summary: the table, the partial note if it was interrupted,
/// and its incidents ([`incident_lines`]).
pub fn summary_lines(summary: &RunSummary) -> Vec<String> {
    let mut lines = table_lines(summary);
    if summary.partial {
        lines.push(PARTIAL_NOTE.to_string());
    }
    lines.extend(incident_lines(&summary.incidents, &summary.backends));
    lines
}

/// The lines of a run's table: counts and percentiles per policy; a real run's calls
/// per second and fastest and mean call; the share sent to faulty backends only when the run has
/// fault windows (a run against someone else's service has none).
pub fn table_lines(summary: &RunSummary) -> Vec<String> {
    let width = summary
        .rows
        .iter()
        .map(|r| r.policy.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let rates = !summary.rates.is_empty();
    let faulty = !summary.fault_windows.is_empty();
    let mut head = format!(
        "{:<width$} {:>9} {:>9} {:>7}",
        "policy", "requests", "ok", "errors"
    );
    if rates {
        head += &format!(" {:>9} {:>8} {:>8}", "calls/s", "min ms", "mean ms");
    }
    head += &format!(
        " {:>8} {:>8} {:>8} {:>9} {:>9}",
        "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms"
    );
    if faulty {
        head += &format!(" {:>9}", "to faulty");
    }
    let mut lines = vec![head];
    for r in &summary.rows {
        let mut line = format!(
            "{:<width$} {:>9} {:>9} {:>7}",
            r.policy, r.requests, r.ok, r.errors
        );
        if rates {
            let (per_s, min) = summary
                .rate(&r.policy)
                .map_or((0.0, 0.0), |x| (x.calls_per_s, x.min_ms));
            line += &format!(" {per_s:>9.1} {min:>8.2} {:>8.2}", r.mean_ms);
        }
        line += &format!(
            " {:>8.2} {:>8.2} {:>8.2} {:>9.2} {:>9.2}",
            r.p50_ms, r.p90_ms, r.p99_ms, r.p999_ms, r.max_ms
        );
        if faulty {
            line += &format!(" {:>8.2}%", 100.0 * r.slow_share);
        }
        lines.push(line);
    }
    lines
}

/// The lines that list a run's harness incidents, which mark its affected rows: a heading, one line per incident (policy, kind, backend,
/// how many times and when) and where the details are.
pub fn incident_lines(incidents: &[Incident], backends: &[String]) -> Vec<String> {
    if incidents.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "harness incidents ({}): these rows are affected by the harness, not only by the scenario:",
        incidents.len()
    )];
    for i in incidents {
        let backend = i
            .backend
            .and_then(|b| backends.get(b).map(|n| format!(" {n}")))
            .unwrap_or_default();
        lines.push(format!(
            "  {}: {}{backend}, {} times, {:.1}-{:.1} s",
            i.policy,
            i.kind.name(),
            i.count,
            i.start_s,
            i.end_s,
        ));
    }
    lines.push("  (what happened, in full: `incidents` in the run's summary.json)".to_string());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use lblab_record::IncidentKind;

    #[test]
    fn incidents_print_one_short_line_each_with_the_detail_left_to_the_files() {
        let detail = "the load generator could not keep to the schedule: ".repeat(12);
        let incident = Incident {
            policy: "peak_ewma".into(),
            kind: IncidentKind::LateDispatch,
            backend: Some(1),
            start_s: 12.0,
            end_s: 21.5,
            count: 37,
            detail: detail.clone(),
        };
        let lines = incident_lines(
            &[incident.clone(), incident],
            &["main/0".into(), "slow/0".into()],
        );
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert_eq!(
            lines[1],
            "  peak_ewma: late_dispatch slow/0, 37 times, 12.0-21.5 s"
        );
        assert!(
            lines
                .iter()
                .all(|l| l.len() < 100 && !l.contains(&detail[..40])),
            "{lines:#?}"
        );
        assert!(lines[3].contains("summary.json"), "{lines:#?}");
        assert!(incident_lines(&[], &[]).is_empty());
    }
}
