//! Progress of long commands: an indicatif bar on a terminal (done of total, elapsed, ETA, a
//! message), plain lines on stderr otherwise, so that logs and tests read whole lines. During a
//! real run the message also carries the run's live figures ([`Progress::watch`]).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use lblab_loadgen::run::Live;

/// A bar over `total` steps, or plain lines when stderr is not a terminal.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    /// Plain mode prints a line every this many steps.
    step: u64,
    /// The last message, which the live figures are shown after.
    message: Arc<Mutex<String>>,
}

/// How often the live figures are refreshed on a terminal.
const LIVE_EVERY: Duration = Duration::from_millis(500);
/// How often they are printed as a plain line when stderr is not a terminal.
const LIVE_PLAIN_EVERY: Duration = Duration::from_secs(10);

/// The live figures as shown: calls ended per second over the last refresh and the p99 so far.
fn live_line(per_second: f64, live: &Live) -> String {
    let p99 = live.p99_so_far().map_or_else(
        || "– (none measured yet)".to_string(),
        |d| format!("{:.2} ms", d.as_secs_f64() * 1e3),
    );
    format!(
        "{:.0} s in: {per_second:.0} calls/s ended, p99 so far {p99}",
        live.run_time().as_secs_f64()
    )
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
    /// A bar over `total` steps of `what` (e.g. "simulations").
    pub fn new(total: u64, what: &str) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let style = ProgressStyle::with_template(&format!(
                "{{bar:30}} {{pos}}/{{len}} {what} · {{elapsed}} elapsed, ETA {{eta}} {{msg}}"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            let bar = ProgressBar::new(total).with_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            total,
            step: (total / 10).max(1),
            message: Arc::new(Mutex::new(String::new())),
        }
    }

    /// Shows `live`'s figures after the message until the returned guard is dropped: on a
    /// terminal refreshed twice a second, otherwise a plain line every 10 s. A run resets
    /// `live` when it starts, which the rate follows.
    pub fn watch(&self, live: Arc<Live>) -> LiveWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let (bar, message, flag) = (self.bar.clone(), self.message.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("lblab-progress".into())
            .spawn(move || {
                let every = if bar.is_some() {
                    LIVE_EVERY
                } else {
                    LIVE_PLAIN_EVERY
                };
                let (mut last, mut at) = (live.ended(), Instant::now());
                while !flag.load(Ordering::Relaxed) {
                    let until = at + every;
                    while !flag.load(Ordering::Relaxed) && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    let ended = live.ended();
                    let dt = at.elapsed().as_secs_f64();
                    // A count below the last one: a new run reset it, and all of it is new.
                    let new = if ended >= last { ended - last } else { ended };
                    let per_second = new as f64 / dt;
                    (last, at) = (ended, Instant::now());
                    let figures = live_line(per_second, &live);
                    let message = message.lock().map(|m| m.clone()).unwrap_or_default();
                    match &bar {
                        Some(bar) => bar.set_message(format!("{message} · {figures}")),
                        None if ended > 0 => eprintln!("  {figures}"),
                        None => {}
                    }
                }
            })
            .ok();
        LiveWatch { stop, thread }
    }

    /// `done` steps are done.
    pub fn set(&self, done: u64) {
        match &self.bar {
            Some(bar) => bar.set_position(done),
            None if done.is_multiple_of(self.step) || done == self.total => {
                eprintln!("{done}/{} done", self.total);
            }
            None => {}
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
            None => eprintln!("{line}"),
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
