//! What a newcomer meets in the first ten minutes: the progress line of a real run on a terminal,
//! what `compare` prints (who won, before how well the modes agree), output into a closed pipe or
//! a full disk, a scenario given by its bare name, and the set-up the README gives.

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{
    arg, assert_says, lblab, scenario_file, succeeds, text, trickle, LOGNORMAL_2MS, POLITE,
};

/// Three backends at a trickle, one second of warm-up and two measured: real runs of seconds.
/// One of them, `slow`, has a tenfold slowdown.
fn tiny(name: &str, labels: &[&str]) -> String {
    trickle(name, labels)
        .warmup("1s")
        .duration("2s")
        .group("main", 2, LOGNORMAL_2MS, &[])
        .group("slow", 1, LOGNORMAL_2MS, &[])
        .fault("slowdown", &["slow"], &["factor = 10"])
        .toml()
}

/// The values (in seconds) that follow `label` (`"ETA "`) as `m:ss` in `output`.
fn clock_values(output: &str, label: &str) -> Vec<u64> {
    output
        .split(label)
        .skip(1)
        .filter_map(|rest| {
            let clock: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == ':')
                .collect();
            let (m, s) = clock.split_once(':')?;
            Some(m.parse::<u64>().ok()? * 60 + s.parse::<u64>().ok()?)
        })
        .collect()
}

#[test]
fn the_progress_eta_counts_scheduled_seconds_from_the_start() {
    // A terminal for the bar: util-linux's `script` runs the command on a pseudo-terminal.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to give the run a terminal");
        return;
    }
    let (dir, scenario) = scenario_file(
        "progress-pty",
        "tiny.toml",
        &tiny("tiny", &["round_robin", "peak_ewma"]),
    );
    let out = dir.join("out");
    let mut args = vec![
        env!("CARGO_BIN_EXE_lblab"),
        "real",
        arg(&scenario),
        "--out",
        arg(&out),
    ];
    args.extend(POLITE);
    let command = args
        .iter()
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let run = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .expect("runs script");
    let screen = text(&run.stdout);
    assert!(run.status.success(), "{}\n{screen}", text(&run.stderr));
    // Two policies of 1 s warm-up + 2 s each, no floor: 6 scheduled seconds.
    let etas = clock_values(&screen, "ETA ");
    assert!(!etas.is_empty(), "no progress bar drawn:\n{screen}");
    assert!(
        (5..=6).contains(&etas[0]),
        "the first ETA is the whole schedule, not 0: {etas:?}"
    );
    assert!(
        etas.iter().all(|&e| e <= 6),
        "ETA above the schedule: {etas:?}"
    );
    assert!(
        etas.windows(2).all(|w| w[1] <= w[0]),
        "the ETA never climbs: {etas:?}"
    );
    assert!(etas.contains(&0) || etas.contains(&1), "{etas:?}");
    // Elapsed time as m:ss, never rounded to whole minutes.
    assert!(screen.contains("0:00 elapsed"), "{screen}");
    assert!(!screen.contains("minute"), "{screen}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn compare_prints_who_won_before_the_agreement_and_names_its_chart() {
    let (dir, scenario) = scenario_file(
        "compare-result",
        "tiny.toml",
        &tiny("tiny", &["round_robin", "peak_ewma", "oracle"]),
    );
    let out = dir.join("out");
    let mut args = vec!["compare", arg(&scenario), "--out", arg(&out)];
    args.extend(POLITE);
    let printed = text(&succeeds(&args).stdout);
    let at = |what: &str| {
        printed
            .find(what)
            .unwrap_or_else(|| panic!("{what:?} missing from:\n{printed}"))
    };
    // The result first: p99 and p99.9, real and simulated, against round_robin's.
    assert!(
        at("p99.9") < at("how well the simulation agrees"),
        "{printed}"
    );
    assert!(
        at("lowest real p99") < at("how well the simulation agrees"),
        "{printed}"
    );
    assert_says(
        &printed,
        &["×rr", "real", "simulated", "p99.9", "×oracle", "faulty"],
    );
    let peak = printed
        .lines()
        .find(|l| l.starts_with("peak_ewma "))
        .expect("a row for peak_ewma");
    assert_eq!(peak.matches('×').count(), 5, "{peak}");
    assert!(!printed.contains("-0%"), "{printed}");
    let wrote = printed
        .lines()
        .find(|l| l.starts_with("wrote "))
        .expect("a wrote line");
    assert!(
        wrote.contains("compare.csv") && wrote.contains("compare.png"),
        "{wrote}"
    );
    assert!(out.join("compare.png").exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// `lblab args` with stdout into a pipe whose reading end is already closed.
fn into_a_closed_pipe(args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_lblab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(writer)
        .output()
        .expect("runs lblab")
}

#[test]
fn a_closed_stdout_pipe_ends_the_command_quietly() {
    let config = r#"{"loadBalancingConfig":[{"round_robin":{}}]}"#;
    for args in [vec!["check", config], vec!["completions", "bash"]] {
        let run = into_a_closed_pipe(&args);
        let err = text(&run.stderr);
        assert_eq!(run.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?} printed on stderr: {err}");
    }
    // An invalid config still exits 1, whether or not anyone reads stdout.
    let run = into_a_closed_pipe(&["check", r#"{"loadBalancingConfig":[]}"#]);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run.stderr));
}

#[test]
fn a_closed_stderr_pipe_never_panics() {
    // `lblab sweep … 2>&1 | head -1`: both streams into one pipe whose reader has gone. The
    // sweep's progress lines and the sim's notes meet the closed pipe; the command finishes its
    // work and writes its results.
    let (dir, scenario) = scenario_file(
        "closed-stderr",
        "tiny.toml",
        &tiny("tiny", &["round_robin", "peak_ewma"]),
    );
    let out = dir.join("out");
    let runs = [
        vec![
            "sweep",
            arg(&scenario),
            "--seeds",
            "3",
            "--vary",
            "fleet.main.count=2,3",
        ],
        vec!["sim", arg(&scenario), "--seeds", "3"],
    ];
    for (k, args) in runs.iter().enumerate() {
        let out = out.join(k.to_string());
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let run = Command::new(env!("CARGO_BIN_EXE_lblab"))
            .args(args)
            .args(["--out", arg(&out)])
            .stdout(writer.try_clone().expect("a second end"))
            .stderr(writer)
            .output()
            .expect("runs lblab");
        assert_eq!(run.status.code(), Some(0), "{args:?}: {:?}", run.status);
        assert!(
            out.read_dir()
                .map(|mut d| d.next().is_some())
                .unwrap_or(false),
            "{args:?} wrote no results"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_full_stdout_is_an_error_after_the_results_are_written() {
    let (dir, scenario) =
        scenario_file("full-stdout", "tiny.toml", &tiny("tiny", &["round_robin"]));
    let out = dir.join("out");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let run = Command::new(env!("CARGO_BIN_EXE_lblab"))
        .args(["sim", arg(&scenario), "--out", arg(&out)])
        .stdout(full)
        .output()
        .expect("runs lblab");
    let err = text(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("error: writing to standard output: No space left on device"),
        "{err}"
    );
    assert!(out.join("summary.json").exists(), "the results are written");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bare_scenario_name_is_found_in_the_scenarios_folder() {
    let out = common::scratch("bare-name");
    let run = succeeds(&[
        "sim",
        "healthy",
        "--policy",
        "round_robin",
        "--out",
        arg(&out),
    ]);
    assert!(
        text(&run.stderr).contains("scenarios/healthy.toml"),
        "says which file it ran: {}",
        text(&run.stderr)
    );
    assert!(out.join("summary.json").exists());
    // A name that is no scenario: the error says where it looked and what there is.
    let err = common::fails(&["sim", "one-slo"]);
    assert_says(
        &err,
        &[
            "one-slo",
            "scenarios/one-slo.toml",
            "did you mean",
            "one-slow",
        ],
    );
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn the_readme_puts_lblab_on_the_path_before_its_first_lblab_command() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let install = readme
        .find("cargo install --path .")
        .expect("the README says how to put lblab on PATH");
    let first_use = readme
        .lines()
        .scan(0, |offset, line| {
            let at = *offset;
            *offset += line.len() + 1;
            Some((at, line))
        })
        .find(|(_, line)| line.trim_start().starts_with("lblab "))
        .map(|(at, _)| at)
        .expect("a line starting with lblab");
    assert!(
        install < first_use,
        "`cargo install` comes after the first `lblab` command"
    );
}

#[test]
fn check_accepts_the_simulators_oracle_and_says_where_it_runs() {
    let out = lblab(&["check", r#"{"loadBalancingConfig":[{"oracle":{}}]}"#]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("prints JSON");
    assert_eq!(
        printed["loadBalancingConfig"][0]["oracle"],
        serde_json::json!({})
    );
    assert!(
        text(&out.stderr).contains("simulator"),
        "{}",
        text(&out.stderr)
    );
    // It takes no fields, and says so naming the field.
    let err = common::fails_with(
        1,
        &[
            "check",
            r#"{"loadBalancingConfig":[{"oracle":{"choiceCount":2}}]}"#,
        ],
    );
    assert!(err.contains("oracle.choiceCount"), "{err}");
}

#[test]
fn a_sweep_labels_its_brackets_with_their_true_coverage_and_says_why_oracle_charts_are_missing() {
    let out = common::scratch("sweep-labels");
    let run = succeeds(&[
        "sweep",
        "scenarios/healthy.toml",
        "--vary",
        "workload.rate=100",
        "--seeds",
        "6",
        "--policy",
        "round_robin",
        "--out",
        arg(&out),
    ]);
    let printed = text(&run.stdout);
    // Six seeds: the interval of the median between the 1st and 6th values covers 96.9 %.
    assert!(
        printed.starts_with("median over 6 seeds [96.9 % interval of the median]:"),
        "{printed}"
    );
    assert!(printed.contains("no p99_vs_oracle"), "{printed}");
    assert!(!out.join("p99_vs_oracle.png").exists());
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn memory_budget_is_offered_only_where_it_bounds_a_run() {
    // `report` for its --merge, whose merged run the budget bounds.
    for command in [
        "sim", "sweep", "regress", "real", "compare", "loadgen", "report",
    ] {
        let help = text(&succeeds(&[command, "--help"]).stdout);
        assert!(help.contains("--memory-budget"), "{command}: {help}");
    }
    for command in ["check", "vectors", "completions", "backend", "barrier"] {
        let help = text(&succeeds(&[command, "--help"]).stdout);
        assert!(!help.contains("--memory-budget"), "{command}: {help}");
    }
    let err = common::fails(&[
        "check",
        "--memory-budget",
        "1GiB",
        r#"{"loadBalancingConfig":[{"round_robin":{}}]}"#,
    ]);
    assert!(err.contains("--memory-budget"), "{err}");
}
