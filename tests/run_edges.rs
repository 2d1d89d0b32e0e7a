//! A run's results at the edges of its charts: a chart budget that runs out, an earlier run's
//! charts in the folder, a chart that cannot be written on a real run, and data files that cannot
//! be written (a full disk).

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's

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

#[test]
fn a_real_run_whose_data_files_cannot_be_written_still_prints_every_policy() {
    let (dir, scenario) = scenario_file(
        "real-data-fails",
        "tiny.toml",
        &tiny("tiny", &["round_robin", "peak_ewma"]),
    );
    let out = dir.join("out");
    // A folder where summary.csv goes: no data file of the run can be written (as on a full
    // disk), neither at the checkpoint after the first policy nor at the end.
    std::fs::create_dir_all(out.join("summary.csv")).expect("creates the folder");
    let mut args = vec!["real", arg(&scenario), "--out", arg(&out)];
    args.extend(POLITE);
    let run = lblab(&args);
    let (stdout, err) = (text(&run.stdout), text(&run.stderr));
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("summary.csv") && err.contains("table above"),
        "{err}"
    );
    // Both policies' figures are on the screen, the second one's included.
    for policy in ["round_robin", "peak_ewma"] {
        assert!(
            stdout.lines().any(|l| l.trim_start().starts_with(policy)),
            "{policy} missing from the table: {stdout}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs `lblab sim scenario --out <tmpfs>/out` on a tmpfs of `size` (e.g. `4k`) in a mount
/// namespace of its own, then lists what the folder holds: (exit code, stdout, stderr), or
/// `None` where no such namespace can be made here.
fn sim_on_a_small_disk(scenario: &std::path::Path, size: &str) -> Option<(i32, String, String)> {
    let mount =
        std::env::temp_dir().join(format!("lblab-small-disk-{}-{size}", std::process::id()));
    std::fs::create_dir_all(&mount).ok()?;
    let script = r#"mount -t tmpfs -o "size=$1" tmpfs "$2" || exit 77
"$3" sim "$4" --out "$2/out"; rc=$?
echo "listing:"; ls -A "$2/out" 2>/dev/null
exit $rc"#;
    let run = std::process::Command::new("unshare")
        .args(["-Urm", "sh", "-c", script, "sh", size])
        .arg(&mount)
        .arg(env!("CARGO_BIN_EXE_lblab"))
        .arg(scenario)
        .output()
        .ok()?;
    let _ = std::fs::remove_dir(&mount);
    let code = run.status.code()?;
    (code != 77 && !text(&run.stderr).contains("unshare:"))
        .then(|| (code, text(&run.stdout), text(&run.stderr)))
}

#[test]
fn a_full_disk_keeps_the_table_and_leaves_no_probe_or_lock_behind() {
    let (dir, scenario) = scenario_file(
        "full-disk",
        "tiny.toml",
        &tiny("tiny", &["round_robin", "peak_ewma"]),
    );
    // One page: the lock file takes it, and the write probe cannot be written.
    let Some((code, stdout, err)) = sim_on_a_small_disk(&scenario, "4k") else {
        eprintln!("skipped: no mount namespace with a tmpfs here");
        return;
    };
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot write into the results folder"),
        "{err}"
    );
    assert_eq!(err.matches("No space left on device").count(), 1, "{err}");
    let listing = stdout.split("listing:").nth(1).unwrap_or("");
    assert!(listing.trim().is_empty(), "left behind: {listing}");
    // Room for the lock and the probe, not for the results: the table is printed all the same.
    let (code, stdout, err) = sim_on_a_small_disk(&scenario, "12k").expect("as above");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    for policy in ["round_robin", "peak_ewma"] {
        assert!(
            stdout.lines().any(|l| l.trim_start().starts_with(policy)),
            "{policy} missing from the table: {stdout}"
        );
    }
    let listing = stdout.split("listing:").nth(1).unwrap_or("");
    assert!(!listing.contains(".lblab"), "left behind: {listing}");
    std::fs::remove_dir_all(&dir).ok();
}
