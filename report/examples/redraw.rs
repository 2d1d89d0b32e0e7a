//! Redraws the charts of results folders from their files:
//! `cargo run -p lblab-report --example redraw -- DIR...` (see `lblab_report::redraw`).

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's

fn main() -> std::process::ExitCode {
    let mut failed = false;
    for dir in std::env::args_os().skip(1) {
        let dir = std::path::PathBuf::from(dir);
        match lblab_report::redraw(&dir) {
            Ok(paths) => println!("{}: {} files", dir.display(), paths.len()),
            Err(e) => {
                eprintln!("error: {e}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
