//! Many simulations at once: a list of (scenario, policy) jobs run on a fixed number of threads,
//! each run reduced to what the caller keeps as soon as it ends (so a sweep of thousands of runs
//! never holds thousands of histograms). Used by `lblab sim --seeds`, `lblab sweep` and the
//! peak-EWMA parameter grid.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use lblab_model::scenario::{PolicyEntry, Scenario};

use crate::{run_policy, PolicyRun, SimError, SimOptions};

/// One simulation: a policy of a scenario.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    /// The scenario (a variation, a seed).
    pub scenario: &'a Scenario,
    /// The policy to run.
    pub policy: &'a PolicyEntry,
    /// Where the run publishes its simulated clock ([`SimOptions::clock`]), if anyone follows it.
    pub clock: Option<&'a AtomicU64>,
}

/// Runs every job on `threads` threads and returns, in job order, what `reduce` made of each run.
/// Jobs not started when `stop` is set are `None`; a started job runs to its end or to the stop
/// (its run then says `stats.interrupted`). `progress` is called with the number of jobs done.
pub fn run<T: Send>(
    jobs: &[Job<'_>],
    threads: usize,
    stop: Option<&AtomicBool>,
    progress: &(dyn Fn(usize) + Sync),
    reduce: &(dyn Fn(usize, PolicyRun) -> T + Sync),
) -> Vec<Option<Result<T, SimError>>> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Result<T, SimError>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            s.spawn(|| loop {
                if stop.is_some_and(|f| f.load(Ordering::Relaxed)) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let options = SimOptions {
                    stop,
                    clock: job.clock,
                };
                let result =
                    run_policy(job.scenario, job.policy, &options).map(|run| reduce(i, run));
                slots
                    .lock()
                    .expect("no thread panics while holding the lock")[i] = Some(result);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1);
            });
        }
    });
    slots.into_inner().expect("threads joined")
}

/// The number of threads to use when the user gave none: every core.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::tests::scenario;

    #[test]
    fn results_come_back_in_job_order_whatever_the_threads() {
        let s = scenario();
        let jobs: Vec<Job> = (0..6)
            .map(|i| Job {
                scenario: &s,
                policy: &s.policies[i % 2],
                clock: None,
            })
            .collect();
        let reduce = |i: usize, run: PolicyRun| (i, run.result.summary);
        let one = run(&jobs, 1, None, &|_| {}, &reduce);
        let many = run(&jobs, 4, None, &|_| {}, &reduce);
        for (k, (a, b)) in one.iter().zip(&many).enumerate() {
            let (a, b) = (
                a.as_ref().unwrap().as_ref().unwrap(),
                b.as_ref().unwrap().as_ref().unwrap(),
            );
            assert_eq!(a.0, k);
            assert_eq!(a, b, "job {k}");
        }
        assert_eq!(
            one[0].as_ref().unwrap().as_ref().unwrap().1.policy,
            "round_robin"
        );
        assert_eq!(
            one[1].as_ref().unwrap().as_ref().unwrap().1.policy,
            "peak_ewma"
        );
    }

    #[test]
    fn a_set_stop_flag_starts_nothing() {
        let s = scenario();
        let jobs = [Job {
            scenario: &s,
            policy: &s.policies[0],
            clock: None,
        }];
        let stop = AtomicBool::new(true);
        let out = run(&jobs, 2, Some(&stop), &|_| {}, &|_, r| r.stats.requests);
        assert!(out[0].is_none());
    }
}
