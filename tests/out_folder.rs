//! The results folder (`--out`) through the `lblab` binary: one writer at a time, and nothing
//! deleted that lblab did not write.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};

use common::{arg, assert_says, fails, scenario_file, succeeds, two_backends, with_policies};

/// Two backends, two policies, two seconds: a quick simulation.
fn quick(folder: &str) -> (PathBuf, PathBuf) {
    let run = two_backends("quick").warmup("500ms").duration("1500ms");
    let toml = with_policies(run, &["round_robin", "peak_ewma"]).toml();
    scenario_file(folder, "quick.toml", &toml)
}

const LOCK: &str = ".lblab.lock";

/// Holds `dir`'s lock as a running lblab would.
fn hold_lock(dir: &Path) -> File {
    let file = File::create(dir.join(LOCK)).unwrap();
    file.try_lock().expect("the folder is free");
    file
}

#[test]
fn a_second_writer_is_refused_and_the_lock_does_not_outlive_its_run() {
    let (dir, scenario) = quick("out-lock");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();

    // Another run holds the folder: refused at once, naming the folder, nothing written.
    let held = hold_lock(&out);
    let err = fails(&["sim", arg(&scenario), "--out", arg(&out)]);
    assert_says(&err, &[&out.display().to_string(), "another lblab run"]);
    assert!(!out.join("summary.json").exists());
    let err = fails(&[
        "sweep",
        arg(&scenario),
        "--vary",
        "workload.rate=100,200",
        "--out",
        arg(&out),
    ]);
    assert_says(&err, &["another lblab run"]);
    drop(held);

    // A lock file left by a run killed outright (no process holds it) blocks nobody, and a
    // finished run leaves none behind.
    assert!(out.join(LOCK).exists());
    succeeds(&["sim", arg(&scenario), "--out", arg(&out)]);
    assert!(out.join("summary.json").exists());
    assert!(!out.join(LOCK).exists(), "the lock file outlived its run");
    // A run into a folder it creates leaves no lock file either.
    let fresh = dir.join("fresh");
    succeeds(&["sim", arg(&scenario), "--out", arg(&fresh)]);
    assert!(!fresh.join(LOCK).exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn only_the_files_an_earlier_run_listed_are_removed() {
    let (dir, scenario) = quick("out-stale");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // The user's own logs, beside the results: no summary.json ever listed them.
    std::fs::write(out.join("mine.hlog"), "the user's").unwrap();
    std::fs::write(out.join("mine.hgrm"), "the user's").unwrap();
    succeeds(&["sim", arg(&scenario), "--out", arg(&out)]);
    assert!(out.join("peak_ewma.hlog").exists() && out.join("peak_ewma.hgrm").exists());
    // A run of one policy into the same folder removes the other's files, which the earlier
    // summary.json listed, and nothing else.
    let run = succeeds(&[
        "sim",
        arg(&scenario),
        "--out",
        arg(&out),
        "--policy",
        "round_robin",
    ]);
    assert!(!out.join("peak_ewma.hlog").exists() && !out.join("peak_ewma.hgrm").exists());
    assert_says(&common::text(&run.stderr), &["removed peak_ewma.hlog"]);
    assert!(out.join("round_robin.hlog").exists());
    assert_eq!(
        std::fs::read_to_string(out.join("mine.hlog")).unwrap(),
        "the user's"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("mine.hgrm")).unwrap(),
        "the user's"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_dangling_symbolic_link_is_named_with_its_target() {
    let (dir, scenario) = quick("out-dangling");
    let target = dir.join("gone").join("results");
    let link = dir.join("out");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = fails(&["sim", arg(&scenario), "--out", arg(&link)]);
    assert_says(
        &err,
        &[
            &link.display().to_string(),
            "symbolic link",
            &target.display().to_string(),
            "does not exist",
        ],
    );
    assert!(!err.contains("os error 17"), "{err}");
    // The link is left as it was, and nothing was created at its target.
    assert!(link.symlink_metadata().is_ok() && !target.exists());
    std::fs::remove_dir_all(&dir).ok();
}
