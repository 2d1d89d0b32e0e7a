//! Human-readable durations in scenario files (`"2ms"`, `"1.5s"`, `"10m"`).

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
        let n = self.0;
        if n == 0 {
            write!(f, "0s")
        } else if n.is_multiple_of(1_000_000_000) {
            write!(f, "{}s", n / 1_000_000_000)
        } else if n.is_multiple_of(1_000_000) {
            write!(f, "{}ms", n / 1_000_000)
        } else if n.is_multiple_of(1_000) {
            write!(f, "{}us", n / 1_000)
        } else {
            write!(f, "{n}ns")
        }
    }
}

impl std::str::FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let d = duration::parse_human(s)?;
        if d > Dur::MAX.0 {
            return Err(format!(
                "`{s}` is longer than the maximum of 8760h (one year)"
            ));
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
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
