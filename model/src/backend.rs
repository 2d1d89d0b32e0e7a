//! The backend behaviour model: a server with `workers` parallel workers and a FIFO queue, whose
//! service times come from a distribution and are stretched by the faults on its [`Timeline`].
//!
//! It is a sans-IO state machine like the policies: the simulator drives it with virtual time,
//! the real backend (`lblab backend`) with wall-clock time, and both get the same answers.
//!
//! Call order: [`Backend::on_arrival`] for every request; when a started request's `done_at`
//! comes, [`Backend::on_finish`]; when the client gives up on a request,
//! [`Backend::on_cancel`]. Each may start queued requests, returned as [`Started`].

use std::collections::VecDeque;

use lblab_policy::{LoadReport, Nanos, RpcKind, NANOS_PER_SEC};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::dist::Dist;
use crate::fault::Timeline;

/// Static parameters of one backend.
#[derive(Debug, Clone)]
pub struct BackendParams {
    /// Requests served in parallel.
    pub workers: u32,
    /// Requests that may wait for a worker; more are rejected (RESOURCE_EXHAUSTED).
    pub queue_limit: u32,
    /// Nominal service time of a unary request.
    pub service_time: Dist,
    /// Duration of a streaming call (streams hold no worker).
    pub stream_duration: Dist,
    /// Each method's service-time factor (`[[workload.methods]]`); empty: every call has
    /// factor 1.
    pub method_factors: Vec<f64>,
}

/// A request the backend started serving: it finishes at `done_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// The caller's request token.
    pub token: u64,
    /// When it finishes (`Nanos::MAX`: never, e.g. stopped for ever).
    pub done_at: Nanos,
    /// The service delay it was given (`done_at − start`), for delay-accuracy accounting.
    pub service: Nanos,
}

/// What happens to an arriving request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// A worker took it (or it is a stream).
    Started(Started),
    /// It waits for a worker.
    Queued,
    /// The queue is full: fails at once with RESOURCE_EXHAUSTED.
    Rejected,
    /// A fail-fast fault: fails at once with UNAVAILABLE.
    Failed,
    /// The backend is down: connection refused / UNAVAILABLE.
    Down,
    /// A black hole: never answered.
    Swallowed,
}

#[derive(Debug, Clone, Copy)]
struct Waiting {
    token: u64,
    work: Nanos,
}

#[derive(Debug, Clone, Copy, Default)]
struct Window {
    start: Nanos,
    busy_integral: f64,
    completions: u64,
    errors: u64,
}

/// One backend's state.
#[derive(Debug, Clone)]
pub struct Backend {
    params: BackendParams,
    timeline: Timeline,
    rng: SmallRng,
    busy: u32,
    queue: VecDeque<Waiting>,
    /// Tokens currently holding a worker (small: at most `workers`).
    running: Vec<u64>,
    // Load accounting for ORCA reports, over 1 s windows.
    last_change: Nanos,
    current: Window,
    previous: Option<Window>,
}

/// Length of the window load reports are computed over.
pub const REPORT_WINDOW: Nanos = NANOS_PER_SEC;

impl Backend {
    /// A backend; `seed` fixes its service-time draws.
    pub fn new(params: BackendParams, timeline: Timeline, seed: u64) -> Self {
        Backend {
            running: Vec::with_capacity(params.workers as usize),
            params,
            timeline,
            rng: SmallRng::seed_from_u64(seed),
            busy: 0,
            queue: VecDeque::new(),
            last_change: 0,
            current: Window::default(),
            previous: None,
        }
    }

    /// The fault timeline.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// Requests holding a worker.
    pub fn busy(&self) -> u32 {
        self.busy
    }

    /// Requests waiting for a worker.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Worker count.
    pub fn workers(&self) -> u32 {
        self.params.workers
    }

    /// Integrates busy workers over time up to `now`, rolling the report windows forward.
    fn account(&mut self, now: Nanos) {
        let now = now.max(self.last_change);
        let busy = f64::from(self.busy);
        while now >= self.current.start + REPORT_WINDOW {
            let boundary = self.current.start + REPORT_WINDOW;
            self.current.busy_integral += busy * (boundary - self.last_change) as f64;
            self.previous = Some(self.current);
            self.current = Window {
                start: boundary,
                ..Window::default()
            };
            self.last_change = boundary;
            if now >= boundary + 2 * REPORT_WINDOW {
                // Whole windows without events: the last of them is what a report shows.
                let start = boundary + (now - boundary) / REPORT_WINDOW * REPORT_WINDOW;
                let idle = Window {
                    start: start - REPORT_WINDOW,
                    busy_integral: busy * REPORT_WINDOW as f64,
                    ..Window::default()
                };
                self.previous = Some(idle);
                self.current = Window {
                    start,
                    ..Window::default()
                };
                self.last_change = start;
            }
        }
        self.current.busy_integral += busy * (now - self.last_change) as f64;
        self.last_change = now;
    }

    fn start(&mut self, now: Nanos, token: u64, work: Nanos) -> Started {
        self.busy += 1;
        self.running.push(token);
        let done_at = self.timeline.finish_time(now, work);
        Started {
            token,
            done_at,
            service: done_at.saturating_sub(now),
        }
    }

    /// A request of `method` (0 without methods) arrives at `now`.
    pub fn on_arrival(&mut self, now: Nanos, token: u64, kind: RpcKind, method: u32) -> Admission {
        self.account(now);
        if self.timeline.down_at(now) {
            return Admission::Down;
        }
        if self.timeline.black_hole_at(now) {
            return Admission::Swallowed;
        }
        let rate = self.timeline.error_rate(now);
        if rate > 0.0 && self.rng.random_bool(rate.min(1.0)) {
            self.current.errors += 1;
            return Admission::Failed;
        }
        if kind == RpcKind::Streaming {
            let len = self.params.stream_duration.sample(&mut self.rng);
            return Admission::Started(Started {
                token,
                done_at: now.saturating_add(len),
                service: len,
            });
        }
        let mut work = self.params.service_time.sample(&mut self.rng);
        if let Some(f) = self.params.method_factors.get(method as usize) {
            // Scaled only for workloads with methods, so that other runs stay bit for bit the same.
            let f = f * self.timeline.method_factor(now, method);
            work = (work as f64 * f) as Nanos;
        }
        if self.busy < self.params.workers {
            Admission::Started(self.start(now, token, work))
        } else if self.queue.len() < self.params.queue_limit as usize {
            self.queue.push_back(Waiting { token, work });
            Admission::Queued
        } else {
            self.current.errors += 1;
            Admission::Rejected
        }
    }

    fn release(&mut self, now: Nanos, token: u64) -> Option<Started> {
        let i = self.running.iter().position(|&t| t == token)?;
        self.running.swap_remove(i);
        self.busy -= 1;
        let next = self.queue.pop_front()?;
        Some(self.start(now, next.token, next.work))
    }

    /// The request `token` (started earlier, unary) finished at `now`. Returns the queued request
    /// that takes its worker, if any.
    pub fn on_finish(&mut self, now: Nanos, token: u64) -> Option<Started> {
        self.account(now);
        self.current.completions += 1;
        self.release(now, token)
    }

    /// The client gave up on `token`: drop it from the queue, or free its worker (the handler is
    /// cancelled, as a tonic handler future is dropped). Returns a request started in its place.
    pub fn on_cancel(&mut self, now: Nanos, token: u64) -> Option<Started> {
        self.account(now);
        if let Some(i) = self.queue.iter().position(|w| w.token == token) {
            self.queue.remove(i);
            return None;
        }
        self.release(now, token)
    }

    /// The process crashed at `now`: everything running or queued is lost. Returns the lost tokens.
    pub fn on_crash(&mut self, now: Nanos) -> Vec<u64> {
        self.account(now);
        let mut lost: Vec<u64> = self.running.drain(..).collect();
        lost.extend(self.queue.drain(..).map(|w| w.token));
        self.busy = 0;
        lost
    }

    /// The ORCA load report the backend would attach at `now`: utilization = busy worker share and
    /// rates over the last full second.
    pub fn load_report(&mut self, now: Nanos) -> LoadReport {
        self.account(now);
        let w = self.previous.unwrap_or(self.current);
        let span = if self.previous.is_some() {
            REPORT_WINDOW as f64
        } else {
            (now.saturating_sub(self.current.start)).max(1) as f64
        };
        let utilization = w.busy_integral / (span * f64::from(self.params.workers.max(1)));
        let secs = span / 1e9;
        LoadReport {
            cpu_utilization: utilization.clamp(0.0, 1.0),
            application_utilization: 0.0,
            rps_fractional: w.completions as f64 / secs,
            eps: w.errors as f64 / secs,
        }
    }

    /// Expected completion time of a new unary request arriving at `now`, given the true queue and
    /// current speed (the oracle's view): waits for `queued + 1` worker slots at `mean_work` each.
    pub fn expected_finish(&self, now: Nanos, mean_work: Nanos) -> Nanos {
        if self.timeline.down_at(now) || self.timeline.black_hole_at(now) {
            return Nanos::MAX;
        }
        let ahead = (self.busy as u64 + self.queue.len() as u64 + 1)
            .saturating_sub(self.params.workers as u64);
        let rounds = ahead.div_ceil(self.params.workers.max(1) as u64);
        let work = mean_work.saturating_mul(rounds + 1);
        self.timeline.finish_time(now, work)
    }
}
