//! A comparison of the simulator with the real run as text, as `lblab compare` prints it: each
//! mode's tail latencies against round_robin's and the oracle's, and how well the two agree
//! ([`CompareRow`], before and after calibration).

use crate::compare::{diff_pct, CompareRow};
use crate::schema::{RunSummary, SummaryRow};
use crate::ORACLE;

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

/// The result of `scenario` (seed `seed`, its policies in the `order` of the scenario file),
/// before anything about how well the two modes agree: each policy's p99 and p99.9,
/// real and simulated, against round_robin's of the same mode (and the simulated p99 against the
/// oracle's), its traffic to faulty backends, and which policy had the lowest real p99.
pub fn result_lines(
    scenario: &str,
    seed: u64,
    order: &[&str],
    sim: &RunSummary,
    real: &RunSummary,
) -> Vec<String> {
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
    let mut lines = vec![
        format!(
            "scenario {} (seed {}): each policy's tail latency, ×rr against round_robin's in the same mode, ×oracle the simulated p99 against the oracle's (below 1 is better)",
            scenario, seed
        ),
        format!(
            "{:<width$}  {:>11} {:>6} {:>12} {:>6} {:>10}  {:>11} {:>6} {:>12} {:>6} {:>8}",
            "policy",
            "real p99",
            "×rr",
            "real p99.9",
            "×rr",
            "to faulty",
            "sim p99",
            "×rr",
            "sim p99.9",
            "×rr",
            "×oracle"
        ),
    ];
    let ms = |row: &Option<SummaryRow>, f: fn(&SummaryRow) -> f64| {
        row.as_ref()
            .map_or_else(|| "–".to_string(), |r| format!("{:.2} ms", f(r)))
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
            "{:<width$}  {:>11} {:>6} {:>12} {:>6} {:>10}  {:>11} {:>6} {:>12} {:>6} {:>8}",
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
    let best = real
        .rows
        .iter()
        .filter(|r| r.p99_ms.is_finite() && r.requests > 0)
        .min_by(|a, b| a.p99_ms.total_cmp(&b.p99_ms));
    if let Some(best) = best {
        let against = match &rr_real {
            Some(rr) if rr.policy != best.policy => format!(
                ": {} round_robin's p99 ({:.2} ms against {:.2} ms), p99.9 {}",
                ratio(best.p99_ms, Some(rr.p99_ms)),
                best.p99_ms,
                rr.p99_ms,
                ratio(best.p999_ms, Some(rr.p999_ms)),
            ),
            Some(_) => format!(" ({:.2} ms): no policy beat round_robin", best.p99_ms),
            None => format!(
                " ({:.2} ms; round_robin did not run, so there is nothing to compare it with)",
                best.p99_ms
            ),
        };
        lines.push(format!("lowest real p99: {}{against}", best.policy));
    }
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
        lines.push(format!(
            "{cal} of {} policies agree after calibration",
            rows.len()
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_that_rounds_to_zero_prints_without_a_sign() {
        assert_eq!(pct(-0.3), "0%");
        assert_eq!(pct(0.4), "0%");
        assert_eq!(pct(-12.6), "-13%");
        assert_eq!(pct(f64::NAN), "–");
    }

    #[test]
    fn a_policy_the_real_run_did_not_reach_has_empty_cells() {
        let line = agreement_line("oracle", 6, [(2.0, false), (8.0, false)], None);
        assert!(!line.contains("-100") && !line.contains("NO"), "{line}");
        assert_eq!(line.matches('–').count(), 6, "{line}");
        let line = agreement_line("rr", 6, [(2.0, true), (8.0, false)], Some((2.1, 12.0)));
        assert!(
            line.contains("5%") && line.contains("50%") && line.contains("NO"),
            "{line}"
        );
    }

    #[test]
    fn ratios_need_a_base() {
        assert_eq!(ratio(3.0, Some(12.0)), "0.25×");
        assert_eq!(ratio(3.0, None), "–");
        assert_eq!(ratio(3.0, Some(0.0)), "–");
    }
}
