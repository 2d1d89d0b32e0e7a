//! `lblab`: the command-line front end. Parsing lives here; the work lives in the library crates.

#[macro_use]
mod stdout;
mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    match stdout::finish(cli::run()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", message(&err));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes, each once: a cause whose text the message already holds (an error
/// that prints its source, as `thiserror`'s `"{file}: {source}"` does) is not repeated.
fn message(err: &anyhow::Error) -> String {
    let mut out = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}
