//! `lblab sweep`: over the scenario space (`--vary`, every policy of the scenario at every point,
//! see `lblab_lab::space`), or a grid over peak-EWMA's parameters and ablation switches on one scenario.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use lblab_model::units::Dur;
use lblab_model::vary::Axis;
use lblab_policy::Nanos;
use lblab_sim::sweep::{all_ablations, Grid};

/// Arguments of `lblab sweep`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    budget: super::args::Budget,
    /// Scenario file (TOML). With --vary every policy of it runs at every point; without, its
    /// fleet, faults and workload are used for the peak-EWMA grid and its policies are not.
    #[arg(required_unless_present = "merge")]
    scenario: Option<PathBuf>,
    /// Vary a scenario field by its dotted path: `workload.rate=500,1000,2000`,
    /// `fleet.main.count=4,9,19`, `faults.0.factor=1.2,2,10`, `fleet.slow.service_time.median=5ms,20ms`,
    /// `workload.utilization=0.1,0.5,0.9` (a fraction of the fleet's capacity). Repeatable: the
    /// axes are crossed. Paths that move together share one flag:
    /// `fleet.main.count,workload.rate=4:500,9:1000`.
    #[arg(long, value_name = "PATH=V1,V2,...")]
    vary: Vec<Axis>,
    /// Seeds per point (the scenario's seed and the next ones); medians and their intervals
    /// across them (at least 95 % coverage; the exact coverage, e.g. 96.9 % for 6 seeds, is
    /// printed and charted). With --vary.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000), requires = "vary")]
    seeds: u64,
    /// Only the policies with these labels (repeatable). With --vary.
    #[arg(long = "policy", requires = "vary")]
    policies: Vec<String>,
    /// The charts' x axis: a varied path, `backends`, `faulty_share`, `rate` or `utilization`
    /// [default: the
    /// first varied path]. With --vary.
    #[arg(long, requires = "vary")]
    x: Option<String>,
    /// decayTime values (peak-EWMA grid).
    #[arg(long, value_delimiter = ',', default_value = "1s,2s,5s,10s,30s", value_parser = parse_duration, conflicts_with = "vary")]
    decay_times: Vec<Nanos>,
    /// choiceCount values (2 to 10) (peak-EWMA grid).
    #[arg(long, value_delimiter = ',', default_value = "2,3", value_parser = clap::value_parser!(u32).range(2..=10), conflicts_with = "vary")]
    choice_counts: Vec<u32>,
    /// defaultRtt values (peak-EWMA grid).
    #[arg(long, value_delimiter = ',', default_value = "30ms", value_parser = parse_duration, conflicts_with = "vary")]
    default_rtts: Vec<Nanos>,
    /// Only the proposal's semantics, not the four ablation variants (peak-EWMA grid).
    #[arg(long, conflicts_with = "vary")]
    no_ablations: bool,
    /// Results folder [default: lblab-out/<scenario-name>/sweep, or sweep-<paths> with --vary].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run only shard I of N (I from 0): the points whose index is I modulo N, every N-th, and
    /// write their runs to `shard.json` in --out instead of the sweep's files. `lblab sweep
    /// --merge` joins the N shard folders into exactly the files one unsharded run writes. For
    /// an Indexed Job: `--shard $JOB_COMPLETION_INDEX/N`. With --vary.
    #[arg(long, value_name = "I/N", requires = "vary", value_parser = shard)]
    shard: Option<lblab_sim::shard::Shard>,
    /// Join the folders of every shard of one sweep (`--shard i/N`) into the files the unsharded
    /// sweep writes (byte for byte the same), in --out. Refuses shards of different sweeps, a
    /// missing shard or one given twice.
    #[arg(long, value_name = "DIR", num_args = 1.., requires = "out", conflicts_with_all = ["scenario", "vary", "shard", "seeds", "policies", "x"])]
    merge: Vec<PathBuf>,
    /// Worker threads, 1 to 1024 [default: all cores].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    jobs: Option<u16>,
}

/// A duration flag value: `250ms`, `10s`, `1.5m`; more than 0, at most a year.
fn parse_duration(text: &str) -> Result<Nanos, String> {
    let d: Dur = text
        .parse()
        .map_err(|e: lblab_model::units::DurError| e.to_string())?;
    if d.0 == 0 {
        return Err(format!("`{text}` must be greater than 0, e.g. \"10s\""));
    }
    Ok(d.0)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some(scenario) = &args.scenario else {
        let out = args
            .out
            .as_deref()
            .context("--merge writes the merged sweep into --out DIR")?;
        let exit = lblab_lab::space::merge(&args.merge, out, super::names::flag, &mut super::say)?;
        return Ok(super::exit(exit));
    };
    let scenario_file = super::args::scenario_path(scenario)?;
    let scenario = super::args::load(&scenario_file, None)?;
    let jobs = args
        .jobs
        .map(usize::from)
        .unwrap_or_else(lblab_sim::batch::default_threads);
    if !args.vary.is_empty() {
        super::args::check_policies(&scenario, &args.policies)?;
        let job = lblab_lab::space::SpaceJob {
            scenario: &scenario,
            file: &scenario_file,
            axes: &args.vary,
            seeds: args.seeds,
            policies: &args.policies,
            x: args.x.as_deref(),
            out: args.out.as_deref(),
            jobs,
            shard: args.shard,
            version: env!("CARGO_PKG_VERSION"),
        };
        return Ok(super::exit(lblab_lab::space::run(
            &super::lab(Some(&args.budget), None),
            job,
            &mut super::say,
        )?));
    }
    lblab_lab::grid::check_axis("--decay-times", &args.decay_times)?;
    lblab_lab::grid::check_axis("--choice-counts", &args.choice_counts)?;
    lblab_lab::grid::check_axis("--default-rtts", &args.default_rtts)?;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| lblab_lab::out_dir::results_dir(&scenario_file, "sweep", None));
    let grid = Grid {
        decay_times: args.decay_times.clone(),
        choice_counts: args.choice_counts.clone(),
        default_rtts: args.default_rtts.clone(),
        ablations: if args.no_ablations {
            all_ablations()[..1].to_vec()
        } else {
            all_ablations()
        },
    };
    let lab = super::lab(Some(&args.budget), None);
    let exit = lblab_lab::grid::run(&lab, &scenario, &grid, &dir, jobs, &mut super::say)?;
    Ok(super::exit(exit))
}

/// `--shard`'s value; an error names the flag.
fn shard(text: &str) -> anyhow::Result<lblab_sim::shard::Shard> {
    text.parse()
        .map_err(|e| anyhow::anyhow!("{} {e}", super::names::flag(lblab_lab::Setting::Shard)))
}

/// `lblab sweep`'s command line alone, to check the arguments `lblab deploy k8s --sweep` gives
/// its pods with the very parser that reads them there.
#[derive(Debug, clap::Parser)]
#[command(name = "lblab sweep")]
struct SweepLine {
    #[command(flatten)]
    args: Args,
}

/// What a sweep to deploy runs, checked as `lblab sweep` checks it.
pub(super) struct Deployable {
    /// The arguments the pods give `lblab sweep` after the scenario (`--jobs 1` added when none
    /// is given).
    pub args: Vec<String>,
    /// Threads per shard.
    pub jobs: usize,
    /// What the sweep runs.
    pub checked: lblab_lab::space::Checked,
}

/// Checks `args` (what follows `--sweep`) as `lblab sweep SCENARIO ARGS --shard i/N --out DIR`
/// would in every pod, and the sweep's plan as it would before any work.
pub(super) fn deployable(
    scenario: &lblab_model::Scenario,
    file: &std::path::Path,
    args: &[String],
    shards: usize,
) -> anyhow::Result<Deployable> {
    let parse = |extra: &[&str]| {
        let line = ["lblab sweep".to_string(), file.display().to_string()]
            .into_iter()
            .chain(args.iter().cloned())
            .chain(extra.iter().map(|s| s.to_string()));
        SweepLine::try_parse_from(line).map_err(|e| {
            let text = e.render().to_string();
            let first: Vec<&str> = text
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(str::trim)
                .collect();
            let first = first.join(" ");
            let first = first.trim_start_matches("error: ");
            anyhow::anyhow!(
                "--sweep {}: {first} (the arguments after --sweep are `lblab sweep`'s after the \
                 scenario)",
                args.join(" ")
            )
        })
    };
    use clap::Parser as _;
    let given = parse(&[])?.args;
    for (set, what) in [
        (given.shard.is_some(), "--shard"),
        (given.out.is_some(), "--out"),
        (!given.merge.is_empty(), "--merge"),
    ] {
        anyhow::ensure!(
            !set,
            "--sweep … {what}: the manifests give each pod its shard and results folder (--shards \
             N sets N; --out is the manifests' folder: put it before --sweep)"
        );
    }
    anyhow::ensure!(
        !given.vary.is_empty(),
        "--sweep needs --vary: only a sweep over the scenario space is sharded (the peak-EWMA \
         grid runs on one machine: lblab sweep SCENARIO)"
    );
    let mut args = args.to_vec();
    let jobs = match given.jobs {
        Some(j) => usize::from(j),
        None => {
            args.extend(["--jobs".to_string(), "1".to_string()]);
            1
        }
    };
    // The pods' own command line, as they run it.
    let shard = format!("0/{shards}");
    let mut extra = vec!["--shard", shard.as_str(), "--out", "/results/x"];
    if given.jobs.is_none() {
        extra.extend(["--jobs", "1"]);
    }
    parse(&extra)?;
    super::args::check_policies(scenario, &given.policies)?;
    let job = lblab_lab::space::SpaceJob {
        scenario,
        file,
        axes: &given.vary,
        seeds: given.seeds,
        policies: &given.policies,
        x: given.x.as_deref(),
        out: None,
        jobs,
        shard: None,
        version: env!("CARGO_PKG_VERSION"),
    };
    let checked = lblab_lab::space::check(&super::budgets(Some(&given.budget), None), &job)?;
    Ok(Deployable {
        args,
        jobs,
        checked,
    })
}
