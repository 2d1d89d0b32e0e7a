//! A run's p99 per second: one line per policy on a log scale, over the shared time axis with
//! its warm-up and fault-window bands, the bands labelled above the plot.

use lblab_record::RunSummary;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::series::Series;
use super::time::{second_runs, span_label, trimmed, Points, TimeAxis};
use super::{FRAME, LEGEND, SIZE};
use crate::chart::run_data::{run_title, PolicyData};
use crate::render::plot::Styled as _;
use crate::render::{
    draw_legend, draw_line, fmt_num, frame, text, titled, with_legend, Chart, DrawResult, Entry,
    Frame, LogAxis, Ticked, INK,
};

/// Rows of band labels above the plot, at most; labels that do not fit are left out.
const MAX_LABEL_LEVELS: usize = 3;
/// Height of one row of band labels.
const LABEL_ROW: u32 = 15;

pub(crate) struct P99OverTime {
    title: String,
    /// Per policy: runs of consecutive seconds with data (time s, p99 ms).
    pub lines: Vec<Series<Vec<Points>>>,
    axis: LogAxis,
    pub time: TimeAxis,
    /// The label of each of `time`'s fault spans.
    span_labels: Vec<String>,
}

impl P99OverTime {
    pub(crate) fn new(summary: &RunSummary, data: &[PolicyData]) -> Self {
        let rows = trimmed(data);
        let time = TimeAxis::new(summary, &rows);
        let lines: Vec<_> = data
            .iter()
            .zip(&rows)
            .map(|(r, rows)| {
                let runs = second_runs(rows, |row| {
                    Some(row.p99_ms).filter(|y| y.is_finite() && *y > 0.0)
                });
                Series::new(&r.label, runs)
            })
            .collect();
        let (min, max) = lines
            .iter()
            .flat_map(|l| l.data.iter().flatten())
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), p| {
                (lo.min(p.1), hi.max(p.1))
            });
        let lines = Series::with_twins(lines, Vec::is_empty);
        P99OverTime {
            title: run_title(summary, "p99 latency per second"),
            lines,
            axis: LogAxis::new(min, max),
            span_labels: time.spans.iter().map(|s| span_label(summary, s)).collect(),
            time,
        }
    }
}

impl Chart for P99OverTime {
    fn size(&self) -> (u32, u32) {
        SIZE
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let body = titled(root, &self.title)?;
        let mut entries: Vec<Entry> = self
            .lines
            .iter()
            .map(|line| line.entry(line.data.is_empty()))
            .collect();
        self.time.push_band_entries(&mut entries);
        let (plot, legend) = with_legend(&body, Some("policy"), &entries, LEGEND)?;
        let (lo, hi) = (self.axis.range.start, self.axis.range.end);
        let build = |top: u32| {
            frame(&plot, Frame { top, ..FRAME })
                .build_cartesian_2d(0f64..self.time.end, Ticked::log(&self.axis))
        };

        // Band labels go in a strip above the plot (never over the data): the warm-up, and the
        // backends of each fault span, stacked in up to MAX_LABEL_LEVELS rows.
        let mut labels: Vec<(f64, String, RGBColor)> = Vec::new();
        if self.time.warmup > 0.0 {
            labels.push((0.0, "warm-up".to_string(), RGBColor(90, 90, 90)));
        }
        for (span, label) in self.time.spans.iter().zip(&self.span_labels) {
            labels.push((span.start, label.clone(), RGBColor(170, 30, 30)));
        }
        labels.sort_by(|a, b| a.0.total_cmp(&b.0));
        let style = text(12, INK);
        let probe = build(10)?;
        let mut level_ends: Vec<i32> = Vec::new();
        let mut placed: Vec<(f64, String, RGBColor, usize)> = Vec::new();
        for (x, label, colour) in labels {
            let px = probe.backend_coord(&(x, hi)).0 + 3;
            let width = plot.estimate_text_size(&label, &style)?.0 as i32;
            let level = match level_ends.iter().position(|&end| end + 8 <= px) {
                Some(l) => l,
                None if level_ends.len() < MAX_LABEL_LEVELS => {
                    level_ends.push(i32::MIN);
                    level_ends.len() - 1
                }
                None => continue,
            };
            level_ends[level] = px + width;
            placed.push((x, label, colour, level));
        }
        let mut chart = build(10 + LABEL_ROW * level_ends.len() as u32)?;
        chart
            .configure_mesh()
            .x_desc("time since run start (s)")
            .y_desc("p99 latency per second (ms, log scale)")
            .x_labels(12)
            .x_max_light_lines(0)
            .x_label_formatter(&|x| fmt_num(*x))
            .y_label_formatter(&|y| fmt_num(*y))
            .styled(14, 15)
            .draw()?;

        self.time.draw_bands(&mut chart, &plot, (lo, hi))?;
        let base = plot.get_base_pixel();
        for (x, label, colour, level) in placed {
            let (px, py) = chart.backend_coord(&(x, hi));
            let (px, py) = (
                px - base.0 + 3,
                py - base.1 - 3 - LABEL_ROW as i32 * level as i32,
            );
            plot.draw(&Text::new(
                label,
                (px, py),
                style
                    .clone()
                    .color(&colour)
                    .pos(Pos::new(HPos::Left, VPos::Bottom)),
            ))?;
        }

        for line in &self.lines {
            for run in &line.data {
                if run.len() == 1 {
                    chart.draw_series(std::iter::once(Circle::new(
                        run[0],
                        2,
                        line.style.colour.filled(),
                    )))?;
                } else {
                    draw_line(&mut chart, run, line.style.colour, line.style.dash, 2)?;
                }
            }
        }
        draw_legend(&legend, 22, Some("policy"), &entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::run_data::fixtures::{row, summary};
    use crate::chart::time::whole_seconds;
    use hdrhistogram::Histogram;

    #[test]
    fn partial_first_and_last_seconds_are_dropped() {
        // Whole seconds 0..=9, then the stragglers of second 9 completing in second 10.
        let mut rows: Vec<_> = (0..10).map(|s| row(s, 1000, true)).collect();
        rows.push(row(10, 6, false));
        assert_eq!(whole_seconds(&rows), Some((0, 9)));
        // A run that started late in second 0 and stopped early in second 9.
        rows[0].completed = 200;
        rows[9].completed = 300;
        assert_eq!(whole_seconds(&rows), Some((1, 8)));
        assert_eq!(whole_seconds(&[]), None);
        // Through the chart: no point of the p99 line after the last whole second.
        let data = PolicyData {
            label: "p".into(),
            timeseries: rows,
            histogram: Histogram::new(3).unwrap(),
        };
        let chart = P99OverTime::new(&summary(vec![]), &[data]);
        let xs: Vec<f64> = chart.lines[0].data.iter().flatten().map(|p| p.0).collect();
        assert_eq!(xs.first(), Some(&1.5));
        assert_eq!(xs.last(), Some(&8.5));
        assert_eq!(chart.time.end, 9.0);
    }
}
