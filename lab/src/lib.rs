//! The lab's jobs as library functions: what `lblab sim`, `sweep`, `regress`, `real` and
//! `compare` do between parsing their flags and exiting, so that it is reusable and testable
//! without the command line. A job takes typed options and a [`Lab`] (the stop flag and the
//! budgets), writes its results folder ([`out_dir`], [`run_folder`]), shows its progress on
//! stderr ([`progress`]) and hands each line it has for standard output to a sink
//! (`&mut dyn FnMut(&str)`), which the binary prints; notes and warnings go to stderr.

#![warn(missing_docs)]

pub mod builtin;
pub mod check;
pub mod compare;
pub mod compare_lines;
pub mod error;
pub mod fleet;
pub mod grid;
pub mod lock;
pub mod merge;
pub mod out_dir;
pub mod progress;
pub mod real;
pub mod regress;
pub mod remote;
pub mod run_folder;
pub mod scenario;
pub mod sim;
pub mod space;
pub mod stderr;
pub mod table;
pub mod verdict;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub use error::{Context, LabError, Result};
pub use lblab_message::setting::{Named, Names, Setting};

/// What every job shares: when to stop, and its budgets.
#[derive(Debug, Clone, Copy)]
pub struct Lab {
    /// Set by the first Ctrl-C / SIGTERM: a job stops and writes what it measured.
    pub stop: &'static AtomicBool,
    /// The memory a run may need (`--memory-budget`), checked against its estimate before any
    /// work.
    pub memory_budget: u64,
    /// The time a run's charts may take to draw (`--chart-budget`; `None`: unlimited).
    pub chart_budget: Option<Duration>,
    /// How the job's messages spell the settings they name: the binary's flags, or
    /// [`Setting::word`].
    pub names: Names,
}

/// How a job ended, which the binary turns into its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It finished (exit 0).
    Success,
    /// It finished and found something worse than its reference (`regress`: exit 1).
    Worse,
    /// It was interrupted and wrote what it measured (exit 130).
    Interrupted,
}

impl Exit {
    /// [`Exit::Interrupted`] if `partial`, else [`Exit::Success`].
    pub fn of(partial: bool) -> Exit {
        if partial {
            Exit::Interrupted
        } else {
            Exit::Success
        }
    }

    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Worse => 1,
            Exit::Interrupted => 130,
        }
    }
}

impl Lab {
    /// Checks a run of `policies` policies of `scenario` against the memory budget before any
    /// work.
    pub fn check_memory(
        &self,
        scenario: &lblab_model::Scenario,
        policies: usize,
        mode: lblab_model::budget::Mode,
    ) -> Result<()> {
        Ok(lblab_model::budget::check(
            scenario,
            policies,
            mode,
            self.memory_budget,
        )?)
    }
}
