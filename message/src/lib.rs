//! The words of lblab's messages, below every other crate so that each can use them:
//!
//! - [`setting`]: which setting of a job a message names ([`Setting`]), typed here and spelt by
//!   the caller ([`Names`], [`Named`]): a library says "`out` …", the binary its own flag, so no
//!   library names a command-line flag;
//! - [`FileError`]: what is wrong in one of lblab's files, scenario or results, named by file,
//!   field, line and column;
//! - [`text`]: text from elsewhere (a server's status message, an error and its causes) made fit
//!   to show on one line of a terminal.

#![warn(missing_docs)]

mod file_error;
pub mod setting;
pub mod text;

pub use file_error::FileError;
pub use setting::{Named, Names, Setting};
