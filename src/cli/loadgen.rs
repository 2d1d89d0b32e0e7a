//! `lblab loadgen`: policies against servers that run elsewhere — lblab's own fleet (`lblab
//! backend`), or any gRPC service (`--call`). Flags → options → `lblab_harness::run_remote` →
//! files and tables; the flag groups and what they resolve to are in `super::flags`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::flags;
use lblab_harness::RemoteOptions;
use lblab_loadgen::report;
use lblab_record::{layout, StatusRow};

/// Arguments of `lblab loadgen`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    budgets: super::args::Budgets,
    /// Scenario file (TOML): its workload and policies are run, with the load flags below
    /// replacing its values. Without one, the load comes from the flags and the policies from
    /// --policy. Without --targets, a host:port (or dns:///name:port) here is the server, as in
    /// ghz's `ghz [flags] host:port`.
    #[arg(value_name = "SCENARIO|TARGET")]
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
    /// Run the policies N times, interleaved (A B C, A B C, …, each repeat with the next seed,
    /// into repeat-1/, repeat-2/, …), and give a verdict: medians with 95 % intervals over the
    /// repeats, and each policy against --baseline-policy: lower, higher or not separable, with
    /// how many more repeats would separate it. A single run cannot say which policy is better.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
    /// The policy every other is compared with under --repeat [default: round_robin's label
    /// when it runs, else the first policy].
    #[arg(long, value_name = "LABEL", requires = "repeat")]
    baseline_policy: Option<String>,
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
    /// Open loop: how long the dispatcher may spin before each send time instead of sleeping
    /// (0 to 10ms). It spins only as long as its sleeps have lately overslept, within this; 0
    /// only sleeps, and a send is then late by the scheduler's wake-up (tens of µs here),
    /// which the dispatch lateness reports and the latency includes.
    #[arg(long, default_value = "0us", value_parser = super::args::parse_spin)]
    spin: lblab_model::units::Dur,
    /// Worker threads of the load generator's runtime, where calls run (1 to 256).
    #[arg(long, default_value_t = lblab_loadgen::run::WORKER_THREADS as u16, value_parser = clap::value_parser!(u16).range(1..=256))]
    client_threads: u16,
}

/// The exit code of a run in which no call succeeded (every status was an error).
const NO_CALL_SUCCEEDED: u8 = 3;

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    if args.targets.targets.is_empty() {
        match args.scenario.take() {
            Some(given) if is_target(&given) => {
                args.targets.targets = vec![given.to_string_lossy().into_owned()];
            }
            given => anyhow::bail!(
                "no servers to call: give --targets host:port[,host:port...] (or dns:///name:port){}",
                match given {
                    Some(file) => format!(", besides the scenario {}", file.display()),
                    None => ", or, as in ghz, one host:port as the last argument".into(),
                }
            ),
        }
    }
    if let Some(path) = &args.scenario {
        args.scenario = Some(super::args::scenario_path(path)?);
    }
    let prepared = flags::prepare(&args.targets, &args.calls, &args.tls, args.dry_run)?;
    let call = prepared.call.clone();
    let targets = prepared.targets.clone();
    let name = args.calls.call.clone();
    let given = flags::Given {
        file: args.scenario.as_deref(),
        load: &args.load,
        policies: &args.policies,
        seed: args.seed,
    };
    let lblab_harness::Plan {
        scenario,
        warp,
        slot_spans,
        ..
    } = flags::scenario(&given, &targets, call.as_ref())?;
    let planned = scenario
        .policies
        .iter()
        .filter(|p| p.runs_in_real())
        .count();
    super::budgets(Some(&args.budgets.memory), Some(&args.budgets.charts)).check_memory(
        &scenario,
        planned,
        lblab_model::budget::Mode::Real,
    )?;
    let origin = args
        .start_at
        .map(|at| lblab_lab::fleet::origin_of(Some(at), super::names::flag))
        .transpose()?;
    if origin.is_some() && (planned > 1 || args.repeat > 1) {
        // One origin serves one run: from the second policy on every arrival would be late and
        // dropped as overload, silently.
        anyhow::bail!(
            "--start-at gives the fault timeline one origin, which only one policy's run can use, \
             and {planned} policies would run: give one --policy per run (as `lblab deploy k8s` \
             and scripts/cluster-netns.sh do), or leave out --start-at"
        );
    }
    if args.dry_run {
        for line in flags::dry_run_lines(&scenario, &targets, name.as_deref(), call.as_ref()) {
            outln!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(c) = &call {
        lblab_lab::errln!("calling {}", c.describe());
    }
    let calls = prepared.call_options(&args.targets);
    let stem = match (&args.scenario, &args.calls.call) {
        (Some(path), _) => path.clone(),
        (None, Some(call)) => PathBuf::from(lblab_record::file_stem(call)),
        (None, None) => PathBuf::from("echo"),
    };
    let dir = lblab_lab::out_dir::results_dir(&stem, "loadgen", args.out.as_deref());
    let _out_dir = lblab_lab::out_dir::prepare_dir(&dir)?;
    let options = RemoteOptions {
        targets: &targets,
        resolver: Some(prepared.spec.clone()),
        calls,
        realtime: args.realtime.enabled(),
        origin,
        stop: Some(super::stop::stop_flag()),
        live: None,
        max_calls: args.load.total,
        warp,
        slot_spans,
        connect_wait: args
            .targets
            .connect_timeout
            .map(|d| std::time::Duration::from_nanos(d.0)),
        spin: std::time::Duration::from_nanos(args.spin.0),
        threads: usize::from(args.client_threads),
    };
    let lab = super::run_lab(&args.budgets);
    if args.repeat > 1 {
        return repeated(&args, &lab, &scenario, &options, planned, &dir);
    }
    let (ran, summary) = lblab_lab::remote::run(&lab, &scenario, options, planned, &dir)?;
    let (shares, statuses) = (ran.shares(&targets), ran.statuses());
    match args.format.as_str() {
        "json" => outln!("{}", report::json(&summary, &shares, &statuses)?),
        "prometheus" => out!("{}", report::prometheus(&summary, &shares, &statuses)),
        "html" => out!(
            "{}",
            std::fs::read_to_string(dir.join(layout::REPORT_HTML))?
        ),
        _ => tables(&summary, &shares, &statuses),
    }
    match args.format.as_str() {
        "summary" => outln!("wrote {}", dir.display()),
        _ => lblab_lab::errln!("wrote {}", dir.display()),
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
        let echo = args.calls.call.is_none();
        lblab_lab::errln!("error: {}", flags::none_succeeded(&statuses, echo, &dir));
        return Ok(ExitCode::from(NO_CALL_SUCCEEDED));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--repeat N`: the policies N times, interleaved, and the verdict (printed in `--format`, and
/// written as verdict.json, verdict.txt and report.html beside the repeats' folders).
fn repeated(
    args: &Args,
    lab: &lblab_lab::Lab,
    scenario: &lblab_model::Scenario,
    options: &RemoteOptions<'_>,
    planned: usize,
    dir: &std::path::Path,
) -> anyhow::Result<ExitCode> {
    use lblab_lab::verdict;
    let labels: Vec<&str> = scenario
        .policies
        .iter()
        .filter(|p| p.runs_in_real())
        .map(|p| p.name.as_str())
        .collect();
    let baseline = match &args.baseline_policy {
        Some(b) => b.clone(),
        None => labels
            .iter()
            .find(|l| **l == "round_robin")
            .or(labels.first())
            .map(|l| l.to_string())
            .unwrap_or_default(),
    };
    if !labels.contains(&baseline.as_str()) {
        anyhow::bail!(
            "--baseline-policy {baseline:?} is not among the policies run ({}); give one of their labels",
            labels.join(", ")
        );
    }
    let started = std::time::SystemTime::now();
    let done = lblab_lab::remote::run_repeats(
        lab,
        scenario,
        options,
        planned,
        dir,
        args.repeat,
        &mut |line| lblab_lab::errln!("{line}"),
    )?;
    if done.repeats.is_empty() {
        anyhow::bail!(
            "{}: no repeat measured every policy; what was measured is in {}",
            done.failed.as_deref().unwrap_or("interrupted"),
            dir.display()
        );
    }
    let v = verdict::verdict(&done.repeats, &baseline)?;
    let parameters = parameters(args, scenario, options, started, &done.dirs);
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "verdict": &v,
        "parameters": parameters.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.clone()))).collect::<serde_json::Map<_, _>>(),
    }))?;
    let text = verdict::lines(&v).join("\n") + "\n";
    let page = verdict::html(dir, &v, &parameters)?;
    for (name, bytes) in [
        ("verdict.json", json.as_bytes()),
        ("verdict.txt", text.as_bytes()),
        (layout::REPORT_HTML, page.as_bytes()),
    ] {
        lblab_record::write_atomic(&dir.join(name), bytes)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", dir.join(name).display()))?;
    }
    match args.format.as_str() {
        "json" => outln!("{json}"),
        "prometheus" => out!("{}", verdict::prometheus(&v)),
        "html" => out!("{page}"),
        _ => out!("{text}"),
    }
    lblab_lab::errln!(
        "wrote {} (verdict.json, verdict.txt, report.html, repeat-*/)",
        dir.display()
    );
    if let Some(why) = &done.failed {
        anyhow::bail!(
            "{why}; the verdict is over the {} repeats before it",
            v.repeats
        );
    }
    if done.partial {
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// What a repeated run's page lists under "The run".
fn parameters(
    args: &Args,
    scenario: &lblab_model::Scenario,
    options: &RemoteOptions<'_>,
    started: std::time::SystemTime,
    dirs: &[PathBuf],
) -> Vec<(String, String)> {
    let w = &scenario.file.workload;
    let load = match (w.concurrency, args.load.total) {
        (Some(c), _) => format!("closed loop, {c} calls in flight per client"),
        (None, Some(n)) => format!("{n} calls per policy at {} calls/s", w.rate),
        (None, None) => format!("{} calls/s, open loop", w.rate),
    };
    let targets: Vec<String> = options
        .targets
        .iter()
        .map(|t| format!("{} ({})", t.name, t.addr))
        .collect();
    let command: Vec<String> = std::env::args().collect();
    vec![
        ("targets".into(), targets.join(", ")),
        (
            "method".into(),
            args.calls
                .call
                .clone()
                .unwrap_or_else(|| "lblab Echo/Unary".into()),
        ),
        ("load".into(), format!("{load}, {} clients", w.clients)),
        (
            "warm-up, measured".into(),
            format!("{}, {}", w.warmup, w.duration),
        ),
        (
            "repeats".into(),
            format!(
                "{} of {} asked for (seeds {} on)",
                dirs.len(),
                args.repeat,
                scenario.file.seed
            ),
        ),
        ("started".into(), httpdate::fmt_http_date(started)),
        ("lblab".into(), env!("CARGO_PKG_VERSION").into()),
        ("command line".into(), command.join(" ")),
    ]
}

/// Whether the positional argument is a server (`host:port`, `[v6]:port`, `dns:///name:port`)
/// rather than a scenario: not an existing file, and of a target's form.
fn is_target(given: &std::path::Path) -> bool {
    if given.exists() {
        return false;
    }
    let Some(text) = given.to_str() else {
        return false;
    };
    if text.starts_with("dns:") {
        return true;
    }
    text.rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
}

/// The summary table, the traffic shares and the status distribution.
fn tables(
    summary: &lblab_record::RunSummary,
    shares: &[lblab_record::TargetRow],
    statuses: &[StatusRow],
) {
    super::print_table(summary);
    for lines in [report::share_lines(shares), report::status_lines(statuses)] {
        if !lines.is_empty() {
            outln!();
        }
        for line in lines {
            outln!("{line}");
        }
    }
}
