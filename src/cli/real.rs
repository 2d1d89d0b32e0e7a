//! `lblab real`: every policy of a scenario against real tonic servers on loopback.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use lblab_harness::HarnessOptions;
use lblab_model::units::Dur;

use super::args;

/// Arguments of `lblab real`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    budgets: super::args::Budgets,
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
    #[arg(long, default_value = "120us", value_parser = args::parse_spin)]
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
            stop: Some(super::stop::stop_flag()),
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

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.scenario = args::scenario_path(&args.scenario)?;
    let scenario = args::load_with_length(
        &args.scenario,
        args.run.seed,
        &args.length,
        &args.run.policies,
    )?;
    let options = args.harness.options(&args.run.policies);
    let dir = lblab_lab::out_dir::results_dir(&args.scenario, "real", args.run.out.as_deref());
    let lab = super::run_lab(&args.budgets);
    let exit = lblab_lab::real::run(&lab, &scenario, &options, &dir, &mut super::say)?;
    Ok(super::exit(exit))
}
