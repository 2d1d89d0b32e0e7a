//! A server that sends GOAWAY on every connection before serving anything: the balancer backs
//! off between such connections as gRPC does, rather than reconnecting thousands of times a
//! second.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lblab_loadgen::balance::{Balancer, BalancerOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An empty SETTINGS frame, then GOAWAY (last stream 0, NO_ERROR).
const SETTINGS_THEN_GOAWAY: [u8; 26] = [
    0, 0, 0, 4, 0, 0, 0, 0, 0, // SETTINGS, no parameters
    0, 0, 8, 7, 0, 0, 0, 0, 0, // GOAWAY, 8 bytes of payload
    0, 0, 0, 0, 0, 0, 0, 0, // last stream 0, NO_ERROR
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_always_sends_goaway_is_reconnected_to_with_a_backoff() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let server = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let mut preface = [0u8; 24];
                let _ = stream.read_exact(&mut preface).await;
                let _ = stream.write_all(&SETTINGS_THEN_GOAWAY).await;
                let mut rest = [0u8; 1024];
                let _ =
                    tokio::time::timeout(Duration::from_millis(50), stream.read(&mut rest)).await;
            });
        }
    });
    let uri: http::Uri = format!("http://{addr}").parse().unwrap();
    let balancer = Balancer::from_service_config(
        r#"{"loadBalancingConfig":[{"round_robin":{}}]}"#,
        vec![uri],
        BalancerOptions::default(),
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let connections = accepted.load(Ordering::Relaxed);
    // At once, then 1 s (±20%) later, then 1.6 s later: two or three in 1.5 s.
    assert!(
        (1..=4).contains(&connections),
        "{connections} connections in 1.5 s"
    );
    drop(balancer);
    server.abort();
}
