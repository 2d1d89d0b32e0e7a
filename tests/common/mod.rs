//! Helpers the end-to-end tests of the `lblab` binary share: running it, scratch folders and
//! scenario files, results files, interrupting it, and checking that nothing is left behind.

#![allow(dead_code)] // each test file uses its own subset

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use lblab_model::testing::{constant, lb_config, ScenarioBuilder};

/// Runs `lblab args` in the repository root and waits for it.
pub fn lblab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lblab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs lblab")
}

/// Runs `lblab loadgen --targets <targets> --no-realtime --out <out>` followed by each of
/// `args` (a test's fixed flags, then a call's own).
pub fn loadgen(targets: &str, out: &Path, args: &[&[&str]]) -> Output {
    let mut all = vec![
        "loadgen",
        "--targets",
        targets,
        "--no-realtime",
        "--out",
        arg(out),
    ];
    for a in args {
        all.extend_from_slice(a);
    }
    lblab(&all)
}

/// Runs `lblab args`, which must succeed, and returns what it printed.
#[track_caller]
pub fn succeeds(args: &[&str]) -> Output {
    let out = lblab(args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    out
}

/// Runs `lblab args` expecting exit code `code` (never a panic) and returns stderr.
#[track_caller]
pub fn fails_with(code: i32, args: &[&str]) -> String {
    let out = lblab(args);
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?} should fail with {code}:\n{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Runs `lblab args` expecting exit code 2 (bad input) and returns stderr.
#[track_caller]
pub fn fails(args: &[&str]) -> String {
    fails_with(2, args)
}

/// `message` holds every one of `words`.
#[track_caller]
pub fn assert_says(message: &str, words: &[&str]) {
    for word in words {
        assert!(message.contains(word), "{word:?} missing from:\n{message}");
    }
}

/// Starts `lblab args` with stdout and stderr piped.
pub fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lblab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts lblab")
}

/// Lossy UTF-8.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Everything left to read from a child's pipe (`child.stdout.take()`), which must be UTF-8.
pub fn read_all(pipe: Option<impl std::io::Read>) -> String {
    let mut all = String::new();
    pipe.expect("a piped stream")
        .read_to_string(&mut all)
        .expect("reads the pipe");
    all
}

/// `path` as an argument.
pub fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// A fresh empty folder under the target directory.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creates scratch folder");
    dir
}

/// A fresh scratch folder `folder` holding `toml` as `file`: (folder, scenario path).
pub fn scenario_file(folder: &str, file: &str, toml: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(folder);
    let scenario = dir.join(file);
    std::fs::write(&scenario, toml).expect("writes the scenario");
    (dir, scenario)
}

/// `[[policies]]` tables for the policies `labels`, each with its default config: `round_robin`,
/// `peak_ewma`, `least_request` or `oracle`.
pub fn policies(labels: &[&str]) -> String {
    labels
        .iter()
        .map(|&label| {
            format!(
                "[[policies]]\nname = \"{label}\"\nconfig = '{}'\n",
                lb_config(&default_lb(label))
            )
        })
        .collect()
}

/// The gRPC policy of the label `label` with its default config (see [`policies`]).
fn default_lb(label: &str) -> String {
    match label {
        "round_robin" | "oracle" => label.to_string(),
        "peak_ewma" | "least_request" => format!("{label}_experimental"),
        _ => panic!("no default config for policy {label:?}"),
    }
}

/// A log-normal 2 ms service time with an 8 ms p99, as a `[[fleet]]` group writes it.
pub const LOGNORMAL_2MS: &str = r#"{ dist = "lognormal", median = "2ms", p99 = "8ms" }"#;

/// A scenario at a trickle for runs of seconds: seed 7, one client, 200 calls a second, and the
/// policies `labels` (see [`policies`]); the caller adds the fleet and the run's length.
pub fn trickle(name: &str, labels: &[&str]) -> ScenarioBuilder {
    with_policies(
        ScenarioBuilder::new(name).seed(7).clients(1).rate(200.0),
        labels,
    )
}

/// `builder` with the policies `labels` added after any it has, each with its default config
/// (see [`policies`]).
pub fn with_policies(mut builder: ScenarioBuilder, labels: &[&str]) -> ScenarioBuilder {
    for &label in labels {
        builder = builder.lb(label, &default_lb(label));
    }
    builder
}

/// A quick simulation: seed 3, 200 calls a second to two backends (the group `main`) with a
/// constant 2 ms service time, and round_robin unless the caller adds policies; the caller sets
/// the run's length.
pub fn two_backends(name: &str) -> ScenarioBuilder {
    ScenarioBuilder::new(name)
        .seed(3)
        .rate(200.0)
        .group("main", 2, &constant("2ms"), &[])
}

/// A scenario for `lblab backend` or a short `lblab real`: one backend (the group `main`) with a
/// constant service time of `service` (e.g. `"1ms"`), 1 s at `rate` calls a second, and
/// round_robin.
pub fn one_backend(name: &str, rate: f64, service: &str) -> ScenarioBuilder {
    ScenarioBuilder::new(name)
        .rate(rate)
        .duration("1s")
        .group("main", 1, &constant(service), &[])
}

/// `builder` with the fleet of `scenarios/one-slow.toml` in small: `count` backends in the group
/// `main` and one in `slow`, all with `service_time`, and `slow` ten times slower (`faults[0]`, a
/// `slowdown` of factor 10).
pub fn one_slow(builder: ScenarioBuilder, count: u32, service_time: &str) -> ScenarioBuilder {
    builder
        .group("main", count, service_time, &[])
        .group("slow", 1, service_time, &[])
        .fault("slowdown", &["slow"], &["factor = 10"])
}

/// Flags that keep the real harness polite on a shared test machine: no floor run, one attempt,
/// normal scheduling, no pinning.
pub const POLITE: [&str; 6] = [
    "--floor",
    "0s",
    "--attempts",
    "1",
    "--no-realtime",
    "--no-pin",
];

/// Every file in `dir` (not recursive) with its bytes, sorted by name.
pub fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The processes whose parent is `pid`, from /proc.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|stat| {
                    // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
                    let rest = &stat[stat.rfind(')')? + 1..];
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

/// Whether process `pid` exists (and is not a zombie).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

/// Waits for `child` to exit, at most `limit`; kills it and panics if it does not.
pub fn wait_for(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` (`-INT`, `-TERM`, `-KILL`) to `pid`.
pub fn signal(pid: u32, signal: &str) {
    let kill = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("runs kill");
    assert!(kill.success(), "kill {signal} {pid}");
}

/// What [`interrupted`] saw.
pub struct Interrupted {
    /// Exit code.
    pub code: Option<i32>,
    /// From the signal to the exit.
    pub took: Duration,
    /// When the signal was sent.
    pub sent_at: std::time::SystemTime,
    /// Standard error.
    pub stderr: String,
    /// Child processes lblab had just before the signal that were still alive after it exited.
    pub orphans: Vec<u32>,
}

/// Starts `lblab args`, sends `sig` after `after`, and reports how it ended.
pub fn interrupted(args: &[&str], sig: &str, after: Duration) -> Interrupted {
    // One at a time: several runs drawing charts at once on two cores would measure the
    // machine, not lblab.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut child = Command::new(env!("CARGO_BIN_EXE_lblab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts lblab");
    std::thread::sleep(after);
    assert!(
        child.try_wait().unwrap().is_none(),
        "lblab ended before the signal"
    );
    let children = children_of(child.id());
    let sent = Instant::now();
    let sent_at = std::time::SystemTime::now();
    signal(child.id(), sig);
    let status = wait_for(
        &mut child,
        Duration::from_secs(20),
        &format!("lblab {args:?} after {sig}"),
    );
    let took = sent.elapsed();
    Interrupted {
        code: status.code(),
        took,
        sent_at,
        stderr: read_all(child.stderr.take()),
        orphans: children.into_iter().filter(|&p| alive(p)).collect(),
    }
}

/// How long after the signal `file` was written.
#[track_caller]
pub fn written_after(file: &Path, run: &Interrupted) -> Duration {
    let written = std::fs::metadata(file)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    written.duration_since(run.sent_at).unwrap_or_default()
}

/// How soon the results must be on disk after the signal, charts aside: the run stops, cuts
/// calls in flight off after 250 ms and writes its data files (a release build: ~0.1 s).
pub const RESULTS_PROMPT: Duration = Duration::from_secs(2);

/// No temporary (half-written) files in `dir`.
#[track_caller]
pub fn assert_no_temporary_files(dir: &Path) {
    let names: Vec<String> = files(dir).into_iter().map(|(n, _)| n).collect();
    assert!(
        names.iter().all(|n| !n.ends_with(".tmp")),
        "temporary files left in {}: {names:?}",
        dir.display()
    );
}

/// `summary.json` of a results folder.
#[track_caller]
pub fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(
        &std::fs::read(dir.join("summary.json"))
            .unwrap_or_else(|e| panic!("summary.json in {}: {e}", dir.display())),
    )
    .expect("summary.json parses")
}

/// Every row of a summary accounts for each request: `requests = ok + errors + dropped`.
#[track_caller]
pub fn assert_accounted(summary: &serde_json::Value) {
    let rows = summary["rows"].as_array().expect("rows");
    for row in rows {
        let n = |k: &str| row[k].as_u64().unwrap_or_else(|| panic!("{k} in {row}"));
        assert_eq!(n("requests"), n("ok") + n("errors") + n("dropped"), "{row}");
    }
}

/// The results folder holds a partial summary that accounts for every request, and no temporary
/// files.
#[track_caller]
pub fn assert_partial_results(dir: &Path) {
    assert_no_temporary_files(dir);
    let summary = summary(dir);
    assert_eq!(summary["partial"], true, "{summary}");
    assert_accounted(&summary);
}

/// Runs `lblab args`, sends `sig` after `after`, and checks that it stopped as it must: exit
/// code 130 within [`PROMPT`], no child process left, and partial results in `out` that account
/// for every request and hold no temporary file.
#[track_caller]
pub fn stops_and_keeps_partial_results(
    args: &[&str],
    sig: &str,
    after: Duration,
    out: &Path,
) -> Interrupted {
    let run = interrupted(args, sig, after);
    assert_eq!(run.code, Some(130), "{}", run.stderr);
    assert!(run.took < PROMPT, "took {:?} to stop", run.took);
    assert!(run.orphans.is_empty(), "left running: {:?}", run.orphans);
    assert_partial_results(out);
    run
}

/// How soon lblab must exit after the signal. A release build stops in about 0.1-0.2 s (the
/// simulation stops within 4096 events, the real harness cuts calls in flight off after 250 ms;
/// writing the files and charts of a few seconds is quick); the tests run the debug build, whose
/// chart drawing alone takes ~2 s of CPU, on a machine that may be busy with other tests.
pub const PROMPT: Duration = Duration::from_secs(10);

/// A running `lblab backend` for a scenario file: its `--targets` list, stopped (killed) when
/// dropped, and stopping by itself after 60 s in any case. What it prints is drained, since a
/// closed pipe would end it.
pub struct Backend {
    child: Child,
    /// The `host:port,...` list it printed.
    pub targets: String,
}

impl Backend {
    /// Starts `lblab backend scenario` and waits for its targets.
    pub fn start(scenario: &Path) -> Backend {
        Backend::start_on(scenario, None)
    }

    /// [`Backend::start`] listening on `listen` (e.g. `[::1]:0`) instead of the default.
    pub fn start_on(scenario: &Path, listen: Option<&str>) -> Backend {
        let mut args = vec!["backend", arg(scenario), "--for", "60s", "--no-realtime"];
        if let Some(listen) = listen {
            args.extend(["--listen", listen]);
        }
        let mut child = spawn(&args);
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let targets = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("--targets ").map(str::to_string))
            .expect("the backend prints its targets");
        std::thread::spawn(move || lines.for_each(drop));
        let stderr = child.stderr.take();
        std::thread::spawn(move || read_all(stderr));
        Backend { child, targets }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The python of the project's interop virtualenv (grpcio from PyPI), installed by
/// `scripts/interop-env.sh` once per test binary into the test build's scratch space (never into
/// the checkout).
pub fn interop_python() -> &'static Path {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = Command::new("bash")
            .arg(root.join("scripts/interop-env.sh"))
            .env(
                "LBLAB_VENV",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-venv"),
            )
            // pip's cache (~/.cache/pip by default) into the test build's scratch space too.
            .env(
                "PIP_CACHE_DIR",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("pip-cache"),
            )
            .output()
            .expect("runs scripts/interop-env.sh");
        assert!(
            out.status.success(),
            "scripts/interop-env.sh (python3 with venv, and PyPI) failed: {}",
            text(&out.stderr)
        );
        let stdout = text(&out.stdout);
        PathBuf::from(
            stdout
                .lines()
                .last()
                .expect("prints the python path")
                .trim(),
        )
    })
}

/// A running Python greeter server (grpcio, `interop/python/greeter_server.py`, with reflection
/// unless told otherwise); killed on drop.
pub struct Greeter {
    child: Child,
    /// Its `host:port`.
    pub addr: String,
}

impl Greeter {
    /// Starts it on a free loopback port with the server's `extra` flags.
    pub fn start(extra: &[&str]) -> Greeter {
        let python = interop_python();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let gen = python
            .parent()
            .and_then(Path::parent)
            .expect("venv")
            .join("gen");
        let mut child = Command::new(python)
            .arg(root.join("interop/python/greeter_server.py"))
            .args(["--port", "0"])
            .args(extra)
            .env("PYTHONPATH", &gen)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starts the Python server");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("reads the server's first line");
        let addr = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the server said {line:?}"))
            .trim()
            .to_string();
        Greeter { child, addr }
    }
}

impl Drop for Greeter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A CA, a server certificate for localhost and 127.0.0.1 signed by it, and a client one, in a
/// scratch folder: `ca.pem`, `server.pem`/`server.key`, `client.pem`/`client.key`.
pub struct Pki {
    dir: PathBuf,
}

impl Pki {
    /// Makes them in the fresh scratch folder `name`.
    pub fn new(name: &str) -> Pki {
        use rcgen::{
            BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
        };
        let dir = scratch(name);
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name = DistinguishedName::new();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "lblab test CA");
        let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf = |names: Vec<String>, file: &str| {
            let key = KeyPair::generate().expect("key");
            let mut params = CertificateParams::new(names).expect("params");
            // Distinct names: a leaf named like its CA looks self-signed to OpenSSL.
            params.distinguished_name = DistinguishedName::new();
            params
                .distinguished_name
                .push(DnType::CommonName, format!("lblab test {file}"));
            let cert = params.signed_by(&key, &issuer).expect("signs");
            std::fs::write(dir.join(format!("{file}.pem")), cert.pem()).unwrap();
            std::fs::write(dir.join(format!("{file}.key")), key.serialize_pem()).unwrap();
        };
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        leaf(vec!["localhost".into(), "127.0.0.1".into()], "server");
        leaf(vec!["client.lblab.test".into()], "client");
        Pki { dir }
    }

    /// The path of `file` in it.
    pub fn path(&self, file: &str) -> String {
        arg(&self.dir.join(file)).to_string()
    }
}
