//! How numbers are printed in the documents: three significant digits, intervals in brackets.

use lblab_stats::Interval;

/// Decimals that give `x` three significant digits (at least none, at most four).
fn decimals(x: f64) -> usize {
    let a = x.abs();
    if !a.is_finite() || a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else if a >= 0.1 || a == 0.0 {
        3
    } else {
        4
    }
}

/// `x` to three significant digits.
pub fn num(x: f64) -> String {
    if x.is_nan() {
        return "–".into();
    }
    let d = decimals(x);
    format!("{x:.d$}")
}

/// `median [lo, hi]`, all three with the median's decimals (just the median for a single run).
pub fn iv(i: Interval) -> String {
    let d = decimals(i.median);
    if i.n <= 1 {
        format!("{:.d$}", i.median)
    } else {
        format!("{:.d$} [{:.d$}, {:.d$}]", i.median, i.lo, i.hi)
    }
}

/// A share (0..1) as a percentage with a `%` sign: `11.0 %`, `4.04 %`, `0.41 %`.
pub fn pct(share: f64) -> String {
    let p = 100.0 * share;
    let d = if p.abs() >= 10.0 { 1 } else { 2 };
    format!("{p:.d$} %")
}

/// An interval of shares, as percentages: `0.41 [0.33, 0.50] %`.
pub fn pct_iv(i: Interval) -> String {
    let p = 100.0 * i.median;
    let d = if p.abs() >= 10.0 { 1 } else { 2 };
    if i.n <= 1 {
        format!("{p:.d$} %")
    } else {
        format!("{p:.d$} [{:.d$}, {:.d$}] %", 100.0 * i.lo, 100.0 * i.hi)
    }
}

/// A whole number with thousands separators: `60,041`.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A parameter as a person would write it: `10`, `1.5`, `0.05` (no trailing zeros).
pub fn param(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A parameter share as a percentage: `20 %`, `2.5 %`.
pub fn param_pct(share: f64) -> String {
    format!("{} %", param((100.0 * share * 1e6).round() / 1e6))
}

/// Seconds as written in a scenario: `20 s`, `0.5 s`.
pub fn secs(s: f64) -> String {
    if (s - s.round()).abs() < 1e-9 {
        format!("{} s", s.round() as i64)
    } else {
        format!("{} s", num(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(median: f64, lo: f64, hi: f64) -> Interval {
        Interval {
            median,
            lo,
            hi,
            n: 10,
            coverage: 0.98,
        }
    }

    #[test]
    fn three_significant_digits() {
        assert_eq!(num(8.110079), "8.11");
        assert_eq!(num(33.734), "33.7");
        assert_eq!(num(287.4), "287");
        assert_eq!(num(0.23931), "0.239");
        assert_eq!(num(0.0512), "0.0512");
        assert_eq!(iv(i(8.110079, 8.028159, 8.146943)), "8.11 [8.03, 8.15]");
        assert_eq!(pct(0.110198), "11.0 %");
        assert_eq!(
            pct_iv(i(0.004099, 0.003314, 0.004994)),
            "0.41 [0.33, 0.50] %"
        );
        assert_eq!(count(60041), "60,041");
        assert_eq!(count(999), "999");
        assert_eq!(secs(20.0), "20 s");
        assert_eq!(param(10.0), "10");
        assert_eq!(param(1.5), "1.5");
        assert_eq!(param_pct(0.2), "20 %");
        assert_eq!(param_pct(0.05), "5 %");
    }
}
