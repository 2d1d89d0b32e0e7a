//! Reading the committed result files into [`Evidence`]: nothing here computes a finding, it only
//! reads what the runs wrote.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lblab_model::Scenario;
use lblab_record::{layout, Layout, RunSummary};
use lblab_stats::Interval;
use serde::Deserialize;

use crate::EvidenceError;

/// Everything the documents are generated from.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// One entry per scenario file, in file-name order.
    pub scenarios: Vec<ScenarioResults>,
    /// The committed sweeps (`results/sweeps/<name>/`), by folder name.
    pub sweeps: BTreeMap<String, Sweep>,
    /// The design search's sets (`results/design/candidates/<name>/sweep.csv`), by folder name.
    pub design: BTreeMap<String, Sweep>,
    /// The repeated real runs of one scenario (`results/<name>/real-repeat/range.csv`).
    pub repeats: BTreeMap<String, Vec<RepeatRow>>,
    /// Warm-up and measured seconds of those runs (from `real-repeat/run-1/summary.json`).
    pub repeat_lengths: BTreeMap<String, (f64, f64)>,
    /// Pick-time benchmark medians (`results/bench/policy-pick.csv`).
    pub pick_bench: Vec<PickBench>,
    /// Pick + completion over one picker shared by several threads
    /// (`results/bench/shared-pick.csv`).
    pub shared_pick: Vec<SharedPick>,
    /// Bytes per endpoint of every policy (`results/bench/memory.csv`).
    pub memory: Vec<MemoryRow>,
    /// Runs made to explain an anomaly (`results/anomalies/<name>/`, or one level deeper).
    pub anomalies: Vec<Anomaly>,
    /// gRPC's own clients beside lblab's on one fleet (`results/interop/{python,node,go,java}.csv`).
    pub interop: Vec<InteropRow>,
}

/// One row of `results/interop/<client>.csv`: a policy of a real gRPC client (grpcio, grpc-js,
/// grpc-go, grpc-java) and lblab's implementation of it, on the same fleet, one after the other.
/// The go and java files have p99.9 columns too, which this does not read.
#[derive(Debug, Clone, Deserialize)]
pub struct InteropRow {
    /// `grpcio`, `grpc-js`, `grpc-go` or `grpc-java`.
    pub client: String,
    /// Its version.
    pub version: String,
    /// Scenario.
    pub scenario: String,
    /// The client's policy (`peak_ewma_experimental (port)` is one of lblab's ports).
    pub policy: String,
    /// lblab's policy it is compared with.
    pub lblab_policy: String,
    /// The backend group whose share is compared, e.g. `slow/`.
    pub slow_group: String,
    /// The client's share of calls to that group.
    pub share: f64,
    /// lblab's.
    pub lblab_share: f64,
    /// The client's p50, ms.
    pub p50_ms: f64,
    /// lblab's p50, ms.
    pub lblab_p50_ms: f64,
    /// The client's p99, ms.
    pub p99_ms: f64,
    /// lblab's p99, ms.
    pub lblab_p99_ms: f64,
    /// Whether the p50s agree (lblab's rule).
    pub p50_agrees: bool,
    /// Whether the p99s agree.
    pub p99_agrees: bool,
    /// Whether the shares agree (within 3 points).
    pub shares_agree: bool,
}

/// A run kept as the evidence behind an explanation.
#[derive(Debug, Clone)]
pub struct Anomaly {
    /// Folder below `results/anomalies/`, e.g. `crash-restart-tower`.
    pub name: String,
    /// Its summary.
    pub summary: RunSummary,
    /// Its failures per backend and second (`failures.csv`), if written.
    pub failures: Vec<FailureRow>,
}

/// One row of `failures.csv`: one policy's failed calls at one backend in one second.
#[derive(Debug, Clone, Deserialize)]
pub struct FailureRow {
    /// Policy label.
    pub policy: String,
    /// Second of the run (warm-up included).
    pub second: u64,
    /// Backend name.
    pub backend: String,
    /// Calls that failed.
    pub errors: u64,
    /// Of those, deadlines exceeded.
    pub deadline_exceeded: u64,
    /// Mean latency of the failed calls (ms).
    pub error_mean_ms: f64,
}

/// One scenario's committed results.
#[derive(Debug, Clone)]
pub struct ScenarioResults {
    /// Scenario name (its results folder).
    pub name: String,
    /// The scenario file, relative to the project root.
    pub file: String,
    /// What the scenario models (its `description`, or its opening comment).
    pub description: String,
    /// The parsed scenario.
    pub scenario: Scenario,
    /// The full-length simulated run of the base seed (`sim/summary.json`).
    pub sim: Option<RunSummary>,
    /// Medians and intervals over seeds (`sim/intervals.csv`).
    pub intervals: Option<Intervals>,
    /// The real run and the simulated run of the same length (`compare/`).
    pub compare: Option<Compared>,
    /// Charts of a grid sweep of this scenario (`sweep/*.png`), relative to its folder.
    pub sweep_charts: Vec<String>,
}

/// `lblab compare`'s output for one scenario.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The real run (`compare/real/summary.json`).
    pub real: RunSummary,
    /// The simulated run of the same length and seed (`compare/sim/summary.json`).
    pub sim: RunSummary,
    /// Per policy: the sim-vs-real rows (`compare/compare.csv`).
    pub rows: Vec<CompareRow>,
    /// The harness's own measurements (`compare/real/harness.json`), if present.
    pub harness: Option<Harness>,
    /// The real run's failures per backend and second (`compare/real/failures.csv`), if written.
    pub failures: Vec<FailureRow>,
    /// The real run's per-second rows (`compare/real/timeseries.csv`).
    pub timeseries: Vec<lblab_record::TimeseriesRow>,
}

/// One row of `compare.csv` (the model's schema, which `lblab compare` writes).
pub use lblab_record::CompareRow;

/// `harness.json`, in the schema the harness writes.
pub use lblab_record::HarnessSummary as Harness;

/// `intervals.csv`: per policy and metric, the median over seeds and its interval.
#[derive(Debug, Clone, Default)]
pub struct Intervals {
    /// Policies in file order.
    pub policies: Vec<String>,
    values: BTreeMap<(String, String), Interval>,
}

impl Intervals {
    /// The interval of `metric` for `policy`.
    pub fn get(&self, policy: &str, metric: &str) -> Option<Interval> {
        self.values
            .get(&(policy.to_string(), metric.to_string()))
            .copied()
    }
    /// Seeds behind the intervals (of the first row).
    pub fn seeds(&self) -> usize {
        self.values.values().next().map_or(0, |i| i.n)
    }
}

/// A sweep folder: `sweep.csv` as rows of named columns.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// Folder name.
    pub name: String,
    /// The varied paths (the columns before `backends`).
    pub axes: Vec<String>,
    /// Rows: one per point and policy.
    pub rows: Vec<BTreeMap<String, String>>,
}

impl Sweep {
    /// Points in file order, as the value of `column` (e.g. `backends`).
    pub fn points(&self, column: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.rows {
            if let Some(v) = r.get(column) {
                if !out.contains(v) {
                    out.push(v.clone());
                }
            }
        }
        out
    }
    /// The interval of `metric` for `policy` at the point where `column` = `value`.
    pub fn get(&self, column: &str, value: &str, policy: &str, metric: &str) -> Option<Interval> {
        let row = self.rows.iter().find(|r| {
            r.get(column).map(String::as_str) == Some(value)
                && r.get("policy").map(String::as_str) == Some(policy)
        })?;
        let num = |k: &str| row.get(k).and_then(|v| v.parse::<f64>().ok());
        Some(Interval {
            median: num(metric)?,
            lo: num(&format!("{metric}_lo"))?,
            hi: num(&format!("{metric}_hi"))?,
            n: num("seeds")? as usize,
            coverage: f64::NAN,
        })
    }
    /// Seeds per point (of the first row).
    pub fn seeds(&self) -> usize {
        self.rows
            .first()
            .and_then(|r| r.get("seeds"))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

/// One row of a repeated real run's `range.csv`.
#[derive(Debug, Clone, Deserialize)]
pub struct RepeatRow {
    /// Policy label.
    pub policy: String,
    /// Runs behind the range.
    pub runs: usize,
    /// p99 range (ms).
    pub p99_ms_min: f64,
    /// p99 range (ms).
    pub p99_ms_max: f64,
    /// p99.9 range (ms).
    pub p999_ms_min: f64,
    /// p99.9 range (ms).
    pub p999_ms_max: f64,
}

/// One row of `policy-pick.csv`.
#[derive(Debug, Clone, Deserialize)]
pub struct PickBench {
    /// Policy benchmarked.
    pub bench: String,
    /// READY endpoints.
    pub endpoints: usize,
    /// Median ns per pick and completion.
    pub median_ns: f64,
}

/// One row of `shared-pick.csv`.
#[derive(Debug, Clone, Deserialize)]
pub struct SharedPick {
    /// Policy benchmarked.
    pub policy: String,
    /// Threads picking at once.
    pub threads: u32,
    /// READY endpoints.
    pub endpoints: usize,
    /// Median ns per pick and completion (all threads' wall time over their calls).
    pub median_ns: f64,
    /// The same over round_robin's at the same threads and endpoints.
    pub vs_round_robin: Option<f64>,
}

/// One row of `memory.csv`.
#[derive(Debug, Clone, Deserialize)]
pub struct MemoryRow {
    /// Policy measured.
    pub policy: String,
    /// `sans-io` (the policy as the simulator runs it) or `shared` (the threaded picker).
    pub kind: String,
    /// Bytes allocated per endpoint at 10,000 endpoints.
    pub bytes_per_endpoint: f64,
}

fn read_text(path: &Path) -> Result<Option<String>, EvidenceError> {
    match lblab_record::read_result_file(path) {
        Ok(text) => Ok(Some(text)),
        Err(lblab_model::FileError::Io { source, .. })
            if matches!(
                source.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(lblab_model::FileError::Io { source, .. }) => Err(EvidenceError::io(path, source)),
        Err(other) => Err(EvidenceError::parse(path, other.to_string())),
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, EvidenceError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| EvidenceError::parse(path, e))
}

fn read_csv<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<Vec<T>>, EvidenceError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for (i, row) in reader.deserialize().enumerate() {
        rows.push(row.map_err(|e| EvidenceError::parse(path, format!("row {}: {e}", i + 2)))?);
    }
    Ok(Some(rows))
}

fn read_timeseries(path: &Path) -> Result<Vec<lblab_record::TimeseriesRow>, EvidenceError> {
    if read_text(path)?.is_none() {
        return Ok(Vec::new());
    }
    Ok(lblab_record::read_timeseries(path)?)
}

fn read_intervals(path: &Path) -> Result<Option<Intervals>, EvidenceError> {
    #[derive(Deserialize)]
    struct Row {
        policy: String,
        metric: String,
        median: f64,
        lo: f64,
        hi: f64,
        seeds: usize,
        coverage: f64,
    }
    let Some(rows) = read_csv::<Row>(path)? else {
        return Ok(None);
    };
    let mut out = Intervals::default();
    for r in rows {
        if !out.policies.contains(&r.policy) {
            out.policies.push(r.policy.clone());
        }
        out.values.insert(
            (r.policy, r.metric),
            Interval {
                median: r.median,
                lo: r.lo,
                hi: r.hi,
                n: r.seeds,
                coverage: r.coverage,
            },
        );
    }
    Ok(Some(out))
}

fn read_sweep(dir: &Path) -> Result<Option<Sweep>, EvidenceError> {
    let path = dir.join(layout::SWEEP_CSV);
    let Some(text) = read_text(&path)? else {
        return Ok(None);
    };
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| EvidenceError::parse(&path, e))?
        .clone();
    let axes = headers
        .iter()
        .take_while(|h| *h != "backends")
        .map(str::to_string)
        .collect();
    let mut rows = Vec::new();
    for (i, rec) in reader.records().enumerate() {
        let rec = rec.map_err(|e| EvidenceError::parse(&path, format!("row {}: {e}", i + 2)))?;
        rows.push(
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect(),
        );
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Some(Sweep { name, axes, rows }))
}

/// The opening comment block of a scenario file (its `# ...` lines before the first key), joined.
pub fn opening_comment(toml_text: &str) -> String {
    toml_text
        .lines()
        .take_while(|l| l.trim_start().starts_with('#') || l.trim().is_empty())
        .filter_map(|l| l.trim_start().strip_prefix('#'))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join(" ")
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, EvidenceError> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| EvidenceError::io(dir, source))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    out.sort();
    Ok(out)
}

impl Evidence {
    /// Reads every scenario in `scenarios` (its `*.toml` files) and its results under `results`,
    /// plus the sweeps, repeated real runs and benchmarks. `root` is the project root the file
    /// names in the documents are relative to. A missing result is `None`; a present but unreadable
    /// one is an error naming the file.
    pub fn load(root: &Path, scenarios: &str, results: &str) -> Result<Evidence, EvidenceError> {
        let results_dir = root.join(results);
        let mut out = Evidence {
            scenarios: Vec::new(),
            sweeps: BTreeMap::new(),
            design: BTreeMap::new(),
            repeats: BTreeMap::new(),
            repeat_lengths: BTreeMap::new(),
            pick_bench: Vec::new(),
            shared_pick: Vec::new(),
            memory: Vec::new(),
            anomalies: Vec::new(),
            interop: Vec::new(),
        };
        for file in sorted_entries(&root.join(scenarios))? {
            if file.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let text = read_text(&file)?.unwrap_or_default();
            let scenario =
                Scenario::parse(&text).map_err(|e| e.in_file(&file.display().to_string()))?;
            let name = scenario.file.name.clone();
            if let Some(other) = out.scenarios.iter().find(|s| s.name == name) {
                return Err(EvidenceError::parse(
                    &file,
                    format!(
                        "`name`: {name:?} is also the name of {}: both would be documented from \
                         {results}/{name}/; give each scenario its own name",
                        other.file
                    ),
                ));
            }
            let description = if scenario.file.description.trim().is_empty() {
                opening_comment(&text)
            } else {
                scenario.file.description.trim().to_string()
            };
            let layout = Layout::new(results_dir.join(&name));
            let dir = layout.root();
            let compared = layout.compare();
            let (real_dir, sim_dir) = (compared.real(), compared.sim());
            let compare = match (
                read_json::<RunSummary>(&real_dir.join(layout::SUMMARY_JSON))?,
                read_json::<RunSummary>(&sim_dir.join(layout::SUMMARY_JSON))?,
                read_csv::<CompareRow>(&compared.compare_csv())?,
            ) {
                (Some(real), Some(sim), Some(rows)) => Some(Compared {
                    real,
                    sim,
                    rows,
                    harness: read_json(&real_dir.join(layout::HARNESS_JSON))?,
                    failures: read_csv(&real_dir.join(layout::FAILURES_CSV))?.unwrap_or_default(),
                    timeseries: read_timeseries(&real_dir.join(layout::TIMESERIES_CSV))?,
                }),
                _ => None,
            };
            let repeats = layout.real_repeat();
            if let Some(rows) = read_csv::<RepeatRow>(&repeats.join(crate::links::RANGE_CSV))? {
                out.repeats.insert(name.clone(), rows);
                if let Some(run) =
                    read_json::<RunSummary>(&repeats.join("run-1").join(layout::SUMMARY_JSON))?
                {
                    let rate = scenario.file.workload.rate;
                    let measured = if run.measured_s > 0.0 {
                        run.measured_s
                    } else {
                        run.rows
                            .first()
                            .map_or(f64::NAN, |r| (r.requests as f64 / rate).round())
                    };
                    out.repeat_lengths
                        .insert(name.clone(), (run.warmup_s, measured));
                }
            }
            let sweep_dir = layout.sweep();
            let sweep_charts = if sweep_dir.is_dir() {
                sorted_entries(&sweep_dir)?
                    .into_iter()
                    .filter(|p| p.extension().is_some_and(|x| x == "png"))
                    .filter_map(|p| Some(format!("sweep/{}", p.file_name()?.to_str()?)))
                    .collect()
            } else {
                Vec::new()
            };
            out.scenarios.push(ScenarioResults {
                sweep_charts,
                file: format!(
                    "{scenarios}/{}",
                    file.file_name().unwrap_or_default().to_string_lossy()
                ),
                description,
                sim: read_json(&dir.join("sim/summary.json"))?,
                intervals: read_intervals(&dir.join("sim/intervals.csv"))?,
                compare,
                scenario,
                name,
            });
        }
        let sweeps = results_dir.join(crate::links::SWEEPS);
        if sweeps.is_dir() {
            for dir in sorted_entries(&sweeps)?.into_iter().filter(|d| d.is_dir()) {
                if let Some(sweep) = read_sweep(&dir)? {
                    out.sweeps.insert(sweep.name.clone(), sweep);
                }
            }
        }
        let design = results_dir.join(crate::links::DESIGN_CANDIDATES);
        if design.is_dir() {
            for dir in sorted_entries(&design)?.into_iter().filter(|d| d.is_dir()) {
                if let Some(sweep) = read_sweep(&dir)? {
                    out.design.insert(sweep.name.clone(), sweep);
                }
            }
        }
        out.pick_bench =
            read_csv(&results_dir.join(crate::links::PICK_BENCH_CSV))?.unwrap_or_default();
        out.shared_pick = read_csv(&results_dir.join("bench/shared-pick.csv"))?.unwrap_or_default();
        out.memory = read_csv(&results_dir.join("bench/memory.csv"))?.unwrap_or_default();
        for client in ["python", "node", "go", "java"] {
            let file = results_dir
                .join(crate::links::INTEROP)
                .join(format!("{client}.csv"));
            out.interop
                .extend(read_csv::<InteropRow>(&file)?.unwrap_or_default());
        }
        let anomalies = results_dir.join("anomalies");
        if anomalies.is_dir() {
            for dir in sorted_entries(&anomalies)?
                .into_iter()
                .filter(|d| d.is_dir())
            {
                let dirs = if dir.join(layout::SUMMARY_JSON).is_file() {
                    vec![dir.clone()]
                } else {
                    sorted_entries(&dir)?
                        .into_iter()
                        .filter(|d| d.is_dir())
                        .collect()
                };
                for d in dirs {
                    let Some(summary) = read_json::<RunSummary>(&d.join(layout::SUMMARY_JSON))?
                    else {
                        continue;
                    };
                    let name = d
                        .strip_prefix(&anomalies)
                        .map(|p| p.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    out.anomalies.push(Anomaly {
                        name,
                        summary,
                        failures: read_csv(&d.join(layout::FAILURES_CSV))?.unwrap_or_default(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The scenario called `name`.
    pub fn scenario(&self, name: &str) -> Option<&ScenarioResults> {
        self.scenarios.iter().find(|s| s.name == name)
    }

    /// The interval of `metric` for `policy` in scenario `name`'s multi-seed simulation.
    pub fn interval(&self, name: &str, policy: &str, metric: &str) -> Option<Interval> {
        self.scenario(name)?.intervals.as_ref()?.get(policy, metric)
    }
}
