//! The frame of a plot: its margins and label areas, the mesh's common style, lines, and the
//! note an empty plot shows.

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::colour::{grid_bold, grid_light, Dash};
use super::text::{text, INK, MUTED};
use super::DrawResult;

/// Where a plot sits in its area, pixels: the top and right margins and the sizes of the label
/// areas under it (`x_labels`) and left of it (`y_labels`). The left and bottom margins are
/// the same on every plot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame {
    pub top: u32,
    pub right: u32,
    pub x_labels: u32,
    pub y_labels: u32,
}

/// A chart builder on `area` with the margins and label areas of `f`.
pub(crate) fn frame<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    f: Frame,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin_top(f.top)
        .margin_left(10)
        .margin_right(f.right)
        .margin_bottom(5)
        .x_label_area_size(f.x_labels)
        .y_label_area_size(f.y_labels);
    builder
}

/// The style every chart's mesh shares.
pub(crate) trait Styled {
    /// Tick labels of `labels` pixels and axis descriptions of `descs` pixels in ink, the grid
    /// in light greys, the axes in grey.
    fn styled(&mut self, labels: u32, descs: u32) -> &mut Self;
}

impl<X: Ranged, Y: Ranged, DB: DrawingBackend> Styled for MeshStyle<'_, '_, X, Y, DB> {
    fn styled(&mut self, labels: u32, descs: u32) -> &mut Self {
        self.label_style(text(labels, INK))
            .axis_desc_style(text(descs, INK))
            .bold_line_style(grid_bold())
            .light_line_style(grid_light())
            .axis_style(MUTED.stroke_width(1))
    }
}

/// `message` in grey, centred on `at` of the plot: what a plot without data says.
pub(crate) fn note<DB, X, Y>(
    chart: &ChartContext<'_, DB, Cartesian2d<X, Y>>,
    at: (f64, f64),
    message: &str,
    size: u32,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart.plotting_area().draw(
        &(EmptyElement::at(at)
            + Text::new(
                message.to_string(),
                (0, 0),
                text(size, MUTED).pos(Pos::new(HPos::Center, VPos::Center)),
            )),
    )
}

/// Draws `points` as one line in `colour`, solid or with `dash`.
pub(crate) fn draw_line<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    points: &[(f64, f64)],
    colour: RGBColor,
    dash: Option<Dash>,
    width: u32,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let style = colour.stroke_width(width);
    match dash {
        Some((d, g)) => {
            chart.draw_series(DashedLineSeries::new(points.iter().copied(), d, g, style))?;
        }
        None => {
            chart.draw_series(LineSeries::new(points.iter().copied(), style))?;
        }
    }
    Ok(())
}
