//! `## Scenarios`: the index of the scenario pages.

use std::fmt::Write as _;

use crate::links;
use crate::load::Evidence;

pub(super) fn scenario_index(out: &mut String, ev: &Evidence) {
    w!(out, "## Scenarios\n");
    w!(out, "| scenario | what it models | full page |");
    w!(out, "|---|---|---|");
    for s in &ev.scenarios {
        if s.sim.is_none() && s.compare.is_none() {
            continue;
        }
        w!(
            out,
            "| `{}` | {} | [{2}]({2}) |",
            s.name,
            first_sentence(&s.description),
            links::page(&s.name)
        );
    }
}

/// The first sentence of a description (up to the first `. `), for tables.
pub fn first_sentence(text: &str) -> String {
    let t = text.trim();
    match t.find(". ") {
        Some(i) => t[..=i].to_string(),
        None => t.to_string(),
    }
}
