//! `## Findings`: sampling, wins, losses, the healthy fleet and the sweeps over the scenario
//! space.

use std::fmt::Write as _;

use lblab_model::scenario::ORACLE;
use lblab_stats::Interval;

use crate::fmt::{iv, num, param_pct, pct, pct_iv};
use lblab_report::ChartName;

use crate::links;
use crate::load::{Evidence, ScenarioResults};
use crate::text::{self, best, surely_lower, times, verdict, PROPOSAL};

pub(super) fn findings(out: &mut String, ev: &Evidence) {
    w!(out, "## Findings\n");
    sampling(out, ev);
    wins(out, ev);
    losses(out, ev);
    healthy(out, ev);
    space(out, ev);
}

fn sampling(out: &mut String, ev: &Evidence) {
    let Some(sweep) = ev.sweeps.get("sampling") else {
        return;
    };
    w!(
        out,
        "### 1. Sampling: the policy must draw distinct endpoints\n"
    );
    w!(
        out,
        "gRFC A48's `least_request_experimental` draws its `choiceCount` candidates with \
         replacement, so both land on the same endpoint 1/n² of the time whatever its cost; \
         with one slow backend among n, that share of all picks goes to it. peak_ewma with \
         A48's draw (the ablation `peak_ewma(with_replacement)`) follows that line; with \
         distinct draws (tower's, Finagle's and Envoy's choice) the slow backend gets only \
         what the decaying estimate's probes cost. One-slow at 100 req/s per backend, {} \
         seeds per point ({}; charts `slow_share.png`, `p99.png`, `p999.png` there):\n",
        sweep.seeds(),
        links::code(&links::sweep_dir("sampling"))
    );
    w!(out, "| backends | to the slow one: distinct | with replacement | 1/n² | p99 ms: distinct | with replacement | least_request | oracle |");
    w!(out, "|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in sweep.points("backends") {
        let g = |p: &str, m: &str| sweep.get("backends", &n, p, m);
        let nn: f64 = n.parse().unwrap_or(f64::NAN);
        // The share two independent uniform draws put on one given endpoint.
        let cell = |i: Option<Interval>| i.map_or("–".into(), iv);
        let share = |i: Option<Interval>| i.map_or("–".into(), pct_iv);
        w!(
            out,
            "| {n} | {} | {} | {} | {} | {} | {} | {} |",
            share(g(PROPOSAL, "slow_share")),
            share(g("peak_ewma(with_replacement)", "slow_share")),
            pct(1.0 / (nn * nn)),
            cell(g(PROPOSAL, "p99_ms")),
            cell(g("peak_ewma(with_replacement)", "p99_ms")),
            cell(g("least_request", "p99_ms")),
            cell(g(ORACLE, "p99_ms").map(|i| Interval { n: 1, ..i })),
        );
    }
    let gap = sweep.points("backends").into_iter().rev().find(|n| {
        match (
            sweep.get("backends", n, PROPOSAL, "p999_ms"),
            sweep.get("backends", n, "peak_ewma(with_replacement)", "p999_ms"),
        ) {
            (Some(d), Some(r)) => surely_lower(d, r),
            _ => false,
        }
    });
    if let Some(n) = gap {
        let d = sweep.get("backends", &n, PROPOSAL, "p999_ms");
        let r = sweep.get("backends", &n, "peak_ewma(with_replacement)", "p999_ms");
        if let (Some(d), Some(r)) = (d, r) {
            w!(
                out,
                "\nAt p99.9 the gap stays open up to {n} backends ({} against {} ms). lblab's \
                 default is distinct draws; A48's rule stays as the ablation \
                 `lblabAblation.sampling = \"with_replacement\"`.\n",
                iv(d),
                iv(r)
            );
        }
    }
}

fn wins(out: &mut String, ev: &Evidence) {
    w!(out, "### 2. Where peak_ewma wins, and by how much\n");
    w!(
        out,
        "Every canonical scenario (`lblab sim scenarios/<name>.toml --seeds N`; per-scenario \
         pages below): p99 relative to round_robin, paired by seed (below 1 is better); in \
         bold, the lowest of the four policies where its interval lies wholly below the other \
         three's (round_robin's is 1). Sorted by peak_ewma's ratio.\n"
    );
    w!(out, "| scenario | least_request | peak_ewma | weighted_round_robin | peak_ewma p99 ms | oracle p99 ms |");
    w!(out, "|---|---:|---:|---:|---:|---:|");
    let mut rows: Vec<&ScenarioResults> = ev
        .scenarios
        .iter()
        .filter(|s| s.intervals.is_some())
        .collect();
    rows.sort_by(|a, b| {
        let r = |s: &ScenarioResults| {
            ev.interval(&s.name, PROPOSAL, "p99_vs_round_robin")
                .map_or(f64::INFINITY, |i| i.median)
        };
        r(a).total_cmp(&r(b))
    });
    for s in rows {
        // Bold only what the ratio intervals shown beside it separate.
        let ratio = |p: &str| ev.interval(&s.name, p, "p99_vs_round_robin");
        let winner = best(s, "p99_ms").map(|b| b.0).filter(|&w| {
            ratio(w).is_some_and(|wi| {
                [
                    "round_robin",
                    "least_request",
                    PROPOSAL,
                    "weighted_round_robin",
                ]
                .iter()
                .filter(|&&q| q != w)
                .all(|&q| {
                    let qi = if q == "round_robin" {
                        Some((1.0, 1.0))
                    } else {
                        ratio(q).map(|i| (i.lo, i.hi))
                    };
                    qi.is_some_and(|(lo, _)| wi.hi < lo)
                })
            })
        });
        let cell = |p: &str| {
            let v = times(ev, &s.name, p, "p99_vs_round_robin");
            if winner == Some(p) {
                format!("**{v}**")
            } else {
                v
            }
        };
        w!(
            out,
            "| {0} | {1} | {2} | {3} | {4} | {5} |",
            links::scenario(&s.name),
            cell("least_request"),
            cell(PROPOSAL),
            cell("weighted_round_robin"),
            ev.interval(&s.name, PROPOSAL, "p99_ms")
                .map_or("–".into(), iv),
            ev.interval(&s.name, ORACLE, "p99_ms")
                .map_or("–".into(), iv),
        );
    }
    out.push('\n');
    let same: Vec<&str> = ev
        .scenarios
        .iter()
        .filter(|s| {
            let i = |p| ev.interval(&s.name, p, "p99_ms");
            i("od(peak_ewma)").is_some() && i("od(peak_ewma)") == i(PROPOSAL)
        })
        .map(|s| s.name.as_str())
        .collect();
    let differ: Vec<String> = ev
        .scenarios
        .iter()
        .filter(|s| {
            let i = |p| ev.interval(&s.name, p, "p99_ms");
            i("od(peak_ewma)").is_some() && i("od(peak_ewma)") != i(PROPOSAL)
        })
        .map(|s| format!("`{}`", s.name))
        .collect();
    w!(
        out,
        "outlier_detection (A50) reacts to failures, not slowness: od(peak_ewma) has exactly \
         peak_ewma's p99 in {} of {} scenarios (it never ejects there); it differs only in {}.\n",
        same.len(),
        same.len() + differ.len(),
        if differ.is_empty() {
            "none".into()
        } else {
            differ.join(", ")
        }
    );
}

fn losses(out: &mut String, ev: &Evidence) {
    w!(out, "### 3. Where it loses, and what wraps it\n");
    if let Some((wrr, pe)) = text::wrr_and_proposal(ev, "heterogeneous") {
        w!(
            out,
            "- **Backends of different sizes** ({}): \
             weighted_round_robin's p99 is {}× round_robin's against peak_ewma's {}× ({} for \
             weighted_round_robin): the utilization servers report through ORCA knows capacity \
             that latency shows only under load.",
            links::scenario("heterogeneous"),
            iv(wrr),
            iv(pe),
            verdict(wrr, pe)
        );
    }
    if let (Some(pe), Some(or), Some(r)) = (
        ev.interval("zones", PROPOSAL, "p99_ms"),
        ev.interval("zones", ORACLE, "p99_ms"),
        ev.interval("zones", PROPOSAL, "p99_vs_round_robin"),
    ) {
        w!(
            out,
            "- **A remote zone** ({}): peak_ewma's p99 is {}× \
             round_robin's but stays far from the oracle ({} against {} ms): the RTT it measures \
             includes the network, and two random candidates are often both remote.",
            links::scenario("zones"),
            iv(r),
            iv(pe),
            num(or.median)
        );
    }
    if let Some((share, wrr, pe)) = super::summary::slow_share_crossover(ev) {
        w!(
            out,
            "- **Many slow backends** ({}): from {} of \
             backends slow, weighted_round_robin's p99 is lower ({} against {} ms). With two \
             draws both candidates are slow (k/n)² of the time and the policy must send to one \
             of them; weighted_round_robin's weights avoid all of them. A larger \
             `choiceCount` c would make that (k/n)^c; the sweep does not run one.",
            links::code(&links::sweep_dir("slow-share")),
            param_pct(share),
            iv(wrr),
            iv(pe)
        );
    }
    let e = |p: &str| ev.interval("fail-fast", p, "error_share");
    if let (Some(pe), Some(rr), Some(od), Some(odlr)) = (
        e(PROPOSAL),
        e("round_robin"),
        e("od(peak_ewma)"),
        e("od(least_request)"),
    ) {
        w!(
            out,
            "- **A backend that fails fast** ({}): a failure that \
             returns at once looks like a fast answer, and the semantics as first written send \
             that backend more than its share. The default's error-aware cost (`errorPenalty` 1: \
             the estimate over `1 − e`, `e` the share of failures) keeps it off: alone, \
             peak_ewma fails {} of requests against round_robin's {}; inside outlier_detection \
             {} (od(least_request) {}). Wrapping it still ejects a backend that keeps failing.",
            links::scenario("fail-fast"),
            pct_iv(pe),
            pct_iv(rr),
            pct_iv(od),
            pct_iv(odlr)
        );
    }
    out.push('\n');
}

fn healthy(out: &mut String, ev: &Evidence) {
    w!(out, "### 4. No harm on a healthy fleet\n");
    let r = |p: &str| times(ev, "healthy", p, "p99_vs_round_robin");
    w!(
        out,
        "On {} (every backend the same) peak_ewma's p99 is {} \
         round_robin's, least_request's {}, weighted_round_robin's {}; peak_ewma's p99.9 is \
         {} round_robin's.\n",
        links::scenario("healthy"),
        r(PROPOSAL),
        r("least_request"),
        r("weighted_round_robin"),
        times(ev, "healthy", PROPOSAL, "p999_vs_round_robin"),
    );
}

fn space(out: &mut String, ev: &Evidence) {
    if ev.sweeps.is_empty() {
        return;
    }
    w!(out, "### 5. Across the scenario space\n");
    w!(
        out,
        "Each sweep varies one thing about one-slow and runs every policy at every point over \
         several seeds ([`{}/`]({}), `scripts/sweeps.sh`).\n",
        links::SWEEPS,
        links::sweeps_page()
    );
    for line in crate::sweeps_page::conclusions(ev) {
        w!(out, "- {line}");
    }
    out.push('\n');
    for (name, chart, alt) in [
        (
            "fleet-size",
            ChartName::SweepP99VsOracle,
            "p99 over the oracle's, by fleet size",
        ),
        ("utilization", ChartName::SweepP99, "p99 by utilization"),
        (
            "slow-share",
            ChartName::SweepP99,
            "p99 by share of slow backends",
        ),
    ] {
        if ev.sweeps.contains_key(name) {
            w!(out, "![{alt}]({})\n", links::sweep_chart(name, chart));
        }
    }
}
