//! Redrawing charts from a results folder's files alone, so that chart fixes reach committed
//! runs without running them again. Each function reads only the folder's data files and writes
//! the same charts the run wrote: given the same files, byte-identical ones.

use std::path::{Path, PathBuf};

use lblab_record::layout;
use lblab_record::{file_stem, read_timeseries, RunSummary};
use lblab_stats::PolicyIntervals;
use serde::de::DeserializeOwned;

use crate::chart::compare::{write_compare_chart, ComparePoint};
use crate::chart::run_data::{histogram_from_hlog, PolicyData};
use crate::grid::{write_grid_heatmaps, GridCell};
use crate::name::ChartName;
use crate::run::write_run_data;
use crate::sweep::{write_sweep_charts, Sweep, SweepPoint};
use crate::ReportError;

fn read_err(file: &Path, message: impl Into<String>) -> ReportError {
    ReportError::Read {
        file: file.to_path_buf(),
        message: message.into(),
    }
}

/// The text of `file`; a missing file is an error naming it.
fn read_text(file: &Path) -> Result<String, ReportError> {
    lblab_record::read_result_file(file).map_err(|e| match e {
        lblab_record::FileError::Io { source, .. }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            read_err(file, "missing")
        }
        lblab_record::FileError::Io { source, .. } => read_err(file, source.to_string()),
        other => read_err(file, other.to_string()),
    })
}

fn read_json<T: DeserializeOwned>(file: &Path) -> Result<T, ReportError> {
    serde_json::from_str(&read_text(file)?).map_err(|e| read_err(file, e.to_string()))
}

/// Redraws a run folder's charts (`spectrum`, `p99_over_time`, `traffic_share`, PNG and SVG)
/// from its `summary.json`, `timeseries.csv` and one `<policy>.hlog` per policy of the summary
/// (named by [`file_stem`]); returns the paths written. A missing or unreadable file is a
/// [`ReportError::Read`] naming it.
pub fn redraw_run(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let summary: RunSummary = read_json(&dir.join(layout::SUMMARY_JSON))?;
    let ts = dir.join(layout::TIMESERIES_CSV);
    if !ts.is_file() {
        return Err(read_err(&ts, "missing"));
    }
    let rows = read_timeseries(&ts).map_err(|e| read_err(&ts, e.to_string()))?;
    let data = summary
        .rows
        .iter()
        .map(|r| {
            let file = dir.join(format!("{}.hlog", file_stem(&r.policy)));
            Ok(PolicyData {
                label: r.policy.clone(),
                timeseries: rows
                    .iter()
                    .filter(|t| t.policy == r.policy)
                    .cloned()
                    .collect(),
                histogram: histogram_from_hlog(
                    &read_text(&file)?,
                    &r.policy,
                    summary.warmup_s,
                    &file,
                )?,
            })
        })
        .collect::<Result<Vec<_>, ReportError>>()?;
    write_run_data(dir, &summary, &data)
}

/// A CSV's rows as (header → value) lookups.
fn read_csv(file: &Path, bytes: &[u8]) -> Result<Vec<Vec<(String, String)>>, ReportError> {
    let mut reader = csv::Reader::from_reader(bytes);
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| read_err(file, e.to_string()))?
        .iter()
        .map(str::to_string)
        .collect();
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| read_err(file, e.to_string()))?;
        rows.push(
            headers
                .iter()
                .cloned()
                .zip(rec.iter().map(str::to_string))
                .collect(),
        );
    }
    Ok(rows)
}

fn field<'a>(row: &'a [(String, String)], name: &str) -> Option<&'a str> {
    row.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn number(file: &Path, row: &[(String, String)], name: &str) -> Result<f64, ReportError> {
    let v = field(row, name).ok_or_else(|| read_err(file, format!("no column {name}")))?;
    if v.is_empty() {
        return Ok(f64::NAN);
    }
    v.parse()
        .map_err(|_| read_err(file, format!("{name} {v:?} is not a number")))
}

/// Redraws `compare.{png,svg}` of a compare folder (`results/<scenario>/compare`) from its
/// `compare.csv` (the scenario's name from `sim/summary.json`, or `real/summary.json`), adding
/// when they exist the simulated p99's confidence interval from the scenario's multi-seed run
/// (`../sim/intervals.csv`, metric `p99_ms`) and the range of the real p99 over the compare run
/// and the repeated real runs of the same length (`../real-repeat/run-*/summary.json`). Without
/// those files the chart is byte-identical to the one `lblab compare` drew.
pub fn redraw_compare(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let csv_path = dir.join(layout::COMPARE_CSV);
    let bytes = read_text(&csv_path)?;
    let sim_summary = dir.join("sim").join(layout::SUMMARY_JSON);
    let real_summary = dir.join("real").join(layout::SUMMARY_JSON);
    let summary: RunSummary = if sim_summary.is_file() {
        read_json(&sim_summary)?
    } else {
        read_json(&real_summary)?
    };
    redraw_compare_from(dir, &summary.scenario, bytes.as_bytes(), true)
}

/// Draws `<dir>/compare.{png,svg}` from the text of a `compare.csv`, titled by `scenario`; with
/// `extras`, also the intervals [`redraw_compare`] describes. (What `lblab compare` calls, so that
/// its chart and a redrawn one are the same.)
#[doc(hidden)]
pub fn redraw_compare_from(
    dir: &Path,
    scenario: &str,
    csv_text: &[u8],
    extras: bool,
) -> Result<Vec<PathBuf>, ReportError> {
    let csv_path = dir.join(layout::COMPARE_CSV);
    let rows = read_csv(&csv_path, csv_text)?;
    let sim_intervals = if extras {
        sim_p99_intervals(&dir.join("..").join("sim").join(layout::INTERVALS_CSV))?
    } else {
        Vec::new()
    };
    let repeats = if extras {
        real_repeats(dir)?
    } else {
        Vec::new()
    };
    let mut points = Vec::new();
    for row in &rows {
        let policy = field(row, "policy")
            .ok_or_else(|| read_err(&csv_path, "no column policy"))?
            .to_string();
        let real_p99_ms = number(&csv_path, row, "real_p99_ms")?;
        let real_requests = field(row, "real_requests").and_then(|v| v.parse::<u64>().ok());
        let mut range: Option<(f64, f64)> = None;
        for run in &repeats {
            if let Some(r) = run
                .rows
                .iter()
                .find(|r| r.policy == policy && Some(r.requests) == real_requests)
            {
                let (a, b) = range.unwrap_or((real_p99_ms, real_p99_ms));
                range = Some((a.min(r.p99_ms), b.max(r.p99_ms)));
            }
        }
        points.push(ComparePoint {
            sim_p99_interval: sim_intervals
                .iter()
                .find(|(p, _)| *p == policy)
                .map(|(_, i)| *i),
            real_p99_range: range,
            sim_p50_ms: number(&csv_path, row, "sim_p50_ms")?,
            sim_p99_ms: number(&csv_path, row, "sim_p99_ms")?,
            real_p50_ms: number(&csv_path, row, "real_p50_ms")?,
            real_p99_ms,
            policy,
        });
    }
    let title = format!("{scenario}: simulated vs real latency");
    write_compare_chart(&dir.join(ChartName::Compare.stem()), &title, &points)
}

/// A policy label and an interval, ms.
type PolicyRange = (String, (f64, f64));

/// Per policy, the `p99_ms` interval of an `intervals.csv`; none when the file does not exist.
fn sim_p99_intervals(file: &Path) -> Result<Vec<PolicyRange>, ReportError> {
    if !file.is_file() {
        return Ok(Vec::new());
    }
    let text = read_text(file)?;
    let mut out = Vec::new();
    for row in read_csv(file, text.as_bytes())? {
        if field(&row, "metric") == Some("p99_ms") {
            let policy = field(&row, "policy").unwrap_or_default().to_string();
            out.push((
                policy,
                (number(file, &row, "lo")?, number(file, &row, "hi")?),
            ));
        }
    }
    Ok(out)
}

/// The summaries of `<dir>/../real-repeat/run-*/`, in name order; none when there are none.
fn real_repeats(dir: &Path) -> Result<Vec<RunSummary>, ReportError> {
    let base = dir.join("..").join("real-repeat");
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Ok(Vec::new());
    };
    let mut runs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("run-"))
        })
        .collect();
    runs.sort();
    runs.iter()
        .map(|r| read_json(&r.join(layout::SUMMARY_JSON)))
        .collect()
}

/// Redraws the charts of a scenario-space sweep folder (`lblab sweep --vary`, e.g.
/// `results/sweeps/<name>/`) from its `sweep.json`; returns the paths written.
pub fn redraw_sweep(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let file = dir.join(layout::SWEEP_JSON);
    let json: serde_json::Value = read_json(&file)?;
    let bad = |what: &str| read_err(&file, format!("{what} missing or malformed"));
    let points_json = json["points"].as_array().ok_or_else(|| bad("points"))?;
    let mut points = Vec::with_capacity(points_json.len());
    for p in points_json {
        let overrides = p["overrides"]
            .as_object()
            .ok_or_else(|| bad("overrides"))?
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), v)
            })
            .collect();
        let policies: Vec<PolicyIntervals> = serde_json::from_value(p["policies"].clone())
            .map_err(|e| read_err(&file, format!("policies: {e}")))?;
        points.push(SweepPoint {
            overrides,
            backends: p["backends"].as_u64().ok_or_else(|| bad("backends"))? as usize,
            faulty_backends: p["faulty_backends"]
                .as_u64()
                .ok_or_else(|| bad("faulty_backends"))? as usize,
            rate: p["rate"].as_f64().ok_or_else(|| bad("rate"))?,
            utilization: p["utilization"]
                .as_f64()
                .ok_or_else(|| bad("utilization"))?,
            deadline_ms: p["deadline_ms"].as_f64(),
            policies,
        });
    }
    let sweep = Sweep {
        scenario: json["scenario"]
            .as_str()
            .ok_or_else(|| bad("scenario"))?
            .to_string(),
        seeds: json["seeds"].as_u64().ok_or_else(|| bad("seeds"))?,
        x: json["x"].as_str().ok_or_else(|| bad("x"))?.to_string(),
        policies: points
            .first()
            .map(|p| p.policies.iter().map(|i| i.policy.clone()).collect())
            .unwrap_or_default(),
        points,
    };
    write_sweep_charts(dir, &sweep)
}

/// Redraws the heatmaps of a peak-EWMA parameter grid folder (`lblab sweep` without `--vary`,
/// e.g. `results/one-slow/sweep/`) from its `sweep.csv` and `summary.json` (for the scenario's
/// name); returns the paths written.
pub fn redraw_grid(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let summary: RunSummary = read_json(&dir.join(layout::SUMMARY_JSON))?;
    let file = dir.join(layout::SWEEP_CSV);
    let text = read_text(&file)?;
    let mut cells = Vec::new();
    for row in read_csv(&file, text.as_bytes())? {
        let get = |name: &str| {
            field(&row, name)
                .map(str::to_string)
                .ok_or_else(|| read_err(&file, format!("no column {name}")))
        };
        let (decay, sampling) = (get("decay")?, get("sampling")?);
        let choice = get("choice_count")?;
        cells.push(GridCell {
            decay_time: get("decay_time")?,
            choice_count: choice
                .parse()
                .map_err(|_| read_err(&file, format!("choice_count {choice:?}")))?,
            default_rtt: get("default_rtt")?,
            ablation: if sampling.is_empty() {
                decay
            } else {
                format!("{decay}+{sampling}")
            },
            p99_ms: number(&file, &row, "p99_ms")?,
        });
    }
    write_grid_heatmaps(dir, &summary.scenario, &cells)
}

/// Redraws whatever charts the folder holds the data of: a compare folder (`compare.csv`), a
/// sweep (`sweep.json`), a parameter grid (`sweep.csv` and `summary.json`) or a run
/// (`summary.json` and `timeseries.csv`). Fails naming `summary.json` when it is none of these.
pub fn redraw(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    if dir.join(layout::COMPARE_CSV).is_file() && dir.join("sim").is_dir() {
        redraw_compare(dir)
    } else if dir.join(layout::SWEEP_JSON).is_file() {
        redraw_sweep(dir)
    } else if dir.join(layout::SWEEP_CSV).is_file() && dir.join(layout::SUMMARY_JSON).is_file() {
        redraw_grid(dir)
    } else {
        redraw_run(dir)
    }
}
