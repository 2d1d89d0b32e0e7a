//! A run's traffic share per backend: one small panel per policy with each backend's share of
//! the requests sent per second, over the shared time axis with its bands.

use lblab_model::results::RunSummary;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::time::{second_runs, trimmed, Points, TimeAxis};
use super::LEGEND;
use crate::render::plot::Styled as _;
use crate::render::{
    draw_legend, ellipsize, fault_colour, fmt_num, note, text, titled, with_legend, Chart,
    DrawResult, Entry, Mark, INK, MUTED, QUIET_GREY,
};
use crate::run::{backend_name, run_title, PolicyData};

struct Panel {
    policy: String,
    /// Per backend: runs of (time s, share %) over the seconds with sends.
    lines: Vec<Vec<Points>>,
}

pub(crate) struct TrafficShare {
    title: String,
    panels: Vec<Panel>,
    /// Backend count, and per backend its colour if it has a fault window.
    backends: usize,
    colours: Vec<Option<RGBColor>>,
    names: Vec<String>,
    time: TimeAxis,
    /// Top of the share axis, %, the same for every panel.
    top: f64,
}

/// The top of the share axis: the largest share with some room, in steps of 10%.
fn panels_max(panels: &[Panel]) -> f64 {
    let max = panels
        .iter()
        .flat_map(|p| p.lines.iter().flatten().flatten())
        .map(|p| p.1)
        .fold(0.0, f64::max);
    ((max * 1.08 / 10.0).ceil() * 10.0).clamp(10.0, 100.0)
}

impl TrafficShare {
    pub(crate) fn new(summary: &RunSummary, data: &[PolicyData]) -> Self {
        let rows = trimmed(data);
        let time = TimeAxis::new(summary, &rows);
        let from_rows = rows
            .iter()
            .flatten()
            .map(|row| row.shares.len())
            .max()
            .unwrap_or(0);
        let backends = summary.backends.len().max(from_rows);
        let mut colours = vec![None; backends];
        let mut faulted: Vec<usize> = summary
            .fault_windows
            .iter()
            .map(|w| w.backend)
            .filter(|&b| b < backends)
            .collect();
        faulted.sort_unstable();
        faulted.dedup();
        for (k, &b) in faulted.iter().enumerate() {
            colours[b] = Some(fault_colour(k));
        }
        let panels: Vec<Panel> = data
            .iter()
            .zip(&rows)
            .map(|(r, rows)| {
                // A second without sends ends every backend's run.
                let share = |b: usize| {
                    move |row: &lblab_model::results::TimeseriesRow| {
                        let total: f64 = row.shares.iter().filter(|s| s.is_finite()).sum();
                        let s = row.shares.get(b).copied().filter(|s| s.is_finite());
                        (total > 0.0).then(|| 100.0 * s.unwrap_or(0.0))
                    }
                };
                Panel {
                    policy: r.label.clone(),
                    lines: (0..backends).map(|b| second_runs(rows, share(b))).collect(),
                }
            })
            .collect();
        let top = panels_max(&panels);
        TrafficShare {
            title: run_title(summary, "traffic share per backend"),
            top,
            panels,
            backends,
            colours,
            names: (0..backends).map(|b| backend_name(summary, b)).collect(),
            time,
        }
    }

    fn grid(&self) -> (usize, usize) {
        let n = self.panels.len().max(1);
        let cols = match n {
            1 => 1,
            2..=4 => 2,
            _ => 3,
        };
        (n.div_ceil(cols), cols)
    }
}

impl Chart for TrafficShare {
    fn size(&self) -> (u32, u32) {
        let (rows, _) = self.grid();
        (1000, (60 + 270 * rows as u32).max(600))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let body = titled(root, &self.title)?;
        let mut entries: Vec<Entry> = Vec::new();
        for (b, colour) in self.colours.iter().enumerate() {
            if let Some(c) = colour {
                entries.push(Entry::new(
                    format!("{} (faulty)", self.names[b]),
                    *c,
                    Mark::Line(3),
                ));
            }
        }
        let quiet = self.colours.iter().filter(|c| c.is_none()).count();
        if quiet > 0 {
            let label = if quiet == self.backends {
                "backends".to_string()
            } else {
                "other backends".to_string()
            };
            entries.push(Entry::new(
                format!("{label} ({quiet})"),
                QUIET_GREY,
                Mark::Line(2),
            ));
        }
        if self.backends > 0 {
            entries.push(Entry::new(
                format!("even share (1/{})", self.backends),
                MUTED,
                Mark::Dashed((4, 4)),
            ));
        }
        self.time.push_band_entries(&mut entries);
        let (grid_area, legend) = with_legend(&body, Some("backend"), &entries, LEGEND)?;
        let (rows, cols) = self.grid();
        let cells = grid_area.split_evenly((rows, cols));
        for (panel, area) in self.panels.iter().zip(cells.iter()) {
            self.draw_panel(panel, area)?;
        }
        if self.panels.is_empty() {
            grid_area.draw(&Text::new(
                "no policies".to_string(),
                (20, 20),
                text(14, MUTED).pos(Pos::new(HPos::Left, VPos::Top)),
            ))?;
        }
        draw_legend(&legend, 22, Some("backend"), &entries)
    }
}

impl TrafficShare {
    fn draw_panel<DB: DrawingBackend>(
        &self,
        panel: &Panel,
        area: &DrawingArea<DB, Shift>,
    ) -> DrawResult<DB> {
        let caption_style = text(15, INK);
        let caption = ellipsize(
            area,
            &panel.policy,
            &caption_style,
            area.dim_in_pixel().0 - 20,
        )?;
        let mut chart = ChartBuilder::on(area)
            .caption(caption, caption_style)
            .margin(8)
            .margin_right(18)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..self.time.end, 0f64..self.top)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("share of requests (%)")
            .x_labels(8)
            .y_labels(6)
            .x_label_formatter(&|x| fmt_num(*x))
            .y_label_formatter(&|y| fmt_num(*y))
            .styled(12, 12)
            .max_light_lines(1)
            .draw()?;
        self.time.draw_bands(&mut chart, area, (0.0, self.top))?;
        if panel.lines.iter().all(|l| l.is_empty()) {
            return note(&chart, (self.time.end / 2.0, self.top / 2.0), "no data", 13);
        }
        // Grey lines first, so the coloured ones are on top.
        for (b, runs) in panel.lines.iter().enumerate() {
            if self.colours[b].is_none() {
                for run in runs {
                    chart.draw_series(LineSeries::new(
                        run.iter().copied(),
                        QUIET_GREY.stroke_width(1),
                    ))?;
                }
            }
        }
        let even = 100.0 / self.backends as f64;
        chart.draw_series(DashedLineSeries::new(
            [(0.0, even), (self.time.end, even)],
            5,
            4,
            MUTED.stroke_width(1),
        ))?;
        for (b, runs) in panel.lines.iter().enumerate() {
            if let Some(c) = self.colours[b] {
                for run in runs {
                    chart.draw_series(LineSeries::new(run.iter().copied(), c.stroke_width(2)))?;
                }
            }
        }
        Ok(())
    }
}
