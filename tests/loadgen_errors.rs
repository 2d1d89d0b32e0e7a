//! `lblab loadgen` when things go wrong (issue 23): IPv6 literal targets, runs in which every
//! call fails, ghz's `--insecure`, the TLS hints on the reflection path, and outlier-detection
//! configs that eject nothing. Against `lblab backend` and Python grpcio (started by the test) on
//! loopback only; every process a test starts is stopped when it ends.

mod common;

use std::path::Path;

use common::{lblab, one_backend, scratch, summary, text, Backend, Greeter, Pki};

/// `lblab backend` serving one backend on `listen`, the scenario written into `dir`.
fn backend(dir: &Path, listen: &str) -> Backend {
    let scenario = dir.join("one.toml");
    let toml = one_backend("one", 50.0, "1ms").toml();
    std::fs::write(&scenario, toml).expect("writes the scenario");
    Backend::start_on(&scenario, Some(listen))
}

/// `lblab loadgen` with a short load against `targets`, writing into `out`.
fn loadgen(targets: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    common::loadgen(
        targets,
        out,
        &[
            &[
                "--rate",
                "40",
                "--duration",
                "1s",
                "--warmup",
                "0.2s",
                "--deadline",
                "2s",
                "--policy",
                "round_robin",
            ],
            extra,
        ],
    )
}

#[test]
fn ipv6_literal_targets_carry_the_load() {
    let dir = scratch("loadgen-errors-ipv6");
    let backend = backend(&dir, "[::1]:0");
    assert!(backend.targets.starts_with("[::1]:"), "{}", backend.targets);
    let out = dir.join("run");
    // lblab's Echo (no reflection), then a method found by reflection: both over [::1].
    for extra in [&[][..], &["--call", "lblab.v1.Echo/Unary"][..]] {
        let run = loadgen(&backend.targets, &out, extra);
        let err = text(&run.stderr);
        assert!(run.status.success(), "{extra:?}: {err}");
        let s = summary(&out);
        let row = &s["rows"][0];
        assert!(row["ok"].as_u64().unwrap() > 0, "{extra:?}: {s}");
        assert_eq!(row["errors"].as_u64(), Some(0), "{extra:?}: {s}");
    }
}

#[test]
fn a_run_in_which_every_call_fails_says_why_and_exits_3() {
    let server = Greeter::start(&[]);
    let out = scratch("loadgen-errors-all-fail").join("run");
    // No --call: every call is lblab's Echo, which a greeter does not have.
    let run = loadgen(&server.addr, &out, &[]);
    let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
    assert_eq!(run.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.contains("status distribution"), "{stdout}");
    assert!(stdout.contains("UNIMPLEMENTED"), "{stdout}");
    assert!(
        stderr.contains("no call succeeded") && stderr.contains("--call"),
        "{stderr}"
    );
    let csv = std::fs::read_to_string(out.join("statuses.csv")).expect("statuses.csv");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("policy,status,message,count"), "{csv}");
    assert!(
        lines.next().unwrap_or("").starts_with("round_robin,OK,,0"),
        "{csv}"
    );
    assert!(csv.contains("round_robin,UNIMPLEMENTED,"), "{csv}");

    // A run that succeeds counts its OK calls and exits 0.
    let run = loadgen(
        &server.addr,
        &out,
        &["--call", "lblab.interop.v1.Greeter/SayHello"],
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    let csv = std::fs::read_to_string(out.join("statuses.csv")).expect("statuses.csv");
    let ok: u64 = csv
        .lines()
        .find_map(|l| l.strip_prefix("round_robin,OK,,"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(ok > 0, "{csv}");
}

#[test]
fn insecure_means_plaintext_as_in_ghz_and_tls_to_plaintext_gets_a_hint() {
    let dir = scratch("loadgen-errors-insecure");
    let backend = backend(&dir, "127.0.0.1:0");
    let out = dir.join("run");
    let call = ["--call", "lblab.v1.Echo/Unary"];
    let run = loadgen(
        &backend.targets,
        &out,
        &[&["--insecure"][..], &call].concat(),
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(summary(&out)["rows"][0]["ok"].as_u64().unwrap() > 0);

    // With a TLS flag it is ambiguous: refused, naming what to use.
    let run = loadgen(&backend.targets, &out, &["--insecure", "--tls"]);
    let err = text(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains("plaintext") && err.contains("--skip-tls-verify"),
        "{err}"
    );

    // TLS against a plaintext server: the handshake's failure says so plainly, on the
    // reflection path and before a run alike.
    for extra in [&call[..], &[][..]] {
        let run = loadgen(
            &backend.targets,
            &out,
            &[&["--tls", "--skip-tls-verify"][..], extra].concat(),
        );
        let err = text(&run.stderr);
        assert!(!run.status.success(), "{extra:?}");
        assert!(
            err.contains("plaintext server") && err.contains("leave out --tls"),
            "{extra:?}: {err}"
        );
    }
}

#[test]
fn reflection_gives_the_tls_and_client_certificate_hints() {
    let pki = Pki::new("loadgen-errors-reflection-tls");
    let dir = scratch("loadgen-errors-reflection-tls-run");
    let (cert, key, ca) = (
        pki.path("server.pem"),
        pki.path("server.key"),
        pki.path("ca.pem"),
    );
    let call = ["--call", "lblab.interop.v1.Greeter/SayHello"];
    let out = dir.join("run");

    // Plaintext against a TLS server, schema by reflection.
    let tls = Greeter::start(&["--tls-cert", &cert, "--tls-key", &key]);
    let run = loadgen(&tls.addr, &out, &call);
    let err = text(&run.stderr);
    assert!(!run.status.success());
    assert!(err.contains("add --tls"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    // A server that wants a client certificate, none given.
    let mtls = Greeter::start(&["--tls-cert", &cert, "--tls-key", &key, "--client-ca", &ca]);
    let run = loadgen(
        &mtls.addr,
        &out,
        &[&["--tls", "--cacert", &ca][..], &call].concat(),
    );
    let err = text(&run.stderr);
    assert!(!run.status.success());
    assert!(
        err.contains("client certificate") && err.contains("--cert"),
        "{err}"
    );
}

#[test]
fn outlier_detection_without_an_ejection_algorithm_is_warned_about() {
    let bare = r#"{"loadBalancingConfig":[{"outlier_detection_experimental":{"childPolicy":[{"round_robin":{}}]}}]}"#;
    let run = lblab(&["check", bare]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let err = text(&run.stderr);
    assert!(
        err.contains("warning") && err.contains("ejects nothing"),
        "{err}"
    );

    // The README's example has an algorithm: no warning.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let example = readme
        .lines()
        .find_map(|l| {
            let start = l.find(r#"'{"outlier_detection_experimental""#)?;
            let rest = &l[start + 1..];
            Some(rest[..rest.find('\'')?].to_string())
        })
        .expect("the README has an outlier_detection_experimental --policy example");
    let config = format!(r#"{{"loadBalancingConfig":[{example}]}}"#);
    let run = lblab(&["check", &config]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(
        !text(&run.stderr).contains("warning"),
        "{}",
        text(&run.stderr)
    );

    // The same warning where a run's policies are validated (here --policy of loadgen).
    let run = lblab(&[
        "loadgen",
        "--targets",
        "127.0.0.1:1",
        "--dry-run",
        "--policy",
        bare,
    ]);
    let err = text(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(err.contains("ejects nothing"), "{err}");
}

#[test]
fn a_servers_text_is_escaped_and_an_oversized_one_names_the_limit() {
    let dir = scratch("loadgen-errors-server-text");
    let call = ["--call", "lblab.interop.v1.Greeter/SayHello"];
    // Escape sequences that would retitle and clear the terminal, and a line break.
    let hostile = Greeter::start(&["--fail-message", r"\x1b]0;owned\x07\x1b[2Jboom\r\nline 2"]);
    let out = dir.join("hostile");
    let run = loadgen(&hostile.addr, &out, &call);
    let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
    assert_eq!(run.status.code(), Some(3), "{stdout}\n{stderr}");
    for printed in [&stdout, &stderr] {
        assert!(
            !printed.contains('\u{1b}') && !printed.contains('\r'),
            "{printed:?}"
        );
    }
    assert!(
        stdout.contains(r"\u{1b}]0;owned\u{7}\u{1b}[2Jboom\r\nline 2"),
        "{stdout}"
    );
    // The server serves the method it was asked for: no hint about lblab's own Echo.
    assert!(!stderr.contains("lblab.v1.Echo"), "{stderr}");

    // A grpc-message of 1 MiB: over the client's header-list limit, which the status names.
    let huge = Greeter::start(&["--fail-message-bytes", "1048576"]);
    let out = dir.join("huge");
    let run = loadgen(&huge.addr, &out, &call);
    let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
    assert_eq!(run.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("16 KiB") && stdout.contains("SETTINGS_MAX_HEADER_LIST_SIZE"),
        "{stdout}"
    );
    assert!(!stderr.contains("lblab.v1.Echo"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn n_and_z_together_say_which_ends_the_run() {
    // --dry-run: nothing is dialled.
    let short = lblab(&[
        "loadgen",
        "127.0.0.1:1",
        "-n",
        "1000",
        "-r",
        "100",
        "-z",
        "5s",
        "--dry-run",
    ]);
    assert!(short.status.success());
    let err = text(&short.stderr);
    assert!(
        err.contains("-z 5s ends each run before its -n 1000 calls"),
        "{err}"
    );
    assert!(err.contains("about 500 calls are sent"), "{err}");
    assert!(text(&short.stdout).contains("then 5s measured"));
    let long = lblab(&[
        "loadgen",
        "127.0.0.1:1",
        "-n",
        "100",
        "-r",
        "100",
        "-z",
        "5s",
        "--dry-run",
    ]);
    let err = text(&long.stderr);
    assert!(
        err.contains("take 1s, so each run ends then, before -z 5s"),
        "{err}"
    );
}
