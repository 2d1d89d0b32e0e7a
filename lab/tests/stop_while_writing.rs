//! A first Ctrl-C that arrives while a finished run's files are written is honoured: the data
//! files are whole, the charts are left out and `summary.json` says so. A run that the stop
//! itself interrupted still gets its charts, which show what it measured.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use lblab_lab::Lab;
use lblab_model::testing::{constant, ScenarioBuilder};
use lblab_record::{Mode, RunSummary};

static RUNNING: AtomicBool = AtomicBool::new(false);
static STOPPED: AtomicBool = AtomicBool::new(true);

fn lab(stop: &'static AtomicBool) -> Lab {
    Lab {
        stop,
        memory_budget: 1 << 30,
        chart_budget: None,
        names: lblab_lab::Setting::word,
    }
}

fn folder(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_stop_while_a_finished_run_is_written_leaves_the_charts_out() {
    let scenario = ScenarioBuilder::new("stop-writing")
        .rate(100.0)
        .duration("1s")
        .group("main", 2, &constant("2ms"), &[])
        .lb("round_robin", "round_robin")
        .build()
        .expect("a valid scenario");
    let (runs, partial) =
        lblab_lab::sim::simulate(&lab(&RUNNING), &scenario, &[], Some(1)).unwrap();
    assert!(!partial);
    let results: Vec<_> = runs.into_iter().map(|r| r.result).collect();
    let summary = |partial| {
        RunSummary::of(
            scenario.run_head(),
            Mode::Sim,
            &results,
            partial,
            Vec::new(),
        )
    };
    let read = |dir: &PathBuf| -> RunSummary {
        let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };

    // The run finished; Ctrl-C came while its files were written.
    let dir = folder("stop-while-writing");
    lblab_lab::run_folder::write(&lab(&STOPPED), &dir, &summary(false), &results).unwrap();
    assert!(dir.join("round_robin.hlog").exists() && dir.join("timeseries.csv").exists());
    assert!(
        !dir.join("spectrum.png").exists(),
        "a chart was drawn after the stop"
    );
    let note = read(&dir)
        .notes
        .into_iter()
        .find(|(k, _)| k == "charts")
        .map(|(_, v)| v);
    assert!(
        note.is_some_and(|n| n.contains("missing")),
        "no note of the missing charts"
    );

    // The stop interrupted the run itself: its charts are drawn.
    let dir = folder("stop-interrupted-run");
    lblab_lab::run_folder::write(&lab(&STOPPED), &dir, &summary(true), &results).unwrap();
    assert!(dir.join("spectrum.png").exists() && dir.join("traffic_share.svg").exists());
}
