//! The evidence's answers in one place: the recommendation and the proposal's three questions,
//! each in a sentence or two with the figures behind it read from the results. results/README.md
//! opens with them, its questions section ends each question with the same answer, and the gRFC
//! draft states them, so that every document gives the same answers.

use std::fmt::Write as _;

use crate::fmt::num;
use crate::links;
use crate::load::Evidence;
use crate::text::PROPOSAL;

macro_rules! w {
    ($out:expr, $($arg:tt)*) => { let _ = writeln!($out, $($arg)*); };
}

/// The ratio of `a`'s median `metric` to `b`'s in `scenario`, if both were measured.
fn ratio(ev: &Evidence, scenario: &str, a: &str, b: &str, metric: &str) -> Option<f64> {
    let a = ev.interval(scenario, a, metric)?.median;
    let b = ev.interval(scenario, b, metric)?.median;
    (b > 0.0).then_some(a / b)
}

/// Question 1: should it be a gRFC for every language?
pub fn q1(ev: &Evidence) -> String {
    let runs: Vec<&crate::load::InteropRow> = ev
        .interop
        .iter()
        .filter(|r| r.policy.ends_with("(port)") && r.lblab_policy == PROPOSAL)
        .collect();
    let measured: Vec<&str> = ["grpc-java", "grpc-go", "grpc-js"]
        .into_iter()
        .filter(|c| runs.iter().any(|r| r.client == *c))
        .collect();
    let fleets = match measured.as_slice() {
        [] => String::new(),
        some => format!(
            "; on the lab's fleets the {} port{} sent the slow backends the share lblab's own \
             client did (within 3 points) in {} of {} runs",
            some.join(", "),
            if some.len() > 1 { "s" } else { "" },
            runs.iter().filter(|r| r.shares_agree).count(),
            runs.len()
        ),
    };
    format!(
        "**Yes.** The policy needs only what every stack's picker already has: the pick, the \
         end of the call, its status and a clock. Ports to grpc-java 1.41 (`interop/java`), \
         grpc-go 1.33 (`interop/go`) and grpc-js (`interop/node`) built on each stack's public \
         load-balancing API replay every conformance sequence (`conformance/`) exactly as the \
         Rust policy{fleets}; the one difference between stacks is whether a picker sees a \
         call's kind (question 3)."
    )
}

/// Question 2: should it map to Envoy's `PeakEwma` through xDS (A52)?
pub fn q2() -> String {
    "**Yes, with gRPC's semantics, stated.** A cluster whose policy is Envoy's `PeakEwma` gets \
     `peak_ewma_experimental` with Envoy's `decay_time` and two choices; `default_rtt`, \
     `aggregation_interval`, `max_samples_per_host` and `penalty_value` have no counterpart and \
     are ignored. A52 refuses to map ring_hash when gRPC cannot honour its hash function because \
     every client and proxy must send a key to the same host; a latency-aware pick is each \
     client's own, so an Envoy proxy and a gRPC client running different estimators for one \
     cluster break nothing. The draft lists what differs: Envoy's estimate has no peak and \
     freezes while a host gets no samples, so it never gives a healed backend its traffic back."
        .to_string()
}

/// Question 3: may only unary RPCs count as samples and load?
pub fn q3(ev: &Evidence) -> String {
    let tail = ratio(
        ev,
        "streaming-mix",
        "peak_ewma(streams=outstanding)",
        PROPOSAL,
        "p999_ms",
    );
    let share = ratio(
        ev,
        "streaming-mix",
        "peak_ewma(streams=outstanding)",
        PROPOSAL,
        "slow_share",
    );
    let cost = match (tail, share) {
        (Some(t), Some(s)) => format!(
            " (in `streaming-mix`, counting open streams as load gave {}× the p99.9 and sent \
             {}× the share to the slow backend)",
            num(t),
            num(s)
        ),
        _ => String::new(),
    };
    format!(
        "**Yes, and the gRFC should require it.** A stream's duration is not a latency, and \
         counting open streams as load is not harmless{cost}. Only grpc-java's picker sees the \
         method type at pick time; grpc-go's `PickInfo`/`DoneInfo` and grpc-js's picker see \
         neither the kind nor, at the end, a timing. There a client stream interceptor marks \
         the call before the pick (the grpc-go and grpc-js ports do), which the gRFC should \
         specify for those stacks and for C-core."
    )
}

/// The recommendation, in a paragraph.
pub fn recommendation(ev: &Evidence) -> String {
    let p99 = |p: &str| ev.interval("one-slow", p, "p99_ms").map(|i| num(i.median));
    let headline = match (p99(PROPOSAL), p99("round_robin"), p99("least_request")) {
        (Some(pe), Some(rr), Some(lr)) => format!(
            " With one of 20 backends ten times slower its p99 is {pe} ms against round_robin's \
             {rr} and least_request's {lr} ms ({}).",
            links::scenario("one-slow")
        ),
        _ => String::new(),
    };
    format!(
        "**Adopt `peak_ewma_experimental` in every language as an experimental policy**, \
         guarded by an environment variable as A48 guarded least_request, with two config \
         fields: `choiceCount` (default 2, distinct draws) and `decayTime` (default 10 s, which \
         trades how soon a healed backend gets its traffic back against the tail latency of the \
         calls that find out). `defaultRtt` is dropped: the first estimate is 0 and a pending \
         call's age prices an endpoint that has not answered yet. The semantics are the round \
         three default of `docs/design.md`: a peak EWMA that jumps only on a stall, decays on \
         the pick clock (four constants in all), sees a stall while it happens, and costs \
         failures as the expected time to a success.{headline} Use it where backends slow down \
         without failing or reporting load; wrap it in `outlier_detection` to eject backends \
         that fail; prefer weighted_round_robin where servers report ORCA utilization and \
         capacity differs steadily, and least_request where every call costs the same and \
         latency does not show capacity (where it loses: below)."
    )
}

/// results/README.md's first section: the recommendation and the three answers.
pub fn first_screen(out: &mut String, ev: &Evidence) {
    w!(out, "## The recommendation\n");
    w!(out, "{}\n", recommendation(ev));
    w!(
        out,
        "1. *Should it be a gRFC for every language?* {}",
        q1(ev)
    );
    w!(
        out,
        "2. *Should it map to Envoy's `PeakEwma` through xDS (A52)?* {}",
        q2()
    );
    w!(
        out,
        "3. *May only unary RPCs count as samples and load?* {}\n",
        q3(ev)
    );
}
