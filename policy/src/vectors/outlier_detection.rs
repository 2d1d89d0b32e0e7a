//! The vectors of outlier_detection_experimental (gRFC A50): config cases and sequences (ejections and sweeps).

use serde_json::{json, Value};

use super::format::{config_cases, document};
use super::recorder::{Recorder, Sequences, SEC};
use super::subject::Shows;
use crate::{Connectivity, Nanos, Status};

/// The policy these vectors are for.
pub(super) const POLICY: &str = crate::outlier_detection::NAME;
/// What its expectations show for each endpoint.
pub(super) const SHOWS: Shows = Shows::Ejection;

/// An outlier_detection config around least_request_experimental (whose with-replacement draws
/// let a vector send each call to a chosen endpoint).
fn od(fields: Value) -> Value {
    let mut m = fields.as_object().cloned().unwrap_or_default();
    m.insert(
        "childPolicy".into(),
        json!([{"least_request_experimental": {}}]),
    );
    Value::Object(m)
}

/// Calls on each endpoint at `at`: `(endpoint, ok, failed)`.
fn calls(r: &mut Recorder, at: Nanos, spec: &[(u32, u32, u32)]) {
    for &(e, ok, failed) in spec {
        for _ in 0..ok {
            r.call_on(at, e, Status::Ok);
        }
        for _ in 0..failed {
            r.call_on(at, e, Status::Error);
        }
    }
}

pub(super) fn file() -> Value {
    let policy = POLICY;
    let child = json!([{"round_robin": {}}]);
    let cases = config_cases(
        policy,
        &[
            json!({"childPolicy": child}),
            json!({"interval": "0.010s", "baseEjectionTime": "400s", "childPolicy": child}),
            json!({"successRateEjection": {}, "failurePercentageEjection": {"threshold": 100}, "maxEjectionPercent": 100, "childPolicy": [{"peak_ewma_experimental": {}}]}),
            json!({"successRateEjection": {"stdevFactr": 1}, "childPolicy": child}),
        ],
        &[
            json!({}),
            json!({"maxEjectionPercent": 101, "childPolicy": child}),
            json!({"successRateEjection": {"enforcementPercentage": 101}, "childPolicy": child}),
            json!({"failurePercentageEjection": {"threshold": 101}, "childPolicy": child}),
            json!({"interval": "0s", "childPolicy": child}),
            json!({"baseEjectionTime": "-1s", "childPolicy": child}),
            json!({"childPolicy": [{"peak_ewma_experimental": {"choiceCount": 1}}]}),
        ],
    );
    let mut s = Sequences {
        policy,
        shows: SHOWS,
        out: Vec::new(),
        pin: None,
    };
    let five = [0, 1, 2, 3, 4];
    s.add(
        "re_ejection_restarts_the_timer",
        "An ejected endpoint stays a candidate: its calls that complete while it is ejected are \
         counted, and flagged again at the next sweep it is ejected again, multiplier 2, from \
         that sweep (back at 20 s + 2 × 30 s = 80 s). The multiplier then falls by one per sweep \
         while not ejected.",
        od(
            json!({"interval": "10s", "baseEjectionTime": "30s", "maxEjectionPercent": 50,
            "failurePercentageEjection": {"minimumHosts": 5, "requestVolume": 4}}),
        ),
        |r| {
            r.ready_all(0, &five);
            calls(
                r,
                SEC,
                &[(0, 0, 4), (1, 4, 0), (2, 4, 0), (3, 4, 0), (4, 4, 0)],
            );
            // Four calls picked on endpoint 0 before the sweep, completed (failed) after it.
            let held: Vec<u32> = (0..4).map(|_| r.unary(2 * SEC, &[0, 0])).collect();
            calls(r, 2 * SEC, &[(1, 4, 0), (2, 4, 0), (3, 4, 0), (4, 4, 0)]);
            r.timer(10 * SEC, &[0]);
            for call in held {
                r.done(15 * SEC, call, Status::Error, 13 * SEC);
            }
            calls(r, 15 * SEC, &[(1, 4, 0), (2, 4, 0), (3, 4, 0), (4, 4, 0)]);
            r.timer(20 * SEC, &[0]);
            for k in 3..=8 {
                r.timer(k * 10 * SEC, &[]);
            }
            calls(
                r,
                81 * SEC,
                &[(0, 4, 0), (1, 4, 0), (2, 4, 0), (3, 4, 0), (4, 4, 0)],
            );
            r.timer(90 * SEC, &[]);
            calls(
                r,
                91 * SEC,
                &[(0, 0, 4), (1, 4, 0), (2, 4, 0), (3, 4, 0), (4, 4, 0)],
            );
            r.timer(100 * SEC, &[0]);
            r.timer(110 * SEC, &[]);
            r.timer(130 * SEC, &[]);
        },
    );
    s.add(
        "cap_ejects_the_first_outlier_in_list_order",
        "maxEjectionPercent 20 of 5 endpoints: one ejection at most. The sweep walks the \
         endpoints in list order ([3, 0, 1, 2, 4]) and stops at the cap, so endpoint 3 (half \
         its calls failed) is ejected, not endpoint 0 (all failed).",
        od(json!({"maxEjectionPercent": 20,
            "failurePercentageEjection": {"threshold": 40, "minimumHosts": 5, "requestVolume": 4}})),
        |r| {
            r.ready_all(0, &[3, 0, 1, 2, 4]);
            calls(r, SEC, &[(3, 2, 2), (0, 0, 4), (1, 4, 0), (2, 4, 0), (4, 4, 0)]);
            r.timer(10 * SEC, &[0]);
        },
    );
    s.add(
        "success_rate_exactly_at_the_threshold_is_kept",
        "Success rates 0.5, 0.5, 1, 1: mean 0.75, stdev 0.25; stdevFactor 1000 puts the threshold \
         at exactly 0.5, and only a rate strictly below it is an outlier: nobody is ejected.",
        od(json!({"maxEjectionPercent": 100,
            "successRateEjection": {"stdevFactor": 1000, "minimumHosts": 4, "requestVolume": 4}})),
        |r| {
            r.ready_all(0, &[0, 1, 2, 3]);
            calls(r, SEC, &[(0, 2, 2), (1, 2, 2), (2, 4, 0), (3, 4, 0)]);
            r.timer(10 * SEC, &[]);
        },
    );
    s.add(
        "success_rate_just_below_the_threshold_is_ejected",
        "The same rates with stdevFactor 999: threshold 0.50025; both 0.5 endpoints are outliers \
         and ejected (one enforcement draw each).",
        od(json!({"maxEjectionPercent": 100,
            "successRateEjection": {"stdevFactor": 999, "minimumHosts": 4, "requestVolume": 4}})),
        |r| {
            r.ready_all(0, &[0, 1, 2, 3]);
            calls(r, SEC, &[(0, 2, 2), (1, 2, 2), (2, 4, 0), (3, 4, 0)]);
            r.timer(10 * SEC, &[0, 0]);
        },
    );
    s.add(
        "failure_percentage_exactly_at_the_threshold_is_kept",
        "threshold 50: 50 % failures is not above it (kept), 60 % is (ejected).",
        od(json!({"maxEjectionPercent": 100,
            "failurePercentageEjection": {"threshold": 50, "minimumHosts": 5, "requestVolume": 4}})),
        |r| {
            r.ready_all(0, &five);
            calls(r, SEC, &[(0, 2, 2), (1, 2, 3), (2, 4, 0), (3, 4, 0), (4, 4, 0)]);
            r.timer(10 * SEC, &[0]);
        },
    );
    s.add(
        "enforcement_draw_must_be_below_the_percentage",
        "enforcementPercentage 50: an outlier is ejected when its draw in 0..100 is below 50. A \
         draw of 50 does not eject; at the next sweep 49 does.",
        od(json!({"maxEjectionPercent": 50,
            "failurePercentageEjection": {"enforcementPercentage": 50, "minimumHosts": 5, "requestVolume": 4}})),
        |r| {
            r.ready_all(0, &five);
            calls(r, SEC, &[(0, 0, 4), (1, 4, 0), (2, 4, 0), (3, 4, 0), (4, 4, 0)]);
            r.timer(10 * SEC, &[50]);
            calls(r, 11 * SEC, &[(0, 0, 4), (1, 4, 0), (2, 4, 0), (3, 4, 0), (4, 4, 0)]);
            r.timer(20 * SEC, &[49]);
        },
    );
    s.add(
        "unejection_restores_the_real_state",
        "While ejected the child sees TRANSIENT_FAILURE whatever the connection does; at unejection \
         it learns the real state (here CONNECTING). CANCELLED calls are not counted.",
        od(json!({"maxEjectionPercent": 50,
            "failurePercentageEjection": {"minimumHosts": 5, "requestVolume": 4}})),
        |r| {
            r.ready_all(0, &five);
            calls(r, SEC, &[(0, 0, 4), (1, 4, 0), (2, 4, 0), (3, 4, 0), (4, 4, 0)]);
            for _ in 0..8 {
                r.call_on(SEC, 1, Status::Cancelled);
            }
            r.timer(10 * SEC, &[0]);
            r.state(12 * SEC, 0, Connectivity::TransientFailure);
            r.state(13 * SEC, 0, Connectivity::Connecting);
            r.timer(20 * SEC, &[]);
            r.timer(30 * SEC, &[]);
            r.timer(40 * SEC, &[]);
        },
    );
    document(
        policy,
        "outlier_detection_experimental (gRFC A50) around least_request_experimental: counting, \
         sweeps and ejection edge cases.",
        cases,
        s.out,
    )
}
