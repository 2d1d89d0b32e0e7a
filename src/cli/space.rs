//! `lblab sweep SCENARIO --vary PATH=V1,V2,…`: every policy of a scenario at every point of the
//! scenario space, over several seeds, with intervals; and `lblab sim --seeds N`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::Context;
use lblab_model::results::write_atomic;
use lblab_model::stats::{self, Interval, PolicyIntervals};
use lblab_model::units::Dur;
use lblab_model::vary::{self, Axis};
use lblab_model::Scenario;
use lblab_report::{write_line_chart, Line, LineChart, LinePoint};
use lblab_sim::space::{self, PointResult};

use super::output;

/// What the scenario-space sweep needs from the command line.
pub struct SpaceArgs<'a> {
    pub scenario: &'a Scenario,
    pub axes: &'a [Axis],
    pub seeds: u64,
    pub policies: &'a [String],
    pub x: Option<&'a str>,
    pub out: Option<&'a Path>,
    pub jobs: usize,
}

/// The x coordinates the charts may use besides the varied paths.
const DERIVED_X: &[&str] = &["backends", "faulty_share", "rate", "utilization"];

/// The chart axis: a varied path or a derived column, checked before any work.
fn x_axis(axes: &[Axis], x: Option<&str>) -> anyhow::Result<String> {
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
        Some(x) => anyhow::bail!(
            "--x {x:?}: not a varied path nor one of {}; the varied paths are {}",
            DERIVED_X.join(", "),
            paths.join(", ")
        ),
    }
}

/// The x value of a point: a varied path's value (numbers as they are, durations in ms) or a
/// derived column.
fn x_value(point: &PointResult, x: &str) -> f64 {
    match x {
        "backends" => point.backends as f64,
        "faulty_share" => 100.0 * point.faulty_backends as f64 / point.backends.max(1) as f64,
        "rate" => point.rate,
        "utilization" => point.utilization,
        _ => point
            .overrides
            .iter()
            .find(|o| o.path == x)
            .map_or(f64::NAN, |o| {
                o.value
                    .parse::<f64>()
                    .ok()
                    .or_else(|| o.value.parse::<Dur>().ok().map(|d| d.0 as f64 / 1e6))
                    .unwrap_or(f64::NAN)
            }),
    }
}

/// Runs the sweep and writes `sweep.csv`, `runs.csv`, `sweep.json` and the charts.
pub fn run(args: SpaceArgs<'_>) -> anyhow::Result<ExitCode> {
    let scenario = args.scenario;
    let x = x_axis(args.axes, args.x)?;
    let plan = space::plan(scenario, args.axes, args.seeds, args.policies)
        .with_context(|| format!("--vary on {}", scenario.file.name))?;
    anyhow::ensure!(
        !plan.policies.is_empty(),
        "no policy of {} runs in the simulator",
        scenario.file.name
    );
    let paths: Vec<String> = args.axes.iter().flat_map(|a| a.paths.clone()).collect();
    let dir = args.out.map(Path::to_path_buf).unwrap_or_else(|| {
        let name = paths
            .iter()
            .map(|p| p.replace('.', "-"))
            .collect::<Vec<_>>()
            .join("+");
        PathBuf::from(output::SCRATCH)
            .join(&scenario.file.name)
            .join(format!("sweep-{name}"))
    });
    output::prepare_dir(&dir)?;
    eprintln!(
        "sweeping {} points × {} seeds × {} policies of {} ({} simulations) on {} threads",
        plan.points.len(),
        plan.seeds,
        plan.policies.len(),
        scenario.file.name,
        plan.runs(),
        args.jobs
    );
    let stop = output::stop_flag();
    let started = Instant::now();
    let total = plan.runs();
    let step = (total / 50).max(1);
    let progress = |n: usize| {
        if n % step == 0 || n == total {
            eprint!("\r{n}/{total} done");
        }
    };
    let points = space::run(&plan, args.jobs, Some(stop), &progress)?;
    eprintln!();
    let wall = started.elapsed();
    let partial = stop.load(Ordering::Relaxed) || points.iter().any(|p| p.partial);

    write_atomic(
        &dir.join("sweep.csv"),
        space::sweep_csv(&paths, &points).as_bytes(),
    )?;
    write_atomic(
        &dir.join("runs.csv"),
        space::runs_csv(&paths, &points).as_bytes(),
    )?;
    let json = serde_json::json!({
        "scenario": scenario.file.name,
        "seed": scenario.file.seed,
        "seeds": plan.seeds,
        "confidence": stats::CONFIDENCE,
        "axes": paths,
        "x": x,
        "partial": partial,
        "points": points,
    });
    write_atomic(
        &dir.join("sweep.json"),
        (serde_json::to_string_pretty(&json)? + "\n").as_bytes(),
    )?;
    charts(&dir, scenario, &plan.policies, &points, &x, plan.seeds)?;
    print_points(&plan.policies, &points, &paths);
    println!(
        "{} simulations in {:.1}s wall on {} threads",
        total,
        wall.as_secs_f64(),
        args.jobs
    );
    println!("wrote {}", dir.display());
    Ok(if partial {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// One line per point: each policy's p99 with its interval.
fn print_points(policies: &[String], points: &[PointResult], paths: &[String]) {
    for p in points {
        let label: Vec<String> = p.overrides.iter().map(|o| o.to_string()).collect();
        let label = if paths.is_empty() {
            "scenario".to_string()
        } else {
            label.join(" ")
        };
        println!(
            "{label} ({} backends, {:.0} req/s, utilization {:.1} %):",
            p.backends,
            p.rate,
            100.0 * p.utilization
        );
        for (name, pol) in policies.iter().zip(&p.policies) {
            let f = |m: &str, d: usize| pol.get(m).map_or("–".to_string(), |i| i.display(d));
            println!(
                "  {name:<24} p99 {} ms  p99.9 {} ms  to faulty {} %",
                f("p99_ms", 2),
                f("p999_ms", 2),
                pol.get("slow_share")
                    .map_or("–".into(), |i| scaled(i, 100.0).display(2))
            );
        }
    }
}

fn scaled(i: &Interval, k: f64) -> Interval {
    Interval {
        median: i.median * k,
        lo: i.lo * k,
        hi: i.hi * k,
        ..*i
    }
}

/// The charts of a sweep, one quantity each, one line per policy with its interval band.
fn charts(
    dir: &Path,
    scenario: &Scenario,
    policies: &[String],
    points: &[PointResult],
    x: &str,
    seeds: u64,
) -> anyhow::Result<()> {
    let xs: Vec<f64> = points.iter().map(|p| x_value(p, x)).collect();
    let (lo, hi) = xs
        .iter()
        .filter(|v| v.is_finite() && **v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(*v), b.max(*v)));
    let log_x = lo.is_finite() && hi / lo >= 8.0;
    let band = if seeds > 1 {
        let cov = points
            .iter()
            .flat_map(|p| p.policies.iter())
            .filter_map(|p| p.get("p99_ms"))
            .map(|i| i.coverage)
            .fold(1.0f64, f64::min);
        format!(
            "Lines: median of {seeds} seeds; bands: {:.0} % confidence interval of the median.",
            100.0 * cov
        )
    } else {
        "One seed: no interval.".to_string()
    };
    let line_of = |label: &str, pick: &dyn Fn(&PolicyIntervals) -> Option<Interval>, k: f64| {
        let idx = policies.iter().position(|p| p == label);
        Line {
            label: label.to_string(),
            reference: false,
            points: points
                .iter()
                .zip(&xs)
                .filter_map(|(p, &x)| {
                    let i = pick(idx.map(|k| &p.policies[k])?)?;
                    Some(LinePoint {
                        x,
                        y: i.median * k,
                        lo: i.lo * k,
                        hi: i.hi * k,
                    })
                })
                .collect(),
        }
    };
    let x_label = match x {
        "backends" => "backends".to_string(),
        "faulty_share" => "backends with a fault (%)".to_string(),
        "rate" => "offered rate (req/s)".to_string(),
        "utilization" => "utilization of the fleet's capacity".to_string(),
        p => {
            let is_duration = points
                .first()
                .and_then(|pt| pt.overrides.iter().find(|o| o.path == p))
                .is_some_and(|o| o.value.parse::<f64>().is_err());
            if is_duration {
                format!("{p} (ms)")
            } else {
                p.to_string()
            }
        }
    };
    let chart = |stem: &str, title: &str, y_label: &str, lines: Vec<Line>, note: String| {
        let c = LineChart {
            title: format!("{}: {title}", scenario.file.name),
            x_label: x_label.clone(),
            y_label: y_label.to_string(),
            log_x,
            log_y: true,
            lines,
            note,
        };
        write_line_chart(&dir.join(stem), &c)
            .with_context(|| format!("drawing {stem} in {}", dir.display()))
    };
    let metric = |m: &'static str| move |p: &PolicyIntervals| p.get(m).copied();
    let all = |m: &'static str, k: f64| -> Vec<Line> {
        same_as_earlier(policies.iter().map(|p| line_of(p, &metric(m), k)).collect())
    };
    chart(
        "p99",
        "p99 latency",
        "p99 (ms)",
        all("p99_ms", 1.0),
        band.clone(),
    )?;
    chart(
        "p999",
        "p99.9 latency",
        "p99.9 (ms)",
        all("p999_ms", 1.0),
        band.clone(),
    )?;
    let has_oracle = policies.iter().any(|p| p == "oracle");
    if has_oracle {
        let rel = |m: &'static str| -> Vec<Line> {
            let lines = policies
                .iter()
                .filter(|p| *p != "oracle")
                .map(|p| line_of(p, &metric(m), 1.0))
                .collect();
            same_as_earlier(lines)
        };
        let note = format!("{band} Ratios are paired by seed (1 = as good as the oracle).");
        chart(
            "p99_vs_oracle",
            "p99 relative to oracle",
            "p99 / oracle's p99",
            rel("p99_vs_oracle"),
            note.clone(),
        )?;
        chart(
            "p999_vs_oracle",
            "p99.9 relative to oracle",
            "p99.9 / oracle's p99.9",
            rel("p999_vs_oracle"),
            note,
        )?;
    }
    let faulty = points.iter().any(|p| p.faulty_backends > 0);
    if faulty {
        let mut lines = all("slow_share", 100.0);
        lines.push(Line {
            label: "(faulty/n)²: A48 draw's floor".to_string(),
            reference: true,
            points: points
                .iter()
                .zip(&xs)
                .map(|(p, &x)| {
                    let f = p.faulty_backends as f64 / p.backends.max(1) as f64;
                    let y = 100.0 * f * f;
                    LinePoint { x, y, lo: y, hi: y }
                })
                .collect(),
        });
        let note = format!("{band} Dashed: the share two independent uniform draws both land on faulty backends, whatever their cost. Zero shares are not drawn (log scale).");
        chart(
            "slow_share",
            "share of requests sent to faulty backends",
            "share to faulty backends (%)",
            lines,
            note,
        )?;
    }
    chart(
        "herd",
        "herd: busiest healthy backend's share over its fair share",
        "busiest healthy share / fair share",
        all("herd", 1.0),
        format!("{band} 1 = an even spread over the healthy backends."),
    )?;
    Ok(())
}

/// Lines that lie exactly on an earlier one (outlier detection that never ejects, say) hide it:
/// their labels say so.
fn same_as_earlier(mut lines: Vec<Line>) -> Vec<Line> {
    for i in 1..lines.len() {
        if let Some(j) =
            (0..i).find(|&j| !lines[j].points.is_empty() && lines[j].points == lines[i].points)
        {
            let twin = lines[j].label.clone();
            lines[i].label = format!("{} (= {twin})", lines[i].label);
        }
    }
    lines
}
