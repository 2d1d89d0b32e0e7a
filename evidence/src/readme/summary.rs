//! `## Summary`: the charts over every scenario, and the five sentences a reviewer can quote
//! (also the gRFC draft's abstract); with the paragraph on how everything was measured.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use lblab_model::scenario::ORACLE;
use lblab_stats::Interval;

use crate::fmt::{iv, param_pct, pct_iv, secs};
use crate::links;
use crate::load::{Evidence, ScenarioResults, Sweep};
use crate::text::{
    self, agreement_counts, best, list_or_none, ms, proposal_surely_best, real_lengths, span,
    surely_lower, HEADLINE, PROPOSAL,
};

/// The true confidence of the headline scenario's intervals, as `"97.9 % interval"`.
fn headline_interval(ev: &Evidence) -> String {
    let seeds = ev
        .scenario(HEADLINE)
        .and_then(|s| s.intervals.as_ref())
        .map_or(0, |i| i.seeds());
    crate::text::interval(seeds)
}

/// Run lengths, seeds and intervals, in one paragraph.
pub fn how_measured(ev: &Evidence) -> String {
    let mut s = String::new();
    if let Some(h) = ev.scenario(HEADLINE) {
        let (warmup, measured) = text::full_length(h);
        let seeds = h.intervals.as_ref().map_or(0, |i| i.seeds());
        let _ = write!(
            s,
            "Simulated figures are medians over {seeds} seeds of the full-length scenario ({} \
             warm-up, then {} measured), each with a distribution-free confidence interval of \
             the median in brackets (with {seeds} seeds, a {}); ratios are paired by seed (every \
             policy sees the same arrivals and service times). ",
            secs(warmup),
            secs(measured),
            crate::text::interval(seeds)
        );
    }
    if let Some((warmup, measured)) = real_lengths(ev) {
        let _ = write!(
            s,
            "Real figures are real tonic servers and a real tonic client talking gRPC over \
             loopback TCP on one machine, one run per policy ({} warm-up, {} measured), each \
             beside a simulated run of the same length and seed.",
            text::param_span(warmup, " s"),
            text::param_span(measured, " s")
        );
    }
    s
}

pub(super) fn summary(out: &mut String, ev: &Evidence) {
    w!(out, "## Summary\n");
    let [(vs_round_robin, ..), (vs_oracle, ..)] = crate::headline::CHARTS;
    w!(
        out,
        "![p99 relative to round_robin, per scenario]({})\n\n\
         ![p99 relative to the oracle, per scenario]({})\n",
        links::png(vs_round_robin),
        links::png(vs_oracle)
    );
    w!(
        out,
        "Each policy's p99 over round_robin's (top) and over the oracle's (bottom: a simulated \
         policy that picks by expected completion from every server's true queue and speed; not a \
         lower bound, since a pause that starts after its pick still catches it), per scenario, with the \
         {} as a whisker; below 1 is better than round_robin. Data: each \
         scenario's `{}`.\n",
        headline_interval(ev),
        links::sim(links::INTERVALS_CSV)
    );
    for s in summary_sentences(ev, "") {
        w!(out, "- {s}");
    }
    out.push('\n');
}

/// The five sentences a reviewer can quote (also the gRFC draft's abstract). `readme` is the
/// path of the evidence document from where they are shown (`""` inside it).
pub fn summary_sentences(ev: &Evidence, readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(h) = ev.scenario(HEADLINE) {
        out.push(format!(
            "**A slow backend.** With one of {} backends {}× slower ({}), peak_ewma's \
             p99 is {} against round_robin's {}, least_request's {} and weighted_round_robin's \
             {}; the oracle's is {}.",
            text::backends(h),
            text::slowdown(h).map_or("–".into(), crate::fmt::param),
            links::scenario_code(HEADLINE),
            ms(ev, HEADLINE, PROPOSAL, "p99_ms"),
            ms(ev, HEADLINE, "round_robin", "p99_ms"),
            ms(ev, HEADLINE, "least_request", "p99_ms"),
            ms(ev, HEADLINE, "weighted_round_robin", "p99_ms"),
            ms(ev, HEADLINE, ORACLE, "p99_ms"),
        ));
    }
    let faulty: Vec<&ScenarioResults> = text::contested(ev);
    let wins: Vec<&str> = faulty
        .iter()
        .filter(|s| best(s, "p99_ms").is_some_and(|(p, _)| p == PROPOSAL))
        .map(|s| s.name.as_str())
        .collect();
    let sure = faulty
        .iter()
        .filter(|s| proposal_surely_best(s, "p99_ms"))
        .count();
    let ratios = text::range(faulty.iter().filter_map(|s| {
        ev.interval(&s.name, PROPOSAL, "p99_vs_round_robin")
            .map(|i| i.median)
    }));
    out.push(format!(
        "**Where it wins.** In {} of the {} scenarios where knowing every queue would beat \
         round_robin's p99 (all but {}), peak_ewma has the lowest p99 of the four policies \
         (round_robin, least_request, weighted_round_robin, peak_ewma), beyond the intervals' \
         doubt in {sure}; its p99 there is {} of round_robin's.",
        wins.len(),
        faulty.len(),
        list_or_none(
            &ev.scenarios
                .iter()
                .filter(|s| s.intervals.is_some() && !faulty.iter().any(|f| f.name == s.name))
                .map(|s| format!("`{}`", s.name))
                .collect::<Vec<_>>()
        ),
        ratios.map_or("–".into(), |r| span(r, "×")),
    ));
    let losses: Vec<String> = faulty
        .iter()
        .filter_map(|s| {
            let (p, b) = *text::beaten_by(s, "p99_ms").first()?;
            let pe = ev.interval(&s.name, PROPOSAL, "p99_ms")?;
            Some(format!(
                "`{}` ({p} {} against {} ms)",
                s.name,
                iv(b),
                iv(pe)
            ))
        })
        .collect();
    let mut loses = format!(
        "**Where it loses.** Where latency does not show capacity, another policy's p99 is \
         lower: {}",
        if losses.is_empty() {
            "no canonical scenario".into()
        } else {
            losses.join(", ")
        }
    );
    if let Some((share, wrr, pe)) = slow_share_crossover(ev) {
        let _ = write!(
            loses,
            "; and with {} of backends slow, weighted_round_robin's {} against {} ms",
            param_pct(share),
            iv(wrr),
            iv(pe)
        );
    }
    if let (Some(alone), Some(rr), Some(od)) = (
        ev.interval("fail-fast", PROPOSAL, "error_share"),
        ev.interval("fail-fast", "round_robin", "error_share"),
        ev.interval("fail-fast", "od(peak_ewma)", "error_share"),
    ) {
        let _ = write!(
            loses,
            ". A backend that fails fast would look fast; the error-aware cost keeps it off: \
             alone peak_ewma fails {} of requests (round_robin {}), inside outlier_detection {}",
            pct_iv(alone),
            pct_iv(rr),
            pct_iv(od)
        );
    }
    loses.push('.');
    if let Some(envelope) = envelope_sentence(ev) {
        loses.push(' ');
        loses.push_str(&envelope);
    }
    out.push(loses);
    if let Some(s) = sampling_sentence(ev) {
        out.push(s);
    }
    let (pairs, _, p99, _, cal99) = agreement_counts(ev);
    let healthy = ev
        .interval("healthy", PROPOSAL, "p99_vs_round_robin")
        .map(|i| format!("{}×", iv(i)));
    out.push(format!(
        "**How sure.** Every simulated figure is a median over seeds with a distribution-free \
         interval of the median (the scenarios' {}; a sweep run with fewer seeds states its own \
         coverage); on a healthy fleet peak_ewma's p99 is {} round_robin's. Over real gRPC the p99 of \
         {p99} of {pairs} policy–scenario pairs agrees with the simulation of the same length \
         ({}), {cal99} of {pairs} once the harness's own floor is added to the \
         simulated value ([sim and real]({readme}#sim-and-real)).",
        headline_interval(ev),
        healthy.unwrap_or_else(|| "–".into()),
        links::agreement_rule()
    ));
    out
}

/// The trade the design search measured against the two references that each win a family of
/// points: the proposal's worst p99.9 against Envoy's never-probing estimate where one backend is
/// steadily slow (`small-busy` and `grid`), and how long a healed backend waits for its share at
/// the fewest and the most client channels (`recovery-clients`), against Finagle's wall-clock
/// decay.
fn envelope_sentence(ev: &Evidence) -> Option<String> {
    const ENVOY: &str = "envoy_peak_ewma";
    const FINAGLE: &str = "finagle_peak_ewma";
    let mut worst: Option<(f64, f64, f64, &BTreeMap<String, String>)> = None;
    for set in ["small-busy", "grid"] {
        let sweep = ev.design.get(set)?;
        let p999 = |r: &BTreeMap<String, String>| r.get("p999_ms")?.parse::<f64>().ok();
        let policy =
            |r: &BTreeMap<String, String>, p: &str| r.get("policy").map(String::as_str) == Some(p);
        for row in sweep.rows.iter().filter(|r| policy(r, PROPOSAL)) {
            // Envoy's row at the same point (the same values of the set's axes).
            let envoy = sweep
                .rows
                .iter()
                .find(|r| policy(r, ENVOY) && sweep.axes.iter().all(|a| r.get(a) == row.get(a)));
            let (Some(pe), Some(env)) = (p999(row), envoy.and_then(p999)) else {
                continue;
            };
            if worst.is_none_or(|w| pe / env > w.0) {
                worst = Some((pe / env, pe, env, row));
            }
        }
    }
    let (ratio, pe, env, row) = worst?;
    let heal = ev.design.get("recovery-clients")?;
    let counts = heal.points("workload.clients");
    let (few, many) = (counts.first()?, counts.last()?);
    let time = |policy: &str, clients: &str| {
        heal.get("workload.clients", clients, policy, "time_to_fair_s")
            .map(|i| i.median)
            .filter(|t| t.is_finite())
    };
    let (pe_few, pe_many) = (time(PROPOSAL, few)?, time(PROPOSAL, many)?);
    let (fin_few, fin_many) = (time(FINAGLE, few)?, time(FINAGLE, many)?);
    let field = |k: &str| row.get(k).cloned().unwrap_or_default();
    let utilization = field("utilization").parse::<f64>().ok()?;
    Some(format!(
        "Beside Envoy's estimate, which never sends a backend it has found slow another call: \
         with one of {} backends steadily slow at {} of capacity, seen by {} client channels, \
         its p99.9 is {}× Envoy's ({} against {} ms, the worst point of the design search's \
         steady sets); and a healed backend carries 80 % of its share again after {} at {} \
         channel{} but {} at {} channels (Finagle's wall-clock decay: {} and {}), because a \
         client that picks rarely learns of the heal only from the calls it sends there. \
         `decayTime` trades the two; no rule that learns through user calls gives both \
         (design search: `results/design/candidates/`).",
        field("backends"),
        param_pct(utilization),
        field("workload.clients"),
        crate::fmt::num(ratio),
        crate::fmt::num(pe),
        crate::fmt::num(env),
        secs(pe_few),
        crate::fmt::count(few.parse().ok()?),
        if few == "1" { "" } else { "s" },
        secs(pe_many),
        crate::fmt::count(many.parse().ok()?),
        secs(fin_few),
        secs(fin_many),
    ))
}

/// The smallest slow share at which weighted_round_robin's p99 is surely below peak_ewma's, in
/// the slow-share sweep: `(share, wrr, pe)`.
pub fn slow_share_crossover(ev: &Evidence) -> Option<(f64, Interval, Interval)> {
    let sweep = ev.sweeps.get("slow-share")?;
    points_by_share(sweep)
        .into_iter()
        .find_map(|(point, share)| {
            let wrr = sweep.get("faulty_backends", &point, "weighted_round_robin", "p99_ms")?;
            let pe = sweep.get("faulty_backends", &point, PROPOSAL, "p99_ms")?;
            surely_lower(wrr, pe).then_some((share, wrr, pe))
        })
}

fn points_by_share(sweep: &Sweep) -> Vec<(String, f64)> {
    sweep
        .points("faulty_backends")
        .into_iter()
        .filter_map(|p| {
            let row = sweep
                .rows
                .iter()
                .find(|r| r.get("faulty_backends") == Some(&p))?;
            let n: f64 = row.get("backends")?.parse().ok()?;
            let k: f64 = p.parse().ok()?;
            Some((p, k / n))
        })
        .collect()
}

fn sampling_sentence(ev: &Evidence) -> Option<String> {
    let sweep = ev.sweeps.get("sampling")?;
    let n = "10";
    let d = sweep.get("backends", n, PROPOSAL, "slow_share")?;
    let r = sweep.get("backends", n, "peak_ewma(with_replacement)", "slow_share")?;
    let dp = sweep.get("backends", n, PROPOSAL, "p99_ms")?;
    let rp = sweep.get("backends", n, "peak_ewma(with_replacement)", "p99_ms")?;
    Some(format!(
        "**Sampling.** Drawing the candidates with replacement, as gRFC A48 does, puts both \
         draws on the same endpoint 1/n² of the time: at {n} backends the slow one then gets \
         {} of the traffic and p99 is {} ms, against {} and {} ms with distinct draws. The \
         policy must draw distinct endpoints.",
        pct_iv(r),
        iv(rp),
        pct_iv(d),
        iv(dp)
    ))
}
