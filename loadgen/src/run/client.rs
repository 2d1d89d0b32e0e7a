//! The client side of a run: one gRPC client per scenario client (an lblab policy behind a
//! [`Balancer`], or tower's balancer), the call itself and how its status is classified.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lblab_model::scenario::PolicyEntry;
use lblab_policy::config::Selected;
use lblab_policy::RpcKind;
use lblab_record::RequestResult;
use lblab_wire::pb::echo::{CallReply, CallRequest};
use tonic::client::Grpc;
use tonic::metadata::MetadataMap;

use super::statuses::StatusTally;
use crate::balance::{Balancer, BalancerOptions, Picked, PolicyService};
use crate::method::{Call, RawCodec};
use crate::target::Target;
use crate::tower_p2c::{self, TowerService};
use crate::transport::{Connector, Transport};
use crate::LoadgenError;

/// lblab's Echo service, the default method (it carries the scenario's behaviour).
const ECHO_UNARY: &str = "/lblab.v1.Echo/Unary";
const ECHO_STREAM: &str = "/lblab.v1.Echo/ServerStream";

/// The gRPC client of one scenario client: an lblab policy or tower's balancer.
#[derive(Clone)]
enum Channel {
    Lblab(Grpc<PolicyService>),
    Tower(Grpc<TowerService>),
}

/// One scenario client: its channel, and what every call sends.
#[derive(Clone)]
pub(super) struct Client {
    channel: Channel,
    /// The method and request of `--call`; lblab's Echo when `None`.
    call: Option<Arc<Call>>,
    /// Metadata sent with every call.
    metadata: Arc<MetadataMap>,
    /// How the run's calls ended, by status.
    statuses: Arc<StatusTally>,
}

fn classify(status: &tonic::Status) -> RequestResult {
    let timed_out = || {
        let mut e: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
        while let Some(err) = e {
            if err.is::<tonic::TimeoutExpired>() {
                return true;
            }
            e = err.source();
        }
        false
    };
    match status.code() {
        tonic::Code::DeadlineExceeded => RequestResult::DeadlineExceeded,
        // tonic's channel reports its own grpc-timeout expiry as CANCELLED "Timeout expired".
        tonic::Code::Cancelled if timed_out() => RequestResult::DeadlineExceeded,
        _ => RequestResult::Error,
    }
}

macro_rules! with_channel {
    ($channel:expr, |$c:ident| $body:expr) => {
        match $channel {
            Channel::Lblab($c) => $body,
            Channel::Tower($c) => $body,
        }
    };
}

/// One call; boxed with an explicit `Send` bound, which works around rustc's "implementation of
/// `From` is not general enough" (rust-lang/rust#102211) in the spawned tasks.
pub(super) fn call_once(
    client: &mut Client,
    id: u64,
    kind: RpcKind,
    deadline: Duration,
    stream_bound: Duration,
    picked: Picked,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = RequestResult> + Send + '_>> {
    Box::pin(call_inner(client, id, kind, deadline, stream_bound, picked))
}

fn prepare<T>(client: &Client, message: T, picked: Picked, kind: RpcKind) -> tonic::Request<T> {
    let mut req = tonic::Request::new(message);
    if !client.metadata.is_empty() {
        *req.metadata_mut() = (*client.metadata).clone();
    }
    req.extensions_mut().insert(picked);
    req.extensions_mut().insert(kind);
    req
}

async fn call_inner(
    client: &mut Client,
    id: u64,
    kind: RpcKind,
    deadline: Duration,
    stream_bound: Duration,
    picked: Picked,
) -> RequestResult {
    match kind {
        RpcKind::Unary => {
            let call = match client.call.clone() {
                Some(call) if call.server_streaming => {
                    let req = prepare(client, call.request(id), picked, kind);
                    server_stream(&mut client.channel, req, call.path.clone(), deadline).await
                }
                Some(call) => {
                    let req = prepare(client, call.request(id), picked, kind);
                    unary(
                        &mut client.channel,
                        req,
                        call.path.clone(),
                        RawCodec,
                        deadline,
                    )
                    .await
                }
                None => {
                    let message = CallRequest {
                        id,
                        payload: Default::default(),
                    };
                    let req = prepare(client, message, picked, kind);
                    let path = http::uri::PathAndQuery::from_static(ECHO_UNARY);
                    let codec = tonic_prost::ProstCodec::<CallRequest, CallReply>::default();
                    unary(&mut client.channel, req, path, codec, deadline).await
                }
            };
            tally(&client.statuses, call)
        }
        RpcKind::Streaming => {
            let req = prepare(
                client,
                CallRequest {
                    id,
                    payload: Default::default(),
                },
                picked,
                kind,
            );
            let path = http::uri::PathAndQuery::from_static(ECHO_STREAM);
            let codec = tonic_prost::ProstCodec::<CallRequest, CallReply>::default();
            let call = with_channel!(&mut client.channel, |c| tokio::time::timeout(
                stream_bound,
                async {
                    c.ready()
                        .await
                        .map_err(|e| tonic::Status::from_error(e.into()))?;
                    let mut s = c.server_streaming(req, path, codec).await?.into_inner();
                    while s.message().await?.is_some() {}
                    Ok::<(), tonic::Status>(())
                }
            )
            .await);
            tally(&client.statuses, call)
        }
    }
}

/// tonic reports a message over the size limit (`--max-recv-message-size`,
/// `--max-send-message-size`) as OUT_OF_RANGE; gRPC's own stacks (C-core, Java, Go) report
/// RESOURCE_EXHAUSTED, which is what a gRPC user looks for in the status table.
fn as_grpc(status: tonic::Status) -> tonic::Status {
    if status.code() == tonic::Code::OutOfRange
        && status.message().contains("message length too large")
    {
        tonic::Status::resource_exhausted(status.message())
    } else {
        status
    }
}

/// How a call ended, counted in `statuses` and classified.
fn tally(
    statuses: &StatusTally,
    call: Result<Result<(), tonic::Status>, tokio::time::error::Elapsed>,
) -> RequestResult {
    match call {
        Ok(Ok(())) => {
            statuses.ok();
            RequestResult::Ok
        }
        Ok(Err(status)) => {
            let status = as_grpc(status);
            statuses.failed(&status);
            classify(&status)
        }
        Err(_) => {
            statuses.record(
                tonic::Code::DeadlineExceeded,
                "no answer within the deadline (the load generator's own bound)".into(),
            );
            RequestResult::DeadlineExceeded
        }
    }
}

/// One unary call of `req` to `path` with `codec`, its deadline set; `Err` if even the outer
/// bound passed (the balancer and the channel enforce the deadline; this bound only guards the
/// run).
async fn unary<M, C>(
    channel: &mut Channel,
    mut req: tonic::Request<M>,
    path: http::uri::PathAndQuery,
    codec: C,
    deadline: Duration,
) -> Result<Result<(), tonic::Status>, tokio::time::error::Elapsed>
where
    M: Send + Sync + 'static,
    C: tonic::codec::Codec<Encode = M> + Send + 'static,
    C::Decode: Send + Sync + 'static,
{
    req.set_timeout(deadline);
    let outer = deadline + Duration::from_millis(200);
    with_channel!(channel, |c| tokio::time::timeout(outer, async {
        c.ready()
            .await
            .map_err(|e| tonic::Status::from_error(e.into()))?;
        c.unary(req, path, codec).await.map(|_| ())
    })
    .await)
}

/// One server-streaming call of `--call`: the request sent, the replies read to the end of the
/// stream (undecoded); the deadline covers the whole stream, as gRPC's does.
async fn server_stream(
    channel: &mut Channel,
    mut req: tonic::Request<bytes::Bytes>,
    path: http::uri::PathAndQuery,
    deadline: Duration,
) -> Result<Result<(), tonic::Status>, tokio::time::error::Elapsed> {
    req.set_timeout(deadline);
    let outer = deadline + Duration::from_millis(200);
    with_channel!(channel, |c| tokio::time::timeout(outer, async {
        c.ready()
            .await
            .map_err(|e| tonic::Status::from_error(e.into()))?;
        let mut s = c.server_streaming(req, path, RawCodec).await?.into_inner();
        while s.message().await?.is_some() {}
        Ok::<(), tonic::Status>(())
    })
    .await)
}

/// Tries a connection to every target at once, up to the server's HTTP/2 SETTINGS
/// ([`Transport::probe`]); `None` where one was made, else why not.
pub(super) async fn probe(
    targets: &[Target],
    timeout: Duration,
    transport: &Transport,
) -> Vec<Option<String>> {
    let tries: Vec<_> = targets
        .iter()
        .map(|t| {
            let (t, transport) = (t.clone(), transport.clone());
            tokio::spawn(async move {
                match tokio::time::timeout(timeout, transport.probe(&t.host, t.addr)).await {
                    Ok(Ok(_)) => None,
                    Ok(Err(e)) => Some(e.to_string()),
                    Err(_) => Some(format!("no answer within {timeout:?}")),
                }
            })
        })
        .collect();
    let mut out = Vec::with_capacity(tries.len());
    for t in tries {
        out.push(t.await.unwrap_or_else(|e| Some(e.to_string())));
    }
    out
}

/// What every client of a run shares: how it connects and what it sends.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Plaintext or TLS.
    pub transport: Transport,
    /// The `:authority` of every call instead of each target's `host:port`.
    pub authority: Option<http::uri::Authority>,
    /// The method and request (`--call`); lblab's Echo service when `None`.
    pub call: Option<Arc<Call>>,
    /// Metadata sent with every call (`-H key:value`).
    pub metadata: MetadataMap,
    /// Timeout of one connection attempt (default: gRPC's 20 s).
    pub connect_timeout: Option<Duration>,
    /// HTTP/2 keepalive: PING interval and how long to wait for its answer.
    pub keepalive: Option<(Duration, Duration)>,
    /// Largest reply message accepted, bytes (default: gRPC's 4 MiB).
    pub max_recv_message: Option<usize>,
    /// Largest request message sent, bytes (default: unlimited).
    pub max_send_message: Option<usize>,
}

impl CallOptions {
    /// A gRPC client over `service` with the message-size limits.
    fn grpc<S>(&self, service: S) -> Grpc<S> {
        let mut grpc = Grpc::new(service);
        if let Some(n) = self.max_recv_message {
            grpc = grpc.max_decoding_message_size(n);
        }
        if let Some(n) = self.max_send_message {
            grpc = grpc.max_encoding_message_size(n);
        }
        grpc
    }
}

/// The URI a balancer connects to for `target`.
pub(super) fn endpoint_uri(
    target: &Target,
    transport: &Transport,
) -> Result<http::Uri, LoadgenError> {
    let scheme = if transport.is_tls() { "https" } else { "http" };
    format!("{scheme}://{}", target.connect_to)
        .parse::<http::Uri>()
        .map_err(|e| LoadgenError::Target {
            target: target.name.clone(),
            problem: e.into(),
        })
}

/// Builds one client of the scenario for `policy`.
pub(super) fn make_client(
    policy: &PolicyEntry,
    targets: &[Target],
    origin: Instant,
    seed: u64,
    options: &CallOptions,
    statuses: &Arc<StatusTally>,
) -> Result<(Client, Option<Balancer>), LoadgenError> {
    let endpoints = targets
        .iter()
        .map(|t| endpoint_uri(t, &options.transport))
        .collect::<Result<Vec<_>, _>>()?;
    let (channel, balancer) = match &policy.selected {
        Selected::Policy(cfg) => {
            let balancer = Balancer::from_config(
                cfg,
                endpoints,
                BalancerOptions {
                    origin: Some(origin),
                    seed,
                    transport: options.transport.clone(),
                    authority: options.authority.clone(),
                    keepalive: options.keepalive,
                    connect_timeout: options
                        .connect_timeout
                        .unwrap_or(BalancerOptions::default().connect_timeout),
                    ..BalancerOptions::default()
                },
            );
            (
                Channel::Lblab(options.grpc(balancer.service())),
                Some(balancer),
            )
        }
        Selected::Extra { name, config } if name == tower_p2c::NAME => {
            let bad = |source: crate::balance::BoxError| LoadgenError::Policy {
                policy: policy.name.clone(),
                source,
            };
            let cfg = tower_p2c::Config::from_json(config).map_err(|e| bad(e.into()))?;
            let connectors = targets
                .iter()
                .map(|t| Connector {
                    transport: options.transport.clone(),
                    host: t.host.clone(),
                    addr: t.addr,
                })
                .collect();
            let service = tower_p2c::service(connectors, options.authority.as_ref(), cfg)
                .map_err(|e| bad(e.into()))?;
            (Channel::Tower(options.grpc(service)), None)
        }
        Selected::Extra { name, .. } => {
            return Err(LoadgenError::Unsupported {
                policy: policy.name.clone(),
                name: name.clone(),
            })
        }
    };
    Ok((
        Client {
            channel,
            call: options.call.clone(),
            metadata: Arc::new(options.metadata.clone()),
            statuses: statuses.clone(),
        },
        balancer,
    ))
}
