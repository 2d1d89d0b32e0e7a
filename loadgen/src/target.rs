//! The targets of a run, as gRPC names them: a list of `host:port` (one endpoint each), or
//! `dns:///name:port`, which resolves to every address of the name and is re-resolved
//! periodically, as gRPC's DNS resolver does; addresses that come and go change the balancers'
//! endpoint lists while the run goes on.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use lblab_message::setting::{Names, Setting};

use crate::LoadgenError;

/// gRPC's default port for `dns:///name` without one.
const DEFAULT_PORT: u16 = 443;

/// One endpoint of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// As named: the `host:port` given, or the name of a `dns:///` target with this address.
    pub name: String,
    /// The host part of the name (what TLS verifies, unless `--authority` says otherwise).
    pub host: String,
    /// The address connected to.
    pub addr: SocketAddr,
    /// The URI the balancer connects to: the name for a `host:port` target (resolved when it
    /// connects), the address for a resolved `dns:///` one.
    pub connect_to: String,
}

impl Target {
    /// A target that is just an address (lblab's own fleet).
    pub fn of_addr(addr: SocketAddr) -> Target {
        Target {
            name: addr.to_string(),
            host: addr.ip().to_string(),
            addr,
            connect_to: addr.to_string(),
        }
    }

    /// Whether calls to this target stay on this machine ([`stays_on_this_host`]).
    pub fn is_on_this_host(&self) -> bool {
        stays_on_this_host(self.addr.ip())
    }

    /// `host:port` or the address, for tables: the address alone when the name is it.
    pub fn label(&self) -> String {
        if self.name == self.addr.to_string() {
            self.name.clone()
        } else {
            format!("{} ({})", self.name, self.addr)
        }
    }
}

/// The targets as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// `host:port,host:port,...`: one endpoint each.
    List(Vec<String>),
    /// `dns:///name:port`: every address of the name, re-resolved every `every`.
    Dns {
        /// The name.
        name: String,
        /// The port.
        port: u16,
        /// How often it is re-resolved.
        every: Duration,
    },
}

impl TargetSpec {
    /// Parses a target list: `host:port` entries, or one `dns:///name[:port]`; the setting
    /// that chooses TLS, named in a hint, is spelt by `names`.
    pub fn parse(
        list: &[String],
        every: Duration,
        names: Names,
    ) -> Result<TargetSpec, LoadgenError> {
        if list.is_empty() {
            return Err(TargetListError::Empty.into());
        }
        if let Some(rest) = list.iter().find_map(|t| t.strip_prefix("dns:")) {
            if list.len() != 1 {
                return Err(TargetListError::DnsNotAlone.into());
            }
            let given = list[0].clone();
            let Some(name) = rest.strip_prefix("///") else {
                return Err(TargetListError::DnsServer { given }.into());
            };
            let (host, port) = split_host_port(name).map_err(TargetListError::from)?;
            let port = port.unwrap_or(DEFAULT_PORT);
            if host.is_empty() {
                return Err(TargetListError::NoHost { given }.into());
            }
            return Ok(TargetSpec::Dns {
                name: host.to_string(),
                port,
                every,
            });
        }
        for t in list {
            if t.contains("://") {
                return Err(TargetListError::Scheme {
                    given: t.clone(),
                    tls: names(Setting::Tls),
                }
                .into());
            }
            match split_host_port(t).map_err(TargetListError::from)? {
                (h, Some(_)) if !h.is_empty() => {}
                _ => return Err(TargetListError::NotHostPort { given: t.clone() }.into()),
            }
        }
        Ok(TargetSpec::List(list.to_vec()))
    }

    /// The `:authority` gRPC would send for these targets when it is not set: a `dns:///`
    /// target's `name:port`; `None` for a list (each endpoint's own `host:port`).
    pub fn default_authority(&self) -> Option<String> {
        match self {
            TargetSpec::List(_) => None,
            TargetSpec::Dns { name, port, .. } => Some(format!("{name}:{port}")),
        }
    }

    /// Resolves every target now. A list entry that does not resolve is an error naming it; a
    /// DNS name must resolve to at least one address.
    pub async fn resolve(&self) -> Result<Vec<Target>, LoadgenError> {
        match self {
            TargetSpec::List(list) => {
                let mut out = Vec::with_capacity(list.len());
                for t in list {
                    let bad = |problem: TargetProblem| LoadgenError::Target {
                        target: t.clone(),
                        problem,
                    };
                    let (host, _) = split_host_port(t).map_err(|e| bad(e.into()))?;
                    let addr = tokio::net::lookup_host(t.as_str())
                        .await
                        .map_err(|e| bad(e.into()))?
                        .next()
                        .ok_or_else(|| bad(TargetProblem::NoAddress))?;
                    out.push(Target {
                        name: t.clone(),
                        host: host.to_string(),
                        addr,
                        connect_to: t.clone(),
                    });
                }
                Ok(out)
            }
            TargetSpec::Dns { name, port, .. } => {
                let mut addrs: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), *port))
                    .await
                    .map_err(|e| LoadgenError::Target {
                        target: format!("dns:///{name}:{port}"),
                        problem: e.into(),
                    })?
                    .collect();
                addrs.sort();
                addrs.dedup();
                if addrs.is_empty() {
                    return Err(LoadgenError::Target {
                        target: format!("dns:///{name}:{port}"),
                        problem: TargetProblem::NoAddress,
                    });
                }
                Ok(addrs
                    .into_iter()
                    .map(|addr| Target {
                        name: format!("{name}:{port}"),
                        host: name.clone(),
                        addr,
                        connect_to: addr.to_string(),
                    })
                    .collect())
            }
        }
    }

    /// How often the targets are re-resolved during a run (`None`: a fixed list).
    pub fn refresh(&self) -> Option<Duration> {
        match self {
            TargetSpec::List(_) => None,
            TargetSpec::Dns { every, .. } => Some(*every),
        }
    }
}

/// Whether traffic to `ip` stays on this machine: the loopback range `127.0.0.0/8`, `::1`, and
/// `127.0.0.0/8` written as an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, which
/// [`IpAddr::is_loopback`] does not count). Any other address, private ranges included, may be
/// another host.
pub fn stays_on_this_host(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// `host:port`, `[v6]:port`, or a bare host.
fn split_host_port(s: &str) -> Result<(&str, Option<u16>), HostPortError> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| HostPortError::Unclosed {
                given: s.to_string(),
            })?;
        (h, after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            _ => (s, None),
        }
    };
    let port = port
        .map(|p| {
            p.parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| HostPortError::NotAPort {
                    given: s.to_string(),
                    port: p.to_string(),
                })
        })
        .transpose()?;
    Ok((host, port))
}

/// A `host:port` that is not one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostPortError {
    /// An IPv6 address whose `[` is not closed.
    #[error("{given:?}: unclosed '['")]
    Unclosed {
        /// The target as given.
        given: String,
    },
    /// A port that is not a number from 1 to 65535.
    #[error("{given:?}: {port:?} is not a port (1 to 65535)")]
    NotAPort {
        /// The target as given.
        given: String,
        /// Its port.
        port: String,
    },
}

/// A target list that is not one ([`TargetSpec::parse`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetListError {
    /// No target.
    #[error("no target given")]
    Empty,
    /// A `dns:` target beside others.
    #[error("a dns: target is given alone (it resolves to every address of its name)")]
    DnsNotAlone,
    /// `dns://server/name`.
    #[error("{given:?}: a DNS server in the target (dns://server/name) is not supported; write dns:///name:port")]
    DnsServer {
        /// The target as given.
        given: String,
    },
    /// `dns:///:port`.
    #[error("{given:?} names no host")]
    NoHost {
        /// The target as given.
        given: String,
    },
    /// A URL where `host:port` belongs.
    #[error("{given:?}: give host:port (or dns:///name:port); the scheme follows from {tls}")]
    Scheme {
        /// The target as given.
        given: String,
        /// The setting that chooses TLS, as the caller spells it.
        tls: &'static str,
    },
    /// An entry without a host or a port.
    #[error("{given:?} is not host:port")]
    NotHostPort {
        /// The target as given.
        given: String,
    },
    /// A malformed `host:port`.
    #[error(transparent)]
    HostPort(#[from] HostPortError),
}

/// Why a well-formed target cannot be used ([`LoadgenError::Target`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetProblem {
    /// A malformed `host:port`.
    #[error(transparent)]
    HostPort(#[from] HostPortError),
    /// The name does not resolve.
    #[error(transparent)]
    Resolve(#[from] std::io::Error),
    /// The name resolves to no address.
    #[error("resolves to no address")]
    NoAddress,
    /// It makes no URI.
    #[error(transparent)]
    Uri(#[from] http::uri::InvalidUri),
    /// tonic takes it for no endpoint.
    #[error(transparent)]
    Endpoint(#[from] tonic::transport::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(list: &[&str]) -> Result<TargetSpec, LoadgenError> {
        let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        TargetSpec::parse(&list, Duration::from_secs(30), Setting::word)
    }

    #[test]
    fn lists_and_dns_names() {
        assert_eq!(
            parse(&["127.0.0.1:5000", "localhost:5001"]).unwrap(),
            TargetSpec::List(vec!["127.0.0.1:5000".into(), "localhost:5001".into()])
        );
        let dns = parse(&["dns:///localhost:7000"]).unwrap();
        assert_eq!(dns.default_authority().as_deref(), Some("localhost:7000"));
        assert_eq!(dns.refresh(), Some(Duration::from_secs(30)));
        assert_eq!(
            parse(&["dns:///svc.local"])
                .unwrap()
                .default_authority()
                .as_deref(),
            Some("svc.local:443")
        );
        assert!(parse(&["[::1]:80"]).is_ok());
    }

    #[test]
    fn only_loopback_addresses_stay_on_this_host() {
        // Classified, never dialled: the addresses off this host are documentation and private
        // ranges that no test connects to.
        for (ip, local) in [
            ("127.0.0.1", true),
            ("127.255.0.9", true),
            ("::1", true),
            ("::ffff:127.0.0.1", true),
            ("0.0.0.0", false),
            ("::", false),
            ("192.0.2.1", false),        // lblab:not-dialled
            ("10.0.0.5", false),         // lblab:not-dialled
            ("2001:db8::1", false),      // lblab:not-dialled
            ("::ffff:192.0.2.1", false), // lblab:not-dialled
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(stays_on_this_host(ip), local, "{ip}");
            assert_eq!(
                Target::of_addr(SocketAddr::new(ip, 80)).is_on_this_host(),
                local,
                "{ip}"
            );
        }
    }

    #[test]
    fn bad_targets_are_named() {
        for (bad, says) in [
            (vec!["localhost"], "not host:port"),
            (vec!["localhost:0"], "not a port"),
            (vec!["localhost:99999"], "not a port"),
            (vec!["http://localhost:80"], "scheme"),
            (vec!["dns://8.8.8.8/svc:80"], "DNS server"), // lblab:not-dialled (refused when parsed)
            (vec!["dns:///a:1", "b:2"], "alone"),
            (vec![], "no target"),
        ] {
            let e = parse(&bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }

    #[tokio::test]
    async fn dns_resolves_every_address_of_the_name() {
        let t = parse(&["dns:///localhost:7000"])
            .unwrap()
            .resolve()
            .await
            .unwrap();
        assert!(!t.is_empty());
        assert!(t
            .iter()
            .all(|t| t.addr.ip().is_loopback() && t.addr.port() == 7000));
        assert!(t.iter().all(|t| t.host == "localhost"));
    }
}
