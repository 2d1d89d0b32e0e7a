//! Work bounded before it starts, through the `lblab` binary: a sweep whose axes cross into too
//! many points is refused before any point is built.

mod common;

use std::time::{Duration, Instant};

use common::{arg, assert_says, fails, scenario_file, two_backends};

/// Two backends for a second.
fn bounds(folder: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let toml = two_backends("bounds").duration("1s").toml();
    scenario_file(folder, "bounds.toml", &toml)
}

/// `--vary PATH=` with the values `1..=n`.
fn values(path: &str, n: usize) -> String {
    let v: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    format!("{path}={}", v.join(","))
}

#[test]
fn a_sweep_of_too_many_points_is_refused_before_building_them() {
    let (dir, scenario) = bounds("bounds-sweep");
    let out = dir.join("out");
    let (s, o) = (arg(&scenario), arg(&out));
    // 1,000 × 1,000 points: refused at once (building them took 8 GB and aborted).
    let (rates, clients) = (
        values("workload.rate", 1000),
        values("workload.clients", 1000),
    );
    let started = Instant::now();
    let err = fails(&["sweep", s, "--vary", &rates, "--vary", &clients, "--out", o]);
    assert_says(&err, &["1000 × 1000 = 1000000 points", "at most 10000"]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    // Points × seeds.
    let few = values("workload.rate", 200);
    let err = fails(&["sweep", s, "--vary", &few, "--seeds", "1000", "--out", o]);
    assert_says(&err, &["200 points × 1000 seeds", "at most 100000"]);
    // The plan's memory, against --memory-budget.
    let err = fails(&[
        "sweep",
        s,
        "--vary",
        &few,
        "--seeds",
        "10",
        "--memory-budget",
        "1MiB",
        "--out",
        o,
    ]);
    assert_says(
        &err,
        &[
            "2000 planned scenarios",
            "--memory-budget",
            "budget of 1.0 MiB",
        ],
    );
    assert!(!err.contains("0.0 GiB"), "{err}");
    assert!(
        !out.exists(),
        "nothing is written for a sweep that cannot run"
    );
    std::fs::remove_dir_all(&dir).ok();
}
