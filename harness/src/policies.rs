//! The one policy loop of a real run, shared by [`run_real`](crate::run_real) (a fresh fleet per
//! policy) and [`run_remote`](crate::run_remote) (servers that run elsewhere): every selected
//! policy of the scenario in order, those the real harness cannot run skipped with a note, a stop
//! asked for between two policies honoured, a checkpoint after each policy but the last, and the
//! results so far kept when a later policy fails.

use std::sync::atomic::{AtomicBool, Ordering};

use lblab_model::scenario::{PolicyEntry, Scenario};

use crate::HarnessError;

/// Runs one policy; given the progress callback.
pub type RunOne<'a, R> =
    dyn FnMut(&PolicyEntry, &mut dyn FnMut(&str)) -> Result<R, HarnessError> + 'a;

/// Given the results so far and the policies skipped; may take the results, must give them back.
pub type Checkpoint<'a, R> = dyn FnMut(&mut Vec<R>, &[(String, String)]) + 'a;

/// The policies of one run.
#[derive(Debug, Clone, Copy)]
pub struct PolicyLoop<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// Only these labels (empty: every policy).
    pub only: &'a [String],
    /// Set to stop before the next policy.
    pub stop: Option<&'a AtomicBool>,
}

/// What a [`PolicyLoop`] ran.
#[derive(Debug)]
pub struct Ran<R> {
    /// Each policy's result, in order.
    pub done: Vec<R>,
    /// Policies skipped and why.
    pub skipped: Vec<(String, String)>,
    /// Stopped early (asked to, or `failed`).
    pub partial: bool,
    /// What ended the run early after some results were measured; a failure before anything was
    /// measured is an error instead.
    pub failed: Option<String>,
}

impl PolicyLoop<'_> {
    fn selected(&self, p: &PolicyEntry) -> bool {
        self.only.is_empty() || self.only.contains(&p.name)
    }

    fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// The policies that will run.
    pub fn planned(&self) -> usize {
        self.scenario
            .policies
            .iter()
            .filter(|p| self.selected(p) && p.runs_in_real())
            .count()
    }

    /// Runs `one` for each policy; `checkpoint` is given the results so far after each policy
    /// but the last (it may take them and must give them back).
    pub fn run<R>(
        &self,
        progress: &mut dyn FnMut(&str),
        one: &mut RunOne<'_, R>,
        checkpoint: &mut Checkpoint<'_, R>,
    ) -> Result<Ran<R>, HarnessError> {
        let planned = self.planned();
        let mut ran = Ran {
            done: Vec::new(),
            skipped: Vec::new(),
            partial: false,
            failed: None,
        };
        for p in &self.scenario.policies {
            if !self.selected(p) {
                continue;
            }
            if !p.runs_in_real() {
                ran.skipped.push((
                    p.name.clone(),
                    "simulator only (it reads every server's true queue)".into(),
                ));
                progress(&format!(
                    "note: policy {:?} runs only in the simulator; skipped",
                    p.name
                ));
                continue;
            }
            if self.stopped() {
                break;
            }
            progress(&format!(
                "{}: running for {:.0}s",
                p.name,
                self.scenario.workload.end() as f64 / 1e9
            ));
            match one(p, progress) {
                Ok(r) => ran.done.push(r),
                Err(e) if ran.done.is_empty() => return Err(e),
                Err(e) => {
                    let e = lblab_message::text::error_chain(&e);
                    progress(&format!(
                        "{}: {e}; stopping with the results so far",
                        p.name
                    ));
                    ran.failed = Some(format!("policy {}: {e}", p.name));
                    break;
                }
            }
            if ran.done.len() < planned && !self.stopped() {
                checkpoint(&mut ran.done, &ran.skipped);
            }
        }
        ran.partial = self.stopped() || ran.failed.is_some();
        Ok(ran)
    }
}
