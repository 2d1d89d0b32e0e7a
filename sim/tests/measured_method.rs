//! `workload.measured_method`: a run that measures one method's unary calls alone is the same
//! simulation with a filter on what is recorded, so its counts and percentiles are that method's.

use lblab_model::testing::ScenarioBuilder;
use lblab_record::SummaryRow;
use lblab_sim::{run_policy, SimOptions};

const CONSTANT_2MS: &str = r#"{ dist = "constant", value = "2ms" }"#;

/// Two clients at 400 calls a second for 1 s + 5 s, a fifth of them 50 ms streams; with
/// `measured_method = measured` if given. No methods, fleet or policies yet.
fn workload(measured: Option<&str>) -> ScenarioBuilder {
    let w = ScenarioBuilder::new("measured-method")
        .seed(3)
        .clients(2)
        .rate(400.0)
        .warmup("1s")
        .duration("5s")
        .workload("streaming_share", Some("0.2"))
        .workload(
            "stream_duration",
            Some(r#"{ dist = "constant", value = "50ms" }"#),
        );
    match measured {
        Some(m) => w.workload("measured_method", Some(&format!("{m:?}"))),
        None => w,
    }
}

/// [`workload`] with light (0.5) and heavy (10) methods, 9 to 1, on four 8-worker backends,
/// peak EWMA.
fn scenario(measured: Option<&str>) -> ScenarioBuilder {
    workload(measured)
        .method("light", 0.9, 0.5)
        .method("heavy", 0.1, 10.0)
        .group("main", 4, CONSTANT_2MS, &["workers = 8"])
        .lb("peak_ewma", "peak_ewma_experimental")
}

fn run(measured: Option<&str>) -> SummaryRow {
    let scenario = scenario(measured).build().expect("valid");
    let r = run_policy(&scenario, &scenario.policies[0], &SimOptions::default()).expect("runs");
    let s = r.result.summary;
    assert_eq!(s.requests, s.ok + s.errors + s.dropped, "{s:?}");
    s
}

#[test]
fn one_methods_calls_are_measured_alone_in_the_same_simulation() {
    let all = run(None);
    let light = run(Some("light"));
    let heavy = run(Some("heavy"));
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
    let e = scenario(Some("medium")).build().unwrap_err().to_string();
    assert!(
        e.contains("workload.measured_method") && e.contains("light, heavy"),
        "{e}"
    );
    let without = workload(Some("light"))
        .group("main", 1, CONSTANT_2MS, &[])
        .lb("rr", "round_robin");
    let e = without.build().unwrap_err().to_string();
    assert!(e.contains("no [[workload.methods]]"), "{e}");
}
