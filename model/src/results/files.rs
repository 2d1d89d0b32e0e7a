//! The files of a results folder: writing them (atomically) and reading them back.

use super::layout::{FAILURES_CSV, SUMMARY_CSV, SUMMARY_JSON, TIMESERIES_CSV};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::recorder::PolicyResult;
use super::schema::{RunSummary, TimeseriesRow};
use crate::ModelError;

/// Writes `contents` to `path` atomically: a temporary file in the same folder, then a rename, so
/// an interrupted run never leaves a half-written file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), ModelError> {
    let io = |source| ModelError::Io {
        file: path.display().to_string(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let tmp: PathBuf = dir.join(format!(
        ".{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("out")
    ));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(contents)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    });
    if written.is_err() {
        // A full disk or a failed rename must not leave half a file behind.
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(io)
}

/// Writes `summary.csv`, `summary.json`, `timeseries.csv` and one `.hlog` per policy into `dir`.
pub fn write_run(dir: &Path, run: &RunSummary, results: &[PolicyResult]) -> Result<(), ModelError> {
    let ser = |file: &str, e: String| ModelError::Io {
        file: dir.join(file).display().to_string(),
        source: std::io::Error::other(e),
    };
    let mut csv_out = csv::Writer::from_writer(Vec::new());
    for row in &run.rows {
        csv_out
            .serialize(row)
            .map_err(|e| ser(SUMMARY_CSV, e.to_string()))?;
    }
    let bytes = csv_out
        .into_inner()
        .map_err(|e| ser(SUMMARY_CSV, e.to_string()))?;
    write_atomic(&dir.join(SUMMARY_CSV), &bytes)?;
    let json = serde_json::to_string_pretty(run).map_err(|e| ser(SUMMARY_JSON, e.to_string()))?;
    write_atomic(&dir.join(SUMMARY_JSON), (json + "\n").as_bytes())?;

    let mut ts = String::from("policy,second,completed,p50_ms,p99_ms");
    for b in &run.backends {
        let _ = write!(ts, ",share_{b}");
    }
    ts.push('\n');
    for r in results {
        for row in &r.timeseries {
            let fmt = |v: f64| {
                if v.is_nan() {
                    String::new()
                } else {
                    format!("{v:.3}")
                }
            };
            let _ = write!(
                ts,
                "{},{},{},{},{}",
                row.policy,
                row.second,
                row.completed,
                fmt(row.p50_ms),
                fmt(row.p99_ms)
            );
            for s in &row.shares {
                let _ = write!(ts, ",{s:.4}");
            }
            ts.push('\n');
        }
    }
    write_atomic(&dir.join(TIMESERIES_CSV), ts.as_bytes())?;
    let mut fails = String::from("policy,second,backend,errors,deadline_exceeded,error_mean_ms\n");
    for r in results {
        for f in &r.failures {
            let name = run.backends.get(f.backend).map_or("?", String::as_str);
            let _ = writeln!(
                fails,
                "{},{},{name},{},{},{:.3}",
                f.policy, f.second, f.errors, f.deadline_exceeded, f.error_mean_ms
            );
        }
    }
    write_atomic(&dir.join(FAILURES_CSV), fails.as_bytes())?;
    for r in results {
        write_atomic(
            &dir.join(format!("{}.hlog", file_stem(&r.summary.policy))),
            r.hlog.as_bytes(),
        )?;
    }
    Ok(())
}

/// A policy label made safe as a file name.
pub fn file_stem(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The largest result file lblab reads back (a year-long run's hlog is far below it).
pub const MAX_RESULT_FILE: u64 = 256 << 20;

/// Reads a result file back as text: only a regular file (a FIFO or a device given by mistake
/// must not block or fill memory), at most [`MAX_RESULT_FILE`] bytes. A missing file is an
/// `Io` error of kind `NotFound`.
pub fn read_result_file(path: &Path) -> Result<String, ModelError> {
    use std::io::Read as _;
    let io = |source| ModelError::Io {
        file: path.display().to_string(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(io(std::io::Error::other("not a regular file")));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_RESULT_FILE + 1).read_to_string(&mut text))
        .map_err(io)?;
    if text.len() as u64 > MAX_RESULT_FILE {
        return Err(io(std::io::Error::other(format!(
            "larger than {} MiB, more than any result file lblab writes",
            MAX_RESULT_FILE >> 20
        ))));
    }
    Ok(text)
}

/// Reads `timeseries.csv` back (for charts).
pub fn read_timeseries(path: &Path) -> Result<Vec<TimeseriesRow>, ModelError> {
    let io = |e: String| ModelError::Parse {
        file: path.display().to_string(),
        field: None,
        position: None,
        message: e,
    };
    let text = read_result_file(path)?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| io(e.to_string()))?;
        let num = |i: usize| {
            rec.get(i)
                .and_then(|s| s.parse::<f64>().ok())
                .unwrap_or(f64::NAN)
        };
        rows.push(TimeseriesRow {
            policy: rec.get(0).unwrap_or_default().to_string(),
            second: num(1) as u64,
            completed: num(2) as u64,
            p50_ms: num(3),
            p99_ms: num(4),
            shares: (5..rec.len()).map(num).collect(),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_atomic_write_leaves_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("lblab-atomic-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("summary.json")).unwrap();
        // The rename onto a folder fails: the error names the file and the .tmp is gone.
        let err = write_atomic(&dir.join("summary.json"), b"{}").unwrap_err();
        assert!(err.to_string().contains("summary.json"), "{err}");
        assert!(!dir.join(".summary.json.tmp").exists());
        std::fs::remove_dir_all(&dir).ok();
    }
}
