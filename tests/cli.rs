//! End-to-end tests of the `lblab` binary: `check`, `sim` (including byte-identical output for the
//! same seed) and `sweep`, their errors on bad input, and SIGINT/SIGTERM during `sim`, `sweep`,
//! `real` and `compare`.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{
    arg, assert_no_temporary_files, assert_says, fails, fails_with, files, lblab, one_slow,
    scenario_file, scratch, stops_and_keeps_partial_results, succeeds, text, with_policies,
    LOGNORMAL_2MS, POLITE,
};
use lblab_model::testing::ScenarioBuilder;

#[test]
fn check_accepts_every_readme_example() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let examples: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.trim().strip_prefix("lblab check '"))
        .filter_map(|l| l.strip_suffix('\''))
        .collect();
    assert!(examples.len() >= 3, "README shows lblab check examples");
    for json in examples {
        let out = succeeds(&["check", json]);
        let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("prints JSON");
        assert!(printed["loadBalancingConfig"].is_array());
    }
}

#[test]
fn check_fills_in_every_default() {
    let out = succeeds(&[
        "check",
        r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{}}]}"#,
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pe = &v["loadBalancingConfig"][0]["peak_ewma_experimental"];
    assert_eq!(pe["choiceCount"], 2);
    assert_eq!(pe["decayTime"], "10s");
    assert_eq!(pe["defaultRtt"], "0.03s");
    assert_eq!(
        pe["lblabAblation"],
        serde_json::json!({"decay": "time_weighted", "sampling": "distinct", "streams": "ignore",
            "initial": "zero", "idle": "pick_clock", "probes": "many", "peak": "stalled", "failures": "hold", "stall": true, "errorSamples": 10, "errorPenalty": 1.0})
    );
}

#[test]
fn check_rejects_choice_count_one_naming_the_field() {
    let err = fails_with(
        1,
        &[
            "check",
            r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{"choiceCount":1}}]}"#,
        ],
    );
    assert!(
        err.contains("loadBalancingConfig[0].peak_ewma_experimental.choiceCount"),
        "{err}"
    );
    assert!(err.contains("at least 2"), "{err}");
}

#[test]
fn check_reports_json_syntax_errors_with_position() {
    let err = fails_with(
        1,
        &["check", "{\"loadBalancingConfig\":[\n{\"round_robin\":}]}"],
    );
    assert!(err.contains("line 2"), "{err}");
}

/// Two clients, four backends and a slow one, three policies, a few seconds.
fn small() -> ScenarioBuilder {
    let run = ScenarioBuilder::new("small")
        .seed(7)
        .clients(2)
        .rate(400.0)
        .warmup("1s")
        .duration("3s");
    with_policies(
        one_slow(run, 4, LOGNORMAL_2MS),
        &["round_robin", "peak_ewma", "oracle"],
    )
}

/// A fresh scratch folder `name` holding [`small`] as `small.toml`: (folder, scenario path).
fn small_scenario(name: &str) -> (PathBuf, PathBuf) {
    scenario_file(name, "small.toml", &small().toml())
}

#[test]
fn sim_output_is_byte_identical_for_the_same_seed() {
    let (dir, scenario) = small_scenario("determinism");
    let (a, b, c) = (dir.join("a"), dir.join("b"), dir.join("c"));
    for (out, seed) in [(&a, "7"), (&b, "7"), (&c, "8")] {
        succeeds(&["sim", arg(&scenario), "--out", arg(out), "--seed", seed]);
    }
    let (fa, fb, fc) = (files(&a), files(&b), files(&c));
    let names: Vec<&str> = fa.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "summary.csv",
        "summary.json",
        "timeseries.csv",
        "peak_ewma.hlog",
        "spectrum.png",
        "spectrum.svg",
        "p99_over_time.png",
        "traffic_share.svg",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert_eq!(fa, fb, "same seed, same bytes");
    assert_ne!(
        fa.iter().find(|f| f.0 == "summary.csv"),
        fc.iter().find(|f| f.0 == "summary.csv"),
        "another seed, other results"
    );
}

#[test]
fn sim_prints_the_table_and_speed() {
    let (dir, scenario) = small_scenario("table");
    let run = succeeds(&["sim", arg(&scenario), "--out", arg(&dir.join("out"))]);
    let out = text(&run.stdout);
    assert_says(
        &out,
        &[
            "policy",
            "p99 ms",
            "round_robin",
            "peak_ewma",
            "oracle",
            "requests per core-second",
        ],
    );
    let summary = std::fs::read_to_string(dir.join("out/summary.csv")).unwrap();
    assert!(summary.starts_with("policy,requests,ok,errors,deadline_exceeded,dropped,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,mean_ms,slow_share"));
}

#[test]
fn sim_rejects_a_bad_scenario_naming_file_and_field() {
    let (_dir, scenario) = scenario_file(
        "bad",
        "bad.toml",
        &small().group_key("main", "count", "0").toml(),
    );
    let err = fails(&["sim", arg(&scenario)]);
    assert_says(&err, &["bad.toml", "fleet[0].count"]);

    std::fs::write(&scenario, small().workload("bogus", Some("1")).toml()).unwrap();
    let err = text(&lblab(&["sim", arg(&scenario)]).stderr);
    assert_says(&err, &["bad.toml", "bogus", "line"]);
}

#[test]
fn sweep_writes_csv_and_heatmap() {
    let (dir, scenario) = small_scenario("sweep");
    let out = dir.join("out");
    succeeds(&[
        "sweep",
        arg(&scenario),
        "--decay-times",
        "1s,10s",
        "--choice-counts",
        "2",
        "--out",
        arg(&out),
    ]);
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + 2 * 4,
        "2 decay times x 4 ablation variants:\n{csv}"
    );
    assert!(out.join("heatmap_p99_rtt0_03s.png").exists());
}

#[test]
fn sweep_varies_scenario_fields_over_seeds_deterministically() {
    let (dir, scenario) = small_scenario("sweep-vary");
    let run = |out: &Path| {
        succeeds(&[
            "sweep",
            arg(&scenario),
            "--vary",
            "fleet.main.count=2,4",
            "--vary",
            "faults.0.factor=2,10",
            "--seeds",
            "3",
            "--out",
            arg(out),
        ]);
        std::fs::read_to_string(out.join("sweep.csv")).unwrap()
    };
    let (a, b) = (dir.join("a"), dir.join("b"));
    let csv = run(&a);
    // 2 x 2 points, 3 policies each.
    assert_eq!(csv.lines().count(), 1 + 4 * 3, "{csv}");
    assert!(
        csv.starts_with("fleet.main.count,faults.0.factor,backends,"),
        "{csv}"
    );
    let runs = std::fs::read_to_string(a.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 1 + 4 * 3 * 3, "{runs}");
    for chart in ["p99", "p999", "p99_vs_oracle", "slow_share", "herd"] {
        assert!(a.join(format!("{chart}.png")).exists(), "{chart}");
    }
    assert_eq!(csv, run(&b), "same scenario and seeds, same numbers");
    assert_eq!(
        std::fs::read(a.join("p99.svg")).unwrap(),
        std::fs::read(b.join("p99.svg")).unwrap()
    );
}

#[test]
fn sweep_names_an_unknown_path_or_a_rejected_value_before_any_work() {
    let (dir, scenario) = small_scenario("sweep-vary-bad");
    let out = dir.join("out");
    let (s, o) = (arg(&scenario), arg(&out));
    let err = fails(&["sweep", s, "--vary", "fleet.fast.count=1,2", "--out", o]);
    assert_says(&err, &["fleet.fast.count", "main, slow"]);
    let err = fails(&["sweep", s, "--vary", "workload.rat=1", "--out", o]);
    assert!(err.contains("no field `rat` in `workload`"), "{err}");
    let err = fails(&["sweep", s, "--vary", "fleet.main.count=2,0", "--out", o]);
    assert_says(&err, &["fleet.main.count=0", "fleet[0].count"]);
    let err = fails(&["sweep", s, "--vary", "faults.0.factor=0.5", "--out", o]);
    assert_says(&err, &["faults.0.factor=0.5", "faults[0].factor"]);
    let err = fails(&[
        "sweep",
        s,
        "--vary",
        "workload.rate=1",
        "--x",
        "nope",
        "--out",
        o,
    ]);
    assert!(err.contains("--x \"nope\""), "{err}");
    assert!(
        !out.exists(),
        "nothing is written for a sweep that cannot run"
    );
}

#[test]
fn sim_with_seeds_writes_intervals_and_every_run() {
    let (dir, scenario) = small_scenario("sim-seeds");
    let out = dir.join("out");
    let run = succeeds(&["sim", arg(&scenario), "--seeds", "6", "--out", arg(&out)]);
    let intervals = std::fs::read_to_string(out.join("intervals.csv")).unwrap();
    assert!(intervals.starts_with("policy,metric,median,lo,hi,seeds,coverage"));
    let line = intervals
        .lines()
        .find(|l| l.starts_with("peak_ewma,p99_vs_round_robin,"))
        .expect("peak_ewma's ratio to round_robin");
    let cols: Vec<f64> = line
        .split(',')
        .skip(2)
        .take(3)
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(cols[1] <= cols[0] && cols[0] <= cols[2], "{line}");
    assert!(
        cols[2] < 1.0,
        "peak_ewma beats round_robin on every seed's pairing: {line}"
    );
    let seeds = std::fs::read_to_string(out.join("seeds.csv")).unwrap();
    assert_eq!(seeds.lines().count(), 1 + 6 * 3);
    assert!(text(&run.stdout).contains("across 6 seeds"));
}

// ---- bad input: every flag and file is checked before any work starts -------------------------

#[test]
fn sim_names_a_missing_scenario_file() {
    let err = fails(&["sim", "no/such/scenario.toml"]);
    assert!(err.contains("no/such/scenario.toml"), "{err}");
}

#[test]
fn sim_error_names_file_field_and_line() {
    let bad = small().fault_key(0, "factor", "nan").toml();
    let (_dir, scenario) = scenario_file("bad-line", "bad.toml", &bad);
    let err = fails(&["sim", arg(&scenario)]);
    let line = bad[..bad.find("factor = nan").unwrap()]
        .matches('\n')
        .count()
        + 1;
    assert!(err.contains(&format!("bad.toml:{line}:")), "{err}");
    assert_says(&err, &["`faults[0].factor`", ">= 1"]);
}

#[test]
fn sim_rejects_an_out_path_that_is_a_file_before_simulating() {
    let (dir, scenario) = small_scenario("out-is-file");
    let file = dir.join("taken");
    std::fs::write(&file, "x").unwrap();
    let err = fails(&["sim", arg(&scenario), "--out", arg(&file)]);
    assert_says(&err, &["--out", "not a folder"]);
}

#[test]
fn sim_rejects_an_unknown_policy_label() {
    let (dir, scenario) = small_scenario("unknown-policy");
    let out = dir.join("out");
    let err = fails(&[
        "sim",
        arg(&scenario),
        "--policy",
        "peak",
        "--out",
        arg(&out),
    ]);
    assert_says(&err, &["--policy \"peak\"", "peak_ewma"]);
}

#[test]
fn sim_rejects_zero_jobs() {
    let err = fails(&["sim", "scenarios/one-slow.toml", "--jobs", "0"]);
    assert!(err.contains("--jobs"), "{err}");
}

#[test]
fn sim_rejects_a_seed_that_is_not_a_number() {
    let err = fails(&["sim", "scenarios/one-slow.toml", "--seed=-1"]);
    assert!(err.contains("--seed"), "{err}");
}

#[test]
fn sweep_rejects_bad_duration_flags() {
    let (dir, scenario) = small_scenario("sweep-bad-flags");
    let (s, out) = (arg(&scenario), dir.join("out"));
    for (flag, value, expect) in [
        ("--decay-times", "0s", "greater than 0"),
        ("--decay-times", "5x", "not a duration"),
        ("--decay-times", "1e30h", "8760h"),
        ("--decay-times", "-1s", ">= 0"),
        ("--default-rtts", "nan", "not a duration"),
        ("--default-rtts", "", "not a duration"),
        ("--choice-counts", "1", "2..=10"),
        ("--choice-counts", "11", "2..=10"),
    ] {
        let err = fails(&["sweep", s, &format!("{flag}={value}"), "--out", arg(&out)]);
        assert!(
            err.contains(flag) && err.contains(expect),
            "{flag} {value}: {err}"
        );
    }
    let err = fails(&["sweep", s, "--decay-times", "1s,1000ms", "--out", arg(&out)]);
    assert_says(&err, &["--decay-times", "twice"]);
}

#[test]
fn check_refuses_an_endless_config_file() {
    let err = fails(&["check", "/dev/zero"]);
    assert_says(&err, &["/dev/zero", "1 MiB"]);
}

#[test]
fn check_names_where_a_config_file_stops_being_utf8() {
    let dir = common::scratch("check-utf8");
    let file = dir.join("latin1.json");
    // "é" in Latin-1 (0xE9) on line 2, after 14 characters.
    std::fs::write(&file, b"{\n  \"name\": \"caf\xe9\"}").unwrap();
    let err = fails(&["check", arg(&file)]);
    assert_says(
        &err,
        &["latin1.json", "not UTF-8", "line 2, column 15", "byte 16"],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sim_refuses_an_endless_scenario_file() {
    let err = fails(&["sim", "/dev/zero"]);
    assert_says(&err, &["/dev/zero", "MiB"]);
}

#[test]
fn check_names_a_missing_config_file() {
    let err = fails(&["check", "no-such-config.json"]);
    assert!(err.contains("no-such-config.json"), "{err}");
}

// ---- interruption: SIGINT / SIGTERM stop within seconds and keep partial results --------------

/// A scenario that would take minutes to simulate.
fn long() -> ScenarioBuilder {
    let run = ScenarioBuilder::new("long")
        .clients(2)
        .rate(20000.0)
        .duration("1h")
        .group("main", 8, LOGNORMAL_2MS, &[]);
    with_policies(run, &["round_robin", "peak_ewma"])
}

/// `lblab <command> <long scenario> --out <out> <extra>`, interrupted by `sig` after a second;
/// returns the results folder.
fn long_run_stopped_by(sig: &str, command: &str, extra: &[&str]) -> PathBuf {
    long_run_stopped_after(sig, command, extra, Duration::from_secs(1)).0
}

/// [`long_run_stopped_by`] after `after`; also returns what the run printed on stderr.
fn long_run_stopped_after(
    sig: &str,
    command: &str,
    extra: &[&str],
    after: Duration,
) -> (PathBuf, String) {
    let folder = format!("{}-{command}", sig.trim_start_matches('-'));
    let (dir, scenario) = scenario_file(&folder, "long.toml", &long().toml());
    let out = dir.join("out");
    let mut args = vec![command, arg(&scenario), "--out", arg(&out)];
    args.extend(extra);
    let run = stops_and_keeps_partial_results(&args, sig, after, &out);
    (out, run.stderr)
}

#[test]
fn sim_stops_on_sigint_and_keeps_partial_results() {
    // Stopped after 12 s: by then one simulation of an hour per policy has shown, as a plain
    // line (stderr is not a terminal), how far its simulated clock got and the time to go.
    let (out, stderr) = long_run_stopped_after("-INT", "sim", &[], Duration::from_secs(12));
    assert!(out.join("timeseries.csv").exists() && out.join("peak_ewma.hlog").exists());
    let line = stderr
        .lines()
        .find(|l| l.contains("/7200 simulated s"))
        .unwrap_or_else(|| panic!("no progress line within 12 s:\n{stderr}"));
    assert!(line.contains("elapsed") && line.contains("to go"), "{line}");
}

#[test]
fn sim_stops_on_sigterm_and_keeps_partial_results() {
    long_run_stopped_by("-TERM", "sim", &[]);
}

#[test]
fn sweep_stops_on_sigint_and_keeps_partial_results() {
    let out = long_run_stopped_by("-INT", "sweep", &["--decay-times", "1s,10s"]);
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert!(
        csv.lines().skip(1).all(|l| l.ends_with(",true")),
        "cut-short points are marked:\n{csv}"
    );
}

#[test]
fn sweep_stops_on_sigterm_and_keeps_partial_results() {
    long_run_stopped_by("-TERM", "sweep", &["--decay-times", "1s", "--no-ablations"]);
}

/// [`long`] at a rate the debug build of the real harness serves easily: an hour per policy.
fn real_long() -> ScenarioBuilder {
    long()
        .name("real-long")
        .clients(1)
        .rate(300.0)
        .warmup("1s")
        .group_key("main", "count", "3")
}

#[test]
fn real_stops_on_sigint_and_keeps_partial_results() {
    let (dir, scenario) = scenario_file("sigint-real", "long.toml", &real_long().toml());
    let out = dir.join("out");
    let mut args = vec!["real", arg(&scenario), "--out", arg(&out)];
    args.extend(POLITE);
    let run = stops_and_keeps_partial_results(&args, "-INT", Duration::from_secs(4), &out);
    let written = common::written_after(&out.join("summary.json"), &run);
    assert!(
        written < common::RESULTS_PROMPT,
        "results written {written:?} after the signal"
    );
    let summary = common::summary(&out);
    let rows = summary["rows"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        1,
        "only the first policy had started: {summary}"
    );
    assert!(rows[0]["ok"].as_u64().unwrap() > 100, "{summary}");
    assert!(out.join("harness.json").exists() && out.join("round_robin.hlog").exists());
}

#[test]
fn compare_stops_on_sigterm_and_keeps_partial_results() {
    let (dir, scenario) = scenario_file(
        "sigterm-compare",
        "long.toml",
        &real_long().duration("2m").toml(),
    );
    let out = dir.join("out");
    let mut args = vec!["compare", arg(&scenario), "--out", arg(&out)];
    args.extend(POLITE);
    let run =
        stops_and_keeps_partial_results(&args, "-TERM", Duration::from_secs(6), &out.join("real"));
    // The simulation had finished; the real run is partial, and so marked in compare.csv.
    assert_eq!(common::summary(&out.join("sim"))["partial"], false);
    let written = common::written_after(&out.join("real/summary.json"), &run);
    assert!(
        written < common::RESULTS_PROMPT,
        "results written {written:?} after the signal"
    );
    assert_no_temporary_files(&out);
    let csv = std::fs::read_to_string(out.join("compare.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "real_partial").unwrap();
    let row: Vec<&str> = csv
        .lines()
        .nth(1)
        .expect("a compared policy")
        .split(',')
        .collect();
    assert_eq!(row[col], "true", "{csv}");
}

const ENVOY_PEAK_EWMA: &str =
    "type.googleapis.com/envoy.extensions.load_balancing_policies.peak_ewma.v3alpha.PeakEwma";

#[test]
fn check_maps_an_envoy_cluster_onto_peak_ewma_and_lists_what_it_drops() {
    let cluster = serde_json::json!({"name": "backend", "load_balancing_policy": {"policies": [
        {"typed_extension_config": {"name": "envoy.load_balancing_policies.peak_ewma",
            "typed_config": {"@type": ENVOY_PEAK_EWMA, "decay_time": "5s", "penalty_value": 1e5}}}]}});
    let out = succeeds(&["check", &cluster.to_string()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("prints JSON");
    let pe = &v["loadBalancingConfig"][0]["peak_ewma_experimental"];
    assert_eq!(pe["choiceCount"], 2);
    assert_eq!(pe["decayTime"], "5s");
    assert_eq!(
        pe["defaultRtt"], "0.03s",
        "Envoy's default_rtt has no counterpart: the proposal's own default stays"
    );
    let err = text(&out.stderr);
    assert_says(
        &err,
        &[
            "dropped: default_rtt = \"0.01s\"",
            "dropped: aggregation_interval = \"0.1s\"",
            "dropped: max_samples_per_host = 1000",
            "dropped: penalty_value = 100000.0",
            "no peak",
            "no idle decay",
            "whole milliseconds",
        ],
    );
    // The load_balancing_policy object alone, from a file.
    let lb = cluster["load_balancing_policy"].to_string();
    let (_dir, file) = scenario_file("check-xds", "lb.json", &lb);
    let out = succeeds(&["check", arg(&file)]);
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again, v);
}

#[test]
fn check_maps_an_a52_typed_struct_through_the_normal_parser() {
    let ts = |value: serde_json::Value| {
        serde_json::json!({"policies": [{"typed_extension_config": {"name": "pe", "typed_config": {
            "@type": "type.googleapis.com/xds.type.v3.TypedStruct",
            "type_url": "type.googleapis.com/peak_ewma_experimental", "value": value}}}]})
        .to_string()
    };
    let out = succeeds(&["check", &ts(serde_json::json!({"choiceCount": 3}))]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["loadBalancingConfig"][0]["peak_ewma_experimental"]["choiceCount"],
        3
    );

    let err = fails_with(1, &["check", &ts(serde_json::json!({"choiceCount": 1}))]);
    assert!(err.contains("invalid xDS load-balancing config"), "{err}");
    assert!(
        err.contains("policies[0].typed_extension_config.typed_config.value.choiceCount"),
        "{err}"
    );
}

#[test]
fn check_rejects_bad_xds_naming_the_path() {
    let doc = |typed: serde_json::Value| {
        serde_json::json!({"load_balancing_policy": {"policies": [
            {"typed_extension_config": {"name": "x", "typed_config": typed}}]}})
        .to_string()
    };
    let at = "load_balancing_policy.policies[0].typed_extension_config.typed_config";
    for (typed, path, what) in [
        (
            serde_json::json!({"@type": "type.googleapis.com/example.Unknown"}),
            "load_balancing_policy.policies".to_string(),
            "no supported policy",
        ),
        (
            serde_json::json!({"@type": ENVOY_PEAK_EWMA, "decay_time": "10 s"}),
            format!("{at}.decay_time"),
            "proto3 duration",
        ),
        (
            serde_json::json!({"@type": "type.googleapis.com/xds.type.v3.TypedStruct", "value": {}}),
            format!("{at}.type_url"),
            "is required",
        ),
    ] {
        let err = fails_with(1, &["check", &doc(typed)]);
        assert!(err.contains(&format!("`{path}`")), "{path}: {err}");
        assert!(err.contains(what), "{what}: {err}");
    }
}

#[test]
fn loadgen_refuses_one_start_at_for_several_policies() {
    // One fault-timeline origin for every policy made each run after the first start late, and
    // every one of its arrivals was dropped as overload without a word.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs()
        .to_string();
    let out = lblab(&[
        "loadgen",
        "scenarios/one-slow.toml",
        "--targets",
        "127.0.0.1:1",
        "--policy",
        "round_robin",
        "--policy",
        "peak_ewma",
        "--start-at",
        &now,
    ]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_says(&err, &["one --policy per run"]);
}

#[test]
fn harness_flags_out_of_range_are_rejected_before_any_work() {
    // Each used to panic, abort or be accepted silently.
    for (args, expect) in [
        (
            vec!["backend", "scenarios/healthy.toml", "--start-at", "1e19"],
            "within a day",
        ),
        (
            vec![
                "loadgen",
                "scenarios/healthy.toml",
                "--targets",
                "127.0.0.1:1",
                "--start-at",
                "1e19",
            ],
            "within a day",
        ),
        (
            vec![
                "real",
                "scenarios/healthy.toml",
                "--fleet-threads",
                "100000",
            ],
            "fleet-threads",
        ),
        (
            vec!["real", "scenarios/healthy.toml", "--client-threads", "0"],
            "client-threads",
        ),
        (
            vec!["real", "scenarios/healthy.toml", "--attempts", "0"],
            "attempts",
        ),
        (
            vec!["real", "scenarios/healthy.toml", "--spin", "8760h"],
            "more than 10ms",
        ),
        (
            vec!["loadgen", "127.0.0.1:1", "--spin", "11ms", "--dry-run"],
            "more than 10ms",
        ),
    ] {
        let msg = fails(&args);
        assert!(msg.contains(expect), "{args:?}: {msg}");
        assert!(!msg.contains("panicked"), "{args:?}: {msg}");
    }
}

#[test]
fn an_os_error_is_printed_once_and_bad_utf8_has_a_position() {
    let msg = fails(&["sim", "does-not-exist.toml"]);
    assert_eq!(msg.matches("os error 2").count(), 1, "{msg}");
    let dir = std::env::temp_dir().join(format!("lblab-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    std::fs::write(&file, b"name = \"x\"\n# caf\xe9\n").unwrap();
    let msg = fails(&["sim", arg(&file)]);
    assert_says(&msg, &["bad.toml:2:6: ", "UTF-8"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_run_with_nothing_runnable_in_its_mode_is_an_error() {
    let msg = fails(&[
        "sim",
        "scenarios/one-slow.toml",
        "--policy",
        "tower_p2c_peak_ewma",
    ]);
    assert!(
        msg.contains("none of the selected policies runs in the simulator"),
        "{msg}"
    );
    let msg = fails(&[
        "real",
        "scenarios/one-slow.toml",
        "--policy",
        "oracle",
        "--floor",
        "0s",
    ]);
    assert!(
        msg.contains("none of the selected policies runs in the real harness"),
        "{msg}"
    );
}

#[test]
fn completions_are_printed_for_a_shell() {
    let out = succeeds(&["completions", "bash"]);
    let script = text(&out.stdout);
    assert_says(&script, &["lblab", "sweep"]);
}

#[test]
fn an_unwritable_out_folder_fails_before_any_work() {
    // /proc exists and is a folder, so only a write probe tells that nothing can go there.
    let msg = fails(&["sim", "scenarios/healthy.toml", "--out", "/proc"]);
    assert!(
        msg.contains("cannot write into the results folder"),
        "{msg}"
    );
}

#[test]
fn only_lblabs_own_temporary_files_are_removed_and_no_unlisted_hlog() {
    let (dir, scenario) = small_scenario("own-tmp");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join(".notes.tmp"), "the user's").unwrap();
    std::fs::write(out.join(".summary.json.tmp"), "half").unwrap();
    std::fs::write(out.join("gone_policy.hlog"), "old").unwrap();
    std::fs::write(out.join("gone_policy.hgrm"), "old").unwrap();
    succeeds(&["sim", arg(&scenario), "--out", arg(&out)]);
    // Every policy of the run has its percentile distribution beside its interval log.
    for name in std::fs::read_dir(&out).unwrap().flatten() {
        let name = name.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".hlog").filter(|s| *s != "gone_policy") {
            let hgrm = std::fs::read_to_string(out.join(format!("{stem}.hgrm"))).unwrap();
            assert!(hgrm.starts_with("       Value     Percentile"), "{hgrm}");
        }
    }
    assert!(
        out.join(".notes.tmp").exists(),
        "a user's .tmp file must stay"
    );
    assert!(!out.join(".summary.json.tmp").exists());
    // No summary.json listed them: not lblab's to delete (tests/out_folder.rs has one that did).
    assert!(
        out.join("gone_policy.hlog").exists() && out.join("gone_policy.hgrm").exists(),
        "an hlog no earlier run listed must stay"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_target_off_this_host_is_warned_about_without_dialling_it() {
    // --dry-run stops before the first connection: the documentation address is never dialled.
    const OFF_HOST: &str = "192.0.2.1:1"; // lblab:not-dialled (--dry-run)
    let targets = format!("127.0.0.1:1,{OFF_HOST}");
    let out = succeeds(&[
        "loadgen",
        "scenarios/healthy.toml",
        "--targets",
        &targets,
        "--duration",
        "1s",
        "--dry-run",
    ]);
    let err = text(&out.stderr);
    let warned = format!("{OFF_HOST} is not a loopback address");
    assert!(err.contains(&warned), "{err}");
    assert!(!err.contains("127.0.0.1:1 is not"), "{err}");
    let said = text(&out.stdout);
    assert_says(
        &said,
        &[
            "dry run: nothing was sent",
            "policy round_robin",
            "target 127.0.0.1:1",
        ],
    );
}

#[test]
fn a_run_that_fails_leaves_no_empty_results_folder() {
    let dir = scratch("no-empty-out");
    // Parents the run would have made for the folder go too (lblab-out/<scenario>/ by default).
    let out = dir.join("made").join("never-written");
    let msg = fails(&[
        "real",
        "scenarios/one-slow.toml",
        "--policy",
        "oracle",
        "--floor",
        "0s",
        "--out",
        arg(&out),
    ]);
    assert!(msg.contains("none of the selected policies"), "{msg}");
    assert!(!out.exists(), "{} was left behind", out.display());
    assert!(!dir.join("made").exists(), "its parent was left behind");
    assert!(dir.exists(), "a folder that was there stays");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_run_over_the_memory_budget_is_refused_before_any_work() {
    // One backend at a trickle for a year: small to write, a time-series row per second to keep.
    let year = small().duration("8760h").toml();
    let (dir, file) = scenario_file("memory", "year.toml", &year);
    let started = std::time::Instant::now();
    let msg = fails(&["sim", arg(&file), "--out", arg(&dir.join("out"))]);
    assert_says(&msg, &["--memory-budget", "GiB"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_sweep_point_over_the_memory_budget_is_refused_before_any_work() {
    let msg = fails(&[
        "sweep",
        "scenarios/one-slow.toml",
        "--vary",
        "workload.duration=1s,8760h",
        "--memory-budget",
        "1GiB",
    ]);
    assert!(msg.contains("--memory-budget"), "{msg}");
}

#[test]
fn backend_for_stops_on_its_own_and_says_so() {
    let started = std::time::Instant::now();
    let out = succeeds(&[
        "backend",
        "scenarios/healthy.toml",
        "--for",
        "1s",
        "--no-realtime",
    ]);
    let waited = started.elapsed();
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("serving for 1s (or until Ctrl-C)"),
        "{stdout}"
    );
    assert!(stdout.contains("served "), "{stdout}");
    assert!(waited >= Duration::from_secs(1), "stopped after {waited:?}");
    let msg = fails(&["backend", "scenarios/healthy.toml", "--for", "0s"]);
    assert!(msg.contains("--for 0s"), "{msg}");
}

#[test]
fn a_fleet_beyond_the_open_file_limit_is_refused_before_it_starts() {
    // 100,000 backends × 50 clients: millions of sockets, beyond what Linux allows a process.
    let wide = small()
        .group_key("main", "count", "99999")
        .clients(50)
        .toml();
    let (dir, file) = scenario_file("nofile", "wide.toml", &wide);
    let msg = fails(&["backend", arg(&file), "--for", "1s"]);
    assert!(msg.contains("open files"), "{msg}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn report_refuses_a_fifo_or_device_as_a_result_file_instead_of_blocking() {
    let dir = scratch("report-fifo");
    std::fs::create_dir_all(dir.join("scenarios")).unwrap();
    std::fs::copy("scenarios/healthy.toml", dir.join("scenarios/healthy.toml")).unwrap();
    let sim = dir.join("results/healthy/sim");
    std::fs::create_dir_all(&sim).unwrap();
    let fifo = sim.join("summary.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let started = std::time::Instant::now();
    let msg = fails(&["report", "--root", arg(&dir)]);
    assert!(msg.contains("not a regular file"), "{msg}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_scratch_folder_is_named_after_the_scenario_file_not_its_name() {
    // A copy of a scenario that keeps its `name` must not share the original's scratch folder.
    let (dir, _) = scenario_file("scratch-by-file", "copy-of-small.toml", &small().toml());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lblab"))
        .args(["sim", "copy-of-small.toml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(dir
        .join("lblab-out/copy-of-small/sim/summary.json")
        .is_file());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn vectors_writes_the_committed_conformance_files_byte_for_byte() {
    let dir = scratch("vectors-out");
    succeeds(&["vectors", "--out", arg(&dir)]);
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/vectors");
    let mut names: Vec<_> = std::fs::read_dir(&committed)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    for name in names {
        let want = std::fs::read(committed.join(&name)).unwrap();
        let got = std::fs::read(dir.join(&name)).unwrap_or_default();
        assert!(
            got == want,
            "{name:?} differs from `lblab vectors`; regenerate with `lblab vectors --out conformance/vectors`"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
