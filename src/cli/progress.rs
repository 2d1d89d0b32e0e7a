//! Progress of long commands: an indicatif bar on a terminal (done of total, elapsed, ETA, a
//! message), plain lines on stderr otherwise, so that logs and tests read whole lines.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `total` steps, or plain lines when stderr is not a terminal.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    /// Plain mode prints a line every this many steps.
    step: u64,
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
        }
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
            bar.set_message(message);
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
