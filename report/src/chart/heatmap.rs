//! A heatmap: a labelled grid of values with a colour scale.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::render::{
    ellipsize, fmt_num, text, titled, write_chart, Chart, DrawResult, LogAxis, Ticked, INK, MUTED,
};
use crate::ReportError;

/// Writes a heatmap of `values[y][x]` to `<stem>.png` and `<stem>.svg` and returns both paths.
///
/// Column `x` is labelled `x_labels[x]` along the bottom, row `y` is labelled `y_labels[y]` at the
/// left, with row 0 at the top (as in a table). Every cell shows its value; NaN (or any
/// non-finite value) is a missing cell, drawn light grey with "n/a". Colours follow the viridis
/// scale, explained by a colour bar on the right titled `value_name` with the scale stated
/// under it. When every value is positive the scale is logarithmic from the smallest (best)
/// value to the largest or twice the smallest, whichever is more, so that cells within a few per
/// cent of each other look alike; otherwise it is linear from the smallest to the largest.
/// Row labels get the room they need (up to 45 % of the width; longer ones are shortened).
///
/// Fails with [`ReportError::InvalidInput`] when the grid is empty or `values` does not have
/// `y_labels.len()` rows of `x_labels.len()` values.
#[allow(clippy::too_many_arguments)] // the signature is the crate's public contract
pub fn write_heatmap(
    stem: &Path,
    title: &str,
    x_name: &str,
    x_labels: &[String],
    y_name: &str,
    y_labels: &[String],
    values: &[Vec<f64>],
    value_name: &str,
) -> Result<Vec<PathBuf>, ReportError> {
    let invalid = |message: String| ReportError::InvalidInput {
        file: stem.to_path_buf(),
        message,
    };
    if x_labels.is_empty() || y_labels.is_empty() {
        return Err(invalid(
            "a heatmap needs at least one x label and one y label".into(),
        ));
    }
    if values.len() != y_labels.len() {
        return Err(invalid(format!(
            "{} rows of values for {} y labels",
            values.len(),
            y_labels.len()
        )));
    }
    if let Some((y, row)) = values
        .iter()
        .enumerate()
        .find(|(_, row)| row.len() != x_labels.len())
    {
        return Err(invalid(format!(
            "row {y} has {} values for {} x labels",
            row.len(),
            x_labels.len()
        )));
    }
    let finite = values.iter().flatten().copied().filter(|v| v.is_finite());
    let (min, max) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let heatmap = Heatmap {
        title,
        x_name,
        x_labels,
        y_name,
        y_labels,
        values,
        value_name,
        scale: colour_scale(min, max),
    };
    write_chart(stem, &heatmap)
}

struct Heatmap<'a> {
    title: &'a str,
    x_name: &'a str,
    x_labels: &'a [String],
    y_name: &'a str,
    y_labels: &'a [String],
    values: &'a [Vec<f64>],
    value_name: &'a str,
    /// The colour scale; None when every cell is missing.
    scale: Option<Scale>,
}

/// A heatmap's colour scale: from `lo` (darkest) to `hi` (lightest).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
}

/// The smallest share of the scale a log scale spans: its top is at least this many times its
/// bottom.
const MIN_RATIO: f64 = 2.0;

/// The colour scale of values from `min` to `max`: logarithmic from `min` to at least
/// `MIN_RATIO × min` when both are positive, else linear from `min` to `max`.
fn colour_scale(min: f64, max: f64) -> Option<Scale> {
    if !min.is_finite() {
        return None;
    }
    Some(if min > 0.0 {
        Scale {
            lo: min,
            hi: max.max(min * MIN_RATIO),
            log: true,
        }
    } else {
        Scale {
            lo: min,
            hi: max,
            log: false,
        }
    })
}

/// Viridis (matplotlib's default colour map) sampled at nine points.
const VIRIDIS: [(u8, u8, u8); 9] = [
    (68, 1, 84),
    (71, 44, 122),
    (59, 81, 139),
    (44, 113, 142),
    (33, 144, 141),
    (39, 173, 129),
    (92, 200, 99),
    (170, 220, 50),
    (253, 231, 37),
];

/// The viridis colour at `t` in 0..=1.
fn viridis(t: f64) -> RGBColor {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let pos = t * (VIRIDIS.len() - 1) as f64;
    let i = (pos.floor() as usize).min(VIRIDIS.len() - 2);
    let f = pos - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Dark text on light cells, white text on dark ones.
fn text_on(c: RGBColor) -> RGBColor {
    let luminance = (0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64) / 255.0;
    if luminance > 0.55 {
        INK
    } else {
        WHITE
    }
}

const MISSING: RGBColor = RGBColor(236, 236, 236);
/// Width of the colour-bar strip on the right.
const BAR_STRIP: u32 = 120;
const TOP: u32 = 10;
const X_LABEL_AREA: u32 = 56;

impl Heatmap<'_> {
    /// Position 0..=1 of `v` on the colour scale.
    fn t(&self, v: f64) -> f64 {
        match self.scale {
            Some(Scale { lo, hi, log: true }) => (v / lo).ln() / (hi / lo).ln(),
            Some(Scale { lo, hi, log: false }) if hi > lo => (v - lo) / (hi - lo),
            _ => 0.5,
        }
    }

    /// The colour-bar axis and its labelled ticks.
    fn bar_axis(scale: Scale) -> Ticked {
        if scale.log {
            let snapped = LogAxis::new(scale.lo, scale.hi);
            let inside = |v: &f64| *v > scale.lo * 1.02 && *v < scale.hi / 1.02;
            let mut ticks = vec![scale.lo];
            ticks.extend(snapped.ticks.iter().copied().filter(inside));
            ticks.push(scale.hi);
            let minor = snapped.minor.into_iter().filter(inside).collect();
            return Ticked::log(&LogAxis {
                range: scale.lo..scale.hi,
                ticks,
                minor,
            });
        }
        let (lo, hi) = if scale.hi > scale.lo {
            (scale.lo, scale.hi)
        } else {
            let pad = if scale.lo == 0.0 {
                1.0
            } else {
                scale.lo.abs() * 0.1
            };
            (scale.lo - pad, scale.hi + pad)
        };
        let ticks = (0..=5).map(|k| lo + (hi - lo) * k as f64 / 5.0).collect();
        Ticked::linear(lo..hi, ticks, Vec::new())
    }

    fn draw_colour_bar<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let Some(scale) = self.scale else {
            return Ok(());
        };
        let axis = Self::bar_axis(scale);
        let range = plotters::coord::ranged1d::Ranged::range(&axis);
        let (lo_axis, hi_axis) = (range.start, range.end);
        let mut chart = ChartBuilder::on(area)
            .margin_top(TOP)
            .margin_left(12)
            .margin_right(8)
            .set_label_area_size(LabelAreaPosition::Bottom, X_LABEL_AREA)
            .set_label_area_size(LabelAreaPosition::Right, 64)
            .build_cartesian_2d(0f64..1f64, axis)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_x_axis()
            .disable_y_mesh()
            .y_desc(self.value_name)
            .y_label_formatter(&|v| fmt_num(*v))
            .label_style(text(12, INK))
            .axis_desc_style(text(13, INK))
            .axis_style(MUTED.stroke_width(1))
            .draw()?;
        const STEPS: usize = 120;
        let at = |f: f64| {
            if scale.log {
                lo_axis * (hi_axis / lo_axis).powf(f)
            } else {
                lo_axis + (hi_axis - lo_axis) * f
            }
        };
        chart.draw_series((0..STEPS).map(|k| {
            let a = at(k as f64 / STEPS as f64);
            let b = at((k + 1) as f64 / STEPS as f64);
            let mid = at((k as f64 + 0.5) / STEPS as f64);
            Rectangle::new([(0.0, a), (1.0, b)], viridis(self.t(mid)).filled())
        }))?;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, lo_axis), (1.0, hi_axis)],
            MUTED.stroke_width(1),
        )))?;
        // The scale, stated under the bar.
        let note: Vec<String> = if scale.log {
            vec![
                "log scale:".to_string(),
                format!("best {}", fmt_num(scale.lo)),
                format!("to ×{}", fmt_num(scale.hi / scale.lo)),
            ]
        } else {
            vec!["linear scale".to_string()]
        };
        let (_, h) = area.dim_in_pixel();
        let top = h as i32 - X_LABEL_AREA as i32 + 8;
        for (i, line) in note.iter().enumerate() {
            area.draw(&Text::new(
                line.clone(),
                (12, top + 15 * i as i32),
                text(12, MUTED),
            ))?;
        }
        Ok(())
    }
}

impl Chart for Heatmap<'_> {
    fn size(&self) -> (u32, u32) {
        let (nx, ny) = (self.x_labels.len() as u32, self.y_labels.len() as u32);
        // Room for the row labels: about 8 px per character at 13 px.
        let longest = self
            .y_labels
            .iter()
            .map(|l| l.chars().count() as u32)
            .max()
            .unwrap_or(0);
        let labels = (8 * longest).saturating_sub(120);
        (
            (300 + labels + 110 * nx).clamp(760, 1800),
            (160 + 52 * ny).clamp(440, 1200),
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let body = titled(root, self.title)?;
        let (w, _) = body.dim_in_pixel();
        let (grid_area, bar_area) = body.split_horizontally(w - BAR_STRIP);
        let (nx, ny) = (self.x_labels.len(), self.y_labels.len());

        let label_style = text(13, INK);
        let mut y_label_w = 0;
        for l in self.y_labels {
            y_label_w = y_label_w.max(grid_area.estimate_text_size(l, &label_style)?.0);
        }
        let y_label_w = y_label_w.min(w * 45 / 100);
        let mut chart = ChartBuilder::on(&grid_area)
            .margin_top(TOP)
            .margin_left(10)
            .margin_right(10)
            .x_label_area_size(X_LABEL_AREA)
            .y_label_area_size(y_label_w + 42)
            .build_cartesian_2d(
                Ticked::linear(
                    0.0..nx as f64,
                    (0..nx).map(|i| i as f64 + 0.5).collect(),
                    Vec::new(),
                ),
                Ticked::linear(
                    0.0..ny as f64,
                    (0..ny).map(|i| i as f64 + 0.5).collect(),
                    Vec::new(),
                ),
            )?;

        let plot = chart.plotting_area();
        let (pw, ph) = plot.dim_in_pixel();
        let cell_w = pw as f64 / nx as f64;
        let cell_h = ph as f64 / ny as f64;
        // x labels: the largest size down to 10 px at which all fit their column, shortened if
        // even that is too wide.
        let x_room = (cell_w - 6.0).max(12.0) as u32;
        let mut x_style = text(10, INK);
        for size in (10..=13).rev() {
            let style = text(size, INK);
            let mut widest = 0;
            for l in self.x_labels {
                widest = widest.max(grid_area.estimate_text_size(l, &style)?.0);
            }
            if widest <= x_room {
                x_style = style;
                break;
            }
        }
        let mut x_labels = Vec::with_capacity(nx);
        for l in self.x_labels {
            x_labels.push(ellipsize(&grid_area, l, &x_style, x_room)?);
        }
        let mut y_labels = Vec::with_capacity(ny);
        for l in self.y_labels {
            y_labels.push(ellipsize(&grid_area, l, &label_style, y_label_w)?);
        }
        let x_fmt = |v: &f64| {
            x_labels
                .get(v.floor() as usize)
                .cloned()
                .unwrap_or_default()
        };
        // Row 0 at the top: plot row y at ny - 1 - y.
        let y_fmt = |v: &f64| {
            y_labels
                .get(ny - 1 - (v.floor() as usize).min(ny - 1))
                .cloned()
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(self.x_name)
            .y_desc(self.y_name)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .x_label_style(x_style)
            .y_label_style(label_style.clone())
            .axis_desc_style(text(14, INK))
            .axis_style(MUTED.stroke_width(1))
            .draw()?;

        // One value size for all cells: the largest that fits every value.
        let cell_text: Vec<Vec<String>> = self
            .values
            .iter()
            .map(|row| {
                row.iter()
                    .map(|v| {
                        if v.is_finite() {
                            fmt_num(*v)
                        } else {
                            "n/a".to_string()
                        }
                    })
                    .collect()
            })
            .collect();
        let mut size = (cell_h / 2.4).clamp(9.0, 15.0) as u32;
        while size > 9 {
            let style = text(size, INK);
            let mut widest = 0;
            for s in cell_text.iter().flatten() {
                widest = widest.max(grid_area.estimate_text_size(s, &style)?.0);
            }
            if (widest as f64) <= cell_w - 6.0 {
                break;
            }
            size -= 1;
        }

        for (y, row) in self.values.iter().enumerate() {
            let py = (ny - 1 - y) as f64;
            for (x, v) in row.iter().enumerate() {
                let px = x as f64;
                let fill = if v.is_finite() {
                    viridis(self.t(*v))
                } else {
                    MISSING
                };
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(px, py), (px + 1.0, py + 1.0)],
                    fill.filled(),
                )))?;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(px, py), (px + 1.0, py + 1.0)],
                    WHITE.stroke_width(2),
                )))?;
                let colour = if v.is_finite() { text_on(fill) } else { MUTED };
                chart.draw_series(std::iter::once(Text::new(
                    cell_text[y][x].clone(),
                    (px + 0.5, py + 0.5),
                    text(size, colour).pos(Pos::new(HPos::Center, VPos::Center)),
                )))?;
            }
        }
        self.draw_colour_bar(&bar_area)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_scale_spans_at_least_twice_the_best() {
        // 9 % apart: the scale still goes to twice the best, so the cells look alike.
        let s = colour_scale(8.09, 8.78).unwrap();
        assert!(s.log && s.lo == 8.09 && (s.hi - 16.18).abs() < 1e-9);
        // Wider data: up to the largest value.
        assert_eq!(colour_scale(4.0, 42.0).unwrap().hi, 42.0);
        // Not positive: linear.
        assert!(!colour_scale(-1.0, 3.0).unwrap().log);
        assert_eq!(colour_scale(f64::INFINITY, f64::NEG_INFINITY), None);
    }

    #[test]
    fn viridis_ends_and_text_contrast() {
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(f64::NAN), RGBColor(68, 1, 84));
        assert_eq!(text_on(viridis(0.0)), WHITE);
        assert_eq!(text_on(viridis(1.0)), INK);
    }
}
