//! The fleet over real loopback TCP: answers, trailers, faults and delay accuracy.

use std::time::{Duration, Instant};

use lblab_backend::{Fleet, FleetOptions};
use lblab_model::Scenario;
use lblab_wire::orca;
use lblab_wire::pb::echo::echo_client::EchoClient;
use lblab_wire::pb::echo::CallRequest;
use tonic::transport::Channel;

/// Two backends of one worker and one queue slot each, 3 ms a call, then `extra`.
fn scenario(extra: &str) -> Scenario {
    let text = format!(
        r#"
        name = "t"
        [workload]
        rate = 100
        duration = "10s"
        [[fleet]]
        name = "main"
        count = 2
        workers = 1
        queue_limit = 1
        service_time = {{ dist = "constant", value = "3ms" }}
        [[policies]]
        name = "rr"
        config = '{{"loadBalancingConfig":[{{"round_robin":{{}}}}]}}'
        {extra}
        "#
    );
    Scenario::parse(&text).expect("valid scenario")
}

/// A fleet of [`scenario`]`(extra)`'s backends with default options.
async fn start(extra: &str) -> Fleet {
    Fleet::start(&scenario(extra).backends, &FleetOptions::default())
        .await
        .expect("fleet")
}

/// A connected channel to `addr`.
async fn channel(addr: std::net::SocketAddr) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("uri")
        .connect()
        .await
        .expect("connect")
}

async fn client(addr: std::net::SocketAddr) -> EchoClient<Channel> {
    EchoClient::new(channel(addr).await)
}

/// A call with `id` and no payload.
fn call(id: u64) -> CallRequest {
    CallRequest {
        id,
        payload: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_takes_the_service_time_and_carries_an_orca_trailer() {
    let fleet = start("").await;
    let mut c = client(fleet.addrs()[0]).await;
    for i in 0..20 {
        let t = Instant::now();
        let resp = c.unary(call(i)).await.expect("ok");
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(3), "{took:?}");
        assert!(took < Duration::from_millis(50), "{took:?}");
        assert_eq!(resp.get_ref().id, i);
        assert_eq!(resp.get_ref().backend, "main/0");
        let bin = resp
            .metadata()
            .get_bin(orca::ORCA_KEY)
            .expect("ORCA trailer");
        let report = orca::decode(&bin.to_bytes().expect("base64")).expect("protobuf");
        assert!(report.cpu_utilization >= 0.0 && report.cpu_utilization <= 1.0);
    }
    let acc = fleet.shutdown().await;
    assert_eq!(acc.count, 20);
    assert_eq!(acc.early, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_answers_resource_exhausted() {
    let fleet = start("").await;
    let c = client(fleet.addrs()[1]).await;
    // One worker and one queue slot: of three concurrent calls, one is rejected.
    let calls = (0..3).map(|i| {
        let mut c = c.clone();
        tokio::spawn(async move { c.unary(call(i)).await })
    });
    let mut codes = Vec::new();
    for h in calls.collect::<Vec<_>>() {
        codes.push(match h.await.expect("task") {
            Ok(_) => tonic::Code::Ok,
            Err(s) => s.code(),
        });
    }
    codes.sort_by_key(|c| *c as i32);
    assert_eq!(
        codes,
        vec![
            tonic::Code::Ok,
            tonic::Code::Ok,
            tonic::Code::ResourceExhausted
        ]
    );
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_fast_black_hole_and_crash_behave_for_real() {
    let fleet = start(
        r#"
        [[faults]]
        kind = "fail_fast"
        targets = ["main/0"]
        error_rate = 1.0
        [[faults]]
        kind = "black_hole"
        targets = ["main/1"]
        end = "1s"
        [[faults]]
        kind = "crash"
        targets = ["main/1"]
        at = "1s"
        restart_after = "1s"
        "#,
    )
    .await;
    let origin = fleet.origin();
    let mut c0 = client(fleet.addrs()[0]).await;
    let err = c0
        .unary(CallRequest::default())
        .await
        .expect_err("fail-fast");
    assert_eq!(err.code(), tonic::Code::Unavailable);
    assert!(
        err.metadata().get_bin(orca::ORCA_KEY).is_some(),
        "errors carry a report too"
    );

    // Black hole: no answer within the deadline (the server ignores grpc-timeout).
    let mut c1 = client(fleet.addrs()[1]).await;
    let mut req = tonic::Request::new(CallRequest::default());
    req.set_timeout(Duration::from_millis(200));
    let r = tokio::time::timeout(Duration::from_millis(300), c1.unary(req)).await;
    // Either our own timeout fired or tonic's client-side deadline did ("Timeout expired", with a
    // transport error as source): never a status sent by the server.
    match r {
        Err(_elapsed) => {}
        Ok(Err(status)) => assert!(std::error::Error::source(&status).is_some(), "{status:?}"),
        Ok(Ok(resp)) => panic!("a black hole answered: {resp:?}"),
    }

    // Crashed: the listener is gone.
    tokio::time::sleep_until((origin + Duration::from_millis(1200)).into()).await;
    let addr = fleet.addrs()[1];
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "connection refused while down"
    );
    // Restarted on the same port.
    tokio::time::sleep_until((origin + Duration::from_millis(2300)).into()).await;
    let mut c1 = client(addr).await;
    c1.unary(CallRequest::default())
        .await
        .expect("answers after the restart");
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_service_reports_serving() {
    let fleet = start("").await;
    let mut h = tonic_health::pb::health_client::HealthClient::new(channel(fleet.addrs()[0]).await);
    let resp = h
        .check(tonic_health::pb::HealthCheckRequest {
            service: "lblab.v1.Echo".into(),
        })
        .await
        .expect("health");
    assert_eq!(
        resp.get_ref().status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_health_check_waits_through_a_pause_as_a_call_would() {
    // main/0 stops for 400 ms every second; main/1 never. Checks sent every 20 ms for 1.5 s: some
    // of main/0's wait for the end of a pause, none of main/1's do.
    let fleet = start(
        r#"
        [[faults]]
        kind = "gc_pauses"
        targets = ["main/0"]
        every = "1s"
        pause = "400ms"
        "#,
    )
    .await;
    let mut slowest = [Duration::ZERO; 2];
    for (b, slowest) in slowest.iter_mut().enumerate() {
        let mut h =
            tonic_health::pb::health_client::HealthClient::new(channel(fleet.addrs()[b]).await);
        let end = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < end {
            let t = Instant::now();
            h.check(tonic_health::pb::HealthCheckRequest::default())
                .await
                .expect("health");
            *slowest = (*slowest).max(t.elapsed());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert!(slowest[0] >= Duration::from_millis(100), "{slowest:?}");
    assert!(slowest[1] < Duration::from_millis(100), "{slowest:?}");
    fleet.shutdown().await;
}
