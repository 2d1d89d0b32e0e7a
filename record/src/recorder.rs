//! Recording one policy's run while it goes: latencies into HdrHistograms (the whole run and one
//! per second), traffic shares per second, failures per backend and second.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use lblab_policy::{Nanos, NANOS_PER_SEC};

use super::histogram::{new_histogram, MAX_LATENCY};
use super::hlog::IntervalLog;
use super::schema::{FailureRow, Incident, SummaryRow, TimeseriesRow};

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

/// Records one policy's run. Memory grows with the seconds in which something happened (a row of
/// traffic shares per backend for each), never with the run's length alone nor with the request
/// count: a second in which nothing was sent or completed has no row.
#[derive(Debug)]
pub struct Recorder {
    policy: String,
    warmup: Nanos,
    backends: usize,
    total: Histogram<u64>,
    /// This second's latencies of calls intended after the warm-up (the summary's).
    interval: Histogram<u64>,
    /// This second's latencies of calls intended during the warm-up.
    interval_warmup: Histogram<u64>,
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
    rows: BTreeMap<u64, TimeseriesRow>,
    avoidable_waits: u64,
    hlog: IntervalLog,
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
            interval_warmup: new_histogram(),
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
            rows: BTreeMap::new(),
            avoidable_waits: 0,
            hlog: IntervalLog::new(policy, warmup as f64 / NANOS_PER_SEC as f64),
        }
    }

    /// The row of `second` from the run start, made when something first happens in it.
    fn row_mut(&mut self, second: u64) -> &mut TimeseriesRow {
        let (policy, backends) = (&self.policy, self.backends);
        self.rows.entry(second).or_insert_with(|| TimeseriesRow {
            policy: policy.clone(),
            second,
            completed: 0,
            p50_ms: f64::NAN,
            p99_ms: f64::NAN,
            shares: vec![0.0; backends],
        })
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
        if intended < self.warmup {
            if counts {
                self.interval_warmup
                    .record(latency)
                    .expect("clamped into range");
            }
            return;
        }
        if counts {
            self.interval.record(latency).expect("clamped into range");
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

    /// A request intended at `intended` had to wait for a worker at its backend while another
    /// backend without an active fault had one free: a wait the policy could have avoided (the
    /// simulator, which sees every backend's workers, reports it; [`PolicyResult::avoidable_waits`]).
    pub fn on_avoidable_wait(&mut self, intended: Nanos) {
        if intended >= self.warmup {
            self.avoidable_waits += 1;
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

    /// Ends the current second: its time-series row gets the percentiles of every call that
    /// ended in it, and the hlog its warm-up's and its measured calls as two tagged intervals.
    fn flush_interval(&mut self) {
        let (warm, measured) = (&self.interval_warmup, &self.interval);
        let quantiles = |h: &Histogram<u64>| {
            (
                h.value_at_quantile(0.5) as f64 / 1e6,
                h.value_at_quantile(0.99) as f64 / 1e6,
                h.len(),
            )
        };
        let (p50, p99, n) = match (warm.is_empty(), measured.is_empty()) {
            (true, true) => return,
            (false, true) => quantiles(warm),
            (true, false) => quantiles(measured),
            (false, false) => {
                let mut both = warm.clone();
                both.add(measured).expect("histograms of one range");
                quantiles(&both)
            }
        };
        let second = self.interval_second;
        let row = self.row_mut(second);
        row.p50_ms = p50;
        row.p99_ms = p99;
        row.completed = n;
        self.hlog.push(second, &self.interval_warmup, false);
        self.hlog.push(second, &self.interval, true);
        self.interval_warmup.reset();
        self.interval.reset();
    }

    /// The latencies measured so far (requests intended after the warm-up that completed OK or
    /// ran out of time), ns: what the summary's percentiles will be computed from.
    pub fn measured_latencies(&self) -> &Histogram<u64> {
        &self.total
    }

    /// Ends the recording and returns the summary row, the time series and the hlog text.
    pub fn finish(mut self) -> PolicyResult {
        self.flush_sends();
        self.flush_interval();
        let row = SummaryRow {
            requests: self.ok + self.errors + self.dropped,
            ok: self.ok,
            errors: self.errors,
            deadline_exceeded: self.deadline_exceeded,
            dropped: self.dropped,
            slow_share: if self.sent_measured == 0 {
                0.0
            } else {
                self.sent_faulty as f64 / self.sent_measured as f64
            },
            ..latency_row(&self.policy, &self.total)
        };
        let hlog = self.hlog.text();
        PolicyResult {
            summary: row,
            timeseries: self.rows.into_values().collect(),
            hlog,
            histogram: self.total,
            backend_sends: self.measured_sends,
            backend_failures: self.measured_failures,
            avoidable_waits: self.avoidable_waits,
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

/// A summary row of `policy` with the latency fields of `h` (ns) and every count 0: the
/// percentiles, maximum and mean in ms, 0 for an empty histogram.
pub(super) fn latency_row(policy: &str, h: &Histogram<u64>) -> SummaryRow {
    let ms = |v: u64| v as f64 / 1e6;
    let q = |p: f64| {
        if h.is_empty() {
            0.0
        } else {
            ms(h.value_at_quantile(p))
        }
    };
    SummaryRow {
        policy: policy.to_string(),
        requests: 0,
        ok: 0,
        errors: 0,
        deadline_exceeded: 0,
        dropped: 0,
        p50_ms: q(0.5),
        p90_ms: q(0.9),
        p99_ms: q(0.99),
        p999_ms: q(0.999),
        max_ms: if h.is_empty() { 0.0 } else { ms(h.max()) },
        mean_ms: if h.is_empty() { 0.0 } else { h.mean() / 1e6 },
        slow_share: 0.0,
        incidents: 0,
    }
}

/// What a [`Recorder`] leaves: the summary row, the time series, the hlog and the whole-run
/// histogram (for percentile-spectrum charts).
#[derive(Debug, Clone)]
pub struct PolicyResult {
    /// Summary row.
    pub summary: SummaryRow,
    /// Per-second rows in time order, for the seconds in which something was sent or completed.
    pub timeseries: Vec<TimeseriesRow>,
    /// Interval log text.
    pub hlog: String,
    /// Latencies after warm-up, ns.
    pub histogram: Histogram<u64>,
    /// Requests sent to each backend after warm-up (`targets.csv`'s counts, and the herd
    /// measure's denominator, `lblab_stats::herd`).
    pub backend_sends: Vec<u64>,
    /// Failed requests (errors and deadlines exceeded) per backend after warm-up, as far as the
    /// recorder was told where they went ([`Recorder::on_backend_result`]).
    pub backend_failures: Vec<u64>,
    /// Requests after warm-up that waited for a worker at their backend while a backend without
    /// an active fault had a worker free ([`Recorder::on_avoidable_wait`]; simulator only, 0 in
    /// real runs, whose client cannot see the servers' workers).
    pub avoidable_waits: u64,
    /// Failures per second and backend, warm-up included (`failures.csv`); seconds and backends
    /// without any are left out.
    pub failures: Vec<FailureRow>,
    /// What went wrong in the harness during the run (real mode); `summary.incidents` counts them.
    pub incidents: Vec<Incident>,
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
    /// Records that the run started (its time 0) at the Unix time `unix_s`, in seconds: the hlog
    /// says so in its header (`#[StartTime: <unix_s> (seconds since epoch)]` and a `BaseTime` line,
    /// HdrHistogram's convention), so that runs from several hosts can be aligned when they are
    /// merged. Real runs call it once; a simulated run's log keeps `0.000 (seconds since run
    /// start)`.
    pub fn set_start_time(&mut self, unix_s: f64) {
        self.hlog = super::hlog::with_start_time(&self.hlog, unix_s);
    }

    /// Adds harness incidents to the result and counts them in its summary row.
    pub fn add_incidents(&mut self, incidents: impl IntoIterator<Item = Incident>) {
        self.incidents.extend(incidents);
        self.summary.incidents = self.incidents.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
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
    fn hlog_intervals_are_tagged_with_the_policy_and_the_warm_up_told_apart() {
        // 1.5 s of warm-up: the calls intended before it are tagged as the warm-up's, those
        // intended after it as measured, so second 1 holds both.
        let mut r = Recorder::new("od(peak ewma),x", 1, 1_500_000_000);
        for i in 0..4000u64 {
            let t = i * 1_000_000;
            r.on_send(t, 0, false);
            r.on_result(t, t + 1_000, RequestResult::Ok);
        }
        let res = r.finish();
        let tags: Vec<Option<String>> = IntervalLogIterator::new(res.hlog.as_bytes())
            .filter_map(|e| match e {
                Ok(LogEntry::Interval(i)) => Some(i.tag().map(|t| t.as_str().to_string())),
                _ => None,
            })
            .collect();
        let warm = Some("od(peak_ewma)_x-warmup".to_string());
        let measured = Some("od(peak_ewma)_x".to_string());
        assert_eq!(
            tags,
            [
                warm.clone(),
                warm,
                measured.clone(),
                measured.clone(),
                measured
            ]
        );
        // lblab's reader agrees, and the measured intervals are exactly what the summary
        // counted: one cut for both (the calls' intended send times).
        let log = crate::parse_hlog(&res.hlog, "p.hlog").unwrap();
        let starts: Vec<f64> = log.intervals.iter().map(|i| i.start_s).collect();
        assert_eq!(starts, [0.0, 1.0, 1.0, 2.0, 3.0]);
        assert_eq!(log.intervals[1].histogram.len(), 500);
        assert_eq!(log.intervals[2].tag.as_deref(), Some("od(peak_ewma)_x"));
        assert_eq!(log.intervals[2].histogram.len(), 500);
        let measured = crate::sum_measured(&res.hlog, "p.hlog", "od(peak ewma),x", 1.5).unwrap();
        assert_eq!(measured.len(), 2500);
        assert_eq!(res.summary.ok, 2500);
        assert_eq!(measured, res.histogram);
        assert_eq!(log.measured_latencies, Some(2500));
        // The time series counts every call that ended in a second, whichever its cut.
        assert_eq!(res.timeseries[1].completed, 1000);
    }

    #[test]
    fn a_second_in_which_nothing_happens_has_no_row() {
        // Two calls a million seconds apart: two rows, not a million.
        let s = NANOS_PER_SEC;
        let mut r = Recorder::new("p", 3, 0);
        for t in [0, 1_000_000 * s] {
            r.on_send(t, 1, false);
            r.on_result(t, t + s / 2, RequestResult::Ok);
        }
        let res = r.finish();
        let seconds: Vec<u64> = res.timeseries.iter().map(|row| row.second).collect();
        assert_eq!(seconds, [0, 1_000_000]);
        assert!(res
            .timeseries
            .iter()
            .all(|row| row.completed == 1 && row.shares[1] == 1.0));
        assert_eq!(res.summary.ok, 2);
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
