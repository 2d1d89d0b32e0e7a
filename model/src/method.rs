//! Methods: a workload whose calls are not all alike. `[[workload.methods]]` gives each method a
//! name, a share of the unary calls and a work factor (its service time is the backend's times
//! the factor), and a `slowdown` fault may name `methods` to slow only those (a slow dependency
//! behind one method). The simulator draws each unary call's method from the shares and hands it
//! to the policy at pick time, as gRPC hands a picker the call's method name.
//!
//! A workload without methods has one implicit method, index 0, with factor 1, and draws nothing
//! for it, so its runs are the same as before methods existed.

use serde::{Deserialize, Serialize};

use crate::FileError;

/// The most methods a workload may name (a slowdown's method set is a 64-bit mask).
pub const MAX_METHODS: usize = 64;

/// `[[workload.methods]]`: one method of the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MethodSpec {
    /// Name, used in a slowdown's `methods` and in reports.
    pub name: String,
    /// Relative share of the unary calls (the shares are normalized).
    pub share: f64,
    /// Service-time factor: a call of this method takes the backend's service time × `factor`
    /// (default 1).
    #[serde(default = "one")]
    pub factor: f64,
}

fn one() -> f64 {
    1.0
}

/// The validated methods of a workload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Methods {
    names: Vec<String>,
    factors: Vec<f64>,
    /// Cumulative normalized shares; the last is 1.
    cumulative: Vec<f64>,
}

impl Methods {
    /// Checks `specs` (field `workload.methods`): unique non-empty names, positive finite shares
    /// and factors, at most [`MAX_METHODS`].
    pub fn check(specs: &[MethodSpec]) -> Result<Methods, FileError> {
        let bad = |i: usize, field: &str, msg: String| {
            Err(FileError::invalid(
                &format!("workload.methods[{i}].{field}"),
                msg,
            ))
        };
        if specs.len() > MAX_METHODS {
            return Err(FileError::invalid(
                "workload.methods",
                format!("{} methods; at most {MAX_METHODS}", specs.len()),
            ));
        }
        let mut total = 0.0;
        for (i, m) in specs.iter().enumerate() {
            if m.name.is_empty() || m.name.len() > 64 {
                return bad(i, "name", "must be 1 to 64 characters".into());
            }
            if specs[..i].iter().any(|o| o.name == m.name) {
                return bad(i, "name", format!("{:?} is named twice", m.name));
            }
            if !(m.share.is_finite() && m.share > 0.0) {
                return bad(i, "share", format!("{} must be a positive number", m.share));
            }
            if !(m.factor.is_finite() && m.factor > 0.0 && m.factor <= 1e6) {
                return bad(
                    i,
                    "factor",
                    format!("{} must be a positive number, at most 1e6", m.factor),
                );
            }
            total += m.share;
        }
        let mut acc = 0.0;
        let cumulative = specs
            .iter()
            .map(|m| {
                acc += m.share / total;
                acc
            })
            .collect::<Vec<_>>();
        Ok(Methods {
            names: specs.iter().map(|m| m.name.clone()).collect(),
            factors: specs.iter().map(|m| m.factor).collect(),
            cumulative,
        })
    }

    /// Whether the workload names no methods (one implicit method, nothing drawn).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The methods' names, in file order (index = method).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The index of the method called `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Method `method`'s service-time factor (1 without methods or out of range).
    pub fn factor(&self, method: u32) -> f64 {
        self.factors.get(method as usize).copied().unwrap_or(1.0)
    }

    /// The method of a call whose uniform draw in `[0, 1)` is `u`.
    pub fn of_draw(&self, u: f64) -> u32 {
        self.cumulative
            .iter()
            .position(|&c| u < c)
            .unwrap_or(self.cumulative.len().saturating_sub(1)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, share: f64, factor: f64) -> MethodSpec {
        MethodSpec {
            name: name.into(),
            share,
            factor,
        }
    }

    #[test]
    fn draws_follow_the_normalized_shares() {
        let m = Methods::check(&[spec("light", 3.0, 0.5), spec("heavy", 1.0, 10.0)]).unwrap();
        assert_eq!(m.of_draw(0.0), 0);
        assert_eq!(m.of_draw(0.7499), 0);
        assert_eq!(m.of_draw(0.75), 1);
        assert_eq!(m.of_draw(0.999_999), 1);
        assert_eq!(m.factor(1), 10.0);
        assert_eq!(m.factor(7), 1.0);
        assert_eq!(m.index("heavy"), Some(1));
    }

    #[test]
    fn bad_methods_name_the_field() {
        let e = Methods::check(&[spec("a", 1.0, 1.0), spec("a", 1.0, 1.0)]).unwrap_err();
        assert!(e.to_string().contains("workload.methods[1].name"), "{e}");
        let e = Methods::check(&[spec("a", 0.0, 1.0)]).unwrap_err();
        assert!(e.to_string().contains("workload.methods[0].share"), "{e}");
        let e = Methods::check(&[spec("a", 1.0, f64::NAN)]).unwrap_err();
        assert!(e.to_string().contains("workload.methods[0].factor"), "{e}");
        assert!(Methods::check(&[]).unwrap().is_empty());
    }
}
