//! Charts from lblab's results: every chart is written twice, as a PNG and as an SVG with real
//! text, drawn with [`plotters`].
//!
//! - [`write_run_charts`]: the three charts of one run (latency percentile spectrum, p99 over time
//!   with fault windows, traffic share per backend), from a
//!   [`RunSummary`](lblab_record::RunSummary) and the
//!   [`PolicyResult`](lblab_record::PolicyResult)s that
//!   [`Recorder`](lblab_record::Recorder) produced.
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
//! - [`ChartName`]: the file names of the charts the crate names itself (a run's, a compare
//!   folder's, a sweep's, a grid's), in [`Format::Png`] and [`Format::Svg`]; the committed
//!   results and the documents that link to them depend on these names.
//!
//! A policy has one colour (and dash) in every chart, by its label; a line identical to an
//! earlier one is drawn dashed over it and its legend entry says `(= other)`.
//!
//! - [`evidence`]: the sim-vs-real agreement rule (the documents themselves are written by the
//!   `lblab-evidence` crate).
//!
//! Inside, the code is laid out by what it is about:
//! - `chart/`: one file per chart kind (`spectrum`, `p99_over_time`, `traffic_share`,
//!   `compare`, `heatmap`, `line`, `interval`), each its data as drawn and its drawing; the
//!   per-second charts of a run share `chart/time.rs` (the time axis, the warm-up and
//!   fault-window bands and their legend entries). To add a chart kind, add a file there
//!   (`chart/mod.rs` lists the steps) and, if the crate names its file, a [`ChartName`].
//! - `render/`: what every chart shares: writing PNG and SVG, text, colours, legends, axes, the
//!   plot's frame, the anti-aliased bitmap backend.
//! - `run.rs`, `sweep.rs`, `grid.rs`: the charts of a run, a sweep and a parameter grid, from
//!   their data; `redraw.rs`: the same from a results folder's files; `name.rs`: [`ChartName`].
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
//! use lblab_record::{FaultWindow, Recorder, RequestResult, RunSummary};
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
//!     mode: lblab_record::Mode::Sim,
//!     seed: 1,
//!     partial: false,
//!     backends: vec!["b0".into(), "b1".into()],
//!     fault_windows: vec![FaultWindow { backend: 1, start_s: 2.0, end_s: 3.0 }],
//!     warmup_s: 1.0,
//!     measured_s: 2.0,
//!     rows: vec![result.summary.clone()],
//!     notes: vec![],
//!     incidents: vec![],
//!     rates: vec![],
//!     configs: vec![],
//!     experiment: None,
//! };
//! let dir = std::env::temp_dir().join(format!("lblab-report-doc-{}", std::process::id()));
//! let written = lblab_report::write_run_charts(&dir, &summary, &[result])?;
//! assert_eq!(written.len(), 6); // spectrum, p99_over_time, traffic_share; .png and .svg each
//! let spectrum = lblab_report::ChartName::Spectrum;
//! assert_eq!(written[0], spectrum.path(&dir, lblab_report::Format::Png));
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), lblab_report::ReportError>(())
//! ```

#![warn(missing_docs)]

mod chart;
pub mod evidence;
mod grid;
mod html;
mod name;
mod redraw;
mod render;
mod run;
mod sweep;

use std::path::PathBuf;

pub use chart::compare::{write_compare_chart, ComparePoint};
pub use chart::heatmap::write_heatmap;
pub use chart::interval::{write_interval_chart, IntervalChart, IntervalPoint, IntervalSeries};
pub use chart::line::{write_line_chart, Line, LineChart, LinePoint};
pub use grid::{write_grid_heatmaps, GridCell};
pub use html::{html_page, HtmlTable};
pub use name::{ChartName, Format};
pub use redraw::{
    redraw, redraw_compare, redraw_compare_from, redraw_grid, redraw_run, redraw_sweep,
};
pub use run::{write_run_charts, write_run_charts_until, write_run_charts_within, RunCharts};
pub use sweep::{write_sweep_charts, Sweep, SweepPoint};

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
    /// Drawing stopped because a stop was asked for (Ctrl-C) between two charts; the charts
    /// drawn before it are written.
    #[error("{}: charts not drawn: interrupted after {drawn} of {total}", dir.display())]
    Interrupted {
        /// The folder the charts were drawn into.
        dir: PathBuf,
        /// Charts (PNG and SVG each) drawn before the stop.
        drawn: usize,
        /// Charts there were to draw.
        total: usize,
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
