//! Out-of-band latency probes for a policy that asks for them ([`Policy::probe_interval`],
//! peak_ewma's lab-only `lblabAblation.probeInterval`): every interval, a unary
//! `grpc.health.v1.Health/Check` on each READY endpoint's own connection that has none pending.
//! A probe is not a call: the policy never picks it and counts no load for it; it is told when
//! the probe was sent and whether it was answered (any status) or failed without an answer.

use std::task::ready;

use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Uri;
use hyper::client::conn::http2::SendRequest;
use lblab_policy::{Connectivity, EndpointId};
use tower::Service;

use super::shared::{lock, Shared};

/// One endpoint's HTTP/2 connection as a tower service, for tonic's generated health client.
struct OnConnection(SendRequest<tonic::body::Body>);

impl Service<http::Request<tonic::body::Body>> for OnConnection {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = hyper::Error;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, hyper::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), hyper::Error>> {
        Poll::Ready(ready!(self.0.poll_ready(cx)))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(self.0.send_request(req))
    }
}

impl Shared {
    /// Sends a probe to every active READY endpoint that has none pending.
    pub(super) fn send_probes(self: &Arc<Shared>) {
        for (idx, slot) in self.all_slots().into_iter().enumerate() {
            if !slot.active.load(Ordering::Acquire) || *lock(&slot.state) != Connectivity::Ready {
                continue;
            }
            if slot.probing.swap(true, Ordering::AcqRel) {
                continue; // one pending already
            }
            let Some(conn) = self.channel(idx) else {
                slot.probing.store(false, Ordering::Release);
                continue;
            };
            let id = EndpointId(idx as u32);
            self.core().policy.on_probe_sent(self.clock.now(), id);
            let shared = self.clone();
            tokio::spawn(async move {
                let origin = Uri::from_parts({
                    let mut p = http::uri::Parts::default();
                    p.scheme = Some(conn.scheme.clone());
                    p.authority = Some(conn.authority.clone());
                    p.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
                    p
                });
                let answered = match origin {
                    Ok(origin) => {
                        let mut client = HealthClient::with_origin(OnConnection(conn.send), origin);
                        let reply = client.check(HealthCheckRequest::default()).await;
                        // Any status the server sent is an answer; a transport error is not.
                        reply.is_ok()
                            || reply.is_err_and(|s| std::error::Error::source(&s).is_none())
                    }
                    Err(_) => false,
                };
                slot.probing.store(false, Ordering::Release);
                let now = shared.clock.now();
                shared.core().policy.on_probe_done(now, id, answered);
            });
        }
    }
}
