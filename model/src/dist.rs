//! Service-time distributions, drawn with `rand_distr`.

use rand::Rng;
use rand_distr::{Distribution as _, Exp, LogNormal, Normal};
use serde::{Deserialize, Serialize};

use crate::units::Dur;
use crate::FileError;

/// A service-time distribution as written in a scenario file, e.g.
/// `{ dist = "lognormal", median = "2ms", p99 = "8ms" }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum DistSpec {
    /// Always `value`.
    Constant {
        /// The value.
        value: Dur,
    },
    /// Uniform in `[min, max]`.
    Uniform {
        /// Lower bound.
        min: Dur,
        /// Upper bound.
        max: Dur,
    },
    /// Exponential with the given mean.
    Exponential {
        /// Mean.
        mean: Dur,
    },
    /// Log-normal given by its median and 99th percentile (a long right tail, as real service
    /// times have).
    Lognormal {
        /// Median.
        median: Dur,
        /// 99th percentile (>= median).
        p99: Dur,
    },
    /// Normal with mean and standard deviation, truncated at 0.
    Normal {
        /// Mean.
        mean: Dur,
        /// Standard deviation.
        stddev: Dur,
    },
}

/// A validated distribution ready to sample nanoseconds from.
#[derive(Debug, Clone, Copy)]
pub enum Dist {
    /// Always this many ns.
    Constant(f64),
    /// Uniform in ns.
    Uniform(f64, f64),
    /// Exponential (ns).
    Exponential(Exp<f64>),
    /// Log-normal (ns).
    LogNormal(LogNormal<f64>),
    /// Normal truncated at 0 (ns).
    Normal(Normal<f64>),
}

/// z-score of the 99th percentile of a standard normal.
const Z99: f64 = 2.326_347_874_040_841;

impl DistSpec {
    /// Validates the parameters; `field` names the field in errors.
    pub fn build(&self, field: &str) -> Result<Dist, FileError> {
        let bad = |msg: String| FileError::invalid(field, msg);
        Ok(match *self {
            DistSpec::Constant { value } => Dist::Constant(value.as_f64()),
            DistSpec::Uniform { min, max } => {
                if max.0 < min.0 {
                    return Err(bad(format!("max ({max}) is below min ({min})")));
                }
                Dist::Uniform(min.as_f64(), max.as_f64())
            }
            DistSpec::Exponential { mean } => {
                if mean.0 == 0 {
                    return Err(bad("mean must be greater than 0".into()));
                }
                Dist::Exponential(Exp::new(1.0 / mean.as_f64()).map_err(|e| bad(e.to_string()))?)
            }
            DistSpec::Lognormal { median, p99 } => {
                if median.0 == 0 || p99.0 < median.0 {
                    return Err(bad(format!(
                        "need 0 < median <= p99, got median {median}, p99 {p99}"
                    )));
                }
                let mu = median.as_f64().ln();
                let sigma = (p99.as_f64().ln() - mu) / Z99;
                Dist::LogNormal(LogNormal::new(mu, sigma).map_err(|e| bad(e.to_string()))?)
            }
            DistSpec::Normal { mean, stddev } => Dist::Normal(
                Normal::new(mean.as_f64(), stddev.as_f64()).map_err(|e| bad(e.to_string()))?,
            ),
        })
    }

    /// The distribution's median in ns (used for the harness floor and reports).
    pub fn median_ns(&self) -> f64 {
        match *self {
            DistSpec::Constant { value } => value.as_f64(),
            DistSpec::Uniform { min, max } => (min.as_f64() + max.as_f64()) / 2.0,
            DistSpec::Exponential { mean } => mean.as_f64() * std::f64::consts::LN_2,
            DistSpec::Lognormal { median, .. } => median.as_f64(),
            DistSpec::Normal { mean, .. } => mean.as_f64(),
        }
    }
}

impl DistSpec {
    /// The distribution's mean in ns (used for the fleet's capacity). The normal's truncation at
    /// 0 is ignored: it matters only when the standard deviation is close to the mean.
    pub fn mean_ns(&self) -> f64 {
        match *self {
            DistSpec::Constant { value } => value.as_f64(),
            DistSpec::Uniform { min, max } => (min.as_f64() + max.as_f64()) / 2.0,
            DistSpec::Exponential { mean } => mean.as_f64(),
            DistSpec::Lognormal { median, p99 } => {
                let sigma = (p99.as_f64().max(1.0).ln() - median.as_f64().max(1.0).ln()) / Z99;
                median.as_f64() * (sigma * sigma / 2.0).exp()
            }
            DistSpec::Normal { mean, .. } => mean.as_f64(),
        }
    }
}

impl Dist {
    /// Draws one value in whole nanoseconds (>= 0).
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let v = match self {
            Dist::Constant(v) => *v,
            Dist::Uniform(lo, hi) => {
                if hi > lo {
                    rng.random_range(*lo..=*hi)
                } else {
                    *lo
                }
            }
            Dist::Exponential(d) => d.sample(rng),
            Dist::LogNormal(d) => d.sample(rng),
            Dist::Normal(d) => d.sample(rng),
        };
        if v.is_finite() && v > 0.0 {
            v.min(u64::MAX as f64 / 2.0) as u64
        } else {
            0
        }
    }
}
