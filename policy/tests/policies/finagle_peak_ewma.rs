//! `finagle_peak_ewma`: Finagle's balancer — estimate from 0, the first answer as the estimate,
//! the penalty while a first call is pending, decay on read, two distinct choices.

use lblab_policy::config::{parse_service_config, PolicyConfig};
use lblab_policy::Status;

use crate::harness::{Lab, MS, SEC};

const FINAGLE: &str = r#"{"finagle_peak_ewma":{}}"#;

#[test]
fn an_unknown_endpoint_costs_nothing_until_a_call_is_pending_then_the_penalty() {
    let mut lab = Lab::ready(FINAGLE, 2);
    assert_eq!(lab.cost(0), 0.0);
    let t = lab.unary();
    let e = t.endpoint().0;
    assert!(lab.cost(e) >= 1e300);
    lab.step(4 * MS);
    lab.done(t, Status::Ok, 4 * MS);
    assert_eq!(lab.cost(e), 4.0 * MS as f64);
}

#[test]
fn a_slow_endpoint_is_avoided_from_its_first_answer_and_decays_back() {
    let mut lab = Lab::ready(FINAGLE, 4);
    for e in 0..3 {
        lab.backend(e).latency = MS;
    }
    lab.backend(3).latency = 20 * MS;
    lab.drive(2 * SEC, 200);
    lab.finish();
    assert!(lab.share(3) < 0.02, "{}", lab.share(3));
    // Idle, its estimate decays toward 0 with τ = 10 s.
    let before = lab.cost(3);
    lab.step(10 * SEC);
    let after = lab.cost(3);
    assert!(
        (after / before - (-1.0f64).exp()).abs() < 1e-9,
        "{before} {after}"
    );
}

#[test]
fn config_is_its_decay_time_only() {
    let c = parse_service_config(
        r#"{"loadBalancingConfig":[{"finagle_peak_ewma":{"decayTime":"5s"}}]}"#,
    )
    .unwrap();
    assert!(matches!(c, PolicyConfig::FinaglePeakEwma(_)));
    assert!(c.to_json().to_string().contains(r#""decayTime":"5s""#));
    // Another policy's field is ignored, as gRPC ignores unknown fields, and named.
    let text = r#"{"loadBalancingConfig":[{"finagle_peak_ewma":{"choiceCount":3}}]}"#;
    let c = parse_service_config(text).unwrap();
    assert!(!c.to_json().to_string().contains("choiceCount"));
    let ignored = lblab_policy::config::ignored_fields(text, &[]);
    assert_eq!(ignored.len(), 1, "{ignored:?}");
    assert!(ignored[0].path.contains("choiceCount"), "{ignored:?}");
}
