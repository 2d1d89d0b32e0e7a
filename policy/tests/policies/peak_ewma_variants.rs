//! `peak_ewma_experimental`'s variations of the first estimate (`lblabAblation.initial`) and of the
//! decay without samples (`lblabAblation.idle`): what each does to a cold start, to an avoided
//! endpoint and to the probes a client with few picks sends it.

use lblab_policy::config::parse_service_config;
use lblab_policy::{EndpointId, Status};

use crate::harness::{Lab, MS, SEC};

fn variant(ablation: &str) -> String {
    format!(r#"{{"peak_ewma_experimental":{{"lblabAblation":{{{ablation}}}}}}}"#)
}

/// Four endpoints, three answering in 1 ms and endpoint 3 in 20 ms.
fn one_slow(entry: &str) -> Lab {
    let mut lab = Lab::ready(entry, 4);
    for e in 0..3 {
        lab.backend(e).latency = MS;
    }
    lab.backend(3).latency = 20 * MS;
    lab
}

#[test]
fn finagles_penalty_learns_a_cold_fleet_from_one_answer_each() {
    // 20 calls/s for 10 s from cold (rarely a call outstanding, so only the estimates steer).
    // With the blended prior (30 ms) every endpoint looks alike until samples have blended in;
    // with the first sample replacing the prior, an endpoint not yet answered still costs
    // defaultRtt (30 ms), above the slow one's 20 ms, so the slow one wins against it; with
    // Finagle's penalty every endpoint is tried once at once and the slow one is avoided from its
    // first answer on.
    let share = |initial: &str| {
        let mut lab = one_slow(&variant(&format!(r#""initial":"{initial}""#)));
        lab.drive(10 * SEC, 20);
        lab.finish();
        lab.share(3)
    };
    let (prior, first, penalty) = (share("prior"), share("first_sample"), share("penalty"));
    assert!(penalty <= 0.01, "{penalty}");
    assert!(
        penalty < prior && penalty < first,
        "{prior} {first} {penalty}"
    );
}

#[test]
fn the_first_sample_replaces_the_prior_outright() {
    let mut lab = Lab::ready(&variant(r#""initial":"first_sample""#), 1);
    assert_eq!(lab.cost(0), 30.0 * MS as f64, "defaultRtt until a sample");
    let t = lab.unary();
    lab.step(2 * MS);
    lab.done(t, Status::Ok, 2 * MS);
    assert_eq!(lab.cost(0), 2.0 * MS as f64);
}

#[test]
fn penalty_costs_nothing_idle_and_more_than_anything_while_waiting_for_a_first_answer() {
    let mut lab = Lab::ready(&variant(r#""initial":"penalty""#), 2);
    assert_eq!(lab.cost(0), 0.0);
    let t = lab.unary();
    let e = t.endpoint().0;
    assert!(lab.cost(e) >= 1e300, "{}", lab.cost(e));
    // The other endpoint gets the next call: nothing is known of either, but one is waiting.
    let u = lab.unary();
    assert_ne!(u.endpoint().0, e);
    lab.step(3 * MS);
    lab.done(t, Status::Ok, 3 * MS);
    assert_eq!(
        lab.cost(e),
        3.0 * MS as f64,
        "the first answer is the estimate"
    );
    let other = u.endpoint().0;
    lab.done(u, Status::Cancelled, 0);
    assert_eq!(lab.cost(other), 0.0, "a cancelled call is no sample");
}

#[test]
fn a_frozen_estimate_never_decays_so_an_avoided_endpoint_is_never_probed() {
    let mut lab = one_slow(&variant(r#""initial":"first_sample","idle":"frozen""#));
    lab.drive(2 * SEC, 200);
    let slow = lab.cost(3);
    lab.step(60 * SEC);
    assert_eq!(lab.cost(3), slow, "no samples, no change");
    lab.reset_picks();
    lab.drive(60 * SEC, 200);
    assert_eq!(lab.picks(3), 0, "never probed again");
}

/// Probes of the slow endpoint in `seconds` at `rate` calls/s, after a warm start.
fn probes(entry: &str, rate: u64, seconds: u64) -> u64 {
    let mut lab = one_slow(entry);
    lab.drive(5 * SEC, rate);
    lab.reset_picks();
    lab.drive(seconds * SEC, rate);
    lab.picks(3)
}

#[test]
fn the_pick_clock_bounds_the_probes_of_a_client_with_few_picks() {
    // Toward zero on the wall clock a client re-probes every decayTime × ln(20) ≈ 30 s whatever
    // its rate; on the pick clock a client with 4 picks/s decays 1000/4 = 250× slower than that.
    // (Finagle's penalty, so that every endpoint is tried once at once: with first_sample an
    // endpoint that got no call yet costs defaultRtt, 30 ms, above the slow one's 20 ms.)
    let to_zero = variant(r#""initial":"penalty","idle":"to_zero""#);
    let pick_clock =
        variant(r#""initial":"penalty","idle":"pick_clock","idlePicks":1000,"idleMaxTime":"0s""#);
    assert!(
        probes(&to_zero, 4, 600) >= 10,
        "{}",
        probes(&to_zero, 4, 600)
    );
    assert!(
        probes(&pick_clock, 4, 600) <= 1,
        "{}",
        probes(&pick_clock, 4, 600)
    );
    // A busy client decays on the wall clock either way: the two probe alike.
    let (a, b) = (probes(&to_zero, 500, 120), probes(&pick_clock, 500, 120));
    assert!(a >= 3 && b >= 3 && a.abs_diff(b) <= a / 2 + 2, "{a} {b}");
}

#[test]
fn idle_max_time_bounds_how_long_a_client_with_few_picks_avoids_an_endpoint() {
    // The same client at 4 picks/s: the pick clock alone probes at most once in 600 s, toward
    // zero on the wall clock every ~30 s; with the default idleMaxTime (60 s) in between, about
    // every 60 s × ln(20 ms / 1 ms).
    let alone = probes(
        &variant(r#""initial":"penalty","idle":"pick_clock","idlePicks":1000,"idleMaxTime":"0s""#),
        4,
        600,
    );
    let bounded = probes(
        &variant(r#""initial":"penalty","idle":"pick_clock","idlePicks":1000"#),
        4,
        600,
    );
    let to_zero = probes(&variant(r#""initial":"penalty","idle":"to_zero""#), 4, 600);
    assert!(alone <= 1, "{alone}");
    assert!(bounded >= 2 && bounded < to_zero, "{bounded} vs {to_zero}");
}

#[test]
fn a_healed_endpoint_comes_back_under_the_pick_clock_at_a_busy_client() {
    let mut lab = one_slow(&variant(r#""initial":"penalty","idle":"pick_clock""#));
    lab.drive(5 * SEC, 500);
    lab.backend(3).latency = MS; // heals
    lab.drive(40 * SEC, 500);
    lab.reset_picks();
    lab.drive(10 * SEC, 500);
    assert!(lab.share(3) > 0.2, "{}", lab.share(3));
}

#[test]
fn variant_fields_are_checked_and_normalized() {
    let c = parse_service_config(&format!(
        r#"{{"loadBalancingConfig":[{}]}}"#,
        variant(r#""initial":"penalty","idle":"pick_clock","idlePicks":50"#)
    ))
    .unwrap();
    let json = c.to_json().to_string();
    for want in [
        r#""initial":"penalty""#,
        r#""idle":"pick_clock""#,
        r#""idlePicks":50"#,
    ] {
        assert!(json.contains(want), "{json}");
    }
    for (bad, says) in [
        (r#""initial":"none""#, "initial"),
        (r#""idle":"floor""#, "idle"),
        (r#""idlePicks":0"#, "idlePicks"),
        (r#""decay":"on_read","idle":"frozen""#, "does not combine"),
    ] {
        let e = parse_service_config(&format!(r#"{{"loadBalancingConfig":[{}]}}"#, variant(bad)))
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn with_one_probe_an_endpoint_waiting_for_an_answer_costs_its_undecayed_estimate() {
    let one = variant(r#""initial":"penalty","idle":"to_zero","probes":"one""#);
    let many = variant(r#""initial":"penalty","idle":"to_zero""#);
    for (entry, undecayed) in [(one, true), (many, false)] {
        let mut lab = Lab::ready(&entry, 1);
        let t = lab.unary();
        lab.step(20 * MS);
        lab.done(t, Status::Ok, 20 * MS);
        lab.step(10 * SEC);
        let _probe = lab.unary();
        let want = if undecayed {
            20.0
        } else {
            20.0 * (-1.0f64).exp()
        } * MS as f64
            * 2.0;
        let got = lab.cost(0);
        assert!((got / want - 1.0).abs() < 1e-9, "{entry}: {got} vs {want}");
    }
}

#[test]
fn without_the_peak_a_slow_answer_blends_in_like_any_other() {
    let jump = variant(r#""initial":"penalty","idle":"to_zero""#);
    let blend = variant(r#""initial":"penalty","idle":"to_zero","peak":"blend""#);
    let mut costs = Vec::new();
    for entry in [jump, blend] {
        let mut lab = Lab::ready(&entry, 1);
        let t = lab.unary();
        lab.step(2 * MS);
        lab.done(t, Status::Ok, 2 * MS); // the first answer: 2 ms
        lab.step(SEC);
        let t = lab.unary();
        lab.step(20 * MS);
        lab.done(t, Status::Ok, 20 * MS); // a slow one, 1.02 s later
        costs.push(lab.cost(0));
    }
    assert_eq!(costs[0], 20.0 * MS as f64, "the peak");
    let w = (-1.02f64 / 10.0).exp();
    let want = 2.0 * MS as f64 * w + (1.0 - w) * 20.0 * MS as f64;
    assert!(
        (costs[1] / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        costs[1]
    );
}

/// One endpoint: a first answer of 2 ms, then after `gap` a slow one of 20 ms; its cost then.
fn after_a_slow_answer(entry: &str, gap: u64) -> Lab {
    let mut lab = Lab::ready(entry, 1);
    let t = lab.unary();
    lab.step(2 * MS);
    lab.done(t, Status::Ok, 2 * MS);
    lab.step(gap);
    let t = lab.unary();
    lab.step(20 * MS);
    lab.done(t, Status::Ok, 20 * MS);
    lab
}

#[test]
fn a_decaying_peak_marks_a_slow_answer_for_its_own_time_constant_then_the_ewma_rules() {
    let entry = variant(r#""idle":"to_zero","peak":"decaying","peakDecayTime":"1s""#);
    let mut lab = after_a_slow_answer(&entry, SEC);
    // At once: the peak, 20 ms.
    assert_eq!(lab.cost(0), 20.0 * MS as f64);
    // One peak time constant later the peak is 20/e ms; the EWMA (τ = 10 s) holds the slow
    // answer with weight 1 − e^(−1.02/10) and decays over the same second.
    lab.step(SEC);
    let peak = 20.0 * (-1.0f64).exp();
    let w = (-1.02f64 / 10.0).exp();
    let ewma = (2.0 * w + (1.0 - w) * 20.0) * (-0.1f64).exp();
    let want = peak.max(ewma) * MS as f64;
    assert!(
        (lab.cost(0) / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        lab.cost(0)
    );
    // Five peak time constants on, only the EWMA is left.
    lab.step(4 * SEC);
    let want = (2.0 * w + (1.0 - w) * 20.0) * (-0.5f64).exp() * MS as f64;
    assert!(
        (lab.cost(0) / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        lab.cost(0)
    );
}

#[test]
fn a_blend_time_weighs_a_sample_against_the_stored_estimate() {
    // With blendTime 1 s a slow answer 1.02 s after the last blends with weight 1 − e^(−1.02),
    // into the stored estimate; the cost then decays with decayTime (10 s) while idle.
    let entry = variant(r#""idle":"to_zero","peak":"blend","blendTime":"1s""#);
    let mut lab = after_a_slow_answer(&entry, SEC);
    let w = (-1.02f64).exp();
    let want = (2.0 * w + (1.0 - w) * 20.0) * MS as f64;
    assert!(
        (lab.cost(0) / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        lab.cost(0)
    );
    lab.step(10 * SEC);
    let decayed = want * (-1.0f64).exp();
    assert!(
        (lab.cost(0) / decayed - 1.0).abs() < 1e-9,
        "{}",
        lab.cost(0)
    );
}

#[test]
fn an_idle_decay_time_decays_an_avoided_estimate_faster_than_samples_blend() {
    // idleDecayTime 5 s: after 10 s without samples the 20 ms peak costs 20/e² ms, not 20/e.
    let entry = variant(r#""idle":"to_zero","idleDecayTime":"5s""#);
    let mut lab = after_a_slow_answer(&entry, SEC);
    assert_eq!(lab.cost(0), 20.0 * MS as f64, "the peak");
    lab.step(10 * SEC);
    let want = 20.0 * (-2.0f64).exp() * MS as f64;
    assert!(
        (lab.cost(0) / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        lab.cost(0)
    );
    // A fast answer then blends into the stored estimate with the blend's own weight, e^(−10/10).
    let t = lab.unary();
    lab.step(MS);
    lab.done(t, Status::Ok, MS);
    let w = (-10.001f64 / 10.0).exp();
    let want = (20.0 * w + (1.0 - w) * 1.0) * MS as f64;
    assert!(
        (lab.cost(0) / want - 1.0).abs() < 1e-6,
        "{} vs {want}",
        lab.cost(0)
    );
}

#[test]
fn the_time_constant_fields_are_checked_and_normalized_only_when_given() {
    let norm = |ablation: &str| {
        parse_service_config(&format!(
            r#"{{"loadBalancingConfig":[{}]}}"#,
            variant(ablation)
        ))
        .map(|c| c.to_json().to_string())
    };
    let json =
        norm(r#""peak":"decaying","peakDecayTime":"0.5s","blendTime":"2.5s","idleDecayTime":"5s""#)
            .unwrap();
    for want in [
        r#""peak":"decaying""#,
        r#""peakDecayTime":"0.5s""#,
        r#""blendTime":"2.5s""#,
        r#""idleDecayTime":"5s""#,
    ] {
        assert!(json.contains(want), "{want} in {json}");
    }
    let plain = norm("").unwrap();
    for absent in ["peakDecayTime", "blendTime", "idleDecayTime"] {
        assert!(!plain.contains(absent), "{absent} in {plain}");
    }
    for (bad, says) in [
        (r#""peakDecayTime":"0s""#, "peakDecayTime"),
        (r#""blendTime":"soon""#, "blendTime"),
        (r#""idleDecayTime":"-1s""#, "idleDecayTime"),
        (r#""decay":"on_read","blendTime":"1s""#, "one time constant"),
    ] {
        let e = norm(bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn an_error_penalty_costs_a_fast_failing_endpoint_as_a_retry_would() {
    // Two endpoints answering in 1 ms; endpoint 1 fails every call. With errorPenalty 1 its cost
    // is rtt / (1 − e), e the time-weighted share of failures, so it is avoided although it
    // answers as fast; without the penalty it looks like the other.
    let share = |ablation: &str| {
        let mut lab = Lab::ready(&variant(ablation), 2);
        lab.backend(0).latency = MS;
        lab.backend(1).latency = MS;
        lab.backend(1).failure_rate = 1.0;
        lab.drive(10 * SEC, 200);
        lab.finish();
        lab.share(1)
    };
    let (plain, penalised) = (
        share(r#""idle":"to_zero","errorPenalty":0"#),
        share(r#""idle":"to_zero","errorPenalty":1"#),
    );
    assert!(plain > 0.3, "{plain}");
    assert!(penalised < 0.05, "{penalised}");
}

#[test]
fn the_error_penalty_is_checked_and_normalized() {
    let norm = |ablation: &str| {
        parse_service_config(&format!(
            r#"{{"loadBalancingConfig":[{}]}}"#,
            variant(ablation)
        ))
        .map(|c| c.to_json().to_string())
    };
    assert!(norm(r#""errorPenalty":1.5"#)
        .unwrap()
        .contains(r#""errorPenalty":1.5"#));
    // The default has it at 1; 0 turns it off; the semantics as first written and tower's decay on
    // read have none unless it is given.
    assert!(norm("").unwrap().contains(r#""errorPenalty":1.0"#));
    assert!(!norm(r#""errorPenalty":0"#)
        .unwrap()
        .contains("errorPenalty"));
    assert!(!norm(r#""initial":"prior""#)
        .unwrap()
        .contains("errorPenalty"));
    assert!(!norm(r#""decay":"on_read""#)
        .unwrap()
        .contains("errorPenalty"));
    assert!(norm(r#""initial":"prior","errorPenalty":2"#)
        .unwrap()
        .contains(r#""errorPenalty":2.0"#));
    assert!(norm("").unwrap().contains(r#""failures":"hold""#));
    assert!(norm(r#""initial":"prior""#)
        .unwrap()
        .contains(r#""failures":"sample""#));
    assert!(norm(r#""failures":"hold""#)
        .unwrap()
        .contains(r#""failures":"hold""#));
    assert!(norm(r#""decay":"on_read","failures":"hold""#)
        .unwrap_err()
        .to_string()
        .contains("failures"));
    for bad in [
        r#""failures":"skip""#,
        r#""errorPenalty":-1"#,
        r#""errorPenalty":"high""#,
        r#""errorPenalty":1e9"#,
    ] {
        let e = norm(bad).unwrap_err().to_string();
        let field = bad.split('"').nth(1).unwrap_or_default();
        assert!(e.contains(field), "{bad}: {e}");
    }
}

#[test]
fn an_endpoint_whose_failures_stop_is_probed_again_and_comes_back() {
    // The default's error-aware cost keeps an endpoint that failed every call out while it fails.
    // When it stops failing it is still avoided at first; its estimate decays like any avoided
    // one's until it is probed (for a share of failures of 1, after ln(1000 × its RTT / the
    // others' cost) × decayTime on a client busy enough for the wall clock, 1,000 picks/s here),
    // and the probe's OK answer outweighs the old share, which is weighted by the time since its
    // last answer: it is back, and being the faster it takes more than half.
    let mut lab = Lab::ready(&variant(""), 2);
    lab.backend(0).latency = MS;
    lab.backend(1).latency = 900 * MS / 1000;
    lab.backend(1).failure_rate = 1.0;
    lab.drive(5 * SEC, 1000);
    lab.backend(1).failure_rate = 0.0;
    lab.reset_picks();
    lab.drive(5 * SEC, 1000);
    assert!(
        lab.share(1) < 0.01,
        "still avoided at first: {}",
        lab.share(1)
    );
    // ln(900) × 10 s = 68 s after its failure.
    lab.drive(65 * SEC, 1000);
    lab.reset_picks();
    lab.drive(10 * SEC, 1000);
    lab.finish();
    assert!(lab.share(1) > 0.5, "back: {}", lab.share(1));
}

#[test]
fn held_failures_never_lower_an_estimate_and_slow_ones_raise_it() {
    // One endpoint measured at 10 ms. Under failures "hold" a failure in 1 ms leaves its cost
    // where the last answer put it (restarting the idle decay there), a failure in 50 ms raises it
    // at once, and only an OK answer lowers it; under "sample" the fast failure lowers it.
    let after = |failures: &str, answers: &[(Status, u64)]| {
        let mut lab = Lab::ready(&variant(&format!(r#""failures":"{failures}""#)), 1);
        let t = lab.unary();
        lab.done(t, Status::Ok, 10 * MS);
        for &(status, ms) in answers {
            lab.step(SEC);
            let t = lab.unary();
            lab.done(t, status, ms * MS);
        }
        lab.cost(0)
    };
    let measured = after("hold", &[]);
    let held = after("hold", &[(Status::Error, 1)]);
    // The held estimate is the stored 10 ms as of now, times the error factor 1 / (1 − e).
    assert!(held > measured, "{held} {measured}");
    assert!(after("sample", &[(Status::Error, 1)]) < held);
    assert!(after("hold", &[(Status::Error, 50)]) > 4.0 * measured);
    let healed = after("hold", &[(Status::Error, 1), (Status::Ok, 1)]);
    assert!(healed < held, "{healed} {held}");
}

#[test]
fn held_failures_keep_a_fast_failing_endpoint_out() {
    // Three endpoints answering in 1 ms; endpoint 2 fails 90 % of its calls in 50 µs. Its fast
    // failures pull a sampled estimate down against the error factor; held, they do not.
    let share = |failures: &str| {
        let mut lab = Lab::ready(
            &variant(&format!(r#""failures":"{failures}","errorSamples":0"#)),
            3,
        );
        for e in 0..3 {
            lab.backend(e).latency = MS;
        }
        lab.backend(2).failure_rate = 0.9;
        lab.backend(2).failure_latency = Some(MS / 20);
        lab.drive(30 * SEC, 500);
        lab.finish();
        lab.share(2)
    };
    let (sampled, held) = (share("sample"), share("hold"));
    assert!(held < sampled / 2.0, "held {held}, sampled {sampled}");
}

#[test]
fn blend_samples_lets_a_busy_endpoint_forget_its_own_tail_within_so_many_answers() {
    // One endpoint answering in 1 ms, once in 50 ms (its tail), then 300 times 1 ms apart. The
    // default blends each sample with weight 1 − e^(−1 ms/10 s): the peak is still there after
    // 0.3 s. With blendSamples 100 each weighs at least 1/100, and 300 answers bring it down
    // to about 50 × e^(−3) + 1 ms.
    let after = |ablation: &str| {
        let mut lab = Lab::ready(&variant(ablation), 1);
        let t = lab.unary();
        lab.done(t, Status::Ok, MS);
        let t = lab.unary();
        lab.done(t, Status::Ok, 50 * MS);
        for _ in 0..300 {
            lab.step(MS);
            let t = lab.unary();
            lab.done(t, Status::Ok, MS);
        }
        lab.cost(0) / MS as f64
    };
    let (default, adapted) = (after(""), after(r#""blendSamples":100"#));
    assert!(default > 40.0, "{default}");
    assert!((1.5..5.0).contains(&adapted), "{adapted}");
    // Normalized as given; fewer than 2 samples is refused.
    let norm = parse_service_config(&format!(
        r#"{{"loadBalancingConfig":[{}]}}"#,
        variant(r#""blendSamples":100"#)
    ))
    .map(|c| c.to_json().to_string());
    assert!(norm.unwrap().contains(r#""blendSamples":100"#));
    for bad in [
        r#""blendSamples":1"#,
        r#""blendSamples":-3"#,
        r#""errorSamples":1"#,
    ] {
        let e = parse_service_config(&format!(r#"{{"loadBalancingConfig":[{}]}}"#, variant(bad)))
            .unwrap_err()
            .to_string();
        let field = bad.split('"').nth(1).unwrap_or_default();
        assert!(e.contains(field), "{bad}: {e}");
    }
}

#[test]
fn error_samples_let_failures_after_an_ok_probe_raise_the_share_again() {
    // An endpoint measured at 1 ms answers OK after 20 s of silence, which weighs almost all of
    // the share of failures, then fails 10 calls 10 ms apart. By the time weight alone each
    // failure adds about 0.1 %; with errorSamples 10 each adds at least a tenth.
    let factor = |ablation: &str| {
        let mut lab = Lab::ready(&variant(ablation), 1);
        let t = lab.unary();
        lab.done(t, Status::Ok, MS);
        lab.step(20 * SEC);
        let t = lab.unary();
        lab.done(t, Status::Ok, MS);
        let measured = lab.cost(0);
        for _ in 0..10 {
            lab.step(10 * MS);
            let t = lab.unary();
            lab.done(t, Status::Error, MS);
        }
        lab.cost(0) / measured
    };
    let (time_only, floored) = (
        factor(r#""errorSamples":0"#),
        factor(r#""errorSamples":10"#),
    );
    assert!(time_only < 1.05, "{time_only}");
    assert!(floored > 2.0, "{floored}");
}

#[test]
fn a_stall_is_seen_while_it_happens_not_only_when_its_answer_returns() {
    // Both endpoints answered in 1 ms. A call to one of them has now been pending for 50 ms: with
    // the stall-aware cost that endpoint costs at least the call's age (times outstanding + 1);
    // without it, its 1 ms estimate. Its answer ends the stall term.
    let cost_after_pending = |ablation: &str| {
        let mut lab = Lab::ready(&variant(ablation), 2);
        for _ in 0..2 {
            let t = lab.unary();
            lab.step(MS);
            lab.done(t, Status::Ok, MS);
        }
        let t = lab.unary();
        let e = t.endpoint().0;
        lab.step(50 * MS);
        let pending = lab.cost(e);
        lab.done(t, Status::Ok, 50 * MS);
        (pending, lab.cost(e))
    };
    let (with, after) = cost_after_pending(r#""idle":"to_zero","stall":true"#);
    let (without, _) = cost_after_pending(r#""idle":"to_zero","stall":false"#);
    assert!(with >= 2.0 * 50.0 * MS as f64, "{with}");
    assert!(without < 2.0 * 2.0 * MS as f64, "{without}");
    // After the answer (50 ms, a peak) the estimate is the answer itself, no stall term on top.
    assert!((after - 50.0 * MS as f64).abs() < 1.0, "{after}");
}

#[test]
fn a_first_estimate_of_zero_with_the_stall_term_costs_a_first_calls_age() {
    let mut lab = Lab::ready(
        &variant(r#""initial":"zero","idle":"to_zero","stall":true"#),
        2,
    );
    assert_eq!(lab.cost(0), 0.0);
    let t = lab.unary();
    let e = t.endpoint().0;
    lab.step(5 * MS);
    assert_eq!(
        lab.cost(e),
        2.0 * 5.0 * MS as f64,
        "the first call's age, times 2"
    );
    lab.done(t, Status::Ok, 5 * MS);
    assert_eq!(
        lab.cost(e),
        5.0 * MS as f64,
        "the first answer is the estimate"
    );
}

#[test]
fn an_ignored_failure_leaves_the_estimate_where_a_held_one_restarts_its_decay() {
    // A 10 ms answer, then 10 s later a failure after 0.1 ms. "ignore" leaves the estimate as it
    // was, decaying from the answer; "hold" restores the undecayed 10 ms as of the failure.
    let cost = |failures: &str| {
        let entry = variant(&format!(
            r#""idle":"to_zero","errorPenalty":0,"failures":"{failures}""#
        ));
        let mut lab = Lab::ready(&entry, 1);
        let t = lab.unary();
        lab.step(10 * MS);
        lab.done(t, Status::Ok, 10 * MS);
        lab.step(10 * SEC);
        let t = lab.unary();
        lab.step(MS / 10);
        lab.done(t, Status::Error, MS / 10);
        lab.cost(0)
    };
    let (ignore, hold) = (cost("ignore"), cost("hold"));
    assert!((hold - 10.0 * MS as f64).abs() < 1e3, "{hold}");
    let decayed = 10.0 * MS as f64 * (-1.0f64).exp();
    assert!(
        (ignore / decayed - 1.0).abs() < 0.01,
        "{ignore} vs {decayed}"
    );
}

#[test]
fn the_new_settings_parse_and_normalize() {
    let cfg = parse_service_config(&format!(
        r#"{{"loadBalancingConfig":[{}]}}"#,
        variant(r#""initial":"zero","failures":"ignore","stall":true"#)
    ))
    .expect("valid");
    let json = cfg.to_json().to_string();
    for want in [
        r#""initial":"zero""#,
        r#""failures":"ignore""#,
        r#""stall":true"#,
    ] {
        assert!(json.contains(want), "{json} lacks {want}");
    }
    let bad = parse_service_config(&format!(
        r#"{{"loadBalancingConfig":[{}]}}"#,
        variant(r#""stall":"yes""#)
    ));
    assert!(bad.is_err());
}

#[test]
fn a_refutable_peak_is_dropped_by_a_typical_answer_to_a_later_call_only() {
    // 2 ms answers, then a 50 ms one: the peak. A 2 ms answer to a call sent before the peak (it
    // was pending through the same stall) keeps it; one to a call sent after it drops it.
    let entry = variant(r#""idle":"to_zero","peak":"refutable","errorPenalty":0"#);
    let mut lab = Lab::ready(&entry, 1);
    for _ in 0..10 {
        let t = lab.unary();
        lab.step(2 * MS);
        lab.done(t, Status::Ok, 2 * MS);
    }
    let before = lab.unary();
    let slow = lab.unary();
    lab.step(50 * MS);
    lab.done(slow, Status::Ok, 50 * MS);
    assert!(lab.cost(0) >= 50.0 * MS as f64, "{}", lab.cost(0));
    lab.done(before, Status::Ok, 2 * MS);
    assert!(
        lab.cost(0) >= 40.0 * MS as f64,
        "pending through the stall: {}",
        lab.cost(0)
    );
    let after = lab.unary();
    lab.step(2 * MS);
    lab.done(after, Status::Ok, 2 * MS);
    assert!(lab.cost(0) < 5.0 * MS as f64, "refuted: {}", lab.cost(0));
}

#[test]
fn a_stalled_peak_jumps_on_a_stall_and_blends_a_slow_answer_among_others() {
    // Answers of 2 ms; then two calls pending at once. In the first case the slow one (50 ms)
    // answers while the endpoint answered nothing else since it was sent: a stall, the estimate
    // jumps. In the second a fast call sent after it answers first: the endpoint kept answering,
    // so the slow answer is its own tail and blends in.
    let cost_after = |other_first: bool| {
        let entry = variant(r#""idle":"to_zero","peak":"stalled","errorPenalty":0"#);
        let mut lab = Lab::ready(&entry, 1);
        for _ in 0..10 {
            let t = lab.unary();
            lab.step(2 * MS);
            lab.done(t, Status::Ok, 2 * MS);
        }
        let slow = lab.unary();
        lab.step(10 * MS);
        let fast = lab.unary();
        lab.step(2 * MS);
        let fast = if other_first {
            lab.done(fast, Status::Ok, 2 * MS);
            None
        } else {
            Some(fast)
        };
        lab.step(38 * MS);
        lab.done(slow, Status::Ok, 50 * MS);
        if let Some(fast) = fast {
            lab.done(fast, Status::Ok, 40 * MS);
        }
        lab.cost(0)
    };
    let (stall, tail) = (cost_after(false), cost_after(true));
    assert!(stall >= 40.0 * MS as f64, "a stall jumps: {stall}");
    assert!(tail < 5.0 * MS as f64, "a tail blends: {tail}");
}

#[test]
fn a_peak_ratio_jumps_on_a_pause_and_blends_a_tail_a_few_times_the_estimate() {
    // Answers of 2 ms, then one slow answer while nothing else was pending (quiet): with
    // peakRatio 8, 10 ms (5×) blends in and 50 ms (25×) jumps; without it both jump.
    let cost_after = |ratio: &str, slow: u64| {
        let entry = variant(&format!(
            r#""idle":"to_zero","peak":"stalled","errorPenalty":0{ratio}"#
        ));
        let mut lab = Lab::ready(&entry, 1);
        for _ in 0..10 {
            let t = lab.unary();
            lab.step(2 * MS);
            lab.done(t, Status::Ok, 2 * MS);
        }
        let t = lab.unary();
        lab.step(slow * MS);
        lab.done(t, Status::Ok, slow * MS);
        lab.cost(0)
    };
    let ratio = r#","peakRatio":8"#;
    assert!(cost_after(ratio, 10) < 5.0 * MS as f64, "a tail blends");
    assert!(cost_after(ratio, 50) >= 40.0 * MS as f64, "a pause jumps");
    assert!(
        cost_after("", 10) >= 9.0 * MS as f64,
        "without a ratio, any quiet answer above"
    );
}

#[test]
fn a_peak_ratio_is_checked_and_normalized() {
    let normalized = |ablation: &str| {
        parse_service_config(&format!(
            r#"{{"loadBalancingConfig":[{}]}}"#,
            variant(ablation)
        ))
        .map(|c| c.to_json().to_string())
        .map_err(|e| e.to_string())
    };
    assert!(normalized(r#""peakRatio":8"#)
        .unwrap()
        .contains(r#""peakRatio":8"#));
    assert!(!normalized(r#""peakRatio":0"#)
        .unwrap()
        .contains("peakRatio"));
    let err = normalized(r#""peakRatio":1"#).unwrap_err();
    assert!(err.contains("peakRatio"), "{err}");
    let err = normalized(r#""peak":"blend","peakRatio":4"#).unwrap_err();
    assert!(
        err.contains("peakRatio") && err.contains("\"stalled\""),
        "{err}"
    );
}

#[test]
fn a_pending_probe_shows_a_stall_on_an_endpoint_with_no_call() {
    // Both endpoints answered in 1 ms; endpoint 0 then has no call outstanding. A probe sent to
    // it 50 ms ago and not answered makes its cost at least the probe's age; without probes
    // (the default) an endpoint with no call costs its decayed estimate. The probe's answer ends
    // the stall term and gives no RTT sample.
    let entry = variant(r#""idle":"to_zero","probeInterval":"0.1s""#);
    let mut lab = Lab::ready(&entry, 2);
    assert_eq!(lab.policy.probe_interval(), Some(100 * MS));
    for _ in 0..4 {
        let t = lab.unary();
        lab.step(MS);
        lab.done(t, Status::Ok, MS);
    }
    let before = lab.cost(0);
    let now = lab.now;
    lab.policy.on_probe_sent(now, EndpointId(0));
    lab.step(50 * MS);
    assert!(lab.cost(0) >= 50.0 * MS as f64, "{}", lab.cost(0));
    assert!(lab.cost(1) < 2.0 * MS as f64, "{}", lab.cost(1));
    let now = lab.now;
    lab.policy.on_probe_done(now, EndpointId(0), true);
    let after = lab.cost(0);
    assert!(after <= before, "no sample: {after} vs {before}");
    assert_eq!(
        Lab::ready(&variant(r#""idle":"to_zero""#), 1)
            .policy
            .probe_interval(),
        None
    );
}

#[test]
fn a_prompt_probe_answer_ends_the_stall_term_and_a_stalled_one_does_not() {
    // Answers of 2 ms; then a call pending for 50 ms. A probe answered 1 ms after it was sent,
    // 10 ms before now, shows the endpoint is not stalled: the stall term counts from its answer.
    // A probe that took 30 ms (it waited through the same stall) shows nothing.
    let cost_with = |probe_rtt: Option<u64>| {
        let entry = variant(r#""idle":"to_zero","errorPenalty":0,"probeInterval":"1s""#);
        let mut lab = Lab::ready(&entry, 1);
        for _ in 0..10 {
            let t = lab.unary();
            lab.step(2 * MS);
            lab.done(t, Status::Ok, 2 * MS);
        }
        let sent = lab.now;
        let _slow = lab.unary();
        if let Some(rtt) = probe_rtt {
            lab.step_to(sent + 39 * MS - rtt);
            let now = lab.now;
            lab.policy.on_probe_sent(now, EndpointId(0));
            lab.step(rtt);
            let now = lab.now;
            lab.policy.on_probe_done(now, EndpointId(0), true);
        }
        lab.step_to(sent + 50 * MS);
        lab.cost(0) / 2.0
    };
    let none = cost_with(None);
    assert!(none >= 50.0 * MS as f64, "the call's age: {none}");
    let prompt = cost_with(Some(MS));
    assert!(
        (prompt - 11.0 * MS as f64).abs() < 0.1 * MS as f64,
        "since the probe's answer: {prompt}"
    );
    let stalled = cost_with(Some(30 * MS));
    assert!(
        stalled >= 50.0 * MS as f64,
        "a stalled probe shows nothing: {stalled}"
    );
}

#[test]
fn probes_need_the_stall_term_and_normalize() {
    let parse = |ablation: &str| {
        parse_service_config(&format!(
            r#"{{"loadBalancingConfig":[{}]}}"#,
            variant(ablation)
        ))
    };
    let cfg = parse(r#""probeInterval":"0.25s""#).expect("valid");
    let json = cfg.to_json().to_string();
    assert!(json.contains(r#""probeInterval":"0.25s""#), "{json}");
    assert!(
        cfg.build_concurrent().is_none(),
        "probes need the owner: no concurrent form"
    );
    let err = parse(r#""probeInterval":"1s","stall":false"#).expect_err("needs stall");
    assert!(err.to_string().contains("probeInterval"), "{err}");
}
