//! Each endpoint's record of its outages.

use lblab_policy::Nanos;

/// A stretch of time an endpoint had no connection after having had one, or could not be
/// connected to at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outage {
    /// When it began (the connection ended, or the first attempt failed), ns on the balancer's
    /// clock (0 for anything before its origin).
    pub start: Nanos,
    /// When the endpoint was READY again; `None` if it had not been by the time it was read.
    pub end: Option<Nanos>,
    /// True if a working connection was lost; false if no attempt had succeeded since the
    /// balancer started.
    pub lost: bool,
    /// Failed connection attempts during it.
    pub failed_attempts: u32,
    /// How many outages this record stands for: 1, or more once an endpoint has had more than
    /// [`MAX_OUTAGES_KEPT`] and later ones are merged into the last record (which then spans
    /// from the first of them to the end of the last, up time between them included).
    pub merged: u32,
    /// The last error seen: why the connection ended, or why the last attempt failed.
    pub error: Option<String>,
}

/// Outage records kept per endpoint; later outages are merged into the last record, so memory
/// stays bounded however often a connection fails.
pub const MAX_OUTAGES_KEPT: usize = 1024;

#[derive(Default)]
pub(super) struct Outages {
    pub(super) list: Vec<Outage>,
    /// An outage is in progress (the last record).
    pub(super) open: bool,
    /// Some connection has worked.
    pub(super) connected_once: bool,
}

impl Outages {
    pub(super) fn begin(&mut self, now: Nanos, error: Option<String>, failed: bool) {
        if self.open {
            if let Some(o) = self.list.last_mut() {
                o.failed_attempts += u32::from(failed);
                o.error = error.or(o.error.take());
            }
            return;
        }
        self.open = true;
        if self.list.len() >= MAX_OUTAGES_KEPT {
            if let Some(o) = self.list.last_mut() {
                o.merged += 1;
                o.end = None;
                o.failed_attempts += u32::from(failed);
                o.error = error.or(o.error.take());
                return;
            }
        }
        self.list.push(Outage {
            start: now,
            end: None,
            lost: self.connected_once,
            failed_attempts: u32::from(failed),
            merged: 1,
            error,
        });
    }

    pub(super) fn end(&mut self, now: Nanos) {
        self.connected_once = true;
        if std::mem::take(&mut self.open) {
            if let Some(o) = self.list.last_mut() {
                o.end = Some(now);
            }
        }
    }
}
