//! Real vs simulated latency per policy: grouped bars with the agreement band.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::evidence::{AGREEMENT_ABSOLUTE_MS, AGREEMENT_RELATIVE};
use crate::render::plot::Styled as _;
use crate::render::{
    draw_legend, ellipsize, fmt_num, frame, note, over_white, policy_colour, text, tint, titled,
    with_legend, write_chart, Chart, DrawResult, Entry, Frame, LogAxis, Mark, Ticked, CATEGORY,
    INK, MUTED,
};
use crate::ReportError;

/// One policy's latency in both modes, for [`write_compare_chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct ComparePoint {
    /// Policy label.
    pub policy: String,
    /// Simulated median, ms.
    pub sim_p50_ms: f64,
    /// Simulated 99th percentile, ms.
    pub sim_p99_ms: f64,
    /// Measured (real harness) median, ms.
    pub real_p50_ms: f64,
    /// Measured 99th percentile, ms.
    pub real_p99_ms: f64,
    /// Confidence interval (ms) of the simulated p99 across seeds, when a multi-seed run gave
    /// one: drawn as an error bar on the sim p99 bar.
    pub sim_p99_interval: Option<(f64, f64)>,
    /// Range (ms) of the measured p99 over repeated real runs, when there are any: drawn as an
    /// error bar on the real p99 bar.
    pub real_p99_range: Option<(f64, f64)>,
}

/// The agreement band around a simulated value: the real value agrees when it is inside (the
/// rule of [`crate::evidence::agrees`]).
pub(crate) fn agreement_band(sim_ms: f64) -> (f64, f64) {
    let tol = (AGREEMENT_RELATIVE * sim_ms).max(AGREEMENT_ABSOLUTE_MS);
    (sim_ms - tol, sim_ms + tol)
}

/// Writes a grouped bar chart of simulated vs real p50 and p99 per policy to `<stem>.png` and
/// `<stem>.svg` and returns both paths.
///
/// Each policy gets two pairs of bars, p50 (light) then p99 (dark), simulated (blue) beside real
/// (orange), on a log latency axis so that p50 and p99 are both readable; each bar is labelled
/// with its value when there is room. A value that is not finite and positive has no bar and is
/// labelled "n/a".
///
/// Over each sim/real pair a grey box shows the agreement band (±20 % of the simulated value,
/// or ±1 ms, whichever is larger: the real bar agrees when its top is inside); intervals, when
/// given, are error bars on the p99 bars. A line in the policy's colour (the same as in every
/// other chart) underlines each group.
pub fn write_compare_chart(
    stem: &Path,
    title: &str,
    points: &[ComparePoint],
) -> Result<Vec<PathBuf>, ReportError> {
    let values = points.iter().flat_map(|p| {
        let [a, b] =
            [p.sim_p99_interval, p.real_p99_range].map(|i| i.unwrap_or((f64::NAN, f64::NAN)));
        [
            p.sim_p50_ms,
            p.real_p50_ms,
            p.sim_p99_ms,
            p.real_p99_ms,
            agreement_band(p.sim_p99_ms).1,
            a.0,
            a.1,
            b.0,
            b.1,
        ]
    });
    let (min, max) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    // Room above the tallest bar for its label.
    let axis = LogAxis::new(min, max * 1.35);
    write_chart(
        stem,
        &Compare {
            title,
            points,
            axis,
        },
    )
}

struct Compare<'a> {
    title: &'a str,
    points: &'a [ComparePoint],
    axis: LogAxis,
}

/// One of the four bars of a group.
struct Bar {
    /// The value it shows.
    value: fn(&ComparePoint) -> f64,
    /// Offset from the group start, in bar widths.
    offset: f64,
    colour: RGBColor,
    /// Legend label.
    label: &'static str,
}

/// The four bars of a group: p50 (light) then p99 (dark), sim (blue) beside real (orange).
fn bars() -> [Bar; 4] {
    let sim = CATEGORY[0];
    let real = CATEGORY[1];
    let bar = |value, offset, colour, label| Bar {
        value,
        offset,
        colour,
        label,
    };
    [
        bar(|p| p.sim_p50_ms, 0.0, tint(sim, 0.5), "sim p50"),
        bar(|p| p.real_p50_ms, 1.0, tint(real, 0.5), "real p50"),
        bar(|p| p.sim_p99_ms, 2.4, sim, "sim p99"),
        bar(|p| p.real_p99_ms, 3.4, real, "real p99"),
    ]
}

/// The label of a bar: its value, or "n/a" when it has none.
fn value_label(v: f64) -> String {
    if v.is_finite() && v > 0.0 {
        fmt_num(v)
    } else {
        "n/a".to_string()
    }
}

/// The agreement band: fill and edge.
const BAND_FILL: RGBColor = RGBColor(150, 150, 150);
const BAND_EDGE: RGBColor = RGBColor(120, 120, 120);

/// Where the plot sits: the same frame as a line chart's.
const FRAME: Frame = super::line::FRAME;

/// Group layout in x units (one unit per policy): margin on each side and bar width.
const GROUP_MARGIN: f64 = 0.12;
const BAR_W: f64 = (1.0 - 2.0 * GROUP_MARGIN) / 4.4;

impl Compare<'_> {
    /// The legend: the bars, the agreement band, the intervals if any are drawn, and each
    /// policy's colour, which underlines its group (as its lines are coloured in the run charts).
    fn legend_entries(&self) -> Vec<Entry> {
        let mut entries: Vec<Entry> = bars()
            .iter()
            .map(|b| Entry::new(b.label, b.colour, Mark::Swatch))
            .collect();
        entries.push(Entry::new(
            "agreement band",
            over_white(BAND_FILL, 0.3),
            Mark::Swatch,
        ));
        let intervals = self
            .points
            .iter()
            .any(|p| p.sim_p99_interval.is_some() || p.real_p99_range.is_some());
        if intervals {
            entries.push(Entry::new("p99 interval", INK, Mark::Line(1)));
        }
        for p in self.points {
            entries.push(Entry::new(
                p.policy.clone(),
                policy_colour(&p.policy),
                Mark::Line(4),
            ));
        }
        entries
    }
}

impl Chart for Compare<'_> {
    fn size(&self) -> (u32, u32) {
        // 80 px more than the bars need, for the legend's policy entries.
        (
            (420 + 140 * self.points.len() as u32).clamp(1000, 1600) + 80,
            600,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let body = titled(root, self.title)?;
        let entries = self.legend_entries();
        let (plot, legend) = with_legend(&body, None, &entries, (140, 220))?;
        let n = self.points.len().max(1);
        let (lo, hi) = (self.axis.range.start, self.axis.range.end);
        let mut chart = frame(&plot, FRAME).build_cartesian_2d(
            Ticked::linear(
                0.0..n as f64,
                (0..n).map(|i| i as f64 + 0.5).collect(),
                Vec::new(),
            ),
            Ticked::log(&self.axis),
        )?;
        let group_px = chart.plotting_area().dim_in_pixel().0 as f64 / n as f64;
        let label_style = text(13, INK);
        let mut names = Vec::with_capacity(n);
        for p in self.points {
            names.push(ellipsize(
                &plot,
                &p.policy,
                &label_style,
                (group_px - 8.0).max(12.0) as u32,
            )?);
        }
        let x_fmt = |v: &f64| names.get(v.floor() as usize).cloned().unwrap_or_default();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("policy")
            .y_desc("latency (ms, log scale)")
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&|y| fmt_num(*y))
            .styled(13, 14)
            .draw()?;

        // Value labels (and "n/a" for a missing bar) in the largest size at which every one fits
        // its bar; none when even the smallest does not.
        let bar_px = group_px * BAR_W;
        let mut value_size = None;
        for size in [11, 10, 9] {
            let style = text(size, INK);
            let mut fits = true;
            for p in self.points {
                for bar in bars() {
                    fits &= (plot
                        .estimate_text_size(&value_label((bar.value)(p)), &style)?
                        .0 as f64)
                        <= bar_px + 1.0;
                }
            }
            if fits {
                value_size = Some(size);
                break;
            }
        }
        // Agreement bands behind each sim/real pair; their edges are drawn over the bars below.
        let band = |i: usize, p: &ComparePoint| {
            [(p.sim_p50_ms, 0.0), (p.sim_p99_ms, 2.4)]
                .into_iter()
                .filter(|(sim, _)| sim.is_finite() && *sim > 0.0)
                .map(move |(sim, offset)| {
                    let (b0, b1) = agreement_band(sim);
                    let x0 = i as f64 + GROUP_MARGIN + (offset - 0.15) * BAR_W;
                    (x0, x0 + 2.3 * BAR_W, b0.max(lo), b1.min(hi))
                })
        };
        for (i, p) in self.points.iter().enumerate() {
            chart.draw_series(band(i, p).map(|(x0, x1, b0, b1)| {
                Rectangle::new([(x0, b0), (x1, b1)], over_white(BAND_FILL, 0.3).filled())
            }))?;
        }
        for (i, p) in self.points.iter().enumerate() {
            for bar in bars() {
                let v = (bar.value)(p);
                let x0 = i as f64 + GROUP_MARGIN + bar.offset * BAR_W;
                let x1 = x0 + BAR_W;
                let valid = v.is_finite() && v > 0.0;
                let top = if valid { v.min(hi) } else { lo };
                if valid {
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(x0, lo), (x1, top)],
                        bar.colour.filled(),
                    )))?;
                }
                if let Some(size) = value_size {
                    let style = text(size, if valid { INK } else { MUTED });
                    chart.plotting_area().draw(
                        &(EmptyElement::at(((x0 + x1) / 2.0, top))
                            + Text::new(
                                value_label(v),
                                (0, -3),
                                style.pos(Pos::new(HPos::Center, VPos::Bottom)),
                            )),
                    )?;
                }
            }
        }
        // The bands' edges, then the error bars.
        for (i, p) in self.points.iter().enumerate() {
            for (x0, x1, b0, b1) in band(i, p) {
                for y in [b0, b1] {
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(x0, y), (x1, y)],
                        BAND_EDGE.stroke_width(1),
                    )))?;
                }
            }
            for (interval, offset) in [(p.sim_p99_interval, 2.4), (p.real_p99_range, 3.4)] {
                let Some((a, b)) = interval else { continue };
                if !(a.is_finite() && b.is_finite() && b > 0.0) {
                    continue;
                }
                let (a, b) = (a.max(lo), b.min(hi));
                let xm = i as f64 + GROUP_MARGIN + (offset + 0.5) * BAR_W;
                let cap = 0.22 * BAR_W;
                chart.draw_series([
                    PathElement::new(vec![(xm, a), (xm, b)], INK.stroke_width(2)),
                    PathElement::new(vec![(xm - cap, a), (xm + cap, a)], INK.stroke_width(2)),
                    PathElement::new(vec![(xm - cap, b), (xm + cap, b)], INK.stroke_width(2)),
                ])?;
            }
        }
        // Each group underlined in its policy's colour.
        let base = plot.get_base_pixel();
        for (i, p) in self.points.iter().enumerate() {
            let (x0, y) = chart.backend_coord(&(i as f64 + GROUP_MARGIN, lo));
            let (x1, _) = chart.backend_coord(&(i as f64 + 1.0 - GROUP_MARGIN, lo));
            plot.draw(&Rectangle::new(
                [(x0 - base.0, y - base.1 - 5), (x1 - base.0, y - base.1 - 1)],
                policy_colour(&p.policy).filled(),
            ))?;
        }
        if self.points.is_empty() {
            note(&chart, (0.5, (lo * hi).sqrt()), "no policies", 14)?;
        }
        draw_legend(&legend, 22, None, &entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_underline_has_a_legend_entry() {
        let point = |policy: &str| ComparePoint {
            policy: policy.into(),
            sim_p50_ms: 2.0,
            sim_p99_ms: 8.0,
            real_p50_ms: 2.5,
            real_p99_ms: 9.0,
            sim_p99_interval: None,
            real_p99_range: None,
        };
        let points = [point("round_robin"), point("finagle_peak_ewma")];
        let chart = Compare {
            title: "t",
            points: &points,
            axis: LogAxis::new(1.0, 20.0),
        };
        let entries = chart.legend_entries();
        for p in &points {
            assert!(
                entries
                    .iter()
                    .any(|e| e.colour == policy_colour(&p.policy) && e.label.contains(&p.policy)),
                "no legend entry for {}'s underline",
                p.policy
            );
        }
    }

    #[test]
    fn agreement_band_is_evidence_rule() {
        assert_eq!(agreement_band(10.0), (8.0, 12.0));
        assert_eq!(agreement_band(2.0), (1.0, 3.0));
        for (sim, real) in [(10.0, 11.9), (10.0, 12.1), (2.0, 2.9), (2.0, 3.1)] {
            let (lo, hi) = agreement_band(sim);
            assert_eq!(
                (lo..=hi).contains(&real),
                crate::evidence::agrees(sim, real)
            );
        }
    }
}
