//! Out-of-band probes for a policy that asks for them ([`lblab_policy::Policy::probe_interval`]):
//! health Checks a client sends every READY backend, answered as the model says a Check is.

use lblab_model::probe::{self, Probe, Seen};
use lblab_policy::{Connectivity, EndpointId, Nanos};

use super::{Event, Picker, World, NO_PROBE};

impl World<'_> {
    /// Sends `client`'s probes due at `now` (see [`lblab_policy::Policy::probe_interval`]): a
    /// health Check to every READY backend without one pending, answered as the model says a
    /// Check is ([`lblab_model::probe::seen`]); it takes no worker and no queue place.
    pub(super) fn send_probes(&mut self, now: Nanos, client: u32) {
        let c = &mut self.clients[client as usize];
        let Picker::Policy(p) = &mut c.picker else {
            return;
        };
        let Some(interval) = p.probe_interval() else {
            return;
        };
        for (b, backend) in self.backends.iter().enumerate() {
            if c.conn[b] != Connectivity::Ready || c.probe_sent[b] != NO_PROBE {
                continue;
            }
            let rtt = 2 * self.half_rtts[b];
            let seen = probe::seen(Probe::HealthCheck, backend.timeline(), now, rtt);
            let (at, answered) = match seen {
                Seen::Rtt(r) => (now + r, true),
                Seen::Refused => (now + rtt, false),
                // A black hole: pending until the connection goes.
                Seen::NoAnswer => (Nanos::MAX, false),
            };
            p.on_probe_sent(now, EndpointId(b as u32));
            c.probe_sent[b] = now;
            if at < Nanos::MAX {
                self.queue.schedule(
                    at,
                    Event::ProbeDone {
                        client,
                        backend: b as u32,
                        sent: now,
                        answered,
                    },
                );
            }
        }
        if now + interval < self.end {
            self.queue
                .schedule(now + interval.max(1), Event::Probe { client });
        }
    }

    /// Ends `client`'s probe of `backend` sent at `sent`, if it is still the pending one.
    pub(super) fn end_probe(
        &mut self,
        now: Nanos,
        client: u32,
        backend: u32,
        sent: Nanos,
        answered: bool,
    ) {
        let c = &mut self.clients[client as usize];
        if c.probe_sent.get(backend as usize) != Some(&sent) || sent == NO_PROBE {
            return;
        }
        c.probe_sent[backend as usize] = NO_PROBE;
        if let Picker::Policy(p) = &mut c.picker {
            p.on_probe_done(now, EndpointId(backend), answered);
        }
    }
}
