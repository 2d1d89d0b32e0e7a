//! One file per chart kind. Each holds the chart's data as it is drawn, built from its input,
//! and its [`Chart`](crate::render::Chart) implementation (size and drawing, the same code for
//! PNG and SVG); the public `write_*` function of a kind that callers draw directly lives with
//! it.
//!
//! - A run's charts ([`crate::write_run_charts`]): [`spectrum`], [`p99_over_time`] and
//!   [`traffic_share`]; the per-second ones share the time axis, its warm-up and fault-window
//!   bands and their legend entries in [`time`], and every policy's line is a [`series::Series`].
//! - [`compare`] (real vs simulated bars), [`heatmap`], [`line`] (lines against a swept axis,
//!   with bands) and [`interval`] (a forest plot).
//!
//! To add a chart kind: a file here with a struct that implements `Chart`, drawn with the
//! helpers of [`crate::render`] (`titled`, `with_legend`, `frame`, the `Styled` mesh,
//! `draw_legend`); if the crate names its file, a variant of [`ChartName`](crate::ChartName);
//! and, if a results folder holds its data, a line in `redraw.rs`.

pub(crate) mod compare;
pub(crate) mod heatmap;
pub(crate) mod interval;
pub(crate) mod line;
pub(crate) mod p99_over_time;
pub(crate) mod run_data;
pub(crate) mod series;
pub(crate) mod spectrum;
pub(crate) mod time;
pub(crate) mod traffic_share;

use crate::render::Frame;

/// Width and height of the single-plot charts.
pub(crate) const SIZE: (u32, u32) = (1000, 600);

/// The frame of a run's single-plot charts.
pub(crate) const FRAME: Frame = Frame {
    top: 10,
    right: 25,
    x_labels: 46,
    y_labels: 72,
};

/// The narrowest and widest legend of a run's charts, pixels.
pub(crate) const LEGEND: (u32, u32) = (150, 330);
