//! Charts redrawn from a results folder's files are byte-identical to the ones the run drew;
//! the interval chart draws.

#[allow(dead_code)] // not every test file uses every helper
mod support;

use std::path::{Path, PathBuf};

use lblab_report::{
    redraw_compare, redraw_compare_from, redraw_grid, redraw_run, redraw_sweep,
    write_grid_heatmaps, write_interval_chart, write_run_charts, write_sweep_charts, ChartName,
    Format, GridCell, IntervalChart, IntervalPoint, IntervalSeries, ReportError, Sweep, SweepPoint,
};
use lblab_stats::{Interval, NamedInterval, PolicyIntervals};
use support::temp_dir;

/// `result` is an error whose message names `file`.
fn fails_naming(result: Result<Vec<PathBuf>, ReportError>, file: &str) {
    let err = result.unwrap_err().to_string();
    assert!(err.contains(file), "{err}");
}

/// Every file in `a`'s `written` has the same bytes as its namesake in `b`.
fn same_bytes(written: &[PathBuf], b: &Path) {
    assert!(!written.is_empty());
    for p in written {
        let other = b.join(p.file_name().unwrap());
        assert!(
            std::fs::read(p).unwrap() == std::fs::read(&other).unwrap(),
            "{} differs from {}",
            p.display(),
            other.display()
        );
    }
}

fn copy_files(from: &Path, to: &Path, ext: &[&str]) {
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.extension()
            .is_some_and(|x| ext.contains(&x.to_string_lossy().as_ref()))
        {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn a_redrawn_run_is_byte_identical() {
    let (summary, results) = support::run();
    let run = temp_dir("run");
    lblab_record::write_run(&run, &summary, &results).unwrap();
    let written = write_run_charts(&run, &summary, &results).unwrap();
    let again = temp_dir("run-again");
    copy_files(&run, &again, &["json", "csv", "hlog"]);
    let redrawn = redraw_run(&again).unwrap();
    assert_eq!(redrawn.len(), 6);
    same_bytes(&written, &again);

    // A missing file is named.
    std::fs::remove_file(again.join("peak_ewma_experimental.hlog")).unwrap();
    let err = redraw_run(&again).unwrap_err();
    assert!(matches!(err, ReportError::Read { .. }), "{err:?}");
    assert!(
        err.to_string().contains("peak_ewma_experimental.hlog")
            && err.to_string().contains("missing"),
        "{err}"
    );
    std::fs::remove_file(again.join("timeseries.csv")).unwrap();
    fails_naming(redraw_run(&again), "timeseries.csv");
    std::fs::remove_dir_all(&run).ok();
    std::fs::remove_dir_all(&again).ok();
}

const COMPARE_CSV: &str = "policy,sim_p50_ms,real_p50_ms,p50_diff_pct,p50_agrees,sim_p99_ms,real_p99_ms,p99_diff_pct,p99_agrees,sim_requests,real_requests,sim_slow_share,real_slow_share\n\
round_robin,2.080,2.394,15.1,true,33.292,33.587,0.9,true,39995,39995,0.0500,0.0500\n\
peak_ewma,2.001,2.280,13.9,true,8.040,8.370,4.1,true,39995,39995,0.0040,0.0041\n";

#[test]
fn a_redrawn_compare_chart_is_byte_identical_and_gains_intervals() {
    let root = temp_dir("compare");
    let dir = root.join("one-slow").join("compare");
    std::fs::create_dir_all(dir.join("sim")).unwrap();
    let (mut summary, _) = support::run();
    summary.scenario = "one-slow".into();
    std::fs::write(
        dir.join("sim").join("summary.json"),
        serde_json::to_string(&summary).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("compare.csv"), COMPARE_CSV).unwrap();
    // What `lblab compare` draws.
    let first = temp_dir("compare-first");
    let written = redraw_compare_from(&first, "one-slow", COMPARE_CSV.as_bytes(), false).unwrap();
    redraw_compare(&dir).unwrap();
    same_bytes(&written, &dir);
    // With the multi-seed simulation's intervals the chart changes.
    let sim = root.join("one-slow").join("sim");
    std::fs::create_dir_all(&sim).unwrap();
    std::fs::write(
        sim.join("intervals.csv"),
        "policy,metric,median,lo,hi,seeds,coverage\nround_robin,p99_ms,33.0,31.0,35.5,10,0.9785\n",
    )
    .unwrap();
    redraw_compare(&dir).unwrap();
    let compare = |dir: &Path| std::fs::read(ChartName::Compare.path(dir, Format::Svg)).unwrap();
    assert!(compare(&dir) != compare(&first));
    std::fs::remove_file(dir.join("compare.csv")).unwrap();
    fails_naming(redraw_compare(&dir), "compare.csv");
    std::fs::remove_dir_all(&root).ok();
    std::fs::remove_dir_all(&first).ok();
}

fn interval(median: f64) -> Interval {
    Interval {
        median,
        lo: median * 0.93,
        hi: median * 1.07,
        n: 10,
        coverage: 0.9785,
    }
}

fn policy(label: &str, p99: f64) -> PolicyIntervals {
    let named = |metric: &str, i| NamedInterval {
        metric: metric.into(),
        interval: i,
    };
    PolicyIntervals {
        policy: label.into(),
        seeds: 10,
        intervals: vec![
            named("p99_ms", interval(p99)),
            named("p999_ms", interval(p99 * 2.0)),
            named("slow_share", interval(0.1 / p99)),
            named("herd", interval(1.0 + 1.0 / p99)),
            named("p99_vs_oracle", interval(p99 / 3.0)),
            named("p999_vs_oracle", interval(p99 / 2.9)),
        ],
    }
}

#[test]
fn a_redrawn_sweep_is_byte_identical() {
    let labels = ["round_robin", "od(round_robin)", "peak_ewma", "oracle"];
    let points: Vec<SweepPoint> = [2usize, 4, 9, 19]
        .iter()
        .map(|&n| SweepPoint {
            overrides: vec![
                ("fleet.main.count".into(), n.to_string()),
                ("workload.rate".into(), (100 * n).to_string()),
            ],
            backends: n + 1,
            faulty_backends: 1,
            rate: 100.0 * n as f64,
            utilization: 0.1 + 0.013 * n as f64,
            deadline_ms: Some(1000.0),
            policies: labels
                .iter()
                .map(|l| {
                    let base = if l.starts_with("od(") {
                        "round_robin"
                    } else {
                        l
                    };
                    let mut p = policy(
                        base,
                        30.0 / (1.0 + n as f64).sqrt() * (1.0 + base.len() as f64 / 7.0),
                    );
                    p.policy = l.to_string();
                    p
                })
                .collect(),
        })
        .collect();
    let sweep = Sweep {
        scenario: "one-slow-sampling".into(),
        seeds: 10,
        x: "backends".into(),
        policies: labels.iter().map(|s| s.to_string()).collect(),
        points,
    };
    let dir = temp_dir("sweep");
    let written = write_sweep_charts(&dir, &sweep).unwrap();
    assert_eq!(written.len(), 12);
    let svg = std::fs::read_to_string(ChartName::SweepP99.path(&dir, Format::Svg)).unwrap();
    assert!(svg.contains("od(round_robin) (= round_robin)"));
    assert!(svg.contains("deadline (1s)"), "the deadline is marked");
    // sweep.json as `lblab sweep` writes it.
    let json = serde_json::json!({
        "scenario": sweep.scenario,
        "seed": 1,
        "seeds": sweep.seeds,
        "confidence": 0.95,
        "axes": ["fleet.main.count", "workload.rate"],
        "x": sweep.x,
        "partial": false,
        "points": sweep.points.iter().map(|p| serde_json::json!({
            "overrides": p.overrides.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
            "backends": p.backends,
            "faulty_backends": p.faulty_backends,
            "rate": p.rate,
            "utilization": p.utilization,
            "deadline_ms": p.deadline_ms,
            "policies": p.policies,
            "partial": false,
        })).collect::<Vec<_>>(),
    });
    let again = temp_dir("sweep-again");
    std::fs::write(
        again.join("sweep.json"),
        serde_json::to_string_pretty(&json).unwrap(),
    )
    .unwrap();
    assert_eq!(redraw_sweep(&again).unwrap().len(), 12);
    same_bytes(&written, &again);
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(&again).ok();
}

#[test]
fn redrawn_grid_heatmaps_are_byte_identical() {
    let mut cells = Vec::new();
    let mut csv = String::from("decay_time,choice_count,default_rtt,decay,sampling,requests,ok,errors,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,mean_ms,slow_share,partial\n");
    for ab in ["time_weighted+distinct", "on_read+with_replacement"] {
        for n in [2u32, 3] {
            for (k, d) in ["1s", "10s"].iter().enumerate() {
                let p99 = 8.0 + n as f64 * 0.1 + k as f64 * 0.2 + ab.len() as f64 * 0.01;
                let p99: f64 = format!("{p99:.3}").parse().unwrap();
                let (decay, sampling) = ab.split_once('+').unwrap();
                csv += &format!("{d},{n},0.03s,{decay},{sampling},1,1,0,2.000,4.000,{p99:.3},20.000,80.000,2.400,0.00200,false\n");
                cells.push(GridCell {
                    decay_time: d.to_string(),
                    choice_count: n,
                    default_rtt: "0.03s".into(),
                    ablation: ab.into(),
                    p99_ms: p99,
                });
            }
        }
    }
    let dir = temp_dir("grid");
    let written = write_grid_heatmaps(&dir, "one-slow", &cells).unwrap();
    let heatmap = ChartName::GridHeatmap {
        default_rtt: "0.03s".into(),
    };
    assert!(written[0].ends_with(heatmap.file_name(Format::Png)));
    let again = temp_dir("grid-again");
    std::fs::write(again.join("sweep.csv"), csv).unwrap();
    let (mut summary, _) = support::run();
    summary.scenario = "one-slow".into();
    std::fs::write(
        again.join("summary.json"),
        serde_json::to_string(&summary).unwrap(),
    )
    .unwrap();
    redraw_grid(&again).unwrap();
    same_bytes(&written, &again);
    let svg = std::fs::read_to_string(heatmap.path(&again, Format::Svg)).unwrap();
    assert!(
        svg.contains("choices=3 on_read+with_replacement"),
        "a row label was cut"
    );
    assert!(svg.contains("log scale:"));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(&again).ok();
}

/// A forest plot of 14 rows × 4 series, some points missing.
pub fn interval_chart() -> IntervalChart {
    let rows: Vec<String> = [
        "one-slow",
        "healthy",
        "gc-pauses",
        "cpu-throttle",
        "noisy-neighbour",
        "cold-start",
        "crash-restart",
        "fail-fast",
        "heterogeneous",
        "long-streams",
        "many-clients",
        "sub-ms",
        "streaming-mix",
        "zones",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let series = [
        "least_request",
        "peak_ewma",
        "envoy_peak_ewma",
        "weighted_round_robin",
    ]
    .iter()
    .enumerate()
    .map(|(k, label)| IntervalSeries {
        label: label.to_string(),
        points: (0..rows.len())
            .map(|r| {
                (r + k != 7).then(|| {
                    let m = 0.15 + ((r * 7 + k * 3) % 11) as f64 * 0.12 / (1.0 + k as f64 * 0.3);
                    IntervalPoint {
                        median: m,
                        lo: m * 0.85,
                        hi: m * 1.2,
                    }
                })
            })
            .collect(),
    })
    .collect();
    IntervalChart {
        title: "p99 relative to round_robin (median and 95 % interval over seeds)".into(),
        x_label: "p99 / round_robin's p99".into(),
        rows,
        series,
        reference: Some(1.0),
    }
}

#[test]
fn the_interval_chart_draws_and_checks_its_input() {
    let dir = temp_dir("interval");
    let chart = interval_chart();
    let paths = write_interval_chart(&dir.join("headline"), &chart).unwrap();
    assert_eq!(paths.len(), 2);
    let svg = std::fs::read_to_string(&paths[1]).unwrap();
    for s in [
        "one-slow",
        "zones",
        "peak_ewma",
        "reference (1)",
        "0.2",
        "0.5",
        "1",
    ] {
        assert!(
            svg.contains(&format!(">{s}<"))
                || svg.contains(&format!(">\n{s}\n<"))
                || svg.contains(s),
            "no {s:?}"
        );
    }
    let again = write_interval_chart(&dir.join("again"), &chart).unwrap();
    assert!(std::fs::read(&paths[0]).unwrap() == std::fs::read(&again[0]).unwrap());
    let mut bad = chart.clone();
    bad.series[1].points.pop();
    let err = write_interval_chart(&dir.join("bad"), &bad).unwrap_err();
    assert!(matches!(err, ReportError::InvalidInput { .. }), "{err:?}");
    assert!(err.to_string().contains("13 points for 14 rows"), "{err}");
    if let Some(out) = std::env::var_os("LBLAB_PREVIEW") {
        write_interval_chart(&Path::new(&out).join("interval"), &chart).unwrap();
    }
    std::fs::remove_dir_all(&dir).ok();
}
