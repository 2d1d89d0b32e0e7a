//! `lblab report` at its edges, through the binary: folders that do not exist and scenario files
//! that would share one results folder are errors that say so.

mod common;

use common::{arg, assert_says, fails, policies, scratch};

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
    let toml =
        "name = \"twin\"\n[workload]\nrate = 10\nduration = \"1s\"\n[[fleet]]\nname = \"m\"\n\
                count = 1\nservice_time = { dist = \"constant\", value = \"1ms\" }\n"
            .to_string()
            + &policies(&["round_robin"]);
    std::fs::write(scenarios.join("a.toml"), &toml).unwrap();
    std::fs::write(scenarios.join("b.toml"), &toml).unwrap();
    let err = fails(&["report", "--root", arg(&root), "--check"]);
    assert_says(&err, &["b.toml", "`name`", "\"twin\"", "scenarios/a.toml"]);
    std::fs::remove_dir_all(&root).ok();
}
