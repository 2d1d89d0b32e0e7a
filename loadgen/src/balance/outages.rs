//! Each endpoint's record of its outages.

use super::*;

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
