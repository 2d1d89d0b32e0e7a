//! Wall-clock time as model time.

use std::time::{Duration, Instant};

use lblab_policy::Nanos;

/// Wall-clock time as model time: nanoseconds since an origin (0 before it).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose time 0 is `origin`.
    pub fn new(origin: Instant) -> Self {
        Clock { origin }
    }

    /// The origin.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Nanoseconds since the origin.
    pub fn now(&self) -> Nanos {
        self.to_nanos(Instant::now())
    }

    /// Model time of an instant.
    pub fn to_nanos(&self, t: Instant) -> Nanos {
        t.saturating_duration_since(self.origin)
            .as_nanos()
            .min(u128::from(Nanos::MAX)) as Nanos
    }

    /// The instant of a model time.
    pub fn instant(&self, t: Nanos) -> Instant {
        self.origin + Duration::from_nanos(t)
    }
}
