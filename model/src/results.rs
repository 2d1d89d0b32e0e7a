//! The results schema, written by both modes (`sim`, `real`) and read by the reports: recording
//! with HdrHistogram while a run goes, and the files a run leaves behind.
//!
//! Files in a results folder:
//! - `summary.csv`, `summary.json`: one [`SummaryRow`] per policy.
//! - `timeseries.csv`: per policy and second, [`TimeseriesRow`].
//! - `<policy>.hlog`: per-second latency histograms in HdrHistogram's interval-log format.
//! - `failures.csv`: per policy, second and backend, the calls that failed there, [`FailureRow`].
//!
//! Latency is counted from the *intended* send time. Percentiles are over unary requests that
//! completed OK or ran out of time (DEADLINE_EXCEEDED counts at the deadline); fast failures are
//! counted in `errors` but not in the percentiles, and streaming calls are counted but have no
//! latency.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2Serializer};
use hdrhistogram::Histogram;
use lblab_policy::{Nanos, NANOS_PER_SEC};
use serde::{Deserialize, Serialize};

use crate::ModelError;

/// How one request ended, from the client's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestResult {
    /// OK.
    Ok,
    /// DEADLINE_EXCEEDED.
    DeadlineExceeded,
    /// Any other failure (UNAVAILABLE, RESOURCE_EXHAUSTED, ...).
    Error,
    /// Never sent (the load generator could not keep up, or the run was interrupted).
    Dropped,
}

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
/// time for traffic shares).
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
    /// `sim` or `real`.
    pub mode: String,
    /// Seed.
    pub seed: u64,
    /// True when the run was interrupted and holds only what was measured so far.
    pub partial: bool,
    /// Backend names, in id order.
    pub backends: Vec<String>,
    /// Fault windows: backend index, start s, end s, fault kind.
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
}

impl IncidentKind {
    /// The name used in files and tables.
    pub fn name(self) -> &'static str {
        match self {
            IncidentKind::ConnectionLost => "connection_lost",
            IncidentKind::Unreachable => "unreachable",
            IncidentKind::Overloaded => "overloaded",
            IncidentKind::LateDispatch => "late_dispatch",
        }
    }
}

/// A fault's active window on one backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultWindow {
    /// Backend index.
    pub backend: usize,
    /// Start, seconds from the run start.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
}

const SIGFIG: u8 = 3;
/// Highest latency recorded exactly (1 hour); larger values are clamped.
const MAX_LATENCY: u64 = 3_600 * NANOS_PER_SEC;

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY, SIGFIG).expect("valid histogram bounds")
}

/// Records one policy's run. Memory is bounded by the run's length in seconds times the backend
/// count (for traffic shares), never by the request count.
#[derive(Debug)]
pub struct Recorder {
    policy: String,
    warmup: Nanos,
    backends: usize,
    total: Histogram<u64>,
    interval: Histogram<u64>,
    interval_second: u64,
    ok: u64,
    errors: u64,
    deadline_exceeded: u64,
    dropped: u64,
    sent_measured: u64,
    sent_faulty: u64,
    sends_second: u64,
    sends: Vec<u64>,
    measured_sends: Vec<u64>,
    measured_failures: Vec<u64>,
    failures: BTreeMap<(u64, usize), BackendFailures>,
    rows: Vec<TimeseriesRow>,
    hlog: String,
    encoder: IntervalEncoder,
}

/// Encodes interval histograms as HdrHistogram's "V2 compressed" format (what
/// `V2DeflateSerializer` writes and every hlog reader expects), reusing one zlib compressor and
/// its buffers: a fresh compressor per interval (as `V2DeflateSerializer` makes) cost a fifth of
/// the simulator's time in allocation and table setup.
struct IntervalEncoder {
    raw: Vec<u8>,
    out: Vec<u8>,
    zlib: flate2::Compress,
}

/// `V2_COMPRESSED_COOKIE` of the HdrHistogram serialization formats.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

impl std::fmt::Debug for IntervalEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IntervalEncoder")
    }
}

impl IntervalEncoder {
    fn new() -> Self {
        IntervalEncoder {
            raw: Vec::new(),
            out: Vec::new(),
            zlib: flate2::Compress::new(flate2::Compression::fast(), true),
        }
    }

    /// The histogram in V2-compressed form, or `None` if it cannot be encoded.
    fn encode(&mut self, h: &Histogram<u64>) -> Option<&[u8]> {
        self.raw.clear();
        V2Serializer::new().serialize(h, &mut self.raw).ok()?;
        self.out.clear();
        self.out
            .extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.out.extend_from_slice(&[0; 4]);
        self.out.reserve(self.raw.len() + 64);
        self.zlib.reset();
        loop {
            let consumed = self.zlib.total_in() as usize;
            let status = self
                .zlib
                .compress_vec(
                    &self.raw[consumed..],
                    &mut self.out,
                    flate2::FlushCompress::Finish,
                )
                .ok()?;
            if status == flate2::Status::StreamEnd {
                break;
            }
            self.out.reserve(self.out.capacity().max(64));
        }
        let len = (self.out.len() - 8) as u32;
        self.out[4..8].copy_from_slice(&len.to_be_bytes());
        Some(&self.out)
    }
}

impl Recorder {
    /// A recorder for `policy` over `backends` backends; requests sent before `warmup` are not
    /// counted in the summary (they are in the time series).
    pub fn new(policy: &str, backends: usize, warmup: Nanos) -> Self {
        Recorder {
            policy: policy.to_string(),
            warmup,
            backends,
            total: new_histogram(),
            interval: new_histogram(),
            interval_second: 0,
            ok: 0,
            errors: 0,
            deadline_exceeded: 0,
            dropped: 0,
            sent_measured: 0,
            sent_faulty: 0,
            sends_second: 0,
            sends: vec![0; backends],
            measured_sends: vec![0; backends],
            measured_failures: vec![0; backends],
            failures: BTreeMap::new(),
            rows: Vec::new(),
            hlog: String::new(),
            encoder: IntervalEncoder::new(),
        }
    }

    /// The row of `second`; rows are indexed by second from the run start.
    fn row_mut(&mut self, second: u64) -> &mut TimeseriesRow {
        while self.rows.len() <= second as usize {
            let row = self.empty_row(self.rows.len() as u64);
            self.rows.push(row);
        }
        &mut self.rows[second as usize]
    }

    fn empty_row(&self, second: u64) -> TimeseriesRow {
        TimeseriesRow {
            policy: self.policy.clone(),
            second,
            completed: 0,
            p50_ms: f64::NAN,
            p99_ms: f64::NAN,
            shares: vec![0.0; self.backends],
        }
    }

    /// A request was sent at `intended` (its intended send time) to `backend`; `faulty` says
    /// whether a fault was active on that backend then.
    pub fn on_send(&mut self, intended: Nanos, backend: usize, faulty: bool) {
        let second = intended / NANOS_PER_SEC;
        if second != self.sends_second {
            self.flush_sends();
            self.sends_second = second;
        }
        if let Some(c) = self.sends.get_mut(backend) {
            *c += 1;
        }
        if intended >= self.warmup {
            if let Some(c) = self.measured_sends.get_mut(backend) {
                *c += 1;
            }
            self.sent_measured += 1;
            if faulty {
                self.sent_faulty += 1;
            }
        }
    }

    fn flush_sends(&mut self) {
        let total: u64 = self.sends.iter().sum();
        if total == 0 {
            return;
        }
        let second = self.sends_second;
        let shares: Vec<f64> = self
            .sends
            .iter()
            .map(|&c| c as f64 / total as f64)
            .collect();
        self.row_mut(second).shares = shares;
        self.sends.iter_mut().for_each(|c| *c = 0);
    }

    /// A request intended at `intended` ended at `now` with `result`.
    pub fn on_result(&mut self, intended: Nanos, now: Nanos, result: RequestResult) {
        let latency = now.saturating_sub(intended).clamp(1, MAX_LATENCY);
        let second = now / NANOS_PER_SEC;
        if second > self.interval_second {
            self.flush_interval();
            self.interval_second = second;
        }
        let counts = matches!(result, RequestResult::Ok | RequestResult::DeadlineExceeded);
        if counts {
            self.interval.record(latency).expect("clamped into range");
        }
        if intended < self.warmup {
            return;
        }
        self.count(result);
        if counts {
            self.total.record(latency).expect("clamped into range");
        }
    }

    /// A request sent to `backend` and intended at `intended` ended at `now` with `result`: a
    /// failure (error or deadline exceeded) is counted against that backend, per second of `now`
    /// (warm-up included, like the time series) and in [`PolicyResult::backend_failures`] (after
    /// warm-up only, like the summary). Call it besides [`Recorder::on_result`] or
    /// [`Recorder::on_stream_result`], for calls that reached a backend.
    pub fn on_backend_result(
        &mut self,
        backend: usize,
        intended: Nanos,
        now: Nanos,
        result: RequestResult,
    ) {
        let deadline = match result {
            RequestResult::Error => false,
            RequestResult::DeadlineExceeded => true,
            RequestResult::Ok | RequestResult::Dropped => return,
        };
        if backend >= self.backends {
            return;
        }
        let f = self
            .failures
            .entry((now / NANOS_PER_SEC, backend))
            .or_default();
        if deadline {
            f.deadline_exceeded += 1;
        } else {
            f.errors += 1;
            f.error_ns += now.saturating_sub(intended);
        }
        if intended >= self.warmup {
            self.measured_failures[backend] += 1;
        }
    }

    /// Counts one measured request's result.
    fn count(&mut self, result: RequestResult) {
        match result {
            RequestResult::Ok => self.ok += 1,
            RequestResult::DeadlineExceeded => {
                self.errors += 1;
                self.deadline_exceeded += 1;
            }
            RequestResult::Error => self.errors += 1,
            RequestResult::Dropped => self.dropped += 1,
        }
    }

    /// A streaming call intended at `intended` ended with `result`. It is counted like any
    /// request, but a stream's duration is not a latency, so it stays out of the percentiles.
    pub fn on_stream_result(&mut self, intended: Nanos, result: RequestResult) {
        if intended >= self.warmup {
            self.count(result);
        }
    }

    fn flush_interval(&mut self) {
        if self.interval.is_empty() {
            return;
        }
        let second = self.interval_second;
        let (p50, p99, n) = (
            self.interval.value_at_quantile(0.5) as f64 / 1e6,
            self.interval.value_at_quantile(0.99) as f64 / 1e6,
            self.interval.len(),
        );
        let row = self.row_mut(second);
        row.p50_ms = p50;
        row.p99_ms = p99;
        row.completed = n;
        let max_ms = self.interval.max() as f64 / 1e6;
        if let Some(bytes) = self.encoder.encode(&self.interval) {
            let _ = writeln!(
                self.hlog,
                "{second}.000,1.000,{max_ms:.3},{}",
                base64::engine::general_purpose::STANDARD.encode(bytes)
            );
        }
        self.interval.reset();
    }

    /// Ends the recording and returns the summary row, the time series and the hlog text.
    pub fn finish(mut self) -> PolicyResult {
        self.flush_sends();
        self.flush_interval();
        let h = &self.total;
        let ms = |v: u64| v as f64 / 1e6;
        let q = |p: f64| {
            if h.is_empty() {
                0.0
            } else {
                ms(h.value_at_quantile(p))
            }
        };
        let row = SummaryRow {
            policy: self.policy.clone(),
            requests: self.ok + self.errors + self.dropped,
            ok: self.ok,
            errors: self.errors,
            deadline_exceeded: self.deadline_exceeded,
            dropped: self.dropped,
            p50_ms: q(0.5),
            p90_ms: q(0.9),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: if h.is_empty() { 0.0 } else { ms(h.max()) },
            mean_ms: if h.is_empty() { 0.0 } else { h.mean() / 1e6 },
            slow_share: if self.sent_measured == 0 {
                0.0
            } else {
                self.sent_faulty as f64 / self.sent_measured as f64
            },
            incidents: 0,
        };
        let hlog = format!(
            "#[Histogram log of policy {} (latency in ms for the max column; values in ns)]\n#[StartTime: 0.000 (seconds since run start)]\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n{}",
            self.policy, self.hlog
        );
        PolicyResult {
            summary: row,
            timeseries: self.rows,
            hlog,
            histogram: self.total,
            backend_sends: self.measured_sends,
            backend_failures: self.measured_failures,
            failures: self
                .failures
                .into_iter()
                .map(|((second, backend), f)| FailureRow {
                    policy: self.policy.clone(),
                    second,
                    backend,
                    errors: f.errors,
                    deadline_exceeded: f.deadline_exceeded,
                    error_mean_ms: if f.errors == 0 {
                        0.0
                    } else {
                        f.error_ns as f64 / f.errors as f64 / 1e6
                    },
                })
                .collect(),
            incidents: Vec::new(),
        }
    }
}

/// What a [`Recorder`] leaves: the summary row, the time series, the hlog and the whole-run
/// histogram (for percentile-spectrum charts).
#[derive(Debug, Clone)]
pub struct PolicyResult {
    /// Summary row.
    pub summary: SummaryRow,
    /// Per-second rows.
    pub timeseries: Vec<TimeseriesRow>,
    /// Interval log text.
    pub hlog: String,
    /// Latencies after warm-up, ns.
    pub histogram: Histogram<u64>,
    /// Requests sent to each backend after warm-up (for the herd measure,
    /// [`crate::stats::herd`]).
    pub backend_sends: Vec<u64>,
    /// Failed requests (errors and deadlines exceeded) per backend after warm-up, as far as the
    /// recorder was told where they went ([`Recorder::on_backend_result`]).
    pub backend_failures: Vec<u64>,
    /// Failures per second and backend, warm-up included (`failures.csv`); seconds and backends
    /// without any are left out.
    pub failures: Vec<FailureRow>,
    /// What went wrong in the harness during the run (real mode); `summary.incidents` counts them.
    pub incidents: Vec<Incident>,
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

/// Failure counts of one backend in one second, before they become a [`FailureRow`].
#[derive(Debug, Clone, Copy, Default)]
struct BackendFailures {
    errors: u64,
    deadline_exceeded: u64,
    /// Sum of the errors' times from intended send, ns.
    error_ns: u64,
}

impl PolicyResult {
    /// Adds harness incidents to the result and counts them in its summary row.
    pub fn add_incidents(&mut self, incidents: impl IntoIterator<Item = Incident>) {
        self.incidents.extend(incidents);
        self.summary.incidents = self.incidents.len() as u64;
    }
}

/// Writes `contents` to `path` atomically: a temporary file in the same folder, then a rename, so
/// an interrupted run never leaves a half-written file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), ModelError> {
    let io = |source| ModelError::Io {
        file: path.display().to_string(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let tmp: PathBuf = dir.join(format!(
        ".{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("out")
    ));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(contents)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    });
    if written.is_err() {
        // A full disk or a failed rename must not leave half a file behind.
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(io)
}

/// Writes `summary.csv`, `summary.json`, `timeseries.csv` and one `.hlog` per policy into `dir`.
pub fn write_run(dir: &Path, run: &RunSummary, results: &[PolicyResult]) -> Result<(), ModelError> {
    let ser = |file: &str, e: String| ModelError::Io {
        file: dir.join(file).display().to_string(),
        source: std::io::Error::other(e),
    };
    let mut csv_out = csv::Writer::from_writer(Vec::new());
    for row in &run.rows {
        csv_out
            .serialize(row)
            .map_err(|e| ser("summary.csv", e.to_string()))?;
    }
    let bytes = csv_out
        .into_inner()
        .map_err(|e| ser("summary.csv", e.to_string()))?;
    write_atomic(&dir.join("summary.csv"), &bytes)?;
    let json = serde_json::to_string_pretty(run).map_err(|e| ser("summary.json", e.to_string()))?;
    write_atomic(&dir.join("summary.json"), (json + "\n").as_bytes())?;

    let mut ts = String::from("policy,second,completed,p50_ms,p99_ms");
    for b in &run.backends {
        let _ = write!(ts, ",share_{b}");
    }
    ts.push('\n');
    for r in results {
        for row in &r.timeseries {
            let fmt = |v: f64| {
                if v.is_nan() {
                    String::new()
                } else {
                    format!("{v:.3}")
                }
            };
            let _ = write!(
                ts,
                "{},{},{},{},{}",
                row.policy,
                row.second,
                row.completed,
                fmt(row.p50_ms),
                fmt(row.p99_ms)
            );
            for s in &row.shares {
                let _ = write!(ts, ",{s:.4}");
            }
            ts.push('\n');
        }
    }
    write_atomic(&dir.join("timeseries.csv"), ts.as_bytes())?;
    let mut fails = String::from("policy,second,backend,errors,deadline_exceeded,error_mean_ms\n");
    for r in results {
        for f in &r.failures {
            let name = run.backends.get(f.backend).map_or("?", String::as_str);
            let _ = writeln!(
                fails,
                "{},{},{name},{},{},{:.3}",
                f.policy, f.second, f.errors, f.deadline_exceeded, f.error_mean_ms
            );
        }
    }
    write_atomic(&dir.join("failures.csv"), fails.as_bytes())?;
    for r in results {
        write_atomic(
            &dir.join(format!("{}.hlog", file_stem(&r.summary.policy))),
            r.hlog.as_bytes(),
        )?;
    }
    Ok(())
}

/// A policy label made safe as a file name.
pub fn file_stem(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The largest result file lblab reads back (a year-long run's hlog is far below it).
pub const MAX_RESULT_FILE: u64 = 256 << 20;

/// Reads a result file back as text: only a regular file (a FIFO or a device given by mistake
/// must not block or fill memory), at most [`MAX_RESULT_FILE`] bytes. A missing file is an
/// `Io` error of kind `NotFound`.
pub fn read_result_file(path: &Path) -> Result<String, ModelError> {
    use std::io::Read as _;
    let io = |source| ModelError::Io {
        file: path.display().to_string(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(io(std::io::Error::other("not a regular file")));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_RESULT_FILE + 1).read_to_string(&mut text))
        .map_err(io)?;
    if text.len() as u64 > MAX_RESULT_FILE {
        return Err(io(std::io::Error::other(format!(
            "larger than {} MiB, more than any result file lblab writes",
            MAX_RESULT_FILE >> 20
        ))));
    }
    Ok(text)
}

/// Reads `timeseries.csv` back (for charts).
pub fn read_timeseries(path: &Path) -> Result<Vec<TimeseriesRow>, ModelError> {
    let io = |e: String| ModelError::Parse {
        file: path.display().to_string(),
        field: None,
        position: None,
        message: e,
    };
    let text = read_result_file(path)?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| io(e.to_string()))?;
        let num = |i: usize| {
            rec.get(i)
                .and_then(|s| s.parse::<f64>().ok())
                .unwrap_or(f64::NAN)
        };
        rows.push(TimeseriesRow {
            policy: rec.get(0).unwrap_or_default().to_string(),
            second: num(1) as u64,
            completed: num(2) as u64,
            p50_ms: num(3),
            p99_ms: num(4),
            shares: (5..rec.len()).map(num).collect(),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_atomic_write_leaves_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("lblab-atomic-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("summary.json")).unwrap();
        // The rename onto a folder fails: the error names the file and the .tmp is gone.
        let err = write_atomic(&dir.join("summary.json"), b"{}").unwrap_err();
        assert!(err.to_string().contains("summary.json"), "{err}");
        assert!(!dir.join(".summary.json.tmp").exists());
        std::fs::remove_dir_all(&dir).ok();
    }
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn failures_are_counted_per_backend_and_second() {
        let s = 1_000_000_000;
        let mut r = Recorder::new("p", 3, s);
        // Warm-up: in failures.csv, not in backend_failures.
        r.on_backend_result(1, 0, 10_000, RequestResult::Error);
        r.on_backend_result(2, s + 1, 2 * s + 5, RequestResult::Error);
        r.on_backend_result(2, s + 3, 2 * s + 7, RequestResult::Error);
        r.on_backend_result(2, s, 3 * s, RequestResult::DeadlineExceeded);
        r.on_backend_result(0, s, s + 5, RequestResult::Ok);
        r.on_backend_result(9, s, s + 5, RequestResult::Error); // not a backend: ignored
        let res = r.finish();
        assert_eq!(res.backend_failures, vec![0, 0, 3]);
        let got: Vec<_> = res
            .failures
            .iter()
            .map(|f| (f.second, f.backend, f.errors, f.deadline_exceeded))
            .collect();
        assert_eq!(got, vec![(0, 1, 1, 0), (2, 2, 2, 0), (3, 2, 0, 1)]);
        assert!((res.failures[0].error_mean_ms - 0.01).abs() < 1e-9);
        assert!((res.failures[1].error_mean_ms - 1000.000004).abs() < 1e-6);
    }

    #[test]
    fn a_summary_without_measured_s_still_parses() {
        let run = RunSummary {
            scenario: "s".into(),
            mode: "sim".into(),
            seed: 1,
            partial: false,
            backends: vec!["b".into()],
            fault_windows: Vec::new(),
            warmup_s: 10.0,
            measured_s: 20.0,
            rows: Vec::new(),
            notes: Vec::new(),
            incidents: Vec::new(),
        };
        let mut v = serde_json::to_value(&run).unwrap();
        assert_eq!(v["measured_s"], 20.0);
        v.as_object_mut().unwrap().remove("measured_s");
        let old: RunSummary = serde_json::from_value(v).unwrap();
        assert_eq!(old.measured_s, 0.0);
    }

    #[test]
    fn hlog_reads_back_with_hdrhistogram() {
        let mut r = Recorder::new("p", 2, 0);
        for i in 0..3000u64 {
            let t = i * 1_000_000;
            r.on_send(t, (i % 2) as usize, i % 2 == 1);
            r.on_result(t, t + 2_000_000 + i, RequestResult::Ok);
        }
        let res = r.finish();
        let intervals: Vec<_> = IntervalLogIterator::new(res.hlog.as_bytes())
            .filter_map(|e| match e {
                Ok(LogEntry::Interval(i)) => Some(i),
                _ => None,
            })
            .collect();
        assert_eq!(intervals.len(), 4); // the last completions land in second 3
        let mut total = 0;
        for i in &intervals {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(i.encoded_histogram())
                .expect("base64");
            let h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
                .deserialize(&mut bytes.as_slice())
                .expect("a V2-compressed histogram");
            total += h.len();
        }
        assert_eq!(total, 3000);
        assert_eq!(res.summary.ok, 3000);
        assert!((res.summary.slow_share - 0.5).abs() < 1e-9);
        assert_eq!(res.timeseries.len(), 4);
        assert!((res.timeseries[0].shares[0] - 0.5).abs() < 0.01);
    }

    #[test]
    fn warmup_requests_are_not_summarised() {
        let mut r = Recorder::new("p", 1, 1_000_000_000);
        r.on_send(0, 0, false);
        r.on_result(0, 5, RequestResult::Error);
        r.on_send(2_000_000_000, 0, false);
        r.on_result(2_000_000_000, 2_001_000_000, RequestResult::Ok);
        let s = r.finish().summary;
        assert_eq!((s.requests, s.ok, s.errors), (1, 1, 0));
    }
}
