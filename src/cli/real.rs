//! `lblab real`: every policy of a scenario against real tonic servers on loopback.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use lblab_harness::{self as harness, HarnessOptions, RealRun};
use lblab_model::units::Dur;
use lblab_model::Scenario;
use lblab_record::{layout, write_atomic, Mode, PolicyResult, RunSummary};

use super::{args, output};

/// Arguments of `lblab real`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    budget: super::args::Budget,
    #[command(flatten)]
    charts: super::args::Charts,
    /// Scenario file (TOML).
    scenario: PathBuf,
    #[command(flatten)]
    run: args::Run,
    #[command(flatten)]
    length: args::Length,
    /// How the harness runs.
    #[command(flatten)]
    harness: HarnessArgs,
}

/// The harness flags `real` and `compare` share.
#[derive(Debug, clap::Args)]
pub struct HarnessArgs {
    /// Where the fleet listens; port 0 gives every backend an ephemeral port, port P gives
    /// backend i port P+i.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Length of the harness-floor run (zero-delay backends at the same rate); 0s skips it.
    #[arg(long, default_value = "10s")]
    floor: Dur,
    /// Worker threads of the fleet's runtime (1 to 256).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    fleet_threads: u16,
    /// Worker threads of the load generator's runtime (1 to 256).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    client_threads: u16,
    /// Do not pin the load generator to the first CPU and the fleet to the second.
    #[arg(long)]
    no_pin: bool,
    /// How long the timer and dispatcher threads spin before each deadline instead of sleeping
    /// (0 to 10ms: a longer spin only burns the CPU the fleet needs).
    #[arg(long, default_value = "120us", value_parser = parse_spin)]
    spin: Dur,
    /// Runs per policy at most: a run disturbed by other work on the machine (its dispatch
    /// lateness p99 above 1 ms) is run again and the less disturbed one kept; harness.json lists
    /// the discarded attempts.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=10))]
    attempts: u32,
    #[command(flatten)]
    realtime: args::Realtime,
}

impl HarnessArgs {
    /// The harness options these flags give, for the policies `only` (all if empty).
    pub fn options(&self, only: &[String]) -> HarnessOptions<'static> {
        super::args::warn_if_listening_off_host(self.listen);
        HarnessOptions {
            listen: self.listen,
            stop: Some(output::stop_flag()),
            only: only.to_vec(),
            floor: (self.floor.0 > 0).then(|| std::time::Duration::from_nanos(self.floor.0)),
            realtime: self.realtime.enabled(),
            fleet_threads: usize::from(self.fleet_threads),
            client_threads: usize::from(self.client_threads),
            spin: std::time::Duration::from_nanos(self.spin.0),
            pin: !self.no_pin,
            attempts: self.attempts,
            ..HarnessOptions::default()
        }
    }
}

/// `--spin`: a duration of at most 10 ms.
fn parse_spin(text: &str) -> Result<Dur, String> {
    let d: Dur = text.parse()?;
    if d.0 > 10_000_000 {
        return Err(format!(
            "{d} is more than 10ms; the spin is the slack before each timer deadline"
        ));
    }
    Ok(d)
}

/// Runs the real harness and writes its data files and `harness.json` (not the final charts:
/// the caller prints the table first, then draws them with [`output::write_charts`]); returns
/// the results with the folder. The results so far, charts included, are also written after
/// each policy (marked partial), so a run killed outright keeps the policies it finished.
pub fn run_and_write(
    scenario: &Scenario,
    options: &HarnessOptions<'_>,
    dir: &Path,
) -> anyhow::Result<(RealRun, RunSummary, Vec<PolicyResult>, PathBuf)> {
    let planned = scenario
        .policies
        .iter()
        .filter(|p| options.only.is_empty() || options.only.contains(&p.name))
        .filter(|p| p.runs_in_real())
        .count();
    super::check_memory(scenario, planned, lblab_model::budget::Mode::Real)?;
    // In-process: a listener per backend, and both ends of every client's connection to it.
    let clients = u64::from(scenario.file.workload.clients.max(1));
    lblab_wire::ensure_open_files(64 + scenario.backends.len() as u64 * (1 + 2 * clients))
        .map_err(anyhow::Error::msg)?;
    let _out_dir = output::prepare_dir(dir)?;
    let schedule = super::progress::Schedule {
        first: options
            .floor
            .map(|length| harness::floor_schedule(scenario, length)),
        each: std::time::Duration::from_nanos(scenario.workload.end()),
    };
    let bar = super::progress::Progress::scheduled(planned as u64, "policies", schedule);
    let live = std::sync::Arc::new(lblab_loadgen::run::Live::new());
    let options = HarnessOptions {
        live: Some(live.clone()),
        ..options.clone()
    };
    let watch = bar.watch(live);
    let real = harness::run_real(
        scenario,
        &options,
        &mut |line| {
            bar.line(line);
            bar.message(line.to_string());
        },
        &mut |so_far| {
            bar.set(so_far.policies.len() as u64);
            let written = write(scenario, so_far, dir, true)
                .and_then(|(summary, results)| output::write_charts(dir, &summary, &results));
            if let Err(e) = written {
                bar.line(&format!(
                    "warning: could not write the results so far: {e:#}"
                ));
            }
        },
    )?;
    drop(watch);
    drop(bar);
    let (summary, results) = write(scenario, &real, dir, false)?;
    Ok((real, summary, results, dir.to_path_buf()))
}

/// Writes a real run's data files, `harness.json` and `statuses.csv` into `dir` (not its charts,
/// so that a chart that cannot be drawn loses none of them); `in_progress` marks a checkpoint
/// written while the run goes on.
fn write(
    scenario: &Scenario,
    real: &RealRun,
    dir: &Path,
    in_progress: bool,
) -> anyhow::Result<(RunSummary, Vec<PolicyResult>)> {
    let results: Vec<PolicyResult> = real.policies.iter().map(|p| p.run.result.clone()).collect();
    let h = real.summary();
    let mut notes = Vec::new();
    if in_progress {
        notes.push(output::in_progress_note(real.policies.len()));
    }
    notes.extend(real.notes(&h));
    let partial = real.partial || in_progress;
    let summary = RunSummary::of(scenario.run_head(), Mode::Real, &results, partial, notes);
    output::write_data(dir, &summary, &results).context("writing real-harness results")?;
    let json = serde_json::to_string_pretty(&h).context("encoding harness.json")?;
    let harness_json = dir.join(layout::HARNESS_JSON);
    write_atomic(&harness_json, (json + "\n").as_bytes())
        .with_context(|| format!("writing {}", harness_json.display()))?;
    let statuses: Vec<lblab_record::StatusRow> = real
        .policies
        .iter()
        .flat_map(|p| p.run.statuses.iter().cloned())
        .collect();
    let csv = lblab_record::StatusRow::to_csv(&statuses).context("encoding statuses.csv")?;
    let statuses_csv = dir.join(layout::STATUSES_CSV);
    write_atomic(&statuses_csv, &csv)
        .with_context(|| format!("writing {}", statuses_csv.display()))?;
    Ok((summary, results))
}

/// Prints the harness's own numbers.
pub fn print_harness(real: &RealRun) {
    let h = real.summary();
    if let Some(f) = &h.floor {
        outln!(
            "harness floor ({} zero-delay backends, {} req/s): p50 {:.3} ms, p99 {:.3} ms, p99.9 {:.3} ms",
            f.backends, f.rate, f.p50_ms, f.p99_ms, f.p999_ms
        );
    }
    let width = h
        .policies
        .iter()
        .map(|p| p.policy.len())
        .max()
        .unwrap_or(6)
        .max(6);
    outln!(
        "{:<width$} {:>14} {:>14} {:>16} {:>16} {:>12} {:>9}",
        "policy",
        "delay err p50",
        "delay err p99",
        "dispatch late p50",
        "dispatch late p99",
        "cpu/call",
        "machine%"
    );
    for p in &h.policies {
        outln!(
            "{:<width$} {:>11.0} µs {:>11.0} µs {:>13.0} µs {:>13.0} µs {:>9.1} µs {:>8.0}%",
            p.policy,
            p.delay_error.p50_us,
            p.delay_error.p99_us,
            p.dispatch_lateness.p50_us,
            p.dispatch_lateness.p99_us,
            p.client_cpu_per_call_us,
            p.machine.busy_pct
        );
    }
    outln!("(machine%: CPU busy with anything, this run included, while the policy ran; details in harness.json)");
    for p in &h.policies {
        if !p.discarded_attempts.is_empty() {
            let late: Vec<String> = p
                .discarded_attempts
                .iter()
                .map(|l| format!("{l:.0} µs"))
                .collect();
            outln!(
                "{}: discarded {} disturbed attempt(s), dispatch lateness p99 {}",
                p.policy,
                late.len(),
                late.join(", ")
            );
        }
    }
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.scenario = args::scenario_path(&args.scenario)?;
    args.budget.apply();
    args.charts.apply();
    let scenario = args::load_with_length(
        &args.scenario,
        args.run.seed,
        &args.length,
        &args.run.policies,
    )?;
    let options = args.harness.options(&args.run.policies);
    let dir = output::results_dir(&args.scenario, "real", args.run.out.as_deref());
    let (real, summary, results, dir) = run_and_write(&scenario, &options, &dir)?;
    // The table first, then the charts: the results are on the screen and in the data files
    // (harness.json included) whatever happens to the charts.
    outln!(
        "scenario {} (seed {}), real over loopback TCP:",
        scenario.file.name,
        scenario.file.seed
    );
    output::print_table(&summary);
    print_harness(&real);
    output::write_charts(&dir, &summary, &results).context("writing real-harness results")?;
    outln!("wrote {}", dir.display());
    if let Some(why) = &real.failed {
        anyhow::bail!(
            "{why}; the results measured before it are in {}",
            dir.display()
        );
    }
    Ok(if real.partial {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}
