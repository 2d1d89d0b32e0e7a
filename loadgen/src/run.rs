//! The load driver: one open-loop (or closed-loop) run of one policy against a set of targets.
//!
//! The one loop (STYLE.md): a dispatcher thread walks the merged arrival schedule of every client,
//! sleeps precisely until each intended send time, and spawns the call on the load generator's own
//! tokio runtime; the call reports its end to a recorder thread. Latency counts from the intended
//! send time, so a late dispatch shows as latency (no coordinated omission), and the lateness itself
//! is recorded apart. Every intended request ends as exactly one of ok, error, deadline exceeded or
//! dropped.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use lblab_model::fault::Timeline;
use lblab_model::results::{PolicyResult, Recorder, RequestResult};
use lblab_model::scenario::{derive_seed, streams, Arrival, PolicyEntry, Scenario};
use lblab_policy::config::Selected;
use lblab_policy::{Nanos, RpcKind, NANOS_PER_SEC};
use lblab_wire::pb::echo::echo_client::EchoClient;
use lblab_wire::pb::echo::CallRequest;
use lblab_wire::timer::{self, DEFAULT_SPIN};
use lblab_wire::Clock;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};
use serde::{Deserialize, Serialize};
use tonic::transport::Endpoint;

use crate::balance::{Balancer, BalancerOptions, Outage, Picked, PolicyService};
use crate::cpu::{self, CpuMeter};
use crate::incidents::{self, OverloadDrops};
use crate::tower_p2c::{self, TowerService};
use crate::LoadgenError;

/// How long calls in flight may go on after the run is stopped (Ctrl-C) before they are cut off
/// and counted as dropped: the run must end within a second.
const STOP_DRAIN: Duration = Duration::from_millis(250);

/// Options of one run.
#[derive(Debug, Clone)]
pub struct RunOptions<'a> {
    /// Time 0 of the scenario: arrivals are scheduled from it, and a fleet started with the same
    /// origin applies its faults on the same timeline. Must leave time to connect (the run waits for
    /// connections first, then for the origin).
    pub origin: Instant,
    /// Set to end the run early; what was measured is kept and marked partial.
    pub stop: Option<&'a AtomicBool>,
    /// Calls in flight above which new arrivals are dropped (counted, never sent).
    pub max_in_flight: usize,
    /// Worker threads of the load generator's runtime.
    pub worker_threads: usize,
    /// How long the dispatcher spins before each send time.
    pub spin: Duration,
    /// How long to wait for connections before the run.
    pub connect_wait: Duration,
    /// Run the runtime's workers and the dispatcher in the real-time scheduling class
    /// ([`timer::set_realtime`]), so that other processes on the machine do not delay them.
    pub realtime: bool,
    /// Pin the runtime's workers and the dispatcher to this CPU.
    pub cpu: Option<usize>,
}

impl RunOptions<'_> {
    /// Defaults with the given origin.
    pub fn new(origin: Instant) -> Self {
        RunOptions {
            origin,
            stop: None,
            max_in_flight: 20_000,
            worker_threads: 2,
            spin: DEFAULT_SPIN,
            connect_wait: Duration::from_secs(5),
            realtime: false,
            cpu: None,
        }
    }
}

/// Percentiles of a histogram of nanoseconds, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Quantiles {
    /// Values recorded.
    pub count: u64,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Maximum, µs.
    pub max_us: f64,
}

impl Quantiles {
    /// Summarizes `h` (values in ns).
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Quantiles::default();
        }
        let us = |v: u64| v as f64 / 1e3;
        Quantiles {
            count: h.len(),
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

/// What one run measured.
#[derive(Debug)]
pub struct LoadRun {
    /// Latency and accounting, in the results schema shared with the simulator.
    pub result: PolicyResult,
    /// Dispatch lateness (actual − intended send time) of every call, ns.
    pub lateness: Histogram<u64>,
    /// CPU time of the load generator's runtime threads (the RPC stack and the policy), ns.
    pub client_cpu_ns: u64,
    /// CPU time of the dispatcher thread (pacing, including its spin-waits), ns.
    pub dispatcher_cpu_ns: u64,
    /// Calls dispatched.
    pub calls: u64,
    /// Calls the policy could see were sent per backend (all calls, warm-up included).
    pub sends_per_backend: Vec<u64>,
    /// True if the run was stopped early.
    pub partial: bool,
}

impl LoadRun {
    /// Client CPU per call, µs.
    pub fn cpu_per_call_us(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.client_cpu_ns as f64 / self.calls as f64 / 1e3
        }
    }
}

/// The client side of one scenario client: an lblab policy or tower's balancer.
enum Client {
    Lblab(EchoClient<PolicyService>),
    Tower(EchoClient<TowerService>),
}

impl Clone for Client {
    fn clone(&self) -> Self {
        match self {
            Client::Lblab(c) => Client::Lblab(c.clone()),
            Client::Tower(c) => Client::Tower(c.clone()),
        }
    }
}

enum Event {
    /// A call ended: where it went (if it was sent), how, when, and how late it left.
    Done {
        intended: Nanos,
        backend: Option<u32>,
        kind: RpcKind,
        end: Nanos,
        result: RequestResult,
        lateness: Option<u64>,
        /// Not sent because the load generator could not keep to its schedule.
        overload: Overload,
    },
}

/// Why a call was not sent, if the load generator was to blame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Overload {
    /// Not an overload drop.
    No,
    /// It would have left a whole deadline after its intended time.
    Behind,
    /// The cap on calls in flight was reached.
    InFlight,
}

/// Where calls report their end. Pushing takes a lock but wakes no thread: the recorder thread
/// collects every 10 ms, so the run adds no cross-thread wake-up per call (costly on a VM).
#[derive(Clone)]
struct Sink(Arc<SinkInner>);

struct SinkInner {
    events: std::sync::Mutex<Vec<Event>>,
    closed: AtomicBool,
}

impl Sink {
    fn new() -> Sink {
        Sink(Arc::new(SinkInner {
            events: std::sync::Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        }))
    }

    fn send(&self, ev: Event) {
        self.0
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(ev);
    }

    /// No more events will come (the recorder then drains and ends).
    fn close(&self) {
        self.0.closed.store(true, Ordering::Release);
    }

    /// Waits for a batch; `None` when closed and empty.
    fn next_batch(&self, spare: &mut Vec<Event>) -> Option<()> {
        loop {
            let closed = self.0.closed.load(Ordering::Acquire);
            std::mem::swap(
                &mut *self.0.events.lock().unwrap_or_else(|e| e.into_inner()),
                spare,
            );
            if !spare.is_empty() {
                return Some(());
            }
            if closed {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Counts a call as dropped if its task is dropped before it ends (runtime shut down).
struct Pending {
    intended: Nanos,
    kind: RpcKind,
    events: Sink,
    in_flight: Arc<AtomicUsize>,
    done: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        if !self.done {
            self.events.send(Event::Done {
                intended: self.intended,
                backend: None,
                kind: self.kind,
                end: self.intended,
                result: RequestResult::Dropped,
                lateness: None,
                overload: Overload::No,
            });
        }
    }
}

fn classify(status: &tonic::Status) -> RequestResult {
    let timed_out = || {
        let mut e: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
        while let Some(err) = e {
            if err.is::<tonic::TimeoutExpired>() {
                return true;
            }
            e = err.source();
        }
        false
    };
    match status.code() {
        tonic::Code::DeadlineExceeded => RequestResult::DeadlineExceeded,
        // tonic's channel reports its own grpc-timeout expiry as CANCELLED "Timeout expired".
        tonic::Code::Cancelled if timed_out() => RequestResult::DeadlineExceeded,
        _ => RequestResult::Error,
    }
}

macro_rules! with_client {
    ($client:expr, |$c:ident| $body:expr) => {
        match $client {
            Client::Lblab($c) => $body,
            Client::Tower($c) => $body,
        }
    };
}

/// One call; boxed with an explicit `Send` bound, which works around rustc's "implementation of
/// `From` is not general enough" (rust-lang/rust#102211) in the spawned tasks.
fn call_once(
    client: &mut Client,
    id: u64,
    kind: RpcKind,
    deadline: Duration,
    stream_bound: Duration,
    picked: Picked,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = RequestResult> + Send + '_>> {
    Box::pin(call_inner(client, id, kind, deadline, stream_bound, picked))
}

async fn call_inner(
    client: &mut Client,
    id: u64,
    kind: RpcKind,
    deadline: Duration,
    stream_bound: Duration,
    picked: Picked,
) -> RequestResult {
    let mut req = tonic::Request::new(CallRequest {
        id,
        payload: Default::default(),
    });
    req.extensions_mut().insert(picked);
    req.extensions_mut().insert(kind);
    match kind {
        RpcKind::Unary => {
            req.set_timeout(deadline);
            // The balancer and the channel enforce the deadline; this outer bound only guards the run.
            let call = with_client!(client, |c| tokio::time::timeout(
                deadline + Duration::from_millis(200),
                c.unary(req)
            )
            .await);
            match call {
                Ok(Ok(_)) => RequestResult::Ok,
                Ok(Err(status)) => classify(&status),
                Err(_) => RequestResult::DeadlineExceeded,
            }
        }
        RpcKind::Streaming => {
            let call = with_client!(client, |c| tokio::time::timeout(stream_bound, async {
                let mut s = c.server_stream(req).await?.into_inner();
                while s.message().await?.is_some() {}
                Ok::<(), tonic::Status>(())
            })
            .await);
            match call {
                Ok(Ok(())) => RequestResult::Ok,
                Ok(Err(status)) => classify(&status),
                Err(_) => RequestResult::DeadlineExceeded,
            }
        }
    }
}

/// Tries a TCP connection to every target at once; `None` where one was accepted, else why not.
async fn probe(targets: &[SocketAddr], timeout: Duration) -> Vec<Option<String>> {
    let tries: Vec<_> = targets
        .iter()
        .map(|&t| {
            tokio::spawn(async move {
                match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(t)).await {
                    Ok(Ok(_)) => None,
                    Ok(Err(e)) => Some(e.to_string()),
                    Err(_) => Some(format!("no answer within {timeout:?}")),
                }
            })
        })
        .collect();
    let mut out = Vec::with_capacity(tries.len());
    for t in tries {
        out.push(t.await.unwrap_or_else(|e| Some(e.to_string())));
    }
    out
}

/// Builds one client of the scenario for `policy`.
fn make_client(
    policy: &PolicyEntry,
    targets: &[SocketAddr],
    origin: Instant,
    seed: u64,
) -> Result<(Client, Option<Balancer>), LoadgenError> {
    let endpoints = targets
        .iter()
        .map(|a| {
            format!("http://{a}")
                .parse::<http::Uri>()
                .map_err(|e| LoadgenError::Config(format!("target {a}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    match &policy.selected {
        Selected::Policy(cfg) => {
            let clock = Clock::new(origin);
            let p = cfg.build(clock.now());
            let balancer = Balancer::new(
                p,
                endpoints,
                BalancerOptions {
                    origin: Some(origin),
                    seed,
                    ..BalancerOptions::default()
                },
            );
            Ok((
                Client::Lblab(EchoClient::new(balancer.service())),
                Some(balancer),
            ))
        }
        Selected::Extra { name, config } if name == tower_p2c::NAME => {
            let cfg = tower_p2c::Config::from_json(config).map_err(LoadgenError::Config)?;
            let endpoints = endpoints.into_iter().map(Endpoint::from).collect();
            Ok((
                Client::Tower(EchoClient::new(tower_p2c::service(endpoints, cfg))),
                None,
            ))
        }
        Selected::Extra { name, .. } => Err(LoadgenError::Unsupported {
            policy: policy.name.clone(),
            name: name.clone(),
        }),
    }
}

/// Reorders per-call send records by intended time before they reach the [`Recorder`], whose
/// per-second traffic shares expect sends in order. Calls report when they end, so records are held
/// for `window` of intended time.
struct RecorderThread {
    recorder: Recorder,
    timelines: Option<Vec<Timeline>>,
    held: BinaryHeap<Reverse<(Nanos, u32)>>,
    window: Nanos,
    lateness: Histogram<u64>,
    /// Calls intended after the warm-up start here: the incidents count what the table counts.
    warmup: Nanos,
    /// Dispatch lateness of the calls intended after the warm-up.
    measured_lateness: Histogram<u64>,
    /// Calls intended during the warm-up that left more than [`incidents::LATE`] late.
    warmup_late: u64,
    /// Intended times of the first and the last call after the warm-up sent more than
    /// [`incidents::LATE`] late.
    late_span: Option<(Nanos, Nanos)>,
    overload: OverloadDrops,
    sends: Vec<u64>,
}

/// What the recorder thread leaves.
struct Recorded {
    result: PolicyResult,
    lateness: Histogram<u64>,
    measured_lateness: Histogram<u64>,
    warmup_late: u64,
    late_span: Option<(Nanos, Nanos)>,
    overload: OverloadDrops,
    sends: Vec<u64>,
}

impl RecorderThread {
    fn release(&mut self, upto: Nanos) {
        while let Some(&Reverse((t, b))) = self.held.peek() {
            if t > upto {
                break;
            }
            self.held.pop();
            let faulty = self
                .timelines
                .as_ref()
                .and_then(|tl| tl.get(b as usize))
                .is_some_and(|tl| tl.faulty_at(t));
            self.recorder.on_send(t, b as usize, faulty);
        }
    }

    fn run(mut self, rx: Sink) -> Recorded {
        let mut newest = 0;
        let mut batch = Vec::new();
        while rx.next_batch(&mut batch).is_some() {
            for ev in batch.drain(..) {
                self.on_event(ev, &mut newest);
            }
        }
        self.release(Nanos::MAX);
        Recorded {
            result: self.recorder.finish(),
            lateness: self.lateness,
            measured_lateness: self.measured_lateness,
            warmup_late: self.warmup_late,
            late_span: self.late_span,
            overload: self.overload,
            sends: self.sends,
        }
    }

    fn on_event(&mut self, ev: Event, newest: &mut Nanos) {
        {
            let Event::Done {
                intended,
                backend,
                kind,
                end,
                result,
                lateness,
                overload,
            } = ev;
            let measured = intended >= self.warmup;
            if let Some(l) = lateness {
                let _ = self.lateness.record(l.max(1));
                if measured {
                    let _ = self.measured_lateness.record(l.max(1));
                }
                if l > incidents::LATE {
                    if measured {
                        let (first, last) = self.late_span.get_or_insert((intended, intended));
                        *first = (*first).min(intended);
                        *last = (*last).max(intended);
                    } else {
                        self.warmup_late += 1;
                    }
                }
            }
            if overload != Overload::No {
                self.overload
                    .add(intended, overload == Overload::Behind, measured);
            }
            if let Some(b) = backend {
                if let Some(c) = self.sends.get_mut(b as usize) {
                    *c += 1;
                }
                self.held.push(Reverse((intended, b)));
            }
            *newest = (*newest).max(intended);
            self.release(newest.saturating_sub(self.window));
            match kind {
                RpcKind::Unary => self.recorder.on_result(intended, end, result),
                RpcKind::Streaming => self.recorder.on_stream_result(intended, result),
            }
            if let Some(b) = backend {
                self.recorder
                    .on_backend_result(b as usize, intended, end, result);
            }
        }
    }
}

/// Runs `policy` of `scenario` against `targets` (one per backend, in order) and returns what it
/// measured. Blocks; builds and shuts down its own tokio runtime.
pub fn run_policy(
    scenario: &Scenario,
    policy: &PolicyEntry,
    targets: &[SocketAddr],
    options: &RunOptions<'_>,
) -> Result<LoadRun, LoadgenError> {
    if !policy.runs_in_real() {
        return Err(LoadgenError::Unsupported {
            policy: policy.name.clone(),
            name: "oracle".into(),
        });
    }
    let w = &scenario.workload;
    let meter = CpuMeter::new();
    let (m1, m2) = (meter.clone(), meter.clone());
    let realtime = options.realtime;
    let cpu = options.cpu;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.worker_threads.max(1))
        .thread_name("lblab-loadgen")
        .enable_all()
        .on_thread_start(move || {
            m1.register_current();
            if realtime {
                let _ = timer::set_realtime(timer::RT_WORKER_PRIORITY);
            }
            if let Some(c) = cpu {
                let _ = timer::pin_to_cpu(c);
            }
        })
        .on_thread_stop(move || m2.unregister_current())
        .build()
        .map_err(|cause| LoadgenError::Io {
            what: "building the load generator's runtime".into(),
            cause,
        })?;
    let clock = Clock::new(options.origin);
    let seed = scenario.file.seed;

    // Nothing can be measured if no target answers: say so rather than record a run of errors.
    let unreachable = runtime.block_on(probe(targets, options.connect_wait));
    if !targets.is_empty() && unreachable.iter().all(Option::is_some) {
        let detail = targets
            .iter()
            .zip(&unreachable)
            .map(|(t, e)| format!("{t} ({})", e.as_deref().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(LoadgenError::Unreachable {
            waited: options.connect_wait,
            detail,
        });
    }

    // Clients and their connections.
    let (clients, balancers) = {
        let _guard = runtime.enter();
        let mut clients = Vec::new();
        let mut balancers = Vec::new();
        for c in 0..w.clients {
            let (client, balancer) = make_client(
                policy,
                targets,
                options.origin,
                derive_seed(seed, streams::POLICY, u64::from(c)),
            )?;
            clients.push(client);
            balancers.extend(balancer);
        }
        (clients, balancers)
    };
    runtime.block_on(async {
        for b in &balancers {
            b.wait_connected(options.connect_wait).await;
        }
    });

    let tx = Sink::new();
    let rx = tx.clone();
    let closer = tx.clone();
    let timelines: Option<Vec<Timeline>> = (targets.len() == scenario.backends.len()).then(|| {
        scenario
            .backends
            .iter()
            .map(|b| b.timeline.clone())
            .collect()
    });
    let scheduled = timelines.clone();
    let recorder = RecorderThread {
        recorder: Recorder::new(&policy.name, targets.len(), w.warmup),
        timelines,
        held: BinaryHeap::new(),
        window: w.deadline + 10 * NANOS_PER_SEC,
        lateness: Histogram::new_with_bounds(1, 3_600 * NANOS_PER_SEC, 3).expect("valid bounds"),
        warmup: w.warmup,
        measured_lateness: Histogram::new_with_bounds(1, 3_600 * NANOS_PER_SEC, 3)
            .expect("valid bounds"),
        warmup_late: 0,
        late_span: None,
        overload: OverloadDrops::default(),
        sends: vec![0; targets.len()],
    };
    let recorder = std::thread::Builder::new()
        .name("lblab-recorder".into())
        .spawn(move || recorder.run(rx))
        .map_err(|cause| LoadgenError::Io {
            what: "starting the recorder thread".into(),
            cause,
        })?;

    let in_flight = Arc::new(AtomicUsize::new(0));
    let stopped = || {
        options
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    };
    let end = w.end();
    let deadline = Duration::from_nanos(w.deadline);
    let deadline_ns = w.deadline;
    // A stream still open at the end of the drain is cut off (dropped), as in the simulator.
    let stream_bound = Duration::from_nanos(end + w.drain());
    let cpu_before = meter.total_ns();
    let handle = runtime.handle().clone();
    let in_flight_now = &in_flight;
    let dispatched = std::thread::scope(|scope| {
        let dispatcher = std::thread::Builder::new()
            .name("lblab-dispatch".into())
            .spawn_scoped(scope, move || -> Result<(u64, u64), LoadgenError> {
                timer::set_precise_timer_slack();
                if options.realtime {
                    let _ = timer::set_realtime(timer::RT_TIMER_PRIORITY);
                }
                let dispatcher_before = cpu::current_thread_ns();
                let mut calls = 0u64;

                let spawn_call =
                    |client: &Client, intended: Nanos, kind: RpcKind, id: u64, tx: &Sink| {
                        in_flight_now.fetch_add(1, Ordering::AcqRel);
                        let mut pending = Pending {
                            intended,
                            kind,
                            events: tx.clone(),
                            in_flight: in_flight_now.clone(),
                            done: false,
                        };
                        let mut client = client.clone();
                        handle.spawn(async move {
                            let lateness = clock.now().saturating_sub(intended);
                            // The call's deadline runs from its intended send time, as a real
                            // caller's would; one that cannot leave in time is not sent.
                            let Some(remaining) = deadline
                                .checked_sub(Duration::from_nanos(lateness))
                                .filter(|r| !r.is_zero())
                            else {
                                pending.done = true;
                                pending.events.send(Event::Done {
                                    intended,
                                    backend: None,
                                    kind,
                                    end: intended,
                                    result: RequestResult::Dropped,
                                    lateness: Some(lateness),
                                    overload: Overload::Behind,
                                });
                                return;
                            };
                            let picked = Picked::new();
                            let result = call_once(
                                &mut client,
                                id,
                                kind,
                                remaining,
                                stream_bound.saturating_sub(Duration::from_nanos(intended)),
                                picked.clone(),
                            )
                            .await;
                            let end = clock.now();
                            pending.done = true;
                            pending.events.send(Event::Done {
                                intended,
                                backend: picked.get().map(|e| e.0),
                                kind,
                                end,
                                result,
                                lateness: Some(lateness),
                                overload: Overload::No,
                            });
                        });
                    };

                let mut arrival_rngs: Vec<SmallRng> = (0..w.clients)
                    .map(|c| {
                        SmallRng::seed_from_u64(derive_seed(seed, streams::ARRIVALS, u64::from(c)))
                    })
                    .collect();
                let kind_of = |rng: &mut SmallRng| {
                    if w.streaming_share > 0.0 && rng.random_bool(w.streaming_share) {
                        RpcKind::Streaming
                    } else {
                        RpcKind::Unary
                    }
                };
                let per_client_rate = w.rate / f64::from(w.clients);
                match w.arrival {
                    Arrival::Poisson | Arrival::Constant => {
                        let exp = Exp::new(per_client_rate / NANOS_PER_SEC as f64)
                            .map_err(|e| LoadgenError::Config(format!("workload.rate: {e}")))?;
                        let gap_const = NANOS_PER_SEC as f64 / per_client_rate;
                        let poisson = w.arrival == Arrival::Poisson;
                        let next_gap = |rng: &mut SmallRng| -> Nanos {
                            if poisson {
                                exp.sample(rng) as Nanos
                            } else {
                                gap_const as Nanos
                            }
                        };
                        let mut heap = BinaryHeap::new();
                        for (c, rng) in arrival_rngs.iter_mut().enumerate() {
                            let first = if poisson {
                                next_gap(rng)
                            } else {
                                (gap_const * c as f64 / f64::from(w.clients)) as Nanos
                            };
                            heap.push(Reverse((first, c)));
                        }
                        while let Some(Reverse((t, c))) = heap.pop() {
                            if t >= end || stopped() {
                                continue;
                            }
                            let next = t + next_gap(&mut arrival_rngs[c]).max(1);
                            if next < end {
                                heap.push(Reverse((next, c)));
                            }
                            let kind = kind_of(&mut arrival_rngs[c]);
                            timer::sleep_until(clock.instant(t), options.spin);
                            calls += 1;
                            // An overloaded load generator drops what it cannot send in time
                            // (cheaply, so it catches up) instead of falling ever further behind.
                            let late = clock.now().saturating_sub(t);
                            let overload = if late >= deadline_ns {
                                Overload::Behind
                            } else if in_flight_now.load(Ordering::Acquire) >= options.max_in_flight
                            {
                                Overload::InFlight
                            } else {
                                Overload::No
                            };
                            if overload != Overload::No {
                                tx.send(Event::Done {
                                    intended: t,
                                    backend: None,
                                    kind,
                                    end: t,
                                    result: RequestResult::Dropped,
                                    lateness: Some(late),
                                    overload,
                                });
                                continue;
                            }
                            spawn_call(&clients[c], t, kind, calls, &tx);
                        }
                    }
                    Arrival::Closed => {
                        // Each client keeps `concurrency` calls in flight: a call starts when the previous ends.
                        let stop = Arc::new(AtomicBool::new(false));
                        for (c, client) in clients.iter().enumerate() {
                            for k in 0..w.concurrency {
                                let mut client = client.clone();
                                let tx = tx.clone();
                                let stop = stop.clone();
                                let mut rng = SmallRng::seed_from_u64(derive_seed(
                                    seed,
                                    streams::ARRIVALS,
                                    (c as u64) << 32 | u64::from(k),
                                ));
                                let share = w.streaming_share;
                                handle.spawn(async move {
                                    tokio::time::sleep_until(clock.instant(0).into()).await;
                                    let mut id = 0;
                                    loop {
                                        let now = clock.now();
                                        if now >= end || stop.load(Ordering::Relaxed) {
                                            return;
                                        }
                                        let kind = if share > 0.0 && rng.random_bool(share) {
                                            RpcKind::Streaming
                                        } else {
                                            RpcKind::Unary
                                        };
                                        let picked = Picked::new();
                                        id += 1;
                                        let result = call_once(
                                            &mut client,
                                            id,
                                            kind,
                                            deadline,
                                            stream_bound,
                                            picked.clone(),
                                        )
                                        .await;
                                        let done = clock.now();
                                        tx.send(Event::Done {
                                            intended: now,
                                            backend: picked.get().map(|e| e.0),
                                            kind,
                                            end: done,
                                            result,
                                            lateness: Some(0),
                                            overload: Overload::No,
                                        });
                                        if done == now && result != RequestResult::Ok {
                                            tokio::time::sleep(Duration::from_millis(1)).await;
                                        }
                                    }
                                });
                            }
                        }
                        while clock.now() < end && !stopped() {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                let dispatcher_cpu_ns = cpu::current_thread_ns().saturating_sub(dispatcher_before);
                Ok((calls, dispatcher_cpu_ns))
            })
            .map_err(|cause| LoadgenError::Io {
                what: "starting the dispatcher thread".into(),
                cause,
            })?;
        dispatcher
            .join()
            .map_err(|_| LoadgenError::Config("the dispatcher thread panicked".into()))?
    });
    let (mut calls, dispatcher_cpu_ns) = dispatched?;

    // Let calls in flight end: each is bounded by its deadline (streams by the run end). When
    // stopped, give them a moment only: the rest are cut off and counted as dropped.
    // A stop (Ctrl-C) during the drain shortens it at once.
    let drain_start = Instant::now();
    while in_flight.load(Ordering::Acquire) > 0 {
        let limit = if stopped() {
            STOP_DRAIN
        } else {
            Duration::from_nanos(w.drain())
        };
        if drain_start.elapsed() >= limit {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let client_cpu_ns = meter.total_ns().saturating_sub(cpu_before);
    if w.arrival == Arrival::Closed {
        calls = 0; // counted by the recorder below
    }
    let run_end = clock.now().min(end);
    let outages: Vec<_> = balancers.iter().map(Balancer::outages).collect();
    drop(balancers);
    // Calls still in flight are dropped with the runtime and counted as dropped.
    runtime.shutdown_timeout(if stopped() {
        STOP_DRAIN
    } else {
        Duration::from_secs(2)
    });
    closer.close();
    let Recorded {
        mut result,
        lateness,
        measured_lateness,
        warmup_late,
        late_span,
        overload,
        sends: sends_per_backend,
    } = recorder
        .join()
        .map_err(|_| LoadgenError::Config("the recorder thread panicked".into()))?;
    let name = &policy.name;
    let mut found = if outages.is_empty() {
        // tower's balancer keeps its connections to itself: only targets unreachable from the
        // start are known.
        incidents::from_outages(
            name,
            targets,
            &[unreachable
                .iter()
                .map(|e| {
                    e.iter()
                        .map(|e| Outage {
                            start: 0,
                            end: None,
                            lost: false,
                            failed_attempts: 1,
                            merged: 1,
                            error: Some(e.clone()),
                        })
                        .collect()
                })
                .collect()],
            scheduled.as_deref(),
            run_end,
        )
    } else {
        incidents::from_outages(name, targets, &outages, scheduled.as_deref(), run_end)
    };
    found.extend(overload.incident(name, w.deadline, options.max_in_flight));
    if let Some((first, last)) = late_span {
        found.extend(incidents::late_dispatch(
            name,
            &measured_lateness,
            first,
            last,
            warmup_late,
        ));
    }
    result.add_incidents(found);
    if calls == 0 {
        calls = sends_per_backend.iter().sum();
    }
    Ok(LoadRun {
        result,
        lateness,
        client_cpu_ns,
        dispatcher_cpu_ns,
        calls,
        sends_per_backend,
        partial: stopped(),
    })
}
