//! Backends going down and clients reconnecting: what a crash does to the calls it held and to
//! every client's connection, and gRPC's reconnect backoff until the backend is back.

use lblab_policy::{Connectivity, Nanos};

use super::{Event, World};
use crate::request::ReqRef;

impl World<'_> {
    /// A backend process goes down (`up` false) or comes back.
    pub(super) fn on_availability(&mut self, now: Nanos, backend: u32, up: bool) {
        if !up {
            let half = self.half_rtt(backend);
            for token in self.backends[backend as usize].on_crash(now) {
                let r = ReqRef::from_token(token);
                if self.is_live(r) {
                    self.reqs[r.slot as usize].at_server = false;
                    self.queue
                        .schedule(now + half, Event::AtClient { req: r, ok: false });
                }
            }
            for c in 0..self.clients.len() as u32 {
                self.queue.schedule(
                    now + half,
                    Event::Conn {
                        client: c,
                        backend,
                        state: Connectivity::TransientFailure,
                    },
                );
                let retry = now
                    + half
                    + self
                        .backoff
                        .delay(0, &mut self.clients[c as usize].misc_rng);
                self.queue.schedule(
                    retry,
                    Event::Reconnect {
                        client: c,
                        backend,
                        attempt: 1,
                    },
                );
            }
        }
        // Coming back up is noticed by the clients' reconnect attempts.
    }

    /// A client tries to reconnect to a backend.
    pub(super) fn on_reconnect(&mut self, now: Nanos, client: u32, backend: u32, attempt: u32) {
        if self.clients[client as usize].conn[backend as usize] == Connectivity::Ready {
            return;
        }
        if self.backends[backend as usize].timeline().down_at(now) {
            if now < self.end {
                let retry = now
                    + self
                        .backoff
                        .delay(attempt, &mut self.clients[client as usize].misc_rng);
                self.queue.schedule(
                    retry,
                    Event::Reconnect {
                        client,
                        backend,
                        attempt: attempt + 1,
                    },
                );
            }
        } else {
            // A TCP + HTTP/2 handshake takes about one round trip.
            let rtt = 2 * self.half_rtt(backend);
            self.set_conn(now, client, backend, Connectivity::Connecting);
            self.queue.schedule(
                now + rtt,
                Event::Conn {
                    client,
                    backend,
                    state: Connectivity::Ready,
                },
            );
        }
    }
}
