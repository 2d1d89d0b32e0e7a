//! `lblab barrier`: the start barrier of a deployment (`lblab_deploy::barrier`): the starter that
//! releases every pod at once with one start (`serve`), and a pod's check-in, which prints that
//! start (`join`). The manifests of `lblab deploy k8s` run both.

use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use lblab_deploy::barrier::{self, Group, PodId};
use lblab_model::units::Dur;

/// Arguments of `lblab barrier`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    role: Role,
}

/// Which side of the barrier.
#[derive(Debug, clap::Subcommand)]
enum Role {
    /// The starter: wait until every expected pod has checked in, then release them all with one
    /// start, --start-at or --margin after the last check-in if that is later (a whole Unix
    /// second), and stay --linger after it, telling pods that check in then that they are late.
    /// If some pod has not checked in --wait after --start-at, tell every waiting pod which are
    /// missing and fail (exit 2) after --linger.
    Serve(ServeArgs),
    /// A pod's check-in: wait for the starter at STARTER (host:port, tried again until it
    /// answers) to release every pod, and print the start (Unix seconds) on stdout. Fails (exit
    /// 2) when the starter gave up, when this pod came after the release, or when no starter
    /// answered by --wait after --start-at, and 30 s more.
    Join(JoinArgs),
}

/// Arguments of `lblab barrier serve`.
#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Where to listen.
    #[arg(long, default_value_t = SocketAddr::from(([0, 0, 0, 0], barrier::BARRIER_PORT)))]
    listen: SocketAddr,
    /// A group of pods to wait for, GROUP=COUNT (repeatable): the pods GROUP-0 to GROUP-<COUNT-1>
    /// check in, e.g. --expect fleet=20 --expect loadgen=2.
    #[arg(long = "expect", value_name = "GROUP=COUNT", required = true, value_parser = parse_group)]
    expect: Vec<Group>,
    /// The earliest start as Unix time in seconds: the deployment's wall-clock start.
    #[arg(long)]
    start_at: u64,
    /// The least time between the last check-in and the start.
    #[arg(long, default_value_t = Dur(barrier::START_MARGIN_S * 1_000_000_000))]
    margin: Dur,
    /// How long after --start-at to wait for every pod before giving up.
    #[arg(long, default_value_t = Dur(barrier::BARRIER_WAIT_S * 1_000_000_000))]
    wait: Dur,
    /// How long to stay after the start (or after giving up), answering pods that check in then.
    #[arg(long, default_value = "0s")]
    linger: Dur,
}

/// Arguments of `lblab barrier join`.
#[derive(Debug, clap::Args)]
struct JoinArgs {
    /// The starter, host:port (e.g. lblab-one-slow-start:50050).
    starter: String,
    /// This pod, GROUP-INDEX (e.g. fleet-3).
    #[arg(long, value_parser = parse_pod)]
    id: PodId,
    /// The earliest start as Unix time in seconds, as the starter was given it.
    #[arg(long)]
    start_at: u64,
    /// The starter's --wait.
    #[arg(long, default_value_t = Dur(barrier::BARRIER_WAIT_S * 1_000_000_000))]
    wait: Dur,
}

fn parse_group(text: &str) -> Result<Group, String> {
    text.parse()
        .map_err(|e: barrier::BarrierError| e.to_string())
}

fn parse_pod(text: &str) -> Result<PodId, String> {
    text.parse()
        .map_err(|e: barrier::BarrierError| e.to_string())
}

/// `at` as a time, checked to be within a day of now (which catches milliseconds).
fn start_time(at: u64) -> anyhow::Result<SystemTime> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    anyhow::ensure!(
        at.abs_diff(now) <= 86_400,
        "--start-at {at}: must be a Unix time in seconds within a day of now ({now})"
    );
    Ok(UNIX_EPOCH + Duration::from_secs(at))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.role {
        Role::Serve(a) => serve(a),
        Role::Join(a) => join(a),
    }
}

fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let start = start_time(a.start_at)?;
    let plan = barrier::Plan {
        groups: a.expect,
        not_before: a.start_at,
        margin: Duration::from_nanos(a.margin.0),
        give_up_at: start + Duration::from_nanos(a.wait.0),
        linger: Duration::from_nanos(a.linger.0),
    };
    let listener =
        TcpListener::bind(a.listen).with_context(|| format!("listening on {}", a.listen))?;
    let start = barrier::serve(listener, plan, &mut |line| lblab_lab::errln!("{line}"))?;
    outln!("{start}");
    Ok(ExitCode::SUCCESS)
}

fn join(a: JoinArgs) -> anyhow::Result<ExitCode> {
    let give_up_at = start_time(a.start_at)?
        + Duration::from_nanos(a.wait.0)
        + Duration::from_secs(barrier::JOIN_SLACK_S);
    lblab_lab::errln!(
        "{}: checking in with the start barrier at {}",
        a.id,
        a.starter
    );
    let start = barrier::join(&a.starter, &a.id, give_up_at, &mut |line| {
        lblab_lab::errln!("{line}")
    })?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    lblab_lab::errln!(
        "{}: released; the slots start at Unix time {start} (in {} s)",
        a.id,
        start.saturating_sub(now)
    );
    outln!("{start}");
    Ok(ExitCode::SUCCESS)
}
