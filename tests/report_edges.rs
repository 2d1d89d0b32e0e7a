//! `lblab report` at its edges, through the binary: folders that do not exist and scenario files
//! that would share one results folder are errors that say so.

mod common;

use common::{arg, assert_says, fails, scratch};
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
