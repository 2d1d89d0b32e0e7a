//! The client side of a run: one gRPC client per scenario client (an lblab policy behind a
//! [`Balancer`], or tower's balancer), the call itself and how its status is classified.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use lblab_model::results::RequestResult;
use lblab_model::scenario::PolicyEntry;
use lblab_policy::config::Selected;
use lblab_policy::RpcKind;
use lblab_wire::pb::echo::echo_client::EchoClient;
use lblab_wire::pb::echo::CallRequest;
use lblab_wire::Clock;
use tonic::transport::Endpoint;

use crate::balance::{Balancer, BalancerOptions, Picked, PolicyService};
use crate::tower_p2c::{self, TowerService};
use crate::LoadgenError;

/// The client side of one scenario client: an lblab policy or tower's balancer.
pub(super) enum Client {
    Lblab(EchoClient<PolicyService>),
    Tower(EchoClient<TowerService>),
}

impl Clone for Client {
    fn clone(&self) -> Self {
        match self {
            Client::Lblab(c) => Client::Lblab(c.clone()),
            Client::Tower(c) => Client::Tower(c.clone()),
        }
    }
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

macro_rules! with_client {
    ($client:expr, |$c:ident| $body:expr) => {
        match $client {
            Client::Lblab($c) => $body,
            Client::Tower($c) => $body,
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

async fn call_inner(
    client: &mut Client,
    id: u64,
    kind: RpcKind,
    deadline: Duration,
    stream_bound: Duration,
    picked: Picked,
) -> RequestResult {
    let mut req = tonic::Request::new(CallRequest {
        id,
        payload: Default::default(),
    });
    req.extensions_mut().insert(picked);
    req.extensions_mut().insert(kind);
    match kind {
        RpcKind::Unary => {
            req.set_timeout(deadline);
            // The balancer and the channel enforce the deadline; this outer bound only guards the run.
            let call = with_client!(client, |c| tokio::time::timeout(
                deadline + Duration::from_millis(200),
                c.unary(req)
            )
            .await);
            match call {
                Ok(Ok(_)) => RequestResult::Ok,
                Ok(Err(status)) => classify(&status),
                Err(_) => RequestResult::DeadlineExceeded,
            }
        }
        RpcKind::Streaming => {
            let call = with_client!(client, |c| tokio::time::timeout(stream_bound, async {
                let mut s = c.server_stream(req).await?.into_inner();
                while s.message().await?.is_some() {}
                Ok::<(), tonic::Status>(())
            })
            .await);
            match call {
                Ok(Ok(())) => RequestResult::Ok,
                Ok(Err(status)) => classify(&status),
                Err(_) => RequestResult::DeadlineExceeded,
            }
        }
    }
}

/// Tries a TCP connection to every target at once; `None` where one was accepted, else why not.
pub(super) async fn probe(targets: &[SocketAddr], timeout: Duration) -> Vec<Option<String>> {
    let tries: Vec<_> = targets
        .iter()
        .map(|&t| {
            tokio::spawn(async move {
                match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(t)).await {
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

/// Builds one client of the scenario for `policy`.
pub(super) fn make_client(
    policy: &PolicyEntry,
    targets: &[SocketAddr],
    origin: Instant,
    seed: u64,
) -> Result<(Client, Option<Balancer>), LoadgenError> {
    let endpoints = targets
        .iter()
        .map(|a| {
            format!("http://{a}")
                .parse::<http::Uri>()
                .map_err(|e| LoadgenError::Config(format!("target {a}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    match &policy.selected {
        Selected::Policy(cfg) => {
            let clock = Clock::new(origin);
            let p = cfg.build(clock.now());
            let balancer = Balancer::new(
                p,
                endpoints,
                BalancerOptions {
                    origin: Some(origin),
                    seed,
                    ..BalancerOptions::default()
                },
            );
            Ok((
                Client::Lblab(EchoClient::new(balancer.service())),
                Some(balancer),
            ))
        }
        Selected::Extra { name, config } if name == tower_p2c::NAME => {
            let cfg = tower_p2c::Config::from_json(config).map_err(LoadgenError::Config)?;
            let endpoints = endpoints.into_iter().map(Endpoint::from).collect();
            Ok((
                Client::Tower(EchoClient::new(tower_p2c::service(endpoints, cfg))),
                None,
            ))
        }
        Selected::Extra { name, .. } => Err(LoadgenError::Unsupported {
            policy: policy.name.clone(),
            name: name.clone(),
        }),
    }
}
