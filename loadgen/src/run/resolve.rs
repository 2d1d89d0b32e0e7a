//! Re-resolving a `dns:///` target while a run goes, as gRPC's DNS resolver does.

use super::*;

/// Re-resolves `spec` every `every` and gives every balancer the new address list, as gRPC's DNS
/// resolver updates its channel; records what joined and left. A failed resolution keeps the
/// last list (gRPC keeps its addresses too).
pub(super) async fn resolve_periodically(
    spec: TargetSpec,
    every: Duration,
    mut current: Vec<Target>,
    updaters: Vec<EndpointUpdater>,
    transport: crate::transport::Transport,
    clock: Clock,
    changes: Arc<std::sync::Mutex<Vec<String>>>,
) {
    let mut interval = tokio::time::interval(every);
    interval.tick().await;
    loop {
        interval.tick().await;
        let Ok(next) = spec.resolve().await else {
            continue;
        };
        let same =
            |a: &[Target], b: &[Target]| a.iter().map(|t| t.addr).eq(b.iter().map(|t| t.addr));
        if same(&current, &next) {
            continue;
        }
        let at = clock.now() as f64 / 1e9;
        let mut log = changes.lock().unwrap_or_else(|e| e.into_inner());
        for t in next
            .iter()
            .filter(|t| !current.iter().any(|c| c.addr == t.addr))
        {
            log.push(format!("{at:.1}s: {} joined", t.addr));
        }
        for t in current
            .iter()
            .filter(|c| !next.iter().any(|t| t.addr == c.addr))
        {
            log.push(format!("{at:.1}s: {} left", t.addr));
        }
        drop(log);
        let uris: Vec<http::Uri> = next
            .iter()
            .filter_map(|t| client::endpoint_uri(t, &transport).ok())
            .collect();
        for u in &updaters {
            u.set_endpoints(uris.clone());
        }
        current = next;
    }
}
