//! Human-readable durations in scenario files (`"2ms"`, `"1.5s"`, `"10m"`), and in what is
//! read back of them (a sweep's points), as a serde type over [`lblab_policy::duration`]'s
//! `parse_human` and `format_human`. How a scenario reports a bad one is tested with the scenario.

use std::fmt;

use lblab_policy::{duration, Nanos};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration in nanoseconds, written in files as a string with a unit: `ns`, `us`, `ms`, `s`,
/// `m` or `h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dur(pub Nanos);

impl Dur {
    /// The longest duration a scenario or flag may give: one year (8760h). Sums of a few such
    /// values stay far from `u64` nanoseconds' limit (584 years), so no time arithmetic overflows.
    pub const MAX: Dur = Dur(365 * 24 * 3600 * lblab_policy::NANOS_PER_SEC);

    /// Nanoseconds as f64.
    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }

    /// Milliseconds as f64.
    pub fn as_ms(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Seconds as f64.
    pub fn as_secs(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&duration::format_human(self.0))
    }
}

/// Why a text is not a [`Dur`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurError {
    /// Not a duration at all.
    #[error(transparent)]
    Parse(#[from] duration::DurationError),
    /// A duration over [`Dur::MAX`].
    #[error("`{0}` is longer than the maximum of 8760h (one year)")]
    OverAYear(String),
}

impl std::str::FromStr for Dur {
    type Err = DurError;
    fn from_str(s: &str) -> Result<Self, DurError> {
        let d = duration::parse_human(s)?;
        if d > Dur::MAX.0 {
            return Err(DurError::OverAYear(s.to_string()));
        }
        Ok(Dur(d))
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DurVisitor)
    }
}

/// Reads a duration from a string, and says in plain words what to write instead of a bare number
/// or a TOML date-time (which serde would report as "invalid type: map").
struct DurVisitor;

impl<'de> serde::de::Visitor<'de> for DurVisitor {
    type Value = Dur;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration string such as \"30s\" or \"250ms\"")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Dur, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Dur, E> {
        Err(no_unit(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Dur, E> {
        Err(no_unit(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Dur, E> {
        Err(no_unit(v))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, _map: A) -> Result<Dur, A::Error> {
        Err(serde::de::Error::custom(
            "a TOML date or time is not a duration; write a duration as a string, e.g. \"30s\"",
        ))
    }
}

/// The error for a bare number where a duration belongs: what to write instead.
fn no_unit<E: serde::de::Error>(v: impl fmt::Display) -> E {
    E::custom(format!(
        "{v} has no unit; write a duration as a string with its unit, e.g. \"{v}s\" or \"{v}ms\""
    ))
}
