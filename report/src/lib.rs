//! Charts from lblab's results: every chart is written twice, as a PNG and as an SVG with real
//! text, drawn with [`plotters`].
//!
//! - [`write_run_charts`]: the three charts of one run (latency percentile spectrum, p99 over time
//!   with fault windows, traffic share per backend), from a
//!   [`RunSummary`](lblab_model::results::RunSummary) and the
//!   [`PolicyResult`](lblab_model::results::PolicyResult)s that
//!   [`Recorder`](lblab_model::results::Recorder) produced.
//! - [`write_heatmap`]: a labelled grid of values (for parameter sweeps), and
//!   [`write_grid_heatmaps`]: the p99 heatmaps of a peak-EWMA parameter grid ([`GridCell`]).
//! - [`write_compare_chart`]: real vs simulated p50 and p99 per policy ([`ComparePoint`]), with
//!   the agreement band and optional p99 intervals.
//! - [`write_line_chart`]: a quantity against a swept axis, one line per policy with its
//!   confidence band ([`LineChart`]), and [`write_sweep_charts`]: every chart of a
//!   scenario-space sweep ([`Sweep`]).
//! - [`write_interval_chart`]: a forest plot, per row each policy's median and confidence
//!   interval on a log ratio axis ([`IntervalChart`]).
//! - [`redraw_run`], [`redraw_compare`], [`redraw_sweep`], [`redraw_grid`] (and [`redraw`],
//!   which picks by the files present): the charts of a committed results folder redrawn from
//!   its files alone, byte-identical to what the run drew from the same data.
//!
//! A policy has one colour (and dash) in every chart, by its label; a line identical to an
//! earlier one is drawn dashed over it and its legend entry says `(= other)`.
//!
//! - [`evidence`]: the sim-vs-real agreement rule (the documents themselves are written by the
//!   `lblab-evidence` crate).
//!
//! This crate draws and writes; apart from the `redraw_*` functions, which read a results
//! folder's files, callers pass the values in. It runs nothing. Output is deterministic: the
//! same input gives byte-identical files.
//!
//! Text is rendered with DejaVu Sans, embedded in the library (see `assets/DejaVuSans-LICENSE.txt`),
//! so PNGs render the same on a machine without any system font or fontconfig. SVGs name the
//! generic `sans-serif` family and keep their text as `<text>` elements.
//!
//! Files are written atomically (a temporary file, then a rename), so an interrupted run never
//! leaves half a chart.
//!
//! ```
//! use lblab_model::results::{FaultWindow, Recorder, RequestResult, RunSummary};
//!
//! let mut recorder = Recorder::new("round_robin", 2, 1_000_000_000);
//! for i in 0..4_000u64 {
//!     let sent = i * 1_000_000; // one request per ms for 4 s
//!     let backend = (i % 2) as usize;
//!     let slow = backend == 1 && (2_000_000_000..3_000_000_000).contains(&sent);
//!     recorder.on_send(sent, backend, slow);
//!     let latency = if slow { 20_000_000 } else { 2_000_000 + (i % 7) * 100_000 };
//!     recorder.on_result(sent, sent + latency, RequestResult::Ok);
//! }
//! let result = recorder.finish();
//! let summary = RunSummary {
//!     scenario: "doc".into(),
//!     mode: lblab_model::results::Mode::Sim,
//!     seed: 1,
//!     partial: false,
//!     backends: vec!["b0".into(), "b1".into()],
//!     fault_windows: vec![FaultWindow { backend: 1, start_s: 2.0, end_s: 3.0 }],
//!     warmup_s: 1.0,
//!     measured_s: 2.0,
//!     rows: vec![result.summary.clone()],
//!     notes: vec![],
//!     incidents: vec![],
//! };
//! let dir = std::env::temp_dir().join(format!("lblab-report-doc-{}", std::process::id()));
//! let written = lblab_report::write_run_charts(&dir, &summary, &[result])?;
//! assert_eq!(written.len(), 6); // spectrum, p99_over_time, traffic_share; .png and .svg each
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), lblab_report::ReportError>(())
//! ```

#![warn(missing_docs)]

mod compare;
pub mod evidence;
mod heatmap;
mod interval;
mod lines;
mod redraw;
mod render;
mod run;
mod supersample;

use std::path::PathBuf;

pub use compare::{write_compare_chart, ComparePoint};
pub use heatmap::{write_grid_heatmaps, write_heatmap, GridCell};
pub use interval::{write_interval_chart, IntervalChart, IntervalPoint, IntervalSeries};
pub use lines::{
    write_line_chart, write_sweep_charts, Line, LineChart, LinePoint, Sweep, SweepPoint,
};
pub use redraw::{
    redraw, redraw_compare, redraw_compare_from, redraw_grid, redraw_run, redraw_sweep,
};
pub use run::write_run_charts;

/// Why a chart could not be written. Every variant names the file concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The file could not be written (or its folder created).
    #[error("{}: {source}", file.display())]
    Io {
        /// The file being written.
        file: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// plotters failed to draw the chart, or the PNG could not be encoded.
    #[error("{}: drawing failed: {message}", file.display())]
    Draw {
        /// The file being drawn.
        file: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A results file to redraw from is missing, cannot be read, or does not parse.
    #[error("{}: cannot redraw from it: {message}", file.display())]
    Read {
        /// The file read.
        file: PathBuf,
        /// What is wrong (`missing`, or the parse error).
        message: String,
    },
    /// The input cannot be drawn (for example a heatmap whose rows and labels disagree).
    #[error("{}: invalid input: {message}", file.display())]
    InvalidInput {
        /// The file that was to be drawn.
        file: PathBuf,
        /// What is wrong with the input.
        message: String,
    },
}
