//! The load driver: one open-loop (or closed-loop) run of one policy against a set of targets.
//!
//! The one loop (STYLE.md): a dispatcher thread walks the merged arrival schedule of every client,
//! sleeps precisely until each intended send time, and spawns the call on the load generator's own
//! tokio runtime; the call reports its end to a recorder thread. Latency counts from the intended
//! send time, so a late dispatch shows as latency (no coordinated omission), and the lateness itself
//! is recorded apart. Every intended request ends as exactly one of ok, error, deadline exceeded or
//! dropped.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use lblab_model::arrival::{ClientArrivals, OpenLoop};
use lblab_model::fault::Timeline;
use lblab_model::scenario::{derive_seed, streams, Arrival, PolicyEntry, Scenario};
use lblab_policy::Nanos;
use lblab_record::{Incident, PolicyResult, StatusRow};
use lblab_wire::timer::{self, DEFAULT_SPIN};
use lblab_wire::Clock;

use crate::balance::{Balancer, EndpointUpdater, Outage};
use crate::cpu::{self, CpuMeter};
use crate::incidents;
use crate::target::{Target, TargetSpec};
use crate::LoadgenError;

mod client;
mod connect;
mod driver;
mod live;
mod recorder;
mod resolve;
mod statuses;

pub use client::CallOptions;
use client::Client;
use connect::{check_reachable, connect, outages_of};
use driver::Drive;
pub use lblab_record::Quantiles;
pub use live::Live;
use recorder::{Recorded, RecorderThread, Sink};
use resolve::resolve_periodically;

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
    /// How the clients connect and what they send (default: lblab's Echo service in plaintext).
    pub calls: CallOptions,
    /// Where the targets came from: a `dns:///` name is re-resolved during the run and the
    /// balancers follow its addresses (`None`: the targets are fixed).
    pub resolver: Option<TargetSpec>,
    /// Where the run publishes its live figures for a progress display (reset at its start).
    pub live: Option<Arc<Live>>,
    /// Send at most this many calls (warm-up included; open loop: arrivals dispatched, closed
    /// loop: calls started), then end the run.
    pub max_calls: Option<u64>,
    /// Open loop: the time warp of a rate schedule ([`crate::schedule`]); the scenario's rate
    /// must be its mean.
    pub warp: Option<Arc<crate::schedule::Warp>>,
    /// Closed loop: when each client's slots run (ns since time 0), from a concurrency
    /// schedule ([`crate::schedule::RateSchedule::slot_spans`]); the workload's concurrency must
    /// be their count.
    pub slot_spans: Option<Arc<Vec<crate::schedule::SlotSpan>>>,
}

/// Worker threads of the load generator's runtime unless told otherwise: two, so that on a
/// two-core machine the calls can use both cores when the server runs elsewhere.
pub const WORKER_THREADS: usize = 2;

impl RunOptions<'_> {
    /// Defaults with the given origin.
    pub fn new(origin: Instant) -> Self {
        RunOptions {
            origin,
            stop: None,
            max_in_flight: 20_000,
            worker_threads: WORKER_THREADS,
            spin: DEFAULT_SPIN,
            connect_wait: Duration::from_secs(5),
            realtime: false,
            cpu: None,
            calls: CallOptions::default(),
            resolver: None,
            live: None,
            max_calls: None,
            warp: None,
            slot_spans: None,
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
    /// When the run's load ended, ns since time 0: the scenario's end, or earlier when it was
    /// stopped or its [`RunOptions::max_calls`] were sent.
    pub run_end: Nanos,
    /// Endpoints that left or joined the list when the targets were re-resolved, with when.
    pub endpoint_changes: Vec<String>,
    /// How the calls ended, by gRPC status and message, warm-up included (`statuses.csv`).
    pub statuses: Vec<StatusRow>,
}

impl LoadRun {
    /// CPU per call of the runtime threads (the RPC stack, the policy, the completions), µs.
    pub fn cpu_per_call_us(&self) -> f64 {
        self.per_call_us(self.client_cpu_ns)
    }

    /// CPU per call of the dispatcher thread (pacing and spawning each call), µs.
    pub fn dispatcher_per_call_us(&self) -> f64 {
        self.per_call_us(self.dispatcher_cpu_ns)
    }

    /// CPU per call of the runtime threads and the dispatcher together, µs: what the load
    /// generator spends on a call (its recorder thread, under 2 µs a call, apart).
    pub fn total_cpu_per_call_us(&self) -> f64 {
        self.per_call_us(self.client_cpu_ns + self.dispatcher_cpu_ns)
    }

    fn per_call_us(&self, ns: u64) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            ns as f64 / self.calls as f64 / 1e3
        }
    }
}

/// Runs `policy` of `scenario` against `targets` (one per backend, in order) and returns what it
/// measured. Blocks; builds and shuts down its own tokio runtime.
pub fn run_policy(
    scenario: &Scenario,
    policy: &PolicyEntry,
    targets: &[Target],
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
    let runtime = build_runtime(options, &meter)?;
    let clock = Clock::new(options.origin);
    // Nothing can be measured if no target answers: say so rather than record a run of errors.
    let unreachable = runtime.block_on(client::probe(
        targets,
        options.connect_wait,
        &options.calls.transport,
    ));
    check_reachable(targets, &unreachable, options.connect_wait)?;
    let statuses = Arc::new(statuses::StatusTally::default());
    let (clients, balancers) = connect(&runtime, scenario, policy, targets, options, &statuses)?;
    let changes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let resolver = options.resolver.as_ref().and_then(|spec| {
        let every = spec.refresh()?;
        let updaters: Vec<EndpointUpdater> = balancers.iter().map(Balancer::updater).collect();
        let task = resolve_periodically(
            spec.clone(),
            every,
            targets.to_vec(),
            updaters,
            options.calls.transport.clone(),
            clock,
            changes.clone(),
        );
        Some(runtime.spawn(task))
    });

    let sink = Sink::new();
    let timelines: Option<Vec<Timeline>> = (targets.len() == scenario.backends.len()).then(|| {
        scenario
            .backends
            .iter()
            .map(|b| b.timeline.clone())
            .collect()
    });
    if let Some(live) = &options.live {
        live.begin(w.end());
    }
    let recorder = RecorderThread::new(
        &policy.name,
        targets.len(),
        w,
        timelines.clone(),
        options.live.clone(),
    );
    let recorder = recorder.spawn(sink.clone())?;

    let in_flight = Arc::new(AtomicUsize::new(0));
    let stopped = || options.stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let drive = Drive {
        clock,
        handle: runtime.handle().clone(),
        sink: &sink,
        in_flight: &in_flight,
        deadline: Duration::from_nanos(w.deadline),
        stream_bound: Duration::from_nanos(w.end() + w.drain()),
        max_in_flight: options.max_in_flight,
        spin: options.spin,
        stopped: &stopped,
        end: w.end(),
        max_calls: options.max_calls,
        warp: options.warp.as_deref(),
        slot_spans: options.slot_spans.as_deref().map(Vec::as_slice),
    };
    let cpu_before = meter.total_ns();
    let watch = crate::machine::MachineWatch::start(clock);
    let (calls, dispatcher_cpu_ns) = dispatch(&drive, clients, scenario, options)?;
    let watched = watch.finish();
    drain(&in_flight, w.drain(), &stopped);
    let client_cpu_ns = meter.total_ns().saturating_sub(cpu_before);
    let run_end = clock.now().min(w.end());
    if let Some(r) = resolver {
        r.abort();
    }
    let outages = outages_of(&balancers, &unreachable);
    let load_reports: u64 = balancers.iter().map(Balancer::load_reports).sum();
    drop(balancers);
    // Calls still in flight are dropped with the runtime and counted as dropped.
    runtime.shutdown_timeout(if stopped() {
        STOP_DRAIN
    } else {
        Duration::from_secs(2)
    });
    sink.close();
    let mut recorded = recorder
        .join()
        .map_err(|_| LoadgenError::Panicked("recorder"))?;
    let addrs: Vec<_> = targets.iter().map(|t| t.addr).collect();
    let found = incidents_of(
        &policy.name,
        &addrs,
        &outages,
        timelines.as_deref(),
        run_end,
        &recorded,
        (w.deadline, options.max_in_flight),
    );
    recorded.result.add_incidents(found);
    let busy = watched.incident(&policy.name, w.warmup, run_end);
    recorded
        .result
        .add_incidents(busy.into_iter().collect::<Vec<_>>());
    let answered = statuses.rows(&policy.name).iter().map(|r| r.count).sum();
    let unweighted = crate::incidents::no_load_reports(
        &policy.name,
        &policy.config_json,
        load_reports,
        answered,
        run_end,
    );
    recorded
        .result
        .add_incidents(unweighted.into_iter().collect::<Vec<_>>());
    let endpoint_changes = std::mem::take(&mut *changes.lock().unwrap_or_else(|e| e.into_inner()));
    recorded.result.set_start_time(unix_time_of(options.origin));
    Ok(LoadRun {
        calls: calls.unwrap_or_else(|| recorded.sends.iter().sum()),
        result: recorded.result,
        lateness: recorded.lateness,
        client_cpu_ns,
        dispatcher_cpu_ns,
        sends_per_backend: recorded.sends,
        partial: stopped(),
        run_end,
        endpoint_changes,
        statuses: statuses.rows(&policy.name),
    })
}

/// The Unix time, in seconds, of `instant` (past or future): what the hlog records as the run's
/// start, so that runs from several load generators can be aligned when merged.
fn unix_time_of(instant: Instant) -> f64 {
    let (now, unix_now) = (Instant::now(), std::time::SystemTime::now());
    let unix_now = unix_now
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    match now.checked_duration_since(instant) {
        Some(ago) => unix_now - ago.as_secs_f64(),
        None => unix_now + instant.duration_since(now).as_secs_f64(),
    }
}

/// The load generator's runtime: its threads' CPU time counted by `meter`, real-time and pinned
/// as the options say.
fn build_runtime(
    options: &RunOptions<'_>,
    meter: &CpuMeter,
) -> Result<tokio::runtime::Runtime, LoadgenError> {
    let (m1, m2) = (meter.clone(), meter.clone());
    let (realtime, cpu) = (options.realtime, options.cpu);
    tokio::runtime::Builder::new_multi_thread()
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
        })
}

/// What the driver follows: every client's schedule merged in time order (open loop), or each
/// client's own, which its slots share (closed loop).
enum Schedule {
    Open(OpenLoop),
    Closed(Vec<ClientArrivals>),
}

/// Runs the driver of the scenario's loop on a dispatcher thread; returns the arrivals it
/// dispatched (`None` for a closed loop: the recorder counts its calls) and its CPU time.
fn dispatch(
    drive: &Drive<'_>,
    clients: Vec<Client>,
    scenario: &Scenario,
    options: &RunOptions<'_>,
) -> Result<(Option<u64>, u64), LoadgenError> {
    let (w, seed) = (&scenario.workload, scenario.file.seed);
    let schedule = if w.arrival == Arrival::Closed {
        let arrivals = (0..w.clients).map(|c| ClientArrivals::new(w, seed, c));
        Schedule::Closed(
            arrivals
                .collect::<Result<_, _>>()
                .map_err(LoadgenError::Schedule)?,
        )
    } else {
        Schedule::Open(OpenLoop::new(w, seed).map_err(LoadgenError::Schedule)?)
    };
    std::thread::scope(|scope| {
        let dispatcher = std::thread::Builder::new()
            .name("lblab-dispatch".into())
            .spawn_scoped(scope, move || {
                timer::set_precise_timer_slack();
                if options.realtime {
                    let _ = timer::set_realtime(timer::RT_TIMER_PRIORITY);
                }
                let before = cpu::current_thread_ns();
                let calls = match schedule {
                    Schedule::Open(open) => Some(driver::open_loop(drive, &clients, open)),
                    Schedule::Closed(closed) => {
                        driver::closed_loop(drive, &clients, closed);
                        None
                    }
                };
                (calls, cpu::current_thread_ns().saturating_sub(before))
            })
            .map_err(|cause| LoadgenError::Io {
                what: "starting the dispatcher thread".into(),
                cause,
            })?;
        dispatcher
            .join()
            .map_err(|_| LoadgenError::Panicked("dispatcher"))
    })
}

/// Lets calls in flight end: each is bounded by its deadline (streams by the run end), and all
/// by `drain`. When stopped, gives them a moment only ([`STOP_DRAIN`]): the rest are cut off and
/// counted as dropped. A stop during the drain shortens it at once.
fn drain(in_flight: &AtomicUsize, drain: Nanos, stopped: &dyn Fn() -> bool) {
    let start = Instant::now();
    while in_flight.load(Ordering::Acquire) > 0 {
        let limit = if stopped() {
            STOP_DRAIN
        } else {
            Duration::from_nanos(drain)
        };
        if start.elapsed() >= limit {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The harness incidents of a run: outages the scenario did not schedule, overload drops, late
/// dispatch.
fn incidents_of(
    name: &str,
    targets: &[std::net::SocketAddr],
    outages: &[Vec<Vec<Outage>>],
    timelines: Option<&[Timeline]>,
    run_end: Nanos,
    recorded: &Recorded,
    (deadline, max_in_flight): (Nanos, usize),
) -> Vec<Incident> {
    let mut found = incidents::from_outages(name, targets, outages, timelines, run_end);
    found.extend(recorded.overload.incident(name, deadline, max_in_flight));
    if let Some((first, last)) = recorded.late_span {
        found.extend(incidents::late_dispatch(
            name,
            &recorded.measured_lateness,
            first,
            last,
            recorded.warmup_late,
        ));
    }
    found
}
