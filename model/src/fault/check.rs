//! The checks of one `[[faults]]` entry: its own fields (factors, periods, its window within the
//! run) and its targets against the fleet's groups. They read only the fault and the groups, not
//! the rest of the scenario, which is why they sit below it.

use std::collections::BTreeSet;

use lblab_policy::Nanos;

use super::{FaultSpec, MIN_FAULT_PERIOD};
use crate::group::GroupSpec;
use crate::limits;
use crate::units::Dur;
use crate::FileError;

/// Checks fault `field` (`faults[i]`) of a scenario: its own fields, for a run that ends at
/// `run_end`, and its targets, against the fleet's `groups` (whose first backends have the
/// indexes `starts`). Returns the indexes of the backends it targets. Errors name the field.
pub(crate) fn check(
    fault: &FaultSpec,
    field: &str,
    groups: &[GroupSpec],
    starts: &[usize],
    run_end: Nanos,
) -> Result<BTreeSet<usize>, FileError> {
    let bad = |field: &str, msg: String| Err(FileError::invalid(field, msg));
    let bursts = check_fields(fault, field, run_end)?;
    if fault.targets().is_empty() {
        return bad(
            &format!("{field}.targets"),
            "must name at least one group or backend, e.g. [\"slow\"] or [\"main/0\"]".into(),
        );
    }
    let mut hit = BTreeSet::new();
    for (t, target) in fault.targets().iter().enumerate() {
        let tfield = format!("{field}.targets[{t}]");
        let (group, index) = match target.split_once('/') {
            Some((g, idx)) => (g, Some(idx)),
            None => (target.as_str(), None),
        };
        let Some(gi) = groups.iter().position(|g| g.name == group) else {
            let known: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
            return bad(&tfield, format!("{target:?} names no fleet group; groups: {known:?} (or one backend as \"group/index\")"));
        };
        let count = groups[gi].count as usize;
        let range = match index {
            None => 0..count,
            Some(idx) => match idx.parse::<usize>() {
                // Digits only: `usize::from_str` also takes "+1", which names no backend.
                Ok(k) if k < count && idx.bytes().all(|b| b.is_ascii_digit()) => k..k + 1,
                _ => {
                    return bad(
                        &tfield,
                        format!(
                            "{target:?}: group {group:?} has backends {group}/0 to {group}/{}",
                            count - 1
                        ),
                    )
                }
            },
        };
        for k in range {
            if !hit.insert(starts[gi] + k) {
                return bad(
                    &tfield,
                    format!(
                        "{target:?} targets {}/{k} again; list each backend once",
                        groups[gi].name
                    ),
                );
            }
        }
    }
    // Bursts are drawn in advance for every targeted backend, so the memory is their product.
    if bursts.saturating_mul(hit.len() as u64) > limits::NOISY_BURSTS {
        return bad(&format!("{field}.burst"), format!("{bursts} bursts on each of {} backends; at most {} in all: make `burst` longer or the window shorter", hit.len(), limits::NOISY_BURSTS));
    }
    Ok(hit)
}

/// Checks one fault's own fields; returns how many noisy-neighbour bursts it draws per backend.
fn check_fields(fault: &FaultSpec, field: &str, run_end: Nanos) -> Result<u64, FileError> {
    let bad = |k: &str, msg: String| Err(FileError::invalid(&format!("{field}.{k}"), msg));
    let factor_ok = |f: f64| f.is_finite() && f >= 1.0;
    let mut bursts = 0;
    let periods: &[(&str, Dur)] = match fault {
        FaultSpec::GcPauses { every, pause, .. } => &[("every", *every), ("pause", *pause)],
        FaultSpec::CpuThrottle { quota, period, .. } => &[("period", *period), ("quota", *quota)],
        FaultSpec::NoisyNeighbour { burst, .. } => &[("burst", *burst)],
        _ => &[],
    };
    for (key, d) in periods {
        // Zero is left to the kind's own check below, whose message says what zero means there.
        if d.0 > 0 && d.0 < MIN_FAULT_PERIOD {
            return bad(
                key,
                format!(
                    "{d} is below the shortest fault period, {}: the real harness cannot time \
                     it and the model would be a flood of speed changes",
                    Dur(MIN_FAULT_PERIOD)
                ),
            );
        }
    }
    match fault {
        FaultSpec::Slowdown { factor, .. }
        | FaultSpec::NoisyNeighbour { factor, .. }
        | FaultSpec::ColdStart { factor, .. }
            if !factor_ok(*factor) =>
        {
            return bad(
                "factor",
                format!("{factor} must be a finite slowdown factor >= 1 (10 = ten times slower)"),
            );
        }
        FaultSpec::GcPauses { every, pause, .. }
            if every.0 == 0 || pause.0 == 0 || pause.0 >= every.0 =>
        {
            return bad(
                "pause",
                format!("need 0 < pause ({pause}) < every ({every})"),
            );
        }
        FaultSpec::CpuThrottle { quota, period, .. } if quota.0 == 0 || quota.0 >= period.0 => {
            return bad(
                "quota",
                format!("need 0 < quota ({quota}) < period ({period})"),
            );
        }
        FaultSpec::NoisyNeighbour { duty, .. } if !(0.0..=1.0).contains(duty) => {
            return bad(
                "duty",
                format!("{duty} must be within [0, 1] (the share of noisy bursts)"),
            );
        }
        FaultSpec::NoisyNeighbour { burst, .. } if burst.0 == 0 => {
            return bad("burst", "must be greater than 0s, e.g. \"100ms\"".into());
        }
        FaultSpec::NoisyNeighbour {
            start, end, burst, ..
        } => {
            bursts = end.0.min(run_end).saturating_sub(start.0).div_ceil(burst.0);
        }
        FaultSpec::ColdStart { warmup, .. } if warmup.0 == 0 => {
            return bad(
                "warmup",
                "must be greater than 0s (the time the slowdown takes to fade)".into(),
            );
        }
        FaultSpec::FailFast { error_rate, .. } if !(0.0..=1.0).contains(error_rate) => {
            return bad("error_rate", format!("{error_rate} must be within [0, 1]"));
        }
        FaultSpec::Crash {
            restart_after: Some(r),
            ..
        } if r.0 == 0 => {
            return bad(
                "restart_after",
                "must be greater than 0s, or absent for a backend that stays down".into(),
            );
        }
        _ => {}
    }
    let (start_key, end_key) = match fault {
        FaultSpec::Crash { .. } => ("at", "restart_after"),
        FaultSpec::ColdStart { .. } => ("start", "warmup"),
        _ => ("start", "end"),
    };
    let (start, end) = fault.window(run_end);
    if start >= run_end {
        return bad(
            start_key,
            format!(
                "{} is at or after the end of the run ({} = warmup + duration)",
                Dur(start),
                Dur(run_end)
            ),
        );
    }
    if end <= start {
        return bad(
            end_key,
            format!(
                "the fault would end ({}) before it starts ({})",
                Dur(end),
                Dur(start)
            ),
        );
    }
    Ok(bursts)
}
