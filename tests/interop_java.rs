//! grpc-java (Java's gRPC, nobody here wrote it; Debian's `libgrpc-java`, 1.41.3, Netty) against
//! `lblab backend`: the client of `interop/java` with grpc-java's own `round_robin` and with the
//! `peak_ewma_experimental` port, on a two-backend fleet whose `slow/0` is forty times slower
//! (`interop/java/smoke.toml`), ~2.5 s each. The jars are installed by
//! `scripts/interop-java.sh --install` (apt-get, Debian's registry only, when a jar or `javac` is
//! missing) and everything is built with `javac` under this test build's scratch space; without
//! the toolchain (and no apt-get to install it) this test fails and says so, it does not skip.
//! Loopback only; the fleet it starts is stopped when the test ends (and stops by itself after
//! 60 s in any case). Another test runs the port's tests (`lblab.peakewma.Tests`, a plain main
//! that exits non-zero on a failure): unit tests, the port inside grpc-java, and its replay of
//! the conformance vectors (`conformance/vectors/peak_ewma_experimental.json`, read at test time).
//! The two run one after the other: the port's tests include a two-thread microbenchmark that
//! would load the machine under the smoke run. The smoke's clients run with
//! `-XX:+UseSerialGC -XX:TieredStopAtLevel=1` (`LBLAB_JAVA_OPTS`): on a 2-core machine the
//! default JVM's JIT and GC threads stall the client for tens of milliseconds now and then, those
//! stalls enter the RTT samples of `fast/0` as peaks that decay over `decayTime` (10 s), and with
//! the default JVM the port's share to `slow/0` ranged from 0.5 % to 40 % over 2 s runs on the
//! ten-times-slower fleet of the other smoke tests (`interop/java/README.md`); forty times slower
//! (about 80 ms) is above those stalls.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use common::{arg, scratch, text};

/// Held by each test of this file: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `scripts/interop-java.sh` with its build folder in this test build's scratch space.
fn script() -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("scripts/interop-java.sh")).env(
        "LBLAB_JAVA_PREFIX",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-java-build"),
    );
    cmd
}

/// Installs (if needed) and builds interop/java through the script, once for all the tests of
/// this file; returns the client launcher, or panics with what went wrong.
fn install() -> &'static Path {
    static DONE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let done = DONE.get_or_init(|| {
        let out = script()
            .arg("--install")
            .output()
            .map_err(|e| format!("cannot run bash scripts/interop-java.sh --install: {e}"))?;
        if out.status.success() {
            let stdout = text(&out.stdout);
            Ok(PathBuf::from(
                stdout.lines().last().unwrap_or_default().trim(),
            ))
        } else {
            Err(format!(
                "the grpc-java interop test needs Debian's libgrpc-java (grpc-java 1.41), \
                 libnetty-java, libperfmark-java, libgoogle-gson-java, libguava-java and a JDK; \
                 scripts/interop-java.sh --install failed:\n{}",
                text(&out.stderr)
            ))
        }
    });
    match done {
        Ok(path) => path,
        Err(e) => panic!("{e}"),
    }
}

/// The port's unit tests, its run inside grpc-java and its replay of the conformance vectors pass.
#[test]
fn the_grpc_java_port_passes_its_unit_tests_and_replays_the_conformance_vectors() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    install();
    let run = script()
        .arg("--test")
        .output()
        .expect("runs scripts/interop-java.sh --test");
    let stdout = text(&run.stdout);
    assert!(
        run.status.success(),
        "the tests of interop/java failed:\n{stdout}\n{}",
        text(&run.stderr)
    );
    // The replay ran (not only the unit tests), grpc-java showed the call kind at pick time, and
    // nothing failed.
    for want in [
        "--- PASS: TestRegisteredThroughServiceLoader",
        "--- PASS: TestVectorConfigCases",
        "--- PASS: TestVectorSequences",
        "--- PASS: TestInsideGrpcJava",
        "vectors: sequences ",
        "unary pick type UNARY, stream pick type SERVER_STREAMING",
        "ok  lblab.peakewma (grpc-java 1.41.3)",
    ] {
        assert!(
            stdout.contains(want),
            "no `{want}` in the output of the tests:\n{stdout}"
        );
    }
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

/// Runs the grpc-java client with `policy` for 2 s and returns its summary.json.
fn grpc_java(targets: &str, policy: &str, out: &Path) -> serde_json::Value {
    let run = Command::new(install())
        .env(
            "LBLAB_JAVA_OPTS",
            "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
        )
        .args(["--targets", targets, "--policy", policy])
        .args(["--rate", "100", "--duration", "2", "--warmup", "0.5"])
        .args(["--deadline", "1", "--slow", "slow/", "--out", arg(out)])
        .output()
        .expect("runs the grpc-java client");
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
fn grpc_java_round_robin_splits_evenly_and_the_peak_ewma_port_avoids_the_slow_backend() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // An invalid config is refused, naming the field, before any call (grpc-java would reject
    // the whole service config when the channel is built).
    let bad = Command::new(install())
        .args(["--targets", "127.0.0.1:1", "--policy"])
        .arg(r#"{"peak_ewma_experimental":{"choiceCount":1}}"#)
        .output()
        .expect("runs the grpc-java client");
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    assert!(
        text(&bad.stderr).contains("peak_ewma_experimental.choiceCount"),
        "{}",
        text(&bad.stderr)
    );

    let backend = common::Backend::start(&root().join("interop/java/smoke.toml"));
    let targets = backend.targets.clone();
    let dir = scratch("interop-java-smoke");
    let rr = grpc_java(&targets, "round_robin", &dir.join("round_robin"));
    let pe = grpc_java(&targets, "peak_ewma_experimental", &dir.join("peak_ewma"));
    for s in [&rr, &pe] {
        let n = |k: &str| s[k].as_u64().unwrap();
        assert!(n("requests") >= 120, "too few calls: {s}");
        assert_eq!(n("ok"), n("requests"), "every call answered OK: {s}");
        assert_eq!(s["grpc_java_version"], "1.41.3", "{s}");
    }
    assert_eq!(rr["backends"].as_array().unwrap().len(), 2, "{rr}");
    let share = |s: &serde_json::Value| s["slow_share"].as_f64().unwrap();
    assert!(
        (0.4..=0.6).contains(&share(&rr)),
        "grpc-java round_robin should send about half to slow/0: {rr}"
    );
    // "Clearly lower" with room for a loaded CI machine, where the client's own stalls enter
    // every RTT sample.
    assert!(
        share(&pe) < 0.35,
        "the peak_ewma port should send clearly less than half to slow/0: {pe}"
    );
}
