//! `lblab loadgen --call` against a gRPC server nobody here wrote: Python grpcio (gRPC C-core)
//! with server reflection, installed from PyPI by `scripts/interop-env.sh` and started by the
//! test itself, over plaintext, TLS and mutual TLS with certificates the test makes (rcgen); and
//! against lblab's own backend, which serves reflection v1. Loopback only; every process the test
//! starts is stopped when it ends.

mod common;

use std::path::Path;

use common::{scratch, summary, text, Greeter, Pki};

/// `lblab loadgen` with a short load against `targets`, writing into `out`.
fn loadgen(targets: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    common::loadgen(
        targets,
        out,
        &[
            &[
                "--rate",
                "80",
                "--duration",
                "1.5s",
                "--warmup",
                "0.5s",
                "--deadline",
                "2s",
            ],
            extra,
        ],
    )
}

#[track_caller]
fn assert_all_ok(dir: &Path, policies: usize) {
    let s = summary(dir);
    let rows = s["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), policies, "{s}");
    for r in rows {
        let n = |k: &str| r[k].as_u64().unwrap();
        assert!(n("requests") >= 100, "{r}");
        assert_eq!(n("ok"), n("requests"), "every call answered OK: {r}");
    }
}

/// Each policy's share of calls per target, from targets.csv: (policy, target) -> share.
fn shares(dir: &Path) -> Vec<(String, String, f64)> {
    let text = std::fs::read_to_string(dir.join("targets.csv")).expect("targets.csv");
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), f[1].to_string(), f[4].parse().unwrap())
        })
        .collect()
}

#[test]
fn calls_a_grpcio_server_found_by_reflection_and_steers_away_from_its_slow_instance() {
    let fast = Greeter::start(&["--delay-ms", "1"]);
    let slow = Greeter::start(&["--delay-ms", "25"]);
    let out = scratch("own-service-plaintext").join("run");
    let targets = format!("{},{}", fast.addr, slow.addr);
    let run = loadgen(
        &targets,
        &out,
        &[
            "--call",
            "lblab.interop.v1.Greeter/SayHello",
            "-d",
            r#"{"name":"lab","labels":{"values":["a","b"]}}"#,
            "-H",
            "x-lblab-test: yes",
            "--policy",
            "round_robin",
            "--policy",
            r#"{"peak_ewma_experimental":{}}"#,
        ],
    );
    let stdout = text(&run.stdout);
    assert!(run.status.success(), "{}\n{stdout}", text(&run.stderr));
    assert_all_ok(&out, 2);
    assert!(stdout.contains("traffic share"), "{stdout}");
    let share = |policy: &str, target: &str| {
        shares(&out)
            .into_iter()
            .find(|(p, t, _)| p == policy && t == target)
            .map(|(_, _, s)| s)
            .unwrap_or_else(|| panic!("no row for {policy} {target}"))
    };
    // round_robin splits evenly whatever the latency; peak_ewma sends the slow one much less.
    let rr = share("round_robin", &slow.addr);
    assert!(
        (0.4..=0.6).contains(&rr),
        "round_robin's share of the slow server: {rr}"
    );
    let pe = share("peak_ewma_experimental", &slow.addr);
    assert!(
        pe < rr - 0.15,
        "peak_ewma's share of the slow server {pe}, round_robin's {rr}"
    );
}

#[test]
fn calls_over_tls_and_mutual_tls_with_the_schema_from_a_proto_file() {
    let pki = Pki::new("own-service-pki");
    let (cert, key, ca) = (
        pki.path("server.pem"),
        pki.path("server.key"),
        pki.path("ca.pem"),
    );
    let proto = concat!(env!("CARGO_MANIFEST_DIR"), "/interop/python/greeter.proto");
    let call = [
        "--call",
        "lblab.interop.v1.Greeter/SayHello",
        "-d",
        r#"{"name":"tls"}"#,
        "--policy",
        "peak_ewma_experimental",
    ];

    // TLS, schema by reflection (over TLS), the server verified against the test's CA.
    let tls = Greeter::start(&["--tls-cert", &cert, "--tls-key", &key]);
    let out = scratch("own-service-tls").join("run");
    let mut args = vec!["--tls", "--cacert", &ca];
    args.extend_from_slice(&call);
    let run = loadgen(&tls.addr, &out, &args);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_all_ok(&out, 1);

    // Without the CA the handshake fails: a clear error before any load, naming TLS.
    let run = loadgen(
        &tls.addr,
        &out,
        &[&["--tls", "--proto", proto][..], &call[..]].concat(),
    );
    assert!(!run.status.success());
    let err = text(&run.stderr);
    assert!(
        err.contains("TLS handshake") && err.contains("certificate"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    // --skip-tls-verify skips the verification, and says so.
    let run = loadgen(
        &tls.addr,
        &out,
        &[&["--skip-tls-verify", "--proto", proto][..], &call[..]].concat(),
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(text(&run.stderr).contains("NOT verified"));

    // Mutual TLS: the server requires a client certificate signed by the CA.
    let mtls = Greeter::start(&[
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--client-ca",
        &ca,
        "--no-reflection",
    ]);
    let out = scratch("own-service-mtls").join("run");
    let (ccert, ckey) = (pki.path("client.pem"), pki.path("client.key"));
    let mut args = vec![
        "--tls", "--cacert", &ca, "--cert", &ccert, "--key", &ckey, "--proto", proto,
    ];
    args.extend_from_slice(&call);
    let run = loadgen(&mtls.addr, &out, &args);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_all_ok(&out, 1);
    // Without the client certificate the server refuses the connection: a clear error, not a
    // table of failed calls as if the service had been measured.
    let bare = [&["--tls", "--cacert", &ca, "--proto", proto][..], &call[..]].concat();
    let run = loadgen(&mtls.addr, &scratch("own-service-mtls-refused"), &bare);
    let err = text(&run.stderr);
    assert!(
        !run.status.success(),
        "a refused client certificate must fail the run"
    );
    assert!(
        err.contains(&mtls.addr) && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn bad_calls_get_clear_errors_before_any_load() {
    let server = Greeter::start(&[]);
    let out = scratch("own-service-errors").join("run");
    let proto = concat!(env!("CARGO_MANIFEST_DIR"), "/interop/python/greeter.proto");
    for (args, says) in [
        (
            vec!["--call", "lblab.interop.v1.Greeter/SayBye"],
            vec!["has no method", "SayHello"],
        ),
        (
            vec!["--call", "lblab.interop.v1.Nope/SayHello"],
            vec!["Nope", "lblab.interop.v1.Greeter"],
        ),
        (
            vec![
                "--call",
                "lblab.interop.v1.Greeter/SayHello",
                "-d",
                r#"{"nmae":"x"}"#,
            ],
            vec!["nmae", "lblab.interop.v1.HelloRequest"],
        ),
        (
            vec![
                "--call",
                "lblab.interop.v1.Greeter/SayHello",
                "-d",
                r#"{"extraDelayMs":"soon"}"#,
                "--proto",
                proto,
            ],
            vec!["field extraDelayMs"],
        ),
        (
            vec![
                "--call",
                "lblab.interop.v1.Greeter/SayHello",
                "--policy",
                "fastest",
            ],
            vec!["--policy", "fastest"],
        ),
        (vec!["--data", "{}"], vec!["--call"]),
        (vec!["--cacert", "x.pem"], vec!["--tls"]),
    ] {
        let run = loadgen(&server.addr, &out, &args);
        let err = text(&run.stderr);
        assert!(!run.status.success(), "{args:?} succeeded");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        for s in &says {
            assert!(err.contains(s), "{args:?}: expected {s:?} in {err}");
        }
        assert!(!out.join("summary.json").exists(), "{args:?} wrote results");
    }
    // Nothing listens: the error says so, naming the target.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap().to_string();
    drop(closed);
    let run = loadgen(
        &addr,
        &out,
        &["--call", "lblab.interop.v1.Greeter/SayHello"],
    );
    let err = text(&run.stderr);
    assert!(
        !run.status.success() && err.contains(&addr) && err.contains("connect"),
        "{err}"
    );
}

#[test]
fn lblab_backend_serves_reflection_and_dns_targets_resolve_to_every_address() {
    let dir = scratch("own-service-backend");
    let scenario = dir.join("two.toml");
    let toml = common::one_backend("two", 80.0, "2ms").toml();
    std::fs::write(&scenario, toml).unwrap();
    let backend = common::Backend::start(&scenario);
    let targets = backend.targets.clone();
    let out = dir.join("run");
    let run = loadgen(
        &targets,
        &out,
        &[
            "--call",
            "lblab.v1.Echo/Unary",
            "-d",
            r#"{"id":"7"}"#,
            "--policy",
            "pick_first",
        ],
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_all_ok(&out, 1);
    // localhost names the same server: dns:/// resolves it to every address it has.
    let port = targets.rsplit(':').next().unwrap();
    let run = loadgen(
        &format!("dns:///localhost:{port}"),
        &out,
        &["--call", "lblab.v1.Echo/Unary", "--policy", "round_robin"],
    );
    let err = text(&run.stderr);
    // localhost may also resolve to ::1, where nothing listens: the run goes on with 127.0.0.1.
    assert!(run.status.success(), "{err}");
    let s = summary(&out);
    assert!(s["rows"][0]["ok"].as_u64().unwrap() > 0, "{s}");
}
