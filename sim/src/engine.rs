//! The discrete-event engine: clients with their own policy instances, backends running the model
//! crate's behaviour, a network with a fixed round trip per backend group, deadlines,
//! connectivity changes on crash and restart, policy timers and out-of-band load reports.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use lblab_model::arrival::ClientArrivals;
use lblab_model::backend::{Admission, Backend, Started};
use lblab_model::backoff::Backoff;
use lblab_model::scenario::{derive_seed, streams, Scenario, ORACLE};
use lblab_policy::config::Selected;
use lblab_policy::{Connectivity, EndpointId, Nanos, Outcome, Pick, Policy, RpcKind, Status};
use lblab_record::{Recorder, RequestResult};
use rand::rngs::SmallRng;
use rand::SeedableRng;

mod availability;
mod probes;

use crate::queue::EventQueue;
use crate::request::{is_measured, Req, ReqRef, NO_BACKEND};
use crate::SimError;

/// How far the deadline lane may outgrow twice the live calls before its moot deadlines are
/// dropped: a run whose rate times deadline stays below it never compacts; each compaction at
/// least halves the lane, so its cost spread over the calls added since is constant.
const LANE_SLACK: usize = 4096;

/// Whether `r` is still the call in its slot and has not ended.
fn live(reqs: &[Req], r: ReqRef) -> bool {
    reqs.get(r.slot as usize)
        .is_some_and(|q| q.live && q.gen == r.gen)
}

#[derive(Debug, Clone, Copy)]
enum Event {
    /// The next request of a client is due; in a closed loop, its slot's failed requests in a
    /// row so far (0 in an open loop).
    Arrival { client: u32, failures: u32 },
    /// A request reaches its backend.
    AtBackend { req: ReqRef },
    /// A backend finishes a request.
    ServerDone { req: ReqRef },
    /// A reply (OK or error) reaches the client.
    AtClient { req: ReqRef, ok: bool },
    /// A request's deadline.
    Deadline { req: ReqRef },
    /// A client's policy timer.
    Timer { client: u32 },
    /// A client asks every backend for an out-of-band load report.
    Oob { client: u32 },
    /// A client sends a health Check probe to every READY backend it has none pending on.
    Probe { client: u32 },
    /// A probe sent at `sent` ends: answered, or refused.
    ProbeDone {
        client: u32,
        backend: u32,
        sent: Nanos,
        answered: bool,
    },
    /// A backend process goes down or comes back.
    Availability { backend: u32, up: bool },
    /// A client's connection to a backend changes state.
    Conn {
        client: u32,
        backend: u32,
        state: Connectivity,
    },
    /// A client tries to reconnect to a backend.
    Reconnect {
        client: u32,
        backend: u32,
        attempt: u32,
    },
}

/// How a client picks.
#[derive(Debug)]
enum Picker {
    Policy(Box<dyn Policy>),
    /// Knows every backend's true queue and speed; picks the least expected completion time.
    Oracle,
}

#[derive(Debug)]
struct Client {
    picker: Picker,
    policy_rng: SmallRng,
    arrivals: ClientArrivals,
    misc_rng: SmallRng,
    /// Connection state per backend, as the client sees it.
    conn: Vec<Connectivity>,
    /// Requests waiting for a READY endpoint.
    pending: VecDeque<ReqRef>,
    timer_at: Option<Nanos>,
    /// Per backend, when the pending probe was sent ([`NO_PROBE`] if none); empty unless the
    /// policy probes.
    probe_sent: Vec<Nanos>,
}

/// No probe pending.
const NO_PROBE: Nanos = Nanos::MAX;

/// Counters of one run.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunStats {
    /// Events processed.
    pub events: u64,
    /// Requests generated (warm-up included).
    pub requests: u64,
    /// Requests generated at or after the warm-up: every one of them ends up in the summary as
    /// ok, error or dropped (`requests == ok + errors + dropped` of the summary row).
    pub measured: u64,
    /// Whether the run was stopped early.
    pub interrupted: bool,
}

/// One simulation of one policy over a scenario.
pub(crate) struct World<'a> {
    scenario: &'a Scenario,
    backends: Vec<Backend>,
    clients: Vec<Client>,
    reqs: Vec<Req>,
    free: Vec<u32>,
    queue: EventQueue<Event>,
    pub(crate) recorder: Recorder,
    end: Nanos,
    backoff: Backoff,
    pub(crate) stats: RunStats,
    /// Per backend, half its group's network round trip: read on every hop, so kept apart from
    /// the large backend specs (at 10,000 backends a cache miss per hop was measurable).
    half_rtts: Vec<Nanos>,
    /// Per backend, its fault windows (empty for most backends), for the same reason.
    fault_windows: Vec<&'a [(Nanos, Nanos)]>,
}

impl<'a> World<'a> {
    pub(crate) fn new(
        scenario: &'a Scenario,
        policy: &Selected,
        label: &str,
    ) -> Result<Self, SimError> {
        let seed = scenario.file.seed;
        let w = &scenario.workload;
        let backends: Vec<Backend> = scenario
            .backends
            .iter()
            .map(|b| Backend::new(b.params.clone(), b.timeline.clone(), b.seed))
            .collect();
        let ids: Vec<EndpointId> = (0..backends.len() as u32).map(EndpointId).collect();
        let specs = &scenario.backends;
        let mut clients = Vec::with_capacity(w.clients as usize);
        for c in 0..w.clients {
            let picker = match policy {
                Selected::Policy(cfg) => {
                    let mut p = cfg.build(0);
                    p.set_endpoints(0, &ids);
                    Picker::Policy(p)
                }
                Selected::Extra { name, .. } if name == ORACLE => Picker::Oracle,
                Selected::Extra { name, .. } => {
                    return Err(SimError::Unsupported {
                        policy: label.to_string(),
                        name: name.clone(),
                    })
                }
            };
            let c = u64::from(c);
            clients.push(Client {
                picker,
                policy_rng: SmallRng::seed_from_u64(derive_seed(seed, streams::POLICY, c)),
                arrivals: ClientArrivals::new(w, seed, c as u32)
                    .map_err(|e| SimError::Config(e.to_string()))?,
                misc_rng: SmallRng::seed_from_u64(derive_seed(seed, streams::POLICY + 100, c)),
                conn: vec![Connectivity::Idle; backends.len()],
                pending: VecDeque::new(),
                timer_at: None,
                probe_sent: Vec::new(),
            });
        }
        Ok(World {
            scenario,
            recorder: Recorder::new(label, backends.len(), w.warmup),
            backends,
            clients,
            reqs: Vec::new(),
            free: Vec::new(),
            queue: EventQueue::new(),
            end: w.end(),
            backoff: Backoff::default(),
            stats: RunStats::default(),
            half_rtts: specs.iter().map(|b| b.network_rtt / 2).collect(),
            fault_windows: specs.iter().map(|b| b.timeline.windows()).collect(),
        })
    }

    /// Runs to the end (or until `stop` is set), publishing its simulated clock in `clock`
    /// every [`CLOCK_EVERY`](crate::CLOCK_EVERY) events.
    pub(crate) fn run(&mut self, stop: Option<&AtomicBool>, clock: Option<&AtomicU64>) {
        self.start();
        let horizon = self.end + self.scenario.workload.drain();
        let mut last = 0;
        while let Some((now, event)) = self.queue.pop() {
            if now > horizon {
                // What has not ended by now is cut off, as the real load generator cuts it.
                last = horizon;
                break;
            }
            last = now;
            self.stats.events += 1;
            // A relaxed load is a plain read: checking every 64 events costs nothing measurable
            // and keeps Ctrl-C prompt even when single events are expensive.
            if self.stats.events & 0x3F == 0 && stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                self.stats.interrupted = true;
                break;
            }
            if self.stats.events.is_multiple_of(crate::CLOCK_EVERY) {
                if let Some(clock) = clock {
                    clock.store(now.min(self.end), Ordering::Relaxed);
                }
            }
            self.handle(now, event);
        }
        self.close_open_requests(last);
        if let (Some(clock), false) = (clock, self.stats.interrupted) {
            clock.store(self.end, Ordering::Relaxed);
        }
    }

    /// Accounts for the requests still open when the run stops, after an interruption or at the
    /// end of the drain (`Workload::drain`: a stream longer than the run, a call swallowed by a
    /// black hole with a long deadline): they never ended, so they are dropped, as in the real
    /// load generator.
    fn close_open_requests(&mut self, now: Nanos) {
        let result = RequestResult::Dropped;
        for r in self.reqs.iter().filter(|r| r.live && r.measured) {
            match r.kind {
                RpcKind::Unary => self
                    .recorder
                    .on_result(r.intended, now.max(r.intended), result),
                RpcKind::Streaming => self.recorder.on_stream_result(r.intended, result),
            }
        }
    }

    fn start(&mut self) {
        for b in 0..self.backends.len() as u32 {
            let up = !self.backends[b as usize].timeline().down_at(0);
            for c in 0..self.clients.len() as u32 {
                let state = if up {
                    Connectivity::Ready
                } else {
                    Connectivity::TransientFailure
                };
                self.set_conn(0, c, b, state);
                if !up {
                    self.queue.schedule(
                        0,
                        Event::Reconnect {
                            client: c,
                            backend: b,
                            attempt: 0,
                        },
                    );
                }
            }
            for (t, up) in self.backends[b as usize].timeline().availability_changes() {
                if t > 0 && t < self.end {
                    self.queue
                        .schedule(t, Event::Availability { backend: b, up });
                }
            }
        }
        for c in 0..self.clients.len() as u32 {
            for at in self.clients[c as usize].arrivals.starts() {
                self.queue.schedule(
                    at,
                    Event::Arrival {
                        client: c,
                        failures: 0,
                    },
                );
            }
            self.arm_timer(0, c);
            if let Picker::Policy(p) = &self.clients[c as usize].picker {
                if let Some(period) = p.oob_reporting_period() {
                    self.queue.schedule(period.max(1), Event::Oob { client: c });
                }
                if let Some(interval) = p.probe_interval() {
                    // Clients' probes spread evenly over the interval, not all at once.
                    let n = self.clients.len() as u64;
                    let first = interval.saturating_mul(u64::from(c)) / n;
                    self.clients[c as usize].probe_sent = vec![NO_PROBE; self.backends.len()];
                    self.queue.schedule(first, Event::Probe { client: c });
                }
            }
        }
    }

    fn arm_timer(&mut self, now: Nanos, client: u32) {
        let c = &mut self.clients[client as usize];
        let Picker::Policy(p) = &c.picker else { return };
        match p.next_timer() {
            Some(at) if at < self.end => {
                let at = at.max(now);
                if c.timer_at != Some(at) {
                    c.timer_at = Some(at);
                    self.queue.schedule(at, Event::Timer { client });
                }
            }
            _ => c.timer_at = None,
        }
    }

    fn set_conn(&mut self, now: Nanos, client: u32, backend: u32, state: Connectivity) {
        if state != Connectivity::Ready {
            // A probe pending on a connection that went fails with it.
            if let Some(&sent) = self.clients[client as usize]
                .probe_sent
                .get(backend as usize)
            {
                self.end_probe(now, client, backend, sent, false);
            }
        }
        let c = &mut self.clients[client as usize];
        c.conn[backend as usize] = state;
        if let Picker::Policy(p) = &mut c.picker {
            p.on_connectivity(now, EndpointId(backend), state);
        }
        if state == Connectivity::Ready && !c.pending.is_empty() {
            let waiting: Vec<ReqRef> = c.pending.drain(..).collect();
            for r in waiting {
                if self.is_live(r) {
                    self.reqs[r.slot as usize].pending = false;
                    self.dispatch(now, r);
                }
            }
        }
    }

    fn is_live(&self, r: ReqRef) -> bool {
        live(&self.reqs, r)
    }

    fn handle(&mut self, now: Nanos, event: Event) {
        match event {
            Event::Arrival { client, failures } => self.on_arrival(now, client, failures),
            Event::AtBackend { req } => self.on_at_backend(now, req),
            Event::ServerDone { req } => self.on_server_done(now, req),
            Event::AtClient { req, ok } => {
                if self.is_live(req) {
                    self.complete(now, req, if ok { Status::Ok } else { Status::Error });
                }
            }
            Event::Deadline { req } => self.on_deadline(now, req),
            Event::Timer { client } => {
                let c = &mut self.clients[client as usize];
                if c.timer_at == Some(now) {
                    c.timer_at = None;
                    if let Picker::Policy(p) = &mut c.picker {
                        p.on_timer(now, &mut c.policy_rng);
                    }
                    self.arm_timer(now, client);
                }
            }
            Event::Oob { client } => {
                let c = &mut self.clients[client as usize];
                if let Picker::Policy(p) = &mut c.picker {
                    for (b, backend) in self.backends.iter_mut().enumerate() {
                        if c.conn[b] == Connectivity::Ready {
                            let report = backend.load_report(now);
                            p.on_load_report(now, EndpointId(b as u32), &report);
                        }
                    }
                    if let Some(period) = p.oob_reporting_period() {
                        if now + period < self.end {
                            self.queue
                                .schedule(now + period.max(1), Event::Oob { client });
                        }
                    }
                }
            }
            Event::Probe { client } => self.send_probes(now, client),
            Event::ProbeDone {
                client,
                backend,
                sent,
                answered,
            } => self.end_probe(now, client, backend, sent, answered),
            Event::Availability { backend, up } => self.on_availability(now, backend, up),
            Event::Conn {
                client,
                backend,
                state,
            } => self.set_conn(now, client, backend, state),
            Event::Reconnect {
                client,
                backend,
                attempt,
            } => self.on_reconnect(now, client, backend, attempt),
        }
    }

    /// Handles `event` after `delay`: at once when the delay is 0 (a zero-RTT network hop), which
    /// saves a trip through the queue, else through the queue.
    fn after(&mut self, now: Nanos, delay: Nanos, event: Event) {
        if delay == 0 {
            self.handle(now, event);
        } else {
            self.queue.schedule(now + delay, event);
        }
    }

    #[inline]
    fn half_rtt(&self, backend: u32) -> Nanos {
        self.half_rtts[backend as usize]
    }

    /// Whether `backend` has a fault active at `now` (`Timeline::faulty_at`).
    #[inline]
    fn faulty_at(&self, backend: usize, now: Nanos) -> bool {
        self.fault_windows[backend]
            .iter()
            .any(|&(s, e)| s <= now && now < e)
    }

    fn alloc(
        &mut self,
        client: u32,
        kind: RpcKind,
        method: u32,
        measured: bool,
        intended: Nanos,
    ) -> ReqRef {
        let req = Req {
            gen: 0,
            live: true,
            client,
            backend: NO_BACKEND,
            kind,
            method,
            measured,
            intended,
            sent: intended,
            ticket: None,
            at_server: false,
            pending: false,
            load: None,
            failures: 0,
        };
        match self.free.pop() {
            Some(slot) => {
                let r = &mut self.reqs[slot as usize];
                let gen = r.gen.wrapping_add(1);
                *r = Req { gen, ..req };
                ReqRef { slot, gen }
            }
            None => {
                self.reqs.push(req);
                ReqRef {
                    slot: (self.reqs.len() - 1) as u32,
                    gen: 0,
                }
            }
        }
    }

    fn on_arrival(&mut self, now: Nanos, client: u32, failures: u32) {
        let w = &self.scenario.workload;
        let Some(arrived) = self.clients[client as usize].arrivals.arrive(now) else {
            return;
        };
        if let Some(next) = arrived.next {
            self.queue.schedule(
                next,
                Event::Arrival {
                    client,
                    failures: 0,
                },
            );
        }
        self.stats.requests += 1;
        let kind = arrived.kind;
        let measured = is_measured(w.measured_method, kind, arrived.method);
        if now >= w.warmup && measured {
            self.stats.measured += 1;
        }
        let req = self.alloc(client, kind, arrived.method, measured, now);
        self.reqs[req.slot as usize].failures = failures;
        if kind == RpcKind::Unary {
            self.queue
                .schedule_in_order(now + w.deadline, Event::Deadline { req });
            // A call that ends before its deadline leaves that event behind. Where calls end far
            // sooner (a closed loop whose calls fail at once), those would pile up to the rate
            // times the deadline: drop them once they outnumber the live calls, at a cost
            // proportional to what was added since the last time.
            let in_flight = self.reqs.len() - self.free.len();
            if self.queue.lane_len() > 2 * in_flight + LANE_SLACK {
                let reqs = &self.reqs;
                self.queue.compact_lane(|e| match e {
                    Event::Deadline { req } => live(reqs, *req),
                    _ => true,
                });
            }
        }
        self.dispatch(now, req);
    }

    /// Picks an endpoint for `req` and sends it, queues it, or fails it.
    fn dispatch(&mut self, now: Nanos, req: ReqRef) {
        let (client, kind, method) = {
            let r = &self.reqs[req.slot as usize];
            (r.client, r.kind, r.method)
        };
        let c = &mut self.clients[client as usize];
        let picked = match &mut c.picker {
            Picker::Policy(p) => match p.pick_method(now, kind, method, &mut c.policy_rng) {
                Pick::Endpoint(ticket) => Ok((ticket.endpoint().0, Some(ticket))),
                Pick::Queue => Err(true),
                Pick::Fail => Err(false),
            },
            Picker::Oracle => crate::oracle::pick(
                &self.backends,
                &self.scenario.backends,
                &c.conn,
                now,
                method,
                &mut c.policy_rng,
            )
            .map(|b| (b, None)),
        };
        match picked {
            Ok((backend, ticket)) => {
                let faulty = self.faulty_at(backend as usize, now);
                let r = &mut self.reqs[req.slot as usize];
                r.backend = backend;
                r.ticket = ticket;
                r.sent = now;
                if r.measured {
                    self.recorder.on_send(r.intended, backend as usize, faulty);
                }
                self.after(now, self.half_rtt(backend), Event::AtBackend { req });
            }
            Err(true) => {
                self.reqs[req.slot as usize].pending = true;
                self.clients[client as usize].pending.push_back(req);
            }
            Err(false) => self.complete(now, req, Status::Error),
        }
    }

    fn on_at_backend(&mut self, now: Nanos, req: ReqRef) {
        if !self.is_live(req) {
            return; // its deadline passed on the way
        }
        let (backend, kind, method) = {
            let r = &self.reqs[req.slot as usize];
            (r.backend, r.kind, r.method)
        };
        match self.backends[backend as usize].on_arrival(now, req.token(), kind, method) {
            Admission::Started(s) => {
                self.reqs[req.slot as usize].at_server = true;
                self.schedule_done(s);
            }
            Admission::Queued => {
                self.reqs[req.slot as usize].at_server = true;
                // The herd measure: could this call have started at once elsewhere? A scan that
                // stops at the first free worker, on a backend without an active fault.
                let avoidable = self
                    .backends
                    .iter()
                    .enumerate()
                    .any(|(i, b)| b.busy() < b.workers() && !self.faulty_at(i, now));
                let r = &self.reqs[req.slot as usize];
                if avoidable && r.measured {
                    self.recorder.on_avoidable_wait(r.intended);
                }
            }
            Admission::Rejected | Admission::Failed | Admission::Down => {
                self.after(
                    now,
                    self.half_rtt(backend),
                    Event::AtClient { req, ok: false },
                );
            }
            Admission::Swallowed => {}
        }
    }

    fn schedule_done(&mut self, s: Started) {
        if s.done_at != Nanos::MAX {
            self.queue.schedule(
                s.done_at,
                Event::ServerDone {
                    req: ReqRef::from_token(s.token),
                },
            );
        }
    }

    fn on_server_done(&mut self, now: Nanos, req: ReqRef) {
        if !self.is_live(req) || !self.reqs[req.slot as usize].at_server {
            return; // cancelled, or lost in a crash
        }
        let r = &mut self.reqs[req.slot as usize];
        r.at_server = false;
        let (backend, kind) = (r.backend, r.kind);
        let b = &mut self.backends[backend as usize];
        if kind == RpcKind::Unary {
            if let Some(next) = b.on_finish(now, req.token()) {
                self.schedule_done(next);
            }
        }
        let b = &mut self.backends[backend as usize];
        self.reqs[req.slot as usize].load = Some(b.load_report(now));
        self.after(
            now,
            self.half_rtt(backend),
            Event::AtClient { req, ok: true },
        );
    }

    fn on_deadline(&mut self, now: Nanos, req: ReqRef) {
        if !self.is_live(req) {
            return;
        }
        let r = &mut self.reqs[req.slot as usize];
        let (at_server, pending, backend, client) = (r.at_server, r.pending, r.backend, r.client);
        r.at_server = false;
        if at_server {
            if let Some(next) = self.backends[backend as usize].on_cancel(now, req.token()) {
                self.schedule_done(next);
            }
        }
        if pending {
            self.clients[client as usize].pending.retain(|p| *p != req);
        }
        self.complete(now, req, Status::DeadlineExceeded);
    }

    /// Ends a request: tells its policy and the recorder, frees its slot, and in a closed loop
    /// starts the client's next request.
    fn complete(&mut self, now: Nanos, req: ReqRef, status: Status) {
        let r = &mut self.reqs[req.slot as usize];
        r.live = false;
        r.pending = false;
        let (client, backend, ticket, sent, intended, load, kind, measured, failures) = (
            r.client,
            r.backend,
            r.ticket.take(),
            r.sent,
            r.intended,
            r.load.take(),
            r.kind,
            r.measured,
            if status == Status::Ok {
                0
            } else {
                r.failures.saturating_add(1)
            },
        );
        if let (Some(ticket), Picker::Policy(p)) =
            (ticket, &mut self.clients[client as usize].picker)
        {
            let mut outcome = Outcome::new(status, now - sent);
            outcome.load = load;
            p.on_done(now, ticket, outcome);
        }
        let result = match status {
            Status::Ok => RequestResult::Ok,
            Status::DeadlineExceeded => RequestResult::DeadlineExceeded,
            Status::Error | Status::Cancelled => RequestResult::Error,
        };
        match kind {
            _ if !measured => {}
            RpcKind::Unary => self.recorder.on_result(intended, now, result),
            RpcKind::Streaming => self.recorder.on_stream_result(intended, result),
        }
        if backend != NO_BACKEND && measured {
            self.recorder
                .on_backend_result(backend as usize, intended, now, result);
        }
        self.free.push(req.slot);
        let arrivals = &self.clients[client as usize].arrivals;
        if let Some(at) = arrivals.after_completion(now, intended, failures) {
            self.queue.schedule(at, Event::Arrival { client, failures });
        }
    }
}
