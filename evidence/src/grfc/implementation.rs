//! The draft's notes for implementers: what a pick and its completion cost, single-threaded and
//! shared by a client's threads beside the bench's peak-EWMA floor, and what the picker keeps per
//! endpoint, from `results/bench/`.

use std::fmt::Write as _;

use crate::fmt::num;
use crate::load::Evidence;
use crate::text::PROPOSAL;

macro_rules! w {
    ($out:expr, $($arg:tt)*) => { let _ = writeln!($out, $($arg)*); };
}

/// The "Notes for implementers" section.
pub(super) fn implementation(out: &mut String, ev: &Evidence) {
    w!(out, "### Notes for implementers\n");
    let pick = |b: &str| {
        ev.pick_bench
            .iter()
            .find(|r| r.bench == b && r.endpoints == 1000)
            .map_or("–".into(), |r| num(r.median_ns))
    };
    w!(
        out,
        "- Keep time in integer nanoseconds and clamp a clock that goes backwards; the estimate \
         is a float.\n\
         - A pick and its completion take {} ns at 1,000 endpoints in lblab's single-threaded \
         policy against round_robin's {} (`bench/policy-pick.csv`): a few exponentials per call \
         (the idle weight of each drawn candidate, the blend weight of the sample).\n\
         - The picker needs each endpoint's estimate and outstanding count; both are updated on \
         call completion, which every gRPC implementation already observes for least_request.\n\
         - Forget the estimate when an endpoint becomes READY again, so a restarted backend is \
         learnt afresh from its first answer, not judged by its last life.\n\
         - The pick clock needs one counter per policy instance, incremented on every pick, and \
         one per endpoint, set on every sample; the larger of the two weights costs one \
         exponential per drawn candidate.\n\
         - The stall-aware cost and the quiet test need one more time per endpoint (`p`), set by \
         the pick that makes the endpoint busy and by every answer; a concurrent picker keeps it \
         outside the estimate's lock, moving only forward.\n",
        pick(PROPOSAL),
        pick("round_robin")
    );
    let shared = |p: &str, threads: u32| {
        ev.shared_pick
            .iter()
            .find(|r| r.policy == p && r.threads == threads && r.endpoints == 1000)
    };
    let ratio = |p: &str, threads: u32| {
        shared(p, threads)
            .and_then(|r| r.vs_round_robin)
            .map_or("–".into(), |x| format!("{x:.1}×"))
    };
    let ns = |p: &str, threads: u32| shared(p, threads).map_or("–".into(), |r| num(r.median_ns));
    let bytes = |p: &str, kind: &str| {
        ev.memory
            .iter()
            .find(|r| r.policy == p && r.kind == kind)
            .map_or("–".into(), |r| format!("{:.0}", r.bytes_per_endpoint))
    };
    // The yardstick the bench keeps beside it: the least any peak-EWMA p2c picker does.
    let floor = shared("peak_ewma_floor", 1).map_or(String::new(), |_| {
        format!(
            " The least any peak-EWMA power-of-two-choices picker does (the bench's \
             `peak_ewma_floor`: tower's estimate in three relaxed atomics per endpoint over a \
             READY list that never changes, no generations, a sample lost when two completions \
             race) takes {} ns with one thread, {} round_robin's; what the shared picker \
             costs above it is its semantics and its synchronization.",
            ns("peak_ewma_floor", 1),
            ratio("peak_ewma_floor", 1),
        )
    });
    w!(
        out,
        "- Shared by the threads of a client as lblab's real client picks with it \
         (`policy/src/peak_ewma/shared.rs`: each endpoint's estimate in atomics that a pick reads \
         without a lock or a write, behind a sequence lock that completions of the same endpoint \
         take in turn; its outstanding count an atomic; the READY list behind a sequence lock of \
         its own; an atomic pick counter), a pick and its completion take {} ns of CPU time with one thread and {} ns of CPU time per call with two at 1,000 \
         endpoints: {} and {} round_robin's (one atomic index), against least_request's {} and \
         {} (atomic counts) and a single lock around weighted_round_robin's {} and {} \
         (`bench/shared-pick.csv`, 1 to 8 threads on this 2-core machine). The estimate takes \
         {} bytes per endpoint shared ({} in lblab's single-threaded policy table), against \
         least_request's {} (`bench/memory.csv`). With one thread that is about what the \
         single-threaded policy costs (above); of it the estimate's arithmetic (an exponential \
         per candidate read, one per sample) is about a third, and the shared state's atomics \
         and sequence locks the rest (`bench/README.md`).{}\n",
        ns(PROPOSAL, 1),
        ns(PROPOSAL, 2),
        ratio(PROPOSAL, 1),
        ratio(PROPOSAL, 2),
        ratio("least_request", 1),
        ratio("least_request", 2),
        ratio("weighted_round_robin", 1),
        ratio("weighted_round_robin", 2),
        bytes(PROPOSAL, "shared"),
        bytes(PROPOSAL, "sans-io"),
        bytes("least_request", "shared"),
        floor,
    );
}
