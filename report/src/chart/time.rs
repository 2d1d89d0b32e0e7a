//! The time axis the per-second charts of a run share ([`p99_over_time`](super::p99_over_time),
//! [`traffic_share`](super::traffic_share)): which seconds are drawn, where the axis ends, the
//! warm-up and fault-window bands over the plot and their legend entries, and each line's runs
//! of consecutive seconds.

use lblab_record::{FaultWindow, RunSummary, TimeseriesRow};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::chart::run_data::{backend_name, PolicyData};
use crate::render::{
    over_white, DrawResult, Entry, Mark, FAULT_ALPHA, FAULT_FILL, WARMUP_ALPHA, WARMUP_FILL,
};

/// A fault span longer than this share of the run is drawn as a strip along the top of the
/// plot rather than shaded over all of it (shading all of the plot washes it out).
const LONG_SPAN: f64 = 0.5;
/// Height of that strip, pixels.
const STRIP_PX: i32 = 6;
/// Opacity of the strip.
const STRIP_ALPHA: f64 = 0.6;

/// Consecutive (x, y) points drawn as one line.
pub(crate) type Points = Vec<(f64, f64)>;

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
pub(crate) fn trimmed(data: &[PolicyData]) -> Vec<Vec<&TimeseriesRow>> {
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

/// The time axis of a run's per-second charts, `0..end` seconds, and the bands drawn over it.
#[derive(Debug, Clone)]
pub(crate) struct TimeAxis {
    /// The end of the axis, seconds (see [`run_end`]).
    pub end: f64,
    /// The end of the warm-up, within the axis (0: none).
    pub warmup: f64,
    /// The fault spans, clipped to the axis.
    pub spans: Vec<FaultSpan>,
}

impl TimeAxis {
    /// The axis of `summary`'s run drawn with `rows` (each policy's [`trimmed`] rows).
    pub(crate) fn new(summary: &RunSummary, rows: &[Vec<&TimeseriesRow>]) -> Self {
        let end = run_end(summary, rows);
        TimeAxis {
            end,
            warmup: summary.warmup_s.clamp(0.0, end),
            spans: fault_spans(&summary.fault_windows, end),
        }
    }

    /// Legend entries for the bands: the warm-up, the shaded fault windows and the long ones
    /// drawn as a strip at the top.
    pub(crate) fn push_band_entries(&self, entries: &mut Vec<Entry>) {
        push_band_entries(entries, self.warmup > 0.0, self.spans.iter(), self.end)
    }

    /// Draws the warm-up and the fault spans on `chart` (whose y range is `lo..hi`) over `plot`.
    pub(crate) fn draw_bands<DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
        plot: &DrawingArea<DB, Shift>,
        (lo, hi): (f64, f64),
    ) -> DrawResult<DB> {
        if self.warmup > 0.0 {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, lo), (self.warmup, hi)],
                WARMUP_FILL.mix(WARMUP_ALPHA).filled(),
            )))?;
        }
        draw_spans(chart, plot, self.spans.iter(), self.end, (lo, hi))
    }
}

/// Most time buckets a per-second series is drawn with: a chart is about a thousand pixels wide,
/// so a longer run is drawn as buckets of several seconds ([`second_runs`]), each by its lowest
/// and highest value. A year-long run of 100 backends otherwise drew a traffic-share chart of
/// over a gigabyte.
pub(crate) const MAX_BUCKETS: u64 = 1000;

/// The runs of consecutive seconds of `rows` that have a `value`, as points in the middle of
/// each second (the value of second s describes s..s+1); a second without one ends a run.
///
/// When `rows` span more than [`MAX_BUCKETS`] seconds, the seconds are grouped into that many
/// buckets of equal width and each bucket with a value gives two points, its lowest and its
/// highest, in time order (a spike survives, as it would on screen); a bucket without any value
/// ends a run. A series thus has at most `2 × MAX_BUCKETS` points however long the run.
pub(crate) fn second_runs(
    rows: &[&TimeseriesRow],
    value: impl Fn(&TimeseriesRow) -> Option<f64>,
) -> Vec<Points> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Vec::new();
    };
    let span = last.second.saturating_sub(first.second) + 1;
    let width = span.div_ceil(MAX_BUCKETS).max(1);
    if width == 1 {
        return each_second(rows, value);
    }
    // Per bucket with a value: its index, its lowest and its highest point.
    type Point = (f64, f64);
    let mut buckets: Vec<(u64, Point, Point)> = Vec::new();
    for row in rows {
        let Some(y) = value(row) else { continue };
        let bucket = row.second.saturating_sub(first.second) / width;
        let point = (row.second as f64 + 0.5, y);
        match buckets.last_mut() {
            Some((b, low, high)) if *b == bucket => {
                if y < low.1 {
                    *low = point;
                }
                if y > high.1 {
                    *high = point;
                }
            }
            _ => buckets.push((bucket, point, point)),
        }
    }
    let mut runs: Vec<Points> = Vec::new();
    let mut previous: Option<u64> = None;
    for (bucket, low, high) in buckets {
        if previous != Some(bucket.wrapping_sub(1)) || runs.is_empty() {
            runs.push(Vec::new());
        }
        let run = runs.last_mut().expect("pushed above");
        let (a, b) = if low.0 <= high.0 {
            (low, high)
        } else {
            (high, low)
        };
        run.push(a);
        if b != a {
            run.push(b);
        }
        previous = Some(bucket);
    }
    runs
}

/// [`second_runs`] a point per second.
fn each_second(
    rows: &[&TimeseriesRow],
    value: impl Fn(&TimeseriesRow) -> Option<f64>,
) -> Vec<Points> {
    let mut runs: Vec<Points> = Vec::new();
    let mut last: Option<u64> = None;
    for row in rows {
        let Some(y) = value(row) else {
            last = None;
            continue;
        };
        if last != Some(row.second.wrapping_sub(1)) || runs.is_empty() {
            runs.push(Vec::new());
        }
        runs.last_mut()
            .expect("pushed above")
            .push((row.second as f64 + 0.5, y));
        last = Some(row.second);
    }
    runs
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
pub(crate) struct FaultSpan {
    pub start: f64,
    pub end: f64,
    /// The backends with a window in the span, by index, without repeats.
    pub backends: Vec<usize>,
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
pub(crate) fn span_label(summary: &RunSummary, span: &FaultSpan) -> String {
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

    #[test]
    fn a_long_series_is_drawn_in_buckets_that_keep_its_extremes() {
        use crate::chart::run_data::fixtures::row;
        // A million seconds with a spike at second 777,777 and a gap of 10,000 seconds.
        let rows: Vec<TimeseriesRow> = (0..1_000_000u64)
            .filter(|s| !(500_000..510_000).contains(s))
            .map(|s| {
                let mut r = row(s, 1, true);
                r.p99_ms = if s == 777_777 {
                    900.0
                } else {
                    2.0 + (s % 3) as f64
                };
                r
            })
            .collect();
        let refs: Vec<&TimeseriesRow> = rows.iter().collect();
        let runs = second_runs(&refs, |r| Some(r.p99_ms));
        let points: usize = runs.iter().map(Vec::len).sum();
        assert!(points <= 2 * MAX_BUCKETS as usize, "{points} points");
        assert_eq!(runs.len(), 2, "the gap of 10 buckets ends a run");
        let all: Vec<(f64, f64)> = runs.concat();
        assert!(all.contains(&(777_777.5, 900.0)), "the spike is drawn");
        assert!(all.iter().any(|p| p.1 == 2.0) && all.iter().any(|p| p.1 == 4.0));
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "in time order");
        // Up to MAX_BUCKETS seconds: a point per second, as before.
        let short: Vec<&TimeseriesRow> = rows[..MAX_BUCKETS as usize].iter().collect();
        let runs = second_runs(&short, |r| Some(r.p99_ms));
        assert_eq!(runs.concat().len(), MAX_BUCKETS as usize);
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
}
