//! `lblab loadgen --repeat N`: the policies run interleaved N times against a real fleet on
//! loopback (one backend of four 10x slower), and the verdict says, with its interval over the
//! repeats, that peak_ewma's p99 is lower than round_robin's; every output carries it.

mod common;

use common::{arg, fails, lblab, one_slow, scenario_file, text, Backend, LOGNORMAL_2MS};
use lblab_model::testing::ScenarioBuilder;

#[test]
fn repeats_give_a_verdict_with_its_interval() {
    let run = ScenarioBuilder::new("verdict")
        .rate(300.0)
        .warmup("0.3s")
        .duration("1.5s");
    let toml = one_slow(run, 4, LOGNORMAL_2MS)
        .lb("rr", "round_robin")
        .lb("pe", "peak_ewma_experimental")
        .toml();
    let (dir, file) = scenario_file("loadgen-verdict", "s.toml", &toml);
    let fleet = Backend::start(&file);
    let out = dir.join("run");
    let args = [
        "loadgen",
        arg(&file),
        "--targets",
        &fleet.targets,
        "--repeat",
        "6",
        "--no-realtime",
        "--out",
        arg(&out),
    ];
    let run = lblab(&args);
    let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
    assert!(run.status.success(), "{stdout}\n{stderr}");
    // round_robin is the baseline by default; 6 repeats are enough for a 95 % interval.
    assert!(stdout.contains("verdict over 6 repeats"), "{stdout}");
    assert!(
        stdout.contains("pe against rr: p99 lower"),
        "{stdout}\n{stderr}"
    );
    assert!(stderr.contains("repeat 6 of 6"), "{stderr}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("verdict.json")).expect("verdict.json"))
            .expect("JSON");
    let pe = &v["verdict"]["policies"][1];
    assert_eq!(pe["policy"], "pe", "{v}");
    assert_eq!(pe["against_baseline"][0]["outcome"], "lower", "{v}");
    assert_eq!(pe["p99_ms"]["n"], 6, "{v}");
    assert!(v["parameters"]["command line"]
        .as_str()
        .is_some_and(|c| c.contains("--repeat 6")));
    for r in 1..=6 {
        assert!(
            out.join(format!("repeat-{r}/summary.json")).exists(),
            "repeat-{r}"
        );
    }
    let page = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    let (verdict_at, run_at) = (
        page.find("Verdict").unwrap(),
        page.find("command line").unwrap(),
    );
    assert!(verdict_at < run_at, "the page opens with the verdict");

    // A baseline that is not run is refused before anything is sent.
    let err = fails(&[
        "loadgen",
        arg(&file),
        "--targets",
        &fleet.targets,
        "--repeat",
        "2",
        "--baseline-policy",
        "nope",
        "--no-realtime",
        "--out",
        arg(&dir.join("none")),
    ]);
    assert!(
        err.contains("--baseline-policy \"nope\" is not among the policies run (rr, pe)"),
        "{err}"
    );
}
