//! `lblab sweep SCENARIO --vary PATH=V1,V2,…`'s job: every policy of a scenario at every point of
//! the scenario space, over several seeds, with intervals; one shard of the points, or the merge
//! of every shard's folder.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use lblab_model::scenario::ORACLE;
use lblab_model::vary::{self, Axis};
use lblab_model::Scenario;
use lblab_record::{layout, write_atomic, Layout};
use lblab_report::{write_sweep_charts, Sweep, SweepPoint};
use lblab_sim::shard::{Shard, ShardFile, SweepIdentity};
use lblab_sim::space::{self, PointResult};
use lblab_stats as stats;

use crate::out_dir;

use crate::error::{bail, ensure, Context, Result};
use crate::{Exit, Lab, Names, Setting};

/// What a scenario-space sweep runs.
pub struct SpaceJob<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// Its file (the scratch folder is named after it; a shard file holds its text).
    pub file: &'a Path,
    /// The varied paths and their values (`--vary`), crossed.
    pub axes: &'a [Axis],
    /// Seeds per point.
    pub seeds: u64,
    /// Only these policies (all if empty).
    pub policies: &'a [String],
    /// The charts' x axis [default: the first varied path].
    pub x: Option<&'a str>,
    /// The results folder [default: `sweep-<paths>` in the scenario's scratch folder].
    pub out: Option<&'a Path>,
    /// Threads.
    pub jobs: usize,
    /// Run only this shard of the points and write its shard file (`--shard i/N`).
    pub shard: Option<Shard>,
    /// The lblab version a shard file records.
    pub version: &'a str,
}

/// What a sweep's files and charts are drawn from, besides its points: the same for a sweep run
/// at once and for one merged from shards.
pub struct SweepMeta<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// Its first seed.
    pub seed: u64,
    /// Seeds per point.
    pub seeds: u64,
    /// The varied paths.
    pub paths: &'a [String],
    /// The charts' x axis.
    pub x: &'a str,
    /// The policies that ran.
    pub policies: &'a [String],
}

/// The x coordinates the charts may use besides the varied paths.
const DERIVED_X: &[&str] = &["backends", "faulty_share", "rate", "utilization"];

/// The chart axis: a varied path or a derived column, checked before any work; an error spells
/// the setting with `names`.
fn x_axis(axes: &[Axis], x: Option<&str>, names: Names) -> Result<String> {
    let paths: Vec<&str> = axes
        .iter()
        .flat_map(|a| a.paths.iter().map(String::as_str))
        .collect();
    match x {
        None => Ok(match paths.first() {
            Some(&vary::UTILIZATION) => "utilization".to_string(),
            Some(p) => p.to_string(),
            None => "backends".to_string(),
        }),
        Some(x) if paths.contains(&x) || DERIVED_X.contains(&x) => Ok(x.to_string()),
        Some(x) => bail!(
            "{} {x:?}: not a varied path nor one of {}; the varied paths are {}",
            names(Setting::X),
            DERIVED_X.join(", "),
            paths.join(", ")
        ),
    }
}

/// What a sweep would run, as [`check`] finds it before any work.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// Points of the whole sweep.
    pub points: usize,
    /// Simulations of the whole sweep: points × seeds × policies.
    pub simulations: usize,
    /// The memory a process running the sweep, or any shard of it, needs, bytes (estimated):
    /// its plan's and the largest point's runs', at `jobs` threads.
    pub memory: u64,
}

/// A sweep's plan, checked before any work: its chart axis, its whole plan, and how many points
/// and which policies it has before sharding.
struct Prepared {
    x: String,
    plan: space::Plan,
    all_points: usize,
    policies: Vec<String>,
    /// The plan's memory estimate, bytes.
    plan_bytes: u64,
}

/// The checks of a sweep before any point is built and run: the chart axis, the point cap, the
/// plan's memory, every point's scenario and the policies.
fn prepare(lab: &Lab, job: &SpaceJob<'_>) -> Result<Prepared> {
    let scenario = job.scenario;
    let x = x_axis(job.axes, job.x, lab.names)?;
    // Bounded before any point is built: the point cap, then the plan's memory.
    let vary_on = || format!("{} on {}", (lab.names)(Setting::Vary), scenario.file.name);
    let points = vary::check_size(job.axes, job.seeds).with_context(vary_on)?;
    let planned =
        lblab_model::budget::sweep_plan(points as u64 * job.seeds.max(1), scenario.backends.len());
    lblab_model::budget::check_estimate(
        &format!("sweeping {} over {points} points", scenario.file.name),
        &planned,
        lab.memory_budget,
    )?;
    let plan = space::plan(scenario, job.axes, job.seeds, job.policies).with_context(vary_on)?;
    ensure!(
        !plan.policies.is_empty(),
        "no policy of {} runs in the simulator",
        scenario.file.name
    );
    Ok(Prepared {
        x,
        all_points: plan.points.len(),
        policies: plan.policies.clone(),
        plan,
        plan_bytes: planned.bytes,
    })
}

/// Checks each point of `plan` against the memory budget, `jobs` threads each holding one
/// policy run at a time (the results kept across runs are summaries); the largest point's
/// estimate, bytes.
fn points_memory(lab: &Lab, plan: &space::Plan, jobs: usize) -> Result<u64> {
    let mut largest = 0;
    for point in &plan.points {
        if let Some(s) = point.scenarios.first() {
            let policies = jobs.min(plan.policies.len());
            let mode = lblab_model::budget::Mode::Sim { jobs };
            lab.check_memory(s, policies, mode)?;
            largest = largest.max(lblab_model::budget::estimate(s, policies, mode).bytes);
        }
    }
    Ok(largest)
}

/// The checks [`run`] makes before any work, for the whole sweep, without running it: what a
/// sweep's arguments are checked with before they are given to processes elsewhere (each shard
/// of a sweep on a cluster).
pub fn check(lab: &Lab, job: &SpaceJob<'_>) -> Result<Checked> {
    let prepared = prepare(lab, job)?;
    let memory = points_memory(lab, &prepared.plan, job.jobs)?;
    Ok(Checked {
        points: prepared.all_points,
        simulations: prepared.plan.runs(),
        memory: memory.saturating_add(prepared.plan_bytes),
    })
}

/// Runs the sweep and writes `sweep.csv`, `runs.csv`, `sweep.json` and the charts (or, for a
/// shard, its shard file), printing its points (each line to `out`).
pub fn run(lab: &Lab, job: SpaceJob<'_>, out: &mut dyn FnMut(&str)) -> Result<Exit> {
    let scenario = job.scenario;
    let Prepared {
        x,
        plan,
        all_points,
        policies,
        ..
    } = prepare(lab, &job)?;
    let plan = match job.shard {
        Some(shard) => plan.shard(shard.index, shard.count),
        None => plan,
    };
    points_memory(lab, &plan, job.jobs)?;
    let paths: Vec<String> = job.axes.iter().flat_map(|a| a.paths.clone()).collect();
    let dir = job.out.map(Path::to_path_buf).unwrap_or_else(|| {
        let name = paths
            .iter()
            .map(|p| p.replace('.', "-"))
            .collect::<Vec<_>>()
            .join("+");
        let name = match job.shard {
            Some(s) => format!("sweep-{name}-shard-{}-of-{}", s.index, s.count),
            None => format!("sweep-{name}"),
        };
        Layout::scratch(job.file).run(&name)
    });
    let _out_dir = out_dir::prepare_dir(&dir)?;
    crate::errln!(
        "sweeping {} points{} × {} seeds × {} policies of {} ({} simulations) on {} threads",
        plan.points.len(),
        match job.shard {
            Some(s) => format!(
                " (shard {s}: every {}th of {all_points}, from point {})",
                s.count, s.index
            ),
            None => String::new(),
        },
        plan.seeds,
        plan.policies.len(),
        scenario.file.name,
        plan.runs(),
        job.jobs
    );
    let stop = lab.stop;
    let started = Instant::now();
    let total = plan.runs();
    let bar = crate::progress::Progress::new(total as u64, "simulations");
    let progress = |n: usize| bar.set(n as u64);
    let points = space::run(&plan, job.jobs, Some(stop), &progress)?;
    drop(bar);
    let wall = started.elapsed();
    let partial = stop.load(Ordering::Relaxed) || points.iter().any(|p| p.partial);

    if let Some(shard) = job.shard {
        let text = std::fs::read_to_string(job.file)
            .with_context(|| format!("reading {}", job.file.display()))?;
        let identity = SweepIdentity {
            lblab: job.version.to_string(),
            scenario: scenario.file.name.clone(),
            scenario_file: text,
            seed: scenario.file.seed,
            seeds: plan.seeds,
            axes: SweepIdentity::axes_text(job.axes),
            paths: paths.clone(),
            x: x.clone(),
            policies: policies.clone(),
            points: all_points,
            shards: shard.count,
        };
        let file = ShardFile::new(identity, shard.index, &points);
        write_atomic(
            &dir.join(lblab_sim::shard::SHARD_JSON),
            file.to_json()?.as_bytes(),
        )?;
        out(&format!(
            "shard {shard}: {} points, {} simulations in {:.1}s wall on {} threads",
            points.len(),
            total,
            wall.as_secs_f64(),
            job.jobs
        ));
        out(&format!(
            "wrote {}; join every shard with `lblab sweep {} DIR… {} OUT`",
            dir.join(lblab_sim::shard::SHARD_JSON).display(),
            (lab.names)(Setting::Merge),
            (lab.names)(Setting::Out)
        ));
        return Ok(Exit::of(partial));
    }
    let meta = SweepMeta {
        scenario: &scenario.file.name,
        seed: scenario.file.seed,
        seeds: plan.seeds,
        paths: &paths,
        x: &x,
        policies: &plan.policies,
    };
    write(&dir, &meta, &points, partial, out)?;
    out(&format!(
        "{} simulations in {:.1}s wall on {} threads ({:.1}s per 1,000 simulations)",
        total,
        wall.as_secs_f64(),
        job.jobs,
        wall.as_secs_f64() * 1000.0 / total.max(1) as f64
    ));
    out(&format!("wrote {}", dir.display()));
    Ok(Exit::of(partial))
}

/// `lblab sweep --merge DIR… --out OUT`: joins the shard folders of one sweep into the files the
/// unsharded sweep writes, in `dir`, printing its points (each line to `out`); its messages
/// spell settings with `names`.
pub fn merge(
    dirs: &[std::path::PathBuf],
    dir: &Path,
    names: Names,
    out: &mut dyn FnMut(&str),
) -> Result<Exit> {
    let [out_setting, shard_setting] = [Setting::Out, Setting::Shard].map(names);
    // The merged sweep is written over `--out`'s sweep files: a shard folder given as `--out`
    // would have its own results replaced by the merge of itself and the others.
    let same = |a: &Path, b: &Path| {
        std::fs::canonicalize(a)
            .ok()
            .zip(std::fs::canonicalize(b).ok())
            .is_some_and(|(a, b)| a == b)
    };
    if let Some(shard) = dirs
        .iter()
        .find(|d| same(d, dir) || (d.is_file() && d.parent().is_some_and(|p| same(p, dir))))
    {
        bail!(
            "{out_setting} {} is one of the shards being merged ({}): the merge would overwrite \
             it; give {out_setting} a folder of its own",
            dir.display(),
            shard.display()
        );
    }
    let mut shards = Vec::with_capacity(dirs.len());
    for d in dirs {
        let file = if d.is_dir() {
            d.join(lblab_sim::shard::SHARD_JSON)
        } else {
            d.clone()
        };
        // Bounded and regular files only, as every result file is read: a device or a FIFO
        // given as a shard must not fill memory or block.
        let text = lblab_record::read_result_file(&file).with_context(|| {
            format!(
                "{}: no shard file to read (give the folders that `lblab sweep … {shard_setting} \
                 i/N {out_setting} DIR` wrote)",
                file.display()
            )
        })?;
        let shard = ShardFile::parse(&file.display().to_string(), &text, names)?;
        shards.push((d.display().to_string(), shard));
    }
    let (sweep, points) = lblab_sim::shard::merge(&shards, names)?;
    let _out_dir = out_dir::prepare_dir(dir)?;
    let partial = points.iter().any(|p| p.partial);
    let meta = SweepMeta {
        scenario: &sweep.scenario,
        seed: sweep.seed,
        seeds: sweep.seeds,
        paths: &sweep.paths,
        x: &sweep.x,
        policies: &sweep.policies,
    };
    write(dir, &meta, &points, partial, out)?;
    out(&format!(
        "merged {} shards ({} points) of the sweep of {}",
        shards.len(),
        points.len(),
        sweep.scenario
    ));
    out(&format!("wrote {}", dir.display()));
    Ok(Exit::of(partial))
}

/// Writes `sweep.csv`, `runs.csv`, `sweep.json` and the charts, and prints the points.
fn write(
    dir: &Path,
    meta: &SweepMeta<'_>,
    points: &[PointResult],
    partial: bool,
    out: &mut dyn FnMut(&str),
) -> Result<()> {
    let paths = meta.paths;
    write_atomic(
        &dir.join(layout::SWEEP_CSV),
        &space::sweep_csv(paths, points)?,
    )?;
    write_atomic(
        &dir.join(layout::RUNS_CSV),
        &space::runs_csv(paths, points)?,
    )?;
    let json = serde_json::json!({
        "scenario": meta.scenario,
        "seed": meta.seed,
        "seeds": meta.seeds,
        "confidence": stats::CONFIDENCE,
        "axes": paths,
        "x": meta.x,
        "partial": partial,
        "points": points,
    });
    write_atomic(
        &dir.join(layout::SWEEP_JSON),
        (serde_json::to_string_pretty(&json)? + "\n").as_bytes(),
    )?;
    charts(
        dir,
        meta.scenario,
        meta.policies,
        points,
        meta.x,
        meta.seeds,
    )?;
    for line in lblab_sim::space_lines::point_lines(meta.policies, points, paths, meta.seeds) {
        out(&line);
    }
    if !meta.policies.iter().any(|p| p == ORACLE) {
        out("no p99_vs_oracle or p999_vs_oracle charts (and empty columns in sweep.csv): the sweep ran no `oracle` policy; add one to the scenario to get them");
    }
    Ok(())
}

/// The charts of a sweep (drawn by the report crate, which also redraws them from `sweep.json`).
fn charts(
    dir: &Path,
    scenario: &str,
    policies: &[String],
    points: &[PointResult],
    x: &str,
    seeds: u64,
) -> Result<()> {
    let sweep = Sweep {
        scenario: scenario.to_string(),
        seeds,
        x: x.to_string(),
        policies: policies.to_vec(),
        points: points
            .iter()
            .map(|p| SweepPoint {
                overrides: p.override_pairs(),
                backends: p.backends,
                faulty_backends: p.faulty_backends,
                rate: p.rate,
                utilization: p.utilization,
                deadline_ms: Some(p.deadline_ms),
                policies: p.policies.clone(),
            })
            .collect(),
    };
    write_sweep_charts(dir, &sweep)
        .with_context(|| format!("drawing the sweep's charts in {}", dir.display()))?;
    Ok(())
}
