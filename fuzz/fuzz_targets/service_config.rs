//! `parse_service_config_with` on arbitrary text: never a panic; an accepted config normalizes to
//! JSON that parses back to the same config (defaults filled in, clamps applied once), and builds.
#![no_main]

use lblab_policy::config::{parse_service_config_with, Selected};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_service_config_with(text, &["oracle"]) {
        Ok(Selected::Policy(cfg)) => {
            let normalized =
                serde_json::json!({ "loadBalancingConfig": [cfg.to_json()] }).to_string();
            match parse_service_config_with(&normalized, &[]) {
                Ok(Selected::Policy(again)) => {
                    assert_eq!(again, cfg, "round trip through {normalized}")
                }
                other => panic!("normalized config {normalized} does not parse back: {other:?}"),
            }
            let _ = cfg.label();
            let mut p = cfg.build(0);
            let _ = p.next_timer();
            p.set_endpoints(0, &[lblab_policy::EndpointId(0)]);
        }
        Ok(Selected::Extra { .. }) => {}
        Err(e) => {
            assert!(!e.to_string().is_empty());
        }
    }
});
