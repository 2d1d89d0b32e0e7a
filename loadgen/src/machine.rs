//! Watching the machine the load generator runs on while it measures.
//!
//! A run's latencies count from each call's intended send time, so anything that keeps the load
//! generator from a CPU shows up in them: other processes (the targets themselves, when they run
//! on this machine), or a hypervisor that gives the virtual machine's CPUs to another guest
//! (steal time). [`MachineWatch`] samples the kernel's CPU counters (`/proc/stat`) and this
//! process's CPU time twice a second; [`Watched::incident`] turns half-seconds in which the
//! machine had no CPU to spare, or in which the hypervisor took a noticeable share, into an
//! incident, so that an outlier run says why. Where `/proc/stat` cannot be read (not Linux), it
//! watches nothing and says nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use lblab_policy::{Nanos, NANOS_PER_SEC};
use lblab_record::{Incident, IncidentKind};

use lblab_wire::Clock;

/// How often the counters are read.
const EVERY: Duration = Duration::from_millis(500);

/// Busy share of all CPUs at or above which the machine counts as saturated.
pub const SATURATED: f64 = 0.95;

/// Share of all CPUs' time taken by the hypervisor at or above which an interval counts.
pub const STEAL: f64 = 0.05;

/// The machine-wide CPU counters of `/proc/stat`'s first line, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Ticks {
    busy: u64,
    steal: u64,
    total: u64,
}

impl Ticks {
    /// Parses `/proc/stat`'s aggregate `cpu` line: user nice system idle iowait irq softirq
    /// steal (guest time is already in user).
    fn parse(stat: &str) -> Option<Ticks> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        if v.len() < 4 {
            return None;
        }
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        let idle = at(3) + at(4);
        let steal = at(7);
        let total: u64 = v.iter().sum();
        Some(Ticks {
            busy: total - idle - steal,
            steal,
            total,
        })
    }

    fn read() -> Option<Ticks> {
        Ticks::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }
}

/// One interval's shares of the machine's CPU time (all CPUs together).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Start, ns on the run's clock.
    pub start: Nanos,
    /// End, ns on the run's clock.
    pub end: Nanos,
    /// Busy (neither idle nor stolen), this process included.
    pub busy: f64,
    /// Used by this process.
    pub own: f64,
    /// Taken by the hypervisor.
    pub steal: f64,
}

/// A watch running beside a run: [`MachineWatch::finish`] stops it and returns what it saw.
pub struct MachineWatch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Interval>>>,
}

fn process_cpu_ns() -> u64 {
    crate::cpu::process_ns()
}

impl MachineWatch {
    /// Starts watching (a thread that sleeps between samples); does nothing where the counters
    /// cannot be read.
    pub fn start(clock: Clock) -> MachineWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let Some(first) = Ticks::read() else {
            return MachineWatch { stop, thread: None };
        };
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("lblab-machine-watch".into())
            .spawn(move || {
                let mut out = Vec::new();
                let (mut last, mut last_own, mut last_t) = (first, process_cpu_ns(), clock.now());
                let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
                while !flag.load(Ordering::Relaxed) {
                    // Parked, so that `finish` wakes it at once (a spurious wake-up only
                    // makes one interval shorter).
                    std::thread::park_timeout(EVERY);
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    let (Some(now), own, t) = (Ticks::read(), process_cpu_ns(), clock.now()) else {
                        break;
                    };
                    let total = now.total.saturating_sub(last.total);
                    let wall = t.saturating_sub(last_t);
                    if total > 0 && wall > 0 {
                        let share = |d: u64| d as f64 / total as f64;
                        out.push(Interval {
                            start: last_t,
                            end: t,
                            busy: share(now.busy.saturating_sub(last.busy)),
                            steal: share(now.steal.saturating_sub(last.steal)),
                            own: (own.saturating_sub(last_own) as f64 / (wall as f64 * cpus))
                                .min(1.0),
                        });
                    }
                    (last, last_own, last_t) = (now, own, t);
                }
                out
            })
            .ok();
        MachineWatch { stop, thread }
    }

    /// Stops the watch and returns its intervals (none if it could not run).
    pub fn finish(mut self) -> Watched {
        self.stop.store(true, Ordering::Relaxed);
        let intervals = self
            .thread
            .take()
            .and_then(|t| {
                t.thread().unpark();
                t.join().ok()
            })
            .unwrap_or_default();
        Watched { intervals }
    }
}

impl Drop for MachineWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }
}

/// What a [`MachineWatch`] saw.
#[derive(Debug, Clone, Default)]
pub struct Watched {
    /// The intervals, in order.
    pub intervals: Vec<Interval>,
}

impl Watched {
    /// An incident if, between `from` and `to` (the measured part of the run), the machine was
    /// saturated ([`SATURATED`]) or the hypervisor took at least [`STEAL`] of it, in any interval.
    pub fn incident(&self, policy: &str, from: Nanos, to: Nanos) -> Option<Incident> {
        let measured: Vec<&Interval> = self
            .intervals
            .iter()
            .filter(|i| i.end > from && i.start < to)
            .collect();
        let bad: Vec<&&Interval> = measured
            .iter()
            .filter(|i| i.busy + i.steal >= SATURATED || i.steal >= STEAL)
            .collect();
        let (first, last) = (bad.first()?, bad.last()?);
        let mean =
            |f: fn(&Interval) -> f64| bad.iter().map(|i| f(i)).sum::<f64>() / bad.len() as f64;
        let (busy, own, steal) = (mean(|i| i.busy), mean(|i| i.own), mean(|i| i.steal));
        let secs = |t: Nanos| t as f64 / NANOS_PER_SEC as f64;
        let span: Nanos = bad.iter().map(|i| i.end - i.start).sum();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        Some(Incident {
            policy: policy.to_string(),
            kind: IncidentKind::MachineBusy,
            backend: None,
            start_s: secs(first.start.max(from)),
            end_s: secs(last.end.min(to)),
            count: bad.len() as u64,
            detail: format!(
                "the machine had no CPU to spare for {:.1} s of the measured {:.1} s ({} of {} \
                 half-second samples at least {:.0} % busy or {:.0} % stolen): its {cpus} CPU(s) \
                 were {:.0} % busy then, {:.0} % by the load generator and {:.0} % by other \
                 processes (the targets, if they run here), and {:.1} % taken by the hypervisor \
                 (steal); latencies may include waiting for a CPU",
                secs(span),
                secs(to.saturating_sub(from)),
                bad.len(),
                measured.len(),
                SATURATED * 100.0,
                STEAL * 100.0,
                (busy + steal) * 100.0,
                own * 100.0,
                (busy - own).max(0.0) * 100.0,
                steal * 100.0,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_parses_and_steal_is_apart_from_busy() {
        let stat = "cpu  100 5 50 800 10 3 2 30 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1\n";
        let t = Ticks::parse(stat).expect("parses");
        assert_eq!(t.total, 1000);
        assert_eq!(t.steal, 30);
        assert_eq!(t.busy, 100 + 5 + 50 + 3 + 2);
        assert_eq!(Ticks::parse("intr 1\n"), None);
        assert_eq!(Ticks::parse("cpu  1 x 3 4\n"), None);
    }

    fn iv(s: u64, busy: f64, own: f64, steal: f64) -> Interval {
        let half = NANOS_PER_SEC / 2;
        Interval {
            start: s * half,
            end: (s + 1) * half,
            busy,
            own,
            steal,
        }
    }

    #[test]
    fn saturation_or_steal_in_the_measured_window_is_an_incident() {
        let quiet = Watched {
            intervals: (0..10).map(|s| iv(s, 0.5, 0.2, 0.0)).collect(),
        };
        assert!(quiet.incident("p", 0, 5 * NANOS_PER_SEC).is_none());
        // Saturated during the warm-up only: not an incident of the measured run.
        let mut warm = quiet.clone();
        warm.intervals[0].busy = 1.0;
        assert!(warm
            .incident("p", NANOS_PER_SEC, 5 * NANOS_PER_SEC)
            .is_none());
        let mut busy = quiet.clone();
        busy.intervals[4].busy = 0.97;
        busy.intervals[6].steal = 0.08;
        let i = busy
            .incident("p", NANOS_PER_SEC, 5 * NANOS_PER_SEC)
            .expect("an incident");
        assert_eq!(i.kind, IncidentKind::MachineBusy);
        assert_eq!(i.count, 2);
        assert_eq!((i.start_s, i.end_s), (2.0, 3.5));
        assert!(
            i.detail.contains("2 of 8 half-second samples"),
            "{}",
            i.detail
        );
    }

    #[test]
    fn a_watch_on_this_machine_samples_and_stops() {
        let clock = Clock::new(std::time::Instant::now());
        let watch = MachineWatch::start(clock);
        std::thread::sleep(Duration::from_millis(1200));
        let seen = watch.finish();
        if Ticks::read().is_some() {
            assert!(!seen.intervals.is_empty());
            for i in &seen.intervals {
                assert!(
                    (0.0..=1.0).contains(&i.busy) && (0.0..=1.0).contains(&i.own),
                    "{i:?}"
                );
            }
        }
    }
}
