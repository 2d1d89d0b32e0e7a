//! `envoy_peak_ewma`: Envoy's balancer as shipped — whole-millisecond samples, the fold every
//! aggregation interval, the ring bound, no peak and no idle decay, the cost with its penalty and
//! default, the two distinct choices, and the config.

use lblab_policy::config::{parse_service_config, PolicyConfig};
use lblab_policy::{Connectivity, EndpointId, Pick, RpcKind, Status};
use serde_json::json;

use crate::harness::{Lab, Script, MS, SEC};

const ENVOY: &str = r#"{"envoy_peak_ewma":{}}"#;

fn envoy(fields: &str) -> String {
    format!(r#"{{"envoy_peak_ewma":{{{fields}}}}}"#)
}

/// One unary call to the only endpoint, completed after `elapsed` with `status`.
fn call(lab: &mut Lab, elapsed: u64, status: Status) {
    let t = lab.unary();
    lab.step(elapsed);
    lab.done(t, status, elapsed);
}

/// A pick that only triggers the fold (its call is cancelled at once: no sample).
fn fold(lab: &mut Lab) {
    let t = lab.unary();
    lab.done(t, Status::Cancelled, 0);
}

#[test]
fn sub_millisecond_backends_never_get_an_estimate() {
    let mut lab = Lab::ready(ENVOY, 3);
    for e in 0..3 {
        lab.backend(e).latency = 900_000; // 0.9 ms: every sample truncates to 0 ms
    }
    lab.drive(5 * SEC, 2000);
    lab.finish();
    fold(&mut lab);
    for e in 0..3 {
        // No estimate: nothing in flight costs defaultRtt (10 ms), ...
        assert_eq!(lab.cost(e), 10.0, "endpoint {e}");
    }
    // ... and a call in flight costs the penalty plus the calls in flight.
    let t = lab.unary();
    let e = t.endpoint().0;
    assert_eq!(lab.cost(e), 1e6 + 1.0);
    lab.done(t, Status::Ok, 900_000);
    // One answer of 1 ms or more is enough for an estimate, once folded.
    lab.backend(0).latency = 1_999_999;
    lab.reset_picks();
    while lab.picks(0) == 0 {
        lab.send();
        lab.step(MS);
    }
    lab.step(200 * MS);
    fold(&mut lab);
    assert_eq!(lab.cost(0), 1.0, "1.999999 ms truncates to 1 ms");
}

#[test]
fn samples_wait_for_the_aggregation_interval() {
    let mut lab = Lab::ready(&envoy(r#""aggregationInterval":"0.250s""#), 1);
    call(&mut lab, 20 * MS, Status::Ok);
    lab.step(200 * MS); // 220 ms since the policy was built: no fold yet
    fold(&mut lab);
    assert_eq!(lab.cost(0), 10.0, "still defaultRtt before the first fold");
    lab.step(30 * MS); // 250 ms: the next pick folds
    fold(&mut lab);
    assert_eq!(lab.cost(0), 20.0, "the first sample sets the estimate");
    // The interval counts from the last fold, and only a pick folds.
    call(&mut lab, 40 * MS, Status::Ok);
    lab.step(10 * SEC);
    assert_eq!(lab.cost(0), 20.0, "no pick, no fold");
    fold(&mut lab);
    assert!(lab.cost(0) > 20.0);
}

#[test]
fn blends_by_time_since_the_previous_sample_without_a_peak() {
    let mut lab = Lab::ready(ENVOY, 1);
    call(&mut lab, 10 * MS, Status::Ok); // at 10 ms
    lab.step(SEC);
    fold(&mut lab);
    assert_eq!(lab.cost(0), 10.0);
    // A 500 ms sample one second after the previous one: α = 1 − e^(−1/10), no jump to 500.
    let t = lab.unary(); // at 1010 ms, and completed then
    lab.done(t, Status::Ok, 500 * MS);
    lab.step(SEC);
    fold(&mut lab);
    let alpha = 1.0 - (-(1000.0 * MS as f64) / (10.0 * SEC as f64)).exp();
    let want = alpha * 500.0 + (1.0 - alpha) * 10.0;
    assert!(
        (lab.cost(0) - want).abs() < 1e-9,
        "{} vs {want}",
        lab.cost(0)
    );
    assert!(lab.cost(0) < 60.0);
}

#[test]
fn a_slow_spell_is_not_forgotten_while_the_host_is_not_picked() {
    let mut lab = Lab::ready(ENVOY, 3);
    lab.backend(0).latency = 100 * MS;
    lab.drive(10 * SEC, 200);
    lab.finish();
    fold(&mut lab);
    let slow = lab.cost(0);
    assert!(slow > 50.0, "{slow}");
    // The slow spell ends, but nothing goes to the host: its estimate stays frozen, for a minute
    // or an hour (peak_ewma_experimental would have decayed it by e^-6 in a minute).
    lab.backend(0).latency = 10 * MS;
    lab.step(60 * SEC);
    fold(&mut lab);
    assert_eq!(lab.cost(0), slow);
    lab.step(3600 * SEC);
    fold(&mut lab);
    assert_eq!(lab.cost(0), slow);
    // It recovers only through the calls it still gets — here when the others are busy enough
    // (15 calls in flight each: 10 ms × 16) to cost more — each fast answer blending in with
    // α = 1 − e^(−Δt/τ).
    lab.reset_picks();
    lab.drive(30 * SEC, 3000);
    lab.finish();
    fold(&mut lab);
    assert!(lab.picks(0) > 0);
    let recovered = lab.cost(0);
    assert!(recovered < slow, "{recovered} vs {slow}");
}

#[test]
fn the_ring_keeps_only_the_last_max_samples_per_host() {
    let run = |max: u32| {
        let mut lab = Lab::ready(
            &envoy(&format!(
                r#""maxSamplesPerHost":{max},"aggregationInterval":"10s""#
            )),
            1,
        );
        for ms in [50, 40, 30, 20, 10] {
            call(&mut lab, ms * MS, Status::Ok);
        }
        lab.step(10 * SEC);
        fold(&mut lab);
        lab.cost(0)
    };
    // With 2 kept, the 20 ms sample initialises and the 10 ms one (10 ms later) blends in.
    let alpha = 1.0 - (-(10.0 * MS as f64) / (10.0 * SEC as f64)).exp();
    let want = alpha * 10.0 + (1.0 - alpha) * 20.0;
    assert!((run(2) - want).abs() < 1e-9, "{} vs {want}", run(2));
    assert_eq!(run(1), 10.0);
    assert!(
        (run(1000) - 50.0).abs() < 1.0,
        "all five folded: {}",
        run(1000)
    );
}

#[test]
fn ties_favour_odd_positions() {
    // With an even number of hosts the tie bit is also the parity of the first index: a tie goes
    // to the first draw when it is odd, and to the second draw otherwise, which is odd half the
    // time and also after a collision (1/n). So the odd positions get 3/4 + 1/(2n) of the tied
    // picks: 7/8 among 4 idle hosts without an estimate (all at defaultRtt), 0.775 among 20.
    let mut lab = Lab::ready(ENVOY, 4);
    lab.burst(40_000);
    let odd = (lab.picks(1) + lab.picks(3)) as f64 / 40_000.0;
    assert!((0.86..0.89).contains(&odd), "{odd}");
}

#[test]
fn two_distinct_choices_from_one_random_number() {
    let mut lab = Lab::ready(ENVOY, 3);
    // Script::next_u64 joins two u32s (high, low). All costs tie at defaultRtt.
    let pick = |lab: &mut Lab, r: u64| {
        let mut s = Script([(r >> 32) as u32, r as u32].into());
        match lab.pick_with(RpcKind::Unary, &mut s) {
            Pick::Endpoint(t) => {
                let e = t.endpoint();
                lab.done(t, Status::Cancelled, 0);
                e
            }
            other => panic!("{other:?}"),
        }
    };
    // r = 0: i = 0, j = 0 collides and becomes 1; a tie with r even goes to the second.
    assert_eq!(pick(&mut lab, 0), EndpointId(1));
    // r = 1: i = 1, j = 0; r odd: the first.
    assert_eq!(pick(&mut lab, 1), EndpointId(1));
    // r = 2: i = 2, j = 0; even: the second.
    assert_eq!(pick(&mut lab, 2), EndpointId(0));
    // j comes from bits 16 and up: r = 1 << 16 gives i = 65536 mod 3 = 1 and j = 1, which
    // collides and becomes 2; even: the second.
    assert_eq!(pick(&mut lab, 1 << 16), EndpointId(2));

    // Two endpoints: both are always drawn, so the cheaper always wins.
    let mut lab = Lab::ready(ENVOY, 2);
    let busy = lab.ticket(RpcKind::Unary);
    let other = 1 - busy.endpoint().0;
    for _ in 0..1000 {
        let t = lab.unary();
        assert_eq!(t.endpoint().0, other);
        lab.done(t, Status::Cancelled, 0);
    }
    lab.done(busy, Status::Cancelled, 0);
}

#[test]
fn which_calls_count_and_give_samples() {
    let mut lab = Lab::ready(ENVOY, 1);
    // A stream counts as active but gives no sample.
    let s = lab.ticket(RpcKind::Streaming);
    assert_eq!(lab.view(0).outstanding, 1);
    assert_eq!(lab.cost(0), 1e6 + 1.0);
    lab.step(5 * SEC);
    lab.done(s, Status::Ok, 5 * SEC);
    // No answer, no sample: a deadline or a cancellation.
    call(&mut lab, 300 * MS, Status::DeadlineExceeded);
    call(&mut lab, 300 * MS, Status::Cancelled);
    lab.step(SEC);
    fold(&mut lab);
    assert_eq!(lab.cost(0), 10.0);
    // An error answered by the server is a sample.
    call(&mut lab, 7 * MS, Status::Error);
    lab.step(SEC);
    fold(&mut lab);
    assert_eq!(lab.cost(0), 7.0);
    assert_eq!(lab.view(0).outstanding, 0);
}

#[test]
fn the_estimate_survives_a_reconnect() {
    let mut lab = Lab::ready(ENVOY, 1);
    call(&mut lab, 30 * MS, Status::Ok);
    lab.step(SEC);
    fold(&mut lab);
    lab.set_state(0, Connectivity::TransientFailure);
    lab.set_state(0, Connectivity::Ready);
    assert_eq!(lab.cost(0), 30.0);
}

#[test]
fn config_defaults_normalization_and_rejections() {
    let parsed =
        |entry: &str| parse_service_config(&format!(r#"{{"loadBalancingConfig":[{entry}]}}"#));
    let c = parsed(ENVOY).unwrap();
    assert!(matches!(c, PolicyConfig::EnvoyPeakEwma(_)));
    assert_eq!(c.label(), "envoy_peak_ewma");
    assert_eq!(
        c.to_json(),
        json!({"envoy_peak_ewma": {
            "decayTime": "10s", "aggregationInterval": "0.1s", "maxSamplesPerHost": 1000,
            "defaultRtt": "0.01s", "penaltyValue": 1e6,
        }})
    );
    // Durations are truncated to whole milliseconds, as Envoy uses them.
    let c = parsed(&envoy(
        r#""decayTime":"2.0005s","aggregationInterval":"0.0159s","defaultRtt":"0.0011s","maxSamplesPerHost":5,"penaltyValue":7.5"#,
    ))
    .unwrap();
    assert_eq!(
        c.to_json(),
        json!({"envoy_peak_ewma": {
            "decayTime": "2s", "aggregationInterval": "0.015s", "maxSamplesPerHost": 5,
            "defaultRtt": "0.001s", "penaltyValue": 7.5,
        }})
    );
    for (fields, field, what) in [
        (r#""decayTime":"0s""#, "decayTime", "greater than 0s"),
        (r#""decayTime":"-1s""#, "decayTime", "negative"),
        (
            r#""aggregationInterval":"0.0005s""#,
            "aggregationInterval",
            "whole milliseconds",
        ),
        (r#""defaultRtt":"10ms""#, "defaultRtt", "proto3 duration"),
        (
            r#""maxSamplesPerHost":0"#,
            "maxSamplesPerHost",
            "at least 1",
        ),
        (
            r#""maxSamplesPerHost":-1"#,
            "maxSamplesPerHost",
            "whole number",
        ),
        (r#""penaltyValue":0"#, "penaltyValue", "greater than 0"),
        (r#""penaltyValue":"big""#, "penaltyValue", "not a number"),
    ] {
        let err = parsed(&envoy(fields)).unwrap_err();
        assert_eq!(
            err.path,
            format!("loadBalancingConfig[0].envoy_peak_ewma.{field}"),
            "{fields}: {err}"
        );
        assert!(err.message.contains(what), "{fields}: {err}");
    }
}
