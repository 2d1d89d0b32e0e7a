//! `lblab`: the command-line front end. Parsing lives here; the work lives in the library crates.

#[macro_use]
mod stdout;
mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    match stdout::finish(cli::run()) {
        Ok(code) => code,
        Err(err) => {
            lblab_lab::errln!("error: {}", cli::names::message(&err));
            ExitCode::from(2)
        }
    }
}
