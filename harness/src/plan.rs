//! The scenario of a load-generator run against servers that run elsewhere, made from what its
//! caller was given: a scenario file or none (a scenario made of the flags), the load overrides,
//! rate and concurrency schedules, and the targets, which name the backends in the results.

use std::sync::Arc;
use std::time::Duration;

use lblab_loadgen::schedule::{RateSchedule, ScheduleError, Warp};
use lblab_loadgen::target::Target;
use lblab_model::overrides::{service_scenario, LoadOverrides, OverrideError};
use lblab_model::Scenario;

/// What [`plan`] is given.
#[derive(Debug, Clone)]
pub struct PlanInput<'a> {
    /// The scenario file, loaded; `None`: a scenario made of the overrides alone.
    pub file: Option<&'a Scenario>,
    /// The name of a scenario made of the overrides (the method's, or `echo`).
    pub name: &'a str,
    /// The targets, one per backend when a file's backends are theirs.
    pub targets: &'a [Target],
    /// What the flags change.
    pub overrides: LoadOverrides,
    /// An open loop's rate schedule.
    pub rate_schedule: Option<RateSchedule>,
    /// A closed loop's concurrency schedule.
    pub concurrency_schedule: Option<RateSchedule>,
    /// Whether every call is someone else's method (not lblab's Echo, which streams too).
    pub custom_call: bool,
}

/// What [`plan`] makes.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The scenario to run, its backends named by the targets' addresses.
    pub scenario: Scenario,
    /// The rate schedule's time warp (the scenario's rate is its mean).
    pub warp: Option<Arc<Warp>>,
    /// The concurrency schedule's slot starts (the scenario's concurrency is their count).
    pub slot_spans: Option<Arc<Vec<lblab_loadgen::schedule::SlotSpan>>>,
    /// What the caller should tell the user: the policies' config warnings, targets that do not
    /// match the file's backends.
    pub notes: Vec<String>,
}

/// Why a run cannot be planned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The overrides do not fit the scenario.
    #[error(transparent)]
    Overrides(#[from] OverrideError),
    /// A scenario with streams, with calls to someone else's method.
    #[error(
        "the scenario's workload.streaming_share is {0}: streams are lblab's Echo.ServerStream; \
         with another method, every call is that method's"
    )]
    Streaming(f64),
    /// The rate schedule.
    #[error("the rate schedule: {0}")]
    RateSchedule(ScheduleError),
    /// The concurrency schedule.
    #[error("the concurrency schedule: {0}")]
    ConcurrencySchedule(ScheduleError),
    /// A rate schedule for a closed loop.
    #[error("a rate schedule changes an open loop's rate; a closed loop has a concurrency")]
    RateScheduleClosedLoop,
}

/// The run's scenario, schedules and notes.
pub fn plan(input: PlanInput<'_>) -> Result<Plan, PlanError> {
    let file = match input.file {
        Some(s) => s.file.clone(),
        None => service_scenario(input.name, input.targets.len()),
    };
    if input.custom_call && file.workload.streaming_share > 0.0 {
        return Err(PlanError::Streaming(file.workload.streaming_share));
    }
    let mut overrides = input.overrides;
    let mut scenario = overrides.apply(file.clone())?;
    let length = Duration::from_nanos(scenario.workload.end());
    let warp = match &input.rate_schedule {
        Some(_) if overrides.concurrency.is_some() => {
            return Err(PlanError::RateScheduleClosedLoop)
        }
        Some(s) => Some(Arc::new(s.warp(length).map_err(PlanError::RateSchedule)?)),
        None => None,
    };
    let slot_spans = match &input.concurrency_schedule {
        Some(s) => Some(Arc::new(
            s.slot_spans(length)
                .map_err(PlanError::ConcurrencySchedule)?,
        )),
        None => None,
    };
    if let Some(w) = &warp {
        overrides.rate = Some(w.mean);
    }
    if let Some(s) = &slot_spans {
        overrides.concurrency = Some(s.len() as u32);
    }
    if warp.is_some() || slot_spans.is_some() {
        scenario = overrides.apply(file)?;
    }
    let mut notes: Vec<String> = scenario
        .config_warnings()
        .into_iter()
        .map(|w| format!("warning: {w}"))
        .collect();
    let from_file = input.file.is_some();
    let targets = input.targets;
    if from_file && targets.len() != scenario.backends.len() {
        notes.push(format!(
            "note: {} for {} in the scenario: requests to faulty backends (fault windows) are \
             not attributed",
            count(targets.len(), "target", "targets"),
            count(scenario.backends.len(), "backend", "backends")
        ));
    }
    if !from_file || targets.len() == scenario.backends.len() {
        for (b, t) in scenario.backends.iter_mut().zip(targets) {
            b.name = if from_file {
                format!("{} ({})", b.name, t.addr)
            } else {
                t.label()
            };
        }
    }
    Ok(Plan {
        scenario,
        warp,
        slot_spans,
        notes,
    })
}

/// `n` and the noun in the number it takes: `1 target`, `2 targets`.
fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_the_number_of_their_noun() {
        assert_eq!(count(1, "target", "targets"), "1 target");
        assert_eq!(count(0, "target", "targets"), "0 targets");
        assert_eq!(count(3, "backend", "backends"), "3 backends");
    }

    #[test]
    fn targets_name_the_backends_and_schedules_set_the_load() {
        let targets: Vec<Target> = ["127.0.0.1:1", "127.0.0.1:2"]
            .iter()
            .map(|a| Target::of_addr(a.parse().unwrap()))
            .collect();
        let step = RateSchedule {
            shape: lblab_loadgen::schedule::Shape::Line,
            start: 10.0,
            step: 10.0,
            end: None,
        };
        let input = PlanInput {
            file: None,
            name: "svc",
            targets: &targets,
            overrides: LoadOverrides {
                duration: Some(lblab_model::units::Dur(2_000_000_000)),
                warmup: Some(lblab_model::units::Dur(0)),
                ..LoadOverrides::default()
            },
            rate_schedule: Some(step),
            concurrency_schedule: None,
            custom_call: true,
        };
        let plan = plan(input).unwrap();
        let names: Vec<&str> = plan
            .scenario
            .backends
            .iter()
            .map(|b| b.name.as_str())
            .collect();
        assert_eq!(names, ["127.0.0.1:1", "127.0.0.1:2"]);
        // 10 → 30 calls/s over 2 s: a mean of 20.
        assert!((plan.scenario.workload.rate - 20.0).abs() < 1e-6);
        assert!(plan.warp.is_some() && plan.slot_spans.is_none());
    }
}
