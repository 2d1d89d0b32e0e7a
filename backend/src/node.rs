//! One emulated backend: the model's [`Backend`] state machine behind a mutex, driven in
//! wall-clock time, and the `lblab.v1.Echo` service that runs requests through it.
//!
//! The one loop (see STYLE.md): a handler calls [`Backend::on_arrival`]; a request that starts gets
//! a timer at its `done_at`; the timer calls [`Backend::on_finish`], which may start a queued
//! request (another timer), and wakes the handler; a handler dropped early (the client cancelled or
//! its deadline passed) calls [`Backend::on_cancel`]. Model time is the wall clock in nanoseconds
//! since the fleet's origin, and `on_finish` is called with the model's `done_at`, not the instant
//! the timer actually fired, so timer lateness never accumulates into the model.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use lblab_model::backend::{Admission, Backend, Started};
use lblab_model::probe::HEALTH_CHECK_WORK;
use lblab_policy::{Nanos, RpcKind};
use tokio::sync::oneshot;
use tokio_stream::Stream;
use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::{Request, Response, Status};

use lblab_wire::orca::{self, ORCA_KEY};
use lblab_wire::pb::echo::echo_server::Echo;
use lblab_wire::pb::echo::{CallReply, CallRequest};
use lblab_wire::timer::TimerHandle;
use lblab_wire::Clock;

/// Why a waiting request will not be answered normally.
#[derive(Debug, Clone, Copy)]
enum Lost {
    Crashed,
}

struct Waiter {
    tx: oneshot::Sender<Result<Nanos, Lost>>,
}

pub(crate) struct NodeState {
    model: Backend,
    next_token: u64,
    waiting: HashMap<u64, Waiter>,
    /// Actual − requested completion time of every unary request, ns.
    pub(crate) delay_error: Histogram<u64>,
    /// Requests answered before their `done_at` (should stay 0).
    pub(crate) early: u64,
}

/// One backend of the fleet.
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) clock: Clock,
    timer: TimerHandle,
    half_rtt: Nanos,
    state: Mutex<NodeState>,
}

impl Node {
    pub(crate) fn new(
        name: String,
        model: Backend,
        clock: Clock,
        timer: TimerHandle,
        rtt: Nanos,
    ) -> Self {
        Node {
            name,
            clock,
            timer,
            half_rtt: rtt / 2,
            state: Mutex::new(NodeState {
                model,
                next_token: 0,
                waiting: HashMap::new(),
                delay_error: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                    .expect("valid histogram bounds"),
                early: 0,
            }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, NodeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Arms timers for started requests, finishing at once those already due.
    fn start_all(self: &Arc<Self>, st: &mut NodeState, mut next: Option<Started>) {
        while let Some(s) = next.take() {
            if s.done_at == Nanos::MAX {
                break; // stopped for ever: the client's deadline will end it
            }
            if s.done_at <= self.clock.now() {
                next = Self::finish_locked(st, s.token, s.done_at);
            } else {
                let node = self.clone();
                let (token, done_at) = (s.token, s.done_at);
                self.timer.at(self.clock.instant(done_at), move || {
                    node.on_timer(token, done_at)
                });
            }
        }
    }

    fn finish_locked(st: &mut NodeState, token: u64, done_at: Nanos) -> Option<Started> {
        // No waiter: the request was cancelled or lost in a crash, and its worker already freed.
        let w = st.waiting.remove(&token)?;
        let next = st.model.on_finish(done_at, token);
        let _ = w.tx.send(Ok(done_at));
        next
    }

    fn on_timer(self: &Arc<Self>, token: u64, done_at: Nanos) {
        let mut st = self.lock();
        let next = Self::finish_locked(&mut st, token, done_at);
        self.start_all(&mut st, next);
    }

    /// The process crashes now: every request running or queued is lost.
    pub(crate) fn crash(&self) {
        let mut st = self.lock();
        let now = self.clock.now();
        for token in st.model.on_crash(now) {
            if let Some(w) = st.waiting.remove(&token) {
                let _ = w.tx.send(Err(Lost::Crashed));
            }
        }
    }

    fn report_metadata(st: &mut NodeState, now: Nanos) -> MetadataMap {
        let mut md = MetadataMap::new();
        let bytes = orca::encode(&st.model.load_report(now));
        md.insert_bin(ORCA_KEY, MetadataValue::from_bytes(&bytes));
        md
    }

    fn status(st: &mut NodeState, now: Nanos, code: tonic::Code, msg: &str) -> Status {
        Status::with_metadata(code, msg.to_string(), Self::report_metadata(st, now))
    }

    async fn half_trip(&self) {
        if self.half_rtt > 0 {
            let at = Instant::now() + Duration::from_nanos(self.half_rtt);
            self.timer.sleep_until(at).await;
        }
    }

    /// Holds a `grpc.health.v1.Health` call as the backend's faults would (what
    /// `lblab_model::probe` says a health Check sees): the network's round trip, a black hole
    /// that never answers, and [`HEALTH_CHECK_WORK`] of work through the fault timeline, so a
    /// pause or throttling delays it; it takes no worker and waits in no queue.
    pub(crate) async fn health_gate(&self) {
        self.half_trip().await;
        let now = self.clock.now();
        let done = {
            let st = self.lock();
            let timeline = st.model.timeline();
            if timeline.black_hole_at(now) {
                Nanos::MAX
            } else {
                timeline.finish_time(now, HEALTH_CHECK_WORK)
            }
        };
        if done == Nanos::MAX {
            return std::future::pending().await;
        }
        if done > now {
            self.timer.sleep_until(self.clock.instant(done)).await;
        }
        self.half_trip().await;
    }

    async fn unary(self: &Arc<Self>, id: u64) -> Result<Response<CallReply>, Status> {
        self.half_trip().await;
        let now = self.clock.now();
        let (rx, token) = {
            let mut st = self.lock();
            let token = st.next_token;
            st.next_token += 1;
            let admission = st.model.on_arrival(now, token, RpcKind::Unary, 0);
            match admission {
                Admission::Started(_) | Admission::Queued => {
                    let (tx, rx) = oneshot::channel();
                    st.waiting.insert(token, Waiter { tx });
                    if let Admission::Started(s) = admission {
                        self.start_all(&mut st, Some(s));
                    }
                    (Some(rx), token)
                }
                Admission::Rejected => {
                    return Err(Self::status(
                        &mut st,
                        now,
                        tonic::Code::ResourceExhausted,
                        "queue full",
                    ))
                }
                Admission::Failed => {
                    return Err(Self::status(
                        &mut st,
                        now,
                        tonic::Code::Unavailable,
                        "fail-fast fault",
                    ))
                }
                Admission::Down => {
                    return Err(Self::status(
                        &mut st,
                        now,
                        tonic::Code::Unavailable,
                        "backend down",
                    ))
                }
                Admission::Swallowed => (None, token),
            }
        };
        let Some(rx) = rx else {
            // A black hole: never answer; the client's deadline ends the call.
            return std::future::pending().await;
        };
        let mut guard = CancelGuard {
            node: self,
            token,
            armed: true,
        };
        let outcome = rx.await;
        guard.armed = false;
        let done_at = match outcome {
            Ok(Ok(done_at)) => done_at,
            Ok(Err(Lost::Crashed)) | Err(_) => return Err(Status::unavailable("backend crashed")),
        };
        let metadata = {
            let observed = self.clock.now();
            let mut st = self.lock();
            if observed >= done_at {
                let _ = st.delay_error.record((observed - done_at).max(1));
            } else {
                st.early += 1;
            }
            Self::report_metadata(&mut st, observed)
        };
        self.half_trip().await;
        let mut resp = Response::new(CallReply {
            id,
            backend: self.name.clone(),
            payload: Default::default(),
        });
        *resp.metadata_mut() = metadata;
        Ok(resp)
    }

    async fn stream(self: &Arc<Self>, id: u64) -> Result<Response<ReplyStream>, Status> {
        self.half_trip().await;
        let now = self.clock.now();
        let (admission, metadata) = {
            let mut st = self.lock();
            let token = st.next_token;
            st.next_token += 1;
            let a = st.model.on_arrival(now, token, RpcKind::Streaming, 0);
            (a, Self::report_metadata(&mut st, now))
        };
        let done_at = match admission {
            Admission::Started(s) => s.done_at,
            Admission::Swallowed => return std::future::pending().await,
            Admission::Rejected => {
                return Err(Status::with_metadata(
                    tonic::Code::ResourceExhausted,
                    "queue full",
                    metadata,
                ))
            }
            Admission::Queued | Admission::Failed | Admission::Down => {
                return Err(Status::with_metadata(
                    tonic::Code::Unavailable,
                    "unavailable",
                    metadata,
                ))
            }
        };
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        let node = self.clone();
        let half = Duration::from_nanos(self.half_rtt);
        tokio::spawn(async move {
            let reply = |n: u64| CallReply {
                id: id.wrapping_add(n),
                backend: node.name.clone(),
                payload: Default::default(),
            };
            if tx.send(Ok(reply(0))).await.is_err() {
                return;
            }
            if done_at != Nanos::MAX {
                node.timer
                    .sleep_until(node.clock.instant(done_at) + half)
                    .await;
                let _ = tx.send(Ok(reply(1))).await;
            } else {
                tx.closed().await;
            }
        });
        self.half_trip().await;
        let stream: ReplyStream = Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx));
        let mut resp = Response::new(stream);
        *resp.metadata_mut() = metadata;
        Ok(resp)
    }
}

/// Frees the request's worker (or queue slot) when a handler is dropped before its answer.
struct CancelGuard<'a> {
    node: &'a Arc<Node>,
    token: u64,
    armed: bool,
}

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let now = self.node.clock.now();
        let mut st = self.node.lock();
        if st.waiting.remove(&self.token).is_some() {
            let next = st.model.on_cancel(now, self.token);
            self.node.start_all(&mut st, next);
        }
    }
}

/// The response stream of `Echo.ServerStream`.
pub type ReplyStream = Pin<Box<dyn Stream<Item = Result<CallReply, Status>> + Send>>;

/// The `lblab.v1.Echo` service of one node.
#[derive(Clone)]
pub(crate) struct EchoService {
    pub(crate) node: Arc<Node>,
}

#[tonic::async_trait]
impl Echo for EchoService {
    async fn unary(&self, request: Request<CallRequest>) -> Result<Response<CallReply>, Status> {
        self.node.unary(request.get_ref().id).await
    }

    type ServerStreamStream = ReplyStream;

    async fn server_stream(
        &self,
        request: Request<CallRequest>,
    ) -> Result<Response<ReplyStream>, Status> {
        self.node.stream(request.get_ref().id).await
    }
}
