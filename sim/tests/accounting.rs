//! The accounting rule the simulator shares with the real load generator: every request ends as
//! exactly one of ok, error or dropped (deadlines exceeded inside errors), and a call that has
//! not ended by the end of the run plus its drain (`Workload::drain`) is dropped.

use lblab_model::Scenario;
use lblab_sim::{run_policy, SimOptions};

fn run(toml: &str) -> lblab_model::results::SummaryRow {
    let scenario = Scenario::parse(toml).expect("valid scenario");
    let policy = &scenario.policies[0];
    let r = run_policy(&scenario, policy, &SimOptions::default()).expect("runs");
    let s = r.result.summary;
    assert_eq!(s.requests, s.ok + s.errors + s.dropped, "{s:?}");
    s
}

const BASE: &str = r#"
name = "accounting"
seed = 2
[workload]
clients = 1
rate = 200
warmup = "1s"
duration = "4s"
deadline = "DEADLINE"
streaming_share = SHARE
stream_duration = { dist = "constant", value = "STREAM" }
[[fleet]]
name = "main"
count = 2
workers = 4
service_time = { dist = "constant", value = "2ms" }
FAULT
[[policies]]
name = "round_robin"
config = '{"loadBalancingConfig":[{"round_robin":{}}]}'
"#;

fn scenario(deadline: &str, share: &str, stream: &str, fault: &str) -> String {
    BASE.replace("DEADLINE", deadline)
        .replace("SHARE", share)
        .replace("STREAM", stream)
        .replace("FAULT", fault)
}

#[test]
fn streams_longer_than_the_run_and_its_drain_are_dropped_not_ok() {
    // Streams of 10 minutes in a 5 s run: none ends by the end of the drain (deadline 1 s + 1 s).
    let s = run(&scenario("1s", "0.5", "600s", ""));
    assert!(s.dropped > 0, "{s:?}");
    // Streams of 0.5 s all end.
    let s = run(&scenario("1s", "0.5", "0.5s", ""));
    assert_eq!(s.dropped, 0, "{s:?}");
}

#[test]
fn a_black_hole_with_an_hour_deadline_is_cut_off_at_the_drain() {
    let fault = "[[faults]]\nkind = \"black_hole\"\ntargets = [\"main/1\"]\n";
    let s = run(&scenario("1h", "0.0", "1s", fault));
    // Calls to the black hole never end: every one sent after the warm-up is dropped.
    assert!(s.dropped * 3 > s.requests, "{s:?}");
    assert_eq!(s.deadline_exceeded, 0, "{s:?}");
}
