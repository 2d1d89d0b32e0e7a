//! The real harness: every policy of a scenario in turn, each against a fresh in-process fleet of
//! real servers on loopback, plus the harness's own floor.
//!
//! This crate joins the two real sides, which do not know each other: the fleet of
//! `lblab-backend` and the load generator of `lblab-loadgen`. [`run_real`] runs the floor and then
//! every policy ([`run_one`]: a fresh fleet, one load run, the fleet's delay accuracy), reruns a
//! policy whose run was disturbed by other work on the machine ([`HarnessOptions::attempts`]),
//! hands everything measured so far to a checkpoint callback after each policy, and keeps what it
//! measured when stopped or when a later policy fails. `lblab real` and `lblab compare` call it.
//!
//! The fleet runs on its own tokio runtime and the load generator on another, in one process, so
//! nothing outlives the run (no child processes to orphan) and the client's CPU time is measured
//! on the client's threads only. Both share one origin, so faults happen at the scenario's times.
//!
//! Timing on a small shared machine. What costs precision here is waking threads, not the timers:
//! on a virtual machine a wake-up across CPUs is an inter-processor interrupt of tens of
//! microseconds, and other processes (builds, benchmarks) take the CPU for milliseconds. So, by
//! default in the CLI ([`HarnessOptions`] has them off):
//! - one worker thread per runtime, so a request's hand-offs inside one side stay on one thread;
//! - the load generator (its worker and dispatcher) pinned to CPU 0 and the fleet (its worker and
//!   timer thread) to CPU 1, so each timer wakes its worker on the same CPU (the fleet's delay
//!   error p50 fell from ~45 µs to ~7 µs with this);
//! - real-time FIFO scheduling for these threads, workers above timers, so other processes cannot
//!   delay them (without it, p99s under a busy machine were milliseconds).
//!
//! Each policy's [`MachineLoad`] records how busy the machine was, since the precision figures
//! depend on it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lblab_backend::{DelayAccuracy, Fleet, FleetOptions};
use lblab_loadgen::run::{run_policy, LoadRun, Quantiles, RunOptions};
use lblab_loadgen::target::Target;
use lblab_loadgen::LoadgenError;
use lblab_message::setting::{Named, Names, Setting};
use lblab_model::scenario::{PolicyEntry, Scenario};
use lblab_policy::config::{self, Selected};
use lblab_policy::NANOS_PER_SEC;
pub use lblab_record::{FloorSummary, HarnessSummary, Host, MachineLoad, PolicyHarness};
use lblab_wire::timer;

pub mod lines;
pub mod plan;
mod policies;
pub mod remote;

pub use plan::{plan, Plan, PlanError, PlanInput};
pub use policies::PolicyLoop;
pub use remote::{run_remote, RemoteOptions, RemoteRun};

/// Why a real run could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// The load generator's error.
    #[error(transparent)]
    Loadgen(#[from] LoadgenError),
    /// The fleet could not start.
    #[error("starting the fleet")]
    Fleet(#[source] lblab_backend::BackendError),
    /// A `--policy` label the scenario does not have.
    #[error(transparent)]
    Labels(#[from] lblab_model::scenario::UnknownLabel),
    /// None of the policies selected runs in the real harness.
    #[error(transparent)]
    NoRealPolicy(#[from] NoRealPolicy),
    /// A scenario with several methods, which only the simulator runs.
    #[error(
        "scenario {scenario}: `[[workload.methods]]` is simulator only (the real fleet serves one \
         Echo method); run it with `lblab sim`, or remove the methods"
    )]
    Methods {
        /// The scenario's name.
        scenario: String,
    },
    /// The floor's policy config does not parse (a bug).
    #[error("the floor's round_robin config: {0}")]
    Floor(#[source] lblab_policy::config::ConfigError),
}

/// A selection of policies none of which runs in the real harness (`oracle` is simulator only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoRealPolicy {
    /// The scenario's name.
    pub scenario: String,
}

impl Named for NoRealPolicy {
    fn named(&self, names: Names) -> String {
        format!(
            "scenario {}: none of the selected policies runs in the real harness (`oracle` is \
             simulator only); add one or drop {}",
            self.scenario,
            names(Setting::Policy)
        )
    }
}

lblab_message::display_named!(NoRealPolicy);

impl std::error::Error for NoRealPolicy {}

/// Options of [`run_real`].
#[derive(Debug, Clone)]
pub struct HarnessOptions<'a> {
    /// Where the fleet listens (port 0: ephemeral ports).
    pub listen: SocketAddr,
    /// Set to stop; results so far are kept.
    pub stop: Option<&'a AtomicBool>,
    /// Only these policy labels (empty: all that run in the real harness).
    pub only: Vec<String>,
    /// Measure the floor (zero-delay backends at the same rate), for at most this long after a
    /// short warm-up; `None` skips it.
    pub floor: Option<Duration>,
    /// Worker threads of the fleet's runtime.
    pub fleet_threads: usize,
    /// Worker threads of the load generator's runtime.
    pub client_threads: usize,
    /// Run the fleet's and the load generator's threads in the real-time scheduling class
    /// ([`lblab_wire::timer::set_realtime`]), so that other work on the machine does not
    /// delay them (needs root or CAP_SYS_NICE).
    pub realtime: bool,
    /// How long the timer and dispatcher threads spin before each deadline.
    pub spin: Duration,
    /// Pin the load generator's threads to the first CPU and the fleet's to the second, so that
    /// each side's hand-offs stay on one CPU ([`timer::pin_to_cpu`]). Ignored with fewer than two
    /// CPUs.
    pub pin: bool,
    /// Runs per policy at most: a run whose own dispatch lateness p99 exceeds
    /// `disturbed_above` was disturbed by something else on the machine and is run again; the
    /// least disturbed attempt is kept, and every attempt's lateness is reported.
    pub attempts: u32,
    /// Dispatch-lateness p99 above which a run counts as disturbed.
    pub disturbed_above: Duration,
    /// Where each policy's run publishes its live figures (calls ended, p99 so far).
    pub live: Option<std::sync::Arc<lblab_loadgen::run::Live>>,
}

impl HarnessOptions<'_> {
    /// Whether the run was asked to stop.
    fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

impl Default for HarnessOptions<'_> {
    fn default() -> Self {
        HarnessOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            stop: None,
            only: Vec::new(),
            floor: Some(Duration::from_secs(10)),
            fleet_threads: 1,
            client_threads: 1,
            realtime: false,
            spin: timer::DEFAULT_SPIN,
            pin: false,
            attempts: 1,
            disturbed_above: Duration::from_millis(1),
            live: None,
        }
    }
}

/// One policy's real run.
#[derive(Debug)]
pub struct PolicyReport {
    /// Policy label.
    pub name: String,
    /// What the load generator measured.
    pub run: LoadRun,
    /// How precisely the fleet gave its service delays during the run.
    pub delay: DelayAccuracy,
    /// How busy the machine was around the run.
    pub machine: MachineLoad,
    /// Dispatch-lateness p99 (µs) of the earlier attempts that were discarded as disturbed.
    pub discarded_attempts: Vec<f64>,
}

/// (1-minute load average, total jiffies, idle jiffies, steal jiffies) from /proc; zeros where
/// they cannot be read.
fn machine_sample() -> (f64, u64, u64, u64) {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0);
    let cpu: Vec<u64> = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            s.lines().next().map(|l| {
                l.split_whitespace()
                    .skip(1)
                    .filter_map(|v| v.parse().ok())
                    .collect()
            })
        })
        .unwrap_or_default();
    let total = cpu.iter().take(8).sum();
    let idle = cpu.get(3).copied().unwrap_or(0) + cpu.get(4).copied().unwrap_or(0);
    let steal = cpu.get(7).copied().unwrap_or(0);
    (load, total, idle, steal)
}

fn machine_load(before: (f64, u64, u64, u64), after: (f64, u64, u64, u64)) -> MachineLoad {
    let total = after.1.saturating_sub(before.1).max(1) as f64;
    MachineLoad {
        loadavg_start: before.0,
        loadavg_end: after.0,
        steal_pct: 100.0 * after.3.saturating_sub(before.3) as f64 / total,
        busy_pct: 100.0 * (1.0 - after.2.saturating_sub(before.2) as f64 / total),
    }
}

/// Everything [`run_real`] measured.
#[derive(Debug, Default)]
pub struct RealRun {
    /// Policies run, in scenario order.
    pub policies: Vec<PolicyReport>,
    /// Policies skipped and why.
    pub skipped: Vec<(String, String)>,
    /// The floor run, if measured.
    pub floor: Option<FloorSummary>,
    /// True if stopped early (interrupted, or `failed`).
    pub partial: bool,
    /// What ended the run early after some results were measured (they are kept); a failure
    /// before anything was measured is an error instead.
    pub failed: Option<String>,
}

impl RealRun {
    /// The notes a real run's `summary.json` carries: the floor, each policy's harness figures,
    /// what was skipped and why the run stopped early; `h` is [`RealRun::summary`].
    pub fn notes(&self, h: &HarnessSummary) -> Vec<(String, String)> {
        let mut notes = Vec::new();
        if let Some(f) = &h.floor {
            notes.push(("harness_floor_p50_ms".into(), format!("{:.3}", f.p50_ms)));
            notes.push(("harness_floor_p99_ms".into(), format!("{:.3}", f.p99_ms)));
        }
        for p in &h.policies {
            let label = &p.policy;
            notes.push((
                format!("{label}: backend delay error p99 us"),
                format!("{:.0}", p.delay_error.p99_us),
            ));
            notes.push((
                format!("{label}: dispatch lateness p99 us"),
                format!("{:.0}", p.dispatch_lateness.p99_us),
            ));
            notes.push((
                format!("{label}: client cpu per call us"),
                format!("{:.1}", p.client_cpu_per_call_us),
            ));
        }
        for (name, why) in &self.skipped {
            notes.push((format!("{name}: skipped"), why.clone()));
        }
        if let Some(why) = &self.failed {
            notes.push(("stopped early".into(), why.clone()));
        }
        notes
    }

    /// The harness summary (`harness.json`).
    pub fn summary(&self) -> HarnessSummary {
        HarnessSummary {
            host: Host::this(),
            floor: self.floor.clone(),
            policies: self
                .policies
                .iter()
                .map(|p| PolicyHarness {
                    policy: p.name.clone(),
                    delay_error: p.delay.clone(),
                    dispatch_lateness: Quantiles::of(&p.run.lateness),
                    client_cpu_per_call_us: p.run.cpu_per_call_us(),
                    dispatcher_cpu_per_call_us: if p.run.calls == 0 {
                        0.0
                    } else {
                        p.run.dispatcher_cpu_ns as f64 / p.run.calls as f64 / 1e3
                    },
                    calls: p.run.calls,
                    machine: p.machine.clone(),
                    discarded_attempts: p.discarded_attempts.clone(),
                })
                .collect(),
        }
    }
}

/// Runs `policy` against a fresh fleet of `scenario`'s backends.
pub fn run_one(
    scenario: &Scenario,
    policy: &PolicyEntry,
    options: &HarnessOptions<'_>,
) -> Result<PolicyReport, HarnessError> {
    let realtime = options.realtime;
    let two_cpus = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    let (client_cpu, fleet_cpu) = if options.pin && two_cpus {
        (Some(0), Some(1))
    } else {
        (None, None)
    };
    let fleet_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.fleet_threads.max(1))
        .thread_name("lblab-fleet")
        .enable_all()
        .on_thread_start(move || {
            if realtime {
                let _ = timer::set_realtime(timer::RT_WORKER_PRIORITY);
            }
            if let Some(c) = fleet_cpu {
                let _ = timer::pin_to_cpu(c);
            }
        })
        .build()
        .map_err(|cause| LoadgenError::Io {
            what: "building the fleet's runtime".into(),
            cause,
        })?;
    // Time 0 a little ahead, so connections are up before the first arrival.
    let origin = Instant::now() + Duration::from_millis(500);
    let fleet_options = FleetOptions {
        listen: options.listen,
        origin: Some(origin),
        realtime: realtime.then_some(timer::RT_TIMER_PRIORITY),
        spin: options.spin,
        cpu: fleet_cpu,
    };
    let fleet = fleet_rt
        .block_on(Fleet::start(&scenario.backends, &fleet_options))
        .map_err(HarnessError::Fleet)?;
    let targets: Vec<Target> = fleet.addrs().iter().copied().map(Target::of_addr).collect();
    let run_options = RunOptions {
        stop: options.stop,
        worker_threads: options.client_threads,
        realtime,
        spin: options.spin,
        cpu: client_cpu,
        live: options.live.clone(),
        ..RunOptions::new(origin)
    };
    let before = machine_sample();
    let run = run_policy(scenario, policy, &targets, &run_options);
    let machine = machine_load(before, machine_sample());
    let delay = fleet_rt.block_on(fleet.shutdown());
    fleet_rt.shutdown_timeout(Duration::from_secs(2));
    Ok(PolicyReport {
        name: policy.name.clone(),
        run: run?,
        delay,
        machine,
        discarded_attempts: Vec::new(),
    })
}

/// The scenario the floor runs: `scenario`'s backends with zero delay and no faults, unary calls
/// only, measured for `length` (at most the scenario's duration, at least 1 s) after a warm-up of
/// a tenth of that (at most 2 s).
fn floor_scenario(scenario: &Scenario, length: Duration) -> Scenario {
    let mut s = scenario.clone();
    s.backends = lblab_backend::zero_delay(&scenario.backends);
    let length = length
        .as_nanos()
        .min(u128::from(scenario.workload.duration)) as u64;
    s.workload.duration = length.max(NANOS_PER_SEC);
    s.workload.warmup = (length / 10).min(2 * NANOS_PER_SEC);
    s.workload.streaming_share = 0.0;
    s
}

/// How long the floor of [`run_floor`] with `length` is scheduled to run (its warm-up and
/// measured time), so that a progress display can count it in advance.
pub fn floor_schedule(scenario: &Scenario, length: Duration) -> Duration {
    Duration::from_nanos(floor_scenario(scenario, length).workload.end())
}

/// The floor: round_robin against zero-delay backends (same count, no faults) at the scenario's
/// rate, for `length` after a warm-up of a tenth of that.
pub fn run_floor(
    scenario: &Scenario,
    length: Duration,
    options: &HarnessOptions<'_>,
) -> Result<FloorSummary, HarnessError> {
    let s = floor_scenario(scenario, length);
    let config_json = r#"{"loadBalancingConfig":[{"round_robin":{}}]}"#;
    let selected = config::parse_service_config(config_json).map_err(HarnessError::Floor)?;
    let rr = PolicyEntry {
        name: "floor(round_robin)".into(),
        config_json: config_json.into(),
        selected: Selected::Policy(selected),
    };
    let report = run_one(&s, &rr, options)?;
    let row = &report.run.result.summary;
    Ok(FloorSummary {
        rate: s.workload.rate,
        backends: s.backends.len(),
        p50_ms: row.p50_ms,
        p99_ms: row.p99_ms,
        p999_ms: row.p999_ms,
        requests: row.requests,
        lateness: Quantiles::of(&report.run.lateness),
    })
}

/// Runs the floor (if asked) and then every selected policy, each against a fresh fleet.
/// `progress` is told what starts and ends; `checkpoint` is given everything measured so far
/// after each policy, so that a caller can write it (a run killed outright then keeps the
/// policies it finished).
pub fn run_real(
    scenario: &Scenario,
    options: &HarnessOptions<'_>,
    progress: &mut dyn FnMut(&str),
    checkpoint: &mut dyn FnMut(&RealRun),
) -> Result<RealRun, HarnessError> {
    scenario
        .check_labels(&options.only)
        .map_err(HarnessError::Labels)?;
    if !scenario.workload.methods.is_empty() {
        return Err(HarnessError::Methods {
            scenario: scenario.file.name.clone(),
        });
    }
    let policies = PolicyLoop {
        scenario,
        only: &options.only,
        stop: options.stop,
    };
    if policies.planned() == 0 {
        return Err(HarnessError::NoRealPolicy(NoRealPolicy {
            scenario: scenario.file.name.clone(),
        }));
    }
    let mut floor = None;
    if let Some(length) = options.floor {
        progress(&format!(
            "floor: round_robin against {} zero-delay backends at {} req/s",
            scenario.backends.len(),
            scenario.workload.rate
        ));
        let summary = run_floor(scenario, length, options)?;
        progress(&format!(
            "floor: p50 {:.3} ms, p99 {:.3} ms",
            summary.p50_ms, summary.p99_ms
        ));
        floor = Some(summary);
    }
    let ran = policies.run(
        progress,
        &mut |p, progress| {
            let report = run_one(scenario, p, options)?;
            let report = rerun_if_disturbed(scenario, p, options, progress, report);
            let r = &report.run.result.summary;
            progress(&format!(
                "{}: p50 {:.2} ms, p99 {:.2} ms, {} ok / {} requests",
                p.name, r.p50_ms, r.p99_ms, r.ok, r.requests
            ));
            Ok(report)
        },
        &mut |done, skipped| {
            // The checkpoint is given a whole RealRun: move the reports in and back out.
            let so_far = RealRun {
                policies: std::mem::take(done),
                skipped: skipped.to_vec(),
                floor: floor.clone(),
                partial: false,
                failed: None,
            };
            checkpoint(&so_far);
            *done = so_far.policies;
        },
    )?;
    Ok(RealRun {
        partial: ran.partial || ran.done.iter().any(|p| p.run.partial),
        policies: ran.done,
        skipped: ran.skipped,
        floor,
        failed: ran.failed,
    })
}

/// Runs `policy` again while its run was disturbed by other work on the machine (dispatch
/// lateness p99 above [`HarnessOptions::disturbed_above`]), up to [`HarnessOptions::attempts`]
/// runs in all, and keeps the least disturbed; the others' lateness is recorded.
fn rerun_if_disturbed(
    scenario: &Scenario,
    p: &PolicyEntry,
    options: &HarnessOptions<'_>,
    progress: &mut dyn FnMut(&str),
    mut report: PolicyReport,
) -> PolicyReport {
    let mut discarded = Vec::new();
    for _ in 1..options.attempts.max(1) {
        let late = Quantiles::of(&report.run.lateness).p99_us;
        if late <= options.disturbed_above.as_secs_f64() * 1e6 || options.stopped() {
            break;
        }
        progress(&format!(
            "{}: disturbed run (dispatch lateness p99 {late:.0} µs): running it again",
            p.name
        ));
        if let Some(live) = &options.live {
            live.add_extra_run();
        }
        let again = match run_one(scenario, p, options) {
            Ok(again) => again,
            Err(e) => {
                progress(&format!(
                    "{}: the rerun failed ({e}); keeping the first",
                    p.name
                ));
                break;
            }
        };
        let (keep, drop) = if Quantiles::of(&again.run.lateness).p99_us < late {
            (again, report)
        } else {
            (report, again)
        };
        discarded.push(Quantiles::of(&drop.run.lateness).p99_us);
        report = keep;
    }
    report.discarded_attempts = discarded;
    report
}
