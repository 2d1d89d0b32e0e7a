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

/// When one closed-loop slot of a concurrency schedule runs: it starts its first call at
/// `start` and starts none after `stop` (ns since time 0; a call in flight then completes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotSpan {
    /// When the slot's first call starts.
    pub start: u64,
    /// When the slot stops starting calls (`u64::MAX`: it runs to the end).
    pub stop: u64,
}

/// The most slots a concurrency schedule may hold.
const MAX_SLOTS: u64 = 100_000;

impl RateSchedule {
    /// As a concurrency schedule (ghz's `--concurrency-schedule`): when each of a closed loop's
    /// slots runs, for a run of `length`. Slot `i` runs while the schedule is at least `i + 1`
    /// calls in flight: a rising schedule starts slot `i` when it first reaches `i + 1`, a
    /// falling one (a negative step) stops it when it first drops below. Slots the schedule
    /// never reaches are left out.
    pub fn slot_spans(&self, length: Duration) -> Result<Vec<SlotSpan>, ScheduleError> {
        self.check()?;
        let total = length.as_secs_f64();
        let top = self.rate_at(0.0).max(self.rate_at(total)).floor() as u64;
        let mut spans = Vec::new();
        for i in 0..top.min(MAX_SLOTS) {
            let want = (i + 1) as f64;
            // The first time the schedule is at least (rising) or below (falling) `want`.
            let crossing = if self.step == 0.0 {
                None
            } else if self.step > 0.0 {
                Some(match self.shape {
                    Shape::Step { every } => {
                        ((want - self.start) / self.step).ceil().max(0.0) * every.as_secs_f64()
                    }
                    Shape::Line => ((want - self.start) / self.step).max(0.0),
                })
            } else if self.end.is_some_and(|end| end >= want) {
                None
            } else {
                let fall = -self.step;
                Some(match self.shape {
                    Shape::Step { every } => {
                        (((self.start - want) / fall).floor() + 1.0).max(0.0) * every.as_secs_f64()
                    }
                    Shape::Line => ((self.start - want) / fall).max(0.0),
                })
            };
            let ns = |t: f64| (t * 1e9) as u64;
            let span = if self.step >= 0.0 {
                let start = if self.start >= want {
                    0.0
                } else {
                    crossing.unwrap_or(f64::INFINITY)
                };
                (start < total).then(|| SlotSpan {
                    start: ns(start),
                    stop: u64::MAX,
                })
            } else {
                let stop = crossing.map_or(u64::MAX, ns);
                (stop > 0).then_some(SlotSpan { start: 0, stop })
            };
            spans.extend(span);
        }
        if spans.is_empty() {
            return Err(ScheduleError::Empty(length));
        }
        Ok(spans)
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
        let spans = s.slot_spans(Duration::from_secs(10)).unwrap();
        let starts: Vec<u64> = spans.iter().map(|s| s.start).collect();
        let s1 = 1_000_000_000;
        assert_eq!(starts, vec![0, 0, s1, s1, 2 * s1]);
        assert!(spans.iter().all(|s| s.stop == u64::MAX));
        // ghz's falling schedule: 5 in flight, one fewer every second, down to 2.
        let falling = RateSchedule {
            shape: Shape::Step {
                every: Duration::from_secs(1),
            },
            start: 5.0,
            step: -1.0,
            end: Some(2.0),
        };
        let spans = falling.slot_spans(Duration::from_secs(10)).unwrap();
        let stops: Vec<u64> = spans.iter().map(|s| s.stop).collect();
        assert_eq!(stops, vec![u64::MAX, u64::MAX, 3 * s1, 2 * s1, s1]);
        assert!(spans.iter().all(|s| s.start == 0));
        // A falling line to nothing: slot i stops when the line passes below i + 1.
        let line = RateSchedule {
            shape: Shape::Line,
            start: 4.0,
            step: -2.0,
            end: None,
        };
        let stops: Vec<u64> = line
            .slot_spans(Duration::from_secs(10))
            .unwrap()
            .iter()
            .map(|s| s.stop)
            .collect();
        // (slot 4 would stop at once, so there is none.)
        assert_eq!(stops, vec![3 * s1 / 2, s1, s1 / 2]);
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
