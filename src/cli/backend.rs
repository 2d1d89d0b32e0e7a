//! `lblab backend`: serve a scenario's fleet until interrupted.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use lblab_model::units::Dur;

/// Arguments of `lblab backend`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario file (TOML): its fleet and faults are served.
    scenario: PathBuf,
    /// Where to listen; port 0 gives every backend an ephemeral port, port P gives backend i
    /// port P+i.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Serve only these backends (repeatable): a backend's name (`main/3`) or a fleet group's
    /// (`main`). To run a fleet as several processes, as a real deployment would [default: all].
    #[arg(long = "only", value_name = "NAME")]
    only: Vec<String>,
    /// Serve only the backend at this position of the scenario's fleet, counted from 0 in the
    /// scenario's order (an Indexed Job's completion index, as `lblab deploy k8s` gives it).
    #[arg(long, value_name = "K", conflicts_with = "only")]
    index: Option<usize>,
    /// Stop on its own this long after the fleet is listening (counted from then, not from
    /// `--start-at`); Ctrl-C or SIGTERM still stops it earlier [default: only on a signal].
    #[arg(long = "for")]
    run_for: Option<Dur>,
    /// Time 0 of the fault timeline as Unix time in seconds (give `lblab loadgen` the same value
    /// so both agree on when faults happen) [default: now].
    #[arg(long)]
    start_at: Option<f64>,
    #[command(flatten)]
    realtime: super::args::Realtime,
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.scenario = super::args::scenario_path(&args.scenario)?;
    if args.run_for.is_some_and(|d| d.0 == 0) {
        anyhow::bail!(
            "--for 0s: give a positive duration, or leave --for out to serve until Ctrl-C"
        );
    }
    let scenario = lblab_model::Scenario::load(&args.scenario)?;
    let backends = match args.index {
        Some(k) => {
            let n = scenario.backends.len();
            let Some(b) = scenario.backends.get(k) else {
                anyhow::bail!(
                    "--index {k}: {} has {n} backends, so K must be 0 to {}",
                    scenario.file.name,
                    n.saturating_sub(1)
                );
            };
            vec![b.clone()]
        }
        None => lblab_lab::fleet::select(&scenario, &args.only, super::names::flag)?,
    };
    super::args::warn_if_listening_off_host(args.listen);
    // A listener per backend, and the connections clients will open to it.
    let needed =
        64 + backends.len() as u64 * (1 + u64::from(scenario.file.workload.clients.max(1)));
    lblab_wire::ensure_open_files(needed)?;
    let origin = lblab_lab::fleet::origin_of(args.start_at, super::names::flag)?;
    let stop = super::stop::stop_flag_saying("stopping the fleet");
    let realtime = args.realtime.enabled();
    let serve = lblab_lab::fleet::Serve {
        listen: args.listen,
        run_for: args.run_for,
        start_at: args.start_at,
        origin,
        realtime,
    };
    let lab = lblab_lab::Lab {
        stop,
        ..super::budgets(None, None)
    };
    lblab_lab::fleet::serve(&lab, &scenario, &backends, serve, &mut super::say)?;
    Ok(ExitCode::SUCCESS)
}
