//! `lblab deploy k8s` writes manifests that Kubernetes' own schemas accept: every object is
//! checked by `kubernetes-validate` (PyPI, pinned in `interop/python/requirements.txt`, installed
//! by `scripts/interop-env.sh`; it bundles each Kubernetes release's schemas, so it runs
//! offline), in strict mode (an unknown field is an error). The validator must also refuse a
//! broken copy of them, so this test cannot pass with a validator that accepts anything.

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{arg, assert_says, fails, interop_python, scratch, succeeds, text};
use lblab_model::testing::{exponential, ScenarioBuilder};

/// The Kubernetes releases validated against: the oldest whose schemas the validator bundles
/// that this test cares about (Indexed Jobs are GA since 1.24) and the validator's newest.
const VERSIONS: [&str; 2] = ["1.30.0", "1.37.0"];

/// The files of a deployment that are Kubernetes objects: all but `kustomization.yaml`, which
/// is kustomize's own file (no API server serves its kind, so there is no schema for it).
fn objects(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml")
                && p.file_name().is_some_and(|n| n != "kustomization.yaml")
        })
        .collect();
    v.sort();
    v
}

/// Runs the validator on `files` against `version`: (success, what it printed).
fn validate(files: &[PathBuf], version: &str) -> (bool, String) {
    let validator = interop_python()
        .parent()
        .expect("the virtualenv's bin folder")
        .join("kubernetes-validate");
    let out = Command::new(&validator)
        .args(["--strict", "-k", version])
        .args(files)
        .output()
        .unwrap_or_else(|e| panic!("runs {}: {e}", validator.display()));
    (out.status.success(), text(&out.stdout) + &text(&out.stderr))
}

/// Reads the manifests (PyYAML, which the validator brings) and runs `sh -n` on every
/// container's `sh -c` script.
const SHELL_CHECK: &str = r#"
import subprocess, sys, yaml
n = 0
for f in sys.argv[1:]:
    for doc in yaml.safe_load_all(open(f)):
        spec = (doc or {}).get("spec", {})
        for c in spec.get("template", {}).get("spec", {}).get("containers", []):
            cmd = c.get("command", [])
            if cmd[:2] == ["/bin/sh", "-c"]:
                r = subprocess.run(["sh", "-n", "-c", cmd[2]], capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"{f}: {c['name']}: {r.stderr}")
                n += 1
print(f"{n} scripts parse")
"#;

#[test]
fn manifests_validate_against_the_kubernetes_schemas() {
    let dir = scratch("deploy-k8s");
    let closed = dir.join("closed.toml");
    let toml = ScenarioBuilder::new("closed")
        .clients(3)
        .closed(4)
        .duration("10s")
        .group("main", 2, &exponential("2ms"), &[])
        .toml();
    std::fs::write(&closed, toml).unwrap();
    // An open loop that needs two shards, and a closed loop.
    for (scenario, shards) in [("one-slow", "2"), (arg(&closed), "3")] {
        let out = dir.join(Path::new(scenario).file_stem().unwrap());
        let printed = succeeds(&[
            "deploy",
            "k8s",
            scenario,
            "--image",
            "registry.example/lblab:test",
            "--shards",
            shards,
            "--start-at",
            &(std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
                + 300)
                .to_string(),
            "--out",
            arg(&out),
        ]);
        assert_says(
            &text(&printed.stdout),
            &[&format!("{shards} load-generator shards")],
        );
        let files = objects(&out);
        let names: Vec<_> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "collect.yaml",
                "fleet.yaml",
                "loadgen.yaml",
                "scenario.yaml",
                "start.yaml"
            ]
        );
        assert!(out.join("kustomization.yaml").is_file());
        // The kustomize base builds, where kubectl is installed (offline: `kubectl kustomize`
        // only reads the folder).
        match Command::new("kubectl").arg("kustomize").arg(&out).output() {
            Ok(k) => {
                assert!(k.status.success(), "kubectl kustomize: {}", text(&k.stderr));
                let kinds: Vec<String> = text(&k.stdout)
                    .lines()
                    .filter_map(|l| l.strip_prefix("kind: "))
                    .map(String::from)
                    .collect();
                assert_eq!(
                    kinds,
                    [
                        "ConfigMap",
                        "Service",
                        "Service",
                        "PersistentVolumeClaim",
                        "Job",
                        "Job",
                        "Job",
                        "Job"
                    ]
                );
            }
            Err(e) => eprintln!("kustomization not built: no kubectl ({e})"),
        }
        for version in VERSIONS {
            let (ok, said) = validate(&files, version);
            assert!(ok, "{scenario} against Kubernetes {version}:\n{said}");
            // Every object was checked: ConfigMap, Service, the fleet's Job, PVC, the load
            // generators' Job, the collector's Job, the start barrier's Service and Job.
            assert_eq!(said.matches("passed").count(), 8, "{said}");
        }
        // The containers' shell scripts parse (with `sh -n`, as the image's /bin/sh runs them).
        let scripts = Command::new(interop_python())
            .arg("-c")
            .arg(SHELL_CHECK)
            .args(&files)
            .output()
            .unwrap();
        assert!(
            scripts.status.success(),
            "{}{}",
            text(&scripts.stdout),
            text(&scripts.stderr)
        );
        assert_eq!(text(&scripts.stdout).trim(), "3 scripts parse");
        let fleet = std::fs::read_to_string(out.join("fleet.yaml")).unwrap();
        let job = std::fs::read_to_string(out.join("loadgen.yaml")).unwrap();
        assert_says(
            &fleet,
            &[
                "kind: \"Job\"",
                "subdomain:",
                "clusterIP: \"None\"",
                "--index",
            ],
        );
        assert_says(
            &job,
            &[
                "completionMode: \"Indexed\"",
                "JOB_COMPLETION_INDEX",
                "--start-at",
                "dns:///",
                "metadata.labels['job-name']",
                "lblab barrier join \"$starter\" --id \"loadgen-$i\"",
            ],
        );
        assert_says(
            &std::fs::read_to_string(out.join("start.yaml")).unwrap(),
            &["- \"barrier\"\n", "- \"serve\"\n", "- \"$(START_AT)\"\n"],
        );
    }

    // Without the start barrier, and with one load generator per node: the same schemas.
    let plain = dir.join("plain");
    succeeds(&[
        "deploy",
        "k8s",
        "one-slow",
        "--image",
        "registry.example/lblab:test",
        "--shards",
        "2",
        "--no-barrier",
        "--one-loadgen-per-node",
        "--out",
        arg(&plain),
    ]);
    let files = objects(&plain);
    assert_eq!(files.len(), 4, "{files:?}");
    for version in VERSIONS {
        let (ok, said) = validate(&files, version);
        assert!(ok, "--no-barrier against Kubernetes {version}:\n{said}");
        assert_eq!(said.matches("passed").count(), 6, "{said}");
    }
    let job = std::fs::read_to_string(plain.join("loadgen.yaml")).unwrap();
    assert!(!job.contains("barrier"), "{job}");
    assert_says(&job, &["requiredDuringSchedulingIgnoredDuringExecution"]);

    // The same validator refuses broken copies: an unknown field, and a wrong type.
    let good = dir.join("one-slow");
    let fleet = std::fs::read_to_string(good.join("fleet.yaml")).unwrap();
    for (what, from, to) in [
        ("an unknown field", "completions:", "completionz:"),
        ("a wrong type", "completions: 20", "completions: \"twenty\""),
    ] {
        assert!(fleet.contains(from), "{from} in fleet.yaml");
        let broken = dir.join(format!("broken-{}.yaml", what.replace(' ', "-")));
        std::fs::write(&broken, fleet.replacen(from, to, 1)).unwrap();
        let (ok, said) = validate(&[broken], VERSIONS[1]);
        assert!(!ok, "the validator accepted {what}:\n{said}");
        assert_says(&said, &["completion"]);
    }
}

#[test]
fn deploy_refuses_what_cannot_run() {
    let dir = scratch("deploy-k8s-refused");
    let out = dir.join("x");
    // `lblab deploy k8s one-slow --image i:1 <extra> --out <dir>`, which must fail.
    let deploy = |extra: &[&str]| {
        let mut args = vec!["deploy", "k8s", "one-slow", "--image", "i:1"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", arg(&out)]);
        fails(&args)
    };
    // More shards than clients (one-slow has four clients).
    assert_says(
        &deploy(&["--shards", "5"]),
        &["5 load-generator shards for 4 clients"],
    );
    assert_says(
        &deploy(&["--name", "Not_A_Label"]),
        &["--name", "RFC 1035 label"],
    );
    // A pod ordinal the scenario has no backend for.
    assert_says(
        &fails(&["backend", "one-slow", "--index", "20"]),
        &["--index 20", "20 backends", "0 to 19"],
    );
    // A Service's name must start with a letter: the cluster would refuse `1abc-fleet`.
    assert_says(
        &deploy(&["--name", "1abc"]),
        &["--name \"1abc\"", "starting with a letter"],
    );
    assert_says(
        &deploy(&["--start-at", "1700"]),
        &["--start-at 1700", "within a day"],
    );
    // One load generator per node cannot be had on a volume of one node.
    assert_says(
        &deploy(&[
            "--one-loadgen-per-node",
            "--access-mode",
            "once",
            "--shards",
            "2",
        ]),
        &[
            "--one-loadgen-per-node with a ReadWriteOnce results volume (--access-mode once)",
            "2 load-generator shards",
        ],
    );
}

#[test]
fn a_start_too_close_is_warned_of() {
    let dir = scratch("deploy-k8s-soon");
    let soon = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 10)
        .to_string();
    let out = dir.join("x");
    let deploy = |extra: &[&str]| {
        let mut args = vec!["deploy", "k8s", "one-slow", "--image", "i:1", "--start-at"];
        args.push(&soon);
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", arg(&out)]);
        text(&succeeds(&args).stderr)
    };
    // With the start barrier the slots start later; without it a late pod skips its slot.
    assert_says(
        &deploy(&[]),
        &[
            "warning: the first slot starts in",
            "at the earliest",
            "start later (the start barrier releases every pod 30 s after the last checks in)",
            "--start-at at least 120 s ahead",
        ],
    );
    assert_says(
        &deploy(&["--no-barrier"]),
        &[
            "warning: the first slot starts in",
            "skip",
            "--start-at at least 120 s ahead",
        ],
    );
}

/// Every canonical scenario's manifests, and those of a scenario whose names look like flags,
/// quotes and shell syntax, pass the strict schemas, and their scripts parse.
#[test]
fn every_canonical_scenario_and_hostile_names_validate() {
    let dir = scratch("deploy-k8s-all");
    let hostile = dir.join("hostile.toml");
    let toml = ScenarioBuilder::new("hostile")
        .clients(2)
        .rate(200.0)
        .duration("10s")
        .group("-main", 2, &exponential("2ms"), &[])
        .group("--x.y_z", 1, &exponential("2ms"), &[])
        .lb("-rr", "round_robin")
        .lb("a b; rm -rf /", "round_robin")
        .toml();
    std::fs::write(&hostile, toml).unwrap();
    let mut scenarios: Vec<String> = std::fs::read_dir("scenarios")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 18, "{scenarios:?}");
    scenarios.push(arg(&hostile).to_string());
    let mut files = Vec::new();
    for (k, scenario) in scenarios.iter().enumerate() {
        let out = dir.join(format!("s{k}"));
        succeeds(&[
            "deploy",
            "k8s",
            scenario,
            "--image",
            "registry.example/lblab:test",
            "--out",
            arg(&out),
        ]);
        files.extend(objects(&out));
    }
    for version in VERSIONS {
        let (ok, said) = validate(&files, version);
        assert!(ok, "against Kubernetes {version}:\n{said}");
        assert_eq!(
            said.matches("passed").count(),
            8 * scenarios.len(),
            "{said}"
        );
    }
    let scripts = Command::new(interop_python())
        .arg("-c")
        .arg(SHELL_CHECK)
        .args(&files)
        .output()
        .unwrap();
    assert!(scripts.status.success(), "{}", text(&scripts.stderr));
    assert_eq!(
        text(&scripts.stdout).trim(),
        format!("{} scripts parse", 3 * scenarios.len())
    );
    // The hostile labels reach the pods quoted, as data.
    let job = std::fs::read_to_string(
        dir.join(format!("s{}", scenarios.len() - 1))
            .join("loadgen.yaml"),
    )
    .unwrap();
    assert_says(
        &job,
        &[
            "policy='-rr'",
            "policy='a b; rm -rf /'",
            "--policy=\"$policy\"",
        ],
    );
}

/// `--sweep`: a design search's manifests pass the strict schemas, its scripts parse, its pods
/// run `lblab sweep … --shard i/N`, and sweep arguments `lblab sweep` would refuse are refused.
#[test]
fn a_sweep_validates_and_bad_sweep_arguments_are_refused() {
    let dir = scratch("deploy-k8s-sweep");
    let out = dir.join("sweep");
    let printed = succeeds(&[
        "deploy",
        "k8s",
        "one-slow",
        "--image",
        "registry.example/lblab:test",
        "--shards",
        "3",
        "--out",
        arg(&out),
        "--sweep",
        "--vary",
        "workload.rate=500,1000,2000",
        "--seeds",
        "2",
        "--policy",
        "round_robin",
    ]);
    assert_says(
        &text(&printed.stdout),
        &["a sweep of 3 points, 6 simulations, in 3 shards"],
    );
    let files = objects(&out);
    for version in VERSIONS {
        let (ok, said) = validate(&files, version);
        assert!(ok, "the sweep against Kubernetes {version}:\n{said}");
        // ConfigMap, PVC, the shards' Job, the collector's Job.
        assert_eq!(said.matches("passed").count(), 4, "{said}");
    }
    let scripts = Command::new(interop_python())
        .arg("-c")
        .arg(SHELL_CHECK)
        .args(&files)
        .output()
        .unwrap();
    assert!(scripts.status.success(), "{}", text(&scripts.stderr));
    assert_eq!(text(&scripts.stdout).trim(), "2 scripts parse");
    assert_says(
        &std::fs::read_to_string(out.join("sweep.yaml")).unwrap(),
        &[
            "completionMode: \"Indexed\"",
            "completions: 3",
            "'--vary' 'workload.rate=500,1000,2000' '--seeds' '2' '--policy' 'round_robin' \
             '--jobs' '1' --shard \"$i/3\"",
        ],
    );
    assert_says(
        &std::fs::read_to_string(out.join("collect.yaml")).unwrap(),
        &["lblab sweep --merge", "kubectl cp"],
    );
    let deploy = |extra: &[&str]| {
        let mut args = vec!["deploy", "k8s", "one-slow", "--image", "i:1", "--out"];
        args.push(arg(&out));
        args.extend_from_slice(extra);
        fails(&args)
    };
    let vary = ["--vary", "workload.rate=500,1000"];
    for (extra, says) in [
        (&["--shards", "3"][..], "3 sweep shards for 2 points"),
        (&["--shards", "2", "--shard", "0/2"][..], "--shard"),
        (
            &["--shards", "2", "--bogus"][..],
            "unexpected argument '--bogus'",
        ),
        (&["--shards", "2", "--policy", "nope"][..], "nope"),
    ] {
        let mut args = extra.to_vec();
        let at = args.iter().position(|a| *a == "--shards").unwrap() + 2;
        args.insert(at, "--sweep");
        args.splice(at + 1..at + 1, vary);
        assert_says(&deploy(&args), &[says]);
    }
    assert_says(
        &deploy(&["--shards", "2", "--sweep", "--seeds", "2"]),
        &["--vary"],
    );
    assert_says(
        &deploy(&["--sweep", "--vary", "workload.rate=1,2"]),
        &["--shards"],
    );
}

/// `lblab barrier serve` and `lblab barrier join`, as the pods run them: two pods checking in on
/// loopback get one start on stdout, the starter prints it too; a pod it does not wait for, and
/// one after the release, are told so and fail.
#[test]
fn the_barrier_commands_release_the_pods_with_one_start() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let bin = env!("CARGO_BIN_EXE_lblab");
    let starter = Command::new(bin)
        .args(["barrier", "serve", "--listen", &addr, "--expect", "fleet=1"])
        .args([
            "--expect",
            "loadgen=1",
            "--start-at",
            &now,
            "--margin",
            "1s",
        ])
        .args(["--wait", "60s", "--linger", "3s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pod = |id: &str| {
        Command::new(bin)
            .args(["barrier", "join", &addr, "--id", id, "--start-at", &now])
            .args(["--wait", "60s"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let stranger = pod("collect-0").wait_with_output().unwrap();
    assert_eq!(stranger.status.code(), Some(2));
    assert_says(
        &text(&stranger.stderr),
        &["does not wait for collect-0 (it waits for fleet=1, loadgen=1)"],
    );
    let pods = [pod("fleet-0"), pod("loadgen-0")];
    let starts: Vec<String> = pods
        .into_iter()
        .map(|p| {
            let out = p.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", text(&out.stderr));
            assert_says(
                &text(&out.stderr),
                &["released; the slots start at Unix time"],
            );
            text(&out.stdout).trim().to_string()
        })
        .collect();
    assert_eq!(starts[0], starts[1]);
    assert!(starts[0].parse::<u64>().unwrap() > now.parse::<u64>().unwrap());
    let late = pod("fleet-0").wait_with_output().unwrap();
    assert_eq!(late.status.code(), Some(2));
    assert_says(
        &text(&late.stderr),
        &["fleet-0 checked in after the start barrier had released"],
    );
    let served = starter.wait_with_output().unwrap();
    assert!(served.status.success(), "{}", text(&served.stderr));
    assert_eq!(text(&served.stdout).trim(), starts[0]);
    assert_says(
        &text(&served.stderr),
        &[
            "waiting for 2 pods (fleet=1, loadgen=1)",
            "released: all 2 pods checked in",
        ],
    );
}
