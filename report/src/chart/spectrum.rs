//! A run's latency percentile spectrum: every policy's latency at each percentile, on a log
//! "nines" axis.

use lblab_record::RunSummary;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::series::Series;
use super::time::Points;
use super::{FRAME, LEGEND, SIZE};
use crate::chart::run_data::{run_title, PolicyData};
use crate::render::plot::Styled as _;
use crate::render::{
    draw_legend, draw_line, fmt_num, frame, titled, with_legend, Chart, DrawResult, Entry, LogAxis,
    Ticked,
};

/// Highest percentile on the spectrum, as a number of nines (4 = 99.99%).
const MAX_NINES: f64 = 4.0;

pub(crate) struct Spectrum {
    title: String,
    /// Per policy: points (nines, ms). Policies without data have no points.
    pub lines: Vec<Series<Points>>,
    axis: LogAxis,
}

impl Spectrum {
    pub(crate) fn new(summary: &RunSummary, data: &[PolicyData]) -> Self {
        const STEPS: usize = 800;
        let lines: Vec<_> = data
            .iter()
            .map(|r| {
                let h = &r.histogram;
                let points = if h.is_empty() {
                    Vec::new()
                } else {
                    (0..=STEPS)
                        .map(|k| {
                            let nines = MAX_NINES * k as f64 / STEPS as f64;
                            let q = 1.0 - 10f64.powf(-nines);
                            (nines, h.value_at_quantile(q) as f64 / 1e6)
                        })
                        .collect()
                };
                Series::new(&r.label, points)
            })
            .collect();
        let lines = Series::with_twins(lines, Vec::is_empty);
        let ys = lines
            .iter()
            .flat_map(|l| l.data.iter().map(|p| p.1))
            .filter(|y| *y > 0.0);
        let (min, max) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), y| {
            (lo.min(y), hi.max(y))
        });
        Spectrum {
            title: run_title(summary, "latency percentile spectrum"),
            lines,
            axis: LogAxis::new(min, max),
        }
    }
}

/// `0%`, `50%`, `90%`, `99%`, `99.9%` ... for a position on the nines axis.
fn fmt_percentile(nines: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-nines));
    let s = format!("{p:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

impl Chart for Spectrum {
    fn size(&self) -> (u32, u32) {
        SIZE
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let body = titled(root, &self.title)?;
        let entries: Vec<Entry> = self
            .lines
            .iter()
            .map(|line| line.entry(line.data.is_empty()))
            .collect();
        let (plot, legend) = with_legend(&body, Some("policy"), &entries, LEGEND)?;
        let log2 = 2f64.log10();
        let bold = vec![0.0, log2, 1.0, 2.0, 3.0, 4.0];
        let light = vec![2.0 * log2, 1.0 + log2, 2.0 + log2, 3.0 + log2];
        let mut chart = frame(&plot, FRAME).build_cartesian_2d(
            Ticked::linear(0.0..MAX_NINES, bold, light),
            Ticked::log(&self.axis),
        )?;
        chart
            .configure_mesh()
            .x_desc("percentile (log scale of nines)")
            .y_desc("latency (ms, log scale)")
            .x_label_formatter(&|x| fmt_percentile(*x))
            .y_label_formatter(&|y| fmt_num(*y))
            .styled(14, 15)
            .draw()?;
        for line in &self.lines {
            if !line.data.is_empty() {
                draw_line(
                    &mut chart,
                    &line.data,
                    line.style.colour,
                    line.style.dash,
                    2,
                )?;
            }
        }
        draw_legend(&legend, 22, Some("policy"), &entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::run_data::fixtures::{data, summary};

    #[test]
    fn colours_follow_labels_not_order() {
        let s = summary(vec![]);
        let ab = Spectrum::new(&s, &[data("round_robin", 5.0), data("peak_ewma", 2.0)]);
        let ba = Spectrum::new(&s, &[data("peak_ewma", 2.0), data("round_robin", 5.0)]);
        assert_eq!(ab.lines[0].style, ba.lines[1].style);
        assert_eq!(ab.lines[1].style, ba.lines[0].style);
        assert_ne!(ab.lines[0].style.colour, ab.lines[1].style.colour);
    }

    #[test]
    fn nines_axis_labels() {
        assert_eq!(fmt_percentile(0.0), "0%");
        assert_eq!(fmt_percentile(2f64.log10()), "50%");
        assert_eq!(fmt_percentile(1.0), "90%");
        assert_eq!(fmt_percentile(3.0), "99.9%");
        assert_eq!(fmt_percentile(4.0), "99.99%");
    }
}
