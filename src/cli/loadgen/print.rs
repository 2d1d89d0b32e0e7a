//! What `lblab loadgen` prints, and its HTML page: the libraries' tables put on stdout.

use std::path::Path;

use anyhow::Context;

use lblab_harness::RemoteRun;
use lblab_loadgen::method::Call;
use lblab_loadgen::report;
use lblab_loadgen::target::Target;
use lblab_model::Scenario;
use lblab_record::{layout, RunSummary, StatusRow, TargetRow};

/// `--dry-run`'s plan.
pub fn dry_run(scenario: &Scenario, targets: &[Target], name: Option<&str>, call: Option<&Call>) {
    let w = &scenario.file.workload;
    let load = match w.concurrency {
        Some(c) => format!("closed loop, {c} calls in flight per client"),
        None => format!(
            "{} calls/s open loop ({})",
            w.rate,
            format!("{:?}", w.arrival).to_lowercase()
        ),
    };
    outln!(
        "dry run: nothing was sent. Would run {} clients at {load}, warm-up {} then {} measured, per policy:",
        w.clients, w.warmup, w.duration
    );
    for p in scenario.policies.iter().filter(|p| p.runs_in_real()) {
        outln!("  policy {}", p.name);
    }
    for t in targets {
        outln!("  target {}", t.label());
    }
    match (name, call) {
        (Some(name), None) => outln!(
            "  calling {name}: its schema is read by reflection when the run starts (not checked)"
        ),
        (Some(_), Some(c)) => outln!("  calling {}", c.describe()),
        (None, _) => outln!("  calling lblab's Echo/Unary (the scenario's backend behaviour)"),
    }
}

/// The summary table, the traffic shares and the status distribution.
pub fn tables(summary: &RunSummary, shares: &[TargetRow], statuses: &[StatusRow]) {
    super::super::print_table(summary);
    for lines in [report::share_lines(shares), report::status_lines(statuses)] {
        if !lines.is_empty() {
            outln!();
        }
        for line in lines {
            outln!("{line}");
        }
    }
}

/// Says on stderr that no call succeeded, with the first error and a hint.
pub fn none_succeeded(statuses: &[StatusRow], echo: bool, dir: &Path) {
    let first = statuses
        .iter()
        .find(|r| r.status != StatusRow::OK && r.count > 0)
        .map(|r| format!(": {} {}", r.status, r.message))
        .unwrap_or_default();
    let hint = if echo {
        " (without --call every call is lblab's own lblab.v1.Echo/Unary, which only `lblab \
         backend` serves: give --call package.Service/Method for your service)"
    } else {
        ""
    };
    eprintln!(
        "error: no call succeeded{first}{hint}; the statuses are in {}",
        dir.join(layout::STATUSES_CSV).display()
    );
}

/// `report.html`: the tables and the charts drawn into `dir`.
pub fn html(
    dir: &Path,
    summary: &RunSummary,
    shares: &[TargetRow],
    statuses: &[StatusRow],
) -> anyhow::Result<String> {
    use lblab_report::HtmlTable;
    let cells = |line: &str| -> Vec<String> { line.split_whitespace().map(String::from).collect() };
    let mut lines = lblab_record::table::table_lines(summary).into_iter();
    let header = lines.next().map(|h| split_header(&h)).unwrap_or_default();
    let rows: Vec<Vec<String>> = lines.map(|l| cells(&l)).collect();
    let mut tables = vec![HtmlTable {
        title: "Latency and counts (after the warm-up)".into(),
        header,
        rows,
    }];
    tables.push(HtmlTable {
        title: "Calls per target".into(),
        header: ["policy", "target", "address", "calls", "share", "failed"]
            .map(String::from)
            .to_vec(),
        rows: shares
            .iter()
            .map(|r| {
                let share: f64 = r.share.parse().unwrap_or(0.0);
                vec![
                    r.policy.clone(),
                    r.target.clone(),
                    r.address.clone(),
                    r.sends.to_string(),
                    format!("{:.1}%", share * 100.0),
                    r.failures.to_string(),
                ]
            })
            .collect(),
    });
    tables.push(HtmlTable {
        title: "Statuses (every call that ended, warm-up included)".into(),
        header: ["policy", "status", "calls", "message"]
            .map(String::from)
            .to_vec(),
        rows: statuses
            .iter()
            .map(|r| {
                vec![
                    r.policy.clone(),
                    r.status.clone(),
                    r.count.to_string(),
                    r.message.clone(),
                ]
            })
            .collect(),
    });
    let title = format!("lblab loadgen: {}", summary.scenario);
    Ok(lblab_report::html_page(dir, &title, &tables)?)
}

/// The table's header cells: the column names, some of which hold a space ("p50 ms").
fn split_header(line: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in line.split_whitespace() {
        match out.last_mut() {
            Some(last) if matches!(word, "ms" | "faulty") => {
                last.push(' ');
                last.push_str(word);
            }
            _ => out.push(word.to_string()),
        }
    }
    out
}

/// The run's files, plus `targets.csv`, `statuses.csv` and `report.html`: every data file
/// before the charts, so that a chart that cannot be written (a full disk) loses none of them.
pub fn write(
    dir: &Path,
    summary: &RunSummary,
    run: &RemoteRun,
    targets: &[Target],
) -> anyhow::Result<()> {
    let policies = run.results();
    lblab_lab::run_folder::write_data(dir, summary, &policies)?;
    let (shares, statuses) = (run.shares(targets), run.statuses());
    let targets_csv = dir.join(layout::TARGETS_CSV);
    lblab_record::write_atomic(&targets_csv, &lblab_record::TargetRow::to_csv(&shares)?)
        .with_context(|| format!("writing {}", targets_csv.display()))?;
    let statuses_csv = dir.join(layout::STATUSES_CSV);
    lblab_record::write_atomic(&statuses_csv, &StatusRow::to_csv(&statuses)?)
        .with_context(|| format!("writing {}", statuses_csv.display()))?;
    lblab_lab::run_folder::write_charts(&super::super::lab(), dir, summary, &policies)?;
    let page = html(dir, summary, &shares, &statuses)?;
    lblab_record::write_atomic(&dir.join(layout::REPORT_HTML), page.as_bytes())?;
    Ok(())
}
