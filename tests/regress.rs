//! `lblab regress` end to end: its exit codes (0 nothing worse, 1 a figure worse, 2 an error),
//! the table of what moved, and its refusals of a baseline it cannot compare with.

mod common;

use common::{
    arg, assert_says, fails, fails_with, lblab, one_slow, scenario_file, succeeds, text,
    LOGNORMAL_2MS,
};
use lblab_model::testing::ScenarioBuilder;

/// A small fleet with one slow backend; `policy` is the gRPC policy labelled `lb`.
fn scenario(policy: &str) -> String {
    let run = ScenarioBuilder::new("regress-cli")
        .rate(400.0)
        .warmup("1s")
        .duration("4s");
    one_slow(run, 5, LOGNORMAL_2MS).lb("lb", policy).toml()
}

#[test]
fn regress_passes_an_unchanged_policy_and_fails_a_worse_one_with_a_table() {
    let (dir, file) = scenario_file("regress-cli", "s.toml", &scenario("peak_ewma_experimental"));
    let baseline = dir.join("baseline.csv");
    let out = succeeds(&[
        "regress",
        arg(&file),
        "--seeds",
        "8",
        "--write-baseline",
        arg(&baseline),
    ]);
    assert_says(&text(&out.stdout), &["wrote the baseline", "8 runs"]);

    let same = succeeds(&[
        "regress",
        arg(&file),
        "--seeds",
        "8",
        "--baseline",
        arg(&baseline),
    ]);
    assert_says(&text(&same.stdout), &["0 worse", "0 better"]);

    // The same label, now round_robin: a tenth of the calls go to the slow backend.
    let worse = dir.join("worse.toml");
    std::fs::write(&worse, scenario("round_robin")).unwrap();
    let report = dir.join("report.csv");
    let out = lblab(&[
        "regress",
        arg(&worse),
        "--seeds",
        "8",
        "--baseline",
        arg(&baseline),
        "--report",
        arg(&report),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert_says(
        &stdout,
        &[
            "WORSE than the baseline",
            "regress-cli",
            "lb",
            "p99_ms",
            "faulty_share",
        ],
    );
    let csv = std::fs::read_to_string(&report).expect("--report written");
    assert!(
        csv.starts_with("scenario,policy,metric,baseline,now,change,lo,hi,seeds,verdict"),
        "{csv}"
    );
    assert!(csv.contains(",worse"), "{csv}");
}

#[test]
fn regress_refuses_what_it_cannot_compare() {
    let (dir, file) = scenario_file("regress-refuse", "s.toml", &scenario("round_robin"));
    let baseline = dir.join("baseline.csv");
    succeeds(&[
        "regress",
        arg(&file),
        "--seeds",
        "8",
        "--write-baseline",
        arg(&baseline),
    ]);
    // Other seeds than the baseline's.
    let err = fails(&[
        "regress",
        arg(&file),
        "--seeds",
        "9",
        "--baseline",
        arg(&baseline),
    ]);
    assert_says(&err, &["seed indices", "as many seeds as the baseline"]);
    // Too few seeds for the confidence.
    let small = dir.join("small.csv");
    succeeds(&[
        "regress",
        arg(&file),
        "--seeds",
        "4",
        "--write-baseline",
        arg(&small),
    ]);
    let err = fails(&[
        "regress",
        arg(&file),
        "--seeds",
        "4",
        "--baseline",
        arg(&small),
    ]);
    assert_says(&err, &["run more seeds", "at least 8"]);
    // A damaged baseline names its file and line, before any simulation.
    let text_ = std::fs::read_to_string(&baseline).unwrap();
    let bad = dir.join("bad.csv");
    std::fs::write(
        &bad,
        text_.replacen("regress-cli,lb,0,", "regress-cli,lb,zero,", 1),
    )
    .unwrap();
    let err = fails(&["regress", arg(&file), "--baseline", arg(&bad)]);
    assert_says(&err, &["bad.csv:2:"]);
    // Neither mode, or a missing file.
    fails_with(2, &["regress", arg(&file)]);
    let err = fails(&[
        "regress",
        arg(&file),
        "--baseline",
        arg(&dir.join("none.csv")),
    ]);
    assert_says(&err, &["none.csv"]);
}
