//! Service-config parsing: defaults, rejections naming the field, selection rules.

use lblab_policy::config::{
    parse_service_config, parse_service_config_with, ConfigError, PolicyConfig, Selected,
};
use serde_json::{json, Value};

fn lb(list: &str) -> String {
    format!(r#"{{"loadBalancingConfig":{list}}}"#)
}

fn parse_entry(entry: &str) -> Result<PolicyConfig, ConfigError> {
    parse_service_config(&lb(&format!("[{entry}]")))
}

fn normalized(entry: &str) -> Value {
    parse_entry(entry)
        .unwrap_or_else(|e| panic!("{entry}: {e}"))
        .to_json()
}

#[test]
fn every_default_is_filled_in() {
    let cases = [
        (
            r#"{"pick_first":{}}"#,
            json!({"pick_first": {"shuffleAddressList": false}}),
        ),
        (r#"{"round_robin":{}}"#, json!({"round_robin": {}})),
        (
            r#"{"least_request_experimental":{}}"#,
            json!({"least_request_experimental": {"choiceCount": 2}}),
        ),
        (
            r#"{"peak_ewma_experimental":{}}"#,
            json!({"peak_ewma_experimental": {
                "choiceCount": 2,
                "decayTime": "10s",
                "defaultRtt": "0.03s",
                "lblabAblation": {"decay": "time_weighted", "sampling": "distinct", "streams": "ignore",
                    "initial": "zero", "idle": "pick_clock", "probes": "many", "peak": "stalled", "failures": "hold", "stall": true, "errorSamples": 10,
                    "errorPenalty": 1.0},
            }}),
        ),
        (
            r#"{"weighted_round_robin":{}}"#,
            json!({"weighted_round_robin": {
                "enableOobLoadReport": false,
                "oobReportingPeriod": "10s",
                "blackoutPeriod": "10s",
                "weightExpirationPeriod": "180s",
                "weightUpdatePeriod": "1s",
                "errorUtilizationPenalty": 1.0,
            }}),
        ),
        (
            r#"{"outlier_detection_experimental":{"successRateEjection":{},"failurePercentageEjection":{},"childPolicy":[{"round_robin":{}}]}}"#,
            json!({"outlier_detection_experimental": {
                "interval": "10s",
                "baseEjectionTime": "30s",
                "maxEjectionTime": "300s",
                "maxEjectionPercent": 10,
                "successRateEjection": {
                    "stdevFactor": 1900, "enforcementPercentage": 100,
                    "minimumHosts": 5, "requestVolume": 100,
                },
                "failurePercentageEjection": {
                    "threshold": 85, "enforcementPercentage": 100,
                    "minimumHosts": 5, "requestVolume": 50,
                },
                "childPolicy": [{"round_robin": {}}],
            }}),
        ),
        (
            // Algorithms run only when present: absent ones stay absent.
            r#"{"outlier_detection_experimental":{"childPolicy":[{"peak_ewma_experimental":{"choiceCount":3}}]}}"#,
            json!({"outlier_detection_experimental": {
                "interval": "10s",
                "baseEjectionTime": "30s",
                "maxEjectionTime": "300s",
                "maxEjectionPercent": 10,
                "childPolicy": [{"peak_ewma_experimental": {
                    "choiceCount": 3,
                    "decayTime": "10s",
                    "defaultRtt": "0.03s",
                    "lblabAblation": {"decay": "time_weighted", "sampling": "distinct", "streams": "ignore",
                    "initial": "zero", "idle": "pick_clock", "probes": "many", "peak": "stalled", "failures": "hold", "stall": true, "errorSamples": 10,
                    "errorPenalty": 1.0},
                }}],
            }}),
        ),
    ];
    for (entry, want) in cases {
        assert_eq!(normalized(entry), want, "{entry}");
    }
}

#[test]
fn normalized_config_parses_back_to_itself() {
    for entry in [
        r#"{"peak_ewma_experimental":{"choiceCount":4,"decayTime":"2.5s","defaultRtt":"0.001s","lblabAblation":{"decay":"on_read","sampling":"with_replacement"}}}"#,
        r#"{"peak_ewma_experimental":{"lblabAblation":{"streams":"outstanding"}}}"#,
        r#"{"peak_ewma_experimental":{"lblabAblation":{"streams":"count"}}}"#,
        r#"{"weighted_round_robin":{"enableOobLoadReport":true,"blackoutPeriod":"0s","errorUtilizationPenalty":0.5}}"#,
        r#"{"outlier_detection_experimental":{"interval":"1s","maxEjectionPercent":100,"successRateEjection":{"stdevFactor":1000},"childPolicy":[{"least_request_experimental":{"choiceCount":3}}]}}"#,
    ] {
        let once = parse_entry(entry).unwrap();
        let again = parse_entry(&once.to_json().to_string()).unwrap();
        assert_eq!(once, again, "{entry}");
    }
}

/// Found by fuzzing: without exact float parsing, 1.6666666666666665 read back one ulp off, so the
/// normalized config `lblab check` prints did not parse to the config it was printed from.
#[test]
fn normalized_penalty_round_trips_to_the_same_float() {
    for penalty in [
        "1.6666666666666665",
        "0.1",
        "2.2250738585072014e-308",
        "1e300",
        "0.30000000000000004",
    ] {
        let entry =
            format!(r#"{{"weighted_round_robin":{{"errorUtilizationPenalty":{penalty}}}}}"#);
        let once = parse_entry(&entry).unwrap();
        let again = parse_entry(&once.to_json().to_string()).unwrap();
        assert_eq!(once, again, "{entry}");
        let PolicyConfig::WeightedRoundRobin(c) = once else {
            unreachable!()
        };
        assert_eq!(
            c.error_utilization_penalty,
            penalty.parse::<f64>().unwrap(),
            "{entry}"
        );
    }
}

#[test]
fn clamps_and_derived_defaults() {
    let n = normalized(r#"{"least_request_experimental":{"choiceCount":11}}"#);
    assert_eq!(n["least_request_experimental"]["choiceCount"], 10);
    let n = normalized(r#"{"peak_ewma_experimental":{"choiceCount":4294967295}}"#);
    assert_eq!(n["peak_ewma_experimental"]["choiceCount"], 10);
    let n = normalized(r#"{"weighted_round_robin":{"weightUpdatePeriod":"0.05s"}}"#);
    assert_eq!(n["weighted_round_robin"]["weightUpdatePeriod"], "0.1s");
    // maxEjectionTime defaults to max(300 s, baseEjectionTime).
    let n = normalized(
        r#"{"outlier_detection_experimental":{"baseEjectionTime":"400s","childPolicy":[{"pick_first":{}}]}}"#,
    );
    assert_eq!(
        n["outlier_detection_experimental"]["maxEjectionTime"],
        "400s"
    );
    // null means "not set".
    let n = normalized(r#"{"peak_ewma_experimental":{"decayTime":null}}"#);
    assert_eq!(n["peak_ewma_experimental"]["decayTime"], "10s");
}

/// `policy {config} -> field: words`: a `loadBalancingConfig` of that one entry is rejected,
/// naming `loadBalancingConfig[0].policy.field`, with a message containing `words`.
const REJECTED_FIELDS: &[&str] = &[
    r#"least_request_experimental {"choiceCount":1} -> choiceCount: at least 2"#,
    r#"peak_ewma_experimental {"choiceCount":1} -> choiceCount: at least 2"#,
    r#"peak_ewma_experimental {"choiceCount":0} -> choiceCount: at least 2"#,
    r#"peak_ewma_experimental {"choiceCount":-3} -> choiceCount: whole number"#,
    r#"peak_ewma_experimental {"choiceCount":2.5} -> choiceCount: whole number"#,
    r#"peak_ewma_experimental {"choiceCount":"2"} -> choiceCount: whole number"#,
    r#"peak_ewma_experimental {"decayTime":"0s"} -> decayTime: greater than 0"#,
    r#"peak_ewma_experimental {"defaultRtt":"-1s"} -> defaultRtt: negative"#,
    r#"peak_ewma_experimental {"defaultRtt":"0.000s"} -> defaultRtt: greater than 0"#,
    r#"peak_ewma_experimental {"decayTime":"10"} -> decayTime: proto3 duration"#,
    r#"peak_ewma_experimental {"decayTime":"1m"} -> decayTime: proto3 duration"#,
    r#"peak_ewma_experimental {"decayTime":10} -> decayTime: not a duration string"#,
    r#"peak_ewma_experimental {"decayTime":"1.0000000001s"} -> decayTime: proto3 duration"#,
    r#"peak_ewma_experimental {"lblabAblation":{"decay":"sometimes"}} -> lblabAblation.decay: on_read"#,
    r#"peak_ewma_experimental {"lblabAblation":{"streams":"all"}} -> lblabAblation.streams: ignore, outstanding, count"#,
    r#"peak_ewma_experimental {"lblabAblation":{"sample":"distinct"}} -> lblabAblation.sample: unknown field"#,
    r#"weighted_round_robin {"errorUtilizationPenalty":-0.5} -> errorUtilizationPenalty: negative"#,
    r#"weighted_round_robin {"enableOobLoadReport":"yes"} -> enableOobLoadReport: true or false"#,
    r#"weighted_round_robin {"blackoutPeriod":"-10s"} -> blackoutPeriod: negative"#,
    r#"outlier_detection_experimental {"maxEjectionPercent":101,"childPolicy":[{"round_robin":{}}]} -> maxEjectionPercent: above 100"#,
    r#"outlier_detection_experimental {"successRateEjection":{"enforcementPercentage":150},"childPolicy":[{"round_robin":{}}]} -> successRateEjection.enforcementPercentage: above 100"#,
    r#"outlier_detection_experimental {"failurePercentageEjection":{"threshold":101},"childPolicy":[{"round_robin":{}}]} -> failurePercentageEjection.threshold: above 100"#,
    r#"outlier_detection_experimental {"failurePercentageEjection":{"enforcementPercentage":101},"childPolicy":[{"round_robin":{}}]} -> failurePercentageEjection.enforcementPercentage: above 100"#,
    r#"outlier_detection_experimental {"interval":"-1s","childPolicy":[{"round_robin":{}}]} -> interval: negative"#,
    r#"outlier_detection_experimental {"baseEjectionTime":"-0.5s","childPolicy":[{"round_robin":{}}]} -> baseEjectionTime: negative"#,
    r#"outlier_detection_experimental {"maxEjectionTime":"-30s","childPolicy":[{"round_robin":{}}]} -> maxEjectionTime: negative"#,
    r#"outlier_detection_experimental {} -> childPolicy: required"#,
    r#"outlier_detection_experimental {"childPolicy":[{"grpclb":{}}]} -> childPolicy: no supported policy"#,
    r#"outlier_detection_experimental {"childPolicy":[{"peak_ewma_experimental":{"choiceCount":1}}]} -> childPolicy[0].peak_ewma_experimental.choiceCount: at least 2"#,
];

/// `(loadBalancingConfig list, path the error must name, words the message must contain)`.
const REJECTED: &[(&str, &str, &str)] = &[
    (
        r#"[{"peak_ewma_experimental":[]}]"#,
        "loadBalancingConfig[0].peak_ewma_experimental",
        "JSON object",
    ),
    (
        r#"[{"grpclb":{}},{"xds_cluster_impl_experimental":{}}]"#,
        "loadBalancingConfig",
        "no supported policy in [\"grpclb\", \"xds_cluster_impl_experimental\"]",
    ),
    (r#"[]"#, "loadBalancingConfig", "no supported policy"),
    (
        r#"[{"round_robin":{},"pick_first":{}}]"#,
        "loadBalancingConfig[0]",
        "exactly one key",
    ),
    (
        r#"{"round_robin":{}}"#,
        "loadBalancingConfig",
        "must be a list",
    ),
    // The first supported entry is the one selected, so it must be valid.
    (
        r#"[{"peak_ewma_experimental":{"choiceCount":1}},{"round_robin":{}}]"#,
        "loadBalancingConfig[0].peak_ewma_experimental.choiceCount",
        "at least 2",
    ),
];

/// Checks that `list` is rejected naming `path`, with a message containing `words`.
fn assert_rejected(list: &str, path: &str, words: &str) {
    let err = parse_service_config(&lb(list)).expect_err(list);
    assert_eq!(err.path, path, "{list}: {err}");
    assert!(err.message.contains(words), "{list}: {err}");
    assert_eq!(err.position, None);
    assert!(err.to_string().contains(&format!("`{path}`")), "{err}");
}

/// `policy {config} -> field`: a `loadBalancingConfig` of that one entry is accepted, as gRPC
/// accepts it, with the unknown `field` ignored (the config is the one without it) and named by
/// `ignored_fields`.
const IGNORED_FIELDS: &[&str] = &[
    r#"peak_ewma_experimental {"decaytime":"1s"} -> decaytime"#,
    r#"peak_ewma_experimental {"choiceCunt":3,"decayTime":"2s"} -> choiceCunt"#,
    r#"round_robin {"choiceCount":2} -> choiceCount"#,
    r#"outlier_detection_experimental {"failurePercentageEjection":{"treshold":90},"childPolicy":[{"round_robin":{}}]} -> failurePercentageEjection.treshold"#,
    r#"outlier_detection_experimental {"childPolicy":[{"peak_ewma_experimental":{"decay":"1s"}}]} -> childPolicy[0].peak_ewma_experimental.decay"#,
];

#[test]
fn unknown_fields_are_ignored_as_grpc_ignores_them_and_named() {
    use lblab_policy::config::ignored_fields;
    for case in IGNORED_FIELDS {
        let (policy, rest) = case.split_once(' ').expect(case);
        let (config, field) = rest.split_once(" -> ").expect(case);
        let text = lb(&format!(r#"[{{"{policy}":{config}}}]"#));
        let parsed = parse_service_config(&text).unwrap_or_else(|e| panic!("{case}: {e}"));
        // The same config as written without the field.
        let leaf = field.rsplit('.').next().expect(case);
        let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        remove_key(&mut doc, leaf);
        let without = parse_service_config(&doc.to_string()).expect(case);
        assert_eq!(parsed.to_json(), without.to_json(), "{case}");
        let ignored = ignored_fields(&text, &[]);
        assert_eq!(ignored.len(), 1, "{case}: {ignored:?}");
        assert_eq!(
            ignored[0].path,
            format!("loadBalancingConfig[0].{policy}.{field}"),
            "{case}"
        );
        assert!(ignored[0].message.contains("ignored"), "{}", ignored[0]);
    }
    // A config without unknown fields, or an invalid one, has none to name.
    assert!(ignored_fields(&lb(r#"[{"round_robin":{}}]"#), &[]).is_empty());
    assert!(ignored_fields(
        &lb(r#"[{"peak_ewma_experimental":{"choiceCount":1,"x":1}}]"#),
        &[]
    )
    .is_empty());
}

/// Removes every object key `key` in `v`.
fn remove_key(v: &mut serde_json::Value, key: &str) {
    match v {
        serde_json::Value::Object(m) => {
            m.remove(key);
            m.values_mut().for_each(|c| remove_key(c, key));
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|c| remove_key(c, key)),
        _ => {}
    }
}

#[test]
fn invalid_configs_are_rejected_naming_the_field() {
    for case in REJECTED_FIELDS {
        let (policy, rest) = case.split_once(' ').expect(case);
        let (config, rest) = rest.split_once(" -> ").expect(case);
        let (field, words) = rest.split_once(": ").expect(case);
        let list = format!(r#"[{{"{policy}":{config}}}]"#);
        assert_rejected(
            &list,
            &format!("loadBalancingConfig[0].{policy}.{field}"),
            words,
        );
    }
    for &(list, path, words) in REJECTED {
        assert_rejected(list, path, words);
    }
}

#[test]
fn every_supported_policy_name_is_listed_when_none_is_supported() {
    let err = parse_service_config(&lb(r#"[{"grpclb":{}}]"#)).unwrap_err();
    for name in lblab_policy::config::SUPPORTED {
        assert!(err.message.contains(name), "{err}");
    }
    // Extra names the caller supports are listed too.
    let Err(err) = parse_service_config_with(&lb(r#"[{"grpclb":{}}]"#), &["oracle"]) else {
        panic!()
    };
    assert!(err.message.contains("oracle"), "{err}");
}

#[test]
fn first_supported_entry_wins() {
    let p = parse_service_config(&lb(
        r#"[{"grpclb":{}},{"round_robin":{}},{"pick_first":{}}]"#,
    ))
    .unwrap();
    assert_eq!(p.name(), "round_robin");
    // Entries after the selected one are not looked at, even invalid ones.
    let p = parse_service_config(&lb(
        r#"[{"least_request_experimental":{}},{"peak_ewma_experimental":{"choiceCount":1}}]"#,
    ))
    .unwrap();
    assert_eq!(p.name(), "least_request_experimental");
    // An extra name the caller handles can win too.
    let s = parse_service_config_with(&lb(r#"[{"oracle":{}},{"round_robin":{}}]"#), &["oracle"])
        .unwrap();
    assert_eq!(
        s,
        Selected::Extra {
            name: "oracle".into(),
            config: json!({})
        }
    );
    let s = parse_service_config_with(&lb(r#"[{"round_robin":{}},{"oracle":{}}]"#), &["oracle"])
        .unwrap();
    assert!(matches!(s, Selected::Policy(PolicyConfig::RoundRobin(_))));
}

#[test]
fn legacy_load_balancing_policy_field() {
    let p = parse_service_config(r#"{"loadBalancingPolicy":"round_robin"}"#).unwrap();
    assert_eq!(p.name(), "round_robin");
    let err = parse_service_config(r#"{"loadBalancingPolicy":7}"#).unwrap_err();
    assert_eq!(err.path, "loadBalancingPolicy");
    let err = parse_service_config(r#"{"loadBalancingPolicy":"grpclb"}"#).unwrap_err();
    assert_eq!(err.path, "loadBalancingPolicy");
}

#[test]
fn document_shape_errors() {
    let err = parse_service_config("[]").unwrap_err();
    assert!(err.message.contains("JSON object"), "{err}");
    let err = parse_service_config("{}").unwrap_err();
    assert!(err.message.contains("loadBalancingConfig"), "{err}");
}

#[test]
fn json_syntax_errors_carry_line_and_column() {
    let doc = "{\n  \"loadBalancingConfig\": [\n    {\"round_robin\": {},}\n  ]\n}";
    let err = parse_service_config(doc).unwrap_err();
    let (line, col) = err.position.expect("a position");
    assert_eq!(line, 3);
    assert!((20..=25).contains(&col), "column {col}");
    assert!(
        err.to_string()
            .starts_with(&format!("line 3, column {col}:")),
        "{err}"
    );
    let err = parse_service_config("").unwrap_err();
    assert!(err.position.is_some());
}

#[test]
fn built_policy_has_the_configured_name() {
    for &(_, entry) in crate::harness::EVERY_POLICY {
        let c = parse_entry(entry).unwrap();
        assert_eq!(c.build(0).name(), c.name());
    }
    let c = parse_entry(
        r#"{"outlier_detection_experimental":{"childPolicy":[{"peak_ewma_experimental":{}}]}}"#,
    )
    .unwrap();
    assert_eq!(c.label(), "outlier_detection(peak_ewma)");
}

#[test]
fn a_duplicate_key_is_rejected_not_resolved_to_the_last() {
    // serde_json alone keeps the last `round_robin`/`pick_first`: the policy would silently
    // change.
    let text =
        r#"{"loadBalancingConfig":[{"round_robin":{}}],"loadBalancingConfig":[{"pick_first":{}}]}"#;
    let e = parse_service_config(text).unwrap_err();
    assert!(
        e.message.contains("duplicate key `loadBalancingConfig`"),
        "{e}"
    );
    assert!(e.position.is_some(), "{e:?}");
    let inner = r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{"decayTime":"1s","decayTime":"20s"}}]}"#;
    assert!(parse_service_config(inner)
        .unwrap_err()
        .message
        .contains("duplicate key `decayTime`"));
}

#[test]
fn a_policy_handled_by_the_caller_takes_no_fields() {
    let text = lb(r#"[{"oracle":{"choiceCount":3}}]"#);
    let e = parse_service_config_with(&text, &["oracle"]).unwrap_err();
    assert_eq!(e.path, "loadBalancingConfig[0].oracle.choiceCount");
    assert!(e.message.contains("takes no config fields"), "{e}");
    assert!(matches!(
        parse_service_config_with(&lb(r#"[{"oracle":{}}]"#), &["oracle"]),
        Ok(Selected::Extra { .. })
    ));
}

#[test]
fn a_duration_too_long_to_represent_is_rejected() {
    let e = parse_entry(r#"{"peak_ewma_experimental":{"decayTime":"315576000000s"}}"#).unwrap_err();
    assert_eq!(
        e.path,
        "loadBalancingConfig[0].peak_ewma_experimental.decayTime"
    );
    assert!(e.message.contains("too long"), "{e}");
}

#[test]
fn timers_that_would_spin_are_clamped_to_a_floor() {
    // An OOB report every 0 s, or an outlier sweep every nanosecond, would make the policy's
    // timer due for ever; both are clamped to 100 ms, as gRPC clamps weightUpdatePeriod.
    let wrr = normalized(
        r#"{"weighted_round_robin":{"enableOobLoadReport":true,"oobReportingPeriod":"0s"}}"#,
    );
    assert_eq!(wrr["weighted_round_robin"]["oobReportingPeriod"], "0.1s");
    let od = normalized(
        r#"{"outlier_detection_experimental":{"interval":"0.000000001s","childPolicy":[{"round_robin":{}}]}}"#,
    );
    assert_eq!(od["outlier_detection_experimental"]["interval"], "0.1s");
    let ok = normalized(
        r#"{"outlier_detection_experimental":{"interval":"0.5s","childPolicy":[{"round_robin":{}}]}}"#,
    );
    assert_eq!(ok["outlier_detection_experimental"]["interval"], "0.5s");
}

#[test]
fn pick_first_accepts_shuffle_address_list() {
    assert_eq!(
        normalized(r#"{"pick_first":{}}"#),
        json!({"pick_first": {"shuffleAddressList": false}})
    );
    assert_eq!(
        normalized(r#"{"pick_first":{"shuffleAddressList":true}}"#),
        json!({"pick_first": {"shuffleAddressList": true}})
    );
    assert!(parse_entry(r#"{"pick_first":{"shuffleAddressList":1}}"#).is_err());
}

#[test]
fn shuffled_pick_first_spreads_clients_over_the_list() {
    use lblab_policy::{Connectivity, EndpointId, Pick, RpcKind};
    use rand::{rngs::SmallRng, SeedableRng};
    let ids: Vec<EndpointId> = (0..8).map(EndpointId).collect();
    let first_pick = |entry: &str, seed: u64| {
        let mut p = parse_entry(entry).unwrap().build(0);
        p.set_endpoints(0, &ids);
        for &id in &ids {
            p.on_connectivity(0, id, Connectivity::Ready);
        }
        let mut rng = SmallRng::seed_from_u64(seed);
        match p.pick(1, RpcKind::Unary, &mut rng) {
            Pick::Endpoint(t) => {
                // The choice is sticky: the next pick goes to the same endpoint.
                match p.pick(2, RpcKind::Unary, &mut rng) {
                    Pick::Endpoint(u) => assert_eq!(t.endpoint(), u.endpoint()),
                    other => panic!("{other:?}"),
                }
                t.endpoint()
            }
            other => panic!("{other:?}"),
        }
    };
    let plain: std::collections::BTreeSet<_> = (0..32)
        .map(|s| first_pick(r#"{"pick_first":{}}"#, s))
        .collect();
    assert_eq!(
        plain.len(),
        1,
        "without the shuffle every client picks the head"
    );
    let shuffled: std::collections::BTreeSet<_> = (0..32)
        .map(|s| first_pick(r#"{"pick_first":{"shuffleAddressList":true}}"#, s))
        .collect();
    assert!(shuffled.len() >= 4, "{shuffled:?}");
}
