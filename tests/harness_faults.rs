//! Faults in the real harness itself, end to end through the `lblab` binary: a backend process
//! killed mid-run, a port already in use, a load generator that reaches no target, a backend
//! that resets its connections, and more load than the machine can take. In each case lblab
//! keeps running or exits with a clear error, accounts for every request, marks the affected
//! results as harness incidents, and leaves no half-written files or processes behind.

mod common;

use std::io::{BufRead as _, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use common::{
    alive, arg, assert_accounted, assert_no_temporary_files, fails, read_all, scratch, signal,
    spawn, succeeds, summary, trickle, wait_for, with_policies, POLITE,
};
use lblab_model::testing::ScenarioBuilder;
use serde_json::Value;

/// Three backends, one client, a few seconds: what the debug build serves comfortably.
fn faults() -> ScenarioBuilder {
    let service_time = r#"{ dist = "lognormal", median = "2ms", p99 = "6ms" }"#;
    trickle("faults", &["round_robin"])
        .seed(5)
        .rate(300.0)
        .warmup("1s")
        .duration("4s")
        .deadline("1s")
        .group("main", 3, service_time, &["workers = 4"])
}

/// Normal scheduling: these tests share the machine with the rest of the suite.
const NO_RT: &str = "--no-realtime";

fn write_scenario(dir: &Path, scenario: &ScenarioBuilder) -> String {
    let path = dir.join("faults.toml");
    std::fs::write(&path, scenario.toml()).unwrap();
    path.to_str().unwrap().to_string()
}

/// A `lblab backend` process serving some backends of a scenario, and where they listen.
struct BackendProcess {
    child: Child,
    targets: Vec<String>,
}

impl BackendProcess {
    fn start(scenario: &str, only: &[&str]) -> BackendProcess {
        let mut args = vec!["backend", scenario, "--for", "60s", NO_RT];
        for o in only {
            args.extend(["--only", o]);
        }
        let mut child = spawn(&args);
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let targets = loop {
            let line = lines
                .next()
                .expect("lblab backend prints its targets")
                .unwrap();
            if let Some(t) = line.strip_prefix("--targets ") {
                break t.split(',').map(str::to_string).collect();
            }
        };
        // Keep reading so the process never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        BackendProcess { child, targets }
    }

    /// Stops it with SIGTERM and checks that it exits cleanly and stops listening.
    fn stop(mut self) {
        signal(self.child.id(), "-TERM");
        let status = wait_for(&mut self.child, Duration::from_secs(10), "lblab backend");
        assert!(status.success(), "lblab backend exited with {status}");
        for t in &self.targets {
            assert!(
                std::net::TcpStream::connect(t).is_err(),
                "{t} still accepts connections after the backend exited"
            );
        }
    }
}

/// The arguments of `lblab loadgen` against `targets` into `out`, then `extra`.
fn loadgen_args<'a>(
    scenario: &'a str,
    targets: &'a str,
    out: &'a Path,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "loadgen",
        scenario,
        "--targets",
        targets,
        "--out",
        arg(out),
        NO_RT,
    ];
    args.extend(extra);
    args
}

/// Runs `lblab loadgen`, which must succeed, and returns its summary, checked for accounting.
#[track_caller]
fn loadgen_ok(scenario: &str, targets: &str, out: &Path, extra: &[&str]) -> Value {
    succeeds(&loadgen_args(scenario, targets, out, extra));
    let s = summary(out);
    assert_accounted(&s);
    assert_no_temporary_files(out);
    s
}

/// The arguments of a [`POLITE`] `lblab real` run into `out`, then `extra`.
fn real_args<'a>(scenario: &'a str, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["real", scenario];
    args.extend(POLITE);
    args.extend(["--out", arg(out)]);
    args.extend(extra);
    args
}

fn incidents<'a>(summary: &'a Value, kind: &str) -> Vec<&'a Value> {
    summary["incidents"]
        .as_array()
        .expect("incidents")
        .iter()
        .filter(|i| i["kind"] == kind)
        .collect()
}

fn row<'a>(summary: &'a Value, policy: &str) -> &'a Value {
    summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["policy"] == policy)
        .unwrap_or_else(|| panic!("no row for {policy}: {summary}"))
}

/// The policy's row counts its incidents (at least one). Other incidents may come on top on a
/// busy machine (late dispatch), so only the sum is checked.
#[track_caller]
fn assert_marked(summary: &Value, policy: &str) {
    let listed = summary["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["policy"] == policy)
        .count() as u64;
    assert!(listed >= 1, "{summary}");
    assert_eq!(row(summary, policy)["incidents"], listed, "{summary}");
}

#[test]
fn a_backend_process_killed_mid_run_is_an_incident_and_every_request_is_accounted_for() {
    let dir = scratch("fault-sigkill");
    let scenario = write_scenario(&dir, &faults());
    let two = BackendProcess::start(&scenario, &["main/0", "main/1"]);
    let mut doomed = BackendProcess::start(&scenario, &["main/2"]);
    let targets = [two.targets.clone(), doomed.targets.clone()]
        .concat()
        .join(",");
    let out = dir.join("out");
    let mut loadgen = spawn(&loadgen_args(&scenario, &targets, &out, &[]));
    // Kill the third backend's process outright in the middle of the measured time.
    std::thread::sleep(Duration::from_millis(3_000));
    signal(doomed.child.id(), "-KILL");
    let _ = doomed.child.wait();
    let status = wait_for(&mut loadgen, Duration::from_secs(60), "lblab loadgen");
    let stdout = read_all(loadgen.stdout.take());
    assert!(status.success(), "lblab loadgen: {status}\n{stdout}");
    two.stop();

    let s = summary(&out);
    assert_eq!(s["partial"], false);
    assert_accounted(&s);
    let lost = incidents(&s, "connection_lost");
    assert_eq!(lost.len(), 1, "{s}");
    assert_eq!(lost[0]["backend"], 2);
    assert!(
        lost[0]["detail"]
            .as_str()
            .unwrap()
            .contains("not connected again"),
        "{}",
        lost[0]
    );
    assert_marked(&s, "round_robin");
    assert!(
        stdout.contains("harness incidents (") && stdout.contains("connection_lost main/2"),
        "the table marks it:\n{stdout}"
    );
    // The policy stopped sending there: nearly all requests still succeeded.
    let r = row(&s, "round_robin");
    assert!(
        r["ok"].as_u64().unwrap() * 100 >= r["requests"].as_u64().unwrap() * 95,
        "{r}"
    );
    assert_no_temporary_files(&out);
}

/// A port some other process is listening on.
fn taken_port() -> (TcpListener, SocketAddr) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    (l, a)
}

#[test]
fn a_port_in_use_is_a_clear_error_before_any_work() {
    let dir = scratch("fault-port");
    let scenario = write_scenario(&dir, &faults());
    let (_held, addr) = taken_port();
    let addr = addr.to_string();
    let out = dir.join("out");
    for args in [
        vec!["backend", &scenario, "--listen", &addr, NO_RT],
        vec![
            "real",
            &scenario,
            "--listen",
            &addr,
            "--floor",
            "0s",
            NO_RT,
            "--out",
            arg(&out),
        ],
    ] {
        let started = Instant::now();
        let err = fails(&args);
        assert!(
            err.contains(&addr) && err.contains("another process is using that address"),
            "{args:?}: {err}"
        );
        assert_eq!(
            err.matches("Address already in use").count(),
            1,
            "the cause is said once: {err}"
        );
        assert!(started.elapsed() < Duration::from_secs(10), "{args:?}");
    }
    assert!(
        !out.join("summary.json").exists(),
        "nothing was measured, nothing written"
    );
}

/// An address nothing listens on.
fn dead_address() -> String {
    let (l, a) = taken_port();
    drop(l);
    a.to_string()
}

#[test]
fn a_load_generator_that_reaches_no_target_says_so_and_writes_nothing() {
    let dir = scratch("fault-unreachable");
    let scenario = write_scenario(&dir, &faults());
    let dead: Vec<String> = (0..3).map(|_| dead_address()).collect();
    let out = dir.join("out");
    let dead_targets = dead.join(",");
    let err = fails(&loadgen_args(&scenario, &dead_targets, &out, &[]));
    assert!(err.contains("no target could be connected to"), "{err}");
    for d in &dead {
        assert!(err.contains(d.as_str()), "names {d}: {err}");
    }
    assert!(err.contains("refused"), "says why: {err}");
    assert!(!out.join("summary.json").exists());
}

#[test]
fn an_unreachable_target_among_working_ones_is_marked() {
    let dir = scratch("fault-one-unreachable");
    let scenario = write_scenario(&dir, &faults());
    let fleet = BackendProcess::start(&scenario, &["main/0", "main/1"]);
    let targets = format!("{},{}", fleet.targets.join(","), dead_address());
    let out = dir.join("out");
    let s = loadgen_ok(&scenario, &targets, &out, &["--duration", "2s"]);
    fleet.stop();
    let u = incidents(&s, "unreachable");
    assert_eq!(u.len(), 1, "{s}");
    assert_eq!(u[0]["backend"], 2);
    let r = row(&s, "round_robin");
    assert_eq!(
        r["errors"], 0,
        "round_robin skips the endpoint that never connected: {r}"
    );
}

/// A TCP proxy in front of `upstream` that resets every connection (RST, not a clean close)
/// `after` it was accepted. Runs until the test process ends.
fn resetting_proxy(upstream: SocketAddr, after: Duration) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = tokio::time::timeout(
                        after,
                        tokio::io::copy_bidirectional(&mut client, &mut server),
                    )
                    .await;
                    // Linger 0: closing sends RST, as a crashing proxy or a conntrack flush does.
                    let _ = socket2::SockRef::from(&client).set_linger(Some(Duration::ZERO));
                    let _ = socket2::SockRef::from(&server).set_linger(Some(Duration::ZERO));
                });
            }
        });
    });
    addr
}

#[test]
fn a_backend_that_resets_connections_is_marked_and_every_request_is_accounted_for() {
    let dir = scratch("fault-reset");
    let scenario = write_scenario(&dir, &faults());
    let fleet = BackendProcess::start(&scenario, &[]);
    let upstream: SocketAddr = fleet.targets[2].parse().unwrap();
    let proxy = resetting_proxy(upstream, Duration::from_millis(400));
    let targets = format!("{},{},{proxy}", fleet.targets[0], fleet.targets[1]);
    let out = dir.join("out");
    let s = loadgen_ok(&scenario, &targets, &out, &[]);
    fleet.stop();
    let lost = incidents(&s, "connection_lost");
    assert_eq!(lost.len(), 1, "only the reset backend: {s}");
    assert_eq!(lost[0]["backend"], 2);
    // Reset every 400 ms over ~5 s of connection: many times.
    assert!(lost[0]["count"].as_u64().unwrap() >= 5, "{}", lost[0]);
    assert_marked(&s, "round_robin");
    let r = row(&s, "round_robin");
    // Calls are still made through the reconnects: most succeed.
    assert!(
        r["ok"].as_u64().unwrap() * 100 >= r["requests"].as_u64().unwrap() * 80,
        "{r}"
    );
    assert_no_temporary_files(&out);
}

#[test]
fn overload_is_marked_and_the_run_still_ends() {
    let dir = scratch("fault-overload");
    // Far more than one debug-build load generator can send (or the fleet serve) on two cores.
    let scenario = write_scenario(
        &dir,
        &faults().rate(200000.0).duration("2s").deadline("200ms"),
    );
    let out = dir.join("out");
    let started = Instant::now();
    let mut child = spawn(&real_args(&scenario, &out, &[]));
    let status = wait_for(&mut child, Duration::from_secs(120), "lblab real");
    let took = started.elapsed();
    let stdout = read_all(child.stdout.take());
    assert!(status.success(), "{status}\n{stdout}");
    assert!(!alive(child.id()));
    let s = summary(&out);
    assert_accounted(&s);
    let r = row(&s, "round_robin");
    // Every arrival of the measured 2 s is accounted for: ~400,000 at 200,000/s.
    let requests = r["requests"].as_u64().unwrap();
    assert!((380_000..420_000).contains(&requests), "{r}");
    assert!(r["dropped"].as_u64().unwrap() > 0, "{r}");
    let marked: Vec<&Value> = ["overloaded", "late_dispatch"]
        .iter()
        .flat_map(|k| incidents(&s, k))
        .collect();
    assert!(!marked.is_empty(), "the overload is marked: {s}");
    assert_marked(&s, "round_robin");
    // The run ends about on time: drops are cheap, so the load generator catches up.
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert_no_temporary_files(&out);
}

/// Three policies of a few seconds each, for runs that are stopped part-way.
fn three_policies() -> ScenarioBuilder {
    with_policies(faults().duration("3s"), &["peak_ewma", "least_request"])
}

#[test]
fn a_real_run_killed_outright_keeps_the_policies_it_finished() {
    let dir = scratch("fault-kill-real");
    let scenario = write_scenario(&dir, &three_policies());
    let out = dir.join("out");
    let mut child = spawn(&real_args(&scenario, &out, &[]));
    // Wait for the checkpoint after the first policy (its last chart written, nothing half
    // written), then kill the process with no chance to clean up.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(out.join("traffic_share.svg").exists()
        && common::files(&out)
            .iter()
            .all(|(n, _)| !n.ends_with(".tmp")))
    {
        assert!(
            Instant::now() < deadline,
            "no checkpoint after the first policy"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "lblab real ended early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(child.id(), "-KILL");
    let _ = child.wait();
    let s = summary(&out);
    assert_eq!(s["partial"], true, "{s}");
    assert_accounted(&s);
    let rows = s["rows"].as_array().unwrap();
    assert!(!rows.is_empty() && rows.len() < 3, "{s}");
    assert_eq!(rows[0]["policy"], "round_robin");
    assert!(rows[0]["ok"].as_u64().unwrap() > 500, "{s}");
    assert!(
        s["notes"].to_string().contains("in progress"),
        "the checkpoint says so: {s}"
    );
    assert!(out.join("harness.json").exists());

    // A killed run may leave a temporary file mid-write; the next run into the folder removes it.
    std::fs::write(out.join(".summary.json.tmp"), "half").unwrap();
    succeeds(&real_args(
        &scenario,
        &out,
        &["--policy", "round_robin", "--duration", "1s"],
    ));
    assert_no_temporary_files(&out);
    assert_eq!(summary(&out)["partial"], false);
}

#[test]
fn loadgen_stops_on_sigint_and_keeps_partial_results() {
    let dir = scratch("fault-sigint-loadgen");
    let scenario = write_scenario(&dir, &faults().duration("1h"));
    let fleet = BackendProcess::start(&scenario, &[]);
    let out = dir.join("out");
    let targets = fleet.targets.join(",");
    let run = common::stops_and_keeps_partial_results(
        &loadgen_args(&scenario, &targets, &out, &[]),
        "-INT",
        Duration::from_secs(3),
        &out,
    );
    fleet.stop();
    let written = common::written_after(&out.join("summary.json"), &run);
    assert!(
        written < common::RESULTS_PROMPT,
        "results written {written:?} after the signal"
    );
    assert!(summary(&out)["rows"][0]["ok"].as_u64().unwrap() > 100);
}

#[test]
fn bad_harness_flags_are_named_before_any_work() {
    let dir = scratch("fault-flags");
    let scenario = write_scenario(&dir, &faults());
    let cases: [(&[&str], &str); 4] = [
        (
            &["backend", &scenario, "--only", "nosuch"],
            "--only \"nosuch\": no backend or fleet group of that name in faults; it has main/0, main/1, main/2",
        ),
        (
            &["loadgen", &scenario, "--targets", "localhost"],
            "--targets: \"localhost\" is not host:port",
        ),
        (
            &["loadgen", &scenario, "--targets", "127.0.0.1:1", "--policy", "nosuch"],
            "--policy \"nosuch\": no such policy in the scenario",
        ),
        (
            &["real", &scenario, "--listen", "localhost:80"],
            "invalid value 'localhost:80' for '--listen <LISTEN>'",
        ),
    ];
    for (args, want) in cases {
        let err = fails(args);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// A black hole with a deadline of an hour: the calls it swallows never end by themselves.
fn black_hole() -> ScenarioBuilder {
    faults()
        .name("black-hole")
        .rate(200.0)
        .warmup("0.5s")
        .duration("2s")
        .deadline("1h")
        .group_key("main", "count", "2")
        .fault("black_hole", &["main/1"], &[])
}

#[test]
fn a_black_hole_with_a_long_deadline_ends_with_the_run_and_its_calls_are_dropped() {
    let dir = scratch("black-hole");
    let scenario = write_scenario(&dir, &black_hole());
    let out = dir.join("out");
    let started = Instant::now();
    succeeds(&real_args(&scenario, &out, &[]));
    let took = started.elapsed();
    // 2.5 s of run, at most MAX_DRAIN (10 s) + 1 s of drain, and start-up.
    assert!(took < Duration::from_secs(25), "took {took:?}");
    let s = summary(&out);
    let rr = row(&s, "round_robin");
    assert!(rr["dropped"].as_u64().unwrap() > 100, "{rr}");
    assert_accounted(&s);
}

#[test]
fn ctrl_c_ends_a_run_stuck_in_its_drain_within_a_second() {
    let dir = scratch("black-hole-int");
    let scenario = write_scenario(&dir, &black_hole());
    let out = dir.join("out");
    // Run end at 2.5 s (plus start-up); the signal comes inside the drain.
    let r = common::interrupted(
        &real_args(&scenario, &out, &[]),
        "-INT",
        Duration::from_secs(6),
    );
    assert!(
        r.took < Duration::from_millis(1500),
        "exit {:?} after {:?}: {}",
        r.code,
        r.took,
        r.stderr
    );
    assert!(summary(&out)["partial"].as_bool().unwrap_or(false));
}
