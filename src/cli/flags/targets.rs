//! `--targets` and the connection flags: which servers, and how calls reach them.

use std::time::Duration;

use lblab_loadgen::target::TargetSpec;
use lblab_model::budget::parse_bytes;
use lblab_model::units::Dur;

use lblab_lab::{Context, LabError, Result};

/// Which servers, and how calls reach them.
#[derive(Debug, clap::Args)]
pub struct Targets {
    /// The servers: host:port,host:port,... (one endpoint each, in the order of the scenario's
    /// backends), or dns:///name:port (every address of the name, re-resolved while the run goes).
    #[arg(long, value_delimiter = ',')]
    pub targets: Vec<String>,
    /// How often a dns:/// target is re-resolved (gRPC's DNS resolver waits at least 30 s).
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub resolve_every: Dur,
    /// The :authority of every call instead of each target's host:port (with TLS, also the name
    /// the server's certificate must have).
    #[arg(long)]
    pub authority: Option<String>,
    /// Timeout of one connection attempt [default: 20s, gRPC's].
    #[arg(long, value_name = "DURATION")]
    pub connect_timeout: Option<Dur>,
    /// HTTP/2 keepalive: a PING this often on every connection, also while idle.
    #[arg(long, value_name = "DURATION")]
    pub keepalive: Option<Dur>,
    /// With --keepalive: close a connection whose PING is not answered within this.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "20s",
        requires = "keepalive"
    )]
    pub keepalive_timeout: Dur,
    /// Largest reply message accepted (e.g. 16MiB) [default: 4MiB, gRPC's].
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes)]
    pub max_recv_message_size: Option<u64>,
    /// Largest request message sent (e.g. 16MiB) [default: no limit].
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes)]
    pub max_send_message_size: Option<u64>,
}

impl Targets {
    /// The parsed target list.
    pub fn spec(&self) -> Result<TargetSpec> {
        if self.resolve_every.0 < 1_000_000_000 {
            return Err(LabError::Message(format!(
                "--resolve-every {} is too short: at least 1s (gRPC's own resolver waits 30 s)",
                self.resolve_every
            )));
        }
        TargetSpec::parse(
            &self.targets,
            Duration::from_nanos(self.resolve_every.0),
            crate::cli::names::flag,
        )
        .context("--targets")
    }

    /// `--authority`, parsed.
    pub fn authority(&self) -> Result<Option<http::uri::Authority>> {
        self.authority
            .as_deref()
            .map(|a| {
                a.parse::<http::uri::Authority>()
                    .with_context(|| format!("--authority {a:?} is not host[:port]"))
            })
            .transpose()
    }

    /// Connection timeout, keepalive and message-size limits.
    pub fn apply(&self, calls: &mut lblab_loadgen::run::CallOptions) {
        let d = |v: Dur| Duration::from_nanos(v.0);
        calls.connect_timeout = self.connect_timeout.map(d);
        calls.keepalive = self.keepalive.map(|k| (d(k), d(self.keepalive_timeout)));
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        calls.max_recv_message = self.max_recv_message_size.map(size);
        calls.max_send_message = self.max_send_message_size.map(size);
    }
}
