//! `## The proposal's three questions`: every language, Envoy's `PeakEwma` through xDS, and
//! whether only unary RPCs may count.

use std::fmt::Write as _;

use lblab_stats::Interval;

use crate::fmt::{iv, num, pct};
use crate::links;
use crate::load::Evidence;
use crate::text::{list_or_none, surely_lower, verdict, PROPOSAL};

pub(super) fn questions(out: &mut String, ev: &Evidence) {
    w!(out, "## The proposal's three questions\n");
    w!(out, "### Should it be a gRFC for every language?\n");
    let pick = |b: &str, n: usize| {
        ev.pick_bench
            .iter()
            .find(|r| r.bench == b && r.endpoints == n)
            .map(|r| r.median_ns)
    };
    let ns: Vec<String> = [20, 1000]
        .iter()
        .filter_map(|n| {
            Some(format!(
                "{} ns against round_robin's {} at {n} endpoints",
                num(pick(PROPOSAL, *n)?),
                num(pick("round_robin", *n)?)
            ))
        })
        .collect();
    w!(
        out,
        "Nothing the policy does needs more than a gRPC picker already has: the endpoint, the \
         start and end time of the call, its status and, for the unary-only rule, its kind \
         (of the four stacks, only grpc-java gives it to a picker; question 3). A pick and its completion cost {} ({}): an exponential and a \
         division for each candidate's idle decay and one more exponential for the sample, well \
         under a microsecond. The implementation here is sans-IO and runs unchanged in the \
         simulator; a concurrent form with the same arithmetic (tested event for event against \
         it) is what the tonic client picks with, without a lock over the policy. {}\n",
        if ns.is_empty() {
            "–".into()
        } else {
            ns.join(", ")
        },
        links::code(links::PICK_BENCH_CSV),
        port_sentence(ev)
    );
    w!(out, "Answer: {}\n", crate::answers::q1(ev));
    envoy(out, ev);
    streams(out, ev);
}

/// What the ports show on the lab's fleets, from `results/interop/{node,go,java}.csv`.
fn port_sentence(ev: &Evidence) -> String {
    let port: Vec<&crate::load::InteropRow> = ev
        .interop
        .iter()
        .filter(|r| r.policy.ends_with("(port)") && r.lblab_policy == "peak_ewma")
        .collect();
    if port.is_empty() {
        return "A second-language port is not in the lab's results, so this answer rests on the \
                Rust implementation and on what the algorithm needs."
            .into();
    }
    let mut stacks: Vec<String> = Vec::new();
    for r in &port {
        let stack = format!("{} {}", r.client, r.version);
        if !stacks.contains(&stack) {
            stacks.push(stack);
        }
    }
    let agreeing = port.iter().filter(|r| r.shares_agree).count();
    let p99 = port.iter().filter(|r| r.p99_agrees).count();
    let shares: Vec<String> = port
        .iter()
        .map(|r| {
            format!(
                "{} in {} `{}` {} vs {}",
                r.client,
                r.scenario,
                r.slow_group,
                pct(r.share),
                pct(r.lblab_share)
            )
        })
        .collect();
    format!(
        "Ports to {}, each on its stack's public load-balancing API ({}), replay the conformance \
         vectors ({}) and, on the same fleet as lblab's client, send the slow backends {} of \
         the traffic lblab's peak_ewma does ({}; shares agree within 3 points in {} of {} \
         scenario runs, p99s in {}). What grpc-go and grpc-js do not give a picker is the call's \
         kind: those ports learn it from an interceptor (question 3 below).",
        stacks.join(", "),
        ["interop/java", "interop/go", "interop/node"]
            .map(links::repo_dir)
            .join(", "),
        links::repo_dir("conformance"),
        if agreeing == port.len() {
            "the same share"
        } else {
            "a comparable share"
        },
        shares.join(", "),
        agreeing,
        port.len(),
        p99
    )
}

fn envoy(out: &mut String, ev: &Evidence) {
    w!(
        out,
        "### Should it map to Envoy's `PeakEwma` through xDS (A52)?\n"
    );
    w!(
        out,
        "`lblab check` maps an Envoy `Cluster` whose policy is \
         `envoy.extensions.load_balancing_policies.peak_ewma.v3alpha.PeakEwma` onto \
         `peak_ewma_experimental`, and the A52 `TypedStruct` form too; the gRFC draft lists \
         what the mapping drops. `envoy_peak_ewma` runs Envoy's own algorithm (no peak, no decay \
         while idle, whole-millisecond samples, every request in flight counted) in the same \
         scenarios:\n"
    );
    w!(out, "| scenario | p99 ms: peak_ewma | envoy_peak_ewma | p99.9 ms: peak_ewma | envoy_peak_ewma | to faulty backends: peak_ewma | envoy_peak_ewma |");
    w!(out, "|---|---:|---:|---:|---:|---:|---:|");
    let mut envoy_worse = Vec::new();
    let mut envoy_better = Vec::new();
    for s in &ev.scenarios {
        let g = |p: &str, m: &str| ev.interval(&s.name, p, m);
        let (Some(pe), Some(en)) = (g(PROPOSAL, "p99_ms"), g("envoy_peak_ewma", "p99_ms")) else {
            continue;
        };
        match verdict(pe, en) {
            "lower" => envoy_worse.push(format!("`{}`", s.name)),
            "higher" => envoy_better.push(format!("`{}`", s.name)),
            _ => {}
        }
        let b = |a: Option<Interval>, b: Option<Interval>| match (a, b) {
            (Some(a), Some(b)) if surely_lower(a, b) => (format!("**{}**", iv(a)), iv(b)),
            (Some(a), Some(b)) if surely_lower(b, a) => (iv(a), format!("**{}**", iv(b))),
            (a, b) => (a.map_or("–".into(), iv), b.map_or("–".into(), iv)),
        };
        let p99 = b(Some(pe), Some(en));
        let p999 = b(g(PROPOSAL, "p999_ms"), g("envoy_peak_ewma", "p999_ms"));
        let share = |p: &str| g(p, "slow_share").map_or("–".into(), |i| pct(i.median));
        w!(
            out,
            "| {0} | {1} | {2} | {3} | {4} | {5} | {6} |",
            links::scenario(&s.name),
            p99.0,
            p99.1,
            p999.0,
            p999.1,
            share(PROPOSAL),
            share("envoy_peak_ewma")
        );
    }
    w!(
        out,
        "\nBold: lower beyond the intervals' doubt. Envoy's algorithm has the higher p99 in {} \
         and the lower in {}. Its estimate freezes while a host gets no samples, which suits a \
         backend that stays slow and never gives back the traffic of one that recovers; its \
         whole-millisecond samples leave a sub-millisecond fleet without estimates.\n",
        list_or_none(&envoy_worse),
        list_or_none(&envoy_better)
    );
    w!(out, "Answer: {}\n", crate::answers::q2());
}

/// The stream-counting variants, in the order of the table.
pub const STREAM_VARIANTS: [(&str, &str); 4] = [
    (PROPOSAL, "ignore (proposal)"),
    ("peak_ewma(streams=outstanding)", "outstanding"),
    ("peak_ewma(streams=count)", "count"),
    ("least_request", "least_request"),
];

fn streams(out: &mut String, ev: &Evidence) {
    w!(out, "### May only unary RPCs count as samples and load?\n");
    w!(
        out,
        "`lblabAblation.streams` runs the three answers: `ignore` (the proposal: streams are \
         neither load nor samples), `outstanding` (they are load while open but give no sample: \
         what a language that cannot see the method type at pick time ends up doing) and \
         `count` (load, and a stream's duration is a sample).\n"
    );
    w!(
        out,
        "| scenario | metric | ignore (proposal) | outstanding | count | least_request |"
    );
    w!(out, "|---|---|---:|---:|---:|---:|");
    for name in ["streaming-mix", "long-streams"] {
        if ev.scenario(name).is_none() {
            continue;
        }
        for (metric, label) in [("p99_ms", "p99 ms"), ("p999_ms", "p99.9 ms")] {
            let cells: Vec<String> = STREAM_VARIANTS
                .iter()
                .map(|(p, _)| ev.interval(name, p, metric).map_or("–".into(), iv))
                .collect();
            w!(
                out,
                "| {} | {label} | {} |",
                links::scenario(name),
                cells.join(" | ")
            );
        }
        let shares: Vec<String> = STREAM_VARIANTS
            .iter()
            .map(|(p, _)| {
                ev.interval(name, p, "slow_share")
                    .map_or("–".into(), |i| pct(i.median))
            })
            .collect();
        w!(out, "| | to faulty backends | {} |", shares.join(" | "));
    }
    let g = |p: &str, m: &str| ev.interval("streaming-mix", p, m);
    if let (Some(ig), Some(os), Some(ct), Some(lr)) = (
        g(PROPOSAL, "p999_ms"),
        g("peak_ewma(streams=outstanding)", "p999_ms"),
        g("peak_ewma(streams=count)", "p99_ms"),
        g("least_request", "p99_ms"),
    ) {
        w!(
            out,
            "\nA stream's duration as a sample (`count`) makes the policy as bad as \
             least_request where streams are common (p99 {} against least_request's {} ms in \
             streaming-mix): every ended stream is a seconds-long \"RTT\". Counting open streams \
             as load without sampling them (`outstanding`) costs tail latency where streams are \
             common (p99.9 {} against {} ms).\n",
            iv(ct),
            iv(lr),
            iv(os),
            iv(ig)
        );
        w!(out, "Answer: {}\n", crate::answers::q3(ev));
    }
    let real: Vec<String> = ["streaming-mix", "long-streams"]
        .iter()
        .filter_map(|name| {
            let c = ev.scenario(name)?.compare.as_ref()?;
            let cells: Vec<String> = STREAM_VARIANTS
                .iter()
                .filter_map(|(p, label)| {
                    let r = c.rows.iter().find(|r| r.policy == *p)?;
                    Some(format!("{label} {}", num(r.real_p99_ms)))
                })
                .collect();
            Some(format!("{name}: {} ms", cells.join(", ")))
        })
        .collect();
    if !real.is_empty() {
        w!(
            out,
            "Over real gRPC (p99, one run each of the length stated above): {}. A real run that \
             short ends few of long-streams' minute-long streams inside the measurement, so its \
             full-length simulation is the evidence there.\n",
            real.join("; ")
        );
    }
}
