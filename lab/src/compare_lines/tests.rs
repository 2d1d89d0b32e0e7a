//! `compare_lines`' unit tests.

use super::*;

/// [`super::headline`] with the settings in words.
fn headline(sim: &RunSummary, runs: &[RealRun<'_>]) -> Vec<String> {
    super::headline(sim, runs, Setting::word)
}

/// [`super::result_lines`] with the settings in words.
fn result_lines(
    scenario: &str,
    seed: u64,
    order: &[&str],
    sim: &RunSummary,
    runs: &[RealRun<'_>],
) -> Vec<String> {
    super::result_lines(scenario, seed, order, sim, runs, Setting::word)
}

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

fn row(policy: &str, p99: f64, requests: u64) -> SummaryRow {
    SummaryRow {
        policy: policy.into(),
        requests,
        ok: requests,
        errors: 0,
        deadline_exceeded: 0,
        dropped: 0,
        p50_ms: 2.0,
        p90_ms: 4.0,
        p99_ms: p99,
        p999_ms: 2.0 * p99,
        max_ms: 4.0 * p99,
        mean_ms: 2.5,
        slow_share: 0.01,
        incidents: 0,
    }
}

fn summary(rows: Vec<SummaryRow>, partial: bool) -> RunSummary {
    RunSummary {
        scenario: "s".into(),
        mode: lblab_record::Mode::Real,
        seed: 1,
        partial,
        backends: vec!["a".into(), "b".into()],
        fault_windows: Vec::new(),
        warmup_s: 1.0,
        measured_s: 10.0,
        rows,
        notes: Vec::new(),
        incidents: Vec::new(),
        rates: Vec::new(),
        configs: Vec::new(),
        experiment: None,
    }
}

/// Real p99s of `rows` with intervals of ±`half` ms around each.
fn intervals(rows: &[SummaryRow], half: f64) -> Vec<(String, (f64, f64))> {
    rows.iter()
        .map(|r| (r.policy.clone(), (r.p99_ms - half, r.p99_ms + half)))
        .collect()
}

#[test]
fn the_same_behaviour_is_never_crowned_over_itself() {
    // od(pe) behaves as pe does (the same simulated row) and is 0.24 ms lower in the real
    // run, outside the narrow intervals: still tied, never the winner alone.
    let sim = summary(
        vec![
            row("round_robin", 33.0, 100),
            row("pe", 8.2, 100),
            row("od(pe)", 8.2, 100),
        ],
        false,
    );
    let real_rows = vec![
        row("round_robin", 33.5, 90),
        row("pe", 8.5, 90),
        row("od(pe)", 8.26, 90),
    ];
    let real = summary(real_rows.clone(), false);
    let l = lowest(
        &sim,
        &[RealRun {
            summary: &real,
            intervals: &intervals(&real_rows, 0.05),
        }],
    )
    .unwrap();
    assert_eq!(l.best, "od(pe)");
    assert_eq!(l.tied, vec![("pe".to_string(), Tie::SameBehaviour)]);
    let lines = headline(
        &sim,
        &[RealRun {
            summary: &real,
            intervals: &intervals(&real_rows, 0.05),
        }],
    );
    assert!(
        lines[0].starts_with("lowest real p99, tied: od(pe) and pe"),
        "{lines:?}"
    );
    assert!(lines[1].contains("pe behaves as od(pe) does"), "{lines:?}");
    assert!(!lines.join("\n").contains("lowest real p99: "), "{lines:?}");
}

#[test]
fn within_the_noise_is_a_tie_and_outside_it_a_winner() {
    let sim = summary(
        vec![
            row("round_robin", 33.0, 100),
            row("pe", 8.2, 100),
            row("envoy", 8.1, 100),
        ],
        false,
    );
    let real_rows = vec![
        row("round_robin", 33.5, 90),
        row("pe", 8.2, 90),
        row("envoy", 8.4, 90),
    ];
    let real = summary(real_rows.clone(), false);
    // Intervals of ±0.15 ms overlap (8.35 ≥ 8.25): tied within the noise.
    let lines = headline(
        &sim,
        &[RealRun {
            summary: &real,
            intervals: &intervals(&real_rows, 0.15),
        }],
    );
    assert!(
        lines[0].starts_with("lowest real p99, tied: pe and envoy"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains("envoy is within the noise of pe"),
        "{lines:?}"
    );
    // Intervals of ±0.05 ms do not: pe is the lowest, alone.
    let lines = headline(
        &sim,
        &[RealRun {
            summary: &real,
            intervals: &intervals(&real_rows, 0.05),
        }],
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("lowest real p99: pe: 0.24× round_robin's"),
        "{lines:?}"
    );
    // Tied with round_robin itself: nothing beat it.
    let real_rows = vec![row("round_robin", 8.3, 90), row("pe", 8.2, 90)];
    let real = summary(real_rows.clone(), false);
    let lines = headline(
        &sim,
        &[RealRun {
            summary: &real,
            intervals: &intervals(&real_rows, 0.15),
        }],
    );
    assert!(
        lines[0].contains("no policy was told apart from round_robin"),
        "{lines:?}"
    );
}

#[test]
fn repeats_turn_a_tie_within_the_noise_into_a_decision() {
    let sim = summary(
        vec![
            row("round_robin", 33.0, 100),
            row("pe", 8.2, 100),
            row("envoy", 8.1, 100),
        ],
        false,
    );
    let run = |pe: f64, envoy: f64| {
        summary(
            vec![
                row("round_robin", 33.5, 90),
                row("pe", pe, 90),
                row("envoy", envoy, 90),
            ],
            false,
        )
    };
    // Wide intervals: one run is a tie.
    let (a, b, c) = (run(8.2, 8.4), run(8.25, 8.45), run(8.22, 8.5));
    let wide = intervals(&a.rows, 0.3);
    let one = [RealRun {
        summary: &a,
        intervals: &wide,
    }];
    assert!(headline(&sim, &one)[0].contains("tied"));
    assert!(headline(&sim, &one)[0].contains("(repeat runs it again)"));
    // Three runs, pe below envoy in every one and the ranges apart: pe alone.
    let three = [
        RealRun {
            summary: &a,
            intervals: &wide,
        },
        RealRun {
            summary: &b,
            intervals: &wide,
        },
        RealRun {
            summary: &c,
            intervals: &wide,
        },
    ];
    let lines = headline(&sim, &three);
    assert!(
        lines[0].starts_with("lowest real p99 (medians of 3 runs): pe: 0.25× round_robin's"),
        "{lines:?}"
    );
    assert!(lines[1].contains("told apart by the repeats"), "{lines:?}");
    // Ranges that overlap (envoy below pe in one run): still tied, said so.
    let d = run(8.3, 8.28);
    let overlapping = [
        RealRun {
            summary: &a,
            intervals: &wide,
        },
        RealRun {
            summary: &d,
            intervals: &wide,
        },
    ];
    let lines = headline(&sim, &overlapping);
    assert!(
        lines[0].contains("tied") && lines[0].contains("2 runs cannot tell them apart"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains("their p99s over the runs overlap"),
        "{lines:?}"
    );
}

#[test]
fn an_interrupted_run_crowns_nothing() {
    let sim = summary(
        vec![row("round_robin", 33.0, 100), row("lr", 27.0, 100)],
        false,
    );
    let real_rows = vec![row("round_robin", 33.5, 90), row("lr", 27.0, 90)];
    let real = summary(real_rows.clone(), true);
    let lines = headline(
        &sim,
        &[RealRun {
            summary: &real,
            intervals: &intervals(&real_rows, 0.05),
        }],
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("no lowest real p99: a real run stopped after 2"),
        "{lines:?}"
    );
}

#[test]
fn the_result_table_fits_100_columns() {
    let labels = [
        "round_robin",
        "peak_ewma(first_written)",
        "oracle",
        "tower_p2c_peak_ewma",
    ];
    let rows: Vec<SummaryRow> = labels.iter().map(|l| row(l, 1234.56, 10)).collect();
    let sim = summary(rows.clone(), false);
    let real = summary(rows.clone(), false);
    let lines = result_lines(
        "one-slow",
        1,
        &labels,
        &sim,
        &[RealRun {
            summary: &real,
            intervals: &intervals(&rows, 0.1),
        }],
    );
    for line in &lines[..3 + labels.len()] {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
}

#[test]
fn ratios_need_a_base() {
    assert_eq!(ratio(3.0, Some(12.0)), "0.25×");
    assert_eq!(ratio(3.0, None), "–");
    assert_eq!(ratio(3.0, Some(0.0)), "–");
}
