//! `lblab loadgen`: policies against servers that run elsewhere — lblab's own fleet (`lblab
//! backend`), or any gRPC service (`--call`). Flags → options → `lblab_harness::run_remote` →
//! files and tables; the flag groups are in `loadgen/flags.rs`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use lblab_harness::{run_remote, RemoteOptions, RemoteRun};
use lblab_loadgen::method::{self, Call};
use lblab_loadgen::run::{CallOptions, Live};
use lblab_loadgen::target::Target;
use lblab_loadgen::{report, LoadgenError};
use lblab_model::overrides::{policy_specs, service_scenario};
use lblab_model::results::{self, layout, RunSummary, StatusRow};
use lblab_model::Scenario;

use super::output;

mod flags;
mod print;

/// Arguments of `lblab loadgen`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    budget: super::args::Budget,
    /// Scenario file (TOML): its workload and policies are run, with the load flags below
    /// replacing its values. Without one, the load comes from the flags and the policies from
    /// --policy.
    scenario: Option<PathBuf>,
    #[command(flatten)]
    targets: flags::Targets,
    #[command(flatten)]
    calls: flags::Calls,
    #[command(flatten)]
    tls: flags::Tls,
    #[command(flatten)]
    load: flags::Load,
    /// A policy to run (repeatable, run one after the other): a service config as JSON
    /// ('{"loadBalancingConfig":[{"round_robin":{}}]}', or just '{"round_robin":{}}'), @FILE
    /// holding one, a policy name (peak_ewma_experimental), or the label of a scenario policy
    /// [default: the scenario's policies, else round_robin, least_request_experimental and
    /// peak_ewma_experimental].
    #[arg(long = "policy", value_name = "POLICY")]
    policies: Vec<String>,
    /// Results folder [default: lblab-out/<scenario file's stem, or the method>/loadgen].
    #[arg(long)]
    out: Option<PathBuf>,
    /// What is printed on stdout: the tables (summary), the run as JSON (json, summary.json's
    /// fields with targets and statuses), a Prometheus text exposition (prometheus), or the
    /// self-contained HTML report (html). The folder always gets report.html.
    #[arg(short = 'O', long = "format", value_parser = ["summary", "json", "prometheus", "html"], default_value = "summary")]
    format: String,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Check the targets, flags, scenario and policies, print what would run, and exit without
    /// connecting to anything (a `--call` schema is checked only from --proto or --protoset:
    /// reflection would ask the server).
    #[arg(long)]
    dry_run: bool,
    /// Time 0 of the fault timeline as Unix time in seconds, the value given to `lblab backend`
    /// [default: when each policy's run starts].
    #[arg(long)]
    start_at: Option<f64>,
    #[command(flatten)]
    realtime: super::args::Realtime,
}

/// The exit code of a run in which no call succeeded (every status was an error).
const NO_CALL_SUCCEEDED: u8 = 3;

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.budget.apply();
    if let Some(path) = &args.scenario {
        args.scenario = Some(super::args::scenario_path(path)?);
    }
    let spec = args.targets.spec()?;
    let data = args.calls.request_json()?;
    args.calls.check(data.as_deref())?;
    let metadata = args.calls.metadata()?;
    let authority = args.targets.authority()?;
    let server_name = authority
        .as_ref()
        .map(|a| a.host().to_string())
        .or_else(|| {
            spec.default_authority()
                .map(|a| a.rsplit_once(':').map_or(a.clone(), |(h, _)| h.to_string()))
        });
    let transport = args.tls.transport(server_name)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a runtime to resolve the targets")?;
    let targets = rt.block_on(spec.resolve()).context("--targets")?;
    for t in targets.iter().filter(|t| !t.is_on_this_host()) {
        eprintln!(
            "warning: --targets {} is not a loopback address: this run sends its load over a \
             real network to that host",
            t.label()
        );
    }
    let name = args.calls.call.clone();
    let call = match &name {
        Some(name) => match args.calls.schema_files_call(name, data.as_deref())? {
            Some(c) => Some(c),
            None if args.dry_run => None,
            None => Some(rt.block_on(by_reflection(
                name,
                data.as_deref(),
                &targets,
                &transport,
                authority.as_ref(),
                &metadata,
            ))?),
        },
        None => None,
    };
    drop(rt);
    let (scenario, warp) = scenario(&args, &targets, call.as_ref())?;
    let planned = scenario
        .policies
        .iter()
        .filter(|p| p.runs_in_real())
        .count();
    super::check_memory(&scenario, planned, lblab_model::budget::Mode::Real)?;
    if args.dry_run {
        print::dry_run(&scenario, &targets, name.as_deref(), call.as_ref());
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(c) = &call {
        eprintln!("calling {}", c.describe());
    }
    let mut calls = CallOptions {
        transport,
        authority: authority.or_else(|| spec.default_authority().and_then(|a| a.parse().ok())),
        call: call.map(Arc::new),
        metadata,
        ..CallOptions::default()
    };
    args.targets.apply(&mut calls);
    let stem = match (&args.scenario, &args.calls.call) {
        (Some(path), _) => path.clone(),
        (None, Some(call)) => PathBuf::from(results::file_stem(call)),
        (None, None) => PathBuf::from("echo"),
    };
    let dir = output::results_dir(&stem, "loadgen", args.out.as_deref());
    let _out_dir = output::prepare_dir(&dir)?;
    let origin = args
        .start_at
        .map(|at| super::backend::origin_of(Some(at)))
        .transpose()?;
    let live = Arc::new(Live::new());
    let options = RemoteOptions {
        targets: &targets,
        resolver: Some(spec.clone()),
        calls,
        realtime: args.realtime.enabled(),
        origin,
        stop: Some(output::stop_flag()),
        live: Some(live.clone()),
        max_calls: args.load.total,
        warp,
        connect_wait: args
            .targets
            .connect_timeout
            .map(|d| std::time::Duration::from_nanos(d.0)),
    };
    let schedule = super::progress::Schedule {
        first: None,
        each: std::time::Duration::from_nanos(scenario.workload.end()),
    };
    let bar = super::progress::Progress::scheduled(planned as u64, "policies", schedule);
    let watch = bar.watch(live);
    let mut done = 0;
    let ran = run_remote(
        &scenario,
        &options,
        &mut |line| bar.line(line),
        &mut |so_far| {
            done += 1;
            bar.set(done);
            let summary = so_far.summary(&scenario, vec![output::in_progress_note(done as usize)]);
            if let Err(e) = write(&dir, &summary, so_far, &targets) {
                bar.line(&format!(
                    "warning: could not write the results so far: {e:#}"
                ));
            }
        },
    );
    drop(watch);
    drop(bar);
    let ran = ran.with_context(|| format!("{} against --targets", scenario.file.name))?;
    let summary = ran.summary(&scenario, Vec::new());
    write(&dir, &summary, &ran, &targets).context("writing load-generator results")?;
    let (shares, statuses) = (ran.shares(&targets), ran.statuses());
    match args.format.as_str() {
        "json" => outln!("{}", report::json(&summary, &shares, &statuses)?),
        "prometheus" => out!("{}", report::prometheus(&summary, &shares, &statuses)),
        "html" => out!(
            "{}",
            std::fs::read_to_string(dir.join(layout::REPORT_HTML))?
        ),
        _ => print::tables(&summary, &shares, &statuses),
    }
    match args.format.as_str() {
        "summary" => outln!("wrote {}", dir.display()),
        _ => eprintln!("wrote {}", dir.display()),
    }
    if let Some(why) = &ran.failed {
        anyhow::bail!(
            "{why}; the results measured before it are in {}",
            dir.display()
        );
    }
    if ran.partial {
        return Ok(ExitCode::from(130));
    }
    if StatusRow::none_succeeded(&statuses) {
        print::none_succeeded(&statuses, args.calls.call.is_none(), &dir);
        return Ok(ExitCode::from(NO_CALL_SUCCEEDED));
    }
    Ok(ExitCode::SUCCESS)
}

/// The method and its requests from the first target that answers server reflection.
async fn by_reflection(
    name: &str,
    data: Option<&str>,
    targets: &[Target],
    transport: &lblab_loadgen::transport::Transport,
    authority: Option<&http::uri::Authority>,
    metadata: &tonic::metadata::MetadataMap,
) -> anyhow::Result<Call> {
    let (service, _) = method::split_call(name).context("--call")?;
    let mut errors = Vec::new();
    for t in targets {
        let connector = lblab_loadgen::transport::Connector {
            transport: transport.clone(),
            host: t.host.clone(),
            addr: t.addr,
        };
        match lblab_loadgen::reflection::schema_of(connector, authority, metadata, service).await {
            Ok(pool) => return flags::resolve(&pool, name, data),
            // Another target may answer.
            Err(e @ LoadgenError::ReflectionUnreachable { .. }) => errors.push(e.to_string()),
            // The server answered: its answer holds for every target.
            Err(e) => return Err(e.into()),
        }
    }
    anyhow::bail!(
        "no target could be asked for the schema of {service}: {}",
        errors.join("; ")
    )
}

/// The scenario to run (the file or the flags, with the load flags applied, targets named by
/// address) and the rate schedule's time warp.
fn scenario(
    args: &Args,
    targets: &[Target],
    call: Option<&Call>,
) -> anyhow::Result<(Scenario, Option<Arc<lblab_loadgen::schedule::Warp>>)> {
    let from_file = args.scenario.as_deref().map(Scenario::load).transpose()?;
    let file = match &from_file {
        Some(s) => s.file.clone(),
        None => service_scenario(
            &call.map_or_else(|| "echo".into(), |c| results::file_stem(&c.name)),
            targets.len(),
        ),
    };
    if call.is_some() && file.workload.streaming_share > 0.0 {
        anyhow::bail!(
            "the scenario's workload.streaming_share is {}: streams are lblab's Echo.ServerStream; \
             with --call, every call is the method's",
            file.workload.streaming_share
        );
    }
    let policies = (!args.policies.is_empty())
        .then(|| policy_specs(&args.policies, from_file.as_ref()))
        .transpose()
        .context("--policy")?;
    let what = |p: Option<&Path>| match p {
        Some(p) => format!("{} with the command-line flags", p.display()),
        None => "the load flags".to_string(),
    };
    let mut overrides = args
        .load
        .overrides(policies, args.seed, file.workload.rate)?;
    let mut scenario = overrides
        .apply(file.clone())
        .with_context(|| what(args.scenario.as_deref()))?;
    let warp = args
        .load
        .warp(std::time::Duration::from_nanos(scenario.workload.end()))?;
    if let Some(w) = &warp {
        overrides.rate = Some(w.mean);
        scenario = overrides
            .apply(file)
            .with_context(|| what(args.scenario.as_deref()))?;
    }
    for w in scenario.config_warnings() {
        eprintln!("warning: {w}");
    }
    if let Some(w) = args.load.warmup {
        for warning in super::args::warmup_warnings(&scenario, w, &[]) {
            eprintln!("{warning}");
        }
    }
    if from_file.is_some() && targets.len() != scenario.backends.len() {
        eprintln!(
            "note: {} for {} in the scenario: requests to faulty backends (fault windows) are not attributed",
            output::count(targets.len(), "target", "targets"),
            output::count(scenario.backends.len(), "backend", "backends")
        );
    }
    flags::name_backends(&mut scenario, targets, from_file.is_some());
    Ok((scenario, warp))
}

/// The run's files, plus `targets.csv`, `statuses.csv` and `report.html`.
fn write(
    dir: &Path,
    summary: &RunSummary,
    run: &RemoteRun,
    targets: &[Target],
) -> anyhow::Result<()> {
    output::write(dir, summary, &run.results())?;
    let (shares, statuses) = (run.shares(targets), run.statuses());
    results::write_atomic(
        &dir.join(layout::TARGETS_CSV),
        &results::TargetRow::to_csv(&shares)?,
    )?;
    results::write_atomic(
        &dir.join(layout::STATUSES_CSV),
        &StatusRow::to_csv(&statuses)?,
    )?;
    let page = print::html(dir, summary, &shares, &statuses)?;
    results::write_atomic(&dir.join(layout::REPORT_HTML), page.as_bytes())?;
    Ok(())
}
