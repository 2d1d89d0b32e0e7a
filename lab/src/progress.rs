//! Progress of long commands: an indicatif bar on a terminal (done of total, elapsed, ETA, a
//! message), plain lines on stderr otherwise, so that logs and tests read whole lines. During a
//! real run the message also carries the run's live figures ([`Progress::watch`]).
//!
//! A real run's length is known before it starts (each policy's warm-up and duration, and the
//! harness floor's), so its bar counts scheduled seconds ([`Progress::scheduled`]): the ETA is the
//! scheduled time still to run, right from the start, rather than an estimate from the pace of
//! whole policies (which says 0 s for all of the first policy and then minutes per second).

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use lblab_loadgen::run::Live;

/// What a sequence of real runs is scheduled to take, known before it starts.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// A first run of its own length before the policies' (the harness floor), if any.
    pub first: Option<Duration>,
    /// Each policy's run: its warm-up and measured duration.
    pub each: Duration,
}

impl Schedule {
    /// The scheduled time of the first run (if any) and `runs` policy runs.
    fn total(&self, runs: u64) -> Duration {
        self.first.unwrap_or_default() + self.each * u32::try_from(runs).unwrap_or(u32::MAX)
    }
}

/// A bar over `total` steps, or plain lines when stderr is not a terminal.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    /// Plain mode prints a line every this many steps.
    step: u64,
    /// What a step is ("policies", "simulations").
    what: String,
    /// Steps done.
    done: Arc<AtomicU64>,
    /// The scheduled time of a real run, if the bar counts it ([`Progress::scheduled`]).
    schedule: Option<Schedule>,
    started: Instant,
    /// The last message, which the live figures are shown after.
    message: Arc<Mutex<String>>,
}

/// How often the live figures are refreshed on a terminal.
const LIVE_EVERY: Duration = Duration::from_millis(500);
/// How often they are printed as a plain line when stderr is not a terminal.
const LIVE_PLAIN_EVERY: Duration = Duration::from_secs(10);

/// `d` as minutes and seconds (`3:07`), or hours, minutes and seconds (`1:02:07`): never rounded
/// to whole minutes.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The live figures as shown: calls ended per second since the last refresh (`None` before a
/// call ended) and the p99 so far.
fn live_line(per_second: Option<f64>, live: &Live) -> String {
    let p99 = live.p99_so_far().map_or_else(
        || "– (none measured yet)".to_string(),
        |d| format!("{:.2} ms", d.as_secs_f64() * 1e3),
    );
    let rate = per_second.map_or_else(|| "–".to_string(), |r| format!("{r:.0}"));
    format!(
        "{:.0} s in: {rate} calls/s ended, p99 so far {p99}",
        live.run_time().as_secs_f64()
    )
}

/// One reading of the live figures: which run, calls ended in it, and how far into its clock.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    run: u64,
    ended: u64,
    at: Duration,
}

impl Sample {
    fn of(live: &Live) -> Sample {
        Sample {
            run: live.runs(),
            ended: live.ended(),
            at: live.run_time(),
        }
    }
}

/// A plain progress line: `done` of `total` steps of `what` after `elapsed`, and the time the
/// rest takes at the pace so far.
fn pace_line(done: u64, total: u64, what: &str, elapsed: Duration) -> String {
    let mut line = format!("{done}/{total} {what} · {} elapsed", clock(elapsed));
    if done > 0 {
        let left = elapsed.mul_f64(total.saturating_sub(done) as f64 / done as f64);
        let _ = write!(line, ", about {} to go", clock(left));
    }
    line
}

/// Calls ended per second of run time between two readings, counting only the run in progress:
/// when a new run began between them, from that run's start. `None` while no time has passed.
fn rate(previous: Option<Sample>, now: Sample) -> Option<f64> {
    let (ended, elapsed) = match previous {
        Some(p) if p.run == now.run && p.ended <= now.ended => {
            (now.ended - p.ended, now.at.saturating_sub(p.at))
        }
        _ => (now.ended, now.at),
    };
    (!elapsed.is_zero()).then(|| ended as f64 / elapsed.as_secs_f64())
}

/// Where a sequence of runs is on its schedule: the runs that ended count in full (their
/// scheduled length), the one in progress as far as its clock went, at most its length.
#[derive(Debug, Default)]
struct Position {
    /// Runs begun when last read.
    seen: u64,
    /// Scheduled time of the runs that ended.
    ended: Duration,
    /// The scheduled length of the run in progress.
    current: Duration,
}

impl Position {
    /// The position after reading `runs` begun, the current one's `planned` length and its clock
    /// at `run_time`.
    fn update(&mut self, runs: u64, planned: Duration, run_time: Duration) -> Duration {
        if runs > self.seen {
            if self.seen > 0 {
                // The run that was in progress ended; runs that came and went between two
                // readings count at the new one's length.
                let missed = u32::try_from(runs - self.seen - 1).unwrap_or(u32::MAX);
                self.ended += self.current + planned * missed;
            }
            self.seen = runs;
            self.current = planned;
        }
        if self.seen == 0 {
            return Duration::ZERO;
        }
        self.ended + run_time.min(self.current)
    }
}

/// Refreshes the live figures until dropped.
pub struct LiveWatch {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for LiveWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Progress {
    /// A bar over `total` steps of `what` (e.g. "simulations"), with indicatif's ETA from the
    /// pace of the steps.
    pub fn new(total: u64, what: &str) -> Progress {
        Progress::build(total, what, None)
    }

    /// A bar over `runs` real runs of `what` (e.g. "policies") that counts their scheduled time:
    /// its ETA is the scheduled time still to run. [`Progress::watch`] moves it.
    pub fn scheduled(runs: u64, what: &str, schedule: Schedule) -> Progress {
        Progress::build(runs, what, Some(schedule))
    }

    fn build(total: u64, what: &str, schedule: Option<Schedule>) -> Progress {
        let done = Arc::new(AtomicU64::new(0));
        let bar = std::io::stderr().is_terminal().then(|| {
            let steps = done.clone();
            let style = ProgressStyle::with_template(&format!(
                "{{bar:30}} {{steps}} {what} · {{elapsed}} elapsed, ETA {{eta}} {{msg}}"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .with_key(
                "steps",
                move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}/{total}", steps.load(Ordering::Relaxed));
                },
            )
            .with_key(
                "elapsed",
                |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&clock(s.elapsed()));
                },
            );
            let (style, length) = match schedule {
                // Position and length in scheduled milliseconds.
                Some(plan) => (
                    style.with_key("eta", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let left = s.len().unwrap_or(0).saturating_sub(s.pos());
                        let _ = w.write_str(&clock(Duration::from_millis(left)));
                    }),
                    plan.total(total).as_millis() as u64,
                ),
                None => (
                    style.with_key("eta", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = w.write_str(&clock(s.eta()));
                    }),
                    total,
                ),
            };
            let bar = ProgressBar::new(length).with_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            total,
            step: (total / 10).max(1),
            what: what.to_string(),
            done,
            schedule,
            started: Instant::now(),
            message: Arc::new(Mutex::new(String::new())),
        }
    }

    /// Shows `live`'s figures after the message until the returned guard is dropped: on a
    /// terminal refreshed twice a second, otherwise a plain line every 10 s. The rate counts
    /// only the run in progress ([`Live::begin`] marks a new one). A bar that counts scheduled
    /// time follows the runs' clocks.
    pub fn watch(&self, live: Arc<Live>) -> LiveWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let (bar, message, flag) = (self.bar.clone(), self.message.clone(), stop.clone());
        let (schedule, runs) = (self.schedule, self.total);
        let thread = std::thread::Builder::new()
            .name("lblab-progress".into())
            .spawn(move || {
                let every = if bar.is_some() {
                    LIVE_EVERY
                } else {
                    LIVE_PLAIN_EVERY
                };
                let mut previous: Option<Sample> = None;
                let mut position = Position::default();
                let mut at = Instant::now();
                while !flag.load(Ordering::Relaxed) {
                    let until = at + every;
                    while !flag.load(Ordering::Relaxed) && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(50));
                        if let (Some(bar), Some(plan)) = (&bar, schedule) {
                            let total = plan.total(runs + live.extra_runs());
                            bar.set_length(total.as_millis() as u64);
                            let pos = position.update(live.runs(), live.planned(), live.run_time());
                            bar.set_position(pos.as_millis() as u64);
                        }
                    }
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    at = Instant::now();
                    let sample = Sample::of(&live);
                    let figures = live_line(rate(previous, sample), &live);
                    previous = Some(sample);
                    let message = message.lock().map(|m| m.clone()).unwrap_or_default();
                    match &bar {
                        Some(bar) => bar.set_message(format!("{message} · {figures}")),
                        None if sample.ended > 0 => crate::errln!("  {figures}"),
                        None => {}
                    }
                }
            })
            .ok();
        LiveWatch { stop, thread }
    }

    /// Follows `read` (steps done so far, e.g. simulated seconds of runs in progress) until the
    /// returned guard is dropped: on a terminal the bar moves five times a second, otherwise a
    /// plain line every 10 s while it changes, with the elapsed time and an estimate of the
    /// rest from the pace so far. For work whose steps are not whole jobs: one long simulation
    /// shows its simulated clock, not nothing until it ends.
    pub fn follow(&self, read: impl Fn() -> u64 + Send + 'static) -> LiveWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let (bar, flag, total) = (self.bar.clone(), stop.clone(), self.total);
        let (what, started) = (self.what.clone(), self.started);
        let thread = std::thread::Builder::new()
            .name("lblab-progress".into())
            .spawn(move || {
                let mut printed = (Instant::now(), 0);
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(200));
                    let done = read().min(total);
                    match &bar {
                        Some(bar) => bar.set_position(done),
                        None if done > printed.1 && printed.0.elapsed() >= LIVE_PLAIN_EVERY => {
                            crate::errln!("{}", pace_line(done, total, &what, started.elapsed()));
                            printed = (Instant::now(), done);
                        }
                        None => {}
                    }
                }
            })
            .ok();
        LiveWatch { stop, thread }
    }

    /// `done` steps are done.
    pub fn set(&self, done: u64) {
        self.done.store(done, Ordering::Relaxed);
        match (&self.bar, self.schedule) {
            (Some(bar), None) => bar.set_position(done),
            (Some(bar), Some(_)) => bar.tick(),
            (None, _) if done.is_multiple_of(self.step) || done == self.total => {
                let mut line = format!("{done}/{} {} done", self.total, self.what);
                let elapsed = self.started.elapsed();
                let _ = write!(line, " · {} elapsed", clock(elapsed));
                if let Some(plan) = self.schedule {
                    let left = plan.total(self.total).saturating_sub(plan.total(done));
                    let _ = write!(line, ", {} scheduled to go", clock(left));
                }
                crate::errln!("{line}");
            }
            (None, _) => {}
        }
    }

    /// Shows `message` beside the bar (plain mode: nothing).
    pub fn message(&self, message: String) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.clone());
        }
        if let Ok(mut m) = self.message.lock() {
            *m = message;
        }
    }

    /// Prints a whole line above the bar (plain mode: on stderr).
    pub fn line(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => crate::errln!("{line}"),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn sample(run: u64, ended: u64, at_s: u64) -> Sample {
        Sample {
            run,
            ended,
            at: S * at_s as u32,
        }
    }

    #[test]
    fn the_rate_after_a_new_run_began_counts_only_that_run() {
        // 1000 calls/s: the first run ended 22,000 calls at 22 s; 10 s later the second run is
        // 7 s in with 7,000. Counting across the runs would give 7000 - 22000 < 0 or
        // 7000 / 10 s = 700; the rate is the second run's own.
        let first = sample(1, 22_000, 22);
        let second = sample(2, 7_000, 7);
        assert_eq!(rate(Some(first), second), Some(1000.0));
        // Within one run: the calls and time between the readings.
        assert_eq!(
            rate(Some(sample(2, 7_000, 7)), sample(2, 17_000, 17)),
            Some(1000.0)
        );
        // No time has passed on the run's clock: no rate rather than infinity.
        assert_eq!(rate(None, sample(3, 0, 0)), None);
        assert_eq!(rate(Some(sample(3, 5, 2)), sample(3, 5, 2)), None);
    }

    #[test]
    fn the_position_counts_ended_runs_in_full_and_the_current_one_by_its_clock() {
        let mut p = Position::default();
        assert_eq!(p.update(0, Duration::ZERO, Duration::ZERO), Duration::ZERO);
        // A floor of 5.5 s, then policies of 22 s each.
        assert_eq!(p.update(1, S * 11 / 2, S * 2), S * 2);
        // The floor's clock stops short of its schedule (the last call ended before it): when the
        // next run begins the floor counts in full.
        assert_eq!(p.update(2, S * 22, S), S * 13 / 2);
        // A run's clock past its schedule (draining) counts its schedule only.
        assert_eq!(p.update(2, S * 22, S * 23), S * 55 / 2);
        // Two runs began between readings: the missed one counts at the new one's length.
        assert_eq!(p.update(4, S * 22, Duration::ZERO), S * (11 + 44 + 44) / 2);
    }

    #[test]
    fn a_plain_line_says_how_far_and_how_long_the_rest_takes_at_this_pace() {
        assert_eq!(
            pace_line(30, 120, "simulated s", S * 10),
            "30/120 simulated s · 0:10 elapsed, about 0:30 to go"
        );
        assert_eq!(
            pace_line(0, 120, "simulated s", S * 10),
            "0/120 simulated s · 0:10 elapsed"
        );
    }

    #[test]
    fn the_clock_never_rounds_to_whole_minutes() {
        assert_eq!(clock(Duration::from_secs(0)), "0:00");
        assert_eq!(clock(Duration::from_secs(217)), "3:37");
        assert_eq!(clock(Duration::from_millis(119_999)), "1:59");
        assert_eq!(clock(Duration::from_secs(3723)), "1:02:03");
    }

    #[test]
    fn a_schedule_totals_the_first_run_and_every_policy() {
        let plan = Schedule {
            first: Some(S * 11 / 2),
            each: S * 22,
        };
        assert_eq!(plan.total(10), S * 451 / 2);
        let without = Schedule {
            first: None,
            each: S * 22,
        };
        assert_eq!(without.total(0), Duration::ZERO);
    }
}
