//! The three charts of one run: latency percentile spectrum, p99 over time, traffic share.

use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use lblab_model::results::{file_stem, FaultWindow, PolicyResult, RunSummary, TimeseriesRow};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::render::{
    draw_legend, draw_line, fault_colour, fmt_num, grid_bold, grid_light, legend_width, line_mark,
    over_white, policy_style, text, titled, twin_label, twins, write_chart, Chart, DrawResult,
    Entry, LogAxis, Mark, PolicyStyle, Ticked, FAULT_ALPHA, FAULT_FILL, INK, MUTED, QUIET_GREY,
    TWIN_DASH, WARMUP_ALPHA, WARMUP_FILL,
};
use crate::ReportError;

/// Width and height of the single-plot charts.
const SIZE: (u32, u32) = (1000, 600);
/// Highest percentile on the spectrum, as a number of nines (4 = 99.99%).
const MAX_NINES: f64 = 4.0;
/// Rows of band labels above the p99 plot, at most; labels that do not fit are left out.
const MAX_LABEL_LEVELS: usize = 3;
/// Height of one row of band labels.
const LABEL_ROW: u32 = 15;

/// A fault span longer than this share of the run is drawn as a strip along the top of the
/// plot rather than shaded over all of it (shading all of the plot washes it out).
const LONG_SPAN: f64 = 0.5;
/// Height of that strip, pixels.
const STRIP_PX: i32 = 6;
/// Opacity of the strip.
const STRIP_ALPHA: f64 = 0.6;

/// One policy's data as the run charts use it: exactly what its run folder's files hold, so
/// that charts redrawn from the files ([`crate::redraw_run`]) are the charts the run drew.
#[derive(Debug, Clone)]
pub(crate) struct PolicyData {
    /// Policy label.
    pub label: String,
    /// Its rows of `timeseries.csv`, values at the precision written there.
    pub timeseries: Vec<TimeseriesRow>,
    /// Its latency histogram over the seconds after the warm-up: the sum of its `.hlog`
    /// intervals that start at or after the warm-up's end.
    pub histogram: Histogram<u64>,
}

/// `v` as `timeseries.csv` holds it: written with `decimals` decimals and read back.
fn as_written(v: f64, decimals: usize) -> f64 {
    if v.is_nan() {
        return f64::NAN;
    }
    format!("{v:.decimals$}").parse().unwrap_or(f64::NAN)
}

impl PolicyData {
    /// The data of `result` as its files would hold it.
    pub(crate) fn from_result(
        dir: &Path,
        summary: &RunSummary,
        result: &PolicyResult,
    ) -> Result<Self, ReportError> {
        let label = result.summary.policy.clone();
        let file = dir.join(format!("{}.hlog", file_stem(&label)));
        let timeseries = result
            .timeseries
            .iter()
            .map(|row| TimeseriesRow {
                policy: row.policy.clone(),
                second: row.second,
                completed: row.completed,
                p50_ms: as_written(row.p50_ms, 3),
                p99_ms: as_written(row.p99_ms, 3),
                shares: row.shares.iter().map(|s| as_written(*s, 4)).collect(),
            })
            .collect();
        Ok(PolicyData {
            histogram: histogram_from_hlog(&result.hlog, summary.warmup_s, &file)?,
            label,
            timeseries,
        })
    }
}

/// The sum of the intervals of an hlog (the interval-log format [`lblab_model::results`]
/// writes: `start,length,max,base64 of a V2-compressed histogram` per line) that start at or
/// after `from_s` seconds. `file` names the log in errors.
pub(crate) fn histogram_from_hlog(
    text: &str,
    from_s: f64,
    file: &Path,
) -> Result<Histogram<u64>, ReportError> {
    use base64::Engine as _;
    let invalid = |line: usize, message: String| ReportError::InvalidInput {
        file: file.to_path_buf(),
        message: format!("line {line}: {message}"),
    };
    let mut total: Histogram<u64> = Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
        .map_err(|e| invalid(0, e.to_string()))?;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('"') {
            continue;
        }
        let fields: Vec<&str> = line.splitn(4, ',').collect();
        let [start, _, _, encoded] = fields[..] else {
            return Err(invalid(n + 1, "not `start,length,max,histogram`".into()));
        };
        let start: f64 = start
            .parse()
            .map_err(|_| invalid(n + 1, format!("start {start:?} is not a number")))?;
        if start < from_s {
            continue;
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|e| invalid(n + 1, format!("histogram is not base64: {e}")))?;
        let h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| invalid(n + 1, format!("histogram cannot be decoded: {e:?}")))?;
        total
            .add(&h)
            .map_err(|e| invalid(n + 1, format!("histogram out of range: {e:?}")))?;
    }
    Ok(total)
}

/// The seconds of `rows` worth drawing: from the first to the last second with sends (rows
/// after the last send hold only the stragglers of the last second), without a first or last
/// second that completed fewer than half the median second's requests (a partial second: the
/// run started or stopped inside it). `None` when no row has data.
pub(crate) fn whole_seconds(rows: &[TimeseriesRow]) -> Option<(u64, u64)> {
    let sends = |r: &TimeseriesRow| r.shares.iter().filter(|s| s.is_finite()).sum::<f64>() > 0.0;
    let any_sends = rows.iter().any(sends);
    let data: Vec<&TimeseriesRow> = rows
        .iter()
        .filter(|r| if any_sends { sends(r) } else { r.completed > 0 })
        .collect();
    let mut counts: Vec<u64> = data
        .iter()
        .map(|r| r.completed)
        .filter(|c| *c > 0)
        .collect();
    counts.sort_unstable();
    let median = counts.get(counts.len() / 2).copied().unwrap_or(0) as f64;
    let partial = |r: &TimeseriesRow| (r.completed as f64) < median / 2.0;
    let (mut first, mut last) = (0, data.len().checked_sub(1)?);
    if data.len() > 2 && partial(data[first]) {
        first += 1;
    }
    if last > first + 1 && partial(data[last]) {
        last -= 1;
    }
    Some((data[first].second, data[last].second))
}

/// Each policy's rows within its [`whole_seconds`].
fn trimmed(data: &[PolicyData]) -> Vec<Vec<&TimeseriesRow>> {
    data.iter()
        .map(|d| match whole_seconds(&d.timeseries) {
            Some((a, b)) => d
                .timeseries
                .iter()
                .filter(|r| (a..=b).contains(&r.second))
                .collect(),
            None => Vec::new(),
        })
        .collect()
}

/// Writes the charts of one run into `dir` (created if missing) and returns the paths written:
///
/// - `spectrum.{png,svg}`: the latency percentile spectrum of every policy on one plot. x is the
///   percentile on a log "nines" axis from 0% to 99.99% (so 90%, 99%, 99.9% are equally spaced),
///   y the latency in ms on a log scale; one line per policy, from the whole-run histogram
///   (after warm-up).
/// - `p99_over_time.{png,svg}`: each policy's p99 per second (by completion time, warm-up
///   included) on a log scale, with the fault windows shaded red (overlapping windows merged) and
///   labelled with their backends above the plot, and the warm-up shaded grey. Seconds without
///   completions leave a gap.
/// - `traffic_share.{png,svg}`: one small panel per policy with each backend's share of the
///   requests sent per second. Backends that have a fault window are drawn in colour and named
///   in the legend, the others in light grey; fault windows and the warm-up are shaded as in
///   `p99_over_time`.
///
/// The per-second charts leave out a first or last second that is partial (the run started or
/// stopped inside it, see `whole_seconds`), and the seconds after the last send. A fault window
/// longer than half the run is drawn as a strip along the top of the plot, not shaded over it.
/// A policy whose line lies exactly on an earlier policy's is drawn dashed over it, and its
/// legend entry says `(= other)`.
///
/// Titles are `"<scenario> (<mode>) — <subject>"`. A policy has the same colour (and dash) in
/// every chart, by its label: a fixed table for lblab's policies, variants such as
/// `peak_ewma(with_replacement)` in their base's colour with a dash, and a colour by the label's
/// hash for any other.
///
/// The charts are drawn from what the run's files hold (`timeseries.csv` at its precision, the
/// spectrum from the `.hlog` intervals after the warm-up), so that
/// [`redraw_run`](crate::redraw_run) gives byte-identical charts from a results folder.
pub fn write_run_charts(
    dir: &Path,
    summary: &RunSummary,
    results: &[PolicyResult],
) -> Result<Vec<PathBuf>, ReportError> {
    let data = results
        .iter()
        .map(|r| PolicyData::from_result(dir, summary, r))
        .collect::<Result<Vec<_>, _>>()?;
    write_run_data(dir, summary, &data)
}

/// [`write_run_charts`] from the data as the files hold it.
pub(crate) fn write_run_data(
    dir: &Path,
    summary: &RunSummary,
    data: &[PolicyData],
) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = Vec::new();
    written.extend(write_chart(
        &dir.join("spectrum"),
        &Spectrum::new(summary, data),
    )?);
    written.extend(write_chart(
        &dir.join("p99_over_time"),
        &P99OverTime::new(summary, data),
    )?);
    written.extend(write_chart(
        &dir.join("traffic_share"),
        &TrafficShare::new(summary, data),
    )?);
    Ok(written)
}

/// `"<scenario> (<mode>) — <subject>"`, marked when the run was interrupted.
fn run_title(summary: &RunSummary, subject: &str) -> String {
    let partial = if summary.partial {
        " (partial run)"
    } else {
        ""
    };
    format!(
        "{} ({}) — {}{}",
        summary.scenario, summary.mode, subject, partial
    )
}

/// Name of backend `i`.
fn backend_name(summary: &RunSummary, i: usize) -> String {
    summary
        .backends
        .get(i)
        .cloned()
        .unwrap_or_else(|| format!("backend {i}"))
}

/// The end of the time axis, in seconds: the end of the last whole second with data, or the
/// warm-up and fault windows when there is none.
fn run_end(summary: &RunSummary, rows: &[Vec<&TimeseriesRow>]) -> f64 {
    let data = rows
        .iter()
        .flatten()
        .map(|row| row.second as f64 + 1.0)
        .fold(0.0, f64::max);
    if data > 0.0 {
        return data;
    }
    let faults = summary
        .fault_windows
        .iter()
        .map(|w| w.end_s)
        .filter(|e| e.is_finite())
        .fold(0.0, f64::max);
    data.max(faults).max(summary.warmup_s).max(1.0)
}

/// A stretch of time in which at least one backend has a fault: overlapping (or touching) fault
/// windows merged, so that shading never gets darker where windows of several backends overlap.
#[derive(Debug, Clone, PartialEq)]
struct FaultSpan {
    start: f64,
    end: f64,
    /// The backends with a window in the span, by index, without repeats.
    backends: Vec<usize>,
}

/// The fault windows clipped to `0..end` (empty ones dropped) and merged into spans, in time
/// order.
fn fault_spans(windows: &[FaultWindow], end: f64) -> Vec<FaultSpan> {
    let mut clipped: Vec<FaultWindow> = windows
        .iter()
        .map(|w| FaultWindow {
            backend: w.backend,
            start_s: w.start_s.max(0.0),
            end_s: w.end_s.min(end),
        })
        .filter(|w| w.end_s > w.start_s)
        .collect();
    clipped.sort_by(|a, b| {
        a.start_s
            .total_cmp(&b.start_s)
            .then(a.backend.cmp(&b.backend))
    });
    let mut spans: Vec<FaultSpan> = Vec::new();
    for w in clipped {
        match spans.last_mut() {
            Some(last) if w.start_s <= last.end => {
                last.end = last.end.max(w.end_s);
                if !last.backends.contains(&w.backend) {
                    last.backends.push(w.backend);
                }
            }
            _ => spans.push(FaultSpan {
                start: w.start_s,
                end: w.end_s,
                backends: vec![w.backend],
            }),
        }
    }
    for span in &mut spans {
        span.backends.sort_unstable();
    }
    spans
}

impl FaultSpan {
    /// Whether the span covers so much of the run (`end` seconds) that it is drawn as a strip.
    fn long(&self, end: f64) -> bool {
        self.end - self.start > LONG_SPAN * end
    }
}

/// Draws fault spans on `chart` (whose y range is `lo..hi`, top `hi`) over `plot`: short ones
/// shaded over the whole height, long ones as a strip along the top.
fn draw_spans<'a, DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    plot: &DrawingArea<DB, Shift>,
    spans: impl Iterator<Item = &'a FaultSpan>,
    end: f64,
    (lo, hi): (f64, f64),
) -> DrawResult<DB> {
    let base = plot.get_base_pixel();
    for span in spans {
        if span.long(end) {
            let (x0, y0) = chart.backend_coord(&(span.start, hi));
            let (x1, _) = chart.backend_coord(&(span.end, hi));
            let rel = |x: i32, y: i32| (x - base.0, y - base.1);
            plot.draw(&Rectangle::new(
                [rel(x0, y0), rel(x1, y0 + STRIP_PX)],
                over_white(FAULT_FILL, STRIP_ALPHA).filled(),
            ))?;
        } else {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(span.start, lo), (span.end, hi)],
                FAULT_FILL.mix(FAULT_ALPHA).filled(),
            )))?;
        }
    }
    Ok(())
}

/// The label of a span: its backends' names, at most three and a count of the rest.
fn span_label(summary: &RunSummary, span: &FaultSpan) -> String {
    let names: Vec<String> = span
        .backends
        .iter()
        .take(3)
        .map(|&b| backend_name(summary, b))
        .collect();
    let rest = span.backends.len().saturating_sub(3);
    if rest > 0 {
        format!("{} +{rest} more", names.join(", "))
    } else {
        names.join(", ")
    }
}

/// A plot area and a legend area.
type Split<DB> = (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>);

/// Consecutive (x, y) points drawn as one line.
type Points = Vec<(f64, f64)>;

/// One policy's data on a chart; its colour and dash come from its label.
struct Series<T> {
    label: String,
    data: T,
    style: PolicyStyle,
    /// The label of an earlier series with the same data, which this one is drawn over.
    twin: Option<String>,
}

impl<T: PartialEq> Series<T> {
    fn new(label: &str, data: T) -> Self {
        Series {
            label: label.to_string(),
            data,
            style: policy_style(label),
            twin: None,
        }
    }

    /// The series with each one that repeats an earlier one's (non-empty) data marked as its
    /// twin, and dashed so that the earlier one shows through.
    fn with_twins(mut series: Vec<Self>, empty: impl Fn(&T) -> bool) -> Vec<Self> {
        let t = twins(&series, |a, b| !empty(&a.data) && a.data == b.data);
        for (i, j) in t.into_iter().enumerate() {
            if let Some(j) = j {
                series[i].twin = Some(series[j].label.clone());
                series[i].style.dash = Some(TWIN_DASH);
            }
        }
        series
    }

    /// The legend entry, marked when it has no data or lies on another.
    fn entry(&self, empty: bool) -> Entry {
        let label = match (&self.twin, empty) {
            (_, true) => format!("{} (no data)", self.label),
            (Some(twin), false) => twin_label(&self.label, twin),
            (None, false) => self.label.clone(),
        };
        Entry::new(label, self.style.colour, line_mark(self.style.dash))
    }
}

/// Splits the left part of `area` for a plot and the right part for a legend of `entries`.
fn with_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: Option<&str>,
    entries: &[Entry],
) -> Result<Split<DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let w = legend_width(area, title, entries, 150, 330)?;
    let (plot, legend) = area.split_horizontally(area.dim_in_pixel().0 - w);
    Ok((plot, legend))
}

// ---------------------------------------------------------------------------------------------
// Spectrum

struct Spectrum {
    title: String,
    /// Per policy: points (nines, ms). Policies without data have no points.
    lines: Vec<Series<Points>>,
    axis: LogAxis,
}

impl Spectrum {
    fn new(summary: &RunSummary, data: &[PolicyData]) -> Self {
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
        let (plot, legend) = with_legend(&body, Some("policy"), &entries)?;
        let log2 = 2f64.log10();
        let bold = vec![0.0, log2, 1.0, 2.0, 3.0, 4.0];
        let light = vec![2.0 * log2, 1.0 + log2, 2.0 + log2, 3.0 + log2];
        let mut chart = ChartBuilder::on(&plot)
            .margin_top(10)
            .margin_left(10)
            .margin_right(25)
            .margin_bottom(5)
            .x_label_area_size(46)
            .y_label_area_size(72)
            .build_cartesian_2d(
                Ticked::linear(0.0..MAX_NINES, bold, light),
                Ticked::log(&self.axis),
            )?;
        chart
            .configure_mesh()
            .x_desc("percentile (log scale of nines)")
            .y_desc("latency (ms, log scale)")
            .x_label_formatter(&|x| fmt_percentile(*x))
            .y_label_formatter(&|y| fmt_num(*y))
            .label_style(text(14, INK))
            .axis_desc_style(text(15, INK))
            .bold_line_style(grid_bold())
            .light_line_style(grid_light())
            .axis_style(MUTED.stroke_width(1))
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

// ---------------------------------------------------------------------------------------------
// p99 over time

struct P99OverTime {
    title: String,
    /// Per policy: runs of consecutive seconds with data (time s, p99 ms).
    lines: Vec<Series<Vec<Points>>>,
    axis: LogAxis,
    end: f64,
    warmup: f64,
    /// Fault spans, with their labels.
    spans: Vec<(FaultSpan, String)>,
}

impl P99OverTime {
    fn new(summary: &RunSummary, data: &[PolicyData]) -> Self {
        let rows = trimmed(data);
        let end = run_end(summary, &rows);
        let mut min = f64::INFINITY;
        let mut max = 0.0f64;
        let lines = data
            .iter()
            .zip(&rows)
            .map(|(r, rows)| {
                let mut runs: Vec<Points> = Vec::new();
                let mut last: Option<u64> = None;
                for row in rows {
                    let y = row.p99_ms;
                    if !(y.is_finite() && y > 0.0) {
                        last = None;
                        continue;
                    }
                    min = min.min(y);
                    max = max.max(y);
                    if last != Some(row.second.wrapping_sub(1)) || runs.is_empty() {
                        runs.push(Vec::new());
                    }
                    // The value of second s describes s..s+1: plot it in the middle.
                    runs.last_mut()
                        .expect("pushed above")
                        .push((row.second as f64 + 0.5, y));
                    last = Some(row.second);
                }
                Series::new(&r.label, runs)
            })
            .collect();
        let lines = Series::with_twins(lines, Vec::is_empty);
        let spans = fault_spans(&summary.fault_windows, end)
            .into_iter()
            .map(|span| {
                let label = span_label(summary, &span);
                (span, label)
            });
        P99OverTime {
            title: run_title(summary, "p99 latency per second"),
            lines,
            axis: LogAxis::new(min, max),
            end,
            warmup: summary.warmup_s.clamp(0.0, end),
            spans: spans.collect(),
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
        push_band_entries(
            &mut entries,
            self.warmup > 0.0,
            self.spans.iter().map(|(s, _)| s),
            self.end,
        );
        let (plot, legend) = with_legend(&body, Some("policy"), &entries)?;
        let (lo, hi) = (self.axis.range.start, self.axis.range.end);
        let build = |top: u32| {
            ChartBuilder::on(&plot)
                .margin_top(top)
                .margin_left(10)
                .margin_right(25)
                .margin_bottom(5)
                .x_label_area_size(46)
                .y_label_area_size(72)
                .build_cartesian_2d(0f64..self.end, Ticked::log(&self.axis))
        };

        // Band labels go in a strip above the plot (never over the data): the warm-up, and the
        // backends of each fault span, stacked in up to MAX_LABEL_LEVELS rows.
        let mut labels: Vec<(f64, String, RGBColor)> = Vec::new();
        if self.warmup > 0.0 {
            labels.push((0.0, "warm-up".to_string(), RGBColor(90, 90, 90)));
        }
        for (span, label) in &self.spans {
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
            .label_style(text(14, INK))
            .axis_desc_style(text(15, INK))
            .bold_line_style(grid_bold())
            .light_line_style(grid_light())
            .axis_style(MUTED.stroke_width(1))
            .draw()?;

        if self.warmup > 0.0 {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, lo), (self.warmup, hi)],
                WARMUP_FILL.mix(WARMUP_ALPHA).filled(),
            )))?;
        }
        draw_spans(
            &mut chart,
            &plot,
            self.spans.iter().map(|(s, _)| s),
            self.end,
            (lo, hi),
        )?;
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

// ---------------------------------------------------------------------------------------------
// Traffic share

struct Panel {
    policy: String,
    /// Per backend: runs of (time s, share %) over the seconds with sends.
    lines: Vec<Vec<Vec<(f64, f64)>>>,
}

struct TrafficShare {
    title: String,
    panels: Vec<Panel>,
    /// Backend count, and per backend its colour if it has a fault window.
    backends: usize,
    colours: Vec<Option<RGBColor>>,
    names: Vec<String>,
    end: f64,
    warmup: f64,
    spans: Vec<FaultSpan>,
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
    fn new(summary: &RunSummary, data: &[PolicyData]) -> Self {
        let rows = trimmed(data);
        let end = run_end(summary, &rows);
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
                let mut lines: Vec<Vec<Vec<(f64, f64)>>> = vec![Vec::new(); backends];
                let mut last: Option<u64> = None;
                for row in rows {
                    let total: f64 = row.shares.iter().filter(|s| s.is_finite()).sum();
                    if total <= 0.0 {
                        last = None;
                        continue;
                    }
                    let new_run = last != Some(row.second.wrapping_sub(1));
                    for (b, line) in lines.iter_mut().enumerate() {
                        let s = row
                            .shares
                            .get(b)
                            .copied()
                            .filter(|s| s.is_finite())
                            .unwrap_or(0.0);
                        if new_run || line.is_empty() {
                            line.push(Vec::new());
                        }
                        line.last_mut()
                            .expect("pushed above")
                            .push((row.second as f64 + 0.5, 100.0 * s));
                    }
                    last = Some(row.second);
                }
                Panel {
                    policy: r.label.clone(),
                    lines,
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
            end,
            warmup: summary.warmup_s.clamp(0.0, end),
            spans: fault_spans(&summary.fault_windows, end),
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
        push_band_entries(&mut entries, self.warmup > 0.0, self.spans.iter(), self.end);
        let (grid_area, legend) = with_legend(&body, Some("backend"), &entries)?;
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
        let caption = crate::render::ellipsize(
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
            .build_cartesian_2d(0f64..self.end, 0f64..self.top)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("share of requests (%)")
            .x_labels(8)
            .y_labels(6)
            .x_label_formatter(&|x| fmt_num(*x))
            .y_label_formatter(&|y| fmt_num(*y))
            .label_style(text(12, INK))
            .axis_desc_style(text(12, INK))
            .bold_line_style(grid_bold())
            .light_line_style(grid_light())
            .max_light_lines(1)
            .axis_style(MUTED.stroke_width(1))
            .draw()?;
        if self.warmup > 0.0 {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, 0.0), (self.warmup, self.top)],
                WARMUP_FILL.mix(WARMUP_ALPHA).filled(),
            )))?;
        }
        draw_spans(
            &mut chart,
            area,
            self.spans.iter(),
            self.end,
            (0.0, self.top),
        )?;
        if panel.lines.iter().all(|l| l.is_empty()) {
            chart.plotting_area().draw(
                &(EmptyElement::at((self.end / 2.0, self.top / 2.0))
                    + Text::new(
                        "no data",
                        (0, 0),
                        text(13, MUTED).pos(Pos::new(HPos::Center, VPos::Center)),
                    )),
            )?;
            return Ok(());
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
            [(0.0, even), (self.end, even)],
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

/// Legend entries for the bands a time chart draws: the warm-up, the shaded fault windows and
/// the long ones drawn as a strip at the top.
fn push_band_entries<'a>(
    entries: &mut Vec<Entry>,
    warmup: bool,
    spans: impl Iterator<Item = &'a FaultSpan>,
    end: f64,
) {
    if warmup {
        entries.push(Entry::new(
            "warm-up",
            over_white(WARMUP_FILL, WARMUP_ALPHA),
            Mark::Swatch,
        ));
    }
    let (mut short, mut long) = (false, false);
    for s in spans {
        if s.long(end) {
            long = true;
        } else {
            short = true;
        }
    }
    if short {
        entries.push(Entry::new(
            "fault window",
            over_white(FAULT_FILL, FAULT_ALPHA),
            Mark::Swatch,
        ));
    }
    if long {
        entries.push(Entry::new(
            "fault window (strip at top)",
            over_white(FAULT_FILL, STRIP_ALPHA),
            Mark::Swatch,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(second: u64, completed: u64, sends: bool) -> TimeseriesRow {
        TimeseriesRow {
            policy: "p".into(),
            second,
            completed,
            p50_ms: 1.0,
            p99_ms: 2.0,
            shares: if sends {
                vec![0.5, 0.5]
            } else {
                vec![0.0, 0.0]
            },
        }
    }

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
        assert_eq!(chart.end, 9.0);
    }

    fn summary(fault_windows: Vec<FaultWindow>) -> RunSummary {
        RunSummary {
            scenario: "t".into(),
            mode: lblab_model::results::Mode::Sim,
            seed: 1,
            partial: false,
            backends: vec!["a".into(), "b".into()],
            fault_windows,
            warmup_s: 0.0,
            measured_s: 0.0,
            rows: vec![],
            notes: vec![],
            incidents: vec![],
        }
    }

    fn data(label: &str, p99: f64) -> PolicyData {
        let mut timeseries: Vec<_> = (0..10).map(|s| row(s, 1000, true)).collect();
        for r in &mut timeseries {
            r.policy = label.into();
            r.p99_ms = p99;
        }
        let mut histogram = Histogram::new(3).unwrap();
        histogram.record((p99 * 1e6) as u64).unwrap();
        PolicyData {
            label: label.into(),
            timeseries,
            histogram,
        }
    }

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
    fn an_identical_series_is_dashed_and_says_so() {
        let s = summary(vec![]);
        let d = [
            data("peak_ewma", 2.0),
            data("od(peak_ewma)", 2.0),
            data("round_robin", 5.0),
        ];
        for entries in [
            Spectrum::new(&s, &d)
                .lines
                .iter()
                .map(|l| (l.entry(false).label, l.style.dash))
                .collect::<Vec<_>>(),
            P99OverTime::new(&s, &d)
                .lines
                .iter()
                .map(|l| (l.entry(false).label, l.style.dash))
                .collect(),
        ] {
            assert_eq!(entries[0], ("peak_ewma".to_string(), None));
            assert_eq!(
                entries[1],
                ("od(peak_ewma) (= peak_ewma)".to_string(), Some(TWIN_DASH))
            );
            assert_eq!(entries[2], ("round_robin".to_string(), None));
        }
    }

    #[test]
    fn long_fault_windows_are_strips() {
        let w = |start_s, end_s| FaultWindow {
            backend: 1,
            start_s,
            end_s,
        };
        let spans = fault_spans(&[w(0.0, 30.0)], 30.0);
        assert!(spans[0].long(30.0));
        assert!(!fault_spans(&[w(10.0, 20.0)], 30.0)[0].long(30.0));
        let mut entries = Vec::new();
        push_band_entries(&mut entries, false, spans.iter(), 30.0);
        assert_eq!(entries[0].label, "fault window (strip at top)");
    }

    #[test]
    fn data_as_written_rounds_like_the_csv() {
        assert_eq!(as_written(2.12345, 3), 2.123);
        assert!(as_written(f64::NAN, 3).is_nan());
    }

    #[test]
    fn overlapping_fault_windows_merge_into_one_span() {
        let w = |backend, start_s, end_s| FaultWindow {
            backend,
            start_s,
            end_s,
        };
        let windows = [
            w(2, 10.0, 20.0),
            w(0, 15.0, 25.0),
            w(1, 40.0, f64::INFINITY),
            w(3, -5.0, 0.0),
            w(2, 12.0, 18.0),
        ];
        let spans = fault_spans(&windows, 60.0);
        assert_eq!(
            spans,
            vec![
                FaultSpan {
                    start: 10.0,
                    end: 25.0,
                    backends: vec![0, 2]
                },
                FaultSpan {
                    start: 40.0,
                    end: 60.0,
                    backends: vec![1]
                },
            ]
        );
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
