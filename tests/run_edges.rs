//! A run's results at the edges of its charts: a chart budget that runs out, an earlier run's
//! charts in the folder, and a chart that cannot be written on a real run.

mod common;

use common::{arg, lblab, scenario_file, text, trickle, LOGNORMAL_2MS, POLITE};

/// Three backends at a trickle, half a second of warm-up and one measured.
fn tiny(name: &str, labels: &[&str]) -> String {
    trickle(name, labels)
        .warmup("500ms")
        .duration("1s")
        .group("main", 3, LOGNORMAL_2MS, &[])
        .toml()
}

#[test]
fn a_spent_chart_budget_skips_the_rest_by_name_and_keeps_the_data() {
    let (dir, scenario) =
        scenario_file("chart-budget", "tiny.toml", &tiny("tiny", &["round_robin"]));
    let out = dir.join("out");
    std::fs::create_dir_all(&out).expect("creates the folder");
    // An earlier run's chart, which this run does not draw: it must not stay as this run's.
    std::fs::write(out.join("traffic_share.svg"), "<svg/>").expect("writes a stale chart");
    let run = lblab(&[
        "sim",
        arg(&scenario),
        "--out",
        arg(&out),
        "--chart-budget",
        "1ns",
    ]);
    let err = text(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("charts skipped: p99_over_time, traffic_share")),
        "{err}"
    );
    assert!(text(&run.stdout).contains("round_robin"));
    for kept in [
        "summary.json",
        "summary.csv",
        "timeseries.csv",
        "spectrum.svg",
    ] {
        assert!(out.join(kept).is_file(), "{kept} missing");
    }
    for skipped in [
        "p99_over_time.svg",
        "traffic_share.svg",
        "traffic_share.png",
    ] {
        assert!(!out.join(skipped).exists(), "{skipped} drawn or stale");
    }
    let summary = std::fs::read_to_string(out.join("summary.json")).expect("summary.json");
    assert!(summary.contains("--chart-budget"), "{summary}");
    // 0 is unlimited: every chart, and no note.
    let run = lblab(&[
        "sim",
        arg(&scenario),
        "--out",
        arg(&out),
        "--chart-budget",
        "0s",
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert!(out.join("traffic_share.svg").is_file());
    let summary = std::fs::read_to_string(out.join("summary.json")).expect("summary.json");
    assert!(!summary.contains("--chart-budget"), "{summary}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_real_run_prints_and_keeps_harness_json_when_a_chart_cannot_be_written() {
    let (dir, scenario) = scenario_file(
        "real-chart-fails",
        "tiny.toml",
        &tiny("tiny", &["round_robin"]),
    );
    let out = dir.join("out");
    // A folder where a chart file goes: writing that chart fails.
    std::fs::create_dir_all(out.join("spectrum.svg")).expect("creates the folder");
    std::fs::create_dir_all(out.join("spectrum.png")).expect("creates the folder");
    let mut args = vec!["real", arg(&scenario), "--out", arg(&out)];
    args.extend(POLITE);
    let run = lblab(&args);
    let err = text(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("spectrum."), "names the chart's file: {err}");
    let stdout = text(&run.stdout);
    assert!(
        stdout.contains("round_robin"),
        "the table is printed: {stdout}"
    );
    for kept in [
        "summary.json",
        "harness.json",
        "statuses.csv",
        "timeseries.csv",
    ] {
        assert!(out.join(kept).is_file(), "{kept} missing: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
