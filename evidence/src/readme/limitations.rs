//! `## Limitations`.

use std::fmt::Write as _;

use crate::fmt::num;
use crate::load::Evidence;
use crate::text;

pub(super) fn limitations(out: &mut String, ev: &Evidence) {
    w!(out, "## Limitations\n");
    // Each scenario's real run records its machine; the evidence may span several (runs redone
    // later on another VM), each named with how many scenarios ran on it.
    let mut hosts: Vec<(String, usize)> = Vec::new();
    for h in ev
        .scenarios
        .iter()
        .filter_map(|s| s.compare.as_ref()?.harness.as_ref())
        .map(|h| &h.host)
        .filter(|h| h.logical_cores > 0)
    {
        let name = format!(
            "{} logical cores, {}, Linux {}",
            h.logical_cores, h.cpu_model, h.kernel
        );
        match hosts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => hosts.push((name, 1)),
        }
    }
    let machine = match hosts.as_slice() {
        [] => "one machine (the harness files of these runs do not record which)".to_string(),
        [(one, _)] => format!("one machine ({one})"),
        many => format!(
            "one machine at a time, {} machines over the scenarios ({})",
            many.len(),
            many.iter()
                .map(|(n, c)| format!(
                    "{n}: {c} {}",
                    if *c == 1 { "scenario" } else { "scenarios" }
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    };
    let busy = text::range(ev.scenarios.iter().filter_map(|s| {
        let h = s.compare.as_ref()?.harness.as_ref()?;
        text::range(h.policies.iter().map(|p| p.machine.busy_pct)).map(|r| r.1)
    }));
    w!(
        out,
        "- **One machine, loopback.** Every real run is on {machine}, with the load generator and \
         the whole fleet sharing it{}. Loopback has no network queueing, loss or jitter: the \
         network in `zones` is an emulated delay.",
        busy.map_or(String::new(), |(_, hi)| format!(
            " (CPU busy up to {} % during a policy's run)",
            num(hi)
        ))
    );
    w!(
        out,
        "- **Emulated service times.** Backends sleep for a drawn service time behind a worker \
         pool; they do no real work, so a slow backend is slow by construction, not because of \
         a real GC or a real noisy neighbour."
    );
    w!(
        out,
        "- **Short, single real runs.** Each real run is one run per policy, shorter than the \
         simulation (lengths above); only `one-slow` is repeated. The simulated intervals are \
         over seeds of the model, not over machines."
    );
    let ported = ev.interop.iter().any(|r| r.policy.contains("(port)"));
    if ev.interop.is_empty() {
        w!(
            out,
            "- **The baselines are lblab's.** round_robin, least_request, weighted_round_robin \
             and outlier_detection are lblab's implementations of the gRFCs, checked against \
             their texts, not gRPC's own code running on this fleet; tower's balancer is the only \
             implementation here that nobody in the lab wrote."
        );
    } else {
        let clients: Vec<String> = ev
            .interop
            .iter()
            .map(|r| format!("{} {}", r.client, r.version))
            .fold(Vec::new(), |mut v, c| {
                if !v.contains(&c) {
                    v.push(c);
                }
                v
            });
        w!(
            out,
            "- **The scenario tables' baselines are lblab's.** round_robin, least_request, \
             weighted_round_robin and outlier_detection there are lblab's implementations of the \
             gRFCs. gRPC's own ({}) ran on the same fleet only in the shorter, single-seed \
             comparison [above](#against-grpcs-own-implementations), and none of them ran \
             least_request.",
            clients.join(", ")
        );
    }
    w!(
        out,
        "- **Not covered:** several client hosts in the committed runs (the clients share one \
         process; `lblab report --merge` combines load generators, but no run here uses it), \
         real networks, retries and hedging, xDS control planes and EDS weights, autoscaling, \
         servers that shed load{}.\n",
        if ported {
            ""
        } else {
            ", and a second-language implementation of the proposal"
        }
    );
}
