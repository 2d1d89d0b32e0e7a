//! Before the load: every target probed, every client connected, and the outages of targets
//! that never answered.

use super::*;

/// An error if no target accepted a connection.
pub(super) fn check_reachable(
    targets: &[Target],
    unreachable: &[Option<String>],
    waited: Duration,
) -> Result<(), LoadgenError> {
    if targets.is_empty() || unreachable.iter().any(Option::is_none) {
        return Ok(());
    }
    let targets = targets
        .iter()
        .zip(unreachable)
        .map(|(t, e)| (t.label(), e.as_deref().unwrap_or("?").to_string()))
        .collect();
    Err(LoadgenError::Unreachable { waited, targets })
}

/// Every client's outages per target. tower's balancer keeps its connections to itself: for it,
/// only the targets unreachable from the start are known.
pub(super) fn outages_of(
    balancers: &[Balancer],
    unreachable: &[Option<String>],
) -> Vec<Vec<Vec<Outage>>> {
    if balancers.is_empty() {
        vec![unreachable.iter().map(unreachable_outage).collect()]
    } else {
        balancers.iter().map(Balancer::outages).collect()
    }
}

/// A target unreachable from the start, as an outage of the whole run.
pub(super) fn unreachable_outage(error: &Option<String>) -> Vec<Outage> {
    error
        .iter()
        .map(|e| Outage {
            start: 0,
            end: None,
            lost: false,
            failed_attempts: 1,
            merged: 1,
            error: Some(e.clone()),
        })
        .collect()
}

/// One client per scenario client, and their balancers (none for tower's), connected.
pub(super) fn connect(
    runtime: &tokio::runtime::Runtime,
    scenario: &Scenario,
    policy: &PolicyEntry,
    targets: &[Target],
    options: &RunOptions<'_>,
    statuses: &Arc<statuses::StatusTally>,
) -> Result<(Vec<Client>, Vec<Balancer>), LoadgenError> {
    let _guard = runtime.enter();
    let mut clients = Vec::new();
    let mut balancers = Vec::new();
    for c in 0..scenario.workload.clients {
        let seed = derive_seed(scenario.file.seed, streams::POLICY, u64::from(c));
        let (client, balancer) = client::make_client(
            policy,
            targets,
            options.origin,
            seed,
            &options.calls,
            statuses,
        )?;
        clients.push(client);
        balancers.extend(balancer);
    }
    let ready = runtime.block_on(async {
        let mut ready = 0;
        for b in &balancers {
            ready += b.wait_connected(options.connect_wait).await;
        }
        ready
    });
    // The targets accepted a connection (the probe), but no gRPC connection could be made on
    // any (an HTTP/2 or TLS failure, e.g. a refused client certificate): nothing can be measured.
    if let (Some(first), 0) = (balancers.first(), ready) {
        let outages = first.outages();
        let unreachable = targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let why = outages
                    .get(i)
                    .and_then(|o| o.last())
                    .and_then(|o| o.error.clone())
                    .unwrap_or_else(|| "not connected".into());
                (t.label(), why)
            })
            .collect();
        return Err(LoadgenError::Unreachable {
            waited: options.connect_wait,
            targets: unreachable,
        });
    }
    Ok((clients, balancers))
}
