//! The first hour, round two: a headline that never crowns a policy over one it cannot be told
//! apart from, runs that never write into each other's folders, and bare scenario names that work
//! wherever lblab runs.

mod common;

use std::fs::File;
use std::path::Path;
use std::process::{Command, Output};

use common::{arg, assert_says, scenario_file, text, trickle, LOGNORMAL_2MS, POLITE};

/// `lblab args` run in `dir`, with its cache folder (where built-in scenarios are written) under
/// `dir` too, so that the test writes nothing outside the target folder.
fn lblab_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lblab"))
        .args(args)
        .current_dir(dir)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .expect("runs lblab")
}

fn ok(run: &Output) -> String {
    assert!(run.status.success(), "{}", text(&run.stderr));
    text(&run.stdout)
}

#[test]
fn compare_never_crowns_a_policy_over_the_same_algorithm_and_has_its_own_folder() {
    // `again` is peak_ewma under another label: the same algorithm, which one run must never
    // name as the winner over peak_ewma (or the other way round).
    let toml = trickle("tiny", &["peak_ewma"])
        .lb("again", "peak_ewma_experimental")
        .warmup("500ms")
        .duration("1s")
        .group("main", 2, LOGNORMAL_2MS, &[])
        .group("slow", 1, LOGNORMAL_2MS, &[])
        .fault("slowdown", &["slow"], &["factor = 10"])
        .toml();
    let (dir, scenario) = scenario_file("first-hour-compare", "tiny.toml", &toml);
    // Twice: a repeat never separates the same algorithm.
    // The scenario's 1 s, not compare's default 10 s.
    let mut args = vec!["compare", arg(&scenario), "--repeat", "2"];
    args.extend(POLITE);
    let printed = ok(&lblab_in(&dir, &args));
    let headline: Vec<&str> = printed
        .lines()
        .skip_while(|l| !l.starts_with("lowest real p99"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(!headline.is_empty(), "no headline:\n{printed}");
    let first = headline[0];
    assert!(
        !first.contains("p99: peak_ewma")
            && !first.contains("p99: again")
            && !first.contains("runs): peak_ewma")
            && !first.contains("runs): again"),
        "crowned one of two labels of the same algorithm:\n{printed}"
    );
    // Named together, and why.
    assert!(
        first.starts_with("lowest real p99 (medians of 2 runs), tied: ")
            && first.contains("peak_ewma")
            && first.contains("again"),
        "{printed}"
    );
    assert!(
        headline
            .iter()
            .any(|l| l.contains("the same simulated figures")),
        "{printed}"
    );
    // Its own folder: lblab-out/tiny/compare, which a `lblab sim` of the same scenario does not
    // write into.
    let compare = dir.join("lblab-out/tiny/compare");
    assert!(compare.join("compare.csv").is_file() && compare.join("sim/summary.json").is_file());
    assert!(compare.join("real-repeat/run-2/summary.json").is_file());
    assert!(printed.contains("real-repeat/run-2"), "{printed}");
    let real = common::summary(&compare.join("real"));
    assert_eq!(real["measured_s"], 1.0, "{real}");
    let snapshot = || ["", "sim", "real"].map(|d| common::files(&compare.join(d)));
    let before = snapshot();
    ok(&lblab_in(&dir, &["sim", "tiny.toml"]));
    assert!(dir.join("lblab-out/tiny/sim/summary.json").is_file());
    assert!(snapshot() == before, "sim changed the compare's files");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_run_into_a_folder_inside_a_running_runs_folder_is_refused() {
    let toml = trickle("quick", &["round_robin"])
        .warmup("500ms")
        .duration("1s")
        .group("main", 2, LOGNORMAL_2MS, &[])
        .toml();
    let (dir, scenario) = scenario_file("first-hour-nested", "quick.toml", &toml);
    let outer = dir.join("compare");
    std::fs::create_dir_all(&outer).unwrap();
    // A running compare holds its folder's lock, as lblab does.
    let lock = File::create(outer.join(".lblab.lock")).unwrap();
    lock.try_lock().expect("the folder is free");
    let inner = outer.join("sim");
    let run = lblab_in(&dir, &["sim", arg(&scenario), "--out", arg(&inner)]);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run.stderr));
    let err = text(&run.stderr);
    assert_says(&err, &["inside", arg(&outer), "another lblab run"]);
    assert!(!inner.join("summary.json").exists());
    // Once that run has ended, the folder is free.
    drop(lock);
    ok(&lblab_in(
        &dir,
        &["sim", arg(&scenario), "--out", arg(&inner)],
    ));
    assert!(inner.join("summary.json").is_file());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bare_scenario_name_works_outside_the_checkout() {
    let dir = common::scratch("first-hour-anywhere");
    let run = lblab_in(
        &dir,
        &[
            "sim",
            "healthy",
            "--policy",
            "round_robin",
            "--duration",
            "2s",
        ],
    );
    let printed = ok(&run);
    let err = text(&run.stderr);
    assert_says(&err, &["built into lblab", arg(&dir.join("cache/lblab"))]);
    assert!(printed.contains("round_robin"), "{printed}");
    let summary = common::summary(&dir.join("lblab-out/healthy/sim"));
    assert_eq!(summary["measured_s"], 2.0, "{summary}");
    // So does regress, which takes several.
    let args = [
        "regress",
        "healthy",
        "--seeds",
        "1",
        "--warmup",
        "500ms",
        "--duration",
        "1s",
        "--policy",
        "round_robin",
        "--write-baseline",
        "b.csv",
    ];
    ok(&lblab_in(&dir, &args));
    assert!(dir.join("b.csv").is_file());
    // A name that is nothing: the error says where it looked.
    let run = lblab_in(&dir, &["sim", "one-slo"]);
    assert_eq!(run.status.code(), Some(2));
    assert_says(
        &text(&run.stderr),
        &[
            arg(&dir.join("scenarios")),
            "nor a scenario built into lblab",
            "did you mean one-slow?",
        ],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn report_refuses_a_results_folder_without_results() {
    let dir = common::scratch("first-hour-report");
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let run = common::lblab(&["report", "--results", arg(&dir.join("empty"))]);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run.stdout));
    assert_says(&text(&run.stderr), &["no results of any scenario", "empty"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// The README's section `heading`, up to the next `## `.
fn readme_section(heading: &str) -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme.find(heading).expect("the section");
    let rest = &readme[start + heading.len()..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
}

#[test]
fn the_readme_set_up_gives_the_quick_check_and_what_the_first_hour_costs() {
    let setup = readme_section("## Set up").replace('\n', " ");
    for said in [
        "cargo run --release -- sim one-slow",
        "The first build takes",
        "GB",
        "3 min 51 s scheduled",
        "in all",
        "lblab-out/one-slow/compare/",
        "tied",
    ] {
        assert!(
            setup.contains(said),
            "the set-up section does not say {said:?}"
        );
    }
    // The README's examples write into the scratch folder, never into the checkout's root.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let mut baselines = 0;
    for line in readme.lines().filter(|l| l.starts_with("lblab ")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            if ["--write-baseline", "--baseline"].contains(&pair[0]) {
                baselines += 1;
                assert!(pair[1].starts_with("lblab-out/"), "{line}");
            }
        }
    }
    assert!(baselines >= 2, "the regress example is gone");
}

#[test]
fn regress_writes_its_baseline_into_a_folder_it_makes() {
    let toml = trickle("regress-folder", &["round_robin"])
        .warmup("500ms")
        .duration("1s")
        .group("main", 2, LOGNORMAL_2MS, &[])
        .toml();
    let (dir, scenario) = scenario_file("first-hour-regress", "s.toml", &toml);
    let baseline = dir.join("lblab-out/baseline.csv");
    let args = [
        "regress",
        arg(&scenario),
        "--seeds",
        "2",
        "--write-baseline",
        arg(&baseline),
    ];
    ok(&lblab_in(&dir, &args));
    assert!(baseline.is_file());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_interrupted_compare_crowns_nothing_and_claims_no_calibration() {
    let toml = trickle("cut", &["round_robin", "peak_ewma"])
        .warmup("500ms")
        .duration("20s")
        .group("main", 2, LOGNORMAL_2MS, &[])
        .toml();
    let (dir, scenario) = scenario_file("first-hour-cut", "cut.toml", &toml);
    let out = dir.join("out");
    // With the floor (1 s), so that the calibration would be printed had it run.
    let child = Command::new(env!("CARGO_BIN_EXE_lblab"))
        .args(["compare", arg(&scenario), "--out", arg(&out)])
        .args(["--floor", "1s", "--attempts", "1", "--no-realtime"])
        .current_dir(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts lblab");
    // Into round_robin's 10 s (compare's default length), before peak_ewma has run.
    std::thread::sleep(std::time::Duration::from_secs(8));
    common::signal(child.id(), "-INT");
    let run = child.wait_with_output().expect("lblab ends");
    assert_eq!(run.status.code(), Some(130), "{}", text(&run.stderr));
    let printed = text(&run.stdout);
    assert!(
        printed.contains("no lowest real p99: a real run stopped after"),
        "{printed}"
    );
    assert!(
        !printed.lines().any(|l| l.starts_with("lowest real p99")),
        "{printed}"
    );
    assert!(
        printed.contains("the calibrated simulation did not run"),
        "{printed}"
    );
    assert!(!printed.contains("agree after calibration"), "{printed}");
    std::fs::remove_dir_all(&dir).ok();
}
