//! Real-TCP closed loop: each client keeps `concurrency` calls in flight against in-process
//! servers, following the model's arrival schedule; every call is accounted for.

use lblab_harness::{run_one, HarnessOptions};
use lblab_model::testing::{constant, ScenarioBuilder};
use lblab_model::Scenario;

/// Two clients of three calls in flight each, against three backends of a constant 4 ms.
fn scenario() -> Scenario {
    ScenarioBuilder::new("smoke-closed-loop")
        .seed(3)
        .clients(2)
        .closed(3)
        .duration("2s")
        .deadline("1s")
        .group("main", 3, &constant("4ms"), &["workers = 8"])
        .lb("least_request", "least_request_experimental")
        .build()
        .expect("valid scenario")
}

#[test]
fn closed_loop_slots_keep_their_calls_in_flight_and_every_call_is_accounted_for() {
    let scenario = scenario();
    let options = HarnessOptions {
        floor: None,
        ..HarnessOptions::default()
    };
    let report = run_one(&scenario, &scenario.policies[0], &options).expect("run");
    let s = &report.run.result.summary;
    assert_eq!(s.requests, s.ok + s.errors + s.dropped, "{s:?}");
    assert!(s.ok * 100 >= s.requests * 95, "too many failures: {s:?}");
    // Six slots, each a call at a time of at least 4 ms: at most 6 × 2 s / 4 ms = 3,000 calls.
    // A loaded machine makes fewer, but not a handful.
    assert!(s.requests <= 3_000, "{s:?}");
    assert!(
        s.requests >= 300,
        "only {} calls in 2 s from 6 slots",
        s.requests
    );
    assert!(
        s.p50_ms >= 4.0,
        "a call cannot be faster than its 4 ms service: {s:?}"
    );
    assert_eq!(
        report.run.calls,
        report.run.sends_per_backend.iter().sum::<u64>()
    );
}
