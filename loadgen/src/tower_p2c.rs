//! tower's own balancer, `balance::p2c::Balance` over `load::PeakEwma`, as the reference policy
//! `tower_p2c_peak_ewma`: what a tonic user gets today without lblab. Config (both optional):
//! `{"tower_p2c_peak_ewma":{"decayTime":"10s","defaultRtt":"0.030s"}}` (linkerd's values are the
//! defaults). It has no connectivity states: tonic's channels reconnect on their own, and tower
//! drops an endpoint for good if its service fails.

use std::task::{Context, Poll};
use std::time::Duration;

use lblab_policy::{duration, EndpointId};
use serde_json::Value;
use tonic::transport::{Channel, Endpoint};
use tower::balance::p2c::Balance;
use tower::buffer::Buffer;
use tower::discover::ServiceList;
use tower::load::{CompleteOnResponse, PeakEwma};
use tower::util::BoxCloneService;
use tower::{Service, ServiceExt};

use crate::balance::{BoxError, Picked};
use crate::transport::Connector;

/// The policy name in service configs.
pub const NAME: &str = "tower_p2c_peak_ewma";

/// `tower_p2c_peak_ewma`'s config.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// PeakEwma's decay (default 10 s).
    pub decay: Duration,
    /// PeakEwma's starting RTT (default 30 ms).
    pub default_rtt: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            decay: Duration::from_secs(10),
            default_rtt: Duration::from_millis(30),
        }
    }
}

/// A field of tower's config that cannot be read: its path (`tower_p2c_peak_ewma.decayTime`) and
/// what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConfigError {
    /// The field's dotted path, from the policy's name.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// A target tower's balancer cannot address.
#[derive(Debug, thiserror::Error)]
#[error("target {target}: {source}")]
pub struct TargetError {
    /// The target's address.
    pub target: String,
    /// Why tonic refused it.
    #[source]
    pub source: tonic::transport::Error,
}

impl Config {
    /// Reads the config object; unknown fields and invalid durations are errors naming the field.
    pub fn from_json(v: &Value) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        let Some(obj) = v.as_object() else {
            return Err(ConfigError {
                field: NAME.into(),
                message: "config must be an object".into(),
            });
        };
        for (k, v) in obj {
            let bad = |message: String| ConfigError {
                field: format!("{NAME}.{k}"),
                message,
            };
            let d = || {
                let text = v
                    .as_str()
                    .ok_or_else(|| bad("must be a duration string such as \"10s\"".into()))?;
                match duration::parse(text).map_err(|e| bad(e.to_string()))? {
                    0 => Err(bad("must be greater than 0s".into())),
                    n => Ok(Duration::from_nanos(n)),
                }
            };
            match k.as_str() {
                "decayTime" => c.decay = d()?,
                "defaultRtt" => c.default_rtt = d()?,
                _ => return Err(bad("unknown field; known: decayTime, defaultRtt".into())),
            }
        }
        Ok(c)
    }
}

/// One tonic channel that records its index in the request's [`Picked`], so the load generator
/// knows where tower sent each call.
#[derive(Clone)]
struct Tagged {
    id: u32,
    channel: Channel,
}

impl Service<http::Request<tonic::body::Body>> for Tagged {
    type Response = http::Response<tonic::body::Body>;
    type Error = BoxError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, BoxError>> + Send>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.channel.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        if let Some(p) = req.extensions().get::<Picked>() {
            p.set(EndpointId(self.id));
        }
        let fut = self.channel.call(req);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

/// tower's balancer as a cloneable service for a tonic client.
pub type TowerService = BoxCloneService<
    http::Request<tonic::body::Body>,
    http::Response<tonic::body::Body>,
    tonic::Status,
>;

/// Builds tower's P2C + PeakEwma balancer over lazily connected tonic channels, one per
/// connector (each connects to one address over the run's transport); `authority` replaces each
/// target's `host:port` as the requests' `:authority`. Must be called inside a tokio runtime.
pub fn service(
    connectors: Vec<Connector>,
    authority: Option<&http::uri::Authority>,
    config: Config,
) -> Result<TowerService, TargetError> {
    let mut services = Vec::with_capacity(connectors.len());
    for (i, c) in connectors.into_iter().enumerate() {
        let authority = authority.map_or_else(|| c.addr.to_string(), ToString::to_string);
        let endpoint =
            Endpoint::from_shared(format!("http://{authority}")).map_err(|source| TargetError {
                target: c.addr.to_string(),
                source,
            })?;
        let tagged = Tagged {
            id: i as u32,
            channel: endpoint.connect_with_connector_lazy(c),
        };
        services.push(PeakEwma::new(
            tagged,
            config.default_rtt,
            config.decay.as_nanos() as f64,
            CompleteOnResponse::default(),
        ));
    }
    let balance = Balance::new(ServiceList::new::<http::Request<tonic::body::Body>>(
        services,
    ));
    let buffered = Buffer::new(balance, 4096);
    Ok(BoxCloneService::new(
        buffered.map_err(tonic::Status::from_error),
    ))
}
