//! Serde serializers that write a number with a fixed count of decimals, as the CSV files of a
//! results folder hold them (`#[serde(serialize_with = "fixed::f3")]`): the csv crate would
//! otherwise write the shortest exact form, so files would change with every float's last bit.

use serde::Serializer;

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
