//! `lblab regress` end to end: its exit codes (0 nothing worse, 1 a figure worse, 2 an error),
//! the table of what moved, and its refusals of a baseline it cannot compare with; and with
//! `--targets`, against a real service the test starts.

mod common;

use std::path::Path;

use common::{
    arg, assert_says, fails, fails_with, lblab, one_slow, scenario_file, succeeds, text, Greeter,
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

#[test]
fn regress_never_passes_by_checking_nothing() {
    let run = ScenarioBuilder::new("regress-nothing")
        .seed(1)
        .rate(400.0)
        .warmup("1s")
        .duration("4s");
    let toml = one_slow(run, 5, LOGNORMAL_2MS)
        .lb("lb", "peak_ewma_experimental")
        .lb("rr", "round_robin")
        .toml();
    let (dir, file) = scenario_file("regress-nothing", "s.toml", &toml);
    let baseline = dir.join("baseline.csv");
    let base = |extra: &[&str]| {
        let mut a = vec![
            "regress",
            arg(&file),
            "--seeds",
            "8",
            "--baseline",
            arg(&baseline),
        ];
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run_with = |extra: &[&str]| {
        let a = base(extra);
        lblab(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    succeeds(&[
        "regress",
        arg(&file),
        "--seeds",
        "8",
        "--write-baseline",
        arg(&baseline),
    ]);
    let written = std::fs::read(&baseline).unwrap();

    // One policy of a baseline of two: compared, the other not expected.
    let out = run_with(&["--policy", "rr"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_says(&text(&out.stdout), &["4 figures compared"]);

    // The report must not overwrite the committed baseline (or a scenario).
    let out = run_with(&["--report", arg(&baseline)]);
    assert_eq!(out.status.code(), Some(2));
    assert_says(
        &text(&out.stderr),
        &["is the baseline, which this run reads"],
    );
    assert_eq!(
        std::fs::read(&baseline).unwrap(),
        written,
        "baseline untouched"
    );

    // A renamed scenario: nothing compared is an error.
    let renamed = dir.join("renamed.toml");
    std::fs::write(&renamed, toml.replace("regress-nothing", "regress-renamed")).unwrap();
    let err = fails(&[
        "regress",
        arg(&renamed),
        "--seeds",
        "8",
        "--baseline",
        arg(&baseline),
    ]);
    assert_says(
        &err,
        &["nothing to compare", "regress-nothing", "regress-renamed"],
    );

    // Another seed than the baseline's, unless --seed-offset asks for it.
    assert!(toml.contains("seed = 1\n"), "{toml}");
    let reseeded = dir.join("reseeded.toml");
    std::fs::write(&reseeded, toml.replace("seed = 1\n", "seed = 7\n")).unwrap();
    let err = fails(&[
        "regress",
        arg(&reseeded),
        "--seeds",
        "8",
        "--baseline",
        arg(&baseline),
    ]);
    assert_says(&err, &["ran seed 1, this run seed 7", "`seed` changed"]);

    // Another warm-up or duration: said, not a false WORSE.
    let err = fails(
        &base(&["--warmup", "1s", "--duration", "3s"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_says(
        &err,
        &["measured 4 s after a warm-up of 1 s, this run 3 s after 1 s"],
    );

    // A device that never ends is refused before it is read.
    #[cfg(unix)]
    {
        let err = fails(&[
            "regress",
            arg(&file),
            "--seeds",
            "8",
            "--baseline",
            "/dev/zero",
        ]);
        assert_says(&err, &["/dev/zero", "not a regular file"]);
    }
}

/// `lblab regress --targets` against a Python grpcio service the test starts: a baseline of eight
/// repeats, then the same service 40 ms slower per call is caught (exit 1, p99 WORSE: far beyond
/// what a debug build on a busy machine adds, so that one overlapping repeat still leaves p below
/// the 0.0025 needed); a simulator baseline or a single repeat is refused.
#[test]
fn regress_against_the_real_service_catches_a_slower_service() {
    let dir = common::scratch("regress-real");
    let baseline = dir.join("baseline.csv");
    let run = |targets: &str, mode: &str, file: &Path, repeat: &str| {
        lblab(&[
            "regress",
            "--targets",
            targets,
            "--call",
            "lblab.interop.v1.Greeter/SayHello",
            "--policy",
            "round_robin",
            "-r",
            "100",
            "--warmup",
            "0.3s",
            "--duration",
            "1s",
            "--repeat",
            repeat,
            "--no-realtime",
            "--out",
            arg(&dir.join("runs")),
            mode,
            arg(file),
        ])
    };
    {
        let fast = Greeter::start(&[]);
        let out = run(&fast.addr, "--write-baseline", &baseline, "8");
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_says(
            &text(&out.stdout),
            &["wrote the real-service baseline", "8 repeats"],
        );
        let err = run(&fast.addr, "--baseline", &baseline, "1");
        assert_eq!(err.status.code(), Some(2));
        assert_says(&text(&err.stderr), &["needs repeats on each side"]);
    }
    let slow = Greeter::start(&["--delay-ms", "40"]);
    let out = run(&slow.addr, "--baseline", &baseline, "8");
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("p99_ms") && l.ends_with("WORSE")),
        "{stdout}"
    );
    // A simulator baseline is not a real-service one.
    let sim = dir.join("sim.csv");
    std::fs::write(
        &sim,
        "scenario,policy,seed_index,seed,warmup_s,duration_s,p99_ms,p999_ms,error_share,faulty_share,time_to_fair_s\n",
    )
    .unwrap();
    let out = run(&slow.addr, "--baseline", &sim, "8");
    assert_eq!(out.status.code(), Some(2));
    assert_says(&text(&out.stderr), &["a simulator baseline"]);
}
