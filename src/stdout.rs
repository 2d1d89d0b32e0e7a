//! Standard output that never panics. `println!` panics when stdout is a closed pipe
//! (`lblab sweep … | head`) or a full disk; the commands print through [`outln!`] and [`out!`]
//! instead, which remember the first write error and drop what follows, so that a command still
//! finishes its work (its result files are written either way). [`finish`] then turns the error
//! into the exit: quietly with the command's own code on a closed pipe, as `head` expects, or a
//! clear error (exit 2) on any other write error.

use std::fmt;
use std::io::{self, Write as _};
use std::process::ExitCode;
use std::sync::Mutex;

/// The first error writing to stdout, if any.
static FAILED: Mutex<Option<io::Error>> = Mutex::new(None);

/// Prints a line on stdout; after a write error, nothing.
macro_rules! outln {
    () => {
        $crate::stdout::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::stdout::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Prints on stdout without a newline; after a write error, nothing.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::write(format_args!($($arg)*))
    };
}

/// Whether an earlier write failed (then nothing more is written).
fn failed() -> bool {
    FAILED.lock().map_or(true, |f| f.is_some())
}

fn remember(e: io::Error) {
    if let Ok(mut f) = FAILED.lock() {
        f.get_or_insert(e);
    }
}

/// Writes `args` to stdout unless an earlier write failed; remembers the first error.
pub fn write(args: fmt::Arguments<'_>) {
    if failed() {
        return;
    }
    if let Err(e) = io::stdout().lock().write_fmt(args) {
        remember(e);
    }
}

/// Writes `bytes` to stdout unless an earlier write failed; remembers the first error.
pub fn write_bytes(bytes: &[u8]) {
    if failed() {
        return;
    }
    if let Err(e) = io::stdout().lock().write_all(bytes) {
        remember(e);
    }
}

/// The command's result, given what happened to stdout: a closed pipe changes nothing (the reader
/// stopped reading, as `head` does), any other write error is an error of its own unless the
/// command already failed.
pub fn finish(result: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    if !failed() {
        if let Err(e) = io::stdout().lock().flush() {
            remember(e);
        }
    }
    let error = FAILED.lock().ok().and_then(|mut f| f.take());
    match (result, error) {
        (result, None) => result,
        (Err(e), Some(_)) => Err(e),
        (Ok(code), Some(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(code),
        (Ok(_), Some(e)) => Err(anyhow::Error::new(e).context("writing to standard output")),
    }
}
