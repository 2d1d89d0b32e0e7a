//! Real-TCP smoke test: a few seconds of a one-slow scenario against in-process tonic servers on
//! loopback, at a modest rate.

use lblab_loadgen::harness::{run_one, HarnessOptions};
use lblab_model::Scenario;

const SCENARIO: &str = r#"
name = "smoke-one-slow"
seed = 7

[workload]
clients = 2
rate = 300
arrival = "poisson"
duration = "3s"
deadline = "1s"

[[fleet]]
name = "main"
count = 4
workers = 4
service_time = { dist = "lognormal", median = "2ms", p99 = "6ms" }

[[fleet]]
name = "slow"
count = 1
workers = 4
service_time = { dist = "lognormal", median = "2ms", p99 = "6ms" }

[[faults]]
kind = "slowdown"
targets = ["slow"]
factor = 10

[[policies]]
name = "round_robin"
config = '{"loadBalancingConfig":[{"round_robin":{}}]}'

[[policies]]
name = "peak_ewma"
config = '{"loadBalancingConfig":[{"peak_ewma_experimental":{}}]}'
"#;

#[test]
fn every_request_is_accounted_for_and_peak_ewma_avoids_the_slow_backend() {
    let scenario = Scenario::parse(SCENARIO).expect("valid scenario");
    let options = HarnessOptions {
        floor: None,
        ..HarnessOptions::default()
    };
    let slow = scenario
        .backends
        .iter()
        .position(|b| b.name == "slow/0")
        .expect("slow backend");
    let mut shares = Vec::new();
    for policy in &scenario.policies {
        let report = run_one(&scenario, policy, &options).expect("run");
        let run = &report.run;
        let s = &run.result.summary;
        // No warm-up: every call dispatched is one row of the summary, and each ended one way.
        assert_eq!(s.requests, run.calls, "{}: {s:?}", policy.name);
        assert_eq!(
            s.requests,
            s.ok + s.errors + s.dropped,
            "{}: {s:?}",
            policy.name
        );
        assert!(s.deadline_exceeded <= s.errors);
        assert!(
            s.requests > 500,
            "{}: only {} requests in 3s at 300/s",
            policy.name,
            s.requests
        );
        assert!(
            s.ok * 100 >= s.requests * 95,
            "{}: too many failures: {s:?}",
            policy.name
        );
        let sent: u64 = run.sends_per_backend.iter().sum();
        assert!(
            sent + s.dropped >= s.ok,
            "{}: {sent} sends for {} ok",
            policy.name,
            s.ok
        );
        shares.push(run.sends_per_backend[slow] as f64 / sent as f64);
        assert!(
            report.delay.count > 0 && report.delay.early == 0,
            "{:?}",
            report.delay
        );
    }
    let (rr, pe) = (shares[0], shares[1]);
    eprintln!("share of traffic to the slow backend: round_robin {rr:.3}, peak_ewma {pe:.3}");
    assert!(
        rr > 0.12,
        "round_robin sends the slow backend its fifth: {rr:.3}"
    );
    assert!(
        pe < rr * 0.6,
        "peak_ewma must send the slow backend less than round_robin: {pe:.3} vs {rr:.3}"
    );
}
