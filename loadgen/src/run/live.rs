//! A run's figures while it goes, for a progress display: calls ended so far and the p99 of the
//! measured latencies so far. The recorder thread publishes them; any thread may read them.
//! They cost the run nothing per call: the recorder adds a batch's count every 10 ms and reads
//! its p99 at most every [`P99_EVERY`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lblab_policy::Nanos;

/// How often the recorder recomputes the p99 so far (a walk over the histogram's counts).
pub(super) const P99_EVERY: Duration = Duration::from_millis(250);

/// Live figures of the run in progress; [`Live::reset`] before each run that shares it.
#[derive(Debug, Default)]
pub struct Live {
    ended: AtomicU64,
    /// p99 of the measured latencies so far, ns; 0 until the warm-up is over and a call ended.
    p99_ns: AtomicU64,
    /// Time of the run's clock the recorder last heard of, ns.
    now_ns: AtomicU64,
    /// Runs begun with [`Live::begin`] so far.
    runs: AtomicU64,
    /// The scheduled end (warm-up + duration) of the run in progress, ns.
    planned_ns: AtomicU64,
    /// Runs beyond those the caller planned (a disturbed run run again).
    extra_runs: AtomicU64,
}

impl Live {
    /// Figures of no run yet.
    pub fn new() -> Live {
        Live::default()
    }

    /// Back to no calls, before a new run.
    pub fn reset(&self) {
        self.ended.store(0, Ordering::Relaxed);
        self.p99_ns.store(0, Ordering::Relaxed);
        self.now_ns.store(0, Ordering::Relaxed);
    }

    /// A new run starts, scheduled to end `planned_end` into its clock (its warm-up + duration):
    /// back to no calls, and one more run begun.
    pub fn begin(&self, planned_end: Nanos) {
        self.reset();
        self.planned_ns.store(planned_end, Ordering::Relaxed);
        self.runs.fetch_add(1, Ordering::Relaxed);
    }

    /// Runs begun so far ([`Live::begin`]); a change tells a reader that a new run started.
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    /// The scheduled end of the run in progress (warm-up + duration), on its clock.
    pub fn planned(&self) -> Duration {
        Duration::from_nanos(self.planned_ns.load(Ordering::Relaxed))
    }

    /// One more run will follow than was planned (the harness runs a disturbed one again).
    pub fn add_extra_run(&self) {
        self.extra_runs.fetch_add(1, Ordering::Relaxed);
    }

    /// Runs announced with [`Live::add_extra_run`].
    pub fn extra_runs(&self) -> u64 {
        self.extra_runs.load(Ordering::Relaxed)
    }

    /// Calls that ended so far, warm-up included (ok, failed or timed out; not the dropped).
    pub fn ended(&self) -> u64 {
        self.ended.load(Ordering::Relaxed)
    }

    /// The p99 of the latencies measured so far (after the warm-up), or `None` before any.
    pub fn p99_so_far(&self) -> Option<Duration> {
        match self.p99_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// How far into the run (its scenario time) the last ended call was.
    pub fn run_time(&self) -> Duration {
        Duration::from_nanos(self.now_ns.load(Ordering::Relaxed))
    }

    pub(super) fn add_ended(&self, n: u64, newest_end: Nanos) {
        self.ended.fetch_add(n, Ordering::Relaxed);
        self.now_ns.fetch_max(newest_end, Ordering::Relaxed);
    }

    pub(super) fn set_p99(&self, ns: u64) {
        self.p99_ns.store(ns, Ordering::Relaxed);
    }
}
