//! `weighted_round_robin` (A58): weights from ORCA reports, blackout, expiration, EDF.

use lblab_policy::config::PolicyConfig;
use lblab_policy::{Connectivity, EndpointId, LoadReport, Outcome, Status};

use crate::harness::{config, Lab, MS, SEC};

fn wrr(fields: &str) -> String {
    format!(r#"{{"weighted_round_robin":{{{fields}}}}}"#)
}

fn report(qps: f64, cpu: f64) -> LoadReport {
    LoadReport {
        rps_fractional: qps,
        cpu_utilization: cpu,
        ..LoadReport::default()
    }
}

/// Sends one call to endpoint `e` (which must be the only READY one, or be picked anyway) and
/// completes it with `load` as its per-call report.
fn report_via_call(lab: &mut Lab, e: u32, load: LoadReport) {
    // Make only `e` READY for this call.
    let others: Vec<u32> = (0..8).filter(|&o| o != e).collect();
    let states: Vec<_> = others
        .iter()
        .map(|&o| {
            lab.policy
                .endpoint_view(lab.now, EndpointId(o))
                .map(|v| v.state)
        })
        .collect();
    for &o in &others {
        lab.set_state(o, Connectivity::TransientFailure);
    }
    let t = lab.unary();
    assert_eq!(t.endpoint(), EndpointId(e));
    lab.done_with(t, Outcome::new(Status::Ok, MS).with_load(load));
    for (&o, s) in others.iter().zip(states) {
        if let Some(s) = s {
            lab.set_state(o, s);
        }
    }
}

fn weight(lab: &Lab, e: u32) -> Option<f64> {
    lab.view(e).cost.map(|c| 1.0 / c)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs()
}

#[test]
fn weight_is_qps_over_utilization_plus_penalized_error_rate() {
    let mut lab = Lab::ready(
        &wrr(r#""blackoutPeriod":"0s","errorUtilizationPenalty":2.0"#),
        1,
    );
    let load = LoadReport {
        rps_fractional: 100.0,
        cpu_utilization: 0.5,
        eps: 10.0,
        ..LoadReport::default()
    };
    report_via_call(&mut lab, 0, load);
    let want = 100.0 / (0.5 + 10.0 / 100.0 * 2.0);
    assert!(
        close(weight(&lab, 0).unwrap(), want),
        "{:?}",
        weight(&lab, 0)
    );
}

#[test]
fn application_utilization_is_preferred_over_cpu() {
    let mut lab = Lab::ready(&wrr(r#""blackoutPeriod":"0s""#), 1);
    let load = LoadReport {
        rps_fractional: 100.0,
        cpu_utilization: 0.9,
        application_utilization: 0.25,
        eps: 0.0,
    };
    report_via_call(&mut lab, 0, load);
    assert!(close(weight(&lab, 0).unwrap(), 400.0));
}

#[test]
fn empty_report_never_overwrites_a_weight() {
    let mut lab = Lab::ready(&wrr(r#""blackoutPeriod":"0s""#), 1);
    assert_eq!(weight(&lab, 0), None);
    report_via_call(&mut lab, 0, report(100.0, 0.0)); // no utilization: weight 0, ignored
    assert_eq!(weight(&lab, 0), None);
    report_via_call(&mut lab, 0, report(100.0, 0.5));
    lab.step(SEC);
    report_via_call(&mut lab, 0, report(100.0, 0.0));
    report_via_call(&mut lab, 0, report(0.0, 0.7));
    assert!(close(weight(&lab, 0).unwrap(), 200.0));
}

#[test]
fn weight_counts_only_after_the_blackout_period() {
    let mut lab = Lab::ready(&wrr(r#""blackoutPeriod":"5s""#), 1);
    for _ in 0..50 {
        report_via_call(&mut lab, 0, report(100.0, 0.5));
        if lab.now < 5 * SEC {
            assert_eq!(weight(&lab, 0), None, "at {}", lab.now);
        } else {
            assert!(close(weight(&lab, 0).unwrap(), 200.0), "at {}", lab.now);
        }
        lab.step(100 * MS);
    }
}

#[test]
fn weight_expires_and_then_goes_through_blackout_again() {
    let mut lab = Lab::ready(
        &wrr(r#""blackoutPeriod":"5s","weightExpirationPeriod":"30s""#),
        1,
    );
    for _ in 0..=10 {
        report_via_call(&mut lab, 0, report(100.0, 0.5));
        lab.step(SEC);
    }
    // Last report at 10 s.
    lab.step_to(40 * SEC - 1);
    assert!(weight(&lab, 0).is_some());
    lab.step(1);
    assert_eq!(weight(&lab, 0), None, "expired 30 s after the last report");
    lab.step_to(50 * SEC);
    report_via_call(&mut lab, 0, report(100.0, 0.5));
    lab.step(4 * SEC);
    report_via_call(&mut lab, 0, report(100.0, 0.5));
    assert_eq!(weight(&lab, 0), None, "blackout again after expiry");
    lab.step(SEC);
    assert!(weight(&lab, 0).is_some());
}

#[test]
fn reconnect_restarts_the_blackout() {
    let mut lab = Lab::ready(&wrr(r#""blackoutPeriod":"5s""#), 1);
    report_via_call(&mut lab, 0, report(100.0, 0.5));
    lab.step(6 * SEC);
    report_via_call(&mut lab, 0, report(100.0, 0.5));
    assert!(weight(&lab, 0).is_some());
    lab.set_state(0, Connectivity::TransientFailure);
    lab.set_state(0, Connectivity::Ready);
    report_via_call(&mut lab, 0, report(100.0, 0.5));
    assert_eq!(weight(&lab, 0), None);
    lab.step(5 * SEC);
    assert!(weight(&lab, 0).is_some());
}

#[test]
fn traffic_follows_weights_after_the_blackout() {
    let mut lab = Lab::ready(&wrr(""), 3);
    // Same utilization, qps 1:2:5: weights 200, 400, 1000.
    for (e, qps) in [(0, 100.0), (1, 200.0), (2, 500.0)] {
        lab.backend(e).load = Some(report(qps, 0.5));
    }
    lab.drive(9 * SEC, 300);
    for e in 0..3 {
        // Blackout: round robin.
        assert!(
            (lab.share(e) - 1.0 / 3.0).abs() < 0.01,
            "{e}: {}",
            lab.share(e)
        );
    }
    lab.drive(2 * SEC, 300); // blackout ends at 10 s; the next update (11 s) applies the weights
    lab.reset_picks();
    lab.drive(10 * SEC, 1000);
    for (e, want) in [(0, 1.0 / 8.0), (1, 2.0 / 8.0), (2, 5.0 / 8.0)] {
        assert!(
            (lab.share(e) - want).abs() < 0.01,
            "{e}: {} vs {want}",
            lab.share(e)
        );
    }
}

#[test]
fn endpoints_without_a_weight_get_the_mean() {
    let mut lab = Lab::ready(&wrr(r#""blackoutPeriod":"0s""#), 3);
    lab.backend(0).load = Some(report(50.0, 0.5)); // 100
    lab.backend(1).load = Some(report(150.0, 0.5)); // 300
    lab.drive(3 * SEC, 300); // endpoint 2 never reports: it gets the mean, 200
    lab.reset_picks();
    lab.drive(10 * SEC, 1200);
    for (e, want) in [(0, 1.0 / 6.0), (1, 3.0 / 6.0), (2, 2.0 / 6.0)] {
        assert!(
            (lab.share(e) - want).abs() < 0.01,
            "{e}: {} vs {want}",
            lab.share(e)
        );
    }
}

#[test]
fn fewer_than_two_weights_is_round_robin() {
    let mut lab = Lab::ready(&wrr(r#""blackoutPeriod":"0s""#), 5);
    lab.backend(0).load = Some(report(1000.0, 0.01)); // a huge weight, alone
    lab.drive(3 * SEC, 300);
    assert!(weight(&lab, 0).is_some());
    // Even turns in list order, whatever the rebuilds (a weighted schedule would order the
    // endpoints by random phase instead).
    for _ in 0..5 {
        let seq: Vec<u32> = (0..50)
            .map(|_| {
                let t = lab.unary();
                let e = t.endpoint().0;
                lab.done(t, Status::Ok, MS);
                e
            })
            .collect();
        for w in seq.windows(2) {
            assert_eq!(w[1], (w[0] + 1) % 5, "{seq:?}");
        }
        lab.step(SEC); // fires the weight update
    }
}

#[test]
fn oob_mode_uses_out_of_band_reports_only() {
    let entry =
        wrr(r#""enableOobLoadReport":true,"oobReportingPeriod":"2s","blackoutPeriod":"0s""#);
    let mut lab = Lab::ready(&entry, 2);
    assert_eq!(lab.policy.oob_reporting_period(), Some(2 * SEC));
    report_via_call(&mut lab, 0, report(100.0, 0.5));
    assert_eq!(
        weight(&lab, 0),
        None,
        "per-call reports are ignored in OOB mode"
    );
    lab.policy
        .on_load_report(lab.now, EndpointId(1), &report(100.0, 0.25));
    assert!(close(weight(&lab, 1).unwrap(), 400.0));

    // Without OOB, out-of-band reports are ignored and per-call ones count.
    let mut lab = Lab::ready(&wrr(r#""blackoutPeriod":"0s""#), 2);
    assert_eq!(lab.policy.oob_reporting_period(), None);
    lab.policy
        .on_load_report(lab.now, EndpointId(1), &report(100.0, 0.25));
    assert_eq!(weight(&lab, 1), None);
    report_via_call(&mut lab, 0, report(100.0, 0.5));
    assert!(weight(&lab, 0).is_some());
}

#[test]
fn weight_update_period_is_raised_to_100ms() {
    let entry = wrr(r#""weightUpdatePeriod":"0.010s""#);
    let PolicyConfig::WeightedRoundRobin(c) = config(&entry) else {
        panic!()
    };
    assert_eq!(c.weight_update_period, 100 * MS);
    let lab = Lab::new(&entry);
    assert_eq!(lab.policy.next_timer(), Some(100 * MS));
    // Also when the config is built by hand.
    let p = lblab_policy::weighted_round_robin::WeightedRoundRobin::new(
        lblab_policy::weighted_round_robin::Config {
            weight_update_period: 0,
            ..Default::default()
        },
        5 * SEC,
    );
    use lblab_policy::Policy;
    assert_eq!(p.next_timer(), Some(5 * SEC + 100 * MS));
}

#[test]
fn weights_are_rebuilt_every_update_period() {
    let mut lab = Lab::ready(
        &wrr(r#""blackoutPeriod":"0s","weightUpdatePeriod":"2s""#),
        2,
    );
    lab.backend(0).load = Some(report(100.0, 0.5));
    lab.backend(1).load = Some(report(300.0, 0.5));
    lab.drive(3 * SEC, 100); // the schedule is rebuilt at 2 s with the reported weights
    lab.reset_picks();
    lab.drive(SEC, 1000);
    assert!((lab.share(1) - 0.75).abs() < 0.01, "{}", lab.share(1));
    // New weights take effect only at the next rebuild (at 4 s).
    lab.backend(0).load = Some(report(300.0, 0.5));
    lab.reset_picks();
    lab.drive(900 * MS, 1000); // 3 s to 3.9 s: still the schedule built at 2 s
    assert!((lab.share(1) - 0.75).abs() < 0.01, "{}", lab.share(1));
    lab.drive(1100 * MS, 1000);
    lab.reset_picks();
    lab.drive(SEC, 1000); // 5 s to 6 s
    assert!((lab.share(1) - 0.5).abs() < 0.01, "{}", lab.share(1));
}

#[test]
fn huge_weights_neither_overflow_nor_starve_anyone() {
    // Two weights of 1e308 and an endpoint without one: the mean must not overflow to infinity
    // (which gave the unweighted endpoint a zero period and every pick).
    let mut lab = Lab::ready(&wrr(r#""blackoutPeriod":"0s""#), 3);
    lab.backend(0).load = Some(report(1e308, 1.0));
    lab.backend(1).load = Some(report(1e308, 1.0));
    lab.drive(3 * SEC, 300);
    lab.reset_picks();
    lab.drive(3 * SEC, 1000);
    for e in 0..3 {
        assert!(
            (lab.share(e) - 1.0 / 3.0).abs() < 0.01,
            "{e}: {}",
            lab.share(e)
        );
    }
}

#[test]
fn extreme_weight_ratios_keep_every_endpoint_in_the_schedule() {
    let mut lab = Lab::ready(&wrr(r#""blackoutPeriod":"0s""#), 2);
    lab.backend(0).load = Some(report(1e300, 1.0));
    lab.backend(1).load = Some(report(1e-300, 1.0));
    lab.drive(3 * SEC, 300);
    assert!(lab.view(1).cost.is_some_and(f64::is_finite));
    lab.reset_picks();
    lab.drive(100 * SEC, 2000); // 200,000 picks: the light one still gets about 1 in 65536
    assert!((1..=10).contains(&lab.picks(1)), "{}", lab.picks(1));
}

#[test]
fn no_utilization_means_no_weight_even_with_errors() {
    // A58: the weight is qps / (utilization + eps/qps × penalty) only when both qps and
    // utilization are positive. With utilization 0 and errors, the formula alone would give
    // qps² / (eps × penalty), a finite weight from a report that says nothing about load.
    let mut lab = Lab::ready(&wrr(r#""blackoutPeriod":"0s""#), 1);
    let load = LoadReport {
        rps_fractional: 100.0,
        cpu_utilization: 0.0,
        eps: 10.0,
        ..LoadReport::default()
    };
    report_via_call(&mut lab, 0, load);
    assert_eq!(weight(&lab, 0), None);
}

#[test]
fn a_zero_error_penalty_is_accepted_and_ignores_errors() {
    // A58 asks for errorUtilizationPenalty >= 0: 0 is valid and turns the error term off.
    let mut lab = Lab::ready(
        &wrr(r#""blackoutPeriod":"0s","errorUtilizationPenalty":0"#),
        1,
    );
    let load = LoadReport {
        rps_fractional: 100.0,
        cpu_utilization: 0.5,
        eps: 50.0,
        ..LoadReport::default()
    };
    report_via_call(&mut lab, 0, load);
    assert!(
        close(weight(&lab, 0).unwrap(), 200.0),
        "{:?}",
        weight(&lab, 0)
    );
}

#[test]
fn only_a_change_to_ready_restarts_the_blackout() {
    let mut lab = Lab::ready(&wrr(r#""blackoutPeriod":"0s""#), 1);
    report_via_call(&mut lab, 0, report(100.0, 0.5));
    assert!(close(weight(&lab, 0).unwrap(), 200.0));
    // READY again without leaving it: nothing to restart.
    lab.set_state(0, Connectivity::Ready);
    assert!(close(weight(&lab, 0).unwrap(), 200.0));
    // Between the states that are not READY the weight is kept…
    lab.set_state(0, Connectivity::TransientFailure);
    lab.set_state(0, Connectivity::Connecting);
    assert!(close(weight(&lab, 0).unwrap(), 200.0));
    // …and coming back to READY drops it until the endpoint reports again.
    lab.set_state(0, Connectivity::Ready);
    assert_eq!(weight(&lab, 0), None);
}
