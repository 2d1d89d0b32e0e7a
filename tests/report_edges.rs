//! `lblab report` at its edges, through the binary: folders that do not exist and scenario files
//! that would share one results folder are errors that say so, and `--check` notices a page that
//! hides which algorithm a run measured.

mod common;

use common::{arg, assert_says, fails, lblab, scratch, text};
use lblab_model::testing::{constant, ScenarioBuilder};

#[test]
fn a_missing_results_or_scenarios_folder_is_named_as_missing() {
    let err = fails(&["report", "--check", "--results", "nope"]);
    assert_says(&err, &["--results nope", "no such folder"]);
    let err = fails(&["report", "--check", "--scenarios", "nope"]);
    assert_says(&err, &["--scenarios nope", "no such folder"]);
}

#[test]
fn two_scenarios_of_one_name_are_refused() {
    let root = scratch("report-same-name");
    let scenarios = root.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::create_dir_all(root.join("results")).unwrap();
    let toml = ScenarioBuilder::new("twin")
        .rate(10.0)
        .duration("1s")
        .group("m", 1, &constant("1ms"), &[])
        .toml();
    std::fs::write(scenarios.join("a.toml"), &toml).unwrap();
    std::fs::write(scenarios.join("b.toml"), &toml).unwrap();
    let err = fails(&["report", "--root", arg(&root), "--check"]);
    assert_says(&err, &["b.toml", "`name`", "\"twin\"", "scenarios/a.toml"]);
    std::fs::remove_dir_all(&root).ok();
}

/// Copies the folder `from` into `to`, recursively.
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A page whose runs measured two algorithms under one label says so, and `--check` fails when
/// the page and the files' recorded configs disagree either way: a page that hides the mix, or a
/// page that claims a mix the files no longer show.
#[test]
fn report_check_fails_on_a_page_that_hides_which_algorithm_a_run_measured() {
    let root = scratch("report-mixed-algorithms");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::copy(
        repo.join("scenarios/one-slow.toml"),
        root.join("scenarios/one-slow.toml"),
    )
    .unwrap();
    let results = root.join("results/one-slow");
    copy_tree(&repo.join("results/one-slow"), &results);
    // The real runs' peak_ewma now records another algorithm: the peak on every slow answer.
    let summary_path = results.join("compare/real/summary.json");
    let original = std::fs::read_to_string(&summary_path).unwrap();
    let mut summary: serde_json::Value = serde_json::from_str(&original).unwrap();
    let configs = summary["configs"].as_array_mut().unwrap();
    let pe = configs
        .iter_mut()
        .find(|c| c["policy"] == "peak_ewma")
        .expect("the real runs record peak_ewma's config");
    pe["config"]["peak_ewma_experimental"]["lblabAblation"]["peak"] = "jump".into();
    std::fs::write(
        &summary_path,
        serde_json::to_string_pretty(&summary).unwrap(),
    )
    .unwrap();

    let report = |extra: &[&str]| {
        let mut args = vec!["report", "--root", arg(&root), "--chart-budget", "1ms"];
        args.extend_from_slice(extra);
        lblab(&args)
    };
    let out = report(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page_path = results.join("README.md");
    let page = std::fs::read_to_string(&page_path).unwrap();
    let sentence = page
        .lines()
        .find(|l| l.contains("the real runs (`compare/`) measured"))
        .unwrap_or_else(|| panic!("the page names both algorithms:\n{page}"))
        .to_string();
    assert!(sentence.contains("jump"), "{sentence}");
    let check = || lblab(&["report", "--root", arg(&root), "--check"]);
    let out = check();
    assert!(out.status.success(), "{}", text(&out.stderr));

    // A page that hides the mix is caught.
    std::fs::write(&page_path, page.replace(&sentence, "")).unwrap();
    let out = check();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_says(&text(&out.stderr), &["one-slow/README.md", "differs"]);

    // So is a page that claims a mix the files no longer show (the first document named may be
    // the evidence's README, whose count of runs of each algorithm changed too).
    std::fs::write(&page_path, &page).unwrap();
    std::fs::write(&summary_path, &original).unwrap();
    let out = check();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_says(&text(&out.stderr), &["README.md", "differs"]);
    std::fs::remove_dir_all(&root).ok();
}

/// A first Ctrl-C stops `lblab report` between two scenarios' charts, before any document is
/// written, and it exits 130 (before, it died of the signal, or ran to the end where SIGINT was
/// ignored, as in a shell's background job).
#[test]
fn report_stops_on_the_first_sigint_before_writing_the_documents() {
    let root = scratch("report-sigint");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    copy_tree(&repo.join("results"), &root.join("results"));
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    for entry in std::fs::read_dir(repo.join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            std::fs::copy(
                &path,
                root.join("scenarios").join(path.file_name().unwrap()),
            )
            .unwrap();
        }
    }
    // A document that a finished report would rewrite.
    let readme = root.join("results/README.md");
    std::fs::write(&readme, "stale\n").unwrap();
    let run = common::interrupted(
        &["report", "--root", arg(&root)],
        "-INT",
        std::time::Duration::from_millis(1500),
    );
    assert_eq!(run.code, Some(130), "{}", run.stderr);
    assert!(run.took < common::PROMPT, "took {:?} to stop", run.took);
    assert!(
        run.stderr.contains("documents were not written"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "stale\n");
    std::fs::remove_dir_all(&root).ok();
}
