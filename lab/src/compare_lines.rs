//! A comparison of the simulator with the real run as text, as `lblab compare` prints it: each
//! mode's tail latencies against round_robin's and the oracle's, and how well the two agree
//! ([`CompareRow`], before and after calibration).

use lblab_message::setting::{Names, Setting};
use lblab_record::ORACLE;
use lblab_record::{diff_pct, CompareRow};
use lblab_record::{RunSummary, SummaryRow};

/// `value` over `base`, as a factor (`0.16×`), or `–` when there is no base to compare with.
pub fn ratio(value: f64, base: Option<f64>) -> String {
    match base {
        Some(b) if b > 0.0 && value.is_finite() => format!("{:.2}×", value / b),
        _ => "–".to_string(),
    }
}

/// A difference in percent, rounded to whole percent; never `-0`.
pub fn pct(value: f64) -> String {
    if !value.is_finite() {
        return "–".to_string();
    }
    let rounded = value.round();
    if rounded == 0.0 {
        "0%".to_string()
    } else {
        format!("{rounded:.0}%")
    }
}

/// One real run as the headline reads it: its summary and each policy's p99 interval
/// ([`lblab_stats::quantile_interval`]).
#[derive(Debug, Clone, Copy)]
pub struct RealRun<'a> {
    /// The run's summary.
    pub summary: &'a RunSummary,
    /// Per policy, the 95 % interval of its p99, ms.
    pub intervals: &'a [(String, (f64, f64))],
}

/// What the real runs can say about which policy had the lowest p99: the lowest, and the
/// policies it cannot be told apart from, each with why ([`Tie`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Lowest {
    /// The policy with the lowest real p99 (the median over the runs).
    pub best: String,
    /// The policies tied with it, in the order of the first run.
    pub tied: Vec<(String, Tie)>,
}

/// Why a policy is tied with the lowest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tie {
    /// Its simulation, from the same seed, gave the same figures, every one: in this scenario it
    /// behaves as the lowest does (the same algorithm, or a wrapper that never acts). Repeats do
    /// not separate these.
    SameBehaviour,
    /// Within the noise: with one run, the 95 % intervals of the two p99s
    /// ([`lblab_stats::quantile_interval`]) overlap; with repeated runs, the ranges of their p99s over the
    /// runs overlap.
    WithinNoise,
}

/// The median of `values` (not empty).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Each policy's real p99 in every run (in the first run's order), for the policies that
/// measured latencies in all of them.
fn p99s_over(runs: &[RealRun<'_>]) -> Vec<(String, Vec<f64>)> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .summary
        .rows
        .iter()
        .filter_map(|r| {
            let p99s: Option<Vec<f64>> = runs
                .iter()
                .map(|run| {
                    run.summary
                        .rows
                        .iter()
                        .find(|x| x.policy == r.policy && x.requests > 0 && x.p99_ms.is_finite())
                        .map(|x| x.p99_ms)
                })
                .collect();
            Some((r.policy.clone(), p99s?))
        })
        .collect()
}

/// The lowest real p99 over `runs` (the median over them) and what it is tied with, by the
/// stated rule: a policy is tied with the lowest when its simulated summary row equals the
/// lowest's in every figure ([`Tie::SameBehaviour`]), or when the two cannot be told apart in the
/// real runs ([`Tie::WithinNoise`]): with one run, when the 95 % intervals of the two p99s
/// overlap; with several, unless every run's p99 of the policy is above every run's p99 of the
/// lowest. `None` when no policy measured latencies in every run.
pub fn lowest(sim: &RunSummary, runs: &[RealRun<'_>]) -> Option<Lowest> {
    let p99s = p99s_over(runs);
    let medians: Vec<(String, f64)> = p99s
        .iter()
        .map(|(p, v)| (p.clone(), median(&mut v.clone())))
        .collect();
    let (best, _) = medians.iter().min_by(|a, b| a.1.total_cmp(&b.1))?.clone();
    let sim_row = |policy: &str| {
        sim.rows
            .iter()
            .find(|r| r.policy == policy)
            .map(|r| SummaryRow {
                policy: String::new(),
                ..r.clone()
            })
    };
    let interval = |policy: &str| {
        runs.first()?
            .intervals
            .iter()
            .find(|(p, _)| p == policy)
            .map(|(_, i)| *i)
    };
    let range = |policy: &str| {
        let v = &p99s.iter().find(|(p, _)| p == policy)?.1;
        Some(
            v.iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                    (lo.min(*x), hi.max(*x))
                }),
        )
    };
    let best_sim = sim_row(&best);
    let tied = p99s
        .iter()
        .filter(|(p, _)| *p != best)
        .filter_map(|(p, _)| {
            let same = best_sim.is_some() && sim_row(p) == best_sim;
            let noise = if runs.len() == 1 {
                match (interval(&best), interval(p)) {
                    (Some((_, best_hi)), Some((lo, _))) => lo <= best_hi,
                    _ => false,
                }
            } else {
                match (range(&best), range(p)) {
                    (Some((_, best_hi)), Some((lo, _))) => lo <= best_hi,
                    _ => false,
                }
            };
            if same {
                Some((p.clone(), Tie::SameBehaviour))
            } else if noise {
                Some((p.clone(), Tie::WithinNoise))
            } else {
                None
            }
        })
        .collect();
    Some(Lowest { best, tied })
}

/// The headline: which policy had the lowest real p99, or which policies tied for it
/// ([`lowest`]), against round_robin's (medians over the runs); nothing is crowned when a real
/// run did not measure every policy it was to run (`partial`), since a missing one might have
/// won.
/// Settings it names (how to repeat the run) are spelt by `names`.
pub fn headline(sim: &RunSummary, runs: &[RealRun<'_>], names: Names) -> Vec<String> {
    if let Some(cut) = runs.iter().find(|r| r.summary.partial) {
        return vec![format!(
            "no lowest real p99: a real run stopped after {} of its policies, and one it did not reach might have won",
            cut.summary.rows.len()
        )];
    }
    let Some(lowest) = lowest(sim, runs) else {
        return Vec::new();
    };
    let p99s = p99s_over(runs);
    let p99 = |policy: &str| {
        p99s.iter()
            .find(|(p, _)| p == policy)
            .map(|(_, v)| median(&mut v.clone()))
    };
    let rr = p99("round_robin");
    let group: Vec<&str> = std::iter::once(lowest.best.as_str())
        .chain(lowest.tied.iter().map(|(p, _)| p.as_str()))
        .collect();
    let values: Vec<f64> = group.iter().filter_map(|p| p99(p)).collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    let span = |f: &dyn Fn(f64) -> String| {
        if group.len() == 1 {
            f(lo)
        } else {
            format!("{}–{}", f(lo), f(hi))
        }
    };
    let ms = |v: f64| format!("{v:.2}");
    let against = match rr {
        Some(_) if group.contains(&"round_robin") => {
            format!(
                " ({} ms): no policy was told apart from round_robin",
                span(&ms)
            )
        }
        Some(rr) => format!(
            ": {} round_robin's p99 ({} ms against {rr:.2} ms)",
            span(&|v| ratio(v, Some(rr))),
            span(&ms),
        ),
        None => format!(
            " ({} ms; round_robin did not run, so there is nothing to compare it with)",
            span(&ms)
        ),
    };
    let over = if runs.len() > 1 {
        format!(" (medians of {} runs)", runs.len())
    } else {
        String::new()
    };
    let list = |items: &[&str]| english_list(items);
    let mut lines = Vec::new();
    if lowest.tied.is_empty() {
        lines.push(format!("lowest real p99{over}: {}{against}", lowest.best));
        if runs.len() > 1 {
            lines.push(format!(
                "  told apart by the repeats: every run's p99 of {} is below every run's p99 of the others",
                lowest.best
            ));
        }
        return lines;
    }
    let cannot = if runs.len() > 1 {
        format!("{} runs cannot tell them apart", runs.len())
    } else {
        format!(
            "one run cannot tell them apart ({} runs it again)",
            names(Setting::Repeat)
        )
    };
    lines.push(format!(
        "lowest real p99{over}, tied: {}{against}; {cannot}:",
        list(&group)
    ));
    let of = |kind: Tie| -> Vec<&str> {
        lowest
            .tied
            .iter()
            .filter(|(_, t)| *t == kind)
            .map(|(p, _)| p.as_str())
            .collect()
    };
    let same = of(Tie::SameBehaviour);
    if !same.is_empty() {
        lines.push(format!(
            "  {} behave{} as {} does in this scenario (the same simulated figures from the same seed)",
            list(&same),
            if same.len() == 1 { "s" } else { "" },
            lowest.best
        ));
    }
    let noise = of(Tie::WithinNoise);
    if !noise.is_empty() {
        let why = if runs.len() > 1 {
            "their p99s over the runs overlap"
        } else {
            "the 95 % intervals of the p99s overlap"
        };
        lines.push(format!(
            "  {} {} within the noise of {} ({why})",
            list(&noise),
            if noise.len() == 1 { "is" } else { "are" },
            lowest.best
        ));
    }
    lines
}

/// `items` as an English list: `a`, `a and b`, `a, b and c`.
fn english_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The result of `scenario` (seed `seed`, its policies in the `order` of the scenario file),
/// before anything about how well the two modes agree: each policy's p99 and p99.9,
/// real and simulated, against round_robin's of the same mode (and the simulated p99 against the
/// oracle's), its traffic to faulty backends, all from the first of the real `runs`, and the
/// [`headline`] over all of them: which policy had the lowest real p99, or which tied for it. The
/// table is at most 100 columns wide for labels of up to 24 characters. Settings are spelt by
/// `names`.
pub fn result_lines(
    scenario: &str,
    seed: u64,
    order: &[&str],
    sim: &RunSummary,
    runs: &[RealRun<'_>],
    names: Names,
) -> Vec<String> {
    let empty = RunSummary {
        rows: Vec::new(),
        ..sim.clone()
    };
    let real = runs.first().map_or(&empty, |r| r.summary);
    let find = |summary: &RunSummary, policy: &str| {
        summary.rows.iter().find(|r| r.policy == policy).cloned()
    };
    let rr_real = find(real, "round_robin");
    let rr_sim = find(sim, "round_robin");
    let oracle = find(sim, ORACLE);
    // Every policy of either mode, in scenario order.
    let policies: Vec<&str> = order
        .iter()
        .copied()
        .filter(|p| find(real, p).is_some() || find(sim, p).is_some())
        .collect();
    let width = policies.iter().map(|p| p.len()).max().unwrap_or(6).max(6);
    let real_width = 7 + 1 + 5 + 1 + 7 + 1 + 5 + 1 + 7;
    let mut lines = vec![
        format!("scenario {scenario} (seed {seed}): each policy's tail latency in ms (below 1 is better:"),
        "×rr against round_robin's in the same mode, ×oracle the simulated p99 against the oracle's)"
            .to_string(),
        format!(
            "{:<width$}  {:<real_width$}  {}",
            "", "real", "simulated"
        ),
        format!(
            "{:<width$}  {:>7} {:>5} {:>7} {:>5} {:>7}  {:>7} {:>5} {:>7} {:>5} {:>7}",
            "policy", "p99", "×rr", "p99.9", "×rr", "faulty", "p99", "×rr", "p99.9", "×rr", "×oracle"
        ),
    ];
    let ms = |row: &Option<SummaryRow>, f: fn(&SummaryRow) -> f64| {
        row.as_ref()
            .map_or_else(|| "–".to_string(), |r| format!("{:.2}", f(r)))
    };
    let times = |row: &Option<SummaryRow>, base: &Option<SummaryRow>, f: fn(&SummaryRow) -> f64| {
        row.as_ref()
            .map_or_else(|| "–".to_string(), |r| ratio(f(r), base.as_ref().map(f)))
    };
    let p99 = |r: &SummaryRow| r.p99_ms;
    let p999 = |r: &SummaryRow| r.p999_ms;
    for policy in &policies {
        let (r, s) = (find(real, policy), find(sim, policy));
        let faulty = r.as_ref().map_or_else(
            || "–".to_string(),
            |r| format!("{:.2}%", 100.0 * r.slow_share),
        );
        lines.push(format!(
            "{:<width$}  {:>7} {:>5} {:>7} {:>5} {:>7}  {:>7} {:>5} {:>7} {:>5} {:>7}",
            policy,
            ms(&r, p99),
            times(&r, &rr_real, p99),
            ms(&r, p999),
            times(&r, &rr_real, p999),
            faulty,
            ms(&s, p99),
            times(&s, &rr_sim, p99),
            ms(&s, p999),
            times(&s, &rr_sim, p999),
            times(&s, &oracle, p99),
        ));
    }
    lines.extend(headline(sim, runs, names));
    if real.partial {
        lines.push(
            "(the real run stopped early: the policies it did not reach are missing)".to_string(),
        );
    }
    lines
}

/// One line of the agreement table: per percentile the simulated value and whether the real one
/// agrees with it; `real` is `None` for a policy the real run did not measure, whose real,
/// difference and agreement cells are left empty (`–`), not "-100 %, NO".
pub fn agreement_line(
    policy: &str,
    width: usize,
    sim: [(f64, bool); 2],
    real: Option<(f64, f64)>,
) -> String {
    let [(sim_p50, p50_ok), (sim_p99, p99_ok)] = sim;
    let cells = |sim: f64, real: Option<f64>, ok: bool| match real {
        Some(real) => (
            format!("{real:.2}"),
            pct(diff_pct(sim, real)),
            if ok { "yes" } else { "NO" },
        ),
        None => ("–".to_string(), "–".to_string(), "–"),
    };
    let (r50, d50, ok50) = cells(sim_p50, real.map(|r| r.0), p50_ok);
    let (r99, d99, ok99) = cells(sim_p99, real.map(|r| r.1), p99_ok);
    format!(
        "{policy:<width$} {sim_p50:>8.2} {r50:>8} {d50:>7} {ok50:>5}  {sim_p99:>8.2} {r99:>8} {d99:>7} {ok99:>5}"
    )
}

/// The agreement table of `scenario` (seed `seed`), its count and the run's incidents, and the calibrated table if the floor
/// was measured (`floor_ns`, its median).
pub fn comparison_lines(
    scenario: &str,
    seed: u64,
    rows: &[CompareRow],
    real_summary: &RunSummary,
    floor_ns: Option<u64>,
) -> Vec<String> {
    let mut lines = Vec::new();
    lines.push(format!(
        "how well the simulation agrees with the real run over loopback TCP (scenario {scenario}, seed {seed}):"
    ));
    let width = rows
        .iter()
        .map(|a| a.policy.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let header = [
        "policy", "sim p50", "real p50", "diff", "ok", "sim p99", "real p99", "diff", "ok",
    ];
    lines.push(format!(
        "{:<width$} {:>8} {:>8} {:>7} {:>5}  {:>8} {:>8} {:>7} {:>5}",
        header[0],
        header[1],
        header[2],
        header[3],
        header[4],
        header[5],
        header[6],
        header[7],
        header[8]
    ));
    let real = |a: &CompareRow| a.measured().then_some((a.real_p50_ms, a.real_p99_ms));
    for a in rows {
        let line = [(a.sim_p50_ms, a.p50_agrees), (a.sim_p99_ms, a.p99_agrees)];
        lines.push(agreement_line(&a.policy, width, line, real(a)));
    }
    let agree = rows.iter().filter(|a| a.agrees()).count();
    let measured = rows.iter().filter(|a| a.measured()).count();
    let of = if measured == rows.len() {
        format!("{measured} policies")
    } else {
        format!(
            "{measured} measured policies ({} not reached by the real run)",
            rows.len() - measured
        )
    };
    lines.push(format!(
        "{agree} of {of} agree (p50 and p99 within ±20 %, or within 1 ms)"
    ));
    if real_summary.partial {
        lines.push("(the real run stopped early: it covers less time than the simulation, so this comparison is not a fair one)".to_string());
    }
    lines.extend(crate::table::incident_lines(
        &real_summary.incidents,
        &real_summary.backends,
    ));
    if let Some(extra) = floor_ns {
        lines.push(format!(
            "calibrated: the simulation again with the harness floor's median ({:.3} ms, the real stack's cost per RPC) as network round trip:",
            extra as f64 / 1e6
        ));
        for a in rows {
            if let (Some(p50), Some(p50_ok), Some(p99), Some(p99_ok)) = (
                a.calibrated_sim_p50_ms,
                a.calibrated_p50_agrees,
                a.calibrated_sim_p99_ms,
                a.calibrated_p99_agrees,
            ) {
                let line = [(p50, p50_ok), (p99, p99_ok)];
                lines.push(agreement_line(&a.policy, width, line, real(a)));
            }
        }
        let cal = rows
            .iter()
            .filter(|a| a.calibrated_agrees() == Some(true))
            .count();
        let calibrated = rows
            .iter()
            .filter(|a| a.calibrated_agrees().is_some())
            .count();
        lines.push(if calibrated == 0 {
            "the calibrated simulation did not run (the run was interrupted before it)".to_string()
        } else if calibrated == rows.len() {
            format!("{cal} of {calibrated} policies agree after calibration")
        } else {
            format!(
                "{cal} of {calibrated} calibrated policies agree after calibration ({} not calibrated)",
                rows.len() - calibrated
            )
        });
    }
    lines
}

#[cfg(test)]
mod tests;
