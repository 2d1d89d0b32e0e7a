//! End-to-end tests of the `lblab` binary: `check`, `sim` (including byte-identical output for the
//! same seed) and `sweep`, and their errors on bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn lblab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lblab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs lblab")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh empty folder under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creates scratch folder");
    dir
}

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
        let out = lblab(&["check", json]);
        assert!(out.status.success(), "{json}: {}", text(&out.stderr));
        let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("prints JSON");
        assert!(printed["loadBalancingConfig"].is_array());
    }
}

#[test]
fn check_fills_in_every_default() {
    let out = lblab(&[
        "check",
        r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{}}]}"#,
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pe = &v["loadBalancingConfig"][0]["peak_ewma_experimental"];
    assert_eq!(pe["choiceCount"], 2);
    assert_eq!(pe["decayTime"], "10s");
    assert_eq!(pe["defaultRtt"], "0.03s");
}

#[test]
fn check_rejects_choice_count_one_naming_the_field() {
    let out = lblab(&[
        "check",
        r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{"choiceCount":1}}]}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("loadBalancingConfig[0].peak_ewma_experimental.choiceCount"),
        "{err}"
    );
    assert!(err.contains("at least 2"), "{err}");
}

#[test]
fn check_reports_json_syntax_errors_with_position() {
    let out = lblab(&["check", "{\"loadBalancingConfig\":[\n{\"round_robin\":}]}"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("line 2"),
        "{}",
        text(&out.stderr)
    );
}

const SMALL: &str = r#"
name = "small"
seed = 7
[workload]
clients = 2
rate = 400
warmup = "1s"
duration = "3s"
[[fleet]]
name = "main"
count = 4
service_time = { dist = "lognormal", median = "2ms", p99 = "8ms" }
[[fleet]]
name = "slow"
service_time = { dist = "lognormal", median = "2ms", p99 = "8ms" }
[[faults]]
kind = "slowdown"
targets = ["slow"]
factor = 10
[[policies]]
name = "round_robin"
config = '{"loadBalancingConfig":[{"round_robin":{}}]}'
[[policies]]
name = "peak_ewma"
config = '{"loadBalancingConfig":[{"peak_ewma_experimental":{}}]}'
[[policies]]
name = "oracle"
config = '{"loadBalancingConfig":[{"oracle":{}}]}'
"#;

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn sim_output_is_byte_identical_for_the_same_seed() {
    let dir = scratch("determinism");
    let scenario = dir.join("small.toml");
    std::fs::write(&scenario, SMALL).unwrap();
    let (a, b, c) = (dir.join("a"), dir.join("b"), dir.join("c"));
    for (out, seed) in [(&a, "7"), (&b, "7"), (&c, "8")] {
        let run = lblab(&[
            "sim",
            scenario.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--seed",
            seed,
        ]);
        assert!(run.status.success(), "{}", text(&run.stderr));
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
    let dir = scratch("table");
    let scenario = dir.join("small.toml");
    std::fs::write(&scenario, SMALL).unwrap();
    let run = lblab(&[
        "sim",
        scenario.to_str().unwrap(),
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    let out = text(&run.stdout);
    assert!(run.status.success(), "{}", text(&run.stderr));
    for word in [
        "policy",
        "p99 ms",
        "round_robin",
        "peak_ewma",
        "oracle",
        "requests per core-second",
    ] {
        assert!(out.contains(word), "{word} missing from:\n{out}");
    }
    let summary = std::fs::read_to_string(dir.join("out/summary.csv")).unwrap();
    assert!(summary.starts_with("policy,requests,ok,errors,deadline_exceeded,dropped,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,mean_ms,slow_share"));
}

#[test]
fn sim_rejects_a_bad_scenario_naming_file_and_field() {
    let dir = scratch("bad");
    let scenario = dir.join("bad.toml");
    std::fs::write(&scenario, SMALL.replace("count = 4", "count = 0")).unwrap();
    let run = lblab(&["sim", scenario.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2));
    let err = text(&run.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("fleet[0].count"),
        "{err}"
    );

    std::fs::write(
        &scenario,
        SMALL.replace("rate = 400", "rate = 400\nbogus = 1"),
    )
    .unwrap();
    let err = text(&lblab(&["sim", scenario.to_str().unwrap()]).stderr);
    assert!(
        err.contains("bad.toml") && err.contains("bogus") && err.contains("line"),
        "{err}"
    );
}

#[test]
fn sweep_writes_csv_and_heatmap() {
    let dir = scratch("sweep");
    let scenario = dir.join("small.toml");
    std::fs::write(&scenario, SMALL).unwrap();
    let out = dir.join("out");
    let run = lblab(&[
        "sweep",
        scenario.to_str().unwrap(),
        "--decay-times",
        "1s,10s",
        "--choice-counts",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + 2 * 4,
        "2 decay times x 4 ablation variants:\n{csv}"
    );
    assert!(out.join("heatmap_p99_rtt0_03s.png").exists());
}
