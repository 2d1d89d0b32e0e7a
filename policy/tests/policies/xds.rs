//! Envoy xDS forms mapped onto gRPC policies (`lblab_policy::xds`): a Cluster, a
//! LoadBalancingPolicy, one Policy entry, gRFC A52's TypedStruct, and bad input naming its path.

use lblab_policy::config::PolicyConfig;
use lblab_policy::xds::{self, looks_like_xds};
use serde_json::{json, Value};

const PEAK: &str =
    "type.googleapis.com/envoy.extensions.load_balancing_policies.peak_ewma.v3alpha.PeakEwma";

fn entry(typed_config: Value) -> Value {
    json!({"typed_extension_config": {"name": "x", "typed_config": typed_config}})
}

fn cluster(entries: Vec<Value>) -> Value {
    json!({"name": "backend", "type": "EDS", "load_balancing_policy": {"policies": entries}})
}

fn normalized(doc: &Value) -> Value {
    xds::parse(doc)
        .unwrap_or_else(|e| panic!("{doc}: {e}"))
        .policy
        .to_json()
}

/// The Envoy fields a mapping dropped, with their values.
fn dropped(m: &xds::Mapped) -> Vec<(&'static str, Value)> {
    m.dropped
        .iter()
        .map(|d| (d.field, d.value.clone()))
        .collect()
}

fn err(doc: &Value) -> (String, String) {
    let e = xds::parse(doc).expect_err("should be rejected");
    (e.path, e.message)
}

#[test]
fn envoy_peak_ewma_maps_onto_peak_ewma_experimental_in_every_form() {
    let typed = json!({"@type": PEAK, "decay_time": "5s", "default_rtt": "0.020s",
        "aggregation_interval": "0.050s", "max_samples_per_host": 64, "penalty_value": 1e5});
    let want = json!({"peak_ewma_experimental": {"choiceCount": 2, "decayTime": "5s",
        "defaultRtt": "0.03s", "lblabAblation": {"decay": "time_weighted", "sampling": "distinct",
        "streams": "ignore", "initial": "zero", "idle": "pick_clock", "probes": "many", "peak": "stalled", "failures": "hold", "stall": true, "errorSamples": 10,
        "errorPenalty": 1.0}}});
    let forms = [
        cluster(vec![entry(typed.clone())]),
        json!({"cluster": cluster(vec![entry(typed.clone())]), "last_updated": "2026-01-01T00:00:00Z"}),
        json!({"policies": [entry(typed.clone())]}),
        entry(typed.clone()),
        // proto3 JSON names and the v3 copy of the proto
        json!({"loadBalancingPolicy": {"policies": [{"typedExtensionConfig": {"name": "x",
            "typedConfig": {"@type": PEAK.replace("v3alpha", "v3"), "decayTime": "5s",
            "defaultRtt": "0.020s", "aggregationInterval": "0.050s", "maxSamplesPerHost": 64,
            "penaltyValue": 1e5}}}]}}),
    ];
    for doc in &forms {
        assert!(looks_like_xds(doc), "{doc}");
        assert_eq!(normalized(doc), want, "{doc}");
        let m = xds::parse(doc).unwrap();
        assert_eq!(
            dropped(&m),
            [
                ("default_rtt", json!("0.02s")),
                ("aggregation_interval", json!("0.05s")),
                ("max_samples_per_host", json!(64)),
                ("penalty_value", json!(1e5)),
            ],
            "{doc}"
        );
        let notes = m.notes.join("\n");
        for what in [
            "no peak",
            "no idle decay",
            "whole milliseconds",
            "envoy_peak_ewma",
        ] {
            assert!(notes.contains(what), "{what}: {notes}");
        }
    }
    assert!(!looks_like_xds(&json!({"loadBalancingConfig": []})));
    assert!(!looks_like_xds(
        &json!({"loadBalancingPolicy": "round_robin"})
    ));
}

#[test]
fn envoy_defaults_are_reported_and_only_decay_time_is_mapped() {
    let m = xds::parse(&cluster(vec![entry(json!({"@type": PEAK}))])).unwrap();
    let PolicyConfig::PeakEwma(c) = m.policy else {
        panic!("{m:?}")
    };
    // Envoy's decay_time default (10 s) is the proposal's too; default_rtt has no counterpart.
    assert_eq!(c.decay_time, 10_000_000_000);
    assert_eq!(
        c,
        lblab_policy::peak_ewma::Config {
            decay_time: 10_000_000_000,
            ..Default::default()
        }
    );
    assert_eq!(
        dropped(&m),
        [
            ("default_rtt", json!("0.01s")),
            ("aggregation_interval", json!("0.1s")),
            ("max_samples_per_host", json!(1000)),
            ("penalty_value", json!(1e6)),
        ]
    );
}

#[test]
fn a52_typed_struct_names_the_grpc_policy() {
    for ts in ["xds.type.v3.TypedStruct", "udpa.type.v1.TypedStruct"] {
        let doc = cluster(vec![entry(
            json!({"@type": format!("type.googleapis.com/{ts}"),
            "type_url": "type.googleapis.com/peak_ewma_experimental",
            "value": {"choiceCount": 3, "decayTime": "2s"}}),
        )]);
        let n = normalized(&doc);
        assert_eq!(n["peak_ewma_experimental"]["choiceCount"], 3, "{ts}");
        assert_eq!(n["peak_ewma_experimental"]["decayTime"], "2s");
        assert!(xds::parse(&doc).unwrap().dropped.is_empty());
    }
    // Any registered policy, including the Envoy reference.
    let doc = json!({"policies": [entry(json!({"@type": "type.googleapis.com/xds.type.v3.TypedStruct",
        "type_url": "envoy_peak_ewma", "value": {}}))]});
    assert!(normalized(&doc).get("envoy_peak_ewma").is_some());
    // Errors in value name the path through the TypedStruct.
    let doc = cluster(vec![entry(
        json!({"@type": "type.googleapis.com/xds.type.v3.TypedStruct",
        "type_url": "type.googleapis.com/peak_ewma_experimental", "value": {"choiceCount": 1}}),
    )]);
    let (path, msg) = err(&doc);
    assert_eq!(
        path,
        "load_balancing_policy.policies[0].typed_extension_config.typed_config.value.choiceCount"
    );
    assert!(msg.contains("at least 2"), "{msg}");
}

#[test]
fn the_first_supported_entry_wins_and_unsupported_ones_are_skipped() {
    let doc = cluster(vec![
        entry(
            json!({"@type": "type.googleapis.com/envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash"}),
        ),
        entry(
            json!({"@type": "type.googleapis.com/xds.type.v3.TypedStruct", "type_url": "example.com/my_custom_policy"}),
        ),
        entry(
            json!({"@type": "type.googleapis.com/envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest",
            "choice_count": 3, "active_request_bias": {"default_value": 1.0, "runtime_key": "x"}}),
        ),
        entry(json!({"@type": PEAK})),
    ]);
    let m = xds::parse(&doc).unwrap();
    assert_eq!(m.path, "load_balancing_policy.policies[2]");
    assert_eq!(
        m.policy.to_json(),
        json!({"least_request_experimental": {"choiceCount": 3}})
    );
    assert_eq!(m.dropped.len(), 1);
    assert_eq!(m.dropped[0].field, "active_request_bias");

    let rr = cluster(vec![entry(
        json!({"@type": "type.googleapis.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin"}),
    )]);
    assert_eq!(normalized(&rr), json!({"round_robin": {}}));
}

#[test]
fn bad_input_names_the_json_path() {
    let p0 = "load_balancing_policy.policies[0].typed_extension_config.typed_config";
    let cases: Vec<(Value, String, &str)> = vec![
        (
            cluster(vec![entry(
                json!({"@type": "type.googleapis.com/envoy.extensions.load_balancing_policies.maglev.v3.Maglev"}),
            )]),
            "load_balancing_policy.policies".into(),
            "no supported policy",
        ),
        (
            cluster(vec![entry(json!({"@type": PEAK, "decay_time": "10"}))]),
            format!("{p0}.decay_time"),
            "proto3 duration",
        ),
        (
            cluster(vec![entry(json!({"@type": PEAK, "decay_time": 10}))]),
            format!("{p0}.decay_time"),
            "not a duration string",
        ),
        (
            cluster(vec![entry(json!({"@type": PEAK, "default_rtt": "0s"}))]),
            format!("{p0}.default_rtt"),
            "greater than 0s",
        ),
        (
            cluster(vec![entry(
                json!({"@type": PEAK, "aggregation_interval": "-1s"}),
            )]),
            format!("{p0}.aggregation_interval"),
            "negative",
        ),
        (
            cluster(vec![entry(
                json!({"@type": PEAK, "max_samples_per_host": 0}),
            )]),
            format!("{p0}.max_samples_per_host"),
            "from 1",
        ),
        (
            cluster(vec![entry(json!({"@type": PEAK, "penalty_value": -1}))]),
            format!("{p0}.penalty_value"),
            "greater than 0",
        ),
        (
            cluster(vec![entry(
                json!({"@type": PEAK, "rtt_smoothing_factor": 0.1}),
            )]),
            format!("{p0}.rtt_smoothing_factor"),
            "unknown field",
        ),
        (
            cluster(vec![entry(json!({"decay_time": "1s"}))]),
            format!("{p0}.@type"),
            "is required",
        ),
        (
            cluster(vec![entry(
                json!({"@type": "type.googleapis.com/xds.type.v3.TypedStruct", "value": {}}),
            )]),
            format!("{p0}.type_url"),
            "is required",
        ),
        (
            cluster(vec![entry(
                json!({"@type": "type.googleapis.com/xds.type.v3.TypedStruct", "type_url": "type.googleapis.com/"}),
            )]),
            format!("{p0}.type_url"),
            "no policy name",
        ),
        (
            cluster(vec![json!({"name": "x"})]),
            "load_balancing_policy.policies[0]".into(),
            "typed_extension_config",
        ),
        (
            cluster(vec![]),
            "load_balancing_policy.policies".into(),
            "empty",
        ),
        (
            json!({"name": "c", "lb_policy": "LEAST_REQUEST", "cluster": 1}),
            "".into(),
            "lb_policy",
        ),
    ];
    for (doc, path, what) in cases {
        let (p, msg) = err(&doc);
        assert_eq!(p, path, "{doc}: {msg}");
        assert!(msg.contains(what), "{doc}: {msg}");
    }
    let (_, msg) = err(&cluster(vec![entry(
        json!({"@type": "type.googleapis.com/foo.Bar"}),
    )]));
    for named in [
        "PeakEwma",
        "RoundRobin",
        "LeastRequest",
        "TypedStruct",
        "ring_hash",
        "client_side_weighted_round_robin",
    ] {
        assert!(msg.contains(named), "{named}: {msg}");
    }
}
