//! `peak_ewma_experimental`: the estimate, the cost, which calls count, and how traffic follows.

use lblab_policy::config::PolicyConfig;
use lblab_policy::{Connectivity, EndpointId, Pick, RpcKind, Status};

use crate::harness::{config, Lab, Script, MS, SEC};

/// The semantics as first written, whose formulas these tests pin: the `defaultRtt` prior and the
/// decay toward 0 on the wall clock (`lblabAblation` `initial: prior`, `idle: to_zero`; the chosen
/// default's first estimate and idle decay are tested in `peak_ewma_variants.rs`).
const FIRST_WRITTEN: &str = r#""initial":"prior","idle":"to_zero""#;

/// `peak_ewma_experimental` with `fields`, under the semantics as first written.
fn pe(fields: &str) -> String {
    let fields = if fields.contains(r#""lblabAblation":{"#) {
        fields.replace(
            r#""lblabAblation":{"#,
            &format!(r#""lblabAblation":{{{FIRST_WRITTEN},"#),
        )
    } else if fields.is_empty() {
        format!(r#""lblabAblation":{{{FIRST_WRITTEN}}}"#)
    } else {
        format!(r#"{fields},"lblabAblation":{{{FIRST_WRITTEN}}}"#)
    };
    format!(r#"{{"peak_ewma_experimental":{{{fields}}}}}"#)
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1.0)
}

#[test]
fn new_ready_endpoint_costs_default_rtt() {
    let mut lab = Lab::new(&pe(r#""defaultRtt":"0.050s""#));
    lab.set_endpoints(&[0, 1]);
    lab.set_state(0, Connectivity::Ready);
    assert_eq!(lab.cost(0), 50.0 * MS as f64);
    // An endpoint that becomes READY much later starts at defaultRtt then, not decayed since it
    // was listed.
    lab.step(100 * SEC);
    lab.set_state(1, Connectivity::Connecting);
    lab.set_state(1, Connectivity::Ready);
    assert_eq!(lab.cost(1), 50.0 * MS as f64);
}

#[test]
fn slow_sample_raises_the_estimate_at_once() {
    let mut lab = Lab::ready(&pe(""), 1);
    lab.step(SEC);
    let t = lab.unary();
    assert_eq!(lab.view(0).outstanding, 1);
    lab.step(500 * MS);
    lab.done(t, Status::Ok, 500 * MS);
    // No blending: the estimate is the slow sample itself.
    assert_eq!(lab.view(0).outstanding, 0);
    assert_eq!(lab.cost(0), 500.0 * MS as f64);
}

#[test]
fn cost_decays_by_one_time_constant_per_decay_time_while_unpicked() {
    let mut lab = Lab::ready(&pe(r#""decayTime":"5s""#), 2);
    let t = loop {
        let t = lab.unary();
        if t.endpoint() == EndpointId(0) {
            break t;
        }
        lab.done(t, Status::Cancelled, 0);
    };
    lab.done(t, Status::Ok, 200 * MS);
    let before = lab.cost(0);
    assert_eq!(before, 200.0 * MS as f64);
    lab.step(5 * SEC);
    let after = lab.cost(0);
    assert!(
        close(after / before, (-1.0f64).exp(), 1e-12),
        "{after} / {before}"
    );
    // Reading the cost does not change the state: read again, and again one decayTime later.
    assert_eq!(lab.cost(0), after);
    lab.step(5 * SEC);
    assert!(close(lab.cost(0) / before, (-2.0f64).exp(), 1e-12));
    // And it keeps decaying toward 0, never below.
    lab.step(1_000 * SEC);
    let c = lab.cost(0);
    assert!((0.0..1e-9).contains(&c), "{c}");
}

#[test]
fn fast_sample_blends_by_time_since_the_last_sample() {
    let mut lab = Lab::ready(&pe(""), 1);
    let t = lab.unary();
    lab.done(t, Status::Ok, 100 * MS);
    // One decayTime (10 s) later a 10 ms sample: w = e^-1.
    lab.step(10 * SEC);
    let t = lab.unary();
    lab.done(t, Status::Ok, 10 * MS);
    let w = (-1.0f64).exp();
    let want = 100e6 * w + (1.0 - w) * 10e6;
    assert!(close(lab.cost(0), want, 1e-12), "{} vs {want}", lab.cost(0));
}

#[test]
fn sample_above_the_decayed_estimate_is_a_new_peak() {
    // 100 ms at 0 has decayed to 36.8 ms at 10 s: a 50 ms sample then is a peak, not a blend.
    let mut lab = Lab::ready(&pe(""), 1);
    let t = lab.unary();
    lab.done(t, Status::Ok, 100 * MS);
    lab.step(10 * SEC);
    let t = lab.unary();
    lab.done(t, Status::Ok, 50 * MS);
    assert_eq!(lab.cost(0), 50.0 * MS as f64);
}

#[test]
fn cost_multiplies_by_outstanding_plus_one() {
    let mut lab = Lab::ready(&pe(""), 1);
    let tickets: Vec<_> = (0..3).map(|_| lab.unary()).collect();
    assert_eq!(lab.view(0).outstanding, 3);
    assert_eq!(lab.cost(0), 4.0 * 30.0 * MS as f64);
    for t in tickets {
        lab.done(t, Status::Cancelled, 0);
    }
    assert_eq!(lab.cost(0), 30.0 * MS as f64);
}

#[test]
fn reconnect_resets_estimate_and_outstanding_and_old_tickets_are_harmless() {
    let mut lab = Lab::ready(&pe(r#""defaultRtt":"0.020s""#), 1);
    let slow = lab.unary();
    let old: Vec<_> = (0..3).map(|_| lab.unary()).collect();
    lab.step(SEC);
    lab.done(slow, Status::Ok, SEC);
    assert_eq!(lab.view(0).outstanding, 3);
    assert_eq!(lab.cost(0), 4.0 * SEC as f64);

    lab.set_state(0, Connectivity::TransientFailure);
    lab.step(SEC);
    lab.set_state(0, Connectivity::Ready);
    assert_eq!(lab.view(0).outstanding, 0);
    assert_eq!(lab.cost(0), 20.0 * MS as f64);

    // Calls from the old connection complete, slowly and with errors: they change nothing.
    let fresh = lab.unary();
    for t in old {
        lab.done(t, Status::DeadlineExceeded, 60 * SEC);
    }
    assert_eq!(lab.view(0).outstanding, 1);
    assert_eq!(lab.cost(0), 2.0 * 20.0 * MS as f64);
    lab.done(fresh, Status::Ok, MS);
    assert_eq!(lab.view(0).outstanding, 0);

    // READY -> READY is not a reconnect.
    let t = lab.unary();
    lab.set_state(0, Connectivity::Ready);
    assert_eq!(lab.view(0).outstanding, 1);
    lab.done(t, Status::Ok, MS);
    assert_eq!(lab.view(0).outstanding, 0);
}

#[test]
fn streaming_calls_change_neither_outstanding_nor_estimate() {
    let mut lab = Lab::ready(&pe(""), 1);
    let before = lab.cost(0);
    let s = lab.ticket(RpcKind::Streaming);
    assert_eq!(s.kind(), RpcKind::Streaming);
    assert_eq!(lab.view(0).outstanding, 0);
    assert_eq!(lab.cost(0), before);
    lab.done(s, Status::Ok, 600 * SEC); // a ten-minute stream is not a latency
    assert_eq!(lab.view(0).outstanding, 0);
    assert_eq!(lab.cost(0), before);
}

#[test]
fn streams_ignore_is_the_default_and_changes_nothing() {
    let mut lab = Lab::ready(&pe(r#""lblabAblation":{"streams":"ignore"}"#), 1);
    let before = lab.cost(0);
    let s = lab.ticket(RpcKind::Streaming);
    assert_eq!(lab.view(0).outstanding, 0);
    lab.step(600 * SEC);
    lab.done(s, Status::Ok, 600 * SEC);
    assert_eq!(lab.view(0).outstanding, 0);
    // Only the decay moved the cost: no sample was taken.
    let decayed = before * (-60.0f64).exp();
    assert!(close(lab.cost(0), decayed, 1e-9));
}

#[test]
fn streams_outstanding_counts_an_open_stream_but_takes_no_sample() {
    let mut lab = Lab::ready(&pe(r#""lblabAblation":{"streams":"outstanding"}"#), 1);
    let s = lab.ticket(RpcKind::Streaming);
    assert_eq!(lab.view(0).outstanding, 1);
    assert_eq!(lab.cost(0), 2.0 * 30.0 * MS as f64, "defaultRtt × (1 + 1)");
    let u = lab.unary();
    assert_eq!(lab.view(0).outstanding, 2);
    lab.done(u, Status::Ok, 30 * MS);
    lab.step(SEC);
    lab.done(s, Status::Ok, SEC); // a 1 s stream: not a sample
    assert_eq!(lab.view(0).outstanding, 0);
    let w = (-0.1f64).exp(); // 1 s of decay at the default 10 s
    assert!(close(lab.cost(0), 30.0 * MS as f64 * w, 1e-9));
}

#[test]
fn streams_count_counts_a_stream_and_samples_its_duration() {
    let mut lab = Lab::ready(&pe(r#""lblabAblation":{"streams":"count"}"#), 1);
    let s = lab.ticket(RpcKind::Streaming);
    assert_eq!(lab.view(0).outstanding, 1);
    lab.step(SEC);
    lab.done(s, Status::Ok, SEC);
    assert_eq!(lab.view(0).outstanding, 0);
    assert_eq!(lab.cost(0), SEC as f64, "the 1 s stream is the new peak");
    // A cancelled stream, like a cancelled unary call, ends its load but is no sample.
    let s = lab.ticket(RpcKind::Streaming);
    lab.done(s, Status::Cancelled, 100 * SEC);
    assert_eq!(lab.cost(0), SEC as f64);
}

#[test]
fn open_streams_steer_unary_traffic_away_only_when_counted() {
    // Endpoint 0 holds 3 open streams; both answer unary calls in 10 ms. Ignored, the streams do
    // not matter (about half the traffic each); counted as outstanding, endpoint 0 costs 4× more
    // and gets almost none.
    let share_0 = |streams: &str| {
        let mut lab = Lab::new(&pe(&format!(
            r#""lblabAblation":{{"streams":"{streams}"}}"#
        )));
        lab.set_endpoints(&[0, 1]);
        // The streams open while endpoint 0 is the only READY one.
        lab.set_state(0, Connectivity::Ready);
        let held: Vec<_> = (0..3).map(|_| lab.ticket(RpcKind::Streaming)).collect();
        lab.set_state(1, Connectivity::Ready);
        lab.drive(10 * SEC, 100);
        let share = lab.share(0);
        for t in held {
            lab.done(t, Status::Cancelled, 0);
        }
        share
    };
    let ignore = share_0("ignore");
    assert!((0.4..0.6).contains(&ignore), "ignore: {ignore}");
    let outstanding = share_0("outstanding");
    assert!(outstanding < 0.1, "outstanding: {outstanding}");
}

#[test]
fn cancelled_call_gives_no_sample_but_ends_outstanding() {
    let mut lab = Lab::ready(&pe(""), 1);
    let t = lab.unary();
    assert_eq!(lab.view(0).outstanding, 1);
    lab.done(t, Status::Cancelled, 30 * SEC);
    assert_eq!(lab.view(0).outstanding, 0);
    assert_eq!(lab.cost(0), 30.0 * MS as f64);
}

#[test]
fn deadline_exceeded_and_errors_are_samples() {
    for status in [Status::DeadlineExceeded, Status::Error, Status::Ok] {
        let mut lab = Lab::ready(&pe(""), 1);
        let t = lab.unary();
        lab.done(t, status, 2 * SEC);
        assert_eq!(lab.cost(0), 2.0 * SEC as f64, "{status:?}");
        assert_eq!(lab.view(0).outstanding, 0);
    }
}

#[test]
fn slow_backend_gets_fewer_picks() {
    let mut lab = Lab::ready(&pe(""), 5);
    for e in 0..5 {
        lab.backend(e).latency = 5 * MS;
    }
    lab.backend(2).latency = 100 * MS;
    lab.drive(30 * SEC, 500);
    let slow = lab.share(2);
    // Fair would be 20%; with replacement it is still drawn twice 1/25 of the time.
    assert!(slow < 0.08, "slow share {slow}");
    for e in [0, 1, 3, 4] {
        assert!(lab.share(e) > 0.22, "fast {e}: {}", lab.share(e));
    }
    assert_eq!(lab.unpicked, 0);
}

#[test]
fn formerly_slow_endpoint_is_probed_again_and_recovers_its_share() {
    // Two endpoints and distinct sampling: the slow one is picked only when its cost is lower,
    // so being probed again is the decay's doing alone.
    let mut lab = Lab::ready(
        &pe(r#""decayTime":"1s","lblabAblation":{"sampling":"distinct"}"#),
        2,
    );
    lab.backend(0).latency = 5 * MS;
    lab.backend(1).latency = 500 * MS;
    lab.drive(2 * SEC, 100);
    lab.finish();
    lab.reset_picks();
    // Still slow: probed now and then (its estimate decays below the fast one's cost within a
    // few decay times, then jumps back to 500 ms on the probe), but rarely.
    lab.drive(20 * SEC, 100);
    let probes = lab.picks(1);
    assert!((2..=40).contains(&probes), "probes while slow: {probes}");

    lab.finish();
    lab.backend(1).latency = 5 * MS;
    lab.drive(20 * SEC, 100); // the next probe finds it fast
    lab.reset_picks();
    lab.drive(10 * SEC, 100);
    let share = lab.share(1);
    assert!((0.4..=0.6).contains(&share), "recovered share {share}");
}

#[test]
fn choice_count_above_ten_is_clamped() {
    let PolicyConfig::PeakEwma(c) = config(&pe(r#""choiceCount":50"#)) else {
        panic!()
    };
    assert_eq!(c.choice_count, 10);
    // Behaviour: 100 endpoints, 99 with one call outstanding. With d = 10 the idle one is among
    // the candidates with probability 1 - 0.99^10 = 9.6% (with d = 50 it would be 39.5%).
    for entry in [
        pe(r#""choiceCount":50"#),
        r#"{"least_request_experimental":{"choiceCount":50}}"#.to_string(),
    ] {
        let mut lab = Lab::ready(&entry, 100);
        let mut held = Vec::new();
        while held.len() < 99 {
            let t = lab.unary();
            if t.endpoint() == EndpointId(0) || lab.view(t.endpoint().0).outstanding > 1 {
                lab.done(t, Status::Cancelled, 0);
            } else {
                held.push(t);
            }
        }
        assert!((1..100).all(|e| lab.view(e).outstanding == 1));
        let n = 4000;
        let mut idle = 0;
        for _ in 0..n {
            let t = lab.unary();
            idle += u32::from(t.endpoint() == EndpointId(0));
            lab.done(t, Status::Cancelled, 0);
        }
        let p = f64::from(idle) / f64::from(n);
        assert!(
            (0.075..0.12).contains(&p),
            "{entry}: idle endpoint share {p}"
        );
        for t in held {
            lab.done(t, Status::Cancelled, 0);
        }
    }
}

#[test]
fn decay_on_read_ablation_moves_the_stamp_at_picks() {
    // A 100 ms sample at 0; at 5 s a pick reads the cost; the call answers in 1 ms at 5.001 s.
    let tau = 10e9;
    let (t_read, rtt) = (5 * SEC, MS);
    let t_done = t_read + rtt;
    let run = |decay: &str| {
        // Two endpoints (with one READY endpoint the picker reads no cost at all); the script
        // draws endpoint 0 twice, which only A48's with-replacement draw can do.
        let mut lab = Lab::ready(
            &pe(&format!(
                r#""lblabAblation":{{"decay":"{decay}","sampling":"with_replacement"}}"#
            )),
            2,
        );
        let pick_0 =
            |lab: &mut Lab| match lab.pick_with(RpcKind::Unary, &mut Script::indices(2, &[0, 0])) {
                Pick::Endpoint(t) if t.endpoint() == EndpointId(0) => t,
                other => panic!("{other:?}"),
            };
        let t = pick_0(&mut lab);
        lab.done(t, Status::Ok, 100 * MS);
        lab.step(t_read);
        let t = pick_0(&mut lab);
        lab.step(rtt);
        lab.done(t, Status::Ok, rtt);
        lab.cost(0)
    };
    // Time-weighted (the proposal): one blend over the 5.001 s since the last sample.
    let w = (-(t_done as f64) / tau).exp();
    let want = 100e6 * w + (1.0 - w) * 1e6;
    assert!(close(run("time_weighted"), want, 1e-12));
    // On read (tower, Finagle): the pick decayed the estimate and moved the stamp to 5 s, so the
    // sample blends over 1 ms only and barely counts.
    let decayed = 100e6 * (-(t_read as f64) / tau).exp();
    let w = (-(rtt as f64) / tau).exp();
    let want = decayed * w + (1.0 - w) * 1e6;
    let got = run("on_read");
    assert!(close(got, want, 1e-12), "{got} vs {want}");
    assert!(
        (got - decayed * w).abs() < 1e-4 * 1e6,
        "the sample moved it by {}",
        got - decayed * w
    );
}

#[test]
fn endpoint_view_does_not_decay_on_read_even_in_on_read_mode() {
    let mut lab = Lab::ready(&pe(r#""lblabAblation":{"decay":"on_read"}"#), 1);
    let t = lab.unary();
    lab.done(t, Status::Ok, 100 * MS);
    lab.step(5 * SEC);
    let a = lab.cost(0);
    let b = lab.cost(0);
    assert_eq!(a, b);
}

#[test]
fn distinct_sampling_never_picks_the_costlier_of_two() {
    let count_costlier = |entry: &str| {
        let mut lab = Lab::ready(entry, 2);
        // Endpoint 0 gets a call outstanding: twice the cost of endpoint 1.
        let held = loop {
            let t = lab.unary();
            if t.endpoint() == EndpointId(0) {
                break t;
            }
            lab.done(t, Status::Cancelled, 0);
        };
        let costlier = (0..2000)
            .filter(|_| {
                let t = lab.unary();
                let e = t.endpoint();
                lab.done(t, Status::Cancelled, 0);
                e == EndpointId(0)
            })
            .count();
        lab.done(held, Status::Cancelled, 0);
        costlier
    };
    assert_eq!(count_costlier(&pe("")), 0);
    assert_eq!(
        count_costlier(&pe(r#""lblabAblation":{"sampling":"distinct"}"#)),
        0
    );
    // With replacement (A48's rule, kept as an ablation) both draws are the costlier one a
    // quarter of the time.
    let n = count_costlier(&pe(r#""lblabAblation":{"sampling":"with_replacement"}"#));
    assert!((400..600).contains(&n), "{n}");
}

#[test]
fn fails_fast_backend_attracts_traffic_without_outlier_detection() {
    // The documented failure mode: errors are fast, so they look cheap.
    let mut lab = Lab::ready(&pe(""), 4);
    for e in 0..4 {
        lab.backend(e).latency = 20 * MS;
    }
    lab.backend(3).latency = MS;
    lab.backend(3).failure_rate = 1.0;
    lab.drive(20 * SEC, 400);
    assert!(lab.share(3) > 0.4, "failing share {}", lab.share(3));
}

#[test]
fn pick_keeps_the_cheaper_of_the_drawn_endpoints_by_the_reported_cost() {
    // The picker compares costs in its own form (no exp per candidate); it must agree with the
    // cost `endpoint_view` reports, across decay-epoch rebases and in both decay modes. The
    // scripted draws may repeat an index, so the draw is A48's (with replacement).
    for entry in [
        pe(r#""decayTime":"1s","lblabAblation":{"sampling":"with_replacement"}"#),
        pe(r#""decayTime":"1s","lblabAblation":{"decay":"on_read","sampling":"with_replacement"}"#),
    ] {
        let n = 12u32;
        let mut lab = Lab::ready(&entry, n);
        for e in 0..n {
            lab.backend(e).latency = (1 + u64::from(e) * 7 % 11) * 3 * MS;
        }
        let mut checked = 0;
        for round in 0..40u64 {
            lab.drive(SEC / 4, 200);
            if round % 10 == 9 {
                lab.step(1_000 * SEC); // far beyond the rebase horizon of 64 decay times
            }
            for k in 0..50usize {
                let (i, j) = (k % n as usize, (k * 7 + round as usize) % n as usize);
                let (ci, cj) = (lab.cost(i as u32), lab.cost(j as u32));
                let t = match lab
                    .pick_with(RpcKind::Unary, &mut Script::indices(n as usize, &[i, j]))
                {
                    Pick::Endpoint(t) => t,
                    other => panic!("{other:?}"),
                };
                let got = t.endpoint().0 as usize;
                lab.done(t, Status::Cancelled, 0);
                if (ci - cj).abs() <= 1e-9 * ci.max(cj) {
                    continue; // too close to call in floating point
                }
                let want = if cj < ci { j } else { i };
                assert_eq!(got, want, "{entry}: costs {ci} vs {cj}");
                checked += 1;
            }
        }
        assert!(checked > 1000, "{checked}");
    }
}

// Pins of the semantics in DESIGN §2, each with the wrong variant it catches.

/// Picks at the current time with exactly these draws (indices into the READY list, in list
/// order, each out of `n`); the script must be used up.
fn pick_drawing(lab: &mut Lab, n: usize, draws: &[usize]) -> lblab_policy::Ticket {
    let mut script = Script::indices(n, draws);
    let t = match lab.pick_with(RpcKind::Unary, &mut script) {
        Pick::Endpoint(t) => t,
        other => panic!("{other:?}"),
    };
    assert!(script.is_empty(), "the pick drew fewer than {draws:?}");
    t
}

#[test]
fn peak_test_compares_with_the_decayed_estimate_and_on_read_with_the_stored_one() {
    // 100 ms sampled at 0; at 10 s it has decayed to 36.8 ms; a 50 ms sample completes then,
    // with no read of the cost in between (one READY endpoint: a pick reads nothing).
    // The proposal: 50 ms > decayed(now), a new peak. tower/Finagle (`on_read`): 50 ms is below
    // the stored 100 ms, so it blends: 100·w + 50·(1 − w) with w = e^-1.
    // Catches either mode using the other's peak test.
    let run = |decay: &str| {
        let mut lab = Lab::ready(&pe(&format!(r#""lblabAblation":{{"decay":"{decay}"}}"#)), 1);
        let t = pick_drawing(&mut lab, 1, &[]);
        lab.done(t, Status::Ok, 100 * MS);
        let t = pick_drawing(&mut lab, 1, &[]);
        lab.step(10 * SEC);
        lab.done(t, Status::Ok, 50 * MS);
        lab.cost(0)
    };
    assert_eq!(run("time_weighted"), 50e6, "a peak above decayed(now)");
    let w = (-1.0f64).exp();
    let blended = 100e6 * w + 50e6 * (1.0 - w);
    let got = run("on_read");
    assert!(
        close(got, blended, 1e-12),
        "on_read blends: {got} vs {blended}"
    );
}

#[test]
fn on_read_pick_reads_only_the_drawn_candidates() {
    // Three READY endpoints, tower's decay-on-read. Endpoint 2 takes a call at 0 (drawn first:
    // ties go to the first draw). At 5 s a pick draws endpoints 0 and 1 only: endpoint 2 is not
    // read, so its stamp stays at 0 and the 1 ms sample completing then blends over 5 s:
    // 30 ms·w + 1 ms·(1 − w), w = e^-0.5. Reading every READY endpoint at the pick would have
    // moved its stamp to 5 s and the sample would not count at all (30 ms·w).
    let mut lab = Lab::ready(&pe(r#""lblabAblation":{"decay":"on_read"}"#), 3);
    let t2 = pick_drawing(&mut lab, 3, &[2, 0]);
    assert_eq!(t2.endpoint(), EndpointId(2));
    lab.step(5 * SEC);
    let other = pick_drawing(&mut lab, 3, &[0, 1]);
    assert_ne!(other.endpoint(), EndpointId(2));
    lab.done(other, Status::Cancelled, 0);
    lab.done(t2, Status::Ok, MS);
    let w = (-0.5f64).exp();
    let want = 30e6 * w + 1e6 * (1.0 - w);
    let got = lab.cost(2);
    assert!(
        close(got, want, 1e-12),
        "{got} vs {want} (unread: {})",
        30e6 * w
    );
}

#[test]
fn pick_chooses_among_the_drawn_candidates_only() {
    // Endpoint 2 is the cheapest of all, but the draw is endpoints 0 and 1: the pick is the
    // cheaper of those two (endpoint 1; endpoint 0 has a call outstanding), never endpoint 2.
    let mut lab = Lab::ready(&pe(""), 3);
    let held0 = pick_drawing(&mut lab, 3, &[0, 1]);
    assert_eq!(held0.endpoint(), EndpointId(0));
    let held1 = pick_drawing(&mut lab, 3, &[1, 2]);
    assert_eq!(held1.endpoint(), EndpointId(1));
    let held0b = pick_drawing(&mut lab, 3, &[0, 1]);
    assert_eq!(
        held0b.endpoint(),
        EndpointId(0),
        "equal costs: the first draw"
    );
    // Now 0 has 2 outstanding, 1 has 1, 2 has none.
    let t = pick_drawing(&mut lab, 3, &[0, 1]);
    assert_eq!(t.endpoint(), EndpointId(1));
    for t in [held0, held1, held0b, t] {
        lab.done(t, Status::Cancelled, 0);
    }
}

#[test]
fn single_ready_endpoint_is_picked_without_a_draw_or_a_read() {
    // One READY endpoint (another listed but connecting): the pick takes it without drawing
    // (`pick_drawing` gives no draws and the script would panic on one) and, under decay-on-read,
    // without reading its cost: the 1 ms sample at 5 s still blends over the 5 s since the 100 ms
    // sample at 0. A read at the pick would have moved the stamp to 5 s (100 ms·w, no blend).
    for decay in ["time_weighted", "on_read"] {
        let mut lab = Lab::new(&pe(&format!(r#""lblabAblation":{{"decay":"{decay}"}}"#)));
        lab.set_endpoints(&[0, 1]);
        lab.set_state(0, Connectivity::Ready);
        lab.set_state(1, Connectivity::Connecting);
        let t = pick_drawing(&mut lab, 1, &[]);
        lab.done(t, Status::Ok, 100 * MS);
        lab.step(5 * SEC);
        let t = pick_drawing(&mut lab, 1, &[]);
        assert_eq!(t.endpoint(), EndpointId(0));
        lab.done(t, Status::Ok, MS);
        let w = (-0.5f64).exp();
        let want = 100e6 * w + 1e6 * (1.0 - w);
        let got = lab.cost(0);
        assert!(close(got, want, 1e-12), "{decay}: {got} vs {want}");
    }
}
