//! grpcio (gRPC C-core through Python; nobody here wrote it) against `lblab backend`: the client
//! of `interop/python/echo_client.py`, configured by service-config JSON, on a two-backend fleet
//! whose `slow/0` is ten times slower. grpcio's `round_robin` splits the calls evenly; its
//! `weighted_round_robin`, weighted from the per-call ORCA reports in lblab's
//! `endpoint-load-metrics-bin` trailers, moves them to the fast backend — which proves the
//! trailers interoperate. The full comparison is `scripts/interop-python.sh`. The pinned grpcio
//! comes from PyPI through `scripts/interop-env.sh`. Loopback only; the fleet stops when the test
//! ends (and by itself after 60 s in any case).

mod common;

use std::path::Path;
use std::process::Command;

use common::{scratch, text};
use lblab_model::testing::{constant, ScenarioBuilder};

fn fleet() -> common::Backend {
    let dir = scratch("interop-python");
    let scenario = dir.join("smoke.toml");
    // Two backends with eight workers, `slow/0` ten times slower; the policy is not used.
    let service_time = constant("2ms");
    let toml = ScenarioBuilder::new("interop-smoke")
        .rate(150.0)
        .duration("2s")
        .group("fast", 1, &service_time, &["workers = 8"])
        .group("slow", 1, &service_time, &["workers = 8"])
        .fault("slowdown", &["slow"], &["factor = 10"])
        .lb("unused", "round_robin")
        .toml();
    std::fs::write(&scenario, toml).unwrap();
    common::Backend::start(&scenario)
}

/// One grpcio run; its JSON result.
fn grpcio(python: &Path, targets: &str, policy: &str, warmup: &str) -> serde_json::Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let gen = python.parent().and_then(Path::parent).unwrap().join("gen");
    let out = Command::new(python)
        .arg(root.join("interop/python/echo_client.py"))
        .args(["--targets", targets, "--rate", "150", "--duration", "1.5"])
        .args(["--warmup", warmup, "--deadline", "2"])
        .args([
            "--service-config",
            &format!(r#"{{"loadBalancingConfig":[{policy}]}}"#),
        ])
        .env("PYTHONPATH", gen)
        .output()
        .expect("runs the grpcio client");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("one JSON line")
}

fn slow_share(run: &serde_json::Value) -> f64 {
    let per = run["per_backend"].as_object().expect("per_backend");
    let total: u64 = per.values().map(|v| v.as_u64().unwrap()).sum();
    let slow = per.get("slow/0").and_then(|v| v.as_u64()).unwrap_or(0);
    slow as f64 / total.max(1) as f64
}

#[test]
fn grpcio_round_robin_splits_evenly_and_its_wrr_follows_lblabs_orca_trailers() {
    let python = common::interop_python();
    let fleet = fleet();
    let rr = grpcio(python, &fleet.targets, r#"{"round_robin":{}}"#, "0.3");
    assert_eq!(rr["ok"], rr["requests"], "{rr}");
    let share = slow_share(&rr);
    assert!(
        (0.4..=0.6).contains(&share),
        "round_robin's share of slow/0: {share} ({rr})"
    );
    let wrr = grpcio(
        python,
        &fleet.targets,
        r#"{"weighted_round_robin":{"blackoutPeriod":"0.2s","weightUpdatePeriod":"0.1s"}}"#,
        "1",
    );
    assert_eq!(wrr["ok"], wrr["requests"], "{wrr}");
    let share = slow_share(&wrr);
    // slow/0 reports ten times the utilization per call: its weight is about a tenth.
    assert!(
        share < 0.25,
        "weighted_round_robin's share of slow/0: {share} ({wrr})"
    );
}
