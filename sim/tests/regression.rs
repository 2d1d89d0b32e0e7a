//! Tail-latency regression tests: every canonical scenario (and the design search's recovery),
//! shortened, under every policy it compares, over 10 seeds, held by `lblab regress`'s rule to the
//! committed baseline `tests/baseline.csv`: a policy whose p99, p99.9, error share, share to
//! faulty backends or time to fair share is worse on every seed beyond the threshold fails here
//! (`lblab_sim::regress`, docs/ci.md). The same runs, one seed each, check what must hold for
//! every policy (accounting) and what the evidence claims (peak_ewma avoids a slow backend).
//!
//! After an intended change of behaviour, rewrite the baseline and review the diff:
//! `LBLAB_UPDATE_BASELINE=1 cargo test -p lblab-sim --test regression`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lblab_model::testing::ScenarioBuilder;
use lblab_model::units::Dur;
use lblab_model::Scenario;
use lblab_record::SummaryRow;
use lblab_sim::regress::{self, Sample, Thresholds};

const SECOND: u64 = 1_000_000_000;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The canonical scenario `name`, shortened to 5 s of warm-up and 15 s of measurement, with every
/// fault timed inside that window kept ([`Scenario::rescaled`]).
fn shortened(name: &str) -> Scenario {
    canonical(name)
        .rescaled(Dur(5 * SECOND), Dur(15 * SECOND))
        .expect("shortened scenario is valid")
}

/// The scenario file `scenarios/<name>.toml`.
fn canonical(name: &str) -> Scenario {
    Scenario::load(&root().join("scenarios").join(format!("{name}.toml")))
        .expect("canonical scenario loads")
}

const SCENARIOS: &[&str] = &[
    "healthy",
    "one-slow",
    "sub-ms",
    "gc-pauses",
    "cpu-throttle",
    "noisy-neighbour",
    "cold-start",
    "fail-fast",
    "crash-restart",
    "heterogeneous",
    "zones",
    "many-clients",
    "streaming-mix",
    "long-streams",
    "one-slow-busy",
    "heterogeneous-busy",
    "gc-pauses-busy",
    "slow-path",
];

#[test]
fn every_canonical_scenario_is_held_to_bounds() {
    let mut files: Vec<String> = std::fs::read_dir(root().join("scenarios"))
        .expect("scenarios/")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".toml").map(String::from)
        })
        .collect();
    files.sort();
    let mut listed: Vec<String> = SCENARIOS.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(
        listed, files,
        "SCENARIOS must list every file in scenarios/"
    );
}

fn run(scenario: &Scenario) -> BTreeMap<String, SummaryRow> {
    scenario
        .policies
        .iter()
        .filter(|p| p.runs_in_sim())
        .map(|p| {
            let run = lblab_sim::run_policy(scenario, p, &Default::default()).expect("simulates");
            // Every request sent after the warm-up is in the summary, open streams included.
            assert_eq!(
                run.stats.measured, run.result.summary.requests,
                "{}/{}",
                scenario.file.name, p.name
            );
            (p.name.clone(), run.result.summary)
        })
        .collect()
}

fn all_runs() -> &'static BTreeMap<String, BTreeMap<String, SummaryRow>> {
    static RUNS: std::sync::OnceLock<BTreeMap<String, BTreeMap<String, SummaryRow>>> =
        std::sync::OnceLock::new();
    RUNS.get_or_init(|| {
        std::thread::scope(|s| {
            let handles: Vec<_> = SCENARIOS
                .iter()
                .map(|name| s.spawn(move || (name.to_string(), run(&shortened(name)))))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no panic"))
                .collect()
        })
    })
}

/// What the baseline holds: every canonical scenario and the design search's recovery (a slow
/// backend that heals, so a policy that no longer gives traffic back fails), shortened to 5 s of
/// warm-up and 35 s of measurement (long enough for a backend to come back after its faults),
/// over 10 seeds.
fn regression_runs() -> Vec<Sample> {
    let mut scenarios: Vec<Scenario> = SCENARIOS.iter().map(|n| canonical(n)).collect();
    // The recovery under the canonical policies, not every variation of the design search.
    let mut recovery = canonical("design/recovery");
    recovery.policies.retain(|p| {
        [
            "round_robin",
            "least_request",
            "peak_ewma",
            "pe_as_first_written",
            "finagle_peak_ewma",
            "envoy_peak_ewma",
            "oracle",
        ]
        .contains(&p.name.as_str())
    });
    scenarios.push(recovery);
    let scenarios: Vec<Scenario> = scenarios
        .into_iter()
        .map(|s| {
            s.rescaled(Dur(5 * SECOND), Dur(35 * SECOND))
                .expect("shortened scenario is valid")
        })
        .collect();
    regress::measure(
        &scenarios,
        10,
        &[],
        lblab_sim::batch::default_threads(),
        None,
        &|_, _| {},
    )
    .expect("simulates")
}

#[test]
fn every_figure_holds_against_the_committed_baseline() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/baseline.csv");
    let now = regression_runs();
    if std::env::var_os("LBLAB_UPDATE_BASELINE").is_some() {
        regress::write_baseline(&path, &now).expect("writes the baseline");
        return;
    }
    let baseline = regress::read_baseline(&path, lblab_message::setting::Setting::word)
        .expect("tests/baseline.csv");
    let c = regress::compare(&baseline, &now, &Thresholds::default(), &Default::default())
        .expect("comparable");
    assert!(c.new.is_empty(), "not in the baseline: {:?}", c.new);
    let worse: Vec<String> = c
        .worse()
        .map(|f| {
            format!(
                "{}/{} {}: {} -> {} (median paired change {:+} [{:+}, {:+}])",
                f.scenario,
                f.policy,
                f.metric.name(),
                f.baseline,
                f.now,
                f.change,
                f.lo,
                f.hi
            )
        })
        .collect();
    assert!(
        worse.is_empty(),
        "tail-latency regressions against tests/baseline.csv (if intended, rewrite it with LBLAB_UPDATE_BASELINE=1 and review the diff):\n{}",
        worse.join("\n")
    );
}

/// peak_ewma alone in `scenarios`, shortened as the baseline's runs, its config changed by
/// `config` (the JSON object of `peak_ewma_experimental`).
fn peak_ewma_runs(names: &[&str], config: &str) -> Vec<Sample> {
    let scenarios: Vec<Scenario> = names
        .iter()
        .map(|name| {
            let path = root().join("scenarios").join(format!("{name}.toml"));
            let text = std::fs::read_to_string(&path).expect("scenario").replace(
                r#""peak_ewma_experimental":{}"#,
                &format!(r#""peak_ewma_experimental":{config}"#),
            );
            Scenario::parse(&text)
                .expect("valid")
                .rescaled(Dur(5 * SECOND), Dur(35 * SECOND))
                .expect("valid")
        })
        .collect();
    regress::measure(
        &scenarios,
        10,
        &["peak_ewma".to_string()],
        lblab_sim::batch::default_threads(),
        None,
        &|_, _| {},
    )
    .expect("simulates")
}

#[test]
fn the_regression_check_catches_a_draw_with_replacement_and_a_decay_time_ten_times_too_long() {
    let names = ["one-slow", "design/recovery"];
    let base = peak_ewma_runs(&names, "{}");
    let t = Thresholds::default();
    let worse = |config: &str| -> Vec<(String, &'static str)> {
        regress::compare(
            &base,
            &peak_ewma_runs(&names, config),
            &t,
            &Default::default(),
        )
        .expect("comparable")
        .worse()
        .map(|f| (f.scenario.clone(), f.metric.name()))
        .collect()
    };
    assert_eq!(worse("{}"), [], "the unchanged default passes");
    let draw = worse(r#"{"lblabAblation":{"sampling":"with_replacement"}}"#);
    assert!(
        draw.contains(&("one-slow".into(), "p99_ms")),
        "A48's draw at 20 backends raises one-slow's p99: {draw:?}"
    );
    let decay = worse(r#"{"decayTime":"100s"}"#);
    assert!(
        decay.contains(&("recovery".into(), "time_to_fair_s")),
        "a decayTime of 100 s keeps a healed backend out: {decay:?}"
    );
}

#[test]
fn every_request_is_accounted_for() {
    for (scenario, rows) in all_runs() {
        for (policy, r) in rows {
            assert_eq!(
                r.requests,
                r.ok + r.errors + r.dropped,
                "{scenario}/{policy}"
            );
            assert!(r.requests > 0, "{scenario}/{policy}");
        }
    }
}

#[test]
fn every_request_of_an_interrupted_run_is_accounted_for() {
    // No warm-up, so the requests open when the run stops (after its first 4096 events) count.
    let mut file = shortened("crash-restart").file;
    file.workload.warmup = Dur(0);
    let scenario = Scenario::validate(file).expect("valid");
    let stop = std::sync::atomic::AtomicBool::new(true);
    for p in scenario.policies.iter().filter(|p| p.runs_in_sim()) {
        let run = lblab_sim::run_policy(
            &scenario,
            p,
            &lblab_sim::SimOptions {
                stop: Some(&stop),
                ..Default::default()
            },
        )
        .expect("simulates");
        let r = &run.result.summary;
        assert!(run.stats.interrupted, "{}", p.name);
        assert_eq!(run.stats.measured, r.requests, "{}", p.name);
        assert_eq!(r.requests, r.ok + r.errors + r.dropped, "{}", p.name);
        assert!(r.requests > 0 && r.dropped > 0, "{}: {r:?}", p.name);
    }
}

/// Found while writing the `sim_run` fuzz target (the fuzzer itself did not reach it in 460k
/// runs): a closed loop against a backend that answers in no time (constant 0s service time, no
/// network RTT) sent its next request in the same instant, for ever, and never finished.
#[test]
fn closed_loop_against_an_instant_backend_finishes() {
    let scenario = ScenarioBuilder::new("instant")
        .closed(2)
        .duration("10ms")
        .group("main", 1, r#"{ dist = "constant", value = "0s" }"#, &[])
        .lb("rr", "round_robin")
        .build()
        .expect("valid");
    let run = lblab_sim::run_policy(&scenario, &scenario.policies[0], &Default::default())
        .expect("simulates");
    let r = &run.result.summary;
    // One request per microsecond per slot.
    assert!(r.requests > 0 && r.requests <= 2 * 10_000 + 2, "{r:?}");
    assert_eq!(r.requests, r.ok + r.errors + r.dropped);
}

fn p99(scenario: &str, policy: &str) -> f64 {
    all_runs()[scenario][policy].p99_ms
}

fn share(scenario: &str, policy: &str) -> f64 {
    all_runs()[scenario][policy].slow_share
}

#[test]
fn peak_ewma_avoids_a_slow_backend() {
    for scenario in ["one-slow", "many-clients", "streaming-mix", "long-streams"] {
        assert!(
            share(scenario, "peak_ewma") < share(scenario, "round_robin") / 3.0,
            "{scenario}"
        );
        assert!(
            p99(scenario, "peak_ewma") < p99(scenario, "round_robin") / 2.0,
            "{scenario}"
        );
    }
}

#[test]
fn peak_ewma_does_not_hurt_a_healthy_fleet() {
    let (pe, rr) = (p99("healthy", "peak_ewma"), p99("healthy", "round_robin"));
    assert!(pe <= rr * 1.1, "peak_ewma p99 {pe} vs round_robin {rr}");
}

#[test]
fn oracle_is_the_lower_bound() {
    for scenario in SCENARIOS {
        let oracle = &all_runs()[*scenario]["oracle"];
        for (policy, row) in &all_runs()[*scenario] {
            assert!(
                oracle.p99_ms <= row.p99_ms * 1.05 + 0.1,
                "{scenario}: oracle p99 {} vs {policy} {}",
                oracle.p99_ms,
                row.p99_ms
            );
            assert!(
                oracle.errors <= row.errors + row.errors / 10 + 10,
                "{scenario}: oracle errors {} vs {policy} {}",
                oracle.errors,
                row.errors
            );
        }
    }
}

#[test]
fn the_error_aware_cost_keeps_peak_ewma_off_a_fast_failing_backend() {
    // A backend that answers 90 % of its calls at once with an error looks fast to an RTT
    // estimate: the semantics as first written send it more than its share, and fail more calls
    // than round_robin. The default's error-aware cost (errorPenalty 1) keeps it off on its own,
    // without outlier detection.
    let errors = |p: &str| all_runs()["fail-fast"][p].errors;
    let (pe, first, rr) = (
        errors("peak_ewma"),
        errors("peak_ewma(first_written)"),
        errors("round_robin"),
    );
    assert!(first > rr, "first written {first} vs round_robin {rr}");
    assert!(pe * 10 < rr, "peak_ewma {pe} vs round_robin {rr}");
    assert!(errors("od(peak_ewma)") * 10 < rr);
}
