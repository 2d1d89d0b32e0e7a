//! The manifests, read back and their pod scripts run under /bin/sh.

use serde_json::json;

use super::*;

pub(crate) fn scenario(clients: u32, rate: f64) -> Scenario {
    Scenario::parse(&format!(
        r#"
        name = "One_slow"
        [workload]
        clients = {clients}
        rate = {rate}
        duration = "10s"
        [[fleet]]
        name = "main"
        count = 3
        service_time = {{ dist = "exponential", mean = "2ms" }}
        [[policies]]
        name = "round_robin"
        config = '{{"loadBalancingConfig":[{{"round_robin":{{}}}}]}}'
        "#
    ))
    .unwrap()
}

/// The options the tests start from: an image, the name `lab`, the default port, the default
/// shards, start 0, `dns:///`, the cluster's default class, ReadWriteMany, a start barrier, load
/// generators that may share a node.
pub(crate) fn options() -> Options {
    Options {
        image: "lblab:test".into(),
        name: "lab".into(),
        port: DEFAULT_PORT,
        shards: None,
        start_at: 0,
        dns: true,
        storage_class: None,
        access_mode: Some(AccessMode::ReadWriteMany),
        barrier: true,
        one_loadgen_per_node: false,
    }
}

#[test]
fn clients_and_rate_split_evenly() {
    let s = scenario(5, 5000.0);
    assert_eq!(default_shards(&s), 3);
    let l = shards(&s, 3).unwrap();
    assert_eq!(
        l.iter().map(|l| l.clients).collect::<Vec<_>>(),
        vec![2, 2, 1]
    );
    assert_eq!(l.iter().map(|l| l.rate).sum::<f64>(), 5000.0);
    assert_eq!(l[2].rate, 1000.0);
    assert_eq!(l[1].seed, 2);
    assert!(shards(&s, 6).is_err());
    assert!(shards(&s, 0).is_err());
    assert_eq!(default_shards(&scenario(1, 5000.0)), 1);
}

#[test]
fn manifests_name_every_backend_and_shard() {
    let s = scenario(4, 4000.0);
    let opts = Options {
        name: dns_label("lblab-One_slow", 40),
        start_at: 1_800_000_000,
        ..options()
    };
    assert_eq!(opts.name, "lblab-one-slow");
    let m = k8s(&s, "name = \"One_slow\"\n", &opts).unwrap();
    let fleet = m.iter().find(|m| m.file == "fleet.yaml").unwrap().text();
    for b in ["--index", "completions: 3", "subdomain", "clusterIP"] {
        assert!(fleet.contains(b), "{b} in {fleet}");
    }
    let job = m.iter().find(|m| m.file == "loadgen.yaml").unwrap().text();
    for s in [
        "completionMode: \"Indexed\"",
        "1) clients=2 rate=2000 seed=2",
        "metadata.labels['job-name']",
    ] {
        assert!(job.contains(s), "{s} in {job}");
    }
    for bad in ["Bad Name", "1abc", "abc-", "", "-abc"] {
        let bad = Options {
            name: bad.into(),
            ..opts.clone()
        };
        let e = k8s(&s, "", &bad).unwrap_err().to_string();
        assert!(e.contains("name \""), "{e}");
    }
}

/// A pod's script run under `/bin/sh` with `lblab` and `sleep` replaced by stand-ins that
/// record their arguments: what the pod would run. The stand-in's `lblab barrier join` prints
/// `FAKE_START` (else `START_AT`) as the barrier's start; the start is kept in `LBLAB_START_FILE`
/// (a file of the run's own unless the environment names one).
pub(crate) fn run_pod_script(script: &str, env: &[(&str, String)]) -> Vec<String> {
    let (ok, calls) = try_pod_script(script, env);
    assert!(ok, "{script}");
    calls
}

/// [`run_pod_script`] that may fail: whether it succeeded, and the calls.
pub(crate) fn try_pod_script(script: &str, env: &[(&str, String)]) -> (bool, Vec<String>) {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "lblab-deploy-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("calls");
    let _ = std::fs::remove_file(&log);
    for tool in ["lblab", "sleep"] {
        let path = dir.join(tool);
        let release = if tool == "lblab" {
            "[ \"$1 $2\" = 'barrier join' ] && echo \"${FAKE_START:-$START_AT}\"\n"
        } else {
            ""
        };
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\necho {tool} \"$@\" >> '{}'\n{release}exit 0\n",
                log.display()
            ),
        )
        .unwrap();
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
    }
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let status = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .env("PATH", path)
        .env("LBLAB_START_FILE", dir.join("start_at"))
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .status()
        .unwrap();
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    std::fs::remove_dir_all(&dir).unwrap();
    (
        status.success(),
        calls.lines().map(str::to_string).collect(),
    )
}

#[test]
fn the_collector_merges_each_policys_shards_and_says_what_is_missing() {
    let s = scenario(2, 1000.0);
    let opts = Options {
        shards: Some(2),
        ..options()
    };
    let m = k8s(&s, "", &opts).unwrap();
    let collect = script(&m, "collect.yaml", "Job");
    let results = std::env::temp_dir().join(format!("lblab-collect-{}", std::process::id()));
    for shard in ["shard-0", "shard-1"] {
        let dir = results.join("policy-0").join(shard);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("summary.json"), "{}").unwrap();
    }
    let env = [
        ("LBLAB_RESULTS", results.display().to_string()),
        ("START_AT", "1000".to_string()),
        ("JOB_NAME", "lab-collect".to_string()),
    ];
    let calls = run_pod_script(&collect, &env);
    let r = results.display();
    assert_eq!(
        calls,
        [
            "lblab barrier join lab-start:50050 --id collect-0 --start-at 1000 --wait 600s"
                .to_string(),
            format!(
                "lblab report --merge {r}/policy-0/shard-0 {r}/policy-0/shard-1 --out \
                 {r}/merged/policy-0"
            ),
            "sleep 3600".to_string()
        ]
    );
    // A shard that never finished: the others are merged, and the Job fails.
    std::fs::remove_file(results.join("policy-0/shard-1/summary.json")).unwrap();
    let (ok, calls) = try_pod_script(&collect, &env);
    assert!(!ok);
    assert!(calls[1].starts_with("lblab report --merge"), "{calls:?}");
    std::fs::remove_dir_all(&results).unwrap();
}

pub(crate) fn script(m: &[Manifest], file: &str, kind: &str) -> String {
    let doc = m
        .iter()
        .find(|m| m.file == file)
        .unwrap()
        .docs
        .iter()
        .find(|d| d["kind"] == kind)
        .unwrap();
    doc["spec"]["template"]["spec"]["containers"][0]["command"][2]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_renamed_deployment_and_a_label_like_a_flag_still_run() {
    let mut s = scenario(2, 1000.0);
    s.policies[0].name = "-rr".into();
    let opts = Options {
        port: 7000,
        shards: Some(1),
        dns: false,
        ..options()
    };
    let m = k8s(&s, "", &opts).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // A kustomize namePrefix and nameSuffix rename the Job and the Service alike.
    let calls = run_pod_script(
        &script(&m, "loadgen.yaml", "Job"),
        &[
            ("JOB_NAME", "team-a-lab-loadgen-v2".into()),
            ("JOB_COMPLETION_INDEX", "0".into()),
            ("START_AT", (now + 5).to_string()),
        ],
    );
    let call = calls
        .iter()
        .find(|c| c.starts_with("lblab loadgen"))
        .unwrap();
    assert!(
        call.contains(
            "--targets team-a-lab-fleet-v2-0.team-a-lab-fleet-v2:7000,\
             team-a-lab-fleet-v2-1.team-a-lab-fleet-v2:7000,\
             team-a-lab-fleet-v2-2.team-a-lab-fleet-v2:7000 "
        ),
        "{call}"
    );
    assert!(call.contains("--policy=-rr "), "{call}");
    // The fleet pod serves the backend of its completion index, then ends.
    let calls = run_pod_script(
        &script(&m, "fleet.yaml", "Job"),
        &[
            ("JOB_NAME", "team-a-lab-fleet-v2".into()),
            ("JOB_COMPLETION_INDEX", "2".into()),
            ("START_AT", (now + 20).to_string()),
        ],
    );
    assert!(
        calls[0].starts_with("lblab barrier join team-a-lab-start-v2:50050 --id fleet-2 "),
        "{calls:?}"
    );
    let call = calls
        .iter()
        .find(|c| c.starts_with("lblab backend"))
        .unwrap();
    assert!(call.contains("--index 2 "), "{call}");
    // An ordinal the scenario has no backend for stops the pod with a message.
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(script(&m, "fleet.yaml", "Job"))
        .env("JOB_COMPLETION_INDEX", "3")
        .env("START_AT", "0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("none with index 3"));
}

#[test]
fn pods_meet_the_restricted_profile_and_the_volume_takes_its_class_and_mode() {
    let s = scenario(2, 1000.0);
    let opts = Options {
        storage_class: Some("standard-rwo".into()),
        access_mode: Some(AccessMode::ReadWriteOnce),
        ..options()
    };
    let m = k8s(&s, "", &opts).unwrap();
    let docs: Vec<&Value> = m.iter().flat_map(|m| m.docs.iter()).collect();
    let jobs: Vec<&&Value> = docs.iter().filter(|d| d["kind"] == "Job").collect();
    // The fleet, the load generators, the collector and the start barrier's starter.
    assert_eq!(jobs.len(), 4);
    for job in jobs {
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
        assert_eq!(pod["securityContext"]["fsGroup"], IMAGE_UID);
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
        let c = &pod["containers"][0]["securityContext"];
        assert_eq!(c["allowPrivilegeEscalation"], false);
        assert_eq!(c["capabilities"]["drop"][0], "ALL");
        assert_eq!(job["spec"]["ttlSecondsAfterFinished"], JOB_TTL_S);
    }
    let pvc = docs
        .iter()
        .find(|d| d["kind"] == "PersistentVolumeClaim")
        .unwrap();
    assert_eq!(pvc["spec"]["storageClassName"], "standard-rwo");
    assert_eq!(pvc["spec"]["accessModes"][0], "ReadWriteOnce");
    for bad in ["", "Fast SSD", "-x", "x."] {
        let o = Options {
            storage_class: Some(bad.into()),
            ..opts.clone()
        };
        let e = k8s(&s, "", &o).unwrap_err().to_string();
        assert!(e.contains("storage_class"), "{e}");
    }
}

#[test]
fn a_start_too_close_is_warned_of() {
    assert!(start_warning(1_000 + START_LEAD_S, 1_000, false).is_none());
    assert!(start_warning(1_000 + START_LEAD_S, 1_000, true).is_none());
    let w = start_warning(1_030, 1_000, false).unwrap();
    assert!(
        w.contains("in 30 s") && w.contains("skip their slot"),
        "{w}"
    );
    assert!(start_warning(900, 1_000, false)
        .unwrap()
        .contains("100 s ago"));
    // With the start barrier the slots start later instead, unless it has already given up.
    let w = start_warning(1_030, 1_000, true).unwrap();
    assert!(
        w.contains("in 30 s at the earliest") && w.contains("make it start later"),
        "{w}"
    );
    assert!(
        w.contains("not running 630 s from now are named missing"),
        "{w}"
    );
    let w = start_warning(300, 1_000, true).unwrap();
    assert!(
        w.contains("700 s ago") && w.contains("every pod would fail"),
        "{w}"
    );
}

#[test]
fn every_pod_checks_in_with_the_start_barrier_and_runs_from_its_start() {
    let s = scenario(4, 2000.0);
    let opts = Options {
        shards: Some(2),
        ..options()
    };
    let m = k8s(&s, "", &opts).unwrap();
    let files: Vec<&str> = m.iter().map(|m| m.file.as_str()).collect();
    assert_eq!(
        files,
        [
            "scenario.yaml",
            "start.yaml",
            "fleet.yaml",
            "loadgen.yaml",
            "collect.yaml",
            "kustomization.yaml"
        ]
    );
    let kustomized = &m[5].docs[0]["resources"];
    assert_eq!(kustomized, &json!(files[..5]));
    // The starter waits for every backend pod, shard and the collector, from the ConfigMap's
    // start, and stays through the last slot; its Service is where the pods check in.
    let start = &m[1];
    assert_eq!(start.docs[0]["kind"], "Service");
    assert_eq!(start.docs[0]["metadata"]["name"], "lab-start");
    assert_eq!(
        start.docs[0]["spec"]["ports"][0]["port"],
        barrier::BARRIER_PORT
    );
    assert_eq!(
        start.docs[0]["spec"]["selector"]["app.kubernetes.io/component"],
        "start"
    );
    let job = &start.docs[1];
    assert_eq!(job["spec"]["backoffLimit"], 0);
    let pod = &job["spec"]["template"]["spec"];
    let command: Vec<&str> = pod["containers"][0]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let slot = (s.workload.end() + s.workload.drain()).div_ceil(1_000_000_000) + SLOT_MARGIN_S;
    let joined = command.join(" ");
    assert_eq!(
        joined,
        format!(
            "lblab barrier serve --listen 0.0.0.0:50050 --expect fleet=3 --expect loadgen=2 \
             --expect collect=1 --start-at $(START_AT) --margin 30s --wait 600s --linger {slot}s"
        )
    );
    assert_eq!(pod["containers"][0]["env"][0]["name"], "START_AT");
    assert_eq!(
        pod["containers"][0]["readinessProbe"]["tcpSocket"]["port"],
        barrier::BARRIER_PORT
    );
    // Every pod that checks in keeps its start on an emptyDir and knows its Job's name.
    for file in ["fleet.yaml", "loadgen.yaml", "collect.yaml"] {
        let doc = m.iter().find(|m| m.file == file).unwrap();
        let job = doc.docs.iter().find(|d| d["kind"] == "Job").unwrap();
        let pod = &job["spec"]["template"]["spec"];
        let volumes = pod["volumes"].as_array().unwrap();
        assert!(volumes.contains(&json!({"name": "start", "emptyDir": {"sizeLimit": "1Mi"}})));
        let c = &pod["containers"][0];
        assert!(c["volumeMounts"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "start", "mountPath": "/run/lblab"})));
        let names: Vec<&str> = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names.iter().filter(|n| **n == "JOB_NAME").count(),
            1,
            "{file}"
        );
    }
    // A shard whose image came late: its ConfigMap start has long passed, which without the
    // barrier would skip every slot; the barrier's later start runs them all.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let released = now + 40;
    let loadgen = script(&m, "loadgen.yaml", "Job");
    let env = [
        ("JOB_NAME", "lab-loadgen".to_string()),
        ("JOB_COMPLETION_INDEX", "1".to_string()),
        ("START_AT", (now - 300).to_string()),
        ("FAKE_START", released.to_string()),
    ];
    let calls = run_pod_script(&loadgen, &env);
    assert_eq!(
        calls[0],
        format!(
            "lblab barrier join lab-start:50050 --id loadgen-1 --start-at {} --wait 600s",
            now - 300
        )
    );
    let run = calls
        .iter()
        .find(|c| c.starts_with("lblab loadgen"))
        .unwrap();
    assert!(run.contains(&format!("--start-at {released} ")), "{run}");
    // Without the barrier the same pod skips its slot.
    let plain = k8s(
        &s,
        "",
        &Options {
            barrier: false,
            ..opts.clone()
        },
    )
    .unwrap();
    assert!(!plain.iter().any(|m| m.file == "start.yaml"));
    let (ok, calls) = try_pod_script(&script(&plain, "loadgen.yaml", "Job"), &env);
    assert!(!ok);
    assert!(!calls.iter().any(|c| c.starts_with("lblab")), "{calls:?}");
    // A restarted container keeps the start it was given, without checking in again.
    let kept = std::env::temp_dir().join(format!("lblab-kept-start-{}", std::process::id()));
    std::fs::write(&kept, format!("{released}\n")).unwrap();
    let fleet = script(&m, "fleet.yaml", "Job");
    let calls = run_pod_script(
        &fleet,
        &[
            ("JOB_NAME", "lab-fleet".to_string()),
            ("JOB_COMPLETION_INDEX", "0".to_string()),
            ("START_AT", (now - 300).to_string()),
            ("LBLAB_START_FILE", kept.display().to_string()),
        ],
    );
    assert!(!calls.iter().any(|c| c.contains("barrier")), "{calls:?}");
    let serve = calls
        .iter()
        .find(|c| c.starts_with("lblab backend"))
        .unwrap();
    assert!(
        serve.contains(&format!("--start-at {released} ")),
        "{serve}"
    );
    std::fs::remove_file(&kept).unwrap();
}

#[test]
fn every_pod_requests_cpu_and_memory_and_limits_its_memory() {
    let m = k8s(&scenario(4, 2000.0), "", &options()).unwrap();
    let mut containers = 0;
    for doc in m.iter().flat_map(|m| m.docs.iter()) {
        for c in doc["spec"]["template"]["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let r = &c["resources"];
            for (what, v) in [
                ("cpu request", &r["requests"]["cpu"]),
                ("memory request", &r["requests"]["memory"]),
                ("memory limit", &r["limits"]["memory"]),
            ] {
                assert!(v.is_string(), "{}: no {what}", c["name"]);
            }
            assert!(r["limits"]["cpu"].is_null(), "{}: a CPU limit", c["name"]);
            containers += 1;
        }
    }
    assert_eq!(containers, 4);
}

#[test]
fn backend_pods_are_sized_by_the_calls_they_may_hold() {
    let request = |rate: f64| {
        let m = k8s(&scenario(4, rate), "", &options()).unwrap();
        let fleet = m.iter().find(|m| m.file == "fleet.yaml").unwrap();
        let job = fleet.docs.iter().find(|d| d["kind"] == "Job").unwrap();
        let r = &job["spec"]["template"]["spec"]["containers"][0]["resources"];
        let mib =
            |v: &Value| -> u64 { v.as_str().unwrap().trim_end_matches("Mi").parse().unwrap() };
        (mib(&r["requests"]["memory"]), mib(&r["limits"]["memory"]))
    };
    let backend = |rate: f64| lblab_model::budget::backend_process(&scenario(4, rate)).bytes;
    // The process, four connections and the calls of a 1 s deadline, 64 MiB more requested and
    // twice that and 128 MiB more as the limit.
    assert_eq!(
        request(2000.0),
        (
            (backend(2000.0) >> 20) + 65,
            2 * (backend(2000.0) >> 20) + 129
        )
    );
    let (small, _) = request(2000.0);
    let (large, limit) = request(200_000.0);
    assert!(
        large > small + 700 && limit > 2 * large - 130,
        "{small} {large} {limit}"
    );
}

#[test]
fn load_generators_keep_off_the_fleet_and_share_a_once_volume() {
    let s = scenario(2, 1000.0);
    let mut opts = options();
    let pod = |m: &[Manifest], file: &str| {
        let doc = m.iter().find(|m| m.file == file).unwrap().docs.iter();
        doc.clone().find(|d| d["kind"] == "Job").unwrap()["spec"]["template"]["spec"].clone()
    };
    let m = k8s(&s, "", &opts).unwrap();
    let lg = pod(&m, "loadgen.yaml");
    let job = m
        .iter()
        .find(|m| m.file == "loadgen.yaml")
        .unwrap()
        .docs
        .iter();
    let job = job.clone().find(|d| d["kind"] == "Job").unwrap();
    assert_eq!(job["spec"]["backoffLimitPerIndex"], 0);
    assert!(job["spec"]["backoffLimit"].is_null());
    let anti =
        &lg["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(
        anti["podAffinityTerm"]["labelSelector"]["matchExpressions"][1]["values"][0],
        "fleet"
    );
    assert!(lg["affinity"]["podAffinity"].is_null());
    assert_eq!(
        pod(&m, "fleet.yaml")["topologySpreadConstraints"][0]["maxSkew"],
        1
    );
    assert!(
        lg["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            .is_null()
    );
    // One load generator per node: required, beside the preference for nodes without backends.
    opts.one_loadgen_per_node = true;
    let m = k8s(&s, "", &opts).unwrap();
    let anti = &pod(&m, "loadgen.yaml")["affinity"]["podAntiAffinity"];
    let apart = &anti["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(apart["topologyKey"], "kubernetes.io/hostname");
    assert_eq!(
        apart["labelSelector"]["matchExpressions"][1]["values"],
        json!(["loadgen"])
    );
    assert!(anti["preferredDuringSchedulingIgnoredDuringExecution"][0].is_object());
    assert!(pod(&m, "collect.yaml")["affinity"]["podAntiAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]
        .is_null());
    // It cannot be had on a volume of one node with more than one shard.
    let once = Options {
        access_mode: Some(AccessMode::ReadWriteOnce),
        shards: Some(2),
        ..opts.clone()
    };
    let e = k8s(&s, "", &once).unwrap_err().to_string();
    assert!(
        e.contains(
            "one_loadgen_per_node with a ReadWriteOnce results volume (access_mode once) and 2"
        ),
        "{e}"
    );
    assert!(k8s(
        &s,
        "",
        &Options {
            shards: Some(1),
            ..once
        }
    )
    .is_ok());
    opts.one_loadgen_per_node = false;
    opts.access_mode = Some(AccessMode::ReadWriteOnce);
    let m = k8s(&s, "", &opts).unwrap();
    for file in ["loadgen.yaml", "collect.yaml"] {
        let together = &pod(&m, file)["affinity"]["podAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"][0];
        assert_eq!(together["topologyKey"], "kubernetes.io/hostname");
        assert_eq!(
            together["labelSelector"]["matchExpressions"][1]["values"],
            json!(["loadgen", "collect"])
        );
    }
}

#[test]
fn objects_over_kubernetes_size_limits_are_refused() {
    let s = scenario(1, 100.0);
    let opts = options();
    let big = "#".repeat(CONFIGMAP_MAX_BYTES);
    let e = k8s(&s, &big, &opts).unwrap_err().to_string();
    assert!(e.contains("scenario.yaml: ConfigMap lab-scenario"), "{e}");
    assert!(e.contains("1048576"), "{e}");
    assert!(k8s(&s, "# a small scenario", &opts).is_ok());
}

#[test]
fn without_a_mode_one_shard_takes_a_read_write_once_volume_and_more_take_read_write_many() {
    let s = scenario(4, 1000.0);
    let mode = |shards: usize| {
        let opts = Options {
            shards: Some(shards),
            access_mode: None,
            ..options()
        };
        let m = k8s(&s, "", &opts).unwrap();
        let docs: Vec<Value> = m.into_iter().flat_map(|m| m.docs).collect();
        let pvc = docs
            .iter()
            .find(|d| d["kind"] == "PersistentVolumeClaim")
            .expect("the results claim")
            .clone();
        // With ReadWriteOnce, every pod that mounts the volume is required on one node.
        let together = docs.iter().filter(|d| d["kind"] == "Job").any(|job| {
            !job["spec"]["template"]["spec"]["affinity"]["podAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]
                .is_null()
        });
        (pvc["spec"]["accessModes"][0].clone(), together)
    };
    assert_eq!(mode(1), (Value::from("ReadWriteOnce"), true));
    assert_eq!(mode(2), (Value::from("ReadWriteMany"), false));
}
