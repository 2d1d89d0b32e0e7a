//! The conformance vectors (`lblab vectors`, committed in `conformance/vectors/`): generated in
//! memory they replay against the policies, and the committed copy is what generation gives,
//! byte for byte, and replays too.

use std::path::PathBuf;

use lblab_policy::vectors;

fn committed_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/vectors")
}

#[test]
fn generated_vectors_replay() {
    let files = vectors::files();
    assert_eq!(files.len(), 3);
    for f in &files {
        let done = vectors::replay(&f.text).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        assert!(
            done.config_cases > 0 && done.steps > 20,
            "{}: {done:?}",
            f.name
        );
    }
}

#[test]
fn generation_is_deterministic() {
    assert_eq!(vectors::files(), vectors::files());
}

#[test]
fn committed_vectors_are_up_to_date_and_replay() {
    let dir = committed_dir();
    let mut committed: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".json"))
        .collect();
    committed.sort();
    let files = vectors::files();
    let mut names: Vec<String> = files.iter().map(|f| f.name.clone()).collect();
    names.sort();
    assert_eq!(
        committed, names,
        "regenerate with `lblab vectors --out conformance/vectors`"
    );
    for f in files {
        let text = std::fs::read_to_string(dir.join(&f.name)).expect("readable");
        assert!(
            text == f.text,
            "conformance/vectors/{} is out of date: regenerate with `lblab vectors --out conformance/vectors`",
            f.name
        );
        vectors::replay(&text).unwrap_or_else(|e| panic!("{}: {e}", f.name));
    }
}

#[test]
fn a_changed_expectation_is_reported() {
    let f = &vectors::files()[0];
    let mut doc: serde_json::Value = serde_json::from_str(&f.text).expect("JSON");
    let step = &mut doc["sequences"][0]["steps"][3]["expect"]["endpoints"][0]["cost_ns"];
    let cost = step.as_f64().expect("a cost");
    *step = serde_json::json!(cost * (1.0 + 1e-6));
    let err = vectors::replay(&doc.to_string()).expect_err("a mismatch");
    assert!(err.to_string().contains("cost_ns"), "{err}");
    // Within the tolerance it still passes.
    doc["sequences"][0]["steps"][3]["expect"]["endpoints"][0]["cost_ns"] =
        serde_json::json!(cost * (1.0 + 1e-12));
    vectors::replay(&doc.to_string()).expect("within tolerance");
}

/// The sequence `name` of the generated `peak_ewma_experimental.json`.
fn peak_ewma_sequence(name: &str) -> serde_json::Value {
    let f = vectors::files()
        .into_iter()
        .find(|f| f.name == "peak_ewma_experimental.json")
        .expect("the peak_ewma file");
    let doc: serde_json::Value = serde_json::from_str(&f.text).expect("JSON");
    doc["sequences"]
        .as_array()
        .expect("sequences")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no sequence {name}"))
        .clone()
}

#[test]
fn peak_ewma_vectors_agree_with_the_closed_forms() {
    // Independent of the generator: a few expectations of `peak_then_decay_then_blend` computed
    // from the formulas of the semantics as first written (docs/design.md).
    let seq = peak_ewma_sequence("peak_then_decay_then_blend");
    let cost_0 = |op: &str, at: u64| {
        let step = seq["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .find(|s| s["op"] == op && s["at_ns"] == at)
            .unwrap_or_else(|| panic!("no {op} at {at}"));
        step["expect"]["endpoints"][0]["cost_ns"]
            .as_f64()
            .expect("a cost")
    };
    let close = |got: f64, want: f64| assert!((got / want - 1.0).abs() < 1e-12, "{got} vs {want}");
    let (ms, tau) = (1_000_000u64, 10e9_f64);
    assert_eq!(cost_0("done", 200 * ms), 200e6, "a peak");
    close(cost_0("check", 5_000 * ms), 200e6 * (-4.8e9 / tau).exp());
    assert_eq!(
        cost_0("done", 10_280 * ms),
        80e6,
        "above decayed(now), below the stored 200 ms"
    );
    let w = (-(12_005.0 - 10_280.0) * 1e6 / tau).exp();
    close(cost_0("done", 12_005 * ms), 80e6 * w + (1.0 - w) * 5e6);
}

#[test]
fn the_pick_clock_vectors_agree_with_the_closed_forms() {
    // Independent of the generator: `idle_decay_on_the_pick_clock` with idlePicks 50. Endpoint 1
    // answered 20 ms at 20 ms, when the policy had made 2 picks; at 101 s it has made 27, so its
    // cost is 20 ms × max(e^(−(101 − 0.02)/10), e^(−25/50)).
    let seq = peak_ewma_sequence("idle_decay_on_the_pick_clock");
    let check = seq["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["op"] == "check" && s["at_ns"] == 101_000_000_000u64)
        .expect("the check at 101 s");
    let cost = check["expect"]["endpoints"][1]["cost_ns"]
        .as_f64()
        .expect("a cost");
    let want = 20e6 * (-25.0f64 / 50.0).exp();
    assert!((cost / want - 1.0).abs() < 1e-12, "{cost} vs {want}");
}
