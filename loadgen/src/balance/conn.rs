//! The connection lifecycle: one HTTP/2 connection per endpoint, re-made with gRPC's backoff,
//! its connectivity reported to the policy.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Uri;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use lblab_policy::{Connectivity, EndpointId};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::sync::Notify;

use super::options::BalancerOptions;
use super::outages::Outages;
use super::shared::{lock, Conn, Shared, Slot};

/// Why a connection attempt failed.
pub(super) type ConnectError = Box<dyn std::error::Error + Send + Sync>;

/// Opens one HTTP/2 connection to `uri` and spawns its connection task, which tells `shared` when
/// the connection ends.
pub(super) async fn connect(
    shared: &Arc<Shared>,
    idx: usize,
    uri: &Uri,
    generation: u64,
    options: &BalancerOptions,
) -> Result<Conn, ConnectError> {
    let endpoint = uri
        .authority()
        .ok_or("endpoint URI has no host:port")?
        .clone();
    let scheme = uri.scheme().cloned().unwrap_or(http::uri::Scheme::HTTP);
    let tls = options.transport.is_tls();
    match (scheme.as_str(), tls) {
        ("http", false) | ("https", true) => {}
        ("http", true) => return Err("a TLS balancer needs https:// endpoints".into()),
        ("https", false) => {
            return Err(
                "https:// endpoint without TLS settings (BalancerOptions::transport)".into(),
            )
        }
        (other, _) => return Err(format!("unsupported endpoint scheme {other:?}").into()),
    }
    let port = endpoint.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let host = endpoint.host();
    // An IPv6 literal comes bracketed in a URI (`[::1]`); the resolver wants it bare.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addr = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => std::net::SocketAddr::new(ip, port),
        Err(_) => tokio::net::lookup_host((bare, port))
            .await?
            .next()
            .ok_or_else(|| format!("{host} resolves to no address"))?,
    };
    let stream = options.transport.connect(host, addr).await?;
    let authority = options.authority.clone().unwrap_or(endpoint);
    let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .max_header_list_size(MAX_HEADER_LIST_SIZE);
    if let Some((interval, timeout)) = options.keepalive {
        builder
            .keep_alive_interval(interval)
            .keep_alive_timeout(timeout)
            .keep_alive_while_idle(true);
    }
    // Tells, once, when the server first sent anything.
    let (heard_tx, heard) = tokio::sync::oneshot::channel();
    let mut heard_tx = Some(heard_tx);
    let stream = tokio_util::io::InspectReader::new(stream, move |read: &[u8]| {
        if !read.is_empty() {
            if let Some(heard) = heard_tx.take() {
                let _ = heard.send(());
            }
        }
    });
    let (send, conn) = builder.handshake(TokioIo::new(stream)).await?;
    let weak = Arc::downgrade(shared);
    tokio::spawn(async move {
        let why = match conn.await {
            Ok(()) => "the server closed the connection".to_string(),
            Err(e) => error_chain(&e),
        };
        if let Some(shared) = weak.upgrade() {
            shared.mark_broken(idx, generation, Some(why));
        }
    });
    // READY once the server has spoken HTTP/2 (its preface, a SETTINGS frame), as gRPC's
    // channels wait for, not as soon as TCP (or TLS) is up: a listener that accepts connections
    // but never answers keeps the endpoint CONNECTING until the attempt times out.
    heard
        .await
        .map_err(|_| "the connection closed before the server's HTTP/2 preface")?;
    Ok(Conn {
        generation,
        send,
        scheme,
        authority,
    })
}

pub(crate) use lblab_message::text::error_chain;

/// The largest header block (a response's headers, or its trailers with `grpc-message`) the
/// client accepts, as HTTP/2's SETTINGS_MAX_HEADER_LIST_SIZE: hyper's default, and gRPC
/// C-core's default hard limit on metadata. A larger one fails the call ([`refused_by_client`]).
pub(crate) const MAX_HEADER_LIST_SIZE: u32 = 16 << 10;

/// The HTTP/2 error code with which the client itself (h2, not the server) refused a call's
/// response, if it did: h2 resets a stream whose response headers are over
/// [`MAX_HEADER_LIST_SIZE`] or malformed (PROTOCOL_ERROR), and closes the connection on a header
/// block far over it or in too many CONTINUATION frames (ENHANCE_YOUR_CALM). hyper shows either
/// only as "http2 error".
pub(crate) fn refused_by_client(e: &(dyn std::error::Error + 'static)) -> Option<h2::Reason> {
    std::iter::successors(Some(e), |e| e.source()).find_map(|e| {
        let h2 = e.downcast_ref::<h2::Error>()?;
        let reason = h2.reason()?;
        (h2.is_library()
            && [h2::Reason::PROTOCOL_ERROR, h2::Reason::ENHANCE_YOUR_CALM].contains(&reason))
        .then_some(reason)
    })
}

/// Keeps one endpoint connected and its connectivity reported.
pub(super) async fn manage(shared: Arc<Shared>, idx: usize, mut rng: SmallRng) {
    let Some(slot) = shared.slot(idx) else { return };
    let (uri, options) = (&slot.uri, &shared.options);
    let mut attempt = 0u32;
    // Connections in a row that ended before serving a call.
    let mut unserved = 0u32;
    loop {
        shared.set_state(idx, Connectivity::Connecting);
        let generation = slot.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let attempt_result = tokio::time::timeout(
            options.connect_timeout,
            connect(&shared, idx, uri, generation, options),
        )
        .await
        .unwrap_or_else(|_| Err("connection attempt timed out".into()));
        match attempt_result {
            Ok(conn) => {
                *lock(&slot.channel) = Some(conn);
                lock(&slot.outages).end(shared.clock.now());
                attempt = 0;
                shared.set_state(idx, Connectivity::Ready);
                while slot.broken_generation.load(Ordering::Acquire) != generation {
                    slot.broken.notified().await;
                }
                lock(&slot.channel).take();
                // gRPC: READY -> IDLE when the connection goes, and petiole policies ask for a new
                // connection at once.
                shared.set_state(idx, Connectivity::Idle);
                // Unless it and the one before served no call (GOAWAY at once, again and again):
                // then back off as after a failed attempt, longer with each such connection.
                if let Some(delay) =
                    unserved_delay(&slot.served, generation, &mut unserved, options, &mut rng)
                {
                    tokio::time::sleep(delay).await;
                }
            }
            Err(e) => {
                lock(&slot.outages).begin(shared.clock.now(), Some(error_chain(e.as_ref())), true);
                shared.set_state(idx, Connectivity::TransientFailure);
                tokio::time::sleep(Duration::from_nanos(
                    options.backoff.delay(attempt, &mut rng),
                ))
                .await;
                attempt = attempt.saturating_add(1);
            }
        }
    }
}

/// The wait before reconnecting after connection `generation` ended: none if it served a call
/// (`served` holds a generation at least as recent; the count of `unserved` connections in a row
/// starts again), else it counts in `unserved`, and from the second such connection in a row on
/// the wait is the backoff after one failed attempt fewer. The first one reconnects at once, so
/// that a call served just as the connection ended (its response counted a moment after the
/// connection task saw the end) costs no wait.
fn unserved_delay(
    served: &AtomicU64,
    generation: u64,
    unserved: &mut u32,
    options: &BalancerOptions,
    rng: &mut SmallRng,
) -> Option<Duration> {
    if served.load(Ordering::Acquire) >= generation {
        *unserved = 0;
        return None;
    }
    *unserved = unserved.saturating_add(1);
    let before = *unserved - 1;
    (before > 0).then(|| Duration::from_nanos(options.backoff.delay(before - 1, rng)))
}

impl Shared {
    /// See [`Balancer::set_endpoints`].
    pub(super) fn set_endpoints(self: &Arc<Shared>, endpoints: Vec<Uri>) -> Vec<EndpointId> {
        let mut active = Vec::with_capacity(endpoints.len());
        let mut start = Vec::new();
        {
            let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
            for uri in endpoints {
                let idx = match slots.iter().position(|s| s.uri == uri) {
                    Some(i) => i,
                    None => {
                        slots.push(Arc::new(Slot {
                            uri,
                            task: Mutex::new(None),
                            active: std::sync::atomic::AtomicBool::new(false),
                            channel: Mutex::new(None),
                            generation: AtomicU64::new(0),
                            served: AtomicU64::new(0),
                            broken: Notify::new(),
                            broken_generation: AtomicU64::new(0),
                            state: Mutex::new(Connectivity::Idle),
                            outages: Mutex::new(Outages::default()),
                            probing: std::sync::atomic::AtomicBool::new(false),
                        }));
                        slots.len() - 1
                    }
                };
                let id = EndpointId(idx as u32);
                if !active.contains(&id) {
                    active.push(id);
                }
            }
            for (idx, slot) in slots.iter().enumerate() {
                let listed = active.contains(&EndpointId(idx as u32));
                let running = lock(&slot.task).is_some();
                if listed && !running {
                    start.push((idx, slot.clone()));
                } else if !listed && running {
                    slot.active.store(false, Ordering::Release);
                    if let Some(t) = lock(&slot.task).take() {
                        t.abort();
                    }
                    lock(&slot.channel).take();
                    *lock(&slot.state) = Connectivity::Idle;
                }
            }
        }
        // The policy learns the list before any new endpoint reports a change.
        let now = self.clock.now();
        {
            let mut core = self.core();
            core.policy.set_endpoints(now, &active);
            Self::timers(&mut core, now);
        }
        for (idx, slot) in start {
            *lock(&slot.state) = Connectivity::Idle;
            slot.active.store(true, Ordering::Release);
            let rng = SmallRng::seed_from_u64(self.options.seed ^ (0x5EED_0000 + idx as u64));
            let handle = tokio::spawn(manage(self.clone(), idx, rng));
            *lock(&slot.task) = Some(handle.abort_handle());
        }
        self.changed.notify_waiters();
        active
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn only_connections_that_served_no_call_back_off_and_the_wait_grows() {
        let options = BalancerOptions {
            backoff: lblab_model::backoff::Backoff {
                jitter: 0.0,
                ..Default::default()
            },
            ..BalancerOptions::default()
        };
        let mut rng = SmallRng::seed_from_u64(1);
        let served = AtomicU64::new(0);
        let mut unserved = 0;
        let mut waits = Vec::new();
        for generation in 1..=4 {
            waits.push(unserved_delay(
                &served,
                generation,
                &mut unserved,
                &options,
                &mut rng,
            ));
        }
        let ms = |ms: u64| Some(Duration::from_millis(ms));
        assert_eq!(waits, [None, ms(1000), ms(1600), ms(2560)]);
        // A connection that served a call: at once, and the count starts again.
        served.store(5, Ordering::Release);
        assert_eq!(
            unserved_delay(&served, 5, &mut unserved, &options, &mut rng),
            None
        );
        assert_eq!(
            unserved_delay(&served, 6, &mut unserved, &options, &mut rng),
            None
        );
        assert_eq!(
            unserved_delay(&served, 7, &mut unserved, &options, &mut rng),
            ms(1000)
        );
    }
}
