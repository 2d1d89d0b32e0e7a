//! Line charts of a quantity against a swept axis, one line per policy, each point with its
//! confidence interval drawn as a shaded band (the charts of a sweep, [`crate::write_sweep_charts`]).

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::SIZE;
use crate::render::plot::Styled as _;
use crate::render::{
    draw_legend, draw_line, fmt_num, frame, line_mark, over_white, policy_style, text, titled,
    twin_label, twins, with_legend, write_chart, Chart, DrawResult, Entry, Frame, LogAxis, Mark,
    PolicyStyle, Ticked, MUTED, TWIN_DASH,
};
use crate::ReportError;

/// One point of a line: the value and its interval (`lo == hi == y` when there is none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinePoint {
    /// Position on the swept axis.
    pub x: f64,
    /// The value (a median across seeds).
    pub y: f64,
    /// Lower end of its interval.
    pub lo: f64,
    /// Upper end of its interval.
    pub hi: f64,
}

/// One line of a [`LineChart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Legend label: the policy label, which also gives the line its colour and dash (the same
    /// in every chart).
    pub label: String,
    /// A reference line (a bound, a formula): drawn dashed in grey, without markers or band.
    pub reference: bool,
    /// Points in x order; points that cannot be drawn (not finite, or ≤ 0 on a log axis) are
    /// left out.
    pub points: Vec<LinePoint>,
}

/// A chart of lines against a swept axis.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// Name of the swept axis.
    pub x_label: String,
    /// Name of the quantity.
    pub y_label: String,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// The lines.
    pub lines: Vec<Line>,
    /// A note under the legend (what the bands are, what is left out).
    pub note: String,
}

/// Writes `chart` to `<stem>.png` and `<stem>.svg` and returns both paths.
///
/// A line whose points are exactly an earlier line's (outlier detection that never ejects, say)
/// would hide it: it is drawn dashed over it, and its legend entry says `(= other)`.
pub fn write_line_chart(stem: &Path, chart: &LineChart) -> Result<Vec<PathBuf>, ReportError> {
    write_chart(stem, &Drawn { chart })
}

/// Where the plot sits (the compare chart's too).
pub(crate) const FRAME: Frame = Frame {
    top: 10,
    right: 20,
    x_labels: 46,
    y_labels: 72,
};

struct Drawn<'a> {
    chart: &'a LineChart,
}

impl Drawn<'_> {
    /// Each line's style and legend label: by its label, dashed with `(= other)` over an
    /// identical earlier line.
    fn styles(&self) -> Vec<(PolicyStyle, String)> {
        let lines = &self.chart.lines;
        let t = twins(lines, |a, b| {
            !a.reference && !b.reference && !a.points.is_empty() && a.points == b.points
        });
        lines
            .iter()
            .zip(t)
            .map(|(l, twin)| {
                let mut style = policy_style(&l.label);
                match twin {
                    Some(j) => {
                        style.dash = Some(TWIN_DASH);
                        (style, twin_label(&l.label, &lines[j].label))
                    }
                    None => (style, l.label.clone()),
                }
            })
            .collect()
    }
}

/// An axis over `values`: logarithmic (1-2-5 ticks) or linear with "nice" steps.
fn axis(values: impl Iterator<Item = f64>, log: bool) -> Ticked {
    let (min, max) = values
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if log {
        return Ticked::log(&LogAxis::new(min, max));
    }
    let (min, max) = if min.is_finite() && max.is_finite() {
        (min, max)
    } else {
        (0.0, 1.0)
    };
    let (min, max) = if max - min < 1e-12 {
        (
            min - 0.5 * min.abs().max(1.0),
            max + 0.5 * max.abs().max(1.0),
        )
    } else {
        (min, max)
    };
    let raw = (max - min) / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let lo = (min / step).floor() * step;
    let hi = (max / step).ceil() * step;
    let mut bold = Vec::new();
    let mut light = Vec::new();
    let mut k = 0;
    loop {
        let v = lo + step * k as f64;
        if v > hi + step * 1e-9 {
            break;
        }
        bold.push(v);
        light.push(v + step / 2.0);
        k += 1;
    }
    light.retain(|v| *v < hi);
    Ticked::linear(lo..hi, bold, light)
}

impl Chart for Drawn<'_> {
    fn size(&self) -> (u32, u32) {
        SIZE
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let c = self.chart;
        let body = titled(root, &c.title)?;
        let styles = self.styles();
        let entries: Vec<Entry> = c
            .lines
            .iter()
            .zip(&styles)
            .map(|(l, (style, label))| {
                if l.reference {
                    Entry::new(&l.label, MUTED, Mark::Dashed((8, 5)))
                } else {
                    Entry::new(label, style.colour, line_mark(style.dash))
                }
            })
            .collect();
        let (plot, legend) = with_legend(&body, None, &entries, (180, 300))?;
        let drawable = |p: &LinePoint, v: f64| {
            p.x.is_finite() && v.is_finite() && (!c.log_y || v > 0.0) && (!c.log_x || p.x > 0.0)
        };
        let xs = c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.x));
        let ys = c.lines.iter().flat_map(|l| {
            l.points.iter().flat_map(|p| {
                [p.y, p.lo, p.hi]
                    .into_iter()
                    .filter(move |v| drawable(p, *v))
            })
        });
        let x_axis = axis(xs, c.log_x);
        let y_axis = axis(ys, c.log_y);
        let mut chart = frame(&plot, FRAME).build_cartesian_2d(x_axis, y_axis)?;
        let scale = |log: bool| if log { " (log scale)" } else { "" };
        chart
            .configure_mesh()
            .x_desc(format!("{}{}", c.x_label, scale(c.log_x)))
            .y_desc(format!("{}{}", c.y_label, scale(c.log_y)))
            .x_label_formatter(&|v| fmt_num(*v))
            .y_label_formatter(&|v| fmt_num(*v))
            .styled(13, 14)
            .draw()?;
        // Bands first, so no band covers another policy's line.
        for (l, (style, _)) in c.lines.iter().zip(&styles).filter(|(l, _)| !l.reference) {
            let pts: Vec<&LinePoint> = l
                .points
                .iter()
                .filter(|p| drawable(p, p.lo) && drawable(p, p.hi))
                .collect();
            if pts.len() >= 2 && pts.iter().any(|p| p.hi > p.lo) {
                let mut poly: Vec<(f64, f64)> = pts.iter().map(|p| (p.x, p.hi)).collect();
                poly.extend(pts.iter().rev().map(|p| (p.x, p.lo)));
                chart.draw_series(std::iter::once(Polygon::new(
                    poly,
                    over_white(style.colour, 0.16).filled(),
                )))?;
            } else {
                for p in pts.iter().filter(|p| p.hi > p.lo) {
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(p.x, p.lo), (p.x, p.hi)],
                        over_white(style.colour, 0.5).stroke_width(2),
                    )))?;
                }
            }
        }
        for (l, (style, _)) in c.lines.iter().zip(&styles) {
            let pts: Vec<(f64, f64)> = l
                .points
                .iter()
                .filter(|p| drawable(p, p.y))
                .map(|p| (p.x, p.y))
                .collect();
            if l.reference {
                chart.draw_series(DashedLineSeries::new(
                    pts.iter().copied(),
                    8,
                    5,
                    MUTED.stroke_width(2),
                ))?;
                continue;
            }
            draw_line(&mut chart, &pts, style.colour, style.dash, 2)?;
            chart.draw_series(
                pts.iter()
                    .map(|&p| Circle::new(p, 3, style.colour.filled())),
            )?;
        }
        draw_legend(&legend, 22, None, &entries)?;
        if !c.note.is_empty() {
            let style = text(12, MUTED);
            let top = 22 + 24 * entries.len() as i32 + 12;
            let (w, _) = legend.dim_in_pixel();
            // Wrap the note to the legend's width.
            let mut lines: Vec<String> = Vec::new();
            let mut cur = String::new();
            for word in c.note.split_whitespace() {
                let trial = if cur.is_empty() {
                    word.to_string()
                } else {
                    format!("{cur} {word}")
                };
                if legend.estimate_text_size(&trial, &style)?.0 + 20 > w && !cur.is_empty() {
                    lines.push(std::mem::replace(&mut cur, word.to_string()));
                } else {
                    cur = trial;
                }
            }
            if !cur.is_empty() {
                lines.push(cur);
            }
            for (i, line) in lines.iter().enumerate() {
                legend.draw(&Text::new(
                    line.clone(),
                    (10, top + 16 * i as i32),
                    style.clone(),
                ))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_axis_has_nice_ticks_around_the_data() {
        let a = axis([0.3, 9.2].into_iter(), false);
        let r = plotters::coord::ranged1d::Ranged::range(&a);
        assert!(
            r.start <= 0.3 && r.end >= 9.2 && r.end <= 10.0 + 1e-9,
            "{r:?}"
        );
        let flat = axis([5.0, 5.0].into_iter(), false);
        let r = plotters::coord::ranged1d::Ranged::range(&flat);
        assert!(r.start < 5.0 && r.end > 5.0);
    }
}
