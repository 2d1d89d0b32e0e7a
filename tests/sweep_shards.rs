//! Sharded sweeps end to end through the `lblab` binary: `lblab sweep … --shard i/N` for every
//! `i`, then `lblab sweep --merge`, must write exactly the files of the unsharded sweep, byte for
//! byte (every file of the folder: `sweep.csv`, `runs.csv`, `sweep.json` and every chart; none
//! carries a time or anything else that may differ between runs); and a merge of shards that do
//! not make one sweep is refused, saying why.

mod common;

use common::{arg, assert_says, fails, files, one_slow, scenario_file, succeeds, with_policies};
use lblab_model::testing::ScenarioBuilder;

/// Five backends, one ten times slower, 1 s at 400 calls a second after 0.5 s of warm-up.
fn tiny() -> ScenarioBuilder {
    let run = ScenarioBuilder::new("shards")
        .seed(7)
        .rate(400.0)
        .warmup("500ms")
        .duration("1s");
    let fleet = one_slow(run, 4, r#"{ dist = "exponential", mean = "2ms" }"#);
    with_policies(fleet, &["round_robin", "peak_ewma", "oracle"])
}

const VARY: [&str; 6] = [
    "--vary",
    "fleet.main.count=2,3,5",
    "--vary",
    "faults.0.factor=2,10",
    "--seeds",
    "3",
];

#[test]
fn merged_shards_are_the_unsharded_sweep_byte_for_byte() {
    let (dir, scenario) = scenario_file("sweep-shards", "shards.toml", &tiny().toml());
    let scenario = arg(&scenario).to_string();
    let whole = dir.join("whole");
    let mut args = vec!["sweep", &scenario];
    args.extend(VARY);
    args.extend(["--out", arg(&whole)]);
    succeeds(&args);

    // Six points in four shards: shards 0 and 1 hold two points each, 2 and 3 one each.
    let n = 4;
    let shard_dirs: Vec<_> = (0..n).map(|i| dir.join(format!("shard-{i}"))).collect();
    for (i, d) in shard_dirs.iter().enumerate() {
        let shard = format!("{i}/{n}");
        let mut args = vec!["sweep", &scenario];
        args.extend(VARY);
        args.extend(["--shard", &shard, "--out", arg(d), "--jobs", "1"]);
        let out = succeeds(&args);
        assert_says(&common::text(&out.stdout), &[&format!("shard {shard}")]);
        let held = files(d);
        assert_eq!(
            held.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(),
            ["shard.json"],
            "a shard folder holds its shard file only"
        );
    }
    // Given in any order.
    let merged = dir.join("merged");
    let mut args = vec!["sweep", "--merge"];
    args.extend([3, 1, 0, 2].map(|i| arg(&shard_dirs[i])));
    args.extend(["--out", arg(&merged)]);
    let out = succeeds(&args);
    assert_says(&common::text(&out.stdout), &["merged 4 shards (6 points)"]);

    let (a, b) = (files(&whole), files(&merged));
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b), "the same files");
    for name in [
        "sweep.csv",
        "runs.csv",
        "sweep.json",
        "p99.png",
        "p99_vs_oracle.svg",
    ] {
        assert!(names(&a).iter().any(|f| f == name), "{name} missing");
    }
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(
            x == y,
            "{name} differs between the unsharded and the merged sweep"
        );
    }

    // Shards that do not make one sweep.
    let merge = |dirs: &[&std::path::Path], out: &str| {
        let out = dir.join(out);
        let mut args = vec!["sweep".to_string(), "--merge".to_string()];
        args.extend(dirs.iter().map(|d| arg(d).to_string()));
        args.extend(["--out".to_string(), arg(&out).to_string()]);
        fails(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let s = &shard_dirs;
    assert_says(
        &merge(&[&s[0], &s[1], &s[3]], "m1"),
        &["shard 2/4", "is missing"],
    );
    assert_says(
        &merge(&[&s[0], &s[1], &s[2], &s[3], &s[1]], "m2"),
        &["shard 1/4 is given twice"],
    );
    assert_says(&merge(&[&whole], "m3"), &["shard.json", "--shard i/N"]);
    // A shard of another sweep: other seeds.
    let other = dir.join("other");
    let mut args = vec!["sweep", &scenario];
    args.extend(&VARY[..4]);
    args.extend(["--seeds", "2", "--shard", "2/4", "--out", arg(&other)]);
    succeeds(&args);
    assert_says(
        &merge(&[&s[0], &s[1], &other, &s[3]], "m4"),
        &["another sweep", "--seeds differs"],
    );
    // Another shard count.
    let other_n = dir.join("other-n");
    let mut args = vec!["sweep", &scenario];
    args.extend(VARY);
    args.extend(["--shard", "0/3", "--out", arg(&other_n)]);
    succeeds(&args);
    assert_says(
        &merge(&[&s[0], &s[1], &s[2], &other_n], "m5"),
        &["shard count N differs"],
    );
    // A changed scenario file.
    let (_, changed) = scenario_file(
        "sweep-shards-changed",
        "shards.toml",
        &tiny().rate(300.0).toml(),
    );
    let changed_dir = dir.join("changed");
    let mut args = vec!["sweep", arg(&changed)];
    args.extend(VARY);
    args.extend(["--shard", "3/4", "--out", arg(&changed_dir)]);
    succeeds(&args);
    assert_says(
        &merge(&[&s[0], &s[1], &s[2], &changed_dir], "m6"),
        &["scenario file differs"],
    );
    // A shard folder as --out: the merge would overwrite that shard's own results.
    let mut args = vec!["sweep", "--merge"];
    args.extend(s.iter().map(|d| arg(d)));
    args.extend(["--out", arg(&s[2])]);
    assert_says(&fails(&args), &["is one of the shards", "overwrite"]);
    assert!(s[2].join("shard.json").exists());
    // The endless zero device as a shard file: refused at once, not read until memory runs out.
    assert_says(
        &merge(&[&s[0], std::path::Path::new("/dev/zero")], "m7"),
        &["/dev/zero", "not a regular file"],
    );
    // Flags that make no sense with a merge or a shard.
    assert_says(&fails(&["sweep", "--merge", arg(&s[0])]), &["--out"]);
    assert_says(
        &fails(&["sweep", &scenario, "--shard", "4/4", "--vary", "seed=1"]),
        &["4/4", "below the count"],
    );
}
