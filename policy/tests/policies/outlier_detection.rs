//! `outlier_detection_experimental` (A50): ejection by failure percentage and success rate,
//! unejection, the multiplier, the caps and the gates.

use lblab_policy::{Connectivity, EndpointId, Nanos, Status};

use crate::harness::{Lab, Script, MS, SEC};

/// An outlier_detection entry with `fields` (interval 10 s, base 30 s unless overridden) around
/// round_robin.
fn od(fields: &str) -> String {
    od_around(fields, r#"{"round_robin":{}}"#)
}

fn od_around(fields: &str, child: &str) -> String {
    format!(r#"{{"outlier_detection_experimental":{{{fields},"childPolicy":[{child}]}}}}"#)
}

const FAILURE_PCT: &str =
    r#""failurePercentageEjection":{"minimumHosts":3,"requestVolume":10},"maxEjectionPercent":50"#;

/// `n` READY endpoints under `entry`, of which the first `failing` fail every call.
fn failing_first(entry: &str, n: u32, failing: u32) -> Lab {
    let mut lab = Lab::ready(entry, n);
    for e in 0..failing {
        lab.backend(e).failure_rate = 1.0;
    }
    lab
}

/// Whether endpoint 0 of 5 under `entry`, failing every call, is ejected after `time` of calls
/// at 100/s.
fn endpoint_0_ejected_after(entry: &str, time: Nanos) -> bool {
    let mut lab = failing_first(entry, 5, 1);
    lab.drive(time, 100);
    ejected(&lab, 0)
}

/// Drives `lab` for `time` at 100 calls/s: endpoint 0 must stay ejected until the last
/// millisecond and be back at the end (`back` says when that is and why).
fn ejected_until_the_last_ms(lab: &mut Lab, time: Nanos, back: &str) {
    lab.drive(time - MS, 100);
    assert!(ejected(lab, 0), "still ejected just before: {back}");
    lab.step(MS);
    assert!(!ejected(lab, 0), "{back}");
}

fn ejected(lab: &Lab, e: u32) -> bool {
    lab.view(e).state == Connectivity::TransientFailure
}

#[test]
fn failing_endpoint_is_ejected_at_the_next_interval_and_never_picked() {
    let mut lab = failing_first(&od(FAILURE_PCT), 5, 1);
    lab.drive(10 * SEC - MS, 100);
    assert!(
        !ejected(&lab, 0),
        "nothing happens before the interval ends"
    );
    assert!(lab.picks(0) > 0);
    lab.step(MS); // the tick at 10 s
    assert!(ejected(&lab, 0));
    assert!((1..5).all(|e| !ejected(&lab, e)));
    lab.reset_picks();
    lab.drive(20 * SEC, 100);
    assert_eq!(lab.picks(0), 0, "the child sees it as TRANSIENT_FAILURE");
    assert_eq!(lab.unpicked, 0);
}

#[test]
fn ejection_lasts_base_ejection_time_times_the_multiplier_which_decays() {
    let mut lab = failing_first(&od(FAILURE_PCT), 5, 1);
    // First ejection at the 10 s tick (multiplier 1): back at the first tick >= 40 s.
    lab.drive(10 * SEC, 100);
    assert!(ejected(&lab, 0));
    ejected_until_the_last_ms(&mut lab, 30 * SEC, "back at 40 s");
    // Still failing: ejected again at 50 s with multiplier 2, for 60 s: back at 110 s.
    lab.drive(10 * SEC, 100);
    assert!(ejected(&lab, 0));
    ejected_until_the_last_ms(&mut lab, 60 * SEC, "back at 110 s");
    // Healthy for three ticks (120, 130, 140 s): the multiplier falls 2 -> 1 -> 0 -> 0.
    lab.backend(0).failure_rate = 0.0;
    lab.drive(30 * SEC, 100);
    assert!(!ejected(&lab, 0));
    // Failing again: ejected at 150 s with multiplier 1, so back at 180 s (not 240 s).
    lab.backend(0).failure_rate = 1.0;
    lab.drive(10 * SEC, 100);
    assert!(ejected(&lab, 0));
    ejected_until_the_last_ms(
        &mut lab,
        30 * SEC,
        "back at 180 s: the multiplier had decayed",
    );
}

#[test]
fn ejection_time_is_capped_by_max_ejection_time() {
    let entry = od(&format!(r#"{FAILURE_PCT},"maxEjectionTime":"45s""#));
    let mut lab = failing_first(&entry, 5, 1);
    lab.drive(40 * SEC, 100); // ejected at 10 s, back at 40 s
    assert!(!ejected(&lab, 0));
    lab.drive(10 * SEC, 100); // ejected at 50 s, multiplier 2: min(60 s, 45 s) -> back at 100 s
    assert!(ejected(&lab, 0));
    ejected_until_the_last_ms(&mut lab, 50 * SEC, "back at 100 s");
}

#[test]
fn max_ejection_percent_is_respected() {
    let entry = od(
        r#""failurePercentageEjection":{"minimumHosts":3,"requestVolume":10},"maxEjectionPercent":20"#,
    );
    let mut lab = Lab::ready(&entry, 10);
    for e in 0..5 {
        lab.backend(e).failure_rate = 1.0;
    }
    lab.drive(10 * SEC, 200);
    assert_eq!((0..10).filter(|&e| ejected(&lab, e)).count(), 2);
    // Ejections and unejections go on (an ejection ends after the algorithms ran in the same
    // tick, so a tick may end with fewer), but never more than 2 of 10 at once.
    for _ in 0..20 {
        lab.drive(10 * SEC, 200);
        let n = (0..10).filter(|&e| ejected(&lab, e)).count();
        assert!(n <= 2, "{n} ejected at {} s", lab.now / SEC);
        assert!((5..10).all(|e| !ejected(&lab, e)));
    }
}

#[test]
fn one_endpoint_can_always_be_ejected() {
    // 10% of 5 endpoints is half an endpoint: one may still be ejected, not two.
    let entry = od(r#""failurePercentageEjection":{"minimumHosts":3,"requestVolume":10}"#);
    let mut lab = failing_first(&entry, 5, 2);
    lab.drive(10 * SEC, 100);
    assert_eq!((0..5).filter(|&e| ejected(&lab, e)).count(), 1);
    // maxEjectionPercent 0 ejects nothing.
    let entry = od(
        r#""failurePercentageEjection":{"minimumHosts":3,"requestVolume":10},"maxEjectionPercent":0"#,
    );
    assert!(!endpoint_0_ejected_after(&entry, 10 * SEC));
}

#[test]
fn failure_percentage_must_be_above_the_threshold() {
    for (rate, want) in [(0.5, false), (0.6, true)] {
        let entry = od(
            r#""failurePercentageEjection":{"threshold":50,"minimumHosts":5,"requestVolume":100}"#,
        );
        let mut lab = Lab::ready(&entry, 5);
        lab.backend(0).failure_rate = rate;
        lab.burst(500); // exactly 100 calls each
        lab.step(10 * SEC);
        assert_eq!(ejected(&lab, 0), want, "failure rate {rate}");
    }
}

#[test]
fn success_rate_ejects_below_mean_minus_stdev_factor() {
    // Success rates 0.6, 1, 1, 1, 1: mean 0.92, stdev 0.16. With stdevFactor 1900 the threshold is
    // 0.616 (ejected); with 2100 it is 0.584 (kept).
    for (factor, want) in [(1900, true), (2100, false)] {
        let entry = od(&format!(
            r#""successRateEjection":{{"stdevFactor":{factor},"minimumHosts":5,"requestVolume":100}}"#
        ));
        let mut lab = Lab::ready(&entry, 5);
        lab.backend(0).failure_rate = 0.4;
        lab.burst(500);
        lab.step(10 * SEC);
        assert_eq!(ejected(&lab, 0), want, "stdevFactor {factor}");
        assert!((1..5).all(|e| !ejected(&lab, e)));
    }
}

#[test]
fn request_volume_and_minimum_hosts_gate_ejection() {
    let cases = [
        // (fields, calls per endpoint in the interval, ejected?)
        (
            r#""failurePercentageEjection":{"requestVolume":50}"#,
            50,
            true,
        ),
        (
            r#""failurePercentageEjection":{"requestVolume":50}"#,
            49,
            false,
        ),
        (
            r#""failurePercentageEjection":{"requestVolume":50,"minimumHosts":6}"#,
            60,
            false,
        ),
        (r#""successRateEjection":{"requestVolume":100}"#, 100, true),
        (r#""successRateEjection":{"requestVolume":100}"#, 99, false),
        (
            r#""successRateEjection":{"requestVolume":100,"minimumHosts":6}"#,
            100,
            false,
        ),
    ];
    for (fields, calls, want) in cases {
        let mut lab = failing_first(&od(fields), 5, 1);
        lab.burst(5 * calls);
        lab.step(10 * SEC);
        assert_eq!(ejected(&lab, 0), want, "{fields} with {calls} calls each");
    }
}

#[test]
fn endpoint_without_calls_does_not_stop_success_rate_ejection() {
    // requestVolume 0: an endpoint that had no calls (here: not READY) has no success rate; it
    // must not turn the mean into NaN and so disable the algorithm for everyone.
    let entry = od(r#""successRateEjection":{"requestVolume":0,"minimumHosts":5}"#);
    let mut lab = Lab::ready(&entry, 6);
    lab.set_state(5, Connectivity::Connecting);
    lab.backend(0).failure_rate = 0.4;
    lab.burst(500);
    lab.step(10 * SEC);
    assert!(ejected(&lab, 0));
}

#[test]
fn enforcement_percentage_zero_detects_but_never_ejects() {
    let entry = od(
        r#""failurePercentageEjection":{"minimumHosts":3,"requestVolume":10,"enforcementPercentage":0}"#,
    );
    assert!(!endpoint_0_ejected_after(&entry, 60 * SEC));
}

#[test]
fn without_an_algorithm_nothing_is_ejected_and_no_timer_is_asked_for() {
    let mut lab = Lab::ready(&od(r#""interval":"1s""#), 5);
    assert_eq!(lab.policy.next_timer(), None);
    lab.backend(0).failure_rate = 1.0;
    lab.drive(100 * SEC, 100);
    assert!(!ejected(&lab, 0));
    assert!((lab.share(0) - 0.2).abs() < 0.01);
}

#[test]
fn cancelled_calls_are_not_counted() {
    let entry = od(r#""failurePercentageEjection":{"minimumHosts":1,"requestVolume":1}"#);
    let mut lab = Lab::ready(&entry, 1);
    for _ in 0..10 {
        let t = lab.unary();
        lab.done(t, Status::Cancelled, MS);
    }
    lab.step(10 * SEC);
    assert!(!ejected(&lab, 0));
}

#[test]
fn real_connectivity_is_restored_on_unejection() {
    let mut lab = failing_first(&od(FAILURE_PCT), 5, 1);
    lab.drive(10 * SEC, 100);
    assert!(ejected(&lab, 0));
    // While ejected the connection fails and comes back as CONNECTING: the child learns that at
    // unejection, not before.
    lab.set_state(0, Connectivity::TransientFailure);
    lab.set_state(0, Connectivity::Connecting);
    assert!(ejected(&lab, 0));
    lab.step(30 * SEC);
    assert_eq!(lab.view(0).state, Connectivity::Connecting);
}

#[test]
fn wraps_peak_ewma_and_removes_the_fast_failing_endpoint() {
    // Without outlier detection and without its error-aware cost, peak_ewma favours an endpoint
    // that fails fast (peak_ewma::fails_fast_backend_attracts_traffic_without_outlier_detection);
    // wrapped, the endpoint is ejected at the first tick. (With the default error-aware cost the
    // child itself avoids the endpoint after its first failure, so too few calls reach it for
    // outlier detection's request volume.)
    let entry = od_around(
        r#""interval":"5s","failurePercentageEjection":{"minimumHosts":4,"requestVolume":10}"#,
        r#"{"peak_ewma_experimental":{"lblabAblation":{"errorPenalty":0}}}"#,
    );
    let mut lab = Lab::ready(&entry, 4);
    for e in 0..4 {
        lab.backend(e).latency = 20 * MS;
    }
    lab.backend(3).latency = MS;
    lab.backend(3).failure_rate = 1.0;
    lab.drive(5 * SEC, 400);
    assert!(ejected(&lab, 3));
    lab.reset_picks();
    lab.drive(20 * SEC, 400);
    assert_eq!(lab.picks(3), 0);
    // The cost the child reports is still there for the others.
    assert!(lab.view(0).cost.is_some_and(|c| c > 0.0));
    assert_eq!(lab.policy.name(), "outlier_detection_experimental");
}

#[test]
fn ejected_endpoint_flagged_again_is_ejected_again() {
    // Endpoint 0 fails every call after 5 s. The calls sent before 5 s fail before the 10 s tick,
    // which ejects it (multiplier 1); those sent between 5 and 10 s fail while it is ejected and
    // fill the next interval's bucket, so the 20 s tick flags it again: ejected again from 20 s
    // with multiplier 2, for 60 s, back at 80 s (not at 40 s, which ignoring it would give).
    let mut lab = failing_first(&od(FAILURE_PCT), 5, 1);
    lab.backend(0).latency = 5 * SEC;
    lab.drive(10 * SEC, 100);
    assert!(ejected(&lab, 0), "ejected at the 10 s tick");
    lab.drive(10 * SEC, 100); // the 20 s tick: flagged again by the calls that failed at 10-15 s
    lab.drive(20 * SEC, 100);
    assert!(
        ejected(&lab, 0),
        "still ejected at 40 s: the ejection restarted at 20 s"
    );
    ejected_until_the_last_ms(&mut lab, 40 * SEC, "back at 80 s: 20 s + 30 s × 2");
}

#[test]
fn flagged_by_both_algorithms_it_is_ejected_twice_but_counted_once() {
    // Both algorithms on, maxEjectionPercent 20 of 10 endpoints: two may be ejected at once.
    // Endpoint 0 fails every call: success rate ejects it, then failure percentage flags it again
    // and ejects it again (multiplier 2, as grpc-go and grpc-java do). That re-ejection does not
    // use up the second slot: endpoint 1 (60 % failures: only failure percentage flags it) is
    // ejected too. grpc-go's counter would count endpoint 0 twice and keep endpoint 1.
    let entry = od(
        r#""successRateEjection":{"minimumHosts":5,"requestVolume":100},"failurePercentageEjection":{"threshold":50,"minimumHosts":5,"requestVolume":100},"maxEjectionPercent":20"#,
    );
    let mut lab = failing_first(&entry, 10, 1);
    lab.backend(1).failure_rate = 0.6;
    lab.burst(1000); // round robin: exactly 100 calls each
    lab.step(10 * SEC); // the 10 s tick
    assert!(ejected(&lab, 0) && ejected(&lab, 1));
    assert!((2..10).all(|e| !ejected(&lab, e)));
    // No more calls: endpoint 1 (multiplier 1) is back at 40 s, endpoint 0 (multiplier 2) at 70 s.
    lab.step(30 * SEC);
    assert!(!ejected(&lab, 1), "back at 40 s");
    assert!(ejected(&lab, 0), "multiplier 2: still ejected at 40 s");
    lab.step(30 * SEC - MS);
    assert!(ejected(&lab, 0), "still ejected just before 70 s");
    lab.step(MS);
    assert!(!ejected(&lab, 0), "back at 70 s");
}

#[test]
fn re_ejections_are_capped_like_ejections() {
    // At the cap no one is ejected, not even again: with the default 10 % of 5 endpoints one may be
    // ejected, and once it is, the percentage check stops the sweep before it can be re-ejected.
    // Its ejection is not prolonged by the calls that fail while it is ejected.
    let entry = od(r#""failurePercentageEjection":{"minimumHosts":3,"requestVolume":10}"#);
    let mut lab = failing_first(&entry, 5, 1);
    lab.backend(0).latency = 5 * SEC;
    lab.drive(10 * SEC, 100);
    assert!(ejected(&lab, 0));
    ejected_until_the_last_ms(
        &mut lab,
        30 * SEC,
        "back at 40 s: the 20 s tick could not re-eject it",
    );
}

// Pins of A50's semantics as DESIGN §2 and grpc-go give them, each with the wrong variant it
// catches.

/// Completes `calls` calls on every endpoint of `lab` at once, `failures[e]` of them failed for
/// endpoint `e` (round robin: `n × calls` picks give each endpoint exactly `calls`).
fn counted_calls(lab: &mut Lab, n: u32, calls: u32, failures: &[u32]) {
    let mut done = vec![0u32; n as usize];
    for _ in 0..n * calls {
        let t = lab.unary();
        let e = t.endpoint().0 as usize;
        let failed = done[e] < failures.get(e).copied().unwrap_or(0);
        done[e] += 1;
        let status = if failed { Status::Error } else { Status::Ok };
        lab.done(t, status, MS);
    }
    assert!(done.iter().all(|&d| d == calls), "{done:?}");
}

#[test]
fn ejected_endpoint_is_ejected_again_by_either_algorithm_with_its_timer_restarted() {
    // Endpoint 0 is ejected at the 10 s tick (multiplier 1). Calls picked before then complete
    // at 15 s, failed, and fill the bucket the 20 s tick reads: flagged again, it is ejected again,
    // multiplier 2, from 20 s: back at the first tick >= 80 s. Skipping ejected endpoints would
    // bring it back at 40 s; not restarting the timer, at 70 s; not raising the multiplier, at 50 s.
    for (algorithm, failures) in [
        (
            r#""successRateEjection":{"minimumHosts":5,"requestVolume":100}"#,
            40,
        ),
        (
            r#""failurePercentageEjection":{"minimumHosts":5,"requestVolume":100}"#,
            100,
        ),
    ] {
        let entry = od(&format!(r#"{algorithm},"maxEjectionPercent":50"#));
        let mut lab = Lab::ready(&entry, 10);
        counted_calls(&mut lab, 10, 100, &[failures]);
        // 100 calls per endpoint held open across the tick.
        let held: Vec<_> = (0..1000).map(|_| lab.unary()).collect();
        lab.step(10 * SEC);
        assert!(ejected(&lab, 0), "{algorithm}: ejected at 10 s");
        lab.step(5 * SEC);
        let mut failed = 0;
        for t in held {
            let fail = t.endpoint() == lblab_policy::EndpointId(0) && failed < failures;
            failed += u32::from(fail);
            lab.done(t, if fail { Status::Error } else { Status::Ok }, 5 * SEC);
        }
        lab.step(5 * SEC); // the 20 s tick
        assert!(ejected(&lab, 0), "{algorithm}: ejected again at 20 s");
        lab.step(60 * SEC - MS);
        assert!(
            ejected(&lab, 0),
            "{algorithm}: still ejected just before 80 s"
        );
        lab.step(MS);
        assert!(
            !ejected(&lab, 0),
            "{algorithm}: back at 80 s = 20 s + 2 × 30 s"
        );
        assert!((1..10).all(|e| !ejected(&lab, e)));
    }
}

#[test]
fn at_the_cap_the_first_outlier_in_endpoint_list_order_is_ejected() {
    // maxEjectionPercent 10 of 10 endpoints: one ejection. Endpoints 0 (every call fails) and 3
    // (half fail) are both outliers under either algorithm; the list is [3, 0, 1, 2, 4, ...], so
    // endpoint 3 is ejected: the sweep walks the endpoints in list order and stops at the cap,
    // as grpc-go walks its address map (in Go's map order; lblab fixes it to list order). Ejecting
    // by id, by worst rate, or the last outlier would eject endpoint 0.
    for algorithm in [
        r#""successRateEjection":{"stdevFactor":1000,"minimumHosts":5,"requestVolume":100}"#,
        r#""failurePercentageEjection":{"threshold":40,"minimumHosts":5,"requestVolume":100}"#,
    ] {
        let entry = od(&format!(r#"{algorithm},"maxEjectionPercent":10"#));
        let mut lab = Lab::new(&entry);
        let list = [3, 0, 1, 2, 4, 5, 6, 7, 8, 9];
        lab.set_endpoints(&list);
        for e in list {
            lab.set_state(e, Connectivity::Ready);
        }
        counted_calls(&mut lab, 10, 100, &[100, 0, 0, 50]);
        lab.step(10 * SEC);
        let out: Vec<u32> = (0..10).filter(|&e| ejected(&lab, e)).collect();
        assert_eq!(out, [3], "{algorithm}");
    }
}

#[test]
fn success_rate_exactly_at_the_threshold_is_not_ejected() {
    // Success rates 0.5, 0.5, 1, 1: mean 0.75 and stdev 0.25, both exact in binary. With
    // stdevFactor 1000 the threshold is 0.75 − 0.25 × 1 = 0.5 exactly: not below it, not ejected
    // (grpc-go: `successRate < requiredSuccessRate`). With 999 the threshold is 0.50025: both
    // ejected.
    for (factor, want) in [(1000, false), (999, true)] {
        let entry = od(&format!(
            r#""successRateEjection":{{"stdevFactor":{factor},"minimumHosts":4,"requestVolume":100}},"maxEjectionPercent":100"#
        ));
        let mut lab = Lab::ready(&entry, 4);
        counted_calls(&mut lab, 4, 100, &[50, 50]);
        lab.step(10 * SEC);
        assert_eq!(ejected(&lab, 0), want, "stdevFactor {factor}");
        assert_eq!(ejected(&lab, 1), want, "stdevFactor {factor}");
        assert!(!ejected(&lab, 2) && !ejected(&lab, 3));
    }
    // All equal: stdev 0, threshold = mean = every rate. Nobody is an outlier.
    let entry = od(
        r#""successRateEjection":{"minimumHosts":5,"requestVolume":100},"maxEjectionPercent":100"#,
    );
    let mut lab = Lab::ready(&entry, 5);
    counted_calls(&mut lab, 5, 100, &[20, 20, 20, 20, 20]);
    lab.step(10 * SEC);
    assert!((0..5).all(|e| !ejected(&lab, e)));
}

#[test]
fn enforcement_draw_equal_to_the_percentage_does_not_enforce() {
    // grpc-go: `uint32(rand.Int32N(100)) < EnforcementPercentage`. One draw in 0..100 per flagged
    // endpoint, none for the others: with enforcementPercentage 50 a draw of 49 ejects, 50 does
    // not.
    use rand::Rng;
    for algorithm in [
        r#""successRateEjection":{"enforcementPercentage":50,"minimumHosts":5,"requestVolume":100}"#,
        r#""failurePercentageEjection":{"enforcementPercentage":50,"minimumHosts":5,"requestVolume":100}"#,
    ] {
        for (draw, want) in [(49usize, true), (50, false), (0, true), (99, false)] {
            assert_eq!(
                Script::indices(100, &[draw]).random_range(0..100u32),
                draw as u32
            );
            let mut lab = Lab::ready(&od(algorithm), 5);
            counted_calls(&mut lab, 5, 100, &[100]);
            lab.now = 10 * SEC;
            assert_eq!(lab.policy.next_timer(), Some(lab.now));
            let mut script = Script::indices(100, &[draw]);
            lab.policy.on_timer(lab.now, &mut script);
            assert!(script.is_empty(), "one draw, for the one outlier");
            assert_eq!(ejected(&lab, 0), want, "{algorithm}: draw {draw}");
        }
    }
}

#[test]
fn success_rates_are_ratios_whatever_each_endpoint_s_call_count() {
    // Endpoints 0, 2 and 4 get 200 calls, 1 and 3 get 100; endpoint 4 fails half of its calls.
    // Rates 1, 1, 1, 1, 0.5: mean 0.9, stdev 0.2, threshold 0.9 − 0.2 × 1.9 = 0.52: 4 goes.
    // (Equal call counts, as elsewhere, would hide a rate that is not success / total.)
    let entry = od(
        r#""successRateEjection":{"minimumHosts":5,"requestVolume":100},"maxEjectionPercent":100"#,
    );
    let mut lab = Lab::ready(&entry, 5);
    counted_calls(&mut lab, 5, 100, &[0, 0, 0, 0, 50]);
    lab.set_state(1, Connectivity::TransientFailure);
    lab.set_state(3, Connectivity::TransientFailure);
    let mut done = [0u32; 5];
    for _ in 0..300 {
        let t = lab.unary();
        let e = t.endpoint().0 as usize;
        let failed = e == 4 && done[e] < 50;
        done[e] += 1;
        lab.done(t, if failed { Status::Error } else { Status::Ok }, MS);
    }
    assert_eq!(done, [100, 0, 100, 0, 100]);
    lab.set_state(1, Connectivity::Ready);
    lab.set_state(3, Connectivity::Ready);
    lab.step(10 * SEC);
    assert!(ejected(&lab, 4));
    assert!((0..4).all(|e| !ejected(&lab, e)));
}

#[test]
fn load_reports_the_oob_period_and_the_child_s_timers_reach_the_child() {
    // Around weighted_round_robin with out-of-band reports: the period the owner must poll at is
    // the child's, the reports reach it, and its weight-update timer runs, so picks follow the
    // weights (endpoint 0: 100 qps at 10 % CPU, weight 1000; endpoint 1: at 100 %, weight 100).
    let entry = od_around(
        r#""failurePercentageEjection":{}"#,
        r#"{"weighted_round_robin":{"enableOobLoadReport":true,"oobReportingPeriod":"2s","blackoutPeriod":"0s","weightUpdatePeriod":"1s"}}"#,
    );
    let mut lab = Lab::ready(&entry, 2);
    assert_eq!(lab.policy.oob_reporting_period(), Some(2 * SEC));
    for (e, cpu) in [(0, 0.1), (1, 1.0)] {
        let report = lblab_policy::LoadReport {
            rps_fractional: 100.0,
            cpu_utilization: cpu,
            ..lblab_policy::LoadReport::default()
        };
        lab.policy.on_load_report(lab.now, EndpointId(e), &report);
    }
    lab.step(1100 * MS);
    lab.reset_picks();
    lab.burst(110);
    assert!(
        lab.share(0) > 0.85,
        "share of the heavier weight: {}",
        lab.share(0)
    );
}
