//! What a [`Balancer`](super::Balancer) is made with: its clock's origin, seed, backoff,
//! timeouts, transport and keepalive.

use std::time::{Duration, Instant};

use lblab_model::backoff::Backoff;

use crate::transport::Transport;

/// Options of a [`Balancer`](super::Balancer).
#[derive(Debug, Clone)]
pub struct BalancerOptions {
    /// Time 0 of the policy's clock (default: when the balancer is made).
    pub origin: Option<Instant>,
    /// Seed of the policy's random draws (picks) and of the backoff jitter.
    pub seed: u64,
    /// Reconnect backoff.
    pub backoff: Backoff,
    /// Timeout of one connection attempt (gRPC's minimum: 20 s).
    pub connect_timeout: Duration,
    /// How often the balancer checks whether the policy's timer is due.
    pub timer_tick: Duration,
    /// How connections are made: plaintext, or TLS for `https://` endpoints.
    pub transport: Transport,
    /// The `:authority` of every request instead of the endpoint's `host:port` (gRPC's channel
    /// authority; with TLS, also the name the server's certificate must have).
    pub authority: Option<http::uri::Authority>,
    /// HTTP/2 keepalive: a PING this often (also while no call is open), and the connection is
    /// closed if its answer takes longer than the second value (`None`: no keepalive).
    pub keepalive: Option<(Duration, Duration)>,
}

impl Default for BalancerOptions {
    fn default() -> Self {
        BalancerOptions {
            origin: None,
            seed: 0,
            backoff: Backoff::default(),
            connect_timeout: Duration::from_secs(20),
            timer_tick: Duration::from_millis(10),
            transport: Transport::plaintext(),
            authority: None,
            keepalive: None,
        }
    }
}
