//! A deterministic discrete-event simulator for client-side load balancing.
//!
//! It runs a [`Scenario`] — clients, each with its own instance of a policy from `lblab-policy`,
//! sending open- or closed-loop traffic to backends that execute `lblab-model`'s behaviour model —
//! in virtual time, and records what every request experienced with the same [`Recorder`] the
//! real harness uses. The policy code is the production code, unchanged.
//!
//! Determinism: the same scenario and seed give byte-identical results. All randomness derives
//! from the scenario seed, one stream per component; the event queue breaks time ties by insertion
//! order; nothing depends on wall-clock time or hash-map iteration order.
//!
//! Besides the policies of `lblab-policy`, the simulator runs `oracle`: a picker that knows every
//! backend's true queue and speed and picks the least expected completion time: the reference the
//! others are held against, though not a lower bound (it cannot foresee a pause that starts after
//! its pick).
//!
//! ```
//! use lblab_model::Scenario;
//! let scenario = Scenario::parse(r#"
//!     name = "doc"
//!     [workload]
//!     rate = 500
//!     duration = "2s"
//!     [[fleet]]
//!     name = "main"
//!     count = 4
//!     service_time = { dist = "exponential", mean = "2ms" }
//!     [[policies]]
//!     name = "peak_ewma"
//!     config = '{"loadBalancingConfig":[{"peak_ewma_experimental":{}}]}'
//! "#)?;
//! let run = lblab_sim::run_policy(&scenario, &scenario.policies[0], &Default::default())?;
//! assert_eq!(run.result.summary.requests, run.result.summary.ok + run.result.summary.errors);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Recorder`]: lblab_record::Recorder

#![warn(missing_docs)]

pub mod batch;
mod engine;
mod oracle;
pub mod queue;
pub mod regress;
pub mod regress_lines;
mod request;
pub mod shard;
pub mod space;
pub mod space_lines;
pub mod sweep;

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{Duration, Instant};

use lblab_model::scenario::{PolicyEntry, Scenario};
use lblab_record::PolicyResult;

pub use engine::RunStats;

/// Why a simulation could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The policy exists but only the real harness runs it.
    #[error("policy `{policy}` selects `{name}`, which the simulator does not run")]
    Unsupported {
        /// Policy label.
        policy: String,
        /// Selected policy name.
        name: String,
    },
    /// The workload cannot be simulated as configured.
    #[error("invalid workload: {0}")]
    Config(String),
}

/// Options of a simulation run.
#[derive(Debug, Default, Clone, Copy)]
pub struct SimOptions<'a> {
    /// Set to stop the run early; results so far are kept and marked partial.
    pub stop: Option<&'a AtomicBool>,
    /// Where the run publishes how far its simulated clock has got (ns), every few thousand
    /// events: the progress of one long simulation ([`CLOCK_EVERY`]).
    pub clock: Option<&'a AtomicU64>,
}

/// How often (in events) a run publishes its simulated clock ([`SimOptions::clock`]): a relaxed
/// store per 4,096 events costs nothing measurable.
pub const CLOCK_EVERY: u64 = 4096;

/// The outcome of simulating one policy.
#[derive(Debug)]
pub struct PolicyRun {
    /// Recorded results.
    pub result: PolicyResult,
    /// Event and request counts.
    pub stats: RunStats,
    /// Wall-clock time the simulation took.
    pub wall: Duration,
    /// CPU time of the simulating thread (where the platform measures it): unlike `wall`, not
    /// inflated when other work shares the cores.
    pub cpu: Option<Duration>,
}

impl PolicyRun {
    /// Simulated requests per wall-clock second.
    pub fn requests_per_sec(&self) -> f64 {
        self.stats.requests as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Simulated requests per second of the simulating thread's CPU time, if measured.
    pub fn requests_per_cpu_sec(&self) -> Option<f64> {
        self.cpu
            .map(|cpu| self.stats.requests as f64 / cpu.as_secs_f64().max(1e-9))
    }
}

/// Simulates one policy of `scenario`.
pub fn run_policy(
    scenario: &Scenario,
    policy: &PolicyEntry,
    options: &SimOptions<'_>,
) -> Result<PolicyRun, SimError> {
    let started = Instant::now();
    let cpu_started = thread_cpu_time();
    let mut world = engine::World::new(scenario, &policy.selected, &policy.name)?;
    world.run(options.stop, options.clock);
    let stats = world.stats;
    Ok(PolicyRun {
        result: world.recorder.finish(),
        stats,
        wall: started.elapsed(),
        cpu: thread_cpu_time()
            .zip(cpu_started)
            .map(|(end, start)| end.saturating_sub(start)),
    })
}

/// CPU time consumed by the calling thread so far.
#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer to a local.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}
