//! A call's deadline through the balancer, in each phase a call can be in: waiting for a READY
//! endpoint, waiting for the answer's headers, and reading its body; and a call that waits for an
//! endpoint goes out as soon as one is READY; an endpoint is READY only once the server speaks
//! HTTP/2. Against real Echo servers on loopback.

use std::time::{Duration, Instant};

use lblab_backend::{Fleet, FleetOptions};
use lblab_loadgen::balance::{Balancer, BalancerOptions};
use lblab_model::testing::{constant, ScenarioBuilder};
use lblab_policy::Connectivity;
use lblab_wire::pb::echo::echo_client::EchoClient;
use lblab_wire::pb::echo::CallRequest;

/// One backend answering in `service`.
fn one(service: &str) -> lblab_model::Scenario {
    ScenarioBuilder::new("one")
        .rate(100.0)
        .duration("10s")
        .group("main", 1, &constant(service), &[])
        .lb("unused", "round_robin")
        .build()
        .unwrap()
}

/// A round_robin balancer over the one endpoint `uri`.
fn round_robin(uri: http::Uri) -> Balancer {
    Balancer::from_service_config(
        r#"{"loadBalancingConfig":[{"round_robin":{}}]}"#,
        vec![uri],
        BalancerOptions::default(),
    )
    .unwrap()
}

/// One call with `deadline`: its status code and how long it took.
async fn call(
    client: &EchoClient<lblab_loadgen::balance::PolicyService>,
    deadline: Duration,
) -> (tonic::Code, Duration) {
    let mut request = tonic::Request::new(CallRequest::default());
    request.set_timeout(deadline);
    let started = Instant::now();
    let code = match client.clone().unary(request).await {
        Ok(_) => tonic::Code::Ok,
        Err(status) => status.code(),
    };
    (code, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_answer_ends_at_the_deadline_and_a_fast_one_is_not_cut() {
    let fleet = Fleet::start(&one("400ms").backends, &FleetOptions::default())
        .await
        .unwrap();
    let uri: http::Uri = format!("http://{}", fleet.addrs()[0]).parse().unwrap();
    let balancer = round_robin(uri);
    assert_eq!(balancer.wait_connected(Duration::from_secs(5)).await, 1);
    let client = EchoClient::new(balancer.service());
    let (code, took) = call(&client, Duration::from_millis(60)).await;
    assert_eq!(code, tonic::Code::DeadlineExceeded);
    assert!(took >= Duration::from_millis(60), "{took:?}");
    assert!(
        took < Duration::from_millis(350),
        "ended by the deadline: {took:?}"
    );
    // The same timer bounds a call that answers in time, and does not cut it.
    let (code, took) = call(&client, Duration::from_millis(2000)).await;
    assert_eq!(code, tonic::Code::Ok, "{took:?}");
    assert!(took >= Duration::from_millis(400), "{took:?}");
}

/// A loopback listener whose accept queue is full: a new connection to it stays in its TCP
/// handshake (its SYN is dropped and retried), so an endpoint there stays CONNECTING. The
/// returned streams hold the queue full.
async fn full_listener() -> (tokio::net::TcpListener, Vec<tokio::net::TcpStream>) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut held = Vec::new();
    for _ in 0..4 {
        let attempt = tokio::net::TcpStream::connect(addr);
        match tokio::time::timeout(Duration::from_millis(200), attempt).await {
            Ok(Ok(stream)) => held.push(stream),
            _ => break,
        }
    }
    (listener, held)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waits_for_a_ready_endpoint_until_its_deadline_and_goes_when_one_is() {
    let (full, _held) = full_listener().await;
    let full_uri: http::Uri = format!("http://{}", full.local_addr().unwrap())
        .parse()
        .unwrap();
    let balancer = round_robin(full_uri);
    let client = EchoClient::new(balancer.service());
    let (code, took) = call(&client, Duration::from_millis(150)).await;
    assert_eq!(code, tonic::Code::DeadlineExceeded, "{took:?}");
    assert!(took >= Duration::from_millis(150), "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");

    // A call that is waiting goes out when a READY endpoint arrives.
    let fleet = Fleet::start(&one("1ms").backends, &FleetOptions::default())
        .await
        .unwrap();
    let ready: http::Uri = format!("http://{}", fleet.addrs()[0]).parse().unwrap();
    let waiting = tokio::spawn({
        let client = client.clone();
        async move { call(&client, Duration::from_secs(10)).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiting.is_finished(), "nothing is READY yet");
    balancer.set_endpoints(vec![ready]);
    let (code, took) = waiting.await.unwrap();
    assert_eq!(code, tonic::Code::Ok, "{took:?}");
    assert!(took < Duration::from_secs(5), "went when READY: {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_accepts_tcp_but_never_speaks_http2_is_not_ready() {
    // The kernel completes the handshake into the accept queue; nothing ever answers on it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let uri: http::Uri = format!("http://{}", silent.local_addr().unwrap())
        .parse()
        .unwrap();
    let balancer = round_robin(uri);
    assert_eq!(balancer.wait_connected(Duration::from_millis(300)).await, 0);
    assert_eq!(balancer.connectivity(), [Connectivity::Connecting]);
    let client = EchoClient::new(balancer.service());
    let (code, took) = call(&client, Duration::from_millis(150)).await;
    assert_eq!(code, tonic::Code::DeadlineExceeded, "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    drop(silent);
}
