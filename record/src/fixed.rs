//! Serde serializers that write a number with a fixed count of decimals, as the CSV files of a
//! results folder hold them (`#[serde(serialize_with = "fixed::f3")]`): the csv crate would
//! otherwise write the shortest exact form, so files would change with every float's last bit.

use serde::Serializer;

/// Decimals of a latency in ms in `timeseries.csv` (as [`f3`] writes the other files' ms).
pub const MS_DECIMALS: usize = 3;
/// Decimals of a traffic share in `timeseries.csv`.
pub const SHARE_DECIMALS: usize = 4;

/// `v` as a file written with `decimals` decimals holds it: formatted, then read back (NaN,
/// written as an empty field, stays NaN). A chart drawn from a run's results draws these values,
/// so that it is the chart redrawn from the files.
pub fn as_written(v: f64, decimals: usize) -> f64 {
    if v.is_nan() {
        return f64::NAN;
    }
    format!("{v:.decimals$}").parse().unwrap_or(f64::NAN)
}

fn fixed<S: Serializer>(v: f64, decimals: usize, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("{v:.decimals$}"))
}

/// One decimal.
pub fn f1<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    fixed(*v, 1, s)
}

/// Three decimals.
pub fn f3<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    fixed(*v, 3, s)
}

/// Four decimals.
pub fn f4<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    fixed(*v, 4, s)
}

/// Five decimals.
pub fn f5<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    fixed(*v, 5, s)
}

/// Three decimals, or an empty field.
pub fn opt_f3<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => fixed(*v, 3, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_written_rounds_like_the_csv() {
        assert_eq!(as_written(2.12345, MS_DECIMALS), 2.123);
        assert!(as_written(f64::NAN, MS_DECIMALS).is_nan());
    }
}
