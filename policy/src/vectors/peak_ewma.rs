//! The vectors of peak_ewma_experimental: config cases and sequences (estimates and costs after every step).

use serde_json::{json, Value};

use super::format::{config_cases, document};
use super::recorder::{Sequences, SplitMix, MS, SEC};
use super::subject::Shows;
use crate::{Connectivity, Nanos, RpcKind, Status};

/// The policy these vectors are for.
pub(super) const POLICY: &str = crate::peak_ewma::NAME;
/// What its expectations show for each endpoint.
pub(super) const SHOWS: Shows = Shows::Estimate;

pub(super) fn file() -> Value {
    use Connectivity::*;
    use RpcKind::*;
    use Status::*;
    let policy = POLICY;
    let cases = config_cases(
        policy,
        &[
            json!({}),
            json!({"choiceCount": 3, "decayTime": "5s", "defaultRtt": "0.001s"}),
            json!({"choiceCount": 50}),
            json!({"choiceCount": 10, "decayTime": "0.5s"}),
            json!({"decayTime": "1.250s", "defaultRtt": "0.000000001s"}),
            // gRPC's rule: an unknown field is ignored.
            json!({"choiceCunt": 2}),
        ],
        &[
            json!({"choiceCount": 1}),
            json!({"choiceCount": 0}),
            json!({"choiceCount": -2}),
            json!({"choiceCount": "2"}),
            json!({"decayTime": "0s"}),
            json!({"decayTime": "-1s"}),
            json!({"decayTime": "10"}),
            json!({"defaultRtt": "0s"}),
            json!({"defaultRtt": 0.03}),
        ],
    );
    let mut s = Sequences {
        policy,
        shows: SHOWS,
        out: Vec::new(),
        // The first sequences encode the semantics as first written (the `defaultRtt` prior, decay
        // toward 0 on the wall clock, no error-aware cost), which the grpc-js port implements too.
        pin: Some(json!({"initial": "prior", "idle": "to_zero"})),
    };
    let defaults = json!({});
    s.add(
        "peak_then_decay_then_blend",
        "A slow sample jumps the estimate; it decays with time; a sample above the decayed \
         estimate (though below the stored one) is a new peak; a faster one blends by the time \
         since the last sample. Endpoint 1 is not READY meanwhile, so picks take endpoint 0 \
         without a draw.",
        defaults.clone(),
        |r| {
            r.ready_all(0, &[0, 1]);
            let a = r.unary(0, &[0, 1]);
            r.done(200 * MS, a, Ok, 200 * MS);
            r.check(5 * SEC);
            r.state(10 * SEC + 200 * MS, 1, Connecting);
            // 200 ms decayed over 10.08 s is 73.0 ms: an 80 ms sample is a peak.
            let b = r.unary(10 * SEC + 200 * MS, &[]);
            r.done(10 * SEC + 280 * MS, b, Ok, 80 * MS);
            // A fast sample 1.72 s later blends.
            let d = r.unary(12 * SEC, &[]);
            r.done(12 * SEC + 5 * MS, d, Ok, 5 * MS);
            r.state(12 * SEC + 500 * MS, 1, Ready);
            let e = r.unary(12 * SEC + 500 * MS, &[0, 1]);
            r.check(20 * SEC);
            r.done(21 * SEC, e, Ok, 8500 * MS);
        },
    );
    s.add(
        "cost_is_estimate_times_outstanding_plus_one",
        "Three endpoints; calls held open raise the cost; the pick keeps the cheaper of the drawn \
         candidates, the earlier draw on ties, never an undrawn one.",
        json!({"choiceCount": 2, "defaultRtt": "0.020s"}),
        |r| {
            r.ready_all(0, &[0, 1, 2]);
            let a = r.unary(MS, &[0, 1]);
            let b = r.unary(MS, &[1, 2]);
            let c = r.unary(MS, &[0, 1]);
            let d = r.unary(2 * MS, &[0, 1]);
            let e = r.unary(2 * MS, &[2, 0]);
            r.done(30 * MS, a, Ok, 29 * MS);
            r.done(31 * MS, b, Ok, 30 * MS);
            r.done(32 * MS, c, Cancelled, 31 * MS);
            r.done(40 * MS, d, DeadlineExceeded, 38 * MS);
            r.done(41 * MS, e, Ok, 39 * MS);
        },
    );
    s.add(
        "which_calls_count",
        "Streaming calls add no outstanding load and give no sample; cancelled unary calls end \
         their load but give no sample; DEADLINE_EXCEEDED and other errors are samples.",
        defaults.clone(),
        |r| {
            r.ready_all(0, &[0]);
            let st = r.pick(0, Streaming, &[]).expect("picked");
            r.done(600 * SEC, st, Ok, 600 * SEC);
            let a = r.unary(600 * SEC, &[]);
            r.done(601 * SEC, a, Cancelled, SEC);
            let b = r.unary(601 * SEC, &[]);
            r.done(603 * SEC, b, DeadlineExceeded, 2 * SEC);
            let c = r.unary(603 * SEC, &[]);
            r.done(603 * SEC + 10 * MS, c, Error, 10 * MS);
            let d = r.unary(604 * SEC, &[]);
            r.done(604 * SEC + 3 * SEC, d, Ok, 3 * SEC);
        },
    );
    s.add(
        "single_ready_endpoint_and_queue_or_fail",
        "Nothing READY and something connecting: queue. One READY: picked without a draw. All in \
         TRANSIENT_FAILURE: fail.",
        defaults.clone(),
        |r| {
            r.set_endpoints(0, &[0, 1]);
            r.pick(0, Unary, &[]);
            r.state(0, 0, Connecting);
            r.state(MS, 0, Ready);
            let a = r.unary(2 * MS, &[]);
            r.done(50 * MS, a, Ok, 48 * MS);
            r.state(60 * MS, 1, Ready);
            let b = r.unary(70 * MS, &[1, 0]);
            r.done(80 * MS, b, Ok, 10 * MS);
            r.state(90 * MS, 0, TransientFailure);
            r.state(90 * MS, 1, TransientFailure);
            r.pick(100 * MS, Unary, &[]);
        },
    );
    s.add(
        "reconnect_resets_and_stale_calls_are_ignored",
        "An endpoint that becomes READY again starts over at defaultRtt with nothing outstanding; \
         calls from its old connection complete without effect. READY to READY is no reconnect.",
        json!({"defaultRtt": "0.020s"}),
        |r| {
            r.ready_all(0, &[0, 1]);
            let a = r.unary(0, &[0, 1]);
            let b = r.unary(0, &[0, 1]);
            let c = r.unary(0, &[0, 1]);
            r.done(SEC, a, Ok, SEC);
            r.state(SEC, 0, TransientFailure);
            r.state(2 * SEC, 0, Connecting);
            r.state(3 * SEC, 0, Ready);
            r.done(4 * SEC, b, DeadlineExceeded, 4 * SEC);
            r.done(4 * SEC, c, Ok, 4 * SEC);
            let d = r.unary(5 * SEC, &[1, 0]);
            r.state(5 * SEC, 1, Ready);
            r.done(6 * SEC, d, Ok, SEC);
        },
    );
    s.add(
        "endpoint_list_updates",
        "Endpoints removed from the list are forgotten (their calls complete harmlessly); new ones \
         start IDLE; draws index the READY endpoints in the new list's order.",
        defaults.clone(),
        |r| {
            r.ready_all(0, &[0, 1, 2]);
            let a = r.unary(MS, &[2, 1]);
            let b = r.unary(MS, &[0, 1]);
            r.set_endpoints(2 * MS, &[3, 1, 0]);
            r.done(3 * MS, a, Ok, 2 * MS);
            r.state(4 * MS, 3, Ready);
            let c = r.unary(5 * MS, &[0, 2]);
            r.done(10 * MS, b, Ok, 9 * MS);
            r.done(11 * MS, c, Ok, 6 * MS);
            r.set_endpoints(12 * MS, &[2, 3]);
            r.state(12 * MS, 2, Ready);
            r.check(13 * MS);
        },
    );
    s.add(
        "choice_count_three",
        "choiceCount 3: three distinct draws; with two READY endpoints both are drawn.",
        json!({"choiceCount": 3}),
        |r| {
            r.ready_all(0, &[0, 1, 2, 3]);
            let a = r.unary(0, &[3, 2, 1]);
            let b = r.unary(0, &[3, 2, 1]);
            let c = r.unary(0, &[3, 2, 0]);
            r.done(40 * MS, a, Ok, 40 * MS);
            r.state(50 * MS, 0, Idle);
            r.state(50 * MS, 1, Idle);
            let d = r.unary(60 * MS, &[1, 0]);
            r.done(70 * MS, b, Ok, 70 * MS);
            r.done(70 * MS, c, Ok, 70 * MS);
            r.done(80 * MS, d, Ok, 20 * MS);
        },
    );
    s.add(
        "long_idle_gaps",
        "decayTime 1s and gaps of hundreds of decay times: the estimate decays toward 0 (never \
         below) and a sample after the gap is a peak.",
        json!({"decayTime": "1s"}),
        |r| {
            r.ready_all(0, &[0, 1]);
            let a = r.unary(0, &[0, 1]);
            r.done(100 * MS, a, Ok, 100 * MS);
            r.check(30 * SEC);
            r.check(200 * SEC);
            let b = r.unary(500 * SEC, &[1, 0]);
            r.done(500 * SEC + 10 * MS, b, Ok, 10 * MS);
            let c = r.unary(1000 * SEC, &[0, 1]);
            r.done(1000 * SEC + 2 * MS, c, Ok, 2 * MS);
        },
    );
    s.add(
        "random_trace",
        "Four endpoints, 300 steps of picks, completions (mostly OK) and connection flaps at \
         random (splitmix64 seed 11), every draw given.",
        json!({"decayTime": "2s", "defaultRtt": "0.010s"}),
        |r| {
            let ids = [0u32, 1, 2, 3];
            r.ready_all(0, &ids);
            let mut g = SplitMix(11);
            let mut open: Vec<(u32, Nanos)> = Vec::new();
            let mut now = 0;
            for _ in 0..300 {
                now += g.below(40) * MS + g.below(1000) * 1000;
                let roll = g.below(100);
                if roll < 45 && open.len() < 12 {
                    let ready = r.ready_count(now);
                    // One READY endpoint is picked without a draw.
                    let draws = if ready > 1 {
                        g.distinct(ready, 2)
                    } else {
                        Vec::new()
                    };
                    let kind = if g.below(10) == 0 { Streaming } else { Unary };
                    if let Some(call) = r.pick(now, kind, &draws) {
                        open.push((call, now));
                    }
                } else if roll < 93 && !open.is_empty() {
                    let (call, sent) = open.swap_remove(g.below(open.len() as u64) as usize);
                    let status = match g.below(20) {
                        0 => Cancelled,
                        1 => DeadlineExceeded,
                        2 => Error,
                        _ => Ok,
                    };
                    r.done(now, call, status, now - sent);
                } else {
                    let e = ids[g.below(4) as usize];
                    let state = match g.below(3) {
                        0 => TransientFailure,
                        1 => Connecting,
                        _ => Ready,
                    };
                    r.state(now, e, state);
                }
            }
            for (call, sent) in open {
                now += MS;
                r.done(now, call, Ok, now - sent);
            }
        },
    );
    // From here on the sequences encode the chosen default: the first estimate 0 with the
    // stall-aware cost, a peak only out of a stall, the idle decay on the pick clock, the
    // error-aware cost and failures that only hold the estimate.
    s.pin = None;
    s.add(
        "first_answer_sets_the_estimate",
        "The chosen default: an endpoint without a sample has the estimate 0; while calls are \
         outstanding on an endpoint its estimate is at least the time since it last answered or \
         became busy, so one whose first call is pending costs that call's age × (outstanding + \
         1); its first answer becomes the estimate outright; a cancelled call is no sample.",
        defaults.clone(),
        |r| {
            r.ready_all(0, &[0, 1, 2]);
            let a = r.unary(MS, &[0, 1]);
            let b = r.unary(MS, &[0, 1]);
            let c = r.unary(MS, &[2, 0]);
            let d = r.unary(2 * MS, &[0, 2]);
            r.done(5 * MS, a, Ok, 4 * MS);
            r.done(30 * MS, b, Ok, 29 * MS);
            r.done(31 * MS, c, Cancelled, 30 * MS);
            let e = r.unary(40 * MS, &[1, 0]);
            let f = r.unary(41 * MS, &[2, 0]);
            r.done(45 * MS, e, Ok, 5 * MS);
            r.done(60 * MS, d, Ok, 58 * MS);
            r.done(61 * MS, f, Ok, 20 * MS);
            r.check(SEC);
        },
    );
    s.add(
        "idle_decay_on_the_pick_clock",
        "The chosen default's pick clock alone (idleMaxTime 0s: no wall-clock bound), with \
         idlePicks 50 (lblab-only) to keep the sequence short: between \
         samples an estimate decays toward 0 by the larger of e^(−Δt/decayTime) and \
         e^(−picks/idlePicks), picks counted since its last sample (every pick of the policy \
         counts). 25 picks over 100 s barely decay the avoided endpoint 1, however long the wait; \
         100 more within 0.2 s decay it below endpoint 0, which then probes it.",
        json!({"lblabAblation": {"idlePicks": 50, "idleMaxTime": "0s"}}),
        |r| {
            r.ready_all(0, &[0, 1]);
            let a = r.unary(0, &[0, 1]);
            let b = r.unary(0, &[1, 0]);
            r.done(2 * MS, a, Ok, 2 * MS);
            r.done(20 * MS, b, Ok, 20 * MS);
            for k in 1..=25u64 {
                let c = r.unary(k * 4 * SEC, &[0, 1]);
                r.done(k * 4 * SEC + 2 * MS, c, Ok, 2 * MS);
            }
            r.check(101 * SEC);
            for k in 0..100u64 {
                let at = 102 * SEC + k * 2 * MS;
                let c = r.unary(at, &[0, 1]);
                r.done(at + MS, c, Ok, MS);
            }
            r.check(103 * SEC);
        },
    );
    s.add(
        "a_client_that_picks_rarely_probes_within_idle_max_time",
        "The chosen default as it is: the pick clock at 500 picks per second of decayTime (5000 \
         at 10 s) and idleMaxTime 6 × decayTime (60 s). The client picks every \
         4 s, so on the pick clock alone the avoided endpoint 1 (20 ms) would decay by only \
         e^(−picks/5000); idleMaxTime makes its idle time at least Δt × decayTime / idleMaxTime, \
         a decay of at least e^(−Δt/60 s). Endpoint 0 (2 ms, sampled every 4 s) keeps its \
         estimate; endpoint 1's falls below it after about 60 s × ln(10) ≈ 140 s, and that pick \
         probes it. It answers in 2 ms: healed, it is back.",
        json!({}),
        |r| {
            r.ready_all(0, &[0, 1]);
            let a = r.unary(0, &[0, 1]);
            let b = r.unary(0, &[1, 0]);
            r.done(2 * MS, a, Ok, 2 * MS);
            r.done(20 * MS, b, Ok, 20 * MS);
            for k in 1..=40u64 {
                let c = r.unary(k * 4 * SEC, &[0, 1]);
                r.done(k * 4 * SEC + 2 * MS, c, Ok, 2 * MS);
                if k == 25 {
                    r.check(101 * SEC);
                }
            }
            r.check(161 * SEC);
        },
    );
    s.add(
        "decay_time_scales_the_pick_clock_and_its_bound",
        "The chosen default with decayTime 1s: the pick clock's 500 picks per second of decayTime \
         make 500 picks per time constant, and idleMaxTime is 6 s. The client picks every 0.4 s \
         (2.5 picks a second, far below 500), so the avoided endpoint 1 (20 ms) decays at the \
         bound's pace, e^(−Δt/6 s): below endpoint 0's 2 ms after about 6 s × ln(10) ≈ 14 s, ten \
         times sooner than the same sequence at the default decayTime 10s (see \
         a_client_that_picks_rarely_probes_within_idle_max_time). That pick probes it; it answers \
         in 2 ms and is back.",
        json!({"decayTime": "1s"}),
        |r| {
            r.ready_all(0, &[0, 1]);
            let a = r.unary(0, &[0, 1]);
            let b = r.unary(0, &[1, 0]);
            r.done(2 * MS, a, Ok, 2 * MS);
            r.done(20 * MS, b, Ok, 20 * MS);
            for k in 1..=40u64 {
                let c = r.unary(k * 400 * MS, &[0, 1]);
                r.done(k * 400 * MS + 2 * MS, c, Ok, 2 * MS);
                if k == 25 {
                    r.check(10_100 * MS);
                }
            }
            r.check(16_100 * MS);
        },
    );
    s.add(
        "failures_raise_the_cost_until_a_probe_answers",
        "The chosen default's error-aware cost (errorPenalty 1; decayTime 1s to keep the sequence \
         short, and idlePicks 1 so that the pick clock hardly limits the decay of an endpoint \
         avoided for many picks; note that an estimate does not decay before the first pick after \
         its last sample, which decides the probe at 6.5 s): the estimate is \
         multiplied by 1/(1 − e), e the share of failed calls weighted as the RTT blend, at most \
         0.999. Endpoint 1 fails its first call fast: e = 1, so it costs 1000 × its 1 ms. It is \
         avoided until its decayed cost falls below endpoint 0's (about 6.7 s); the probe's OK \
         answer then outweighs the old share, which has decayed with the time since its last \
         answer, and it is back. A DEADLINE_EXCEEDED counts as a failure too, and being slower than \
         the estimate it raises it.",
        json!({"decayTime": "1s", "lblabAblation": {"idlePicks": 1}}),
        |r| {
            r.ready_all(0, &[0, 1]);
            let a = r.unary(0, &[0, 1]);
            r.done(2 * MS, a, Ok, 2 * MS);
            let b = r.unary(3 * MS, &[1, 0]);
            r.done(4 * MS, b, Error, MS);
            for k in 1..=16u64 {
                let at = k * 500 * MS;
                let c = r.unary(at, &[1, 0]);
                r.done(at + 2 * MS, c, Ok, 2 * MS);
            }
            let d = r.unary(8200 * MS, &[0, 1]);
            let e = r.unary(8200 * MS, &[1, 0]);
            r.done(8300 * MS, d, DeadlineExceeded, 100 * MS);
            r.done(8300 * MS, e, Ok, 100 * MS);
            r.check(9 * SEC);
        },
    );
    s.add(
        "a_failure_holds_the_estimate_and_raises_the_share_of_failures",
        "The chosen default's failures (failures \"hold\", errorSamples 10): a failed call is no RTT \
         sample. Endpoint 0 answers in 20 ms, endpoint 1 in 2 ms; then endpoint 1 fails 5 calls in \
         0.1 ms, 10 ms apart: its estimate stays 2 ms (the larger of the stored estimate and the \
         failure's time), and each failure weighs at least a tenth in the share of failures, so e \
         rises to about 0.41 and its cost to about 1.7 × its estimate, where 10 ms apart the time \
         weight alone would give each failure 0.1 %. Two calls then go to endpoint 1: an OK answer \
         in 2 ms lowers e by a tenth, and a failure slower than the estimate (a 50 ms \
         DEADLINE_EXCEEDED) raises the estimate at once; while it was pending, its age was the \
         estimate.",
        defaults.clone(),
        |r| {
            r.ready_all(0, &[0, 1]);
            let a = r.unary(0, &[0, 1]);
            let b = r.unary(0, &[1, 0]);
            r.done(20 * MS, a, Ok, 20 * MS);
            r.done(20 * MS, b, Ok, 2 * MS);
            for k in 1..=5u64 {
                let at = 20 * MS + k * 10 * MS;
                let c = r.unary(at, &[1, 0]);
                r.done(at + MS / 10, c, Error, MS / 10);
            }
            r.check(80 * MS);
            let d = r.unary(90 * MS, &[1, 0]);
            let e = r.unary(90 * MS, &[1, 0]);
            r.done(92 * MS, e, Ok, 2 * MS);
            r.check(92 * MS);
            r.done(140 * MS, d, DeadlineExceeded, 50 * MS);
            r.check(140 * MS);
        },
    );
    s.add(
        "a_slow_answer_jumps_the_estimate_only_out_of_a_stall",
        "The chosen default's peak: a slow answer replaces the estimate only if the endpoint gave \
         no other answer while that call was pending (a stall, as a pause makes); otherwise it \
         blends like any other sample (the endpoint's own tail). Both endpoints answer in 2 ms. \
         Endpoint 0 then gets a call that takes 50 ms while a later call to it answers in 2 ms: \
         the 50 ms blends in. Endpoint 1 gets a call that takes 50 ms while a later one to it \
         also waits (answering after it): the 50 ms is the new estimate. While they are pending, \
         each endpoint's estimate is at least the time since it last answered or became busy.",
        defaults.clone(),
        |r| {
            r.ready_all(0, &[0, 1]);
            let a = r.unary(0, &[0, 1]);
            let b = r.unary(0, &[1, 0]);
            r.done(2 * MS, a, Ok, 2 * MS);
            r.done(2 * MS, b, Ok, 2 * MS);
            let slow0 = r.unary(10 * MS, &[0, 1]);
            let slow1 = r.unary(10 * MS, &[1, 0]);
            let later0 = r.unary(12 * MS, &[0, 1]);
            let later1 = r.unary(12 * MS, &[1, 0]);
            r.done(14 * MS, later0, Ok, 2 * MS);
            r.check(40 * MS);
            r.done(60 * MS, slow0, Ok, 50 * MS);
            r.done(60 * MS, slow1, Ok, 50 * MS);
            r.done(61 * MS, later1, Ok, 49 * MS);
            r.check(100 * MS);
        },
    );
    document(
        policy,
        "peak_ewma_experimental: per endpoint a peak-EWMA estimate of unary RTT; cost = \
         decayed estimate × (outstanding + 1); pick the cheapest of choiceCount distinct draws. \
         The first sequences pin the semantics as first written (lblabAblation initial prior, idle \
         to_zero, no error-aware cost); the later ones encode lblab's default since its design \
         search's third round (the first estimate 0 with a stall-aware cost, a peak only out of a \
         stall, idle decay on the pick clock, the error-aware cost, failures that hold the \
         estimate).",
        cases,
        s.out,
    )
}
