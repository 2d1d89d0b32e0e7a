//! `lblab loadgen`: policies against servers that run elsewhere — lblab's own fleet (`lblab
//! backend`), or any gRPC service (`--call`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use lblab_loadgen::method::{self, Call};
use lblab_loadgen::run::{run_policy, CallOptions, Quantiles, RunOptions};
use lblab_loadgen::target::{Target, TargetSpec};
use lblab_loadgen::transport::{Connector, TlsOptions, Transport};
use lblab_model::dist::DistSpec;
use lblab_model::results::{self, layout, Mode, RunSummary, StatusRow, TargetRow};
use lblab_model::scenario::{Arrival, GroupSpec, PolicySpec, ScenarioFile, WorkloadSpec};
use lblab_model::units::Dur;
use lblab_model::Scenario;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};

use super::output;

/// The policies run against a service when neither a scenario nor `--policy` names any.
const DEFAULT_POLICIES: &[&str] = &[
    "round_robin",
    "least_request_experimental",
    "peak_ewma_experimental",
];

/// Arguments of `lblab loadgen`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    budget: super::args::Budget,
    /// Scenario file (TOML): its workload and policies are run, with the load flags below
    /// replacing its values. Without one, the load comes from the flags and the policies from
    /// --policy.
    scenario: Option<PathBuf>,
    /// The servers: host:port,host:port,... (one endpoint each, in the order of the scenario's
    /// backends), or dns:///name:port (every address of the name, re-resolved while the run goes).
    #[arg(long, value_delimiter = ',', required = true)]
    targets: Vec<String>,
    /// How often a dns:/// target is re-resolved (gRPC's DNS resolver waits at least 30 s).
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    resolve_every: Dur,

    /// The unary method to call, package.Service/Method [default: lblab's Echo/Unary, which
    /// carries the scenario's backend behaviour].
    #[arg(long, value_name = "METHOD")]
    call: Option<String>,
    /// The request message as JSON (protobuf's JSON mapping), checked against the schema.
    #[arg(short = 'd', long, value_name = "JSON", conflicts_with = "data_file")]
    data: Option<String>,
    /// A file holding the request message as JSON.
    #[arg(short = 'D', long, value_name = "FILE")]
    data_file: Option<PathBuf>,
    /// .proto file with the method's service (repeatable) [default: ask the server by
    /// reflection, grpc.reflection.v1 or v1alpha].
    #[arg(long = "proto", value_name = "FILE")]
    protos: Vec<PathBuf>,
    /// Where imports of --proto files are found (repeatable) [default: each file's folder].
    #[arg(long = "import-path", value_name = "DIR")]
    import_paths: Vec<PathBuf>,
    /// Metadata sent with every call, key:value (repeatable; a key ending in -bin takes base64).
    #[arg(short = 'H', long = "metadata", value_name = "KEY:VALUE")]
    metadata: Vec<String>,
    /// The :authority of every call instead of each target's host:port (with TLS, also the name
    /// the server's certificate must have).
    #[arg(long)]
    authority: Option<String>,

    /// Connect with TLS (rustls; ALPN h2).
    #[arg(long)]
    tls: bool,
    /// PEM file of the certificates that may sign the server's [default: the Mozilla roots].
    #[arg(long, value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// PEM file of the client certificate chain, for mutual TLS (with --key).
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// PEM file of the client's private key, for mutual TLS (with --cert).
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// TLS without verifying the server's certificate (implies --tls; ghz's --skipTLS). Anyone
    /// on the path can then read and change the calls.
    #[arg(long, alias = "skipTLS")]
    skip_tls_verify: bool,
    /// Plaintext, as ghz's --insecure (plaintext is already the default). Refused with a TLS
    /// flag: for TLS without verification, use --skip-tls-verify.
    #[arg(long)]
    insecure: bool,

    /// Offered calls per second over all clients, open loop [default without a scenario: 100].
    #[arg(long, conflicts_with = "concurrency")]
    rate: Option<f64>,
    /// Closed loop instead: calls each client keeps in flight.
    #[arg(short = 'c', long)]
    concurrency: Option<u32>,
    /// Clients, each with its own policy instance and connections [default without a scenario:
    /// 1].
    #[arg(long)]
    clients: Option<u32>,
    /// Evenly spaced arrivals instead of Poisson ones (open loop).
    #[arg(long)]
    constant: bool,
    /// Per-call deadline [default without a scenario: 20s, as ghz's --timeout].
    #[arg(long, value_name = "DURATION")]
    deadline: Option<Dur>,
    #[command(flatten)]
    length: super::args::Length,

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
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Check the targets, flags, scenario and policies, print what would run, and exit without
    /// connecting to anything (a `--call` schema is checked only from --proto files: reflection
    /// would ask the server).
    #[arg(long)]
    dry_run: bool,
    /// Time 0 of the fault timeline as Unix time in seconds, the value given to `lblab backend`
    /// [default: when each policy's run starts].
    #[arg(long)]
    start_at: Option<f64>,
    #[command(flatten)]
    realtime: super::args::Realtime,
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.budget.apply();
    if let Some(path) = &args.scenario {
        args.scenario = Some(super::args::scenario_path(path)?);
    }
    let spec = TargetSpec::parse(&args.targets, Duration::from_nanos(args.resolve_every.0))?;
    anyhow::ensure!(
        args.resolve_every.0 >= 1_000_000_000,
        "--resolve-every {} is too short: at least 1s (gRPC's own resolver waits 30 s)",
        args.resolve_every
    );
    let data = request_json(&args)?;
    if args.call.is_none() {
        let misplaced = [
            ("--data", data.is_some()),
            ("--proto", !args.protos.is_empty()),
            ("--import-path", !args.import_paths.is_empty()),
        ];
        if let Some((flag, _)) = misplaced.iter().find(|(_, given)| *given) {
            anyhow::bail!("{flag} describes the request of --call, which is not given");
        }
    }
    let metadata = metadata(&args.metadata)?;
    let authority = args
        .authority
        .as_deref()
        .map(|a| {
            a.parse::<http::uri::Authority>()
                .with_context(|| format!("--authority {a:?} is not host[:port]"))
        })
        .transpose()?;
    let transport = transport(&args, &spec, authority.as_ref())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a runtime to resolve the targets")?;
    let targets = rt.block_on(spec.resolve())?;
    for t in targets.iter().filter(|t| !t.is_on_this_host()) {
        eprintln!(
            "warning: --targets {} is not a loopback address: this run sends its load over a \
             real network to that host",
            t.label()
        );
    }
    if args.dry_run {
        drop(rt);
        return dry_run(&args, &targets, data.as_deref());
    }
    let call = match &args.call {
        Some(name) => {
            let c = rt.block_on(schema_call(
                name,
                data.as_deref(),
                &args,
                &targets,
                &transport,
                authority.as_ref(),
                &metadata,
            ))?;
            eprintln!("calling {} with a {}-byte request", c.name, c.request.len());
            Some(Arc::new(c))
        }
        None => None,
    };
    drop(rt);
    let scenario = scenario(&args, &targets, call.as_deref())?;
    super::check_memory(
        &scenario,
        scenario.policies.len(),
        lblab_model::budget::Mode::Real,
    )?;
    if args.scenario.is_some() && targets.len() != scenario.backends.len() {
        eprintln!(
            "note: {} for {} in the scenario: requests to faulty backends (fault windows) are not attributed",
            output::count(targets.len(), "target", "targets"),
            output::count(scenario.backends.len(), "backend", "backends")
        );
    }
    let calls = CallOptions {
        transport,
        authority: authority.or_else(|| {
            spec.default_authority()
                .and_then(|a| a.parse::<http::uri::Authority>().ok())
        }),
        call,
        metadata,
    };
    let stem = match (&args.scenario, &args.call) {
        (Some(path), _) => path.clone(),
        (None, Some(call)) => PathBuf::from(results::file_stem(call)),
        (None, None) => PathBuf::from("echo"),
    };
    let dir = output::results_dir(&stem, "loadgen", args.out.as_deref());
    let _out_dir = output::prepare_dir(&dir)?;
    run_all(&args, &scenario, &targets, &spec, calls, &dir)
}

/// `--dry-run`: everything `run` checks before its first connection, then the plan; nothing is
/// dialled and no results folder is made.
fn dry_run(args: &Args, targets: &[Target], data: Option<&str>) -> anyhow::Result<ExitCode> {
    let call = match &args.call {
        Some(name) if !args.protos.is_empty() => {
            let pool = method::pool_from_protos(&args.protos, &args.import_paths)?;
            Some(method::resolve(&pool, name, data)?)
        }
        _ => None,
    };
    let scenario = scenario(args, targets, call.as_ref())?;
    super::check_memory(
        &scenario,
        scenario.policies.len(),
        lblab_model::budget::Mode::Real,
    )?;
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
    match (&args.call, &call) {
        (Some(name), None) => outln!(
            "  calling {name}: its schema is read by reflection when the run starts (not checked)"
        ),
        (Some(_), Some(c)) => outln!(
            "  calling {} with a {}-byte request",
            c.name,
            c.request.len()
        ),
        (None, _) => outln!("  calling lblab's Echo/Unary (the scenario's backend behaviour)"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs every policy one after the other and writes the results, keeping what was measured if a
/// later policy fails or the run is stopped.
fn run_all(
    args: &Args,
    scenario: &Scenario,
    targets: &[Target],
    spec: &TargetSpec,
    calls: CallOptions,
    dir: &Path,
) -> anyhow::Result<ExitCode> {
    let stop = output::stop_flag();
    let realtime = args.realtime.enabled();
    let mut results = Vec::new();
    let mut notes = Vec::new();
    let mut partial = false;
    let mut failed = None;
    let planned = scenario
        .policies
        .iter()
        .filter(|p| p.runs_in_real())
        .count();
    let names: Vec<(String, String)> = targets
        .iter()
        .map(|t| (t.name.clone(), t.addr.to_string()))
        .collect();
    let mut shares = Vec::new();
    let mut statuses: Vec<StatusRow> = Vec::new();
    let schedule = super::progress::Schedule {
        first: None,
        each: Duration::from_nanos(scenario.workload.end()),
    };
    let bar = super::progress::Progress::scheduled(planned as u64, "policies", schedule);
    let live = std::sync::Arc::new(lblab_loadgen::run::Live::new());
    let watch = bar.watch(live.clone());
    for p in &scenario.policies {
        if !p.runs_in_real() {
            bar.line(&format!(
                "note: policy {:?} runs only in the simulator; skipped",
                p.name
            ));
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
        let running = format!(
            "{}: running for {:.0}s",
            p.name,
            scenario.workload.end() as f64 / 1e9
        );
        bar.line(&running);
        bar.message(running);
        let options = RunOptions {
            stop: Some(stop),
            realtime,
            calls: calls.clone(),
            resolver: spec.refresh().map(|_| spec.clone()),
            live: Some(live.clone()),
            ..RunOptions::new(origin)
        };
        let run = match run_policy(scenario, p, targets, &options) {
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
        for change in &run.endpoint_changes {
            notes.push((format!("{}: endpoints", p.name), change.clone()));
        }
        bar.line(&format!(
            "{}: dispatch lateness p99 {:.0} µs, client CPU {:.1} µs per call",
            p.name,
            late.p99_us,
            run.cpu_per_call_us()
        ));
        partial |= run.partial;
        shares.extend(TargetRow::of(&run.result, &names));
        statuses.extend(run.statuses);
        results.push(run.result);
        bar.set(results.len() as u64);
        if results.len() < planned && !partial {
            // A checkpoint: a run killed outright keeps the policies it finished.
            let mut so_far = notes.clone();
            so_far.push(output::in_progress_note(results.len()));
            let summary = RunSummary::of(scenario, Mode::Real, &results, true, so_far);
            if let Err(e) = write(dir, &summary, &results, &shares, &statuses) {
                bar.line(&format!(
                    "warning: could not write the results so far: {e:#}"
                ));
            }
        }
    }
    drop(watch);
    drop(bar);
    if let Some(why) = &failed {
        notes.push(("stopped early".into(), why.clone()));
    }
    let summary = RunSummary::of(scenario, Mode::Real, &results, partial, notes);
    write(dir, &summary, &results, &shares, &statuses).context("writing load-generator results")?;
    output::print_table(&summary);
    print_shares(&shares);
    print_statuses(&statuses);
    outln!("wrote {}", dir.display());
    if let Some(why) = failed {
        anyhow::bail!(
            "{why}; the results measured before it are in {}",
            dir.display()
        );
    }
    if partial {
        return Ok(ExitCode::from(130));
    }
    if StatusRow::none_succeeded(&statuses) {
        let first = statuses
            .iter()
            .find(|r| r.status != StatusRow::OK && r.count > 0)
            .map(|r| format!(": {} {}", r.status, r.message))
            .unwrap_or_default();
        let hint = if args.call.is_none() {
            " (without --call every call is lblab's own lblab.v1.Echo/Unary, which only `lblab \
             backend` serves: give --call package.Service/Method for your service)"
        } else {
            ""
        };
        eprintln!(
            "error: no call succeeded{first}{hint}; the statuses are in {}",
            dir.join(layout::STATUSES_CSV).display()
        );
        return Ok(ExitCode::from(NO_CALL_SUCCEEDED));
    }
    Ok(ExitCode::SUCCESS)
}

/// The exit code of a run in which no call succeeded (every status was an error).
const NO_CALL_SUCCEEDED: u8 = 3;

/// Prints how the calls ended per policy, by status, with each status's first messages.
fn print_statuses(rows: &[StatusRow]) {
    let mut policies: Vec<&str> = Vec::new();
    for r in rows {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
    }
    if policies.is_empty() {
        return;
    }
    outln!();
    outln!("status distribution (every call that ended, warm-up included):");
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
        outln!("  {p}: {}", line.join(", "));
        for r in mine.iter().filter(|r| r.status != StatusRow::OK) {
            outln!("    {} ×{}: {}", r.status, r.count, r.message);
        }
    }
}

/// The run's files, plus `targets.csv` and `statuses.csv`.
fn write(
    dir: &Path,
    summary: &RunSummary,
    results: &[lblab_model::results::PolicyResult],
    shares: &[TargetRow],
    statuses: &[StatusRow],
) -> anyhow::Result<()> {
    output::write(dir, summary, results)?;
    let csv = TargetRow::to_csv(shares).context("encoding targets.csv")?;
    results::write_atomic(&dir.join(layout::TARGETS_CSV), &csv)?;
    let csv = StatusRow::to_csv(statuses).context("encoding statuses.csv")?;
    results::write_atomic(&dir.join(layout::STATUSES_CSV), &csv)?;
    Ok(())
}

/// Prints the traffic share of every target, a column per policy.
fn print_shares(rows: &[TargetRow]) {
    let mut policies: Vec<&str> = Vec::new();
    let mut targets: Vec<&str> = Vec::new();
    for r in rows {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
        if !targets.contains(&r.target.as_str()) || r.address.is_empty() {
            targets.push(&r.target);
        }
    }
    if policies.is_empty() {
        return;
    }
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in rows {
        let key = (r.target.clone(), r.address.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let label = |(t, a): &(String, String)| {
        if a.is_empty() || *t == *a {
            t.clone()
        } else {
            format!("{t} ({a})")
        }
    };
    let width = keys
        .iter()
        .map(|k| label(k).len())
        .max()
        .unwrap_or(6)
        .max(6);
    outln!();
    out!("{:width$}", "traffic share");
    for p in &policies {
        out!("  {:>w$}", p, w = p.len().max(8));
    }
    outln!();
    for k in &keys {
        out!("{:width$}", label(k));
        for p in &policies {
            let cell = rows
                .iter()
                .find(|r| r.policy == *p && r.target == k.0 && r.address == k.1)
                .map(|r| {
                    let share: f64 = r.share.parse().unwrap_or(0.0);
                    format!("{:.1}%", share * 100.0)
                })
                .unwrap_or_default();
            out!("  {:>w$}", cell, w = p.len().max(8));
        }
        outln!();
    }
}

/// The JSON of the request: `--data`, or the contents of `--data-file`.
fn request_json(args: &Args) -> anyhow::Result<Option<String>> {
    match (&args.data, &args.data_file) {
        (Some(d), _) => Ok(Some(d.clone())),
        (None, Some(path)) => {
            let text = results::read_result_file(path)
                .with_context(|| format!("--data-file {}", path.display()))?;
            Ok(Some(text))
        }
        (None, None) => Ok(None),
    }
}

/// `-H key:value` flags as gRPC metadata.
fn metadata(flags: &[String]) -> anyhow::Result<MetadataMap> {
    let mut map = MetadataMap::new();
    for flag in flags {
        let (key, value) = flag
            .split_once(':')
            .with_context(|| format!("-H {flag:?}: expected key:value"))?;
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim_start();
        if key.starts_with("grpc-")
            || key.starts_with(':')
            || ["content-type", "te", "user-agent"].contains(&key.as_str())
        {
            anyhow::bail!(
                "-H {flag:?}: {key} is set by gRPC itself (use --deadline for grpc-timeout, --authority for :authority)"
            );
        }
        if key.ends_with("-bin") {
            let key = MetadataKey::from_bytes(key.as_bytes())
                .with_context(|| format!("-H {flag:?}: {key:?} is not a valid metadata key"))?;
            let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, value)
                .with_context(|| format!("-H {flag:?}: a -bin key takes a base64 value"))?;
            map.append_bin(key, MetadataValue::from_bytes(&bytes));
        } else {
            let key = MetadataKey::from_bytes(key.as_bytes())
                .with_context(|| format!("-H {flag:?}: {key:?} is not a valid metadata key (lower-case letters, digits, - _ .)"))?;
            let value: MetadataValue<_> = value
                .parse()
                .with_context(|| format!("-H {flag:?}: the value must be printable ASCII"))?;
            map.append(key, value);
        }
    }
    Ok(map)
}

/// Plaintext, or TLS with the TLS flags.
fn transport(
    args: &Args,
    spec: &TargetSpec,
    authority: Option<&http::uri::Authority>,
) -> anyhow::Result<Transport> {
    if args.insecure {
        let tls_flags = [
            ("--tls", args.tls),
            ("--skip-tls-verify", args.skip_tls_verify),
            ("--cacert", args.cacert.is_some()),
            ("--cert", args.cert.is_some()),
        ];
        if let Some((flag, _)) = tls_flags.iter().find(|(_, given)| *given) {
            anyhow::bail!(
                "--insecure means plaintext (as in ghz), but {flag} asks for TLS: for TLS without \
                 verifying the server's certificate, use --tls --skip-tls-verify (ghz's --skipTLS); \
                 for plaintext, leave out {flag}"
            );
        }
    }
    let tls = args.tls || args.skip_tls_verify;
    if !tls {
        if let Some(flag) = [
            ("--cacert", args.cacert.is_some()),
            ("--cert", args.cert.is_some()),
        ]
        .iter()
        .find(|(_, given)| *given)
        {
            anyhow::bail!("{} is a TLS setting: add --tls", flag.0);
        }
        return Ok(Transport::plaintext());
    }
    if args.skip_tls_verify {
        eprintln!(
            "warning: --skip-tls-verify: the servers' certificates are NOT verified; anyone on the path \
             can impersonate them and read or change the calls"
        );
    }
    let server_name = authority
        .map(|a| a.host().to_string())
        .or_else(|| match spec {
            TargetSpec::Dns { name, .. } => Some(name.clone()),
            TargetSpec::List(_) => None,
        });
    Ok(Transport::tls(
        &TlsOptions {
            cacert: args.cacert.clone(),
            cert: args.cert.clone(),
            key: args.key.clone(),
            insecure: args.skip_tls_verify,
        },
        server_name,
    )?)
}

/// The method and its encoded request, from `--proto` files or the server's reflection.
async fn schema_call(
    name: &str,
    data: Option<&str>,
    args: &Args,
    targets: &[Target],
    transport: &Transport,
    authority: Option<&http::uri::Authority>,
    metadata: &MetadataMap,
) -> anyhow::Result<Call> {
    if !args.protos.is_empty() {
        let pool = method::pool_from_protos(&args.protos, &args.import_paths)?;
        return Ok(method::resolve(&pool, name, data)?);
    }
    let (service, _) = method::split_call(name)?;
    let mut errors = Vec::new();
    for t in targets {
        let connector = Connector {
            transport: transport.clone(),
            host: t.host.clone(),
            addr: t.addr,
        };
        match lblab_loadgen::reflection::schema_of(connector, authority, metadata, service).await {
            Ok(pool) => return Ok(method::resolve(&pool, name, data)?),
            Err(e) => {
                let e = e.to_string();
                // The server answered: its answer holds for every target.
                if !e.contains("cannot connect") {
                    anyhow::bail!("{e}");
                }
                errors.push(e);
            }
        }
    }
    anyhow::bail!(
        "no target could be asked for the schema of {service}: {}",
        errors.join("; ")
    )
}

/// The scenario to run: the file with the load flags applied, or one made of the flags.
fn scenario(args: &Args, targets: &[Target], call: Option<&Call>) -> anyhow::Result<Scenario> {
    let from_file = match &args.scenario {
        // Its config warnings are printed below, once, for the policies that run.
        Some(path) => Some(Scenario::load(path)?),
        None => None,
    };
    let mut file = match &from_file {
        Some(s) => s.file.clone(),
        None => flags_scenario(targets.len(), call),
    };
    let w = &mut file.workload;
    if let Some(rate) = args.rate {
        w.rate = rate;
        w.concurrency = None;
        if w.arrival == Arrival::Closed {
            w.arrival = Arrival::Poisson;
        }
    }
    if let Some(c) = args.concurrency {
        w.concurrency = Some(c);
        w.arrival = Arrival::Closed;
        w.rate = 0.0;
    }
    if args.constant {
        anyhow::ensure!(
            w.arrival != Arrival::Closed,
            "--constant spaces open-loop arrivals; it does not apply with --concurrency"
        );
        w.arrival = Arrival::Constant;
    }
    if let Some(c) = args.clients {
        w.clients = c;
    }
    if let Some(d) = args.deadline {
        w.deadline = d;
    }
    if call.is_some() && w.streaming_share > 0.0 {
        anyhow::bail!(
            "the scenario's workload.streaming_share is {}: streams are lblab's Echo.ServerStream, \
             and --call sends unary calls only",
            w.streaming_share
        );
    }
    if !args.policies.is_empty() {
        file.policies = policies(&args.policies, from_file.as_ref())?;
    }
    if let Some(seed) = args.seed {
        file.seed = seed;
    }
    let what = match &args.scenario {
        Some(p) => format!("{} with the command-line flags", p.display()),
        None => "the load flags".to_string(),
    };
    let mut scenario = Scenario::validate(file).with_context(|| what.clone())?;
    for w in scenario.config_warnings() {
        eprintln!("warning: {w}");
    }
    if from_file.is_none() {
        for (b, t) in scenario.backends.iter_mut().zip(targets) {
            b.name = t.label();
        }
    }
    let (duration, warmup) = (args.length.duration, args.length.warmup);
    anyhow::ensure!(
        duration.is_none_or(|d| d.0 > 0),
        "--duration must be greater than 0s (e.g. --duration 20s)"
    );
    if duration.is_some() || warmup.is_some() {
        scenario = scenario
            .with_run_length(duration, warmup)
            .with_context(|| what.clone())?;
        if let Some(w) = warmup {
            for warning in super::args::warmup_warnings(&scenario, w, &[]) {
                eprintln!("{warning}");
            }
        }
    }
    Ok(scenario)
}

/// A scenario made of flags: one backend per target (the load generator only needs their count
/// and names), 100 calls per second from one client for 10 s after 2 s of warm-up, a 20 s
/// deadline, and the default policies.
fn flags_scenario(targets: usize, call: Option<&Call>) -> ScenarioFile {
    let name = call.map_or_else(|| "echo".to_string(), |c| results::file_stem(&c.name));
    let second = 1_000_000_000;
    ScenarioFile {
        name,
        description: "A load-generator run against a service, made of command-line flags.".into(),
        seed: 1,
        workload: WorkloadSpec {
            clients: 1,
            rate: 100.0,
            arrival: Arrival::Poisson,
            concurrency: None,
            duration: Dur(10 * second),
            warmup: Dur(2 * second),
            deadline: Dur(20 * second),
            streaming_share: 0.0,
            stream_duration: DistSpec::Constant { value: Dur(second) },
            methods: Vec::new(),
        },
        fleet: vec![GroupSpec {
            name: "target".into(),
            count: targets.max(1) as u32,
            workers: 4,
            queue_limit: 1000,
            service_time: DistSpec::Constant {
                value: Dur(1_000_000),
            },
            network_rtt: Dur(0),
            zone: "local".into(),
        }],
        faults: Vec::new(),
        policies: DEFAULT_POLICIES
            .iter()
            .map(|p| PolicySpec {
                name: (*p).to_string(),
                config: format!(r#"{{"loadBalancingConfig":[{{"{p}":{{}}}}]}}"#),
            })
            .collect(),
    }
}

/// The `--policy` values as scenario policies, in order.
fn policies(values: &[String], scenario: Option<&Scenario>) -> anyhow::Result<Vec<PolicySpec>> {
    let mut out: Vec<PolicySpec> = Vec::new();
    for v in values {
        let v = v.trim();
        let spec = if let Some(path) = v.strip_prefix('@') {
            let path = Path::new(path);
            let text = results::read_result_file(path)
                .with_context(|| format!("--policy @{}", path.display()))?;
            let label = path
                .file_stem()
                .map_or_else(|| "policy".into(), |s| s.to_string_lossy().into_owned());
            PolicySpec {
                name: label,
                config: service_config(&text)
                    .with_context(|| format!("--policy @{}", path.display()))?,
            }
        } else if v.starts_with('{') || v.starts_with('[') {
            let config = service_config(v).with_context(|| format!("--policy {v}"))?;
            PolicySpec {
                name: label_of(&config),
                config,
            }
        } else if let Some(p) = scenario.and_then(|s| s.policies.iter().find(|p| p.name == v)) {
            PolicySpec {
                name: p.name.clone(),
                config: p.config_json.clone(),
            }
        } else if lblab_policy::config::SUPPORTED.contains(&v)
            || lblab_model::scenario::REAL_ONLY_POLICIES.contains(&v)
        {
            PolicySpec {
                name: v.to_string(),
                config: format!(r#"{{"loadBalancingConfig":[{{"{v}":{{}}}}]}}"#),
            }
        } else {
            let names = lblab_policy::config::SUPPORTED.join(", ");
            match scenario {
                Some(s) => anyhow::bail!(
                    "--policy {v:?}: no such policy in the scenario (its labels: {}), and not a \
                     service config (JSON, or @FILE) or a policy name ({names})",
                    s.policies.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
                None => anyhow::bail!(
                    "--policy {v:?}: not a service config (JSON, or @FILE) or a policy name ({names})"
                ),
            }
        };
        // The same label twice gets a number: labels name the result files.
        let mut name = spec.name.clone();
        let mut n = 1;
        while out.iter().any(|p| p.name == name) {
            n += 1;
            name = format!("{}#{n}", spec.name);
        }
        out.push(PolicySpec { name, ..spec });
    }
    Ok(out)
}

/// A service config from what `--policy` was given: a whole one, a `loadBalancingConfig` list,
/// or one policy's entry.
fn service_config(text: &str) -> anyhow::Result<String> {
    let value: serde_json::Value = serde_json::from_str(text).context("not valid JSON")?;
    let wrapped = match &value {
        serde_json::Value::Object(o) if o.contains_key("loadBalancingConfig") => value,
        serde_json::Value::Array(_) => serde_json::json!({ "loadBalancingConfig": value }),
        serde_json::Value::Object(_) => serde_json::json!({ "loadBalancingConfig": [value] }),
        _ => anyhow::bail!("expected a JSON object (a service config or one policy's entry)"),
    };
    Ok(wrapped.to_string())
}

/// A label for a service config: its first policy's name, with the child's for wrappers.
fn label_of(config: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(config).unwrap_or_default();
    let first = |v: &serde_json::Value| -> Option<(String, serde_json::Value)> {
        let list = v.as_array()?;
        let (name, body) = list.first()?.as_object()?.iter().next()?;
        Some((name.clone(), body.clone()))
    };
    let Some((name, body)) = first(&value["loadBalancingConfig"]) else {
        return "policy".into();
    };
    match first(&body["childPolicy"]) {
        Some((child, _)) => format!("{name}({child})"),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_values_become_service_configs_with_labels() {
        let p = policies(
            &[
                r#"{"round_robin":{}}"#.into(),
                "peak_ewma_experimental".into(),
                r#"[{"outlier_detection_experimental":{"childPolicy":[{"round_robin":{}}]}}]"#
                    .into(),
                r#"{"round_robin":{}}"#.into(),
            ],
            None,
        )
        .unwrap();
        let names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "round_robin",
                "peak_ewma_experimental",
                "outlier_detection_experimental(round_robin)",
                "round_robin#2"
            ]
        );
        assert_eq!(
            p[0].config,
            r#"{"loadBalancingConfig":[{"round_robin":{}}]}"#
        );
        let e = policies(&["fastest".into()], None).unwrap_err().to_string();
        assert!(
            e.contains("fastest") && e.contains("peak_ewma_experimental"),
            "{e}"
        );
        let e = policies(&["{not json".into()], None).unwrap_err();
        assert!(format!("{e:#}").contains("not valid JSON"), "{e:#}");
    }

    #[test]
    fn metadata_flags_are_checked() {
        let m = metadata(&["x-user: ann".into(), "trace-bin:AAEC".into()]).unwrap();
        assert_eq!(m.get("x-user").unwrap(), "ann");
        assert_eq!(
            m.get_bin("trace-bin").unwrap().to_bytes().unwrap().as_ref(),
            &[0, 1, 2]
        );
        for (bad, says) in [
            ("novalue", "key:value"),
            ("grpc-timeout:1S", "--deadline"),
            ("bad key:1", "not a valid metadata key"),
            ("x-bin:!!", "base64"),
        ] {
            let e = format!("{:#}", metadata(&[bad.into()]).unwrap_err());
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
