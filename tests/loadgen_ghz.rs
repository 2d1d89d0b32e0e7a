//! `lblab loadgen` as a ghz user drives it (issue 23, items 4, 5, 7 and 8): the summary's calls
//! per second, fastest and mean call; `-O json`, `-O prometheus` and the HTML report; targets
//! named by address; `-n`, `-d` arrays and `-d @`; rate schedules; message-size limits and
//! connection flags; `--protoset` and server-streaming calls; a self-signed `openssl req -x509`
//! certificate given as `--cacert`; `report --merge` keeping `targets.csv` and `statuses.csv`;
//! `lblab real`'s `statuses.csv`. Against Python grpcio (started by the test) and lblab's fleet,
//! on loopback only; every process a test starts is stopped when it ends.

mod common;

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{arg, interop_python, lblab, scratch, summary, text, Greeter};

const SAY_HELLO: &str = "lblab.interop.v1.Greeter/SayHello";

/// `lblab loadgen` with a short load against `targets`, writing into `out`.
fn loadgen(targets: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    common::loadgen(
        targets,
        out,
        &[
            &[
                "--duration",
                "1s",
                "--warmup",
                "0.2s",
                "--policy",
                "round_robin",
            ],
            extra,
        ],
    )
}

#[test]
fn summaries_show_rates_and_come_as_json_prometheus_and_html() {
    let server = Greeter::start(&[]);
    let out = scratch("ghz-formats").join("run");
    let call = ["--call", SAY_HELLO, "-r", "60"];
    // -O json: the run as JSON on stdout, nothing else there.
    let run = loadgen(&server.addr, &out, &[&call[..], &["-O", "json"]].concat());
    assert!(run.status.success(), "{}", text(&run.stderr));
    let json: serde_json::Value =
        serde_json::from_slice(&run.stdout).expect("stdout is one JSON document");
    let rate = &json["rates"][0];
    assert!(rate["calls_per_s"].as_f64().unwrap() > 20.0, "{json}");
    assert!(rate["min_ms"].as_f64().unwrap() > 0.0, "{json}");
    assert!(json["rows"][0]["mean_ms"].as_f64().unwrap() >= rate["min_ms"].as_f64().unwrap());
    assert_eq!(
        json["targets"][0]["address"],
        server.addr.as_str(),
        "{json}"
    );
    assert_eq!(json["statuses"][0]["status"], "OK", "{json}");
    // summary.json holds the same rates.
    assert_eq!(summary(&out)["rates"], json["rates"]);
    // Charts and timeseries.csv name the target by its address.
    let ts = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let header = ts.lines().next().unwrap();
    assert!(
        header.contains(&format!("share_{}", server.addr)),
        "{header}"
    );
    // The self-contained HTML report: tables and the charts inlined.
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(
        html.contains("<svg") && html.contains("calls/s"),
        "report.html"
    );
    assert!(
        !html.contains("src=\"") && !html.contains("href=\""),
        "no links out"
    );

    // The table: calls/s, min and mean; no "to faulty" column without a scenario.
    let run = loadgen(&server.addr, &out, &call);
    let stdout = text(&run.stdout);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let head = stdout.lines().next().unwrap();
    for column in ["calls/s", "min ms", "mean ms", "p99 ms"] {
        assert!(head.contains(column), "{column}: {stdout}");
    }
    assert!(!stdout.contains("to faulty"), "{stdout}");

    // Prometheus's text format.
    let run = loadgen(
        &server.addr,
        &out,
        &[&call[..], &["-O", "prometheus"]].concat(),
    );
    let prom = text(&run.stdout);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(
        prom.contains("# TYPE lblab_calls_per_second gauge")
            && prom.contains("lblab_calls_total{policy=\"round_robin\",outcome=\"ok\"} ")
            && prom.contains("lblab_latency_seconds{policy=\"round_robin\",quantile=\"0.99\"} "),
        "{prom}"
    );
}

/// `lblab loadgen ... -d @` with `stdin` on its standard input.
fn with_stdin(args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lblab"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs lblab");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("writes stdin");
    child.wait_with_output().expect("waits")
}

#[test]
fn total_data_arrays_stdin_and_ghz_aliases() {
    let server = Greeter::start(&[]);
    let dir = scratch("ghz-data");
    let out = dir.join("run");
    // -n: exactly that many calls; -d with a JSON array, sent in turn; ghz's -t and -i.
    let run = lblab(&[
        "loadgen",
        "--targets",
        &server.addr,
        "--call",
        SAY_HELLO,
        "-n",
        "30",
        "-r",
        "60",
        "-t",
        "2s",
        "-i",
        ".",
        "--policy",
        "round_robin",
        "--no-realtime",
        "--out",
        arg(&out),
        "-d",
        r#"[{"name":"a"},{"name":"b","extraDelayMs":1}]"#,
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let s = summary(&out);
    assert_eq!(s["rows"][0]["requests"], 30, "{s}");
    assert_eq!(s["rows"][0]["ok"], 30, "{s}");
    assert!(
        text(&run.stderr).contains("2 requests of"),
        "{}",
        text(&run.stderr)
    );
    // -n with -c, ghz's usual: the run ends when the calls are done.
    let run = lblab(&[
        "loadgen",
        "--targets",
        &server.addr,
        "--call",
        SAY_HELLO,
        "-c",
        "4",
        "-n",
        "50",
        "-m",
        r#"{"x-user":"ann"}"#,
        "--policy",
        "round_robin",
        "--no-realtime",
        "--out",
        arg(&out),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let s = summary(&out);
    assert_eq!(s["rows"][0]["requests"], 50, "{s}");
    assert_eq!(s["rows"][0]["ok"], 50, "{s}");
    let measured = s["measured_s"].as_f64().unwrap();
    assert!(measured > 0.0 && measured < 30.0, "{s}");
    let per_s = s["rates"][0]["calls_per_s"].as_f64().unwrap();
    assert!((per_s - 50.0 / measured).abs() < 1.0, "{s}");
    // -d @: the request from stdin, checked like any other.
    let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/python/greeter.proto");
    let args = [
        "loadgen",
        "--targets",
        &server.addr,
        "--call",
        SAY_HELLO,
        "--proto",
        arg(&proto),
        "-d",
        "@",
        "--dry-run",
        "--no-realtime",
    ];
    let bad = with_stdin(&args, r#"{"nmae":"x"}"#);
    let err = text(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("nmae") && err.contains("--data"),
        "{err}"
    );
}

#[test]
fn message_size_limits_and_connection_flags_apply() {
    let server = Greeter::start(&[]);
    let out = scratch("ghz-limits").join("run");
    // Every reply is larger than 1 byte: every call fails, and the status says why.
    let run = loadgen(
        &server.addr,
        &out,
        &[
            "--call",
            SAY_HELLO,
            "-r",
            "40",
            "--max-recv-message-size",
            "1",
        ],
    );
    let stdout = text(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(3),
        "{stdout}\n{}",
        text(&run.stderr)
    );
    assert!(
        stdout.contains("RESOURCE_EXHAUSTED") && stdout.contains("the limit is: 1 bytes"),
        "{stdout}"
    );
    let run = loadgen(
        &server.addr,
        &out,
        &[
            "--call",
            SAY_HELLO,
            "-r",
            "40",
            "--connect-timeout",
            "2s",
            "--keepalive",
            "200ms",
            "--keepalive-timeout",
            "1s",
            "--max-send-message-size",
            "1MiB",
        ],
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(summary(&out)["rows"][0]["errors"], 0);
}

#[test]
fn a_step_schedule_steps_the_offered_rate() {
    let server = Greeter::start(&[]);
    let out = scratch("ghz-schedule").join("run");
    let run = lblab(&[
        "loadgen",
        "--targets",
        &server.addr,
        "--call",
        SAY_HELLO,
        "--load-schedule",
        "step",
        "--load-start",
        "20",
        "--load-step",
        "40",
        "--load-step-duration",
        "1s",
        "--load-end",
        "60",
        "-z",
        "2s",
        "--warmup",
        "0s",
        "--constant",
        "--policy",
        "round_robin",
        "--no-realtime",
        "--out",
        arg(&out),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let s = summary(&out);
    let requests = s["rows"][0]["requests"].as_u64().unwrap();
    assert!((78..=82).contains(&requests), "20 + 60 calls: {s}");
    // By completion second: about 20, then about 60.
    let ts = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let completed: Vec<u64> = ts
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
        .collect();
    assert!(completed[0] <= 25 && completed[1] >= 50, "{ts}");
}

#[test]
fn protosets_and_server_streaming_methods() {
    let server = Greeter::start(&["--no-reflection"]);
    let dir = scratch("ghz-protoset");
    let set = dir.join("greeter.protoset");
    let proto_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/python");
    let made = Command::new(interop_python())
        .args([
            "-m",
            "grpc_tools.protoc",
            "-I",
            arg(&proto_dir),
            "--include_imports",
        ])
        .arg(format!("--descriptor_set_out={}", set.display()))
        .arg(proto_dir.join("greeter.proto"))
        .output()
        .expect("runs protoc");
    assert!(made.status.success(), "{}", text(&made.stderr));
    let out = dir.join("run");
    let run = loadgen(
        &server.addr,
        &out,
        &[
            "--call",
            "lblab.interop.v1.Greeter/Chat",
            "--protoset",
            arg(&set),
            "-r",
            "40",
        ],
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(
        text(&run.stderr).contains("server-streaming"),
        "{}",
        text(&run.stderr)
    );
    let s = summary(&out);
    assert!(s["rows"][0]["ok"].as_u64().unwrap() >= 30, "{s}");
    assert_eq!(s["rows"][0]["errors"], 0, "{s}");
}

#[test]
fn a_self_signed_openssl_certificate_given_as_cacert_is_accepted() {
    let dir = scratch("ghz-self-signed");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(["-keyout", arg(&key), "-out", arg(&cert)])
        .output()
        .expect("runs openssl");
    assert!(made.status.success(), "{}", text(&made.stderr));
    let server = Greeter::start(&["--tls-cert", arg(&cert), "--tls-key", arg(&key)]);
    let out = dir.join("run");
    let run = loadgen(
        &server.addr,
        &out,
        &[
            "--call",
            SAY_HELLO,
            "-r",
            "40",
            "--tls",
            "--cacert",
            arg(&cert),
        ],
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(summary(&out)["rows"][0]["errors"], 0);
    // Its names still count: a name it does not have is refused.
    let run = loadgen(
        &server.addr,
        &out,
        &[
            "--call",
            SAY_HELLO,
            "-r",
            "40",
            "--tls",
            "--cacert",
            arg(&cert),
            "--authority",
            "elsewhere.test",
        ],
    );
    assert!(
        !run.status.success(),
        "a certificate for another name was accepted"
    );
}

#[test]
fn merged_runs_keep_targets_and_statuses() {
    let server = Greeter::start(&[]);
    let dir = scratch("ghz-merge");
    let (a, b) = (dir.join("a"), dir.join("b"));
    let spawn = |out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_lblab"))
            .args([
                "loadgen",
                "--targets",
                &server.addr,
                "--call",
                SAY_HELLO,
                "-r",
                "40",
                "-z",
                "1.5s",
                "--warmup",
                "0.2s",
                "--policy",
                "round_robin",
                "--no-realtime",
                "--out",
            ])
            .arg(out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runs lblab")
    };
    // Two load generators at once, as on two hosts.
    let (ra, rb) = (spawn(&a), spawn(&b));
    for r in [ra, rb] {
        let o = r.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let merged = dir.join("merged");
    let run = lblab(&["report", "--merge", arg(&a), arg(&b), "--out", arg(&merged)]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let sends = |d: &Path| -> u64 {
        let t = std::fs::read_to_string(d.join("targets.csv")).expect("targets.csv");
        t.lines()
            .skip(1)
            .map(|l| l.split(',').nth(3).unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(sends(&merged), sends(&a) + sends(&b));
    let oks = |d: &Path| -> u64 {
        let t = std::fs::read_to_string(d.join("statuses.csv")).expect("statuses.csv");
        t.lines()
            .skip(1)
            .filter(|l| l.contains(",OK,"))
            .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(oks(&merged), oks(&a) + oks(&b));
    assert!(
        summary(&merged)["rates"][0]["calls_per_s"]
            .as_f64()
            .unwrap()
            > 40.0
    );
}

#[test]
fn real_runs_write_their_statuses() {
    let dir = scratch("ghz-real-statuses");
    let scenario = dir.join("one.toml");
    let toml = common::one_backend("one", 50.0, "1ms")
        .warmup("0.2s")
        .toml();
    std::fs::write(&scenario, toml).unwrap();
    let out = dir.join("out");
    let run = lblab(&[
        "real",
        arg(&scenario),
        "--floor",
        "0s",
        "--no-realtime",
        "--attempts",
        "1",
        "--out",
        arg(&out),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let statuses = std::fs::read_to_string(out.join("statuses.csv")).expect("statuses.csv");
    assert!(
        statuses.starts_with("policy,status,message,count\nround_robin,OK,,"),
        "{statuses}"
    );
}

/// Runs a step concurrency schedule (start, step per second, end) for 2 s against `server` into
/// `name`; the calls completed in each second.
fn completed_per_second(
    server: &Greeter,
    name: &str,
    (start, step, end): (&str, &str, &str),
) -> Vec<u64> {
    let out = scratch("ghz-concurrency-schedule").join(name);
    let run = lblab(&[
        "loadgen",
        "--call",
        SAY_HELLO,
        "--concurrency-schedule",
        "step",
        "--concurrency-start",
        start,
        "--concurrency-step",
        step,
        "--concurrency-step-duration",
        "1s",
        "--concurrency-end",
        end,
        "-z",
        "2s",
        "--warmup",
        "0s",
        "--policy",
        "round_robin",
        "--no-realtime",
        "--out",
        arg(&out),
        &server.addr,
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let ts = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    ts.lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn a_concurrency_schedule_adds_and_removes_calls_in_flight_step_by_step() {
    let server = Greeter::start(&["--delay-ms", "50"]);
    // One call in flight for a second (about 20 calls of 50 ms), then three (about 60).
    let rising = completed_per_second(&server, "rising", ("1", "2", "3"));
    assert!(rising[0] <= 21 && rising[1] >= 2 * rising[0], "{rising:?}");
    // ghz's falling schedule (a negative step): three in flight for a second, then one (and
    // the two calls the stopped slots had in flight complete in the second second).
    let falling = completed_per_second(&server, "falling", ("3", "-2", "1"));
    assert!(
        falling[1] <= 25 && falling[0] >= 2 * falling[1],
        "{falling:?}"
    );
}

#[test]
fn ghz_quick_start_line_runs_with_the_target_last_and_templates_are_flagged() {
    let server = Greeter::start(&[]);
    let out = scratch("ghz-quick-start").join("run");
    let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/python/greeter.proto");
    // ghz's README form: flags, then the one server as the last argument (the dotted method).
    let run = lblab(&[
        "loadgen",
        "--insecure",
        "--proto",
        arg(&proto),
        "--call",
        "lblab.interop.v1.Greeter.SayHello",
        "-d",
        r#"{"name":"Joe {{.RequestNumber}}"}"#,
        "-n",
        "20",
        "-r",
        "200",
        "--policy",
        "round_robin",
        "--no-realtime",
        "--out",
        arg(&out),
        &server.addr,
    ]);
    let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("{{.RequestNumber}}, which ghz expands as a call template"),
        "{stderr}"
    );
    let s = summary(&out);
    let row = &s["rows"][0];
    assert_eq!(row["requests"], 20, "{s}");
    assert_eq!(row["ok"], 20, "{s}");
}

#[test]
fn weighted_round_robin_without_load_reports_is_an_incident() {
    // grpcio's greeter sends no ORCA report: weighted_round_robin then runs as round_robin.
    let server = Greeter::start(&[]);
    let out = scratch("ghz-wrr").join("run");
    let run = common::loadgen(
        &server.addr,
        &out,
        &[&[
            "--call",
            SAY_HELLO,
            "--policy",
            "weighted_round_robin",
            "-n",
            "30",
            "-r",
            "100",
        ]],
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(
        text(&run.stdout).contains("no_load_reports"),
        "{}",
        text(&run.stdout)
    );
    let s = summary(&out);
    let kinds: Vec<&str> = s["incidents"]
        .as_array()
        .expect("incidents")
        .iter()
        .filter_map(|i| i["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"no_load_reports"), "{s}");
}
