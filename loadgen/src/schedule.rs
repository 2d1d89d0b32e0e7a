//! Rate schedules (ghz's `--load-schedule`): an open loop whose offered rate steps or ramps
//! during the run instead of staying constant.
//!
//! The model's arrival schedule has one rate. A [`RateSchedule`] keeps it and bends time
//! instead: the scenario runs at the schedule's mean rate over the run's length, and each
//! arrival's time `u` is moved to the time `t` at which the schedule has offered as many calls as
//! the constant rate had by `u` (`Λ(t) = mean · u`, with `Λ` the integral of the rate). Poisson
//! arrivals stay Poisson (at the scheduled rate at each moment) and evenly spaced ones are spaced
//! by the scheduled rate's inverse; the number of calls is the schedule's.

use std::time::Duration;

/// How the offered rate changes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// Steps: `start`, then `step` more every `every`, up to (or down to) `end`.
    Step {
        /// Duration of each step.
        every: Duration,
    },
    /// A straight line: `start`, `step` more per second, up to (or down to) `end`.
    Line,
}

/// A rate schedule over a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RateSchedule {
    /// Step or line.
    pub shape: Shape,
    /// Calls per second at time 0.
    pub start: f64,
    /// Change per step (or per second for a line).
    pub step: f64,
    /// Where the rate stops changing (`None`: it changes for the whole run).
    pub end: Option<f64>,
}

/// Why a schedule cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum ScheduleError {
    /// A negative or non-finite rate or step.
    #[error(
        "the {what} {value} is not a rate: give a finite number of calls per second (at least 0)"
    )]
    NotARate {
        /// `start`, `step` or `end`.
        what: &'static str,
        /// The value.
        value: f64,
    },
    /// A step of zero length.
    #[error("a step must last longer than 0s")]
    ZeroStep,
    /// Nothing would be sent.
    #[error("the schedule offers no call over the run's {0:?}")]
    Empty(Duration),
}

/// Points of the cumulative-rate table per run.
const GRID: usize = 20_000;

impl RateSchedule {
    /// Checks the numbers.
    pub fn check(&self) -> Result<(), ScheduleError> {
        for (what, value, min) in [
            ("start", self.start, 0.0),
            ("step", self.step, f64::NEG_INFINITY),
            ("end", self.end.unwrap_or(0.0), 0.0),
        ] {
            if !value.is_finite() || value < min {
                return Err(ScheduleError::NotARate { what, value });
            }
        }
        if let Shape::Step { every } = self.shape {
            if every.is_zero() {
                return Err(ScheduleError::ZeroStep);
            }
        }
        Ok(())
    }

    /// The offered rate `t` seconds into the run.
    pub fn rate_at(&self, t: f64) -> f64 {
        let raw = match self.shape {
            Shape::Step { every } => self.start + self.step * (t / every.as_secs_f64()).floor(),
            Shape::Line => self.start + self.step * t,
        };
        let clamped = match self.end {
            Some(end) if self.step >= 0.0 => raw.min(end),
            Some(end) => raw.max(end),
            None => raw,
        };
        clamped.max(0.0)
    }

    /// The time warp of a run of `length`: its mean rate (what the scenario's constant-rate
    /// schedule should run at) and the map from that schedule's times to this one's.
    pub fn warp(&self, length: Duration) -> Result<Warp, ScheduleError> {
        self.check()?;
        let total = length.as_secs_f64();
        let dt = total / GRID as f64;
        let mut cumulative = Vec::with_capacity(GRID + 1);
        let mut sum = 0.0;
        cumulative.push(0.0);
        for i in 0..GRID {
            // The midpoint's rate: exact for lines, and for steps but in the cell of a step.
            sum += self.rate_at((i as f64 + 0.5) * dt) * dt;
            cumulative.push(sum);
        }
        if sum <= 0.0 {
            return Err(ScheduleError::Empty(length));
        }
        Ok(Warp {
            mean: sum / total,
            dt,
            cumulative,
        })
    }
}

impl RateSchedule {
    /// As a concurrency schedule (ghz's `--concurrency-schedule`): when each of a closed loop's
    /// slots starts, ns since time 0, for a run of `length` (slot `i` starts when the schedule
    /// first reaches `i + 1` calls in flight; slots it never reaches are left out). Only rising
    /// (or flat) schedules: a slot, once started, keeps its call in flight to the end.
    pub fn slot_starts(&self, length: Duration) -> Result<Vec<u64>, ScheduleError> {
        self.check()?;
        if self.step < 0.0 {
            return Err(ScheduleError::NotARate {
                what: "step",
                value: self.step,
            });
        }
        let total = length.as_secs_f64();
        let top = self.rate_at(total).floor() as u64;
        let mut starts = Vec::new();
        for i in 0..top.min(100_000) {
            let want = (i + 1) as f64;
            let t = if self.start >= want {
                0.0
            } else {
                match self.shape {
                    Shape::Step { every } => {
                        let steps = ((want - self.start) / self.step).ceil();
                        steps * every.as_secs_f64()
                    }
                    Shape::Line => (want - self.start) / self.step,
                }
            };
            if t < total {
                starts.push((t * 1e9) as u64);
            }
        }
        if starts.is_empty() {
            return Err(ScheduleError::Empty(length));
        }
        Ok(starts)
    }
}

/// A run's time warp ([`RateSchedule::warp`]).
#[derive(Debug, Clone)]
pub struct Warp {
    /// The schedule's mean rate over the run, calls per second.
    pub mean: f64,
    dt: f64,
    cumulative: Vec<f64>,
}

impl Warp {
    /// The time (ns since time 0) at which the schedule has offered as many calls as the mean
    /// rate had by `u` ns.
    pub fn map(&self, u: u64) -> u64 {
        let target = self.mean * u as f64 / 1e9;
        let i = self.cumulative.partition_point(|&c| c < target);
        let t = if i == 0 {
            0.0
        } else if i >= self.cumulative.len() {
            (self.cumulative.len() - 1) as f64 * self.dt
        } else {
            let (lo, hi) = (self.cumulative[i - 1], self.cumulative[i]);
            let within = if hi > lo {
                (target - lo) / (hi - lo)
            } else {
                0.0
            };
            ((i - 1) as f64 + within) * self.dt
        };
        (t * 1e9) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_schedule_offers_its_rates_at_their_times() {
        // 10/s for 2 s, then 30/s for 2 s: 80 calls; the mean is 20/s.
        let s = RateSchedule {
            shape: Shape::Step {
                every: Duration::from_secs(2),
            },
            start: 10.0,
            step: 20.0,
            end: Some(30.0),
        };
        let w = s.warp(Duration::from_secs(4)).unwrap();
        assert!((w.mean - 20.0).abs() < 1e-6, "{}", w.mean);
        // The 20th of 80 calls (1 s at the mean) is at 2 s, the end of the first step.
        let t = w.map(1_000_000_000) as f64 / 1e9;
        assert!((t - 2.0).abs() < 1e-3, "{t}");
        // Half-way through the calls (2 s at the mean): 40 = 20 + 30 * 0.667 s.
        let t = w.map(2_000_000_000) as f64 / 1e9;
        assert!((t - (2.0 + 20.0 / 30.0)).abs() < 1e-3, "{t}");
    }

    #[test]
    fn a_concurrency_step_schedule_starts_slots_step_by_step() {
        let s = RateSchedule {
            shape: Shape::Step {
                every: Duration::from_secs(1),
            },
            start: 2.0,
            step: 2.0,
            end: Some(5.0),
        };
        let starts = s.slot_starts(Duration::from_secs(10)).unwrap();
        let s1 = 1_000_000_000;
        assert_eq!(starts, vec![0, 0, s1, s1, 2 * s1]);
    }

    #[test]
    fn a_line_ramps_and_bad_numbers_are_refused() {
        let s = RateSchedule {
            shape: Shape::Line,
            start: 0.0,
            step: 10.0,
            end: None,
        };
        // 0 → 40/s over 4 s: 80 calls, the first quarter of them by half the time.
        let w = s.warp(Duration::from_secs(4)).unwrap();
        let t = w.map(1_000_000_000) as f64 / 1e9;
        assert!((t - 2.0).abs() < 1e-3, "{t}");
        let bad = RateSchedule { start: -1.0, ..s };
        assert!(matches!(
            bad.check(),
            Err(ScheduleError::NotARate { what: "start", .. })
        ));
        let none = RateSchedule {
            start: 0.0,
            step: 0.0,
            ..bad
        };
        assert!(matches!(
            none.warp(Duration::from_secs(1)),
            Err(ScheduleError::Empty(_))
        ));
    }
}
