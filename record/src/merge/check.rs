//! What [`super::merge_runs`] checks before and while it adds runs together, so that a merge is
//! of whole, distinct runs that loaded the fleet together, and fits in memory: one folder given
//! twice (or a copy of it), runs that do not overlap in time, a start that is not a plausible Unix
//! time, an hlog whose measured latencies are not what its header and its `summary.json` say (a
//! truncated file), and a merged run larger than `--memory-budget`.

use std::path::{Path, PathBuf};

use super::Source;
use crate::hlog::HlogHeader;
use crate::memory;
use crate::FileError;
use lblab_message::setting::{Names, Setting};

/// The latest start a run may record: 2100-01-01 in Unix seconds. A later one is not a clock's
/// reading but a corrupt or hand-made header, and aligning by it would ask for a merged run of
/// millions of years.
pub(super) const LATEST_START_UNIX_S: f64 = 4_102_444_800.0;

/// One source's log of one policy, as its header says.
#[derive(Debug, Clone)]
pub(super) struct Log {
    /// The `.hlog` file.
    pub file: PathBuf,
    /// Its start, Unix seconds.
    pub start: f64,
    /// Its header's count of measured latencies, if it records one.
    pub measured: Option<u64>,
}

/// An error about `file`'s `field`.
fn invalid(file: &Path, field: &str, message: String) -> FileError {
    FileError::Invalid {
        file: file.display().to_string(),
        field: field.into(),
        position: None,
        message,
    }
}

/// Refuses one folder given twice (the same folder by another path included): every call of it
/// would be counted twice.
pub(super) fn distinct_folders(dirs: &[PathBuf]) -> Result<(), FileError> {
    let key = |d: &PathBuf| std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
    for (i, d) in dirs.iter().enumerate() {
        if let Some(earlier) = dirs[..i].iter().find(|e| key(e) == key(d)) {
            return Err(FileError::invalid(
                "merge",
                format!(
                    "{} is given twice (also as {}): merging a run with itself would count \
                     every call twice; give each run folder once",
                    d.display(),
                    earlier.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Checks the header of `policy`'s log in `source` (a start since the epoch, before
/// [`LATEST_START_UNIX_S`]) and returns it as a [`Log`].
pub(super) fn log(file: PathBuf, header: HlogHeader) -> Result<Log, FileError> {
    let Some(start) = header.start_unix_s else {
        return Err(FileError::Parse {
            file: file.display().to_string(),
            field: Some("StartTime".into()),
            position: None,
            message: "no `#[StartTime: <unix seconds> (seconds since epoch)]` line: the log \
                      does not say when its run started, so it cannot be aligned with the \
                      others (a run by an lblab from before real runs recorded their start)"
                .into(),
        });
    };
    if start > LATEST_START_UNIX_S {
        return Err(invalid(
            &file,
            "StartTime",
            format!(
                "{start} is not a plausible Unix time (later than 2100-01-01): a start that \
                 no clock recorded cannot align runs"
            ),
        ));
    }
    Ok(Log {
        file,
        start,
        measured: header.measured_latencies,
    })
}

/// Refuses a copy of one run given as two folders: the same start for every policy and the same
/// counts.
pub(super) fn distinct_runs(sources: &[Source], logs: &[Vec<Log>]) -> Result<(), FileError> {
    for (i, s) in sources.iter().enumerate() {
        for (j, earlier) in sources[..i].iter().enumerate() {
            let same_starts = logs.iter().all(|per| per[i].start == per[j].start);
            if same_starts && s.summary.rows == earlier.summary.rows {
                return Err(invalid(
                    &s.dir.join(crate::layout::SUMMARY_JSON),
                    "rows",
                    format!(
                        "the same run as {} (the same start and the same counts for every \
                         policy): a copy of a run would count every call twice; give each run \
                         once",
                        earlier.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Refuses runs of `policy` that do not overlap in time: the latest start must come before the
/// earliest run ended (its warm-up and measured length after its start). Runs one after the
/// other did not load the fleet together, so their sum is not one run.
pub(super) fn overlap(sources: &[Source], policy: &str, logs: &[Log]) -> Result<(), FileError> {
    let length = sources[0].summary.warmup_s + sources[0].summary.measured_s;
    if sources[0].summary.measured_s <= 0.0 {
        // A file from before lblab recorded the measured length: nothing to check against.
        return Ok(());
    }
    let earliest = (0..logs.len())
        .min_by(|&a, &b| logs[a].start.total_cmp(&logs[b].start))
        .unwrap_or(0);
    let end = logs[earliest].start + length;
    for (s, log) in sources.iter().zip(logs) {
        if log.start >= end {
            return Err(invalid(
                &log.file,
                "StartTime",
                format!(
                    "{policy} started at {:.3}, {:.3} s after {} started, whose {length} s run \
                     (warm-up and measured) had ended by then: runs that do not overlap in time \
                     did not load the fleet together, and their sum is not one run; merge runs \
                     measured at the same time ({} is the late one)",
                    log.start,
                    log.start - logs[earliest].start,
                    sources[earliest].name,
                    s.name
                ),
            ));
        }
    }
    Ok(())
}

/// The merged run's seconds for `policy`: the latest second any source's `timeseries.csv` has,
/// moved by its start offset, plus one.
pub(super) fn merged_seconds(sources: &[Source], policy: &str, offsets: &[f64]) -> u64 {
    sources
        .iter()
        .zip(offsets)
        .filter_map(|(s, offset)| {
            let last = s
                .timeseries
                .iter()
                .filter(|r| r.policy == policy)
                .map(|r| r.second)
                .max()?;
            Some(super::slot(*offset, last as f64) + 1)
        })
        .max()
        .unwrap_or(0)
}

/// Refuses a merge whose estimated memory ([`memory::merged`]) is above `budget`.
pub(super) fn memory(
    sources: &[Source],
    seconds: u64,
    policies: usize,
    budget_bytes: u64,
    names: Names,
) -> Result<(), FileError> {
    let backends = sources[0].summary.backends.len();
    let read_rows: usize = sources.iter().map(|s| s.timeseries.len()).sum();
    let e = memory::merged(policies, seconds, backends, read_rows);
    if e.bytes <= budget_bytes {
        return Ok(());
    }
    Err(FileError::invalid(
        "merge",
        format!(
            "merging these {} runs would need about {} of memory (mostly {}), more than the \
             budget of {}; merge fewer or shorter runs, or raise the budget with {}",
            sources.len(),
            memory::size(e.bytes),
            e.largest,
            memory::size(budget_bytes),
            names(Setting::MemoryBudget)
        ),
    ))
}

/// Checks one source's log of `policy` after it was read: its measured intervals must hold what
/// its header says (else the file was truncated or altered) and no more than its `summary.json`
/// counted (ok and deadline exceeded; streams are counted there without a latency). A log without
/// a count (from before lblab recorded one) cannot be checked: a warning says so.
pub(super) fn counts(
    source: &Source,
    policy: &str,
    log: &Log,
    measured: u64,
    warnings: &mut Vec<String>,
) -> Result<(), FileError> {
    let Some(header) = log.measured else {
        warnings.push(format!(
            "{}: written by an lblab from before hlogs recorded their measured count (and cut \
             the warm-up by when calls ended, not by when they were intended): its latencies \
             cannot be checked against {}, and the merged percentiles may differ from its own \
             by the calls around the warm-up's end",
            log.file.display(),
            crate::layout::SUMMARY_JSON
        ));
        return Ok(());
    };
    if measured != header {
        return Err(invalid(
            &log.file,
            "Measured latencies",
            format!(
                "the log's measured intervals hold {measured} latencies, but its header says \
                 {header}: the file is truncated or altered; merge whole run folders"
            ),
        ));
    }
    let row = source.summary.rows.iter().find(|r| r.policy == policy);
    let counted = row.map_or(0, |r| r.ok + r.deadline_exceeded);
    if measured > counted {
        return Err(invalid(
            &log.file,
            "Measured latencies",
            format!(
                "the log holds {measured} measured latencies, but {} counts only {counted} \
                 calls of {policy} that ended OK or ran out of time: the log is not this run's",
                source.dir.join(crate::layout::SUMMARY_JSON).display()
            ),
        ));
    }
    Ok(())
}
