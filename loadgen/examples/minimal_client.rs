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
//! Arguments: the targets (comma-separated `host:port`), calls per second, seconds.

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
    let [targets, rate, seconds] = args.as_slice() else {
        return Err("usage: minimal_client HOST:PORT[,HOST:PORT…] CALLS_PER_SECOND SECONDS".into());
    };
    let rate: f64 = rate.parse()?;
    let seconds: f64 = seconds.parse()?;
    if !(rate > 0.0 && seconds > 0.0) {
        return Err("the rate and the seconds must be positive".into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run(targets, rate, seconds))
}

async fn run(targets: &str, rate: f64, seconds: f64) -> Result<(), Box<dyn std::error::Error>> {
    let mut clients = Vec::new();
    for t in targets.split(',') {
        let channel: Channel = Endpoint::from_shared(format!("http://{t}"))?
            .connect()
            .await?;
        clients.push(EchoClient::new(channel));
    }
    let calls = (rate * seconds).round() as u64;
    let (ok, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let (cpu0, wall0) = (process_ns(), Instant::now());
    let mut tasks = Vec::with_capacity(calls as usize);
    for id in 0..calls {
        tick.tick().await;
        let mut client = clients[id as usize % clients.len()].clone();
        let (ok, failed) = (ok.clone(), failed.clone());
        tasks.push(tokio::spawn(async move {
            let request = CallRequest {
                id,
                payload: Default::default(),
            };
            match client.unary(request).await {
                Ok(_) => ok.fetch_add(1, Ordering::Relaxed),
                Err(_) => failed.fetch_add(1, Ordering::Relaxed),
            };
        }));
    }
    for t in tasks {
        t.await?;
    }
    let (cpu, wall) = (process_ns() - cpu0, wall0.elapsed());
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    println!(
        "minimal tonic client: {ok} calls ok, {failed} failed in {:.2} s ({:.0} calls/s); \
         client CPU {:.1} µs per call",
        wall.as_secs_f64(),
        (ok + failed) as f64 / wall.as_secs_f64(),
        cpu as f64 / 1e3 / (ok + failed).max(1) as f64
    );
    Ok(())
}
