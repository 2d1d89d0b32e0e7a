//! The arrival schedule: when each client's requests are meant to start, and which of them are
//! streams. The simulator and the real load generator both follow it, so the two modes offer the
//! same load.
//!
//! Each client has its own [`ClientArrivals`], seeded from the run seed and the client's index
//! (`streams::ARRIVALS`), so adding a client does not change what the others draw:
//! - **Poisson** (open loop): exponential gaps at the client's share of the rate; the first
//!   arrival is one gap after time 0.
//! - **Constant** (open loop): evenly spaced; clients are staggered within one gap.
//! - **Closed** (closed loop): `concurrency` slots per client start at time 0, and each starts its
//!   next request when the previous one ends ([`ClientArrivals::after_completion`]).
//!
//! The order of draws is part of the schedule (it fixes every later draw): at each arrival, first
//! the gap to the next arrival, then the kind. [`OpenLoop`] merges every client's schedule into
//! one time-ordered sequence for a driver that paces itself in real time.
//!
//! ```
//! let s = lblab_model::Scenario::parse(r#"
//! name = "doc"
//! [workload]
//! rate = 1000
//! duration = "1s"
//! [[fleet]]
//! name = "b"
//! count = 2
//! service_time = { dist = "constant", value = "1ms" }
//! [[policies]]
//! name = "rr"
//! config = '{"loadBalancingConfig":[{"round_robin":{}}]}'
//! "#)?;
//! let arrivals: Vec<_> = lblab_model::arrival::OpenLoop::new(&s.workload, 7)?.collect();
//! assert!(arrivals.windows(2).all(|w| w[0].at <= w[1].at));
//! assert!(arrivals.len() > 900 && arrivals.len() < 1100, "{}", arrivals.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use lblab_policy::{Nanos, RpcKind, NANOS_PER_SEC};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
/// Why an arrival schedule cannot be made (a rate that gives no exponential distribution).
pub use rand_distr::ExpError;
use rand_distr::{Distribution, Exp};

use crate::method::Methods;
use crate::scenario::{derive_seed, streams, Arrival, Workload};

/// Closed loop: the least time between the starts of two requests of one slot, so that a backend
/// that answers in no time cannot hold virtual time still.
pub const MIN_CLOSED_LOOP_GAP: Nanos = 1_000;

/// Closed loop: how long a slot waits after a failed request before its next one; each further
/// failure in a row doubles the wait, up to [`CLOSED_LOOP_MAX_RETRY`] ([`retry_wait`]).
pub const CLOSED_LOOP_RETRY: Nanos = 1_000_000;

/// Closed loop: the longest wait of a slot whose requests keep failing.
pub const CLOSED_LOOP_MAX_RETRY: Nanos = 1_000_000_000;

/// Closed loop: how long a slot waits after its `failures`-th failed request in a row (0: none,
/// no wait): [`CLOSED_LOOP_RETRY`], doubled for each earlier failure, at most
/// [`CLOSED_LOOP_MAX_RETRY`]. A fleet that refuses calls (full queues, a backend down) thus sees
/// each slot back off as a well-behaved client does, rather than the same call re-sent once per
/// round trip: with millions of slots against room for thousands of calls, re-sending at once
/// makes the refusals the whole run.
pub fn retry_wait(failures: u32) -> Nanos {
    match failures {
        0 => 0,
        n => CLOSED_LOOP_RETRY
            .saturating_mul(1 << (n - 1).min(62))
            .min(CLOSED_LOOP_MAX_RETRY),
    }
}

#[derive(Debug, Clone, Copy)]
enum Gap {
    Poisson(Exp<f64>),
    /// The gap in ns, unrounded.
    Constant(f64),
    Closed,
}

/// One client's arrival schedule.
#[derive(Debug, Clone)]
pub struct ClientArrivals {
    rng: SmallRng,
    gap: Gap,
    client: u32,
    clients: u32,
    concurrency: u32,
    streaming_share: f64,
    methods: Methods,
    end: Nanos,
}

/// One arrival of [`ClientArrivals::arrive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrived {
    /// The kind of the request that arrives.
    pub kind: RpcKind,
    /// Its method (an index into `[[workload.methods]]`; 0 without methods, and for streams).
    pub method: u32,
    /// Open loop: when the client's next request arrives (`None`: not before the end).
    pub next: Option<Nanos>,
}

impl ClientArrivals {
    /// The schedule of client `client` of `workload` under run seed `seed`.
    pub fn new(workload: &Workload, seed: u64, client: u32) -> Result<Self, ExpError> {
        let per_client_rate = workload.rate / f64::from(workload.clients);
        let gap = match workload.arrival {
            Arrival::Poisson => Gap::Poisson(Exp::new(per_client_rate / NANOS_PER_SEC as f64)?),
            Arrival::Constant => Gap::Constant(NANOS_PER_SEC as f64 / per_client_rate),
            Arrival::Closed => Gap::Closed,
        };
        Ok(ClientArrivals {
            rng: SmallRng::seed_from_u64(derive_seed(seed, streams::ARRIVALS, u64::from(client))),
            gap,
            client,
            clients: workload.clients,
            concurrency: workload.concurrency,
            streaming_share: workload.streaming_share,
            methods: workload.methods.clone(),
            end: workload.end(),
        })
    }

    /// Whether requests start when earlier ones end (closed loop) rather than on a clock.
    #[inline]
    pub fn is_closed(&self) -> bool {
        matches!(self.gap, Gap::Closed)
    }

    /// The client's first arrivals: one time for an open loop, `concurrency` slots at time 0 for
    /// a closed one. Call once, before any [`arrive`](Self::arrive).
    pub fn starts(&mut self) -> Vec<Nanos> {
        match self.gap {
            Gap::Closed => vec![0; self.concurrency as usize],
            Gap::Constant(gap) => {
                vec![(gap * f64::from(self.client) / f64::from(self.clients)) as Nanos]
            }
            Gap::Poisson(_) => vec![self.next_gap()],
        }
    }

    #[inline]
    fn next_gap(&mut self) -> Nanos {
        match self.gap {
            Gap::Poisson(exp) => exp.sample(&mut self.rng) as Nanos,
            Gap::Constant(gap) => gap as Nanos,
            Gap::Closed => 0,
        }
    }

    /// A request arrives at `now`: its kind, and (open loop) when the next one does. `None` at or
    /// after the end of the run, when nothing arrives (and nothing is drawn).
    #[inline]
    pub fn arrive(&mut self, now: Nanos) -> Option<Arrived> {
        if now >= self.end {
            return None;
        }
        let next = match self.gap {
            Gap::Closed => None,
            _ => Some(now + self.next_gap().max(1)).filter(|&t| t < self.end),
        };
        let share = self.streaming_share;
        let kind = if share > 0.0 && self.rng.random_bool(share) {
            RpcKind::Streaming
        } else {
            RpcKind::Unary
        };
        // Drawn only when the workload names methods, after everything else, so that a workload
        // without methods draws exactly what it did before methods existed.
        let method = if kind == RpcKind::Unary && !self.methods.is_empty() {
            self.methods.of_draw(self.rng.random::<f64>())
        } else {
            0
        };
        Some(Arrived { kind, method, next })
    }

    /// Closed loop: when the slot whose request was intended at `intended` and ended at `now`
    /// starts its next one, after `failures` failed requests in a row (0 if this one succeeded);
    /// `None` after the end. A slot waits [`retry_wait`] after a failure, and a request answered
    /// in no time is followed at least [`MIN_CLOSED_LOOP_GAP`] after its start.
    #[inline]
    pub fn after_completion(&self, now: Nanos, intended: Nanos, failures: u32) -> Option<Nanos> {
        if !self.is_closed() || now >= self.end {
            return None;
        }
        Some(
            now.saturating_add(retry_wait(failures))
                .max(intended + MIN_CLOSED_LOOP_GAP),
        )
    }
}

/// One arrival of an [`OpenLoop`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenArrival {
    /// Intended send time, ns since time 0.
    pub at: Nanos,
    /// The client it belongs to.
    pub client: u32,
    /// Unary or streaming.
    pub kind: RpcKind,
}

/// Every client's open-loop schedule merged in time order (ties: the lower client first). Empty
/// for a closed loop.
#[derive(Debug, Clone)]
pub struct OpenLoop {
    clients: Vec<ClientArrivals>,
    heap: BinaryHeap<Reverse<(Nanos, u32)>>,
}

impl OpenLoop {
    /// The merged schedule of `workload` under run seed `seed`.
    pub fn new(workload: &Workload, seed: u64) -> Result<Self, ExpError> {
        let mut clients = Vec::with_capacity(workload.clients as usize);
        let mut heap = BinaryHeap::new();
        for c in 0..workload.clients {
            let mut a = ClientArrivals::new(workload, seed, c)?;
            if !a.is_closed() {
                for t in a.starts() {
                    heap.push(Reverse((t, c)));
                }
            }
            clients.push(a);
        }
        Ok(OpenLoop { clients, heap })
    }
}

impl Iterator for OpenLoop {
    type Item = OpenArrival;

    fn next(&mut self) -> Option<OpenArrival> {
        while let Some(Reverse((at, client))) = self.heap.pop() {
            let Some(a) = self.clients[client as usize].arrive(at) else {
                continue;
            };
            if let Some(next) = a.next {
                self.heap.push(Reverse((next, client)));
            }
            return Some(OpenArrival {
                at,
                client,
                kind: a.kind,
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ScenarioBuilder;

    /// Four clients, a quarter of their calls streams, for 2 s; `arrival` and its own key
    /// (`rate` or `concurrency`) as given.
    fn workload(arrival: &str, key: (&str, &str)) -> Workload {
        ScenarioBuilder::new("arrivals")
            .workload("rate", None)
            .clients(4)
            .workload("arrival", Some(&format!("{arrival:?}")))
            .workload("streaming_share", Some("0.25"))
            .workload(key.0, Some(key.1))
            .group("b", 1, r#"{ dist = "constant", value = "1ms" }"#, &[])
            .lb("rr", "round_robin")
            .build()
            .expect("valid scenario")
            .workload
    }

    #[test]
    fn constant_arrivals_are_evenly_spaced_and_clients_staggered() {
        let w = workload("constant", ("rate", "400"));
        let a: Vec<_> = OpenLoop::new(&w, 1).unwrap().take(8).collect();
        let times: Vec<Nanos> = a.iter().map(|a| a.at).collect();
        // 100 req/s per client: a 10 ms gap, four clients 2.5 ms apart.
        assert_eq!(
            times,
            [0, 2_500_000, 5_000_000, 7_500_000, 10_000_000, 12_500_000, 15_000_000, 17_500_000]
        );
        assert_eq!(
            a.iter().map(|a| a.client).collect::<Vec<_>>(),
            [0, 1, 2, 3, 0, 1, 2, 3]
        );
    }

    #[test]
    fn poisson_arrivals_offer_the_rate_and_the_streaming_share() {
        let w = workload("poisson", ("rate", "400"));
        let a: Vec<_> = OpenLoop::new(&w, 3).unwrap().collect();
        let n = a.len() as f64;
        assert!((n - 800.0).abs() < 100.0, "{n} arrivals in 2 s at 400/s");
        let streams = a.iter().filter(|a| a.kind == RpcKind::Streaming).count() as f64;
        assert!((streams / n - 0.25).abs() < 0.06, "{streams} of {n}");
        assert!(a.iter().all(|a| a.at < w.end()));
        // The same seed, the same schedule; another seed, another.
        let again: Vec<_> = OpenLoop::new(&w, 3).unwrap().collect();
        assert_eq!(a, again);
        let other: Vec<_> = OpenLoop::new(&w, 4).unwrap().collect();
        assert_ne!(a, other);
    }

    #[test]
    fn a_client_draws_the_same_whatever_the_other_clients_do() {
        let w = workload("poisson", ("rate", "400"));
        let alone: Vec<_> = {
            let mut c = ClientArrivals::new(&w, 9, 2).unwrap();
            let mut t = c.starts()[0];
            let mut out = vec![];
            while let Some(a) = c.arrive(t) {
                out.push((t, a.kind));
                match a.next {
                    Some(n) => t = n,
                    None => break,
                }
            }
            out
        };
        let merged: Vec<_> = OpenLoop::new(&w, 9)
            .unwrap()
            .filter(|a| a.client == 2)
            .map(|a| (a.at, a.kind))
            .collect();
        assert_eq!(alone, merged);
    }

    #[test]
    fn closed_loop_slots_start_at_zero_and_restart_on_completion() {
        let w = workload("closed", ("concurrency", "3"));
        assert_eq!(OpenLoop::new(&w, 1).unwrap().count(), 0);
        let mut c = ClientArrivals::new(&w, 1, 0).unwrap();
        assert_eq!(c.starts(), [0, 0, 0]);
        let a = c.arrive(0).unwrap();
        assert_eq!(a.next, None);
        assert_eq!(c.after_completion(5_000_000, 0, 0), Some(5_000_000));
        // Answered in no time: at least 1 µs later.
        assert_eq!(c.after_completion(7, 7, 0), Some(7 + MIN_CLOSED_LOOP_GAP));
        // Failed, at once or after a round trip: retried after 1 ms, then 2, 4, ... up to 1 s.
        assert_eq!(c.after_completion(7, 7, 1), Some(7 + CLOSED_LOOP_RETRY));
        assert_eq!(
            c.after_completion(500_000, 7, 1),
            Some(500_000 + CLOSED_LOOP_RETRY)
        );
        assert_eq!(
            c.after_completion(500_000, 7, 3),
            Some(500_000 + 4 * CLOSED_LOOP_RETRY)
        );
        assert_eq!(
            c.after_completion(500_000, 7, 40),
            Some(500_000 + CLOSED_LOOP_MAX_RETRY)
        );
        assert_eq!(c.after_completion(w.end(), 0, 0), None);
        assert_eq!(c.arrive(w.end()), None);
    }

    #[test]
    fn the_retry_wait_doubles_per_failure_in_a_row_up_to_its_bound() {
        assert_eq!(retry_wait(0), 0);
        assert_eq!(retry_wait(1), CLOSED_LOOP_RETRY);
        assert_eq!(retry_wait(2), 2 * CLOSED_LOOP_RETRY);
        assert_eq!(retry_wait(10), 512 * CLOSED_LOOP_RETRY);
        // 1,024 ms is past the bound, and so is every later failure, however many.
        for n in [11, 30, 31, 32, 64, u32::MAX] {
            assert_eq!(retry_wait(n), CLOSED_LOOP_MAX_RETRY, "{n}");
        }
    }
}
