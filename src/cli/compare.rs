//! `lblab compare`: one scenario in the simulator and over real TCP, and how well they agree.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use lblab_model::results::{diff_pct, write_atomic, CompareRow, Layout, Mode, RunSummary};
use lblab_model::units::Dur;
use lblab_model::Scenario;

use super::output;

/// The scenario `lblab compare` runs when given none.
pub const DEFAULT_SCENARIO: &str = "scenarios/one-slow.toml";

/// Arguments of `lblab compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario file (TOML) [default: scenarios/one-slow.toml].
    scenario: Option<PathBuf>,
    #[command(flatten)]
    run: super::args::Run,
    #[command(flatten)]
    length: super::args::Length,
    /// Measure each policy for the scenario's full duration (as the committed evidence does);
    /// without it or --duration, each policy is measured for 10s in both modes, so that the
    /// default run takes about three minutes.
    #[arg(long, conflicts_with = "duration")]
    full: bool,
    /// How the real harness runs.
    #[command(flatten)]
    harness: super::real::HarnessArgs,
}

/// Measured time per policy of a `compare` without `--duration` or `--full`.
const DEFAULT_DURATION: Dur = Dur(10_000_000_000);

/// The scenario with `extra` ns added to every backend's network round trip.
fn with_extra_rtt(scenario: &Scenario, extra: u64) -> Scenario {
    let mut s = scenario.clone();
    for b in &mut s.backends {
        b.network_rtt += extra;
    }
    s
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let path = args
        .scenario
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SCENARIO));
    let length = super::args::Length {
        duration: if args.full {
            None
        } else {
            Some(args.length.duration.unwrap_or(DEFAULT_DURATION))
        },
        warmup: args.length.warmup,
    };
    let scenario = super::args::load_with_length(&path, args.run.seed, &length)?;
    let base = args
        .run
        .out
        .clone()
        .unwrap_or_else(|| Layout::scratch(&path).root().to_path_buf());
    let layout = Layout::new(&base);

    let _out_dir = output::prepare_dir(&base)?;
    eprintln!("simulating {} ...", scenario.file.name);
    let (sim_runs, sim_partial) = super::sim::simulate(&scenario, &args.run.policies, None)?;
    let sim_results: Vec<_> = sim_runs.iter().map(|r| r.result.clone()).collect();
    let sim_summary = RunSummary::of(&scenario, Mode::Sim, &sim_results, sim_partial, Vec::new());
    output::write(&layout.sim(), &sim_summary, &sim_results)
        .context("writing simulation results")?;
    if sim_partial {
        println!(
            "interrupted during the simulation; wrote {}",
            layout.sim().display()
        );
        return Ok(ExitCode::from(130));
    }

    eprintln!("running {} over real TCP ...", scenario.file.name);
    let options = args.harness.options(&args.run.policies);
    let (real, real_summary, _, real_dir) =
        super::real::run_and_write(&scenario, &options, &layout.real())?;

    // The simulator models no cost per RPC; the real stack has one, which the floor measures. A
    // second simulation with the floor's median as network round trip separates that fixed cost
    // from modelling error.
    let floor_ns = real.floor.as_ref().map(|f| (f.p50_ms * 1e6) as u64);
    let calibrated = match floor_ns {
        Some(extra) => {
            let (runs, _) =
                super::sim::simulate(&with_extra_rtt(&scenario, extra), &args.run.policies, None)?;
            runs.into_iter().map(|r| r.result.summary).collect()
        }
        None => Vec::new(),
    };
    let rows: Vec<CompareRow> = real_summary
        .rows
        .iter()
        .filter_map(|r| {
            let s = sim_summary.rows.iter().find(|s| s.policy == r.policy)?;
            let c = calibrated.iter().find(|c| c.policy == r.policy);
            let floor_ms = floor_ns.unwrap_or(0) as f64 / 1e6;
            Some(CompareRow::new(
                s,
                r,
                c.map(|c| (c, floor_ms)),
                real_summary.partial,
            ))
        })
        .collect();
    let csv = CompareRow::to_csv(&rows).context("writing compare.csv")?;
    write_atomic(&layout.compare_csv(), &csv)?;
    // The chart is drawn from compare.csv, so that `redraw_compare` redraws the same chart from
    // the folder (adding the multi-seed intervals and the repeated real runs when there are).
    lblab_report::redraw_compare_from(&base, &scenario.file.name, &csv, false)
        .context("drawing the comparison chart")?;

    print_comparison(&scenario, &rows, &real_summary, floor_ns);
    super::real::print_harness(&real);
    println!(
        "wrote {}, {} and {}",
        layout.sim().display(),
        real_dir.display(),
        layout.compare_csv().display()
    );
    if let Some(why) = &real.failed {
        anyhow::bail!(
            "{why}; the results measured before it are in {}",
            base.display()
        );
    }
    Ok(if real.partial {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// One line of the agreement table: per percentile the simulated value and whether the real one
/// agrees with it.
fn print_agreement(policy: &str, width: usize, sim: [(f64, bool); 2], real: (f64, f64)) {
    let mark = |ok: bool| if ok { "yes" } else { "NO" };
    let [(sim_p50, p50_ok), (sim_p99, p99_ok)] = sim;
    println!(
        "{:<width$} {:>8.2} {:>8.2} {:>6.0}% {:>5}  {:>8.2} {:>8.2} {:>6.0}% {:>5}",
        policy,
        sim_p50,
        real.0,
        diff_pct(sim_p50, real.0),
        mark(p50_ok),
        sim_p99,
        real.1,
        diff_pct(sim_p99, real.1),
        mark(p99_ok)
    );
}

/// Prints the agreement table, and the calibrated one if the floor was measured.
fn print_comparison(
    scenario: &Scenario,
    rows: &[CompareRow],
    real_summary: &RunSummary,
    floor_ns: Option<u64>,
) {
    println!(
        "scenario {} (seed {}): simulated vs real over loopback TCP",
        scenario.file.name, scenario.file.seed
    );
    let width = rows
        .iter()
        .map(|a| a.policy.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let header = [
        "policy", "sim p50", "real p50", "diff", "ok", "sim p99", "real p99", "diff", "ok",
    ];
    println!(
        "{:<width$} {:>8} {:>8} {:>7} {:>5}  {:>8} {:>8} {:>7} {:>5}",
        header[0],
        header[1],
        header[2],
        header[3],
        header[4],
        header[5],
        header[6],
        header[7],
        header[8]
    );
    for a in rows {
        let line = [(a.sim_p50_ms, a.p50_agrees), (a.sim_p99_ms, a.p99_agrees)];
        print_agreement(&a.policy, width, line, (a.real_p50_ms, a.real_p99_ms));
    }
    let agree = rows.iter().filter(|a| a.agrees()).count();
    println!(
        "{agree} of {} policies agree (p50 and p99 within ±20 %, or within 1 ms)",
        rows.len()
    );
    if real_summary.partial {
        println!(
            "(the real run stopped early: it covers less time than the simulation, so this comparison is not a fair one)"
        );
    }
    output::print_incidents(real_summary);
    if let Some(extra) = floor_ns {
        println!(
            "calibrated: the simulation again with the harness floor's median ({:.3} ms, the real stack's cost per RPC) as network round trip:",
            extra as f64 / 1e6
        );
        for a in rows {
            if let (Some(p50), Some(p50_ok), Some(p99), Some(p99_ok)) = (
                a.calibrated_sim_p50_ms,
                a.calibrated_p50_agrees,
                a.calibrated_sim_p99_ms,
                a.calibrated_p99_agrees,
            ) {
                let line = [(p50, p50_ok), (p99, p99_ok)];
                print_agreement(&a.policy, width, line, (a.real_p50_ms, a.real_p99_ms));
            }
        }
        let cal = rows
            .iter()
            .filter(|a| a.calibrated_agrees() == Some(true))
            .count();
        println!("{cal} of {} policies agree after calibration", rows.len());
    }
}
