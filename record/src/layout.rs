//! The results tree, named once: which folder holds which run, and what each file is called.
//! The CLI writes by it and the reports and the evidence documents read by it.
//!
//! ```text
//! <scenario folder>/          results/<scenario>/ (committed) or lblab-out/<file stem>/ (scratch)
//!   sim/                      a run folder: summary.json, summary.csv, timeseries.csv,
//!                             failures.csv, <policy>.hlog, <policy>.hgrm, charts;
//!                             intervals.csv, seeds.csv
//!   real/  loadgen/           run folders of the real harness and the load generator
//!                             (real/ also harness.json)
//!   sweep/                    a sweep: sweep.csv, summary.json (a grid) or sweep.json, runs.csv
//!   compare/                  sim/ and real/ run folders of the same length, compare.csv
//!   real-repeat/run-<n>/      repeated real runs
//! ```
//!
//! A scratch `lblab compare` uses `lblab-out/<file stem>/compare/`, so that a `lblab sim` or
//! `lblab real` of the same scenario (into `sim/`, `real/`) never writes into a comparison's
//! folders.

use std::path::{Path, PathBuf};

/// `summary.json`: the [`RunSummary`](super::RunSummary).
pub const SUMMARY_JSON: &str = "summary.json";
/// `summary.csv`: one [`SummaryRow`](super::SummaryRow) per policy.
pub const SUMMARY_CSV: &str = "summary.csv";
/// `timeseries.csv`: per policy and second.
pub const TIMESERIES_CSV: &str = "timeseries.csv";
/// `failures.csv`: failed calls per policy, second and backend.
pub const FAILURES_CSV: &str = "failures.csv";
/// `targets.csv`: a load-generator run's calls per policy and target.
pub const TARGETS_CSV: &str = "targets.csv";
/// `statuses.csv`: a load-generator run's calls per policy, gRPC status and message.
pub const STATUSES_CSV: &str = "statuses.csv";
/// `report.html`: a load-generator run's tables and charts in one self-contained page.
pub const REPORT_HTML: &str = "report.html";
/// `harness.json`: the real harness's own measurements.
pub const HARNESS_JSON: &str = "harness.json";
/// `compare.csv`: a [`CompareRow`](super::CompareRow) per policy.
pub const COMPARE_CSV: &str = "compare.csv";
/// `intervals.csv`: medians and intervals over seeds.
pub const INTERVALS_CSV: &str = "intervals.csv";
/// `seeds.csv`: every seed's run.
pub const SEEDS_CSV: &str = "seeds.csv";
/// `sweep.csv`: one row per sweep point and policy.
pub const SWEEP_CSV: &str = "sweep.csv";
/// `sweep.json`: a sweep over scenario fields.
pub const SWEEP_JSON: &str = "sweep.json";
/// `runs.csv`: every run of a sweep.
pub const RUNS_CSV: &str = "runs.csv";

/// Where ad-hoc runs write by default (ignored by git), so that they never overwrite the
/// committed evidence in `results/`.
pub const SCRATCH: &str = "lblab-out";

/// A folder of results about one scenario (or a compare folder, which holds `sim/`, `real/`
/// and `compare.csv` the same way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The folder at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Layout {
        Layout { root: root.into() }
    }

    /// `lblab-out/<file stem>` for the scenario file `file`: named after the file, so that a copy
    /// of a scenario that keeps its `name` does not overwrite the original's results.
    pub fn scratch(file: &Path) -> Layout {
        let stem = file
            .file_stem()
            .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
        Layout::new(Path::new(SCRATCH).join(stem))
    }

    /// The folder itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The simulated run.
    pub fn sim(&self) -> PathBuf {
        self.root.join("sim")
    }

    /// The real harness's run.
    pub fn real(&self) -> PathBuf {
        self.root.join("real")
    }

    /// The load generator's run against servers elsewhere.
    pub fn loadgen(&self) -> PathBuf {
        self.root.join("loadgen")
    }

    /// The sweep.
    pub fn sweep(&self) -> PathBuf {
        self.root.join("sweep")
    }

    /// The compare folder of a scenario folder.
    pub fn compare(&self) -> Layout {
        Layout::new(self.root.join("compare"))
    }

    /// This (compare) folder's `compare.csv`.
    pub fn compare_csv(&self) -> PathBuf {
        self.root.join(COMPARE_CSV)
    }

    /// The folder of the repeated real runs.
    pub fn real_repeat(&self) -> PathBuf {
        self.root.join("real-repeat")
    }

    /// The run folder of a command, by its name (`sim`, `real`, `loadgen`, `sweep`).
    pub fn run(&self, command: &str) -> PathBuf {
        self.root.join(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_folders_are_named_after_the_scenario_file() {
        let l = Layout::scratch(Path::new("scenarios/one-slow.toml"));
        assert_eq!(l.root(), Path::new("lblab-out/one-slow"));
        assert_eq!(l.sim(), Path::new("lblab-out/one-slow/sim"));
        let c = Layout::new("results/one-slow").compare();
        assert_eq!(c.real(), Path::new("results/one-slow/compare/real"));
        assert_eq!(
            c.compare_csv(),
            Path::new("results/one-slow/compare/compare.csv")
        );
    }
}
