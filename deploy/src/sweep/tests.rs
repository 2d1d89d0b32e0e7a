//! A design search's manifests: its Indexed Job of shards, its collector, and what it refuses.

use super::*;
use crate::tests::{options, run_pod_script, scenario, script, try_pod_script};
use crate::AccessMode;

/// A design search of 6 points in 3 shards, with the options the tests start from.
fn sweep_manifests(opts: &Options) -> Result<Vec<Manifest>, DeployError> {
    let sweep = Sweep {
        args: vec!["--vary".into(), "workload.rate=1,2,3,4,5,6".into()],
        shards: 3,
        points: 6,
        simulations: 6,
        jobs: 2,
        memory: 100 << 20,
        id: 42,
    };
    k8s_sweep(&scenario(2, 1000.0), "name = \"One_slow\"\n", opts, &sweep)
}

#[test]
fn a_sweep_is_an_indexed_job_of_its_shards_and_a_collector_that_merges_them() {
    let m = sweep_manifests(&options()).unwrap();
    let files: Vec<&str> = m.iter().map(|m| m.file.as_str()).collect();
    assert_eq!(
        files,
        [
            "scenario.yaml",
            "sweep.yaml",
            "collect.yaml",
            "kustomization.yaml"
        ]
    );
    let job = m[1].docs.iter().find(|d| d["kind"] == "Job").unwrap();
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    assert_eq!(job["spec"]["completions"], 3);
    assert_eq!(job["spec"]["backoffLimitPerIndex"], SWEEP_BACKOFF_PER_INDEX);
    assert_eq!(job["spec"]["ttlSecondsAfterFinished"], JOB_TTL_S);
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["containers"][0]["resources"]["requests"]["cpu"],
        "2000m"
    );
    assert!(pod["affinity"].is_null(), "{pod}");
    assert!(m[0].docs[0]["data"]["start_at"].is_null());
    assert_eq!(m[1].docs[0]["kind"], "PersistentVolumeClaim");
    // Shard 1 of 3 runs the sweep with its shard, into its folder, and is marked done.
    let results = std::env::temp_dir().join(format!("lblab-sweep-{}", std::process::id()));
    let env = [
        ("LBLAB_RESULTS", results.display().to_string()),
        ("JOB_COMPLETION_INDEX", "1".to_string()),
    ];
    let calls = run_pod_script(&script(&m, "sweep.yaml", "Job"), &env);
    let r = results.display();
    assert_eq!(
        calls,
        [format!(
            "lblab sweep {SCENARIO_PATH} --vary workload.rate=1,2,3,4,5,6 --shard 1/3 --out \
             {r}/sweep-42/shard-1"
        )]
    );
    assert!(results.join("sweep-42/done-1").is_file());
    // The collector merges once every shard is done.
    for i in [0, 2] {
        std::fs::write(results.join(format!("sweep-42/done-{i}")), "").unwrap();
    }
    for i in 0..3 {
        std::fs::create_dir_all(results.join(format!("sweep-42/shard-{i}"))).unwrap();
    }
    let collect = script(&m, "collect.yaml", "Job");
    let calls = run_pod_script(&collect, &env[..1]);
    assert_eq!(
        calls,
        [
            format!(
                "lblab sweep --merge {r}/sweep-42/shard-0 {r}/sweep-42/shard-1 \
                 {r}/sweep-42/shard-2 --out {r}/sweep-42/merged"
            ),
            "sleep 3600".to_string()
        ]
    );
    // A shard that failed with an error a retry would repeat: no merge, and the Job fails.
    std::fs::remove_file(results.join("sweep-42/done-2")).unwrap();
    std::fs::write(results.join("sweep-42/failed-2"), "2\n").unwrap();
    let (ok, calls) = try_pod_script(&collect, &env[..1]);
    assert!(!ok);
    assert_eq!(calls, ["sleep 3600"]);
    std::fs::remove_dir_all(&results).unwrap();
}

#[test]
fn a_sweep_refuses_more_shards_than_points_and_shares_a_once_volume() {
    let mut opts = options();
    opts.access_mode = Some(AccessMode::ReadWriteOnce);
    let m = sweep_manifests(&opts).unwrap();
    for file in ["sweep.yaml", "collect.yaml"] {
        let doc = m.iter().find(|m| m.file == file).unwrap();
        let job = doc.docs.iter().find(|d| d["kind"] == "Job").unwrap();
        let together = &job["spec"]["template"]["spec"]["affinity"]["podAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"][0];
        assert_eq!(
            together["labelSelector"]["matchExpressions"][1]["values"],
            json!(["sweep", "collect"])
        );
    }
    let s = scenario(2, 1000.0);
    let sweep = Sweep {
        args: vec![],
        shards: 7,
        points: 6,
        simulations: 6,
        jobs: 1,
        memory: 0,
        id: 1,
    };
    let e = k8s_sweep(&s, "", &options(), &sweep)
        .unwrap_err()
        .to_string();
    assert!(e.contains("7 sweep shards for 6 points"), "{e}");
    let bad = Options {
        name: "1abc".into(),
        ..options()
    };
    assert!(sweep_manifests(&bad).is_err());
}
