//! The tower service: a call picked by the policy, sent on its endpoint's connection, its
//! ticket completed exactly once.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use lblab_policy::{EndpointId, Nanos, Pick, RpcKind, Status};
use lblab_wire::orca;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tower::Service;

use super::body::PolicyBody;
use super::completion::{status_class, Completion};
use super::conn::error_chain;
use super::shared::Core;
use super::shared::Shared;

/// Which endpoint a call was sent to: put one in a request's extensions and read it afterwards.
/// Clones share the value.
#[derive(Debug, Clone)]
pub struct Picked(Arc<AtomicU32>);

impl Default for Picked {
    fn default() -> Self {
        Picked(Arc::new(AtomicU32::new(u32::MAX)))
    }
}

impl Picked {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the endpoint.
    pub fn set(&self, endpoint: EndpointId) {
        self.0.store(endpoint.0, Ordering::Relaxed);
    }

    /// The endpoint the call went to, if it was sent.
    pub fn get(&self) -> Option<EndpointId> {
        match self.0.load(Ordering::Relaxed) {
            u32::MAX => None,
            id => Some(EndpointId(id)),
        }
    }
}

/// The tower service of a [`Balancer`](super::Balancer): `http::Request` in, `http::Response<PolicyBody>` out. Its
/// errors are gRPC statuses: UNAVAILABLE when no endpoint is READY or the connection failed,
/// DEADLINE_EXCEEDED when the request's `grpc-timeout` passed.
#[derive(Clone)]
pub struct PolicyService {
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for PolicyService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PolicyService")
    }
}

/// Parses a `grpc-timeout` header (`1S`, `250m`, ...).
pub(super) fn grpc_timeout(headers: &http::HeaderMap) -> Option<Duration> {
    let v = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = v.split_at(v.len().checked_sub(1)?);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Runs `f` with this thread's random source for a [`ConcurrentPolicy`]'s picks: one per thread,
/// so picks on different threads share nothing, and balancers on one thread share it; seeded,
/// at a thread's first concurrent pick, from that balancer's seed and the thread's order of first
/// use (so, unlike the locked path, the draws do not repeat run to run).
fn with_pick_rng<R>(seed: u64, f: impl FnOnce(&mut SmallRng) -> R) -> R {
    use std::cell::RefCell;
    static THREADS: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        static RNG: RefCell<Option<SmallRng>> = const { RefCell::new(None) };
    }
    RNG.with(|cell| {
        let mut rng = cell.borrow_mut();
        let rng = rng.get_or_insert_with(|| {
            let thread = THREADS.fetch_add(1, Ordering::Relaxed);
            SmallRng::seed_from_u64(seed ^ thread.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        });
        f(rng)
    })
}

pub(super) type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<http::Response<PolicyBody>, tonic::Status>> + Send>>;

impl Service<http::Request<tonic::body::Body>> for PolicyService {
    type Response = http::Response<PolicyBody>;
    type Error = tonic::Status;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), tonic::Status>> {
        // Readiness is decided per call by the pick (which may wait for a connection).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> ResponseFuture {
        let shared = self.shared.clone();
        Box::pin(call(shared, req))
    }
}

pub(super) async fn call(
    shared: Arc<Shared>,
    req: http::Request<tonic::body::Body>,
) -> Result<http::Response<PolicyBody>, tonic::Status> {
    let kind = req
        .extensions()
        .get::<RpcKind>()
        .copied()
        .unwrap_or(RpcKind::Unary);
    let deadline = grpc_timeout(req.headers()).map(|d| tokio::time::Instant::now() + d);
    let picked = req.extensions().get::<Picked>().cloned();
    let pick_now = |now: Nanos| match &shared.concurrent {
        // No lock over the policy: the pick reads the endpoints' shared state.
        Some(policy) => with_pick_rng(shared.options.seed, |rng| policy.pick_call(now, kind, rng)),
        None => {
            let mut core = shared.core();
            Shared::timers(&mut core, now);
            let Core { policy, rng } = &mut *core;
            policy.pick(now, kind, rng)
        }
    };
    let (ticket, started, mut conn) = loop {
        let now = shared.clock.now();
        let mut pick = pick_now(now);
        // Only a call that must wait listens for a change, and picks again once it listens, so
        // that a change between the two picks is not missed; the common call takes no lock of
        // the notifier's.
        let changed = shared.changed.notified();
        tokio::pin!(changed);
        if matches!(pick, Pick::Queue) {
            changed.as_mut().enable();
            pick = pick_now(now);
        }
        match pick {
            Pick::Endpoint(ticket) => {
                let idx = ticket.endpoint().0 as usize;
                match shared.channel(idx) {
                    Some(conn) => break (ticket, now, conn),
                    None => {
                        // READY to the policy, but the connection just went: fail like gRPC's
                        // picker would after a disconnect.
                        shared.complete(ticket, now, Status::Error, None);
                        return Err(tonic::Status::unavailable("connection lost"));
                    }
                }
            }
            Pick::Fail => return Err(tonic::Status::unavailable("no READY endpoint")),
            Pick::Queue => match deadline {
                Some(at) => {
                    if tokio::time::timeout_at(at, changed).await.is_err() {
                        return Err(tonic::Status::deadline_exceeded(
                            "deadline exceeded waiting for a connection",
                        ));
                    }
                }
                None => changed.await,
            },
        }
    };
    let idx = ticket.endpoint().0 as usize;
    if let Some(p) = &picked {
        p.set(ticket.endpoint());
    }
    let mut completion = Completion {
        shared: shared.clone(),
        ticket: Some(ticket),
        started,
        deadline,
    };
    // The request URI: the endpoint's scheme and authority with the call's path.
    let (mut parts, body) = req.into_parts();
    let mut uri = http::uri::Parts::default();
    uri.scheme = Some(conn.scheme.clone());
    uri.authority = Some(conn.authority.clone());
    uri.path_and_query = parts.uri.path_and_query().cloned();
    match Uri::from_parts(uri) {
        Ok(u) => parts.uri = u,
        Err(e) => {
            completion.finish(Status::Error, None);
            return Err(tonic::Status::internal(format!("bad request URI: {e}")));
        }
    }
    let req = http::Request::from_parts(parts, body);
    let generation = conn.generation;
    let send = async {
        conn.send.ready().await?;
        conn.send.send_request(req).await
    };
    // One timer per call: the deadline bounds the send, then the same sleep bounds the body.
    let mut sleep = deadline.map(|at| Box::pin(tokio::time::sleep_until(at)));
    let response = match &mut sleep {
        Some(expired) => {
            tokio::pin!(send);
            let raced = std::future::poll_fn(|cx| {
                if let Poll::Ready(r) = send.as_mut().poll(cx) {
                    return Poll::Ready(Some(r));
                }
                expired.as_mut().poll(cx).map(|()| None)
            })
            .await;
            match raced {
                Some(r) => r,
                None => {
                    completion.finish(Status::DeadlineExceeded, None);
                    return Err(tonic::Status::deadline_exceeded("deadline exceeded"));
                }
            }
        }
        None => send.await,
    };
    let response = match response {
        Ok(r) => {
            shared.mark_served(idx, generation);
            r
        }
        Err(e) => {
            // The connection failed under the call: its task notices too, this is only sooner.
            if e.is_closed() || e.is_canceled() {
                shared.mark_broken(idx, generation, Some(error_chain(&e)));
            }
            completion.finish(Status::Error, None);
            let mut status = tonic::Status::unavailable(format!("connection error: {e}"));
            status.set_source(Arc::new(e));
            return Err(status);
        }
    };
    if let Some(status) = status_class(response.headers()) {
        // Trailers-only response: the headers are the trailers.
        completion.finish(status, orca::from_headers(response.headers()));
    }
    let sleep = sleep.filter(|_| completion.ticket.is_some());
    Ok(response.map(|body| PolicyBody {
        inner: body,
        completion,
        deadline: sleep,
    }))
}
