//! The oracle: a picker with the simulator's whole truth, the lower bound every policy is measured
//! against. It picks the READY backend with the least expected time to a successful completion,
//! from the true queues, the current speed and the fault timeline.

use lblab_model::backend::Backend;
use lblab_model::scenario::BackendSpec;
use lblab_policy::{Connectivity, Nanos};
use rand::rngs::SmallRng;
use rand::Rng;

/// The backend the oracle sends a call of `method` to at `now`: the least expected time to a
/// successful completion (a backend that fails a share `p` of calls at once takes `1/(1 − p)`
/// tries per success); ties, common among idle backends, go to the least busy, then to the first
/// from a random starting point drawn from `rng`, so the oracle does not herd. `Err(true)` when
/// nothing is READY but something may connect (queue the call), `Err(false)` when all failed.
pub(crate) fn pick(
    backends: &[Backend],
    specs: &[BackendSpec],
    conn: &[Connectivity],
    now: Nanos,
    method: u32,
    rng: &mut SmallRng,
) -> Result<u32, bool> {
    let n = backends.len();
    let offset = rng.random_range(0..n);
    let mut best: Option<((Nanos, usize), u32)> = None;
    for k in 0..n {
        let b = (offset + k) % n;
        if conn[b] != Connectivity::Ready {
            continue;
        }
        let backend = &backends[b];
        let spec = &specs[b];
        let half = spec.network_rtt / 2;
        // The call's own work: its method's factor and any slowdown of that method, if any.
        let work = match spec.params.method_factors.get(method as usize) {
            Some(f) => {
                let f = f * spec.timeline.method_factor(now + half, method);
                (spec.median_service as f64 * f) as Nanos
            }
            None => spec.median_service,
        };
        let done = backend
            .expected_finish(now + half, work)
            .saturating_add(half);
        let p = backend.timeline().error_rate(now + half);
        let done = if p >= 1.0 {
            Nanos::MAX
        } else {
            now.saturating_add(((done - now) as f64 / (1.0 - p)) as Nanos)
        };
        let key = (done, backend.busy() as usize + backend.queued());
        if best.is_none_or(|(d, _)| key < d) {
            best = Some((key, b as u32));
        }
    }
    match best {
        Some((_, b)) => Ok(b),
        None => Err(conn.iter().any(|s| *s != Connectivity::TransientFailure)),
    }
}
