//! Command-line interface: clap definitions and one function per subcommand.

mod args;
mod backend;
mod barrier;
mod check;
mod compare;
mod deploy;
mod flags;
mod loadgen;
pub mod names;
mod real;
mod regress;
mod report;
mod sim;
mod stop;
mod sweep;
mod unknown_flag;
mod vectors;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A lab for latency-aware client-side load balancing.
#[derive(Debug, Parser)]
#[command(name = "lblab", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The chart budget of a command that has no `--chart-budget`.
const DEFAULT_CHART_BUDGET: std::time::Duration = std::time::Duration::from_secs(60);

/// The stop flag (its Ctrl-C / SIGTERM handler not installed) and the budgets the command's
/// `--memory-budget` and `--chart-budget` give; `None` for a flag the command does not have, whose
/// default then applies.
fn budgets(memory: Option<&args::Budget>, charts: Option<&args::Charts>) -> lblab_lab::Lab {
    lblab_lab::Lab {
        stop: &stop::STOP,
        memory_budget: memory.map_or(lblab_model::budget::DEFAULT_BUDGET, |b| b.memory_budget),
        chart_budget: charts.map_or(Some(DEFAULT_CHART_BUDGET), args::Charts::budget),
        names: names::flag,
    }
}

/// [`budgets`] with the Ctrl-C / SIGTERM handler installed: what a job that writes results runs
/// with.
pub fn lab(memory: Option<&args::Budget>, charts: Option<&args::Charts>) -> lblab_lab::Lab {
    stop::stop_flag();
    budgets(memory, charts)
}

/// [`lab`] for a command that runs and draws a run, with both its budgets.
pub fn run_lab(budgets: &args::Budgets) -> lblab_lab::Lab {
    lab(Some(&budgets.memory), Some(&budgets.charts))
}

/// Prints a run's summary: its table, the partial note and its incidents.
pub fn print_table(summary: &lblab_record::RunSummary) {
    for line in lblab_lab::table::summary_lines(summary) {
        say(&line);
    }
}

/// Prints a line of a job's output on stdout.
pub fn say(line: &str) {
    outln!("{line}");
}

/// The exit code of how a job ended: 130 whenever a first Ctrl-C / SIGTERM arrived, also after
/// the job had measured everything (while it wrote its files), so that a stop is never
/// reported as a success.
pub fn exit(exit: lblab_lab::Exit) -> ExitCode {
    let exit = if stop::STOP.load(std::sync::atomic::Ordering::Relaxed) {
        lblab_lab::Exit::Interrupted
    } else {
        exit
    };
    ExitCode::from(exit.code())
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate a gRPC service config and print the normalized policy tree with every default
    /// filled in. Exits 1 if the config is invalid.
    Check(check::Args),
    /// Simulate every policy of a scenario, print the table and write results and charts.
    Sim(sim::Args),
    /// Sweep a scenario's fields (--vary) under all its policies, or peak-EWMA's parameters and
    /// ablation switches, in parallel, with medians and intervals over seeds (--seeds).
    Sweep(sweep::Args),
    /// Tail-latency regression test for CI: run scenarios over seeds and compare each policy's
    /// p99, p99.9, error and faulty shares with a baseline, seed by seed (--baseline), or write
    /// the baseline (--write-baseline); with --targets, the real service over repeated runs,
    /// compared by a rank test whose false-alarm rate is stated. Exits 1 if a figure is worse, 2
    /// on an error.
    Regress(Box<regress::Args>),
    /// Regenerate the evidence documents (results/README.md, per-scenario pages, the gRFC draft)
    /// from the committed result files; --check only compares; --merge combines real runs from
    /// several load generators into one run folder.
    Report(report::Args),
    /// Serve a scenario's fleet of gRPC backends on loopback (or --listen) until interrupted.
    Backend(backend::Args),
    /// Run a scenario's workload and policies against servers given with --targets.
    Loadgen(Box<loadgen::Args>),
    /// Run every policy of a scenario against a fresh fleet of real gRPC servers, print the table
    /// and write results, charts and the harness's own accuracy figures.
    Real(real::Args),
    /// Run a scenario in the simulator and for real, and write compare.csv and a chart.
    Compare(compare::Args),
    /// Write deployment manifests for running a scenario across a cluster (`deploy k8s`).
    Deploy(deploy::Args),
    /// The start barrier of a deployment's pods: a starter that releases them all with one
    /// start once every one has checked in (`serve`), and a pod's check-in (`join`).
    Barrier(barrier::Args),
    /// Write the language-neutral conformance vectors (JSON) for peak_ewma_experimental,
    /// least_request_experimental and outlier_detection_experimental to --out.
    Vectors(vectors::Args),
    /// Print a shell completion script, e.g. `lblab completions bash > ~/.local/share/bash-completion/completions/lblab`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Parses the command line and runs the subcommand. Exit codes: 0 success, 1 invalid input
/// reported by the command, 2 any other error.
pub fn run() -> anyhow::Result<ExitCode> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let command = std::env::args().skip(1).find(|a| !a.starts_with('-'));
            if let Some(message) = unknown_flag::message(
                &e,
                &<Cli as clap::CommandFactory>::command(),
                command.as_deref(),
            ) {
                anyhow::bail!(message);
            }
            e.exit()
        }
    };
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Regress(args) => regress::run(*args),
        Command::Report(args) => report::run(args),
        Command::Backend(args) => backend::run(args),
        Command::Loadgen(args) => loadgen::run(*args),
        Command::Real(args) => real::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Vectors(args) => vectors::run(args),
        Command::Deploy(args) => deploy::run(args),
        Command::Barrier(args) => barrier::run(args),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            // Into a buffer: clap_complete panics when it cannot write (a closed pipe).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "lblab", &mut script);
            crate::stdout::write_bytes(&script);
            Ok(ExitCode::SUCCESS)
        }
    }
}
