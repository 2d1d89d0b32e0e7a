//! grpc-js (Node's gRPC, nobody here wrote it) against `lblab backend`: the Node client of
//! `interop/node` with grpc-js's own `round_robin` and with the `peak_ewma_experimental` port, on a
//! two-backend fleet whose `slow/0` is ten times slower (`interop/node/smoke.toml`), ~2 s each.
//! The pinned npm packages are installed by `scripts/interop-node.sh --install` (`npm ci`); without
//! Node or npm this test fails and says so, it does not skip. Loopback only; the fleet it starts
//! is stopped when the test ends (and stops by itself after 60 s in any case). Another test runs
//! `node --test interop/node/test/`: the port's unit tests and its replay of the conformance
//! vectors (`conformance/vectors/peak_ewma_experimental.json`, as lblab's own
//! `policy/tests/policies/vectors.rs` replays them), and fails if any fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{arg, scratch, text};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `npm ci` of interop/node's lock file, through the script, once for all the tests of this file
/// (they run in parallel), into this test build's scratch space; returns the `NODE_PATH` that
/// finds the packages, or panics with what went wrong.
fn install() -> &'static Path {
    static DONE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let done = DONE.get_or_init(|| {
        let out = Command::new("bash")
            .arg(root().join("scripts/interop-node.sh"))
            .arg("--install")
            .env(
                "LBLAB_NODE_PREFIX",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("npm-packages"),
            )
            // npm's cache and logs (~/.npm by default) into the test build's scratch space too.
            .env(
                "npm_config_cache",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("npm-cache"),
            )
            .env("npm_config_update_notifier", "false")
            .output()
            .map_err(|e| format!("cannot run bash scripts/interop-node.sh --install: {e}"))?;
        if out.status.success() {
            let stdout = text(&out.stdout);
            let path = stdout.lines().last().unwrap_or_default().trim();
            Ok(PathBuf::from(path))
        } else {
            Err(format!(
                "the grpc-js interop test needs Node 20 and npm (it runs `npm ci` of \
                 interop/node's lock file); scripts/interop-node.sh --install failed:\n{}",
                text(&out.stderr)
            ))
        }
    });
    match done {
        Ok(path) => path,
        Err(e) => panic!("{e}"),
    }
}

/// `node`, finding the installed packages.
fn node() -> Command {
    let mut cmd = Command::new("node");
    cmd.env("NODE_PATH", install());
    cmd
}

/// The port's unit tests and its replay of the conformance vectors pass under `node --test`.
#[test]
fn the_grpc_js_port_passes_its_unit_tests_and_replays_the_conformance_vectors() {
    let run = node()
        .arg("--test")
        .arg("interop/node/test/")
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run node (Node 20 is needed): {e}"));
    let stdout = text(&run.stdout);
    assert!(
        run.status.success(),
        "node --test interop/node/test/ failed:\n{stdout}\n{}",
        text(&run.stderr)
    );
    // The replay ran (not only the unit tests), and nothing failed.
    for want in [
        "conformance vectors: config cases",
        "conformance vectors: sequences",
        "# fail 0",
    ] {
        assert!(
            stdout.contains(want),
            "no `{want}` in the output of node --test:\n{stdout}"
        );
    }
}

/// Runs the grpc-js client with `policy` for 2 s and returns its summary.json.
fn grpc_js(targets: &str, policy: &str, out: &Path) -> serde_json::Value {
    let run = node()
        .arg(root().join("interop/node/client.js"))
        .args(["--targets", targets, "--policy", policy])
        .args(["--rate", "100", "--duration", "2", "--warmup", "0.5"])
        .args(["--deadline", "1", "--slow", "slow/", "--out", arg(out)])
        .output()
        .unwrap_or_else(|e| panic!("cannot run node (Node 20 is needed): {e}"));
    assert!(
        run.status.success(),
        "node client.js --policy {policy} failed:\n{}\n{}",
        text(&run.stdout),
        text(&run.stderr)
    );
    let s = std::fs::read_to_string(out.join("summary.json")).expect("summary.json");
    serde_json::from_str(&s).expect("summary.json is JSON")
}

#[test]
fn grpc_js_round_robin_splits_evenly_and_the_peak_ewma_port_avoids_the_slow_backend() {
    let backend = common::Backend::start(&root().join("interop/node/smoke.toml"));
    let targets = backend.targets.clone();
    let dir = scratch("interop-node");

    let rr = grpc_js(&targets, "round_robin", &dir.join("round_robin"));
    // defaultRtt below both backends' latency, so that each one's first answer is a peak and a
    // 2 s run shows the policy's choice rather than its learning (with the default 30 ms, above
    // both, the estimates converge with time constant decayTime, 10 s).
    let pe = grpc_js(
        &targets,
        r#"{"peak_ewma_experimental":{"defaultRtt":"0.001s"}}"#,
        &dir.join("peak_ewma"),
    );
    for s in [&rr, &pe] {
        let n = |k: &str| s[k].as_u64().unwrap();
        assert!(n("requests") >= 120, "too few calls: {s}");
        assert_eq!(n("ok"), n("requests"), "every call answered OK: {s}");
    }
    // round_robin uses both backends; the port may learn the slow one from its warm-up calls and
    // send it none of the measured ones, so only the fast one must appear there.
    assert_eq!(rr["backends"].as_array().unwrap().len(), 2, "{rr}");
    let backends: Vec<&str> = pe["backends"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["backend"].as_str())
        .collect();
    assert!(backends.contains(&"fast/0"), "{pe}");
    let share = |s: &serde_json::Value| s["slow_share"].as_f64().unwrap();
    assert!(
        (0.4..=0.6).contains(&share(&rr)),
        "grpc-js round_robin should send about half to slow/0: {rr}"
    );
    // "Clearly lower" with room for a loaded CI machine, where the client's own delays enter
    // every RTT sample.
    assert!(
        share(&pe) < 0.35,
        "the peak_ewma port should send clearly less than half to slow/0: {pe}"
    );
}
