//! `lblab backend` stopped by Ctrl-C says what it does: it stops the fleet, and writes no
//! results, so it does not promise any.

mod common;

use std::time::Duration;

use common::interrupted;

#[test]
fn a_stopped_fleet_promises_no_results() {
    let run = interrupted(
        &[
            "backend",
            "scenarios/healthy.toml",
            "--for",
            "30s",
            "--no-realtime",
        ],
        "-INT",
        Duration::from_secs(2),
    );
    assert!(
        run.stderr.contains("interrupted: stopping the fleet"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("writing the results"),
        "{}",
        run.stderr
    );
    assert!(run.orphans.is_empty(), "left running: {:?}", run.orphans);
}
