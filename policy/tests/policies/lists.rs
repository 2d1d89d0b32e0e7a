//! The lists a new policy must join, held against the policy table (`config::SUPPORTED`): the
//! policies every behaviour test runs, the children of the property tests, the test files this
//! binary compiles, and the names README and the scenario format document. A policy added to the
//! table and to none of these fails here.

use std::path::{Path, PathBuf};

use lblab_policy::config::SUPPORTED;

use crate::harness::EVERY_POLICY;
use crate::properties::CHILDREN;

/// Whether one of `entries` (`loadBalancingConfig` entries) selects `name`.
fn selects(entries: impl IntoIterator<Item = &'static str>, name: &str) -> bool {
    let key = format!("{{\"{name}\":");
    entries.into_iter().any(|e| e.contains(&key))
}

#[test]
fn every_policy_of_the_table_is_in_every_policy() {
    for name in SUPPORTED {
        assert!(
            selects(EVERY_POLICY.iter().map(|(_, e)| *e), name),
            "{name} is in the policy table but not in harness.rs's EVERY_POLICY"
        );
    }
}

#[test]
fn every_policy_but_the_wrapper_is_a_child_in_the_property_tests() {
    let wrapper = lblab_policy::outlier_detection::NAME;
    for name in SUPPORTED.iter().filter(|n| **n != wrapper) {
        assert!(
            selects(CHILDREN.iter().map(|c| c.1), name),
            "{name} is in the policy table but not in properties.rs's CHILDREN"
        );
    }
}

#[test]
fn every_test_file_of_this_folder_is_compiled() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/policies");
    let main = std::fs::read_to_string(dir.join("main.rs")).expect("main.rs");
    for entry in std::fs::read_dir(&dir).expect("tests/policies") {
        let path = entry.expect("an entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs") && stem != "main" {
            assert!(
                main.contains(&format!("mod {stem};")),
                "tests/policies/{stem}.rs has no `mod {stem};` line in main.rs, so it is never compiled"
            );
        }
    }
}

/// A file of the workspace, by its path from the workspace's root.
fn workspace_file(path: &str) -> String {
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn readme_and_the_scenario_format_name_every_policy() {
    for file in ["README.md", "docs/scenarios.md"] {
        let text = workspace_file(file);
        for name in SUPPORTED {
            assert!(
                text.contains(&format!("`{name}`")),
                "{file} does not name `{name}`, which is in the policy table"
            );
        }
    }
}
