//! `## Cost`: client CPU per call and pick time per policy.

use std::fmt::Write as _;

use crate::fmt::num;
use crate::links;
use crate::load::Evidence;
use crate::text;

pub(super) fn cost(out: &mut String, ev: &Evidence) {
    w!(out, "## Cost\n");
    w!(
        out,
        "Client CPU per call is measured by the real harness (the client's CPU time over the \
         calls it made, per policy run); pick time by criterion ({}, `policy/benches/pick.rs`). \
         Per policy, the median over the compared scenarios and the median of its per-scenario \
         ratio to round_robin's (same scenario, same run):\n",
        links::code(links::PICK_BENCH_CSV)
    );
    w!(out, "| policy | scenarios | client CPU per call µs | over round_robin | pick + completion ns, 20 endpoints | 1,000 endpoints |");
    w!(out, "|---|---:|---:|---:|---:|---:|");
    let harnesses: Vec<&crate::load::Harness> = ev
        .scenarios
        .iter()
        .filter_map(|s| s.compare.as_ref()?.harness.as_ref())
        .collect();
    let mut policies: Vec<String> = Vec::new();
    for h in &harnesses {
        for p in &h.policies {
            if !policies.contains(&p.policy) {
                policies.push(p.policy.clone());
            }
        }
    }
    for p in &policies {
        let cpu: Vec<f64> = harnesses
            .iter()
            .filter_map(|h| h.policies.iter().find(|x| &x.policy == p))
            .map(|x| x.client_cpu_per_call_us)
            .collect();
        let ratio: Vec<f64> = harnesses
            .iter()
            .filter_map(|h| {
                let a = h.policies.iter().find(|x| &x.policy == p)?;
                let b = h.policies.iter().find(|x| x.policy == "round_robin")?;
                Some(a.client_cpu_per_call_us / b.client_cpu_per_call_us)
            })
            .collect();
        let bench = bench_name(p);
        let pick = |n: usize| {
            ev.pick_bench
                .iter()
                .find(|r| Some(r.bench.as_str()) == bench && r.endpoints == n)
                .map_or("–".into(), |r| num(r.median_ns))
        };
        w!(
            out,
            "| {p} | {} | {} | {} | {} | {} |",
            cpu.len(),
            text::median(&cpu).map_or("–".into(), num),
            text::median(&ratio).map_or("–".into(), |r| format!("{}×", num(r))),
            pick(20),
            pick(1000)
        );
    }
    w!(
        out,
        "\nThe client's CPU per call is dominated by gRPC itself (HTTP/2, protobuf, the runtime); \
         the policy's pick is tens of nanoseconds of it. Single real runs of the same policy \
         differ by several per cent on this shared machine, so ratios close to 1 do not resolve \
         a difference.\n"
    );
}

/// The benchmark behind a policy label, when there is one.
fn bench_name(label: &str) -> Option<&'static str> {
    match label {
        "round_robin" => Some("round_robin"),
        "least_request" => Some("least_request"),
        "weighted_round_robin" => Some("weighted_round_robin"),
        "peak_ewma" => Some("peak_ewma"),
        _ => None,
    }
}
