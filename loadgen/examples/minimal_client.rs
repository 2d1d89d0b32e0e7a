//! The least a tonic unary client does to send open-loop load: the yardstick the load generator's
//! own cost per call is measured against (issue "performance, round two", item 3). One tonic
//! `Channel` per target, picked in turn; a tick of a tokio interval per call, the call spawned;
//! no policy, no recorder, no schedule beyond the fixed rate, no live view. It prints the calls
//! that ended, the failures and the process's CPU time per call (the process is only this
//! client), on the same runtime settings as `lblab loadgen` (a multi-threaded runtime with two
//! workers).
//!
//! ```sh
//! lblab backend healthy --no-realtime --for 60s &      # prints its host:port list
//! cargo run --release -p lblab-loadgen --example minimal_client -- \
//!     127.0.0.1:PORT1,127.0.0.1:PORT2 2000 10
//! ```
//!
//! Arguments: the targets (comma-separated `host:port`), calls per second (open loop) or `cN`
//! (closed loop: N tasks, each starting its next call when its last one ends, as
//! `lblab loadgen --concurrency N`) or `pN` (open loop at N calls per second, each call sent at
//! its own time as `lblab loadgen` sends it: a dispatcher thread sleeps until each send time with
//! `lblab_wire::timer::Pacer` at `--spin 0us` and spawns the call on the runtime; a plain rate's
//! interval wakes once per millisecond and sends what is due in a burst), seconds, and
//! optionally a deadline in ms: each call then
//! carries a `grpc-timeout` of that deadline less how late it starts, as `lblab loadgen` sends
//! (so that what a deadline costs can be measured apart).

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lblab_loadgen::cpu::process_ns;
use lblab_wire::pb::echo::echo_client::EchoClient;
use lblab_wire::pb::echo::CallRequest;
use tonic::transport::{Channel, Endpoint};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (targets, load, seconds, deadline) = match args.as_slice() {
        [t, l, s] => (t, l, s, None),
        [t, l, s, d] => (t, l, s, Some(Duration::from_millis(d.parse()?))),
        _ => {
            return Err("usage: minimal_client HOST:PORT[,HOST:PORT…] \
                        CALLS_PER_SECOND|pCALLS_PER_SECOND|cIN_FLIGHT SECONDS [DEADLINE_MS]"
                .into())
        }
    };
    let seconds: f64 = seconds.parse()?;
    let tally = Arc::new(Tally {
        deadline,
        ..Tally::default()
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    if let Some(in_flight) = load.strip_prefix('c') {
        let in_flight: u32 = in_flight.parse()?;
        if in_flight == 0 || seconds.is_nan() || seconds <= 0.0 {
            return Err("the calls in flight and the seconds must be positive".into());
        }
        return runtime.block_on(closed(targets, in_flight, seconds, tally));
    }
    if let Some(rate) = load.strip_prefix('p') {
        let rate: f64 = rate.parse()?;
        if !(rate > 0.0 && seconds > 0.0) {
            return Err("the rate and the seconds must be positive".into());
        }
        return paced(&runtime, targets, rate, seconds, tally);
    }
    let rate: f64 = load.parse()?;
    if !(rate > 0.0 && seconds > 0.0) {
        return Err("the rate and the seconds must be positive".into());
    }
    runtime.block_on(run(targets, rate, seconds, tally))
}

/// One tonic client per target.
async fn connect(targets: &str) -> Result<Vec<EchoClient<Channel>>, Box<dyn std::error::Error>> {
    let mut clients = Vec::new();
    for t in targets.split(',') {
        let channel: Channel = Endpoint::from_shared(format!("http://{t}"))?
            .connect()
            .await?;
        clients.push(EchoClient::new(channel));
    }
    Ok(clients)
}

/// The calls that ended, as they end.
#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    failed: AtomicU64,
    /// Each call's deadline from when it was due, if any.
    deadline: Option<Duration>,
}

impl Tally {
    /// One unary call with an empty request, due at `due`, counted.
    async fn call(&self, client: &mut EchoClient<Channel>, id: u64, due: Instant) {
        let mut request = tonic::Request::new(CallRequest {
            id,
            payload: Default::default(),
        });
        if let Some(deadline) = self.deadline {
            request.set_timeout(deadline.saturating_sub(due.elapsed()));
        }
        match client.unary(request).await {
            Ok(_) => self.ok.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// Waits for `tasks`, then prints the calls, the calls per second and the process's CPU per
    /// call since `cpu0` and `wall0`.
    async fn finish(
        &self,
        tasks: Vec<tokio::task::JoinHandle<()>>,
        cpu0: u64,
        wall0: Instant,
    ) -> Result<(), Box<dyn std::error::Error>> {
        for t in tasks {
            t.await?;
        }
        let (cpu, wall) = (process_ns() - cpu0, wall0.elapsed());
        let (ok, failed) = (
            self.ok.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        );
        println!(
            "minimal tonic client: {ok} calls ok, {failed} failed in {:.2} s ({:.0} calls/s); \
             client CPU {:.1} µs per call",
            wall.as_secs_f64(),
            (ok + failed) as f64 / wall.as_secs_f64(),
            cpu as f64 / 1e3 / (ok + failed).max(1) as f64
        );
        Ok(())
    }
}

/// Closed loop: `in_flight` tasks, each calling the targets in turn until `seconds` have passed.
async fn closed(
    targets: &str,
    in_flight: u32,
    seconds: f64,
    tally: Arc<Tally>,
) -> Result<(), Box<dyn std::error::Error>> {
    let clients = connect(targets).await?;
    let (cpu0, wall0) = (process_ns(), Instant::now());
    let end = wall0 + Duration::from_secs_f64(seconds);
    let mut tasks = Vec::new();
    for k in 0..in_flight as usize {
        let mut clients = clients.clone();
        let tally = tally.clone();
        tasks.push(tokio::spawn(async move {
            let mut id = k as u64;
            while Instant::now() < end {
                let n = clients.len();
                tally
                    .call(&mut clients[id as usize % n], id, Instant::now())
                    .await;
                id += u64::from(in_flight);
            }
        }));
    }
    tally.finish(tasks, cpu0, wall0).await
}

/// Open loop: a call every `1 / rate` s for `seconds`.
async fn run(
    targets: &str,
    rate: f64,
    seconds: f64,
    tally: Arc<Tally>,
) -> Result<(), Box<dyn std::error::Error>> {
    let clients = connect(targets).await?;
    let calls = (rate * seconds).round() as u64;
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let (cpu0, wall0) = (process_ns(), Instant::now());
    let mut tasks = Vec::with_capacity(calls as usize);
    for id in 0..calls {
        let due = tick.tick().await.into_std();
        let mut client = clients[id as usize % clients.len()].clone();
        let tally = tally.clone();
        tasks.push(tokio::spawn(async move {
            tally.call(&mut client, id, due).await;
        }));
    }
    tally.finish(tasks, cpu0, wall0).await
}

/// Open loop, each call at its own time: a call every `1 / rate` s for `seconds`, paced on this
/// thread as `lblab loadgen`'s dispatcher paces (sleeping until each send time, no spin) and
/// spawned on `runtime`.
fn paced(
    runtime: &tokio::runtime::Runtime,
    targets: &str,
    rate: f64,
    seconds: f64,
    tally: Arc<Tally>,
) -> Result<(), Box<dyn std::error::Error>> {
    let clients = runtime.block_on(connect(targets))?;
    let calls = (rate * seconds).round() as u64;
    let gap = Duration::from_secs_f64(1.0 / rate);
    lblab_wire::timer::set_precise_timer_slack();
    let mut pacer = lblab_wire::timer::Pacer::new(Duration::ZERO);
    let (cpu0, wall0) = (process_ns(), Instant::now());
    let mut tasks = Vec::with_capacity(calls as usize);
    for id in 0..calls {
        let due = wall0 + gap.mul_f64(id as f64);
        pacer.sleep_until(due);
        let mut client = clients[id as usize % clients.len()].clone();
        let tally = tally.clone();
        tasks.push(runtime.spawn(async move {
            tally.call(&mut client, id, due).await;
        }));
    }
    runtime.block_on(tally.finish(tasks, cpu0, wall0))
}
