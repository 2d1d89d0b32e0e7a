//! `lblab loadgen`'s job once its run is planned: the policies against the targets
//! ([`lblab_harness::run_remote`]) with a progress bar that counts their scheduled time, the
//! results so far written after each policy, and the run folder with `targets.csv`,
//! `statuses.csv` and `report.html`.

use std::path::Path;
use std::sync::Arc;

use lblab_harness::{run_remote, RemoteOptions, RemoteRun};
use lblab_loadgen::run::Live;
use lblab_loadgen::target::Target;
use lblab_model::Scenario;
use lblab_record::{layout, RunSummary, StatusRow, TargetRow};

use crate::error::{Context, Result};
use crate::{run_folder, Lab};

/// Runs the `planned` policies of `scenario` with `options` (their live figures shown on the
/// progress bar) and writes the run into `dir` (made ready by the caller): the results so far
/// after each policy, then the whole run. The run and its summary.
pub fn run(
    lab: &Lab,
    scenario: &Scenario,
    options: RemoteOptions<'_>,
    planned: usize,
    dir: &Path,
) -> Result<(RemoteRun, RunSummary)> {
    let targets = options.targets;
    let live = Arc::new(Live::new());
    let options = RemoteOptions {
        live: Some(live.clone()),
        ..options
    };
    let schedule = crate::progress::Schedule {
        first: None,
        each: std::time::Duration::from_nanos(scenario.workload.end()),
    };
    let bar = crate::progress::Progress::scheduled(planned as u64, "policies", schedule);
    let watch = bar.watch(live);
    let mut done = 0;
    let ran = run_remote(
        scenario,
        &options,
        &mut |line| bar.line(line),
        &mut |so_far| {
            done += 1;
            bar.set(done);
            let summary =
                so_far.summary(scenario, vec![run_folder::in_progress_note(done as usize)]);
            if let Err(e) = write(lab, dir, &summary, so_far, targets) {
                bar.line(&format!(
                    "warning: could not write the results so far: {}",
                    e.chain_named(lab.names)
                ));
            }
        },
    );
    drop(watch);
    drop(bar);
    let ran = ran.with_context(|| {
        format!(
            "{} against {}",
            scenario.file.name,
            (lab.names)(lblab_message::setting::Setting::Targets)
        )
    })?;
    let summary = ran.summary(scenario, Vec::new());
    write(lab, dir, &summary, &ran, targets).context("writing load-generator results")?;
    Ok((ran, summary))
}

/// How [`run_repeats`] ended.
#[derive(Debug)]
pub struct Repeated {
    /// Every repeat that measured every policy, in order.
    pub repeats: Vec<crate::verdict::Repeat>,
    /// Each repeat's folder (`repeat-1`, …), those that ran.
    pub dirs: Vec<std::path::PathBuf>,
    /// Stopped early (interrupted): the repeats before are whole.
    pub partial: bool,
    /// What ended the runs early, if something failed.
    pub failed: Option<String>,
}

/// Runs every policy of `scenario` `count` times, interleaved (A B C, A B C, …: drift hits each
/// alike), each repeat with the next seed into its own folder `dir/repeat-<r>` (a whole run
/// folder); `say` gets one line per repeat. A stop or a failure keeps the repeats that ended.
pub fn run_repeats(
    lab: &Lab,
    scenario: &Scenario,
    options: &RemoteOptions<'_>,
    planned: usize,
    dir: &Path,
    count: u32,
    say: &mut dyn FnMut(&str),
) -> Result<Repeated> {
    let mut out = Repeated {
        repeats: Vec::new(),
        dirs: Vec::new(),
        partial: false,
        failed: None,
    };
    for r in 1..=count {
        let seed = scenario.file.seed.wrapping_add(u64::from(r - 1));
        let this = scenario
            .clone()
            .with_seed(seed)
            .with_context(|| format!("repeat {r} with seed {seed}"))?;
        let sub = dir.join(format!("repeat-{r}"));
        std::fs::create_dir_all(&sub).with_context(|| format!("creating {}", sub.display()))?;
        let (ran, summary) = run(lab, &this, options.clone(), planned, &sub)?;
        out.dirs.push(sub);
        if ran.partial || ran.failed.is_some() {
            out.partial = ran.partial;
            out.failed = ran.failed.clone();
            break;
        }
        let figures: Vec<String> = summary
            .rows
            .iter()
            .map(|row| format!("{} p99 {:.2} ms", row.policy, row.p99_ms))
            .collect();
        say(&format!("repeat {r} of {count}: {}", figures.join(", ")));
        out.repeats.push(crate::verdict::Repeat {
            shares: ran.shares(options.targets),
            summary,
        });
    }
    Ok(out)
}

/// `report.html`: the tables and the charts drawn into `dir`.
pub fn html(
    dir: &Path,
    summary: &RunSummary,
    shares: &[TargetRow],
    statuses: &[StatusRow],
) -> Result<String> {
    use lblab_report::HtmlTable;
    let cells = |line: &str| -> Vec<String> { line.split_whitespace().map(String::from).collect() };
    let mut lines = crate::table::table_lines(summary).into_iter();
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
    lab: &Lab,
    dir: &Path,
    summary: &RunSummary,
    run: &RemoteRun,
    targets: &[Target],
) -> Result<()> {
    let policies = run.results();
    run_folder::write_data(dir, summary, &policies)?;
    let (shares, statuses) = (run.shares(targets), run.statuses());
    let targets_csv = dir.join(layout::TARGETS_CSV);
    lblab_record::write_atomic(&targets_csv, &lblab_record::TargetRow::to_csv(&shares)?)
        .with_context(|| format!("writing {}", targets_csv.display()))?;
    let statuses_csv = dir.join(layout::STATUSES_CSV);
    lblab_record::write_atomic(&statuses_csv, &StatusRow::to_csv(&statuses)?)
        .with_context(|| format!("writing {}", statuses_csv.display()))?;
    run_folder::write_charts(lab, dir, summary, &policies)?;
    let page = html(dir, summary, &shares, &statuses)?;
    lblab_record::write_atomic(&dir.join(layout::REPORT_HTML), page.as_bytes())?;
    Ok(())
}
