//! A real run against servers that run elsewhere (`lblab loadgen`): lblab's own fleet started by
//! `lblab backend`, or any gRPC service. The same policy loop as [`run_real`](crate::run_real)
//! ([`PolicyLoop`]), without a fleet of its own: each policy is one load run against the
//! targets, and what it measured becomes the run folder's rows, `targets.csv`'s and
//! `statuses.csv`'s.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lblab_loadgen::run::{run_policy, CallOptions, Live, LoadRun, Quantiles, RunOptions};
use lblab_loadgen::schedule::Warp;
use lblab_loadgen::target::{Target, TargetSpec};
use lblab_model::Scenario;
use lblab_record::{Mode, PolicyResult, RunSummary, StatusRow, TargetRow};

use crate::{HarnessError, PolicyLoop};

/// Options of [`run_remote`].
#[derive(Debug, Clone)]
pub struct RemoteOptions<'a> {
    /// The servers, one per scenario backend when the scenario has their count.
    pub targets: &'a [Target],
    /// Where they came from, when a `dns:///` name is to be re-resolved during the runs.
    pub resolver: Option<TargetSpec>,
    /// How the calls connect and what they send.
    pub calls: CallOptions,
    /// Run the load generator's threads in the real-time scheduling class.
    pub realtime: bool,
    /// Time 0 of every policy's run (the fault timeline a `lblab backend` with the same
    /// `--start-at` follows); `None`: half a second after each policy's start.
    pub origin: Option<Instant>,
    /// Set to stop; what was measured is kept.
    pub stop: Option<&'a AtomicBool>,
    /// Where each run publishes its live figures.
    pub live: Option<Arc<Live>>,
    /// Open loop: at most this many calls per policy.
    pub max_calls: Option<u64>,
    /// Open loop: a rate schedule's time warp.
    pub warp: Option<Arc<Warp>>,
    /// Closed loop: when each client's slots start (a concurrency schedule).
    pub slot_spans: Option<Arc<Vec<lblab_loadgen::schedule::SlotSpan>>>,
    /// How long to wait for the first connections.
    pub connect_wait: Option<Duration>,
    /// Open loop: how long the dispatcher spins before each send time at most (0: it only
    /// sleeps; see `lblab_wire::timer::Pacer`).
    pub spin: Duration,
    /// Worker threads of the load generator's runtime.
    pub threads: usize,
}

/// Everything [`run_remote`] measured.
#[derive(Debug)]
pub struct RemoteRun {
    /// Each policy's run, in scenario order.
    pub policies: Vec<LoadRun>,
    /// Policies skipped and why.
    pub skipped: Vec<(String, String)>,
    /// Stopped early (interrupted, or `failed`).
    pub partial: bool,
    /// What ended the run early after some results were measured.
    pub failed: Option<String>,
    /// A closed loop with a call budget ([`RemoteOptions::max_calls`]): each policy's run ended
    /// when its calls were done, not at the scenario's end.
    pub budgeted: bool,
}

impl RemoteRun {
    /// The policies' results, in order.
    pub fn results(&self) -> Vec<PolicyResult> {
        self.policies.iter().map(|r| r.result.clone()).collect()
    }

    /// `summary.json`'s notes: each policy's dispatch lateness, client CPU per call and endpoint
    /// changes, what was skipped, why the run stopped early.
    pub fn notes(&self) -> Vec<(String, String)> {
        let mut notes = Vec::new();
        for run in &self.policies {
            let name = &run.result.summary.policy;
            notes.push((
                format!("{name}: dispatch lateness p99 us"),
                format!("{:.0}", Quantiles::of(&run.lateness).p99_us),
            ));
            notes.push((
                format!("{name}: client cpu per call us"),
                format!("{:.1}", run.total_cpu_per_call_us()),
            ));
            notes.push((
                format!("{name}: of which dispatcher us"),
                format!("{:.1}", run.dispatcher_per_call_us()),
            ));
            for change in &run.endpoint_changes {
                notes.push((format!("{name}: endpoints"), change.clone()));
            }
        }
        for (name, why) in &self.skipped {
            notes.push((format!("{name}: skipped"), why.clone()));
        }
        if let Some(why) = &self.failed {
            notes.push(("stopped early".into(), why.clone()));
        }
        notes
    }

    /// The run's summary (`summary.json`), with `extra` notes after the run's own.
    pub fn summary(&self, scenario: &Scenario, extra: Vec<(String, String)>) -> RunSummary {
        let mut notes = self.notes();
        notes.extend(extra);
        let mut summary = RunSummary::of(
            scenario.run_head(),
            Mode::Real,
            &self.results(),
            self.partial,
            notes,
        );
        // Runs that ended once their calls were sent (a call budget): their rates are over the
        // time they took, and the measured length is the longest of them.
        let w = &scenario.workload;
        if self.budgeted
            && !self.partial
            && !self.policies.is_empty()
            && self.policies.iter().all(|r| r.run_end < w.end())
        {
            let measured = |r: &LoadRun| r.run_end.saturating_sub(w.warmup) as f64 / 1e9;
            for (rate, run) in summary.rates.iter_mut().zip(&self.policies) {
                let row = &run.result.summary;
                if measured(run) > 0.0 {
                    rate.calls_per_s = (row.ok + row.errors) as f64 / measured(run);
                }
            }
            summary.measured_s = self.policies.iter().map(measured).fold(0.0, f64::max);
        }
        summary
    }

    /// `targets.csv`'s rows: each policy's calls per target.
    pub fn shares(&self, targets: &[Target]) -> Vec<TargetRow> {
        let names: Vec<(String, String)> = targets
            .iter()
            .map(|t| (t.name.clone(), t.addr.to_string()))
            .collect();
        self.policies
            .iter()
            .flat_map(|r| TargetRow::of(&r.result, &names))
            .collect()
    }

    /// `statuses.csv`'s rows: each policy's calls by status.
    pub fn statuses(&self) -> Vec<StatusRow> {
        self.policies
            .iter()
            .flat_map(|r| r.statuses.iter().cloned())
            .collect()
    }
}

/// Runs every policy of `scenario` against `options.targets`, one after the other. `progress` is
/// told what starts and ends; `checkpoint` is given what was measured after each policy but the
/// last, so that a run killed outright keeps it.
pub fn run_remote(
    scenario: &Scenario,
    options: &RemoteOptions<'_>,
    progress: &mut dyn FnMut(&str),
    checkpoint: &mut dyn FnMut(&RemoteRun),
) -> Result<RemoteRun, HarnessError> {
    let policies = PolicyLoop {
        scenario,
        only: &[],
        stop: options.stop,
    };
    let budgeted = options.max_calls.is_some()
        && scenario.workload.arrival == lblab_model::scenario::Arrival::Closed;
    let ran = policies.run(
        progress,
        &mut |p, progress| {
            let origin = options
                .origin
                .unwrap_or_else(|| Instant::now() + Duration::from_millis(500));
            let mut run_options = RunOptions {
                stop: options.stop,
                realtime: options.realtime,
                calls: options.calls.clone(),
                resolver: options.resolver.clone().filter(|s| s.refresh().is_some()),
                live: options.live.clone(),
                max_calls: options.max_calls,
                warp: options.warp.clone(),
                slot_spans: options.slot_spans.clone(),
                spin: options.spin,
                worker_threads: options.threads,
                ..RunOptions::new(origin)
            };
            if let Some(wait) = options.connect_wait {
                run_options.connect_wait = wait;
            }
            let run = run_policy(scenario, p, options.targets, &run_options)?;
            progress(&format!(
                "{}: dispatch lateness p99 {:.0} µs, client CPU {:.1} µs per call ({:.1} of it pacing)",
                p.name,
                Quantiles::of(&run.lateness).p99_us,
                run.total_cpu_per_call_us(),
                run.dispatcher_per_call_us()
            ));
            Ok(run)
        },
        &mut |done, skipped| {
            let so_far = RemoteRun {
                policies: std::mem::take(done),
                skipped: skipped.to_vec(),
                partial: true, // a checkpoint: the run goes on
                failed: None,
                budgeted,
            };
            checkpoint(&so_far);
            *done = so_far.policies;
        },
    )?;
    Ok(RemoteRun {
        partial: ran.partial || ran.done.iter().any(|r| r.partial),
        policies: ran.done,
        skipped: ran.skipped,
        failed: ran.failed,
        budgeted,
    })
}
