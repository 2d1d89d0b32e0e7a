//! The committed documents are exactly what the committed result files give: no number in them is
//! typed by hand, and none has drifted from its file. After a new run, `lblab report` (the last
//! step of `scripts/evidence.sh`) regenerates them.

use std::path::Path;

#[test]
fn committed_documents_are_generated_from_the_committed_results() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let evidence = lblab_evidence::Evidence::load(&root, "scenarios", "results")
        .expect("the committed results load");
    let docs = lblab_evidence::documents(&evidence);
    assert!(docs.iter().any(|d| d.path == "README.md"));
    assert!(docs.iter().any(|d| d.path == "gRFC-draft.md"));
    let mut stale = Vec::new();
    for d in &docs {
        let path = root.join("results").join(&d.path);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != d.text {
            let line = committed
                .lines()
                .zip(d.text.lines())
                .position(|(a, b)| a != b)
                .map_or_else(|| "its length".to_string(), |i| format!("line {}", i + 1));
            stale.push(format!("results/{} (first difference at {line})", d.path));
        }
    }
    assert!(
        stale.is_empty(),
        "these documents differ from what the result files give; run `cargo run --release -- \
         report`: {stale:?}"
    );
}

#[test]
fn a_changed_number_in_a_result_file_changes_the_document() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut evidence = lblab_evidence::Evidence::load(&root, "scenarios", "results")
        .expect("the committed results load");
    let before = lblab_evidence::documents(&evidence);
    let one_slow = evidence
        .scenarios
        .iter_mut()
        .find(|s| s.name == "one-slow")
        .expect("one-slow is a canonical scenario");
    let c = one_slow.compare.as_mut().expect("one-slow has a real run");
    c.rows[0].real_p99_ms += 1000.0;
    let after = lblab_evidence::documents(&evidence);
    let page = |docs: &[lblab_evidence::Document]| {
        docs.iter()
            .find(|d| d.path == "one-slow/README.md")
            .map(|d| d.text.clone())
    };
    assert_ne!(page(&before), page(&after));
}

#[test]
fn the_machine_the_documents_name_is_the_one_the_harness_files_record() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let evidence = lblab_evidence::Evidence::load(&root, "scenarios", "results")
        .expect("the committed results load");
    let one_slow = evidence
        .scenarios
        .iter()
        .find(|s| s.name == "one-slow")
        .expect("one-slow is a canonical scenario");
    let host = &one_slow
        .compare
        .as_ref()
        .and_then(|c| c.harness.as_ref())
        .expect("one-slow's real run has its harness file")
        .host;
    let raw: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.join("results/one-slow/compare/real/harness.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        host.logical_cores as u64,
        raw["host"]["logical_cores"].as_u64().unwrap()
    );
    assert_eq!(host.cpu_model, raw["host"]["cpu_model"].as_str().unwrap());
    assert!(host.logical_cores > 0);
    let docs = lblab_evidence::documents(&evidence);
    let readme = &docs.iter().find(|d| d.path == "README.md").unwrap().text;
    assert!(
        readme.contains(&format!(
            "{} logical cores, {}, Linux {}",
            host.logical_cores, host.cpu_model, host.kernel
        )),
        "the limitations name the recorded machine"
    );
}

/// The gRFC draft reads outside the lab: no link to one of the lab's pages, only to the web.
#[test]
fn the_draft_links_to_no_lab_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let evidence = lblab_evidence::Evidence::load(&root, "scenarios", "results")
        .expect("the committed results load");
    let docs = lblab_evidence::documents(&evidence);
    let draft = &docs
        .iter()
        .find(|d| d.path == "gRFC-draft.md")
        .unwrap()
        .text;
    // A figure is a file beside the draft (shipped with it, as a gRFC's graphics are): one that
    // exists there; any other relative target is a link into the lab.
    let mut figures = 0;
    let relative: Vec<&str> = draft
        .match_indices("](")
        .filter_map(|(i, _)| {
            let target = &draft[i + 2..];
            let target = &target[..target.find(')').unwrap_or(target.len())];
            let alt_start = draft[..i].rfind('[').unwrap_or(0);
            let figure = draft[..alt_start].ends_with('!')
                && !target.contains('/')
                && root.join("results").join(target).is_file();
            figures += usize::from(figure);
            (!target.starts_with("http") && !figure).then_some(target)
        })
        .collect();
    assert!(relative.is_empty(), "lab-relative links: {relative:?}");
    assert!(figures > 0, "the draft embeds its figures");
    // The README, read inside the lab, keeps its links.
    let readme = &docs.iter().find(|d| d.path == "README.md").unwrap().text;
    assert!(readme.contains("](one-slow/README.md)"));
}

#[test]
fn a_run_of_another_version_of_the_rules_is_named_on_its_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut evidence = lblab_evidence::Evidence::load(&root, "scenarios", "results")
        .expect("the committed results load");
    let one_slow = evidence
        .scenarios
        .iter_mut()
        .find(|s| s.name == "one-slow")
        .expect("one-slow is a canonical scenario");
    // The simulated run as today's code records it, the real one by other rules under the same
    // config and label: the page must say that they measured different algorithms.
    let today = one_slow
        .scenario
        .policies
        .iter()
        .find(|p| p.name == "peak_ewma")
        .expect("peak_ewma");
    let lblab_policy::config::Selected::Policy(config) = &today.selected else {
        panic!("peak_ewma is a policy the parser knows");
    };
    let config = config.clone();
    let sim = one_slow.sim.as_mut().expect("one-slow has a simulated run");
    let row = sim
        .configs
        .iter_mut()
        .find(|c| c.policy == "peak_ewma")
        .expect("recorded config");
    row.config = config.to_json();
    row.fingerprint = Some(config.fingerprint());
    let real = &mut one_slow.compare.as_mut().expect("real run").real;
    let row = real
        .configs
        .iter_mut()
        .find(|c| c.policy == "peak_ewma")
        .expect("recorded config");
    row.config = config.to_json();
    row.fingerprint = Some("0123456789abcdef".into());
    // Another policy of the page run by earlier rules is named too.
    let rr = real
        .configs
        .iter_mut()
        .find(|c| c.policy == "round_robin")
        .expect("recorded config");
    rr.fingerprint = Some("fedcba9876543210".into());
    let docs = lblab_evidence::documents(&evidence);
    let page = &docs
        .iter()
        .find(|d| d.path == "one-slow/README.md")
        .expect("the page")
        .text;
    assert!(
        page.contains("today's rules")
            && page.contains("**an earlier version of the rules**")
            && page.contains("`0123456789abcdef`")
            && page.contains("of `round_robin` (recorded `fedcba9876543210`"),
        "{}",
        &page[..page.len().min(2000)]
    );
    // `lblab report --check` and the test above compare the committed page with this text, so
    // a committed page that does not say it fails them.
    let committed = std::fs::read_to_string(root.join("results/one-slow/README.md")).unwrap();
    assert_ne!(&committed, page);
}
