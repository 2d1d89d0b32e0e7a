//! `lblab loadgen`: every policy of a scenario against servers that run elsewhere.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use lblab_loadgen::run::{run_policy, Quantiles, RunOptions};
use lblab_model::results::Mode;
use lblab_model::results::RunSummary;

use super::output;

/// Arguments of `lblab loadgen`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario file (TOML): its workload and policies are run.
    scenario: PathBuf,
    /// The servers, one per backend of the scenario, in order: host:port,host:port,...
    #[arg(long, value_delimiter = ',', required = true)]
    targets: Vec<String>,
    #[command(flatten)]
    run: super::args::Run,
    #[command(flatten)]
    length: super::args::Length,
    /// Time 0 of the fault timeline as Unix time in seconds, the value given to `lblab backend`
    /// [default: when each policy's run starts].
    #[arg(long)]
    start_at: Option<f64>,
    #[command(flatten)]
    realtime: super::args::Realtime,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let scenario = super::args::load_with_length(&args.scenario, args.run.seed, &args.length)?;
    super::check_memory(
        &scenario,
        scenario.policies.len(),
        lblab_model::budget::Mode::Real,
    )?;
    let mut targets: Vec<SocketAddr> = Vec::new();
    for t in &args.targets {
        let addr = t
            .to_socket_addrs()
            .with_context(|| format!("--targets: {t:?} is not host:port"))?
            .next()
            .with_context(|| format!("--targets: {t:?} resolves to no address"))?;
        if !addr.ip().is_loopback() {
            eprintln!(
                "warning: --targets {t} ({addr}) is not a loopback address: this run sends the \
                 scenario's load over a real network to that host"
            );
        }
        targets.push(addr);
    }
    if targets.len() != scenario.backends.len() {
        eprintln!(
            "note: {} targets for {} backends in the scenario: requests to faulty backends (fault windows) are not attributed",
            targets.len(),
            scenario.backends.len()
        );
    }
    super::args::check_policies(&scenario, &args.run.policies)?;
    let dir = output::results_dir(&args.scenario, "loadgen", args.run.out.as_deref());
    let _out_dir = output::prepare_dir(&dir)?;
    let stop = output::stop_flag();
    let realtime = args.realtime.enabled();
    let mut results = Vec::new();
    let mut notes = Vec::new();
    let mut partial = false;
    let mut failed = None;
    let selected = |p: &lblab_model::scenario::PolicyEntry| {
        args.run.policies.is_empty() || args.run.policies.contains(&p.name)
    };
    let planned = scenario
        .policies
        .iter()
        .filter(|p| selected(p) && p.runs_in_real())
        .count();
    for p in &scenario.policies {
        if !selected(p) {
            continue;
        }
        if !p.runs_in_real() {
            eprintln!(
                "note: policy {:?} runs only in the simulator; skipped",
                p.name
            );
            continue;
        }
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            partial = true;
            break;
        }
        let origin = match args.start_at {
            Some(_) => super::backend::origin_of(args.start_at)?,
            None => std::time::Instant::now() + Duration::from_millis(500),
        };
        eprintln!(
            "{}: running for {:.0}s",
            p.name,
            scenario.workload.end() as f64 / 1e9
        );
        let run = match run_policy(
            &scenario,
            p,
            &targets,
            &RunOptions {
                stop: Some(stop),
                realtime,
                ..RunOptions::new(origin)
            },
        ) {
            Ok(run) => run,
            // Nothing measured yet: just the error.
            Err(e) if results.is_empty() => {
                return Err(e).with_context(|| format!("policy {}", p.name));
            }
            // Keep what the earlier policies measured.
            Err(e) => {
                failed = Some(format!("policy {}: {e}", p.name));
                partial = true;
                break;
            }
        };
        let late = Quantiles::of(&run.lateness);
        notes.push((
            format!("{}: dispatch lateness p99 us", p.name),
            format!("{:.0}", late.p99_us),
        ));
        notes.push((
            format!("{}: client cpu per call us", p.name),
            format!("{:.1}", run.cpu_per_call_us()),
        ));
        eprintln!(
            "{}: dispatch lateness p99 {:.0} µs, client CPU {:.1} µs per call",
            p.name,
            late.p99_us,
            run.cpu_per_call_us()
        );
        partial |= run.partial;
        results.push(run.result);
        if results.len() < planned && !partial {
            // A checkpoint: a run killed outright keeps the policies it finished.
            let mut so_far = notes.clone();
            so_far.push(output::in_progress_note(results.len()));
            let summary = RunSummary::of(&scenario, Mode::Real, &results, true, so_far);
            if let Err(e) = output::write(&dir, &summary, &results) {
                eprintln!("warning: could not write the results so far: {e:#}");
            }
        }
    }
    if let Some(why) = &failed {
        notes.push(("stopped early".into(), why.clone()));
    }
    let summary = RunSummary::of(&scenario, Mode::Real, &results, partial, notes);
    output::write(&dir, &summary, &results).context("writing load-generator results")?;
    output::print_table(&summary);
    println!("wrote {}", dir.display());
    if let Some(why) = failed {
        anyhow::bail!(
            "{why}; the results measured before it are in {}",
            dir.display()
        );
    }
    Ok(if partial {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}
