//! The real harness: every policy of a scenario in turn, each against a fresh in-process fleet of
//! real servers on loopback, plus the harness's own floor.
//!
//! The fleet runs on its own tokio runtime and the load generator on another, in one process, so
//! nothing outlives the run (no child processes to orphan) and the client's CPU time is measured
//! on the client's threads only. Both share one origin, so faults happen at the scenario's times.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lblab_backend::{timer, DelayAccuracy, Fleet, FleetOptions};
use lblab_model::scenario::{PolicyEntry, Scenario};
use lblab_policy::config::{self, Selected};
use lblab_policy::NANOS_PER_SEC;
use serde::{Deserialize, Serialize};

use crate::run::{run_policy, LoadRun, Quantiles, RunOptions};
use crate::LoadgenError;

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
    /// ([`lblab_backend::timer::set_realtime`]), so that other work on the machine does not
    /// delay them (needs root or CAP_SYS_NICE).
    pub realtime: bool,
    /// How long the timer and dispatcher threads spin before each deadline.
    pub spin: Duration,
    /// Pin the load generator's threads to the first CPU and the fleet's to the second, so that
    /// each side's hand-offs stay on one CPU ([`timer::pin_to_cpu`]). Ignored with fewer than two
    /// CPUs.
    pub pin: bool,
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
}

/// The harness's own numbers for one run, written next to the results as `harness.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessSummary {
    /// Latency against zero-delay backends at the scenario's rate (round_robin), ms.
    pub floor: Option<FloorSummary>,
    /// Per policy: delay accuracy, dispatch lateness and client CPU.
    pub policies: Vec<PolicyHarness>,
}

/// The floor run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FloorSummary {
    /// Requests per second.
    pub rate: f64,
    /// Backends.
    pub backends: usize,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Requests measured.
    pub requests: u64,
    /// Dispatch lateness during the floor run.
    pub lateness: Quantiles,
}

/// Harness measurements of one policy's run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyHarness {
    /// Policy label.
    pub policy: String,
    /// Backend delay error (actual − requested service completion).
    pub delay_error: DelayAccuracy,
    /// Dispatch lateness (actual − intended send time).
    pub dispatch_lateness: Quantiles,
    /// Client CPU per call, µs (the load generator's runtime threads: RPC stack + policy).
    pub client_cpu_per_call_us: f64,
    /// Dispatcher CPU per call, µs (pacing, including spin-waits).
    pub dispatcher_cpu_per_call_us: f64,
    /// Calls made.
    pub calls: u64,
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
    /// True if stopped early.
    pub partial: bool,
}

impl RealRun {
    /// The harness summary (`harness.json`).
    pub fn summary(&self) -> HarnessSummary {
        HarnessSummary {
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
) -> Result<PolicyReport, LoadgenError> {
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
        .map_err(|source| LoadgenError::Io {
            what: "building the fleet's runtime".into(),
            source,
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
        .map_err(|e| LoadgenError::Config(format!("starting the fleet: {e}")))?;
    let targets: Vec<SocketAddr> = fleet.addrs().to_vec();
    let run_options = RunOptions {
        stop: options.stop,
        worker_threads: options.client_threads,
        realtime,
        spin: options.spin,
        cpu: client_cpu,
        ..RunOptions::new(origin)
    };
    let run = run_policy(scenario, policy, &targets, &run_options);
    let delay = fleet_rt.block_on(fleet.shutdown());
    fleet_rt.shutdown_timeout(Duration::from_secs(2));
    Ok(PolicyReport {
        name: policy.name.clone(),
        run: run?,
        delay,
    })
}

/// The floor: round_robin against zero-delay backends (same count, no faults) at the scenario's
/// rate, for `length` after a warm-up of a tenth of that.
pub fn run_floor(
    scenario: &Scenario,
    length: Duration,
    options: &HarnessOptions<'_>,
) -> Result<FloorSummary, LoadgenError> {
    let mut s = scenario.clone();
    s.backends = lblab_backend::zero_delay(&scenario.backends);
    let length = length
        .as_nanos()
        .min(u128::from(scenario.workload.duration)) as u64;
    s.workload.duration = length.max(NANOS_PER_SEC);
    s.workload.warmup = (length / 10).min(2 * NANOS_PER_SEC);
    s.workload.streaming_share = 0.0;
    let config_json = r#"{"loadBalancingConfig":[{"round_robin":{}}]}"#;
    let selected = config::parse_service_config(config_json)
        .map_err(|e| LoadgenError::Config(e.to_string()))?;
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
/// `progress` is told what starts and ends.
pub fn run_real(
    scenario: &Scenario,
    options: &HarnessOptions<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<RealRun, LoadgenError> {
    for name in &options.only {
        if !scenario.policies.iter().any(|p| &p.name == name) {
            return Err(LoadgenError::Config(format!(
                "--policy {name:?}: no such policy in the scenario; it has {:?}",
                scenario
                    .policies
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
            )));
        }
    }
    let stopped = || options.stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let mut out = RealRun::default();
    if let Some(length) = options.floor {
        progress(&format!(
            "floor: round_robin against {} zero-delay backends at {} req/s",
            scenario.backends.len(),
            scenario.workload.rate
        ));
        let floor = run_floor(scenario, length, options)?;
        progress(&format!(
            "floor: p50 {:.3} ms, p99 {:.3} ms",
            floor.p50_ms, floor.p99_ms
        ));
        out.floor = Some(floor);
    }
    for p in &scenario.policies {
        if !options.only.is_empty() && !options.only.contains(&p.name) {
            continue;
        }
        if !p.runs_in_real() {
            out.skipped.push((
                p.name.clone(),
                "simulator only (it reads every server's true queue)".into(),
            ));
            progress(&format!(
                "note: policy {:?} runs only in the simulator; skipped",
                p.name
            ));
            continue;
        }
        if stopped() {
            break;
        }
        progress(&format!(
            "{}: running for {:.0}s",
            p.name,
            scenario.workload.end() as f64 / 1e9
        ));
        let report = run_one(scenario, p, options)?;
        let r = &report.run.result.summary;
        progress(&format!(
            "{}: p50 {:.2} ms, p99 {:.2} ms, {} ok / {} requests",
            p.name, r.p50_ms, r.p99_ms, r.ok, r.requests
        ));
        out.policies.push(report);
    }
    out.partial = stopped() || out.policies.iter().any(|p| p.run.partial);
    Ok(out)
}
