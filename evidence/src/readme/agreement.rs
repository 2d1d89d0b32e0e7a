//! `## Sim and real`: where the real harness agrees with the simulation, the repeated real
//! runs, and fairness to weighted_round_robin's warm-up.

use std::fmt::Write as _;

use crate::fmt::{iv, num, secs};
use crate::links;
use crate::load::Evidence;
use crate::text::{self, agreement_counts, list_or_none, span, HEADLINE};

pub(super) fn agreement(out: &mut String, ev: &Evidence) {
    w!(out, "## Sim and real\n");
    let (pairs, p50, p99, c50, c99) = agreement_counts(ev);
    let (rel, abs) = (links::agreement_relative(), links::agreement_absolute_ms());
    // The calibrated agreements that the relative rule alone would refuse.
    let loose = |sim: Option<f64>, real: f64, agrees: Option<bool>| {
        agrees == Some(true)
            && sim.is_some_and(|s| (real - s).abs() > lblab_record::AGREEMENT_RELATIVE * s)
    };
    let rows = || {
        ev.scenarios
            .iter()
            .filter_map(|s| s.compare.as_ref())
            .flat_map(|c| c.rows.iter())
    };
    let a50 = rows()
        .filter(|r| {
            loose(
                r.calibrated_sim_p50_ms,
                r.real_p50_ms,
                r.calibrated_p50_agrees,
            )
        })
        .count();
    let a99 = rows()
        .filter(|r| {
            loose(
                r.calibrated_sim_p99_ms,
                r.real_p99_ms,
                r.calibrated_p99_agrees,
            )
        })
        .count();
    w!(
        out,
        "The simulator and the real harness run the same scenario file, the same policy code \
         and the same backend model. They agree when the real value is within ±{rel} of the \
         simulated one, or within {abs} ms. The real harness adds its own latency (HTTP/2 over \
         loopback, the runtime, timers): its floor, measured before each run with every \
         backend answering at once, is added to the simulated values for the calibrated \
         comparison. Over {pairs} policy–scenario pairs: p50 agrees in {p50} ({c50} calibrated), \
         p99 in {p99} ({c99} calibrated). Of the calibrated agreements, {a50} of the p50s and \
         {a99} of the p99s hold only through the {abs} ms allowance (the real value more than \
         {rel} from the calibrated one): sub-millisecond figures are compared loosely.\n"
    );
    w!(out, "| scenario | policies | p50 agrees | p99 agrees | calibrated p50 | calibrated p99 | floor p50 / p99 ms | p99 that disagrees, calibrated (sim, sim with the floor → real ms) |");
    w!(out, "|---|---:|---:|---:|---:|---:|---:|---|");
    for s in &ev.scenarios {
        let Some(c) = &s.compare else { continue };
        let n = c.rows.len();
        let k = |f: fn(&crate::load::CompareRow) -> bool| c.rows.iter().filter(|r| f(r)).count();
        let off: Vec<String> = c
            .rows
            .iter()
            .filter(|r| r.calibrated_p99_agrees == Some(false))
            .map(|r| {
                format!(
                    "{} {} (calibrated {}) → {}",
                    r.policy,
                    num(r.sim_p99_ms),
                    num(r.calibrated_sim_p99_ms.unwrap_or(f64::NAN)),
                    num(r.real_p99_ms)
                )
            })
            .collect();
        let floor = c.harness.as_ref().map_or("–".into(), |h| {
            h.floor.as_ref().map_or("–".into(), |f| {
                format!("{} / {}", num(f.p50_ms), num(f.p99_ms))
            })
        });
        w!(
            out,
            "| {0} | {n} | {1} | {2} | {3} | {4} | {floor} | {5} |",
            links::scenario(&s.name),
            k(|r| r.p50_agrees),
            k(|r| r.p99_agrees),
            k(|r| r.calibrated_p50_agrees == Some(true)),
            k(|r| r.calibrated_p99_agrees == Some(true)),
            if off.is_empty() {
                "–".into()
            } else {
                off.join("; ")
            }
        );
    }
    out.push('\n');
    for (name, rows) in &ev.repeats {
        let Some(s) = ev.scenario(name) else { continue };
        let runs = rows.first().map_or(0, |r| r.runs);
        let lengths = ev.repeat_lengths.get(name).map_or(String::new(), |(w, m)| {
            format!(
                "{} warm-up and {} measured per policy, ",
                secs(*w),
                secs(*m)
            )
        });
        w!(
            out,
            "Repeated real runs of {} ({runs} runs, {lengths}each with a \
             fresh fleet and client; {}): the range of p99 and p99.9 over the runs, beside the \
             simulated p99 over seeds (full length).\n",
            links::scenario(name),
            links::code(&links::repeat_range_of(name))
        );
        w!(
            out,
            "| policy | real p99 ms | real p99.9 ms | simulated p99 ms |"
        );
        w!(out, "|---|---:|---:|---:|");
        for r in rows {
            w!(
                out,
                "| {} | {} | {} | {} |",
                r.policy,
                span((r.p99_ms_min, r.p99_ms_max), ""),
                span((r.p999_ms_min, r.p999_ms_max), ""),
                s.intervals
                    .as_ref()
                    .and_then(|i| i.get(&r.policy, "p99_ms"))
                    .map_or("– (not simulated)".into(), iv)
            );
        }
        out.push('\n');
    }
    if let Some((need, why)) = ev.scenario(HEADLINE).and_then(text::wrr_need) {
        let short: Vec<String> = ev
            .scenarios
            .iter()
            .filter_map(|s| {
                let c = s.compare.as_ref()?;
                (c.real.warmup_s < need)
                    .then(|| format!("`{}` ({})", s.name, secs(c.real.warmup_s)))
            })
            .collect();
        let short_sims: Vec<String> = ev
            .scenarios
            .iter()
            .filter(|s| s.intervals.is_some() && text::full_length(s).0 < need)
            .map(|s| format!("`{}`", s.name))
            .collect();
        w!(
            out,
            "**Fairness to weighted_round_robin.** It needs {} of warm-up ({why}) before its \
             weights count; a shortened run never shortens the warm-up. Simulations with a \
             shorter warm-up: {}. Real runs with a shorter one: {}. The \
             [cpu-throttle]({}#weighted_round_robin-and-the-warm-up) page shows \
             what a short warm-up does to it.\n",
            secs(need),
            list_or_none(&short_sims),
            list_or_none(&short),
            links::page("cpu-throttle")
        );
    }
    w!(
        out,
        "Where the simulation and the real harness differ, the scenario's page says why (for \
         example tower's balancer, which has no notion of connectivity, in crash-restart and \
         fail-fast).\n"
    );
}
