//! Merging real runs of one scenario measured by several load generators (one per host, or
//! several on one host) into one run: [`merge_runs`].
//!
//! Latency is combined the only honest way: the runs' HdrHistograms are *added* (a merged
//! percentile is a percentile of every sample), never their percentiles averaged. Counts are
//! summed. The runs are aligned in wall-clock time by the start each one recorded in its hlogs
//! (`#[StartTime: <unix s> (seconds since epoch)]`): for each policy, time 0 of the merged run is
//! the earliest start, and a run that started `d` seconds later has its interval `j` (the second
//! `[j, j + 1)` of its own run) added into the merged interval `round(d + j)`, the merged second
//! it overlaps most. Histograms cannot be split, so the merged per-second view is aligned to
//! within half a second; the whole-run figures do not depend on the alignment at all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;

use super::files::{file_stem, read_result_file, read_timeseries};
use super::hlog::{read_hlog_start, text_from, visit_hlog_file, IntervalLog};
use super::layout::{FAILURES_CSV, SUMMARY_JSON, TIMESERIES_CSV};
use super::recorder::{latency_row, new_histogram, PolicyResult};
use super::schema::{FailureRow, Mode, RunSummary, SummaryRow, TimeseriesRow};
use crate::ModelError;

/// A merged run, ready for [`super::write_run`]: its summary and one result per policy.
///
/// Each [`PolicyResult`] holds the merged summary row, time series, hlog (with the merged start
/// as its `StartTime`), whole-run histogram, failures and incidents. `backend_sends` and
/// `backend_failures` are empty: a run folder's files do not hold them.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The merged `summary.json`: mode `real`, the runs' counts summed, percentiles of the added
    /// histograms; its notes name the source folders and each one's start offset per policy.
    pub summary: RunSummary,
    /// Per policy, in the first run's order.
    pub results: Vec<PolicyResult>,
}

/// One run folder to merge, as read.
struct Source {
    /// The folder as given, for messages and notes.
    name: String,
    dir: PathBuf,
    summary: RunSummary,
    timeseries: Vec<TimeseriesRow>,
    failures: Vec<FailureRow>,
}

/// Merges the real runs in `dirs` (run folders written by `lblab loadgen` or `lblab real` of the
/// same scenario, policies, warm-up and measured length; see the module docs for how).
///
/// Errors name the folder's file and field: a folder without `summary.json`, a run that is not
/// in `real` mode, runs of different scenarios, policies, lengths or backend counts, an hlog
/// without a `StartTime` since the epoch, a line of an hlog, `timeseries.csv` or `failures.csv`
/// that cannot be read.
pub fn merge_runs(dirs: &[PathBuf]) -> Result<Merged, ModelError> {
    if dirs.is_empty() {
        return Err(ModelError::invalid("merge", "no run folders to merge"));
    }
    let sources = dirs
        .iter()
        .map(|d| Source::load(d))
        .collect::<Result<Vec<_>, _>>()?;
    check_compatible(&sources)?;
    let first = &sources[0].summary;
    let mut notes = vec![("merged runs".to_string(), sources.len().to_string())];
    for (i, s) in sources.iter().enumerate() {
        notes.push((
            format!("source {}", i + 1),
            format!("{} (seed {})", s.name, s.summary.seed),
        ));
    }
    let mut results = Vec::new();
    for row in &first.rows {
        results.push(merge_policy(&sources, &row.policy, &mut notes)?);
    }
    for s in &sources {
        notes.extend(
            s.summary
                .notes
                .iter()
                .map(|(k, v)| (format!("{}: {k}", s.name), v.clone())),
        );
    }
    let summary = RunSummary {
        scenario: first.scenario.clone(),
        mode: Mode::Real,
        seed: first.seed,
        partial: sources.iter().any(|s| s.summary.partial),
        backends: first.backends.clone(),
        fault_windows: first.fault_windows.clone(),
        warmup_s: first.warmup_s,
        measured_s: first.measured_s,
        rows: results.iter().map(|r| r.summary.clone()).collect(),
        notes,
        incidents: results
            .iter()
            .flat_map(|r| r.incidents.iter().cloned())
            .collect(),
    };
    Ok(Merged { summary, results })
}

impl Source {
    fn load(dir: &Path) -> Result<Source, ModelError> {
        let file = dir.join(SUMMARY_JSON);
        let name = dir.display().to_string();
        let parse = |message: String| ModelError::Parse {
            file: file.display().to_string(),
            field: None,
            position: None,
            message,
        };
        let text = match read_result_file(&file) {
            Err(ModelError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(parse(
                    "missing: not a run folder (`lblab loadgen --out DIR` writes one)".into(),
                ));
            }
            other => other?,
        };
        let summary: RunSummary = serde_json::from_str(&text).map_err(|e| parse(e.to_string()))?;
        if summary.mode != Mode::Real {
            return Err(ModelError::Invalid {
                file: file.display().to_string(),
                field: "mode".into(),
                position: None,
                message: format!(
                    "{:?}: only real runs (`lblab loadgen`, `lblab real`) can be merged; a {} run \
                     has no wall-clock start to align it by",
                    summary.mode.name(),
                    summary.mode.name()
                ),
            });
        }
        let timeseries = read_timeseries(&dir.join(TIMESERIES_CSV))?;
        let failures = read_failures(&dir.join(FAILURES_CSV), &summary.backends)?;
        Ok(Source {
            name,
            dir: dir.to_path_buf(),
            summary,
            timeseries,
            failures,
        })
    }

    fn invalid(&self, field: &str, message: String) -> ModelError {
        ModelError::Invalid {
            file: self.dir.join(SUMMARY_JSON).display().to_string(),
            field: field.into(),
            position: None,
            message,
        }
    }
}

/// Same scenario, same policies, same warm-up and measured length, same backends.
fn check_compatible(sources: &[Source]) -> Result<(), ModelError> {
    let first = &sources[0];
    for s in &sources[1..] {
        if s.summary.scenario != first.summary.scenario {
            return Err(s.invalid(
                "scenario",
                format!(
                    "{:?}, but {} ran {:?}: only runs of one scenario can be merged",
                    s.summary.scenario, first.name, first.summary.scenario
                ),
            ));
        }
        if s.summary.backends.len() != first.summary.backends.len() {
            return Err(s.invalid(
                "backends",
                format!(
                    "{} backends, but {} has {}",
                    s.summary.backends.len(),
                    first.name,
                    first.summary.backends.len()
                ),
            ));
        }
    }
    let labels = |s: &Source| -> BTreeSet<String> {
        s.summary.rows.iter().map(|r| r.policy.clone()).collect()
    };
    let all: BTreeSet<String> = sources.iter().flat_map(labels).collect();
    for s in sources {
        let own = labels(s);
        let missing: Vec<&String> = all.difference(&own).collect();
        if let Some(&policy) = missing.first() {
            let has = sources
                .iter()
                .find(|o| labels(o).contains(policy))
                .map_or("another run", |o| o.name.as_str());
            return Err(s.invalid(
                "rows",
                format!(
                    "no row for policy {} (which {has} has): merge runs of the same policies",
                    missing
                        .iter()
                        .map(|p| format!("{p:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    let length = |s: &Source| (s.summary.warmup_s, s.summary.measured_s);
    if sources.iter().any(|s| length(s) != length(first)) {
        let differing = sources
            .iter()
            .find(|s| length(s) != length(first))
            .unwrap_or(first);
        let field = if differing.summary.warmup_s != first.summary.warmup_s {
            "warmup_s"
        } else {
            "measured_s"
        };
        let each = sources
            .iter()
            .map(|s| {
                format!(
                    "{}: warm-up {} s, measured {} s",
                    s.name, s.summary.warmup_s, s.summary.measured_s
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Err(differing.invalid(
            field,
            format!(
                "the runs' lengths differ ({each}): merge runs of the same --warmup and --duration"
            ),
        ));
    }
    Ok(())
}

/// The merged second that interval (or second) `s` of a run that started `offset` seconds after
/// the earliest one falls in: the one it overlaps most.
fn slot(offset: f64, s: f64) -> u64 {
    (offset + s).round().max(0.0) as u64
}

/// Merges one policy's results across the sources; adds each source's start offset to `notes`.
fn merge_policy(
    sources: &[Source],
    policy: &str,
    notes: &mut Vec<(String, String)>,
) -> Result<PolicyResult, ModelError> {
    // The starts first (each log's header), so that every log is then read once, one interval
    // at a time, into the merged seconds.
    let mut starts = Vec::new();
    for s in sources {
        let file = s.dir.join(format!("{}.hlog", file_stem(policy)));
        let Some(start) = read_hlog_start(&file)? else {
            return Err(ModelError::Parse {
                file: file.display().to_string(),
                field: Some("StartTime".into()),
                position: None,
                message: "no `#[StartTime: <unix seconds> (seconds since epoch)]` line: the log \
                          does not say when its run started, so it cannot be aligned with the \
                          others (a run by an lblab from before real runs recorded their start)"
                    .into(),
            });
        };
        starts.push((file, start));
    }
    let t0 = starts
        .iter()
        .map(|(_, start)| *start)
        .fold(f64::INFINITY, f64::min);
    notes.push((
        format!("{policy}: start"),
        format!("{t0:.3} (Unix time, s)"),
    ));

    let warmup_s = sources[0].summary.warmup_s;
    let mut intervals: BTreeMap<u64, Histogram<u64>> = BTreeMap::new();
    let mut measured = new_histogram();
    let mut offsets = Vec::new();
    for ((file, start), s) in starts.iter().zip(sources) {
        let offset = start - t0;
        offsets.push(offset);
        notes.push((
            format!("{policy}: start offset of {}", s.name),
            format!("+{offset:.3} s (started at {start:.3})"),
        ));
        let add = |into: &mut Histogram<u64>, h: &Histogram<u64>| {
            into.add(h).map_err(|e| ModelError::Parse {
                file: file.display().to_string(),
                field: Some("histogram".into()),
                position: None,
                message: format!("latencies out of lblab's range: {e:?}"),
            })
        };
        visit_hlog_file(file, &mut |i| {
            add(
                intervals
                    .entry(slot(offset, i.start_s))
                    .or_insert_with(new_histogram),
                &i.histogram,
            )?;
            if i.start_s >= warmup_s {
                add(&mut measured, &i.histogram)?;
            }
            Ok(())
        })?;
    }

    let first_measured = warmup_s.ceil();
    notes.push((
        format!("{policy}: percentiles over"),
        format!(
            "{} latencies: the hlog intervals from {first_measured} s on, the whole seconds after \
             each run's warm-up",
            measured.len()
        ),
    ));

    let rows: Vec<&SummaryRow> = sources
        .iter()
        .filter_map(|s| s.summary.rows.iter().find(|r| r.policy == policy))
        .collect();
    let sum = |f: fn(&SummaryRow) -> u64| rows.iter().map(|r| f(r)).sum::<u64>();
    // slow_share is faulty sends over sends after the warm-up; a row's sends are its ok and
    // errors (what was sent and ended), exactly so unless calls were cut off at the end.
    let sent = |r: &SummaryRow| (r.ok + r.errors) as f64;
    let sent_total: f64 = rows.iter().map(|r| sent(r)).sum();
    let slow_share = if sent_total > 0.0 {
        rows.iter().map(|r| r.slow_share * sent(r)).sum::<f64>() / sent_total
    } else {
        0.0
    };
    let summary = SummaryRow {
        requests: sum(|r| r.requests),
        ok: sum(|r| r.ok),
        errors: sum(|r| r.errors),
        deadline_exceeded: sum(|r| r.deadline_exceeded),
        dropped: sum(|r| r.dropped),
        incidents: sum(|r| r.incidents),
        slow_share,
        ..latency_row(policy, &measured)
    };

    let mut log = IntervalLog::new(policy, warmup_s);
    for (second, h) in &intervals {
        log.push(*second, h);
    }
    let backends = sources[0].summary.backends.len();
    let timeseries = merge_timeseries(sources, &offsets, policy, &intervals, backends);
    let failures = merge_failures(sources, &offsets, policy);
    let incidents = sources
        .iter()
        .zip(&offsets)
        .flat_map(|(s, offset)| {
            s.summary
                .incidents
                .iter()
                .filter(|i| i.policy == policy)
                .map(move |i| {
                    let mut i = i.clone();
                    i.start_s += offset;
                    i.end_s += offset;
                    i.detail = format!("{}: {}", s.name, i.detail);
                    i
                })
        })
        .collect();
    Ok(PolicyResult {
        summary,
        timeseries,
        hlog: text_from(&log, t0),
        histogram: measured,
        backend_sends: Vec::new(),
        avoidable_waits: 0,
        backend_failures: Vec::new(),
        failures,
        incidents,
    })
}

/// The merged time series: per merged second, the completions and percentiles of the added
/// interval histograms, and traffic shares combined from the runs' rows weighted by their
/// completions in that second (the files do not hold sends per second; at a steady rate the
/// two differ by the calls in flight at the second's edges).
fn merge_timeseries(
    sources: &[Source],
    offsets: &[f64],
    policy: &str,
    intervals: &BTreeMap<u64, Histogram<u64>>,
    backends: usize,
) -> Vec<TimeseriesRow> {
    let mut shares: BTreeMap<u64, (Vec<f64>, f64)> = BTreeMap::new();
    for (s, offset) in sources.iter().zip(offsets) {
        for row in s.timeseries.iter().filter(|r| r.policy == policy) {
            if !row.shares.iter().any(|v| *v > 0.0) {
                continue;
            }
            let weight = row.completed.max(1) as f64;
            let (acc, total) = shares
                .entry(slot(*offset, row.second as f64))
                .or_insert_with(|| (vec![0.0; backends], 0.0));
            for (a, v) in acc.iter_mut().zip(&row.shares) {
                *a += weight * v;
            }
            *total += weight;
        }
    }
    let last = intervals
        .keys()
        .chain(shares.keys())
        .copied()
        .max()
        .map_or(0, |l| l + 1);
    (0..last)
        .map(|second| {
            let h = intervals.get(&second).filter(|h| !h.is_empty());
            let q = |p: f64| h.map_or(f64::NAN, |h| h.value_at_quantile(p) as f64 / 1e6);
            TimeseriesRow {
                policy: policy.to_string(),
                second,
                completed: h.map_or(0, Histogram::len),
                p50_ms: q(0.5),
                p99_ms: q(0.99),
                shares: shares.get(&second).map_or_else(
                    || vec![0.0; backends],
                    |(acc, total)| acc.iter().map(|a| a / total).collect(),
                ),
            }
        })
        .collect()
}

/// The runs' failures per merged second and backend, summed (the mean time to an error weighted
/// by the errors).
fn merge_failures(sources: &[Source], offsets: &[f64], policy: &str) -> Vec<FailureRow> {
    let mut merged: BTreeMap<(u64, usize), (u64, u64, f64)> = BTreeMap::new();
    for (s, offset) in sources.iter().zip(offsets) {
        for f in s.failures.iter().filter(|f| f.policy == policy) {
            let e = merged
                .entry((slot(*offset, f.second as f64), f.backend))
                .or_default();
            e.0 += f.errors;
            e.1 += f.deadline_exceeded;
            e.2 += f.error_mean_ms * f.errors as f64;
        }
    }
    merged
        .into_iter()
        .map(
            |((second, backend), (errors, deadline_exceeded, error_ms))| FailureRow {
                policy: policy.to_string(),
                second,
                backend,
                errors,
                deadline_exceeded,
                error_mean_ms: if errors == 0 {
                    0.0
                } else {
                    error_ms / errors as f64
                },
            },
        )
        .collect()
}

/// Reads `failures.csv` (as [`super::write_run`] writes it: policy, second, backend name,
/// errors, deadline_exceeded, error_mean_ms), backends named as in `backends`.
fn read_failures(path: &Path, backends: &[String]) -> Result<Vec<FailureRow>, ModelError> {
    let file = path.display().to_string();
    let text = read_result_file(path)?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| ModelError::Parse {
            file: file.clone(),
            field: None,
            position: e.position().map(|p| (p.line() as usize, 1)),
            message: e.to_string(),
        })?;
        let line = rec.position().map(|p| (p.line() as usize, 1));
        let bad = |field: &str, what: &str| ModelError::Parse {
            file: file.clone(),
            field: Some(field.into()),
            position: line,
            message: format!("{:?} is not {what}", rec.get(column(field)).unwrap_or("")),
        };
        let count = |field: &str| {
            rec.get(column(field))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| bad(field, "a count"))
        };
        let name = rec.get(2).unwrap_or_default();
        let backend = backends
            .iter()
            .position(|b| b == name)
            .ok_or_else(|| bad("backend", "a backend of the run's summary.json"))?;
        rows.push(FailureRow {
            policy: rec.get(0).unwrap_or_default().to_string(),
            second: count("second")?,
            backend,
            errors: count("errors")?,
            deadline_exceeded: count("deadline_exceeded")?,
            error_mean_ms: rec
                .get(5)
                .and_then(|v| v.parse::<f64>().ok())
                .ok_or_else(|| bad("error_mean_ms", "a time in ms"))?,
        });
    }
    Ok(rows)
}

/// The column of `failures.csv` named `field`.
fn column(field: &str) -> usize {
    match field {
        "policy" => 0,
        "second" => 1,
        "backend" => 2,
        "errors" => 3,
        "deadline_exceeded" => 4,
        _ => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{write_run, Recorder, RequestResult};
    use crate::Scenario;

    const SEC: u64 = 1_000_000_000;

    fn scenario(warmup: &str) -> Scenario {
        Scenario::parse(&format!(
            r#"
name = "merge-test"
[workload]
rate = 100
duration = "3s"
warmup = "{warmup}"
[[fleet]]
name = "b"
count = 2
service_time = {{ dist = "constant", value = "1ms" }}
[[policies]]
name = "rr"
config = '{{"loadBalancingConfig":[{{"round_robin":{{}}}}]}}'
[[policies]]
name = "pe"
config = '{{"loadBalancingConfig":[{{"peak_ewma_experimental":{{}}}}]}}'
"#
        ))
        .expect("valid scenario")
    }

    /// A fresh folder for one test's runs.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lblab-merge-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A request every 10 ms for 4 s, request `i` taking `latency(i)` ns; the samples that
    /// complete after the 1 s warm-up (what the hlog's measured intervals hold) go to `all`.
    fn record(policy: &str, latency: &dyn Fn(u64) -> u64, all: &mut Histogram<u64>) -> Recorder {
        let mut r = Recorder::new(policy, 2, SEC);
        for i in 0..400u64 {
            let t = i * 10_000_000;
            r.on_send(t, (i % 2) as usize, i.is_multiple_of(4));
            let end = t + latency(i);
            r.on_result(t, end, RequestResult::Ok);
            if end >= SEC {
                all.record(latency(i)).unwrap();
            }
        }
        r
    }

    /// A real run folder `dir` of both policies, started at the Unix time `start`.
    fn run_folder(
        dir: &Path,
        start: f64,
        warmup: &str,
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
        let summary = RunSummary::of(&scenario(warmup), Mode::Real, &results, false, Vec::new());
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
        let sa = run_folder(&a, 1_700_000_000.25, "1s", &fast, &mut all);
        let sb = run_folder(&b, 1_700_000_001.5, "1s", &slow, &mut slow_samples);
        all.add(&slow_samples).unwrap();
        let merged = merge_runs(&[a.clone(), b.clone()]).expect("merged");
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
        run_folder(&b, 1_700_000_002.0, "1s", &|_| 2_000_000, &mut sink);
        run_folder(&a, 1_700_000_000.0, "1s", &|_| 2_000_000, &mut sink);
        // The later run first: time 0 is still the earliest start.
        let merged = merge_runs(&[b.clone(), a.clone()]).expect("merged");
        let rr = &merged.results[0];
        let log = crate::results::parse_hlog(&rr.hlog, "merged").unwrap();
        assert_eq!(log.start_unix_s, Some(1_700_000_000.0));
        // Each run has intervals 0..=3; the later one lands on 2..=5.
        let seconds: Vec<f64> = log.intervals.iter().map(|i| i.start_s).collect();
        assert_eq!(seconds, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let counts: Vec<u64> = log.intervals.iter().map(|i| i.histogram.len()).collect();
        assert_eq!(counts, [100, 100, 200, 200, 100, 100]);
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
        merge_runs(dirs).expect_err("an error").to_string()
    }

    #[test]
    fn bad_folders_are_errors_that_name_the_file_and_field() {
        let root = scratch("errors");
        let (a, b) = (root.join("a"), root.join("b"));
        let mut sink = new_histogram();
        run_folder(&a, 1_700_000_000.0, "1s", &|_| 2_000_000, &mut sink);
        run_folder(&b, 1_700_000_000.0, "1s", &|_| 2_000_000, &mut sink);

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
        let summary = RunSummary::of(&scenario("1s"), Mode::Sim, &results, false, Vec::new());
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
        let summary = RunSummary::of(&scenario("1s"), Mode::Real, &results, false, Vec::new());
        write_run(&one, &summary, &results).unwrap();
        let e = message(&[a.clone(), one.clone()]);
        assert!(
            e.contains("one-policy/summary.json") && e.contains("`rows`") && e.contains("\"pe\""),
            "{e}"
        );

        // A different warm-up: both lengths are given.
        let longer = root.join("longer");
        run_folder(&longer, 1_700_000_000.0, "2s", &|_| 2_000_000, &mut sink);
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
}
