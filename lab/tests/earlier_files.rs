//! A rerun into a folder that holds an earlier run's results loses none of its files until the
//! new run replaces them: an interrupted (or still running) run keeps the earlier run's histograms
//! of the policies it has not reached, and lists them, so that the next finished run removes them.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use lblab_lab::run_folder::{write_data, KEPT_NOTE};
use lblab_lab::Lab;
use lblab_model::Scenario;
use lblab_record::{Mode, PolicyResult, RunSummary};

const SCENARIO: &str = r#"
name = "earlier"
seed = 3

[workload]
rate = 100
warmup = "500ms"
duration = "1s"

[[fleet]]
name = "main"
count = 2
service_time = { dist = "constant", value = "2ms" }

[[policies]]
name = "round_robin"
config = '{"loadBalancingConfig":[{"round_robin":{}}]}'

[[policies]]
name = "peak_ewma"
config = '{"loadBalancingConfig":[{"peak_ewma_experimental":{}}]}'

[[policies]]
name = "least_request"
config = '{"loadBalancingConfig":[{"least_request_experimental":{}}]}'
"#;

static STOP: AtomicBool = AtomicBool::new(false);

fn results() -> (Scenario, Vec<PolicyResult>) {
    let scenario = Scenario::parse(SCENARIO).expect("a valid scenario");
    let lab = Lab {
        stop: &STOP,
        memory_budget: 1 << 30,
        chart_budget: None,
        names: lblab_lab::Setting::word,
    };
    let (runs, partial) = lblab_lab::sim::simulate(&lab, &scenario, &[], Some(1)).unwrap();
    assert!(!partial);
    let results = runs.into_iter().map(|r| r.result).collect();
    (scenario, results)
}

fn summary(scenario: &Scenario, results: &[PolicyResult], partial: bool) -> RunSummary {
    RunSummary::of(scenario.run_head(), Mode::Sim, results, partial, Vec::new())
}

fn folder(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn kept(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let s: RunSummary = serde_json::from_str(&text).unwrap();
    s.notes
        .into_iter()
        .find(|(k, _)| k == KEPT_NOTE)
        .map(|(_, v)| v)
}

#[test]
fn an_unfinished_rerun_keeps_the_earlier_runs_files_until_it_replaces_them() {
    let (scenario, all) = results();
    let dir = folder("earlier-files");
    // The earlier run: all three policies.
    write_data(&dir, &summary(&scenario, &all, false), &all).unwrap();
    let earlier_lr = std::fs::read(dir.join("least_request.hlog")).unwrap();
    for stem in ["round_robin", "peak_ewma", "least_request"] {
        assert!(dir.join(format!("{stem}.hlog")).is_file(), "{stem}");
    }

    // The rerun's checkpoint after its first policy: the other two are kept, and listed.
    let first = &all[..1];
    write_data(&dir, &summary(&scenario, first, true), first).unwrap();
    for file in ["peak_ewma.hlog", "peak_ewma.hgrm", "least_request.hlog"] {
        assert!(
            dir.join(file).is_file(),
            "{file} was removed before its policy ran"
        );
    }
    let note = kept(&dir).expect("the kept files are listed");
    assert!(
        note.starts_with("least_request.hgrm, least_request.hlog, peak_ewma.hgrm, peak_ewma.hlog"),
        "{note}"
    );

    // Interrupted after two policies: least_request's files are still the earlier run's.
    let two = &all[..2];
    write_data(&dir, &summary(&scenario, two, true), two).unwrap();
    assert_eq!(
        std::fs::read(dir.join("least_request.hlog")).unwrap(),
        earlier_lr,
        "the earlier run's file was changed"
    );
    let note = kept(&dir).expect("still listed");
    assert!(
        note.starts_with("least_request.hgrm, least_request.hlog ("),
        "{note}"
    );

    // A finished run without least_request removes them: they are not its own.
    write_data(&dir, &summary(&scenario, two, false), two).unwrap();
    assert!(!dir.join("least_request.hlog").exists());
    assert!(!dir.join("least_request.hgrm").exists());
    assert!(kept(&dir).is_none());
    assert!(dir.join("peak_ewma.hlog").is_file());
    std::fs::remove_dir_all(&dir).ok();
}
