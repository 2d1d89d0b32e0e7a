//! What a run records and how it is read back: the results schema, written by both modes
//! ([`Mode`]: `sim`, `real`) and read by the reports; recording with HdrHistogram while a run
//! goes, and the files a run leaves behind.
//!
//! This crate knows nothing of scenarios: a run's summary takes what it says of the scenario as
//! a [`RunHead`] (`lblab_model` builds one from a scenario). The reports depend on this crate
//! (and `lblab_stats`, `lblab_policy`), not on the model, so Cargo keeps them from reaching into
//! the scenario.
//!
//! Files in a results folder:
//! - `summary.csv`, `summary.json`: one [`SummaryRow`] per policy.
//! - `timeseries.csv`: per policy and second, [`TimeseriesRow`].
//! - `<policy>.hlog`: per-second latency histograms in HdrHistogram's interval-log format, tagged
//!   with the policy (and `-warmup` during the warm-up).
//! - `<policy>.hgrm`: the measured latencies' percentile distribution, HdrHistogram's text.
//! - `failures.csv`: per policy, second and backend, the calls that failed there, [`FailureRow`].
//! - `targets.csv` (a load-generator run): per policy and target, calls and share, [`TargetRow`].
//! - `statuses.csv` (a load-generator run): per policy, gRPC status and message, the calls that
//!   ended so, warm-up included, [`StatusRow`].
//! - `harness.json` (a real run): the harness's own measurements, [`HarnessSummary`].
//! - `compare.csv` (a compare folder): the simulator against the real harness, [`CompareRow`].
//!
//! Latency is counted from the *intended* send time. Percentiles are over unary requests that
//! completed OK or ran out of time (DEADLINE_EXCEEDED counts at the deadline); fast failures are
//! counted in `errors` but not in the percentiles, and streaming calls are counted but have no
//! latency.
//!
//! One file per concept, all re-exported here: the serialized types ([`RunSummary`],
//! [`SummaryRow`], [`TimeseriesRow`], [`FailureRow`], [`Incident`]); the [`Recorder`] that turns a
//! policy's requests into a [`PolicyResult`]; the `.hlog` encoding of its per-second histograms;
//! and the files ([`write_run`], [`write_atomic`], [`read_result_file`], [`read_timeseries`],
//! [`read_hlog`]); and [`merge_runs`], which combines real runs of one scenario from several
//! load generators into one.
//!
//! Beside the files: [`layout`] (the results tree, named once), [`fixed`] (the decimals the CSV
//! files are written with), [`memory`] (what a record weighs in memory, per second, backend and
//! policy, which the estimates of a run and of a merge are built from), and [`ORACLE`] (the simulator's oracle, whose row
//! the reports treat apart).
//!
//! What is not the results format lives with its owner: statistics across seeds in
//! `lblab_stats`, the folder lock, a run's results folder and its text tables in `lblab_lab`,
//! scenario durations in `lblab_model::units`, the settings a message names in `lblab_message`.

#![warn(missing_docs)]

mod compare;
mod files;
pub mod fixed;
mod harness;
mod histogram;
mod hlog;
mod io;
pub mod layout;
pub mod memory;
mod merge;
mod recorder;
mod schema;
mod statuses;
mod targets;

/// The simulator-only policy that routes each call to the backend that will answer it first
/// (it knows the future). Its one spelling: every crate (the scenario model, the simulator, the
/// reports) matches on it by this constant.
pub const ORACLE: &str = "oracle";

pub use compare::{agrees, diff_pct, CompareRow, AGREEMENT_ABSOLUTE_MS, AGREEMENT_RELATIVE};
pub use files::{file_stem, read_timeseries, write_atomic, write_run};
pub use harness::{
    DelayAccuracy, FloorSummary, HarnessSummary, Host, MachineLoad, PolicyHarness, Quantiles,
};
pub use histogram::percentile_distribution;
pub use hlog::{parse_hlog, read_hlog, sum_measured, Hlog, HlogInterval};
pub use io::{read_result_file, MAX_RESULT_FILE};
pub use layout::Layout;
pub use lblab_message::FileError;
pub use merge::{merge_runs, Merged};
pub use recorder::{PolicyResult, Recorder, RequestResult};
pub use schema::{
    Experiment, FailureRow, FaultWindow, Incident, IncidentKind, Mode, PolicyConfigRow, RateRow,
    RunHead, RunSummary, SummaryRow, TimeseriesRow,
};
pub use statuses::{StatusRow, MESSAGES_PER_STATUS};
pub use targets::TargetRow;
