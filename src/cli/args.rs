//! The flags several commands share, declared once and flattened into each, and the one way a
//! scenario is loaded with them.

use std::path::{Path, PathBuf};

use lblab_model::units::Dur;

/// Which results, from which seed and policies: `sim`, `real`, `compare` and `loadgen`.
#[derive(Debug, clap::Args)]
pub struct Run {
    /// Results folder [default: lblab-out/<scenario file's stem>/<command>, which git ignores;
    /// for compare, lblab-out/<scenario file's stem>/compare, holding its own sim/, real/ and
    /// compare.csv].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Only run the policies with these labels (repeatable).
    #[arg(long = "policy")]
    pub policies: Vec<String>,
}

/// `--memory-budget`, on the commands whose runs it bounds: `sim`, `sweep`, `real`, `compare`,
/// `loadgen`, `report --merge`.
#[derive(Debug, clap::Args)]
pub struct Budget {
    /// Refuse a run whose estimated memory is above this (e.g. 16GiB); the estimate is made
    /// from the scenario before any work.
    #[arg(long, default_value = "8GiB", value_parser = lblab_model::budget::parse_bytes)]
    pub memory_budget: u64,
}

/// `--chart-budget`, on the commands that draw a run's charts: `sim`, `real`, `compare`,
/// `loadgen`, `report --merge`.
#[derive(Debug, clap::Args)]
pub struct Charts {
    /// Time the run's charts may take to draw (e.g. 5m; 0 = unlimited): once it is spent, the
    /// charts not yet drawn are skipped and named; the data files are written either way.
    #[arg(long, default_value = "60s")]
    pub chart_budget: Dur,
}

impl Charts {
    /// The time a run's charts may take ([`super::lab`]); `None`: unlimited.
    pub fn budget(&self) -> Option<std::time::Duration> {
        (self.chart_budget.0 > 0).then(|| std::time::Duration::from_nanos(self.chart_budget.0))
    }
}

/// Both budgets, on the commands that run and draw a run: `sim`, `real`, `compare`, `loadgen`,
/// `report --merge`.
#[derive(Debug, clap::Args)]
pub struct Budgets {
    #[command(flatten)]
    pub memory: Budget,
    #[command(flatten)]
    pub charts: Charts,
}

/// How long each policy is measured, and after what warm-up: `sim`, `real`, `compare` and
/// `loadgen`.
#[derive(Debug, clap::Args)]
pub struct Length {
    /// Measured duration per policy, replacing the scenario's (e.g. 20s); the warm-up is kept
    /// whatever this is (it may be longer than the measurement).
    #[arg(long)]
    pub duration: Option<Dur>,
    /// Warm-up before measurement, replacing the scenario's; warns if it is shorter than a
    /// policy needs (weighted_round_robin: blackoutPeriod + weightUpdatePeriod).
    #[arg(long)]
    pub warmup: Option<Dur>,
}

/// `--repeat`, on the commands that judge policies by their real runs: `compare`.
#[derive(Debug, clap::Args)]
pub struct Repeat {
    /// Run the real measurement this many times (1 to 20; the repeats, without the floor, go to
    /// real-repeat/run-<k>/): policies that one run cannot tell apart are told apart when every
    /// run's p99 of one is below every run's p99 of the other.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
}

/// Real-time scheduling of the real harness's threads: `real`, `compare`, `loadgen`, `backend`.
#[derive(Debug, clap::Args)]
pub struct Realtime {
    /// Keep the harness's threads at normal priority instead of the real-time scheduling class
    /// (which keeps other work on the machine from delaying them; needs root or CAP_SYS_NICE).
    #[arg(long)]
    pub no_realtime: bool,
}

impl Realtime {
    /// Whether to run the threads real-time: unless disabled, when the process may.
    pub fn enabled(&self) -> bool {
        if self.no_realtime {
            return false;
        }
        let ok = lblab_wire::timer::realtime_available();
        if !ok {
            lblab_lab::errln!("note: cannot use real-time scheduling here (needs root or CAP_SYS_NICE); timing is less precise on a busy machine");
        }
        ok
    }
}

pub use lblab_lab::scenario::{check_policies, load, scenario_path};

/// Loads a scenario with the seed, duration and warm-up overrides
/// ([`lblab_lab::scenario::load_with_length`]).
pub fn load_with_length(
    path: &Path,
    seed: Option<u64>,
    length: &Length,
    only: &[String],
) -> lblab_lab::Result<lblab_model::Scenario> {
    let length = lblab_lab::scenario::Length {
        duration: length.duration,
        warmup: length.warmup,
    };
    lblab_lab::scenario::load_with_length(path, seed, length, only, super::names::flag)
}

/// Warns when `--listen` exposes a fleet beyond this machine (anything but a loopback address).
pub fn warn_if_listening_off_host(listen: std::net::SocketAddr) {
    if !lblab_loadgen::target::stays_on_this_host(listen.ip()) {
        lblab_lab::errln!(
            "warning: --listen {listen}: the fleet is reachable from other hosts, not only from this one"
        );
    }
}

/// `--spin`: a duration of at most 10 ms.
pub fn parse_spin(text: &str) -> Result<Dur, String> {
    let d: Dur = text
        .parse()
        .map_err(|e: lblab_model::units::DurError| e.to_string())?;
    if d.0 > 10_000_000 {
        return Err(format!(
            "{d} is more than 10ms; the spin is the slack before each timer deadline"
        ));
    }
    Ok(d)
}
