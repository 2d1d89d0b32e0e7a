//! Tests of [`super::merge_runs`].

use super::*;
use crate::{write_run, Recorder, RequestResult, RunHead};

/// [`super::merge_runs`] with the settings in words.
fn merge_runs(dirs: &[PathBuf], budget: u64) -> Result<Merged, FileError> {
    super::merge_runs(dirs, budget, Setting::word)
}

const SEC: u64 = 1_000_000_000;

/// What a summary says of the scenario `merge-test` (two 1 ms backends `b/0` and `b/1`, round
/// robin and peak EWMA, 3 s at 100 calls a second) run after `warmup_s` seconds of warm-up.
fn head(warmup_s: f64) -> RunHead {
    RunHead {
        scenario: "merge-test".into(),
        seed: 1,
        backends: vec!["b/0".into(), "b/1".into()],
        fault_windows: Vec::new(),
        warmup_s,
        measured_s: 3.0,
        policies: Vec::new(),
        experiment: None,
    }
}

/// A fresh folder for one test's runs.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lblab-merge-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A request every 10 ms for 4 s, request `i` taking `latency(i)` ns; the samples of the calls
/// intended after the 1 s warm-up (what the summary and the hlog's measured intervals hold) go
/// to `all`.
fn record(policy: &str, latency: &dyn Fn(u64) -> u64, all: &mut Histogram<u64>) -> Recorder {
    let mut r = Recorder::new(policy, 2, SEC);
    for i in 0..400u64 {
        let t = i * 10_000_000;
        r.on_send(t, (i % 2) as usize, i.is_multiple_of(4));
        let end = t + latency(i);
        r.on_result(t, end, RequestResult::Ok);
        if t >= SEC {
            all.record(latency(i)).unwrap();
        }
    }
    r
}

/// A real run folder `dir` of both policies, started at the Unix time `start`.
fn run_folder(
    dir: &Path,
    start: f64,
    warmup_s: f64,
    latency: &dyn Fn(u64) -> u64,
    all: &mut Histogram<u64>,
) -> RunSummary {
    let results: Vec<PolicyResult> = ["rr", "pe"]
        .iter()
        .map(|p| {
            let mut r = record(p, latency, all).finish();
            r.set_start_time(start);
            r
        })
        .collect();
    let summary = RunSummary::of(head(warmup_s), Mode::Real, &results, false, Vec::new());
    write_run(dir, &summary, &results).expect("written");
    summary
}

#[test]
fn added_histograms_give_the_percentiles_of_every_sample() {
    let root = scratch("p99");
    let (a, b) = (root.join("a"), root.join("b"));
    let mut all = new_histogram();
    let mut slow_samples = new_histogram();
    // Two load generators with very different latencies: fast and uniform, slow-tailed.
    let fast = |i: u64| 1_000_000 + (i % 7) * 10_000;
    let slow = |i: u64| {
        if i.is_multiple_of(10) {
            80_000_000
        } else {
            3_000_000 + i * 1_000
        }
    };
    let sa = run_folder(&a, 1_700_000_000.25, 1.0, &fast, &mut all);
    let sb = run_folder(&b, 1_700_000_001.5, 1.0, &slow, &mut slow_samples);
    all.add(&slow_samples).unwrap();
    let merged = merge_runs(&[a.clone(), b.clone()], u64::MAX).expect("merged");
    // `all` holds each sample twice over (once per policy): per policy it is half of it.
    let mut one = new_histogram();
    for v in all.iter_recorded() {
        one.record_n(v.value_iterated_to(), v.count_at_value() / 2)
            .unwrap();
    }
    for r in &merged.results {
        assert_eq!(r.histogram.len(), one.len(), "{}", r.summary.policy);
        assert_eq!(r.summary.p99_ms, one.value_at_quantile(0.99) as f64 / 1e6);
        assert_eq!(r.summary.p50_ms, one.value_at_quantile(0.5) as f64 / 1e6);
        assert_eq!(r.summary.max_ms, one.max() as f64 / 1e6);
        let (ra, rb) = (&sa.rows[0], &sb.rows[0]);
        assert_eq!(r.summary.requests, ra.requests + rb.requests);
        assert_eq!(r.summary.ok, ra.ok + rb.ok);
        assert!((r.summary.slow_share - 0.25).abs() < 1e-9);
    }
    // Averaging the runs' p99s would have said something else.
    let averaged = (sa.rows[0].p99_ms + sb.rows[0].p99_ms) / 2.0;
    assert_ne!(merged.summary.rows[0].p99_ms, averaged);
    assert_eq!(merged.summary.mode, Mode::Real);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn runs_are_aligned_by_their_recorded_starts() {
    let root = scratch("align");
    let (a, b) = (root.join("early"), root.join("late"));
    let mut sink = new_histogram();
    run_folder(&b, 1_700_000_002.0, 1.0, &|_| 2_000_000, &mut sink);
    run_folder(&a, 1_700_000_000.0, 1.0, &|_| 2_000_000, &mut sink);
    // The later run first: time 0 is still the earliest start.
    let merged = merge_runs(&[b.clone(), a.clone()], u64::MAX).expect("merged");
    let rr = &merged.results[0];
    let log = crate::parse_hlog(&rr.hlog, "merged").unwrap();
    assert_eq!(log.start_unix_s, Some(1_700_000_000.0));
    // Each run has intervals 0..=3; the later one lands on 2..=5, its warm-up (second 2) beside
    // the earlier one's measured second 2, each with its own tag.
    let seconds: Vec<f64> = log.intervals.iter().map(|i| i.start_s).collect();
    assert_eq!(seconds, [0.0, 1.0, 2.0, 2.0, 3.0, 4.0, 5.0]);
    let counts: Vec<u64> = log.intervals.iter().map(|i| i.histogram.len()).collect();
    assert_eq!(counts, [100, 100, 100, 100, 200, 100, 100]);
    let tags: Vec<&str> = log
        .intervals
        .iter()
        .map(|i| i.tag.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(
        tags,
        ["rr-warmup", "rr", "rr-warmup", "rr", "rr", "rr", "rr"]
    );
    assert_eq!(rr.summary.ok, 600);
    assert_eq!(rr.histogram.len(), 600);
    assert_eq!(rr.timeseries.len(), 6);
    assert_eq!(rr.timeseries[2].completed, 200);
    let note = |k: &str| {
        merged
            .summary
            .notes
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no note {k:?}: {:?}", merged.summary.notes))
    };
    assert!(note(&format!("rr: start offset of {}", b.display())).starts_with("+2.000 s"));
    assert!(note(&format!("rr: start offset of {}", a.display())).starts_with("+0.000 s"));
    assert_eq!(note("source 1"), format!("{} (seed 1)", b.display()));
    let _ = std::fs::remove_dir_all(&root);
}

fn message(dirs: &[PathBuf]) -> String {
    merge_runs(dirs, u64::MAX)
        .expect_err("an error")
        .to_string()
}

#[test]
fn bad_folders_are_errors_that_name_the_file_and_field() {
    let root = scratch("errors");
    let (a, b) = (root.join("a"), root.join("b"));
    let mut sink = new_histogram();
    run_folder(&a, 1_700_000_000.0, 1.0, &|_| 2_000_000, &mut sink);
    run_folder(&b, 1_700_000_000.5, 1.0, &|_| 2_000_000, &mut sink);

    // No summary.json.
    let empty = root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let e = message(&[a.clone(), empty.clone()]);
    assert!(
        e.contains("empty/summary.json") && e.contains("not a run folder"),
        "{e}"
    );

    // A simulated run.
    let sim = root.join("sim");
    let results = vec![record("rr", &|_| 1_000_000, &mut sink).finish()];
    let summary = RunSummary::of(head(1.0), Mode::Sim, &results, false, Vec::new());
    write_run(&sim, &summary, &results).unwrap();
    let e = message(&[a.clone(), sim.clone()]);
    assert!(
        e.contains("sim/summary.json") && e.contains("`mode`"),
        "{e}"
    );

    // A policy missing from one run.
    let one = root.join("one-policy");
    let mut results = vec![record("rr", &|_| 1_000_000, &mut sink).finish()];
    results[0].set_start_time(1_700_000_000.0);
    let summary = RunSummary::of(head(1.0), Mode::Real, &results, false, Vec::new());
    write_run(&one, &summary, &results).unwrap();
    let e = message(&[a.clone(), one.clone()]);
    assert!(
        e.contains("one-policy/summary.json") && e.contains("`rows`") && e.contains("\"pe\""),
        "{e}"
    );

    // A different warm-up: both lengths are given.
    let longer = root.join("longer");
    run_folder(&longer, 1_700_000_000.0, 2.0, &|_| 2_000_000, &mut sink);
    let e = message(&[a.clone(), longer.clone()]);
    assert!(
        e.contains("`warmup_s`") && e.contains("warm-up 1 s") && e.contains("warm-up 2 s"),
        "{e}"
    );

    // An hlog without a start since the epoch.
    let hlog = b.join("pe.hlog");
    let text = std::fs::read_to_string(&hlog).unwrap();
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("#[StartTime") && !l.starts_with("#[BaseTime"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&hlog, &without).unwrap();
    let e = message(&[a.clone(), b.clone()]);
    assert!(e.contains("b/pe.hlog") && e.contains("`StartTime`"), "{e}");

    // A corrupt interval line: the file and its line.
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.iter().position(|l| l.contains(",2.000,")).unwrap();
    lines[n] = "Tag=pe,2.000,1.000,2.000,not*base64".into();
    std::fs::write(&hlog, lines.join("\n")).unwrap();
    let e = message(&[a.clone(), b.clone()]);
    assert!(
        e.contains(&format!("b/pe.hlog:{}:1", n + 1)) && e.contains("`histogram`"),
        "{e}"
    );
    lines[n] = "Tag=pe,2.000,1.000".into();
    std::fs::write(&hlog, lines.join("\n")).unwrap();
    let e = message(&[a.clone(), b.clone()]);
    assert!(e.contains(&format!("b/pe.hlog:{}:1", n + 1)), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

/// A real run folder of one policy whose calls around the warm-up's end (1.5 s) end in another
/// second than the one they were intended in, with a tail: a call every 5 ms, every 50th taking
/// 400 ms, the others 2 to 40 ms.
fn boundary_run(dir: &Path, start: f64) -> (RunSummary, PolicyResult) {
    let mut r = Recorder::new("rr", 2, 1_500_000_000);
    for i in 0..800u64 {
        let t = i * 5_000_000;
        let latency = if i.is_multiple_of(50) {
            400_000_000
        } else {
            2_000_000 + (i * 7_919 % 38) * 1_000_000
        };
        r.on_send(t, (i % 2) as usize, i.is_multiple_of(3));
        r.on_result(t, t + latency, RequestResult::Ok);
    }
    let mut result = r.finish();
    result.set_start_time(start);
    let mut summary = RunSummary::of(head(1.5), Mode::Real, &[], false, Vec::new());
    summary.rows = vec![result.summary.clone()];
    write_run(dir, &summary, std::slice::from_ref(&result)).expect("written");
    (summary, result)
}

#[test]
fn a_merge_of_one_run_is_that_run() {
    let root = scratch("one");
    let a = root.join("a");
    let (summary, result) = boundary_run(&a, 1_700_000_000.0);
    let merged = merge_runs(std::slice::from_ref(&a), u64::MAX).expect("merged");
    assert_eq!(merged.summary.rows, summary.rows);
    let m = &merged.results[0];
    assert_eq!(m.summary, result.summary);
    assert_eq!(m.histogram, result.histogram);
    // The hlog to the last count and byte: the same intervals with the same tags.
    assert_eq!(m.hlog, result.hlog);
    assert_eq!(m.timeseries.len(), result.timeseries.len());
    for (got, want) in m.timeseries.iter().zip(&result.timeseries) {
        assert_eq!(
            (got.second, got.completed, &got.shares),
            (want.second, want.completed, &want.shares)
        );
        assert_eq!(
            got.p99_ms.to_bits(),
            want.p99_ms.to_bits(),
            "{}",
            got.second
        );
    }
    assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn duplicates_truncations_strangers_and_giants_are_refused() {
    let root = scratch("edges");
    let (a, b) = (root.join("a"), root.join("b"));
    boundary_run(&a, 1_700_000_000.0);
    boundary_run(&b, 1_700_000_000.7);

    // The same folder twice, by another path too.
    let again = root.join(".").join("a");
    let e = message(&[a.clone(), b.clone(), again.clone()]);
    assert!(
        e.contains("given twice") && e.contains(&again.display().to_string()),
        "{e}"
    );
    // A copy of a folder: the same run.
    let copy = root.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    for f in std::fs::read_dir(&a).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, copy.join(f.file_name().unwrap())).unwrap();
    }
    let e = message(&[a.clone(), copy.clone()]);
    assert!(
        e.contains("copy/summary.json") && e.contains("same run as"),
        "{e}"
    );

    // Runs that do not overlap in time: the later one is named.
    let late = root.join("late");
    boundary_run(&late, 1_700_000_100.0);
    let e = message(&[a.clone(), late.clone()]);
    assert!(
        e.contains("late/rr.hlog") && e.contains("do not overlap"),
        "{e}"
    );
    // ~116 days later: refused the same way, allocating nothing.
    boundary_run(&late, 1_710_000_000.0);
    assert!(message(&[a.clone(), late.clone()]).contains("do not overlap"));
    // A start no clock recorded.
    boundary_run(&late, 1e15);
    let e = message(&[a.clone(), late.clone()]);
    assert!(
        e.contains("late/rr.hlog") && e.contains("`StartTime`"),
        "{e}"
    );

    // The memory budget applies.
    let e = merge_runs(&[a.clone(), b.clone()], 64 << 10)
        .expect_err("over budget")
        .to_string();
    assert!(e.contains("memory_budget"), "{e}");

    // A truncated hlog: its header's count says so.
    let hlog = b.join("rr.hlog");
    let text = std::fs::read_to_string(&hlog).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&hlog, lines[..lines.len() - 2].join("\n")).unwrap();
    let e = message(&[a.clone(), b.clone()]);
    assert!(
        e.contains("b/rr.hlog") && e.contains("truncated") && e.contains("Measured latencies"),
        "{e}"
    );
    // A header that claims more than the intervals hold: altered.
    let more = text.replace("#[Measured latencies: ", "#[Measured latencies: 1");
    std::fs::write(&hlog, &more).unwrap();
    let e = message(&[a.clone(), b.clone()]);
    assert!(
        e.contains("b/rr.hlog") && e.contains("truncated or altered"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn runs_that_measured_different_algorithms_under_one_label_are_refused() {
    let root = scratch("configs");
    let (a, b) = (root.join("a"), root.join("b"));
    let config = |decay: &str| crate::PolicyConfigRow {
        policy: "rr".into(),
        config: serde_json::json!({"peak_ewma_experimental": {"decayTime": decay}}),
        fingerprint: None,
    };
    let (mut summary, result) = boundary_run(&a, 1_700_000_000.0);
    summary.configs = vec![config("10s")];
    write_run(&a, &summary, std::slice::from_ref(&result)).expect("written");
    let (mut other, result_b) = boundary_run(&b, 1_700_000_000.7);
    // The same algorithm: merged, and the merge records it.
    other.configs = vec![config("10s")];
    write_run(&b, &other, std::slice::from_ref(&result_b)).expect("written");
    let merged = merge_runs(&[a.clone(), b.clone()], u64::MAX).expect("merged");
    assert_eq!(merged.summary.configs, vec![config("10s")]);
    // Another one under the same label: refused, naming the file, the field and both configs.
    other.configs = vec![config("1s")];
    write_run(&b, &other, std::slice::from_ref(&result_b)).expect("written");
    let e = message(&[a.clone(), b.clone()]);
    assert!(
        e.contains("b/summary.json") && e.contains("configs") && e.contains("1s"),
        "{e}"
    );
    // The same config run by two versions of its rules (another fingerprint): refused too.
    let with = |fp: &str| crate::PolicyConfigRow {
        fingerprint: Some(fp.into()),
        ..config("10s")
    };
    summary.configs = vec![with("00aa")];
    write_run(&a, &summary, std::slice::from_ref(&result)).expect("written");
    other.configs = vec![with("00bb")];
    write_run(&b, &other, std::slice::from_ref(&result_b)).expect("written");
    let e = message(&[a.clone(), b.clone()]);
    assert!(e.contains("fingerprint 00bb") && e.contains("00aa"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn runs_of_another_scenario_text_or_load_under_one_name_are_refused() {
    let root = scratch("experiment");
    let (a, b) = (root.join("a"), root.join("b"));
    let experiment = |sha: &str, rate| crate::Experiment {
        scenario_sha256: sha.repeat(64),
        rate_per_client: Some(rate),
    };
    let (mut summary, result) = boundary_run(&a, 1_700_000_000.0);
    summary.experiment = Some(experiment("a", 100.0));
    write_run(&a, &summary, std::slice::from_ref(&result)).expect("written");
    let (mut other, result_b) = boundary_run(&b, 1_700_000_000.7);
    // One experiment: merged, and the merge records it.
    other.experiment = Some(experiment("a", 100.0));
    write_run(&b, &other, std::slice::from_ref(&result_b)).expect("written");
    let merged = merge_runs(&[a.clone(), b.clone()], u64::MAX).expect("merged");
    assert_eq!(merged.summary.experiment, Some(experiment("a", 100.0)));
    // Another scenario text (a deadline, a fleet) under the same name.
    other.experiment = Some(experiment("b", 100.0));
    write_run(&b, &other, std::slice::from_ref(&result_b)).expect("written");
    let e = message(&[a.clone(), b.clone()]);
    assert!(
        e.contains("b/summary.json")
            && e.contains("experiment.scenario_sha256")
            && e.contains("bbbbbbbbbbbb")
            && e.contains("two experiments"),
        "{e}"
    );
    // The same text at a tenfold rate per client (`--rate` on one load generator).
    other.experiment = Some(experiment("a", 1000.0));
    write_run(&b, &other, std::slice::from_ref(&result_b)).expect("written");
    let e = message(&[a.clone(), b.clone()]);
    assert!(e.contains("rate_per_client") && e.contains("1000"), "{e}");
    // A run from before the experiment was recorded has nothing to compare.
    other.experiment = None;
    write_run(&b, &other, std::slice::from_ref(&result_b)).expect("written");
    assert!(merge_runs(&[a.clone(), b.clone()], u64::MAX).is_ok());
    let _ = std::fs::remove_dir_all(&root);
}
