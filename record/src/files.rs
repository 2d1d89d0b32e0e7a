//! The files of a results folder: writing them (atomically) and reading them back.

use super::layout::{FAILURES_CSV, SUMMARY_CSV, SUMMARY_JSON, TIMESERIES_CSV};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::fixed;
use super::io::read_result_file;
use super::recorder::PolicyResult;
use super::schema::{RunSummary, TimeseriesRow};
use crate::FileError;

/// Writes `contents` to `path` atomically: a temporary file in the same folder, then a rename, so
/// an interrupted run never leaves a half-written file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), FileError> {
    let io = |source| FileError::Io {
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

/// Writes `summary.csv`, `summary.json`, `timeseries.csv`, `failures.csv` and one `.hlog` and
/// one `.hgrm` per policy into `dir`.
pub fn write_run(dir: &Path, run: &RunSummary, results: &[PolicyResult]) -> Result<(), FileError> {
    let ser = |file: &str, e: String| FileError::Io {
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

    // Both files have a column per backend or a backend's name in a field, so they are written
    // record by record (the csv crate quotes a label or name with a comma in it).
    let mut ts = csv::Writer::from_writer(Vec::new());
    let record = |w: &mut csv::Writer<Vec<u8>>, fields: Vec<String>, file: &str| {
        w.write_record(&fields)
            .map_err(|e| ser(file, e.to_string()))
    };
    let mut header: Vec<String> = ["policy", "second", "completed", "p50_ms", "p99_ms"]
        .map(String::from)
        .to_vec();
    header.extend(run.backends.iter().map(|b| format!("share_{b}")));
    record(&mut ts, header, TIMESERIES_CSV)?;
    let ms = |v: f64| {
        if v.is_nan() {
            String::new()
        } else {
            format!("{:.*}", fixed::MS_DECIMALS, v)
        }
    };
    for row in results.iter().flat_map(|r| &r.timeseries) {
        let mut fields = vec![
            row.policy.clone(),
            row.second.to_string(),
            row.completed.to_string(),
            ms(row.p50_ms),
            ms(row.p99_ms),
        ];
        fields.extend(
            row.shares
                .iter()
                .map(|s| format!("{:.*}", fixed::SHARE_DECIMALS, s)),
        );
        record(&mut ts, fields, TIMESERIES_CSV)?;
    }
    let ts = ts
        .into_inner()
        .map_err(|e| ser(TIMESERIES_CSV, e.to_string()))?;
    write_atomic(&dir.join(TIMESERIES_CSV), &ts)?;
    let mut fails = csv::Writer::from_writer(Vec::new());
    let header = [
        "policy",
        "second",
        "backend",
        "errors",
        "deadline_exceeded",
        "error_mean_ms",
    ];
    record(&mut fails, header.map(String::from).to_vec(), FAILURES_CSV)?;
    for f in results.iter().flat_map(|r| &r.failures) {
        let name = run.backends.get(f.backend).map_or("?", String::as_str);
        let fields = vec![
            f.policy.clone(),
            f.second.to_string(),
            name.to_string(),
            f.errors.to_string(),
            f.deadline_exceeded.to_string(),
            format!("{:.3}", f.error_mean_ms),
        ];
        record(&mut fails, fields, FAILURES_CSV)?;
    }
    let fails = fails
        .into_inner()
        .map_err(|e| ser(FAILURES_CSV, e.to_string()))?;
    write_atomic(&dir.join(FAILURES_CSV), &fails)?;
    for r in results {
        let stem = file_stem(&r.summary.policy);
        write_atomic(&dir.join(format!("{stem}.hlog")), r.hlog.as_bytes())?;
        write_atomic(
            &dir.join(format!("{stem}.hgrm")),
            super::histogram::percentile_distribution(&r.histogram).as_bytes(),
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

/// Reads `timeseries.csv` back (for charts).
pub fn read_timeseries(path: &Path) -> Result<Vec<TimeseriesRow>, FileError> {
    let io = |e: String| FileError::Parse {
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
    fn labels_and_backend_names_with_commas_keep_their_columns() {
        use crate::{Mode, Recorder, RequestResult, RunHead, RunSummary};
        let head = RunHead {
            scenario: "commas".into(),
            seed: 1,
            backends: Vec::new(),
            fault_windows: Vec::new(),
            warmup_s: 0.0,
            measured_s: 3.0,
            policies: Vec::new(),
            experiment: None,
        };
        // Scenario labels may not hold commas, but a sweep's point labels do.
        let label = "peak_ewma[decay=1s,choices=2]";
        let mut r = Recorder::new(label, 2, 0);
        for i in 0..300u64 {
            let t = i * 10_000_000;
            r.on_send(t, (i % 2) as usize, false);
            r.on_result(t, t + 1_000_000, RequestResult::Ok);
            if i % 50 == 0 {
                r.on_backend_result(1, t, t + 1_000_000, RequestResult::Error);
            }
        }
        let results = vec![r.finish()];
        let mut summary = RunSummary::of(head, Mode::Sim, &results, false, Vec::new());
        summary.backends = vec!["b,0".into(), "b,1".into()];
        let dir = std::env::temp_dir().join(format!("lblab-commas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_run(&dir, &summary, &results).expect("written");
        let rows = read_timeseries(&dir.join(TIMESERIES_CSV)).expect("read back");
        assert!(!rows.is_empty());
        assert!(
            rows.iter()
                .all(|r| r.policy == label && r.shares.len() == 2),
            "{rows:?}"
        );
        let fails = std::fs::read_to_string(dir.join(FAILURES_CSV)).unwrap();
        let mut reader = csv::Reader::from_reader(fails.as_bytes());
        let records: Vec<_> = reader.records().map(|r| r.expect("a record")).collect();
        assert!(!records.is_empty(), "{fails}");
        assert!(
            records
                .iter()
                .all(|r| r.len() == 6 && &r[0] == label && &r[2] == "b,1"),
            "{fails}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

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
