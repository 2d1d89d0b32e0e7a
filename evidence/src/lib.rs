//! The evidence documents, generated from lblab's committed result files.
//!
//! [`Evidence::load`] reads what the runs wrote under `results/` (summaries, per-seed intervals,
//! sim-vs-real comparisons, the harness's own measurements, sweeps, benchmarks); [`documents`]
//! turns it into Markdown:
//!
//! - `results/README.md`: the evidence a gRFC reviewer reads first (summary, findings, the
//!   proposal's three questions, cost, sim-vs-real agreement, limitations, how to reproduce);
//! - `results/<scenario>/README.md`: one page per scenario with its tables and charts;
//! - `results/sweeps/README.md`: what each sweep over the scenario space shows;
//! - `results/gRFC-draft.md`: a draft proposal in the shape of a gRPC gRFC.
//!
//! No number in them is typed by hand: each is read from a result file (or, for the policy's
//! defaults and validation, from the policy crate itself), so regenerating from the same files
//! gives the same bytes (a test checks the committed documents against a fresh generation), and a
//! conclusion whose numbers change with a new run changes its wording with them.

#![warn(missing_docs)]

mod answers;
mod fmt;
mod grfc;
mod headline;
mod links;
mod load;
mod readme;
mod scenario_page;
mod sweeps_page;
mod text;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use lblab_record::{layout, Layout};

pub use load::{
    Anomaly, CompareRow, Compared, Evidence, FailureRow, Harness, Intervals, PickBench, RepeatRow,
    ScenarioResults, Sweep,
};

/// Why the evidence could not be read or written. Every variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvidenceError {
    /// The file could not be read or written.
    #[error("{}: {source}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not what the run writes there.
    #[error("{}: {}", file.display(), lblab_message::text::error_chain(source.as_ref()))]
    Parse {
        /// The file.
        file: PathBuf,
        /// What is wrong: the parser's error, or what the documents needed and did not find.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A results file that cannot be read or written (it names itself).
    #[error(transparent)]
    File(#[from] lblab_record::FileError),
    /// A chart could not be drawn.
    #[error(transparent)]
    Chart(#[from] lblab_report::ReportError),
    /// Stopped (Ctrl-C) after `charts` charts, before the documents were written.
    #[error(
        "interrupted after {charts} charts; the documents were not written (the committed ones \
         are as they were)"
    )]
    Interrupted {
        /// Charts written before the stop.
        charts: usize,
    },
}

impl EvidenceError {
    fn io(file: &Path, source: std::io::Error) -> Self {
        EvidenceError::Io {
            file: file.to_path_buf(),
            source,
        }
    }
    fn parse(file: &Path, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        EvidenceError::Parse {
            file: file.to_path_buf(),
            source: source.into(),
        }
    }
}

/// One generated document: its path relative to the results folder, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Path relative to the results folder, e.g. `README.md` or `one-slow/README.md`.
    pub path: String,
    /// Markdown.
    pub text: String,
}

/// Every document, generated from `evidence`. Pure: the same evidence gives the same text.
pub fn documents(evidence: &Evidence) -> Vec<Document> {
    let mut out = vec![
        Document {
            path: "README.md".into(),
            text: readme::render(evidence),
        },
        Document {
            path: "gRFC-draft.md".into(),
            text: grfc::render(evidence),
        },
    ];
    if !evidence.sweeps.is_empty() {
        out.push(Document {
            path: links::sweeps_page(),
            text: sweeps_page::render(evidence),
        });
    }
    for s in &evidence.scenarios {
        if s.sim.is_some() || s.compare.is_some() {
            out.push(Document {
                path: format!("{}/README.md", s.name),
                text: scenario_page::render(evidence, s),
            });
        }
    }
    out
}

/// Draws the charts the documents embed: the headline charts, which no run draws, and every
/// committed run's, comparison's and sweep's charts again from their files (so a change to how
/// charts are drawn reaches results that are not rerun). Returns the files written.
pub fn write_charts(
    evidence: &Evidence,
    results: &Path,
    stop: &AtomicBool,
) -> Result<Vec<PathBuf>, EvidenceError> {
    let mut out = headline::write(evidence, results)?;
    for s in &evidence.scenarios {
        if stop.load(Ordering::Relaxed) {
            return Err(EvidenceError::Interrupted { charts: out.len() });
        }
        let dir = Layout::new(results.join(&s.name));
        let compare = dir.compare();
        let mut runs = vec![dir.sim(), dir.real(), compare.sim(), compare.real()];
        if let Ok(entries) = std::fs::read_dir(dir.real_repeat()) {
            let mut repeats: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            repeats.sort();
            runs.extend(repeats);
        }
        for run in runs
            .iter()
            .filter(|r| r.join(layout::TIMESERIES_CSV).is_file())
        {
            out.extend(lblab_report::redraw_run(run)?);
        }
        if compare.compare_csv().is_file() {
            out.extend(lblab_report::redraw_compare(compare.root())?);
        }
        let grid = dir.sweep();
        if grid.join(layout::SWEEP_CSV).is_file() && grid.join(layout::SUMMARY_JSON).is_file() {
            out.extend(lblab_report::redraw_grid(&grid)?);
        }
    }
    for name in evidence.sweeps.keys() {
        let dir = results.join(links::SWEEPS).join(name);
        if dir.join(layout::SWEEP_JSON).is_file() {
            out.extend(lblab_report::redraw_sweep(&dir)?);
        }
    }
    Ok(out)
}

/// Writes `docs` under `results` (atomically, each file complete or untouched).
pub fn write_documents(docs: &[Document], results: &Path) -> Result<(), EvidenceError> {
    for d in docs {
        let path = results.join(&d.path);
        lblab_record::write_atomic(&path, d.text.as_bytes())?;
    }
    Ok(())
}
