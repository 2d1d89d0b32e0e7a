//! The accounting rule the simulator shares with the real load generator: every request ends as
//! exactly one of ok, error or dropped (deadlines exceeded inside errors), and a call that has
//! not ended by the end of the run plus its drain (`Workload::drain`) is dropped.

use lblab_model::testing::ScenarioBuilder;
use lblab_sim::{run_policy, SimOptions};

fn run(builder: &ScenarioBuilder) -> lblab_record::SummaryRow {
    let scenario = builder.build().expect("valid scenario");
    let policy = &scenario.policies[0];
    let r = run_policy(&scenario, policy, &SimOptions::default()).expect("runs");
    let s = r.result.summary;
    assert_eq!(s.requests, s.ok + s.errors + s.dropped, "{s:?}");
    s
}

/// One client at 200 calls a second on two 2 ms backends, round robin, for 1 s + 4 s; `share` of
/// the calls are streams of `stream`.
fn scenario(deadline: &str, share: &str, stream: &str) -> ScenarioBuilder {
    ScenarioBuilder::new("accounting")
        .seed(2)
        .clients(1)
        .rate(200.0)
        .warmup("1s")
        .duration("4s")
        .deadline(deadline)
        .workload("streaming_share", Some(share))
        .workload(
            "stream_duration",
            Some(&format!("{{ dist = \"constant\", value = {stream:?} }}")),
        )
        .group(
            "main",
            2,
            r#"{ dist = "constant", value = "2ms" }"#,
            &["workers = 4"],
        )
        .lb("round_robin", "round_robin")
}

#[test]
fn streams_longer_than_the_run_and_its_drain_are_dropped_not_ok() {
    // Streams of 10 minutes in a 5 s run: none ends by the end of the drain (deadline 1 s + 1 s).
    let s = run(&scenario("1s", "0.5", "600s"));
    assert!(s.dropped > 0, "{s:?}");
    // Streams of 0.5 s all end.
    let s = run(&scenario("1s", "0.5", "0.5s"));
    assert_eq!(s.dropped, 0, "{s:?}");
}

#[test]
fn a_black_hole_with_an_hour_deadline_is_cut_off_at_the_drain() {
    let s = run(&scenario("1h", "0.0", "1s").fault("black_hole", &["main/1"], &[]));
    // Calls to the black hole never end: every one sent after the warm-up is dropped.
    assert!(s.dropped * 3 > s.requests, "{s:?}");
    assert_eq!(s.deadline_exceeded, 0, "{s:?}");
}
