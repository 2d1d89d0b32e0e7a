//! Every example in docs/scenarios.md parses: the complete scenario as it is, and each fragment
//! (a fault or a policy) appended to it. A format change that breaks the documentation fails here.

use lblab_model::Scenario;

fn toml_blocks(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```toml") => current = Some(String::new()),
            (Some(block), "```") => {
                out.push(std::mem::take(block));
                current = None;
            }
            (Some(block), l) => {
                block.push_str(l);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

#[test]
fn every_example_in_the_scenario_docs_parses() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/scenarios.md");
    let text = std::fs::read_to_string(path).expect("docs/scenarios.md exists");
    let blocks = toml_blocks(&text);
    assert!(
        blocks.len() >= 10,
        "expected the full example and one per fault kind"
    );
    let base = &blocks[0];
    Scenario::parse(base).unwrap_or_else(|e| panic!("the full example: {e}"));
    let mut kinds = Vec::new();
    for fragment in &blocks[1..] {
        let scenario = Scenario::parse(&format!("{base}\n{fragment}"))
            .unwrap_or_else(|e| panic!("{fragment}\n{e}"));
        if let Some(f) = scenario
            .file
            .faults
            .last()
            .filter(|_| fragment.contains("[[faults]]"))
        {
            kinds.push(f.kind());
        }
    }
    for kind in [
        "slowdown",
        "gc_pauses",
        "cpu_throttle",
        "noisy_neighbour",
        "cold_start",
        "fail_fast",
        "crash",
        "black_hole",
    ] {
        assert!(
            kinds.contains(&kind),
            "docs/scenarios.md has no `{kind}` example"
        );
    }
}
