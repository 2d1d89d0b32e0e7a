//! `## Against gRPC's own implementations`: grpcio, grpc-js, grpc-go and grpc-java on lblab's
//! fleet.

use std::fmt::Write as _;

use crate::fmt::pct;
use crate::links;
use crate::load::Evidence;

/// gRPC's own clients beside lblab's implementations on one fleet.
pub(super) fn interop(out: &mut String, ev: &Evidence) {
    if ev.interop.is_empty() {
        return;
    }
    w!(
        out,
        "## Against gRPC's own implementations
"
    );
    let n = ev.interop.len();
    let shares = ev.interop.iter().filter(|r| r.shares_agree).count();
    let p50 = ev.interop.iter().filter(|r| r.p50_agrees).count();
    let p99 = ev.interop.iter().filter(|r| r.p99_agrees).count();
    let stacks: Vec<String> = [
        ("grpcio", "Python grpcio (gRPC C-core", "python"),
        ("grpc-js", "Node grpc-js (", "node"),
        ("grpc-go", "grpc-go (", "go"),
        ("grpc-java", "grpc-java (", "java"),
    ]
    .iter()
    .filter(|(client, _, _)| ev.interop.iter().any(|r| r.client == *client))
    .map(|(_, name, page)| {
        let sep = if name.ends_with('(') { "" } else { "; " };
        format!("{name}{sep}{})", links::code(&links::interop_page(page)))
    })
    .collect();
    w!(
        out,
        "The baselines here are lblab's own implementations, so real gRPC clients nobody here \
         wrote ran the same service configs on the same `lblab backend` fleet, one after the \
         other with lblab's load generator: {}. The traffic shares agree (the slow group's \
         within 3 points) in {shares} of {n} pairs, the p50s in {p50} and the p99s in {p99}: \
         the routing is the policies' doing, while each client's own cost per call (the pages' \
         CPU and dispatch-lateness columns) is part of every latency it measures.\n",
        stacks.join(", ")
    );
    w!(
        out,
        "| client | scenario | policy | lblab's | share to the slow group | p50 ms | p99 ms |\n\
         |---|---|---|---|---|---|---|"
    );
    let yes = |b: bool| if b { "" } else { " ✗" };
    for r in &ev.interop {
        w!(
            out,
            "| {} {} | {} | {} | {} | {} vs {} in `{}`{} | {:.2} vs {:.2}{} | {:.2} vs {:.2}{} |",
            r.client,
            r.version,
            r.scenario,
            r.policy,
            r.lblab_policy,
            pct(r.share),
            pct(r.lblab_share),
            r.slow_group,
            yes(r.shares_agree),
            r.p50_ms,
            r.lblab_p50_ms,
            yes(r.p50_agrees),
            r.p99_ms,
            r.lblab_p99_ms,
            yes(r.p99_agrees)
        );
    }
    w!(
        out,
        "\n✗: outside the agreement rule (shares: 3 points; latencies: {}). Each \
         page lists what each client lacks and explains the differences.\n",
        links::agreement_rule()
    );
}
