//! Axes and numbers: explicitly ticked linear and log axes, 1-2-5 log ranges, axis numbers.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;

/// An f64 axis, linear or logarithmic, with the labelled (`bold`) and unlabelled (`light`) ticks
/// given explicitly. (plotters' `with_key_points` on an f64 range cannot take a label formatter.)
#[derive(Debug, Clone)]
pub(crate) struct Ticked {
    range: Range<f64>,
    log: bool,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ticked {
    /// A linear axis over `range`.
    pub(crate) fn linear(range: Range<f64>, bold: Vec<f64>, light: Vec<f64>) -> Self {
        Ticked {
            range,
            log: false,
            bold,
            light,
        }
    }

    /// The log axis of `axis`.
    pub(crate) fn log(axis: &LogAxis) -> Self {
        Ticked {
            range: axis.range.clone(),
            log: true,
            bold: axis.ticks.clone(),
            light: axis.minor.clone(),
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = |x: f64| if self.log { x.ln() } else { x };
        let (a, b) = (f(self.range.start), f(self.range.end));
        let frac = (f(*v) - a) / (b - a);
        // Far outside the range (or NaN, or log of 0): pin well outside the plot, never overflow.
        let frac = if frac.is_nan() {
            -1.0
        } else {
            frac.clamp(-1.0, 2.0)
        };
        limit.0 + ((limit.1 - limit.0) as f64 * frac + 1e-3).floor() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// A log-scale latency axis for values in `[min, max]` (both > 0): the range snapped outwards to
/// 1-2-5 steps, the labelled ticks, and the unlabelled minor ticks.
pub(crate) struct LogAxis {
    pub range: Range<f64>,
    pub ticks: Vec<f64>,
    pub minor: Vec<f64>,
}

impl LogAxis {
    /// An axis that shows `min..max` with a little room above and below.
    pub(crate) fn new(min: f64, max: f64) -> Self {
        let (min, max) = if min.is_finite() && max.is_finite() && min > 0.0 && max >= min {
            (min, max)
        } else {
            (1.0, 10.0)
        };
        // 1-2-5 steps around the data, with at least a factor 2.5 of range in total.
        let lo = step_125_at_or_below(min / 1.08);
        let mut hi = step_125_at_or_above(max * 1.08);
        if hi / lo < 2.5 {
            hi = step_125_at_or_above(lo * 2.5);
        }
        let decades = (hi / lo).log10();
        let mut ticks = Vec::new();
        let mut minor = Vec::new();
        let mut decade = 10f64.powf(lo.log10().floor());
        while decade <= hi * 1.0001 {
            for m in 1..10 {
                let v = decade * m as f64;
                if v < lo * 0.9999 || v > hi * 1.0001 {
                    continue;
                }
                let labelled = if decades <= 1.2 {
                    matches!(m, 1 | 2 | 3 | 5 | 7)
                } else if decades <= 3.2 {
                    matches!(m, 1 | 2 | 5)
                } else {
                    m == 1
                };
                if labelled {
                    ticks.push(v);
                } else {
                    minor.push(v);
                }
            }
            decade *= 10.0;
        }
        // Always label both ends, so the reader sees the range.
        if ticks.first().is_none_or(|&t| t > lo * 1.0001) {
            ticks.insert(0, lo);
        }
        if ticks.last().is_none_or(|&t| t < hi * 0.9999) {
            ticks.push(hi);
        }
        LogAxis {
            range: lo..hi,
            ticks,
            minor,
        }
    }
}

/// The 1-2-5 step at or below `v` (`v` > 0).
fn step_125_at_or_below(v: f64) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    let m = v / decade;
    let s = if m >= 5.0 - 1e-9 {
        5.0
    } else if m >= 2.0 - 1e-9 {
        2.0
    } else {
        1.0
    };
    s * decade
}

/// The 1-2-5 step at or above `v` (`v` > 0).
fn step_125_at_or_above(v: f64) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    let m = v / decade;
    let s = if m <= 1.0 + 1e-9 {
        1.0
    } else if m <= 2.0 + 1e-9 {
        2.0
    } else if m <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    s * decade
}

/// A number for an axis or a cell: at most three significant digits below 1000, no trailing
/// zeros, thousands as plain integers (`0.05`, `1.5`, `20`, `250`, `12000`).
pub(crate) fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    let a = v.abs();
    let s = if a == 0.0 {
        "0".to_string()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        let decimals = (2 - a.log10().floor() as i32).clamp(0, 9) as usize;
        format!("{v:.decimals$}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        assert_eq!(fmt_num(0.05), "0.05");
        assert_eq!(fmt_num(1.0), "1");
        assert_eq!(fmt_num(1.234), "1.23");
        assert_eq!(fmt_num(12.34), "12.3");
        assert_eq!(fmt_num(250.4), "250");
        assert_eq!(fmt_num(12000.0), "12000");
        assert_eq!(fmt_num(f64::NAN), "–");
    }

    #[test]
    fn log_axis_is_snapped_and_labelled_at_both_ends() {
        let a = LogAxis::new(1.3, 180.0);
        assert_eq!(a.range, 1.0..200.0);
        assert_eq!(a.ticks, vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0]);
        let wide = LogAxis::new(0.01, 50_000.0);
        assert!(wide.ticks.contains(&1.0) && !wide.ticks.contains(&2.0));
        let flat = LogAxis::new(5.0, 5.0);
        assert!(flat.range.end / flat.range.start >= 2.5);
    }
}
