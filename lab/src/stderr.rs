//! Standard error that never panics. `eprintln!` panics when stderr is a closed pipe (`lblab
//! sweep … 2>&1 | head -1` once `head` has its line) or a full disk; notes, warnings and progress
//! lines go through [`errln!`](crate::errln) instead, which drops a line it cannot write: stderr
//! is where a command says how it is doing, and a reader who stopped reading it does not want the
//! command to fail, whose results files are written either way.

use std::fmt;
use std::io::{self, Write as _};

/// Writes `args` and a newline to stderr; a write error is ignored.
pub fn line(args: fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// Prints a line on stderr, as `eprintln!` does, but never panics: a line that cannot be written
/// (a closed pipe, a full disk) is dropped.
#[macro_export]
macro_rules! errln {
    () => {
        $crate::stderr::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::stderr::line(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_line_formats_like_eprintln() {
        // Nothing to compare on a shared stderr; this only checks both forms expand and run.
        crate::errln!();
        crate::errln!("{} {}", 1, "two");
    }
}
