//! Line charts of a quantity against a swept axis, one line per policy, each point with its
//! confidence interval drawn as a shaded band (for `lblab sweep --vary`).

use std::path::{Path, PathBuf};

use lblab_model::stats::{Interval, PolicyIntervals};
use lblab_model::units::Dur;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::render::{
    draw_legend, draw_line, fmt_num, grid_bold, grid_light, legend_width, line_mark, over_white,
    policy_style, text, titled, twin_label, twins, write_chart, Chart, DrawResult, Entry, LogAxis,
    Mark, PolicyStyle, Ticked, INK, MUTED, TWIN_DASH,
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
        (1000, 600)
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
        let lw = legend_width(&body, None, &entries, 180, 300)?;
        let (plot, legend) = body.split_horizontally(body.dim_in_pixel().0 - lw);
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
        let mut chart = ChartBuilder::on(&plot)
            .margin_top(10)
            .margin_left(10)
            .margin_right(20)
            .margin_bottom(5)
            .x_label_area_size(46)
            .y_label_area_size(72)
            .build_cartesian_2d(x_axis, y_axis)?;
        let scale = |log: bool| if log { " (log scale)" } else { "" };
        chart
            .configure_mesh()
            .x_desc(format!("{}{}", c.x_label, scale(c.log_x)))
            .y_desc(format!("{}{}", c.y_label, scale(c.log_y)))
            .x_label_formatter(&|v| fmt_num(*v))
            .y_label_formatter(&|v| fmt_num(*v))
            .label_style(text(13, INK))
            .axis_desc_style(text(14, INK))
            .bold_line_style(grid_bold())
            .light_line_style(grid_light())
            .axis_style(MUTED.stroke_width(1))
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

// ---------------------------------------------------------------------------------------------
// The charts of a scenario-space sweep

/// One point of a scenario-space sweep (`lblab sweep --vary`), as `sweep.json` holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// The varied paths and their values at this point (`fleet.main.count` = `9`).
    pub overrides: Vec<(String, String)>,
    /// Backends at this point.
    pub backends: usize,
    /// Backends with a fault at some time.
    pub faulty_backends: usize,
    /// Offered rate, requests per second.
    pub rate: f64,
    /// `rate` over the fleet's capacity at full speed.
    pub utilization: f64,
    /// Per policy (in [`Sweep::policies`] order), the intervals across seeds.
    pub policies: Vec<PolicyIntervals>,
}

/// A scenario-space sweep, for [`write_sweep_charts`].
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// Scenario name (the titles start with it).
    pub scenario: String,
    /// Seeds per point.
    pub seeds: u64,
    /// The charts' x axis: a varied path, or `backends`, `faulty_share`, `rate`,
    /// `utilization`.
    pub x: String,
    /// Policy labels, in the order of each point's `policies`.
    pub policies: Vec<String>,
    /// The points, in sweep order.
    pub points: Vec<SweepPoint>,
}

/// The x value of a point: a varied path's value (numbers as they are, durations in ms) or a
/// derived column.
fn x_value(point: &SweepPoint, x: &str) -> f64 {
    match x {
        "backends" => point.backends as f64,
        "faulty_share" => 100.0 * point.faulty_backends as f64 / point.backends.max(1) as f64,
        "rate" => point.rate,
        "utilization" => point.utilization,
        _ => point
            .overrides
            .iter()
            .find(|(path, _)| path == x)
            .map_or(f64::NAN, |(_, value)| {
                value
                    .parse::<f64>()
                    .ok()
                    .or_else(|| value.parse::<Dur>().ok().map(|d| d.0 as f64 / 1e6))
                    .unwrap_or(f64::NAN)
            }),
    }
}

/// Writes the charts of a sweep into `dir`, one quantity each against `sweep.x`, one line per
/// policy with its interval band: `p99`, `p999`, with an oracle `p99_vs_oracle` and
/// `p999_vs_oracle`, with faulty backends `slow_share` (the share of requests sent to faulty
/// backends, with the `(faulty/n)²` floor of A48's draw), and `herd`. Returns the paths.
pub fn write_sweep_charts(dir: &Path, sweep: &Sweep) -> Result<Vec<PathBuf>, ReportError> {
    let (policies, points, x, seeds) = (&sweep.policies, &sweep.points, &sweep.x, sweep.seeds);
    let xs: Vec<f64> = points.iter().map(|p| x_value(p, x)).collect();
    let (lo, hi) = xs
        .iter()
        .filter(|v| v.is_finite() && **v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(*v), b.max(*v)));
    let log_x = lo.is_finite() && hi / lo >= 8.0;
    let band = if seeds > 1 {
        let cov = points
            .iter()
            .flat_map(|p| p.policies.iter())
            .filter_map(|p| p.get("p99_ms"))
            .map(|i| i.coverage)
            .fold(1.0f64, f64::min);
        format!(
            "Lines: median of {seeds} seeds; bands: {:.0} % confidence interval of the median.",
            100.0 * cov
        )
    } else {
        "One seed: no interval.".to_string()
    };
    let line_of = |label: &str, metric: &str, k: f64| {
        let idx = policies.iter().position(|p| p == label);
        Line {
            label: label.to_string(),
            reference: false,
            points: points
                .iter()
                .zip(&xs)
                .filter_map(|(p, &x)| {
                    let i: &Interval = idx.and_then(|k| p.policies.get(k))?.get(metric)?;
                    Some(LinePoint {
                        x,
                        y: i.median * k,
                        lo: i.lo * k,
                        hi: i.hi * k,
                    })
                })
                .collect(),
        }
    };
    let x_label = match x.as_str() {
        "backends" => "backends".to_string(),
        "faulty_share" => "backends with a fault (%)".to_string(),
        "rate" => "offered rate (req/s)".to_string(),
        "utilization" => "utilization of the fleet's capacity".to_string(),
        p => {
            let is_duration = points
                .first()
                .and_then(|pt| pt.overrides.iter().find(|(path, _)| path == p))
                .is_some_and(|(_, v)| v.parse::<f64>().is_err());
            if is_duration {
                format!("{p} (ms)")
            } else {
                p.to_string()
            }
        }
    };
    let mut written = Vec::new();
    let mut chart = |stem: &str, title: &str, y_label: &str, lines: Vec<Line>, note: String| {
        let c = LineChart {
            title: format!("{}: {title}", sweep.scenario),
            x_label: x_label.clone(),
            y_label: y_label.to_string(),
            log_x,
            log_y: true,
            lines,
            note,
        };
        written.extend(write_line_chart(&dir.join(stem), &c)?);
        Ok::<(), ReportError>(())
    };
    let all =
        |m: &str, k: f64| -> Vec<Line> { policies.iter().map(|p| line_of(p, m, k)).collect() };
    chart(
        "p99",
        "p99 latency",
        "p99 (ms)",
        all("p99_ms", 1.0),
        band.clone(),
    )?;
    chart(
        "p999",
        "p99.9 latency",
        "p99.9 (ms)",
        all("p999_ms", 1.0),
        band.clone(),
    )?;
    if policies.iter().any(|p| p == "oracle") {
        let rel = |m: &str| -> Vec<Line> {
            policies
                .iter()
                .filter(|p| *p != "oracle")
                .map(|p| line_of(p, m, 1.0))
                .collect()
        };
        let note = format!("{band} Ratios are paired by seed (1 = as good as the oracle).");
        chart(
            "p99_vs_oracle",
            "p99 relative to oracle",
            "p99 / oracle's p99",
            rel("p99_vs_oracle"),
            note.clone(),
        )?;
        chart(
            "p999_vs_oracle",
            "p99.9 relative to oracle",
            "p99.9 / oracle's p99.9",
            rel("p999_vs_oracle"),
            note,
        )?;
    }
    if points.iter().any(|p| p.faulty_backends > 0) {
        let mut lines = all("slow_share", 100.0);
        lines.push(Line {
            label: "(faulty/n)²: A48 draw's floor".to_string(),
            reference: true,
            points: points
                .iter()
                .zip(&xs)
                .map(|(p, &x)| {
                    let f = p.faulty_backends as f64 / p.backends.max(1) as f64;
                    let y = 100.0 * f * f;
                    LinePoint { x, y, lo: y, hi: y }
                })
                .collect(),
        });
        let note = format!("{band} Dashed: the share two independent uniform draws both land on faulty backends, whatever their cost. Zero shares are not drawn (log scale).");
        chart(
            "slow_share",
            "share of requests sent to faulty backends",
            "share to faulty backends (%)",
            lines,
            note,
        )?;
    }
    chart(
        "herd",
        "herd: busiest healthy backend's share over its fair share",
        "busiest healthy share / fair share",
        all("herd", 1.0),
        format!("{band} 1 = an even spread over the healthy backends."),
    )?;
    Ok(written)
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
