//! `scripts/cluster-netns.sh` end to end, in the cluster's shape: a starter, each of four
//! backends and two load-generator shards as separate processes in separate network namespaces,
//! found by the names the script serves and released by the start barrier, merged, and compared
//! with the single-process `lblab real` run of the same scenario (the script exits 0 only when
//! every policy's p99 agrees, here within 50 % or 1 ms, see below, and its share to the faulty
//! backend is the same; here round_robin must agree so, and peak_ewma must avoid the slow
//! backend in both runs), with the incidents of both printed beside the verdicts; and a run
//! interrupted with Ctrl-C (SIGINT) leaves no namespace, /etc/netns entry or process behind.
//! Needs root (network namespaces) and iproute2; without them the test says why on the terminal
//! (not in the output the harness captures) and skips, or fails if `LBLAB_REQUIRE_NETNS` is set,
//! as on a machine where the rehearsal must run.

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{arg, one_slow, scratch, text, wait_for, with_policies};
use lblab_model::testing::{lognormal, ScenarioBuilder};

/// Three backends and one ten times slower, 200 calls/s from two clients; service times long
/// enough that a debug build's own cost per call does not blur which backend is slow.
fn netns_tiny() -> String {
    let run = ScenarioBuilder::new("netns-tiny")
        .seed(3)
        .clients(2)
        .rate(200.0)
        .warmup("1s")
        .duration("4s")
        .deadline("1s");
    // Four workers a backend: the file format's default.
    let fleet = one_slow(run, 3, &lognormal("5ms", "7ms"));
    with_policies(fleet, &["round_robin", "peak_ewma"]).toml()
}

/// Says on the terminal why the test does not run (libtest captures `eprintln!`, not the
/// process's stderr), or fails if `LBLAB_REQUIRE_NETNS` is set.
fn skip(why: &str) {
    assert!(
        std::env::var_os("LBLAB_REQUIRE_NETNS").is_none(),
        "LBLAB_REQUIRE_NETNS is set, but the rehearsal cannot run: {why}"
    );
    let _ = writeln!(
        std::io::stderr(),
        "cluster_netns: SKIPPED, {why} (set LBLAB_REQUIRE_NETNS=1 to fail instead)"
    );
}

/// Why the script cannot run here, if it cannot.
fn cannot_run() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if text(&uid.stdout).trim() != "0" {
        return Some("not root: network namespaces need root".into());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("`ip netns list` fails: {}", text(&o.stderr))),
        Err(e) => Some(format!("no iproute2 `ip`: {e}")),
    }
}

/// The namespaces of the script run whose process id is `pid`.
fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    text(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("lbn{pid}-")))
        .map(String::from)
        .collect()
}

/// The /etc/netns entries of the script run whose process id is `pid`.
fn etc_netns_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/etc/netns")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("lbn{pid}-")))
        .collect()
}

/// Processes whose command line mentions `needle` (the run's own results folder).
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(needle) && common::alive(pid) {
                v.push(pid);
            }
        }
    }
    v
}

fn script(dir: &Path, extra: &[&str]) -> Command {
    let scenario = dir.join("netns-tiny.toml");
    std::fs::write(&scenario, netns_tiny()).unwrap();
    let mut c = Command::new("bash");
    c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster-netns.sh"))
        .arg(&scenario)
        // Its own rate (200 calls/s), not the script's default.
        .args(["--shards", "2", "--rate", "0"])
        .args(extra)
        .env("LBLAB", env!("CARGO_BIN_EXE_lblab"))
        .env("OUT", dir.join("out"))
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

#[test]
fn namespaced_shards_merged_agree_with_one_process_and_ctrl_c_cleans_up() {
    if let Some(why) = cannot_run() {
        skip(&why);
        return;
    }
    let dir = scratch("cluster-netns");
    // The p99s within 50 % (or 1 ms) rather than the rule's 20 %: this is a debug build on a
    // shared machine, whose own cost per call adds tail noise to the one-process run (fleet and
    // load generator in one process) that a release build does not have; the shares to the slow
    // backend must still agree as the script says (within 0.02 or 20 %), and the release build's
    // run with the rule itself is in docs/distributed.md.
    let out = script(
        &dir,
        &[
            "--warmup",
            "1s",
            "--duration",
            "4s",
            "--p99-tolerance",
            "50",
        ],
    )
    .output()
    .expect("runs scripts/cluster-netns.sh");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // Exit 1 is "some policy differs": judged below, policy by policy.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status.code()
    );
    assert!(stderr.contains("nothing routed outside them"), "{stderr}");
    assert!(
        stderr.contains("-fleet resolves to all 4 backends in every shard's namespace"),
        "{stderr}"
    );
    assert!(
        stderr.contains("released: all 6 pods checked in"),
        "{stderr}"
    );
    assert!(stderr.contains("cleaned up"), "{stderr}");
    // Each verdict with the incidents of both runs beside it.
    for policy in ["round_robin", "peak_ewma"] {
        let at = stdout
            .lines()
            .position(|l| l.starts_with(policy))
            .unwrap_or_else(|| panic!("{policy}: {stdout}"));
        let next: Vec<&str> = stdout.lines().skip(at + 1).take(2).collect();
        assert!(next[0].starts_with("    incidents, netns: "), "{stdout}");
        assert!(
            stdout
                .lines()
                .skip(at + 1)
                .any(|l| l.starts_with("    incidents, single: ")),
            "{stdout}"
        );
    }
    // round_robin's figures depend on the harness alone: they must agree by the script's rule.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("round_robin") && l.ends_with("agree")),
        "round_robin: {stdout}"
    );
    // peak_ewma's share to the slow backend in one 4 s debug-build run moves by a few points
    // with the machine (a stall of the one-process run, fleet and client in one debug process,
    // makes the fast backends look slow for a moment; CI has seen 0.8 % against 3.7 %), so here
    // both runs must avoid the slow backend, as round_robin's 25 % does not; the rule itself on
    // a release build is in docs/distributed.md.
    let results = dir.join("out");
    let compare = std::fs::read_to_string(results.join("compare.csv")).expect("compare.csv");
    let row = compare
        .lines()
        .find(|l| l.starts_with("peak_ewma,"))
        .unwrap_or_else(|| panic!("peak_ewma in compare.csv: {compare}"));
    let shares: Vec<f64> = row
        .split(',')
        .skip(4)
        .take(2)
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(
        shares.iter().all(|&s| s < 0.10),
        "peak_ewma to the slow backend {shares:?}: {stdout}"
    );
    for f in [
        "policy-0/merged/summary.json",
        "policy-1/merged/summary.json",
        "single/summary.json",
        "compare.csv",
    ] {
        assert!(results.join(f).is_file(), "{f}");
    }
    // Both shards' calls are in each policy's merged run; each backend was a process of its own,
    // serving its backend alone, called by the shards at its own address.
    for k in 0..2 {
        let dir = results.join(format!("policy-{k}"));
        for b in 0..4 {
            let served = std::fs::read_to_string(dir.join(format!("backend-{b}.out"))).unwrap();
            assert!(
                served.contains(&format!("--targets 198.18.26.{}:50051", 20 + b)),
                "backend {b}: {served}"
            );
        }
        let merged = common::summary(&dir.join("merged"));
        let shard = |i: usize| common::summary(&dir.join(format!("shard-{i}")));
        let requests = |s: &serde_json::Value| s["rows"][0]["requests"].as_u64().unwrap();
        assert_eq!(requests(&merged), requests(&shard(0)) + requests(&shard(1)));
    }
    assert!(processes_mentioning(arg(&dir)).is_empty());
    let left: Vec<_> = std::fs::read_dir("/etc/netns")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("lbn"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // Interrupted once the fleet is up: everything it made goes.
    let dir = scratch("cluster-netns-interrupted");
    let mut child = script(&dir, &["--warmup", "1s", "--duration", "20s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let backend_out = dir.join("out/policy-0/backend-0.out");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&backend_out).is_ok_and(|t| t.contains("--targets")) {
        assert!(Instant::now() < deadline, "the fleet did not start");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the script ended early"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The switch, the starter, two shards and four backends.
    assert_eq!(namespaces_of(pid).len(), 8, "{:?}", namespaces_of(pid));
    assert_eq!(etc_netns_of(pid).len(), 7, "{:?}", etc_netns_of(pid));
    assert!(processes_mentioning(arg(&dir)).len() >= 2);
    // Ctrl-C: SIGINT to the script.
    let killed = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = wait_for(
        &mut child,
        Duration::from_secs(30),
        "cluster-netns.sh after SIGINT",
    );
    let err = common::read_all(child.stderr.take());
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("cleaned up"), "{err}");
    assert!(namespaces_of(pid).is_empty(), "{:?}", namespaces_of(pid));
    assert!(etc_netns_of(pid).is_empty(), "{:?}", etc_netns_of(pid));
    assert!(processes_mentioning(arg(&dir)).is_empty());
}
