//! What `lblab loadgen` prints, and its HTML page: the libraries' tables put on stdout.

use std::path::Path;

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
