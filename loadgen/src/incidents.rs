//! Turning what went wrong in the harness during a run into [`Incident`]s that mark its results.
//!
//! Three sources: the balancers' [`Outage`]s (connections lost or refused outside any crash the
//! scenario scheduled), the load generator's own overload drops, and its dispatch lateness.

use std::net::SocketAddr;

use hdrhistogram::Histogram;
use lblab_model::fault::Timeline;
use lblab_policy::{Nanos, NANOS_PER_SEC};
use lblab_record::{Incident, IncidentKind};

use crate::balance::Outage;

/// How far before an outage a scheduled crash may begin and still explain it (the client sees a
/// cut connection a moment after the server closes it).
const CRASH_GRACE: Nanos = NANOS_PER_SEC / 5;

/// Dispatch lateness above which a call counts as sent late.
pub const LATE: Nanos = NANOS_PER_SEC / 1000;

fn secs(t: Nanos) -> f64 {
    t as f64 / NANOS_PER_SEC as f64
}

/// Incidents from every client's outages (`per_client[c][endpoint]`): outages a scheduled crash
/// explains are the scenario's doing and are left out. `end` is when the run ended (for outages
/// still in progress).
pub fn from_outages(
    policy: &str,
    targets: &[SocketAddr],
    per_client: &[Vec<Vec<Outage>>],
    timelines: Option<&[Timeline]>,
    end: Nanos,
) -> Vec<Incident> {
    let mut out = Vec::new();
    for (b, addr) in targets.iter().enumerate() {
        let scheduled = |o: &Outage| {
            timelines.and_then(|t| t.get(b)).is_some_and(|tl| {
                tl.down_at(o.start) || tl.down_at(o.start.saturating_sub(CRASH_GRACE))
            })
        };
        for lost in [true, false] {
            let outages: Vec<&Outage> = per_client
                .iter()
                .filter_map(|c| c.get(b))
                .flatten()
                .filter(|o| o.lost == lost && !scheduled(o))
                .collect();
            if outages.is_empty() {
                continue;
            }
            let count: u64 = outages.iter().map(|o| u64::from(o.merged)).sum();
            let start = outages.iter().map(|o| o.start).min().unwrap_or(0);
            let last = outages
                .iter()
                .map(|o| o.end.unwrap_or(end).max(o.start))
                .max()
                .unwrap_or(end);
            let down: Nanos = outages
                .iter()
                .map(|o| o.end.unwrap_or(end).saturating_sub(o.start))
                .sum();
            let attempts: u64 = outages.iter().map(|o| u64::from(o.failed_attempts)).sum();
            let still = outages.iter().any(|o| o.end.is_none());
            let error = outages
                .iter()
                .rev()
                .find_map(|o| o.error.as_deref())
                .unwrap_or("unknown");
            let clients = if per_client.len() > 1 {
                format!(" (summed over {} clients' connections)", per_client.len())
            } else {
                String::new()
            };
            let until = if still {
                "; not connected again by the end of the run"
            } else {
                ""
            };
            let (kind, detail) = if lost {
                (
                    IncidentKind::ConnectionLost,
                    format!(
                        "connection to {addr} lost {count} time(s) outside any scheduled crash{clients}; \
                         {:.2} s without a connection in all, {attempts} failed reconnection attempt(s){until}; \
                         last error: {error}",
                        secs(down)
                    ),
                )
            } else {
                (
                    IncidentKind::Unreachable,
                    format!(
                        "{addr} could not be connected to: {attempts} failed attempt(s){clients}{until}; \
                         last error: {error}"
                    ),
                )
            };
            out.push(Incident {
                policy: policy.to_string(),
                kind,
                backend: Some(b),
                start_s: secs(start),
                end_s: secs(last),
                count,
                detail,
            });
        }
    }
    out
}

/// Arrivals the load generator did not send because it could not keep to its schedule. Like the
/// results table, the incident counts arrivals intended after the warm-up; those during it are
/// counted apart and only mentioned.
#[derive(Debug, Clone, Default)]
pub struct OverloadDrops {
    /// Dropped after the warm-up because they would have left a whole deadline late.
    pub behind: u64,
    /// Dropped after the warm-up because the cap on calls in flight was reached.
    pub in_flight: u64,
    /// Dropped during the warm-up, for either reason (not in the table).
    pub warmup: u64,
    /// Intended time of the first and the last dropped arrival after the warm-up.
    pub first: Nanos,
    /// See `first`.
    pub last: Nanos,
}

impl OverloadDrops {
    /// Counts one drop of an arrival intended at `t`; `measured`: intended after the warm-up.
    pub fn add(&mut self, t: Nanos, behind: bool, measured: bool) {
        if !measured {
            self.warmup += 1;
            return;
        }
        if self.behind + self.in_flight == 0 {
            self.first = t;
        }
        self.first = self.first.min(t);
        self.last = self.last.max(t);
        if behind {
            self.behind += 1;
        } else {
            self.in_flight += 1;
        }
    }

    /// The incident, if anything was dropped.
    pub fn incident(
        &self,
        policy: &str,
        deadline: Nanos,
        max_in_flight: usize,
    ) -> Option<Incident> {
        let n = self.behind + self.in_flight;
        (n > 0).then(|| Incident {
            policy: policy.to_string(),
            kind: IncidentKind::Overloaded,
            backend: None,
            start_s: secs(self.first),
            end_s: secs(self.last),
            count: n,
            detail: format!(
                "{n} arrival(s) intended after the warm-up not sent (counted in the table's \
                 dropped): {} would have left more than the deadline ({:.3} s) after their \
                 intended time (the load generator could not send at this rate), {} found \
                 {max_in_flight} calls already in flight (the backends, or the machine, could not \
                 keep up with this rate){}",
                self.behind,
                secs(deadline),
                self.in_flight,
                warmup_note(self.warmup, "not sent")
            ),
        })
    }
}

/// A run of `policy` (its service config `config`) that weighs endpoints by ORCA load reports and
/// got none in `answers` answers: an incident, since it then ran as round_robin.
pub fn no_load_reports(
    policy: &str,
    config: &str,
    reports: u64,
    answers: u64,
    end: Nanos,
) -> Option<Incident> {
    (config.contains("weighted_round_robin") && reports == 0 && answers > 0).then(|| Incident {
        policy: policy.to_string(),
        kind: IncidentKind::NoLoadReports,
        backend: None,
        start_s: 0.0,
        end_s: secs(end),
        count: answers,
        detail: format!(
            "weighted_round_robin received no ORCA load report in {answers} answers (no \
             endpoint-load-metrics-bin trailer from any target): without them every weight is the \
             same and it ran as round_robin; the servers must report their load (ORCA, gRFC A51)"
        ),
    })
}

/// `"; and N more during the warm-up, not in the table"`, or nothing if none.
fn warmup_note(n: u64, what: &str) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("; {n} more {what} during the warm-up, which the table does not count")
    }
}

/// Calls sent more than [`LATE`] after their intended time: when they are more than 1 % of the
/// measured calls (dispatch lateness p99 above 1 ms), an incident. `lateness` holds the calls
/// intended after the warm-up, the ones the results table counts; `warmup_late` is how many
/// calls of the warm-up left late (only mentioned). `first`/`last` are the intended times of the
/// first and last late call after the warm-up.
pub fn late_dispatch(
    policy: &str,
    lateness: &Histogram<u64>,
    first: Nanos,
    last: Nanos,
    warmup_late: u64,
) -> Option<Incident> {
    if lateness.is_empty() || lateness.value_at_quantile(0.99) <= LATE {
        return None;
    }
    let late = lateness.count_between(LATE + 1, lateness.max());
    Some(Incident {
        policy: policy.to_string(),
        kind: IncidentKind::LateDispatch,
        backend: None,
        start_s: secs(first),
        end_s: secs(last),
        count: late,
        detail: format!(
            "{late} of the {} calls intended after the warm-up (the table's requests, less any \
             never dispatched) left more than 1 ms after their intended time (their dispatch \
             lateness p99 {:.2} ms, max {:.1} ms): the load generator was held up, and \
             latencies, which count from the intended time, include its delay{}",
            lateness.len(),
            lateness.value_at_quantile(0.99) as f64 / 1e6,
            lateness.max() as f64 / 1e6,
            warmup_note(warmup_late, "left late")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lblab_model::fault::FaultSpec;
    use lblab_model::units::Dur;

    fn outage(start: Nanos, end: Option<Nanos>, lost: bool) -> Outage {
        Outage {
            start,
            end,
            lost,
            failed_attempts: 2,
            merged: 1,
            error: Some("connection refused".into()),
        }
    }

    #[test]
    fn an_outage_a_scheduled_crash_explains_is_not_an_incident() {
        let sec = NANOS_PER_SEC;
        let crash = FaultSpec::Crash {
            targets: vec!["a".into()],
            at: Dur(2 * sec),
            restart_after: Some(Dur(sec)),
        };
        let tl = Timeline::new(&[&crash], 1, 10 * sec, &Default::default());
        let targets: Vec<SocketAddr> = vec!["127.0.0.1:1".parse().unwrap()];
        // One lost at the crash, one later: only the later one is an incident.
        let outages = vec![vec![vec![
            outage(2 * sec + 1_000_000, Some(3 * sec + 500_000_000), true),
            outage(5 * sec, None, true),
        ]]];
        let got = from_outages("p", &targets, &outages, Some(&[tl]), 10 * sec);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].kind, IncidentKind::ConnectionLost);
        assert_eq!(got[0].count, 1);
        assert_eq!((got[0].start_s, got[0].end_s), (5.0, 10.0));
        assert!(
            got[0].detail.contains("not connected again"),
            "{}",
            got[0].detail
        );
        // Without the timeline both count.
        let got = from_outages("p", &targets, &outages, None, 10 * sec);
        assert_eq!(got[0].count, 2);
    }

    #[test]
    fn a_target_never_reached_is_unreachable() {
        let targets: Vec<SocketAddr> = vec!["127.0.0.1:1".parse().unwrap()];
        let got = from_outages(
            "p",
            &targets,
            &[vec![vec![outage(0, None, false)]]],
            None,
            3,
        );
        assert_eq!(got[0].kind, IncidentKind::Unreachable);
        assert!(
            got[0].detail.contains("connection refused"),
            "{}",
            got[0].detail
        );
    }

    #[test]
    fn late_dispatch_needs_a_late_p99() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600 * NANOS_PER_SEC, 3).unwrap();
        for _ in 0..990 {
            h.record(50_000).unwrap();
        }
        for _ in 0..5 {
            h.record(5_000_000).unwrap();
        }
        assert!(late_dispatch("p", &h, 0, 1, 0).is_none(), "p99 is 50 µs");
        for _ in 0..20 {
            h.record(5_000_000).unwrap();
        }
        let i = late_dispatch("p", &h, 0, 1, 7).expect("p99 above 1 ms");
        assert_eq!(i.count, 25);
        assert!(
            i.detail
                .starts_with("25 of the 1015 calls intended after the warm-up"),
            "{}",
            i.detail
        );
        assert!(
            i.detail.contains("7 more left late during the warm-up"),
            "{}",
            i.detail
        );
    }

    #[test]
    fn overload_counts_both_causes() {
        let mut d = OverloadDrops::default();
        assert!(d.incident("p", NANOS_PER_SEC, 10).is_none());
        d.add(1, true, false);
        assert!(
            d.incident("p", NANOS_PER_SEC, 10).is_none(),
            "a drop during the warm-up is not in the table"
        );
        d.add(7, true, true);
        d.add(3, false, true);
        let i = d.incident("p", NANOS_PER_SEC, 10).unwrap();
        assert_eq!((i.count, i.start_s, i.end_s), (2, 3e-9, 7e-9));
        assert!(
            i.detail.contains("1 more not sent during the warm-up"),
            "{}",
            i.detail
        );
    }
}
