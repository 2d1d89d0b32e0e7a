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
//! within half a second; the whole-run figures do not depend on the alignment at all. Each
//! interval keeps its run's tag (measured or warm-up, cut by intended send time as the run's
//! summary was), so a merge of one run reproduces it. The checks before any interval is read
//! are in [`check`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;

use super::files::{file_stem, read_timeseries};
use super::histogram::new_histogram;
use super::hlog::{read_hlog_header, text_from, visit_hlog_file, IntervalLog};
use super::io::read_result_file;
use super::layout::{FAILURES_CSV, SUMMARY_JSON, TIMESERIES_CSV};
use super::recorder::{latency_row, PolicyResult};
use super::schema::{FailureRow, Mode, RunSummary, SummaryRow, TimeseriesRow};
use crate::FileError;
use lblab_message::setting::{Names, Setting};

mod check;

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
    /// What the merge could not check and the user should know (logs from an older lblab).
    pub warnings: Vec<String>,
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
/// A merge of one run is that run: the same counts, percentiles and hlog intervals, since both
/// the summary and the hlog's tags cut the warm-up by intended send time.
///
/// Errors name the folder's file and field: a folder given twice (or a copy of a run), a folder
/// without `summary.json`, a run that is not in `real` mode, runs of different scenarios,
/// policies, lengths or backend counts, runs that do not overlap in time, an hlog without a
/// plausible `StartTime` since the epoch, an hlog whose measured latencies are not what its
/// header or its `summary.json` count (a truncated file), a line of an hlog, `timeseries.csv` or
/// `failures.csv` that cannot be read, and a merge whose memory estimate is above `budget`
/// (bytes). Settings an error names (the budget, the runs' lengths) are spelt by `names`.
pub fn merge_runs(dirs: &[PathBuf], budget: u64, names: Names) -> Result<Merged, FileError> {
    if dirs.is_empty() {
        return Err(FileError::invalid("merge", "no run folders to merge"));
    }
    check::distinct_folders(dirs)?;
    let sources = dirs
        .iter()
        .map(|d| Source::load(d, names))
        .collect::<Result<Vec<_>, _>>()?;
    check_compatible(&sources, names)?;
    let first = &sources[0].summary;
    // Every log's header first (its start and count), so that the runs are known distinct,
    // overlapping and small enough before any interval is decoded.
    let mut logs = Vec::new();
    for row in &first.rows {
        let mut per_source = Vec::new();
        for s in &sources {
            let file = s.dir.join(format!("{}.hlog", file_stem(&row.policy)));
            let header = read_hlog_header(&file)?;
            per_source.push(check::log(file, header)?);
        }
        check::overlap(&sources, &row.policy, &per_source)?;
        logs.push(per_source);
    }
    check::distinct_runs(&sources, &logs)?;
    let seconds = first
        .rows
        .iter()
        .zip(&logs)
        .map(|(row, per)| check::merged_seconds(&sources, &row.policy, &offsets(per)))
        .max()
        .unwrap_or(0);
    check::memory(&sources, seconds, first.rows.len(), budget, names)?;

    let mut notes = vec![("merged runs".to_string(), sources.len().to_string())];
    for (i, s) in sources.iter().enumerate() {
        notes.push((
            format!("source {}", i + 1),
            format!("{} (seed {})", s.name, s.summary.seed),
        ));
    }
    let mut warnings = Vec::new();
    let mut results = Vec::new();
    for (row, per) in first.rows.iter().zip(&logs) {
        results.push(merge_policy(
            &sources,
            &row.policy,
            per,
            &mut notes,
            &mut warnings,
        )?);
    }
    for s in &sources {
        notes.extend(
            s.summary
                .notes
                .iter()
                .map(|(k, v)| (format!("{}: {k}", s.name), v.clone())),
        );
    }
    let partial = sources.iter().any(|s| s.summary.partial);
    let summary = RunSummary::of(first.head(), Mode::Real, &results, partial, notes);
    Ok(Merged {
        summary,
        results,
        warnings,
    })
}

/// Each log's start offset from the earliest, seconds.
fn offsets(logs: &[check::Log]) -> Vec<f64> {
    let t0 = logs.iter().map(|l| l.start).fold(f64::INFINITY, f64::min);
    logs.iter().map(|l| l.start - t0).collect()
}

impl Source {
    fn load(dir: &Path, names: Names) -> Result<Source, FileError> {
        let file = dir.join(SUMMARY_JSON);
        let name = dir.display().to_string();
        let parse = |message: String| FileError::Parse {
            file: file.display().to_string(),
            field: None,
            position: None,
            message,
        };
        let text = match read_result_file(&file) {
            Err(FileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(parse(format!(
                    "missing: not a run folder (`lblab loadgen {} DIR` writes one)",
                    names(Setting::Out)
                )));
            }
            other => other?,
        };
        let summary: RunSummary = serde_json::from_str(&text).map_err(|e| parse(e.to_string()))?;
        if summary.mode != Mode::Real {
            return Err(FileError::Invalid {
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

    fn invalid(&self, field: &str, message: String) -> FileError {
        FileError::Invalid {
            file: self.dir.join(SUMMARY_JSON).display().to_string(),
            field: field.into(),
            position: None,
            message,
        }
    }
}

/// Same scenario, same policies, same warm-up and measured length, same backends.
fn check_compatible(sources: &[Source], names: Names) -> Result<(), FileError> {
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
        // The same label for two algorithms is not one experiment (files written before the
        // configs were recorded have none to compare).
        for c in &s.summary.configs {
            if let Some(other) = first.summary.config(&c.policy) {
                if *other != c.config {
                    return Err(s.invalid(
                        "configs",
                        format!(
                            "policy {} ran {}, but in {} it ran {}: only runs of the same \
                             algorithms can be merged",
                            c.policy, c.config, first.name, other
                        ),
                    ));
                }
            }
            let theirs = first.summary.configs.iter().find(|f| f.policy == c.policy);
            if let (Some(mine), Some(theirs)) =
                (&c.fingerprint, theirs.and_then(|t| t.fingerprint.as_ref()))
            {
                if mine != theirs {
                    return Err(s.invalid(
                        "configs",
                        format!(
                            "policy {} ran the algorithm with fingerprint {mine}, but in {} the                              one with fingerprint {theirs} (the same config, another version of                              its rules): only runs of the same algorithms can be merged",
                            c.policy, first.name
                        ),
                    ));
                }
            }
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
                "the runs' lengths differ ({each}): merge runs of the same {} and {}",
                names(Setting::Warmup),
                names(Setting::Duration)
            ),
        ));
    }
    same_experiment(sources)
}

/// The same scenario as run and the same load per client ([`RunSummary::experiment`]; files
/// written before it was recorded have none to compare): a scenario of the same name with
/// another rate, deadline or fleet is another experiment.
fn same_experiment(sources: &[Source]) -> Result<(), FileError> {
    let first = &sources[0];
    let Some(mine) = &first.summary.experiment else {
        return Ok(());
    };
    for s in &sources[1..] {
        let Some(theirs) = &s.summary.experiment else {
            continue;
        };
        if theirs.scenario_sha256 != mine.scenario_sha256 {
            return Err(s.invalid(
                "experiment.scenario_sha256",
                format!(
                    "scenario {:?} ran as {}, but in {} as {}: the scenario's text or the \
                     flags that change it (rate, deadline, lengths, fleet) differ, so these are \
                     two experiments; merge runs of one scenario file and the same flags",
                    s.summary.scenario,
                    short(&theirs.scenario_sha256),
                    first.name,
                    short(&mine.scenario_sha256)
                ),
            ));
        }
        let per_client = |e: &crate::Experiment| e.rate_per_client.unwrap_or(0.0);
        let (a, b) = (per_client(mine), per_client(theirs));
        if (a - b).abs() > 1e-9 * a.abs().max(b.abs()) {
            return Err(s.invalid(
                "experiment.rate_per_client",
                format!(
                    "{b} calls/s per client, but {} offered {a}: shards of one experiment split \
                     the clients and the rate alike",
                    first.name
                ),
            ));
        }
    }
    Ok(())
}

/// The first 12 hex digits of a hash, as git shortens a commit.
fn short(sha256: &str) -> &str {
    sha256.get(..12).unwrap_or(sha256)
}

/// The merged second that interval (or second) `s` of a run that started `offset` seconds after
/// the earliest one falls in: the one it overlaps most.
fn slot(offset: f64, s: f64) -> u64 {
    (offset + s).round().max(0.0) as u64
}

/// Merges one policy's results across the sources, whose logs of it are `logs`; adds each
/// source's start offset to `notes`.
fn merge_policy(
    sources: &[Source],
    policy: &str,
    logs: &[check::Log],
    notes: &mut Vec<(String, String)>,
    warnings: &mut Vec<String>,
) -> Result<PolicyResult, FileError> {
    let t0 = logs.iter().map(|l| l.start).fold(f64::INFINITY, f64::min);
    notes.push((
        format!("{policy}: start"),
        format!("{t0:.3} (Unix time, s)"),
    ));

    let warmup_s = sources[0].summary.warmup_s;
    let offsets = offsets(logs);
    let seconds = check::merged_seconds(sources, policy, &offsets);
    // Per merged second, its warm-up's interval (false) and its measured one (true), each as
    // the runs tagged their calls: the summary's cut, by intended send time.
    let mut intervals: BTreeMap<(u64, bool), Histogram<u64>> = BTreeMap::new();
    let mut measured = new_histogram();
    for ((log, s), offset) in logs.iter().zip(sources).zip(&offsets) {
        notes.push((
            format!("{policy}: start offset of {}", s.name),
            format!("+{offset:.3} s (started at {:.3})", log.start),
        ));
        let file = &log.file;
        let add = |into: &mut Histogram<u64>, h: &Histogram<u64>| {
            into.add(h).map_err(|e| FileError::Parse {
                file: file.display().to_string(),
                field: Some("histogram".into()),
                position: None,
                message: format!("latencies out of lblab's range: {e:?}"),
            })
        };
        let mut own = 0u64;
        visit_hlog_file(file, &mut |i| {
            let second = slot(*offset, i.start_s);
            if second >= seconds {
                return Err(FileError::Parse {
                    file: file.display().to_string(),
                    field: Some("interval".into()),
                    position: None,
                    message: format!(
                        "an interval at {:.3} s, after the last second of its run's {}: the \
                         log is not this run's, or its time base is wrong",
                        i.start_s, TIMESERIES_CSV
                    ),
                });
            }
            let is_measured = i.is_measured(policy, warmup_s);
            add(
                intervals
                    .entry((second, is_measured))
                    .or_insert_with(new_histogram),
                &i.histogram,
            )?;
            if is_measured {
                own += i.histogram.len();
                add(&mut measured, &i.histogram)?;
            }
            Ok(())
        })?;
        check::counts(s, policy, log, own, warnings)?;
    }

    notes.push((
        format!("{policy}: percentiles over"),
        format!(
            "{} latencies: every run's measured intervals (the calls intended after its warm-up, \
             as its summary counted them)",
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
    let slow_share = if rows.iter().all(|r| r.slow_share == rows[0].slow_share) {
        // One run (or runs that agree): its share as it is, not re-weighted by float.
        rows.first().map_or(0.0, |r| r.slow_share)
    } else if sent_total > 0.0 {
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
    for ((second, is_measured), h) in &intervals {
        log.push(*second, h, *is_measured);
    }
    let backends = sources[0].summary.backends.len();
    let timeseries = merge_timeseries(sources, &offsets, policy, &intervals, backends)?;
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
    intervals: &BTreeMap<(u64, bool), Histogram<u64>>,
    backends: usize,
) -> Result<Vec<TimeseriesRow>, FileError> {
    // Per merged second, the runs' rows that have shares, with their weights.
    let mut shares: BTreeMap<u64, Vec<(f64, &[f64])>> = BTreeMap::new();
    for (s, offset) in sources.iter().zip(offsets) {
        for row in s.timeseries.iter().filter(|r| r.policy == policy) {
            if !row.shares.iter().any(|v| *v > 0.0) {
                continue;
            }
            shares
                .entry(slot(*offset, row.second as f64))
                .or_default()
                .push((row.completed.max(1) as f64, &row.shares));
        }
    }
    // Per merged second, every call that ended in it (warm-up's and measured).
    let mut ended: BTreeMap<u64, Histogram<u64>> = BTreeMap::new();
    for ((second, _), h) in intervals {
        ended
            .entry(*second)
            .or_insert_with(new_histogram)
            .add(h)
            .map_err(|e| FileError::invalid("histogram", format!("{e:?}")))?;
    }
    let seconds: BTreeSet<u64> = ended.keys().chain(shares.keys()).copied().collect();
    Ok(seconds
        .into_iter()
        .map(|second| {
            let h = ended.get(&second).filter(|h| !h.is_empty());
            let q = |p: f64| h.map_or(f64::NAN, |h| h.value_at_quantile(p) as f64 / 1e6);
            let shares = match shares.get(&second).map(Vec::as_slice) {
                None => vec![0.0; backends],
                // One run's row: its shares as they are.
                Some([(_, one)]) => one.to_vec(),
                Some(rows) => {
                    let total: f64 = rows.iter().map(|(w, _)| w).sum();
                    (0..backends)
                        .map(|b| {
                            rows.iter()
                                .map(|(w, v)| w * v.get(b).copied().unwrap_or(0.0))
                                .sum::<f64>()
                                / total
                        })
                        .collect()
                }
            };
            TimeseriesRow {
                policy: policy.to_string(),
                second,
                completed: h.map_or(0, Histogram::len),
                p50_ms: q(0.5),
                p99_ms: q(0.99),
                shares,
            }
        })
        .collect())
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
fn read_failures(path: &Path, backends: &[String]) -> Result<Vec<FailureRow>, FileError> {
    let file = path.display().to_string();
    let text = read_result_file(path)?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| FileError::Parse {
            file: file.clone(),
            field: None,
            position: e.position().map(|p| (p.line() as usize, 1)),
            message: e.to_string(),
        })?;
        let line = rec.position().map(|p| (p.line() as usize, 1));
        let bad = |field: &str, what: &str| FileError::Parse {
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
mod tests;
