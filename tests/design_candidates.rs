//! The candidates' page (`results/design/candidates/README.md`) is generated from the CSVs beside
//! it: regenerated from a copy of them, it is byte for byte the committed page, so no number on
//! it was typed by hand or left behind by a later run.

mod common;

use std::path::Path;
use std::process::Command;

use common::scratch;

/// Copies every file of `from` but README.md into `to`, folders included.
fn copy_csvs(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("reads the results folder") {
        let entry = entry.expect("reads an entry");
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            std::fs::create_dir_all(&dst).expect("makes a folder");
            copy_csvs(&src, &dst);
        } else if entry.file_name() != "README.md" {
            std::fs::copy(&src, &dst).expect("copies a CSV");
        }
    }
}

#[test]
fn the_candidates_page_is_what_its_csvs_generate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let committed = root.join("results/design/candidates");
    let copy = scratch("design-candidates");
    copy_csvs(&committed, &copy);
    let out = Command::new("python3")
        .arg(root.join("scripts/design_candidates.py"))
        .arg(&copy)
        .output()
        .expect("runs python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = std::fs::read_to_string(committed.join("README.md")).expect("committed page");
    let got = std::fs::read_to_string(copy.join("README.md")).expect("regenerated page");
    assert_eq!(
        got, want,
        "rerun scripts/design_candidates.py results/design/candidates"
    );
}
