//! Faults on a timeline, and what they do to one backend over time.
//!
//! Every fault that slows a backend is expressed as a *speed*: the rate at which service work
//! proceeds (1 = nominal, 0.1 = ten times slower, 0 = stopped). Speeds of overlapping faults
//! multiply. Speed is piecewise constant over time, so the time a request with `w` ns of nominal
//! work takes to finish is found exactly by walking the pieces ([`Timeline::finish_time`]). The
//! simulator and the real backend both call it, which is what makes them execute one model.
//!
//! The checks of a `[[faults]]` entry, its fields and its targets, sit in `fault/check.rs`; scenario
//! validation calls them.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::method::Methods;
use crate::units::Dur;
use lblab_policy::Nanos;

pub(crate) mod check;

/// The shortest period or duration a fault's timing may have (`gc_pauses` `every` and `pause`,
/// `cpu_throttle` `quota` and `period`, `noisy_neighbour` `burst`): 100 µs. Below it the real
/// harness cannot emulate the fault (its timers are good to about 100–200 µs on a loaded machine)
/// and the model turns into a flood of speed changes: a 2 ns GC period puts 500 million pieces
/// in each second of every faulty backend's timeline. Linux's own CFS bandwidth control refuses
/// periods below 1 ms.
pub const MIN_FAULT_PERIOD: Nanos = 100_000;

/// A fault as written in a scenario file (`[[faults]]` with a `kind`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultSpec {
    /// Every request is `factor` times slower from `start` to `end` (or the end of the run); with
    /// `methods`, only calls of those methods (of `[[workload.methods]]`), whose work is
    /// multiplied by `factor` when they arrive in the window (a slow dependency behind them).
    Slowdown {
        /// Backends: group names, or `group/index` for one backend.
        targets: Vec<String>,
        /// Slowdown factor (> 1 slows down).
        factor: f64,
        /// Only these methods (names in `[[workload.methods]]`); all when empty.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        methods: Vec<String>,
        /// Start time from the beginning of the run.
        #[serde(default)]
        start: Dur,
        /// End time; none means until the end.
        end: Option<Dur>,
    },
    /// Stop-the-world pauses: every `every`, the backend stops for `pause`.
    GcPauses {
        /// Backends.
        targets: Vec<String>,
        /// Period between pause starts (at least [`MIN_FAULT_PERIOD`]).
        every: Dur,
        /// Pause length (at least [`MIN_FAULT_PERIOD`]).
        pause: Dur,
        /// First pause at `start` + a per-backend random phase in `[0, every)`.
        #[serde(default)]
        start: Dur,
        /// No pauses start after `end`.
        end: Option<Dur>,
    },
    /// CPU throttling by a CFS-style quota: in every `period` the backend runs for `quota`, then
    /// stops until the next period.
    CpuThrottle {
        /// Backends.
        targets: Vec<String>,
        /// Run time allowed per period (at least [`MIN_FAULT_PERIOD`]).
        quota: Dur,
        /// Period.
        period: Dur,
        /// Start.
        #[serde(default)]
        start: Dur,
        /// End.
        end: Option<Dur>,
    },
    /// A noisy neighbour: within the window, each `burst` of time is, with probability `duty`,
    /// `factor` times slower.
    NoisyNeighbour {
        /// Backends.
        targets: Vec<String>,
        /// Slowdown factor during a noisy burst.
        factor: f64,
        /// Window start.
        start: Dur,
        /// Window end.
        end: Dur,
        /// Length of one burst (default 100ms).
        #[serde(default = "default_burst")]
        burst: Dur,
        /// Share of bursts that are noisy (default 0.5).
        #[serde(default = "default_duty")]
        duty: f64,
    },
    /// A cold start at `start` (also after every crash-restart of the backend): `factor` times
    /// slower, fading linearly to nominal over `warmup`.
    ColdStart {
        /// Backends.
        targets: Vec<String>,
        /// Initial slowdown factor.
        factor: f64,
        /// Time to fade to nominal.
        warmup: Dur,
        /// Start.
        #[serde(default)]
        start: Dur,
    },
    /// Fast failures: each request fails at once with probability `error_rate`.
    FailFast {
        /// Backends.
        targets: Vec<String>,
        /// Probability in [0, 1].
        error_rate: f64,
        /// Start.
        #[serde(default)]
        start: Dur,
        /// End.
        end: Option<Dur>,
    },
    /// The process dies at `at` (connections refused, requests in flight fail) and comes back
    /// `restart_after` later (never, if absent).
    Crash {
        /// Backends.
        targets: Vec<String>,
        /// Crash time.
        at: Dur,
        /// Downtime; absent means it stays down.
        restart_after: Option<Dur>,
    },
    /// The backend accepts requests and never answers them, from `start` to `end`.
    BlackHole {
        /// Backends.
        targets: Vec<String>,
        /// Start.
        #[serde(default)]
        start: Dur,
        /// End.
        end: Option<Dur>,
    },
}

fn default_burst() -> Dur {
    Dur(100_000_000)
}

fn default_duty() -> f64 {
    0.5
}

impl FaultSpec {
    /// The backends this fault applies to, as written.
    pub fn targets(&self) -> &[String] {
        match self {
            FaultSpec::Slowdown { targets, .. }
            | FaultSpec::GcPauses { targets, .. }
            | FaultSpec::CpuThrottle { targets, .. }
            | FaultSpec::NoisyNeighbour { targets, .. }
            | FaultSpec::ColdStart { targets, .. }
            | FaultSpec::FailFast { targets, .. }
            | FaultSpec::Crash { targets, .. }
            | FaultSpec::BlackHole { targets, .. } => targets,
        }
    }

    /// The fault's kind as written in files.
    pub fn kind(&self) -> &'static str {
        match self {
            FaultSpec::Slowdown { .. } => "slowdown",
            FaultSpec::GcPauses { .. } => "gc_pauses",
            FaultSpec::CpuThrottle { .. } => "cpu_throttle",
            FaultSpec::NoisyNeighbour { .. } => "noisy_neighbour",
            FaultSpec::ColdStart { .. } => "cold_start",
            FaultSpec::FailFast { .. } => "fail_fast",
            FaultSpec::Crash { .. } => "crash",
            FaultSpec::BlackHole { .. } => "black_hole",
        }
    }

    /// The window `[start, end)` in which the fault is active, for slow-share accounting and
    /// chart shading. `run_end` bounds open-ended faults.
    pub fn window(&self, run_end: Nanos) -> (Nanos, Nanos) {
        let end_or = |end: &Option<Dur>| end.map_or(run_end, |d| d.0);
        match self {
            FaultSpec::Slowdown { start, end, .. }
            | FaultSpec::GcPauses { start, end, .. }
            | FaultSpec::CpuThrottle { start, end, .. }
            | FaultSpec::FailFast { start, end, .. }
            | FaultSpec::BlackHole { start, end, .. } => (start.0, end_or(end)),
            FaultSpec::NoisyNeighbour { start, end, .. } => (start.0, end.0),
            FaultSpec::ColdStart { start, warmup, .. } => (start.0, start.0 + warmup.0),
            FaultSpec::Crash {
                at, restart_after, ..
            } => (at.0, end_or(&restart_after.map(|r| Dur(at.0 + r.0)))),
        }
    }
}

/// Steps in the piecewise-constant approximation of a cold start's linear fade.
const COLD_START_STEPS: u64 = 20;

/// One fault applied to one backend, with any randomness (GC phase, noisy bursts) fixed.
#[derive(Debug, Clone)]
enum Effect {
    Speed {
        speed: f64,
        start: Nanos,
        end: Nanos,
    },
    Periodic {
        first: Nanos,
        every: Nanos,
        off_for: Nanos,
        end: Nanos,
    },
    Throttle {
        start: Nanos,
        end: Nanos,
        quota: Nanos,
        period: Nanos,
    },
    Noisy {
        start: Nanos,
        end: Nanos,
        burst: Nanos,
        speed: f64,
        noisy: Vec<bool>,
    },
    Cold {
        start: Nanos,
        warmup: Nanos,
        factor: f64,
    },
    FailFast {
        start: Nanos,
        end: Nanos,
        rate: f64,
    },
    Down {
        start: Nanos,
        end: Nanos,
    },
    BlackHole {
        start: Nanos,
        end: Nanos,
    },
}

/// Everything that happens to one backend over time.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    effects: Vec<Effect>,
    /// Slowdowns of some methods only: `(start, end, factor, method mask)`.
    method_slowdowns: Vec<(Nanos, Nanos, f64, u64)>,
    /// `[start, end)` windows in which any fault is active, for slow-share accounting.
    windows: Vec<(Nanos, Nanos)>,
}

impl Timeline {
    /// Builds the timeline of one backend from the faults that target it. `seed` fixes the random
    /// parts; `run_end` bounds open-ended faults; `methods` resolves a slowdown's method names
    /// (names it does not know, which the scenario check refuses first, are ignored).
    pub fn new(faults: &[&FaultSpec], seed: u64, run_end: Nanos, methods: &Methods) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut effects = Vec::new();
        let mut method_slowdowns = Vec::new();
        let mut windows = Vec::new();
        let end_or = |end: &Option<Dur>| end.map_or(Nanos::MAX, |d| d.0);
        for fault in faults {
            windows.push(fault.window(run_end));
            match fault {
                FaultSpec::Slowdown {
                    factor,
                    start,
                    end,
                    methods: names,
                    ..
                } if !names.is_empty() => {
                    let mask = names
                        .iter()
                        .filter_map(|n| methods.index(n))
                        .fold(0u64, |m, i| m | 1 << i);
                    method_slowdowns.push((start.0, end_or(end), *factor, mask));
                }
                FaultSpec::Slowdown {
                    factor, start, end, ..
                } => effects.push(Effect::Speed {
                    speed: 1.0 / factor,
                    start: start.0,
                    end: end_or(end),
                }),
                FaultSpec::GcPauses {
                    every,
                    pause,
                    start,
                    end,
                    ..
                } => {
                    let phase = rng.random_range(0..every.0.max(1));
                    effects.push(Effect::Periodic {
                        first: start.0 + phase,
                        every: every.0,
                        off_for: pause.0,
                        end: end_or(end),
                    })
                }
                FaultSpec::CpuThrottle {
                    quota,
                    period,
                    start,
                    end,
                    ..
                } => effects.push(Effect::Throttle {
                    start: start.0,
                    end: end_or(end),
                    quota: quota.0,
                    period: period.0,
                }),
                FaultSpec::NoisyNeighbour {
                    factor,
                    start,
                    end,
                    burst,
                    duty,
                    ..
                } => {
                    // Bursts past the end of the run are never reached: draw none for them.
                    let n = (end.0.min(run_end).saturating_sub(start.0)).div_ceil(burst.0.max(1));
                    let noisy = (0..n)
                        .map(|_| rng.random_bool(duty.clamp(0.0, 1.0)))
                        .collect();
                    effects.push(Effect::Noisy {
                        start: start.0,
                        end: end.0,
                        burst: burst.0,
                        speed: 1.0 / factor,
                        noisy,
                    })
                }
                FaultSpec::ColdStart {
                    factor,
                    warmup,
                    start,
                    ..
                } => effects.push(Effect::Cold {
                    start: start.0,
                    warmup: warmup.0,
                    factor: *factor,
                }),
                FaultSpec::FailFast {
                    error_rate,
                    start,
                    end,
                    ..
                } => effects.push(Effect::FailFast {
                    start: start.0,
                    end: end_or(end),
                    rate: *error_rate,
                }),
                FaultSpec::Crash {
                    at, restart_after, ..
                } => {
                    let end = restart_after.map_or(Nanos::MAX, |r| at.0.saturating_add(r.0));
                    effects.push(Effect::Down { start: at.0, end });
                    // A restarted process starts cold if a cold start is configured: handled by
                    // the cold-start fault's own `start`; restarts add no slowdown otherwise.
                }
                FaultSpec::BlackHole { start, end, .. } => effects.push(Effect::BlackHole {
                    start: start.0,
                    end: end_or(end),
                }),
            }
        }
        Timeline {
            effects,
            method_slowdowns,
            windows,
        }
    }

    /// The factor by which the work of a call of `method` arriving at `t` is multiplied by the
    /// method slowdowns active then (1 when none applies).
    pub fn method_factor(&self, t: Nanos, method: u32) -> f64 {
        self.method_slowdowns
            .iter()
            .filter(|&&(s, e, _, mask)| s <= t && t < e && mask >> method.min(63) & 1 == 1)
            .map(|&(_, _, f, _)| f)
            .product()
    }

    /// Whether any fault is active on this backend at `t` (a request sent then counts toward
    /// `slow_share`).
    pub fn faulty_at(&self, t: Nanos) -> bool {
        self.windows.iter().any(|&(s, e)| s <= t && t < e)
    }

    /// The windows in which faults are active.
    pub fn windows(&self) -> &[(Nanos, Nanos)] {
        &self.windows
    }

    /// Speed at `t` and the time of the next possible change after `t` (`Nanos::MAX` if none).
    fn speed_piece(&self, t: Nanos) -> (f64, Nanos) {
        let mut speed = 1.0;
        let mut next = Nanos::MAX;
        for e in &self.effects {
            let (s, n) = match *e {
                Effect::Speed { speed, start, end } => window_piece(t, start, end, || (speed, end)),
                Effect::Periodic {
                    first,
                    every,
                    off_for,
                    end,
                } => {
                    if t < first {
                        (1.0, first)
                    } else {
                        let k = (t - first) / every.max(1);
                        let begin = first + k * every.max(1);
                        if begin >= end {
                            (1.0, Nanos::MAX)
                        } else if t < begin + off_for {
                            (0.0, begin + off_for)
                        } else {
                            (1.0, begin + every.max(1))
                        }
                    }
                }
                Effect::Throttle {
                    start,
                    end,
                    quota,
                    period,
                } => window_piece(t, start, end, || {
                    let begin = start + (t - start) / period.max(1) * period.max(1);
                    if t < begin + quota {
                        (1.0, (begin + quota).min(end))
                    } else {
                        (0.0, (begin + period.max(1)).min(end))
                    }
                }),
                Effect::Noisy {
                    start,
                    end,
                    burst,
                    speed,
                    ref noisy,
                } => window_piece(t, start, end, || {
                    let i = ((t - start) / burst.max(1)) as usize;
                    let next = (start + (i as u64 + 1) * burst.max(1)).min(end);
                    (
                        if noisy.get(i).copied().unwrap_or(false) {
                            speed
                        } else {
                            1.0
                        },
                        next,
                    )
                }),
                Effect::Cold {
                    start,
                    warmup,
                    factor,
                } => window_piece(t, start, start + warmup, || {
                    let step = (warmup / COLD_START_STEPS).max(1);
                    let i = (t - start) / step;
                    let remaining = 1.0 - (i as f64 + 0.5) / COLD_START_STEPS as f64;
                    let f = 1.0 + (factor - 1.0) * remaining.max(0.0);
                    (1.0 / f, (start + (i + 1) * step).min(start + warmup))
                }),
                Effect::FailFast { .. } | Effect::Down { .. } | Effect::BlackHole { .. } => {
                    (1.0, Nanos::MAX)
                }
            };
            speed *= s;
            next = next.min(n);
        }
        (speed, next.max(t + 1))
    }

    /// When a request that starts at `start` with `work` ns of nominal service work finishes,
    /// given every slowdown, pause and throttle on the timeline.
    pub fn finish_time(&self, start: Nanos, work: Nanos) -> Nanos {
        if self.effects.is_empty() {
            return start.saturating_add(work);
        }
        let mut t = start;
        let mut left = work as f64;
        loop {
            let (speed, next) = self.speed_piece(t);
            if speed > 0.0 {
                let need = left / speed;
                if next == Nanos::MAX || (t as f64 + need) <= next as f64 {
                    return t.saturating_add(need.ceil() as Nanos);
                }
                left -= (next - t) as f64 * speed;
            }
            if next == Nanos::MAX {
                return Nanos::MAX; // stopped for ever
            }
            t = next;
        }
    }

    /// The fail-fast probability at `t`.
    pub fn error_rate(&self, t: Nanos) -> f64 {
        self.effects
            .iter()
            .filter_map(|e| match *e {
                Effect::FailFast { start, end, rate } if start <= t && t < end => Some(rate),
                _ => None,
            })
            .fold(0.0, f64::max)
    }

    /// Whether the process is down (crashed) at `t`.
    pub fn down_at(&self, t: Nanos) -> bool {
        self.effects
            .iter()
            .any(|e| matches!(*e, Effect::Down { start, end } if start <= t && t < end))
    }

    /// Whether requests arriving at `t` are swallowed.
    pub fn black_hole_at(&self, t: Nanos) -> bool {
        self.effects
            .iter()
            .any(|e| matches!(*e, Effect::BlackHole { start, end } if start <= t && t < end))
    }

    /// Times at which the backend goes down or comes back up, in order: `(time, up)`.
    pub fn availability_changes(&self) -> Vec<(Nanos, bool)> {
        let mut v: Vec<(Nanos, bool)> = self
            .effects
            .iter()
            .filter_map(|e| match *e {
                Effect::Down { start, end } => Some([(start, false), (end, true)]),
                _ => None,
            })
            .flatten()
            .filter(|&(t, _)| t != Nanos::MAX)
            .collect();
        v.sort();
        v
    }
}

/// The piece at `t` (speed, next possible change) of an effect active in `[start, end)`:
/// nominal until `start`, `inside()` within the window, nominal for ever from `end`.
fn window_piece(
    t: Nanos,
    start: Nanos,
    end: Nanos,
    inside: impl FnOnce() -> (f64, Nanos),
) -> (f64, Nanos) {
    if t < start {
        (1.0, start)
    } else if t < end {
        inside()
    } else {
        (1.0, Nanos::MAX)
    }
}

#[cfg(test)]
mod tests;
