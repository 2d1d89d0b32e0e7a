//! A run's traffic share per backend: one small panel per policy with each backend's share of
//! the requests sent per second, over the shared time axis with its bands.
//!
//! A fleet of at most [`MAX_DRAWN`] backends has a line per backend. A larger one (100,000
//! backends took 25 s and a 19 MB SVG for this one chart) has lines for [`MAX_DRAWN`] of them,
//! the backends with a fault window first and then those with the most traffic, and one line for
//! the rest: their mean share per backend.

use lblab_record::RunSummary;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::time::{second_runs, trimmed, Points, TimeAxis};
use super::LEGEND;
use crate::chart::run_data::{backend_name, run_title, PolicyData};
use crate::render::plot::Styled as _;
use crate::render::{
    draw_legend, ellipsize, fault_colour, fmt_num, note, text, titled, with_legend, Chart,
    DrawResult, Entry, Mark, INK, MUTED, QUIET_GREY,
};

/// Most backends drawn as lines of their own; the others are drawn as one line.
pub(crate) const MAX_DRAWN: usize = 20;

/// Backends named in their own colour when none is faulty: the palette's distinct colours.
const NAMED: usize = 10;

struct Panel {
    policy: String,
    /// Per drawn backend (as [`TrafficShare::drawn`]): runs of (time s, share %) over the
    /// seconds with sends.
    lines: Vec<Vec<Points>>,
    /// The backends not drawn, as one line: their mean share per backend. Empty when every
    /// backend is drawn.
    others: Vec<Points>,
}

pub(crate) struct TrafficShare {
    title: String,
    panels: Vec<Panel>,
    /// Backend count, and per backend its colour if it has a fault window.
    backends: usize,
    colours: Vec<Option<RGBColor>>,
    /// Whether the coloured backends are the faulty ones (else the busiest, named).
    faults: bool,
    names: Vec<String>,
    /// The backends with a line of their own, by index: every one, or [`MAX_DRAWN`] of them.
    drawn: Vec<usize>,
    /// How many backends the others line stands for (0: none).
    others: usize,
    time: TimeAxis,
    /// Top of the share axis, %, the same for every panel.
    top: f64,
}

/// The top of the share axis: the largest share with some room, in steps of 10%.
fn panels_max(panels: &[Panel]) -> f64 {
    let max = panels
        .iter()
        .flat_map(|p| {
            p.lines
                .iter()
                .flatten()
                .flatten()
                .chain(p.others.iter().flatten())
        })
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
        let drawn = drawn_backends(&rows, backends, &faulted);
        // Without fault windows (a run against a real service, or a healthy fleet) the backends
        // with the most traffic get a colour and their name, as many as the palette tells apart.
        if faulted.is_empty() {
            for (k, b) in busiest(&rows, backends, &[])
                .into_iter()
                .take(NAMED)
                .enumerate()
            {
                colours[b] = Some(fault_colour(k));
            }
        }
        let mut is_drawn = vec![false; backends];
        for &b in &drawn {
            is_drawn[b] = true;
        }
        let others = backends - drawn.len();
        let panels: Vec<Panel> = data
            .iter()
            .zip(&rows)
            .map(|(r, rows)| {
                // A second without sends ends every backend's run.
                let share = |b: usize| {
                    move |row: &lblab_record::TimeseriesRow| {
                        let total: f64 = row.shares.iter().filter(|s| s.is_finite()).sum();
                        let s = row.shares.get(b).copied().filter(|s| s.is_finite());
                        (total > 0.0).then(|| 100.0 * s.unwrap_or(0.0))
                    }
                };
                let others_mean = |row: &lblab_record::TimeseriesRow| {
                    let total: f64 = row.shares.iter().filter(|s| s.is_finite()).sum();
                    let rest: f64 = row
                        .shares
                        .iter()
                        .enumerate()
                        .filter(|(b, s)| {
                            !is_drawn.get(*b).copied().unwrap_or(true) && s.is_finite()
                        })
                        .map(|(_, s)| s)
                        .sum();
                    (total > 0.0).then(|| 100.0 * rest / others as f64)
                };
                Panel {
                    policy: r.label.clone(),
                    lines: drawn.iter().map(|&b| second_runs(rows, share(b))).collect(),
                    others: if others == 0 {
                        Vec::new()
                    } else {
                        second_runs(rows, others_mean)
                    },
                }
            })
            .collect();
        let top = panels_max(&panels);
        TrafficShare {
            title: run_title(summary, "traffic share per backend"),
            top,
            panels,
            backends,
            faults: !summary.fault_windows.is_empty(),
            colours,
            names: (0..backends).map(|b| backend_name(summary, b)).collect(),
            drawn,
            others,
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
                let label = if self.faults {
                    format!("{} (faulty)", self.names[b])
                } else {
                    self.names[b].clone()
                };
                entries.push(Entry::new(label, *c, Mark::Line(3)));
            }
        }
        let quiet = self
            .drawn
            .iter()
            .filter(|&&b| self.colours[b].is_none())
            .count();
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
        if self.others > 0 {
            entries.push(Entry::new(
                format!("the other {} (mean share)", self.others),
                OTHERS_GREY,
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
        for (&b, runs) in self.drawn.iter().zip(&panel.lines) {
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
        for run in &panel.others {
            chart.draw_series(LineSeries::new(
                run.iter().copied(),
                OTHERS_GREY.stroke_width(2),
            ))?;
        }
        for (&b, runs) in self.drawn.iter().zip(&panel.lines) {
            if let Some(c) = self.colours[b] {
                for run in runs {
                    chart.draw_series(LineSeries::new(run.iter().copied(), c.stroke_width(2)))?;
                }
            }
        }
        Ok(())
    }
}

/// The colour of the line that stands for the backends not drawn.
const OTHERS_GREY: RGBColor = RGBColor(110, 110, 110);

/// The backends drawn as lines of their own: all of them up to [`MAX_DRAWN`]; else the
/// `faulted` ones first, then by traffic (the sum of their shares over every policy's seconds,
/// ties by index), [`MAX_DRAWN`] in all, in index order.
/// The backends not in `faulted`, the busiest first (the most traffic over every policy's
/// seconds; the lower index on a tie).
fn busiest(
    rows: &[Vec<&lblab_record::TimeseriesRow>],
    backends: usize,
    faulted: &[usize],
) -> Vec<usize> {
    let mut traffic = vec![0.0f64; backends];
    for row in rows.iter().flat_map(|r| r.iter()) {
        for (t, s) in traffic.iter_mut().zip(&row.shares) {
            if s.is_finite() {
                *t += s;
            }
        }
    }
    let mut by_traffic: Vec<usize> = (0..backends).filter(|b| !faulted.contains(b)).collect();
    by_traffic.sort_by(|&a, &b| traffic[b].total_cmp(&traffic[a]).then(a.cmp(&b)));
    by_traffic
}

fn drawn_backends(
    rows: &[Vec<&lblab_record::TimeseriesRow>],
    backends: usize,
    faulted: &[usize],
) -> Vec<usize> {
    if backends <= MAX_DRAWN {
        return (0..backends).collect();
    }
    let mut chosen: Vec<usize> = faulted.iter().copied().take(MAX_DRAWN).collect();
    let by_traffic = busiest(rows, backends, faulted);
    chosen.extend(by_traffic.into_iter().take(MAX_DRAWN - chosen.len()));
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::run_data::fixtures;
    use lblab_record::{FaultWindow, TimeseriesRow};

    /// A run of `n` backends where backend `b` gets a share growing with `b`.
    fn fleet(n: usize) -> (RunSummary, Vec<PolicyData>) {
        let mut summary = fixtures::summary(vec![FaultWindow {
            backend: 3,
            start_s: 2.0,
            end_s: 4.0,
        }]);
        summary.backends = (0..n).map(|b| format!("b{b}")).collect();
        let total: f64 = (1..=n).map(|b| b as f64).sum();
        let mut data = fixtures::data("p", 5.0);
        data.timeseries = (0..10)
            .map(|second| TimeseriesRow {
                policy: "p".into(),
                second,
                completed: 1000,
                p50_ms: 1.0,
                p99_ms: 2.0,
                shares: (1..=n).map(|b| b as f64 / total).collect(),
            })
            .collect();
        (summary, vec![data])
    }

    /// The chart's SVG, as written.
    fn svg_of(chart: &TrafficShare) -> String {
        let dir = std::env::temp_dir().join(format!(
            "lblab-share-{}-{}",
            std::process::id(),
            chart.backends
        ));
        let written =
            crate::render::write_named(&dir, &crate::ChartName::RUN[2], chart).expect("drawn");
        let file = written
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "svg"))
            .expect("an svg");
        let svg = std::fs::read_to_string(file).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        svg
    }

    #[test]
    fn without_faults_the_busiest_backends_are_named_in_their_own_colours() {
        let (mut summary, data) = fleet(MAX_DRAWN);
        summary.fault_windows.clear();
        let chart = TrafficShare::new(&summary, &data);
        let named: Vec<usize> = (0..MAX_DRAWN)
            .filter(|&b| chart.colours[b].is_some())
            .collect();
        // The ten busiest (the highest indices), by name and without "(faulty)".
        assert_eq!(named, (MAX_DRAWN - NAMED..MAX_DRAWN).collect::<Vec<_>>());
        let svg = svg_of(&chart);
        assert!(svg.contains("b19") && !svg.contains("(faulty)"), "named");
        assert!(svg.contains("other backends (10)"), "the rest, grey");
    }

    #[test]
    fn a_small_fleet_has_a_line_per_backend() {
        let (summary, data) = fleet(MAX_DRAWN);
        let chart = TrafficShare::new(&summary, &data);
        assert_eq!(chart.drawn, (0..MAX_DRAWN).collect::<Vec<_>>());
        assert_eq!(chart.others, 0);
        assert!(chart.panels[0].others.is_empty());
    }

    #[test]
    fn a_large_fleet_draws_the_faulty_and_busiest_backends_and_one_line_for_the_rest() {
        let n = 5_000;
        let (summary, data) = fleet(n);
        let chart = TrafficShare::new(&summary, &data);
        // The faulty backend 3, then the 19 busiest (the highest indices).
        let mut want = vec![3];
        want.extend(n - (MAX_DRAWN - 1)..n);
        assert_eq!(chart.drawn, want);
        assert_eq!(chart.others, n - MAX_DRAWN);
        assert_eq!(chart.panels[0].lines.len(), MAX_DRAWN);
        // The others' line is their mean share per backend.
        let total: f64 = (1..=n).map(|b| b as f64).sum();
        let rest: f64 = (1..=n)
            .filter(|b| !want.contains(&(b - 1)))
            .map(|b| b as f64 / total)
            .sum();
        let y = chart.panels[0].others[0][0].1;
        assert!(
            (y - 100.0 * rest / (n - MAX_DRAWN) as f64).abs() < 1e-9,
            "{y}"
        );
        // The drawing holds MAX_DRAWN + 1 share lines, not n: about the size of a small
        // fleet's.
        let svg = svg_of(&chart);
        let small = svg_of(&TrafficShare::new(&fleet(MAX_DRAWN).0, &fleet(MAX_DRAWN).1));
        assert!(
            svg.len() < 2 * small.len(),
            "{} against {} bytes",
            svg.len(),
            small.len()
        );
        assert!(svg.contains("the other 4980 (mean share)"), "legend");
    }
}
