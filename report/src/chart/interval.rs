//! A forest plot: per row (a scenario, say), each policy's median with its confidence interval,
//! on a log axis of a ratio, with a reference line.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::render::plot::Styled as _;
use crate::render::{
    draw_legend, draw_line, fmt_num, frame, line_mark, note, policy_style, text, titled,
    with_legend, write_chart, Chart, DrawResult, Entry, Frame, LogAxis, Mark, Ticked, INK, MUTED,
};
use crate::ReportError;

/// One policy's values on an interval chart: one entry per row, `None` where missing.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalSeries {
    /// Policy label: the legend entry, and the colour (the same as in every other chart).
    pub label: String,
    /// One entry per row of the chart, in row order.
    pub points: Vec<Option<IntervalPoint>>,
}

/// A median with its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervalPoint {
    /// The median.
    pub median: f64,
    /// Lower end of the interval.
    pub lo: f64,
    /// Upper end of the interval.
    pub hi: f64,
}

/// Rows (e.g. scenarios) down the y axis, a log x axis of a ratio, a reference line at `reference`.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalChart {
    /// Title above the plot.
    pub title: String,
    /// Name of the x axis (the ratio).
    pub x_label: String,
    /// Row labels, top to bottom.
    pub rows: Vec<String>,
    /// The series, each with one entry per row.
    pub series: Vec<IntervalSeries>,
    /// Where to draw the dashed reference line (1 for a ratio), if anywhere.
    pub reference: Option<f64>,
}

/// Writes `<stem>.png` and `<stem>.svg`; returns the paths.
///
/// Each row holds one dot per series at its median with a whisker from `lo` to `hi`; within a
/// row the series are offset vertically so that they never overlap, in the order given. Values
/// that are not finite and positive (a log axis) are left out, as are missing points. Rows are
/// shaded alternately. Fails with [`ReportError::InvalidInput`] when a series does not have one
/// entry per row.
pub fn write_interval_chart(
    stem: &Path,
    chart: &IntervalChart,
) -> Result<Vec<PathBuf>, ReportError> {
    if let Some(s) = chart
        .series
        .iter()
        .find(|s| s.points.len() != chart.rows.len())
    {
        return Err(ReportError::InvalidInput {
            file: stem.to_path_buf(),
            message: format!(
                "series {:?} has {} points for {} rows",
                s.label,
                s.points.len(),
                chart.rows.len()
            ),
        });
    }
    let ok = |v: f64| v.is_finite() && v > 0.0;
    let values = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().flatten())
        .flat_map(|p| [p.median, p.lo, p.hi])
        .chain(chart.reference)
        .filter(|v| ok(*v));
    let (min, max) = values.fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    write_chart(
        stem,
        &Forest {
            chart,
            axis: LogAxis::new(min, max),
        },
    )
}

struct Forest<'a> {
    chart: &'a IntervalChart,
    axis: LogAxis,
}

/// Height of one row, pixels: room for every series' whisker.
fn row_height(series: usize) -> u32 {
    (10 + 9 * series as u32).max(26)
}

const ROW_SHADE: RGBColor = RGBColor(246, 246, 246);

impl Chart for Forest<'_> {
    fn size(&self) -> (u32, u32) {
        let rows = self.chart.rows.len().max(1) as u32;
        let h = 44 + 20 + rows * row_height(self.chart.series.len()) + 56;
        (1000, h.clamp(360, 2400))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let c = self.chart;
        let body = titled(root, &c.title)?;
        let mut entries: Vec<Entry> = c
            .series
            .iter()
            .map(|s| {
                let style = policy_style(&s.label);
                Entry::new(&s.label, style.colour, line_mark(style.dash))
            })
            .collect();
        if let Some(r) = c.reference {
            entries.push(Entry::new(
                format!("reference ({})", fmt_num(r)),
                MUTED,
                Mark::Dashed((6, 4)),
            ));
        }
        let (plot, legend) = with_legend(&body, Some("policy"), &entries, (150, 300))?;

        let n = c.rows.len().max(1);
        let label_style = text(13, INK);
        let mut widest = 0;
        for r in &c.rows {
            widest = widest.max(plot.estimate_text_size(r, &label_style)?.0);
        }
        let y_area = (widest + 20).clamp(40, 420);
        let (lo, hi) = (self.axis.range.start, self.axis.range.end);
        let f = Frame {
            top: 20,
            right: 25,
            x_labels: 50,
            y_labels: y_area,
        };
        let mut chart = frame(&plot, f).build_cartesian_2d(
            Ticked::log(&self.axis),
            Ticked::linear(
                0.0..n as f64,
                (0..n).map(|i| i as f64 + 0.5).collect(),
                Vec::new(),
            ),
        )?;
        // Alternate rows shaded, under the grid.
        chart.draw_series((0..c.rows.len()).filter(|r| r % 2 == 1).map(|r| {
            let y = (n - 1 - r) as f64;
            Rectangle::new([(lo, y), (hi, y + 1.0)], ROW_SHADE.filled())
        }))?;
        let rows = &c.rows;
        let y_fmt = |v: &f64| {
            let i = (v.floor().max(0.0) as usize).min(n - 1);
            rows.get(n - 1 - i).cloned().unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc(format!("{} (log scale)", c.x_label))
            .x_label_formatter(&|v| fmt_num(*v))
            .y_label_formatter(&y_fmt)
            .styled(13, 14)
            .draw()?;
        if let Some(r) = c.reference.filter(|r| r.is_finite() && *r > 0.0) {
            draw_line(
                &mut chart,
                &[(r, 0.0), (r, n as f64)],
                MUTED,
                Some((6, 4)),
                2,
            )?;
            chart.plotting_area().draw(
                &(EmptyElement::at((r, n as f64))
                    + Text::new(
                        fmt_num(r),
                        (0, -4),
                        text(12, MUTED).pos(Pos::new(HPos::Center, VPos::Bottom)),
                    )),
            )?;
        }
        // Series offsets within a row: spread over at most 80 % of it, at most 0.22 apart.
        let m = c.series.len();
        let step = if m > 1 {
            (0.8 / m as f64).min(0.22)
        } else {
            0.0
        };
        let ok = |v: f64| v.is_finite() && v > 0.0;
        for (k, s) in c.series.iter().enumerate() {
            let style = policy_style(&s.label);
            let offset = (k as f64 - (m as f64 - 1.0) / 2.0) * step;
            for (r, p) in s.points.iter().enumerate() {
                let Some(p) = p else { continue };
                // Row 0 at the top; series top to bottom in the order given.
                let y = (n - 1 - r) as f64 + 0.5 - offset;
                if ok(p.lo) && ok(p.hi) && p.hi > p.lo {
                    let (a, b) = (p.lo.max(lo), p.hi.min(hi));
                    draw_line(&mut chart, &[(a, y), (b, y)], style.colour, style.dash, 2)?;
                    let cap = step.min(0.2) * 0.35 + 0.04;
                    for x in [a, b] {
                        chart.draw_series(std::iter::once(PathElement::new(
                            vec![(x, y - cap), (x, y + cap)],
                            style.colour.stroke_width(1),
                        )))?;
                    }
                }
                if ok(p.median) {
                    chart.draw_series(std::iter::once(Circle::new(
                        (p.median, y),
                        4,
                        style.colour.filled(),
                    )))?;
                }
            }
        }
        if c.rows.is_empty() {
            note(&chart, ((lo * hi).sqrt(), 0.5), "no rows", 14)?;
        }
        draw_legend(&legend, 22, Some("policy"), &entries)?;
        let top = 22 + 24 * (entries.len() as i32 + 1) + 8;
        legend.draw(&Text::new(
            "dot: median; line: interval".to_string(),
            (10, top),
            text(12, MUTED),
        ))?;
        Ok(())
    }
}
