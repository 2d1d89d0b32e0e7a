//! proto3 JSON durations (`"10s"`, `"0.030s"`, `"-1.5s"`), as used in gRPC service config.

use crate::{Nanos, NANOS_PER_SEC};

/// Why a text is not a duration; its message quotes the text and says what a valid one looks
/// like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not in proto3's form (`"10s"`, `"0.030s"`).
    #[error(
        "`{0}` is not a proto3 duration; write seconds with an `s` suffix, e.g. \"10s\" or \"0.030s\""
    )]
    NotProto3(String),
    /// Over proto3's limit of 315,576,000,000 seconds.
    #[error("`{0}` is longer than proto3's maximum of 315576000000s")]
    OverProto3Limit(String),
    /// Negative where only durations >= 0 make sense.
    #[error("`{0}` is negative; durations here must be >= 0s")]
    Negative(String),
    /// Too long for a `u64` of nanoseconds.
    #[error("`{0}` is too long; at most {MAX_TEXT}")]
    TooLong(String),
    /// A number with a unit that is negative, infinite or NaN.
    #[error("`{0}` must be a finite duration >= 0")]
    NotFinite(String),
    /// Neither a number with a unit nor a compound such as `1m30s`.
    #[error(
        "`{0}` is not a duration; use a number with a unit: ns, us, ms, s, m or h (e.g. \"250ms\", \"20s\", \"1m30s\")"
    )]
    NotHuman(String),
}

/// Parses a proto3 JSON duration into signed nanoseconds.
///
/// The format is an optional `-`, whole seconds, optionally `.` and 1 to 9 fractional digits, and a
/// final `s`. Anything else is an error whose text says what a valid value looks like.
pub fn parse_signed(text: &str) -> Result<i128, DurationError> {
    let bad = || DurationError::NotProto3(text.to_string());
    let body = text.strip_suffix('s').ok_or_else(bad)?;
    let (negative, body) = match body.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, body),
    };
    let (whole, frac) = match body.split_once('.') {
        Some((w, f)) => (w, f),
        None => (body, ""),
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    if body.contains('.') && (frac.is_empty() || frac.len() > 9) {
        return Err(bad());
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    // proto3 limits seconds to +-315,576,000,000 (10,000 years).
    let secs: i128 = whole.parse().map_err(|_| bad())?;
    if secs > 315_576_000_000 {
        return Err(DurationError::OverProto3Limit(text.to_string()));
    }
    let mut nanos: i128 = 0;
    for (i, b) in frac.bytes().enumerate() {
        nanos += i128::from(b - b'0') * 10i128.pow(8 - i as u32);
    }
    let total = secs * i128::from(NANOS_PER_SEC) + nanos;
    Ok(if negative { -total } else { total })
}

/// The longest duration a `u64` of nanoseconds holds, for error messages.
const MAX_TEXT: &str = "18446744073.709551615s (about 584 years)";

/// Parses a non-negative duration into nanoseconds. One too long for a `u64` of nanoseconds is
/// an error, not silently saturated.
pub fn parse(text: &str) -> Result<Nanos, DurationError> {
    let v = parse_signed(text)?;
    if v < 0 {
        return Err(DurationError::Negative(text.to_string()));
    }
    u64::try_from(v).map_err(|_| DurationError::TooLong(text.to_string()))
}

/// Formats nanoseconds as the shortest proto3 JSON duration: `"10s"`, `"0.030s"` becomes `"0.03s"`.
pub fn format(nanos: Nanos) -> String {
    let secs = nanos / NANOS_PER_SEC;
    let frac = nanos % NANOS_PER_SEC;
    if frac == 0 {
        format!("{secs}s")
    } else {
        let digits = format!("{frac:09}");
        format!("{secs}.{}s", digits.trim_end_matches('0'))
    }
}

/// Writes `nanos` in the largest of the units `s`, `ms`, `us`, `ns` that states it exactly
/// (`"2s"`, `"250ms"`, `"1500us"`; zero is `"0s"`): the form [`parse_human`] reads back.
pub fn format_human(nanos: Nanos) -> String {
    if nanos == 0 {
        "0s".to_string()
    } else if nanos.is_multiple_of(1_000_000_000) {
        format!("{}s", nanos / 1_000_000_000)
    } else if nanos.is_multiple_of(1_000_000) {
        format!("{}ms", nanos / 1_000_000)
    } else if nanos.is_multiple_of(1_000) {
        format!("{}us", nanos / 1_000)
    } else {
        format!("{nanos}ns")
    }
}

/// Parses a human duration for command-line flags: a proto3 duration (`"1.5s"`) or a number with
/// one of the units `ns`, `us`, `ms`, `s`, `m`, `h` (`"250ms"`, `"2m"`).
pub fn parse_human(text: &str) -> Result<Nanos, DurationError> {
    let t = text.trim();
    let units: [(&str, f64); 6] = [
        ("ns", 1.0),
        ("us", 1e3),
        ("ms", 1e6),
        ("s", 1e9),
        ("m", 60e9),
        ("h", 3600e9),
    ];
    for (suffix, scale) in units {
        if let Some(num) = t.strip_suffix(suffix) {
            // "ms" also ends in "s": only accept when the rest is a plain number.
            if let Ok(v) = num.parse::<f64>() {
                if !v.is_finite() || v < 0.0 {
                    return Err(DurationError::NotFinite(text.to_string()));
                }
                // Saturates: callers with a limit (scenario durations: one year) check it.
                return Ok((v * scale).round().min(u64::MAX as f64) as Nanos);
            }
        }
    }
    compound(t).ok_or_else(|| DurationError::NotHuman(text.to_string()))
}

/// `1m30s`, `1h2m3.5s`: numbers each followed by a unit, units from largest to smallest, each at
/// most once.
fn compound(t: &str) -> Option<Nanos> {
    const UNITS: [(&str, f64); 6] = [
        ("h", 3600e9),
        ("m", 60e9),
        ("s", 1e9),
        ("ms", 1e6),
        ("us", 1e3),
        ("ns", 1.0),
    ];
    let mut rest = t;
    let mut total = 0.0;
    let mut last = None;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|&i| i > 0)?;
        let value: f64 = rest[..digits].parse().ok()?;
        let after = &rest[digits..];
        // Two-letter units first, so that "ms" is not read as "m" then "s".
        let (index, unit) = UNITS
            .iter()
            .enumerate()
            .filter(|(_, (u, _))| after.starts_with(u))
            .max_by_key(|(_, (u, _))| u.len())?;
        if last.is_some_and(|l| index <= l) {
            return None;
        }
        last = Some(index);
        total += value * unit.1;
        rest = &after[unit.0.len()..];
        parts += 1;
    }
    (parts >= 2 && total.is_finite() && total < u64::MAX as f64).then(|| total.round() as Nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proto3_forms() {
        assert_eq!(parse("10s"), Ok(10 * NANOS_PER_SEC));
        assert_eq!(parse("0.030s"), Ok(30_000_000));
        assert_eq!(parse("0.000000001s"), Ok(1));
        assert_eq!(parse_signed("-1.5s"), Ok(-1_500_000_000));
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "10",
            "s",
            ".5s",
            "1.s",
            "1.0000000001s",
            "1e3s",
            "+1s",
            "1 s",
            "ms",
        ] {
            assert!(parse(bad).is_err(), "{bad} should be rejected");
        }
        assert_eq!(parse("-1s"), Err(DurationError::Negative("-1s".into())));
        assert!(parse("-1s").unwrap_err().to_string().contains("negative"));
    }

    #[test]
    fn a_duration_too_long_for_nanoseconds_is_an_error_not_saturated() {
        // proto3's largest Duration, 10,000 years, does not fit a u64 of nanoseconds.
        assert!(parse("315576000000s")
            .unwrap_err()
            .to_string()
            .contains("too long"));
        assert_eq!(parse("18446744073.709551615s"), Ok(u64::MAX));
        assert!(parse("18446744073.709551616s").is_err());
    }

    #[test]
    fn compound_human_durations() {
        assert_eq!(parse_human("1m30s"), Ok(90 * NANOS_PER_SEC));
        assert_eq!(
            parse_human("1h2m3.5s"),
            Ok(3723 * NANOS_PER_SEC + NANOS_PER_SEC / 2)
        );
        assert_eq!(parse_human("2s500ms"), Ok(2_500_000_000));
        assert!(
            parse_human("30s1m").is_err(),
            "units must go from largest to smallest"
        );
        assert!(parse_human("1m1m").is_err());
        assert!(parse_human("1x30s").is_err());
    }

    #[test]
    fn formats_shortest() {
        assert_eq!(format(30_000_000), "0.03s");
        assert_eq!(format(10 * NANOS_PER_SEC), "10s");
        assert_eq!(format(1), "0.000000001s");
        for n in [0, 1, 999, 30_000_000, 1_500_000_000, 300 * NANOS_PER_SEC] {
            assert_eq!(parse(&format(n)), Ok(n));
        }
    }

    #[test]
    fn human_units() {
        assert_eq!(parse_human("250ms"), Ok(250_000_000));
        assert_eq!(parse_human("20s"), Ok(20 * NANOS_PER_SEC));
        assert_eq!(parse_human("2m"), Ok(120 * NANOS_PER_SEC));
        assert_eq!(parse_human("1.5us"), Ok(1500));
        assert!(parse_human("fast").is_err());
        assert!(parse_human("-1s").is_err());
    }
}
