//! grpc-go (Go's gRPC, nobody here wrote it; Debian's `golang-google-grpc-dev`, 1.33) against
//! `lblab backend`: the client of `interop/go` with grpc-go's own `round_robin` and with the
//! `peak_ewma_experimental` port, on a two-backend fleet whose `slow/0` is ten times slower
//! (`interop/node/smoke.toml`), ~2.5 s each. The toolchain is installed by
//! `scripts/interop-go.sh --install` (apt-get, Debian's registry only, when `go` or grpc-go's
//! sources are missing) and everything is built in GOPATH mode under this test build's scratch
//! space; without the toolchain (and no apt-get to install it) this test fails and says so, it
//! does not skip. Loopback only; the fleet it starts is stopped when the test ends (and stops by
//! itself after 60 s in any case). Another test runs `go test` of `interop/go/peakewma`: the
//! port's unit tests and its replay of the conformance vectors
//! (`conformance/vectors/peak_ewma_experimental.json`, read at test time), and fails if any fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{arg, scratch, text};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `scripts/interop-go.sh` with its build folder in this test build's scratch space.
fn script() -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("scripts/interop-go.sh")).env(
        "LBLAB_GO_PREFIX",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-go"),
    );
    cmd
}

/// Installs (if needed) and builds interop/go through the script, once for all the tests of this
/// file; returns the client binary, or panics with what went wrong.
fn install() -> &'static Path {
    static DONE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let done = DONE.get_or_init(|| {
        let out = script()
            .arg("--install")
            .output()
            .map_err(|e| format!("cannot run bash scripts/interop-go.sh --install: {e}"))?;
        if out.status.success() {
            let stdout = text(&out.stdout);
            Ok(PathBuf::from(
                stdout.lines().last().unwrap_or_default().trim(),
            ))
        } else {
            Err(format!(
                "the grpc-go interop test needs Debian's golang-go and golang-google-grpc-dev \
                 (grpc-go 1.33); scripts/interop-go.sh --install failed:\n{}",
                text(&out.stderr)
            ))
        }
    });
    match done {
        Ok(path) => path,
        Err(e) => panic!("{e}"),
    }
}

/// The port's unit tests and its replay of the conformance vectors pass under `go test`.
#[test]
fn the_grpc_go_port_passes_its_unit_tests_and_replays_the_conformance_vectors() {
    install();
    let run = script()
        .arg("--test")
        .output()
        .expect("runs scripts/interop-go.sh --test");
    let stdout = text(&run.stdout);
    assert!(
        run.status.success(),
        "go test of interop/go/peakewma failed:\n{stdout}\n{}",
        text(&run.stderr)
    );
    // The replay ran (not only the unit tests), and nothing failed.
    for want in [
        "--- PASS: TestVectorConfigCases",
        "--- PASS: TestVectorSequences",
        "--- PASS: TestPickerKeepsLoadsAcrossRebuilds",
        "--- PASS: TestInsideGrpcGo",
        "vectors: sequences ",
        "ok  \tlblab/interop/go/peakewma",
    ] {
        assert!(
            stdout.contains(want),
            "no `{want}` in the output of go test:\n{stdout}"
        );
    }
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

/// Runs the grpc-go client with `policy` for 2 s and returns its summary.json.
fn grpc_go(targets: &str, policy: &str, out: &Path) -> serde_json::Value {
    let run = Command::new(install())
        .args(["--targets", targets, "--policy", policy])
        .args(["--rate", "100", "--duration", "2", "--warmup", "0.5"])
        .args(["--deadline", "1", "--slow", "slow/", "--out", arg(out)])
        .output()
        .expect("runs the grpc-go client");
    assert!(
        run.status.success(),
        "client --policy {policy} failed:\n{}\n{}",
        text(&run.stdout),
        text(&run.stderr)
    );
    let s = std::fs::read_to_string(out.join("summary.json")).expect("summary.json");
    serde_json::from_str(&s).expect("summary.json is JSON")
}

#[test]
fn grpc_go_round_robin_splits_evenly_and_the_peak_ewma_port_avoids_the_slow_backend() {
    // An invalid config is refused, naming the field, before any call (grpc-go would reject the
    // whole service config at Dial).
    let bad = Command::new(install())
        .args(["--targets", "127.0.0.1:1", "--policy"])
        .arg(r#"{"peak_ewma_experimental":{"choiceCount":1}}"#)
        .output()
        .expect("runs the grpc-go client");
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    assert!(
        text(&bad.stderr).contains("peak_ewma_experimental.choiceCount"),
        "{}",
        text(&bad.stderr)
    );

    let backend = common::Backend::start(&root().join("interop/node/smoke.toml"));
    let targets = backend.targets.clone();
    // Not "interop-go": that is the build folder the script was given.
    let dir = scratch("interop-go-smoke");
    let rr = grpc_go(&targets, "round_robin", &dir.join("round_robin"));
    let pe = grpc_go(&targets, "peak_ewma_experimental", &dir.join("peak_ewma"));
    for s in [&rr, &pe] {
        let n = |k: &str| s[k].as_u64().unwrap();
        assert!(n("requests") >= 120, "too few calls: {s}");
        assert_eq!(n("ok"), n("requests"), "every call answered OK: {s}");
        assert_eq!(s["grpc_go_version"], "1.33.3", "{s}");
    }
    assert_eq!(rr["backends"].as_array().unwrap().len(), 2, "{rr}");
    let share = |s: &serde_json::Value| s["slow_share"].as_f64().unwrap();
    assert!(
        (0.4..=0.6).contains(&share(&rr)),
        "grpc-go round_robin should send about half to slow/0: {rr}"
    );
    // "Clearly lower" with room for a loaded CI machine, where the client's own delays enter
    // every RTT sample.
    assert!(
        share(&pe) < 0.35,
        "the peak_ewma port should send clearly less than half to slow/0: {pe}"
    );
}
