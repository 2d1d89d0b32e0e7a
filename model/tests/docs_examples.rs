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

/// The paragraph of docs/scenarios.md that documents fault `kind` (from its `**`kind`**` to the
/// next blank line), its lines joined with spaces.
fn fault_paragraph(docs: &str, kind: &str) -> String {
    let start = docs
        .find(&format!("**`{kind}`**"))
        .unwrap_or_else(|| panic!("docs/scenarios.md documents `{kind}`"));
    let rest = &docs[start..];
    rest[..rest.find("\n\n").unwrap_or(rest.len())].replace('\n', " ")
}

#[test]
fn the_scenario_docs_give_every_fault_kinds_window_defaults() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/scenarios.md");
    let docs = std::fs::read_to_string(path).expect("docs/scenarios.md exists");
    let base = &toml_blocks(&docs)[0];
    // Each kind with only its required fields: when the docs say it is active, and when it is.
    let open_ended = [
        ("slowdown", "factor = 10"),
        ("gc_pauses", "every = \"2s\"\npause = \"150ms\""),
        ("cpu_throttle", "quota = \"20ms\"\nperiod = \"100ms\""),
        ("fail_fast", "error_rate = 0.5"),
        ("black_hole", ""),
    ];
    for (kind, fields) in open_ended {
        let paragraph = fault_paragraph(&docs, kind);
        for said in ["`start` (default `0s`)", "(default: the end of"] {
            assert!(
                paragraph.contains(said),
                "`{kind}` lacks {said:?}:\n{paragraph}"
            );
        }
        let fragment = format!("[[faults]]\nkind = \"{kind}\"\ntargets = [\"slow\"]\n{fields}\n");
        let scenario = Scenario::parse(&format!("{base}\n{fragment}"))
            .unwrap_or_else(|e| panic!("{fragment}\n{e}"));
        let run_end = scenario.workload.end();
        let fault = scenario.file.faults.last().expect("the fault");
        assert_eq!(
            fault.window(run_end),
            (0, run_end),
            "`{kind}` without a window"
        );
    }
    let cold = fault_paragraph(&docs, "cold_start");
    assert!(cold.contains("`start` (default `0s`)"), "{cold}");
    let noisy = fault_paragraph(&docs, "noisy_neighbour");
    assert!(noisy.contains("(both required)"), "{noisy}");
    let crash = fault_paragraph(&docs, "crash");
    assert!(crash.contains("never if it is absent"), "{crash}");
    // A noisy neighbour without its window is refused, as the docs say.
    let fragment = "[[faults]]\nkind = \"noisy_neighbour\"\ntargets = [\"slow\"]\nfactor = 8\n";
    assert!(Scenario::parse(&format!("{base}\n{fragment}")).is_err());
}
