//! Several load generators against one fleet, end to end through the `lblab` binary: two
//! `lblab loadgen` processes on loopback at once, then `lblab report --merge`, whose result must
//! be what one histogram of both runs' samples gives (histograms added, counts summed), with
//! both runs' starts recorded and their offsets noted.

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::Child;
use std::time::Duration;

use common::{arg, assert_accounted, fails, scratch, spawn, summary, trickle, wait_for};
use lblab_record::read_hlog;
use serde_json::Value;

/// Two backends of a few ms, 200 requests per second for 2 s after a 0.5 s warm-up.
fn tiny() -> String {
    let service_time = r#"{ dist = "lognormal", median = "2ms", p99 = "5ms" }"#;
    trickle("merge-tiny", &["round_robin"])
        .seed(1)
        .warmup("500ms")
        .duration("2s")
        .deadline("1s")
        .group("main", 2, service_time, &["workers = 4"])
        .toml()
}

/// A child process killed (and reaped) when the test lets go of it, passed or failed.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `lblab backend` for `scenario` (it also stops by itself after 60 s) and returns it
/// with its `--targets` value.
fn fleet(scenario: &str) -> (Stopped, String) {
    let mut child = spawn(&["backend", scenario, "--for", "60s", "--no-realtime"]);
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let child = Stopped(child);
    let targets = loop {
        let line = lines
            .next()
            .expect("lblab backend prints its targets")
            .expect("reads its output");
        if let Some(t) = line.strip_prefix("--targets ") {
            break t.to_string();
        }
    };
    // Keep reading so the process never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, targets)
}

fn row<'a>(summary: &'a Value, policy: &str) -> &'a Value {
    summary["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["policy"] == policy)
        .unwrap_or_else(|| panic!("no row for {policy}: {summary}"))
}

fn note<'a>(summary: &'a Value, key: &str) -> &'a str {
    summary["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .find(|n| n[0] == key)
        .and_then(|n| n[1].as_str())
        .unwrap_or_else(|| panic!("no note {key:?}: {}", summary["notes"]))
}

#[test]
fn two_load_generators_merge_into_the_histogram_of_both() {
    let dir = scratch("merge-two-loadgens");
    let scenario = dir.join("tiny.toml");
    std::fs::write(&scenario, tiny()).unwrap();
    let scenario = arg(&scenario).to_string();
    let (_fleet, targets) = fleet(&scenario);
    let (a, b, merged) = (dir.join("a"), dir.join("b"), dir.join("merged"));
    let loadgen = |out: &Path, seed: &str| {
        Stopped(spawn(&[
            "loadgen",
            &scenario,
            "--targets",
            &targets,
            "--out",
            arg(out),
            "--seed",
            seed,
            "--no-realtime",
        ]))
    };
    // Both at once, against the same fleet.
    let mut runs = [loadgen(&a, "1"), loadgen(&b, "2")];
    for (run, name) in runs.iter_mut().zip(["a", "b"]) {
        let status = wait_for(&mut run.0, Duration::from_secs(60), "lblab loadgen");
        let err = common::read_all(run.0.stderr.take());
        assert!(status.success(), "loadgen {name}: {err}");
    }
    let out = common::lblab(&["report", "--merge", arg(&a), arg(&b), "--out", arg(&merged)]);
    let printed = common::text(&out.stdout);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    assert!(printed.contains("round_robin"), "{printed}");

    let (sa, sb, sm) = (summary(&a), summary(&b), summary(&merged));
    assert_accounted(&sm);
    assert_eq!(sm["mode"], "real");
    let (ra, rb, rm) = (
        row(&sa, "round_robin"),
        row(&sb, "round_robin"),
        row(&sm, "round_robin"),
    );
    for field in [
        "requests",
        "ok",
        "errors",
        "deadline_exceeded",
        "dropped",
        "incidents",
    ] {
        let n = |r: &Value| r[field].as_u64().unwrap_or_else(|| panic!("{field}: {r}"));
        assert_eq!(n(rm), n(ra) + n(rb), "{field}");
    }
    assert!(rm["requests"].as_u64().unwrap() > 500, "{rm}");

    // Both runs recorded their wall-clock start; the merged run starts at the earlier one.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let log_a = read_hlog(&a.join("round_robin.hlog")).expect("a's hlog");
    let log_b = read_hlog(&b.join("round_robin.hlog")).expect("b's hlog");
    let log_m = read_hlog(&merged.join("round_robin.hlog")).expect("the merged hlog");
    let (start_a, start_b) = (log_a.start_unix_s.unwrap(), log_b.start_unix_s.unwrap());
    for start in [start_a, start_b] {
        assert!(start < now && start > now - 120.0, "{start} vs now {now}");
    }
    assert_eq!(log_m.start_unix_s, Some(start_a.min(start_b)));
    for (dir, start) in [(&a, start_a), (&b, start_b)] {
        let offset = note(
            &sm,
            &format!("round_robin: start offset of {}", dir.display()),
        );
        let expected = format!("+{:.3} s", start - start_a.min(start_b));
        assert!(offset.starts_with(&expected), "{offset} vs {expected}");
    }

    // The merged p99 is the p99 of one histogram holding both runs' measured intervals (those
    // tagged as the calls intended after the warm-up, which each run's summary counted), added
    // here.
    let warmup = sa["warmup_s"].as_f64().unwrap();
    let mut one = log_a.intervals[0].histogram.clone();
    one.reset();
    for log in [&log_a, &log_b] {
        let mut own = 0;
        for i in log
            .intervals
            .iter()
            .filter(|i| i.is_measured("round_robin", warmup))
        {
            one.add(&i.histogram).unwrap();
            own += i.histogram.len();
        }
        assert_eq!(Some(own), log.measured_latencies);
    }
    let counted = |r: &Value| r["ok"].as_u64().unwrap() + r["deadline_exceeded"].as_u64().unwrap();
    assert_eq!(one.len(), counted(ra) + counted(rb));
    let ms = |v: u64| v as f64 / 1e6;
    assert_eq!(rm["p99_ms"].as_f64(), Some(ms(one.value_at_quantile(0.99))));
    assert_eq!(rm["p50_ms"].as_f64(), Some(ms(one.value_at_quantile(0.5))));
    assert_eq!(rm["max_ms"].as_f64(), Some(ms(one.max())));
    // Every completion of both runs is in the merged log, warm-up included.
    let total =
        |log: &lblab_record::Hlog| -> u64 { log.intervals.iter().map(|i| i.histogram.len()).sum() };
    assert_eq!(total(&log_m), total(&log_a) + total(&log_b));
    for file in [
        "summary.csv",
        "timeseries.csv",
        "failures.csv",
        "spectrum.png",
    ] {
        assert!(
            merged.join(file).is_file(),
            "{file} missing from the merged run"
        );
    }

    // A merge of one run is that run: its summary rows and its hlog, to the last count.
    let alone = dir.join("alone");
    let out = common::lblab(&["report", "--merge", arg(&a), "--out", arg(&alone)]);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    assert_eq!(summary(&alone)["rows"], sa["rows"]);
    assert_eq!(
        std::fs::read_to_string(alone.join("round_robin.hlog")).unwrap(),
        std::fs::read_to_string(a.join("round_robin.hlog")).unwrap()
    );
    // The same folder twice is refused.
    let err = fails(&["report", "--merge", arg(&a), arg(&a)]);
    assert!(err.contains("given twice"), "{err}");

    // Bad input: clear errors naming the file and the field, never a panic.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = fails(&["report", "--merge", arg(&a), arg(&empty)]);
    assert!(err.contains("empty/summary.json"), "{err}");
    let sim = dir.join("sim");
    std::fs::create_dir_all(&sim).unwrap();
    for f in [
        "summary.json",
        "timeseries.csv",
        "failures.csv",
        "round_robin.hlog",
    ] {
        std::fs::copy(a.join(f), sim.join(f)).unwrap();
    }
    let json = std::fs::read_to_string(sim.join("summary.json")).unwrap();
    std::fs::write(
        sim.join("summary.json"),
        json.replace("\"mode\": \"real\"", "\"mode\": \"sim\""),
    )
    .unwrap();
    let err = fails(&["report", "--merge", arg(&a), arg(&sim)]);
    assert!(
        err.contains("sim/summary.json") && err.contains("`mode`"),
        "{err}"
    );
    let err = fails(&["report", "--merge", arg(&a), arg(&b), "--out", arg(&a)]);
    assert!(err.contains("one of the folders to merge"), "{err}");
}
