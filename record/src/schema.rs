//! The types a results folder holds, as they are serialized: `summary.json` and `summary.csv`
//! ([`RunSummary`], [`SummaryRow`]), `timeseries.csv` ([`TimeseriesRow`]) and `failures.csv`
//! ([`FailureRow`]).

use serde::{Deserialize, Serialize};

use super::PolicyResult;
use crate::FileError;

/// One row of `summary.csv` / `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// Policy label.
    pub policy: String,
    /// Requests intended after warm-up: `ok + errors + dropped`.
    pub requests: u64,
    /// Completed OK.
    pub ok: u64,
    /// Failed (any non-OK status, including deadline exceeded).
    pub errors: u64,
    /// Of `errors`, DEADLINE_EXCEEDED.
    pub deadline_exceeded: u64,
    /// Not sent.
    pub dropped: u64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Maximum, ms.
    pub max_ms: f64,
    /// Mean, ms.
    pub mean_ms: f64,
    /// Share of sent requests that went to a backend while a fault was active on it.
    pub slow_share: f64,
    /// Harness incidents during this policy's run (always 0 in the simulator): when not 0 the
    /// row is affected by something other than the scenario, listed in
    /// [`RunSummary::incidents`].
    #[serde(default)]
    pub incidents: u64,
}

/// One row of `timeseries.csv`: one policy, one second (by completion time for latency, by send
/// time for traffic shares). A second in which the policy sent nothing and nothing completed has
/// no row.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeseriesRow {
    /// Policy label.
    pub policy: String,
    /// Second since the start of the run (warm-up included).
    pub second: u64,
    /// Requests completed in that second and counted in the percentiles.
    pub completed: u64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Share of the requests sent in that second that went to each backend.
    pub shares: Vec<f64>,
}

/// The whole result of one run: every policy, plus what is needed to plot it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Scenario name.
    pub scenario: String,
    /// What wrote the run.
    pub mode: Mode,
    /// Seed.
    pub seed: u64,
    /// True when the run was interrupted and holds only what was measured so far.
    pub partial: bool,
    /// Backend names, in id order.
    pub backends: Vec<String>,
    /// Fault windows: backend index, start s, end s (no fault kind: the charts only shade when a
    /// backend was faulty, and the scenario file says what the fault was).
    pub fault_windows: Vec<FaultWindow>,
    /// Warm-up, seconds.
    pub warmup_s: f64,
    /// Measured length after the warm-up, seconds: what the counts and percentiles cover (the
    /// scenario's `duration`, or `--duration`). 0 in files written before it was recorded.
    #[serde(default)]
    pub measured_s: f64,
    /// One row per policy.
    pub rows: Vec<SummaryRow>,
    /// Mode-specific notes (wall-clock time, simulated requests per second, harness floor...).
    #[serde(default)]
    pub notes: Vec<(String, String)>,
    /// What went wrong in the harness itself while the policies ran (real mode only).
    #[serde(default)]
    pub incidents: Vec<Incident>,
    /// Per policy, calls per second and the fastest call (real mode only; empty in files
    /// written before they were recorded, and in simulated runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<RateRow>,
    /// Which algorithm each row measured: its service config as the parser normalized it when
    /// the run was made, the lab-only fields (`lblabAblation`) included, so that a result file
    /// says which semantics it measured after a default changes. Empty in files written before
    /// it was recorded; a policy the parser does not know keeps its config as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<PolicyConfigRow>,
    /// What else makes runs of this scenario one experiment: the scenario as run and the load
    /// per client. `None` in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<Experiment>,
}

/// What makes the runs of several load generators one experiment beyond their name, policies'
/// configs ([`RunSummary::configs`]) and lengths, so that a merge can refuse runs of another
/// scenario text or another load under the same name ([`RunSummary::experiment`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// SHA-256 (hex) of the scenario as it ran (after any command-line override) in canonical
    /// form, without what the shards of one experiment differ in: their seeds, clients, rates
    /// and policies (the policies' configs are compared on their own). Comments and layout of
    /// the file do not count; a value that changes what runs does.
    pub scenario_sha256: String,
    /// Offered calls per second per client (open loop; `None` for a closed loop, whose calls in
    /// flight per client the hash holds): shards split the clients and the rate alike.
    pub rate_per_client: Option<f64>,
}

/// One policy's service config as a run recorded it ([`RunSummary::configs`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyConfigRow {
    /// Policy label.
    pub policy: String,
    /// Its `loadBalancingConfig` entry, normalized (`{"peak_ewma_experimental": {...}}`).
    pub config: serde_json::Value,
    /// The algorithm's fingerprint when the run was made (`PolicyConfig::fingerprint` of the
    /// policy crate: a hash of what the config did on a fixed trace), so that a result of a
    /// default whose rules have since changed can be told apart. `None` in files written before
    /// it was recorded, and for a policy the parser does not know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// A real run's throughput and fastest call for one policy, as ghz reports them (`rps`,
/// `fastest`); the mean is [`SummaryRow::mean_ms`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateRow {
    /// Policy label.
    pub policy: String,
    /// Calls that ended after the warm-up (OK or not) per second of the measured length.
    pub calls_per_s: f64,
    /// The fastest measured latency, ms (0 when nothing was measured).
    pub min_ms: f64,
}

impl RateRow {
    /// The rates of `results` over a measured length of `measured_s` seconds.
    pub fn of(results: &[PolicyResult], measured_s: f64) -> Vec<RateRow> {
        results
            .iter()
            .map(|r| {
                let ended = r.summary.ok + r.summary.errors;
                RateRow {
                    policy: r.summary.policy.clone(),
                    calls_per_s: if measured_s > 0.0 {
                        ended as f64 / measured_s
                    } else {
                        0.0
                    },
                    min_ms: if r.histogram.is_empty() {
                        0.0
                    } else {
                        r.histogram.min() as f64 / 1e6
                    },
                }
            })
            .collect()
    }
}

/// What a [`RunSummary`] says of the run's scenario and length, before its rows: `lblab_model`
/// builds it from a scenario (`Scenario::run_head`), so that this crate needs no scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct RunHead {
    /// Scenario name.
    pub scenario: String,
    /// The scenario's seed.
    pub seed: u64,
    /// Backend names, in order.
    pub backends: Vec<String>,
    /// When each faulty backend was faulty.
    pub fault_windows: Vec<FaultWindow>,
    /// Warm-up, seconds.
    pub warmup_s: f64,
    /// Measured time, seconds.
    pub measured_s: f64,
    /// Every policy's normalized config ([`RunSummary::configs`]).
    pub policies: Vec<PolicyConfigRow>,
    /// The scenario as run and its load per client ([`RunSummary::experiment`]).
    pub experiment: Option<Experiment>,
}

impl RunSummary {
    /// The summary of a run described by `head` that measured `results` (in that order);
    /// `partial` when it was stopped early.
    pub fn of(
        head: RunHead,
        mode: Mode,
        results: &[PolicyResult],
        partial: bool,
        notes: Vec<(String, String)>,
    ) -> RunSummary {
        RunSummary {
            scenario: head.scenario,
            mode,
            seed: head.seed,
            partial,
            backends: head.backends,
            fault_windows: head.fault_windows,
            warmup_s: head.warmup_s,
            measured_s: head.measured_s,
            rows: results.iter().map(|r| r.summary.clone()).collect(),
            notes,
            incidents: results
                .iter()
                .flat_map(|r| r.incidents.iter().cloned())
                .collect(),
            rates: if mode == Mode::Real {
                RateRow::of(results, head.measured_s)
            } else {
                Vec::new()
            },
            configs: head
                .policies
                .into_iter()
                .filter(|c| results.iter().any(|r| r.summary.policy == c.policy))
                .collect(),
            experiment: head.experiment,
        }
    }

    /// What the summary says of its scenario: the head it was made [`of`](Self::of).
    pub fn head(&self) -> RunHead {
        RunHead {
            scenario: self.scenario.clone(),
            seed: self.seed,
            backends: self.backends.clone(),
            fault_windows: self.fault_windows.clone(),
            warmup_s: self.warmup_s,
            measured_s: self.measured_s,
            policies: self.configs.clone(),
            experiment: self.experiment.clone(),
        }
    }

    /// The normalized config recorded for `policy`, if any.
    pub fn config(&self, policy: &str) -> Option<&serde_json::Value> {
        self.configs
            .iter()
            .find(|c| c.policy == policy)
            .map(|c| &c.config)
    }

    /// The [`RateRow`] of `policy`, if recorded.
    pub fn rate(&self, policy: &str) -> Option<&RateRow> {
        self.rates.iter().find(|r| r.policy == policy)
    }
}

/// What wrote a [`RunSummary`]: its `mode` in `summary.json`, as the lowercase name
/// ([`Mode::name`]). Reading a file with any other name fails, naming the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum Mode {
    /// The simulator (`lblab sim`, and the simulated half of `lblab compare`).
    Sim,
    /// The real harness and load generator (`lblab real`, `lblab loadgen`, the real half of
    /// `lblab compare`).
    Real,
    /// A sweep over the scenario space (`lblab sweep`): one row per grid point.
    Sweep,
}

impl Mode {
    /// Every mode, in declaration order.
    pub const ALL: [Mode; 3] = [Mode::Sim, Mode::Real, Mode::Sweep];

    /// The name used in files: `sim`, `real` or `sweep`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sim => "sim",
            Mode::Real => "real",
            Mode::Sweep => "sweep",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = FileError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                FileError::invalid(
                    "mode",
                    format!("{s:?} is not a run mode; expected \"sim\", \"real\" or \"sweep\""),
                )
            })
    }
}

impl TryFrom<String> for Mode {
    type Error = FileError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Mode> for &'static str {
    fn from(mode: Mode) -> Self {
        mode.name()
    }
}

/// Something that went wrong in the harness itself, not a fault the scenario scheduled, while a
/// policy ran. The policy's results are affected by it: its row counts it in
/// [`SummaryRow::incidents`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    /// Policy label of the run it happened in.
    pub policy: String,
    /// What kind of thing happened.
    pub kind: IncidentKind,
    /// The backend it concerns (index in [`RunSummary::backends`] or in the target list), if one.
    pub backend: Option<usize>,
    /// When it was first seen, seconds from the run start (warm-up included).
    pub start_s: f64,
    /// When it was last seen (or ended), seconds from the run start.
    pub end_s: f64,
    /// How many times it happened: connections lost (over the whole run, warm-up included), or
    /// arrivals not sent and calls dispatched late among the calls intended after the warm-up,
    /// the ones the summary row counts. `detail` says which.
    pub count: u64,
    /// What happened, in words.
    pub detail: String,
}

/// The kinds of [`Incident`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentKind {
    /// A connection to a backend closed or was reset outside any crash the scenario scheduled.
    ConnectionLost,
    /// A backend could not be connected to, outside any crash the scenario scheduled.
    Unreachable,
    /// The load generator could not keep to the schedule: arrivals were not sent (counted as
    /// dropped).
    Overloaded,
    /// The load generator sent calls late (dispatch lateness p99 above 1 ms): latencies include
    /// its own delay.
    LateDispatch,
    /// A policy that weighs endpoints by their ORCA load reports (weighted_round_robin) got none:
    /// it ran as round_robin.
    NoLoadReports,
    /// The load generator's machine had no CPU to spare (saturated, or its CPUs taken by the
    /// hypervisor) during the measured part of the run: latencies may include waiting for one.
    MachineBusy,
}

impl IncidentKind {
    /// The name used in files and tables.
    pub fn name(self) -> &'static str {
        match self {
            IncidentKind::ConnectionLost => "connection_lost",
            IncidentKind::Unreachable => "unreachable",
            IncidentKind::Overloaded => "overloaded",
            IncidentKind::LateDispatch => "late_dispatch",
            IncidentKind::NoLoadReports => "no_load_reports",
            IncidentKind::MachineBusy => "machine_busy",
        }
    }
}

/// A fault's active window `[start_s, end_s)` on one backend, bounded by the run's end. It holds
/// no kind: overlapping faults of different kinds on one backend give one window each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultWindow {
    /// Backend index.
    pub backend: usize,
    /// Start, seconds from the run start.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
}

/// Failures one backend gave one policy in one second (by when they ended, from the run start,
/// warm-up included): a row of `failures.csv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FailureRow {
    /// Policy label.
    pub policy: String,
    /// Second from the run start.
    pub second: u64,
    /// Backend index (see [`RunSummary::backends`]).
    pub backend: usize,
    /// Calls that failed with an error status (fast failures, refused or reset connections).
    pub errors: u64,
    /// Calls that ran out of time.
    pub deadline_exceeded: u64,
    /// Mean time from intended send to the error of the `errors`, ms: how fast they failed
    /// (0 without errors).
    pub error_mean_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_without_measured_s_still_parses() {
        let run = RunSummary {
            scenario: "s".into(),
            mode: Mode::Sim,
            seed: 1,
            partial: false,
            backends: vec!["b".into()],
            fault_windows: Vec::new(),
            warmup_s: 10.0,
            measured_s: 20.0,
            rows: Vec::new(),
            notes: Vec::new(),
            incidents: Vec::new(),
            rates: Vec::new(),
            configs: Vec::new(),
            experiment: None,
        };
        let mut v = serde_json::to_value(&run).unwrap();
        assert_eq!(v["measured_s"], 20.0);
        v.as_object_mut().unwrap().remove("measured_s");
        let old: RunSummary = serde_json::from_value(v).unwrap();
        assert_eq!(old.measured_s, 0.0);
    }

    #[test]
    fn modes_are_written_as_their_names_and_read_back() {
        for mode in Mode::ALL {
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{}\"", mode.name()));
            assert_eq!(serde_json::from_str::<Mode>(&json).unwrap(), mode);
            assert_eq!(mode.to_string(), mode.name());
        }
        assert_eq!(
            ["sim", "real", "sweep"],
            Mode::ALL.map(Mode::name),
            "the names summary.json files already hold"
        );
    }

    #[test]
    fn an_unknown_mode_is_rejected_naming_the_field() {
        let e = serde_json::from_str::<Mode>("\"simulated\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`mode`") && e.contains("\"simulated\"") && e.contains("\"sweep\""),
            "{e}"
        );
        assert!(serde_json::from_str::<Mode>("\"Sim\"").is_err());
    }
}
