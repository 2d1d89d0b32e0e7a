//! `workload.measured_method`: a run that measures one method's unary calls alone is the same
//! simulation with a filter on what is recorded, so its counts and percentiles are that method's.

use lblab_model::results::SummaryRow;
use lblab_model::Scenario;
use lblab_sim::{run_policy, SimOptions};

const SCENARIO: &str = r#"
name = "measured-method"
seed = 3
[workload]
clients = 2
rate = 400
warmup = "1s"
duration = "5s"
streaming_share = 0.2
stream_duration = { dist = "constant", value = "50ms" }
MEASURED
[[workload.methods]]
name = "light"
share = 0.9
factor = 0.5
[[workload.methods]]
name = "heavy"
share = 0.1
factor = 10
[[fleet]]
name = "main"
count = 4
workers = 8
service_time = { dist = "constant", value = "2ms" }
[[policies]]
name = "peak_ewma"
config = '{"loadBalancingConfig":[{"peak_ewma_experimental":{}}]}'
"#;

fn run(measured: &str) -> SummaryRow {
    let scenario = Scenario::parse(&SCENARIO.replace("MEASURED", measured)).expect("valid");
    let r = run_policy(&scenario, &scenario.policies[0], &SimOptions::default()).expect("runs");
    let s = r.result.summary;
    assert_eq!(s.requests, s.ok + s.errors + s.dropped, "{s:?}");
    s
}

#[test]
fn one_methods_calls_are_measured_alone_in_the_same_simulation() {
    let all = run("");
    let light = run(r#"measured_method = "light""#);
    let heavy = run(r#"measured_method = "heavy""#);
    // The light and heavy unary calls together are all unary calls: streams are neither.
    let unary = light.requests + heavy.requests;
    assert!(unary < all.requests, "{unary} of {}", all.requests);
    let stream_share = 1.0 - unary as f64 / all.requests as f64;
    assert!((0.15..0.25).contains(&stream_share), "{stream_share}");
    let light_share = light.requests as f64 / unary as f64;
    assert!((0.85..0.95).contains(&light_share), "{light_share}");
    // A light call takes 1 ms of service, a heavy one 20 ms.
    assert!(light.p50_ms < 1.5, "{light:?}");
    assert!(heavy.p50_ms > 15.0, "{heavy:?}");
    assert!(light.p99_ms < all.p99_ms, "{} {}", light.p99_ms, all.p99_ms);
}

#[test]
fn a_measured_method_must_be_a_method_of_the_workload() {
    let e = Scenario::parse(&SCENARIO.replace("MEASURED", r#"measured_method = "medium""#))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("workload.measured_method") && e.contains("light, heavy"),
        "{e}"
    );
    let without = SCENARIO
        .replace("MEASURED", r#"measured_method = "light""#)
        .split("[[workload.methods]]")
        .next()
        .unwrap_or_default()
        .to_string()
        + "[[fleet]]\nname = \"main\"\nservice_time = { dist = \"constant\", value = \"2ms\" }\n[[policies]]\nname = \"rr\"\nconfig = '{\"loadBalancingConfig\":[{\"round_robin\":{}}]}'\n";
    let e = Scenario::parse(&without).unwrap_err().to_string();
    assert!(e.contains("no [[workload.methods]]"), "{e}");
}
